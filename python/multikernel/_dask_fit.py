"""One ``prox_newton`` fit across a Dask cluster, on explicit features (docs/dask.md).

``fit(X, y)`` of :class:`~multikernel.MKLClassifier` or :class:`~multikernel.MKLRegressor`
with ``X`` a Dask array (or a Dask DataFrame of numeric columns, which the kernels'
``features`` may name: :func:`_frame`) and ``kernels=FeatureBank(...)`` comes here
(:func:`fit`):

- the bank is fitted on a sample of the rows (all of them up to :data:`FIT_SAMPLE`, else a
  uniform sample of that many, seeded by the bank's ``random_state``; one row when its maps
  and normalisation read no values, :func:`_reads_points`), gathered on the client;
- the feature maps are computed per chunk of ``X`` on the workers and kept there (one future
  per chunk, with the chunk's targets and weights), once: refits of the same estimator on the
  same arrays (``warm_start``, a grid of ``C``) reuse them;
- the engine's ``prox_newton`` runs on the client (``_core.fit_rows``) and sees the rows only
  through :class:`ChunkRows`: every pass over the rows is one task per chunk calling the
  engine on that chunk (``_core.chunk_run``), the per-row state (predictions, step, the
  certificate's rows) kept on the worker between tasks (:data:`_MEMOS`), its updates sent
  with the next pass (those since the pass before; each worker keeps the log,
  :data:`_LOGS`), and the chunks' parts are combined by the engine in chunk order. Nothing
  of size ``n`` reaches the client;
- a classifier's problems are the in-memory fit's (:func:`._dask_classes.classify`): one
  for two classes, one per class (one-vs-rest) or per pair of classes (one-vs-one, on the
  pair's rows of each chunk, made on the workers for that pair's fits and released after
  them), one after the other on the same persisted features; the loss weights are ``C``
  times the samples' weights times ``class_weight``'s (its ``"balanced"`` counts from the
  classes' pass). ``probability=True`` with a hinge loss fits Platt's sigmoid to
  out-of-fold decision values whose folds are sets of whole chunks
  (:func:`._dask_classes.folds`), by the in-memory Newton method on sums over the chunks
  (:func:`._platt.platt_newton`).

A worker lost during the fit loses its chunks' features and memos: Dask recomputes the
features elsewhere, and a chunk without a memo replays the fit's log of updates from the
start; the updates are deterministic, so the fit ends where it would have. A fit that
raises, or is interrupted, cancels its futures (its features' too) and drops its memos
before the error propagates.

Threads: a task runs the engine with one thread for ``n_threads=0`` or ``-1`` and with
``n_threads`` otherwise (as :mod:`._dask`): Dask fills the cores with one task per worker
thread. The client's Newton systems (``R_W × R_W``) use the estimator's ``n_threads``.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import _auto, _core, _progress
from ._base import _start_args
from ._dask import _task_threads
from ._validation import (
    check_bool,
    check_n_threads,
    check_sparse,
    column_names,
    engine_sparse,
    group_ids,
    is_sparse,
    nonfinite_targets,
    numeric_dtype_error,
    weights_error,
)
from .exceptions import (
    InternalError,
    InvalidInputError,
    InvalidParameterError,
    NonFiniteError,
)
from .kernels import FeatureBank, Linear

__all__: list[str] = []

#: Rows gathered on the client to fit the bank's maps and normalisation (all rows below).
FIT_SAMPLE = 20_000


@dataclass
class Features:
    """The persisted rows of a Dask fit: per chunk, futures of the features ``(n_c, R)``,
    the labels (a classifier's class indices into ``classes``, a regressor's targets) and
    the samples' weights.

    Parameters
    ----------
    key : tuple
        What the rows were made from (the arrays' names, the bank's parameters).
    bank : FeatureBank
        The bank fitted on the sample.
    x, y : list of distributed.Future
        Per chunk.
    w : list of distributed.Future or None
        Per chunk; None without sample weights (every weight 1: nothing kept for them).
    sizes : list of int
        The chunks' rows.
    dims : list of int
        The blocks' widths.
    n : int
        Points.
    classes : ndarray or None
        A classifier's classes (sorted).
    counts : ndarray or None
        A classifier's points per chunk and class, ``(chunks, classes)``.
    names : list of str or None
        The columns of a Dask DataFrame ``X`` (None for an array).
    sparse : bool
        The chunks of ``X`` are ``scipy.sparse`` (their features one CSR matrix per chunk).
    """

    key: tuple[Any, ...]
    bank: FeatureBank
    x: list[Any]
    y: list[Any]
    w: list[Any] | None
    sizes: list[int]
    dims: list[int]
    n: int
    classes: NDArray[Any] | None
    counts: NDArray[np.int64] | None
    names: list[str] | None = None
    sparse: bool = False

    def futures(self) -> list[Any]:
        return [*self.x, *self.y, *(self.w or [])]


@dataclass
class Problem:
    """One binary (or regression) problem of a Dask fit, on chunks of persisted rows: per
    chunk, futures of its features, its targets (±1 for a classifier) and its loss weights
    ``c = C w`` (``sample_weight`` times ``class_weight``).

    Parameters
    ----------
    x, y, c : list of distributed.Future
        Per chunk.
    sizes : list of int
        The chunks' rows.
    sides : list of tuple of int
        Per chunk, its points of targets +1 and −1 (a classifier's; empty for a regressor).
    pos, neg : str
        The classes of the targets +1 and −1, as errors name them.
    label : str
        The problem's name in the log (`` (class 2 vs rest)``).
    sparse : bool
        Its features are sparse (:attr:`Features.sparse`).
    """

    x: list[Any]
    y: list[Any]
    c: list[Any]
    sizes: list[int]
    sides: list[tuple[int, int]]
    pos: str = "one class"
    neg: str = "the other"
    label: str = ""
    sparse: bool = False

    @property
    def n(self) -> int:
        return int(sum(self.sizes))

    def chunks(self, index: list[int]) -> Problem:
        """The problem on its chunks ``index`` (the same futures)."""
        return Problem(
            [self.x[i] for i in index], [self.y[i] for i in index], [self.c[i] for i in index],
            [self.sizes[i] for i in index], [self.sides[i] for i in index] if self.sides else [],
            self.pos, self.neg, self.label, self.sparse,
        )  # fmt: skip


class Held:
    """An estimator's persisted rows (``_dask_rows``), released on the cluster with the
    estimator; a pickled estimator keeps none (futures belong to one client)."""

    def __init__(self, data: Features | None = None) -> None:
        self.data = data

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.data = None


def held(est: Any) -> Features | None:
    """The rows ``est`` keeps on the cluster, if any."""
    h = est.__dict__.get("_dask_rows")
    return h.data if isinstance(h, Held) else None


def _chunk_features(bank: FeatureBank, X: Any, start: int = 0) -> Any:
    """A chunk's features: one C-ordered ``(n_c, R)`` array of dense points, or for sparse
    points (``scipy.sparse``, which the bank's linear maps take) one float64 CSR matrix of
    the blocks side by side in canonical form (what the engine reads in a task:
    :func:`_engine_rows`), never densified. A non-finite point is named by its row in the
    whole array (the chunk's rows begin at ``start``)."""
    try:
        if is_sparse(X):
            return _side_by_side(bank.transform(X))
        out = np.empty((X.shape[0], int(np.sum(bank.n_components_))), dtype=bank.dtype)
        bank.transform(X, out=out)
    except NonFiniteError as e:
        if e.entry is None:
            raise
        row, col = start + e.entry[0], e.entry[1]
        raise NonFiniteError(
            f"X contains NaN or infinity (first at row {row}, column {col})", entry=(row, col)
        ) from None
    return out


def _side_by_side(blocks: list[Any]) -> Any:
    """Sparse feature blocks as one float64 CSR matrix ``[F_0, F_1, ...]`` in canonical form:
    row ``i`` holds block 0's entries, then block 1's shifted by its width, as the in-memory
    fit lays the blocks out (the engine's ``SparseRowFeatures``)."""
    import scipy.sparse

    return check_sparse(scipy.sparse.hstack(blocks, format="csr", dtype=np.float64))


def _engine_rows(x: Any) -> Any:
    """A chunk's features as ``_core.chunk_run`` reads them: dense rows C-ordered and
    aligned (arrays that crossed processes can arrive without their C order, or
    misaligned), sparse ones (:func:`_side_by_side`) as their CSR arrays."""
    if is_sparse(x):
        return engine_sparse(x)
    return np.require(x, requirements=["C", "A"])


def _loss_weights(
    y: NDArray[Any],
    w: NDArray[np.float64] | None,
    C: float,
    per_class: NDArray[np.float64] | None,
    size: int,
) -> NDArray[np.float64]:
    """A chunk's loss weights ``c = C w`` of its ``size`` rows: ``w`` the samples' weights
    (None: ones) times ``per_class``, the weight of each row's class (indexed by the chunk's
    class indices ``y``; None: ones), in the in-memory fit's order of the products."""
    if per_class is not None:
        cw = per_class[y]
        w = cw if w is None else w * cw
    return np.full(size, C) if w is None else C * w


#: What the workers of this process keep of the chunks of the fits running on them, by fit,
#: chunk and worker: a ``_core.ChunkMemo`` each (the per-row state, the certificate's rows).
_MEMOS: dict[tuple[str, int, str], Any] = {}

#: The fit's log of updates as far as each worker of this process has received it, by fit
#: and worker: a pass sends only the updates since the one before (:class:`Pass`).
_LOGS: dict[tuple[str, str], list[list[float]]] = {}

#: Guards :data:`_LOGS`: a worker's threads run the tasks of one pass concurrently.
_LOGS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Pass:
    """What every chunk's task of one pass receives: one positional argument (a Dask
    keyword argument above 100 kB becomes a graph key named after the keyword, shared by
    every call and left without a priority: the scheduler fails on it).

    Parameters
    ----------
    fit : str
        The fit's id.
    dims : list of int
        The blocks' widths.
    start : int
        The length of the log that the tail continues.
    tail : list of list of float
        The log's updates from ``start`` on.
    ops : list of list of float
        The encoded reductions.
    threads : int
        Engine threads per task.
    """

    fit: str
    dims: list[int]
    start: int
    tail: list[list[float]]
    ops: list[list[float]]
    threads: int


def _run(
    x: Any, y: NDArray[np.float64], c: NDArray[np.float64], index: int, p: Pass
) -> list[list[float]] | None:
    """A chunk's task: the updates its memo lacks, then the reductions ``p.ops``; None when
    this worker lacks updates sent before ``p.start`` (the client sends the whole log)."""
    from distributed import get_worker

    address = get_worker().address
    with _LOGS_LOCK:
        log = _LOGS.setdefault((p.fit, address), [])
        if len(log) < p.start:
            return None
        # The log only grows, and the same way everywhere: keep what is new.
        log.extend(p.tail[len(log) - p.start :])
        log = list(log)  # this task's view: the others may extend the worker's list
    key = (p.fit, index, address)
    memo = _MEMOS.get(key)
    if memo is None:
        memo = _MEMOS[key] = _core.ChunkMemo()
    # (Arrays that crossed processes can arrive without their C order, or misaligned.)
    y, c = (np.require(v, np.float64, ["C", "A"]) for v in (y, c))
    return _core.chunk_run(_engine_rows(x), p.dims, y, c, memo, log, p.ops, n_threads=p.threads)


def _drop(fit: str) -> None:
    """Forgets a fit's memos and logs (``client.run`` on every worker)."""
    for k in [k for k in _MEMOS if k[0] == fit]:
        del _MEMOS[k]
    with _LOGS_LOCK:
        for at in [at for at in _LOGS if at[0] == fit]:
            del _LOGS[at]


class ChunkRows:
    """The rows of one fit as the engine reads them (``_core.fit_rows``): ``reduce(code)``
    returns every chunk's part of an encoded reduction, in chunk order, from one task per
    chunk; ``update(code)`` appends to the fit's log of updates, which the next tasks apply
    to the state their worker keeps (``_MEMOS``: no round trip of its own, no copy of the
    state). A pass sends the updates since the one before; each worker keeps the log it
    received (``_LOGS``), so a chunk whose memo is gone (a lost worker, a task moved)
    replays it there, and a worker that lacks its start (one that joined, or ran no task of
    a pass) gets the whole log in a second round trip for its chunks.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    problem : Problem
        The problem's rows.
    dims : list of int
        The blocks' widths.
    threads : int
        Engine threads per task.
    """

    def __init__(self, client: Any, problem: Problem, dims: list[int], threads: int) -> None:
        import uuid

        self._client = client
        self._problem = problem
        self._dims = list(dims)
        self._threads = threads
        self._fit = uuid.uuid4().hex
        self.log: list[list[float]] = []
        #: The log's length at the last pass: every worker that ran a task of it has that much.
        self.sent = 0
        self.tasks = 0
        #: Tasks sent the whole log again (their worker lacked its start).
        self.resent = 0

    def _map(self, chunks: list[int], p: Pass) -> list[list[list[float]] | None]:
        d = self._problem
        self.tasks += len(chunks)
        futs = self._client.map(
            _run, [d.x[i] for i in chunks], [d.y[i] for i in chunks],
            [d.c[i] for i in chunks], chunks, [p] * len(chunks), pure=False,
        )  # fmt: skip
        parts: list[list[list[float]] | None] = self._client.gather(futs)
        return parts

    def reduce(self, code: list[float]) -> list[list[float]]:
        p = Pass(
            self._fit, self._dims, self.sent, self.log[self.sent :], [list(code)], self._threads
        )
        parts = self._map(list(range(len(self._problem.x))), p)
        behind = [i for i, part in enumerate(parts) if part is None]
        if behind:
            self.resent += len(behind)
            whole = Pass(p.fit, p.dims, 0, list(self.log), p.ops, p.threads)
            for i, part in zip(behind, self._map(behind, whole), strict=True):
                parts[i] = part
        self.sent = len(self.log)
        if any(part is None for part in parts):
            raise InternalError("a chunk's task sent the whole log did not run")
        return [part[0] for part in parts if part is not None]

    def update(self, code: list[float]) -> None:
        self.log.append(list(code))

    def close(self) -> None:
        """Releases the workers' memos and logs (nothing of the fit runs on)."""
        self._client.run(_drop, self._fit)


def _client() -> Any:
    try:
        from distributed import get_client
    except ImportError as e:  # pragma: no cover - distributed is installed with the tests
        raise InvalidInputError(
            "fitting on a Dask array needs dask.distributed (pip install distributed)"
        ) from e
    try:
        return get_client()
    except ValueError as e:
        raise InvalidInputError(
            "fitting on a Dask array needs a distributed Client (distributed.Client(...))"
        ) from e


def _known_chunks(a: Any, name: str) -> None:
    """Refuses a Dask array whose chunk sizes are unknown (boolean indexing with a Dask
    mask): the fit needs each chunk's rows to line ``X``, ``y`` and the weights up, and
    computing them here would cost a pass over the array that the caller may have done."""
    if any(math.isnan(c) for dim in a.chunks for c in dim):
        raise InvalidInputError(
            f"{name} has unknown chunk sizes (as after indexing with a Dask boolean mask): "
            f"call {name}.compute_chunk_sizes() first (one pass over it), or index with a "
            "NumPy mask"
        )


def _column(v: Any, rows: tuple[int, ...], name: str) -> Any:
    """``v`` as a 1-D Dask array with the row chunks ``rows``."""
    import dask.array as da

    a = v if isinstance(v, da.Array) else da.from_array(np.asarray(v), chunks=(rows,))
    _known_chunks(a, name)
    if a.ndim != 1 or a.shape[0] != sum(rows):
        raise InvalidInputError(f"{name} must have shape ({sum(rows)},), got {a.shape}")
    return a.rechunk((rows,))


def _numeric(a: Any, name: str) -> None:
    error = numeric_dtype_error(name, a.dtype, "a Dask fit")
    if error is not None:
        raise error


def _missing_labels(y: Any) -> Any:
    """Where an object array of labels holds None or a float NaN (a Dask array of bools)."""

    def missing(block: NDArray[Any]) -> NDArray[np.bool_]:
        return np.array([v is None or (isinstance(v, float) and v != v) for v in block], bool)

    return y.map_blocks(missing, dtype=bool)


def _first(bad: Any) -> Any:
    """The first row where ``bad`` holds (a lazy 0-d Dask array; 0 if none does)."""
    return bad.argmax()


def _chunk_classes(block: NDArray[Any]) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """A chunk's labels and their counts."""
    labels, counts = np.unique(block, return_counts=True)
    return labels, counts.astype(np.int64)


def _together(*parts: Any) -> tuple[Any, ...]:
    return parts


def _codes(block: NDArray[Any], classes: NDArray[Any]) -> NDArray[np.int32]:
    """A chunk's labels as indices into the sorted ``classes``."""
    return np.searchsorted(classes, block).astype(np.int32)


def _persist(
    est: Any, X: Any, y: Any, sample_weight: Any, classifier: bool, names: list[str] | None
) -> Features:
    """The rows of ``X``, ``y``, ``sample_weight`` on the cluster (:class:`Features`), made
    once per estimator and arrays (``names``: the columns of a Dask DataFrame ``X``)."""
    import dask
    import dask.array as da

    if X.ndim != 2:
        raise InvalidInputError(f"X must be 2-D, got {X.ndim} dimensions")
    _numeric(X, "X")
    _known_chunks(X, "X")
    X = X.rechunk({1: -1})
    rows = X.chunks[0]
    yv = _column(y, rows, "y")
    wv = None if sample_weight is None else _column(sample_weight, rows, "sample_weight")
    if not classifier and yv.dtype != object:  # (objects: None is NaN, found below)
        _numeric(yv, "y")
    if wv is not None:
        _numeric(wv, "sample_weight")
    template: FeatureBank = est.kernels
    key = (
        X.name, yv.name, None if wv is None else wv.name, classifier,
        repr(template.get_params() if hasattr(template, "get_params") else template),
    )  # fmt: skip
    cached = held(est)
    if cached is not None and cached.key == key:
        return cached
    if cached is not None:
        _client().cancel(cached.futures())
        est.__dict__["_dask_rows"].data = None
    n = int(X.shape[0])
    # A DataFrame's column names resolved to indices (the sample is an array).
    bank = template._with_columns(names) if names is not None else copy.deepcopy(template)
    seed = getattr(bank, "random_state", None)
    idx = None
    if not _reads_points(bank):
        sample_x = X[:1]  # the maps need the number of features only: one chunk read
    elif n <= FIT_SAMPLE:
        sample_x = X
    else:
        idx = np.sort(np.random.default_rng(seed).choice(n, FIT_SAMPLE, replace=False))
        sample_x = X[idx]
    if classifier and yv.dtype == object:
        # Labels that do not sort (None among them) would fail the classes' pass: one pass
        # of its own for such labels.
        missing = _missing_labels(yv)
        if bool(missing.any().compute()):
            raise InvalidInputError(
                f"y contains None or NaN (a missing label, first at row "
                f"{int(_first(missing).compute())})"
            )
    wf = None if wv is None else wv.astype(np.float64)
    about_w = () if wf is None else (da.isfinite(wf).all(), wf.min(), wf.sum())
    # The labels (a classifier's, per chunk: their counts weigh class_weight="balanced" and
    # check Platt's folds) or the targets' check (a regressor's), in the same pass as the
    # sample and the weights' summaries: one round of the cluster.
    if classifier:
        bad_y = ~da.isfinite(yv) if yv.dtype.kind == "f" else None
        about_y: Any = [dask.delayed(_chunk_classes)(b) for b in yv.to_delayed().ravel()]
    else:
        bad_y = ~da.isfinite(yv.astype(np.float64))
        about_y = None
    checks = () if bad_y is None else (bad_y.any(), _first(bad_y))
    # One delayed call of them all: dask.compute of arrays beside delayed objects returned
    # the results out of order (the arrays' first).
    together = dask.delayed(_together, pure=True)(sample_x, about_y, about_w, checks)
    sample, y_info, w_info, y_bad = together.compute()
    if y_bad and y_bad[0]:
        raise nonfinite_targets(int(y_bad[1]))
    if w_info:
        error = weights_error(bool(w_info[0]), float(w_info[1]), float(w_info[2]))
        if error is not None:
            raise error
        if not w_info[1] > 0:
            raise InvalidInputError(
                "a Dask fit takes sample weights > 0, got a weight of 0: drop those rows"
            )
    sparse = is_sparse(X._meta) or is_sparse(sample)
    try:
        # (Sparse points as they are: the bank's linear maps read them, its others refuse
        # them by name; never densified.)
        bank.fit(sample if is_sparse(sample) else np.asarray(sample, dtype=np.float64))
    except NonFiniteError as e:
        if e.entry is None or idx is None:
            raise
        row, col = int(idx[e.entry[0]]), e.entry[1]  # the sample's row in the whole array
        raise NonFiniteError(
            f"X contains NaN or infinity (first at row {row}, column {col})", entry=(row, col)
        ) from None
    if names is not None:
        bank.feature_names_in_ = np.asarray(names, dtype=object)
    classes = counts = None
    if classifier:
        classes, counts = _class_counts(y_info)
        yl = [_delayed_chunk(_codes, b, classes) for b in yv.to_delayed().ravel()]  # class indices
    else:
        yl = list(yv.astype(np.float64).to_delayed().ravel())
    task_bank = copy.copy(bank)
    task_bank.n_threads = _task_threads(int(bank.n_threads))
    client = _client()
    starts = np.cumsum((0, *rows[:-1])).tolist()
    xs = [
        _delayed_chunk(_chunk_features, task_bank, b, a)
        for b, a in zip(X.to_delayed().ravel(), starts, strict=True)
    ]
    ws = [] if wf is None else list(wf.to_delayed().ravel())
    futs = client.compute([*xs, *yl, *ws])
    k = len(rows)
    data = Features(
        key, bank, futs[:k], futs[k : 2 * k], futs[2 * k :] if ws else None,
        [int(v) for v in rows], [int(v) for v in bank.n_components_], n, classes, counts,
        names, sparse,
    )  # fmt: skip
    est._dask_rows = Held(data)
    return data


def _class_counts(parts: list[tuple[NDArray[Any], NDArray[np.int64]]]) -> tuple[Any, Any]:
    """The classes (sorted) and the points per chunk and class, from each chunk's labels
    and counts (:func:`_chunk_classes`); labels that are not classes (continuous targets)
    are refused as in memory."""
    from sklearn.utils.multiclass import check_classification_targets

    classes = np.unique(np.concatenate([labels for labels, _ in parts]))
    check_classification_targets(classes)
    counts = np.zeros((len(parts), len(classes)), dtype=np.int64)
    for i, (labels, c) in enumerate(parts):
        counts[i, np.searchsorted(classes, labels)] = c
    if len(classes) < 2:
        raise InvalidInputError(
            f"the training data must contain at least two classes, got {len(classes)} class"
        )
    return classes, counts


def _reads_points(bank: FeatureBank) -> bool:
    """Whether fitting ``bank`` reads the points' values: Nyström landmarks or normalisation
    statistics. Linear and random-feature maps without normalisation read the number of
    features only (and the seed), so a fit on one row is the fit on any sample."""
    nystroem = bank.method == "nystroem" and not all(isinstance(s, Linear) for s in bank.specs)
    return bank.normalize != "none" or nystroem


def _delayed_chunk(fn: Any, *args: Any) -> Any:
    import dask

    return dask.delayed(fn, pure=True)(*args)


def _settings(est: Any, n: int, dims: list[int], sparse: bool = False) -> _core.Settings:
    """The engine settings of a fit on ``n`` rows of the blocks ``dims``, sparse or dense
    (``prox_newton``, as ``solver="auto"`` picks it on these features)."""
    early, settings = est._check_params()
    width = int(sum(dims))
    choice = early.on(_auto.StackInfo("features", n, len(dims), width, sparse))
    if choice.solver != "prox_newton":
        raise InvalidParameterError(
            f"a fit on a Dask array runs solver='prox_newton', and solver={est.solver!r} with "
            f"penalty={est.penalty!r} chose {choice.solver!r} on these features (total width "
            f"{width} for n = {n}); set solver='prox_newton'",
            parameter="solver",
        )
    if est.penalty == "group":
        # Before the move: the group penalty carries its ids to prox_newton.
        settings = settings.with_groups(group_ids(est.groups, len(dims))[0])
    out: _core.Settings = choice.settings(settings)
    return out


def _frame(X: Any, y: Any, sample_weight: Any) -> tuple[Any, Any, Any, list[str] | None]:
    """A Dask DataFrame ``X`` as a Dask array of its rows (its partitions' lengths computed:
    one pass), ``y`` and ``sample_weight`` Dask Series likewise, and ``X``'s column names
    (None unless all are strings)."""
    import sys

    # (Extension dtypes, categories and strings, are not NumPy's numeric dtypes.)
    bad = [c for c, t in X.dtypes.items() if not (isinstance(t, np.dtype) and t.kind in "biuf")]
    if bad:
        raise InvalidInputError(
            f"a Dask fit takes numeric columns (booleans, integers or floats); the columns "
            f"{[str(c) for c in bad]!r} of X are not: drop them, or encode them as numbers"
        )
    dd = sys.modules["dask.dataframe"]

    def column(v: Any, name: str) -> Any:
        if isinstance(v, dd.DataFrame):
            raise InvalidInputError(
                f"{name} must be one column (a Dask Series or an array), got a DataFrame"
            )
        return v.to_dask_array(lengths=True) if isinstance(v, dd.Series) else v

    return (
        X.to_dask_array(lengths=True), column(y, "y"), column(sample_weight, "sample_weight"),
        column_names(X),
    )  # fmt: skip


def _scheme(est: Any) -> str:
    """The classifier's multiclass scheme, checked as in memory."""
    if est.multi_class not in ("ovr", "ovo", "shared"):
        raise InvalidParameterError(
            f"multi_class must be 'ovr', 'ovo' or 'shared', got {est.multi_class!r}",
            parameter="multi_class",
        )
    return str(est.multi_class)


def fit(est: Any, X: Any, y: Any, sample_weight: Any, classify: Classify | None = None) -> None:
    """``est.fit(X, y, sample_weight)`` with ``X`` a Dask array or DataFrame (module docs):
    ``est`` fitted; a classifier's problems are those of ``classify``
    (:func:`._dask_classes.classify`, which reads this module's problems: passed in, not
    imported), a regressor's the one problem of its targets."""
    from . import _dask

    classifier = classify is not None
    started = time.perf_counter()
    if not isinstance(est.kernels, FeatureBank):
        raise InvalidParameterError(
            "a fit on a Dask array takes kernels=FeatureBank(...): explicit features computed "
            "chunk by chunk on the workers",
            parameter="kernels",
        )
    scheme = _scheme(est) if classifier else None
    platt = False
    if classifier:
        loss = est._losses[0] if est.loss is None else est.loss
        platt = check_bool(est.probability, "probability") and loss != "logistic"
    previous = est._previous_fit()
    est._clear()
    threads = check_n_threads(est.n_threads)
    client = _client()
    names = None
    if _dask.is_dask_frame(X):
        X, y, sample_weight, names = _frame(X, y, sample_weight)
    data = _persist(est, X, y, sample_weight, classifier, names)
    settings = _settings(est, data.n, data.dims, data.sparse)
    made: list[Any] = []  # this fit's futures (targets, loss weights, one-vs-one rows)
    try:
        if classify is None:
            key: tuple[Any, ...] = ("prox_newton", settings["loss"], data.n, len(data.dims))
            starts = est._warm_starts(previous, (*key, tuple(data.dims)))
            costs = submit_costs(client, data, float(est.C), None)
            made += costs
            problem = Problem(data.x, data.y, costs, data.sizes, [], sparse=data.sparse)
            results = [fit_problem(est, client, problem, data.dims, threads, first_start(starts))]
            ab: list[tuple[float, float]] = []
        else:
            results, ab = classify(est, client, data, settings, scheme, platt, previous, made)
    except BaseException:
        est.__dict__["_dask_rows"].data = None  # shared with the estimator's own dict
        client.cancel([*data.futures(), *made])
        raise
    client.cancel(made)
    _set_fitted(est, data, results, ab)
    est._log_summary(started)


#: A classifier's problems on the persisted features (:func:`._dask_classes.classify`): the
#: engine's results and Platt's ``(A, B)`` per problem.
Classify = Callable[
    [Any, Any, "Features", Any, "str | None", bool, Any, list[Any]],
    tuple[list[_core.FitResult], list[tuple[float, float]]],
]


def first_start(starts: list[Any] | None, k: int = 0) -> Any:
    """Problem ``k``'s warm start of ``starts`` (None: cold)."""
    return None if not starts else starts[k]


def submit_costs(
    client: Any, data: Features, C: float, per_class: NDArray[np.float64] | None
) -> list[Any]:
    """Per chunk, a future of its loss weights (:func:`_loss_weights`)."""
    weights = data.w if data.w is not None else [None] * len(data.x)
    return [
        client.submit(_loss_weights, y, w, C, per_class, size, pure=False)
        for y, w, size in zip(data.y, weights, data.sizes, strict=True)
    ]


def fit_problem(
    est: Any, client: Any, problem: Problem, dims: list[int], threads: int, start: Any
) -> _core.FitResult:
    """One engine ``prox_newton`` fit of ``problem`` (from ``start``, a warm start, or
    cold): the engine's loop on the client, its passes over the chunks (:class:`ChunkRows`)."""
    settings = _settings(est, problem.n, dims, problem.sparse)
    init = {} if start is None else (_start_args("prox_newton", start) or {})
    rows = ChunkRows(client, problem, dims, _task_threads(threads))
    try:
        name = f"{type(est).__name__}{problem.label}"
        with _progress.iteration_log(name, est.verbose, int(est.max_iter)) as log:
            return _core.fit_rows(
                settings, rows, dims, problem.n, n_threads=threads, on_iteration=log,
                sparse=problem.sparse, **init,
            )  # fmt: skip
    finally:
        rows.close()


def _set_fitted(
    est: Any, data: Features, results: list[_core.FitResult], ab: list[tuple[float, float]]
) -> None:
    """The fitted attributes of a Dask fit: as an in-memory fit on the bank's features, but
    ``dual_coef_`` with no columns (its ``n`` columns stay on the cluster)."""
    est.kernel_bank_ = data.bank
    est.n_kernels_ = len(data.dims)
    est.n_features_in_ = int(data.bank.n_features_in_)
    if data.names is not None:
        est.feature_names_in_ = np.asarray(data.names, dtype=object)
    else:
        est.__dict__.pop("feature_names_in_", None)
    est._feature_widths, est._factors, est._on_demand = list(data.dims), False, False
    est.psd_shifts_ = np.zeros(len(data.dims))
    multi = len(results) > 1
    est._set_results(results, multi=multi)
    est.n_train_ = data.n
    est._split_feature_weights(data.dims)
    if data.classes is not None:
        est.classes_ = data.classes
        K = len(data.classes)
        pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
        ovo = multi and est.multi_class == "ovo"
        est.pairs_ = np.asarray(pairs if ovo else [], dtype=np.int64).reshape(-1, 2)
        est.probA_ = np.array([a for a, _ in ab], dtype=np.float64)
        est.probB_ = np.array([b for _, b in ab], dtype=np.float64)
