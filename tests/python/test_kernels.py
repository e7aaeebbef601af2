"""The kernel layer against scikit-learn's pairwise kernels, closed-form normalisation
identities, the cross-kernel invariant and PSD-ness."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)

import multikernel as mk
from multikernel.kernels import Gaussian, KernelBank, Laplacian, Linear, Polynomial

NORMS = ["none", "trace", "mean_diag", "multiplicative", "spherical"]


@pytest.fixture(scope="module")
def X() -> NDArray[np.float64]:
    return np.random.default_rng(0).normal(size=(40, 5))


def _specs() -> list[mk.kernels.KernelSpec]:
    return [
        Linear(),
        Polynomial(degree=3, coef0=0.5, scale=0.2),
        Gaussian(sigma=1.7),
        Laplacian(sigma=2.5),
        Gaussian(sigma=0.8, features=[1, 3]),
        Polynomial(degree=2, features=[4]),
        Linear(features=[0, 2]),
        Laplacian(sigma=0.7, features=[2]),
    ]


def _sklearn(X: NDArray[np.float64], Y: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    return [
        linear_kernel(X, Y),
        polynomial_kernel(X, Y, degree=3, gamma=0.2, coef0=0.5),
        rbf_kernel(X, Y, gamma=1 / (2 * 1.7**2)),
        laplacian_kernel(X, Y, gamma=1 / 2.5),
        rbf_kernel(X[:, [1, 3]], Y[:, [1, 3]], gamma=1 / (2 * 0.8**2)),
        polynomial_kernel(X[:, [4]], Y[:, [4]], degree=2, gamma=1.0, coef0=1.0),
        linear_kernel(X[:, [0, 2]], Y[:, [0, 2]]),
        laplacian_kernel(X[:, [2]], Y[:, [2]], gamma=1 / 0.7),
    ]


def test_raw_gram_matches_sklearn(X: NDArray[np.float64]) -> None:
    G = mk.kernels.gram(X, _specs())
    for m, ref in enumerate(_sklearn(X, X)):
        np.testing.assert_allclose(G[m], ref, rtol=1e-10, atol=1e-12, err_msg=f"kernel {m}")
        np.testing.assert_array_equal(G[m], G[m].T)


def test_cross_gram_matches_sklearn(X: NDArray[np.float64]) -> None:
    bank = KernelBank(_specs()).fit(X[:30])
    C = bank.transform(X[30:])
    for m, ref in enumerate(_sklearn(X[30:], X[:30])):
        np.testing.assert_allclose(C[m], ref, rtol=1e-10, atol=1e-12, err_msg=f"kernel {m}")


def test_gaussian_from_gamma() -> None:
    g = Gaussian.from_gamma(0.3)
    assert g.gamma == pytest.approx(0.3)
    Xs = np.random.default_rng(1).normal(size=(10, 2))
    np.testing.assert_allclose(mk.kernels.gram(Xs, [g])[0], rbf_kernel(Xs, gamma=0.3), rtol=1e-12)


@pytest.mark.parametrize("normalize", NORMS)
@pytest.mark.parametrize("center", [False, True])
def test_normalisation_identities(X: NDArray[np.float64], normalize: Any, center: bool) -> None:
    raw = np.stack(_sklearn(X, X))
    G = mk.kernels.gram(X, _specs(), normalize=normalize, center=center)
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n
    for m in range(len(raw)):
        K = H @ raw[m] @ H if center else raw[m]
        if normalize == "none":
            ref = K
        elif normalize == "trace":
            ref = K / np.trace(K)
        elif normalize == "mean_diag":
            ref = K * n / np.trace(K)
        elif normalize == "multiplicative":
            ref = K / (np.trace(K) / n - K.sum() / n**2)
        else:
            d = np.sqrt(np.diag(K))
            ref = K / np.outer(d, d)
        np.testing.assert_allclose(G[m], ref, rtol=1e-9, atol=1e-12, err_msg=f"kernel {m}")
    if normalize == "trace":
        np.testing.assert_allclose(np.trace(G, axis1=1, axis2=2), 1.0, rtol=1e-12)
    if normalize == "spherical":
        np.testing.assert_allclose(np.diagonal(G, axis1=1, axis2=2), 1.0, rtol=1e-12)


@pytest.mark.parametrize("normalize", NORMS)
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_kernel_of_training_points_equals_training_rows(
    X: NDArray[np.float64], normalize: Any, center: bool, dtype: Any
) -> None:
    bank = KernelBank(_specs(), normalize=normalize, center=center, dtype=dtype)
    G = bank.fit_transform(X)
    idx = [3, 0, 17, 39]
    C = bank.transform(X[idx])
    assert C.dtype == np.dtype(dtype)
    rtol = 1e-9 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(C, G[:, idx, :], rtol=rtol, atol=rtol * np.abs(G).max())


@pytest.mark.parametrize("normalize", NORMS)
def test_psd(X: NDArray[np.float64], normalize: Any) -> None:
    G = mk.kernels.gram(X, _specs(), normalize=normalize, center=True)
    for m in range(G.shape[0]):
        lam = np.linalg.eigvalsh(G[m])
        assert lam.min() >= -1e-10 * max(np.trace(G[m]), 1e-300), f"kernel {m}: {lam.min()}"


def test_float32_matches_float64(X: NDArray[np.float64]) -> None:
    G64 = mk.kernels.gram(X, _specs(), normalize="trace")
    G32 = mk.kernels.gram(X, _specs(), normalize="trace", dtype=np.float32)
    assert G32.dtype == np.float32
    np.testing.assert_allclose(G32, G64, rtol=1e-5, atol=1e-7 * np.abs(G64).max())


def test_simplemkl_bank_layout() -> None:
    d = 4
    bank = mk.kernels.simplemkl_bank(d)
    assert len(bank) == 27 * (d + 1)
    assert bank[0] == Gaussian(sigma=0.1)
    assert bank[26] == Polynomial(degree=3)
    assert bank[27] == Gaussian(sigma=0.1, features=(0,))
    assert bank[-1] == Polynomial(degree=3, features=(d - 1,))
    assert len(mk.kernels.simplemkl_bank(3, widths=[1.0], degrees=[2])) == 2 * 4


def test_zero_kernel_stays_zero() -> None:
    # A constant column: the linear kernel on it is zero, and a Gaussian on it is constant,
    # hence zero after centring. Neither can be scaled; both stay zero, and are reported.
    Xc = np.c_[np.zeros(8), np.arange(8.0)]
    bank = KernelBank(
        [Linear(features=[0]), Gaussian(features=[0]), Linear(features=[1])],
        normalize="trace",
        center=True,
    )
    G = bank.fit_transform(Xc)
    assert bank.degenerate_ == [0, 1]
    assert np.all(G[0] == 0) and np.all(np.abs(G[1]) < 1e-12)
    assert np.trace(G[2]) == pytest.approx(1.0)


def test_alignment_against_definition(X: NDArray[np.float64]) -> None:
    G = mk.kernels.gram(X, _specs()[:4])
    y = np.sign(X[:, 0] + 0.1)
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n

    def a(K: NDArray[np.float64], L: NDArray[np.float64]) -> float:
        Kc, Lc = H @ K @ H, H @ L @ H
        return float(np.sum(Kc * Lc) / np.linalg.norm(Kc) / np.linalg.norm(Lc))

    A = mk.kernels.alignment(G)
    for i in range(4):
        for j in range(4):
            assert A[i, j] == pytest.approx(a(G[i], G[j]), rel=1e-10)
    t = mk.kernels.alignment(G, y)
    for i in range(4):
        assert t[i] == pytest.approx(a(G[i], np.outer(y, y)), rel=1e-10)


def test_quad_forms(X: NDArray[np.float64]) -> None:
    G = mk.kernels.gram(X, _specs(), normalize="trace")
    v = np.random.default_rng(3).normal(size=X.shape[0])
    ref = np.einsum("i,mij,j->m", v, G, v)
    np.testing.assert_allclose(mk.kernels.quad_forms(G, v), ref, rtol=1e-12)
    np.testing.assert_allclose(mk.kernels.quad_forms(G.astype(np.float32), v), ref, rtol=1e-5)


@pytest.mark.parametrize("tol", [1e-2, 1e-4, 1e-8])
def test_low_rank_error_within_tolerance(X: NDArray[np.float64], tol: float) -> None:
    G = mk.kernels.gram(X, _specs(), normalize="trace")
    lr = mk.kernels.low_rank(G, tol=tol)
    for m in range(G.shape[0]):
        F = lr.factors[m]
        assert F.shape == (X.shape[0], lr.ranks[m])
        R = G[m] - F @ F.T
        tr = np.trace(G[m])
        assert np.trace(R) <= tol * tr * (1 + 1e-9) + 1e-14
        assert np.linalg.norm(R) <= tol * tr * (1 + 1e-9) + 1e-14
        assert lr.errors[m] == pytest.approx(np.trace(R) / tr, abs=1e-12)
    # A linear kernel on 2 features has rank 2: the factorisation finds it exactly.
    assert lr.ranks[6] == 2


# --- bad input -------------------------------------------------------------------------------


def test_bad_inputs() -> None:
    Xb = np.ones((5, 3))
    with pytest.raises(ValueError, match="NaN or infinity"):
        mk.kernels.gram(np.array([[1.0, np.nan], [0.0, 1.0]]), [Linear()])
    with pytest.raises(ValueError, match="2-D"):
        mk.kernels.gram(np.ones(5), [Linear()])
    with pytest.raises(ValueError, match="out of range"):
        mk.kernels.gram(Xb, [Linear(features=[3])])
    with pytest.raises(ValueError, match="empty"):
        Linear(features=[])
    with pytest.raises(ValueError, match="non-negative"):
        Gaussian(features=[-1])
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(sigma=0.0)
    with pytest.raises(ValueError, match="sigma"):
        Laplacian(sigma=-1.0)
    with pytest.raises(ValueError, match="degree"):
        Polynomial(degree=0)
    with pytest.raises(ValueError, match="degree"):
        Polynomial(degree=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="normalize"):
        mk.kernels.gram(Xb, [Linear()], normalize="unit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype"):
        mk.kernels.gram(Xb, [Linear()], dtype=np.int32)
    with pytest.raises(ValueError, match="kernel specification"):
        mk.kernels.gram(Xb, ["rbf"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="n_threads"):
        mk.kernels.gram(Xb, [Linear()], n_threads=-(10**6))
    bank = KernelBank([Linear()])
    with pytest.raises(ValueError, match="not fitted"):
        bank.transform(Xb)
    bank.fit(Xb)
    with pytest.raises(ValueError, match="features"):
        bank.transform(np.ones((2, 4)))


def test_bad_stacks() -> None:
    K = np.eye(4)
    with pytest.raises(ValueError, match=r"\(M, n, n\)"):
        mk.kernels.validate_stack(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="3-D"):
        mk.kernels.validate_stack(K)
    A = np.stack([K, K.copy()])
    A[1, 0, 2] = 0.5
    with pytest.raises(ValueError, match="kernel 1 is not symmetric"):
        mk.kernels.validate_stack(A)
    B = np.stack([K, K.copy()])
    B[0, 1, 1] = np.inf
    with pytest.raises(ValueError, match="kernel 0 contains NaN"):
        mk.kernels.validate_stack(B)
    mk.kernels.validate_stack(np.stack([K, 2 * K]))


def test_too_large_stack_is_refused_before_allocation() -> None:
    X = np.zeros((10, 2))
    from multikernel import _core

    with pytest.raises(mk.kernels.StackTooLargeError, match=r"GiB.*float32"):
        _core.gram_fit(X, [("linear", 0.0, 0.0, 0.0, None)] * 3, "none", False, False, 1, 1000)
    assert issubclass(mk.kernels.StackTooLargeError, MemoryError)
    # A bank that truly cannot fit: ~1e6 points.
    with pytest.raises(mk.kernels.StackTooLargeError, match="float32"):
        mk.kernels.gram(np.zeros((1_000_000, 1)), [Linear()] * 4)


# --- property tests --------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 12),
    d=st.integers(1, 4),
    n_new=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    normalize=st.sampled_from(NORMS),
    center=st.booleans(),
)
def test_property_shapes_and_invariant(
    n: int, d: int, n_new: int, seed: int, normalize: Any, center: bool
) -> None:
    rng = np.random.default_rng(seed)
    Xp = rng.normal(size=(n, d))
    specs = [Gaussian(sigma=1.3), Polynomial(degree=2, features=[d - 1]), Laplacian(sigma=1.0)]
    bank = KernelBank(specs, normalize=normalize, center=center)
    G = bank.fit_transform(Xp)
    assert G.shape == (3, n, n)
    assert np.isfinite(G).all()
    np.testing.assert_allclose(G, np.transpose(G, (0, 2, 1)), atol=1e-12)
    idx = rng.integers(0, n, size=n_new)
    C = bank.transform(Xp[idx])
    assert C.shape == (3, n_new, n)
    np.testing.assert_allclose(C, G[:, idx, :], rtol=1e-8, atol=1e-10)
    raw = np.stack(
        [
            rbf_kernel(Xp, gamma=1 / (2 * 1.3**2)),
            polynomial_kernel(Xp[:, [d - 1]], degree=2, gamma=1.0, coef0=1.0),
            laplacian_kernel(Xp, gamma=1.0),
        ]
    )
    if normalize == "none" and not center:
        np.testing.assert_allclose(G, raw, rtol=1e-10, atol=1e-12)
