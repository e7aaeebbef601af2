"""Are the per-kernel inner lengths of Alioscha-Perez et al. (2016), eq. 3, worth having in
our SVRG solver? A numpy port of its epoch loop, run with and without them.

The port follows ``fit_svrg_weighted`` (the Rust solver, docs/mathematics.md §6) line by line,
unweighted, logistic loss: ``λ = 1/(Cn)``, ``L = ¼ max_t (‖φ(x_t)‖² + 1)``, steps
``h_k = 1/(L + λ/d_k)`` and ``1/L`` for the intercept; each epoch starts with a snapshot pass
(predictions, the intercept re-fitted exactly by bisection, the primal
``C Σ ℓ + ½(Σ‖w_k‖^r)^{2/r}`` with ``r = 2p/(p+1)``, the dual point ``β = −Cℓ′`` centred to
``Σβ = 0`` inside the conjugate's domain, ``D = −Σ Cℓ*(−β/C) − ½‖(‖Φ_kᵀβ‖²)_k‖_{p/(p−1)}``, the
relative gap of the best primal and best dual as the tracker keeps them), stops at gap ≤ tol,
else updates d in closed form (eq. 2, floored at 1e-12) and runs the stochastic steps from the
snapshot, keeping the last iterate. Only the sample order differs (numpy's generator, not the
solver's SplitMix).

``--inner`` picks the inner lengths:

* ``uniform``: today's rule, n steps per epoch, every kernel's block updated in each.
* ``eq3``: the paper's rule with ``m(κ) = n``: kernel k's block is updated in the first
  ``m_k = max(1, ⌈d_k n⌉)`` steps only (``‖d‖_p = 1``, so ``d_k ≤ 1``) and is frozen after;
  the epoch lasts ``max_k m_k`` steps (the paper's Algorithm 1 loop bound), the intercept is
  updated in every one, and every stochastic gradient uses the full prediction.
* ``eq3-scaled``: ``m_k = max(1, ⌈d_k n / max_j d_j⌉)``: the heaviest kernel runs n steps and
  the others their share by d. At uniform weights it is ``uniform``; it only trims the steps of
  light kernels.

Counted per fit: epochs (snapshots, as the solver's ``n_iter_``); block updates (Σ over steps
of the number of blocks updated, times the block width: coordinate updates); feature reads
(two passes of the snapshot, and per step the whole row for the prediction plus the active
blocks for the update); one-core wall time of the port (Python-loop bound: compare ratios).

Data as ``benches/papers/svrg_mkl.py``: ringnorm, F Gaussian kernels × 50 random Fourier
features (its ``bank_blocks``), logistic loss, C = 1, tol 1e-3, at most 300 epochs. ``--check``
first fits the Rust solver (``solver="svrg"``) on the same features and prints its epochs and
objective beside the port's ``uniform``. Run on one core:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benches/papers/svrg_eq3_prototype.py [--check] [--n 7400] [--F 4 16 64] \\
        [--p 1.3333333333333333 2 4] [--inner uniform eq3 eq3-scaled] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
from _common import loglog_slope
from numpy.typing import NDArray
from reference import load_dataset
from scipy.special import expit
from svrg_mkl import bank_blocks

import multikernel as mk

Array = NDArray[np.float64]
DUAL_SLACK = 1e-9  # src/solvers/tracker.rs
CONJ_TOL = 1e-9  # Loss::conjugate's tolerance


# --- logistic loss (src/losses/mod.rs) -------------------------------------------------------


def loss_value(y: Array, z: Array) -> Array:
    return np.logaddexp(0.0, -y * z)


def loss_deriv(y: Array, z: Array) -> Array:
    return -y * expit(-y * z)


def loss_deriv1(y: float, z: float) -> float:
    """``ℓ′`` of one sample (the inner loop's scalar)."""
    m = -y * z
    s = 1.0 / (1.0 + math.exp(-m)) if m >= 0.0 else math.exp(m) / (1.0 + math.exp(m))
    return -y * s


def loss_conjugate(y: Array, u: Array) -> Array:
    """``ℓ*(y, u) = s ln s + (1−s) ln(1−s)``, ``s = −yu``; +∞ outside ``[0, 1]`` (± tolerance)."""
    s = -y * u
    inside = (s >= -CONJ_TOL) & (s <= 1.0 + CONJ_TOL)
    s = np.clip(s, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(s > 0.0, s * np.log(np.where(s > 0.0, s, 1.0)), 0.0)
        b = np.where(s < 1.0, (1.0 - s) * np.log1p(-np.where(s < 1.0, s, 0.0)), 0.0)
    return np.where(inside, a + b, np.inf)


def centre_dual(y: Array, rho: Array, c: Array) -> Array:
    """``Loss::centre_dual``: the clipped shift of ``ρ`` to ``Σρ = 0`` inside the domain."""
    # Logistic: u ∈ [−1, 0] for y = 1, [0, 1] for y = −1; ρ's bounds are [−c·hi_u, −c·lo_u].
    lo_u = np.where(y > 0, -1.0, 0.0)
    hi_u = np.where(y > 0, 0.0, 1.0)
    lo, hi = -c * hi_u, -c * lo_u
    r = np.clip(rho, lo, hi)
    mean = r.mean()
    if np.all(r - mean >= lo) and np.all(r - mean <= hi):
        return r - mean

    def total(t: float) -> float:
        return float(np.clip(r - t, lo, hi).sum())

    span = float(np.abs(r).max()) + float(c.max()) + 1.0
    a, b = -span, span
    for _ in range(200):
        mid = 0.5 * (a + b)
        if mid <= a or mid >= b:
            break
        if total(mid) > 0.0:
            a = mid
        else:
            b = mid
    return np.clip(r - 0.5 * (a + b), lo, hi)


# --- certificate (src/solvers/duality.rs) ----------------------------------------------------


def lp_penalty(norms: Array, p: float) -> float:
    r = 2.0 * p / (p + 1.0)
    return 0.5 * float((np.maximum(norms, 0.0) ** r).sum()) ** (2.0 / r)


def dual_norm(v: Array, p: float) -> float:
    ps = p / (p - 1.0)
    mx = float(v.max())
    if mx <= 0.0:
        return 0.0
    return mx * float(((np.maximum(v, 0.0) / mx) ** ps).sum()) ** (1.0 / ps)


def lp_dual(c: Array, y: Array, beta: Array, quad: Array, p: float) -> float:
    loss_part = -float((c * loss_conjugate(y, -beta / c)).sum())
    return loss_part - 0.5 * dual_norm(quad, p)


def refit_intercept(y: Array, z: Array, start: float) -> float:
    """``refit_intercept``: bisection on the derivative of ``Σ ℓ(y, z + b)``."""

    def g(b: float) -> float:
        return float(loss_deriv(y, z + b).sum())

    lo, hi, width = start - 1.0, start + 1.0, 1.0
    while g(lo) > 0.0 and width < 1e8:
        width *= 2.0
        lo = start - width
    while g(hi) < 0.0 and width < 1e8:
        width *= 2.0
        hi = start + width
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if g(mid) > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


# --- the solver ------------------------------------------------------------------------------


@dataclass
class Fit:
    epochs: int
    converged: bool
    gaps: list[float]
    primal: float
    block_updates: int  # coordinate updates: Σ_steps Σ_active blocks D_k
    feature_reads: int
    seconds: float


def inner_lengths(d: Array, n: int, inner: str) -> NDArray[np.int64]:
    if inner == "uniform":
        return np.full(d.shape, n, dtype=np.int64)
    scale = 1.0 if inner == "eq3" else 1.0 / float(d.max())
    return np.maximum(1, np.ceil(d * scale * n - 1e-9)).astype(np.int64)


def fit_port(
    X: Array,
    y: Array,
    dims: list[int],
    p: float,
    inner: str = "uniform",
    C: float = 1.0,
    tol: float = 1e-3,
    max_iter: int = 300,
    seed: int = 0,
) -> Fit:
    t_start = time.perf_counter()
    n, width = X.shape
    m = len(dims)
    offsets = np.concatenate([[0], np.cumsum(dims)])
    kernel_of = np.repeat(np.arange(m), dims)  # column → kernel
    lam = 1.0 / (C * n)
    cu = np.full(n, C)
    big_l = 0.25 * float(((X * X).sum(axis=1) + 1.0).max())
    w = np.zeros(width)
    b = 0.0
    d = np.full(m, m ** (-1.0 / p))
    rng = np.random.default_rng(seed)
    hx_buf = np.empty_like(X) if inner == "uniform" else X
    best_primal, best_dual = math.inf, -math.inf
    duals: list[float] = []
    gaps: list[float] = []
    block_updates = 0
    reads = 0
    epochs = 0
    converged = False
    for _ in range(max_iter):
        epochs += 1
        # Snapshot pass: predictions, exact intercept, certificate.
        z = X @ w
        b = refit_intercept(y, z, b)
        norms = np.sqrt(np.add.reduceat(w * w, offsets[:-1]))
        primal = float((cu * loss_value(y, z + b)).sum()) + lp_penalty(norms, p)
        g0 = loss_deriv(y, z + b)
        beta = centre_dual(y, -C * g0, cu)
        u = X.T @ beta
        grad = X.T @ g0 / n
        reads += 2 * n * width
        quad = np.add.reduceat(u * u, offsets[:-1])
        dual = lp_dual(cu, y, beta, quad, p)
        # The tracker: best primal, best dual not above it (weak duality with a slack).
        duals.append(dual)
        if primal < best_primal:
            best_primal = primal
            slack = primal + DUAL_SLACK * abs(primal)
            if best_dual > slack:
                best_dual = max((v for v in duals if v <= slack), default=-math.inf)
        if dual <= best_primal + DUAL_SLACK * abs(best_primal):
            best_dual = max(best_dual, dual)
        gap = (best_primal - best_dual) / max(abs(best_primal), 1e-12)
        gaps.append(gap)
        if gap <= tol:
            converged = True
            break
        # Kernel weights in closed form (eq. 2), floored.
        if np.any(norms > 0.0):
            e = 2.0 / (p + 1.0)
            scale = float((norms ** (e * p)).sum()) ** (1.0 / p)
            d = np.maximum(norms**e / scale, 1e-12)
        # One epoch of variance-reduced steps from the snapshot.
        steps_k = 1.0 / (big_l + lam / d)
        mk_len = inner_lengths(d, n, inner)
        # Kernels in decreasing inner length, so that the blocks still running at step s are a
        # prefix of the permuted columns.
        order = np.argsort(-mk_len, kind="stable")
        cols = np.concatenate([np.arange(offsets[k], offsets[k + 1]) for k in order])
        inv = np.empty_like(cols)
        inv[cols] = np.arange(width)
        h = steps_k[kernel_of[cols]]
        a = 1.0 - h * (lam / d[kernel_of[cols]])
        cg = h * grad[cols]
        wp = w[cols].copy()
        ends_k = np.concatenate([[0], np.cumsum([dims[k] for k in order])])
        lens = mk_len[order]  # non-increasing
        n_steps = int(lens[0])
        # Active kernels at step s: those with m_k > s.
        active = np.searchsorted(-lens, -np.arange(n_steps), side="left")
        ends = ends_k[active]
        block_updates += int(ends.sum())
        reads += n_steps * width + int(ends.sum())
        mean_g = float(g0.mean())
        h_b = 1.0 / big_l
        ts = rng.integers(0, n, size=n_steps)
        # The epoch's rows in sampling order, columns in the kernel order, and those times h.
        # (uniform: all rows in place, indexed by the sample.)
        if inner == "uniform":
            Xs, idx = X, ts
            HX = np.multiply(X, h, out=hx_buf)
        else:
            rows = X[ts]
            Xs = np.concatenate([rows[:, offsets[k] : offsets[k + 1]] for k in order], axis=1)
            idx = np.arange(n_steps)
            HX = Xs * h
        for s in range(n_steps):
            t, r = int(ts[s]), int(idx[s])
            delta = loss_deriv1(y[t], float(Xs[r] @ wp) + b) - g0[t]
            e_s = int(ends[s])
            if e_s == width:
                wp *= a
                wp -= cg
                wp -= delta * HX[r]
            else:
                seg = wp[:e_s]
                seg *= a[:e_s]
                seg -= cg[:e_s]
                seg -= delta * HX[r, :e_s]
            b -= h_b * (mean_g + delta)
        w = wp[inv]
    return Fit(
        epochs=epochs,
        converged=converged,
        gaps=gaps,
        primal=best_primal,
        block_updates=block_updates,
        feature_reads=reads,
        seconds=time.perf_counter() - t_start,
    )


def fit_rust(blocks: list[NDArray[np.float32]], y: Array, p: float) -> tuple[int, Array, Array]:
    clf = mk.MKLClassifier(
        kernels="precomputed", loss="logistic", solver="svrg", p=p, C=1.0, tol=1e-3,
        max_iter=300, random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(blocks, y)
    hist = clf.history_
    return int(clf.n_iter_), np.asarray(hist["primal"]), np.asarray(hist["gap"])


def q_of(p: float) -> float:
    return p / (p - 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=None, help="subsample size (default: all 7400)")
    ap.add_argument("--F", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--p", type=float, nargs="+", default=[4.0 / 3.0, 2.0, 4.0])
    ap.add_argument("--inner", nargs="+", default=["uniform", "eq3", "eq3-scaled"],
                    choices=["uniform", "eq3", "eq3-scaled"])  # fmt: skip
    ap.add_argument("--check", action="store_true", help="compare uniform with the Rust solver")
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="sample orders")
    args = ap.parse_args()
    X0, y = load_dataset("ringnorm", n=args.n)
    n = len(y)
    print(f"ringnorm, n = {n}; logistic, C = 1, tol 1e-3", flush=True)
    rows: dict[tuple[int, float, str], list[Fit]] = {}
    for F in args.F:
        blocks = bank_blocks(X0, F)
        dims = [blk.shape[1] for blk in blocks]
        X = np.hstack(blocks).astype(np.float64)
        for p in args.p:
            if args.check:
                t = time.perf_counter()
                ep, primal, gap = fit_rust(blocks, y, p)
                t = time.perf_counter() - t
                gaps = np.array2string(gap, precision=1)
                print(f"rust  F={F} p={p:.3g}: epochs {ep}, primal {primal.min():.6f}, "
                      f"gaps {gaps}, {t:.2f} s", flush=True)  # fmt: skip
            for inner in args.inner:
                for seed in args.seeds:
                    f = fit_port(X, y, dims, p, inner, max_iter=args.max_iter, seed=seed)
                    rows.setdefault((F, p, inner), []).append(f)
                    print(
                        f"port  F={F} p={p:.3g} {inner} seed {seed}: epochs {f.epochs}"
                        f"{'' if f.converged else ' (not conv.)'}, primal {f.primal:.6f}, "
                        f"gap {f.gaps[-1]:.1e}, block updates {f.block_updates:.3g}, "
                        f"reads {f.feature_reads:.3g}, {f.seconds:.1f} s",
                        flush=True,
                    )
                    if args.check:
                        print(f"      gaps {np.array2string(np.array(f.gaps), precision=1)}")

    def med(fs: list[Fit], key: str) -> float:
        return float(np.median([getattr(f, key) for f in fs]))

    print(f"\nMedians over seeds {args.seeds}; epochs per seed in brackets.\n")
    print("| F | p | 1/q | inner | epochs | block updates | feature reads | time (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for (F, p, inner), fs in rows.items():
        each = "/".join(f"{f.epochs}" + ("" if f.converged else "*") for f in fs)
        print(f"| {F} | {p:.3g} | {1 / q_of(p):.2f} | {inner} | {med(fs, 'epochs'):.0f} "
              f"({each}) | {med(fs, 'block_updates'):.3g} | {med(fs, 'feature_reads'):.3g} | "
              f"{med(fs, 'seconds'):.3g} |")  # fmt: skip
    print("\n(* not converged in --max-iter epochs: its counts are lower bounds.)")
    if len(args.F) > 1:
        print()
        print("| p | paper 1/q | inner | slope in F: epochs | block updates | feature reads |")
        print("|---|---|---|---|---|---|")
        for p in args.p:
            for inner in args.inner:
                fs = [rows[F, p, inner] for F in args.F]
                sl = [
                    loglog_slope(args.F, [med(f, key) for f in fs])
                    for key in ("epochs", "block_updates", "feature_reads")
                ]
                print(f"| {p:.3g} | {1 / q_of(p):.2f} | {inner} | {sl[0]:.2f} | {sl[1]:.2f} | "
                      f"{sl[2]:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
