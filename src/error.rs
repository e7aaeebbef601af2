//! One error type for the whole engine. The Python binding maps each variant to a `ValueError`
//! subclass (or `numpy.linalg.LinAlgError`), so no panic ever has to carry an error to Python.

use thiserror::Error;

/// Every failure the engine can report.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MkError {
    /// A setting or argument is outside its valid range.
    #[error("invalid {field}: {reason}")]
    InvalidConfig { field: String, reason: String },
    /// Arrays whose shapes do not fit together.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// Input data with NaN or infinite values.
    #[error("non-finite values: {0}")]
    NonFinite(String),
    /// A matrix that should be symmetric positive semi-definite is not.
    #[error("not positive semi-definite: {0}")]
    NotPsd(String),
    /// A factorisation or linear solve failed.
    #[error("linear algebra failure: {0}")]
    Linalg(String),
    /// The result would not fit in memory.
    #[error("{0}")]
    TooLarge(String),
    /// The caller asked to stop (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
}

impl MkError {
    /// Shorthand for [`MkError::InvalidConfig`].
    pub fn config(field: &str, reason: impl Into<String>) -> Self {
        MkError::InvalidConfig {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, MkError>;
