"""One ``prox_newton`` fit across a Dask cluster (multikernel._dask_fit, docs/dask.md): the
fit of a Dask array equals the in-memory fit on the same features (the bank's features of
all rows, ``kernels="precomputed"``) for each penalty and each loss, under uneven chunkings;
its certificate is the in-memory one; an interrupted fit leaves no task of its own on the
cluster; a worker lost mid-fit changes nothing. One cluster for the module (its last test
closes a worker)."""

from __future__ import annotations

import _thread
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import multikernel as mk
from multikernel import _dask_fit
from multikernel.exceptions import InvalidInputError, NonFiniteError
from multikernel.kernels import FeatureBank, Gaussian, Linear

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

N = 600


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster: Any) -> Iterator[Any]:
    with distributed.Client(cluster) as c:
        yield c


def data(loss: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, 5))
    f = X[:, 0] - 0.7 * X[:, 1] + 0.5 * np.sin(2 * X[:, 2])
    y = np.sign(f + 0.4 * rng.standard_normal(N)) if loss != "squared" else f
    if loss == "squared":
        y = y + 0.2 * rng.standard_normal(N)
    w = rng.uniform(0.5, 2.0, N)
    return X, y, w


def bank() -> FeatureBank:
    specs = [Linear(features=[j]) for j in range(5)] + [Gaussian(sigma=2.0)]
    return FeatureBank(specs, method="rff", n_components=8, random_state=0)


# (loss, penalty, settings, chunks): every penalty and every loss once; the continuations
# (group's, the hinge's smoothing) to a looser tol, whose levels cost many passes.
CASES = [
    ("logistic", "l1", {}, (250, 50, 300)),
    ("squared", "elasticnet", {"l1_ratio": 0.5}, 200),
    ("logistic", "group", {"groups": [0, 0, 1, 1, 2, 2], "tol": 1e-3}, (100, 500)),
    ("squared_hinge", "lp", {"p": 1.5, "tol": 1e-8}, 150),
    ("hinge", "l1", {"tol": 1e-2}, (350, 250)),
]


def estimator(loss: str, penalty: str, kw: dict[str, Any], kernels: Any) -> Any:
    cls = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    settings = {"tol": 1e-10, **kw}
    return cls(
        kernels=kernels, loss=loss, penalty=penalty, solver="prox_newton", C=2.0,
        max_iter=500, **settings,
    )  # fmt: skip


def rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize(("loss", "penalty", "kw", "chunks"), CASES)
def test_dask_fit_equals_the_in_memory_fit(
    client: Any, loss: str, penalty: str, kw: Any, chunks: Any
) -> None:
    X, y, w = data(loss)
    est = estimator(loss, penalty, kw, bank())
    Xd, yd, wd = (da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in (X, y, w))
    est.fit(Xd, yd, sample_weight=wd)
    blocks = est.kernel_bank_.transform(X)
    ref = estimator(loss, penalty, kw, "precomputed").fit(blocks, y, sample_weight=w)
    assert est.dual_coef_.shape == (6, 0)
    # The certificate is the whole problem's: the in-memory one.
    for name in ("primal_objective_", "dual_objective_"):
        assert rel(getattr(est, name), getattr(ref, name)) < 1e-10, name
    assert abs(est.duality_gap_ - ref.duality_gap_) < 1e-9 * max(1.0, ref.duality_gap_)
    # The iterates: the chunks' sums differ from the in-memory ones by rounding only, and
    # the reported iterate is the newest unless it is worse beyond rounding (docs/dask.md).
    w, w_ref = np.concatenate(est.coef_), np.concatenate(ref.coef_)
    assert rel(w, w_ref) < 1e-10
    assert abs(est.intercept_ - ref.intercept_) < 1e-10 * (1 + np.abs(w_ref).max())
    # The group's kernel weights read ‖F_mᵀρ̃‖ too, sums that cancel: added in another order
    # (the chunks), their rounding moves them further (docs/dask.md, "Same result"); the
    # other penalties' weights read the primal norms only.
    assert rel(est.kernel_weights_, ref.kernel_weights_) < (1e-9 if penalty == "group" else 1e-10)
    assert est.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(est.predict(X), ref.predict(blocks), rtol=1e-9, atol=1e-12)


def test_the_objective_is_the_same_formula(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported primal is ``C Σ w_i ℓ(y_i, f_i) + Σ_m ‖w_m‖`` of the fitted weights. With
    one engine thread per process (``OMP_NUM_THREADS=1``, as Dask sets in its worker
    processes): the client's solver has a pool of its own, so the in-process workers' tasks do
    not queue behind it in a pool of one thread (that deadlocked)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    X, y, w = data("logistic")
    est = estimator("logistic", "l1", {}, bank())
    Xd, yd, wd = (da.from_array(a, chunks=400) for a in (X, y, w))
    est.fit(Xd, yd, sample_weight=wd)
    F = np.hstack(est.kernel_bank_.transform(X))
    f = F @ np.concatenate(est.coef_) + est.intercept_
    yb = np.where(y == est.classes_[1], 1.0, -1.0)
    P = 2.0 * np.sum(w * np.logaddexp(0.0, -yb * f)) + sum(np.linalg.norm(c) for c in est.coef_)
    assert abs(P - est.primal_objective_) < 1e-9 * P
    assert 0 <= est.duality_gap_ < 1e-9


def test_warm_starts_and_a_grid_of_C_reuse_the_features(client: Any) -> None:
    X, y, _ = data("logistic")
    Xd, yd = da.from_array(X, chunks=400), da.from_array(y, chunks=400)
    est = estimator("logistic", "l1", {}, bank()).set_params(warm_start=True)
    est.fit(Xd, yd)
    first = _dask_fit.held(est)
    assert first is not None
    # Without sample weights (none kept on the workers): the in-memory fit's, every weight 1.
    # (The weights to 1e-9 here: the chunks' sums differ from memory's by rounding, which the
    # Newton systems of this fit amplify beyond 1e-10.)
    ref = estimator("logistic", "l1", {}, "precomputed").fit(est.kernel_bank_.transform(X), y)
    assert rel(est.primal_objective_, ref.primal_objective_) < 1e-10
    assert rel(np.concatenate(est.coef_), np.concatenate(ref.coef_)) < 1e-9
    for C in (1.0, 4.0):
        est.set_params(C=C).fit(Xd, yd)
        assert _dask_fit.held(est) is first  # the same persisted features
        cold = estimator("logistic", "l1", {}, bank()).set_params(C=C).fit(Xd, yd)
        assert rel(est.primal_objective_, cold.primal_objective_) < 1e-9
    assert est.n_iter_ <= cold.n_iter_


def _tasks(client: Any) -> int:
    return int(client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)))


def test_an_interrupted_fit_leaves_the_cluster_clean(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A suite started as a background job has SIGINT ignored: install Python's handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        X, y, _ = data("hinge")
        calls = {"n": 0}
        original = _dask_fit.ChunkRows.reduce

        def reduce(self: Any, code: list[float]) -> list[list[float]]:
            calls["n"] += 1
            if calls["n"] == 15:
                threading.Thread(target=_thread.interrupt_main).start()
            return original(self, code)

        monkeypatch.setattr(_dask_fit.ChunkRows, "reduce", reduce)
        est = estimator("hinge", "l1", {"tol": 1e-12}, bank())
        with pytest.raises(KeyboardInterrupt):
            est.fit(da.from_array(X, chunks=300), da.from_array(y, chunks=300))
        assert _dask_fit.held(est) is None
        del est
        deadline = time.monotonic() + 10
        while _tasks(client) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _tasks(client) == 0
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("normalize", ["none", "mean_diag"])
def test_above_the_sample_size_the_bank_is_fitted_on_a_sample(
    client: Any, monkeypatch: pytest.MonkeyPatch, normalize: str
) -> None:
    """Above ``FIT_SAMPLE`` rows the bank is fitted on a sample (on one row when its maps and
    normalisation read no values): the Dask fit is the in-memory fit on that bank's features,
    and a bank that reads no values is the bank fitted on every point."""
    monkeypatch.setattr(_dask_fit, "FIT_SAMPLE", 100)
    X, y, _ = data("logistic")
    specs = [Linear(features=[j]) for j in range(5)] + [Gaussian(sigma=2.0)]
    make = lambda: FeatureBank(  # noqa: E731
        specs, method="rff", n_components=8, random_state=0, normalize=normalize
    )
    est = estimator("logistic", "l1", {}, make())
    est.fit(da.from_array(X, chunks=250), da.from_array(y, chunks=250))
    blocks = est.kernel_bank_.transform(X)
    ref = estimator("logistic", "l1", {}, "precomputed").fit(blocks, y)
    assert rel(est.primal_objective_, ref.primal_objective_) < 1e-10
    whole = np.hstack(make().fit(X).transform(X))
    if normalize == "none":
        np.testing.assert_array_equal(np.hstack(blocks), whole)
    else:  # the scales of 100 points, not of all 600
        assert not np.allclose(np.hstack(blocks), whole)


def test_refuses_what_it_does_not_fit(client: Any) -> None:
    X, y, _ = data("logistic")
    Xd, yd = da.from_array(X, chunks=400), da.from_array(y, chunks=400)
    with pytest.raises(ValueError, match="FeatureBank"):
        mk.MKLClassifier(solver="prox_newton").fit(Xd, yd)
    with pytest.raises(ValueError, match="at least two classes"):
        estimator("logistic", "l1", {}, bank()).fit(Xd, da.ones(N, chunks=400))
    with pytest.raises(ValueError, match="continuous"):  # as in memory
        estimator("logistic", "l1", {}, bank()).fit(Xd, da.from_array(X[:, 0], chunks=400))
    # The engine's shared solver reads a dense stack: no FeatureBank, in memory nor here.
    three = da.from_array(np.arange(N) % 3, chunks=400)
    with pytest.raises(ValueError, match="multi_class='shared'"):
        estimator("logistic", "l1", {}, bank()).set_params(multi_class="shared").fit(Xd, three)
    with pytest.raises(ValueError, match="multi_class must be"):
        estimator("logistic", "l1", {}, bank()).set_params(multi_class="all").fit(Xd, three)
    bad = da.from_array(np.where(np.arange(N) == 5, 0.0, 1.0), chunks=400)
    with pytest.raises(InvalidInputError, match="sample weights > 0"):
        estimator("logistic", "l1", {}, bank()).fit(Xd, yd, sample_weight=bad)
    # A point with NaN, found where its chunk's features are computed, is named by its row
    # in the whole array (here in the second chunk, past the bank's sample of one row).
    Xn = X.copy()
    Xn[450, 2] = np.nan
    linear = FeatureBank([Linear(features=[j]) for j in range(5)], normalize="none")
    with pytest.raises(NonFiniteError, match=r"row 450, column 2") as err:
        estimator("logistic", "l1", {}, linear).fit(da.from_array(Xn, chunks=400), yd)
    assert err.value.entry == (450, 2)


# --- hostile Dask inputs: a multikernel error that names the problem -----------------------

#: The kernel weights of an unweighted ``l1`` logistic fit: 1e-9, as in the warm-start test
#: (its Newton systems amplify the chunks' rounding beyond 1e-10).
UNWEIGHTED = 1e-9


def test_unknown_chunk_sizes_are_refused_with_their_fix(client: Any) -> None:
    """``X[mask]`` with a Dask mask has unknown chunk sizes: refused, naming the fix, which
    then gives the in-memory fit of those rows."""
    X, y, _ = data("logistic")
    keep = np.arange(N) % 7 != 3
    Xd, yd = da.from_array(X, chunks=(250, 5)), da.from_array(y, chunks=250)
    mask = da.from_array(keep, chunks=250)
    est = estimator("logistic", "l1", {}, bank())
    with pytest.raises(InvalidInputError, match=r"X has unknown chunk sizes.*compute_chunk_sizes"):
        est.fit(Xd[mask], yd[mask])
    Xk = Xd[mask].compute_chunk_sizes()
    with pytest.raises(InvalidInputError, match=r"y has unknown chunk sizes.*compute_chunk_sizes"):
        est.fit(Xk, yd[mask])
    w = da.ones(N, chunks=250)[mask]
    with pytest.raises(InvalidInputError, match=r"sample_weight has unknown chunk sizes"):
        est.fit(Xk, yd[mask].compute_chunk_sizes(), sample_weight=w)
    est.fit(Xk, yd[mask].compute_chunk_sizes())
    ref = estimator("logistic", "l1", {}, bank()).fit(X[keep], y[keep])
    assert rel(est.kernel_weights_, ref.kernel_weights_) < UNWEIGHTED
    assert rel(est.decision_function(X), ref.decision_function(X)) < 1e-9


def test_non_numeric_arrays_are_refused_naming_their_dtype(client: Any) -> None:
    X, y, w = data("logistic")
    est = estimator("logistic", "l1", {}, bank())
    Xd, yd = da.from_array(X, chunks=(250, 5)), da.from_array(y, chunks=250)
    with pytest.raises(InvalidInputError, match=r"numeric arrays.*X has dtype <U\d+"):
        est.fit(da.from_array(X.astype(str), chunks=(250, 5)), yd)
    with pytest.raises(InvalidInputError, match=r"numeric arrays.*X has dtype object"):
        est.fit(da.from_array(X.astype(object), chunks=(250, 5)), yd)
    with pytest.raises(InvalidInputError, match=r"numeric arrays.*sample_weight has dtype <U"):
        est.fit(Xd, yd, sample_weight=da.from_array(w.astype(str), chunks=250))
    reg = estimator("squared", "l1", {}, bank())
    with pytest.raises(InvalidInputError, match=r"numeric arrays.*y has dtype <U"):
        reg.fit(Xd, da.from_array(y.astype(str), chunks=250))
    # A classifier's labels may be strings (as in memory).
    labels = np.where(y > 0, "yes", "no")
    est.fit(Xd, da.from_array(labels, chunks=250))
    ref = estimator("logistic", "l1", {}, bank()).fit(X, labels)
    assert list(est.classes_) == ["no", "yes"]
    assert rel(est.kernel_weights_, ref.kernel_weights_) < UNWEIGHTED


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_non_finite_targets_are_named_with_their_row(client: Any, bad: float, loss: str) -> None:
    X, y, _ = data(loss)
    y = y.copy()
    y[[417, 500]] = bad
    est = estimator(loss, "l1", {}, bank())
    with pytest.raises(NonFiniteError, match=r"^y contains NaN or infinity \(first at row 417\)$"):
        est.fit(da.from_array(X, chunks=(250, 5)), da.from_array(y, chunks=250))


def test_missing_labels_and_misfit_targets_are_refused(client: Any) -> None:
    X, y, _ = data("logistic")
    Xd = da.from_array(X, chunks=(250, 5))
    est = estimator("logistic", "l1", {}, bank())
    for missing in (None, np.nan):
        labels = y.astype(object)
        labels[260] = missing
        with pytest.raises(InvalidInputError, match=r"y contains None or NaN .*at row 260\)"):
            est.fit(Xd, da.from_array(labels, chunks=250))
    # A regressor's None is NaN, as in memory.
    targets = data("squared")[1].astype(object)
    targets[13] = None
    with pytest.raises(NonFiniteError, match=r"y contains NaN or infinity \(first at row 13\)"):
        estimator("squared", "l1", {}, bank()).fit(Xd, da.from_array(targets, chunks=250))
    with pytest.raises(InvalidInputError, match=rf"y must have shape \({N},\), got \({N - 1},\)"):
        est.fit(Xd, da.from_array(y[:-1], chunks=250))
    with pytest.raises(InvalidInputError, match=rf"y must have shape \({N},\), got \({N}, 1\)"):
        est.fit(Xd, da.from_array(y[:, None], chunks=250))
    # Other chunks than X's are fine: y is rechunked to X's rows.
    est.fit(Xd, da.from_array(y, chunks=77))
    ref = estimator("logistic", "l1", {}, bank()).fit(X, y)
    assert rel(est.kernel_weights_, ref.kernel_weights_) < UNWEIGHTED


def test_bad_sample_weights_are_named(client: Any) -> None:
    X, y, w = data("logistic")
    Xd, yd = da.from_array(X, chunks=(250, 5)), da.from_array(y, chunks=250)
    est = estimator("logistic", "l1", {}, bank())
    cases = [
        (np.nan, NonFiniteError, r"^sample_weight contains NaN or infinity$"),
        (np.inf, NonFiniteError, r"^sample_weight contains NaN or infinity$"),
        (-0.5, InvalidInputError, r"^sample_weight must be non-negative, got min -0.5$"),
        (0.0, InvalidInputError, r"sample weights > 0, got a weight of 0"),
    ]
    for value, kind, message in cases:
        bad = w.copy()
        bad[333] = value
        with pytest.raises(kind, match=message):
            est.fit(Xd, yd, sample_weight=da.from_array(bad, chunks=250))
    with pytest.raises(InvalidInputError, match=r"sample_weight is zero for every sample"):
        est.fit(Xd, yd, sample_weight=da.zeros(N, chunks=250))


def test_a_non_finite_point_of_the_banks_sample_is_named_by_its_row(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above ``FIT_SAMPLE`` rows the bank is fitted on a sample: a NaN met there is named by
    its row in the whole array, not in the sample."""
    monkeypatch.setattr(_dask_fit, "FIT_SAMPLE", 100)
    X, y, _ = data("logistic")
    idx = np.sort(np.random.default_rng(0).choice(N, 100, replace=False))
    X = X.copy()
    X[idx[40], 3] = np.nan
    reads = FeatureBank(
        [Linear(features=[j]) for j in range(5)], normalize="mean_diag", random_state=0
    )
    with pytest.raises(NonFiniteError, match=rf"row {idx[40]}, column 3") as err:
        estimator("logistic", "l1", {}, reads).fit(
            da.from_array(X, chunks=(250, 5)), da.from_array(y, chunks=250)
        )
    assert err.value.entry == (idx[40], 3)


def _worker_killer(client: Any, cluster: Any, after: int) -> Any:
    """A ``ChunkRows.reduce`` that closes one worker (its chunks' state lost) at its
    ``after``-th call."""
    calls = {"n": 0}
    original = _dask_fit.ChunkRows.reduce

    def reduce(self: Any, code: list[float]) -> list[list[float]]:
        calls["n"] += 1
        if calls["n"] == after:
            name = next(iter(cluster.workers))
            cluster.sync(cluster.workers[name].close)
        return original(self, code)

    return reduce


def test_a_worker_lost_mid_fit_changes_nothing(
    cluster: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Last: it closes one of the module cluster's workers.) The lost worker's chunks are
    recomputed on the other, whose new memos replay the fit's log."""
    X, y, _ = data("logistic", seed=1)
    Xd, yd = da.from_array(X, chunks=150), da.from_array(y, chunks=150)
    ref = estimator("logistic", "l1", {}, bank()).fit(Xd, yd)
    monkeypatch.setattr(_dask_fit.ChunkRows, "reduce", _worker_killer(client, cluster, 12))
    est = estimator("logistic", "l1", {}, bank()).fit(Xd, yd)
    assert len(client.scheduler_info()["workers"]) < 2
    assert est.primal_objective_ == ref.primal_objective_
    assert est.duality_gap_ == ref.duality_gap_
    np.testing.assert_array_equal(np.concatenate(est.coef_), np.concatenate(ref.coef_))
