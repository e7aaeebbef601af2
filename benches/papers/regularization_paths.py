"""Bach, Thibaux & Jordan (2004), "Computing regularization paths for learning multiple
kernels": the path figure redrawn with ``multikernel.mkl_path`` and the paper's cost claims.

The paper's setting: the weighted block 1-norm ``Σ_i ℓ(y_i, f(x_i)) + λ Σ_j d_j ‖f_j‖`` (our
``C = 1/λ``, no intercept) with the squared and the logistic loss, followed from ``λ = ∞``
by predictor-corrector steps in ``σ = log λ`` on a log-barrier dual with a fixed ``μ = 1e-3``
(its §3.3). Its Figure 2 plots the kernel weights η_j along the path "for a toy problem with
a small number of kernels", kernel linear regression (left) and kernel logistic regression
(right). Its cost claims: the number of kinks is "always less than a small constant times
the number of basis kernels"; the number of predictor-corrector steps is O(m); the path costs
O(mn³ + m²n²), "a constant times the complexity of solving the problem using interior point
methods for one value of the regularization parameter".

A. The figure: a toy problem (n = 100 points of 4 standard normal inputs; regression target
   sin(2x₁) + x₂²/2 + noise, standardised; class sign(x₁ + x₂²/2 − 1/2 + noise)), 8 kernels
   on all inputs (linear, polynomial of degree 2 and 3, Gaussians σ ∈ {0.5, 1, 2, 4, 8}), unit
   mean diagonal, d_j = 1; ``mkl_path(..., mu=1e-3, C_max=1e4·C0)`` (the paper's fixed
   barrier weight; a long path to show the small-λ regime). Top: η_j, bottom: ‖f_j‖, against
   log10 C (‖f_j‖ = η_j d_j on the active kernels, so the norms draw the same curves), with
   the number of active kernels below.
B. Cost against the number of kernels M: scikit-learn's digits, odd vs even, n = 200 points,
   M Gaussian kernels on random 8-column subsets (``benches/peers/path.py``'s problem),
   M ∈ {5, 10, 20, 40, 80, 160}, both losses, ``mkl_path`` at its default (relative gap 1e-3
   at every point, C from C0/2 to 1000·C0): points, kinks, corrector steps, Cholesky
   factorisations, and the path's time over one SpicyMKL fit (``penalty="l1"``, tol 1e-3) at
   the path's last C and at its geometric middle C (those fits have an intercept, the path
   has not: a cost reference, as in ``benches/peers/path.py``).
C. Against one interior-point solve, the paper's own yardstick (only when cvxpy is installed,
   e.g. the peers' environment): cvxpy + Clarabel on the same objective (no intercept, squared
   loss) at the path's last C, n = 100, M ∈ {5, 10, 20}, one run each.

    python benches/papers/regularization_paths.py [--quick] [--parts abc] [--repeats 3]
        [--out benches/papers/results/regularization_paths.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
import warnings
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import RESULTS, Report, loglog_slope, peer_module, timed_in_turn  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

import multikernel as mk  # noqa: E402
from multikernel.kernels import Gaussian, Linear, Polynomial  # noqa: E402

PEER = peer_module("path")  # problem(n, M), l1_fit(G, y, C, loss)
LOSSES: tuple[mk.PathLoss, ...] = ("squared", "logistic")
emit = Report()

PAPER = """
## The paper's figures (NIPS 2004; the machine is not stated)

- **Figure 2** ("Examples of variation of η along the regularization path for linear
  regression (left) and logistic regression (right)"): a toy problem "with a small number of
  kernels"; the stored text of the paper gives neither its data nor numbers, only what the
  figure shows: "the weights are not even approximately monotonic functions of λ", and as
  λ → 0 "they become constant for linear regression and they grow up to infinity for
  logistic regression" (as log(1/λ) when one kernel has a flat spectrum, its §4).
- **Kinks**: "Our experiments suggest that the number of those kinks is always less than a
  small constant times the number of basis kernels."
- **Steps and cost**: "We have observed empirically that the overall number of those steps
  is O(m), thus the total empirical complexity is O(mn³ + m²n²)", each step
  O(n³ + mn²), and for m ≤ n the path is "a constant times the complexity of obtaining only
  one point in the path using an interior point method". No timings, step counts or kink
  counts are printed; its simulations used μ = 1e-3. Most of its §4 (simulation experiments
  with a large set of linear, polynomial and Gaussian basis kernels) is missing from our copy
  of the text; only its paragraph on the small-λ behaviour survives.
"""


# --- A. the figure ------------------------------------------------------------------------


def toy() -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    rng = np.random.default_rng(0)
    n = 100
    X = rng.normal(size=(n, 4))
    yr = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    yr = (yr - yr.mean()) / yr.std()
    yc = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, yr, yc


TOY_KERNELS: list[mk.kernels.Kernel] = [
    Linear(),
    Polynomial(degree=2),
    Polynomial(degree=3),
    *[Gaussian(sigma=s) for s in (0.5, 1.0, 2.0, 4.0, 8.0)],
]
TOY_NAMES = ["linear", "poly 2", "poly 3"] + [f"gauss σ={s:g}" for s in (0.5, 1, 2, 4, 8)]


def active_counts(path: mk.MKLPath) -> list[int]:
    return [int(np.count_nonzero(w > 0)) for w in path.kernel_weights]


def part_a(out: Path, c_max_factor: float) -> None:
    X, yr, yc = toy()
    emit("\n## A. The path figure (toy problem, 8 kernels, μ = 1e-3 fixed as in the paper)")
    emit()
    emit(
        "| loss | C0 | points | kinks | active kernels along the path | monotone? | "
        "max η at 10·C0 | at 100·C0 | at the end | end |"
    )
    emit("|---|---|---|---|---|---|---|---|---|---|")
    fig, axes = plt.subplots(
        2, 2, figsize=(10, 5.6), layout="constrained", sharex="col", height_ratios=[3, 1]
    )
    cases: tuple[tuple[mk.PathLoss, NDArray[np.float64]], ...] = (
        ("squared", yr),
        ("logistic", yc),
    )
    for col, (loss, y) in enumerate(cases):
        path = mk.mkl_path(
            X, y, kernels=TOY_KERNELS, loss=loss, mu=1e-3, C_max=None, max_points=500
        )
        path = mk.mkl_path(
            X, y, kernels=TOY_KERNELS, loss=loss, mu=1e-3, C_max=c_max_factor * path.C0,
            max_points=500,
        )  # fmt: skip
        counts = active_counts(path)
        changes = [c for k, c in enumerate(counts) if k == 0 or c != counts[k - 1]]
        monotone = all(a <= b for a, b in zip(changes, changes[1:], strict=False))

        def eta_at(C: float, path: mk.MKLPath = path) -> float:
            k = int(np.searchsorted(path.Cs, C))
            return float(path.kernel_weights[min(k, len(path.Cs) - 1)].max())

        emit(
            f"| {loss} | {path.C0:.3g} | {len(path.Cs)} | {len(path.kinks)} | "
            f"{' → '.join(map(str, changes))} | {'yes' if monotone else 'no'} | "
            f"{eta_at(10 * path.C0):.3g} | {eta_at(100 * path.C0):.3g} | "
            f"{path.kernel_weights[-1].max():.3g} | {path.end} |"
        )
        logC = np.log10(path.Cs)
        for j, name in enumerate(TOY_NAMES):
            style = "-" if j < 3 else "--"
            axes[0, col].plot(logC, path.kernel_weights[:, j], style, label=name)
        axes[1, col].step(logC, counts, where="post", color="k")
        for k in path.kinks:
            axes[0, col].axvline(logC[k], color="grey", lw=0.4, alpha=0.5)
        title = "kernel linear regression" if loss == "squared" else "kernel logistic regression"
        axes[0, col].set(title=f"{title}: η_j", ylabel="η_j (kernel weight)")
        axes[1, col].set(xlabel="log10 C  (C = 1/λ)", ylabel="active kernels (η_j > 0)")
    axes[0, 0].legend(fontsize=7, ncol=2)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}", flush=True)
    emit(
        f"\nC_max = {c_max_factor:g}·C0; grey lines: kinks. The figure: ![path figure]({out.name})"
    )


# --- B. cost against M --------------------------------------------------------------------


def path_fit(G: NDArray[np.float64], y: NDArray[np.float64], loss: mk.PathLoss) -> mk.MKLPath:
    return mk.mkl_path(G, y, loss=loss, d=np.ones(G.shape[0]))


def part_b(n: int, Ms: list[int], repeats: int, slow: float) -> None:
    emit(f"\n## B. Path cost against the number of kernels M (digits, n = {n})")
    emit(
        "\n`mkl_path` default (relative gap ≤ 1e-3 at every point, C0/2 to 1000·C0); "
        "'one fit' = SpicyMKL `penalty=\"l1\"`, tol 1e-3, at the path's last C (C_max) and at "
        "its geometric middle (C_mid); path / fit = time ratio within the same repeats."
    )
    emit()
    emit(
        "| loss | M | points | kinks | kinks / M | corrector steps | factorisations | "
        "path (s) | fit at C_max (s) | path / fit at C_max | fit at C_mid (s) | "
        "path / fit at C_mid |"
    )
    emit("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for loss in LOSSES:
        times: list[float] = []
        points: list[int] = []
        for M in Ms:
            G, y = PEER.problem(n, M)
            first = path_fit(G, y, loss)
            c_max = float(first.Cs[-1])
            c_mid = float(math.sqrt(first.Cs[0] * first.Cs[-1]))
            res = timed_in_turn(
                [
                    partial(path_fit, G, y, loss),
                    partial(PEER.l1_fit, G, y, c_max, loss),
                    partial(PEER.l1_fit, G, y, c_mid, loss),
                ],
                repeats,
                slow,
            )
            (t_path, _, p), (t_max, _, _), (t_mid, _, _) = res
            times.append(t_path)
            points.append(len(p.Cs))
            emit(
                f"| {loss} | {M} | {len(p.Cs)} | {len(p.kinks)} | {len(p.kinks) / M:.2f} | "
                f"{int(p.n_corrector_steps.sum())} | {p.n_factorizations} | {t_path:.3g} | "
                f"{t_max:.3g} | {t_path / t_max:.2f} | {t_mid:.3g} | {t_path / t_mid:.2f} |"
            )
        emit(
            f"| {loss} | slope in M (log-log) | {loglog_slope(Ms, points):.2f} |  |  |  |  | "
            f"{loglog_slope(Ms, times):.2f} |  |  |  |  |"
        )


# --- C. against one interior-point solve --------------------------------------------------


def part_c(n: int, Ms: list[int]) -> None:
    if importlib.util.find_spec("cvxpy") is None:
        emit("\n## C. Against one interior-point solve: skipped (cvxpy is not installed)")
        return
    from reference import cvxpy_mkl

    emit(f"\n## C. Against one interior-point solve (cvxpy + Clarabel), squared loss, n = {n}")
    emit(
        "\nThe same objective (no intercept, d_j = 1) at the path's last C; one run each; "
        "rel. ΔP = (P_path − P_ipm)/P_ipm at that C."
    )
    emit()
    emit("| M | path (s) | points | one interior-point solve (s) | path / one solve | rel. ΔP |")
    emit("|---|---|---|---|---|---|")
    for M in Ms:
        G, y = PEER.problem(n, M)
        t = time.perf_counter()
        p = path_fit(G, y, "squared")
        t_path = time.perf_counter() - t
        t = time.perf_counter()
        ref = cvxpy_mkl(G, y, C=float(p.Cs[-1]), loss="squared", penalty="l1", intercept=False)
        t_ipm = time.perf_counter() - t
        dP = (p.primal_objectives[-1] - ref.objective) / ref.objective
        emit(
            f"| {M} | {t_path:.3g} | {len(p.Cs)} | {t_ipm:.3g} | {t_path / t_ipm:.3f} | {dP:+.1e} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run (under a minute)")
    ap.add_argument("--parts", default="abc")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--slow", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=RESULTS / "regularization_paths.md")
    args = ap.parse_args()
    if args.quick:
        n_b, Ms_b, n_c, Ms_c = 60, [5, 10], 40, [5]
        args.repeats = 1
    else:
        n_b, Ms_b, n_c, Ms_c = 200, [5, 10, 20, 40, 80, 160], 100, [5, 10, 20]
    command = "python benches/papers/regularization_paths.py" + (" --quick" if args.quick else "")
    emit.header(
        "Bach, Thibaux & Jordan (2004), regularization paths: ours beside the paper", command
    )
    emit(PAPER)
    emit("## Ours")
    t0 = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "a" in args.parts:
            part_a(args.out.with_suffix(".png"), 1e4)
        if "b" in args.parts:
            part_b(n_b, Ms_b, args.repeats, args.slow)
        if "c" in args.parts:
            part_c(n_c, Ms_c)
    emit(f"\nTotal {time.perf_counter() - t0:.0f} s.")
    emit.write(args.out)


if __name__ == "__main__":
    main()
