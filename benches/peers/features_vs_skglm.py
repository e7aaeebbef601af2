"""Sparse MKL on explicit features against skglm's group lasso, in one run: the goal table of
the feature-space issue.

With linear kernels on groups of features, ``penalty="l1"`` is the group lasso
``C Σ_i ℓ(y_i, x_iᵀw + b) + Σ_g ‖w_g‖``, which skglm solves with working-set block coordinate
descent and Anderson extrapolation (numba). Cases: ``n`` standardised Gaussian features
(d = 100 in 20 groups of 5; the first 5 groups carry the signal), squared loss on a noisy linear
target and logistic loss on its sign; ``C`` at a tenth of the largest useful penalty
(``C = 10/λ_max``, ``λ_max = max_g ‖X_gᵀ(ℓ'(b*))‖``); an intercept in both.

* ours: ``MKLRegressor`` / ``MKLClassifier`` with ``kernels=FeatureBank([Linear(features=g)
  ...], normalize="none")``, ``solver="auto"`` (prox_newton here), ``tol=1e-7`` on the
  relative duality gap: the estimator's whole ``fit``, validation and feature blocks included;
* skglm 0.5: ``GroupLasso(alpha=1/(C n), fit_intercept=True)`` and
  ``GeneralizedLinearEstimator(LogisticGroup, WeightedGroupL2, GroupBCD(fit_intercept=True))``,
  with its ``tol`` lowered from 1e-6 until its objective (scored by ours) is within 1e-6 of
  the better of the two (the tol used is reported; after warming numba up).

Both solutions are scored with the same objective; ratios are ours / skglm, medians of
``--repeats`` (each fit in turn within every repeat).

``--widths`` adds the measurement behind ``solver="auto"``'s width rule: ``prox_newton``
against the ``wrapper`` (both on the blocks, l1, C = 1, tol 1e-3) on digits odd/even
(n = 1797, X/16) with 20 Gaussian kernels (widths log-spaced in [1, 20]) of 10–90 Nyström
features each, total width R from 0.1 n to n.

``--nystroem`` adds the issue's large case: 20 Gaussian kernels (widths log-spaced) on random
feature subsets of 20-dimensional two-ring data, 100 Nyström features each, n = 10⁵, ``l1``
logistic (C = 1, tol 1e-3): feature time and fit time, and the certificate.

    .peers-venv/bin/python benches/peers/features_vs_skglm.py [--sizes 1000,10000,100000]
        [--repeats 3] [--widths] [--nystroem] [--out FILE]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import FeatureBank, Gaussian, Linear

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

FloatArray = NDArray[np.float64]
GROUPS = [list(range(5 * j, 5 * j + 5)) for j in range(20)]


def problem(n: int, loss: str, seed: int = 0) -> tuple[FloatArray, FloatArray, float]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 100))
    X = (X - X.mean(0)) / X.std(0)
    w = np.zeros(100)
    w[:25] = rng.standard_normal(25)
    f = X @ w
    if loss == "squared":
        y = f + rng.standard_normal(n)
        r0 = y - y.mean()
    else:
        y = np.where(f + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
        r0 = (y > 0) - (y > 0).mean()
    lam_max = max(np.linalg.norm(X[:, g].T @ r0) for g in GROUPS)
    return X, y, 10.0 / lam_max


def objective(loss: str, X: FloatArray, y: FloatArray, w: FloatArray, b: float, C: float) -> float:
    f = X @ w + b
    data = 0.5 * np.sum((y - f) ** 2) if loss == "squared" else np.sum(np.logaddexp(0, -y * f))
    return float(C * data + sum(np.linalg.norm(w[g]) for g in GROUPS))


def ours(loss: str, X: FloatArray, y: FloatArray, C: float) -> tuple[FloatArray, float]:
    bank = FeatureBank([Linear(features=g) for g in GROUPS], normalize="none")
    est: Any = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    m = est(kernels=bank, penalty="l1", loss=loss, C=C, tol=1e-7).fit(X, y)
    return np.concatenate(m.coef_), float(m.intercept_)


def skglm_fit(
    loss: str, X: FloatArray, y: FloatArray, C: float, tol: float
) -> tuple[FloatArray, float]:
    from skglm import GeneralizedLinearEstimator, GroupLasso
    from skglm.datafits import LogisticGroup
    from skglm.penalties import WeightedGroupL2
    from skglm.solvers import GroupBCD
    from skglm.utils.data import grp_converter

    n = X.shape[0]
    if loss == "squared":
        est: Any = GroupLasso(groups=GROUPS, alpha=1 / (C * n), tol=tol, fit_intercept=True)
    else:
        gi, gp = grp_converter(GROUPS, X.shape[1])
        est = GeneralizedLinearEstimator(
            LogisticGroup(gp, gi),
            WeightedGroupL2(1 / (C * n), np.ones(len(GROUPS)), gp, gi),
            GroupBCD(tol=tol, fit_intercept=True),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est.coef_.ravel(), float(np.ravel(est.intercept_)[0])


def skglm_case(sizes: list[int], repeats: int) -> list[str]:
    rows = [
        "| n | loss | skglm tol | skglm | ours | ours / skglm "
        "| objective: ours − best, skglm − best (relative) |",
        "|---|---|---|---|---|---|---|",
    ]
    for loss in ("squared", "logistic"):
        Xw, yw, Cw = problem(300, loss, seed=1)
        skglm_fit(loss, Xw, yw, Cw, 1e-4)  # numba compiles here
        for n in sizes:
            X, y, C = problem(n, loss)
            ref_w, ref_b = ours(loss, X, y, C)
            p_ours = objective(loss, X, y, ref_w, ref_b, C)
            tol = 1e-6
            while True:
                sw, sb = skglm_fit(loss, X, y, C, tol)
                p_sk = objective(loss, X, y, sw, sb, C)
                if p_sk <= min(p_ours, p_sk) * (1 + 1e-6) or tol < 1e-12:
                    break
                tol /= 10
            case = (loss, X, y, C)
            (t_ours, _), (t_sk, _) = paired_median_times(
                [lambda c=case: ours(*c), lambda c=case, t=tol: skglm_fit(*c, t)], repeats
            )
            best = min(p_ours, p_sk)
            rows.append(
                f"| {n} | {loss} | {tol:.0e} | {t_sk:.4f} s | {t_ours:.4f} s | "
                f"**{t_ours / t_sk:.2f}×** | {(p_ours - best) / best:.1e}, "
                f"{(p_sk - best) / best:.1e} |"
            )
            print(rows[-1], flush=True)
    return rows


def widths_case(repeats: int) -> list[str]:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X / 16.0, np.where(y % 2 == 0, 1.0, -1.0)
    rows = [
        "| loss | n | R | R/n | prox_newton | wrapper | prox_newton / wrapper | gaps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for loss in ("logistic", "squared"):
        for per in (10, 25, 50, 75, 90):
            specs = [Gaussian(sigma=float(s)) for s in np.geomspace(1.0, 20.0, 20)]
            bank = FeatureBank(specs, method="nystroem", n_components=per, random_state=0)
            F = bank.fit_transform(X)
            R = sum(f.shape[1] for f in F)
            est: Any = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
            fits = [
                lambda s=s, e=est, lo=loss, F=F: e(
                    kernels="precomputed", penalty="l1", loss=lo, C=1.0, tol=1e-3, solver=s
                ).fit(F, y)
                for s in ("prox_newton", "wrapper")
            ]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (ta, a), (tb, b) = paired_median_times(fits, repeats)
            rows.append(
                f"| {loss} | {len(y)} | {R} | {R / len(y):.2f} | {ta:.3f} s | {tb:.3f} s | "
                f"**{ta / tb:.2f}×** | {a.duality_gap_:.0e}, {b.duality_gap_:.0e} |"
            )
            print(rows[-1], flush=True)
    return rows


def nystroem_case() -> list[str]:
    rng = np.random.default_rng(0)
    n, d = 100_000, 20
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, d)) * np.where(y > 0, 1.0, 2.0)[:, None] ** 0.5
    X[:, :2] += np.where(y > 0, 0.3, 0.0)[:, None]
    widths = np.geomspace(1.0, 30.0, 20)
    specs = [
        Gaussian(sigma=float(s), features=sorted(rng.choice(d, 5, replace=False).tolist()))
        for s in widths
    ]
    bank = FeatureBank(specs, method="nystroem", n_components=100, random_state=0)
    t0 = time.perf_counter()
    blocks = bank.fit_transform(X)
    t_feat = time.perf_counter() - t0
    clf = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="logistic", C=1.0, tol=1e-3)
    t0 = time.perf_counter()
    clf.fit(blocks, y)
    t_fit = time.perf_counter() - t0
    active = int(np.sum(clf.kernel_weights_ > 0))
    return [
        "| n | kernels × features | features | fit (l1 logistic, C = 1, tol 1e-3) | gap "
        "| Newton steps | active kernels |",
        "|---|---|---|---|---|---|---|",
        f"| {n} | 20 × 100 | {t_feat:.1f} s | **{t_fit:.1f} s** | {clf.duality_gap_:.1e} | "
        f"{clf.n_iter_} | {active} |",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--widths", action="store_true")
    ap.add_argument("--nystroem", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import skglm

    sizes = [int(s) for s in args.sizes.split(",")]
    lines = [
        "# Sparse MKL on explicit features against skglm's group lasso",
        "",
        f"`python benches/peers/features_vs_skglm.py --sizes {args.sizes} --repeats "
        f"{args.repeats}{' --widths' if args.widths else ''}"
        f"{' --nystroem' if args.nystroem else ''}` (multikernel {mk.__version__}, "
        f"skglm {skglm.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, 2 cores).",
        "",
        *skglm_case(sizes, args.repeats),
    ]
    if args.widths:
        lines += ["", *widths_case(args.repeats)]
    if args.nystroem:
        lines += ["", *nystroem_case()]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
