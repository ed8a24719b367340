//! Linear CKA between two groups' outputs on the same inputs (Kornblith et al., ICML 2019).

use super::measure::{check_shape, MeasureError, CKA_MAX_ENTRIES};
use crate::tensor::TypedTensor;

/// Samples (axis 0) and features (the rest, flattened) of a tensor, values column-centred.
fn centred(t: &TypedTensor) -> (usize, usize, Vec<f64>) {
    let n = t.shape.first().copied().unwrap_or(1).max(1);
    let p = t.len() / n;
    let mut x = t.data.to_f64();
    x.truncate(n * p);
    for j in 0..p {
        let mean = (0..n).map(|i| x[i * p + j]).sum::<f64>() / n as f64;
        for i in 0..n {
            x[i * p + j] -= mean;
        }
    }
    (n, p, x)
}

/// AᵀB for row-major A (rows × ca) and B (rows × cb).
fn cross(a: &[f64], b: &[f64], rows: usize, ca: usize, cb: usize) -> Vec<f64> {
    let mut out = vec![0.0; ca * cb];
    for r in 0..rows {
        let (ar, br) = (&a[r * ca..(r + 1) * ca], &b[r * cb..(r + 1) * cb]);
        for (i, &x) in ar.iter().enumerate() {
            if x != 0.0 {
                for (o, &y) in out[i * cb..(i + 1) * cb].iter_mut().zip(br) {
                    *o += x * y;
                }
            }
        }
    }
    out
}

fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; a.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = a[r * cols + c];
        }
    }
    out
}

fn frob_sq(a: &[f64]) -> f64 {
    a.iter().map(|v| v * v).sum()
}

/// Linear CKA = ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F) with X, Y column-centred, samples on axis 0
/// and any further axes flattened into features. Taken through the n × n Gram matrices when
/// there are fewer samples than features, else through the feature cross-products.
/// `Ok(None)` when a group is constant over the samples (CKA is undefined). Non-finite
/// inputs give `Ok(None)` too.
pub fn linear_cka(x: &TypedTensor, y: &TypedTensor) -> Result<Option<f64>, MeasureError> {
    let (nx, ny) = (
        x.shape.first().copied().unwrap_or(1),
        y.shape.first().copied().unwrap_or(1),
    );
    check_shape(x)?;
    check_shape(y)?;
    if nx != ny {
        return Err(MeasureError::Samples {
            x_key: x.provenance.key.clone(),
            y_key: y.provenance.key.clone(),
            x: nx,
            y: ny,
        });
    }
    let too_large = |entries: usize| MeasureError::TooLarge {
        x_key: x.provenance.key.clone(),
        y_key: y.provenance.key.clone(),
        entries,
    };
    let px = x.len().checked_div(nx.max(1)).unwrap_or(0);
    let py = y.len().checked_div(ny.max(1)).unwrap_or(0);
    let gram = nx <= px.max(py);
    let widest = if gram { nx } else { px.max(py) };
    let entries = widest.checked_mul(widest);
    match entries {
        Some(e) if e <= CKA_MAX_ENTRIES => {}
        Some(e) => return Err(too_large(e)),
        None => return Err(too_large(usize::MAX)),
    }
    let (n, px, xc) = centred(x);
    let (_, py, yc) = centred(y);
    let (xy, xx, yy) = if gram {
        let (xt, yt) = (transpose(&xc, n, px), transpose(&yc, n, py));
        let k = cross(&xt, &xt, px, n, n);
        let l = cross(&yt, &yt, py, n, n);
        let kl: f64 = k.iter().zip(&l).map(|(a, b)| a * b).sum();
        (kl, frob_sq(&k).sqrt(), frob_sq(&l).sqrt())
    } else {
        let yx = cross(&yc, &xc, n, py, px);
        let xx = cross(&xc, &xc, n, px, px);
        let yy = cross(&yc, &yc, n, py, py);
        (frob_sq(&yx), frob_sq(&xx).sqrt(), frob_sq(&yy).sqrt())
    };
    let cka = xy / (xx * yy);
    Ok((xx > 0.0 && yy > 0.0 && cka.is_finite()).then_some(cka))
}
