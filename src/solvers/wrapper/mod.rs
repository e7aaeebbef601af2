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
//!   best and feasible ([`best_dual`](crate::penalties::duals::best_dual)).
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
//!    From [`SAMPLE_MIN`](start::SAMPLE_MIN) points on, the search and the ranking run on a
//!    [`Sample`](start::Sample) of the points instead (no solve on all of them before the
//!    first iterate).
//! 2. Trust-region Newton steps: minimise the quadratic model over the box
//!    `d_m ≤ (R − 1) w_m` (a weight may drop to zero, or by the factor `R` at most once a
//!    refused step shrank `R` below its start; a kernel at zero with `∂J/∂w_m < 0` may
//!    enter up to a quarter of the mean weight times `R − 1`; at most
//!    [`MAX_MODEL`](newton::MAX_MODEL) kernels). The next SVM solve gives `J` at the trial
//!    point (its SMO dual value plus the penalty): a step that raised `J` is refused and
//!    retried from the same model with a smaller `R`; `R` doubles after a step that achieved
//!    half the predicted decrease.
//!
//! 3. Working sets (docs/mathematics.md §2.11), with whole-problem checks on the schedule of
//!    [`CheckSchedule`](crate::solvers::schedule::CheckSchedule): for the hinge-type losses
//!    a set of points `W` (the first iterate's support vectors and margin violators), whose
//!    restricted iterates solve SMO on `K_m[W, W]` and certify the whole problem's `D` (their
//!    `P` is recorded as `+∞`); for the smooth losses, whose dense `β` makes the forms read
//!    every kernel whole, a set of kernels (those with a weight or a negative gradient), whose
//!    restricted iterates read only theirs and certify the whole problem's `P` (their `D`
//!    bounds the restricted problem only).
//!
//! Every accepted iterate is certified with the whole problem's `P`, `D` and gap (outside the
//! working sets); each costs one combine of the active kernels, one warm-started solve, the
//! forms `q_m` of every kernel (SMO: the rows of the support vectors only) and `K_mβ` for the
//! model's kernels (the smooth losses' dense `β`: every `K_mβ` in the same one pass as the
//! forms).
//!
//! On kernels computed on demand (hinge-type losses) nothing `n × n` is formed: SMO reads the
//! columns of `K_w` through its row cache, and the Hessian needs `K_w[F, F]` and `K_kβ` on the
//! support vectors only (`|S|²` evaluations per kernel, from views of those points).

mod certificate;
mod checks;
mod combined;
mod newton;
mod qp;
mod start;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{support_products, KernelStack};
use crate::losses::{costs, Loss};
use crate::penalties::SparsePenalty;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::points::{gather_points, new_points, scatter_points, PointSet, MIN_POINTS};
use crate::solvers::schedule::{CheckSchedule, Settled};
use crate::solvers::single::SingleKernel;
use crate::solvers::tracker::Tracker;
use crate::solvers::witness::PsdCheck;

use certificate::{forms, solve_point, Certificate, Point};
use checks::{stalls, whole_check};
use combined::Combined;
use newton::{
    gradient, model_kernels, movable, s_hessian, NewtonModel, Penalty, MAX_MODEL, MAX_MODEL_SMOOTH,
    MIN_RADIUS, START_RADIUS,
};
use start::start;

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

impl WrapperConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
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
    fit_from(stack, y, sample_weight, cfg, MIN_POINTS, interrupt)
}

/// [`fit_wrapper_weighted`] with a working set of points from `min_points` points on (the
/// hinge-type losses; the tests move the threshold).
fn fit_from(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    min_points: usize,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::validate_targets(stack.n(), y)?;
    let c = &costs(cfg.c, sample_weight, y.len())?;
    let (m, n) = (stack.m(), stack.n());
    let (r1, r2) = cfg.penalty.weights();
    let pen = Penalty { r1, r2 };
    let mut solver = SingleKernel::new(cfg.loss, c, y)?;
    // The smooth losses' `β` is dense; Newton then works on factors where the stack has them.
    let smooth = !solver.is_sparse();
    if smooth && stack.on_demand().is_some() {
        return Err(MkError::Unsupported(
            "the wrapper fits kernels computed on demand with the hinge-type losses only \
             (Newton's systems of the smooth losses are n × n)"
                .into(),
        ));
    }
    let mut kw = Combined::Dense(Vec::new());
    let mut w = start(stack, y, c, &mut solver, &mut kw, &pen, smooth, interrupt)?;
    let mut tracker = Tracker::new(interrupt);
    let psd = PsdCheck::new(stack);
    let mut q = vec![0.0; m];
    let mut radius = START_RADIUS;
    // The model of the last accepted iterate and the decrease it predicted for the step taken.
    let mut model: Option<(NewtonModel, f64)> = None;
    let mut status = SolveStatus::MaxIterations;
    let mut n_iter = 0;
    // Whether `kw` already holds `K_w` (after the start, or a retry at the same weights).
    let mut kw_is_w = true;
    // As the other wrappers' floor (`GapSchedule`): the SVM's accuracy must not bound the gap.
    // Newton's (a relative decrease of the objective) follows the gap instead.
    let mut inner_tol = if smooth {
        NEWTON_START_TOL.min(0.1 * cfg.tol)
    } else {
        cfg.inner_tol.min(0.1 * cfg.tol)
    }
    .max(MIN_INNER_TOL);
    // The working set of points of the hinge-type losses (module docs), formed from the first
    // whole-problem iterate from `min_points` on; `ws` is `None` while the whole problem is
    // iterated.
    let use_ws = !smooth && r1 > 0.0 && n >= min_points;
    let mut ws: Option<PointSet> = None;
    // The smooth losses' working set of kernels (module docs), sorted; `None` while every
    // kernel's form is read.
    let mut kset: Option<Vec<usize>> = None;
    let mut checks = CheckSchedule::new();
    while n_iter < cfg.max_iter {
        interrupt.check()?;
        n_iter += 1;
        let restricted = ws.is_some() || kset.is_some();
        // The iterated problem: its kernels, labels, loss weights, solver, and (restricted)
        // the indices of its points.
        let (pstack, py, pc, psolver, pidx): (_, &[f64], &[f64], _, _) = match ws.as_mut() {
            Some(set) => (
                set.stack.stack(),
                &set.y,
                &set.c,
                &mut set.solver,
                Some(set.stack.indices()),
            ),
            None => (stack, y, c, &mut solver, None),
        };
        if !kw_is_w {
            kw.set(pstack, &w, smooth);
        }
        kw_is_w = false;
        let point = solve_point(psolver, pstack, &kw, py, pc, inner_tol, interrupt)?;
        let j = point.value + w.iter().map(|&v| pen.value(v)).sum::<f64>();
        if let Some((prev, pred)) = &mut model {
            let rose = j.is_nan() || j > prev.j + 1e-12 * prev.j.abs();
            if rose && radius <= MIN_RADIUS {
                // Refused in the smallest region: `J`'s noise (the SVM's accuracy) is all the
                // model can still see; a more exact SVM, else a stall.
                if inner_tol <= MIN_INNER_TOL && stalls(restricted, &mut checks) {
                    status = SolveStatus::Stalled;
                    break;
                }
                inner_tol = (0.01 * inner_tol).max(MIN_INNER_TOL);
                w = prev.w.clone();
                model = None;
                radius = START_RADIUS;
                continue;
            }
            if rose {
                // Refused: retry from the same model in a smaller region.
                radius = radius.sqrt().max(MIN_RADIUS);
                let (next, p) = prev.step(radius, &pen);
                w = next;
                *pred = p;
                continue;
            }
            let ratio = (prev.j - j) / pred.max(f64::MIN_POSITIVE);
            if ratio > 0.5 {
                radius = (2.0 * radius).min(1e6);
            } else if ratio < 0.1 {
                radius = radius.sqrt().max(MIN_RADIUS);
            }
        }
        if use_ws && pidx.is_none() && n_iter == 1 {
            // The support vectors and margin violators of the first iterate form the working
            // set: `β` is zero off it, so its forms read the set's kernels only, and the next
            // iterates are the restricted problem's, from this `w`.
            let alpha = psolver.alpha().unwrap_or(&[]).to_vec();
            let z: Vec<f64> = point.f.iter().map(|fi| fi + point.b).collect();
            let idx = new_points(cfg.loss, y, &z, &alpha, &[]);
            if let Some(set) = PointSet::new(stack, y, c, cfg.loss, &idx, &alpha)? {
                let beta_w = gather_points(&point.beta, n, set.idx());
                set.stack.stack().quad_forms(&beta_w, &mut q);
                let cert = Certificate::new(&psd, cfg, y, c, &w, &q, &point);
                let dual = cert.dual;
                if cert.record(&mut tracker, cfg, &w, &point) <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                checks.start(tracker.certified(dual));
                ws = Some(set);
                kw_is_w = false;
                continue;
            }
        }
        let mut all_prod = forms(pstack, &point.beta, smooth, kset.as_deref(), &mut q);
        let cert = Certificate::new(&psd, cfg, py, pc, &w, &q, &point);
        let gap = if let Some(idx) = pidx {
            // A restricted iterate: `D` is the whole problem's (β = 0 off W), `P` bounds the
            // restricted problem only.
            tracker.note(cert.witness);
            let rgap = checks.restricted_gap(cert.primal, tracker.certified(cert.dual));
            if checks.due_after(rgap, cfg.tol) {
                let alpha = scatter_points(psolver.alpha().unwrap_or(&[]), idx, n);
                let (gap, more) = whole_check(
                    stack,
                    y,
                    c,
                    cfg,
                    &psd,
                    &mut tracker,
                    &w,
                    &q,
                    &point,
                    idx,
                    &alpha,
                );
                if gap <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                match checks.settle(!more.is_empty()) {
                    Settled::Grew => {
                        // A larger problem, whose `J` the last model does not predict.
                        model = None;
                        let set = ws.as_mut().expect("restricted iterates have a working set");
                        if !set.grow(stack, y, c, &more, &alpha)? {
                            ws = None;
                            solver.set_warm_start(alpha);
                        }
                        continue;
                    }
                    Settled::Stalled => {
                        status = SolveStatus::Stalled;
                        break;
                    }
                    Settled::BackedOff => {}
                }
            } else {
                let active = w.iter().filter(|&&v| v > 0.0).count();
                tracker.record_with(f64::INFINITY, (cert.dual, None), active, || unreachable!());
            }
            rgap
        } else if let Some(set) = &kset {
            // A kernel-restricted iterate (smooth losses): `P` is the whole problem's (`w = 0`
            // off the set), `D` bounds the restricted problem only and is not recorded.
            let rgap = checks.restricted_gap(cert.primal, cert.dual);
            if checks.due_after(rgap, cfg.tol) {
                // Whole-problem check: every form, in the one pass that also gives the
                // products of the kernels that join.
                all_prod = forms(pstack, &point.beta, smooth, None, &mut q);
                let cert = Certificate::new(&psd, cfg, py, pc, &w, &q, &point);
                let dual = cert.dual;
                let gap = cert.record(&mut tracker, cfg, &w, &point);
                if gap <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                let mut grown = set.clone();
                grown.extend(
                    movable(&w, &gradient(&w, &q, &pen))
                        .into_iter()
                        .filter(|k| set.binary_search(k).is_err()),
                );
                match checks.settle(grown.len() > set.len()) {
                    Settled::Grew => {
                        grown.sort_unstable();
                        kset = Some(grown);
                        checks.start(tracker.certified(dual));
                    }
                    Settled::Stalled => {
                        status = SolveStatus::Stalled;
                        break;
                    }
                    Settled::BackedOff => {}
                }
                gap
            } else {
                let mut cert = cert;
                tracker.note(cert.witness.take());
                cert.dual = f64::NEG_INFINITY;
                // Stops on the best whole dual value so far, if this primal value meets it.
                if cert.record(&mut tracker, cfg, &w, &point) <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                rgap
            }
        } else {
            let dual = cert.dual;
            let gap = cert.record(&mut tracker, cfg, &w, &point);
            if gap <= cfg.tol {
                status = SolveStatus::Converged;
                break;
            }
            // The smooth losses read every kernel for the forms: once few kernels can move,
            // the next iterates read theirs only (module docs).
            let set = movable(&w, &gradient(&w, &q, &pen));
            if smooth && r1 > 0.0 && 2 * set.len() <= m {
                kset = Some(set);
                checks.start(tracker.certified(dual));
            }
            gap
        };
        if smooth {
            inner_tol = inner_tol.min((0.03 * gap).max(MIN_INNER_TOL));
        }
        if r1 == 0.0 {
            // The one SVM is the solution; only its accuracy bounds the gap.
            if inner_tol <= MIN_INNER_TOL {
                status = SolveStatus::Stalled;
                break;
            }
            inner_tol = (0.01 * inner_tol).max(MIN_INNER_TOL);
            kw_is_w = true;
            continue;
        }
        let grad_all = gradient(&w, &q, &pen);
        // Outside the kernel set no weight is left (their forms read as 0).
        debug_assert!(kset.as_ref().map_or(true, |s| {
            (0..m).all(|k| w[k] == 0.0 || s.binary_search(&k).is_ok())
        }));
        let vars = model_kernels(
            &w,
            &grad_all,
            if smooth { MAX_MODEL_SMOOTH } else { MAX_MODEL },
        );
        if vars.is_empty() {
            if stalls(restricted, &mut checks) {
                status = SolveStatus::Stalled;
                break;
            }
            kw_is_w = true;
            continue;
        }
        // `K_kβ` for the model's kernels only: few, once the weights are sparse.
        let prod = match &all_prod {
            Some(all) => vars
                .iter()
                .flat_map(|&kk| all[kk * n..(kk + 1) * n].iter().copied())
                .collect(),
            None => support_products(pstack, &point.beta, &vars),
        };
        let mut hess = s_hessian(psolver, pstack, &kw, &point, &prod, pc, cfg)?;
        let s = vars.len();
        for (a, &kk) in vars.iter().enumerate() {
            hess[(a, a)] += pen.d2(w[kk]);
        }
        let top = (0..s).fold(0.0f64, |a, r| a.max(hess[(r, r)].abs()));
        for a in 0..s {
            hess[(a, a)] += 1e-10 * top.max(f64::MIN_POSITIVE);
        }
        let next = NewtonModel {
            grad: vars.iter().map(|&kk| grad_all[kk]).collect(),
            vars,
            hess,
            j,
            w: w.clone(),
        };
        let (step, pred) = next.step(radius, &pen);
        // `J` converges to second order in the gradient and the gap to first order, so a step
        // that `J` no longer resolves (1e-15) can still close the gap: it counts while it moves
        // a weight by more than 1e-9 of itself.
        let moves = w
            .iter()
            .zip(&step)
            .any(|(a, b)| (a - b).abs() > 1e-9 * a.max(*b));
        if !(pred > 1e-15 * j.abs() || moves && pred >= 0.0) {
            // The model sees no progress left: only a more exact SVM can move the certificate.
            if inner_tol <= MIN_INNER_TOL {
                if stalls(restricted, &mut checks) {
                    status = SolveStatus::Stalled;
                    break;
                }
            } else {
                inner_tol = (0.01 * inner_tol).max(MIN_INNER_TOL);
            }
            model = None;
            kw_is_w = true;
            continue;
        }
        w = step;
        model = Some((next, pred));
        if let Some(set) = &mut kset {
            // Kernels leave the set when their weight is zero and their gradient not negative.
            set.retain(|&k| w[k] > 0.0 || grad_all[k] < 0.0);
        }
    }
    tracker.finish(n_iter, status)
}

#[cfg(test)]
mod tests;
