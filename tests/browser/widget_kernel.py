"""The kernel side of the notebook widget for tests/browser/widget.test.mjs, without Jupyter:
the real ``somatize.show`` / ``somatize.Live`` widget objects, their custom messages carried as
JSON lines over stdin/stdout (buffers in base64) instead of a Jupyter comm.

    python widget_kernel.py show STORE [RUN] [--live] [--timeout=SECONDS]
    python widget_kernel.py live TITLE SMOOTH    (then stdin lines {"forward": …} feed the Live)

First line out: {"state": {…}} (the model's traits); then {"content", "buffers"} per message.
In: {"content": …} (a message from the widget's module) or, for `live`, {"row": {…facts call}}.
"""

import base64
import json
import os
import sys
import threading

sys.path.insert(0, sys.argv.pop(1))  # the checkout's python/
import somatize  # noqa: E402

lock = threading.Lock()


def out(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def sender(content, buffers=None):
    out({"content": content, "buffers": [base64.b64encode(bytes(b)).decode() for b in buffers or []]})


mode = sys.argv[1]
if mode == "show":
    timeout = next((float(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--timeout=")), 120)
    run = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else None
    view = somatize.show(sys.argv[2], run, live="--live" in sys.argv, timeout=timeout)
    live = None
else:
    live = somatize.Live(title=sys.argv[2], smooth=int(sys.argv[3]))
    view = live.widget()
view.send = sender
out({"state": {k: getattr(view, k) for k in ("mode", "store", "run", "live", "title", "smooth", "height", "timeout")}})
for line in sys.stdin:
    msg = json.loads(line)
    if "content" in msg:
        if os.environ.get("SOMATIZE_WIDGET_DEBUG"):  # what the view asks, on stderr
            print(json.dumps(msg["content"])[:300], file=sys.stderr, flush=True)
        view._on_msg(view, msg["content"], [])
    elif "facts" in msg:
        live(msg["facts"])
    elif "figure" in msg:
        out({"figure": live.figure()})
