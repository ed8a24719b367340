"""somatize.health: whether what happened was healthy (the seed's API over the CLI).

    from somatize.health import diagnose, about, Thresholds
    diagnose("runs", run="tuesday")                       # {"fc1": ["VANISHING"]}
    diagnose("runs", run="tuesday", thresholds=Thresholds(vanishing_ratio=1e-4))
    about("VANISHING")                                    # what it means, what to do
    where("runs", run="tuesday")                          # {"net": ["LEAKAGE in net.2"]}
    history("runs", run="tuesday", node="fc1", last=50)   # [(forward, grad_norm)]

Also ``seen``, ``alerts``, ``within`` and the figures ``profile``, ``flags``, ``overlaid``
(Plotly figure dicts); docs/seeds.md maps every seed item. The verdict is taken by the installed ``somatize`` command over the stored record (``--json``),
so a diagnosis is the CLI's and reproducible without training again.
"""

import json
import os
import tempfile

from ._cli import SomatizeError, _store, figure_json, opt, run_json

__all__ = ["diagnose", "seen", "history", "where", "within", "alerts", "about", "Thresholds",
           "profile", "flags", "overlaid", "SomatizeError"]


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


def _judge(command, store, run, thresholds, last):
    args = [command, _store(store), "--run", run, *opt("last", last)]
    if thresholds is None:
        return run_json(*args)
    over = thresholds._over if isinstance(thresholds, Thresholds) else dict(thresholds)
    with tempfile.TemporaryDirectory(prefix="somatize-") as folder:
        path = os.path.join(folder, "thresholds.json")
        with open(path, "w") as f:
            json.dump(over, f)
        return run_json(*args, "--thresholds", path)


def diagnose(store, *, run, thresholds=None, last=None):
    """What is wrong, as ``{where: [flag, …]}`` in declaration order; a node with nothing
    wrong is not in it. A fetch per forward looked at."""
    return _judge("diagnose", store, run, thresholds, last)


def where(store, *, run, thresholds=None, last=None):
    """The diagnosis folded onto the graph's nodes, ``{node: [flag, …]}``; a finding inside a
    node is named on its flag (``"LEAKAGE in net.2"``)."""
    return _judge("where", store, run, thresholds, last)


def alerts(store, *, run, thresholds=None, last=None):
    """What is wrong, loudly: one dict per fault (``node``, ``flag``, ``first_forward``,
    ``means``, ``advice``, …)."""
    return _judge("alerts", store, run, thresholds, last)


def history(store, *, run, node, of="grad_norm", last=None):
    """One measurement of one node over the run, as ``(forward, value)`` pairs (NaN as None);
    an unknown node is ``[]``."""
    got = run_json("history", _store(store), "--run", run, "--node", node, "--of", of,
                   *opt("last", last))
    return [(int(f), v) for f, v in got]


def within(where, nodes=None):
    """The node a key belongs to: the longest of ``nodes`` that holds it, else its first
    dotted segment (``within("net.2.attn")`` is ``"net"``)."""
    extra = ["--nodes", ",".join(nodes)] if nodes else []
    return run_json("within", where, *extra)


def seen(store, *, run, last=None):
    """The numbers a verdict is taken over: the latest of each metric per node (with its
    ``kind``); NaN comes back as None."""
    return run_json("seen", _store(store), "--run", run, *opt("last", last))


def about(flag):
    """What a flag means and what to do about it (``DEAD_CHANNELS(3)`` works too)."""
    return run_json("about", flag)


def _over(thresholds):
    """Thresholds as the inline JSON object ``--thresholds`` takes (None: the defaults)."""
    if thresholds is None:
        return None
    over = thresholds._over if isinstance(thresholds, Thresholds) else dict(thresholds)
    return json.dumps(over)


def profile(store, *, run, of="grad_norm", thresholds=None, last=None):
    """One measurement per node in depth order, flagged nodes in the alarm colour, as a Plotly
    figure dict."""
    return figure_json("profile", store, run, of=of, thresholds=_over(thresholds), last=last)


def flags(store, *, run, thresholds=None, last=None):
    """What is wrong with each node and what to do, as a Plotly table figure dict."""
    return figure_json("flags", store, run, thresholds=_over(thresholds), last=last)


def overlaid(store, *, run, thresholds=None, last=None):
    """The run's graph with what is wrong marked on its nodes (fill: where it runs; outline:
    the alarm; flags as a badge), as a Plotly figure dict."""
    return figure_json("overlaid", store, run, thresholds=_over(thresholds), last=last)
