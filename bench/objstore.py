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
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

# bench/ (this script's folder) is on sys.path; torch_lm puts this checkout's package there too.
from torch_lm import MODELS, lm_batches, lm_copy, train_step

import somatize.torch as st  # noqa: E402  (this checkout's)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--url", required=True, help="the object store, s3://bucket/prefix")
    args = ap.parse_args()
    torch.set_num_threads(1)
    shape = MODELS["lm"]
    _, _, _, _, batch, tokens, _ = shape
    root = Path(tempfile.mkdtemp(prefix="somatize-bench-objstore-"))

    def watched(store):
        return lambda model, opt: st.watch(model, opt, store=store, run="lm")

    modes = {"none": lm_copy(shape), "folder": lm_copy(shape, watched(root / "store")),
             "s3": lm_copy(shape, watched(args.url))}
    batches = lm_batches(shape, 1)
    loss_fn = torch.nn.CrossEntropyLoss()
    warm = 2
    for step in range(args.steps + warm):
        b = batches[step % len(batches)]
        order = list(modes.items())
        order = order[step % len(order):] + order[:step % len(order)]
        for _, m in order:
            t0 = time.perf_counter()
            train_step(m, b, loss_fn)
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
