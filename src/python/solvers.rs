//! Bindings of the solvers: settings in, a dict of numpy arrays and numbers out.

use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::{signals_pending, to_py};
use super::kernels::with_dense;
use crate::losses::Loss;
use crate::parallel::with_pool;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::lp::{fit_lp as engine_fit_lp, LpAlgorithm, LpConfig};

/// A [`FitResult`] as a dict: `coef` (M, n), `intercept`, `kernel_weights`, `kernel_norms`,
/// `primal`, `dual`, `gap`, `n_iter`, `converged`, `status`, `history` (rows of
/// primal, dual, gap, active, seconds).
pub(crate) fn result_dict<'py>(
    py: Python<'py>,
    r: FitResult,
    n: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let m = r.kernel_weights.len();
    let d = PyDict::new(py);
    let coef = ndarray::Array2::from_shape_vec((m, n), r.coef)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    d.set_item("coef", coef.into_pyarray(py))?;
    d.set_item("intercept", r.intercept)?;
    d.set_item("kernel_weights", r.kernel_weights.into_pyarray(py))?;
    d.set_item("kernel_norms", r.kernel_norms.into_pyarray(py))?;
    d.set_item("primal", r.primal)?;
    d.set_item("dual", r.dual)?;
    d.set_item("gap", r.gap)?;
    d.set_item("n_iter", r.n_iter)?;
    d.set_item("converged", r.status == SolveStatus::Converged)?;
    let status = match r.status {
        SolveStatus::Converged => "converged",
        SolveStatus::MaxIterations => "max_iter reached",
        SolveStatus::Stalled => "stalled",
    };
    d.set_item("status", status)?;
    let hist: Vec<(f64, f64, f64, usize, f64)> = r
        .history
        .iter()
        .map(|h| (h.primal, h.dual, h.gap, h.active, h.seconds))
        .collect();
    d.set_item("history", hist)?;
    Ok(d)
}

/// ℓp-norm MKL on a dense (float64 or float32) stack.
#[pyfunction]
#[pyo3(signature = (g, y, *, p, C, loss, epsilon, algorithm, tol, max_iter, inner_tol, n_threads))]
#[allow(clippy::too_many_arguments, non_snake_case)]
fn fit_lp<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, f64>,
    p: f64,
    C: f64,
    loss: &str,
    epsilon: f64,
    algorithm: &str,
    tol: f64,
    max_iter: usize,
    inner_tol: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = LpConfig {
        p,
        c: C,
        loss: Loss::parse(loss, epsilon).map_err(to_py)?,
        algorithm: match algorithm {
            "analytic" => LpAlgorithm::Analytic,
            "interleaved" => LpAlgorithm::Interleaved,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown algorithm {other:?}; valid: analytic, interleaved"
                )))
            }
        },
        tol,
        max_iter,
        inner_tol,
    };
    let y = y.as_array().to_vec();
    let n = y.len();
    let r = with_dense(g, |s| {
        py.detach(|| with_pool(n_threads, || engine_fit_lp(s, &y, &cfg, &signals_pending)))
            .map_err(to_py)?
            .map_err(to_py)
    })?;
    result_dict(py, r, n)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_lp, m)?)?;
    Ok(())
}
