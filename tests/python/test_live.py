"""somatize.Live (the seed's Live): a watching= target drawing what `progress` draws, and the
notebook widgets of somatize.widget (their kernel side; the browser side is
tests/browser/widget.test.mjs)."""

import json
import os
import subprocess
from array import array

import pytest
import torch

import somatize
import somatize.torch as st
from somatize._binary import binary


def progress(store, run, *extra):
    out = subprocess.run([binary(), "figure", "progress", str(store), "--run", run, *extra],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def facts_of(step):
    """A forward's facts: two nodes, the loss, and at step 4 a node that failed."""
    facts = [{"node": "fc1", "kind": "Linear", "began_us": 10 * step, "took_us": 100 + step},
             {"node": "relu", "kind": "ReLU", "began_us": 10 * step + 120, "took_us": 7},
             {"node": "loss", "kind": "loss", "value": 1.0 / (step + 1)}]
    if step == 4:
        facts[1]["error"] = "RuntimeError: boom"
    return facts


@pytest.mark.parametrize("smooth", [0, 3])
def test_live_draws_what_progress_draws_of_the_same_forwards(tmp_path, smooth):
    live = somatize.Live(title="Progress of run r", smooth=smooth)
    with somatize.Recorder(tmp_path, run="r", summarising=["loss"]) as rec:
        for step in range(9):
            rec(facts_of(step))
            live(facts_of(step))
    assert len(live) == 9
    assert live.rows()[4]["broke"] and live.rows()[4]["error"] == "relu: RuntimeError: boom"
    want = progress(tmp_path, "r", "--smooth", str(smooth))
    assert any(t["name"] == "broke" for t in want["data"])
    assert live.figure() == want
    # Another title is only the title.
    other = somatize.Live(title="tuesday", smooth=smooth)
    for step in range(9):
        other(facts_of(step))
    got = other.figure()
    assert got["layout"]["title"]["text"] == "tuesday"
    got["layout"]["title"]["text"] = want["layout"]["title"]["text"]
    assert got == want


def test_a_watch_shown_feeds_a_live_that_draws_the_runs_progress(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with st.watch(model, opt, store=tmp_path, run="shown", every=1, show=True) as w:
        for _ in range(6):
            loss = (model(torch.randn(16, 4)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            w.step(loss)
    assert len(w.live) == 6
    want = progress(tmp_path, "shown")
    got = w.live.figure()
    # The loss and the breaks are the run's; the time per forward is the watch's own measure in
    # the store and the span of the facts here, so only its forwards are compared.
    assert [t["name"] for t in got["data"]] == [t["name"] for t in want["data"]]
    assert got["data"][0] == want["data"][0]
    assert got["data"][1]["x"] == want["data"][1]["x"]
    assert got["layout"] == want["layout"]


def test_live_keeps_one_row_of_four_numbers_per_forward():
    live = somatize.Live()
    for step in range(10_000):
        live([{"node": "loss", "kind": "loss", "value": float(step)}])
    assert len(live) == 10_000
    assert live._rows.itemsize * len(live._rows) == 32 * 10_000
    assert live.rows()[-1] == {"forward": 9999, "value": 9999.0, "took_us": 0, "broke": False,
                               "error": None}
    with pytest.raises(ValueError):
        somatize.Live(every=0)


def test_the_live_widget_is_pushed_packed_rows_every_n_forwards():
    import anywidget  # noqa: F401

    live = somatize.Live(title="w", every=3)
    w = live.widget()
    assert w is not None and w.mode == "live" and w.title == "w"
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    for step in range(7):
        live([{"node": "n", "kind": "loss", "value": step / 2, **({"error": "x"} if step == 5 else {})}])
    # Sent at 3 forwards; the rest within 0.1 s after (at most 10 messages a second).
    assert [c["start"] for c, _ in sent] == [0]
    first = array("d", bytes(sent[0][1][0]))
    assert list(first) == [0, 0.0, 0, 1, 1, 0.5, 0, 1, 2, 1.0, 0, 1]
    import time

    time.sleep(0.5)
    assert [c["start"] for c, _ in sent] == [0, 3]
    second = array("d", bytes(sent[1][1][0]))
    assert len(second) == 4 * 4 and second[4 * 2:4 * 3].tolist() == [5, 2.5, 0, 3]
    assert sent[1][0]["errors"] == {"2": "n: x"}
    # A view drawn again asks for everything.
    sent.clear()
    w._on_msg(w, {"type": "somatize.hello"}, [])
    assert len(sent) == 1 and sent[0][0]["start"] == 0 and len(bytes(sent[0][1][0])) == 7 * 32


def test_show_answers_reads_inside_the_store_only(tmp_path):
    from somatize import widget

    with somatize.Recorder(tmp_path / "s", run="r") as rec:
        rec(facts_of(0))
    view = somatize.show(tmp_path / "s")
    sent = []
    view.send = lambda content, buffers=None: sent.append((content, buffers or []))
    view._on_msg(view, {"type": "somatize.read", "id": 7, "asks": [
        {"op": "list", "path": ""}, {"op": "stat", "path": "somatize-store.json"},
        {"op": "stat", "path": "nope"}]}, [])
    (content, buffers), = sent
    assert content["id"] == 7 and content["done"]
    listed, *along, stat, missing = content["answers"]
    assert "runs" in listed["names"] and "somatize-store.json" in listed["names"]
    # The listing brings the folders below listed, its files' sizes and the small ones' bytes.
    files = [a for a in along if a["op"] == "stat"]
    assert {"listing.jsonl", "somatize-store.json"} <= {a["path"] for a in files}
    assert all(bytes(buffers[a["buffer"]]) == (tmp_path / "s" / a["path"]).read_bytes() for a in files)
    assert [(a["path"], a["names"]) for a in along if a["op"] == "list"][:2] == [("runs", ["r"]), ("runs/r", sorted(os.listdir(tmp_path / "s" / "runs" / "r")))]
    assert bytes(buffers[stat["buffer"]]) == (tmp_path / "s" / "somatize-store.json").read_bytes()
    assert missing["size"] is None
    for bad in ["../x", "/etc/passwd", "runs/../../x"]:
        sent.clear()
        view._on_msg(view, {"type": "somatize.read", "id": 8, "asks": [{"op": "stat", "path": bad}]}, [])
        assert "inside the store" in sent[0][0]["error"] or "out of the store" in sent[0][0]["error"]
    (tmp_path / "s" / "link").symlink_to(tmp_path)
    sent.clear()
    view._on_msg(view, {"type": "somatize.read", "id": 9, "asks": [{"op": "list", "path": "link"}]}, [])
    assert "out of the store" in sent[0][0]["error"]
    # A range is sent in chunks of 256 KiB, messages of at most 4 MiB of buffers.
    big = tmp_path / "s" / "runs" / "big.bin"
    big.write_bytes(bytes(range(256)) * (9 * 4096 + 17))  # 9 MiB and a bit
    sent.clear()
    view._on_msg(view, {"type": "somatize.read", "id": 10, "asks": [
        {"op": "range", "path": "runs/big.bin", "offset": 0, "length": 16 << 20}]}, [])
    assert [len(b) for _, bs in sent for b in bs] == [256 << 10] * 36 + [256 * 17]
    assert all(sum(len(b) for b in bs) <= widget.MESSAGE_BYTES for _, bs in sent)
    assert [c["done"] for c, _ in sent] == [False, False, True]  # 16 chunks a message
    assert b"".join(bytes(b) for _, bs in sent for b in bs) == big.read_bytes()
    # A range asked is answered with READ_AHEAD bytes of the file from its offset (the view reads on).
    sent.clear()
    view._on_msg(view, {"type": "somatize.read", "id": 11, "asks": [
        {"op": "range", "path": "runs/big.bin", "offset": 256 << 10, "length": 256 << 10}]}, [])
    answers = [a for c, _ in sent for a in c["answers"]]
    assert [a["offset"] for a in answers] == [(256 << 10) * (i + 1) for i in range(widget.READ_AHEAD // (256 << 10))]
    assert b"".join(bytes(b) for _, bs in sent for b in bs) == big.read_bytes()[256 << 10:(256 << 10) + widget.READ_AHEAD]
    with pytest.raises(ValueError, match="not a somatize store"):
        somatize.show(tmp_path)


def test_show_sends_the_listing_and_the_named_runs_files_unasked(tmp_path, monkeypatch):
    from somatize import widget

    with somatize.Recorder(tmp_path / "s", run="r") as rec:
        for step in range(3):
            rec(facts_of(step))
    run = tmp_path / "s" / "runs" / "r"
    big = run / "big.bin"  # a file of the run the listing does not bring whole (over 256 KiB)
    big.write_bytes(bytes(range(256)) * (2 * 4096 + 3))
    (run / "out").symlink_to(tmp_path)  # a link out of the store is not followed
    view = somatize.show(tmp_path / "s", "r")
    sent = []
    view.send = lambda content, buffers=None: sent.append((content, buffers or []))
    view._on_msg(view, {"type": "somatize.prime"}, [])
    assert all(c["type"] == "somatize.primed" for c, _ in sent) and sent[-1][0]["done"]
    answers = [(a, bytes(bs[a["buffer"]]) if "buffer" in a else None) for c, bs in sent for a in c["answers"]]
    # The listing, as the first read brings it, then the run's files the listing did not bring whole.
    assert answers[0][0] == {"op": "list", "path": "", "names": sorted(os.listdir(tmp_path / "s"))}
    whole = {a["path"] for a, data in answers if a["op"] == "stat" and data is not None}
    ranges = [(a, data) for a, data in answers if a["op"] == "range"]
    assert "runs/r/big.bin" not in whole and not any(a["path"].startswith("runs/r/out") for a, _ in answers)
    got = {}
    for a, data in ranges:
        assert a["offset"] % widget.CHUNK == 0 and len(data) <= widget.CHUNK
        got.setdefault(a["path"], b"")
        assert len(got[a["path"]]) == a["offset"]
        got[a["path"]] += data
    files = {p.relative_to(tmp_path / "s").as_posix() for p in run.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size}
    assert set(got) | whole >= files and set(got).isdisjoint(whole)
    assert all(got[p] == (tmp_path / "s" / p).read_bytes() for p in got)
    # The first read after it does not bring the listing again.
    sent.clear()
    view._on_msg(view, {"type": "somatize.read", "id": 1, "asks": [{"op": "stat", "path": "somatize-store.json"}]}, [])
    assert [a["path"] for a in sent[0][0]["answers"]] == ["somatize-store.json"]
    # A run over PRIME_BYTES is not sent (the view asks for what it reads), nor a run not named.
    monkeypatch.setattr(widget, "PRIME_BYTES", 1 << 10)
    for shown in (somatize.show(tmp_path / "s", "r"), somatize.show(tmp_path / "s")):
        sent.clear()
        shown.send = lambda content, buffers=None: sent.append((content, buffers or []))
        shown._on_msg(shown, {"type": "somatize.prime"}, [])
        assert not [a for c, _ in sent for a in c["answers"] if a["op"] == "range"]
        assert sent[0][0]["answers"][0]["op"] == "list"
