"""Peak memory of a fit on a large precomputed stack, per solver: how many stack-sized copies
a fit makes (issue: at most one copy of the stack during a fit).

The stack is built and saved once; each solver then runs in its own process, which loads the
stack (``np.load``) and fits ``MKLClassifier(kernels="precomputed")`` (or ``mkl_path``).
Reported: the stack's size and the peak anonymous memory above the process's level just before
the fit (``RssAnon`` sampled every 20 ms, ``_memory.PeakMemory``), also in stacks.

    python benches/peers/fit_memory.py [--n 3000] [--M 20] [--dtype float64]

With ``--features`` the input is explicit features instead: ``M`` blocks of ``--width``
random Fourier features of Gaussians (the column ranges of one ``(n, M·width)`` array, as a
``FeatureBank`` returns them), fitted by ``prox_newton``; the "stack" columns are then the
features' size (issue: float32 blocks read in place).

    python benches/peers/fit_memory.py --features --n 100000 --M 20 --width 100 --dtype float32
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import make_classification

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import PeakMemory  # noqa: E402

CASES: dict[str, dict[str, Any]] = {
    "lp analytic (hinge)": {"penalty": "lp", "p": 2.0},
    "lp analytic (logistic)": {"penalty": "lp", "p": 2.0, "loss": "logistic"},
    "lp interleaved": {"penalty": "lp", "p": 2.0, "solver": "interleaved"},
    "l1 spicy (hinge)": {"penalty": "l1"},
    "group mirror": {"penalty": "group", "groups": "halves"},
    "one-class": {"one_class": True},
    "path (squared)": {"path": True},
}


def build(n: int, M: int, dtype: str, path: Path) -> None:
    X, y = make_classification(n_samples=n, n_features=20, n_informative=8, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(0)
    specs: list[mk.kernels.Kernel] = [
        mk.kernels.Gaussian(
            sigma=float(s), features=sorted(rng.choice(20, 6, replace=False).tolist())
        )
        for s in np.geomspace(1.0, 8.0, M)
    ]
    G = mk.kernels.gram(X, specs, normalize="mean_diag", dtype=np.dtype(dtype))
    np.save(path / "G.npy", G)
    np.save(path / "y.npy", np.where(y == 1, 1.0, -1.0))


FEATURE_CASES: dict[str, dict[str, Any]] = {
    "prox_newton l1 (logistic)": {"penalty": "l1", "loss": "logistic"},
    "prox_newton lp (logistic)": {"penalty": "lp", "p": 2.0, "loss": "logistic"},
}


def build_features(n: int, M: int, width: int, dtype: str, path: Path) -> None:
    X, y = make_classification(n_samples=n, n_features=20, n_informative=8, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    specs: list[mk.kernels.Kernel] = [
        mk.kernels.Gaussian(sigma=float(s)) for s in np.geomspace(1.0, 8.0, M)
    ]
    bank = mk.kernels.FeatureBank(specs, method="rff", n_components=width, random_state=0)
    F = np.hstack(bank.fit_transform(X)).astype(dtype)
    np.save(path / "F.npy", F)
    np.save(path / "y.npy", np.where(y == 1, 1.0, -1.0))


def measure(name: str, what: str, nbytes: int, fit: Callable[[], object]) -> dict[str, Any]:
    """The row of one case: ``fit`` run once, its extra peak ``RssAnon`` against the input's
    size ``nbytes`` (named ``what``)."""
    before = PeakMemory()
    before.sample()
    t = time.perf_counter()
    with warnings.catch_warnings(), PeakMemory() as peak:
        warnings.simplefilter("ignore")
        fit()
    extra = peak.peak["RssAnon"] - before.peak["RssAnon"]
    return {
        "case": name,
        f"{what} (GB)": nbytes / 1e9,
        "fit (s)": time.perf_counter() - t,
        "extra peak (GB)": extra,
        f"extra / {what}": extra / (nbytes / 1e9),
    }


def run_feature_case(name: str, folder: Path, M: int) -> dict[str, Any]:
    F = np.load(folder / "F.npy")
    y = np.load(folder / "y.npy")
    blocks = np.split(F, M, axis=1)  # column ranges of one array: read in place
    est = mk.MKLClassifier(kernels="precomputed", solver="prox_newton", **FEATURE_CASES[name])
    return measure(name, "features", F.nbytes, lambda: est.fit(blocks, y))


def run_case(name: str, folder: Path) -> dict[str, Any]:
    G = np.load(folder / "G.npy")
    y = np.load(folder / "y.npy")
    kw = dict(CASES[name])

    def fit() -> None:
        if kw.pop("path", False):
            mk.mkl_path(G, y - y.mean(), kernels="precomputed", max_points=10)
        elif kw.pop("one_class", False):
            mk.MKLOneClass(kernels="precomputed").fit(G)
        else:
            if kw.get("groups") == "halves":
                kw["groups"] = [m * 2 // G.shape[0] for m in range(G.shape[0])]
            mk.MKLClassifier(kernels="precomputed", max_iter=50, **kw).fit(G, y)

    return measure(name, "stack", G.nbytes, fit)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--M", type=int, default=20)
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--features", action="store_true", help="explicit features, prox_newton")
    ap.add_argument("--width", type=int, default=100, help="features per kernel")
    ap.add_argument("--case", help="run one case in this process (internal)")
    ap.add_argument("--dir", help="folder of the saved stack (internal)")
    args = ap.parse_args()
    if args.case:
        if args.features:
            print(json.dumps(run_feature_case(args.case, Path(args.dir), args.M)))
        else:
            print(json.dumps(run_case(args.case, Path(args.dir))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.features:
            build_features(args.n, args.M, args.width, args.dtype, Path(tmp))
        else:
            build(args.n, args.M, args.dtype, Path(tmp))
        rows = []
        for name in FEATURE_CASES if args.features else CASES:
            cmd = [sys.executable, __file__, "--case", name, "--dir", tmp, "--M", str(args.M)]
            if args.features:
                cmd.append("--features")
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(out))
    keys = list(rows[0])
    shape = f", {args.width} features per kernel" if args.features else ""
    print(f"n = {args.n}, M = {args.M}{shape}, {args.dtype}\n")
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in r.values()]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
