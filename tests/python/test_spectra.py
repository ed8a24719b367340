"""The singular values torch takes on the device (``somatize.torch._spectra``: eigenvalues of
each sample's Gram matrix, one batched call), read as Rust reads them (linalg.rs: effective
rank, srank_0.01 and stable rank of the singular values) against the same read of an exact
SVD in float64,
on matrices built to be hard for a Gram matrix: rank-deficient, with dead columns, wide, tall,
tiny and huge, all-zero and non-finite. Fixtures: seeded random low-rank products, made here."""

import math

import pytest
import torch

import somatize.torch as st


def definition(m):
    """(erank, srank, stable) of ``m``'s singular values as linalg.rs defines them, or None."""
    return ranks(torch.linalg.svdvals(m).tolist())


def ranks(sv):
    """(erank, srank, stable) of singular values as linalg.rs defines them, or None."""
    total = sum(sv)
    if not total > 0:
        return None
    erank = math.exp(-sum((x / total) * math.log(x / total) for x in sv if x / total > 0))
    running, k = 0.0, len(sv)
    for i, x in enumerate(sorted(sv, reverse=True)):
        running += x
        if running / total >= 1 - st.SRANK_DELTA:
            k = i + 1
            break
    top = max(sv)
    return erank, k, sum((x / top) ** 2 for x in sv)


def cases():
    g = torch.Generator().manual_seed(0)
    out = []
    for rank in (1, 2, 5, 20, 64):
        for scale in (1e-200, 1e-30, 1.0, 1e30, 1e200):
            for shape in ((64, 128), (64, 16), (7, 128), (64, 64), (1, 5)):
                r = min(rank, *shape)
                a = torch.randn(shape[0], r, generator=g, dtype=torch.float64) @ \
                    torch.randn(r, shape[1], generator=g, dtype=torch.float64)
                if abs(scale) <= 1e30:
                    a = (a.float() * scale).double()  # as a float32 tensor's sample is
                else:
                    a = a * scale  # a float64 model's
                dead = a.clone()
                dead[:, ::3] = 0
                f32 = abs(scale) <= 1e30
                out += [(f"rank {r} x{scale:g} {shape}", f32, a),
                        (f"dead {r} x{scale:g} {shape}", f32, dead)]
    return out


def test_rank_summaries_match_an_exact_svd():
    named = cases()
    rows = st._spectra([m for _, _, m in named])
    assert rows.shape == (len(named), st.SPECTRUM_MAX_ROWS)
    worst = worst32 = 0.0
    for (name, f32, m), sv in zip(named, rows.tolist()):
        k = min(m.shape)
        assert all(x == 0.0 for x in sv[k:]), name  # only min(rows, cols) are the sample's
        sv = sv[:k]
        assert all(math.isfinite(x) and x >= 0 for x in sv), name
        assert sv == sorted(sv, reverse=True), name
        want, got = definition(m), ranks(sv)
        if want is None:
            assert got is None, (name, sv)
            continue
        werank, wsrank, wstable = want
        erank, srank, stable = got
        off = abs(erank - werank) / werank
        worst = max(worst, off)
        worst32 = max(worst32, off) if f32 else worst32
        assert srank == wsrank, (name, srank, wsrank)
        assert abs(stable - wstable) <= 1e-9 * wstable, (name, stable, wstable)
        # and the largest singular value itself, scale restored
        assert abs(sv[0] - torch.linalg.svdvals(m)[0].item()) <= 1e-9 * sv[0], name
    # Exactly low-rank float64 matrices are the worst (2.5e-6 when this was written); the
    # golden test compares torch with Rust at 1e-5.
    assert worst < 5e-6, worst
    assert worst32 < 2e-6, worst32


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_sample_has_no_singular_values_and_leaves_the_others_alone(bad):
    g = torch.Generator().manual_seed(1)
    good = torch.randn(64, 128, generator=g, dtype=torch.float64)
    broken = good.clone()
    broken[3, 7] = bad
    rows = st._spectra([good, broken, torch.zeros(10, 10, dtype=torch.float64)]).tolist()
    assert all(math.isnan(x) for x in rows[1])  # no singular values, as rank.rs
    assert abs(ranks(rows[0])[0] - definition(good)[0]) <= 1e-6 * definition(good)[0]
    assert rows[2] == [0.0] * st.SPECTRUM_MAX_ROWS  # all zero: singular values, no ranks
