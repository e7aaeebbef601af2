"""``kernels.Callable``: any kernel a user brings, normalised by the engine like the others.

Values against scikit-learn's ``pairwise_kernels`` with every normalisation computed here in
numpy from the raw kernel, a user function against the Rust spec it computes, mixed banks in an
estimator, the errors (each naming the kernel), pickling and the GIL between blocks.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.metrics.pairwise import pairwise_kernels

import multikernel as mk
from multikernel.exceptions import (
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDError,
    KernelNotSymmetricError,
    NonFiniteError,
)
from multikernel.kernels import Callable, FeatureBank, Gaussian, KernelBank, Linear, gram

NORMS = ["none", "trace", "mean_diag", "multiplicative", "spherical"]
METRICS: dict[str, dict[str, Any]] = {
    "chi2": {"gamma": 0.7},
    "additive_chi2": {},
    "cosine": {},
    "sigmoid": {"gamma": 0.2, "coef0": 0.5},
}


@pytest.fixture(scope="module")
def data() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Training and new points, non-negative (the χ² kernels read histograms)."""
    rng = np.random.default_rng(3)
    return rng.random((30, 4)), rng.random((7, 4))


def reference(
    K: NDArray[np.float64],
    Kx: NDArray[np.float64],
    kxx: NDArray[np.float64],
    normalize: str,
    center: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The normalised training kernel ``K`` and cross kernel ``Kx`` (new × train), from the
    raw kernels and the new points' self-values ``kxx``, written out from the definitions
    (mathematics §3.6); a kernel that is zero (after centring) stays zero."""
    n = K.shape[0]
    if center:
        r, t, rx = K.mean(axis=1), K.mean(), Kx.mean(axis=1)
        K = K - r[:, None] - r[None, :] + t
        kxx = kxx - 2 * rx + t
        Kx = Kx - rx[:, None] - r[None, :] + t
    d = np.diag(K).copy()
    if normalize == "spherical":

        def inv_sqrt(v: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.where(v > 0, 1 / np.sqrt(np.where(v > 0, v, 1.0)), 0.0)

        return K * inv_sqrt(np.outer(d, d)), Kx * inv_sqrt(np.outer(kxx, d))
    trace, raw = d.sum(), max(np.abs(np.diag(K)).sum(), 1e-300)
    variance = trace / n - K.mean()
    per = {"none": 1.0, "trace": trace, "mean_diag": trace / n, "multiplicative": variance}
    zero = trace <= 1e-12 * raw or (normalize == "multiplicative" and variance <= 1e-12 * raw / n)
    scale = 1.0 if normalize == "none" else (0.0 if zero else 1 / per[normalize])
    return K * scale, Kx * scale


@pytest.mark.parametrize("metric", sorted(METRICS))
@pytest.mark.parametrize("normalize", NORMS)
@pytest.mark.parametrize("center", [False, True])
def test_named_metrics_match_sklearn_with_every_normalisation(
    data: tuple[NDArray[np.float64], NDArray[np.float64]],
    metric: str,
    normalize: str,
    center: bool,
) -> None:
    X, Xn = data
    params = METRICS[metric]
    cols = [0, 2, 3]
    bank = KernelBank(
        [Gaussian(1.0), Callable(metric, features=cols, **params)],
        normalize=normalize,
        center=center,
    )
    A, B = X[:, cols], Xn[:, cols]
    raw = pairwise_kernels(A, metric=metric, **params)
    raw_x = pairwise_kernels(B, A, metric=metric, **params)
    self_x = np.diag(pairwise_kernels(B, metric=metric, **params))
    K, Kx = reference(raw, raw_x, self_x, normalize, center)
    d = np.sqrt(np.clip(np.diag(K), 0, None))
    scale = np.abs(K).max()
    if np.diag(K).min() < -1e-8 * scale or (np.abs(K) - np.outer(d, d)).max() > 1e-8 * scale:
        # Not PSD (additive χ² is only conditionally PSD until centred; sigmoid is not PSD in
        # general): refused, naming the kernel, and rightly so.
        assert np.linalg.eigvalsh(K).min() < -1e-8 * scale
        with pytest.raises(KernelNotPSDError) as err:
            bank.fit_transform(X)
        assert err.value.kernel == 1
        return
    G, Gx = bank.fit_transform(X), bank.transform(Xn)
    np.testing.assert_allclose(G[1], K, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Gx[1], Kx, rtol=1e-10, atol=1e-12)
    # The Rust kernel next to it is untouched by the callable.
    alone = KernelBank([Gaussian(1.0)], normalize=normalize, center=center)
    np.testing.assert_array_equal(G[0], alone.fit_transform(X)[0])
    np.testing.assert_array_equal(Gx[0], alone.transform(Xn)[0])


@pytest.mark.parametrize("normalize", NORMS)
def test_a_user_function_equals_the_spec_it_computes(normalize: str) -> None:
    # 600 points: the training kernel comes in three blocks of rows.
    rng = np.random.default_rng(1)
    X, Xn = rng.normal(size=(600, 5)), rng.normal(size=(9, 5))
    mine = KernelBank(
        [Callable(lambda A, B: A @ B.T, features=[1, 4]), Callable(lambda A, B: A @ B.T)],
        normalize=normalize,
        center=True,
    )
    spec = KernelBank([Linear(features=[1, 4]), Linear()], normalize=normalize, center=True)
    np.testing.assert_allclose(mine.fit_transform(X), spec.fit_transform(X), rtol=0, atol=1e-12)
    np.testing.assert_allclose(mine.transform(Xn), spec.transform(Xn), rtol=0, atol=1e-12)
    G32 = mk.kernels.KernelBank(
        [Callable(lambda A, B: A @ B.T)],
        normalize=normalize,
        center=True,
        dtype=np.float32,
    ).fit_transform(X)
    assert G32.dtype == np.float32
    np.testing.assert_allclose(G32, spec.fit_transform(X)[1:], rtol=0, atol=1e-5)


def test_a_mixed_bank_fits_as_its_precomputed_stack() -> None:
    rng = np.random.default_rng(2)
    X, Xn = rng.random((80, 6)), rng.random((20, 6))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.8).astype(int)
    specs = [Gaussian(0.5), Callable("chi2", gamma=0.5), Callable("cosine", features=[2, 3, 4])]
    clf = mk.MKLClassifier(kernels=specs, C=1.0, tol=1e-6).fit(X, y)
    bank = KernelBank(specs, normalize="mean_diag")
    pre = mk.MKLClassifier(kernels="precomputed", C=1.0, tol=1e-6).fit(bank.fit_transform(X), y)
    np.testing.assert_allclose(clf.kernel_weights_, pre.kernel_weights_, rtol=1e-12)
    np.testing.assert_allclose(clf.dual_coef_, pre.dual_coef_, rtol=1e-12, atol=1e-14)
    G_test = bank.transform(Xn)
    f = clf.decision_function(Xn)
    np.testing.assert_allclose(f, pre.decision_function(G_test), rtol=1e-12, atol=1e-12)
    # A named metric pickles, fitted estimator included.
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.decision_function(Xn), f)


def test_a_lambda_does_not_pickle() -> None:
    bank = KernelBank([Callable(lambda A, B: A @ B.T)]).fit(np.eye(3))
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(bank)


def test_bad_blocks_are_errors_naming_the_kernel() -> None:
    X = np.random.default_rng(4).random((300, 3))

    def fails(fn: Any) -> Any:
        with pytest.raises(InvalidInputError) as info:
            gram(X, [Linear(), Callable(fn)])
        assert info.value.kernel == 1
        return info.value

    err = fails(lambda A, B: np.zeros((2, 2)))
    assert "shape (2, 2)" in str(err) and "(len(A), len(B))" in str(err)
    assert "a str" in str(fails(lambda A, B: "no"))

    def nan_at(A: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
        K = A @ B.T
        if len(A) < 256:  # the last block of rows: 256..299
            K[10, 3] = np.nan
        return K

    err = fails(nan_at)
    assert isinstance(err, NonFiniteError) and err.entry == (266, 3)
    err = fails(lambda A, B: A[:, :1] @ B[:, 1:2].T)
    assert isinstance(err, KernelNotSymmetricError)
    # A cross kernel need not be symmetric, but must have the right shape.
    bank = KernelBank([Callable(lambda A, B: A @ B.T if len(A) != 5 else A[:1] @ B.T)])
    bank.fit(X)
    with pytest.raises(InvalidInputError) as info:
        bank.transform(X[:5])
    assert info.value.kernel == 0


def test_an_exception_in_the_function_propagates_as_is() -> None:
    class Mine(Exception):
        pass

    def boom(A: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
        raise Mine("from the user's function")

    with pytest.raises(Mine, match="from the user's function"):
        gram(np.eye(4), [Gaussian(1.0), Callable(boom)])
    # scikit-learn's own check of the χ² input, as scikit-learn raises it.
    with pytest.raises(ValueError, match="negative"):
        gram(-np.eye(4), [Callable("chi2")])


def test_invalid_specs_and_feature_maps() -> None:
    with pytest.raises(ValueError, match="pairwise_kernels metric"):
        Callable("chi3")
    with pytest.raises(ValueError, match="callable"):
        Callable(3.0)
    with pytest.raises(InvalidParameterError, match="kernel 0 features"):
        gram(np.eye(3), [Callable("cosine", features=[5])])
    for method in ("rff", "nystroem"):
        with pytest.raises(InvalidParameterError, match="no feature map"):
            FeatureBank([Gaussian(1.0), Callable("chi2")], method=method)
    spec = Callable("chi2", features=[0, 1], gamma=0.5)
    assert spec == Callable("chi2", [0, 1], gamma=0.5) and len({spec, spec}) == 1
    assert repr(spec) == "Callable('chi2', features=(0, 1), gamma=0.5)"


def test_the_gil_is_released_between_blocks() -> None:
    """The engine calls the function from its own thread, taking the GIL for each call only:
    another Python thread runs between the blocks of a long gram."""
    stop = threading.Event()
    ticks = [0]

    def tick() -> None:
        while not stop.is_set():
            ticks[0] += 1

    seen: list[tuple[str, int]] = []

    def linear(A: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
        seen.append((threading.current_thread().name, ticks[0]))
        return A @ B.T

    # Ten blocks: the other thread must win the GIL in one of nine gaps (with five it once lost
    # all four while the machine was busy compiling).
    X = np.random.default_rng(5).normal(size=(2560, 4))
    other = threading.Thread(target=tick)
    other.start()
    try:
        gram(X, [Callable(linear), *(Gaussian(s) for s in (0.5, 1.0, 2.0))], n_threads=2)
    finally:
        stop.set()
        other.join()
    assert len(seen) == 10  # 2560 rows in blocks of 256
    assert all(name != threading.current_thread().name for name, _ in seen)
    counts = [t for _, t in seen]
    assert counts[-1] > counts[0]
