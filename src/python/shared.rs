//! The binding of the shared multiclass fit (`multi_class="shared"`,
//! [`crate::solvers::shared`]): a stack, the one-vs-rest targets `(K, n)` and the analytic
//! solver's settings in, the one `FitResult` of every fit out, with a leading class axis on
//! its `coef`, and the classes' intercepts.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::convert::run_detached;
use super::kernels::with_dense;
use super::solvers::{stack_passes, PyFitResult, PySettings};
use crate::error::MkError;
use crate::penalties::BlockPenalty;
use crate::solvers::shared::{fit_shared as engine_fit_shared, SharedConfig};

/// Fits the one-vs-rest problems of the targets `y` `(K, n)` (`±1`) coupled through one set
/// of kernel weights (docs/mathematics.md §3.8) on a dense (float64 or float32) stack or
/// kernels computed on demand (hinge-type losses). `settings`: `Settings("analytic", ...)`
/// (C, loss, tol, max_iter, inner_tol); `penalty` `lp` (`p ∈ [1, ∞]`), `l1`, `elasticnet`
/// (`l1_ratio`) or `group` (`groups`, a group id per kernel). `sample_weight` `(n,)` weights
/// each sample's loss in every class; `on_iteration(primal, dual, gap, active, seconds)` is
/// called for every iteration. Returns the fit (its `coef` `(K, M, n)`, `coef[c, m] = θ_m
/// β_c`) and the classes' intercepts `(K,)`.
#[pyfunction]
#[pyo3(signature = (
    settings, g, y, *, penalty="lp", p=2.0, l1_ratio=1.0, groups=None, n_threads=0,
    on_iteration=None, sample_weight=None
))]
#[allow(clippy::too_many_arguments)]
fn fit_shared<'py>(
    py: Python<'py>,
    settings: &Bound<'py, PySettings>,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray2<'py, f64>,
    penalty: &str,
    p: f64,
    l1_ratio: f64,
    groups: Option<Vec<usize>>,
    n_threads: usize,
    on_iteration: Option<&Bound<'py, PyAny>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<(PyFitResult, Py<PyArray1<f64>>)> {
    let lp = settings.get().lp().copied().ok_or_else(|| {
        PyErr::from(MkError::config(
            "solver",
            "the shared fit reads the settings of solver 'analytic'",
        ))
    })?;
    let cfg = SharedConfig {
        penalty: BlockPenalty::parse(penalty, l1_ratio, p, groups.as_deref())?,
        c: lp.c,
        loss: lp.loss,
        tol: lp.tol,
        max_iter: lp.max_iter,
        inner_tol: lp.inner_tol,
    };
    let ys: Vec<Vec<f64>> = y.as_array().outer_iter().map(|r| r.to_vec()).collect();
    let n = y.as_array().ncols();
    let weights = sample_weight.map(|w| w.as_array().to_vec());
    let (r, passes) = with_dense(g, |s| {
        let r = run_detached(py, n_threads, on_iteration, |i| {
            engine_fit_shared(s, &ys, weights.as_deref(), &cfg, i)
        })?;
        Ok((r, stack_passes(s)))
    })?;
    let (fit, intercepts) = (r.fit, r.intercepts);
    let k = intercepts.len();
    let result =
        PyFitResult::with_classes(py, fit, (Some(k), n), vec!["shared"])?.with_passes(passes);
    Ok((result, intercepts.into_pyarray(py).unbind()))
}

/// What the shared fit takes, as the engine states it: `{"losses": [...], "penalties": [...]}`.
#[pyfunction]
fn shared_capabilities(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item("losses", SharedConfig::losses())?;
    d.set_item("penalties", SharedConfig::penalties().to_vec())?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shared_capabilities, m)?)?;
    m.add_function(wrap_pyfunction!(fit_shared, m)?)?;
    Ok(())
}
