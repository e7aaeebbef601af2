"""Hostile inputs on the newer surfaces (issue 54): nothing repaired silently, nothing leaked.

Each case failed before its fix: a kernel function with a negative diagonal that a
normalisation hid, a kernel function writing to the caller's ``X``, a cache size the engine
cannot hold, an internal ±1 label in a probability error, Platt's sigmoid fitted to NaN, a bare
``assert`` as an error, and a fit publishing its attributes one by one. The references are
independent where values can be checked: a fit with samples of weight 0 against the fit
without them."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError

import multikernel as mk
from multikernel import _core
from multikernel.exceptions import (
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDError,
    NonFiniteError,
)
from multikernel.kernels import Callable, Gaussian, KernelBank, Linear

FloatArray = NDArray[np.float64]
NORMS = ["none", "trace", "mean_diag", "multiplicative", "spherical"]
#: The largest cache in MB whose bytes a 64-bit engine holds (a usize).
LARGEST_MB = (2**64 - 1) >> 20


def _data(n: int = 40, d: int = 3, seed: int = 0) -> tuple[FloatArray, NDArray[np.int64]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.int64)


def negative_linear(A: FloatArray, B: FloatArray) -> FloatArray:
    """``−<a, b>``: negative semi-definite, its diagonal ``−|x|²``."""
    out: FloatArray = -(A @ B.T)
    return out


def three_negative_rows(A: FloatArray, B: FloatArray) -> FloatArray:
    """The linear kernel with ``k(x, x) = −30`` for the points whose first value is one of the
    first three training points' (their diagonal entries in the training kernel)."""
    K = A @ B.T
    marked = np.isin(A[:, 0], _data()[0][:3, 0])
    same = (A[:, None, :] == B[None, :, :]).all(axis=2)
    K[same & marked[:, None]] = -30.0
    out: FloatArray = K
    return out


# --- 1. a kernel that is not a kernel is never repaired -----------------------------------


@pytest.mark.parametrize("normalize", NORMS)
@pytest.mark.parametrize("fn", [negative_linear, three_negative_rows])
def test_a_negative_diagonal_is_refused_under_every_normalisation(normalize: str, fn: Any) -> None:
    """Beside a Gaussian, as the estimators take them: the trace and mean-diagonal
    normalisations scaled ``−<a, b>`` (negative trace) to zero as degenerate, and the
    spherical one zeroed the rows of negative self-values; now every one raises, naming
    kernel 1 and the raw entry."""
    X, y = _data()
    clf = mk.MKLClassifier(kernels=[Gaussian(), Callable(fn)], normalize=normalize)
    with pytest.raises(KernelNotPSDError, match="kernel 1 is not positive semi-definite") as e:
        clf.fit(X, y)
    assert e.value.kernel == 1
    i, j = e.value.entry or (-1, -1)
    assert i == j
    raw = np.diagonal(fn(X, X))
    assert raw[i] == raw.min() < 0
    # The raw value, not a scaled one.
    found = re.search(rf"K\[{i},{i}\] = (\S+) is negative", str(e.value))
    assert found is not None and float(found.group(1)) == raw[i]
    assert "before any normalisation" in str(e.value)


def test_a_centred_negative_diagonal_is_refused_and_a_conditionally_psd_kernel_is_not() -> None:
    """With ``center=True`` the check reads the centred diagonal: ``−<a, b>`` centred is still
    negative, while ``−|a − b|² − 5`` (conditionally PSD, raw diagonal −5) is PSD once
    centred and passes."""
    X = _data()[0]

    def cpd(A: FloatArray, B: FloatArray) -> FloatArray:
        sq = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T
        out: FloatArray = -np.maximum(sq, 0.0) - 5.0
        return out

    for normalize in NORMS:
        with pytest.raises(KernelNotPSDError, match="after centring") as e:
            mk.kernels.gram(X, [Callable(negative_linear)], normalize=normalize, center=True)
        assert e.value.kernel == 0
        G = mk.kernels.gram(X, [Callable(cpd)], normalize=normalize, center=True)
        assert np.all(np.isfinite(G)) and np.diagonal(G[0]).min() >= -1e-9
    with pytest.raises(KernelNotPSDError, match=r"K\[\d+,\d+\] = -5\.0"):
        mk.kernels.gram(X, [Callable(cpd)], normalize="trace")


def test_a_negative_self_value_of_a_new_point_is_refused_by_the_spherical_normalisation() -> None:
    """The spherical normalisation divides by the new points' ``k(x, x)``: a negative one
    zeroed the point's row; now it is an error naming the kernel and the new point."""
    X = _data()[0]

    def negative_far_away(A: FloatArray, B: FloatArray) -> FloatArray:
        K = A @ B.T + 1.0
        same = (A[:, None, :] == B[None, :, :]).all(axis=2)
        K[same & (A[:, 0] > 100.0)[:, None]] = -5.0
        out: FloatArray = K
        return out

    bank = KernelBank([Linear(), Callable(negative_far_away)], normalize="spherical").fit(X)
    new = np.vstack([X[:2], [[200.0, 0.0, 0.0]]])
    with pytest.raises(KernelNotPSDError, match="new point 2") as e:
        bank.transform(new)
    assert e.value.kernel == 1 and e.value.entry == (2, 2)
    assert np.all(np.isfinite(bank.transform(X[:5])))  # the training points are fine


def test_the_dask_statistics_check_the_diagonal_too() -> None:
    da = pytest.importorskip("dask.array")
    X = _data()[0]
    bank = KernelBank([Gaussian(), Callable(negative_linear)], normalize="mean_diag")
    with pytest.raises(KernelNotPSDError, match="kernel 1") as e:
        bank.fit_transform(da.from_array(X, chunks=15))
    assert e.value.kernel == 1


# --- 2. the function gets read-only arrays ------------------------------------------------


@pytest.mark.parametrize("features", [None, [0, 2]])
def test_a_kernel_function_cannot_write_to_the_callers_x(features: list[int] | None) -> None:
    X, y = _data()
    before = X.copy()
    seen: list[bool] = []

    def writer(A: FloatArray, B: FloatArray) -> FloatArray:
        seen.extend([A.flags.writeable, B.flags.writeable])
        A[:] = 0.0
        return A @ B.T

    clf = mk.MKLClassifier(kernels=[Callable(writer, features=features)])
    with pytest.raises(ValueError, match="read-only"):
        clf.fit(X, y)
    np.testing.assert_array_equal(X, before)
    assert seen and not any(seen)
    # A function that only reads fits, on read-only blocks at fit and at predict.
    flags: list[bool] = []

    def reader(A: FloatArray, B: FloatArray) -> FloatArray:
        flags.extend([A.flags.writeable, B.flags.writeable])
        return A @ B.T

    fitted = mk.MKLClassifier(kernels=[Callable(reader, features=features)]).fit(X, y)
    fitted.predict(X[:5])
    assert flags and not any(flags)
    np.testing.assert_array_equal(X, before)


# --- 3. the cache size the engine can hold ------------------------------------------------


@pytest.mark.parametrize("cache_size", [1e18, 1e308, 2.0**44])
def test_a_cache_size_beyond_the_engines_range_names_it(cache_size: float) -> None:
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="cache_size must be in") as e:
        mk.MKLClassifier(cache_size=cache_size).fit(X, y)
    assert e.value.parameter == "cache_size"
    assert f"(0, {LARGEST_MB}] MB" in str(e.value)
    # The largest accepted size fits, as any other cache.
    big = mk.MKLClassifier(cache_size=float(LARGEST_MB), tol=1e-8).fit(X, y)
    small = mk.MKLClassifier(cache_size=1.0, tol=1e-8).fit(X, y)
    np.testing.assert_allclose(big.decision_function(X), small.decision_function(X), atol=1e-6)


# --- 4. the probability folds on samples of nonzero weight --------------------------------


def test_probability_folds_name_the_class_short_of_weighted_samples() -> None:
    X, y = load_iris(return_X_y=True)
    w = np.ones(len(y))
    w[np.flatnonzero(y == 2)[1:]] = 0.0
    clf = mk.MKLClassifier(multi_class="ovo", probability=True)
    with pytest.raises(InvalidInputError, match="nonzero weight") as e:
        clf.fit(X, y, sample_weight=w)
    msg = str(e.value)
    assert "class 2 has 1" in msg and "probability" in msg
    assert "+1" not in msg and "-1" not in msg


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_probabilities_with_zero_weights_equal_those_without_the_samples(multi_class: str) -> None:
    """Samples of weight 0 take no part in the folds nor in the sigmoid (libsvm removes
    them): the probabilities equal those of the fit on the other samples. Seed 4 left a fold
    with no weighted sample of class 2 (an error about internal ±1 labels)."""
    X, y = load_iris(return_X_y=True)
    w = np.ones(len(y))
    w[np.flatnonzero(y == 2)[2:40]] = 0.0
    keep = np.flatnonzero(w > 0)
    for seed in (0, 4):
        kw: dict[str, Any] = {"multi_class": multi_class, "probability": True, "tol": 1e-9}
        a = mk.MKLClassifier(random_state=seed, **kw).fit(X, y, sample_weight=w)
        b = mk.MKLClassifier(random_state=seed, **kw).fit(X[keep], y[keep])
        np.testing.assert_allclose(a.probA_, b.probA_, rtol=1e-5)
        np.testing.assert_allclose(a.probB_, b.probB_, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-6)


# --- 5. and 6. a NaN that check_input=False let through -----------------------------------


def _nan_stack() -> tuple[FloatArray, NDArray[np.int64]]:
    X, y = load_iris(return_X_y=True)
    G = mk.kernels.gram(X, [Linear(), Gaussian(sigma=1.0), Gaussian(sigma=3.0)],
                        normalize="mean_diag")  # fmt: skip
    G[1, 3, 7] = G[1, 7, 3] = np.nan
    return G, y


def test_platt_refuses_non_finite_decision_values() -> None:
    G, y = _nan_stack()
    two = np.ascontiguousarray(G[:, :100, :100])
    clf = mk.MKLClassifier(kernels="precomputed", probability=True)
    with pytest.raises(NonFiniteError, match="out-of-fold decision values") as e:
        clf.fit(two, y[:100], check_input=False)
    assert "probability=True" in str(e.value) and "check_input=False" in str(e.value)


def test_a_shared_fit_on_a_nan_stack_names_the_entry() -> None:
    G, y = _nan_stack()
    clf = mk.MKLClassifier(kernels="precomputed", multi_class="shared")
    with pytest.raises(NonFiniteError, match="multi_class='shared': kernel 1") as e:
        clf.fit(G, y, check_input=False)
    assert e.value.kernel == 1 and e.value.entry == (3, 7)


def test_the_package_has_no_assert_statement() -> None:
    """An ``assert`` is no error message (and ``python -O`` skips it): the package raises
    its own exceptions, ``InternalError`` for an internal invariant."""
    found = [
        f"{path.name}:{node.lineno}"
        for path in sorted(Path(mk.__file__).parent.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert found == []


# --- 7. a fit publishes its attributes at once --------------------------------------------


def _estimators() -> list[Any]:
    return [
        mk.MKLClassifier(kernels=[Linear(), Gaussian()]),
        mk.MKLClassifier(kernels=[Linear(), Gaussian()], probability=True, multi_class="ovo"),
        mk.MKLRegressor(kernels=[Linear(), Gaussian()]),
        mk.MKLOneClass(kernels=[Linear(), Gaussian()], nu=0.3),
        mk.MKLClassifierCV(kernels=[Linear(), Gaussian()], Cs=3, cv=2),
    ]


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_nothing_of_a_fit_is_visible_before_it_ends(
    est: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refitted on other data, the estimator keeps the previous fit's attributes, all of
    them, until the new fit ends; then it has the new fit's, all of them."""
    X1, y1 = _data(30, 3, seed=1)
    X2, y2 = _data(36, 5, seed=2)
    est.fit(X1, y1)
    old = dict(est.__dict__)
    fitted = sorted(k for k in old if k.endswith("_") and not k.startswith("__"))
    assert "n_features_in_" in fitted
    seen: list[int] = []
    fit = _core.fit

    def watching(*args: Any, **kwargs: Any) -> Any:
        # Every engine fit of the refit (folds, binary problems) sees the old state only.
        assert est.n_features_in_ == 3
        for k in fitted:
            assert est.__dict__[k] is old[k], k
        seen.append(1)
        return fit(*args, **kwargs)

    monkeypatch.setattr(_core, "fit", watching)
    est.fit(X2, y2)
    assert len(seen) >= 1, "the refit never reached the engine"
    assert est.n_features_in_ == 5 and est.n_train_ == 36
    assert np.all(np.isfinite(np.asarray(est.predict(X2), dtype=np.float64)))


def test_a_fit_that_fails_leaves_no_fitted_attribute() -> None:
    X, y = _data()
    est = mk.MKLClassifier(kernels=[Linear()]).fit(X, y)
    with pytest.raises(InvalidInputError, match="NaN"):
        est.fit(np.full_like(X, np.nan), y)
    assert not [k for k in est.__dict__ if k.endswith("_") and not k.startswith("__")]
    with pytest.raises(NotFittedError):
        est.predict(X)


def test_one_estimator_fitted_from_two_threads_holds_one_fit() -> None:
    """Two threads refit one estimator on data of different shapes: it ends with one of the
    two fits whole (before, 2 rounds in 8 mixed ``n_features_in_`` of one fit with
    ``dual_coef_`` of the other)."""
    data = [_data(30, 3, seed=3), _data(44, 6, seed=4)]
    shape = {3: 30, 6: 44}
    est = mk.MKLClassifier(kernels=[Linear(), Gaussian()], n_threads=1)
    for _ in range(6):
        barrier = threading.Barrier(2)

        def refit(k: int, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            est.fit(*data[k])

        threads = [threading.Thread(target=refit, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        d = est.n_features_in_
        assert est.dual_coef_.shape[-1] == est.n_train_ == shape[d]
        X = data[0][0] if d == 3 else data[1][0]
        assert est.predict(X).shape == (len(X),)


# --- the others ---------------------------------------------------------------------------


def test_the_logistic_path_refuses_a_class_of_zero_weight() -> None:
    X, y = _data()
    G = mk.kernels.gram(X, [Linear(), Gaussian()], normalize="mean_diag")
    yb = np.where(y == 1, 1.0, -1.0)
    with pytest.raises(InvalidInputError, match="every sample of class -1.0 has weight 0"):
        mk.mkl_path(G, yb, loss="logistic", sample_weight=np.where(yb > 0, 1.0, 0.0))
    # As the estimator refuses it.
    with pytest.raises(InvalidInputError, match="every sample of class -1.0 has weight 0"):
        mk.MKLClassifier(kernels="precomputed").fit(G, yb, sample_weight=np.where(yb > 0, 1, 0))


@pytest.mark.parametrize("value", ["heavy", None, [1.0], True])
def test_a_class_weight_that_is_not_a_number_names_class_weight(value: Any) -> None:
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="class_weight values must be real") as e:
        mk.MKLClassifier(class_weight={0: value}).fit(X, y)
    assert e.value.parameter == "class_weight" and "class 0" in str(e.value)
