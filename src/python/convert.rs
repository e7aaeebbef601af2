//! Error mapping and the Ctrl-C bridge shared by every binding.

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::parallel::with_pool;

pyo3::create_exception!(
    _core,
    StackTooLargeError,
    PyValueError,
    "A kernel stack would not fit in memory."
);

/// Maps an engine error to the Python exception a user expects.
pub(crate) fn to_py(err: MkError) -> PyErr {
    match err {
        MkError::Interrupted => PyKeyboardInterrupt::new_err("multikernel computation interrupted"),
        MkError::TooLarge(msg) => StackTooLargeError::new_err(msg),
        MkError::Linalg(msg) => Python::attach(|py| {
            match py
                .import("numpy.linalg")
                .and_then(|m| m.getattr("LinAlgError"))
            {
                Ok(cls) => match cls.call1((msg,)) {
                    Ok(v) => PyErr::from_value(v),
                    Err(e) => e,
                },
                Err(e) => e,
            }
        }),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Runs `f` with the GIL released on a worker thread inside the pool of `n_threads`, while the
/// calling (main) thread waits and polls for Ctrl-C every 50 ms: Python runs signal handlers on
/// the main thread only, so the solver itself cannot ask. A pending signal sets the flag the
/// solver's [`Interrupt`] reads, and the solver returns `Interrupted` at its next check.
pub(crate) fn run_detached<R: Send>(
    py: Python<'_>,
    n_threads: usize,
    f: impl FnOnce(&dyn Interrupt) -> Result<R> + Send,
) -> PyResult<R> {
    let cancel = AtomicBool::new(false);
    let result = py.detach(|| {
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            let cancel = &cancel;
            scope.spawn(move || {
                let stop = || cancel.load(Ordering::Relaxed);
                let r = with_pool(n_threads, || f(&stop)).and_then(|r| r);
                // The receiver outlives the scope: a send cannot fail.
                let _ = tx.send(r);
            });
            loop {
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(r) => return r,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if Python::attach(|py| py.check_signals().is_err()) {
                            cancel.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(MkError::Linalg("the solver thread panicked".into()))
                    }
                }
            }
        })
    });
    result.map_err(to_py)
}
