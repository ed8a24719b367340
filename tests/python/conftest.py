"""pytest setup for the Python package's tests: the ``somatize`` command they run is
``SOMATIZE_BIN`` when set, else the installed one (``pip install .``), else this checkout's
build; ``somatize`` is imported from the installed package, else from ``python/``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
try:
    import somatize  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture
def cli():
    """Run the somatize command and return its parsed ``--json`` output."""
    from somatize._binary import binary

    def run(*args):
        out = subprocess.run([binary(), *map(str, args), "--json"], capture_output=True,
                             text=True, check=False)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    return run
