"""Probabilities for the hinge-type losses (``MKLClassifier(probability=True)``), as
scikit-learn's ``SVC(probability=True)`` computes them: Platt's sigmoid fitted to decision
values from an internal cross-validation, and pairwise coupling for one-vs-one.

- J. Platt, "Probabilistic outputs for support vector machines and comparisons to regularized
  likelihood methods" (1999), with the targets and the Newton method of H.-T. Lin, C.-J. Lin and
  R. C. Weng, "A note on Platt's probabilistic outputs for support vector machines" (2007):
  ``P(y = 1 | f) = 1 / (1 + exp(A f + B))``.
- T.-F. Wu, C.-J. Lin and R. C. Weng, "Probability estimates for multi-class classification by
  pairwise coupling" (2004), their second method (libsvm's).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


#: Platt's sums at one point ``(A, B)``: the objective, then ``h11, h22, h21, g1, g2``
#: (:func:`platt_sums`).
PlattSums = tuple[float, float, float, float, float, float]


def platt_targets(n_pos: float, n_neg: float) -> tuple[float, float]:
    """Platt's regularised targets of the positive and the negative points,
    ``(N₊ + 1)/(N₊ + 2)`` and ``1/(N₋ + 2)``."""
    return (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)


def platt_sums(
    f: FloatArray, y: FloatArray, a: float, b: float, n_pos: float, n_neg: float
) -> PlattSums:
    """The sums over the points ``f``, ``y`` (±1; ``n_pos`` and ``n_neg`` counted over all
    the points of the problem, for the targets) that Platt's Newton method reads at
    ``(a, b)``: the cross-entropy, the Hessian ``h11, h22, h21`` (without its ridge) and the
    gradient ``g1, g2``. Sums over parts of the points add up to the whole's."""
    t_pos, t_neg = platt_targets(n_pos, n_neg)
    t = np.where(y > 0, t_pos, t_neg)
    z = f * a + b
    # t·z + log(1 + e^{−z}), written stably for either sign of z.
    value = float(np.sum(np.where(z >= 0, t * z + np.log1p(np.exp(-z)),
                                  (t - 1.0) * z + np.log1p(np.exp(z)))))  # fmt: skip
    e = np.exp(-np.abs(z))
    # p = 1/(1 + e^{z}) and q = 1 − p, without overflow.
    p = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
    d2 = p * (1.0 - p)
    d1 = t - p
    return (
        value, float(np.sum(f * f * d2)), float(np.sum(d2)), float(np.sum(f * d2)),
        float(np.sum(f * d1)), float(np.sum(d1)),
    )  # fmt: skip


def platt_newton(
    n_pos: float, n_neg: float, sums: Callable[[float, float], PlattSums]
) -> tuple[float, float]:
    """``(A, B)`` minimising the cross-entropy of ``1/(1 + exp(A f + B))`` against Platt's
    regularised targets, by Newton's method with backtracking (Lin, Lin & Weng,
    Algorithm 1); ``sums(a, b)``: :func:`platt_sums` over all the points (in memory, or
    added up over the chunks of a Dask fit), one call per point tried."""
    a, b = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    at = sums(a, b)
    for _ in range(100):
        obj, h11, h22, h21, g1, g2 = at
        h11, h22 = h11 + 1e-12, h22 + 1e-12
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        det = h11 * h22 - h21 * h21
        da = -(h22 * g1 - h21 * g2) / det
        db = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * da + g2 * db
        step = 1.0
        while step >= 1e-10:
            trial = sums(a + step * da, b + step * db)
            if trial[0] < obj + 1e-4 * step * gd:
                a, b, at = a + step * da, b + step * db, trial
                break
            step /= 2.0
        else:
            break  # no decrease along Newton's direction: at the minimum to rounding
    return a, b


def platt_fit(f: FloatArray, y: FloatArray) -> tuple[float, float]:
    """Platt's ``(A, B)`` of the decision values ``f`` and the labels ``y`` (±1), in memory
    (:func:`platt_newton`)."""
    n_pos, n_neg = float((y > 0).sum()), float((y <= 0).sum())
    return platt_newton(n_pos, n_neg, lambda a, b: platt_sums(f, y, a, b, n_pos, n_neg))


def platt_proba(f: FloatArray, a: float, b: float) -> FloatArray:
    """``1/(1 + exp(a f + b))``, without overflow."""
    z = f * a + b
    e = np.exp(-np.abs(z))
    out: FloatArray = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
    return out


def pairwise_coupling(r: FloatArray) -> FloatArray:
    """Class probabilities from pairwise ones, ``r[:, i, j] ≈ P(i | i or j)`` (``r_ij + r_ji =
    1``): the minimiser of ``Σ_{i<j} (r_ji p_i − r_ij p_j)²`` over the simplex (Wu, Lin & Weng,
    method 2), from its optimality system ``[Q 1; 1ᵀ 0] [p; λ] = [0; 1]`` with
    ``Q_ii = Σ_{j≠i} r_ji²`` and ``Q_ij = −r_ji r_ij``."""
    n, k, _ = r.shape
    rt = np.swapaxes(r, 1, 2)
    Q = -rt * r
    idx = np.arange(k)
    Q[:, idx, idx] = (rt**2).sum(axis=2) - (rt[:, idx, idx] ** 2)
    A = np.zeros((n, k + 1, k + 1))
    A[:, :k, :k] = Q
    A[:, :k, k] = 1.0
    A[:, k, :k] = 1.0
    rhs = np.zeros((n, k + 1))
    rhs[:, k] = 1.0
    p = np.linalg.solve(A, rhs[..., None])[:, :k, 0]
    p = np.clip(p, 0.0, None)  # rounding: the exact minimiser is in the simplex
    out: FloatArray = p / p.sum(axis=1, keepdims=True)
    return out


def couple(P: FloatArray, pairs: NDArray[np.int64], n_classes: int) -> FloatArray:
    """Class probabilities from ``P[:, k]``, the probability of the pair ``k``'s first
    class against its second (``pairs``), by Wu, Lin & Weng's pairwise coupling."""
    r = np.zeros((P.shape[0], n_classes, n_classes))
    for k, (a, b) in enumerate(pairs):
        r[:, a, b], r[:, b, a] = P[:, k], 1.0 - P[:, k]
    return pairwise_coupling(r)


def out_of_fold(
    decision: Callable[[NDArray[np.intp], NDArray[np.intp]], FloatArray],
    y: FloatArray,
    n_splits: int,
    seed: int,
) -> FloatArray:
    """Every point's decision value from the model fitted without its fold (stratified
    ``n_splits`` folds shuffled by ``seed``); ``decision(train, test)`` fits on ``train`` and
    returns the values on ``test``."""
    from sklearn.model_selection import StratifiedKFold

    f = np.empty(len(y))
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    for tr, te in folds.split(np.zeros(len(y)), y):
        f[te] = decision(tr, te)
    return f
