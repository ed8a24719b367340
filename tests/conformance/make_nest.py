"""Write run "nest" of the store named on the command line through ``somatize.Recorder``: nodes
net (with submodule keys net.0 inside it), head, a node named "1", and the loss, 12 forwards.
net.0 raises OVERSTEPPING (update ratio 5) and "1" STALLED (1e-12), so a finding inside a node,
a name like "1" and declaration order can be checked. Made for tests/conformance (no download)."""
import sys
import somatize
store = sys.argv[1]
with somatize.Recorder(store, run="nest", summarising=["loss"]) as rec:
    for i in range(12):
        facts = [{"node": "net", "kind": "Sequential", "took_us": 50},
                 {"node": "head", "kind": "Linear", "took_us": 20},
                 {"node": "1", "kind": "Linear", "took_us": 10},
                 {"node": "loss", "kind": "loss", "value": 1.0 / (i + 1)}]
        stats = {"net": {"param_norm": 1.0, "grad_norm": 0.1, "update_ratio": 1e-3},
                 "net.0": {"param_norm": 1.0, "grad_norm": 0.1, "update_ratio": 5.0, "update_norm": 5.0, "update_steps": 1.0},
                 "1": {"param_norm": 1.0, "grad_norm": 0.1, "update_ratio": 1e-12, "update_norm": 1e-12, "update_steps": 1.0},
                 "head": {"param_norm": 1.0, "grad_norm": 0.1, "update_ratio": 1e-3}}
        rec(facts, stats=stats)
