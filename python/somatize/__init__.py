"""somatize: record what a training run does and read back whether it was healthy.

- ``somatize.torch.watch(model, optimizer, store=..., run=...)``: PyTorch training measured on
  the tensors' own device, one small copy to the host per step (docs/recording.md).
- ``somatize.record`` and ``somatize.health``: a store's runs, curves, facts and verdicts,
  answered by the installed ``somatize`` command (``--json``), the same answers as the CLI.
- ``somatize.connect()``: the raw channel of ``somatize record`` (numpy arrays, any framework).
- ``somatize.notebook``: a run's report or the live page in a notebook cell.
- ``somatize.show(store)``: the store view as a notebook widget (anywidget), its bytes read by
  the kernel; ``somatize.Live``: a ``watching=`` target drawing a run as it happens.

Importing the package needs only the standard library; numpy and torch are imported by the
modules that use them.
"""

from ._binary import binary  # noqa: F401

__all__ = ["binary", "connect", "Recorder", "Store", "Live", "show"]


def connect(address=None):
    """The companion's channel from ``SOMATIZE_CHANNEL`` (or ``address``), or a disabled sender
    that does nothing without one. See ``somatize._channel.Channel``."""
    from ._channel import connect as _connect

    return _connect(address)


def __getattr__(name):
    if name == "Store":
        from ._store import Store

        return Store
    if name == "Recorder":
        from ._recorder import Recorder

        return Recorder
    if name in ("Live", "show"):
        from . import widget

        return getattr(widget, name)
    raise AttributeError(f"module 'somatize' has no attribute {name!r}")
