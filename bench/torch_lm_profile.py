"""Where ``somatize.torch.watch(every=1)`` spends a training step's recording time on a model of
bench/torch_lm.py (docs/recording.md quotes it): the model trained with no recording and with
``watch(every=1)`` one step each in turn, and watch's phases timed by wall clock inside the
recorded steps (its methods wrapped with ``time.perf_counter``; no profiler, whose own cost per
Python call distorts the shares): the outputs' summaries in the forward hooks, the parameters'
and gradients' pass before the optimizer's step, the update's pass after it, ``step`` building
and sending the summary, and what is left (the hooks' bookkeeping, the caches the passes
evict). Printed per step: the medians of both modes, their ratio, each phase's milliseconds and
its share of the difference of the means.

The package's CPU kernels (``somatize._kernels``; scripts/build-kernels.sh builds them into
the checkout) sum the tensors when they are there; ``--kernels off`` has torch ops do it
instead, to see what the kernels save. ``--output-block`` sets the torch ops' block of an
output (``_OUTPUT_BLOCK``) to try another size.

Usage: SOMATIZE_BIN=target/release/somatize python bench/torch_lm_profile.py [--model lm]
[--steps 40] [--warm 4] [--kernels on|off] [--output-block LOG2]"""

import argparse
import collections
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_lm as bench  # noqa: E402  (puts this checkout's package first on the path)
import somatize.torch as st  # noqa: E402

# (label, the method of watch's class whose wall time it is), in the order a step runs them.
PHASES = [("outputs (forward hooks)", "_measure_output"),
          ("before the step (params, grads)", "_measure_params"),
          ("after the step (the update)", "_step_post"),
          ("step (summary, send)", "step")]
# Parts of the phases above: the outputs' five sums (in the forward hooks), and the row samples
# whose singular values are taken (of outputs, gradients and updates: in all three passes).
PARTS = [("outputs' five sums (in outputs)", "_summarise_output"),
         ("spectrum samples (in all passes)", "_spectrum_sample")]


def timed(spent, name, f):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t
    return wrapper


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="lm", choices=sorted(bench.MODELS))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warm", type=int, default=4)
    ap.add_argument("--kernels", choices=["on", "off"], default="on",
                    help="off: torch ops sum the tensors, not the package's kernels")
    ap.add_argument("--output-block", type=int, default=None, metavar="LOG2",
                    help="the torch ops' block of an output, 2**LOG2 floats (watch's: "
                    f"{st._OUTPUT_BLOCK.bit_length() - 1})")
    a = ap.parse_args()
    if a.output_block is not None:
        st._OUTPUT_BLOCK = 1 << a.output_block
    torch.set_num_threads(1)
    shape = bench.MODELS[a.model]
    store = tempfile.mkdtemp(prefix="somatize-profile-")
    spent = collections.defaultdict(float)
    st.NATIVE_KERNELS = a.kernels == "on"
    kernels = "somatize._kernels" if st._native.KERNELS is not None and st.NATIVE_KERNELS \
        else "none (torch ops)"
    for _, name in PARTS:
        setattr(st, name, timed(spent, name, getattr(st, name)))
    # (On the class, before the watch exists: the optimizer's hooks hold its bound methods.)
    for _, name in PHASES:
        setattr(st.Watch, name, timed(spent, name, getattr(st.Watch, name)))
    modes = {"none": bench.lm_copy(shape),
             "every=1": bench.lm_copy(shape, lambda model, opt: st.watch(
                 model, opt, store=store, run="p", every=1))}
    w = modes["every=1"]["w"]
    batches = bench.lm_batches(shape, 1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for i in range(a.warm + a.steps):
        if i == a.warm:
            spent.clear()
        for name in (["none", "every=1"] if i % 2 else ["every=1", "none"]):
            m = modes[name]
            t = time.perf_counter()
            bench.train_step(m, batches[i % 4], loss_fn)
            if i >= a.warm:
                m["wall"].append(time.perf_counter() - t)
    w.close()
    shutil.rmtree(store, ignore_errors=True)
    # A phase that never ran is a renamed or bypassed method, not a free one.
    idle = [name for _, name in PHASES + PARTS if not spent[name]]
    if idle:
        sys.exit(f"never ran: {', '.join(idle)} (watch changed: update PHASES and PARTS)")
    base, rec = (statistics.median(modes[n]["wall"]) for n in ("none", "every=1"))
    # (The phases' times are means over the steps: their shares are of the means' difference.)
    diff = statistics.mean(modes["every=1"]["wall"]) - statistics.mean(modes["none"]["wall"])
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    how = f" with output blocks of 2^{a.output_block}" if a.output_block is not None else ""
    print(f"{a.model}: watch(every=1){how}"
          f", {a.steps} steps each, alternated, CPU, 1 thread; {when}")
    print(f"kernels: {kernels}")
    print(f"no recording {1e3 * base:.1f} ms, every=1 {1e3 * rec:.1f} ms median: "
          f"{rec / base:.3f}x; means {1e3 * diff:.1f} ms a step apart")
    total = 0.0
    for label, name in PHASES:
        t = spent[name] / a.steps
        total += t
        print(f"{label:<34} {1e3 * t:6.1f} ms/step  {100 * t / diff:5.1f} %")
    print(f"{'the rest':<34} {1e3 * (diff - total):6.1f} ms/step  "
          f"{100 * (diff - total) / diff:5.1f} %")
    for plabel, pname in PARTS:
        pt = spent[pname] / a.steps
        print(f"{plabel:<34} {1e3 * pt:6.1f} ms/step  {100 * pt / diff:5.1f} %")


if __name__ == "__main__":
    main()
