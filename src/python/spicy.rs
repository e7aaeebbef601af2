//! Binding of the SpicyMKL solver (block-ℓ1 and elastic-net MKL).

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::{run_detached, to_py};
use super::kernels::with_dense;
use super::solvers::result_dict;
use crate::losses::Loss;
use crate::solvers::spicy::{fit_spicy as engine_fit_spicy, SpicyConfig, SpicyPenalty};

/// SpicyMKL on a dense (float64 or float32) stack; `penalty` is `l1` or `elasticnet`
/// (`l1_ratio` weights `Σ‖f_m‖` against `½Σ‖f_m‖²`). Returns the dict of `result_dict`.
#[pyfunction]
#[pyo3(signature = (
    g, y, *, penalty, l1_ratio, C, loss, epsilon, tol, max_iter, n_threads,
    max_inner=100, gamma0=1.0, gamma_factor=10.0, gamma_max=1e8, working_set=0
))]
#[allow(clippy::too_many_arguments, non_snake_case)]
fn fit_spicy<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, f64>,
    penalty: &str,
    l1_ratio: f64,
    C: f64,
    loss: &str,
    epsilon: f64,
    tol: f64,
    max_iter: usize,
    n_threads: usize,
    max_inner: usize,
    gamma0: f64,
    gamma_factor: f64,
    gamma_max: f64,
    working_set: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let penalty = match penalty {
        "l1" => SpicyPenalty::L1,
        "elasticnet" => SpicyPenalty::ElasticNet { l1_ratio },
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown penalty {other:?}; valid: l1, elasticnet"
            )))
        }
    };
    let cfg = SpicyConfig {
        penalty,
        c: C,
        loss: Loss::parse(loss, epsilon).map_err(to_py)?,
        tol,
        max_iter,
        max_inner,
        gamma0,
        gamma_factor,
        gamma_max,
        working_set,
    };
    cfg.validate().map_err(to_py)?;
    let y = y.as_array().to_vec();
    let n = y.len();
    let r = with_dense(g, |s| {
        run_detached(py, n_threads, |i| engine_fit_spicy(s, &y, &cfg, i))
    })?;
    result_dict(py, r, n)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_spicy, m)?)?;
    Ok(())
}
