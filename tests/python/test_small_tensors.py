"""``watch`` summarises a step's small tensors (at most ``_SMALL`` entries: biases, norms'
scales) together, by segment, and the rest one at a time (``somatize.torch._summaries``,
``_diff_sqs``), or with the package's kernels each in one pass (``somatize._kernels``). All
must give each tensor's own sums: here against float64 sums of each
tensor alone, on a mix of sizes on both sides of the bound, an empty tensor, zeros, and a
non-finite entry (whose Σx² must come out non-finite, so watch measures it again). Fixtures:
seeded random tensors, made here."""

import pytest
import torch

import somatize.torch as st


# (path, CPU_FAST_PATHS, NATIVE_KERNELS): the kernels, torch's fast paths, the device path.
PATHS = {"native": (True, True), "eager": (True, False), "device": (False, False)}


@pytest.fixture(params=sorted(PATHS))
def path(request, monkeypatch):
    fast, native = PATHS[request.param]
    monkeypatch.setattr(st, "CPU_FAST_PATHS", fast)
    monkeypatch.setattr(st, "NATIVE_KERNELS", native)
    return request.param


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


def test_each_tensor_has_its_own_sums(path):
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


def test_a_weight_read_for_columns_keeps_its_column_sums(path):
    ts = tensors()
    out, columns = st._summaries(ts, reads={7})  # a 17 x 5 weight: small, but read
    assert set(columns) == {7}
    assert torch.allclose(columns[7], ts[7].abs().sum(0).double())
    assert abs(out[0, 7].item() - ts[7].abs().sum().item()) <= 1e-5


def test_a_non_finite_entry_makes_its_squares_non_finite_and_no_other(path):
    ts = tensors()
    ts[0][1] = float("nan")
    ts[5][3, 3] = float("inf")
    out, _ = st._summaries(ts, zeros=True)
    finite = torch.isfinite(out[3]).tolist()
    assert finite == [i not in (0, 5) for i in range(len(ts))], finite


def test_update_norms_are_each_pairs_own(path):
    g = torch.Generator().manual_seed(4)
    before = tensors()
    after = [t + 1e-3 * torch.randn(t.shape, generator=g) for t in before]
    got = st._diff_sqs(before, after).tolist()
    for i, (b, a) in enumerate(zip(before, after)):
        want = (b.double() - a.double()).square().sum().item()
        assert abs(got[i] - want) <= 1e-5 * max(want, 1e-12), (i, got[i], want)


def test_the_kernels_sum_what_they_take_and_only_that(monkeypatch):
    # The installed package carries its kernels, and _summaries hands them every contiguous
    # float32 CPU tensor (each once, with its copy and columns) and nothing else: a transposed
    # view and a float64 tensor take torch ops and still get their own sums.
    assert st._native.KERNELS is not None, "the installed package lacks its kernels"
    seen = []
    real = st._native.abs_sums

    def counted(t, copy_to=None, columns=False):
        seen.append((tuple(t.shape), copy_to is not None, columns))
        return real(t, copy_to=copy_to, columns=columns)

    monkeypatch.setattr(st._native, "abs_sums", counted)
    ts = tensors()
    odd = [torch.randn(40, 30).T, torch.randn(50, dtype=torch.float64)]
    both = ts + odd
    copies = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in both]
    out, columns = st._summaries(both, zeros=True, copies=copies, reads={5, len(ts)})
    taken = [tuple(t.shape) for t in ts if t.numel()]
    assert [s for s, _, _ in seen] == taken, seen
    assert all(c for _, c, _ in seen) and [r for _, _, r in seen].count(True) == 1, seen
    assert set(columns) == {5, len(ts)}
    assert torch.allclose(columns[5], ts[5].abs().sum(0).double())
    assert torch.allclose(columns[len(ts)], odd[0].abs().sum(0).double())
    for i, t in enumerate(both):
        want = reference(t)
        for row, (got, w) in enumerate(zip(out[:, i].tolist(), want)):
            assert abs(got - w) <= 1e-6 * max(abs(w), 1.0), (i, tuple(t.shape), row, got, w)
        assert torch.equal(copies[i], t), i


def test_the_kernels_refuse_what_they_cannot_read():
    # Addresses are checked before they are read: a bad one is a ValueError, never a crash.
    k = st._native.KERNELS
    t = torch.randn(100)
    cases = [  # (call, what the error says)
        (lambda: k.abs_sums(0, 10), "null"),
        (lambda: k.abs_sums(t.data_ptr() + 1, 10), "aligned"),
        (lambda: k.abs_sums(t.data_ptr(), 1 << 62), "too many"),
        (lambda: k.abs_sums(t.data_ptr(), 100, t.data_ptr() + 8), "overlap"),
        (lambda: k.abs_sums(t.data_ptr(), 100, 0, torch.zeros(7, dtype=torch.float64)
                            .data_ptr(), 7), "does not divide"),
        (lambda: k.output_sums(t.data_ptr(), 10, 10, t.data_ptr()), "overlap"),
        (lambda: k.output_sums(t.data_ptr(), 0, 10, torch.empty(50).data_ptr()), "0 × 10"),
        (lambda: k.output_sums(t.data_ptr(), 10, 10, torch.empty(60).data_ptr(), 3), "not 0, 1 or 2"),
    ]
    for call, says in cases:
        with pytest.raises(ValueError, match=says):
            call()
    with pytest.raises(ValueError, match="difference of"):
        st._native.diff_sq(t, torch.randn(99))


def test_the_kernels_give_the_same_bits_on_any_number_of_threads():
    # They take as many threads as torch's pool has; the sums must not depend on it (tensors
    # past several of the kernels' segments, a weight read for columns, an output wider than
    # a tile of units).
    g = torch.Generator().manual_seed(5)
    ts = [torch.randn(1000, 1100, generator=g), torch.randn(700_001, generator=g)]
    after = [t + 1e-3 * torch.randn(t.shape, generator=g) for t in ts]
    x = torch.randn(64, 3 * 4096 + 11, generator=g)
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            copies = [torch.empty_like(t) for t in ts]
            out, columns = st._summaries(ts, zeros=True, copies=copies, reads={0})
            got.append((out, columns[0], st._diff_sqs(ts, after),
                        st._summarise_output(x, "tanh")["body"]))
    finally:
        torch.set_num_threads(before)
    for threads, other in zip((2, 3), got[1:]):
        for what, a, b in zip(("sums", "columns", "updates", "output"), got[0], other):
            assert torch.equal(a, b), f"{what}: {threads} threads differ from one"


def test_an_output_whose_sums_overflow_float32_takes_the_masked_path(path):
    # Finite entries of 1e18 whose float32 sums of squares overflow (a kernel's float64 sums
    # do not, but the wire carries float32): the float64 masked path's form, its exact sums.
    x = torch.full((192, 3), 1e18)
    x[::2] = -1e18
    got = st._summarise_output(x, None)
    assert got["form"] == "counts", got["form"]
    assert torch.isfinite(got["body"]).all(), got["body"]
    # (Σ(x − mean)²: 192 entries 1e18 from their mean 0, 1e18 as float32 has it.)
    assert got["body"][3].tolist() == pytest.approx([192 * 1e36] * 3, rel=1e-6)
