"""``prox_newton`` on the sparse blocks of a FeatureBank of ``Linear`` kernels (issue 67):
the fit on ``scipy.sparse`` points equals the fit on their dense copy, and the solvers that
read dense rows only refuse them by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.typing import NDArray
from problems import solvers_called

import multikernel as mk
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import FeatureBank, Linear

N, D, GROUPS = 200, 300, 10


def problem(seed: int = 0) -> tuple[Any, NDArray[np.float64], FeatureBank]:
    """``N`` points of ``D`` columns at density 0.05 (CSR), a planted linear signal on the
    first two groups, and a bank of ``GROUPS`` Linear kernels of ``D / GROUPS`` columns."""
    rng = np.random.default_rng(seed)
    X = sp.random(N, D, density=0.05, format="csr", random_state=seed + 1)
    w = np.zeros(D)
    w[: 2 * D // GROUPS] = rng.normal(size=2 * D // GROUPS) * 3.0
    f = X @ w + 0.3 * rng.normal(size=N)
    width = D // GROUPS
    bank = FeatureBank(
        [Linear(features=list(range(g * width, (g + 1) * width))) for g in range(GROUPS)]
    )
    return X, f, bank


PENALTIES: list[dict[str, Any]] = [
    {"penalty": "l1"},
    {"penalty": "elasticnet", "l1_ratio": 0.6},
    {"penalty": "lp", "p": 1.5},
    {"penalty": "group", "groups": [g // 3 for g in range(GROUPS)]},
]


def assert_same_fit(sparse: Any, dense: Any, X: Any, weights_rtol: float = 1e-8) -> None:
    """The two models to 1e-8: objective, coefficients, intercept, predictions; the kernel
    weights to ``weights_rtol``."""
    assert sparse.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(
        sparse.kernel_weights_, dense.kernel_weights_, rtol=weights_rtol, atol=weights_rtol
    )
    score = getattr(sparse, "decision_function", sparse.predict)
    f, g = score(X), getattr(dense, "decision_function", dense.predict)(X.toarray())
    np.testing.assert_allclose(f, g, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("pen", PENALTIES, ids=lambda p: p["penalty"])
@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared"])
def test_sparse_blocks_fit_as_their_dense_copy(
    pen: dict[str, Any], loss: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, f, bank = problem()
    kw: dict[str, Any] = {
        "kernels": bank,
        "solver": "prox_newton",
        "loss": loss,
        "C": 5.0,
        "tol": 1e-10,
        "max_iter": 500,
        **pen,
    }
    make = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    y = f if loss == "squared" else np.where(f > 0, 1.0, -1.0)
    calls = solvers_called(monkeypatch)
    sparse = make(**kw).fit(X, y)
    dense = make(**kw).fit(X.toarray(), y)
    assert calls == ["prox_newton", "prox_newton"]
    # The hinge's smoothing may stall a little above 1e-10 (both alike).
    assert sparse.duality_gap_ <= 1e-8 and dense.duality_gap_ <= 1e-8
    # The group penalty's kernel weights under the hinge's smoothing are read off a flat
    # direction of the objective (the last smoothing levels): equal to 1e-2 only, where the
    # model itself (coefficients, predictions) agrees to 1e-8.
    hinge_group = loss == "hinge" and pen["penalty"] == "group"
    assert_same_fit(sparse, dense, X, weights_rtol=1e-2 if hinge_group else 1e-8)


def test_auto_fits_sparse_blocks_by_prox_newton(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks are wider than ``n / 2`` (dense ones would go to the wrapper on their
    kernels): sparse ones still go to ``prox_newton``, to the same optimum as its fit on the
    dense copy."""
    X, f, bank = problem(3)
    y = np.where(f > 0, 1.0, -1.0)
    kw: dict[str, Any] = {"kernels": bank, "penalty": "l1", "loss": "logistic", "tol": 1e-12}
    calls = solvers_called(monkeypatch)
    sparse = mk.MKLClassifier(**kw).fit(X, y)
    dense = mk.MKLClassifier(**kw, solver="prox_newton").fit(X.toarray(), y)
    assert calls == ["prox_newton", "prox_newton"]
    assert_same_fit(sparse, dense, X)


def test_sparse_blocks_in_other_formats_and_new_points() -> None:
    """CSC and sparse arrays read as CSR; a model fitted on sparse points predicts sparse and
    dense new points alike."""
    X, f, bank = problem(5)
    y = np.where(f > 0, 1.0, -1.0)
    kw: dict[str, Any] = {"kernels": bank, "penalty": "l1", "solver": "prox_newton", "tol": 1e-10}
    a = mk.MKLClassifier(**kw).fit(sp.csc_array(X), y)
    b = mk.MKLClassifier(**kw).fit(X, y)
    assert a.primal_objective_ == b.primal_objective_
    Z = X[:20]
    np.testing.assert_allclose(b.decision_function(Z), b.decision_function(Z.toarray()), atol=1e-12)


@pytest.mark.parametrize(
    ("solver", "penalty"), [("svrg", "lp"), ("spicy", "l1"), ("wrapper", "l1"), ("mirror", "group")]
)
def test_solvers_of_dense_rows_refuse_sparse_blocks(solver: str, penalty: str) -> None:
    X, f, bank = problem()
    y = np.where(f > 0, 1.0, -1.0)
    groups = [0] * GROUPS if penalty == "group" else None
    est = mk.MKLClassifier(
        kernels=bank, penalty=penalty, groups=groups, loss="logistic", solver=solver
    )
    with pytest.raises(InvalidParameterError, match=rf"solver \"{solver}\" does not fit sparse"):
        est.fit(X, y)
