"""The wrapper for ``l1`` and ``elasticnet`` (SMO inside for hinge, squared hinge and
ε-insensitive; Newton for logistic and squared) against independent references: cvxpy +
Clarabel on small real problems, SpicyMKL (another algorithm for the same problem) and the
estimators' ``solver="auto"`` rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import check_sparse_certificate, fit_spicy, small_problem
from reference import (
    cvxpy_mkl,
    decision_values,
    load_dataset,
)
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel import _core

FloatArray = NDArray[np.float64]
TOL = 1e-8

CASES = [
    ("hinge", "l1", None, "ionosphere", 1.0),
    ("hinge", "l1", None, "pima", 10.0),
    ("hinge", "elasticnet", 0.5, "sonar", 0.3),
    ("squared_hinge", "l1", None, "sonar", 1.0),
    ("squared_hinge", "elasticnet", 0.3, "pima", 3.0),
    ("epsilon_insensitive", "l1", None, "pima", 1.0),
    ("epsilon_insensitive", "elasticnet", 0.7, "ionosphere", 10.0),
    ("logistic", "l1", None, "ionosphere", 1.0),
    ("logistic", "elasticnet", 0.5, "pima", 3.0),
    ("squared", "l1", None, "sonar", 1.0),
    ("squared", "elasticnet", 0.3, "ionosphere", 10.0),
]

REGRESSION = ("epsilon_insensitive", "squared")


def fit_wrapper(
    G: FloatArray, y: FloatArray, *, loss: str, penalty: str, l1_ratio: float | None, C: float
) -> _core.FitResult:
    settings: dict[str, float | str | None] = {
        "penalty": penalty, "l1_ratio": 1.0 if l1_ratio is None else l1_ratio, "C": C,
        "loss": loss, "epsilon": 0.1, "tol": TOL, "max_iter": 500,
    }  # fmt: skip
    return _core.fit(_core.Settings("wrapper", settings), G, y)


@pytest.mark.parametrize(("loss", "penalty", "l1_ratio", "dataset", "C"), CASES)
def test_objective_matches_cvxpy(
    loss: str, penalty: str, l1_ratio: float | None, dataset: str, C: float
) -> None:
    G, y = small_problem(dataset, loss in REGRESSION, n=80, seed=3)
    ref = cvxpy_mkl(G, y, C=C, loss=loss, penalty=penalty, l1_ratio=l1_ratio)
    r = fit_wrapper(G, y, loss=loss, penalty=penalty, l1_ratio=l1_ratio, C=C)
    check_sparse_certificate(
        G, y, r, ref.objective, loss=loss, penalty=penalty, l1_ratio=l1_ratio, C=C, tol=TOL
    )


@pytest.mark.parametrize(
    "loss", ["hinge", "squared_hinge", "epsilon_insensitive", "logistic", "squared"]
)
def test_wrapper_and_spicy_agree(loss: str) -> None:
    G, y = small_problem("ionosphere", loss in REGRESSION, n=60, seed=5)
    for penalty, l1_ratio in [("l1", None), ("elasticnet", 0.5), ("elasticnet", 0.0)]:
        ours = fit_wrapper(G, y, loss=loss, penalty=penalty, l1_ratio=l1_ratio, C=2.0)
        spicy = fit_spicy(
            G, y, penalty=penalty, l1_ratio=1.0 if l1_ratio is None else l1_ratio, C=2.0,
            loss=loss, epsilon=0.1, tol=TOL, max_iter=500,
        )  # fmt: skip
        assert ours.primal == pytest.approx(spicy.primal, rel=1e-6), (penalty, l1_ratio)
        f_ours = decision_values(G, np.asarray(ours.coef), float(ours.intercept))
        f_spicy = decision_values(G, np.asarray(spicy.coef), float(spicy.intercept))
        scale = float(np.abs(f_spicy).max())
        assert np.abs(f_ours - f_spicy).max() <= 1e-2 * scale


@pytest.mark.parametrize(
    ("penalty", "l1_ratio", "loss"),
    [("l1", 1.0, "hinge"), ("elasticnet", 0.5, "hinge"), ("l1", 1.0, "logistic")],
)
def test_many_kernels_meet_spicy(penalty: str, l1_ratio: float, loss: str) -> None:
    """SpicyMKL's scaling bank (Gaussians on random feature subsets of ringnorm, unit trace),
    M = 50: more than twice the 20 kernels the wrapper starts from. With the elastic net most
    kernels end active and enter as violators; a start above the supremum ``1/r_2`` of the
    effective weights once stalled it at gap 0.2 with 20 kernels."""
    X, y = load_dataset("ringnorm", n=200, seed=0)
    rng = np.random.default_rng(50)
    specs = []
    for _ in range(50):
        size = int(rng.integers(1, X.shape[1] + 1))
        features = sorted(int(j) for j in rng.choice(X.shape[1], size=size, replace=False))
        sigma = float(5.0 * rng.chisquare(1) + 0.1)
        specs.append(mk.kernels.Gaussian(sigma=sigma, features=features))
    G = np.asarray(mk.kernels.gram(X, specs, normalize="trace"))
    settings: dict[str, float | str | None] = {
        "penalty": penalty, "l1_ratio": l1_ratio, "C": 1.0, "tol": 1e-6, "max_iter": 500,
        "loss": loss,
    }  # fmt: skip
    ours = _core.fit(_core.Settings("wrapper", settings), G, y)
    spicy = fit_spicy(G, y, **{**settings, "tol": 1e-8})
    assert ours.converged, ours
    assert ours.primal == pytest.approx(spicy.primal, rel=2e-6)
    assert ours.dual <= spicy.primal * (1 + 1e-9)


def test_a_working_set_of_kernels_records_only_valid_primal_values() -> None:
    """The SimpleMKL bank's first 200 kernels on 150 ionosphere points (hinge, ``l1``, C = 1):
    the wrapper's iterates soon read a working set of kernels only. A trust-region step retried
    in a smaller region once kept weights off the set, whose forms then read as 0, so that the
    recorded primal value fell below the optimum. Every recorded primal value bounds the
    optimum from above, so none may lie below SpicyMKL's certified dual value."""
    X, y = load_dataset("ionosphere", n=150, seed=0)
    specs = mk.kernels.simplemkl_bank(X.shape[1])[:200]
    G = np.asarray(mk.kernels.gram(X, specs, normalize="trace"))
    settings: dict[str, float | str | None] = {"penalty": "l1", "C": 1.0, "tol": 1e-3}
    ours = _core.fit(_core.Settings("wrapper", settings), G, y)
    spicy = fit_spicy(G, y, **{**settings, "tol": 1e-8})
    assert ours.converged, ours
    history = np.asarray(ours.history)
    assert np.any(history[:, 1] == -np.inf), "no restricted iterate"
    assert history[:, 0].min() >= spicy.dual
    assert ours.primal == pytest.approx(spicy.primal, rel=1e-3)


def test_auto_picks_the_wrapper_unless_warm_started() -> None:
    G, y = small_problem("sonar", False, n=60, seed=1)
    warm = mk.MKLClassifier(kernels="precomputed", penalty="l1", warm_start=True)
    assert warm._check_params()[0].solver == "spicy"
    for loss, expected in [("hinge", "wrapper"), ("logistic", "wrapper")]:
        clf = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss=loss, normalize=None)
        early, _ = clf._check_params()
        assert early.solver == expected
        clf.fit(G, y)
        forced = mk.MKLClassifier(
            kernels="precomputed", penalty="l1", loss=loss, normalize=None, solver="spicy"
        ).fit(G, y)
        assert clf.primal_objective_ == pytest.approx(forced.primal_objective_, rel=3e-3)


def test_unconverged_fit_warns() -> None:
    G, y = small_problem("pima", False, n=80, seed=2)
    clf = mk.MKLClassifier(
        kernels="precomputed", penalty="l1", solver="wrapper", C=10.0, max_iter=1,
        tol=1e-10, normalize=None,
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        clf.fit(G, y)
    assert any(issubclass(w.category, ConvergenceWarning) for w in seen)
    assert not clf.converged_
    assert clf.duality_gap_ > 1e-10
    assert clf.dual_objective_ <= clf.primal_objective_
