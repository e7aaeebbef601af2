//! Kloft et al.'s Algorithm 1 (the wrapper): a full single-kernel solve on `K_θ = Σ θ_m K_m`
//! between closed-form θ updates (eq. 17), with a working set of points when `β` is sparse.

use super::{certificate, LpConfig, Tracker};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::penalties::duals::{natural_dual, read_forms};
use crate::penalties::theta_update;
use crate::result::{FitResult, PsdWitness, SolveStatus};
use crate::solvers::points::{gather_points, new_points, scatter_points, PointSet};
use crate::solvers::schedule::{CheckSchedule, GapSchedule};
use crate::solvers::single::SingleKernel;
use crate::solvers::witness::PsdCheck;

/// The over-relaxation of the θ fixed point used while it helps (see [`extrapolate`]):
/// `ω = p* = p/(p−1)`, at most 4.
///
/// Why: with `β` held fixed, eq. 17 maps `log θ_m` to `(2/(p+1)) log θ_m + const`, a
/// contraction of rate `ρ = 2/(p+1)` that `ω = 1/(1−ρ) = (p+1)/(p−1)` would solve in one
/// step. `β` moves with `θ` and damps the iteration, and half that extrapolation beyond the
/// plain step, `ω = 1 + ρ/(2(1−ρ)) = p*`, measured best (docs/mathematics.md §3.3 (c)). The
/// cap keeps p near 1 from overshooting.
pub(super) fn over_relaxation(p: f64) -> f64 {
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
fn extrapolate(theta: &[f64], next: &[f64], omega: f64, p: f64) -> Vec<f64> {
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

/// One Algorithm-1 step on a problem (the whole one, or the restricted one of a working set):
/// the solution `β` of the single-kernel problem on `K_θ`, and its certificate values.
struct Step {
    /// `βᵀK_mβ` for every kernel.
    quad: Vec<f64>,
    /// The model's intercept and the factor on `A` at which `primal` holds.
    b: f64,
    scale: f64,
    primal: f64,
    dual: f64,
    /// `‖w_m‖ = θ_m sqrt(βᵀK_mβ)`, the input of eq. 17.
    norms: Vec<f64>,
    /// A witness that a kernel is not PSD along `β` (then `dual` certifies nothing).
    witness: Option<PsdWitness>,
}

impl Step {
    /// Completes a step at `(θ, β, b)` with `f = K_θ β`: the quadratic forms `βᵀK_mβ` are
    /// read from `stack` at `v` (`stack` may be a sub-stack holding every non-zero of `β`,
    /// with `v` the matching entries, and all the kernels of `psd`'s), then the certificate
    /// and the witness check of its dual point. For the logistic loss the dual point is the
    /// model's natural one ([`natural_dual`]), whose forms come in the same pass as `β`'s.
    #[allow(clippy::too_many_arguments)]
    fn certify(
        stack: &dyn KernelStack,
        psd: &PsdCheck<'_>,
        v: &[f64],
        cfg: &LpConfig,
        y: &[f64],
        c: &[f64],
        theta: &[f64],
        beta: &[f64],
        b: f64,
        f: &[f64],
    ) -> Step {
        let m = stack.m();
        let all: Vec<usize> = (0..m).collect();
        let natural = natural_dual(cfg.loss, c, y, f, b);
        let hat = natural.as_ref().map(|n| n.1.as_slice());
        // Newton's losses never use a working set: with `hat`, `v` is the whole `β`.
        debug_assert!(hat.map_or(true, |h| h.len() == v.len()));
        let (mut quad, mut hat_quad) = (vec![0.0; m], vec![0.0; m]);
        read_forms(stack, v, hat, &all, &mut quad, &mut hat_quad);
        let (b, point, scanned, forms) = match &natural {
            Some((b, h)) => (*b, h.as_slice(), h.as_slice(), &hat_quad),
            None => (b, beta, v, &quad),
        };
        let cert = certificate(cfg, y, c, theta, b, &quad, f, (point, forms));
        let witness = psd.all().scan(scanned, m, |k| forms[k]);
        Step {
            quad,
            b: cert.b,
            scale: cert.scale,
            primal: cert.primal,
            dual: cert.dual,
            norms: cert.norms,
            witness,
        }
    }
}

/// Algorithm 1, with a working set of points when `β` is sparse (SMO losses, `p > 1`).
///
/// The working set `W` holds the support vectors and the margin violators of a whole-problem
/// solution (the first, on the uniform θ). Restricted iterations run Algorithm 1 on
/// `K_m[W, W]`, with `β = 0` off `W`; such a `β` is feasible for the whole dual, so `D(β)` is
/// a whole-problem dual value, but the restricted primal is not and is recorded as `+∞`. A
/// whole-problem check evaluates `f = K_θ β` on every point by `combined_matvec` (reading only
/// the rows of the support vectors) and records the whole-problem `P`, `D` and gap. It runs
/// when the restricted gap is below `tol/2`, or after 16, 32, 64, … restricted iterations
/// ([`CheckSchedule`]). If then no point outside `W` violates optimality, `P ≤ P_W`, so the
/// whole gap is at most the restricted one; otherwise `W` grows by the violators (it never
/// shrinks, so this terminates). Above
/// [`MAX_FRACTION`](crate::solvers::points::MAX_FRACTION) of the points the whole problem takes
/// over.
pub(super) fn fit_analytic(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    let (m, n) = (stack.m(), stack.n());
    let mut theta = theta_update(&vec![1.0; m], cfg.p);
    let mut whole = SingleKernel::new(cfg.loss, c, y)?;
    // For p = 1 θ turns sparse and each step is cheap relative to its slow convergence.
    let use_ws = cfg.p > 1.0 && whole.is_sparse();
    let mut ws: Option<PointSet> = None;
    let mut k_theta = Vec::new();
    let mut tracker = Tracker::new(interrupt);
    let psd = PsdCheck::new(stack);
    let mut status = SolveStatus::MaxIterations;
    let mut gaps = GapSchedule::new(cfg.tol, cfg.inner_tol, over_relaxation(cfg.p));
    let mut checks = CheckSchedule::new();
    let mut n_iter = 0;
    for _ in 0..cfg.max_iter {
        interrupt.check()?;
        n_iter += 1;
        // Set when the iterated problem changes: its gaps are not comparable with the last.
        let mut new_problem = false;
        let (gap, norms) = if let Some(set) = ws.as_mut() {
            // The single-kernel solve on K_θ[W, W], and ‖w_m‖ from the sub-stack.
            let (f, b) = set.solver.solve_combined(
                set.stack.stack(),
                &set.y,
                &set.c,
                &theta,
                gaps.inner_tol(),
                &mut k_theta,
                interrupt,
            )?;
            let beta = set.solver.beta();
            let st = Step::certify(
                set.stack.stack(),
                &psd,
                beta,
                cfg,
                &set.y,
                &set.c,
                &theta,
                beta,
                b,
                &f,
            );
            // A whole-problem dual value (β = 0 off W), unless β carries a witness.
            tracker.note(st.witness);
            let dual = tracker.certified(st.dual);
            let rgap = checks.restricted_gap(st.primal, dual);
            if checks.due_after(rgap, cfg.tol) {
                // Whole-problem check at (θ, β): same β, so the same quadratic forms.
                let beta = scatter_points(set.solver.beta(), set.idx(), n);
                let mut f = vec![0.0; n];
                stack.combined_matvec(&theta, &beta, &mut f);
                let b = cfg.loss.best_intercept(y, &f, c, st.b);
                let cert = certificate(cfg, y, c, &theta, b, &st.quad, &f, (&beta, &st.quad));
                let gap = cert.record(&mut tracker, st.witness, &theta, &beta);
                if gap <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
                let alpha = set.alpha(n);
                let more = new_points(cfg.loss, y, &z, &alpha, set.idx());
                if !more.is_empty() {
                    new_problem = true;
                    checks.restart();
                    if !set.grow(stack, y, c, &more, &alpha)? {
                        ws = None;
                        whole.set_warm_start(alpha);
                    }
                } else if checks.is_forced() {
                    // W holds every violator: the whole problem stalls with the restricted one.
                    status = SolveStatus::Stalled;
                    break;
                } else {
                    checks.back_off();
                }
            } else {
                let active = theta.iter().filter(|&&t| t > 0.0).count();
                tracker.record_with(f64::INFINITY, (st.dual, None), active, || unreachable!());
            }
            (rgap, st.norms)
        } else {
            // The single-kernel solve on K_θ, and ‖w_m‖ in one pass over the stack.
            let (f, b) = whole.solve_combined(
                stack,
                y,
                c,
                &theta,
                gaps.inner_tol(),
                &mut k_theta,
                interrupt,
            )?;
            if use_ws && n_iter == 1 {
                let alpha = whole.alpha().unwrap_or(&[]).to_vec();
                let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
                let idx = new_points(cfg.loss, y, &z, &alpha, &[]);
                ws = PointSet::new(stack, y, c, cfg.loss, &idx, &alpha)?;
            }
            let beta = whole.beta();
            // With a working set, its sub-stack holds every non-zero of β: a cheaper pass.
            let st = match &ws {
                Some(set) => {
                    let v = gather_points(beta, n, set.idx());
                    Step::certify(set.stack.stack(), &psd, &v, cfg, y, c, &theta, beta, b, &f)
                }
                None => Step::certify(stack, &psd, beta, cfg, y, c, &theta, beta, b, &f),
            };
            let scaled: Vec<f64> = beta.iter().map(|v| st.scale * v).collect();
            let dual = (st.dual, st.witness);
            let gap = tracker.record(st.primal, dual, &theta, &scaled, st.b, st.norms.clone());
            if gap <= cfg.tol {
                status = SolveStatus::Converged;
                break;
            }
            if ws.is_some() {
                checks.start(tracker.certified(st.dual));
                new_problem = true;
            }
            (gap, st.norms)
        };
        gaps.observe(gap, new_problem);
        if gaps.is_stalled() {
            if ws.is_none() {
                status = SolveStatus::Stalled;
                break;
            }
            // Only a whole-problem check can tell why the restricted problem stalls.
            checks.force();
        }
        // The θ update of eq. 17, extrapolated on restricted problems, whose iterations are
        // the many cheap ones, and for the smooth losses, whose every iteration reads the
        // whole stack twice (dense β; docs/mathematics.md §3.3); the whole problem of the
        // hinge-type losses keeps Kloft's plain update (and its iterates).
        let omega = if ws.is_some() || !whole.is_sparse() {
            gaps.omega()
        } else {
            1.0
        };
        theta = extrapolate(&theta, &theta_update(&norms, cfg.p), omega, cfg.p);
    }
    tracker.finish(n_iter, status)
}
