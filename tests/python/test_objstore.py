"""somatize.torch.watch into a store on object storage (``store="s3://…"``) works as into a
folder: the companion gets the URL, and every reader reads the same run. Against moto's S3
server on 127.0.0.1, started and stopped here (moto is a test requirement: scripts/test.sh
installs ``moto[server]`` into the venv; without it this module fails, it never skips)."""

import json
import pathlib
import socket
import subprocess

import boto3
import pytest
import torch
from moto.server import ThreadedMotoServer

import ddp_job
import somatize.torch as st
from somatize.health import diagnose, seen
from somatize._binary import binary
from somatize.record import curve, forwards, runs

BUCKET = "somatize-py"


@pytest.fixture(scope="module")
def s3():
    """A moto server on a free local port, the bucket made, the environment pointing at it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"]).create_bucket(Bucket=BUCKET)
    yield f"s3://{BUCKET}"
    mp.undo()
    server.stop()


def train(store, run, steps=9):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=store, run=run, every=3)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=g)
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
    w.close()


def test_watch_into_s3_reads_as_into_a_folder(s3, tmp_path):
    url = f"{s3}/watch"
    train(url, "tuesday")
    train(tmp_path, "tuesday")
    keys = ("run", "writers", "forwards", "broke", "ended_ok")  # times differ, of course
    assert [{k: r[k] for k in keys} for r in runs(url)] == \
        [{k: r[k] for k in keys} for r in runs(tmp_path)]
    assert curve(url, run="tuesday") == curve(tmp_path, run="tuesday")
    assert len(forwards(url, run="tuesday")) == 9
    assert diagnose(url, run="tuesday") == diagnose(tmp_path, run="tuesday")
    assert seen(url, run="tuesday") == seen(tmp_path, run="tuesday")


def test_torchrun_ranks_into_s3_are_one_run(s3, tmp_path):
    url = f"{s3}/ddp"
    out = ddp_job.torchrun(tmp_path, url, steps=8, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = forwards(url, run="ddp")
    writers = {r["writer"] for r in rows}
    assert writers == {f"rank{i}" for i in range(4)}, writers
    assert len(rows) == 4 * 8
    # The npm package reads the same run through a share of it, without credentials.
    share = tmp_path / "share.json"
    subprocess.run([binary(), "share", url, "-o", str(share)], check=True, capture_output=True)
    pkg = pathlib.Path(__file__).resolve().parents[2] / "pkg" / "node.js"
    script = (f"import {{ openStore }} from {json.dumps(pkg.as_uri())};"
              f"const s = await openStore({json.dumps(str(share))});"
              "const f = (await s.forwards({run: 'ddp'})).rows;"
              "console.log(JSON.stringify({runs: (await s.runs()).rows,"
              " forwards: f.map((r) => [r.forward, r.writer])}));"
              "await s.close();")
    node = subprocess.run(["node", "--input-type=module", "-e", script],
                          capture_output=True, text=True, timeout=120)
    assert node.returncode == 0, node.stderr[-3000:]
    read = json.loads(node.stdout)
    assert read["runs"] == runs(url)
    assert read["forwards"] == [[r["forward"], r["writer"]] for r in rows]
