"""The estimators' certificate against an optimum computed without the engine.

Every fit reports ``primal_objective_`` P, ``dual_objective_`` D and ``duality_gap_``, and
docs/mathematics.md §1 promises ``P ≥ optimum ≥ D``. Here the optimum comes from cvxpy and
Clarabel solving the primal of §0 (``P = C Σ ℓ + Ω(s)``, ``reference.cvxpy_mkl``), P is
recomputed from ``dual_coef_`` and ``intercept_`` by the reference's own loss and penalty, and
for the ℓp hinge the textbook dual of Kloft et al. is evaluated at the model's own dual point.
None of these goes through the engine's duality code, so a wrong dual, a wrong primal or a gap
computed from the wrong pair fails here.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import small_problem
from reference import RefSolution, cvxpy_mkl, primal_objective

import multikernel as mk

FloatArray = NDArray[np.float64]
C = 1.0
TOL = 1e-6
GROUPS = (0, 0, 0, 1, 1, 1, 2, 2, 2, 2)

# (penalty, p, solver, loss): every penalty's default solver, SpicyMKL for l1, two losses each.
CASES = [
    (penalty, p, solver, loss)
    for penalty, p, solver in [
        ("l1", None, "auto"),
        ("l1", None, "spicy"),
        ("lp", 2.0, "auto"),
        ("lp", 4.0 / 3.0, "auto"),
        ("group", None, "auto"),
    ]
    for loss in ("hinge", "logistic")
]


@cache
def problem() -> tuple[FloatArray, FloatArray]:
    """60 ionosphere points, ten kernels, labels ±1."""
    return small_problem("ionosphere", False, n=60, seed=4)


@cache
def optimum(penalty: str, p: float | None, loss: str) -> RefSolution:
    G, y = problem()
    groups = GROUPS if penalty == "group" else None
    return cvxpy_mkl(G, y, C=C, loss=loss, penalty=penalty, p=p, groups=groups)


def fit(penalty: str, p: float | None, solver: str, loss: str) -> mk.MKLClassifier:
    G, y = problem()
    kw: dict[str, object] = {"p": p} if p is not None else {}
    if penalty == "group":
        kw["groups"] = list(GROUPS)
    est = mk.MKLClassifier(
        kernels="precomputed", penalty=penalty, solver=solver, loss=loss, C=C, tol=TOL, **kw
    )
    return est.fit(G, y)


@pytest.mark.parametrize(("penalty", "p", "solver", "loss"), CASES)
def test_certificate_brackets_the_cvxpy_optimum(
    penalty: str, p: float | None, solver: str, loss: str
) -> None:
    G, y = problem()
    est = fit(penalty, p, solver, loss)
    assert est.converged_ is True and est.duality_gap_ <= est.tol
    ref = optimum(penalty, p, loss).objective
    P, D, gap = est.primal_objective_, est.dual_objective_, est.duality_gap_
    # P is the objective of the returned model: recomputed from its coefficients.
    groups = GROUPS if penalty == "group" else None
    P_model = primal_objective(
        G, est.dual_coef_, float(est.intercept_), y, C=C, loss=loss, penalty=penalty, p=p,
        groups=groups,
    )  # fmt: skip
    assert P == pytest.approx(P_model, rel=1e-7)
    # Weak duality around the independent optimum (cvxpy is accurate to about 1e-8).
    slack = 1e-7 * abs(ref)
    assert P >= ref - slack, (P, ref)
    assert D <= ref + slack, (D, ref)
    # The gap bounds the sub-optimality of the model, as its definition promises.
    assert 0.0 <= gap <= TOL
    assert (P - ref) / abs(P) <= gap + 1e-7
    assert (ref - D) / abs(P) <= gap + 1e-7


@pytest.mark.parametrize("p", [4.0 / 3.0, 2.0])
def test_lp_hinge_textbook_dual_at_the_model(p: float) -> None:
    """Kloft et al.'s dual ``1ᵀα − ½ ‖(αᵀQ_mα)_m‖_{p*}`` (``Q_m = Y K_m Y``, ``0 ≤ α ≤ C``,
    ``yᵀα = 0``) at the model's α, read off ``dual_coef_ = θ_m (y ∘ α)``: a lower bound on the
    cvxpy optimum that the reported dual value is no better than, and within the reported gap of
    P."""
    G, y = problem()
    est = fit("lp", p, "auto", "hinge")
    theta = est.kernel_weights_
    m = int(np.argmax(theta))
    alpha = y * est.dual_coef_[m] / theta[m]
    np.testing.assert_allclose(est.dual_coef_, np.outer(theta, y * alpha), atol=1e-10)
    # Into the feasible set (the solver's α meets it up to rounding).
    alpha = np.clip(alpha, 0.0, C)
    pos, neg = y > 0, y < 0
    excess = alpha[pos].sum() - alpha[neg].sum()
    assert abs(excess) <= 1e-8 * alpha.sum()
    alpha[pos if excess > 0 else neg] *= 1 - abs(excess) / alpha[pos if excess > 0 else neg].sum()
    q_star = p / (p - 1)
    forms = np.array([(y * alpha) @ K @ (y * alpha) for K in G])
    D_textbook = alpha.sum() - 0.5 * np.sum(forms**q_star) ** (1 / q_star)
    ref = optimum("lp", p, "hinge").objective
    assert D_textbook <= ref + 1e-7 * abs(ref)
    P = est.primal_objective_
    assert (P - D_textbook) / abs(P) <= 2 * TOL
