"""One set of kernel weights shared by all classes (``multi_class="shared"``).

The one-vs-rest problems coupled through one θ (docs/mathematics.md §3.8): one loop in
Python around the engine's single-kernel solves, with the whole problem's certificate
computed here, and per penalty the kernel weights of the solves and their update: Kloft's
Algorithm 1 (``lp``), the same alternation with θ = s (``l1``, ``elasticnet``), Nath's
mirror descent over a product of simplexes (``group``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._config import Setting
from ._record import FitRecord
from .exceptions import InvalidParameterError, NonFiniteError, NumericalError

#: The losses of a shared fit (the classifier's).
SHARED_LOSSES = ("hinge", "squared_hinge", "logistic")

#: The penalties a shared fit solves with a certificate (docs/mathematics.md §3.8).
SHARED_PENALTIES = ("lp", "l1", "elasticnet", "group")

_EPS = float(np.finfo(np.float64).eps)

#: Per-sample costs ``c_i = C w_i``, or the scalar ``C`` of an unweighted fit.
Costs: TypeAlias = "float | NDArray[np.float64]"


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


def _weighted_sum(v: NDArray[np.float64], w: NDArray[np.float64] | None) -> float:
    """``Σ_i w_i v_i`` (``Σ_i v_i`` without weights)."""
    return float(np.sum(v) if w is None else w @ v)


def _derivative(
    loss: str, y: NDArray[np.float64], z: NDArray[np.float64], w: NDArray[np.float64] | None
) -> float:
    """``Σ_i w_i ∂_z ℓ(y_i, z_i)`` (a subgradient for the hinge), non-decreasing in a shift
    of z."""
    m = y * z
    if loss == "hinge":
        return _weighted_sum(np.where(m < 1.0, -y, 0.0), w)
    if loss == "squared_hinge":
        return _weighted_sum(-y * np.maximum(0.0, 1.0 - m), w)
    return _weighted_sum(-y / (1.0 + np.exp(np.clip(m, -700.0, 700.0))), w)


def best_intercept(
    loss: str,
    y: NDArray[np.float64],
    f: NDArray[np.float64],
    b0: float,
    w: NDArray[np.float64] | None = None,
) -> float:
    """The ``b`` minimising ``Σ_i w_i ℓ(y_i, f_i + b)`` (§1.1, §0.2's sample weights):
    bisection on the monotone derivative, bracketed from ``b0``; ``b0`` is kept if it is no
    worse (the hinge's minimum is a kink, which bisection reaches only to its width)."""
    lo, hi, step = b0, b0, 1.0
    for _ in range(200):
        if _derivative(loss, y, f + lo, w) <= 0.0:
            break
        lo -= step
        step *= 2.0
    step = 1.0
    for _ in range(200):
        if _derivative(loss, y, f + hi, w) >= 0.0:
            break
        hi += step
        step *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if _derivative(loss, y, f + mid, w) < 0.0:
            lo = mid
        else:
            hi = mid
    best = b0
    value = _weighted_sum(_loss(loss, y, f + b0), w)
    for b in (lo, hi):
        v = _weighted_sum(_loss(loss, y, f + b), w)
        if v < value:
            best, value = b, v
    return best


def feasible_dual(
    loss: str, y: NDArray[np.float64], beta: NDArray[np.float64], c: Costs
) -> NDArray[np.float64]:
    """``β`` made a feasible point of the dual (§1.4 steps 1–2): ``yβ_i`` clipped to the
    conjugate's domain (``[0, c_i]``, ``c_i = C w_i``; ``[0, ∞)`` for the squared hinge), then
    centred inside it so that ``Σβ = 0``. A solver's ``β`` is feasible up to rounding, so this
    moves it by rounding."""
    top = math.inf if loss == "squared_hinge" else c
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


def conjugate_term(loss: str, y: NDArray[np.float64], beta: NDArray[np.float64], c: Costs) -> float:
    """``−Σ_i c_i ℓ*(y_i, −β_i/c_i)`` at a feasible ``β`` (§0.3, ``s = yβ/c``; ``c_i = C w_i``,
    §0.2's sample weights)."""
    a = y * beta
    if loss == "hinge":
        return float(a.sum())
    if loss == "squared_hinge":
        return float(np.sum(a - a * a / (2.0 * c)))
    s = np.clip(a / c, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = np.where(s > 0.0, s * np.log(np.where(s > 0.0, s, 1.0)), 0.0)
        xr = np.where(s < 1.0, (1.0 - s) * np.log1p(-np.where(s < 1.0, s, 0.0)), 0.0)
    return float(-np.sum(c * (xs + xr)))


def sparse_dual(
    loss: str,
    Y: NDArray[np.float64],
    B: NDArray[np.float64],
    c: Costs,
    t: NDArray[np.float64],
    r1: float,
    r2: float,
) -> float:
    """The ``l1`` (``r2 = 0``) or ``elasticnet`` dual at the best multiple
    ``τ (β_1, …, β_K)``, ``τ ∈ [0, T]`` (§1.4 step 3 on the norms ``t_m`` over the classes of
    §3.8): the feasible ``β_c`` stay in their domains (intervals holding 0); for ``l1``
    ``T = 1/max(1, max_m t_m)`` meets the norm constraint ``t_m ≤ 1``, for ``elasticnet``
    ``T = 1`` and ``D`` pays ``Σ_m max(0, τ t_m − r1)² / (2 r2)``. ``τ ↦ D(τβ)`` is concave:
    golden-section search, ``T`` kept unless it found better (the ``l1`` hinge's ``D`` is
    linear in τ, so ``T`` is its maximum)."""
    top = 1.0 / max(1.0, float(t.max(initial=0.0))) if r2 == 0.0 else 1.0

    def value(tau: float) -> float:
        v = sum(conjugate_term(loss, Y[k], tau * B[k], c) for k in range(len(Y)))
        if r2 > 0.0:
            v -= float(np.sum(np.maximum(0.0, tau * t - r1) ** 2)) / (2.0 * r2)
        return v

    best = value(top)
    if loss == "hinge" and r2 == 0.0:
        return best
    inv = 0.5 * (math.sqrt(5.0) - 1.0)
    lo, hi = 0.0, top
    x1, x2 = hi - inv * (hi - lo), lo + inv * (hi - lo)
    v1, v2 = value(x1), value(x2)
    for _ in range(80):
        if v1 < v2:
            lo, x1, v1 = x1, x2, v2
            x2 = lo + inv * (hi - lo)
            v2 = value(x2)
        else:
            hi, x2, v2 = x2, x1, v1
            x1 = hi - inv * (hi - lo)
            v1 = value(x1)
    return max(best, v1, v2)


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


def _conjugates(loss: str, Y: NDArray[np.float64], B: NDArray[np.float64], c: Costs) -> float:
    """``−Σ_c Σ_i c_i ℓ*(y_i^c, −β_ci/c_i)``: the classes' conjugate terms summed (§3.8)."""
    return sum(conjugate_term(loss, Y[k], B[k], c) for k in range(len(Y)))


class _Penalty:
    """What a penalty adds to the shared loop of :func:`fit_shared`: the kernel weights θ̃ of
    the single-kernel solves (``A^c[m] = θ̃_m β_c``), ``Ω(s)`` of the primal, the dual at the
    classes' summed forms ``q_m = Σ_c β_cᵀ K_m β_c``, the weights reported, and the update of
    the weights from the iterate."""

    #: Iterations without progress at the finest inner accuracy before the fit is Stalled.
    patience = 10

    def weights(self) -> NDArray[np.float64]:
        raise NotImplementedError

    def value(self, s: NDArray[np.float64]) -> float:
        raise NotImplementedError

    def dual(
        self, loss: str, Y: NDArray[np.float64], B: NDArray[np.float64], c: Costs,
        q: NDArray[np.float64],
    ) -> float:  # fmt: skip
        raise NotImplementedError

    def reported(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def update(self, s: NDArray[np.float64], q: NDArray[np.float64], primal: float) -> None:
        raise NotImplementedError


class _Lp(_Penalty):
    """``½ (Σ_m s_m^q)^{2/q}``: Kloft's eq. 17 on the block norms over the classes (§3.8);
    θ uniform with unit p-norm, θ ≡ 1 at p = ∞ (one solve per class)."""

    def __init__(self, p: float, M: int) -> None:
        self.p = p
        self.theta: NDArray[np.float64] = (
            np.ones(M) if math.isinf(p) else np.full(M, float(M) ** (-1.0 / p))
        )

    def weights(self) -> NDArray[np.float64]:
        return self.theta

    def value(self, s: NDArray[np.float64]) -> float:
        return lp_penalty(s, self.p)

    def dual(
        self, loss: str, Y: NDArray[np.float64], B: NDArray[np.float64], c: Costs,
        q: NDArray[np.float64],
    ) -> float:  # fmt: skip
        return _conjugates(loss, Y, B, c) - dual_norm(q, self.p)

    def reported(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = self.theta.copy()
        return out

    def update(self, s: NDArray[np.float64], q: NDArray[np.float64], primal: float) -> None:
        if not math.isinf(self.p):
            v = s ** (2.0 / (self.p + 1.0))
            self.theta = v / float(np.sum(v**self.p)) ** (1.0 / self.p)


class _Sparse(_Penalty):
    """``r1 Σ s + r2/2 Σ s²`` (``l1`` at r1 = 1): θ = s, the solves on
    ``θ̃ = θ / (r1 + r2 θ)`` (§3.8); any θ > 0 starts it, its scale is s's from then on."""

    def __init__(self, r1: float, M: int) -> None:
        self.r1, self.r2 = r1, 1.0 - r1
        self.theta: NDArray[np.float64] = np.ones(M)

    def weights(self) -> NDArray[np.float64]:
        if self.r1 == 0.0:
            # The sum kernel, whatever θ.
            return np.full(len(self.theta), 1.0 / self.r2)
        out: NDArray[np.float64] = self.theta / (self.r1 + self.r2 * self.theta)
        return out

    def value(self, s: NDArray[np.float64]) -> float:
        return self.r1 * float(s.sum()) + 0.5 * self.r2 * float(np.sum(s * s))

    def dual(
        self, loss: str, Y: NDArray[np.float64], B: NDArray[np.float64], c: Costs,
        q: NDArray[np.float64],
    ) -> float:  # fmt: skip
        return sparse_dual(loss, Y, B, c, np.sqrt(q), self.r1, self.r2)

    def reported(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        # d / Σ d on the simplex, as the other l1 / elasticnet solvers report (§2.9).
        d = s / (self.r1 + self.r2 * s)
        total = float(d.sum())
        out: NDArray[np.float64] = d / total if total > 0.0 else np.full(len(s), 1.0 / len(s))
        return out

    def update(self, s: NDArray[np.float64], q: NDArray[np.float64], primal: float) -> None:
        self.theta = s.copy()  # the minimiser of ½ Σ (s²/θ + θ)


#: A group whose ``√W_j`` is below this fraction of the largest leaves ``K_eff`` (γ_j = 0),
#: as in the engine's mirror solver (§4, "γ cutoff").
_GROUP_CUTOFF = 1e-6

#: A weight below this (its group's λ sums to one) is set to zero: the multiplicative step
#: could never bring it back up, and the solves no longer read its kernel.
_PRUNE = 1e-10

#: The longest adaptive step, ``η ≤ 8/‖g‖_∞`` (the engine's bound, §4).
_MAX_SCALE = 8.0


class _Group(_Penalty):
    """``½ max_j (Σ_{k∈G_j} s_k)²``: [Nath]'s alternation (§4, §3.8) on the saddle form of
    §1.5 with the classes' forms summed, ``θ_jk = λ_jk/γ_j``: γ in closed form (eq. 6,
    ``γ_j ∝ √W_j``, ``W_j = Σ_k λ_jk q_jk``), then one entropic mirror step on each group's
    simplex (eq. 8, gradient ``g_jk = −½ q_jk/γ_j``) with §4's adaptive step
    ``η = c_t/‖g‖_∞``: ``c_t`` × 1.5 after an iterate that did not raise the primal, × 0.5
    after one that did, between [Nath]'s ``√(ln max_j n_j)/√t`` and 8."""

    # Mirror descent is not monotone: as the engine's, a stall only after 50 iterations.
    patience = 50

    def __init__(self, ids: Sequence[int]) -> None:
        # ``ids``: a group id 0..J−1 per kernel, every group non-empty (``group_ids`` checked).
        self.ids = np.asarray(ids, dtype=np.intp)
        J = int(self.ids.max()) + 1
        self.members = [np.flatnonzero(self.ids == j) for j in range(J)]
        sizes = np.array([len(g) for g in self.members], dtype=np.float64)
        self.lam = 1.0 / sizes[self.ids]
        self.gamma = np.full(J, 1.0 / J)
        self.scale, self.last, self.t = 1.0, math.inf, 0
        self.log_n = math.log(float(sizes.max()))

    def weights(self) -> NDArray[np.float64]:
        g = self.gamma[self.ids]
        out: NDArray[np.float64] = np.divide(
            self.lam, g, out=np.zeros_like(self.lam), where=(g > 0.0) & (self.lam > 0.0)
        )
        return out

    def _sums(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array([float(v[g].sum()) for g in self.members])

    def value(self, s: NDArray[np.float64]) -> float:
        return 0.5 * float(self._sums(s).max()) ** 2

    def dual(
        self, loss: str, Y: NDArray[np.float64], B: NDArray[np.float64], c: Costs,
        q: NDArray[np.float64],
    ) -> float:  # fmt: skip
        # §1.5 (§1.2's table): the dual norm Σ_j max_{k∈G_j} t_k of t_k = √q_k.
        t = np.sqrt(q)
        total = sum(float(t[g].max()) for g in self.members)
        return _conjugates(loss, Y, B, c) - 0.5 * total * total

    def reported(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        # θ normalised to the simplex, as the engine's group fit reports it (§4).
        theta = self.weights()
        out: NDArray[np.float64] = theta / float(theta.sum())
        return out

    def update(self, s: NDArray[np.float64], q: NDArray[np.float64], primal: float) -> None:
        # γ: eq. 6 at the λ and forms of this iterate.
        roots = np.sqrt(self._sums(self.lam * q))
        top = float(roots.max())
        if top > 0.0 and math.isfinite(top):
            kept = np.where(roots > _GROUP_CUTOFF * top, roots, 0.0)
            self.gamma = kept / float(kept.sum())
        self.t += 1
        if self.t > 1:
            floor = math.sqrt(self.log_n) / math.sqrt(self.t)
            factor = 0.5 if primal > self.last else 1.5
            self.scale = min(max(self.scale * factor, min(floor, _MAX_SCALE)), _MAX_SCALE)
        self.last = primal
        g = self.gamma[self.ids]
        grad = np.divide(-0.5 * q, g, out=np.zeros_like(q), where=g > 0.0)
        live = self.lam > 0.0
        g_inf = float(np.abs(grad[live]).max(initial=0.0))
        if not (g_inf > 0.0 and math.isfinite(g_inf)):
            return
        eta = self.scale / g_inf
        for members in self.members:
            k = members[self.lam[members] > 0.0]
            # Shifted by the group's smallest g: no overflow, the same step after normalising.
            step = self.lam[k] * np.exp(-eta * (grad[k] - float(grad[k].min())))
            step /= float(step.sum())
            self.lam[k] = np.where(step < _PRUNE, 0.0, step)


def _penalty(
    penalty: str, M: int, p: float, l1_ratio: float, groups: Sequence[int] | None
) -> _Penalty:
    if penalty == "group":
        if groups is None:
            raise InvalidParameterError(
                "penalty='group' needs groups (a group id per kernel)", parameter="groups"
            )
        return _Group(groups)
    if penalty in ("l1", "elasticnet"):
        return _Sparse(1.0 if penalty == "l1" else float(l1_ratio), M)
    return _Lp(p, M)


def fit_shared(
    G: NDArray[np.float64] | NDArray[np.float32],
    Y: NDArray[np.float64],
    settings: dict[str, Setting],
    *,
    penalty: str = "lp",
    p: float,
    l1_ratio: float = 1.0,
    groups: Sequence[int] | None = None,
    n_threads: int,
    sample_weight: NDArray[np.float64] | None = None,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
) -> FitRecord:
    """The shared problem of ``G`` (M, n, n) and the one-vs-rest targets ``Y`` (K, n)
    (docs/mathematics.md §3.8). ``settings``: the engine's ``analytic`` settings (C, loss,
    tol, max_iter, inner_tol); each iteration solves each class's problem on
    ``K_θ̃ = Σ_m θ̃_m K_m`` by one single-kernel engine fit, accurate to a tolerance that
    follows the outer gap, certifies the whole problem and updates θ̃. ``sample_weight``:
    ``w_i > 0`` on every sample's loss in every class (§0.2).

    ``penalty="lp"``: Kloft's Algorithm 1 on the block norms over the classes. ``"l1"``
    (``Σ_m s_m``, unsquared) alternates the same solves with ``θ_m = s_m``, the minimiser of
    ``½ Σ_m (s_m²/θ_m + θ_m)``, whose minimum over θ is ``Σ_m s_m``; ``"elasticnet"``
    (``r1 Σ s + r2/2 Σ s²``, ``r1 = l1_ratio``, ``r2 = 1 − r1``) the same on
    ``θ̃_m = θ_m / (r1 + r2 θ_m)``. Their duals are §1.4's, the forms summed over the
    classes. ``"group"`` (``½ max_j (Σ_{k∈G_j} s_k)²``, ``groups`` the group id ``0..J−1`` of
    every kernel): [Nath]'s mirror descent on ``θ̃_jk = λ_jk/γ_j`` (§4), its dual §1.5's with
    the forms summed. ``p`` is used by ``lp`` only.

    Returns one record with a leading class axis: ``coef`` (K, M, n) with
    ``coef[c, m] = θ̃_m β_c``, ``intercept`` (K,); ``kernel_weights`` is θ (``lp``, unit
    p-norm), ``d / Σ d``, ``d_m = s_m / (r1 + r2 s_m)`` (``l1`` / ``elasticnet``, on the
    simplex, as the other solvers of these penalties report, §2.9) or ``θ̃ / Σ θ̃``
    (``group``, as the engine's group fit, §4)."""
    started = time.perf_counter()
    M, n = int(G.shape[0]), int(G.shape[1])
    K = int(Y.shape[0])
    C = float(settings["C"])  # type: ignore[arg-type]
    loss = str(settings["loss"])
    tol = float(settings["tol"])  # type: ignore[arg-type]
    max_iter = int(settings["max_iter"])  # type: ignore[arg-type]
    floor = min(float(settings["inner_tol"]), 0.1 * tol)  # type: ignore[arg-type]
    w = None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
    costs: Costs = C if w is None else C * w
    omega = _penalty(penalty, M, p, l1_ratio, groups)
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
        kt = omega.weights()
        Kt = _combine(G, kt)[None]
        inner["tol"] = tol_in
        engine = _core.Settings("analytic", inner)
        B = np.empty((K, n))
        b0 = np.empty(K)
        for c in range(K):
            r = _core.fit(engine, Kt, Y[c], n_threads=n_threads, sample_weight=w)
            B[c] = feasible_dual(loss, Y[c], r.coef[0], costs)
            b0[c] = r.intercept
        H = _products(G, B)  # K_m β_c
        forms = np.einsum("mik,ki->mk", H, B)  # β_cᵀ K_m β_c
        q = forms.sum(axis=1)
        neg = np.flatnonzero(q < 0.0)
        if len(neg) and witness is None:
            # §1.8: a form below its rounding bound proves a kernel indefinite.
            mass = float(np.sum(np.abs(B).sum(axis=1) ** 2))
            ent = float(np.finfo(G.dtype).eps)
            for m in neg:
                top = float(np.max(np.diagonal(G[m])))
                bound = 4.0 * (n + 2) * _EPS * top * mass
                if q[m] < -bound:
                    witness = (int(m), float(q[m]), bound, ent * top * mass)
                    break
        q = np.maximum(q, 0.0)
        # Primal: A[c, m] = θ̃_m β_c, so f_c = K_θ̃ β_c and s_m = θ̃_m sqrt(Σ_c β_cᵀK_mβ_c).
        F = np.tensordot(kt, H, axes=1)  # (n, K)
        b = np.array([best_intercept(loss, Y[c], F[:, c], float(b0[c]), w) for c in range(K)])
        data = C * sum(_weighted_sum(_loss(loss, Y[c], F[:, c] + b[c]), w) for c in range(K))
        s = kt * np.sqrt(q)
        primal = data + omega.value(s)
        dual = omega.dual(loss, Y, B, costs, q)
        if primal < best_p:
            best_p = primal
            best = (kt[:, None, None] * B[None], b, omega.reported(s), s)
        # After a witness no dual value counts (§1.8); the gap as if every kernel were PSD
        # still tells the loop where it would have converged.
        told_d = max(told_d, dual)
        best_d = -math.inf if witness is not None else told_d
        gap = (best_p - told_d) / max(abs(best_p), 1e-12)
        active = int(np.count_nonzero(kt > 0))
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
        # Stalled: no relative progress of 1e-9 for `patience` iterations at the finest
        # accuracy.
        stalled = stalled + 1 if tol_in == floor and gap >= best_gap * (1 - 1e-9) else 0
        tol_in = min(tol_in, max(0.1 * gap, floor))
        best_gap = min(best_gap, gap)
        if stalled >= omega.patience:
            status = _core.Status.UNCERTIFIED if witness is not None else _core.Status.STALLED
            break
        if float(s.max(initial=0.0)) > 0.0:
            omega.update(s, q, primal)
    if best is None:  # no iteration had a finite primal objective
        raise _no_finite_iterate(G, it)
    if witness is not None:
        status = _core.Status.UNCERTIFIED
    coef, intercept, theta_b, norms = best
    # Permute (M, K, n) → (K, M, n): a row of kernels per class, as one-vs-rest's.
    coef_k = np.ascontiguousarray(np.transpose(coef, (1, 0, 2)))
    return FitRecord(
        coef=coef_k,
        intercept=intercept,
        kernel_weights=theta_b,
        kernel_norms=norms,
        primal=best_p,
        dual=best_d,
        gap=(best_p - best_d) / max(abs(best_p), 1e-12),
        n_iter=it,
        status_code=int(status),
        converged=status == _core.Status.CONVERGED,
        history=np.asarray(rows, dtype=np.float64).reshape(-1, 5),
        feature_weights=np.empty(0),
        psd_witness=witness,
    )


def _no_finite_iterate(G: NDArray[np.float64] | NDArray[np.float32], n_iter: int) -> Exception:
    """The error of a shared fit none of whose ``n_iter`` iterations had a finite primal
    objective: a :class:`~multikernel.exceptions.NonFiniteError` naming the first non-finite
    entry of the stack (which ``check_input=False`` let through), else a
    :class:`~multikernel.exceptions.NumericalError`."""
    for m in range(G.shape[0]):
        bad = np.argwhere(~np.isfinite(G[m]))
        if len(bad):
            i, j = (int(v) for v in bad[0])
            return NonFiniteError(
                f"multi_class='shared': kernel {m} contains NaN or infinity (first at entry "
                f"[{i}, {j}]), and no iteration had a finite objective; check_input=False "
                "skips the check of the stack",
                kernel=m,
                entry=(i, j),
            )
    return NumericalError(
        f"multi_class='shared': none of the {n_iter} iterations had a finite primal "
        "objective (C or the kernels' scale may be extreme: normalize the kernels or lower C)"
    )
