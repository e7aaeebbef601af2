"""Hostile inputs of issue 64: tables with columns no kernel reads, sample weights beyond
float64's range, hostile sequences (lone surrogates, a bad first entry, numbers for a string
kernel, counts beyond the engine's), distances at the ends of float64, and a vector kernel on
a string column named by its column.

Each case failed before its fix: the column was dropped without a word, the weights gave an
error naming ``warm_start``, the surrogate a bare ``UnicodeEncodeError``, the counts an error
at evaluation, the bad first entry "could not convert string to float", the numbers "X must
be 2-D", the tiny distances a ``NonFiniteError``, and the string column ``column 0``. The
values are checked against independent computations: numpy's Gaussian and exponential, the
weighted-degree sum in exact fractions, the kernels of distances rescaled exactly by powers
of two."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from scipy.spatial.distance import cdist

import multikernel as mk
from multikernel.exceptions import (
    InvalidInputError,
    InvalidParameterError,
    MultikernelError,
    NumericalError,
)
from multikernel.kernels import (
    Gaussian,
    KernelBank,
    Linear,
    Spectrum,
    WeightedDegree,
    from_distances,
    gram,
)

FloatArray = NDArray[np.float64]


def _table(n: int = 40, seed: int = 0) -> tuple[pd.DataFrame, NDArray[np.int64]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    return pd.DataFrame(X, columns=["a", "b", "c"]), y


def _gaussian(X: FloatArray, sigma: float) -> FloatArray:
    """``exp(-|x - x'|² / (2 σ²))`` by numpy."""
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    out: FloatArray = np.exp(-sq / (2.0 * sigma**2))
    return out


# --- 3. a column no kernel reads is refused, unless every kernel names its columns ---------

STRING_COLUMNS: dict[str, Any] = {
    "strings": lambda n: ["x"] * n,
    "categorical": lambda n: pd.Categorical(np.resize(["u", "v"], n)),
    "pandas string": lambda n: pd.array(np.resize(["p", "q"], n), dtype="string"),
}


@pytest.mark.parametrize("kind", STRING_COLUMNS)
@pytest.mark.parametrize("kernels", [[Gaussian(sigma=1.0)], None], ids=["gaussian", "default"])
def test_a_string_column_no_kernel_reads_is_refused_naming_it(kind: str, kernels: Any) -> None:
    """Beside vector kernels that read every numeric column (features=None, or the default
    bank), a column of strings or categories was dropped without a word."""
    df, y = _table()
    df["d"] = STRING_COLUMNS[kind](len(df))
    pattern = r"column 'd' \(strings: sequences or categories\) of X is read by no kernel"
    with pytest.raises(InvalidInputError, match=pattern):
        mk.MKLClassifier(kernels=kernels).fit(df, y)
    with pytest.raises(InvalidInputError, match=pattern):
        gram(df, kernels or [Linear()])
    with pytest.raises(InvalidInputError, match=pattern):
        mk.mkl_path(df, 2.0 * y - 1, kernels=kernels)


def test_a_numeric_column_beside_an_unnamed_sequence_kernel_is_refused_too() -> None:
    df = pd.DataFrame({"seq": ["ACGT", "ACGA", "TTGA"], "gc": [0.5, 0.2, 0.1], "n": [1, 2, 3]})
    with pytest.raises(InvalidInputError, match=r"column 'gc' \(numbers\), column 'n' \(numbers"):
        gram(df, [Spectrum(2)])


def test_columns_left_out_by_kernels_that_name_theirs_are_deliberate() -> None:
    """When every kernel names its columns, a column none reads is left out: the kernels are
    those of the named columns alone (numpy's Gaussian), by gram and in a fit."""
    df, y = _table()
    df["d"] = pd.Categorical(np.resize(["u", "v"], len(df)))
    df["e"] = ["x"] * len(df)
    specs = [Gaussian(sigma=1.5, features=["a", "c"]), Linear(features=["b"])]
    G = gram(df, specs, normalize=None)
    X = df[["a", "b", "c"]].to_numpy()
    np.testing.assert_allclose(G[0], _gaussian(X[:, [0, 2]], 1.5), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(G[1], np.outer(X[:, 1], X[:, 1]), rtol=1e-12, atol=1e-15)
    kw: dict[str, Any] = {"kernels": specs, "normalize": None, "tol": 1e-8}
    fitted = mk.MKLClassifier(**kw).fit(df, y)
    ref = mk.MKLClassifier(kernels="precomputed", normalize=None, tol=1e-8).fit(G, y)
    np.testing.assert_allclose(fitted.decision_function(df), ref.decision_function(G), atol=1e-8)


# --- 4. sample weights beyond float64's range name sample_weight and C ------------------------


def _huge_weight_fits() -> dict[str, Any]:
    X, y = _table()[0].to_numpy(), _table()[1]
    y3 = np.arange(len(y)) % 3
    return {
        "shared l1": lambda w: mk.MKLClassifier(multi_class="shared", penalty="l1").fit(
            X, y3, sample_weight=w
        ),
        "ovr": lambda w: mk.MKLClassifier().fit(X, y3, sample_weight=w),
        "regressor": lambda w: mk.MKLRegressor().fit(X, X[:, 0], sample_weight=w),
        "one-class": lambda w: mk.MKLOneClass().fit(X, sample_weight=w),
        "path": lambda w: mk.mkl_path(X, 2.0 * y - 1, sample_weight=w),
        "CV": lambda w: mk.MKLClassifierCV(Cs=2, cv=2).fit(X, y, sample_weight=w),
        "bank": lambda w: KernelBank([Linear()]).fit_transform(X, sample_weight=w),
    }


@pytest.mark.parametrize("fit", _huge_weight_fits())
def test_weights_beyond_float64_are_refused_naming_sample_weight(fit: str) -> None:
    """``sample_weight=1e300`` gave "warm_start: violates the equality constraint" on a
    shared ℓ1 fit; one-class fits and paths ended in NaN from 1e154 (their pairwise products
    overflow). Every estimator refuses the same way, through one check."""
    w = np.full(40, 1e300)
    w[7] = 2e300
    pattern = r"^sample_weight sums to 4\.1e\+301 \(largest 2e\+300, sample 7\), beyond 1e\+150"
    with pytest.raises(InvalidInputError, match=pattern):
        _huge_weight_fits()[fit](w)


def test_the_weights_message_names_c_and_the_box() -> None:
    X, y = _table()[0].to_numpy(), _table()[1]
    y3 = np.arange(40) % 3
    clf = mk.MKLClassifier(multi_class="shared", penalty="l1", C=10.0)
    with pytest.raises(InvalidInputError, match=r"C · max\(sample_weight\) = 1e\+301 with C = 10"):
        clf.fit(X, y3, sample_weight=np.full(40, 1e300))
    overflow = r"C · max\(sample_weight\) = 1e\+300 · 1e\+100 overflows"
    with pytest.raises(InvalidInputError, match=overflow):
        mk.MKLClassifier(C=1e300).fit(X, y, sample_weight=np.full(40, 1e100))
    with pytest.raises(InvalidInputError, match=r"^class_weight sums to"):
        mk.MKLClassifier(class_weight={0: 1e200}).fit(X, y)
    with pytest.raises(InvalidInputError, match=r"^sample_weight × class_weight sums to"):
        mk.MKLClassifier(class_weight={0: 1e100}).fit(X, y, sample_weight=np.full(40, 1e100))


def test_weights_below_the_bound_are_the_fit_of_c_times_them() -> None:
    """Weights summing to just under the bound fit, as the unweighted fit with C times the
    weight (the box C · w is all that matters)."""
    X, y = _table()[0].to_numpy(), _table()[1]
    s = 0.9 * mk._validation.MAX_WEIGHT_SUM / 40
    kw: dict[str, Any] = {"penalty": "lp", "tol": 1e-8, "C": 1e-147}
    a = mk.MKLClassifier(**kw).fit(X, y, sample_weight=np.full(40, s))
    b = mk.MKLClassifier(**{**kw, "C": 1e-147 * s}).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-6)


@pytest.mark.parametrize("multi_class", ["shared", "ovr"])
def test_a_solver_failure_at_a_huge_box_does_not_name_warm_start(multi_class: str) -> None:
    """ℓ1 fits at C = 1e15 (no weights, no warm start): the engine's ℓ1 solver breaks its own
    start between iterations and named ``warm_start``, which the user never set. Either the
    fit succeeds (finite outputs) or its error names C."""
    X, _ = _table()
    y3 = np.arange(40) % 3
    clf = mk.MKLClassifier(multi_class=multi_class, penalty="l1", C=1e15)
    try:
        clf.fit(X.to_numpy(), y3)
    except NumericalError as e:
        assert re.search(r"C · max\(sample_weight\) = 1e\+15 \(C = 1e\+15\)", str(e)), e
        assert "no warm_start was given" in str(e) and not str(e).startswith("warm_start")
        return
    assert np.isfinite(clf.decision_function(X.to_numpy())).all()


# --- 7. sequences ---------------------------------------------------------------------------


def test_a_lone_surrogate_is_refused_naming_the_row_and_value() -> None:
    seqs = ["ACGT", "GATT", "AC\ud800T"]
    with pytest.raises(InvalidInputError, match=r"row 2 is 'AC\\ud800T', which UTF-8 cannot"):
        gram(seqs, [Spectrum(2)])
    # (An object column: pandas' default string column, stored by pyarrow when that is
    # installed, refuses the lone surrogate itself.)
    df = pd.DataFrame({"seq": pd.Series(seqs, dtype=object), "x": [0.0, 1.0, 2.0]})
    in_frame = r"^column 'seq' of X holds .* row 2 is 'AC\\ud800T'"
    with pytest.raises(InvalidInputError, match=in_frame):
        gram(df, [Spectrum(2, features=["seq"]), Gaussian(features=["x"])])
    clf = mk.MKLClassifier(kernels=[Spectrum(2)]).fit(seqs[:2] * 4, np.arange(8) % 2)
    with pytest.raises(InvalidInputError, match=r"row 1 is 'G\\udfffA'"):
        clf.predict(["ACGT", "G\udfffA"])


@pytest.mark.parametrize(
    ("make", "name", "value"),
    [
        (lambda: Spectrum(k=2**70), "k", 2**70),
        (lambda: Spectrum(k=2**32), "k", 2**32),
        (lambda: Spectrum(k=1e20), "k", 1e20),
        (lambda: WeightedDegree(degree=10**12), "degree", 10**12),
        (lambda: WeightedDegree(shift=10**12), "shift", 10**12),
    ],
)
def test_counts_beyond_the_engines_are_refused_at_construction(
    make: Any, name: str, value: Any
) -> None:
    """They were accepted, then refused at evaluation as "must be a non-negative integer"."""
    bound = r"at most 2\*\*32 - 1 = 4294967295 \(the engine's 32-bit counts\)"
    pattern = rf"^{name} must be .* integer of {bound}, got {re.escape(repr(value))}: too large"
    with pytest.raises(InvalidParameterError, match=pattern) as e:
        make()
    assert e.value.parameter == name


def _wd_exact(s: str, t: str, d: int) -> float:
    """The weighted-degree kernel of two equal-length strings in exact fractions (lengths
    above ``len(s)`` match nothing)."""
    n = len(s)
    total = Fraction(0)
    for k in range(1, min(d, n) + 1):
        matches = sum(s[p : p + k] == t[p : p + k] for p in range(n - k + 1))
        total += Fraction(2 * (d - k + 1), d * (d + 1)) * matches
    return float(total)


def test_the_largest_counts_keep_their_meaning() -> None:
    """``2**32 - 1`` is the engine's bound and accepted: a k longer than every sequence
    counts no k-mer, a shift past the length adds nothing, and the weighted degree at the
    largest d is its sum."""
    seqs = ["ACGTAC", "ACGTTT", "GGGTAC"]
    top = 2**32 - 1
    np.testing.assert_array_equal(gram(seqs, [Spectrum(k=top)])[0], np.zeros((3, 3)))
    G = gram(seqs, [WeightedDegree(degree=top)])[0]
    ref = np.array([[_wd_exact(s, t, top) for t in seqs] for s in seqs])
    np.testing.assert_allclose(G, ref, rtol=1e-12)
    far = gram(seqs, [WeightedDegree(degree=3, shift=top)])[0]
    np.testing.assert_array_equal(far, gram(seqs, [WeightedDegree(degree=3, shift=5)])[0])


SEQS = ["ACGTAC", "ACGTTT", "GGGTAC", "TTTTAA"]


@pytest.mark.parametrize(
    ("X", "row", "value"),
    [
        ([None, *SEQS], 0, "None"),
        ([3, *SEQS], 0, "3"),
        (np.array([7, *SEQS], dtype=object), 0, "7"),
        ([*SEQS[:2], math.nan, *SEQS[2:]], 2, "nan"),
        (pd.DataFrame({"s": [None, *SEQS]}), 0, "nan"),  # pandas reads None as NaN
    ],
    ids=["None first", "number first", "object 7 first", "nan inside", "frame missing first"],
)
def test_a_string_column_is_recognised_by_every_entry(X: Any, row: int, value: str) -> None:
    """A bad first entry made the column numeric: "could not convert string to float"."""
    where = "column 's' of X" if isinstance(X, pd.DataFrame) else "X"
    pattern = rf"^{where} holds strings \(sequences\), but row {row} is {value}: every entry"
    with pytest.raises(InvalidInputError, match=pattern):
        gram(X, [Spectrum(2)])
    y = np.arange(len(X)) % 2
    with pytest.raises(InvalidInputError, match=pattern):
        mk.MKLClassifier(kernels=[Spectrum(2)]).fit(X, y)


@pytest.mark.parametrize(
    ("X", "what"),
    [
        (np.array([1, 2, 3, 4], dtype=object), r"an array of shape \(4,\) and dtype object"),
        (np.array([1.0, 2.0, 3.0, 4.0]), r"an array of shape \(4,\) and dtype float64"),
        ([1, 2, 3, 4], "a list"),
    ],
)
def test_numbers_for_a_sequence_kernel_say_it_reads_strings(X: Any, what: str) -> None:
    """An object array of numbers was refused as "X must be 2-D"."""
    spec = r"kernel 0, Spectrum\(k=2, features=None\)"
    pattern = rf"^{spec}, reads sequences \(strings\), but X is numeric \({what}\)"
    with pytest.raises(InvalidInputError, match=pattern):
        gram(X, [Spectrum(2)])
    with pytest.raises(InvalidInputError, match=pattern):
        mk.MKLClassifier(kernels=[Spectrum(2)]).fit(X, np.arange(4) % 2)
    clf = mk.MKLClassifier(kernels=[Spectrum(2)]).fit(SEQS, np.arange(4) % 2)
    with pytest.raises(InvalidInputError, match=pattern):
        clf.predict(X)


# --- 8. from_distances does not depend on the scale of D -----------------------------------


def _exp_kernels(D: FloatArray, widths: list[float]) -> FloatArray:
    """``exp(-D / (w D̄))``, ``D̄`` the mean off-diagonal entry, by numpy at scale 1."""
    n = len(D)
    mean = D[~np.eye(n, dtype=bool)].mean()
    return np.stack([np.exp(-D / (w * mean)) for w in widths])


def test_from_distances_at_the_ends_of_float64() -> None:
    """Distances scaled by 1e-320 gave a NonFiniteError (``1 / (w D̄)`` overflowed), and by
    1e307 an all-ones kernel (``D̄`` overflowed). Integer distances times a power of two are
    exact at every scale, so their kernels are those of the integers; distances times
    1e-320 (rounded to subnormals) are those of their exact values rescaled by 2**1074."""
    rng = np.random.default_rng(3)
    P = rng.integers(0, 6, size=(25, 3)).astype(float)
    D = cdist(P, P, "cityblock")  # integers up to 15
    widths = [0.5, 1.0, 2.0]
    ref = _exp_kernels(D, widths)
    for scale in (2.0**-1070, 2.0**-1063, 2.0**-500, 1.0, 2.0**900, 2.0**1019):
        K = from_distances(D * scale, widths)
        np.testing.assert_allclose(K.stack_, ref, rtol=1e-12)
        D_new = D[:4] * scale
        np.testing.assert_allclose(K.transform(D_new), ref[:, :4], rtol=1e-12)
    Q = rng.random((25, 4))
    Dq = cdist(Q, Q)
    tiny = Dq * 1e-320  # subnormal: ~4 digits left, exact multiples of 2**-1074
    K = from_distances(tiny, widths)
    np.testing.assert_allclose(K.stack_, _exp_kernels(np.ldexp(tiny, 1074), widths), rtol=1e-12)
    for scale in (1e300, 1e307):  # rounded to 1e-16 of each distance: the kernels of Dq
        K = from_distances(Dq * scale, widths)
        np.testing.assert_allclose(K.stack_, _exp_kernels(Dq, widths), rtol=1e-12)


# --- 9. a vector kernel on a string column names the column --------------------------------


def test_a_vector_kernel_on_a_string_column_names_the_column_everywhere() -> None:
    """The estimators resolve names to indices before the bank maps the kernels, and the
    error said ``column 0``; every route now names the DataFrame's column."""
    rng = np.random.default_rng(1)
    seqs = ["".join(rng.choice(list("ACGT"), 8)) for _ in range(20)]
    df = pd.DataFrame({"seq": seqs, "x": rng.normal(size=20)})
    y = np.arange(20) % 2
    vector = r"reads numeric features, but column 'seq' of X holds strings"
    fits: list[Any] = [
        lambda k: mk.MKLClassifier(kernels=k).fit(df, y),
        lambda k: mk.MKLClassifier(kernels=k, cache_size=10).fit(df, y),
        lambda k: mk.MKLRegressor(kernels=k).fit(df, y.astype(float)),
        lambda k: mk.MKLClassifierCV(kernels=k, Cs=2, cv=2).fit(df, y),
        lambda k: mk.mkl_path(df, 2.0 * y - 1, kernels=k),
        lambda k: KernelBank(k).fit_transform(df),
    ]
    for fit in fits:
        with pytest.raises(InvalidInputError, match=vector):
            fit([Gaussian(features=["seq"]), Spectrum(2, features=["seq"])])
        with pytest.raises(InvalidInputError, match=vector):
            fit([Gaussian(features=[0]), Spectrum(2, features=["seq"])])
        with pytest.raises(
            InvalidInputError,
            match=r"but column 'x' of X holds numbers; the columns of strings are column 'seq'",
        ):
            fit([Spectrum(2, features=["x"]), Gaussian(features=["x"])])


def test_no_hostile_case_here_leaks_a_builtin_error() -> None:
    """The cases above end in the library's errors: each is a MultikernelError, so a caller
    catching those catches them all."""
    for bad in ([None, "AC"], ["AC", "\ud800"], np.array([1, 2], dtype=object)):
        with pytest.raises(MultikernelError):
            gram(bad, [Spectrum(1)])
