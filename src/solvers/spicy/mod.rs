//! SpicyMKL (Suzuki & Tomioka 2009): block-ℓ1 and elastic-net MKL by a dual augmented
//! Lagrangian, i.e. the proximal point method on the primal with an inner Newton method on the
//! smoothed dual (docs/mathematics.md §2).
//!
//! # Scaling
//! Our primal is `P = C Σ_i ℓ(y_i, f(x_i)) + Σ_m (r_1 s_m + r_2 s_m²/2)`, `s_m = ‖A[m]‖_{K_m}`,
//! `r_1 = l1_ratio`, `r_2 = 1 − l1_ratio` (`l1`: `r_1 = 1`, `r_2 = 0`). The solver works on
//! `P/C`, the paper's form with loss weight 1 and penalty weights `λ_1 = r_1/C`, `λ_2 = r_2/C`
//! (the paper's `C` is `λ_1`). Its dual variable `ρ` relates to ours (docs/mathematics.md §1) by
//! `ρ̃ = C ρ`.
//!
//! # Scale
//! `γ_m` has the units of `1/K` (`v_m` adds a coefficient to a loss derivative), `γ_b` and
//! `γ_z` none, so the kernel blocks take `γ_m = γ/s` with `s` the kernels' scale
//! (`kernel_scale`): every step is then exactly the step on the stack `K/s` with
//! `λ_1/√s`, `λ_2/s`, without copying the stack, and a stack ×1e12 is as easy as the unit
//! one. The reference scale is the unit trace for the hinge-type losses and the unit mean
//! diagonal for the smooth ones, the faster of the two for each (docs/mathematics.md §2.2,
//! "Scale").
//!
//! # Outer loop (eq. 3, 5, 6)
//! With `v_m = A[m] + γ_m ρ`, `ρ = argmin φ_γ(ρ)`, then `A[m] ← prox_m(v_m)`,
//! `b ← b + γ_b Σ_i ρ_i`, and `γ ← min(κ γ, γ_max)`. The loop is the solvers' driver:
//! `solver` holds the state between outer iterations and its step, `start` the warm start and
//! the first working sets, `inner` the Newton solve of one proximal step.
//!
//! # The penalty's prox and the inner objective (eq. 7, 16)
//! For `g(α) = λ_1 ‖α‖ + λ_2 ‖α‖²/2` (norm `‖·‖_{K_m}`) the prox is radial:
//! `prox_{γg}(v) = v · max(‖v‖ − γλ_1, 0) / (‖v‖ (1 + γλ_2))` (minimise
//! `λ_1 t + λ_2 t²/2 + (‖v‖ − t)²/(2γ)` over the radius `t ≥ 0`); for `λ_2 = 0` it is the
//! paper's block soft threshold `ST_{γλ_1}`. Completing the square as in Appendix A,
//! the α-part of the dual is `h(v) = ‖v‖²/(2γ) − env_{γg}(v)`; since `∇_v h = K prox(v)/γ`
//! (Moreau) and `h` is radial, `dh/d‖v‖ = t/γ`, so
//! `h = max(‖v‖ − γλ_1, 0)² / (2γ(1 + γλ_2))`, which is eq. 16 for `λ_2 = 0`. Hence
//!
//! `φ_γ(ρ) = L(ρ) + Σ_m h_m(A[m] + γρ) + (b + γ_b Σρ)²/(2γ_b)`,
//!
//! `∇φ = ∇L + Σ_{m∈M+} K_m prox_m(v_m) + (b + γ_bΣρ) 1` (eq. 8) and
//! `∇²φ = ∇²L + Σ_{m∈M+} γ((1 − q_m) K_m + q_m K_m ṽ_m ṽ_mᵀ K_m)/(1 + γλ_2) + γ_b 11ᵀ` (eq. 9),
//! `q_m = γλ_1/‖v_m‖`, `ṽ_m = v_m/‖v_m‖`, `M+ = {m : ‖v_m‖ > γλ_1}`.
//!
//! # The loss term `L`
//! Smooth conjugates (squared, logistic): `L(ρ) = Σ_i ℓ*(y_i, −ρ_i)` as in eq. 7; the logistic
//! domain `y_iρ_i ∈ (0, 1)` is kept by the line search (`φ = +∞` outside).
//!
//! Hinge-type losses (hinge, squared hinge, ε-insensitive) have conjugates whose minimiser sits
//! on the domain boundary (or, for ε-insensitive, on the kink `ρ_i = 0`), so, as in §3.3, we add
//! slack primal variables with their own proximal term. We use one slack per point, the
//! prediction itself: minimise `Σ_i ℓ(y_i, z_i) + g(α)` subject to `z = Σ_m K_m α_m + b1`,
//! with the proximal term `‖z − z^{(t)}‖²/(2γ_z)` added to eq. 3. The hinge slacks of eq.
//! 10–12 are the reparametrisation `y_i z_i = 1 − ξ_i + ζ_i` of the same constraint (the paper
//! keeps two proximal terms, we keep one); the same construction applies to the squared
//! hinge (`ℓ = ½ξ²` with `yz = 1 − ξ + ζ`) and the ε-insensitive loss (`z − y = ξ⁺ − ξ⁻` with
//! the tube in `ℓ`), and all three reduce to the single slack `z`. Dualising the constraint with
//! multiplier `ρ` (exactly as eq. 4) and minimising over `z` gives
//!
//! `L(ρ) = −min_z Σ_i [ℓ(y_i, z_i) + ρ_i z_i + (z_i − z_i^{(t)})²/(2γ_z)]`,
//!
//! which is differentiable with `∇L = −z*`, `∇²L = γ_z diag(prox'(w))`, where
//! `z* = prox_{γ_zℓ}(w)`, `w = z^{(t)} − γ_zρ` ([`Loss::prox`], closed form for all three), and
//! the slack update (the analogue of eq. 11) is `z^{(t+1)} = z*`. As `γ_z → ∞`, `L → Σℓ*(−ρ)`.
//! `γ_z` grows as `√γ`, slower than `γ` (see `inner::slack_gamma`).
//!
//! # Sparsity
//! Only deciding activity touches every kernel: `‖v_m‖² = ‖A[m]‖² + 2γ (K_mA[m])ᵀρ +
//! γ²‖ρ‖²_{K_m}`, where `A[m] = 0` off the support, so one `quad_forms` pass per Newton step
//! (of `Δρ` and `ρ + Δρ`) gives every `‖v_m‖` along the search line (§3.4).
//! Gradient, Hessian and the updates use `matvec`/`combine` on the active kernels only.
//!
//! # Working set (beyond §3.4)
//! With thousands of kernels and `r_1 > 0` most kernels stay at `A[m] = 0`, yet each Newton
//! step's `quad_forms` still reads all of them. We therefore solve the problem restricted to a
//! working set `W` (a [`SubStack`](crate::kernels::SubStack)): the natural dual point at
//! `A = 0`, `ρ̃ = −C ℓ'(y, b)`, ranks the kernels by their centred block norms `‖ρ̃‖_{K_m}` and
//! `W` starts with the [`AUTO_WORKING_SET`] largest. The restricted problem's solution is the
//! full one iff every kernel outside `W` satisfies its KKT condition `‖ρ̃‖_{K_m} ≤ r_1` (after
//! the same scaling as the certificate); so when the restricted gap falls below `CHECK_GAP`,
//! the dual candidate that is better on `W` is projected over all kernels in one pass (one
//! vector, not both: the same bytes with half the arithmetic), which gives a dual value valid
//! for the whole problem, and the violators (the most violated first, at most `|W|` of them)
//! join `W` with `A[m] = 0`, keeping the iterate. The primal is always that of the whole
//! problem (`A = 0` off `W`) and the reported dual is the best whole-problem dual seen, so the
//! gap is a certificate for the full problem at every iteration.
//!
//! # Certificate (docs/mathematics.md §1)
//! `P` from `(A, b)` by its definition; `D(ρ̃) = −C Σ ℓ*(y_i, −ρ̃_i/C)` (minus the elastic-net
//! term) at the best of two feasible points: the inner `ρ̃ = Cρ` and the natural
//! `ρ̃ = −C ℓ'(y, f)`, each made feasible by the clip-shift centring and (ℓ1) the scaling of
//! [`project_dual`].

pub(crate) mod dual;
mod inner;
mod solver;
mod start;

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::Loss;
use crate::penalties::SparsePenalty;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::driver::Driver;
use crate::solvers::points::MIN_POINTS;
use crate::solvers::witness::PsdCheck;

pub use crate::penalties::duals::dual_value;
pub use dual::{project_dual, project_duals, Projected};
use solver::Spicy;
use start::Warm;

/// The kernels' scale (1 if every kernel is zero or a diagonal is not finite), which sets the
/// kernel blocks' proximal parameter `γ_m = γ/s` (see the module documentation, "Scale"):
/// `s = max_m tr(K_m)` for the hinge-type losses (`slack`), `max_m tr(K_m)/n` for the smooth
/// ones. Reads the diagonals only.
fn kernel_scale(stack: &dyn KernelStack, slack: bool) -> f64 {
    let n = stack.n();
    let mut diag = vec![0.0; n];
    let mut s = 0.0f64;
    for m in 0..stack.m() {
        stack.diag(m, &mut diag);
        s = s.max(diag.iter().sum::<f64>());
    }
    if !slack {
        s /= n.max(1) as f64;
    }
    if s.is_finite() && s > 0.0 {
        s
    } else {
        1.0
    }
}

/// The largest growth factor of `γ` per outer iteration (exclusive).
pub const MAX_GAMMA_FACTOR: f64 = 1e6;

/// Settings of a SpicyMKL fit. Every default lives in [`Default`] (the Python
/// `SpicyConfig` is tested against it) and every check in [`SpicyConfig::validate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpicyConfig {
    /// `l1` (default) or `elasticnet` with its `l1_ratio` in [0, 1].
    pub penalty: SparsePenalty,
    /// Loss weight `C > 0` (default 1).
    pub c: f64,
    /// Default hinge.
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this (> 0, default 1e-3).
    pub tol: f64,
    /// Outer (proximal) iterations at most (≥ 1, default 200).
    pub max_iter: usize,
    /// Newton steps per outer iteration at most (≥ 1, default 100).
    pub max_inner: usize,
    /// First penalty parameter `γ^{(1)}` (`γ_b = γ`, `γ_m = γ/s`, the slack's `γ_z = √γ`);
    /// positive, default 1.
    pub gamma0: f64,
    /// Growth factor of `γ` per outer iteration, in [1, [`MAX_GAMMA_FACTOR`]), default 10.
    pub gamma_factor: f64,
    /// Largest `γ`, times `max(1, C√s)`, `s` the kernels' scale (`kernel_scale`; bounds the
    /// Hessian's condition number); finite, ≥ `gamma0`, default 1e8.
    pub gamma_max: f64,
    /// Kernels in the working set, at least 1 (`None`, the default: [`AUTO_WORKING_SET`] when
    /// the stack has more than twice as many, else all). Needs `r_1 > 0`; see the module
    /// documentation.
    pub working_set: Option<usize>,
    /// Iterate on a working set of points for the hinge-type losses from `MIN_POINTS`
    /// points on (default true); see the module documentation.
    pub point_working_set: bool,
}

impl Default for SpicyConfig {
    fn default() -> Self {
        SpicyConfig {
            penalty: SparsePenalty::L1,
            c: 1.0,
            loss: Loss::Hinge,
            tol: 1e-3,
            max_iter: 200,
            max_inner: 100,
            gamma0: 1.0,
            gamma_factor: 10.0,
            gamma_max: 1e8,
            working_set: None,
            point_working_set: true,
        }
    }
}

/// The settings by name.
impl Fields for SpicyConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        self.penalty.fields(v)?;
        crate::solvers::common::common_fields(
            v,
            &mut self.c,
            &mut self.loss,
            &mut self.tol,
            &mut self.max_iter,
        )?;
        v.count("max_inner", &mut self.max_inner)?;
        v.float("gamma0", &mut self.gamma0)?;
        v.float("gamma_factor", &mut self.gamma_factor)?;
        v.float("gamma_max", &mut self.gamma_max)?;
        v.optional_count("working_set", &mut self.working_set)?;
        v.flag("point_working_set", &mut self.point_working_set)
    }
}

impl SpicyConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        self.penalty.validate()?;
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
        if self.working_set == Some(0) {
            return Err(MkError::config(
                "working_set",
                "must be None (automatic) or at least 1, got 0",
            ));
        }
        if self.max_inner == 0 {
            return Err(MkError::config("max_inner", "must be at least 1"));
        }
        if !(self.gamma0.is_finite() && self.gamma0 > 0.0) {
            return Err(MkError::config(
                "gamma0",
                format!("must be a positive finite number, got {}", self.gamma0),
            ));
        }
        // A factor of 1e6 already takes γ from 1 to the default cap in two outer iterations;
        // larger ones only make the first inner problems harder to solve.
        if !(1.0..MAX_GAMMA_FACTOR).contains(&self.gamma_factor) {
            return Err(MkError::config(
                "gamma_factor",
                format!(
                    "must be in [1, {MAX_GAMMA_FACTOR:e}), got {}",
                    self.gamma_factor
                ),
            ));
        }
        if !(self.gamma_max.is_finite() && self.gamma_max >= self.gamma0) {
            return Err(MkError::config(
                "gamma_max",
                format!(
                    "must be finite and at least gamma0 = {}, got {}",
                    self.gamma0, self.gamma_max
                ),
            ));
        }
        Ok(())
    }
}

/// The working-set size used when [`SpicyConfig::working_set`] is 0 (auto): a small set grows
/// by the violators it needs, a large one pays for its extra kernels at every Newton step
/// (docs/mathematics.md §2.7 has the measurements).
pub const AUTO_WORKING_SET: usize = 20;

/// The restricted relative gap below which every kernel is checked (or `tol` if larger).
/// Checking only at `tol` wastes outer iterations on a working set that misses kernels; a
/// check is one batched pass, about the cost of one Newton step.
const CHECK_GAP: f64 = 0.1;

/// A starting point of a SpicyMKL fit (a warm start, e.g. the solution at a neighbouring `C`).
///
/// The primal variables do not depend on `C`'s scaling (the solver minimises `P/C`, whose
/// variables are those of `P`), so a solution `(A, b)` at `C₁` is used as it is at `C₂`; the
/// dual is given in the solver's scale `ρ = ρ̃/C₁`, which at an optimum is `−ℓ'(y, f + b)`
/// whatever `C` (docs/mathematics.md §2.10). Any start gives the same certified optimum.
#[derive(Debug, Clone, PartialEq)]
pub struct SpicyStart {
    /// `(M, n)` row-major per-kernel coefficients `A`.
    pub coef: Vec<f64>,
    /// The intercept `b`.
    pub intercept: f64,
    /// `(n,)` the dual point in the solver's scale, `ρ̃/C` at the start's own `C`; `None`:
    /// `−ℓ'(y, f + b)` at the start's predictions (exact at an optimum of a smooth loss).
    pub dual: Option<Vec<f64>>,
}

impl SpicyStart {
    /// Checks the shapes (`M·n` coefficients, `n` dual entries) and that every value is finite.
    pub fn validate(&self, m: usize, n: usize) -> Result<()> {
        if self.coef.len() != m * n {
            return Err(MkError::Shape(format!(
                "the warm start's coefficients must have shape (M={m}, n={n}), got {} values",
                self.coef.len()
            )));
        }
        if let Some(d) = &self.dual {
            if d.len() != n {
                return Err(MkError::Shape(format!(
                    "the warm start's dual must have {n} entries, got {}",
                    d.len()
                )));
            }
        }
        let finite = self.coef.iter().all(|v| v.is_finite())
            && self.intercept.is_finite()
            && self.dual.iter().flatten().all(|v| v.is_finite());
        if !finite {
            return Err(MkError::config(
                "warm_start",
                "the starting point must be finite",
            ));
        }
        Ok(())
    }
}

/// Fits block-ℓ1 or elastic-net MKL by SpicyMKL on a kernel stack.
pub fn fit_spicy(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &SpicyConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_spicy_from(stack, y, cfg, None, interrupt)
}

/// [`fit_spicy`] from a starting point (`None`: the cold start `A = 0`).
pub fn fit_spicy_from(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &SpicyConfig,
    start: Option<&SpicyStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_from(stack, y, None, cfg, start, MIN_POINTS, interrupt)
}

/// [`fit_spicy_from`] with a weight `w_i > 0` on each sample's loss,
/// `C Σ_i w_i ℓ(y_i, f_i + b)` (docs/mathematics.md §2.4, "Sample weights"); `None`: every
/// weight 1.
pub fn fit_spicy_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &SpicyConfig,
    start: Option<&SpicyStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_from(stack, y, sample_weight, cfg, start, MIN_POINTS, interrupt)
}

/// [`fit_spicy`] with a working set of points from `min_points` points on.
#[cfg(test)]
fn fit(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &SpicyConfig,
    min_points: usize,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_from(stack, y, None, cfg, None, min_points, interrupt)
}

/// The fixed data of one fit.
struct Fit<'a> {
    stack: &'a dyn KernelStack,
    y: &'a [f64],
    /// The loss weights `w_i` in the solver's scale (loss weight 1).
    wt: Vec<f64>,
    /// The loss weights `c_i = C w_i` in ours (the certificate's).
    cu: Vec<f64>,
    cfg: &'a SpicyConfig,
    psd: PsdCheck<'a>,
}

/// [`fit_spicy_weighted`] with a working set of points from `min_points` points on: the
/// settings and the start checked, then the outer loop ([`Spicy`]) on the driver.
fn fit_from(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &SpicyConfig,
    start: Option<&SpicyStart>,
    min_points: usize,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    let n = stack.n();
    crate::solvers::common::validate_targets(n, y)?;
    if cfg.loss.is_classification() && y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(MkError::config(
            "y",
            "classification losses need labels in {-1, +1}",
        ));
    }
    if let Some(s) = start {
        s.validate(stack.m(), n)?;
    }
    let fit = Fit {
        stack,
        y,
        // The loss weights: w_i in the solver's scale (loss weight 1), c_i = C w_i in ours.
        wt: crate::losses::costs(1.0, sample_weight, n)?,
        cu: crate::losses::costs(cfg.c, sample_weight, n)?,
        cfg,
        psd: PsdCheck::new(stack),
    };
    let warm = start.map(|s| Warm::new(stack, y, &fit.wt, cfg, s));
    let mut driver = Driver::new(cfg.tol, cfg.max_iter, interrupt);
    match Spicy::start(fit, warm, min_points, &mut driver.tracker, interrupt)? {
        Some(mut solver) => driver.run(&mut solver),
        // A warm start already optimal at this C: the fit ends at its certificate.
        None => driver.tracker.finish(1, SolveStatus::Converged),
    }
}

#[cfg(test)]
mod tests;
