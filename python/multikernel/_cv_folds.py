"""The folds of the CV estimators: the models of a fold's paths at one ``C`` as a scorer
reads them (:class:`AtC`); for what the path does not follow (the hinge-type and
ε-insensitive losses, one-vs-one and shared multiclass, ``class_weight``) a grid of
``penalty="l1"`` fits per fold on the fold's kernels, computed once, warm where the solver
takes a start (:func:`fold_grid_scores`); and the default grid's start, the smallest ``C``
at which a kernel enters (:func:`entry_C`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from ._auto import WARM_SOLVERS
from ._base import decision_labels, logistic_proba
from ._data import Blocks, Dense, Stack, TestStack
from ._multiclass import class_weights
from ._path import MKLPath
from .exceptions import InvalidParameterError

__all__ = [
    "AtC",
    "AtCClassifier",
    "AtCRegressor",
    "entry_C",
    "fold_grid_scores",
    "loss_gradient",
    "problem_entry_C",
]


class AtC(BaseEstimator):  # type: ignore[misc]
    """The models of one fold's paths at one C, as an estimator a scikit-learn scorer can
    call: ``paths`` holds one path (regression, two classes) or one per class (one-vs-rest)."""

    def __init__(
        self, paths: list[MKLPath], C: float, classes: NDArray[Any] | None, offset: float
    ) -> None:
        self.paths = paths
        self.C = C
        self.classes = classes
        self.offset = offset

    def decision_function(self, X: TestStack) -> NDArray[np.float64]:
        # X: the fold's held-out test stack, computed once for every path and C.
        f = np.column_stack([p._decision(X, self.C) for p in self.paths])
        out: NDArray[np.float64] = f[:, 0] + self.offset if f.shape[1] == 1 else f
        return out

    def predict(self, X: TestStack) -> NDArray[Any]:
        f = self.decision_function(X)
        if self.classes is None:
            return f
        return decision_labels(f, self.classes)


class AtCClassifier(ClassifierMixin, AtC):  # type: ignore[misc]
    """:class:`AtC` of a classifier's paths."""

    @property
    def classes_(self) -> NDArray[Any] | None:
        return self.classes

    def predict_proba(self, X: TestStack) -> NDArray[np.float64]:
        return logistic_proba(self.decision_function(X))


class AtCRegressor(RegressorMixin, AtC):  # type: ignore[misc]
    """:class:`AtC` of a regressor's path."""


def loss_gradient(
    loss: str, y: NDArray[np.float64], w: NDArray[np.float64], epsilon: float = 0.0
) -> NDArray[np.float64]:
    """``u_i = −w_i ∂ℓ(y_i, b)/∂b`` at the best constant fit ``f = b`` (the model of every
    ``C`` below the first kernel's entry): the closed forms of the losses of
    docs/mathematics.md §0.3, with ``y = ±1`` for the classification losses. For the hinge and
    the ε-insensitive loss, whose subgradient there is a set, the element that balances the
    classes (``Σ u_i = 0``, the intercept's optimality) or the signs of the residuals."""
    if loss == "squared":
        out: NDArray[np.float64] = w * (y - np.average(y, weights=w))
        return out
    if loss == "epsilon_insensitive":
        order = np.argsort(y)
        cum = np.cumsum(w[order])
        b = float(y[order][np.searchsorted(cum, cum[-1] / 2.0)])  # a weighted median
        r = y - b
        out = w * np.sign(r) * (np.abs(r) > epsilon)
        return out
    pos, neg = float(w[y > 0].sum()), float(w[y < 0].sum())
    total = pos + neg
    if loss == "logistic":  # b = log(W₊/W₋): σ(−y b) is the other class's share
        out = w * y * np.where(y > 0, neg, pos) / total
    elif loss == "squared_hinge":  # b = (W₊ − W₋)/W: 1 − y b = 2 W_other / W
        out = w * y * 2.0 * np.where(y > 0, neg, pos) / total
    elif loss == "hinge":  # b = ±1 towards the heavier class: the lighter one on the hinge
        light, heavy = min(pos, neg), max(pos, neg)
        share = np.where((y > 0) == (pos >= neg), light / heavy, 1.0)
        out = w * y * share
    else:
        raise InvalidParameterError(f"no entry point for loss={loss!r}", parameter="loss")
    return out


def entry_C(stack: Stack, u: NDArray[np.float64]) -> float:
    """The smallest ``C`` at which a kernel enters the ``penalty="l1"`` fit,
    ``1 / max_m sqrt(uᵀ K_m u)`` (the fit is the constant ``b`` below it: its optimality
    ``C ‖Σ_i u_i φ_m(x_i)‖ ≤ 1`` for every kernel), ``u`` from :func:`loss_gradient`; inf
    when ``u = 0`` (the constant fits every point)."""
    if isinstance(stack, Dense):
        G = stack.G
        forms = np.einsum("i,mij,j->m", u, G, u, dtype=np.float64)
    elif isinstance(stack, Blocks):
        forms = np.array([float(np.sum((F.T.astype(np.float64) @ u) ** 2)) for F in stack.F])
    else:  # kernels on demand: not an input of the CV estimators
        raise InvalidParameterError("no entry point for kernels on demand", parameter="kernels")
    top = float(np.max(forms))
    return 1.0 / math.sqrt(top) if top > 0 else math.inf


def problem_entry_C(
    stack: Stack,
    y: NDArray[Any],
    w: NDArray[np.float64] | None,
    loss: str,
    *,
    classifier: bool,
    class_weight: Any = None,
    epsilon: float = 0.0,
) -> float:
    """The smallest ``C`` at which a kernel enters the ``penalty="l1"`` fit of ``y`` on
    ``stack`` with sample weights ``w`` (and a classifier's ``class_weight``); for more than
    two classes, the smallest of the one-vs-rest problems'."""
    weights = np.ones(len(y)) if w is None else w
    if not classifier:
        t = np.asarray(y, dtype=np.float64)
        return entry_C(stack, loss_gradient(loss, t, weights, epsilon))
    classes, yi = np.unique(y, return_inverse=True)
    weighted = class_weights(class_weight, classes, yi, weights)
    weights = weights if weighted is None else weighted
    targets = classes[1:] if len(classes) == 2 else classes
    return min(
        entry_C(stack, loss_gradient(loss, np.where(y == c, 1.0, -1.0), weights)) for c in targets
    )


def _as_input(stack: Stack | TestStack) -> Any:
    """What an estimator with ``kernels="precomputed"`` reads for ``stack``: the array of a
    dense stack, the list of feature blocks or factor rows."""
    if isinstance(stack, Dense):
        return stack.G
    if isinstance(stack, Blocks):
        return stack.F
    raise InvalidParameterError(
        "the CV estimators fit stored kernels or feature blocks", parameter="kernels"
    )


def fold_grid_scores(
    estimator: BaseEstimator,
    train: Stack,
    test: TestStack,
    y_train: NDArray[Any],
    y_test: NDArray[Any],
    w_train: NDArray[np.float64] | None,
    w_test: NDArray[np.float64] | None,
    grid: NDArray[np.float64],
    scorer: Callable[..., float],
) -> NDArray[np.float64]:
    """The held-out score of one fold at every ``C`` of ``grid`` (ascending): ``estimator``
    (``kernels="precomputed"``, ``warm_start=False``) fitted on the fold's training kernels,
    computed once, at each ``C`` in turn, and scored on the fold's held-out cross kernels.
    The grid is followed warm (``warm_start=True`` after the first fit) when the solver the
    estimator chose takes a start (``prox_newton`` on narrow feature blocks); on a dense stack
    it chose the wrapper, which takes none and is faster cold than SpicyMKL warm (the solver
    ``warm_start=True`` would choose; docs/guide.md §10)."""
    Xtr, Xte = _as_input(train), _as_input(test)
    kw = {} if w_test is None else {"sample_weight": w_test}
    out = np.empty(len(grid))
    for i, C in enumerate(grid):
        estimator.set_params(C=float(C))
        # The fold's kernels were validated (or computed) once: not read again per C.
        estimator.fit(Xtr, y_train, sample_weight=w_train, check_input=False)
        if i == 0 and _solvers(estimator) <= set(WARM_SOLVERS):
            estimator.set_params(warm_start=True)
        out[i] = scorer(estimator, Xte, y_test, **kw)
    return out


def _solvers(estimator: BaseEstimator) -> set[str]:
    """The engine solvers a fit ran (``solvers_``: a tuple, or one per binary problem)."""
    ran = getattr(estimator, "solvers_", ())
    if isinstance(ran, list):
        return {name for problem in ran for name in problem}
    return set(ran)
