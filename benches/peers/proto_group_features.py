"""Numpy prototype: group MKL (Nath et al.'s ``½ max_j (Σ_{k∈G_j} ‖f_k‖)²``) in feature space
by Newton steps on a smoothed penalty, against the ``mirror`` solver on the same blocks
(issue: MKL on explicit features; ``group`` was left out there).

The problem on explicit features ``K_k = Φ_k Φ_kᵀ`` is

    P(w, b) = C Σ_i ℓ(y_i, f_i) + ½ Ω(w)²,  Ω(w) = max_j Σ_{k∈G_j} ‖w_k‖,  f = Σ_k Φ_k w_k + b,

and its dual at a point ``ρ`` (``Σρ = 0``, in the conjugate's domain) is

    D(ρ) = −Σ_i c_i ℓ*(y_i, −ρ_i/c_i) − ½ (Σ_j max_{k∈G_j} ‖Φ_kᵀρ‖)²

(the dual norm of ``max_j Σ_k`` is ``Σ_j max_k``). The prototype smooths the three kinks at a
level ``μ``: the loss by its Moreau envelope (the hinge's Huber form, as ``prox_newton``
does), each norm as ``sqrt(‖w_k‖² + (μ a)²)``, the max as ``τ log Σ_j exp(S_j/τ)`` with
``τ = μ Ω_0`` (``Ω_0`` the scale of Ω at the first step), and takes damped Newton steps with an
exact line search on the smoothed objective, lowering ``μ`` by 0.3 once the Newton decrement
is below ``tol/4`` of it; every step is certified by the exact ``P`` and ``D`` above, at the
natural dual point ``ρ = −c ℓ_μ'(f)`` centred and scaled.

    python benches/peers/proto_group_features.py [--sizes 1000,2000] [--losses logistic,hinge]

With ``--rust`` the engine's ``solver="prox_newton"`` (the Rust port) replaces the prototype,
against ``mirror`` on the same blocks, each timed as the median of ``--repeats`` fits
(``mirror`` at ``--mirror-iter`` steps; ``--mirror-repeats 0`` leaves it out).
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import FeatureBank, Linear

FloatArray = NDArray[np.float64]


def data(n: int) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 100))
    w = np.zeros(100)
    w[:15] = rng.normal(size=15)
    t = X @ w + 0.5 * rng.normal(size=n)
    return X, np.where(t > 0, 1.0, -1.0)


def loss_parts(loss: str, y: FloatArray, z: FloatArray, mu: float) -> tuple[Any, Any, Any]:
    """Value, first and second derivative of ℓ_μ(y, z) per point (μ = 0: the loss)."""
    if loss == "logistic":
        m = y * z
        v = np.logaddexp(0.0, -m)
        s = 1.0 / (1.0 + np.exp(m))
        return v, -y * s, s * (1.0 - s)
    r = 1.0 - y * z
    if mu == 0.0:
        return np.maximum(r, 0.0), np.where(r > 0, -y, 0.0), np.zeros_like(r)
    v = np.where(r <= 0, 0.0, np.where(r < mu, r * r / (2 * mu), r - mu / 2))
    d = np.where(r <= 0, 0.0, np.where(r < mu, -y * r / mu, -y))
    h = np.where((r > 0) & (r < mu), 1.0 / mu, 0.0)
    return v, d, h


def conj_sum(loss: str, y: FloatArray, u: FloatArray) -> float:
    """Σ ℓ*(y_i, u_i), +inf outside the domain."""
    if loss == "logistic":
        a = -y * u
        if np.any((a < -1e-12) | (a > 1 + 1e-12)):
            return np.inf
        a = np.clip(a, 0, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(a > 0, a * np.log(a), 0.0) + np.where(a < 1, (1 - a) * np.log1p(-a), 0.0)
        return float(np.sum(t))
    a = -y * u
    if np.any((a < -1e-12) | (a > 1 + 1e-12)):
        return np.inf
    return float(-np.sum(a))


class Problem:
    def __init__(self, F: list[FloatArray], groups: list[list[int]], y: FloatArray, C: float,
                 loss: str) -> None:  # fmt: skip
        self.X = np.hstack(F)
        self.blocks = []
        off = 0
        for Fk in F:
            self.blocks.append(slice(off, off + Fk.shape[1]))
            off += Fk.shape[1]
        self.groups = groups
        self.y, self.C, self.loss = y, C, loss
        self.n, self.R = self.X.shape

    def norms(self, w: FloatArray) -> FloatArray:
        return np.array([np.linalg.norm(w[b]) for b in self.blocks])

    def omega(self, s: FloatArray) -> float:
        return max(sum(s[k] for k in g) for g in self.groups)

    def primal(self, w: FloatArray, b: float, mu: float = 0.0) -> float:
        z = self.X @ w + b
        v, _, _ = loss_parts(self.loss, self.y, z, mu)
        return float(self.C * v.sum() + 0.5 * self.omega(self.norms(w)) ** 2)

    def dual(self, rho: FloatArray, mu: float = 0.0) -> float:
        """Best multiple t ∈ [0, 1] of the centred point; with ``mu``, the dual of the problem
        with the loss's Moreau envelope (conjugate ``ℓ* + μu²/2``)."""
        # Clipped shift into the box 0 ≤ yρ ≤ C (both losses' domain) keeping Σρ = 0
        # (bisection on the shift).
        lo, hi = -self.C - 1, self.C + 1
        for _ in range(100):
            tau = 0.5 * (lo + hi)
            r = np.where(self.y > 0, np.clip(rho - tau, 0, self.C), np.clip(rho - tau, -self.C, 0))
            if r.sum() > 0:
                lo = tau
            else:
                hi = tau
        rho = r
        u = self.X.T @ rho
        dn = sum(max(np.linalg.norm(u[self.blocks[k]]) for k in g) for g in self.groups)

        def d(t: float) -> float:
            u = -t * rho / self.C
            conj = conj_sum(self.loss, self.y, u) + 0.5 * mu * float(u @ u)
            return -self.C * conj - 0.5 * (t * dn) ** 2

        ts = np.linspace(0, 1, 201)
        vals = [d(t) for t in ts]
        i = int(np.argmax(vals))
        lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, 200)]
        for _ in range(40):
            a, c = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if d(a) < d(c):
                lo = a
            else:
                hi = c
        return max(max(vals), d(0.5 * (lo + hi)))


def smoothed(pb: Problem, w: FloatArray, b: float, mu: float, a: float, tau: float,
             need: int) -> tuple[Any, ...]:  # fmt: skip
    """The smoothed objective, gradient and Hessian in (w, b)."""
    z = pb.X @ w + b
    v, d1, d2 = loss_parts(pb.loss, pb.y, z, mu if pb.loss == "hinge" else 0.0)
    eps = mu * a
    s = np.sqrt(pb.norms(w) ** 2 + eps**2)
    S = np.array([sum(s[k] for k in g) for g in pb.groups])
    mx = S.max()
    e = np.exp((S - mx) / tau)
    Om = mx + tau * np.log(e.sum())
    p = e / e.sum()
    val = pb.C * v.sum() + 0.5 * Om**2
    if need == 0:
        return (val,)
    R = pb.R
    gO = np.zeros(R)  # ∇Ω
    U = np.zeros((len(pb.groups), R))  # U_j: Σ_{k∈G_j} w_k/s_k on its coordinates
    for j, g in enumerate(pb.groups):
        for k in g:
            bl = pb.blocks[k]
            U[j, bl] = w[bl] / s[k]
    gO = p @ U
    grad = np.concatenate([pb.C * pb.X.T @ d1 + Om * gO, [pb.C * d1.sum()]])
    H = np.zeros((R + 1, R + 1))
    Xa = np.hstack([pb.X, np.ones((pb.n, 1))])
    H += pb.C * (Xa.T * d2) @ Xa
    hO = np.zeros((R, R))
    for j, g in enumerate(pb.groups):
        for k in g:
            bl = pb.blocks[k]
            u = w[bl] / s[k]
            hO[bl, bl] += p[j] * (np.eye(bl.stop - bl.start) - np.outer(u, u)) / s[k]
    hO += (U.T * p) @ U / tau - np.outer(gO, gO) / tau
    H[:R, :R] += np.outer(gO, gO) + Om * hO
    return val, grad, H


def fit_prototype(pb: Problem, tol: float, max_steps: int = 500) -> dict[str, Any]:
    b = 0.0
    # Scales from one Newton step on the loss plus ½‖w‖² at w = 0 (the ridge's first step):
    # a block norm's, a, and Ω's.
    _, d1, d2 = loss_parts(pb.loss, pb.y, np.zeros(pb.n), 1.0 if pb.loss == "hinge" else 0)
    if pb.loss == "hinge":
        d2 = np.ones_like(d2)  # every point in the zone of μ = 1
    d2 = np.maximum(d2, 1e-3)
    H0 = pb.C * (pb.X.T * d2) @ pb.X + np.eye(pb.R)
    w = -np.linalg.solve(H0, pb.C * pb.X.T @ d1)
    s0 = pb.norms(w)
    a = float(np.mean(s0))
    mu = 1.0
    omega0 = pb.omega(s0)
    col_scale = pb.C * np.concatenate([(pb.X**2).sum(0), [pb.n]]) / pb.R
    best_p, best_d = np.inf, -np.inf
    steps = 0
    kappa = 1e-3
    lowered = False
    t0 = time.perf_counter()
    while steps < max_steps:
        # The penalty's smoothing, lighter for the hinge, whose level gap reads the exact
        # penalty.
        light = 1e-2 if pb.loss == "hinge" else 1.0
        eps_scale = light * a
        tau = light * mu * omega0
        val, grad, H = smoothed(pb, w, b, mu, eps_scale, tau, 2)
        z = pb.X @ w + b
        _, d1, _ = loss_parts(pb.loss, pb.y, z, mu if pb.loss == "hinge" else 0.0)
        best_p = min(best_p, pb.primal(w, b))
        best_d = max(best_d, pb.dual(-pb.C * d1))
        gap = (best_p - best_d) / max(abs(best_p), 1e-300)
        if gap <= tol:
            break
        # Marquardt's damping per coordinate: its curvature were every point in the zone.
        Hd = H + kappa / max(mu, 1e-12) * np.diag(col_scale)
        step = -np.linalg.solve(Hd, grad)
        dec = -grad @ step
        if pb.loss == "hinge":
            # The smoothed problem's own gap (exact penalty, the envelope's dual), as
            # prox_newton's continuation: μ drops once that level is solved.
            lp, ld = pb.primal(w, b, mu), pb.dual(-pb.C * d1, mu)
            solved = (lp - ld) / abs(lp) <= 0.5 * tol
        else:
            solved = dec <= 0.25 * tol * abs(val)
        if solved and mu > 1e-12 and not lowered:
            # One level per step: a level whose zone is empty has a small decrement at once,
            # and lowering on it again would skip to μ ≈ 0, where the dual point is a vertex.
            mu *= 0.3
            lowered = True
            continue
        lowered = False
        # Exact line search on [0, 1] (golden section on the smoothed objective).
        lo, hi = 0.0, 1.0

        def f(t: float, w: FloatArray = w, b: float = b, step: FloatArray = step,
              mu: float = mu, tau: float = tau, e: float = eps_scale) -> float:  # fmt: skip
            return float(smoothed(pb, w + t * step[:-1], b + t * step[-1], mu, e, tau, 0)[0])

        if f(1.0) <= val - 1e-4 * dec:
            t = 1.0
        else:
            for _ in range(30):
                m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
                if f(m1) < f(m2):
                    hi = m2
                else:
                    lo = m1
            t = 0.5 * (lo + hi)
        kappa = max(kappa / 4, 1e-10) if t == 1.0 else kappa * 4
        w = w + t * step[:-1]
        b = b + t * step[-1]
        steps += 1
    return {"steps": steps, "gap": gap, "primal": best_p, "seconds": time.perf_counter() - t0}


def rust_rows(args: argparse.Namespace, loss: str, n: int, ids: list[int],
              F: list[FloatArray], y: FloatArray) -> str:  # fmt: skip
    """``prox_newton`` and ``mirror`` on the blocks ``F``: medians of the repeats."""

    def timed(solver: str, repeats: int, max_iter: int) -> tuple[float, Any]:
        times, m = [], None
        for _ in range(repeats):
            m = mk.MKLClassifier(kernels="precomputed", penalty="group", groups=ids, loss=loss,
                                 C=1.0, tol=args.tol, max_iter=max_iter, solver=solver)  # fmt: skip
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(F, y)
            times.append(time.perf_counter() - t)
        return float(np.median(times)), m

    t_ours, ours = timed("prox_newton", args.repeats, 2000)
    row = (f"| {loss} | {n} | {t_ours:.3f} s | {ours.n_iter_} | {ours.duality_gap_:.1e} | "
           f"{ours.primal_objective_:.8g} |")  # fmt: skip
    if args.mirror_repeats > 0:
        t_m, m = timed("mirror", args.mirror_repeats, args.mirror_iter)
        row += (f" {t_m:.3f} s | {m.n_iter_} | {m.duality_gap_:.1e} | "
                f"{m.primal_objective_:.8g} | {t_ours / t_m:.3f} |")  # fmt: skip
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,2000")
    ap.add_argument("--losses", default="logistic,hinge")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--mirror-max", type=int, default=2000)
    ap.add_argument("--rust", action="store_true", help="the engine's prox_newton")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mirror-repeats", type=int, default=3)
    ap.add_argument("--mirror-iter", type=int, default=60)
    args = ap.parse_args()
    groups = [list(range(5 * j, 5 * j + 5)) for j in range(4)]  # 4 groups of 5 kernels
    ids = [j for j, g in enumerate(groups) for _ in g]
    for loss in args.losses.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            X, y = data(n)
            bank = FeatureBank(
                [Linear(features=list(range(k, k + 5))) for k in range(0, 100, 5)],
                normalize="none",
            )
            F = [np.asarray(f) for f in bank.fit_transform(X)]
            if args.rust:
                print(rust_rows(args, loss, n, ids, F, y), flush=True)
                continue
            pb = Problem(F, groups, y, 1.0, loss)
            r = fit_prototype(pb, args.tol)
            row = (f"{loss} n={n}: prototype {r['seconds']:.3f}s {r['steps']} steps "
                   f"gap {r['gap']:.1e} P {r['primal']:.8g}")  # fmt: skip
            if n <= args.mirror_max:
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = mk.MKLClassifier(kernels="precomputed", penalty="group", groups=ids,
                                         loss=loss, C=1.0, tol=args.tol, max_iter=60)  # fmt: skip
                    m.fit(F, y)
                row += (f" | mirror {time.perf_counter() - t:.3f}s {m.n_iter_} steps gap "
                        f"{m.duality_gap_:.1e} P {m.primal_objective_:.8g}")  # fmt: skip
            print(row, flush=True)


if __name__ == "__main__":
    main()
