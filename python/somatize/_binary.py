"""Where the ``somatize`` command is: ``SOMATIZE_BIN``, else the one installed beside this
Python (the wheel's script), else on ``PATH``, else a build of this checkout."""

import os
import shutil
import sys
import sysconfig
from pathlib import Path


class BinaryNotFound(RuntimeError):
    """No ``somatize`` command was found: install the package (``pip install .``), put the
    binary on PATH, or point ``SOMATIZE_BIN`` at it."""


def binary():
    """The path of the ``somatize`` command to run."""
    env = os.environ.get("SOMATIZE_BIN")
    if env:
        return env
    scripts = sysconfig.get_path("scripts")
    candidates = []
    if scripts:
        candidates.append(Path(scripts) / "somatize")
    candidates.append(Path(sys.executable).parent / "somatize")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("somatize")
    if found:
        return found
    root = Path(__file__).resolve().parent.parent.parent
    for build in ("release", "debug"):
        c = root / "target" / build / "somatize"
        if c.is_file():
            return str(c)
    raise BinaryNotFound(
        "no `somatize` command: `pip install .` from the checkout, or set SOMATIZE_BIN"
    )
