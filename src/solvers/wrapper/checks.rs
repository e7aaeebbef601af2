//! The working sets' restricted iterates and their whole-problem checks (step 3 of the module
//! docs of `wrapper`), on the schedule of the driver's [`CheckSchedule`].

use std::ops::ControlFlow;

use super::certificate::{forms, Certificate, Point};
use super::newton::{gradient, movable, START_RADIUS};
use super::state::{converged, stalled, Iterate};
use super::{Next, Wrapper};
use crate::error::Result;
use crate::solvers::driver::{Driver, Outcome};
use crate::solvers::points::{new_points, scatter_points};
use crate::solvers::schedule::Settled;
use crate::solvers::tracker::Tracker;

/// With the hinge-type losses, a whole-problem check of the working set of kernels is due once
/// the restricted gap is below half this fraction of the best whole gap (or `tol`/2), so that
/// early restricted problems are not solved far beyond the whole gap they stand in for
/// (docs/mathematics.md §2.11, step 5).
const KSET_TARGET: f64 = 0.2;

impl Wrapper<'_> {
    /// A restricted iterate of the working set of points: `D` is the whole problem's (β = 0
    /// off W), `P` bounds the restricted problem only (recorded as `+∞`); the whole-problem
    /// check when one is due.
    pub(super) fn restricted_points(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
        cert: Certificate,
        prod: Option<Vec<f64>>,
    ) -> Result<ControlFlow<Outcome, Iterate>> {
        d.tracker.note(cert.witness);
        let rgap = d
            .checks
            .restricted_gap(cert.primal, d.tracker.certified(cert.dual));
        if d.checks.due_after(rgap, self.cfg.tol) {
            if let Some(end) = self.check_points(d, point, rgap)? {
                return Ok(ControlFlow::Break(end));
            }
        } else {
            let active = self.w.iter().filter(|&&v| v > 0.0).count();
            d.tracker
                .record_with(f64::INFINITY, (cert.dual, None), active, || unreachable!());
        }
        Ok(ControlFlow::Continue(Iterate {
            gap: rgap,
            whole: false,
            new_problem: false,
            prod,
        }))
    }

    /// The whole-problem check of the working set of points at a restricted iterate (of
    /// relative gap `rgap`): the whole certificate recorded, then the fit converges, or the
    /// set grows by the points that violate optimality (or gives way to the whole problem
    /// when it would grow too large), stalls, or backs off (`None`: the restricted iterate
    /// goes on to the model).
    fn check_points(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
        rgap: f64,
    ) -> Result<Option<Outcome>> {
        let stack = self.stack;
        let set = self
            .ws
            .as_ref()
            .expect("restricted iterates have a working set");
        let idx = set.stack.indices();
        let alpha = scatter_points(set.solver.alpha().unwrap_or(&[]), idx, stack.n());
        let (gap, more) = self.whole_values(&mut d.tracker, point, idx, &alpha);
        if gap <= self.cfg.tol {
            return Ok(Some(converged(gap)));
        }
        Ok(match d.checks.settle(!more.is_empty()) {
            Settled::Grew => {
                // A larger problem, whose `J` the last model does not predict.
                self.model = None;
                self.grow_points(&more, alpha)?;
                Some(Outcome::Gap {
                    gap: rgap,
                    whole: false,
                    new_problem: true,
                })
            }
            Settled::Stalled => Some(stalled()),
            Settled::BackedOff => None,
        })
    }

    /// Whether the restricted solve at `point` stands for the whole problem (docs/mathematics.md
    /// §2.11, step 4): when no point outside `W` violates optimality at these weights, its `β`
    /// (zero off `W`) is the whole SVM's solution and `J_W(w) = J(w)`. Else `J_W(w) < J(w)`,
    /// by as much as the loss of the violators: `J_W` ignores the points beyond the margin,
    /// which a smaller scale of `w` would pull into it, so its minimum can lie far below the
    /// whole problem's scale (on pima, SimpleMKL's bank at C = 1, at `w = 0`, where the
    /// whole `J` is the zero model's). The trust region must not judge a step by it: the
    /// violators join `W` (or the whole problem takes over) and the same weights are solved
    /// again, with the model kept (its iterate stood for the whole problem). `Some`: this
    /// solve does not stand. The check reads `K_w β` on every point from the active kernels'
    /// rows of the support vectors, a fraction of the forms' pass over every kernel.
    pub(super) fn incomplete_points(&mut self, point: &Point) -> Result<Option<Outcome>> {
        let Some(set) = self.ws.as_ref() else {
            return Ok(None);
        };
        let (stack, y, loss) = (self.stack, self.y, self.cfg.loss);
        let n = y.len();
        let idx = set.idx();
        let alpha = set.alpha(n);
        let beta = scatter_points(&point.beta, idx, n);
        let mut f = vec![0.0; n];
        stack.combined_matvec(&self.w, &beta, &mut f);
        // The SVM's own intercept: the whole problem's optimality at this `β`.
        let z: Vec<f64> = f.iter().map(|fi| fi + point.b).collect();
        let more = new_points(loss, y, &z, &alpha, idx);
        if more.is_empty() {
            return Ok(None);
        }
        self.grow_points(&more, alpha)?;
        Ok(Some(Outcome::Gap {
            gap: f64::INFINITY,
            whole: false,
            new_problem: true,
        }))
    }

    /// The points `more` join the working set (QP variables `alpha` over all points), or the
    /// whole problem takes over when the set would grow too large; the next solve is at the
    /// same weights.
    fn grow_points(&mut self, more: &[usize], alpha: Vec<f64>) -> Result<()> {
        let (stack, y, c) = (self.stack, self.y, self.c);
        let set = self
            .ws
            .as_mut()
            .expect("restricted iterates have a working set");
        if !set.grow(stack, y, c, more, &alpha)? {
            self.ws = None;
            self.whole.set_warm_start(alpha);
        }
        self.next = Next::Recombine;
        Ok(())
    }

    /// The whole problem's values at a restricted iterate at weights `w` (module docs):
    /// `f = K_w β` on every point from the rows of the support vectors, the whole certificate
    /// recorded (the forms `q` are the whole problem's, `β` being zero off the set `idx`).
    /// Returns the relative gap, and the points outside the set that violate optimality, by
    /// the QP variables `alpha` over all points and the whole model.
    fn whole_values(
        &self,
        tracker: &mut Tracker,
        restricted: &Point,
        idx: &[usize],
        alpha: &[f64],
    ) -> (f64, Vec<usize>) {
        let (stack, y, c, cfg, w) = (self.stack, self.y, self.c, self.cfg, &self.w);
        let n = y.len();
        let beta = scatter_points(&restricted.beta, idx, n);
        let mut f = vec![0.0; n];
        stack.combined_matvec(w, &beta, &mut f);
        let b = cfg.loss.best_intercept(y, &f, c, restricted.b);
        let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
        let point = Point {
            beta,
            f,
            b,
            value: f64::NAN,
        };
        let cert = Certificate::new(&self.psd, cfg, y, c, w, &self.q, &point);
        let gap = cert.record(tracker, cfg, w, &point);
        (gap, new_points(cfg.loss, y, &z, alpha, idx))
    }

    /// A restricted iterate of the working set of kernels: `P` is the whole
    /// problem's (`w = 0` off the set), `D` bounds the restricted problem only and is not
    /// recorded; the whole-problem check when one is due.
    pub(super) fn restricted_kernels(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
        mut cert: Certificate,
        prod: Option<Vec<f64>>,
    ) -> ControlFlow<Outcome, Iterate> {
        let rgap = d.checks.restricted_gap(cert.primal, cert.dual);
        // SMO's restricted problems need not be solved far below the whole gap they stand in
        // for: a check is due at a tenth of it (`KSET_TARGET` × the schedule's margin of 1/2).
        let target = if self.smooth {
            self.cfg.tol
        } else {
            self.cfg.tol.max(KSET_TARGET * d.tracker.gap())
        };
        if d.checks.due_after(rgap, target) {
            // Due by its budget: the restricted problem crawls.
            let crawled = !d.checks.reached(rgap, target);
            return self.check_kernels(d, point, crawled);
        }
        d.tracker.note(cert.witness.take());
        cert.dual = f64::NEG_INFINITY;
        // Stops on the best whole dual value so far, if this primal value meets it.
        let gap = cert.record(&mut d.tracker, self.cfg, &self.w, point);
        if gap <= self.cfg.tol {
            return ControlFlow::Break(converged(gap));
        }
        ControlFlow::Continue(Iterate {
            gap: rgap,
            whole: false,
            new_problem: false,
            prod,
        })
    }

    /// The whole-problem check of the working set of kernels: every form, in the one pass
    /// that also gives the products of the kernels that join, and the whole certificate
    /// recorded; then the fit converges, or the set grows by the kernels that can move,
    /// stalls, or backs off.
    fn check_kernels(
        &mut self,
        d: &mut Driver<'_>,
        point: &Point,
        crawled: bool,
    ) -> ControlFlow<Outcome, Iterate> {
        let (y, c, cfg) = (self.y, self.c, self.cfg);
        let prod = forms(self.stack, &point.beta, self.smooth, None, &mut self.q);
        let cert = Certificate::new(&self.psd, cfg, y, c, &self.w, &self.q, point);
        let dual = cert.dual;
        let gap = cert.record(&mut d.tracker, cfg, &self.w, point);
        if gap <= cfg.tol {
            return ControlFlow::Break(converged(gap));
        }
        let set = self
            .kset
            .as_ref()
            .expect("restricted iterates have a set of kernels");
        let mut grown = set.clone();
        grown.extend(
            movable(&self.w, &gradient(&self.w, &self.q, &self.pen))
                .into_iter()
                .filter(|k| set.binary_search(k).is_err()),
        );
        let new_problem = match d.checks.settle(grown.len() > set.len()) {
            Settled::Grew => {
                grown.sort_unstable();
                self.kset = Some(grown);
                d.checks.start(d.tracker.certified(dual));
                true
            }
            Settled::Stalled => return ControlFlow::Break(stalled()),
            Settled::BackedOff if crawled && !self.smooth => {
                // A complete set whose restricted problem crawls: SMO's restricted iterates
                // lack the whole iterates' dual aggregation, which the whole problem takes up
                // again, for good.
                self.kset = None;
                self.kset_done = true;
                self.model = None;
                self.radius = START_RADIUS;
                true
            }
            Settled::BackedOff => false,
        };
        ControlFlow::Continue(Iterate {
            gap,
            whole: true,
            new_problem,
            prod,
        })
    }
}
