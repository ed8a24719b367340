"""A numpy-only two-layer MLP trained on a synthetic regression, recorded with somatize.

    somatize record --store runs --run mlp -- python3 examples/train_numpy.py --steps 200

Without the companion it just trains. Each step sends the loss, a fact per layer with its
timing, and (every SOMATIZE_EVERY steps) activations, parameters, gradients and the update
the step applies (`update.*`).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import somatize as sr  # noqa: E402


def us():
    return int(time.perf_counter() * 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--fail-at", type=int, default=None, help="exit with status 3 at this step")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    y = (np.sin(x[:, :1]) + 0.5 * x[:, 1:2] ** 2).astype(np.float32)
    w1 = (rng.normal(size=(8, args.hidden)) / np.sqrt(8)).astype(np.float32)
    b1 = np.zeros(args.hidden, np.float32)
    w2 = (rng.normal(size=(args.hidden, 1)) / np.sqrt(args.hidden)).astype(np.float32)
    b2 = np.zeros(1, np.float32)

    rec = sr.connect()
    rec.hello(summarising=["loss"])
    for step in range(args.steps):
        if args.fail_at is not None and step == args.fail_at:
            sys.exit(3)
        t0 = us()
        z1 = x @ w1 + b1
        t1 = us()
        h = np.maximum(z1, 0)
        t2 = us()
        out = h @ w2 + b2
        t3 = us()
        err = out - y
        loss = float(np.mean(err ** 2))
        t4 = us()

        d_out = 2 * err / len(x)
        dw2, db2 = h.T @ d_out, d_out.sum(0)
        dh = d_out @ w2.T
        dz1 = dh * (z1 > 0)
        dw1, db1 = x.T @ dz1, dz1.sum(0)

        facts = [
            {"node": "fc1", "kind": "Linear", "began_us": 0, "took_us": t1 - t0},
            {"node": "relu", "kind": "ReLU", "began_us": t1 - t0, "took_us": t2 - t1},
            {"node": "fc2", "kind": "Linear", "began_us": t2 - t0, "took_us": t3 - t2},
        ]
        tensors = {
            "act.fc1": z1, "act.relu": h, "act.fc2": out,
            "param.fc1.weight": w1, "param.fc1.bias": b1,
            "param.fc2.weight": w2, "param.fc2.bias": b2,
            "grad.fc1.weight": dw1, "grad.fc1.bias": db1,
            "grad.fc2.weight": dw2, "grad.fc2.bias": db2,
        }
        # The update this step applies (weights after the step minus before), so the update
        # ratio is one step's even when tensors are kept only every N steps.
        update = {"fc1.weight": -args.lr * dw1, "fc1.bias": -args.lr * db1,
                  "fc2.weight": -args.lr * dw2, "fc2.bias": -args.lr * db2}
        tensors.update({f"update.{k}": v for k, v in update.items()})
        rec.forward(step, loss=loss, tensors=tensors, facts=facts, took_us=t4 - t0)

        w1 += update["fc1.weight"]
        b1 += update["fc1.bias"]
        w2 += update["fc2.weight"]
        b2 += update["fc2.bias"]
    rec.close()
    print(f"trained {args.steps} steps, final loss {loss:.4f}")


if __name__ == "__main__":
    main()
