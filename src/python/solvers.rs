//! Bindings of the solvers: a table of named settings in (the engine's settings struct fills
//! the rest from its `Default` and checks them with its `validate`), a typed [`PyFitResult`]
//! out.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};

use super::convert::run_detached;
use super::kernels::with_dense;
use crate::error::MkError;
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::Loss;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::lp::{
    fit_lp_weighted, fit_one_class_weighted, LpAlgorithm, LpConfig, OneClassConfig,
};
use crate::solvers::mirror::{fit_group_weighted, Groups, MirrorConfig, StepRule};
use crate::solvers::path::{fit_path_weighted, PathConfig, PathEnd, PathResult};
use crate::solvers::prox_newton::{fit_prox_newton_weighted, ProxNewtonConfig};
use crate::solvers::smo::{l2svm, one_class, svc, svr, DenseKernel, SmoOptions};
use crate::solvers::spicy::{fit_spicy_weighted, SpicyConfig, SpicyPenalty, SpicyStart};
use crate::solvers::svrg::{fit_svrg_weighted, Features, SvrgConfig};
use crate::solvers::wrapper::{fit_wrapper_weighted, WrapperConfig};
use crate::Result;

/// How a fit ended.
#[pyclass(eq, eq_int, frozen, hash, module = "multikernel._core")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Status {
    /// The relative duality gap reached `tol`.
    #[pyo3(name = "CONVERGED")]
    Converged,
    /// `max_iter` outer iterations without reaching `tol`.
    #[pyo3(name = "MAX_ITER")]
    MaxIter,
    /// No further progress at rounding level (numerical limit) before `tol`.
    #[pyo3(name = "STALLED")]
    Stalled,
    /// Stopped where it would have converged, but a kernel is not PSD: no certificate.
    #[pyo3(name = "UNCERTIFIED")]
    Uncertified,
}

#[pymethods]
impl Status {
    /// A phrase for messages: "converged", "max_iter reached", "stalled (numerical limit)".
    fn __str__(&self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::MaxIter => "max_iter reached",
            Status::Stalled => "stalled (numerical limit)",
            Status::Uncertified => "stopped without a certificate: a kernel is not PSD",
        }
    }
}

impl From<SolveStatus> for Status {
    fn from(s: SolveStatus) -> Self {
        match s {
            SolveStatus::Converged => Status::Converged,
            SolveStatus::MaxIterations => Status::MaxIter,
            SolveStatus::Stalled => Status::Stalled,
            SolveStatus::Uncertified => Status::Uncertified,
        }
    }
}

/// A fitted model with its certificate: `f(x) = Σ_m Σ_i coef[m, i] k_m(x, x_i) + intercept`.
#[pyclass(frozen, name = "FitResult", module = "multikernel._core")]
pub(crate) struct PyFitResult {
    /// `(M, n)` per-kernel coefficients.
    #[pyo3(get)]
    coef: Py<PyArray2<f64>>,
    #[pyo3(get)]
    intercept: f64,
    /// `(M,)` the penalty's kernel combination.
    #[pyo3(get)]
    kernel_weights: Py<PyArray1<f64>>,
    /// `(M,)` `‖f_m‖` in each RKHS.
    #[pyo3(get)]
    kernel_norms: Py<PyArray1<f64>>,
    #[pyo3(get)]
    primal: f64,
    #[pyo3(get)]
    dual: f64,
    /// Relative duality gap `(P − D)/max(|P|, 1e-12)`.
    #[pyo3(get)]
    gap: f64,
    #[pyo3(get)]
    n_iter: usize,
    #[pyo3(get)]
    status: Status,
    /// `(n_records, 5)`: primal, dual, gap, active kernels, seconds per outer iteration.
    #[pyo3(get)]
    history: Py<PyArray2<f64>>,
    /// `(D,)` weights in feature space (solver `svrg`; empty for the others).
    #[pyo3(get)]
    feature_weights: Py<PyArray1<f64>>,
    /// `(kernel, quad_form, bound, entry_rounding)`: a dual point `ρ̃` with
    /// `quad_form = ρ̃ᵀK_mρ̃ < −bound`, the rounding bound of its computation, so kernel `m` is
    /// not PSD and that point's dual value was not counted; `entry_rounding` is how far
    /// rounding the entries of a PSD kernel to the stack's precision could lower the form.
    /// `None` when no dual point showed one.
    #[pyo3(get)]
    psd_witness: Option<(usize, f64, f64, f64)>,
}

#[pymethods]
impl PyFitResult {
    /// `status == Status.CONVERGED`.
    #[getter]
    fn converged(&self) -> bool {
        self.status == Status::Converged
    }

    fn __repr__(&self) -> String {
        format!(
            "FitResult(primal={:.6e}, dual={:.6e}, gap={:.3e}, n_iter={}, status={})",
            self.primal,
            self.dual,
            self.gap,
            self.n_iter,
            self.status.__str__()
        )
    }
}

impl PyFitResult {
    fn new(py: Python<'_>, r: FitResult, n: usize) -> PyResult<Self> {
        let m = r.kernel_weights.len();
        let shape_err = |e: ndarray::ShapeError| PyErr::from(MkError::Panic(e.to_string()));
        let coef = ndarray::Array2::from_shape_vec((m, n), r.coef).map_err(shape_err)?;
        let rows: Vec<f64> = r
            .history
            .iter()
            .flat_map(|h| [h.primal, h.dual, h.gap, h.active as f64, h.seconds])
            .collect();
        let history =
            ndarray::Array2::from_shape_vec((r.history.len(), 5), rows).map_err(shape_err)?;
        Ok(PyFitResult {
            coef: coef.into_pyarray(py).unbind(),
            intercept: r.intercept,
            kernel_weights: r.kernel_weights.into_pyarray(py).unbind(),
            kernel_norms: r.kernel_norms.into_pyarray(py).unbind(),
            primal: r.primal,
            dual: r.dual,
            gap: r.gap,
            n_iter: r.n_iter,
            status: r.status.into(),
            history: history.into_pyarray(py).unbind(),
            feature_weights: r.feature_weights.into_pyarray(py).unbind(),
            psd_witness: r
                .psd_witness
                .map(|w| (w.kernel, w.quad_form, w.bound, w.entry_rounding)),
        })
    }
}

/// The settings of one solver, read from a dict of named values.
enum Settings {
    Lp(LpConfig),
    Spicy(SpicyConfig),
    Wrapper(WrapperConfig),
    /// On explicit features (a stack of factors).
    ProxNewton(ProxNewtonConfig),
    /// With the group id of every kernel (`None`: one group, `lp` with `p = 1`).
    Mirror(MirrorConfig, Option<Vec<usize>>),
    /// On explicit features, not a kernel stack.
    Svrg(SvrgConfig),
    /// One-class ℓp-MKL (the targets are not read).
    OneClass(OneClassConfig),
}

/// A dict of settings being read: each key is taken once, a key no solver field takes is an
/// error (a typo must not be silently ignored).
struct Fields<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    taken: Vec<&'static str>,
}

impl<'py> Fields<'_, 'py> {
    fn value(&mut self, key: &'static str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.taken.push(key);
        self.dict.get_item(key)
    }

    fn bad(key: &str, kind: &str, v: &Bound<'_, PyAny>) -> PyErr {
        PyErr::from(MkError::config(key, format!("must be {kind}, got {v}")))
    }

    fn float(&mut self, key: &'static str, default: f64) -> PyResult<f64> {
        match self.value(key)? {
            None => Ok(default),
            Some(v) if v.is_instance_of::<PyBool>() => Err(Self::bad(key, "a real number", &v)),
            Some(v) => v.extract().map_err(|_| Self::bad(key, "a real number", &v)),
        }
    }

    fn count(&mut self, key: &'static str, default: usize) -> PyResult<usize> {
        match self.value(key)? {
            None => Ok(default),
            Some(v) if v.is_instance_of::<PyBool>() => {
                Err(Self::bad(key, "a non-negative integer", &v))
            }
            Some(v) => v
                .extract()
                .map_err(|_| Self::bad(key, "a non-negative integer", &v)),
        }
    }

    /// A count where `None` means "automatic".
    fn optional_count(
        &mut self,
        key: &'static str,
        default: Option<usize>,
    ) -> PyResult<Option<usize>> {
        match self.value(key)? {
            None => Ok(default),
            Some(v) if v.is_none() => Ok(None),
            Some(v) if v.is_instance_of::<PyBool>() => {
                Err(Self::bad(key, "None or a positive integer", &v))
            }
            Some(v) => v
                .extract()
                .map(Some)
                .map_err(|_| Self::bad(key, "None or a positive integer", &v)),
        }
    }

    /// A real number where `None` means "automatic".
    fn optional_float(&mut self, key: &'static str) -> PyResult<Option<f64>> {
        match self.value(key)? {
            None => Ok(None),
            Some(v) if v.is_none() => Ok(None),
            Some(v) if v.is_instance_of::<PyBool>() => {
                Err(Self::bad(key, "None or a real number", &v))
            }
            Some(v) => v
                .extract()
                .map(Some)
                .map_err(|_| Self::bad(key, "None or a real number", &v)),
        }
    }

    /// A list of real numbers, or `None`.
    fn floats(&mut self, key: &'static str) -> PyResult<Option<Vec<f64>>> {
        match self.value(key)? {
            None => Ok(None),
            Some(v) if v.is_none() => Ok(None),
            Some(v) => v
                .extract()
                .map(Some)
                .map_err(|_| Self::bad(key, "None or a list of real numbers", &v)),
        }
    }

    fn flag(&mut self, key: &'static str, default: bool) -> PyResult<bool> {
        match self.value(key)? {
            None => Ok(default),
            Some(v) if v.is_instance_of::<PyBool>() => v.extract(),
            Some(v) => Err(Self::bad(key, "True or False", &v)),
        }
    }

    /// A list of non-negative integers, or `None`.
    fn ids(&mut self, key: &'static str) -> PyResult<Option<Vec<usize>>> {
        match self.value(key)? {
            None => Ok(None),
            Some(v) if v.is_none() => Ok(None),
            Some(v) => v
                .extract()
                .map(Some)
                .map_err(|_| Self::bad(key, "a list of non-negative integers", &v)),
        }
    }

    fn text(&mut self, key: &'static str, default: &str) -> PyResult<String> {
        match self.value(key)? {
            None => Ok(default.to_string()),
            Some(v) if v.is_instance_of::<PyString>() => v.extract(),
            Some(v) => Err(Self::bad(key, "a string", &v)),
        }
    }

    fn loss(&mut self, default: Loss) -> PyResult<Loss> {
        let name = self.text("loss", default.name())?;
        let epsilon = self.float("epsilon", default.epsilon())?;
        Loss::parse(&name, epsilon).map_err(PyErr::from)
    }

    /// The `l1` / `elasticnet` penalty of the sparse solvers (`spicy`, `wrapper`, `prox_newton`).
    fn sparse_penalty(&mut self, solver: &str) -> PyResult<SpicyPenalty> {
        match self.text("penalty", "l1")?.as_str() {
            "l1" => Ok(SpicyPenalty::L1),
            "elasticnet" => Ok(SpicyPenalty::ElasticNet {
                l1_ratio: self.float("l1_ratio", 1.0)?,
            }),
            other => Err(PyErr::from(MkError::config(
                "penalty",
                format!("must be l1 or elasticnet for solver {solver}, got {other:?}"),
            ))),
        }
    }

    /// Fails on a key that was not taken.
    fn finish(self) -> PyResult<()> {
        for key in self.dict.keys() {
            let name: String = key.extract()?;
            if !self.taken.contains(&name.as_str()) {
                let valid = self.taken.join(", ");
                return Err(PyErr::from(MkError::config(
                    &name,
                    format!("is not a setting of this solver; valid: {valid}"),
                )));
            }
        }
        Ok(())
    }
}

impl Settings {
    /// The settings of `solver` (`analytic`, `interleaved`, `spicy`, `wrapper`, `prox_newton`,
    /// `mirror`, `svrg` or `one_class`): `dict` over the engine's defaults, validated by the
    /// engine.
    fn read(solver: &str, dict: &Bound<'_, PyDict>) -> PyResult<Self> {
        let mut f = Fields {
            dict,
            taken: Vec::new(),
        };
        let settings = match solver {
            "analytic" | "interleaved" => {
                let d = LpConfig::default();
                Settings::Lp(LpConfig {
                    p: f.float("p", d.p)?,
                    c: f.float("C", d.c)?,
                    loss: f.loss(d.loss)?,
                    algorithm: if solver == "analytic" {
                        LpAlgorithm::Analytic
                    } else {
                        LpAlgorithm::Interleaved
                    },
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                    inner_tol: f.float("inner_tol", d.inner_tol)?,
                })
            }
            "spicy" => {
                let d = SpicyConfig::default();
                let penalty = f.sparse_penalty(solver)?;
                Settings::Spicy(SpicyConfig {
                    penalty,
                    c: f.float("C", d.c)?,
                    loss: f.loss(d.loss)?,
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                    max_inner: f.count("max_inner", d.max_inner)?,
                    gamma0: f.float("gamma0", d.gamma0)?,
                    gamma_factor: f.float("gamma_factor", d.gamma_factor)?,
                    gamma_max: f.float("gamma_max", d.gamma_max)?,
                    working_set: f.optional_count("working_set", d.working_set)?,
                    point_working_set: f.flag("point_working_set", d.point_working_set)?,
                })
            }
            "wrapper" => {
                let d = WrapperConfig::default();
                Settings::Wrapper(WrapperConfig {
                    penalty: f.sparse_penalty(solver)?,
                    c: f.float("C", d.c)?,
                    loss: f.loss(d.loss)?,
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                    inner_tol: f.float("inner_tol", d.inner_tol)?,
                })
            }
            "prox_newton" => {
                let d = ProxNewtonConfig::default();
                Settings::ProxNewton(ProxNewtonConfig {
                    penalty: f.sparse_penalty(solver)?,
                    c: f.float("C", d.c)?,
                    loss: f.loss(d.loss)?,
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                })
            }
            "mirror" => {
                let d = MirrorConfig::default();
                let cfg = MirrorConfig {
                    c: f.float("C", d.c)?,
                    loss: f.loss(d.loss)?,
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                    inner_tol: f.float("inner_tol", d.inner_tol)?,
                    step: StepRule::parse(&f.text("step", d.step.name())?)?,
                    working_set: f.flag("working_set", d.working_set)?,
                };
                Settings::Mirror(cfg, f.ids("groups")?)
            }
            "svrg" => {
                let d = SvrgConfig::default();
                Settings::Svrg(SvrgConfig {
                    p: f.float("p", d.p)?,
                    c: f.float("C", d.c)?,
                    loss: f.loss(d.loss)?,
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                    seed: f.count("seed", d.seed as usize)? as u64,
                })
            }
            "one_class" => {
                let d = OneClassConfig::default();
                Settings::OneClass(OneClassConfig {
                    p: f.float("p", d.p)?,
                    nu: f.float("nu", d.nu)?,
                    tol: f.float("tol", d.tol)?,
                    max_iter: f.count("max_iter", d.max_iter)?,
                    inner_tol: f.float("inner_tol", d.inner_tol)?,
                })
            }
            other => {
                return Err(PyErr::from(MkError::config(
                    "solver",
                    format!(
                        "unknown solver {other:?}; valid: analytic, interleaved, spicy, wrapper, \
                         prox_newton, mirror, svrg, one_class"
                    ),
                )))
            }
        };
        // `l1_ratio` is read only for elastic net; with `l1` it is accepted and ignored.
        f.taken.push("l1_ratio");
        f.finish()?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<()> {
        match self {
            Settings::Lp(c) => c.validate(),
            Settings::Spicy(c) => c.validate(),
            Settings::Wrapper(c) => c.validate(),
            Settings::ProxNewton(c) => c.validate(),
            Settings::Mirror(c, groups) => {
                if let Some(ids) = groups {
                    Groups::new(ids)?;
                }
                c.validate()
            }
            Settings::Svrg(c) => c.validate(),
            Settings::OneClass(c) => c.validate(),
        }
    }

    fn fit(
        &self,
        s: &dyn KernelStack,
        y: &[f64],
        w: Option<&[f64]>,
        start: Option<&SpicyStart>,
        i: &dyn Interrupt,
    ) -> Result<FitResult> {
        if start.is_some() && !matches!(self, Settings::Spicy(_)) {
            return Err(MkError::config(
                "init_coef",
                "a starting point is taken by solver spicy only",
            ));
        }
        match self {
            Settings::Lp(c) => fit_lp_weighted(s, y, w, c, i),
            Settings::Spicy(c) => fit_spicy_weighted(s, y, w, c, start, i),
            Settings::Wrapper(c) => fit_wrapper_weighted(s, y, w, c, i),
            Settings::ProxNewton(c) => fit_prox_newton_weighted(s, y, w, c, i),
            Settings::Mirror(c, groups) => {
                let groups = match groups {
                    Some(ids) => Groups::new(ids)?,
                    None => Groups::single(s.m()),
                };
                fit_group_weighted(s, y, w, &groups, c, i)
            }
            Settings::Svrg(_) => Err(MkError::config(
                "solver",
                "svrg fits explicit features: pass the feature blocks, not a kernel stack",
            )),
            Settings::OneClass(c) => {
                crate::solvers::validate_targets(s.n(), y)?;
                fit_one_class_weighted(s, w, c, i)
            }
        }
    }

    /// The defaults as a dict (what `read` fills in for a missing key).
    fn defaults<'py>(py: Python<'py>, solver: &str) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        match Settings::read(solver, &PyDict::new(py))? {
            Settings::Lp(c) => {
                d.set_item("p", c.p)?;
                d.set_item("C", c.c)?;
                d.set_item("loss", c.loss.name())?;
                d.set_item("epsilon", c.loss.epsilon())?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
                d.set_item("inner_tol", c.inner_tol)?;
            }
            Settings::Spicy(c) => {
                d.set_item("C", c.c)?;
                d.set_item("loss", c.loss.name())?;
                d.set_item("epsilon", c.loss.epsilon())?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
                d.set_item("max_inner", c.max_inner)?;
                d.set_item("gamma0", c.gamma0)?;
                d.set_item("gamma_factor", c.gamma_factor)?;
                d.set_item("gamma_max", c.gamma_max)?;
                d.set_item("working_set", c.working_set)?;
                d.set_item("point_working_set", c.point_working_set)?;
            }
            Settings::Wrapper(c) => {
                d.set_item("C", c.c)?;
                d.set_item("loss", c.loss.name())?;
                d.set_item("epsilon", c.loss.epsilon())?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
                d.set_item("inner_tol", c.inner_tol)?;
            }
            Settings::ProxNewton(c) => {
                d.set_item("C", c.c)?;
                d.set_item("loss", c.loss.name())?;
                d.set_item("epsilon", c.loss.epsilon())?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
            }
            Settings::Svrg(c) => {
                d.set_item("p", c.p)?;
                d.set_item("C", c.c)?;
                d.set_item("loss", c.loss.name())?;
                d.set_item("epsilon", c.loss.epsilon())?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
                d.set_item("seed", c.seed)?;
            }
            Settings::OneClass(c) => {
                d.set_item("p", c.p)?;
                d.set_item("nu", c.nu)?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
                d.set_item("inner_tol", c.inner_tol)?;
            }
            Settings::Mirror(c, _) => {
                d.set_item("C", c.c)?;
                d.set_item("loss", c.loss.name())?;
                d.set_item("epsilon", c.loss.epsilon())?;
                d.set_item("tol", c.tol)?;
                d.set_item("max_iter", c.max_iter)?;
                d.set_item("inner_tol", c.inner_tol)?;
                d.set_item("step", c.step.name())?;
                d.set_item("working_set", c.working_set)?;
            }
        }
        Ok(d)
    }
}

/// The engine's default settings of `solver`.
#[pyfunction]
fn default_settings<'py>(py: Python<'py>, solver: &str) -> PyResult<Bound<'py, PyDict>> {
    Settings::defaults(py, solver)
}

/// Checks `settings` for `solver` with the engine's own validation (raises
/// `InvalidParameterError` naming the setting).
#[pyfunction]
fn check_settings(solver: &str, settings: &Bound<'_, PyDict>) -> PyResult<()> {
    Settings::read(solver, settings).map(|_| ())
}

/// Fits `solver` on a dense (float64 or float32) stack; `on_iteration(primal, dual, gap,
/// active, seconds)` is called on the calling thread for every outer iteration. `spicy` starts
/// from `init_coef` `(M, n)`, `init_intercept` and `init_dual` `(n,)` (the dual in the
/// solver's scale, `ρ̃/C`; None: from the start's predictions) when `init_coef` is given.
/// `sample_weight` `(n,)`, finite and > 0, weights each sample's loss (`C w_i`).
#[pyfunction]
#[pyo3(signature = (
    solver, g, y, settings, *, n_threads=0, on_iteration=None, init_coef=None,
    init_intercept=0.0, init_dual=None, sample_weight=None
))]
#[allow(clippy::too_many_arguments)]
fn fit<'py>(
    py: Python<'py>,
    solver: &str,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, f64>,
    settings: &Bound<'py, PyDict>,
    n_threads: usize,
    on_iteration: Option<&Bound<'py, PyAny>>,
    init_coef: Option<PyReadonlyArray2<'py, f64>>,
    init_intercept: f64,
    init_dual: Option<PyReadonlyArray1<'py, f64>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<PyFitResult> {
    let settings = Settings::read(solver, settings)?;
    let y = y.as_array().to_vec();
    let weights = sample_weight.map(|w| w.as_array().to_vec());
    let n = y.len();
    let start = match init_coef {
        Some(a) if a.as_array().ncols() != n => {
            return Err(PyErr::from(MkError::Shape(format!(
                "init_coef must have shape (M, n={n}), got {:?}",
                a.as_array().shape()
            ))))
        }
        Some(a) => Some(SpicyStart {
            // Row-major (M, n) whatever the array's strides.
            coef: a.as_array().iter().copied().collect(),
            intercept: init_intercept,
            dual: init_dual.map(|d| d.as_array().to_vec()),
        }),
        None if init_dual.is_some() => {
            return Err(PyErr::from(MkError::config(
                "init_dual",
                "needs init_coef (the starting point's coefficients)",
            )))
        }
        None => None,
    };
    let r = if let Settings::Svrg(cfg) = &settings {
        if start.is_some() {
            return Err(PyErr::from(MkError::config(
                "init_coef",
                "a starting point is taken by solver spicy only",
            )));
        }
        // Explicit features: a list of (n, D_k) blocks of float64 or float32 (a 3-D array
        // would extract as one too: its (n, n) slices are kernels, not features).
        let is_list =
            g.is_instance_of::<pyo3::types::PyList>() || g.is_instance_of::<pyo3::types::PyTuple>();
        if !is_list {
            return Err(PyErr::from(MkError::config(
                "solver",
                "svrg needs explicit features: a list of float64 or float32 arrays (n, D_k), \
                 one per kernel, not a kernel stack (kernels=FeatureBank(...) in the estimators)",
            )));
        }
        let w = weights.as_deref();
        if let Ok(blocks) = g.extract::<Vec<PyReadonlyArray2<'_, f64>>>() {
            svrg_on_blocks(py, &blocks, &y, w, cfg, n_threads, on_iteration)?
        } else if let Ok(blocks) = g.extract::<Vec<PyReadonlyArray2<'_, f32>>>() {
            svrg_on_blocks(py, &blocks, &y, w, cfg, n_threads, on_iteration)?
        } else {
            return Err(PyErr::from(MkError::config(
                "solver",
                "svrg needs explicit features: a list of float64 or float32 arrays (n, D_k), \
                 one per kernel (kernels=FeatureBank(...) in the estimators)",
            )));
        }
    } else {
        if g.cast::<super::kernels::PyOnDemand>().is_ok() {
            on_demand_supported(&settings)?;
        }
        with_dense(g, |s| {
            run_detached(py, n_threads, on_iteration, |i| {
                settings.fit(s, &y, weights.as_deref(), start.as_ref(), i)
            })
        })?
    };
    PyFitResult::new(py, r, n)
}

/// Kernels computed on demand are fitted without an `n×n` matrix by SMO (the hinge-type
/// losses) inside the analytic ℓp solver, the l1 / elastic-net wrapper and group MKL (mirror);
/// every other solver or loss would form one.
fn on_demand_supported(settings: &Settings) -> PyResult<()> {
    let smo = |loss: Loss| !matches!(loss, Loss::Squared | Loss::Logistic);
    match settings {
        Settings::Lp(c) if c.algorithm == LpAlgorithm::Analytic && smo(c.loss) => Ok(()),
        Settings::Wrapper(c) if smo(c.loss) => Ok(()),
        Settings::Mirror(c, _) if smo(c.loss) => Ok(()),
        _ => Err(PyErr::from(MkError::config(
            "solver",
            "kernels computed on demand are fitted by solvers 'analytic' (penalty 'lp'), \
             'wrapper' (l1, elasticnet) and 'mirror' (group, lp with p = 1) with the hinge, \
             squared hinge or epsilon-insensitive loss; other solvers and losses form n×n \
             matrices",
        ))),
    }
}

/// A regularization path ([`crate::solvers::path`]) as arrays, one row per point.
#[pyclass(frozen, name = "PathResult", module = "multikernel._core")]
pub(crate) struct PyPathResult {
    /// `(P,)` increasing `C`.
    #[pyo3(get)]
    cs: Py<PyArray1<f64>>,
    /// `(P, n)` the dual variables `α`; the model at a point is `A[j] = −η_j α`.
    #[pyo3(get)]
    alphas: Py<PyArray2<f64>>,
    /// `(P, M)` `η`, the kernel weights.
    #[pyo3(get)]
    eta: Py<PyArray2<f64>>,
    /// `(P, M)` `‖f_j‖`.
    #[pyo3(get)]
    kernel_norms: Py<PyArray2<f64>>,
    #[pyo3(get)]
    primal: Py<PyArray1<f64>>,
    #[pyo3(get)]
    dual: Py<PyArray1<f64>>,
    /// `(P,)` relative duality gaps.
    #[pyo3(get)]
    gap: Py<PyArray1<f64>>,
    /// `(P,)` the barrier weight of each point.
    #[pyo3(get)]
    mu: Py<PyArray1<f64>>,
    #[pyo3(get)]
    corrector_steps: Py<PyArray1<i64>>,
    /// `(P,)` the kernels in the barrier's working set at each point.
    #[pyo3(get)]
    barrier_kernels: Py<PyArray1<i64>>,
    /// The largest `C` with `f = 0`.
    #[pyo3(get)]
    c0: f64,
    /// `(M,)` the weights `d_j`.
    #[pyo3(get)]
    weights: Py<PyArray1<f64>>,
    /// Point indices where the active set changes.
    #[pyo3(get)]
    kinks: Vec<usize>,
    /// `"complete"`, `"max_points"` or `"stalled"`.
    #[pyo3(get)]
    end: &'static str,
    #[pyo3(get)]
    factorizations: usize,
}

impl PyPathResult {
    fn new(py: Python<'_>, r: PathResult, n: usize, m: usize) -> PyResult<Self> {
        let shape_err = |e: ndarray::ShapeError| PyErr::from(MkError::Panic(e.to_string()));
        let k = r.points.len();
        let rows = |f: &dyn Fn(&crate::solvers::path::PathPoint) -> &Vec<f64>, w: usize| {
            let flat: Vec<f64> = r.points.iter().flat_map(|p| f(p).iter().copied()).collect();
            ndarray::Array2::from_shape_vec((k, w), flat).map_err(shape_err)
        };
        let col = |f: &dyn Fn(&crate::solvers::path::PathPoint) -> f64| -> Vec<f64> {
            r.points.iter().map(f).collect()
        };
        Ok(PyPathResult {
            cs: col(&|p| p.c).into_pyarray(py).unbind(),
            alphas: rows(&|p| &p.alpha, n)?.into_pyarray(py).unbind(),
            eta: rows(&|p| &p.eta, m)?.into_pyarray(py).unbind(),
            kernel_norms: rows(&|p| &p.norms, m)?.into_pyarray(py).unbind(),
            primal: col(&|p| p.primal).into_pyarray(py).unbind(),
            dual: col(&|p| p.dual).into_pyarray(py).unbind(),
            gap: col(&|p| p.gap).into_pyarray(py).unbind(),
            mu: col(&|p| p.mu).into_pyarray(py).unbind(),
            corrector_steps: r
                .points
                .iter()
                .map(|p| p.corrector_steps as i64)
                .collect::<Vec<_>>()
                .into_pyarray(py)
                .unbind(),
            barrier_kernels: r
                .points
                .iter()
                .map(|p| p.barrier_kernels as i64)
                .collect::<Vec<_>>()
                .into_pyarray(py)
                .unbind(),
            c0: r.c0,
            weights: r.weights.into_pyarray(py).unbind(),
            kinks: r.kinks,
            end: match r.end {
                PathEnd::Complete => "complete",
                PathEnd::MaxPoints => "max_points",
                PathEnd::Stalled => "stalled",
            },
            factorizations: r.factorizations,
        })
    }
}

/// The path settings (`loss`, `mu`, `tol`, `C_max`, `max_points`, `d`, and `working_set` for
/// benchmarks) over the engine's defaults.
fn path_settings(dict: &Bound<'_, PyDict>) -> PyResult<PathConfig> {
    let mut f = Fields {
        dict,
        taken: Vec::new(),
    };
    let d = PathConfig::default();
    let cfg = PathConfig {
        loss: f.loss(d.loss)?,
        weights: f.floats("d")?,
        mu: f.optional_float("mu")?,
        tol: f.float("tol", d.tol)?,
        c_max: f.optional_float("C_max")?,
        max_points: f.count("max_points", d.max_points)?,
        working_set: if f.flag("working_set", true)? {
            d.working_set
        } else {
            None
        },
        ..d
    };
    f.finish()?;
    cfg.validate()?;
    Ok(cfg)
}

/// Follows the regularization path of block-ℓ1 MKL (no intercept) on a dense stack;
/// `on_iteration(primal, dual, gap, active, seconds)` is called for every point;
/// `sample_weight` `(n,)`, finite and > 0, weights each sample's loss.
#[pyfunction]
#[pyo3(signature = (g, y, settings, *, n_threads=0, on_iteration=None, sample_weight=None))]
fn path<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, f64>,
    settings: &Bound<'py, PyDict>,
    n_threads: usize,
    on_iteration: Option<&Bound<'py, PyAny>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<PyPathResult> {
    let cfg = path_settings(settings)?;
    let y = y.as_array().to_vec();
    let w = sample_weight.map(|w| w.as_array().to_vec());
    let n = y.len();
    let (r, m) = with_dense(g, |s| {
        let m = s.m();
        run_detached(py, n_threads, on_iteration, |i| {
            fit_path_weighted(s, &y, w.as_deref(), &cfg, i)
        })
        .map(|r| (r, m))
    })?;
    PyPathResult::new(py, r, n, m)
}

/// Runs SVRG on `(n, D_k)` feature blocks read as one row-major matrix: the inner loop reads
/// random rows, and one contiguous row measured 1.4x faster at n = 10⁶ than ten block rows
/// read in place (37 s against 52 s). Blocks that are consecutive column ranges of one
/// C-ordered buffer (what `FeatureBank` returns) are read in place, any others copied once.
fn svrg_on_blocks<T: crate::kernels::Element + numpy::Element>(
    py: Python<'_>,
    blocks: &[PyReadonlyArray2<'_, T>],
    y: &[f64],
    weights: Option<&[f64]>,
    cfg: &SvrgConfig,
    n_threads: usize,
    on_iteration: Option<&Bound<'_, PyAny>>,
) -> PyResult<FitResult> {
    let n = y.len();
    let views: Vec<_> = blocks.iter().map(|b| b.as_array()).collect();
    if views.iter().any(|v| v.nrows() != n) {
        return Err(PyErr::from(MkError::Shape(format!(
            "every feature block must have {n} rows, one per target"
        ))));
    }
    let dims: Vec<usize> = views.iter().map(|v| v.ncols()).collect();
    let copied: Vec<T>;
    let data: &[T] = match rows_in_place(&views) {
        Some(data) => data,
        None => {
            copied = (0..n)
                .flat_map(|t| views.iter().flat_map(move |v| v.row(t).to_vec()))
                .collect();
            &copied
        }
    };
    let feats = Features::new(data, n, &dims)?;
    run_detached(py, n_threads, on_iteration, |i| {
        fit_svrg_weighted(&feats, y, weights, cfg, i)
    })
}

/// The `(n, Σ D_k)` row-major matrix whose consecutive column ranges the blocks are, if they
/// are: same rows, row stride `Σ D_k`, unit column stride, each block starting where the last
/// ended.
fn rows_in_place<'a, T>(views: &[ndarray::ArrayView2<'a, T>]) -> Option<&'a [T]> {
    let first = views.first()?;
    let n = first.nrows();
    let width: usize = views.iter().map(|v| v.ncols()).sum();
    let base = first.as_ptr();
    let mut offset = 0;
    for v in views {
        let (d, s) = (v.ncols(), v.strides());
        if d == 0 || v.nrows() != n || (n > 1 && s[0] != width as isize) || (d > 1 && s[1] != 1) {
            return None;
        }
        if v.as_ptr() != base.wrapping_add(offset) {
            return None;
        }
        offset += d;
    }
    // SAFETY: element (t, j) of the matrix, at `base + t·width + j`, is element
    // (t, j − offset_k) of the block k whose columns hold j (the blocks tile every row), so all
    // `n·width` elements lie in memory the views borrow, readonly, for 'a.
    Some(unsafe { std::slice::from_raw_parts(base, n * width) })
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
        return Err(PyErr::from(MkError::Shape(
            "the kernel must be square".into(),
        )));
    }
    let data = k
        .as_slice()
        .map_err(|_| PyErr::from(MkError::Shape("the kernel must be C-contiguous".into())))?;
    let y = y.as_array().to_vec();
    let opts = SmoOptions {
        eps: tol,
        shrinking,
        max_iter: None,
    };
    let kernel = DenseKernel::new(data, n)?;
    let sol = run_detached(py, 1, None, |interrupt| match kind {
        "svc" => svc(&kernel, &y, &[C], &opts, None, interrupt),
        "l2svm" => l2svm(&kernel, &y, &[C], &opts, None, interrupt),
        "svr" => svr(&kernel, &y, &[C], epsilon, &opts, None, interrupt),
        "one_class" => one_class(&kernel, nu, &[1.0], &opts, None, interrupt),
        other => Err(MkError::config(
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

/// Panics on purpose, on the calling thread or inside a rayon worker of a solve (`in_pool`),
/// so the tests can check that a panic reaches Python as `InternalError` (builds with the
/// `test-hooks` feature only).
#[cfg(feature = "test-hooks")]
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, in_pool: bool) -> PyResult<()> {
    fn boom(place: &str) {
        panic!("test panic {place}");
    }
    run_detached(py, 2, None, |_| {
        if in_pool {
            rayon::join(|| boom("in a rayon worker"), || ());
        } else {
            boom("on the solver thread");
        }
        Ok(())
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Status>()?;
    m.add_class::<PyFitResult>()?;
    m.add_class::<PyPathResult>()?;
    m.add_function(wrap_pyfunction!(path, m)?)?;
    m.add_function(wrap_pyfunction!(default_settings, m)?)?;
    m.add_function(wrap_pyfunction!(check_settings, m)?)?;
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(svm, m)?)?;
    #[cfg(feature = "test-hooks")]
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}
