"""somatize.record and somatize.health answer as the CLI does (they run it with --json)."""

import pytest
import torch

import somatize.torch as st
from somatize import health, record


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sigmoid(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with st.watch(model, opt, store=root, run="r", every=1) as w:
        for _ in range(4):
            loss = (model(torch.randn(16, 4)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            w.step(loss)
    return root


def test_record_answers_equal_the_clis(store, cli):
    assert record.runs(store) == cli("runs", store)
    assert record.forwards(store, run="r") == cli("forwards", store, "--run", "r")
    assert record.curve(store, run="r") == [tuple(p) for p in cli("curve", store, "--run", "r")]
    assert record.facts(store, run="r", forward=2) == cli("facts", store, "--run", "r",
                                                         "--forward", 2)
    assert record.facts(store, run="r", forward=99) is None
    assert record.nodes(store, run="r", last=2) == cli("nodes", store, "--run", "r", "--last", 2)
    assert record.fleet(store, run="r") == cli("fleet", store, "--run", "r")
    assert record.standing(store) == cli("standing", store)
    assert record.curve_costs(store, run="r") == "scan"
    assert record.curve_costs(store, run="r", of="nothing.here") == "fetch"
    assert [r["run"] if "run" in r else r for r in record.runs(store)]


def test_health_answers_equal_the_clis(store, cli):
    assert health.diagnose(store, run="r") == cli("diagnose", store, "--run", "r")
    assert health.seen(store, run="r") == cli("seen", store, "--run", "r")
    assert health.about("VANISHING") == cli("about", "VANISHING")
    t = health.Thresholds(vanishing_ratio=0.5)
    assert t.as_dict()["vanishing_ratio"] == 0.5
    assert t.as_dict()["exploding_ratio"] == cli("thresholds")["exploding_ratio"]
    # A bound that makes every healthy gradient look vanishing changes the answer, not the record.
    strict = health.diagnose(store, run="r", thresholds=health.Thresholds(vanishing_mean_abs=1e9))
    assert any("VANISHING" in flags for flags in strict.values()), strict
    with pytest.raises(ValueError, match="no bound named"):
        health.Thresholds(nonsense=1)
    with pytest.raises(record.SomatizeError):
        record.forwards(store, run="no-such-run")


def test_a_recorder_writes_the_facts_it_is_handed(tmp_path, cli):
    import somatize

    with somatize.Recorder(tmp_path, run="facts", summarising=["loss"]) as rec:
        for step in range(3):
            rec([{"node": "fc1", "kind": "Linear", "took_us": 100 + step},
                 {"node": "loss", "kind": "loss", "value": 1.0 / (step + 1)}],
                stats={"fc1": {"grad_norm": 0.5}})
        with pytest.raises(ValueError, match="'node' and 'kind'"):
            rec([{"kind": "Linear"}])
    assert record.curve(tmp_path, run="facts") == [(0, 1.0), (1, 0.5), (2, 1.0 / 3)]
    assert record.curve_costs(tmp_path, run="facts") == "scan"
    got = record.facts(tmp_path, run="facts", forward=1)
    assert [(f["node"], f["took_us"]) for f in got] == [("fc1", 101), ("loss", 0)]
    assert health.seen(tmp_path, run="facts")["fc1"]["grad_norm"] == 0.5
    assert not any(r["broke"] for r in record.forwards(tmp_path, run="facts"))
