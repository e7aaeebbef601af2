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
//!     gaps.observe(gap)          -> stalled: a restricted problem forces a check, else stop
//!     solver.update(driver)      -> the next weights
//! the best iterate, its certificate and the status
//! ```

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
            if let Some(gaps) = self.gaps.as_mut() {
                gaps.observe(gap, new_problem);
                if gaps.is_stalled() {
                    if !solver.restricted() {
                        return Ok((n_iter, SolveStatus::Stalled));
                    }
                    self.checks.force();
                }
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

    /// A solver whose iterates have the gaps of a list (primal 1, dual 1 − gap).
    struct Gaps {
        gaps: Vec<f64>,
        steps: usize,
        updates: usize,
        restricted: bool,
    }

    impl Solver for Gaps {
        fn step(&mut self, driver: &mut Driver<'_>) -> Result<Outcome> {
            let gap = self.gaps[self.steps.min(self.gaps.len() - 1)];
            self.steps += 1;
            let model = || Model {
                coef: vec![0.0],
                intercept: 0.0,
                weights: vec![1.0],
                norms: vec![0.0],
            };
            driver.tracker.record_with(1.0, (1.0 - gap, None), 1, model);
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
    }

    fn gaps(gaps: &[f64]) -> Gaps {
        Gaps {
            gaps: gaps.to_vec(),
            steps: 0,
            updates: 0,
            restricted: false,
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
