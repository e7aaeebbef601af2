//! ℓp-norm MKL in explicit features by multi-epoch SVRG (Alioscha-Perez et al., "Multiple Kernel
//! Learning via Multi-Epochs SVRG", NIPS 2016 workshop), docs/mathematics.md §6.
//!
//! With features `φ_k(x) ∈ ℝ^{D_k}` and `λ = 1/(Cn)`, each epoch minimises
//! `g(w, b) = ½ Σ_k (λ/d_k)‖w_k‖² + (1/n) Σ_t ℓ(y_t, Σ_k⟨w_k, φ_k(x_t)⟩ + b)` over `(w, b)` for
//! fixed kernel weights `d` (`‖d‖_p = 1`), which are then updated in closed form (SVRG
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
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::features::SplitMix;
use crate::kernels::{Element, RowFeatures};
use crate::linalg::dot;
use crate::losses::{costs, Loss};
use crate::penalties::duals::lp_dual;
use crate::penalties::{lp_penalty, p_norm};
use crate::result::FitResult;
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::tracker::Model;

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

/// The settings by name (`seed` as a count: the Python integer it comes from).
impl Fields for SvrgConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        v.float("p", &mut self.p)?;
        crate::solvers::common::common_fields(
            v,
            &mut self.c,
            &mut self.loss,
            &mut self.tol,
            &mut self.max_iter,
        )?;
        let mut seed = usize::try_from(self.seed).unwrap_or(usize::MAX);
        v.count("seed", &mut seed)?;
        self.seed = seed as u64;
        Ok(())
    }
}

impl SvrgConfig {
    /// Checks every setting (C, tol, max_iter, p ≥ 1, a smooth loss).
    pub fn validate(&self) -> Result<()> {
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
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
    crate::solvers::common::validate_targets(x.n(), y)?;
    if x.data().iter().any(|v| !v.to_f64().is_finite()) {
        return Err(MkError::non_finite("the features"));
    }
    let mut svrg = Svrg::new(x, y, sample_weight, cfg)?;
    Driver::new(cfg.tol, cfg.max_iter, interrupt).run(&mut svrg)
}

/// Multi-epoch SVRG's state: the iterate `(w, b)`, its kernel weights `d`, and the snapshot the
/// next epoch starts from.
struct Svrg<'s, 'x, T: Element> {
    x: &'s RowFeatures<'x, T>,
    y: &'s [f64],
    cfg: &'s SvrgConfig,
    /// The sample weights `w_t`, and the loss weights `c_t = C w_t`.
    sw: Vec<f64>,
    cu: Vec<f64>,
    /// `λ = 1/(Cn)`, and the smoothness `L` of the loss term (module docs).
    lam: f64,
    big_l: f64,
    w: Vec<f64>,
    b: f64,
    d: Vec<f64>,
    rng: SplitMix,
    /// The `w` of the smallest primal value recorded: the result's feature weights.
    best_w: Vec<f64>,
    /// At the snapshot: the predictions `z_t = ⟨w, φ(x_t)⟩`, each sample's gradient factor
    /// `w_t ℓ′` (the weight rides along in every step), the full gradient `G = Φᵀ(w_t ℓ′)/n`
    /// and the block norms `‖w_k‖`.
    z: Vec<f64>,
    g0: Vec<f64>,
    grad: Vec<f64>,
    norms: Vec<f64>,
}

impl<T: Element> Solver for Svrg<'_, '_, T> {
    /// The snapshot pass that starts an epoch, and its certificate.
    fn step(&mut self, driver: &mut Driver<'_>) -> Result<Outcome> {
        let primal = self.snapshot();
        let (beta, dual) = self.dual();
        let gap = self.certify(driver, primal, &beta, dual);
        Ok(Outcome::Gap {
            gap,
            whole: true,
            new_problem: false,
        })
    }

    /// The kernel weights in closed form, then one epoch from the snapshot.
    fn update(&mut self, driver: &Driver<'_>) -> Result<()> {
        self.reweight();
        self.epoch(driver.interrupt)
    }

    /// The best iterate `w`, whose objective `primal` is, as the feature weights.
    fn finish(&mut self, mut fit: FitResult) -> Result<FitResult> {
        fit.feature_weights = std::mem::take(&mut self.best_w);
        Ok(fit)
    }
}

impl<'s, 'x, T: Element> Svrg<'s, 'x, T> {
    /// The start: `w = 0`, `b = 0` and the uniform `d` of unit p-norm.
    fn new(
        x: &'s RowFeatures<'x, T>,
        y: &'s [f64],
        sample_weight: Option<&[f64]>,
        cfg: &'s SvrgConfig,
    ) -> Result<Self> {
        let (n, m, width) = (x.n(), x.m(), x.width());
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
        let d0 = if cfg.p.is_infinite() {
            1.0
        } else {
            (m as f64).powf(-1.0 / cfg.p)
        };
        Ok(Svrg {
            x,
            y,
            cfg,
            sw,
            cu,
            lam: 1.0 / (cfg.c * n as f64),
            big_l,
            w: vec![0.0; width],
            b: 0.0,
            d: vec![d0; m],
            rng: SplitMix(cfg.seed),
            best_w: vec![0.0; width],
            z: vec![0.0; n],
            g0: vec![0.0; n],
            grad: Vec::new(),
            norms: Vec::new(),
        })
    }

    /// The snapshot pass: the predictions, the exact intercept, the block norms, each sample's
    /// gradient factor; returns the primal value `C Σ c_t ℓ + ½(Σ‖w_k‖^q)^{2/q}`.
    fn snapshot(&mut self) -> f64 {
        let (x, y, cfg) = (self.x, self.y, self.cfg);
        for (t, zt) in self.z.iter_mut().enumerate() {
            *zt = dot(x.row(t), &self.w);
        }
        self.b = refit_intercept(cfg.loss, y, &self.z, &self.sw, self.b);
        self.norms = (0..x.m())
            .map(|k| self.w[x.block(k)].iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect();
        let primal =
            cfg.loss.weighted_total(y, &self.z, self.b, &self.cu) + lp_penalty(&self.norms, cfg.p);
        for (t, g) in self.g0.iter_mut().enumerate() {
            *g = self.sw[t] * cfg.loss.deriv(y[t], self.z[t] + self.b);
        }
        primal
    }

    /// The dual point `β = −C w_t ℓ′` shifted inside the conjugate's domain, and its dual value
    /// from `‖Φ_kᵀβ‖²`, read in one more pass with the full gradient `G`.
    fn dual(&mut self) -> (Vec<f64>, f64) {
        let (x, y, cfg) = (self.x, self.y, self.cfg);
        let (n, width) = (x.n(), x.width());
        let raw: Vec<f64> = self.g0.iter().map(|g| -cfg.c * g).collect();
        let beta = cfg.loss.centre_dual(y, &raw, &self.cu);
        let mut u = vec![0.0; width];
        let mut grad = vec![0.0; width];
        for (t, (&bt, g)) in beta.iter().zip(&self.g0).enumerate() {
            let (row, gt) = (x.row(t), g / n as f64);
            for ((uj, gj), v) in u.iter_mut().zip(grad.iter_mut()).zip(row) {
                let v = v.to_f64();
                *uj += bt * v;
                *gj += gt * v;
            }
        }
        self.grad = grad;
        let quad: Vec<f64> = (0..x.m())
            .map(|k| u[x.block(k)].iter().map(|v| v * v).sum())
            .collect();
        let dual = lp_dual(cfg.loss, &self.cu, y, &beta, &quad, cfg.p);
        (beta, dual)
    }

    /// Records the snapshot's certificate (the model `A[k] = d_k β`, module docs), keeping its
    /// `w` if it is the best so far; returns the gap.
    fn certify(&mut self, driver: &mut Driver<'_>, primal: f64, beta: &[f64], dual: f64) -> f64 {
        if primal < driver.tracker.best_primal() {
            self.best_w.clone_from(&self.w);
        }
        let p = self.cfg.p;
        // The weights as every lp solver reports them: unit p-norm (d is, up to its floor).
        let d_norm = if p.is_infinite() {
            1.0
        } else {
            p_norm(&self.d, p)
        };
        let (d, b, norms) = (&self.d, self.b, &self.norms);
        driver
            .tracker
            .record_with(primal, (dual, None), d.len(), || Model {
                coef: d
                    .iter()
                    .flat_map(|&dk| beta.iter().map(move |bt| dk * bt))
                    .collect(),
                intercept: b,
                weights: d.iter().map(|v| v / d_norm).collect(),
                norms: norms.clone(),
            })
    }

    /// The kernel weights in closed form ([SVRG] eq. 2), floored so `λ/d_k` stays finite.
    fn reweight(&mut self) {
        let p = self.cfg.p;
        if !p.is_infinite() && self.norms.iter().any(|&s| s > 0.0) {
            let e = 2.0 / (p + 1.0);
            let powered: Vec<f64> = self.norms.iter().map(|v| v.powf(e)).collect();
            let scale = p_norm(&powered, p);
            for (dk, nk) in self.d.iter_mut().zip(&powered) {
                *dk = (nk / scale).max(1e-12);
            }
        }
    }

    /// One epoch of `n` variance-reduced steps from the snapshot `(w, b)`.
    fn epoch(&mut self, interrupt: &dyn Interrupt) -> Result<()> {
        let (x, y, cfg) = (self.x, self.y, self.cfg);
        let (n, m) = (x.n(), x.m());
        let lam_k: Vec<f64> = self.d.iter().map(|dk| self.lam / dk).collect();
        let steps: Vec<f64> = lam_k.iter().map(|l| 1.0 / (self.big_l + l)).collect();
        let mean_g = self.g0.iter().sum::<f64>() / n as f64;
        let h_b = 1.0 / self.big_l;
        let (w, grad) = (&mut self.w, &self.grad);
        for it in 0..n {
            if it % 4096 == 0 {
                interrupt.check()?;
            }
            let t = (self.rng.next_u64() % n as u64) as usize;
            let row = x.row(t);
            let delta = self.sw[t] * cfg.loss.deriv(y[t], dot(row, w) + self.b) - self.g0[t];
            for k in 0..m {
                let (h, l) = (steps[k], lam_k[k]);
                for j in x.block(k) {
                    w[j] -= h * (l * w[j] + grad[j] + delta * row[j].to_f64());
                }
            }
            self.b -= h_b * (mean_g + delta);
        }
        Ok(())
    }
}
