"""Validation gaps found by fuzzing: each bad value raises the library's own exceptions
(naming the parameter), and the values that are repaired (clipped thread counts, remapped
group labels, NaN-free CV selection, scale-free alignments) give the expected results."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import multikernel as mk
from multikernel._typing import Penalty
from multikernel._validation import check_n_threads, check_random_state, group_ids
from multikernel.exceptions import InvalidInputError, InvalidParameterError, NonFiniteError
from multikernel.kernels import FeatureBank, Gaussian, Laplacian, Linear, Polynomial


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _data(n: int = 30, seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    X = np.random.default_rng(seed).normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(np.int64)
    return X, y


def _raises_parameter(parameter: str, fn: Any, *args: Any, **kwargs: Any) -> str:
    """Call ``fn`` and check that it raises InvalidParameterError naming ``parameter``; return
    the message."""
    with pytest.raises(InvalidParameterError) as err:
        fn(*args, **kwargs)
    assert err.value.parameter == parameter, (err.value.parameter, str(err.value))
    assert parameter in str(err.value)
    return str(err.value)


# --- 1. n_threads ---------------------------------------------------------------------------


def test_n_threads_above_the_cores_is_clipped() -> None:
    cores = _cores()
    assert check_n_threads(0) == 0
    assert check_n_threads(1) == 1
    assert check_n_threads(10**9) == cores
    assert check_n_threads(2**64) == cores
    assert check_n_threads(np.uint64(2**63)) == cores
    # scikit-learn's n_jobs: -1 = all cores (0 here), -k = all but k - 1.
    assert check_n_threads(-1) == 0
    assert check_n_threads(-cores) == (1 if cores > 1 else 0)
    if cores > 1:
        assert check_n_threads(np.int64(-2)) == cores - 1
    for bad in (-cores - 1, -(2**70), 1.5, True, "2", None):
        _raises_parameter("n_threads", check_n_threads, bad)

    X, y = _data()
    specs = [Linear(), Gaussian(sigma=1.0), Polynomial(degree=2)]
    G_all = mk.kernels.gram(X, specs, n_threads=0)
    G_huge = mk.kernels.gram(X, specs, n_threads=10**9)
    np.testing.assert_array_equal(G_huge, G_all)
    ref = mk.MKLClassifier(kernels=specs, n_threads=0).fit(X, y)
    for n_threads in (10**9, 2**64):
        clf = mk.MKLClassifier(kernels=specs, n_threads=n_threads).fit(X, y)
        np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)
        np.testing.assert_array_equal(clf.kernel_weights_, ref.kernel_weights_)
        assert clf.intercept_ == ref.intercept_
    np.testing.assert_array_equal(
        mk.kernels.validate_stack(G_all, n_threads=2**64), mk.kernels.validate_stack(G_all)
    )


def test_n_threads_minus_one_is_all_cores_everywhere() -> None:
    """``n_threads=-1`` (scikit-learn's "all cores") is accepted by the estimators, the path,
    the CV estimators and the banks, stays -1 in ``get_params`` (so ``clone`` keeps it), and
    gives the bits of a one-thread fit; a Dask task reads it as one thread, as 0."""
    from multikernel._dask import _task_threads

    X, y = _data()
    specs = [Linear(), Gaussian(sigma=1.0), Polynomial(degree=2)]
    one = mk.MKLClassifier(kernels=specs, n_threads=1).fit(X, y)
    every = mk.MKLClassifier(kernels=specs, n_threads=-1).fit(X, y)
    assert every.get_params()["n_threads"] == -1
    np.testing.assert_array_equal(every.dual_coef_, one.dual_coef_)
    np.testing.assert_array_equal(every.kernel_weights_, one.kernel_weights_)
    np.testing.assert_array_equal(
        mk.kernels.gram(X, specs, n_threads=-1), mk.kernels.gram(X, specs, n_threads=1)
    )
    yr = X[:, 0] - X[:, 1]
    p1 = mk.mkl_path(X, yr, kernels=specs, n_threads=1)
    pa = mk.mkl_path(X, yr, kernels=specs, n_threads=-1)
    np.testing.assert_array_equal(pa.Cs, p1.Cs)
    np.testing.assert_array_equal(pa.kernel_weights, p1.kernel_weights)
    cv = mk.MKLRegressorCV(kernels=specs, Cs=3, cv=2, n_threads=-1).fit(X, yr)
    assert cv.C_ == mk.MKLRegressorCV(kernels=specs, Cs=3, cv=2, n_threads=1).fit(X, yr).C_
    assert mk.kernels.KernelBank(specs, n_threads=-1).n_threads == 0
    assert _task_threads(-1) == _task_threads(0) == 1
    if _cores() > 2:
        assert _task_threads(-2) == _cores() - 1


# --- 2. random_state ------------------------------------------------------------------------


def test_random_state_beyond_64_bits_is_refused() -> None:
    assert check_random_state(None) is None
    assert check_random_state(2**64 - 1) == 2**64 - 1
    for bad in (2**64, 2**70, -1, 1.0, True):
        _raises_parameter("random_state", check_random_state, bad)
    _raises_parameter("random_state", FeatureBank, [Gaussian(1.0)], random_state=2**70)

    X, y = _data()
    # The largest seed works (the per-kernel seeds wrap around 2**64).
    bank = FeatureBank([Gaussian(1.0), Laplacian(1.0)], n_components=5, random_state=2**64 - 1)
    F = bank.fit_transform(X)
    assert [f.shape for f in F] == [(30, 5), (30, 5)]

    est = mk.MKLClassifier(
        kernels=FeatureBank([Gaussian(1.0)], n_components=5),
        solver="svrg",
        loss="logistic",
        random_state=2**70,
    )
    _raises_parameter("random_state", est.fit, X, y)


# --- 3. group labels ------------------------------------------------------------------------


def test_group_labels_of_any_size_are_numbered_in_order() -> None:
    assert group_ids([10**20, 0], 2) == ([1, 0], 2)
    assert group_ids([10**20, -(10**30), 10**20, 5], 4) == ([2, 0, 2, 1], 3)
    assert group_ids([np.int64(3), 1, 3], 3) == ([1, 0, 1], 2)

    X, y = _data()
    specs = [Linear(), Gaussian(1.0)]
    big = mk.MKLClassifier(kernels=specs, penalty="group", groups=[10**20, 0]).fit(X, y)
    small = mk.MKLClassifier(kernels=specs, penalty="group", groups=[1, 0]).fit(X, y)
    np.testing.assert_array_equal(big.dual_coef_, small.dual_coef_)
    np.testing.assert_array_equal(big.group_weights_, small.group_weights_)


# --- 4. validate_stack's rtol ---------------------------------------------------------------


def test_validate_stack_rtol_must_be_finite_and_non_negative() -> None:
    X, _ = _data(12)
    G = mk.kernels.gram(X, [Linear(), Gaussian(1.0)], normalize="mean_diag")
    asym = G.copy()
    asym[0, 1, 2] += 0.5
    for bad in (-1.0, -1e-12, math.nan, math.inf, "1e-8", True):
        _raises_parameter("rtol", mk.kernels.validate_stack, G, rtol=bad)
        _raises_parameter("rtol", mk.kernels.validate_stack, asym, rtol=bad)
    assert mk.kernels.validate_stack(G, rtol=0.0) is G
    assert mk.kernels.validate_stack(G, rtol=1) is G
    with pytest.raises(mk.exceptions.KernelNotSymmetricError):
        mk.kernels.validate_stack(asym, rtol=1e-8)


# --- 5. view_bank ---------------------------------------------------------------------------


def test_view_bank_wants_a_mapping() -> None:
    msg = _raises_parameter("views", mk.kernels.view_bank, [0, 1])
    assert "mapping" in msg
    _raises_parameter("views", mk.kernels.view_bank, "ab")
    _raises_parameter("views", mk.kernels.view_bank, {"a": [0.5]})
    specs, groups = mk.kernels.view_bank({"a": [0], "b": range(1, 3)}, widths=[1.0])
    assert groups == [0, 1]
    assert specs == [Gaussian(sigma=1.0, features=(0,)), Gaussian(sigma=1.0, features=(1, 2))]


# --- 6. epsilon_insensitive on one sample ---------------------------------------------------


@pytest.mark.parametrize("penalty", ["lp", "l1", "group"])
def test_epsilon_insensitive_on_one_sample_is_an_input_error(penalty: Penalty) -> None:
    X, _ = _data(12)
    kw: dict[str, Any] = {"groups": [0, 0, 1]} if penalty == "group" else {}
    specs = [Linear(), Gaussian(1.0), Polynomial(2)]
    reg = mk.MKLRegressor(kernels=specs, loss="epsilon_insensitive", penalty=penalty, **kw)
    with pytest.raises(InvalidInputError, match="at least 2 samples") as err:
        reg.fit(X[:1], [1.0])
    assert not isinstance(err.value, InvalidParameterError)
    G = mk.kernels.gram(X[:1], specs)
    pre = mk.MKLRegressor(
        kernels="precomputed", loss="epsilon_insensitive", penalty=penalty, **kw
    )  # fmt: skip
    with pytest.raises(InvalidInputError, match="at least 2 samples"):
        pre.fit(G, [1.0])
    # Two samples are enough.
    reg.fit(X[:2], [1.0, -1.0])


# --- 7. kernel specifications ---------------------------------------------------------------


def test_feature_indices_must_be_integers() -> None:
    for bad in ([1.5], [0.9], [True], np.array([1.0]), "01", [[0, 1], [2]], [None]):
        _raises_parameter("features", Linear, features=bad)
        _raises_parameter("features", Gaussian, sigma=1.0, features=bad)
    # Strings in a sequence are column names (of a DataFrame X, resolved at fit).
    assert Linear(features=["1", 2]).features == ("1", 2)
    assert Linear(features=np.array([0, 2])).features == (0, 2)  # type: ignore[arg-type]
    assert Linear(features=[np.int64(1), np.uint8(2)]).features == (1, 2)
    assert Laplacian(features=range(2)).features == (0, 1)
    feats = Linear(features=np.array([3])).features  # type: ignore[arg-type]
    assert feats == (3,) and type(feats[0]) is int


def test_numeric_spec_parameters_are_real_and_finite() -> None:
    for bad in ("1", True, np.bool_(True), None, math.nan, math.inf, 0.0, -1.0):
        _raises_parameter("sigma", Gaussian, sigma=bad)
        _raises_parameter("sigma", Laplacian, sigma=bad)
    for bad in ("2", True, 1.5, 0, math.inf, None):
        _raises_parameter("degree", Polynomial, degree=bad)
    for name in ("coef0", "scale"):
        for bad in ("1", True, math.nan, math.inf, None):
            _raises_parameter(name, Polynomial, **{name: bad})
    assert Polynomial(degree=np.int64(3), coef0=np.float32(0.5), scale=2) == Polynomial(
        degree=3, coef0=0.5, scale=2.0
    )
    assert Gaussian(sigma=np.float32(2.0)).gamma == 0.125


def test_gaussian_sigma_with_an_infinite_gamma_is_refused() -> None:
    for tiny in (1e-300, 1e-160, 5e-324):
        _raises_parameter("sigma", Gaussian, sigma=tiny)
    _raises_parameter("gamma", Gaussian.from_gamma, 1e308)
    # Just above the limit gamma is finite, and the Gram diagonal is exactly 1.
    k = Gaussian(sigma=1e-150)
    assert math.isfinite(k.gamma)
    X, _ = _data(5)
    G = mk.kernels.gram(X, [k])
    np.testing.assert_array_equal(np.diag(G[0]), np.ones(5))
    assert Gaussian.from_gamma(1e300).gamma == pytest.approx(1e300)


# --- 8. warm_start --------------------------------------------------------------------------


def test_warm_start_must_be_a_bool() -> None:
    X, y = _data()
    for bad in ("yes", None, 1, 0.0):
        clf = mk.MKLClassifier(warm_start=bad)  # type: ignore[arg-type]
        _raises_parameter("warm_start", clf.fit, X, y)
        reg = mk.MKLRegressor(warm_start=bad)  # type: ignore[arg-type]
        _raises_parameter("warm_start", reg.fit, X, y.astype(float))
    # SpicyMKL, the solver with warm starts (solver="auto" picks it only with warm_start).
    a = mk.MKLClassifier(penalty="l1", solver="spicy", warm_start=np.bool_(True))  # type: ignore[arg-type]
    a.fit(X, y)
    b = mk.MKLClassifier(penalty="l1", solver="spicy", warm_start=False).fit(X, y)
    np.testing.assert_allclose(a.primal_objective_, b.primal_objective_, rtol=1e-6)


# --- 9. p, l1_ratio and epsilon whatever the penalty and loss --------------------------------


@pytest.mark.parametrize("penalty", ["lp", "l1", "elasticnet", "group"])
def test_unused_settings_are_still_checked(penalty: Penalty) -> None:
    X, y = _data()
    kw: dict[str, Any] = {"groups": [0, 1, 1]} if penalty == "group" else {}
    specs = [Linear(), Gaussian(1.0), Polynomial(2)]

    def clf(**more: Any) -> mk.MKLClassifier:
        return mk.MKLClassifier(kernels=specs, penalty=penalty, **kw, **more)

    for p in (-2, 0.5, math.nan, "2", True):
        _raises_parameter("p", clf(p=p).fit, X, y)
    for r in (math.nan, -0.1, 1.5, "0.5", True):
        _raises_parameter("l1_ratio", clf(l1_ratio=r).fit, X, y)
    for eps in (-1.0, math.nan, math.inf, "0.1", True):
        _raises_parameter("epsilon", clf(epsilon=eps).fit, X, y)
        reg = mk.MKLRegressor(kernels=specs, penalty=penalty, loss="squared", **kw)
        reg.set_params(epsilon=eps)
        _raises_parameter("epsilon", reg.fit, X, y.astype(float))
    # The documented range stays valid: p in [1, inf], l1_ratio in [0, 1], epsilon >= 0.
    for p, r, eps in ((1, 0, 0), (math.inf, 1.0, 0.0), (2.0, 0.5, 0.1)):
        clf(p=p, l1_ratio=r, epsilon=eps).fit(X, y)


def test_normalize_is_checked_with_a_feature_bank() -> None:
    X, y = _data()
    est = mk.MKLClassifier(kernels=FeatureBank([Gaussian(1.0)], n_components=5))
    est.set_params(normalize="x")
    _raises_parameter("normalize", est.fit, X, y)


# --- 10. low_rank's max_rank ----------------------------------------------------------------


def test_low_rank_max_rank_must_be_an_integer() -> None:
    """``max_rank`` is an integer ≥ 1; factors that compress nothing (total rank ≥ n, the
    20-point Gaussian at full rank) say so."""
    X, _ = _data(20)
    G = mk.kernels.gram(X, [Gaussian(3.0), Linear()])
    for bad in (2.5, 2.0, True, "3", 0, -1):
        _raises_parameter("max_rank", mk.kernels.low_rank, G, max_rank=bad)
    two = mk.kernels.low_rank(G, max_rank=np.int64(2))
    assert list(two.ranks) == [2, 2]
    with pytest.warns(UserWarning, match="compress nothing"):
        full = mk.kernels.low_rank(G, tol=0.0)
    with pytest.warns(UserWarning, match=r"kernels \[0\] have rank > n/2"):
        huge = mk.kernels.low_rank(G, tol=0.0, max_rank=10**30)
    np.testing.assert_array_equal(huge.ranks, full.ranks)
    for a, b in zip(huge.factors, full.factors, strict=True):
        np.testing.assert_array_equal(a, b)


# --- 11. CV scores with NaN -----------------------------------------------------------------


def _regression(n: int = 30) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    rng = np.random.default_rng(6)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)


SPECS_CV = [Gaussian(sigma=1.0), Linear(), Polynomial(degree=2)]


def test_cv_with_undefined_scores_everywhere_raises() -> None:
    X, y = _regression(20)
    reg = mk.MKLRegressorCV(kernels=SPECS_CV, Cs=5, cv=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's R² warns on one held-out point
        msg = _raises_parameter("scoring", reg.fit, X, y)
    assert "NaN" in msg and "neg_mean_squared_error" in msg
    assert not hasattr(reg, "C_")
    ok = mk.MKLRegressorCV(kernels=SPECS_CV, Cs=5, cv=20, scoring="neg_mean_squared_error")
    ok.fit(X, y)
    assert np.isfinite(ok.scores_).all()
    assert ok.C_ == ok.Cs_[int(np.argmax(ok.scores_.mean(axis=0)))]


def test_cv_choice_ignores_nan_scores() -> None:
    X, y = _regression(30)
    # Folds of distinct sizes, so that a scorer can tell them apart.
    order = np.random.default_rng(1).permutation(30)
    tests = [order[:7], order[7:17], order[17:]]
    cv = [(np.setdiff1d(order, te), te) for te in tests]
    Cs = [0.1, 1.0, 10.0, 100.0]

    def mse(est: Any, Xte: Any, yte: NDArray[np.float64]) -> float:
        return -float(np.mean((est.predict(Xte) - yte) ** 2))

    ref = mk.MKLRegressorCV(kernels=SPECS_CV, Cs=Cs, cv=cv, scoring=mse).fit(X, y)
    S = ref.scores_
    best = int(np.argmax(S.mean(axis=0)))
    assert ref.C_ == Cs[best]

    # The best candidate has no score on one fold: it is not chosen; the next best is.
    def nan_at_best(est: Any, Xte: Any, yte: NDArray[np.float64]) -> float:
        return math.nan if len(yte) == 10 and est.C == Cs[best] else mse(est, Xte, yte)

    got = mk.MKLRegressorCV(kernels=SPECS_CV, Cs=Cs, cv=cv, scoring=nan_at_best).fit(X, y)
    others = [i for i in range(len(Cs)) if i != best]
    expected = others[int(np.argmax(S[:, others].mean(axis=0)))]
    assert got.C_ == Cs[expected]
    assert np.isnan(got.scores_[1, best]) and np.isnan(got.scores_).sum() == 1

    # A fold where no candidate has a score is left out of the mean.
    def nan_on_a_fold(est: Any, Xte: Any, yte: NDArray[np.float64]) -> float:
        return math.nan if len(yte) == 13 else mse(est, Xte, yte)

    got = mk.MKLRegressorCV(kernels=SPECS_CV, Cs=Cs, cv=cv, scoring=nan_on_a_fold).fit(X, y)
    assert got.C_ == Cs[int(np.argmax(S[:2].mean(axis=0)))]


# --- 12. alignment --------------------------------------------------------------------------


def test_alignment_refuses_non_finite_input() -> None:
    X, _ = _data(10)
    G = mk.kernels.gram(X, [Linear(), Gaussian(1.0)])
    y = np.sign(X[:, 0] + 0.1)
    bad = G.copy()
    bad[1, 2, 3] = np.nan
    calls: list[Callable[[], NDArray[np.float64]]] = [
        lambda: mk.kernels.alignment(bad),
        lambda: mk.kernels.alignment(bad, y),
    ]
    for fn in calls:
        with pytest.raises(NonFiniteError) as err:
            fn()
        assert err.value.kernel == 1 and err.value.entry == (2, 3)
    for yb in (np.full(10, np.nan), np.where(np.arange(10) == 4, np.inf, y)):
        with pytest.raises(NonFiniteError, match="y"):
            mk.kernels.alignment(G, yb)


def test_alignment_is_scale_free() -> None:
    X, _ = _data(15)
    G = mk.kernels.gram(X, [Linear(), Gaussian(1.0), Polynomial(2)])
    y = np.sign(X[:, 0] + 0.1)
    n = len(y)
    H = np.eye(n) - 1.0 / n

    def a(K: NDArray[np.float64], L: NDArray[np.float64]) -> float:
        Kc, Lc = H @ K @ H, H @ L @ H
        return float(np.sum(Kc * Lc) / np.linalg.norm(Kc) / np.linalg.norm(Lc))

    A = np.array([[a(K, L) for L in G] for K in G])
    t = np.array([a(K, np.outer(y, y)) for K in G])
    for scale in (1.0, 1e-310, 1e-200, 1e200, 1e300):
        np.testing.assert_allclose(mk.kernels.alignment(G * scale), A, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mk.kernels.alignment(G * scale, y), t, rtol=1e-9)
        np.testing.assert_allclose(mk.kernels.alignment(G, y * scale), t, rtol=1e-9)
    # Each kernel's own scale does not matter either.
    mixed = G * np.array([1e-310, 1.0, 1e300])[:, None, None]
    np.testing.assert_allclose(mk.kernels.alignment(mixed), A, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mk.kernels.alignment(np.zeros((1, 4, 4))), [[0.0]])


# --- every error is the library's own ---------------------------------------------------------

# Raised on purpose: ``AttributeError`` by ``predict_proba`` where it is unavailable (what
# ``hasattr`` and scikit-learn's ``available_if`` expect), ``NotImplementedError`` by the
# abstract method of ``Kernel``.
_BUILTINS_ALLOWED = {"AttributeError", "NotImplementedError"}


def test_the_package_raises_no_bare_builtin_exception() -> None:
    """The README promises that every error is a ``multikernel.exceptions`` class (each keeps
    its built-in base): a scan of the package's source for ``raise ValueError(...)`` and the
    like."""
    import ast
    import builtins
    from pathlib import Path

    bare = []
    for path in sorted(Path(mk.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.id if isinstance(exc, ast.Name) else None
            builtin = isinstance(getattr(builtins, name or "", None), type)
            if name is not None and builtin and name not in _BUILTINS_ALLOWED:
                bare.append(f"{path.name}:{node.lineno} raise {name}")
    assert bare == []


@pytest.mark.parametrize(
    "bank",
    [mk.kernels.KernelBank([Linear()]), FeatureBank([Linear()])],
    ids=["KernelBank", "FeatureBank"],
)
def test_an_unfitted_bank_raises_not_fitted_error(bank: Any) -> None:
    from sklearn.exceptions import NotFittedError as SklearnNotFitted

    with pytest.raises(mk.exceptions.NotFittedError, match="not fitted") as err:
        bank.transform(np.ones((2, 1)))
    assert isinstance(err.value, SklearnNotFitted) and isinstance(err.value, ValueError)


def test_unknown_kernels_string_names_the_parameter() -> None:
    X, y = _data()
    msg = _raises_parameter("kernels", mk.MKLClassifier(kernels="bogus").fit, X, y)
    assert "'precomputed'" in msg and "'bogus'" in msg


@pytest.mark.parametrize(
    "build",
    [
        lambda X: mk.kernels.gram(X, "bogus"),
        lambda X: mk.kernels.KernelBank("bogus"),
        lambda X: FeatureBank("bogus"),
        lambda X: mk.MKLClassifierCV(kernels="bogus").fit(X, _data()[1]),
        lambda X: mk.mkl_path(X, _data()[1], kernels="bogus"),
    ],
    ids=["gram", "KernelBank", "FeatureBank", "MKLClassifierCV", "mkl_path"],
)
def test_a_string_of_kernels_is_refused_whole(build: Callable[[Any], Any]) -> None:
    """A string is not read as a sequence of one-letter kernels: the message names the
    whole string ('bogus', not 'b'), and the error is the library's InvalidParameterError."""
    X, _ = _data()
    msg = _raises_parameter("kernels", build, X)
    assert "'bogus'" in msg and "'b'" not in msg


def test_an_unknown_kernel_kind_from_the_engine_is_an_internal_error() -> None:
    from multikernel.kernels import _from_tuple

    assert _from_tuple(("laplacian", 2.0, 0.0, 0.0, (1,))) == Laplacian(sigma=2.0, features=[1])
    with pytest.raises(mk.exceptions.InternalError, match="unknown kind 'sigmoid'"):
        _from_tuple(("sigmoid", 2.0, 0.0, 0.0, None))


def test_check_input_false_skips_only_the_stack_read() -> None:
    """``fit(..., check_input=False)`` on a valid precomputed stack gives the same bits; the
    shape is still checked, and the flag must be a bool. With the check, a NaN entry is
    refused; without it the fit trusts the stack (scikit-learn's ``Lasso`` convention)."""
    X, y = _data(60)
    G = mk.kernels.gram(X, [Linear(), Gaussian(sigma=1.0), Polynomial(degree=2)])
    t = X[:, 0] + 0.1 * X[:, 1]
    for est, target in (
        (mk.MKLClassifier(kernels="precomputed", C=3.0), y),
        (mk.MKLRegressor(kernels="precomputed", penalty="l1"), t),
        (mk.MKLOneClass(kernels="precomputed", nu=0.3), None),
    ):
        a = est.fit(G, target).dual_coef_.copy()
        b = est.fit(G, target, check_input=False).dual_coef_
        np.testing.assert_array_equal(a, b)
        with pytest.raises(InvalidInputError, match="3-D"):
            est.fit(G[0], target, check_input=False)
        _raises_parameter("check_input", est.fit, G, target, check_input="no")
    bad = G.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(NonFiniteError):
        mk.MKLClassifier(kernels="precomputed").fit(bad, y)
