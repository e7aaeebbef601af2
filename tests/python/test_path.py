"""Regularization paths (Bach, Thibaux & Jordan; ``mkl_path``) against independent references:
points along the path against cvxpy + Clarabel at the same C (weighted block-ℓ1, no intercept),
the active kernels against cvxpy's, the active sets at and between kinks against SpicyMKL's
(squared loss on centred kernels and targets, where its intercept is provably zero), f = 0
below C0 (closed form), the identity
``mkl_path`` with weights d = the path on kernels K_j/d_j² with unit weights, prediction from
specs against the precomputed cross kernels, and the validation of every argument."""

from __future__ import annotations

import logging
import warnings
from functools import cache
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import (
    POLL_CPU_SECONDS,
    cpu_seconds,
    cpu_seconds_after_interrupt,
    expected_failures,
    small_problem,
)
from reference import cvxpy_mkl, loss_value
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.utils import shuffle
from sklearn.utils.estimator_checks import parametrize_with_checks

import multikernel as mk
from multikernel.exceptions import InvalidInputError, InvalidParameterError

FloatArray = NDArray[np.float64]


@cache
def problem(loss: str) -> tuple[FloatArray, FloatArray]:
    if loss == "logistic":
        return small_problem("ionosphere", False, n=50, seed=2)
    return small_problem("liver_bupa", True, n=50, seed=2)


@cache
def full_path(loss: str) -> mk.MKLPath:
    G, y = problem(loss)
    return mk.mkl_path(G, y, loss=loss)  # type: ignore[arg-type]


def path_objective(G: FloatArray, y: FloatArray, A: FloatArray, C: float, d: FloatArray,
                   loss: str) -> float:  # fmt: skip
    """``C Σ ℓ(y, f) + Σ d_j ‖f_j‖`` recomputed from the coefficients."""
    f = np.einsum("mij,mj->i", G, A)
    norms = np.sqrt(np.maximum(np.einsum("mi,mij,mj->m", A, G, A), 0.0))
    return float(C * loss_value(loss, y, f).sum() + d @ norms)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_points_match_cvxpy_within_their_gap(loss: str) -> None:
    G, y = problem(loss)
    path = full_path(loss)
    assert path.end == "complete"
    assert np.all(np.diff(path.Cs) > 0)
    assert path.Cs[-1] == pytest.approx(1e3 * path.C0)
    # The weighted penalty is the unweighted one on K_j / d_j².
    Gw = G / (path.d**2)[:, None, None]
    for k in np.linspace(0, len(path.Cs) - 1, 5).astype(int)[1:]:
        C = float(path.Cs[k])
        ref = cvxpy_mkl(Gw, y, C=C, loss=loss, penalty="l1", intercept=False)
        P = path.primal_objectives[k]
        # P is recomputed from the coefficients, and certified: D ≤ optimum ≤ P.
        assert P == pytest.approx(path_objective(G, y, path.dual_coefs[k], C, path.d, loss),
                                  rel=1e-9)  # fmt: skip
        assert path.dual_objectives[k] <= ref.objective * (1 + 1e-7) + 1e-9
        assert P >= ref.objective * (1 - 1e-7) - 1e-9
        assert (P - ref.objective) / abs(ref.objective) <= path.duality_gaps[k] + 1e-7
        # μ follows P: the relative gap is within tol at every point.
        assert path.mu is None
        assert path.duality_gaps[k] <= path.tol


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_every_gap_is_within_tol_and_a_fixed_mu_is_kept(loss: str) -> None:
    G, y = problem(loss)
    for tol in (1e-2, 1e-4):
        path = mk.mkl_path(G, y, loss=loss, tol=tol)  # type: ignore[arg-type]
        assert path.end == "complete" and path.mu is None and path.tol == tol
        assert np.all(path.duality_gaps <= tol) and np.all(path.duality_gaps >= -1e-9)
        assert path.mus.max() > 2 * path.mus.min()  # μ follows P along the path
        # Each certificate is that of the reported model (idle kernels have η = 0 in it).
        for k in (0, len(path.Cs) // 2, len(path.Cs) - 1):
            C = float(path.Cs[k])
            P = path_objective(G, y, path.dual_coefs[k], C, path.d, loss)
            assert path.primal_objectives[k] == pytest.approx(P, rel=1e-9)
    fixed = mk.mkl_path(G, y, loss=loss, mu=1e-3)  # type: ignore[arg-type]
    assert fixed.mu == 1e-3 and np.all(fixed.mus == 1e-3)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_active_kernels_match_cvxpy(loss: str) -> None:
    G, y = problem(loss)
    path = mk.mkl_path(G, y, loss=loss, mu=1e-5)  # type: ignore[arg-type]
    Gw = G / (path.d**2)[:, None, None]
    for k in (len(path.Cs) // 2, len(path.Cs) - 1):
        C = float(path.Cs[k])
        ref = cvxpy_mkl(Gw, y, C=C, loss=loss, penalty="l1", intercept=False)
        ours = path.kernel_norms[k] * path.d  # ‖f_j‖ in the unit-weight problem on K_j/d_j²
        big = ref.norms > 1e-3 * ref.norms.max()
        small = ref.norms < 1e-6 * ref.norms.max()
        assert np.all(ours[big] > 1e-3 * ours.max()), (ours, ref.norms)
        assert np.all(ours[small] < 1e-2 * ours.max()), (ours, ref.norms)


def test_active_sets_at_the_kinks_match_spicymkl_on_centred_data() -> None:
    """Squared loss on centred kernels and targets: every ``f_j = K_j a`` has mean zero, so
    SpicyMKL's optimal intercept is ``mean(y) = 0`` and its l1 problem is the path's (d = 1)."""
    G, y = problem("squared")
    n, M = G.shape[1], G.shape[0]
    H = np.eye(n) - 1.0 / n
    Gc, yc = H @ G @ H, y - y.mean()
    path = mk.mkl_path(Gc, yc, d=np.ones(M), tol=1e-4)
    # The path's active sets by its kink rule: slack d² − αᵀK_jα below sqrt(μ)·d².
    slack = 1.0 - np.einsum("pi,mij,pj->pm", path.alphas, Gc, path.alphas)
    active = slack < np.sqrt(path.mus)[:, None]
    kinks = [k for k in path.kinks if path.Cs[k] > path.C0]
    assert len(kinks) >= 3
    ends = [*kinks, len(path.Cs)]
    between = [(a + b) // 2 for a, b in zip(ends, ends[1:], strict=False) if b - a >= 2]
    for k in kinks + between:
        ref = mk.MKLRegressor(
            kernels="precomputed", penalty="l1", loss="squared", C=float(path.Cs[k]), tol=1e-6
        ).fit(Gc, yc)
        assert abs(ref.intercept_) < 1e-8
        spicy = ref.kernel_weights_ > 0
        # At a kink only the kernels entering or leaving there (at zero) may differ; between
        # kinks the sets are equal.
        changed = (active[k] != active[k - 1]) if k in kinks else np.zeros(M, dtype=bool)
        assert np.all((active[k] == spicy) | changed), (k, active[k], spicy)


def test_weights_are_kernel_rescalings() -> None:
    G, y = problem("squared")
    d = np.linspace(0.5, 2.0, G.shape[0])
    weighted = mk.mkl_path(G, y, d=d, C_max=50.0)
    unit = mk.mkl_path(G / (d**2)[:, None, None], y, d=np.ones(G.shape[0]), C_max=50.0)
    np.testing.assert_allclose(weighted.C0, unit.C0, rtol=1e-10)
    np.testing.assert_allclose(weighted.Cs, unit.Cs, rtol=1e-6)
    np.testing.assert_allclose(weighted.primal_objectives, unit.primal_objectives, rtol=1e-6)


def test_zero_below_c0_and_interpolation() -> None:
    G, y = problem("squared")
    path = full_path("squared")
    # C0 in closed form: min_j d_j / ‖y‖_{K_j} (β = −y for the squared loss).
    c0 = np.min(path.d / np.sqrt(np.einsum("i,mij,j->m", y, G, y)))
    assert path.C0 == pytest.approx(c0, rel=1e-10)
    assert path.Cs[0] == pytest.approx(c0 / 2, rel=1e-12)
    assert not np.any(path.coef_at(0.49 * c0))
    # Up to C0 the barrier's points are tiny: f = 0 is the exact solution there.
    below = path.Cs < c0
    assert np.abs(path.kernel_norms[below]).max() < 10 * path.mus[below].max()
    np.testing.assert_array_equal(path.coef_at(float(path.Cs[7])), path.dual_coefs[7])
    mid = float(np.sqrt(path.Cs[7] * path.Cs[8]))
    np.testing.assert_allclose(path.coef_at(mid), 0.5 * (path.dual_coefs[7] + path.dual_coefs[8]))
    np.testing.assert_array_equal(path.coef_at(1e9), path.dual_coefs[-1])


def test_specs_predict_like_the_precomputed_stack() -> None:
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    specs: list[mk.kernels.Kernel] = [
        mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(4) for s in (1.0, 3.0)
    ]
    path = mk.mkl_path(X[:80], y[:80], kernels=specs, C_max=20.0)
    bank = mk.kernels.KernelBank(specs, normalize="mean_diag").fit(X[:80])
    pre = mk.mkl_path(bank.transform(X[:80]), y[:80], kernels="precomputed", C_max=20.0)
    np.testing.assert_allclose(path.Cs, pre.Cs)
    f = path.decision_function(X[80:100], 5.0)
    np.testing.assert_allclose(f, pre.decision_function(bank.transform(X[80:100]), 5.0))
    np.testing.assert_array_equal(path.predict(X[80:100], 5.0), f)
    # A model that learned something: better than predicting 0 on held-out points.
    assert np.mean((f - y[80:100]) ** 2) < np.mean(y[80:100] ** 2)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_low_rank_factors_follow_the_dense_path(loss: str) -> None:
    """Factors of total rank R < n: the Newton systems are R × R (Woodbury), and the path is
    the one of the dense stack G Gᵀ: the same points, objectives within the certificates, and
    the same predictions; the factorisation at rank n is what the dense path does."""
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    n = 120
    target = (y[:n] - y[:n].mean()) / y[:n].std() if loss == "squared" else y[:n] > 140
    specs: list[mk.kernels.Kernel] = [
        mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(5) for s in (1.0, 3.0)
    ]
    bank = mk.kernels.KernelBank(specs, normalize="mean_diag").fit(X[:n])
    lr = mk.kernels.low_rank(bank.transform(X[:n]), tol=1e-10, max_rank=6)
    assert int(lr.ranks.sum()) < n  # the low-rank branch
    G = np.ascontiguousarray(np.stack([f @ f.T for f in lr.factors]))
    low = mk.mkl_path(lr, target, loss=loss, C_max=50.0)  # type: ignore[arg-type]
    dense = mk.mkl_path(G, target, kernels="precomputed", loss=loss, C_max=50.0)  # type: ignore[arg-type]
    np.testing.assert_allclose(low.Cs, dense.Cs, rtol=1e-6)
    slack = (low.primal_objectives - low.dual_objectives) + (
        dense.primal_objectives - dense.dual_objectives
    )
    assert np.all(np.abs(low.primal_objectives - dense.primal_objectives) <= slack + 1e-10)
    Gt = bank.transform(X[n : n + 30])
    np.testing.assert_allclose(
        low.decision_function(Gt, 10.0), dense.decision_function(Gt, 10.0), rtol=1e-4, atol=1e-6
    )
    with pytest.raises(InvalidParameterError, match="kernels"):
        mk.mkl_path(lr, target, kernels=specs, loss=loss)  # type: ignore[arg-type]
    bad = mk.kernels.LowRankFactors(
        [lr.factors[0], lr.factors[1][:-1]], lr.ranks[:2], lr.errors[:2]
    )
    with pytest.raises(InvalidInputError, match="factor 1 must have shape"):
        mk.mkl_path(bad, target, loss=loss)  # type: ignore[arg-type]
    nan = mk.kernels.LowRankFactors([lr.factors[0] * np.nan], lr.ranks[:1], lr.errors[:1])
    with pytest.raises(InvalidInputError, match="NaN"):
        mk.mkl_path(nan, target, loss=loss)  # type: ignore[arg-type]


def test_logistic_labels_and_predict() -> None:
    G, y = problem("logistic")
    labels = np.where(y > 0, "yes", "no")
    path = mk.mkl_path(G, labels, loss="logistic", C_max=10 * full_path("logistic").C0)
    assert path.classes is not None
    assert list(path.classes) == ["no", "yes"]
    C = float(path.Cs[-1])
    pred = path.predict(G, C)
    assert np.mean(pred == labels) > 0.8


def test_max_points_warns_and_keeps_the_points() -> None:
    G, y = problem("squared")
    with pytest.warns(ConvergenceWarning, match="max_points=4"):
        path = mk.mkl_path(G, y, max_points=4)
    assert path.end == "max_points"
    assert len(path.Cs) == 4
    assert np.all(np.isfinite(path.primal_objectives))


def test_verbose_logs_one_line_per_point(caplog: pytest.LogCaptureFixture) -> None:
    G, y = problem("squared")
    with caplog.at_level(logging.INFO, logger="multikernel"):
        path = mk.mkl_path(G, y, C_max=20.0, verbose=1)
    lines = [r for r in caplog.records if "mkl_path point" in r.getMessage()]
    assert len(lines) == len(path.Cs)


def test_bad_input_is_refused() -> None:
    G, y = problem("squared")
    with pytest.raises(InvalidParameterError, match="loss"):
        mk.mkl_path(G, y, loss="hinge")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="C_max"):
        mk.mkl_path(G, y, C_max=1e-12)
    with pytest.raises(InvalidParameterError, match="mu"):
        mk.mkl_path(G, y, mu=0.0)
    with pytest.raises(InvalidParameterError, match="tol"):
        mk.mkl_path(G, y, tol=0.0)
    with pytest.raises(InvalidParameterError, match="d"):
        mk.mkl_path(G, y, d=np.ones(3))
    with pytest.raises(InvalidParameterError, match="d"):
        mk.mkl_path(G, y, d=-np.ones(G.shape[0]))
    with pytest.raises(InvalidParameterError, match="max_points"):
        mk.mkl_path(G, y, max_points=1)
    with pytest.raises(InvalidInputError, match="two classes"):
        mk.mkl_path(G, np.arange(len(y)) % 3, loss="logistic")
    with pytest.raises(InvalidInputError, match="one entry per training point"):
        mk.mkl_path(G, y[:-1])
    with pytest.raises(InvalidParameterError, match="C must be"):
        full_path("squared").coef_at(-1.0)
    bad = G.copy()
    bad[0] = -bad[0]  # negative definite: no barrier
    with pytest.raises(ValueError, match="positive semi-definite"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mk.mkl_path(bad, y)


@parametrize_with_checks(  # type: ignore[untyped-decorator]
    [mk.MKLClassifierCV(Cs=4, cv=3), mk.MKLRegressorCV(Cs=4, cv=3)],
    expected_failed_checks=expected_failures,
)
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "sample_weight"])
def test_cv_scores_match_cvxpy_fits_at_each_candidate(weighted: bool) -> None:
    """Every held-out score is the scorer's on cvxpy's fit at that C (with ``sample_weight``:
    the bank's statistics, the offset, the loss and the R² weighted), and the refit is the
    l1 estimator at ``C_`` with the same weights."""
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:60], (y[:60] - y[:60].mean()) / y[:60].std()
    w = np.random.default_rng(4).uniform(0.2, 3.0, size=60) if weighted else None
    specs: list[mk.kernels.Kernel] = [
        mk.kernels.Gaussian(sigma=0.1, features=[j]) for j in (0, 2, 3, 8)
    ]
    cv = [(np.arange(20, 60), np.arange(20)), (np.arange(40), np.arange(40, 60))]
    reg = mk.MKLRegressorCV(kernels=specs, Cs=[0.3, 1.0, 3.0], cv=cv, mu=1e-5)
    reg.fit(X, y, sample_weight=w)
    for k, (tr, te) in enumerate(cv):
        wtr, wte = (None, None) if w is None else (w[tr], w[te])
        bank = mk.kernels.KernelBank(specs, normalize="mean_diag")
        G = bank.fit_transform(X[tr], sample_weight=wtr)
        G_te = bank.transform(X[te])
        offset = np.average(y[tr], weights=wtr)
        for i, C in enumerate(reg.Cs_):
            ref = cvxpy_mkl(G, y[tr] - offset, C=C, loss="squared", penalty="l1",
                            intercept=False, sample_weight=wtr)  # fmt: skip
            f = np.einsum("mij,mj->i", G_te, ref.A) + offset
            r2 = r2_score(y[te], f, sample_weight=wte)
            assert reg.scores_[k, i] == pytest.approx(r2, abs=1e-3)
    assert reg.C_ == reg.Cs_[np.argmax(reg.scores_.mean(axis=0))]
    # The refit is the l1 estimator at C_.
    direct = mk.MKLRegressor(kernels=specs, penalty="l1", loss="squared", C=reg.C_)
    direct.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(reg.dual_coef_, direct.dual_coef_)
    np.testing.assert_allclose(reg.predict(X[:5]), direct.predict(X[:5]))


def test_cv_classifier_zero_weights_equal_dropping_the_samples() -> None:
    """``MKLClassifierCV(sample_weight=)`` with weights 0: the folds' paths, the held-out
    (weighted) accuracies, ``C_`` and the refit equal those of the data without those
    samples, on the same folds."""
    G, y = problem("logistic")
    n = len(y)
    w = np.random.default_rng(6).uniform(0.5, 2.0, size=n)
    w[::7] = 0.0
    keep = np.flatnonzero(w > 0)
    where = np.full(n, -1)
    where[keep] = np.arange(len(keep))
    cv = [(np.arange(n)[n // 3 :], np.arange(n)[: n // 3]),
          (np.arange(n)[: 2 * n // 3], np.arange(n)[2 * n // 3 :])]  # fmt: skip
    cv_kept = [(where[tr][where[tr] >= 0], where[te][where[te] >= 0]) for tr, te in cv]
    kw: dict[str, Any] = dict(kernels="precomputed", Cs=[0.5, 2.0, 8.0], tol=1e-6)
    a = mk.MKLClassifierCV(cv=cv, **kw).fit(G, y, sample_weight=w)
    Gk = np.ascontiguousarray(G[:, keep][:, :, keep])
    b = mk.MKLClassifierCV(cv=cv_kept, **kw).fit(Gk, y[keep], sample_weight=w[keep])
    np.testing.assert_allclose(a.scores_, b.scores_, atol=1e-12)
    assert a.C_ == b.C_
    np.testing.assert_allclose(a.dual_coef_[:, keep], b.dual_coef_, atol=1e-7)
    assert np.all(a.dual_coef_[:, w == 0] == 0.0)
    unweighted = mk.MKLClassifierCV(cv=cv, **kw).fit(G, y)
    assert not np.allclose(unweighted.dual_coef_, a.dual_coef_, atol=1e-3)


def test_cv_classifier_picks_a_good_c_on_held_out_data() -> None:
    G, y = problem("logistic")
    clf = mk.MKLClassifierCV(kernels="precomputed", Cs=6, cv=3).fit(G, y)
    assert clf.scores_.shape == (3, 6)
    assert clf.classes_.tolist() == [-1.0, 1.0]
    assert clf.scores_.mean(axis=0).max() >= 0.8
    assert clf.predict_proba(G).shape == (len(y), 2)
    assert np.mean(clf.predict(G) == y) >= 0.8
    with pytest.raises(InvalidParameterError, match="Cs"):
        mk.MKLClassifierCV(kernels="precomputed", Cs=1).fit(G, y)


def test_plots_render(tmp_path: Any) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    path = full_path("squared")
    ax = path.plot()
    assert len(ax.get_lines()) >= path.kernel_weights.shape[1]
    ax.figure.savefig(tmp_path / "path.png")
    G, y = problem("squared")
    reg = mk.MKLRegressorCV(kernels="precomputed", Cs=5, cv=3).fit(G, y)
    ax = reg.plot_scores()
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), reg.scores_.mean(axis=0))
    ax.figure.savefig(tmp_path / "scores.png")
    assert (tmp_path / "path.png").stat().st_size > 1000
    assert (tmp_path / "scores.png").stat().st_size > 1000


def test_ctrl_c_stops_a_path_quickly() -> None:
    rng = np.random.default_rng(0)
    n = 500
    X = rng.normal(size=(n, 6))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    specs: list[mk.kernels.Kernel] = [
        mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(6) for s in (0.5, 1, 2, 4)
    ]
    G = mk.kernels.gram(X, specs, normalize="mean_diag")
    after = cpu_seconds_after_interrupt(
        0.3, lambda: mk.mkl_path(G, y, mu=1e-6, C_max=1e6, max_points=100000)
    )
    # Within a step of the Ctrl-C: less work than a path of two points, set-up included.
    two = cpu_seconds(lambda: mk.mkl_path(G, y, mu=1e-6, C_max=1e6, max_points=2))
    assert after < two + POLL_CPU_SECONDS, (after, two)


def test_a_path_beyond_float64_ends_before_a_point_it_cannot_certify() -> None:
    """At a tol float64 cannot resolve, μ is driven towards 0 and a centre's η = μ/(d² − r²)
    overflows: the path stops (``end == "stalled"``, a ConvergenceWarning) before such a point
    instead of recording it; every recorded point has finite, non-negative weights and a
    finite certificate. (The weighted fold path of scikit-learn's sample-weight check once
    recorded η = ±inf and P = inf here.)"""
    rng = np.random.RandomState(42)
    X = rng.rand(15, 30)
    y = rng.randint(0, 3, size=15).astype(float)
    w = rng.randint(0, 5, size=15).astype(float)
    Xs, ys, ws = shuffle(X, y, w, random_state=0)
    Xt, yt, wt = np.vstack([Xs, X]), np.hstack([ys, y]), np.hstack([ws, np.ones(15)])
    yt = yt - np.average(yt, weights=wt)
    M = len(mk.default_kernels(30))
    with pytest.warns(ConvergenceWarning):
        path = mk.mkl_path(Xt, yt, d=np.ones(M), tol=1e-8, sample_weight=wt)
    assert path.end == "stalled"
    assert np.all(np.isfinite(path.kernel_weights)) and np.all(path.kernel_weights >= 0.0)
    assert np.all(np.isfinite(path.primal_objectives)) and np.all(np.isfinite(path.alphas))
    assert np.all(np.isfinite(path.dual_objectives)) and np.all(np.isfinite(path.duality_gaps))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_an_uncentred_target_warns_that_the_path_has_no_intercept() -> None:
    """The path fits no intercept: diabetes' targets (mean 152, two standard deviations from
    0) would be predicted far off without a word; centred, they are fitted silently."""
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    specs = [mk.kernels.Gaussian(sigma=2.0, features=[j]) for j in range(4)]
    with pytest.warns(UserWarning, match=r"y has mean 139\.9, 1\.95 standard deviations from 0"):
        mk.mkl_path(X[:60], y[:60], kernels=specs, max_points=20)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mk.mkl_path(X[:60], (y[:60] - y[:60].mean()) / y.std(), kernels=specs, max_points=20)
    assert not [w for w in seen if "no intercept" in str(w.message)]
    # The weighted mean decides: weights that centre the targets silence it.
    yb = np.where(np.arange(60) < 55, 1.0, -1.0)  # mean 0.83, 1.5 standard deviations
    w = np.where(np.arange(60) < 55, 1.0, 11.0)  # weighted mean 0
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mk.mkl_path(X[:60], yb, kernels=specs, sample_weight=w, max_points=20)
    assert not [w for w in seen if "no intercept" in str(w.message)]
    with pytest.warns(UserWarning, match="no intercept"):
        mk.mkl_path(X[:60], yb, kernels=specs, max_points=20)
