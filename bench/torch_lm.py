"""The benchmark behind scripts/bench-torch.sh (see there): step-time ratios of
``somatize.torch.watch`` against no recording on a 4.2M-parameter transformer LM."""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
try:
    import somatize.torch as st
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))
    import somatize.torch as st

VOCAB, D, LAYERS, HEADS, BATCH, T = 2048, 256, 4, 4, 16, 64


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D)
        self.pos = torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, batch_first=True,
                                             norm_first=True, activation="gelu")
            for _ in range(LAYERS))
        self.norm = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        for b in self.blocks:
            h = b(h, src_mask=self.mask, is_causal=True)
        return self.head(self.norm(h))


def du(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(1)
    store = Path(tempfile.mkdtemp(prefix="somatize-bench-"))
    modes = {}
    for name, kw in [("none", None), ("default", {}), ("every step", {"every": 1})]:
        torch.manual_seed(0)
        model = LM()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        w = None if kw is None else st.watch(model, opt, store=store, run=name.replace(" ", "-"),
                                              **kw)
        modes[name] = (model, opt, w, [])
    params = sum(p.numel() for p in modes["none"][0].parameters())
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, VOCAB, (BATCH, T + 1), generator=g) for _ in range(8)]
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(args.steps + 2):
        b = batches[step % len(batches)]
        x, y = b[:, :-1], b[:, 1:]
        for name, (model, opt, w, times) in modes.items():
            t0 = time.perf_counter()
            loss = loss_fn(model(x).reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if w is not None:
                w.step(loss)
            if step >= 2:  # the first steps warm up allocators and caches
                times.append(time.perf_counter() - t0)
    for _, (_, _, w, _) in modes.items():
        if w is not None:
            w.close()
    base_med = statistics.median(modes["none"][3])
    base_mean = statistics.mean(modes["none"][3])
    print(f"transformer LM: {params / 1e6:.2f}M parameters, {LAYERS} pre-norm layers, d={D}, "
          f"batch {BATCH}x{T}, CPU, 1 thread, {args.steps} steps each, alternating")
    print(f"{'mode':<12} {'median ms':>10} {'ratio':>7} {'mean ms':>9} {'ratio':>7} "
          f"{'store/step':>11}")
    for name, (_, _, w, times) in modes.items():
        med, mean = statistics.median(times), statistics.mean(times)
        run = store / "runs" / name.replace(" ", "-")
        per_step = du(run) / (args.steps + 2) if w is not None else 0
        print(f"{name:<12} {med * 1e3:>10.1f} {med / base_med:>7.3f} {mean * 1e3:>9.1f} "
              f"{mean / base_mean:>7.3f} {per_step / 1024:>9.1f} KB")
    shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
