//! The passes a proximal Newton step makes over the features (docs/mathematics.md §2.13), on
//! a row-major `(n, R)` matrix of f64 or f32 ([`RowFeatures`]): numpy's blocks read in place,
//! or the columns of a stack of factors copied into rows once. Every pass runs over chunks of
//! [`CHUNK`] rows in parallel and sums the chunks' parts in order, so results do not depend on
//! the number of threads.

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{Element, KernelStack, RowFeatures};
use crate::linalg::clear_upper_simd_state;

/// Rows per chunk of the passes over the points.
pub(super) const CHUNK: usize = 2048;

/// The features as the steps read them, whatever their element type.
pub(super) trait FeatureOps: Sync {
    /// Points.
    fn n(&self) -> usize;
    /// `[0, D_0, D_0 + D_1, …, R]`: kernel `m` owns columns `offsets[m]..offsets[m + 1]`.
    fn offsets(&self) -> &[usize];
    /// `Gᵀv` for each `v` of `vs`: `out[k][j] = G_{:,j} · vs[k]`.
    fn t_products(&self, vs: &[&[f64]]) -> Vec<Vec<f64>>;
    /// `G_W δ` over the columns `cols` of a working set.
    fn product(&self, cols: &[usize], delta: &[f64]) -> Vec<f64>;
    /// The chunk `rows` (point indices) of `[G_W, 1]` scaled by `sq` per row, column-major
    /// `rows.len() × (|cols| + 1)`: a chunk's factor of the Hessian.
    fn scaled_rows(&self, cols: &[usize], rows: &[usize], sq: &[f64]) -> Vec<f64>;
    /// Per column `Σ_i c_i x_ij²`.
    fn weighted_squares(&self, c: &[f64]) -> Vec<f64>;

    /// Kernels.
    fn m(&self) -> usize {
        self.offsets().len() - 1
    }

    /// The total width `R`.
    fn width(&self) -> usize {
        self.offsets()[self.m()]
    }

    /// The columns of kernel `m`.
    fn block(&self, m: usize) -> std::ops::Range<usize> {
        self.offsets()[m]..self.offsets()[m + 1]
    }

    /// `[G_W, 1]ᵀ diag(h) [G_W, 1]` (column-major, order `|cols| + 1`), by chunks of rows,
    /// over the rows `rows` only when given (those where `h > 0`); the longest pass of a
    /// step, so `interrupt` is polled between batches of chunks.
    fn hessian(
        &self,
        cols: &[usize],
        h: &[f64],
        rows: Option<&[usize]>,
        interrupt: &dyn Interrupt,
    ) -> Result<Vec<f64>> {
        let k = cols.len() + 1;
        // Chunks summed per batch: up to 16, fewer for wide sets, whose per-chunk parts are
        // `k²` each (benches/peers/results/fit_memory.md).
        let batch = ((1usize << 23) / (k * k)).clamp(2, 16);
        let all: Vec<usize>;
        let rows = match rows {
            Some(r) => r,
            None => {
                all = (0..self.n()).collect();
                &all
            }
        };
        let chunks: Vec<&[usize]> = rows.chunks(CHUNK).collect();
        let mut hess = vec![0.0; k * k];
        for batch in chunks.chunks(batch) {
            interrupt.check()?;
            let parts: Vec<Vec<f64>> = batch
                .par_iter()
                .map(|rs| {
                    let sq: Vec<f64> = rs.iter().map(|&i| h[i].max(0.0).sqrt()).collect();
                    gram_lower(&self.scaled_rows(cols, rs, &sq), rs.len(), k)
                })
                .collect();
            for p in parts {
                hess.iter_mut().zip(&p).for_each(|(a, b)| *a += b);
            }
        }
        Ok(hess)
    }
}

/// `ZᵀZ` of the column-major `rows × k` matrix `z`, as a full symmetric column-major `k × k`
/// matrix computed from its lower triangle (half the products).
fn gram_lower(z: &[f64], rows: usize, k: usize) -> Vec<f64> {
    let zm = faer::MatRef::from_column_major_slice(z, rows, k);
    let mut out = faer::Mat::<f64>::zeros(k, k);
    faer::linalg::matmul::triangular::matmul(
        out.as_mut(),
        faer::linalg::matmul::triangular::BlockStructure::TriangularLower,
        faer::Accum::Replace,
        zm.transpose(),
        faer::linalg::matmul::triangular::BlockStructure::Rectangular,
        zm,
        faer::linalg::matmul::triangular::BlockStructure::Rectangular,
        1.0,
        faer::Par::Seq,
    );
    clear_upper_simd_state();
    (0..k * k)
        .map(|i| {
            let (r, c) = (i % k, i / k);
            if r >= c {
                out[(r, c)]
            } else {
                out[(c, r)]
            }
        })
        .collect()
}

/// Sums per-chunk vectors of length `len` in chunk order.
fn sum_parts(parts: Vec<Vec<f64>>, len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len];
    for p in parts {
        out.iter_mut().zip(&p).for_each(|(a, b)| *a += b);
    }
    out
}

impl<T: Element> FeatureOps for RowFeatures<'_, T> {
    fn n(&self) -> usize {
        RowFeatures::n(self)
    }

    fn offsets(&self) -> &[usize] {
        RowFeatures::offsets(self)
    }

    fn t_products(&self, vs: &[&[f64]]) -> Vec<Vec<f64>> {
        let (n, r) = (RowFeatures::n(self), RowFeatures::width(self));
        let parts: Vec<Vec<f64>> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|ch| {
                // `acc[k·R + j]`: column j's product with `vs[k]` over the chunk.
                let mut acc = vec![0.0; vs.len() * r];
                for i in ch * CHUNK..(ch * CHUNK + CHUNK).min(n) {
                    let row = self.row(i);
                    for (v, a) in vs.iter().zip(acc.chunks_exact_mut(r.max(1))) {
                        let vi = v[i];
                        if vi != 0.0 {
                            a.iter_mut()
                                .zip(row)
                                .for_each(|(s, x)| *s += vi * x.to_f64());
                        }
                    }
                }
                acc
            })
            .collect();
        let total = sum_parts(parts, vs.len() * r);
        total
            .chunks(r.max(1))
            .take(vs.len())
            .map(<[f64]>::to_vec)
            .collect()
    }

    fn product(&self, cols: &[usize], delta: &[f64]) -> Vec<f64> {
        let moved: Vec<(usize, f64)> = cols
            .iter()
            .zip(delta)
            .filter(|(_, &d)| d != 0.0)
            .map(|(&j, &d)| (j, d))
            .collect();
        let mut out = vec![0.0; RowFeatures::n(self)];
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(ch, chunk)| {
                for (t, o) in chunk.iter_mut().enumerate() {
                    let row = self.row(ch * CHUNK + t);
                    *o = moved.iter().map(|&(j, d)| d * row[j].to_f64()).sum();
                }
            });
        out
    }

    fn scaled_rows(&self, cols: &[usize], rows: &[usize], sq: &[f64]) -> Vec<f64> {
        let nr = rows.len();
        let mut z = vec![0.0; nr * (cols.len() + 1)];
        for (t, (&i, &s)) in rows.iter().zip(sq).enumerate() {
            let row = self.row(i);
            for (c, &j) in cols.iter().enumerate() {
                z[c * nr + t] = row[j].to_f64() * s;
            }
            z[cols.len() * nr + t] = s;
        }
        z
    }

    fn weighted_squares(&self, c: &[f64]) -> Vec<f64> {
        let (n, r) = (RowFeatures::n(self), RowFeatures::width(self));
        let parts: Vec<Vec<f64>> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|ch| {
                let mut acc = vec![0.0; r];
                let rows = ch * CHUNK..(ch * CHUNK + CHUNK).min(n);
                for (i, &ci) in rows.clone().zip(&c[rows]) {
                    acc.iter_mut()
                        .zip(self.row(i))
                        .for_each(|(a, x)| *a += ci * x.to_f64() * x.to_f64());
                }
                acc
            })
            .collect();
        sum_parts(parts, r)
    }
}

/// The features of a stack of factors as rows (one copy; the kernels' space solvers keep
/// them as columns), with their widths; an error for a dense kernel or non-finite values.
pub(super) fn rows_of(stack: &dyn KernelStack) -> Result<(Vec<f64>, Vec<usize>)> {
    let n = stack.n();
    let mut factors = Vec::with_capacity(stack.m());
    for m in 0..stack.m() {
        factors.push(stack.low_rank_factor(m).ok_or_else(|| {
            MkError::config(
                "solver",
                "prox_newton fits explicit features: feature blocks or low-rank factors \
                 (kernels=FeatureBank(...) or kernels.low_rank(...)), not a dense kernel stack",
            )
        })?);
    }
    let dims: Vec<usize> = factors.iter().map(|g| g.len() / n.max(1)).collect();
    let width: usize = dims.iter().sum();
    let mut data = vec![0.0; n * width];
    let mut j0 = 0;
    for (g, &d) in factors.iter().zip(&dims) {
        for (k, col) in g.chunks_exact(n.max(1)).enumerate() {
            for (i, &v) in col.iter().enumerate() {
                data[i * width + j0 + k] = v;
            }
        }
        j0 += d;
    }
    Ok((data, dims))
}

/// Checks that every feature is finite.
pub(super) fn check_finite<T: Element>(x: &RowFeatures<'_, T>) -> Result<()> {
    if x.data().par_iter().any(|v| !v.to_f64().is_finite()) {
        return Err(MkError::non_finite("the features"));
    }
    Ok(())
}
