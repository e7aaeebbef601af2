"""One ``prox_newton`` fit across a Dask cluster on a Dask array of ``scipy.sparse`` chunks,
against the same fit in memory on the whole CSR matrix (issue 67; docs/dask.md).

Data: ``n`` points of ``d`` columns at density ``--density`` (CSR, uniform positions),
labels the sign of a linear model on the first tenth of the columns plus noise, cut into
``--chunks`` row chunks of CSR matrices (``dask.array.from_array``). The bank: ``--groups``
``Linear`` kernels of ``d / groups`` consecutive columns, ``normalize="none"``; ``l1``
logistic, ``tol=1e-3``, ``C = 1``. A ``LocalCluster`` of 2 worker processes × 1 thread.

Printed: the in-memory fit (median of ``--repeats``), the whole Dask fit (features computed
on the workers; one run) and the Dask fit again with the features persisted (median), the
passes (rounds of one task per chunk), the objectives' relative difference, and what a task
spends on reading its chunk before any reduction: ``_core.chunk_run`` with no update and no
reduction on one chunk's CSR arrays (their conversion to the engine's rows, and the
finiteness check on a memo's first task), beside the in-memory fit's time per pass.

    PYTHONPATH=python python benches/peers/dask_sparse_fit.py [--n 200000] [--d 10000]
        [--density 0.001] [--groups 100] [--chunks 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

import multikernel as mk
from multikernel import _core, _dask_fit
from multikernel.kernels import FeatureBank, Linear


def problem(n: int, d: int, density: float, seed: int = 0) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    # (Coordinates drawn with replacement, duplicates summed: scipy.sparse.random draws them
    # without, from a permutation of all n·d positions, 16 GB at 2·10⁵ × 10⁴.)
    k = int(density * n * d)
    X = sp.csr_matrix((rng.random(k), (rng.integers(0, n, k), rng.integers(0, d, k))), shape=(n, d))
    X.sum_duplicates()
    w = np.zeros(d)
    w[: d // 10] = rng.normal(size=d // 10)
    f = X @ w
    y = np.where(f + 0.1 * f.std() * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def estimator(d: int, groups: int) -> mk.MKLClassifier:
    width = d // groups
    bank = FeatureBank(
        [Linear(features=list(range(g * width, (g + 1) * width))) for g in range(groups)],
        normalize="none",
    )
    return mk.MKLClassifier(
        kernels=bank, penalty="l1", loss="logistic", solver="prox_newton", C=1.0, tol=1e-3
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--density", type=float, default=1e-3)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import dask.array as da
    import distributed

    X, y = problem(a.n, a.d, a.density)
    print(f"n = {a.n}, d = {a.d}, nnz = {X.nnz}, {a.groups} groups, {a.chunks} chunks")
    times = []
    for _ in range(a.repeats):
        t = time.perf_counter()
        mem = estimator(a.d, a.groups).fit(X, y)
        times.append(time.perf_counter() - t)
    t_mem = statistics.median(times)
    passes: list[int] = []
    close = _dask_fit.ChunkRows.close

    def counting(self: Any) -> None:
        passes.append(self.tasks // a.chunks)
        close(self)

    _dask_fit.ChunkRows.close = counting  # type: ignore[method-assign]
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        rows = -(-a.n // a.chunks)
        Xd = da.from_array(X, chunks=(rows, -1), asarray=False)
        est = estimator(a.d, a.groups)
        t = time.perf_counter()
        est.fit(Xd, y)
        t_whole = time.perf_counter() - t
        again = []
        for _ in range(a.repeats):
            t = time.perf_counter()
            est.fit(Xd, y)  # the same arrays: the persisted features
            again.append(time.perf_counter() - t)
        t_again = statistics.median(again)
    diff = abs(est.primal_objective_ / mem.primal_objective_ - 1)
    print(f"in memory (median of {a.repeats}): {t_mem:.2f} s, {mem.n_iter_} steps")
    print(f"Dask, whole fit: {t_whole:.2f} s ({t_whole / t_mem:.2f}x), {passes[0]} passes")
    print(f"Dask, features persisted (median): {t_again:.2f} s ({t_again / t_mem:.2f}x)")
    print(f"objectives' relative difference: {diff:.1e}; gap {est.duality_gap_:.1e}")
    # A task's reading of its chunk: chunk_run with nothing to apply and nothing to reduce.
    bank = est.kernel_bank_
    assert isinstance(bank, FeatureBank)
    chunk = _dask_fit._chunk_features(bank, X[:rows])
    dims = [int(v) for v in bank.n_components_]
    yc, c = np.ones(chunk.shape[0]), np.ones(chunk.shape[0])
    memo, reads = _core.ChunkMemo(), []
    for _ in range(4):  # (the memo's first task checks the features finite)
        t = time.perf_counter()
        _core.chunk_run(_dask_fit._engine_rows(chunk), dims, yc, c, memo, [], [], n_threads=1)
        reads.append(time.perf_counter() - t)
    print(
        f"a task's reading of a chunk of {chunk.shape[0]} rows ({chunk.nnz} entries): "
        f"{1e3 * reads[0]:.1f} ms on a memo's first task, {1e3 * min(reads[1:]):.1f} ms after; "
        f"the in-memory fit: {1e3 * t_mem / passes[0]:.1f} ms per pass of the Dask fit's count"
    )


if __name__ == "__main__":
    main()
