//! Bindings of the kernel layer.

use std::ops::Range;
use std::sync::Mutex;

use numpy::{
    AllowTypeChange, IntoPyArray, PyArray1, PyArray2, PyArrayLikeDyn, PyReadonlyArray1,
    PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice};
use rayon::prelude::*;

use super::convert::{
    csr_matrix, detached, input_error, run_detached, run_reporting, CsrArrays, Report,
};
use crate::error::{MkError, Result as MkResult};
use crate::kernels::features;
use crate::kernels::{
    cross_gram_bank, gram_bank_weighted, of_kernel, simplemkl_bank, validate_features, BankKernel,
    BlockKernel, CsrMatrix, DenseStack, Element, GramOptions, KernelFn, KernelSpec, KernelStack,
    LowRankStack, NormStats, Normalization, OnDemandKernel, OnDemandStack, Points, SeqColumn,
    SeqKernel, SeqKernelFn, Vocabulary,
};
use crate::kernels::{fit_sequence_features, sequence_features as map_sequence_features};

/// A kernel specification as it crosses the binding: `(kind, a, b, c, features)`;
/// polynomial `(degree, coef0, scale)`, gaussian and laplacian `(sigma, 0, 0)`, chi2
/// `(gamma, 0, 0)`, intersection, hellinger and tanimoto `(0, 0, 0)`; the sequence kernels
/// spectrum `(k, 0, 0)` and weighted_degree `(degree, shift, 0)`, whose features are one index
/// into the sequence columns.
type SpecTuple = (String, f64, f64, f64, Option<Vec<usize>>);

/// A non-negative integer setting of a sequence kernel.
fn count(name: &str, v: f64) -> PyResult<usize> {
    if v.fract() == 0.0 && v >= 0.0 && v <= u32::MAX as f64 {
        Ok(v as usize)
    } else {
        Err(input_error(format!(
            "{name} must be a non-negative integer, got {v}"
        )))
    }
}

/// The sequence kernel of `t` and the sequence column it reads; None for a vector kernel.
fn seq_from(t: &SpecTuple) -> Option<PyResult<(SeqKernelFn, usize)>> {
    let (kind, a, b, _, features) = t;
    let func = match kind.as_str() {
        "spectrum" => count("k", *a).map(|k| SeqKernelFn::Spectrum { k }),
        "weighted_degree" => count("degree", *a).and_then(|degree| {
            count("shift", *b).map(|shift| SeqKernelFn::WeightedDegree { degree, shift })
        }),
        _ => return None,
    };
    Some(func.and_then(|f| match features.as_deref() {
        Some(&[column]) => Ok((f, column)),
        _ => Err(input_error(format!(
            "a {} kernel reads one sequence column, got columns {features:?}",
            f.name()
        ))),
    }))
}

/// The sequence columns as they cross the binding: `(data, offsets)`, the bytes of a
/// column's sequences one after another (uint8) and the `n + 1` offsets of their starts.
type SeqArrays<'py> = Vec<(PyReadonlyArray1<'py, u8>, PyReadonlyArray1<'py, i64>)>;

fn seq_columns(arrays: Option<SeqArrays<'_>>) -> PyResult<Vec<SeqColumn>> {
    arrays
        .unwrap_or_default()
        .iter()
        .map(|(data, offsets)| {
            let offsets = offsets
                .as_array()
                .iter()
                .map(|&o| usize::try_from(o).map_err(|_| input_error("negative offset")))
                .collect::<PyResult<Vec<usize>>>()?;
            SeqColumn::new(data.as_array().to_vec(), offsets).map_err(PyErr::from)
        })
        .collect()
}

fn spec_from(t: &SpecTuple) -> PyResult<KernelSpec> {
    let (kind, a, b, c, features) = t;
    let func = match kind.as_str() {
        "linear" => KernelFn::Linear,
        "polynomial" => {
            if !(a.fract() == 0.0 && *a >= 1.0 && *a <= u32::MAX as f64) {
                return Err(input_error(format!(
                    "polynomial degree must be a positive integer, got {a}"
                )));
            }
            KernelFn::Polynomial {
                degree: *a as u32,
                coef0: *b,
                scale: *c,
            }
        }
        "gaussian" => KernelFn::Gaussian { sigma: *a },
        "laplacian" => KernelFn::Laplacian { sigma: *a },
        "chi2" => KernelFn::Chi2 { gamma: *a },
        "intersection" => KernelFn::Intersection,
        "hellinger" => KernelFn::Hellinger,
        "tanimoto" => KernelFn::Tanimoto,
        other => {
            return Err(input_error(format!(
                "unknown kernel kind {other:?}; valid: linear, polynomial, gaussian, laplacian, \
                 chi2, intersection, hellinger, tanimoto"
            )))
        }
    };
    Ok(KernelSpec {
        func,
        features: features.clone(),
    })
}

fn spec_to(s: &KernelSpec) -> SpecTuple {
    let (kind, a, b, c) = match s.func {
        KernelFn::Linear => ("linear", 0.0, 0.0, 0.0),
        KernelFn::Polynomial {
            degree,
            coef0,
            scale,
        } => ("polynomial", degree as f64, coef0, scale),
        KernelFn::Gaussian { sigma } => ("gaussian", sigma, 0.0, 0.0),
        KernelFn::Laplacian { sigma } => ("laplacian", sigma, 0.0, 0.0),
        KernelFn::Chi2 { gamma } => ("chi2", gamma, 0.0, 0.0),
        KernelFn::Intersection => ("intersection", 0.0, 0.0, 0.0),
        KernelFn::Hellinger => ("hellinger", 0.0, 0.0, 0.0),
        KernelFn::Tanimoto => ("tanimoto", 0.0, 0.0, 0.0),
    };
    (kind.to_string(), a, b, c, s.features.clone())
}

fn norm_name(n: Normalization) -> &'static str {
    match n {
        Normalization::None => "none",
        Normalization::Trace => "trace",
        Normalization::MeanDiag => "mean_diag",
        Normalization::Multiplicative => "multiplicative",
        Normalization::Spherical => "spherical",
    }
}

fn stats_to_dict<'py>(py: Python<'py>, s: NormStats) -> PyResult<Bound<'py, PyDict>> {
    let m = s.m();
    let n = s.n;
    let d = PyDict::new(py);
    d.set_item("normalize", norm_name(s.normalization))?;
    d.set_item("center", s.center)?;
    d.set_item("n", n)?;
    let rows = if s.center { n } else { 0 };
    let drows = if s.normalization == Normalization::Spherical {
        n
    } else {
        0
    };
    d.set_item("degenerate", s.degenerate())?;
    d.set_item(
        "row_means",
        ndarray::Array2::from_shape_vec((m, rows), s.row_means)
            .map_err(|e| input_error(e.to_string()))?
            .into_pyarray(py),
    )?;
    d.set_item("total_means", s.total_means.into_pyarray(py))?;
    d.set_item(
        "diag",
        ndarray::Array2::from_shape_vec((m, drows), s.diag)
            .map_err(|e| input_error(e.to_string()))?
            .into_pyarray(py),
    )?;
    d.set_item("scales", s.scales.into_pyarray(py))?;
    d.set_item("weights", s.weights.into_pyarray(py))?;
    Ok(d)
}

fn stats_from_dict(d: &Bound<'_, PyDict>) -> PyResult<NormStats> {
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        d.get_item(k)?
            .ok_or_else(|| input_error(format!("normalisation statistics lack {k:?}")))
    };
    let flat2 = |k: &str| -> PyResult<Vec<f64>> {
        let a: PyReadonlyArray2<f64> = get(k)?.extract()?;
        Ok(a.as_array().iter().copied().collect())
    };
    let flat1 = |k: &str| -> PyResult<Vec<f64>> {
        let a: PyReadonlyArray1<f64> = get(k)?.extract()?;
        Ok(a.as_array().to_vec())
    };
    let name: String = get("normalize")?.extract()?;
    // Statistics kept before weights existed have none: uniform.
    let weights = match d.get_item("weights")? {
        Some(w) => w.extract::<PyReadonlyArray1<f64>>()?.as_array().to_vec(),
        None => Vec::new(),
    };
    Ok(NormStats {
        weights,
        normalization: Normalization::parse(&name)?,
        center: get("center")?.extract()?,
        n: get("n")?.extract()?,
        row_means: flat2("row_means")?,
        total_means: flat1("total_means")?,
        diag: flat2("diag")?,
        scales: flat1("scales")?,
    })
}

fn options(
    normalize: &str,
    center: bool,
    n_threads: usize,
    max_bytes: Option<u64>,
) -> PyResult<GramOptions> {
    Ok(GramOptions {
        normalization: Normalization::parse(normalize)?,
        center,
        n_threads,
        max_bytes,
    })
}

/// A kernel of a bank as it crosses the binding: a specification tuple, or a Python function
/// `fn(A, B) -> (len(A), len(B))` with the feature columns it reads, `(fn, features)`.
enum Entry {
    Spec(KernelSpec),
    Func(Py<PyAny>, Option<Vec<usize>>),
    /// A sequence kernel and the index of the sequence column it reads.
    Seq(SeqKernelFn, usize),
}

fn entries_from(specs: &[Bound<'_, PyAny>]) -> PyResult<Vec<Entry>> {
    specs
        .iter()
        .enumerate()
        .map(|(m, s)| {
            if let Ok(t) = s.extract::<SpecTuple>() {
                if let Some(seq) = seq_from(&t) {
                    let (f, column) = seq?;
                    return Ok(Entry::Seq(f, column));
                }
                return Ok(Entry::Spec(spec_from(&t)?));
            }
            match s.extract::<(Bound<'_, PyAny>, Option<Vec<usize>>)>() {
                Ok((f, features)) if f.is_callable() => Ok(Entry::Func(f.unbind(), features)),
                _ => Err(input_error(format!(
                    "kernel {m} must be a tuple (kind, a, b, c, features) or (function, \
                     features), got {s}"
                ))),
            }
        })
        .collect()
}

/// A Python kernel function evaluated on blocks of rows of `a` against all of `b`; the GIL is
/// taken only for each call, so the engine's other kernels run meanwhile.
struct PyBlockKernel {
    /// Index of the kernel in the bank (for errors).
    kernel: usize,
    func: Py<PyAny>,
    /// `(n_rows, d)` float64 points of the stack's rows, and `(n_cols, d)` of its columns.
    a: Py<PyAny>,
    b: Py<PyAny>,
    n_cols: usize,
    /// The exception `func` raised, re-raised as is once the engine has stopped.
    raised: Mutex<Option<PyErr>>,
}

impl PyBlockKernel {
    /// `func(a[rows], a[rows])` when `self_block`, else `func(a[rows], b)`, checked to be
    /// `(rows.len(), cols)` and handed to `write` as float64.
    fn call(
        &self,
        rows: Range<usize>,
        self_block: bool,
        write: impl FnOnce(ndarray::ArrayViewD<'_, f64>),
    ) -> MkResult<()> {
        let len = rows.len();
        let cols = if self_block { len } else { self.n_cols };
        Python::attach(|py| {
            let slice = PySlice::new(py, rows.start as isize, rows.end as isize, 1);
            let value = self.a.bind(py).get_item(slice).and_then(|a| {
                let b = if self_block {
                    a.clone()
                } else {
                    self.b.bind(py).clone()
                };
                self.func.bind(py).call1((a, b))
            });
            let value = value.map_err(|e| {
                let reason = format!("the kernel function raised {e}");
                self.raised
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
                self.error(reason)
            })?;
            let shape_error = |got: String| {
                self.error(format!(
                    "the kernel function returned {got} for A of {len} rows and B of {cols} \
                     rows; it must return a numeric array of shape (len(A), len(B)) = \
                     ({len}, {cols})"
                ))
            };
            let arr = value
                .extract::<PyArrayLikeDyn<'_, f64, AllowTypeChange>>()
                .map_err(|_| shape_error(format!("a {}", type_name(&value))))?;
            let view = arr.as_array();
            if view.shape() != [len, cols] {
                return Err(shape_error(format!(
                    "an array of shape {}",
                    shape(view.shape())
                )));
            }
            write(view);
            Ok(())
        })
    }

    fn error(&self, reason: String) -> MkError {
        MkError::KernelFunction {
            kernel: self.kernel,
            reason,
        }
    }
}

/// A shape as Python writes it: `(2, 3)`, `(4,)`, `()`.
fn shape(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => {
            let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "value".into(), |n| n.to_string())
}

impl BlockKernel for PyBlockKernel {
    fn rows(&self, rows: Range<usize>, out: &mut [f64]) -> MkResult<()> {
        self.call(rows, false, |v| {
            for (o, x) in out.iter_mut().zip(v.iter()) {
                *o = *x;
            }
        })
    }

    fn self_values(&self, rows: Range<usize>, out: &mut [f64]) -> MkResult<()> {
        // One call on the block against itself; its diagonal is k(a_i, a_i).
        self.call(rows, true, |v| {
            for (i, o) in out.iter_mut().enumerate() {
                *o = v[[i, i]];
            }
        })
    }
}

/// The Python kernels of `entries` on the rows of `a` (the stack's rows) against those of `b`
/// (its columns), each reading its feature columns; `b` is `a` for a training stack.
fn py_kernels<'py>(
    py: Python<'py>,
    entries: &[Entry],
    a: &PyReadonlyArray2<'py, f64>,
    b: Option<&PyReadonlyArray2<'py, f64>>,
) -> PyResult<Vec<PyBlockKernel>> {
    // The function gets read-only arrays: a view of the caller's points (never the caller's
    // array itself, which it could otherwise overwrite), or the selected columns.
    let columns = |x: &PyReadonlyArray2<'py, f64>, f: &Option<Vec<usize>>| -> PyResult<Py<PyAny>> {
        let arr = match f {
            None => x.as_any().call_method0("view")?,
            Some(f) => x
                .as_array()
                .select(ndarray::Axis(1), f)
                .into_pyarray(py)
                .into_any(),
        };
        arr.getattr("flags")?.setattr("writeable", false)?;
        Ok(arr.unbind())
    };
    let mut out = Vec::new();
    for (m, e) in entries.iter().enumerate() {
        if let Entry::Func(func, features) = e {
            // Checked on both sides before the columns are selected (the engine checks the
            // specifications, not the functions).
            for x in std::iter::once(a).chain(b) {
                validate_features(features, x.as_array().ncols())
                    .map_err(|e| PyErr::from(of_kernel(m, e)))?;
            }
            let xa = columns(a, features)?;
            let (xb, n_cols) = match b {
                Some(b) => (columns(b, features)?, b.as_array().nrows()),
                None => (xa.clone_ref(py), a.as_array().nrows()),
            };
            out.push(PyBlockKernel {
                kernel: m,
                func: func.clone_ref(py),
                a: xa,
                b: xb,
                n_cols,
                raised: Mutex::new(None),
            });
        }
    }
    Ok(out)
}

/// The sequence kernels of `entries` between the sequence columns `a` (the stack's rows) and
/// `b` (its columns; None for a training stack), each checked to have as many sequences as
/// the stack has rows (`na`) and columns (`nb`).
fn seq_kernels<'c>(
    entries: &[Entry],
    a: &'c [SeqColumn],
    b: Option<&'c [SeqColumn]>,
    na: usize,
    nb: usize,
) -> PyResult<Vec<SeqKernel<'c>>> {
    let mut out = Vec::new();
    for (m, e) in entries.iter().enumerate() {
        if let Entry::Seq(f, column) = *e {
            let pick = |cols: &'c [SeqColumn], n: usize, what: &str| -> PyResult<&'c SeqColumn> {
                let col = cols.get(column).ok_or_else(|| {
                    input_error(format!(
                        "kernel {m}, {}, reads sequence column {column}, but {what} has {} \
                         sequence columns",
                        f.name(),
                        cols.len()
                    ))
                })?;
                if col.len() != n {
                    return Err(input_error(format!(
                        "sequence column {column} of {what} has {} sequences for {n} points",
                        col.len()
                    )));
                }
                Ok(col)
            };
            let sa = pick(a, na, "X")?;
            let sb = b.map(|b| pick(b, nb, "X_train")).transpose()?;
            out.push(SeqKernel::new(m, f, sa, sb).map_err(|e| PyErr::from(of_kernel(m, e)))?);
        }
    }
    Ok(out)
}

/// The bank as the engine sees it: the specifications, `funcs` in place of the functions and
/// `seqs` in place of the sequence kernels.
fn bank<'a>(
    entries: &'a [Entry],
    funcs: &'a [PyBlockKernel],
    seqs: &'a [SeqKernel<'a>],
) -> Vec<BankKernel<'a>> {
    let mut funcs = funcs.iter();
    let mut seqs = seqs.iter();
    entries
        .iter()
        .map(|e| match e {
            Entry::Spec(s) => BankKernel::Spec(s),
            Entry::Func(..) => {
                BankKernel::Blocks(funcs.next().expect("one PyBlockKernel per function"))
            }
            Entry::Seq(..) => {
                BankKernel::Blocks(seqs.next().expect("one SeqKernel per sequence kernel"))
            }
        })
        .collect()
}

/// Points as they cross the binding: a float64 matrix, or a sparse matrix as the tuple
/// `(data, indices, indptr, n_cols)` of its CSR arrays (float64, int64, int64; canonical:
/// each row's indices sorted, no duplicates), read without a dense copy.
enum PyPoints<'py> {
    Dense(PyReadonlyArray2<'py, f64>),
    Sparse(CsrMatrix),
}

impl<'py> PyPoints<'py> {
    fn from(x: &Bound<'py, PyAny>, name: &str) -> PyResult<Self> {
        if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f64>>() {
            return Ok(PyPoints::Dense(a));
        }
        let arrays = x.extract::<CsrArrays<'py>>().map_err(|_| {
            input_error(format!(
                "{name} must be a float64 array of shape (n, d) or the CSR arrays (data, \
                 indices, indptr, n_cols) of a sparse matrix"
            ))
        })?;
        let csr = csr_matrix(&arrays)?;
        Ok(PyPoints::Sparse(csr))
    }

    fn view(&self) -> Points<'_> {
        match self {
            PyPoints::Dense(a) => Points::Dense(a.as_array()),
            PyPoints::Sparse(c) => Points::Sparse(c),
        }
    }

    fn dense(&self) -> Option<&PyReadonlyArray2<'py, f64>> {
        match self {
            PyPoints::Dense(a) => Some(a),
            PyPoints::Sparse(_) => None,
        }
    }
}

/// The Python kernels of `entries` ([`py_kernels`]) on the points `a` (and `b`), which must
/// be dense when there is one: a Python function takes NumPy arrays.
fn py_kernels_of<'py>(
    py: Python<'py>,
    entries: &[Entry],
    a: &PyPoints<'py>,
    b: Option<&PyPoints<'py>>,
) -> PyResult<Vec<PyBlockKernel>> {
    match (a.dense(), b.map(PyPoints::dense)) {
        (Some(a), None) => py_kernels(py, entries, a, None),
        (Some(a), Some(Some(b))) => py_kernels(py, entries, a, Some(b)),
        _ => match entries.iter().position(|e| matches!(e, Entry::Func(..))) {
            Some(m) => Err(input_error(format!(
                "kernel {m} is a Python function, which takes dense arrays, but X is sparse: \
                 pass X.toarray() if it fits in memory"
            ))),
            None => Ok(Vec::new()),
        },
    }
}

/// The exception a kernel function raised, if one did: it explains the engine's error better
/// than the engine can.
fn reraise(funcs: &[PyBlockKernel], err: PyErr) -> PyErr {
    funcs
        .iter()
        .find_map(|f| f.raised.lock().unwrap_or_else(|p| p.into_inner()).take())
        .unwrap_or(err)
}

/// Training Gram stack and normalisation statistics (weighted by `sample_weight`).
///
/// `on_kernels(done)`, when given, is called on this thread with the number of kernels
/// computed so far, every 50 ms while it grows (a progress bar).
#[pyfunction]
#[pyo3(signature = (
    x, specs, normalize, center, float32, n_threads, max_bytes=None, sample_weight=None,
    on_kernels=None, sequences=None
))]
#[allow(clippy::too_many_arguments)]
fn gram_fit<'py>(
    py: Python<'py>,
    x: Bound<'py, PyAny>,
    specs: Vec<Bound<'py, PyAny>>,
    normalize: &str,
    center: bool,
    float32: bool,
    n_threads: usize,
    max_bytes: Option<u64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    on_kernels: Option<Bound<'py, PyAny>>,
    sequences: Option<SeqArrays<'py>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let report = on_kernels.as_ref().map(Report::Kernels);
    let w = sample_weight.map(|w| w.as_array().to_vec());
    let entries = entries_from(&specs)?;
    let opts = options(normalize, center, n_threads, max_bytes)?;
    let x = PyPoints::from(&x, "X")?;
    let funcs = py_kernels_of(py, &entries, &x, None)?;
    let columns = seq_columns(sequences)?;
    let xv = x.view();
    let n = xv.nrows();
    let seqs = py.detach(|| seq_kernels(&entries, &columns, None, n, n))?;
    let kernels = bank(&entries, &funcs, &seqs);
    let (g, s) = if float32 {
        let (g, s) = run_reporting(py, n_threads, report, |i| {
            gram_bank_weighted::<f32>(xv, &kernels, &opts, w.as_deref(), i)
        })
        .map_err(|e| reraise(&funcs, e))?;
        (g.into_pyarray(py).into_any(), s)
    } else {
        let (g, s) = run_reporting(py, n_threads, report, |i| {
            gram_bank_weighted::<f64>(xv, &kernels, &opts, w.as_deref(), i)
        })
        .map_err(|e| reraise(&funcs, e))?;
        (g.into_pyarray(py).into_any(), s)
    };
    Ok((g, stats_to_dict(py, s)?))
}

/// Cross kernels between new points and the training points.
#[pyfunction]
#[pyo3(signature = (
    x_new, x_train, specs, stats, float32, n_threads, max_bytes=None, sequences_new=None,
    sequences_train=None
))]
#[allow(clippy::too_many_arguments)]
fn gram_cross<'py>(
    py: Python<'py>,
    x_new: Bound<'py, PyAny>,
    x_train: Bound<'py, PyAny>,
    specs: Vec<Bound<'py, PyAny>>,
    stats: &Bound<'py, PyDict>,
    float32: bool,
    n_threads: usize,
    max_bytes: Option<u64>,
    sequences_new: Option<SeqArrays<'py>>,
    sequences_train: Option<SeqArrays<'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    let entries = entries_from(&specs)?;
    let st = stats_from_dict(stats)?;
    let opts = options(norm_name(st.normalization), st.center, n_threads, max_bytes)?;
    let (x_new, x_train) = (
        PyPoints::from(&x_new, "X")?,
        PyPoints::from(&x_train, "X_train")?,
    );
    let funcs = py_kernels_of(py, &entries, &x_new, Some(&x_train))?;
    let (cols_a, cols_b) = (seq_columns(sequences_new)?, seq_columns(sequences_train)?);
    let (a, b) = (x_new.view(), x_train.view());
    let (na, nb) = (a.nrows(), b.nrows());
    let seqs = py.detach(|| seq_kernels(&entries, &cols_a, Some(&cols_b), na, nb))?;
    let kernels = bank(&entries, &funcs, &seqs);
    if float32 {
        let g = run_detached(py, n_threads, None, |i| {
            cross_gram_bank::<f32>(a, b, &kernels, &st, &opts, i)
        })
        .map_err(|e| reraise(&funcs, e))?;
        Ok(g.into_pyarray(py).into_any())
    } else {
        let g = run_detached(py, n_threads, None, |i| {
            cross_gram_bank::<f64>(a, b, &kernels, &st, &opts, i)
        })
        .map_err(|e| reraise(&funcs, e))?;
        Ok(g.into_pyarray(py).into_any())
    }
}

/// Low rank: `K_m = Φ_m Φ_mᵀ` from `(n, r_m)` factors, stored in f64 as `r_m` columns of
/// length `n`.
fn low_rank_stack<T: Element + numpy::Element>(
    list: &[PyReadonlyArray2<'_, T>],
) -> PyResult<LowRankStack> {
    let n = list.first().map_or(0, |a| a.as_array().nrows());
    if list.iter().any(|a| a.as_array().nrows() != n) {
        return Err(input_error(
            "every factor must have the same number of rows n",
        ));
    }
    // One pass per block, the blocks in parallel: a (n, r) block of any strides becomes r
    // contiguous f64 columns (the conversion runs before the fit can be interrupted).
    let views: Vec<ndarray::ArrayView2<'_, T>> = list.iter().map(|a| a.as_array()).collect();
    let factors = views
        .par_iter()
        .map(|a| {
            let r = a.ncols();
            let mut out = vec![0.0; n * r];
            for (i, row) in a.rows().into_iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    out[j * n + i] = v.to_f64();
                }
            }
            out
        })
        .collect();
    LowRankStack::from_factors(n, factors).map_err(PyErr::from)
}

/// Runs `f` on a dense stack view of a float64 or float32 `(M, n, n)` array.
pub(crate) fn with_dense<R>(
    g: &Bound<'_, PyAny>,
    f: impl FnOnce(&dyn KernelStack) -> PyResult<R>,
) -> PyResult<R> {
    if let Ok(od) = g.cast::<PyOnDemand>() {
        return f(&od.get().stack);
    }
    // The entries a fit reads from the stored stack ([`KernelStack::entries_read`]).
    let reads = std::sync::atomic::AtomicU64::new(0);
    fn view<'a, T: Element + numpy::Element>(
        a: &'a PyReadonlyArray3<'_, T>,
        reads: &'a std::sync::atomic::AtomicU64,
    ) -> PyResult<DenseStack<'a, T>> {
        let sh = a.shape();
        if sh[1] != sh[2] {
            return Err(input_error(format!(
                "a kernel stack must have shape (M, n, n), got ({}, {}, {})",
                sh[0], sh[1], sh[2]
            )));
        }
        let data = a
            .as_slice()
            .map_err(|_| input_error("the kernel stack must be C-contiguous"))?;
        Ok(DenseStack::new(data, sh[0], sh[1])?.counting(reads))
    }
    if let Ok(a) = g.extract::<PyReadonlyArray3<'_, f64>>() {
        f(&view(&a, &reads)?)
    } else if let Ok(a) = g.extract::<PyReadonlyArray3<'_, f32>>() {
        f(&view(&a, &reads)?)
    } else if let Ok(list) = g.extract::<Vec<PyReadonlyArray2<'_, f64>>>() {
        f(&low_rank_stack(&list)?)
    } else if let Ok(list) = g.extract::<Vec<PyReadonlyArray2<'_, f32>>>() {
        f(&low_rank_stack(&list)?)
    } else {
        Err(input_error(
            "a kernel stack must be a float64 or float32 array of shape (M, n, n), or a list \
             of float64 factors of shape (n, r_m)",
        ))
    }
}

/// Kernels computed from the training points when a solver reads them: no `(M, n, n)` stack
/// is stored ([`OnDemandStack`]). Built-in kernel specifications only, and the
/// normalisations whose statistics come from the diagonal (`none`, `trace`, `mean_diag`,
/// `spherical`).
#[pyclass(frozen, name = "OnDemandKernels", module = "multikernel._core")]
pub(crate) struct PyOnDemand {
    stack: OnDemandStack,
}

#[pymethods]
impl PyOnDemand {
    #[new]
    #[pyo3(signature = (x, specs, normalize, cache_bytes, sample_weight=None, sequences=None))]
    fn new(
        x: PyReadonlyArray2<'_, f64>,
        specs: Vec<Bound<'_, PyAny>>,
        normalize: &str,
        cache_bytes: usize,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        sequences: Option<SeqArrays<'_>>,
    ) -> PyResult<Self> {
        let w = sample_weight.map(|w| w.as_array().to_vec());
        let columns = seq_columns(sequences)?;
        let kernels = entries_from(&specs)?
            .into_iter()
            .enumerate()
            .map(|(m, e)| match e {
                Entry::Spec(s) => Ok(OnDemandKernel::Spec(s)),
                Entry::Seq(f, column) => columns
                    .get(column)
                    .map(|c| OnDemandKernel::Seq(f, c.clone()))
                    .ok_or_else(|| {
                        input_error(format!(
                            "kernel {m}, {}, reads sequence column {column}, but X has {} \
                             sequence columns",
                            f.name(),
                            columns.len()
                        ))
                    }),
                Entry::Func(..) => Err(input_error(
                    "kernels computed on demand take the built-in kernel specifications \
                     only (vector, histogram and sequence kernels), not Python functions",
                )),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let xa = x.as_array();
        let (n, p) = xa.dim();
        let data: Vec<f64> = xa.iter().copied().collect();
        let stack = OnDemandStack::of_bank(
            &data,
            n,
            p,
            kernels,
            Normalization::parse(normalize)?,
            w.as_deref(),
            cache_bytes,
        )?;
        Ok(PyOnDemand { stack })
    }

    /// Number of points.
    #[getter]
    fn n(&self) -> usize {
        self.stack.n()
    }

    /// Number of kernels.
    #[getter]
    fn m(&self) -> usize {
        self.stack.m()
    }

    /// The bytes the solvers may spend on cached kernel values.
    #[getter]
    fn cache_bytes(&self) -> usize {
        self.stack.cache_bytes()
    }

    /// The normalisation statistics of the training points (for cross kernels).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_to_dict(py, self.stack.stats().clone())
    }

    /// The kernels on the points `idx` (a view sharing the points and the statistics).
    fn subset(&self, idx: Vec<usize>) -> PyResult<Self> {
        let n = self.stack.n();
        if let Some(&bad) = idx.iter().find(|&&i| i >= n) {
            return Err(input_error(format!(
                "index {bad} is out of range for {n} points"
            )));
        }
        Ok(PyOnDemand {
            stack: self.stack.subset(&idx),
        })
    }
}

/// `vᵀ K_m v` for every kernel of a dense stack.
#[pyfunction]
#[pyo3(signature = (g, v, n_threads=0))]
fn quad_forms<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    v: PyReadonlyArray1<'py, f64>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let v = v.as_array().to_vec();
    let out = with_dense(g, |s| {
        if v.len() != s.n() {
            return Err(input_error(format!(
                "v has length {} but the kernels are {}×{}",
                v.len(),
                s.n(),
                s.n()
            )));
        }
        let mut out = vec![0.0; s.m()];
        detached(py, n_threads, || {
            s.quad_forms(&v, &mut out);
            Ok(())
        })?;
        Ok(out)
    })?;
    Ok(out.into_pyarray(py))
}

/// Checks a precomputed stack: finite and symmetric within `rtol`.
#[pyfunction]
#[pyo3(signature = (g, rtol, n_threads=0))]
fn validate_stack(
    py: Python<'_>,
    g: &Bound<'_, PyAny>,
    rtol: f64,
    n_threads: usize,
) -> PyResult<()> {
    fn check<T: Element + numpy::Element>(
        py: Python<'_>,
        a: PyReadonlyArray3<'_, T>,
        rtol: f64,
        n_threads: usize,
    ) -> PyResult<()> {
        let sh = a.shape().to_vec();
        let data = a
            .as_slice()
            .map_err(|_| input_error("the kernel stack must be C-contiguous"))?;
        let s = DenseStack::new(data, sh[0], sh[1])?;
        detached(py, n_threads, || s.validate(rtol))
    }
    if let Ok(a) = g.extract::<PyReadonlyArray3<'_, f64>>() {
        check(py, a, rtol, n_threads)
    } else if let Ok(a) = g.extract::<PyReadonlyArray3<'_, f32>>() {
        check(py, a, rtol, n_threads)
    } else {
        Err(input_error(
            "a kernel stack must be a float64 or float32 array of shape (M, n, n)",
        ))
    }
}

/// Pivoted incomplete Cholesky of every kernel: factors `(n, r_m)`, ranks and relative errors.
#[pyfunction]
#[pyo3(signature = (g, tol, max_rank, n_threads=0))]
#[allow(clippy::type_complexity)]
fn low_rank<'py>(
    py: Python<'py>,
    g: PyReadonlyArray3<'py, f64>,
    tol: f64,
    max_rank: usize,
    n_threads: usize,
) -> PyResult<(
    Vec<Bound<'py, PyArray2<f64>>>,
    Vec<usize>,
    Bound<'py, PyArray1<f64>>,
)> {
    let sh = g.shape().to_vec();
    let data = g
        .as_slice()
        .map_err(|_| input_error("the kernel stack must be C-contiguous"))?;
    let stack = DenseStack::new(data, sh[0], sh[1])?;
    let lr = detached(py, n_threads, || {
        LowRankStack::from_dense(&stack, tol, max_rank)
    })?;
    let n = sh[1];
    let ranks = lr.ranks();
    let factors = (0..ranks.len())
        .map(|m| {
            // Stored as r columns of length n: that is the (r, n) row-major transpose.
            let f = ndarray::Array2::from_shape_vec((ranks[m], n), lr.factor(m).to_vec())
                .map_err(|e| input_error(e.to_string()))?;
            Ok(f.reversed_axes()
                .as_standard_layout()
                .into_owned()
                .into_pyarray(py))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok((factors, ranks, lr.errors().to_vec().into_pyarray(py)))
}

/// The SimpleMKL bank as specification tuples.
#[pyfunction]
fn simplemkl_specs(n_features: usize, widths: Vec<f64>, degrees: Vec<u32>) -> Vec<SpecTuple> {
    simplemkl_bank(n_features, &widths, &degrees)
        .iter()
        .map(spec_to)
        .collect()
}

/// An `(n, D)` float64 array of features from a row-major buffer.
fn feature_array<'py>(
    py: Python<'py>,
    n: usize,
    data: Vec<f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    Ok(features::to_array(n, data)?.into_pyarray(py))
}

/// `W` and `b` of a random Fourier map.
type FourierMap<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<f64>>);

/// The random Fourier map of a Gaussian or Laplacian spec on `dim` columns: `W` `(dim, D)`
/// and `b` `(D,)`.
#[pyfunction]
fn fourier_params<'py>(
    py: Python<'py>,
    spec: SpecTuple,
    dim: usize,
    n_components: usize,
    seed: u64,
) -> PyResult<FourierMap<'py>> {
    let spec = spec_from(&spec)?;
    let (w, b) = features::fourier_params(spec.func, dim, n_components, seed)?;
    Ok((feature_array(py, dim, w)?, b.into_pyarray(py)))
}

/// The CSR arrays `(data, indices, indptr, n_cols)` of sparse features, as they leave the
/// binding (float64, int64, int64).
type CsrOut<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    usize,
);

/// A feature vocabulary as it crosses the binding: the substrings of the columns as a
/// sequence column `(data, offsets)`, their positions (uint32) and the training length.
type VocabIn<'py> = (
    PyReadonlyArray1<'py, u8>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, u32>,
    usize,
);

/// Exact sparse features of the sequence kernel `spec` on the column `sequences`
/// (`kernels::seq_features`) and the self-values `k(s, s)` of the sequences: fitted when
/// `vocabulary` is None (the new vocabulary is returned), else mapped onto the fitted
/// `vocabulary` (returned as None).
#[pyfunction]
#[pyo3(signature = (sequences, spec, vocabulary=None, n_threads=0))]
#[allow(clippy::type_complexity)]
fn sequence_features<'py>(
    py: Python<'py>,
    sequences: (PyReadonlyArray1<'py, u8>, PyReadonlyArray1<'py, i64>),
    spec: SpecTuple,
    vocabulary: Option<VocabIn<'py>>,
    n_threads: usize,
) -> PyResult<(
    CsrOut<'py>,
    Bound<'py, PyArray1<f64>>,
    Option<Bound<'py, PyAny>>,
)> {
    let (kind, a, b, c, _) = spec;
    let Some(func) = seq_from(&(kind.clone(), a, b, c, Some(vec![0]))) else {
        return Err(input_error(format!("{kind:?} is not a sequence kernel")));
    };
    let func = func?.0;
    let col = &seq_columns(Some(vec![sequences]))?[0];
    let vocab = match vocabulary {
        None => None,
        Some((data, offsets, positions, length)) => {
            let kmers = &seq_columns(Some(vec![(data, offsets)]))?[0];
            Some(Vocabulary {
                kmers: kmers.clone(),
                positions: positions.as_array().to_vec(),
                length,
            })
        }
    };
    let (rows, fitted) = detached(py, n_threads, || match &vocab {
        None => fit_sequence_features(0, func, col).map(|(r, v)| (r, Some(v))),
        Some(v) => map_sequence_features(0, func, col, v).map(|r| (r, None)),
    })?;
    let index = |v: &[usize]| v.iter().map(|&i| i as i64).collect::<Vec<_>>();
    let squares = rows.squares.into_pyarray(py);
    let csr = (
        rows.values.into_pyarray(py),
        rows.indices
            .iter()
            .map(|&u| u as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        rows.indptr
            .iter()
            .map(|&i| i as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        rows.n_cols,
    );
    let vocab = match fitted {
        None => None,
        Some(v) => {
            let (data, offsets) = v.kmers.parts();
            let out = (
                data.to_vec().into_pyarray(py),
                index(offsets).into_pyarray(py),
                v.positions.into_pyarray(py),
                v.length,
            );
            Some(out.into_pyobject(py)?.into_any())
        }
    };
    Ok((csr, squares, vocab))
}

/// Random Fourier features `(n, D)` of the rows of `x`.
#[pyfunction]
#[pyo3(signature = (x, spec, w, b, n_threads=0))]
fn fourier_features<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    spec: SpecTuple,
    w: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray1<'py, f64>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let spec = spec_from(&spec)?;
    let (xv, w, b) = (x.as_array(), w.as_array().to_owned(), b.as_array().to_vec());
    let w = w
        .as_standard_layout()
        .into_owned()
        .into_raw_vec_and_offset()
        .0;
    let n = xv.nrows();
    let out = detached(py, n_threads, || {
        features::fourier_features(xv, &spec, &w, &b)
    })?;
    feature_array(py, n, out)
}

/// Landmark rows of Nyström features (pivoted incomplete Cholesky, or uniform with `seed`).
#[pyfunction]
#[pyo3(signature = (x, spec, n_components, pivoted, seed, n_threads=0))]
fn nystroem_landmarks(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    spec: SpecTuple,
    n_components: usize,
    pivoted: bool,
    seed: u64,
    n_threads: usize,
) -> PyResult<Vec<usize>> {
    let spec = spec_from(&spec)?;
    let xv = x.as_array();
    detached(py, n_threads, || {
        features::nystroem_landmarks(xv, &spec, n_components, pivoted, seed)
    })
}

/// The lower Cholesky factor `(r, r)` of the landmarks' kernel.
#[pyfunction]
fn nystroem_factor<'py>(
    py: Python<'py>,
    landmarks: PyReadonlyArray2<'py, f64>,
    spec: SpecTuple,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let spec = spec_from(&spec)?;
    let lv = landmarks.as_array();
    let r = lv.nrows();
    let out = detached(py, 0, || features::nystroem_factor(lv, &spec))?;
    feature_array(py, r, out)
}

/// Nyström features `(n, r)` of the rows of `x`.
#[pyfunction]
#[pyo3(signature = (x, landmarks, spec, factor, n_threads=0))]
fn nystroem_features<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    landmarks: PyReadonlyArray2<'py, f64>,
    spec: SpecTuple,
    factor: PyReadonlyArray2<'py, f64>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let spec = spec_from(&spec)?;
    let (xv, lv) = (x.as_array(), landmarks.as_array());
    let factor = factor
        .as_array()
        .as_standard_layout()
        .into_owned()
        .into_raw_vec_and_offset()
        .0;
    let n = xv.nrows();
    let out = detached(py, n_threads, || {
        features::nystroem_features(xv, lv, &spec, &factor)
    })?;
    feature_array(py, n, out)
}

/// Normalisation statistics from per-kernel sums of the raw training kernels: `row_sums`
/// `(M, n)` (or `(M, 0)` without centring), the diagonals `(M, n)` and the sums of all entries
/// `(M,)`; the same statistics (same code) as `gram_fit` computes from the whole kernels,
/// which also checks the diagonals of the kernels `check_psd` (Python functions) before any
/// normalisation.
#[pyfunction]
#[pyo3(signature = (normalize, center, row_sums, diag, totals, check_psd=Vec::new()))]
fn norm_stats<'py>(
    py: Python<'py>,
    normalize: &str,
    center: bool,
    row_sums: PyReadonlyArray2<'py, f64>,
    diag: PyReadonlyArray2<'py, f64>,
    totals: PyReadonlyArray1<'py, f64>,
    check_psd: Vec<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let normalization = Normalization::parse(normalize)?;
    let (d, r, t) = (diag.as_array(), row_sums.as_array(), totals.as_array());
    let (m, n) = d.dim();
    if t.len() != m || r.nrows() != m || (center && r.ncols() != n) {
        return Err(input_error(format!(
            "norm_stats: row_sums {:?}, diag {:?} and totals {:?} do not fit M = {m}, n = {n}",
            r.dim(),
            d.dim(),
            t.len()
        )));
    }
    let per = (0..m)
        .map(|k| {
            let rs: Vec<f64> = if center {
                r.row(k).to_vec()
            } else {
                Vec::new()
            };
            NormStats::from_sums(
                normalization,
                center,
                n,
                &rs,
                &d.row(k).to_vec(),
                t[k],
                None,
            )
        })
        .collect::<Vec<_>>();
    for &k in &check_psd {
        if let Some(st) = per.get(k) {
            // The sums may come from float32 kernels: float32's rounding.
            st.check_diagonal(k, 1e-6)?;
        }
    }
    stats_to_dict(py, NormStats::collect(normalization, center, n, per, None))
}

/// The threads a call with `n_threads` uses (0: `OMP_NUM_THREADS` when set, else all cores).
#[pyfunction]
#[pyo3(signature = (n_threads=0))]
fn thread_count(n_threads: usize) -> usize {
    crate::parallel::resolve_threads(n_threads)
}

/// The user's `n_threads` as the engine takes it: clipped to the available cores, 0 for all
/// of them (`-1` too), `-k` for all but `k − 1` (`InvalidParameterError` when none is left).
#[pyfunction]
fn requested_threads(n_threads: i64) -> PyResult<usize> {
    Ok(crate::parallel::requested_threads(n_threads)?)
}

/// Test hook: the fewest cores the thread rules assume (see `parallel::MIN_CORES`).
#[pyfunction]
fn _set_min_cores_for_tests(cores: usize) {
    crate::parallel::set_min_cores(cores);
}

/// The kernels' SIMD level in use: `"avx512+avx2+fma"` (the loops that have AVX-512
/// variants run them, the others AVX2), `"avx2+fma"` (`MULTIKERNEL_NO_AVX512` set, or a CPU
/// without AVX-512 F, BW, VL and VPOPCNTDQ) or `"baseline"` (`MULTIKERNEL_NO_AVX2` set, a CPU
/// without AVX2, or not x86-64).
#[pyfunction]
fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::kernels::simd::avx512_popcnt() {
            return "avx512+avx2+fma";
        }
        if crate::kernels::simd::avx2_fma() {
            return "avx2+fma";
        }
    }
    "baseline"
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(thread_count, m)?)?;
    m.add_function(wrap_pyfunction!(requested_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_set_min_cores_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(norm_stats, m)?)?;
    m.add_function(wrap_pyfunction!(gram_fit, m)?)?;
    m.add_function(wrap_pyfunction!(gram_cross, m)?)?;
    m.add_function(wrap_pyfunction!(quad_forms, m)?)?;
    m.add_function(wrap_pyfunction!(validate_stack, m)?)?;
    m.add_function(wrap_pyfunction!(low_rank, m)?)?;
    m.add_function(wrap_pyfunction!(simplemkl_specs, m)?)?;
    m.add_function(wrap_pyfunction!(fourier_params, m)?)?;
    m.add_function(wrap_pyfunction!(fourier_features, m)?)?;
    m.add_function(wrap_pyfunction!(sequence_features, m)?)?;
    m.add_function(wrap_pyfunction!(nystroem_landmarks, m)?)?;
    m.add_function(wrap_pyfunction!(nystroem_factor, m)?)?;
    m.add_function(wrap_pyfunction!(nystroem_features, m)?)?;
    m.add_class::<PyOnDemand>()?;
    Ok(())
}
