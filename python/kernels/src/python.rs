//! The extension module: [`crate::sums`] over tensors given by address, the GIL released.
//!
//! Python (`somatize/_native.py`) passes a contiguous float32 CPU tensor's `data_ptr()` and
//! length and keeps the tensor alive for the call. Each address is checked here before it is
//! read (not null, aligned, its byte length within `isize`, outputs not overlapping inputs): a
//! bad one raises `ValueError`, never reads.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::sums::{self, AbsOut, Saturation};

/// The byte range of `n` values of `T` at `addr`, checked; `name` says which argument.
fn range<T>(addr: usize, n: usize, name: &str) -> PyResult<std::ops::Range<usize>> {
    let bytes = n
        .checked_mul(std::mem::size_of::<T>())
        .filter(|b| *b <= isize::MAX as usize)
        .ok_or_else(|| PyValueError::new_err(format!("{name}: {n} entries is too many")))?;
    if n > 0 && addr == 0 {
        return Err(PyValueError::new_err(format!("{name}: a null address")));
    }
    if !addr.is_multiple_of(std::mem::align_of::<T>()) {
        return Err(PyValueError::new_err(format!(
            "{name}: address {addr:#x} is not aligned"
        )));
    }
    let end = addr
        .checked_add(bytes)
        .ok_or_else(|| PyValueError::new_err(format!("{name}: address range overflows")))?;
    Ok(addr..end)
}

fn disjoint(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>, what: &str) -> PyResult<()> {
    if a.start < b.end && b.start < a.end {
        return Err(PyValueError::new_err(format!("{what} overlap")));
    }
    Ok(())
}

/// # Safety
/// `r` came from [`range`] and names `n` live values no one writes during the call.
unsafe fn slice<'a, T>(r: &std::ops::Range<usize>, n: usize) -> &'a [T] {
    if n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(r.start as *const T, n)
    }
}

/// # Safety
/// As [`slice`], and no one else reads or writes them during the call.
unsafe fn slice_mut<'a, T>(r: &std::ops::Range<usize>, n: usize) -> &'a mut [T] {
    if n == 0 {
        &mut []
    } else {
        std::slice::from_raw_parts_mut(r.start as *mut T, n)
    }
}

/// `abs_sums(x, n, copy=0, columns=0, width=0, threads=1)` → `(Σ|x|, max |x|, non-zeros,
/// Σx²)` of the `n` float32 values at `x`; a `copy` address (n float32) gets a copy; a
/// `columns` address (`width` float64, `width` dividing `n`) gets each column's Σ|x| added.
/// `threads` (torch's intra-op count) bounds the threads used; the bits do not depend on it.
#[pyfunction]
#[pyo3(signature = (x, n, copy=0, columns=0, width=0, threads=1))]
#[allow(clippy::too_many_arguments)]
fn abs_sums(
    py: Python<'_>,
    x: usize,
    n: usize,
    copy: usize,
    columns: usize,
    width: usize,
    threads: usize,
) -> PyResult<(f64, f64, f64, f64)> {
    let xr = range::<f32>(x, n, "x")?;
    let cr = if copy != 0 {
        let r = range::<f32>(copy, n, "copy")?;
        disjoint(&xr, &r, "x and copy")?;
        Some(r)
    } else {
        None
    };
    let wr = if columns != 0 {
        if width == 0 || !n.is_multiple_of(width) {
            return Err(PyValueError::new_err(format!(
                "columns: a width of {width} does not divide {n} entries"
            )));
        }
        let r = range::<f64>(columns, width, "columns")?;
        disjoint(&xr, &r, "x and columns")?;
        if let Some(c) = &cr {
            disjoint(c, &r, "copy and columns")?;
        }
        Some(r)
    } else {
        None
    };
    // SAFETY: every range was checked above; the caller keeps the tensors alive and unwritten.
    let (xs, copy, cols) = unsafe {
        (
            slice::<f32>(&xr, n),
            cr.as_ref().map(|r| slice_mut::<f32>(r, n)),
            wr.as_ref().map(|r| slice_mut::<f64>(r, width)),
        )
    };
    let s = py.detach(move || {
        sums::abs_sums(
            xs,
            AbsOut {
                copy,
                columns: cols,
            },
            threads,
        )
    });
    Ok((s.l1, f64::from(s.absmax), s.nonzero, s.sq))
}

/// `diff_sq(a, b, n, threads=1)` → ‖a − b‖₂² of `n` float32 values at each address.
#[pyfunction]
#[pyo3(signature = (a, b, n, threads=1))]
fn diff_sq(py: Python<'_>, a: usize, b: usize, n: usize, threads: usize) -> PyResult<f64> {
    let ar = range::<f32>(a, n, "a")?;
    let br = range::<f32>(b, n, "b")?;
    // SAFETY: both ranges checked; the caller keeps the tensors alive and unwritten.
    let (xa, xb) = unsafe { (slice::<f32>(&ar, n), slice::<f32>(&br, n)) };
    Ok(py.detach(move || sums::diff_sq(xa, xb, threads)))
}

/// `output_sums(x, rows, units, out, saturation=0, bound=0.0, threads=1)` → whether every
/// unit's sums were finite, writing the `signs` form's fields × units float32 at `out` (5
/// fields, 6 with a saturation: 1 tanh, 2 sigmoid, counted against `bound`).
#[pyfunction]
#[pyo3(signature = (x, rows, units, out, saturation=0, bound=0.0, threads=1))]
#[allow(clippy::too_many_arguments)]
fn output_sums(
    py: Python<'_>,
    x: usize,
    rows: usize,
    units: usize,
    out: usize,
    saturation: u8,
    bound: f32,
    threads: usize,
) -> PyResult<bool> {
    let sat = match saturation {
        0 => Saturation::None,
        1 => Saturation::Tanh(bound),
        2 => Saturation::Sigmoid(bound),
        s => {
            return Err(PyValueError::new_err(format!(
                "saturation: {s} is not 0, 1 or 2"
            )))
        }
    };
    if rows == 0 || units == 0 {
        return Err(PyValueError::new_err(format!(
            "an output of {rows} × {units}"
        )));
    }
    let n = rows
        .checked_mul(units)
        .ok_or_else(|| PyValueError::new_err("rows × units overflows"))?;
    let m = sums::output_fields(sat) * units;
    let xr = range::<f32>(x, n, "x")?;
    let or = range::<f32>(out, m, "out")?;
    disjoint(&xr, &or, "x and out")?;
    // SAFETY: both ranges checked and disjoint; the caller keeps the tensors alive.
    let (xs, os) = unsafe { (slice::<f32>(&xr, n), slice_mut::<f32>(&or, m)) };
    Ok(py.detach(move || sums::output_sums(xs, units, sat, os, threads)))
}

#[pymodule]
fn _kernels(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(abs_sums, m)?)?;
    m.add_function(wrap_pyfunction!(diff_sq, m)?)?;
    m.add_function(wrap_pyfunction!(output_sums, m)?)?;
    m.add("LANES", sums::LANES)?;
    m.add("CHUNK", sums::CHUNK)?;
    Ok(())
}
