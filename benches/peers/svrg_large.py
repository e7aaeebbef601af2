"""Large-n MKL: ``solver="svrg"`` on random Fourier features against scikit-learn's
``SGDClassifier`` and ``LogisticRegression`` on the same (concatenated) features, and against
the ``analytic`` ℓp solver where its n×n systems fit.

Problem: ``make_classification`` (20 features, 10 informative, seed 0), standardised; 10
Gaussian kernels on random 5-feature subsets, widths sqrt(5)·{0.5, …, 2}, 100 random Fourier
features each (float32), ``normalize="mean_diag"``; logistic loss, p = 2, C = 1, tol 1e-3; 80 %
train, 20 % test. One process per size (``--size``) so that the peak memory is the fit's.

``--memory`` measures instead what a user's whole fit holds, one process per route: the
estimator on ``kernels=FeatureBank`` (features computed in row batches into one float32
array, which the solver reads in place), and the out-of-core route (X a ``numpy.memmap``,
``FeatureBank.transform(X, out=<memmapped .npy>)``, then ``kernels="precomputed"`` on the
blocks). Peak anonymous memory (``RssAnon``, sampled every 20 ms) and peak resident file pages
(``RssFile``: the page cache of the mapped files, which the kernel can drop) are reported apart.

    python benches/peers/svrg_large.py [--sizes 10000,100000] [--analytic-max 10000]
        [--out benches/peers/results/svrg_large.md]
    python benches/peers/svrg_large.py --memory --sizes 1000000 [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier

import multikernel as mk
from multikernel.kernels import FeatureBank, Gaussian

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import PeakMemory  # noqa: E402


def problem(n: int) -> tuple[np.ndarray, np.ndarray, FeatureBank]:
    X, y = make_classification(
        n_samples=n, n_features=20, n_informative=10, random_state=0, class_sep=0.8
    )
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(0)
    specs: list[mk.kernels.Kernel] = [
        Gaussian(sigma=float(s), features=sorted(rng.choice(20, 5, replace=False).tolist()))
        for s in np.sqrt(5.0) * np.geomspace(0.5, 2.0, 10)
    ]
    bank = FeatureBank(specs, method="rff", n_components=100, random_state=0, dtype=np.float32)
    return X, y, bank


def memory_route(n: int, route: str, folder: str) -> dict[str, Any]:
    X, y, bank = problem(n)
    labels = np.where(y == 1, 1.0, -1.0)
    kw: dict[str, Any] = {"loss": "logistic", "solver": "svrg", "tol": 1e-3, "random_state": 0}
    out: dict[str, Any] = {"n": n, "route": route}
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        if route == "memmap":
            path = Path(tmp) / "X.npy"
            np.save(path, X)
            del X
            X = np.load(path, mmap_mode="r")
        before = PeakMemory()
        before.sample()
        out["X and y in RAM (GB)"] = before.peak["RssAnon"]
        t = time.perf_counter()
        with PeakMemory() as peak:
            if route == "estimator":
                clf = mk.MKLClassifier(kernels=bank, **kw).fit(X, labels)
            else:
                bank.fit(X)
                F = np.lib.format.open_memmap(
                    Path(tmp) / "features.npy",
                    mode="w+",
                    dtype=np.float32,
                    shape=(n, int(bank.n_components_.sum())),
                )
                blocks = bank.transform(X, out=F)
                clf = mk.MKLClassifier(kernels="precomputed", **kw).fit(blocks, labels)
        out["fit incl. features (s)"] = time.perf_counter() - t
        out["epochs"] = int(clf.n_iter_)
        out["gap"] = float(clf.duality_gap_)
        out["features (GB)"] = n * 1000 * 4 / 1e9
        out["peak RssAnon (GB)"] = peak.peak["RssAnon"]
        out["peak RssFile (GB)"] = peak.peak["RssFile"]
    return out


def one_size(n: int, analytic_max: int) -> dict[str, Any]:
    X, y, bank = problem(n)
    cut = int(0.8 * n)
    t = time.perf_counter()
    F = bank.fit_transform(X[:cut])
    F_te = bank.transform(X[cut:])
    t_feat = time.perf_counter() - t
    out: dict[str, Any] = {"n": n, "features (s)": t_feat}
    t = time.perf_counter()
    clf = mk.MKLClassifier(kernels="precomputed", loss="logistic", solver="analytic")
    svrg = mk.MKLClassifier(
        kernels=bank, loss="logistic", solver="svrg", tol=1e-3, max_iter=200, random_state=0
    )
    # The estimator computes the features itself; time the solver on the same blocks.
    res = mk._core.fit(
        mk._core.Settings("svrg", {"loss": "logistic", "tol": 1e-3}),
        F,
        np.where(y[:cut] == 1, 1.0, -1.0),
    )
    out["svrg (s)"] = time.perf_counter() - t
    out["svrg epochs"] = res.n_iter
    out["svrg gap"] = res.gap
    w = np.asarray(res.feature_weights)
    f = np.hstack(F_te).astype(np.float64) @ w + res.intercept
    out["svrg acc"] = float(np.mean((f > 0) == (y[cut:] == 1)))
    Z, Z_te = np.hstack(F), np.hstack(F_te)
    t = time.perf_counter()
    sgd = SGDClassifier(loss="log_loss", alpha=1.0 / cut, random_state=0).fit(Z, y[:cut])
    out["SGD (s)"] = time.perf_counter() - t
    out["SGD acc"] = float(sgd.score(Z_te, y[cut:]))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(C=1.0, max_iter=1000).fit(Z, y[:cut])
    out["LogReg (s)"] = time.perf_counter() - t
    out["LogReg acc"] = float(lr.score(Z_te, y[cut:]))
    if n <= analytic_max:
        t = time.perf_counter()
        a = mk._core.fit(
            mk._core.Settings("analytic", {"loss": "logistic", "tol": 1e-3}),
            [np.asarray(B, dtype=np.float64) for B in F],
            np.where(y[:cut] == 1, 1.0, -1.0),
        )
        out["analytic (s)"] = time.perf_counter() - t
        out["analytic / svrg primal"] = a.primal / res.primal
    del clf, svrg
    out["peak RSS (GB)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--size", type=int, help="run one size in this process (internal)")
    ap.add_argument("--analytic-max", type=int, default=10000)
    ap.add_argument("--out")
    ap.add_argument("--memory", action="store_true", help="peak memory of the two fit routes")
    ap.add_argument("--route", help="run one memory route in this process (internal)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="folder of the memmapped files")
    args = ap.parse_args()
    if args.size:
        if args.route:
            print(json.dumps(memory_route(args.size, args.route, args.dir)))
        else:
            print(json.dumps(one_size(args.size, args.analytic_max)))
        return
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        cmd = [sys.executable, __file__, "--size", str(n), "--analytic-max", str(args.analytic_max)]
        runs = [cmd + ["--route", r, "--dir", args.dir] for r in ("estimator", "memmap")]
        for c in runs if args.memory else [cmd]:
            rows.append(
                json.loads(subprocess.run(c, capture_output=True, text=True, check=True).stdout)
            )
    keys = sorted(
        {k for r in rows for k in r}, key=lambda k: list(rows[-1]).index(k) if k in rows[-1] else 99
    )
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        cells = [f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("# SVRG at large n\n\n" + text + "\n")


if __name__ == "__main__":
    main()
