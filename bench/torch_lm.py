"""The benchmark behind scripts/bench-torch.sh (see there): what ``somatize.torch.watch`` costs a
training step against no recording and against TensorBoard histograms, on a 4.2M-parameter
transformer LM and on a 124M-parameter GPT-2-sized one.

Every mode trains its own copy of the model (same seed, same batches, AdamW), one step of each
in turn (each round starting from the next mode), so the machine's drift falls on every mode
alike. Printed per mode: median and mean
wall time of a step and their ratios to no recording; the training thread's CPU time per step
and its ratio, steadier than wall time on a busy machine (the thread's, not the process's: the
TensorBoard writer's background thread would be counted in whichever mode's step it ran); the companion's CPU (it runs beside the
training process, in its own) as a share of one core over the measured steps; and the
record's bytes per step."""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
# This checkout's package (not one installed in the venv from another commit); its companion
# is SOMATIZE_BIN (scripts/bench-torch.sh points it at this checkout's release build).
sys.path.insert(0, str(ROOT / "python"))
import somatize.torch as st  # noqa: E402

# name: (vocab, d, layers, heads, batch, tokens, tied). GPT-2 size twice: at 128 tokens a step
# (an eighth of one sequence: the passes over 124M parameters weigh most against the step) and
# at one whole sequence of GPT-2's context, 1,024 tokens (the least a step of it trains on).
MODELS = {
    "lm": (2048, 256, 4, 4, 16, 64, False),
    "gpt2": (50257, 768, 12, 12, 1, 128, True),
    "gpt2-seq": (50257, 768, 12, 12, 1, 1024, True),
}


class LM(torch.nn.Module):
    """A pre-norm causal transformer LM (GPT-2's shape with ``gpt2``: 12 layers, d=768,
    12 heads, 50,257 tokens, tied embedding: 124M parameters)."""

    def __init__(self, vocab, d, layers, heads, tokens, tied):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(tokens, d)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True,
                                             norm_first=True, activation="gelu")
            for _ in range(layers))
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        if tied:
            self.head.weight = self.tok.weight
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(tokens))

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        for b in self.blocks:
            h = b(h, src_mask=self.mask, is_causal=True)
        return self.head(self.norm(h))


def lm_copy(shape, record=None, wrap=None):
    """One copy of a model of MODELS (``shape``, its tuple) for the modes trained in turns: seed 0,
    AdamW; ``wrap(model)`` wraps it (DistributedDataParallel), ``record(model, opt)`` gives what
    records it (a ``watch``, TensorBoard) or None. A mode: {model, opt, w (the recorder or None),
    wall (its measured step times)}."""
    vocab, d, layers, heads, _, tokens, tied = shape
    torch.manual_seed(0)
    model = LM(vocab, d, layers, heads, tokens, tied)
    if wrap is not None:
        model = wrap(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    return {"model": model, "opt": opt, "w": None if record is None else record(model, opt),
            "wall": []}


def lm_batches(shape, seed):
    """The four batches (``batch`` x ``tokens + 1`` token ids) the modes train on in turn."""
    vocab, _, _, _, batch, tokens, _ = shape
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (batch, tokens + 1), generator=g) for _ in range(4)]


def train_step(m, b, loss_fn):
    """One training step of mode ``m`` on batch ``b`` (next-token loss), recorded by its ``w``."""
    x, y = b[:, :-1], b[:, 1:]
    out = m["model"](x)
    loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    m["opt"].zero_grad()
    loss.backward()
    m["opt"].step()
    if m["w"] is not None:
        m["w"].step(loss)


def du(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def cpu_of(pid):
    """User + system CPU seconds of process ``pid`` so far (Linux /proc), or 0."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class TensorBoard:
    """What people do with TensorBoard to see inside: a histogram of every parameter and
    gradient, and the loss, every step."""

    def __init__(self, model, folder):
        from torch.utils.tensorboard import SummaryWriter
        self.model, self.folder = model, folder
        self.writer = SummaryWriter(log_dir=str(folder))
        self.n = 0

    def step(self, loss):
        self.writer.add_scalar("loss", loss.item(), self.n)
        for name, p in self.model.named_parameters():
            self.writer.add_histogram(name, p.detach(), self.n)
            if p.grad is not None:
                self.writer.add_histogram(name + ".grad", p.grad, self.n)
        self.n += 1

    def close(self):
        self.writer.close()


def run(model_name, steps, warm, modes_wanted):
    shape = MODELS[model_name]
    vocab, d, layers, heads, batch, tokens, tied = shape
    root = Path(tempfile.mkdtemp(prefix="somatize-bench-"))
    store = root / "store"
    modes = {}
    for name in modes_wanted:
        run_name = f"{model_name}-{name.replace(' ', '-')}"
        if name == "none":
            record = None
        elif name == "tensorboard":
            def record(model, opt, run_name=run_name):
                return TensorBoard(model, root / "tb" / run_name)
        else:
            def record(model, opt, run_name=run_name, name=name):
                return st.watch(model, opt, store=store, run=run_name,
                                **({"every": 1} if name == "every step" else {}))
        modes[name] = {**lm_copy(shape, record), "cpu": [], "run": run_name,
                       "companion_cpu": 0.0}
    first = modes[modes_wanted[0]]["model"]
    params = sum(p.numel() for p in first.parameters())
    batches = lm_batches(shape, 1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(steps + warm):
        b = batches[step % len(batches)]
        # Each round starts from the next mode, so none of them always follows the one that
        # evicts the most from the caches (TensorBoard's histograms).
        order = list(modes.items())
        order = order[step % len(order):] + order[:step % len(order)]
        for name, m in order:
            companion = getattr(getattr(m["w"], "_companion", None), "pid", None)
            if step == warm and companion:
                m["companion_cpu"] = -cpu_of(companion)
            if step == warm:
                m["began"] = time.perf_counter()
            t0, c0 = time.perf_counter(), time.thread_time()
            train_step(m, b, loss_fn)
            if step >= warm:  # the first steps warm up allocators and caches
                m["wall"].append(time.perf_counter() - t0)
                m["cpu"].append(time.thread_time() - c0)
    for name, m in modes.items():
        w = m["w"]
        companion = getattr(getattr(w, "_companion", None), "pid", None)
        m["span"] = time.perf_counter() - m["began"]
        if companion:
            m["companion_cpu"] += cpu_of(companion)
        if w is not None:
            w.close()
    base = modes[modes_wanted[0]]
    base_med, base_mean = statistics.median(base["wall"]), statistics.mean(base["wall"])
    base_cpu = statistics.mean(base["cpu"])
    print(f"{model_name}: {params / 1e6:.2f}M parameters, {layers} pre-norm layers, d={d}, "
          f"batch {batch}x{tokens}, AdamW, CPU, 1 thread, {steps} steps each (after {warm} "
          f"warm-up), alternating; {date.today().isoformat()}")
    # (Whether the package's CPU kernels summed the tensors: scripts/build-kernels.sh builds
    # them into the checkout; without them torch ops do it, more slowly.)
    print("kernels: " + ("somatize._kernels" if st._native.KERNELS is not None and
                         st.NATIVE_KERNELS else "none (torch ops)"))
    print(f"{'mode':<12} {'median ms':>10} {'ratio':>7} {'mean ms':>9} {'ratio':>7} "
          f"{'cpu ms':>8} {'ratio':>7} {'companion':>10} {'store/step':>11}")
    for name, m in modes.items():
        med, mean = statistics.median(m["wall"]), statistics.mean(m["wall"])
        cpu = statistics.mean(m["cpu"])
        if name == "none":
            per_step = 0
        elif name == "tensorboard":
            per_step = du(root / "tb" / m["run"]) / (steps + warm)
        else:
            per_step = du(store / "runs" / m["run"]) / (steps + warm)
        print(f"{name:<12} {med * 1e3:>10.1f} {med / base_med:>7.3f} {mean * 1e3:>9.1f} "
              f"{mean / base_mean:>7.3f} {cpu * 1e3:>8.1f} {cpu / base_cpu:>7.3f} "
              f"{100 * m['companion_cpu'] / m['span']:>7.1f} %  "
              f"{per_step / 1024:>8.1f} KB")
    shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=[*MODELS, "all"], default="all")
    ap.add_argument("--steps", type=int, default=40, help="measured steps of the small LM")
    ap.add_argument("--big-steps", type=int, default=3, help="measured steps of GPT-2 size "
                    "(each of its two batches)")
    ap.add_argument("--modes", default="none,default,every step,tensorboard")
    args = ap.parse_args()
    torch.set_num_threads(1)
    modes = [m.strip() for m in args.modes.split(",")]
    if modes[0] != "none":
        sys.exit("--modes: the first mode is the baseline, none")
    for name in MODELS:
        if args.model in (name, "all"):
            run(name, args.steps if name == "lm" else args.big_steps, 2 if name == "lm" else 1,
                modes)


if __name__ == "__main__":
    main()
