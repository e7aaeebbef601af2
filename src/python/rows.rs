//! Proximal Newton's rows on a Dask cluster (`multikernel._dask_fit`): [`PyRows`] forwards the
//! engine's reductions and updates ([`Rows`]) to a Python object that runs them on every chunk,
//! and `chunk_run` is what its tasks call on a worker — the in-memory [`Chunks`] on that
//! chunk, its state kept between tasks ([`ChunkMemo`]), so the cluster's fit computes what
//! the in-memory one does.

use std::sync::Mutex;

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::convert::{csr_matrix, detached, CsrArrays};
use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{Element, RowFeatures, SparseRowFeatures};
use crate::solvers::prox_newton::{Chunks, DualPoint, Memo, Op, RowRead, Rows, Update};

/// The rows of a fit held by a Python object with `reduce(code) -> list[list[float]]` (every
/// chunk's part, in chunk order) and `update(code)`; its first error is kept for the caller
/// ([`PyRows::take_error`]) and stops the fit. `sparse`: the chunks' rows store their
/// nonzeros only ([`Rows::sparse`], which sets where the Newton steps turn to Hessian
/// products, as on the same rows in memory).
pub(super) struct PyRows {
    obj: Py<PyAny>,
    n: usize,
    offsets: Vec<usize>,
    sparse: bool,
    error: Mutex<Option<PyErr>>,
}

impl PyRows {
    pub(super) fn new(obj: Py<PyAny>, n: usize, dims: &[usize], sparse: bool) -> Result<Self> {
        if dims.is_empty() || n == 0 {
            return Err(MkError::Shape(format!(
                "rows need at least one point and one kernel, got {n} points and {} kernels",
                dims.len()
            )));
        }
        let mut offsets = vec![0];
        for d in dims {
            offsets.push(offsets.last().copied().unwrap_or(0) + d);
        }
        Ok(PyRows {
            obj,
            n,
            offsets,
            sparse,
            error: Mutex::new(None),
        })
    }

    /// The Python error that stopped the fit, if one did.
    pub(super) fn take_error(&self) -> Option<PyErr> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn call<R>(
        &self,
        method: &str,
        code: Vec<f64>,
        read: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<R>,
    ) -> Result<R> {
        Python::attach(|py| {
            self.obj
                .bind(py)
                .call_method1(method, (code,))
                .and_then(|r| read(&r))
        })
        .map_err(|e| {
            self.error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            MkError::Interrupted
        })
    }
}

impl Rows for PyRows {
    fn n(&self) -> usize {
        self.n
    }

    fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    fn reduce(&self, op: &Op, interrupt: &dyn Interrupt) -> Result<Vec<f64>> {
        interrupt.check()?;
        let parts: Vec<Vec<f64>> = self.call("reduce", op.encode(), |r| r.extract())?;
        Ok(op.total(parts))
    }

    fn update(&self, op: &Update) -> Result<()> {
        // The best point's rows are not brought back from a cluster.
        if *op == Update::KeepBest {
            return Ok(());
        }
        self.call("update", op.encode(), |_| Ok(()))
    }

    fn best_dual_rows(&self, _dual: &DualPoint) -> Option<Vec<f64>> {
        None
    }

    fn sparse(&self) -> bool {
        self.sparse
    }

    /// A pass is a round trip to the workers: 15 points per pass shrink a search's bracket
    /// 16-fold, where bisection halves it.
    fn search_points(&self) -> usize {
        15
    }
}

/// A chunk's features: dense rows of float64 or float32, or the CSR arrays of sparse ones
/// (the blocks side by side, as [`SparseRowFeatures::with_dims`] reads them).
#[derive(FromPyObject)]
enum Features<'py> {
    F64(PyReadonlyArray2<'py, f64>),
    F32(PyReadonlyArray2<'py, f32>),
    Sparse(CsrArrays<'py>),
}

/// What a worker keeps of one chunk between the tasks of a fit ([`Memo`]: its per-row state
/// and the certificate's rows), with the number of updates of the fit's log it has applied.
#[pyclass(module = "multikernel._core")]
#[derive(Default)]
struct ChunkMemo {
    kept: Mutex<(usize, Memo)>,
    /// The chunk's features were checked finite (once: a full read of them).
    checked: std::sync::atomic::AtomicBool,
}

#[pymethods]
impl ChunkMemo {
    #[new]
    fn new() -> Self {
        ChunkMemo::default()
    }

    /// Updates of the log applied.
    #[getter]
    fn applied(&self) -> usize {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

/// A dense chunk's values in row order: read in place when C-ordered; otherwise (an array
/// rebuilt from another process's buffers can come without the flag) one copy in row order.
fn row_major<'a, T: Element + numpy::Element>(
    x: &'a PyReadonlyArray2<'_, T>,
) -> std::borrow::Cow<'a, [T]> {
    match x.as_slice() {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => std::borrow::Cow::Owned(x.as_array().iter().copied().collect()),
    }
}

/// [`on_chunk`] on dense rows `x` (kernel `k` owns `dims[k]` consecutive columns).
fn on_dense<T: Element + numpy::Element, R: Send>(
    py: Python<'_>,
    x: &PyReadonlyArray2<'_, T>,
    dims: &[usize],
    yc: (&[f64], &[f64]),
    memo: &ChunkMemo,
    n_threads: usize,
    f: impl FnOnce(&dyn Rows, &mut usize) -> Result<R> + Send,
) -> PyResult<R> {
    let data = row_major(x);
    let feats = RowFeatures::new(&data[..], x.as_array().nrows(), dims)?;
    on_chunk(py, &feats, yc, memo, n_threads, f)
}

/// Runs `f` on the chunk `(x, y, c)` with what `memo` kept, which it keeps again.
fn on_chunk<X: RowRead, R: Send>(
    py: Python<'_>,
    x: &X,
    (y, c): (&[f64], &[f64]),
    memo: &ChunkMemo,
    n_threads: usize,
    f: impl FnOnce(&dyn Rows, &mut usize) -> Result<R> + Send,
) -> PyResult<R> {
    let n = x.n();
    if y.len() != n || c.len() != n {
        return Err(PyErr::from(MkError::Shape(format!(
            "a chunk of {n} rows with {} targets and {} loss weights",
            y.len(),
            c.len()
        ))));
    }
    let mut guard = memo.kept.lock().unwrap_or_else(|e| e.into_inner());
    let (applied, kept) = std::mem::take(&mut *guard);
    let (out, applied, kept) = detached(py, n_threads, || {
        if !memo.checked.load(std::sync::atomic::Ordering::Relaxed) {
            x.check_finite()?;
            memo.checked
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let rows = Chunks::with_memo(x, y, c, kept);
        let mut applied = applied;
        let out = f(&rows, &mut applied);
        Ok((out, applied, rows.into_memo()))
    })?;
    *guard = (applied, kept);
    Ok(out?)
}

/// One chunk's task of a fit on a cluster: the updates of `log` (the fit's encoded updates
/// from its start, [`Update::encode`]) that `memo` has not applied yet, then each reduction
/// of `ops` ([`Op::encode`]), whose parts it returns, on `(n_c, R)` features `x` (kernel `k`
/// owns `dims[k]` consecutive columns; dense, or the CSR arrays `(data, indices, indptr,
/// R)` of sparse ones, read at the cost of their stored entries) with targets `y` and loss
/// weights `c`, in a pool of `n_threads`. A new (or lost) memo replays the whole log, so a
/// chunk recomputed elsewhere reaches the same bits.
#[pyfunction]
#[pyo3(signature = (x, dims, y, c, memo, log, ops, *, n_threads=1))]
#[allow(clippy::too_many_arguments)]
fn chunk_run(
    py: Python<'_>,
    x: Features<'_>,
    dims: Vec<usize>,
    y: PyReadonlyArray1<'_, f64>,
    c: PyReadonlyArray1<'_, f64>,
    memo: &ChunkMemo,
    log: Vec<Vec<f64>>,
    ops: Vec<Vec<f64>>,
    n_threads: usize,
) -> PyResult<Vec<Vec<f64>>> {
    let log: Vec<Update> = log
        .iter()
        .map(|u| Update::decode(u))
        .collect::<Result<_>>()?;
    let ops: Vec<Op> = ops.iter().map(|o| Op::decode(o)).collect::<Result<_>>()?;
    let (y, c) = (y.as_slice()?, c.as_slice()?);
    let run = |rows: &dyn Rows, applied: &mut usize| -> Result<Vec<Vec<f64>>> {
        if *applied > log.len() {
            return Err(MkError::config(
                "log",
                "shorter than what the chunk applied",
            ));
        }
        for u in &log[*applied..] {
            rows.update(u)?;
            *applied += 1;
        }
        let none = crate::interrupt::NoInterrupt;
        ops.iter().map(|op| rows.reduce(op, &none)).collect()
    };
    match &x {
        Features::F64(x) => on_dense(py, x, &dims, (y, c), memo, n_threads, run),
        Features::F32(x) => on_dense(py, x, &dims, (y, c), memo, n_threads, run),
        Features::Sparse(x) => {
            let feats = SparseRowFeatures::with_dims(csr_matrix(x)?, &dims)?;
            on_chunk(py, &feats, (y, c), memo, n_threads, run)
        }
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChunkMemo>()?;
    m.add_function(wrap_pyfunction!(chunk_run, m)?)?;
    Ok(())
}
