//! Low-rank stacks `K_m ≈ G_m G_mᵀ` from pivoted (incomplete) Cholesky factorisation.
//!
//! The residual `R = K − GGᵀ` of a pivoted Cholesky factorisation is PSD, so
//! `‖R‖_F ≤ tr(R)`: stopping when `tr(R) ≤ tol · tr(K)` bounds the Frobenius error by
//! `tol · tr(K)`. A quadratic form then costs `n·r` instead of `n²/2`.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::kernels::stack::{DenseStack, KernelStack};
use crate::kernels::Element;
use crate::linalg::{clear_upper_simd_state, dot};

/// Pivoted Cholesky of one symmetric PSD kernel given by its diagonal and a column oracle.
/// Returns the factor as `r` columns of length `n` stored one after another, and the relative
/// residual trace `tr(K − GGᵀ)/tr(K)`.
pub fn pivoted_cholesky(
    n: usize,
    diag: &[f64],
    mut column: impl FnMut(usize, &mut [f64]),
    tol: f64,
    max_rank: usize,
) -> (Vec<f64>, f64) {
    let mut d: Vec<f64> = diag.iter().map(|v| v.max(0.0)).collect();
    let total: f64 = d.iter().sum();
    let mut g: Vec<f64> = Vec::new();
    let mut col = vec![0.0; n];
    if total <= 0.0 {
        return (g, 0.0);
    }
    let max_rank = max_rank.min(n);
    let mut rank = 0;
    while rank < max_rank {
        let residual: f64 = d.iter().sum();
        if residual <= tol * total {
            break;
        }
        let (piv, &dp) = d
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .expect("n ≥ 1");
        if dp <= 0.0 {
            break;
        }
        column(piv, &mut col);
        for l in 0..rank {
            let gl = &g[l * n..(l + 1) * n];
            let c = gl[piv];
            for (x, y) in col.iter_mut().zip(gl) {
                *x -= c * y;
            }
        }
        let s = dp.sqrt();
        for x in col.iter_mut() {
            *x /= s;
        }
        for (di, x) in d.iter_mut().zip(&col) {
            *di = (*di - x * x).max(0.0);
        }
        d[piv] = 0.0;
        g.extend_from_slice(&col);
        rank += 1;
    }
    let err = d.iter().sum::<f64>() / total;
    (g, err)
}

/// The columns `sqrt(θ_m) G_m` of the kernels with `θ_m > 0` (column-major `n × R`), so that
/// `Σ_m θ_m K_m = U Uᵀ`: the low-rank term of a Newton system solved through its `R × R`
/// capacitance matrix ([`crate::linalg::DiagPlusLowRank`]). `None` unless every such kernel
/// is stored as a factor and `R < n` (past that the dense system is the cheaper one), or when
/// some `θ_m < 0`.
pub fn weighted_factors(stack: &dyn KernelStack, theta: &[f64]) -> Option<Vec<f64>> {
    let n = stack.n();
    let mut rank = 0;
    for (m, &t) in theta.iter().enumerate() {
        if t < 0.0 {
            return None;
        }
        if t > 0.0 {
            rank += stack.low_rank_factor(m)?.len() / n.max(1);
        }
    }
    if rank >= n {
        return None;
    }
    let mut u = Vec::with_capacity(rank * n);
    for (m, &t) in theta.iter().enumerate() {
        if let (true, Some(g)) = (t > 0.0, stack.low_rank_factor(m)) {
            let s = t.sqrt();
            u.extend(g.iter().map(|x| s * x));
        }
    }
    Some(u)
}

/// `out = G Gᵀ v` for a factor `G` stored as columns of length `n = v.len()`.
pub(crate) fn factor_matvec(g: &[f64], v: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    for col in g.chunks_exact(v.len().max(1)) {
        let c = dot(col, v);
        out.iter_mut().zip(col).for_each(|(o, x)| *o += c * x);
    }
}

/// A stack of low-rank factors `K_m ≈ G_m G_mᵀ`, with `G_m` of shape `n × r_m`.
#[derive(Debug, Clone)]
pub struct LowRankStack {
    n: usize,
    /// Per kernel: `r_m` columns of length `n`, one after another.
    factors: Vec<Vec<f64>>,
    /// Per kernel: `tr(K_m − G_m G_mᵀ) / tr(K_m)`.
    errors: Vec<f64>,
}

impl LowRankStack {
    /// Factorises every kernel of a dense stack in parallel, to relative trace error `tol`
    /// and at most `max_rank` columns.
    pub fn from_dense<T: Element>(
        stack: &DenseStack<'_, T>,
        tol: f64,
        max_rank: usize,
    ) -> Result<Self> {
        if !(tol.is_finite() && (0.0..1.0).contains(&tol)) {
            return Err(MkError::config(
                "tol",
                format!("must be in [0, 1), got {tol}"),
            ));
        }
        if max_rank == 0 {
            return Err(MkError::config("max_rank", "must be at least 1"));
        }
        let n = stack.n();
        let (factors, errors): (Vec<Vec<f64>>, Vec<f64>) = (0..stack.m())
            .into_par_iter()
            .map(|m| {
                let mut diag = vec![0.0; n];
                stack.diag(m, &mut diag);
                pivoted_cholesky(n, &diag, |i, out| stack.column(m, i, out), tol, max_rank)
            })
            .unzip();
        Ok(LowRankStack { n, factors, errors })
    }

    /// Builds a stack from given factors (`r_m` columns of length `n` each).
    pub fn from_factors(n: usize, factors: Vec<Vec<f64>>) -> Result<Self> {
        if n == 0 || factors.is_empty() || factors.iter().any(|f| f.len() % n != 0) {
            return Err(MkError::Shape(
                "each factor must hold whole columns of length n".into(),
            ));
        }
        let errors = vec![0.0; factors.len()];
        Ok(LowRankStack { n, factors, errors })
    }

    /// The rank of each kernel's factor.
    pub fn ranks(&self) -> Vec<usize> {
        self.factors.iter().map(|f| f.len() / self.n).collect()
    }

    /// The relative trace error of each kernel's factor.
    pub fn errors(&self) -> &[f64] {
        &self.errors
    }

    /// Kernel `m`'s factor: `r_m` columns of length `n`, one after another.
    pub fn factor(&self, m: usize) -> &[f64] {
        &self.factors[m]
    }

    fn quad_one(&self, m: usize, v: &[f64]) -> f64 {
        self.factors[m]
            .chunks_exact(self.n)
            .map(|g| {
                let c = dot(g, v);
                c * c
            })
            .sum()
    }
}

impl KernelStack for LowRankStack {
    fn n(&self) -> usize {
        self.n
    }

    fn low_rank(&self) -> Option<&LowRankStack> {
        Some(self)
    }

    fn low_rank_factor(&self, m: usize) -> Option<&[f64]> {
        Some(&self.factors[m])
    }

    fn m(&self) -> usize {
        self.factors.len()
    }

    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]) {
        out.par_iter_mut()
            .zip(idx.par_iter())
            .for_each(|(o, &m)| *o = self.quad_one(m, v));
    }

    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        let b = vs.len() / self.n;
        out.par_chunks_mut(b)
            .zip(idx.par_iter())
            .for_each(|(o, &m)| {
                for (j, oj) in o.iter_mut().enumerate() {
                    *oj = self.quad_one(m, &vs[j * self.n..(j + 1) * self.n]);
                }
            });
    }

    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        factor_matvec(&self.factors[m], v, out);
    }

    /// `K_θ = W Gᵀ` with `G = [G_m]` and `W = [θ_m G_m]` over the kernels with `θ_m ≠ 0`: one
    /// matrix product, `n² R` flops at GEMM speed (docs/mathematics.md §2.12).
    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        let n = self.n;
        let mut g = Vec::new();
        let mut w = Vec::new();
        for (f, &t) in self.factors.iter().zip(theta) {
            if t != 0.0 {
                g.extend_from_slice(f);
                w.extend(f.iter().map(|x| t * x));
            }
        }
        let r = g.len() / n.max(1);
        let mut o = MatMut::from_row_major_slice_mut(out, n, n);
        if r == 0 {
            o.fill(0.0);
            return;
        }
        let wm = MatRef::from_column_major_slice(&w, n, r);
        let gm = MatRef::from_column_major_slice(&g, n, r);
        matmul(o, Accum::Replace, wm, gm.transpose(), 1.0, Par::rayon(0));
        clear_upper_simd_state();
    }

    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        out.fill(0.0);
        for g in self.factors[m].chunks_exact(self.n) {
            let c = g[i];
            for (o, x) in out.iter_mut().zip(g) {
                *o += c * x;
            }
        }
    }

    fn diag(&self, m: usize, out: &mut [f64]) {
        out.fill(0.0);
        for g in self.factors[m].chunks_exact(self.n) {
            for (o, x) in out.iter_mut().zip(g) {
                *o += x * x;
            }
        }
    }
}
