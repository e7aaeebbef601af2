"""``psd="clip"`` and ``kernels.shift_to_psd``: the explicit repair of slightly indefinite
kernels (issue 18, docs/guide.md §6, docs/mathematics.md §1.8). The references are numpy's
eigenvalues of the stacks and cvxpy + Clarabel on the shifted kernels ``K_m + s_m I``, built
here from the reported shifts."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import WITNESS_CASES, expected_failures, indefinite_stack
from reference import cvxpy_mkl, primal_objective
from sklearn.utils.estimator_checks import parametrize_with_checks

import multikernel as mk
from multikernel.exceptions import InvalidParameterError, KernelNotPSDError, KernelNotPSDWarning
from multikernel.kernels import Gaussian, Linear, shift_to_psd

EPS = float(np.finfo(np.float64).eps)


def rounded_stack(n: int = 60, seed: int = 0) -> tuple[NDArray[np.float32], NDArray[np.float64]]:
    """The PSD stack of ``indefinite_stack`` (a linear and a Gaussian kernel, noisy targets)
    rounded to float32, which leaves both kernels indefinite (λ_min ≈ −4e-7 and −6e-8)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    t = np.sin(2 * X[:, 0]) + 0.5 * rng.standard_normal(n)
    specs = [Linear(), Gaussian(sigma=3.0)]
    return mk.kernels.gram(X, specs, normalize="mean_diag", dtype=np.float32), t


def psd_stack(n: int = 60) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Float64 kernels that are PSD up to rounding: a rank-3 linear kernel, a quadratic one,
    and Gaussians from well-conditioned to numerically rank one (eigenvalues at −1e-14)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 3))
    specs = [Linear(), mk.kernels.Polynomial(degree=2)] + [
        Gaussian(sigma=s) for s in (0.3, 3.0, 1000.0)
    ]
    return mk.kernels.gram(X, specs, normalize="mean_diag"), X[:, 0] + 0.3 * X[:, 1] ** 2


def lam_min(K: NDArray[Any]) -> float:
    return float(np.linalg.eigvalsh(K.astype(np.float64))[0])


def shifted(G: NDArray[Any]) -> NDArray[np.float64]:
    """The stack ``psd="clip"`` fits, widened to float64: ``K_m + s_m I`` as stored, its
    float32 diagonal entries rounded up (checked against ``G`` and the shifts above)."""
    return shift_to_psd(G)[0].astype(np.float64)


# --- shift_to_psd ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make", [lambda: indefinite_stack(0)[0], lambda: rounded_stack(60)[0],
             lambda: rounded_stack(150, 1)[0]],
    ids=["K-0.01vv^T", "float32 n=60", "float32 n=150"],
)  # fmt: skip
def test_the_shift_is_a_small_certified_bound(make: Any) -> None:
    G = make()
    R, s = shift_to_psd(G)
    assert R.dtype == G.dtype and R.shape == G.shape and not np.shares_memory(R, G)
    for m in range(G.shape[0]):
        K, Km = G[m].astype(np.float64), R[m].astype(np.float64)
        n, top = K.shape[0], float(K.diagonal().max())
        tau = (n + 2) * EPS * top
        lam = lam_min(K)
        lam_max = float(np.linalg.eigvalsh(K)[-1])
        # Only the diagonal moves, by s_m: float32 entries rounded up (by one unit at most),
        # float64 ones to nearest.
        off = ~np.eye(n, dtype=bool)
        np.testing.assert_array_equal(R[m][off], G[m][off])
        up = Km.diagonal() - K.diagonal()
        if G.dtype == np.float32:
            assert np.all(s[m] <= up) and np.all(up <= s[m] + np.spacing(G[m].diagonal()))
        else:
            np.testing.assert_allclose(up, s[m], rtol=0, atol=2 * EPS * top)
        # PSD as stored, to numpy's own rounding (eigvalsh: a few ε·λ_max).
        assert lam_min(R[m]) >= -8 * EPS * lam_max
        if s[m] > 0:
            # A bound on −λ_min, at most twice it plus rounding: the minimal repair.
            assert -lam - 8 * EPS * lam_max <= s[m] <= 2 * max(-lam, 0.0) + 16 * tau
        else:
            assert lam >= -4 * tau  # indefinite at rounding level at most: left alone
    # The indefinite kernels of these stacks are all repaired.
    assert all(s[m] > 0 for m in range(G.shape[0]) if lam_min(G[m]) < -1e-9)


def test_psd_kernels_get_no_shift_and_no_copy() -> None:
    G, _ = psd_stack()
    for stack in (G, G.astype(np.float32)[2:3]):  # the well-conditioned Gaussian survives float32
        R, s = shift_to_psd(stack)
        assert R is stack
        np.testing.assert_array_equal(s, np.zeros(stack.shape[0]))


def test_a_kernel_that_cannot_be_psd_is_still_an_error() -> None:
    G, t = indefinite_stack(0)
    G[1, 5, 5] = -0.1
    with pytest.raises(KernelNotPSDError) as err:
        shift_to_psd(G)
    assert err.value.kernel == 1 and err.value.entry == (5, 5)
    with pytest.raises(KernelNotPSDError):
        mk.MKLRegressor(kernels="precomputed", psd="clip").fit(G, t)


@pytest.mark.parametrize("max_shift", [1e-2, 1e-3])
def test_an_indefinite_kernel_beyond_max_shift_is_refused(max_shift: float) -> None:
    """The rule: a kernel that needs a shift above ``max_shift · max_i K_ii`` is refused.
    Kernel 1 is given λ_min = −f·max_shift·max K_ii exactly (along its own eigenvector):
    f = 1/2 is repaired, f = 2 is not."""
    G, t = indefinite_stack(0)
    K = G[1]
    lam, U = np.linalg.eigh(K)
    v = U[:, 0]
    top = float(K.diagonal().max())
    for f, ok in ((0.5, True), (2.0, False)):
        H = G.copy()
        H[1] = K - (lam[0] + f * max_shift * top) * np.outer(v, v)
        H[1] = (H[1] + H[1].T) / 2
        target = -f * max_shift * top
        assert lam_min(H[1]) == pytest.approx(target, rel=1e-9)
        if ok:
            _, s = shift_to_psd(H, max_shift=max_shift)
            assert -target <= s[1] <= -target + 1e-12
        else:
            with pytest.raises(KernelNotPSDError, match="kernel 1 has smallest eigenvalue") as e:
                shift_to_psd(H, max_shift=max_shift)
            assert e.value.kernel == 1
    with pytest.raises(InvalidParameterError, match="max_shift"):
        shift_to_psd(G, max_shift=-1.0)


# --- the estimators -------------------------------------------------------------------------

#: The witness cases of test_witness.py (float64, λ_min ≈ −0.008), and a float32 one: the
#: rounded stack at C = 1e5, where ℓp at p = 1 finds a witness and SpicyMKL's Cholesky fails.
#: ``l1`` there runs SpicyMKL by name (0.1 s); under ``auto`` the wrapper's SVR solves at
#: C = 1e5 take seconds each (as scikit-learn's SVR on the same kernels, millions of SMO
#: steps) before SpicyMKL continues: that case is in the slow suite.
CLIP_CASES = [("K-0.01vv^T", pen, st, C) for pen, st, C in WITNESS_CASES] + [
    ("float32", "lp", {"p": 1.0}, 1e5),
    ("float32", "l1", {"solver": "spicy"}, 1e5),
    pytest.param("float32", "l1", {}, 1e5, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("stack", "penalty", "settings", "C"), CLIP_CASES)
def test_clip_gives_the_certified_optimum_of_the_shifted_kernels(
    stack: str, penalty: str, settings: dict[str, Any], C: float
) -> None:
    G, t = indefinite_stack(0) if stack == "K-0.01vv^T" else rounded_stack()
    ref_settings = {k: v for k, v in settings.items() if k not in ("max_iter", "solver")}
    tol = 1e-4
    est = mk.MKLRegressor(
        kernels="precomputed", penalty=penalty, loss="epsilon_insensitive", C=C, tol=tol,
        psd="clip", **{k: v for k, v in settings.items() if k != "max_iter"},
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelNotPSDWarning)
        est.fit(G, t)
    np.testing.assert_array_equal(est.psd_shifts_, shift_to_psd(G)[1])
    assert np.all(est.psd_shifts_[[lam_min(K) < -1e-9 for K in G]] > 0)
    assert est.converged_ is True and 0.0 <= est.duality_gap_ <= tol
    # Every iteration counted once (SpicyMKL retries steps here: its count is the certified
    # ones, and the solvers' counts follow it).
    assert sum(est.solver_iterations_) == est.n_iter_ >= len(est.history_)
    # The problem solved is that of K_m + s_m I as stored: cvxpy's optimum there, the fit's primal
    # recomputed there from its coefficients, and its dual below that optimum.
    H = shifted(G)
    opt = cvxpy_mkl(H, t, C=C, loss="epsilon_insensitive", penalty=penalty, **ref_settings)
    P = primal_objective(
        H, est.dual_coef_, est.intercept_, t, C=C, loss="epsilon_insensitive",
        penalty=penalty, **ref_settings,
    )  # fmt: skip
    assert P == pytest.approx(est.primal_objective_, rel=1e-6)
    assert opt.objective * (1 - 1e-7) <= P <= opt.objective + tol * abs(P)
    assert est.dual_objective_ <= opt.objective * (1 + 1e-7)


def test_the_float32_case_has_a_witness_without_clip() -> None:
    """The float32 cases above are real ones: unrepaired, ℓp and SpicyMKL each find a witness
    (the warning points to psd="clip") and certify nothing. (SpicyMKL used to fail here with
    a NumericalError: a kernel active by one rounding of its norm and not the other.)"""
    G, t = rounded_stack()
    # SpicyMKL by name: auto's wrapper finds the same witness at its first iterate, but its SMO
    # solves at C = 1e5 on these rounded kernels run to their step cap.
    for kw in ({"penalty": "lp", "p": 1.0}, {"penalty": "l1", "solver": "spicy"}):
        est = mk.MKLRegressor(
            kernels="precomputed", loss="epsilon_insensitive", C=1e5, tol=1e-4, **kw
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(G, t)
        advice = [str(w.message) for w in caught if w.category is KernelNotPSDWarning]
        assert len(advice) == 1 and "psd='clip'" in advice[0], kw
        assert est.converged_ is False and est.dual_objective_ == -np.inf
        np.testing.assert_array_equal(est.psd_shifts_, np.zeros(2))


def test_one_class_clip_is_the_optimum_of_the_shifted_kernels() -> None:
    G, _ = rounded_stack()
    nu, n = 0.3, G.shape[1]
    det = mk.MKLOneClass(kernels="precomputed", nu=nu, p=1.5, tol=1e-7, psd="clip").fit(G)
    assert np.all(det.psd_shifts_ > 0)
    opt = cvxpy_mkl(
        shifted(G), np.ones(n), C=1.0, loss="one_class", penalty="lp",
        p=1.5, nu=nu,
    )  # fmt: skip
    assert det.converged_ is True
    P, D = det.primal_objective_, det.dual_objective_
    assert D <= opt.objective + 1e-7 * abs(opt.objective) <= P + 2e-7 * abs(opt.objective)
    assert abs(P - opt.objective) <= (det.duality_gap_ + 1e-7) * abs(P)


@pytest.mark.parametrize("make", [
    lambda **kw: mk.MKLRegressor(C=10.0, **kw),
    lambda **kw: mk.MKLClassifier(C=10.0, multi_class="ovo", **kw),
    lambda **kw: mk.MKLOneClass(nu=0.3, **kw),
], ids=["regressor", "classifier", "one-class"])  # fmt: skip
def test_psd_stacks_fit_bit_identically(make: Any) -> None:
    """PSD kernels (precomputed, or computed from specifications) get no shift: the fit is
    the same, bit for bit, as without the repair."""
    G, y = psd_stack()
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))  # three classes for ovo
    X = np.random.default_rng(1).standard_normal((60, 3))
    specs = [Linear(), Gaussian(sigma=1000.0), Gaussian(sigma=3.0)]
    for kernels, data in (("precomputed", G), (specs, X)):
        fits = [make(kernels=kernels, psd=psd).fit(data, labels) for psd in ("check", "clip")]
        np.testing.assert_array_equal(fits[1].psd_shifts_, np.zeros(fits[1].n_kernels_))
        np.testing.assert_array_equal(fits[0].dual_coef_, fits[1].dual_coef_)
        np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)


@pytest.mark.parametrize("bad", ["Clip", "none", None, 1])
def test_an_invalid_psd_is_refused(bad: Any) -> None:
    G, t = indefinite_stack(0)
    fits = [
        lambda: mk.MKLRegressor(kernels="precomputed", psd=bad).fit(G, t),
        lambda: mk.MKLClassifier(kernels="precomputed", psd=bad).fit(G, t > 0),
        lambda: mk.MKLOneClass(kernels="precomputed", psd=bad).fit(G),
        lambda: mk.mkl_path(G, t, kernels="precomputed", psd=bad),
        lambda: mk.MKLRegressorCV(kernels="precomputed", psd=bad).fit(G, t),
    ]
    for fit in fits:
        with pytest.raises(InvalidParameterError, match="psd must be 'check' or 'clip'") as e:
            fit()
        assert e.value.parameter == "psd"


def test_the_path_and_cv_of_the_shifted_kernels() -> None:
    """mkl_path with clip is the path of shift_to_psd's stack; the CV estimator repairs each
    fold's training stack (a principal submatrix: its shift is at most the whole one's) and
    the refit's, whose shifts it reports."""
    G, t = rounded_stack()
    H, s = shift_to_psd(G)
    path = mk.mkl_path(G, t, kernels="precomputed", psd="clip")
    ref = mk.mkl_path(H, t, kernels="precomputed")
    np.testing.assert_array_equal(path.psd_shifts, s)
    np.testing.assert_array_equal(ref.psd_shifts, np.zeros(2))
    np.testing.assert_array_equal(path.Cs, ref.Cs)
    np.testing.assert_array_equal(path.alphas, ref.alphas)
    cv = mk.MKLRegressorCV(kernels="precomputed", Cs=4, cv=3, psd="clip").fit(G, t)
    np.testing.assert_array_equal(cv.psd_shifts_, s)
    for (fold,) in cv.paths_:
        assert np.all(fold.psd_shifts >= 0)
        assert np.all(fold.psd_shifts <= s + 16 * (G.shape[1] + 2) * EPS)


@parametrize_with_checks(  # type: ignore[untyped-decorator]
    [mk.MKLRegressor(psd="clip")], expected_failed_checks=expected_failures
)
def test_sklearn_estimator_checks_with_clip(estimator: Any, check: Any) -> None:
    check(estimator)
