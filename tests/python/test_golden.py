"""Golden test: the metrics ``somatize.torch.watch`` measures with torch ops on the device
equal the ones Rust measures from whole tensors (``somatize import`` of NPZ dumps of the same
steps, DESIGN.md's dump convention), for every node and metric torch sends (relative 1e-5:
float32 on the device against float64 in Rust).

Outputs measured along their last axis are dumped as ``(-1, D)`` matrices, whose unit axis is
axis 1 under either of Rust's unit-axis rules (axis 1 of every output, or the rule by kind), so
the test holds across that change.
"""

import json
import math

import numpy as np
import pytest
import torch

import somatize.torch as st

# Metrics Rust measures from whole tensors that torch does not send: CKA needs declared pairs.
RUST_ONLY = {"cka"}
# The output's singular values are of the output as (first axis × the rest); the dump holds
# outputs measured along their last axis as (-1, D) (see above), a different matrix.
FEATURE = {"feature_erank", "feature_srank"}


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.relu = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2)
        self.flat = torch.nn.Flatten()
        self.fc = torch.nn.Linear(8 * 3 * 3, 16)
        self.tanh = torch.nn.Tanh()
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.pool(self.relu(self.bn(self.conv(x))))
        return self.head(self.tanh(self.fc(self.flat(h))))


class Seq(torch.nn.Module):
    """An embedding, a GRU and a pre-norm transformer block."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 16)
        self.gru = torch.nn.GRU(16, 16, batch_first=True)
        self.block = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                                      norm_first=True)
        self.sig = torch.nn.Sigmoid()
        self.head = torch.nn.Linear(16, 20)

    def forward(self, x):
        h, _ = self.gru(self.emb(x))
        return self.head(self.sig(self.block(h)))


def cnn_batch(g):
    return torch.randn(8, 3, 8, 8, generator=g), torch.randn(8, 4, generator=g)


def seq_batch(g):
    x = torch.randint(0, 20, (4, 6), generator=g)
    return x, torch.randint(0, 20, (4, 6), generator=g)


def cnn_loss(out, y):
    return torch.nn.functional.mse_loss(out, y)


def seq_loss(out, y):
    return torch.nn.functional.cross_entropy(out.reshape(-1, 20), y.reshape(-1))


def dead_cnn():
    """The CNN with its ReLU shut off (a BatchNorm shift far below zero): flags to agree on."""
    model = Cnn()
    with torch.no_grad():
        model.bn.bias.fill_(-20.0)
    return model


CASES = {"cnn": (Cnn, cnn_batch, cnn_loss), "seq": (Seq, seq_batch, seq_loss),
         "dead": (dead_cnn, cnn_batch, cnn_loss)}


def train(tmp_path, case, steps):
    """Train ``steps`` steps watched into run ``watch`` and dumped into ``dump/``."""
    make, batch, loss_fn = CASES[case]
    torch.manual_seed(0)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    store = tmp_path / "store"
    dump = tmp_path / "dump"
    dump.mkdir()
    w = st.watch(model, opt, store=store, run="watch", every=1)
    nodes = [(n.name, n.kind) for n in w._nodes]
    (dump / "graph.json").write_text(json.dumps(
        {"nodes": [{"name": n, "kind": k} for n, k in nodes]}))
    acts = {}
    reshaped = set()

    def hook(name, kind):
        def f(module, inputs, output):
            x = st._first_tensor(output).detach().float()
            if x.dim() > 2 and st.unit_axis(kind, x.dim()) == x.dim() - 1:
                x = x.reshape(-1, x.shape[-1])
                reshaped.add(name)
            acts["act." + name] = x.numpy().copy()
        return f

    for name, module in model.named_modules():
        kind = type(module).__name__
        if name in dict(nodes):
            module.register_forward_hook(hook(name, kind))
    g = torch.Generator().manual_seed(1)
    for step in range(steps):
        x, y = batch(g)
        acts.clear()
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        arrays = dict(acts)
        for pname, p in model.named_parameters():
            arrays["param." + pname] = p.detach().numpy().copy()
            arrays["grad." + pname] = p.grad.detach().numpy().copy()
        arrays["loss"] = np.asarray(loss.item(), dtype=np.float32)
        np.savez(dump / f"step_{step}.npz", **arrays)
        opt.step()
        w.step(loss)
    w.close()
    return store, dump, reshaped


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b)) + 1e-6


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("steps", [1, 3])
def test_torch_metrics_equal_rusts(tmp_path, cli, case, steps):
    import subprocess

    from somatize._binary import binary

    store, dump, reshaped = train(tmp_path, case, steps)
    out = subprocess.run([binary(), "import", str(dump), "--store", str(store), "--run", "dump",
                          "--no-tensors"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    torch_seen = cli("seen", store, "--run", "watch", "--last", 1)
    rust_seen = cli("seen", store, "--run", "dump", "--last", 1)
    assert set(torch_seen) == set(rust_seen), (sorted(torch_seen), sorted(rust_seen))
    compared = 0
    for node, rust in rust_seen.items():
        mine = torch_seen[node]
        for metric, want in rust.items():
            if metric == "kind" or metric in RUST_ONLY or \
                    (metric in FEATURE and node in reshaped):
                continue
            assert metric in mine, f"{case}: {node} lacks {metric} (rust {want})"
            assert close(mine[metric], want), f"{case}: {node}.{metric}: torch {mine[metric]}, rust {want}"
            compared += 1
        extra = set(mine) - set(rust) - {"kind"} - (FEATURE if node in reshaped else set())
        assert not extra, f"{case}: {node}: torch sends {extra} that rust does not measure"
    # Every node with an output or a parameter, and the update from the second forward on.
    assert compared > 40
    if steps > 1:
        assert any("update_ratio" in row for row in torch_seen.values())
        assert any("update_erank" in row for row in torch_seen.values())
    assert any("grad_srank" in row for row in torch_seen.values())
    # The verdict over each record is the same (and the sick one has something to say).
    verdict = cli("diagnose", store, "--run", "watch")["diagnosis"]
    assert verdict == cli("diagnose", store, "--run", "dump")["diagnosis"]
    if case == "dead":
        assert any("DEAD" in f for flags in verdict.values() for f in flags), verdict
