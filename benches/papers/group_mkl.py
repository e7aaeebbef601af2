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

D. The paper's Figure 1 layout (accuracy gain of the group formulation over L1-MKL and L2-MKL,
   per class): nutrimouse (genes, lipids; genotype and diet labels), breast cancer (three views
   mean / se / worst, or ten views by measurement) and digits (four image quadrants, ten
   classes), 9 Gaussian widths per view, a fixed number of training and test points per class
   drawn ``--splits`` times, one-vs-one, C of each method by ``--folds``-fold CV on the
   training points; ``penalty="group"`` against ``penalty="l1"``, the SVM on the unweighted
   sum (the paper's L2-MKL) and ``penalty="lp", p=2``; test accuracy, per-class gains, the
   share of zero kernel weights and the views used. Run alone (``--parts d``) it replaces its
   section of the existing page and keeps the rest.

Widths: σ = (the view's median pairwise distance) × geomspace(0.1, 10, n_j); Gaussians have a
unit diagonal (our C is the paper's unit-trace C divided by n). Timing: medians of
``--repeats`` runs called in turn; a method whose first run exceeds ``--slow`` s runs once.

    python benches/papers/group_mkl.py [--quick] [--parts abcd] [--repeats 3] [--slow 10]
        [--max-iter 1000] [--Ms 30,100,300] [--splits 10] [--folds 3]
        [--out benches/papers/results/group_mkl.md]  (--quick: group_mkl_quick.md)
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
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
from reference import DATA_DIR, load_dataset  # noqa: E402

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
  Caltech-101): its layout and protocol on our multi-view data in part D; the image data sets
  and their descriptors are not available here.
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


# --- D. the paper's Figure 1 layout: accuracy against L1-MKL and L2-MKL ----------------------

D_GRID = (0.1, 1.0, 10.0, 100.0)
D_METHODS = ("MixNorm (group)", "L1-MKL (l1)", "L2-MKL (SVM on the sum)", "lp p=2")
PAPER_FIG1 = (
    "Figure 1 plots, per object category, the average gain (%) in test accuracy of "
    "MixNorm-MKL over L1-MKL (panels a, c, e) and over L2-MKL (b, d, f) on Caltech-5 (5 "
    "categories, 50 training and 50 test images per category, 10 splits), Oxford flowers (17 "
    "categories, 60 / 20 per category, 10 splits) and Caltech-101 (101 categories, 15 / 15, 3 "
    "splits); 5 (Caltech) or 7 (flowers) feature descriptors × 9 Gaussian widths, one-vs-one "
    'for the classes, hyper-parameters "tuned using suitable cross-validation procedures". '
    "L1-MKL is SimpleMKL's block-ℓ1 MKL; L2-MKL is \"an SVM built using the canonical "
    'combination of all kernels", the SVM on the unweighted sum (libsvm). Read off the axes: '
    "gains over L1-MKL of about 0–9 % on Caltech-5 and −4 to 12 % on flowers, over L2-MKL 0–4.5 "
    '% on both. The text: "for most object categories, the gains are positive and moreover '
    "quite high. The best results are seen in case of the Caltech-101 dataset: the peak and "
    "avg. gains over L1-MKL are 800%, 37.57% respectively and over L2-MKL are 600%, 21.75% "
    'respectively"; the L2-MKL accuracies averaged over the categories were 93.84 % '
    "(Caltech-5), 34.81 % (Caltech-101) and 85.97 % (flowers); the average share of zero kernel "
    'weights was 57 % (MixNorm), 96 % (L1) and 0 % (L2), and "L1-MKL almost always selected '
    "kernels from one or two components (feature descriptors) only whereas MixNorm-MKL (and "
    'ofcourse L2-MKL) selected kernels from all the components".'
)


@dataclass
class MultiView:
    """A multi-view data set: its stack on all points (9 Gaussian widths per view), labels,
    the group (view) of each kernel and the per-class sizes of a training and a test draw."""

    name: str
    G: NDArray[np.float64]
    y: NDArray[np.float64]
    groups: list[int]
    n_train: int  # per class
    n_test: int  # per class
    class_names: list[str]  # in the order of np.unique(y)


DIETS = ["coc", "fish", "lin", "ref", "sun"]
WDBC = ["malignant", "benign"]


def nutrimouse_diet() -> NDArray[np.float64]:
    """The second nutrimouse label (5 diets, 8 mice each), in the rows' order."""
    path = DATA_DIR / "nutrimouse_diet.csv"
    raw = np.loadtxt(path, dtype=str, skiprows=1)
    return np.searchsorted(np.unique(raw), raw).astype(np.float64)


def figure1_sets(quick: bool) -> list[MultiView]:
    from sklearn.datasets import load_breast_cancer, load_digits

    X, y = load_dataset("nutrimouse")
    G, groups = view_stack(X, [list(range(120)), list(range(120, 141))], 9)
    sets = [
        MultiView("nutrimouse genotype (gene, lipid)", G, y, groups, 12, 8, ["ppar", "wt"]),
        MultiView("nutrimouse diet (gene, lipid)", G, nutrimouse_diet(), groups, 5, 3, DIETS),
    ]
    if quick:
        return sets
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xb = (Xb - Xb.mean(axis=0)) / Xb.std(axis=0)
    # Columns 0–9 the means, 10–19 the standard errors, 20–29 the worst values of ten
    # measurements (radius, texture, perimeter, area, …) in the same order.
    G3, g3 = view_stack(Xb, [list(range(10 * k, 10 * k + 10)) for k in range(3)], 9)
    sets.append(
        MultiView("breast cancer (mean, se, worst)", G3, yb.astype(float), g3, 50, 50, WDBC)
    )
    del G3
    G10, g10 = view_stack(Xb, [[m, m + 10, m + 20] for m in range(10)], 9)
    sets.append(
        MultiView("breast cancer (10 measurements)", G10, yb.astype(float), g10, 50, 50, WDBC)
    )
    del G10
    Xd, yd = load_digits(return_X_y=True)
    quads = [
        [8 * r + c for r in range(4 * i, 4 * i + 4) for c in range(4 * j, 4 * j + 4)]
        for i in range(2)
        for j in range(2)
    ]
    Gd, gd = view_stack(Xd / 16.0, quads, 9)
    sets.append(
        MultiView(
            "digits (4 quadrants)", Gd, yd.astype(float), gd, 50, 50, [str(k) for k in range(10)]
        )
    )
    return sets


def draw(y: NDArray[np.float64], n_train: int, n_test: int, rng: np.random.Generator) -> Any:
    """A training and a test draw with ``n_train`` and ``n_test`` points of every class."""
    tr, te = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        tr.append(idx[:n_train])
        te.append(idx[n_train : n_train + n_test])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(te))


def d_model(method: str, C: float, groups: list[int]) -> Any:
    if method.startswith("L2-MKL"):
        from sklearn.svm import SVC

        return SVC(kernel="precomputed", C=C)
    kws: dict[str, dict[str, Any]] = {
        "MixNorm (group)": {"penalty": "group", "groups": groups},
        "L1-MKL (l1)": {"penalty": "l1"},
        "lp p=2": {"penalty": "lp", "p": 2.0},
    }
    kw = kws[method]
    return mk.MKLClassifier(
        kernels="precomputed", C=C, tol=1e-3, multi_class="ovo", n_threads=1, **kw
    )


def d_fit_predict(
    method: str, C: float, groups: list[int], G: NDArray[np.float64], tr: Any, te: Any,
    y: NDArray[np.float64],
) -> tuple[NDArray[np.float64], Any]:  # fmt: skip
    """Predictions on ``te`` of ``method`` fitted on ``tr`` (indices into ``G``'s points)."""
    model = d_model(method, C, groups)
    Gtr = G[:, tr][:, :, tr]
    Gte = G[:, te][:, :, tr]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.startswith("L2-MKL"):
            model.fit(Gtr.sum(axis=0), y[tr])
            return model.predict(Gte.sum(axis=0)), model
        model.fit(Gtr, y[tr])
        return model.predict(Gte), model


def choose_c(
    method: str, groups: list[int], G: NDArray[np.float64], tr: Any, y: NDArray[np.float64],
    folds: int, seed: int,
) -> float:  # fmt: skip
    """C of the grid with the best mean accuracy of a stratified ``folds``-fold CV on ``tr``
    (ties: the smaller C)."""
    from sklearn.model_selection import StratifiedKFold

    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    best, best_c = -1.0, D_GRID[0]
    for C in D_GRID:
        accs = []
        for a, b in skf.split(tr, y[tr]):
            pred, _ = d_fit_predict(method, C, groups, G, tr[a], tr[b], y)
            accs.append(float(np.mean(pred == y[tr[b]])))
        if np.mean(accs) > best + 1e-12:
            best, best_c = float(np.mean(accs)), C
    return best_c


def weight_stats(model: Any, groups: list[int]) -> tuple[float, float, int]:
    """Share (%) of zero kernel weights (≤ 1e-8 of the problem's largest), the mean number of
    views with a nonzero weight over the binary problems, and the unconverged problems."""
    if not hasattr(model, "kernel_weights_"):
        return 0.0, float(max(groups) + 1), 0
    W = np.atleast_2d(np.asarray(model.kernel_weights_, dtype=np.float64))
    nz = W > 1e-8 * W.max(axis=1, keepdims=True)
    g = np.asarray(groups)
    views = [len(set(g[row].tolist())) for row in nz]
    conv = np.atleast_1d(np.asarray(model.converged_))
    return 100.0 * (1.0 - nz.mean()), float(np.mean(views)), int(np.sum(~conv))


def part_d(splits: int, folds: int, quick: bool, png: str) -> dict[str, dict[str, Any]]:
    emit("\n## D. The paper's Figure 1 layout on our multi-view data: group against L1 and L2")
    emit(
        f"\nProtocol as the paper's where the data allow: 9 Gaussian widths per view (σ = the "
        "view's median pairwise distance × geomspace(0.1, 10, 9), on all points, labels "
        "unused; unit diagonal), a fixed number of training and test points per class drawn "
        f"at random, {splits} draws, one-vs-one for more than two classes; for each method C "
        f"∈ {{{', '.join(f'{c:g}' for c in D_GRID)}}} chosen by a stratified {folds}-fold "
        'cross-validation on the training points (the paper: "suitable cross-validation '
        'procedures"), then the test accuracy of the refit. MixNorm = `penalty="group"`, '
        'groups = views (mirror descent, our default step); L1-MKL = `penalty="l1"` '
        "(Σ_m ‖f_m‖, the same path of solutions as SimpleMKL's (Σ_m ‖f_m‖)² under a C "
        "chosen by CV); L2-MKL as the paper defines it: scikit-learn's `SVC` (libsvm) on the "
        'unweighted sum of the kernels; also `penalty="lp", p=2` (Kloft\'s ℓ2-norm MKL, '
        "non-sparse weights), which the paper does not run. tol 1e-3, hinge loss, one thread. "
        "Zero weights: share of kernel weights ≤ 1e-8 × the binary problem's largest, "
        "averaged over the problems and draws; views: mean number of views with a nonzero "
        "weight per binary problem. Gains (the paper's y axes): 100 × (acc_group − acc_other) "
        "/ acc_other, of the test accuracies averaged over the draws; per class, the accuracy "
        "on the test points of that class."
    )
    out: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for ds in figure1_sets(quick):
        classes = np.unique(ds.y)
        rng = np.random.default_rng(0)
        acc: dict[str, list[float]] = {m: [] for m in D_METHODS}
        per_class: dict[str, list[list[float]]] = {m: [] for m in D_METHODS}
        stats: dict[str, list[tuple[float, float, int]]] = {m: [] for m in D_METHODS}
        chosen: dict[str, list[float]] = {m: [] for m in D_METHODS}
        for s in range(splits):
            tr, te = draw(ds.y, ds.n_train, ds.n_test, rng)
            for m in D_METHODS:
                C = choose_c(m, ds.groups, ds.G, tr, ds.y, folds, s)
                pred, model = d_fit_predict(m, C, ds.groups, ds.G, tr, te, ds.y)
                yt = ds.y[te]
                acc[m].append(float(np.mean(pred == yt)))
                per_class[m].append([float(np.mean(pred[yt == c] == c)) for c in classes])
                stats[m].append(weight_stats(model, ds.groups))
                chosen[m].append(C)
        out[ds.name] = {
            "acc": acc, "per_class": per_class, "stats": stats, "C": chosen,
            "classes": classes, "names": ds.class_names, "M": ds.G.shape[0],
            "views": max(ds.groups) + 1, "n": (ds.n_train, ds.n_test),
        }  # fmt: skip
        print(f"  D: {ds.name} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    emit()
    emit(
        "| data | classes | M (views) | train / test per class | method | test accuracy "
        "(mean ± sd) | gain of group (%) | zero weights | views used | C chosen (median) |"
    )
    emit("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in out.items():
        a_g = float(np.mean(r["acc"][D_METHODS[0]]))
        for m in D_METHODS:
            a = np.asarray(r["acc"][m])
            zero = float(np.mean([st[0] for st in r["stats"][m]]))
            views = float(np.mean([st[1] for st in r["stats"][m]]))
            unconv = sum(st[2] for st in r["stats"][m])
            note = f" ({unconv} not conv.)" if unconv else ""
            gain = "—" if m == D_METHODS[0] else f"{100 * (a_g - a.mean()) / a.mean():+.2f}"
            emit(
                f"| {name} | {len(r['classes'])} | {r['M']} ({r['views']}) | "
                f"{r['n'][0]} / {r['n'][1]} | {m} | "
                f"{100 * a.mean():.1f} ± {100 * a.std(ddof=1):.1f} | {gain} | {zero:.0f} %{note} | "
                f"{views:.2f} of {r['views']} | {float(np.median(r['C'][m])):g} |"
            )
    emit(f"\n{splits} draws per data set; part D took {time.perf_counter() - t0:.0f} s.")
    emit(f"\n**The paper's Figure 1.** {PAPER_FIG1}")
    emit(f"\n![Figure 1 layout: gain of group MKL per class]({png})")
    return out


def figure1(res: dict[str, dict[str, Any]], path: Path) -> None:
    """The paper's Figure 1 layout: a row per data set, bars of the gain (%) of the group
    formulation per class over L1-MKL, L2-MKL (SVM on the sum) and lp p=2."""
    others = D_METHODS[1:]
    fig, axes = plt.subplots(
        len(res), len(others), figsize=(11, 2.1 * len(res)), squeeze=False, layout="constrained"
    )
    for row, (name, r) in enumerate(res.items()):
        g = np.mean(r["per_class"][D_METHODS[0]], axis=0)
        k = len(r["classes"])
        for col, m in enumerate(others):
            o = np.mean(r["per_class"][m], axis=0)
            gain = np.round(100.0 * (g - o) / np.where(o > 0, o, np.nan), 9)
            ax = axes[row][col]
            ax.bar(np.arange(1, k + 1), gain, color=np.where(gain >= 0, "C0", "C3"))
            ax.axhline(0.0, color="k", lw=0.6)
            top = max(0.5, 1.15 * float(np.nanmax(np.abs(gain))))
            ax.set_ylim(-top, top)
            ax.set_xticks(np.arange(1, k + 1), r["names"], fontsize=7)
            ax.tick_params(labelsize=7)
            if row == 0:
                ax.set_title(f"gain wrt. {m} (%)", fontsize=9)
            if col == 0:
                ax.set_ylabel(name.replace(" (", "\n("), fontsize=7)
            a_g = float(np.mean(r["acc"][D_METHODS[0]]))
            a_o = float(np.mean(r["acc"][m]))
            ax.set_xlabel(f"class (all classes: {100 * (a_g - a_o) / a_o:+.2f} %)", fontsize=7)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"wrote {path}", flush=True)


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


def splice_d(path: Path, section: list[str]) -> None:
    """Part D run on its own: its section replaces the page's old one (or goes before the
    hand-written analysis), the rest of the page is kept."""
    lines = path.read_text(encoding="utf-8").split("\n")
    lines = [FIG1_OLD_NEW.get(line, line) for line in lines]
    start = next((i for i, ln in enumerate(lines) if ln.startswith("## D.")), None)
    if start is not None:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        del lines[start:end]
    at = next((i for i, ln in enumerate(lines) if ln.startswith("## What agrees")), len(lines))
    lines[at:at] = [*section, ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {path}", flush=True)


#: The page's old Figure 1 bullet (its second line) and its replacement.
FIG1_OLD_NEW = {
    "  Caltech-101) is not reproduced: we do not have the image descriptors.": (
        "  Caltech-101): its layout and protocol on our multi-view data in part D; the image "
        "data sets\n  and their descriptors are not available here."
    ),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run (under a minute)")
    ap.add_argument("--parts", default="abcd")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--slow", type=float, default=10.0)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--Ms", default="30,100,300", help="part B's numbers of kernels")
    ap.add_argument("--splits", type=int, default=10, help="part D's train/test draws")
    ap.add_argument("--folds", type=int, default=3, help="part D's inner CV folds")
    ap.add_argument("--out", type=Path, default=None, help="the page (default results/...)")
    args = ap.parse_args()
    if args.out is None:
        args.out = RESULTS / ("group_mkl_quick.md" if args.quick else "group_mkl.md")
    if args.quick:
        args.repeats, args.splits = 1, 2
        n_a, njs, max_iter, n_b, Ms, Cs = 120, [3, 9], 300, 120, [30, 100], [1.0]
    else:
        n_a, njs, max_iter, n_b, Ms, Cs = 200, [3, 9, 27, 81], args.max_iter, 200, [
            int(m) for m in args.Ms.split(",")], [0.1, 1.0, 10.0]  # fmt: skip
    command = "python benches/papers/group_mkl.py" + (" --quick" if args.quick else "")
    extra = [a for a in sys.argv[1:] if a != "--quick"]
    if extra:
        command += " " + " ".join(extra)
    emit.header("Nath et al. (2009), group MKL by mirror descent: ours beside the paper", command)
    emit(PAPER)
    emit("## Ours")
    t0 = time.perf_counter()
    a = part_a(n_a, njs, max_iter)[0] if "a" in args.parts else None
    b = part_b(n_b, Ms, args.repeats, args.slow) if "b" in args.parts else None
    if "c" in args.parts:
        part_c(Cs, args.repeats, args.slow, max_iter, args.quick)
    d_start = len(emit.lines)
    if "d" in args.parts:
        png1 = args.out.with_name(args.out.stem + "_fig1.png")
        d = part_d(args.splits, args.folds, args.quick, png1.name)
        figure1(d, png1)
    section = emit.lines[d_start:]
    emit(f"\nTotal {time.perf_counter() - t0:.0f} s.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.parts == "d" and args.out.exists():
        section.insert(1, f"\nCommand: `{command}` ({datetime.date.today().isoformat()}).")
        splice_d(args.out, section)
        return
    png = args.out.with_suffix(".png")
    if a or b:
        figure(a, b, png)
        emit(f"\n![ours]({png.name})")
    emit.write(args.out)


if __name__ == "__main__":
    main()
