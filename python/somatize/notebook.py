"""Show somatize in a Jupyter notebook: a run's self-contained report, or the live page over a store.

Standard library only; it drives the ``somatize`` binary (``SOMATIZE_BIN``, else ``somatize`` on
PATH, else this repository's ``target/release`` or ``target/debug`` build)::

    import somatize.notebook as sn
    sn.report("somatize-demo", "vanishing")     # the run's report, inside the cell (works offline)
    view = sn.live("somatize-demo")             # `somatize serve` on 127.0.0.1, the page in the cell
    view.stop()                                  # stop the server (also done when Python exits)

``report`` embeds the HTML file ``somatize report`` writes in an ``<iframe sandbox="allow-scripts"
srcdoc=…>``: the report runs in an opaque origin, apart from the notebook, and asks no network.
``live`` shows ``http://127.0.0.1:PORT/www/index.html?store=/store/&live=1`` in an iframe: the page
reads the store as plain files and redraws the run's progress every 2 s while it is written.
See docs/notebooks.md.
"""

import atexit
import html
import subprocess
import tempfile
import threading
from pathlib import Path

__all__ = ["Report", "Live", "SomatizeError", "binary", "report", "live"]


class SomatizeError(RuntimeError):
    """The somatize binary failed or could not be found; the message is its own."""


def binary():
    """The somatize binary to run (``somatize._binary.binary``: $SOMATIZE_BIN, the installed
    one, `somatize` on PATH, or this repository's build), as a SomatizeError when none is."""
    from ._binary import BinaryNotFound, binary as find

    try:
        return find()
    except BinaryNotFound as e:
        raise SomatizeError(str(e)) from None


def _run(args):
    done = subprocess.run([binary(), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SomatizeError(done.stderr.strip() or f"somatize {args[0]} failed ({done.returncode})")
    return done


def _iframe(attrs, height, title):
    return (
        f'<iframe {attrs} title="{html.escape(title)}" '
        f'style="width: 100%; height: {int(height)}px; border: 1px solid #ccc"></iframe>'
    )


class Report:
    """A run's report (the HTML of ``somatize report``), shown in a cell through ``_repr_html_``."""

    def __init__(self, html_text, run, height=900):
        self.html = html_text
        self.run = run
        self.height = height

    def _repr_html_(self):
        # srcdoc is an attribute: escaping `&` and `"` (html.escape does both, and `<`, `>`) keeps
        # the whole document inside it. sandbox="allow-scripts" without allow-same-origin gives the
        # report an opaque origin: it can run its scripts but reach neither the notebook nor its cookies.
        srcdoc = html.escape(self.html, quote=True)
        return _iframe(f'sandbox="allow-scripts" srcdoc="{srcdoc}"', self.height, f"somatize report: {self.run}")

    def save(self, path):
        """Write the report's HTML file (it opens offline by double-click)."""
        Path(path).write_text(self.html, encoding="utf-8")
        return path


def report(store, run, last=None, height=900, assets=None):
    """The report of `run` in `store` (a folder or snapshot .zip); `last` keeps only the last N forwards."""
    with tempfile.TemporaryDirectory(prefix="somatize-report-") as tmp:
        out = Path(tmp) / "report.html"
        args = ["report", str(store), "--run", str(run), "-o", str(out)]
        if last is not None:
            args += ["--last", str(int(last))]
        if assets is not None:
            args += ["--assets", str(assets)]
        _run(args)
        return Report(out.read_text(encoding="utf-8"), run, height)


class Live:
    """``somatize serve`` over a store on 127.0.0.1, shown in a cell as the page in an iframe."""

    def __init__(self, process, url, height=900):
        self.process = process
        self.url = url
        self.height = height

    def _repr_html_(self):
        return _iframe(f'src="{html.escape(self.url, quote=True)}"', self.height, "somatize: live store")

    def stop(self):
        """Stop the server (the iframe then shows nothing new)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def live(store, port=0, height=900, assets=None, timeout=30):
    """Start ``somatize serve STORE`` on 127.0.0.1 (`port` 0 picks a free one) and show the page
    following that store live. Stopped by ``.stop()`` or when Python exits."""
    args = [binary(), "serve", str(store), "--port", str(int(port))]
    if assets is not None:
        args += ["--assets", str(assets)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = {}

    def read_url():
        for line in process.stdout:
            if line.startswith("open "):
                found["url"] = line[5:].strip()
                return

    reader = threading.Thread(target=read_url, daemon=True)
    reader.start()
    reader.join(timeout)
    if "url" not in found:
        process.kill()
        err = process.stderr.read().strip() if process.wait() is not None else ""
        raise SomatizeError(err or f"somatize serve printed no URL within {timeout} s")
    url = found["url"]  # serve's page already follows the store (`&live=1`)
    view = Live(process, url if "live=1" in url else url + "&live=1", height)
    atexit.register(view.stop)
    return view
