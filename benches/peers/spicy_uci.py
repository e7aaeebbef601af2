"""SpicyMKL's UCI experiment (Suzuki & Tomioka 2009, §5.1) with ``MKLClassifier(penalty="l1")``.

Liver, Pima, Ionosphere and Sonar from ``../shared/data``; the SimpleMKL bank (Gaussian widths
0.1, 0.25, 0.5, 0.75, 1, 2, …, 20 and polynomial degrees 1–3, each on all variables and on every
single variable: 27·(d + 1) kernels), each Gram matrix normalised to unit trace (statistics of the
training part); random 80/20 splits; the paper's C ∈ {0.005, 0.05, 0.5}, i.e. our C = 1 / their C
(our C weights the loss); stop at relative duality gap 0.01; hinge and logistic loss.

Printed per data set: test accuracy mean ± sd over the splits, number of selected kernels
(‖f_m‖ > 0) and fit time (solver only; the Gram stacks are precomputed, as in the paper).

The paper reports these quantities only as bar charts (its Figure 1), without numbers in the
text, so there are no reference accuracies to print here.

Features are standardised on the whole data set by the loader (``tests/python/reference.py``).

    python benches/peers/spicy_uci.py [--splits 5] [--datasets liver_bupa,pima,ionosphere,sonar]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))

THEIR_C = (0.005, 0.05, 0.5)
LOSSES = ("hinge", "logistic")
TOL = 0.01


def mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3g} ± {sd:.2g}"


def run_dataset(name: str, splits: int, seed: int) -> None:
    from reference import load_dataset

    X, y = load_dataset(name)
    n, d = X.shape
    specs = mk.kernels.simplemkl_bank(d)
    n_train = int(round(0.8 * n))
    print(f"\n## {name}: n = {n} (train {n_train}), d = {d}, M = {len(specs)} kernels")
    acc: dict[tuple[str, float], list[float]] = {}
    sel: dict[tuple[str, float], list[float]] = {}
    fit_s: dict[tuple[str, float], list[float]] = {}
    iters: dict[tuple[str, float], list[float]] = {}
    not_converged = 0
    rng = np.random.default_rng(seed)
    for _ in range(splits):
        perm = rng.permutation(n)
        tr, te = perm[:n_train], perm[n_train:]
        bank = mk.kernels.KernelBank(specs, normalize="trace")
        G_train = bank.fit_transform(X[tr])
        G_test = bank.transform(X[te])
        for loss in LOSSES:
            for their_c in THEIR_C:
                clf = mk.MKLClassifier(
                    kernels="precomputed", penalty="l1", loss=loss, C=1.0 / their_c, tol=TOL
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = time.perf_counter()
                    clf.fit(G_train, y[tr])
                    elapsed = time.perf_counter() - t
                not_converged += int(not clf.converged_)
                key = (loss, their_c)
                acc.setdefault(key, []).append(float(clf.score(G_test, y[te])))
                sel.setdefault(key, []).append(float(np.count_nonzero(clf.kernel_norms_ > 0)))
                fit_s.setdefault(key, []).append(elapsed)
                iters.setdefault(key, []).append(float(clf.n_iter_))
        del G_train, G_test
    print(f"\n{splits} random 80/20 splits, tol {TOL} (mean ± sd over the splits)\n")
    print("| loss | their C | our C | test accuracy | selected kernels | fit (s) | outer it. |")
    print("|---|---|---|---|---|---|---|")
    for loss in LOSSES:
        for their_c in THEIR_C:
            key = (loss, their_c)
            print(
                f"| {loss} | {their_c:g} | {1 / their_c:g} | {mean_sd(acc[key])} | "
                f"{mean_sd(sel[key])} | {mean_sd(fit_s[key])} | {mean_sd(iters[key])} |"
            )
    if not_converged:
        print(f"\n{not_converged} fit(s) stopped before reaching the tolerance.")
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=5, help="random 80/20 splits (paper: 10)")
    ap.add_argument("--datasets", default="liver_bupa,pima,ionosphere,sonar")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    for name in args.datasets.split(","):
        run_dataset(name, args.splits, args.seed)
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
