"""Independent reference implementations used by the test-suite.

Everything here follows the single convention of ``docs/mathematics.md`` (§0–§1) and is written
without using the ``multikernel`` package, so that the package's solvers can be checked against
it:

* :func:`primal_objective` recomputes ``P = C Σ_i ℓ(y_i, f(x_i)) + Ω(‖f_1‖, …, ‖f_M‖)`` from a
  coefficient matrix ``A`` (``dual_coef_``) and an intercept ``b``;
* :func:`cvxpy_mkl` solves the same primal problem with cvxpy and the Clarabel interior-point
  solver;
* :func:`dual_objective_lp_hinge`, :func:`dual_objective_lp`, :func:`dual_objective_group_hinge`
  and :func:`dual_objective_l1` evaluate the duals of §1, so that reported certificates
  ``D ≤ P`` can be checked;
* :func:`svc_sum_kernel_objective` gives the ``lp``, ``p = ∞`` optimum through scikit-learn's SVC.

Gram matrices are stacked as ``G`` with shape ``(M, n, n)`` and coefficients as ``A`` with shape
``(M, n)``; the model is ``f = Σ_m G[m] @ A[m] + b``.
"""

from __future__ import annotations

import csv
import importlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CERTIFIED_GAP",
    "DATA_DIR",
    "ringnorm",
    "LOSSES",
    "PENALTIES",
    "RefSolution",
    "block_norms",
    "cvxpy_hinge_dual",
    "cvxpy_mkl",
    "cvxpy_shared_mkl",
    "decision_values",
    "dual_objective_group_hinge",
    "dual_objective_l1",
    "dual_objective_lp",
    "dual_objective_lp_hinge",
    "dual_value",
    "kloft_coefficients",
    "load_dataset",
    "loss_conjugate",
    "loss_value",
    "lp_exponent",
    "penalty_value",
    "primal_objective",
    "project_dual_l1",
    "svc_sum_kernel_objective",
]

FloatArray = NDArray[np.float64]

# cvxpy ships a py.typed marker but its atoms (cp.sum, cp.norm, …) are re-exported in a way mypy
# cannot see, and scikit-learn has no type information; both are used through ``Any`` so that
# ``mypy --strict`` is clean with or without the project's mypy configuration.
cp: Any = importlib.import_module("cvxpy")

#: ``<repo>/tests/data``: the four UCI sets the tests read, with their sources and licences in
#: its README (computed from this file, ``<repo>/tests/python/reference.py``).
DATA_DIR: Path = Path(__file__).resolve().parents[1] / "data"

LOSSES: tuple[str, ...] = (
    "hinge",
    "squared_hinge",
    "logistic",
    "squared",
    "epsilon_insensitive",
)
PENALTIES: tuple[str, ...] = ("l1", "elasticnet", "lp", "group")

#: The relative duality gap ``(P − D) / max(1, |P|)`` to which :func:`cvxpy_mkl` certifies a
#: solution Clarabel reported only as "almost solved": the tests compare with the optimum to
#: 1e-4 and check ``P ≥ optimum (1 − 1e-6)``, which this keeps true.
CERTIFIED_GAP = 1e-7

#: Clarabel settings tried in turn until one reports ``optimal``: the tightest tolerances first
#: (at 1e-10 the primal residual sometimes stalls and Clarabel stops with "almost solved" or a
#: numerical error), each with cvxpy's quadratic objective and then with the pure conic form
#: (``use_quad_obj=False``), which fail on different problems.
_CLARABEL_LADDER: tuple[dict[str, Any], ...] = tuple(
    {
        "tol_gap_abs": tol,
        "tol_gap_rel": tol,
        "tol_feas": tol,
        "max_iter": 500,
        "use_quad_obj": quad,
    }
    for tol in (1e-10, 1e-9, 1e-8, 1e-7)
    for quad in (True, False)
)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def _encode_labels(raw: Sequence[str]) -> FloatArray:
    """Map raw label strings to floats.

    Parameters
    ----------
    raw : sequence of str
        Label column as read from the CSV file.

    Returns
    -------
    numpy.ndarray
        Two classes: the smaller (numerically if all labels are numbers, else lexicographically)
        becomes ``-1`` and the larger ``+1``. More than two numeric values: the values themselves
        (regression). More than two non-numeric classes: class indices ``0, …, k-1`` in sorted
        order.
    """
    try:
        numeric = np.array([float(v) for v in raw], dtype=np.float64)
    except ValueError:
        numeric = None
    if numeric is not None:
        classes_num = np.unique(numeric)
        if classes_num.size == 2:
            return np.where(numeric == classes_num[1], 1.0, -1.0)
        return numeric
    classes = sorted(set(raw))
    if len(classes) == 2:
        return np.array([1.0 if v == classes[1] else -1.0 for v in raw], dtype=np.float64)
    index = {c: float(k) for k, c in enumerate(classes)}
    return np.array([index[v] for v in raw], dtype=np.float64)


def _stratified_subset(y: FloatArray, n: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Draw a random subset of size ``n`` with class proportions close to those of ``y``.

    Parameters
    ----------
    y : numpy.ndarray
        Labels of the full data set.
    n : int
        Subset size, ``1 ≤ n ≤ len(y)``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Sorted indices of the subset.
    """
    classes, counts = np.unique(y, return_counts=True)
    if classes.size > 20:  # regression targets: plain random subset
        return np.sort(rng.choice(y.size, size=n, replace=False))
    quota = np.floor(n * counts / y.size).astype(np.intp)
    quota = np.maximum(np.minimum(quota, counts), 0)
    # hand the remaining places to the classes with the largest fractional parts
    order = np.argsort(-(n * counts / y.size - quota), kind="stable")
    k = 0
    while quota.sum() < n:
        c = order[k % classes.size]
        if quota[c] < counts[c]:
            quota[c] += 1
        k += 1
    chosen = [
        rng.choice(np.flatnonzero(y == c), size=int(q), replace=False)
        for c, q in zip(classes, quota, strict=True)
    ]
    return np.sort(np.concatenate(chosen))


def load_dataset(name: str, n: int | None = None, seed: int = 0) -> tuple[FloatArray, FloatArray]:
    """Load one of the CSV data sets of ``tests/data``.

    Parameters
    ----------
    name : str
        File stem in ``tests/data`` (``"pima"``, ``"ionosphere"``, ``"sonar"``,
        ``"liver_bupa"``), or ``"ringnorm"``, generated by :func:`ringnorm`.
    n : int, optional
        If given, a random subset of ``n`` rows with (approximately) the class proportions of
        the full set, drawn with ``numpy.random.default_rng(seed)``; rows keep their file order.
    seed : int, default 0
        Seed of the subset draw.

    Returns
    -------
    X : numpy.ndarray of shape (n, d)
        Features, standardised on the returned rows (zero mean, unit variance; constant columns
        are all zero).
    y : numpy.ndarray of shape (n,)
        Labels; ``±1`` for binary sets (the larger class name in sorted order is ``+1``:
        pima ``pos``, ionosphere ``good``, sonar ``R``, liver ``2``).

    Raises
    ------
    FileNotFoundError
        If the CSV file does not exist.
    ValueError
        If ``n`` is out of range.
    """
    if name == "ringnorm":
        X, y = ringnorm()
    else:
        path = DATA_DIR / f"{name}.csv"
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            rows = [row for row in reader if row]
        if header[-1] != "label":
            raise ValueError(f"{path}: last column is {header[-1]!r}, expected 'label'")
        X = np.array([[float(v) for v in row[:-1]] for row in rows], dtype=np.float64)
        X = X.reshape(len(rows), len(header) - 1)
        y = _encode_labels([row[-1] for row in rows])
    if n is not None:
        if not 1 <= n <= y.size:
            raise ValueError(f"n must be in [1, {y.size}], got {n}")
        idx = _stratified_subset(y, n, np.random.default_rng(seed))
        X, y = X[idx], y[idx]
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    Xs = X - mean
    nonconst = std > 1e-12 * np.maximum(1.0, np.abs(mean))
    Xs[:, nonconst] /= std[nonconst]
    Xs[:, ~nonconst] = 0.0
    return np.ascontiguousarray(Xs), y


def ringnorm(n: int = 7400, d: int = 20, seed: int = 0) -> tuple[FloatArray, FloatArray]:
    """Breiman's ringnorm, the synthetic set of SpicyMKL's scaling experiments, from its formula.

    Class ``-1`` is ``N(0, 4 I)``, class ``+1`` is ``N(a·1, I)`` with ``a = 2 / √d``; each point's
    class is a fair coin (Breiman, "Bias, variance and arcing classifiers", 1996).

    Returns
    -------
    X : numpy.ndarray of shape (n, d)
        Raw features (:func:`load_dataset` standardises them).
    y : numpy.ndarray of shape (n,)
        Labels ``±1``.
    """
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    z = rng.standard_normal((n, d))
    X = np.where(y[:, None] > 0, z + 2.0 / np.sqrt(d), 2.0 * z)
    return X, y


# --------------------------------------------------------------------------------------------
# losses, penalties, primal
# --------------------------------------------------------------------------------------------


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {LOSSES}")


def loss_value(loss: str, y: ArrayLike, z: ArrayLike, epsilon: float = 0.1) -> FloatArray:
    """Elementwise loss ``ℓ(y_i, z_i)`` of docs/mathematics.md §0.

    Parameters
    ----------
    loss : {"hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive"}
        Loss name.
    y : array_like of shape (n,)
        Targets (``±1`` for the classification losses).
    z : array_like of shape (n,)
        Decision values ``f(x_i)``.
    epsilon : float, default 0.1
        Tube width of ``epsilon_insensitive``.

    Returns
    -------
    numpy.ndarray of shape (n,)
        The losses (sum them for the data term). ``logistic`` is evaluated stably as
        ``logaddexp(0, -y z)``.
    """
    _check_loss(loss)
    yy = np.asarray(y, dtype=np.float64)
    zz = np.asarray(z, dtype=np.float64)
    out: FloatArray
    if loss == "hinge":
        out = np.maximum(0.0, 1.0 - yy * zz)
    elif loss == "squared_hinge":
        out = 0.5 * np.maximum(0.0, 1.0 - yy * zz) ** 2
    elif loss == "logistic":
        out = np.logaddexp(0.0, -yy * zz)
    elif loss == "squared":
        out = 0.5 * (yy - zz) ** 2
    else:
        out = np.maximum(0.0, np.abs(yy - zz) - epsilon)
    return out


def _conjugate_bounds(loss: str, y: FloatArray, epsilon: float) -> tuple[FloatArray, FloatArray]:
    """Box ``[lo, hi]`` of ``u`` on which ``ℓ*(y_i, u_i)`` is finite (±inf if unbounded)."""
    del epsilon
    inf = np.full_like(y, np.inf)
    if loss in ("hinge", "logistic"):  # -1 <= y u <= 0
        return np.where(y > 0, -1.0 / y, 0.0), np.where(y > 0, 0.0, -1.0 / y)
    if loss == "squared_hinge":  # y u <= 0
        return np.where(y > 0, -inf, 0.0), np.where(y > 0, 0.0, inf)
    if loss == "squared":
        return -inf, inf
    return -np.ones_like(y), np.ones_like(y)  # epsilon_insensitive: |u| <= 1


def loss_conjugate(
    loss: str, y: ArrayLike, u: ArrayLike, epsilon: float = 0.1, tol: float = 1e-9
) -> FloatArray:
    """Elementwise convex conjugate ``ℓ*(y_i, u_i) = sup_z (u_i z − ℓ(y_i, z))`` (§0 table).

    Parameters
    ----------
    loss : str
        Loss name, see :func:`loss_value`.
    y : array_like of shape (n,)
        Targets; the classification losses assume ``y_i ∈ {−1, +1}``.
    u : array_like of shape (n,)
        Dual arguments.
    epsilon : float, default 0.1
        Tube width of ``epsilon_insensitive``.
    tol : float, default 1e-9
        Points outside the domain by at most ``tol`` are clipped onto it (rounding); further
        outside, the value is ``+inf``.

    Returns
    -------
    numpy.ndarray of shape (n,)
        Conjugate values (``+inf`` outside the domain).
    """
    _check_loss(loss)
    yy = np.asarray(y, dtype=np.float64)
    uu = np.asarray(u, dtype=np.float64)
    lo, hi = _conjugate_bounds(loss, yy, epsilon)
    outside = (uu < lo - tol) | (uu > hi + tol)
    uc = np.clip(uu, lo, hi)
    val: FloatArray
    if loss == "hinge":
        val = yy * uc
    elif loss == "squared_hinge":
        s = -yy * uc
        val = -s + 0.5 * s**2
    elif loss == "logistic":
        s = np.clip(-yy * uc, 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(s > 0, s * np.log(np.where(s > 0, s, 1.0)), 0.0)
            b = np.where(s < 1, (1 - s) * np.log(np.where(s < 1, 1 - s, 1.0)), 0.0)
        val = a + b
    elif loss == "squared":
        val = 0.5 * uc**2 + yy * uc
    else:
        val = yy * uc + epsilon * np.abs(uc)
    return np.where(outside, np.inf, val)


def lp_exponent(p: float) -> float:
    """Block exponent ``q = 2p/(p+1)`` of the ``lp`` penalty (``q = 2`` for ``p = ∞``).

    Parameters
    ----------
    p : float
        Norm parameter, ``p ≥ 1`` (``numpy.inf`` allowed).

    Returns
    -------
    float
        ``q ∈ [1, 2]``.
    """
    if not p >= 1.0:
        raise ValueError(f"lp penalty needs p >= 1, got {p}")
    return 2.0 if np.isinf(p) else 2.0 * p / (p + 1.0)


def _groups_index(groups: ArrayLike | None, M: int) -> list[NDArray[np.intp]]:
    """Member lists of each group (one group of all kernels if ``groups`` is None)."""
    if groups is None:
        return [np.arange(M)]
    g = np.asarray(groups)
    if g.shape != (M,):
        raise ValueError(f"groups must have shape ({M},), got {g.shape}")
    return [np.flatnonzero(g == label) for label in np.unique(g)]


def penalty_value(
    s: ArrayLike,
    penalty: str,
    *,
    p: float | None = None,
    l1_ratio: float | None = None,
    groups: ArrayLike | None = None,
) -> float:
    """Penalty ``Ω(s)`` of §0 on the block norms ``s_m = ‖f_m‖``.

    Parameters
    ----------
    s : array_like of shape (M,)
        Non-negative block norms.
    penalty : {"l1", "elasticnet", "lp", "group"}
        Penalty name.
    p : float, optional
        Required for ``lp``.
    l1_ratio : float, optional
        Required for ``elasticnet`` (``r`` in ``r Σ s + (1−r)/2 Σ s²``).
    groups : array_like of shape (M,), optional
        Group label of every kernel for ``group`` (default: a single group).

    Returns
    -------
    float
        ``Ω(s)``.
    """
    ss = np.asarray(s, dtype=np.float64)
    if penalty == "l1":
        return float(ss.sum())
    if penalty == "elasticnet":
        if l1_ratio is None or not 0.0 <= l1_ratio <= 1.0:
            raise ValueError("elasticnet needs l1_ratio in [0, 1]")
        return float(l1_ratio * ss.sum() + 0.5 * (1.0 - l1_ratio) * np.sum(ss**2))
    if penalty == "lp":
        if p is None:
            raise ValueError("lp penalty needs p")
        q = lp_exponent(p)
        if q == 2.0:
            return float(0.5 * np.sum(ss**2))
        if ss.max(initial=0.0) == 0.0:
            return 0.0
        scale = float(ss.max())  # scale for stability of the power sums
        return float(0.5 * scale**2 * np.sum((ss / scale) ** q) ** (2.0 / q))
    if penalty == "group":
        sums = [ss[idx].sum() for idx in _groups_index(groups, ss.size)]
        return float(0.5 * max(sums) ** 2)
    raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")


def decision_values(G: ArrayLike, A: ArrayLike, b: float = 0.0) -> FloatArray:
    """Training decision values ``f(x_i) = Σ_m (K_m A[m])_i + b``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    A : array_like of shape (M, n)
        Per-kernel coefficients.
    b : float, default 0.0
        Intercept.

    Returns
    -------
    numpy.ndarray of shape (n,)
        Decision values.
    """
    GG = np.asarray(G, dtype=np.float64)
    AA = np.asarray(A, dtype=np.float64)
    out: FloatArray = np.einsum("mij,mj->i", GG, AA) + b
    return out


def block_norms(G: ArrayLike, A: ArrayLike) -> FloatArray:
    """RKHS norms ``‖f_m‖ = sqrt(A[m]ᵀ K_m A[m])`` (tiny negative quadratic forms clipped to 0).

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    A : array_like of shape (M, n)
        Per-kernel coefficients.

    Returns
    -------
    numpy.ndarray of shape (M,)
        Block norms.
    """
    GG = np.asarray(G, dtype=np.float64)
    AA = np.asarray(A, dtype=np.float64)
    quad = np.einsum("mi,mij,mj->m", AA, GG, AA)
    out: FloatArray = np.sqrt(np.maximum(quad, 0.0))
    return out


def primal_objective(
    G: ArrayLike,
    A: ArrayLike,
    b: float,
    y: ArrayLike,
    *,
    C: float,
    loss: str,
    penalty: str,
    p: float | None = None,
    l1_ratio: float | None = None,
    epsilon: float = 0.1,
    groups: ArrayLike | None = None,
) -> float:
    """Primal objective ``P = C Σ_i ℓ(y_i, f(x_i)) + Ω(‖f_1‖, …, ‖f_M‖)`` of §0.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices ``K_m``.
    A : array_like of shape (M, n)
        Per-kernel coefficients (``dual_coef_``).
    b : float
        Intercept.
    y : array_like of shape (n,)
        Targets.
    C : float
        Loss weight.
    loss : str
        Loss name, see :func:`loss_value`.
    penalty : str
        Penalty name, see :func:`penalty_value`.
    p : float, optional
        ``lp`` parameter.
    l1_ratio : float, optional
        ``elasticnet`` parameter.
    epsilon : float, default 0.1
        ``epsilon_insensitive`` tube width.
    groups : array_like of shape (M,), optional
        Kernel groups for ``group``.

    Returns
    -------
    float
        The primal objective.
    """
    z = decision_values(G, A, b)
    data = C * float(np.sum(loss_value(loss, y, z, epsilon)))
    omega = penalty_value(block_norms(G, A), penalty, p=p, l1_ratio=l1_ratio, groups=groups)
    return data + omega


# --------------------------------------------------------------------------------------------
# cvxpy reference solver
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefSolution:
    """Solution of :func:`cvxpy_mkl`.

    Attributes
    ----------
    objective : float
        Optimal primal value reported by cvxpy.
    A : numpy.ndarray of shape (M, n)
        Least-norm per-kernel coefficients, ``A[m] = U Λ^{-1/2} u_m``.
    b : float
        Intercept (0 when fitted without one).
    norms : numpy.ndarray of shape (M,)
        Block norms ``‖u_m‖₂ = ‖f_m‖``.
    """

    objective: float
    A: FloatArray
    b: float
    norms: FloatArray


def _factor(K: FloatArray, rel_tol: float = 1e-10) -> tuple[FloatArray, FloatArray]:
    """Factor ``K = L Lᵀ`` with ``L = U sqrt(Λ)`` over eigenvalues ``> rel_tol · max``.

    Returns
    -------
    L : numpy.ndarray of shape (n, r)
        The factor.
    back : numpy.ndarray of shape (n, r)
        ``U Λ^{-1/2}``, mapping ``u`` to the least-norm coefficients ``a`` with ``K a = L u``.
    """
    Ks = 0.5 * (K + K.T)
    lam, U = np.linalg.eigh(Ks)
    top = float(lam.max(initial=0.0))
    keep = lam > rel_tol * top if top > 0 else np.zeros(lam.shape, dtype=bool)
    lam, U = lam[keep], U[:, keep]
    return U * np.sqrt(lam), U / np.sqrt(lam)


def _cvx_loss(loss: str, y: FloatArray, z: Any, epsilon: float, w: FloatArray) -> Any:
    """The sum of the losses weighted by ``w``, as a DCP cvxpy expression."""
    _check_loss(loss)
    if loss == "hinge":
        return w @ cp.pos(1 - cp.multiply(y, z))
    if loss == "squared_hinge":
        return w @ cp.square(cp.pos(1 - cp.multiply(y, z))) / 2
    if loss == "logistic":
        return w @ cp.logistic(-cp.multiply(y, z))
    if loss == "squared":
        return w @ cp.square(y - z) / 2
    return w @ cp.pos(cp.abs(y - z) - epsilon)


def _solve(prob: cp.Problem, *, inaccurate: bool = False) -> bool:
    """Solve with Clarabel at tight tolerances, down the ladder until one reports optimal.

    Returns whether a setting reported ``optimal``. With ``inaccurate`` an ``optimal_inaccurate``
    solution (Clarabel's "almost solved") is kept, from the tightest setting that gave one, for
    the caller to certify; any other outcome raises.
    """
    kept: dict[str, Any] | None = None
    for opts in _CLARABEL_LADDER:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "solution may be inaccurate"
            try:
                prob.solve(solver=cp.CLARABEL, **opts)
            except cp.error.SolverError:  # numerical failure at this tolerance: relax it
                continue
        if prob.status == cp.OPTIMAL:
            return True
        if kept is None and prob.status == cp.OPTIMAL_INACCURATE:
            kept = opts
    if inaccurate and kept is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=cp.CLARABEL, **kept)
        if prob.status == cp.OPTIMAL_INACCURATE:
            return False
    raise RuntimeError(f"cvxpy/Clarabel failed: status {prob.status}")


def cvxpy_mkl(
    G: ArrayLike,
    y: ArrayLike,
    *,
    C: float,
    loss: str,
    penalty: str,
    p: float | None = None,
    l1_ratio: float | None = None,
    epsilon: float = 0.1,
    intercept: bool = True,
    groups: ArrayLike | None = None,
    nu: float | None = None,
    sample_weight: ArrayLike | None = None,
) -> RefSolution:
    """Solve the MKL primal of §0 with cvxpy and Clarabel.

    Each ``K_m = L_m L_mᵀ`` (eigendecomposition, eigenvalues ``≤ 1e-10 · max`` dropped) and the
    variables are ``u_m = L_mᵀ a_m``, so ``f_m(x_i) = (L_m u_m)_i`` and ``‖f_m‖ = ‖u_m‖₂``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Targets.
    C : float
        Loss weight.
    loss : str
        Loss name, see :func:`loss_value`.
    penalty : {"l1", "elasticnet", "lp", "group"}
        Penalty name.
    p : float, optional
        ``lp`` parameter (``p ≥ 1``, ``numpy.inf`` allowed).
    l1_ratio : float, optional
        ``elasticnet`` parameter.
    epsilon : float, default 0.1
        ``epsilon_insensitive`` tube width.
    intercept : bool, default True
        Fit an unpenalised intercept ``b``.
    groups : array_like of shape (M,), optional
        Kernel groups for ``group`` (default: one group).
    nu : float, optional
        ``ν`` of ``loss="one_class"``: the primal is then
        ``Ω + Σ_i max(0, ρ − f(x_i)) − νnρ`` with ``ρ = −b`` (``C`` and ``y`` unused).
    sample_weight : array_like of shape (n,), optional
        A weight per sample on its loss: the data term ``C Σ_i w_i ℓ(y_i, f(x_i))``.

    Returns
    -------
    RefSolution
        Optimal value, coefficients, intercept and block norms.

    Raises
    ------
    RuntimeError
        If Clarabel reports no optimal solution and the second formulation's "almost solved"
        one is not certified to the relative gap :data:`CERTIFIED_GAP` (or the loss is
        ``one_class``, which has no second formulation).

    Notes
    -----
    The optimum must not depend on one solver's luck on one CPU: when no Clarabel setting
    reports ``optimal`` (seen with ``lp``, ``p = 4/3``, on some machines), the problem is solved
    again with the decision values as variables. Its solution is accepted, with the primal value
    of its coefficients as ``objective``, when the dual value of its multipliers
    (:func:`dual_value`) certifies it: ``(P − D) / max(1, |P|) ≤`` :data:`CERTIFIED_GAP`.
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    M, n, _ = GG.shape
    factors = [_factor(GG[m]) for m in range(M)]
    ranks = [L.shape[1] for L, _ in factors]
    offsets = np.concatenate([[0], np.cumsum(ranks)]).astype(int)
    Lall = np.hstack([L for L, _ in factors]) if sum(ranks) else np.zeros((n, 0))
    c = C * (np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64))

    def solve(explicit: bool) -> tuple[RefSolution, bool, FloatArray | None]:
        """The problem solved, with ``explicit`` decision values ``z = L u + b`` as variables:
        their constraint's multipliers are then the dual point ``ρ`` of §1."""
        u = cp.Variable(int(offsets[-1]))
        b = cp.Variable() if intercept else None
        fitted = Lall @ u + (b if b is not None else 0.0)
        z = cp.Variable(n) if explicit else fitted
        blocks = [u[int(offsets[m]) : int(offsets[m + 1])] for m in range(M)]
        t = cp.Variable(M, nonneg=True)
        cons: list[Any] = [cp.norm(blocks[m], 2) <= t[m] for m in range(M) if ranks[m]]
        cons += [t[m] == 0 for m in range(M) if not ranks[m]]
        link = z == fitted if explicit else None
        if link is not None:
            cons.append(link)

        omega: Any
        if penalty == "l1":
            omega = cp.sum(t)
        elif penalty == "elasticnet":
            if l1_ratio is None or not 0.0 <= l1_ratio <= 1.0:
                raise ValueError("elasticnet needs l1_ratio in [0, 1]")
            omega = l1_ratio * cp.sum(t) + (1 - l1_ratio) / 2 * cp.sum_squares(t)
        elif penalty == "lp":
            if p is None:
                raise ValueError("lp penalty needs p")
            q = lp_exponent(p)
            if q == 2.0:
                omega = cp.sum_squares(u) / 2
            elif q == 1.0:
                omega = cp.square(cp.sum(t)) / 2
            else:
                omega = cp.square(cp.pnorm(t, q)) / 2
        elif penalty == "group":
            sums = [cp.sum(t[idx]) for idx in _groups_index(groups, M)]
            omega = cp.square(cp.max(cp.hstack(sums))) / 2
        else:
            raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")

        if loss == "one_class":
            # Σ max(0, ρ − f_i) − νnρ with ρ = −b (docs/mathematics.md §3.7); C and y unused.
            if nu is None or b is None:
                raise ValueError("one_class needs nu and an intercept")
            data = cp.sum(cp.pos(-z)) + nu * n * b
        else:
            data = _cvx_loss(loss, yy, z, epsilon, c)
        prob = cp.Problem(cp.Minimize(data + omega), cons)
        exact = _solve(prob, inaccurate=explicit)
        uval = np.asarray(u.value, dtype=np.float64).reshape(-1)
        A = np.zeros((M, n))
        norms = np.zeros(M)
        for m, (_, back) in enumerate(factors):
            um = uval[offsets[m] : offsets[m + 1]]
            A[m] = back @ um
            norms[m] = float(np.linalg.norm(um))
        bval = float(b.value) if b is not None else 0.0
        rho = None if link is None else np.asarray(link.dual_value, np.float64).reshape(-1)
        return RefSolution(float(prob.value), A, bval, norms), exact, rho

    try:
        return solve(explicit=False)[0]
    except RuntimeError as first:
        if loss == "one_class":
            raise
        # A second formulation whose solution certifies itself: the primal value of its
        # coefficients (an upper bound) against the dual value of its multipliers made
        # feasible (a lower bound), both evaluated here, not taken from the solver.
        sol, exact, rho = solve(explicit=True)
        if exact:
            return sol
        assert rho is not None
        z = decision_values(GG, sol.A, sol.b)
        upper = float(c @ loss_value(loss, yy, z, epsilon)) + penalty_value(
            block_norms(GG, sol.A), penalty, p=p, l1_ratio=l1_ratio, groups=groups
        )
        lower = dual_value(
            GG, yy, rho, c, loss=loss, penalty=penalty, p=p, l1_ratio=l1_ratio,
            epsilon=epsilon, groups=groups, intercept=intercept,
        )  # fmt: skip
        gap = (upper - lower) / max(1.0, abs(upper))
        if not gap <= CERTIFIED_GAP:
            raise RuntimeError(
                f"{first}; the second formulation's solution is certified only to a relative"
                f" gap of {gap:.2e} (> {CERTIFIED_GAP:g})"
            ) from None
        return RefSolution(upper, sol.A, sol.b, sol.norms)


def _dual_exponent(p: float) -> float:
    """``p* = p/(p−1)`` of the ``lp`` dual (``∞`` for ``p = 1``, ``1`` for ``p = ∞``)."""
    lp_exponent(p)
    return np.inf if p == 1.0 else (1.0 if np.isinf(p) else p / (p - 1.0))


def _penalty_conjugate(
    quad: FloatArray,
    penalty: str,
    *,
    p: float | None = None,
    l1_ratio: float | None = None,
    groups: ArrayLike | None = None,
) -> float:
    """The penalty's term ``Ω*`` of the dual of §1 at the forms ``q_m = ‖ρ‖²_{K_m}``:
    ``½ ‖q‖_{p*}`` (``lp``), ``Σ_m max(0, √q_m − r₁)²/(2r₂)`` (``elasticnet``),
    ``½ (Σ_j max_{k∈G_j} √q_k)²`` (``group``), 0 for ``l1`` (whose ``‖ρ‖_{K_m} ≤ 1`` is a
    constraint, for the caller)."""
    if penalty == "lp":
        if p is None:
            raise ValueError("lp penalty needs p")
        return 0.5 * float(np.linalg.norm(quad, ord=_dual_exponent(p)))
    if penalty == "elasticnet":
        if l1_ratio is None or not 0.0 <= l1_ratio < 1.0:
            raise ValueError("elasticnet needs l1_ratio in [0, 1)")
        excess = np.maximum(0.0, np.sqrt(quad) - l1_ratio)
        return float(np.sum(excess**2) / (2.0 * (1.0 - l1_ratio)))
    if penalty == "group":
        norms = np.sqrt(quad)
        total = sum(float(norms[idx].max()) for idx in _groups_index(groups, quad.size))
        return 0.5 * total**2
    if penalty == "l1":
        return 0.0
    raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")


def _centre(r: FloatArray, lo: FloatArray, hi: FloatArray, intercept: bool) -> FloatArray:
    """``ρ`` clipped onto its box ``[lo, hi]`` and, with an intercept, centred to ``Σ ρ = 0``.

    Centring is ``ρ_i ← clip(ρ_i − τ, lo_i, hi_i)`` with ``τ`` chosen (by bisection) so that
    ``Σ ρ = 0``: plain mean subtraction when it stays in the box (always for ``squared``).
    """
    r = np.clip(r, lo, hi)
    if not intercept:
        return r
    tau = float(r.mean())
    shifted = r - tau
    if np.all(shifted >= lo) and np.all(shifted <= hi):
        return shifted

    # sum(clip(r - tau)) is non-increasing in tau; bracket the root and bisect
    def total(t: float) -> float:
        return float(np.clip(r - t, lo, hi).sum())

    span = float(np.max(np.abs(r))) + float(np.max(np.abs(np.where(np.isfinite(hi), hi, 0))))
    span += float(np.max(np.abs(np.where(np.isfinite(lo), lo, 0)))) + 1.0
    t_lo, t_hi = -span, span
    for _ in range(200):
        mid = 0.5 * (t_lo + t_hi)
        if total(mid) > 0:
            t_lo = mid
        else:
            t_hi = mid
    r = np.clip(r - 0.5 * (t_lo + t_hi), lo, hi)
    free = (r > lo) & (r < hi)
    if free.any():  # remove the bisection's rounding residual from the free entries
        r[free] -= r.sum() / free.sum()
    return r


def dual_value(
    G: ArrayLike,
    y: ArrayLike,
    rho: ArrayLike,
    c: ArrayLike,
    *,
    loss: str,
    penalty: str,
    p: float | None = None,
    l1_ratio: float | None = None,
    epsilon: float = 0.1,
    groups: ArrayLike | None = None,
    intercept: bool = True,
) -> float:
    """The dual of §1 at ``ρ`` made feasible, for every loss but ``one_class`` and every penalty.

    ``D(ρ) = −Σ_i c_i ℓ*(y_i, −ρ_i/c_i) − Ω*(‖ρ‖_{K_1}, …, ‖ρ‖_{K_M})`` over ``Σ ρ = 0`` (with an
    intercept), where ``Ω*`` is the penalty's conjugate term: ``½ ‖(‖ρ‖²_{K_m})_m‖_{p*}`` for
    ``lp``; the constraint ``‖ρ‖_{K_m} ≤ 1`` for ``l1``; ``Σ_m max(0, ‖ρ‖_{K_m} − r₁)²/(2r₂)``
    for ``elasticnet``; ``½ (Σ_j max_{k∈G_j} ‖ρ‖_{K_k})²`` for ``group``. ``ρ`` is first clipped
    onto the conjugate's domain and centred, and for ``l1`` scaled into the norm ball, so any
    ``ρ`` gives a lower bound on the primal optimum.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Targets.
    rho : array_like of shape (n,)
        Any dual point, e.g. the multipliers of ``z = Σ_m f_m + b``.
    c : array_like of shape (n,)
        The loss weights ``C w_i``.
    loss : str
        Loss name (not ``one_class``).
    penalty : {"l1", "elasticnet", "lp", "group"}
        Penalty name.
    p : float, optional
        Required for ``lp``.
    l1_ratio : float, optional
        Required for ``elasticnet``.
    epsilon : float, default 0.1
        ``epsilon_insensitive`` tube width.
    groups : array_like of shape (M,), optional
        Kernel groups for ``group`` (default: one group).
    intercept : bool, default True
        Whether ``Σ ρ = 0`` is required.

    Returns
    -------
    float
        The dual value at the feasible point.
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    cc = np.broadcast_to(np.asarray(c, dtype=np.float64), yy.shape)
    lo_u, hi_u = _conjugate_bounds(loss, yy, epsilon)
    r = _centre(np.asarray(rho, dtype=np.float64).copy(), -cc * hi_u, -cc * lo_u, intercept)
    quad = _quad_forms(GG, r)
    if penalty == "elasticnet" and l1_ratio == 1.0:
        penalty = "l1"
    if penalty == "l1":
        shrink = max(1.0, float(np.sqrt(quad.max(initial=0.0))))
        r, quad = r / shrink, quad / shrink**2
    value = -float(cc @ loss_conjugate(loss, yy, -r / cc, epsilon))
    return value - _penalty_conjugate(quad, penalty, p=p, l1_ratio=l1_ratio, groups=groups)


def cvxpy_hinge_dual(
    G: ArrayLike,
    y: ArrayLike,
    *,
    C: float,
    penalty: str,
    p: float | None = None,
    groups: ArrayLike | None = None,
    intercept: bool = True,
) -> tuple[float, FloatArray]:
    """Solve the hinge-loss dual of §1 (``lp`` or ``group``) directly with cvxpy and Clarabel.

    ``lp``: ``max 1ᵀα − ½ ‖(αᵀ Q_m α)_m‖_{p*}``; ``group``:
    ``max 1ᵀα − ½ (Σ_j max_{k∈G_j} sqrt(αᵀ Q_jk α))²``; both over ``0 ≤ α ≤ C`` (and ``yᵀα = 0``
    with an intercept).

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Labels ``±1``.
    C : float
        Loss weight.
    penalty : {"lp", "group"}
        Which dual.
    p : float, optional
        ``lp`` parameter, ``p ≥ 1``.
    groups : array_like of shape (M,), optional
        Kernel groups for ``group`` (default: one group).
    intercept : bool, default True
        Include the equality constraint ``yᵀα = 0``.

    Returns
    -------
    value : float
        Optimal dual value.
    alpha : numpy.ndarray of shape (n,)
        Optimal dual variables (clipped to ``[0, C]``).
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    M, n, _ = GG.shape
    alpha = cp.Variable(n)
    ya = cp.multiply(yy, alpha)
    norms: list[Any] = []
    for m in range(M):
        L, _ = _factor(GG[m])
        norms.append(cp.norm(L.T @ ya, 2) if L.shape[1] else cp.Constant(0.0))
    reg: Any
    if penalty == "lp":
        if p is None:
            raise ValueError("lp penalty needs p")
        reg = cp.norm(cp.hstack([cp.square(v) for v in norms]), _dual_exponent(p))
    elif penalty == "group":
        total = cp.sum(
            cp.hstack(
                [cp.max(cp.hstack([norms[k] for k in idx])) for idx in _groups_index(groups, M)]
            )
        )
        reg = cp.square(total)
    else:
        raise ValueError("cvxpy_hinge_dual handles penalty 'lp' or 'group'")
    cons: list[Any] = [alpha >= 0, alpha <= C]
    if intercept:
        cons.append(yy @ alpha == 0)
    prob = cp.Problem(cp.Maximize(cp.sum(alpha) - reg / 2), cons)
    _solve(prob)
    a = np.clip(np.asarray(alpha.value, dtype=np.float64).reshape(-1), 0.0, C)
    return float(prob.value), a


# --------------------------------------------------------------------------------------------
# scikit-learn SVC on the sum kernel (lp, p = inf)
# --------------------------------------------------------------------------------------------


def svc_sum_kernel_objective(K: ArrayLike, y: ArrayLike, C: float) -> float:
    """Primal objective of ``SVC(kernel="precomputed", C=C, tol=1e-8)`` on ``K``.

    Computed from the fitted ``dual_coef_`` and ``intercept_`` through the primal formula
    ``C Σ_i max(0, 1 − y_i f(x_i)) + ½ ‖f‖²``; with ``K = Σ_m K_m`` it equals the ``lp``,
    ``p = ∞`` MKL optimum (§0).

    Parameters
    ----------
    K : array_like of shape (n, n)
        Gram matrix.
    y : array_like of shape (n,)
        Labels ``±1``.
    C : float
        Loss weight.

    Returns
    -------
    float
        The primal objective at scikit-learn's solution.
    """
    SVC: Any = importlib.import_module("sklearn.svm").SVC
    KK = np.asarray(K, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    clf = SVC(kernel="precomputed", C=C, tol=1e-8, shrinking=False).fit(KK, yy)
    coef = np.zeros(yy.size)
    coef[clf.support_] = np.asarray(clf.dual_coef_, dtype=np.float64).reshape(-1)
    b = float(np.asarray(clf.intercept_).reshape(-1)[0])
    return primal_objective(KK[None], coef[None], b, yy, C=C, loss="hinge", penalty="lp", p=np.inf)


# --------------------------------------------------------------------------------------------
# duals of §1
# --------------------------------------------------------------------------------------------


def _quad_forms(G: FloatArray, v: FloatArray) -> FloatArray:
    """``vᵀ K_m v`` for every m, clipped at 0."""
    out: FloatArray = np.maximum(np.einsum("i,mij,j->m", v, G, v), 0.0)
    return out


def dual_objective_lp(
    G: ArrayLike,
    y: ArrayLike,
    rho: ArrayLike,
    C: float,
    p: float,
    *,
    loss: str = "hinge",
    epsilon: float = 0.1,
    intercept: bool = True,
    tol: float = 1e-8,
) -> float:
    """``lp`` dual of §1 for a general loss, in the ``ρ`` parameterisation.

    ``D(ρ) = −C Σ_i ℓ*(y_i, −ρ_i/C) − ½ ‖(ρᵀ K_m ρ)_m‖_{p*}`` over ``Σ ρ_i = 0`` (with an
    intercept). For hinge ``ρ = α ∘ y`` gives the form ``1ᵀα − ½ ‖(αᵀ Q_m α)_m‖_{p*}``.
    At an optimum ``ρ_i = −C ∂ℓ(y_i, f(x_i))/∂z``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Targets.
    rho : array_like of shape (n,)
        Dual point (no projection is done).
    C : float
        Loss weight.
    p : float
        ``lp`` parameter, ``p ≥ 1`` (``p* = p/(p−1)``, ``∞`` for ``p = 1``).
    loss : str, default "hinge"
        Loss name.
    epsilon : float, default 0.1
        ``epsilon_insensitive`` tube width.
    intercept : bool, default True
        Whether the model has an intercept (then ``Σ ρ = 0`` is required).
    tol : float, default 1e-8
        Feasibility tolerance, relative to ``max(1, C)``.

    Returns
    -------
    float
        The dual value.

    Raises
    ------
    ValueError
        If ``ρ`` is infeasible beyond ``tol``.
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    r = np.asarray(rho, dtype=np.float64)
    scale = max(1.0, C)
    if intercept and abs(r.sum()) > tol * scale * max(1, r.size):
        raise ValueError(f"infeasible dual point: sum(rho) = {r.sum():.3e}")
    conj = loss_conjugate(loss, yy, -r / C, epsilon, tol=tol * scale / C)
    if not np.all(np.isfinite(conj)):
        raise ValueError("infeasible dual point: outside the loss conjugate's domain")
    return float(-C * conj.sum()) - _penalty_conjugate(_quad_forms(GG, r), "lp", p=p)


def dual_objective_lp_hinge(
    G: ArrayLike,
    y: ArrayLike,
    alpha: ArrayLike,
    C: float,
    p: float,
    *,
    intercept: bool = True,
    tol: float = 1e-8,
) -> float:
    """``lp``/hinge dual of §1: ``D(α) = 1ᵀα − ½ ‖(αᵀ Q_m α)_m‖_{p*}``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Labels ``±1``.
    alpha : array_like of shape (n,)
        Dual point, ``0 ≤ α ≤ C`` and ``yᵀα = 0`` (with an intercept).
    C : float
        Loss weight.
    p : float
        ``lp`` parameter, ``p ≥ 1``.
    intercept : bool, default True
        Whether ``yᵀα = 0`` is required.
    tol : float, default 1e-8
        Feasibility tolerance, relative to ``max(1, C)``.

    Returns
    -------
    float
        The dual value.

    Raises
    ------
    ValueError
        If ``α`` is infeasible beyond ``tol``.
    """
    a = np.asarray(alpha, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    return dual_objective_lp(G, yy, a * yy, C, p, loss="hinge", intercept=intercept, tol=tol)


def dual_objective_group_hinge(
    G: ArrayLike,
    y: ArrayLike,
    alpha: ArrayLike,
    C: float,
    groups: ArrayLike | None = None,
    *,
    intercept: bool = True,
    tol: float = 1e-8,
) -> float:
    """``group``/hinge dual of §1: ``1ᵀα − ½ (Σ_j max_{k∈G_j} sqrt(αᵀ Q_jk α))²``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Labels ``±1``.
    alpha : array_like of shape (n,)
        Dual point in the hinge box (and ``yᵀα = 0`` with an intercept).
    C : float
        Loss weight.
    groups : array_like of shape (M,), optional
        Group label of every kernel (default: one group).
    intercept : bool, default True
        Whether ``yᵀα = 0`` is required.
    tol : float, default 1e-8
        Feasibility tolerance, relative to ``max(1, C)``.

    Returns
    -------
    float
        The dual value.
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    a = np.asarray(alpha, dtype=np.float64)
    scale = max(1.0, C)
    if np.any(a < -tol * scale) or np.any(a > C + tol * scale):
        raise ValueError("infeasible dual point: alpha outside [0, C]")
    if intercept and abs(yy @ a) > tol * scale * max(1, a.size):
        raise ValueError(f"infeasible dual point: y·alpha = {yy @ a:.3e}")
    a = np.clip(a, 0.0, C)
    quad = _quad_forms(GG, a * yy)
    return float(a.sum()) - _penalty_conjugate(quad, "group", groups=groups)


def kloft_coefficients(G: ArrayLike, y: ArrayLike, alpha: ArrayLike, p: float) -> FloatArray:
    """Primal coefficients from an ``lp``/hinge dual point (Kloft eq. 17, 22; §1).

    ``θ_m = v_m^{1/(p−1)} / ‖v^{1/(p−1)}‖_p`` with ``v_m = αᵀ Q_m α`` (the closed form of the
    fixed point ``θ_m = ‖w_m‖^{2/(p+1)} / (Σ_k ‖w_k‖^{2p/(p+1)})^{1/p}``,
    ``‖w_m‖² = θ_m² v_m``), ``θ ≡ 1`` for ``p = ∞``, and ``A[m] = θ_m Y α``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Labels ``±1``.
    alpha : array_like of shape (n,)
        Dual point.
    p : float
        ``lp`` parameter, ``p > 1``.

    Returns
    -------
    numpy.ndarray of shape (M, n)
        ``A``.
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    ya = np.asarray(alpha, dtype=np.float64) * yy
    if not p > 1.0:
        raise ValueError("kloft_coefficients needs p > 1 (p = 1 is not a closed form)")
    v = _quad_forms(GG, ya)
    if np.isinf(p):
        theta = np.ones_like(v)
    else:
        w = (v / v.max()) ** (1.0 / (p - 1.0))
        theta = w / np.linalg.norm(w, ord=p)
    out: FloatArray = theta[:, None] * ya[None, :]
    return out


def project_dual_l1(
    G: ArrayLike,
    y: ArrayLike,
    rho: ArrayLike,
    C: float,
    *,
    loss: str,
    penalty: str = "l1",
    epsilon: float = 0.1,
    intercept: bool = True,
) -> FloatArray:
    """Make a SpicyMKL dual point feasible (§1): centre, then scale.

    Centring is ``ρ_i ← clip(ρ_i − τ, lo_i, hi_i)`` with ``τ`` chosen (by bisection) so that
    ``Σ ρ = 0``, where ``[lo_i, hi_i]`` is the domain of ``ρ_i ↦ ℓ*(y_i, −ρ_i/C)``. When plain
    mean-subtraction stays inside that domain (always for ``squared``) this *is* mean
    subtraction (``τ = mean``); for the bounded conjugates (hinge, logistic, …) plain
    centring can leave the domain, which this clipped shift avoids. For ``l1`` the result is
    then divided by ``max(1, max_m ‖ρ‖_{K_m})``, which keeps both ``Σ ρ = 0`` and the domain
    (it contains 0).

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Targets.
    rho : array_like of shape (n,)
        Any dual point, typically ``−C ℓ'(y, f)``.
    C : float
        Loss weight.
    loss : str
        Loss name.
    penalty : {"l1", "elasticnet"}, default "l1"
        Penalty; ``elasticnet`` has no norm constraint (no scaling).
    epsilon : float, default 0.1
        ``epsilon_insensitive`` tube width.
    intercept : bool, default True
        Whether ``Σ ρ = 0`` is required.

    Returns
    -------
    numpy.ndarray of shape (n,)
        A feasible dual point.
    """
    _check_loss(loss)
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    r = np.asarray(rho, dtype=np.float64).copy()
    # domain of rho: u = -rho/C in [lo_u, hi_u]  <=>  rho in [-C hi_u, -C lo_u]
    lo_u, hi_u = _conjugate_bounds(loss, yy, epsilon)
    lo, hi = -C * hi_u, -C * lo_u
    r = _centre(r, lo, hi, intercept)
    if penalty == "l1":
        nmax = float(np.sqrt(_quad_forms(GG, r)).max(initial=0.0))
        r = r / max(1.0, nmax)
    elif penalty != "elasticnet":
        raise ValueError("project_dual_l1 handles penalty 'l1' or 'elasticnet'")
    out: FloatArray = np.asarray(r, dtype=np.float64)
    return out


def dual_objective_l1(
    G: ArrayLike,
    y: ArrayLike,
    rho: ArrayLike,
    C: float,
    loss: str,
    penalty: str = "l1",
    l1_ratio: float | None = None,
    epsilon: float = 0.1,
    *,
    intercept: bool = True,
    project: bool = True,
) -> float:
    """SpicyMKL dual of §1 for ``l1`` / ``elasticnet``, after the feasibility projection.

    ``D(ρ) = −C Σ_i ℓ*(y_i, −ρ_i/C)`` over ``Σ ρ = 0``; for ``l1`` also ``‖ρ‖_{K_m} ≤ 1``; for
    ``elasticnet`` minus ``Σ_m max(0, ‖ρ‖_{K_m} − r_1)² / (2 r_2)``,
    ``r_1 = l1_ratio``, ``r_2 = 1 − l1_ratio``.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Targets.
    rho : array_like of shape (n,)
        Dual point; projected with :func:`project_dual_l1` unless ``project=False``.
    C : float
        Loss weight.
    loss : str
        Loss name.
    penalty : {"l1", "elasticnet"}, default "l1"
        Penalty (``elasticnet`` with ``l1_ratio = 1`` is ``l1``).
    l1_ratio : float, optional
        Required for ``elasticnet``.
    epsilon : float, default 0.1
        ``epsilon_insensitive`` tube width.
    intercept : bool, default True
        Whether the model has an intercept (``Σ ρ = 0``).
    project : bool, default True
        Apply the projection first.

    Returns
    -------
    float
        The dual value (``-inf`` if ``project=False`` and ``ρ`` is infeasible).
    """
    GG = np.asarray(G, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    if penalty == "elasticnet":
        if l1_ratio is None or not 0.0 <= l1_ratio <= 1.0:
            raise ValueError("elasticnet needs l1_ratio in [0, 1]")
        if l1_ratio == 1.0:
            penalty = "l1"
    elif penalty != "l1":
        raise ValueError("dual_objective_l1 handles penalty 'l1' or 'elasticnet'")
    r = np.asarray(rho, dtype=np.float64)
    if project:
        r = project_dual_l1(
            GG, yy, r, C, loss=loss, penalty=penalty, epsilon=epsilon, intercept=intercept
        )
    norms = np.sqrt(_quad_forms(GG, r))
    if not project:
        if intercept and abs(r.sum()) > 1e-8 * max(1.0, C) * r.size:
            return -np.inf
        if penalty == "l1" and norms.max(initial=0.0) > 1.0 + 1e-9:
            return -np.inf
    conj = loss_conjugate(loss, yy, -r / C, epsilon)
    value = -C * float(conj.sum())
    if penalty == "elasticnet":
        value -= _penalty_conjugate(norms**2, "elasticnet", l1_ratio=l1_ratio)
    return value


def cvxpy_shared_mkl(
    G: ArrayLike,
    y: ArrayLike,
    *,
    C: float,
    loss: str,
    p: float = 1.0,
    penalty: str = "lp",
    sample_weight: ArrayLike | None = None,
    l1_ratio: float = 1.0,
    groups: ArrayLike | None = None,
) -> RefSolution:
    """Solve the shared multiclass ``lp``, ``l1``, ``elasticnet`` or ``group`` problem of
    docs/mathematics.md §3.8 with cvxpy.

    One-vs-rest targets ``y^c = ±1`` of each class ``c`` of ``y``, functions
    ``f^c = Σ_m f_m^c + b_c``, and the penalty on the block norms over the classes
    ``s_m = ‖(‖f_m^1‖, …, ‖f_m^K‖)‖₂``:
    ``C Σ_c Σ_i w_i ℓ(y_i^c, f^c(x_i)) + Ω(s)``, ``Ω = ½ (Σ_m s_m^q)^{2/q}`` (``lp``) or
    ``Σ_m s_m`` (``l1``) or ``r Σ_m s_m + (1 − r)/2 Σ_m s_m²`` (``elasticnet``,
    ``r = l1_ratio``) or ``½ max_j (Σ_{k∈G_j} s_k)²`` (``group``). Variables
    ``u_m^c = L_mᵀ a_m^c`` as in :func:`cvxpy_mkl`.

    Parameters
    ----------
    G : array_like of shape (M, n, n)
        Gram matrices.
    y : array_like of shape (n,)
        Class labels (three or more classes).
    C : float
        Loss weight.
    loss : {"hinge", "squared_hinge", "logistic"}
        Loss name.
    p : float, default 1.0
        ``lp`` parameter (``p ≥ 1``, ``numpy.inf`` allowed); unused for ``l1``.
    penalty : {"lp", "l1", "elasticnet", "group"}, default "lp"
        The penalty of the block norms.
    sample_weight : array_like of shape (n,), optional
        Weights ``w_i ≥ 0`` on every class's loss of sample ``i`` (1 when None).
    l1_ratio : float, default 1.0
        The elastic net's ``r``.
    groups : array_like of shape (M,), optional
        Group label of every kernel for ``group`` (default: one group).

    Returns
    -------
    RefSolution
        Optimal value, ``A`` of shape (K, M, n), ``b`` 0 (the intercepts are not returned),
        and the block norms ``s_m`` over the classes.
    """
    GG = np.asarray(G, dtype=np.float64)
    labels = np.asarray(y)
    classes = np.unique(labels)
    M, n, _ = GG.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    factors = [_factor(GG[m]) for m in range(M)]
    ranks = [L.shape[1] for L, _ in factors]
    offsets = np.concatenate([[0], np.cumsum(ranks)]).astype(int)
    Lall = np.hstack([L for L, _ in factors])
    us = [cp.Variable(int(offsets[-1])) for _ in classes]
    bs = cp.Variable(len(classes))
    t = cp.Variable(M, nonneg=True)
    cons: list[Any] = []
    for m in range(M):
        lo, hi = int(offsets[m]), int(offsets[m + 1])
        if hi > lo:
            cons.append(cp.norm(cp.hstack([u[lo:hi] for u in us]), 2) <= t[m])
        else:
            cons.append(t[m] == 0)
    data = 0
    for c, label in enumerate(classes):
        yc = np.where(labels == label, 1.0, -1.0)
        data = data + _cvx_loss(loss, yc, Lall @ us[c] + bs[c], 0.1, w)
    q = lp_exponent(p)
    if penalty == "l1":
        omega = cp.sum(t)
    elif penalty == "elasticnet":
        omega = l1_ratio * cp.sum(t) + (1 - l1_ratio) / 2 * cp.sum_squares(t)
    elif penalty == "group":
        sums = [cp.sum(t[idx]) for idx in _groups_index(groups, M)]
        omega = cp.square(cp.max(cp.hstack(sums))) / 2
    elif q == 2.0:
        omega = sum(cp.sum_squares(u) for u in us) / 2
    elif q == 1.0:
        omega = cp.square(cp.sum(t)) / 2
    else:
        omega = cp.square(cp.pnorm(t, q)) / 2
    prob = cp.Problem(cp.Minimize(C * data + omega), cons)
    _solve(prob)
    A = np.zeros((len(classes), M, n))
    norms = np.zeros(M)
    for m, (_, back) in enumerate(factors):
        lo, hi = int(offsets[m]), int(offsets[m + 1])
        blocks = [np.asarray(u.value, dtype=np.float64).reshape(-1)[lo:hi] for u in us]
        for c, um in enumerate(blocks):
            A[c, m] = back @ um
        norms[m] = float(np.sqrt(sum(float(um @ um) for um in blocks)))
    return RefSolution(objective=float(prob.value), A=A, b=0.0, norms=norms)
