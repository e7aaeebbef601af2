"""Small real MKL problems shared by the solver test suites."""

from __future__ import annotations

import math
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, Literal

import numpy as np
import pytest
from numpy.typing import NDArray
from reference import (
    decision_values,
    dual_objective_l1,
    load_dataset,
    primal_objective,
)

import multikernel as mk
from multikernel import _core
from multikernel.kernels import Gaussian, KernelSpec, Linear, Polynomial

FloatArray = NDArray[np.float64]


def cpu_seconds(run: Callable[[], Any]) -> float:
    """The CPU seconds this process (all its threads) spends in ``run()``, warnings silenced."""
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()
    return time.process_time() - start


def cpu_seconds_after_interrupt(delay: float, run: Callable[[], Any]) -> float:
    """Sends this process Ctrl-C (SIGINT) ``delay`` seconds into ``run()``, checks that it
    raised ``KeyboardInterrupt`` and returns the CPU seconds this process (all its threads)
    spent from the signal to the raise: the work the engine did after the Ctrl-C.

    CPU time rather than wall time, so that a loaded machine, which stretches the wall time
    of the same work, cannot fail the comparison with a reference measured by
    :func:`cpu_seconds` in the same test."""
    at_signal: list[float] = []

    def interrupt() -> None:
        at_signal.append(time.process_time())
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, whatever the suite was started with: a shell starts a
    # background job with SIGINT ignored, and Python then installs no handler of its own.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(delay, interrupt)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run()
        end = time.process_time()
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    return end - at_signal[0]


#: CPU seconds an interrupted fit may spend beyond its reference: the binding polls for
#: Ctrl-C every 50 ms of wall time, during which the engine's threads go on (two cores here).
POLL_CPU_SECONDS = 0.3


@contextmanager
def engine_threads() -> Iterator[list[int]]:
    """The threads every engine fit and path call made inside the block runs on: each call's
    ``n_threads`` as the engine resolves it (``_core.thread_count``), so that a
    1-against-2-thread test can assert that its second run had two worker threads."""
    used: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        for name in ("fit", "path"):
            engine = getattr(_core, name)

            def spy(*args: Any, _engine: Any = engine, **kwargs: Any) -> Any:
                used.append(_core.thread_count(kwargs.get("n_threads", 0)))
                return _engine(*args, **kwargs)

            mp.setattr(_core, name, spy)
        yield used


@cache
def small_problem(
    dataset: str, regression: bool, n: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """``n`` points of a real data set and M = 10 kernels with unit mean diagonal; for
    regression the first feature is the target and the others the inputs."""
    X, y = load_dataset(dataset, n=n, seed=seed)
    if regression:
        y, X = X[:, 0].copy(), X[:, 1:]
    d = X.shape[1]
    s = math.sqrt(d)
    specs: list[KernelSpec] = [
        Linear(),
        Polynomial(degree=2, scale=1.0 / d),
        Gaussian(sigma=0.5 * s),
        Gaussian(sigma=s),
        Gaussian(sigma=2 * s),
        Gaussian(sigma=1.0, features=[0]),
        Gaussian(sigma=1.0, features=[1]),
        Gaussian(sigma=1.0, features=[2, 3]),
        Linear(features=[0]),
        Polynomial(degree=2, features=[1, 2]),
    ]
    return mk.kernels.gram(X, specs, normalize="mean_diag"), y


def fit_lp(
    G: NDArray[np.float32] | FloatArray, y: FloatArray, *,
    algorithm: Literal["analytic", "interleaved"] = "analytic",
    n_threads: int = 0, **settings: float | str | None,
) -> _core.FitResult:  # fmt: skip
    """The native ℓp solver (``algorithm`` is ``analytic`` or ``interleaved``)."""
    return _core.fit(_core.Settings(algorithm, settings), G, y, n_threads=n_threads)


def fit_spicy(
    G: NDArray[np.float32] | FloatArray, y: FloatArray, *, n_threads: int = 0,
    **settings: float | str | None,
) -> _core.FitResult:  # fmt: skip
    """The native SpicyMKL solver."""
    return _core.fit(_core.Settings("spicy", settings), G, y, n_threads=n_threads)


# The indefinite stack of the witness tests (test_witness.py) and of psd="clip"
# (test_psd_clip.py).

DELTA = 1e-2


def indefinite_stack(seed: int, n: int = 60) -> tuple[FloatArray, FloatArray]:
    """A linear and a Gaussian kernel (unit mean diagonal) on ``n`` random points, the
    Gaussian one minus ``DELTA · vvᵀ`` with ``v`` a unit vector orthogonal to the constant
    and the features (the linear kernel's range): its smallest eigenvalue is about −0.008,
    far beyond rounding but small against its trace ``n``; it passes ``validate_stack``.
    Noisy targets, so that at large C the dual point is driven into that direction."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    t = np.sin(2 * X[:, 0]) + 0.5 * rng.standard_normal(n)
    G = mk.kernels.gram(X, [Linear(), Gaussian(sigma=3.0)], normalize="mean_diag")
    B = np.column_stack([np.ones(n), X])
    v = rng.standard_normal(n)
    v -= B @ np.linalg.lstsq(B, v, rcond=None)[0]
    v /= np.linalg.norm(v)
    G[1] -= DELTA * np.outer(v, v)
    return np.ascontiguousarray(G), t


# (penalty, settings, C): at these C the solvers' dual points reach a negative quadratic
# form of kernel 1. Before the witness existed, the l1 and lp fits reported duals above the
# clipped optimum (docs/mathematics.md §1.8 has the figures).
WITNESS_CASES: list[tuple[str, dict[str, Any], float]] = [
    ("l1", {}, 10.0),
    ("lp", {"p": 1.0}, 100.0),
    ("group", {"groups": [0, 1], "max_iter": 3}, 100.0),
]


# The certificate of an l1 / elasticnet fit against cvxpy (SpicyMKL's and the wrapper's suites).


def natural_dual_point(loss: str, y: FloatArray, f: FloatArray, C: float) -> FloatArray:
    """``ρ = −C ℓ'(y, f)`` (a subgradient for the non-smooth losses; ε = 0.1)."""
    if loss == "squared":
        g = f - y
    elif loss == "logistic":
        g = -y / (1.0 + np.exp(y * f))
    elif loss == "hinge":
        g = np.where(y * f < 1.0, -y, 0.0)
    elif loss == "squared_hinge":
        g = -y * np.maximum(0.0, 1.0 - y * f)
    else:
        r = f - y
        g = np.where(r > 0.1, 1.0, np.where(r < -0.1, -1.0, 0.0))
    out: FloatArray = -C * g
    return out


def check_sparse_certificate(
    G: FloatArray, y: FloatArray, r: _core.FitResult, optimum: float, *, loss: str,
    penalty: str, l1_ratio: float | None, C: float, tol: float,
) -> None:  # fmt: skip
    """An l1 / elasticnet fit ``r`` against the independent optimum ``optimum`` (cvxpy): its
    primal recomputed from its coefficients, a gap within ``tol``, a dual below the optimum,
    the reference's own dual at the model's natural point below ``P``, and kernel weights on
    the simplex that are zero exactly off the support."""
    assert r.converged, r.status
    A = np.asarray(r.coef)
    b = float(r.intercept)
    P = primal_objective(G, A, b, y, C=C, loss=loss, penalty=penalty, l1_ratio=l1_ratio)
    assert P == pytest.approx(r.primal, rel=1e-9)
    assert P == pytest.approx(optimum, rel=1e-4)
    assert -1e-12 <= r.gap <= tol
    assert r.dual <= optimum + 1e-6 * abs(optimum)
    f = decision_values(G, A, b)
    rho = natural_dual_point(loss, y, f, C)
    assert dual_objective_l1(G, y, rho, C, loss, penalty, l1_ratio) <= P + 1e-9 * abs(P)
    w = np.asarray(r.kernel_weights)
    norms = np.asarray(r.kernel_norms)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(w >= 0.0)
    assert np.array_equal(norms > 0, np.any(A != 0, axis=1))
    if norms.any():
        assert np.array_equal(w > 0, norms > 0)


def expected_failures(estimator: Any) -> dict[str, str]:
    """scikit-learn's checks that these estimators fail by design, with the reason."""
    return {
        # The check compares decisions to 1e-7, but the default tol = 1e-3 stops the weighted
        # and the duplicated fit at different iterates (the squared-loss regressor passes at
        # the default); a FeatureBank's Nystroem landmarks are drawn from the rows. The same
        # check passes at a tight tol (test_sample_weight.py: the classifier, the one-class
        # fit, MKLRegressorCV), and the identity is tested there for every solver, the
        # normalisations and the paths at tol 1e-6 to 1e-9.
        "check_sample_weight_equivalence_on_dense_data": (
            "the default tol=1e-3 stops weighted and duplicated fits at different iterates"
        ),
        # The same check on sparse X (the kernel specifications read it): the same reason.
        "check_sample_weight_equivalence_on_sparse_data": (
            "the default tol=1e-3 stops weighted and duplicated fits at different iterates"
        ),
    }


def solvers_called(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the solvers of every engine fit, in order."""
    calls: list[str] = []
    fit = _core.fit

    def spy(settings: _core.Settings, *args: Any, **kwargs: Any) -> Any:
        r = fit(settings, *args, **kwargs)
        calls.extend(r.solvers)  # a continued fit runs two in one call
        return r

    monkeypatch.setattr(_core, "fit", spy)
    return calls


def free_group_problem(
    seed: int,
) -> tuple[FloatArray, FloatArray, tuple[int, ...], FloatArray]:
    """Issue 56's stall: two Gaussians on each half of 4 features (two groups), a linear kernel
    and a rank-one kernel ``x₃x₃ᵀ`` alone in the last group, which ends below the largest group
    norm at the optimum (a free group: ``γ_j = 0``, its block unpenalised)."""
    rng = np.random.default_rng(seed)
    n = 60
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 + 0.5 * rng.normal(size=n)
    y = np.where(score >= 0, 1.0, -1.0)

    def gauss(Z: FloatArray, width: float) -> FloatArray:
        d = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        return np.exp(-d / (2 * width**2))

    Ks = [gauss(X[:, :2], 0.5), gauss(X[:, :2], 2.0), gauss(X[:, 2:], 0.5)]
    Ks += [gauss(X[:, 2:], 2.0), X @ X.T, np.outer(X[:, 3], X[:, 3])]
    G = np.stack([K * (n / np.trace(K)) for K in Ks])
    return G, y, (0, 0, 1, 1, 2, 3), score
