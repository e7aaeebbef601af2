"""``MKLClassifier(probability=True)``: Platt's sigmoid on out-of-fold decision values, as
scikit-learn's ``SVC(probability=True)``. References: scikit-learn's own Platt fit
(``sklearn.calibration._sigmoid_calibration``, L-BFGS) on the same decision values, the folds
rebuilt by hand from the public API, and the closed form of pairwise coupling on consistent
pairwise probabilities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.calibration import _sigmoid_calibration
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold

import multikernel as mk
from multikernel._platt import pairwise_coupling, platt_fit, platt_proba
from multikernel.exceptions import InvalidInputError
from multikernel.kernels import Gaussian, Linear

FloatArray = NDArray[np.float64]


@pytest.mark.parametrize("n", [12, 200, 3000])
def test_platt_fit_equals_scikit_learns(n: int) -> None:
    rng = np.random.default_rng(n)
    f = 3.0 * rng.normal(size=n)
    y = np.where(f + rng.normal(size=n) > 0.5, 1.0, -1.0)
    a, b = platt_fit(f, y)
    a_ref, b_ref = _sigmoid_calibration(f, (y > 0).astype(int))
    assert a == pytest.approx(a_ref, rel=1e-5, abs=1e-6)
    assert b == pytest.approx(b_ref, rel=1e-5, abs=1e-6)
    assert np.all(np.diff(platt_proba(np.sort(f), a, b)) >= 0)  # A < 0: increasing in f


def test_pairwise_coupling_recovers_consistent_probabilities() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=6)
    r = p[:, :, None] / (p[:, :, None] + p[:, None, :])  # r_ij = p_i / (p_i + p_j)
    np.testing.assert_allclose(pairwise_coupling(r), p, rtol=1e-10, atol=1e-12)


def _stack() -> tuple[FloatArray, NDArray[np.int64]]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    specs = [Linear(), Gaussian(sigma=4.0), Gaussian(sigma=8.0, features=[0, 1, 2, 3])]
    return mk.kernels.gram(X[:160], specs, normalize="mean_diag"), y[:160]


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_binary_probabilities_follow_from_the_out_of_fold_decisions(loss: str) -> None:
    """The same five stratified folds (seed = random_state), each fitted through the public
    API on its rows of the stack, and scikit-learn's Platt fit on the pooled decisions."""
    G, y = _stack()
    tr_all, te_all = np.arange(120), np.arange(120, 160)
    G_tr, G_te = G[:, :120][:, :, :120], G[:, 120:][:, :, :120]
    kw: dict[str, Any] = {"kernels": "precomputed", "loss": loss, "C": 3.0, "tol": 1e-8}
    clf = mk.MKLClassifier(probability=True, random_state=7, **kw).fit(G_tr, y[tr_all])
    yb = np.where(y[tr_all] == clf.classes_[1], 1, -1)
    f = np.empty(120)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=7)
    for tr, te in folds.split(np.zeros(120), yb):
        fold = mk.MKLClassifier(**kw).fit(G_tr[:, tr][:, :, tr], yb[tr])
        f[te] = fold.decision_function(G_tr[:, te][:, :, tr])
    a, b = _sigmoid_calibration(f, (yb > 0).astype(int))
    assert clf.probA_[0] == pytest.approx(a, rel=1e-4) and clf.probB_[0] == pytest.approx(
        b, rel=1e-4, abs=1e-5
    )
    p1 = 1.0 / (1.0 + np.exp(a * clf.decision_function(G_te) + b))
    P = clf.predict_proba(G_te)
    np.testing.assert_allclose(P[:, 1], p1, atol=1e-4)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    # Probabilities from Platt never change the model itself.
    plain = mk.MKLClassifier(**kw).fit(G_tr, y[tr_all])
    np.testing.assert_array_equal(plain.dual_coef_, clf.dual_coef_)
    assert te_all.size == P.shape[0]


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
def test_multiclass_probabilities(multi_class: str) -> None:
    X, y = load_iris(return_X_y=True)
    clf = mk.MKLClassifier(probability=True, multi_class=multi_class, C=10.0).fit(X, y)
    assert clf.probA_.shape == (3,) and np.all(clf.probA_ < 0)
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(P >= 0)
    f = clf.decision_function(X)
    pk = np.column_stack([platt_proba(f[:, k], clf.probA_[k], clf.probB_[k]) for k in range(3)])
    if multi_class == "ovr":
        np.testing.assert_allclose(P, pk / pk.sum(axis=1, keepdims=True), rtol=1e-12)
    else:
        # Coupled pairwise: each row minimises Σ_{i≠j} (r_ji p_i − r_ij p_j)² over the simplex
        # (Wu, Lin & Weng's method 2), checked against SLSQP on that objective.
        from scipy.optimize import minimize

        for i in range(0, 150, 15):
            r = np.zeros((3, 3))
            for k, (a, b) in enumerate(clf.pairs_):
                r[a, b], r[b, a] = pk[i, k], 1.0 - pk[i, k]

            def objective(q: FloatArray, r: FloatArray = r) -> float:
                return float(sum((r[j, t] * q[t] - r[t, j] * q[j]) ** 2
                                 for t in range(3) for j in range(3) if j != t))  # fmt: skip

            ref = minimize(objective, np.full(3, 1 / 3), method="SLSQP", bounds=[(0, 1)] * 3,
                           constraints={"type": "eq", "fun": lambda q: q.sum() - 1.0},
                           options={"ftol": 1e-14})  # fmt: skip
            np.testing.assert_allclose(P[i], ref.x, atol=1e-5)
    assert np.mean(P.argmax(axis=1) == y) > 0.95


def test_logistic_one_vs_one_couples_the_pairs() -> None:
    """The logistic loss one-vs-one has probabilities too (it raised AttributeError while
    ``hasattr`` said True): each pair's ``σ(f_ab)`` is ``P(a | a or b)``, coupled as Platt's.
    A flipped sign would put the mass on the wrong class of every pair."""
    X, y = load_iris(return_X_y=True)
    clf = mk.MKLClassifier(loss="logistic", multi_class="ovo", C=10.0).fit(X, y)
    assert hasattr(clf, "predict_proba")
    P = clf.predict_proba(X)
    f = clf.decision_function(X)
    r = np.zeros((len(X), 3, 3))
    for k, (a, b) in enumerate(clf.pairs_):
        r[:, a, b] = 1.0 / (1.0 + np.exp(-f[:, k]))
        r[:, b, a] = 1.0 - r[:, a, b]
    np.testing.assert_allclose(P, pairwise_coupling(r), rtol=1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.mean(P.argmax(axis=1) == y) > 0.95
    # Two classes: one pair, σ(f) itself, whatever the scheme.
    two = mk.MKLClassifier(loss="logistic", multi_class="ovo").fit(X[50:], y[50:])
    p1 = 1.0 / (1.0 + np.exp(-two.decision_function(X[50:])))
    np.testing.assert_allclose(two.predict_proba(X[50:])[:, 1], p1, rtol=1e-12)


def test_errors_name_the_option() -> None:
    X, y = load_iris(return_X_y=True)
    clf = mk.MKLClassifier(C=10.0)
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(AttributeError, match=r"probability=True") as err:
        clf.predict_proba  # noqa: B018
    # The reason and the ways out are in the message itself, not only in a chained cause.
    msg = str(err.value)
    assert err.value.__cause__ is None
    assert "loss='hinge' gives decision values, not probabilities" in msg
    assert "loss='logistic'" in msg and "CalibratedClassifierCV" in msg
    # The calibration it names works on the hinge classifier.
    from sklearn.calibration import CalibratedClassifierCV

    cal = CalibratedClassifierCV(mk.MKLClassifier(C=10.0), cv=3).fit(X, y)
    np.testing.assert_allclose(cal.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)
    assert np.mean(cal.predict(X) == y) > 0.9
    clf.fit(X, y).set_params(probability=True)
    with pytest.raises(NotFittedError, match="refit it with probability=True") as nf:
        clf.predict_proba(X)
    assert isinstance(nf.value, mk.exceptions.NotFittedError)  # the library's own, too
    with pytest.raises(InvalidInputError, match="two points of each"):
        mk.MKLClassifier(probability=True).fit(X[:51], y[:51])
    with pytest.raises(mk.exceptions.InvalidParameterError, match="probability"):
        mk.MKLClassifier(probability=1).fit(X, y)  # type: ignore[arg-type]
