//! One-class ℓp-norm MKL (docs/mathematics.md §3.7): Kloft et al.'s Algorithm 1 around the
//! one-class SVM of Schölkopf et al., in libsvm's scaling.
//!
//! Primal: `P = ½ (Σ_m ‖f_m‖^q)^{2/q} + Σ_i max(0, ρ − f(x_i)) − νnρ`, `q = 2p/(p+1)`, the
//! one-class SVM's `½‖w‖² + Σ ξ_i − νnρ` with the ℓp penalty (by the variational form of
//! the penalty, the SVM on `K_θ` at the best `‖θ‖_p ≤ 1`).
//! Dual: `D(α) = −½ ‖(αᵀK_mα)_m‖_{p*}` over `0 ≤ α_i ≤ 1`, `Σ α_i = νn`: at fixed θ it is
//! libsvm's one-class dual `−½ αᵀK_θα`, maximised over θ as in the two-class case.
//! Every SMO solution `α` is dual feasible, and `A[m] = θ_m α` is a primal point whose best
//! offset `ρ` is the `⌈νn⌉`-th smallest `f(x_i)` (the primal is piecewise linear in `ρ` with
//! slope `#{f_i < ρ} − νn`), so every step is certified.
//!
//! With a weight `w_i` per sample (scikit-learn's `sample_weight` of `OneClassSVM`) the loss
//! is `Σ_i w_i max(0, ρ − f(x_i)) − νWρ`, `W = Σ_i w_i`, the dual box `0 ≤ α_i ≤ w_i` with
//! `Σ α_i = νW`, and the best `ρ` the smallest `f_i` whose cumulated weight reaches `νW`:
//! integer weights are duplicated rows.

use super::analytic::over_relaxation;
use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::costs;
use crate::penalties::{dual_norm, lp_penalty, theta_update};
use crate::result::FitResult;
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::schedule::GapSchedule;
use crate::solvers::single::dense_matvec;
use crate::solvers::smo::{one_class, DenseKernel, SmoOptions};
use crate::solvers::witness::PsdCheck;

/// Settings of a one-class ℓp-MKL fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneClassConfig {
    /// The norm `p ∈ [1, ∞]` of θ.
    pub p: f64,
    /// `ν ∈ (0, 1]`: an upper bound on the fraction of training points outside the region
    /// and a lower bound on the fraction of support vectors.
    pub nu: f64,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Outer iterations at most.
    pub max_iter: usize,
    /// Smallest accuracy asked of SMO (maximal KKT violation).
    pub inner_tol: f64,
}

impl Default for OneClassConfig {
    fn default() -> Self {
        OneClassConfig {
            p: 2.0,
            nu: 0.5,
            tol: 1e-3,
            max_iter: 200,
            inner_tol: 1e-7,
        }
    }
}

/// The settings by name (no `C` and no loss: the one-class problem has neither).
impl Fields for OneClassConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        v.float("p", &mut self.p)?;
        v.float("nu", &mut self.nu)?;
        v.float("tol", &mut self.tol)?;
        v.count("max_iter", &mut self.max_iter)?;
        v.float("inner_tol", &mut self.inner_tol)
    }
}

impl OneClassConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::common::validate_common(1.0, self.tol, self.max_iter)?;
        if self.p.is_nan() || self.p < 1.0 {
            return Err(MkError::config("p", format!("must be ≥ 1, got {}", self.p)));
        }
        if !(self.nu > 0.0 && self.nu <= 1.0) {
            return Err(MkError::config(
                "nu",
                format!("must be in (0, 1], got {}", self.nu),
            ));
        }
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        Ok(())
    }
}

/// The offset `ρ` minimising `Σ_i w_i max(0, ρ − f_i) − νWρ` (module docs), and that
/// minimum: the slope `Σ_{f_i < ρ} w_i − νW` changes sign at the first sorted `f_i` whose
/// cumulated weight reaches `νW`.
fn best_offset(f: &[f64], w: &[f64], nu: f64) -> (f64, f64) {
    let total = nu * w.iter().sum::<f64>();
    let mut order: Vec<usize> = (0..f.len()).collect();
    order.sort_by(|&a, &b| f[a].total_cmp(&f[b]));
    // The tolerance keeps an exact integer νW (ν·n with unit weights) from missing its point
    // by rounding.
    let target = total * (1.0 - 1e-12);
    let mut cum = 0.0;
    let mut k = order.len();
    for (r, &i) in order.iter().enumerate() {
        cum += w[i];
        if cum >= target {
            k = r + 1;
            break;
        }
    }
    let rho = f[order[k - 1]];
    let below: f64 = order[..k].iter().map(|&i| w[i] * (rho - f[i])).sum();
    (rho, below - total * rho)
}

/// Fits one-class ℓp-norm MKL on a kernel stack; the result's intercept is `−ρ`, so the
/// decision function is `Σ_m K_m(x, ·) A[m] + intercept` (scikit-learn's `OneClassSVM`
/// scale: `A[m] = θ_m α` with libsvm's `α`).
pub fn fit_one_class(
    stack: &dyn KernelStack,
    cfg: &OneClassConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_one_class_weighted(stack, None, cfg, interrupt)
}

/// [`fit_one_class`] with a weight per sample (module docs; `None`: ones).
pub fn fit_one_class_weighted(
    stack: &dyn KernelStack,
    sample_weight: Option<&[f64]>,
    cfg: &OneClassConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    let (m, n) = (stack.m(), stack.n());
    let mut solver = OneClass {
        stack,
        psd: PsdCheck::new(stack),
        cfg,
        // Weights are checked as loss weights are (finite, > 0; `costs` at C = 1).
        w: costs(1.0, sample_weight, n)?,
        theta: theta_update(&vec![1.0; m], cfg.p),
        k_theta: vec![0.0; n * n],
        warm: None,
        norms: Vec::new(),
    };
    let gaps = GapSchedule::new(cfg.tol, cfg.inner_tol, over_relaxation(cfg.p));
    Driver::new(cfg.tol, cfg.max_iter, interrupt)
        .with_gaps(gaps)
        .run(&mut solver)
}

/// Algorithm 1's state around the one-class SVM.
struct OneClass<'s> {
    stack: &'s dyn KernelStack,
    psd: PsdCheck<'s>,
    cfg: &'s OneClassConfig,
    w: Vec<f64>,
    theta: Vec<f64>,
    k_theta: Vec<f64>,
    /// The last solution's `α`, the next solve's start.
    warm: Option<Vec<f64>>,
    /// `‖w_m‖` of the last iterate: the input of the next θ update.
    norms: Vec<f64>,
}

impl Solver for OneClass<'_> {
    /// The one-class SVM on `K_θ`, the offset ρ that minimises the primal for its `α`, and
    /// the certificate `D = −½ ‖(αᵀK_mα)_m‖_{p*}`.
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let (stack, cfg) = (self.stack, self.cfg);
        let (m, n) = (stack.m(), stack.n());
        stack.combine(&self.theta, &mut self.k_theta);
        let opts = SmoOptions {
            eps: d.inner_tol(),
            ..SmoOptions::default()
        };
        let kernel = DenseKernel::new(&self.k_theta, n)?;
        let sol = one_class(
            &kernel,
            cfg.nu,
            &self.w,
            &opts,
            self.warm.as_deref(),
            d.interrupt,
        )?;
        let alpha = &sol.coef;
        let mut quad = vec![0.0; m];
        stack.quad_forms(alpha, &mut quad);
        self.norms = self
            .theta
            .iter()
            .zip(&quad)
            .map(|(t, q)| t * q.max(0.0).sqrt())
            .collect();
        let mut f = vec![0.0; n];
        dense_matvec(&self.k_theta, alpha, &mut f);
        let (rho, offset_part) = best_offset(&f, &self.w, cfg.nu);
        let primal = lp_penalty(&self.norms, cfg.p) + offset_part;
        let witness = self.psd.all().scan(alpha, m, |k| quad[k]);
        let dual = (-0.5 * dual_norm(&quad, cfg.p), witness);
        let norms = self.norms.clone();
        let gap = d
            .tracker
            .record(primal, dual, &self.theta, alpha, -rho, norms);
        self.warm = Some(sol.alpha);
        Ok(Outcome::Gap {
            gap,
            whole: true,
            new_problem: false,
        })
    }

    fn update(&mut self, _d: &Driver<'_>) -> Result<()> {
        self.theta = theta_update(&self.norms, self.cfg.p);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::DenseStack;
    use crate::result::SolveStatus;

    /// Integer weights fit as duplicated rows: the same primal, θ and offset.
    #[test]
    fn integer_weights_equal_duplicated_rows() {
        let (n, reps) = (30, [1usize, 2, 3]);
        let (g, m, _) = crate::solvers::test_util::problem(n, false, 5);
        let w: Vec<f64> = (0..n).map(|i| reps[i % 3] as f64).collect();
        let counts: Vec<usize> = (0..n).map(|i| reps[i % 3]).collect();
        let (dup, rows) = crate::solvers::test_util::duplicated(&g, m, n, &counts);
        let nd = rows.len();
        let stored = DenseStack::new(&g, m, n).unwrap();
        let copies = DenseStack::new(&dup, m, nd).unwrap();
        for nu in [0.2, 0.5] {
            let cfg = OneClassConfig {
                nu,
                tol: 1e-10,
                ..OneClassConfig::default()
            };
            let a = fit_one_class_weighted(&stored, Some(&w), &cfg, &NoInterrupt).unwrap();
            let b = fit_one_class(&copies, &cfg, &NoInterrupt).unwrap();
            assert_eq!(a.status, SolveStatus::Converged, "ν {nu}");
            assert!(
                (a.primal - b.primal).abs() <= 1e-8 * b.primal.abs(),
                "ν {nu}: {} vs {}",
                a.primal,
                b.primal
            );
            for (s, t) in a.kernel_weights.iter().zip(&b.kernel_weights) {
                assert!((s - t).abs() <= 1e-5 * (1e-3 + t), "ν {nu}: θ {s} vs {t}");
            }
            assert!((a.intercept - b.intercept).abs() <= 1e-6, "ν {nu}: offsets");
        }
    }

    #[test]
    fn the_offset_is_the_minimiser_of_the_piecewise_linear_term() {
        let f = [0.3, -1.0, 2.0, 0.7, 0.1];
        for (w, nu) in [[1.0; 5], [0.5, 2.0, 1.0, 3.0, 0.25]]
            .iter()
            .flat_map(|w| [0.1, 0.2, 0.5, 0.9, 1.0].map(|nu| (w, nu)))
        {
            let (rho, value) = best_offset(&f, w, nu);
            let total = nu * w.iter().sum::<f64>();
            let h = |r: f64| {
                f.iter()
                    .zip(w)
                    .map(|(fi, wi)| wi * (r - fi).max(0.0))
                    .sum::<f64>()
                    - total * r
            };
            assert!((h(rho) - value).abs() < 1e-12);
            for r in (-300..300).map(|k| k as f64 / 100.0) {
                assert!(
                    h(r) >= value - 1e-12,
                    "nu {nu}: h({r}) = {} < {value}",
                    h(r)
                );
            }
        }
    }
}
