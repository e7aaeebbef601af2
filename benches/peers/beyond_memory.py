"""Exact MKL beyond memory: kernels computed on demand against the dense alternative.

The setting of Kloft et al.'s runtime study at the sizes where stored kernels do not fit:
M = 50 Gaussian kernels on random subsets of 5 of ringnorm's 20 features (the 7 400 points of
``ringnorm.csv``, then synthetic points from the same generator), ℓp-MKL with the hinge loss,
C = 1, tol 1e-3, ``kernels=specs`` with ``cache_size=`` (MB). Beside it, what a user with
enough memory does instead: sum the 50 kernels into one dense float64 matrix, kernel by kernel,
and fit scikit-learn's ``SVC(kernel="precomputed")`` on it (no kernel weights learned).

Each fit runs in its own process, whose peak resident memory is read from the kernel
(``ru_maxrss``): data, interpreter and libraries included. The floor of the on-demand design
is reported beside the ratio: a whole-problem step at a new θ needs every support vector's
column of ``K_θ`` anew (SMO's gradient ``Σ_s α_s y_s K_θ[:, s]``, or the model on every point
at a working set's check), ``n·|S|·M`` kernel evaluations that no cache smaller than the
kernels' ``M·n·|S|`` values can avoid; the floor column is one such pass.

``--penalties l1 group`` times the sparse penalties on the same kernels as well: ``l1`` by the
SVM wrapper, ``group`` (the kernels grouped by width) by mirror descent, both with SMO on
the kernels computed on demand.

    python benches/peers/beyond_memory.py --sizes 7400 20000 --p 2 1.3333
    python benches/peers/beyond_memory.py --sizes 7400 20000 --penalties l1 group
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[2] / "shared" / "data" / "ringnorm.csv"
M, SUBSET = 50, 5


def ringnorm(n: int) -> tuple[np.ndarray, np.ndarray]:
    """ringnorm.csv for n = 7400; otherwise Breiman's generator (class 0 ~ N(0, 4I), class 1
    ~ N(a·1, I), a = 2/√20), seed 0."""
    if n == 7400 and DATA.exists():
        raw = np.loadtxt(DATA, delimiter=",", skiprows=1)
        return np.ascontiguousarray(raw[:, :-1]), np.where(raw[:, -1] > 0, 1.0, -1.0)
    rng = np.random.default_rng(0)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = np.where(
        y[:, None] < 0,
        rng.normal(0.0, 2.0, size=(n, 20)),
        rng.normal(2.0 / np.sqrt(20.0), 1.0, size=(n, 20)),
    )
    return X, y


def bank() -> list[tuple[float, list[int]]]:
    """50 (σ, features): random subsets of 5 features, σ² ∈ {5, 10, 20} (squared distances
    of 5 features of variance 1–4)."""
    rng = np.random.default_rng(1)
    return [
        (
            float(np.sqrt(rng.choice([5.0, 10.0, 20.0]))),
            sorted(rng.choice(20, SUBSET, False).tolist()),
        )
        for _ in range(M)
    ]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def penalty_of(setting: str) -> dict[str, Any]:
    """The estimator's penalty settings of a row: a number is ``lp`` at that p; ``group``
    groups the kernels by width."""
    if setting == "l1":
        return {"penalty": "l1"}
    if setting == "group":
        widths = sorted({s for s, _ in bank()})
        return {"penalty": "group", "groups": [widths.index(s) for s, _ in bank()]}
    return {"penalty": "lp", "p": float(setting)}


def child_ours(n: int, setting: str, cache_mb: float) -> dict[str, Any]:
    import multikernel as mk
    from multikernel.kernels import Gaussian

    X, y = ringnorm(n)
    specs = [Gaussian(sigma=s, features=f) for s, f in bank()]
    est = mk.MKLClassifier(
        kernels=specs, C=1.0, tol=1e-3, cache_size=cache_mb, **penalty_of(setting)
    )
    t = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - t
    support = int(np.count_nonzero(np.any(est.dual_coef_ != 0, axis=0)))
    return {
        "seconds": seconds,
        "peak_mb": peak_mb(),
        "gap": float(est.duality_gap_),
        "iterations": int(est.n_iter_),
        "support": support,
        "train_accuracy": float(est.score(X[:2000], y[:2000])),
    }


def child_svc(n: int) -> dict[str, Any]:
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    X, y = ringnorm(n)
    t = time.perf_counter()
    K = np.zeros((n, n))
    for s, f in bank():
        K += rbf_kernel(X[:, f], gamma=1.0 / (2.0 * s * s))
    summed = time.perf_counter() - t
    t = time.perf_counter()
    SVC(kernel="precomputed", C=1.0, tol=1e-3).fit(K, y)
    fit = time.perf_counter() - t
    return {
        "sum_seconds": summed,
        "fit_seconds": fit,
        "seconds": summed + fit,
        "peak_mb": peak_mb(),
    }


def child_rate() -> dict[str, Any]:
    """Kernel evaluations per second of the engine's Gram code on these kernels (2000 points,
    M·n² evaluations), the unit of the floor."""
    import multikernel as mk
    from multikernel.kernels import Gaussian

    X, _ = ringnorm(2000)
    specs = [Gaussian(sigma=s, features=f) for s, f in bank()]
    b = mk.kernels.KernelBank(specs, normalize="mean_diag")
    t = time.perf_counter()
    b.fit_transform(X)
    return {"rate": M * 2000.0**2 / (time.perf_counter() - t)}


def run(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[7400, 20000])
    ap.add_argument("--p", type=float, nargs="+", default=[2.0, 4.0 / 3.0])
    ap.add_argument(
        "--penalties", nargs="+", default=["lp"], choices=["lp", "l1", "group"],
        help="lp (at each --p), l1 (the wrapper), group (mirror; kernels grouped by width)",
    )  # fmt: skip
    ap.add_argument("--cache-mb", type=float, default=1024.0)
    ap.add_argument("--svc-up-to", type=int, default=20000, help="largest n of the SVC alternative")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "beyond_memory.md")
    ap.add_argument("--from-log", type=Path, nargs="+", help="rewrite the page from runs' output")
    ap.add_argument("--note", default="", help="a paragraph appended to the page")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind = a.child[0]
        if kind == "ours":
            r = child_ours(int(a.child[1]), a.child[2], float(a.child[3]))
        elif kind == "svc":
            r = child_svc(int(a.child[1]))
        else:
            r = child_rate()
        print(json.dumps(r))
        return
    rows: list[Row] = []
    if a.from_log:
        # Rewrite the page from runs' printed lines (JSON records: the run's evaluation
        # rate, then one per fit); rows that failed are left out.
        for log in a.from_log:
            rate = math.nan
            for line in log.read_text().splitlines():
                r = json.loads(line) if line.startswith("{") else {}
                rate = r.get("rate", rate)
                if "ours" in r and "error" not in r["ours"]:
                    setting = r.get("setting") or label(str(r["p"]))
                    rows.append((r["n"], setting, r["ours"], r["svc"], rate))
    else:
        rate = run(["rate"])["rate"]
        print(json.dumps({"rate": rate}), flush=True)
        for n in a.sizes:
            svc = run(["svc", str(n)]) if n <= a.svc_up_to else {}
            settings = [
                str(p) if pen == "lp" else pen
                for pen in a.penalties
                for p in (a.p if pen == "lp" else [None])
            ]
            for setting in settings:
                ours = run(["ours", str(n), setting, str(a.cache_mb)])
                rows.append((n, label(setting), ours, svc, rate))
                record = {"n": n, "setting": label(setting), "ours": ours, "svc": svc}
                print(json.dumps(record), flush=True)
    write_page(rows, a)


#: One fit: n, its penalty, ours, the SVC alternative of its run, and its run's evaluation
#: rate.
Row = tuple[int, str, dict[str, Any], dict[str, Any], float]


def label(setting: str) -> str:
    """A row's penalty as the page prints it: ``p = 2``, ``l1``, ``group``."""
    try:
        return f"lp, p = {float(setting):.3g}"
    except ValueError:
        return setting


def write_page(rows: list[Row], a: argparse.Namespace) -> None:
    """The results page: one row per (n, penalty), the floor and the ratio to the SVC alternative
    (both from the same run)."""
    sizes = " ".join(str(n) for n in dict.fromkeys(r[0] for r in rows))
    kinds = list(dict.fromkeys("lp" if r[1].startswith("lp") else r[1] for r in rows))
    pens = "" if kinds == ["lp"] else " --penalties " + " ".join(kinds)
    rates = ", ".join(f"{r:.2e}" for r in dict.fromkeys(r[4] for r in rows))
    several = len(set(r[4] for r in rows)) > 1
    runs = "one run per rate; ratios within a run" if several else "one run"
    lines = [
        "# Exact MKL beyond memory: kernels on demand against the dense SVC alternative",
        "",
        f"Generated by `python benches/peers/beyond_memory.py --sizes {sizes}{pens} "
        f"--cache-mb {a.cache_mb:g}` ({runs}; 2 cores).",
        "",
        f"M = {M} Gaussian kernels on random subsets of {SUBSET} of ringnorm's 20 features;",
        "hinge loss, C = 1, tol 1e-3, `kernels=specs, cache_size=` (MB); ℓp-MKL, and `l1`",
        "(the SVM wrapper) and `group` (kernels grouped by width; mirror descent). The",
        "alternative sums the 50 kernels into one dense float64 matrix (kernel by kernel) and",
        '`SVC(kernel="precomputed")` on it. Peak memory is the process\'s resident peak',
        "(interpreter, data and libraries included). The floor is one pass over the support",
        "vectors' columns, n·|S|·M kernel evaluations at the engine's measured rate",
        f"({rates} per second on these kernels): what any whole-problem step at a new θ",
        "costs at least (SMO's gradient Σ_s α_s y_s K_θ[:, s], or the model on every point at",
        "a working set's check); restricted iterations on a working set W cost |W|·|S|·M.",
        "",
        "| n | penalty | ours (s) | ours peak (MB) | gap | outer it. | support | floor (s) "
        "| SVC: sum + fit (s) | SVC peak (MB) | ours / SVC |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, p, ours, svc, rate in rows:
        if "error" in ours:
            lines.append(f"| {n} | {p} | {ours['error']} | | | | | | | | |")
            continue
        floor = n * M * ours["support"] / rate
        s = (
            f"{svc['sum_seconds']:.1f} + {svc['fit_seconds']:.1f}"
            if "seconds" in svc
            else svc.get("error", "–")
        )
        ratio = f"{ours['seconds'] / svc['seconds']:.2f}" if "seconds" in svc else "–"
        peak = f"{svc['peak_mb']:.0f}" if "peak_mb" in svc else "–"
        lines.append(
            f"| {n} | {p} | {ours['seconds']:.1f} | {ours['peak_mb']:.0f} | "
            f"{ours['gap']:.1e} | {ours['iterations']} | {ours['support']} | {floor:.1f} | "
            f"{s} | {peak} | {ratio} |"
        )
    if a.note:
        lines += ["", a.note]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
