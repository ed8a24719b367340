"""The CPU kernels (``somatize._kernels``, python/kernels/): a float32 tensor's sums in one pass.

``somatize.torch`` calls these on contiguous float32 CPU tensors in place of several torch
passes (docs/recording.md, "The package"); every other tensor takes torch ops. The kernels
read a tensor by its address, so each function here checks what it hands them (dtype, device,
contiguity, lengths) and keeps the tensors alive for the call. They use as many threads as
torch's intra-op pool has (``torch.get_num_threads()``), and give the same bits on any number. Without the extension (a source
checkout on ``sys.path`` rather than an installed package) ``KERNELS`` is None and torch ops
do all of it."""

import math

import torch

try:
    from . import _kernels as KERNELS
except ImportError:  # not built: a checkout's python/ on sys.path
    KERNELS = None

# The scale codes of ``_kernels.output_sums``.
_SCALES = {None: 0, "tanh": 1, "sigmoid": 2}


def takes(t):
    """Whether the kernels read ``t``: built, a contiguous float32 tensor on the CPU."""
    return (KERNELS is not None and t.device.type == "cpu" and t.dtype == torch.float32
            and t.is_contiguous())


def abs_sums(t, copy_to=None, columns=False):
    """(Σ|t|, max |t|, count of non-zeros, Σt²) as floats, with ``copy_to`` (a contiguous
    float32 CPU tensor of ``t``'s shape) written in the same pass, and with ``columns`` the
    float64 Σ|t| of each column of ``t`` as a matrix of its first axis's rows (None for a
    tensor of fewer than two axes). ``t`` must be one ``takes`` accepts."""
    n = t.numel()
    copy = 0
    if copy_to is not None:
        if not takes(copy_to) or copy_to.shape != t.shape:
            raise ValueError(f"copy of {tuple(copy_to.shape)} {copy_to.dtype} for a "
                             f"{tuple(t.shape)} float32 tensor")
        copy = copy_to.data_ptr()
    cols, width = None, 0
    if columns and t.dim() >= 2:
        width = math.prod(t.shape[1:])
        cols = torch.zeros(width, dtype=torch.float64)
    sums = KERNELS.abs_sums(t.data_ptr(), n, copy, 0 if cols is None else cols.data_ptr(),
                            width, torch.get_num_threads())
    return sums, cols


def diff_sq(a, b):
    """‖a − b‖₂² (a float) of two tensors ``takes`` accepts, of one shape."""
    if a.shape != b.shape:
        raise ValueError(f"difference of {tuple(a.shape)} and {tuple(b.shape)}")
    return KERNELS.diff_sq(a.data_ptr(), b.data_ptr(), a.numel(), torch.get_num_threads())


def output_sums(x2, scale, bound):
    """The ``signs`` form's sums of a (rows × units) output ``takes`` accepts: a (fields ×
    units) float32 tensor (Σ(x − x₀), Σ(x − x₀)², Σ|x|, Σ sign x, Σ |sign x|, and with a
    ``scale`` the saturated count against ``bound``), or None when a unit's sums are not
    finite (an entry was NaN or infinite)."""
    rows, units = x2.shape
    out = torch.empty(5 + (scale is not None), units, dtype=torch.float32)
    ok = KERNELS.output_sums(x2.data_ptr(), rows, units, out.data_ptr(), _SCALES[scale],
                             float(bound), torch.get_num_threads())
    return out if ok else None
