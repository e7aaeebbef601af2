//! The settings every supervised solver shares (`C`, the loss, `tol`, `max_iter`) by name and
//! their checks, and the check of the targets.

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::losses::Loss;

/// `C`, the loss, `tol` and `max_iter` by name: the settings every supervised solver has
/// ([`Fields`]).
pub(crate) fn common_fields<V: Visitor>(
    v: &mut V,
    c: &mut f64,
    loss: &mut Loss,
    tol: &mut f64,
    max_iter: &mut usize,
) -> std::result::Result<(), V::Error> {
    v.float("C", c)?;
    loss.fields(v)?;
    v.float("tol", tol)?;
    v.count("max_iter", max_iter)
}

/// Checks the settings every solver shares: the loss weight `C`, the gap tolerance and the
/// iteration budget.
pub(crate) fn validate_common(c: f64, tol: f64, max_iter: usize) -> Result<()> {
    if !(c.is_finite() && c > 0.0) {
        return Err(MkError::config(
            "C",
            format!("must be positive and finite, got {c}"),
        ));
    }
    if !(tol.is_finite() && tol > 0.0) {
        return Err(MkError::config(
            "tol",
            format!("must be positive, got {tol}"),
        ));
    }
    if max_iter == 0 {
        return Err(MkError::config("max_iter", "must be at least 1"));
    }
    Ok(())
}

/// Checks that the targets fit the `n` training points and are finite.
pub(crate) fn validate_targets(n: usize, y: &[f64]) -> Result<()> {
    if y.len() != n {
        return Err(MkError::Shape(format!(
            "y has {} entries for {n} points",
            y.len()
        )));
    }
    if y.iter().any(|v| !v.is_finite()) {
        return Err(MkError::non_finite("y"));
    }
    Ok(())
}
