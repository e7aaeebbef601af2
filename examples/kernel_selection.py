"""Kernel selection: one kernel per feature of the breast-cancer data
==================================================================

Which features' kernels of scikit-learn's breast-cancer data get weight under sparse (ℓ1)
and non-sparse (ℓp) MKL.

The 30 features (standardised with the statistics of the training part) each get one Gaussian
kernel of width 1 on that feature alone, and one more Gaussian of width ``sqrt(30)`` reads all
of them: 31 kernels. Four penalties learn a combination of them:

- ``l1`` (``Σ_m ‖f_m‖``, SpicyMKL): sparse, it keeps a few kernels;
- ``lp`` with ``p = 4/3`` and ``p = 2`` (Kloft et al.'s ℓp-norm MKL): every kernel gets some
  weight, the informative ones more;
- ``lp`` with ``p = inf``: an SVM on the unweighted sum of the kernels (every weight 1), the
  baseline.

For each of several stratified 70/30 splits, ``C`` is chosen per penalty by 3-fold
cross-validation on the training part (``GridSearchCV`` over ``CS``), and the held-out accuracy
of the refit is recorded. The ``C`` of the penalties are not comparable (``l1`` at ``C`` has the
solutions of ``lp, p=1`` at ``C·Σ_m‖f_m‖``), hence a grid for each. Printed: the mean accuracy
and the chosen ``C`` per penalty, the certificate (largest relative duality gap) of the refits,
and the kernels with the largest weights on the first split; ``l1``'s kernels kept on most
splits. ``--plot PATH`` draws the weights of the first split's models (as shares of the
combined kernel ``Σ_m θ_m K_m``) and the held-out accuracies to a PNG.

    python examples/kernel_selection.py [--quick] [--plot docs/kernel_selection.png]

``--quick`` (used by ``tests/python/test_examples.py``) runs 2 splits and 2 values of ``C``
instead of 10 and 4.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import multikernel as mk
from multikernel.kernels import Gaussian, Kernel

#: The compared penalties: name -> estimator parameters.
PENALTIES: dict[str, dict[str, Any]] = {
    "l1": {"penalty": "l1"},
    "lp, p=4/3": {"penalty": "lp", "p": 4 / 3},
    "lp, p=2": {"penalty": "lp", "p": 2.0},
    "lp, p=inf (sum kernel)": {"penalty": "lp", "p": math.inf},
}
CS = (0.1, 1.0, 10.0, 100.0)
QUICK_CS = (0.1, 1.0)
SPLITS = 10
QUICK_SPLITS = 2
TOL = 1e-3
#: A kernel counts as kept when its weight exceeds this share of the combined kernel.
KEEP = 1e-3


@dataclass(frozen=True)
class PenaltyResult:
    """One penalty over the splits."""

    name: str
    #: Held-out accuracy of every split.
    accuracy: NDArray[np.float64]
    #: The C chosen by the inner cross-validation on every split.
    C: NDArray[np.float64]
    #: Relative duality gap and convergence of every split's refit.
    duality_gap: NDArray[np.float64]
    converged: NDArray[np.bool_]
    #: ``kernel_weights_`` of every split's refit, shape (n_splits, M).
    kernel_weights: NDArray[np.float64]

    @property
    def shares(self) -> NDArray[np.float64]:
        """The weights as shares of the combined kernel (each row sums to one)."""
        out: NDArray[np.float64] = self.kernel_weights / self.kernel_weights.sum(
            axis=1, keepdims=True
        )
        return out


@dataclass(frozen=True)
class Result:
    """The comparison: kernels, their names and one entry per penalty."""

    specs: list[Kernel]
    names: list[str]
    n_train: int
    n_test: int
    tol: float
    penalties: dict[str, PenaltyResult]


def kernel_bank(feature_names: list[str]) -> tuple[list[Kernel], list[str]]:
    """One Gaussian per standardised feature (width 1) and one on all of them."""
    d = len(feature_names)
    specs: list[Kernel] = [Gaussian(sigma=1.0, features=[j]) for j in range(d)]
    specs.append(Gaussian(sigma=math.sqrt(d)))
    return specs, [*feature_names, "all features"]


def search(specs: list[Kernel], params: dict[str, Any], Cs: tuple[float, ...]) -> GridSearchCV:
    """Standardise, then MKL; C chosen by 3-fold cross-validation on the training part."""
    clf = mk.MKLClassifier(kernels=specs, tol=TOL, **params)
    pipe = Pipeline([("scale", StandardScaler()), ("mkl", clf)])
    return GridSearchCV(pipe, {"mkl__C": list(Cs)}, cv=3)


def main(plot: str | None = None, quick: bool = False) -> Result:
    """Run the comparison, print it, optionally plot it, and return it.

    Parameters
    ----------
    plot : str or None
        Path of a PNG to draw the first split's weights and the accuracies to.
    quick : bool, default False
        2 splits and 2 values of C instead of 10 and 4.
    """
    data = load_breast_cancer()
    X, y = data.data, data.target
    specs, names = kernel_bank(list(data.feature_names))
    n_splits = QUICK_SPLITS if quick else SPLITS
    Cs = QUICK_CS if quick else CS
    splitter = StratifiedShuffleSplit(n_splits=n_splits, test_size=0.3, random_state=0)
    splits = list(splitter.split(X, y))
    n_train, n_test = len(splits[0][0]), len(splits[0][1])
    print(
        f"breast cancer: {X.shape[0]} points, {X.shape[1]} features; {len(specs)} Gaussian "
        f"kernels; {n_splits} splits of {n_train} training and {n_test} test points; "
        f"C from {list(Cs)} by 3-fold CV"
    )
    penalties: dict[str, PenaltyResult] = {}
    for name, params in PENALTIES.items():
        acc, chosen, gaps, conv, weights = [], [], [], [], []
        for train, test in splits:
            with warnings.catch_warnings():
                # The inner CV's fits on the folds; the refits' certificates are reported.
                warnings.simplefilter("ignore", ConvergenceWarning)
                gs = search(specs, params, Cs).fit(X[train], y[train])
            clf = gs.best_estimator_.named_steps["mkl"]
            acc.append(gs.score(X[test], y[test]))
            chosen.append(gs.best_params_["mkl__C"])
            gaps.append(clf.duality_gap_)
            conv.append(clf.converged_)
            weights.append(clf.kernel_weights_)
        penalties[name] = PenaltyResult(
            name=name,
            accuracy=np.asarray(acc, dtype=np.float64),
            C=np.asarray(chosen, dtype=np.float64),
            duality_gap=np.asarray(gaps, dtype=np.float64),
            converged=np.asarray(conv, dtype=np.bool_),
            kernel_weights=np.asarray(weights, dtype=np.float64),
        )
    result = Result(specs, names, n_train, n_test, TOL, penalties)
    report(result)
    if plot:
        draw(result, plot)
        print(f"wrote {plot}")
    return result


def report(r: Result) -> None:
    """Print the comparison as a Markdown table and the kernels that matter."""
    print()
    print("| penalty | held-out accuracy (mean ± sd) | chosen C | kernels kept | largest gap |")
    print("|---|---|---|---|---|")
    for p in r.penalties.values():
        kept = (p.shares > KEEP).sum(axis=1)
        Cs = ", ".join(f"{c:g}" for c in sorted(set(p.C.tolist())))
        print(
            f"| {p.name} | {p.accuracy.mean():.3f} ± {p.accuracy.std():.3f} | {Cs} | "
            f"{kept.min()}–{kept.max()} of {len(r.specs)} | {p.duality_gap.max():.1e} |"
        )
    print()
    print("largest shares of the combined kernel on the first split:")
    for p in r.penalties.values():
        top = np.argsort(-p.shares[0])[:5]
        print(f"  {p.name}: " + "; ".join(f"{r.names[m]} {p.shares[0, m]:.2f}" for m in top))
    l1 = r.penalties["l1"].shares
    often = np.flatnonzero((l1 > KEEP).mean(axis=0) >= 0.5)
    print(f"l1 keeps on at least half of the splits: {', '.join(r.names[m] for m in often)}")


def draw(r: Result, path: str | None = None) -> Any:
    """Bar chart of the first split's shares per kernel and penalty; accuracies beside it.

    Saved to ``path`` as a PNG (and closed) when given; returns the figure.
    """
    import matplotlib.pyplot as plt

    fig, (ax, ax_acc) = plt.subplots(1, 2, figsize=(12, 8), gridspec_kw={"width_ratios": [3, 1]})
    M, P = len(r.names), len(r.penalties)
    height = 0.8 / P
    pos = np.arange(M)
    for k, p in enumerate(r.penalties.values()):
        ax.barh(pos + (k - (P - 1) / 2) * height, p.shares[0], height=height, label=p.name)
    ax.set_yticks(pos, r.names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("share of the combined kernel Σ θ_m K_m (first split)")
    ax.set_title("one Gaussian kernel per feature, plus one on all features")
    ax.legend(fontsize="small", loc="lower right")
    for k, p in enumerate(r.penalties.values()):
        ax_acc.plot(np.full(len(p.accuracy), k), p.accuracy, "o", alpha=0.6)
        ax_acc.plot([k - 0.25, k + 0.25], [p.accuracy.mean()] * 2, color="k")
    ax_acc.set_xticks(range(P), list(r.penalties), rotation=30, ha="right", fontsize=8)
    ax_acc.set_xlim(-0.6, P - 0.4)
    ax_acc.set_ylabel(f"held-out accuracy ({len(p.accuracy)} splits; bar: mean)")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return fig


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="2 splits, 2 values of C")
    ap.add_argument("--plot", help="write the weights and accuracies to this PNG")
    args = ap.parse_args()
    t0 = time.perf_counter()
    result = main(plot=args.plot, quick=args.quick)
    print(f"{time.perf_counter() - t0:.1f} s")
    if not args.plot:
        draw(result)  # left open: sphinx-gallery's scraper shows it
