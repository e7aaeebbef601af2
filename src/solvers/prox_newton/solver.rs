//! Proximal Newton's steps on the driver: the state between steps ([`ProxNewton`]) and one
//! step (the continuations' level changes that are due, the working set, the Hessian, the
//! direction, the line search, the certificate of the new point).

use super::certificate::{self, Best, Point, Problem};
use super::continuation::{GroupLevel, Smoothing};
use super::model::{group_direction, inner, lp_direction};
use super::products::{inner_products, Hessian, Products};
use super::rows::{Op, Update};
use super::search::{exact_step, line_search, Step};
use super::working_set::{model_decrease, working_set, WorkingSet};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::losses::{Envelope, Loss};
use crate::penalties::BlockPenalty;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::tracker::Tracker;

/// Proximal Newton's state between steps.
pub(super) struct ProxNewton<'a> {
    prob: Problem<'a>,
    /// The iterate: the feature weights (kernel blocks in column order) and the intercept.
    w: Vec<f64>,
    b: f64,
    /// The point `(w, b)`, its gradient and certificate.
    pt: Point,
    best: Best,
    /// The continuations: the loss's smoothing and group's level (`None`: not used), and the
    /// penalty the steps minimise (`cfg.penalty`, or group's at its level).
    smoothing: Option<Smoothing>,
    group: Option<GroupLevel>,
    level: BlockPenalty,
    /// The squared loss's Hessian does not depend on the point: kept while the set is.
    kept: Option<(Vec<usize>, Vec<f64>)>,
    /// Newton steps taken (a level change re-certifies the point without one).
    steps: usize,
    /// Working sets of at least this many columns take Hessian products ([`Products`]).
    products_from: usize,
}

impl Solver for ProxNewton<'_> {
    /// The continuations' level changes that are due, each re-certifying the point (the start,
    /// or a point at a new level, may already meet `tol`), then one Newton step.
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let mut first = true;
        loop {
            if self.pt.gap <= d.tol {
                return Ok(Outcome::Stop(SolveStatus::Converged));
            }
            // The driver polled the interrupt before the first pass.
            if !std::mem::replace(&mut first, false) {
                d.interrupt.check()?;
            }
            if self.lower_smoothing(&mut d.tracker)? {
                continue;
            }
            let ws = match self.prob.cfg.penalty {
                BlockPenalty::Sparse(_) => working_set(self.prob.x, &self.w, &self.pt.viol),
                BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => WorkingSet::all(self.prob.x),
            };
            let hess = self.hessian(&ws)?;
            let wl: Vec<f64> = ws.cols.iter().map(|&j| self.w[j]).collect();
            let delta = self.direction(&ws, &hess, &wl, d.interrupt)?;
            if self.lower_group_level(&ws, &wl, &delta, &mut d.tracker)? {
                continue;
            }
            return self.take_step(ws, hess, &delta, &mut d.tracker);
        }
    }

    /// The result counts the Newton steps (0 when the start meets `tol`); its feature weights
    /// are the best iterate's `w`, its coefficients their representer form.
    fn finish(&mut self, mut fit: FitResult) -> Result<FitResult> {
        fit.set_iterations(self.steps);
        if let Some(m) = self.best.model.take() {
            (fit.intercept, fit.kernel_weights) = (m.intercept, m.weights);
            fit.kernel_norms = m.norms;
        }
        fit.coef_outer = self.best.coef(self.prob.x);
        fit.feature_weights = std::mem::take(&mut self.best.w);
        Ok(fit)
    }
}

impl<'a> ProxNewton<'a> {
    /// The state at the start `(w, b)`, whose predictions the rows hold (`warm`: a given
    /// start, near an optimum, whose continuations begin further on), certified.
    pub(super) fn start(
        prob: Problem<'a>,
        (w, b): (Vec<f64>, f64),
        warm: bool,
        products_from: usize,
        tracker: &mut Tracker<'_>,
    ) -> Result<Self> {
        let Problem { x, cfg, .. } = prob;
        let mut best = Best {
            w: w.clone(),
            dual: None,
            scale: vec![0.0; x.m()],
            model: None,
        };
        let smoothing = Smoothing::start(&prob, warm)?;
        let group = match &cfg.penalty {
            BlockPenalty::Group(gp) => Some(GroupLevel::start(
                gp,
                &prob,
                smoothing.as_ref(),
                (&w, b),
                warm,
            )?),
            _ => None,
        };
        let level = group
            .as_ref()
            .map_or(cfg.penalty.clone(), GroupLevel::penalty);
        let env = smoothing.as_ref().map_or(cfg.loss.into(), |s| s.env);
        let pt = certificate::certify(&prob, env, &level, (&w, b), tracker, &mut best)?;
        Ok(ProxNewton {
            prob,
            w,
            b,
            pt,
            best,
            smoothing,
            group,
            level,
            kept: None,
            steps: 0,
            products_from,
        })
    }

    /// The loss (or its envelope at the smoothing's level) the steps minimise.
    fn env(&self) -> Envelope {
        self.smoothing
            .as_ref()
            .map_or(self.prob.cfg.loss.into(), |s| s.env)
    }

    /// Certifies the point `(w, b)` at the current levels.
    fn certify(&mut self, tracker: &mut Tracker<'_>) -> Result<()> {
        let env = self.env();
        let (w, b, level) = (&self.w, self.b, &self.level);
        self.pt = certificate::certify(&self.prob, env, level, (w, b), tracker, &mut self.best)?;
        Ok(())
    }

    /// The smoothing's continuation: once its level is solved `μ` is lowered (group's level
    /// follows the loss's) and the point re-certified. Whether it was.
    fn lower_smoothing(&mut self, tracker: &mut Tracker<'_>) -> Result<bool> {
        let Some(sm) = self.smoothing.as_mut() else {
            return Ok(false);
        };
        if !sm.next_level(&self.pt, self.prob.cfg.tol) {
            return Ok(false);
        }
        if let Some(gl) = self.group.as_mut() {
            gl.follow();
            self.level = gl.penalty();
        }
        self.certify(tracker)?;
        Ok(true)
    }

    /// Group's continuation with a smooth loss: the level is solved once the Newton
    /// decrement of `δ` is small ([`GroupLevel::lower`]); it is lowered and the point
    /// re-certified. Whether it was.
    fn lower_group_level(
        &mut self,
        ws: &WorkingSet,
        wl: &[f64],
        delta: &[f64],
        tracker: &mut Tracker<'_>,
    ) -> Result<bool> {
        let Some(gl) = self.group.as_mut().filter(|_| self.smoothing.is_none()) else {
            return Ok(false);
        };
        let change = ws.penalty_change(&self.level, wl, delta);
        let decrement = -model_decrease(ws, &self.pt, delta, change);
        if !gl.lower(decrement, self.prob.cfg.tol, self.pt.primal) {
            return Ok(false);
        }
        self.level = gl.penalty();
        self.certify(tracker)?;
        Ok(true)
    }

    /// The loss's Hessian `H = C [G_W, 1]ᵀ diag(ℓ'') [G_W, 1]` on the working set, damped on
    /// a smoothed level ([`Smoothing::damp`]): formed (one pass over its columns), or, for a
    /// sparse penalty's set of at least `products_from` columns, given by products.
    fn hessian(&mut self, ws: &WorkingSet) -> Result<Hessian> {
        if matches!(self.prob.cfg.penalty, BlockPenalty::Sparse(_))
            && ws.cols.len() >= self.products_from
        {
            let damp = match &self.smoothing {
                Some(sm) => sm.damping(&ws.cols),
                None => vec![0.0; ws.cols.len() + 1],
            };
            let (env, b, cols) = (self.env(), self.b, ws.cols.clone());
            return Ok(Hessian::Products(Products { env, b, cols, damp }));
        }
        let mut hess = match self.kept.take() {
            Some((cols, h)) if cols == ws.cols => h,
            _ => self.prob.reduce(&Op::Hessian {
                env: self.env(),
                b: self.b,
                cols: ws.cols.clone(),
                // A smoothed level's curvature sits on the points of its zone only.
                zone: self.smoothing.is_some(),
            })?,
        };
        if let Some(sm) = &self.smoothing {
            sm.damp(&mut hess, &ws.cols);
        }
        Ok(Hessian::Formed(hess))
    }

    /// The Newton direction `(δ, δ_b)` on the working set (`wl`: `w` on its columns): the
    /// model minimised by block coordinate descent for the sparse penalties, one Newton system
    /// for ℓp's and the smoothed group's.
    fn direction(
        &self,
        ws: &WorkingSet,
        hess: &Hessian,
        wl: &[f64],
        interrupt: &dyn Interrupt,
    ) -> Result<Vec<f64>> {
        let pt = &self.pt;
        let mut g: Vec<f64> = ws.cols.iter().map(|&j| pt.grad[j]).collect();
        g.push(pt.d1_sum);
        // The sparse penalties' model is solved well below the current violation: an
        // accurate step keeps Newton's fast local convergence.
        let worst = pt
            .viol
            .iter()
            .copied()
            .fold(g[ws.cols.len()].abs(), f64::max);
        let (pen, hess) = match (&self.prob.cfg.penalty, hess) {
            (BlockPenalty::Sparse(sp), Hessian::Products(hp)) => {
                let pw = sp.weights();
                return inner_products(&self.prob, hp, ws, &g, wl, pw, 1e-3 * worst);
            }
            (pen, Hessian::Formed(h)) => (pen, h),
            (_, Hessian::Products(_)) => unreachable!("products for the sparse penalties only"),
        };
        match *pen {
            BlockPenalty::Sparse(sp) => {
                inner(ws, hess, &g, wl, sp.weights(), 1e-3 * worst, interrupt)
            }
            BlockPenalty::Lp { p } => lp_direction(ws, hess, &g, wl, p),
            BlockPenalty::Group(_) => {
                let BlockPenalty::Group(gp) = &self.level else {
                    unreachable!("group's level is group")
                };
                group_direction(ws, hess, &g, wl, gp)
            }
        }
    }

    /// The step along `(δ, δ_b)`, by the exact search on a smoothed level and Armijo's
    /// otherwise, and the new point certified. The fit stalls when no step decreases `P`, or
    /// when a step too small for `P` to resolve leaves the certificate where it was.
    fn take_step(
        &mut self,
        ws: WorkingSet,
        hess: Hessian,
        delta: &[f64],
        tracker: &mut Tracker<'_>,
    ) -> Result<Outcome> {
        self.steps += 1;
        let (prob, level, w, b, pt) = (&self.prob, &self.level, &self.w, self.b, &self.pt);
        let step = match &mut self.smoothing {
            Some(sm) => {
                let step = exact_step(prob, sm.env, level, &ws, w, b, pt, delta)?;
                sm.adapt(step.t);
                Some(step)
            }
            None => line_search(prob, level, &ws, w, b, pt, delta)?,
        };
        let Some(Step { t, flat }) = step else {
            return Ok(Outcome::Stop(SolveStatus::Stalled));
        };
        self.prob.update(&Update::Accept { t })?;
        let gap_before = self.pt.gap;
        for (&j, d) in ws.cols.iter().zip(delta) {
            self.w[j] += t * d;
        }
        self.b += t * delta[ws.cols.len()];
        if let (Loss::Squared, Hessian::Formed(h)) = (self.prob.cfg.loss, hess) {
            self.kept = Some((ws.cols, h));
        }
        self.certify(tracker)?;
        if let Some(sm) = self.smoothing.as_mut().filter(|s| s.env.mu > s.floor) {
            // The next level goes on where this one cannot.
            sm.flat = flat;
        } else if flat
            && self.pt.gap >= 0.5 * gap_before
            // A flat step on a group level has a small decrement: the next pass lowers it.
            && !self.group.as_ref().is_some_and(GroupLevel::above_floor)
        {
            // Neither `P` nor the certificate moves any more: the arithmetic's limit.
            return Ok(Outcome::Stop(SolveStatus::Stalled));
        }
        Ok(Outcome::Gap {
            gap: self.pt.gap,
            whole: true,
            new_problem: false,
        })
    }
}
