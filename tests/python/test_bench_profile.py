"""bench/torch_lm_profile.py, which docs/recording.md quotes: it runs on the LM and times every
phase it names, with the package's kernels (scripts/test.sh builds them into the checkout the
script imports) and with torch ops."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import torch_lm_profile as profile  # noqa: E402


@pytest.mark.parametrize("kernels", ["on", "off"])
def test_the_profile_times_every_phase_of_a_recorded_step(kernels):
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "torch_lm_profile.py"),
                          "--steps", "2", "--warm", "1", "--kernels", kernels],
                         capture_output=True, text=True, check=False, timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.search(r"every=1 [\d.]+ ms median: [\d.]+x", out.stdout), out.stdout
    want = "kernels: somatize._kernels" if kernels == "on" else "kernels: none (torch ops)"
    assert want in out.stdout, out.stdout
    for label, _ in profile.PHASES + profile.PARTS:
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith(label)), None)
        assert line is not None, f"no line for {label!r} in:\n{out.stdout}"
        ms = float(line[len(label):].split()[0])
        assert ms > 0, f"{label}: got {ms} ms a step, wanted more than 0"
