"""Linear kernel specifications fitted in feature space (issue 53): under ``solver="auto"``,
``kernels=[Linear(features=g), …]`` whose feature blocks the rule gives a feature solver are
fitted on the blocks ``sqrt(s_m) X[:, g]`` (``s_m`` the normalisation's scale on the training
points, weighted as the stored stack's), as the same kernels given as a FeatureBank are; the
model is the kernel path's, its predictions too. Other specifications keep their kernels."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import solvers_called

import multikernel as mk
from multikernel import _data
from multikernel.kernels import FeatureBank, Gaussian, KernelBank, Linear

FloatArray = NDArray[np.float64]

GROUPS = [[0, 1, 2], [3, 4], [5], [6, 7, 8, 9], [10, 11]]
SPECS = [Linear(features=g) for g in GROUPS]


def _points(n: int = 160, d: int = 12, seed: int = 0) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``n`` training and 40 test points, and a regression target whose sign is the label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 40, d)) * rng.uniform(0.5, 3.0, size=d)
    w = np.zeros(d)
    w[[0, 3, 6, 7]] = [1.0, -2.0, 0.5, 1.5]
    t = X @ w + 0.5 * rng.normal(size=n + 40)
    return X[:n], t[:n], X[n:]


def _close(a: Any, b: Any, rtol: float) -> None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(1.0, float(np.abs(b).max()))
    assert np.abs(a - b).max() <= rtol * scale, float(np.abs(a - b).max())


@pytest.mark.parametrize("normalize", ["mean_diag", "trace", "none"])
@pytest.mark.parametrize(("penalty", "kernel_solver"), [("l1", "spicy"), ("lp", "analytic")])
def test_auto_fits_linear_specs_in_feature_space_as_the_kernel_path(
    monkeypatch: pytest.MonkeyPatch, normalize: Any, penalty: str, kernel_solver: str
) -> None:
    """The same optimum, kernel weights and predictions as a kernel solver on the stored
    stack, with the statistics of the weighted points."""
    X, t, Xt = _points()
    y = np.where(t > 0, 1, -1)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    calls = solvers_called(monkeypatch)
    kw: dict[str, Any] = dict(
        kernels=SPECS, penalty=penalty, loss="logistic", normalize=normalize, tol=1e-9,
        max_iter=1000,
    )  # fmt: skip
    auto = mk.MKLClassifier(**kw).fit(X, y, sample_weight=w)
    assert calls == ["prox_newton"]
    assert isinstance(auto._test_stack(Xt), _data.Blocks)
    kernel = mk.MKLClassifier(solver=kernel_solver, **kw).fit(X, y, sample_weight=w)  # type: ignore[arg-type]
    assert calls[1:] == [kernel_solver]
    assert isinstance(kernel._test_stack(Xt), _data.Dense)
    banks = auto.kernel_bank_, kernel.kernel_bank_
    assert isinstance(banks[0], KernelBank) and isinstance(banks[1], KernelBank)
    np.testing.assert_allclose(banks[0].stats_["scales"], banks[1].stats_["scales"], rtol=1e-12)
    _close(auto.primal_objective_, kernel.primal_objective_, 1e-6)
    _close(auto.kernel_weights_, kernel.kernel_weights_, 1e-4)
    _close(auto.decision_function(Xt), kernel.decision_function(Xt), 1e-4)
    assert np.array_equal(auto.predict(X), kernel.predict(X))


@pytest.mark.parametrize("normalize", ["mean_diag", "trace", "none"])
def test_linear_specs_fit_as_their_feature_bank(normalize: Any) -> None:
    """The specifications and the FeatureBank of the same kernels give one fit."""
    X, t, Xt = _points()
    kw: dict[str, Any] = dict(penalty="l1", normalize=normalize, tol=1e-8)
    specs = mk.MKLRegressor(kernels=SPECS, **kw).fit(X, t)
    bank = mk.MKLRegressor(kernels=FeatureBank(SPECS, normalize=normalize), **kw).fit(X, t)
    _close(specs.primal_objective_, bank.primal_objective_, 1e-10)
    for a, b in zip(specs.coef_, bank.coef_, strict=True):
        _close(a, b, 1e-7)
    _close(specs.predict(Xt), bank.predict(Xt), 1e-8)
    # The fitted model pickles and predicts from its feature weights.
    again = pickle.loads(pickle.dumps(specs))
    np.testing.assert_array_equal(again.predict(Xt), specs.predict(Xt))


def test_linear_on_all_features_and_multiclass(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Linear()`` reads every column (d = 12 < n/2); a one-vs-one fit of three classes
    with samples of weight 0 predicts as the kernel path's."""
    X, t, Xt = _points()
    calls = solvers_called(monkeypatch)
    reg = mk.MKLRegressor(kernels=[Linear()], tol=1e-10).fit(X, t)
    assert calls == ["prox_newton"] and [c.shape for c in reg.coef_] == [(12,)]
    ref = mk.MKLRegressor(kernels=[Linear()], solver="analytic", tol=1e-10).fit(X, t)
    _close(reg.predict(Xt), ref.predict(Xt), 1e-6)
    labels = np.digitize(t, np.quantile(t, [1 / 3, 2 / 3]))
    w = np.where(np.arange(len(t)) % 7 == 0, 0.0, 1.0)
    kw: dict[str, Any] = dict(kernels=SPECS, penalty="l1", loss="logistic", tol=1e-9)
    ovo = mk.MKLClassifier(multi_class="ovo", **kw).fit(X, labels, sample_weight=w)
    assert set(calls[2:]) == {"prox_newton"}
    kernel = mk.MKLClassifier(multi_class="ovo", solver="spicy", **kw).fit(
        X, labels, sample_weight=w
    )
    _close(ovo.decision_function(Xt), kernel.decision_function(Xt), 1e-4)


@pytest.mark.parametrize(
    "change",
    [
        {"normalize": "spherical"},  # each point scaled: no linear map of X
        {"normalize": "multiplicative"},  # reads every entry
        {"kernels": [*SPECS, Gaussian(sigma=2.0)]},  # not all linear
        {"solver": "wrapper"},  # named: runs as named
        {"n": 20},  # total width 12 > n / 2: the rule keeps the wrapper
    ],
)
def test_other_specifications_keep_their_kernels(
    monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    X, t, Xt = _points(n=change.pop("n", 160))
    calls = solvers_called(monkeypatch)
    kw: dict[str, Any] = dict(kernels=SPECS, penalty="l1", loss="logistic") | change
    clf = mk.MKLClassifier(**kw).fit(X, np.where(t > 0, 1, -1))
    assert "prox_newton" not in calls
    assert isinstance(clf._test_stack(Xt), _data.Dense) and not hasattr(clf, "coef_")


def test_cache_size_keeps_the_kernels_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    """``cache_size=`` asks for kernels computed on demand, and gets them."""
    X, t, Xt = _points()
    clf = mk.MKLClassifier(kernels=SPECS, penalty="l1", cache_size=1.0)
    clf.fit(X, np.where(t > 0, 1, -1))
    assert isinstance(clf._test_stack(Xt), _data.CrossOnDemand)
