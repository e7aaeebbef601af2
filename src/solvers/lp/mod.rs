//! ℓp-norm MKL (Kloft et al. 2011), with the kernel weights `θ` in closed form.
//!
//! Primal (docs/mathematics.md §0): `P = C Σ_i ℓ(y_i, f(x_i)) + ½ (Σ_m ‖f_m‖^q)^{2/q}`,
//! `q = 2p/(p+1)`, which is Kloft's (P) with `‖θ‖_p ≤ 1`.
//! Dual (Kloft eq. (D), docs/mathematics.md §1), for a coefficient vector `β` with `Σβ = 0` and
//! `−β_i/C` in the domain of `ℓ*(y_i, ·)`:
//! `D(β) = −C Σ_i ℓ*(y_i, −β_i/C) − ½ ‖(βᵀ K_m β)_m‖_{p*}`, `p* = p/(p−1)`.
//! (For the hinge loss `β = Yα` and this is `1ᵀα − ½‖(αᵀQ_mα)_m‖_{p*}`.)
//!
//! Algorithm 1 (wrapper, `analytic`): solve the single-kernel problem on `K_θ = Σ θ_m K_m`
//! (warm-started), evaluate `βᵀK_mβ` for all m in one pass over the stack, report `P`, `D`
//! and the gap, and update `θ` by eq. 17 with `‖w_m‖² = θ_m² βᵀK_mβ`:
//! `θ_m = ‖w_m‖^{2/(p+1)} / (Σ_k ‖w_k‖^{2p/(p+1)})^{1/p}`.
//! The model is `A[m] = θ_m β`, so `f = K_θ β + b`.
//!
//! One file per algorithm: `analytic` (Algorithm 1, with its working set of points from
//! `solvers::points`) and `interleaved` (Algorithm 2); the single-kernel solvers of Algorithm 1
//! are `solvers::single`; the penalty, its dual and eq. 17 are `penalties::lp`.

mod analytic;
mod interleaved;
mod one_class;

pub(crate) use analytic::{extrapolate, over_relaxation};

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::{costs, Loss};
use crate::penalties::duals::lp_dual;
use crate::penalties::lp::{lp_penalty, DEFAULT_P};
use crate::result::{FitResult, PsdWitness};
pub(crate) use crate::solvers::tracker::Tracker;

pub use one_class::{fit_one_class, fit_one_class_weighted, OneClassConfig};

/// How θ is learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LpAlgorithm {
    /// Kloft's Algorithm 1: full single-kernel solves between closed-form θ updates.
    Analytic,
    /// Kloft's Algorithm 2: θ updated inside SMO (hinge loss only).
    Interleaved,
}

/// Settings of an ℓp-MKL fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LpConfig {
    /// The norm `p ∈ [1, ∞]` of θ.
    pub p: f64,
    /// Loss weight.
    pub c: f64,
    pub loss: Loss,
    pub algorithm: LpAlgorithm,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Outer iterations at most.
    pub max_iter: usize,
    /// Smallest accuracy asked of the single-kernel solver (SMO: maximal KKT violation).
    pub inner_tol: f64,
}

impl Default for LpConfig {
    fn default() -> Self {
        LpConfig {
            p: DEFAULT_P,
            c: 1.0,
            loss: Loss::Hinge,
            algorithm: LpAlgorithm::Analytic,
            tol: 1e-3,
            max_iter: 200,
            inner_tol: 1e-7,
        }
    }
}

/// The settings by name (`algorithm` is not one: it is the solver's name, `analytic` or
/// `interleaved`).
impl Fields for LpConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        v.float("p", &mut self.p)?;
        crate::solvers::common::common_fields(
            v,
            &mut self.c,
            &mut self.loss,
            &mut self.tol,
            &mut self.max_iter,
        )?;
        v.float("inner_tol", &mut self.inner_tol)
    }
}

impl LpConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        if self.p.is_nan() || self.p < 1.0 {
            return Err(MkError::config(
                "p",
                format!("must be in [1, inf], got {}", self.p),
            ));
        }
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        if self.algorithm == LpAlgorithm::Interleaved && self.loss != Loss::Hinge {
            return Err(MkError::config(
                "loss",
                "solver 'interleaved' supports the hinge loss only; use 'analytic'",
            ));
        }
        Ok(())
    }
}

/// The certificate of an iterate `A[m] = θ_m β`: `P`, `D`, the block norms and the model
/// `(scale·A, b)` at which `P` holds.
pub(crate) struct Certificate {
    pub primal: f64,
    pub dual: f64,
    /// `‖f_m‖` of the scaled model.
    pub norms: Vec<f64>,
    /// The factor on `A` (1 unless [`Loss::lift_to_margin`] found a better primal).
    pub scale: f64,
    pub b: f64,
}

impl Certificate {
    /// `scale · β`: the `β` of the model at which `P` holds.
    pub fn scaled(&self, beta: &[f64]) -> Vec<f64> {
        beta.iter().map(|v| self.scale * v).collect()
    }

    /// Records the iterate `A[m] = θ_m β` in `tracker`, its dual screened by `witness`;
    /// returns the gap to stop on.
    pub fn record(
        self,
        tracker: &mut Tracker<'_>,
        witness: Option<PsdWitness>,
        theta: &[f64],
        beta: &[f64],
    ) -> f64 {
        let beta = self.scaled(beta);
        tracker.record(
            self.primal,
            (self.dual, witness),
            theta,
            &beta,
            self.b,
            self.norms,
        )
    }
}

/// `P`, `D` and the block norms `‖f_m‖ = θ_m sqrt(βᵀK_mβ)` at `A[m] = θ_m β`, given
/// `quad[m] = βᵀK_mβ` and `f = K_θ β` (without the intercept `b`); `P` at the model lifted
/// onto the margin when that is lower ([`Loss::lift_to_margin`]). `D` at the dual point
/// `dual = (point, its forms)`: `(β, quad)`, or the natural point of `penalties::duals::natural_dual`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn certificate(
    cfg: &LpConfig,
    y: &[f64],
    c: &[f64],
    theta: &[f64],
    b: f64,
    quad: &[f64],
    f: &[f64],
    dual: (&[f64], &[f64]),
) -> Certificate {
    let norms: Vec<f64> = theta
        .iter()
        .zip(quad)
        .map(|(t, q)| t * q.max(0.0).sqrt())
        .collect();
    let penalty = lp_penalty(&norms, cfg.p);
    let primal = cfg.loss.weighted_total(y, f, b, c) + penalty;
    let (scale, b, primal) = cfg
        .loss
        .lift_to_margin(y, f, b, c, penalty, primal)
        .unwrap_or((1.0, b, primal));
    Certificate {
        primal,
        dual: lp_dual(cfg.loss, c, y, dual.0, dual.1, cfg.p),
        norms: norms.iter().map(|s| scale * s).collect(),
        scale,
        b,
    }
}

/// Fits ℓp-norm MKL on a kernel stack.
pub fn fit_lp(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_lp_weighted(stack, y, None, cfg, interrupt)
}

/// [`fit_lp`] with a weight per sample on the loss: the data term `C Σ_i w_i ℓ(y_i, f(x_i))`
/// (SMO's boxes `0 ≤ α_i ≤ C w_i`; docs/mathematics.md §0).
pub fn fit_lp_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::common::validate_targets(stack.n(), y)?;
    let c = &costs(cfg.c, sample_weight, y.len())?;
    match cfg.algorithm {
        LpAlgorithm::Analytic => analytic::fit_analytic(stack, y, c, cfg, interrupt),
        LpAlgorithm::Interleaved => interleaved::fit_interleaved(stack, y, c, cfg, interrupt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::DenseStack;
    use crate::result::SolveStatus;
    use crate::solvers::test_util::{factored, problem, Formed};

    /// The smooth losses' Newton solves on a stack of factors (total rank 15 < n = 60, through
    /// the capacitance matrix) reach the optimum of the same kernels stored dense.
    #[test]
    fn low_rank_newton_solves_like_the_dense_stack() {
        let (g, m, yr) = problem(60, true, 5);
        let (_, _, yc) = problem(60, false, 5);
        let (lr, products) = factored(&g, m, 60, 3);
        let dense = DenseStack::new(&products, m, 60).unwrap();
        for (loss, y) in [(Loss::Squared, &yr), (Loss::Logistic, &yc)] {
            for p in [1.0, 2.0] {
                let cfg = LpConfig {
                    p,
                    c: 3.0,
                    loss,
                    tol: 1e-9,
                    ..LpConfig::default()
                };
                let a = fit_lp(&lr, y, &cfg, &NoInterrupt).unwrap();
                let b = fit_lp(&dense, y, &cfg, &NoInterrupt).unwrap();
                assert_eq!(a.status, SolveStatus::Converged, "{loss:?} p = {p}");
                assert_eq!(b.status, SolveStatus::Converged, "{loss:?} p = {p}");
                assert!(
                    (a.primal - b.primal).abs() <= 1e-7 * b.primal,
                    "{loss:?} p = {p}: {} vs {}",
                    a.primal,
                    b.primal
                );
            }
        }
    }

    /// Whole steps on the gradient caches (warm starts from `Σ θ_m K_m β`, columns of `K_θ`
    /// on demand, forms `βᵀh_m`) certify what forming `K_θ` certifies: the same iterations,
    /// objective values and weights to rounding.
    #[test]
    fn cached_whole_steps_certify_like_the_formed_kernel() {
        let n = 80;
        let (g, m, y) = problem(n, false, 3);
        let dense = DenseStack::new(&g, m, n).unwrap();
        let formed = Formed(dense);
        for (loss, p, c) in [
            (Loss::Hinge, 2.0, 1.0),
            (Loss::Hinge, 4.0 / 3.0, 10.0),
            (Loss::SquaredHinge, 2.0, 1.0),
        ] {
            let cfg = LpConfig {
                p,
                c,
                loss,
                tol: 1e-6,
                ..LpConfig::default()
            };
            let a = fit_lp(&dense, &y, &cfg, &NoInterrupt).unwrap();
            let b = fit_lp(&formed, &y, &cfg, &NoInterrupt).unwrap();
            let case = format!("{loss:?} p = {p} C = {c}");
            assert!(a.n_iter > 1, "{case}: one iteration tests no cache");
            assert_eq!(a.n_iter, b.n_iter, "{case}");
            assert!(
                (a.primal - b.primal).abs() <= 1e-10 * b.primal.abs(),
                "{case}"
            );
            assert!((a.dual - b.dual).abs() <= 1e-10 * b.dual.abs(), "{case}");
            for (u, v) in a.kernel_weights.iter().zip(&b.kernel_weights) {
                assert!((u - v).abs() <= 1e-8, "{case}: {u} vs {v}");
            }
        }
    }

    /// The analytic solver on kernels computed on demand (columns of `K_θ` through the row
    /// cache, the working set packed or on demand) reaches the fit of the same kernels stored
    /// dense: same θ and objective to 1e-8 relative.
    #[test]
    fn on_demand_kernels_fit_like_the_stored_stack() {
        let pb = crate::solvers::test_util::OnDemandProblem::new();
        let (n, yc, yr) = (pb.n, &pb.labels, &pb.targets);
        let dense = pb.stored();
        let cases = [
            (Loss::Hinge, yc, 2.0),
            (Loss::Hinge, yc, 4.0),
            (Loss::SquaredHinge, yc, 4.0 / 3.0),
            (Loss::EpsilonInsensitive { epsilon: 0.1 }, yr, 2.0),
        ];
        // A cache of a few columns (and an on-demand working set), and one that holds all.
        for cache in [3 * 8 * n, 1 << 24] {
            let od = pb.on_demand(cache);
            for &(loss, y, pn) in &cases {
                let cfg = LpConfig {
                    p: pn,
                    c: 2.0,
                    loss,
                    tol: 1e-10,
                    ..LpConfig::default()
                };
                let a = fit_lp(&od, y, &cfg, &NoInterrupt).unwrap();
                let b = fit_lp(&dense, y, &cfg, &NoInterrupt).unwrap();
                let what = format!("{loss:?} p = {pn}, cache {cache}");
                crate::solvers::test_util::assert_same_fit(&a, &b, 1e-8, 1e-4, &what);
            }
        }
    }
}
