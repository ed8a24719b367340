"""Starting the companion from the installed binary (``somatize record --listen``) for a
process that is not running under ``somatize record``, and waiting for it at the end."""

import os
import subprocess
import tempfile
import time
import warnings

from . import _channel
from ._binary import binary


class Companion:
    """A ``somatize record --listen`` this process started, and the channel to it."""

    def __init__(self, store, run, *, writer=None, durable=True, summarising=None):
        self.folder = tempfile.mkdtemp(prefix="somatize-")
        socket_path = os.path.join(self.folder, "channel.sock")
        cmd = [binary(), "record", "--store", os.fspath(store), "--run", str(run),
               "--listen", socket_path, "--pid", str(os.getpid())]
        if writer is not None:
            cmd += ["--writer", str(writer)]
        if summarising is not None:
            cmd += ["--summarise", ",".join(summarising)]
        if not durable:
            cmd.append("--no-fsync")
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.exists(socket_path):
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"somatize record exited with status {self.process.returncode} before "
                    f"opening its channel (command: {' '.join(cmd)})")
            if time.monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                raise RuntimeError("somatize record did not open its channel within 30 s")
            time.sleep(0.01)
        self.channel = _channel.connect("unix:" + socket_path)

    @property
    def pid(self):
        return self.process.pid

    def wait(self, timeout=120, quiet=False):
        """Wait for the companion to write everything and exit (after the channel closed);
        warn when it exits non-zero, unless ``quiet`` (the caller already said why)."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            warnings.warn(f"somatize: the companion did not finish within {timeout} s",
                          RuntimeWarning, stacklevel=3)
        else:
            # Non-zero: a write failed (a full disk, …) or the run was marked broke; the
            # companion said which on stderr.
            if code != 0 and not quiet:
                warnings.warn(f"somatize: the companion exited with status {code}: some of "
                              "the run was not recorded cleanly (its messages are above)",
                              RuntimeWarning, stacklevel=3)
        try:
            os.rmdir(self.folder)
        except OSError:
            pass
