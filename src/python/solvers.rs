//! Bindings of the solvers: settings in, a dict of numpy arrays and numbers out.

use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::{run_detached, to_py};
use super::kernels::with_dense;
use crate::losses::Loss;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::lp::{fit_lp as engine_fit_lp, LpAlgorithm, LpConfig};
use crate::solvers::smo::{l2svm, one_class, svc, svr, DenseKernel, SmoOptions};

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
        run_detached(py, n_threads, |i| engine_fit_lp(s, &y, &cfg, i))
    })?;
    result_dict(py, r, n)
}

/// One SVM on a dense precomputed kernel by SMO: `kind` is `svc`, `l2svm`, `svr` or
/// `one_class`. Returns `coef`, `alpha`, `intercept`, `objective` (libsvm's, minimised),
/// `iterations`, `converged`.
#[pyfunction]
#[pyo3(signature = (k, y, *, kind, C=1.0, epsilon=0.1, nu=0.5, tol=1e-6, shrinking=true))]
#[allow(clippy::too_many_arguments, non_snake_case)]
fn svm<'py>(
    py: Python<'py>,
    k: numpy::PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    kind: &str,
    C: f64,
    epsilon: f64,
    nu: f64,
    tol: f64,
    shrinking: bool,
) -> PyResult<Bound<'py, PyDict>> {
    use numpy::PyUntypedArrayMethods;
    let n = k.shape()[0];
    if k.shape()[1] != n {
        return Err(PyValueError::new_err("the kernel must be square"));
    }
    let data = k
        .as_slice()
        .map_err(|_| PyValueError::new_err("the kernel must be C-contiguous"))?;
    let y = y.as_array().to_vec();
    let opts = SmoOptions {
        eps: tol,
        shrinking,
        max_iter: None,
    };
    let kernel = DenseKernel::new(data, n).map_err(to_py)?;
    let sol = run_detached(py, 1, |interrupt| match kind {
        "svc" => svc(&kernel, &y, &[C], &opts, None, interrupt),
        "l2svm" => l2svm(&kernel, &y, &[C], &opts, None, interrupt),
        "svr" => svr(&kernel, &y, &[C], epsilon, &opts, None, interrupt),
        "one_class" => one_class(&kernel, nu, &opts, None, interrupt),
        other => Err(crate::error::MkError::config(
            "kind",
            format!("unknown SVM {other:?}; valid: svc, l2svm, svr, one_class"),
        )),
    })?;
    let d = PyDict::new(py);
    d.set_item("coef", sol.coef.into_pyarray(py))?;
    d.set_item("alpha", sol.alpha.into_pyarray(py))?;
    d.set_item("intercept", sol.intercept)?;
    d.set_item("objective", sol.objective)?;
    d.set_item("iterations", sol.iterations)?;
    d.set_item("converged", sol.converged)?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_lp, m)?)?;
    m.add_function(wrap_pyfunction!(svm, m)?)?;
    Ok(())
}
