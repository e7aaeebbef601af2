"""A grid search of ``MKLClassifier`` fits, serially and on a local Dask cluster, and the cost
of a Dask task (docs/dask.md).

    python benches/peers/dask_grid.py [--n 400] [--repeats 3]

Serial: ``GridSearchCV(n_jobs=None)`` with ``n_threads=1`` (one core) and with ``n_threads=0``
(every core inside each fit). Dask: ``LocalCluster(n_workers=2, threads_per_worker=1,
processes=True)`` on loopback, ``joblib.parallel_backend("dask")``, ``n_threads=1``. The cluster
is started before the clock. Overhead: the time per task of ``N`` trivial tasks
(``client.map`` then ``gather``), and of a grid of tiny fits (20 points) under the backend
against the same grid serially. Medians of ``--repeats`` runs; every Dask grid is checked equal
(``cv_results_`` scores) to the serial one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from distributed import Client, LocalCluster
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_time  # noqa: E402

GRID = [
    {"penalty": ["lp"], "p": [4 / 3, 2.0, 4.0], "C": [0.1, 1.0, 10.0]},
    {"penalty": ["l1"], "C": [0.1, 1.0, 10.0]},
]


def _search(X: Any, y: Any, n_threads: int, cv: int = 5) -> GridSearchCV:
    est = mk.MKLClassifier(kernels=mk.kernels.simplemkl_bank(X.shape[1])[:40], n_threads=n_threads)
    return GridSearchCV(est, GRID, cv=cv, n_jobs=-1).fit(X, y)


def _identity(x: int) -> int:
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=2000)
    args = ap.parse_args()
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[: args.n, :8]
    y = y[: args.n]
    n_fits = 12 * 5
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    client = Client(cluster)
    try:
        with joblib.parallel_backend("sequential"):
            t1, ref = median_time(lambda: _search(X, y, 1), args.repeats)
            t0, _ = median_time(lambda: _search(X, y, 0), args.repeats)
        with joblib.parallel_backend("dask"):
            _search(X[:100], y[:100], 1, cv=2)  # warm the workers (imports)
            td, got = median_time(lambda: _search(X, y, 1), args.repeats)
        assert np.array_equal(
            got.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
        )
        print(f"grid: {n_fits} fits + refit, n={args.n} (train {args.n * 4 // 5}), M=40 kernels")
        print(f"  serial, n_threads=1:                 {t1:7.2f} s")
        print(f"  serial, n_threads=0 (2 cores):       {t0:7.2f} s")
        print(f"  dask, 2 workers x 1 thread, n_threads=1: {td:7.2f} s  ({t1 / td:.2f}x serial)")

        client.gather(client.map(_identity, range(10)))
        tt, _ = median_time(
            lambda: client.gather(client.map(_identity, range(args.tasks), pure=False)),
            args.repeats,
        )
        print(f"trivial tasks: {args.tasks} in {tt:.2f} s = {1e3 * tt / args.tasks:.2f} ms/task")

        tiny = np.concatenate([np.flatnonzero(y == 0)[:10], np.flatnonzero(y == 1)[:10]])
        Xs, ys = X[tiny], y[tiny]
        with joblib.parallel_backend("sequential"):
            ts, ref_s = median_time(lambda: _search(Xs, ys, 1, cv=2), args.repeats)
        with joblib.parallel_backend("dask"):
            tds, got_s = median_time(lambda: _search(Xs, ys, 1, cv=2), args.repeats)
        assert np.array_equal(
            got_s.cv_results_["mean_test_score"], ref_s.cv_results_["mean_test_score"]
        )
        n_tiny = 12 * 2
        print(
            f"tiny grid ({n_tiny} fits of 10 points): serial {ts:.3f} s, dask {tds:.3f} s: "
            f"{1e3 * (tds - ts / 2) / n_tiny:.1f} ms overhead per fit (against serial / 2)"
        )
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
