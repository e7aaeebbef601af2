//! How a chunk reads its rows ([`RowRead`]): a dense row (every column, f64 or f32,
//! [`RowFeatures`]) or a sparse one (its stored columns and values, [`SparseRowFeatures`]).
//! The chunks' reductions ([`Chunks`](super::chunk::Chunks)) are written once over these few
//! per-row operations; a sparse row costs its stored entries, a column it does not store
//! contributing 0 to every sum (`0 · v = 0`, `h · 0² = 0`).

use rayon::prelude::*;

use super::features::gram_lower;
use crate::error::{MkError, Result};
use crate::kernels::{Element, RowFeatures, SparseRowFeatures};

/// The per-row operations the passes of proximal Newton need of feature rows `x_i ∈ ℝᴿ`.
pub trait RowRead: Sync {
    /// Points.
    fn n(&self) -> usize;
    /// `[0, D_0, D_0 + D_1, …, R]`: kernel `m` owns columns `offsets[m]..offsets[m + 1]`.
    fn offsets(&self) -> &[usize];
    /// `x_iᵀ v` for a `v` whose nonzeros are `moved` (column, value), and also given by
    /// column in `dense` (`R` entries): a dense row reads the few moved columns, a sparse row
    /// looks its stored columns up in `dense`.
    fn dot(&self, i: usize, moved: &[(usize, f64)], dense: &[f64]) -> f64;
    /// `acc += a x_i` (`R` entries).
    fn add_row(&self, i: usize, a: f64, acc: &mut [f64]);
    /// `acc_j += h x_ij²` for every column `j`.
    fn add_squares(&self, i: usize, h: f64, acc: &mut [f64]);
    /// `ZᵀZ`, full and column-major of order `k = |cols| + 1`, where row `t` of `Z` is
    /// `s_t [x_{rows_t, cols}, 1]` (`s = scales`): the working set's Hessian over `rows`.
    fn weighted_gram(&self, rows: &[usize], scales: &[f64], cols: &[usize]) -> Vec<f64>;
    /// An error unless every feature is finite.
    fn check_finite(&self) -> Result<()>;

    /// The total width `R`.
    fn width(&self) -> usize {
        self.offsets().last().copied().unwrap_or(0)
    }

    /// Whether the rows store their nonzeros only.
    fn sparse(&self) -> bool {
        false
    }
}

impl<T: Element> RowRead for RowFeatures<'_, T> {
    fn n(&self) -> usize {
        RowFeatures::n(self)
    }

    fn offsets(&self) -> &[usize] {
        RowFeatures::offsets(self)
    }

    fn dot(&self, i: usize, moved: &[(usize, f64)], _dense: &[f64]) -> f64 {
        let row = self.row(i);
        moved.iter().map(|&(j, d)| d * row[j].to_f64()).sum()
    }

    fn add_row(&self, i: usize, a: f64, acc: &mut [f64]) {
        acc.iter_mut()
            .zip(self.row(i))
            .for_each(|(s, xj)| *s += a * xj.to_f64());
    }

    fn add_squares(&self, i: usize, h: f64, acc: &mut [f64]) {
        acc.iter_mut()
            .zip(self.row(i))
            .for_each(|(s, xj)| *s += h * xj.to_f64() * xj.to_f64());
    }

    /// `Z` formed column-major (`|rows| × k`), then its Gram by a triangular product.
    fn weighted_gram(&self, rows: &[usize], scales: &[f64], cols: &[usize]) -> Vec<f64> {
        let (nr, k) = (rows.len(), cols.len() + 1);
        let mut zs = vec![0.0; nr * k];
        for (t, (&i, &s)) in rows.iter().zip(scales).enumerate() {
            let row = self.row(i);
            for (cc, &j) in cols.iter().enumerate() {
                zs[cc * nr + t] = row[j].to_f64() * s;
            }
            zs[cols.len() * nr + t] = s;
        }
        gram_lower(&zs, nr, k)
    }

    fn check_finite(&self) -> Result<()> {
        if self.data().par_iter().any(|v| !v.to_f64().is_finite()) {
            return Err(MkError::non_finite("the features"));
        }
        Ok(())
    }
}

impl RowRead for SparseRowFeatures {
    fn n(&self) -> usize {
        SparseRowFeatures::n(self)
    }

    fn offsets(&self) -> &[usize] {
        SparseRowFeatures::offsets(self)
    }

    fn dot(&self, i: usize, _moved: &[(usize, f64)], dense: &[f64]) -> f64 {
        let (idx, val) = self.row(i);
        idx.iter().zip(val).map(|(&j, &x)| dense[j] * x).sum()
    }

    fn add_row(&self, i: usize, a: f64, acc: &mut [f64]) {
        let (idx, val) = self.row(i);
        idx.iter().zip(val).for_each(|(&j, &x)| acc[j] += a * x);
    }

    fn add_squares(&self, i: usize, h: f64, acc: &mut [f64]) {
        let (idx, val) = self.row(i);
        idx.iter().zip(val).for_each(|(&j, &x)| acc[j] += h * x * x);
    }

    /// A sum of outer products over each row's stored entries in `cols` (and the intercept's
    /// 1), `O(Σ_t nnz_W(x_t)²)`: forming `Z` would cost `|rows| · k` whatever the density.
    fn weighted_gram(&self, rows: &[usize], scales: &[f64], cols: &[usize]) -> Vec<f64> {
        let k = cols.len() + 1;
        // Column → its position in `cols` (+ 1; 0: not in the working set).
        let mut pos = vec![0usize; self.width()];
        for (cc, &j) in cols.iter().enumerate() {
            pos[j] = cc + 1;
        }
        let mut out = vec![0.0; k * k];
        let mut entries: Vec<(usize, f64)> = Vec::new();
        for (&i, &s) in rows.iter().zip(scales) {
            let (idx, val) = self.row(i);
            entries.clear();
            entries.extend(
                idx.iter()
                    .zip(val)
                    .filter(|(&j, _)| pos[j] != 0)
                    .map(|(&j, &x)| (pos[j] - 1, s * x)),
            );
            entries.push((k - 1, s));
            for &(a, za) in &entries {
                for &(b, zb) in &entries {
                    out[b * k + a] += za * zb;
                }
            }
        }
        out
    }

    fn sparse(&self) -> bool {
        true
    }

    fn check_finite(&self) -> Result<()> {
        if self.values().par_iter().any(|v| !v.is_finite()) {
            return Err(MkError::non_finite("the features"));
        }
        Ok(())
    }
}
