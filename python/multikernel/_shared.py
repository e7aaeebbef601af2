"""One set of kernel weights shared by all classes (``multi_class="shared"``).

The one-vs-rest problems coupled through one θ (docs/mathematics.md §3.8): Kloft's
Algorithm 1 in Python around the engine's single-kernel solves, with the whole problem's
certificate computed here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._config import Setting

#: The losses of a shared fit (the classifier's).
SHARED_LOSSES = ("hinge", "squared_hinge", "logistic")

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class SharedFit:
    """The shared fit: ``coef`` (K, M, n) with ``coef[c, m] = θ_m β_c``, one intercept per
    class, the one θ, the block norms over the classes and the whole problem's certificate."""

    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]
    kernel_weights: NDArray[np.float64]
    kernel_norms: NDArray[np.float64]
    primal: float
    dual: float
    gap: float
    n_iter: int
    status: _core.Status
    converged: bool
    history: NDArray[np.float64]
    psd_witness: tuple[int, float, float, float] | None


def _loss(loss: str, y: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``ℓ(y_i, z_i)`` (docs/mathematics.md §0.3)."""
    m = y * z
    out: NDArray[np.float64]
    if loss == "hinge":
        out = np.maximum(0.0, 1.0 - m)
    elif loss == "squared_hinge":
        out = 0.5 * np.maximum(0.0, 1.0 - m) ** 2
    else:
        out = np.logaddexp(0.0, -m)
    return out


def _derivative(loss: str, y: NDArray[np.float64], z: NDArray[np.float64]) -> float:
    """``Σ_i ∂_z ℓ(y_i, z_i)`` (a subgradient for the hinge), non-decreasing in a shift of z."""
    m = y * z
    if loss == "hinge":
        return float(np.sum(np.where(m < 1.0, -y, 0.0)))
    if loss == "squared_hinge":
        return float(np.sum(-y * np.maximum(0.0, 1.0 - m)))
    return float(np.sum(-y / (1.0 + np.exp(np.clip(m, -700.0, 700.0)))))


def best_intercept(loss: str, y: NDArray[np.float64], f: NDArray[np.float64], b0: float) -> float:
    """The ``b`` minimising ``Σ_i ℓ(y_i, f_i + b)`` (§1.1): bisection on the monotone
    derivative, bracketed from ``b0``; ``b0`` is kept if it is no worse (the hinge's minimum is
    a kink, which bisection reaches only to its width)."""
    lo, hi, step = b0, b0, 1.0
    for _ in range(200):
        if _derivative(loss, y, f + lo) <= 0.0:
            break
        lo -= step
        step *= 2.0
    step = 1.0
    for _ in range(200):
        if _derivative(loss, y, f + hi) >= 0.0:
            break
        hi += step
        step *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if _derivative(loss, y, f + mid) < 0.0:
            lo = mid
        else:
            hi = mid
    best = b0
    value = float(np.sum(_loss(loss, y, f + b0)))
    for b in (lo, hi):
        v = float(np.sum(_loss(loss, y, f + b)))
        if v < value:
            best, value = b, v
    return best


def feasible_dual(
    loss: str, y: NDArray[np.float64], beta: NDArray[np.float64], C: float
) -> NDArray[np.float64]:
    """``β`` made a feasible point of the dual (§1.4 steps 1–2): ``yβ`` clipped to the
    conjugate's domain (``[0, C]``; ``[0, ∞)`` for the squared hinge), then centred inside it so
    that ``Σβ = 0``. A solver's ``β`` is feasible up to rounding, so this moves it by rounding."""
    top = math.inf if loss == "squared_hinge" else C
    lo = np.where(y > 0, 0.0, -top)
    hi = np.where(y > 0, top, 0.0)
    b = np.clip(beta, lo, hi)
    total = float(b.sum())
    if total != 0.0:
        # τ ↦ Σ clip(b − τ) is continuous and non-increasing; 0 is in every interval.
        t_lo = -2.0 * float(np.abs(b).max()) - 1.0
        t_hi = -t_lo
        for _ in range(200):
            mid = 0.5 * (t_lo + t_hi)
            if not t_lo < mid < t_hi:
                break
            if float(np.clip(b - mid, lo, hi).sum()) > 0.0:
                t_lo = mid
            else:
                t_hi = mid
        b = np.clip(b - 0.5 * (t_lo + t_hi), lo, hi)
        # The bisection's rounding residual, taken from the entries strictly inside.
        inside = np.flatnonzero((b > lo) & (b < hi))
        if len(inside):
            shifted = b[inside] - float(b.sum()) / len(inside)
            if ((shifted >= lo[inside]) & (shifted <= hi[inside])).all():
                b[inside] = shifted
    return b


def conjugate_term(loss: str, y: NDArray[np.float64], beta: NDArray[np.float64], C: float) -> float:
    """``−C Σ_i ℓ*(y_i, −β_i/C)`` at a feasible ``β`` (§0.3, ``s = yβ/C``)."""
    a = y * beta
    if loss == "hinge":
        return float(a.sum())
    if loss == "squared_hinge":
        return float(np.sum(a - a * a / (2.0 * C)))
    s = np.clip(a / C, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = np.where(s > 0.0, s * np.log(np.where(s > 0.0, s, 1.0)), 0.0)
        xr = np.where(s < 1.0, (1.0 - s) * np.log1p(-np.where(s < 1.0, s, 0.0)), 0.0)
    return float(-C * np.sum(xs + xr))


def lp_penalty(s: NDArray[np.float64], p: float) -> float:
    """``½ (Σ_m s_m^q)^{2/q}``, ``q = 2p/(p+1)`` (§0.2), scaled for the power sums."""
    top = float(s.max(initial=0.0))
    if top == 0.0:
        return 0.0
    q = 2.0 if math.isinf(p) else 2.0 * p / (p + 1.0)
    return 0.5 * top**2 * math.pow(float(np.sum((s / top) ** q)), 2.0 / q)


def dual_norm(forms: NDArray[np.float64], p: float) -> float:
    """``½ ‖(t_m²)_m‖_{p*}`` of the forms ``t_m² ≥ 0`` (§1.2, the conjugate of the penalty)."""
    top = float(forms.max(initial=0.0))
    if top == 0.0:
        return 0.0
    if p == 1.0:
        return 0.5 * top
    if math.isinf(p):
        return 0.5 * float(forms.sum())
    ps = p / (p - 1.0)
    return 0.5 * top * math.pow(float(np.sum((forms / top) ** ps)), 1.0 / ps)


def _combine(
    G: NDArray[np.float64] | NDArray[np.float32], theta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``K_θ = Σ_m θ_m K_m`` in float64, bit-symmetric (each entry summed in the same order)."""
    if G.dtype == np.float64:
        out: NDArray[np.float64] = np.tensordot(theta, G, axes=1)
        return out
    # A float32 stack: kernel by kernel, not a float64 copy of the whole stack.
    acc = np.zeros(G.shape[1:], dtype=np.float64)
    for m in np.flatnonzero(theta > 0):
        acc += theta[m] * G[m].astype(np.float64)
    return acc


def _products(
    G: NDArray[np.float64] | NDArray[np.float32], B: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``H[m] = K_m Bᵀ`` of shape (M, n, K): one pass over the stack for every class."""
    H = np.empty((G.shape[0], G.shape[1], B.shape[0]))
    for m in range(G.shape[0]):
        H[m] = np.asarray(G[m], dtype=np.float64) @ B.T
    return H


def fit_shared(
    G: NDArray[np.float64] | NDArray[np.float32],
    Y: NDArray[np.float64],
    settings: dict[str, Setting],
    *,
    p: float,
    n_threads: int,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
) -> SharedFit:
    """The shared ℓp-MKL problem of ``G`` (M, n, n) and the one-vs-rest targets ``Y`` (K, n)
    by Kloft's Algorithm 1 (docs/mathematics.md §3.8). ``settings``: the engine's ``analytic``
    settings (C, loss, tol, max_iter, inner_tol); each class's problem on ``K_θ`` is one
    single-kernel engine fit, accurate to a tolerance that follows the outer gap."""
    started = time.perf_counter()
    M, n = int(G.shape[0]), int(G.shape[1])
    K = int(Y.shape[0])
    C = float(settings["C"])  # type: ignore[arg-type]
    loss = str(settings["loss"])
    tol = float(settings["tol"])  # type: ignore[arg-type]
    max_iter = int(settings["max_iter"])  # type: ignore[arg-type]
    floor = min(float(settings["inner_tol"]), 0.1 * tol)  # type: ignore[arg-type]
    theta = np.ones(M) if math.isinf(p) else np.full(M, float(M) ** (-1.0 / p))
    inner = dict(settings)
    inner["p"] = math.inf  # one kernel: one solve, θ = 1
    tol_in = max(1e-3, floor)
    best_p, best_d, told_d, best_gap = math.inf, -math.inf, -math.inf, math.inf
    best: (
        tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
        | None
    ) = None
    witness: tuple[int, float, float, float] | None = None
    rows: list[tuple[float, float, float, int, float]] = []
    status = _core.Status.MAX_ITER
    stalled = 0
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (n_iter is the last value)
        Kt = _combine(G, theta)[None]
        inner["tol"] = tol_in
        B = np.empty((K, n))
        b0 = np.empty(K)
        for c in range(K):
            r = _core.fit("analytic", Kt, Y[c], inner, n_threads=n_threads)
            B[c] = feasible_dual(loss, Y[c], r.coef[0], C)
            b0[c] = r.intercept
        H = _products(G, B)  # K_m β_c
        forms = np.einsum("mik,ki->mk", H, B)  # β_cᵀ K_m β_c
        q = forms.sum(axis=1)
        neg = np.flatnonzero(q < 0.0)
        if len(neg) and witness is None:
            # §1.8: a form below its rounding bound proves a kernel indefinite.
            l1 = float(np.sum(np.abs(B).sum(axis=1) ** 2))
            ent = float(np.finfo(G.dtype).eps)
            for m in neg:
                top = float(np.max(np.diagonal(G[m])))
                bound = 4.0 * (n + 2) * _EPS * top * l1
                if q[m] < -bound:
                    witness = (int(m), float(q[m]), bound, ent * top * l1)
                    break
        q = np.maximum(q, 0.0)
        # Primal: A[c, m] = θ_m β_c, so f_c = K_θ β_c and s_m = θ_m sqrt(Σ_c β_cᵀK_mβ_c).
        F = np.tensordot(theta, H, axes=1)  # (n, K)
        b = np.array([best_intercept(loss, Y[c], F[:, c], float(b0[c])) for c in range(K)])
        data = C * sum(float(np.sum(_loss(loss, Y[c], F[:, c] + b[c]))) for c in range(K))
        s = theta * np.sqrt(q)
        primal = data + lp_penalty(s, p)
        dual = sum(conjugate_term(loss, Y[c], B[c], C) for c in range(K)) - dual_norm(q, p)
        if primal < best_p:
            best_p = primal
            best = (theta[:, None, None] * B[None], b, theta.copy(), s)
        # After a witness no dual value counts (§1.8); the gap as if every kernel were PSD
        # still tells the loop where it would have converged.
        told_d = max(told_d, dual)
        best_d = -math.inf if witness is not None else told_d
        gap = (best_p - told_d) / max(abs(best_p), 1e-12)
        active = int(np.count_nonzero(theta > 0))
        seconds = time.perf_counter() - started
        shown = -math.inf if witness is not None else dual
        rows.append((primal, shown, (best_p - best_d) / max(abs(best_p), 1e-12), active, seconds))
        if on_iteration is not None:
            on_iteration(*rows[-1])
        if gap <= tol:
            status = _core.Status.UNCERTIFIED if witness is not None else _core.Status.CONVERGED
            break
        # §3.3 (b): the inner accuracy follows the gap, tighter when the gap stops shrinking.
        if gap >= 0.9 * best_gap:
            tol_in = max(0.1 * tol_in, floor)
        # Stalled: no relative progress of 1e-9 for 10 iterations at the finest accuracy.
        stalled = stalled + 1 if tol_in == floor and gap >= best_gap * (1 - 1e-9) else 0
        tol_in = min(tol_in, max(0.1 * gap, floor))
        best_gap = min(best_gap, gap)
        if stalled >= 10:
            status = _core.Status.UNCERTIFIED if witness is not None else _core.Status.STALLED
            break
        # Kloft's eq. 17 on the block norms over the classes.
        if not math.isinf(p) and float(s.max(initial=0.0)) > 0.0:
            w = s ** (2.0 / (p + 1.0))
            theta = w / float(np.sum(w**p)) ** (1.0 / p)
    assert best is not None  # at least one iteration (max_iter ≥ 1)
    if witness is not None:
        status = _core.Status.UNCERTIFIED
    coef, intercept, theta_b, norms = best
    # Permute (M, K, n) → (K, M, n): a row of kernels per class, as one-vs-rest's.
    coef_k = np.ascontiguousarray(np.transpose(coef, (1, 0, 2)))
    return SharedFit(
        coef=coef_k,
        intercept=intercept,
        kernel_weights=theta_b,
        kernel_norms=norms,
        primal=best_p,
        dual=best_d,
        gap=(best_p - best_d) / max(abs(best_p), 1e-12),
        n_iter=it,
        status=status,
        converged=status == _core.Status.CONVERGED,
        history=np.asarray(rows, dtype=np.float64).reshape(-1, 5),
        psd_witness=witness,
    )
