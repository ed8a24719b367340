"""``somatize.Recorder``: the seed's ``watching=`` target, a callable taking one forward's facts."""

import os

from . import _channel
from ._companion import Companion


class Recorder:
    """Write what a training loop (or any process) says, one forward per call:

        rec = somatize.Recorder("runs", run="tuesday", summarising=["loss"])
        rec([{"node": "fc1", "kind": "Linear", "began_us": 0, "took_us": 120},
             {"node": "loss", "kind": "loss", "value": 0.41}])      # forward 0
        rec(facts, stats={"fc1": {"grad_norm": 0.3}})               # forward 1
        rec.close()

    Under ``somatize record`` it sends into that channel (``store``/``run`` are the
    companion's); otherwise it starts the companion from the installed binary. A fact is a
    dict with at least ``node`` and ``kind`` (``began_us``/``took_us`` default to 0).
    ``close()`` (also ``with``) ends the run and waits for everything to be written.
    """

    def __init__(self, store=None, *, run=None, summarising=None, writer=None, durable=True):
        address = os.environ.get(_channel.CHANNEL_ENV)
        self._companion = None
        if address:
            self._chan = _channel.connect(address)
            if writer is not None or summarising is not None:
                self._chan.hello(writer=writer, summarising=summarising)
        else:
            if store is None or run is None:
                raise ValueError("Recorder(store, run=...) is needed outside `somatize record`")
            self._companion = Companion(store, run, writer=writer, durable=durable,
                                        summarising=summarising)
            self._chan = self._companion.channel
        self.forward = 0
        self.closed = False

    def __call__(self, facts, *, stats=None, took_us=None, forward=None):
        """Record one forward's facts (a list of dicts); returns its number."""
        if self.closed:
            raise ValueError("Recorder called after close()")
        rows = []
        for f in facts:
            if not isinstance(f, dict) or "node" not in f or "kind" not in f:
                raise ValueError(f"a fact is a dict with 'node' and 'kind', not {f!r}")
            rows.append({"began_us": 0, "took_us": 0, **f})
        n = self.forward if forward is None else int(forward)
        self._chan.forward(n, facts=rows, stats=stats, took_us=took_us)
        self.forward = n + 1
        return n

    def close(self, error=None):
        """End the run (broke at the next forward with ``error`` when given) and wait for
        the companion this started."""
        if self.closed:
            return
        self.closed = True
        if self._chan.enabled:
            self._chan.end(error=error)
        self._chan.close()
        if self._companion is not None:
            self._companion.wait(quiet=error is not None)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        self.close(error=None if value is None else f"{kind.__name__}: {value}")
        return False
