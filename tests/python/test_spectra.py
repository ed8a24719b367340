"""The rank summaries torch computes on the device (``somatize.torch._spectra``: eigenvalues of
each sample's Gram matrix, one batched call) against the definition (linalg.rs: effective rank,
srank_0.01 and stable rank of the sample's singular values, here from an exact SVD in float64)
on matrices built to be hard for a Gram matrix: rank-deficient, with dead columns, wide, tall,
tiny and huge, all-zero and non-finite. Fixtures: seeded random low-rank products, made here."""

import math

import pytest
import torch

import somatize.torch as st


def definition(m):
    """(erank, srank, stable) of ``m``'s singular values as linalg.rs defines them, or None."""
    sv = torch.linalg.svdvals(m).tolist()
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
    rows = st._spectra([m for _, _, m in named]).tolist()
    worst = worst32 = 0.0
    for (name, f32, m), (finite, positive, erank, srank, stable) in zip(named, rows):
        want = definition(m)
        assert finite == 1.0, name
        if want is None:
            assert positive == 0.0, (name, positive)
            continue
        assert positive == 1.0, name
        werank, wsrank, wstable = want
        off = abs(erank - werank) / werank
        worst = max(worst, off)
        worst32 = max(worst32, off) if f32 else worst32
        assert srank == wsrank, (name, srank, wsrank)
        assert abs(stable - wstable) <= 1e-9 * wstable, (name, stable, wstable)
    # Exactly low-rank float64 matrices are the worst (2.5e-6 when this was written); the
    # golden test compares torch with Rust at 1e-5.
    assert worst < 5e-6, worst
    assert worst32 < 2e-6, worst32


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_sample_has_no_ranks_and_leaves_the_others_alone(bad):
    g = torch.Generator().manual_seed(1)
    good = torch.randn(64, 128, generator=g, dtype=torch.float64)
    broken = good.clone()
    broken[3, 7] = bad
    rows = st._spectra([good, broken, torch.zeros(10, 10, dtype=torch.float64)]).tolist()
    assert rows[1][0] == 0.0  # no singular values, as rank.rs
    assert rows[0][:2] == [1.0, 1.0]
    assert abs(rows[0][2] - definition(good)[0]) <= 1e-6 * rows[0][2]
    assert rows[2][:2] == [1.0, 0.0]  # all zero: singular values, but no ranks
