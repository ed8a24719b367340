"""The benchmark behind scripts/bench-objstore.sh (see there): what recording to object storage
(the local moto S3 server) costs a training step against recording to a local folder, at
``watch``'s default schedule, side by side.

The 4.2M-parameter transformer LM of bench/torch_lm.py trains three copies (same seed, same
batches, AdamW, CPU, one thread): without recording, recording to a folder, recording to
``--url``; one step of each in turn (each round starting from the next mode). Printed: median
and mean step wall time per mode, their ratios to no recording, and the ratio of object
storage to folder (target <= 1.1); then the time ``close()`` took (the last segment's put)."""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import somatize.torch as st  # noqa: E402
from torch_lm import LM, MODELS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--url", required=True, help="the object store, s3://bucket/prefix")
    args = ap.parse_args()
    torch.set_num_threads(1)
    vocab, d, layers, heads, batch, tokens, tied = MODELS["lm"]
    root = Path(tempfile.mkdtemp(prefix="somatize-bench-objstore-"))
    modes = {}
    for name, store in (("none", None), ("folder", root / "store"), ("s3", args.url)):
        torch.manual_seed(0)
        model = LM(vocab, d, layers, heads, tokens, tied)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        w = None if store is None else st.watch(model, opt, store=store, run="lm")
        modes[name] = {"model": model, "opt": opt, "w": w, "wall": []}
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, vocab, (batch, tokens + 1), generator=g) for _ in range(4)]
    loss_fn = torch.nn.CrossEntropyLoss()
    warm = 2
    for step in range(args.steps + warm):
        b = batches[step % len(batches)]
        x, y = b[:, :-1], b[:, 1:]
        order = list(modes.items())
        order = order[step % len(order):] + order[:step % len(order)]
        for _, m in order:
            t0 = time.perf_counter()
            loss = loss_fn(m["model"](x).reshape(-1, vocab), y.reshape(-1))
            m["opt"].zero_grad()
            loss.backward()
            m["opt"].step()
            if m["w"] is not None:
                m["w"].step(loss)
            if step >= warm:
                m["wall"].append(time.perf_counter() - t0)
    for m in modes.values():
        t0 = time.perf_counter()
        if m["w"] is not None:
            m["w"].close()
        m["close"] = time.perf_counter() - t0
    print(f"lm: batch {batch}x{tokens}, AdamW, CPU, 1 thread, {args.steps} steps each (after "
          f"{warm} warm-up), alternating, watch's default schedule; {date.today().isoformat()}")
    base = modes["none"]
    bmed, bmean = statistics.median(base["wall"]), statistics.mean(base["wall"])
    print(f"{'mode':<8} {'median ms':>10} {'ratio':>7} {'mean ms':>9} {'ratio':>7} {'close ms':>9}")
    for name, m in modes.items():
        med, mean = statistics.median(m["wall"]), statistics.mean(m["wall"])
        print(f"{name:<8} {med * 1e3:>10.1f} {med / bmed:>7.3f} {mean * 1e3:>9.1f} "
              f"{mean / bmean:>7.3f} {m['close'] * 1e3:>9.1f}")
    f, s = modes["folder"], modes["s3"]
    print(f"s3 / folder: median {statistics.median(s['wall']) / statistics.median(f['wall']):.3f}, "
          f"mean {statistics.mean(s['wall']) / statistics.mean(f['wall']):.3f} (target <= 1.1)")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
