"""The Dask fit on Dask arrays of ``scipy.sparse`` chunks (issue 67; multikernel._dask_fit,
docs/dask.md): a ``FeatureBank`` of ``Linear`` kernels maps each chunk to one CSR matrix of
its blocks on the workers, ``prox_newton``'s passes read its stored entries only, and the fit
equals the in-memory fit on the whole sparse matrix and the in-memory fit on its dense copy
to 1e-8 (objective, weights, intercept, kernel weights, predictions), under uneven chunkings,
whatever the sparse format of the chunks. What cannot read sparse chunks (random Fourier and
Nyström maps) refuses them by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.typing import NDArray

import multikernel as mk
from multikernel import _dask_fit
from multikernel._platt import platt_fit
from multikernel.exceptions import InvalidInputError, NonFiniteError
from multikernel.kernels import FeatureBank, Gaussian, KernelBank, Linear

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

N, D, GROUPS = 240, 120, 6


@pytest.fixture(scope="module")
def client(inprocess_client: Any) -> Any:
    return inprocess_client


def data(
    seed: int = 0, d: int = D, classes: int = 2
) -> tuple[Any, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``N`` sparse points of ``d`` columns at density 0.08 (CSR) with a planted signal on
    the first third of the columns: the points, a regression target, ``classes`` labels
    (-1/+1 for two) and sample weights."""
    rng = np.random.default_rng(seed)
    X = sp.random(N, d, density=0.08, format="csr", random_state=seed + 1)
    w = np.zeros(d)
    w[: d // 3] = rng.normal(size=d // 3) * 3.0
    f = X @ w + 0.3 * rng.normal(size=N)
    if classes == 2:
        labels = np.where(f > 0, 1.0, -1.0)
    else:
        labels = np.searchsorted(np.quantile(f, [1 / 3, 2 / 3]), f).astype(np.float64)
    return X, f, labels, rng.uniform(0.5, 2.0, N)


def bank(d: int = D, **kw: Any) -> FeatureBank:
    """One ``Linear`` kernel per group of ``d / GROUPS`` consecutive columns."""
    width = d // GROUPS
    specs = [Linear(features=list(range(g * width, (g + 1) * width))) for g in range(GROUPS)]
    return FeatureBank(specs, **kw)


def estimator(loss: str, **kw: Any) -> Any:
    make = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    settings: dict[str, Any] = {
        "solver": "prox_newton", "loss": loss, "C": 5.0, "tol": 1e-10, "max_iter": 500, **kw,
    }  # fmt: skip
    return make(**settings)


def chunked(X: Any, rows: Any, fmt: str) -> Any:
    """``X`` as a Dask array of row chunks ``rows``, each a sparse matrix (or array) of the
    format ``fmt``; ``"map_blocks"``: dense chunks made CSR by ``map_blocks``."""
    if fmt == "map_blocks":
        return da.from_array(X.toarray(), chunks=(rows, -1)).map_blocks(sp.csr_matrix)
    S = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "csr_array": sp.csr_array}[fmt](X)
    return da.from_array(S, chunks=(rows, -1), asarray=False)


def scores(est: Any, X: Any) -> NDArray[np.float64]:
    out: NDArray[np.float64] = getattr(est, "decision_function", est.predict)(X)
    return np.asarray(out)


def assert_same_fit(got: Any, ref: Any, X: Any, weights_tol: float = 1e-8) -> None:
    """The two fits to 1e-8: objective, coefficients, intercept, kernel weights (to
    ``weights_tol``) and their scores on the sparse points and on their dense copy."""
    assert got.primal_objective_ == pytest.approx(ref.primal_objective_, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(np.concatenate(got.coef_), np.concatenate(ref.coef_), atol=1e-8)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(
        got.kernel_weights_, ref.kernel_weights_, rtol=weights_tol, atol=weights_tol
    )
    f_ref = scores(ref, X.toarray())
    for Xt in (X, X.toarray()):
        np.testing.assert_allclose(scores(got, Xt), f_ref, rtol=1e-8, atol=1e-8)


# (loss, penalty, chunk rows, chunk format, bank settings): every penalty, the three kinds of
# loss, uneven chunkings, each sparse format, float32 features and each normalisation. (The
# group penalty to a looser tol, its certificate's searches costing many passes: the three
# fits take the same steps, so they agree to rounding all the same. Its float32 features
# without a scaling: a float32 bank's scaled sparse and dense blocks differ by float32
# rounding, FeatureBank.fit_transform, and so do their in-memory fits, by 2e-7.)
CASES = [
    ("logistic", {"penalty": "l1"}, (70, 130, 40), "csr", {}),
    ("squared", {"penalty": "elasticnet", "l1_ratio": 0.6}, 90, "csr_array", {"normalize": "none"}),
    ("squared_hinge", {"penalty": "lp", "p": 1.5}, (40, 200), "csc", {"normalize": "trace"}),
    (
        "logistic",
        {"penalty": "group", "groups": [0, 1, 0, 1, 0, 1], "tol": 1e-4},
        (150, 90),
        "map_blocks",
        {"dtype": np.float32, "normalize": "none"},
    ),
]


@pytest.mark.parametrize(("loss", "pen", "rows", "fmt", "bank_kw"), CASES)
def test_sparse_chunks_fit_as_in_memory_and_as_the_dense_copy(
    client: Any, loss: str, pen: dict[str, Any], rows: Any, fmt: str, bank_kw: dict[str, Any]
) -> None:
    X, f, labels, w = data()
    y = f if loss == "squared" else labels
    Xd = chunked(X, rows, fmt)
    wd = da.from_array(w, chunks=(Xd.chunks[0],))
    got = estimator(loss, kernels=bank(**bank_kw), **pen).fit(Xd, y, sample_weight=wd)
    assert got.dual_coef_.shape == (GROUPS, 0)  # the fit's n columns stayed on the cluster
    assert got.duality_gap_ <= pen.get("tol", 1e-10) and got.converged_
    in_memory = estimator(loss, kernels=bank(**bank_kw), **pen).fit(X, y, sample_weight=w)
    dense = estimator(loss, kernels=bank(**bank_kw), **pen).fit(X.toarray(), y, sample_weight=w)
    # The group penalty's kernel weights read ‖F_mᵀρ̃‖, sums over the rows that cancel, which
    # the chunks add in another order (docs/dask.md, "Same result").
    weights_tol = 1e-7 if pen["penalty"] == "group" else 1e-8
    assert_same_fit(got, in_memory, X, weights_tol)
    assert_same_fit(got, dense, X, weights_tol)
    # Predictions on the Dask array: a Dask array, block by block.
    f_dask = getattr(got, "decision_function", got.predict)(Xd)
    assert isinstance(f_dask, da.Array)
    np.testing.assert_allclose(f_dask.compute(), scores(in_memory, X), rtol=1e-8, atol=1e-8)


def test_wide_sparse_blocks_are_fitted_by_prox_newton_under_auto(client: Any) -> None:
    """``solver="auto"`` picks ``prox_newton`` on sparse blocks whatever their width (as in
    memory: docs/guide.md, "Sparse data"), here 600 columns for 240 points, where dense blocks
    of that width would go to a kernels' space solver that a Dask fit does not run."""
    X, _, y, _ = data(seed=3, d=600)
    kw = {"kernels": bank(600, normalize="none"), "penalty": "l1", "solver": "auto"}
    got = estimator("logistic", **kw).fit(chunked(X, (100, 100, 40), "csr"), y)
    ref = estimator("logistic", **kw).fit(X, y)
    assert got.solvers_ == ref.solvers_ == ("prox_newton",)
    assert_same_fit(got, ref, X)
    with pytest.raises(ValueError, match="set solver='prox_newton'"):
        estimator("logistic", **kw).fit(da.from_array(X.toarray(), chunks=(100, -1)), y)


def test_wide_working_sets_take_hessian_products_as_in_memory(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A working set of 1024 columns or more on sparse rows takes its Newton steps by Hessian
    products, one pass each (docs/guide.md, "Sparse data"), on a cluster as in memory: no
    chunk returns a formed Hessian (``(R_W + 1)²`` numbers; the largest part is the
    gradient's ``2R + 1``), and the fit takes the in-memory sparse fit's steps. The dense
    copy's fit forms its Hessian (dense rows keep it up to 8192 columns): another path to
    the same optimum, equal to the tolerance's accuracy."""
    largest: list[int] = []
    reduce = _dask_fit.ChunkRows.reduce

    def recording(self: Any, code: list[float]) -> list[list[float]]:
        parts = reduce(self, code)
        largest.append(max(len(p) for p in parts))
        return parts

    monkeypatch.setattr(_dask_fit.ChunkRows, "reduce", recording)
    d = 1200
    rng = np.random.default_rng(7)
    X = sp.random(N, d, density=0.03, format="csr", random_state=8)
    y = np.where(X @ rng.normal(size=d) + 0.1 * rng.normal(size=N) > 0, 1.0, -1.0)
    kw = {"kernels": bank(d, normalize="none"), "penalty": "l1", "tol": 1e-6, "C": 0.3}
    got = estimator("logistic", **kw).fit(chunked(X, (100, 140), "csr"), y)
    assert np.count_nonzero(np.concatenate(got.coef_)) >= 1024
    assert max(largest) == 2 * d + 1
    ref = estimator("logistic", **kw).fit(X, y)
    assert got.n_iter_ == ref.n_iter_
    assert_same_fit(got, ref, X)
    dense = estimator("logistic", **kw).fit(X.toarray(), y)
    assert got.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(np.concatenate(got.coef_), np.concatenate(dense.coef_), atol=1e-5)


def test_multiclass_on_sparse_chunks_equals_the_in_memory_fit(client: Any) -> None:
    """One-vs-one takes each pair's rows of every sparse chunk on the workers."""
    X, _, y, w = data(seed=5, classes=3)
    kw = {"kernels": bank(), "penalty": "l1", "multi_class": "ovo", "tol": 1e-6, "C": 1.0}
    Xd = chunked(X, (100, 60, 80), "csr")
    got = estimator("logistic", **kw).fit(Xd, y, sample_weight=da.from_array(w, chunks=40))
    ref = estimator("logistic", **kw).fit(X, y, sample_weight=w)
    assert got.pairs_.shape == (3, 2)
    np.testing.assert_allclose(got.coef_, ref.coef_, atol=1e-8)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, atol=1e-8)
    np.testing.assert_allclose(got.kernel_weights_, ref.kernel_weights_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(got.decision_function(X), ref.decision_function(X), atol=1e-8)
    assert np.array_equal(got.predict(X), ref.predict(X))


def test_platt_on_sparse_chunks_equals_its_in_memory_folds(client: Any) -> None:
    """Platt's sigmoid from folds of whole chunks (docs/dask.md): with two chunks, each
    chunk's decision values come from the fit on the other one. The same in memory (fits on
    the sparse rows of each chunk, Platt's in-memory Newton method) gives the same ``(A, B)``;
    the bank (``normalize="none"``) maps any rows alike."""
    X, _, y, _ = data(seed=2)
    kw = {"kernels": bank(normalize="none"), "penalty": "l1", "tol": 1e-8, "C": 1.0}
    got = estimator("squared_hinge", probability=True, **kw).fit(chunked(X, (130, 110), "csr"), y)
    assert_same_fit(got, estimator("squared_hinge", **kw).fit(X, y), X)
    halves = [np.arange(130), np.arange(130, N)]
    f = np.empty(N)
    for test, train in (halves, halves[::-1]):
        fold = estimator("squared_hinge", **kw).fit(X[train], y[train])
        f[test] = fold.decision_function(X[test])
    A, B = platt_fit(f, y)
    np.testing.assert_allclose([got.probA_[0], got.probB_[0]], [A, B], rtol=1e-8, atol=1e-8)


def test_the_bank_is_fitted_on_a_sample_of_sparse_rows(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above ``FIT_SAMPLE`` rows the bank's normalisation comes from a uniform sample of the
    rows, seeded by the bank's ``random_state`` (docs/dask.md): the fit equals the in-memory
    fit on the dense features of a bank fitted on those rows."""
    monkeypatch.setattr(_dask_fit, "FIT_SAMPLE", 100)
    X, _, y, _ = data(seed=4)
    kw = {"penalty": "l1", "tol": 1e-8}
    got = estimator("logistic", kernels=bank(random_state=0), **kw).fit(chunked(X, 80, "csr"), y)
    rows = np.sort(np.random.default_rng(0).choice(N, 100, replace=False))
    sample = bank().fit(X[rows].toarray())
    np.testing.assert_allclose(got.kernel_bank_.scales_, sample.scales_, rtol=1e-12)
    assert not np.allclose(sample.scales_, bank().fit(X).scales_, rtol=1e-6)  # a sample's
    blocks = sample.transform(X.toarray())
    ref = estimator("logistic", kernels="precomputed", **kw).fit(blocks, y)
    assert got.primal_objective_ == pytest.approx(ref.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(np.concatenate(got.coef_), np.concatenate(ref.coef_), atol=1e-8)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, atol=1e-8)
    np.testing.assert_allclose(got.kernel_weights_, ref.kernel_weights_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(got.decision_function(X), ref.decision_function(blocks), atol=1e-8)


def test_what_cannot_read_sparse_chunks_refuses_them_by_name(client: Any) -> None:
    X, _, y, _ = data()
    Xd = chunked(X, 100, "csr")
    mixed = FeatureBank([Linear(features=[0, 1]), Gaussian(sigma=1.0)], method="rff")
    with pytest.raises(InvalidInputError, match=r"rff map of kernel 1, Gaussian.*does not take"):
        estimator("logistic", kernels=mixed, penalty="l1").fit(Xd, y)
    with pytest.raises(InvalidInputError, match="the Dask path of a kernel bank"):
        KernelBank([Linear()]).fit_transform(Xd)
    # A NaN stored in a later chunk is named by its row in the whole array.
    Xn = X.tolil()
    Xn[203, 7] = np.nan
    linear = bank(normalize="none")
    with pytest.raises(NonFiniteError, match=r"row 203, column 7") as err:
        estimator("logistic", kernels=linear, penalty="l1").fit(chunked(Xn.tocsr(), 100, "csr"), y)
    assert err.value.entry == (203, 7)
