"""Where ``somatize.torch.watch(every=1)`` spends a training step's recording time on a model of
bench/torch_lm.py (docs/recording.md quotes it): cProfile over the measured steps, the
cumulative time of watch's phases (the outputs' hooks, the parameters' and gradients' pass
before the optimizer's step, the update's pass after it, ``step`` sending the summary), each
per step and as a share of their total, and the outputs summarised per step.

Usage: SOMATIZE_BIN=target/release/somatize python bench/torch_lm_profile.py [--model lm]
[--steps 20]"""

import argparse
import cProfile
import pstats
import sys
import tempfile
from datetime import date
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_lm as bench  # noqa: E402  (puts this checkout's package first on the path)
import somatize.torch as st  # noqa: E402

# (label, the function of python/somatize/torch.py whose cumulative time it is). "hook" is both
# forward hooks' inner function (the pre-hook only notes the call; the post-hook measures).
PHASES = [("forward hooks (the outputs)", "hook"),
          ("before the step (params, grads)", "_step_pre"),
          ("after the step (the update)", "_step_post"),
          ("step (summary, send)", "step")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="lm", choices=sorted(bench.MODELS))
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(1)
    shape = bench.MODELS[a.model]
    store = tempfile.mkdtemp(prefix="somatize-profile-")
    m = bench.lm_copy(shape, lambda model, opt: st.watch(model, opt, store=store, run="p",
                                                         every=1))
    batches = bench.lm_batches(shape, 1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for i in range(3):
        bench.train_step(m, batches[i % 4], loss_fn)
    prof = cProfile.Profile()
    prof.enable()
    for i in range(a.steps):
        bench.train_step(m, batches[i % 4], loss_fn)
    prof.disable()
    m["w"].close()
    stats = pstats.Stats(prof).stats
    torch_py = str(Path(st.__file__).resolve())
    found = {}
    for (path, _line, name), (_cc, calls, _tt, cum, _callers) in stats.items():
        if str(Path(path).resolve()) != torch_py:
            continue
        for label, fn in PHASES:
            if name == fn:
                t, n = found.get(label, (0.0, 0))
                found[label] = (t + cum, n + calls)
        if name == "_summarise_output":
            found["_outputs"] = (cum, calls)
    total = sum(found.get(label, (0.0, 0))[0] for label, _ in PHASES)
    print(f"{a.model}: watch(every=1), {a.steps} steps under cProfile, CPU, 1 thread; "
          f"{date.today().isoformat()}")
    for label, _ in PHASES:
        t, _n = found.get(label, (0.0, 0))
        print(f"{label:<34} {1e3 * t / a.steps:7.1f} ms/step  {100 * t / total:5.1f} %")
    print(f"outputs summarised per step: {found.get('_outputs', (0, 0))[1] / a.steps:.0f}")


if __name__ == "__main__":
    main()
