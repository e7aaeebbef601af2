"""One ``prox_newton`` fit across a Dask cluster against the same fit in memory and against
dask-ml, in one run (issue 55; docs/dask.md).

Data: ``n`` standard Gaussian points in 100 dimensions (``dask.array.random``, ``--chunks``
chunks, ``--dtype``), labels the sign of a sparse linear model plus noise: persisted on the
workers, or with ``--store DIR`` written once to one ``.npy`` file per chunk under ``DIR``
(outside the repository) and read from there by every pass that needs them. A
``LocalCluster`` of 2 workers × 1 thread, 3 GB each (processes); ours with Dask's spilling
and pausing off (its features fill the workers), dask-ml on a cluster of its own with Dask's
default memory policy. The issue's setting (10⁷ rows, 4 GB of float32 features):
``--n 10000000 --chunks 80 --dtype float32 --store DIR``.

* ours, Dask: ``MKLClassifier(kernels=FeatureBank([Linear(features=g) ...],
  normalize="none", dtype=float32), penalty="l1", loss="logistic", solver="prox_newton",
  tol=1e-3)`` on the Dask arrays: the whole ``fit`` (the bank on a sample, the features
  computed and persisted on the workers, the Newton steps), and the fit again with the
  features persisted (``warm_start=False``, same ``C``: the cost of the steps alone);
* ours, in memory: the same estimator on the same points gathered as numpy (the features
  computed in the fit);
* dask-ml's ``LogisticRegression(penalty="l1", C=C)`` with ``admm`` and ``proximal_grad``
  (the solvers that take ``l1``), on singleton groups (100 blocks of 1 feature, where the
  group lasso is the lasso), against ours on the same singleton blocks. Both objectives are
  computed by one formula, ``C Σ_i log(1 + exp(−y_i (x_iᵀw + b))) + ‖w‖₁``.

``C = 10/λ_max``, ``λ_max = max_j |X_jᵀ ℓ'(b*)|`` (singletons) as features_vs_skglm.py does
with groups. Results: ``benches/peers/results/dask_fit.md``.

    PYTHONPATH=python <peers venv>/bin/python benches/peers/dask_fit.py [--n 1000000]
        [--skip-daskml] [--daskml-solvers admm,proximal_grad] [--repeats 3]
        [--blocks 20x5,100x1] [--memory-blocks 20x5,100x1] [--chunks 8] [--dtype float64]
        [--store DIR] [--out benches/peers/results/dask_fit.md] [--preload]
        [--classes 10 --multi-class ovr]

``--preload`` starts the workers with ``preload=["multikernel"]`` (the package imported as
each worker starts, not in the first fit's first tasks); ``--classes K`` labels the points
with ``K`` classes of equal sizes (the linear model's score cut at the normal quantiles) and
fits them by ``--multi-class`` (the objective is then the problems' sum, as the engine
reports it).

The features-persisted Dask fit and the in-memory fit are medians of ``--repeats``; the
whole Dask fit (features computed) is one run; "passes" counts the rounds of one task per
chunk (round trips) of the whole fit.
"""

from __future__ import annotations

import argparse
import gc
import platform
import time
import warnings
from typing import Any

import numpy as np

import multikernel as mk
from multikernel.kernels import FeatureBank, Linear

D = 100


def data(n: int, chunks: int = 8, dtype: str = "float64") -> tuple[Any, Any]:
    import dask.array as da

    rs = da.random.RandomState(0)
    X = rs.standard_normal((n, D), chunks=(max(n // chunks, 1), D)).astype(dtype)
    w = np.zeros(D)
    w[:25] = np.random.default_rng(1).standard_normal(25)
    y = da.sign(X @ w + rs.standard_normal(n, chunks=X.chunks[0]))
    return X, y


def class_labels(X: Any, classes: int) -> Any:
    """``classes`` labels of the points of :func:`data`: its linear model's score (with noise
    of its own) cut at the normal quantiles ``k / classes`` (classes of equal sizes)."""
    import dask.array as da
    from scipy.stats import norm

    w = np.zeros(D)
    w[:25] = np.random.default_rng(1).standard_normal(25)
    noise = da.random.RandomState(2).standard_normal(X.shape[0], chunks=X.chunks[0])
    cuts = np.sqrt(w @ w + 1.0) * norm.ppf(np.arange(1, classes) / classes)
    return da.digitize(X @ w + noise, cuts)


def stored(path: str, n: int, chunks: int, dtype: str) -> tuple[Any, Any, Any]:
    """The points of :func:`data` written once as one ``.npy`` file per chunk under ``path``
    (not in the repository) and read back chunk by chunk: a store the workers read from, as
    a zarr store on a cluster, so that the Dask fit pays reading its data as a user's would,
    and the points are not held on the workers beside the features."""
    import os

    import dask
    import dask.array as da

    tag = os.path.join(path, f"n{n}-c{chunks}-{dtype}")
    os.makedirs(tag, exist_ok=True)
    X, y = data(n, chunks, dtype)
    rows = X.chunks[0]
    if not os.path.exists(os.path.join(tag, "done")):
        for i, (xb, yb) in enumerate(
            zip(X.to_delayed().ravel(), y.to_delayed().ravel(), strict=True)
        ):
            xa, ya = dask.compute(xb, yb, scheduler="threads")
            np.save(os.path.join(tag, f"x{i}.npy"), xa)
            np.save(os.path.join(tag, f"y{i}.npy"), ya)
        open(os.path.join(tag, "done"), "w").close()
    load = dask.delayed(np.load, pure=True)
    xs = [da.from_delayed(load(os.path.join(tag, f"x{i}.npy")), (r, D), dtype)
          for i, r in enumerate(rows)]  # fmt: skip
    ys = [da.from_delayed(load(os.path.join(tag, f"y{i}.npy")), (r,), np.float64)
          for i, r in enumerate(rows)]  # fmt: skip

    def local() -> tuple[Any, Any]:
        """The points read from the store into this process (not through the workers)."""
        Xn, yn = np.empty((n, D), dtype=dtype), np.empty(n)
        for i, (a, b) in enumerate(zip(np.cumsum((0, *rows[:-1])), np.cumsum(rows), strict=True)):
            Xn[a:b], yn[a:b] = (np.load(os.path.join(tag, f"{v}{i}.npy")) for v in "xy")
        return Xn, yn

    return da.concatenate(xs), da.concatenate(ys), local


def worker_peaks(client: Any) -> str:
    """Each worker process's peak resident memory so far (GB)."""

    def peak() -> float:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6

    return ", ".join(f"{v:.2f}" for v in client.run(peak).values())


def objective(X: Any, y: Any, w: Any, b: float, C: float) -> float:
    import dask.array as da

    f = X @ w + b
    loss = da.logaddexp(0.0, -y * f).sum().compute()
    return float(C * loss + np.abs(w).sum())


def lambda_max(X: Any, y: Any) -> float:
    import dask.array as da

    p = float(((y + 1) / 2).mean().compute())
    b = np.log(p / (1 - p))
    d1 = -y / (1.0 + da.exp(y * b))
    return float(da.absolute(X.T @ d1).max().compute())


def ours(groups: list[list[int]], C: float, **kw: Any) -> Any:
    bank = FeatureBank([Linear(features=g) for g in groups], normalize="none", dtype=np.float32)
    return mk.MKLClassifier(
        kernels=bank, penalty="l1", loss="logistic", solver="prox_newton", C=C, tol=1e-3,
        max_iter=200, **kw,
    )  # fmt: skip


def timed(fn: Any) -> float:
    """Seconds of ``fn()`` (its result dropped: a fitted estimator would hold its features
    on the workers)."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


#: Passes over the chunks (round trips) of the last Dask fit.
PASSES = {"n": 0}


def count_passes() -> None:
    """Counts ``ChunkRows.reduce`` calls: one task per chunk and one round trip each."""
    from multikernel import _dask_fit

    original = _dask_fit.ChunkRows.reduce

    def reduce(self: Any, code: list[float]) -> list[list[float]]:
        PASSES["n"] += 1
        return original(self, code)

    _dask_fit.ChunkRows.reduce = reduce  # type: ignore[method-assign]


def median_fit(fit: Any, repeats: int) -> float:
    return float(np.median([timed(fit) for _ in range(repeats)]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--skip-daskml", action="store_true")
    ap.add_argument("--daskml-solvers", default="admm,proximal_grad")
    ap.add_argument("--out", default="")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--blocks", default="20x5,100x1")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--dtype", default="float64", help="the points' type (float32 at 10⁷)")
    ap.add_argument("--store", default="", help="read the points from .npy chunks here")
    ap.add_argument("--memory-blocks", default="20x5,100x1", help="layouts also fitted in memory")
    ap.add_argument("--classes", type=int, default=2, help="more: labels of equal classes")
    ap.add_argument(
        "--preload", action="store_true", help="workers import multikernel as they start"
    )
    ap.add_argument("--multi-class", default="ovr", help="the scheme of more than two classes")
    args = ap.parse_args()
    multi = args.classes > 2
    if multi and (args.store or not args.skip_daskml):
        ap.error("--classes > 2 takes points on the workers (no --store) and --skip-daskml")
    import dask
    from distributed import Client, LocalCluster

    lines = [f"# Dask fit (issue 55): n = {args.n:.0e}", ""]
    if multi:
        lines[0] += f", {args.classes} classes, multi_class={args.multi_class!r}"
    warm = "; the workers import multikernel as they start" if args.preload else ""
    lines.append(f"{platform.node()}, Python {platform.python_version()}; LocalCluster 2 "
                 f"workers × 1 thread, 3 GB each (processes){warm}")  # fmt: skip
    lines.append("")
    # The features of a large fit fill the workers' memory by design: spilling them to disk
    # (from 60 %) or pausing (80 %) would stall every pass; the 3 GB limit still holds (the
    # nanny ends a worker at 95 %).
    memory = {f"distributed.worker.memory.{k}": False for k in ("target", "spill", "pause")}
    lines.append(f"Worker memory: spill and pause off ({memory}); points {args.dtype}, "
                 f"{args.chunks} chunks, " + ("read from a store of .npy chunks" if args.store
                                              else "persisted on the workers"))  # fmt: skip
    lines.append("")

    def cluster(spill: bool = False) -> Any:
        """A LocalCluster of 2 worker processes × 1 thread, 3 GB each, and its client; Dask's
        default memory policy with ``spill``, else spilling and pausing off."""
        from contextlib import ExitStack

        stack = ExitStack()
        stack.enter_context(dask.config.set({} if spill else memory))
        c = stack.enter_context(LocalCluster(
            n_workers=2, threads_per_worker=1, memory_limit="3GB", processes=True,
            dashboard_address=None, preload=["multikernel"] if args.preload else [],
        ))  # fmt: skip
        return stack, stack.enter_context(Client(c))

    def points(client: Any) -> tuple[Any, Any, Any]:
        if args.store:
            return stored(args.store, args.n, args.chunks, args.dtype)
        X, y = client.persist(data(args.n, args.chunks, args.dtype))
        return X, y, lambda: (X.compute(), y.compute())

    stack, client = cluster()
    with stack:
        X, y, local = points(client)
        count_passes()
        C = 10.0 / lambda_max(X, y)
        scheme: dict[str, Any] = {}
        if multi:
            y = client.persist(class_labels(X, args.classes))
            local = lambda: (X.compute(), y.compute())  # noqa: E731
            scheme = {"multi_class": args.multi_class}

        def value(est: Any) -> float:
            """The objective, one formula for both fits (multiclass: the problems' sum)."""
            if multi:
                return float(np.sum(est.primal_objective_))
            w = np.concatenate(est.coef_).astype(np.float64)
            return objective(X, y, w, float(est.intercept_), C)

        groups20 = [list(range(5 * j, 5 * j + 5)) for j in range(20)]
        singles = [[j] for j in range(D)]
        rows = [
            "| fit | time (s) | objective | gap (largest) | Newton steps (all problems) |",
            "|---|---|---|---|---|",
        ]

        def row(name: str, t: float, P: float, gap: float | str, it: int | str) -> None:
            gs = gap if isinstance(gap, str) else f"{gap:.1e}"
            rows.append(f"| {name} | {t:.2f} | {P:.10g} | {gs} | {it} |")
            print(rows[-1], flush=True)

        results: dict[str, float] = {}
        labels = {"20x5": ("20 × 5", groups20), "100x1": ("100 × 1", singles)}
        for label, groups in (labels[b] for b in args.blocks.split(",")):
            est = ours(groups, C, **scheme)
            PASSES["n"] = 0
            t = timed(lambda est=est: est.fit(X, y))
            passes = PASSES["n"]
            P = value(est)
            row(f"ours, Dask, {label} (whole fit; {passes} passes)", t, P,
                float(np.max(est.duality_gap_)), int(np.sum(est.n_iter_)))  # fmt: skip
            t2 = median_fit(lambda est=est: est.fit(X, y), args.repeats)
            row(f"ours, Dask, {label} (features persisted, median of {args.repeats})", t2, P,
                float(np.max(est.duality_gap_)), int(np.sum(est.n_iter_)))  # fmt: skip
            results[f"dask {label}"], results[f"dask steps {label}"] = t, t2
            results[f"P {label}"] = P
            if label.replace(" × ", "x") not in args.memory_blocks.split(","):
                del est
                gc.collect()
                time.sleep(2)
                continue
            Xn, yn = local()
            mem = ours(groups, C, **scheme)
            tm = median_fit(lambda mem=mem, Xn=Xn, yn=yn: mem.fit(Xn, yn), args.repeats)
            del Xn, yn
            row(f"ours, in memory, {label} (median of {args.repeats})", tm, value(mem),
                float(np.max(mem.duality_gap_)), int(np.sum(mem.n_iter_)))  # fmt: skip
            results[f"mem {label}"] = tm
            rows.append(f"| (workers' peak resident memory so far, GB: {worker_peaks(client)}) "
                        "| | | | |")  # fmt: skip
            print(rows[-1], flush=True)
            del est, mem
            gc.collect()  # the estimator's features leave the workers before the next layout
            time.sleep(2)
    if not args.skip_daskml:
        from dask_ml.linear_model import LogisticRegression
        from distributed import wait

        # dask-ml on a cluster of its own, the same but with Dask's default memory policy.
        # Without a store it reads the points from the workers' memory (persisted untimed:
        # its time excludes the reads ours pays); with one it reads the store at each of its
        # passes (why: benches/peers/results/dask_fit.md, n = 10⁷).
        stack, client = cluster(spill=True)
        with stack:
            X, y, _ = points(client)
            if not args.store:
                X, y = client.persist(X), client.persist(y)
                wait([X, y])
            for solver in args.daskml_solvers.split(","):
                lr = LogisticRegression(penalty="l1", C=C, solver=solver, fit_intercept=True)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = timed(lambda lr=lr: lr.fit(X, (y + 1) / 2))
                w = np.asarray(lr.coef_, dtype=np.float64).ravel()
                P = objective(X, y, w, float(np.ravel(lr.intercept_)[0]), C)
                row(f"dask-ml {solver}, 100 × 1", t, P, "—", "—")
                results[f"daskml {solver}"], results[f"P daskml {solver}"] = t, P
    lines += rows + ["", f"C = {C:.6g} (10/λ_max)", ""]
    for label in ("20 × 5", "100 × 1"):
        if f"mem {label}" not in results:
            continue
        mem = results[f"mem {label}"]
        lines.append(
            f"- {label}: Dask / in memory = {results[f'dask {label}'] / mem:.2f} (whole fit), "
            f"{results[f'dask steps {label}'] / mem:.2f} (features persisted, vs the in-memory "
            "whole fit)"
        )
    for solver in ("admm", "proximal_grad"):
        if f"daskml {solver}" in results and "dask 100 × 1" in results:
            lines.append(
                f"- ours (Dask, 100 × 1) / dask-ml {solver} = "
                f"{results['dask 100 × 1'] / results[f'daskml {solver}']:.3f}; objective ours − "
                f"theirs = {results['P 100 × 1'] - results[f'P daskml {solver}']:.3e}"
            )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
