"""Every loss of the Dask fit, on an in-process and on a multi-process cluster
(multikernel._dask_fit, docs/dask.md, issue 64): the fit of a Dask array equals the in-memory
fit of the same estimator on the same data (kernel weights to 1e-10, decision values to 1e-9
relative, the iterations), with a bank wide enough that the fit's log of updates passes
100 kB: Dask makes a keyword argument of that size a graph key named after the keyword, which
the scheduler failed on ("AssertionError(<TaskState 'log' processing>)"), so each case failed
before the log travelled as one positional argument per task. Each update travels once; a
worker that lacks the log (a new one) is sent the whole log and ends on the same bits.

One cluster per parameter of the module's fixture (pytest runs one's tests, then closes it
before it starts the other)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel import _dask_fit
from multikernel.kernels import FeatureBank, Gaussian, Linear

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dask_sizeof = pytest.importorskip("dask.sizeof")

N = 240
CHUNKS = (90, 60, 90)
#: A log of this many bytes (as Dask sizes it) became a graph key of its own.
LARGE = 100_000


@pytest.fixture(scope="module", params=["in-process", "processes"])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    processes = request.param == "processes"
    # (Worker processes on loopback; in-process workers take no host.)
    where = {"host": "127.0.0.1"} if processes else {}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None,
            **where,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):  # fmt: skip
        yield c


def problem(regression: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, 5))
    f = X[:, 0] - 0.7 * X[:, 1] + 0.5 * np.sin(2 * X[:, 2])
    y = (
        f + 0.2 * rng.standard_normal(N)
        if regression
        else np.sign(f + 0.4 * rng.standard_normal(N))
    )
    return X, y, rng.uniform(0.5, 2.0, N)


def estimator(loss: str, penalty: str, kw: dict[str, Any]) -> Any:
    """400 random features by default (``n_components`` in ``kw``): each update of the log
    holds about twice that many numbers, so a few steps make it larger than :data:`LARGE`."""
    regression = loss in ("squared", "epsilon_insensitive")
    cls = mk.MKLRegressor if regression else mk.MKLClassifier
    specs = [Linear(features=[j]) for j in range(5)] + [Gaussian(sigma=2.0)]
    settings = {"tol": 1e-8, "max_iter": 500, "n_components": 400, **kw}
    width = settings.pop("n_components")
    bank = FeatureBank(specs, method="rff", n_components=width, random_state=0)
    return cls(kernels=bank, loss=loss, penalty=penalty, solver="prox_newton", C=2.0, **settings)


def rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def scores(est: Any, X: Any) -> Any:
    return est.decision_function(X) if hasattr(est, "decision_function") else est.predict(X)


class Sent:
    """Records what the fits' passes send (``passes``: each pass's first map; ``resends``:
    the whole log to the chunks whose worker lacked its start) and the logs they end with."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.passes: list[_dask_fit.Pass] = []
        self.resends: list[_dask_fit.Pass] = []
        self.logs: list[list[list[float]]] = []
        first = {"map": True}
        reduce, map_ = _dask_fit.ChunkRows.reduce, _dask_fit.ChunkRows._map
        close = _dask_fit.ChunkRows.close

        def record_reduce(rows: Any, code: list[float]) -> Any:
            first["map"] = True
            return reduce(rows, code)

        def record_map(rows: Any, chunks: list[int], p: _dask_fit.Pass) -> Any:
            (self.passes if first["map"] else self.resends).append(p)
            first["map"] = False
            return map_(rows, chunks, p)

        def record_close(rows: Any) -> None:
            self.logs.append(list(rows.log))
            close(rows)

        monkeypatch.setattr(_dask_fit.ChunkRows, "reduce", record_reduce)
        monkeypatch.setattr(_dask_fit.ChunkRows, "_map", record_map)
        monkeypatch.setattr(_dask_fit.ChunkRows, "close", record_close)

    def each_update_once(self) -> None:
        """Each pass sends the updates since the one before: every update travels once."""
        (log,) = self.logs
        sent: list[list[float]] = []
        for p in self.passes:
            assert p.start == len(sent)
            sent.extend(p.tail)
        assert sent == log[: len(sent)]
        assert len(log) - len(sent) <= 1  # (the last update, of the fit's end, unsent)


def fit_both(loss: str, penalty: str, kw: dict[str, Any], weighted: bool) -> tuple[Any, Any]:
    """The Dask fit and the in-memory fit of the same estimator on the same data."""
    X, y, w = problem(loss in ("squared", "epsilon_insensitive"))
    sw = w if weighted else None
    Xd, yd = da.from_array(X, chunks=(CHUNKS, 5)), da.from_array(y, chunks=(CHUNKS,))
    wd = None if sw is None else da.from_array(sw, chunks=(CHUNKS,))
    with warnings.catch_warnings():
        # Fits stopped by max_iter: the same iterates either way.
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = estimator(loss, penalty, kw).fit(Xd, yd, sample_weight=wd)
        ref = estimator(loss, penalty, kw).fit(X, y, sample_weight=sw)
    return est, ref


def check_equal(est: Any, ref: Any) -> None:
    X, _, _ = problem(isinstance(est, mk.MKLRegressor))
    assert est.n_iter_ == ref.n_iter_
    assert rel(est.kernel_weights_, ref.kernel_weights_) < 1e-10
    assert rel(scores(est, X), scores(ref, X)) < 1e-9
    assert rel(est.primal_objective_, ref.primal_objective_) < 1e-10


def test_the_workers_import_this_package(client: Any) -> None:
    files = client.run(lambda: importlib.import_module("multikernel").__file__)
    assert len(files) == 2
    assert set(files.values()) == {mk.__file__}


# (loss, penalty, settings, sample weights): every loss of each estimator; the smoothing
# continuations (hinge, epsilon_insensitive: ~60 passes per step) stopped after a few steps,
# to a converged fit in the slow cases below.
FAST = [
    ("hinge", "lp", {"max_iter": 3, "n_components": 600}, False),
    ("squared_hinge", "l1", {}, True),
    ("logistic", "lp", {}, False),
    ("squared", "l1", {"n_components": 1000}, True),  # 3 steps: wider updates
    ("epsilon_insensitive", "lp", {"max_iter": 3, "n_components": 600}, False),
]


@pytest.mark.parametrize(("loss", "penalty", "kw", "weighted"), FAST)
def test_every_loss_equals_the_in_memory_fit(
    client: Any, monkeypatch: pytest.MonkeyPatch, loss: str, penalty: str, kw: Any, weighted: bool
) -> None:
    sent = Sent(monkeypatch)
    est, ref = fit_both(loss, penalty, kw, weighted)
    check_equal(est, ref)
    # Where the keyword became a key. Summed update by update: Dask's estimate of a list
    # samples 10 of its items at random, and the updates differ in length (a flaky bound).
    assert sum(map(dask_sizeof.sizeof, sent.logs[0])) > LARGE
    sent.each_update_once()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("loss", "penalty"),
    [("hinge", "lp"), ("hinge", "l1"), ("epsilon_insensitive", "lp")],
)
def test_the_smoothed_losses_converged_equal_the_in_memory_fit(
    client: Any, loss: str, penalty: str
) -> None:
    est, ref = fit_both(loss, penalty, {"tol": 1e-2}, True)
    assert est.duality_gap_ < 1e-2
    check_equal(est, ref)


@pytest.mark.xfail(
    strict=True,
    reason="the engine's epsilon_insensitive steps depend on the chunking beyond rounding "
    "(before this change too): 5e-6 in the objective after 2 steps on 2 chunks, weighted",
)
def test_epsilon_insensitive_steps_do_not_depend_on_the_chunks(client: Any) -> None:
    X, y, w = problem(True)
    kw = {"max_iter": 2, "n_components": 8}
    Xd, yd, wd = (da.from_array(a, chunks=((120, 120),) + a.shape[1:]) for a in (X, y, w))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = estimator("epsilon_insensitive", "lp", kw).fit(Xd, yd, sample_weight=wd)
        ref = estimator("epsilon_insensitive", "lp", kw).fit(X, y, sample_weight=w)
    assert rel(est.primal_objective_, ref.primal_objective_) < 1e-10


def test_a_worker_without_the_log_is_sent_all_of_it(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers forget the fit's log at one pass (as a worker that joins mid-fit has
    none), then the log and the memos at another (as a replacement worker): the next tasks
    there are sent the whole log, replay it, and the fit ends on the same bits."""

    def forget(memos: bool) -> None:
        _dask_fit._LOGS.clear()
        if memos:
            _dask_fit._MEMOS.clear()

    calls = {"n": 0}
    reduce = _dask_fit.ChunkRows.reduce

    def forgetting(rows: Any, code: list[float]) -> list[list[float]]:
        calls["n"] += 1
        if calls["n"] in (10, 30):
            client.run(forget, calls["n"] == 30)
        return reduce(rows, code)

    ref, _ = fit_both("logistic", "l1", {}, True)
    monkeypatch.setattr(_dask_fit.ChunkRows, "reduce", forgetting)
    sent = Sent(monkeypatch)
    est, _ = fit_both("logistic", "l1", {}, True)
    assert calls["n"] > 30
    # Every chunk, at the two passes (and any whose worker ran no task of a pass).
    assert sum(len(p.tail) > 0 for p in sent.resends) >= 2
    assert all(p.start == 0 for p in sent.resends)
    sent.each_update_once()
    assert est.primal_objective_ == ref.primal_objective_
    assert est.duality_gap_ == ref.duality_gap_
    np.testing.assert_array_equal(np.concatenate(est.coef_), np.concatenate(ref.coef_))
