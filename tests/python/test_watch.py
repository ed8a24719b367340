"""somatize.torch.watch end to end: the four lines write a run the CLI reads; the schedule;
bad input is a clear exception; a dead companion never stops training; an exception marks
the run broke; bf16 and repeated leaves; torch.compile'd models."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import somatize.torch as st
from somatize.health import diagnose, seen
from somatize.record import curve, facts, forwards


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


def train(model, opt, w, steps, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=g, dtype=dtype)
        loss = (model(x).float() ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
    return loss


def test_the_four_lines_write_a_run_the_cli_reads(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="tuesday", every=3)
    loss = train(model, opt, w, 7)
    w.close()
    pts = curve(tmp_path, run="tuesday")
    assert [f for f, _ in pts] == list(range(7))
    assert pts[-1][1] == pytest.approx(loss.item(), rel=1e-6)
    assert diagnose(tmp_path, run="tuesday") == {}
    numbers = seen(tmp_path, run="tuesday")
    assert numbers["0"]["kind"] == "Linear"
    for metric in ("grad_norm", "param_norm", "update_ratio", "act_var", "units"):
        assert metric in numbers["0"], metric
    assert numbers["1"]["units"] == 16
    # The schedule is in the facts: outputs summarised on forwards 0, 3 and 6 only.
    kinds = {f: {x["node"]: x for x in facts(tmp_path, run="tuesday", forward=f)}
             for f in range(7)}
    assert [f for f in range(7) if kinds[f]["1"]["measured"] == "full"] == [0, 3, 6]
    assert kinds[0]["1"]["layout"] == "ND"
    assert len(forwards(tmp_path, run="tuesday")) == 7


def test_norms_every_records_only_those_steps_and_the_full_ones(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="sparse", every=4, norms_every=3)
    train(model, opt, w, 10)
    w.close()
    # Steps 0, 3, 6, 9 (norms) and 0, 4, 8 (full); the forwards keep their step numbers.
    assert [f for f, _ in curve(tmp_path, run="sparse")] == [0, 3, 4, 6, 8, 9]
    measured = {f: facts(tmp_path, run="sparse", forward=f)[0]["measured"]
                for f in (0, 3, 4, 6, 8, 9)}
    assert measured == {0: "full", 3: "norms", 4: "full", 6: "norms", 8: "full", 9: "norms"}
    # A full forward carries its own step's update, whatever was skipped before it.
    numbers = seen(tmp_path, run="sparse")
    assert numbers["0"]["update_steps"] == 1.0
    with pytest.raises(st.WatchError, match="norms_every"):
        st.watch(mlp(), store=tmp_path, run="bad", norms_every=0)


def test_a_context_manager_marks_an_exception_broke(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with pytest.raises(RuntimeError, match="boom"):
        with st.watch(model, opt, store=tmp_path, run="r") as w:
            train(model, opt, w, 2)
            raise RuntimeError("boom")
    rows = forwards(tmp_path, run="r")
    broke = [r for r in rows if r["broke"]]
    assert [r["forward"] for r in broke] == [2], rows


def test_a_script_dying_of_an_exception_marks_the_run_broke(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import sys, torch
        sys.path[:0] = {sys.path!r}
        import somatize.torch as st
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        w = st.watch(model, opt, store={str(tmp_path)!r}, run="dies")
        for step in range(3):
            loss = model(torch.randn(2, 4)).sum(); opt.zero_grad(); loss.backward(); opt.step()
            w.step(loss)
        raise ValueError("the data ran out")
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env={**os.environ})
    assert out.returncode == 1 and "the data ran out" in out.stderr
    rows = forwards(tmp_path, run="dies")
    assert [r["forward"] for r in rows if r["broke"]] == [3]
    assert [r["forward"] for r in rows if not r["broke"]] == [0, 1, 2]


def test_bad_input_is_a_clear_exception(tmp_path):
    with pytest.raises(st.WatchError, match="no parameters"):
        st.watch(torch.nn.ReLU(), None, store=tmp_path, run="x")
    with pytest.raises(st.WatchError, match="torch.nn.Module"):
        st.watch("not a model", None, store=tmp_path, run="x")
    with pytest.raises(st.WatchError, match="no node 'nowhere'"):
        st.watch(mlp(), store=tmp_path, run="apart", apart=[("0", "nowhere")])
    with pytest.raises(st.WatchError, match="pairs of two node names"):
        st.watch(mlp(), store=tmp_path, run="apart", apart=[("0",)])
    with pytest.raises(st.WatchError, match="store=..., run=..."):
        st.watch(mlp(), None)

    class Bare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

    with pytest.raises(st.WatchError, match="no parameters in a submodule"):
        with pytest.warns(RuntimeWarning, match="belong to the model itself"):
            st.watch(Bare(), None, store=tmp_path, run="x")
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="y")
    out = model(torch.randn(4, 8))
    loss = (out ** 2).mean()
    loss.backward()
    opt.step()
    with pytest.raises(st.WatchError, match="scalar loss"):
        w.step(out)
    w.step(loss)
    w.close()
    with pytest.raises(st.WatchError, match="after watch.close"):
        w.step(loss)


def test_a_dead_companion_never_stops_training(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="dead")
    train(model, opt, w, 2)
    os.kill(w._companion.pid, signal.SIGKILL)
    w._companion.process.wait()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(model, opt, w, 5)
        w.close()
    gone = [c for c in caught if "companion is gone" in str(c.message)]
    assert len(gone) == 1, [str(c.message) for c in caught]


def test_a_full_disk_is_said_at_once_and_training_goes_on(tmp_path, capfd):
    # A full disk under the run's index (/dev/full: every write fails with ENOSPC). The
    # companion says on stderr, as it happens, which forward was not recorded and why; the
    # script trains on and is warned at close that the run is not whole.
    run_dir = tmp_path / "runs" / "full" / "w"
    run_dir.mkdir(parents=True)
    os.symlink("/dev/full", run_dir / "index.jsonl")
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = st.watch(model, opt, store=tmp_path, run="full", writer="w")
        loss = train(model, opt, w, 5)
        w.close()
    assert torch.isfinite(loss)
    err = capfd.readouterr().err
    assert "No space left on device" in err and "NOT recorded" in err, err
    said = [str(c.message) for c in caught]
    assert any("companion exited with status" in m for m in said), said


def test_a_layer_left_out_of_the_optimizer_reads_stalled_not_its_piled_up_gradient(tmp_path):
    # The first layer is frozen by leaving it out of the optimizer: autograd still fills its
    # .grad and zero_grad never clears it, so it grows step by step (0.8 to 119 in the
    # benchmark's frozen-cnn-e10). The watch measures no gradient no optimizer reads: the
    # layer shows its parameters and a zero update, the verdict says STALLED there, and no
    # EXPLODING comes of the pile.
    model = mlp()
    opt = torch.optim.SGD(model[2].parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="frozen", every=1)
    train(model, opt, w, 40)
    w.close()
    assert model[0].weight.grad.norm() > 20 * model[2].weight.grad.norm()  # the pile is there
    numbers = seen(tmp_path, run="frozen")
    assert "grad_norm" not in numbers["0"] and numbers["0"]["update_ratio"] == 0
    assert numbers["2"]["grad_norm"] > 0
    verdict = diagnose(tmp_path, run="frozen")
    assert "STALLED" in verdict.get("0", []), verdict
    assert not any(f.startswith("EXPLODING") for flags in verdict.values() for f in flags), verdict


def test_nonfinite_values_are_counted(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="nan", every=1)
    train(model, opt, w, 1)
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
        model[0].weight[0, 1] = float("inf")
    train(model, opt, w, 1)
    w.close()
    row = seen(tmp_path, run="nan", last=1)["0"]
    assert row["nan"] >= 1 and row["inf"] >= 1
    assert "NAN" in diagnose(tmp_path, run="nan").get("0", []) + \
        [f for flags in diagnose(tmp_path, run="nan").values() for f in flags]


def tiny_transformer():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                             norm_first=True)
    return torch.nn.Sequential(torch.nn.Embedding(20, 16), layer, torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 20))


@pytest.mark.parametrize("every", [1, 10])
def test_a_nan_is_named_where_it_was_born_not_at_the_embedding(tmp_path, every):
    # A weight in the middle of a pre-norm transformer goes NaN before forward 12, the last (a
    # norms-only forward at every=10: the parameters tell; at every=1 the outputs too). The backward
    # then fills every gradient with NaN, the embedding's first in declaration order: the
    # head must be the weight's node, with the rest folded under it.
    model = tiny_transformer()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = st.watch(model, opt, store=tmp_path, run="mid", every=every)
    g = torch.Generator().manual_seed(1)
    for step in range(13):
        x = torch.randint(0, 20, (4, 8), generator=g)
        if step == 12:
            with torch.no_grad():
                model[1].linear1.weight[3, 5] = float("nan")
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, 20), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
    w.close()
    numbers = seen(tmp_path, run="mid", last=1)
    assert numbers["0"]["grad_nonfinite"] > 0 and numbers["0"]["nonfinite"] == \
        numbers["0"]["grad_nonfinite"], numbers["0"]  # the embedding: gradients only
    assert diagnose(tmp_path, run="mid") == {"1.linear1": ["NAN"]}


def test_a_nan_born_in_the_loss_is_named_at_the_loss(tmp_path):
    # Every parameter and output finite, the loss's own arithmetic NaN (a square root of a
    # negative number): then the backward breaks every gradient, the first node's too. The
    # head is the loss.
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="loss", every=1)
    train(model, opt, w, 2)
    x = torch.randn(32, 8)
    loss = (model(x) ** 2).mean() * torch.sqrt(torch.tensor(-1.0))
    opt.zero_grad()
    loss.backward()
    opt.step()
    w.step(loss)
    w.close()
    assert diagnose(tmp_path, run="loss") == {"loss": ["NAN"]}


def test_bf16_and_a_leaf_called_twice(tmp_path):
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = torch.nn.Linear(8, 16)
            self.act = torch.nn.Tanh()
            self.mid = torch.nn.Linear(16, 16)
            self.out = torch.nn.Linear(16, 1)

        def forward(self, x):
            h = self.act(self.inp(x))
            return self.out(self.act(self.mid(h)))  # act runs twice

    torch.manual_seed(0)
    model = Twice().to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="bf", every=1)
    train(model, opt, w, 2, dtype=torch.bfloat16)
    w.close()
    numbers = seen(tmp_path, run="bf")
    assert numbers["act"]["units"] == 16
    assert 0 <= numbers["act"]["act_saturated_fraction"] <= 1
    calls = {f["node"]: f["calls"] for f in facts(tmp_path, run="bf", forward=1) if "calls" in f}
    assert calls["act"] == 2
    assert numbers["inp"]["grad_norm"] > 0


class Twice(torch.nn.Module):
    """One ReLU called on two halves of the hidden layer, or once on both together."""

    def __init__(self, split):
        super().__init__()
        self.split = split
        self.fc = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU()
        self.head = torch.nn.Linear(8, 1)

    def forward(self, x):
        h = self.fc(x) * 3 + 1
        if self.split:
            h = torch.cat([self.act(h[:5]), self.act(h[5:])])
        else:
            h = self.act(h)
        return self.head(h)


def test_a_module_called_twice_reads_as_one_call_over_both_outputs(tmp_path):
    # Each call's per-unit sums cross the wire apart (around each call's own first values);
    # Rust merges them (summary.rs): the metrics must be those of one call over both.
    got = {}
    for split in (True, False):
        torch.manual_seed(0)
        model = Twice(split)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        run = f"split{int(split)}"
        w = st.watch(model, opt, store=tmp_path, run=run, every=1)
        x = torch.randn(12, 4)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
        w.close()
        got[split] = seen(tmp_path, run=run)["act"]
    both, one = got[True], got[False]
    for k in ("act_mean", "act_var", "act_mean_sq", "act_zero_fraction", "units",
              "dead_units", "dormant_units", "unit_samples"):
        assert both[k] == pytest.approx(one[k], rel=1e-6, abs=1e-9), k
    assert both["units"] == 8


def counts_form(summary):
    """A ``signs`` summary as the ``counts`` form the masked path gives (summary.rs's
    conversion): count, shift, sum, sum_sq, sum_abs, positive, zeros[, saturated]."""
    body = summary["body"].to(torch.float64)
    if summary["form"] == "counts":
        return body
    rows = float(summary["rows"])
    shift, s, ss, sabs, signs, nonzero = body[:6]
    out = [torch.full_like(shift, rows), shift, s, ss, sabs, (signs + nonzero) / 2,
           rows - nonzero]
    return torch.stack(out + list(body[6:]))


# (rows, units): one block; and past ``_OUTPUT_BLOCK`` (2^17 entries), taken a block of whole
# rows at a time: 14,564 rows per block of 9 units, so 30,000 rows are two whole blocks and a
# part of one.
SHAPES = [(300, 9), (30000, 9)]


@pytest.mark.parametrize("scale", [None, "tanh", "sigmoid"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_fast_sums_are_the_masked_paths_sums(scale, shape):
    # The CPU's float32 fast path (sums of signs by matrix products) against the masked path
    # every other device and dtype takes (here: the same values in float64), compared as the
    # moments Rust derives from them (each unit's sums around its own shift).
    torch.manual_seed(0)
    if shape[0] * shape[1] > st._OUTPUT_BLOCK:
        assert shape[0] % (st._OUTPUT_BLOCK // shape[1]) != 0  # a last block in part
    x = torch.randn(*shape) * 2 + 0.5
    x[:, 3] = torch.relu(x[:, 3])  # zeros, and a unit mostly off
    x[:, 4] = 0.0
    x[:5, 5] = 0.99  # saturated entries under tanh
    fast = st._summarise_output(x, scale)
    assert fast["form"] == "signs" and fast["counts"] is None
    masked = st._summarise_output(x.to(torch.float64), scale)
    assert masked["form"] == "counts" and masked["counts"].tolist() == [0.0, 0.0]
    f, m = counts_form(fast), counts_form(masked)
    assert f.shape == m.shape == (7 + (scale is not None), 9)

    def moments(b):  # each unit's mean and Σ(x − mean)², as summary.rs takes them
        n, shift, s, ss = b[0], b[1], b[2], b[3]
        return shift + s / n, ss - s * s / n

    for got, want in zip(moments(f), moments(m)):
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    # counts, Σ|x|, positives, zeros and saturated entries alike
    for i in [0, 4, 5, 6] + ([7] if scale else []):
        assert torch.allclose(f[i], m[i], rtol=1e-5, atol=1e-6), i


def test_a_non_finite_value_in_a_later_block_sends_the_output_masked():
    # The fast path's blocks are summed before their finiteness is read: a NaN only in the
    # last, partial block still sends the whole output by the masked path, counted.
    x = torch.ones(30000, 9)
    x[-1, 2] = float("nan")
    x[-2, 3] = float("-inf")
    s = st._summarise_output(x, None)
    assert s["form"] == "counts"
    assert s["counts"].tolist() == [1.0, 2.0]
    assert s["body"][0].tolist() == [30000.0] * 2 + [29999.0] * 2 + [30000.0] * 5


def test_a_non_finite_output_is_summarised_over_its_finite_values():
    x = torch.ones(4, 2)
    x[0, 0], x[1, 0], x[2, 1] = float("nan"), float("inf"), -2.0
    s = st._summarise_output(x, None)
    assert s["form"] == "counts"
    assert s["counts"].tolist() == [1.0, 2.0]  # one NaN, two non-finite
    b = s["body"]
    assert b[0].tolist() == [2.0, 4.0]  # finite values per unit
    assert b[5].tolist() == [2.0, 3.0]  # positives


def test_a_compiled_model_is_watched_on_its_original_modules(tmp_path):
    model = mlp()
    compiled = torch.compile(model, backend="eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(compiled, opt, store=tmp_path, run="c", every=1)
    train(compiled, opt, w, 2)
    w.close()
    numbers = seen(tmp_path, run="c")
    assert numbers["0"]["kind"] == "Linear" and "act_var" in numbers["1"]


def test_a_parameter_that_is_not_contiguous_is_measured_and_its_update_too(tmp_path):
    # A weight stored transposed (a view's strides, as a checkpoint converted from another
    # layout can leave it): the copy the update is measured against is taken contiguous, so
    # every path reads it (an empty_like of it kept its strides and broke the copy's view).
    # (Past the small tensors summed together, which never view the copy.)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(300, 300), torch.nn.ReLU(),
                                torch.nn.Linear(300, 1))
    with torch.no_grad():
        model[0].weight = torch.nn.Parameter(model[0].weight.detach().t().contiguous().t())
    assert not model[0].weight.is_contiguous() and model[0].weight.numel() > st._SMALL
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="t", every=1)
    before = [p.detach().clone() for p in model[0].parameters()]
    loss = (model(torch.randn(32, 300, generator=torch.Generator().manual_seed(0))) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    w.step(loss)
    w.close()
    numbers = seen(tmp_path, run="t")
    # (The node's update: its weight's and bias's together, against both before the step.)
    after = [p.detach() for p in model[0].parameters()]
    moved = sum(((a - b) ** 2).sum() for a, b in zip(after, before)).sqrt()
    want = (moved / sum((b ** 2).sum() for b in before).sqrt()).item()
    assert numbers["0"]["update_ratio"] == pytest.approx(want, rel=1e-4), (numbers["0"], want)


def test_a_compiled_model_is_not_broken_at_every_hook(tmp_path):
    # The hooks run as Python under torch.compile (torch.compiler.disable): traced, each one's
    # data-dependent checks and kernel calls broke the graph at every node (11 breaks on this
    # MLP, torch 2.15) and dynamo warned that it cannot trace somatize._kernels.
    import warnings

    import torch._dynamo as dynamo

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="c", every=1)
    dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explained = dynamo.explain(model)(torch.randn(32, 8))
    w.close()
    dynamo.reset()
    assert not [c for c in caught if "somatize" in str(c.message)], [str(c.message) for c in caught]
    assert explained.graph_break_count <= 2, (
        f"got {explained.graph_break_count} graph breaks, wanted at most 2: "
        f"{[str(r.reason)[:80] for r in explained.break_reasons]}")


def test_a_distributed_rank_writes_as_its_rank(tmp_path):
    import socket

    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        model = mlp()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        w = st.watch(ddp, opt, store=tmp_path, run="ddp", every=1)
        train(ddp, opt, w, 2)
        w.close()
    finally:
        dist.destroy_process_group()
    assert {r["writer"] for r in forwards(tmp_path, run="ddp")} == {"rank0"}
    # The wrapper is looked through: the nodes are named as in a run of one process.
    numbers = seen(tmp_path, run="ddp")
    assert {"0", "1", "2"} <= set(numbers) and not any(n.startswith("module") for n in numbers)
    assert "act_var" in numbers["1"] and "grad_norm" in numbers["0"]


def test_autocast_outputs_are_measured_in_float32(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="amp", every=1)
    for _ in range(2):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(torch.randn(32, 8))
        loss = (out.float() ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
    w.close()
    numbers = seen(tmp_path, run="amp")
    assert numbers["1"]["units"] == 16 and numbers["1"]["act_var"] > 0
    assert numbers["0"]["update_ratio"] > 0


def _blob_arrays(store, run, forward):
    """The whole tensors kept with one forward of ``run`` (its blob, read from the pack the
    index points at), as numpy arrays by key."""
    import io
    import json
    import zipfile

    import numpy as np

    for wdir in (store / "runs" / run).iterdir():
        if not (wdir / "index.jsonl").is_file():
            continue  # graph.json, and anything else that is not a writer's folder
        for line in (wdir / "index.jsonl").read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            if entry.get("forward") == forward and "blob" in entry:
                with open(wdir / entry["blob"], "rb") as f:
                    f.seek(entry.get("offset", 0))
                    blob = f.read(entry["len"]) if "len" in entry else f.read()
                z = zipfile.ZipFile(io.BytesIO(blob))
                return {n.rsplit("/", 1)[-1][:-4]: np.load(io.BytesIO(z.read(n)))
                        for n in z.namelist() if n.endswith(".npy")}
    raise AssertionError(f"no blob for forward {forward}")


def test_kept_tensors_are_the_ones_the_forward_used_and_its_update(tmp_path):
    # keep_tensors_every: param.* are the weights the forward ran with (the optimizer has
    # moved them by the time watch.step is called), update.* what its step applied, as a
    # dump has them; and the update's numbers are this forward's own step.
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = st.watch(model, opt, store=tmp_path, run="kept", every=2, keep_tensors_every=2)
    g = torch.Generator().manual_seed(0)
    used, applied = {}, {}
    for step in range(3):
        x = torch.randn(32, 8, generator=g)
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        before = {k: p.detach().clone() for k, p in model.named_parameters()}
        opt.step()
        used[step] = before
        applied[step] = {k: p.detach() - before[k] for k, p in model.named_parameters()}
        w.step(loss)
    w.close()
    kept = _blob_arrays(tmp_path, "kept", 2)
    for k in used[2]:
        # (W_after + (W_before − W_after): W_before to within a rounding.)
        assert torch.allclose(torch.from_numpy(kept["param." + k]), used[2][k], rtol=0,
                              atol=1e-7), k
        assert torch.allclose(torch.from_numpy(kept["update." + k]), applied[2][k],
                              rtol=0, atol=1e-7), k
    ratio = seen(tmp_path, run="kept")["0"]["update_ratio"]
    want = float(applied[2]["0.weight"].pow(2).sum().add(applied[2]["0.bias"].pow(2).sum())
                 .sqrt() / used[2]["0.weight"].pow(2).sum().add(used[2]["0.bias"].pow(2)
                                                                .sum()).sqrt())
    assert abs(ratio - want) <= 1e-5 * want, (ratio, want)


def test_a_probe_records_one_forward_never_trained(tmp_path):
    model = mlp()
    before = [p.detach().clone() for p in model.parameters()]
    run = st.probe(model, torch.randn(16, 8), tmp_path)
    assert len(run) == 16 and int(run, 16) >= 0
    assert [r["forward"] for r in forwards(tmp_path, run=run)] == [0]
    numbers = seen(tmp_path, run=run)
    assert "act_var" in numbers["1"] and "param_norm" in numbers["0"]
    assert "grad_norm" not in numbers["0"]
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_an_element_wise_node_takes_the_layout_of_the_node_declared_before_it(tmp_path):
    # A ReLU declared after a convolution reads channel-first (layout.rs), even when it runs
    # first (its values against Rust's: test_golden.py's "order" case); when the convolution
    # stops running, the ReLU's predicted axis was wrong and its outputs are not reported for
    # that step (with a warning), never reported along a wrong axis.
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
            self.relu = torch.nn.ReLU()
            self.skip = False

        def forward(self, x):
            h = self.relu(x)
            return h * self.conv.bias.sum() if self.skip else self.conv(h)

    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = st.watch(model, opt, store=tmp_path, run="order", every=1)
    x = torch.randn(2, 3, 4, 5)
    for skip in (False, True):
        model.skip = skip
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if skip:
            with pytest.warns(RuntimeWarning, match="unit axis changed"):
                w.step(loss)
        else:
            w.step(loss)
    w.close()
    layouts = [{f["node"]: f.get("layout") for f in facts(tmp_path, run="order", forward=n)}
               for n in (0, 1)]
    assert layouts[0]["relu"] == "NCHW"
    assert layouts[1]["relu"] == "NHWD"  # with no conv output before it: the last axis
    assert "units" not in seen(tmp_path, run="order", last=1).get("relu", {})


@pytest.mark.parametrize("n", [0, 10, 1 << 18, (1 << 18) + 5, (1 << 24) + 3])
def test_abs_summaries_in_blocks_are_those_of_the_whole(n):
    # Σ|x|, max |x|, the count of non-zeros and Σx², taken a cache-sized block at a time on the
    # CPU, against float64 over the whole tensor (one in seven entries zero; past 2^24 entries
    # a float32 count would no longer be exact).
    torch.manual_seed(0)
    x = torch.randn(n)
    x[::7] = 0
    l1, top, nonzero, sq = (v.item() for v in st._abs_summaries(x, zeros=True))
    assert nonzero == int((x != 0).sum())
    want_sq = x.double().square().sum().item()
    assert abs(sq - want_sq) <= 1e-6 * max(want_sq, 1.0)
    assert top == (x.abs().max().item() if n else 0.0)
    want = x.double().abs().sum().item()
    assert abs(l1 - want) <= 1e-6 * want


def test_large_tensors_blockwise_match_the_whole():
    # The path a large CPU weight takes (more than one cache-sized block of rows): the |w|
    # column sums of a weight reading a layer, per index of its axis 1, against the
    # whole-tensor arithmetic (float64).
    torch.manual_seed(0)
    assert 1500 * 700 > st._ABS_BLOCK
    for shape in ((1500, 700), (600, 350, 3), (64, 2800)):
        w = torch.randn(*shape)
        cols = st._abs_summaries(w, columns=True)[3]  # after Σ|w|, max |w|, Σw²
        got = st._columns(cols, list(shape))
        dims = [0] + list(range(2, len(shape)))
        ref = w.double().abs().sum(dim=dims)
        assert got.shape == (shape[1],)
        assert torch.allclose(got, ref, rtol=1e-6), shape
        masked, finite = st._masked_columns(w)
        assert torch.allclose(masked, ref, rtol=1e-12)
        assert finite.tolist() == [float(math.prod(shape) // shape[1])] * shape[1]
