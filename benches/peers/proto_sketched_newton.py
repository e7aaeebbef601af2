"""Numpy prototype for the large case of the feature-space issue: which solver design can fit
20 Gaussian kernels × 100 Nyström features at n = 10⁵ (R = 2000 columns in 20 blocks), ``l1``
(the group lasso over the blocks), logistic loss, C = 1, to a relative duality gap of 1e-3 in
a few seconds.

The problem is ``P(w, b) = C Σ_i log(1 + exp(-y_i (G_i w + b))) + Σ_m ‖w_m‖`` and the
certificate is the one of ``docs/mathematics.md`` §1.1 and §1.4: the natural dual point
``ρ = -C ℓ'(f + b)`` at the best intercept, centred (``Σ ρ = 0``), scaled by the best
``t ≤ 1 / max(1, max_m ‖G_mᵀρ‖)``, and ``gap = (P_best - D_best) / max(|P_best|, 1e-12)``.

The features are built with numpy only, as ``features_vs_skglm.py``'s ``nystroem_case``
builds its data (two-ring data, d = 20, widths ``geomspace(1, 30, 20)`` each on 5 random
features, ``exp(-‖x - x'‖² / (2σ²))``), except that the 100 Nyström landmarks of each kernel
are drawn uniformly (``FeatureBank(landmarks="uniform")``-like) rather than pivoted; the map is
``L⁻¹ k(P, x)`` with ``K_PP = LLᵀ`` (``K_PP^{-1/2}`` up to a rotation of the block, which the
group lasso does not see) and each block is scaled to unit mean diagonal (``mean_diag``). The
features of n = 10⁵ are cached as a C-ordered ``.npy`` (1.6 GB) under ``--cache``; a smaller
``--n`` takes the first rows of that matrix.

Methods (``--method``), all from ``w = 0`` at the best intercept:

* ``newton``: proximal Newton with the exact Hessian ``C [G, 1]ᵀ diag(ℓ'') [G, 1]`` of all
  blocks (the working set of ``prox_newton`` when 18 of 20 kernels are active), the model solved
  (to a block violation of 1e-3 of the point's) by rounds of cyclic exact block minimisation and
  Newton on the active blocks (cyclic descent with Anderson alone needed 1000 epochs a step
  and 28 Newton steps at n = 2·10⁴), Armijo backtracking on P;
* ``sketch``: the same with the Hessian of ``--s`` uniformly drawn rows scaled by n/s, drawn
  anew every ``--refresh`` steps (reused as a fixed metric in between); ``--s 2500,5000,10000``
  is a schedule (the rows of step 1, 2, 3 and after; 0 keeps the previous Hessian);
* ``lagged``: the exact Hessian formed every ``--refresh`` steps and reused in between;
* ``bcd``: first-order block descent on P itself, each block step the exact minimiser of the
  majorant with metric ``C/4 G_mᵀG_m`` (formed once), Anderson extrapolation of the iterates
  every 5 epochs, the certificate every 5 epochs.

``--f32`` forms the Hessians in float32 from a float32 copy of the features. Everything is
timed on the cores numpy is given; for the one-core numbers of the issue run it as

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benches/peers/proto_sketched_newton.py --n 20000 --method sketch --s 5000

A pass is one read of all the features (``G v`` or ``Gᵀ r``; a block read counts 1/20). The
script prints one line per iteration (time, passes, Hessian rows, gap, P) and a summary with
the time at which the gap first reached ``--report`` (1e-3); ``--tol`` is where it stops.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve, cholesky, eigh, solve_triangular
from scipy.linalg.blas import dsyrk, ssyrk

FloatArray = NDArray[np.float64]
M, W = 20, 100  # kernels, features per kernel
N_FULL = 100_000
DEBUG = False
BLOCKS = [slice(m * W, (m + 1) * W) for m in range(M)]


# --------------------------------------------------------------------------------------------
# Data


def two_rings(n: int = N_FULL) -> tuple[FloatArray, FloatArray, list[list[int]], FloatArray]:
    """``nystroem_case``'s data, drawn in the same order from the same seed."""
    rng = np.random.default_rng(0)
    d = 20
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, d)) * np.where(y > 0, 1.0, 2.0)[:, None] ** 0.5
    X[:, :2] += np.where(y > 0, 0.3, 0.0)[:, None]
    widths = np.geomspace(1.0, 30.0, 20)
    feats = [sorted(rng.choice(d, 5, replace=False).tolist()) for _ in widths]
    return X, y, feats, widths


def gaussian(A: FloatArray, B: FloatArray, sigma: float) -> FloatArray:
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-np.maximum(d2, 0.0) / (2.0 * sigma * sigma))


def build(cache: Path) -> tuple[FloatArray, FloatArray]:
    gpath, ypath = cache / "G_nystroem_1e5.npy", cache / "y_nystroem_1e5.npy"
    if gpath.exists() and ypath.exists():
        return np.load(gpath), np.load(ypath)
    X, y, feats, widths = two_rings()
    n = X.shape[0]
    lrng = np.random.default_rng(1)
    G = np.empty((n, M * W))
    for m, (cols, sigma) in enumerate(zip(feats, widths, strict=True)):
        Xm = X[:, cols]
        P = Xm[lrng.choice(n, W, replace=False)]
        K = gaussian(P, P, float(sigma))
        ridge = 1e-10 * np.mean(np.diag(K))
        while True:  # the relative ridge of nystroem_factor, grown tenfold until it factors
            try:
                L = cholesky(K + ridge * np.eye(W), lower=True)
                break
            except np.linalg.LinAlgError:
                ridge *= 10.0
        for s in range(0, n, 10_000):
            k = gaussian(Xm[s : s + 10_000], P, float(sigma))
            G[s : s + 10_000, BLOCKS[m]] = solve_triangular(L, k.T, lower=True).T
        blk = G[:, BLOCKS[m]]
        blk *= 1.0 / np.sqrt(np.einsum("ij,ij->", blk, blk) / n)  # mean_diag normalisation
    cache.mkdir(parents=True, exist_ok=True)
    np.save(gpath, G)
    np.save(ypath, y)
    return G, y


# --------------------------------------------------------------------------------------------
# The problem, its certificate and the bookkeeping


def sigmoid(z: FloatArray) -> FloatArray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def xlogx(a: FloatArray) -> FloatArray:
    return np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)


def penalty(w: FloatArray) -> float:
    return float(np.linalg.norm(w.reshape(M, W), axis=1).sum())


class Problem:
    """The features, the labels, C, and the counters of feature reads and timing."""

    def __init__(self, G: FloatArray, y: FloatArray, C: float) -> None:
        self.G, self.y, self.C = G, y, C
        self.n = G.shape[0]
        self.passes = 0.0
        self.hrows = 0
        self.colsum = G.sum(0)  # Gᵀ1, for centring Gᵀρ (one pass, before the clock)
        self.best_p, self.best_d = np.inf, -np.inf
        self.best_w: FloatArray | None = None
        self.best_b = 0.0
        self.log: list[tuple[float, float, int, float, float]] = []
        self.t0 = time.perf_counter()
        self.G32: NDArray[np.float32] | None = None

    def matvec(self, v: FloatArray) -> FloatArray:
        self.passes += 1
        return self.G @ v

    def rmatvec(self, r: FloatArray) -> FloatArray:
        self.passes += 1
        return self.G.T @ r

    def loss(self, f: FloatArray) -> float:
        return float(self.C * np.logaddexp(0.0, -self.y * f).sum())

    def dloss(self, f: FloatArray) -> FloatArray:
        """C ℓ'(f)."""
        return -self.C * self.y * sigmoid(-self.y * f)

    def best_intercept(self, f0: FloatArray, b: float) -> float:
        """Newton on the convex 1-D loss in b, with backtracking (no feature read)."""
        y = self.y
        cur = np.logaddexp(0.0, -y * (f0 + b)).sum()
        for _ in range(100):
            s = sigmoid(-y * (f0 + b))
            g = -(y * s).sum()
            h = (s * (1.0 - s)).sum()
            step = g / max(h, 1e-300)
            t = 1.0
            while True:
                nb = b - t * step
                new = np.logaddexp(0.0, -y * (f0 + nb)).sum()
                if new <= cur or t < 1e-12:
                    break
                t *= 0.5
            done = abs(t * step) <= 1e-13 * (1.0 + abs(b)) or new >= cur
            if new <= cur:
                b, cur = nb, new
            if done:
                break
        return b

    def certify(self, w: FloatArray, f0: FloatArray, b: float) -> tuple[float, FloatArray]:
        """P at (w, b), the gradient C Gᵀℓ'(f) (one pass) and the gap of the best P and D seen."""
        f = f0 + b
        r = self.dloss(f)
        g = self.rmatvec(r)
        p = self.loss(f) + penalty(w)
        rho = -r
        tau = rho.mean()
        lo = np.where(self.y > 0, 0.0, -self.C)
        hi = np.where(self.y > 0, self.C, 0.0)
        rc = rho - tau
        if np.any((rc < lo) | (rc > hi)):  # clipped centring (§1.4); never met at the best b
            a_lo, a_hi = tau - 2 * self.C, tau + 2 * self.C
            for _ in range(200):
                mid = 0.5 * (a_lo + a_hi)
                if np.clip(rho - mid, lo, hi).sum() > 0:
                    a_lo = mid
                else:
                    a_hi = mid
            rc = np.clip(rho - 0.5 * (a_lo + a_hi), lo, hi)
            grho = self.rmatvec(rc)
        else:
            grho = -g - tau * self.colsum
        big = float(np.linalg.norm(grho.reshape(M, W), axis=1).max())
        a = self.y * rc / self.C  # in [0, 1]

        def dual(t: float) -> float:
            ta = t * a
            return float(-self.C * (xlogx(ta) + xlogx(1.0 - ta)).sum())

        T = 1.0 / max(1.0, big)
        t, d = T, dual(T)
        # D(t a) is concave in t: if its slope at T is negative, Newton towards the maximiser.
        s = t
        for _ in range(30):
            sa = np.clip(s * a, 1e-300, 1 - 1e-16)
            d1 = float(self.C * (a * np.log((1.0 - sa) / sa)).sum())
            if s == T and d1 >= 0:
                break
            d2 = -float(self.C * (a * a / (sa * (1.0 - sa))).sum())
            s_new = min(T, max(0.5 * s, s - d1 / d2))
            if abs(s_new - s) <= 1e-14 * s:
                break
            s = s_new
        if s != T and dual(s) > d:
            d = dual(s)
        if p < self.best_p:
            self.best_p, self.best_w, self.best_b = p, w.copy(), b
        self.best_d = max(self.best_d, d)
        gap = (self.best_p - self.best_d) / max(abs(self.best_p), 1e-12)
        self.log.append((time.perf_counter() - self.t0, self.passes, self.hrows, gap, p))
        return gap, g

    def hessian(self, f: FloatArray, rows: NDArray[np.intp] | None, f32: bool) -> FloatArray:
        """C [G_S, 1]ᵀ diag(ℓ'') [G_S, 1] · n/|S| (lower triangle filled, then mirrored)."""
        n, R = self.G.shape
        idx = np.arange(n) if rows is None else rows
        scale = n / idx.size
        self.hrows += idx.size
        s = sigmoid(self.y[idx] * f[idx])
        h = np.sqrt(self.C * scale * s * (1.0 - s))
        dt = np.float32 if f32 else np.float64
        syrk = ssyrk if f32 else dsyrk
        H = np.zeros((R + 1, R + 1), dtype=dt, order="F")
        src = self.G32 if f32 and self.G32 is not None else self.G
        chunk = 2048
        for c in range(0, idx.size, chunk):
            sel = idx[c : c + chunk]
            A = np.empty((sel.size, R + 1), dtype=dt)
            if rows is None:
                A[:, :R] = src[c : c + chunk]
            else:
                A[:, :R] = src[sel]
            hc = h[c : c + chunk].astype(dt)
            A[:, :R] *= hc[:, None]
            A[:, R] = hc
            H = syrk(1.0, A.T, beta=1.0, c=H, trans=0, lower=1, overwrite_c=1)
        H = np.asarray(H, dtype=np.float64)
        return np.tril(H) + np.tril(H, -1).T


# --------------------------------------------------------------------------------------------
# Exact block minimisation: min_u ½ uᵀ(QΛQᵀ)u + cᵀu + ‖u‖


def block_min(
    lam: FloatArray, Q: FloatArray, c: FloatArray, mu0: float
) -> tuple[FloatArray, float]:
    if np.dot(c, c) <= 1.0:
        return np.zeros_like(c), mu0
    ch = Q.T @ c
    c2 = ch * ch
    cn = float(np.sqrt(c2.sum()))
    lo, hi = 0.0, max(float(lam.max()), 1e-300) / (cn - 1.0) * (1 + 1e-12) + 1e-300
    lam = np.maximum(lam, 0.0)
    mu = mu0 if lo < mu0 < hi else 0.5 * (lo + hi)
    for _ in range(100):  # F(μ) = μ‖(Λ+μ)⁻¹ĉ‖ - 1, increasing; safeguarded Newton
        inv = 1.0 / (lam + mu)
        s = float(np.sqrt((c2 * inv * inv).sum()))
        F = mu * s - 1.0
        if F < 0:
            lo = mu
        else:
            hi = mu
        if abs(F) <= 1e-13:
            break
        ds = -float((c2 * inv**3).sum()) / s
        step = F / (s + mu * ds)
        new = mu - step
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            break
        mu = new
    return -Q @ (ch / (lam + mu)), mu


def violations(grad: FloatArray, w: FloatArray) -> FloatArray:
    """dist(-grad_m, ∂‖w_m‖) per block."""
    G2, W2 = grad.reshape(M, W), w.reshape(M, W)
    nw = np.linalg.norm(W2, axis=1)
    out = np.maximum(np.linalg.norm(G2, axis=1) - 1.0, 0.0)
    on = nw > 0
    out[on] = np.linalg.norm(G2[on] + W2[on] / nw[on, None], axis=1)
    return out


def anderson(X: list[FloatArray]) -> FloatArray | None:
    """skglm's extrapolation weights of the last K+1 iterates (K differences)."""
    U = np.diff(np.array(X), axis=0)
    A = U @ U.T
    try:
        z = np.linalg.solve(A + 1e-12 * np.trace(A) * np.eye(len(A)), np.ones(len(A)))
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(z)) or abs(z.sum()) < 1e-300:
        return None
    return z / z.sum()


def solve_model(
    H: FloatArray,
    eig: list[tuple[FloatArray, FloatArray]],
    g: FloatArray,
    w: FloatArray,
    gb: float,
    target: float,
    max_rounds: int = 30,
) -> tuple[FloatArray, int]:
    """min_δ gᵀδ + ½ δᵀHδ + Σ‖w_m + δ_m‖ over [w; b] (the intercept unpenalised, index R), until
    every block's violation (and the intercept's) is at most ``target``.

    Rounds of 10 epochs of cyclic exact block minimisation (which find the active blocks), then
    Newton on the smooth problem of the active blocks, ``H_AA + blockdiag((I - ûûᵀ)/‖u_m‖)``,
    with backtracking on the model: cyclic descent alone stalls on coupled blocks (1000 epochs
    a step on this bank). Returns δ and the number of block epochs plus Newton solves."""
    R = w.size
    gg = np.append(g, gb)
    d = np.zeros(R + 1)
    Hd = np.zeros(R + 1)
    mus = np.zeros(M)
    work = 0

    def model(d: FloatArray, Hd: FloatArray) -> float:
        return float(gg @ d + 0.5 * d @ Hd + penalty(w + d[:R]))

    def worst(d: FloatArray, Hd: FloatArray) -> float:
        grad = gg + Hd
        return max(float(violations(grad[:R], w + d[:R]).max()), abs(float(grad[R])))

    for _ in range(max_rounds):
        for _ in range(10):
            work += 1
            for m in range(M):
                sl = BLOCKS[m]
                u_old = w[sl] + d[sl]
                c = gg[sl] + Hd[sl] - H[sl, sl] @ u_old
                u, mus[m] = block_min(eig[m][0], eig[m][1], c, mus[m])
                du = u - u_old
                if np.any(du):
                    d[sl] += du
                    Hd += H[:, sl] @ du
            db = -(gg[R] + Hd[R]) / H[R, R]
            d[R] += db
            Hd += H[:, R] * db
            if worst(d, Hd) <= target:
                return d, work
        # Newton on the active blocks
        u = w + d[:R]
        act = [m for m in range(M) if np.any(u[BLOCKS[m]])]
        idx = np.concatenate([np.arange(m * W, (m + 1) * W) for m in act] + [np.array([R])])
        for _ in range(8):
            work += 1
            u = w + d[:R]
            grad = gg + Hd
            Hn = H[np.ix_(idx, idx)]
            rhs = grad[idx].copy()
            radial = []
            for k, m in enumerate(act):
                sl = slice(k * W, (k + 1) * W)
                um = u[BLOCKS[m]]
                nu = float(np.linalg.norm(um))
                uh = um / nu if nu > 0 else um
                rhs[sl] += uh
                Hn[sl, sl] += (np.eye(W) - np.outer(uh, uh)) / max(nu, 1e-300)
                radial.append((sl, uh, nu))
            q0 = model(d, Hd)
            t = 0.0
            for kind in ("newton", "irls"):
                if kind == "irls":  # the majorant ‖u‖ ≤ ‖u‖²/(2‖u₀‖) + ‖u₀‖/2: radial damping
                    for sl, uh, nu in radial:
                        Hn[sl, sl] += np.outer(uh, uh) / max(nu, 1e-300)
                ridge = 1e-12 * float(np.trace(Hn)) / len(Hn)
                while True:  # a float32 or sketched H may be indefinite by rounding
                    try:
                        cf = cho_factor(
                            Hn + ridge * np.eye(len(Hn)), lower=True, check_finite=False
                        )
                        break
                    except np.linalg.LinAlgError:
                        ridge *= 100.0
                step = -cho_solve(cf, rhs, check_finite=False)
                full = np.zeros(R + 1)
                full[idx] = step
                Hs = H[:, idx] @ step
                t = 1.0
                while t > 1e-3:
                    if model(d + t * full, Hd + t * Hs) <= q0 + 1e-4 * t * float(rhs @ step):
                        break
                    t *= 0.5
                if t > 1e-3:
                    d, Hd = d + t * full, Hd + t * Hs
                if t >= 0.25:
                    break
            if worst(d, Hd) <= target:
                break
        if DEBUG:
            print(f"    round: active {len(act)} t {t:.2g} worst {worst(d, Hd):.2e} / {target:.2e}")
        if worst(d, Hd) <= target:
            return d, work
    return d, work


# --------------------------------------------------------------------------------------------
# Solvers


def newton(
    prob: Problem,
    mode: str,
    sizes: list[int],
    refresh: int,
    f32: bool,
    tol: float,
    report: float,
    max_steps: int,
    seed: int = 0,
) -> dict:
    rng = np.random.default_rng(seed)
    n, R = prob.G.shape
    w = np.zeros(R)
    f0 = np.zeros(n)
    b = prob.best_intercept(f0, 0.0)
    gap, g = prob.certify(w, f0, b)
    H: FloatArray | None = None
    eig: list[tuple[FloatArray, FloatArray]] = []
    steps = epochs = 0
    t_hess = t_inner = 0.0
    while gap > tol and steps < max_steps:
        steps += 1
        s = sizes[min(steps - 1, len(sizes) - 1)]
        if H is None or (s > 0 and (steps - 1) % refresh == 0):
            t = time.perf_counter()
            rows = (
                None
                if mode in ("newton", "lagged") or s >= n
                else np.sort(rng.choice(n, s, replace=False))
            )
            H = prob.hessian(f0 + b, rows, f32)
            eig = [eigh(H[sl, sl]) for sl in BLOCKS]
            t_hess += time.perf_counter() - t
        t = time.perf_counter()
        gb = float(prob.dloss(f0 + b).sum())
        v0 = violations(g, w)
        d, ep = solve_model(H, eig, g, w, gb, 1e-3 * max(float(v0.max()), abs(gb)))
        epochs += ep
        t_inner += time.perf_counter() - t
        # Armijo on P along the model's step
        Gd = prob.matvec(d[:R])
        p0 = prob.loss(f0 + b) + penalty(w)
        dec = float(g @ d[:R] + gb * d[R] + penalty(w + d[:R]) - penalty(w))
        step = 1.0
        while True:
            wt = w + step * d[:R]
            pt = prob.loss(f0 + step * Gd + b + step * d[R]) + penalty(wt)
            if pt <= p0 + 1e-4 * step * dec or abs(dec) <= 1e-12 * abs(p0) or step < 1e-10:
                break
            step *= 0.5
        w = wt
        f0 = f0 + step * Gd
        b = prob.best_intercept(f0, b + step * d[R])
        gap, g = prob.certify(w, f0, b)
        el = time.perf_counter() - prob.t0
        print(
            f"  step {steps:3d} t={el:7.2f}s passes={prob.passes:5.1f} "
            f"hrows={prob.hrows:8d} epochs={ep:4d} step={step:.3g} gap={gap:.3e} "
            f"P={prob.best_p:.10g}",
            flush=True,
        )
    return {"iters": steps, "epochs": epochs, "t_hess": t_hess, "t_inner": t_inner}


def bcd(prob: Problem, tol: float, report: float, max_epochs: int) -> dict:
    n, R = prob.G.shape
    C = prob.C
    t = time.perf_counter()
    eig = []
    for sl in BLOCKS:  # the fixed block metric C/4 G_mᵀG_m (one pass's worth of reads)
        Gm = prob.G[:, sl]
        eig.append(eigh(0.25 * C * (Gm.T @ Gm)))
    prob.passes += 1
    t_metric = time.perf_counter() - t
    w = np.zeros(R)
    f0 = np.zeros(n)
    b = prob.best_intercept(f0, 0.0)
    gap, _ = prob.certify(w, f0, b)
    mus = np.zeros(M)
    hist: list[FloatArray] = []
    fhist: list[FloatArray] = []
    epoch = 0
    while gap > tol and epoch < max_epochs:
        epoch += 1
        for m, sl in enumerate(BLOCKS):
            Gm = prob.G[:, sl]
            r = prob.dloss(f0 + b)
            gm = Gm.T @ r
            prob.passes += 1.0 / M
            lam, Q = eig[m]
            c = gm - Q @ (lam * (Q.T @ w[sl]))
            u, mus[m] = block_min(lam, Q, c, mus[m])
            du = u - w[sl]
            if np.any(du):
                w[sl] = u
                f0 += Gm @ du
                prob.passes += 1.0 / M
        b = prob.best_intercept(f0, b)
        hist.append(w.copy())
        fhist.append(f0.copy())
        if len(hist) > 6:
            hist.pop(0)
            fhist.pop(0)
        if epoch % 5 == 0:
            if len(hist) == 6:
                c_k = anderson(hist)
                if c_k is not None:
                    wa = sum(ck * x for ck, x in zip(c_k, hist[1:], strict=True))
                    fa = sum(ck * x for ck, x in zip(c_k, fhist[1:], strict=True))
                    ba = prob.best_intercept(fa, b)
                    if prob.loss(fa + ba) + penalty(wa) < prob.loss(f0 + b) + penalty(w):
                        w, f0, b = wa, fa, ba
                        hist[-1], fhist[-1] = w.copy(), f0.copy()
            gap, _ = prob.certify(w, f0, b)
            el = time.perf_counter() - prob.t0
            print(
                f"  epoch {epoch:4d} t={el:7.2f}s passes={prob.passes:6.1f} gap={gap:.3e} "
                f"P={prob.best_p:.10g}",
                flush=True,
            )
    return {"iters": epoch, "epochs": epoch, "t_hess": t_metric, "t_inner": 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--method", choices=["newton", "sketch", "lagged", "bcd"], default="sketch")
    ap.add_argument(
        "--s",
        default="5000",
        help="sketch rows, or a schedule: rows of step 1, 2, ... (the last repeats)",
    )
    ap.add_argument("--refresh", type=int, default=1, help="steps between Hessians")
    ap.add_argument("--f32", action="store_true", help="float32 Hessians")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--report", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "proto_sketch"))
    args = ap.parse_args()
    G, y = build(Path(args.cache))
    G, y = G[: args.n], y[: args.n]
    prob = Problem(G, y, args.C)
    if args.f32:
        prob.G32 = G.astype(np.float32)
    t = time.perf_counter()
    prob.matvec(np.zeros(G.shape[1]))
    t_pass = time.perf_counter() - t
    prob.passes = 0.0
    prob.t0 = time.perf_counter()
    if args.method == "bcd":
        out = bcd(prob, args.tol, args.report, args.max_iter)
    else:
        sizes = [int(v) for v in args.s.split(",")]
        out = newton(
            prob, args.method, sizes, args.refresh, args.f32, args.tol, args.report, args.max_iter
        )
    total = time.perf_counter() - prob.t0
    hit = next((row for row in prob.log if row[3] <= args.report), None)
    print(
        f"n={args.n} method={args.method} s={args.s} refresh={args.refresh} f32={args.f32} "
        f"pass={t_pass:.3f}s"
    )
    if hit is None:
        print(f"  gap {args.report:g} not reached; total {total:.2f}s")
    else:
        print(f"  gap<={args.report:g} at t={hit[0]:.2f}s passes={hit[1]:.1f} hrows={hit[2]}")
    print(
        f"  final: iters={out['iters']} inner epochs={out['epochs']} passes={prob.passes:.1f} "
        f"hrows={prob.hrows} t_hess={out['t_hess']:.2f}s t_inner={out['t_inner']:.2f}s "
        f"total={total:.2f}s gap={prob.log[-1][3]:.2e} P={prob.best_p:.12g}"
    )


if __name__ == "__main__":
    main()
