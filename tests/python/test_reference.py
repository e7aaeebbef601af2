"""Tests of the independent reference (``reference.py``) itself.

The reference is only useful if it is right, so every identity of docs/mathematics.md §0–§1 that it
relies on is checked here against an independent computation: scikit-learn's SVC, a direct cvxpy
solve of the dual, numerical conjugates, and the exact l1 ↔ lp(p=1) re-parameterisation.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import numpy as np
import pytest
import reference
from numpy.typing import NDArray
from reference import (
    CERTIFIED_GAP,
    DATA_DIR,
    LOSSES,
    RefSolution,
    block_norms,
    cvxpy_hinge_dual,
    cvxpy_mkl,
    decision_values,
    dual_objective_group_hinge,
    dual_objective_l1,
    dual_objective_lp,
    dual_objective_lp_hinge,
    dual_value,
    kloft_coefficients,
    load_dataset,
    loss_conjugate,
    loss_value,
    penalty_value,
    primal_objective,
    project_dual_l1,
    svc_sum_kernel_objective,
)
from scipy.optimize import minimize_scalar
from sklearn.metrics.pairwise import rbf_kernel

FloatArray = NDArray[np.float64]
GAMMAS = (0.05, 0.1, 0.3, 1.0, 3.0)  # multiplied by 1/d
N = 80


@cache
def problem(name: str, n: int = N) -> tuple[FloatArray, FloatArray]:
    """``(G, y)``: M = 5 unit-trace Gaussian Gram matrices on a stratified subset."""
    X, y = load_dataset(name, n=n, seed=0)
    d = X.shape[1]
    G = np.stack([rbf_kernel(X, gamma=g / d) for g in GAMMAS])
    G /= np.trace(G, axis1=1, axis2=2)[:, None, None]
    G.setflags(write=False)
    y.setflags(write=False)
    return G, y


@cache
def solve(
    name: str,
    C: float,
    loss: str,
    penalty: str,
    p: float | None = None,
    l1_ratio: float | None = None,
    groups: tuple[int, ...] | None = None,
) -> RefSolution:
    G, y = problem(name)
    return cvxpy_mkl(G, y, C=C, loss=loss, penalty=penalty, p=p, l1_ratio=l1_ratio, groups=groups)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def natural_rho(loss: str, y: FloatArray, z: FloatArray, C: float, eps: float = 0.1) -> FloatArray:
    """``ρ = −C ∂ℓ(y, z)/∂z`` (a subgradient for the non-smooth losses)."""
    if loss == "hinge":
        g = np.where(y * z < 1, -y, 0.0)
    elif loss == "squared_hinge":
        g = -y * np.maximum(0.0, 1 - y * z)
    elif loss == "logistic":
        g = -y / (1 + np.exp(y * z))
    elif loss == "squared":
        g = z - y
    else:
        g = np.where(np.abs(z - y) > eps, np.sign(z - y), 0.0)
    out: FloatArray = -C * g
    return out


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------


def test_load_dataset() -> None:
    X, y = load_dataset("ionosphere")
    assert X.shape == (351, 34)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert int((y > 0).sum()) == 225  # "good" is +1
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    std = X.std(axis=0)
    assert std[1] == 0.0 and np.all(X[:, 1] == 0.0)  # constant column V2 stays at 0
    np.testing.assert_allclose(np.delete(std, 1), 1.0, rtol=1e-12)

    Xs, ys = load_dataset("pima", n=100, seed=3)
    assert Xs.shape == (100, 8)
    assert int((ys > 0).sum()) in (34, 35)  # 268/768 of 100
    np.testing.assert_allclose(Xs.std(axis=0), 1.0, rtol=1e-12)
    X2, y2 = load_dataset("pima", n=100, seed=3)
    np.testing.assert_array_equal(Xs, X2)
    np.testing.assert_array_equal(ys, y2)
    assert not np.array_equal(load_dataset("pima", n=100, seed=4)[0], Xs)
    assert (DATA_DIR / "pima.csv").is_file()


# ------------------------------------------------------------------------------------------
# losses and their conjugates (the §0 table)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_conjugate_table_matches_numerical_sup(loss: str) -> None:
    """ℓ*(y, u) of the table equals sup_z (uz − ℓ(y, z)) computed numerically."""
    rng = np.random.default_rng(1)
    eps = 0.3
    for y in (1.0, -1.0, 0.7):
        if loss in ("hinge", "squared_hinge", "logistic") and y == 0.7:
            continue
        for _ in range(6):
            if loss in ("hinge", "logistic"):
                u = -y * rng.uniform(0.01, 0.99)
            elif loss == "squared_hinge":
                u = -y * rng.uniform(0.01, 3.0)
            elif loss == "epsilon_insensitive":
                u = rng.uniform(-0.99, 0.99)
            else:
                u = rng.uniform(-3, 3)

            def neg(z: float, u: float = u, y: float = y) -> float:
                return -(u * z - float(loss_value(loss, [y], [z], eps)[0]))

            res = minimize_scalar(neg, bounds=(-60, 60), method="bounded", options={"xatol": 1e-12})
            table = float(loss_conjugate(loss, [y], [u], eps)[0])
            assert table == pytest.approx(-res.fun, abs=1e-7), (loss, y, u)
    # outside the domain the conjugate is +inf
    if loss in ("hinge", "logistic", "squared_hinge"):
        assert np.isinf(loss_conjugate(loss, [1.0], [0.5])[0])
    if loss == "epsilon_insensitive":
        assert np.isinf(loss_conjugate(loss, [1.0], [1.5])[0])


def test_logistic_loss_is_stable() -> None:
    z = np.array([-800.0, 0.0, 800.0])
    v = loss_value("logistic", np.ones(3), z)
    np.testing.assert_allclose(v, [800.0, np.log(2.0), 0.0], rtol=1e-15, atol=1e-300)


def test_penalty_values() -> None:
    s = np.array([3.0, 4.0, 0.0])
    assert penalty_value(s, "l1") == 7.0
    assert penalty_value(s, "elasticnet", l1_ratio=0.25) == pytest.approx(0.25 * 7 + 0.375 * 25)
    assert penalty_value(s, "lp", p=np.inf) == pytest.approx(12.5)
    assert penalty_value(s, "lp", p=1.0) == pytest.approx(24.5)
    # p = 3: q = 3/2
    assert penalty_value(s, "lp", p=3.0) == pytest.approx(0.5 * (3**1.5 + 4**1.5) ** (4 / 3))
    assert penalty_value(s, "group") == pytest.approx(24.5)
    assert penalty_value(s, "group", groups=[0, 1, 1]) == pytest.approx(8.0)
    assert penalty_value(s, "group", groups=[0, 1, 2]) == pytest.approx(8.0)


# ------------------------------------------------------------------------------------------
# the cvxpy primal against independent computations
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pima", "ionosphere"])
@pytest.mark.parametrize("C", [1.0, 30.0])
def test_lp_inf_equals_svc_on_sum_kernel(name: str, C: float) -> None:
    G, y = problem(name)
    sol = solve(name, C, "hinge", "lp", p=np.inf)
    ref = svc_sum_kernel_objective(G.sum(axis=0), y, C)
    assert rel(sol.objective, ref) < 1e-5
    # the SVC solution is optimal, so cvxpy cannot be meaningfully better
    assert sol.objective >= ref * (1 - 1e-6)


CASES = [
    ("hinge", "l1", None, None, None),
    ("logistic", "l1", None, None, None),
    ("squared", "l1", None, None, None),
    ("squared_hinge", "elasticnet", None, 0.5, None),
    ("epsilon_insensitive", "elasticnet", None, 0.3, None),
    ("hinge", "lp", 2.0, None, None),
    ("logistic", "lp", 3.0, None, None),
    ("squared_hinge", "lp", 1.0, None, None),
    ("hinge", "group", None, None, (0, 0, 1, 1, 1)),
    ("hinge", "group", None, None, (0, 1, 2, 3, 4)),
]


@pytest.mark.parametrize(("loss", "penalty", "p", "l1_ratio", "groups"), CASES)
def test_primal_objective_recomputes_cvxpy(
    loss: str,
    penalty: str,
    p: float | None,
    l1_ratio: float | None,
    groups: tuple[int, ...] | None,
) -> None:
    G, y = problem("ionosphere")
    C = 10.0
    sol = solve("ionosphere", C, loss, penalty, p, l1_ratio, groups)
    P = primal_objective(
        G,
        sol.A,
        sol.b,
        y,
        C=C,
        loss=loss,
        penalty=penalty,
        p=p,
        l1_ratio=l1_ratio,
        groups=groups,
    )
    assert rel(P, sol.objective) < 1e-6
    np.testing.assert_allclose(block_norms(G, sol.A), sol.norms, rtol=1e-6, atol=1e-7)
    # the optimum beats nearby perturbations (the recomputation is not trivially equal)
    rng = np.random.default_rng(0)
    for _ in range(3):
        A2 = sol.A + 1e-3 * rng.normal(size=sol.A.shape) * np.abs(sol.A).max()
        P2 = primal_objective(
            G,
            A2,
            sol.b + 1e-3,
            y,
            C=C,
            loss=loss,
            penalty=penalty,
            p=p,
            l1_ratio=l1_ratio,
            groups=groups,
        )
        assert P2 > P


def test_primal_objective_without_intercept() -> None:
    G, y = problem("pima")
    sol = cvxpy_mkl(G, y, C=10.0, loss="squared", penalty="lp", p=2.0, intercept=False)
    assert sol.b == 0.0
    P = primal_objective(G, sol.A, 0.0, y, C=10.0, loss="squared", penalty="lp", p=2.0)
    assert rel(P, sol.objective) < 1e-6
    with_b = solve("pima", 10.0, "squared", "lp", 2.0)
    assert with_b.objective < sol.objective


# ------------------------------------------------------------------------------------------
# duals (§1): strong duality with an independent cvxpy solve of the dual
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [4.0 / 3.0, 2.0, np.inf])
def test_lp_hinge_strong_duality(p: float) -> None:
    G, y = problem("ionosphere")
    C = 10.0
    primal = solve("ionosphere", C, "hinge", "lp", p)
    D, alpha = cvxpy_hinge_dual(G, y, C=C, penalty="lp", p=p)
    assert rel(primal.objective, D) < 1e-6
    # the §1 formula at the cvxpy dual point reproduces the dual optimum
    alpha = alpha - y * (y @ alpha) / y.size  # remove the solver's tiny y·α residual
    D_formula = dual_objective_lp_hinge(G, y, alpha, C, p)
    assert rel(D_formula, D) < 1e-6
    assert D_formula <= primal.objective * (1 + 1e-9)
    # Kloft's θ (eq. 17) turns the dual point into primal coefficients with the same objective
    A = kloft_coefficients(G, y, alpha, p)
    P_alpha = primal_objective(G, A, primal.b, y, C=C, loss="hinge", penalty="lp", p=p)
    assert rel(P_alpha, primal.objective) < 1e-5
    np.testing.assert_allclose(block_norms(G, A), primal.norms, rtol=1e-3, atol=1e-4)


def test_lp_dual_is_a_lower_bound_everywhere() -> None:
    """Weak duality for arbitrary feasible α, and the bound is not slack by accident."""
    G, y = problem("pima")
    C = 10.0
    P = solve("pima", C, "hinge", "lp", 2.0).objective
    rng = np.random.default_rng(0)
    pos, neg = y > 0, y < 0
    for _ in range(20):
        a = rng.uniform(0, C, size=y.size)
        # rescale one class so that yᵀα = 0 while staying in the box
        sp, sn = a[pos].sum(), a[neg].sum()
        if sp > sn:
            a[pos] *= sn / sp
        else:
            a[neg] *= sp / sn
        assert dual_objective_lp_hinge(G, y, a, C, 2.0) <= P
    with pytest.raises(ValueError):
        dual_objective_lp_hinge(G, y, np.full(y.size, C), C, 2.0)  # yᵀα ≠ 0


@pytest.mark.parametrize("groups", [(0, 0, 1, 1, 1), (0, 1, 2, 3, 4), (0, 0, 0, 0, 0)])
def test_group_hinge_strong_duality(groups: tuple[int, ...]) -> None:
    G, y = problem("ionosphere")
    C = 10.0
    primal = solve("ionosphere", C, "hinge", "group", groups=groups)
    D, alpha = cvxpy_hinge_dual(G, y, C=C, penalty="group", groups=groups)
    assert rel(primal.objective, D) < 1e-6
    alpha = alpha - y * (y @ alpha) / y.size
    D_formula = dual_objective_group_hinge(G, y, alpha, C, groups)
    assert rel(D_formula, D) < 1e-6


@pytest.mark.parametrize(
    ("loss", "penalty", "l1_ratio"),
    [
        ("logistic", "l1", None),
        ("squared", "l1", None),
        ("squared_hinge", "l1", None),
        ("logistic", "elasticnet", 0.5),
        ("squared", "elasticnet", 0.2),
    ],
)
def test_spicy_dual_gap_closes_for_smooth_losses(
    loss: str, penalty: str, l1_ratio: float | None
) -> None:
    """At the optimum the natural ρ = −C ℓ'(y, f) is dual optimal: D(ρ) = P to solver accuracy."""
    G, y = problem("ionosphere")
    C = 10.0
    sol = solve("ionosphere", C, loss, penalty, None, l1_ratio)
    z = decision_values(G, sol.A, sol.b)
    rho = natural_rho(loss, y, z, C)
    D = dual_objective_l1(G, y, rho, C, loss, penalty, l1_ratio)
    assert D <= sol.objective * (1 + 1e-9)
    assert rel(D, sol.objective) < 1e-5
    # a point away from the optimum gives a strictly smaller (but still valid) bound
    D_far = dual_objective_l1(G, y, 0.5 * rho + 0.1, C, loss, penalty, l1_ratio)
    assert D_far < D - 1e-3 * abs(D)


@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive"])
def test_spicy_dual_nonsmooth_losses(loss: str) -> None:
    """Non-smooth losses: the subgradient choice is not unique, so only D ≤ P, reasonably tight."""
    G, y = problem("ionosphere")
    C = 10.0
    sol = solve("ionosphere", C, loss, "l1")
    z = decision_values(G, sol.A, sol.b)
    rho = natural_rho(loss, y, z, C)
    D = dual_objective_l1(G, y, rho, C, loss)
    assert D <= sol.objective * (1 + 1e-9)
    assert D > -np.inf


def test_projection_keeps_the_conjugate_domain() -> None:
    """For hinge, plain centring of ρ = α∘y can leave 0 ≤ yρ ≤ C; the projection must not."""
    G, y = problem("pima")
    C = 1.0
    rho = C * y  # α = C everywhere; classes are unbalanced, so mean(ρ) ≠ 0
    centred = rho - rho.mean()
    assert np.any((y * centred < 0) | (y * centred > C))  # plain centring is infeasible here
    assert dual_objective_l1(G, y, centred, C, "hinge", project=False) == -np.inf
    r = project_dual_l1(G, y, rho, C, loss="hinge")
    assert abs(r.sum()) < 1e-12
    assert np.all(y * r >= -1e-12) and np.all(y * r <= C + 1e-12)
    assert np.sqrt(np.einsum("i,mij,j->m", r, G, r)).max() <= 1 + 1e-12
    # and when centring is feasible the projection is exactly centring (+ scaling)
    G2, y2 = problem("ionosphere")
    rho2 = natural_rho("squared", y2, np.zeros_like(y2), 1.0)
    r2 = project_dual_l1(G2, y2, rho2, 1.0, loss="squared", penalty="elasticnet")
    np.testing.assert_allclose(r2, rho2 - rho2.mean(), atol=1e-15)
    r3 = project_dual_l1(G2, y2, rho2, 1.0, loss="squared", penalty="l1")
    c = rho2 - rho2.mean()
    scale = np.sqrt(np.einsum("i,mij,j->m", c, G2, c)).max()
    assert scale > 1.0
    np.testing.assert_allclose(r3, c / scale, atol=1e-15)


def test_lp_general_loss_dual() -> None:
    """§1 lp dual with a smooth loss: D(ρ) at the natural ρ equals P."""
    G, y = problem("pima")
    C = 10.0
    for p in (1.0, 2.0):
        sol = solve("pima", C, "logistic", "lp", p)
        rho = natural_rho("logistic", y, decision_values(G, sol.A, sol.b), C)
        rho -= rho.mean()
        D = dual_objective_lp(G, y, rho, C, p, loss="logistic")
        assert rel(D, sol.objective) < 1e-5
        assert D <= sol.objective * (1 + 1e-9)


# ------------------------------------------------------------------------------------------
# identities between penalties (§0)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "loss", "C"), [("ionosphere", "hinge", 3.0), ("pima", "logistic", 3.0)]
)
def test_l1_equals_lp1_at_rescaled_C(name: str, loss: str, C: float) -> None:
    """The l1 optimum at C is the lp(p=1) optimum at C·S with S = Σ_m ‖f*_m‖ (same A and b).

    Objectives: P_lp(C·S) = S·(P_l1(C) − S/2). The inverse rescaling C/S (the form of SpicyMKL
    §4.2 read in our convention) gives a different solution.
    """
    G, y = problem(name)
    l1 = solve(name, C, loss, "l1")
    S = float(l1.norms.sum())
    assert np.count_nonzero(l1.norms > 1e-6) >= 2  # a non-trivial selection
    lp1 = solve(name, C * S, loss, "lp", 1.0)
    assert rel(lp1.objective, S * (l1.objective - S / 2)) < 1e-6
    # the l1 solution is optimal for lp(p=1) at C·S
    P_cross = primal_objective(G, l1.A, l1.b, y, C=C * S, loss=loss, penalty="lp", p=1.0)
    assert rel(P_cross, lp1.objective) < 1e-6
    np.testing.assert_allclose(lp1.norms, l1.norms, rtol=1e-4, atol=1e-4 * S)
    np.testing.assert_allclose(
        decision_values(G, lp1.A, lp1.b), decision_values(G, l1.A, l1.b), atol=1e-4
    )
    # the other direction of the rescaling is wrong
    wrong = solve(name, C / S, loss, "lp", 1.0)
    assert np.abs(wrong.norms - l1.norms).max() > 0.1 * S


def test_group_with_one_group_equals_lp1() -> None:
    G, y = problem("ionosphere")
    C = 10.0
    grp = solve("ionosphere", C, "hinge", "group", groups=(0, 0, 0, 0, 0))
    lp1 = solve("ionosphere", C, "hinge", "lp", 1.0)
    assert rel(grp.objective, lp1.objective) < 1e-7
    np.testing.assert_allclose(grp.norms, lp1.norms, rtol=1e-4, atol=1e-4)
    default = cvxpy_mkl(G, y, C=C, loss="hinge", penalty="group")  # groups=None: one group
    assert rel(default.objective, lp1.objective) < 1e-7
    # and two groups are a genuinely different (smaller) penalty
    two = solve("ionosphere", C, "hinge", "group", groups=(0, 0, 1, 1, 1))
    assert two.objective < lp1.objective * (1 - 1e-4)


# ------------------------------------------------------------------------------------------
# a reference that does not depend on one solver's luck on one CPU
# ------------------------------------------------------------------------------------------

#: (loss, penalty, options): every loss but one_class with every penalty.
CERTIFIED_CASES = [
    ("hinge", "lp", {"p": 4.0 / 3.0}),
    ("logistic", "lp", {"p": 2.0}),
    ("squared_hinge", "group", {"groups": (0, 0, 1, 1, 1)}),
    ("hinge", "l1", {}),
    ("squared", "elasticnet", {"l1_ratio": 0.5}),
    ("epsilon_insensitive", "lp", {"p": 1.0}),
]


def _almost_solved(monkeypatch: pytest.MonkeyPatch, max_iter: int | None = None) -> None:
    """Makes every first formulation fail, as Clarabel's "almost solved" does on some CPUs,
    and the second one report an inaccurate solution (after ``max_iter`` iterations if
    given, else at the ladder's tolerances)."""
    real = reference._solve

    def solve(prob: Any, *, inaccurate: bool = False) -> bool:
        if not inaccurate:
            raise RuntimeError("cvxpy/Clarabel failed: status optimal_inaccurate")
        if max_iter is None:
            real(prob, inaccurate=True)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate": the point
                prob.solve(solver="CLARABEL", max_iter=max_iter)
        return False

    monkeypatch.setattr(reference, "_solve", solve)


@pytest.mark.parametrize(("loss", "penalty", "opts"), CERTIFIED_CASES)
def test_an_almost_solved_reference_is_certified_by_its_own_gap(
    monkeypatch: pytest.MonkeyPatch, loss: str, penalty: str, opts: dict[str, Any]
) -> None:
    G, y = problem("ionosphere")
    t = y if loss in ("hinge", "logistic", "squared_hinge") else 0.5 * y
    exact = cvxpy_mkl(G, t, C=1.0, loss=loss, penalty=penalty, **opts)
    _almost_solved(monkeypatch)
    sol = cvxpy_mkl(G, t, C=1.0, loss=loss, penalty=penalty, **opts)
    # The certified value is an upper bound within CERTIFIED_GAP of the optimum, and it is the
    # primal value of the returned coefficients.
    assert sol.objective >= exact.objective * (1 - 1e-9)
    assert sol.objective <= exact.objective + CERTIFIED_GAP * max(1.0, exact.objective)
    P = primal_objective(G, sol.A, sol.b, t, C=1.0, loss=loss, penalty=penalty, **opts)
    assert P == pytest.approx(sol.objective, rel=1e-12)


def test_an_uncertified_reference_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    G, y = problem("ionosphere")
    _almost_solved(monkeypatch, max_iter=3)  # far from the optimum: its gap is large
    with pytest.raises(RuntimeError, match="certified only to a relative gap of"):
        cvxpy_mkl(G, y, C=1.0, loss="hinge", penalty="lp", p=4.0 / 3.0)


@pytest.mark.parametrize(("loss", "penalty", "opts"), CERTIFIED_CASES)
def test_dual_value_is_a_lower_bound_that_closes_at_the_optimum(
    loss: str, penalty: str, opts: dict[str, Any]
) -> None:
    """Weak duality of :func:`dual_value` at random points (with sample weights), and strong
    duality at the natural dual point of the optimum (the smooth losses)."""
    G, y = problem("sonar")
    t = y if loss in ("hinge", "logistic", "squared_hinge") else 0.5 * y
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size)
    ref = cvxpy_mkl(G, t, C=1.0, loss=loss, penalty=penalty, sample_weight=w, **opts)
    rng = np.random.default_rng(0)
    for _ in range(10):
        rho = rng.normal(scale=rng.uniform(0.1, 3.0), size=y.size)
        D = dual_value(G, t, rho, w, loss=loss, penalty=penalty, **opts)
        assert D <= ref.objective * (1 + 1e-9)
    if loss in ("logistic", "squared_hinge", "squared"):
        rho = w * natural_rho(loss, t, decision_values(G, ref.A, ref.b), 1.0)
        D = dual_value(G, t, rho, w, loss=loss, penalty=penalty, **opts)
        assert rel(D, ref.objective) < 1e-6
