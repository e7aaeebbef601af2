"""The price of checking a precomputed stack: ``multikernel.kernels.validate_stack`` (finite,
symmetric, Cauchy–Schwarz; what every fit with ``check_input=True`` runs) as a ratio to
``G.sum(axis=0)``, the one pass over the stack that an SVM on the summed kernel pays.

Stacks: the SimpleMKL UCI bank on liver, ionosphere and pima (unit trace, 80 % training split,
from the repository's ``tests/data``), and Gaussian stacks of random points (n = 1000, 2000,
3000). Medians of ``--repeats``, both calls in turn within every repeat.

    python benches/peers/stack_check.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers_case import uci_problem  # noqa: E402
from _timing import paired_median_times  # noqa: E402


def gaussians(n: int, M: int) -> np.ndarray:
    X = np.random.default_rng(0).normal(size=(n, 5))
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.ascontiguousarray(np.stack([np.exp(-d / 2.0**k) for k in range(M)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    stacks = [(name, lambda name=name: uci_problem(name).Gtr) for name in
              ("liver_bupa", "ionosphere", "pima")]  # fmt: skip
    stacks += [(f"gaussians n={n}", lambda n=n, M=M: gaussians(n, M))
               for n, M in ((1000, 50), (2000, 12), (3000, 6))]  # fmt: skip
    print(f"{'stack':>18} {'shape':>18} {'sum s':>8} {'check / sum':>12}")
    for name, make in stacks:
        G = make()
        (t_sum, _), (t_check, _) = paired_median_times(
            [lambda G=G: G.sum(axis=0), lambda G=G: mk.kernels.validate_stack(G)], args.repeats
        )
        print(f"{name:>18} {str(G.shape):>18} {t_sum:8.4f} {t_check / t_sum:12.2f}", flush=True)


if __name__ == "__main__":
    main()
