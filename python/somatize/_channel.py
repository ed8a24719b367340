"""somatize._channel: send what a training loop does to `somatize record`, one frame per forward.

numpy is required; torch is optional (tensors are converted). ``somatize.torch.watch`` sends
through this; any other loop can too:

    import somatize
    rec = somatize.connect()                # the channel `somatize record` opened, or a no-op
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


class Channel:
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
            # A companion that has just bound the path may not be listening yet.
            for attempt in range(100):
                try:
                    self._sock.connect(address[len("unix:"):])
                    break
                except ConnectionRefusedError:
                    if attempt == 99:
                        raise
                    time.sleep(0.02)

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
                took_us=None, broke=False, error=None, keep_all=False, where=None,
                summary=None):
        """Send one forward: its number, loss, facts (dicts with node, kind, began_us, took_us,
        where, read_back, error, and anything else), per-node statistics (node -> metric ->
        number) and tensors (key -> array; kept only on steps that ``keeps_tensors``, or always
        with ``keep_all``). ``where``: where the loss was computed (default: not said).
        ``summary``: ``(structure, numbers, samples)``, the step's summary
        (src/health/summary.rs ``WireSummary``, its float64 numbers and its float32 or float64
        spectrum samples), from which the companion derives the node metrics
        (docs/recording.md, "Summaries"); never stored."""
        if not self.enabled:
            return
        facts = [dict(f) for f in (facts or [])]
        if loss is not None:
            fact = {"node": "loss", "kind": "loss", "began_us": 0, "took_us": 0,
                    "value": _json_number(loss.item() if hasattr(loss, "item") else loss)}
            if where is not None:
                fact["where"] = where
            facts.append(fact)
        header = {"type": "forward", "forward": int(step), "facts": facts}
        if took_us is not None:
            header["took_us"] = int(took_us)
        if broke:
            header["broke"] = True
        if error is not None:
            header["error"] = str(error)
        if stats:
            header["stats"] = {n: {m: _json_number(v) for m, v in row.items()} for n, row in stats.items()}
        arrays, specs = [], []
        if summary is not None:
            structure, numbers, samples = summary
            numbers = np.ascontiguousarray(numbers, dtype="<f8")
            header["summary"] = structure
            specs.append({"key": "summary", "dtype": "float64", "shape": [int(numbers.size)]})
            arrays.append(numbers)
            if samples is not None and samples.size:
                samples = np.ascontiguousarray(samples)
                specs.append({"key": "summary.samples", "dtype": samples.dtype.name,
                              "shape": [int(samples.size)]})
                arrays.append(samples)
        if tensors and (keep_all or self.keeps_tensors(step)):
            for key, value in tensors.items():
                arr = _as_array(value)
                specs.append({"key": key, "dtype": arr.dtype.name, "shape": list(arr.shape)})
                arrays.append(arr)
        if specs:
            header["tensors"] = specs
        self._send(header, arrays)

    def end(self, error=None):
        """Say the training ended (cleanly, or with ``error``): a companion started with
        ``--listen`` marks the run broke when its sender closes without this."""
        header = {"type": "end"}
        if error is not None:
            header["error"] = str(error)
        self._send(header, [])

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
    """The companion's channel from ``SOMATIZE_CHANNEL``, or a disabled Channel without one."""
    return Channel(address)
