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


def platt_fit(f: FloatArray, y: FloatArray) -> tuple[float, float]:
    """``(A, B)`` minimising the cross-entropy of ``1/(1 + exp(A f + B))`` against Platt's
    regularised targets ``(N₊ + 1)/(N₊ + 2)`` and ``1/(N₋ + 2)`` (``y`` in ±1), by Newton's
    method with backtracking (Lin, Lin & Weng, Algorithm 1)."""
    pos = y > 0
    n_pos, n_neg = float(pos.sum()), float((~pos).sum())
    t = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))

    def value(a: float, b: float) -> float:
        z = f * a + b
        # t·z + log(1 + e^{−z}), written stably for either sign of z.
        return float(np.sum(np.where(z >= 0, t * z + np.log1p(np.exp(-z)),
                                     (t - 1.0) * z + np.log1p(np.exp(z)))))  # fmt: skip

    obj = value(a, b)
    for _ in range(100):
        z = f * a + b
        e = np.exp(-np.abs(z))
        # p = 1/(1 + e^{z}) and q = 1 − p, without overflow.
        p = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
        q = 1.0 - p
        d2 = p * q
        h11 = float(np.sum(f * f * d2)) + 1e-12
        h22 = float(np.sum(d2)) + 1e-12
        h21 = float(np.sum(f * d2))
        d1 = t - p
        g1, g2 = float(np.sum(f * d1)), float(np.sum(d1))
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        det = h11 * h22 - h21 * h21
        da = -(h22 * g1 - h21 * g2) / det
        db = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * da + g2 * db
        step = 1.0
        while step >= 1e-10:
            new = value(a + step * da, b + step * db)
            if new < obj + 1e-4 * step * gd:
                a, b, obj = a + step * da, b + step * db, new
                break
            step /= 2.0
        else:
            break  # no decrease along Newton's direction: at the minimum to rounding
    return a, b


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
