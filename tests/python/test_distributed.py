"""A data-parallel job under torchrun (4 processes, gloo, CPU), each rank recorded by the four
watch lines: one run of four writers named for their ranks, judged per rank and read together
(verdict/src/ranks.rs). The job is ddp_job.py's; nothing is downloaded."""

import json
import socket
import subprocess

import ddp_job
from somatize._binary import binary
from somatize.record import forwards

def torchrun(tmp_path, nan_rank=-1, dies=-1):
    """The job's 16 steps into a folder store; torchrun's result and the store."""
    store = tmp_path / "store"
    return ddp_job.torchrun(tmp_path, store, steps=16, nan_rank=nan_rank, dies=dies), store


def cli(*args):
    out = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_four_ranks_write_one_run_and_a_nan_is_named_on_its_rank(tmp_path):
    out, store = torchrun(tmp_path, nan_rank=3)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = forwards(store, run="ddp")
    assert {r["writer"] for r in rows} == {"rank0", "rank1", "rank2", "rank3"}
    assert sorted({r["forward"] for r in rows}) == list(range(16))
    # The NaN came in with rank 3's batch (its loss went first); the averaged gradients
    # carried it to every rank in the same step: one row, on rank 3, the rest folded.
    assert json.loads(cli("diagnose", store, "--run", "ddp", "--json")) == {"rank3/0": ["NAN"]}
    told = json.loads(cli("diagnose", store, "--run", "ddp", "--with-bounds"))
    head = told["faults"][0]
    assert head["since"] == 10
    folded = {(f["node"], f["flag"]) for f in head["folded"]}
    assert {("rank0/0", "NAN"), ("rank1/0", "NAN"), ("rank2/0", "NAN")} <= folded, folded
    # The graph view draws it on node 0, named with its rank; a rank's own history reads.
    assert json.loads(cli("where", store, "--run", "ddp", "--json")) == {"0": ["NAN on rank3"]}
    history = json.loads(cli("history", store, "--run", "ddp", "--node", "rank3/0", "--of",
                             "grad_norm", "--json"))
    assert len(history) >= 10
    # Each rank's nodes ran on its machine and rank: fleet shows the four side by side.
    fleet = json.loads(cli("fleet", store, "--run", "ddp", "--json"))
    host = socket.gethostname()
    assert {m["machine"] for m in fleet} == {f"{host}/rank{r}" for r in range(4)}, fleet


def test_a_healthy_job_reads_as_one_process_would(tmp_path):
    out, store = torchrun(tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(cli("diagnose", store, "--run", "ddp", "--json")) == {}
    seen = json.loads(cli("seen", store, "--run", "ddp", "--json"))
    assert {"0", "1", "2"} <= set(seen)


def test_a_rank_that_dies_leaves_every_record_readable(tmp_path):
    out, store = torchrun(tmp_path, dies=2)
    assert out.returncode != 0  # torchrun reports the failed rank and stops the others
    rows = forwards(store, run="ddp")
    by = {}
    for r in rows:
        by.setdefault(r["writer"], []).append(r)
    # Rank 2 recorded its first six steps whole; the others at least as far, each readable.
    assert sorted(r["forward"] for r in by["rank2"] if not r["broke"]) == list(range(6))
    for w in ("rank0", "rank1", "rank3"):
        assert len([r for r in by.get(w, []) if not r["broke"]]) >= 6, (w, by.get(w))
    cli("diagnose", store, "--run", "ddp")  # the verdict reads what is there
