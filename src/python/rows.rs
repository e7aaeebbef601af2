//! Proximal Newton's rows on a Dask cluster (`multikernel._dask_fit`): [`PyRows`] forwards the
//! engine's reductions and updates ([`Rows`]) to a Python object that runs them on every chunk,
//! and `chunk_reduce` / `chunk_update` are what its tasks call on a worker — the in-memory
//! [`Chunks`] on that chunk, so the cluster's fit computes what the in-memory one does.

use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::convert::detached;
use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{Element, RowFeatures};
use crate::solvers::prox_newton::{check_finite, Chunks, DualPoint, Op, RowState, Rows, Update};

/// The rows of a fit held by a Python object with `reduce(code) -> list[list[float]]` (every
/// chunk's part, in chunk order) and `update(code)`; its first error is kept for the caller
/// ([`PyRows::take_error`]) and stops the fit.
pub(super) struct PyRows {
    obj: Py<PyAny>,
    n: usize,
    offsets: Vec<usize>,
    error: Mutex<Option<PyErr>>,
}

impl PyRows {
    pub(super) fn new(obj: Py<PyAny>, n: usize, dims: &[usize]) -> Result<Self> {
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

    /// A pass is a round trip to the workers: 15 points per pass shrink a search's bracket
    /// 16-fold, where bisection halves it.
    fn search_points(&self) -> usize {
        15
    }
}

/// A worker's chunk: `(n_c, R)` C-ordered features, targets, loss weights, state.
fn with_chunk<T: Element + numpy::Element, R: Send>(
    py: Python<'_>,
    x: &PyReadonlyArray2<'_, T>,
    dims: &[usize],
    (y, c): (&[f64], &[f64]),
    state: RowState,
    n_threads: usize,
    f: impl FnOnce(&Chunks<'_, T>) -> Result<R> + Send,
) -> PyResult<R> {
    let n = x.as_array().nrows();
    // Read in place when C-ordered; otherwise (an array rebuilt from another process's
    // buffers can come without the flag) one copy in row order.
    let copied: Vec<T>;
    let data: &[T] = match x.as_slice() {
        Ok(s) => s,
        Err(_) => {
            copied = x.as_array().iter().copied().collect();
            &copied
        }
    };
    if y.len() != n || c.len() != n {
        return Err(PyErr::from(MkError::Shape(format!(
            "a chunk of {n} rows with {} targets and {} loss weights",
            y.len(),
            c.len()
        ))));
    }
    detached(py, n_threads, || {
        let feats = RowFeatures::new(data, n, dims)?;
        check_finite(&feats)?;
        let rows = Chunks::with_state(&feats, y, c, state);
        f(&rows)
    })
}

/// A chunk's features as float64 or float32.
#[derive(FromPyObject)]
enum Features<'py> {
    F64(PyReadonlyArray2<'py, f64>),
    F32(PyReadonlyArray2<'py, f32>),
}

/// One chunk's part of the reduction `code` (an encoded engine operation) on `(n_c, R)`
/// features `x` (kernel `k` owns `dims[k]` consecutive columns) with targets `y`, loss weights
/// `c`, predictions `z` and step `d`: what a Dask task runs on a worker, in a pool of
/// `n_threads` (the worker's threads).
#[pyfunction]
#[pyo3(signature = (x, dims, y, c, z, d, code, *, n_threads=1))]
#[allow(clippy::too_many_arguments)]
fn chunk_reduce(
    py: Python<'_>,
    x: Features<'_>,
    dims: Vec<usize>,
    y: PyReadonlyArray1<'_, f64>,
    c: PyReadonlyArray1<'_, f64>,
    z: PyReadonlyArray1<'_, f64>,
    d: PyReadonlyArray1<'_, f64>,
    code: Vec<f64>,
    n_threads: usize,
) -> PyResult<Vec<f64>> {
    let op = Op::decode(&code)?;
    let state = RowState {
        z: z.as_array().to_vec(),
        d: d.as_array().to_vec(),
        best: Vec::new(),
    };
    let (y, c) = (y.as_array().to_vec(), c.as_array().to_vec());
    let run = |rows: &dyn Rows| rows.reduce(&op, &crate::interrupt::NoInterrupt);
    match &x {
        Features::F64(x) => with_chunk(py, x, &dims, (&y, &c), state, n_threads, |r| run(r)),
        Features::F32(x) => with_chunk(py, x, &dims, (&y, &c), state, n_threads, |r| run(r)),
    }
}

/// One chunk's state `(z, d)` after the update `code` ([`chunk_reduce`]'s arguments): new
/// arrays, so that a lost chunk is recomputed from the ones before.
#[pyfunction]
#[pyo3(signature = (x, dims, y, c, z, d, code, *, n_threads=1))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn chunk_update<'py>(
    py: Python<'py>,
    x: Features<'py>,
    dims: Vec<usize>,
    y: PyReadonlyArray1<'py, f64>,
    c: PyReadonlyArray1<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    d: PyReadonlyArray1<'py, f64>,
    code: Vec<f64>,
    n_threads: usize,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>)> {
    let op = Update::decode(&code)?;
    let state = RowState {
        z: z.as_array().to_vec(),
        d: d.as_array().to_vec(),
        best: Vec::new(),
    };
    let (y, c) = (y.as_array().to_vec(), c.as_array().to_vec());
    let st = match &x {
        Features::F64(x) => with_chunk(py, x, &dims, (&y, &c), state, n_threads, |r| {
            r.update(&op)?;
            Ok(r.state())
        })?,
        Features::F32(x) => with_chunk(py, x, &dims, (&y, &c), state, n_threads, |r| {
            r.update(&op)?;
            Ok(r.state())
        })?,
    };
    Ok((st.z.into_pyarray(py), st.d.into_pyarray(py)))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(chunk_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_update, m)?)?;
    Ok(())
}
