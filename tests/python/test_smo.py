"""The SMO engine against scikit-learn's libsvm on the same precomputed kernels: the same dual
objective (relative 1e-6) for C-SVC, ε-SVR and the one-class SVM."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from reference import load_dataset
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC, SVR, OneClassSVM

from multikernel import _core


@pytest.fixture(scope="module", params=["ionosphere", "sonar", "pima"])
def problem(request: pytest.FixtureRequest) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    X, y = load_dataset(request.param, n=150, seed=1)
    K = rbf_kernel(X, gamma=0.5 / X.shape[1])
    return np.ascontiguousarray(K), y


def _svc_objective(K: NDArray[np.float64], beta: NDArray[np.float64]) -> float:
    # libsvm's ½αᵀQα − 1ᵀα with α = |β| (β = y∘α).
    return float(0.5 * beta @ K @ beta - np.abs(beta).sum())


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_svc_objective_matches_sklearn(
    problem: tuple[NDArray[np.float64], NDArray[np.float64]], C: float
) -> None:
    K, y = problem
    ours = _core.svm(K, y, kind="svc", C=C, tol=1e-9)
    ref = SVC(kernel="precomputed", C=C, tol=1e-9).fit(K, y)
    beta = np.zeros(len(y))
    beta[ref.support_] = ref.dual_coef_[0]
    # scikit-learn orders classes (-1, +1): its dual_coef_ is y∘α up to the class order.
    if ref.classes_[0] == 1:
        beta = -beta
    ref_obj = _svc_objective(K, beta)
    assert ours["objective"] == pytest.approx(ref_obj, rel=1e-6)
    assert _svc_objective(K, ours["coef"]) == pytest.approx(ours["objective"], rel=1e-9)
    f_ours = K @ ours["coef"] + ours["intercept"]
    f_ref = ref.decision_function(K) * (1 if ref.classes_[1] == 1 else -1)
    np.testing.assert_allclose(f_ours, f_ref, atol=1e-4)
    # Feasibility: 0 ≤ α ≤ C, yᵀα = 0.
    alpha = ours["alpha"]
    assert alpha.min() >= 0 and alpha.max() <= C * (1 + 1e-12)
    assert abs(float(y @ alpha)) <= 1e-9 * max(1.0, alpha.sum())


@pytest.mark.parametrize("shrinking", [True, False])
def test_svr_objective_matches_sklearn(
    problem: tuple[NDArray[np.float64], NDArray[np.float64]], shrinking: bool
) -> None:
    K, y = problem
    t = y + 0.3 * np.sin(np.arange(len(y)))
    ours = _core.svm(K, t, kind="svr", C=2.0, epsilon=0.2, tol=1e-9, shrinking=shrinking)
    ref = SVR(kernel="precomputed", C=2.0, epsilon=0.2, tol=1e-9).fit(K, t)
    beta = np.zeros(len(t))
    beta[ref.support_] = ref.dual_coef_[0]
    ref_obj = 0.5 * beta @ K @ beta + 0.2 * np.abs(beta).sum() - t @ beta
    assert ours["objective"] == pytest.approx(ref_obj, rel=1e-6)
    np.testing.assert_allclose(K @ ours["coef"] + ours["intercept"], ref.predict(K), atol=1e-4)


@pytest.mark.parametrize("nu", [0.1, 0.5])
def test_one_class_objective_matches_sklearn(
    problem: tuple[NDArray[np.float64], NDArray[np.float64]], nu: float
) -> None:
    K, _ = problem
    ours = _core.svm(K, np.ones(len(K)), kind="one_class", nu=nu, tol=1e-9)
    ref = OneClassSVM(kernel="precomputed", nu=nu, tol=1e-9).fit(K)
    a = np.zeros(len(K))
    a[ref.support_] = ref.dual_coef_[0]
    ref_obj = 0.5 * a @ K @ a
    assert ours["objective"] == pytest.approx(ref_obj, rel=1e-6)
    np.testing.assert_allclose(
        K @ ours["coef"] + ours["intercept"], ref.decision_function(K), atol=1e-4
    )


def test_squared_hinge_dual_is_the_primal_optimum(
    problem: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> None:
    # Strong duality for the L2-SVM: C Σ ½max(0, 1 − y f)² + ½βᵀKβ = −objective at optimum.
    K, y = problem
    C = 0.7
    ours = _core.svm(K, y, kind="l2svm", C=C, tol=1e-10)
    beta = ours["coef"]
    f = K @ beta + ours["intercept"]
    primal = C * 0.5 * np.sum(np.maximum(0.0, 1 - y * f) ** 2) + 0.5 * beta @ K @ beta
    assert primal == pytest.approx(-ours["objective"], rel=1e-6)


def test_bad_svm_input() -> None:
    K = np.eye(3)
    with pytest.raises(ValueError, match="both classes"):
        _core.svm(K, np.ones(3), kind="svc")
    with pytest.raises(ValueError, match="unknown SVM"):
        _core.svm(K, np.array([1.0, -1.0, 1.0]), kind="nusvc")
    with pytest.raises(ValueError, match="C"):
        _core.svm(K, np.array([1.0, -1.0, 1.0]), kind="svc", C=-1.0)
