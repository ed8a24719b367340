"""Make the dump fixtures of tests/health_import.rs (torch 2.15 CPU, numpy; seed 5).

Run: /root/.cache/somatize/torch-venv/bin/python tests/data/health_import/make.py
A Linear(4, 3) -> ReLU -> Linear(3, 2) trained 6 steps by SGD (lr 0.1, momentum 0.9) on a
fixed batch of 8, dumped twice as step_<n>.npz: plain/ (param.*, grad.*, act.*, loss: the
weights the forward used) and update/ (the same plus update.<node>.<leaf>, the weights after
optimizer.step() minus those before, and an unknown `extra.note` key). Both have graph.json.
expected.json holds, per step, fc1's one-step update ratio ||W_after - W_before|| /
||W_before|| over weight and bias together, as numpy computes it.
"""
import json
import pathlib

import numpy as np
import torch

here = pathlib.Path(__file__).parent
torch.manual_seed(5)
model = torch.nn.Sequential()
model.add_module("fc1", torch.nn.Linear(4, 3))
model.add_module("relu", torch.nn.ReLU())
model.add_module("fc2", torch.nn.Linear(3, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(8, 4), torch.randn(8, 2)
graph = {"nodes": [{"name": "fc1", "kind": "Linear"}, {"name": "relu", "kind": "ReLU"}, {"name": "fc2", "kind": "Linear"}]}
for d in ("plain", "update"):
    (here / d).mkdir(exist_ok=True)
    (here / d / "graph.json").write_text(json.dumps(graph) + "\n")
ratios = []
for step in range(6):
    acts = {}
    hooks = [m.register_forward_hook(lambda m, i, o, n=n: acts.__setitem__(n, o.detach().numpy().copy())) for n, m in model.named_children()]
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for h in hooks:
        h.remove()
    before = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    opt.step()
    after = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    t = {f"param.{n}": v for n, v in before.items()}
    t.update({f"grad.{n}": v for n, v in grads.items()})
    t.update({f"act.{n}": v for n, v in acts.items()})
    t["loss"] = np.array(loss.item(), dtype=np.float32)
    np.savez(here / "plain" / f"step_{step:03}.npz", **{k: v.astype(np.float32) for k, v in t.items()})
    t.update({f"update.{n}": after[n] - before[n] for n in before})
    t["extra.note"] = np.array([1, 2, 3], dtype=np.int64)
    np.savez(here / "update" / f"step_{step:03}.npz", **t)
    keys = ["fc1.weight", "fc1.bias"]
    num = np.sqrt(sum(((after[k] - before[k]).astype(np.float64) ** 2).sum() for k in keys))
    den = np.sqrt(sum((before[k].astype(np.float64) ** 2).sum() for k in keys))
    ratios.append(float(num / den))
(here / "expected.json").write_text(json.dumps({"fc1_update_ratio": ratios}, indent=1) + "\n")
print(ratios)
