"""The input layer (``multikernel._data``): one resolution of ``kernels=`` and ``X`` for the
estimators, the path and the CV estimators, the same errors everywhere."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import multikernel as mk
from multikernel._data import Blocks, Dense, TestSide
from multikernel.exceptions import InvalidInputError
from multikernel.kernels import FeatureBank, Gaussian, Linear


def _problem(n: int = 40) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def test_blocks_and_their_dense_stack_agree() -> None:
    rng = np.random.default_rng(1)
    F = [rng.normal(size=(12, 3)), rng.normal(size=(12, 5))]
    blocks, dense = Blocks(F), Dense(np.stack([f @ f.T for f in F]))
    assert (blocks.n, blocks.M, dense.n, dense.M) == (12, 2, 12, 2)
    tr, te = np.arange(0, 12, 2), np.arange(1, 12, 2)
    sub_b, sub_d = blocks.subset(tr), dense.subset(tr)
    np.testing.assert_allclose(np.stack([f @ f.T for f in sub_b.F]), sub_d.G)
    A = rng.normal(size=(2, len(tr)))
    f_dense = dense.cross(te, tr).decision(A, 0.5, sub_d.weights(A))
    f_blocks = blocks.cross(te, tr).decision(A, 0.5, sub_b.weights(A))
    np.testing.assert_allclose(f_blocks, f_dense, rtol=1e-12)
    assert sub_d.weights(A) is None
    assert blocks.repair("clip", 0)[0] is blocks


@pytest.mark.parametrize("bad", ["nan", "3d"])
def test_bad_raw_points_raise_the_same_error_everywhere(bad: str) -> None:
    X, y = _problem()
    Xb = np.where(X > 1.5, np.nan, X) if bad == "nan" else X[None]
    specs = [Linear(), Gaussian(sigma=1.0)]
    bank = FeatureBank(specs, n_components=5)
    for kernels in (specs, bank):
        for fit in (
            mk.MKLRegressor(kernels=kernels).fit,
            lambda Z, t, k=kernels: mk.mkl_path(Z, t, kernels=k),
            mk.MKLRegressorCV(kernels=kernels, Cs=3, cv=2).fit,
        ):
            with pytest.raises(InvalidInputError) as err:
                fit(Xb, y)
            assert ("FeatureBank maps raw points" in str(err.value)) == (kernels is bank)


def test_bad_test_stacks_raise_the_same_error_everywhere() -> None:
    X, y = _problem()
    specs = [Linear(), Gaussian(sigma=1.0)]
    G = mk.kernels.gram(X, specs)
    reg = mk.MKLRegressor(kernels="precomputed").fit(G, y)
    path = mk.mkl_path(G, y - y.mean(), kernels="precomputed", C_max=10.0)
    for predict in (reg.predict, lambda Z: path.predict(Z, 1.0)):
        with pytest.raises(InvalidInputError, match="G_test must have shape"):
            predict(G[:, :5, :-1])
        with pytest.raises(InvalidInputError, match="NaN"):
            predict(G[:, :5] * np.nan)


def test_estimators_read_low_rank_factors_as_the_cv_refit_does() -> None:
    X, y = _problem(60)
    G = mk.kernels.gram(X, [Linear(), Gaussian(sigma=1.0)], normalize="mean_diag")
    low = mk.kernels.low_rank(G, tol=1e-8)
    on_factors = mk.MKLRegressor(kernels="precomputed", tol=1e-8).fit(low, y)
    on_list = mk.MKLRegressor(kernels="precomputed", tol=1e-8).fit(low.factors, y)
    np.testing.assert_array_equal(on_factors.dual_coef_, on_list.dual_coef_)
    rows = [f[:5] for f in low.factors]
    np.testing.assert_allclose(on_factors.predict(rows), on_list.predict(rows), rtol=1e-12)
    # After factors, the dense cross kernels are read too (as G_m(x) G_mᵀ, or exact).
    np.testing.assert_allclose(on_factors.predict(G[:, :5]), on_list.predict(rows), atol=1e-6)
    with pytest.raises(InvalidInputError, match="feature blocks"):
        on_list.predict(G[:, :5])


def test_the_test_side_checks_widths() -> None:
    side = TestSide(2, 4, widths=[3, 5], factors=True)
    with pytest.raises(InvalidInputError, match="widths of the training factors"):
        side.stack([np.ones((2, 3)), np.ones((2, 4))], np.asarray)
    out = side.stack([np.ones((2, 3)), np.ones((2, 5))], np.asarray)
    assert isinstance(out, Blocks) and out.n == 2
    assert isinstance(side.stack(np.ones((2, 2, 4)), np.asarray), Dense)
