//! ℓp-norm MKL (Kloft et al. 2011), with the kernel weights `θ` in closed form.
//!
//! Primal (ALGORITHMS.md §0): `P = C Σ_i ℓ(y_i, f(x_i)) + ½ (Σ_m ‖f_m‖^q)^{2/q}`,
//! `q = 2p/(p+1)`, which is Kloft's (P) with `‖θ‖_p ≤ 1`.
//! Dual (Kloft eq. (D), ALGORITHMS.md §1), for a coefficient vector `β` with `Σβ = 0` and
//! `−β_i/C` in the domain of `ℓ*(y_i, ·)`:
//! `D(β) = −C Σ_i ℓ*(y_i, −β_i/C) − ½ ‖(βᵀ K_m β)_m‖_{p*}`, `p* = p/(p−1)`.
//! (For the hinge loss `β = Yα` and this is `1ᵀα − ½‖(αᵀQ_mα)_m‖_{p*}`.)
//!
//! Algorithm 1 (wrapper, `analytic`): solve the single-kernel problem on `K_θ = Σ θ_m K_m`
//! (warm-started), evaluate `βᵀK_mβ` for all m in one pass over the stack, report `P`, `D`
//! and the gap, and update `θ` by eq. 17 with `‖w_m‖² = θ_m² βᵀK_mβ`:
//! `θ_m = ‖w_m‖^{2/(p+1)} / (Σ_k ‖w_k‖^{2p/(p+1)})^{1/p}`.
//! The model is `A[m] = θ_m β`, so `f = K_θ β + b`.

mod interleaved;
mod single;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{point_subset, KernelStack, PointSubset};
use crate::losses::Loss;
use crate::result::{relative_gap, FitResult, SolveStatus};
use crate::solvers::newton::dense_matvec;
pub(crate) use crate::solvers::tracker::Tracker;

pub use single::SingleKernel;

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
            p: 2.0,
            c: 1.0,
            loss: Loss::Hinge,
            algorithm: LpAlgorithm::Analytic,
            tol: 1e-3,
            max_iter: 200,
            inner_tol: 1e-7,
        }
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
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        Ok(())
    }
}

/// `½ (Σ_m s_m^q)^{2/q}` with `q = 2p/(p+1)` (`q = 2` for `p = ∞`).
pub fn lp_penalty(norms: &[f64], p: f64) -> f64 {
    let q = if p.is_infinite() {
        2.0
    } else {
        2.0 * p / (p + 1.0)
    };
    let s: f64 = norms.iter().map(|s| s.max(0.0).powf(q)).sum();
    0.5 * s.powf(2.0 / q)
}

/// `‖v‖_{p*}` with `p* = p/(p−1)` (`∞` for `p = 1`, `1` for `p = ∞`), for `v ≥ 0`.
pub fn dual_norm(v: &[f64], p: f64) -> f64 {
    if p == 1.0 {
        v.iter().fold(0.0f64, |a, &x| a.max(x.max(0.0)))
    } else if p.is_infinite() {
        v.iter().map(|x| x.max(0.0)).sum()
    } else {
        let ps = p / (p - 1.0);
        // Scale by the maximum so that large p* does not overflow.
        let mx = v.iter().fold(0.0f64, |a, &x| a.max(x));
        if mx <= 0.0 {
            return 0.0;
        }
        mx * v
            .iter()
            .map(|x| (x.max(0.0) / mx).powf(ps))
            .sum::<f64>()
            .powf(1.0 / ps)
    }
}

/// Kloft eq. 17: the optimal unit-p-norm θ given the block norms `‖w_m‖`.
pub fn theta_update(wnorms: &[f64], p: f64) -> Vec<f64> {
    if p.is_infinite() {
        return vec![1.0; wnorms.len()];
    }
    let mx = wnorms.iter().fold(0.0f64, |a, &x| a.max(x));
    if mx <= 0.0 {
        let m = wnorms.len() as f64;
        return vec![m.powf(-1.0 / p); wnorms.len()];
    }
    // θ_m ∝ ‖w_m‖^{2/(p+1)}, normalised to unit p-norm (scale-free, so divide by the max first).
    let t: Vec<f64> = wnorms
        .iter()
        .map(|w| (w / mx).powf(2.0 / (p + 1.0)))
        .collect();
    let norm = t.iter().map(|x| x.powf(p)).sum::<f64>().powf(1.0 / p);
    t.iter().map(|x| x / norm).collect()
}

/// The over-relaxation of the θ fixed point used while it helps (see [`extrapolate`]):
/// `ω = p* = p/(p−1)`, at most 4.
///
/// Why: with `β` held fixed, eq. 17 maps `log θ_m` to `(2/(p+1)) log θ_m + const`, a
/// contraction of rate `ρ = 2/(p+1)` that `ω = 1/(1−ρ) = (p+1)/(p−1)` would solve in one
/// step. `β` moves with `θ` and damps the iteration, and half that extrapolation beyond the
/// plain step, `ω = 1 + ρ/(2(1−ρ)) = p*`, measured best (Kloft benchmark, n = 1000 and 2000:
/// outer iterations 9 → 5 at p = 4/3, unchanged 4 at p = 2 and 5 at p = 4; ω = 3 and 4 at
/// p = 2, or 4 and 6 at p = 4, took more). The cap keeps p near 1 from overshooting.
fn over_relaxation(p: f64) -> f64 {
    if p.is_finite() && p > 1.0 {
        (p / (p - 1.0)).min(4.0)
    } else {
        1.0
    }
}

/// `θ⁺ ∝ θ^{1−ω} T(θ)^ω` (normalised to unit p-norm), where `T(θ)` is eq. 17's update `next`:
/// the fixed-point iteration `θ ← T(θ)` converges linearly, and a step of `ω > 1` along
/// `log T(θ) − log θ` extrapolates it. Every iterate is still certified by its own `P` and
/// `D`, so the caller only needs to fall back to `ω = 1` when the gap stops shrinking.
/// Weights that are zero in `θ` or `T(θ)` take `T(θ)`'s value.
pub fn extrapolate(theta: &[f64], next: &[f64], omega: f64, p: f64) -> Vec<f64> {
    if omega == 1.0 || p.is_infinite() {
        return next.to_vec();
    }
    let t: Vec<f64> = theta
        .iter()
        .zip(next)
        .map(|(&a, &b)| {
            if a > 0.0 && b > 0.0 {
                a * (b / a).powf(omega)
            } else {
                b
            }
        })
        .collect();
    let mx = t.iter().fold(0.0f64, |a, &x| a.max(x));
    if !(mx > 0.0 && mx.is_finite()) {
        return next.to_vec();
    }
    let norm = mx
        * t.iter()
            .map(|x| (x / mx).powf(p))
            .sum::<f64>()
            .powf(1.0 / p);
    t.iter().map(|x| x / norm).collect()
}

/// `D(β) = −C Σ ℓ*(y_i, −β_i/C) − ½ ‖(βᵀK_mβ)_m‖_{p*}` (ALGORITHMS.md §1).
pub fn lp_dual(loss: Loss, c: f64, y: &[f64], beta: &[f64], quad: &[f64], p: f64) -> f64 {
    let conj: f64 = y
        .iter()
        .zip(beta)
        .map(|(&yi, &bi)| loss.conjugate(yi, -bi / c))
        .sum();
    -c * conj - 0.5 * dual_norm(quad, p)
}

/// `P`, `D` and the block norms `‖f_m‖ = θ_m sqrt(βᵀK_mβ)` at `A[m] = θ_m β`, given
/// `quad[m] = βᵀK_mβ` and `f = K_θ β` (without the intercept).
pub(crate) fn certificate(
    cfg: &LpConfig,
    y: &[f64],
    theta: &[f64],
    beta: &[f64],
    b: f64,
    quad: &[f64],
    f: &[f64],
) -> (f64, f64, Vec<f64>) {
    let norms: Vec<f64> = theta
        .iter()
        .zip(quad)
        .map(|(t, q)| t * q.max(0.0).sqrt())
        .collect();
    let data: f64 = y
        .iter()
        .zip(f)
        .map(|(&yi, &fi)| cfg.loss.value(yi, fi + b))
        .sum();
    let primal = cfg.c * data + lp_penalty(&norms, cfg.p);
    let dual = lp_dual(cfg.loss, cfg.c, y, beta, quad, cfg.p);
    (primal, dual, norms)
}

/// Fits ℓp-norm MKL on a kernel stack.
pub fn fit_lp(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::validate_targets(stack.n(), y)?;
    match cfg.algorithm {
        LpAlgorithm::Analytic => fit_analytic(stack, y, cfg, interrupt),
        LpAlgorithm::Interleaved => {
            if cfg.loss != Loss::Hinge {
                return Err(MkError::config(
                    "solver",
                    "'interleaved' supports the hinge loss only; use 'analytic'",
                ));
            }
            interleaved::fit_interleaved(stack, y, cfg, interrupt)
        }
    }
}

/// One Algorithm-1 step on a problem (the whole one, or the restricted one of a working set):
/// the solution `β` of the single-kernel problem on `K_θ`, and its certificate values.
struct Step {
    /// `βᵀK_mβ` for every kernel.
    quad: Vec<f64>,
    b: f64,
    primal: f64,
    dual: f64,
    norms: Vec<f64>,
}

impl Step {
    /// Completes a step at `(θ, β, b)` with `f = K_θ β`: the quadratic forms `βᵀK_mβ` are
    /// read from `stack` at `v` (`stack` may be a sub-stack holding every non-zero of `β`,
    /// with `v` the matching entries), then the certificate.
    #[allow(clippy::too_many_arguments)]
    fn certify(
        stack: &dyn KernelStack,
        v: &[f64],
        cfg: &LpConfig,
        y: &[f64],
        theta: &[f64],
        beta: &[f64],
        b: f64,
        f: &[f64],
    ) -> Step {
        let mut quad = vec![0.0; stack.m()];
        stack.quad_forms(v, &mut quad);
        let (primal, dual, norms) = certificate(cfg, y, theta, beta, b, &quad, f);
        Step {
            quad,
            b,
            primal,
            dual,
            norms,
        }
    }
}

/// The single-kernel solve of one Algorithm-1 step on `stack`: returns `f = K_θ β` and the
/// best intercept for it.
#[allow(clippy::too_many_arguments)]
fn solve_step(
    stack: &dyn KernelStack,
    y: &[f64],
    sub: &mut SingleKernel,
    theta: &[f64],
    inner_tol: f64,
    k_theta: &mut Vec<f64>,
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<(Vec<f64>, f64)> {
    let n = stack.n();
    k_theta.resize(n * n, 0.0);
    stack.combine(theta, k_theta);
    sub.solve(k_theta, inner_tol, interrupt)?;
    let mut f = vec![0.0; n];
    dense_matvec(k_theta, sub.beta(), &mut f);
    let b = cfg.loss.best_intercept(y, &f, sub.intercept());
    Ok((f, b))
}

/// `v[idx]` in each block of `n` values of `v` (ε-SVR's QP has two variables per point).
fn gather_points(v: &[f64], n: usize, idx: &[usize]) -> Vec<f64> {
    v.chunks_exact(n)
        .flat_map(|block| idx.iter().map(move |&i| block[i]))
        .collect()
}

/// The inverse of [`gather_points`]: blocks of `n` values, zero off `idx`.
fn scatter_points(v: &[f64], idx: &[usize], n: usize) -> Vec<f64> {
    let w = idx.len();
    let mut out = vec![0.0; (v.len() / w.max(1)) * n];
    for (block, src) in out.chunks_exact_mut(n).zip(v.chunks_exact(w.max(1))) {
        for (&i, &x) in idx.iter().zip(src) {
            block[i] = x;
        }
    }
    out
}

/// A working set is used only while it holds at most this fraction of the points: above it
/// the sub-stack (`(w/n)²` of the stack's memory) saves too little.
const MAX_FRACTION: f64 = 0.7;

/// The points that join the working set `current` after a whole-problem evaluation: those
/// with a non-zero QP variable (`alpha`, blocks of `n`) and those whose loss has a non-zero
/// (sub)derivative at the prediction `z_i = f_i + b`, the violators of the optimality of
/// `β_i = 0`. Points near the margin are not added ahead of time: each costs every restricted
/// iteration, which measured more than the occasional extra growth it saves.
fn new_points(loss: Loss, y: &[f64], z: &[f64], alpha: &[f64], current: &[usize]) -> Vec<usize> {
    let n = y.len();
    let mut keep = vec![false; n];
    for block in alpha.chunks_exact(n) {
        for (k, &a) in keep.iter_mut().zip(block) {
            *k |= a != 0.0;
        }
    }
    for (i, k) in keep.iter_mut().enumerate() {
        *k |= loss.deriv(y[i], z[i]) != 0.0;
    }
    for &i in current {
        keep[i] = false;
    }
    (0..n).filter(|&i| keep[i]).collect()
}

/// The restricted problem of a working set of points: `β` is zero off the set.
struct PointSet {
    /// The kernels on the set; its indices are the set's points in local order.
    stack: PointSubset,
    y: Vec<f64>,
    solver: SingleKernel,
}

impl PointSet {
    /// The largest set worth a restricted problem for `n` points.
    fn max_points(n: usize) -> usize {
        (MAX_FRACTION * n as f64) as usize
    }

    /// The problem on `idx`, warm-started at the QP variables `alpha` of the whole problem
    /// (zero off `idx`, so the warm start stays feasible). `None` when the set is too large to
    /// pay off or cannot hold a problem (a classifier needs both classes).
    fn new(
        stack: &dyn KernelStack,
        y: &[f64],
        cfg: &LpConfig,
        idx: &[usize],
        alpha: &[f64],
    ) -> Result<Option<Self>> {
        let n = y.len();
        let yw: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
        let both = yw.contains(&1.0) && yw.contains(&-1.0);
        if idx.len() > Self::max_points(n)
            || idx.len() < 2
            || (cfg.loss.is_classification() && !both)
        {
            return Ok(None);
        }
        let mut solver = SingleKernel::new(cfg.loss, cfg.c, &yw)?;
        solver.set_warm_start(gather_points(alpha, n, idx));
        Ok(Some(PointSet {
            stack: point_subset(stack, idx, Self::max_points(n)),
            y: yw,
            solver,
        }))
    }

    /// Adds the points `more` (read from `stack`), warm-started at the whole problem's QP
    /// variables `alpha`. `false` when the grown set is too large to pay off.
    fn grow(
        &mut self,
        stack: &dyn KernelStack,
        y: &[f64],
        cfg: &LpConfig,
        more: &[usize],
        alpha: &[f64],
    ) -> Result<bool> {
        let n = y.len();
        if self.idx().len() + more.len() > Self::max_points(n) {
            return Ok(false);
        }
        self.stack.extend(stack, more);
        self.y.extend(more.iter().map(|&i| y[i]));
        self.solver = SingleKernel::new(cfg.loss, cfg.c, &self.y)?;
        self.solver
            .set_warm_start(gather_points(alpha, n, self.stack.indices()));
        Ok(true)
    }

    /// The points of the set, in local order.
    fn idx(&self) -> &[usize] {
        self.stack.indices()
    }

    /// The QP variables over all `n` points.
    fn alpha(&self, n: usize) -> Vec<f64> {
        scatter_points(self.solver.alpha().unwrap_or(&[]), self.idx(), n)
    }
}

/// Algorithm 1, with a working set of points when `β` is sparse (SMO losses, `p > 1`).
///
/// The working set `W` holds the support vectors and the margin violators of a whole-problem
/// solution (the first, on the uniform θ). Restricted iterations run Algorithm 1 on `K_m[W, W]`, with
/// `β = 0` off `W`; such a `β` is feasible for the whole dual, so `D(β)` is a whole-problem
/// dual value, but the restricted primal is not and is recorded as `+∞`. A whole-problem check
/// evaluates `f = K_θ β` on every point by `combined_matvec` (reading only the rows of the
/// support vectors) and records the whole-problem `P`, `D` and gap. It runs when the
/// restricted gap is below `tol/2`, or after 16, 32, 64, … restricted iterations. If then no
/// point outside `W` violates optimality, `P ≤ P_W`, so the whole gap is at most the restricted
/// one; otherwise `W` grows by the violators (it never shrinks, so this terminates). Above
/// [`MAX_FRACTION`] of the points the whole problem takes over.
fn fit_analytic(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    let (m, n) = (stack.m(), stack.n());
    let mut theta = theta_update(&vec![1.0; m], cfg.p);
    let mut whole = SingleKernel::new(cfg.loss, cfg.c, y)?;
    // For p = 1 θ turns sparse and each step is cheap relative to its slow convergence.
    let use_ws = cfg.p > 1.0 && whole.is_sparse();
    let mut ws: Option<PointSet> = None;
    let mut k_theta = Vec::new();
    let mut tracker = Tracker::new();
    let mut status = SolveStatus::MaxIterations;
    // The inner accuracy must not limit the outer gap the caller asked for.
    let inner_floor = cfg.inner_tol.min(0.1 * cfg.tol);
    let mut inner_tol = 1e-3f64.max(inner_floor);
    // Gap bookkeeping of the problem being iterated (the whole one, or the restricted one).
    let mut best_gap = f64::INFINITY;
    let mut stalled = 0;
    let mut ws_dual = f64::NEG_INFINITY;
    let (mut budget, mut since_check) = (16, 0);
    // Over-relaxation of the θ update on restricted problems, dropped for good once the gap
    // fails to shrink.
    let mut omega = over_relaxation(cfg.p);
    // Set when the restricted problem stalls: only a whole-problem check can tell why.
    let mut force_check = false;
    let mut n_iter = 0;
    for _ in 0..cfg.max_iter {
        interrupt.check()?;
        n_iter += 1;
        // Set when the iterated problem changes: its gaps are not comparable with the last.
        let mut new_problem = false;
        let (gap, norms) = if let Some(set) = ws.as_mut() {
            let (f, b) = solve_step(
                set.stack.stack(),
                &set.y,
                &mut set.solver,
                &theta,
                inner_tol,
                &mut k_theta,
                cfg,
                interrupt,
            )?;
            let beta = set.solver.beta();
            let st = Step::certify(set.stack.stack(), beta, cfg, &set.y, &theta, beta, b, &f);
            ws_dual = ws_dual.max(st.dual);
            let rgap = relative_gap(st.primal, ws_dual);
            since_check += 1;
            if rgap > 0.5 * cfg.tol && since_check < budget && !force_check {
                let active = theta.iter().filter(|&&t| t > 0.0).count();
                tracker.record_with(f64::INFINITY, st.dual, active, || unreachable!());
            } else {
                // Whole-problem check at (θ, β): same β, so the same quadratic forms.
                since_check = 0;
                let beta = scatter_points(set.solver.beta(), set.idx(), n);
                let mut f = vec![0.0; n];
                stack.combined_matvec(&theta, &beta, &mut f);
                let b = cfg.loss.best_intercept(y, &f, st.b);
                let (primal, dual, norms) = certificate(cfg, y, &theta, &beta, b, &st.quad, &f);
                let gap = tracker.record(primal, dual, &theta, &beta, b, norms);
                if gap <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
                let alpha = set.alpha(n);
                let more = new_points(cfg.loss, y, &z, &alpha, set.idx());
                if !more.is_empty() {
                    new_problem = true;
                    budget = 16;
                    let grown = set.grow(stack, y, cfg, &more, &alpha)?;
                    if !grown {
                        ws = None;
                        whole.set_warm_start(alpha);
                    }
                } else if force_check {
                    status = SolveStatus::Stalled;
                    break;
                } else {
                    budget *= 2;
                }
                force_check = false;
            }
            (rgap, st.norms)
        } else {
            let (f, b) = solve_step(
                stack,
                y,
                &mut whole,
                &theta,
                inner_tol,
                &mut k_theta,
                cfg,
                interrupt,
            )?;
            if use_ws && n_iter == 1 {
                let alpha = whole.alpha().unwrap_or(&[]).to_vec();
                let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
                let idx = new_points(cfg.loss, y, &z, &alpha, &[]);
                ws = PointSet::new(stack, y, cfg, &idx, &alpha)?;
            }
            let beta = whole.beta();
            // With a working set, its sub-stack holds every non-zero of β: a cheaper pass.
            let st = match &ws {
                Some(set) => {
                    let v = gather_points(beta, n, set.idx());
                    Step::certify(set.stack.stack(), &v, cfg, y, &theta, beta, b, &f)
                }
                None => Step::certify(stack, beta, cfg, y, &theta, beta, b, &f),
            };
            let gap = tracker.record(st.primal, st.dual, &theta, beta, b, st.norms.clone());
            if gap <= cfg.tol {
                status = SolveStatus::Converged;
                break;
            }
            if ws.is_some() {
                ws_dual = st.dual;
                new_problem = true;
            }
            (gap, st.norms)
        };
        // The inner accuracy follows the outer gap, and is tightened further whenever the gap
        // shrinks slowly: an inexact SVM solution bounds how far the primal can go.
        if gap >= 0.9 * best_gap {
            inner_tol = (0.1 * inner_tol).max(inner_floor);
        }
        if gap < best_gap * (1.0 - 1e-9) {
            stalled = 0;
        } else {
            stalled += 1;
            omega = 1.0;
            if inner_tol <= inner_floor && stalled >= 10 {
                if ws.is_none() {
                    status = SolveStatus::Stalled;
                    break;
                }
                force_check = true;
            }
        }
        best_gap = best_gap.min(gap);
        inner_tol = (0.1 * gap.max(0.0)).clamp(inner_floor, inner_tol);
        if new_problem {
            best_gap = f64::INFINITY;
            stalled = 0;
        }
        // Extrapolated only on restricted problems, whose iterations are the many cheap ones;
        // the whole problem keeps Kloft's plain update (and its iterates).
        let w = if ws.is_some() { omega } else { 1.0 };
        theta = extrapolate(&theta, &theta_update(&norms, cfg.p), w, cfg.p);
    }
    tracker.finish(n_iter, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theta_has_unit_p_norm_and_matches_eq_17() {
        let w = [0.3, 1.2, 0.0, 2.5];
        for p in [1.0, 4.0 / 3.0, 2.0, 4.0] {
            let t = theta_update(&w, p);
            let norm: f64 = t.iter().map(|x| x.powf(p)).sum::<f64>().powf(1.0 / p);
            assert!((norm - 1.0).abs() < 1e-12);
            let denom: f64 = w
                .iter()
                .map(|x: &f64| x.powf(2.0 * p / (p + 1.0)))
                .sum::<f64>();
            for (ti, wi) in t.iter().zip(&w) {
                let e = wi.powf(2.0 / (p + 1.0)) / denom.powf(1.0 / p);
                assert!((ti - e).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn penalty_is_the_variational_form() {
        // ½(Σ s^q)^{2/q} = min_{‖θ‖_p ≤ 1} ½ Σ s_m²/θ_m, attained at eq. 17.
        let s = [0.5, 1.5, 0.2];
        for p in [1.0, 2.0, 3.0] {
            let t = theta_update(&s, p);
            let v: f64 = s.iter().zip(&t).map(|(a, b)| 0.5 * a * a / b).sum();
            assert!((v - lp_penalty(&s, p)).abs() < 1e-12);
        }
    }
}
