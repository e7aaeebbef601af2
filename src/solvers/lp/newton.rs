//! Single-kernel solvers for the smooth losses, on a dense kernel `K` with an intercept:
//! `min_{β,b} C Σ_i ℓ(y_i, (Kβ)_i + b) + ½ βᵀKβ`.
//!
//! Squared loss: kernel ridge, one Cholesky solve of `(K + I/C) β = y − b1`, `Σβ = 0`.
//! Logistic (and any twice-differentiable loss): damped Newton in IRLS form. At `f = Kβ + b`,
//! with `w = ℓ''(f)`, `g = ℓ'(f)` and the working response `z = f − g/w`, the Newton step solves
//! the weighted ridge `(K + (C W)⁻¹) β' = z − b' 1`, `Σβ' = 0`, followed by a backtracking line
//! search on the objective. At the optimum `β = −C ℓ'(f)`, the dual point of docs/mathematics.md §1.
//!
//! The kernel is dense, or `K = UUᵀ` of rank `R < n` (a low-rank stack's combined kernel,
//! [`crate::kernels::weighted_factors`]); then every system `K + D` is solved through its
//! `R × R` capacitance matrix and nothing `n × n` is formed (docs/mathematics.md §3.2).

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::linalg::{solve_with_intercept, Cholesky, DiagPlusLowRank, SpdFactor};
use crate::losses::Loss;

/// The kernel of a single-kernel solve.
#[derive(Clone, Copy)]
pub(crate) enum KernelOp<'a> {
    /// Row-major `n × n`.
    Dense(&'a [f64]),
    /// `K = UUᵀ`, `U` column-major `n × R`.
    Factor(&'a [f64]),
}

impl KernelOp<'_> {
    /// `out = K v`.
    pub(crate) fn matvec(&self, v: &[f64], out: &mut [f64]) {
        match *self {
            KernelOp::Dense(k) => dense_matvec(k, v, out),
            KernelOp::Factor(u) => {
                let n = v.len();
                out.fill(0.0);
                for col in u.chunks_exact(n.max(1)) {
                    let c = crate::kernels::stack_dot(col, v);
                    out.iter_mut().zip(col).for_each(|(o, x)| *o += c * x);
                }
            }
        }
    }

    /// The mean of `K`'s diagonal.
    fn mean_diag(&self, n: usize) -> f64 {
        let total: f64 = match *self {
            KernelOp::Dense(k) => (0..n).map(|i| k[i * n + i]).sum(),
            KernelOp::Factor(u) => u.iter().map(|x| x * x).sum(),
        };
        total / n.max(1) as f64
    }

    /// A factorisation of `K + diag(d)` (`d > 0`).
    fn plus_diagonal(&self, d: &[f64]) -> Result<SpdFactor> {
        let n = d.len();
        Ok(match *self {
            KernelOp::Dense(k) => {
                let mut a = k.to_vec();
                for (i, di) in d.iter().enumerate() {
                    a[i * n + i] += di;
                }
                SpdFactor::Dense(Cholesky::new(&a, n)?)
            }
            KernelOp::Factor(u) => SpdFactor::DiagPlusLowRank(DiagPlusLowRank::new(d, u.to_vec())?),
        })
    }
}

/// `out = K v` for a dense row-major symmetric `n×n` kernel.
pub(crate) fn dense_matvec(k: &[f64], v: &[f64], out: &mut [f64]) {
    use rayon::prelude::*;
    let n = v.len();
    out.par_iter_mut()
        .enumerate()
        .for_each(|(i, o)| *o = crate::kernels::stack_dot(&k[i * n..(i + 1) * n], v));
}

/// `C Σ ℓ(y_i, f_i) + ½ βᵀ K β` with `f = Kβ + b`, given `Kβ`.
fn objective(loss: Loss, c: f64, y: &[f64], kb: &[f64], beta: &[f64], b: f64) -> f64 {
    let data: f64 = y
        .iter()
        .zip(kb)
        .map(|(&yi, &f)| loss.value(yi, f + b))
        .sum();
    let reg: f64 = beta.iter().zip(kb).map(|(x, k)| x * k).sum();
    c * data + 0.5 * reg
}

/// Newton / ridge state, warm-started across calls. (`pub` only because the public
/// [`SingleKernel`](super::SingleKernel) holds one: this module is private.)
pub struct NewtonSolver {
    loss: Loss,
    c: f64,
    y: Vec<f64>,
    pub(super) beta: Vec<f64>,
    pub(super) b: f64,
    /// Newton iterations of the last solve.
    pub(super) iterations: usize,
}

impl NewtonSolver {
    /// The loss being fitted.
    pub(super) fn loss(&self) -> Loss {
        self.loss
    }

    pub(super) fn new(loss: Loss, c: f64, y: &[f64]) -> Result<Self> {
        if !matches!(loss, Loss::Squared | Loss::Logistic) {
            return Err(MkError::config(
                "loss",
                "the Newton solver handles the squared and logistic losses",
            ));
        }
        Ok(NewtonSolver {
            loss,
            c,
            y: y.to_vec(),
            beta: vec![0.0; y.len()],
            b: 0.0,
            iterations: 0,
        })
    }

    /// Solves on the kernel `k` to a relative objective decrease of `tol` (squared loss:
    /// exactly).
    pub(super) fn solve(
        &mut self,
        k: KernelOp<'_>,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<()> {
        let n = self.y.len();
        let c = self.c;
        if self.loss == Loss::Squared {
            let chol = k.plus_diagonal(&vec![1.0 / c; n])?;
            let (beta, b) = solve_with_intercept(&chol, &self.y);
            self.beta = beta;
            self.b = b;
            self.iterations = 1;
            return Ok(());
        }
        let mut kb = vec![0.0; n];
        k.matvec(&self.beta, &mut kb);
        // The warm start's intercept belongs to the last kernel: re-fitted to this one
        // (1-D, O(n) per step), since a stale `b` can leave points misclassified by hundreds
        // when the kernel's scale is large, where Newton's quadratic model is useless.
        self.b = self.loss.best_intercept(&self.y, &kb, self.b);
        let mut obj = objective(self.loss, c, &self.y, &kb, &self.beta, self.b);
        let mut kb_new = vec![0.0; n];
        // The floor on the curvature w keeps `1/(Cw)` finite for points whose ℓ″ underflows:
        // such a point gets the diagonal `1/(C w_min)`, which decouples it from the system.
        // A floor of 1e-10 on w alone is that only up to C ≈ 1: at C = 1e12 (or a kernel
        // ×1e12) it capped `1/(Cw)` at 1e-2, far below the kernel's scale, so well-classified
        // points with `Cw ≈ 1e-2` were treated as tight and Newton's steps were wrong for
        // them (linear convergence, 83 outer iterations to 1e-6 on one kernel). Capping
        // `1/(Cw)` at 1e12 times the kernel's mean diagonal decouples only what is negligible.
        let kscale = k.mean_diag(n);
        let w_min = if kscale > 0.0 && kscale.is_finite() {
            1e-10f64.min(1e-12 / (c * kscale))
        } else {
            1e-10
        };
        self.iterations = 0;
        for _ in 0..100 {
            interrupt.check()?;
            self.iterations += 1;
            let mut z = vec![0.0; n];
            let mut d = vec![0.0; n];
            for i in 0..n {
                let f = kb[i] + self.b;
                let w = self.loss.deriv2(self.y[i], f).max(w_min);
                let g = self.loss.deriv(self.y[i], f);
                z[i] = f - g / w;
                d[i] = 1.0 / (c * w);
            }
            let chol = k.plus_diagonal(&d)?;
            let (beta_full, b_full) = solve_with_intercept(&chol, &z);
            // Backtracking on the objective along the Newton direction.
            let mut t = 1.0;
            let mut accepted = false;
            let mut beta_t = vec![0.0; n];
            for _ in 0..40 {
                for i in 0..n {
                    beta_t[i] = self.beta[i] + t * (beta_full[i] - self.beta[i]);
                }
                let b_t = self.b + t * (b_full - self.b);
                k.matvec(&beta_t, &mut kb_new);
                let obj_t = objective(self.loss, c, &self.y, &kb_new, &beta_t, b_t);
                if obj_t <= obj + 1e-14 * obj.abs().max(1.0) {
                    let decrease = obj - obj_t;
                    std::mem::swap(&mut self.beta, &mut beta_t);
                    std::mem::swap(&mut kb, &mut kb_new);
                    self.b = b_t;
                    obj = obj_t;
                    accepted = true;
                    if decrease <= tol * obj.abs().max(1e-300) && t == 1.0 {
                        return Ok(());
                    }
                    break;
                }
                t *= 0.5;
            }
            if !accepted {
                // No decrease even for tiny steps: at the optimum to rounding.
                return Ok(());
            }
        }
        Ok(())
    }
}
