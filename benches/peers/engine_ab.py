"""The in-memory ``prox_newton`` fit of two builds of multikernel, in one run: each case fitted
by each build in turn (a subprocess per fit, ``PYTHONPATH`` set to that build's ``python/``
folder), medians of ``--repeats`` of the best of 3 engine fits (``_core.fit`` on the feature
blocks, float32). The check that a change of the engine keeps the in-memory speed (issue 55:
the rows behind reductions).

Cases: n Gaussian points in 100 dimensions as 20 blocks of 5 features, labels the sign of a
sparse linear model plus noise (targets the model plus noise for ``squared``), ``tol=1e-6``.

    python benches/peers/engine_ab.py --before OLD/python --after NEW/python [--repeats 3]
        [--cases 0,1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CASES = [
    (100_000, "logistic", "l1"),
    (100_000, "squared", "elasticnet"),
    (100_000, "hinge", "l1"),
    (20_000, "logistic", "group"),
    (10_000_000, "logistic", "l1"),
]


def child(n: int, loss: str, penalty: str) -> None:
    import numpy as np

    from multikernel import _core

    rng = np.random.default_rng(0)
    X = np.empty((n, 100), dtype=np.float32)
    for a in range(0, n, 1 << 20):  # (the same draws as one call, without its float64 copy)
        X[a : a + (1 << 20)] = rng.standard_normal((min(n - a, 1 << 20), 100))
    w = np.zeros(100)
    w[:25] = rng.standard_normal(25)
    f = X @ w
    noise = rng.standard_normal(n)
    y = np.sign(f + noise) if loss in ("logistic", "hinge") else f + noise
    blocks = [X[:, 5 * j : 5 * j + 5] for j in range(20)]
    cfg: dict[str, object] = {"penalty": penalty, "loss": loss, "C": 1000.0 / n, "tol": 1e-6}
    if penalty == "elasticnet":
        cfg["l1_ratio"] = 0.5
    if penalty == "group":
        cfg["groups"] = [j // 4 for j in range(20)]
    settings = _core.Settings("prox_newton", cfg)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        r = _core.fit(settings, blocks, y, n_threads=0)
        times.append(time.perf_counter() - t)
    print(min(times), r.primal, r.gap, r.n_iter)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=False)
    ap.add_argument("--after", required=False)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", nargs=3)
    ap.add_argument("--cases", default="", help="indices into CASES, e.g. 1,2 (default all)")
    args = ap.parse_args()
    if args.child:
        child(int(args.child[0]), args.child[1], args.child[2])
        return
    builds = {"before": args.before, "after": args.after}
    chosen = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    for case in chosen:
        times: dict[str, list[float]] = {k: [] for k in builds}
        last: dict[str, list[str]] = {}
        for _ in range(args.repeats):
            for name, path in builds.items():
                env = {**os.environ, "PYTHONPATH": path}
                cmd = [sys.executable, __file__, "--child", *map(str, case)]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                vals = out.stdout.split()
                times[name].append(float(vals[0]))
                last[name] = vals[1:]
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        line = f"{case}: before {b:.3f} s, after {a:.3f} s, after/before {a / b:.3f}; "
        line += f"(P, gap, steps) before {last['before']}, after {last['after']}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
