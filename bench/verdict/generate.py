"""The verdict's labelled benchmark: train a corpus of small PyTorch runs, healthy and sick with
the cause built in, dump each the way a user does (per-step NPZ + graph.json), import the dumps
into a store without their tensors, and write the labels.

    /root/.cache/somatize/torch-venv/bin/python bench/verdict/generate.py [--only A,B] [--jobs N]
    ... generate.py --reimport          # re-import the cached dumps, no training
    ... generate.py --store S --dumps D --labels L --watch-store W   # also through watch
    ... [--watch-same-store W2]   # and through a watch of only the dumped steps

Without --only the store is made afresh. With --only the named runs are replaced in place
(the store's append-only listing.jsonl then names them twice; commit a corpus from a full run
or a full --reimport).
    ... generate.py --list              # the run names

Everything is on CPU with one thread, deterministic algorithms and fixed seeds, and the data
are made here (no downloads), so the corpus regenerates bit for bit (check_regen.py checks it).
Bit for bit on any x86 CPU, not only the one it was made on: torch and MKL otherwise pick their
kernels by the CPU's instruction set (AVX-512 sums in another order than AVX2), so the kernels
are pinned to portable ones before torch loads (`PORTABLE`: ATen's default capability, MKL's
conditional numerical reproducibility in its compatible mode, and oneDNN off, which sends
convolutions through ATen's own). Checked by training the three check_regen runs with MKL and
oneDNN limited to AVX2 on an AVX-512 machine: identical, where the unpinned kernels differ.

Dumps (bench-out/verdict/dumps/<run>/, git-ignored) follow DESIGN.md's per-step NPZ
convention: `param.<node>.<leaf>` (the weights the forward used, before the optimiser's step),
`grad.<node>.<leaf>`, `act.<node>` (every leaf module's output; GRU: its output sequence;
transformer: also each block's output), `loss`, and `update.<node>.<leaf>` (W after
`optimizer.step()` minus W before, float32). graph.json lists the nodes in declaration order
with their `kind` and, for every node with an activation, its `layout` (`ND`, `NCHW`, `NTD`;
the unit axis is where `C` or `D` stands), plus `apart` pairs for the branch runs.

Each run's loss curve (and, where the cause is structural, a direct measurement of the cause
in torch) is checked against its label; a run that does not behave as built fails generation.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor

# Set before torch loads (here, and in the pool's workers, which inherit the environment);
# they win over the caller's environment: the corpus is made one way.
PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
os.environ.update(PORTABLE)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DUMPS = os.path.join(ROOT, "bench-out", "verdict", "dumps")
CORPUS = os.path.join(HERE, "corpus")
LABELS = os.path.join(HERE, "labels.json")

# The flags a healthy run must not raise (issue 16).
SEVERE = ["NAN", "INF", "VANISHING", "EXPLODING", "DEAD", "SATURATED", "STALLED", "OVERSTEPPING"]

K = 4  # classes of the classification tasks


# ---------------------------------------------------------------------------------------------
# Runs: what each is built with and what it is labelled.
# ---------------------------------------------------------------------------------------------


def R(name, arch, opt, lr, batch, every, seed, steps, condition, **kw):
    r = dict(name=name, arch=arch, opt=opt, lr=lr, batch=batch, every=every, seed=seed,
             steps=steps, condition=condition)
    r.update(kw)
    return r


def runs():
    out = []
    # Healthy: every architecture trained well, at small and large batch, every step and every
    # 10th step, with several optimisers and seeds.
    healthy = [
        ("mlp_relu", "sgd_m", 0.05, 16, 1, 0, 200),
        ("mlp_relu", "adam", 3e-3, 256, 10, 1, 300),
        ("mlp_relu", "sgd", 0.1, 64, 10, 2, 300),
        ("mlp_gelu", "adamw", 3e-3, 8, 1, 0, 200),
        ("mlp_gelu", "sgd_m", 0.05, 128, 10, 1, 300),
        ("mlp_tanh", "sgd_m", 0.05, 32, 1, 0, 200),
        ("mlp_tanh", "adam", 3e-3, 256, 10, 1, 300),
        ("cnn", "sgd_m", 0.05, 16, 1, 0, 150),
        ("cnn", "adam", 3e-3, 128, 10, 1, 200),
        ("cnn_bn", "sgd_m", 0.05, 8, 1, 0, 150),
        ("cnn_bn", "adamw", 3e-3, 128, 10, 1, 200),
        ("rescnn", "sgd_m", 0.05, 16, 1, 0, 100),
        ("rescnn", "adam", 3e-3, 64, 10, 1, 200),
        ("gru", "adam", 5e-3, 16, 1, 0, 150),
        ("gru", "adamw", 5e-3, 128, 10, 1, 200),
        ("gru", "sgd_m", 0.1, 64, 10, 2, 300),
        ("tfm", "adamw", 3e-3, 8, 1, 0, 120),
        ("tfm", "adam", 3e-3, 64, 10, 1, 300),
        ("tfm", "adamw", 3e-3, 32, 10, 2, 300),
        ("embed", "adam", 1e-2, 16, 1, 0, 150),
        ("embed", "adamw", 1e-2, 256, 10, 1, 200),
        ("embed", "sgd_m", 0.5, 64, 10, 2, 300),
        ("branches", "adam", 3e-3, 32, 1, 0, 150),
        ("branches", "sgd_m", 0.05, 128, 10, 1, 300),
        ("mlp_relu", "sgd", 0.1, 4, 1, 3, 200),
        ("cnn_bn", "sgd", 0.1, 256, 10, 2, 150),
        ("mlp_gelu", "adam", 1e-3, 32, 10, 2, 300),
        ("mlp_tanh", "adamw", 3e-3, 64, 1, 2, 120),
        ("rescnn", "adamw", 3e-3, 32, 10, 2, 200),
        ("tfm", "sgd_m", 0.3, 32, 10, 3, 300),
    ]
    for arch, opt, lr, batch, every, seed, steps in healthy:
        out.append(R(f"healthy-{arch}-{opt}-b{batch}-e{every}-s{seed}", arch, opt, lr, batch,
                     every, seed, steps, "healthy"))

    # Sick, each with its cause built in.
    out += [
        R("vanishing-sigmoid10", "deep_sigmoid", "sgd", 0.1, 64, 1, 0, 60, "vanishing"),
        R("vanishing-sigmoid10-e10", "deep_sigmoid", "sgd_m", 0.05, 32, 10, 1, 200, "vanishing"),
        R("vanishing-tanh16", "deep_tanh_small", "sgd_m", 0.05, 64, 1, 0, 60, "vanishing"),
        R("exploding-mlp", "mlp_relu_reg", "sgd_m", 0.7, 64, 1, 0, 80, "exploding", stop=1e4),
        R("exploding-mlp-tanh", "mlp_tanh_reg", "sgd_m", 0.2, 32, 1, 1, 80, "exploding",
          stop=1e4),
        R("nan-mlp", "mlp_relu_reg", "sgd", 5.0, 64, 1, 0, 40, "nan"),
        R("nan-cnn", "cnn_reg", "sgd_m", 5.0, 32, 1, 0, 40, "nan"),
        R("nan-gru-e10", "gru_reg", "sgd", 200.0, 32, 10, 0, 100, "nan"),
        R("dead-bias", "mlp_relu_deadbias", "sgd_m", 0.05, 64, 1, 0, 100, "dead"),
        R("dead-bias-e10", "mlp_relu_deadbias", "adam", 1e-3, 128, 10, 1, 200, "dead"),
        R("dead-highlr", "mlp_relu", "sgd_m", 3.0, 64, 1, 0, 100, "dead"),
        R("saturated-tanh", "mlp_tanh_sat", "sgd", 0.02, 64, 1, 0, 100, "saturated"),
        R("saturated-sigmoid-e10", "mlp_sigmoid_sat", "adam", 1e-4, 64, 10, 0, 200, "saturated"),
        R("stalled-mlp", "mlp_relu", "sgd", 1e-7, 64, 1, 0, 100, "stalled"),
        R("stalled-cnn-e10", "cnn", "sgd", 1e-7, 64, 10, 0, 150, "stalled"),
        R("stalled-tfm", "tfm", "adam", 1e-9, 32, 1, 0, 60, "stalled"),
        R("frozen-mlp", "mlp_relu", "sgd_m", 0.05, 32, 1, 0, 150, "frozen", frozen=["fc2"]),
        R("frozen-cnn-e10", "cnn_bn", "adam", 3e-3, 64, 10, 0, 150, "frozen", frozen=["conv2"]),
        R("frozen-tfm", "tfm", "adamw", 3e-3, 16, 1, 0, 80, "frozen",
          frozen=["blocks.1.fc1"]),
        R("overstepping-mlp", "mlp_relu", "adam", 1.0, 64, 1, 0, 100, "overstepping"),
        R("overstepping-tfm", "tfm", "adam", 1.0, 32, 1, 0, 60, "overstepping"),
        # its seed: the first from 0 that oversteps as built with the PORTABLE kernels
        R("overstepping-cnn-e10", "cnn", "adam", 1.0, 64, 10, 4, 150, "overstepping"),
        R("nonorm-deep-mlp", "deep_relu_gain", "sgd", 1e-4, 64, 1, 0, 60, "missing_norm"),
        R("nonorm-deep-cnn-e10", "deep_cnn_gain", "sgd", 1e-5, 32, 10, 0, 150, "missing_norm"),
        R("leak-branches", "branches_leak", "adam", 3e-3, 32, 1, 0, 150, "leakage"),
        R("leak-branches-e10", "branches_leak", "sgd_m", 0.05, 128, 10, 1, 300, "leakage"),
        R("deadchan-cnn", "cnn_deadchan", "sgd_m", 0.05, 32, 1, 0, 150, "dead_channels"),
        R("deadchan-cnnbn-e10", "cnn_bn_deadchan", "adam", 3e-3, 64, 10, 0, 200,
          "dead_channels"),
        R("plasticity-mlp-e10-s2", "mlp_relu_wide", "adam", 1e-2, 64, 10, 2, 600, "plasticity",
          tasks=10),
        R("plasticity-mlp-e10", "mlp_relu_wide", "adam", 1e-2, 64, 10, 1, 800, "plasticity",
          tasks=10),
    ]
    return out


# ---------------------------------------------------------------------------------------------
# Data, made here from a seed.
# ---------------------------------------------------------------------------------------------


def make_data(kind, seed, torch):
    g = torch.Generator().manual_seed(1000 + seed)
    n = 1024
    if kind == "vec":  # 16 features, 4 classes from a random tanh teacher
        x = torch.randn(n, 16, generator=g)
        w1 = torch.randn(16, 32, generator=g) / 4
        w2 = torch.randn(32, K, generator=g)
        y = torch.argmax(torch.tanh(x @ w1) @ w2, dim=1)
        return x, y
    if kind == "vec_reg":  # 16 features, a scalar target (MSE)
        x = torch.randn(n, 16, generator=g)
        w1 = torch.randn(16, 32, generator=g) / 4
        w2 = torch.randn(32, 1, generator=g) / 4
        return x, torch.tanh(x @ w1) @ w2
    if kind == "img":  # 1x8x8 images, 4 classes of smooth templates plus noise
        t = torch.randn(K, 1, 4, 4, generator=g)
        t = torch.nn.functional.interpolate(t, size=(8, 8), mode="bilinear", align_corners=False)
        y = torch.randint(0, K, (n,), generator=g)
        x = t[y] + 0.8 * torch.randn(n, 1, 8, 8, generator=g)
        return x, y
    if kind == "img_reg":
        t = torch.randn(K, 1, 4, 4, generator=g)
        t = torch.nn.functional.interpolate(t, size=(8, 8), mode="bilinear", align_corners=False)
        y = torch.randint(0, K, (n,), generator=g)
        x = t[y] + 0.8 * torch.randn(n, 1, 8, 8, generator=g)
        return x, (y.float() - 1.5).unsqueeze(1)
    if kind == "seq":  # 12 steps of 4 features, 4 classes of templates plus noise
        t = torch.randn(K, 12, 4, generator=g)
        y = torch.randint(0, K, (n,), generator=g)
        x = t[y] + 1.0 * torch.randn(n, 12, 4, generator=g)
        return x, y
    if kind == "seq_reg":
        t = torch.randn(K, 12, 4, generator=g)
        y = torch.randint(0, K, (n,), generator=g)
        x = t[y] + 1.0 * torch.randn(n, 12, 4, generator=g)
        return x, (y.float() - 1.5).unsqueeze(1)
    if kind == "lm":  # 16 tokens, a Markov chain with two likely successors per token
        V, T = 16, 16
        nxt = torch.randint(0, V, (V, 2), generator=g)
        seqs = torch.empty(n, T + 1, dtype=torch.long)
        seqs[:, 0] = torch.randint(0, V, (n,), generator=g)
        for i in range(T):
            pick = torch.randint(0, 2, (n,), generator=g)
            noise = torch.rand(n, generator=g) < 0.05
            rnd = torch.randint(0, V, (n,), generator=g)
            seqs[:, i + 1] = torch.where(noise, rnd, nxt[seqs[:, i], pick])
        return seqs[:, :-1], seqs[:, 1:]
    if kind == "bag":  # 2000-token vocabulary, each token belongs to a class; 8 tokens a sample
        V, T = 2000, 8
        cls = torch.randint(0, K, (V,), generator=g)
        by = [torch.nonzero(cls == c).flatten() for c in range(K)]
        y = torch.randint(0, K, (n,), generator=g)
        x = torch.randint(0, V, (n, T), generator=g)
        own = torch.rand(n, T, generator=g) < 0.6
        for c in range(K):
            rows = y == c
            pick = torch.randint(0, len(by[c]), (n, T), generator=g)
            x = torch.where(own & rows.unsqueeze(1), by[c][pick], x)
        return x, y
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------------
# Models. Node names are module paths; kinds are class names; layouts are set per node.
# ---------------------------------------------------------------------------------------------


def build(arch, torch):
    nn = torch.nn

    def mlp(act, depth, width, din=16, dout=K, gain=None, bias=None):
        layers = OrderedDict()
        d = din
        for i in range(1, depth + 1):
            fc = nn.Linear(d, width)
            if gain is not None:
                nn.init.normal_(fc.weight, 0.0, gain / math.sqrt(d))
                nn.init.zeros_(fc.bias)
            if bias is not None and i <= 2:
                nn.init.constant_(fc.bias, bias)
            layers[f"fc{i}"] = fc
            layers[f"act{i}"] = act()
            d = width
        layers["out"] = nn.Linear(d, dout)
        return nn.Sequential(layers), "vec", {}

    class CNN(nn.Module):
        def __init__(self, bn, dout=K, dead=0):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(16) if bn else None
            self.relu1 = nn.ReLU()
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
            self.bn2 = nn.BatchNorm2d(32) if bn else None
            self.relu2 = nn.ReLU()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flat = nn.Flatten()
            self.fc = nn.Linear(32, dout)
            if dead:  # the first `dead` channels of relu1 never open
                with torch.no_grad():
                    if bn:
                        self.bn1.bias[:dead] = -8.0
                    else:
                        self.conv1.bias[:dead] = -8.0

        def forward(self, x):
            x = self.conv1(x)
            if self.bn1 is not None:
                x = self.bn1(x)
            x = self.relu1(x)
            x = self.conv2(x)
            if self.bn2 is not None:
                x = self.bn2(x)
            x = self.relu2(x)
            return self.fc(self.flat(self.pool(x)))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.relu1 = nn.ReLU()
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.relu2 = nn.ReLU()

        def forward(self, x):
            h = self.relu1(self.bn1(self.conv1(x)))
            return self.relu2(x + self.bn2(self.conv2(h)))

    class ResCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(1, 16, 3, padding=1, bias=False)
            self.stem_bn = nn.BatchNorm2d(16)
            self.stem_relu = nn.ReLU()
            self.block1 = Block(16)
            self.block2 = Block(16)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flat = nn.Flatten()
            self.fc = nn.Linear(16, K)

        def forward(self, x):
            x = self.stem_relu(self.stem_bn(self.stem(x)))
            x = self.block2(self.block1(x))
            return self.fc(self.flat(self.pool(x)))

    class DeepCNN(nn.Module):
        def __init__(self, depth=8, gain=2.0):
            super().__init__()
            layers = OrderedDict()
            c = 1
            for i in range(1, depth + 1):
                conv = nn.Conv2d(c, 16, 3, padding=1)
                nn.init.normal_(conv.weight, 0.0, gain * math.sqrt(2.0 / (c * 9)))
                nn.init.zeros_(conv.bias)
                layers[f"conv{i}"] = conv
                layers[f"relu{i}"] = nn.ReLU()
                c = 16
            self.body = nn.Sequential(layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flat = nn.Flatten()
            self.fc = nn.Linear(16, K)

        def forward(self, x):
            return self.fc(self.flat(self.pool(self.body(x))))

    class GRUNet(nn.Module):
        def __init__(self, dout=K):
            super().__init__()
            self.inp = nn.Linear(4, 32)
            self.gru = nn.GRU(32, 48, batch_first=True)
            self.head = nn.Linear(48, dout)

        def forward(self, x):
            h, _ = self.gru(self.inp(x))
            return self.head(h[:, -1])

    class TBlock(nn.Module):
        def __init__(self, d, heads=4):
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x):
            N, T, D = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
            hd = D // self.heads
            q = q.view(N, T, self.heads, hd).transpose(1, 2)
            k = k.view(N, T, self.heads, hd).transpose(1, 2)
            v = v.view(N, T, self.heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
            mask = torch.ones(T, T, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(N, T, D)
            x = x + self.proj(y)
            return x + self.fc2(self.act(self.fc1(self.ln2(x))))

    class TLM(nn.Module):
        def __init__(self, V=16, T=16, d=32, n=2):
            super().__init__()
            self.tok = nn.Embedding(V, d)
            self.pos = nn.Embedding(T, d)
            self.blocks = nn.ModuleList([TBlock(d) for _ in range(n)])
            self.lnf = nn.LayerNorm(d)
            self.head = nn.Linear(d, V)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(T))
            for b in self.blocks:
                x = b(x)
            return self.head(self.lnf(x))

    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(2000, 32)
            self.fc1 = nn.Linear(32, 64)
            self.act1 = nn.ReLU()
            self.out = nn.Linear(64, K)

        def forward(self, x):
            return self.out(self.act1(self.fc1(self.emb(x).mean(dim=1))))

    class Branches(nn.Module):
        """Two branches meant to see two different halves of the input (declared apart)."""

        def __init__(self, leak):
            super().__init__()
            self.leak = leak
            self.a_fc = nn.Linear(8, 32)
            self.a_act = nn.ReLU()
            self.b_fc = nn.Linear(8, 32)
            self.b_act = nn.ReLU()
            self.head = nn.Linear(64, K)

        def forward(self, x):
            xa = x[:, :8]
            xb = x[:, :8] if self.leak else x[:, 8:]  # the leak: b is fed a's input
            return self.head(torch.cat([self.a_act(self.a_fc(xa)), self.b_act(self.b_fc(xb))], 1))

    if arch == "mlp_relu":
        return mlp(nn.ReLU, 2, 64)
    if arch == "mlp_relu_wide":
        return mlp(nn.ReLU, 2, 128)
    if arch == "mlp_gelu":
        return mlp(nn.GELU, 2, 64)
    if arch == "mlp_tanh":
        return mlp(nn.Tanh, 2, 64)
    if arch == "mlp_relu_reg":
        m, _, _ = mlp(nn.ReLU, 3, 64, dout=1)
        return m, "vec_reg", {"mse": True}
    if arch == "mlp_tanh_reg":
        m, _, _ = mlp(nn.Tanh, 3, 64, dout=1, gain=2.0)
        return m, "vec_reg", {"mse": True}
    if arch == "deep_sigmoid":
        return mlp(nn.Sigmoid, 10, 32)
    if arch == "deep_tanh_small":
        return mlp(nn.Tanh, 16, 32, gain=0.5)
    if arch == "deep_relu_gain":
        return mlp(nn.ReLU, 8, 64, gain=math.sqrt(2.0) * 1.8)
    if arch == "mlp_relu_deadbias":
        return mlp(nn.ReLU, 2, 64, bias=-6.0)
    if arch == "mlp_tanh_sat":
        return mlp(nn.Tanh, 2, 64, gain=12.0)
    if arch == "mlp_sigmoid_sat":
        return mlp(nn.Sigmoid, 2, 64, gain=20.0)
    if arch == "cnn":
        return CNN(False), "img", {}
    if arch == "cnn_reg":
        return CNN(False, dout=1), "img_reg", {"mse": True}
    if arch == "cnn_deadchan":
        return CNN(False, dead=8), "img", {}
    if arch == "cnn_bn":
        return CNN(True), "img", {}
    if arch == "cnn_bn_deadchan":
        return CNN(True, dead=8), "img", {}
    if arch == "rescnn":
        return ResCNN(), "img", {"blocks": ["block1", "block2"]}
    if arch == "deep_cnn_gain":
        return DeepCNN(), "img", {}
    if arch == "gru":
        return GRUNet(), "seq", {}
    if arch == "gru_reg":
        return GRUNet(dout=1), "seq_reg", {"mse": True}
    if arch == "tfm":
        return TLM(), "lm", {"blocks": ["blocks.0", "blocks.1"], "lm": True}
    if arch == "embed":
        return Bag(), "bag", {}
    if arch == "branches":
        return Branches(False), "vec", {"apart": [["a_act", "b_act"]]}
    if arch == "branches_leak":
        return Branches(True), "vec", {"apart": [["a_act", "b_act"]]}
    raise ValueError(arch)


ARCH_FAMILY = {
    "mlp_relu": "MLP (ReLU)", "mlp_relu_wide": "MLP (ReLU)", "mlp_gelu": "MLP (GELU)",
    "mlp_tanh": "MLP (tanh)", "mlp_relu_reg": "MLP (ReLU)", "mlp_tanh_reg": "MLP (tanh)",
    "deep_sigmoid": "MLP (sigmoid, 10 deep)", "deep_tanh_small": "MLP (tanh, 16 deep)",
    "deep_relu_gain": "MLP (ReLU, 8 deep, no norm)", "mlp_relu_deadbias": "MLP (ReLU)",
    "mlp_tanh_sat": "MLP (tanh)", "mlp_sigmoid_sat": "MLP (sigmoid)", "cnn": "CNN",
    "cnn_reg": "CNN", "cnn_deadchan": "CNN", "cnn_bn": "CNN + BatchNorm",
    "cnn_bn_deadchan": "CNN + BatchNorm", "rescnn": "residual CNN",
    "deep_cnn_gain": "CNN (6 deep, no norm)", "gru": "GRU", "gru_reg": "GRU",
    "tfm": "pre-norm transformer LM", "embed": "embedding bag", "branches": "two-branch MLP",
    "branches_leak": "two-branch MLP",
}


def layout_of(shape):
    """The layout of an activation of this shape (unit axis: where C or D stands)."""
    return {2: "ND", 3: "NTD", 4: "NCHW"}.get(len(shape))


def make_opt(name, params, lr, torch):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "sgd_m":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.05)
    raise ValueError(name)


OPT_NAME = {"sgd": "SGD", "sgd_m": "SGD momentum 0.9", "adam": "Adam",
            "adamw": "AdamW weight decay 0.05"}


# ---------------------------------------------------------------------------------------------
# Training and dumping one run.
# ---------------------------------------------------------------------------------------------


def train(run, out_dir, watch_store=None, same_store=None):
    """Train `run`, dump it into `out_dir`, and return what the label check needs. With
    `watch_store`, the same training is also recorded through `somatize.torch.watch` (at the
    run's `every`, the norms every step as by default) into that store, as run `run["name"]`:
    the watch path of the same run. With `same_store`, also through a second watch that
    records what the dumps hold (`norms_every` = `every`: only the dumped steps)."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.backends.mkldnn.enabled = False  # PORTABLE: oneDNN picks its kernels by the CPU
    torch.manual_seed(run["seed"])
    model, data, extra = build(run["arch"], torch)
    x_all, y_all = make_data(data, run["seed"], torch)
    n = x_all.shape[0]
    frozen = run.get("frozen", [])
    named = dict(model.named_parameters())
    frozen_keys = [k for k in named if any(k.startswith(f + ".") for f in frozen)]
    train_params = [p for k, p in named.items() if k not in frozen_keys]
    opt = make_opt(run["opt"], train_params, run["lr"], torch)
    mse = extra.get("mse", False)
    lm = extra.get("lm", False)

    # Nodes: every leaf module in declaration order, then (transformer, residual CNN) each
    # block after its own leaves.
    leaves = [(name, m) for name, m in model.named_modules()
              if name and not list(m.children())]
    blocks = extra.get("blocks", [])
    nodes = []
    for name, m in leaves:
        nodes.append((name, m))
        for b in blocks:
            last_leaf = [ln for ln, _ in leaves if ln.startswith(b + ".")][-1]
            if name == last_leaf:
                nodes.append((b, model.get_submodule(b)))
    acts = {}
    dump_now = [False]

    def hook(name):
        def f(_module, _inp, output):
            if dump_now[0]:
                o = output[0] if isinstance(output, tuple) else output
                acts[name] = o.detach().clone()
        return f

    for name, m in nodes:
        m.register_forward_hook(hook(name))
    watches = []
    if watch_store or same_store:
        # This checkout's package (not one installed in the venv from another commit).
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import somatize.torch as st
        for store, norms_every in ((watch_store, 1), (same_store, run["every"])):
            if store:
                watches.append(st.watch(model, opt, store=store, run=run["name"],
                                        every=run["every"], norms_every=norms_every,
                                        apart=extra.get("apart", [])))

    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    layouts = {}
    losses = []
    g = torch.Generator().manual_seed(2000 + run["seed"])
    tasks = run.get("tasks")
    task_len = run["steps"] // tasks if tasks else None
    y_task = y_all
    task_ends = []
    p0 = {k: p.detach().clone() for k, p in named.items()}
    nonfinite = 0  # NaN/Inf entries in every dumped tensor
    for step in range(run["steps"]):
        if tasks:
            t = step // task_len
            if step % task_len == 0:  # a new task: the labels of this task are random
                tg = torch.Generator().manual_seed(5000 + 97 * t + run["seed"])
                y_task = torch.randint(0, K, (n,), generator=tg)
            if step % task_len == task_len - 1:
                task_ends.append(step)
        idx = torch.randint(0, 256 if tasks else n, (run["batch"],), generator=g)
        xb, yb = x_all[idx], y_task[idx]
        dump_now[0] = step % run["every"] == 0
        acts.clear()
        model.train()
        opt.zero_grad()
        logits = model(xb)
        if mse:
            loss = torch.nn.functional.mse_loss(logits, yb)
        elif lm:
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                     yb.reshape(-1))
        else:
            loss = torch.nn.functional.cross_entropy(logits, yb)
        loss.backward()
        losses.append(float(loss.item()))
        if dump_now[0]:
            before = {k: p.detach().clone() for k, p in named.items()}
            arrays = OrderedDict()
            for k, p in named.items():
                arrays[f"param.{k}"] = p.detach().numpy().astype(np.float32, copy=True)
            for k, p in named.items():
                if p.grad is not None:
                    arrays[f"grad.{k}"] = p.grad.detach().numpy().astype(np.float32, copy=True)
            for name, _ in nodes:
                if name in acts:
                    a = acts[name]
                    arrays[f"act.{name}"] = a.numpy().astype(np.float32, copy=True)
                    layouts.setdefault(name, layout_of(a.shape))
            arrays["loss"] = np.array(loss.item(), dtype=np.float32)
        opt.step()
        if dump_now[0]:
            for k, p in named.items():
                arrays[f"update.{k}"] = (p.detach() - before[k]).numpy().astype(np.float32)
            nonfinite += sum(int((~np.isfinite(a)).sum()) for a in arrays.values())
            np.savez(os.path.join(out_dir, f"step_{step:06d}.npz"), **arrays)
        for watch in watches:
            watch.step(loss)
        if run.get("stop") and losses[-1] > run["stop"] * losses[0]:
            break  # stopped by hand before any NaN, as a user who sees the loss climb would
    for watch in watches:
        watch.close()
    graph = {"nodes": []}
    for name, m in nodes:
        node = {"name": name, "kind": type(m).__name__}
        if name in layouts and layouts[name]:
            node["layout"] = layouts[name]
        graph["nodes"].append(node)
    if extra.get("apart"):
        graph["apart"] = extra["apart"]
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(graph, f, indent=1)
        f.write("\n")

    # Direct measurements of the built cause, in torch (for the label check).
    facts = {"losses": losses, "nonfinite_dumped": nonfinite}
    with torch.no_grad():
        model.train()
        acts.clear()
        dump_now[0] = True
        probe = x_all[:256]
        model(probe)
        dump_now[0] = False
        facts["never_on"] = {}
        facts["saturated"] = {}
        for name, m in nodes:
            a = acts.get(name)
            if a is None:
                continue
            if isinstance(m, torch.nn.ReLU):
                unit = 1
                dims = [d for d in range(a.dim()) if d != unit]
                on = (a > 0).float().amax(dim=dims) if dims else (a > 0).float()
                facts["never_on"][name] = float((on == 0).float().mean())
            if isinstance(m, (torch.nn.Tanh, torch.nn.Sigmoid)):
                s = a if isinstance(m, torch.nn.Tanh) else 2 * a - 1
                facts["saturated"][name] = float((s.abs() > 0.99).float().mean())
        facts["act_std"] = {name: float(a.float().std()) for name, a in acts.items()
                            if torch.isfinite(a).all()}
    facts["unchanged"] = {k: bool(torch.equal(p0[k], p.detach())) for k, p in named.items()}
    gn = {}
    # gradient norms per parameter at the last step
    for k, p in named.items():
        if p.grad is not None:
            gn[k] = float(p.grad.norm())
    facts["grad_norm"] = gn
    facts["task_ends"] = task_ends
    facts["nodes"] = [name for name, _ in nodes]
    return facts


# ---------------------------------------------------------------------------------------------
# Labels: from how the run was built, confirmed on its loss curve and the built cause.
# ---------------------------------------------------------------------------------------------


def num(v):
    """A loss for JSON: the float, or "nan"/"inf"/"-inf" (JSON has no such numbers)."""
    return v if math.isfinite(v) else str(v)


def mean(xs):
    return sum(xs) / len(xs)


def label(run, facts):
    """The run's label and the check that it behaved as built; raises if it did not."""
    L = facts["losses"]
    finite = [v for v in L if math.isfinite(v)]
    k = max(1, len(L) // 10)
    first, last = mean(L[:3]), mean(L[-k:])  # the start, and the last tenth of the run
    c = run["condition"]
    where = []
    must, must_not = [], []
    checks = []

    def need(ok, what):
        checks.append(what)
        if not ok:
            raise AssertionError(f"{run['name']}: {what} does not hold "
                                 f"(first {first:.4g}, last {last:.4g}, facts "
                                 f"{ {k: v for k, v in facts.items() if k not in ('losses', 'grad_norm', 'unchanged')} })")

    all_finite = len(finite) == len(L)
    if c == "healthy":
        need(all_finite, "every loss finite")
        need(last <= 0.6 * first,
             "mean loss of the last tenth <= 0.6 x the mean of the first three steps")
        must_not = list(SEVERE) + (["LEAKAGE"] if run["arch"] == "branches" else [])
        how = "built with a sane architecture, initialisation and learning rate; trained well"
    elif c == "vanishing":
        need(all_finite, "every loss finite")
        need(min(L) >= 0.85 * first, "the loss never falls below 0.85 x its start")
        names = [k for k in facts["grad_norm"] if k.endswith(".weight")]
        ratio = facts["grad_norm"][names[0]] / max(facts["grad_norm"][names[-1]], 1e-30)
        need(ratio < 1e-2, f"first layer's grad norm / last layer's < 1e-2 (is {ratio:.2e})")
        must, must_not = ["VANISHING"], ["NAN", "INF", "EXPLODING"]
        where = ["fc1", "fc2"]
        how = ("built deep with saturating activations and no normalisation; gradient shrinks "
               "layer by layer toward the input and the loss does not fall")
    elif c == "exploding":
        need(all_finite and facts["nonfinite_dumped"] == 0,
             "every loss and every dumped tensor finite (no NaN/Inf)")
        ups = 0
        best = 0
        for a, b in zip(L, L[1:]):
            ups = ups + 1 if b > a else 0
            best = max(best, ups)
        need(best >= 5, f"the loss rises for >= 5 steps in a row (longest {best})")
        need(max(L) >= 1e3 * L[0], "the loss grows to >= 1000 x its start")
        must, must_not = ["EXPLODING"], ["NAN", "INF", "STALLED", "VANISHING"]
        how = ("learning rate above the stable bound for this net; the loss grows over many "
               "steps and the run was stopped before any NaN/Inf")
    elif c == "nan":
        bad = [i for i, v in enumerate(L) if not math.isfinite(v)]
        need(bool(bad), "the loss becomes NaN/Inf")
        need(bad[0] >= 1 and all(math.isfinite(v) for v in L[:bad[0]]),
             "the loss was finite before the blow-up")
        need(max(finite) > 10 * L[0] or bad[0] <= 3, "the loss blew up before going non-finite")
        must, must_not = ["NAN|INF"], ["VANISHING", "STALLED", "DEAD", "SATURATED"]
        facts["first_nonfinite_step"] = bad[0]
        how = ("learning rate far too high: the loss blows up and becomes NaN/Inf at step "
               f"{bad[0]}; recording went on as a user's would. Flags other than NAN/INF "
               "would be artefacts of the NaN")
    elif c == "dead":
        need(all_finite, "every loss finite")
        dead = {k: v for k, v in facts["never_on"].items() if v >= 0.5}
        need(bool(dead), "a ReLU layer has >= half its units off on every probe sample")
        need(last >= 0.7 * first and min(L[len(L) // 2:]) >= 0.5 * first,
             "the loss does not train well")
        where = sorted(dead)
        must, must_not = ["DEAD"], ["NAN", "INF", "EXPLODING"]
        how = ("built to kill ReLUs (strongly negative bias, or an SGD step so large it pushes "
               "units negative); torch shows >= half the units never on, loss does not train")
    elif c == "saturated":
        need(all_finite, "every loss finite")
        sat = {k: v for k, v in facts["saturated"].items() if v >= 0.5}
        need(bool(sat), "a tanh/sigmoid layer has >= half its outputs past 0.99 of its range")
        need(last >= 0.6 * first, "the loss does not train well")
        where = sorted(sat)
        must, must_not = ["SATURATED"], ["NAN", "INF", "DEAD"]
        how = ("initialised with a very large gain so the tanh/sigmoid units sit at their "
               "bounds; torch shows >= half the outputs saturated, loss does not train")
    elif c == "stalled":
        need(all_finite, "every loss finite")
        need(abs(last - first) <= 0.01 * first, "the loss changes by <= 1% over the run")
        must, must_not = ["STALLED"], ["NAN", "INF", "EXPLODING", "OVERSTEPPING", "DEAD",
                                       "SATURATED", "VANISHING"]
        how = "learning rate far too low for its optimiser (>= 10^4 x below sane); loss flat"
    elif c == "frozen":
        need(all_finite, "every loss finite")
        fz = [k for k, v in facts["unchanged"].items()
              if any(k.startswith(f + ".") for f in run["frozen"])]
        need(fz and all(facts["unchanged"][k] for k in fz), "the frozen layer is bit-identical")
        need(not all(facts["unchanged"].values()), "the other layers moved")
        where = list(run["frozen"])
        must, must_not = ["STALLED"], ["NAN", "INF", "EXPLODING", "OVERSTEPPING"]
        how = ("the layer's parameters were left out of the optimiser: it never moves "
               "(checked bit for bit) while the rest trains")
    elif c == "overstepping":
        need(all_finite, "every loss finite")
        jumps = sum(1 for a, b in zip(L, L[1:]) if b > 1.5 * a)
        need(jumps >= 3, f"the loss jumps up by > 1.5x at least 3 times ({jumps})")
        need(last >= 0.5 * L[0], "the loss ends above half its very first value")
        must, must_not = ["OVERSTEPPING"], ["NAN", "INF"]
        how = ("Adam with a learning rate >= 100x too high: each step oversteps, the loss jumps "
               f"up by >1.5x {jumps} times and does not train (units it kills on the way may "
               "really be dead and their gradients really vanish, so only NaN/Inf, which the "
               "finite run never has, is forbidden)")
    elif c == "missing_norm":
        need(all_finite, "every loss finite")
        stds = facts["act_std"]
        names = [n for n in facts["nodes"] if n in stds and (n.startswith("act") or
                                                          n.startswith("body.relu"))]
        growth = stds[names[-1]] / max(stds[names[0]], 1e-30)
        need(growth >= 30, f"activation std grows >= 30x from the first to the last hidden "
                           f"layer ({growth:.1f}x)")
        need(last >= math.log(K), "the loss ends worse than guessing uniformly (ln 4)")
        must, must_not = ["MISSING_NORMALISATION"], ["STALLED", "VANISHING"]
        how = ("deep plain net, initialised with 1.6-1.8x He gain and no normalisation: the "
               f"signal grows {growth:.0f}x with depth; the loss does not train")
    elif c == "leakage":
        need(all_finite, "every loss finite")
        must, must_not = ["LEAKAGE"], ["NAN", "INF", "EXPLODING", "STALLED"]
        where = ["b_act"]
        how = ("branch b, declared apart from branch a in graph.json, is fed branch a's input "
               "(the leak is in the code); the run still trains")
    elif c == "dead_channels":
        need(all_finite, "every loss finite")
        need(facts["never_on"].get("relu1", 0) >= 0.4, "relu1 has >= 40% channels never on")
        need(last <= 0.8 * first, "the run still trains on its live channels")
        where = ["relu1"]
        must, must_not = ["DEAD_CHANNELS"], ["NAN", "INF", "EXPLODING"]
        how = ("8 of conv1's 16 channels get a bias of -8 before the ReLU: those channels "
               "never open (checked in torch) while the rest train")
    elif c == "plasticity":
        need(all_finite, "every loss finite")
        ends = facts["task_ends"]
        te = [mean(L[e - 9:e + 1]) for e in ends]
        facts["task_end_losses"] = te
        need(mean(te[-2:]) >= 1.3 * mean(te[:2]),
             "the last tasks end >= 1.3x worse than the first tasks (same kind of task)")
        must, must_not = ["LOSING_PLASTICITY"], ["NAN", "INF"]
        how = (f"{run['tasks']} tasks of random labels in a row on one net: each new task is "
               "fitted worse than the first ones were (end-of-task losses "
               + ", ".join(f"{v:.2f}" for v in te) + ")")
    else:
        raise ValueError(c)
    lab = {
        "architecture": ARCH_FAMILY[run["arch"]], "arch": run["arch"],
        "optimiser": OPT_NAME[run["opt"]], "lr": run["lr"], "batch": run["batch"],
        "every": run["every"], "seed": run["seed"], "steps": len(L), "condition": c,
        "must": must, "must_not": must_not, "where": where, "how": how, "checked": checks,
        "loss": {"first": num(L[0]), "last": num(L[-1]),
                 "min": min(finite) if finite else None},
    }
    for key in ("frozen", "tasks"):
        if key in run:
            lab[key] = run[key]
    return lab


# ---------------------------------------------------------------------------------------------
# Import and the driver.
# ---------------------------------------------------------------------------------------------


def somatize_bin(arg):
    return arg or os.path.join(ROOT, "target", "release", "somatize")


def do_import(binary, dump_dir, store, name):
    run_dir = os.path.join(store, "runs", name)
    if os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    subprocess.run([binary, "import", dump_dir, "--store", store, "--run", name, "--no-tensors"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def one(args):
    """Train one run and label it: (name, label, None) or (name, None, why it failed)."""
    run, dumps, watch_store, same_store = args
    facts = train(run, os.path.join(dumps, run["name"]), watch_store, same_store)
    try:
        return run["name"], label(run, facts), None
    except AssertionError as e:
        return run["name"], None, str(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated run names")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--bin", help="the somatize binary (default target/release/somatize)")
    ap.add_argument("--store", default=CORPUS, help="the store to import into")
    ap.add_argument("--dumps", default=DUMPS, help="the dump cache folder")
    ap.add_argument("--labels", default=LABELS, help="labels.json to write (merged by run)")
    ap.add_argument("--reimport", action="store_true",
                    help="re-import the cached dumps without training")
    ap.add_argument("--list", action="store_true", help="print the run names and stop")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="add this to every run's seed: a fresh corpus of the same runs, to check "
                         "that the verdict was not fitted to the committed seeds (write it with "
                         "--store/--dumps/--labels elsewhere)")
    ap.add_argument("--drop-unbuilt", action="store_true",
                    help="leave out (unlabelled) a run that does not behave as built instead of "
                         "stopping; for a fresh-seed corpus, never for the committed one")
    ap.add_argument("--watch-store",
                    help="also record each run as it trains through somatize.torch.watch into "
                         "this store (the watch path of the same runs, scored beside the "
                         "dumps'; see docs/verdict-benchmark.md)")
    ap.add_argument("--watch-same-store",
                    help="also record each run through a second watch that records only the "
                         "steps the dumps hold (norms_every = the run's every): the two paths "
                         "on the same data")
    args = ap.parse_args()
    for store in (args.watch_store, args.watch_same_store):
        if store:
            # The watch's companion is the binary the dumps are imported with.
            os.environ["SOMATIZE_BIN"] = os.path.abspath(somatize_bin(args.bin))
            os.makedirs(store, exist_ok=True)
    all_runs = runs()
    for r in all_runs:
        r["seed"] += args.seed_offset
    if args.list:
        for r in all_runs:
            print(r["name"])
        return 0
    chosen = all_runs
    if args.only:
        want = [w.strip() for w in args.only.split(",") if w.strip()]
        unknown = sorted(set(want) - {r["name"] for r in all_runs})
        if unknown:
            sys.exit(f"unknown runs: {', '.join(unknown)}")
        chosen = [r for r in all_runs if r["name"] in want]
    binary = somatize_bin(args.bin)
    labels = {}
    if os.path.exists(args.labels):
        with open(args.labels) as f:
            labels = json.load(f).get("runs", {})
    if not args.reimport:
        todo = [(r, args.dumps, args.watch_store, args.watch_same_store) for r in chosen]
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs) as ex:
                results = list(ex.map(one, todo))
        else:
            results = [one(t) for t in todo]
        failed = [(name, why) for name, _, why in results if why]
        for name, lab, _ in results:
            if lab:
                labels[name] = lab
                print(f"trained {name}: {lab['condition']}, loss {lab['loss']['first']} -> "
                      f"{lab['loss']['last']}", flush=True)
        if failed:
            for name, why in failed:
                print(f"NOT AS BUILT {why}", file=sys.stderr)
            if not args.drop_unbuilt:
                sys.exit(f"{len(failed)} runs did not behave as built; nothing imported")
            # A fresh-seed corpus: a run that did not fail (or train) as built has no label.
            gone = {name for name, _ in failed}
            chosen = [r for r in chosen if r["name"] not in gone]
            all_runs = [r for r in all_runs if r["name"] not in gone]
            for name in gone:
                labels.pop(name, None)
            print(f"dropped {len(gone)} runs that did not behave as built: "
                  f"{', '.join(sorted(gone))}", file=sys.stderr)
    write_labels(args.labels, labels, all_runs)
    if not os.path.exists(binary):
        sys.exit(f"{binary}: no somatize binary to import with (cargo build --release), "
                 "then run again with --reimport")
    if not args.only and os.path.exists(os.path.join(args.store, "somatize-store.json")):
        # every run: a fresh store, so its listing names each run once, in order
        shutil.rmtree(args.store)
    os.makedirs(args.store, exist_ok=True)
    for r in chosen:
        d = os.path.join(args.dumps, r["name"])
        if not os.path.isdir(d):
            sys.exit(f"{d}: no cached dumps (run without --reimport first)")
        do_import(binary, d, args.store, r["name"])
    print(f"{len(chosen)} runs into {args.store}; labels in {args.labels}")
    return 0


def write_labels(path, labels, all_runs):
    import torch  # (after PORTABLE is in the environment)

    order = [r["name"] for r in all_runs]
    doc = {
        "note": ("Labels are decided from how each run was built (its architecture, "
                 "initialisation, learning rate and any cause put in on purpose) and confirmed "
                 "by generate.py on the run's own loss curve and, where the cause is structural, "
                 "by a direct torch measurement of it (units never on, outputs at their bounds, "
                 "a layer bit-identical, gradient ratio across depth). They never use somatize's "
                 "thresholds or output. `must`: flags that must be raised somewhere (A|B: either); "
                 "`must_not`: flags that must not be raised anywhere; `where`: the node(s) the "
                 "cause is at, when it is local; `checked`: what generate.py verified; `loss`: "
                 "first, last and min loss of the run."),
        "severe": SEVERE,
        # The torch the runs were trained with: another release sums in another order, and
        # check_regen.py compares bit for bit (scripts/test.sh pins this one).
        "torch": torch.__version__.split("+")[0],
        "runs": {n: labels[n] for n in order if n in labels},
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
