//! Error mapping and the Ctrl-C bridge shared by every binding.

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

use crate::error::MkError;

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

/// Asks the interpreter, from the calling thread with the GIL released, whether Ctrl-C was
/// pressed. Solvers call it from their outer loop only, never from rayon workers.
pub(crate) fn signals_pending() -> bool {
    Python::attach(|py| py.check_signals().is_err())
}
