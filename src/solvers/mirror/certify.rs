//! The certificate-only check of a restricted iterate (docs/mathematics.md §4, "Kernel working
//! set"): the whole problem's dual value at the iterate's dual point, recorded, with nothing
//! else changed.
//!
//! A restricted iterate's `β` is feasible for the whole dual of §1.5; only the forms `q_jk` of
//! the kernels off the working set are missing from its value
//! `D(β) = −C Σ ℓ* − ½ (Σ_j max_{k∈G_j} sqrt(q_jk))²`. Between two whole-problem checks the
//! certified gap moves only with the primal value, and when that crawls the gap can sit still
//! for the budget of restricted iterations (16, 32, 64, …) while the dual value at the current
//! `β` is far better than the last check's. So when the gap has not shrunk by 1 % (the stall
//! rule's progress, §1.9) for [`CERTIFY_RUN`] records and no whole dual value was recorded
//! over as many, the missing forms are read (one pass over the kernels off the set) into a
//! scratch copy and the whole dual value is recorded: the working set, `λ`, `γ`, the step
//! length and the check schedule stay as they were, and the driver's watch of the certified
//! gap (§1.9), whose stalls time mirror descent's recovery, does not see the value. The
//! iterates are those of a fit without it until the certificate reaches `tol`: the fit then
//! stops, converged.

use super::{Mirror, Step};
use crate::penalties::duals::read_forms;
use crate::solvers::driver::{Driver, StallWatch};
#[cfg(doc)]
use crate::solvers::tracker::Tracker;

/// Records without a 1 % smaller certified gap, and without a whole dual value, after which a
/// restricted iterate is certified on the whole problem: half the stall rule's patience, so
/// that a certificate that does not help leaves one more before the patience runs out.
pub(super) const CERTIFY_RUN: usize = 5;

/// The fit's certified gap over its records, its progress counted by the stall rule's own
/// [`StallWatch`] (§1.9), and the records since the last whole dual value.
pub(super) struct Watch {
    /// The records after which a certificate is due ([`CERTIFY_RUN`]; `usize::MAX`: never).
    run: usize,
    /// The certified gap's progress (never restarted by a new problem: the gap is the whole
    /// problem's).
    gaps: StallWatch,
    /// Records since the last one with a whole dual value.
    since_dual: usize,
}

impl Watch {
    /// A certificate after `run` records without progress and without a whole dual value.
    pub(super) fn new(run: usize) -> Self {
        Watch {
            run,
            gaps: StallWatch::new(),
            since_dual: 0,
        }
    }

    /// Takes in the certified gap after a record, and whether the record carried a whole
    /// dual value.
    pub(super) fn observe(&mut self, gap: f64, dual: bool) {
        // Only the count of records without progress is read here, not a stall.
        let _ = self.gaps.observe(gap, false);
        self.since_dual = if dual { 0 } else { self.since_dual + 1 };
    }

    /// Whether a record whose certified gap would be `gap` without a dual value is to be
    /// certified: it would make no progress, and would be the `run`-th record without
    /// progress and without a whole dual value.
    pub(super) fn wants(&self, gap: f64) -> bool {
        !self.gaps.progress(gap)
            && self.gaps.since().min(self.since_dual).saturating_add(1) >= self.run
    }
}

impl Mirror<'_> {
    /// The certificate-only check of the restricted step `st`: the forms `q_jk` of the kernels
    /// off the set at the step's dual point, read into a copy of the set's, and the whole
    /// certificate recorded ([`Mirror::certify_at`]); the certified gap. Nothing the next
    /// step reads is changed, and the driver's stall rule does not see the value
    /// ([`Tracker::unwatched`]): its recoveries, and so the iterates, are those of a fit
    /// without certificate-only checks.
    pub(super) fn certify_only(&self, d: &mut Driver<'_>, st: &Step) -> f64 {
        let off: Vec<usize> = (0..self.stack.m())
            .filter(|&k| !self.state.in_set[k])
            .collect();
        let (mut quad, mut hat_quad) = (self.quad.clone(), self.hat_quad.clone());
        let beta = self.solver.beta();
        let hat = st.hat.as_deref();
        read_forms(self.stack, beta, hat, &off, &mut quad, &mut hat_quad);
        let (point, dq) = match hat {
            Some(hat) => (hat, &hat_quad),
            None => (beta, &quad),
        };
        d.tracker.unwatched = true;
        self.certify_at(d, st, point, dq).0
    }
}
