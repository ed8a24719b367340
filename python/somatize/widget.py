"""somatize in a notebook through JS: the store view as an anywidget, and ``Live``.

``show(store, run=None, *, live=False)`` returns an anywidget whose module
(``_widget/widget.js``) shows the page's store view (the page's modules and plotly inlined into
one gzipped document, and the wasm core gzipped beside it, both shipped in this package: no CDN,
no network) in a sandboxed iframe. The view reads the store through the kernel: it asks for listings, sizes and
byte ranges, and this module answers them from the folder, in binary buffers of at most
``MESSAGE_BYTES`` each. So it works wherever the kernel can read the store (a remote kernel, a
cluster disk) and the browser cannot. ``live=True`` follows a run being written (the page looks
again every 2 s; bytes already read of a run's append-only files are kept).

``Live(title=…, smooth=…, every=…)`` is a ``watching=`` target: called with each forward's facts
it keeps one compact row of numbers per forward (forward, value, time, flags: 32 bytes) and
draws the figure ``progress`` draws (``figure()``, by the ``somatize`` binary: the same code as
``somatize figure progress``); ``widget()`` shows the rows as they arrive (the wasm ``Live`` in
the browser draws them), or is ``None`` without anywidget. Nothing is written to disk.

anywidget is needed for the widgets only (``pip install anywidget``); see docs/notebooks.md.
"""

import gzip
import json
import math
import os
import subprocess
import tempfile
import threading
import time
from array import array
from pathlib import Path

__all__ = ["show", "Live", "StoreView", "LiveView", "page", "wasm"]

_HERE = Path(__file__).resolve().parent / "_widget"
ESM = _HERE / "widget.js"
#: The page and the wasm core it runs, as the wheel ships them (written by scripts/build-widget.sh).
PAGE = _HERE / "page.html.gz"
WASM = _HERE / "page.wasm.gz"
#: Bytes of binary buffers per message: well under Jupyter's limits (tornado's websocket
#: refuses messages over 10 MiB by default).
MESSAGE_BYTES = 4 << 20
#: The view asks in chunks of this size (src/report/widget-entry.js CHUNK).
CHUNK = 256 << 10
#: The most bytes one read may ask for.
MAX_RANGE = 16 << 20
#: A range asked of a file is answered with at least this much of it from its offset (to its
#: end at most): the view reads a run's blobs front to back (the verdict, spent and the gantt
#: read every blob once), so one round trip brings what would take several.
READ_AHEAD = 4 << 20
#: Files at most this big are sent whole with their size.
SMALL = 256 << 10
#: Bytes of small files sent along with a listing of their folder.
LIST_BYTES = 1 << 20
#: How deep below a folder listed its folders are listed too (a store's root: down to each run's
#: writer folders, ``runs/RUN/WRITER/packs``), and the most answers a listing brings.
LIST_DEPTH = 5
LIST_ENTRIES = 2000
#: The most bytes of the chosen run's files the kernel sends unasked when a store view renders
#: (``somatize.prime``): a run this small comes whole with the listing, before the view asks.
PRIME_BYTES = 16 << 20
#: The least time between two pushes of a Live's rows to its widgets (seconds).
PUSH_EVERY_S = 0.1
#: The longest error text a Live row keeps (as the Rust tally).
MAX_ERROR = 240

_page_lock = threading.Lock()
_assets = None


def _page_and_wasm():
    """The widget's page and wasm, gzipped: the packaged ``_widget/page.html.gz`` and
    ``page.wasm.gz``, else written once by ``somatize report --widget`` from the source tree the
    binary was built from."""
    global _assets
    with _page_lock:
        if _assets is None:
            if PAGE.is_file() and WASM.is_file():
                _assets = (PAGE.read_bytes(), WASM.read_bytes())
            else:
                from .notebook import _run

                with tempfile.TemporaryDirectory(prefix="somatize-widget-") as tmp:
                    out = Path(tmp) / "page.html"
                    _run(["report", "--widget", "-o", str(out)])
                    _assets = (gzip.compress(out.read_bytes(), 9),
                               gzip.compress(out.with_suffix(".wasm").read_bytes(), 9))
        return _assets


def page():
    """The widget's page (its modules and plotly; no wasm, no store), gzipped."""
    return _page_and_wasm()[0]


def wasm():
    """The wasm core the widget's page runs, gzipped (sent beside the page as bytes)."""
    return _page_and_wasm()[1]


def _anywidget():
    try:
        import anywidget  # noqa: F401
        import traitlets  # noqa: F401
    except ImportError:
        return None
    return anywidget


class _Folder:
    """A store folder the view reads: paths under it only (no ``..``, no absolute path, no
    symbolic link leading out)."""

    def __init__(self, root):
        self.root = Path(root).resolve()
        if not (self.root / "somatize-store.json").is_file():
            raise ValueError(f"{root}: not a somatize store folder (no somatize-store.json)")

    def path(self, rel):
        rel = str(rel)
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if rel.startswith("/") or "\\" in rel or any(p == ".." for p in parts) or "\0" in rel:
            raise ValueError(f"{rel!r}: not a path inside the store")
        p = self.root.joinpath(*parts)
        real = p.resolve()
        if real != self.root and self.root not in real.parents:
            raise ValueError(f"{rel!r}: leads out of the store")
        return real

    def answer(self, ask):
        """One ask of the view: ``(answer, [bytes, …])``, the answer naming its buffers."""
        op, rel = ask.get("op"), ask.get("path", "")
        p = self.path(rel)
        if op == "list":
            names = sorted(os.listdir(p)) if p.is_dir() else None
            out = [({"op": "list", "path": rel, "names": names}, None)]
            # What opening a store asks next, without a round trip for each: the folders below
            # (LIST_DEPTH deep) listed, their files' sizes, and the small files whole (up to
            # LIST_BYTES in all).
            budget = [LIST_BYTES]
            todo = [(p, rel.strip("/"), names or [], 0)]
            while todo:
                folder, frel, listed, depth = todo.pop(0)
                for name in listed:
                    child = folder / name
                    if child.is_symlink():
                        continue
                    path = f"{frel}/{name}" if frel else name
                    if child.is_dir() and depth + 1 < LIST_DEPTH and len(out) < LIST_ENTRIES:
                        below = sorted(os.listdir(child))
                        out.append(({"op": "list", "path": path, "names": below}, None))
                        todo.append((child, path, below, depth + 1))
                    elif child.is_file() and len(out) < LIST_ENTRIES:
                        size = child.stat().st_size
                        data = None
                        if size <= SMALL and size <= budget[0]:
                            data = child.read_bytes()[:size]
                            budget[0] -= len(data)
                            size = len(data)
                        out.append(({"op": "stat", "path": path, "size": size}, data))
            return out
        if op == "stat":
            if not p.is_file():
                return [({"op": "stat", "path": rel, "size": None}, None)]
            size = p.stat().st_size
            data = p.read_bytes()[:size] if size <= SMALL else None
            return [({"op": "stat", "path": rel, "size": size}, data)]
        if op == "range":
            offset, length = int(ask.get("offset", 0)), int(ask.get("length", 0))
            if offset < 0 or length < 0 or offset % CHUNK:
                raise ValueError(f"{rel}: a range at {offset} of {length} bytes is not a whole chunk")
            length = min(max(length, READ_AHEAD), MAX_RANGE)
            if not p.is_file():
                return [({"op": "stat", "path": rel, "size": None}, None)]
            with open(p, "rb") as f:
                f.seek(offset)
                data = f.read(length)
            return [({"op": "range", "path": rel, "offset": offset + at}, data[at:at + CHUNK])
                    for at in range(0, max(len(data), 1), CHUNK)]
        raise ValueError(f"no such read {op!r}")

    def run_files(self, run_dir, have):
        """Every file under a run's folder as range answers of CHUNK bytes, but those ``have``
        already names with their bytes; none when they come to more than PRIME_BYTES (the view
        asks for what it reads). ``have`` maps a path to its size as listed (or None when the
        listing brought its bytes)."""
        base = self.path(run_dir)
        if not base.is_dir() or base == self.root:
            return []
        files = []
        for folder, dirs, names in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not (Path(folder) / d).is_symlink())
            for name in sorted(names):
                p = Path(folder) / name
                rel = p.relative_to(self.root).as_posix()
                if p.is_symlink() or not p.is_file() or (rel in have and have[rel] is None):
                    continue
                size = have.get(rel, p.stat().st_size)
                if size:
                    files.append((rel, p, size))
        if sum(size for _, _, size in files) > PRIME_BYTES:
            return []
        out = []
        for rel, p, size in files:
            with open(p, "rb") as f:
                data = f.read(size)  # the size listed: a file appended to since is read as listed
            out.extend(({"op": "range", "path": rel, "offset": at}, data[at:at + CHUNK])
                       for at in range(0, len(data), CHUNK))
        return out


def _send_parts(widget, kind, parts, **head):
    """Send answers ``[(answer, bytes|None)]`` in messages of at most MESSAGE_BYTES of buffers."""
    batch, buffers, size = [], [], 0
    for answer, data in parts:
        if data is not None and size + len(data) > MESSAGE_BYTES and batch:
            widget.send({"type": kind, **head, "answers": batch, "done": False}, buffers=buffers)
            batch, buffers, size = [], [], 0
        if data is not None:
            answer = {**answer, "buffer": len(buffers)}
            buffers.append(data)
            size += len(data)
        batch.append(answer)
    widget.send({"type": kind, **head, "answers": batch, "done": True}, buffers=buffers)


def _widget_classes():
    anywidget = _anywidget()
    if anywidget is None:
        return None
    import traitlets

    class _Base(anywidget.AnyWidget):
        _esm = ESM
        mode = traitlets.Unicode("store").tag(sync=True)
        store = traitlets.Unicode("").tag(sync=True)
        run = traitlets.Unicode("").tag(sync=True)
        live = traitlets.Bool(False).tag(sync=True)
        title = traitlets.Unicode("").tag(sync=True)
        smooth = traitlets.Int(0).tag(sync=True)
        height = traitlets.Int(900).tag(sync=True)
        #: Seconds a read waits for the kernel before the view says it did not answer.
        timeout = traitlets.Float(120.0).tag(sync=True)

        def __init__(self, **kw):
            super().__init__(**kw)
            self.on_msg(self._on_msg)

        def _on_msg(self, _widget, content, _buffers):
            kind = content.get("type") if isinstance(content, dict) else None
            if kind == "somatize.page":
                try:
                    both = _page_and_wasm()
                except Exception as e:  # noqa: BLE001 - said in the cell
                    self.send({"type": "somatize.page", "error": str(e)})
                    return
                for what, data in zip(("page", "wasm"), both):
                    parts = [data[i:i + MESSAGE_BYTES] for i in range(0, len(data), MESSAGE_BYTES)]
                    for i, part in enumerate(parts):
                        self.send({"type": "somatize.page", "what": what, "part": i, "parts": len(parts)},
                                  buffers=[part])
            else:
                self._on_other(kind, content)

        def _on_other(self, kind, content):
            pass

    class StoreView(_Base):
        """The store view of ``show``: reads answered from the store folder."""

        def __init__(self, folder, **kw):
            self._folder = folder
            self._primed = False
            super().__init__(**kw)

        def _on_other(self, kind, content):
            if kind == "somatize.prime":
                self._prime()
                return
            if kind != "somatize.read":
                return
            ident = content.get("id")
            try:
                parts = []
                if not self._primed:
                    # The first read of a view brings the store's listing with it (every folder
                    # down to the runs' packs, the sizes, the small files whole): what opening
                    # the store and its first run asks next, without a round trip for each.
                    self._primed = True
                    parts.extend(self._folder.answer({"op": "list", "path": ""}))
                for ask in content.get("asks", [])[:1000]:
                    parts.extend(self._folder.answer(ask))
            except Exception as e:  # noqa: BLE001 - the view says it
                self.send({"type": "somatize.answers", "id": ident, "answers": [], "done": True,
                           "error": f"{type(e).__name__}: {e}"})
                return
            _send_parts(self, "somatize.answers", parts, id=ident)

        def _prime(self):
            """Sent unasked as the view renders (its module asks once, beside the page): the
            store's listing and, for a run named to ``show``, that run's files (up to
            PRIME_BYTES), so the view opens the run's verdict without a round trip to the
            kernel; they come while the page and the wasm start."""
            try:
                parts = []
                if not self._primed:
                    self._primed = True
                    parts.extend(self._folder.answer({"op": "list", "path": ""}))
                if self.run:
                    have = {a["path"]: (None if data is not None else a.get("size"))
                            for a, data in parts if a.get("op") == "stat"}
                    parts.extend(self._folder.run_files(f"runs/{self.run}", have))
            except Exception as e:  # noqa: BLE001 - the view asks for what it reads instead
                self.send({"type": "somatize.primed", "answers": [], "done": True, "error": f"{type(e).__name__}: {e}"})
                return
            _send_parts(self, "somatize.primed", parts)

    class LiveView(_Base):
        """The widget of a ``Live``: its rows, pushed as they arrive."""

        def __init__(self, live, **kw):
            self._live = live
            super().__init__(mode="live", **kw)

        def _on_other(self, kind, content):
            if kind == "somatize.hello":  # a view (re)drawn: everything so far
                self._live._send_all(self)

    return StoreView, LiveView


_classes = None


def _classes_or_raise():
    global _classes
    if _classes is None:
        _classes = _widget_classes()
    if _classes is None:
        raise ImportError("somatize.show needs anywidget: pip install anywidget")
    return _classes


def __getattr__(name):
    if name in ("StoreView", "LiveView"):
        return _classes_or_raise()[0 if name == "StoreView" else 1]
    raise AttributeError(f"module 'somatize.widget' has no attribute {name!r}")


def show(store, run=None, *, live=False, height=900, timeout=120):
    """The store view of ``store`` (a folder) in the cell: every run with its health, the chosen
    run's verdict first (``run``, else the latest written), its figures, thresholds to edit.
    ``live=True`` follows it while it is written; a read the kernel has not answered in
    ``timeout`` seconds (a kernel restarted under the view) is said in the cell."""
    StoreView, _ = _classes_or_raise()
    folder = _Folder(store)
    return StoreView(folder, store=Path(store).name or str(store), run=run or "",
                     live=bool(live), height=int(height), timeout=float(timeout))


def _number(x):
    """A float of a fact's value (numbers, and the channel's "NaN"/"Infinity" strings)."""
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)):
        return float(x)
    if hasattr(x, "item"):
        return float(x.item())
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return None
    return None


class Live:
    """A run drawn while it happens. Hand it to ``watching=``::

        live = Live()
        live                                   # the cell shows it
        g.forward(x, watching=live)

    Called with one forward's facts (``live(facts, forward=…, took_us=…, loss=…)``, as a
    ``Recorder`` is), it keeps one row of numbers per forward: the field ``of`` (``loss.value``:
    the first fact of kind ``loss``, its ``value``), the forward's time (as given, else the span
    of its facts), and whether it broke (a fact carrying an error). ``figure()`` draws what
    ``progress`` draws; ``widget()`` redraws in place every ``every`` forwards.
    """

    def __init__(self, *, title="live", smooth=None, every=1, of="loss.value"):
        if int(every) < 1:
            raise ValueError(f"every must be at least 1, not {every!r}")
        if "." not in of:
            raise ValueError(f"of names a field as <kind>.<field>, not {of!r}")
        self.title = str(title)
        self.smooth = int(smooth or 0)
        self.every = int(every)
        self.of = of
        self._rows = array("d")  # forward, value, took_us, flags (1: a value, 2: broke)
        self._errors = {}  # row index -> error text
        self._next = 0
        self._sent = 0  # rows sent to the widgets
        self._widgets = []
        self._lock = threading.Lock()
        self._timer = None
        self._pushed = 0.0  # time.monotonic() of the last push

    # -- tallying ---------------------------------------------------------------------

    def __call__(self, facts, *, stats=None, took_us=None, forward=None, loss=None):
        """Tally one forward; returns its number."""
        facts = [dict(f) for f in (facts or [])]
        if loss is not None:
            facts.append({"node": "loss", "kind": "loss", "began_us": 0, "took_us": 0,
                          "value": _number(loss)})
        n = self._next if forward is None else int(forward)
        kind, field = self.of.split(".", 1)
        value = None
        fact = next((f for f in facts if f.get("kind") == kind), None)
        if fact is not None:
            if field in ("took_us", "began_us") and field not in fact:
                value = float(fact.get(field, 0))
            else:
                value = _number(fact.get(field))
        if took_us is None:
            starts = [int(f.get("began_us", 0)) for f in facts]
            ends = [int(f.get("began_us", 0)) + int(f.get("took_us", 0)) for f in facts]
            took_us = max(0, max(ends, default=0) - min(starts, default=0))
        error = next((f"{f['node']}: {f['error']}" for f in facts if f.get("error") is not None), None)
        self.row(n, value=value, took_us=int(took_us), broke=error is not None, error=error)
        return n

    def row(self, forward, *, value=None, took_us=0, broke=False, error=None):
        """Add one forward as a row of numbers (what ``__call__`` does after reading the facts)."""
        with self._lock:
            if error is not None and len(error.encode()) > MAX_ERROR:
                error = error.encode()[:MAX_ERROR].decode(errors="ignore") + "…"
            if broke:
                self._errors[len(self._rows) // 4] = error
            flags = (1 if value is not None else 0) | (2 if broke else 0)
            self._rows.extend((float(forward), float(value) if value is not None else 0.0,
                               float(took_us), float(flags)))
            self._next = int(forward) + 1
            due = len(self._rows) // 4 - self._sent
        if self._widgets and due >= self.every and time.monotonic() - self._pushed >= PUSH_EVERY_S:
            self._push()
        elif self._widgets:
            self._later()

    def __len__(self):
        return len(self._rows) // 4

    def rows(self):
        """Every row kept: ``[{forward, value, took_us, broke, error}]``."""
        out = []
        r = self._rows
        for i in range(len(r) // 4):
            flags = int(r[4 * i + 3])
            out.append({"forward": int(r[4 * i]), "value": r[4 * i + 1] if flags & 1 else None,
                        "took_us": int(r[4 * i + 2]), "broke": bool(flags & 2),
                        "error": self._errors.get(i)})
        return out

    # -- drawing ----------------------------------------------------------------------

    def figure(self):
        """The same figure ``progress`` draws, from what has arrived so far: Plotly's
        ``{data, layout}`` as a dict (drawn by ``somatize figure progress --rows``)."""
        from .notebook import SomatizeError, binary

        def value(v):
            if v is None or math.isfinite(v):
                return v
            return "nan" if v != v else ("inf" if v > 0 else "-inf")

        lines = "".join(json.dumps({**r, "value": value(r["value"])}) + "\n" for r in self.rows())
        args = [binary(), "figure", "progress", "--rows", "-", "--title", self.title,
                "--smooth", str(self.smooth), "--of", self.of]
        done = subprocess.run(args, input=lines, capture_output=True, text=True)
        if done.returncode != 0:
            raise SomatizeError(done.stderr.strip() or "somatize figure --rows failed")
        return json.loads(done.stdout)

    def widget(self, height=500):
        """A widget that redraws in place, or None without anywidget. Asked for by hand: a
        Live used from a script has no business importing widgets."""
        if _anywidget() is None:
            return None
        _, LiveView = _classes_or_raise()
        w = LiveView(self, title=self.title, smooth=self.smooth, height=int(height))
        self._widgets.append(w)
        return w

    def _ipython_display_(self):
        w = self.widget()
        from IPython.display import display

        if w is None:
            display({"application/vnd.plotly.v1+json": self.figure(), "text/plain": repr(self)},
                    raw=True)
        else:
            display(w)

    def __repr__(self):
        return f"Live(title={self.title!r}, smooth={self.smooth}, every={self.every}): {len(self)} forwards"

    # -- to the widgets ---------------------------------------------------------------

    def _packed(self, start):
        with self._lock:
            end = len(self._rows) // 4
            packed = self._rows[4 * start:4 * end].tobytes()
            errors = {str(i - start): e for i, e in self._errors.items() if start <= i < end and e is not None}
        return end, packed, errors

    def _push(self):
        start = self._sent
        end, packed, errors = self._packed(start)
        self._pushed = time.monotonic()
        if not packed:
            return
        for w in list(self._widgets):
            w.send({"type": "somatize.rows", "start": start, "errors": errors}, buffers=[packed])
        self._sent = end

    def _later(self):
        """Send what is due in PUSH_EVERY_S (the last rows of a run arrive however `every`
        falls, and a fast run is sent at most 1 / PUSH_EVERY_S messages a second)."""
        if self._timer is not None and self._timer.is_alive():
            return
        self._timer = threading.Timer(PUSH_EVERY_S, self._push)
        self._timer.daemon = True
        self._timer.start()

    def _send_all(self, w):
        """A view asked for everything so far: sent in messages of at most MESSAGE_BYTES."""
        end, _, _ = self._packed(0)
        step = MESSAGE_BYTES // 32
        for start in range(0, end, step):
            with self._lock:
                packed = self._rows[4 * start:4 * min(end, start + step)].tobytes()
                errors = {str(i - start): e for i, e in self._errors.items()
                          if start <= i < min(end, start + step) and e is not None}
            w.send({"type": "somatize.rows", "start": start, "errors": errors}, buffers=[packed])


def watching(watch, store, run, *, title=None):
    """Show a ``somatize.torch`` watch's forwards live under the cell (``watch(..., show=True)``):
    a ``Live`` fed from the watch's own forwards (the kernel is busy training, so the widget is
    pushed rows rather than asked), displayed now."""
    live = Live(title=title or (f"Progress of run {run}" if run is not None else "live"))
    send = watch._send

    def _send(forward, loss, facts, stats, tensors):
        send(forward, loss, facts, stats, tensors)
        live(facts, forward=forward, loss=loss)

    watch._send = _send
    watch.live = live
    try:
        from IPython.display import display
    except ImportError:
        return watch
    display(live)
    return watch

