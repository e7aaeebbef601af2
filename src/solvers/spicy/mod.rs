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
//! ([`kernel_scale`]): every step is then exactly the step on the stack `K/s` with
//! `λ_1/√s`, `λ_2/s`, without copying the stack, and a stack ×1e12 is as easy as the unit
//! one. The reference scale is the unit trace for the hinge-type losses and the unit mean
//! diagonal for the smooth ones, the faster of the two for each (docs/mathematics.md §2.2,
//! "Scale").
//!
//! # Outer loop (eq. 3, 5, 6)
//! With `v_m = A[m] + γ_m ρ`, `ρ = argmin φ_γ(ρ)`, then `A[m] ← prox_m(v_m)`,
//! `b ← b + γ_b Σ_i ρ_i`, and `γ ← min(κ γ, γ_max)`.
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
//! working set `W` (a [`SubStack`]): the natural dual point at `A = 0`, `ρ̃ = −C ℓ'(y, b)`,
//! ranks the kernels by their centred block norms `‖ρ̃‖_{K_m}` and `W` starts with the
//! [`AUTO_WORKING_SET`] largest. The restricted problem's solution is the full one iff every
//! kernel outside `W` satisfies its KKT condition `‖ρ̃‖_{K_m} ≤ r_1` (after the same scaling as
//! the certificate); so when the restricted gap falls below [`CHECK_GAP`], the dual candidate
//! that is better on `W` is projected over all kernels in one pass (one vector, not both:
//! the same bytes with half the arithmetic), which gives a dual value valid for the whole problem, and the violators (the most violated first, at most `|W|` of them) join `W`
//! with `A[m] = 0`, keeping the iterate. The primal is always that of the whole problem
//! (`A = 0` off `W`) and the reported dual is the best whole-problem dual seen, so the gap is a
//! certificate for the full problem at every iteration.
//!
//! # Certificate (docs/mathematics.md §1)
//! `P` from `(A, b)` by its definition; `D(ρ̃) = −C Σ ℓ*(y_i, −ρ̃_i/C)` (minus the elastic-net
//! term) at the best of two feasible points: the inner `ρ̃ = Cρ` and the natural
//! `ρ̃ = −C ℓ'(y, f)`, each made feasible by the clip-shift centring and (ℓ1) the scaling of
//! [`project_dual`].

pub(crate) mod dual;
mod inner;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{point_subset, KernelStack, PointSubset, SubStack};
use crate::losses::Loss;
use crate::penalties::{kernel_weights, SparsePenalty};
use crate::result::{relative_gap, FitResult, SolveStatus};
use crate::solvers::points::{new_points, scatter_points, MAX_FRACTION, MIN_POINTS};
use crate::solvers::single::SingleKernel;
use crate::solvers::tracker::{Model, Tracker};
use crate::solvers::witness::PsdCheck;

pub use crate::penalties::duals::dual_value;
pub use dual::{project_dual, project_duals, Projected};
use inner::{Inner, Outer};

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
    /// Largest `γ`, times `max(1, C√s)`, `s` the kernels' scale ([`kernel_scale`]; bounds the
    /// Hessian's condition number); finite, ≥ `gamma0`, default 1e8.
    pub gamma_max: f64,
    /// Kernels in the working set, at least 1 (`None`, the default: [`AUTO_WORKING_SET`] when
    /// the stack has more than twice as many, else all). Needs `r_1 > 0`; see the module
    /// documentation.
    pub working_set: Option<usize>,
    /// Iterate on a working set of points for the hinge-type losses from [`MIN_POINTS`]
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

impl SpicyConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        self.penalty.validate()?;
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
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

/// The warm start seen from the whole problem: its predictions `f = Σ_m K_m A[m]` (without
/// the intercept) and its dual in the solver's scale.
struct Warm<'a> {
    start: &'a SpicyStart,
    f: Vec<f64>,
    /// `‖A[m]‖_{K_m}`.
    norms: Vec<f64>,
    rho: Vec<f64>,
}

impl<'a> Warm<'a> {
    fn new(
        stack: &dyn KernelStack,
        y: &[f64],
        wt: &[f64],
        cfg: &SpicyConfig,
        start: &'a SpicyStart,
    ) -> Self {
        let n = stack.n();
        let loss = cfg.loss;
        let mut f = vec![0.0; n];
        let mut tmp = vec![0.0; n];
        let mut norms = vec![0.0; stack.m()];
        for (m, row) in start.coef.chunks_exact(n.max(1)).enumerate() {
            if row.iter().any(|&v| v != 0.0) {
                stack.matvec(m, row, &mut tmp);
                f.iter_mut().zip(&tmp).for_each(|(o, t)| *o += t);
                let s2: f64 = row.iter().zip(&tmp).map(|(a, k)| a * k).sum();
                norms[m] = s2.max(0.0).sqrt();
            }
        }
        let b = start.intercept;
        let mut warm = Warm {
            start,
            f,
            norms,
            rho: Vec::new(),
        };
        warm.rho = match &start.dual {
            Some(d) => d.clone(),
            None => y
                .iter()
                .zip(&warm.f)
                .zip(wt)
                .map(|((&yi, &fi), &wi)| -wi * loss.deriv(yi, fi + b))
                .collect(),
        };
        if loss == Loss::Logistic {
            // Newton needs a point strictly inside the conjugate's domain, 0 < yρ/w < 1.
            for ((r, &yi), &wi) in warm.rho.iter_mut().zip(y).zip(wt) {
                *r = wi * yi * (yi * *r / wi).clamp(1e-12, 1.0 - 1e-12);
            }
        }
        warm
    }

    /// The dual point the start's coefficients are parallel to: at an optimum every active
    /// `A[m] = d_m ρ̃` with `‖ρ̃‖_{K_m} = r_1 + r_2 s_m`, so `ρ̃ = A[m] (r_1 + r_2 s_m)/s_m`,
    /// here averaged with weights `s_m`: `ρ̃ = Σ_m (r_1 + r_2 s_m) A[m] / Σ_m s_m`. It is the
    /// optimal `ρ̃` of the start's own C whatever that C (the block norms fix its scale),
    /// including the hinge-type losses' margin points, where `−C ℓ'(y, f + b)` is only a
    /// subgradient (zero or the box's face). Zero when `A = 0`.
    fn parallel_dual(&self, penalty: SparsePenalty) -> Vec<f64> {
        let (r1, r2) = penalty.weights();
        let n = self.f.len();
        let mut rho = vec![0.0; n];
        let total: f64 = self.norms.iter().sum();
        if total <= 0.0 {
            return rho;
        }
        for (row, &s) in self.start.coef.chunks_exact(n.max(1)).zip(&self.norms) {
            if s > 0.0 {
                let w = (r1 + r2 * s) / total;
                rho.iter_mut().zip(row).for_each(|(r, a)| *r += w * a);
            }
        }
        rho
    }
}

/// The fixed data of one fit, and the steps of [`fit_from`] that read only it.
struct Fit<'a> {
    stack: &'a dyn KernelStack,
    y: &'a [f64],
    /// The loss weights `w_i` in the solver's scale (loss weight 1).
    wt: &'a [f64],
    /// The loss weights `c_i = C w_i` in ours (the certificate's).
    cu: &'a [f64],
    cfg: &'a SpicyConfig,
    psd: &'a PsdCheck<'a>,
}

impl Fit<'_> {
    /// Certifies a warm start on the whole problem (recorded as the first iteration): the
    /// best whole-problem dual value of its three candidates, the relative gap, and the
    /// centred block norms of the best candidate, which rank the kernels for a working set.
    fn certify_warm(&self, w: &Warm<'_>, tracker: &mut Tracker) -> (f64, f64, Vec<f64>) {
        let (cfg, y, cu) = (self.cfg, self.y, self.cu);
        let b0 = cfg.loss.best_intercept(y, &w.f, cu, w.start.intercept);
        let natural = cfg.loss.natural_dual(y, &w.f, b0, cu);
        let scaled: Vec<f64> = w.rho.iter().map(|r| cfg.c * r).collect();
        let parallel = w.parallel_dual(cfg.penalty);
        let mut candidates = project_duals(
            self.stack,
            y,
            &[&natural, &scaled, &parallel],
            cu,
            cfg.loss,
            cfg.penalty,
            self.psd.all(),
        );
        let values: Vec<f64> = candidates
            .iter()
            .map(|p| dual_value(&p.norms, y, &p.rho, cu, cfg.loss, cfg.penalty))
            .collect();
        let j = (0..values.len())
            .max_by(|&a, &b| values[a].total_cmp(&values[b]))
            .expect("three candidates");
        for p in &candidates {
            tracker.note(p.witness);
        }
        let primal =
            cfg.c * cfg.loss.weighted_total(y, &w.f, b0, self.wt) + cfg.penalty.value(&w.norms);
        let active = w.norms.iter().filter(|&&s| s > 0.0).count();
        let gap = tracker.record_with(primal, (values[j], None), active, || Model {
            coef: w.start.coef.clone(),
            intercept: b0,
            weights: kernel_weights(cfg.penalty, &w.norms),
            norms: w.norms.clone(),
        });
        (values[j], gap, candidates.swap_remove(j).centred)
    }

    /// The first working set of `size` kernels: ranked by a warm start's best dual candidate
    /// (`warm`: the start and that ranking), its support kept in the set (its kernels would
    /// otherwise be dropped with their `A[m]`); or, from `A = 0`, by the natural dual point
    /// there, whose block norms are the first activity test and whose value is already a
    /// certificate for the whole problem (into `full_dual`).
    fn first_kernels(
        &self,
        size: usize,
        warm: Option<(&Warm<'_>, &[f64])>,
        tracker: &mut Tracker,
        full_dual: &mut f64,
    ) -> Vec<usize> {
        let (cfg, y, cu) = (self.cfg, self.y, self.cu);
        let m_all = self.stack.m();
        if let Some((w, score)) = warm {
            let mut set = largest(score, (0..m_all).collect(), size);
            set.extend((0..m_all).filter(|&m| w.norms[m] > 0.0));
            set.sort_unstable();
            set.dedup();
            return set;
        }
        let f0 = vec![0.0; y.len()];
        let b0 = cfg.loss.best_intercept(y, &f0, cu, 0.0);
        let start = cfg.loss.natural_dual(y, &f0, b0, cu);
        let p = project_duals(
            self.stack,
            y,
            &[&start],
            cu,
            cfg.loss,
            cfg.penalty,
            self.psd.all(),
        )
        .pop()
        .expect("one candidate");
        *full_dual = dual_value(&p.norms, y, &p.rho, cu, cfg.loss, cfg.penalty);
        tracker.note(p.witness);
        largest(&p.centred, (0..m_all).collect(), size)
    }

    /// Every point's prediction `f = Σ_m K_m A[m]` from an iterate on the working set of
    /// points `idx` (the `kernels` with a non-zero block norm), and its best intercept from `b`.
    fn whole_predictions(
        &self,
        state: &Outer,
        kernels: &[usize],
        norms: &[f64],
        idx: &[usize],
        b: f64,
    ) -> (Vec<f64>, f64) {
        let (n, nw) = (self.stack.n(), idx.len());
        let mut fa = vec![0.0; n];
        let mut tmp = vec![0.0; n];
        let mut unit = vec![0.0; self.stack.m()];
        for (k, &m) in kernels.iter().enumerate().take(norms.len()) {
            if norms[k] > 0.0 {
                let row = scatter_points(&state.a[k * nw..(k + 1) * nw], idx, n);
                unit[m] = 1.0;
                self.stack.combined_matvec(&unit, &row, &mut tmp);
                unit[m] = 0.0;
                fa.iter_mut().zip(&tmp).for_each(|(o, t)| *o += t);
            }
        }
        let bw = self.cfg.loss.best_intercept(self.y, &fa, self.cu, b);
        (fa, bw)
    }

    /// The model of an iterate on all kernels and points (`A` is zero off the working sets),
    /// with the intercept `b`.
    fn model(
        &self,
        state: &Outer,
        kernels: &[usize],
        norms: &[f64],
        points: Option<&PointSubset>,
        b: f64,
    ) -> Model {
        let (n, m_all) = (self.stack.n(), self.stack.m());
        let nw = points.map_or(n, |p| p.indices().len());
        let mut coef = vec![0.0; m_all * n];
        let mut all_norms = vec![0.0; m_all];
        for (k, &m) in kernels.iter().enumerate().take(norms.len()) {
            let row = &state.a[k * nw..(k + 1) * nw];
            match points {
                Some(p) => {
                    for (&i, &v) in p.indices().iter().zip(row) {
                        coef[m * n + i] = v;
                    }
                }
                None => coef[m * n..(m + 1) * n].copy_from_slice(row),
            }
            all_norms[m] = norms[k];
        }
        Model {
            coef,
            intercept: b,
            weights: kernel_weights(self.cfg.penalty, &all_norms),
            norms: all_norms,
        }
    }

    /// Grows the working set of points of a nearly optimal iterate (`z`: every point's
    /// prediction with the intercept): the points whose loss has a non-zero (sub)derivative
    /// at `z` violate the optimality of `ρ̃_i = 0` and join it, at their prediction; above
    /// [`MAX_FRACTION`] of the points the whole problem takes over (`points` becomes `None`).
    /// Growing early, at small γ, costs fewer Newton steps than growing once the set is solved
    /// (docs/mathematics.md §2.8). Returns whether the points changed.
    fn grow_points(
        &self,
        points: &mut Option<PointSubset>,
        state: &mut Outer,
        kernels: &[usize],
        z: Vec<f64>,
    ) -> bool {
        let Some(p) = points.as_mut() else {
            return false;
        };
        let n = self.stack.n();
        let more = new_points(self.cfg.loss, self.y, &z, &[], p.indices());
        if more.is_empty() {
            return false;
        }
        if p.indices().len() + more.len() > (MAX_FRACTION * n as f64) as usize {
            // The whole problem takes over, in the points' own order.
            let place = p.indices().to_vec();
            *points = None;
            state.move_points(&SubStack::new(self.stack, kernels.to_vec()), &place, z);
        } else {
            let w = p.indices().len();
            let mut znew = vec![0.0; w];
            znew.extend(more.iter().map(|&i| z[i]));
            p.extend(self.stack, &more);
            let place: Vec<usize> = (0..w).collect();
            state.move_points(&SubStack::new(p.stack(), kernels.to_vec()), &place, znew);
        }
        true
    }
}

impl Warm<'_> {
    /// The start restricted to the `kernels` and `points` being iterated (`A` is zero off
    /// them), with the slack at the start's predictions.
    fn state(
        &self,
        stack: &dyn KernelStack,
        kernels: &[usize],
        points: Option<&PointSubset>,
    ) -> Outer {
        let n = stack.n();
        let all: Vec<usize>;
        let idx: &[usize] = match points {
            Some(p) => p.indices(),
            None => {
                all = (0..n).collect();
                &all
            }
        };
        let mut a = Vec::with_capacity(kernels.len() * idx.len());
        for &m in kernels {
            a.extend(idx.iter().map(|&i| self.start.coef[m * n + i]));
        }
        let b = self.start.intercept;
        let z = idx.iter().map(|&i| self.f[i] + b).collect();
        let rho = idx.iter().map(|&i| self.rho[i]).collect();
        let base: &dyn KernelStack = points.map_or(stack, |p| p.stack());
        Outer::warm(&SubStack::new(base, kernels.to_vec()), a, b, z, rho)
    }
}

/// [`fit_spicy_weighted`] with a working set of points from `min_points` points on.
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
    crate::solvers::validate_targets(n, y)?;
    if cfg.loss.is_classification() && y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(MkError::config(
            "y",
            "classification losses need labels in {-1, +1}",
        ));
    }
    let (r1, r2) = cfg.penalty.weights();
    let m_all = stack.m();
    if let Some(s) = start {
        s.validate(m_all, n)?;
    }
    // The loss weights: w_i in the solver's scale (loss weight 1), c_i = C w_i in ours.
    let wt = crate::losses::costs(1.0, sample_weight, n)?;
    let cu = crate::losses::costs(cfg.c, sample_weight, n)?;
    let warm = start.map(|s| Warm::new(stack, y, &wt, cfg, s));
    let mut tracker = Tracker::new(interrupt);
    let psd = PsdCheck::new(stack);
    // The best dual value that is valid for all kernels (the restricted problems' duals are
    // not), as computed: a witness that a kernel is not PSD voids it as a certificate, which
    // the tracker notes (`note`, `certified`; then the fit stops where it would have converged).
    let mut full_dual = f64::NEG_INFINITY;
    let size = cfg.working_set.unwrap_or(AUTO_WORKING_SET);
    let use_ws =
        r1 > 0.0 && size < m_all && (cfg.working_set.is_some() || 2 * AUTO_WORKING_SET < m_all);
    let fit = Fit {
        stack,
        y,
        wt: &wt,
        cu: &cu,
        cfg,
        psd: &psd,
    };
    // A warm start is certified first, on the whole problem: from an optimum at this C the
    // fit ends here. Its better dual candidate ranks the kernels for the working set.
    let mut ranking = None;
    if let Some(w) = &warm {
        let (dual, gap, score) = fit.certify_warm(w, &mut tracker);
        full_dual = dual;
        if gap <= cfg.tol {
            return tracker.finish(1, SolveStatus::Converged);
        }
        ranking = Some(score);
    }
    let mut kernels = if use_ws {
        fit.first_kernels(
            size,
            warm.as_ref().zip(ranking.as_deref()),
            &mut tracker,
            &mut full_dual,
        )
    } else {
        (0..m_all).collect()
    };
    let slack = matches!(
        cfg.loss,
        Loss::Hinge | Loss::SquaredHinge | Loss::EpsilonInsensitive { .. }
    );
    let mut points = if !(cfg.point_working_set && slack && n >= min_points) {
        None
    } else if let Some(w) = &warm {
        warm_points(stack, y, cfg, w)
    } else {
        first_points(stack, y, &cu, cfg, &kernels, interrupt)?
    };
    // The targets and loss weights of the points being iterated (all, or those of the
    // working set).
    let pick = |v: &[f64], points: &Option<PointSubset>| -> Vec<f64> {
        match points {
            Some(p) => p.indices().iter().map(|&i| v[i]).collect(),
            None => v.to_vec(),
        }
    };
    let mut yw = pick(y, &points);
    let mut ww = pick(&wt, &points);
    let mut state = match &warm {
        None => Outer::new(kernels.len(), yw.len(), cfg.loss, &yw, &ww),
        Some(w) => w.state(stack, &kernels, points.as_ref()),
    };
    let mut status = SolveStatus::MaxIterations;
    // In the loss-weight-1 scaling the ℓ1 weight is 1/C, so the threshold γ/C of a kernel is
    // active only for γ of order C: a fixed cap stalled the hinge losses at large C
    // (docs/mathematics.md §2.2).
    // In the unit-scale problem (see "Scale") that weight is 1/(C√s).
    let scale = kernel_scale(stack, slack);
    let gamma_cap = cfg.gamma_max * (cfg.c * scale.sqrt()).max(1.0);
    // A warm start near the optimum needs no small first proximal steps (see WARM_GAMMA_STEPS).
    let mut gamma = if warm.is_some() && !slack {
        (cfg.gamma0 * cfg.gamma_factor.powi(WARM_GAMMA_STEPS)).min(gamma_cap)
    } else {
        cfg.gamma0
    };
    // A warm start's certificate counts as the first iteration (the first row of the history).
    let mut n_iter = usize::from(warm.is_some());
    // The inner residual ∇φ is a mismatch of predictions; it must not limit the outer gap.
    let inner_tol =
        (1e-3 * cfg.tol).clamp(1e-12, 1e-6) * (1.0 + y.iter().fold(0.0f64, |a, v| a.max(v.abs())));
    for _ in 0..cfg.max_iter {
        interrupt.check()?;
        n_iter += 1;
        // The points being iterated, and the kernel working set on them.
        let base: &dyn KernelStack = points.as_ref().map_or(stack, |p| p.stack());
        let nw = base.n();
        let sub = SubStack::new(base, kernels.clone());
        let inner = Inner {
            stack: &sub,
            y: &yw,
            w: &ww,
            loss: cfg.loss,
            slack,
            lam1: r1 / cfg.c,
            lam2: r2 / cfg.c,
            kernel_gamma: 1.0 / scale,
            max_inner: cfg.max_inner,
            inner_tol,
        };
        let before = state.clone();
        if !inner.step(&mut state, gamma, interrupt)? && gamma > cfg.gamma0 {
            // Newton stalled far from the inner minimiser: undo the step and retry with a
            // tenth of γ (any positive γ sequence is a proximal point method).
            state = before;
            gamma = (gamma / 10.0).max(cfg.gamma0);
            n_iter -= 1;
            continue;
        }
        gamma = (gamma * cfg.gamma_factor).min(gamma_cap);

        // Certificate: the primal from (A, b) by its definition, with the best intercept for
        // this A (any b is a valid primal point, the best one keeps P tight). A is zero off the
        // working sets, so P is the primal of the whole problem.
        let mut f = vec![0.0; nw];
        state.predictions(&mut f);
        let cw_all: Vec<f64> = ww.iter().map(|w| cfg.c * w).collect();
        let cw = cw_all.as_slice();
        let b = cfg.loss.best_intercept(&yw, &f, cw, state.b);
        let norms = state.norms();
        let data = |y: &[f64], f: &[f64], b: f64, w: &[f64]| cfg.loss.weighted_total(y, f, b, w);
        let penalty = cfg.penalty.value(&norms);
        let primal_here = cfg.c * data(&yw, &f, b, &ww) + penalty;
        // Every point's prediction, when iterating on a working set of points.
        let whole = points
            .as_ref()
            .map(|p| fit.whole_predictions(&state, &kernels, &norms, p.indices(), b));
        let primal = match &whole {
            Some((fa, bw)) => cfg.c * data(y, fa, *bw, &wt) + penalty,
            None => primal_here,
        };
        // Dual candidates on the iterated points; zero on the other points, they are dual
        // points of the whole problem (ℓ*(y, 0) = 0, and the block norms are the same).
        let natural = cfg.loss.natural_dual(&yw, &f, b, cw);
        let scaled: Vec<f64> = state.rho.iter().map(|r| cfg.c * r).collect();
        let candidates: [&[f64]; 2] = [&natural, &scaled];
        let value = |p: &Projected| dual_value(&p.norms, &yw, &p.rho, cw, cfg.loss, cfg.penalty);
        let local = project_duals(
            &sub,
            &yw,
            &candidates,
            cw,
            cfg.loss,
            cfg.penalty,
            psd.of(sub.indices()),
        );
        // The working-set decisions below use the values as they are; only points without a
        // witness that a kernel is not PSD count for the certificate.
        let local_dual = local.iter().map(value).fold(f64::NEG_INFINITY, f64::max);
        if sub.m() == m_all {
            for p in &local {
                tracker.note(p.witness);
                full_dual = full_dual.max(value(p));
            }
        } else if relative_gap(primal_here, local_dual) <= cfg.tol.max(CHECK_GAP) {
            // Optimal on the working set: check every kernel in one pass, with the candidate
            // that is best on the working set, and add the kernels whose block norm says they
            // should be active (KKT: ‖ρ̃‖_{K_m} ≤ r_1 off the support), the most violated first.
            let j = (0..local.len())
                .max_by(|&a, &b| value(&local[a]).total_cmp(&value(&local[b])))
                .expect("two candidates");
            let checked = project_duals(
                base,
                &yw,
                &[candidates[j]],
                cw,
                cfg.loss,
                cfg.penalty,
                psd.all(),
            );
            tracker.note(checked[0].witness);
            full_dual = full_dual.max(value(&checked[0]));
            let mut inside = vec![false; m_all];
            kernels.iter().for_each(|&m| inside[m] = true);
            let score = violation(&checked, &inside, r1, r2);
            let outside: Vec<usize> = (0..m_all)
                .filter(|&m| !inside[m] && score[m] > 1.0)
                .collect();
            let gap = relative_gap(primal_here.min(tracker.best_primal()), full_dual);
            if gap > cfg.tol && !outside.is_empty() {
                let more = largest(&score, outside, size);
                kernels.extend_from_slice(&more);
                state.grow(more.len());
            }
        }
        let active = norms.iter().filter(|&&s| s > 0.0).count();
        let (f_all, b_all) = match &whole {
            Some((fa, bw)) => (fa.as_slice(), *bw),
            None => (f.as_slice(), b),
        };
        // Certified as −∞ once a dual point showed a kernel is not PSD (noted above).
        let gap = tracker.record_with(primal, (full_dual, None), active, || {
            fit.model(&state, &kernels, &norms, points.as_ref(), b_all)
        });
        if gap <= cfg.tol {
            status = SolveStatus::Converged;
            break;
        }
        // Nearly optimal on the working set of points (the kernels' check threshold): it grows.
        let nearly = relative_gap(primal_here, full_dual) <= (0.5 * cfg.tol).max(CHECK_GAP);
        if nearly && points.is_some() {
            let z: Vec<f64> = f_all.iter().map(|fi| fi + b_all).collect();
            if fit.grow_points(&mut points, &mut state, &kernels, z) {
                yw = pick(y, &points);
                ww = pick(&wt, &points);
            }
        }
    }
    tracker.finish(n_iter, status)
}

/// A warm start of a smooth loss (logistic, squared) begins at `γ = γ^{(1)} κ^2`, two growth
/// steps on: near the optimum the small first proximal steps only cost outer iterations, and
/// a start further on diverged; a Newton stall still falls back towards `γ^{(1)}`. The
/// hinge-type losses start at `γ^{(1)}`: their slack's `γ_z = √γ` pins the points on the dual
/// box's faces (see `inner::slack_gamma`), and the larger start was slower on the hinge
/// (docs/mathematics.md §2.10, "First γ", has the measurements).
const WARM_GAMMA_STEPS: i32 = 2;

/// A working set of points is used when the first holds at most this fraction of the points:
/// the Newton systems shrink by its cube, but each growth costs outer iterations
/// (docs/mathematics.md §2.8, "Start").
const FIRST_FRACTION: f64 = 0.5;

/// The first working set of points: the support vectors and margin violators of the
/// single-kernel problem on the mean of the working-set kernels, rescaled once (one or two
/// SMO solves). `None` when it is too large to pay off ([`FIRST_FRACTION`]) or cannot hold
/// a problem (a classifier needs both classes).
fn first_points(
    stack: &dyn KernelStack,
    y: &[f64],
    cu: &[f64],
    cfg: &SpicyConfig,
    kernels: &[usize],
    interrupt: &dyn Interrupt,
) -> Result<Option<PointSubset>> {
    let n = stack.n();
    let mut theta = vec![0.0; stack.m()];
    for &m in kernels {
        theta[m] = 1.0 / kernels.len() as f64;
    }
    let mut solver = SingleKernel::new(cfg.loss, cu, y)?;
    let mut buf = Vec::new();
    let (mut f, mut b) = solver.solve_combined(stack, y, cu, &theta, 1e-3, &mut buf, interrupt)?;
    // The scale of the kernel matters (it acts as C does): at the l1 optimum the active
    // kernels' `A[m] = η_m β` have `βᵀK_mβ = 1` (‖ρ̃‖_{K_m} = 1), while a mean of
    // trace-normalised kernels is far smaller. One fixed-point step `θ ← θ √(βᵀK_θβ)` of
    // the scale (exact when every α is free) fixes it (docs/mathematics.md §2.8, "Start").
    let q: f64 = solver.beta().iter().zip(&f).map(|(bi, fi)| bi * fi).sum();
    if q > 0.0 && q.is_finite() && !(0.25..=4.0).contains(&q) {
        theta.iter_mut().for_each(|t| *t *= q.sqrt());
        (f, b) = solver.solve_combined(stack, y, cu, &theta, 1e-3, &mut buf, interrupt)?;
    }
    let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
    let idx = new_points(cfg.loss, y, &z, solver.alpha().unwrap_or(&[]), &[]);
    let both = idx.iter().any(|&i| y[i] > 0.0) && idx.iter().any(|&i| y[i] < 0.0);
    if idx.len() < 2 || idx.len() as f64 > FIRST_FRACTION * n as f64 || !both {
        return Ok(None);
    }
    Ok(Some(point_subset(stack, &idx, n)))
}

/// The first working set of points of a warm start: the points where the start has a
/// significant coefficient ([`WARM_COLUMN`]) or a non-zero dual, or a non-zero loss derivative
/// at its prediction. The start's coefficients off the set are dropped (a nearby start; the
/// problem and its certificate do not change). `None` under the same conditions as
/// [`first_points`].
fn warm_points(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &SpicyConfig,
    w: &Warm<'_>,
) -> Option<PointSubset> {
    let n = y.len();
    let z: Vec<f64> = w.f.iter().map(|fi| fi + w.start.intercept).collect();
    let mut column = vec![0.0f64; n];
    for row in w.start.coef.chunks_exact(n.max(1)) {
        for (c, a) in column.iter_mut().zip(row) {
            *c = c.max(a.abs());
        }
    }
    let top = column.iter().fold(0.0f64, |a, &c| a.max(c));
    let mut marks: Vec<f64> = column
        .iter()
        .map(|&c| if c > WARM_COLUMN * top { 1.0 } else { 0.0 })
        .collect();
    marks.extend_from_slice(&w.rho);
    let idx = new_points(cfg.loss, y, &z, &marks, &[]);
    let both = idx.iter().any(|&i| y[i] > 0.0) && idx.iter().any(|&i| y[i] < 0.0);
    if idx.len() < 2 || idx.len() as f64 > FIRST_FRACTION * n as f64 || !both {
        return None;
    }
    Some(point_subset(stack, &idx, n))
}

/// A warm start's column `A[:, i]` below this fraction of its largest entry is a remain of the
/// proximal iterates, not a support vector: `A ← prox(A + γρ)` only shrinks the entries of a
/// point that left the support (docs/mathematics.md §2.10, "Working sets").
const WARM_COLUMN: f64 = 1e-3;

/// How far each kernel is from its optimality condition, `> 1` when violated: the block norm
/// of the centred dual point over `r_1` (elastic net: a kernel with `‖ρ̃‖_{K_m} > r_1` must be
/// active); for `l1` over the largest block norm on the working set, which sets the scaling
/// of [`project_duals`], so a kernel scoring `> 1` is one that lowers the dual value.
fn violation(points: &[Projected], inside: &[bool], r1: f64, r2: f64) -> Vec<f64> {
    let mut score = vec![0.0f64; inside.len()];
    for p in points {
        let mut thr = r1;
        if r2 == 0.0 {
            for (m, &s) in p.centred.iter().enumerate() {
                if inside[m] {
                    thr = thr.max(s);
                }
            }
        }
        for (sc, &s) in score.iter_mut().zip(&p.centred) {
            *sc = sc.max(s / thr);
        }
    }
    score
}

/// The (at most) `k` entries of `ids` with the largest `score`, in increasing index order.
fn largest(score: &[f64], mut ids: Vec<usize>, k: usize) -> Vec<usize> {
    ids.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
    ids.truncate(k);
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests;
