//! Sequential minimal optimisation (SMO) for SVM duals on a precomputed kernel: the SVM engine
//! of ℓp-norm MKL (`docs/mathematics.md` §3).
//!
//! # The problem
//!
//! [`SmoState`] solves libsvm's generic dual
//!
//! ```text
//! min_α  F(α) = ½ αᵀQα + pᵀα    s.t.  yᵀα = Δ,  0 ≤ α_t ≤ U_t   (U_t may be +∞)
//! Q_st = y_s y_t K̃_{k(s) k(t)} + [s = t] d_t,      y_t ∈ {+1, −1}
//! ```
//!
//! where `K̃` is an `n×n` kernel read column by column through [`KernelColumns`], `k(t)` maps a
//! variable to its kernel row (the identity, or `t mod n` for the `2n` variables of ε-SVR, so
//! that libsvm's `SVR_Q = [[K, −K], [−K, K]]` is never materialised) and `d ≥ 0` is a diagonal
//! shift (`1/C_t` for the squared hinge loss).
//!
//! # The algorithm (Fan, Chen & Lin 2005; libsvm's `Solver`)
//!
//! With `G = ∇F = Qα + p`, `I_up = {t : y_t = +1, α_t < U_t} ∪ {t : y_t = −1, α_t > 0}` and
//! `I_low = {t : y_t = +1, α_t > 0} ∪ {t : y_t = −1, α_t < U_t}`, α is optimal iff
//! `m(α) = max_{t∈I_up} −y_t G_t ≤ M(α) = min_{t∈I_low} −y_t G_t`. Each step picks
//!
//! ```text
//! i = argmax_{t∈I_up} −y_t G_t                                      (maximal violation)
//! j = argmin_{t∈I_low, −y_t G_t < m} −b_it² / a_it,                  (second-order gain, WSS2)
//!     a_it = Q_ii + Q_tt − 2 y_i y_t Q_it  (τ = 1e-12 if a_it ≤ 0),  b_it = m + y_t G_t
//! ```
//!
//! solves the two-variable subproblem in closed form (clipped to the box), and updates
//! `G ← G + Q_{:,i} Δα_i + Q_{:,j} Δα_j`. It stops when `m(α) − M(α) < eps` (libsvm's test).
//! Shrinking (Joachims 1999; libsvm §5 of Chang & Lin 2011) temporarily drops bound variables
//! that are unlikely to move; before the final check the full gradient is reconstructed from
//! `Ḡ_t = Σ_{s: α_s = U_s} U_s Q_ts` and the free variables. The intercept follows libsvm:
//! `ρ` is the mean of `y_t G_t` over free variables, or the midpoint of the feasible interval
//! if none is free; `b = −ρ`.
//!
//! References: R.-E. Fan, P.-H. Chen, C.-J. Lin, *Working set selection using second order
//! information for training SVM*, JMLR 6 (2005); C.-C. Chang, C.-J. Lin, *LIBSVM: a library
//! for support vector machines*, ACM TIST 2 (2011), `svm.cpp`.
//!
//! # Formulations
//!
//! [`svc`] (hinge), [`l2svm`] (squared hinge), [`svr`] (ε-insensitive) and [`one_class`]
//! (Schölkopf's ν one-class SVM) set up `Q, p, y, U, Δ` as libsvm does and return an
//! [`SvmSolution`] whose `objective` is exactly libsvm's (and so scikit-learn's) dual objective.
//!
//! ```
//! use multikernel::solvers::smo::{svc, DenseKernel, SmoOptions};
//! use multikernel::NoInterrupt;
//! // Two 1-d points x = 2 (class +1) and x = 0 (class −1), linear kernel.
//! let k = [4.0, 0.0, 0.0, 0.0];
//! let kernel = DenseKernel::new(&k, 2).unwrap();
//! let sol = svc(&kernel, &[1.0, -1.0], &[10.0], &SmoOptions::default(), None, &NoInterrupt)
//!     .unwrap();
//! assert!((sol.coef[0] - 0.5).abs() < 1e-9 && (sol.intercept + 1.0).abs() < 1e-9);
//! assert!((sol.dual_value() - 0.5).abs() < 1e-9); // 1ᵀα − ½αᵀQα
//! ```

mod cache;
mod formulations;
mod scan;
mod solver;

#[cfg(test)]
mod tests;

pub use cache::CachedColumns;
pub use formulations::{l2svm, one_class, svc, svr, SvmSolution};
pub(crate) use formulations::{l2svm_shifted, svc_shifted, Warm};
pub use solver::{QpSpec, SmoState, SolveInfo, Step, StepOutcome};

use crate::error::{MkError, Result};

/// Column access to a symmetric `n×n` kernel `K̃` (unsigned: the labels are applied by the
/// solver). Implementations must return the same values for the lifetime of a solve.
pub trait KernelColumns: Sync {
    /// Kernel size `n`.
    fn n(&self) -> usize;
    /// `out[i] = K̃_ii`, `out.len() == n`.
    fn diag(&self, out: &mut [f64]);
    /// `out[j] = K̃_ji`, `out.len() == n`.
    fn column(&self, i: usize, out: &mut [f64]);
    /// Column `i` without copying, when the kernel is stored densely; the solver then needs no
    /// column cache and its gradient update reads the row in place.
    fn column_slice(&self, _i: usize) -> Option<&[f64]> {
        None
    }
    /// `out = K̃ w` (`w`, `out` of length `n`) when the kernel computes it faster than the
    /// columns of the non-zeros of `w` (a kernel with explicit features: one pass over the
    /// points); `false`, `out` untouched, when it has no such product and the solver reads the
    /// columns.
    fn products(&self, _w: &[f64], _out: &mut [f64]) -> bool {
        false
    }
}

/// A dense, row-major, symmetric `n×n` kernel borrowed without copying: column `i` is row `i`.
#[derive(Debug, Clone, Copy)]
pub struct DenseKernel<'a> {
    data: &'a [f64],
    n: usize,
}

impl<'a> DenseKernel<'a> {
    /// Wraps `data` of length `n·n` (symmetry is assumed, not checked).
    pub fn new(data: &'a [f64], n: usize) -> Result<Self> {
        if n == 0 || data.len() != n * n {
            return Err(MkError::Shape(format!(
                "a dense kernel must have n·n values with n ≥ 1; got {} values for n = {n}",
                data.len()
            )));
        }
        Ok(Self { data, n })
    }

    /// The underlying row-major values.
    pub fn data(&self) -> &'a [f64] {
        self.data
    }
}

impl KernelColumns for DenseKernel<'_> {
    fn n(&self) -> usize {
        self.n
    }

    fn diag(&self, out: &mut [f64]) {
        for (i, o) in out.iter_mut().enumerate().take(self.n) {
            *o = self.data[i * self.n + i];
        }
    }

    fn column(&self, i: usize, out: &mut [f64]) {
        out.copy_from_slice(&self.data[i * self.n..(i + 1) * self.n]);
    }

    #[inline]
    fn column_slice(&self, i: usize) -> Option<&[f64]> {
        Some(&self.data[i * self.n..(i + 1) * self.n])
    }
}

/// Settings shared by every SMO solve.
#[derive(Debug, Clone, PartialEq)]
pub struct SmoOptions {
    /// Stop when the maximal KKT violation `m(α) − M(α)` falls below this (libsvm's `-e`;
    /// scikit-learn's `tol`). Default `1e-6`.
    pub eps: f64,
    /// libsvm-style shrinking. Default `true`.
    pub shrinking: bool,
    /// Maximal number of SMO steps per solve; `None` is libsvm's `max(10⁷, 100·l)`.
    pub max_iter: Option<usize>,
}

impl Default for SmoOptions {
    fn default() -> Self {
        Self {
            eps: 1e-6,
            shrinking: true,
            max_iter: None,
        }
    }
}

impl SmoOptions {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(MkError::config(
                "eps",
                format!("must be finite and > 0, got {}", self.eps),
            ));
        }
        if self.max_iter == Some(0) {
            return Err(MkError::config("max_iter", "must be ≥ 1"));
        }
        Ok(())
    }

    /// The step budget for a problem with `l` variables.
    pub(crate) fn max_iter_for(&self, l: usize) -> usize {
        self.max_iter
            .unwrap_or_else(|| 10_000_000usize.max(l.saturating_mul(100)))
    }
}
