"""Numpy prototype of an MKL engine that never re-forms the combined kernel (issue 65): how many
passes over the kernel stack, SMO steps and SVM solves a fit needs, against the SVC on the
summed kernel and against the engine's own fit.

Cases: ``svm_price.py``'s five sets (liver, pima, ionosphere, sonar from ``tests/data``,
scikit-learn's breast cancer), the SimpleMKL bank of 27·(d+1) unit-trace kernels on the 80 %
training split, hinge, tol 1e-3, C ∈ ``--Cs``. One SMO (β-form of libsvm's C-SVC, WSS2 second
order selection of Fan, Chen & Lin 2005, no shrinking, an unbounded cache of the columns of
``K_θ``) serves every design:

- ``lp`` (p = 2, 4/3), Kloft's Algorithm 1 with the engine's ω-extrapolation and inner
  tolerance schedule (docs/mathematics.md §3.3), warm-started solves. The first solve is on
  the formed uniform-θ kernel (one read, the SVC's own sum); after a θ update the columns of
  ``K_θ = Σ θ_m K_m`` are computed on demand (M reads per entry) and cached until θ moves.
  The per-kernel caches ``h_m = K_m β`` are brought up to date lazily before each θ update,
  from the changed coefficients (or from the support vectors when fewer), so ``γ_m = βᵀh_m``,
  the certificate of §1.3 and the SMO gradient at the new θ (``f = Σ θ_m h_m``) need no pass.
- ``lp2-il``: the same with θ moved every ``max(n, 100)`` SMO steps (Kloft's Algorithm 2, §3.4).
- ``l1``: spectral projected gradient (Barzilai–Borwein steps, non-monotone acceptance, SPG-GMKL)
  on ``F(θ) = W(θ) + ½ Σ θ_m`` over θ ≥ 0 (the unsquared block ℓ1 of §0.2 in its variational
  form), ``∇F_m = ½ (1 − γ_m)``, inexact warm-started solves whose tolerance tightens from 0.1,
  an active set of kernels (θ_m > 0) whose columns alone make ``K_θ``; every kernel keeps its
  cache, and the inactive kernels' caches are brought up to date only at a certificate (or,
  with ``LAZY_INACTIVE = False``, their ``γ_m = β_Sᵀ K_m[S, S] β_S`` read afresh), where those
  with ``γ_m > max(1, max_active γ)`` re-enter. The certificate is §1.4's:
  D = Σα / max(1, max_m √γ_m). ``l1`` takes its steps in the metric diag(θ + 0.1·mean θ)⁻¹,
  ``l1-euclid`` in the Euclidean one.
- ``lp2-demand``: ``lp2`` with the first solve's columns on demand too (nothing formed).

Counted (deterministic): entries of the stack read, as passes (entries / M n²); on-demand
column evaluations; SMO steps; solves. The SVC's reads: the sum (one pass) plus n per column of
the summed matrix that the same SMO touches on it (libsvm's own counts are not exposed). Each
prototype fit is certified by its own gap ≤ tol and checked against the engine's fit
(``MKLClassifier(kernels="precomputed")``) by weak duality both ways. The engine's and the
SVC's times (``_timing.paired_median_times``, medians of ``--repeats``) are from the same run;
the prototype's Python time is not a measure of anything.

    python benches/peers/proto_cached_engine.py [--sets liver_bupa,pima,ionosphere,sonar,breast]
        [--Cs 0.1,1,10] [--designs lp2,lp43,lp2-il,l1] [--repeats 3] [--out FILE.json]

``--repeats 0`` fits the engine once, untimed (counts only); ``--table A.json,B.json`` prints
the markdown table of such ``--out`` files, later ones overriding a cell's counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.svm import SVC

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers_case import breast_cancer_problem, uci_problem  # noqa: E402
from _timing import paired_median_times  # noqa: E402

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

TOL = 1e-3
INNER_FLOOR = 0.1 * TOL  # the engine's floor: min(inner_tol = 1e-7, 0.1·tol)... at tol 1e-3
TAU = 1e-12  # libsvm's floor on the curvature of a pair
MAX_SMO = 400_000  # per solve, a guard for the pure-Python loop
MAX_OUTER = 300
TRUST = 1.0  # l1: the largest step, as a share of the weight the active kernels hold
LAZY_INACTIVE = True  # l1: inactive kernels' γ from their kept caches, not from forms
CERT_EVERY = 10  # l1 with dual aggregation: a full certificate every this many steps
METRIC_FLOOR = 0.1  # l1, scaled metric: weight θ_m + METRIC_FLOOR·mean(θ)
CHUNK_KERNELS = 48  # kernels per block when reading columns of many kernels at once


# --- the stack, with its reads counted ------------------------------------------------------


@dataclass
class Counts:
    entries: float = 0.0  # stack entries read
    columns: int = 0  # on-demand columns of K_θ (each |A|·n entries)
    formed_columns: int = 0  # columns of a formed K_θ (n entries each, like the SVC's)
    smo_steps: int = 0
    solves: int = 0
    theta_updates: int = 0
    no_caches: float = 0.0  # lp: what the same iterates would read without the h caches
    eager_h_entries: float = 0.0  # what Kloft's two columns per kernel per step would read
    certificates_full: int = 0  # l1: certificates that read the inactive kernels' forms
    by: dict[str, float] = field(default_factory=dict)  # entries read, by purpose
    #: (solves, entries read, best primal value) after every outer step
    primal_trace: list[tuple[int, float, float]] = field(default_factory=list)
    #: certified gap level -> (solves, entries read) when the gap first reached it
    reached: dict[str, tuple[int, float]] = field(default_factory=dict)

    def milestone(self, gap: float) -> None:
        for level in ("1e-1", "1e-2", "1e-3"):
            if gap <= float(level) and level not in self.reached:
                self.reached[level] = (self.solves, self.entries)

    def add(self, what: str, entries: float) -> None:
        self.entries += entries
        self.by[what] = self.by.get(what, 0.0) + entries


class Stack:
    """The (M, n, n) stack; every read of it goes through here and is counted."""

    def __init__(self, G: FloatArray) -> None:
        self.G = G
        self.M, self.n, _ = G.shape
        self.c = Counts()
        self.diagonals = np.einsum("mii->mi", G)  # a view: read (and counted) per use

    def combine(self, theta: FloatArray, act: IntArray) -> FloatArray:
        self.c.add("combine", len(act) * self.n * self.n)
        K = np.zeros((self.n, self.n))
        for blk in np.array_split(act, max(1, len(act) // CHUNK_KERNELS)):
            K += np.tensordot(theta[blk], self.G[blk], 1)
        return K

    def column(self, theta: FloatArray, act: IntArray, i: int) -> FloatArray:
        self.c.add("columns", len(act) * self.n)
        self.c.columns += 1
        return theta[act] @ self.G[act, i, :]

    def diag(self, theta: FloatArray, act: IntArray) -> FloatArray:
        self.c.add("diagonal", len(act) * self.n)
        return theta[act] @ self.diagonals[act]

    def products(self, ks: IntArray, cols: IntArray, coef: FloatArray) -> FloatArray:
        """``K_m[:, cols] @ coef`` for m in ks: (|ks|, n), reading |ks|·|cols|·n entries."""
        self.c.add("h caches", len(ks) * len(cols) * self.n)
        out = np.empty((len(ks), self.n))
        if len(cols) == 0:
            out[:] = 0.0
            return out
        for blk in np.array_split(np.arange(len(ks)), max(1, len(ks) // CHUNK_KERNELS)):
            sub = self.G[ks[blk]][:, cols, :]  # rows = columns (symmetric)
            out[blk] = np.einsum("mjn,j->mn", sub, coef)
        return out

    def forms(self, ks: IntArray, S: IntArray, bS: FloatArray) -> FloatArray:
        """``β_Sᵀ K_m[S, S] β_S`` for m in ks, reading |ks|·|S|² entries."""
        self.c.add("inactive forms", len(ks) * len(S) * len(S))
        out = np.empty(len(ks))
        for blk in np.array_split(np.arange(len(ks)), max(1, len(ks) // CHUNK_KERNELS)):
            sub = self.G[ks[blk]][:, S][:, :, S]
            out[blk] = np.einsum("mij,i,j->m", sub, bS, bS)
        return out


# --- SMO on K_θ, in β = Yα ------------------------------------------------------------------


class KTheta:
    """Columns of K_θ: from a formed matrix (n reads each) or on demand (|A|·n), cached."""

    def __init__(self, st: Stack, theta: FloatArray, act: IntArray, formed: bool) -> None:
        self.st, self.theta, self.act = st, theta, act
        self.K = st.combine(theta, act) if formed else None
        self.d = np.diag(self.K).copy() if self.K is not None else st.diag(theta, act)
        self.cache: dict[int, FloatArray] = {}

    def col(self, i: int) -> FloatArray:
        c = self.cache.get(i)
        if c is None:
            if self.K is not None:
                self.st.c.add("formed columns", self.st.n)
                self.st.c.formed_columns += 1
                c = self.K[:, i].copy()
            else:
                c = self.st.column(self.theta, self.act, i)
            self.cache[i] = c
        return c


def smo(
    kt: KTheta, y: FloatArray, C: float, beta: FloatArray, f: FloatArray, eps: float,
    max_steps: int, eager_kernels: int,
) -> tuple[int, bool]:  # fmt: skip
    """Maximise Σ y_t β_t − ½ βᵀK_θβ over the box and Σβ = 0, in place (β, f = K_θβ).

    Returns the steps taken and whether the stop m − M < eps was reached."""
    ub = np.where(y > 0, C, 0.0)
    lb = np.where(y > 0, 0.0, -C)
    st = kt.st
    steps = 0
    while steps < max_steps:
        v = y - f  # the dual gradient in β
        up = beta < ub - 1e-15 * C
        low = beta > lb + 1e-15 * C
        vu = np.where(up, v, -np.inf)
        i = int(np.argmax(vu))
        m = vu[i]
        vl = np.where(low, v, np.inf)
        if m - vl.min() < eps:
            return steps, True
        Ki = kt.col(i)
        b = m - v
        cand = low & (b > 0)
        a = kt.d[i] + kt.d - 2.0 * Ki
        a = np.where(a > TAU, a, TAU)
        score = np.where(cand, b * b / a, -np.inf)
        j = int(np.argmax(score))
        Kj = kt.col(j)
        t = min(b[j] / a[j], ub[i] - beta[i], beta[j] - lb[j])
        beta[i] += t
        beta[j] -= t
        f += t * (Ki - Kj)
        steps += 1
        st.c.eager_h_entries += 2 * eager_kernels * st.n
    return steps, False


def best_intercept(y: FloatArray, f: FloatArray) -> float:
    """Minimiser of Σ max(0, 1 − y(f + b)): the n₊-th smallest breakpoint y − f."""
    npos = int(np.sum(y > 0))
    c = y - f
    return float(np.partition(c, npos - 1)[npos - 1])


def hinge_sum(y: FloatArray, f: FloatArray, b: float) -> float:
    return float(np.maximum(0.0, 1.0 - y * (f + b)).sum())


# --- per-kernel gradient caches -------------------------------------------------------------


class Caches:
    """h_m = K_m β, each kernel's cache exact at some earlier β (a version) and brought up to
    date lazily, when read, from the coefficients that changed since (or from the support
    vectors when fewer). Kernels that leave the active set keep their (stale) caches."""

    def __init__(self, st: Stack) -> None:
        self.st = st
        self.h = np.zeros((st.M, st.n))
        self.ver = np.full(st.M, -1)  # -1: never computed
        self.snaps: dict[int, FloatArray] = {}
        self.next = 0

    def update(self, beta: FloatArray, act: IntArray) -> None:
        S = np.flatnonzero(beta)
        for v in np.unique(self.ver[act]):
            ks = act[self.ver[act] == v]
            if v < 0:
                self.h[ks] = self.st.products(ks, S, beta[S])
                continue
            delta = beta - self.snaps[int(v)]
            ch = np.flatnonzero(delta)
            if len(ch) <= len(S):
                if len(ch):
                    self.h[ks] += self.st.products(ks, ch, delta[ch])
            else:
                self.h[ks] = self.st.products(ks, S, beta[S])
        self.snaps[self.next] = beta.copy()
        self.ver[act] = self.next
        self.next += 1
        live = set(np.unique(self.ver).tolist())
        self.snaps = {k: v for k, v in self.snaps.items() if k in live}


# --- ℓp: Kloft's Algorithm 1 (warm-started solves) or 2 (interleaved) ----------------------


@dataclass
class Fit:
    P: float
    D: float
    gap: float
    outer: int
    converged: bool
    active: int
    counts: Counts = field(default_factory=Counts)
    note: str = ""


def lp_penalty(s: FloatArray, p: float) -> float:
    q = 2 * p / (p + 1)
    return 0.5 * float(np.sum(s**q)) ** (2 / q)


def fit_lp(
    G: FloatArray, y: FloatArray, C: float, p: float, interleaved: bool, formed: bool = True
) -> Fit:
    """Kloft's Algorithm 1 (or 2 with ``interleaved``) on the cached base; ``formed``: the first
    solve on the formed uniform-θ kernel, else on demand from the start. Also counts what the
    same iterates would read without the caches (``Counts.no_caches``): γ by the forms
    β_Sᵀ K_m[S, S] β_S, and the gradient at a new θ from the columns of K_θ on the support
    vectors, which then stay in the column cache for the solve."""
    st = Stack(G)
    M, n = st.M, st.n
    act = np.arange(M)
    ps = p / (p - 1)
    theta = np.full(M, M ** (-1.0 / p))
    beta, f = np.zeros(n), np.zeros(n)
    caches = Caches(st)
    kt = KTheta(st, theta, act, formed=formed)
    S_prev: set[int] = set()
    tol_in = max(1e-3, INNER_FLOOR) if not interleaved else INNER_FLOOR
    omega = min(ps, 4.0) if not interleaved else 1.0
    chunk = max(n, 100) if interleaved else MAX_SMO
    Pb, Db, best_gap = np.inf, -np.inf, np.inf
    for outer in range(1, MAX_OUTER + 1):
        steps, _ = smo(kt, y, C, beta, f, tol_in, chunk, M)
        st.c.smo_steps += steps
        st.c.solves += 1
        S = np.flatnonzero(beta)
        st.c.no_caches += len(S) ** 2 * M  # γ by the forms
        if kt.K is None:  # columns: the support vectors' (for the gradient) and SMO's others
            st.c.no_caches += len(S_prev | set(kt.cache)) * M * n + M * n
        else:
            st.c.no_caches += M * n * n + len(kt.cache) * n
        S_prev = set(S.tolist())
        caches.update(beta, act)
        gam = np.maximum(caches.h @ beta, 0.0)
        f = theta @ caches.h  # equals SMO's f up to rounding
        b = best_intercept(y, f)
        s = theta * np.sqrt(gam)
        P = C * hinge_sum(y, f, b) + lp_penalty(s, p)
        D = float(np.sum(y * beta)) - 0.5 * float(np.sum(gam**ps)) ** (1 / ps)
        Pb, Db = min(Pb, P), max(Db, D)
        st.c.primal_trace.append((st.c.solves, st.c.entries, Pb))
        gap = (Pb - Db) / max(abs(Pb), 1e-12)
        st.c.milestone(gap)
        if gap <= TOL:
            return Fit(Pb, Db, gap, outer, True, M, st.c)
        if not interleaved:
            if gap >= 0.9 * best_gap:
                tol_in = max(0.1 * tol_in, INNER_FLOOR)
                omega = 1.0
            tol_in = min(tol_in, max(0.1 * gap, INNER_FLOOR))
        best_gap = min(best_gap, gap)
        T = (theta**2 * gam) ** (1 / (p + 1))
        T /= np.linalg.norm(T, p)
        if omega != 1.0:
            ok = (theta > 0) & (T > 0)
            T = np.where(ok, theta * (T / np.where(ok, theta, 1.0)) ** omega, T)
            T /= np.linalg.norm(T, p)
        theta = T
        st.c.theta_updates += 1
        f = theta @ caches.h  # the SMO gradient at the new θ, from the caches
        kt = KTheta(st, theta, act, formed=False)
    return Fit(Pb, Db, gap, MAX_OUTER, False, M, st.c)


# --- l1: spectral projected gradient on θ ≥ 0 with an active set of kernels ----------------


def best_on_segment(
    sa_hat: float, q_hat: FloatArray, sa: float, q: FloatArray, x: FloatArray
) -> tuple[float, float]:
    """l1 hinge dual on the segment (1 − λ)β̂ + λβ: (best D, its λ), by golden section.

    D(λ) = ((1 − λ) Σα̂ + λ Σα) / max(1, max_m √q_m(λ)), q(λ) = (1−λ)² q̂ + 2λ(1−λ) x + λ² q,
    x_m = β̂ᵀK_mβ (docs/mathematics.md §2.11, dual aggregation)."""

    def D(lam: float) -> float:
        ql = (1 - lam) ** 2 * q_hat + 2 * lam * (1 - lam) * x + lam * lam * q
        return ((1 - lam) * sa_hat + lam * sa) / max(1.0, float(np.sqrt(max(ql.max(), 0.0))))

    g = (np.sqrt(5.0) - 1) / 2
    lo, hi = 0.0, 1.0
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = D(a), D(b)
    for _ in range(40):
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = D(b)
        else:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = D(a)
    cands = [(D(0.0), 0.0), (D(1.0), 1.0), (fa, a), (fb, b)]
    return max(cands)


def fit_l1(
    G: FloatArray, y: FloatArray, C: float, scaled: bool = True, aggregate: bool = False,
    memory: int = 10,
) -> Fit:  # fmt: skip
    """min_θ≥0 F(θ) = W(θ) + ½Σθ; W = the SVM's optimum on K_θ (its dual at the inexact α).

    ``scaled``: the gradient step in the metric diag(θ + METRIC_FLOOR·mean θ)⁻¹ (each weight
    moves in proportion to itself, plus a floor so that a weight at 0 can enter), the BB step
    measured in the same metric; otherwise Euclidean SPG. ``aggregate``: the certificate at the
    best point of the segment from the best dual point so far (its cross forms β̂ᵀK_mβ = β̂ᵀh_m
    come from the caches), read every ``CERT_EVERY`` steps as well as when the restricted gap
    reaches tol."""
    st = Stack(G)
    M, n = st.M, st.n
    theta = np.ones(M)  # the first solve is the SVC on the summed kernel
    act = np.arange(M)
    beta, f = np.zeros(n), np.zeros(n)
    caches = Caches(st)
    tol_in = 0.1
    Pb, Db = np.inf, -np.inf
    hist: list[float] = []
    kt = KTheta(st, theta, act, formed=True)
    note = ""

    def solve(th: FloatArray, a: IntArray, kt: KTheta, eps: float) -> FloatArray:
        steps, _ = smo(kt, y, C, beta, f, eps, MAX_SMO, len(a))
        st.c.smo_steps += steps
        st.c.solves += 1
        caches.update(beta, a)
        return np.maximum(caches.h[a] @ beta, 0.0)

    def value(th: FloatArray, a: IntArray, gam_a: FloatArray) -> float:
        return float(np.sum(y * beta)) - 0.5 * float(th[a] @ gam_a) + 0.5 * float(th[a].sum())

    def certify(
        th: FloatArray, a: IntArray, gam_a: FloatArray, gmax: float, valid: bool,
        D_other: float = -np.inf,
    ) -> float:  # fmt: skip
        """Relative gap; with ``valid`` (gmax over every kernel) D is recorded as a bound."""
        nonlocal Pb, Db
        fa = th[a] @ caches.h[a]
        b = best_intercept(y, fa)
        P = C * hinge_sum(y, fa, b) + float(th[a] @ np.sqrt(gam_a))
        D = max(float(np.sum(y * beta)) / max(1.0, np.sqrt(gmax)), D_other)
        Pb = min(Pb, P)
        st.c.primal_trace.append((st.c.solves, st.c.entries, Pb))
        if valid:
            Db = max(Db, D)
            st.c.milestone((Pb - Db) / max(abs(Pb), 1e-12))
        return (Pb - max(Db, D)) / max(abs(Pb), 1e-12)

    def metric(th: FloatArray) -> FloatArray:
        if not scaled or len(th) == 0:
            return np.ones(len(th))
        return th + METRIC_FLOOR * float(th.mean()) + 1e-300

    gam = solve(theta, act, kt, tol_in)
    F = value(theta, act, gam)
    grad = 0.5 * (1.0 - gam)
    step = 1.0 / max(float(np.abs(metric(theta[act]) * grad).max()), 1e-12)
    gap = np.inf
    b_hat: FloatArray | None = None
    q_hat = np.zeros(M)
    for outer in range(1, MAX_OUTER + 1):
        gmax_act = float(gam.max()) if len(act) else 0.0
        full = len(act) == M
        gap = certify(theta, act, gam, gmax_act, full)
        if full and gap <= TOL:
            return Fit(Pb, Db, gap, outer, True, len(act), st.c, note)
        if gap <= TOL or (aggregate and outer % CERT_EVERY == 0):
            # the restricted certificate holds: read the inactive kernels' forms
            ina = np.setdiff1d(np.arange(M), act)
            S = np.flatnonzero(beta)
            if LAZY_INACTIVE:  # the inactive kernels' stale caches, brought up to date
                caches.update(beta, ina)
                gin = np.maximum(caches.h[ina] @ beta, 0.0)
            else:
                gin = st.forms(ina, S, beta[S])
            st.c.certificates_full += 1
            gmax = max(gmax_act, float(gin.max()) if len(gin) else 0.0)
            D_agg = -np.inf
            if aggregate:
                q_all = np.zeros(M)
                q_all[act], q_all[ina] = gam, gin
                everyone = np.arange(M)
                caches.update(beta, everyone)  # already current: no reads
                if b_hat is None:
                    b_hat, q_hat = beta.copy(), q_all
                x = caches.h @ b_hat
                sa_hat, sa = float(np.sum(y * b_hat)), float(np.sum(y * beta))
                D_agg, lam = best_on_segment(sa_hat, q_hat, sa, q_all, x)
                q_hat = (1 - lam) ** 2 * q_hat + 2 * lam * (1 - lam) * x + lam * lam * q_all
                b_hat = (1 - lam) * b_hat + lam * beta
            gap = certify(theta, act, gam, gmax, True, D_agg)
            if gap <= TOL:
                return Fit(Pb, Db, gap, outer, True, len(act), st.c, note)
            enter = ina[gin > max(1.0, gmax_act)]
            if len(enter):
                act = np.union1d(act, enter)
                caches.update(beta, act)
                gam = np.maximum(caches.h[act] @ beta, 0.0)
                F = value(theta, act, gam)
                grad = 0.5 * (1.0 - gam)
        tol_in = max(INNER_FLOOR, min(tol_in, 0.1 * gap))
        hist = (hist + [F])[-memory:]
        # projected direction over the active kernels
        w = metric(theta[act])
        d = np.maximum(0.0, theta[act] - step * w * grad) - theta[act]
        reach = float(np.abs(d).sum()) / max(float(theta[act].sum()), 1e-300)
        if reach > TRUST:  # no step moves more weight than TRUST times what the kernels hold
            d *= TRUST / reach
        slope = float(grad @ d)
        lam = 1.0
        beta_save, f_save = beta.copy(), f.copy()
        for _ in range(30):
            th_new = theta.copy()
            th_new[act] = np.maximum(theta[act] + lam * d, 0.0)
            new_act = act[th_new[act] > 0]
            f[:] = th_new[new_act] @ caches.h[new_act]
            kt = KTheta(st, th_new, new_act, formed=False)
            st.c.theta_updates += 1
            gam_new = solve(th_new, new_act, kt, tol_in)
            F_new = value(th_new, new_act, gam_new)
            if F_new <= max(hist) + 1e-4 * lam * slope or lam < 1e-6:
                break
            beta[:], f[:] = beta_save, f_save
            caches.update(beta, act)  # the rejected solve's changes, undone in the caches
            lam *= 0.5
            note = "backtracked"
        # Barzilai–Borwein step over the kernels that stay active
        keep = np.isin(act, new_act)
        s_vec = (th_new - theta)[new_act]
        yv = 0.5 * (1.0 - gam_new) - grad[keep]
        sy = float(s_vec @ yv)
        ss = float(s_vec @ (s_vec / w[keep]))
        step = ss / sy if sy > 0 else 2.0 * step
        step = min(max(step, 1e-10), 1e10)
        theta, act, gam, F = th_new, new_act, gam_new, F_new
        grad = 0.5 * (1.0 - gam)
    return Fit(Pb, Db, gap, MAX_OUTER, False, len(act), st.c, note)


# --- references -----------------------------------------------------------------------------


def svc_reads(G: FloatArray, y: FloatArray, C: float) -> tuple[float, int, int]:
    """Entries the SVC on the summed kernel reads: the sum, then n per column the SMO touches."""
    st = Stack(G)
    kt = KTheta(st, np.ones(st.M), np.arange(st.M), formed=True)
    beta, f = np.zeros(st.n), np.zeros(st.n)
    steps, _ = smo(kt, y, C, beta, f, 1e-3, MAX_SMO, 0)
    return st.c.entries, st.c.formed_columns, steps


DESIGNS: dict[str, Callable[[FloatArray, FloatArray, float], Fit]] = {
    "lp2": lambda G, y, C: fit_lp(G, y, C, 2.0, False),
    "lp43": lambda G, y, C: fit_lp(G, y, C, 4.0 / 3.0, False),
    "lp2-il": lambda G, y, C: fit_lp(G, y, C, 2.0, True),
    "lp2-demand": lambda G, y, C: fit_lp(G, y, C, 2.0, False, formed=False),
    "lp43-il": lambda G, y, C: fit_lp(G, y, C, 4.0 / 3.0, True),
    "l1": fit_l1,
    "l1-euclid": lambda G, y, C: fit_l1(G, y, C, scaled=False),
    "l1-agg": lambda G, y, C: fit_l1(G, y, C, aggregate=True),
}
ENGINE: dict[str, dict[str, Any]] = {
    "lp2": {"penalty": "lp", "p": 2.0},
    "lp43": {"penalty": "lp", "p": 4.0 / 3.0},
    "lp2-il": {"penalty": "lp", "p": 2.0},
    "lp2-demand": {"penalty": "lp", "p": 2.0},
    "lp43-il": {"penalty": "lp", "p": 4.0 / 3.0},
    "l1": {"penalty": "l1"},
    "l1-euclid": {"penalty": "l1"},
    "l1-agg": {"penalty": "l1"},
}


def primal_near(r: dict[str, Any], rel: float) -> tuple[int, float] | None:
    """(solves, passes) at which the prototype's best P came within ``rel`` of the best dual
    value known for the cell (the engine's or the prototype's)."""
    D = max(r["D"], r["engine_D"])
    for solves, entries, P in r.get("primal_trace", []):
        if (P - D) <= rel * abs(P):
            return solves, entries / (r["M"] * r["n"] ** 2)
    return None


def table(paths: list[str]) -> str:
    """The markdown table of one or more ``--out`` files (later files override a cell)."""
    cells: dict[tuple[str, float, str], dict[str, Any]] = {}
    for path in paths:
        for r in json.loads(Path(path).read_text()):
            key = (r["set"], r["C"], r["design"])
            t = r["engine_time_ratio"]
            if t != t and key in cells:  # a counts-only run keeps the timed run's ratio
                r["engine_time_ratio"] = cells[key]["engine_time_ratio"]
            cells[key] = r
    head = (
        "| set (n, M) | C | design | passes | ÷ SVC reads | solves | SMO steps | columns "
        "| gap | P | engine P | engine it. | engine time ÷ SVC | to gap 1e-2: solves, passes "
        "| P within 1e-3 of the best D: solves, passes | passes by purpose |\n|" + "---|" * 16
    )
    lines = [head]
    order = {d: k for k, d in enumerate(DESIGNS)}
    sets = list(dict.fromkeys(k[0] for k in cells))
    for key in sorted(cells, key=lambda k: (sets.index(k[0]), k[1], order.get(k[2], 99))):
        r = cells[key]
        by = ", ".join(f"{k} {v:.2f}" for k, v in r["by_passes"].items() if v >= 0.005)
        if r.get("no_caches"):
            by += f"; without caches {r['no_caches'] / (r['M'] * r['n'] ** 2):.2f}"
        mil = r.get("reached", {}).get("1e-2")
        to2 = f"{mil[0]}, {mil[1] / (r['M'] * r['n'] ** 2):.2f}" if mil else "–"
        flag = "" if r["converged"] else " (not reached)"
        near = primal_near(r, 1e-3)
        near_s = f"{near[0]}, {near[1]:.2f}" if near else "–"
        ok = "" if r["consistent"] else " ✗"
        t = r["engine_time_ratio"]
        lines.append(
            f"| {r['set']} ({r['n']}, {r['M']}) | {r['C']:g} | {r['design']} | {r['passes']:.2f} "
            f"| {r['pass_ratio']:.2f} | {r['solves']} | {r['smo_steps']} | {r['columns']} "
            f"| {r['gap']:.1e}{flag} | {r['P']:.4f}{ok} | {r['engine_P']:.4f} "
            f"| {r['engine_iter']} | {'–' if t != t else f'{t:.1f}×'} | {to2} | {near_s} | {by} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="liver_bupa,pima,ionosphere,sonar,breast")
    ap.add_argument("--Cs", default="0.1,1,10")
    ap.add_argument("--designs", default="lp2,lp43,lp2-il,l1")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--table", default="", help="print the markdown table of these --out files")
    args = ap.parse_args()
    if args.table:
        print(table(args.table.split(",")))
        return
    designs = args.designs.split(",")
    rows: list[dict[str, Any]] = []
    for name in args.sets.split(","):
        Pr = breast_cancer_problem() if name == "breast" else uci_problem(name)
        G, y = Pr.Gtr, Pr.ytr
        M, n = G.shape[0], G.shape[1]
        for C in (float(c) for c in args.Cs.split(",")):
            svc_entries, svc_cols, svc_steps = svc_reads(G, y, C)

            def svc(C: float = C, G: Any = G, y: Any = y) -> Any:
                return SVC(kernel="precomputed", C=C, tol=1e-3).fit(G.sum(axis=0), y)

            fits: list[Callable[[], Any]] = [svc]
            for d in designs:

                def eng(
                    C: float = C, kw: dict[str, Any] = ENGINE[d], G: Any = G, y: Any = y
                ) -> Any:
                    est = mk.MKLClassifier(kernels="precomputed", C=C, tol=TOL, **kw)
                    return est.fit(G, y)

                fits.append(eng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if args.repeats > 0:
                    timed = paired_median_times(fits, args.repeats)
                else:  # counts only: each fit once, untimed
                    timed = [(float("nan"), g()) for g in fits]
            t_svc = timed[0][0]
            for d, (t_eng, est) in zip(designs, timed[1:], strict=True):
                fit = DESIGNS[d](G, y, C)
                c = fit.counts
                P_e, D_e = float(est.primal_objective_), float(est.dual_objective_)
                slack = 1e-9 * max(abs(P_e), abs(fit.P))
                consistent = fit.P >= D_e - slack and P_e >= fit.D - slack
                row = {
                    "set": name, "n": n, "M": M, "C": C, "design": d,
                    "passes": c.entries / (M * n * n), "pass_ratio": c.entries / svc_entries,
                    "svc_passes": svc_entries / (M * n * n), "svc_columns": svc_cols,
                    "svc_smo_steps": svc_steps, "P": fit.P, "D": fit.D, "gap": fit.gap,
                    "outer": fit.outer, "converged": fit.converged, "active": fit.active,
                    "engine_P": P_e, "engine_D": D_e, "engine_gap": float(est.duality_gap_),
                    "engine_iter": int(est.n_iter_), "engine_converged": bool(est.converged_),
                    "engine_solver": str(getattr(est, "solvers_", ("?",))[0]),
                    "engine_time_ratio": t_eng / t_svc, "svc_time": t_svc,
                    "consistent": bool(consistent), "note": fit.note, **asdict(c),
                    "by_passes": {k: v / (M * n * n) for k, v in c.by.items()},
                }  # fmt: skip
                rows.append(row)
                print(
                    f"{name:>10} {n:>4} {M:>5} C={C:<4g} {d:>7}: passes {row['passes']:6.2f} "
                    f"ratio {row['pass_ratio']:5.2f} solves {c.solves:>3} smo {c.smo_steps:>6} "
                    f"cols {c.columns:>6} gap {fit.gap:8.1e}{'' if fit.converged else '!'} "
                    f"P {fit.P:10.4f} | engine P {P_e:10.4f} gap {row['engine_gap']:8.1e} "
                    f"it {row['engine_iter']:>3} {row['engine_time_ratio']:5.1f}x svc "
                    f"{'ok' if consistent else 'INCONSISTENT'} {fit.note} "
                    + " ".join(f"{k}={v:.2f}" for k, v in row["by_passes"].items()),
                    flush=True,
                )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
