"""The ``prox_newton`` solver (``l1`` / ``elasticnet`` / ``lp`` / ``group`` MKL on explicit
features by (proximal) Newton): its optimum is cvxpy + Clarabel's and that of the dense-stack
solvers (``mirror`` for ``group``) on the same features, its feature weights are the model
it reports, ``solver="auto"`` picks it on narrow feature blocks, and bad use is refused."""

from __future__ import annotations

import pickle
from functools import cache
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import (
    POLL_CPU_SECONDS,
    cpu_seconds,
    cpu_seconds_after_interrupt,
    solvers_called,
)
from reference import cvxpy_mkl, loss_value, primal_objective
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel import _core
from multikernel.exceptions import InvalidInputError, InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, Linear

FloatArray = NDArray[np.float64]


@cache
def cancer() -> tuple[FloatArray, FloatArray]:
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), np.where(y == 1, 1.0, -1.0)


@cache
def diabetes() -> tuple[FloatArray, FloatArray]:
    X, t = load_diabetes(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), (t - t.mean()) / t.std()


def linear_bank(n_features: int, groups: int) -> FeatureBank:
    cols = np.array_split(np.arange(n_features), groups)
    return FeatureBank([Linear(features=c.tolist()) for c in cols], normalize="none")


CASES = [
    ("logistic", "l1", 1.0),
    ("squared_hinge", "l1", 1.0),
    ("logistic", "elasticnet", 0.5),
    ("squared", "l1", 1.0),
    ("squared", "elasticnet", 0.3),
    ("hinge", "l1", 1.0),
    ("hinge", "elasticnet", 0.5),
    ("epsilon_insensitive", "l1", 1.0),
    ("epsilon_insensitive", "elasticnet", 0.3),
    # ℓp: the third entry is p.
    ("logistic", "lp", 2.0),
    ("squared", "lp", 4.0 / 3.0),
    ("squared_hinge", "lp", np.inf),
    ("hinge", "lp", 2.0),
    ("epsilon_insensitive", "lp", 4.0 / 3.0),
    # group (groups GROUPS): the third entry is not read.
    ("logistic", "group", 0.0),
    ("squared", "group", 0.0),
    ("hinge", "group", 0.0),
]

#: The groups of the five blocks of ``test_meets_cvxpy``'s ``group`` cases.
GROUPS = [0, 0, 1, 1, 2]

#: The hinge-type losses' continuation closes the gap about 3× per level of smoothing; 1e-7
#: keeps their cases to a few hundred steps.
TOL = {"hinge": 1e-7, "epsilon_insensitive": 1e-7}


def penalty_value(penalty: str, param: float, norms: FloatArray) -> float:
    """The penalty at the block norms (``param``: ``l1_ratio``, or ``p`` for ``lp``; the groups
    of ``group`` are :data:`GROUPS`)."""
    if penalty == "group":
        sums = np.bincount(GROUPS, weights=norms)
        return float(0.5 * sums.max() ** 2)
    if penalty == "lp":
        q = 2.0 if param == np.inf else 2 * param / (param + 1)
        return float(0.5 * np.sum(norms**q) ** (2 / q))
    r1, r2 = (1.0, 0.0) if penalty == "l1" else (param, 1.0 - param)
    return float(np.sum(r1 * norms + r2 / 2 * norms**2))


@pytest.mark.parametrize(("loss", "penalty", "param"), CASES)
def test_meets_cvxpy(loss: str, penalty: str, param: float) -> None:
    """On 120 points the objective is cvxpy's optimum and the model that the estimator
    predicts with has the reported objective (scored by the reference, not the engine); for
    the hinge-type losses, fitted through their smoothed versions, the certificate is the
    loss's own."""
    regression = loss in ("squared", "epsilon_insensitive")
    X, y = diabetes() if regression else cancer()
    X, y = X[:120], y[:120]
    bank = linear_bank(X.shape[1], 5)
    est = mk.MKLRegressor if regression else mk.MKLClassifier
    kw: dict[str, Any] = {"penalty": penalty, "C": 0.5}
    if penalty == "group":
        kw["groups"] = GROUPS
    else:
        kw["p" if penalty == "lp" else "l1_ratio"] = param
    tol = TOL.get(loss, 1e-9)
    fit = est(kernels=bank, loss=loss, solver="prox_newton", tol=tol, max_iter=2000, **kw)
    fit.fit(X, y)
    F = bank.fit_transform(X)
    G = np.stack([Fm @ Fm.T for Fm in F])
    ref = cvxpy_mkl(G, y, loss=loss, **kw)
    assert fit.duality_gap_ <= tol
    assert fit.dual_objective_ <= ref.objective * (1 + 1e-8)
    assert fit.primal_objective_ == pytest.approx(ref.objective, rel=max(tol, 1e-6))
    # The model: f = Σ_m Φ_m w_m + b with the reported weights, scored independently.
    f = sum(Fm @ wm for Fm, wm in zip(F, fit.coef_, strict=True)) + fit.intercept_
    got = fit.predict(X) if regression else fit.decision_function(X)
    np.testing.assert_allclose(got, f, rtol=1e-12, atol=1e-12)
    norms = np.array([np.linalg.norm(w) for w in fit.coef_])
    np.testing.assert_allclose(fit.kernel_norms_, norms, rtol=1e-12, atol=1e-14)
    P = 0.5 * np.sum(loss_value(loss, y, f)) + penalty_value(penalty, param, norms)
    assert fit.primal_objective_ == pytest.approx(P, rel=1e-10)


def test_lp_at_infinity_is_the_svm_on_all_features() -> None:
    """ℓp at ``p = ∞`` on linear blocks is the SVM on all the features: the decision function
    of scikit-learn's ``SVC(kernel="linear")`` (libsvm, an independent solver) at its own
    tight tolerance."""
    from sklearn.svm import SVC

    X, y = cancer()
    X, y = X[:200], y[:200]
    bank = linear_bank(X.shape[1], 6)
    ours = mk.MKLClassifier(kernels=bank, penalty="lp", p=np.inf, loss="hinge", C=0.3,
                            tol=1e-8, max_iter=2000, solver="prox_newton").fit(X, y)  # fmt: skip
    svc = SVC(kernel="linear", C=0.3, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(ours.decision_function(X), svc.decision_function(X), atol=2e-4)
    np.testing.assert_allclose(ours.kernel_weights_, 1.0)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_meets_the_dense_stack_fit(loss: str) -> None:
    """Its optimum equals that of the wrapper and SpicyMKL on the dense Gram matrices of the
    same features (each certified by its own gap), and its representer form ``dual_coef_``
    predicts as its feature weights do."""
    X, y = cancer()
    bank = linear_bank(X.shape[1], 6)
    ours = mk.MKLClassifier(kernels=bank, penalty="l1", loss=loss, C=2.0, tol=1e-9,
                            solver="prox_newton").fit(X, y)  # fmt: skip
    F = bank.fit_transform(X)
    G = np.stack([Fm @ Fm.T for Fm in F])
    for solver in ("wrapper", "spicy"):
        dense = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss=loss, C=2.0,
                                 tol=1e-9, solver=solver).fit(G, y)  # fmt: skip
        assert ours.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-6)
    # ``dual_coef_`` is kept as its factors (M copies of one vector scaled): predictions do
    # not form it, its first read does, and a pickled model forms the same.
    ours.decision_function(X)
    assert "dual_coef_" not in vars(ours)
    again = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(again.dual_coef_, ours.dual_coef_)
    assert ours.dual_coef_.shape == (len(F), len(y))
    f = np.einsum("mij,mj->i", G, ours.dual_coef_) + ours.intercept_
    np.testing.assert_allclose(f, ours.decision_function(X), atol=1e-4)
    P = primal_objective(G, ours.dual_coef_, ours.intercept_, y, C=2.0, loss=loss, penalty="l1")
    assert P == pytest.approx(ours.primal_objective_, rel=1e-5)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge"])
def test_group_meets_mirror_on_the_same_features(loss: str) -> None:
    """``group`` meets ``mirror`` (Nath et al.'s mirror descent on the kernels' space, an
    independent algorithm) on the same feature blocks: the same objective, and for the smooth
    losses the same kernel weights and group weights (mirror's convention), each certified by
    its own gap."""
    X, y = cancer()
    X, y = X[:300], y[:300]
    bank = linear_bank(X.shape[1], 6)
    groups = [0, 0, 1, 1, 2, 2]
    kw: dict[str, Any] = {"penalty": "group", "groups": groups, "loss": loss, "C": 1.0}
    tol = 1e-7
    ours = mk.MKLClassifier(kernels=bank, solver="prox_newton", tol=tol, max_iter=2000, **kw)
    ours.fit(X, y)
    F = [np.asarray(Fm) for Fm in bank.fit_transform(X)]
    G = np.stack([Fm @ Fm.T for Fm in F])
    ref = mk.MKLClassifier(kernels="precomputed", solver="mirror", tol=tol, max_iter=5000, **kw)
    ref.fit(G, y)
    assert ours.duality_gap_ <= tol
    assert ours.primal_objective_ >= ref.dual_objective_ * (1 - 1e-12)
    assert ref.primal_objective_ >= ours.dual_objective_ * (1 - 1e-12)
    if ref.duality_gap_ <= tol:
        assert ours.primal_objective_ == pytest.approx(ref.primal_objective_, rel=1e-6)
    if loss != "hinge":
        # The hinge's dual point is not unique on these rank-5 kernels, and the weights
        # read it (θ_jk = s_jk / max_k ‖Φ_kᵀρ‖): compared for the smooth losses.
        np.testing.assert_allclose(ours.kernel_weights_, ref.kernel_weights_, atol=1e-3)
        np.testing.assert_allclose(ours.group_weights_, ref.group_weights_, atol=1e-3)


def test_auto_picks_it_on_narrow_feature_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``solver="auto"``: prox_newton on blocks of total width ≤ n/2, ≤ n/4 for the hinge,
    the wrapper on wider blocks; the same optimum either way."""
    X, y = cancer()
    calls = solvers_called(monkeypatch)
    bank = linear_bank(X.shape[1], 5)
    a = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic", tol=1e-8).fit(X, y)
    h = mk.MKLClassifier(kernels=bank, penalty="l1", loss="hinge", tol=1e-6).fit(X, y)
    assert calls == ["prox_newton", "prox_newton"]
    calls.clear()
    # 30 features on 100 points: within half the points, wider than a quarter.
    mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic").fit(X[:100], y[:100])
    mk.MKLClassifier(kernels=bank, penalty="l1", loss="hinge").fit(X[:100], y[:100])
    t = X[:100, 0] + 0.5 * X[:100, 1]
    mk.MKLRegressor(kernels=bank, penalty="l1", loss="epsilon_insensitive").fit(X[:100], t)
    assert calls == ["prox_newton", "wrapper", "prox_newton"]
    calls.clear()
    # 30 features on 40 points: wider than half the points.
    mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic").fit(X[:40], y[:40])
    assert calls == ["wrapper"]
    b = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic", tol=1e-8, solver="wrapper")
    assert a.primal_objective_ == pytest.approx(b.fit(X, y).primal_objective_, rel=1e-7)
    w = mk.MKLClassifier(kernels=bank, penalty="l1", loss="hinge", tol=1e-6, solver="wrapper")
    assert h.primal_objective_ == pytest.approx(w.fit(X, y).primal_objective_, rel=2e-6)


def test_auto_picks_it_for_lp_on_narrow_feature_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``penalty="lp"`` under ``solver="auto"``: prox_newton on narrow blocks (the rule of
    ``l1``), Kloft's wrapper (``analytic``) on wider ones, with a ``solver_config`` of its own
    and at ``p = 1`` (mirror descent); the same optimum as the wrapper's."""
    X, y = cancer()
    calls = solvers_called(monkeypatch)
    bank = linear_bank(X.shape[1], 5)
    kw: dict[str, Any] = {"kernels": bank, "penalty": "lp", "tol": 1e-8}
    a = mk.MKLClassifier(p=2.0, loss="logistic", **kw).fit(X, y)
    h = mk.MKLClassifier(p=4.0 / 3.0, loss="hinge", **kw).fit(X, y)
    assert calls == ["prox_newton", "prox_newton"]
    calls.clear()
    mk.MKLClassifier(p=2.0, loss="hinge", **kw).fit(X[:100], y[:100])
    mk.MKLClassifier(p=2.0, loss="logistic", **kw).fit(X[:40], y[:40])
    mk.MKLClassifier(p=2.0, solver_config=mk.AnalyticConfig(), **kw).fit(X, y)
    mk.MKLClassifier(p=1.0, **kw).fit(X[:100], y[:100])
    assert calls == ["analytic", "analytic", "analytic", "mirror"]
    b = mk.MKLClassifier(p=2.0, loss="logistic", solver="analytic", **kw).fit(X, y)
    assert a.primal_objective_ == pytest.approx(b.primal_objective_, rel=1e-7)
    np.testing.assert_allclose(a.kernel_weights_, b.kernel_weights_, rtol=1e-3)
    w = mk.MKLClassifier(p=4.0 / 3.0, loss="hinge", solver="analytic", **kw).fit(X, y)
    assert h.primal_objective_ == pytest.approx(w.primal_objective_, rel=1e-7)


@pytest.mark.parametrize("scale", [1e-4, 1e3])
def test_the_hinge_converges_whatever_the_features_units(scale: float) -> None:
    """The smoothing continuation's damping follows each coordinate's curvature, so features
    in large or small units converge as standardised ones do, to SpicyMKL's optimum."""
    X, y = cancer()
    bank = linear_bank(X.shape[1], 5)
    kw: dict[str, Any] = {"kernels": bank, "penalty": "l1", "loss": "hinge", "C": 1.0,
                          "tol": 1e-6}  # fmt: skip
    ours = mk.MKLClassifier(**kw, solver="prox_newton").fit(scale * X, y)
    ref = mk.MKLClassifier(**kw, solver="spicy").fit(scale * X, y)
    assert ours.converged_ and ours.duality_gap_ <= 1e-6
    assert ours.primal_objective_ == pytest.approx(ref.primal_objective_, rel=2e-6)


def test_float32_blocks_and_factors() -> None:
    """float32 feature blocks give the float64 fit to float32 accuracy, and low-rank factors
    (``kernels.low_rank``) take the same solver."""
    X, y = cancer()
    bank = FeatureBank([Gaussian(sigma=4.0), Gaussian(sigma=8.0), Linear()], method="rff",
                       n_components=40, random_state=0)  # fmt: skip
    F = bank.fit_transform(X)
    kw: dict[str, Any] = {"penalty": "l1", "loss": "logistic", "solver": "prox_newton",
                          "tol": 1e-8, "kernels": "precomputed"}  # fmt: skip
    a = mk.MKLClassifier(**kw).fit([Fm.astype(np.float64) for Fm in F], y)
    b = mk.MKLClassifier(**kw).fit([Fm.astype(np.float32) for Fm in F], y)
    assert b.primal_objective_ == pytest.approx(a.primal_objective_, rel=1e-5)
    G = np.stack([Fm @ Fm.T for Fm in F])
    factors = mk.kernels.low_rank(G, tol=1e-12)
    c = mk.MKLClassifier(**kw).fit(factors, y)
    assert c.primal_objective_ == pytest.approx(a.primal_objective_, rel=1e-6)


def test_multiclass_one_vs_rest() -> None:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    labels = np.digitize(X[:, 0], [-0.5, 0.5])  # three classes
    bank = linear_bank(X.shape[1], 5)
    clf = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic", solver="prox_newton",
                           tol=1e-8).fit(X, labels)  # fmt: skip
    for k in range(3):
        yk = np.where(labels == k, 1.0, -1.0)
        one = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic",
                               solver="prox_newton", tol=1e-8).fit(X, yk)  # fmt: skip
        assert clf.primal_objective_[k] == pytest.approx(one.primal_objective_, rel=1e-9)
    assert clf.score(X, labels) > 0.9


@pytest.mark.parametrize("penalty", ["l1", "group"])
def test_max_iter_warns(penalty: str) -> None:
    X, y = cancer()
    bank = linear_bank(X.shape[1], 5)
    kw: dict[str, Any] = {"groups": [0, 0, 1, 1, 2]} if penalty == "group" else {}
    clf = mk.MKLClassifier(kernels=bank, penalty=penalty, loss="logistic", solver="prox_newton",
                           tol=1e-12, max_iter=1, C=10.0, **kw)  # fmt: skip
    with pytest.warns(ConvergenceWarning, match="did not reach tol"):
        clf.fit(X, y)
    assert clf.n_iter_ == 1 and clf.duality_gap_ > 1e-12
    assert clf.dual_objective_ <= clf.primal_objective_


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_the_iterations_are_the_newton_steps_and_every_certificate_is_recorded(loss: str) -> None:
    """``n_iter_`` counts Newton steps, and ``solver_iterations_`` says the same; the history
    also holds the start's certificate and, on the hinge, the points certified again at each
    lower smoothing level (issue 70: the counts agree)."""
    X, y = cancer()
    clf = mk.MKLClassifier(kernels=linear_bank(X.shape[1], 5), loss=loss, solver="prox_newton",
                           C=1.0, tol=1e-6).fit(X, y)  # fmt: skip
    assert clf.solvers_ == ("prox_newton",)
    assert clf.solver_iterations_ == (clf.n_iter_,)
    assert len(clf.history_) >= clf.n_iter_ + 1


def test_bad_use_is_refused() -> None:
    X, y = cancer()
    bank = linear_bank(X.shape[1], 2)
    with pytest.raises(InvalidParameterError, match="explicit features"):
        mk.MKLClassifier(penalty="l1", solver="prox_newton", loss="logistic").fit(X[:50], y[:50])
    with pytest.raises(InvalidParameterError, match="groups"):
        mk.MKLClassifier(kernels=bank, penalty="group", groups=[0, 1, 1], solver="prox_newton").fit(
            X[:50], y[:50]
        )
    # ℓp at p = 1 has no Newton step (½(Σ s_m)² is not differentiable at a zero block).
    with pytest.raises(InvalidParameterError, match=r"p must be in \(1, inf\]"):
        mk.MKLClassifier(kernels=bank, penalty="lp", p=1.0, solver="prox_newton").fit(
            X[:50], y[:50]
        )
    G = mk.kernels.gram(X[:50], [Linear(), Gaussian(sigma=4.0)])
    pre = mk.MKLClassifier(kernels="precomputed", penalty="l1", solver="prox_newton",
                           loss="logistic")  # fmt: skip
    with pytest.raises(InvalidInputError, match="list of feature blocks"):
        pre.fit(G, y[:50])
    with pytest.raises(InvalidParameterError, match="explicit features"):
        _core.fit(_core.Settings("prox_newton", {"loss": "logistic"}), G, y[:50])
    blocks = [np.array(F) for F in bank.fit_transform(X[:50])]
    blocks[1][3, 0] = np.nan
    with pytest.raises(ValueError, match="finite|NaN"):
        pre.fit(blocks, y[:50])


def test_ctrl_c_stops_it_quickly() -> None:
    rng = np.random.default_rng(0)
    n = 100_000
    F = [rng.normal(size=(n, 40)) for _ in range(10)]
    y = np.sign(F[0][:, 0] + 0.5 * rng.normal(size=n))
    settings = {"loss": "logistic", "tol": 1e-14, "max_iter": 10_000, "C": 1e4}
    after = cpu_seconds_after_interrupt(
        0.5, lambda: _core.fit(_core.Settings("prox_newton", settings), F, y)
    )
    # Within a Newton step of the Ctrl-C: less work than a fit of one step, set-up included.
    one = cpu_seconds(
        lambda: _core.fit(_core.Settings("prox_newton", {**settings, "max_iter": 1}), F, y)
    )
    assert after < one + POLL_CPU_SECONDS, (after, one)
