//! Cooperative cancellation and progress. Solvers poll an [`Interrupt`] from their outer loop on
//! the calling thread (never from rayon workers) and tell it of every outer iteration; the
//! Python binding implements it with `check_signals` and a channel to Python's `logging`.

use crate::error::{MkError, Result};
use crate::result::IterRecord;

/// The caller's side of a long computation: asked every so often whether to stop, and told of
/// each outer iteration of a solver.
pub trait Interrupt: Sync {
    /// `true` when the computation must stop now.
    fn requested(&self) -> bool;

    /// Called once per outer iteration with its record (`verbose` logging). It runs on the
    /// solver's thread inside the loop, so it must be cheap: the default does nothing.
    fn progress(&self, _record: &IterRecord) {}

    /// Told that `count` more kernels of a Gram stack are computed (a progress bar over the
    /// kernels). Called from rayon's workers as each finishes, so it must be cheap: the
    /// default does nothing.
    fn kernels_done(&self, _count: usize) {}

    /// `Err(Interrupted)` when a stop was requested.
    fn check(&self) -> Result<()> {
        if self.requested() {
            Err(MkError::Interrupted)
        } else {
            Ok(())
        }
    }
}

/// Never interrupts: for pure-Rust callers, tests and benches.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInterrupt;

impl Interrupt for NoInterrupt {
    fn requested(&self) -> bool {
        false
    }
}

impl<F: Fn() -> bool + Sync> Interrupt for F {
    fn requested(&self) -> bool {
        self()
    }
}
