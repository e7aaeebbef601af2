"""SpicyMKL (ℓ1 MKL) fit time: the paper's scaling experiments and two peers, in one run.

Suzuki & Tomioka (2009), §5.2, on ringnorm (``../shared/data/ringnorm.csv``):

(a) kernel count: n = 200 training points, M ∈ {50, 200, 1000, 3000, 6000} Gaussian kernels, each
    on a random subset of the 20 features with width σ = 5χ² + 0.1 (χ² ~ chi-square(1)), unit
    trace; hinge and logistic loss; stop at relative duality gap 0.01. The paper gives neither the
    subset sizes nor C for this experiment: we draw the subset size uniformly from {1, …, d} and
    use their C = 0.05 (the middle of their UCI grid), i.e. our C = 1 / 0.05 = 20. Fit times are
    also given in "passes": fit time / time of one streaming read of the dense float64 stack
    measured in the same run (``quad_forms`` on the f64 stack, and numpy's ``G.sum()``).
    Goals of the issue: ≤ 1 s at M = 6000, growth close to linear in M, ≤ 8 passes at M = 3000.
(b) sample size: M = 20, n ∈ {500, 1000, 2000, 3000}.
(c) peers: cvxpy + Clarabel on a small problem (n = 100, M = 20), time ratio at equal objective;
    ``fit_lp(p=1)`` at the matched C on an M = 200 problem (the ℓ1 optimum at C is the ℓp, p = 1
    optimum at C·Σ_m‖f*_m‖), time ratio.

Only dense float64 and float32 stacks are benchmarked: a low-rank stack (``kernels.low_rank``) is
not accepted by ``fit_spicy`` from Python yet.

    python benches/peers/spicy_scaling.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_time  # noqa: E402
from problems import fit_lp, fit_spicy  # noqa: E402

FloatArray = NDArray[np.float64]

C_OURS = 20.0  # = 1 / (their C = 0.05)
TOL = 0.01
MAX_ITER = 500


def ringnorm(n: int, seed: int = 0) -> tuple[FloatArray, FloatArray]:
    from reference import load_dataset

    X, y = load_dataset("ringnorm", n=n, seed=seed)
    return X, y


def random_specs(M: int, d: int, seed: int = 0) -> list[mk.kernels.KernelSpec]:
    """Gaussian kernels on random feature subsets, σ = 5χ² + 0.1 (the paper's §5.2 recipe)."""
    rng = np.random.default_rng(seed)
    specs: list[mk.kernels.KernelSpec] = []
    for _ in range(M):
        size = int(rng.integers(1, d + 1))
        features = sorted(int(j) for j in rng.choice(d, size=size, replace=False))
        sigma = float(5.0 * rng.chisquare(1) + 0.1)
        specs.append(mk.kernels.Gaussian(sigma=sigma, features=features))
    return specs


def spicy(G: NDArray[Any], y: FloatArray, loss: str, C: float = C_OURS, tol: float = TOL) -> Any:
    return fit_spicy(
        G, y, penalty="l1", l1_ratio=1.0, C=C, loss=loss, epsilon=0.1, tol=tol,
        max_iter=MAX_ITER, n_threads=0,
    )  # fmt: skip


def active(r: Any) -> int:
    return int(np.count_nonzero(np.asarray(r.kernel_norms) > 0.0))


def pass_times(G64: FloatArray, repeats: int = 5) -> tuple[float, float]:
    """One streaming pass over the f64 stack: ``quad_forms`` and numpy's ``G.sum()``."""
    v = np.random.default_rng(1).standard_normal(G64.shape[1])
    mk.kernels.quad_forms(G64, v)  # warm-up (page faults, thread pool)
    t_qf, _ = median_time(lambda: mk.kernels.quad_forms(G64, v), repeats)
    t_sum, _ = median_time(lambda: G64.sum(), max(1, repeats // 2))
    return t_qf, t_sum


def slope(t: float, t_prev: float | None, x: float, x_prev: float | None) -> str:
    if t_prev is None or x_prev is None:
        return "–"
    return f"{math.log(t / t_prev) / math.log(x / x_prev):.2f}"


HEADER = (
    "| {k} | dtype | loss | fit (s) | outer it. | active | gap | status | "
    "passes (quad_forms) | passes (G.sum) | log-log slope |"
)


def kernel_count(Ms: list[int], n: int) -> None:
    print(
        f"\n## (a) Kernel count: ringnorm n = {n}, Gaussian kernels on random subsets, "
        f"σ = 5χ²+0.1, unit trace, C = {C_OURS:g} (their C = {1 / C_OURS:g}), tol {TOL}"
    )
    X, y = ringnorm(n)
    print("\nOne pass over the dense f64 stack (median of 5 / 2), measured in this run:\n")
    print("| M | stack f64 (MB) | Gram (s) | quad_forms pass (ms) | G.sum() pass (ms) |")
    print("|---|---|---|---|---|")
    rows: list[str] = []
    prev: dict[tuple[str, str], tuple[float, int]] = {}
    for M in Ms:
        specs = random_specs(M, X.shape[1], seed=M)
        t0 = time.perf_counter()
        G64 = mk.kernels.gram(X, specs, normalize="trace", dtype=np.float64)
        t_gram = time.perf_counter() - t0
        t_qf, t_sum = pass_times(G64)
        print(
            f"| {M} | {G64.nbytes / 1e6:.0f} | {t_gram:.2f} | {1e3 * t_qf:.2f} | "
            f"{1e3 * t_sum:.2f} |",
            flush=True,
        )
        repeats = 3 if M <= 1000 else 1
        for dtype in ("float64", "float32"):
            G = G64 if dtype == "float64" else G64.astype(np.float32)
            for loss in ("hinge", "logistic"):
                t, r = median_time(lambda G=G, y=y, loss=loss: spicy(G, y, loss), repeats)
                t_prev, M_prev = prev.get((dtype, loss), (None, None))
                prev[(dtype, loss)] = (t, M)
                rows.append(
                    f"| {M} | {dtype} | {loss} | {t:.3f} | {r.n_iter} | {active(r)} | "
                    f"{r.gap:.1e} | {r.status} | {t / t_qf:.1f} | {t / t_sum:.1f} | "
                    f"{slope(t, t_prev, M, M_prev)} |"
                )
            del G
        del G64
        gc.collect()
    print("\nFit time (median of 3 for M ≤ 1000, else 1 run); slope = d log t / d log M:\n")
    print(HEADER.format(k="M"))
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows), flush=True)


def sample_size(ns: list[int], M: int = 20) -> None:
    print(
        f"\n## (b) Sample size: ringnorm, M = {M} random Gaussian kernels, "
        f"C = {C_OURS:g}, tol {TOL} (f64 stack; median of 3 for n ≤ 1000, else 1 run)\n"
    )
    print(HEADER.format(k="n"))
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    prev: dict[str, tuple[float, int]] = {}
    for n in ns:
        X, y = ringnorm(n)
        G = mk.kernels.gram(X, random_specs(M, X.shape[1], seed=n), normalize="trace")
        t_qf, t_sum = pass_times(G)
        repeats = 3 if n <= 1000 else 1
        for loss in ("hinge", "logistic"):
            t, r = median_time(lambda G=G, y=y, loss=loss: spicy(G, y, loss), repeats)
            t_prev, n_prev = prev.get(loss, (None, None))
            prev[loss] = (t, n)
            print(
                f"| {n} | float64 | {loss} | {t:.3f} | {r.n_iter} | {active(r)} | "
                f"{r.gap:.1e} | {r.status} | {t / t_qf:.1f} | {t / t_sum:.1f} | "
                f"{slope(t, t_prev, n, n_prev)} |",
                flush=True,
            )
        del G
        gc.collect()


def versus_cvxpy(repeats: int) -> None:
    from reference import cvxpy_mkl, primal_objective

    n, M = 100, 20
    print(
        f"\n## (c1) Against cvxpy + Clarabel: ringnorm n = {n}, M = {M} random Gaussian kernels, "
        f"C = {C_OURS:g}\n"
    )
    X, y = ringnorm(n, seed=1)
    G = mk.kernels.gram(X, random_specs(M, X.shape[1], seed=7), normalize="trace")
    print("| loss | spicy tol | spicy (s) | cvxpy (s) | ratio | spicy P | cvxpy P | rel. diff |")
    print("|---|---|---|---|---|---|---|---|")
    for loss in ("hinge", "logistic"):
        t_ref, ref = median_time(
            lambda loss=loss: cvxpy_mkl(G, y, C=C_OURS, loss=loss, penalty="l1"),
            max(1, repeats // 2),
        )
        for tol in (1e-2, 1e-6):
            t, r = median_time(lambda loss=loss, tol=tol: spicy(G, y, loss, tol=tol), repeats)
            P = primal_objective(G, r.coef, r.intercept, y, C=C_OURS, loss=loss, penalty="l1")
            print(
                f"| {loss} | {tol:g} | {t:.4f} | {t_ref:.3f} | {t / t_ref:.4f} | {P:.8g} | "
                f"{ref.objective:.8g} | {(P - ref.objective) / abs(ref.objective):.1e} |",
                flush=True,
            )


def versus_lp(repeats: int, n: int = 200, M: int = 200) -> None:
    from reference import primal_objective

    print(
        f"\n## (c2) Against fit_lp(p=1, analytic) at the matched C: ringnorm n = {n}, M = {M}, "
        f"ℓ1 C = {C_OURS:g}, ℓp C' = C·S with S = Σ‖f*_m‖ from a spicy fit at tol 1e-8\n"
    )
    X, y = ringnorm(n, seed=2)
    G = mk.kernels.gram(X, random_specs(M, X.shape[1], seed=11), normalize="trace")
    print(
        "| loss | tol | S | spicy (s) | lp p=1 (s) | ratio spicy/lp | spicy ℓ1 P | lp ℓ1 P | "
        "rel. diff | spicy it. | lp it. | lp status |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for loss in ("hinge", "logistic"):
        S = float(np.sum(spicy(G, y, loss, tol=1e-8).kernel_norms))
        for tol in (1e-2, 1e-3):
            t_s, rs = median_time(lambda loss=loss, tol=tol: spicy(G, y, loss, tol=tol), repeats)
            t_l, rl = median_time(
                lambda loss=loss, tol=tol, S=S: fit_lp(
                    G,
                    y,
                    p=1.0,
                    C=C_OURS * S,
                    loss=loss,
                    epsilon=0.1,
                    algorithm="analytic",
                    tol=tol,
                    max_iter=2000,
                    inner_tol=1e-7,
                    n_threads=0,
                ),  # fmt: skip
                repeats,
            )
            Ps = primal_objective(G, rs.coef, rs.intercept, y, C=C_OURS, loss=loss, penalty="l1")
            Pl = primal_objective(G, rl.coef, rl.intercept, y, C=C_OURS, loss=loss, penalty="l1")
            print(
                f"| {loss} | {tol:g} | {S:.4g} | {t_s:.4f} | {t_l:.4f} | {t_s / t_l:.3f} | "
                f"{Ps:.7g} | {Pl:.7g} | {(Pl - Ps) / abs(Ps):.1e} | {rs['n_iter']} | "
                f"{rl['n_iter']} | {rl['status']} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="reduced sizes and repeats")
    ap.add_argument(
        "--parts", default="abc", help="which parts to run, any of 'a', 'b', 'c' (default abc)"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    repeats = 1 if args.quick else 3
    if "c" in args.parts:
        versus_cvxpy(repeats)
        versus_lp(repeats)
    if "a" in args.parts:
        kernel_count([50, 200, 1000] if args.quick else [50, 200, 1000, 3000, 6000], n=200)
    if "b" in args.parts:
        sample_size([500, 1000] if args.quick else [500, 1000, 2000, 3000])
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
