"""A small PyTorch MLP recorded with somatize's hooks (torch required).

    somatize record --store runs --run torch-mlp -- python3 examples/train_torch.py --steps 50

`watch(model, every=N)` records, per leaf module, a fact with its timing and (every N steps)
its output as `act.<name>`, and after backward `param.<name>` and `grad.<name>`.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import somatize_record as sr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--every", type=int, default=None)
    args = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(128, 8)
    y = torch.sin(x[:, :1])
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    watcher = sr.watch(model, every=args.every)
    for step in range(args.steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        watcher.step(step, loss)
        opt.step()
    watcher.rec.close()
    print(f"trained {args.steps} steps, final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
