"""Dask arrays in, Dask arrays out: kernel stacks and predictions computed block by block on the
workers of a Dask cluster (see docs/dask.md).

Dask stays optional: this module imports it only when it is handed a Dask array, and
:func:`is_dask_array` looks for ``dask.array`` in ``sys.modules`` instead of importing it (an
object cannot be a Dask array unless Dask is imported).

- :func:`bank_transform`: ``KernelBank.transform`` of a Dask array of new points, the cross
  kernel ``(M, n_new, n_train)`` as a Dask array with chunks along ``n_new`` (one task per row
  block of ``X_new``; every block is the engine's ``gram_cross`` of those rows, so the blocks are
  the bits that ``transform`` of the whole array gives).
- :func:`bank_fit_transform`: ``KernelBank.fit_transform`` (and so ``gram``) of a Dask array.
  The training points (``n × d``) are gathered in memory; the normalisation statistics need a
  full pass over the training kernels, which runs on the workers (one task per row block,
  each returning ``O(M · rows)`` numbers: row sums, the diagonal, the total), so no ``n × n``
  kernel is ever whole anywhere; the training stack is then the cross kernel of the training
  points, a Dask array like :func:`bank_transform`'s.
- :func:`map_rows`: an estimator's ``predict`` / ``decision_function`` / ``predict_proba`` on a
  Dask array, one task per row block (of ``X``, or axis 1 of a precomputed test stack), a Dask
  array of the results.

Threads: a task runs the engine with the bank's ``n_threads`` when it is set, and with one
thread for ``n_threads=0`` or ``-1`` ("all cores"): Dask fills the cores with one task per
worker thread.
"""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._validation import aligned, check_features, check_n_threads
from .exceptions import InvalidInputError

__all__: list[str] = []


@dataclass(frozen=True)
class BankJob:
    """What the tasks of a :class:`~multikernel.kernels.KernelBank` need of it, handed over by
    the bank (``KernelBank._dask_job``): this module reads and writes no attribute of a bank
    and does not import ``kernels``, which calls it (no import circle).

    Parameters
    ----------
    entries : list
        The kernels as the engine's Gram functions take them (``Kernel._entry()``).
    normalize : str
        The normalisation's name.
    center : bool
        Centre the kernels in feature space.
    dtype : numpy.dtype
        float64 or float32, the stacks' element type.
    n_threads : int
        The bank's threads (see :func:`_task_threads`).
    """

    entries: list[Any]
    normalize: str
    center: bool
    dtype: np.dtype[Any]
    n_threads: int


def is_dask_array(x: Any) -> bool:
    """Whether ``x`` is a Dask array (without importing Dask)."""
    mod = sys.modules.get("dask.array")
    return mod is not None and isinstance(x, mod.Array)


def is_dask_frame(x: Any) -> bool:
    """Whether ``x`` is a Dask DataFrame (without importing Dask)."""
    mod = sys.modules.get("dask.dataframe")
    return mod is not None and isinstance(x, mod.DataFrame)


def _task_threads(n_threads: int) -> int:
    """Threads of one Dask task: ``n_threads`` when set (``-k`` counts as all cores but
    ``k − 1``), else 1 for 0 and -1 (Dask's threads fill the cores)."""
    threads = check_n_threads(n_threads)
    return threads if threads > 0 else 1


def _raw_stats(n_kernels: int, n: int) -> dict[str, Any]:
    """Statistics that leave the cross kernels raw (no centring, no scaling)."""
    return {
        "normalize": "none",
        "center": False,
        "n": n,
        "degenerate": [],
        "row_means": np.empty((n_kernels, 0)),
        "total_means": np.zeros(n_kernels),
        "diag": np.empty((n_kernels, 0)),
        "scales": np.ones(n_kernels),
    }


#: What every task of a bank reads: the training points, the specifications (engine tuples),
#: the statistics, float32 or not, threads. One key of the graph, so shipped once per worker.
_Payload = tuple[NDArray[np.float64], list[Any], dict[str, Any], bool, int]


def _payload(job: BankJob, X_train: NDArray[np.float64], stats: dict[str, Any]) -> Any:
    import dask

    p: _Payload = (
        X_train,
        job.entries,
        stats,
        job.dtype == np.float32,
        _task_threads(job.n_threads),
    )
    return dask.delayed(p, pure=True, traverse=False)


def _rows(X: Any, n_features: int) -> Any:
    """``X`` as a float64 Dask array with whole rows in every block."""
    if X.ndim != 2:
        raise InvalidInputError(
            f"X must be 2-D (n_samples, n_features), got a Dask array of {X.shape}"
        )
    if X.shape[1] != n_features:
        raise InvalidInputError(
            f"X has {X.shape[1]} features but the bank was fitted on {n_features}"
        )  # fmt: skip
    return X.astype(np.float64).rechunk({1: -1})


def _offset(block_info: dict[Any, Any] | None) -> int:
    if not block_info:
        return 0
    return int(block_info[0]["array-location"][0][0])


def _cross_block(
    X_block: NDArray[Any], payload: _Payload, block_info: dict[Any, Any] | None = None
) -> NDArray[Any]:
    """The cross kernel ``(M, rows, n_train)`` of one row block (a task)."""
    X_train, tuples, stats, float32, threads = aligned(payload)
    Xc = check_features(X_block, row_offset=_offset(block_info))
    return _core.gram_cross(Xc, X_train, tuples, stats, float32, threads)


def _stats_block(
    payload: _Payload, start: int, stop: int, center: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Row sums (if ``center``), diagonal and total of the raw training kernels' rows
    ``start:stop`` (a task; the raw rows never leave the worker)."""
    X_train, tuples, stats, float32, threads = aligned(payload)
    raw = _core.gram_cross(X_train[start:stop], X_train, tuples, stats, float32, threads)
    rows = np.arange(stop - start)
    diag = np.asarray(raw[:, rows, rows + start], dtype=np.float64)
    sums = _seq_sum(raw)
    empty = np.empty((raw.shape[0], 0))
    return (sums if center else empty), diag, sums.sum(axis=1)


def _seq_sum(a: NDArray[Any], batch: int = 4096) -> NDArray[np.float64]:
    """Sums over the last axis added left to right in float64, as the engine adds them
    (numpy's ``sum`` adds pairwise), so that the statistics are the engine's to the last bit
    or so; in column batches, so that the temporary stays small."""
    acc = np.zeros(a.shape[:-1])
    for start in range(0, a.shape[-1], batch):
        part = np.array(a[..., start : start + batch], dtype=np.float64)
        part[..., 0] += acc
        acc = np.cumsum(part, axis=-1)[..., -1]
    return acc


def bank_transform(
    job: BankJob, X: Any, X_train: NDArray[np.float64], stats: dict[str, Any]
) -> Any:
    """``KernelBank.transform`` of a Dask array, against the bank's training points and
    statistics: a Dask array ``(M, n_new, n_train)`` of the bank's dtype, chunked along
    ``n_new`` like the rows of ``X`` (one task per row block)."""
    Xr = _rows(X, X_train.shape[1])
    n_train = X_train.shape[0]
    return Xr.map_blocks(
        _cross_block,
        _payload(job, X_train, stats),
        drop_axis=1,
        new_axis=[0, 2],
        chunks=((len(job.entries),), Xr.chunks[0], (n_train,)),
        dtype=job.dtype,
        meta=np.empty((0, 0, 0), dtype=job.dtype),
    )


def bank_fit_transform(job: BankJob, X: Any) -> tuple[NDArray[np.float64], dict[str, Any], Any]:
    """``KernelBank.fit_transform`` of a Dask array: the training points are gathered
    (``n × d``), the statistics computed by a pass over row blocks of the raw kernels on the
    workers, and the normalised training stack made a Dask array (see :func:`bank_transform`).
    Returns ``(X_train, stats, stack)``; the bank keeps the first two (its fitted state)."""
    import dask

    if X.ndim != 2:
        raise InvalidInputError(
            f"X must be 2-D (n_samples, n_features), got a Dask array of {X.shape}"
        )
    Xr = X.astype(np.float64).rechunk({1: -1})
    X_train = check_features(Xr.compute())
    n, M = X_train.shape[0], len(job.entries)
    for m, t in enumerate(job.entries):
        cols = t[-1]  # the columns close every entry, a specification or a function's
        if cols is not None and max(cols) >= X_train.shape[1]:
            raise InvalidInputError(
                f"kernel {m} reads feature {max(cols)} but X has {X_train.shape[1]} features"
            )
    raw = _payload(job, X_train, _raw_stats(M, n))
    ends = np.cumsum(Xr.chunks[0])
    parts = [
        dask.delayed(_stats_block, pure=True)(raw, int(e - r), int(e), job.center)
        for e, r in zip(ends, Xr.chunks[0], strict=True)
    ]
    blocks = dask.compute(*parts)
    # The engine's own statistics code (NormStats::from_sums), on the gathered sums; the
    # diagonals of Python functions checked before any normalisation, as gram_fit does.
    stats = _core.norm_stats(
        job.normalize,
        job.center,
        np.ascontiguousarray(np.concatenate([b[0] for b in blocks], axis=1)),
        np.ascontiguousarray(np.concatenate([b[1] for b in blocks], axis=1)),
        np.ascontiguousarray(np.sum([b[2] for b in blocks], axis=0)),
        check_psd=[m for m, t in enumerate(job.entries) if callable(t[0])],
    )
    return X_train, stats, bank_transform(job, Xr, X_train, stats)


def _method_block(X_block: NDArray[Any], est: Any, method: str) -> NDArray[Any]:
    out: NDArray[Any] = getattr(est, method)(X_block)
    return out


_Method = TypeVar("_Method", bound=Callable[..., Any])


def by_row_blocks(method: _Method) -> _Method:
    """The one Dask dispatch of the estimators' prediction methods: on a Dask array ``X`` the
    method runs as one task per row block (:func:`map_rows`, docs/dask.md), on anything else
    as written."""

    @functools.wraps(method)
    def dispatch(est: Any, X: Any, *args: Any, **kwargs: Any) -> Any:
        if is_dask_array(X):
            return map_rows(est, method.__name__, X)
        return method(est, X, *args, **kwargs)

    return cast(_Method, dispatch)


def map_rows(est: Any, method: str, X: Any) -> Any:
    """``getattr(est, method)(X)`` for a Dask array ``X``: one task per row block of ``X``
    (axis 1 of a precomputed test stack ``(M, n_test, n_train)``), a Dask array of the rows'
    results (1-D, or one column per class / problem)."""
    import dask
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "intercept_")
    bank = getattr(est, "kernel_bank_", None)
    if bank is None and getattr(est, "_feature_widths", None) is not None:
        raise InvalidInputError(
            "a Dask array of precomputed feature blocks is not supported: pass the list of "
            "blocks as numpy arrays (or memmaps)"
        )
    task = copy.copy(est)
    task.n_threads = _task_threads(est.n_threads)
    if bank is None:
        axis = 1
        if X.ndim != 3:
            raise InvalidInputError(f"G_test must be 3-D (M, n_samples, n_train), got {X.shape}")
        Xr = X.rechunk({0: -1, 2: -1})
        probe = np.zeros((X.shape[0], 1, X.shape[2]), dtype=X.dtype)
    else:
        axis = 0
        if X.ndim != 2:
            raise InvalidInputError(f"X must be 2-D (n_samples, n_features), got {X.shape}")
        Xr = X.rechunk({1: -1})
        task.kernel_bank_ = copy.copy(bank)
        task.kernel_bank_.n_threads = _task_threads(bank.n_threads)
        probe = np.zeros((1, X.shape[1]), dtype=np.float64)
    # Shape and type of the result, from the method itself on one point.
    meta = np.asarray(getattr(task, method)(probe))
    others = [a for a in range(Xr.ndim) if a != axis]
    rows = Xr.chunks[axis]
    drop = others if meta.ndim == 1 else others[: Xr.ndim - 2]
    chunks: tuple[Any, ...] = (rows,) if meta.ndim == 1 else (rows, (meta.shape[1],))
    return Xr.map_blocks(
        _method_block,
        dask.delayed(task, pure=True, traverse=False),
        method,
        drop_axis=drop,
        chunks=chunks,
        dtype=meta.dtype,
        meta=np.empty((0,) * meta.ndim, dtype=meta.dtype),
    )
