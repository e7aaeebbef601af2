"""SpicyMKL (block-ℓ1 and elastic-net MKL) against independent references: cvxpy + Clarabel on
small real problems, the identity elastic net(l1_ratio = 1) = ℓ1, and the ℓ1 / ℓp(p = 1)
correspondence of docs/mathematics.md §0 through the analytic ℓp solver."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import (
    check_sparse_certificate,
    fit_lp,
    fit_spicy,
    natural_dual_point,
    small_problem,
)
from reference import (
    cvxpy_mkl,
    decision_values,
    dual_objective_l1,
    primal_objective,
)

from multikernel import _core

LOSSES = ["hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive"]
PENALTIES: list[tuple[str, float | None]] = [("l1", None), ("elasticnet", 0.5)]
DATASETS = ["pima", "ionosphere", "sonar"]
CS = [0.3, 1.0, 10.0]
TOL = 1e-8

FloatArray = NDArray[np.float64]


def problem(dataset: str, regression: bool) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """n = 80 points of a real data set, M = 10 kernels (see ``problems.small_problem``)."""
    return small_problem(dataset, regression, n=80, seed=3)


def fit(
    G: FloatArray, y: FloatArray, *, loss: str, penalty: str = "l1", l1_ratio: float | None = None,
    C: float = 1.0, tol: float = TOL,
) -> _core.FitResult:  # fmt: skip
    return fit_spicy(
        G, y, penalty=penalty, l1_ratio=1.0 if l1_ratio is None else l1_ratio, C=C, loss=loss,
        epsilon=0.1, tol=tol, max_iter=500, n_threads=0,
    )  # fmt: skip


def is_regression(loss: str) -> bool:
    return loss in ("squared", "epsilon_insensitive")


CASES = [
    (loss, penalty, l1_ratio, DATASETS[(i + j) % 3], CS[(i + 2 * j) % 3])
    for i, loss in enumerate(LOSSES)
    for j, (penalty, l1_ratio) in enumerate(PENALTIES)
]


@pytest.mark.parametrize(("loss", "penalty", "l1_ratio", "dataset", "C"), CASES)
def test_objective_matches_cvxpy(
    loss: str, penalty: str, l1_ratio: float | None, dataset: str, C: float
) -> None:
    G, y = problem(dataset, is_regression(loss))
    ref = cvxpy_mkl(G, y, C=C, loss=loss, penalty=penalty, l1_ratio=l1_ratio)
    r = fit(G, y, loss=loss, penalty=penalty, l1_ratio=l1_ratio, C=C)
    check_sparse_certificate(
        G, y, r, ref.objective, loss=loss, penalty=penalty, l1_ratio=l1_ratio, C=C, tol=TOL
    )
    norms = np.asarray(r.kernel_norms)
    assert r.history[-1][3] == int((norms > 0).sum())


@pytest.mark.parametrize("loss", LOSSES)
def test_elasticnet_with_ratio_one_is_l1(loss: str) -> None:
    """The elastic net at ``l1_ratio = 1`` is the ℓ1 problem: its fit reaches the optimum of
    cvxpy's ℓ1 formulation, and the ℓ1 objective recomputed from its coefficients is the
    primal it reports. (The engine maps both penalties to the same weights, so comparing its
    two fits would compare one code path with itself.)"""
    G, y = problem("ionosphere", is_regression(loss))
    C = 2.0
    en = fit(G, y, loss=loss, penalty="elasticnet", l1_ratio=1.0, C=C)
    assert en.converged, en.status
    ref = cvxpy_mkl(G, y, C=C, loss=loss, penalty="l1")
    A = np.asarray(en.coef)
    P = primal_objective(G, A, float(en.intercept), y, C=C, loss=loss, penalty="l1")
    assert P == pytest.approx(en.primal, rel=1e-9)
    assert P == pytest.approx(ref.objective, rel=1e-4)
    assert en.dual <= ref.objective + 1e-6 * abs(ref.objective)


@pytest.mark.parametrize(
    ("loss", "dataset"), [("logistic", "sonar"), ("squared", "pima"), ("hinge", "ionosphere")]
)
def test_l1_is_lp_p1_at_rescaled_C(loss: str, dataset: str) -> None:
    """The ℓ1 optimum at C is the ℓp (p = 1) optimum at C·S, S = Σ_m ‖f*_m‖, so
    ``P_lp(C·S) = S (P_l1(C) − S/2)`` and the decision values agree."""
    G, y = problem(dataset, is_regression(loss))
    C = 1.0
    l1 = fit(G, y, loss=loss, C=C, tol=1e-10)
    S = float(np.sum(l1.kernel_norms))
    assert S > 0
    lp = fit_lp(
        G, y, p=1.0, C=C * S, loss=loss, epsilon=0.1, algorithm="analytic", tol=1e-8,
        max_iter=5000, inner_tol=1e-9, n_threads=0,
    )  # fmt: skip
    expected = S * (l1.primal - S / 2)
    assert lp.primal == pytest.approx(expected, rel=1e-5)
    f_l1 = decision_values(G, l1.coef, l1.intercept)
    f_lp = decision_values(G, lp.coef, lp.intercept)
    scale = float(np.max(np.abs(f_l1)))
    np.testing.assert_allclose(f_lp, f_l1, rtol=0, atol=2e-3 * scale)


def test_sparsity_and_history() -> None:
    G, y = problem("sonar", False)
    r = fit(G, y, loss="logistic", C=1.0)
    hist = np.asarray(r.history)
    assert hist.shape[1] == 6
    assert np.all(hist[:, 2] >= -1e-12)
    assert np.all(np.diff(hist[:, 4]) >= 0)
    # ℓ1 selects kernels: fewer active than available at this C.
    assert 1 <= int(hist[-1, 3]) < G.shape[0]


def test_float32_stack_and_errors() -> None:
    G, y = problem("pima", False)
    r32 = fit(G.astype(np.float32), y, loss="logistic")
    r64 = fit(G, y, loss="logistic")
    assert 0.0 <= r32.gap <= TOL, r32.gap
    assert r32.primal == pytest.approx(r64.primal, rel=1e-5)
    with pytest.raises(ValueError, match="penalty"):
        fit_spicy(
            G, y, penalty="lp", l1_ratio=1.0, C=1.0, loss="logistic", epsilon=0.1, tol=1e-6,
            max_iter=10, n_threads=0,
        )  # fmt: skip
    with pytest.raises(ValueError, match="l1_ratio"):
        fit(G, y, loss="logistic", penalty="elasticnet", l1_ratio=1.5)
    with pytest.raises(ValueError, match="C"):
        fit(G, y, loss="logistic", C=-1.0)
    with pytest.raises(ValueError, match="labels"):
        fit(G, 0.5 * y, loss="hinge")


@pytest.mark.parametrize(
    ("loss", "penalty", "l1_ratio"),
    [("hinge", "l1", None), ("logistic", "l1", None), ("squared", "elasticnet", 0.7)],
)
def test_working_set_reaches_the_cvxpy_optimum(
    loss: str, penalty: str, l1_ratio: float | None
) -> None:
    """A working set of 2 of the 10 kernels grows to the active set: the same optimum as cvxpy,
    the certificate valid for all kernels, and kernels outside the first 2 selected."""
    G, y = problem("sonar", is_regression(loss))
    C = 3.0
    ref = cvxpy_mkl(G, y, C=C, loss=loss, penalty=penalty, l1_ratio=l1_ratio)
    r = fit_spicy(
        G, y, penalty=penalty, l1_ratio=1.0 if l1_ratio is None else l1_ratio, C=C, loss=loss,
        epsilon=0.1, tol=TOL, max_iter=500, n_threads=0, working_set=2,
    )  # fmt: skip
    assert r.converged, r.status
    A = np.asarray(r.coef)
    P = primal_objective(G, A, float(r.intercept), y, C=C, loss=loss, penalty=penalty,
                         l1_ratio=l1_ratio)  # fmt: skip
    assert P == pytest.approx(ref.objective, rel=1e-4)
    assert -1e-12 <= r.gap <= TOL
    assert r.dual <= ref.objective + 1e-6 * abs(ref.objective)
    assert int((np.asarray(r.kernel_norms) > 0).sum()) > 2


def test_large_margins_and_late_working_set_growth_stay_stable() -> None:
    """Logistic loss at a large C on liver (SimpleMKL bank, 189 kernels): well-classified points
    have duals e^{−margin} that underflow, and kernels join the working set at γ = 1e7. This
    broke the inner Newton method (an infinite curvature, then a stalled solve whose outer
    update diverged); the fit must reach the optimum of the fit without a working set."""
    from reference import load_dataset

    import multikernel as mk

    X, y = load_dataset("liver_bupa")
    tr = np.random.default_rng(0).permutation(len(y))[: int(round(0.8 * len(y)))]
    G = mk.kernels.KernelBank(mk.kernels.simplemkl_bank(X.shape[1]), normalize="trace")
    Gt = G.fit_transform(X[tr])
    yt = np.where(y[tr] == np.unique(y)[1], 1.0, -1.0)
    fits = [
        fit_spicy(
            Gt,
            yt,
            penalty="l1",
            l1_ratio=1.0,
            C=200.0,
            loss="logistic",
            epsilon=0.1,
            tol=1e-3,
            max_iter=500,
            n_threads=0,
            working_set=ws,
        )  # fmt: skip
        for ws in (20, Gt.shape[0])
    ]
    for r in fits:
        assert r.converged, r.status
        assert 0.0 <= r.gap <= 1e-3
    # The scenario: kernels join the working set (20 of 189 at first) late, after the fourth
    # outer iteration (kernel blocks' γ_m = γ/s ≥ 1e5: the logistic loss's scale s is the
    # mean diagonal, 1/n on unit-trace kernels), when the active set had already shrunk.
    active = np.asarray(fits[0].history)[:, 3]
    assert np.diff(active)[3:].max() > 0, active
    assert active[3] < active[0], active
    # Each fit is certified by the reference primal of its coefficients and the reference dual
    # at its natural dual point, independently of the engine's certificate; by weak duality,
    # each reference dual is also below the other fit's primal.
    P, D = [], []
    for r in fits:
        A, b = np.asarray(r.coef), float(r.intercept)
        P.append(primal_objective(Gt, A, b, yt, C=200.0, loss="logistic", penalty="l1"))
        rho = natural_dual_point("logistic", yt, decision_values(Gt, A, b), 200.0)
        D.append(dual_objective_l1(Gt, yt, rho, 200.0, "logistic"))
        assert P[-1] == pytest.approx(r.primal, rel=1e-9)
        assert 0.0 <= P[-1] - D[-1] <= 1e-3 * abs(P[-1])
    assert D[0] <= P[1] and D[1] <= P[0]


def test_working_set_config_through_the_estimator() -> None:
    import multikernel as mk

    G, y = problem("ionosphere", False)
    kw: dict[str, Any] = dict(kernels="precomputed", penalty="l1", C=3.0, loss="logistic", tol=1e-8)
    small = mk.MKLClassifier(solver_config=mk.SpicyConfig(working_set=1), **kw).fit(G, y)
    full = mk.MKLClassifier(**kw).fit(G, y)
    assert small.primal_objective_ == pytest.approx(full.primal_objective_, rel=1e-6)
    np.testing.assert_allclose(small.kernel_weights_, full.kernel_weights_, atol=1e-4)
    with pytest.raises(ValueError, match="working_set"):
        mk.SpicyConfig(working_set=0)


def test_point_working_set_reaches_the_cvxpy_optimum() -> None:
    """From 400 points on, the hinge-type losses iterate on a working set of points (support
    vectors first, violators added): the cvxpy optimum of the whole problem, the same optimum
    as without the working set, and coefficients on every point where they belong."""
    G, y = small_problem("ringnorm", False, n=420, seed=5)
    G = np.ascontiguousarray(G[2:5])  # the three Gaussians on all features
    C, loss = 2.0, "hinge"
    ref = cvxpy_mkl(G, y, C=C, loss=loss, penalty="l1", l1_ratio=None)
    settings: dict[str, Any] = dict(
        penalty="l1", l1_ratio=1.0, C=C, loss=loss, epsilon=0.1, tol=1e-7, max_iter=500
    )
    fits = [fit_spicy(G, y, point_working_set=on, **settings) for on in (True, False)]
    for r in fits:
        assert r.converged, r.status
        A = np.asarray(r.coef)
        P = primal_objective(G, A, float(r.intercept), y, C=C, loss=loss, penalty="l1")
        assert P == pytest.approx(r.primal, rel=1e-10)
        assert P == pytest.approx(ref.objective, rel=1e-5)
        assert r.dual <= ref.objective + 1e-6 * abs(ref.objective)
