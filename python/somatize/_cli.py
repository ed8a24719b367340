"""Running the installed ``somatize`` command with ``--json`` and reading its answer."""

import json
import os
import subprocess

from ._binary import binary


class SomatizeError(RuntimeError):
    """The ``somatize`` command refused (a missing run, an unreadable store, a bad flag); the
    message is its own."""


def _store(store):
    """A store given as a path, or as anything with a ``path``/``root`` (the seeds' Store)."""
    if isinstance(store, (str, bytes, os.PathLike)):
        return os.fspath(store)
    for attr in ("path", "root"):
        if hasattr(store, attr):
            store = getattr(store, attr)
            break
    return os.fspath(store)


def run_json(*args):
    """``somatize ARGS… --json``, parsed (None stays None)."""
    cmd = [binary(), *[str(a) for a in args], "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SomatizeError(out.stderr.strip() or f"{' '.join(cmd)} exited {out.returncode}")
    return json.loads(out.stdout) if out.stdout.strip() else None


def opt(name, value):
    """``[--name, value]`` when value is not None."""
    return [] if value is None else [f"--{name}", value]


def figure_json(kind, store, run, **options):
    """``somatize figure KIND STORE --run RUN --name value…`` (None values left out): the
    figure as Plotly's ``{"data", "layout"}`` dict (``plotly.graph_objects.Figure(d)`` draws
    it), what was skipped to draw it reported by the command on stderr."""
    args = [binary(), "figure", kind, _store(store), "--run", run]
    for name, value in options.items():
        if value is not None:
            args += [f"--{name.replace('_', '-')}", str(value)]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SomatizeError(out.stderr.strip() or f"{' '.join(args)} exited {out.returncode}")
    return json.loads(out.stdout)
