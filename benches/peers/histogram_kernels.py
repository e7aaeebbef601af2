"""Gram matrices of the histogram and set kernels against what a Python user writes today.

Training Gram of ``n`` histograms of ``bins`` bins (default n = 5 000, 300 bins; sparse counts,
a third of them zero): ``multikernel.kernels.gram`` with

- ``Chi2(gamma)`` against scikit-learn's ``chi2_kernel`` (single-threaded Cython);
- ``Intersection()``, ``Hellinger()`` and ``Tanimoto()`` against the best numpy code we know:
  ``np.minimum`` broadcast over blocks of rows (one-liner per block, blocks sized to stay in
  memory), ``sqrt(X) @ sqrt(X).T`` (BLAS), and Tanimoto as ``min / (Σx + Σy − min)`` from the
  same blocked minima.

Each kernel is checked equal to its peer to 1e-12 relative, then timed: medians of
``--repeats``, both calls in turn within every repeat. Ratios are multikernel / peer.

    python benches/peers/histogram_kernels.py [--n 5000] [--bins 300] [--repeats 3]
        [--kernels chi2 hellinger ...]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics.pairwise import chi2_kernel

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

#: Rows per numpy block: a (rows, n, bins) temporary of about 1 GB at n = 5000, 300 bins.
_BLOCK_BYTES = 1 << 30


def np_minima(X: np.ndarray) -> np.ndarray:
    """``Σ_k min(x_k, y_k)`` for every pair, numpy broadcast over blocks of rows."""
    n, d = X.shape
    rows = max(1, _BLOCK_BYTES // (8 * n * d))
    return np.concatenate(
        [np.minimum(X[i : i + rows, None, :], X[None, :, :]).sum(-1) for i in range(0, n, rows)]
    )


def np_hellinger(X: np.ndarray) -> np.ndarray:
    R = np.sqrt(X)
    return R @ R.T


def np_tanimoto(X: np.ndarray) -> np.ndarray:
    m = np_minima(X)
    s = X.sum(1)
    union = s[:, None] + s[None, :] - m
    return np.where(union > 0, m / np.where(union > 0, union, 1.0), 1.0)


def histograms(n: int, bins: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.poisson(2.0, size=(n, bins)).astype(np.float64)
    X[rng.random((n, bins)) < 0.33] = 0.0
    return X / X.sum(1, keepdims=True).clip(1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--bins", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    names = ["chi2", "intersection", "hellinger", "tanimoto"]
    ap.add_argument("--kernels", nargs="+", choices=names, default=names, help="kernels to time")
    args = ap.parse_args()
    X = histograms(args.n, args.bins)
    gamma = 1.0
    cases = [
        ("chi2", mk.kernels.Chi2(gamma=gamma), lambda: chi2_kernel(X, gamma=gamma)),
        ("intersection", mk.kernels.Intersection(), lambda: np_minima(X)),
        ("hellinger", mk.kernels.Hellinger(), lambda: np_hellinger(X)),
        ("tanimoto", mk.kernels.Tanimoto(), lambda: np_tanimoto(X)),
    ]
    print(
        f"n = {args.n}, {args.bins} bins, {os.cpu_count()} cores, SIMD "
        f"{mk._core.simd_level()}, medians of {args.repeats}"
    )
    print(f"{'kernel':>13} {'multikernel s':>14} {'peer s':>9} {'ratio':>7} {'max rel err':>12}")
    for name, spec, peer in [c for c in cases if c[0] in args.kernels]:
        (t_mk, G), (t_peer, ref) = paired_median_times(
            [lambda spec=spec: mk.kernels.gram(X, [spec])[0], peer], args.repeats
        )
        err = float(np.max(np.abs(G - ref) / np.maximum(np.abs(ref), 1e-300)))
        print(f"{name:>13} {t_mk:14.3f} {t_peer:9.3f} {t_mk / t_peer:7.3f} {err:12.1e}", flush=True)
        del G, ref


if __name__ == "__main__":
    main()
