//! Transforms: element-wise maps applied chunk by chunk, and the shape-aware ones applied to
//! materialised values (center, flatten, per_row, per_column).

use super::OpError;
use crate::observe::registry::Transform;

/// An element-wise transform, cheap enough to apply to each chunk on the fly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Elementwise {
    Abs,
    Square,
    Neg,
    Log1pAbs,
}

impl Elementwise {
    /// The element-wise form of a transform, if it has one.
    pub fn of(t: Transform) -> Option<Elementwise> {
        match t {
            Transform::Abs => Some(Elementwise::Abs),
            Transform::Square => Some(Elementwise::Square),
            Transform::Neg => Some(Elementwise::Neg),
            Transform::Log1pAbs => Some(Elementwise::Log1pAbs),
            _ => None,
        }
    }

    #[inline]
    fn apply(self, x: f64) -> f64 {
        match self {
            Elementwise::Abs => x.abs(),
            Elementwise::Square => x * x,
            Elementwise::Neg => -x,
            Elementwise::Log1pAbs => x.abs().ln_1p(),
        }
    }
}

/// Apply a chain of element-wise transforms to every value, in place.
pub fn apply_chain(chain: &[Elementwise], values: &mut [f64]) {
    for &t in chain {
        values.iter_mut().for_each(|x| *x = t.apply(*x));
    }
}

/// Values after the transforms: `groups` equal contiguous blocks of shape `group_shape`
/// (one block unless `per_row`/`per_column` split them).
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    pub values: Vec<f64>,
    pub group_shape: Vec<usize>,
    pub groups: usize,
    /// Whether a `per_row`/`per_column` split the tensor (the value is then a vector).
    pub grouped: bool,
}

/// The layout after the transforms, worked out from the shape alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub group_shape: Vec<usize>,
    pub groups: usize,
    pub grouped: bool,
}

fn matrix_view(op: &str, shape: &[usize]) -> Result<(usize, usize), OpError> {
    if shape.len() < 2 {
        return Err(OpError::Shape {
            op: op.to_string(),
            shape: shape.to_vec(),
            need: "2 or more dimensions".into(),
        });
    }
    Ok((shape[0], shape[1..].iter().product()))
}

/// Where the transforms leave a tensor of `shape`, or which transform cannot take it.
pub fn layout(transforms: &[Transform], shape: &[usize]) -> Result<Layout, OpError> {
    let mut l = Layout {
        group_shape: shape.to_vec(),
        groups: 1,
        grouped: false,
    };
    for t in transforms {
        match t {
            Transform::Flatten => l.group_shape = vec![l.group_shape.iter().product()],
            Transform::PerRow => {
                matrix_view("per_row", &l.group_shape)?;
                l.groups = l.group_shape[0];
                l.group_shape = l.group_shape[1..].to_vec();
                l.grouped = true;
            }
            Transform::PerColumn => {
                let (rows, cols) = matrix_view("per_column", &l.group_shape)?;
                l.groups = cols;
                l.group_shape = vec![rows];
                l.grouped = true;
            }
            _ => {}
        }
    }
    Ok(l)
}

/// Subtract the mean of the finite values from each finite value.
fn center(values: &mut [f64]) {
    let (sum, n) = values
        .iter()
        .filter(|x| x.is_finite())
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        return;
    }
    let mean = sum / n as f64;
    values
        .iter_mut()
        .filter(|x| x.is_finite())
        .for_each(|x| *x -= mean);
}

/// Row-major `rows x cols` to its transpose (column-major order of the original).
fn transpose(values: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; values.len()];
    for (r, row) in values.chunks_exact(cols.max(1)).enumerate().take(rows) {
        for (c, &x) in row.iter().enumerate() {
            out[c * rows + r] = x;
        }
    }
    out
}

/// Apply the transforms, left to right, to materialised values of `shape`.
pub fn apply(
    transforms: &[Transform],
    values: Vec<f64>,
    shape: &[usize],
) -> Result<Shaped, OpError> {
    let mut s = Shaped {
        values,
        group_shape: shape.to_vec(),
        groups: 1,
        grouped: false,
    };
    for &t in transforms {
        let group_len: usize = s.group_shape.iter().product();
        match t {
            Transform::Identity => {}
            Transform::Center => s.values.chunks_mut(group_len.max(1)).for_each(center),
            Transform::Flatten => s.group_shape = vec![group_len],
            Transform::PerRow => {
                matrix_view("per_row", &s.group_shape)?;
                s.groups = s.group_shape[0];
                s.group_shape = s.group_shape[1..].to_vec();
                s.grouped = true;
            }
            Transform::PerColumn => {
                let (rows, cols) = matrix_view("per_column", &s.group_shape)?;
                s.values = transpose(&s.values, rows, cols);
                s.groups = cols;
                s.group_shape = vec![rows];
                s.grouped = true;
            }
            other => {
                let e = Elementwise::of(other).expect("every other transform is element-wise");
                apply_chain(&[e], &mut s.values);
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_column_transposes_and_center_works_per_group() {
        // [[1, 2, 3], [5, 6, 7]]: columns are (1,5), (2,6), (3,7).
        let v = vec![1.0, 2.0, 3.0, 5.0, 6.0, 7.0];
        let s = apply(
            &[Transform::PerColumn, Transform::Center],
            v.clone(),
            &[2, 3],
        )
        .unwrap();
        assert_eq!(s.values, vec![-2.0, 2.0, -2.0, 2.0, -2.0, 2.0]);
        assert_eq!((s.groups, s.group_shape.clone()), (3, vec![2]));
        let s = apply(&[Transform::Center, Transform::PerRow], v, &[2, 3]).unwrap();
        assert_eq!(s.values, vec![-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn grouping_a_vector_is_a_shape_error() {
        let e = layout(&[Transform::PerRow], &[5]).unwrap_err();
        assert!(e.to_string().contains("[5]"), "message: {e}");
    }

    #[test]
    fn elementwise_values() {
        let mut v = vec![-2.0, 0.0, 3.0];
        apply_chain(&[Elementwise::Neg, Elementwise::Square], &mut v);
        assert_eq!(v, vec![4.0, 0.0, 9.0]);
        let mut v = vec![-(std::f64::consts::E - 1.0)];
        apply_chain(&[Elementwise::Log1pAbs], &mut v);
        assert!((v[0] - 1.0).abs() < 1e-15, "got {}", v[0]);
    }
}
