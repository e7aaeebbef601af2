"""Regularization paths (``mkl_path``): the cost of the whole path against one l1 solve at its
largest C, against a grid of cold l1 solves and against a grid of warm-started l1 solves at
the path's points.

Problem: scikit-learn's digits, odd vs even, features / 16, a stratified random subset of n
points; M Gaussian kernels exp(−d²/(2σ²)) on random subsets of 8 of the 64 features, σ spread
geometrically over [0.5, 4] × sqrt(8)/2, unit diagonal. Logistic loss (labels ±1) and squared
loss (targets ±1), tol = 1e-3 (every point's relative gap; the barrier weight follows the
primal value), C from C0/2 to 1000·C0, weights d = 1.

Compared, in turn within each repeat (medians of ``--repeats``):
- ``path``: the whole path (points, kinks, Cholesky factorisations, worst relative gap);
- ``l1 at C_max``: one SpicyMKL fit (``penalty="l1"``, tol 1e-3, the path's accuracy) at the
  path's last C. It fits an intercept, which the path's objective has not, so the two
  objectives differ a little; the row is a cost reference ("a constant times one solve" is the
  paper's claim);
- ``l1 grid``: SpicyMKL fits at every 4th point of the path, cold starts, scaled to all points
  (time × n_points / n_fits);
- ``warm grid``: SpicyMKL fits at every point of the path, in increasing C, each warm-started
  from the previous one (``warm_start=True``, ``set_params(C=...)``, ``fit``), at the path's
  accuracy (tol 1e-3 on every fit's relative gap), with the total of their outer iterations
  (SpicyMKL reports no Newton or Cholesky count; the first fit is cold). Like ``l1 at C_max``
  it fits an intercept, which the path's objective has not.

With ``--low-rank TOL`` the script instead compares, at each size, the path on pivoted
Cholesky factors of the stack (``kernels.low_rank(G, tol=TOL)``, total rank R) with the path
on the dense stack of those same factors (``G_m G_mᵀ``, the same problem): when R < n every
Newton system is R × R (Woodbury) instead of n × n. Columns: R, points of each path, the
largest relative difference of their primal values at equal C, times and their ratio.

    python benches/peers/path.py [--quick] [--sizes 100x10,300x50] [--repeats 3]
        [--out benches/peers/results/path.md]
    python benches/peers/path.py --low-rank 1e-3 --sizes 1000x10,2000x10 [--repeats 3]
"""

from __future__ import annotations

import argparse
import warnings
from functools import partial

import numpy as np
from _timing import paired_median_times  # the script's folder is on sys.path
from numpy.typing import NDArray
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import multikernel as mk

OUT: list[str] = []


def emit(line: str = "") -> None:
    print(line, flush=True)
    OUT.append(line)


def problem(n: int, M: int, seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    y = np.where(y % 2 == 1, 1.0, -1.0)
    idx, _ = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)
    rng = np.random.default_rng(seed)
    specs: list[mk.kernels.Kernel] = []
    for s in np.geomspace(0.5, 4.0, M) * np.sqrt(8.0) / 2.0:
        cols = sorted(rng.choice(64, size=8, replace=False).tolist())
        specs.append(mk.kernels.Gaussian(sigma=float(s), features=cols))
    G = mk.kernels.gram(X[idx], specs, normalize="mean_diag")
    return G, y[idx]


def l1_fit(G: NDArray[np.float64], y: NDArray[np.float64], C: float, loss: str) -> float:
    est: mk.MKLClassifier | mk.MKLRegressor
    if loss == "logistic":
        est = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="logistic", C=C)
    else:
        est = mk.MKLRegressor(kernels="precomputed", penalty="l1", loss="squared", C=C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(G, y)
    return float(est.primal_objective_)


def l1_grid(G: NDArray[np.float64], y: NDArray[np.float64], Cs: list[float], loss: str) -> None:
    for C in Cs:
        l1_fit(G, y, C, loss)


def warm_grid(
    G: NDArray[np.float64], y: NDArray[np.float64], Cs: list[float], loss: str
) -> tuple[int, float]:
    """SpicyMKL along ``Cs``, each fit warm-started from the previous; returns the total of
    the outer iterations and the worst relative gap."""
    est: mk.MKLClassifier | mk.MKLRegressor
    if loss == "logistic":
        est = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="logistic")
    else:
        est = mk.MKLRegressor(kernels="precomputed", penalty="l1", loss="squared")
    est.set_params(warm_start=True)
    iters, worst = 0, 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for C in Cs:
            est.set_params(C=C).fit(G, y)
            iters += int(est.n_iter_)
            worst = max(worst, float(est.duality_gap_))
    return iters, worst


def low_rank_rows(sizes: list[tuple[int, int]], tol: float, repeats: int) -> None:
    emit(f"\nLow-rank stacks: `kernels.low_rank(G, tol={tol:g})` against the dense `G_m G_mᵀ`")
    emit()
    emit(
        "| loss | n | M | R | points (low / dense) | max rel. ΔP | factorised as | "
        "low-rank path (s) | dense path (s) | dense / low |"
    )
    emit("|---|---|---|---|---|---|---|---|---|---|")
    losses: tuple[mk.PathLoss, ...] = ("logistic", "squared")
    for loss in losses:
        for n, M in sizes:
            G, y = problem(n, M)
            lr = mk.kernels.low_rank(G, tol=tol)
            R = int(lr.ranks.sum())
            D = np.ascontiguousarray(np.stack([f @ f.T for f in lr.factors]))
            del G
            run = partial(mk.mkl_path, y=y, loss=loss, d=np.ones(M))
            (t_low, a), (t_dense, b) = paired_median_times(
                [partial(run, lr), partial(run, D, kernels="precomputed")], repeats
            )
            k = min(len(a.Cs), len(b.Cs))
            same = np.allclose(a.Cs[:k], b.Cs[:k], rtol=1e-6)
            dP = (
                float(np.max(np.abs(a.primal_objectives[:k] / b.primal_objectives[:k] - 1)))
                if same
                else float("nan")
            )
            emit(
                f"| {loss} | {n} | {M} | {R} | {len(a.Cs)} / {len(b.Cs)} | {dP:.1e} | "
                f"{'R × R' if R < n else 'n × n'} | {t_low:.3g} | {t_dense:.3g} | "
                f"{t_dense / t_low:.2f} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 100, M ∈ {10, 50}")
    ap.add_argument("--sizes", default="100x10,100x50,300x10,300x50,300x200,1000x10,1000x50")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--low-rank", type=float, help="compare factors at this tol with dense")
    args = ap.parse_args()
    sizes = (
        [(100, 10), (100, 50)]
        if args.quick
        else [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    )
    if args.low_rank is not None:
        emit("# Regularization path benchmark: low-rank stacks")
        emit(f"\nmultikernel {mk.__version__}, numpy {np.__version__}; digits odd/even, tol 1e-3")
        low_rank_rows(sizes, args.low_rank, args.repeats)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write("\n".join(OUT) + "\n")
        return
    emit("# Regularization path benchmark")
    emit(
        f"\nmultikernel {mk.__version__}, numpy {np.__version__}; digits odd/even, "
        "tol = 1e-3 (path and l1 fits)"
    )
    emit()
    emit(
        "| loss | n | M | points | kinks | factorisations | worst gap | path (s) | "
        "l1 at C_max (s) | path / one solve | l1 grid, all points (s) | path / grid | "
        "warm grid (s) | warm outer its | warm worst gap | path / warm grid |"
    )
    emit("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    losses: tuple[mk.PathLoss, ...] = ("logistic", "squared")
    for loss in losses:
        for n, M in sizes:
            G, y = problem(n, M)
            path = mk.mkl_path(G, y, loss=loss, d=np.ones(M))
            picks = list(range(0, len(path.Cs), 4))
            picked = [float(path.Cs[k]) for k in picks]
            res = paired_median_times(
                [
                    partial(mk.mkl_path, G, y, loss=loss, d=np.ones(M)),
                    partial(l1_fit, G, y, float(path.Cs[-1]), loss),
                    partial(l1_grid, G, y, picked, loss),
                    partial(warm_grid, G, y, [float(C) for C in path.Cs], loss),
                ],
                args.repeats,
            )
            (t_path, p), (t_one, _), (t_grid, _), (t_warm, (w_iters, w_gap)) = res
            t_all = t_grid * len(p.Cs) / len(picks)
            emit(
                f"| {loss} | {n} | {M} | {len(p.Cs)} | {len(p.kinks)} | {p.n_factorizations} | "
                f"{p.duality_gaps.max():.1e} | {t_path:.3g} | {t_one:.3g} | "
                f"{t_path / t_one:.2f} | {t_all:.3g} | {t_path / t_all:.3f} | "
                f"{t_warm:.3g} | {w_iters} | {w_gap:.1e} | {t_path / t_warm:.2f} |"
            )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(OUT) + "\n")


if __name__ == "__main__":
    main()
