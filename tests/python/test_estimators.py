"""The scikit-learn estimators: the estimator checks, labels, multiclass, pickling, precomputed
kernels, validation errors, warnings, threads and Ctrl-C."""

from __future__ import annotations

import pickle
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import (
    POLL_CPU_SECONDS,
    cpu_seconds,
    cpu_seconds_after_interrupt,
    engine_threads,
    expected_failures,
)
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import multikernel as mk
from multikernel.kernels import Gaussian, Kernel, KernelBank, Linear


@parametrize_with_checks(  # type: ignore[untyped-decorator]
    [
        mk.MKLClassifier(),
        mk.MKLRegressor(),
        mk.MKLClassifier(penalty="l1", loss="logistic"),
        mk.MKLRegressor(penalty="elasticnet", loss="epsilon_insensitive"),
        mk.MKLClassifier(probability=True),
    ],
    expected_failed_checks=expected_failures,
)
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


@pytest.fixture(scope="module")
def cancer() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.default_rng(0).permutation(len(y))[:240]
    return X[idx], y[idx]


def test_spec_and_precomputed_modes_agree(
    cancer: tuple[NDArray[np.float64], NDArray[np.int64]],
) -> None:
    X, y = cancer
    specs = [Linear(), Gaussian(sigma=3.0), Gaussian(sigma=6.0, features=[0, 1, 2])]
    a = mk.MKLClassifier(kernels=specs, p=1.5, tol=1e-6).fit(X[:200], y[:200])
    bank = mk.kernels.KernelBank(specs, normalize="mean_diag")
    G = bank.fit_transform(X[:200])
    b = mk.MKLClassifier(kernels="precomputed", p=1.5, tol=1e-6).fit(G, y[:200])
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, atol=1e-10)
    np.testing.assert_allclose(
        a.decision_function(X[200:]), b.decision_function(bank.transform(X[200:])), atol=1e-10
    )
    # The primal recomputed from the fitted attributes.
    f = np.einsum("mij,mj->i", G, b.dual_coef_) + b.intercept_
    yy = np.where(y[:200] == 1, 1.0, -1.0)
    norms = np.sqrt(np.einsum("mi,mij,mj->m", b.dual_coef_, G, b.dual_coef_))
    np.testing.assert_allclose(norms, b.kernel_norms_, rtol=1e-8)
    q = 2 * 1.5 / 2.5
    P = np.maximum(0, 1 - yy * f).sum() + 0.5 * np.sum(norms**q) ** (2 / q)
    assert P == pytest.approx(b.primal_objective_, rel=1e-9)
    assert 0 <= b.duality_gap_ <= 1e-6
    assert b.converged_ and b.n_iter_ == len(b.history_)
    assert b.history_["gap"][-1] == pytest.approx(b.duality_gap_)


def test_string_labels_and_pickle(cancer: tuple[NDArray[np.float64], NDArray[np.int64]]) -> None:
    X, y = cancer
    labels = np.array(["malignant", "benign"])[y]
    clf = mk.MKLClassifier().fit(X, labels)
    assert set(clf.classes_) == {"benign", "malignant"}
    assert clf.score(X, labels) > 0.95
    clone = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clone.predict(X), clf.predict(X))
    # The fitted state is plain Python and numpy data (and the package's pure-Python kernel
    # bank and specifications): no object of the native module, whose pickles would be tied
    # to one build of it (or fail).
    for path, v in _state_leaves(vars(clf), "clf"):
        assert isinstance(v, PLAIN_STATE), f"{path} is a {type(v).__module__}.{type(v).__name__}"
        assert not (isinstance(v, np.ndarray) and v.dtype == object), path


#: The types a fitted estimator's state may hold (containers are walked).
PLAIN_STATE = (type(None), bool, int, float, str, np.ndarray, np.generic, np.dtype, Kernel)


def _state_leaves(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The leaves of an estimator's state, walking dicts, lists, tuples and kernel banks."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _state_leaves(v, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _state_leaves(v, f"{path}[{i}]")
    elif isinstance(obj, KernelBank):
        yield from _state_leaves(vars(obj), f"{path}.vars")
    else:
        yield path, obj


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
def test_multiclass(multi_class: str) -> None:
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = mk.MKLClassifier(multi_class=multi_class, C=10.0).fit(X, names)
    assert clf.score(X, names) > 0.95
    n_problems = 3
    assert clf.dual_coef_.shape == (n_problems, 5, 150)
    assert clf.decision_function(X).shape == (150, n_problems)
    assert np.all(clf.duality_gap_ <= 1e-3)


def test_predict_proba_logistic(cancer: tuple[NDArray[np.float64], NDArray[np.int64]]) -> None:
    X, y = cancer
    clf = mk.MKLClassifier(kernels=[Linear()], normalize=None, loss="logistic", C=0.5, tol=1e-8)
    clf.fit(X, y)
    # A single linear kernel with p = 2 is L2-regularised logistic regression.
    ref = LogisticRegression(C=0.5, tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-5)
    hinge = mk.MKLClassifier().fit(X, y)
    assert not hasattr(hinge, "predict_proba")
    with pytest.raises(AttributeError, match="predict_proba"):
        hinge.predict_proba(X)
    Xi, yi = load_iris(return_X_y=True)
    P = mk.MKLClassifier(loss="logistic").fit(Xi, yi).predict_proba(Xi)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_regressor_squared_loss_is_kernel_ridge() -> None:
    from sklearn.kernel_ridge import KernelRidge

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    # One kernel, p = ∞, centred targets: kernel ridge with alpha = 1/C plus the intercept.
    reg = mk.MKLRegressor(kernels=[Gaussian(sigma=1.0)], normalize=None, p=np.inf, C=4.0)
    reg.fit(X, y)
    K = mk.kernels.gram(X, [Gaussian(sigma=1.0)])[0]
    n = len(y)
    # Bordered system of the intercept model: [K + I/C, 1; 1ᵀ, 0].
    A = np.block([[K + np.eye(n) / 4.0, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
    sol = np.linalg.solve(A, np.r_[y, 0.0])
    np.testing.assert_allclose(reg.dual_coef_[0], sol[:n], atol=1e-8)
    assert reg.intercept_ == pytest.approx(sol[n], abs=1e-8)
    # The same model is scikit-learn's KernelRidge (no intercept) on the centred problem: the
    # coefficients sum to zero, so (HKH + I/C) α = H y with H = I − 11ᵀ/n, and b = mean(y − Kα).
    H = np.eye(n) - 1.0 / n
    kr = KernelRidge(alpha=1.0 / 4.0, kernel="precomputed").fit(H @ K @ H, y - y.mean())
    np.testing.assert_allclose(reg.dual_coef_[0], kr.dual_coef_, atol=1e-8)
    assert reg.intercept_ == pytest.approx(np.mean(y - K @ kr.dual_coef_), abs=1e-8)
    np.testing.assert_allclose(reg.predict(X), K @ kr.dual_coef_ + reg.intercept_, atol=1e-8)


def test_invalid_parameters(cancer: tuple[NDArray[np.float64], NDArray[np.int64]]) -> None:
    X, y = cancer
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"penalty": "l3"}, ValueError, "penalty must be one of"),
        ({"penalty": "group"}, ValueError, "needs groups="),
        ({"penalty": "l1", "solver": "analytic"}, ValueError, "valid: auto, spicy"),
        ({"penalty": "elasticnet", "l1_ratio": 1.5}, ValueError, "l1_ratio"),
        ({"penalty": "l1", "solver_config": mk.AnalyticConfig()}, ValueError, "SpicyConfig"),
        ({"loss": "squared"}, ValueError, "hinge, squared_hinge, logistic"),
        ({"solver": "interleaved", "loss": "logistic"}, ValueError, "handles hinge"),
        ({"solver": "spicy"}, ValueError, "valid: auto, analytic, interleaved"),
        ({"p": 0.5}, ValueError, "p must be in"),
        ({"C": 0.0}, ValueError, "C must be"),
        ({"tol": -1.0}, ValueError, "tol must be"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"n_threads": -(10**6)}, ValueError, "n_threads"),
        ({"multi_class": "crammer"}, ValueError, "multi_class"),
        ({"kernels": "rbf"}, ValueError, "precomputed"),
        ({"solver_config": mk.InterleavedConfig()}, ValueError, "AnalyticConfig"),
    ]
    for params, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            mk.MKLClassifier(**params).fit(X, y)
    with pytest.raises(ValueError, match="squared, epsilon_insensitive"):
        mk.MKLRegressor(loss="hinge").fit(X, y.astype(float))
    with pytest.raises(ValueError, match="at least two classes|1 class"):
        mk.MKLClassifier().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="inner_tol"):
        mk.AnalyticConfig(inner_tol=0.0)
    with pytest.raises(ValueError, match="gamma_factor"):
        mk.SpicyConfig(gamma_factor=0.5)


def test_bad_precomputed_input() -> None:
    G = np.stack([np.eye(4), np.eye(4)])
    y = np.array([0, 1, 0, 1])
    clf = mk.MKLClassifier(kernels="precomputed")
    with pytest.raises(ValueError, match=r"\(M, n, n\)"):
        clf.fit(np.ones((2, 4, 3)), y)
    bad = G.copy()
    bad[0, 0, 1] = 1.0
    with pytest.raises(ValueError, match="kernel 0 is not symmetric"):
        clf.fit(bad, y)
    with pytest.raises(ValueError, match="one entry per training point"):
        clf.fit(G, y[:3])
    clf.fit(G, y)
    with pytest.raises(ValueError, match="G_test must have shape"):
        clf.predict(np.ones((3, 2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(np.full((2, 2, 4), np.nan))


def test_convergence_warning(cancer: tuple[NDArray[np.float64], NDArray[np.int64]]) -> None:
    X, y = cancer
    with pytest.warns(ConvergenceWarning, match=r"gap .* > tol 1\.000e-09"):
        clf = mk.MKLClassifier(p=1.0, max_iter=2, tol=1e-9).fit(X, y)
    assert not clf.converged_ and clf.duality_gap_ > 1e-9


def _slow_problem() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    rng = np.random.default_rng(0)
    n, M = 600, 60
    X = rng.normal(size=(n, 8))
    y = np.sign(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n))
    specs = [Gaussian(sigma=s, features=[j]) for j in range(8) for s in (0.5, 1, 2, 4)][:M]
    specs += [Gaussian(sigma=s) for s in np.linspace(0.5, 8, M - len(specs))]
    return mk.kernels.gram(X, specs, normalize="trace"), y


@pytest.mark.parametrize("kind", ["lp", "interleaved", "l1", "group", "one_class"])
def test_ctrl_c_interrupts_a_fit_quickly_and_leaves_it_unfitted(kind: Any) -> None:
    G, y = _slow_problem()  # each of these fits runs for tens of seconds
    clf: Any = (
        mk.MKLOneClass(kernels="precomputed", p=1.0, tol=1e-14, max_iter=100000)
        if kind == "one_class"
        else mk.MKLClassifier(
            kernels="precomputed",
            penalty="lp" if kind == "interleaved" else kind,
            p=1.0,
            # Kloft's update at p = 1 and SpicyMKL at tol 1e-14 converge slowly, which this test
            # needs (the SVM wrapper does not).
            solver={"lp": "analytic", "interleaved": "interleaved", "l1": "spicy"}.get(
                kind, "auto"
            ),
            groups=[m % 4 for m in range(len(G))] if kind == "group" else None,
            # The paper's step rule: about 4 s here (the adaptive one converges in 0.2 s).
            solver_config=mk.MirrorConfig(step="paper") if kind == "group" else None,
            tol=1e-14,
            max_iter=100000,
            # At C = 100 Kloft's update converged about when the Ctrl-C came: C = 1000 keeps it
            # running well past it.
            C=1000.0 if kind == "lp" else 100.0,
        )
    )
    after = cpu_seconds_after_interrupt(0.5, lambda: clf.fit(G, y))
    assert not hasattr(clf, "dual_coef_")
    # It stops within an iteration of the Ctrl-C: less work than a fit of one iteration,
    # its set-up included (uninterrupted, the fit would run for tens of CPU seconds).
    one = cpu_seconds(lambda: clone(clf).set_params(max_iter=1).fit(G, y))
    assert after < one + POLL_CPU_SECONDS, (after, one)


def test_gil_is_released_during_fit() -> None:
    G, y = _slow_problem()
    ticks: list[float] = []
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        mk.MKLClassifier(
            kernels="precomputed", p=1.0, solver="analytic", tol=1e-14, max_iter=30, C=100.0
        ).fit(G, y)
        end = time.perf_counter()
    stop.set()
    t.join()
    # With the GIL held the counter could not tick while the engine runs: one gap between
    # ticks would span most of the fit. Released, the gaps are the scheduler's (milliseconds),
    # a small part of the fit however loaded the machine, which stretches both alike.
    during = [start] + [s for s in ticks if start < s < end] + [end]
    assert max(np.diff(during)) < 0.25 * (end - start), (max(np.diff(during)), end - start)


def test_n_threads_gives_identical_results(
    cancer: tuple[NDArray[np.float64], NDArray[np.int64]], two_cores: None
) -> None:
    X, y = cancer
    with engine_threads() as used:
        a = mk.MKLClassifier(n_threads=1).fit(X, y)
    assert used == [1]
    with engine_threads() as used:
        b = mk.MKLClassifier(n_threads=2).fit(X, y)
    assert used == [2]  # two worker threads, whatever the runner
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_l1_penalty_is_sparse_and_certified(
    cancer: tuple[NDArray[np.float64], NDArray[np.int64]], loss: str
) -> None:
    X, y = cancer
    specs = mk.kernels.simplemkl_bank(X.shape[1], widths=[1.0, 5.0], degrees=[1])
    clf = mk.MKLClassifier(kernels=specs, penalty="l1", loss=loss, C=1.0, tol=1e-4).fit(X, y)
    w = clf.kernel_weights_
    assert w.sum() == pytest.approx(1.0) and w.min() >= 0
    assert 0 < np.count_nonzero(w) < len(specs) // 2
    assert np.all(clf.dual_coef_[w == 0] == 0)
    assert -1e-12 <= clf.duality_gap_ <= 1e-4 and clf.converged_
    np.testing.assert_allclose(w, clf.kernel_norms_ / clf.kernel_norms_.sum())
    assert clf.score(X, y) > 0.9
