"""somatize.health: whether what happened was healthy (the seed's API over the CLI).

    from somatize.health import diagnose, about, Thresholds
    diagnose("runs", run="tuesday")                       # {"fc1": ["VANISHING"]}
    diagnose("runs", run="tuesday", thresholds=Thresholds(vanishing_ratio=1e-4))
    about("VANISHING")                                    # what it means, what to do

The verdict is taken by the installed ``somatize`` command over the stored record (``--json``),
so a diagnosis is the CLI's and reproducible without training again.
"""

import json
import os
import tempfile

from ._cli import SomatizeError, _store, opt, run_json

__all__ = ["diagnose", "seen", "about", "Thresholds", "SomatizeError"]


class Thresholds:
    """The bounds a verdict is taken at: the defaults (``somatize thresholds``) with the
    overrides given, e.g. ``Thresholds(vanishing_ratio=1e-4)``. An unknown name is a
    ``ValueError``."""

    def __init__(self, **over):
        defaults = run_json("thresholds")
        unknown = sorted(set(over) - set(defaults))
        if unknown:
            raise ValueError(f"Thresholds: no bound named {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(defaults))})")
        self._over = dict(over)
        self._all = {**defaults, **over}

    def as_dict(self):
        """Every bound, by name (to write down beside a diagnosis)."""
        return dict(self._all)

    def __repr__(self):
        return f"Thresholds({', '.join(f'{k}={v!r}' for k, v in self._over.items())})"


def _judge(store, run, thresholds, last):
    args = ["diagnose", _store(store), "--run", run, *opt("last", last)]
    if thresholds is None:
        return run_json(*args)
    over = thresholds._over if isinstance(thresholds, Thresholds) else dict(thresholds)
    with tempfile.TemporaryDirectory(prefix="somatize-") as folder:
        path = os.path.join(folder, "thresholds.json")
        with open(path, "w") as f:
            json.dump(over, f)
        return run_json(*args, "--thresholds", path)


def diagnose(store, *, run, thresholds=None, last=None):
    """What is wrong, as ``{where: [flag, …]}``; a node with nothing wrong is not in it."""
    return _judge(store, run, thresholds, last)


def seen(store, *, run, last=None):
    """The numbers a verdict is taken over: the latest of each metric per node (with its
    ``kind``); NaN comes back as None."""
    return run_json("seen", _store(store), "--run", run, *opt("last", last))


def about(flag):
    """What a flag means and what to do about it (``DEAD_CHANNELS(3)`` works too)."""
    return run_json("about", flag)
