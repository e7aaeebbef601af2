//! ℓp-norm MKL in explicit features by multi-epoch SVRG (Alioscha-Perez et al., "Multiple Kernel
//! Learning via Multi-Epochs SVRG", NIPS 2016 workshop), docs/mathematics.md §6.
//!
//! With features `φ_k(x) ∈ ℝ^{D_k}` and `λ = 1/(Cn)`, each epoch minimises
//! `g(w, b) = ½ Σ_k (λ/d_k)‖w_k‖² + (1/n) Σ_t ℓ(y_t, Σ_k⟨w_k, φ_k(x_t)⟩ + b)` over `(w, b)` for
//! fixed kernel weights `d` (`‖d‖_p = 1`), which are then updated in closed form ([SVRG]
//! eq. 2: `d_k ∝ ‖w_k‖^{2/(p+1)}`). Minimising over `d` gives `Cn·g = C Σ ℓ + ½(Σ‖w_k‖^q)^{2/q}`,
//! `q = 2p/(p+1)`: our `lp` objective, so `P` is computed from the norms `‖w_k‖ = ‖f_k‖`.
//!
//! Every epoch starts with a pass over the data (the snapshot), which also gives the
//! certificate: the dual point `β = −C ℓ′(y, f(x) + b)`, shifted inside the conjugate's domain
//! to `Σβ = 0`, with `βᵀK_kβ = ‖Φ_kᵀβ‖²` (docs/mathematics.md §1.3).
//!
//! What differs from the paper (docs/mathematics.md §6, "What the code does", with the
//! measurements): the step is `h_k = 1/(L + λ/d_k)` with `L = β_ℓ max_t (‖φ(x_t)‖² + 1)` (the
//! loss couples the kernels, so its smoothness covers the whole feature vector; `β_ℓ` = 1, or
//! ¼ for logistic), one epoch is `n` steps and the last iterate is kept; the paper's
//! Proposition 1 steps and inner lengths need many more passes, and its cap
//! `λ̃ ← min(λ/d, L/2)` diverges as `d_k → 0`. The intercept is an SVRG coordinate and is also
//! re-fitted exactly at every snapshot.
//!
//! With a weight `w_t` per sample the data term is `(1/n) Σ_t w_t ℓ(…)` (so `Cn·g` has the loss
//! weights `c_t = C w_t`): sample `t`'s stochastic gradient carries `w_t`, and `L` takes
//! `max_t w_t (‖φ(x_t)‖² + 1)`.

#[cfg(test)]
mod tests;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::features::SplitMix;
use crate::kernels::{Element, RowFeatures};
use crate::linalg::dot;
use crate::losses::{costs, Loss};
use crate::penalties::duals::lp_dual;
use crate::penalties::lp_penalty;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::tracker::{Model, Tracker};

/// Settings of an SVRG fit.
#[derive(Debug, Clone, PartialEq)]
pub struct SvrgConfig {
    /// The norm `p ∈ [1, ∞]` of the kernel weights.
    pub p: f64,
    /// Loss weight.
    pub c: f64,
    /// `logistic`, `squared` or `squared_hinge` (smooth losses).
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Epochs at most.
    pub max_iter: usize,
    /// Seed of the sampled points.
    pub seed: u64,
}

impl Default for SvrgConfig {
    fn default() -> Self {
        SvrgConfig {
            p: 2.0,
            c: 1.0,
            loss: Loss::Logistic,
            tol: 1e-3,
            max_iter: 200,
            seed: 0,
        }
    }
}

impl SvrgConfig {
    /// Checks every setting (C, tol, max_iter, p ≥ 1, a smooth loss).
    pub fn validate(&self) -> Result<()> {
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
        if self.p.is_nan() || self.p < 1.0 {
            return Err(MkError::config("p", format!("must be ≥ 1, got {}", self.p)));
        }
        if !matches!(
            self.loss,
            Loss::Logistic | Loss::Squared | Loss::SquaredHinge
        ) {
            return Err(MkError::config(
                "loss",
                format!(
                    "solver svrg needs a smooth loss: logistic, squared or squared_hinge, got {}",
                    self.loss.name()
                ),
            ));
        }
        Ok(())
    }
}

/// The intercept minimising `Σ_t w_t ℓ(y_t, z_t + b)`: bisection on the non-decreasing
/// derivative.
fn refit_intercept(loss: Loss, y: &[f64], z: &[f64], w: &[f64], start: f64) -> f64 {
    let g = |b: f64| -> f64 {
        y.iter()
            .zip(z)
            .zip(w)
            .map(|((&yi, &zi), wi)| wi * loss.deriv(yi, zi + b))
            .sum()
    };
    let (mut lo, mut hi) = (start - 1.0, start + 1.0);
    let mut width = 1.0;
    while g(lo) > 0.0 && width < 1e8 {
        width *= 2.0;
        lo = start - width;
    }
    while g(hi) < 0.0 && width < 1e8 {
        width *= 2.0;
        hi = start + width;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if g(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Fits ℓp-norm MKL on explicit features by multi-epoch SVRG. The result's
/// `feature_weights` are the best iterate `w` (whose objective `primal` is) and its `coef`
/// the representer form `A[k] = d_k β` of the dual point, which is the model at the optimum.
pub fn fit_svrg<T: Element>(
    x: &RowFeatures<'_, T>,
    y: &[f64],
    cfg: &SvrgConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_svrg_weighted(x, y, None, cfg, interrupt)
}

/// [`fit_svrg`] with a weight per sample on the loss (module docs).
pub fn fit_svrg_weighted<T: Element>(
    x: &RowFeatures<'_, T>,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &SvrgConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::validate_targets(x.n(), y)?;
    if x.data().iter().any(|v| !v.to_f64().is_finite()) {
        return Err(MkError::non_finite("the features"));
    }
    let (n, m, width) = (x.n(), x.m(), x.width());
    let lam = 1.0 / (cfg.c * n as f64);
    // The weights `w_t` (checked as loss weights are) and the loss weights `c_t = C w_t`.
    let sw = costs(1.0, sample_weight, n)?;
    let cu: Vec<f64> = sw.iter().map(|w| cfg.c * w).collect();
    let curvature = if cfg.loss == Loss::Logistic {
        0.25
    } else {
        1.0
    };
    let big_l = curvature
        * (0..n)
            .map(|t| sw[t] * (x.row(t).iter().map(|v| v.to_f64().powi(2)).sum::<f64>() + 1.0))
            .fold(0.0f64, f64::max);
    let block = |k: usize| x.block(k);
    let mut w = vec![0.0; width];
    let mut b = 0.0;
    let mut d = vec![
        if cfg.p.is_infinite() {
            1.0
        } else {
            (m as f64).powf(-1.0 / cfg.p)
        };
        m
    ];
    let mut rng = SplitMix(cfg.seed);
    let mut tracker = Tracker::new(interrupt);
    let mut best_w = w.clone();
    let mut best_primal = f64::INFINITY;
    let mut status = SolveStatus::MaxIterations;
    let mut epochs = 0;
    let mut z = vec![0.0; n];
    let mut g0 = vec![0.0; n];
    for _ in 0..cfg.max_iter {
        interrupt.check()?;
        epochs += 1;
        // Snapshot pass: predictions, exact intercept, certificate.
        for (t, zt) in z.iter_mut().enumerate() {
            *zt = dot(x.row(t), &w);
        }
        b = refit_intercept(cfg.loss, y, &z, &sw, b);
        let norms: Vec<f64> = (0..m)
            .map(|k| w[block(k)].iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect();
        let primal = cfg.loss.weighted_total(y, &z, b, &cu) + lp_penalty(&norms, cfg.p);
        // Each sample's gradient factor `w_t ℓ′` (the weight rides along in every step).
        for (t, g) in g0.iter_mut().enumerate() {
            *g = sw[t] * cfg.loss.deriv(y[t], z[t] + b);
        }
        let raw: Vec<f64> = g0.iter().map(|g| -cfg.c * g).collect();
        let beta = cfg.loss.centre_dual(y, &raw, &cu);
        // ‖Φ_kᵀβ‖² and the full gradient G = Φᵀℓ′/n in one more pass.
        let mut u = vec![0.0; width];
        let mut grad = vec![0.0; width];
        for t in 0..n {
            let row = x.row(t);
            let (bt, gt) = (beta[t], g0[t] / n as f64);
            for ((uj, gj), v) in u.iter_mut().zip(grad.iter_mut()).zip(row) {
                let v = v.to_f64();
                *uj += bt * v;
                *gj += gt * v;
            }
        }
        let quad: Vec<f64> = (0..m)
            .map(|k| u[block(k)].iter().map(|v| v * v).sum())
            .collect();
        let dual = lp_dual(cfg.loss, &cu, y, &beta, &quad, cfg.p);
        if primal < best_primal {
            best_primal = primal;
            best_w.clone_from(&w);
        }
        // The weights as every lp solver reports them: unit p-norm (d is, up to its floor).
        let d_norm = if cfg.p.is_infinite() {
            1.0
        } else {
            d.iter()
                .map(|v| v.powf(cfg.p))
                .sum::<f64>()
                .powf(1.0 / cfg.p)
        };
        let gap = tracker.record_with(primal, (dual, None), m, || Model {
            coef: d
                .iter()
                .flat_map(|&dk| beta.iter().map(move |bt| dk * bt))
                .collect(),
            intercept: b,
            weights: d.iter().map(|v| v / d_norm).collect(),
            norms: norms.clone(),
        });
        if gap <= cfg.tol {
            status = SolveStatus::Converged;
            break;
        }
        // Kernel weights in closed form ([SVRG] eq. 2), floored so λ/d_k stays finite.
        if !cfg.p.is_infinite() && norms.iter().any(|&s| s > 0.0) {
            let e = 2.0 / (cfg.p + 1.0);
            let s: f64 = norms.iter().map(|v| v.powf(e * cfg.p)).sum::<f64>();
            let scale = s.powf(1.0 / cfg.p);
            for (dk, nk) in d.iter_mut().zip(&norms) {
                *dk = (nk.powf(e) / scale).max(1e-12);
            }
        }
        // One epoch of n variance-reduced steps from the snapshot (w, b).
        let lam_k: Vec<f64> = d.iter().map(|dk| lam / dk).collect();
        let steps: Vec<f64> = lam_k.iter().map(|l| 1.0 / (big_l + l)).collect();
        let mean_g = g0.iter().sum::<f64>() / n as f64;
        let h_b = 1.0 / big_l;
        for it in 0..n {
            if it % 4096 == 0 {
                interrupt.check()?;
            }
            let t = (rng.next_u64() % n as u64) as usize;
            let row = x.row(t);
            let delta = sw[t] * cfg.loss.deriv(y[t], dot(row, &w) + b) - g0[t];
            for k in 0..m {
                let (h, l) = (steps[k], lam_k[k]);
                for j in block(k) {
                    w[j] -= h * (l * w[j] + grad[j] + delta * row[j].to_f64());
                }
            }
            b -= h_b * (mean_g + delta);
        }
    }
    let mut fit = tracker.finish(epochs, status)?;
    fit.feature_weights = best_w;
    Ok(fit)
}
