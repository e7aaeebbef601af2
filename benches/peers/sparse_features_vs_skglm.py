"""The group lasso on sparse features (issue 67): ours on ``scipy.sparse`` points against ours
on their dense copy and skglm's group estimator on the same sparse matrix.

``n`` points of ``d`` columns at ``--density`` (CSR, uniform positions and values in
[0, 1)), in ``--groups``
groups of consecutive columns; a planted linear signal on the first tenth of the groups;
squared loss on a noisy target, logistic on its sign; ``C = 10/λ_max``; an intercept in
both. The objective is ``C Σ_i ℓ(y_i, x_iᵀw + b) + Σ_g ‖w_g‖``.

* ours: ``MKLRegressor`` / ``MKLClassifier`` with ``kernels=FeatureBank([Linear(features=g)
  ...], normalize="none")``, ``penalty="l1"``, ``solver="prox_newton"``, ``tol`` on the
  relative duality gap: the estimator's whole ``fit`` (validation and blocks included), on
  the sparse matrix and (``--dense``, when it fits in memory) on ``X.toarray()``;
* skglm (when importable): ``GroupLasso(alpha=1/(C n))`` on the CSC matrix (squared loss
  only: skglm 0.5's ``LogisticGroup`` lacks the sparse gradient ``GroupBCD`` needs on
  sparse X, and refuses it), its ``tol`` lowered from
  1e-4 until its objective (scored by ours) is within 1e-6 of the better of the two (after
  warming numba up);
* ``--singletons``: groups of one column (the lasso), against scikit-learn on the same
  matrix instead: ``Lasso(alpha=1/(C n))`` (squared) and ``LogisticRegression(l1_ratio=1,
  solver="liblinear", C=C)`` (logistic; liblinear penalises its intercept, ``|b|/s`` with
  ``intercept_scaling=s``, here 100), their ``tol`` lowered as skglm's.

Times are medians of ``--repeats``.

    python benches/peers/sparse_features_vs_skglm.py [--n 10000] [--d 10000]
        [--density 1e-3] [--groups 100] [--losses squared,logistic] [--tol 1e-6] [--dense]
        [--repeats 3] [--singletons]
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import FeatureBank, Linear

FloatArray = NDArray[np.float64]


def problem(
    n: int, d: int, density: float, groups: list[list[int]], loss: str, seed: int = 0
) -> tuple[Any, FloatArray, float]:
    rng = np.random.default_rng(seed)
    # Entries at uniform positions (scipy's sparse.random draws from all n·d positions).
    nnz = int(n * d * density)
    at = (rng.integers(0, n, nnz), rng.integers(0, d, nnz))
    X = sp.csr_matrix((rng.random(nnz), at), shape=(n, d))
    w = np.zeros(d)
    for g in groups[: max(1, len(groups) // 10)]:
        w[g] = rng.standard_normal(len(g)) * 10.0
    f = X @ w
    if loss == "squared":
        y = f + 0.1 * rng.standard_normal(n)
        r0 = y - y.mean()
    else:
        y = np.where(f - np.median(f) + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
        r0 = (y > 0) - (y > 0).mean()
    g0 = X.T @ r0
    lam_max = max(np.linalg.norm(g0[g]) for g in groups)
    return X, y, 10.0 / lam_max


def objective(
    loss: str, X: Any, y: FloatArray, w: FloatArray, b: float, C: float, groups: list[list[int]]
) -> float:
    f = X @ w + b
    data = 0.5 * np.sum((y - f) ** 2) if loss == "squared" else np.sum(np.logaddexp(0, -y * f))
    return float(C * data + sum(np.linalg.norm(w[g]) for g in groups))


def ours(
    loss: str, X: Any, y: FloatArray, C: float, groups: list[list[int]], tol: float
) -> tuple[FloatArray, float, str]:
    bank = FeatureBank([Linear(features=g) for g in groups], normalize="none")
    est: Any = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    m = est(kernels=bank, penalty="l1", loss=loss, C=C, tol=tol, solver="prox_newton").fit(X, y)
    return np.concatenate(m.coef_), float(m.intercept_), f"{m.duality_gap_:.0e}"


def skglm_fit(
    loss: str, X: Any, y: FloatArray, C: float, groups: list[list[int]], tol: float
) -> tuple[FloatArray, float]:
    from skglm import GeneralizedLinearEstimator, GroupLasso
    from skglm.datafits import LogisticGroup
    from skglm.penalties import WeightedGroupL2
    from skglm.solvers import GroupBCD
    from skglm.utils.data import grp_converter

    n = X.shape[0]
    if loss == "squared":
        est: Any = GroupLasso(groups=groups, alpha=1 / (C * n), tol=tol, fit_intercept=True)
    else:
        gi, gp = grp_converter(groups, X.shape[1])
        est = GeneralizedLinearEstimator(
            LogisticGroup(gp, gi),
            WeightedGroupL2(1 / (C * n), np.ones(len(groups)), gp, gi),
            GroupBCD(tol=tol, fit_intercept=True),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est.coef_.ravel(), float(np.ravel(est.intercept_)[0])


def sklearn_fit(
    loss: str, X: Any, y: FloatArray, C: float, groups: list[list[int]], tol: float
) -> tuple[FloatArray, float]:
    from sklearn.linear_model import Lasso, LogisticRegression

    est: Any
    if loss == "squared":
        est = Lasso(alpha=1 / (C * X.shape[0]), tol=tol, max_iter=100_000)
    else:
        est = LogisticRegression(
            C=C, l1_ratio=1.0, solver="liblinear", tol=tol, intercept_scaling=100.0, max_iter=10_000
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est.coef_.ravel(), float(np.ravel(est.intercept_)[0])


def median_time(f: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--density", type=float, default=1e-3)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--losses", default="squared,logistic")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--dense", action="store_true", help="time ours on X.toarray() too")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--singletons", action="store_true", help="groups of one column, against scikit-learn"
    )
    a = ap.parse_args()
    if a.singletons:
        a.groups = a.d
    width = a.d // a.groups
    groups = [list(range(k * width, (k + 1) * width)) for k in range(a.groups)]
    peer_fit: Callable[..., tuple[FloatArray, float]] = skglm_fit
    try:
        if a.singletons:
            import sklearn

            have_peer, peer_fit = f"scikit-learn {sklearn.__version__}", sklearn_fit
        else:
            import skglm

            have_peer = f"skglm {skglm.__version__}"
    except ImportError:
        have_peer = ""
    name = "scikit-learn" if a.singletons else "skglm"
    print(
        f"n = {a.n}, d = {a.d}, density {a.density}, {a.groups} groups, tol {a.tol}; "
        f"{platform.processor() or platform.machine()}; {have_peer or 'no ' + name}"
    )
    print(
        f"| loss | nnz | ours sparse | ours dense | {name} (tol) | sparse / {name} | gap "
        f"| objective: ours − {name} (rel.) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for loss in a.losses.split(","):
        X, y, C = problem(a.n, a.d, a.density, groups, loss)
        w, b, gap = ours(loss, X, y, C, groups, a.tol)
        p_ours = objective(loss, X, y, w, b, C, groups)
        t_sparse = median_time(
            lambda X=X, y=y, C=C, loss=loss: ours(loss, X, y, C, groups, a.tol), a.repeats
        )
        t_dense = float("nan")
        if a.dense:
            Xd = X.toarray()
            t_dense = median_time(
                lambda Xd=Xd, y=y, C=C, loss=loss: ours(loss, Xd, y, C, groups, a.tol), a.repeats
            )
            del Xd
        t_sk, sk_tol, p_sk = float("nan"), float("nan"), float("nan")
        # skglm 0.5's LogisticGroup has no sparse gradient (GroupBCD refuses it on sparse X).
        if have_peer and (loss == "squared" or a.singletons):
            Xc = X.tocsc() if loss == "squared" else X
            peer_fit(loss, Xc[:200], y[:200], C, groups, 1e-3)  # numba compiles here
            sk_tol, p_prev = 1e-4, float("inf")
            while True:
                sw, sb = peer_fit(loss, Xc, y, C, groups, sk_tol)
                p_sk = objective(loss, X, y, sw, sb, C, groups)
                # Also stop when a lower tol no longer helps (liblinear's penalised intercept
                # leaves it above ours).
                if p_sk <= p_ours * (1 + 1e-6) or p_sk >= p_prev * (1 - 1e-9) or sk_tol < 1e-12:
                    break
                sk_tol, p_prev = sk_tol / 10, p_sk
            t_sk = median_time(
                lambda Xc=Xc, y=y, C=C, t=sk_tol, loss=loss: peer_fit(loss, Xc, y, C, groups, t),
                a.repeats,
            )
        print(
            f"| {loss} | {X.nnz} | {t_sparse:.3f} s | {t_dense:.3f} s | {t_sk:.3f} s "
            f"({sk_tol:.0e}) | **{t_sparse / t_sk:.2f}×** | {gap} | "
            f"{(p_ours - p_sk) / abs(p_sk):.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
