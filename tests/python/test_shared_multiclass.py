"""``multi_class="shared"``: one θ for all classes (docs/mathematics.md §3.8), against cvxpy."""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import pytest
from numpy.typing import NDArray
from reference import cvxpy_shared_mkl
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel._typing import LossName
from multikernel.exceptions import InvalidParameterError

TOL = 1e-7


@cache
def problem() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Three classes, n = 40, M = 4 kernels (three Gaussians and a linear one), unit mean
    diagonal."""
    rng = np.random.default_rng(0)
    n = 40
    X = rng.normal(size=(n, 4))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(n, 3)), axis=1)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    G = np.stack([np.exp(-sq / (2 * s * s)) for s in (0.5, 1.0, 2.0)] + [X @ X.T])
    G = G / (np.trace(G, axis1=1, axis2=2) / n)[:, None, None]
    return G, y


@cache
def reference_optimum(loss: str, p: float) -> float:
    G, y = problem()
    return cvxpy_shared_mkl(G, y, C=1.0, loss=loss, p=p).objective


def fit(loss: LossName, p: float, **kw: object) -> mk.MKLClassifier:
    G, y = problem()
    settings: dict[str, object] = {"tol": TOL, "max_iter": 500, **kw}
    clf = mk.MKLClassifier(
        kernels="precomputed",
        multi_class="shared",
        loss=loss,
        p=p,
        **settings,  # type: ignore[arg-type]
    )
    return clf.fit(G, y)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("p", [2.0, 4.0 / 3.0])
def test_primal_equals_cvxpy_and_the_certificate_is_honest(loss: LossName, p: float) -> None:
    clf = fit(loss, p)
    ref = reference_optimum(loss, p)
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert clf.converged_ is True
    assert float(clf.duality_gap_) <= TOL
    assert abs(primal - ref) <= 1e-5 * abs(ref)
    # Weak duality on both sides of an independent optimum (Clarabel's own accuracy ~1e-9).
    slack = 1e-8 * abs(ref)
    assert dual <= ref + slack
    assert ref <= primal + slack


def test_the_reported_model_has_the_reported_primal() -> None:
    """``P`` recomputed from ``dual_coef_``, ``intercept_`` and the block norms over the
    classes (docs/mathematics.md §3.8), as the reference defines it."""
    G, y = problem()
    clf = fit("hinge", 2.0)
    A, b = clf.dual_coef_, np.asarray(clf.intercept_)
    assert A.shape == (3, 4, 40) and b.shape == (3,) and clf.kernel_weights_.shape == (4,)
    F = np.einsum("mij,kmj->ik", G, A) + b
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    data = float(np.maximum(0.0, 1.0 - Y * F).sum())
    s = np.sqrt(np.einsum("kmi,mij,kmj->m", A, G, A))
    penalty = 0.5 * float(np.sum(s ** (4.0 / 3.0))) ** 1.5  # q = 2p/(p+1) = 4/3 at p = 2
    assert data + penalty == pytest.approx(clf.primal_objective_, rel=1e-10)
    np.testing.assert_allclose(clf.kernel_norms_, s, rtol=1e-8)
    np.testing.assert_allclose(clf.decision_function(G), F, rtol=1e-10, atol=1e-12)
    # One θ of unit 2-norm, the same for every class: A[c, m] = θ_m β_c.
    assert np.linalg.norm(clf.kernel_weights_) == pytest.approx(1.0)
    assert len(clf.history_) == clf.n_iter_


def test_two_classes_are_the_binary_fit() -> None:
    G, y = problem()
    two = y < 2
    G2 = np.ascontiguousarray(G[:, two][:, :, two])
    kw = {"kernels": "precomputed", "tol": 1e-6}
    shared = mk.MKLClassifier(multi_class="shared", **kw).fit(G2, y[two])  # type: ignore[arg-type]
    binary = mk.MKLClassifier(**kw).fit(G2, y[two])  # type: ignore[arg-type]
    assert shared.primal_objective_ == binary.primal_objective_
    np.testing.assert_array_equal(shared.dual_coef_, binary.dual_coef_)
    np.testing.assert_array_equal(shared.kernel_weights_, binary.kernel_weights_)


def test_one_theta_where_one_vs_rest_learns_three() -> None:
    """Each class is told apart by its own feature, seen by its own kernel: one-vs-rest puts
    each problem's weight on its kernel, the shared θ spreads over the three."""
    rng = np.random.default_rng(1)
    n = 60
    y = np.repeat(np.arange(3), n // 3)
    X = rng.normal(size=(n, 3))
    X[np.arange(n), y] += 3.0
    G = np.stack([np.outer(X[:, j], X[:, j]) for j in range(3)])
    G = G / (np.trace(G, axis1=1, axis2=2) / n)[:, None, None]
    kw = {"kernels": "precomputed", "p": 1.5, "tol": 1e-6}
    ovr = mk.MKLClassifier(**kw).fit(G, y)  # type: ignore[arg-type]
    shared = mk.MKLClassifier(multi_class="shared", **kw).fit(G, y)  # type: ignore[arg-type]
    assert ovr.kernel_weights_.shape == (3, 3) and shared.kernel_weights_.shape == (3,)
    # One-vs-rest: class k's problem weighs kernel k most.
    np.testing.assert_array_equal(np.argmax(ovr.kernel_weights_, axis=1), [0, 1, 2])
    for k in range(3):
        assert np.abs(shared.kernel_weights_ - ovr.kernel_weights_[k]).max() > 0.1
    # The shared θ is the same for every class's coefficients: A[c, m] = θ_m β_c.
    A = shared.dual_coef_
    beta = A[:, 0] / shared.kernel_weights_[0]
    np.testing.assert_allclose(A, shared.kernel_weights_[None, :, None] * beta[:, None, :])
    assert shared.score(G, y) > 0.9


def test_kernel_specifications_and_p_infinity() -> None:
    """Computed kernels work; at p = inf θ ≡ 1 and one solve per class is exact."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(45, 3))
    y = np.repeat(["a", "b", "c"], 15)
    X[y == "b", 0] += 2.0
    X[y == "c", 1] += 2.0
    specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear()]
    clf = mk.MKLClassifier(kernels=specs, multi_class="shared", p=np.inf, tol=1e-6).fit(X, y)
    assert clf.converged_ and clf.duality_gap_ <= 1e-6
    np.testing.assert_array_equal(clf.kernel_weights_, [1.0, 1.0])
    assert set(clf.predict(X)) <= {"a", "b", "c"} and clf.score(X, y) > 0.8


def test_max_iter_warns() -> None:
    with pytest.warns(ConvergenceWarning, match="shared"):
        clf = fit("hinge", 4.0 / 3.0, max_iter=2)
    assert clf.converged_ is False and clf.n_iter_ == 2


@pytest.mark.parametrize(
    ("kw", "fit_kw", "parameter"),
    [
        ({"penalty": "l1"}, {}, "penalty"),
        ({"penalty": "group", "groups": [0, 0, 1, 1]}, {}, "penalty"),
        ({"solver": "interleaved"}, {}, "solver"),
        ({"class_weight": "balanced"}, {}, "sample_weight"),
        ({}, {"sample_weight": np.ones(40)}, "sample_weight"),
        ({"probability": True}, {}, "probability"),
    ],
)
def test_refusals(kw: dict[str, object], fit_kw: dict[str, object], parameter: str) -> None:
    G, y = problem()
    clf = mk.MKLClassifier(kernels="precomputed", multi_class="shared", **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="multi_class='shared'") as e:
        clf.fit(G, y, **fit_kw)  # type: ignore[arg-type]
    assert e.value.parameter == parameter


def test_refusals_of_inputs() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    y = np.repeat(np.arange(3), 10)
    bank = mk.kernels.FeatureBank([mk.kernels.Linear()])
    with pytest.raises(InvalidParameterError, match="FeatureBank"):
        mk.MKLClassifier(kernels=bank, multi_class="shared").fit(X, y)
    specs = [mk.kernels.Linear()]
    with pytest.raises(InvalidParameterError, match="cache_size"):
        mk.MKLClassifier(kernels=specs, multi_class="shared", cache_size=10.0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="feature blocks"):
        mk.MKLClassifier(kernels="precomputed", multi_class="shared").fit([X], y)
    with pytest.raises(InvalidParameterError, match="'ovr', 'ovo' or 'shared'"):
        mk.MKLClassifier(multi_class="crammer").fit(X, y)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mk.MKLClassifier(kernels=specs, multi_class="shared").fit(X, y)
