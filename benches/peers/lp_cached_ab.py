"""ℓp ``analytic`` fits against the SVC on the summed kernel, per cell of the SimpleMKL UCI grid:
the SVC, ``lp`` at p = 2 and 4/3 (default ``check_input``) and ``lp`` at p = 2 without the
input check, called in turn ``--repeats`` times; the ratios of the minimum times to the SVC's
(less sensitive to the load of a shared machine than medians), medians in brackets. Run it on
two builds in turn (``PYTHONPATH``) to compare them (issue 65: the cached whole steps).

Reads the UCI sets of the shared data folder through ``_peers_case`` (benchmarks only).

    python benches/peers/lp_cached_ab.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sklearn.svm import SVC

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers_case import breast_cancer_problem, uci_problem  # noqa: E402

SETS = ["liver_bupa", "pima", "ionosphere", "sonar", "breast"]


def calls(G: Any, y: Any, C: float) -> list[Callable[[], object]]:
    """The SVC on the summed stack, lp at p = 2 and 4/3, and lp at p = 2 without the check."""

    def lp(p: float, check: bool = True) -> Callable[[], object]:
        est = mk.MKLClassifier(kernels="precomputed", C=C, tol=1e-3, penalty="lp", p=p)
        return lambda: est.fit(G, y, check_input=check)

    svc = SVC(kernel="precomputed", C=C, tol=1e-3)
    return [lambda: svc.fit(G.sum(axis=0), y), lp(2.0), lp(4.0 / 3.0), lp(2.0, check=False)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'set':>11} {'C':>4} {'svc s':>7} {'lp2':>6} {'lp43':>6} {'lp2 nochk':>9}  (medians)")
    for name in SETS:
        P = breast_cancer_problem() if name == "breast" else uci_problem(name)
        G, y = P.Gtr, P.ytr
        for C in [0.1, 1.0, 10.0]:
            fits = calls(G, y, C)
            ts: list[list[float]] = [[] for _ in fits]
            for _ in range(a.repeats):
                for k, f in enumerate(fits):
                    t = time.perf_counter()
                    f()
                    ts[k].append(time.perf_counter() - t)
            mn = [min(t) for t in ts]
            md = [statistics.median(t) for t in ts]
            print(
                f"{name:>11} {C:>4g} {mn[0]:7.4f} {mn[1] / mn[0]:6.2f} {mn[2] / mn[0]:6.2f} "
                f"{mn[3] / mn[0]:9.2f}  ({md[1] / md[0]:.2f} {md[2] / md[0]:.2f} "
                f"{md[3] / md[0]:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
