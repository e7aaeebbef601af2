//! The certificate bookkeeping shared by every solver: the best primal iterate, the best dual
//! value, the relative gap and the per-iteration history.

use std::time::Instant;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::result::{relative_gap, FitResult, IterRecord, PsdWitness, SolveStatus};
use crate::solvers::witness::stronger;

/// The largest relative excess of a dual value over the best primal value that is put down to
/// rounding; a larger one is discarded (see [`Tracker::record_with`]).
const DUAL_SLACK: f64 = 1e-9;

/// The model of one iterate: `A` (M×n, row-major), the intercept, the kernel weights and the
/// block norms `‖f_m‖`.
pub(crate) struct Model {
    pub coef: Vec<f64>,
    pub intercept: f64,
    pub weights: Vec<f64>,
    pub norms: Vec<f64>,
}

impl Model {
    /// The model `A[m] = scale·θ_m β` of the wrappers around one single-kernel solve, with
    /// intercept `b`, the reported kernel weights and block norms.
    pub fn outer(
        theta: &[f64],
        beta: &[f64],
        scale: f64,
        intercept: f64,
        weights: Vec<f64>,
        norms: Vec<f64>,
    ) -> Model {
        let n = beta.len();
        let mut coef = vec![0.0; theta.len() * n];
        for (row, &t) in coef.chunks_exact_mut(n.max(1)).zip(theta) {
            for (a, &bi) in row.iter_mut().zip(beta) {
                *a = scale * t * bi;
            }
        }
        Model {
            coef,
            intercept,
            weights,
            norms,
        }
    }
}

/// Tracks the iterate with the smallest primal value and the largest dual value seen: both
/// bound the optimum, so together they give the tightest certificate. Shared by every solver
/// that reports `P`, `D` and the gap (ℓp here, SpicyMKL in `solvers::spicy`). Each record is
/// also passed to the caller's [`Interrupt::progress`] (`verbose` logging).
pub(crate) struct Tracker<'a> {
    interrupt: &'a dyn Interrupt,
    start: Instant,
    pub history: Vec<IterRecord>,
    best_primal: f64,
    best_dual: f64,
    /// The best dual value of the records the stall rule watches (all but those recorded
    /// with [`unwatched`](Tracker::unwatched) set).
    watched_dual: f64,
    /// Set for the next record only: its dual value certifies, the stall rule does not see it
    /// (a certificate-only check, docs/mathematics.md §4, "Kernel working set").
    pub unwatched: bool,
    best: Option<Model>,
    witness: Option<PsdWitness>,
    /// The best dual value as computed, witness or not: after a witness the fit stops where
    /// it would have converged (see [`Tracker::record_with`]).
    raw_dual: f64,
    /// Every dual value recorded, as computed: the best ones are chosen again when the best
    /// primal value falls below one of them.
    duals: Vec<f64>,
}

impl<'a> Tracker<'a> {
    pub fn new(interrupt: &'a dyn Interrupt) -> Self {
        Tracker {
            interrupt,
            start: Instant::now(),
            history: Vec::new(),
            best_primal: f64::INFINITY,
            best_dual: f64::NEG_INFINITY,
            watched_dual: f64::NEG_INFINITY,
            unwatched: false,
            best: None,
            witness: None,
            raw_dual: f64::NEG_INFINITY,
            duals: Vec::new(),
        }
    }

    /// Records an iterate of the form `A[m] = θ_m β`, intercept `b`; returns the current
    /// relative gap (`dual` as in [`Tracker::record_with`]).
    pub fn record(
        &mut self,
        primal: f64,
        dual: (f64, Option<PsdWitness>),
        theta: &[f64],
        beta: &[f64],
        b: f64,
        norms: Vec<f64>,
    ) -> f64 {
        let active = theta.iter().filter(|&&t| t > 0.0).count();
        self.record_with(primal, dual, active, || {
            Model::outer(theta, beta, 1.0, b, theta.to_vec(), norms)
        })
    }

    /// Records an iterate with `active` kernels in use; `model` is only built when the
    /// iterate has the best primal value so far. `dual` is the value of a dual point as
    /// computed, with the witness (if any) that the point showed a kernel is not PSD; the
    /// record holds its [`certified`](Tracker::certified) value. Returns the current relative
    /// gap, the one to stop on: after a witness the gap as computed.
    pub fn record_with(
        &mut self,
        primal: f64,
        (raw, witness): (f64, Option<PsdWitness>),
        active: usize,
        model: impl FnOnce() -> Model,
    ) -> f64 {
        self.note(witness);
        let dual = self.certified(raw);
        self.duals.push(raw);
        if primal < self.best_primal {
            self.best_primal = primal;
            self.best = Some(model());
            // A dual value recorded below an earlier, larger primal value can lie above this
            // one: by weak duality its point was not feasible after all (e.g. ε-insensitive
            // SpicyMKL at C = 1e200, which reported a gap of −41 as converged).
            let slack = primal + DUAL_SLACK * primal.abs();
            if self.best_dual > slack || self.raw_dual > slack {
                let valid = self.duals.iter().filter(|&&d| d <= slack);
                self.raw_dual = valid.fold(f64::NEG_INFINITY, |a, &d| a.max(d));
                if self.witness.is_none() {
                    self.best_dual = self.raw_dual;
                }
                self.watched_dual = self.watched_dual.min(self.best_dual);
            }
        }
        // Weak duality: a dual value above a primal one beyond rounding comes from a dual
        // point that is not feasible (e.g. a Newton β a few ulps of its own scale outside the
        // logistic domain, accepted by the conjugate's absolute tolerance when the kernels are
        // scaled by 1e12: gap −8e-3 reported as converged). Such a value certifies nothing.
        // After a witness that a kernel is not PSD no dual value counts (see `certified`).
        let slack = self.best_primal + DUAL_SLACK * self.best_primal.abs();
        if self.witness.is_none() && dual <= slack {
            self.best_dual = self.best_dual.max(dual);
            if !self.unwatched {
                self.watched_dual = self.watched_dual.max(dual);
            }
        }
        self.unwatched = false;
        if raw <= slack {
            self.raw_dual = self.raw_dual.max(raw);
        }
        let gap = relative_gap(self.best_primal, self.best_dual);
        let record = IterRecord {
            primal,
            dual,
            gap,
            active,
            seconds: self.start.elapsed().as_secs_f64(),
            solver: 0,
        };
        self.interrupt.progress(&record);
        self.history.push(record);
        self.gap()
    }

    /// The relative gap of the best values so far, the one to stop on. With a witness the
    /// certified gap is +∞ for good; iterating on to `max_iter` only polishes a model that can
    /// never be certified (docs/mathematics.md §1.8), so the solver is told the gap as
    /// computed and stops where it would have converged; `finish` then reports `Uncertified`.
    pub fn gap(&self) -> f64 {
        let dual = match self.witness {
            Some(_) => self.raw_dual,
            None => self.best_dual,
        };
        relative_gap(self.best_primal, dual)
    }

    /// The relative gap of the best primal value and the best watched dual value.
    pub fn watched_gap(&self) -> f64 {
        match self.witness {
            Some(_) => self.gap(),
            None => relative_gap(self.best_primal, self.watched_dual),
        }
    }

    /// The relative gap [`gap`](Tracker::gap) would be after a record of primal value
    /// `primal` and no dual value (one that moves the gap through the primal alone).
    pub fn gap_with(&self, primal: f64) -> f64 {
        let dual = match self.witness {
            Some(_) => self.raw_dual,
            None => self.best_dual,
        };
        relative_gap(self.best_primal.min(primal), dual)
    }

    /// The dual value `dual` of a dual point, or `−∞` once any dual point of the fit carried
    /// a witness that a kernel is not PSD (one [`note`](Tracker::note)d or recorded): weak
    /// duality needs every kernel PSD, so from then on no dual value certifies anything, not
    /// even those already recorded (docs/mathematics.md §1.8).
    pub fn certified(&self, dual: f64) -> f64 {
        if self.witness.is_some() {
            f64::NEG_INFINITY
        } else {
            dual
        }
    }

    /// Takes note of `witness` (see [`Tracker::certified`]) for a dual point, recorded or
    /// not (a restricted problem's, or one only compared with others). The strongest witness
    /// is kept for the result.
    pub fn note(&mut self, witness: Option<PsdWitness>) {
        if witness.is_some() {
            self.witness = stronger(self.witness, witness);
            self.best_dual = f64::NEG_INFINITY;
        }
    }

    /// The smallest primal value recorded so far.
    pub fn best_primal(&self) -> f64 {
        self.best_primal
    }

    /// The result at the best primal iterate.
    pub fn finish(self, n_iter: usize, status: SolveStatus) -> Result<FitResult> {
        let best = self.best.ok_or_else(|| {
            MkError::Numerical(
                "no finite iterate was produced; rescale the kernels or lower C".into(),
            )
        })?;
        Ok(FitResult {
            coef: best.coef,
            coef_outer: None,
            intercept: best.intercept,
            kernel_weights: best.weights,
            kernel_norms: best.norms,
            primal: self.best_primal,
            dual: self.best_dual,
            gap: relative_gap(self.best_primal, self.best_dual),
            n_iter,
            status: match status {
                SolveStatus::Converged if self.witness.is_some() => SolveStatus::Uncertified,
                s => s,
            },
            history: self.history,
            solver_iters: vec![n_iter],
            psd_witness: self.witness,
            feature_weights: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;

    fn model() -> Model {
        Model {
            coef: vec![0.0; 2],
            intercept: 0.0,
            weights: vec![1.0],
            norms: vec![0.0],
        }
    }

    /// A dual value above the best primal beyond rounding is not a certificate: it is kept in
    /// the history but not in the gap; one within rounding is.
    #[test]
    fn a_dual_above_the_primal_certifies_nothing() {
        let mut t = Tracker::new(&NoInterrupt);
        assert!(t.record_with(1.0, (1.01, None), 1, model).is_infinite());
        assert!((t.record_with(1.0, (0.99, None), 1, model) - 0.01).abs() < 1e-12);
        assert!(t.record_with(1.0, (1.0 + 1e-12, None), 1, model) <= 0.0);
        let r = t.finish(3, SolveStatus::Converged).unwrap();
        assert_eq!(r.history.len(), 3);
        assert_eq!(r.history[0].dual, 1.01);
        assert!(r.dual <= 1.0 + 1e-12);
    }

    /// A dual value that was below the best primal value when recorded, but lies above a
    /// later, smaller one, certifies nothing: the best dual is the best of those still below.
    #[test]
    fn a_dual_above_a_later_primal_is_dropped() {
        let mut t = Tracker::new(&NoInterrupt);
        assert!((t.record_with(10.0, (0.5, None), 1, model) - 9.5 / 10.0).abs() < 1e-12);
        assert!((t.record_with(10.0, (8.0, None), 1, model) - 0.2).abs() < 1e-12);
        // P falls to 4: D = 8 is no lower bound; D = 0.5 is the best left.
        assert!(
            (t.record_with(4.0, (f64::NEG_INFINITY, None), 1, model) - 3.5 / 4.0).abs() < 1e-12
        );
        assert!((t.record_with(4.0, (3.9, None), 1, model) - 0.025).abs() < 1e-12);
        let r = t.finish(4, SolveStatus::MaxIterations).unwrap();
        assert_eq!((r.primal, r.dual), (4.0, 3.9));
    }

    /// A dual point with a witness that a kernel is not PSD certifies nothing, however close
    /// to the primal, and neither does any other dual value of the fit, before or after it;
    /// the result keeps the strongest witness. The solver is still told the gap as computed,
    /// to stop where it would have converged, and such a stop is reported `Uncertified`.
    #[test]
    fn a_witness_leaves_no_certificate() {
        let mut t = Tracker::new(&NoInterrupt);
        let w = |q: f64| PsdWitness {
            kernel: 2,
            quad_form: q,
            bound: 1e-9,
            entry_rounding: 1e-3,
        };
        assert!((t.record_with(1.0, (0.99, None), 1, model) - 0.01).abs() < 1e-12);
        assert!((t.record_with(1.0, (0.9999, Some(w(-0.5))), 1, model) - 1e-4).abs() < 1e-12);
        assert!(t.certified(0.9999).is_infinite());
        let gap = t.record_with(1.0, (0.99999, Some(w(-0.25))), 1, model);
        assert!((gap - 1e-5).abs() < 1e-12);
        assert!(t.certified(0.999).is_infinite());
        // A primal-only record (dual −∞) leaves the best dual as computed where it was.
        let gap = t.record_with(1.0, (f64::NEG_INFINITY, None), 1, model);
        assert!((gap - 1e-5).abs() < 1e-12);
        assert!(t.history[1..].iter().all(|r| r.gap.is_infinite()));
        let r = t.finish(5, SolveStatus::Converged).unwrap();
        assert_eq!(r.status, SolveStatus::Uncertified);
        assert_eq!(r.psd_witness, Some(w(-0.5)));
        assert_eq!(r.dual, f64::NEG_INFINITY);
        assert!(r.gap.is_infinite());
        assert_eq!(r.history[0].dual, 0.99);
    }
}
