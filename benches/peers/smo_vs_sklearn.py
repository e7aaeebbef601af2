"""Standalone check (not collected by pytest): the SMO engine against scikit-learn's libsvm on
dense precomputed kernels of n = 1000–4000 — same dual objective (relative 1e-6) and the fit
time of each, for C-SVC, ε-SVR, the one-class SVM and the L2-SVM (the latter against a
hard-margin SVC on K + I/C, which is the same dual).

    python benches/peers/smo_vs_sklearn.py [--repeats R] [n ...]

Times are medians of R repeats (default 5), ours and scikit-learn's called in turn.

Exits with status 1 if an objective differs by more than the tolerance.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import make_classification
from sklearn.svm import SVC, SVR, OneClassSVM

from multikernel import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

RTOL = 1e-6
TOL = 1e-6  # stopping tolerance given to both solvers


def problem(n: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    X, y01 = make_classification(
        n_samples=n, n_features=20, n_informative=10, flip_y=0.05, random_state=0
    )
    X = (X - X.mean(0)) / X.std(0)
    sq = (X**2).sum(1)
    K = np.exp(-0.05 * (sq[:, None] + sq[None, :] - 2 * X @ X.T))
    y = np.where(y01 > 0, 1.0, -1.0)
    t = X[:, 0] + np.sin(X[:, 1]) + 0.1 * np.random.RandomState(1).randn(n)
    return np.ascontiguousarray(K), y, t


def dense_coef(model: Any, n: int) -> NDArray[np.float64]:
    beta = np.zeros(n)
    beta[model.support_] = model.dual_coef_[0]
    return beta


Case = tuple[str, Callable[[], object], Callable[[], object], Callable[[object], float]]


def cases_for(n: int) -> list[Case]:
    K, y, t = problem(n)
    K_l2 = K + np.eye(n)  # the L2-SVM with C = 1 is a hard-margin SVC on K + I/C

    def svc_obj(m: object) -> float:
        b = dense_coef(m, n)
        return float(0.5 * b @ K @ b - np.abs(b).sum())

    def svr_obj(m: object) -> float:
        b = dense_coef(m, n)
        return float(0.5 * b @ K @ b + 0.1 * np.abs(b).sum() - t @ b)

    def oc_obj(m: object) -> float:
        b = dense_coef(m, n)
        return float(0.5 * b @ K @ b)

    def l2_obj(m: object) -> float:
        b = dense_coef(m, n)
        return float(0.5 * b @ K_l2 @ b - np.abs(b).sum())

    def ours(data: NDArray[np.float64], kind: str, **kw: Any) -> Callable[[], object]:
        return partial(_core.svm, K, data, kind=kind, tol=TOL, **kw)

    def ref(
        est: SVC | SVR | OneClassSVM, Kf: NDArray[np.float64], *data: object
    ) -> Callable[[], object]:
        return partial(est.fit, Kf, *data)

    cases: list[Case] = []
    for C in (1.0, 100.0):
        svc = SVC(kernel="precomputed", C=C, tol=TOL, cache_size=4000)
        svr = SVR(kernel="precomputed", C=C, epsilon=0.1, tol=TOL, cache_size=4000)
        cases.append((f"svc C={C:g}", ours(y, "svc", C=C), ref(svc, K, y), svc_obj))
        cases.append((f"svr C={C:g}", ours(t, "svr", C=C, epsilon=0.1), ref(svr, K, t), svr_obj))
    oc = OneClassSVM(kernel="precomputed", nu=0.2, tol=TOL, cache_size=4000)
    cases.append(("one_class nu=0.2", ours(y, "one_class", nu=0.2), ref(oc, K), oc_obj))
    hard = SVC(kernel="precomputed", C=1e12, tol=TOL, cache_size=4000)
    cases.append(("l2svm C=1", ours(y, "l2svm", C=1.0), ref(hard, K_l2, y), l2_obj))
    return cases


def main(sizes: list[int], repeats: int) -> int:
    failures = 0
    print(f"{'case':<24}{'ours [s]':>10}{'sklearn [s]':>13}{'ratio':>8}{'rel. obj diff':>15}")
    for n in sizes:
        for name, ours_fit, ref_fit, ref_objective in cases_for(n):
            (t_ours, ours), (t_ref, ref) = paired_median_times([ours_fit, ref_fit], repeats)
            obj_ours = float(ours["objective"])  # type: ignore[index]
            obj_ref = ref_objective(ref)
            rel = abs(obj_ours - obj_ref) / max(abs(obj_ref), 1e-12)
            ok = rel <= RTOL
            failures += not ok
            print(
                f"{f'n={n} {name}':<24}{t_ours:>10.4f}{t_ref:>13.4f}{t_ours / t_ref:>8.2f}"
                f"{rel:>15.2e}{'' if ok else '  FAIL'}"
            )
    return 1 if failures else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 2000, 4000])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    sys.exit(main(args.sizes, args.repeats))
