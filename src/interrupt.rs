//! Cooperative cancellation. Solvers poll an [`Interrupt`] from their outer loop on the calling
//! thread (never from rayon workers); the Python binding implements it with `check_signals`.

use crate::error::{MkError, Result};

/// Something a long computation asks, every so often, whether it should stop.
pub trait Interrupt: Sync {
    /// `true` when the computation must stop now.
    fn requested(&self) -> bool;

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
