"""Sparse MKL at large n: ``penalty="l1"`` against the ℓp fit (p = 2) and SVC, in one run.

The cases of issue 20: M Gaussian kernels ``exp(−d²/(s·1.2^j))``, j = 0..M−1, on

* scikit-learn's digits (odd vs even, features/16, s = 1: the issue's kernels) at
  n ∈ {500, 1000, 1797}, M = 50;
* ringnorm (``../shared/data/ringnorm.csv``, standardised, s = median(d²)/1.2^(M/2) so that
  the widths straddle the median distance) at n = 2000 (M = 50) and n = 5000 (M = 20),

for the hinge, logistic and squared losses (squared: the ±1 labels as regression targets),
C = 1, tol 1e-3, ``normalize=None``, on float64 and float32 stacks, and (``--dtypes lrR``) on
the factors of ``kernels.low_rank(G, tol=0, max_rank=R)``, total rank ``M·R`` (no SVC there).
Each row times, within each repeat and in turn: SVC on the summed kernel (hinge only; summing
included), the ℓp fit (``MKLClassifier``/``MKLRegressor`` with ``penalty="lp"``, p = 2) and
the l1 fit, medians of ``--repeats``. Ratios are of medians from the same run.

    python benches/peers/sparse_large.py [--sizes digits500,digits1000,digits1797,ring2000,ring5000]
        [--losses hinge,logistic,squared] [--dtypes f64,f32] [--repeats 3] [--out FILE]
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
from sklearn.datasets import load_digits
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.svm import SVC

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

CASES = {
    "digits500": ("digits", 500, 50),
    "digits1000": ("digits", 1000, 50),
    "digits1797": ("digits", 1797, 50),
    "ring2000": ("ringnorm", 2000, 50),
    "ring5000": ("ringnorm", 5000, 20),
}


def stack(case: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    data, n, M = CASES[case]
    if data == "digits":
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
        y = np.where(y % 2 == 1, 1.0, -1.0)
        idx = np.random.default_rng(0).permutation(len(y))[:n]
        X, y = X[idx], y[idx]
        scale = 1.0
    else:
        from reference import load_dataset

        X, y = load_dataset("ringnorm", n=n, seed=0)
        scale = 0.0
    d2 = euclidean_distances(X, squared=True)
    if scale == 0.0:
        scale = float(np.median(d2)) / 1.2 ** (M / 2)
    G = np.empty((M, n, n))
    for j in range(M):
        np.exp(-d2 / (scale * 1.2**j), out=G[j])
    return G, y


def fit(G: Any, y: NDArray[np.float64], penalty: str, loss: str) -> Any:
    est_cls = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    est = est_cls(
        kernels="precomputed", penalty=penalty, p=2.0, loss=loss, C=1.0, tol=1e-3,
        normalize=None,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(G, y)


def svc(G: NDArray[Any], y: NDArray[np.float64]) -> Any:
    return SVC(C=1.0, kernel="precomputed", tol=1e-3).fit(G.sum(axis=0, dtype=np.float64), y)


def timings(
    G: Any, y: NDArray[np.float64], loss: str, repeats: int
) -> tuple[float, float, float, Any]:
    """Median seconds of SVC (hinge only, else NaN), the lp and the l1 fit, in turn within each
    repeat, and the last l1 estimator."""
    fs = [lambda: fit(G, y, "lp", loss), lambda: fit(G, y, "l1", loss)]
    with_svc = loss == "hinge" and not isinstance(G, list)
    if with_svc:
        fs.insert(0, lambda: svc(G, y))
    res = paired_median_times(fs, repeats)
    t_svc = res[0][0] if with_svc else float("nan")
    return t_svc, res[-2][0], res[-1][0], res[-1][1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default=",".join(CASES))
    ap.add_argument("--losses", default="hinge,logistic,squared")
    ap.add_argument("--dtypes", default="f64,f32")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = [
        "# Sparse MKL at large n",
        "",
        f"multikernel {mk.__version__}, numpy {np.__version__}, {platform.machine()}; "
        f"medians of {args.repeats}; C = 1, tol 1e-3.",
        "",
        "| case | n | M | dtype | loss | SVC (s) | lp (s) | l1 (s) | l1 / lp | l1 / lp hinge "
        "| lp / lp hinge | l1 kernels | l1 gap |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for case in args.sizes.split(","):
        G64, y = stack(case)
        _, n, M = CASES[case]
        for dtype in args.dtypes.split(","):
            G: Any
            if dtype.startswith("lr"):
                G = list(mk.kernels.low_rank(G64, tol=0.0, max_rank=int(dtype[2:])).factors)
                dtype = f"{dtype} (R = {sum(f.shape[1] for f in G)})"
            else:
                G = G64 if dtype == "f64" else G64.astype(np.float32)
            lp_hinge = float("nan")
            for loss in args.losses.split(","):
                t_svc, t_lp, t_l1, l1 = timings(G, y, loss, args.repeats)
                if loss == "hinge":
                    lp_hinge = t_lp
                kept = int(np.count_nonzero(l1.kernel_weights_ > 0))
                row = (
                    f"| {case} | {n} | {M} | {dtype} | {loss} | {t_svc:.3g} | {t_lp:.3g} | "
                    f"{t_l1:.3g} | {t_l1 / t_lp:.2f} | {t_l1 / lp_hinge:.2f} | "
                    f"{t_lp / lp_hinge:.2f} | {kept} | {l1.duality_gap_:.1e} |"
                )
                lines.append(row)
                print(row, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
