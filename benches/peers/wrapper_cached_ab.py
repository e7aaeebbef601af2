"""``l1`` and elastic-net fits (the SVM wrapper) against the SVC on the summed kernel, on sets the
solvers were not tuned on: the SVC, ``l1`` and ``elasticnet`` (l1_ratio 0.5), default
``check_input``, called in turn ``--repeats`` times; the ratios of the minimum times to the SVC's
(less sensitive to the load of a shared machine than medians), medians in brackets, the
iterations and the certificate (primal and dual values). Run it on two builds in turn
(``PYTHONPATH``) to compare them (issue 65: the wrapper on per-kernel gradient caches).

Data as ``stall_grid`` prepares it (its ``training``): ringnorm (400 points, from the shared
data folder, so this is a benchmark), scikit-learn's wine (class 0 against the rest) and
digits (even against odd, 400 points); an 80 % stratified split capped at 300 points,
standardised; the SimpleMKL bank of 27·(d+1) kernels, unit trace; hinge, tol 1e-3. The sets
of ``svm_price`` (liver_bupa, pima, ionosphere, sonar, breast) are read as it reads them
(``_peers_case``), for their certificates.

    python benches/peers/wrapper_cached_ab.py [--sets ringnorm,wine,digits] [--Cs 0.1,1,10]
        [--repeats 3]
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
from stall_grid import training  # noqa: E402

#: The sets of ``svm_price``, prepared as it prepares them.
PRICE_SETS = ["liver_bupa", "pima", "ionosphere", "sonar", "breast"]

PENALTIES: dict[str, dict[str, Any]] = {
    "l1": {"penalty": "l1"},
    "enet": {"penalty": "elasticnet", "l1_ratio": 0.5},
}


def calls(G: Any, y: Any, C: float) -> list[Callable[[], Any]]:
    """The SVC on the summed stack, then each penalty's fit."""

    def fit(kw: dict[str, Any]) -> Callable[[], Any]:
        est = mk.MKLClassifier(kernels="precomputed", C=C, tol=1e-3, **kw)
        return lambda: est.fit(G, y)

    svc = SVC(kernel="precomputed", C=C, tol=1e-3)
    return [lambda: svc.fit(G.sum(axis=0), y)] + [fit(kw) for kw in PENALTIES.values()]


def stack(name: str) -> tuple[Any, Any]:
    """The training stack and labels of ``name``."""
    if name in PRICE_SETS:
        P = breast_cancer_problem() if name == "breast" else uci_problem(name)
        return P.Gtr, P.ytr
    X, y = training(name)
    specs = mk.kernels.simplemkl_bank(n_features=X.shape[1])
    return mk.kernels.gram(X, specs, normalize="trace"), y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="ringnorm,wine,digits")
    ap.add_argument("--Cs", default="0.1,1,10")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    head = " ".join(f"{p + ' ratio':>11} {'it':>3} {'primal':>22} {'dual':>22}" for p in PENALTIES)
    print(f"{'set':>9} {'n':>4} {'M':>5} {'C':>4} {'svc s':>7} {head}  (median ratios)")
    for name in a.sets.split(","):
        G, y = stack(name)
        for C in (float(c) for c in a.Cs.split(",")):
            fits = calls(G, y, C)
            ts: list[list[float]] = [[] for _ in fits]
            outs: list[Any] = [None] * len(fits)
            for _ in range(a.repeats):
                for k, f in enumerate(fits):
                    t = time.perf_counter()
                    outs[k] = f()
                    ts[k].append(time.perf_counter() - t)
            mn = [min(t) for t in ts]
            md = [statistics.median(t) for t in ts]
            cells = []
            for k, est in enumerate(outs[1:], start=1):
                flag = "" if est.converged_ else "!"
                cells.append(
                    f"{mn[k] / mn[0]:10.2f}x {est.n_iter_:>3}{flag} "
                    f"{float(est.primal_objective_):22.16g} {float(est.dual_objective_):22.16g}"
                )
            medians = " ".join(f"{m / md[0]:.2f}" for m in md[1:])
            print(
                f"{name:>9} {len(y):>4} {G.shape[0]:>5} {C:>4g} {mn[0]:7.4f} "
                + " ".join(cells)
                + f"  ({medians})",
                flush=True,
            )


if __name__ == "__main__":
    main()
