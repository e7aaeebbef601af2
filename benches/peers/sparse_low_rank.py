"""Sparse MKL through ``kernels.low_rank`` factors (issue: the sparse wrapper, low-rank
Newton systems): digits odd/even, n = 1797, Kloft's 50 Gaussians ``exp(−d²/1.2^j)`` (as
``sparse_wrapper.py``), factorised with ``tol=1e-2`` and ``max_rank`` per kernel, then fitted
with ``penalty="l1"``, C = 1, tol 1e-3, ``solver="auto"`` (``prox_newton`` on factors of
total width ≤ n/2, n/4 with the hinge). Reports the factorisation's time and total rank and
each loss's fit (medians of ``--repeats`` in one run), beside the ℓp (p = 2) hinge fit of the
dense stack.

Without ``max_rank`` the narrowest Gaussians, nearly the identity on these points, keep
almost full rank (total rank 24 532 at ``tol=1e-2``): ``low_rank`` warns that such factors
compress nothing.

    python benches/peers/sparse_low_rank.py [--max-ranks 4,10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
import warnings
from functools import partial
from typing import Any

from _timing import median_time
from sparse_wrapper import digits

import multikernel as mk


def fit(G: Any, y: Any, loss: str, penalty: str = "l1") -> Any:
    Est = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    est = Est(kernels="precomputed", penalty=penalty, p=2.0, C=1.0, tol=1e-3, normalize=None,
              loss=loss)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(G, y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-ranks", default="4,10")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    G, y = digits(1797)
    t_lp, lp = median_time(lambda: fit(G, y, "hinge", "lp"), args.repeats)
    print(f"dense stack, lp p = 2, hinge: {t_lp:.3f} s, gap {lp.duality_gap_:.1e}\n")
    print("| max_rank | total rank | low_rank s | loss | solver | fit s | steps | gap | fit / lp |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in (int(v) for v in args.max_ranks.split(",")):
        t0 = time.perf_counter()
        F = mk.kernels.low_rank(G, tol=1e-2, max_rank=r)
        t_f = time.perf_counter() - t0
        for loss in ("logistic", "squared", "hinge"):
            t, e = median_time(partial(fit, F, y, loss), args.repeats)
            width = (4 if loss == "hinge" else 2) * sum(F.ranks)
            solver = "prox_newton" if width <= len(y) else "wrapper"
            cells = [r, sum(F.ranks), f"{t_f:.3f}", loss, solver, f"{t:.3f}", int(e.n_iter_),
                     f"{e.duality_gap_:.1e}", f"{t / t_lp:.2f}"]  # fmt: skip
            print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
