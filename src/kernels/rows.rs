//! Explicit features as one row-major `(n, R)` matrix of f64 or f32, kernel `m` in the
//! columns `offsets[m]..offsets[m + 1]` (`K_m = Φ_m Φ_mᵀ`): numpy's feature blocks read in
//! place (the column ranges of one array, as a `FeatureBank` makes them), for the solvers that
//! work in feature space (`svrg`, `prox_newton`).

use crate::error::{MkError, Result};
use crate::kernels::Element;

/// Row-major features `(n, R)` of `M` kernels, kernel `m` in columns
/// `offsets[m]..offsets[m + 1]`.
pub struct RowFeatures<'a, T> {
    data: &'a [T],
    n: usize,
    width: usize,
    offsets: Vec<usize>,
}

impl<'a, T: Element> RowFeatures<'a, T> {
    /// `data` holds `n` rows of `Σ dims` values; `dims[m]` columns belong to kernel `m`.
    pub fn new(data: &'a [T], n: usize, dims: &[usize]) -> Result<Self> {
        let width: usize = dims.iter().sum();
        if dims.is_empty() || n == 0 || data.len() != n * width {
            return Err(MkError::Shape(format!(
                "features of {} values for {n} rows of {width} columns ({} kernels)",
                data.len(),
                dims.len()
            )));
        }
        let mut offsets = vec![0];
        for d in dims {
            offsets.push(offsets.last().copied().unwrap_or(0) + d);
        }
        Ok(RowFeatures {
            data,
            n,
            width,
            offsets,
        })
    }

    /// Row `t`: the `R` features of point `t`.
    pub fn row(&self, t: usize) -> &'a [T] {
        &self.data[t * self.width..(t + 1) * self.width]
    }

    /// Every value, row after row.
    pub fn data(&self) -> &'a [T] {
        self.data
    }

    /// Points.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The total width `R`.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Kernels.
    pub fn m(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The columns of kernel `m`.
    pub fn block(&self, m: usize) -> std::ops::Range<usize> {
        self.offsets[m]..self.offsets[m + 1]
    }

    /// `[0, D_0, D_0 + D_1, …, R]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}
