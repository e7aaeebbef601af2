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
//! `R × R` capacitance matrix and nothing `n × n` is formed (docs/mathematics.md §3.2). A
//! dense kernel of at least [`PCG_MIN_POINTS`] points is solved by conjugate gradients
//! preconditioned by a pivoted Cholesky of `K` (one `K` product per iteration, no `n³`
//! factorisation; docs/mathematics.md §3.2, "Conjugate gradients").

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{factor_matvec, pivoted_cholesky, stack_dot as dot};
use crate::linalg::{solve_with_intercept, Cholesky, DiagPlusLowRank, SpdFactor};
use crate::losses::Loss;

/// From this many points on, a dense kernel's systems are solved by preconditioned conjugate
/// gradients instead of Cholesky (measured in docs/mathematics.md §3.2).
pub(crate) const PCG_MIN_POINTS: usize = 500;

/// Largest rank of the pivoted-Cholesky preconditioner, and its relative trace tolerance.
const PRECOND_RANK: usize = 150;
const PRECOND_TOL: f64 = 1e-4;

/// The bordered system `(K + diag(d)) x + b1 = r`, `1ᵀx = 0` of one step, solved by
/// conjugate gradients on `1^⊥` from `x0` with the preconditioner `M = LLᵀ + diag(d)`
/// (Woodbury) projected on `1^⊥`: `P v = M⁻¹v − M⁻¹1 (1ᵀM⁻¹v)/(1ᵀM⁻¹1)`, which maps `1` to 0
/// (the projected CG of Gould, Hribar & Nocedal 2001). Each residual is moved by the multiple
/// of `1` that `P` removes and that multiple added to `b`, so the residual stays the bordered
/// system's: left in it, the `b1` part grows, cancels, and the iteration drifts away from the
/// solution after converging (docs/mathematics.md §3.2).
/// Stops when `rᵀPr` is at most `rtol²` times its start or `atol²` times that of `r`. `None`
/// when it has not converged in `max_iter` iterations (the caller then factorises).
#[allow(clippy::too_many_arguments)]
fn pcg_bordered(
    k: &[f64],
    d: &[f64],
    l: &[f64],
    r: &[f64],
    x0: &[f64],
    rtol: f64,
    atol: f64,
    max_iter: usize,
) -> Result<Option<(Vec<f64>, f64, usize)>> {
    let n = r.len();
    let pre = DiagPlusLowRank::new(d, l.to_vec())?;
    let m_one = pre.solve(&vec![1.0; n]);
    let s_one: f64 = m_one.iter().sum();
    // z = P res, and res, b moved by the multiple of 1 that P removes.
    let project = |res: &mut [f64], b: &mut f64| -> Vec<f64> {
        let mut z = pre.solve(res);
        let c = z.iter().sum::<f64>() / s_one;
        z.iter_mut().zip(&m_one).for_each(|(zi, mi)| *zi -= c * mi);
        res.iter_mut().for_each(|ri| *ri -= c);
        *b += c;
        z
    };
    let apply = |v: &[f64], out: &mut [f64]| {
        dense_matvec(k, v, out);
        out.iter_mut()
            .zip(d)
            .zip(v)
            .for_each(|((o, di), vi)| *o += di * vi);
    };
    let mut rhs = r.to_vec();
    let z_rhs = project(&mut rhs, &mut 0.0);
    let rhs_norm = dot(&rhs, &z_rhs).max(0.0);
    let mean = x0.iter().sum::<f64>() / n as f64;
    let mut x: Vec<f64> = x0.iter().map(|v| v - mean).collect();
    let mut ax = vec![0.0; n];
    apply(&x, &mut ax);
    let mut res: Vec<f64> = r.iter().zip(&ax).map(|(a, b)| a - b).collect();
    let mut b = 0.0;
    let mut z = project(&mut res, &mut b);
    let mut rz = dot(&res, &z);
    let stop = (rtol * rtol * rz).max(atol * atol * rhs_norm);
    let mut p = z.clone();
    let mut ap = vec![0.0; n];
    for it in 0..max_iter {
        if rz <= stop {
            return Ok(Some((x, b, it)));
        }
        apply(&p, &mut ap);
        let pap = dot(&p, &ap);
        if pap.is_nan() || pap <= 0.0 {
            return Ok(None);
        }
        let alpha = rz / pap;
        x.iter_mut().zip(&p).for_each(|(xi, pi)| *xi += alpha * pi);
        res.iter_mut()
            .zip(&ap)
            .for_each(|(ri, ai)| *ri -= alpha * ai);
        z = project(&mut res, &mut b);
        let rz_new = dot(&res, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        p.iter_mut()
            .zip(&z)
            .for_each(|(pi, zi)| *pi = zi + beta * *pi);
    }
    Ok(None)
}

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
            KernelOp::Factor(u) => factor_matvec(u, v, out),
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
    /// Dense kernels of at least this many points are solved by conjugate gradients.
    pub(super) pcg_min: usize,
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
            pcg_min: PCG_MIN_POINTS,
        })
    }

    /// Solves the bordered system `(K + diag(d)) x + b1 = r`, `1ᵀx = 0`: by conjugate
    /// gradients from `x0` when `precond` (a pivoted Cholesky of a dense `K`) is given and
    /// they converge, else by a factorisation of `K + diag(d)`.
    fn bordered(
        k: KernelOp<'_>,
        precond: Option<&[f64]>,
        d: &[f64],
        r: &[f64],
        x0: &[f64],
        rtol: f64,
        atol: f64,
    ) -> Result<(Vec<f64>, f64)> {
        if let (KernelOp::Dense(kd), Some(l)) = (k, precond) {
            // Past 100 iterations the factorisation is the cheaper route (§3.2).
            if let Some((x, b, _)) = pcg_bordered(kd, d, l, r, x0, rtol, atol, 100)? {
                return Ok((x, b));
            }
        }
        Ok(solve_with_intercept(&k.plus_diagonal(d)?, r))
    }

    /// The preconditioner of a dense kernel of at least `pcg_min` points: its pivoted
    /// Cholesky factor (`n · rank²` flops).
    fn preconditioner(&self, k: KernelOp<'_>) -> Option<Vec<f64>> {
        let n = self.y.len();
        match k {
            KernelOp::Dense(kd) if n >= self.pcg_min => {
                let diag: Vec<f64> = (0..n).map(|i| kd[i * n + i]).collect();
                let row = |j: usize, out: &mut [f64]| out.copy_from_slice(&kd[j * n..(j + 1) * n]);
                Some(pivoted_cholesky(n, &diag, row, PRECOND_TOL, PRECOND_RANK).0)
            }
            _ => None,
        }
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
        let precond = self.preconditioner(k);
        let precond = precond.as_deref();
        if self.loss == Loss::Squared {
            let d = vec![1.0 / c; n];
            let (beta, b) = Self::bordered(k, precond, &d, &self.y, &self.beta, 0.0, 1e-10)?;
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
        // Conjugate gradients give inexact Newton steps (forcing term 1e-2); a step that
        // decreases nothing is retried with the factorisation before Newton stops.
        let mut inexact = precond;
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
            let (beta_full, b_full) = Self::bordered(k, inexact, &d, &z, &self.beta, 1e-2, 1e-12)?;
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
                if inexact.is_some() {
                    inexact = None;
                    continue;
                }
                // No decrease even for tiny steps: at the optimum to rounding.
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::{DenseStack, KernelStack};
    use crate::solvers::test_util::problem;

    /// Conjugate gradients (forced on a small problem) reach the optimum the Cholesky route
    /// reaches, for kernel ridge and for logistic regression, from a cold and a warm start.
    #[test]
    fn conjugate_gradients_solve_like_cholesky() {
        let n = 150;
        let (g, m, yr) = problem(n, true, 4);
        let (_, _, yc) = problem(n, false, 4);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let mut k = vec![0.0; n * n];
        stack.combine(&[0.5, 1.0, 0.0, 2.0, 0.3], &mut k);
        for (loss, y) in [(Loss::Squared, &yr), (Loss::Logistic, &yc)] {
            let mut direct = NewtonSolver::new(loss, 4.0, y).unwrap();
            direct.pcg_min = usize::MAX;
            let mut cg = NewtonSolver::new(loss, 4.0, y).unwrap();
            cg.pcg_min = 0;
            assert!(cg.preconditioner(KernelOp::Dense(&k)).is_some());
            for _ in 0..2 {
                direct
                    .solve(KernelOp::Dense(&k), 1e-14, &NoInterrupt)
                    .unwrap();
                cg.solve(KernelOp::Dense(&k), 1e-14, &NoInterrupt).unwrap();
                let scale = direct.beta.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                for (p, q) in cg.beta.iter().zip(&direct.beta) {
                    assert!((p - q).abs() <= 1e-6 * scale, "{loss:?}: {p} vs {q}");
                }
                assert!(
                    (cg.b - direct.b).abs() <= 1e-6 * (1.0 + direct.b.abs()),
                    "{loss:?}"
                );
                assert!(cg.beta.iter().sum::<f64>().abs() <= 1e-9 * scale * n as f64);
            }
        }
    }
}
