"""Explicit feature maps (``FeatureBank``) and the estimators on low-rank kernels: the Gram
matrices of random Fourier and Nyström features converge to the exact kernels (measured errors
against :func:`multikernel.kernels.gram`), Nyström with pivoted landmarks is exact at the
kernel's rank, and a fit on a ``FeatureBank`` equals the fit on the dense stack ``Φ Φᵀ``."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import expected_failures
from sklearn.datasets import load_breast_cancer
from sklearn.utils.estimator_checks import parametrize_with_checks

import multikernel as mk
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, Kernel, Laplacian, Linear, Polynomial

FloatArray = NDArray[np.float64]


def data(n: int = 120) -> tuple[FloatArray, FloatArray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X[:n, :6], np.where(y[:n] == 1, 1.0, -1.0)


def gram_error(specs: list[Kernel], frobenius: bool = False, **kw: Any) -> list[float]:
    """Largest entry error (or relative Frobenius error) of every kernel's ``Φ Φᵀ`` against
    the exact Gram matrix."""
    X, _ = data()
    F = FeatureBank(specs, normalize="none", **kw).fit_transform(X)
    G = mk.kernels.gram(X, specs)
    if frobenius:
        return [
            float(np.linalg.norm(f @ f.T - g) / np.linalg.norm(g))
            for f, g in zip(F, G, strict=True)
        ]
    return [float(np.abs(f @ f.T - g).max()) for f, g in zip(F, G, strict=True)]


@pytest.mark.parametrize("spec", [Gaussian(sigma=2.0), Laplacian(sigma=4.0)])
def test_fourier_features_converge_like_monte_carlo(spec: Kernel) -> None:
    small = gram_error([spec], method="rff", n_components=100, random_state=1)[0]
    large = gram_error([spec], method="rff", n_components=10000, random_state=1)[0]
    # The error of a Monte-Carlo average falls like 1/sqrt(D): 10x for 100x the features.
    assert large < 0.25 * small
    assert large < 0.06


def test_nystroem_converges_and_is_exact_at_the_rank() -> None:
    errs = [gram_error([Gaussian(sigma=2.0)], n_components=r)[0] for r in (5, 20, 80)]
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 0.01 * errs[0]
    # A degree-2 polynomial kernel on 6 features has rank 28: pivoting stops there, exactly.
    X, _ = data()
    F = FeatureBank([Polynomial(degree=2)], n_components=100, normalize="none").fit_transform(X)
    assert F[0].shape[1] <= 29
    assert gram_error([Polynomial(degree=2)], n_components=100)[0] < 1e-6
    # Uniform landmarks converge too, in the mean: the largest error stays at outlying
    # points that no landmark is near (pivoting picks those first).
    uni = [
        gram_error(
            [Gaussian(sigma=2.0)], True, n_components=r, landmarks="uniform", random_state=3
        )[0]
        for r in (10, 100)
    ]
    assert uni[1] < 0.3 * uni[0]


def test_linear_features_are_the_columns_and_maps_are_seeded() -> None:
    X, _ = data()
    bank = FeatureBank([Linear(features=[1, 4])], normalize="none")
    np.testing.assert_array_equal(bank.fit_transform(X)[0], X[:, [1, 4]])
    a = FeatureBank([Gaussian(sigma=1.0)], method="rff", random_state=5).fit_transform(X)
    b = FeatureBank([Gaussian(sigma=1.0)], method="rff", random_state=5).fit_transform(X)
    c = FeatureBank([Gaussian(sigma=1.0)], method="rff", random_state=6).fit_transform(X)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.allclose(a[0], c[0])


def test_normalisation_and_transform() -> None:
    X, _ = data()
    bank = FeatureBank([Gaussian(sigma=1.0), Polynomial(degree=2)], n_components=30)
    F = bank.fit_transform(X)
    for f in F:
        assert np.mean(np.sum(f * f, axis=1)) == pytest.approx(1.0)
    # New points get the training scale: transform of the training points is fit_transform.
    for f, g in zip(F, bank.transform(X), strict=True):
        np.testing.assert_allclose(f, g, rtol=1e-12, atol=1e-12)


def test_fit_on_features_equals_the_fit_on_their_dense_stack() -> None:
    X, y = data(200)
    Xtr, ytr, Xte = X[:150], y[:150], X[150:]
    specs: list[Kernel] = [Gaussian(sigma=s, features=[j]) for j in range(3) for s in (1.0, 3.0)]
    specs.append(Linear())
    for penalty, extra in (("lp", {}), ("l1", {}), ("group", {"groups": [0, 0, 1, 1, 2, 2, 3]})):
        bank = FeatureBank(specs, n_components=40)
        low = mk.MKLClassifier(kernels=bank, penalty=penalty, tol=1e-6, **extra).fit(Xtr, ytr)
        fitted = FeatureBank(specs, n_components=40)
        F, F_te = fitted.fit_transform(Xtr), None
        F_te = fitted.transform(Xte)
        G = np.stack([f @ f.T for f in F])
        G_te = np.stack([a @ b.T for a, b in zip(F_te, F, strict=True)])
        dense = mk.MKLClassifier(kernels="precomputed", penalty=penalty, tol=1e-6, **extra)
        dense.fit(G, ytr)
        assert low.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-5)
        np.testing.assert_allclose(
            low.decision_function(Xte), dense.decision_function(G_te), rtol=1e-4, atol=1e-4
        )
        assert not hasattr(bank, "params_")  # the parameter was not fitted in place
        assert len(low.coef_) == len(specs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float32_points_fit_as_their_float64_values(dtype: Any) -> None:
    """A bank reads float32 points as they are (no float64 copy of ``X``): the features, the
    fit and the predictions are those of the same values given as float64."""
    X, y = data(150)
    X32 = X.astype(np.float32)
    specs: list[Kernel] = [Gaussian(sigma=2.0, features=[0, 1]), Linear(features=[2, 3])]

    def fit(points: Any) -> Any:
        bank = FeatureBank(specs, n_components=30, random_state=0, dtype=dtype)
        kw = {"kernels": bank, "penalty": "l1", "solver": "prox_newton", "tol": 1e-8}
        return mk.MKLClassifier(**kw).fit(points, y)  # type: ignore[arg-type]

    a, b = fit(X32), fit(X32.astype(np.float64))
    assert a.primal_objective_ == b.primal_objective_
    np.testing.assert_array_equal(np.concatenate(a.coef_), np.concatenate(b.coef_))
    np.testing.assert_array_equal(
        a.decision_function(X32), b.decision_function(X32.astype(np.float64))
    )


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("penalty", ["lp", "l1", "elasticnet"])
def test_smooth_losses_on_few_features_equal_the_dense_stack(loss: str, penalty: str) -> None:
    """Total rank 43 < n = 150: the Newton systems of the ℓp and SpicyMKL fits go through the
    capacitance matrix (docs/mathematics.md §2.12), the dense stack's through n × n Cholesky;
    both certify the same optimum."""
    X, y = data(150)
    specs: list[Kernel] = [Gaussian(sigma=s, features=[j]) for j in range(3) for s in (1.0, 3.0)]
    specs.append(Linear())
    F = FeatureBank(specs, n_components=6).fit_transform(X)
    assert sum(f.shape[1] for f in F) < len(y)
    G = np.stack([f @ f.T for f in F])
    est = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    fits = [
        est(kernels="precomputed", penalty=penalty, loss=loss, C=10.0, tol=1e-10).fit(K, y)
        for K in (list(F), G)
    ]
    low, dense = fits
    assert low.converged_ and dense.converged_
    assert low.primal_objective_ == pytest.approx(dense.primal_objective_, rel=1e-6)
    assert low.dual_objective_ <= dense.primal_objective_ * (1 + 1e-12)
    np.testing.assert_allclose(low.kernel_weights_, dense.kernel_weights_, atol=1e-4)


def test_pickled_model_predicts_the_same() -> None:
    X, y = data()
    clf = mk.MKLClassifier(kernels=FeatureBank([Gaussian(sigma=2.0)], method="rff")).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="nystroem"):
        FeatureBank([Polynomial(degree=2)], method="rff")
    with pytest.raises(InvalidParameterError, match="n_components"):
        FeatureBank([Gaussian(sigma=1.0)], n_components=0)
    with pytest.raises(InvalidParameterError, match="method"):
        FeatureBank([Gaussian(sigma=1.0)], method="exact")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="landmarks"):
        FeatureBank([Gaussian(sigma=1.0)], landmarks="kmeans")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="random_state"):
        FeatureBank([Gaussian(sigma=1.0)], random_state=-1)  # was an OverflowError in fit
    bank = FeatureBank([Gaussian(sigma=1.0, features=[7])])
    with pytest.raises(ValueError, match="not fitted"):
        bank.transform(np.zeros((2, 8)))
    with pytest.raises(ValueError, match="feature 7"):
        bank.fit(np.zeros((3, 2)))
    bank.fit(np.random.default_rng(0).normal(size=(10, 8)))
    with pytest.raises(ValueError, match="features"):
        bank.transform(np.zeros((2, 3)))


@parametrize_with_checks(  # type: ignore[untyped-decorator]
    [
        mk.MKLClassifier(kernels=FeatureBank([Gaussian(sigma=1.0)], n_components=10)),
        mk.MKLRegressor(kernels=FeatureBank([Linear(), Gaussian(sigma=1.0)], method="rff")),
    ],
    expected_failed_checks=expected_failures,
)
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


@pytest.mark.parametrize(
    "kw", [{"method": "rff"}, {"landmarks": "uniform"}, {"landmarks": "pivoted"}]
)
def test_batches_and_memmaps_give_the_same_features(
    kw: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row batches of any size, a memmapped X and a memmapped ``out`` give the bits of one
    in-memory batch; fit + transform equals fit_transform."""
    from multikernel import kernels

    X, _ = data(90)
    specs: list[Kernel] = [Gaussian(sigma=1.5), Laplacian(sigma=2.0, features=[1, 2]), Linear()]
    whole = FeatureBank(specs, n_components=12, **kw).fit_transform(X)
    Xm = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64, shape=X.shape)
    Xm[:] = X
    Xm.flush()
    Xr = np.load(tmp_path / "X.npy", mmap_mode="r")
    batches = kernels._row_batches
    monkeypatch.setattr(kernels, "_row_batches", lambda n, w: batches(n, w, budget=7 * w))
    bank = FeatureBank(specs, n_components=12, **kw)
    small = bank.fit_transform(Xr)
    out = np.lib.format.open_memmap(
        tmp_path / "F.npy", mode="w+", dtype=np.float64, shape=(90, int(bank.n_components_.sum()))
    )
    refit = FeatureBank(specs, n_components=12, **kw).fit(Xr)
    mapped = refit.transform(Xr, out=out)
    assert [F.shape[1] for F in whole] == list(bank.n_components_)
    for a, b, c in zip(whole, small, mapped, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
        assert np.shares_memory(c, out)


def test_transform_errors_name_the_row_and_the_out_array() -> None:
    X, _ = data(30)
    bank = FeatureBank([Gaussian(sigma=1.0)], n_components=5, method="rff").fit(X)
    bad = X.copy()
    bad[17, 2] = np.nan
    with pytest.raises(mk.exceptions.NonFiniteError, match="row 17") as err:
        bank.transform(bad)
    assert err.value.entry == (17, 2)
    with pytest.raises(ValueError, match="shape"):
        bank.transform(X, out=np.empty((30, 6)))
    with pytest.raises(ValueError, match="float64"):
        bank.transform(X, out=np.empty((30, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="C-ordered"):
        bank.transform(X, out=np.empty((5, 30)).T)
