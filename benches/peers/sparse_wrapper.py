"""Sparse MKL (``l1``, ``elasticnet``) against the ℓp fit (p = 2, hinge) of the same data, in one
run: the goal table of the SVM-wrapper issue.

Cases (C = 1, tol 1e-3, ``kernels="precomputed"``, medians of ``--repeats``, each fit in turn
within every repeat so that their ratios share the machine's load):

* breast cancer (scikit-learn's, standardised): 20 Gaussian widths ``exp(−d²/(s·med))``,
  ``s`` log-spaced in [0.05, 20], ``med`` the median squared distance, and a linear kernel,
  unit trace (M = 21), n ∈ {200, 400};
* ringnorm (``../shared/data/ringnorm.csv``): SpicyMKL's Gaussians on random feature subsets
  (σ = 5χ² + 0.1), unit trace, M ∈ {20, 50}, n ∈ {200, 400, 1000, 2000};
* digits odd vs even (X/16): Kloft's ``exp(−d²/1.2^j)``, j = 0..49 (unit diagonal), n ∈ {200,
  400, 1000, 1797}.

Columns: the ℓp fit with the hinge loss (``penalty="lp"``, p = 2, ``solver="auto"`` =
analytic), ``l1`` and ``elasticnet`` (l1_ratio 0.5) with the loss ``--loss`` (hinge, logistic,
or squared: the ±1 labels as regression targets) by ``solver="wrapper"`` and by
``solver="spicy"``, each as a ratio to the ℓp time.

    python benches/peers/sparse_wrapper.py [--cases breast,ring20,ring50,digits]
        [--sizes 200,400,1000,2000] [--loss hinge] [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics.pairwise import euclidean_distances

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

FloatArray = NDArray[np.float64]


def _subset(n: int, n_total: int, seed: int = 0) -> NDArray[np.intp]:
    if n > n_total:
        raise ValueError(f"n = {n} > {n_total} points")
    return np.sort(np.random.default_rng(seed).permutation(n_total)[:n])


def breast(n: int) -> tuple[FloatArray, FloatArray]:
    X, t = load_breast_cancer(return_X_y=True)
    idx = _subset(n, len(t))
    X = X[idx]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.where(t[idx] == 1, 1.0, -1.0)
    d2 = euclidean_distances(X, squared=True)
    med = float(np.median(d2))
    G = [np.exp(-d2 / (s * med)) for s in np.geomspace(0.05, 20.0, 20)]
    G.append(X @ X.T)
    S = np.array(G)
    return S / np.trace(S, axis1=1, axis2=2)[:, None, None], y


def ringnorm(n: int, M: int) -> tuple[FloatArray, FloatArray]:
    from reference import load_dataset
    from spicy_scaling import random_specs

    X, y = load_dataset("ringnorm", n=n, seed=0)
    G = mk.kernels.gram(X, random_specs(M, X.shape[1], seed=M), normalize="trace")
    return np.asarray(G), y


def digits(n: int) -> tuple[FloatArray, FloatArray]:
    X, t = load_digits(return_X_y=True)
    idx = _subset(n, len(t))
    X = X[idx] / 16.0
    y = np.where(t[idx] % 2 == 1, 1.0, -1.0)
    d2 = euclidean_distances(X, squared=True)
    return np.array([np.exp(-d2 / 1.2**j) for j in range(50)]), y


CASES = {
    "breast": (lambda n: breast(n), 21, 569),
    "ring20": (lambda n: ringnorm(n, 20), 20, 7400),
    "ring50": (lambda n: ringnorm(n, 50), 50, 7400),
    "digits": (lambda n: digits(n), 50, 1797),
}


def fit(G: FloatArray, y: FloatArray, penalty: str, solver: str, loss: str) -> Any:
    Est = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    est = Est(
        kernels="precomputed", penalty=penalty, p=2.0, l1_ratio=0.5, C=1.0, tol=1e-3,
        normalize=None, solver=solver, loss=loss,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(G, y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--sizes", default="200,400,1000,2000")
    ap.add_argument("--loss", default="hinge", choices=["hinge", "logistic", "squared"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = [
        f"# Sparse MKL ({args.loss}) against the ℓp hinge fit of the same data",
        "",
        f"multikernel {mk.__version__}, numpy {np.__version__}, {platform.machine()}; "
        f"medians of {args.repeats}, in one run; C = 1, tol 1e-3.",
        "",
        "| case | n | M | lp (s) | l1 wrapper / lp | l1 spicy / lp | elasticnet wrapper / lp "
        "| elasticnet spicy / lp | l1 kernels | l1 gap | l1 P (wrapper / spicy − 1) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for case in args.cases.split(","):
        build, M, n_total = CASES[case]
        for n in (min(int(s), n_total) for s in args.sizes.split(",")):
            if f"| {case} | {n} |" in "\n".join(lines):
                continue
            G, y = build(n)
            runs = [("lp", "auto", "hinge"), ("l1", "wrapper", args.loss),
                    ("l1", "spicy", args.loss), ("elasticnet", "wrapper", args.loss),
                    ("elasticnet", "spicy", args.loss)]  # fmt: skip
            res = paired_median_times(
                [lambda G=G, y=y, p=p, s=s, lo=lo: fit(G, y, p, s, lo) for p, s, lo in runs],
                args.repeats,
            )
            t = [r[0] for r in res]
            l1, l1s = res[1][1], res[2][1]
            kept = int(np.count_nonzero(l1.kernel_weights_ > 0))
            dp = l1.primal_objective_ / l1s.primal_objective_ - 1.0
            row = (
                f"| {case} | {n} | {M} | {t[0]:.3g} | {t[1] / t[0]:.2f} | {t[2] / t[0]:.2f} | "
                f"{t[3] / t[0]:.2f} | {t[4] / t[0]:.2f} | {kept} | {l1.duality_gap_:.1e} | "
                f"{dp:+.1e} |"
            )
            lines.append(row)
            print(row, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
