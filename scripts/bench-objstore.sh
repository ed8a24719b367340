#!/usr/bin/env bash
# Recording to object storage (issue 20), on moto's S3 server on 127.0.0.1 (started and stopped
# here; never a remote endpoint):
#  1. the same training run recorded to a folder and to s3:// side by side at watch's default
#     schedule (bench/objstore.py): step times and the ratio s3 / folder (target <= 1.1);
#  2. a 100,000-forward run written to s3:// (a segment every 100 forwards: 1,000 segments), then
#     the number of requests `somatize runs` and `somatize curve` make on it (bounded: they
#     read the format file, list runs and writers, and per writer its manifest and index
#     objects, at most log2(segments) + 1 of them).
# Usage: scripts/bench-objstore.sh [STEPS [FORWARDS]]   (default 60 and 100000; venv: $SOMATIZE_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SOMATIZE_VENV:-$HOME/.cache/somatize/torch-venv}"
"$VENV/bin/python" -c 'import moto, boto3' 2>/dev/null || "$VENV/bin/pip" install -q 'moto[server]'
cargo build --release -q --bin somatize --example objstore_forwards
bin="$PWD/target/release/somatize"
export SOMATIZE_BIN="$bin"
port=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null' EXIT
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=testing \
  AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1
for _ in $(seq 100); do
  "$VENV/bin/python" -c 'import boto3, os; boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"]).create_bucket(Bucket="somatize-bench")' 2>/dev/null && break
  sleep 0.2
done
"$VENV/bin/python" bench/objstore.py --steps "${1:-60}" --url s3://somatize-bench/record
forwards="${2:-100000}"
url=s3://somatize-bench/long
target/release/examples/objstore_forwards "$url" long "$forwards" 100
for cmd in runs curve; do
  printf '%s of a %s-forward run: ' "$cmd" "$forwards"
  SOMATIZE_COUNT_REQUESTS=1 "$bin" "$cmd" "$url" 2>&1 >/dev/null | grep -o '[0-9]* requests' | tail -1
done
