"""Check that generate.py regenerates the committed corpus bit for bit (needs torch).

    /root/.cache/somatize/torch-venv/bin/python bench/verdict/check_regen.py \
        [--runs A,B,C] [--bin target/release/somatize]

Trains the named runs again (default: three of different architectures, every step and every
10th) into a temporary dump folder and store, then compares, forward by forward, each blob's
`stats.json` and `facts.json` and each index line (without its timings: `written_us`,
`took_us`, and where the blob sits) with the committed corpus, and the run's graph.json. Prints
one line per run and last `N passed, M failed`; exits 1 when any run differs.
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_RUNS = "healthy-cnn_bn-adamw-b128-e10-s1,nan-mlp,healthy-tfm-adamw-b8-e1-s0"
# Index fields that say when or where, not what.
TIMING = {"written_us", "took_us", "blob", "offset", "len", "crc32"}


def forwards(store, run):
    """{forward: (index line without timings, stats.json bytes, facts.json bytes)} of a run."""
    out = {}
    run_dir = os.path.join(store, "runs", run)
    for writer in sorted(os.listdir(run_dir)):
        wdir = os.path.join(run_dir, writer)
        index = os.path.join(wdir, "index.jsonl")
        if not os.path.isfile(index):
            continue
        with open(index) as f:
            for line in f:
                if not line.strip():
                    continue
                entry = json.loads(line)
                blob = b""
                if "blob" in entry:
                    with open(os.path.join(wdir, entry["blob"]), "rb") as bf:
                        if "offset" in entry:
                            bf.seek(entry["offset"])
                            blob = bf.read(entry["len"])
                        else:
                            blob = bf.read()
                z = zipfile.ZipFile(io.BytesIO(blob)) if blob else None
                names = set(z.namelist()) if z else set()
                stats = z.read("stats.json") if "stats.json" in names else None
                facts = z.read("facts.json") if "facts.json" in names else None
                key = {k: v for k, v in entry.items() if k not in TIMING}
                out[(writer, entry["forward"])] = (key, stats, facts)
    return out


def graph(store, run):
    p = os.path.join(store, "runs", run, "graph.json")
    if not os.path.exists(p):
        return None
    with open(p, "rb") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=DEFAULT_RUNS)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "somatize"))
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus"))
    args = ap.parse_args()
    names = [n for n in args.runs.split(",") if n]
    with open(os.path.join(HERE, "labels.json")) as f:
        trained_with = json.load(f).get("torch")
    import torch
    here = torch.__version__.split("+")[0]
    if trained_with != here:
        print(f"the corpus was trained with torch {trained_with}, this is torch {here}: "
              f"install torch=={trained_with} (scripts/test.sh pins it) or regenerate the "
              "corpus (generate.py)")
        return 1
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="somatize-regen-") as tmp:
        store, dumps = os.path.join(tmp, "store"), os.path.join(tmp, "dumps")
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--only",
                        ",".join(names), "--store", store, "--dumps", dumps, "--labels",
                        os.path.join(tmp, "labels.json"), "--bin", args.bin], check=True,
                       stdout=subprocess.DEVNULL)
        for name in names:
            want, got = forwards(args.corpus, name), forwards(store, name)
            problems = []
            if not want:
                problems.append("not in the committed corpus")
            if sorted(want) != sorted(got):
                problems.append(f"forwards differ ({len(want)} committed, {len(got)} now)")
            for k in sorted(set(want) & set(got)):
                for part, a, b in zip(("index line", "stats.json", "facts.json"), want[k],
                                      got[k]):
                    if a != b:
                        problems.append(f"forward {k[1]}: {part} differs")
            if graph(args.corpus, name) != graph(store, name):
                problems.append("graph.json differs")
            if problems:
                failed += 1
                print(f"FAIL {name}: " + "; ".join(problems[:5]))
            else:
                passed += 1
                print(f"ok   {name}: {len(want)} forwards identical")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
