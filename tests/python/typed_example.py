"""A typed user script: ``mypy --strict`` must accept it against multikernel's public API
(and pytest runs it, so it also has to work)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import Gaussian, KernelBank, KernelSpec, Linear, Polynomial


def build(X: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    specs: list[KernelSpec] = [Gaussian(sigma=2.0, features=[0, 1]), Polynomial(degree=2), Linear()]
    specs += mk.kernels.simplemkl_bank(n_features=X.shape[1], widths=[1.0], degrees=[1])
    bank = KernelBank(specs, normalize="trace", dtype=np.float64, n_threads=1)
    G: NDArray[np.float64] = bank.fit_transform(X[:20])
    G_test: NDArray[np.float64] = bank.transform(X[20:])
    return G, G_test


def test_typed_example() -> None:
    X = np.random.default_rng(0).normal(size=(25, 3))
    G, G_test = build(X)
    assert G.shape == (3 + 2 * 4, 20, 20)
    assert G_test.shape == (11, 5, 20)
    np.testing.assert_allclose(np.trace(G, axis1=1, axis2=2), 1.0)
    w: NDArray[np.float64] = mk.kernels.quad_forms(G, np.ones(20))
    np.testing.assert_allclose(w, G.sum(axis=(1, 2)), rtol=1e-12)
