//! `l1` and elastic-net MKL as a wrapper around one single-kernel solver (docs/mathematics.md
//! §2.11): SMO for the hinge-type losses (hinge, squared hinge, ε-insensitive), Newton with
//! conjugate gradients for the smooth ones (logistic, squared), both warm-started.
//!
//! # The problem in the kernel weights
//! By `r_1 s = min_{θ>0} ½ (s²/θ + r_1² θ)` (minimum at `θ = s/r_1`), the primal
//! `P = C Σ_i ℓ(y_i, f(x_i)) + Σ_m (r_1 s_m + r_2 s_m²/2)`, `s_m = ‖f_m‖`, is
//! `min_{θ ≥ 0} S(w(θ)) + ½ r_1² Σ_m θ_m` with `w_m = θ_m/(1 + r_2 θ_m)` and `S(w)` the
//! optimum of the single-kernel problem `min_f C Σ ℓ + ½ ‖f‖²` on `K_w = Σ_m w_m K_m`
//! (`Σ_m ‖f_m‖²/w_m = Σ_m (‖f_m‖²/θ_m + r_2 ‖f_m‖²)`). We iterate on the effective weights
//! `w ∈ [0, 1/r_2)^M` themselves:
//!
//! `J(w) = S(w) + Σ_m π(w_m)`,  `π(w) = ½ r_1² w/(1 − r_2 w)`,
//!
//! convex (`S` is a supremum of functions linear in `w`, `π` is convex). With the SVM's dual
//! point `β` (`f = K_w β + b`, `f_m = w_m K_m β`):
//!
//! - `∂J/∂w_m = −½ q_m + π'(w_m)`, `q_m = βᵀK_mβ`, `π'(w) = ½ r_1²/(1 − r_2 w)²`: at the
//!   optimum `q_m = r_1²/(1 − r_2 w_m)²` where `w_m > 0` and `q_m ≤ r_1²` where `w_m = 0`,
//!   the norm condition of the `l1` dual (docs/mathematics.md §1.1), so the certificate of
//!   SpicyMKL applies unchanged: `P` at `A[m] = w_m β`, `D` at the multiple of `β` that is
//!   best and feasible (`best_dual`).
//! - `∂²J/∂w_m∂w_k = g_mᵀ Z g_k + [m = k] π''(w_m)`, `g_m = (K_mβ)_F` on the free support
//!   vectors `F`, and `Z = A⁻¹ − A⁻¹11ᵀA⁻¹/(1ᵀA⁻¹1)` with `A = K_w[F, F] + R` (`R = I/C`
//!   for the squared hinge, 0 otherwise): the implicit function theorem on the SVM's
//!   optimality conditions restricted to `F`, `(K_wβ)_F + Rβ_F + ν1 = c_F`, `1ᵀβ = 0`
//!   (Chapelle & Rakotomamonjy's HessianMKL, "Second order optimization of kernel
//!   parameters", 2008, without its simplex constraint). For a smooth loss the same theorem
//!   on `β = −Cℓ'(K_wβ + b)` gives every point as free and `A = K_w + (CW)⁻¹`,
//!   `W = diag ℓ''(f)`: the matrix of Newton's own last system, so `Z g_k` for all the
//!   model's kernels are one block of conjugate-gradient solves with Newton's
//!   preconditioner (no `n × n` factorisation), or a factorisation through the capacitance
//!   matrix on a stack of factors.
//!
//! # The iteration
//! 1. The scale: along the uniform direction `w = tλ`, `λ_m = 1/M`, the derivative
//!    `−½ βᵀK_λβ + Σ_m λ_m π'(tλ_m)` changes sign where `βᵀK_λβ = r_1²/(1 − r_2t/M)²`; it is
//!    found by SMO solves on `t K_λ` alone (one combine, no further kernel reads), since
//!    a Newton step from a wrong scale crawls (`J` grows like `1/t` below the optimum).
//!    With more than `2 · START_KERNELS` kernels, only the `START_KERNELS` that this SVM's
//!    solution ranks first (largest `q_m`) start non-zero, with the same total weight.
//!    From `SAMPLE_MIN` points on, the search and the ranking run on a
//!    `Sample` of the points instead (no solve on all of them before the
//!    first iterate).
//! 2. Trust-region Newton steps: minimise the quadratic model over the box
//!    `d_m ≤ (R − 1) w_m` (a weight may drop to zero, or by the factor `R` at most once a
//!    refused step shrank `R` below its start; a kernel at zero with `∂J/∂w_m < 0` may
//!    enter up to a quarter of the mean weight times `R − 1`; at most
//!    `MAX_MODEL` kernels). The next SVM solve gives `J` at the trial
//!    point (its SMO dual value plus the penalty): a step that raised `J` is refused and
//!    retried from the same model with a smaller `R`; `R` doubles after a step that achieved
//!    half the predicted decrease.
//!
//! 3. Working sets (docs/mathematics.md §2.11), with whole-problem checks on the schedule of
//!    `CheckSchedule`: for the hinge-type losses
//!    a set of points `W` (the first iterate's support vectors and margin violators), whose
//!    restricted iterates solve SMO on `K_m[W, W]` and certify the whole problem's `D` (their
//!    `P` is recorded as `+∞`), each standing for the whole problem only once no point outside
//!    `W` violates optimality at its weights (else they join `W` and the weights are solved
//!    again before the trust region judges the step: `J_W ≤ J` can be least far below the
//!    whole problem's scale, at `w = 0` on pima); and, once at most half the kernels can move
//!    at a whole-problem iterate, a set of kernels (those with a weight or a negative
//!    gradient), whose restricted iterates read only theirs and certify the whole problem's
//!    `P` (their `D` bounds the restricted problem only): the smooth losses' dense `β` makes
//!    the forms read every kernel whole, and SMO's read the support vectors' rows of every
//!    kernel, about a pass over the stack at small `C`.
//!
//! Every accepted iterate is certified with the whole problem's `P`, `D` and gap (outside the
//! working sets); each costs one combine of the active kernels, one warm-started solve, the
//! forms `q_m` of every kernel (SMO: the rows of the support vectors only) and `K_mβ` for the
//! model's kernels (the smooth losses' dense `β`: every `K_mβ` in the same one pass as the
//! forms).
//!
//! For SMO on a stored stack the whole problem's iterates run on per-kernel gradient caches
//! `h_m = K_mβ_c` instead (`GradientCaches`; docs/performance.md, "The SVM wrapper on
//! per-kernel gradient caches"): the solves read the columns of `K_w` they step on from the
//! kernels with a weight (or form `K_w` when the last solve read more than a quarter of
//! them), warm-started from `Σ_m w_m h_m` plus the changed coefficients' rows of those
//! kernels, so that a trial step, refused or not, combines nothing; the caches of every
//! kernel are brought to `β` only when an iterate is certified, from the rows of the
//! coefficients that changed since the last one, and give its forms `q_m = βᵀh_m` and the
//! Hessian's products `h_k`.
//!
//! On kernels computed on demand (hinge-type losses) nothing `n × n` is formed: SMO reads the
//! columns of `K_w` through its row cache, and the Hessian needs `K_w[F, F]` and `K_kβ` on the
//! support vectors only (`|S|²` evaluations per kernel, from views of those points).
//!
//! # The code
//! `fit_from` builds the state (`Wrapper`) from the first iterate (`start`, step 1) and
//! the `Driver` runs it. Each iteration (`state`) is one SVM solve at the weights `w`
//! (`Combined` holds `K_w`), the verdict on the trial step, the certificate of the iterate
//! (`certificate`; of a working set, with its checks: `checks`), and the next trust-region
//! step of the Newton model (`newton`, step 2).

mod certificate;
mod checks;
mod combined;
mod newton;
mod qp;
mod start;
mod state;

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::{costs, Loss};
use crate::penalties::{SparsePenalty, WeightPenalty};
use crate::result::FitResult;
use crate::solvers::driver::Driver;
use crate::solvers::points::{PointSet, MIN_POINTS};
use crate::solvers::single::{GradientCaches, SingleKernel};
use crate::solvers::witness::PsdCheck;

// The Newton model on the kernel weights, which the shared multiclass fit takes over with the
// forms summed over the classes (`solvers::shared`).
use certificate::Aggregate;
pub(crate) use certificate::Point;
pub(crate) use combined::Combined;
pub(crate) use newton::{
    gradient, model_kernels, s_hessian, step_rose, NewtonModel, MAX_MODEL, MAX_MODEL_SMOOTH,
    MIN_RADIUS, START_RADIUS,
};

/// The most exact SMO solve asked for when the model stalls above `tol`.
const MIN_INNER_TOL: f64 = 1e-12;

/// The smooth losses' first Newton accuracy (a relative decrease of the objective); then
/// `0.03 ×` the gap, as the ℓp wrapper's (docs/mathematics.md §2.11).
const NEWTON_START_TOL: f64 = 1e-4;

/// Settings of an `l1` / elastic-net fit by the SVM wrapper.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WrapperConfig {
    pub penalty: SparsePenalty,
    /// Loss weight.
    pub c: f64,
    /// Any loss: SMO solves the single-kernel problem of the hinge-type ones, Newton that of
    /// the smooth ones.
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// SVM solves at most (refused trial steps included).
    pub max_iter: usize,
    /// Accuracy of each SMO solve (maximal KKT violation): the Newton model is the derivative
    /// of the exact solution, so it is asked from the first step. (The smooth losses'
    /// Newton solves follow the gap instead.)
    pub inner_tol: f64,
}

impl Default for WrapperConfig {
    fn default() -> Self {
        WrapperConfig {
            penalty: SparsePenalty::L1,
            c: 1.0,
            loss: Loss::Hinge,
            tol: 1e-3,
            max_iter: 200,
            inner_tol: 1e-7,
        }
    }
}

/// The settings by name.
impl Fields for WrapperConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        self.penalty.fields(v)?;
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

impl WrapperConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        self.penalty.validate()
    }
}

/// Fits `l1` or elastic-net MKL with the SVM wrapper.
pub fn fit_wrapper(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &WrapperConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_wrapper_weighted(stack, y, None, cfg, interrupt)
}

/// [`fit_wrapper`] with a weight per sample on the loss (`C Σ_i w_i ℓ(y_i, f_i)`; SMO's boxes
/// `0 ≤ α_i ≤ C w_i`).
pub fn fit_wrapper_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_from(stack, y, sample_weight, cfg, MIN_POINTS, false, interrupt)
}

/// [`fit_wrapper_weighted`] for a caller that continues a stalled fit with another solver
/// ([`crate::solvers::continued`]): the fit ends `Stalled` at its first stall, slow or frozen,
/// rather than going on while its gap moves.
pub(crate) fn fit_wrapper_handing_over(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_from(stack, y, sample_weight, cfg, MIN_POINTS, true, interrupt)
}

/// [`fit_wrapper_weighted`] with a working set of points from `min_points` points on (the
/// hinge-type losses; the tests move the threshold), handing over at its first stall when
/// `handover` ([`fit_wrapper_handing_over`]).
fn fit_from(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    min_points: usize,
    handover: bool,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::common::validate_targets(stack.n(), y)?;
    let c = &costs(cfg.c, sample_weight, y.len())?;
    let pen = WeightPenalty::of(cfg.penalty);
    let mut whole = SingleKernel::new(cfg.loss, c, y)?;
    // The smooth losses' `β` is dense; Newton then works on factors where the stack has them.
    let smooth = !whole.is_sparse();
    if smooth && stack.on_demand().is_some() {
        return Err(MkError::Unsupported(
            "the wrapper fits kernels computed on demand with the hinge-type losses only \
             (Newton's systems of the smooth losses are n × n)"
                .into(),
        ));
    }
    let mut kw = Combined::Dense(Vec::new());
    let cacheable = !smooth && GradientCaches::apply(stack, cfg.loss);
    let modes = (smooth, cacheable);
    let (w, caches) = start::start(stack, y, c, &mut whole, &mut kw, &pen, modes, interrupt)?;
    // As the other wrappers' floor (`GapSchedule`): the SVM's accuracy must not bound the gap.
    // Newton's (a relative decrease of the objective) follows the gap instead.
    let inner_tol = if smooth {
        NEWTON_START_TOL.min(0.1 * cfg.tol)
    } else {
        cfg.inner_tol.min(0.1 * cfg.tol)
    }
    .max(MIN_INNER_TOL);
    let mut wrapper = Wrapper {
        stack,
        y,
        c,
        cfg,
        psd: PsdCheck::new(stack),
        pen,
        smooth,
        use_ws: !smooth && pen.r1 > 0.0 && stack.n() >= min_points,
        cacheable,
        caches,
        whole,
        ws: None,
        kset: None,
        kset_done: false,
        q: vec![0.0; stack.m()],
        w,
        kw,
        kw_is_w: true,
        radius: START_RADIUS,
        model: None,
        inner_tol,
        first: true,
        next: Next::Recombine,
        dual: Aggregate::default(),
        handover,
    };
    Driver::new(cfg.tol, cfg.max_iter, interrupt).run(&mut wrapper)
}

/// The wrapper's state between iterations (module docs): the effective weights `w`, their
/// kernel and SVM, the Newton model of the last accepted iterate with its trust region, the
/// SVM's accuracy and the working sets. The driver holds the certificate and the checks'
/// schedule.
struct Wrapper<'s> {
    stack: &'s dyn KernelStack,
    y: &'s [f64],
    c: &'s [f64],
    cfg: &'s WrapperConfig,
    psd: PsdCheck<'s>,
    pen: WeightPenalty,
    /// A smooth loss (Newton's dense `β`): a working set of kernels, and Newton's accuracy
    /// following the gap.
    smooth: bool,
    /// Whether the first whole-problem iterate forms a working set of points (hinge-type
    /// losses, from `min_points` on).
    use_ws: bool,
    /// Whether whole-problem iterates keep per-kernel gradient caches (SMO on a stored
    /// stack), and the caches once the start (its ranking of the kernels) or the first whole
    /// iterate outside a working set of points built them: later whole solves then run on
    /// the columns of `K_w` on demand, trial weights cost no combine, and the forms and the
    /// Hessian's products `K_kβ` are read from them.
    cacheable: bool,
    caches: Option<GradientCaches>,
    /// The whole problem's single-kernel solver.
    whole: SingleKernel,
    /// The working set of points (module docs); `None` while the whole problem is iterated.
    ws: Option<PointSet>,
    /// The working set of kernels (module docs), sorted; `None` while every
    /// kernel's form is read.
    kset: Option<Vec<usize>>,
    /// Whether the working set of kernels gave way to the whole problem for good.
    kset_done: bool,
    /// The forms `q_m = βᵀK_mβ` of the last iterate.
    q: Vec<f64>,
    w: Vec<f64>,
    /// `K_w` of the iterated problem, when `kw_is_w` (after the start, or to solve again at
    /// the same weights); else combined before the next solve.
    kw: Combined,
    kw_is_w: bool,
    /// The trust region's ratio `R`.
    radius: f64,
    /// The model of the last accepted iterate and the decrease it predicted for the step taken.
    model: Option<(NewtonModel, f64)>,
    /// The accuracy of the next single-kernel solve.
    inner_tol: f64,
    first: bool,
    /// What the next iteration solves, as its step decided.
    next: Next,
    /// The best dual point so far (dual aggregation).
    dual: Aggregate,
    /// Whether another solver continues the fit after a stall ([`fit_wrapper_handing_over`]).
    handover: bool,
}

/// What the next iteration solves: decided by [`Solver::step`](crate::solvers::driver::Solver),
/// applied by its `update`.
enum Next {
    /// New weights: a trial step of the model, its retry in a smaller region, or the model's
    /// own weights again; their `K_w` is combined.
    Weights(Vec<f64>),
    /// The same weights on a new problem (a working set formed or grown): `K_w` is combined.
    Recombine,
    /// The same weights and kernel: a more exact SVM.
    Resolve,
}

#[cfg(test)]
mod tests;
