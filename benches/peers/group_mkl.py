"""Group MKL (``penalty="group"``, ``solver="mirror"``): time, iterations and stack reads to a
1e-3 duality gap against the number of kernels, and against cvxpy + Clarabel.

Problem: scikit-learn's digits, odd vs even, features / 16, a stratified random subset of n
points. Five groups = five disjoint random column subsets (views) of the 64 features, each
holding M/5 Gaussian kernels exp(−d²/(2σ²)) on its columns, σ spread geometrically over
[0.1, 10] × the view's median pairwise distance (on all 1797 digits), unit mean diagonal
(Gaussians already have it). Hinge loss, C = 1, tol 1e-3.

1. Small problems (M = 50, n ∈ {100, 200}) against cvxpy + Clarabel
   (``tests/python/reference.py::cvxpy_mkl``): time ratio cvxpy / ours and our distance to
   its objective.
2. The grid n ∈ {500, 1000} × M ∈ {50, 200, 1000}: per method, time to a 1e-3 gap,
   iterations, stack reads, final gap and primal. Methods: the mirror solver's step rules
   (newton, the default; adaptive; paper) with the kernel working set, newton and adaptive
   without it, lp p = 1 (``solver="analytic"``, a different problem: ℓ1 over all kernels
   instead of ℓ∞ over groups of ℓ1), and newton and adaptive with ONE group, which is
   lp p = 1's problem (the like-for-like comparison; its primal is compared with lp's).

Stack reads, in whole-stack passes, from ``history_``: every iteration combines and takes the
quadratic forms of its ``active`` kernels (2·active/M), and every record with a finite dual
and ``active < M`` is a whole-problem check (one more pass); lp counts 2 per iteration.
They leave out the estimator's validation of the stack (finite, symmetric: one more read,
inside the timed fit). "pass (s)" is the time of one ``quad_forms`` over the whole stack.

Timing: within each repeat the methods are called in turn; the time is the median of
``--repeats`` runs, but a method whose first run exceeds ``--slow`` seconds runs once.
At n = 1000, M = 1000 the stack is float32 (4 GB; float64 would be 8 GB), elsewhere float64.

    python benches/peers/group_mkl.py [--quick] [--sizes 500x50,1000x1000] [--parts ab]
        [--repeats 3] [--slow 30] [--max-iter 3000] [--out benches/peers/results/group_mkl.md]
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))

N_GROUPS = 5
TOL = 1e-3
F32_BYTES = 4e9  # stacks above this many float64 bytes are built in float32

OUT: list[str] = []


def emit(line: str = "") -> None:
    print(line, flush=True)
    OUT.append(line)


# --- problem --------------------------------------------------------------------------------


def digits() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    X, y = load_digits(return_X_y=True)
    return X / 16.0, np.where(y % 2 == 1, 1.0, -1.0)


def views(seed: int = 0) -> list[list[int]]:
    perm = np.random.default_rng(seed).permutation(64)
    return [sorted(v.tolist()) for v in np.array_split(perm, N_GROUPS)]


def median_distance(X: NDArray[np.float64], cols: list[int]) -> float:
    Z = X[:, cols]
    sq = (Z * Z).sum(axis=1)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T, 0.0)
    return float(np.sqrt(np.median(D2[np.triu_indices(len(Z), 1)])))


def problem(
    n: int, M: int, dtype: Any, seed: int = 0
) -> tuple[NDArray[Any], NDArray[np.float64], list[int], float]:
    """The (M, n, n) stack, the targets, the group of each kernel and the Gram time."""
    X, y = digits()
    if n < len(y):
        idx, _ = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)
    else:
        idx = np.arange(len(y))
    per = M // N_GROUPS
    specs: list[mk.kernels.Kernel] = []
    groups: list[int] = []
    for j, cols in enumerate(views(seed)):
        scale = median_distance(X, cols)
        for s in scale * np.geomspace(0.1, 10.0, per):
            specs.append(mk.kernels.Gaussian(sigma=float(s), features=cols))
            groups.append(j)
    t = time.perf_counter()
    G = mk.kernels.gram(X[idx], specs, normalize="mean_diag", dtype=dtype)
    return G, y[idx], groups, time.perf_counter() - t


# --- fits -----------------------------------------------------------------------------------


@dataclass
class Fit:
    n_iter: int
    reads: float
    gap: float
    primal: float
    converged: bool
    min_gap: float  # smallest recorded (finite) gap: negative would be a broken certificate


def group_fit(
    G: NDArray[Any],
    y: NDArray[np.float64],
    groups: list[int],
    step: str,
    working_set: bool,
    max_iter: int,
    tol: float = TOL,
) -> Fit:
    clf = mk.MKLClassifier(
        kernels="precomputed",
        penalty="group",
        groups=groups,
        C=1.0,
        tol=tol,
        max_iter=max_iter,
        solver_config=mk.MirrorConfig(step=step, working_set=working_set),  # type: ignore[arg-type]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(G, y)
    h = clf.history_
    M = G.shape[0]
    checks = np.count_nonzero(np.isfinite(h["dual"]) & (h["active"] < M))
    return summary(clf, float((2.0 * h["active"] / M).sum() + checks))


def lp1_fit(G: NDArray[Any], y: NDArray[np.float64], max_iter: int) -> Fit:
    clf = mk.MKLClassifier(
        kernels="precomputed",
        penalty="lp",
        p=1.0,
        solver="analytic",
        C=1.0,
        tol=TOL,
        max_iter=max_iter,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(G, y)
    return summary(clf, 2.0 * clf.n_iter_)


def summary(clf: mk.MKLClassifier, reads: float) -> Fit:
    gaps = clf.history_["gap"]
    gaps = gaps[np.isfinite(gaps)]
    return Fit(
        n_iter=int(clf.n_iter_),
        reads=reads,
        gap=float(clf.duality_gap_),
        primal=float(clf.primal_objective_),
        converged=bool(clf.converged_),
        min_gap=float(gaps.min()) if len(gaps) else math.nan,
    )


def timed_in_turn(
    fs: list[Callable[[], Any]], repeats: int, slow: float
) -> list[tuple[float, int, Any]]:
    """Median time, number of runs and last result of each of ``fs``, called in turn within
    each repeat; one whose first run took more than ``slow`` seconds is not run again."""
    times: list[list[float]] = [[] for _ in fs]
    outs: list[Any] = [None] * len(fs)
    for r in range(repeats):
        for k, f in enumerate(fs):
            if r > 0 and times[k][0] > slow:
                continue
            gc.collect()  # not inside a timed call (cvxpy leaves many objects behind)
            t = time.perf_counter()
            outs[k] = f()
            times[k].append(time.perf_counter() - t)
    return [(statistics.median(ts), len(ts), o) for ts, o in zip(times, outs, strict=True)]


def pass_time(G: NDArray[Any], repeats: int = 3) -> float:
    v = np.ones(G.shape[1])
    mk.kernels.quad_forms(G, v)  # warm-up (pages the stack in)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        mk.kernels.quad_forms(G, v)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def gap_cell(f: Fit) -> str:
    s = f"{f.gap:.1e}"
    if not f.converged:
        s += " (not conv.)"
    if f.min_gap < 0:
        s += f", min {f.min_gap:.1e}"
    return s


# --- 1. against cvxpy ------------------------------------------------------------------------


def cvxpy_cases(
    G: NDArray[Any], y: NDArray[np.float64], groups: list[int], max_iter: int
) -> list[tuple[str, Callable[[], Fit]]]:
    return [
        ("newton, working set", partial(group_fit, G, y, groups, "newton", True, max_iter)),
        (
            "newton, working set, tol 1e-6",
            partial(group_fit, G, y, groups, "newton", True, max_iter, tol=1e-6),
        ),
        ("adaptive, working set", partial(group_fit, G, y, groups, "adaptive", True, max_iter)),
        ("paper, working set", partial(group_fit, G, y, groups, "paper", True, max_iter)),
        ("adaptive, no working set", partial(group_fit, G, y, groups, "adaptive", False, max_iter)),
        (
            "adaptive, working set, tol 1e-6",
            partial(group_fit, G, y, groups, "adaptive", True, max_iter, tol=1e-6),
        ),
    ]


def versus_cvxpy(ns: list[int], repeats: int, slow: float, max_iter: int) -> None:
    from reference import cvxpy_mkl

    M = 50
    emit(f"\n## Against cvxpy + Clarabel: digits views, M = {M} (5 groups of 10), hinge, C = 1")
    emit(
        "\nOurs: tol 1e-3 (and 1e-6 for the distance at a tight gap); rel. diff = "
        "(P_ours − P_cvxpy) / P_cvxpy; ratio = cvxpy time / our time."
    )
    emit()
    emit("| n | method | ours (s) | cvxpy (s) | cvxpy / ours | iters | gap | P ours | rel. diff |")
    emit("|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        G, y, groups, _ = problem(n, M, np.float64)
        cases = cvxpy_cases(G, y, groups, max_iter)
        res = timed_in_turn(
            [partial(cvxpy_mkl, G, y, C=1.0, loss="hinge", penalty="group", groups=groups)]
            + [f for _, f in cases],
            repeats,
            slow,
        )
        t_ref, runs_ref, ref = res[0]
        for (name, _), (t, _, f) in zip(cases, res[1:], strict=True):
            emit(
                f"| {n} | {name} | {t:.4f} | {t_ref:.1f} ({runs_ref}×) | {t_ref / t:,.0f} | "
                f"{f.n_iter} | {gap_cell(f)} | {f.primal:.7g} | "
                f"{(f.primal - ref.objective) / ref.objective:+.1e} |"
            )


# --- 2. the grid ----------------------------------------------------------------------------


METHODS = [
    "newton, WS",
    "adaptive, WS",
    "paper, WS",
    "newton, no WS",
    "adaptive, no WS",
    "lp p=1 analytic",
    "newton, WS, 1 group",
    "adaptive, WS, 1 group",
]


def grid(
    sizes: list[tuple[int, int]], repeats: int, slow: float, max_iter: int
) -> dict[tuple[int, int, str], tuple[float, Fit]]:
    emit("\n## Digits views: 5 groups of M/5 Gaussian kernels, hinge, C = 1, tol 1e-3")
    emit(
        f"\nmax_iter {max_iter}; WS = kernel working set; reads in whole-stack passes "
        "(estimator's validating read excluded); time = median of the runs shown; "
        "'vs lp' = time / lp p=1 time (same run); 1 group = lp p=1's problem, its "
        "rel. diff is (P − P_lp)/P_lp."
    )
    emit()
    emit(
        "| n | M | stack | pass (s) | method | time (s) | runs | vs lp | iters | reads | "
        "gap | primal |"
    )
    emit("|---|---|---|---|---|---|---|---|---|---|---|---|")
    table: dict[tuple[int, int, str], tuple[float, Fit]] = {}
    for n, M in sizes:
        dtype = np.float32 if 8.0 * M * n * n > F32_BYTES else np.float64
        G, y, groups, t_gram = problem(n, M, dtype)
        t_pass = pass_time(G)
        one = [0] * M
        fs: list[Callable[[], Fit]] = [
            partial(group_fit, G, y, groups, "newton", True, max_iter),
            partial(group_fit, G, y, groups, "adaptive", True, max_iter),
            partial(group_fit, G, y, groups, "paper", True, max_iter),
            partial(group_fit, G, y, groups, "newton", False, max_iter),
            partial(group_fit, G, y, groups, "adaptive", False, max_iter),
            partial(lp1_fit, G, y, max_iter),
            partial(group_fit, G, y, one, "newton", True, max_iter),
            partial(group_fit, G, y, one, "adaptive", True, max_iter),
        ]
        res = timed_in_turn(fs, repeats, slow)
        t_lp, _, lp = res[METHODS.index("lp p=1 analytic")]
        stack = f"{np.dtype(dtype).name}, {G.nbytes / 1e9:.2g} GB"
        for name, (t, runs, f) in zip(METHODS, res, strict=True):
            table[n, M, name] = (t, f)
            primal = f"{f.primal:.6g}"
            if name.endswith("1 group"):
                primal += f" ({(f.primal - lp.primal) / lp.primal:+.1e})"
            emit(
                f"| {n} | {M} | {stack} | {t_pass:.3f} | {name} | {t:.3g} | {runs} | "
                f"{t / t_lp:.3g} | {f.n_iter} | {f.reads:.1f} | {gap_cell(f)} | {primal} |"
            )
        emit(f"|  |  | Gram {t_gram:.1f} s |  |  |  |  |  |  |  |  |  |")
        del G, fs, res
    return table


def against_m(table: dict[tuple[int, int, str], tuple[float, Fit]]) -> None:
    ns = sorted({n for n, _, _ in table})
    ms = sorted({m for _, m, _ in table})
    emit("\n## Stack reads and time (s) against M")
    emit()
    emit("| n | method | " + " | ".join(f"M = {m}" for m in ms) + " |")
    emit("|---|---|" + "---|" * len(ms))
    for n in ns:
        for name in METHODS:
            cells = []
            for m in ms:
                if (n, m, name) in table:
                    t, f = table[n, m, name]
                    mark = "" if f.converged else "*"
                    cells.append(f"{f.reads:.0f} reads, {t:.3g} s{mark}")
                else:
                    cells.append("")
            emit(f"| {n} | {name} | " + " | ".join(cells) + " |")
    emit("\n\\* did not reach the 1e-3 gap (max_iter or stalled)")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        n, m = item.lower().split("x")
        out.append((int(n), int(m)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 300, M ∈ {50, 200}; cvxpy n = 100")
    ap.add_argument(
        "--sizes",
        default="500x50,500x200,500x1000,1000x50,1000x200,1000x1000",
        help="comma-separated n x M of the grid",
    )
    ap.add_argument("--cvxpy-n", default="100,200", help="comma-separated n against cvxpy")
    ap.add_argument("--parts", default="ab", help="a = cvxpy, b = grid")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats (median)")
    ap.add_argument("--slow", type=float, default=30.0, help="a run longer than this runs once")
    ap.add_argument("--max-iter", type=int, default=3000)
    ap.add_argument("--out", type=Path, help="also write the markdown here")
    args = ap.parse_args()
    sizes = [(300, 50), (300, 200)] if args.quick else parse_sizes(args.sizes)
    cvx_ns = [100] if args.quick else [int(s) for s in args.cvxpy_n.split(",")]
    t0 = time.perf_counter()
    emit("# Group MKL (mirror solver) benchmark")
    emit(
        f"\nmultikernel {mk.__version__}, numpy {np.__version__}, "
        f"{len(__import__('os').sched_getaffinity(0))} cores"
    )
    if "a" in args.parts:
        versus_cvxpy(cvx_ns, args.repeats, args.slow, args.max_iter)
    if "b" in args.parts:
        against_m(grid(sizes, args.repeats, args.slow, args.max_iter))
    emit(f"\nTotal {time.perf_counter() - t0:.0f} s.")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(OUT) + "\n")


if __name__ == "__main__":
    main()
