"""A small PyTorch MLP recorded with `somatize.torch.watch` (torch required).

    python3 examples/train_torch.py --store runs --run torch-mlp          # starts the companion
    somatize record --store runs --run torch-mlp -- python3 examples/train_torch.py   # joins it

Per step the norms and non-finite counts of every layer, and every `--every` steps the full
summaries (the optimiser's update, the outputs' per-unit summaries, …), are measured with torch
ops where the tensors are and sent as numbers; whole tensors only every
`--keep-tensors-every` steps.
"""

import argparse
import os
import sys

import torch

# From a checkout without `pip install .`: the package is in python/.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import somatize.torch as st  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--store", default="runs")
    ap.add_argument("--run", default="torch-mlp")
    ap.add_argument("--every", type=int, default=None)
    ap.add_argument("--keep-tensors-every", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(128, 8)
    y = torch.sin(x[:, :1])
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    watch = st.watch(model, optimizer, store=args.store, run=args.run,
                     every=args.every, keep_tensors_every=args.keep_tensors_every)
    for _ in range(args.steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        watch.step(loss)
    watch.close()
    print(f"trained {args.steps} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
