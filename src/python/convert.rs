//! Error mapping, panic capture, progress and the Ctrl-C bridge shared by every binding.

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::CsrMatrix;
use crate::parallel::{with_own_pool, with_pool};
use crate::result::IterRecord;

/// Raises the class `name` of `multikernel.exceptions` with `message` and keyword attributes.
fn raise(name: &str, message: String, attrs: &[(&str, Option<Py<PyAny>>)]) -> PyErr {
    Python::attach(|py| {
        let make = || -> PyResult<PyErr> {
            let cls = py.import("multikernel.exceptions")?.getattr(name)?;
            let kwargs = PyDict::new(py);
            for (key, value) in attrs {
                kwargs.set_item(key, value)?;
            }
            Ok(PyErr::from_value(
                cls.call((message.clone(),), Some(&kwargs))?,
            ))
        };
        make().unwrap_or_else(|e| e)
    })
}

impl From<MkError> for PyErr {
    /// [`to_py`], so that the binding propagates engine errors with `?`.
    fn from(err: MkError) -> PyErr {
        to_py(err)
    }
}

/// Maps an engine error to the class of `multikernel.exceptions` a user expects (each also a
/// built-in: `ValueError`, `MemoryError`, `LinAlgError`, `RuntimeError`), with the kernel
/// and the entry as attributes where the error names them.
fn to_py(err: MkError) -> PyErr {
    let message = err.to_string();
    let some = |v: Py<PyAny>| Some(v);
    let located = |kernel: Option<usize>, entry: Option<(usize, usize)>| {
        Python::attach(|py| {
            [
                (
                    "kernel",
                    kernel.map(|k| k.into_pyobject(py).unwrap().into_any().unbind()),
                ),
                (
                    "entry",
                    entry.map(|e| e.into_pyobject(py).unwrap().into_any().unbind()),
                ),
            ]
        })
    };
    match err {
        MkError::Interrupted => PyKeyboardInterrupt::new_err("multikernel computation interrupted"),
        MkError::InvalidConfig { field, .. } => {
            let name = Python::attach(|py| field.into_pyobject(py).unwrap().into_any().unbind());
            raise(
                "InvalidParameterError",
                message,
                &[("parameter", some(name))],
            )
        }
        MkError::Shape(_) | MkError::Unsupported(_) => raise("InvalidInputError", message, &[]),
        MkError::NonFinite { kernel, entry, .. } => {
            raise("NonFiniteError", message, &located(kernel, entry))
        }
        MkError::NotSymmetric { kernel, entry, .. } => raise(
            "KernelNotSymmetricError",
            message,
            &located(Some(kernel), Some(entry)),
        ),
        MkError::NotPsd { kernel, entry, .. } => raise(
            "KernelNotPSDError",
            message,
            &located(Some(kernel), Some(entry)),
        ),
        MkError::KernelFunction { kernel, .. } => {
            raise("InvalidInputError", message, &located(Some(kernel), None))
        }
        MkError::TooLarge { .. } => raise("StackTooLargeError", message, &[]),
        MkError::Numerical(_) => raise("NumericalError", message, &[]),
        MkError::Panic(_) => raise("InternalError", message, &[]),
    }
}

/// `multikernel.exceptions.InvalidInputError` (a `ValueError`) with `message`, for what the
/// binding itself finds wrong with its arguments.
pub(crate) fn input_error(message: impl Into<String>) -> PyErr {
    raise("InvalidInputError", message.into(), &[])
}

/// A sparse matrix as it crosses the binding: its CSR arrays `(data, indices, indptr,
/// n_cols)` (float64, int64, int64; canonical: each row's indices sorted, no duplicates).
pub(crate) type CsrArrays<'a> = (
    PyReadonlyArray1<'a, f64>,
    PyReadonlyArray1<'a, i64>,
    PyReadonlyArray1<'a, i64>,
    usize,
);

/// The matrix of `arrays`, checked by [`CsrMatrix::new`].
pub(crate) fn csr_matrix(arrays: &CsrArrays<'_>) -> PyResult<CsrMatrix> {
    let (data, indices, indptr, ncols) = arrays;
    let index = |a: &PyReadonlyArray1<'_, i64>| -> PyResult<Vec<usize>> {
        a.as_array()
            .iter()
            .map(|&v| usize::try_from(v).map_err(|_| input_error("a negative sparse index")))
            .collect()
    };
    let (indptr, indices) = (index(indptr)?, index(indices)?);
    Ok(CsrMatrix::new(
        *ncols,
        indptr,
        indices,
        data.as_array().to_vec(),
    )?)
}

/// The message of a caught panic.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f`, turning a panic (on this thread or re-raised by rayon from a worker) into
/// [`MkError::Panic`], so it reaches Python as `InternalError`, never as `PanicException`
/// (a `BaseException` that `except Exception` misses).
pub(crate) fn no_panic<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(MkError::Panic(panic_message(p))))
}

/// What a solver on the worker thread sees: the Ctrl-C flag the main thread sets, and the
/// channel its iteration records go through (only when Python asked for them).
struct Bridge<'a> {
    cancel: &'a AtomicBool,
    progress: Option<mpsc::Sender<IterRecord>>,
    /// The kernels of a Gram stack computed so far.
    kernels: AtomicUsize,
}

impl Interrupt for Bridge<'_> {
    fn requested(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    fn progress(&self, record: &IterRecord) {
        if let Some(tx) = &self.progress {
            // A send only fails once the main thread has returned; nothing is lost then.
            let _ = tx.send(*record);
        }
    }

    fn kernels_done(&self, count: usize) {
        self.kernels.fetch_add(count, Ordering::Relaxed);
    }
}

/// What the main thread hands to Python while a computation runs: a solver's iteration
/// records (`(primal, dual, gap, active, seconds)` per call), or the number of kernels of a
/// Gram stack computed so far (one `int` per call, when it grew).
#[derive(Clone, Copy)]
pub(crate) enum Report<'a, 'py> {
    Iterations(&'a Bound<'py, PyAny>),
    Kernels(&'a Bound<'py, PyAny>),
}

/// Runs `f` with the GIL released on a worker thread inside the pool of `n_threads`, while the
/// calling (main) thread waits, polls for Ctrl-C every 50 ms and hands the solver's iteration
/// records to `on_iteration`: Python runs signal handlers on the main thread only, so the
/// solver itself cannot ask, and the solver's loop never waits for the GIL (a record is one
/// channel send). A pending signal sets the flag the solver's [`Interrupt`] reads, and the
/// solver returns `Interrupted` at its next check.
pub(crate) fn run_detached<R: Send>(
    py: Python<'_>,
    n_threads: usize,
    on_iteration: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce(&dyn Interrupt) -> Result<R> + Send,
) -> PyResult<R> {
    run_reporting(py, n_threads, on_iteration.map(Report::Iterations), f)
}

/// [`run_detached`] in a pool of its own ([`with_own_pool`]): for a solver that calls back
/// into Python for work that runs the engine in this process.
pub(crate) fn run_detached_apart<R: Send>(
    py: Python<'_>,
    n_threads: usize,
    on_iteration: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce(&dyn Interrupt) -> Result<R> + Send,
) -> PyResult<R> {
    run_in(py, true, n_threads, on_iteration.map(Report::Iterations), f)
}

/// [`run_detached`] with either kind of [`Report`].
pub(crate) fn run_reporting<R: Send>(
    py: Python<'_>,
    n_threads: usize,
    report: Option<Report<'_, '_>>,
    f: impl FnOnce(&dyn Interrupt) -> Result<R> + Send,
) -> PyResult<R> {
    run_in(py, false, n_threads, report, f)
}

/// Runs `f` on a thread of its own, in the shared pool or one of its own (`apart`), panics
/// caught, and waits for it, calling `tick` every 50 ms meanwhile (where the caller checks
/// for signals and delivers the callbacks).
fn solve_waiting<R: Send>(
    apart: bool,
    n_threads: usize,
    bridge: &Bridge<'_>,
    f: impl FnOnce(&dyn Interrupt) -> Result<R> + Send,
    mut tick: impl FnMut(),
) -> Result<R> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        scope.spawn(move || {
            let r = no_panic(|| {
                let run = || f(bridge);
                match apart {
                    true => with_own_pool(n_threads, run),
                    false => with_pool(n_threads, run),
                }
                .and_then(|r| r)
            });
            // The receiver outlives the scope: a send cannot fail.
            let _ = tx.send(r);
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => return r,
                Err(mpsc::RecvTimeoutError::Timeout) => tick(),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(MkError::Panic(
                        "the solver thread ended without a result".into(),
                    ))
                }
            }
        }
    })
}

/// [`run_reporting`] in the shared pool, or in one of its own (`apart`).
fn run_in<R: Send>(
    py: Python<'_>,
    apart: bool,
    n_threads: usize,
    report: Option<Report<'_, '_>>,
    f: impl FnOnce(&dyn Interrupt) -> Result<R> + Send,
) -> PyResult<R> {
    let cancel = AtomicBool::new(false);
    let (rec_tx, rec_rx) = mpsc::channel::<IterRecord>();
    let (on_iteration, on_kernels) = match report {
        Some(Report::Iterations(c)) => (Some(c.clone().unbind()), None),
        Some(Report::Kernels(c)) => (None, Some(c.clone().unbind())),
        None => (None, None),
    };
    let bridge = Bridge {
        cancel: &cancel,
        progress: on_iteration.as_ref().map(|_| rec_tx),
        kernels: AtomicUsize::new(0),
    };
    let reported = AtomicUsize::new(0);
    let mut callback_error: Option<PyErr> = None;
    // The KeyboardInterrupt that `check_signals` raised: re-raised even when the solver finished
    // before its next check, or a Ctrl-C that lands in a fit's last 50 ms is lost.
    let mut signal: Option<PyErr> = None;
    // Behind a mutex only to be `Sync`, as what `detach` captures must be; never contended.
    let rec_rx = std::sync::Mutex::new(rec_rx);
    let deliver = |callback_error: &mut Option<PyErr>| {
        if let Some(cb) = &on_kernels {
            let done = bridge.kernels.load(Ordering::Relaxed);
            if done != reported.swap(done, Ordering::Relaxed) {
                if let Err(e) = Python::attach(|py| cb.call1(py, (done,))) {
                    callback_error.get_or_insert(e);
                }
            }
        }
        if let Some(cb) = &on_iteration {
            let records = rec_rx.lock().unwrap_or_else(|e| e.into_inner());
            Python::attach(|py| {
                for r in records.try_iter() {
                    let args = (r.primal, r.dual, r.gap, r.active, r.seconds);
                    if let Err(e) = cb.call1(py, args) {
                        callback_error.get_or_insert(e);
                    }
                }
            });
        }
    };
    let result = py.detach(|| {
        solve_waiting(apart, n_threads, &bridge, f, || {
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                signal.get_or_insert(e);
                cancel.store(true, Ordering::Relaxed);
            }
            deliver(&mut callback_error);
        })
    });
    deliver(&mut callback_error);
    if let Some(e) = signal {
        return Err(e);
    }
    let value = result?;
    match callback_error {
        Some(e) => Err(e),
        None => Ok(value),
    }
}

/// Runs a short computation with the GIL released in the pool of `n_threads`, panics caught.
pub(crate) fn detached<R: Send>(
    py: Python<'_>,
    n_threads: usize,
    f: impl FnOnce() -> Result<R> + Send,
) -> PyResult<R> {
    py.detach(|| no_panic(|| with_pool(n_threads, f).and_then(|r| r)))
        .map_err(PyErr::from)
}
