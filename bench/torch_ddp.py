"""The benchmark behind scripts/bench-torchrun.sh (see there): what ``somatize.torch.watch`` at its
default schedule costs a data-parallel step under torchrun, every rank recorded as its own
writer of one run.

Run by torchrun (gloo, CPU, one thread per rank). Each rank trains two copies of the
4.2M-parameter LM of bench/torch_lm.py (same seed, same batches, AdamW), each wrapped in its own
DistributedDataParallel: one recorded by ``watch``, one not, one step of each in turn (each
round starting from the other), so the machine's drift falls on both alike. Rank 0 prints, per
rank, the median and mean step time of each and their ratios, and the ratio of the ranks'
medians taken together (every rank waits for the slowest at each all-reduce, so a job's step
is its slowest rank's)."""

import argparse
import statistics
import time
from datetime import datetime, timezone

import torch
import torch.distributed as dist

# bench/ (this script's folder) is on sys.path; torch_lm puts this checkout's package there too.
from torch_lm import MODELS, lm_batches, lm_copy, train_step

import somatize.torch as st  # noqa: E402  (this checkout's)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--store", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    shape = MODELS["lm"]
    _, _, _, _, batch, tokens, _ = shape
    ddp = torch.nn.parallel.DistributedDataParallel
    modes = {
        "none": lm_copy(shape, wrap=ddp),
        "watch": lm_copy(shape, lambda model, opt: st.watch(model, opt, store=args.store,
                                                            run="ddp-bench"), wrap=ddp),
    }
    batches = lm_batches(shape, 1 + rank)
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(args.steps + args.warm):
        b = batches[step % len(batches)]
        order = list(modes.values())
        order = order[step % 2:] + order[:step % 2]
        for m in order:
            dist.barrier()  # every rank starts the step together
            t0 = time.perf_counter()
            train_step(m, b, loss_fn)
            if step >= args.warm:
                m["wall"].append(time.perf_counter() - t0)
    modes["watch"]["w"].close()
    mine = [statistics.median(modes[n]["wall"]) for n in ("none", "watch")]
    mine += [statistics.mean(modes[n]["wall"]) for n in ("none", "watch")]
    every = [None] * world
    dist.all_gather_object(every, mine)
    if rank == 0:
        print(f"torchrun: {world} ranks, gloo, CPU, 1 thread each; the 4.2M-parameter LM per rank "
              f"(batch {batch}x{tokens}), AdamW, DDP; {args.steps} steps each (after {args.warm} "
              f"warm-up), alternating; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
        print(f"{'rank':<6} {'none ms':>9} {'watch ms':>9} {'ratio':>7} {'mean none':>10} "
              f"{'mean watch':>11} {'ratio':>7}")
        for r, (mn, mw, an, aw) in enumerate(every):
            print(f"{r:<6} {mn * 1e3:>9.1f} {mw * 1e3:>9.1f} {mw / mn:>7.3f} {an * 1e3:>10.1f} "
                  f"{aw * 1e3:>11.1f} {aw / an:>7.3f}")
        ratios = [e[1] / e[0] for e in every]
        print(f"median over ranks of the median step ratio: {statistics.median(ratios):.3f}x "
              f"(target <= 1.05x)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
