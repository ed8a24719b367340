"""somatize.torch: record PyTorch training, measured where the tensors are.

    import somatize.torch as st
    watch = st.watch(model, optimizer, store="runs", run="tuesday")   # or under `somatize record`
    for x, y in batches:
        loss = loss_fn(model(x), y); optimizer.zero_grad(); loss.backward(); optimizer.step()
        watch.step(loss)
    watch.close()                       # also on exit and on an exception

Per node (every module that owns parameters, and every leaf module) and step, the health
metrics of ``src/health/measure.rs`` are computed with torch ops on the tensors' own device,
in float32 (bf16/fp16 tensors are widened on the device), and copied to the host once per step
as one small float64 tensor; only numbers cross to the companion, in the frame's ``stats``.

What is measured when (docs/recording.md):

- every step (every ``norms_every`` steps, default 1; a step that is neither this nor a
  full or kept one is not recorded): ``param_norm``, ``grad_norm``, non-finite counts
  (``nan``, ``inf``, ``nonfinite``) and the loss;
- every ``every`` steps (default 10; 1: every step; 0: never), the full summaries: also
  ``param_absmax``, ``param_mean_abs``, ``grad_mean_abs``, ``grad_zero_fraction``, the update
  (``update_norm``, ``update_ratio``, ``update_steps``: the optimizer step that produced this
  forward's parameters, measured around it by the optimizer's step hooks, as the
  whole-tensor path reports it), and the outputs' per-unit summaries (``act_mean``,
  ``act_var``, ``act_mean_sq``, ``act_zero_fraction``, ``units``, dead, dormant, saturated
  and ignored units: ignored judged on the node whose output the next Linear/Conv-like node
  reads, never across a norm), and the singular-value metrics of the update, the gradient
  (``*_erank``, ``*_srank``, ``update_stable_rank``; with the node's output, ``rank_samples``,
  ``rank_dims`` = min(rows, cols, samples) and ``*_erank_fraction``) and the output as a
  (positions × units) matrix (``feature_*``), each of a sample of at most 64 rows and 128
  columns at an even stride (rank.rs's), all of a step's in one batched decomposition;
- every ``keep_tensors_every`` steps (0: never): the whole tensors ``param.*``, ``grad.*`` and
  ``act.*``, for figures and offline analysis.

The unit axis of an output is src/health/layout.rs's: axis 1 for ``Conv*``, ``BatchNorm*``,
``InstanceNorm*``, ``GroupNorm``, pooling and the other channel-first kinds (``N,C,…``);
activations, dropout, identity and flatten take the axis of the node before them
(declaration order) when their output has its rank; else the last axis (``Linear``,
``LayerNorm``, ``Embedding``, recurrent and attention outputs: ``…,D``); 0-d and 1-d outputs are
one unit. Each fact declares it as a ``layout`` (``NCHW``, ``NCL``, ``ND``, ``NTD``, …). A
module whose output is a tuple (GRU, LSTM, MultiheadAttention) is measured on its
first element. A module called more than once in a forward is measured over all its calls.
"""

import atexit
import math
import os
import re
import socket
import sys
import time
import warnings
import weakref

import torch

from . import _channel, _native
from ._companion import Companion

# The constants summarising needs (src/health/measure.rs, rank.rs; docs/health.md): past what
# an output counts as saturated; the most entries a CKA intermediate (n x n or features²) may
# hold; the most rows and columns of a matrix whose singular values are taken (a longer side
# is read at an even stride). What the metrics make of the summaries (dead, dormant, ignored
# units, the ranks) is Rust's alone (src/health/metrics.rs).
SATURATED_OUTPUT = 0.97
CKA_MAX_ENTRIES = 1 << 22
SPECTRUM_MAX_ROWS = 64
SPECTRUM_MAX_COLS = 128

# The default schedule of full summaries: chosen for the overhead target (scripts/bench-torch.sh).
DEFAULT_EVERY = 10

# verdict/src/kinds.rs: the kinds ``classify`` knows.
_RELU_LIKE = {"relu", "relu6", "threshold"}
_SOFT_RELU = {"leakyrelu", "prelu", "rrelu", "elu", "selu", "celu", "gelu", "quickgelu", "silu",
              "swish", "mish", "hardswish"}
_TANH_LIKE = {"tanh", "hardtanh", "softsign"}
_SIGMOID_LIKE = {"sigmoid", "hardsigmoid"}
# src/health/layout.rs: channel-first kinds (by prefix), element-wise kinds besides the
# activations, and kinds that only mask or reshape their input.
_CHANNEL_FIRST = ("conv", "batchnorm", "syncbatchnorm", "instancenorm", "groupnorm",
                  "localresponsenorm", "maxpool", "avgpool", "adaptiveavgpool",
                  "adaptivemaxpool", "lppool", "fractionalmaxpool", "maxunpool", "dropout1d",
                  "dropout2d", "dropout3d", "featurealphadropout", "pixelshuffle",
                  "pixelunshuffle", "channelshuffle", "upsample", "zeropad", "constantpad",
                  "reflectionpad", "replicationpad", "circularpad")
_ELEMENTWISE = {"dropout", "alphadropout", "identity", "softplus", "softshrink", "hardshrink",
                "tanhshrink", "logsigmoid", "threshold"}
_TRANSPARENT = {"dropout", "alphadropout", "dropout1d", "dropout2d", "dropout3d",
                "featurealphadropout", "identity", "flatten", "unflatten"}
# Layout letters (src/health/layout.rs reads the unit axis at C, else D): the axes between
# the batch and the units, by count.
_BETWEEN = {0: "", 1: "T", 2: "HW", 3: "THW"}
_SPATIAL = {1: "L", 2: "HW", 3: "DHW"}
_SPARE = "ABEGIJKMOPQRSUVXYZ"  # no C, D or N; letters a layout may use for any other axis


class WatchError(ValueError):
    """Something given to ``watch`` or ``watch.step`` cannot be measured (the message names what)."""


def _normal(kind):
    """A kind as the tables spell it: the last path segment, lower case, no ``_`` or ``-``."""
    last = re.split(r"[.:/]", kind)[-1]
    return last.replace("_", "").replace("-", "").lower()


def _classify(kind):
    """verdict/src/kinds.rs ``classify``: relu, soft, tanh, sigmoid, norm or other."""
    k = _normal(kind)
    if k in _RELU_LIKE:
        return "relu"
    if k in _SOFT_RELU:
        return "soft"
    if k in _TANH_LIKE:
        return "tanh"
    if k in _SIGMOID_LIKE:
        return "sigmoid"
    if "norm" in k and "normal" not in k:
        return "norm"
    return "other"


def _kind_class(kind):
    """The scale saturation is judged on: ``tanh``, ``sigmoid`` or None."""
    c = _classify(kind)
    return c if c in ("tanh", "sigmoid") else None


def is_channel_first(kind):
    """layout.rs ``is_channel_first``: the kind's output is ``N,C,…`` by default."""
    return _normal(kind).startswith(_CHANNEL_FIRST)


def is_elementwise(kind):
    """layout.rs ``is_elementwise``: an activation, dropout or identity (keeps its input's
    layout)."""
    return _classify(kind) in ("relu", "soft", "tanh", "sigmoid") or _normal(kind) in _ELEMENTWISE


def is_transparent(kind):
    """layout.rs ``is_transparent``: passes its input on but for a mask or a reshape."""
    return _normal(kind) in _TRANSPARENT


def is_consumer(kind):
    """layout.rs ``is_consumer``: reads the units before it as a linear map."""
    return (_classify(kind) != "norm" and "embedding" not in _normal(kind)
            and not is_elementwise(kind) and not is_transparent(kind))


def unit_axis(kind, ndim, rule=None):
    """The unit axis of a ``kind`` module's output of ``ndim`` axes (None: one unit), by
    ``rule`` (``first``: axis 1, ``last``: the last axis) or, without one, by the kind."""
    if ndim < 2:
        return None
    if rule is None:
        rule = "first" if is_channel_first(kind) else "last"
    return 1 if rule == "first" else ndim - 1


def layout(rule, ndim):
    """The layout string of an output of ``ndim`` axes whose units are at ``rule``: ``NCL``,
    ``NCHW``, ``NCDHW`` (channel-first), ``ND``, ``NTD``, ``NHWD`` (units last); None for 0-d
    and 1-d outputs (one unit) and past 16 axes."""
    if ndim < 2 or ndim > 16:
        return None
    if rule == "first":
        rest = _SPATIAL.get(ndim - 2) or _SPARE[:ndim - 2]
        return "NC" + rest
    between = _BETWEEN.get(ndim - 2) or _SPARE[:ndim - 2]
    return "N" + between + "D"


def _sum_dtype(t):
    """The dtype a tensor's sums are taken in: float32 (bf16 and fp16 widen to it), a float64
    tensor's in float64 (a norm refuses to narrow)."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def _norms(tensors, ord):
    wide = torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32
    return torch._foreach_norm(tensors, ord, dtype=wide)


def _first_tensor(output):
    """The tensor a module's output is measured on: itself, or a tuple's first element."""
    while isinstance(output, (tuple, list)) and output:
        output = output[0]
    return output if isinstance(output, torch.Tensor) else None


_SCRATCH = {}

# The CPU's fast paths (a reused scratch buffer, cache-sized blocks, sums by matrix products)
# serve float32 tensors on the CPU; every other tensor (a GPU's, bf16/fp16) takes the device
# path: whole-tensor torch ops, masks for non-finite values. Off, the device path runs on the
# CPU too (tests/python/test_golden.py checks it against Rust as it does the fast paths).
CPU_FAST_PATHS = True


# On the CPU's fast paths a contiguous float32 tensor is summed by the package's kernels
# (``somatize._kernels``, python/kernels/: one pass from memory for all of a tensor's sums)
# when they are built; off, or without them, by the torch ops below (tests/python/
# test_golden.py checks all three paths against Rust).
NATIVE_KERNELS = True


def _cpu_fast(t):
    """Whether ``t`` takes the CPU's fast paths (``CPU_FAST_PATHS``)."""
    return CPU_FAST_PATHS and t.device.type == "cpu" and t.dtype == torch.float32


def _native_takes(t):
    """Whether the package's kernels sum ``t`` (``NATIVE_KERNELS``, a fast-path tensor)."""
    return NATIVE_KERNELS and CPU_FAST_PATHS and t.numel() > 0 and _native.takes(t)


def _scratch(rows, shape):
    """A row of ones for ``rows`` and a float32 scratch tensor of ``shape`` (CPU), reused."""
    ones = _SCRATCH.get(("ones", rows))
    if ones is None:
        ones = _SCRATCH[("ones", rows)] = torch.ones(1, rows)
    numel = math.prod(shape)
    flat = _SCRATCH.get("flat")
    if flat is None or flat.numel() < numel:
        flat = _SCRATCH["flat"] = torch.empty(numel)
    return ones, flat[:numel].view(shape)


def _absmax(t):
    """max |t| in float32, 0 for an empty tensor (aminmax: on the CPU about 20 times faster
    than the multi-tensor ∞-norm)."""
    if not t.numel():
        return torch.zeros((), dtype=torch.float32, device=t.device)
    return torch.amax(torch.stack(torch.aminmax(t)).abs()).to(torch.float32)


# The block a large tensor's |x| is taken in on the CPU: 1 MiB of float32, so that the sum,
# the max and the count read it from the cache, not from memory.
_ABS_BLOCK = 1 << 18

# The block of whole rows an output is summarised in on the CPU (``_summarise_output``): about
# 512 KiB of float32, so its five passes after the first read it from the cache (half the
# time of whole-tensor passes on a 1024 × 1024 output; bench/torch_lm.py).
_OUTPUT_BLOCK = 1 << 17


def _abs_summaries(t, zeros=False, copy_to=None, columns=False):
    """[Σ|t|, max |t|] (max 0 for an empty tensor), then with ``zeros`` the count of entries
    that are not zero, then Σt², as 0-d float32 tensors (the count float64),
    then with ``columns`` Σ|t| of each column of ``t`` as a matrix of its first axis's rows
    (float64; what the per-unit mean |w| of a weight reading a layer is taken from,
    ``_columns``).

    On the CPU |t| goes into the scratch buffer a block at a time (``_ABS_BLOCK``, whole rows
    with ``columns``), and the sum, the max, the count (a sum of signs), the sum of squares
    and the column sums read each block while it is in the cache: one pass of ``t`` from
    memory, about half the cost of separate reductions (a quarter on a 124M-parameter
    model's embedding). A large tensor's block sums are added in float64 (its count is
    exact at any size). With ``copy_to`` (a tensor of ``t``'s shape) ``t`` is also copied
    there in the same pass, each block while it is in the cache. (``torch.amax`` rather than
    ``Tensor.max()``: the same value, NaN included, 2.5 times faster on a block in the
    cache.)"""
    width = math.prod(t.shape[1:]) if columns and t.dim() >= 2 else None
    if not t.numel():
        z = torch.zeros((), dtype=torch.float32, device=t.device)
        out = [z] * (3 + zeros)
        if columns:
            out.append(torch.zeros(width or 0, dtype=torch.float64, device=t.device))
        return out
    if _cpu_fast(t):
        flat = t.reshape(-1)
        into = None if copy_to is None else copy_to.view(-1)
        step = _ABS_BLOCK if width is None else max(1, _ABS_BLOCK // width) * width
        _, block = _scratch(1, (min(step, flat.numel()),))
        sums, maxs, counts, sqs, cols = [], [], [], [], None
        for start in range(0, flat.numel(), step):
            part = flat[start:start + step]
            buf = torch.abs(part, out=block[:part.numel()])
            if into is not None:
                into[start:start + step].copy_(part)
            sums.append(buf.sum())
            maxs.append(torch.amax(buf))
            sqs.append(torch.dot(buf, buf))
            if width is not None:
                c = buf.view(-1, width).sum(0).to(torch.float64)
                cols = c if cols is None else cols.add_(c)
            if zeros:
                counts.append(buf.sign_().sum())
        out = [torch.stack(sums).sum(dtype=torch.float64).to(torch.float32),
               torch.amax(torch.stack(maxs))]
        if zeros:
            out.append(torch.stack(counts).sum(dtype=torch.float64))
        out.append(torch.stack(sqs).sum(dtype=torch.float64).to(torch.float32))
        if columns:
            out.append(cols)
        return out
    if copy_to is not None:
        copy_to.copy_(t)
    out = [t.abs().sum(dtype=_sum_dtype(t)), _absmax(t)]
    if zeros:
        out.append(torch.count_nonzero(t).to(torch.float32))
    out.append(torch.linalg.vector_norm(t, dtype=_sum_dtype(t)) ** 2)
    if columns:
        out.append(None if width is None else
                   t.detach().reshape(t.shape[0], -1).abs().sum(0, dtype=torch.float64))
    return out


# A tensor of at most this many entries is summarised with the other small ones of its step
# at once (``_summaries``, ``_diff_sqs``): an operation on a small tensor costs its fixed
# dispatch more than its entries, and a model has dozens (biases, norms' scales).
_SMALL = 1 << 16


def _small(t):
    """Whether ``t`` is summarised with the step's other small tensors (on the CPU's fast
    path)."""
    return _cpu_fast(t) and 0 < t.numel() <= _SMALL


def _split(ts, test):
    """The indices of ``ts`` for which ``test(i, t)`` holds, and the others, in order."""
    yes, no = [], []
    for i, t in enumerate(ts):
        (yes if test(i, t) else no).append(i)
    return yes, no


def _summaries(ts, zeros=False, copies=None, reads=()):
    """The full step's sums of each tensor of ``ts``: a float64 tensor of (3 + ``zeros``) rows
    × len(ts), Σ|t|, max |t|, (with ``zeros`` the count of entries that are not zero,) Σt²,
    and the |w| column sums of the tensors whose index is in ``reads`` (``_abs_summaries``'s
    ``columns``). With ``copies`` (a tensor of each one's shape) each is also copied there.

    A tensor the package's kernels take (``_native_takes``) is summed by them, each in one
    pass from memory with its copy and column sums. Else a large tensor goes through
    ``_abs_summaries`` (one pass, a block at a time); the small ones (``_small``, not read
    for columns) are laid end to end and reduced at once by segment, in float64: about ten
    operations for all of them rather than a dozen each."""
    k = 3 + bool(zeros)
    dev = ts[0].device
    out = torch.empty(k, len(ts), dtype=torch.float64, device=dev)
    columns = {}
    native, rest = _split(ts, lambda i, t: _native_takes(t) and (
        copies is None or _native.takes(copies[i])))
    if native:
        rows = []
        for i in native:
            (l1, mx, nonzero, sq), cols = _native.abs_sums(
                ts[i], copy_to=None if copies is None else copies[i], columns=i in reads)
            rows.append((l1, mx, nonzero, sq) if zeros else (l1, mx, sq))
            if i in reads:
                columns[i] = cols
        out[:, native] = torch.tensor(rows, dtype=torch.float64).T
    small = [i for i in rest if _small(ts[i]) and i not in reads]
    lone = [i for i in rest if not (_small(ts[i]) and i not in reads)]
    if lone:
        per = [_abs_summaries(ts[i], zeros=zeros,
                              copy_to=None if copies is None else copies[i],
                              columns=i in reads) for i in lone]
        out[:, lone] = torch.stack([torch.stack([p[j] for p in per]).to(torch.float64)
                                    for j in range(k)])
        columns.update({i: p[k] for i, p in zip(lone, per) if i in reads})
    if small:
        parts = [ts[i] for i in small]
        if copies is not None:
            torch._foreach_copy_([copies[i] for i in small], parts)
        flat = torch.cat([t.reshape(-1) for t in parts]).abs_().to(torch.float64)
        lengths = torch.tensor([t.numel() for t in parts], device=dev)
        rows = [torch.segment_reduce(flat, "sum", lengths=lengths),
                torch.segment_reduce(flat, "max", lengths=lengths)]
        if zeros:
            rows.append(torch.segment_reduce(torch.sign(flat), "sum", lengths=lengths))
        rows.append(torch.segment_reduce(flat.mul_(flat), "sum", lengths=lengths))
        out[:, small] = torch.stack(rows)
    return out, columns


def _diff_sqs(befores, afters):
    """‖before − after‖₂² of each pair, a float64 vector: by the package's kernels where they
    take both (``_native_takes``); else the small ones (``_small``) subtracted
    in float32 at once and their squares summed by segment in float64, the rest by
    ``_diff_sq``."""
    out = torch.empty(len(befores), dtype=torch.float64, device=befores[0].device)
    native, rest = _split(befores, lambda i, t: _native_takes(t) and _native.takes(afters[i]))
    if native:
        out[native] = torch.tensor([_native.diff_sq(befores[i], afters[i]) for i in native],
                                   dtype=torch.float64)
    small = [i for i in rest if _small(befores[i])]
    lone = [i for i in rest if not _small(befores[i])]
    if lone:
        out[lone] = torch.stack([_diff_sq(befores[i], afters[i]).to(torch.float64)
                                 for i in lone])
    if small:
        d = torch._foreach_sub([befores[i] for i in small], [afters[i] for i in small])
        flat = torch.cat([t.reshape(-1) for t in d]).to(torch.float64)
        lengths = torch.tensor([t.numel() for t in d], device=flat.device)
        out[small] = torch.segment_reduce(flat.mul_(flat), "sum", lengths=lengths)
    return out


def _diff_sq(before, after):
    """‖before − after‖₂² as a 0-d float64 tensor, the difference never written whole: on the
    CPU a block at a time into the scratch buffer (``_ABS_BLOCK``), squared in place and
    summed while it is in the cache, the blocks' sums added in float64. (Not a dot product
    nor the multi-tensor norm: an update is often of one magnitude everywhere, Adam's first
    steps ±lr, and their float32 accumulators then drift by 1e-5 to 2e-4 on 300,000 entries;
    torch's pairwise sum stays within 1e-7.)"""
    if _cpu_fast(before) and before.numel():
        a, b = before.reshape(-1), after.reshape(-1)
        _, block = _scratch(1, (min(a.numel(), _ABS_BLOCK),))
        sqs = []
        for start in range(0, a.numel(), _ABS_BLOCK):
            d = torch.sub(a[start:start + _ABS_BLOCK], b[start:start + _ABS_BLOCK],
                          out=block[:min(_ABS_BLOCK, a.numel() - start)])
            sqs.append(d.mul_(d).sum())
        return torch.stack(sqs).sum(dtype=torch.float64)
    d = (before - after).to(torch.float64)
    return d.mul_(d).sum()


def _units_matrix(x, axis):
    """Output ``x`` as a (positions × units) matrix along ``axis`` (None: one unit), in float32
    (float64 kept): a view when the units are last, else one copy on the device."""
    x = x.detach()
    if not x.is_floating_point():
        x = x.to(torch.float32)
    elif x.dtype != torch.float32 and x.dtype != torch.float64:
        x = x.to(torch.float32)
    ndim = x.dim()
    if axis is None:
        return x.reshape(-1, 1)
    if axis == ndim - 1:
        return x.reshape(-1, x.shape[-1])
    return x.movedim(axis, -1).reshape(-1, x.shape[axis])


def _summarise_output(x2, scale):
    """The per-unit summary of one output as a (positions × units) matrix, on its device, in a
    form the wire carries (src/health/summary.rs ``WireOutput``): ``{"body": (fields × units)
    tensor, "form", "counts": a [nan, nonfinite] tensor or None, "units", "rows"}``. On the
    CPU's fast path, float32 sums (form ``signs``: by the package's kernel in one pass, else
    by matrix products); elsewhere, or with a non-finite value, float64 sums over the finite
    values (form ``counts``)."""
    rows, units = x2.shape
    if _native_takes(x2) and rows < (1 << 24):
        # The package's kernel: every sum of the fast path below in one pass (float64 sums,
        # sent as float32), or None when a value was not finite.
        sums = _native.output_sums(x2, scale, SATURATED_OUTPUT)
        if sums is not None:
            return {"body": torch.cat([x2[0:1], sums]), "form": "signs", "counts": None,
                    "units": units, "rows": rows, "saturated": scale is not None}
    elif _cpu_fast(x2) and 0 < rows < (1 << 24):
        # On the CPU a sync is free: sums around each unit's first value (as measure.rs
        # shifts) by matrix products, and when they are finite every value was (a NaN or an
        # infinity makes its unit's sums non-finite), so no masks are needed. Counts are sums
        # of signs (exact below 2^24 rows): a comparison's bool tensor costs several times
        # more here. Everything goes through one reused scratch buffer, as a fresh tensor of
        # this size costs a page fault per page, a block of whole rows at a time
        # (``_OUTPUT_BLOCK``) so that every pass after the first reads it from the cache.
        step = min(rows, max(1, _OUTPUT_BLOCK // max(units, 1)))
        ones, flat = _scratch(step, (step * units,))
        x0 = x2[0]
        partials = []
        for start in range(0, rows, step):
            xb = x2[start:start + step]
            k = xb.shape[0]
            buf = flat[:k * units].view(k, units)
            row = ones if k == step else ones[:, :k]
            torch.sub(xb, x0, out=buf)
            part = [row @ buf, row @ buf.mul_(buf), row @ torch.abs(xb, out=buf)]
            # Σ sign = positives − negatives and Σ |sign| = positives + negatives: the wire's
            # ``signs`` form, which Rust turns into positives and zeros.
            part.append(row @ torch.sign(xb, out=buf))
            part.append(row @ buf.abs_())
            if scale is not None:
                # |y| > SATURATED_OUTPUT, y = x (tanh) or 2x - 1 (sigmoid), as a sum of signs.
                if scale == "tanh":
                    torch.abs(xb, out=buf)
                else:
                    torch.mul(xb, 2, out=buf).sub_(1).abs_()
                part.append(row @ buf.sub_(SATURATED_OUTPUT).sign_().clamp_(min=0))
            partials.append(torch.cat(part))
        sums = partials[0] if len(partials) == 1 else torch.stack(partials).sum(0)
        if bool(torch.isfinite(sums[1]).all()):
            return {"body": torch.cat([x2[0:1], sums]), "form": "signs", "counts": None,
                    "units": units, "rows": rows, "saturated": scale is not None}
    # Elsewhere, or with a non-finite value: masks, finite values only, in float64; each
    # unit's sums taken around its mean (so the sum around it is 0).
    x2 = x2.to(torch.float64)
    finite = torch.isfinite(x2)
    zero = torch.zeros((), dtype=x2.dtype, device=x2.device)
    xz = torch.where(finite, x2, zero)
    n = finite.sum(dim=0).to(torch.float64)
    mean = xz.sum(dim=0) / n.clamp(min=1)
    d = torch.where(finite, x2 - mean, zero)
    body = [n, mean, torch.zeros_like(mean), (d * d).sum(dim=0), xz.abs().sum(dim=0),
            (xz > 0).sum(dim=0).to(torch.float64), (x2 == 0).sum(dim=0).to(torch.float64)]
    if scale is not None:
        y = xz if scale == "tanh" else xz * 2 - 1
        body.append(((y.abs() > SATURATED_OUTPUT) & finite).sum(dim=0).to(torch.float64))
    counts = torch.stack([torch.isnan(x2).sum(), (~finite).sum()]).to(torch.float64)
    return {"body": torch.stack(body), "form": "counts", "counts": counts, "units": units,
            "rows": rows, "saturated": scale is not None}


def _columns(cols, shape):
    """A weight's |w| column sums (``_abs_summaries``'s ``columns``: one per entry of a row)
    per index of its axis 1, as the wire's ``columns`` has them."""
    inner = math.prod(shape[2:])
    return cols.view(shape[1], inner).sum(1) if inner != 1 else cols


def _masked_columns(w):
    """measure.rs ``summarise_columns`` for a weight with a non-finite entry: Σ|w| and the
    count of finite entries per index of axis 1, finite entries only (float64)."""
    a = w.detach().to(torch.float64).abs()
    finite = torch.isfinite(a)
    a = torch.where(finite, a, torch.zeros((), dtype=a.dtype, device=a.device))
    dims = [0] + list(range(2, a.dim()))
    return a.sum(dim=dims), finite.sum(dim=dims).to(torch.float64)


def _as_matrix(shape):
    """rank.rs ``as_matrix``: (rows, cols) of the first axis by the rest; None for fewer than
    two axes or an empty tensor."""
    if len(shape) < 2:
        return None
    rows, cols = shape[0], math.prod(shape[1:])
    return (rows, cols) if rows > 0 and cols > 0 else None


def _stride(n, most):
    """rank.rs ``spectrum_stride``: the stride a side of ``n`` is read at (at most ``most`` of
    it taken), and how many are taken."""
    stride = max(-(-n // most), 1)
    return stride, -(-n // stride)


def _spectrum_sample(m):
    """The rows and columns of the matrix ``m`` whose singular values are taken (rank.rs's
    strides: at most SPECTRUM_MAX_ROWS rows and SPECTRUM_MAX_COLS columns), as a small copy on
    its device: float32 (bf16 and fp16 widen to it exactly), float64 kept. Rust takes its
    singular values (the SVD whole tensors get), so only this sample crosses to the host."""
    (rs, _), (cs, _) = _stride(m.shape[0], SPECTRUM_MAX_ROWS), _stride(m.shape[1],
                                                                         SPECTRUM_MAX_COLS)
    dtype = torch.float64 if m.dtype == torch.float64 else torch.float32
    return m.detach()[::rs, ::cs].to(dtype, copy=True)


def _cka(x, y):
    """cka.rs ``cka_sums`` on the device: the debiased HSIC estimates [xy, xx, yy] of two
    outputs of the same inputs (samples on axis 0, the rest flattened; columns centred), whose
    CKA Rust takes as xy / √(xx · yy); NaN where Rust has none: samples differ or are under 4,
    an intermediate over CKA_MAX_ENTRIES, a non-finite value."""
    none = torch.full((3,), math.nan, dtype=torch.float64, device=x.device)
    n = x.shape[0] if x.dim() else 1
    if (y.shape[0] if y.dim() else 1) != n or n < 4:
        return none
    xs = x.detach().reshape(n, -1).to(torch.float64)
    ys = y.detach().reshape(n, -1).to(device=x.device, dtype=torch.float64)
    p, q = xs.shape[1], ys.shape[1]
    widest = n if n < max(p, q) else max(p, q)
    if widest * widest > CKA_MAX_ENTRIES or p == 0 or q == 0:
        return none
    xc, yc = xs - xs.mean(0), ys - ys.mean(0)
    dx, dy = (xc * xc).sum(1), (yc * yc).sum(1)
    if n < max(p, q):
        k, l = xc @ xc.T, yc @ yc.T
        xy, xx, yy = (k * l).sum(), (k * k).sum(), (l * l).sum()
    else:
        xy, xx, yy = ((yc.T @ xc) ** 2).sum(), ((xc.T @ xc) ** 2).sum(), ((yc.T @ yc) ** 2).sum()

    def debiased(kl, dk, dl):
        return kl - n / (n - 2) * (dk * dl).sum() + dk.sum() * dl.sum() / ((n - 1) * (n - 2))

    sums = torch.stack([debiased(xy, dx, dy), debiased(xx, dx, dx), debiased(yy, dy, dy)])
    ok = torch.isfinite(xs).all() & torch.isfinite(ys).all()
    return torch.where(ok, sums, none)


class _Node:
    __slots__ = ("name", "kind", "module", "params", "scale", "ndim", "rule", "calls", "began",
                 "call_began", "took", "next_weight", "rank_i", "rank_shape", "feature", "index",
                 "inherits", "own_rule", "ndim_now", "rule_now", "deferred", "samples")

    def __init__(self, name, kind, module, params):
        self.name, self.kind, self.module, self.params = name, kind, module, params
        self.scale = _kind_class(kind)
        # The unit-axis rule (layout.rs unit_rules): element-wise and transparent kinds take
        # the rule of the nearest node before them (declaration order) with an output of the
        # same rank; others have their kind's.
        self.inherits = is_elementwise(kind) or is_transparent(kind)
        self.own_rule = "first" if is_channel_first(kind) else "last"
        self.ndim = None        # the rank and rule of its output when last seen (the facts')
        self.rule = None
        self.ndim_now = None    # this step's: None until its output is seen
        self.rule_now = None    # None while it cannot be told yet (the output then deferred)
        self.deferred = []      # this step's outputs kept (on the device) until the rule is known
        self.samples = 0        # this step's positions per unit (the rank bound's samples)
        self.index = 0
        self.calls = 0
        self.began = None
        self.call_began = None
        self.took = 0
        self.next_weight = None
        self.rank_i = None      # the weight whose update and gradient get ranks (_param_list)
        self.rank_shape = None  # its (rows, cols)
        self.feature = None     # this step's output sample for its spectrum, on the device


def _unwrapped(model):
    """The model the user wrote, under torch.compile's and the data-parallel wrappers: the
    hooks go on the original modules, and the nodes are named as in a run of one process."""
    while isinstance(model, torch.nn.Module):
        if hasattr(model, "_orig_mod"):  # torch.compile
            model = model._orig_mod
        elif isinstance(model, (torch.nn.parallel.DistributedDataParallel,
                                torch.nn.DataParallel)):
            model = model.module
        else:
            break
    return model


class Watch:
    """What ``watch`` returns: call ``step(loss)`` once per training step (after
    ``optimizer.step()``), and ``close()`` at the end (also done at exit, with the error when
    the script dies of an exception, and by ``with``)."""

    def __init__(self, model, optimizer=None, store=None, run=None, *, every=None,
                 norms_every=1, keep_tensors_every=0, writer=None, channel=None, durable=True,
                 apart=()):
        model = _unwrapped(model)
        if not isinstance(model, torch.nn.Module):
            raise WatchError(f"watch(model): a torch.nn.Module, not {type(model).__name__}")
        if not any(True for _ in model.parameters()):
            raise WatchError(f"watch(model): {type(model).__name__} has no parameters to watch")
        self.every = int(every if every is not None else DEFAULT_EVERY)
        self.keep_tensors_every = int(keep_tensors_every or 0)
        if self.every < 0 or self.keep_tensors_every < 0:
            raise WatchError("every and keep_tensors_every are step counts (0: never)")
        self.norms_every = int(norms_every)
        if self.norms_every < 1:
            raise WatchError(f"norms_every is a step count of at least 1, not {norms_every!r}")
        self.model = model
        self.optimizer = optimizer
        self.forward = 0
        self.closed = False
        self._warned = False
        self._error = None
        self._companion = None
        self._nodes = []
        self._by_module = {}
        self._handles = []
        self._units = {}
        self._summaries = {}  # this step's output summaries by tensor, for a repeated one
        self._acts = {}
        self._pending = None
        self._params_now = None
        self._before = None
        self._snapshot = None        # the forward whose parameters were copied before its step
        self._pending_forward = None  # the forward the measured update (_pending) belongs to
        self._grad_sv = {}
        self._columns = {}  # id(weight): its |w| column sums this full step (_abs_summaries)
        self._pending_sv = {}
        self._start = None
        self.last_summary = None  # the last step's summary as sent: (structure, numbers)
        self._build_nodes()
        self._apart = []
        for pair in apart or ():
            pair = tuple(pair)
            if len(pair) != 2 or not all(isinstance(n, str) for n in pair):
                raise WatchError(f"watch(apart=...): pairs of two node names, not {pair!r}")
            unknown = [n for n in pair if n not in self._node_index]
            if unknown:
                raise WatchError(f"watch(apart=...): no node {unknown[0]!r} (nodes: "
                                 f"{', '.join(n.name for n in self._nodes)})")
            self._apart.append(pair)
        self._apart_nodes = {n for pair in self._apart for n in pair}
        self._where = None  # the facts' `where`: the machine and rank, under torch.distributed
        self._outputs = {}  # this full step's last output of each node in an apart pair
        self._chan = self._open(store, run, writer, channel, durable)
        self._hook()
        _live.add(self)

    # -- setup ---------------------------------------------------------------------------

    def _build_nodes(self):
        for name, module in self.model.named_modules():
            if not name:
                continue
            own = [(f"{name}.{p}", t) for p, t in module.named_parameters(recurse=False)]
            leaf = not any(True for _ in module.children())
            if own or leaf:
                node = _Node(name, type(module).__name__, module, own)
                self._nodes.append(node)
                self._by_module[id(module)] = node
        top = [(p, t) for p, t in self.model.named_parameters(recurse=False)]
        if top:
            # As in the dump convention, `param.<leaf>` belongs to no node.
            warnings.warn(
                f"somatize: parameters {', '.join(p for p, _ in top)} belong to the model "
                "itself, not to a named submodule, and are not measured (wrap them in a "
                "module to measure them)", RuntimeWarning, stacklevel=3)
        if not self._nodes or not any(n.params for n in self._nodes):
            raise WatchError(f"watch(model): {type(self.model).__name__} has no parameters in "
                             "a submodule to watch")
        # forward.rs next_weights: a node's units are judged by the weight of the first node
        # after it, skipping transparent ones (which get none), when that node is a consumer
        # (Linear, Conv, …: not a norm, an embedding or an element-wise kind).
        nxt = None
        for node in reversed(self._nodes):
            if is_transparent(node.kind):
                continue
            node.next_weight = nxt
            w = dict(node.params).get(f"{node.name}.weight")
            nxt = w if w is not None and w.dim() >= 2 and is_consumer(node.kind) else None
        for i, node in enumerate(self._nodes):
            node.index = i
        self._history = False  # whether a step has seen every node's output (or its absence)
        self._misread = set()
        # Each parameter once, in node order: a weight two nodes share (a tied embedding and
        # output layer) is measured, copied and differenced once a step, and reported on each.
        self._param_list = list({id(t): t for n in self._nodes for _, t in n.params}.values())
        self._node_index = {n.name: n for n in self._nodes}
        # Each parameter's keys as a dump names it (`param.<node>.<leaf>`; a shared weight
        # under each of its nodes), its shape and its count of entries.
        keys = {}
        for n in self._nodes:
            for key, t in n.params:
                keys.setdefault(id(t), []).append("param." + key)
        self._param_keys = [keys[id(t)] for t in self._param_list]
        self._param_shapes = [list(t.shape) for t in self._param_list]
        self._param_sizes = [t.numel() for t in self._param_list]
        # Each parameter's place in _param_list (computed once: the steps read it).
        self._param_index = index = {id(t): i for i, t in enumerate(self._param_list)}
        # The weights that read a layer's units (each node's next_weight), by place.
        self._reads = {index[id(n.next_weight)] for n in self._nodes
                       if n.next_weight is not None}
        for node in self._nodes:
            # As measure.rs: the first parameter of two or more axes in key order, as a matrix.
            first = next((t for _, t in sorted(node.params, key=lambda kv: kv[0])
                          if t.dim() >= 2), None)
            if first is not None:
                node.rank_i = index[id(first)]
                node.rank_shape = _as_matrix(tuple(first.shape))

    def _open(self, store, run, writer, channel, durable):
        address = channel if channel is not None else os.environ.get(_channel.CHANNEL_ENV)
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            # Each rank a writer named for its rank, its nodes said to run on its machine
            # and rank (the facts' `where`: fleet and the gantt show the ranks side by side).
            self._where = f"{socket.gethostname()}/rank{dist.get_rank()}"
            if writer is None:
                writer = f"rank{dist.get_rank()}"
        if address:
            chan = _channel.connect(address)
        else:
            if store is None or run is None:
                raise WatchError("watch(store=..., run=...) is needed outside `somatize record`")
            chan = self._start_companion(store, run, writer, durable)
        if chan.enabled and writer is not None and address:
            chan.hello(writer=writer)
        return chan

    def _start_companion(self, store, run, writer, durable):
        self._companion = Companion(store, run, writer=writer, durable=durable)
        return self._companion.channel

    def _hook(self):
        # Under torch.compile the hooks run as Python, not traced: what they measure is the
        # tensors' values (a data-dependent check, the kernels' addresses), which a graph
        # cannot hold, so dynamo would break its graph there anyway, and warn.
        for node in self._nodes:
            m = node.module
            self._handles.append(m.register_forward_pre_hook(
                torch.compiler.disable(self._pre_hook(node))))
            self._handles.append(m.register_forward_hook(
                torch.compiler.disable(self._post_hook(node))))
        if self.optimizer is not None:
            self._handles.append(self.optimizer.register_step_pre_hook(self._step_pre))
            self._handles.append(self.optimizer.register_step_post_hook(self._step_post))

    # -- hooks ---------------------------------------------------------------------------

    def _full(self, forward):
        return self.every > 0 and forward % self.every == 0

    def _recording(self, forward):
        """Whether step ``forward`` is recorded at all: every ``norms_every``-th step, and
        every full or kept one."""
        return (forward % self.norms_every == 0 or self._full(forward)
                or (self.keep_tensors_every > 0 and forward % self.keep_tensors_every == 0))

    def _measuring_acts(self):
        return self._full(self.forward)

    def _keeping(self):
        return self.keep_tensors_every > 0 and self.forward % self.keep_tensors_every == 0

    def _pre_hook(self, node):
        def hook(module, inputs):
            now = time.perf_counter()
            if self._start is None:
                self._start = now
            node.began = now if node.began is None else node.began
            node.call_began = now
        return hook

    def _post_hook(self, node):
        def hook(module, inputs, output):
            node.calls += 1
            now = time.perf_counter()
            node.took += now - (node.call_began if node.call_began is not None else now)
            if self.closed:
                return
            if not (self._measuring_acts() or self._keeping()):
                return
            x = _first_tensor(output)
            if x is None:
                return
            with torch.no_grad():
                node.ndim_now = x.dim()
                node.rule_now = self._rule(node, x.dim(), predict=True)
                if self._measuring_acts():
                    if node.rule_now is None:
                        # The node before it has not run yet in this step: keep the output
                        # (it may be changed in place later) until the step knows.
                        node.deferred.append(x.detach().clone())
                    else:
                        self._measure_output(node, x, node.rule_now)
                if self._keeping():
                    self._acts["act." + node.name] = x.detach()
                if node.name in self._apart_nodes and self._measuring_acts():
                    self._outputs[node.name] = x.detach()
        return hook

    def _rule(self, node, ndim, predict=False):
        """layout.rs ``unit_rules`` for ``node``'s output of ``ndim`` axes: ``first`` or
        ``last``; None when it depends on a node not seen yet. With ``predict``, a node before
        it that has not run yet this step is taken as it was in the last step that measured
        outputs (the rule is checked again in ``step``)."""
        if not node.inherits:
            return node.own_rule
        for b in reversed(self._nodes[:node.index]):
            if b.ndim_now is not None:
                if b.rule_now is None:
                    return None
                return b.rule_now if b.ndim_now == ndim else "last"
            if not predict:
                continue
            if not self._history:
                return None
            if b.ndim is not None:
                return b.rule if b.ndim == ndim else "last"
        return "last"

    def _measure_output(self, node, x, rule):
        """One call's output of ``node``: its per-unit summaries (merged over the step's
        calls), its samples and, for the last call, the singular values of its
        (positions × units) matrix."""
        if x.numel() == 0:
            return  # nothing to measure (as measure.rs: no per-unit sums of an empty output)
        axis = unit_axis(node.kind, x.dim(), rule)
        # A module that hands its input on unchanged (dropout at p = 0 or in eval, identity)
        # outputs the tensor its producer's output was: the same values read the same way
        # are summarised once per step.
        # (The very tensor object, alive, unchanged since: a weak reference, so nothing is
        # kept alive for this and a freed tensor's address never matches.)
        key = (id(x), x._version, axis, node.scale)
        seen = self._summaries.get(key)
        if seen is None or seen[0]() is not x:
            x2 = _units_matrix(x, axis)
            positions, units = x2.shape
            sample = (_spectrum_sample(x2) if axis is not None and positions > 0 and units > 0
                      else None)
            seen = self._summaries[key] = (weakref.ref(x), _summarise_output(x2, node.scale),
                                           sample, positions)
        _, s, feature, positions = seen
        calls = self._units.setdefault(node.name, [])
        if calls and calls[0]["units"] != s["units"]:
            if node.name not in self._misread:
                self._misread.add(node.name)
                warnings.warn(f"somatize: node {node.name}: its output changed its unit count "
                              "between calls of one step; only its first calls' are reported",
                              RuntimeWarning, stacklevel=3)
            return
        node.feature = feature
        node.samples += positions
        calls.append(s)

    def _settle_outputs(self):
        """At the step's end every output is known: each node's rule as unit_rules has it.
        Deferred outputs are measured now; an output measured along a predicted axis that
        turns out wrong (the model's layout changed between steps) is not reported."""
        measuring = self._measuring_acts()
        for node in self._nodes:
            if node.ndim_now is None:
                continue
            rule = self._rule(node, node.ndim_now)
            if node.deferred:
                for x in node.deferred:
                    self._measure_output(node, x, rule)
                node.deferred = []
            elif measuring and unit_axis(node.kind, node.ndim_now, rule) != \
                    unit_axis(node.kind, node.ndim_now, node.rule_now):
                self._units.pop(node.name, None)
                node.feature, node.samples = None, 0
                if node.name not in self._misread:
                    self._misread.add(node.name)
                    warnings.warn(f"somatize: node {node.name}: its unit axis changed from the "
                                  "step before; its outputs are not reported at this step",
                                  RuntimeWarning, stacklevel=3)
            node.rule_now = rule
        if measuring:
            for node in self._nodes:
                node.ndim, node.rule = node.ndim_now, node.rule_now
            self._history = True
        else:
            for node in self._nodes:
                if node.ndim_now is not None:
                    node.ndim, node.rule = node.ndim_now, node.rule_now

    def _measure_params(self):
        """Parameter and gradient sums of this step, on the device (fast path: finite); on a
        full step also Σ|x|, max |x| and the gradients' zeros, and each reading weight's column
        sums; before a full step, the copy of the parameters the next update is measured
        against. Kept in ``_params_now`` until the step sends them."""
        full = self._full(self.forward)
        with torch.no_grad():
            ps = [p.detach() for p in self._param_list]
            # A gradient no optimizer reads (a layer frozen by leaving it out of the optimizer
            # while autograd still fills its .grad, which zero_grad never clears) only piles
            # up: it says nothing about training, and its growth would read as EXPLODING.
            trained = self._trained()
            gi = [i for i, p in enumerate(self._param_list)
                  if p.grad is not None and (trained is None or id(p) in trained)]
            gs = [self._param_list[i].grad.detach() for i in gi]
            # A full forward carries the update its own optimizer step applies (as a dump's
            # `update.*` keys): the parameters are copied before the step, on a full step in
            # the same pass as their summaries.
            copying = self.optimizer is not None and (full or self._keeping())
            if copying and self._before is None:
                self._before = [torch.empty_like(p, memory_format=torch.contiguous_format)
                                for p in ps]
            # On a full step Σx² comes from the same pass as the rest (of each block of |x|),
            # and so do the column sums of |w| of each weight reading a layer's units (taken
            # as the forward used it, before the step); else the 2-norms from one
            # multi-tensor kernel.
            columns = {}
            if full:
                pf, columns = _summaries(ps, copies=self._before if copying else None,
                                         reads=self._reads)
                psq, pfull = pf[2], pf[0:2]
                if gs:
                    gf, _ = _summaries(gs, zeros=True)
                    # (the zeros: entries less the non-zero ones counted)
                    numel = torch.tensor([float(g.numel()) for g in gs], dtype=torch.float64,
                                         device=gf.device)
                    gsq, gfull = gf[3], torch.stack([gf[0], gf[1], numel - gf[2]])
                else:
                    gsq = gfull = None
            else:
                psq = torch.stack(_norms(ps, 2)).to(torch.float64) ** 2
                gsq = torch.stack(_norms(gs, 2)).to(torch.float64) ** 2 if gs else None
                pfull = gfull = None
            grad_sv = {}
            if full:
                for node in self._nodes:
                    if node.rank_shape is not None:
                        g = self._param_list[node.rank_i].grad
                        if g is not None:
                            grad_sv[node.name] = _spectrum_sample(
                                g.reshape(node.rank_shape))
            self._grad_sv = grad_sv
            # A non-finite value makes its tensor's Σx² non-finite: measure those tensors
            # again, finite values only, before the optimizer changes them (this check syncs
            # once with an accelerator; on the CPU it is free).
            exact_p, exact_g = {}, {}
            check = psq if gsq is None else torch.cat([psq, gsq])
            if not bool(torch.isfinite(check).all()):
                for i in torch.nonzero(~torch.isfinite(psq)).flatten().tolist():
                    exact_p[i] = _exact(ps[i])
                    if i in columns:
                        columns[i] = _masked_columns(ps[i])
                if gsq is not None:
                    for k in torch.nonzero(~torch.isfinite(gsq)).flatten().tolist():
                        exact_g[k] = _exact(gs[k])
            self._params_now = {"full": full, "gi": gi, "psq": psq, "gsq": gsq,
                                "pfull": pfull, "gfull": gfull, "columns": columns,
                                "exact_p": exact_p, "exact_g": exact_g}
            if copying:
                if not full:
                    torch._foreach_copy_(self._before, ps)
                self._snapshot = self.forward

    def _trained(self):
        """The ids of the parameters the optimizer steps (None without an optimizer)."""
        if self.optimizer is None:
            return None
        return {id(p) for g in self.optimizer.param_groups for p in g["params"]}

    def _step_pre(self, optimizer, args, kwargs):
        if not self.closed and self._recording(self.forward):
            self._measure_params()

    def _step_post(self, optimizer, args, kwargs):
        if self.closed or self._snapshot is None:
            return
        self._pending_forward, self._snapshot = self._snapshot, None
        with torch.no_grad():
            after = [p.detach() for p in self._param_list]
            pending = _diff_sqs(self._before, after)
            if self._keeping():
                # The whole update is sent: W_before − W_after in place (the copy is taken
                # again before the next step).
                torch._foreach_sub_(self._before, after)
                diffs = {n.rank_i: self._before[n.rank_i].reshape(n.rank_shape)
                         for n in self._nodes if n.rank_shape is not None}
            else:
                # Only its sums of squares (each difference a block at a time, never written
                # whole: the copy's write and read back saved) and the rows and columns of
                # W_before − W_after whose singular values are taken, subtracted in float32 as
                # the whole difference would be (a sample's own strides are 1, so
                # ``_spectrum_sample`` takes it whole).
                diffs = {}
                for n in self._nodes:
                    if n.rank_shape is not None:
                        (rs, _), (cs, _) = (_stride(n.rank_shape[0], SPECTRUM_MAX_ROWS),
                                            _stride(n.rank_shape[1], SPECTRUM_MAX_COLS))
                        b = self._before[n.rank_i].reshape(n.rank_shape)[::rs, ::cs]
                        a = after[n.rank_i].reshape(n.rank_shape)[::rs, ::cs]
                        diffs[n.rank_i] = b - a
            self._pending = pending
            # (W_before - W_after has the update's singular values.)
            self._pending_sv = {n.name: _spectrum_sample(diffs[n.rank_i])
                                for n in self._nodes if n.rank_shape is not None}

    # -- the step ------------------------------------------------------------------------

    def step(self, loss=None):
        """Measure and send this forward (after ``optimizer.step()``); returns its number."""
        if self.closed:
            raise WatchError("watch.step after watch.close")
        if loss is not None:
            if not isinstance(loss, torch.Tensor):
                loss = torch.tensor(float(loss))
            if loss.numel() != 1:
                raise WatchError(f"watch.step(loss): a scalar loss, not one of shape "
                                 f"{tuple(loss.shape)} (reduce it, e.g. loss.mean())")
        forward = self.forward
        if not self._recording(forward):
            self._clear_step()
            return forward
        if self._params_now is None:
            self._measure_params()
        if self._pending_forward != forward:
            # No update for this forward (its step has not run: watch.step before
            # optimizer.step(), or a step that was not a full one).
            self._pending, self._pending_sv = None, {}
        with torch.no_grad():
            self._settle_outputs()
            wire, parts, patches, samples = self._summary()
            if loss is not None:
                parts.append(loss.detach().reshape(1).to(torch.float64))
            # The one copy to the host of this step: the numbers (float64), then the samples
            # (float32 unless one is float64), their bytes back to back.
            dev = parts[0].device
            numbers = torch.cat([t.reshape(-1).to(device=dev, dtype=torch.float64)
                                 for t in parts])
            kind = (torch.float64 if any(m.dtype == torch.float64 for m in samples)
                    else torch.float32)
            flat = torch.cat([torch.zeros(0, dtype=kind, device=dev)] +
                             [m.reshape(-1).to(device=dev, dtype=kind) for m in samples])
            both = torch.cat([numbers.view(torch.uint8), flat.view(torch.uint8)]).cpu().numpy()
            cut = numbers.numel() * 8
            host = both[:cut].view("<f8")
            sampled = both[cut:].view("<f8" if kind == torch.float64 else "<f4")
        for at, value in patches:
            host[at] = value
        value = None
        if loss is not None:
            value, host = float(host[-1]), host[:-1]
        facts = self._facts()
        tensors = self._whole_tensors(forward) if self._keeping() else None
        # (Kept until the next step: what was sent, for tests and for looking into a run.)
        self.last_summary = (wire, host, sampled)
        self._send(forward, value, facts, self.last_summary, tensors)
        self._clear_step()
        return forward

    def _summary(self):
        """This step's summary as the wire carries it (src/health/summary.rs ``WireSummary``):
        its structure, the device tensors its numbers are cut from (in order: one float64
        vector once concatenated), ``(offset, value)`` patches of numbers known on the host
        (the finite-only sums of a tensor with a non-finite entry), and the spectrum samples
        (in order: one vector of their own)."""
        parts, size, patches = [], 0, []

        def add(t):
            nonlocal size
            at = size
            parts.append(t)
            size += t.numel()
            return at

        def host(values):
            return add(torch.tensor(values, dtype=torch.float64))

        now = self._params_now
        full, gi = now["full"], now["gi"]
        exact_p, exact_g = now["exact_p"], now["exact_g"]
        wire = {"tensors": [], "updates": [], "outputs": [], "samples": [], "cka": []}
        sizes = self._param_sizes
        # The parameters: every one, each under its keys (a shared weight under each).
        pt = {"keys": self._param_keys, "shapes": self._param_shapes,
              "finite": host([exact_p[i]["finite"] if i in exact_p else n
                              for i, n in enumerate(sizes)]),
              "nan": host([exact_p[i]["nan"] if i in exact_p else 0
                           for i in range(len(sizes))]),
              "sum_sq": add(now["psq"])}
        patches += [(pt["sum_sq"] + i, e["sq"]) for i, e in exact_p.items()]
        if full:
            at = add(now["pfull"])
            pt["sum_abs"], pt["absmax"] = at, at + len(sizes)
            for i, e in exact_p.items():
                patches += [(pt["sum_abs"] + i, e["l1"]), (pt["absmax"] + i, e["absmax"])]
            pt["columns"] = []
            for i, cols in sorted(now["columns"].items()):
                shape = self._param_shapes[i]
                entry = {"entry": i}
                if isinstance(cols, tuple):  # finite entries only (_masked_columns)
                    entry["abs"], entry["finite"] = add(cols[0]), add(cols[1])
                else:
                    entry["abs"] = add(_columns(cols, shape))
                pt["columns"].append(entry)
        wire["tensors"].append(pt)
        # The gradients the optimizer reads.
        if gi:
            gt = {"keys": [["grad." + k[len("param."):] for k in self._param_keys[i]]
                           for i in gi],
                  "shapes": [self._param_shapes[i] for i in gi],
                  "finite": host([exact_g[k]["finite"] if k in exact_g else sizes[i]
                                  for k, i in enumerate(gi)]),
                  "nan": host([exact_g[k]["nan"] if k in exact_g else 0
                               for k in range(len(gi))]),
                  "sum_sq": add(now["gsq"])}
            patches += [(gt["sum_sq"] + k, e["sq"]) for k, e in exact_g.items()]
            if full:
                at = add(now["gfull"])
                gt["sum_abs"], gt["absmax"], gt["zeros"] = at, at + len(gi), at + 2 * len(gi)
                for k, e in exact_g.items():
                    patches += [(gt["sum_abs"] + k, e["l1"]), (gt["absmax"] + k, e["absmax"]),
                                (gt["zeros"] + k, e["zeros"])]
            wire["tensors"].append(gt)
        # The update this forward's optimizer step applied (a parameter with a non-finite
        # entry gets none), against the weights it started from (these).
        if self._pending is not None:
            keep = [i for i in range(len(sizes)) if i not in exact_p]
            if keep:
                idx = torch.tensor(keep, device=self._pending.device)
                wire["updates"].append({
                    "keys": [["update." + k[len("param."):] for k in self._param_keys[i]]
                             for i in keep],
                    "sum_sq": add(self._pending[idx]),
                    "base_sq": add(now["psq"].to(self._pending.device)[idx])})
        # Outputs: one entry per call; an output summarised once for two nodes (handed on
        # unchanged) is sent once.
        sent = {}
        for node in self._nodes:
            for c in self._units.get(node.name, ()):
                key = id(c["body"])
                if key not in sent:
                    sent[key] = (add(c["body"]),
                                 None if c["counts"] is None else add(c["counts"]))
                at, counts = sent[key]
                entry = {"node": node.name, "units": c["units"],
                         "elements": c["rows"] * c["units"], "positions": c["rows"],
                         "at": at, "form": c["form"], "saturated": c["saturated"]}
                if counts is not None:
                    entry["counts"] = counts
                wire["outputs"].append(entry)
        # Spectra: each sample (a sample shared by nodes, an output handed on unchanged, once),
        # in one tensor of their own; Rust takes their singular values.
        found = []
        for node in self._nodes:
            for of, m in (("grad", self._grad_sv.get(node.name) if full else None),
                          ("feature", node.feature),
                          ("update", self._pending_sv.get(node.name)
                           if self._pending is not None else None)):
                if m is not None:
                    found.append((node.name, of, m))
        samples, where, offset = [], {}, 0
        for name, of, m in found:
            if id(m) not in where:
                where[id(m)] = offset
                samples.append(m)
                offset += m.numel()
            wire["samples"].append({"node": name, "of": of, "rows": m.shape[0],
                                    "cols": m.shape[1], "at": where[id(m)]})
        # The CKA sums of each pair declared apart, on its second node (record.rs).
        if full:
            for a, b in self._apart:
                if a in self._outputs and b in self._outputs:
                    wire["cka"].append({"node": b, "at": add(_cka(self._outputs[a],
                                                                  self._outputs[b]))})
        return wire, parts, patches, samples

    def _clear_step(self):
        """Forget this step's measurements and go on to the next forward."""
        self._units = {}
        self._summaries = {}
        self._acts = {}
        self._outputs = {}
        self._params_now = None
        self._columns = {}
        self._pending = None
        self._pending_forward = None
        self._start = None
        for node in self._nodes:
            node.calls, node.began, node.took, node.feature = 0, None, 0, None
            node.ndim_now, node.rule_now, node.deferred, node.samples = None, None, [], 0
        self.forward += 1

    def _facts(self):
        facts = []
        origin = self._start
        measured = "full" if self._measuring_acts() else "norms"
        for node in self._nodes:
            f = {"node": node.name, "kind": node.kind, "calls": node.calls, "measured": measured}
            if self._where is not None:
                f["where"] = self._where
            if node.began is not None and origin is not None:
                f["began_us"] = int((node.began - origin) * 1e6)
                f["took_us"] = int(node.took * 1e6)
            else:
                f["began_us"], f["took_us"] = 0, 0
            text = layout(node.rule, node.ndim) if node.ndim is not None else None
            if text is not None:
                f["layout"] = text
            facts.append(f)
        return facts

    def _whole_tensors(self, forward):
        """The forward's tensors as the dump convention has them: its outputs, the parameters
        it used (this step's optimizer has moved them since: W_after + (W_before − W_after)),
        their gradients, and the update the step applied."""
        out = dict(self._acts)
        stepped = self._pending_forward == forward and self._before is not None
        index = self._param_index
        for node in self._nodes:
            for key, p in node.params:
                if stepped:
                    back = self._before[index[id(p)]]  # W_before − W_after
                    out["param." + key] = p.detach() + back
                    out["update." + key] = -back
                else:
                    out["param." + key] = p.detach()
                if p.grad is not None:
                    out["grad." + key] = p.grad.detach()
        return out

    def _send(self, forward, loss, facts, summary, tensors):
        if not self._chan.enabled:
            return
        try:
            self._chan.forward(forward, loss=loss, facts=facts, summary=summary,
                               tensors=tensors, keep_all=True, where=self._where)
        except OSError as e:
            self._dead(e)

    def _dead(self, e):
        if not self._warned:
            warnings.warn(f"somatize: the companion is gone ({e}); training goes on, unrecorded "
                          "from here", RuntimeWarning, stacklevel=3)
            self._warned = True
        self._chan.close()

    # -- the end -------------------------------------------------------------------------

    def close(self, error=None):
        """Stop watching: send the end (with ``error`` when training failed), wait for the
        companion this started to write everything, remove the hooks."""
        if self.closed:
            return
        self.closed = True
        for h in self._handles:
            h.remove()
        self._handles = []
        error = error if error is not None else self._error
        if self._chan.enabled:
            try:
                self._chan.end(error=error)
            except OSError as e:
                self._dead(e)
        self._chan.close()
        if self._companion is not None:
            self._companion.wait(quiet=error is not None or self._warned)
        _live.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        self.close(error=None if value is None else f"{kind.__name__}: {value}")
        return False


def _exact(t):
    """A tensor's finite-only sums in float64 (the path taken when it holds a non-finite)."""
    with torch.no_grad():
        t = t.detach()
        finite = torch.isfinite(t)
        v = torch.where(finite, t.to(torch.float64), torch.zeros((), dtype=torch.float64,
                                                                 device=t.device))
        out = torch.stack([(v * v).sum(), v.abs().sum(), v.abs().max() if v.numel() else
                           torch.zeros((), dtype=torch.float64, device=t.device),
                           finite.sum().to(torch.float64), torch.isnan(t).sum().to(torch.float64),
                           (t == 0).sum().to(torch.float64)]).cpu().tolist()
    return dict(zip(("sq", "l1", "absmax", "finite", "nan", "zeros"), out))


def watch(model, optimizer=None, store=None, run=None, show=False, **kw):
    """Watch ``model`` (and the updates ``optimizer`` applies) into ``store``/``run``, or into
    the channel of the ``somatize record`` this runs under. See ``Watch`` and the module doc;
    keywords: ``every`` (full summaries every N steps, default 10; 0: never), ``norms_every``
    (the norms every N steps, default 1: every step), ``keep_tensors_every`` (default 0: never), ``apart`` (pairs of node names, two groups that
    should not see the same thing: their outputs' CKA on full steps, for LEAKAGE),
    ``writer``, ``channel``, ``durable``; ``show=True`` draws the run under the notebook cell
    as it trains (a ``somatize.Live`` fed by this watch; ``somatize.widget.watching``)."""
    w = Watch(model, optimizer, store, run, **kw)
    if show:
        from .widget import watching

        watching(w, store, run)
    return w


def probe(model, x, store, *, run=None):
    """Record one forward of ``model`` on ``x``, never trained, as forward 0 of a new run
    (named ``run``, default a fresh 16-hex-digit id) of ``store``: every node's parameters and
    outputs measured as ``watch`` measures a full step. Returns the run's name."""
    import secrets

    run = run if run is not None else secrets.token_hex(8)
    w = Watch(model, None, store, run, every=1)
    try:
        with torch.no_grad():
            model(x)
        w.step()
    except BaseException as e:
        w.close(error=f"{type(e).__name__}: {e}")
        raise
    w.close()
    return run


_live = weakref.WeakSet()
_previous_hook = sys.excepthook


def _excepthook(kind, value, tb):
    for w in list(_live):
        w._error = f"{kind.__name__}: {value}"
    _previous_hook(kind, value, tb)


sys.excepthook = _excepthook


@atexit.register
def _close_all():
    for w in list(_live):
        try:
            w.close()
        except Exception as e:  # noqa: BLE001 - never fail the interpreter's exit
            warnings.warn(f"somatize: closing the watch at exit failed: {e}", RuntimeWarning)
