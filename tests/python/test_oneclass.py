"""One-class ℓp-MKL (``MKLOneClass``): with one kernel (or p = ∞ on the sum kernel) it is
scikit-learn's ``OneClassSVM``; its objective meets cvxpy + Clarabel's; its certificate is
recomputed from ``dual_coef_``; ν bounds the outlier and support-vector fractions; bad use is
refused; it passes scikit-learn's estimator checks."""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import expected_failures
from reference import block_norms, cvxpy_mkl, load_dataset, penalty_value
from sklearn.svm import OneClassSVM
from sklearn.utils.estimator_checks import parametrize_with_checks

import multikernel as mk
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, Linear, Polynomial

FloatArray = NDArray[np.float64]


@cache
def ionosphere(n: int = 60) -> tuple[FloatArray, FloatArray]:
    """Standardised ionosphere points and a 4-kernel stack of them (unit mean diagonal)."""
    X, _ = load_dataset("ionosphere", n=n)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    specs = [Gaussian(sigma=3.0), Gaussian(sigma=8.0), Linear(features=[0, 1, 2]),
             Polynomial(degree=2, features=[3, 4])]  # fmt: skip
    return X, mk.kernels.gram(X, specs, normalize="mean_diag")


def primal(det: mk.MKLOneClass, G: FloatArray) -> float:
    """``½ ‖(‖f_m‖)‖_q² + Σ max(0, ρ − f_i) − νnρ`` from the fitted attributes."""
    A = det.dual_coef_
    f = np.einsum("mij,mj->i", G, A)
    rho, n = det.offset_, G.shape[1]
    norms = block_norms(G, A)
    omega = penalty_value(norms, "lp", p=det.p)
    return float(omega + np.maximum(0.0, rho - f).sum() - det.nu * n * rho)


@pytest.mark.parametrize("nu", [0.1, 0.5])
def test_one_kernel_is_scikit_learns_one_class_svm(nu: float) -> None:
    _, G = ionosphere()
    K = G[:1]
    sk = OneClassSVM(kernel="precomputed", nu=nu, tol=1e-12).fit(K[0])
    for p in (1.0, 2.0):
        det = mk.MKLOneClass(kernels="precomputed", nu=nu, p=p, tol=1e-9).fit(K)
        np.testing.assert_allclose(det.decision_function(K), sk.decision_function(K[0]),
                                   atol=1e-6)  # fmt: skip
        np.testing.assert_allclose(det.score_samples(K), sk.score_samples(K[0]), atol=1e-6)
        assert det.offset_ == pytest.approx(float(sk.offset_[0]), abs=1e-6)
        # Off the boundary (where the free support vectors sit at decision ±rounding; libsvm
        # calls 0 an outlier, scikit-learn's convention and ours an inlier):
        clear = np.abs(sk.decision_function(K[0])) > 1e-5
        np.testing.assert_array_equal(det.predict(K)[clear], sk.predict(K[0])[clear])


@pytest.mark.parametrize("nu", [0.2, 0.5])
def test_sample_weight_is_scikit_learns_and_duplicated_rows(nu: float) -> None:
    """With one kernel, weights give ``OneClassSVM``'s weighted fit; with four, integer
    weights give the fit of duplicated rows; weight 0 drops a sample."""
    _, G = ionosphere()
    n = G.shape[1]
    w = np.tile([1.0, 2.0, 3.0], n // 3)
    sk = OneClassSVM(kernel="precomputed", nu=nu, tol=1e-12).fit(G[0], sample_weight=w)
    one = mk.MKLOneClass(kernels="precomputed", nu=nu, tol=1e-9).fit(G[:1], sample_weight=w)
    np.testing.assert_allclose(one.decision_function(G[:1]), sk.decision_function(G[0]),
                               atol=1e-6)  # fmt: skip
    rows = np.repeat(np.arange(n), w.astype(int))
    dup = mk.MKLOneClass(kernels="precomputed", nu=nu, tol=1e-10).fit(G[:, rows][:, :, rows])
    wtd = mk.MKLOneClass(kernels="precomputed", nu=nu, tol=1e-10).fit(G, sample_weight=w)
    assert wtd.primal_objective_ == pytest.approx(dup.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(wtd.kernel_weights_, dup.kernel_weights_, atol=1e-6)
    np.testing.assert_allclose(wtd.decision_function(G), dup.decision_function(G[:, :, rows]),
                               atol=1e-6)  # fmt: skip
    zero = w.copy()
    zero[::5] = 0.0
    keep = zero > 0
    a = mk.MKLOneClass(kernels="precomputed", nu=nu, tol=1e-10).fit(G, sample_weight=zero)
    b = mk.MKLOneClass(kernels="precomputed", nu=nu, tol=1e-10)
    b.fit(G[:, keep][:, :, keep], sample_weight=zero[keep])
    assert np.all(a.dual_coef_[:, ~keep] == 0.0)
    np.testing.assert_allclose(a.dual_coef_[:, keep], b.dual_coef_, atol=1e-8)


def test_p_infinity_is_the_one_class_svm_on_the_sum_kernel() -> None:
    _, G = ionosphere()
    det = mk.MKLOneClass(kernels="precomputed", nu=0.2, p=np.inf, tol=1e-9).fit(G)
    sk = OneClassSVM(kernel="precomputed", nu=0.2, tol=1e-12).fit(G.sum(0))
    np.testing.assert_allclose(det.kernel_weights_, 1.0)
    np.testing.assert_allclose(det.decision_function(G), sk.decision_function(G.sum(0)),
                               atol=1e-6)  # fmt: skip


@pytest.mark.parametrize("p", [1.0, 4.0 / 3.0, 2.0, 4.0])
def test_objective_meets_cvxpy_and_the_certificate_holds(p: float) -> None:
    _, G = ionosphere(40)
    nu = 0.3
    det = mk.MKLOneClass(kernels="precomputed", nu=nu, p=p, tol=1e-7, max_iter=2000).fit(G)
    ref = cvxpy_mkl(G, np.ones(40), C=1.0, loss="one_class", penalty="lp", p=p, nu=nu)
    P, D = det.primal_objective_, det.dual_objective_
    # Negative objectives: P ≥ optimum ≥ D, the gap relative to |P|.
    assert D <= ref.objective + 1e-7 * abs(ref.objective)
    assert ref.objective <= P + 1e-7 * abs(ref.objective)
    assert abs(P - ref.objective) <= (det.duality_gap_ + 1e-7) * abs(P)
    assert det.duality_gap_ <= 1e-7
    # The engine's primal, recomputed from dual_coef_, offset_ and the stack.
    assert primal(det, G) == pytest.approx(P, rel=1e-9)
    np.testing.assert_allclose(det.kernel_norms_, block_norms(G, det.dual_coef_), rtol=1e-9)
    theta = det.kernel_weights_
    if np.isfinite(p):
        assert np.linalg.norm(theta, ord=p) == pytest.approx(1.0, rel=1e-12)


def test_nu_bounds_the_outliers_and_the_support_vectors() -> None:
    X, _ = ionosphere(120)
    for nu in (0.05, 0.2, 0.5):
        det = mk.MKLOneClass(nu=nu, tol=1e-6).fit(X)
        n = X.shape[0]
        assert np.mean(det.decision_function(X) < -1e-8) <= nu + 1e-12
        support = np.any(np.abs(det.dual_coef_) > 1e-12, axis=0)
        assert support.mean() >= nu - 1e-12
        # libsvm's α: Σ α = νn, so the θ-weighted coefficients sum to Σ θ_m · νn.
        assert det.dual_coef_.sum() == pytest.approx(det.kernel_weights_.sum() * nu * n)


def test_feature_bank_equals_its_dense_stack() -> None:
    X, _ = ionosphere(80)
    bank = FeatureBank([Gaussian(sigma=4.0), Linear(features=[0, 1])], n_components=30)
    low = mk.MKLOneClass(kernels=bank, nu=0.2, tol=1e-8).fit(X)
    F = bank.fit_transform(X)
    G = np.stack([B @ B.T for B in F])
    dense = mk.MKLOneClass(kernels="precomputed", nu=0.2, tol=1e-8).fit(G)
    assert low.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-6)
    np.testing.assert_allclose(low.decision_function(X), dense.decision_function(G), atol=1e-5)


def test_bad_use_is_refused() -> None:
    X, _ = ionosphere()
    with pytest.raises(InvalidParameterError, match="penalty"):
        mk.MKLOneClass(penalty="l1").fit(X)  # type: ignore[arg-type]
    for nu in (0.0, 1.5, float("nan")):
        with pytest.raises(InvalidParameterError, match="nu"):
            mk.MKLOneClass(nu=nu).fit(X)
    with pytest.raises(InvalidParameterError, match="p"):
        mk.MKLOneClass(p=0.5).fit(X)
    with pytest.raises(ValueError, match="n_samples = 1"):
        mk.MKLOneClass().fit(X[:1])
    # y is ignored, as by OneClassSVM.
    a = mk.MKLOneClass(nu=0.3).fit(X)
    b = mk.MKLOneClass(nu=0.3).fit(X, np.arange(len(X)))
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_a_fit_short_of_tol_warns() -> None:
    _, G = ionosphere()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        det = mk.MKLOneClass(kernels="precomputed", p=1.0, tol=1e-12, max_iter=2).fit(G)
    assert not det.converged_
    assert any("did not reach tol" in str(w.message) for w in caught)


@parametrize_with_checks(  # type: ignore[untyped-decorator]
    [mk.MKLOneClass(), mk.MKLOneClass(p=1.5, nu=0.2)], expected_failed_checks=expected_failures
)
def test_scikit_learn_estimator_checks(estimator: mk.MKLOneClass, check: object) -> None:
    check(estimator)  # type: ignore[operator]
