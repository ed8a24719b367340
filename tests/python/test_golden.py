"""Golden test: the metrics Rust derives from the summaries ``somatize.torch.watch`` takes
with torch ops on the device (src/health/summary.rs, sent in each frame) equal the ones Rust
measures from whole tensors (``somatize import`` of NPZ dumps of the same steps, DESIGN.md's
dump convention), for every node and metric (relative 1e-5: float32 on the device against
float64 in Rust), natively and in wasm: the dump's last step measured by the Rust core
compiled to wasm (the npm package's ``stepStats``, through golden_wasm.mjs and ``node``) equals
the native import's to 1e-12, and torch's summary of that step turned into metrics by the wasm
core (``summaryStats``) equals the companion's to 1e-12.

Outputs are dumped whole, as the module returned them, and the dump's graph names only nodes
and kinds: Rust finds each output's unit axis by its kind and the node before it
(src/health/layout.rs), and torch must find the same one.
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import somatize.torch as st

# Metrics Rust measures from whole tensors that torch does not send: CKA needs declared pairs.
RUST_ONLY = set()  # every metric Rust measures from these dumps, torch sends


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


class Wide(torch.nn.Module):
    """A 1-d convolution read channel-first through a GELU and a dropout (which take its
    layout), on enough positions (64 × 98) that the feature matrix is taken at a stride."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 8, 3)
        self.gelu = torch.nn.GELU()
        self.drop = torch.nn.Dropout(0.25)
        self.pool = torch.nn.AdaptiveAvgPool1d(2)
        self.flat = torch.nn.Flatten()
        self.head = torch.nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.flat(self.pool(self.drop(self.gelu(self.conv(x))))))


class Order(torch.nn.Module):
    """A ReLU declared after the convolution it runs before: it takes the convolution's
    layout all the same (declaration order; torch keeps its first output until the step
    knows, then predicts from the step before)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.head = torch.nn.Linear(4 * 8 * 8, 4)

    def forward(self, x):
        return self.head(self.conv(self.relu(x)).flatten(1))


def wide_batch(g):
    return torch.randn(64, 4, 100, generator=g), torch.randn(64, 2, generator=g)


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


class Branches(torch.nn.Module):
    """Two branches on the same input, declared apart: their outputs' debiased CKA, written on
    the second (`b`), on both paths."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(8, 12)
        self.head = torch.nn.Linear(28, 4)

    def forward(self, x):
        return self.head(torch.cat([self.a(x), self.b(x)], 1))


def branch_batch(g):
    return torch.randn(32, 8, generator=g), torch.randn(32, 4, generator=g)


class Large(torch.nn.Module):
    """Weights past one of torch's CPU blocks (``_ABS_BLOCK``, 2^18 entries: 3000 × 96 and
    2 × 3000 + 3000 × 96 together) and wider than the rank sample on each side (3000 rows of
    the first, 3000 columns of the head): their summaries, the copy before the step and the
    update's norm are taken a block at a time, and the update's singular values from the rows
    and columns sampled before the difference is taken."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(96, 3000)
        self.relu = torch.nn.ReLU()
        self.head = torch.nn.Linear(3000, 2)

    def forward(self, x):
        return self.head(self.relu(self.fc(x)))


def large_batch(g):
    return torch.randn(16, 96, generator=g), torch.randn(16, 2, generator=g)


class Tied(torch.nn.Module):
    """An embedding and an output layer sharing one weight (as GPT-2's): watch measures it
    once a step and reports it on both nodes, as Rust does from a dump that names it twice."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.head = torch.nn.Linear(16, 20, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x):
        return self.head(self.norm(self.emb(x)))


CASES = {"cnn": (Cnn, cnn_batch, cnn_loss), "seq": (Seq, seq_batch, seq_loss),
         "dead": (dead_cnn, cnn_batch, cnn_loss), "wide": (Wide, wide_batch, cnn_loss),
         "order": (Order, cnn_batch, cnn_loss), "branches": (Branches, branch_batch, cnn_loss),
         "large": (Large, large_batch, cnn_loss), "tied": (Tied, seq_batch, seq_loss)}
# Pairs declared apart (the dump's graph.json `apart`, watch's `apart=`).
APART = {"branches": [["a", "b"]]}


def train(tmp_path, case, steps):
    """Train ``steps`` steps watched into run ``watch`` and dumped into ``dump/``."""
    make, batch, loss_fn = CASES[case]
    torch.manual_seed(0)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    store = tmp_path / "store"
    dump = tmp_path / "dump"
    dump.mkdir()
    apart = APART.get(case, [])
    w = st.watch(model, opt, store=store, run="watch", every=1, apart=apart)
    nodes = [(n.name, n.kind) for n in w._nodes]
    (dump / "graph.json").write_text(json.dumps(
        {"nodes": [{"name": n, "kind": k} for n, k in nodes], "apart": apart}))
    acts = {}

    def hook(name):
        def f(module, inputs, output):
            acts["act." + name] = st._first_tensor(output).detach().float().numpy().copy()
        return f

    for name, module in model.named_modules():
        if name in dict(nodes):
            module.register_forward_hook(hook(name))
    g = torch.Generator().manual_seed(1)
    for step in range(steps):
        x, y = batch(g)
        acts.clear()
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        arrays = dict(acts)
        # (A shared weight under each name that holds it, as a dump of every module would.)
        for pname, p in model.named_parameters(remove_duplicate=False):
            arrays["param." + pname] = p.detach().numpy().copy()
            arrays["grad." + pname] = p.grad.detach().numpy().copy()
        arrays["loss"] = np.asarray(loss.item(), dtype=np.float32)
        before = {pname: p.detach().clone()
                  for pname, p in model.named_parameters(remove_duplicate=False)}
        opt.step()
        # The dump convention's update: what this step applied (W after minus W before).
        for pname, p in model.named_parameters(remove_duplicate=False):
            arrays["update." + pname] = (p.detach() - before[pname]).numpy().copy()
        np.savez(dump / f"step_{step}.npz", **arrays)
        w.step(loss)
    # The last summary torch sent, for the wasm core to derive its metrics too.
    wire, values, samples = w.last_summary
    graph = {"nodes": [{"name": f["node"], "kind": f["kind"],
                        **({"layout": f["layout"]} if "layout" in f else {})}
                       for f in w._facts()]}
    (dump / "summary.json").write_text(json.dumps({"graph": graph, "summary": wire}))
    (dump / "summary.f64").write_bytes(np.asarray(values, dtype="<f8").tobytes())
    (dump / "summary.samples").write_bytes(np.ascontiguousarray(samples).tobytes())
    (dump / "summary.samples.json").write_text(json.dumps({"dtype": samples.dtype.name}))
    w.close()
    return store, dump


# The layout each node's output is measured in (src/health/layout.rs unit_rules): a ReLU,
# GELU or dropout takes the layout of the node before it when the ranks match; a Flatten does
# not (its rank differs); MultiheadAttention's out_proj is never called, so has no output.
_CNN = {"conv": "NCHW", "bn": "NCHW", "relu": "NCHW", "pool": "NCHW", "flat": "ND", "fc": "ND",
        "tanh": "ND", "head": "ND"}
LAYOUTS = {
    "cnn": _CNN, "dead": _CNN,
    "seq": {"emb": "NTD", "gru": "NTD", "block.self_attn": "NTD", "block.self_attn.out_proj": None,
            "block.linear1": "NTD", "block.dropout": "NTD", "block.linear2": "NTD",
            "block.norm1": "NTD", "block.norm2": "NTD", "block.dropout1": "NTD",
            "block.dropout2": "NTD", "sig": "NTD", "head": "NTD"},
    "order": {"conv": "NCHW", "relu": "NCHW", "head": "ND"},
    "branches": {"a": "ND", "b": "ND", "head": "ND"},
    "large": {"fc": "ND", "relu": "ND", "head": "ND"},
    "tied": {"emb": "NTD", "norm": "NTD", "head": "NTD"},
    "wide": {"conv": "NCL", "gelu": "NCL", "drop": "NCL", "pool": "NCL", "flat": "ND",
             "head": "ND"},
}


ROOT = Path(__file__).resolve().parent.parent.parent


def wasm_stats(dump):
    """The dump's last step measured in wasm: ``{node: {metric: value}}`` (golden_wasm.mjs)."""
    node = shutil.which("node")
    built = ROOT / "pkg" / "wasm" / "somatize_bg.wasm"
    build = "build the wasm package with scripts/build-wasm.sh (Node >= 20 on PATH)"
    assert node, f"no `node` on PATH: the golden test measures the dumps in wasm too; {build}"
    assert built.is_file(), f"{built} is missing: {build}"
    out = subprocess.run([node, str(Path(__file__).with_name("golden_wasm.mjs")), str(dump)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def same(a, b):
    """Native and wasm run the same Rust: equal, or within 1e-12 (the order of a sum)."""
    if a is None or b is None:
        return a is None and b is None
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b)) + 1e-6


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("path", ["native", "cpu", "device"])
def test_torch_metrics_equal_rusts(tmp_path, capfd, monkeypatch, cli, case, steps, path):
    # `native`: the package's kernels (somatize._kernels) sum the CPU's float32 tensors;
    # `cpu`: torch ops on the CPU's fast paths instead; `device`: the fast paths off, so the
    # code a GPU's (or a bf16) tensor takes runs here, on the CPU. All must give Rust's numbers.
    assert st._native.KERNELS is not None, "the installed package lacks its kernels"
    monkeypatch.setattr(st, "CPU_FAST_PATHS", path != "device")
    monkeypatch.setattr(st, "NATIVE_KERNELS", path == "native")
    from somatize._binary import binary
    from somatize.record import facts

    store, dump = train(tmp_path, case, steps)
    # The layouts the watch declares are ones the companion takes (it says so on stderr when
    # one is not), and they name the axes Rust read the dump along.
    err = capfd.readouterr().err
    assert "layout" not in err and "NOT" not in err, err
    declared = {f["node"]: f.get("layout") for f in facts(store, run="watch", forward=steps - 1)
                if f["node"] != "loss"}
    assert declared == LAYOUTS[case], declared
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
            if metric == "kind" or metric in RUST_ONLY:
                continue
            assert metric in mine, f"{case}: {node} lacks {metric} (rust {want})"
            assert close(mine[metric], want), f"{case}: {node}.{metric}: torch {mine[metric]}, rust {want}"
            compared += 1
        extra = set(mine) - set(rust) - {"kind"}
        assert not extra, f"{case}: {node}: torch sends {extra} that rust does not measure"
    # The Rust core compiled to wasm measures the same dump's last step the same.
    wasm_out = wasm_stats(dump)
    assert wasm_out["step"] == steps - 1
    wasm = wasm_out["stats"]
    assert set(wasm) <= set(rust_seen), (sorted(wasm), sorted(rust_seen))
    in_wasm = 0
    for node, rust in rust_seen.items():
        rust = {m: v for m, v in rust.items() if m != "kind"}
        mine = wasm.get(node, {})
        assert set(mine) == set(rust), f"{case}: {node}: wasm {sorted(mine)}, native {sorted(rust)}"
        for metric, want in rust.items():
            assert same(mine[metric], want), f"{case}: {node}.{metric}: wasm {mine[metric]}, native {want}"
            if metric in torch_seen[node]:
                assert close(torch_seen[node][metric], mine[metric]), (case, node, metric)
            in_wasm += 1
    assert in_wasm >= compared
    # torch's own summary of the last step, turned into metrics by the wasm core, gives the
    # companion's numbers (the same Rust, natively).
    from_summary = wasm_out["summary"]
    for node, row in torch_seen.items():
        if node == "loss":
            continue
        mine = {m: v for m, v in row.items() if m != "kind"}
        assert set(from_summary.get(node, {})) == set(mine), (case, node)
        for metric, want in mine.items():
            assert same(from_summary[node][metric], want), (case, node, metric)
    # Every node with an output or a parameter, and the update of every step (its own).
    assert compared > 40
    assert any("update_ratio" in row for row in torch_seen.values())
    assert any("update_erank" in row for row in torch_seen.values())
    assert any("grad_srank" in row for row in torch_seen.values())
    if case in APART:
        assert "cka" in torch_seen["b"], torch_seen["b"]
    # The verdict over each record is the same (and the sick one has something to say).
    verdict = cli("diagnose", store, "--run", "watch")
    assert verdict == cli("diagnose", store, "--run", "dump")
    if case == "dead":
        assert any("DEAD" in f for flags in verdict.values() for f in flags), verdict
