"""Degenerate inputs a careful user hits (issue 18): two points, one kernel, duplicated points
with conflicting labels, rank-one and zero kernels, a class with a single member. Every solver
must fit them to its tolerance (or say it did not) at the optimum an independent cvxpy + Clarabel
solve finds, with the zero kernel left out exactly."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from reference import cvxpy_mkl, primal_objective
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk

FloatArray = NDArray[np.float64]

SOLVERS: list[dict[str, Any]] = [
    {"penalty": "lp", "p": 2.0},
    {"penalty": "lp", "p": 2.0, "solver": "interleaved"},
    {"penalty": "lp", "p": 1.0},
    {"penalty": "l1"},
    {"penalty": "elasticnet", "l1_ratio": 0.5},
    {"penalty": "group", "groups": None},
]
IDS = ["lp2", "lp2-interleaved", "lp1-mirror", "l1", "elasticnet", "group"]


def gaussian(X: FloatArray, sigma: float) -> FloatArray:
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


def case(name: str) -> tuple[FloatArray, FloatArray]:
    """A stack of two kernels (one for ``two_points``) and ±1 labels."""
    rng = np.random.default_rng(7)
    if name == "two_points":
        X = np.array([[0.0, 1.0], [1.0, -0.5]])
        return gaussian(X, 1.0)[None], np.array([1.0, -1.0])
    X = rng.standard_normal((24, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(24) > 0, 1.0, -1.0)
    if name == "conflicting":
        X[12:] = X[:12]  # every point twice, half of the copies with the other label
        y[12:] = np.where(np.arange(12) % 2 == 0, -y[:12], y[:12])
        return np.stack([gaussian(X, 1.0), X @ X.T / 3]), y
    if name == "rank_one":
        v = X[:, 1:2]
        return np.stack([gaussian(X, 2.0), v @ v.T]), y
    if name == "zero_kernel":
        return np.stack([gaussian(X, 1.5), np.zeros((24, 24))]), y
    raise AssertionError(name)


def fit(G: FloatArray, y: FloatArray, kw: dict[str, Any]) -> mk.MKLClassifier:
    if "groups" in kw:
        kw = {**kw, "groups": [0] * len(G)}  # one group: the ℓ1-within, as lp at p = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return mk.MKLClassifier(kernels="precomputed", normalize=None, tol=1e-6, **kw).fit(G, y)


@pytest.mark.parametrize("name", ["two_points", "conflicting", "rank_one", "zero_kernel"])
@pytest.mark.parametrize("kw", SOLVERS, ids=IDS)
def test_degenerate_stacks_reach_the_cvxpy_optimum(name: str, kw: dict[str, Any]) -> None:
    G, y = case(name)
    clf = fit(G, y, kw)
    assert -1e-9 <= clf.duality_gap_ <= clf.tol
    penalty = kw["penalty"]
    ref_kw: dict[str, Any] = {"p": kw.get("p"), "l1_ratio": kw.get("l1_ratio")}
    if penalty == "group":
        ref_kw["groups"] = [0] * len(G)
    ref = cvxpy_mkl(G, y, C=1.0, loss="hinge", penalty=penalty, **ref_kw)
    P = primal_objective(
        G, clf.dual_coef_, float(np.ravel(clf.intercept_)[0]), y, C=1.0, loss="hinge",
        penalty=penalty, **ref_kw,
    )  # fmt: skip
    assert P == pytest.approx(clf.primal_objective_, rel=1e-7)
    assert P == pytest.approx(ref.objective, rel=1e-5)
    w = clf.kernel_weights_
    assert np.all(w >= 0) and np.all(np.isfinite(clf.decision_function(G)))
    if name == "zero_kernel":
        # The zero kernel carries nothing: weight 0, and the fit is the fit without it.
        assert w[1] == 0.0 and np.all(clf.dual_coef_[1] == 0.0)
    if name == "two_points" and penalty == "lp":
        # One kernel, two points: the SVM dual max 2α − ½α²q over 0 ≤ α ≤ C, with
        # q = K₁₁ + K₂₂ − 2K₁₂, in closed form (every lp penalty is ½‖f‖² on one kernel).
        K = G[0]
        q = K[0, 0] + K[1, 1] - 2 * K[0, 1]
        a = min(1.0, 2.0 / q)
        assert clf.primal_objective_ == pytest.approx(2 * a - 0.5 * a * a * q, rel=1e-6)


def test_a_class_with_a_single_member_in_multiclass() -> None:
    """One-vs-rest and one-vs-one with a class of one point: every binary problem is well
    posed, each sub-fit is certified, and the single member is predicted as its class (at a
    large C the model interpolates the training points)."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-2, 0.5, (15, 2)), rng.normal(2, 0.5, (15, 2)), [[0.0, 4.0]]])
    y = np.array([0] * 15 + [1] * 15 + [2])
    for strategy in ("ovr", "ovo"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            clf = mk.MKLClassifier(
                kernels=[mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear()],
                C=1e3, tol=1e-6, multi_class=strategy,
            ).fit(X, y)  # fmt: skip
        assert clf.predict(X[-1:])[0] == 2
        assert np.all(np.asarray(clf.duality_gap_) <= 1e-6)


@pytest.mark.parametrize("penalty", ["lp", "l1", "elasticnet", "group"])
def test_kernels_that_overflow_are_refused_by_every_penalty(penalty: str) -> None:
    """A polynomial kernel of points scaled by 1e150 overflows: every penalty refuses it
    naming the kernel (SpicyMKL used to fit it and predict NaN), and so do cross kernels."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), np.arange(20) % 2
    specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear(), mk.kernels.Polynomial(degree=2)]
    groups = [0, 0, 1] if penalty == "group" else None
    with pytest.raises(mk.exceptions.NonFiniteError, match="kernel 2.*overflow") as err:
        mk.MKLClassifier(kernels=specs, penalty=penalty, groups=groups).fit(X * 1e150, y)
    assert err.value.kernel == 2
    clf = mk.MKLClassifier(kernels=specs, penalty=penalty, groups=groups).fit(X, y)
    with pytest.raises(mk.exceptions.NonFiniteError, match="kernel 2"):
        clf.decision_function(X * 1e200)  # (1e200 x·x')² overflows


def test_a_dual_value_above_a_later_primal_value_is_not_a_certificate() -> None:
    """ε-insensitive SpicyMKL at C = 1e200 recorded a dual value below an early primal value
    but far above the final one, and reported a relative gap of −41 as converged. Weak duality
    (P ≥ D) must hold for what is reported, and a fit that cannot certify says so."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=20)
    specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear(), mk.kernels.Polynomial(degree=2)]
    reg = mk.MKLRegressor(kernels=specs, penalty="l1", loss="epsilon_insensitive", C=1e200)
    with pytest.warns(ConvergenceWarning):
        reg.fit(X, y)
    assert reg.dual_objective_ <= reg.primal_objective_
    assert reg.duality_gap_ >= 0.0 and not reg.converged_


def test_path_points_beyond_float64_are_flagged() -> None:
    """With C_max = 1e300 the last points of a path cannot be certified (P ~ 1e289 against
    D ~ 3.5): the path warns, naming the first such C, instead of ending 'complete' silently."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(15, 3))
    y = X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=15)
    specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear(), mk.kernels.Polynomial(degree=2)]
    with pytest.warns(ConvergenceWarning, match="not certified within tol") as rec:
        path = mk.mkl_path(X, y, kernels=specs, C_max=1e300)
    over = path.duality_gaps > path.tol
    assert over.any() and not over[: np.argmax(over)].any()
    assert f"{path.Cs[np.argmax(over)]:.4g}" in str(rec[0].message)
    # The certified points: every gap recomputed from the recorded objectives.
    rel = (path.primal_objectives - path.dual_objectives) / np.abs(path.primal_objectives)
    np.testing.assert_allclose(rel, path.duality_gaps, rtol=1e-9)


@pytest.mark.parametrize(
    "which",
    [
        pytest.param("p1", marks=pytest.mark.slow),
        pytest.param("pinf", marks=pytest.mark.slow),
        "p2",
        pytest.param("epsilon_insensitive", marks=pytest.mark.slow),
    ],
)
def test_kernels_1e300_apart_end_honestly(which: str) -> None:
    """Kernels scaled by 1e-150 and 1e150 (normalize=None): a conditioning no SMO solve
    resolves. Each fit must end with an honest certificate (P ≥ D, a ConvergenceWarning unless
    within tol) and finite predictions. Their inner solves run to libsvm's 10⁷ steps: 2 s
    (p = 2), 26 s (p = ∞), 33 s (ε-insensitive) and 125 s (p = 1) on 10 points, measured, hence
    the slow marks."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(10, 3))
    specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear(), mk.kernels.Polynomial(degree=2)]
    G = mk.kernels.gram(X, specs, normalize="mean_diag")
    G[0] *= 1e-150
    G[1] *= 1e150
    est: Any = (
        mk.MKLRegressor(kernels="precomputed", loss="epsilon_insensitive")
        if which == "epsilon_insensitive"
        else mk.MKLClassifier(
            kernels="precomputed", p={"p1": 1.0, "pinf": np.inf, "p2": 2.0}[which]
        )
    )
    target = X[:, 0] - 0.5 * X[:, 1] ** 2 if which == "epsilon_insensitive" else np.arange(10) % 2
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est.fit(G, target)
    assert est.dual_objective_ <= est.primal_objective_ * (1 + 1e-9)
    if est.duality_gap_ > est.tol:
        assert any(issubclass(w.category, ConvergenceWarning) for w in rec)
    scores = est.predict(G) if which == "epsilon_insensitive" else est.decision_function(G)
    assert np.isfinite(scores).all()
