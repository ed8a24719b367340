"""bench/torch_lm_profile.py, which docs/recording.md quotes: it runs on the LM and times every
phase it names, and its fused experiment computes the eager fast path's sums."""

import re
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import torch_lm_profile as profile  # noqa: E402
import somatize.torch as st  # noqa: E402


def test_the_profile_times_every_phase_of_a_recorded_step():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "torch_lm_profile.py"),
                          "--steps", "2", "--warm", "1"],
                         capture_output=True, text=True, check=False, timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.search(r"every=1 [\d.]+ ms median: [\d.]+x", out.stdout), out.stdout
    for label, _ in profile.PHASES + profile.PARTS:
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith(label)), None)
        assert line is not None, f"no line for {label!r} in:\n{out.stdout}"
        ms = float(line[len(label):].split()[0])
        assert ms > 0, f"{label}: got {ms} ms a step, wanted more than 0"


def test_the_fused_experiment_sums_what_the_eager_fast_path_sums():
    # (uncompiled: the expression the compiler fuses, against _summarise_output's signs body)
    g = torch.Generator().manual_seed(3)
    for rows, units in [(1, 4), (300, 7), (2048, 64), (5000, 64)]:
        x = torch.randn(rows, units, generator=g) * 3 - 1
        x[x.abs() < 0.2] = 0
        want = st._summarise_output(x, None)
        assert want["form"] == "signs"
        got = profile.five_sums(x)
        assert torch.allclose(got, want["body"][1:], rtol=1e-5, atol=1e-4), (rows, units)
