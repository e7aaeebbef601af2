//! The features of proximal Newton (docs/mathematics.md §2.13): a row-major `(n, R)` matrix of
//! f64 or f32 ([`RowFeatures`]), numpy's blocks read in place or the columns of a stack of
//! factors copied into rows once; the chunk size of the passes over them
//! ([`Chunks`](super::chunk::Chunks)) and a chunk's Hessian product.

use crate::error::{MkError, Result};
use crate::kernels::KernelStack;
use crate::linalg::clear_upper_simd_state;

/// Rows per chunk of the passes over the points.
pub(super) const CHUNK: usize = 2048;

/// `ZᵀZ` of the column-major `rows × k` matrix `z`, as a full symmetric column-major `k × k`
/// matrix computed from its lower triangle (half the products).
pub(super) fn gram_lower(z: &[f64], rows: usize, k: usize) -> Vec<f64> {
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
