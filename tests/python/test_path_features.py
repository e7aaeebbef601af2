"""Paths and cross-validated estimators on explicit features (``kernels=FeatureBank``) and on
low-rank factors (``LowRankFactors``), against independent references: the path on a bank's
feature blocks against the path on the dense stack ``Φ_m Φ_mᵀ`` of the same fitted bank; the
CV estimators with a bank against a loop over the same folds that fits the bank on each
fold's training rows and follows the dense paths of its features; CV on factors against CV on
the dense stack ``G_m G_mᵀ``; and the validation of the new inputs."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, StratifiedKFold

import multikernel as mk
from multikernel.exceptions import InvalidInputError, InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, Kernel, Laplacian, LowRankFactors

FloatArray = NDArray[np.float64]


def _standardized(X: FloatArray) -> FloatArray:
    out: FloatArray = (X - X.mean(0)) / X.std(0)
    return out


def diabetes(n: int) -> tuple[FloatArray, FloatArray]:
    """``n`` standardized diabetes points, targets scaled to unit variance (the path has no
    intercept: centred by the callers that need it)."""
    X, y = load_diabetes(return_X_y=True)
    return _standardized(X)[:n], y[:n] / y[:n].std()


def cancer(n: int) -> tuple[FloatArray, NDArray[Any]]:
    X, y = load_breast_cancer(return_X_y=True)
    return _standardized(X)[:n], y[:n]


def specs_on(features: int) -> list[Kernel]:
    """Two widths per feature: M = 2 · features."""
    return [Gaussian(sigma=s, features=[j]) for j in range(features) for s in (1.0, 3.0)]


def dense(blocks: list[NDArray[Any]], rows: list[NDArray[Any]] | None = None) -> FloatArray:
    """The stack ``rows_m blocks_mᵀ`` (``Φ_m Φ_mᵀ`` when ``rows`` is None), float64."""
    rows = blocks if rows is None else rows
    products = [
        np.asarray(R, np.float64) @ np.asarray(F, np.float64).T
        for R, F in zip(rows, blocks, strict=True)
    ]
    out: FloatArray = np.ascontiguousarray(np.stack(products))
    return out


def within_certificates(a: mk.MKLPath, b: mk.MKLPath) -> bool:
    """Two certified paths of one problem: every pair of primal values is within the sum of
    their duality gaps (both bracket the same optimum)."""
    slack = (a.primal_objectives - a.dual_objectives) + (b.primal_objectives - b.dual_objectives)
    return bool(np.all(np.abs(a.primal_objectives - b.primal_objectives) <= slack + 1e-10))


def assert_scores_close(got: FloatArray, want: FloatArray) -> None:
    """Held-out scores of two computations of the same fold paths (the low-rank algebra and
    the dense one take slightly different steps, and the systems get ill-conditioned as C
    grows): to 1e-6 on the lower half of the candidates, to 1e-3 up to the path's end
    (measured: below 1e-10, and up to 3e-4 at the last candidate)."""
    half = got.shape[1] // 2
    np.testing.assert_allclose(got[:, :half], want[:, :half], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3)


# --- mkl_path(X, y, kernels=FeatureBank) ------------------------------------------------------


@pytest.mark.parametrize(
    ("loss", "method", "n_components"),
    [
        ("squared", "nystroem", 10),  # total width R < n: the R × R (Woodbury) systems
        ("logistic", "nystroem", 10),
        ("squared", "rff", 30),  # R = 180 ≥ n: the factors' n × n systems
    ],
)
def test_feature_bank_path_is_the_dense_path_of_its_features(
    loss: Any, method: Any, n_components: int
) -> None:
    n = 100
    if loss == "squared":
        X, y = diabetes(n + 30)
        target: NDArray[Any] = y[:n] - y[:n].mean()
    else:
        X, yc = cancer(n + 30)
        target = yc[:n]
    specs = specs_on(3)
    bank = FeatureBank(specs, method=method, n_components=n_components, random_state=3)
    path = mk.mkl_path(X[:n], target, kernels=bank, loss=loss, C_max=50.0)
    # The reference: the same bank fitted independently, its dense stack Φ_m Φ_mᵀ.
    ref_bank = FeatureBank(specs, method=method, n_components=n_components, random_state=3)
    F = ref_bank.fit_transform(X[:n])
    width = sum(f.shape[1] for f in F)
    assert (width < n) == (method == "nystroem")
    ref = mk.mkl_path(dense(F), target, kernels="precomputed", loss=loss, C_max=50.0)
    assert path.end == ref.end == "complete"
    np.testing.assert_allclose(path.Cs, ref.Cs, rtol=1e-6)
    assert path.C0 == pytest.approx(ref.C0, rel=1e-9)
    assert within_certificates(path, ref)
    # The parameter stays unfitted; the path holds a fitted copy, which maps new points.
    assert not hasattr(bank, "params_")
    assert isinstance(path.kernel_bank, FeatureBank) and path.kernel_bank is not bank
    assert np.all(path.psd_shifts == 0)
    # Feature-space weights: w_m = Φ_mᵀ A[m] at every point.
    assert path.feature_coefs is not None
    for m, W in enumerate(path.feature_coefs):
        np.testing.assert_allclose(W, path.dual_coefs[:, m, :] @ F[m], rtol=1e-9, atol=1e-12)
    # Held-out predictions: φ(x_new) through the path's bank = the dense cross kernels.
    G_te = dense(F, ref_bank.transform(X[n:]))
    scale = np.abs(ref.decision_function(G_te, float(ref.Cs[-1]))).max()
    for C in (0.3 * path.C0, 2.0 * path.C0, float(path.Cs[len(path.Cs) // 2]), 10.0, 1e4):
        f = path.decision_function(X[n:], C)
        np.testing.assert_allclose(f, ref.decision_function(G_te, C), rtol=1e-5, atol=1e-5 * scale)
        if loss == "logistic":  # the same labels, away from the boundary
            sure = np.abs(f) > 1e-4 * scale
            labels, ref_labels = path.predict(X[n:], C), ref.predict(G_te, C)
            np.testing.assert_array_equal(labels[sure], ref_labels[sure])


def test_feature_paths_on_unscaled_targets_are_the_dense_paths() -> None:
    """The CV's setting (fixed mu = 1e-3, d = 1) on raw diabetes targets (std ≈ 77) and
    Nyström blocks of total width R ≈ 45 < n = 80 (the Woodbury systems): every fold's path
    completes, certified, like the dense path of the same features. An engine built before
    this test accepted a corrector point with relative gap 1.0 on fold 1 and crawled to
    max_points, where the dense path completed."""
    X, y = load_diabetes(return_X_y=True)
    X = _standardized(X)
    specs = specs_on(3)
    for tr, _ in KFold(3, shuffle=True, random_state=0).split(X[:120]):
        t = y[tr] - y[tr].mean()
        ref_bank = FeatureBank(specs, n_components=15)
        F = ref_bank.fit_transform(X[tr])
        assert sum(f.shape[1] for f in F) < len(tr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            bank = FeatureBank(specs, n_components=15)
            low = mk.mkl_path(X[tr], t, kernels=bank, d=np.ones(6), mu=1e-3)
            ref = mk.mkl_path(dense(F), t, kernels="precomputed", d=np.ones(6), mu=1e-3)
        assert ref.end == "complete"
        assert low.end == "complete", (low.end, low.duality_gaps.max())
        assert low.duality_gaps.max() <= 10 * ref.duality_gaps.max()
        # At the path's end, the most ill-conditioned point.
        f = low.decision_function(X[:5], 1e3 * low.C0)
        f_ref = ref.decision_function(dense(F, ref_bank.transform(X[:5])), 1e3 * ref.C0)
        np.testing.assert_allclose(f, f_ref, rtol=1e-3, atol=1e-3 * np.abs(f_ref).max())


def test_float32_feature_bank_path() -> None:
    """float32 blocks go to the engine as they are: the path is the float64 bank's to the
    rounding of the features."""
    X, y = diabetes(90)
    target = y - y.mean()
    specs = specs_on(3)
    p64 = mk.mkl_path(X[:70], target[:70], kernels=FeatureBank(specs, n_components=8))
    p32 = mk.mkl_path(
        X[:70], target[:70], kernels=FeatureBank(specs, n_components=8, dtype=np.float32)
    )
    assert p32.end == "complete"
    assert p32.C0 == pytest.approx(p64.C0, rel=1e-5)
    f32, f64 = p32.decision_function(X[70:], 10.0), p64.decision_function(X[70:], 10.0)
    np.testing.assert_allclose(f32, f64, atol=1e-3 * np.abs(f64).max())


def test_factor_path_predicts_from_factor_rows() -> None:
    """On factors of the training and test points together, the test rows give the
    predictions of the dense cross kernels ``G_m[te] G_m[tr]ᵀ``."""
    X, y = diabetes(110)
    target = y[:80] - y[:80].mean()
    G_all = mk.kernels.gram(X, specs_on(3), normalize="mean_diag")
    low = mk.kernels.low_rank(G_all, tol=1e-6, max_rank=12)
    tr = [np.ascontiguousarray(f[:80]) for f in low.factors]
    te = [np.ascontiguousarray(f[80:]) for f in low.factors]
    path = mk.mkl_path(LowRankFactors(tr, low.ranks, low.errors), target)
    for C in (float(path.Cs[5]), 3.0):
        np.testing.assert_allclose(
            path.decision_function(te, C),
            path.decision_function(dense(tr, te), C),
            rtol=1e-9,
            atol=1e-12,
        )
    with pytest.raises(InvalidInputError, match="widths of the training factors"):
        path.decision_function([f[:, :-1] for f in te], 3.0)
    with pytest.raises(InvalidInputError, match="G_test must have shape"):
        path.decision_function(dense(tr, te)[:, :, :-1], 3.0)
    # A dense path reads a list as a stack, as before.
    pre = mk.mkl_path(dense(tr), target, kernels="precomputed")
    assert pre.feature_coefs is None
    np.testing.assert_allclose(
        pre.decision_function(list(dense(tr, te)), 3.0),
        pre.decision_function(dense(tr, te), 3.0),
    )


# --- MKLRegressorCV / MKLClassifierCV with kernels=FeatureBank --------------------------------


def _manual_cv(
    X: FloatArray,
    y: NDArray[Any],
    bank_args: dict[str, Any],
    folds: list[tuple[NDArray[np.intp], NDArray[np.intp]]],
    loss: Any,
    n_Cs: int,
) -> tuple[FloatArray, FloatArray]:
    """The candidates and held-out scores of the CV estimators, by hand: per fold, the bank
    fitted on the training rows, the dense path of its features, the held-out decision values
    from the dense cross kernels, R² (squared) or the negative log-loss (logistic)."""
    per_fold = []
    for tr, te in folds:
        b = FeatureBank(**bank_args)
        F_tr = b.fit_transform(X[tr])
        G_te = dense(F_tr, b.transform(X[te]))
        if loss == "squared":
            offset = float(y[tr].mean())
            t = y[tr] - offset
        else:
            offset, t = 0.0, np.where(y[tr] == y.max(), 1.0, -1.0)
        M = len(F_tr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            p = mk.mkl_path(
                dense(F_tr),
                t,
                kernels="precomputed",
                loss=loss,
                d=np.ones(M),
                mu=1e-3,
            )
        per_fold.append((p, G_te, offset, y[te]))
    grid = np.geomspace(min(p.C0 for p, *_ in per_fold), max(p.Cs[-1] for p, *_ in per_fold), n_Cs)
    scores = np.empty((len(folds), n_Cs))
    for k, (p, G_te, offset, y_te) in enumerate(per_fold):
        for i, C in enumerate(grid):
            f = p.decision_function(G_te, float(C)) + offset
            if loss == "squared":
                scores[k, i] = 1 - np.sum((y_te - f) ** 2) / np.sum((y_te - y_te.mean()) ** 2)
            else:
                s = np.where(y_te == y.max(), 1.0, -1.0)
                scores[k, i] = -np.mean(np.logaddexp(0.0, -s * f))
    return grid, scores


@pytest.mark.parametrize("estimator", ["regressor", "classifier"])
def test_cv_with_a_feature_bank_is_the_loop_over_dense_fold_stacks(estimator: str) -> None:
    n = 120
    # Random features (rff: random frequencies, data-dependent scales) for the regressor,
    # uniform Nyström landmarks (random rows of each fold) for the classifier.
    bank_args: dict[str, Any] = {"specs": specs_on(3), "n_components": 12, "random_state": 5}
    if estimator == "regressor":
        bank_args["method"] = "rff"
        X, y_reg = diabetes(n + 40)
        y: NDArray[Any] = y_reg
        loss: Any = "squared"
        scoring = None
        splitter: Any = KFold(3, shuffle=True, random_state=0)
        cls: Any = mk.MKLRegressorCV
    else:
        bank_args["landmarks"] = "uniform"
        X, y = cancer(n + 40)
        loss, scoring = "logistic", "neg_log_loss"
        splitter = StratifiedKFold(3, shuffle=True, random_state=0)
        cls = mk.MKLClassifierCV
    folds = list(splitter.split(X[:n], y[:n]))
    bank = FeatureBank(**bank_args)
    # One fixed barrier weight for both computations: a μ that follows tol would take other
    # steps in the low-rank algebra than in the dense one.
    est = cls(kernels=bank, Cs=7, cv=folds, scoring=scoring, mu=1e-3, tol=1e-6).fit(X[:n], y[:n])
    grid, scores = _manual_cv(X[:n], y[:n], bank_args, folds, loss, 7)
    np.testing.assert_allclose(est.Cs_, grid, rtol=1e-6)
    assert_scores_close(est.scores_, scores)
    assert est.C_ == pytest.approx(float(grid[np.argmax(scores.mean(axis=0))]), rel=1e-6)
    # Honest folds: each path's bank was fitted on its training rows only.
    for (tr, _), paths in zip(folds, est.paths_, strict=True):
        ref = FeatureBank(**bank_args).fit(X[tr])
        fold_blocks = paths[0].kernel_bank.transform(X[:5])
        for got, want in zip(fold_blocks, ref.transform(X[:5]), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    # The refit: the l1 estimator with kernels=FeatureBank on all of X, which is the l1 fit
    # on the dense stack of the bank fitted on all of X.
    assert not hasattr(bank, "params_")
    assert isinstance(est.kernel_bank_, FeatureBank) and est.estimator_.penalty == "l1"
    full = FeatureBank(**bank_args)
    F = full.fit_transform(X[:n])
    refit_cls = mk.MKLRegressor if estimator == "regressor" else mk.MKLClassifier
    ref = refit_cls(kernels="precomputed", penalty="l1", loss=loss, C=est.C_, tol=1e-6).fit(
        dense(F), y[:n]
    )
    G_te = dense(F, full.transform(X[n:]))
    f = est.decision_function(X[n:]) if estimator == "classifier" else est.predict(X[n:])
    f_ref = ref.decision_function(G_te) if estimator == "classifier" else ref.predict(G_te)
    np.testing.assert_allclose(f, f_ref, rtol=1e-3, atol=1e-3 * np.abs(f_ref).max())


# --- CV on LowRankFactors ---------------------------------------------------------------------


def test_regressor_cv_on_factors_is_cv_on_the_dense_stack() -> None:
    X, y = diabetes(130)
    n = 100
    G_all = mk.kernels.gram(X, specs_on(3), normalize="mean_diag")
    low = mk.kernels.low_rank(G_all, tol=1e-6, max_rank=10)
    tr = [np.ascontiguousarray(f[:n]) for f in low.factors]
    te = [np.ascontiguousarray(f[n:]) for f in low.factors]
    assert sum(f.shape[1] for f in tr) < n
    folds = list(KFold(3, shuffle=True, random_state=1).split(np.zeros(n)))
    # A fixed μ: one followed by tol takes other steps in the low-rank algebra.
    kw: dict[str, Any] = {"Cs": 6, "cv": folds, "mu": 1e-3, "tol": 1e-6}
    on_factors = mk.MKLRegressorCV(kernels="precomputed", **kw).fit(
        LowRankFactors(tr, low.ranks, low.errors), y[:n]
    )
    on_dense = mk.MKLRegressorCV(kernels="precomputed", **kw).fit(dense(tr), y[:n])
    np.testing.assert_allclose(on_factors.Cs_, on_dense.Cs_, rtol=1e-6)
    assert_scores_close(on_factors.scores_, on_dense.scores_)
    # The same candidate: the grids' ends come from paths on factors and on their dense
    # product, equal to rounding (Cs_ above).
    assert on_factors.C_ == pytest.approx(on_dense.C_, rel=1e-12)
    # kernels=None reads factors as a precomputed stack too.
    none = mk.MKLRegressorCV(**kw).fit(LowRankFactors(tr, low.ranks, low.errors), y[:n])
    np.testing.assert_array_equal(none.scores_, on_factors.scores_)
    # Predictions: the dense cross kernels, or the test points' factor rows.
    G_te = dense(tr, te)
    want = on_dense.predict(G_te)
    np.testing.assert_allclose(on_factors.predict(G_te), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(on_factors.predict(te), want, rtol=1e-4, atol=1e-4)
    assert on_factors.score(G_te, y[n:]) == pytest.approx(on_dense.score(G_te, y[n:]), abs=1e-4)


def test_classifier_cv_on_factors_is_cv_on_the_dense_stack() -> None:
    """Three classes: one path per class (one-vs-rest) per fold, and a one-vs-rest refit."""
    X, y = load_iris(return_X_y=True)
    X = _standardized(X)
    perm = np.random.default_rng(0).permutation(len(y))
    X, y = X[perm], y[perm]
    n = 110
    specs: list[Kernel] = [Laplacian(sigma=2.0, features=[j]) for j in range(4)]
    G_all = mk.kernels.gram(X, specs, normalize="mean_diag")
    low = mk.kernels.low_rank(G_all, tol=1e-6, max_rank=12)
    tr = [np.ascontiguousarray(f[:n]) for f in low.factors]
    te = [np.ascontiguousarray(f[n:]) for f in low.factors]
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X[:n], y[:n]))
    # tol 1e-9: the refits on factors (prox_newton, in feature space) and on the dense stack
    # (the wrapper) are different algorithms, which agree on f to what their gaps allow.
    kw: dict[str, Any] = {
        "Cs": 5, "cv": folds, "scoring": "neg_log_loss", "mu": 1e-3, "tol": 1e-9,
    }  # fmt: skip
    on_factors = mk.MKLClassifierCV(kernels="precomputed", **kw).fit(
        LowRankFactors(tr, low.ranks, low.errors), y[:n]
    )
    on_dense = mk.MKLClassifierCV(kernels="precomputed", **kw).fit(dense(tr), y[:n])
    assert all(len(paths) == 3 for paths in on_factors.paths_)
    np.testing.assert_allclose(on_factors.Cs_, on_dense.Cs_, rtol=1e-6)
    assert_scores_close(on_factors.scores_, on_dense.scores_)
    # The same candidate: the grids' ends come from paths on factors and on their dense
    # product, equal to rounding (Cs_ above).
    assert on_factors.C_ == pytest.approx(on_dense.C_, rel=1e-12)
    G_te = dense(tr, te)
    f = on_dense.decision_function(G_te)
    assert f.shape == (len(y) - n, 3)
    np.testing.assert_allclose(on_factors.decision_function(G_te), f, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(on_factors.decision_function(te), f, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        on_factors.predict_proba(G_te), on_dense.predict_proba(G_te), atol=1e-4
    )
    np.testing.assert_array_equal(on_factors.predict(te), on_factors.predict(G_te))
    assert np.mean(on_factors.predict(G_te) == y[n:]) > 0.8


# --- validation -------------------------------------------------------------------------------


def test_bad_inputs_are_refused() -> None:
    X, y = diabetes(60)
    target = y - y.mean()
    specs = specs_on(2)
    bank = FeatureBank(specs, n_components=6)
    G = mk.kernels.gram(X, specs, normalize="mean_diag")
    low = mk.kernels.low_rank(G, tol=1e-4)
    ragged = LowRankFactors([low.factors[0], low.factors[1][:-1]], low.ranks[:2], low.errors[:2])
    # mkl_path
    with pytest.raises(InvalidParameterError, match="got a FeatureBank"):
        mk.mkl_path(low, target, kernels=bank)
    with pytest.raises(InvalidInputError, match="FeatureBank maps raw points"):
        mk.mkl_path(G, target, kernels=bank)
    with pytest.raises(InvalidInputError, match="FeatureBank maps raw points"):
        mk.mkl_path(np.where(X > 2, np.nan, X), target, kernels=bank)
    with pytest.raises(InvalidInputError, match="one entry per training point"):
        mk.mkl_path(X, target[:-1], kernels=bank)
    path = mk.mkl_path(X, target, kernels=bank, C_max=20.0)
    with pytest.raises(InvalidInputError, match="features"):
        path.decision_function(X[:, :-1], 1.0)
    with pytest.raises(InvalidInputError, match="FeatureBank maps raw points"):
        path.predict(G, 1.0)
    # The CV estimators
    reg = mk.MKLRegressorCV(kernels=bank, Cs=3, cv=2)
    with pytest.raises(InvalidParameterError, match="got a FeatureBank"):
        reg.fit(low, target)
    with pytest.raises(InvalidInputError, match="FeatureBank maps raw points"):
        reg.fit(G, target)
    with pytest.raises(InvalidParameterError, match="got specs"):
        mk.MKLRegressorCV(kernels=specs, Cs=3, cv=2).fit(low, target)
    pre = mk.MKLRegressorCV(kernels="precomputed", Cs=3, cv=2)
    with pytest.raises(InvalidInputError, match="factor 1 must have shape"):
        pre.fit(ragged, target)
    with pytest.raises(InvalidInputError, match="one entry per training point"):
        pre.fit(low, target[:-1])
    pre.fit(low, target)
    with pytest.raises(InvalidInputError, match="cross kernels"):
        pre.predict(G[:, :5, :-1])
    with pytest.raises(InvalidInputError, match="widths of the training factors"):
        pre.predict([f[:5, :-1] for f in low.factors])
    with pytest.raises(InvalidInputError, match="NaN"):
        pre.predict(G[:, :5] * np.nan)
