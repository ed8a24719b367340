"""somatize_record: send what a training loop does to `somatize record`, one frame per forward.

One small module, no build step. numpy is required; torch is optional (only `watch` uses it).

    import somatize_record as sr
    rec = sr.connect()                      # the channel `somatize record` opened, or a no-op
    for step in range(steps):
        ...
        rec.forward(step, loss=loss, tensors={"act.fc1": h, "grad.fc1.weight": dw})

Run it under the companion:  somatize record --store runs --run tuesday -- python3 train.py

Protocol (docs/recording.md): the address is in SOMATIZE_CHANNEL as ``unix:<path>``; each frame
is a little-endian u32 header length, a UTF-8 JSON header, then each declared tensor's bytes
(little-endian, C order) back to back.
"""

import json
import os
import socket
import struct
import time

import numpy as np

CHANNEL_ENV = "SOMATIZE_CHANNEL"
EVERY_ENV = "SOMATIZE_EVERY"

_DTYPES = {
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool",
}


def _now_us():
    return int(time.perf_counter() * 1e6)


def _as_array(value):
    """A C-contiguous little-endian numpy array of a store dtype (torch tensors converted)."""
    if hasattr(value, "detach"):  # a torch tensor, without importing torch
        value = value.detach()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        value = value.cpu().numpy()
    arr = np.asarray(value)
    if arr.dtype.name not in _DTYPES:
        arr = arr.astype(np.float32 if arr.dtype.kind != "f" else np.float64)
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not np.little_endian):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return np.ascontiguousarray(arr)


def _json_number(x):
    x = float(x)
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return x


class Recorder:
    """A connection to the companion. ``enabled`` is False when no companion is listening,
    and then every call does nothing (the script still trains)."""

    def __init__(self, address=None):
        address = address if address is not None else os.environ.get(CHANNEL_ENV)
        self.every = max(1, int(os.environ.get(EVERY_ENV, "1") or 1))
        self._sock = None
        if address:
            if not address.startswith("unix:"):
                raise ValueError(f"{CHANNEL_ENV}={address!r}: only unix:<path> is supported")
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(address[len("unix:"):])

    @property
    def enabled(self):
        return self._sock is not None

    def hello(self, writer=None, summarising=None):
        """Optionally name this connection's writer and the kinds summarised into the index."""
        header = {"type": "hello"}
        if writer is not None:
            header["writer"] = writer
        if summarising is not None:
            header["summarising"] = list(summarising)
        self._send(header, [])

    def keeps_tensors(self, step):
        """Whether tensors of this step are kept (every ``SOMATIZE_EVERY`` forwards)."""
        return step % self.every == 0

    def forward(self, step, loss=None, tensors=None, facts=None, stats=None,
                took_us=None, broke=False, error=None):
        """Send one forward: its number, loss, facts (dicts with node, kind, began_us, took_us,
        where, read_back, error, and anything else), per-node statistics (node -> metric ->
        number) and tensors (key -> array; kept only on steps that ``keeps_tensors``)."""
        if not self.enabled:
            return
        facts = [dict(f) for f in (facts or [])]
        if loss is not None:
            facts.append({"node": "loss", "kind": "loss", "began_us": 0, "took_us": 0,
                          "value": _json_number(loss.item() if hasattr(loss, "item") else loss)})
        header = {"type": "forward", "forward": int(step), "facts": facts}
        if took_us is not None:
            header["took_us"] = int(took_us)
        if broke:
            header["broke"] = True
        if error is not None:
            header["error"] = str(error)
        if stats:
            header["stats"] = {n: {m: _json_number(v) for m, v in row.items()} for n, row in stats.items()}
        arrays = []
        if tensors and self.keeps_tensors(step):
            specs = []
            for key, value in tensors.items():
                arr = _as_array(value)
                specs.append({"key": key, "dtype": arr.dtype.name, "shape": list(arr.shape)})
                arrays.append(arr)
            header["tensors"] = specs
        self._send(header, arrays)

    def _send(self, header, arrays):
        if not self.enabled:
            return
        body = json.dumps(header, separators=(",", ":")).encode()
        self._sock.sendall(struct.pack("<I", len(body)) + body)
        for arr in arrays:
            if arr.nbytes:
                self._sock.sendall(memoryview(arr).cast("B"))

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(address=None):
    """The companion's channel from ``SOMATIZE_CHANNEL``, or a disabled Recorder without one."""
    return Recorder(address)


class Watcher:
    """Hooks on a PyTorch model: per leaf module a fact (kind = class name, timing) and its
    output ``act.<name>``; after backward, ``grad.<name>`` and ``param.<name>`` per parameter.
    Call ``step(n, loss)`` once per training step, after ``loss.backward()``."""

    def __init__(self, model, rec, every=None):
        self.model = model
        self.rec = rec
        self.every = every or rec.every
        self._facts = []
        self._acts = {}
        self._start = None
        self._began = {}
        self._handles = []
        for name, module in model.named_modules():
            if name and not list(module.children()):
                self._handles.append(module.register_forward_pre_hook(self._pre(name)))
                self._handles.append(module.register_forward_hook(self._post(name, type(module).__name__)))

    def _keeping(self):
        return self._step % self.every == 0

    _step = 0

    def _pre(self, name):
        def hook(module, inputs):
            now = _now_us()
            if self._start is None:
                self._start = now
            self._began[name] = now
        return hook

    def _post(self, name, kind):
        def hook(module, inputs, output):
            now = _now_us()
            began = self._began.pop(name, now)
            self._facts.append({"node": name, "kind": kind, "began_us": began - self._start,
                                "took_us": now - began, "where": _where(output)})
            if self._keeping() and hasattr(output, "detach"):
                self._acts["act." + name] = output.detach()
        return hook

    def step(self, n, loss=None):
        """Send forward ``n``: facts, activations, gradients, parameters and the loss.
        Steps are expected to count up by one (hooks decide what to keep for step ``n + 1``)."""
        keep = n % self.every == 0
        tensors = dict(self._acts) if keep else {}
        if keep:
            for pname, p in self.model.named_parameters():
                tensors["param." + pname] = p.detach()
                if p.grad is not None:
                    tensors["grad." + pname] = p.grad.detach()
        took = (_now_us() - self._start) if self._start is not None else None
        self.rec.forward(n, loss=loss, tensors=tensors, facts=self._facts, took_us=took)
        self._facts, self._acts, self._start = [], {}, None
        self._step = n + 1

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def _where(output):
    dev = getattr(output, "device", None)
    return str(dev) if dev is not None else "local"


def watch(model, every=None, rec=None):
    """Watch a PyTorch model (see ``Watcher``); ``rec`` defaults to ``connect()``."""
    return Watcher(model, rec if rec is not None else connect(), every)
