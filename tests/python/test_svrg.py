"""The ``svrg`` solver (ℓp-MKL on explicit features, Alioscha-Perez et al.): on linear kernels
``K_k = Φ_kΦ_kᵀ`` its objective meets the analytic solver's and cvxpy + Clarabel's; the same
``random_state`` gives the same fit; its feature-space weights predict; bad use is refused."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import POLL_CPU_SECONDS, cpu_seconds, cpu_seconds_after_interrupt
from reference import cvxpy_mkl
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, Linear

FloatArray = NDArray[np.float64]


@cache
def cancer() -> tuple[FloatArray, FloatArray]:
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), np.where(y == 1, 1.0, -1.0)


def linear_bank(n_features: int, groups: int) -> FeatureBank:
    cols = np.array_split(np.arange(n_features), groups)
    return FeatureBank([Linear(features=c.tolist()) for c in cols], normalize="none")


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
@pytest.mark.parametrize("p", [1.5, 2.0])
def test_classifier_meets_the_analytic_solver(loss: str, p: float) -> None:
    X, y = cancer()
    bank = linear_bank(X.shape[1], 5)
    common = {"kernels": bank, "loss": loss, "p": p}
    svrg = mk.MKLClassifier(solver="svrg", tol=1e-5, max_iter=1000, random_state=0, **common)
    svrg.fit(X, y)
    ref = mk.MKLClassifier(solver="analytic", tol=1e-8, max_iter=5000, **common).fit(X, y)
    assert svrg.duality_gap_ <= 1e-5, svrg.duality_gap_
    assert svrg.primal_objective_ == pytest.approx(ref.primal_objective_, rel=1e-4)
    assert svrg.dual_objective_ <= ref.primal_objective_ * (1 + 1e-9)
    # The kernel weights as every lp solver gives them: θ of unit p-norm.
    assert np.linalg.norm(svrg.kernel_weights_, ord=p) == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(svrg.kernel_weights_, ref.kernel_weights_, rtol=2e-2, atol=1e-3)
    # coef_ holds the feature-space weights: f(x) = Σ_k φ_k(x)ᵀ w_k + b.
    F = bank.fit_transform(X)
    f = sum(Fk @ wk for Fk, wk in zip(F, svrg.coef_, strict=True)) + svrg.intercept_
    np.testing.assert_allclose(svrg.decision_function(X), f, rtol=1e-10, atol=1e-10)


def test_regressor_meets_cvxpy() -> None:
    X, t = load_diabetes(return_X_y=True)
    X, t = (X[:150] - X[:150].mean(0)) / X[:150].std(0), (t[:150] - t[:150].mean()) / t[:150].std()
    bank = linear_bank(X.shape[1], 4)
    reg = mk.MKLRegressor(kernels=bank, loss="squared", solver="svrg", p=1.5, C=0.5, tol=1e-6,
                          max_iter=1000, random_state=1).fit(X, t)  # fmt: skip
    G = np.stack([F @ F.T for F in bank.fit_transform(X)])
    ref = cvxpy_mkl(G, t, C=0.5, loss="squared", penalty="lp", p=1.5)
    assert reg.primal_objective_ == pytest.approx(ref.objective, rel=1e-4)


def test_random_state_fixes_the_fit() -> None:
    X, y = cancer()
    bank = FeatureBank([Gaussian(sigma=4.0), Linear()], method="rff", random_state=0)

    def fit(seed: int) -> mk.MKLClassifier:
        return mk.MKLClassifier(kernels=bank, loss="logistic", solver="svrg", max_iter=3,
                                tol=1e-12, random_state=seed).fit(X[:200], y[:200])  # fmt: skip

    with pytest.warns(Warning):
        a, b, c = fit(3), fit(3), fit(4)
    np.testing.assert_array_equal(a.coef_[0], b.coef_[0])
    assert not np.array_equal(a.coef_[0], c.coef_[0])


def test_bad_use_is_refused() -> None:
    X, y = cancer()
    with pytest.raises(InvalidParameterError, match="FeatureBank"):
        mk.MKLClassifier(solver="svrg", loss="logistic").fit(X[:50], y[:50])
    bank = linear_bank(X.shape[1], 2)
    with pytest.raises(InvalidParameterError, match="loss"):
        mk.MKLClassifier(kernels=bank, solver="svrg", loss="hinge").fit(X[:50], y[:50])
    with pytest.raises(InvalidParameterError, match="random_state"):
        mk.MKLClassifier(kernels=bank, solver="svrg", loss="logistic", random_state=1.5).fit(
            X[:50], y[:50]
        )
    # A dense kernel stack is not a list of feature blocks (its (n, n) slices are no features).
    G = mk.kernels.gram(X[:50], [Linear(), Gaussian(sigma=4.0)])
    pre = mk.MKLClassifier(kernels="precomputed", solver="svrg", loss="logistic")
    for stack in (G, G.astype(np.float32)):
        with pytest.raises(ValueError, match="list of feature blocks"):
            pre.fit(stack, y[:50])
    with pytest.raises(ValueError, match="explicit features"):
        mk._core.fit(mk._core.Settings("svrg", {"loss": "logistic"}), G, y[:50])


def test_any_memory_order_gives_the_same_fit() -> None:
    X, y = cancer()
    F = [np.asfortranarray(X[:, :10]), X[:, 10:20], X[:, ::3][:, :5]]
    s = {"loss": "logistic", "tol": 1e-6, "max_iter": 500}
    a = mk._core.fit(mk._core.Settings("svrg", s), F, y)  # type: ignore[arg-type]
    b = mk._core.fit(mk._core.Settings("svrg", s), [np.ascontiguousarray(f) for f in F], y)  # type: ignore[arg-type]
    np.testing.assert_array_equal(a.feature_weights, b.feature_weights)
    assert a.primal == b.primal


def test_ctrl_c_stops_an_epoch_quickly() -> None:
    rng = np.random.default_rng(0)
    n = 400_000
    F = [rng.normal(size=(n, 25)) for _ in range(4)]
    y = np.sign(F[0][:, 0] + 0.5 * rng.normal(size=n))
    settings = {"loss": "logistic", "tol": 1e-12, "max_iter": 10_000}
    after = cpu_seconds_after_interrupt(
        0.5, lambda: mk._core.fit(mk._core.Settings("svrg", settings), F, y)
    )
    # SVRG polls inside an epoch: the work after the Ctrl-C is a fraction of one epoch's
    # (a fit of one epoch, set-up included), not the rest of the epoch.
    one = cpu_seconds(
        lambda: mk._core.fit(mk._core.Settings("svrg", {**settings, "max_iter": 1}), F, y)
    )
    assert after < 0.5 * one + POLL_CPU_SECONDS, (after, one)


def test_precomputed_feature_blocks_in_place_or_copied_give_the_same_fit(tmp_path: Any) -> None:
    """The blocks of a FeatureBank (column ranges of one row-major array, read in place), the
    same blocks as separate arrays (copied into rows) and a memmapped feature file give the
    same bits, and the fit of the estimator on the bank itself; test blocks predict."""
    X, y = cancer()
    specs = [Gaussian(sigma=3.0), Gaussian(sigma=6.0), Linear(features=[0, 1])]
    bank = FeatureBank(specs, method="rff", n_components=30, random_state=1, dtype=np.float32)
    kw: dict[str, Any] = {"solver": "svrg", "loss": "logistic", "random_state": 3, "tol": 1e-4}
    ref = mk.MKLClassifier(kernels=bank, **kw).fit(X[:400], y[:400])
    blocks = bank.fit(X[:400]).transform(X[:400])
    assert all(F.base is blocks[0].base for F in blocks)
    width = int(bank.n_components_.sum())
    out = np.lib.format.open_memmap(
        tmp_path / "F.npy", mode="w+", dtype=np.float32, shape=(400, width)
    )
    bank.transform(X[:400], out=out)
    out.flush()
    mapped = np.load(tmp_path / "F.npy", mmap_mode="r")
    ends = np.cumsum(bank.n_components_)[:-1]
    test = bank.transform(X[400:])
    fits = []
    for given in (blocks, [F.copy() for F in blocks], np.split(mapped, ends, axis=1)):
        clf = mk.MKLClassifier(kernels="precomputed", **kw).fit(given, y[:400])
        fits.append((clf.primal_objective_, clf.duality_gap_, clf.decision_function(test)))
    for primal, gap, f in fits[1:]:
        assert (primal, gap) == fits[0][:2]
        np.testing.assert_array_equal(f, fits[0][2])
    # fit_transform stores scaled float32 values, transform scales and stores: same to 1e-6.
    assert fits[0][0] == pytest.approx(ref.primal_objective_, rel=1e-5)
    np.testing.assert_allclose(fits[0][2], ref.decision_function(X[400:]), atol=1e-4)
    with pytest.raises(ValueError, match="widths"):
        clf.decision_function(test[:2])
    with pytest.raises(ValueError, match="same rows"):
        clf.fit([blocks[0], blocks[1][:10]], y[:400])


def test_large_c_warns_that_svrg_is_first_order() -> None:
    """At C = 1000 (n = 200) SVRG's conditioning, ~C·n, is out of its 200 epochs' reach while
    the analytic solver certifies the same problem in a few iterations: the warning says the
    limit and points there."""
    X, y = cancer()
    bank = linear_bank(X.shape[1], 3)
    common = {"kernels": bank, "loss": "logistic", "C": 1000.0, "tol": 1e-4}
    with pytest.warns(ConvergenceWarning, match="first-order.*solver='analytic'"):
        svrg = mk.MKLClassifier(solver="svrg", random_state=0, **common).fit(X[:200], y[:200])
    ref = mk.MKLClassifier(solver="analytic", **common).fit(X[:200], y[:200])
    assert svrg.n_iter_ == svrg.max_iter and svrg.duality_gap_ > 1e-4
    assert ref.duality_gap_ <= 1e-4
    assert svrg.primal_objective_ >= ref.dual_objective_  # weak duality across solvers
