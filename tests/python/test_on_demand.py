"""Kernels computed on demand (``cache_size=``): the same fit as the stored stack (θ, the
objective and the decisions to 1e-8 relative at tol 1e-10), the optimum of cvxpy (Clarabel)
on the stored kernels, the automatic rule, and clear refusals of what cannot be computed on
demand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import solvers_called
from reference import cvxpy_mkl

import multikernel as mk
from multikernel import _data
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import Gaussian, KernelBank, Laplacian, Linear, Polynomial

FloatArray = NDArray[np.float64]

SPECS = [
    Gaussian(sigma=1.0, features=[0, 1]),
    Gaussian(sigma=2.5, features=[1, 2, 3]),
    Gaussian(sigma=0.7),
    Laplacian(sigma=3.0, features=[2, 4]),
    Polynomial(degree=2, features=[0, 3]),
    Linear(),
]


@pytest.fixture(scope="module")
def points() -> tuple[FloatArray, FloatArray, FloatArray]:
    """90 training and 30 test points of 5 features, with labels in {0, 1, 2}."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(120, 5))
    y = (X[:, 0] * X[:, 1] > 0).astype(float) + (X[:, 4] > 1.0)
    return X, y, X[90:]


def _close(a: Any, b: Any, rtol: float, what: str) -> None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} and {b.shape}"
    if b.size == 0:
        return
    scale = max(1.0, float(np.abs(b).max()))
    assert np.abs(a - b).max() <= rtol * scale, f"{what}: {np.abs(a - b).max():.3e}"


@pytest.mark.parametrize("normalize", ["none", "trace", "mean_diag", "spherical"])
def test_bank_on_demand_statistics_equal_the_stored_ones(
    points: tuple[FloatArray, FloatArray, FloatArray], normalize: Any
) -> None:
    """The statistics of the on-demand kernels are those of the stored Gram stack, and the
    test kernels against some training columns are those columns of the full ones."""
    X = points[0][:90]
    stored = KernelBank(SPECS, normalize=normalize)
    G = stored.fit_transform(X)
    bank = KernelBank(SPECS, normalize=normalize)
    K = bank.fit_on_demand(X, cache_bytes=1 << 20)
    assert (K.n, K.m) == (90, len(SPECS))
    _close(bank.stats_["scales"], stored.stats_["scales"], 1e-12, "scales")
    _close(bank.stats_["diag"], stored.stats_["diag"], 1e-12, "spherical diagonal")
    cols = np.array([3, 70, 12, 45])
    T = stored.transform(points[2])
    _close(bank.transform(points[2], columns=cols), T[:, :, cols], 1e-12, "cross columns")
    assert G.shape == (len(SPECS), 90, 90)


@pytest.mark.parametrize(
    ("loss", "p", "cache_mb"),
    [
        ("hinge", 2.0, 0.02),  # a few columns: evictions, an on-demand working set
        ("hinge", 4.0 / 3.0, 8.0),  # every column cached, a packed working set
        ("squared_hinge", 2.0, 0.02),
    ],
)
def test_classifier_on_demand_equals_the_stored_stack(
    points: tuple[FloatArray, FloatArray, FloatArray], loss: Any, p: float, cache_mb: float
) -> None:
    X, y, Xt = points
    yb = (y[:90] > 0).astype(float)
    kw: dict[str, Any] = dict(kernels=SPECS, p=p, loss=loss, C=2.0, tol=1e-10)
    a = mk.MKLClassifier(**kw).fit(X[:90], yb)
    b = mk.MKLClassifier(cache_size=cache_mb, **kw).fit(X[:90], yb)
    _same_fit(b, a, Xt, 1e-8, 1e-6)


def _same_fit(b: Any, a: Any, Xt: FloatArray, rtol: float, wtol: float) -> None:
    """``b``, fitted on demand, converged to the stored fit ``a``: primal to ``rtol``, kernel
    weights and test decisions to ``wtol``."""
    assert b.converged_ is True and isinstance(b._test_stack(Xt), _data.CrossOnDemand)
    _close(b.primal_objective_, a.primal_objective_, rtol, "primal")
    _close(b.kernel_weights_, a.kernel_weights_, wtol, "kernel weights")
    _close(b.decision_function(Xt), a.decision_function(Xt), wtol, "decisions")


@pytest.mark.parametrize("penalty", [dict(penalty="lp", p=2.0), dict(penalty="l1")])
def test_on_demand_fit_is_the_cvxpy_optimum(
    points: tuple[FloatArray, FloatArray, FloatArray], penalty: dict[str, Any]
) -> None:
    """An independent reference (the analytic ℓp solver, the l1 wrapper): Clarabel on the
    stored kernels of the same bank."""
    X, y, _ = points
    yb = np.where(y[:60] > 0, 1.0, -1.0)
    G = KernelBank(SPECS, normalize="mean_diag").fit_transform(X[:60])
    ref = cvxpy_mkl(G, yb, C=1.0, loss="hinge", **penalty)
    est = mk.MKLClassifier(kernels=SPECS, C=1.0, tol=1e-9, cache_size=0.01, **penalty)
    est.fit(X[:60], yb)
    _close(est.primal_objective_, ref.objective, 1e-6, "primal against cvxpy")
    assert est.duality_gap_ <= 1e-9


@pytest.mark.parametrize(
    ("params", "tol", "rtol"),
    [
        (dict(penalty="l1", loss="hinge"), 1e-10, 1e-8),
        (dict(penalty="elasticnet", l1_ratio=0.5, loss="squared_hinge"), 1e-10, 1e-8),
        (dict(penalty="group", groups=[0, 1, 0, 1, 0, 1]), 1e-9, 1e-8),
        (dict(penalty="lp", p=1.0), 1e-9, 1e-8),
    ],
)
def test_sparse_penalties_on_demand_equal_the_stored_stack(
    points: tuple[FloatArray, FloatArray, FloatArray],
    params: Any,
    tol: float,
    rtol: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The l1 / elastic-net wrapper and group MKL (mirror; also lp at p = 1) on kernels
    computed on demand reach the stored stack's fit, by the same solver."""
    X, y, Xt = points
    yb = (y[:90] > 0).astype(float)
    kw: dict[str, Any] = dict(kernels=SPECS, C=2.0, tol=tol, **params)
    calls = solvers_called(monkeypatch)
    a = mk.MKLClassifier(**kw).fit(X[:90], yb)
    stored = list(calls)
    b = mk.MKLClassifier(cache_size=0.02, **kw).fit(X[:90], yb)
    assert calls[len(stored) :] == stored and stored[0] in ("wrapper", "mirror"), calls
    _same_fit(b, a, Xt, rtol, 1e-5)


def test_multiclass_weights_and_regression_on_demand(
    points: tuple[FloatArray, FloatArray, FloatArray],
) -> None:
    """One-vs-one subsets, sample weights with a zero (a subset view) and ε-SVR read the
    on-demand kernels as they read the stored ones."""
    X, y, Xt = points
    w = np.tile([1.0, 2.0, 0.0], 30)
    kw: dict[str, Any] = dict(kernels=SPECS, C=1.5, tol=1e-10, multi_class="ovo")
    a = mk.MKLClassifier(**kw).fit(X[:90], y[:90], sample_weight=w)
    b = mk.MKLClassifier(cache_size=0.05, **kw).fit(X[:90], y[:90], sample_weight=w)
    _close(b.primal_objective_, a.primal_objective_, 1e-8, "ovo primals")
    # The hinge's intercept may be anywhere in an interval at the optimum: 1e-5.
    _close(b.decision_function(Xt), a.decision_function(Xt), 1e-5, "ovo decisions")
    t = np.sin(X[:90, 0]) + X[:90, 1]
    rk: dict[str, Any] = dict(kernels=SPECS, loss="epsilon_insensitive", tol=1e-10)
    ra = mk.MKLRegressor(**rk).fit(X[:90], t)
    rb = mk.MKLRegressor(cache_size=0.05, **rk).fit(X[:90], t)
    _close(rb.primal_objective_, ra.primal_objective_, 1e-8, "ε-SVR primal")
    _close(rb.predict(Xt), ra.predict(Xt), 1e-6, "ε-SVR predictions")


def test_the_rule_switches_above_the_threshold(
    points: tuple[FloatArray, FloatArray, FloatArray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without cache_size, a stack above the threshold is computed on demand when the
    solver and loss allow it, and stored otherwise."""
    X, y, Xt = points
    yb = (y[:90] > 0).astype(float)
    monkeypatch.setattr(_data, "ON_DEMAND_ABOVE", 8 * len(SPECS) * 89 * 89)
    hinge = mk.MKLClassifier(kernels=SPECS).fit(X[:90], yb)
    assert isinstance(hinge._test_stack(Xt), _data.CrossOnDemand)
    logistic = mk.MKLClassifier(kernels=SPECS, loss="logistic").fit(X[:90], yb)
    assert isinstance(logistic._test_stack(Xt), _data.Dense)
    below = mk.MKLClassifier(kernels=SPECS).fit(X[:80], yb[:80])
    assert isinstance(below._test_stack(Xt), _data.Dense)
    # Kernels that need every entry fall back to the stored stack.
    centred = mk.MKLClassifier(kernels=SPECS, normalize="multiplicative").fit(X[:90], yb)
    assert isinstance(centred._test_stack(Xt), _data.Dense)


def test_the_fallback_is_decided_before_any_kernel(
    points: tuple[FloatArray, FloatArray, FloatArray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the threshold, kernels the engine cannot compute on demand (the multiplicative
    normalisation, a Python function) are stored without trying: no refusal is caught."""
    X, y, Xt = points
    yb = (y[:90] > 0).astype(float)
    monkeypatch.setattr(_data, "ON_DEMAND_ABOVE", 0)
    tried: list[int] = []
    real = KernelBank.fit_on_demand

    def spy(self: KernelBank, *args: Any, **kwargs: Any) -> Any:
        tried.append(len(self.specs))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(KernelBank, "fit_on_demand", spy)
    function = mk.kernels.Callable(lambda A, B: A @ B.T)
    changes: list[dict[str, Any]] = [
        {"normalize": "multiplicative"},
        {"kernels": [*SPECS, function]},
    ]
    for kw in changes:
        clf = mk.MKLClassifier(**{"kernels": SPECS, **kw}).fit(X[:90], yb)
        assert isinstance(clf._test_stack(Xt), _data.Dense) and tried == [], kw
    clf = mk.MKLClassifier(kernels=SPECS).fit(X[:90], yb)
    assert isinstance(clf._test_stack(Xt), _data.CrossOnDemand) and tried == [len(SPECS)]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (dict(loss="logistic"), "solvers 'analytic', 'wrapper', 'mirror'"),
        (dict(penalty="l1", loss="logistic"), "solvers 'analytic', 'wrapper', 'mirror'"),
        (dict(penalty="l1", warm_start=True), "got solver='spicy'"),
        (dict(solver="interleaved"), "got solver='interleaved'"),
        (dict(kernels="precomputed"), "kernel specifications"),
        (dict(normalize="multiplicative"), "mean of every kernel entry"),
        (dict(psd="clip"), "psd='check'"),
        (dict(probability=True), "probability=True"),
        (dict(cache_size=0.0), "cache_size must be in"),
    ],
)
def test_what_cannot_be_computed_on_demand_is_refused(
    points: tuple[FloatArray, FloatArray, FloatArray], params: dict[str, Any], message: str
) -> None:
    X, y, _ = points
    kw: dict[str, Any] = dict(kernels=SPECS, cache_size=1.0)
    kw.update(params)
    data = KernelBank(SPECS).fit_transform(X[:40]) if kw["kernels"] == "precomputed" else X[:40]
    with pytest.raises(InvalidParameterError, match=message):
        mk.MKLClassifier(**kw).fit(data, (y[:40] > 0).astype(float))


def test_python_function_kernels_are_refused(
    points: tuple[FloatArray, FloatArray, FloatArray],
) -> None:
    from multikernel.exceptions import InvalidInputError

    X = points[0][:20]
    bank = KernelBank([mk.kernels.Callable(lambda A, B: A @ B.T)], normalize="none")
    with pytest.raises(InvalidInputError, match="built-in kernel specifications"):
        bank.fit_on_demand(X, cache_bytes=1 << 20)
