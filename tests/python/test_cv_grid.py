"""The CV estimators on what the path does not follow (every loss, ``multi_class``,
``class_weight``): each fold's fits equal a hand-written loop over the fold's kernels, computed
on its training rows only; the default grid starts where the first kernel enters; an unknown
parameter names the public class."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import KFold, StratifiedKFold

import multikernel as mk
from multikernel._cv_folds import entry_C, loss_gradient
from multikernel._data import Dense
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import Gaussian, KernelBank, Linear, PairwiseStack, Spectrum

FloatArray = NDArray[np.float64]
SPECS = [Gaussian(sigma=1.0), Gaussian(sigma=3.0), Linear()]


def _data(n: int = 90, classes: int = 3, seed: int = 0) -> tuple[FloatArray, NDArray[Any]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    s = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n)
    return X, np.digitize(s, np.quantile(s, np.linspace(0, 1, classes + 1)[1:-1]))


def _hand_scores(
    make: Any, X: Any, y: NDArray[Any], splits: list[Any], Cs: FloatArray, score: Any
) -> FloatArray:
    """Per fold: a KernelBank fitted on the training rows (the CV estimators' default
    normalisation), one estimator fitted at every C in ascending order (cold: the wrapper,
    which takes no start, fits these dense stacks), each scored on the held-out cross
    kernels."""
    out = np.empty((len(splits), len(Cs)))
    for k, (tr, te) in enumerate(splits):
        bank = KernelBank(SPECS if not isinstance(X, list) else [Spectrum(2), Spectrum(3)],
                          normalize="mean_diag")  # fmt: skip
        pick = (lambda rows: [X[i] for i in rows]) if isinstance(X, list) else (lambda r: X[r])
        Gtr = bank.fit_transform(pick(tr))
        Gte = bank.transform(pick(te))
        est = make()
        for i, C in enumerate(Cs):
            est.set_params(C=float(C)).fit(Gtr, y[tr])
            out[k, i] = score(y[te], est.predict(Gte))
    return out


CLASSIFIER_CASES = [
    {"loss": "hinge"},
    {"loss": "hinge", "multi_class": "ovo"},
    {"multi_class": "shared", "class_weight": "balanced"},
    {"loss": "squared_hinge", "class_weight": {0: 2.0}},
]


@pytest.mark.parametrize("params", CLASSIFIER_CASES)
def test_classifier_grid_equals_the_hand_loop(params: dict[str, Any]) -> None:
    X, y = _data()
    Cs = np.array([0.1, 1.0, 10.0])
    cv = StratifiedKFold(3)
    clf = mk.MKLClassifierCV(kernels=SPECS, Cs=Cs, cv=cv, **params).fit(X, y)
    assert clf.paths_ is None
    loss = params.get("loss", "logistic")
    extra = {k: v for k, v in params.items() if k != "loss"}

    def make() -> Any:
        return mk.MKLClassifier(
            kernels="precomputed", penalty="l1", loss=loss, max_iter=1000,
            **extra,
        )  # fmt: skip

    want = _hand_scores(make, X, y, list(cv.split(X, y)), Cs, accuracy_score)
    np.testing.assert_allclose(clf.scores_, want, rtol=1e-12)
    assert clf.C_ == Cs[int(np.argmax(want.mean(axis=0)))]
    refit = mk.MKLClassifier(kernels=SPECS, penalty="l1", loss=loss, C=clf.C_, max_iter=1000,
                             **extra).fit(X, y)  # fmt: skip
    np.testing.assert_array_equal(clf.predict(X), refit.predict(X))


def test_regressor_epsilon_insensitive_on_a_pairwise_stack_equals_the_hand_loop() -> None:
    X, _ = _data(80)
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    G = mk.kernels.gram(X, SPECS, normalize="mean_diag")
    Cs = np.array([0.3, 3.0, 30.0])
    cv = KFold(3, shuffle=True, random_state=1)
    reg = mk.MKLRegressorCV(
        kernels="precomputed", loss="epsilon_insensitive", epsilon=0.05, Cs=Cs, cv=cv
    ).fit(PairwiseStack(G), t)
    want = np.empty((3, 3))
    for k, (tr, te) in enumerate(cv.split(X)):
        # A new estimator per fold: the grid is followed warm within a fold only.
        est = mk.MKLRegressor(kernels="precomputed", penalty="l1", loss="epsilon_insensitive",
                              epsilon=0.05, max_iter=1000)  # fmt: skip
        for i, C in enumerate(Cs):
            est.set_params(C=float(C)).fit(G[:, tr][:, :, tr], t[tr])
            want[k, i] = r2_score(t[te], est.predict(G[:, te][:, :, tr]))
    np.testing.assert_allclose(reg.scores_, want, rtol=1e-12)


def test_sequences_with_hinge_one_vs_rest_equal_the_hand_loop() -> None:
    rng = np.random.default_rng(4)
    seqs = ["".join(rng.choice(list("ACGT"), size=20)) for _ in range(60)]
    y = np.array([s.count("GC") + s.count("CG") for s in seqs]) % 3
    Cs = np.array([1.0, 10.0])
    cv = StratifiedKFold(3)
    kernels = [Spectrum(2), Spectrum(3)]
    clf = mk.MKLClassifierCV(kernels=kernels, loss="hinge", Cs=Cs, cv=cv).fit(seqs, y)

    def make() -> Any:
        return mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="hinge",
                                max_iter=1000)  # fmt: skip

    want = _hand_scores(make, seqs, y, list(cv.split(np.zeros(60), y)), Cs, accuracy_score)
    np.testing.assert_allclose(clf.scores_, want, rtol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_entry_point_is_the_paths_first_kernel(loss: str) -> None:
    # Balanced classes (logistic) and centred targets (squared): the constant fit is b = 0,
    # the model of the path (no intercept) below its C0, which the engine computes.
    X, y3 = _data(60, 2)
    G = mk.kernels.gram(X, SPECS, normalize="mean_diag")
    t = np.where(y3 == 1, 1.0, -1.0) if loss == "logistic" else X[:, 0] - X[:, 0].mean()
    path = mk.mkl_path(G, t, loss=loss, d=np.ones(3))
    C0 = entry_C(Dense(G), loss_gradient(loss, t, np.ones(60)))
    assert C0 == pytest.approx(path.C0, rel=1e-6)


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared_hinge"])
def test_no_kernel_enters_below_the_entry_point(loss: str) -> None:
    X, y = _data(70, 2)
    y[:10] = 0  # unbalanced: the constant fit is not b = 0
    G = mk.kernels.gram(X, SPECS, normalize="mean_diag")
    yb = np.where(y == 1, 1.0, -1.0)
    C0 = entry_C(Dense(G), loss_gradient(loss, yb, np.ones(70)))

    def norms(C: float) -> FloatArray:
        fit = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss=loss, C=C, tol=1e-6,
                               max_iter=2000).fit(G, y)  # fmt: skip
        out: FloatArray = fit.kernel_norms_
        return out

    assert norms(0.8 * C0).max() < 1e-3 * norms(3.0 * C0).max()
    assert norms(3.0 * C0).max() > 0


def test_default_grid_spans_the_entry_point_and_verbose_reports_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    X, y = _data(60)
    with caplog.at_level("INFO", logger="multikernel"):
        clf = mk.MKLClassifierCV(kernels=SPECS, loss="hinge", Cs=4, cv=3, verbose=1).fit(X, y)
    # The entry point of all the data (where the refit runs): the smallest of the
    # one-vs-rest problems'.
    G = KernelBank(SPECS, normalize="mean_diag").fit_transform(X)
    lo = [
        entry_C(Dense(G), loss_gradient("hinge", np.where(y == c, 1.0, -1.0), np.ones(60)))
        for c in range(3)
    ]
    np.testing.assert_allclose(clf.Cs_, np.geomspace(min(lo), 1000 * min(lo), 4), rtol=1e-12)
    assert "smallest C at which a kernel enters" in caplog.text


def test_unknown_and_invalid_parameters_name_the_public_class() -> None:
    for cls in (mk.MKLClassifierCV, mk.MKLRegressorCV):
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\) got an unexpected"):
            cls(penalty="l2")
        with pytest.raises(
            ValueError, match=f"Invalid parameter 'nope' for estimator {cls.__name__}"
        ):
            cls().set_params(nope=1)
    X, y = _data(30)
    with pytest.raises(InvalidParameterError, match="MKLClassifierCV"):
        mk.MKLClassifierCV(loss="squared").fit(X, y)
    with pytest.raises(InvalidParameterError, match="multi_class"):
        mk.MKLClassifierCV(multi_class="all").fit(X, y)


def test_feature_bank_grid_follows_warm_and_equals_the_hand_loop() -> None:
    # Narrow feature blocks (total width 14, at most n/4 for the hinge): the estimator's
    # solver is prox_newton, which takes a start, so the grid is followed warm.
    X, y = _data(120, 2)
    bank = mk.kernels.FeatureBank([Gaussian(sigma=2.0), Linear()], n_components=10)
    Cs = np.array([0.5, 2.0, 8.0])
    cv = StratifiedKFold(2)
    clf = mk.MKLClassifierCV(kernels=bank, loss="hinge", Cs=Cs, cv=cv).fit(X, y)
    want = np.empty((2, 3))
    for k, (tr, te) in enumerate(cv.split(X, y)):
        fold_bank = mk.kernels.FeatureBank([Gaussian(sigma=2.0), Linear()], n_components=10)
        Ftr = fold_bank.fit_transform(X[tr])
        Fte = fold_bank.transform(X[te])
        est = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="hinge", max_iter=1000)
        for i, C in enumerate(Cs):
            est.set_params(C=float(C)).fit(Ftr, y[tr])
            assert est.solvers_ == ("prox_newton",)
            est.set_params(warm_start=True)
            want[k, i] = accuracy_score(y[te], est.predict(Fte))
    np.testing.assert_allclose(clf.scores_, want, rtol=1e-12)


def test_verbose_reports_the_paths_candidates(caplog: pytest.LogCaptureFixture) -> None:
    X, y = _data(60, 2)
    with caplog.at_level("INFO", logger="multikernel"):
        clf = mk.MKLClassifierCV(kernels=SPECS, Cs=4, cv=3, verbose=1).fit(X, y)
    assert clf.paths_ is not None
    assert clf.Cs_[0] == min(p.C0 for paths in clf.paths_ for p in paths)
    assert f"from {clf.Cs_[0]:.4g} to {clf.Cs_[-1]:.4g}" in caplog.text


def test_a_mixed_table_with_hinge_one_vs_one_equals_the_hand_loop() -> None:
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(7)
    seqs = ["".join(rng.choice(list("ACGT"), size=16)) for _ in range(60)]
    x = rng.normal(size=60)
    y = (np.array([s.count("A") for s in seqs]) > 4).astype(int) + (x > 0.5)
    table = pd.DataFrame({"seq": seqs, "x": x})
    kernels = [Spectrum(2, features=["seq"]), Gaussian(sigma=1.0, features=["x"])]
    Cs = np.array([1.0, 10.0])
    cv = StratifiedKFold(3)
    clf = mk.MKLClassifierCV(kernels=kernels, loss="hinge", multi_class="ovo", Cs=Cs, cv=cv)
    clf.fit(table, y)
    want = np.empty((3, 2))
    for k, (tr, te) in enumerate(cv.split(table, y)):
        # The fold's kernels on its training rows, by the refit's own bank on the same table.
        est = mk.MKLClassifier(kernels=kernels, penalty="l1", loss="hinge", multi_class="ovo",
                               max_iter=1000)  # fmt: skip
        for i, C in enumerate(Cs):
            est.set_params(C=float(C)).fit(table.iloc[tr], y[tr])
            want[k, i] = accuracy_score(y[te], est.predict(table.iloc[te]))
    np.testing.assert_allclose(clf.scores_, want, rtol=1e-12)
    assert list(clf.feature_names_in_) == ["seq", "x"]
