//! One error type for the whole engine. Variants carry data (the kernel, the entry, the sizes),
//! not only text, so the Python binding can raise the matching class of
//! `multikernel.exceptions` with those values as attributes; no panic ever has to carry an
//! error to Python.

use thiserror::Error;

/// Every failure the engine can report.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MkError {
    /// A setting or argument is outside its valid range.
    #[error("{}", setting_message(field, reason))]
    InvalidConfig { field: String, reason: String },
    /// Arrays whose shapes do not fit together.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// Input data with NaN or infinite values (`what` names it, e.g. "kernel 3"); `kernel`
    /// and `entry` locate it in a stack.
    #[error("{what} contains NaN or infinity{}", locate(*.entry))]
    NonFinite {
        what: String,
        kernel: Option<usize>,
        entry: Option<(usize, usize)>,
    },
    /// A kernel matrix that is not symmetric: `K[i, j] ≠ K[j, i]` beyond the tolerance.
    #[error(
        "kernel {kernel} is not symmetric: K[{i},{j}] = {} but K[{j},{i}] = {}; \
         symmetrise it, e.g. (K + K.T) / 2, if the difference is rounding",
        number(*.value),
        number(*.mirror),
        i = entry.0,
        j = entry.1
    )]
    NotSymmetric {
        kernel: usize,
        /// The most asymmetric entry `(i, j)`, `i > j`.
        entry: (usize, usize),
        value: f64,
        mirror: f64,
    },
    /// A kernel matrix that cannot be positive semi-definite.
    #[error("kernel {kernel} is not positive semi-definite: {reason}")]
    NotPsd {
        kernel: usize,
        entry: (usize, usize),
        reason: String,
    },
    /// A numerical failure: a factorisation that failed, no finite iterate.
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// The result would not fit in memory (`needed` and `available` in bytes).
    #[error("{what} needs {:.2} GiB but only {:.2} GiB is available; {advice}", gib(*.needed), gib(*.available))]
    TooLarge {
        what: String,
        needed: u64,
        available: u64,
        advice: String,
    },
    /// A kernel evaluated by the caller (a [`crate::kernels::BlockKernel`]) failed or returned
    /// a block of the wrong shape.
    #[error("kernel {kernel}: {reason}")]
    KernelFunction { kernel: usize, reason: String },
    /// A size beyond what the engine's indices can address.
    #[error("{0}")]
    Unsupported(String),
    /// The caller asked to stop (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// A bug: a panic caught at the boundary (the message is the panic's).
    #[error("internal error (please report it): {0}")]
    Panic(String),
}

/// "C must be positive" when the reason is a predicate, "y: need at least 2 samples" otherwise.
fn setting_message(field: &str, reason: &str) -> String {
    if reason.starts_with("must ") || reason.starts_with("is ") {
        format!("{field} {reason}")
    } else {
        format!("{field}: {reason}")
    }
}

fn locate(entry: Option<(usize, usize)>) -> String {
    entry.map_or(String::new(), |(i, j)| {
        format!(" (first at entry [{i}, {j}])")
    })
}

/// `x` for a message: exact (the shortest digits that read back as `x`), in scientific
/// notation when plain digits would run long (`3.99e-20`, not `0.0000000000000000000399`).
fn number(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

impl MkError {
    /// Shorthand for [`MkError::InvalidConfig`].
    pub fn config(field: &str, reason: impl Into<String>) -> Self {
        MkError::InvalidConfig {
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`MkError::NonFinite`] of data that is not a kernel.
    pub fn non_finite(what: impl Into<String>) -> Self {
        MkError::NonFinite {
            what: what.into(),
            kernel: None,
            entry: None,
        }
    }
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, MkError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_write_numbers_exactly_and_short() {
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(-1.0), "-1");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(3.985584816172786e-20), "3.985584816172786e-20");
        assert_eq!(number(-2.5e17), "-2.5e17");
        let e = MkError::NotSymmetric {
            kernel: 0,
            entry: (1, 0),
            value: 3.985584816172786e-20,
            mirror: 0.0,
        };
        assert!(e
            .to_string()
            .contains("K[1,0] = 3.985584816172786e-20 but K[0,1] = 0;"));
    }
}
