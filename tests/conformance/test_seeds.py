"""The seeds (../shared/seeds/) item by item on the Python package: ``somatize.record``,
``somatize.health``, ``somatize.Recorder`` and ``somatize.torch.probe``, each called as the
seed's text calls it, against the demo store (``somatize demo``), run "nest" (make_nest.py) and
run "obs" (``somatize observe`` with specs.json). Test names follow tests/conformance/
seeds.test.mjs (the CLI and npm); docs/seeds.md maps them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHARED = Path(os.environ.get("SOMATIZE_SHARED", ROOT.parent / "shared"))
try:
    import somatize  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))

from somatize import health, record  # noqa: E402
from somatize._binary import binary  # noqa: E402


def cli(*args):
    out = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("seeds")
    demo, nest, obs = root / "demo", root / "nest", root / "obs"
    subprocess.run([binary(), "demo", "--store", demo, "--every", "150"], check=True,
                   capture_output=True)
    env = {**os.environ, "SOMATIZE_BIN": binary(),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, HERE / "make_nest.py", nest], check=True, env=env,
                   capture_output=True)
    steps = [SHARED / f"runs/example_cnn/step_00000{i}.npz" for i in range(3)]
    observed = cli("observe", *steps, "--store", obs, "--run", "obs", "--specs",
                   HERE / "specs.json", "--budget-ms", "11.5", "--json")
    return {"demo": demo, "nest": nest, "obs": obs, "observed": observed}


# ---- seed 002: somatize.health ----

def test_reproducible_from_the_record(stores):
    assert health.diagnose(stores["demo"], run="stalled")
    over = health.Thresholds(stalled_update_ratio=1e-12)
    assert health.diagnose(stores["demo"], run="stalled", thresholds=over) == {}


def test_thresholds_over():
    with pytest.raises(ValueError, match="bogus"):
        health.Thresholds(bogus=1)


def test_thresholds_as_dict():
    d = health.Thresholds(dead_layer_fraction=0.99).as_dict()
    defaults = cli("thresholds", "--json")
    assert list(d) == list(defaults) and d["dead_layer_fraction"] == 0.99
    assert {k: v for k, v in d.items() if k != "dead_layer_fraction"} == \
        {k: v for k, v in defaults.items() if k != "dead_layer_fraction"}


def test_alerts(stores):
    a = health.alerts(stores["demo"], run="dead_relu")
    assert a and all(x["node"] and x["flag"] and x["advice"] for x in a)
    assert a == cli("alerts", stores["demo"], "--run", "dead_relu", "--json")


def test_about():
    assert health.about("OVERSTEPPING in net.0")["flag"] == "OVERSTEPPING"
    with pytest.raises(record.SomatizeError):
        health.about("NOT_A_FLAG")


def test_diagnose(stores):
    assert health.diagnose(stores["demo"], run="healthy") == {}
    d = health.diagnose(stores["nest"], run="nest")
    assert list(d.items()) == [("1", ["STALLED"]), ("net.0", ["OVERSTEPPING"])]
    assert "DEAD" in health.diagnose(stores["demo"], run="dead_relu", last=1)["relu1"]
    with pytest.raises(record.SomatizeError, match="nosuch"):
        health.diagnose(stores["demo"], run="nosuch")


def test_history(stores):
    h = health.history(stores["demo"], run="vanishing", node="fc1", last=3)
    assert [f for f, _ in h] == [297, 298, 299]
    assert health.history(stores["demo"], run="vanishing", node="nosuch") == []


def test_seen(stores):
    seen = health.seen(stores["nest"], run="nest")
    assert seen["net.0"]["update_ratio"] == 5


def test_where(stores):
    w = health.where(stores["nest"], run="nest")
    assert list(w.items()) == [("net", ["OVERSTEPPING in net.0"]), ("1", ["STALLED"])]


def test_flags(stores):
    fig = health.flags(stores["demo"], run="dead_relu")
    assert fig["data"][0]["header"]["values"] == ["node", "flag", "what to do"]


def test_overlaid(stores):
    assert "OVERSTEPPING in net.0" in json.dumps(health.overlaid(stores["nest"], run="nest"))


def test_profile(stores):
    fig = health.profile(stores["nest"], run="nest", of="update_ratio")
    assert fig["data"][0]["x"] == ["net", "net.0", "head", "1"]
    off = health.profile(stores["nest"], run="nest", of="update_ratio",
                         thresholds=health.Thresholds(stalled_update_ratio=1e-15))
    assert off["data"][0]["marker"]["color"][3] != "#c00000", "a bound changed, the colour too"


def test_within():
    assert health.within("net.2.attn") == "net"
    assert health.within("net.2.attn", ["net", "net.2"]) == "net.2"


def test_probe(tmp_path):
    import torch  # the Python layer runs in the torch venv (scripts/test.sh): never skipped

    import somatize.torch as st

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    run = st.probe(model, torch.randn(16, 4), tmp_path)
    assert len(run) == 16
    assert [r["forwards"] for r in record.runs(tmp_path)] == [1]
    assert record.forwards(tmp_path, run=run)[0]["forward"] == 0
    assert isinstance(health.diagnose(tmp_path, run=run), dict)
    assert "0" in health.seen(tmp_path, run=run)


# ---- seed 003: somatize.record ----

def test_functions_not_a_type(stores):
    # Plain functions taking the store first: the seeds' Store("/path") or the path itself.
    from somatize import Store

    store = Store(stores["demo"])
    assert record.runs(store) == record.runs(stores["demo"])
    assert health.diagnose(store, run="healthy") == {}


def test_curve(stores):
    c = record.curve(stores["demo"], run="healthy")
    assert len(c) == 300 and all(isinstance(f, int) for f, _ in c)


def test_curve_costs(stores):
    assert record.curve_costs(stores["demo"], run="healthy") == "scan"
    assert record.curve_costs(stores["demo"], run="healthy", of="Linear.took_us") == "fetch"


def test_facts(stores):
    facts = record.facts(stores["demo"], run="healthy", forward=0)
    assert [f["node"] for f in facts] == ["fc1", "relu1", "fc2", "loss"]
    assert record.facts(stores["demo"], run="healthy", forward=100000) is None
    with pytest.raises(record.SomatizeError):
        record.facts(stores["demo"], run="nosuch", forward=0)


def test_fleet(stores):
    rows = record.fleet(stores["demo"], run="healthy", last=1)
    assert rows[0]["machine"] == "local" and rows[0]["busy"] is None


def test_forwards(stores):
    rows = record.forwards(stores["demo"], run="healthy")
    assert [r["forward"] for r in rows] == list(range(300))
    assert isinstance(rows[0]["loss.value"], str)


def test_nodes(stores):
    rows = record.nodes(stores["demo"], run="healthy", last=3)
    assert [(r["node"], r["ran"]) for r in rows] == [("fc1", 3), ("relu1", 3), ("fc2", 3),
                                                      ("loss", 3)]


def test_gantt(stores):
    assert record.gantt(stores["demo"], run="healthy")["layout"]["title"]["text"] == \
        "Forward 0 of run healthy"


def test_machines(stores):
    assert [t["name"] for t in record.machines(stores["demo"], run="healthy")["data"]] == [
        "working", "waited on (wire, queue, codec)"]


def test_progress(stores):
    names = [t["name"] for t in record.progress(stores["demo"], run="healthy", smooth=0)["data"]]
    assert names == ["loss.value", "time per forward"]


def test_spent(stores):
    assert "last 4" in record.spent(stores["demo"], run="healthy", last=4)["layout"]["title"]["text"]


def test_runs(stores):
    assert [r["run"] for r in record.runs(stores["demo"])] == [
        "healthy", "vanishing", "exploding", "dead_relu", "saturated", "stalled", "overstepping"]


def test_standing(stores):
    assert record.standing(stores["demo"]) == {}


def test_query(stores):
    spec_id = next(i for i, s in stores["observed"]["specs"].items() if s["frequency"] == 2)
    assert record.query(stores["obs"], run="obs", id=spec_id, step=2) == \
        stores["observed"]["steps"]["2"][spec_id]
    assert record.query(stores["obs"], run="obs", id=spec_id, step=1) is None


def test_recorder(tmp_path):
    import somatize

    with somatize.Recorder(somatize.Store(tmp_path), run="tuesday", summarising=["loss"]) as rec:
        rec([{"node": "fc1", "kind": "Linear", "took_us": 3},
             {"node": "loss", "kind": "loss", "value": 0.5}])
    assert record.curve(tmp_path, run="tuesday") == [(0, 0.5)]
    assert record.curve_costs(tmp_path, run="tuesday") == "scan"


# ---- seed 003: Live (issue 22 built it on every surface) ----


def _facts(step):
    """One forward's facts: a node, the loss, and at step 4 a node that failed."""
    facts = [{"node": "fc1", "kind": "Linear", "began_us": 10 * step, "took_us": 100 + step},
             {"node": "loss", "kind": "loss", "value": 1.0 / (step + 1)}]
    if step == 4:
        facts[0]["error"] = "RuntimeError: boom"
    return facts


def test_live(tmp_path):
    # Live(title, smooth, every), handed to watching= (a callable given each forward's facts):
    # one row per forward, nothing on disk.
    live = somatize.Live(title="t", smooth=2, every=3)
    for step in range(7):
        live(_facts(step))
    assert len(live) == 7 and [r["forward"] for r in live.rows()] == list(range(7))
    assert live.rows()[4]["broke"]
    assert list(tmp_path.iterdir()) == []


def test_live_figure(tmp_path):
    # Live.figure: the figure progress draws, from what has arrived (here equal to the CLI's
    # `figure progress` of the same forwards recorded, but for the title the Live was given).
    live = somatize.Live(title="Progress of run r", smooth=2)
    with somatize.Recorder(tmp_path, run="r", summarising=["loss"]) as rec:
        for step in range(6):
            rec(_facts(step))
            live(_facts(step))
    want = json.loads(subprocess.run([binary(), "figure", "progress", str(tmp_path), "--run", "r",
                                      "--smooth", "2"], capture_output=True, text=True,
                                     check=True).stdout)
    assert live.figure() == want


def test_live_widget(monkeypatch):
    # Live.widget: a widget that redraws in place, or None without the widget library.
    live = somatize.Live(title="w")
    live(_facts(0))
    assert live.widget() is not None
    import somatize.widget as widget

    monkeypatch.setattr(widget, "_anywidget", lambda: None)
    assert live.widget() is None
