"""A warm-started grid of C on explicit features (issue: the feature-space solver's warm
starts): ``warm_start=True`` runs ``prox_newton`` from the previous fit's feature weights,
against cold fits and against the SpicyMKL warm grid that ``warm_start=True`` ran before.

Data: 100 standard normal features in 20 groups of 5 (``FeatureBank`` of linear kernels, no
normalisation), 15 informative, n = 5000, logistic loss, tol 1e-6, ten C from 0.003 to 1.
Reports the median time of ``--repeats`` grids (SpicyMKL once: it is slow), the Newton steps,
and the largest relative difference of the primal values from the cold grid's.

    python benches/peers/warm_grid_features.py [--n 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import FeatureBank, Linear


def grid(
    X: NDArray[np.float64], y: NDArray[np.int64], Cs: NDArray[np.float64], **kw: Any
) -> tuple[float, int, NDArray[np.float64]]:
    """One grid: seconds, Newton steps, primal values."""
    bank = FeatureBank(
        [Linear(features=list(range(k, k + 5))) for k in range(0, X.shape[1], 5)],
        normalize="none",
    )
    est = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic", tol=1e-6, **kw)
    started, steps, primal = time.perf_counter(), 0, []
    for C in Cs:
        est.set_params(C=float(C)).fit(X, y)
        steps += int(est.n_iter_)
        primal.append(float(est.primal_objective_))
    return time.perf_counter() - started, steps, np.asarray(primal)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, 100))
    w = np.zeros(100)
    w[:15] = rng.normal(size=15)
    y = np.where(X @ w + 0.5 * rng.normal(size=args.n) > 0, 1, 0)
    Cs = np.geomspace(0.003, 1.0, 10)
    methods: dict[str, dict[str, Any]] = {
        "cold (prox_newton)": {},
        "warm_start=True (prox_newton)": {"warm_start": True},
        "warm_start=True, solver='spicy'": {"warm_start": True, "solver": "spicy"},
    }
    runs: dict[str, list[tuple[float, int, NDArray[np.float64]]]] = {m: [] for m in methods}
    for rep in range(args.repeats):
        for name, kw in methods.items():
            if "spicy" in name and rep > 0:
                continue
            runs[name].append(grid(X, y, Cs, **kw))
    cold = runs["cold (prox_newton)"]
    t_cold = float(np.median([r[0] for r in cold]))
    print(f"n = {args.n}, d = 100 in 20 groups, 10 C values, medians of {args.repeats}")
    print("| grid | seconds | / cold | Newton steps | max rel. P diff from cold |")
    print("|---|---|---|---|---|")
    for name, rs in runs.items():
        t = float(np.median([r[0] for r in rs]))
        diff = float(np.max(np.abs(rs[0][2] - cold[0][2]) / cold[0][2]))
        print(f"| {name} | {t:.3f} | {t / t_cold:.2f} | {rs[0][1]} | {diff:.1e} |")


if __name__ == "__main__":
    main()
