"""The hinge-type losses on explicit features: ``prox_newton``'s smoothing continuation
against the SVM wrapper (SMO on the low-rank kernel) on the same problem (issue: MKL on
explicit features); with ``--penalty lp``, ``prox_newton``'s ℓp Newton steps against Kloft's
wrapper (``analytic``: SMO on the combined kernel, or Newton through its capacitance matrix
for the smooth losses), for any loss.

Data: 100 standard normal features in 20 groups of 5 (``FeatureBank`` of linear kernels, no
normalisation), 15 informative; classification ``y = sign(Xw + 0.5ε)`` for the hinge,
regression ``y = Xw + 0.5ε`` for the ε-insensitive (ε = 0.1) and squared losses;
``penalty="l1"`` (or ``"lp"`` with ``--p``), tol 1e-3, C = 0.1 and 1. Both solvers are named
(``solver="prox_newton"`` / ``"wrapper"`` or ``"analytic"``) and called in turn within each
repeat; the table reports medians, Newton (wrapper) steps, the certified gaps
and the relative difference of the primal values. The wrapper is run at most ``--wrapper-max``
points (it grows like n²; once at the largest size, as ``--wrapper-once``).

    python benches/peers/hinge_features.py [--sizes 1000,5000,20000] [--repeats 3]
        [--out benches/peers/results/hinge_features.md]
    python benches/peers/hinge_features.py --penalty lp --p 2 \\
        --losses hinge,squared_hinge,logistic,squared,epsilon_insensitive \\
        --out benches/peers/results/lp_features.md
"""

from __future__ import annotations

import argparse
import platform
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _timing import paired_median_times
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import FeatureBank, Linear

FloatArray = NDArray[np.float64]


def data(n: int, regression: bool) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 100))
    w = np.zeros(100)
    w[:15] = rng.normal(size=15)
    t = X @ w + 0.5 * rng.normal(size=n)
    return X, (t if regression else np.where(t > 0, 1.0, -1.0))


REGRESSION = ("epsilon_insensitive", "squared")


def fit(
    X: FloatArray, y: FloatArray, loss: str, C: float, solver: str, penalty: str, p: float
) -> Any:
    bank = FeatureBank(
        [Linear(features=list(range(k, k + 5))) for k in range(0, 100, 5)], normalize="none"
    )
    kw: dict[str, Any] = {"kernels": bank, "penalty": penalty, "p": p, "C": C, "tol": 1e-3}
    if loss not in REGRESSION:
        est: Any = mk.MKLClassifier(loss=loss, solver=solver, **kw)
    else:
        est = mk.MKLRegressor(loss=loss, epsilon=0.1, solver=solver, **kw)
    return est.fit(X, y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--losses", default="hinge,epsilon_insensitive")
    ap.add_argument("--wrapper-max", type=int, default=5000)
    ap.add_argument("--wrapper-once", type=int, default=20000)
    ap.add_argument("--penalty", choices=("l1", "lp"), default="l1")
    ap.add_argument("--p", type=float, default=2.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    reference = "wrapper" if args.penalty == "l1" else "analytic"
    rows = []
    for loss in args.losses.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            X, y = data(n, loss in REGRESSION)
            for C in (0.1, 1.0):
                solvers = ["prox_newton"]
                if n <= args.wrapper_max or n <= args.wrapper_once:
                    solvers.append(reference)
                once = n > args.wrapper_max
                fs = [partial(fit, X, y, loss, C, s, args.penalty, args.p) for s in solvers]
                if once:
                    res = paired_median_times(fs[:1], args.repeats)
                    res += paired_median_times(fs[1:], 1)
                else:
                    res = paired_median_times(fs, args.repeats)
                (tp, p), *rest = res
                row = [loss, n, C, f"{tp:.3f}", int(p.n_iter_), f"{p.duality_gap_:.1e}"]
                if rest:
                    ((tw, w),) = rest
                    rel = (p.primal_objective_ - w.primal_objective_) / w.primal_objective_
                    wall = f"{tw:.3f}" + (" (1 run)" if once else "")
                    gap = f"{w.duality_gap_:.1e}"
                    row += [wall, int(w.n_iter_), gap, f"{rel:+.1e}", f"**{tp / tw:.4f}**"]
                else:
                    row += ["–"] * 5
                rows.append(row)
                print(" | ".join(map(str, row)), flush=True)
    head = (f"| loss | n | C | prox_newton s | steps | gap | {reference} s | steps | gap | "
            f"(P_prox − P_{reference})/P_{reference} | prox / {reference} |")  # fmt: skip
    what = "l1" if args.penalty == "l1" else f"lp, p = {args.p:g}"
    title = (
        "The hinge-type losses on explicit features: prox_newton against the wrapper"
        if args.penalty == "l1"
        else "ℓp-MKL on explicit features: prox_newton against Kloft's wrapper (analytic)"
    )
    lines = [
        f"# {title}",
        "",
        f"`python benches/peers/hinge_features.py {' '.join(sys.argv[1:])}`".rstrip() + "",
        "",
        f"multikernel {mk.__version__}, {platform.machine()}, medians of {args.repeats} "
        f"in one run (each pair called in turn); 100 features in 20 groups of 5, {what}, "
        "tol 1e-3.",
        "",
        head,
        "|" + "---|" * 11,
        *("| " + " | ".join(map(str, r)) + " |" for r in rows),
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
