//! Bindings of the solvers: a table of named settings in (read into [`solvers::Settings`] by the
//! names its structs give their fields, [`crate::fields`], over their `Default` and checked by
//! their `validate`), the arrays as [`solvers::Data`], [`solvers::fit`], a typed [`PyFitResult`]
//! out. No arm here names a solver's settings.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayDyn, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};

use super::convert::{csr_matrix, run_detached, run_detached_apart, CsrArrays};
use super::kernels::with_dense;
use super::rows::PyRows;
use crate::error::MkError;
use crate::fields::Visitor;
use crate::kernels::{KernelStack, RowFeatures, SparseRowFeatures};
use crate::penalties::Groups;
use crate::result::{FitResult, SolveStatus};
use crate::solvers::lp::LpConfig;
use crate::solvers::path::{fit_path_weighted, PathEnd, PathResult};
use crate::solvers::prox_newton::{fit_prox_newton_on, FeatureStart};
use crate::solvers::smo::{l2svm, one_class, svc, svr, DenseKernel, SmoOptions};
use crate::solvers::spicy::SpicyStart;
use crate::solvers::{self, Data, Fitted, RowElement, Settings, Start, SOLVER_NAMES};

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
    /// `(M, n)` per-kernel coefficients, or their factors ([`crate::result::OuterCoef`]: `coef` forms them
    /// when read).
    coef: Coef,
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
    /// `(n_records, 6)`: primal, dual, gap, active kernels, seconds, and the index in
    /// `solvers` of the solver that ran the iteration ([`history_rows`]).
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
    /// The engine solvers that ran, in order: the settings' solver, then `"spicy"` when
    /// SpicyMKL continued a wrapper fit (`Settings("wrapper", {"continued": True})`).
    #[pyo3(get)]
    solvers: Vec<&'static str>,
    /// The iterations of each solver in `solvers`; they sum to `n_iter`.
    #[pyo3(get)]
    solver_iterations: Vec<usize>,
    /// The entries the fit read from a stored `(M, n, n)` stack, over `M·n²`: its passes over
    /// the stack (docs/performance.md, "Passes over the stack"). None for kernels on demand,
    /// low-rank factors and explicit features.
    #[pyo3(get)]
    stack_passes: Option<f64>,
}

/// A fit's history as the `(n_records, 6)` array of `FitResult.history`: primal, dual, gap,
/// active kernels, seconds, and the solver's index.
pub(crate) fn history_rows(
    py: Python<'_>,
    history: &[crate::result::IterRecord],
) -> PyResult<Py<PyArray2<f64>>> {
    let rows: Vec<f64> = history
        .iter()
        .flat_map(|h| {
            let (active, solver) = (h.active as f64, h.solver as f64);
            [h.primal, h.dual, h.gap, active, h.seconds, solver]
        })
        .collect();
    let array = ndarray::Array2::from_shape_vec((history.len(), 6), rows)
        .map_err(|e| PyErr::from(MkError::Panic(e.to_string())))?;
    Ok(array.into_pyarray(py).unbind())
}

/// `(scale, rows)` of [`Coef::Outer`], as numpy arrays.
type Factors<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// A result's coefficients as the solver gave them.
enum Coef {
    /// `(M, n)`, or `(K, M, n)` for a shared fit's classes.
    Dense(Py<PyArrayDyn<f64>>),
    /// `A[m, i] = scale[m] · rows[i]`.
    Outer(Py<PyArray1<f64>>, Py<PyArray1<f64>>),
}

#[pymethods]
impl PyFitResult {
    /// `(M, n)` per-kernel coefficients (formed from [`Self::coef_factors`] at each read when
    /// the solver gave them factored); `(K, M, n)` for a shared fit, one row per class.
    #[getter]
    fn coef<'py>(&self, py: Python<'py>) -> Bound<'py, PyArrayDyn<f64>> {
        match &self.coef {
            Coef::Dense(a) => a.bind(py).clone(),
            Coef::Outer(scale, rows) => {
                use numpy::PyArrayMethods;
                let (s, r) = (scale.bind(py).readonly(), rows.bind(py).readonly());
                let (s, r) = (s.as_array(), r.as_array());
                ndarray::Array2::from_shape_fn((s.len(), r.len()), |(m, i)| s[m] * r[i])
                    .into_dyn()
                    .into_pyarray(py)
            }
        }
    }

    /// `(scale (M,), rows (n,))` with `coef[m, i] = scale[m] · rows[i]` when the solver gives
    /// its coefficients so (proximal Newton on features in memory: `M` times fewer numbers),
    /// else None.
    #[getter]
    fn coef_factors<'py>(&self, py: Python<'py>) -> Option<Factors<'py>> {
        match &self.coef {
            Coef::Dense(_) => None,
            Coef::Outer(s, r) => Some((s.bind(py).clone(), r.bind(py).clone())),
        }
    }

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
    /// This result with the fit's passes over a stored stack ([`stack_passes`]).
    pub(super) fn with_passes(self, stack_passes: Option<f64>) -> Self {
        PyFitResult {
            stack_passes,
            ..self
        }
    }

    fn new(py: Python<'_>, r: FitResult, n: usize, solvers: Vec<&'static str>) -> PyResult<Self> {
        Self::with_classes(py, r, (None, n), solvers)
    }

    /// The result of a fit whose `coef` is `(K, M, n)` when `classes` is `Some(K)` (a shared
    /// fit), `(M, n)` otherwise.
    pub(super) fn with_classes(
        py: Python<'_>,
        r: FitResult,
        (classes, n): (Option<usize>, usize),
        solvers: Vec<&'static str>,
    ) -> PyResult<Self> {
        let m = r.kernel_weights.len();
        let shape_err = |e: ndarray::ShapeError| PyErr::from(MkError::Panic(e.to_string()));
        let shape = match classes {
            Some(k) => vec![k, m, n],
            None => vec![m, n],
        };
        let coef = match r.coef_outer {
            Some(o) => Coef::Outer(
                o.scale.into_pyarray(py).unbind(),
                o.rows.into_pyarray(py).unbind(),
            ),
            None => Coef::Dense(
                ndarray::ArrayD::from_shape_vec(shape, r.coef)
                    .map_err(shape_err)?
                    .into_pyarray(py)
                    .unbind(),
            ),
        };
        let history = history_rows(py, &r.history)?;
        Ok(PyFitResult {
            coef,
            intercept: r.intercept,
            kernel_weights: r.kernel_weights.into_pyarray(py).unbind(),
            kernel_norms: r.kernel_norms.into_pyarray(py).unbind(),
            primal: r.primal,
            dual: r.dual,
            gap: r.gap,
            n_iter: r.n_iter,
            status: r.status.into(),
            history,
            feature_weights: r.feature_weights.into_pyarray(py).unbind(),
            psd_witness: r
                .psd_witness
                .map(|w| (w.kernel, w.quad_form, w.bound, w.entry_rounding)),
            solvers,
            solver_iterations: r.solver_iters,
            stack_passes: None,
        })
    }
}

impl Settings {
    /// The settings of `solver`: `dict` over the engine's defaults, validated by the engine.
    fn read(solver: &str, dict: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut settings = Settings::default_of(solver)?;
        if let Some(dict) = dict {
            let mut r = Reader::new(dict);
            settings.fields(&mut r)?;
            // `l1_ratio` is accepted and ignored by the solvers without it (it follows the
            // estimators' settings through `solver="auto"`'s moves).
            if !r.taken.contains(&"l1_ratio") {
                r.taken.push("l1_ratio");
            }
            r.finish()?;
        }
        settings.validate()?;
        Ok(settings)
    }

    /// Every setting by name.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut w = Writer {
            dict: PyDict::new(py),
        };
        self.clone().fields(&mut w)?;
        Ok(w.dict)
    }
}

/// A dict of settings being read: each key is taken once, a key no solver field takes is an
/// error (a typo must not be silently ignored).
struct Reader<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    taken: Vec<&'static str>,
}

impl<'a, 'py> Reader<'a, 'py> {
    fn new(dict: &'a Bound<'py, PyDict>) -> Self {
        Reader {
            dict,
            taken: Vec::new(),
        }
    }

    fn value(&mut self, key: &'static str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.taken.push(key);
        self.dict.get_item(key)
    }

    fn bad(key: &str, kind: &str, v: &Bound<'_, PyAny>) -> PyErr {
        PyErr::from(MkError::config(key, format!("must be {kind}, got {v}")))
    }

    /// The value of `key` extracted as `T` (a bool is not a number here), or `None`.
    fn extract<T: for<'b> FromPyObject<'b, 'py>>(
        &mut self,
        key: &'static str,
        kind: &str,
    ) -> PyResult<Option<T>> {
        match self.value(key)? {
            None => Ok(None),
            Some(v) if v.is_instance_of::<PyBool>() => Err(Self::bad(key, kind, &v)),
            Some(v) => v.extract().map(Some).map_err(|_| Self::bad(key, kind, &v)),
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

impl Visitor for Reader<'_, '_> {
    type Error = PyErr;

    fn float(&mut self, key: &'static str, v: &mut f64) -> PyResult<()> {
        if let Some(x) = self.extract(key, "a real number")? {
            *v = x;
        }
        Ok(())
    }

    fn count(&mut self, key: &'static str, v: &mut usize) -> PyResult<()> {
        if let Some(x) = self.extract(key, "a non-negative integer")? {
            *v = x;
        }
        Ok(())
    }

    fn optional_count(&mut self, key: &'static str, v: &mut Option<usize>) -> PyResult<()> {
        match self.value(key)? {
            None => {}
            Some(x) if x.is_none() => *v = None,
            Some(x) if x.is_instance_of::<PyBool>() => {
                return Err(Self::bad(key, "None or a positive integer", &x))
            }
            Some(x) => {
                *v = Some(
                    x.extract()
                        .map_err(|_| Self::bad(key, "None or a positive integer", &x))?,
                )
            }
        }
        Ok(())
    }

    fn flag(&mut self, key: &'static str, v: &mut bool) -> PyResult<()> {
        match self.value(key)? {
            None => {}
            Some(x) if x.is_instance_of::<PyBool>() => *v = x.extract()?,
            Some(x) => return Err(Self::bad(key, "True or False", &x)),
        }
        Ok(())
    }

    fn text(&mut self, key: &'static str, v: &mut String) -> PyResult<()> {
        match self.value(key)? {
            None => {}
            Some(x) if x.is_instance_of::<PyString>() => *v = x.extract()?,
            Some(x) => return Err(Self::bad(key, "a string", &x)),
        }
        Ok(())
    }

    fn optional_float(&mut self, key: &'static str, v: &mut Option<f64>) -> PyResult<()> {
        match self.value(key)? {
            None => {}
            Some(x) if x.is_none() => *v = None,
            Some(x) if x.is_instance_of::<PyBool>() => {
                return Err(Self::bad(key, "None or a real number", &x))
            }
            Some(x) => {
                *v = Some(
                    x.extract()
                        .map_err(|_| Self::bad(key, "None or a real number", &x))?,
                )
            }
        }
        Ok(())
    }

    fn floats(&mut self, key: &'static str, v: &mut Option<Vec<f64>>) -> PyResult<()> {
        match self.value(key)? {
            None => {}
            Some(x) if x.is_none() => *v = None,
            Some(x) => {
                *v = Some(
                    x.extract()
                        .map_err(|_| Self::bad(key, "None or a list of real numbers", &x))?,
                )
            }
        }
        Ok(())
    }

    fn ids(&mut self, key: &'static str, v: &mut Option<Vec<usize>>) -> PyResult<()> {
        match self.value(key)? {
            None => {}
            Some(x) if x.is_none() => *v = None,
            Some(x) => {
                *v = Some(
                    x.extract()
                        .map_err(|_| Self::bad(key, "a list of non-negative integers", &x))?,
                )
            }
        }
        Ok(())
    }
}

/// Writes every setting it is shown into a dict.
struct Writer<'py> {
    dict: Bound<'py, PyDict>,
}

impl Visitor for Writer<'_> {
    type Error = PyErr;

    fn float(&mut self, key: &'static str, v: &mut f64) -> PyResult<()> {
        self.dict.set_item(key, *v)
    }
    fn count(&mut self, key: &'static str, v: &mut usize) -> PyResult<()> {
        self.dict.set_item(key, *v)
    }
    fn optional_count(&mut self, key: &'static str, v: &mut Option<usize>) -> PyResult<()> {
        self.dict.set_item(key, *v)
    }
    fn flag(&mut self, key: &'static str, v: &mut bool) -> PyResult<()> {
        self.dict.set_item(key, *v)
    }
    fn text(&mut self, key: &'static str, v: &mut String) -> PyResult<()> {
        self.dict.set_item(key, v.as_str())
    }
    fn ids(&mut self, key: &'static str, v: &mut Option<Vec<usize>>) -> PyResult<()> {
        self.dict.set_item(key, v.clone())
    }
    fn optional_float(&mut self, key: &'static str, v: &mut Option<f64>) -> PyResult<()> {
        self.dict.set_item(key, *v)
    }
    fn floats(&mut self, key: &'static str, v: &mut Option<Vec<f64>>) -> PyResult<()> {
        self.dict.set_item(key, v.clone())
    }
}

/// What `Settings.__reduce__` returns: the class and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, (&'static str, Bound<'py, PyDict>));

/// One solver's settings (`solver_config=` and the estimator's parameters), read over the
/// engine's defaults (each settings struct's `Default`) and validated by the engine once, on
/// creation; [`fit`] takes it as it is.
#[pyclass(frozen, eq, name = "Settings", module = "multikernel._core")]
pub(crate) struct PySettings(Settings);

impl PySettings {
    /// The settings of the analytic ℓp solver (`Settings("analytic", ...)`), which the shared
    /// multiclass fit reads (`super::shared`).
    pub(crate) fn lp(&self) -> Option<&LpConfig> {
        match &self.0 {
            Settings::Lp(c) => Some(c),
            _ => None,
        }
    }
}

impl PartialEq for PySettings {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

#[pymethods]
impl PySettings {
    /// The settings of `solver` from `settings` (missing keys take the engine's defaults).
    #[new]
    #[pyo3(signature = (solver, settings=None))]
    fn new(solver: &str, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Settings::read(solver, settings).map(PySettings)
    }

    /// The solver these settings are for.
    #[getter]
    fn solver(&self) -> &'static str {
        self.0.name()
    }

    /// Every setting by name, the defaults filled in.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.0.to_dict(py)
    }

    /// A copy with `changes` applied, validated as a new one.
    #[pyo3(signature = (**changes))]
    fn replace(&self, py: Python<'_>, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let d = self.0.to_dict(py)?;
        if let Some(c) = changes {
            d.update(c.as_mapping())?;
        }
        Self::new(self.0.name(), Some(&d))
    }

    /// These settings as those of `solver` (`solvers::Settings::for_solver`): `C`, the loss,
    /// `tol`, `max_iter` and the penalty carried over, the rest `solver`'s defaults;
    /// `continued` sets the wrapper's continuation by SpicyMKL.
    #[pyo3(signature = (solver, continued=false))]
    fn for_solver(&self, solver: &str, continued: bool) -> PyResult<Self> {
        Ok(PySettings(self.0.for_solver(solver, continued)?))
    }

    /// A copy with the group penalty's group ids `ids`, one per kernel.
    fn with_groups(&self, ids: Vec<usize>) -> PyResult<Self> {
        Ok(PySettings(self.0.with_groups(ids)?))
    }

    /// One setting (`KeyError` if the solver has none of that name).
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        self.0
            .to_dict(py)?
            .get_item(key)?
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))
    }

    /// The names of the engine's solvers.
    #[staticmethod]
    fn solvers() -> Vec<&'static str> {
        SOLVER_NAMES.to_vec()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Settings({:?}, {})",
            self.0.name(),
            self.0.to_dict(py)?
        ))
    }

    /// Pickled as its solver and settings (joblib sends it to worker processes).
    fn __reduce__<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let this = slf.get();
        Ok((
            slf.get_type().into_any(),
            (this.0.name(), this.0.to_dict(py)?),
        ))
    }
}

/// The warm start of [`fit`]'s arguments: SpicyMKL's (`init_coef` `(M, n)`, `init_dual`) or
/// proximal Newton's (`init_feature_weights`), each with `init_intercept`; an error for both
/// or for a dual without coefficients.
fn start_of(
    n: usize,
    init_coef: Option<PyReadonlyArray2<'_, f64>>,
    init_intercept: f64,
    init_dual: Option<PyReadonlyArray1<'_, f64>>,
    init_feature_weights: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<Option<Start>> {
    Ok(match init_coef {
        Some(a) if a.as_array().ncols() != n => {
            return Err(PyErr::from(MkError::Shape(format!(
                "init_coef must have shape (M, n={n}), got {:?}",
                a.as_array().shape()
            ))))
        }
        Some(_) if init_feature_weights.is_some() => {
            return Err(PyErr::from(MkError::config(
                "init_feature_weights",
                "is a start in feature space; init_coef one in the kernels' space: pass one",
            )))
        }
        Some(a) => Some(Start::Spicy(SpicyStart {
            // Row-major (M, n) whatever the array's strides.
            coef: a.as_array().iter().copied().collect(),
            intercept: init_intercept,
            dual: init_dual.map(|d| d.as_array().to_vec()),
        })),
        None if init_dual.is_some() => {
            return Err(PyErr::from(MkError::config(
                "init_dual",
                "needs init_coef (the starting point's coefficients)",
            )))
        }
        None => init_feature_weights.map(|v| {
            Start::Features(FeatureStart {
                weights: v.as_array().to_vec(),
                intercept: init_intercept,
            })
        }),
    })
}

/// Fits the solver of `settings` on a dense (float64 or float32) stack; `on_iteration(primal,
/// dual, gap, active, seconds)` is called on the calling thread for every outer iteration.
/// `spicy` starts from `init_coef` `(M, n)`, `init_intercept` and `init_dual` `(n,)` (the dual
/// in the solver's scale, `ρ̃/C`; None: from the start's predictions) when `init_coef` is
/// given; `prox_newton` from `init_feature_weights` (its `feature_weights`) and
/// `init_intercept`. `sample_weight` `(n,)`, finite and > 0, weights each sample's loss
/// (`C w_i`).
#[pyfunction]
#[pyo3(signature = (
    settings, g, y, *, n_threads=0, on_iteration=None, init_coef=None, init_intercept=0.0,
    init_dual=None, init_feature_weights=None, sample_weight=None
))]
#[allow(clippy::too_many_arguments)]
fn fit<'py>(
    py: Python<'py>,
    settings: &Bound<'py, PySettings>,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, f64>,
    n_threads: usize,
    on_iteration: Option<&Bound<'py, PyAny>>,
    init_coef: Option<PyReadonlyArray2<'py, f64>>,
    init_intercept: f64,
    init_dual: Option<PyReadonlyArray1<'py, f64>>,
    init_feature_weights: Option<PyReadonlyArray1<'py, f64>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<PyFitResult> {
    let settings = &settings.get().0;
    let y = y.as_array().to_vec();
    let weights = sample_weight.map(|w| w.as_array().to_vec());
    let n = y.len();
    let start = start_of(
        n,
        init_coef,
        init_intercept,
        init_dual,
        init_feature_weights,
    )?;
    // Explicit features: a list of (n, D_k) blocks of float64 or float32 (a 3-D array
    // would extract as one too: its (n, n) slices are kernels, not features).
    let is_list =
        g.is_instance_of::<pyo3::types::PyList>() || g.is_instance_of::<pyo3::types::PyTuple>();
    // Explicit features read no stored stack: no passes.
    let (r, passes) = if settings.reads_features() && is_list {
        let w = weights.as_deref();
        let start = start.as_ref();
        let r = if let Ok(blocks) = g.extract::<Vec<PyReadonlyArray2<'_, f64>>>() {
            fit_on_blocks(py, &blocks, &y, w, settings, start, n_threads, on_iteration)?
        } else if let Ok(blocks) = g.extract::<Vec<PyReadonlyArray2<'_, f32>>>() {
            fit_on_blocks(py, &blocks, &y, w, settings, start, n_threads, on_iteration)?
        } else if let Ok(blocks) = g.extract::<Vec<CsrArrays<'_>>>() {
            let x = sparse_rows(&blocks, n)?;
            run_detached(py, n_threads, on_iteration, |i| {
                solvers::fit(settings, Data::Sparse(&x), &y, w, start, i)
            })?
        } else {
            return Err(PyErr::from(MkError::config(
                "solver",
                format!(
                    "{} needs explicit features: a list of float64 or float32 arrays \
                     (n, D_k), or of the CSR arrays (data, indices, indptr, n_cols) of sparse \
                     ones, one per kernel (kernels=FeatureBank(...) in the estimators)",
                    settings.name()
                ),
            )));
        };
        (r, None)
    } else if is_list && g.extract::<Vec<CsrArrays<'_>>>().is_ok() {
        return Err(PyErr::from(solvers::sparse_refused(settings)));
    } else {
        if g.cast::<super::kernels::PyOnDemand>().is_ok() {
            on_demand_supported(settings)?;
        }
        let (w, start) = (weights.as_deref(), start.as_ref());
        with_dense(g, |s| {
            let r = run_detached(py, n_threads, on_iteration, |i| {
                solvers::fit(settings, Data::Stack(s), &y, w, start, i)
            })?;
            Ok((r, stack_passes(s)))
        })?
    };
    Ok(PyFitResult::new(py, r.result, n, r.solvers)?.with_passes(passes))
}

/// The passes over `s` read so far ([`KernelStack::entries_read`] over `M·n²`), for a stack
/// that counts its reads.
pub(super) fn stack_passes(s: &dyn KernelStack) -> Option<f64> {
    let entries = s.m() * s.n() * s.n();
    s.entries_read().map(|e| e as f64 / entries as f64)
}

/// Refuses settings that cannot fit kernels computed on demand, with [`on_demand_rule`].
fn on_demand_supported(settings: &Settings) -> PyResult<()> {
    if settings.on_demand() {
        return Ok(());
    }
    Err(PyErr::from(MkError::config(
        "solver",
        format!(
            "{}; got solver {:?} with the {} loss",
            solvers::on_demand_rule(),
            settings.name(),
            settings.clone().loss_mut().map_or("(no)", |l| l.name())
        ),
    )))
}

/// What each solver fits, as the engine states it ([`solvers::capabilities`]): `{solver:
/// {"features": bool, "warm_start": bool, "penalties": [...], "losses": [...],
/// "on_demand_losses": [...]}}`.
#[pyfunction]
fn capabilities(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = PyDict::new(py);
    for cap in solvers::capabilities() {
        let row = PyDict::new(py);
        row.set_item("features", cap.features)?;
        row.set_item("warm_start", cap.warm_start)?;
        row.set_item("penalties", cap.penalties)?;
        row.set_item("losses", cap.losses)?;
        row.set_item("on_demand_losses", cap.on_demand_losses)?;
        table.set_item(cap.solver, row)?;
    }
    Ok(table)
}

/// The rule of kernels computed on demand, in words ([`solvers::on_demand_rule`]).
#[pyfunction]
fn on_demand_rule() -> String {
    solvers::on_demand_rule()
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

/// Follows the regularization path of block-ℓ1 MKL (no intercept) on a dense stack;
/// `on_iteration(primal, dual, gap, active, seconds)` is called for every point;
/// `sample_weight` `(n,)`, finite and > 0, weights each sample's loss.
#[pyfunction]
#[pyo3(signature = (g, y, settings, *, n_threads=0, on_iteration=None, sample_weight=None))]
fn path<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    y: PyReadonlyArray1<'py, f64>,
    settings: &Bound<'py, PySettings>,
    n_threads: usize,
    on_iteration: Option<&Bound<'py, PyAny>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<PyPathResult> {
    let Settings::Path(cfg) = &settings.get().0 else {
        return Err(PyErr::from(MkError::config(
            "settings",
            format!(
                "path() runs Settings('path', ...), got the settings of solver {:?}",
                settings.get().0.name()
            ),
        )));
    };
    let y = y.as_array().to_vec();
    let w = sample_weight.map(|w| w.as_array().to_vec());
    let n = y.len();
    let (r, m) = with_dense(g, |s| {
        let m = s.m();
        run_detached(py, n_threads, on_iteration, |i| {
            fit_path_weighted(s, &y, w.as_deref(), cfg, i)
        })
        .map(|r| (r, m))
    })?;
    PyPathResult::new(py, r, n, m)
}

/// Runs a feature-space solver (SVRG, proximal Newton) on `(n, D_k)` feature blocks read as
/// one row-major matrix of their element type: SVRG's inner loop reads random rows, and one
/// contiguous row is faster to read than a row of each block (docs/performance.md). Blocks that
/// are consecutive column ranges of one C-ordered buffer (what `FeatureBank` returns) are read
/// in place, any others copied once (float32 stays float32).
#[allow(clippy::too_many_arguments)]
fn fit_on_blocks<T: RowElement + numpy::Element>(
    py: Python<'_>,
    blocks: &[PyReadonlyArray2<'_, T>],
    y: &[f64],
    weights: Option<&[f64]>,
    settings: &Settings,
    start: Option<&Start>,
    n_threads: usize,
    on_iteration: Option<&Bound<'_, PyAny>>,
) -> PyResult<Fitted> {
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
    let feats = RowFeatures::new(data, n, &dims)?;
    run_detached(py, n_threads, on_iteration, |i| {
        solvers::fit(settings, T::data(&feats), y, weights, start, i)
    })
}

/// Sparse feature blocks side by side, each of `n` rows, checked ([`csr_matrix`]).
fn sparse_rows(blocks: &[CsrArrays<'_>], n: usize) -> PyResult<SparseRowFeatures> {
    let csr = blocks
        .iter()
        .map(csr_matrix)
        .collect::<PyResult<Vec<_>>>()?;
    if csr.iter().any(|b| b.nrows() != n) {
        return Err(PyErr::from(MkError::Shape(format!(
            "every feature block must have {n} rows, one per target"
        ))));
    }
    Ok(SparseRowFeatures::new(&csr)?)
}

/// Fits `prox_newton` (`settings`) on rows held by a Python object (`multikernel._dask_fit`:
/// the chunks of Dask arrays on a cluster) with `reduce(code)` and `update(code)`
/// ([`PyRows`]): `n` points, kernel `k` of `dims[k]` features. The engine's loop runs here;
/// every pass over the rows is a reduction on the chunks. From `init_feature_weights` and
/// `init_intercept` when given. `sparse`: the chunks' features are sparse (their working sets
/// take Hessian products from the width they do in memory). The result's `coef` is empty
/// (`(M, 0)`): its `n` columns stay with the rows.
#[pyfunction]
#[pyo3(signature = (
    settings, rows, dims, n, *, n_threads=0, on_iteration=None, init_feature_weights=None,
    init_intercept=0.0, sparse=false
))]
#[allow(clippy::too_many_arguments)]
fn fit_rows<'py>(
    py: Python<'py>,
    settings: &Bound<'py, PySettings>,
    rows: &Bound<'py, PyAny>,
    dims: Vec<usize>,
    n: usize,
    n_threads: usize,
    on_iteration: Option<&Bound<'py, PyAny>>,
    init_feature_weights: Option<PyReadonlyArray1<'py, f64>>,
    init_intercept: f64,
    sparse: bool,
) -> PyResult<PyFitResult> {
    let Settings::ProxNewton(cfg) = &settings.get().0 else {
        return Err(PyErr::from(MkError::config(
            "solver",
            format!(
                "fits on a cluster's rows run prox_newton, got {:?}",
                settings.get().0.name()
            ),
        )));
    };
    let start = init_feature_weights.map(|v| FeatureStart {
        weights: v.as_array().to_vec(),
        intercept: init_intercept,
    });
    let held = PyRows::new(rows.clone().unbind(), n, &dims, sparse)?;
    // Its own pool: the rows' reductions wait for tasks that may run the engine in this
    // process (in-process workers).
    let r = run_detached_apart(py, n_threads, on_iteration, |i| {
        fit_prox_newton_on(&held, cfg, start.as_ref(), i)
    });
    if let Some(e) = held.take_error() {
        return Err(e);
    }
    PyFitResult::new(py, r?, 0, vec!["prox_newton"])
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
/// so the tests can check that a panic reaches Python as `InternalError`. Private and
/// harmless in a user's build: compiled into every build so the tests need no second one.
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

/// The group penalty's group weights `γ` (summing to one) of the kernel weights `weights`,
/// kernel `m` in group `ids[m]` (`0..J`): `penalties::Groups::gammas`.
#[pyfunction]
fn group_weights(weights: Vec<f64>, ids: Vec<usize>) -> PyResult<Vec<f64>> {
    if weights.len() != ids.len() {
        return Err(PyErr::from(MkError::Shape(format!(
            "{} kernel weights for {} group ids",
            weights.len(),
            ids.len()
        ))));
    }
    Ok(Groups::new(&ids)?.gammas(&weights))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Status>()?;
    m.add_class::<PyFitResult>()?;
    m.add_class::<PyPathResult>()?;
    m.add_function(wrap_pyfunction!(path, m)?)?;
    m.add_class::<PySettings>()?;
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(fit_rows, m)?)?;
    m.add_function(wrap_pyfunction!(capabilities, m)?)?;
    m.add_function(wrap_pyfunction!(on_demand_rule, m)?)?;
    m.add_function(wrap_pyfunction!(group_weights, m)?)?;
    m.add_function(wrap_pyfunction!(svm, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}
