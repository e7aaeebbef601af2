"""Nath et al. (2009), "On the Algorithmics and Applications of a Mixed-norm based Kernel
Learning Formulation": its step rule's iteration count and its scaling figure, on our data.

The paper's setting: the (ℓ∞, ℓ1) group penalty ``½ max_j (Σ_k ‖f_jk‖)²`` with the hinge loss,
solved by alternating the closed-form group weights γ with entropic mirror-descent steps on
the within-group weights λ, step ``s_t ∝ sqrt(log max_j n_j) / (‖∇g‖_∞ sqrt(t))`` (its eq. 9),
which it says needs ``O(log max_j n_j)`` iterations. Kernels: 9 Gaussian widths per feature
descriptor (5 descriptors on Caltech, 7 on Oxford flowers), unit-trace Gram matrices, C by
cross-validation, libsvm inside. Its Figure 2 plots the training time of the one-group case
(SimpleMKL's ℓ1 problem) against log10(number of kernels), 1.5 to 4, for its algorithm and
SimpleMKL. We have none of its image features; the parts below use what we have.

A. Iterations of our three step rules (``MirrorConfig(step=...)``: ``"paper"`` is eq. 9,
   ``"adaptive"`` and ``"newton"`` are ours) against max_j n_j: digits odd/even, n = 200,
   five views (disjoint random column subsets, the paper's five descriptors) of n_j Gaussian
   widths each, n_j ∈ {3, 9, 27, 81}; hinge, C = 1, no kernel working set (the paper has
   none), up to ``--max-iter`` iterations; the iterations until the best relative duality gap
   is at most 1e-1, 1e-2, 3e-3 and 1e-3 (from ``history_``), one fit each (the counts are
   deterministic).
B. The paper's Figure 2: time to a 1e-3 gap against the number of kernels M with ONE group
   (the ℓ1-MKL problem, ``penalty="lp", p=1``): digits views, n = 200, M ∈ {30, 100, 300}
   (``--Ms``; the paper went to 10⁴, which this shared machine cannot hold in the default's
   time); the mirror solver with the paper's rule (no working set, at most 1000 iterations)
   and with our default (``newton``, working set), beside ``penalty="lp", p=1,
   solver="analytic"`` (the same problem by Kloft et al.'s closed-form updates, our
   SimpleMKL-problem solver).
C. ``penalty="group"`` against the SimpleMKL problem on multi-view data: nutrimouse (n = 40,
   views gene (120 columns) and lipid (21), genotype label) and digits (n = 500, five views,
   the paper's Caltech shape n = 5, n_j = 9), 9 Gaussian widths per view, C ∈ {0.1, 1, 10},
   tol 1e-3: time, iterations, the share of zero kernel weights and the views used (the
   paper: 57 % zero weights for its formulation against 96 % for ℓ1-MKL, which "almost
   always selected kernels from one or two components").

Widths: σ = (the view's median pairwise distance) × geomspace(0.1, 10, n_j); Gaussians have a
unit diagonal (our C is the paper's unit-trace C divided by n). Timing: medians of
``--repeats`` runs called in turn; a method whose first run exceeds ``--slow`` s runs once.

    python benches/papers/group_mkl.py [--quick] [--parts abc] [--repeats 3] [--slow 10]
        [--max-iter 1000] [--Ms 30,100,300] [--out benches/papers/results/group_mkl.md]
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import RESULTS, Report, peer_module, timed_in_turn  # noqa: E402
from numpy.typing import NDArray  # noqa: E402
from reference import load_dataset  # noqa: E402

import multikernel as mk  # noqa: E402

PEER = peer_module("group_mkl")  # digits views: problem(), views(), median_distance()
THRESHOLDS = (1e-1, 1e-2, 3e-3, 1e-3)
STEPS = ("paper", "adaptive", "newton")
emit = Report()

PAPER = """
## The paper's figures (NIPS 2009; the machine is not stated)

- **Iterations.** With the step of its eq. 9, "the number iterations required are
  O(log [max_j n_j]), which is nearly-independent of the number of kernels". The paper reports
  no measured iteration count. The bound behind it (its Result 1) is on the best value
  `g_γ(λ)` after T steps for a fixed γ, `O(1)·sqrt(Θ)·L/(sqrt(σ)·sqrt(T))` with
  `Θ = O(log max_j n_j)`: reaching an error ε takes `T ∝ log(max_j n_j)/ε²` steps, so the log
  is the dependence on the kernels and `1/ε²` the dependence on the accuracy.
- **Figure 2** ("Scaling plots comparing scalability of mirror-descent based algorithm and
  simpleMKL"): training time (seconds) against log10(number of kernels), 1.5 to 4, on two
  binary problems of its object-categorisation experiments, MixNorm-MKL with one group
  against L1-MKL solved by SimpleMKL; the y axes end at 600 s and 900 s. The curves carry no
  numbers; the text states "The speed-up was as high as 12 times in some cases", and that
  SimpleMKL spent most of each iteration "in computing the projection onto the feasible set".
  libsvm solves its mirror-descent SVMs.
- **Sparsity**: "the average sparsity (% of kernels with zero weightages) with the methods
  MixNorm-MKL, L1-MKL and L2-MKL is 57%, 96% and 0% respectively", and "L1-MKL almost always
  selected kernels from one or two components (feature descriptors) only".
- **Figure 1** (accuracy gains over L1-MKL and L2-MKL on Caltech-5, Oxford flowers and
  Caltech-101) is not reproduced: we do not have the image descriptors.
"""


@dataclass
class Fit:
    n_iter: int
    gap: float
    converged: bool
    gaps: NDArray[np.float64]  # best relative gap so far, per iteration
    weights: NDArray[np.float64]
    primal: float


def fit(
    G: NDArray[np.float64],
    y: NDArray[np.float64],
    groups: list[int] | None,
    step: str,
    working_set: bool,
    C: float,
    max_iter: int,
) -> Fit:
    """One fit: ``penalty="group"`` with the given step rule, or lp p=1 when ``step`` is
    ``"lp1"`` (``groups`` unused)."""
    if step == "lp1":
        clf = mk.MKLClassifier(
            kernels="precomputed", penalty="lp", p=1.0, solver="analytic", C=C, tol=1e-3,
            max_iter=max_iter,
        )  # fmt: skip
    else:
        clf = mk.MKLClassifier(
            kernels="precomputed", penalty="group", groups=groups, C=C, tol=1e-3,
            max_iter=max_iter,
            solver_config=mk.MirrorConfig(step=step, working_set=working_set),  # type: ignore[arg-type]
        )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(G, y)
    gaps = np.asarray(clf.history_["gap"], dtype=np.float64)
    best = np.minimum.accumulate(np.where(np.isfinite(gaps), gaps, np.inf))
    return Fit(
        n_iter=int(clf.n_iter_),
        gap=float(clf.duality_gap_),
        converged=bool(clf.converged_),
        gaps=best,
        weights=np.asarray(clf.kernel_weights_, dtype=np.float64),
        primal=float(clf.primal_objective_),
    )


def first_below(gaps: NDArray[np.float64], tol: float) -> int | None:
    hit = np.flatnonzero(gaps <= tol)
    return int(hit[0]) + 1 if len(hit) else None


# --- A. iterations against max_j n_j ----------------------------------------------------------


def part_a(
    n: int, njs: list[int], max_iter: int
) -> tuple[dict[tuple[int, str], Fit], dict[tuple[int, str], float]]:
    emit(f"\n## A. Iterations of the step rules against max_j n_j (digits, n = {n}, 5 views)")
    emit(
        f"\nHinge, C = 1, no working set, at most {max_iter} iterations; cells: iterations "
        "until the best relative gap is ≤ the threshold (— not reached); one fit each (the "
        "counts are deterministic), time of that fit."
    )
    emit()
    cols = " | ".join(f"≤ {t:g}" for t in THRESHOLDS)
    emit(f"| n_j | M | log max n_j | step | {cols} | final gap | time (s) | ms / iteration |")
    emit("|---|---|---|---|" + "---|" * len(THRESHOLDS) + "---|---|---|")
    fits: dict[tuple[int, str], Fit] = {}
    secs: dict[tuple[int, str], float] = {}
    for nj in njs:
        G, y, groups, _ = PEER.problem(n, 5 * nj, np.float64)
        for step in STEPS:
            t = time.perf_counter()
            f = fit(G, y, groups, step, False, 1.0, max_iter)
            secs[nj, step] = time.perf_counter() - t
            fits[nj, step] = f
            cells = " | ".join(
                str(k) if (k := first_below(f.gaps, tol)) is not None else "—" for tol in THRESHOLDS
            )
            emit(
                f"| {nj} | {5 * nj} | {math.log(nj):.2f} | {step} | {cells} | {f.gap:.1e}"
                f"{'' if f.converged else ' (not conv.)'} | {secs[nj, step]:.3g} | "
                f"{1e3 * secs[nj, step] / f.n_iter:.3g} |"
            )
    return fits, secs


# --- B. the paper's Figure 2: time against M, one group ---------------------------------------


B_METHODS = ("mirror, paper rule", "mirror, newton + WS", "lp p=1 analytic")


def part_b(
    n: int, Ms: list[int], repeats: int, slow: float
) -> dict[tuple[int, str], tuple[float, int, Fit]]:
    emit(f"\n## B. The paper's Figure 2: training time against M, one group (digits, n = {n})")
    emit(
        "\nOne group = the ℓ1-MKL (SimpleMKL) problem; hinge, C = 1, tol 1e-3. The paper's "
        "rule runs without a working set and at most 1000 iterations (*: gap not reached). "
        "'/ lp' = time / lp p=1 time (same run)."
    )
    emit()
    emit("| M | log10 M | method | time (s) | runs | / lp | iterations | gap | primal |")
    emit("|---|---|---|---|---|---|---|---|---|")
    out: dict[tuple[int, str], tuple[float, int, Fit]] = {}
    for M in Ms:
        G, y, _, _ = PEER.problem(n, M, np.float64)
        one = [0] * M
        fs = [
            partial(fit, G, y, one, "paper", False, 1.0, 1000),
            partial(fit, G, y, one, "newton", True, 1.0, 1000),
            partial(fit, G, y, None, "lp1", False, 1.0, 1000),
        ]
        res = timed_in_turn(fs, repeats, slow)
        t_lp = res[2][0]
        for name, (t, runs, f) in zip(B_METHODS, res, strict=True):
            out[M, name] = (t, runs, f)
            mark = "" if f.converged else "*"
            emit(
                f"| {M} | {math.log10(M):.2f} | {name} | {t:.3g}{mark} | {runs} | "
                f"{t / t_lp:.3g} | {f.n_iter} | {f.gap:.1e} | {f.primal:.6g} |"
            )
        del G
    return out


# --- C. group against the SimpleMKL problem on multi-view data --------------------------------


def view_stack(
    X: NDArray[np.float64], views: list[list[int]], nj: int
) -> tuple[NDArray[np.float64], list[int]]:
    specs: list[mk.kernels.Kernel] = []
    groups: list[int] = []
    for j, cols in enumerate(views):
        scale = PEER.median_distance(X, cols)
        for s in scale * np.geomspace(0.1, 10.0, nj):
            specs.append(mk.kernels.Gaussian(sigma=float(s), features=cols))
            groups.append(j)
    return mk.kernels.gram(X, specs, normalize="mean_diag"), groups


def multiview_sets(quick: bool) -> list[tuple[str, NDArray[np.float64], Any, list[int]]]:
    X, y = load_dataset("nutrimouse")
    G, groups = view_stack(X, [list(range(120)), list(range(120, 141))], 9)
    sets = [("nutrimouse (gene, lipid)", G, y, groups)]
    if not quick:
        Xd, yd = PEER.digits()
        idx = np.random.default_rng(0).choice(len(yd), 500, replace=False)
        Gd, gd = view_stack(Xd[idx], PEER.views(0), 9)
        sets.append(("digits, 5 views", Gd, yd[idx], gd))
    return sets


def sparsity(w: NDArray[np.float64], groups: list[int]) -> tuple[float, int]:
    nz = w > 1e-8 * w.max()
    return 100.0 * (1.0 - nz.mean()), len({g for g, z in zip(groups, nz, strict=True) if z})


def part_c(Cs: list[float], repeats: int, slow: float, max_iter: int, quick: bool) -> None:
    emit('\n## C. `penalty="group"` against the SimpleMKL problem on multi-view data')
    emit(
        "\n9 Gaussian widths per view, hinge, tol 1e-3. 'group, paper' is the paper's rule "
        f"without working set (at most {max_iter} iterations); 'group, newton' our default. "
        "'/ lp' = time / lp p=1 time (same run); zero w. = share of zero kernel weights; "
        "views = views with a nonzero weight."
    )
    emit()
    emit("| data | C | method | time (s) | runs | / lp | iterations | gap | zero w. | views |")
    emit("|---|---|---|---|---|---|---|---|---|---|")
    names = ("group, paper", "group, newton", "lp p=1 analytic")
    for label, G, y, groups in multiview_sets(quick):
        for C in Cs:
            fs = [
                partial(fit, G, y, groups, "paper", False, C, max_iter),
                partial(fit, G, y, groups, "newton", True, C, max_iter),
                partial(fit, G, y, None, "lp1", False, C, max_iter),
            ]
            res = timed_in_turn(fs, repeats, slow)
            t_lp = res[2][0]
            for name, (t, runs, f) in zip(names, res, strict=True):
                zero, used = sparsity(f.weights, groups)
                emit(
                    f"| {label} | {C:g} | {name} | {t:.3g} | {runs} | {t / t_lp:.3g} | "
                    f"{f.n_iter} | {f.gap:.1e}{'' if f.converged else ' (not conv.)'} | "
                    f"{zero:.0f} % | {used} of {max(groups) + 1} |"
                )


# --- figure -----------------------------------------------------------------------------------


def figure(
    a: dict[tuple[int, str], Fit] | None,
    b: dict[tuple[int, str], tuple[float, int, Fit]] | None,
    path: Path,
) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
    colors = {"paper": "C3", "adaptive": "C1", "newton": "C0"}
    if a:
        njs = sorted({nj for nj, _ in a})
        for nj, style in ((njs[min(1, len(njs) - 1)], "-"), (njs[-1], "--")):
            for step in STEPS:
                g = a[nj, step].gaps
                axes[0].loglog(np.arange(1, len(g) + 1), g, style, color=colors[step],
                               label=f"{step}, n_j = {nj}")  # fmt: skip
        axes[0].axhline(1e-3, color="grey", lw=0.8)
        axes[0].set(xlabel="iteration", ylabel="best relative duality gap",
                    title="A. gap against iterations")  # fmt: skip
        axes[0].legend(fontsize=7)
        cap = max(len(f.gaps) for f in a.values())
        for step in STEPS:
            for tol, style in ((1e-3, "-"), (1e-2, "--")):
                its = [first_below(a[nj, step].gaps, tol) for nj in njs]
                ys = [k if k is not None else cap for k in its]
                axes[1].plot(njs, ys, style, color=colors[step], label=f"{step}, to {tol:g}")
                for nj, k, v in zip(njs, its, ys, strict=True):
                    face = colors[step] if k is not None else "none"
                    axes[1].plot(nj, v, "o", color=colors[step], mfc=face)
        k0 = first_below(a[njs[0], "paper"].gaps, 1e-2)
        if k0 is not None:
            ref = [k0 * math.log(nj) / math.log(njs[0]) for nj in njs]
            axes[1].plot(njs, ref, ":", color="k", label="∝ log max n_j, the paper's claim")
        axes[1].set(xscale="log", yscale="log", xlabel="kernels per group n_j")
        axes[1].set(ylabel="iterations", title="A. iterations to the gap (open: capped)")
        axes[1].set_xticks(njs, [str(nj) for nj in njs])
        axes[1].minorticks_off()
        axes[1].legend(fontsize=6, ncol=2)
    if b:
        Ms = sorted({M for M, _ in b})
        for name, c in zip(B_METHODS, ("C3", "C0", "C2"), strict=True):
            xs = np.log10(Ms)
            axes[2].plot(xs, [b[M, name][0] for M in Ms], "-", color=c, label=name)
            for x, M in zip(xs, Ms, strict=True):
                face = c if b[M, name][2].converged else "none"
                axes[2].plot(x, b[M, name][0], "o", color=c, mfc=face)
        axes[2].set(xlabel="log10(number of kernels)", ylabel="training time (s)",
                    title="B. Figure 2 layout, one group (open: capped)")  # fmt: skip
        axes[2].legend(fontsize=7)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run (under a minute)")
    ap.add_argument("--parts", default="abc")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--slow", type=float, default=10.0)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--Ms", default="30,100,300", help="part B's numbers of kernels")
    ap.add_argument("--out", type=Path, default=RESULTS / "group_mkl.md")
    args = ap.parse_args()
    if args.quick:
        args.repeats = 1
        n_a, njs, max_iter, n_b, Ms, Cs = 120, [3, 9], 300, 120, [30, 100], [1.0]
    else:
        n_a, njs, max_iter, n_b, Ms, Cs = 200, [3, 9, 27, 81], args.max_iter, 200, [
            int(m) for m in args.Ms.split(",")], [0.1, 1.0, 10.0]  # fmt: skip
    command = "python benches/papers/group_mkl.py" + (" --quick" if args.quick else "")
    emit.header("Nath et al. (2009), group MKL by mirror descent: ours beside the paper", command)
    emit(PAPER)
    emit("## Ours")
    t0 = time.perf_counter()
    a = part_a(n_a, njs, max_iter)[0] if "a" in args.parts else None
    b = part_b(n_b, Ms, args.repeats, args.slow) if "b" in args.parts else None
    if "c" in args.parts:
        part_c(Cs, args.repeats, args.slow, max_iter, args.quick)
    emit(f"\nTotal {time.perf_counter() - t0:.0f} s.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png = args.out.with_suffix(".png")
    figure(a, b, png)
    emit(f"\n![ours]({png.name})")
    emit.write(args.out)


if __name__ == "__main__":
    main()
