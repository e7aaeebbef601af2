//! The wrapper's iteration as the driver runs it (module docs of `wrapper`): one SVM solve at
//! the weights `w`, the verdict on the trial step, the certificate (of the whole problem or
//! of a working set, with its checks) and the next Newton step.

use std::ops::ControlFlow;

use super::certificate::{forms, solve_point, Certificate, Point};
use super::newton::{
    free_count, gradient, model_kernels, movable, s_hessian, step_rose, NewtonModel, MAX_MODEL,
    MAX_MODEL_SMOOTH, MIN_RADIUS, START_RADIUS,
};
use super::{Combined, Next, Wrapper, MIN_INNER_TOL};
use crate::error::Result;
use crate::kernels::{support_products, KernelStack};
use crate::result::SolveStatus;
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::points::{gather_points, new_points, PointSet};
use crate::solvers::single::{GradientCaches, SingleKernel};

/// The kernels whose cross forms dual aggregation reads beyond twice the active ones
/// ([`Aggregate::segment_forms`](super::certificate::Aggregate::segment_forms)).
const AGGREGATE_KERNELS: usize = 20;

impl Solver for Wrapper<'_> {
    /// One SVM solve at `w` and what it decides: a refused trial step is retried; an iterate
    /// that stands is certified (forming or checking a working set) and gives the next Newton
    /// step, or a more exact SVM where the model sees no progress.
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let first = std::mem::replace(&mut self.first, false);
        // A working set formed during this iteration restricts the next ones only.
        let restricted = self.restricted();
        let (point, j) = self.solve(d)?;
        if let Some(grew) = self.incomplete_points(&point)? {
            return Ok(grew);
        }
        if let Some(refused) = self.judge(d, j, restricted) {
            return Ok(refused);
        }
        if first && self.use_ws {
            if let Some(formed) = self.form_point_set(d, &point)? {
                return Ok(formed);
            }
        }
        let it = match self.certify(d, &point)? {
            ControlFlow::Continue(it) => it,
            ControlFlow::Break(outcome) => return Ok(outcome),
        };
        let outcome = it.outcome();
        if self.smooth {
            self.inner_tol = self.inner_tol.min((0.03 * it.gap).max(MIN_INNER_TOL));
        }
        if self.pen.r1 == 0.0 {
            // The one SVM is the solution; only its accuracy bounds the gap (no working set:
            // at the smallest, the fit stalls).
            self.next = Next::Resolve;
            return Ok(if self.tighten(d, restricted) {
                stalled()
            } else {
                outcome
            });
        }
        let stall = self.newton_step(d, &point, j, it.prod, restricted)?;
        Ok(stall.unwrap_or(outcome))
    }

    fn restricted(&self) -> bool {
        self.ws.is_some() || self.kset.is_some()
    }

    /// Under `solver="auto"` SpicyMKL continues at the first stall: the wrapper's refused
    /// trust-region steps can hold one point for its whole budget (docs/mathematics.md §1.9).
    fn recover(&mut self, _d: &mut Driver<'_>, frozen: bool) -> bool {
        !(self.handover || frozen)
    }

    /// The weights and kernel of the next solve, as the step decided.
    fn update(&mut self, _d: &Driver<'_>) -> Result<()> {
        self.kw_is_w = match std::mem::replace(&mut self.next, Next::Recombine) {
            Next::Weights(w) => {
                if let Some(set) = &mut self.kset {
                    // A retry in a smaller region keeps weights the step had set to zero.
                    for (k, _) in w.iter().enumerate().filter(|(_, &v)| v > 0.0) {
                        if let Err(at) = set.binary_search(&k) {
                            set.insert(at, k);
                        }
                    }
                }
                self.w = w;
                false
            }
            Next::Recombine => false,
            Next::Resolve => true,
        };
        Ok(())
    }
}

/// A certified iterate that goes on to the Newton model.
pub(super) struct Iterate {
    /// The relative gap of the iterated problem: the whole one's (`whole`), or a working
    /// set's; `new_problem` when a working set was formed or grew.
    pub(super) gap: f64,
    pub(super) whole: bool,
    pub(super) new_problem: bool,
    /// `K_mβ` of every kernel from the forms' pass (the smooth losses' dense `β`), if kept.
    pub(super) prod: Option<Vec<f64>>,
}

impl Iterate {
    fn outcome(&self) -> Outcome {
        Outcome::Gap {
            gap: self.gap,
            whole: self.whole,
            new_problem: self.new_problem,
        }
    }
}

/// The outcome of a whole-problem iterate whose gap is within `tol`: the driver ends the fit,
/// converged.
pub(super) fn converged(gap: f64) -> Outcome {
    Outcome::Gap {
        gap,
        whole: true,
        new_problem: false,
    }
}

/// The outcome of a fit that stalls.
pub(super) fn stalled() -> Outcome {
    Outcome::Stop(SolveStatus::Stalled)
}

/// The outcome of a refused trial step: nothing recorded, the next solve retries.
fn refused() -> Outcome {
    Outcome::Gap {
        gap: f64::INFINITY,
        whole: false,
        new_problem: false,
    }
}

/// The iterated problem: the working set of points' restricted one, or the whole one.
pub(super) struct Iterated<'a> {
    pub(super) stack: &'a dyn KernelStack,
    pub(super) y: &'a [f64],
    pub(super) c: &'a [f64],
    pub(super) solver: &'a mut SingleKernel,
}

/// [`Iterated`] from the state's fields (a function of those alone, so that the others stay
/// free to borrow).
pub(super) fn iterated<'a>(
    ws: &'a mut Option<PointSet>,
    whole: &'a mut SingleKernel,
    stack: &'a dyn KernelStack,
    y: &'a [f64],
    c: &'a [f64],
) -> Iterated<'a> {
    match ws {
        Some(set) => Iterated {
            stack: set.stack.stack(),
            y: &set.y,
            c: &set.c,
            solver: &mut set.solver,
        },
        None => Iterated {
            stack,
            y,
            c,
            solver: whole,
        },
    }
}

impl Wrapper<'_> {
    /// The single-kernel solve at `w` of the iterated problem, warm-started: its point and
    /// `J(w)` (the SVM's value plus the penalty).
    fn solve(&mut self, d: &Driver<'_>) -> Result<(Point, f64)> {
        let tol = self.inner_tol;
        let point = if let Some(caches) = self.caches.as_mut() {
            debug_assert!(self.ws.is_none(), "the caches serve the whole problem only");
            // `K_w` formed by the solve when SMO needed many columns, else its weights.
            let mut k = self.kw.take_dense();
            let (stack, y, c, w) = (self.stack, self.y, self.c, &self.w);
            let (f, b) =
                self.whole
                    .solve_cached(stack, caches, y, c, w, tol, &mut k, d.interrupt)?;
            self.kw = if k.is_empty() {
                Combined::OnDemand(w.clone())
            } else {
                Combined::Dense(k)
            };
            Point::of_smo(&self.whole, f, b)
        } else {
            let p = iterated(&mut self.ws, &mut self.whole, self.stack, self.y, self.c);
            if !self.kw_is_w {
                self.kw.set(p.stack, &self.w, self.smooth);
            }
            solve_point(p.solver, p.stack, &self.kw, p.y, p.c, tol, d.interrupt)?
        };
        let j = point.value + self.w.iter().map(|&v| self.pen.value(v)).sum::<f64>();
        Ok((point, j))
    }

    /// The verdict on the trial step (module docs, step 2) by `J` at its weights: a step that
    /// raised `J` is refused and retried from the same model in a smaller region; an accepted
    /// one resizes the region by the decrease it achieved against the predicted one. `None`
    /// when the iterate stands (also when there was no trial: the first iterate, or one after
    /// the model saw no progress).
    fn judge(&mut self, d: &mut Driver<'_>, j: f64, restricted: bool) -> Option<Outcome> {
        let (prev, pred) = self.model.as_mut()?;
        if !step_rose(&mut self.radius, prev.j, *pred, j) {
            return None;
        }
        if self.radius > MIN_RADIUS {
            // Refused: retry from the same model in a smaller region.
            self.radius = self.radius.sqrt().max(MIN_RADIUS);
            let (next, p) = prev.step(self.radius, &self.pen);
            *pred = p;
            self.next = Next::Weights(next);
            return Some(refused());
        }
        // Refused in the smallest region: `J`'s noise (the SVM's accuracy) is all the model
        // can still see; a more exact SVM at the model's weights, else a stall.
        if self.tighten(d, restricted) {
            return Some(stalled());
        }
        let (prev, _) = self.model.take().expect("a trial step has a model");
        self.next = Next::Weights(prev.w);
        self.radius = START_RADIUS;
        Some(refused())
    }

    /// Where only a more exact SVM can move the certificate: the next solve 100 times more
    /// exact, or at [`MIN_INNER_TOL`] a stall of the iterated problem ([`CheckSchedule::stalls`](crate::solvers::schedule::CheckSchedule::stalls)). Whether
    /// the fit stalls.
    fn tighten(&mut self, d: &mut Driver<'_>, restricted: bool) -> bool {
        if self.inner_tol <= MIN_INNER_TOL {
            return d.checks.stalls(restricted);
        }
        self.inner_tol = (0.01 * self.inner_tol).max(MIN_INNER_TOL);
        false
    }

    /// The support vectors and margin violators of the first iterate form the working set of
    /// points: `β` is zero off it, so its forms read the set's kernels only, and the next
    /// iterates are the restricted problem's, from this `w`. The iterate is certified as the
    /// whole problem's. `None` when the set would not pay off.
    fn form_point_set(&mut self, d: &mut Driver<'_>, point: &Point) -> Result<Option<Outcome>> {
        let (stack, y, c, cfg) = (self.stack, self.y, self.c, self.cfg);
        let alpha = self.whole.alpha().unwrap_or(&[]).to_vec();
        let z: Vec<f64> = point.f.iter().map(|fi| fi + point.b).collect();
        let idx = new_points(cfg.loss, y, &z, &alpha, &[]);
        let Some(set) = PointSet::new(stack, y, c, cfg.loss, &idx, &alpha)? else {
            return Ok(None);
        };
        let beta_w = gather_points(&point.beta, stack.n(), set.idx());
        set.stack.stack().quad_forms(&beta_w, &mut self.q);
        let cert = Certificate::new(&self.psd, cfg, y, c, &self.w, &self.q, point);
        let dual = cert.dual;
        let gap = cert.record(&mut d.tracker, cfg, &self.w, point);
        if gap <= cfg.tol {
            return Ok(Some(converged(gap)));
        }
        d.checks.start(d.tracker.certified(dual));
        self.ws = Some(set);
        // The restricted problem forms its own `K_w[W, W]`.
        self.caches = None;
        self.next = Next::Recombine;
        Ok(Some(Outcome::Gap {
            gap,
            whole: true,
            new_problem: true,
        }))
    }

    /// The certificate of the iterate at `point` (module docs, step 3): the forms `q_m` of
    /// the iterated problem's kernels, then the whole problem's certificate or a working
    /// set's with its whole-problem check when due. `Break`: the step ends here (converged,
    /// stalled, or a working set grew).
    fn certify(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
    ) -> Result<ControlFlow<Outcome, Iterate>> {
        // Dual aggregation (`Aggregate`) where `β` is sparse and every form is read.
        let aggregate = !self.smooth && self.kset.is_none();
        let idx: Option<Vec<usize>> = self.ws.as_ref().map(|s| s.idx().to_vec());
        let prod = if self.cacheable && self.ws.is_none() && self.kset.is_none() {
            // The caches' forms `βᵀh_m` (built here at the first whole iterate).
            let moving = free_count(&point.beta, self.c, self.cfg.loss);
            self.q = GradientCaches::forms_in(&mut self.caches, self.stack, &point.beta, moving);
            None
        } else {
            let p = iterated(&mut self.ws, &mut self.whole, self.stack, self.y, self.c);
            forms(
                p.stack,
                &point.beta,
                self.smooth,
                self.kset.as_deref(),
                &mut self.q,
            )
        };
        let p = iterated(&mut self.ws, &mut self.whole, self.stack, self.y, self.c);
        let segment = if aggregate {
            let cap = AGGREGATE_KERNELS + 2 * self.w.iter().filter(|&&v| v > 0.0).count();
            let read = (&point.beta[..], &self.q[..]);
            self.dual.segment_forms(p.stack, read, idx.as_deref(), cap)
        } else {
            None
        };
        let mut cert = Certificate::new(&self.psd, self.cfg, p.y, p.c, &self.w, &self.q, point);
        if aggregate {
            cert.dual = self.dual.offer(
                (&point.beta, &self.q, cert.dual),
                segment,
                (idx.as_deref(), self.stack.n()),
                (p.y, p.c),
                self.cfg.loss,
                self.cfg.penalty.into(),
            );
        }
        if self.ws.is_some() {
            self.restricted_points(d, point, cert, prod)
        } else if self.kset.is_some() {
            Ok(self.restricted_kernels(d, point, cert, prod))
        } else {
            Ok(self.whole_iterate(d, point, cert, prod))
        }
    }

    /// A whole-problem iterate: its certificate recorded. Its forms read every kernel: once
    /// at most half of them can move, the next iterates read theirs only (module docs).
    fn whole_iterate(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
        cert: Certificate,
        prod: Option<Vec<f64>>,
    ) -> ControlFlow<Outcome, Iterate> {
        let dual = cert.dual;
        let gap = cert.record(&mut d.tracker, self.cfg, &self.w, point);
        if gap <= self.cfg.tol {
            return ControlFlow::Break(converged(gap));
        }
        let set = movable(&self.w, &gradient(&self.w, &self.q, &self.pen));
        let formed = !self.kset_done && self.pen.r1 > 0.0 && 2 * set.len() <= self.stack.m();
        if formed {
            self.kset = Some(set);
            d.checks.start(d.tracker.certified(dual));
        }
        ControlFlow::Continue(Iterate {
            gap,
            whole: true,
            new_problem: formed,
            prod,
        })
    }

    /// Step 2 (module docs): the next weights by the trust-region step of the Newton model
    /// at this iterate. Where the model sees no progress (no kernel to move, or no decrease
    /// predicted), the next solve is at the same weights (more exact); `Some` when the fit
    /// stalls instead.
    fn newton_step(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
        j: f64,
        prod: Option<Vec<f64>>,
        restricted: bool,
    ) -> Result<Option<Outcome>> {
        let grad_all = gradient(&self.w, &self.q, &self.pen);
        // Outside the kernel set no weight is left (their forms read as 0).
        debug_assert!(self.kset.as_ref().is_none_or(|s| {
            (0..self.w.len()).all(|k| self.w[k] == 0.0 || s.binary_search(&k).is_ok())
        }));
        let cap = if self.smooth {
            MAX_MODEL_SMOOTH
        } else {
            MAX_MODEL
        };
        let vars = model_kernels(&self.w, &grad_all, cap);
        if vars.is_empty() {
            self.next = Next::Resolve;
            return Ok(d.checks.stalls(restricted).then(stalled));
        }
        let model = self.model_at(point, j, vars, &grad_all, prod)?;
        let (mut step, mut pred) = model.step(self.radius, &self.pen);
        if self.kset.is_some() && step.iter().all(|&v| v == 0.0) {
            // The set's kernels can all look useless where others would not (the zero
            // model's `J` is the whole problem's too): keep them, in a region that
            // cannot zero a weight.
            self.radius = self.radius.min(START_RADIUS).sqrt();
            (step, pred) = model.step(self.radius, &self.pen);
        }
        // `J` converges to second order in the gradient and the gap to first order, so a step
        // that `J` no longer resolves (1e-15) can still close the gap: it counts while it moves
        // a weight by more than 1e-9 of itself.
        let moves = self
            .w
            .iter()
            .zip(&step)
            .any(|(a, b)| (a - b).abs() > 1e-9 * a.max(*b));
        if !(pred > 1e-15 * j.abs() || moves && pred >= 0.0) {
            // The model sees no progress left: only a more exact SVM can move the certificate.
            self.model = None;
            self.next = Next::Resolve;
            return Ok(self.tighten(d, restricted).then(stalled));
        }
        if let Some(set) = &mut self.kset {
            // Kernels leave the set when their weight is zero and their gradient not negative.
            set.retain(|&k| step[k] > 0.0 || grad_all[k] < 0.0);
        }
        self.model = Some((model, pred));
        self.next = Next::Weights(step);
        Ok(None)
    }

    /// The Newton model of `J` at this iterate on the kernels `vars` (module docs): their
    /// gradient `grad_all[vars]`, and the Hessian of `S` from the products `K_kβ` (the forms'
    /// pass kept them as `all_prod`, else from the support vectors) plus `π''`, regularised.
    fn model_at(
        &mut self,
        point: &Point,
        j: f64,
        vars: Vec<usize>,
        grad_all: &[f64],
        all_prod: Option<Vec<f64>>,
    ) -> Result<NewtonModel> {
        let n = self.stack.n();
        let p = iterated(&mut self.ws, &mut self.whole, self.stack, self.y, self.c);
        // `K_kβ` for the model's kernels only: few, once the weights are sparse.
        let prod = match (&all_prod, &self.caches) {
            (Some(all), _) => vars
                .iter()
                .flat_map(|&kk| all[kk * n..(kk + 1) * n].iter().copied())
                .collect(),
            // The caches, when its forms brought them to this iterate's `β`.
            (None, Some(caches)) if caches.is_at(&point.beta) => caches.products(&vars),
            (None, _) => support_products(p.stack, &point.beta, &vars),
        };
        let mut hess = s_hessian(p.solver, p.stack, &self.kw, point, &prod, p.c, self.cfg)?;
        let s = vars.len();
        for (a, &kk) in vars.iter().enumerate() {
            hess[(a, a)] += self.pen.d2(self.w[kk]);
        }
        let top = (0..s).fold(0.0f64, |a, r| a.max(hess[(r, r)].abs()));
        for a in 0..s {
            hess[(a, a)] += 1e-10 * top.max(f64::MIN_POSITIVE);
        }
        Ok(NewtonModel {
            grad: vars.iter().map(|&kk| grad_all[kk]).collect(),
            vars,
            hess,
            j,
            w: self.w.clone(),
        })
    }
}
