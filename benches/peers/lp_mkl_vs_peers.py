"""ℓp-norm MKL fit time against peers, measured in one run (ratios of medians of repeats).

1. Kloft et al.'s setup: digits odd vs even (scikit-learn's bundled digits, scaled to [0, 1]),
   n ∈ {500, 1000, 2000}, M = 50 kernels K_j = exp(−‖x − x'‖² / 1.2^(j−1)), C = 1,
   p ∈ {4/3, 2}: our fit time / scikit-learn's SVC on the precomputed sum kernel, on the f64
   stack and on its f32 copy, and through ``MKLClassifier`` (which first checks that the stack
   is finite and symmetric, one read of all of it); also against SVC's whole fit, summing the
   stack into its kernel included. Every timed call runs in turn within each repeat. For scale,
   the time of one ``quad_forms`` pass over the stack (the upper triangles, the bytes one
   ``combine`` of K_θ reads) is given as a multiple of SVC's time too: a fit cannot cost less
   than the passes it makes. The same pass bounds the check's cost from below: the solver reads
   only upper triangles, the check must read the lower ones too, so a checking estimator costs
   at least the bare fit plus one such pass (printed after the table).
2. n = 1000, M = 1000 precomputed kernels (float64 and float32 stacks): our fit time.
3. A small problem against cvxpy + Clarabel: time ratio at equal objective.

    python benches/peers/lp_mkl_vs_peers.py [--quick] [--repeats R] [--parts abc]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_digits
from sklearn.svm import SVC

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_time, paired_median_times  # noqa: E402
from problems import fit_lp  # noqa: E402


def digits(n: int, seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    idx = np.random.default_rng(seed).permutation(len(y))
    idx = np.resize(idx, n)  # n = 2000 > 1797 repeats a few points, as a larger sample would
    return X[idx], np.where(y[idx] % 2 == 1, 1.0, -1.0)


def kloft_stack(X: NDArray[np.float64], M: int = 50) -> NDArray[np.float64]:
    # exp(−d²/w) = exp(−d²/(2σ²)) with σ = sqrt(w/2), w = 1.2^(j−1).
    specs = [mk.kernels.Gaussian(sigma=math.sqrt(1.2 ** (j - 1) / 2.0)) for j in range(1, M + 1)]
    return mk.kernels.gram(X, specs)


def fit(G: NDArray[Any], y: NDArray[np.float64], p: float, algorithm: str = "analytic") -> Any:
    return fit_lp(
        G, y, p=p, C=1.0, loss="hinge", epsilon=0.1, algorithm=algorithm, tol=1e-3,
        max_iter=500, inner_tol=1e-7, n_threads=0,
    )  # fmt: skip


def estimator(G: NDArray[Any], y: NDArray[np.float64], p: float, check: bool = True) -> Any:
    """The user's path: the estimator validates the stack (finite, symmetric) before fitting,
    unless ``check_input=False`` (a trusted stack)."""
    clf = mk.MKLClassifier(kernels="precomputed", p=p, C=1.0, tol=1e-3, max_iter=500)
    return clf.fit(G, y, check_input=check)


def kloft(ns: list[int], repeats: int) -> None:
    print("\n## Kloft setup: digits odd/even, M = 50 Gaussian kernels, C = 1, tol 1e-3")
    print(
        "| n | p | solver | ours (s) | SVC sum kernel (s) | ratio | SVC with summing (s) | "
        "ratio to it | pass / SVC | gap | iters |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        kloft_rows(n, repeats)


def kloft_rows(n: int, repeats: int) -> None:
    X, y = digits(n)
    G = kloft_stack(X)
    K = G.sum(axis=0)
    ones = np.ones(n)
    G32 = G.astype(np.float32)
    mk.kernels.quad_forms(G, ones)  # warm-up
    runs: list[tuple[str, float, Any]] = []
    for p in (4.0 / 3.0, 2.0):
        runs += [
            ("analytic", p, lambda p=p: fit(G, y, p)),
            ("analytic, f32 stack", p, lambda p=p: fit(G32, y, p)),
            ("interleaved", p, lambda p=p: fit(G, y, p, "interleaved")),
            ("MKLClassifier (checks G)", p, lambda p=p: estimator(G, y, p)),
            ("MKLClassifier, check_input=False", p, lambda p=p: estimator(G, y, p, False)),
        ]
    # Every timed call in turn within each repeat: ratios to SVC from the same moments.
    timed = paired_median_times(
        [
            lambda: SVC(kernel="precomputed", C=1.0).fit(K, y),
            lambda: mk.kernels.quad_forms(G, ones),
            # The user's whole SVC fit: the sum kernel formed from the stack, then SVC.
            lambda: SVC(kernel="precomputed", C=1.0).fit(G.sum(axis=0), y),
            *(f for _, _, f in runs),
        ],
        repeats,
    )
    (t_svc, _), (t_pass, _), (t_sum, _) = timed[:3]
    times = {(name, p): t for (name, p, _), (t, _) in zip(runs, timed[3:], strict=True)}
    for (name, p, _), (t, r) in zip(runs, timed[3:], strict=True):
        gap, n_iter = (
            (r.duality_gap_, r.n_iter_) if isinstance(r, mk.MKLClassifier) else (r.gap, r.n_iter)
        )
        print(
            f"| {n} | {p:.3g} | {name} | {t:.3f} | {t_svc:.3f} | {t / t_svc:.2f} | "
            f"{t_sum:.3f} | {t / t_sum:.2f} | {t_pass / t_svc:.2f} | {gap:.1e} | {n_iter} |"
        )
    # The check must read the lower triangles, which the solver never reads whole (its passes
    # use the upper ones): even fused with its first pass, one half-stack read more.
    for p in (4.0 / 3.0, 2.0):
        bare = times[("analytic", p)]
        print(
            f"\n- n = {n}, p = {p:.3g}: MKLClassifier / analytic "
            f"{times[('MKLClassifier (checks G)', p)] / bare:.2f}; a checking estimator's floor, "
            f"(analytic + one quad_forms pass) / analytic, {(bare + t_pass) / bare:.2f}"
        )


def many_kernels(repeats: int) -> None:
    print("\n## n = 1000, M = 1000 precomputed Gaussian kernels on random feature subsets")
    X, y = digits(1000, seed=1)
    rng = np.random.default_rng(0)
    specs = [
        mk.kernels.Gaussian(
            sigma=float(rng.uniform(0.5, 4.0)),
            features=sorted(rng.choice(64, size=8, replace=False).tolist()),
        )
        for _ in range(1000)
    ]
    for dtype in (np.float32, np.float64):
        t0 = time.perf_counter()
        G = mk.kernels.gram(X, specs, normalize="mean_diag", dtype=dtype)
        t_gram = time.perf_counter() - t0
        for p in (4.0 / 3.0, 2.0):
            t, r = median_time(lambda: fit(G, y, p), repeats)  # noqa: B023, F821
            print(
                f"- {np.dtype(dtype).name}, p = {p:.3g}: fit {t:.2f} s (Gram {t_gram:.2f} s), "
                f"gap {r.gap:.1e}, {r.n_iter} iterations, {r.status}"
            )
        del G


def versus_cvxpy(repeats: int) -> None:
    from reference import cvxpy_mkl, load_dataset, primal_objective

    print("\n## Small problem against cvxpy + Clarabel (ionosphere n = 150, M = 20, hinge)")
    X, y = load_dataset("ionosphere", n=150, seed=0)
    specs = [mk.kernels.Gaussian(sigma=s) for s in np.geomspace(1, 20, 10)]
    specs += [mk.kernels.Gaussian(sigma=2.0, features=[j]) for j in range(10)]
    G = mk.kernels.gram(X, specs, normalize="mean_diag")
    print("| p | ours (s) | cvxpy (s) | ratio | ours P | cvxpy P | rel. diff |")
    print("|---|---|---|---|---|---|---|")
    for p in (4.0 / 3.0, 2.0, 4.0):
        t_ref, ref = median_time(
            lambda p=p: cvxpy_mkl(G, y, C=1.0, loss="hinge", penalty="lp", p=p),
            max(1, repeats // 2),
        )
        t, r = median_time(
            lambda p=p: fit_lp(
                G,
                y,
                p=p,
                C=1.0,
                loss="hinge",
                epsilon=0.1,
                algorithm="analytic",
                tol=1e-6,
                max_iter=1000,
                inner_tol=1e-8,
                n_threads=0,
            ),  # fmt: skip
            repeats,
        )
        P = primal_objective(G, r.coef, r.intercept, y, C=1.0, loss="hinge", penalty="lp", p=p)
        print(
            f"| {p:.3g} | {t:.4f} | {t_ref:.3f} | {t / t_ref:.4f} | {P:.8g} | "
            f"{ref.objective:.8g} | {(P - ref.objective) / ref.objective:.1e} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats (median)")
    ap.add_argument("--parts", default="abc", help="a = cvxpy, b = Kloft, c = M = 1000")
    args = ap.parse_args()
    repeats = 1 if args.quick else args.repeats
    if "a" in args.parts:
        versus_cvxpy(repeats)
    if "b" in args.parts:
        kloft([500] if args.quick else [500, 1000, 2000], repeats)
    if "c" in args.parts and not args.quick:
        many_kernels(repeats)


if __name__ == "__main__":
    main()
