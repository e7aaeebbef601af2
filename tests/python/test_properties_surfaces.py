"""Property tests over hostile inputs on the newer surfaces: sample and class weights,
probabilities, shared multiclass, ``Callable`` kernels (PSD, not PSD, writing to their input),
cache sizes and stacks with NaN behind ``check_input=False``.

Every generated case must end in one of two ways: a fit whose outputs are sound (finite
coefficients and decision values, labels among the classes, probabilities in [0, 1] summing
to 1), or an exception of :mod:`multikernel.exceptions`; never a bare built-in exception,
never a silent NaN, and never a change to the caller's ``X``. The one exception a fit lets
through is the one a kernel function raises itself (here numpy's read-only error, when the
function writes to its input). The default run draws a few cases per family; the ``slow``
runs draw many more (``-m slow``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

import multikernel as mk
from multikernel.exceptions import MultikernelError
from multikernel.kernels import Callable, Gaussian, Kernel, Linear

FloatArray = NDArray[np.float64]

FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
SLOW = settings(FAST, max_examples=300)


def linear(A: FloatArray, B: FloatArray) -> FloatArray:
    out: FloatArray = A @ B.T
    return out


def negative(A: FloatArray, B: FloatArray) -> FloatArray:
    """Not a kernel: ``−<a, b>`` (its diagonal is negative)."""
    out: FloatArray = -(A @ B.T)
    return out


def writer(A: FloatArray, B: FloatArray) -> FloatArray:
    """A function that writes to its input (it must get read-only arrays)."""
    A[:] = 0.0
    out: FloatArray = A @ B.T
    return out


#: The kernels drawn from: specifications, a user function, a function that is not a
#: kernel, one that writes to its input, and scikit-learn metrics (sigmoid: not PSD).
KERNELS: dict[str, Kernel] = {
    "linear": Linear(),
    "gauss": Gaussian(sigma=1.0),
    "wide": Gaussian(sigma=10.0),
    "narrow": Gaussian(sigma=0.1, features=[0]),
    "function": Callable(linear),
    "negative": Callable(negative),
    "writer": Callable(writer),
    "cosine": Callable("cosine"),
    "sigmoid": Callable("sigmoid", gamma=0.1),
}
SAFE_KERNELS = ["linear", "gauss", "wide", "narrow", "function", "cosine"]
NORMS = ["none", "trace", "mean_diag", "multiplicative", "spherical"]
#: Cache sizes (MB): none (most often), valid ones, beyond the engine's range, and of no
#: valid kind.
CACHES: list[Any] = [None] * 12 + [1e-3, 1.0, 1e6, 1e18, 1e308, 0.0, -1.0, math.nan, math.inf,
                                   "big", True]  # fmt: skip
#: Kinds of sample weights: valid ones (most often) and hostile ones.
GOOD_WEIGHTS = ["none", "positive", "some zeros", "scalar"]
WEIGHTS = GOOD_WEIGHTS * 3 + ["zero class", "one left", "negative", "nan", "all zero",
                              "wrong length"]  # fmt: skip
#: Kernels drawn most often: those that are kernels.
KERNEL_DRAWS = SAFE_KERNELS * 3 + ["negative", "writer", "sigmoid"]


@dataclass
class Case:
    """One generated fit: points, labels, weights and the estimator's settings."""

    X: FloatArray
    y: NDArray[Any]
    weight: Any
    params: dict[str, Any]
    kernels: list[str] = field(default_factory=list)


def _weights(kind: str, y: NDArray[Any], rng: np.random.Generator) -> Any:
    n = len(y)
    w = rng.uniform(0.1, 3.0, n)
    if kind == "none":
        return None
    if kind == "some zeros":
        w[rng.random(n) < 0.4] = 0.0
    elif kind == "zero class":
        w[y == y[0]] = 0.0
    elif kind == "one left":  # one sample of weight > 0 in the first sample's class
        same = np.flatnonzero(y == y[0])
        w[same[1:]] = 0.0
    elif kind == "negative":
        w[0] = -1.0
    elif kind == "nan":
        w[0] = math.nan
    elif kind == "all zero":
        w[:] = 0.0
    elif kind == "wrong length":
        return w[:-1]
    elif kind == "scalar":
        return 2.0
    return w


@st.composite
def points(draw: st.DrawFn, classes: bool = True) -> tuple[FloatArray, NDArray[Any], Any]:
    """Small data of 1 to 3 columns at one of three scales, labels of 2 to 4 classes (ints
    or strings; a class may have one sample), and a seed for what follows."""
    n = draw(st.integers(4, 20))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d)) * draw(st.sampled_from([0.01, 1.0, 100.0]))
    if classes:
        y: NDArray[Any] = rng.integers(0, draw(st.integers(2, 4)), size=n)
        if draw(st.booleans()):
            y = np.array([f"c{v}" for v in y])
    else:
        y = X[:, 0] + 0.3 * rng.normal(size=n)
    return X, y, rng


def _kernels(draw: st.DrawFn, names: list[str]) -> list[str]:
    return draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))


@st.composite
def classifier_cases(draw: st.DrawFn) -> Case:
    X, y, rng = draw(points())
    labels = np.unique(y).tolist()
    good: list[Any] = [None, "balanced", {labels[0]: 3.0}, {labels[-1]: 1e-3}]
    bad: list[Any] = [{labels[0]: 0.0}, {labels[0]: -1.0}, {labels[0]: math.inf},
                      {labels[0]: "heavy"}, {labels[0]: None}, {"absent": 2.0}, "even"]  # fmt: skip
    class_weight = draw(st.sampled_from(good * 3 + bad))
    names = _kernels(draw, KERNEL_DRAWS)
    params = {
        "kernels": [KERNELS[k] for k in names],
        "normalize": draw(st.sampled_from(NORMS)),
        "loss": draw(st.sampled_from(["hinge", "squared_hinge", "logistic"])),
        "multi_class": draw(st.sampled_from(["ovr", "ovo", "shared"])),
        "probability": draw(st.booleans()),
        "class_weight": class_weight,
        "cache_size": draw(st.sampled_from(CACHES)),
        "C": 10.0 ** draw(st.integers(-2, 2)),
        "random_state": draw(st.integers(0, 4)),
    }
    weight = _weights(draw(st.sampled_from(WEIGHTS)), y, rng)
    return Case(X, y, weight, params, names)


@st.composite
def regression_cases(draw: st.DrawFn) -> Case:
    X, y, rng = draw(points(classes=False))
    names = _kernels(draw, KERNEL_DRAWS)
    params = {
        "kernels": [KERNELS[k] for k in names],
        "normalize": draw(st.sampled_from(NORMS)),
        "loss": draw(st.sampled_from(["squared", "epsilon_insensitive"])),
        "penalty": draw(st.sampled_from(["lp", "l1", "elasticnet"])),
        "cache_size": draw(st.sampled_from(CACHES)),
        "C": 10.0 ** draw(st.integers(-2, 2)),
    }
    kinds = [w for w in WEIGHTS if w not in ("zero class", "one left")]
    weight = _weights(draw(st.sampled_from(kinds)), y, rng)
    return Case(X, y, weight, params, names)


def _fit(est: Any, case: Case, **fit_kw: Any) -> Any | None:
    """``est`` fitted on the case, or None when it raised as it may: an error of
    multikernel's (with a message), or the read-only error of a function that writes.
    Checks the caller's ``X`` is unchanged either way."""
    before = case.X.copy()
    try:
        with warnings.catch_warnings():
            # Not-PSD kernels (sigmoid) and extreme C may warn; the outputs are checked.
            warnings.simplefilter("ignore")
            return est.fit(case.X, case.y, sample_weight=case.weight, **fit_kw)
    except MultikernelError as e:
        assert str(e), type(e).__name__
        return None
    except ValueError as e:  # only the function's own error propagates as it is
        if "writer" not in case.kernels or "read-only" not in str(e):
            raise
        return None
    finally:
        np.testing.assert_array_equal(case.X, before)


def _finite(*values: Any) -> None:
    for v in values:
        assert np.all(np.isfinite(np.asarray(v, dtype=np.float64))), v


def check_classifier(est: Any, case: Case) -> None:
    fitted = _fit(est, case)
    if fitted is None:
        return
    assert "writer" not in case.kernels  # a writing function never fits
    _finite(fitted.dual_coef_, fitted.intercept_, fitted.kernel_weights_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = fitted.decision_function(case.X)
        labels = fitted.predict(case.X)
        _finite(f)
        assert set(np.unique(labels).tolist()) <= set(np.unique(case.y).tolist())
        if hasattr(fitted, "predict_proba"):
            P = fitted.predict_proba(case.X)
            _finite(P)
            assert P.min() >= 0.0 and P.max() <= 1.0 + 1e-12
            np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-9)
        if fitted.probability and fitted.loss != "logistic":
            _finite(fitted.probA_, fitted.probB_)


@FAST
@given(case=classifier_cases())
def test_classifier_weights_probabilities_shared_callables_caches(case: Case) -> None:
    check_classifier(mk.MKLClassifier(tol=1e-3, max_iter=100, **case.params), case)


@pytest.mark.slow
@SLOW
@given(case=classifier_cases())
def test_classifier_surfaces_many(case: Case) -> None:
    check_classifier(mk.MKLClassifier(tol=1e-3, max_iter=100, **case.params), case)


def check_regressor(est: Any, case: Case) -> None:
    fitted = _fit(est, case)
    if fitted is None:
        return
    _finite(fitted.dual_coef_, fitted.intercept_, fitted.kernel_weights_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _finite(fitted.predict(case.X))


@FAST
@given(case=regression_cases())
def test_regressor_weights_callables_caches(case: Case) -> None:
    check_regressor(mk.MKLRegressor(tol=1e-3, max_iter=100, **case.params), case)


@pytest.mark.slow
@SLOW
@given(case=regression_cases())
def test_regressor_surfaces_many(case: Case) -> None:
    check_regressor(mk.MKLRegressor(tol=1e-3, max_iter=100, **case.params), case)


@st.composite
def nan_stack_cases(draw: st.DrawFn) -> Case:
    """A valid stack with a few NaN (symmetric) entries, fitted with ``check_input=False``:
    the settings that read its decision values or iterate on it as a whole."""
    X, y, rng = draw(points())
    names = _kernels(draw, SAFE_KERNELS)
    G = mk.kernels.gram(X, [KERNELS[k] for k in names], normalize="mean_diag")
    for _ in range(draw(st.integers(1, 3))):
        m, i, j = (int(rng.integers(0, s)) for s in G.shape)
        G[m, i, j] = G[m, j, i] = draw(st.sampled_from([math.nan, math.inf]))
    params = {
        "kernels": "precomputed",
        "multi_class": draw(st.sampled_from(["ovr", "ovo", "shared"])),
        "probability": draw(st.booleans()),
        "loss": draw(st.sampled_from(["hinge", "logistic"])),
        "random_state": 0,
    }
    weight = _weights(draw(st.sampled_from(GOOD_WEIGHTS)), y, rng)
    return Case(G, y, weight, params, names)


def check_nan_stack(case: Case) -> None:
    """A stack with NaN behind ``check_input=False``: an error of multikernel's, or a fit
    that says it did not converge, or sound outputs; never Platt's sigmoid (or a shared
    fit) made of NaN without a word."""
    est = mk.MKLClassifier(tol=1e-3, max_iter=50, **case.params)
    before = case.X.copy()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(case.X, case.y, sample_weight=case.weight, check_input=False)
    except MultikernelError as e:
        assert str(e)
        return
    finally:
        np.testing.assert_array_equal(case.X, before, strict=True)
    said = any(issubclass(w.category, Warning) for w in caught)
    finite = all(
        np.all(np.isfinite(np.asarray(v, dtype=np.float64)))
        for v in (est.dual_coef_, est.intercept_, est.kernel_weights_)
    )
    assert said or finite
    if est.probability and est.loss != "logistic":
        _finite(est.probA_, est.probB_)  # Platt's sigmoid is never fitted to NaN


@FAST
@given(case=nan_stack_cases())
def test_a_nan_stack_behind_check_input_false_is_never_silent(case: Case) -> None:
    check_nan_stack(case)


@pytest.mark.slow
@SLOW
@given(case=nan_stack_cases())
def test_nan_stacks_many(case: Case) -> None:
    check_nan_stack(case)


@st.composite
def path_cases(draw: st.DrawFn) -> Case:
    loss = draw(st.sampled_from(["squared", "logistic"]))
    X, y, rng = draw(points(classes=loss == "logistic"))
    if loss == "logistic":
        y = np.where(y == y[0], 1.0, -1.0)
    names = _kernels(draw, SAFE_KERNELS * 3 + ["negative"])
    params = {"kernels": [KERNELS[k] for k in names], "loss": loss,
              "normalize": draw(st.sampled_from(NORMS))}  # fmt: skip
    kinds = [w for w in WEIGHTS if w != "one left"]
    weight = _weights(draw(st.sampled_from(kinds)), y, rng)
    return Case(X, y, weight, params, names)


@FAST
@given(case=path_cases())
def test_the_path_with_weights_and_callables(case: Case) -> None:
    check_path(case)


@pytest.mark.slow
@SLOW
@given(case=path_cases())
def test_paths_many(case: Case) -> None:
    check_path(case)


def check_path(case: Case) -> None:
    """``mkl_path``: an error of multikernel's, or finite path values and predictions."""
    before = case.X.copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = mk.mkl_path(case.X, case.y, sample_weight=case.weight, max_points=20,
                               **case.params)  # fmt: skip
    except MultikernelError as e:
        assert str(e)
        return
    finally:
        np.testing.assert_array_equal(case.X, before)
    assert "negative" not in case.kernels  # a kernel that is not one never fits
    _finite(path.Cs, path.kernel_weights, path.primal_objectives)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = path.predict(case.X, C=float(path.Cs[-1]))
    if case.params["loss"] == "squared":
        _finite(out)
    else:
        assert set(np.unique(out).tolist()) <= {-1.0, 1.0}
