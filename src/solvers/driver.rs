//! The one loop of the iterative solvers. A solver is a state and its named steps
//! ([`Solver::step`], [`Solver::update`]); the [`Driver`] owns what every solver repeats: the
//! certificate bookkeeping ([`Tracker`]: best `P`, best `D`, gap, history, progress records),
//! the inner accuracy and stall detection ([`GapSchedule`]), the whole-problem checks of a
//! working set ([`CheckSchedule`]), `max_iter`, the interrupt and the final status.
//!
//! ```text
//! for each of max_iter iterations:
//!     stop if interrupted
//!     solver.step(driver)        -> the gap of the recorded iterate, or a final status
//!     converged if the whole problem's gap ≤ tol
//!     gaps.observe(gap)          -> the inner accuracy (solvers with inner solves)
//!     stall.observe(gap)         -> stalled (this gap, or the best certified one): the
//!                                   solver's recovery, which on the whole problem may stop
//!                                   the fit (`Stalled`)
//!     solver.update(driver)      -> the next weights
//! the best iterate, its certificate and the status
//! ```
//!
//! The stall rule is the same for every solver ([`StallWatch`], docs/mathematics.md §1.9): an
//! iterated problem whose gap has not shrunk by [`STALL_SHRINK`] (1 %) over [`STALL_PATIENCE`]
//! (10) iterations has stalled, and so has a restricted one whose fit's best certified gap has
//! not. On a restricted problem the solver recovers and goes on (the schedule's final stall forces a
//! whole-problem check); on the whole problem a solver with inner solves first asks them for
//! more accuracy; then the solver decides ([`Solver::recover`]): by default it goes on while
//! the gap still moves (slow, not frozen), and the fit ends `Stalled` when the gap is frozen. Under `solver="auto"` the wrapper hands
//! over to SpicyMKL at its first stall ([`crate::solvers::continued`]).

use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::schedule::{CheckSchedule, GapSchedule};
use crate::solvers::tracker::Tracker;

/// What one iteration of a solver ended with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Outcome {
    /// An iterate was recorded. `gap` is the relative gap of the problem iterated: the
    /// whole problem's (`whole`: the fit converges when it reaches `tol`), or a restricted
    /// problem's of a working set (its gap decides only the inner accuracy and the checks).
    /// `new_problem`: the iterated problem changes after this iteration (a working set grew,
    /// was formed or dropped), so the next gaps are not compared with this one.
    Gap {
        gap: f64,
        whole: bool,
        new_problem: bool,
    },
    /// The fit ends here with this status (a check that converged or stalled).
    Stop(SolveStatus),
}

/// What a whole-problem check of a working set found (after it recorded the whole problem's
/// certificate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Checked {
    /// The fit ends: converged, or stalled with the restricted problem.
    End(SolveStatus),
    /// The working set grew (or gave way to the whole problem): a new problem.
    Grew,
    /// The working set is complete: the restricted iterations go on.
    BackedOff,
}

/// A solver driven by [`Driver::run`].
pub(crate) trait Solver {
    /// One iteration: the solver's inner solves and its certificate, recorded in
    /// `driver.tracker` (whole-problem checks of a working set included).
    fn step(&mut self, driver: &mut Driver<'_>) -> Result<Outcome>;

    /// Whether the solver iterates a restricted problem now: a stall then forces a
    /// whole-problem check instead of ending the fit (only a check can tell why it stalls).
    fn restricted(&self) -> bool {
        false
    }

    /// What the solver does about a stall ([`StallWatch`]) of the whole problem, once the
    /// inner accuracy cannot be tightened further, or of a restricted one; `frozen` when the
    /// gap did not move at all over the stall (less than [`FROZEN`] of itself). True goes on
    /// (the watch starts over), false ends the fit `Stalled`; a restricted problem goes on
    /// either way (a whole-problem check decides). By default a slow gap goes on and a frozen
    /// one stops.
    fn recover(&mut self, _driver: &mut Driver<'_>, frozen: bool) -> bool {
        !frozen
    }

    /// After an iteration that did not end the fit: the next weights (θ, `d`, …).
    fn update(&mut self, _driver: &Driver<'_>) -> Result<()> {
        Ok(())
    }

    /// The result as the solver reports it (e.g. with its weights in feature space), from the
    /// tracker's, at the best iterate.
    fn finish(&mut self, fit: FitResult) -> Result<FitResult> {
        Ok(fit)
    }
}

/// The loop's state: the certificate so far and the schedules every solver shares.
pub(crate) struct Driver<'a> {
    pub tracker: Tracker<'a>,
    /// Inner accuracy and stall detection, for the solvers with inner solves (`None`: the
    /// fit stops only on `tol` or `max_iter`).
    pub gaps: Option<GapSchedule>,
    pub checks: CheckSchedule,
    pub interrupt: &'a dyn Interrupt,
    pub tol: f64,
    max_iter: usize,
    stall: StallWatch,
    /// The same rule on the best certified gap so far, which no new problem restarts (read
    /// while the problem is restricted).
    certified: StallWatch,
}

/// Iterations without [`STALL_SHRINK`] of the gap that make a stall.
pub(crate) const STALL_PATIENCE: usize = 10;

/// The factor by which the gap must shrink to count as progress: 0.99, 1 %
/// (docs/mathematics.md §1.9).
pub(crate) const STALL_SHRINK: f64 = 0.99;

/// The relative change of the gap below which a stall is frozen: the gap did not move.
pub(crate) const FROZEN: f64 = 1e-9;

/// The stall rule of every solver: the gap of the iterated problem (the whole one, or a
/// working set's restricted one) has not shrunk to [`STALL_SHRINK`] of its value at the last
/// progress for [`STALL_PATIENCE`] iterations. A new problem (a working set formed, grown or
/// dropped) starts the count over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StallWatch {
    /// The gap at the last progress (∞ before the first).
    reference: f64,
    /// Iterations since then.
    since: usize,
    /// The smallest gap since then.
    least: f64,
}

/// A stall found by [`StallWatch::observe`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stall {
    /// The gap did not move by [`FROZEN`] of itself since the last progress.
    pub frozen: bool,
}

impl StallWatch {
    pub(crate) fn new() -> Self {
        StallWatch {
            reference: f64::INFINITY,
            since: 0,
            least: f64::INFINITY,
        }
    }

    /// Takes in the gap of an iteration: the stall of the iterated problem, if it stalled.
    pub(crate) fn observe(&mut self, gap: f64, new_problem: bool) -> Option<Stall> {
        if self.progress(gap) {
            (self.reference, self.least, self.since) = (gap, gap, 0);
        } else {
            self.since += 1;
            self.least = self.least.min(gap);
        }
        let stall = (self.since >= STALL_PATIENCE).then_some(Stall {
            frozen: self.least >= self.reference * (1.0 - FROZEN),
        });
        if new_problem {
            *self = StallWatch::new();
        }
        stall
    }

    /// Whether `gap` is progress: [`STALL_SHRINK`] of the gap at the last progress, or the
    /// first gap.
    pub(crate) fn progress(&self, gap: f64) -> bool {
        gap <= STALL_SHRINK * self.reference || self.reference.is_infinite()
    }

    /// Iterations since the last progress.
    pub(crate) fn since(&self) -> usize {
        self.since
    }

    /// Starts the count over from the gap now (after a recovery or a forced check).
    pub(crate) fn restart(&mut self) {
        (self.reference, self.since) = (self.least, 0);
    }
}

impl<'a> Driver<'a> {
    /// The loop of a fit to relative gap `tol` in at most `max_iter` iterations.
    pub fn new(tol: f64, max_iter: usize, interrupt: &'a dyn Interrupt) -> Self {
        Driver {
            tracker: Tracker::new(interrupt),
            gaps: None,
            checks: CheckSchedule::new(),
            interrupt,
            tol,
            max_iter,
            stall: StallWatch::new(),
            certified: StallWatch::new(),
        }
    }

    /// The same loop with whole-problem checks scheduled by `checks`.
    pub fn with_checks(self, checks: CheckSchedule) -> Self {
        Driver { checks, ..self }
    }

    /// The same loop with inner solves scheduled by `gaps`.
    pub fn with_gaps(self, gaps: GapSchedule) -> Self {
        Driver {
            gaps: Some(gaps),
            ..self
        }
    }

    /// The accuracy of the next inner solve (`tol/10` without a schedule).
    pub fn inner_tol(&self) -> f64 {
        self.gaps
            .as_ref()
            .map_or(0.1 * self.tol, GapSchedule::inner_tol)
    }

    /// The over-relaxation of the next weight update (1 without a schedule).
    pub fn omega(&self) -> f64 {
        self.gaps.as_ref().map_or(1.0, GapSchedule::omega)
    }

    /// Runs `solver` to `tol`, a stall, `max_iter` or an interrupt: the result at the best
    /// iterate with its number of iterations and status.
    pub fn run(mut self, solver: &mut impl Solver) -> Result<FitResult> {
        let (n_iter, status) = self.iterate(solver)?;
        solver.finish(self.tracker.finish(n_iter, status)?)
    }

    fn iterate(&mut self, solver: &mut impl Solver) -> Result<(usize, SolveStatus)> {
        for n_iter in 1..=self.max_iter {
            self.interrupt.check()?;
            let (gap, new_problem) = match solver.step(self)? {
                Outcome::Stop(status) => return Ok((n_iter, status)),
                Outcome::Gap { gap, whole, .. } if whole && gap <= self.tol => {
                    return Ok((n_iter, SolveStatus::Converged))
                }
                Outcome::Gap {
                    gap, new_problem, ..
                } => (gap, new_problem),
            };
            // A restricted problem's certificate can stall while the iterated gap moves: each
            // growth of its working set is a new problem and starts the iterated count over.
            // Certificate-only dual values (group MKL's) are not watched: the recoveries stay
            // timed by the solver's own iterates.
            let certified = self.certified.observe(self.tracker.watched_gap(), false);
            let stall = self
                .stall
                .observe(gap, new_problem)
                .or(certified.filter(|_| solver.restricted()));
            // The inner solves' schedule has a stall rule of its own (no progress at their
            // finest accuracy for its patience): final.
            let exhausted = self.gaps.as_mut().is_some_and(|gaps| {
                gaps.observe(gap, new_problem);
                gaps.is_stalled()
            });
            if exhausted || stall.is_some() {
                let frozen = stall.is_some_and(|s| s.frozen);
                if solver.restricted() {
                    // Only a whole-problem check can tell why a restricted problem stalls; a
                    // forced check that finds the set complete ends the fit, so only the
                    // schedule's final stall forces one (the checks' budget paces the rest).
                    // The solver still recovers (e.g. changes its step); it cannot end the fit.
                    if exhausted {
                        self.checks.force();
                    } else {
                        solver.recover(self, frozen);
                    }
                } else if exhausted
                    || (!self.gaps.as_mut().is_some_and(GapSchedule::tighten)
                        && !solver.recover(self, frozen))
                {
                    return Ok((n_iter, SolveStatus::Stalled));
                }
                self.stall.restart();
                self.certified.restart();
            }
            solver.update(self)?;
        }
        Ok((self.max_iter, SolveStatus::MaxIterations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::solvers::tracker::Model;

    /// The model of the test solvers' iterates: one kernel, nothing fitted.
    fn one_kernel() -> Model {
        Model {
            coef: vec![0.0],
            intercept: 0.0,
            weights: vec![1.0],
            norms: vec![0.0],
        }
    }

    /// A solver whose iterates have the gaps of a list (primal 1, dual 1 − gap).
    struct Gaps {
        gaps: Vec<f64>,
        steps: usize,
        updates: usize,
        restricted: bool,
        /// The recoveries the solver grants (`None`: the default rule), and the `frozen` flag
        /// of every stall it was asked about.
        recoveries: Option<usize>,
        stalls: Vec<bool>,
    }

    impl Solver for Gaps {
        fn step(&mut self, driver: &mut Driver<'_>) -> Result<Outcome> {
            let gap = self.gaps[self.steps.min(self.gaps.len() - 1)];
            self.steps += 1;
            driver
                .tracker
                .record_with(1.0, (1.0 - gap, None), 1, one_kernel);
            Ok(Outcome::Gap {
                gap,
                whole: true,
                new_problem: false,
            })
        }
        fn restricted(&self) -> bool {
            self.restricted
        }
        fn update(&mut self, _driver: &Driver<'_>) -> Result<()> {
            self.updates += 1;
            Ok(())
        }
        fn recover(&mut self, _driver: &mut Driver<'_>, frozen: bool) -> bool {
            self.stalls.push(frozen);
            match self.recoveries {
                Some(allowed) => self.stalls.len() <= allowed,
                None => !frozen,
            }
        }
    }

    fn gaps(gaps: &[f64]) -> Gaps {
        Gaps {
            gaps: gaps.to_vec(),
            steps: 0,
            updates: 0,
            restricted: false,
            recoveries: None,
            stalls: Vec::new(),
        }
    }

    /// [`gaps`] with a solver that grants `allowed` recoveries.
    fn recovering(list: &[f64], allowed: usize) -> Gaps {
        Gaps {
            recoveries: Some(allowed),
            ..gaps(list)
        }
    }

    #[test]
    fn it_stops_at_tol_with_no_update_after_the_last_step() {
        let mut s = gaps(&[0.5, 0.1, 1e-4, 1e-9]);
        let r = Driver::new(1e-3, 100, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!((r.n_iter, r.status), (3, SolveStatus::Converged));
        assert_eq!((s.steps, s.updates), (3, 2));
        assert_eq!(r.history.len(), 3);
    }

    #[test]
    fn it_stops_at_max_iter() {
        let mut s = gaps(&[0.5]);
        let r = Driver::new(1e-3, 7, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(
            (r.n_iter, r.status, s.steps),
            (7, SolveStatus::MaxIterations, 7)
        );
    }

    /// A gap that stops shrinking stalls the whole problem; a restricted one forces a check.
    #[test]
    fn a_stall_ends_the_whole_problem_and_forces_a_check_of_a_restricted_one() {
        let schedule = || GapSchedule::new(1e-6, 1e-12, 1.0).with_patience(3);
        let mut s = gaps(&[0.5]);
        let r = Driver::new(1e-6, 1000, &NoInterrupt)
            .with_gaps(schedule())
            .run(&mut s)
            .unwrap();
        assert_eq!(r.status, SolveStatus::Stalled);
        assert!(r.n_iter < 1000);
        let mut s = Gaps {
            restricted: true,
            ..gaps(&[0.5])
        };
        let mut d = Driver::new(1e-6, 1000, &NoInterrupt).with_gaps(schedule());
        let (n, status) = d.iterate(&mut s).unwrap();
        assert_eq!((n, status), (1000, SolveStatus::MaxIterations));
        assert!(d.checks.is_forced());
    }

    /// The rule of every solver: a frozen gap ends the fit after exactly `STALL_PATIENCE`
    /// iterations; a slow one (0.1 % per iteration) goes on by default and stalls a solver
    /// that has no recovery at the same point; 2 % per iteration never stalls.
    #[test]
    fn a_gap_that_stops_shrinking_by_one_percent_stalls_within_the_patience() {
        let mut s = gaps(&[0.5]);
        let r = Driver::new(1e-6, 1000, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(
            (r.status, r.n_iter),
            (SolveStatus::Stalled, 1 + STALL_PATIENCE)
        );
        let slow: Vec<f64> = (0..300).map(|k| 0.5 * 0.999f64.powi(k)).collect();
        let mut s = gaps(&slow);
        let r = Driver::new(1e-9, 200, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(r.status, SolveStatus::MaxIterations);
        let mut s = recovering(&slow, 0);
        let r = Driver::new(1e-9, 200, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(
            (r.status, r.n_iter),
            (SolveStatus::Stalled, 1 + STALL_PATIENCE)
        );
        // 2 % per iteration: progress every iteration, on to max_iter.
        let steady: Vec<f64> = (0..300).map(|k| 0.5 * 0.98f64.powi(k)).collect();
        let mut s = gaps(&steady);
        let r = Driver::new(1e-9, 200, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(r.status, SolveStatus::MaxIterations);
        // 1.1 % every 9th iteration is progress (the shrink since the last progress counts).
        let stepped: Vec<f64> = (0..300).map(|k| 0.5 * 0.989f64.powi(k / 9)).collect();
        let mut s = gaps(&stepped);
        let r = Driver::new(1e-9, 200, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(r.status, SolveStatus::MaxIterations);
    }

    /// A restricted solver whose working set grows every 4 iterations (each a new problem
    /// whose gap falls) while the recorded certificate never moves: the rule on the certified
    /// gap asks it to recover after `STALL_PATIENCE` iterations, and again after as many, and
    /// the fit goes on (a restricted problem is not ended by a stall).
    #[test]
    fn a_certificate_that_never_moves_is_a_stall_whatever_the_working_set_does() {
        struct Growing {
            steps: usize,
            recovered_at: Vec<usize>,
        }
        impl Solver for Growing {
            fn step(&mut self, driver: &mut Driver<'_>) -> Result<Outcome> {
                self.steps += 1;
                driver.tracker.record_with(1.0, (0.5, None), 1, one_kernel);
                Ok(Outcome::Gap {
                    gap: 0.5f64.powi(1 + (self.steps % 4) as i32),
                    whole: false,
                    new_problem: self.steps % 4 == 3,
                })
            }
            fn restricted(&self) -> bool {
                true
            }
            fn recover(&mut self, _driver: &mut Driver<'_>, _frozen: bool) -> bool {
                self.recovered_at.push(self.steps);
                false
            }
        }
        let mut s = Growing {
            steps: 0,
            recovered_at: Vec::new(),
        };
        let r = Driver::new(1e-6, 30, &NoInterrupt).run(&mut s).unwrap();
        assert_eq!(r.status, SolveStatus::MaxIterations);
        let patience = STALL_PATIENCE + 1;
        assert_eq!(s.recovered_at, [patience, patience + STALL_PATIENCE]);
    }

    /// A solver that recovers twice from a stall: the fit stalls after three patiences.
    #[test]
    fn a_recovery_restarts_the_count_until_the_solver_has_nothing_left() {
        let mut s = recovering(&[0.5], 2);
        let r = Driver::new(1e-6, 1000, &NoInterrupt).run(&mut s).unwrap();
        assert!(s.stalls.iter().all(|&frozen| frozen));
        assert_eq!((r.status, s.stalls.len()), (SolveStatus::Stalled, 3));
        assert_eq!(r.n_iter, 1 + 3 * STALL_PATIENCE);
        // With inner solves, the schedule's own stall rule (its patience at its finest
        // accuracy) is final, whatever the solver's recovery.
        let mut s = recovering(&[0.5], 2);
        let schedule = GapSchedule::new(1e-6, 1e-12, 1.0).with_patience(30);
        let r = Driver::new(1e-6, 1000, &NoInterrupt)
            .with_gaps(schedule)
            .run(&mut s)
            .unwrap();
        assert_eq!(r.status, SolveStatus::Stalled);
        assert!(r.n_iter <= 1 + 3 * STALL_PATIENCE + 9, "{}", r.n_iter);
    }

    #[test]
    fn an_interrupt_stops_it_before_the_next_step() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let stop = || calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 2;
        let mut s = gaps(&[0.5]);
        let err = Driver::new(1e-3, 100, &stop).run(&mut s).unwrap_err();
        assert!(matches!(err, crate::error::MkError::Interrupted));
        assert_eq!(s.steps, 2);
    }
}
