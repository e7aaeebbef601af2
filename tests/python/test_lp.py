"""ℓp-norm MKL against independent references: cvxpy + Clarabel on small real problems, the
SVC on the sum kernel for p = ∞, and the identity between Kloft's two algorithms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import fit_lp, small_problem
from reference import (
    cvxpy_mkl,
    dual_objective_lp,
    primal_objective,
    svc_sum_kernel_objective,
)

import multikernel as mk
from multikernel import _core

PS = [1.0, 4.0 / 3.0, 2.0, 4.0, math.inf]
LOSSES = ["hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive"]
DATASETS = ["pima", "ionosphere", "sonar"]


def problem(dataset: str, regression: bool) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """n = 90 points of a real data set, M = 10 kernels (see ``problems.small_problem``)."""
    return small_problem(dataset, regression, n=90, seed=2)


def fit(
    G: NDArray[np.float64], y: NDArray[np.float64], *, p: float, loss: str, C: float = 1.0,
    algorithm: str = "analytic", tol: float = 1e-7,
) -> _core.FitResult:  # fmt: skip
    return fit_lp(
        G, y, p=p, C=C, loss=loss, epsilon=0.1, algorithm=algorithm, tol=tol,
        max_iter=5000, inner_tol=1e-9, n_threads=0,
    )  # fmt: skip


CASES = [
    (p, loss, DATASETS[(i + j) % 3]) for i, p in enumerate(PS) for j, loss in enumerate(LOSSES)
]


@pytest.mark.parametrize(("p", "loss", "dataset"), CASES)
def test_objective_matches_cvxpy(p: float, loss: str, dataset: str) -> None:
    regression = loss in ("squared", "epsilon_insensitive")
    G, y = problem(dataset, regression)
    C = 1.0
    ref = cvxpy_mkl(G, y, C=C, loss=loss, penalty="lp", p=p)
    r = fit(G, y, p=p, loss=loss, C=C)
    assert r.converged, r.status
    A = np.asarray(r.coef)
    b = float(r.intercept)
    # The primal recomputed independently from the per-kernel coefficients.
    P = primal_objective(G, A, b, y, C=C, loss=loss, penalty="lp", p=p)
    assert P == pytest.approx(r.primal, rel=1e-9)
    assert P == pytest.approx(ref.objective, rel=1e-4)
    assert P >= ref.objective * (1 - 1e-6)
    # The certificate: D ≤ optimum ≤ P, gap ≥ 0 and ≤ tol.
    D = float(r.dual)
    assert D <= ref.objective * (1 + 1e-6) + 1e-9
    assert -1e-12 <= float(r.gap) <= 1e-7
    theta = np.asarray(r.kernel_weights)
    if math.isinf(p):
        np.testing.assert_array_equal(theta, 1.0)
    else:
        assert np.sum(theta**p) ** (1 / p) == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("p", [1.0, 2.0, 4.0, math.inf])
def test_reported_dual_is_the_dual_of_the_reference(p: float) -> None:
    # D recomputed by the reference implementation of docs/mathematics.md §1 at β = A[m]/θ_m.
    G, y = problem("ionosphere", False)
    r = fit(G, y, p=p, loss="hinge", tol=1e-6)
    A = np.asarray(r.coef)
    theta = np.asarray(r.kernel_weights)
    m = int(np.argmax(theta))
    beta = A[m] / theta[m]
    for k in range(len(theta)):
        np.testing.assert_allclose(A[k], theta[k] * beta, atol=1e-12)
    D = dual_objective_lp(G, y, beta, 1.0, p, loss="hinge")
    # The solver reports the best dual seen, which is at least the last one.
    assert float(r.dual) >= D - 1e-9 * abs(D)
    assert D <= float(r.primal)


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_p_infinity_is_svc_on_the_sum_kernel(dataset: str, C: float) -> None:
    from sklearn.svm import SVC

    G, y = problem(dataset, False)
    r = fit(G, y, p=math.inf, loss="hinge", C=C, tol=1e-9)
    K = G.sum(axis=0)
    ref = SVC(kernel="precomputed", C=C, tol=1e-10).fit(K, y)
    beta = np.zeros(len(y))
    beta[ref.support_] = ref.dual_coef_[0]
    # libsvm's dual value is exact; its intercept (an average over free support vectors) can
    # leave the primal it implies slightly above the optimum, so compare with the dual value
    # and bound by the implied primal.
    svc_dual = float(np.abs(beta).sum() - 0.5 * beta @ K @ beta)
    assert float(r.primal) == pytest.approx(svc_dual, rel=1e-7)
    assert float(r.primal) <= svc_sum_kernel_objective(K, y, C) * (1 + 1e-9)
    np.testing.assert_allclose(np.asarray(r.coef)[0], beta * np.sign(ref.classes_[1]), atol=1e-4)
    clf = mk.MKLClassifier(kernels="precomputed", p=math.inf, C=C, tol=1e-9).fit(G, y)
    agree = np.mean(clf.predict(G) == ref.predict(K))
    assert agree >= 0.99


@pytest.mark.parametrize("p", [1.0, 4.0 / 3.0, 2.0, 4.0, math.inf])
def test_interleaved_agrees_with_analytic(p: float) -> None:
    G, y = problem("sonar", False)
    a = fit(G, y, p=p, loss="hinge", tol=1e-7)
    b = fit(G, y, p=p, loss="hinge", tol=1e-7, algorithm="interleaved")
    assert a.converged and b.converged
    assert float(a.primal) == pytest.approx(b.primal, rel=1e-6)
    np.testing.assert_allclose(a.kernel_weights, b.kernel_weights, atol=1e-3)


def test_not_converged_reports_honestly() -> None:
    G, y = problem("pima", False)
    r = fit(G, y, p=1.0, loss="hinge", tol=1e-12)
    r2 = fit_lp(
        G, y, p=1.0, C=1.0, loss="hinge", epsilon=0.1, algorithm="analytic", tol=1e-12,
        max_iter=2, inner_tol=1e-9, n_threads=1,
    )  # fmt: skip
    assert not r2.converged and r2.n_iter == 2
    assert float(r2.gap) > 1e-12
    assert float(r2.primal) >= float(r.dual)


def test_float32_stack_gives_the_same_model() -> None:
    G, y = problem("ionosphere", False)
    a = fit(G, y, p=2.0, loss="hinge", tol=1e-6)
    b = fit(G.astype(np.float32), y, p=2.0, loss="hinge", tol=1e-6)
    assert float(a.primal) == pytest.approx(b.primal, rel=1e-4)


@pytest.mark.parametrize(
    ("dataset", "loss", "epsilon", "p"),
    [
        ("ionosphere", "hinge", 0.1, 4.0 / 3.0),  # the working set grows
        ("pima", "hinge", 0.1, 4.0 / 3.0),  # it grows too large and the whole problem takes over
        ("ionosphere", "epsilon_insensitive", 0.5, 2.0),  # two QP variables per point
    ],
)
def test_point_working_set_reaches_the_whole_optimum(
    dataset: str, loss: str, epsilon: float, p: float
) -> None:
    # SMO losses with p > 1 iterate on a working set of points; restricted iterations are
    # recorded with P = +inf, and a whole-problem check before the last one sent the solver
    # back (the set was incomplete). The result must still be the whole problem's optimum.
    G, y = problem(dataset, loss == "epsilon_insensitive")
    r = fit_lp(
        G, y, p=p, C=1.0, loss=loss, epsilon=epsilon, algorithm="analytic", tol=1e-7,
        max_iter=5000, inner_tol=1e-9, n_threads=0,
    )  # fmt: skip
    assert r.converged, r.status
    primals = np.array(r.history[:, 0])
    whole = np.flatnonzero(np.isfinite(primals))
    assert np.isinf(primals).any()
    assert len(whole) >= 3 and whole[0] == 0 and whole[-1] == len(primals) - 1
    assert float(r.primal) == pytest.approx(primals[whole].min(), rel=1e-12)
    ref = cvxpy_mkl(G, y, C=1.0, loss=loss, penalty="lp", p=p, epsilon=epsilon)
    A = np.asarray(r.coef)
    b = float(r.intercept)
    P = primal_objective(G, A, b, y, C=1.0, loss=loss, penalty="lp", p=p, epsilon=epsilon)
    assert P == pytest.approx(r.primal, rel=1e-9)
    assert P == pytest.approx(ref.objective, rel=1e-4)
    assert float(r.dual) <= ref.objective * (1 + 1e-6) + 1e-9


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_fit_is_the_same_on_every_thread_count(loss: str) -> None:
    # Parallel sums run in fixed chunks added in order: the thread count must not change a bit.
    G, y = problem("ionosphere", False)
    fits = [
        fit_lp(
            G,
            y,
            p=4.0 / 3.0,
            C=1.0,
            loss=loss,
            epsilon=0.1,
            algorithm="analytic",
            tol=1e-6,
            max_iter=500,
            inner_tol=1e-8,
            n_threads=t,
        )  # fmt: skip
        for t in (1, 2, 3)
    ]
    for r in fits[1:]:
        np.testing.assert_array_equal(np.asarray(r.coef), np.asarray(fits[0].coef))
        assert r.primal == fits[0].primal and r.dual == fits[0].dual


@pytest.mark.parametrize("p", [math.inf, 2.0])
def test_smooth_losses_beyond_the_conjugate_gradient_threshold(p: float) -> None:
    """n = 600 ≥ 500: the Newton and ridge systems are solved by preconditioned conjugate
    gradients (docs/mathematics.md §3.2). At p = ∞ the squared-loss fit is kernel ridge with an
    intercept on the sum kernel: the bordered system solved by numpy. Every fit certifies
    itself to 1e-8 (its dual value is computed from the iterate, whatever solved for it)."""
    from sklearn.datasets import load_breast_cancer

    X, yc = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    specs = [mk.kernels.Gaussian(sigma=s) for s in (3.0, 6.0)] + [mk.kernels.Linear()]
    G = mk.kernels.gram(X[:600], specs, normalize="mean_diag")
    y = np.where(yc[:600] == 1, 1.0, -1.0)
    for loss in ("squared", "logistic"):
        r = fit(G, y, p=p, loss=loss, C=2.0, tol=1e-8)
        assert r.converged and r.gap <= 1e-8, (loss, r.gap)
        if loss == "squared" and math.isinf(p):
            K, n = G.sum(axis=0), len(y)
            A = np.block([[K + np.eye(n) / 2.0, np.ones((n, 1))], [np.ones((1, n)), 0.0]])
            sol = np.linalg.solve(A, np.r_[y, 0.0])
            beta, b = sol[:n], sol[n]
            primal = 2.0 * 0.5 * np.sum((y - K @ beta - b) ** 2) + 0.5 * beta @ K @ beta
            assert float(r.primal) == pytest.approx(primal, rel=1e-8)
            np.testing.assert_allclose(np.asarray(r.coef)[0], beta, atol=1e-5)
