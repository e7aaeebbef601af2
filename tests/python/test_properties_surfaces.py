"""Property tests over hostile inputs on the newer surfaces: sample and class weights,
probabilities, shared multiclass, ``Callable`` kernels (PSD, not PSD, writing to their input),
cache sizes and stacks with NaN behind ``check_input=False``; sequence kernels on random
alphabets and lengths with hostile entries (None, numbers, NaN, lone surrogates), histogram
kernels on non-negative data with hostile entries, and mixed tables (numeric, string and
categorical columns) under vector and sequence kernels, named or not.

Every generated case must end in one of two ways: a fit whose outputs are sound (finite
coefficients and decision values, labels among the classes, probabilities in [0, 1] summing
to 1), or an exception of :mod:`multikernel.exceptions`; never a bare built-in exception,
never a silent NaN, and never a change to the caller's ``X``. The one exception a fit lets
through is the one a kernel function raises itself (here numpy's read-only error, when the
function writes to its input). Where the kernels are cheap to compute independently (k-mer
counts, the weighted-degree sum, the histogram kernels and the Gaussian in numpy), a valid
case's Gram matrices must equal them and be PSD, and a hostile one must be refused naming the
row or column at fault. The default run draws a few cases per family; the ``slow`` runs draw
many more (``-m slow``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.metrics.pairwise import chi2_kernel
from test_sequence_kernels import ref_spectrum, ref_wd

import multikernel as mk
from multikernel.exceptions import InvalidInputError, MultikernelError
from multikernel.kernels import (
    Callable,
    Chi2,
    Gaussian,
    Hellinger,
    Intersection,
    Kernel,
    KernelBank,
    Linear,
    Spectrum,
    Tanimoto,
    WeightedDegree,
    gram,
)

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


# --- sequences, histograms and mixed tables -------------------------------------------------

#: Fewer cases than the fits above: each draws a few Gram matrices and their references.
TABLES = settings(FAST, max_examples=30)
TABLES_SLOW = settings(TABLES, max_examples=300)

#: Alphabets of sequences: DNA, two letters, non-ASCII (several UTF-8 bytes a character).
ALPHABETS = ["ACGT", "ab", "xé€"]
#: Entries that are not sequences, or a str UTF-8 cannot encode.
HOSTILE_ENTRIES: list[Any] = [None, 7, 2.5, math.nan, "AC\ud800T", "\udfff"]


def _assert_psd(G: FloatArray) -> None:
    lam = np.linalg.eigvalsh(G)
    assert lam[0] >= -1e-9 * max(float(np.abs(lam).max()), 1.0), lam[0]


def _assert_rel(a: FloatArray, b: FloatArray, rtol: float = 1e-12) -> None:
    scale = max(float(np.abs(b).max()), 1.0)
    assert float(np.abs(a - b).max()) <= rtol * scale


@dataclass
class SeqCase:
    """Sequences (a list, maybe with one hostile entry at ``bad``), a kernel, and whether
    the sequences have equal lengths in bytes (the weighted degree refuses others)."""

    seqs: list[Any]
    kernel: Kernel
    bad: int | None
    equal: bool


@st.composite
def sequence_cases(draw: st.DrawFn) -> SeqCase:
    """Random sequences of a random alphabet, lengths and type (str or bytes), a third of
    them with one hostile entry; the choices are drawn by a seed (hypothesis's own draws of
    small integers lean to their smallest value, which left hostile entries rare)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    alphabet = list(ALPHABETS[rng.integers(len(ALPHABETS))])
    n = int(rng.integers(2, 8))
    fixed = int(rng.integers(0, 10))
    same = rng.random() < 0.5
    lengths = [fixed if same else int(rng.integers(0, 10)) for _ in range(n)]
    seqs: list[Any] = ["".join(rng.choice(alphabet, L)) if L else "" for L in lengths]
    if rng.random() < 0.3:  # bytes are sequences too
        seqs = [x.encode() for x in seqs]
    # The kernels compare bytes: 'é' and '€' are two and three of them.
    equal = len({len(x.encode() if isinstance(x, str) else x) for x in seqs}) == 1
    bad = None
    if rng.random() < 1 / 3:
        bad = int(rng.integers(n))
        seqs[bad] = HOSTILE_ENTRIES[rng.integers(len(HOSTILE_ENTRIES))]
    kernel: Kernel = draw(
        st.one_of(
            st.builds(Spectrum, k=st.integers(1, 5)),
            st.builds(WeightedDegree, degree=st.integers(1, 6), shift=st.integers(0, 3)),
        )
    )
    return SeqCase(seqs, kernel, bad, equal)


def check_sequences(case: SeqCase) -> None:
    """A hostile entry is refused naming its row; unequal lengths under the weighted degree
    are refused; otherwise the Gram matrix is the reference's, PSD, and a bank's cross block
    of the first rows equals the Gram matrix's rows."""
    if case.bad is not None:
        # Every other entry is a string, so the column is one of strings: the entry is named.
        strings = sum(isinstance(v, (str, bytes)) for v in case.seqs) > 0
        with pytest.raises(MultikernelError) as err:
            gram(case.seqs, [case.kernel])
        if strings:
            assert f"row {case.bad} is " in str(err.value), err.value
        return
    if isinstance(case.kernel, WeightedDegree) and not case.equal:
        with pytest.raises(InvalidInputError, match="equal lengths"):
            gram(case.seqs, [case.kernel])
        return
    G = gram(case.seqs, [case.kernel])[0]
    if isinstance(case.kernel, Spectrum):
        ref = ref_spectrum(case.seqs, case.seqs, case.kernel.k)
    else:
        ref = ref_wd(case.seqs, case.seqs, case.kernel.degree, case.kernel.shift)
    _assert_rel(G, ref)
    _assert_psd(G)
    bank = KernelBank([case.kernel], normalize="none").fit(case.seqs)
    _assert_rel(bank.transform(case.seqs[:2])[0], G[:2])


@TABLES
@given(case=sequence_cases())
def test_sequence_kernels_on_random_and_hostile_strings(case: SeqCase) -> None:
    check_sequences(case)


@pytest.mark.slow
@TABLES_SLOW
@given(case=sequence_cases())
def test_sequence_kernels_many(case: SeqCase) -> None:
    check_sequences(case)


def _hist_reference(kernel: Kernel, A: FloatArray, B: FloatArray) -> FloatArray:
    """The histogram kernels in numpy (scikit-learn's χ²)."""
    lo = np.minimum(A[:, None, :], B[None, :, :]).sum(axis=2)
    if isinstance(kernel, Chi2):
        out: FloatArray = chi2_kernel(A, B, gamma=kernel.gamma)
    elif isinstance(kernel, Intersection):
        out = lo
    elif isinstance(kernel, Hellinger):
        out = np.sqrt(A) @ np.sqrt(B).T
    else:  # Tanimoto: Σ min / Σ max, two zero vectors 1
        hi = np.maximum(A[:, None, :], B[None, :, :]).sum(axis=2)
        out = np.where(hi > 0, lo / np.where(hi > 0, hi, 1.0), 1.0)
    return out


@st.composite
def histogram_cases(draw: st.DrawFn) -> tuple[FloatArray, Kernel, str]:
    """Non-negative data (counts, with zero rows and columns, over eight decades), a
    histogram kernel, and what is wrong with the data (``"none"`` most often)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, d = draw(st.integers(2, 9)), draw(st.integers(1, 5))
    X = rng.poisson(1.0, size=(n, d)) * 10.0 ** draw(st.integers(-4, 4))
    X[rng.random(n) < 0.2] = 0.0
    kernel = draw(
        st.sampled_from(
            [Chi2(gamma=0.5), Chi2(gamma=2.0), Intersection(), Hellinger(), Tanimoto()]
        )  # fmt: skip
    )
    fault = "none" if rng.random() < 0.6 else str(rng.choice(["negative", "nan", "inf"]))
    if fault != "none":
        X[rng.integers(n), rng.integers(d)] = {"negative": -1.0, "nan": math.nan,
                                               "inf": math.inf}[fault]  # fmt: skip
    return X, kernel, fault


def check_histograms(case: tuple[FloatArray, Kernel, str]) -> None:
    X, kernel, fault = case
    if fault != "none":
        with pytest.raises(MultikernelError, match=r"column \d|NaN or infinity"):
            gram(X, [kernel])
        return
    G = gram(X, [kernel], normalize=None)[0]
    _assert_rel(G, _hist_reference(kernel, X, X), rtol=1e-11)
    _assert_psd(G)


@TABLES
@given(case=histogram_cases())
def test_histogram_kernels_on_counts_and_hostile_entries(
    case: tuple[FloatArray, Kernel, str],
) -> None:
    check_histograms(case)


@pytest.mark.slow
@TABLES_SLOW
@given(case=histogram_cases())
def test_histogram_kernels_many(case: tuple[FloatArray, Kernel, str]) -> None:
    check_histograms(case)


@dataclass
class TableCase:
    """A DataFrame of numeric, string and categorical columns, kernels on it, and what the
    library must do with it: the expected refusal (a pattern), or None for a fit."""

    frame: pd.DataFrame
    kernels: list[Kernel]
    refusal: str | None
    y: NDArray[np.int64]


@st.composite
def table_cases(draw: st.DrawFn) -> TableCase:
    """Columns ``x0..`` (numbers), ``s0..`` (DNA strings of one length), maybe ``cat``
    (categories); vector kernels on every numeric column (None) or on named ones, sequence
    kernels on the only string column (None) or a named one, a vector kernel on a string
    column now and then, and now and then a hostile entry in a string column. The expected
    outcome follows the documented rules (docs/guide.md, "Sequences, and tables")."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(6, 12))
    n_num, n_str = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    cat = draw(st.booleans())
    if n_num + n_str + cat == 0:
        n_num = 1
    cols: dict[str, Any] = {f"x{j}": rng.normal(size=n) for j in range(n_num)}
    L = draw(st.integers(3, 6))
    for j in range(n_str):
        cols[f"s{j}"] = ["".join(rng.choice(list("ACGT"), L)) for _ in range(n)]
    if cat:
        cols["cat"] = pd.Categorical(rng.choice(["u", "v", "w"], n))
    frame = pd.DataFrame(cols)
    nums = [c for c in frame.columns if c.startswith("x")]
    strs = [c for c in frame.columns if not c.startswith("x")]  # categories hold strings
    kernels: list[Kernel] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["gauss", "gauss named", "spectrum", "spectrum named",
                                     "wd named", "vector on strings"]))  # fmt: skip
        if kind == "gauss":
            kernels.append(Gaussian(sigma=1.0))
        elif kind == "gauss named" and nums:
            kernels.append(Gaussian(sigma=1.5, features=[draw(st.sampled_from(nums))]))
        elif kind == "spectrum":
            kernels.append(Spectrum(2))
        elif kind in ("spectrum named", "wd named") and strs:
            named = [draw(st.sampled_from(strs))]
            kernels.append(Spectrum(2, named) if kind == "spectrum named" else
                           WeightedDegree(degree=3, features=named))  # fmt: skip
        elif kind == "vector on strings" and strs:
            kernels.append(Linear(features=[draw(st.sampled_from(strs))]))
    if not kernels:
        kernels.append(Gaussian(sigma=1.0))
    bad = None
    if strs and draw(st.integers(0, 3)) == 0:  # a hostile entry in a string column
        column, bad = draw(st.sampled_from(strs)), draw(st.integers(0, n - 1))
        values = list(frame[column].astype(object))
        values[bad] = draw(st.sampled_from([None, 3, "AC\ud800"]))
        frame[column] = pd.Series(values, dtype=object)
    # The expected outcome, by the documented rules, first failure first.
    refusal: str | None = None
    read: set[str] = set()
    has_strings = bool(strs)
    if bad is not None:
        refusal = rf"row {bad} is "
    elif not has_strings and any(isinstance(k, (Spectrum, WeightedDegree)) for k in kernels):
        refusal = r"reads sequences \(strings\), but X is numeric"
    else:
        for k in kernels:
            feats = getattr(k, "features", None)
            if isinstance(k, (Spectrum, WeightedDegree)):
                if feats is None and len(strs) != 1:
                    refusal = "does not say which column of sequences"
                    break
                read.add(strs[0] if feats is None else feats[0])
            elif feats is not None and feats[0] in strs:
                refusal = rf"but column '{feats[0]}' of X holds strings"
                break
            elif feats is None and has_strings and not nums:
                refusal = "X has only columns of strings"
                break
            else:
                read.update(nums if feats is None else feats)
        if refusal is None and has_strings:
            unread = [c for c in frame.columns if c not in read]
            if unread and any(getattr(k, "features", None) is None for k in kernels):
                refusal = rf"column '{unread[0]}' \(.*\) .*of X (is|are) read by no kernel"
    y = np.arange(n) % 2
    return TableCase(frame, kernels, refusal, y)


def _table_reference(case: TableCase) -> FloatArray:
    """Each kernel's Gram matrix on the columns it reads, in numpy and the k-mer counts."""
    nums = [c for c in case.frame.columns if c.startswith("x")]
    strs = [c for c in case.frame.columns if not c.startswith("x")]
    out = []
    for k in case.kernels:
        feats = getattr(k, "features", None)
        if isinstance(k, (Spectrum, WeightedDegree)):
            seqs = list(case.frame[strs[0] if feats is None else feats[0]])
            ref = (ref_spectrum(seqs, seqs, k.k) if isinstance(k, Spectrum)
                   else ref_wd(seqs, seqs, k.degree, k.shift))  # fmt: skip
        else:
            assert isinstance(k, Gaussian)
            Z = case.frame[nums if feats is None else list(feats)].to_numpy(dtype=np.float64)
            sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)
            ref = np.exp(-sq / (2.0 * k.sigma**2))
        out.append(ref)
    return np.stack(out)


def check_table(case: TableCase) -> None:
    """The documented refusal, naming the row or column; or the references' Gram matrices
    (PSD) and a fit with finite outputs."""
    if case.refusal is not None:
        with pytest.raises(MultikernelError, match=case.refusal):
            gram(case.frame, case.kernels, normalize=None)
        with pytest.raises(MultikernelError, match=case.refusal):
            mk.MKLClassifier(kernels=case.kernels).fit(case.frame, case.y)
        return
    G = gram(case.frame, case.kernels, normalize=None)
    _assert_rel(G, _table_reference(case))
    for K in G:
        _assert_psd(K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = mk.MKLClassifier(kernels=case.kernels, tol=1e-3, max_iter=100)
        clf.fit(case.frame, case.y)
        _finite(clf.dual_coef_, clf.intercept_, clf.kernel_weights_,
                clf.decision_function(case.frame))  # fmt: skip


@TABLES
@given(case=table_cases())
def test_mixed_tables_fit_or_are_refused_as_documented(case: TableCase) -> None:
    check_table(case)


@pytest.mark.slow
@TABLES_SLOW
@given(case=table_cases())
def test_mixed_tables_many(case: TableCase) -> None:
    check_table(case)
