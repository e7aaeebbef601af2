"""scikit-learn's model selection on precomputed stacks (``kernels.PairwiseStack``): every tool
splits the stack pairwise and scores exactly as a hand-written loop over ``np.ix_`` slices of
the plain ``(M, n, n)`` array."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
    learning_curve,
    permutation_test_score,
    validation_curve,
)
from sklearn.pipeline import Pipeline

import multikernel as mk
from multikernel.exceptions import InvalidInputError
from multikernel.kernels import Gaussian, Linear, PairwiseStack, Polynomial

FloatArray = NDArray[np.float64]


def _data(n: int = 72, classes: int = 2, seed: int = 0) -> tuple[FloatArray, NDArray[Any]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.normal(size=n)
    edges = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
    return X, np.digitize(score, edges)


def _stack(X: FloatArray) -> FloatArray:
    specs = [Gaussian(sigma=1.0), Gaussian(sigma=3.0), Linear(), Polynomial(degree=2)]
    return mk.kernels.gram(X, specs)


def _hand(est: Any, G: FloatArray, y: NDArray[Any], splits: list[Any], **fit: Any) -> list[float]:
    """The held-out score of ``est`` on every split, fitted on ``G[np.ix_(tr, tr)]`` and
    scored on ``G[np.ix_(te, tr)]`` kernel by kernel: the reference loop."""
    out = []
    for tr, te in splits:
        model = clone(est).fit(G[:, tr][:, :, tr], y[tr], **fit)
        out.append(float(model.score(G[:, te][:, :, tr], y[te])))
    return out


def test_stack_indexes_as_a_kernel_matrix() -> None:
    G = _stack(_data(20)[0])
    S = PairwiseStack(G)
    assert S.kernels is G and S.shape == (20, 20) and len(S) == 20
    rows, cols = np.array([3, 1, 7]), np.array([0, 5])
    np.testing.assert_array_equal(S[np.ix_(rows, cols)].kernels, G[:, rows][:, :, cols])
    np.testing.assert_array_equal(S[rows].kernels, G[:, rows])
    np.testing.assert_array_equal(S[2:5, ::3].kernels, G[:, 2:5, ::3])
    mask = np.arange(20) % 2 == 0
    np.testing.assert_array_equal(S[mask, mask].kernels, G[:, mask][:, :, mask])
    assert S[np.ix_(rows, cols)].kernels.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(np.asarray(S), G)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(S)).kernels, G)
    with pytest.raises(InvalidInputError, match="keep rows and columns"):
        S[3]
    with pytest.raises(InvalidInputError, match="rows, cols"):
        S[1:2, 1:2, 0]
    with pytest.raises(InvalidInputError, match="3-D"):
        PairwiseStack(G[0])


def test_stack_needs_precomputed_kernels() -> None:
    X, y = _data(30)
    with pytest.raises(InvalidInputError, match="kernels='precomputed'"):
        mk.MKLClassifier().fit(PairwiseStack(_stack(X)), y)


def test_a_plain_stack_sliced_pairwise_is_refused_with_the_fix() -> None:
    # scikit-learn's pairwise split of a plain (M, n, n) array with M = n slices the kernel
    # axis: (k, k, n) reaches the fit, which names the wrapper.
    G = np.broadcast_to(np.eye(6), (6, 6, 6)).copy()
    tr = np.arange(4)
    with pytest.raises(InvalidInputError, match="PairwiseStack"):
        mk.MKLClassifier(kernels="precomputed").fit(G[np.ix_(tr, tr)], [0, 1, 0, 1])


@pytest.mark.parametrize(
    ("est", "classes"),
    [
        (mk.MKLClassifier(kernels="precomputed", loss="hinge"), 2),
        (mk.MKLClassifier(kernels="precomputed", loss="logistic", multi_class="ovo"), 3),
        (mk.MKLRegressor(kernels="precomputed"), 0),
    ],
)
def test_grid_search_equals_the_hand_loop(est: Any, classes: int) -> None:
    X, y = _data(72, max(classes, 2))
    yt = y if classes else X[:, 0] + X[:, 1] ** 2
    G = _stack(X)
    cv = StratifiedKFold(3) if classes else KFold(3, shuffle=True, random_state=0)
    grid = {"C": [0.1, 1.0, 10.0], "p": [1.5, 2.0]}
    search = GridSearchCV(est, grid, cv=cv).fit(PairwiseStack(G), yt)
    splits = list(cv.split(X, yt))
    for k, params in enumerate(search.cv_results_["params"]):
        got = [search.cv_results_[f"split{i}_test_score"][k] for i in range(3)]
        want = _hand(est.set_params(**params), G, yt, splits)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # The refit reads the test cross kernels (M, n_test, n).
    Xt, _ = _data(10, seed=1)
    bank = mk.kernels.KernelBank(
        [Gaussian(sigma=1.0), Gaussian(sigma=3.0), Linear(), Polynomial(degree=2)]
    ).fit(X)
    np.testing.assert_array_equal(
        search.predict(PairwiseStack(bank.transform(Xt))), search.predict(bank.transform(Xt))
    )


def test_randomized_search_and_validation_curve_equal_the_hand_loop() -> None:
    X, y = _data(60)
    G, S, cv = _stack(X), PairwiseStack(_stack(X)), StratifiedKFold(3)
    est = mk.MKLClassifier(kernels="precomputed")
    splits = list(cv.split(X, y))
    search = RandomizedSearchCV(est, {"C": [0.3, 3.0, 30.0]}, n_iter=2, cv=cv, random_state=0)
    search.fit(S, y)
    for k, params in enumerate(search.cv_results_["params"]):
        got = [search.cv_results_[f"split{i}_test_score"][k] for i in range(3)]
        np.testing.assert_allclose(got, _hand(clone(est).set_params(**params), G, y, splits))
    _, test = validation_curve(est, S, y, param_name="C", param_range=[0.5, 5.0], cv=cv)
    for j, C in enumerate([0.5, 5.0]):
        np.testing.assert_allclose(test[j], _hand(clone(est).set_params(C=C), G, y, splits))


def test_cross_validate_shared_with_class_weight_equals_the_hand_loop() -> None:
    X, y = _data(90, 3)
    y = np.where(np.arange(90) < 12, 0, y)  # unbalanced: class 0 the most frequent
    G = _stack(X)
    est = mk.MKLClassifier(kernels="precomputed", multi_class="shared", class_weight="balanced")
    cv = StratifiedKFold(3, shuffle=True, random_state=2)
    out = cross_validate(est, PairwiseStack(G), y, cv=cv, scoring=["accuracy", "f1_macro"])
    splits = list(cv.split(X, y))
    np.testing.assert_allclose(out["test_accuracy"], _hand(est, G, y, splits), rtol=1e-12)
    from sklearn.metrics import f1_score

    f1 = []
    for tr, te in splits:
        model = clone(est).fit(G[:, tr][:, :, tr], y[tr])
        f1.append(f1_score(y[te], model.predict(G[:, te][:, :, tr]), average="macro"))
    np.testing.assert_allclose(out["test_f1_macro"], f1, rtol=1e-12)


def test_cross_val_score_pipeline_and_sample_weight_equal_the_hand_loop() -> None:
    X, y = _data(60)
    G, cv = _stack(X), StratifiedKFold(4)
    w = np.random.default_rng(3).uniform(0.5, 2.0, size=60)
    est = mk.MKLClassifier(kernels="precomputed", C=2.0)
    splits = list(cv.split(X, y))
    pipe = Pipeline([("mkl", est)])
    np.testing.assert_allclose(
        cross_val_score(pipe, PairwiseStack(G), y, cv=cv), _hand(est, G, y, splits)
    )
    got = cross_val_score(est, PairwiseStack(G), y, cv=cv, params={"sample_weight": w})
    want = []
    for tr, te in splits:
        model = clone(est).fit(G[:, tr][:, :, tr], y[tr], sample_weight=w[tr])
        want.append(model.score(G[:, te][:, :, tr], y[te]))
    np.testing.assert_allclose(got, want)


def test_learning_curve_and_permutation_score_equal_the_hand_loop() -> None:
    X, y = _data(60)
    G, S, cv = _stack(X), PairwiseStack(_stack(X)), StratifiedKFold(3)
    est = mk.MKLClassifier(kernels="precomputed", C=5.0)
    splits = list(cv.split(X, y))
    sizes, _, test = learning_curve(est, S, y, train_sizes=[20, 40], cv=cv)
    for j, size in enumerate(sizes):
        cut = [(tr[:size], te) for tr, te in splits]
        np.testing.assert_allclose(test[j], _hand(est, G, y, cut))
    score, perms, _ = permutation_test_score(est, S, y, cv=cv, n_permutations=3, random_state=0)
    assert score == pytest.approx(np.mean(_hand(est, G, y, splits)))
    assert perms.shape == (3,)


def test_cv_estimators_and_path_read_a_pairwise_stack() -> None:
    X, y = _data(60)
    G = _stack(X)
    S = PairwiseStack(G)
    a = mk.MKLClassifierCV(kernels="precomputed", Cs=4, cv=3).fit(S, y)
    b = mk.MKLClassifierCV(kernels="precomputed", Cs=4, cv=3).fit(G, y)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    np.testing.assert_array_equal(a.decision_function(S), b.decision_function(G))
    path = mk.mkl_path(S, np.where(y == 1, 1.0, -1.0))
    np.testing.assert_array_equal(path.predict(S, C=path.Cs[-1]), path.predict(G, C=path.Cs[-1]))
    cv = StratifiedKFold(3)
    nested = cross_val_score(mk.MKLClassifierCV(kernels="precomputed", Cs=4, cv=3), S, y, cv=cv)
    assert nested.shape == (3,)
