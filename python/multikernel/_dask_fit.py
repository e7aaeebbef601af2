"""One ``prox_newton`` fit across a Dask cluster, on explicit features (docs/dask.md).

``fit(X, y)`` of :class:`~multikernel.MKLClassifier` or :class:`~multikernel.MKLRegressor`
with ``X`` a Dask array and ``kernels=FeatureBank(...)`` comes here (:func:`fit`):

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
  of size ``n`` reaches the client.

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
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import _auto, _core, _progress
from ._base import _start_args
from ._dask import _task_threads
from ._validation import (
    check_n_threads,
    group_ids,
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
    the targets (±1 for a classifier) and the samples' weights.

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
        A classifier's two classes.
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

    def futures(self) -> list[Any]:
        return [*self.x, *self.y, *(self.w or [])]


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


def _chunk_features(bank: FeatureBank, X: NDArray[Any], start: int = 0) -> NDArray[Any]:
    """A chunk's features, one C-ordered ``(n_c, R)`` array; a non-finite point is named by
    its row in the whole array (the chunk's rows begin at ``start``)."""
    out = np.empty((X.shape[0], int(np.sum(bank.n_components_))), dtype=bank.dtype)
    try:
        bank.transform(X, out=out)
    except NonFiniteError as e:
        if e.entry is None:
            raise
        row, col = start + e.entry[0], e.entry[1]
        raise NonFiniteError(
            f"X contains NaN or infinity (first at row {row}, column {col})", entry=(row, col)
        ) from None
    return out


def _costs(w: NDArray[np.float64] | None, C: float, size: int) -> NDArray[np.float64]:
    """A chunk's loss weights ``c = C w`` (``C`` on its ``size`` rows without weights)."""
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
    x: NDArray[Any], y: NDArray[np.float64], c: NDArray[np.float64], index: int, p: Pass
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
    x = np.require(x, requirements=["C", "A"])
    y, c = (np.require(v, np.float64, ["C", "A"]) for v in (y, c))
    return _core.chunk_run(x, p.dims, y, c, memo, log, p.ops, n_threads=p.threads)


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
    data : Features
        The persisted rows.
    C : float
        The loss weight.
    threads : int
        Engine threads per task.
    """

    def __init__(self, client: Any, data: Features, C: float, threads: int) -> None:
        import uuid

        self._client = client
        self._data = data
        self._threads = threads
        self._fit = uuid.uuid4().hex
        weights = data.w if data.w is not None else [None] * len(data.x)
        self.costs = [
            client.submit(_costs, w, C, k) for w, k in zip(weights, data.sizes, strict=True)
        ]
        self.log: list[list[float]] = []
        #: The log's length at the last pass: every worker that ran a task of it has that much.
        self.sent = 0
        self.tasks = 0
        #: Tasks sent the whole log again (their worker lacked its start).
        self.resent = 0

    def _map(self, chunks: list[int], p: Pass) -> list[list[list[float]] | None]:
        d = self._data
        self.tasks += len(chunks)
        futs = self._client.map(
            _run, [d.x[i] for i in chunks], [d.y[i] for i in chunks],
            [self.costs[i] for i in chunks], chunks, [p] * len(chunks), pure=False,
        )  # fmt: skip
        parts: list[list[list[float]] | None] = self._client.gather(futs)
        return parts

    def reduce(self, code: list[float]) -> list[list[float]]:
        p = Pass(
            self._fit, list(self._data.dims), self.sent, self.log[self.sent :], [list(code)],
            self._threads,
        )  # fmt: skip
        parts = self._map(list(range(len(self._data.x))), p)
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
        """Releases the loss weights and the workers' memos and logs (nothing of the fit
        runs on)."""
        self._client.cancel(self.costs)
        self.costs = []
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


def _persist(est: Any, X: Any, y: Any, sample_weight: Any, classifier: bool) -> Features:
    """The rows of ``X``, ``y``, ``sample_weight`` on the cluster (:class:`Features`), made
    once per estimator and arrays."""
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
    bank = copy.deepcopy(template)
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
    # The labels (a classifier's) or the targets' check (a regressor's), in the same pass as
    # the sample and the weights' summaries: one round of the cluster.
    if classifier:
        bad_y = ~da.isfinite(yv) if yv.dtype.kind == "f" else None
        about_y = da.unique(yv)
    else:
        bad_y = ~da.isfinite(yv.astype(np.float64))
        about_y = None
    checks = () if bad_y is None else (bad_y.any(), _first(bad_y))
    sample, y_info, w_info, y_bad = da.compute(sample_x, about_y, about_w, checks)
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
    try:
        bank.fit(np.asarray(sample, dtype=np.float64))
    except NonFiniteError as e:
        if e.entry is None or idx is None:
            raise
        row, col = int(idx[e.entry[0]]), e.entry[1]  # the sample's row in the whole array
        raise NonFiniteError(
            f"X contains NaN or infinity (first at row {row}, column {col})", entry=(row, col)
        ) from None
    classes = None
    if classifier:
        classes = np.unique(y_info)
        if len(classes) != 2:
            raise InvalidInputError(
                f"a Dask fit takes two classes, got {len(classes)}: fit one-vs-rest problems "
                "one at a time"
            )
        yf = da.where(yv == classes[1], 1.0, -1.0)
    else:
        yf = yv.astype(np.float64)
    task_bank = copy.copy(bank)
    task_bank.n_threads = _task_threads(int(bank.n_threads))
    client = _client()
    starts = np.cumsum((0, *rows[:-1])).tolist()
    xs = [
        _delayed_chunk(_chunk_features, task_bank, b, a)
        for b, a in zip(X.to_delayed().ravel(), starts, strict=True)
    ]
    ws = [] if wf is None else list(wf.to_delayed().ravel())
    futs = client.compute([*xs, *yf.to_delayed().ravel(), *ws])
    k = len(rows)
    data = Features(
        key, bank, futs[:k], futs[k : 2 * k], futs[2 * k :] if ws else None,
        [int(v) for v in rows], [int(v) for v in bank.n_components_], n, classes,
    )  # fmt: skip
    est._dask_rows = Held(data)
    return data


def _reads_points(bank: FeatureBank) -> bool:
    """Whether fitting ``bank`` reads the points' values: Nyström landmarks or normalisation
    statistics. Linear and random-feature maps without normalisation read the number of
    features only (and the seed), so a fit on one row is the fit on any sample."""
    nystroem = bank.method == "nystroem" and not all(isinstance(s, Linear) for s in bank.specs)
    return bank.normalize != "none" or nystroem


def _delayed_chunk(fn: Any, *args: Any) -> Any:
    import dask

    return dask.delayed(fn, pure=True)(*args)


def _settings(est: Any, data: Features) -> tuple[_core.Settings, tuple[Any, ...]]:
    """The engine settings of the fit (``prox_newton``, as ``solver="auto"`` picks it on
    these features) and its warm-start key."""
    early, settings = est._check_params()
    width = int(sum(data.dims))
    choice = early.on(_auto.StackInfo("features", data.n, len(data.dims), width))
    if choice.solver != "prox_newton":
        raise InvalidParameterError(
            f"a fit on a Dask array runs solver='prox_newton', and solver={est.solver!r} with "
            f"penalty={est.penalty!r} chose {choice.solver!r} on these features (total width "
            f"{width} for n = {data.n}); set solver='prox_newton'",
            parameter="solver",
        )
    settings = choice.settings(settings)
    if est.penalty == "group":
        settings = settings.replace(groups=group_ids(est.groups, len(data.dims))[0])
    classes = None if data.classes is None else tuple(data.classes.tolist())
    key = ("prox_newton", settings["loss"], data.n, len(data.dims), tuple(data.dims), classes)
    return settings, (*key, None) if classes is not None else key


def fit(est: Any, X: Any, y: Any, sample_weight: Any, classifier: bool) -> None:
    """``est.fit(X, y, sample_weight)`` with ``X`` a Dask array (module docs): ``est``
    fitted."""
    started = time.perf_counter()
    if not isinstance(est.kernels, FeatureBank):
        raise InvalidParameterError(
            "a fit on a Dask array takes kernels=FeatureBank(...): explicit features computed "
            "chunk by chunk on the workers",
            parameter="kernels",
        )
    if classifier and est.probability and est.loss != "logistic":
        raise InvalidParameterError(
            "a Dask fit has no Platt scaling (probability=True): use loss='logistic'",
            parameter="probability",
        )
    if classifier and est.class_weight is not None:
        raise InvalidParameterError(
            "a Dask fit takes class_weight=None (weigh the samples with sample_weight)",
            parameter="class_weight",
        )
    previous = est._previous_fit()
    est._clear()
    threads = check_n_threads(est.n_threads)
    client = _client()
    data = _persist(est, X, y, sample_weight, classifier)
    settings, key = _settings(est, data)
    starts = est._warm_starts(previous, key)
    init = {} if not starts else (_start_args("prox_newton", starts[0]) or {})
    rows = ChunkRows(client, data, float(est.C), _task_threads(threads))
    try:
        name = type(est).__name__
        with _progress.iteration_log(name, est.verbose, int(est.max_iter)) as log:
            r = _core.fit_rows(
                settings, rows, data.dims, data.n, n_threads=threads, on_iteration=log, **init
            )
    except BaseException:
        rows.close()
        est.__dict__["_dask_rows"].data = None  # shared with the estimator's own dict
        client.cancel(data.futures())
        raise
    rows.close()
    _set_fitted(est, data, r)
    est._log_summary(started)


def _set_fitted(est: Any, data: Features, r: _core.FitResult) -> None:
    """The fitted attributes of a Dask fit: as an in-memory fit on the bank's features, but
    ``dual_coef_`` of shape ``(M, 0)`` (its ``n`` columns stay on the cluster)."""
    est.kernel_bank_ = data.bank
    est.n_kernels_ = len(data.dims)
    est.n_features_in_ = int(data.bank.n_features_in_)
    est._feature_widths, est._factors, est._on_demand = list(data.dims), False, False
    est.psd_shifts_ = np.zeros(len(data.dims))
    est._set_results([r], multi=False)
    est.n_train_ = data.n
    ends = np.cumsum(data.dims)[:-1]
    est.coef_ = np.split(np.asarray(r.feature_weights), ends)
    if data.classes is not None:
        est.classes_ = data.classes
        est.pairs_ = np.zeros((0, 2), dtype=np.int64)
        est.probA_ = np.zeros(0)
        est.probB_ = np.zeros(0)
