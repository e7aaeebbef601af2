"""The price of learning the kernel weights: MKL fits against an SVM on the summed kernel, in one
run (issue "MKL at the price of three SVMs").

Cases: SimpleMKL's and SpicyMKL's UCI sets (liver, pima, ionosphere, sonar, from the repository's
``tests/data``) and scikit-learn's breast cancer (``--sets kloft,gauss5000``: the issue's two
larger setups, see ``problem``), standardised features, the SimpleMKL bank of
27·(d+1) kernels normalised to unit trace on an 80 % training split, ``kernels="precomputed"``,
hinge, tol 1e-3, for each C of ``--Cs``. Columns: each penalty's fit (default ``solver="auto"``,
default ``check_input``) as a ratio to ``SVC(kernel="precomputed")`` fitted on the stack summed
inside the timed call; medians of ``--repeats``, each fit in turn within every repeat. Each
cell: the ratio, the iterations, and the passes over the stack (``p``, in the unit of one read
of every stored entry, which the SVC's sum costs): the fit's ``stack_passes_`` plus the input
check's ``(n + 1)/n`` (every entry once, and the diagonal again).

    python benches/peers/svm_price.py [--sets liver_bupa,pima,ionosphere,sonar,breast]
        [--Cs 0.1,1,10] [--penalties lp2,lp43,l1,enet] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from sklearn.svm import SVC

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers_case import (  # noqa: E402
    Problem,
    breast_cancer_problem,
    kloft_problem,
    ringnorm_problem,
    uci_problem,
)
from _timing import paired_median_times  # noqa: E402

PENALTIES: dict[str, dict[str, Any]] = {
    "lp2": {"penalty": "lp", "p": 2.0},
    "lp43": {"penalty": "lp", "p": 4.0 / 3.0},
    "l1": {"penalty": "l1"},
    "enet": {"penalty": "elasticnet", "l1_ratio": 0.5},
}


def problem(name: str) -> Problem:
    """``breast``, a UCI set of the repository's ``tests/data``, or one of the issue's two
    larger setups: ``kloft`` (Kloft et al.'s digits odd vs even, n = 1 000 training points,
    M = 50 Gaussians of unit diagonal) and ``gauss5000`` (ringnorm, n = 5 000, M = 20 random
    Gaussians, unit trace: a 4 GB stack in memory)."""
    if name == "breast":
        return breast_cancer_problem()
    if name == "kloft":
        return kloft_problem(1000, 50)
    if name == "gauss5000":
        return ringnorm_problem(5000, 20)
    return uci_problem(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="liver_bupa,pima,ionosphere,sonar,breast")
    ap.add_argument("--Cs", default="0.1,1,10")
    ap.add_argument("--penalties", default="lp2,lp43,l1,enet")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    pens = args.penalties.split(",")
    head = f"{'set':>12} {'n':>4} {'M':>5} {'C':>5} {'svc s':>8} "
    print(head + " ".join(f"{p:>20}" for p in pens))
    for name in args.sets.split(","):
        P = problem(name)
        G, y = P.Gtr, P.ytr
        for C in (float(c) for c in args.Cs.split(",")):

            def svc(C: float = C, G: Any = G, y: Any = y) -> Any:
                return SVC(kernel="precomputed", C=C, tol=1e-3).fit(G.sum(axis=0), y)

            fits = [svc]
            for p in pens:

                def mkl(
                    C: float = C, kw: dict[str, Any] = PENALTIES[p], G: Any = G, y: Any = y
                ) -> Any:
                    est = mk.MKLClassifier(kernels="precomputed", C=C, tol=1e-3, **kw)
                    return est.fit(G, y)

                fits.append(mkl)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = paired_median_times(fits, args.repeats)
            base = res[0][0]
            cells = []
            for (t, est), _ in zip(res[1:], pens, strict=True):
                flag = "" if est.converged_ else "!"
                n = G.shape[1]
                passes = est.stack_passes_ + (n + 1) / n
                cells.append(f"{t / base:8.1f}x {est.n_iter_:>3}{flag} {passes:5.2f}p")
            row = f"{name:>12} {G.shape[1]:>4} {G.shape[0]:>5} {C:>5g} {base:8.4f} "
            print(row + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
