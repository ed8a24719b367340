"""``watch`` summarises a step's small tensors (at most ``_SMALL`` entries: biases, norms'
scales) together, by segment, and the rest one at a time (``somatize.torch._summaries``,
``_diff_sqs``). Both must give each tensor's own sums: here against float64 sums of each
tensor alone, on a mix of sizes on both sides of the bound, an empty tensor, zeros, and a
non-finite entry (whose Σx² must come out non-finite, so watch measures it again). Fixtures:
seeded random tensors, made here."""

import pytest
import torch

import somatize.torch as st


def tensors():
    g = torch.Generator().manual_seed(3)
    sizes = [(3,), (0,), (64, 64), (st._SMALL,), (st._SMALL + 1,), (300, 400), (1,), (17, 5)]
    ts = [torch.randn(*s, generator=g) for s in sizes]
    ts[2][::2] = 0.0  # zeros to count
    return ts


def reference(t):
    d = t.double()
    if not d.numel():
        return [0.0, 0.0, 0.0, 0.0]
    return [d.abs().sum().item(), d.abs().max().item(), float((d != 0).sum()),
            d.square().sum().item()]


@pytest.mark.parametrize("fast", [True, False])
def test_each_tensor_has_its_own_sums(fast, monkeypatch):
    monkeypatch.setattr(st, "CPU_FAST_PATHS", fast)
    ts = tensors()
    copies = [torch.empty_like(t) for t in ts]
    out, _ = st._summaries(ts, zeros=True, copies=copies)
    assert out.shape == (4, len(ts)) and out.dtype == torch.float64
    for i, t in enumerate(ts):
        want = reference(t)
        for row, (got, w) in enumerate(zip(out[:, i].tolist(), want)):
            assert abs(got - w) <= 1e-6 * max(abs(w), 1.0), (i, tuple(t.shape), row, got, w)
        assert torch.equal(copies[i], t), i
    # without the zeros row, the same sums
    plain, _ = st._summaries(ts)
    assert torch.equal(plain, out[[0, 1, 3]])


def test_a_weight_read_for_columns_keeps_its_column_sums():
    ts = tensors()
    out, columns = st._summaries(ts, reads={7})  # a 17 x 5 weight: small, but read
    assert set(columns) == {7}
    assert torch.allclose(columns[7], ts[7].abs().sum(0).double())
    assert abs(out[0, 7].item() - ts[7].abs().sum().item()) <= 1e-5


def test_a_non_finite_entry_makes_its_squares_non_finite_and_no_other():
    ts = tensors()
    ts[0][1] = float("nan")
    ts[5][3, 3] = float("inf")
    out, _ = st._summaries(ts, zeros=True)
    finite = torch.isfinite(out[3]).tolist()
    assert finite == [i not in (0, 5) for i in range(len(ts))], finite


def test_update_norms_are_each_pairs_own():
    g = torch.Generator().manual_seed(4)
    before = tensors()
    after = [t + 1e-3 * torch.randn(t.shape, generator=g) for t in before]
    got = st._diff_sqs(before, after).tolist()
    for i, (b, a) in enumerate(zip(before, after)):
        want = (b.double() - a.double()).square().sum().item()
        assert abs(got[i] - want) <= 1e-5 * max(want, 1e-12), (i, got[i], want)
