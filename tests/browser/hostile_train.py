"""A three-step "training" whose run, node and tensor names are HTML and script, for the page's hostile-store test.

Run under `somatize record --store S --run NAME -- python3 tests/browser/hostile_train.py`.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import somatize as sr  # noqa: E402

HOSTILE = "<img src=x onerror=window.__pwned=1>"

rec = sr.connect()
rec.hello(summarising=["loss"])
for step in range(3):
    facts = [
        {"node": HOSTILE, "kind": "ReLU", "began_us": 0, "took_us": 40 + step},
        {"node": "fc", "kind": "Linear", "began_us": 40 + step, "took_us": 20},
    ]
    tensors = {
        f"act.{HOSTILE}": np.zeros((4, 2), np.float32),
        f"param.{HOSTILE}.weight": np.ones((2, 2), np.float32),
        "act.fc": np.ones((4, 2), np.float32),
    }
    rec.forward(step, loss=1.0 / (step + 1), tensors=tensors, facts=facts, took_us=80)
rec.close()
