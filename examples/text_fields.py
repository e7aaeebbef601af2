"""
Text fields as kernels: TF-IDF blocks of titles, bodies and tags
================================================================

MKL on sparse data: each text field of a document is one TF-IDF block, one linear kernel, and
an ℓ1 penalty learns how much each field counts, against one logistic regression and one
linear SVM on all fields side by side.

The documents are issue reports of a software project, written by this script (no download):
a bug report or a feature request (the label), each with four fields,

- a **title** of a few words, which names the kind of report half of the time;
- a **body** of 15 to 40 words, drawn mostly from a vocabulary both kinds share, with a word
  of its kind's vocabulary now and then;
- two or three **tags**, one of them telling the kind a third of the time;
- a **footer** (a greeting, a version, an operating system), which says nothing about the
  kind.

Each field becomes a TF-IDF block of scikit-learn's ``TfidfVectorizer`` (fitted on the training
part; every row of a block has norm 1), a ``scipy.sparse`` CSR matrix: the four blocks side by
side are the points ``X``, and ``FeatureBank([Linear(features=<field's columns>) ...])`` gives
each field its linear kernel, fitted as a sparse feature block by ``prox_newton`` at the cost of
its stored entries (docs/guide.md, "Sparse data"). With ``penalty="l1"`` the model is
``Σ_m ‖w_m‖``-penalised (the group lasso over the fields): a field whose block does not help
gets little weight, or none. The single models, scikit-learn's ``LogisticRegression``
(liblinear) and ``LinearSVC`` (squared hinge), read the same columns with one ``‖w‖²``
penalty for all. Each model's ``C`` is chosen from one grid by 3-fold cross-validation on the
training part (the models' ``C`` weigh different penalties, so each gets its own).

Printed: the size of each field's vocabulary, the held-out accuracy of the three models, the
MKL fit's certificate (its relative duality gap) and the share of each field in the combined
kernel ``Σ_m θ_m K_m``. The figure draws the shares and the accuracies.

    python examples/text_fields.py [--plot PATH]
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.svm import LinearSVC

import multikernel as mk
from multikernel.kernels import FeatureBank, Linear

#: The fields of a document, in the column order of ``X``.
FIELDS = ("title", "body", "tags", "footer")
N_DOCS = 1200
#: The grid of C for every model, and the folds that choose it.
CS = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
FOLDS = 3
TOL = 1e-6
#: A field counts as kept when its share of the combined kernel exceeds this.
KEEP = 1e-3

#: Words of each kind of report, and words both kinds use.
BUG = tuple(
    "crash crashes error exception fails failing broken segfault traceback regression wrong "
    "freeze hangs leak corrupt timeout panic stuck".split()
)
FEATURE = tuple(
    "add support option allow request proposal enhancement extend idea configurable wish "
    "improve suggestion customize ability integrate".split()
)
SHARED = tuple(
    "the a when with in on for file data user version window config export import plugin "
    "server client page button list table menu settings network memory disk query report api "
    "docs build test install update login search sort filter theme cache upload download "
    "editor project account after before using from large small new old default".split()
)
BUG_TAGS = ("crash", "regression", "needs-repro", "p1")
FEATURE_TAGS = ("enhancement", "proposal", "ux", "roadmap")
SHARED_TAGS = ("linux", "windows", "macos", "api", "docs", "performance", "ui", "cli", "network")
FOOTER = tuple(
    "thanks regards cheers best sent from my phone in advance v1 v2 v3 linux windows macos "
    "firefox chrome ubuntu debian".split()
)


@dataclass(frozen=True)
class Result:
    """The comparison: the fields' widths, held-out accuracies, and the MKL fit's weights."""

    widths: dict[str, int]
    nnz: int
    n_train: int
    n_test: int
    accuracy: dict[str, float]
    chosen_C: dict[str, float]
    #: The MKL fit's share of each field in the combined kernel (sums to one).
    shares: NDArray[np.float64]
    duality_gap: float
    converged: bool


def documents(n: int, seed: int = 0) -> tuple[dict[str, list[str]], NDArray[np.int64]]:
    """``n`` generated issue reports (module docs): their fields' texts and their labels
    (1 = bug report, 0 = feature request), 5 % of the labels flipped."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    fields: dict[str, list[str]] = {f: [] for f in FIELDS}

    def words(k: int, own: tuple[str, ...], p_own: float) -> list[str]:
        mine = rng.random(k) < p_own
        out: list[str] = np.where(mine, rng.choice(own, k), rng.choice(SHARED, k)).tolist()
        return out

    for label in y:
        own, own_tags = (BUG, BUG_TAGS) if label == 1 else (FEATURE, FEATURE_TAGS)
        title = words(int(rng.integers(3, 8)), own, 0.0)
        if rng.random() < 0.5:
            title[int(rng.integers(len(title)))] = str(rng.choice(own))
        fields["title"].append(" ".join(title))
        fields["body"].append(" ".join(words(int(rng.integers(15, 41)), own, 0.06)))
        tags = rng.choice(SHARED_TAGS, int(rng.integers(2, 4)), replace=False).tolist()
        if rng.random() < 1 / 3:
            tags[0] = str(rng.choice(own_tags))
        fields["tags"].append(" ".join(tags))
        fields["footer"].append(" ".join(rng.choice(FOOTER, int(rng.integers(2, 6))).tolist()))
    flip = rng.random(n) < 0.05
    return fields, np.where(flip, 1 - y, y).astype(np.int64)


def tfidf_blocks(
    fields: dict[str, list[str]], train: NDArray[np.intp], test: NDArray[np.intp]
) -> tuple[sp.csr_matrix, sp.csr_matrix, dict[str, int]]:
    """Each field's TF-IDF block (fitted on the training documents), the blocks side by side
    as CSR matrices of the training and the test documents, and each field's width."""
    train_blocks, test_blocks, widths = [], [], {}
    for name in FIELDS:
        # Tags keep their hyphens: one token per tag.
        pattern = r"\S+" if name == "tags" else r"(?u)\b\w+\b"
        vec = TfidfVectorizer(token_pattern=pattern)
        texts = np.asarray(fields[name], dtype=object)
        train_blocks.append(vec.fit_transform(texts[train]))
        test_blocks.append(vec.transform(texts[test]))
        widths[name] = len(vec.vocabulary_)
    return sp.hstack(train_blocks, "csr"), sp.hstack(test_blocks, "csr"), widths


def field_bank(widths: dict[str, int]) -> FeatureBank:
    """One linear kernel per field, on its columns of ``X``: the bank's blocks are the
    TF-IDF blocks (unscaled: each row of a block has norm 1 already)."""
    specs, start = [], 0
    for name in FIELDS:
        specs.append(Linear(features=list(range(start, start + widths[name]))))
        start += widths[name]
    return FeatureBank(specs, normalize="none")


def main(plot: str | None = None) -> Result:
    """Run the comparison, print it, optionally plot it, and return it.

    Parameters
    ----------
    plot : str or None
        Path of a PNG to draw the shares and the accuracies to.
    """
    fields, y = documents(N_DOCS)
    train, test = train_test_split(np.arange(N_DOCS), test_size=0.3, stratify=y, random_state=0)
    X_train, X_test, widths = tfidf_blocks(fields, train, test)
    y_train, y_test = y[train], y[test]
    print(
        f"{N_DOCS} generated issue reports ({y.mean():.0%} bug reports), {len(train)} to train "
        f"and {len(test)} to test; X is {X_train.shape[0]} × {X_train.shape[1]} CSR with "
        f"{X_train.nnz} stored entries (density {X_train.nnz / np.prod(X_train.shape):.3f})"
    )
    print("TF-IDF columns per field: " + ", ".join(f"{f} {w}" for f, w in widths.items()))
    models = {
        "MKL l1 over the fields": (
            mk.MKLClassifier(kernels=field_bank(widths), penalty="l1", loss="logistic", tol=TOL),
            "C",
        ),
        "logistic regression, all fields": (LogisticRegression(solver="liblinear"), "C"),
        "linear SVM, all fields": (LinearSVC(), "C"),
    }
    accuracy: dict[str, float] = {}
    chosen: dict[str, float] = {}
    fitted: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # every fit must be certified
        for name, (model, param) in models.items():
            search = GridSearchCV(model, {param: list(CS)}, cv=FOLDS).fit(X_train, y_train)
            accuracy[name] = float(search.score(X_test, y_test))
            chosen[name] = float(search.best_params_[param])
            fitted[name] = search.best_estimator_
    mkl = fitted["MKL l1 over the fields"]
    theta = np.asarray(mkl.kernel_weights_, dtype=np.float64)
    shares = theta / theta.sum()
    print(f"\n{'model':>32} {'test accuracy':>14} {'C':>6}")
    for name, acc in accuracy.items():
        print(f"{name:>32} {acc:14.3f} {chosen[name]:6g}")
    print(
        f"\nMKL fit ({mkl.solvers_[0]}, C={chosen['MKL l1 over the fields']:g}): relative "
        f"duality gap {mkl.duality_gap_:.1e} (tol {TOL:g}), converged {mkl.converged_}"
    )
    print("share of each field in the combined kernel Σ θ_m K_m:")
    for f, s in zip(FIELDS, shares, strict=True):
        print(f"  {f:>6} {s:.3f}" + ("" if s > KEEP else "  (dropped)"))
    result = Result(
        widths=widths,
        nnz=int(X_train.nnz),
        n_train=len(train),
        n_test=len(test),
        accuracy=accuracy,
        chosen_C=chosen,
        shares=shares,
        duality_gap=float(mkl.duality_gap_),
        converged=bool(mkl.converged_),
    )
    if plot:
        draw(result, plot)
        print(f"wrote {plot}")
    return result


def draw(r: Result, path: str | None = None) -> object:
    """The fields' shares of the MKL fit, and the three models' held-out accuracies.

    Saved to ``path`` as a PNG (and closed) when given; returns the figure.
    """
    import matplotlib.pyplot as plt

    fig, (ax, ax_acc) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1, 1]})
    pos = np.arange(len(FIELDS))
    ax.barh(pos, r.shares, color="tab:blue")
    ax.set_yticks(pos, [f"{f} ({r.widths[f]} words)" for f in FIELDS])
    ax.invert_yaxis()
    ax.set_xlabel("share of the combined kernel Σ θ_m K_m")
    ax.set_title(f"MKL, l1 over the fields (duality gap {r.duality_gap:.0e})")
    names = list(r.accuracy)
    ax_acc.barh(np.arange(len(names)), list(r.accuracy.values()), color="tab:gray")
    for k, acc in enumerate(r.accuracy.values()):
        ax_acc.text(acc, k, f" {acc:.3f}", va="center")
    ax_acc.set_yticks(np.arange(len(names)), names)
    ax_acc.invert_yaxis()
    ax_acc.set_xlim(0.5, 1.0)
    ax_acc.set_xlabel(f"held-out accuracy ({r.n_test} documents)")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return fig


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0] if __doc__ else None)
    ap.add_argument("--plot", help="write the shares and accuracies to this PNG")
    args = ap.parse_args()
    t0 = time.perf_counter()
    result = main(plot=args.plot)
    print(f"{time.perf_counter() - t0:.1f} s")
    if not args.plot:
        draw(result)  # left open: sphinx-gallery's scraper shows it
