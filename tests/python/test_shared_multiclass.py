"""``multi_class="shared"``: one θ for all classes (docs/mathematics.md §3.8), against cvxpy."""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import free_group_problem
from reference import RefSolution, cvxpy_shared_mkl
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel._typing import LossName
from multikernel.exceptions import InvalidParameterError

TOL = 1e-7


@cache
def problem(n: int = 40) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Three classes, n = 40 (or ``n``), M = 4 kernels (three Gaussians and a linear one),
    unit mean diagonal."""
    rng = np.random.default_rng(0)
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
    ("kw", "parameter"),
    [
        ({"penalty": "l2"}, "penalty"),
        ({"penalty": "group", "groups": [0, 0, 1, 1], "solver": "mirror"}, "solver"),
        (
            {"penalty": "group", "groups": [0, 0, 1, 1], "solver_config": mk.MirrorConfig()},
            "solver_config",
        ),
        ({"penalty": "elasticnet", "solver": "analytic"}, "solver"),
        ({"solver": "interleaved"}, "solver"),
        ({"penalty": "l1", "solver": "spicy"}, "solver"),
        ({"penalty": "l1", "solver": "analytic"}, "solver"),
        ({"penalty": "l1", "solver_config": mk.AnalyticConfig()}, "solver_config"),
        ({"probability": True}, "probability"),
    ],
)
def test_refusals(kw: dict[str, object], parameter: str) -> None:
    G, y = problem()
    clf = mk.MKLClassifier(kernels="precomputed", multi_class="shared", **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="multi_class='shared'") as e:
        clf.fit(G, y)
    assert e.value.parameter == parameter
    if parameter == "penalty":
        for name in ("lp", "l1", "elasticnet", "group"):
            assert f"penalty={name!r}" in str(e.value)


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


# ``penalty="l1"``: Σ_m s_m, unsquared (docs/mathematics.md §0.2, §3.8).


@cache
def l1_reference(loss: str) -> RefSolution:
    G, y = problem()
    return cvxpy_shared_mkl(G, y, C=1.0, loss=loss, penalty="l1")


@cache
def l1_fit(loss: LossName, tol: float) -> mk.MKLClassifier:
    G, y = problem()
    clf = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty="l1", loss=loss, tol=tol,
        max_iter=1000,
    )  # fmt: skip
    return clf.fit(G, y)


@pytest.mark.parametrize(
    ("loss", "tol"), [("hinge", 1e-7), ("squared_hinge", 1e-7), ("logistic", 1e-5)]
)
def test_l1_equals_cvxpy(loss: LossName, tol: float) -> None:
    """The shared ``l1`` problem against cvxpy's (constraint ``‖(u_m^c)_c‖₂ ≤ t_m``,
    objective ``C Σ ℓ + Σ_m t_m``): the primal within the certified gap, ``D ≤ optimum ≤ P``,
    and the weights ``s / Σ s`` of the reference's norms (Clarabel ~1e-9). The logistic fit
    crawls as p = 1 does (§3.8: ~380 iterations to 1e-7), so it stops at 1e-5, where the
    flat objective leaves the weights ~5e-4 off."""
    clf, ref = l1_fit(loss, tol), l1_reference(loss)
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert clf.converged_ is True and float(clf.duality_gap_) <= tol
    assert abs(primal - ref.objective) <= tol * abs(ref.objective)
    slack = 1e-8 * abs(ref.objective)
    assert dual <= ref.objective + slack and ref.objective <= primal + slack
    atol = 1e-4 if tol <= 1e-7 else 2e-3
    np.testing.assert_allclose(clf.kernel_weights_, ref.norms / ref.norms.sum(), atol=atol)
    np.testing.assert_allclose(clf.kernel_weights_.sum(), 1.0, rtol=1e-12)


def test_the_reported_l1_model_has_the_reported_primal() -> None:
    """``P = C Σ_c Σ_i ℓ + Σ_m s_m`` recomputed from ``dual_coef_`` and ``intercept_``."""
    G, y = problem()
    clf = l1_fit("hinge", 1e-7)
    A, b = clf.dual_coef_, np.asarray(clf.intercept_)
    F = np.einsum("mij,kmj->ik", G, A) + b
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    s = np.sqrt(np.einsum("kmi,mij,kmj->m", A, G, A))
    P = float(np.maximum(0.0, 1.0 - Y * F).sum()) + float(s.sum())
    assert P == pytest.approx(clf.primal_objective_, rel=1e-10)
    np.testing.assert_allclose(clf.kernel_norms_, s, rtol=1e-8)
    np.testing.assert_allclose(clf.kernel_weights_, s / s.sum(), rtol=1e-8, atol=1e-15)


def test_l1_is_lp_at_p_1_at_C_times_the_norms() -> None:
    """§0.4 (6) for the shared problem: the ``l1`` optimum at C is the ``lp``, p = 1 optimum
    at ``C · Σ_m s_m`` (the same model), its ``½ (Σ s)²`` differing from ``Σ s`` in scale."""
    G, y = problem()
    l1 = l1_fit("hinge", 1e-7)
    S = float(l1.kernel_norms_.sum())
    lp = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", p=1.0, C=S, tol=1e-8, max_iter=1000
    ).fit(G, y)
    assert lp.converged_ is True
    f1, f2 = l1.decision_function(G), lp.decision_function(G)
    np.testing.assert_allclose(f1, f2, atol=1e-5 * np.abs(f1).max())
    np.testing.assert_allclose(l1.kernel_weights_, lp.kernel_weights_, atol=1e-5)
    np.testing.assert_allclose(l1.kernel_norms_, lp.kernel_norms_, atol=1e-5 * S)
    # lp's objective at C·S, evaluated at the l1 model: C·S·L + ½ S² = S (P_l1 − S) + ½ S².
    loss_l1 = float(l1.primal_objective_) - S
    assert S * loss_l1 + 0.5 * S * S == pytest.approx(lp.primal_objective_, rel=1e-6)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_working_sets_of_points_reach_the_whole_optimum(loss: LossName) -> None:
    """From 400 points on, each class of a hinge-type fit solves on its own working set of
    points (its support vectors and margin violators, grown until no other point violates
    optimality): the ``l1`` fit is certified on the whole problem, its ``P`` recomputed from the
    reported model, and it is the ``lp`` fit at p = 1 at ``C · Σ s`` (§0.4 (6))."""
    G, y = problem(450)
    kw: dict[str, object] = {"kernels": "precomputed", "multi_class": "shared", "loss": loss}
    l1 = mk.MKLClassifier(penalty="l1", tol=1e-7, max_iter=1000, **kw).fit(G, y)  # type: ignore[arg-type]
    assert l1.converged_ is True and float(l1.duality_gap_) <= 1e-7
    A, b = l1.dual_coef_, np.asarray(l1.intercept_)
    F = np.einsum("mij,kmj->ik", G, A) + b
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    margin = np.maximum(0.0, 1.0 - Y * F)
    data = float((margin if loss == "hinge" else 0.5 * margin**2).sum())
    S = float(np.sqrt(np.einsum("kmi,mij,kmj->m", A, G, A)).sum())
    assert data + S == pytest.approx(l1.primal_objective_, rel=1e-9)
    lp = mk.MKLClassifier(p=1.0, C=S, tol=1e-8, max_iter=1000, **kw).fit(G, y)  # type: ignore[arg-type]
    assert lp.converged_ is True
    f1, f2 = l1.decision_function(G), lp.decision_function(G)
    np.testing.assert_allclose(f1, f2, atol=1e-4 * np.abs(f1).max())
    np.testing.assert_allclose(l1.kernel_weights_, lp.kernel_weights_, atol=1e-4)


@pytest.mark.parametrize(("loss", "r"), [("hinge", 0.5), ("logistic", 0.5), ("squared_hinge", 0.9)])
def test_elasticnet_equals_cvxpy(loss: LossName, r: float) -> None:
    """``r Σ_m s_m + (1 − r)/2 Σ_m s_m²`` against cvxpy: the primal within the certified gap,
    ``D ≤ optimum ≤ P``, and the weights ``d / Σ d``, ``d_m = s_m / (r + (1 − r) s_m)`` (§2.9)
    of the reference's norms (the objective is flat in them: ~1e-4 apart at a 1e-7 gap)."""
    G, y = problem()
    ref = cvxpy_shared_mkl(G, y, C=1.0, loss=loss, penalty="elasticnet", l1_ratio=r)
    clf = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty="elasticnet", l1_ratio=r,
        loss=loss, tol=1e-7, max_iter=1000,
    ).fit(G, y)  # fmt: skip
    assert clf.converged_ is True
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert abs(primal - ref.objective) <= 1e-7 * abs(ref.objective)
    slack = 1e-8 * abs(ref.objective)
    assert dual <= ref.objective + slack and ref.objective <= primal + slack
    d = ref.norms / (r + (1 - r) * ref.norms)
    np.testing.assert_allclose(clf.kernel_weights_, d / d.sum(), atol=5e-4)


def test_elasticnet_at_ratio_1_is_l1() -> None:
    """§0.4 (5): ``l1_ratio = 1`` is ``l1``, the same iterates."""
    G, y = problem()
    l1 = l1_fit("hinge", 1e-7)
    en = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty="elasticnet", l1_ratio=1.0,
        tol=1e-7, max_iter=1000,
    ).fit(G, y)  # fmt: skip
    assert en.primal_objective_ == l1.primal_objective_
    assert en.dual_objective_ == l1.dual_objective_
    np.testing.assert_array_equal(en.dual_coef_, l1.dual_coef_)
    np.testing.assert_array_equal(en.kernel_weights_, l1.kernel_weights_)


# ``sample_weight`` and ``class_weight``: ``C Σ_c Σ_i w_i ℓ(y_i^c, f^c(x_i)) + Ω(s)`` (§0.2).


def weighted(
    penalty: str, G: NDArray[np.float64], y: NDArray[np.int64], **kw: object
) -> mk.MKLClassifier:
    clf = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty=penalty,  # type: ignore[arg-type]
        p=2.0, tol=1e-8 if penalty == "l1" else 1e-9, max_iter=1000,
        groups=GROUPS if penalty == "group" else None,
    )  # fmt: skip
    return clf.fit(G, y, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("penalty", "wtol", "ftol"), [("lp", 1e-7, 1e-6), ("l1", 1e-7, 1e-6), ("group", 1e-6, 1e-5)]
)
def test_integer_weights_are_duplicated_rows(penalty: str, wtol: float, ftol: float) -> None:
    """Weights 0, 1, 2 against the stack with each row repeated that many times (rows of
    weight 0 dropped): the same problem, so the same primal, θ and decision values."""
    G, y = problem()
    w = np.random.default_rng(5).integers(0, 3, size=len(y)).astype(np.float64)
    idx = np.repeat(np.arange(len(y)), w.astype(np.int64))
    a = weighted(penalty, G, y, sample_weight=w)
    b = weighted(penalty, np.ascontiguousarray(G[:, idx][:, :, idx]), y[idx])
    assert a.converged_ is True and b.converged_ is True
    assert a.primal_objective_ == pytest.approx(b.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(a.kernel_weights_, b.kernel_weights_, atol=wtol)
    fa, fb = a.decision_function(G), b.decision_function(np.ascontiguousarray(G[:, :, idx]))
    np.testing.assert_allclose(fa, fb, atol=ftol * np.abs(fa).max())
    # Samples of weight 0 are out of the fit: their coefficients are 0.
    np.testing.assert_array_equal(a.dual_coef_[:, :, w == 0], 0.0)


def test_zero_weight_is_dropping_the_sample() -> None:
    G, y = problem()
    w = np.ones(len(y))
    w[[3, 17, 28]] = 0.0
    keep = np.flatnonzero(w > 0)
    a = weighted("lp", G, y, sample_weight=w)
    b = weighted("lp", np.ascontiguousarray(G[:, keep][:, :, keep]), y[keep])
    assert a.primal_objective_ == pytest.approx(b.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(a.dual_coef_[:, :, keep], b.dual_coef_, atol=1e-6)
    np.testing.assert_allclose(a.kernel_weights_, b.kernel_weights_, atol=1e-7)


def test_balanced_class_weight_is_its_explicit_weights() -> None:
    """``class_weight="balanced"`` is ``n / (K n_k)`` on the samples of class ``k``, times
    ``sample_weight``: bit-identical to passing the product."""
    G, y = problem()
    counts = np.bincount(y)
    sw = np.random.default_rng(6).uniform(0.5, 2.0, size=len(y))
    explicit = sw * (len(y) / (3 * counts))[y]
    a = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", class_weight="balanced", tol=1e-6
    ).fit(G, y, sample_weight=sw)
    b = mk.MKLClassifier(kernels="precomputed", multi_class="shared", tol=1e-6).fit(
        G, y, sample_weight=explicit
    )
    assert a.primal_objective_ == b.primal_objective_
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.kernel_weights_, b.kernel_weights_)
    # And the weights matter: the unweighted fit is another problem.
    c = mk.MKLClassifier(kernels="precomputed", multi_class="shared", tol=1e-6).fit(G, y)
    assert abs(float(c.primal_objective_) - float(a.primal_objective_)) > 1e-3


@pytest.mark.parametrize(("penalty", "loss"), [("lp", "logistic"), ("l1", "hinge")])
def test_weighted_equals_cvxpy(penalty: str, loss: LossName) -> None:
    """Real weights (not a duplication) against cvxpy's weighted shared problem, p = 4/3."""
    G, y = problem()
    w = np.random.default_rng(7).uniform(0.2, 3.0, size=len(y))
    ref = cvxpy_shared_mkl(G, y, C=1.0, loss=loss, p=4.0 / 3.0, penalty=penalty, sample_weight=w)
    clf = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty=penalty,  # type: ignore[arg-type]
        loss=loss, p=4.0 / 3.0, tol=1e-7, max_iter=1000,
    ).fit(G, y, sample_weight=w)  # fmt: skip
    assert clf.converged_ is True
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert abs(primal - ref.objective) <= 1e-6 * abs(ref.objective)
    slack = 1e-8 * abs(ref.objective)
    assert dual <= ref.objective + slack and ref.objective <= primal + slack


# ``penalty="group"``: ½ max_j (Σ_{k∈G_j} s_k)² on the block norms over the classes, by
# mirror descent over the groups' simplexes (docs/mathematics.md §1.5, §4, §3.8).

GROUPS = [0, 0, 1, 1]


def group_fit(
    G: NDArray[np.float64], y: NDArray[np.int64], groups: list[int], **kw: object
) -> mk.MKLClassifier:
    settings: dict[str, object] = {"tol": 1e-7, "max_iter": 1000, **kw}
    clf = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty="group", groups=groups,
        **settings,  # type: ignore[arg-type]
    )  # fmt: skip
    return clf


def within_group(theta: NDArray[np.float64], groups: list[int]) -> NDArray[np.float64]:
    """λ from θ: each group's weights on its simplex (θ_jk = λ_jk/γ_j, Σ_k λ_jk = 1)."""
    ids = np.asarray(groups)
    sums = np.bincount(ids, weights=theta)[ids]
    return np.divide(theta, sums, out=np.zeros_like(theta), where=sums > 0)


@pytest.mark.parametrize(
    ("loss", "groups"),
    [
        ("hinge", GROUPS),
        ("logistic", GROUPS),
        ("squared_hinge", [0, 1, 0, 1]),
        ("hinge", [0, 1, 2, 3]),
    ],
)
def test_group_equals_cvxpy(loss: LossName, groups: list[int]) -> None:
    """The shared group problem against cvxpy's (constraint ``‖(u_m^c)_c‖₂ ≤ t_m``, penalty
    ``½ max_j (Σ_{k∈G_j} t_k)²``): the primal within the certified gap, ``D ≤ optimum ≤ P``,
    the block norms, within each group the weights ``λ_jk = s_k / Σ_{k∈G_j} s_k`` of the
    reference's norms, and equal group sums (every group is at the max here)."""
    G, y = problem()
    ref = cvxpy_shared_mkl(G, y, C=1.0, loss=loss, penalty="group", groups=groups)
    clf = group_fit(G, y, groups, loss=loss).fit(G, y)
    assert clf.converged_ is True and float(clf.duality_gap_) <= 1e-7
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert abs(primal - ref.objective) <= 1e-7 * abs(ref.objective)
    slack = 1e-8 * abs(ref.objective)
    assert dual <= ref.objective + slack and ref.objective <= primal + slack
    scale = float(ref.norms.max())
    np.testing.assert_allclose(clf.kernel_norms_, ref.norms, atol=1e-4 * scale)
    lam_ref = within_group(ref.norms, groups)
    np.testing.assert_allclose(within_group(clf.kernel_weights_, groups), lam_ref, atol=1e-4)
    np.testing.assert_allclose(clf.kernel_weights_.sum(), 1.0, rtol=1e-12)
    sums = np.bincount(np.asarray(groups), weights=clf.kernel_norms_)
    np.testing.assert_allclose(sums, sums.max(), rtol=1e-4)
    assert clf.group_weights_.shape == (max(groups) + 1,)


def test_the_reported_group_model_has_the_reported_primal() -> None:
    """``P = C Σ_c Σ_i ℓ + ½ max_j (Σ_{k∈G_j} s_k)²`` recomputed from ``dual_coef_`` and
    ``intercept_``, with ``A[c, m] = θ_m β_c`` for one θ ∝ ``kernel_weights_``."""
    G, y = problem()
    clf = group_fit(G, y, GROUPS).fit(G, y)
    A, b = clf.dual_coef_, np.asarray(clf.intercept_)
    F = np.einsum("mij,kmj->ik", G, A) + b
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    s = np.sqrt(np.einsum("kmi,mij,kmj->m", A, G, A))
    P = float(np.maximum(0.0, 1.0 - Y * F).sum()) + 0.5 * max(s[:2].sum(), s[2:].sum()) ** 2
    assert P == pytest.approx(clf.primal_objective_, rel=1e-10)
    np.testing.assert_allclose(clf.kernel_norms_, s, rtol=1e-8)
    theta = clf.kernel_weights_
    m = int(np.argmax(theta))
    beta = A[:, m] / theta[m]
    np.testing.assert_allclose(A, theta[None, :, None] * beta[:, None, :], atol=1e-12)
    # γ_j ∝ 1 / Σ_{k∈G_j} θ_jk (λ sums to one in every group, §4).
    gamma = 1.0 / np.array([theta[:2].sum(), theta[2:].sum()])
    np.testing.assert_allclose(clf.group_weights_, gamma / gamma.sum(), rtol=1e-12)


def test_one_group_is_lp_at_p_1() -> None:
    """§0.4 (3): one group of every kernel is ``½ (Σ_m s_m)²``, the ``lp`` penalty at p = 1:
    the fit meets cvxpy's shared ``lp`` optimum at p = 1 and its weights ``s / Σ s``."""
    G, y = problem()
    ref = cvxpy_shared_mkl(G, y, C=1.0, loss="hinge", p=1.0)
    clf = group_fit(G, y, [0, 0, 0, 0], tol=1e-6).fit(G, y)
    assert clf.converged_ is True
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert abs(primal - ref.objective) <= 1e-6 * abs(ref.objective)
    slack = 1e-8 * abs(ref.objective)
    assert dual <= ref.objective + slack and ref.objective <= primal + slack
    np.testing.assert_allclose(clf.kernel_weights_, ref.norms / ref.norms.sum(), atol=1e-3)


def test_two_classes_are_the_binary_group_fit() -> None:
    """With two classes the estimator fits the binary problem (bit-identical), and the
    shared loop itself on the targets ``(y, −y)`` solves the same problem twice over: by
    symmetry ``f² = −f¹``, so ``s_m = √2 ‖f_m¹‖`` and, Ω being 2-homogeneous,
    ``P_shared = 2 P_binary``; the engine's mirror solver is the independent reference."""
    from multikernel._shared import fit_shared

    G, y = problem()
    two = y < 2
    G2 = np.ascontiguousarray(G[:, two][:, :, two])
    y2 = y[two]
    kw = {"kernels": "precomputed", "penalty": "group", "groups": GROUPS, "tol": 1e-8}
    shared = mk.MKLClassifier(multi_class="shared", **kw).fit(G2, y2)  # type: ignore[arg-type]
    binary = mk.MKLClassifier(max_iter=1000, **kw).fit(G2, y2)  # type: ignore[arg-type]
    assert binary.converged_ is True
    assert shared.primal_objective_ == binary.primal_objective_
    np.testing.assert_array_equal(shared.dual_coef_, binary.dual_coef_)
    yb = np.where(y2 == 1, 1.0, -1.0)
    settings = {"C": 1.0, "loss": "hinge", "tol": 1e-8, "max_iter": 1000, "inner_tol": 1e-7}
    r = fit_shared(
        G2, np.stack([yb, -yb]), settings, penalty="group", p=1.0, groups=GROUPS, n_threads=1
    )  # type: ignore[arg-type]
    assert r.converged is True
    P = float(binary.primal_objective_)
    assert r.primal == pytest.approx(2.0 * P, rel=2e-8)
    assert r.dual <= 2.0 * P * (1 + 1e-8)
    f_shared = np.einsum("mij,mj->i", G2, r.coef[0]) + float(np.asarray(r.intercept)[0])
    f_binary = binary.decision_function(G2)
    np.testing.assert_allclose(f_shared, f_binary, atol=1e-4 * np.abs(f_binary).max())
    np.testing.assert_allclose(r.kernel_weights, binary.kernel_weights_, atol=1e-4)


def test_group_weighted_equals_cvxpy() -> None:
    """Real weights against cvxpy's weighted shared group problem (logistic)."""
    G, y = problem()
    w = np.random.default_rng(7).uniform(0.2, 3.0, size=len(y))
    ref = cvxpy_shared_mkl(
        G, y, C=1.0, loss="logistic", penalty="group", groups=GROUPS, sample_weight=w
    )
    clf = group_fit(G, y, GROUPS, loss="logistic").fit(G, y, sample_weight=w)
    assert clf.converged_ is True
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert abs(primal - ref.objective) <= 1e-7 * abs(ref.objective)
    slack = 1e-8 * abs(ref.objective)
    assert dual <= ref.objective + slack and ref.objective <= primal + slack


def test_group_max_iter_warns() -> None:
    G, y = problem()
    with pytest.warns(ConvergenceWarning, match="shared"):
        clf = group_fit(G, y, GROUPS, max_iter=2).fit(G, y)
    assert clf.converged_ is False and clf.n_iter_ == 2


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("seed", [0, 4])
def test_shared_free_group_is_certified_at_tol_1e6(loss: LossName, seed: int) -> None:
    """Issue 56's stall in the shared fit: the rank-one kernel alone in its group, three
    classes (the score's tertiles). The free groups, one block per class, certify it at 1e-6
    (docs/mathematics.md §3.8), at cvxpy's optimum."""
    G, _, groups, score = free_group_problem(seed)
    y = np.searchsorted(np.quantile(score, [1 / 3, 2 / 3]), score)
    clf = mk.MKLClassifier(
        kernels="precomputed", multi_class="shared", penalty="group", groups=list(groups),
        loss=loss, C=10.0, tol=1e-6, max_iter=2000,
    ).fit(G, y)  # fmt: skip
    assert clf.converged_ is True, (clf.duality_gap_, clf.n_iter_)
    ref = cvxpy_shared_mkl(G, y, C=10.0, loss=loss, penalty="group", groups=groups)
    primal, dual = float(clf.primal_objective_), float(clf.dual_objective_)
    assert primal == pytest.approx(ref.objective, rel=1e-5)
    assert dual <= ref.objective + 1e-6 * abs(ref.objective)
