"""Group MKL (Nath et al., solver ``mirror``) against independent references: cvxpy + Clarabel
on small real problems with several groupings (one group, singletons = the ℓ2,∞ block norm,
uneven groups), the identity one group = ``lp`` with ``p = 1`` through the analytic solver, the
optimality structure of the group weights, and the validation of ``groups``."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import free_group_problem, small_problem
from reference import (
    cvxpy_mkl,
    dual_objective_group_hinge,
    load_dataset,
    primal_objective,
)

import multikernel as mk
from multikernel import _core
from multikernel.exceptions import InvalidParameterError

FloatArray = NDArray[np.float64]
LOSSES = ["hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive"]
#: Mirror descent reaches 1e-4 reliably; at 1e-6 it can stall near 1e-5 (see the issue note).
TOL = 1e-4
#: Groupings of the 10 kernels of ``small_problem`` (Linear, Poly, 3 Gaussians on all
#: columns, 3 Gaussians on column subsets, Linear on column 0, Poly on columns 1–2).
GROUPINGS: dict[str, tuple[int, ...]] = {
    "one": (0,) * 10,
    "singletons": tuple(range(10)),
    "by_type": (0, 1, 2, 2, 2, 3, 3, 3, 0, 1),
    "uneven": (0, 0, 0, 0, 0, 0, 0, 1, 1, 2),
}


def is_regression(loss: str) -> bool:
    return loss in ("squared", "epsilon_insensitive")


@cache
def problem(dataset: str, regression: bool) -> tuple[FloatArray, FloatArray]:
    return small_problem(dataset, regression, n=60, seed=5)


def fit(
    G: FloatArray, y: FloatArray, groups: tuple[int, ...] | None, *, loss: str, C: float,
    tol: float = TOL, **settings: float | str | bool,
) -> _core.FitResult:  # fmt: skip
    s: dict[str, float | str | bool | list[int] | None] = {
        "C": C, "loss": loss, "tol": tol, "max_iter": 20000, **settings,
    }  # fmt: skip
    s["groups"] = None if groups is None else list(groups)
    return _core.fit(_core.Settings("mirror", s), G, y)


CASES = [
    (
        loss,
        grouping,
        ["pima", "ionosphere", "sonar"][(i + j) % 3],
        [0.3, 1.0, 10.0][(i + 2 * j) % 3],
        "newton",  # the default; the other losses take the adaptive mirror step
    )
    for i, loss in enumerate(LOSSES)
    for j, grouping in enumerate(GROUPINGS)
    if (i + j) % 2 == 0 or grouping == "by_type" or loss == "hinge"
]
#: The hinge loss (the one that takes the second-order step) with the mirror step as well.
CASES += [(*case[:4], "adaptive") for case in CASES if case[0] == "hinge"]


@cache
def reference(dataset: str, loss: str, grouping: str, C: float) -> float:
    G, y = problem(dataset, is_regression(loss))
    groups = GROUPINGS[grouping]
    return cvxpy_mkl(G, y, C=C, loss=loss, penalty="group", groups=groups).objective


@pytest.mark.parametrize(("loss", "grouping", "dataset", "C", "step"), CASES)
def test_objective_matches_cvxpy(
    loss: str, grouping: str, dataset: str, C: float, step: str
) -> None:
    G, y = problem(dataset, is_regression(loss))
    groups = GROUPINGS[grouping]
    objective = reference(dataset, loss, grouping, C)
    r = fit(G, y, groups, loss=loss, C=C, step=step)
    assert r.converged, (r.status, r.gap)
    A, b = np.asarray(r.coef), float(r.intercept)
    # The primal recomputed independently from the per-kernel coefficients (the engine's
    # comes from the SMO's incrementally updated predictions: 1e-8 relative seen at C = 10).
    P = primal_objective(G, A, b, y, C=C, loss=loss, penalty="group", groups=groups)
    assert P == pytest.approx(r.primal, rel=1e-7)
    assert P == pytest.approx(objective, rel=2 * TOL)
    # A valid certificate: D ≤ optimum ≤ P, gap within tol.
    assert -1e-12 <= r.gap <= TOL
    assert r.dual <= objective + 1e-6 * abs(objective)
    w = np.asarray(r.kernel_weights)
    assert w.min() >= 0.0 and w.sum() == pytest.approx(1.0, abs=1e-12)


def test_hinge_dual_point_is_feasible_and_certifies() -> None:
    """Every used kernel carries the same β (``A[k] = θ_k β``), and α = yβ is a feasible point
    of the reference's group dual whose value is below the primal."""
    G, y = problem("pima", False)
    groups = GROUPINGS["by_type"]
    est = mk.MKLClassifier(
        kernels="precomputed", penalty="group", groups=list(groups), tol=TOL, max_iter=20000
    ).fit(G, y)
    A, w, gamma = est.dual_coef_, est.kernel_weights_, est.group_weights_
    used = np.flatnonzero(w > 0)
    # θ = w · Σθ and Σ_{k∈G_j} θ_k = 1/γ_j, so Σθ = Σ_j 1/γ_j.
    total = float(np.sum(1.0 / gamma[gamma > 0]))
    betas = A[used] / (w[used] * total)[:, None]
    np.testing.assert_allclose(betas, np.broadcast_to(betas[0], betas.shape), atol=1e-9)
    yy = np.where(y > 0, 1.0, -1.0)  # the classifier's ±1 encoding (classes_ sorted)
    alpha = yy * betas[0]
    D = dual_objective_group_hinge(G, yy, alpha, 1.0, groups, tol=1e-6)
    assert D <= est.primal_objective_ * (1 + 1e-9)
    assert D >= est.primal_objective_ * (1 - 10 * TOL)


def test_one_group_is_lp_with_p_one() -> None:
    G, y = problem("ionosphere", False)
    grp = mk.MKLClassifier(
        kernels="precomputed", penalty="group", groups=[0] * 10, tol=TOL, max_iter=20000
    ).fit(G, y)
    lp = mk.MKLClassifier(
        kernels="precomputed", penalty="lp", p=1.0, solver="analytic", tol=TOL, max_iter=20000
    ).fit(G, y)
    mirror_lp = mk.MKLClassifier(
        kernels="precomputed", penalty="lp", p=1.0, solver="mirror", tol=TOL, max_iter=20000
    ).fit(G, y)
    for est in (grp, lp, mirror_lp):
        assert est.duality_gap_ <= TOL, est.duality_gap_
    assert grp.primal_objective_ == pytest.approx(lp.primal_objective_, rel=3 * TOL)
    assert mirror_lp.primal_objective_ == pytest.approx(lp.primal_objective_, rel=3 * TOL)
    # Both are certified: each one's dual is below the other's primal.
    assert grp.dual_objective_ <= lp.primal_objective_ * (1 + 1e-12)
    assert lp.dual_objective_ <= grp.primal_objective_ * (1 + 1e-12)
    np.testing.assert_allclose(grp.group_weights_, [1.0])
    # The same model: decision values agree to the accuracy of the optimum.
    f_grp = grp.decision_function(G)
    f_lp = lp.decision_function(G)
    assert np.abs(f_grp - f_lp).max() <= 1e-2 * np.abs(f_lp).max()


def test_auto_solver_at_p_one_is_mirror() -> None:
    """``solver="auto"`` picks mirror descent at p = 1 (Kloft's update crawls there): the same
    bits as ``solver="mirror"``, and a certified optimum."""
    G, y = problem("ionosphere", False)
    fits = [
        mk.MKLClassifier(kernels="precomputed", penalty="lp", p=1.0, solver=s, tol=TOL).fit(G, y)
        for s in ("auto", "mirror")
    ]
    np.testing.assert_array_equal(fits[0].dual_coef_, fits[1].dual_coef_)
    assert fits[0].converged_ and fits[0].duality_gap_ <= TOL


def test_group_weights_have_the_optimality_structure() -> None:
    """At the optimum the group sums of ‖f_k‖ are equal and γ_j ∝ max_{k∈G_j} ‖β‖_{K_k}."""
    G, y = problem("sonar", False)
    groups = GROUPINGS["by_type"]
    est = mk.MKLClassifier(
        kernels="precomputed", penalty="group", groups=list(groups), C=1.0, tol=TOL,
        max_iter=20000,
    ).fit(G, y)  # fmt: skip
    ids = np.asarray(groups)
    sums = np.bincount(ids, weights=est.kernel_norms_)
    used = est.group_weights_ > 1e-6
    assert used.all()
    np.testing.assert_allclose(sums, sums.max(), rtol=2e-2)
    k = int(np.argmax(est.kernel_weights_))
    beta = est.dual_coef_[k] / est.kernel_weights_[k]
    tq = np.sqrt(np.einsum("i,mij,j->m", beta, G, beta))
    gamma = np.array([tq[ids == j].max() for j in range(4)])
    np.testing.assert_allclose(est.group_weights_, gamma / gamma.sum(), rtol=5e-2)


def test_multiclass_fits_one_problem_per_class_or_pair() -> None:
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    specs, groups = mk.kernels.view_bank(
        {"sepal": [0, 1], "petal": [2, 3]}, widths=[0.5, 1.0, 2.0], linear=True
    )
    for multi, n_problems in (("ovr", 3), ("ovo", 3)):
        clf = mk.MKLClassifier(
            kernels=specs, penalty="group", groups=groups, C=10.0, multi_class=multi
        ).fit(X, y)
        assert clf.group_weights_.shape == (n_problems, 2)
        np.testing.assert_allclose(clf.group_weights_.sum(axis=1), 1.0)
        assert np.all(clf.duality_gap_ <= 1e-3)
        assert clf.score(X, y) > 0.9


def test_group_labels_and_index_lists_are_the_same_grouping() -> None:
    G, y = problem("pima", False)
    labels = [7, 7, 3, 3, 3, 9, 9, 9, 7, 3]  # sorted labels 3, 7, 9 → groups 0, 1, 2
    lists = [[2, 3, 4, 9], [0, 1, 8], [5, 6, 7]]
    a = mk.MKLClassifier(kernels="precomputed", penalty="group", groups=labels).fit(G, y)
    b = mk.MKLClassifier(kernels="precomputed", penalty="group", groups=lists).fit(G, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.group_weights_, b.group_weights_)


@pytest.mark.parametrize(
    ("groups", "match"),
    [
        (None, "needs groups="),
        ([0] * 9, "9 ids for 10 kernels"),
        ([0.0] * 10, "integer group ids"),
        (["a"] * 10, "integer group ids"),
        ([True] * 10, "integer group ids"),
        ([[0, 1, 2, 3, 4], [], [5, 6, 7, 8, 9]], "group 1 of groups is empty"),
        ([[0, 1, 2, 3, 4], [4, 5, 6, 7, 8, 9]], "kernel 4 is in groups 0 and 1"),
        ([[0, 1, 2], [3, 4, 5, 6, 7, 8]], r"leaves kernels \[9\] out"),
        ([[0, 1, 2], [3, 4, 5, 6, 7, 8, 9, 10]], "outside 0..10"),
        ([[0, 1.5]], "must be integers"),
        ("0011", "a group id per kernel or a list of index lists"),
    ],
)
def test_invalid_groups_name_the_problem(groups: object, match: str) -> None:
    G, y = problem("pima", False)
    clf = mk.MKLClassifier(kernels="precomputed", penalty="group", groups=groups)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match=match) as e:
        clf.fit(G, y)
    assert e.value.parameter == "groups"


def test_groups_with_another_penalty_and_mirror_with_p_not_one_are_refused() -> None:
    G, y = problem("pima", False)
    with pytest.raises(ValueError, match="groups is used by penalty='group' only"):
        mk.MKLClassifier(kernels="precomputed", penalty="lp", groups=[0] * 10).fit(G, y)
    with pytest.raises(ValueError, match="p=1 only"):
        mk.MKLClassifier(kernels="precomputed", penalty="lp", p=2.0, solver="mirror").fit(G, y)
    with pytest.raises(ValueError, match="step"):
        mk.MirrorConfig(step="fast")  # type: ignore[arg-type]


def test_view_bank_builds_specs_and_groups() -> None:
    specs, groups = mk.kernels.view_bank(
        {"a": range(3), "b": [5]}, widths=[1.0, 4.0], degrees=[2], linear=True
    )
    assert groups == [0, 0, 0, 0, 1, 1, 1, 1]
    assert specs[0] == mk.kernels.Gaussian(sigma=1.0, features=(0, 1, 2))
    assert specs[2] == mk.kernels.Polynomial(degree=2, features=(0, 1, 2))
    assert specs[7] == mk.kernels.Linear(features=(5,))
    with pytest.raises(ValueError, match="view 'b' has no columns"):
        mk.kernels.view_bank({"a": [0], "b": []})
    with pytest.raises(ValueError, match="at least one view"):
        mk.kernels.view_bank({})
    with pytest.raises(ValueError, match="width"):
        mk.kernels.view_bank({"a": [0]}, widths=[-1.0])


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("seed", [0, 4])
def test_free_group_is_certified_at_tol_1e6(loss: str, seed: int) -> None:
    """A rank-one kernel alone in its group stalled mirror descent (γ_j → 0, θ = λ/γ_j → ∞):
    hinge fits took minutes, logistic ones stopped at gaps of 1e-5 to 3e-4. Its group is now
    fitted as an unpenalised block (docs/mathematics.md §4, "Free groups")."""
    G, y, groups, _ = free_group_problem(seed)
    r = fit(G, y, groups, loss=loss, C=10.0, tol=1e-6, max_iter=2000)
    assert r.converged, (r.status, r.gap, r.n_iter)
    assert r.n_iter < 500
    objective = cvxpy_mkl(G, y, C=10.0, loss=loss, penalty="group", groups=groups).objective
    A, b = np.asarray(r.coef), float(r.intercept)
    P = primal_objective(G, A, b, y, C=10.0, loss=loss, penalty="group", groups=groups)
    assert P == pytest.approx(r.primal, rel=1e-7)
    assert P == pytest.approx(objective, rel=1e-5)
    assert r.dual <= objective + 1e-6 * abs(objective)


@pytest.mark.parametrize("C", [4.64, 21.5])
def test_a_stalled_second_order_step_recovers_and_converges(C: float) -> None:
    """Liver (all 345 points, one group per variable plus one on all variables of the
    SimpleMKL bank, unit-trace kernels, hinge): at these C the second-order steps stalled at
    gaps 2e-2 and 1e-1 to ``max_iter`` before the driver's stall rule switched them to the
    adaptive step (docs/mathematics.md §1.9). The default fit must now converge, and
    agree with the adaptive step's fit within the two gaps."""
    X, y = load_dataset("liver_bupa")
    specs = mk.kernels.simplemkl_bank(n_features=X.shape[1])
    G = mk.kernels.gram(X, specs, normalize="trace")
    groups = [X.shape[1] if s.features is None else int(s.features[0]) for s in specs]

    def fitted(step: str) -> mk.MKLClassifier:
        cfg = mk.MirrorConfig(step=step)
        est = mk.MKLClassifier(
            kernels="precomputed", penalty="group", groups=groups, C=C, loss="hinge",
            solver_config=cfg,
        )  # fmt: skip
        return est.fit(G, y)

    default, adaptive = fitted("newton"), fitted("adaptive")
    for est in (default, adaptive):
        assert est.converged_ and est.duality_gap_ <= 1e-3
    # Both certified: each primal value lies above the other's dual value.
    assert default.primal_objective_ >= adaptive.dual_objective_ * (1 - 1e-12)
    assert adaptive.primal_objective_ >= default.dual_objective_ * (1 - 1e-12)
