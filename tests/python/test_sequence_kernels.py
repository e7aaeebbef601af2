"""The sequence kernels (Spectrum, WeightedDegree) against independent computations (k-mer
dictionaries counted with ``collections.Counter``; the weighted-degree sum written as plain
loops over its definition) on random and adversarial inputs (empty strings, strings shorter
than k, one-letter alphabets, non-ASCII bytes), train and cross blocks; their Gram matrices
PSD; points with sequence columns (1-D arrays of strings, DataFrames mixing numeric and string
columns) through KernelBank, the estimators, scikit-learn's Pipeline, GridSearchCV,
cross_val_score and pickling; and the errors for a kernel reading the wrong kind of column."""

from __future__ import annotations

import pickle
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import multikernel as mk
from multikernel.exceptions import InvalidInputError, InvalidParameterError
from multikernel.kernels import (
    FeatureBank,
    Gaussian,
    KernelBank,
    Linear,
    Spectrum,
    WeightedDegree,
    gram,
    low_rank,
)

FloatArray = NDArray[np.float64]


def as_bytes(s: str | bytes) -> bytes:
    return s.encode() if isinstance(s, str) else s


def ref_spectrum(A: list[Any], B: list[Any], k: int) -> FloatArray:
    def counts(s: Any) -> Counter[bytes]:
        b = as_bytes(s)
        return Counter(b[i : i + k] for i in range(len(b) - k + 1))

    ca, cb = [counts(s) for s in A], [counts(s) for s in B]
    return np.array([[float(sum(c[u] * d[u] for u in c)) for d in cb] for c in ca])


def ref_wd_pair(s: bytes, t: bytes, d: int, shift: int) -> float:
    """The definition, term by term: every length k, position l and shift σ."""
    n = len(s)
    total = 0.0
    for k in range(1, d + 1):
        beta = 2.0 * (d - k + 1) / (d * (d + 1))
        for p in range(n):
            if p + k <= n and s[p : p + k] == t[p : p + k]:
                total += beta
            for sigma in range(1, shift + 1):
                delta = 1.0 / (2.0 * (sigma + 1))
                if p + sigma + k <= n:
                    if s[p + sigma : p + sigma + k] == t[p : p + k]:
                        total += beta * delta
                    if s[p : p + k] == t[p + sigma : p + sigma + k]:
                        total += beta * delta
    return total


def ref_wd(A: list[Any], B: list[Any], d: int, shift: int = 0) -> FloatArray:
    return np.array([[ref_wd_pair(as_bytes(a), as_bytes(b), d, shift) for b in B] for a in A])


def random_strings(
    rng: np.random.Generator, n: int, lengths: Any, alphabet: str | bytes
) -> list[Any]:
    letters = list(alphabet)
    out: list[Any] = []
    for i in range(n):
        L = lengths(i) if callable(lengths) else lengths
        picks = [letters[j] for j in rng.integers(0, len(letters), L)]
        out.append(bytes(picks) if isinstance(alphabet, bytes) else "".join(picks))
    return out


def assert_rel(a: FloatArray, b: FloatArray, rtol: float = 1e-12) -> None:
    scale = max(float(np.abs(b).max()), 1.0)
    assert np.abs(a - b).max() <= rtol * scale, np.abs(a - b).max()


def assert_psd(G: FloatArray) -> None:
    w = np.linalg.eigvalsh(G)
    assert w.min() >= -1e-10 * max(w.max(), 1.0), w.min()


SPECTRUM_CASES = {
    # Lengths 0..: empty strings and strings shorter than k.
    "dna_varied": lambda r: random_strings(r, 14, lambda i: 3 * i, "ACGT"),
    "one_letter": lambda r: random_strings(r, 6, lambda i: i, "A"),
    "non_ascii_bytes": lambda r: random_strings(r, 9, lambda i: 5 + i, bytes([0, 200, 255, 7])),
    "unicode": lambda r: random_strings(r, 7, 6, "aé€"),
}


@pytest.mark.parametrize("case", sorted(SPECTRUM_CASES))
@pytest.mark.parametrize("k", [1, 3, 5])
def test_spectrum_train_and_cross_equal_the_counters(case: str, k: int) -> None:
    rng = np.random.default_rng(k)
    A = SPECTRUM_CASES[case](rng)
    B = SPECTRUM_CASES[case](np.random.default_rng(k + 10))[:5]
    bank = KernelBank([Spectrum(k=k)])
    G = bank.fit_transform(A)[0]
    assert_rel(G, ref_spectrum(A, A, k))
    assert_rel(bank.transform(B)[0], ref_spectrum(B, A, k))
    assert_psd(G)
    assert np.array_equal(G, G.T)


WD_CASES = {
    "dna": lambda r: random_strings(r, 10, 40, "ACGT"),
    "two_letters_long_runs": lambda r: random_strings(r, 8, 70, "AB"),
    "one_letter": lambda r: random_strings(r, 5, 130, "A"),
    "non_ascii_bytes": lambda r: random_strings(r, 8, 65, bytes([0, 128, 255])),
}


@pytest.mark.parametrize("case", sorted(WD_CASES))
@pytest.mark.parametrize(("degree", "shift"), [(1, 0), (8, 0), (10, 2)])
def test_weighted_degree_train_and_cross_equal_the_loops(
    case: str, degree: int, shift: int
) -> None:
    A = WD_CASES[case](np.random.default_rng(degree))
    B = WD_CASES[case](np.random.default_rng(degree + 7))[:4]
    bank = KernelBank([WeightedDegree(degree=degree, shift=shift)])
    G = bank.fit_transform(A)[0]
    assert_rel(G, ref_wd(A, A, degree, shift))
    assert_rel(bank.transform(B)[0], ref_wd(B, A, degree, shift))
    assert np.array_equal(G, G.T)
    assert_psd(G)


def test_weighted_degree_closed_forms() -> None:
    # Identical strings of length L: Σ_k β_k (L − k + 1); no match: 0.
    L, d = 50, 10
    G = gram(["C" * L, "G" * L], [WeightedDegree(degree=d)])[0]
    want = sum(2.0 * (d - k + 1) / (d * (d + 1)) * (L - k + 1) for k in range(1, d + 1))
    assert abs(G[0, 0] - want) <= 1e-12 * want
    assert G[0, 1] == 0.0


@pytest.mark.parametrize("normalize", ["none", "trace", "mean_diag", "spherical"])
def test_bank_normalisations_of_a_sequence_bank(normalize: Any) -> None:
    rng = np.random.default_rng(3)
    A = random_strings(rng, 20, 30, "ACGT")
    specs = [Spectrum(k) for k in (1, 2, 3)] + [WeightedDegree(degree=6)]
    bank = KernelBank(specs, normalize=normalize)
    G = bank.fit_transform(A)
    assert np.allclose(bank.transform(A[:5]), G[:, :5, :], rtol=1e-12, atol=1e-14)
    for m in range(len(specs)):
        assert_psd(G[m])
    if normalize == "spherical":  # cosine normalisation
        raw = ref_spectrum(A, A, 3)
        d = np.sqrt(np.diag(raw))
        assert_rel(G[2], raw / np.outer(d, d))


def test_arrays_lists_and_bytes_give_the_same_kernels() -> None:
    A = random_strings(np.random.default_rng(4), 12, 25, "ACGT")
    specs = [Spectrum(3), WeightedDegree(5)]
    G = gram(A, specs)
    for X in (np.array(A), np.array(A, dtype=object), [a.encode() for a in A], tuple(A)):
        assert np.array_equal(gram(X, specs), G)
    assert np.array_equal(gram(pd.DataFrame({"s": A}), specs), G)


def test_errors_for_the_wrong_kind_of_column() -> None:
    df = pd.DataFrame({"seq": ["ACGT", "ACGA", "TTTT"], "gc": [0.5, 0.2, 0.1]})
    with pytest.raises(InvalidInputError, match="X is numeric"):
        gram(np.ones((3, 2)), [Spectrum()])
    with pytest.raises(InvalidInputError, match="'seq' of X holds strings"):
        gram(df, [Gaussian(features=["seq"])])
    with pytest.raises(InvalidInputError, match="'gc' of X holds numbers"):
        gram(df, [WeightedDegree(features=["gc"])])
    with pytest.raises(InvalidInputError, match="only columns of strings"):
        gram(["AC", "GT"], [Linear()])
    with pytest.raises(InvalidInputError, match="equal lengths"):
        gram(["ACG", "AC"], [WeightedDegree()])
    bank = KernelBank([WeightedDegree(degree=2)]).fit(["ACG", "ACT"])
    with pytest.raises(InvalidInputError, match="equal lengths"):
        bank.transform(["ACGT"])
    with pytest.raises(InvalidInputError, match="strings"):
        bank.transform(np.ones((2, 1)))
    two = pd.DataFrame({"a": ["AC", "GT"], "b": ["AA", "CC"]})
    with pytest.raises(InvalidInputError, match="does not say which column"):
        gram(two, [Spectrum(1)])
    with pytest.raises(InvalidInputError, match="every entry of a sequence column"):
        gram(["AC", None, "GT"], [Spectrum(1)])
    for bad in ({"k": 0}, {"k": 1.5}, {"k": True}):
        with pytest.raises(InvalidParameterError):
            Spectrum(**bad)
    with pytest.raises(InvalidParameterError):
        WeightedDegree(degree=0)
    with pytest.raises(InvalidParameterError):
        WeightedDegree(shift=-1)
    with pytest.raises(InvalidParameterError, match="one column"):
        Spectrum(features=["a", "b"])


def test_parameters_repr_and_pickling() -> None:
    wd = WeightedDegree(degree=8, shift=2, features=["sequence"])
    assert repr(wd) == "WeightedDegree(degree=8, shift=2, features=('sequence',))"
    assert repr(Spectrum()) == "Spectrum(k=3, features=None)"
    assert pickle.loads(pickle.dumps(wd)) == wd
    assert hash(wd) == hash(WeightedDegree(8, 2, ["sequence"]))
    A = random_strings(np.random.default_rng(5), 9, 20, "ACGT")
    bank = KernelBank([Spectrum(2), wd._with_features((0,))], normalize="spherical")
    G = bank.fit_transform(A)
    again = pickle.loads(pickle.dumps(bank))
    assert np.array_equal(again.transform(A), bank.transform(A))
    assert np.allclose(again.transform(A), G)


def motif_problem(n: int, seed: int) -> tuple[list[str], NDArray[np.int64]]:
    """Sequences of length 30; class 1 carries the motif TATA at position 12 (with noise)."""
    rng = np.random.default_rng(seed)
    seqs = random_strings(rng, n, 30, "ACGT")
    y = rng.integers(0, 2, n)
    flip = rng.random(n) < 0.1
    motif = (y == 1) != flip
    out = [s[:12] + "TATA" + s[16:] if m else s for s, m in zip(seqs, motif, strict=True)]
    return out, y


@pytest.mark.parametrize("penalty", ["lp", "l1"])
def test_fit_is_certified_and_equals_the_precomputed_fit(penalty: str) -> None:
    seqs, y = motif_problem(80, 0)
    specs = [Spectrum(2), Spectrum(3), WeightedDegree(6)]
    kw: dict[str, Any] = {"penalty": penalty, "tol": 1e-6, "normalize": "spherical"}
    clf = mk.MKLClassifier(kernels=specs, **kw).fit(seqs, y)
    assert clf.converged_ and clf.duality_gap_ <= clf.tol
    G = gram(seqs, specs, normalize="spherical")
    ref = mk.MKLClassifier(kernels="precomputed", **kw).fit(G, y)
    assert abs(clf.primal_objective_ - ref.primal_objective_) <= 1e-9 * abs(ref.primal_objective_)
    assert np.allclose(clf.kernel_weights_, ref.kernel_weights_, atol=1e-9)
    new, _ = motif_problem(15, 1)
    Gt = KernelBank(specs, normalize="spherical").fit(seqs).transform(new)
    assert np.allclose(clf.decision_function(new), ref.decision_function(Gt), atol=1e-9)
    assert clf.score(seqs, y) > 0.8


def test_low_rank_factors_of_a_sequence_bank() -> None:
    """Full-rank factors reproduce the Gram matrices, and a fit on them equals the fit on the
    stack; feature maps refuse sequence kernels, pointing to the factors."""
    seqs, y = motif_problem(40, 11)
    specs = [Spectrum(3), WeightedDegree(degree=5, shift=1)]
    G = gram(seqs, specs, normalize="spherical")
    with pytest.warns(UserWarning, match="compress nothing"):
        lr = low_rank(G, tol=0.0)
    for m in range(len(specs)):
        R = lr.factors[m]
        assert np.max(np.abs(R @ R.T - G[m])) <= 1e-12
    kw: dict[str, Any] = {"penalty": "lp", "tol": 1e-8}
    stored = mk.MKLClassifier(kernels="precomputed", **kw).fit(G, y)
    factored = mk.MKLClassifier(kernels="precomputed", **kw).fit(lr, y)
    rel = abs(factored.primal_objective_ - stored.primal_objective_)
    assert rel <= 1e-6 * abs(stored.primal_objective_)
    assert np.allclose(factored.kernel_weights_, stored.kernel_weights_, atol=1e-4)
    # The shifted kernel has no explicit features (the unshifted ones: test_sequence_features).
    with pytest.raises(InvalidParameterError, match="no explicit feature map"):
        FeatureBank([specs[1]])


def mixed_frame(n: int, seed: int) -> tuple[pd.DataFrame, NDArray[np.int64]]:
    seqs, y = motif_problem(n, seed)
    rng = np.random.default_rng(seed + 100)
    gc = [(s.count("G") + s.count("C")) / len(s) for s in seqs]
    frame = pd.DataFrame({"gc": gc, "sequence": seqs, "len": rng.normal(size=n) + y})
    return frame, y


MIXED_SPECS = [
    WeightedDegree(degree=8, features=["sequence"]),
    Spectrum(3, features=["sequence"]),
    Gaussian(sigma=1.0, features=["gc", "len"]),
]


def test_mixed_frame_kernels_read_their_columns() -> None:
    df, _ = mixed_frame(30, 2)
    G = gram(df, MIXED_SPECS)
    seqs = list(df["sequence"])
    assert_rel(G[0], ref_wd(seqs, seqs, 8))
    assert_rel(G[1], ref_spectrum(seqs, seqs, 3))
    assert np.allclose(G[2], gram(df[["gc", "len"]].to_numpy(), [Gaussian(sigma=1.0)])[0])
    # Unnamed kernels read the only sequence column, or every numeric column.
    G2 = gram(df, [WeightedDegree(degree=8), Gaussian(sigma=1.0)])
    assert np.array_equal(G2[0], G[0]) and np.allclose(G2[1], G[2])


def test_mixed_frame_in_estimators_pipelines_grids_and_pickles() -> None:
    df, y = mixed_frame(90, 3)
    new, y_new = mixed_frame(20, 4)
    clf = mk.MKLClassifier(kernels=MIXED_SPECS, normalize="spherical", tol=1e-5)
    clf.fit(df, y)
    assert clf.converged_ and clf.duality_gap_ <= clf.tol
    assert list(clf.feature_names_in_) == ["gc", "sequence", "len"]
    pred = clf.predict(new)
    assert np.array_equal(pickle.loads(pickle.dumps(clf)).predict(new), pred)
    assert clf.score(new, y_new) > 0.6
    with pytest.raises(ValueError):  # the columns of the fit, by name
        clf.predict(new[["sequence", "gc", "len"]])
    pipe = make_pipeline(FunctionTransformer(lambda d: d), clf)
    assert np.array_equal(pipe.fit(df, y).predict(new), pred)
    scores = cross_val_score(clf, df, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.6
    grid = GridSearchCV(clf, {"C": [0.1, 10.0]}, cv=3).fit(df, y)
    assert grid.best_params_["C"] in (0.1, 10.0)
    reg = mk.MKLRegressor(kernels=MIXED_SPECS, normalize="spherical").fit(df, y.astype(float))
    assert reg.predict(new).shape == (20,)


def test_sequences_in_the_cv_estimators_and_the_path() -> None:
    seqs, y = motif_problem(60, 5)
    specs = [Spectrum(2), WeightedDegree(5)]
    cv = mk.MKLClassifierCV(kernels=specs, Cs=4, cv=3).fit(seqs, y)
    assert cv.predict(seqs[:5]).shape == (5,)
    path = mk.mkl_path(seqs, 2.0 * y - 1, kernels=specs, loss="squared")
    assert path.predict(seqs[:3], C=float(path.Cs[-1])).shape == (3,)


@pytest.mark.parametrize("normalize", ["none", "trace", "mean_diag", "spherical"])
def test_on_demand_reads_equal_the_stored_stack(normalize: Any) -> None:
    df, _ = mixed_frame(40, 6)
    specs = [*MIXED_SPECS, WeightedDegree(degree=5, shift=2, features=["sequence"])]
    bank = KernelBank(specs, normalize=normalize)
    G = bank.fit_transform(df)
    K = KernelBank(specs, normalize=normalize).fit_on_demand(df, cache_bytes=1 << 20)
    assert (K.n, K.m) == (40, len(specs))
    # vᵀ K_m v for random v and for v = e_i + e_j read every entry (the engine's own reads).
    rng = np.random.default_rng(0)
    for v in [rng.normal(size=40) for _ in range(3)] + [np.eye(40)[3] + np.eye(40)[17]]:
        want = np.einsum("i,mij,j->m", v, G, v)
        assert np.allclose(mk._core.quad_forms(K, v), want, rtol=1e-12, atol=1e-13)
    assert np.allclose(
        bank.stats_["scales"],
        KernelBank(specs, normalize=normalize).fit_on_demand(df, cache_bytes=0).stats()["scales"],
        rtol=1e-12,
    )


@pytest.mark.parametrize("penalty", ["lp", "l1"])
def test_fit_on_demand_reaches_the_stored_objective(penalty: str) -> None:
    df, y = mixed_frame(90, 7)
    kw: dict[str, Any] = {"penalty": penalty, "normalize": "spherical", "tol": 1e-6}
    stored = mk.MKLClassifier(kernels=MIXED_SPECS, **kw).fit(df, y)
    lazy = mk.MKLClassifier(kernels=MIXED_SPECS, cache_size=16, **kw).fit(df, y)
    assert lazy._on_demand and not stored._on_demand
    assert lazy.converged_ and lazy.duality_gap_ <= lazy.tol
    rel = abs(lazy.primal_objective_ - stored.primal_objective_) / abs(stored.primal_objective_)
    assert rel <= 1e-5
    new, _ = mixed_frame(12, 8)
    assert np.allclose(lazy.decision_function(new), stored.decision_function(new), atol=1e-4)
