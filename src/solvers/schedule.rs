//! When a solver asks its inner solves for more accuracy, and when a working set's restricted
//! iterations give way to a whole-problem check.

use crate::result::relative_gap;

/// The inner accuracy below which a fit that stops progressing is declared stalled.
const MIN_INNER_TOL: f64 = 1e-12;

/// The gap bookkeeping of the problem being iterated (the whole one, or a restricted one):
/// the accuracy asked of the single-kernel solver, the over-relaxation of the θ update, and
/// whether the iteration stalls.
pub(crate) struct GapSchedule {
    /// The smallest inner accuracy: the inner accuracy must not limit the outer gap the
    /// caller asked for, so at most `tol/10`.
    floor: f64,
    inner_tol: f64,
    /// The smallest gap of the current problem, and the iterations since it last shrank.
    best_gap: f64,
    since_best: usize,
    /// Over-relaxation of the θ update (ℓp's `over_relaxation`; 1: none), dropped for good
    /// once the gap fails to shrink.
    omega: f64,
    /// Whether the last observed iteration stalled.
    stalled: bool,
    /// Iterations without progress (at the smallest inner accuracy) that make a stall.
    patience: usize,
}

impl GapSchedule {
    /// The schedule of a fit to relative gap `tol` whose inner solves need at most
    /// `inner_tol`, with the over-relaxation `omega` of its weight update (1: none).
    pub(crate) fn new(tol: f64, inner_tol: f64, omega: f64) -> Self {
        let floor = inner_tol.min(0.1 * tol);
        GapSchedule {
            floor,
            inner_tol: 1e-3f64.max(floor),
            best_gap: f64::INFINITY,
            since_best: 0,
            omega,
            stalled: false,
            patience: 10,
        }
    }

    /// The same schedule with a stall after `patience` iterations without progress.
    pub(crate) fn with_patience(self, patience: usize) -> Self {
        GapSchedule { patience, ..self }
    }

    /// The accuracy of the next single-kernel solve.
    pub(crate) fn inner_tol(&self) -> f64 {
        self.inner_tol
    }

    /// The over-relaxation `ω` of the next θ update.
    pub(crate) fn omega(&self) -> f64 {
        self.omega
    }

    /// Whether the last observed iteration stalled: its gap has not shrunk for `patience`
    /// iterations at the inner accuracy [`MIN_INNER_TOL`] (or the caller's smaller one), so
    /// more accuracy cannot help.
    pub(crate) fn is_stalled(&self) -> bool {
        self.stalled
    }

    /// The recovery from a stall of the driver's rule: the next inner solves at the floor's
    /// accuracy, since inexact inner solutions may be what bounds the gap (the schedule's own
    /// stall rule then decides, and lowers the floor once). False when already there.
    pub(crate) fn tighten(&mut self) -> bool {
        let tighter = self.inner_tol > self.floor;
        self.inner_tol = self.floor;
        tighter
    }

    /// Takes in the relative gap of an iteration; `new_problem` when the iterated problem
    /// changes after it, so that the next gaps are not compared with this one.
    pub(crate) fn observe(&mut self, gap: f64, new_problem: bool) {
        // The inner accuracy follows the outer gap, and is tightened further whenever the gap
        // shrinks slowly: an inexact SVM solution bounds how far the primal can go.
        if gap >= 0.9 * self.best_gap {
            self.inner_tol = (0.1 * self.inner_tol).max(self.floor);
        }
        self.stalled = false;
        if gap < self.best_gap * (1.0 - 1e-9) {
            self.since_best = 0;
        } else {
            self.since_best += 1;
            self.omega = 1.0;
            if self.inner_tol <= self.floor && self.since_best >= self.patience {
                if self.floor > MIN_INNER_TOL {
                    // The inexact inner solutions may be what bounds the gap (seen on small
                    // group problems at 1e-7): tighten once more before calling it a stall.
                    self.floor = (0.01 * self.floor).max(MIN_INNER_TOL);
                    self.inner_tol = self.floor;
                    self.since_best = 0;
                } else {
                    self.stalled = true;
                }
            }
        }
        self.best_gap = self.best_gap.min(gap);
        self.inner_tol = (0.1 * gap.max(0.0)).clamp(self.floor, self.inner_tol);
        if new_problem {
            self.best_gap = f64::INFINITY;
            self.since_best = 0;
        }
    }
}

/// What a whole-problem check that did not converge did to the working set
/// ([`CheckSchedule::settle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settled {
    /// It found violators: the set grows, a new restricted problem with the first budget.
    Grew,
    /// A check forced by a restricted stall found the set complete: the whole problem stalls
    /// with the restricted one.
    Stalled,
    /// The set is complete: the next check waits twice as long.
    BackedOff,
}

/// The restricted iterations between whole-problem checks: their gap, and when the next check
/// is due (the restricted gap is below `margin·tol`, the budget of iterations is spent, or a
/// check was forced).
pub(crate) struct CheckSchedule {
    /// The best dual value since `W` was formed: every restricted `β` is feasible for the whole
    /// dual, and so for every later (larger) restricted one.
    best_dual: f64,
    /// Restricted iterations allowed before a check: 16, doubled after every check that finds
    /// `W` complete.
    budget: i32,
    since_check: i32,
    /// Set when the restricted problem stalls: only a whole-problem check can tell why.
    forced: bool,
    /// The fraction of `tol` the restricted gap must reach before a check: 1/2 by default;
    /// the mirror solver, whose restricted tail converges slowly, checks at `tol`.
    margin: f64,
}

impl CheckSchedule {
    const FIRST_BUDGET: i32 = 16;

    pub(crate) fn new() -> Self {
        CheckSchedule {
            best_dual: f64::NEG_INFINITY,
            budget: Self::FIRST_BUDGET,
            since_check: 0,
            forced: false,
            margin: 0.5,
        }
    }

    /// The same schedule, checking once the restricted gap is below `margin·tol`.
    pub(crate) fn with_margin(self, margin: f64) -> Self {
        CheckSchedule { margin, ..self }
    }

    /// Starts from the dual value `dual` of the whole-problem solution that formed `W`.
    pub(crate) fn start(&mut self, dual: f64) {
        self.best_dual = dual;
    }

    /// The relative gap of a restricted step of values `primal` and `dual`, against the best
    /// dual value so far.
    pub(crate) fn restricted_gap(&mut self, primal: f64, dual: f64) -> f64 {
        self.best_dual = self.best_dual.max(dual);
        relative_gap(primal, self.best_dual)
    }

    /// Counts a restricted iteration of relative gap `rgap`: whether a whole-problem check is
    /// due after it.
    pub(crate) fn due_after(&mut self, rgap: f64, tol: f64) -> bool {
        self.since_check += 1;
        let due = !(!self.reached(rgap, tol) && self.since_check < self.budget && !self.forced);
        if due {
            self.since_check = 0;
        }
        due
    }

    /// Whether a restricted gap `rgap` reached the margin of `tol` that makes a check due (not
    /// the budget or a forced check); a gap that is not a number counts as reached.
    pub(crate) fn reached(&self, rgap: f64, tol: f64) -> bool {
        rgap <= self.margin * tol || rgap.is_nan()
    }

    /// Makes the next check due after the next restricted iteration.
    pub(crate) fn force(&mut self) {
        self.forced = true;
    }

    /// Whether the check under way was forced.
    pub(crate) fn is_forced(&self) -> bool {
        self.forced
    }

    /// At a stall of the iterated problem, whether the fit stalls: a restricted problem's
    /// stall forces a whole-problem check instead (only it can tell why), once.
    pub(crate) fn stalls(&mut self, restricted: bool) -> bool {
        if restricted && !self.is_forced() {
            self.force();
            false
        } else {
            true
        }
    }

    /// After a whole-problem check that did not converge, `grew` when it found violators to
    /// add to the working set: the one rule of every working set (grow, else stall if the
    /// check was forced, else back off).
    pub(crate) fn settle(&mut self, grew: bool) -> Settled {
        if grew {
            self.restart();
            Settled::Grew
        } else if self.forced {
            Settled::Stalled
        } else {
            self.back_off();
            Settled::BackedOff
        }
    }

    /// After a check that grew `W`: a new restricted problem, with the first budget.
    fn restart(&mut self) {
        self.budget = Self::FIRST_BUDGET;
        self.forced = false;
    }

    /// After a check that found `W` complete: twice the budget before the next.
    fn back_off(&mut self) {
        self.budget *= 2;
        self.forced = false;
    }
}
