"""Sparse ``X`` (``scipy.sparse``): the vector kernels' Grams computed from the stored entries
agree with the dense path on ``X.toarray()`` (to 1e-12) and with scikit-learn's
``pairwise_kernels``; the estimators fit, predict, pickle and cross-validate on sparse ``X``
as on its dense copy; what cannot read sparse points refuses them, naming itself
(docs/guide.md, "Sparse data")."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.typing import NDArray
from problems import solvers_called
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.model_selection import GridSearchCV

import multikernel as mk
from multikernel.exceptions import InvalidInputError, NonFiniteError
from multikernel.kernels import (
    Callable as CallableKernel,
)
from multikernel.kernels import (
    Chi2,
    FeatureBank,
    Gaussian,
    Hellinger,
    Intersection,
    Kernel,
    KernelBank,
    Laplacian,
    Linear,
    Polynomial,
    Spectrum,
    Tanimoto,
    gram,
)

FORMATS: list[Callable[[Any], Any]] = [
    sp.csr_matrix,
    sp.csc_matrix,
    sp.csr_array,
    sp.csc_array,
    sp.coo_matrix,
    sp.lil_matrix,
]


def sparse_data(n: int, d: int, seed: int, density: float = 0.3) -> NDArray[np.float64]:
    """Non-negative points with about ``1 - density`` of their entries 0, and a zero row."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) * (rng.random((n, d)) < density) * 3.0
    X[2] = 0.0
    return X


#: Every vector kernel, on all columns and on a selection with a repeated column.
KERNELS: list[Kernel] = [
    Linear(),
    Polynomial(degree=3, coef0=0.5, scale=0.2),
    Gaussian(sigma=1.5),
    Laplacian(sigma=4.0),
    Chi2(gamma=0.3),
    Intersection(),
    Hellinger(),
    Tanimoto(),
]
SELECTED: list[Kernel] = [type(k)(**{**vars(k), "features": (7, 0, 3, 7)}) for k in KERNELS]


def assert_close(a: NDArray[Any], b: NDArray[Any], rtol: float = 1e-12) -> None:
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("normalize", "center"), [("none", False), ("spherical", True), ("multiplicative", False)]
)
def test_grams_match_the_dense_path(
    fmt: Callable[[Any], Any], normalize: str, center: bool
) -> None:
    X = sparse_data(30, 9, 0)
    S = fmt(X)
    specs = KERNELS + SELECTED
    G = gram(S, specs, normalize=normalize, center=center)  # type: ignore[arg-type]
    assert_close(G, gram(X, specs, normalize=normalize, center=center))  # type: ignore[arg-type]
    bank = KernelBank(specs, normalize=normalize, center=center).fit(S)  # type: ignore[arg-type]
    dense = KernelBank(specs, normalize=normalize, center=center).fit(X)  # type: ignore[arg-type]
    Z = sparse_data(7, 9, 1)
    assert_close(bank.transform(fmt(Z)), dense.transform(Z))
    # Mixed: sparse new points against dense training points, and the other way round.
    assert_close(bank.transform(Z), dense.transform(Z))
    assert_close(dense.transform(fmt(Z)), dense.transform(Z))
    if not center:  # (centred cross kernels read every training point)
        got = bank.transform(fmt(Z), columns=[4, 0])
        assert_close(got, dense.transform(Z, columns=[4, 0]))


def test_grams_agree_with_scikit_learn() -> None:
    X = sparse_data(25, 6, 2)
    S = sp.csr_matrix(X)
    # scikit-learn's metrics, on sparse X where they take it (χ² does not).
    cases: list[tuple[Kernel, str, dict[str, float], bool]] = [
        (Linear(), "linear", {}, True),
        (Polynomial(degree=2, coef0=1.0, scale=0.5), "poly", {"degree": 2, "gamma": 0.5}, True),
        (Gaussian(sigma=2.0), "rbf", {"gamma": 1 / 8}, True),
        (Laplacian(sigma=3.0), "laplacian", {"gamma": 1 / 3}, True),
        (Chi2(gamma=0.7), "chi2", {"gamma": 0.7}, False),
    ]
    for spec, metric, params, takes_sparse in cases:
        want = pairwise_kernels(S if takes_sparse else X, metric=metric, **params)
        assert_close(gram(S, [spec])[0], want, rtol=1e-10)
    # The histogram kernels by their formulas, on the dense copy.
    mins = np.minimum(X[:, None, :], X[None, :, :]).sum(-1)
    maxs = np.maximum(X[:, None, :], X[None, :, :]).sum(-1)
    assert_close(gram(S, [Intersection()])[0], mins)
    assert_close(gram(S, [Hellinger()])[0], np.sqrt(X) @ np.sqrt(X).T)
    assert_close(
        gram(S, [Tanimoto()])[0], np.where(maxs > 0, mins / np.where(maxs > 0, maxs, 1), 1)
    )


def test_stored_zeros_and_duplicates_are_read_as_scipy_reads_them() -> None:
    # COO with a duplicated entry (summed) and an explicit zero; CSR with unsorted indices.
    rows, cols = np.array([0, 0, 1, 1, 2]), np.array([2, 2, 0, 1, 1])
    vals = np.array([1.0, 2.0, 0.0, 4.0, 5.0])
    C = sp.coo_matrix((vals, (rows, cols)), shape=(3, 4))
    unsorted = sp.csr_matrix(
        (np.array([3.0, 4.0, 5.0]), np.array([2, 1, 1]), np.array([0, 2, 2, 3])), shape=(3, 4)
    )
    assert not unsorted.has_sorted_indices
    for S in (C, unsorted):
        specs: list[Kernel] = [Gaussian(sigma=1.0), Laplacian(sigma=1.0), Chi2(gamma=1.0)]
        assert_close(gram(S, specs), gram(S.toarray(), specs))


def test_wide_sparse_points_are_never_densified() -> None:
    # 5 × 10⁸ columns: a dense copy would need 16 GB; the sparse Gram reads 40 entries.
    n, d = 8, 500_000_000
    rng = np.random.default_rng(3)
    cols = rng.choice(d, size=40, replace=False)
    S = sp.csr_matrix((rng.random(40), (np.repeat(np.arange(n), 5), cols)), shape=(n, d))
    G = gram(S, [Linear(), Gaussian(sigma=1.0), Linear(features=[int(c) for c in cols[:9]])])
    # The reference on the stored columns only, by hand (scipy's products and column
    # indexing of so wide a matrix allocate per column).
    coo = S.tocoo()
    used = np.unique(coo.col)
    narrow = np.zeros((n, len(used)))
    narrow[coo.row, np.searchsorted(used, coo.col)] = coo.data
    XXt = narrow @ narrow.T
    sq = np.diag(XXt)
    assert_close(G[0], XXt)
    assert_close(G[1], np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2 * XXt, 0) / 2))
    Sf = narrow[:, np.searchsorted(used, cols[:9])]
    assert_close(G[2], Sf @ Sf.T)


def test_bad_entries_are_named() -> None:
    X = sparse_data(6, 4, 4)
    X[3, 1] = np.nan
    with pytest.raises(NonFiniteError, match=r"row 3, column 1"):
        gram(sp.csr_matrix(X), [Linear()])
    X[3, 1] = -2.0
    # Negative entries: refused where a histogram kernel reads them, not elsewhere.
    with pytest.raises(ValueError, match=r"X\[3, 1\] = -2"):
        gram(sp.csr_matrix(X), [Chi2(features=[0, 1])])
    assert_close(gram(sp.csr_matrix(X), [Chi2(features=[0, 2])]), gram(X, [Chi2(features=[0, 2])]))


def problem(n: int = 60, d: int = 10, seed: int = 5) -> tuple[NDArray[np.float64], NDArray[Any]]:
    X = sparse_data(n, d, seed, density=0.4)
    y = np.where(X[:, 0] + X[:, 1] - X[:, 2] > 0.4, 1, 0)
    return X, y


#: Kernels of every pairwise sum (inner products, ℓ1, χ², minima).
FIT_KERNELS: list[Kernel] = [
    Linear(),
    Gaussian(sigma=2.0),
    Laplacian(sigma=3.0, features=[0, 1, 2]),
    Chi2(gamma=0.5),
    Tanimoto(),
]


@pytest.mark.parametrize(
    "make",
    [
        lambda: mk.MKLClassifier(kernels=FIT_KERNELS, tol=1e-8),
        lambda: mk.MKLClassifier(kernels=FIT_KERNELS, penalty="l1", loss="logistic", tol=1e-8),
        lambda: mk.MKLRegressor(kernels=FIT_KERNELS, tol=1e-8),
        lambda: mk.MKLOneClass(kernels=FIT_KERNELS, tol=1e-8),
        lambda: mk.MKLClassifier(tol=1e-8),  # kernels=None: the default bank
    ],
    ids=["classifier", "l1-logistic", "regressor", "one-class", "defaults"],
)
def test_estimators_fit_sparse_as_dense(make: Callable[[], Any]) -> None:
    X, y = problem()
    Xtr, Xte, ytr = X[:45], X[45:], y[:45]
    regressor = isinstance(make(), mk.MKLRegressor)
    target = ytr.astype(float) if regressor else ytr
    est = make().fit(sp.csr_matrix(Xtr), target)
    ref = make().fit(Xtr, target)

    def f(model: Any, Z: Any) -> NDArray[np.float64]:
        return np.asarray(model.predict(Z) if regressor else model.decision_function(Z))

    np.testing.assert_allclose(est.dual_coef_, ref.dual_coef_, rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(est.predict(sp.csc_matrix(Xte)) > 0.5, ref.predict(Xte) > 0.5)
    got = f(est, sp.csr_array(Xte))
    np.testing.assert_allclose(got, f(ref, Xte), rtol=1e-8, atol=1e-8)
    # Dense new points for a sparse fit, sparse ones for a dense fit.
    np.testing.assert_allclose(f(est, Xte), got, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f(ref, sp.csr_matrix(Xte)), got, rtol=1e-8, atol=1e-8)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(f(again, sp.csr_matrix(Xte)), got)


def test_kernels_on_demand_of_dense_points_predict_sparse_points() -> None:
    X, y = problem()
    est = mk.MKLClassifier(kernels=FIT_KERNELS[:2], cache_size=1.0).fit(X, y)
    f = est.decision_function(X)
    np.testing.assert_allclose(est.decision_function(sp.csr_matrix(X)), f, rtol=1e-12, atol=1e-12)


def test_grid_search_on_sparse_points() -> None:
    X, y = problem(n=48)
    grid = {"C": [0.1, 10.0], "kernels": [FIT_KERNELS[:2], FIT_KERNELS[2:]]}
    est = mk.MKLClassifier(tol=1e-8)
    a = GridSearchCV(est, grid, cv=3).fit(sp.csr_matrix(X), y)
    b = GridSearchCV(est, grid, cv=3).fit(X, y)
    np.testing.assert_allclose(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"])
    assert a.best_params_ == b.best_params_


def test_cv_estimator_on_sparse_points() -> None:
    X, y = problem(n=50)
    a = mk.MKLClassifierCV(kernels=FIT_KERNELS[:3], cv=3).fit(sp.csr_matrix(X), y)
    b = mk.MKLClassifierCV(kernels=FIT_KERNELS[:3], cv=3).fit(X, y)
    assert a.C_ == b.C_
    np.testing.assert_allclose(a.decision_function(sp.csr_matrix(X)), b.decision_function(X),
                               rtol=1e-8, atol=1e-8)  # fmt: skip


def test_path_on_sparse_points() -> None:
    X, y = problem(n=40)
    yy = np.where(y == 1, 1.0, -1.0)
    a = mk.mkl_path(sp.csr_matrix(X), yy, kernels=FIT_KERNELS[:2])
    b = mk.mkl_path(X, yy, kernels=FIT_KERNELS[:2])
    np.testing.assert_allclose(a.Cs, b.Cs, rtol=1e-8)
    C = float(b.Cs[-1])
    f = a.decision_function(sp.csr_matrix(X), C)
    np.testing.assert_allclose(f, b.decision_function(X, C), rtol=1e-8, atol=1e-8)


def test_sparse_tag_follows_the_kernels() -> None:
    def sparse_tag(est: Any) -> bool:
        return bool(est.__sklearn_tags__().input_tags.sparse)

    assert sparse_tag(mk.MKLClassifier())
    assert sparse_tag(mk.MKLRegressor(kernels=[Gaussian(), Chi2()]))
    assert not sparse_tag(mk.MKLClassifier(kernels="precomputed"))
    assert not sparse_tag(mk.MKLClassifier(kernels=[Linear(), Spectrum(3)]))
    assert sparse_tag(mk.MKLClassifier(kernels=FeatureBank([Linear()])))
    assert not sparse_tag(mk.MKLClassifier(kernels=FeatureBank([Linear(), Gaussian()])))
    assert not sparse_tag(mk.MKLClassifierCV(kernels=[CallableKernel("chi2")]))


def refused(what: str) -> Any:
    """The error of a sparse ``X`` refused by ``what``: it names it and says what to do."""
    return pytest.raises(InvalidInputError, match=rf"(?s){what}.*sparse.*toarray\(\)")


def test_what_cannot_read_sparse_points_says_so() -> None:
    X, y = problem(n=30)
    S = sp.csr_matrix(X)
    with refused(r"kernel 1, Spectrum"):
        gram(S, [Linear(), Spectrum(3)])
    with refused(r"kernel 0, Callable"):
        gram(S, [CallableKernel("chi2")])
    with refused(r"kernel 0, Callable"):
        mk.MKLClassifier(kernels=[CallableKernel(lambda A, B: A @ B.T)]).fit(S, y)
    with refused("FeatureBank's nystroem map of kernel 0"):
        FeatureBank([Gaussian()], n_components=5).fit_transform(S)
    with refused("kernels='precomputed'"):
        mk.MKLClassifier(kernels="precomputed").fit(sp.csr_matrix(gram(X, [Linear()])[0]), y)
    with refused("kernels='precomputed'"):
        mk.MKLClassifier(kernels="precomputed").fit([S], y)
    with refused("on demand"):
        mk.MKLClassifier(kernels=[Gaussian()], cache_size=1.0).fit(S, y)
    with refused("on demand"):
        KernelBank([Gaussian()]).fit_on_demand(S, cache_bytes=1 << 20)
    with refused("feature blocks"):
        KernelBank([Linear()])._linear_features(S)


def test_linear_kernels_of_sparse_points_are_a_stored_stack(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Linear specifications that a fit on dense points reads as feature blocks (solver
    prox_newton) are a stored stack for sparse points (the blocks are dense): the same
    optimum, from another solver; the dense model refuses sparse new points."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(160, 12)) * (rng.random((160, 12)) < 0.5)
    y = np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=160) > 0, 1, -1)
    specs: list[Kernel] = [Linear(features=[0, 1, 2]), Linear(features=[3, 4, 5, 6]), Linear()]
    kw: dict[str, Any] = {"penalty": "l1", "loss": "logistic", "tol": 1e-9, "max_iter": 1000}
    calls = solvers_called(monkeypatch)
    dense = mk.MKLClassifier(kernels=specs, **kw).fit(X, y)
    sparse = mk.MKLClassifier(kernels=specs, **kw).fit(sp.csr_matrix(X), y)
    assert calls[0] == "prox_newton" and calls[1] != "prox_newton"
    assert sparse.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-6)
    f = sparse.decision_function(sp.csr_matrix(X))
    np.testing.assert_allclose(f, dense.decision_function(X), atol=1e-4 * np.abs(f).max())
    with refused("feature blocks"):
        dense.predict(sp.csr_matrix(X))


@pytest.mark.parametrize("normalize", ["mean_diag", "trace", "none"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_feature_banks_map_sparse_points_to_sparse_blocks(
    normalize: Any, dtype: Any
) -> None:
    X, Z = sparse_data(30, 8, 7), sparse_data(6, 8, 8)
    specs: list[Kernel] = [Linear(features=[5, 0, 3]), Linear()]
    bank = FeatureBank(specs, normalize=normalize, dtype=dtype)
    dense = FeatureBank(specs, normalize=normalize, dtype=dtype)
    blocks, want = bank.fit_transform(sp.csc_matrix(X)), dense.fit_transform(X)
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(bank.scales_, dense.scales_, rtol=rtol)
    for got, ref in [(blocks, want), (bank.transform(sp.csr_array(Z)), dense.transform(Z))]:
        assert all(sp.issparse(B) and B.format == "csr" and B.dtype == dtype for B in got)
        for B, F in zip(got, ref, strict=True):
            np.testing.assert_allclose(B.toarray(), F, rtol=rtol, atol=rtol)
    # The blocks' products are the kernels, as gram normalises them.
    if normalize != "none" and dtype == np.float64:
        G = gram(X, specs, normalize=normalize)
        for B, K in zip(blocks, G, strict=True):
            assert_close((B @ B.T).toarray(), K)
    # Fitted on sparse points, the bank maps dense ones too (to dense blocks).
    for B, F in zip(bank.transform(Z), dense.transform(Z), strict=True):
        np.testing.assert_allclose(B, F, rtol=rtol, atol=rtol)
    with pytest.raises(ValueError, match="out="):
        bank.transform(sp.csr_matrix(Z), out=np.empty((6, 11), dtype=dtype))


def test_feature_banks_refuse_sparse_points_for_other_maps() -> None:
    S = sp.csr_matrix(sparse_data(10, 4, 9))
    with refused(r"nystroem map of kernel 1, Gaussian"):
        FeatureBank([Linear(), Gaussian()]).fit(S)
    with refused(r"rff map of kernel 0, Laplacian"):
        FeatureBank([Laplacian()], method="rff").fit(S.toarray()).transform(S)


def test_kernel_banks_refuse_dask_arrays_of_sparse_chunks() -> None:
    """(A Dask fit on a FeatureBank takes them: tests/python/test_dask_sparse.py.)"""
    da = pytest.importorskip("dask.array")
    X, _ = problem(n=20)
    D = da.from_array(sp.csr_matrix(X), chunks=(10, X.shape[1]), asarray=False)
    with refused("Dask"):
        KernelBank([Linear()]).fit_transform(D)
