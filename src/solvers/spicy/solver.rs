//! SpicyMKL's outer loop on the driver: the state between proximal steps ([`Spicy`]), one
//! step (the inner Newton solve, the γ update, the certificate with the kernels' check) and
//! the growth of the working set of points between steps.

use super::inner::{Inner, Outer};
use super::start::{first_points, largest, warm_points, Warm};
use super::{
    kernel_scale, project_duals, Fit, Projected, SpicyConfig, AUTO_WORKING_SET, CHECK_GAP,
};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{KernelStack, PointSubset, SubStack};
use crate::losses::Loss;
use crate::penalties::duals::dual_value;
use crate::penalties::kernel_weights;
use crate::result::{relative_gap, FitResult};
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::points::{new_points, scatter_points, MAX_FRACTION};
use crate::solvers::tracker::{Model, Tracker};

/// A warm start of a smooth loss (logistic, squared) begins at `γ = γ^{(1)} κ^2`, two growth
/// steps on: near the optimum the small first proximal steps only cost outer iterations, and
/// a start further on diverged; a Newton stall still falls back towards `γ^{(1)}`. The
/// hinge-type losses start at `γ^{(1)}`: their slack's `γ_z = √γ` pins the points on the dual
/// box's faces (see `inner::slack_gamma`), and the larger start was slower on the hinge
/// (docs/mathematics.md §2.10, "First γ", has the measurements).
const WARM_GAMMA_STEPS: i32 = 2;

/// SpicyMKL's state between outer iterations: the working sets, the proximal iterate on them
/// and `γ`.
pub(super) struct Spicy<'a> {
    fit: Fit<'a>,
    /// The kernels of the working set (all without one), and how many join it at most per
    /// check.
    kernels: Vec<usize>,
    size: usize,
    /// The working set of points (`None`: all), and the targets and loss weights `w_i` on it.
    points: Option<PointSubset>,
    yw: Vec<f64>,
    ww: Vec<f64>,
    /// The primal iterate `(A, b)`, the slack and the last inner minimiser `ρ`.
    outer: Outer,
    /// Hinge-type loss, handled through the slack.
    slack: bool,
    /// The kernels' scale `s` (`γ_m = γ/s`), `γ`, its cap, and the inner solves' accuracy.
    scale: f64,
    gamma: f64,
    gamma_cap: f64,
    inner_tol: f64,
    /// The best dual value that is valid for all kernels (the restricted problems' duals are
    /// not), as computed: a witness that a kernel is not PSD voids it as a certificate, which
    /// the tracker notes (`note`, `certified`; then the fit stops where it would have
    /// converged).
    full_dual: f64,
    /// Certified outer iterations; a warm start's certificate counts as the first (the first
    /// row of the history), a step retried at a smaller γ does not.
    n_iter: usize,
    /// Every point's prediction (with the intercept) of a nearly optimal iterate on a working
    /// set of points: the set grows from it before the next step.
    grow_from: Option<Vec<f64>>,
}

impl Solver for Spicy<'_> {
    /// One proximal step on the working sets and its whole-problem certificate. A step whose
    /// Newton solve stalled is undone ([`Spicy::proximal_step`]): it records nothing and its
    /// gap is `+∞`.
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let gap = if self.proximal_step(d.interrupt)? {
            self.n_iter += 1;
            self.certify(&mut d.tracker)
        } else {
            f64::INFINITY
        };
        Ok(Outcome::Gap {
            gap,
            whole: true,
            new_problem: false,
        })
    }

    /// The working set of points grows from a nearly optimal iterate.
    fn update(&mut self, _d: &Driver<'_>) -> Result<()> {
        if let Some(z) = self.grow_from.take() {
            let fit = &self.fit;
            if fit.grow_points(&mut self.points, &mut self.outer, &self.kernels, z) {
                self.yw = pick(fit.y, self.points.as_ref());
                self.ww = pick(&fit.wt, self.points.as_ref());
            }
        }
        Ok(())
    }

    /// The result counts the certified iterations ([`Spicy::n_iter`]), not the driver's.
    fn finish(&mut self, mut fit: FitResult) -> Result<FitResult> {
        fit.set_iterations(self.n_iter);
        Ok(fit)
    }
}

impl<'a> Spicy<'a> {
    /// The state at the start: a warm start is certified first, on the whole problem (`None`
    /// when that meets `tol`: the fit ends at the start); its better dual candidate ranks the
    /// kernels for the working set. Then the first working sets of kernels and points, the
    /// iterate on them (`A = 0`, or the warm start's) and the first `γ`.
    pub(super) fn start(
        fit: Fit<'a>,
        warm: Option<Warm<'_>>,
        min_points: usize,
        tracker: &mut Tracker<'_>,
        interrupt: &dyn Interrupt,
    ) -> Result<Option<Self>> {
        let (stack, y, cfg) = (fit.stack, fit.y, fit.cfg);
        let (m_all, n) = (stack.m(), stack.n());
        let mut full_dual = f64::NEG_INFINITY;
        let size = cfg.working_set.unwrap_or(AUTO_WORKING_SET);
        let use_ws = cfg.penalty.weights().0 > 0.0
            && size < m_all
            && (cfg.working_set.is_some() || 2 * AUTO_WORKING_SET < m_all);
        let mut ranking = None;
        if let Some(w) = &warm {
            let (dual, gap, score) = fit.certify_warm(w, tracker);
            full_dual = dual;
            if gap <= cfg.tol {
                return Ok(None);
            }
            ranking = Some(score);
        }
        let kernels = if use_ws {
            let warm = warm.as_ref().zip(ranking.as_deref());
            fit.first_kernels(size, warm, tracker, &mut full_dual)
        } else {
            (0..m_all).collect()
        };
        let slack = matches!(
            cfg.loss,
            Loss::Hinge | Loss::SquaredHinge | Loss::EpsilonInsensitive { .. }
        );
        let points = if !(cfg.point_working_set && slack && n >= min_points) {
            None
        } else if let Some(w) = &warm {
            warm_points(stack, y, cfg, w)
        } else {
            first_points(stack, y, &fit.cu, cfg, &kernels, interrupt)?
        };
        let (yw, ww) = (pick(y, points.as_ref()), pick(&fit.wt, points.as_ref()));
        let outer = match &warm {
            None => Outer::new(kernels.len(), yw.len(), cfg.loss, &yw, &ww),
            Some(w) => w.state(stack, &kernels, points.as_ref()),
        };
        let scale = kernel_scale(stack, slack);
        let (gamma, gamma_cap) = first_gamma(cfg, scale, warm.is_some() && !slack);
        // The inner residual ∇φ is a mismatch of predictions; it must not limit the outer gap.
        let inner_tol = (1e-3 * cfg.tol).clamp(1e-12, 1e-6)
            * (1.0 + y.iter().fold(0.0f64, |a, v| a.max(v.abs())));
        Ok(Some(Spicy {
            fit,
            kernels,
            size,
            points,
            yw,
            ww,
            outer,
            slack,
            scale,
            gamma,
            gamma_cap,
            inner_tol,
            full_dual,
            n_iter: usize::from(warm.is_some()),
            grow_from: None,
        }))
    }

    /// One proximal step at `γ` on the working sets: the inner Newton solve of `φ_γ` (eq.
    /// 7–9) and the updates of `A`, `b` and the slack (eq. 5, 6, 11), then `γ ← min(κγ,
    /// γ_max)`. False when Newton stalled far from the inner minimiser at a `γ` above
    /// `γ^{(1)}`: the outer update from its `ρ` can diverge, so the step is undone and retried
    /// with a tenth of `γ` (any positive γ sequence is a proximal point method).
    fn proximal_step(&mut self, interrupt: &dyn Interrupt) -> Result<bool> {
        let cfg = self.fit.cfg;
        let (r1, r2) = cfg.penalty.weights();
        let sub = view(self.fit.stack, self.points.as_ref(), &self.kernels);
        let inner = Inner {
            stack: &sub,
            y: &self.yw,
            w: &self.ww,
            loss: cfg.loss,
            slack: self.slack,
            lam1: r1 / cfg.c,
            lam2: r2 / cfg.c,
            kernel_gamma: 1.0 / self.scale,
            max_inner: cfg.max_inner,
            inner_tol: self.inner_tol,
        };
        let before = self.outer.clone();
        if !inner.step(&mut self.outer, self.gamma, interrupt)? && self.gamma > cfg.gamma0 {
            self.outer = before;
            self.gamma = (self.gamma / 10.0).max(cfg.gamma0);
            return Ok(false);
        }
        self.gamma = (self.gamma * cfg.gamma_factor).min(self.gamma_cap);
        Ok(true)
    }

    /// Records the iterate's certificate (module documentation, "Certificate") and returns
    /// the relative gap. The primal from `(A, b)` by its definition, with the best intercept
    /// for this `A` (any `b` is a valid primal point, the best one keeps `P` tight); `A` is
    /// zero off the working sets, so it is the whole problem's. The dual is the best
    /// whole-problem value so far ([`Spicy::certify_dual`]).
    fn certify(&mut self, tracker: &mut Tracker<'_>) -> f64 {
        let (cfg, c) = (self.fit.cfg, self.fit.cfg.c);
        let mut f = vec![0.0; self.yw.len()];
        self.outer.predictions(&mut f);
        let cw: Vec<f64> = self.ww.iter().map(|w| c * w).collect();
        let b = cfg.loss.best_intercept(&self.yw, &f, &cw, self.outer.b);
        let norms = self.outer.norms();
        let penalty = cfg.penalty.value(&norms);
        let primal_here = c * cfg.loss.weighted_total(&self.yw, &f, b, &self.ww) + penalty;
        // Every point's prediction, when iterating on a working set of points.
        let whole = self.points.as_ref().map(|p| {
            let fit = &self.fit;
            fit.whole_predictions(&self.outer, &self.kernels, &norms, p.indices(), b)
        });
        let primal = match &whole {
            Some((fa, bw)) => {
                c * cfg.loss.weighted_total(self.fit.y, fa, *bw, &self.fit.wt) + penalty
            }
            None => primal_here,
        };
        self.certify_dual(&f, b, &cw, primal_here, tracker);
        let active = norms.iter().filter(|&&s| s > 0.0).count();
        let (f_all, b_all) = match &whole {
            Some((fa, bw)) => (fa.as_slice(), *bw),
            None => (f.as_slice(), b),
        };
        // Certified as −∞ once a dual point showed a kernel is not PSD (noted on the way).
        let gap = tracker.record_with(primal, (self.full_dual, None), active, || {
            let points = self.points.as_ref();
            self.fit
                .model(&self.outer, &self.kernels, &norms, points, b_all)
        });
        // Nearly optimal on the working set of points (the kernels' check threshold): it grows.
        let nearly = relative_gap(primal_here, self.full_dual) <= (0.5 * cfg.tol).max(CHECK_GAP);
        self.grow_from =
            (nearly && self.points.is_some()).then(|| f_all.iter().map(|fi| fi + b_all).collect());
        gap
    }

    /// The dual candidates at the iterate `(f, b)` on the iterated points (loss weights `cw`
    /// in our scale): the natural `ρ̃ = −C ℓ'(y, f)` and the inner `ρ̃ = Cρ`, projected on the
    /// working set's kernels (zero on the other points, they are dual points of the whole
    /// problem: `ℓ*(y, 0) = 0`, and the block norms are the same). Their values raise
    /// `full_dual` when the working set holds every kernel; otherwise, once the restricted
    /// gap (from `primal_here`) is below [`CHECK_GAP`], every kernel is checked
    /// ([`Spicy::check_kernels`]).
    fn certify_dual(
        &mut self,
        f: &[f64],
        b: f64,
        cw: &[f64],
        primal_here: f64,
        tracker: &mut Tracker<'_>,
    ) {
        let cfg = self.fit.cfg;
        let natural = cfg.loss.natural_dual(&self.yw, f, b, cw);
        let scaled: Vec<f64> = self.outer.rho.iter().map(|r| cfg.c * r).collect();
        let candidates: [&[f64]; 2] = [&natural, &scaled];
        let sub = view(self.fit.stack, self.points.as_ref(), &self.kernels);
        let local = project_duals(
            &sub,
            &self.yw,
            &candidates,
            cw,
            cfg.loss,
            cfg.penalty,
            self.fit.psd.of(sub.indices()),
        );
        // The working-set decisions below use the values as they are; only points without a
        // witness that a kernel is not PSD count for the certificate.
        let value =
            |p: &Projected| dual_value(&p.norms, &self.yw, &p.rho, cw, cfg.loss, cfg.penalty);
        let local_dual = local.iter().map(value).fold(f64::NEG_INFINITY, f64::max);
        if sub.m() == self.fit.stack.m() {
            for p in &local {
                tracker.note(p.witness);
                self.full_dual = self.full_dual.max(value(p));
            }
        } else if relative_gap(primal_here, local_dual) <= cfg.tol.max(CHECK_GAP) {
            let j = (0..local.len())
                .max_by(|&a, &b| value(&local[a]).total_cmp(&value(&local[b])))
                .expect("two candidates");
            self.check_kernels(candidates[j], cw, primal_here, tracker);
        }
    }

    /// Optimal on the working set: every kernel is checked in one pass with `candidate`, the
    /// dual candidate that is best on it (a whole-problem dual value), and the kernels whose
    /// block norm says they should be active (KKT: `‖ρ̃‖_{K_m} ≤ r_1` off the support) join
    /// the set, the most violated first, at most `size` of them.
    fn check_kernels(
        &mut self,
        candidate: &[f64],
        cw: &[f64],
        primal_here: f64,
        tracker: &mut Tracker<'_>,
    ) {
        let cfg = self.fit.cfg;
        let (r1, r2) = cfg.penalty.weights();
        let m_all = self.fit.stack.m();
        let checked = project_duals(
            base(self.fit.stack, self.points.as_ref()),
            &self.yw,
            &[candidate],
            cw,
            cfg.loss,
            cfg.penalty,
            self.fit.psd.all(),
        );
        tracker.note(checked[0].witness);
        let value = dual_value(
            &checked[0].norms,
            &self.yw,
            &checked[0].rho,
            cw,
            cfg.loss,
            cfg.penalty,
        );
        self.full_dual = self.full_dual.max(value);
        let mut inside = vec![false; m_all];
        self.kernels.iter().for_each(|&m| inside[m] = true);
        let score = violation(&checked, &inside, r1, r2);
        let outside: Vec<usize> = (0..m_all)
            .filter(|&m| !inside[m] && score[m] > 1.0)
            .collect();
        let gap = relative_gap(primal_here.min(tracker.best_primal()), self.full_dual);
        if gap > cfg.tol && !outside.is_empty() {
            let more = largest(&score, outside, self.size);
            self.kernels.extend_from_slice(&more);
            self.outer.grow(more.len());
        }
    }
}

/// The first `γ` and its cap, for the kernels' scale `scale`; `warm_smooth`: a warm start of
/// a smooth loss ([`WARM_GAMMA_STEPS`]).
fn first_gamma(cfg: &SpicyConfig, scale: f64, warm_smooth: bool) -> (f64, f64) {
    // In the loss-weight-1 scaling the ℓ1 weight is 1/C, so the threshold γ/C of a kernel is
    // active only for γ of order C: a fixed cap stalled the hinge losses at large C
    // (docs/mathematics.md §2.2). In the unit-scale problem (see "Scale") that weight is
    // 1/(C√s).
    let cap = cfg.gamma_max * (cfg.c * scale.sqrt()).max(1.0);
    // A warm start near the optimum needs no small first proximal steps.
    let gamma = if warm_smooth {
        (cfg.gamma0 * cfg.gamma_factor.powi(WARM_GAMMA_STEPS)).min(cap)
    } else {
        cfg.gamma0
    };
    (gamma, cap)
}

/// The stack of the points being iterated: the working set of `points`, or all of `stack`'s.
fn base<'s>(stack: &'s dyn KernelStack, points: Option<&'s PointSubset>) -> &'s dyn KernelStack {
    points.map_or(stack, |p| p.stack())
}

/// The `kernels` of the working set on the points being iterated.
fn view<'s>(
    stack: &'s dyn KernelStack,
    points: Option<&'s PointSubset>,
    kernels: &[usize],
) -> SubStack<'s> {
    SubStack::new(base(stack, points), kernels.to_vec())
}

/// The entries of `v` (targets, loss weights) on the points being iterated: all, or those of
/// the working set.
fn pick(v: &[f64], points: Option<&PointSubset>) -> Vec<f64> {
    match points {
        Some(p) => p.indices().iter().map(|&i| v[i]).collect(),
        None => v.to_vec(),
    }
}

impl Fit<'_> {
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
        let bw = self.cfg.loss.best_intercept(self.y, &fa, &self.cu, b);
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
