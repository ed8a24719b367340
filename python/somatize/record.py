"""somatize.record: what happened in a run, read back from a store (the seed's API).

Functions over a store folder (or snapshot ``.zip``), each answered by the installed
``somatize`` command with ``--json``, so the answers are the CLI's (and npm's):

    from somatize.record import runs, forwards, curve, facts, nodes
    runs("runs")                           # what is in here at all
    forwards("runs", run="tuesday")        # step by step, one scan
    curve("runs", run="tuesday")           # the losses, [(forward, value)]
    nodes("runs", run="tuesday", last=50)  # who spent the time, a fetch each
"""

from ._cli import SomatizeError, _store, figure_json, opt, run_json

__all__ = ["runs", "forwards", "curve", "curve_costs", "facts", "nodes", "fleet", "standing",
           "query", "progress", "spent", "gantt", "machines", "SomatizeError"]


def runs(store):
    """Every run the store holds, newest last: forwards, breaks, first and last written."""
    return run_json("runs", _store(store))


def forwards(store, *, run):
    """Every forward of ``run`` in order, with its summarised ``<kind>.<field>`` values (text)."""
    return run_json("forwards", _store(store), "--run", run)


def curve(store, *, run, of="loss.value"):
    """One number per forward as ``(forward, value)`` pairs; ``of`` is ``<kind>.<field>``."""
    return [(int(f), v) for f, v in run_json("curve", _store(store), "--run", run, "--of", of)]


def curve_costs(store, *, run, of="loss.value"):
    """Whether ``curve`` reads the index (``"scan"``) or a blob per forward (``"fetch"``): a
    scan when the recorder summarised that kind into the index. Reads the index only."""
    return run_json("curve-costs", _store(store), "--run", run, "--of", of)


def query(store, *, run, id, step):
    """One value ``somatize observe`` wrote, by exact spec id and step (the seed's
    ``ValueSink.query``); None when none was written there."""
    return run_json("query", _store(store), "--run", run, "--id", id, "--step", int(step))


def facts(store, *, run, forward):
    """Everything that happened in one forward, in arrival order; None for no such forward."""
    return run_json("facts", _store(store), "--run", run, "--forward", int(forward))


def nodes(store, *, run, last=None):
    """Per node: times run, total and mean time, times read back, where (a fetch a forward)."""
    return run_json("nodes", _store(store), "--run", run, *opt("last", last))


def fleet(store, *, run, last=None):
    """Per machine: what ran there, working against waiting, its newest reading."""
    return run_json("fleet", _store(store), "--run", run, *opt("last", last))


def standing(store):
    """Every machine's newest reading and how quiet it has been, ``{id: reading}``."""
    return run_json("standing", _store(store))


def progress(store, *, run, smooth=None):
    """How a run went, step by step: the loss, the time per forward and what broke, as a Plotly
    figure dict; ``smooth`` is the rolling mean's window in forwards (0: only what was
    measured)."""
    return figure_json("progress", store, run, smooth=smooth)


def spent(store, *, run, last=None):
    """Where the time went, per node, bars coloured by where each ran (a Plotly figure dict)."""
    return figure_json("spent", store, run, last=last)


def gantt(store, *, run, forward=0):
    """One forward on a timeline (a Plotly figure dict)."""
    return figure_json("gantt", store, run, forward=forward)


def machines(store, *, run, last=None):
    """Per machine, what it worked and what it was waited on (a Plotly figure dict)."""
    return figure_json("machines", store, run, last=last)
