"""Make the layout fixtures of tests/health_layouts.rs (torch 2.15 CPU, numpy; seed 17).

Run: /root/.cache/somatize/torch-venv/bin/python tests/data/health_layouts/make.py
Writes transformer.npz, gru.npz and expected.json beside this file. The tensors are real
torch module outputs: a TransformerEncoderLayer (batch_first, d_model 16) feeding a Linear
whose units 3 and 11 get a bias of -100 (so ReLU keeps them at 0 at every sample and token),
a ReLU and a Linear head; and a GRU (hidden 12) run batch-first and sequence-first. The
expected per-unit numbers are numpy's, along the feature axis.
"""
import json
import pathlib

import numpy as np
import torch

here = pathlib.Path(__file__).parent
torch.manual_seed(17)
N, T, D, H = 4, 6, 16, 12

enc = torch.nn.TransformerEncoderLayer(d_model=D, nhead=2, dim_feedforward=32, batch_first=True, dropout=0.0)
fc = torch.nn.Linear(D, D)
head = torch.nn.Linear(D, 5)
with torch.no_grad():
    fc.bias[3] = -100.0
    fc.bias[11] = -100.0
    x = torch.randn(N, T, D)
    e = enc(x)
    f = fc(e)
    r = torch.relu(f)

gru = torch.nn.GRU(input_size=5, hidden_size=H, batch_first=True)
with torch.no_grad():
    seq = torch.randn(N, T + 1, 5)
    g, _ = gru(seq)
    g_tnd = g.transpose(0, 1).contiguous()

t = {
    "act.enc": e.numpy(),
    "act.fc": f.numpy(),
    "act.relu": r.numpy(),
    "param.fc.weight": fc.weight.detach().numpy(),
    "param.fc.bias": fc.bias.detach().numpy(),
    "param.head.weight": head.weight.detach().numpy(),
    "param.head.bias": head.bias.detach().numpy(),
}
np.savez(here / "transformer.npz", **{k: v.astype(np.float32) for k, v in t.items()})
np.savez(here / "gru.npz", **{"act.gru": g.numpy().astype(np.float32), "act.gru_tnd": g_tnd.numpy().astype(np.float32)})


def per_unit(a, axis):
    a = np.moveaxis(a.astype(np.float64), axis, -1).reshape(-1, a.shape[axis])
    return {
        "units": a.shape[1],
        "act_var": float(a.var(axis=0).mean()),
        "dead_units": int(((a > 0).mean(axis=0) < 0.01).sum()),
    }


expected = {
    "enc": per_unit(e.numpy(), 2),
    "fc": per_unit(f.numpy(), 2),
    "relu": per_unit(r.numpy(), 2),
    "relu_along_t": per_unit(r.numpy(), 1),
    "gru": per_unit(g.numpy(), 2),
}
(here / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
print(json.dumps(expected))
