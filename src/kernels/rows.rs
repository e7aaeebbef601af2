//! Explicit features as one row-major `(n, R)` matrix of f64 or f32, kernel `m` in the
//! columns `offsets[m]..offsets[m + 1]` (`K_m = Φ_m Φ_mᵀ`): numpy's feature blocks read in
//! place (the column ranges of one array, as a `FeatureBank` makes them), for the solvers that
//! work in feature space (`svrg`, `prox_newton`).

use crate::error::{MkError, Result};
use crate::kernels::{CsrMatrix, Element};

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

/// Sparse features `(n, R)` of `M` kernels in one CSR matrix, kernel `m` in columns
/// `offsets[m]..offsets[m + 1]`: the CSR blocks of a `FeatureBank` of `Linear` kernels on
/// sparse points, placed side by side, read at the cost of their stored entries.
pub struct SparseRowFeatures {
    x: CsrMatrix,
    offsets: Vec<usize>,
}

impl SparseRowFeatures {
    /// The blocks side by side (row `i` is block 0's row `i`, then block 1's shifted by its
    /// width, …), each with the rows of the first.
    pub fn new(blocks: &[CsrMatrix]) -> Result<Self> {
        let n = blocks.first().map_or(0, CsrMatrix::nrows);
        if n == 0 || blocks.iter().any(|b| b.nrows() != n) {
            return Err(MkError::Shape(format!(
                "sparse feature blocks must share their rows (at least one), got {:?}",
                blocks.iter().map(CsrMatrix::nrows).collect::<Vec<_>>()
            )));
        }
        let dims: Vec<usize> = blocks.iter().map(CsrMatrix::ncols).collect();
        let nnz: usize = blocks.iter().map(|b| b.row_range(0..n).len()).sum();
        let (mut indptr, mut indices, mut data) = (vec![0], Vec::with_capacity(nnz), Vec::new());
        data.reserve(nnz);
        for i in 0..n {
            let mut off = 0;
            for b in blocks {
                let (idx, val) = b.row(i);
                indices.extend(idx.iter().map(|&j| j + off));
                data.extend_from_slice(val);
                off += b.ncols();
            }
            indptr.push(indices.len());
        }
        let width = dims.iter().sum();
        SparseRowFeatures::with_dims(CsrMatrix::new(width, indptr, indices, data)?, &dims)
    }

    /// The blocks already side by side in `x` (`n × Σ dims`): kernel `m` owns the next
    /// `dims[m]` columns (a cluster's chunk of the blocks, read as it came).
    pub fn with_dims(x: CsrMatrix, dims: &[usize]) -> Result<Self> {
        let mut offsets = vec![0];
        for d in dims {
            offsets.push(offsets.last().copied().unwrap_or(0) + d);
        }
        if dims.is_empty() || x.nrows() == 0 || offsets.last() != Some(&x.ncols()) {
            return Err(MkError::Shape(format!(
                "sparse features of {} rows and {} columns for kernels of {dims:?} columns \
                 (at least one row and one kernel)",
                x.nrows(),
                x.ncols()
            )));
        }
        Ok(SparseRowFeatures { x, offsets })
    }

    /// Row `i`: its stored columns (increasing) and values.
    #[inline]
    pub fn row(&self, i: usize) -> (&[usize], &[f64]) {
        self.x.row(i)
    }

    /// Every stored value.
    pub fn values(&self) -> &[f64] {
        self.x.values()
    }

    /// Points.
    pub fn n(&self) -> usize {
        self.x.nrows()
    }

    /// `[0, D_0, D_0 + D_1, …, R]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}
