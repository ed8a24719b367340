"""The spectra torch measures: ``watch`` copies a small sample of each matrix whose singular
values are wanted (``somatize.torch._spectrum_sample``: rank.rs's strides, at most
SPECTRUM_MAX_ROWS x SPECTRUM_MAX_COLS, float32 or float64) and sends it in the frame's
``summary.samples`` tensor; Rust takes the SVD (the one whole tensors get), so the ranks
from torch and from a dump of the same tensors come from one SVD (test_golden.py compares
every metric). Here: the sample is exactly the rows and columns rank.rs reads, in the dtype it
widens to exactly; the wire names each sample where it sits; a sample shared by two nodes
crosses once. Fixtures: seeded random matrices and small models, made here."""

import math

import pytest
import torch

import somatize.torch as st


def rank_rs_stride(n, most):
    """src/health/rank.rs spectrum_stride, restated: ceil(n / most), at least 1."""
    return max(math.ceil(n / most), 1)


@pytest.mark.parametrize("shape", [(1, 5), (64, 128), (65, 129), (300, 7), (1000, 2000)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_a_sample_is_the_rows_and_columns_rank_rs_reads(shape, dtype):
    g = torch.Generator().manual_seed(0)
    m = torch.randn(*shape, generator=g).to(dtype)
    got = st._spectrum_sample(m)
    rs, cs = rank_rs_stride(shape[0], st.SPECTRUM_MAX_ROWS), rank_rs_stride(shape[1], st.SPECTRUM_MAX_COLS)
    want = m[::rs, ::cs]
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.shape[0] <= st.SPECTRUM_MAX_ROWS and got.shape[1] <= st.SPECTRUM_MAX_COLS
    # float64 stays float64; every narrower float widens to float32 exactly.
    assert got.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    assert torch.equal(got.double(), want.double())
    # a copy: the training's tensor is not held or changed
    assert got.data_ptr() != m.data_ptr()


def test_the_wire_names_each_sample_once_where_it_sits(tmp_path):
    torch.manual_seed(0)
    # The Identity hands its input on unchanged: its feature sample is the Linear's.
    model = torch.nn.Sequential(torch.nn.Linear(8, 200), torch.nn.Identity(), torch.nn.Tanh(),
                                torch.nn.Linear(200, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    w = st.watch(model, opt, store=str(tmp_path / "store"), run="r", every=1)
    x = torch.randn(90, 8)
    for _ in range(2):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
    wire, numbers, samples = w.last_summary
    w.close()
    assert samples.dtype.name == "float32" and numbers.dtype.name == "float64"
    named = wire["samples"]
    assert {(s["node"], s["of"]) for s in named} >= {("0", "grad"), ("0", "update"),
                                                    ("0", "feature"), ("3", "grad")}
    # Every sample lies inside the samples tensor; distinct ones do not overlap.
    spans = {}
    for s in named:
        assert s["rows"] <= st.SPECTRUM_MAX_ROWS and s["cols"] <= st.SPECTRUM_MAX_COLS
        end = s["at"] + s["rows"] * s["cols"]
        assert end <= samples.size, s
        spans[s["at"]] = end
    ends = sorted(spans.items())
    assert all(a_end <= b_at for (_, a_end), (b_at, _) in zip(ends, ends[1:])), ends
    assert sum(e - a for a, e in ends) == samples.size  # nothing sent twice
    # The Linear's 90 x 200 output, sampled at rank.rs's strides (2 rows, 2 columns).
    feature = [s for s in named if s["node"] == "0" and s["of"] == "feature"][0]
    assert (feature["rows"], feature["cols"]) == (45, 100)
    shared = [s for s in named if s["node"] == "1" and s["of"] == "feature"]
    assert shared and shared[0]["at"] == feature["at"]


def test_a_float64_model_sends_float64_samples(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(),
                                torch.nn.Linear(7, 2)).double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = st.watch(model, opt, store=str(tmp_path / "store"), run="r", every=1)
    x = torch.randn(9, 5, dtype=torch.float64)
    for _ in range(2):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.step(loss)
    wire, numbers, samples = w.last_summary
    w.close()
    assert samples.dtype.name == "float64" and numbers.dtype.name == "float64"
    # The gradient's sample of the first Linear is its whole 7 x 5 gradient, exactly.
    g = [s for s in wire["samples"] if s["node"] == "0" and s["of"] == "grad"][0]
    got = samples[g["at"]:g["at"] + 35].reshape(7, 5)
    assert (got == model[0].weight.grad.numpy()).all()
