"""Exact feature blocks of the sequence kernels (issue 67): ``FeatureBank([Spectrum(k),
WeightedDegree(d)])`` gives sparse CSR blocks whose inner products are the kernels (checked
against k-mer dictionaries counted with ``collections.Counter``, the weighted-degree sum
written as loops over its definition, and the engine's Gram matrices under every
normalisation), train and new sequences with k-mers unseen at fit; ``prox_newton`` fits them
as it fits their dense copies; a fitted model predicts and pickles; and what has no such
features, or cannot fit them, is refused by name."""

from __future__ import annotations

import pickle
from collections import Counter
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.typing import NDArray
from problems import solvers_called

import multikernel as mk
from multikernel.exceptions import InvalidInputError, InvalidParameterError
from multikernel.kernels import FeatureBank, KernelBank, Linear, Spectrum, WeightedDegree, gram

FloatArray = NDArray[np.float64]
NORMS = ["none", "mean_diag", "trace", "spherical"]


def dna(n: int, lengths: list[int], seed: int, alphabet: str = "ACGT") -> list[str]:
    """``n`` random strings, string ``i`` of length ``lengths[i % len(lengths)]``."""
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(alphabet), lengths[i % len(lengths)])) for i in range(n)]


def ref_spectrum(A: list[str], B: list[str], k: int) -> FloatArray:
    def counts(s: str) -> Counter[str]:
        return Counter(s[i : i + k] for i in range(len(s) - k + 1))

    ca, cb = [counts(s) for s in A], [counts(s) for s in B]
    return np.array([[float(sum(c[u] * d[u] for u in c)) for d in cb] for c in ca])


def ref_wd(A: list[str], B: list[str], d: int) -> FloatArray:
    def pair(s: str, t: str) -> float:
        total = 0.0
        for k in range(1, d + 1):
            beta = 2.0 * (d - k + 1) / (d * (d + 1))
            total += beta * sum(s[p : p + k] == t[p : p + k] for p in range(len(s) - k + 1))
        return total

    return np.array([[pair(s, t) for t in B] for s in A])


def products(F: Any, G: Any) -> FloatArray:
    return np.asarray((F @ G.T).toarray())


def test_blocks_are_sparse_counts_over_the_training_kmers() -> None:
    train, new = ["GATTACA", "TACAGAT", "CC"], ["GATTTTT", ""]
    bank = FeatureBank([Spectrum(3)], normalize="none")
    (F,) = bank.fit_transform(train)
    assert sp.issparse(F) and F.format == "csr" and F.shape == (3, 7)
    assert F.nnz == 5 + 5  # GAT ATT TTA TAC ACA; TAC ACA CAG AGA GAT: every distinct 3-mer once
    assert F.sum() == 10.0  # the counts: 5 windows in each of the first two strings
    (T,) = bank.transform(new)
    # GATTTTT: GAT and ATT seen at fit, TTT (three times) unseen: dropped.
    assert T.shape == (2, 7) and T.nnz == 2 and T.sum() == 2.0
    np.testing.assert_array_equal(products(T, F), ref_spectrum(new, train, 3))


@pytest.mark.parametrize("norm", NORMS)
def test_spectrum_blocks_give_the_gram(norm: str) -> None:
    """Lengths 0 to 40 (empty, shorter than k), new strings with letters never seen."""
    train = dna(60, [0, 2, 7, 19, 40, 33], 1)
    new = dna(25, [5, 40, 11, 0], 2, alphabet="ACGTN")
    ks = [1, 3, 5]
    bank = FeatureBank([Spectrum(k) for k in ks], normalize=norm)
    F, T = bank.fit_transform(train), bank.transform(new)
    assert all(sp.issparse(B) for B in F + T)
    kb = KernelBank([Spectrum(k) for k in ks], normalize=norm).fit(train)
    G, C = kb.transform(train), kb.transform(new)
    for m, k in enumerate(ks):
        assert F[m].nnz <= sum(max(len(s) - k + 1, 0) for s in train)
        np.testing.assert_allclose(products(F[m], F[m]), G[m], rtol=0, atol=1e-12)
        np.testing.assert_allclose(products(T[m], F[m]), C[m], rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            products(F[m], F[m]), gram(train, [Spectrum(k)], normalize=norm)[0], atol=1e-12
        )
        if norm == "none":
            np.testing.assert_array_equal(products(F[m], F[m]), ref_spectrum(train, train, k))
            np.testing.assert_array_equal(products(T[m], F[m]), ref_spectrum(new, train, k))


@pytest.mark.parametrize("norm", NORMS)
def test_weighted_degree_blocks_give_the_gram(norm: str) -> None:
    train, new = dna(40, [23], 3), dna(15, [23], 4, alphabet="ACGTN")
    specs = [WeightedDegree(degree=4), WeightedDegree(degree=9)]
    bank = FeatureBank(specs, normalize=norm)
    F, T = bank.fit_transform(train), bank.transform(new)
    kb = KernelBank(specs, normalize=norm).fit(train)
    G, C = kb.transform(train), kb.transform(new)
    for m, spec in enumerate(specs):
        np.testing.assert_allclose(products(F[m], F[m]), G[m], rtol=0, atol=1e-12)
        np.testing.assert_allclose(products(T[m], F[m]), C[m], rtol=0, atol=1e-12)
        if norm == "none":
            np.testing.assert_allclose(
                products(T[m], F[m]), ref_wd(new, train, spec.degree), rtol=1e-13
            )


def motif_problem(n: int, seed: int, length: int = 20) -> tuple[list[str], FloatArray]:
    """Random DNA; the label is whether the motif ``TATAAT`` was planted."""
    rng = np.random.default_rng(seed)
    seqs = dna(n, [length], seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    for i in np.flatnonzero(y > 0):
        at = int(rng.integers(0, length - 6))
        seqs[i] = seqs[i][:at] + "TATAAT" + seqs[i][at + 6 :]
    return seqs, y


#: Narrow blocks (64, 256 and 20 · (4 + 16) columns): prox_newton factors its Newton systems,
#: whose cost grows with the cube of the width.
SPECS = [Spectrum(3), Spectrum(4), WeightedDegree(2)]


def test_prox_newton_fits_the_blocks_as_their_dense_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seqs, y = motif_problem(150, 5)
    new, _ = motif_problem(40, 6)
    kw: dict[str, Any] = {"penalty": "l1", "loss": "logistic", "C": 2.0, "tol": 1e-10}
    calls = solvers_called(monkeypatch)
    est = mk.MKLClassifier(kernels=FeatureBank(SPECS), **kw).fit(seqs, y)  # auto solver
    bank = FeatureBank(SPECS)
    dense = [B.toarray() for B in bank.fit_transform(seqs)]
    ref = mk.MKLClassifier(kernels="precomputed", solver="prox_newton", **kw).fit(dense, y)
    assert calls == ["prox_newton", "prox_newton"]
    assert est.duality_gap_ <= 1e-8
    assert est.primal_objective_ == pytest.approx(ref.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(est.kernel_weights_, ref.kernel_weights_, atol=1e-8)
    dense_new = [B.toarray() for B in bank.transform(new)]
    f, g = est.decision_function(new), ref.decision_function(dense_new)
    np.testing.assert_allclose(f, g, rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(est.predict(new), ref.predict(dense_new))
    assert est.score(seqs, y) > 0.9


def test_fitted_model_predicts_and_pickles() -> None:
    seqs, y = motif_problem(120, 7)
    new, y_new = motif_problem(60, 8)
    est = mk.MKLClassifier(kernels=FeatureBank(SPECS), penalty="l1", solver="prox_newton")
    est.fit(seqs, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(new), est.decision_function(new))
    assert est.score(new, y_new) > 0.8
    bank = pickle.loads(pickle.dumps(FeatureBank(SPECS).fit(seqs)))
    for a, b in zip(bank.transform(new), FeatureBank(SPECS).fit(seqs).transform(new), strict=True):
        assert (a != b).nnz == 0


def test_what_has_no_exact_features_or_cannot_fit_them_is_refused() -> None:
    seqs, y = motif_problem(40, 9)
    with pytest.raises(InvalidParameterError, match=r"WeightedDegree.*no explicit feature map"):
        FeatureBank([Spectrum(3), WeightedDegree(degree=4, shift=2)])
    with pytest.raises(InvalidParameterError, match="sequence kernels only"):
        FeatureBank([Spectrum(3), Linear()])
    with pytest.raises(InvalidParameterError, match="'spherical' for sequence kernels only"):
        FeatureBank([Linear()], normalize="spherical")
    with pytest.raises(InvalidInputError, match="reads sequences"):
        FeatureBank([Spectrum(3)]).fit(np.random.default_rng(0).normal(size=(10, 3)))
    with pytest.raises(InvalidInputError, match="reads sequences"):
        mk.MKLClassifier(kernels=FeatureBank([Spectrum(3)])).fit(np.ones((10, 2)), [0, 1] * 5)
    bank = FeatureBank([WeightedDegree(4)]).fit(seqs)
    with pytest.raises(InvalidInputError, match="equal lengths"):
        bank.transform(["ACGT"])
    for solver, penalty in [("spicy", "l1"), ("wrapper", "l1"), ("svrg", "lp")]:
        est = mk.MKLClassifier(
            kernels=FeatureBank(SPECS), penalty=penalty, loss="logistic", solver=solver
        )
        with pytest.raises(
            InvalidParameterError, match=rf"solver \"{solver}\" does not fit sparse"
        ):
            est.fit(seqs, y)
