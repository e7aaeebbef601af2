"""Gram stacks ``(M, n, n)``: computing one (:func:`gram`), and the tools on precomputed
stacks: checking (:func:`validate_stack`), repairing (:func:`shift_to_psd`), quadratic forms
(:func:`quad_forms`), low-rank factors (:func:`low_rank`, :class:`LowRankFactors`) and
alignments (:func:`alignment`)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import DTypeLike, NDArray

from .. import _core
from .._typing import Normalization
from .._validation import check_n_threads, check_real, check_stack
from ..exceptions import (
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDError,
    NonFiniteError,
)
from ._banks import KernelBank
from ._specs import Kernel

__all__ = [
    "LowRankFactors",
    "alignment",
    "gram",
    "low_rank",
    "quad_forms",
    "shift_to_psd",
    "validate_stack",
]


def gram(
    X: Any,
    specs: Sequence[Kernel],
    *,
    normalize: Normalization | None = None,
    center: bool = False,
    dtype: DTypeLike = np.float64,
    n_threads: int = 0,
) -> NDArray[Any]:
    """The stack of training Gram matrices of ``specs`` on ``X``.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training points; a ``scipy.sparse`` matrix is read as it is, never densified
        (docs/guide.md, "Sparse data"); a Dask array gives a Dask array of row blocks,
        computed on the workers (docs/dask.md). For sequence kernels (:class:`Spectrum`,
        :class:`WeightedDegree`), a 1-D array or list of strings, or a DataFrame mixing
        columns of strings and numeric columns.
    specs : sequence of Kernel
        Kernel specifications (columns named in their ``features`` are those of a
        DataFrame ``X``).
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"}, optional
        Scaling of each Gram matrix: unit trace, unit mean diagonal, Kloft et al.'s
        multiplicative normalisation (eq. 25, unit variance in feature space) or spherical
        normalisation (eq. 26, unit diagonal). A kernel that is zero (after centring) stays zero.
    center : bool, default False
        Centre each kernel in feature space before scaling.
    dtype : float64 or float32
        Element type of the stack (float32 halves its memory).
    n_threads : int, default 0
        Threads of the computation, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or
        ``OMP_NUM_THREADS`` when that is set (joblib's workers set it to their share); ``-k`` all
        but ``k − 1``; ``k > 0`` that many, clipped to the available cores.

    Returns
    -------
    ndarray of shape (M, n_samples, n_samples)

    Raises
    ------
    ValueError
        Non-finite ``X``, invalid specifications, or feature indices out of range; for a
        :class:`Callable` whose function returns a block of the wrong shape, non-finite or
        (training kernels) not symmetric, the ``InvalidInputError`` kinds of
        :mod:`multikernel.exceptions` with ``kernel`` set to its index.
    StackTooLargeError
        The stack would not fit in the available memory (raised before allocating it).

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Gaussian, Linear, gram
    >>> X = np.random.default_rng(0).normal(size=(10, 3))
    >>> G = gram(X, [Linear(), Gaussian(sigma=2.0, features=[0, 2])], normalize="mean_diag")
    >>> G.shape, G.dtype
    ((2, 10, 10), dtype('float64'))
    >>> np.diagonal(G, axis1=1, axis2=2).mean(axis=1)
    array([1., 1.])
    """
    return KernelBank(
        specs, normalize=normalize, center=center, dtype=dtype, n_threads=n_threads
    ).fit_transform(X)


def validate_stack(G: Any, *, rtol: float = 1e-8, n_threads: int = 0) -> NDArray[Any]:
    """Check a precomputed stack ``(M, n, n)``: finite, symmetric within ``rtol · max|K_m|``,
    and meeting the entry-wise conditions of a positive semi-definite kernel (no diagonal
    entry below ``-rtol · max|K_m|``, no ``|K_ij|`` above ``sqrt(K_ii K_jj)`` beyond rounding),
    in one read of the stack. A kernel that passes can still be indefinite (e.g. by float32
    rounding): the solvers detect that when a dual point exploits it
    (:class:`~multikernel.exceptions.KernelNotPSDWarning`).

    Parameters
    ----------
    G : array-like of shape (M, n, n)
        Kernel stack.
    rtol : float, default 1e-8
        Tolerated asymmetry ``|K_m[i, j] - K_m[j, i]|``, relative to ``max|K_m|``; finite
        and ≥ 0.
    n_threads : int, default 0
        Threads, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or ``OMP_NUM_THREADS`` when that
        is set (joblib's workers set it to their share); ``-k`` all but ``k − 1``; ``k > 0`` that
        many, clipped to the available cores.

    Returns
    -------
    ndarray of shape (M, n, n)
        ``G`` as a C-contiguous float64 array (float32 stays float32), not copied when it
        already is one.

    Raises
    ------
    ValueError
        ``rtol`` is not finite and ≥ 0, wrong shape, non-finite entries
        (:class:`~multikernel.exceptions.NonFiniteError`),
        an asymmetric kernel (:class:`~multikernel.exceptions.KernelNotSymmetricError`) or
        one that cannot be PSD (:class:`~multikernel.exceptions.KernelNotPSDError`); the
        error's ``kernel`` and ``entry`` name the offending kernel and entry.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import validate_stack
    >>> G = np.stack([np.eye(3), np.ones((3, 3))])
    >>> validate_stack(G) is G
    True
    >>> G[1, 0, 2] = 2.0
    >>> try:
    ...     validate_stack(G)
    ... except ValueError:
    ...     print("rejected")
    rejected
    """
    tol = check_real(rtol, "rtol", "finite and >= 0", lambda v: 0.0 <= v < math.inf)
    arr = check_stack(G)
    _core.validate_stack(arr, tol, check_n_threads(n_threads))
    return arr


def shift_to_psd(
    G: Any, *, max_shift: float = 1e-2, n_threads: int = 0
) -> tuple[NDArray[Any], NDArray[np.float64]]:
    """Repair a slightly indefinite precomputed stack: ``K_m + s_m I`` with ``s_m ≥ 0`` the
    smallest shift that makes ``K_m``, as stored, positive semi-definite (PSD) for the solvers.

    A stack rounded to float32, or assembled from noisy similarities, can have kernels whose
    smallest eigenvalue is slightly negative; a fit then finds a dual point that exploits it
    and has no certificate (:class:`~multikernel.exceptions.KernelNotPSDWarning`,
    docs/mathematics.md §1.8). This function is the explicit repair the estimators apply with
    ``psd="clip"``. For each kernel, with ``τ_m = (n + 2) ε₆₄ max_i K_m,ii`` the rounding unit
    of the solvers' quadratic forms (their witness needs ``ρᵀK_mρ < −4 τ_m ‖ρ‖₁²``):

    1. if ``K_m + 2τ_m I`` has a Cholesky factor in float64, ``s_m = 0`` and the kernel is
       left as it is: its eigenvalues are above ``−2τ_m``, where no dual point can show a
       witness;
    2. otherwise ``λ`` = the smallest eigenvalue of ``K_m`` (``numpy.linalg.eigvalsh`` in
       float64) and ``s_m = −λ + 4τ_m``, enlarged (by ``4τ_m``, doubling) until the shifted
       kernel as stored, minus ``τ_m I``, has a Cholesky factor: the stored kernel is then
       PSD with a margin of ``τ_m``, whatever the rounding of the shift. So
       ``−λ ≤ s_m ≤ −2λ + O(τ_m)``.

    The shift is a ridge on the training diagonal only: a model fitted on the result solves
    the problem of the kernels ``K_m + s_m I`` as stored, and the cross kernels between test
    and training points are unchanged. float32 diagonal entries are rounded up, so each moves
    by ``s_m`` plus less than one float32 unit of ``K_ii`` (``1.2e-7`` for a unit entry, which
    can exceed ``s_m`` itself: float32 cannot store a smaller ridge); float64 entries move by
    ``s_m`` to rounding. At a large ``C`` even such a ridge changes the optimum measurably (the
    model can fit each training point on its own). The upper triangle is read (what the
    solvers' quadratic forms read).

    Cost: one Cholesky factorisation of each kernel (``n³/3`` flops) and, for a kernel that
    needs a shift, an eigenvalue decomposition without vectors (about ``4n³/3`` more) and one
    or two more factorisations, each on an ``n × n`` float64 work array: 3.9 s on one core for
    ``M = 50`` float32 Gaussian kernels at ``n = 1000``, 32 of them shifted (0.7 s for the same
    kernels in float64, none shifted). The LAPACK routines run on NumPy's BLAS threads.

    Parameters
    ----------
    G : array-like of shape (M, n, n)
        Kernel stack, float64 or float32.
    max_shift : float, default 1e-2
        The largest repair allowed, relative to each kernel's largest diagonal entry: a kernel
        that needs ``s_m > max_shift · max_i K_m,ii`` is refused. Rounding cannot need that
        much: rounding the entries of a PSD kernel to float32 (by ``2⁻²⁴ = 6e-8`` of each
        at most) moves its eigenvalues by at most ``n · 6e-8 · max_i K_ii``, below 1 % of the
        diagonal for every ``n < 160 000``. A kernel that needs more is indefinite by
        construction (a sigmoid "kernel", an edit-distance similarity), and shifting it is a
        modelling decision: raise ``max_shift`` to take it.
    n_threads : int, default 0
        Threads of the stack's validation (:func:`validate_stack`), as scikit-learn's ``n_jobs``: -1
        (or 0) all cores, or ``OMP_NUM_THREADS`` when that is set (joblib's workers set it to their
        share); ``-k`` all but ``k − 1``; ``k > 0`` that many, clipped to the available cores.

    Returns
    -------
    G_psd : ndarray of shape (M, n, n)
        The repaired stack, of ``G``'s dtype (float32 stays float32). When no kernel needs a
        shift it is ``G`` itself as :func:`validate_stack` returns it (not copied); otherwise
        one copy of the stack.
    shifts : ndarray of shape (M,)
        ``s_m``, 0.0 exactly for the kernels left as they were.

    Raises
    ------
    ValueError
        A stack that :func:`validate_stack` rejects (e.g. a negative diagonal entry:
        :class:`~multikernel.exceptions.KernelNotPSDError`), a kernel that needs a shift
        above ``max_shift · max_i K_ii`` (:class:`~multikernel.exceptions.KernelNotPSDError`
        naming the kernel), or an invalid ``max_shift``
        (:class:`~multikernel.exceptions.InvalidParameterError`).

    See Also
    --------
    validate_stack : The necessary entry-wise conditions, checked first.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import shift_to_psd
    >>> v = np.array([1.0, 1.0, -1.0, -1.0]) / 2
    >>> K = 0.5 * np.ones((4, 4)) + 0.5 * np.eye(4) - 0.501 * np.outer(v, v)
    >>> round(float(np.linalg.eigvalsh(K)[0]), 9)  # passes validate_stack, yet indefinite
    -0.001
    >>> G_psd, shifts = shift_to_psd(np.stack([np.eye(4), K]))
    >>> shifts[0], bool(1e-3 <= shifts[1] < 1.001e-3)
    (np.float64(0.0), True)
    >>> bool(np.linalg.eigvalsh(G_psd[1]).min() >= 0.0)
    True
    """
    if isinstance(max_shift, bool) or not (
        isinstance(max_shift, numbers.Real) and 0.0 <= max_shift < math.inf
    ):
        raise InvalidParameterError(
            f"max_shift must be a finite number >= 0, got {max_shift!r}", parameter="max_shift"
        )
    arr = validate_stack(G, n_threads=n_threads)
    shifts = np.array([_psd_shift(K, m, float(max_shift)) for m, K in enumerate(arr)])
    if not shifts.any():
        return arr, shifts
    out = arr.copy()
    for m in np.flatnonzero(shifts):
        np.fill_diagonal(out[m], _shifted_diagonal(arr[m], float(shifts[m])))
    return out, shifts


def _shifted_diagonal(K: NDArray[Any], s: float) -> NDArray[Any]:
    """The diagonal of ``K + sI`` in ``K``'s dtype, float32 entries rounded up (so that each
    stored entry is shifted by at least ``s``)."""
    d = K.diagonal().astype(np.float64) + s
    if K.dtype != np.float32:
        return d
    d32 = d.astype(np.float32)
    return np.where(d32 < d, np.nextafter(d32, np.float32(np.inf)), d32)


def _factorizes(K: NDArray[Any], diagonal: NDArray[Any], delta: float) -> bool:
    """Whether ``K`` with ``diagonal + delta`` on its diagonal has a Cholesky factor in
    float64 (upper triangle read; float32 widens exactly)."""
    A = np.array(K, dtype=np.float64, order="F")
    np.fill_diagonal(A, diagonal.astype(np.float64) + delta)
    try:
        scipy.linalg.cholesky(A, lower=False, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return False
    return True


def _psd_shift(K: NDArray[Any], m: int, max_shift: float) -> float:
    """``s_m`` of :func:`shift_to_psd` for kernel ``m``."""
    top = max(float(K.diagonal().max()), 0.0)
    tau: float = (K.shape[0] + 2) * float(np.finfo(np.float64).eps) * top
    # A zero diagonal means a zero kernel (|K_ij| ≤ sqrt(K_ii K_jj), checked): PSD.
    if tau == 0.0 or _factorizes(K, K.diagonal(), 2.0 * tau):
        return 0.0
    lam = float(np.linalg.eigvalsh(K.astype(np.float64), UPLO="U")[0])
    s, step = max(-lam, 0.0) + 4.0 * tau, 4.0 * tau
    while s <= max_shift * top:
        if _factorizes(K, _shifted_diagonal(K, s), -tau):
            return s
        s, step = s + step, 2.0 * step
    raise KernelNotPSDError(
        f"kernel {m} has smallest eigenvalue {lam:.3e}: making it PSD needs a shift of "
        f"{s:.3e}, above max_shift = {max_shift:g} times its largest diagonal entry "
        f"{top:.3e}. That is no rounding error: the kernel is indefinite by construction. "
        "Repair it deliberately (shift_to_psd with a larger max_shift, or clip its negative "
        "eigenvalues) or use another kernel.",
        kernel=m,
    )


def quad_forms(G: Any, v: Any, *, n_threads: int = 0) -> NDArray[np.float64]:
    """``vᵀ K_m v`` for every kernel of a stack, in parallel (the hot loop of every solver).

    Parameters
    ----------
    G : ndarray of shape (M, n, n), float64 or float32
        Kernel stack (symmetric; only the upper triangle is read). Its finiteness is not
        checked (that would cost another read of the stack): see :func:`validate_stack`.
    v : array-like of shape (n,)
        Vector.
    n_threads : int, default 0
        Threads, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or ``OMP_NUM_THREADS`` when that
        is set (joblib's workers set it to their share); ``-k`` all but ``k − 1``; ``k > 0`` that
        many, clipped to the available cores.

    Returns
    -------
    ndarray of shape (M,)
        ``vᵀ K_m v`` for each kernel, accumulated in float64.

    Raises
    ------
    ValueError
        ``G`` is not a stack of square kernels, or ``v`` is not 1-D of length n.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import quad_forms
    >>> G = np.stack([np.eye(3), np.ones((3, 3))])
    >>> quad_forms(G, np.array([1.0, 2.0, 3.0]))
    array([14., 36.])
    """
    arr = check_stack(G)
    vec = np.ascontiguousarray(np.asarray(v, dtype=np.float64))
    if vec.ndim != 1:
        raise InvalidInputError(f"v must be 1-D, got shape {vec.shape}")
    return _core.quad_forms(arr, vec, check_n_threads(n_threads))


@dataclass(frozen=True)
class LowRankFactors:
    """Pivoted incomplete Cholesky factors ``K_m ≈ factors[m] @ factors[m].T``.

    The result of :func:`low_rank`; the parameters are also its attributes.

    Parameters
    ----------
    factors : list of ndarray of shape (n, rank_m)
        The factor ``G_m`` of each kernel.
    ranks : ndarray of shape (M,)
        ``rank_m``, the number of columns of each factor.
    errors : ndarray of shape (M,)
        ``trace(K_m - G_m G_mᵀ) / trace(K_m)``, which also bounds
        ``||K_m - G_m G_mᵀ||_F / trace(K_m)``.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import low_rank
    >>> B = np.random.default_rng(0).normal(size=(6, 2))
    >>> res = low_rank(np.stack([B @ B.T, np.eye(6)]))
    >>> res.ranks
    array([2, 6])
    >>> bool(np.allclose(res.factors[0] @ res.factors[0].T, B @ B.T))
    True
    """

    factors: list[NDArray[np.float64]] = field(repr=False)
    ranks: NDArray[np.int64]
    errors: NDArray[np.float64]


def low_rank(
    G: Any, *, tol: float = 1e-6, max_rank: int | None = None, n_threads: int = 0
) -> LowRankFactors:
    """Pivoted incomplete Cholesky factorisation of every kernel of a stack.

    Stops for each kernel when the trace of the residual is at most ``tol · trace(K_m)``
    (or at ``max_rank`` columns).

    Parameters
    ----------
    G : ndarray of shape (M, n, n)
        Symmetric PSD kernels (finiteness is not checked: see :func:`validate_stack`).
    tol : float, default 1e-6
        Relative trace error, in [0, 1).
    max_rank : int, optional
        Cap on the rank, an integer ≥ 1 (default n; larger values mean n).
    n_threads : int, default 0
        Threads, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or ``OMP_NUM_THREADS`` when that
        is set (joblib's workers set it to their share); ``-k`` all but ``k − 1``; ``k > 0`` that
        many, clipped to the available cores.

    Returns
    -------
    LowRankFactors
        The factors, their ranks and their relative trace errors.

    Raises
    ------
    ValueError
        ``G`` is not a stack of square kernels, ``tol`` is outside [0, 1), or ``max_rank`` is
        not an integer ≥ 1.

    Warns
    -----
    UserWarning
        The factors' total rank is at least ``n``: they save no memory, and the solvers'
        combinations of kernels cost ``n²`` per factor column instead of ``n²`` per kernel
        (narrow Gaussian kernels are nearly the identity: cap them with ``max_rank``).

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Gaussian, gram, low_rank
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> res = low_rank(gram(X, [Gaussian(sigma=3.0)]), tol=1e-4)
    >>> bool(res.ranks[0] < 20), bool(res.errors[0] <= 1e-4)
    (True, True)
    """
    arr = np.ascontiguousarray(check_stack(G), dtype=np.float64)
    tol_f = float(tol)
    if not (0.0 <= tol_f < 1.0):
        raise InvalidParameterError(f"tol must be in [0, 1), got {tol!r}", parameter="tol")
    if max_rank is not None and (
        isinstance(max_rank, (bool, np.bool_))
        or not isinstance(max_rank, numbers.Integral)
        or max_rank < 1
    ):
        raise InvalidParameterError(
            f"max_rank must be None or an integer ≥ 1, got {max_rank!r}", parameter="max_rank"
        )
    rank = arr.shape[1] if max_rank is None else min(int(max_rank), arr.shape[1])
    factors, ranks, errors = _core.low_rank(arr, tol_f, rank, check_n_threads(n_threads))
    n, total = arr.shape[1], int(np.sum(ranks))
    if total >= n:
        wide = [m for m, r in enumerate(ranks) if 2 * r > n]
        warnings.warn(
            f"the factors' total rank {total} is at least the number of points n = {n}"
            + (
                f" (kernels {wide[:5]}{'...' if len(wide) > 5 else ''} have rank > n/2)"
                if wide
                else ""
            )  # fmt: skip
            + ": they compress nothing, and every combination of kernels the solvers form "
            "costs n²·rank (n² per dense kernel); cap them with max_rank= or fit the dense "
            "stack",
            UserWarning,
            stacklevel=2,
        )
    return LowRankFactors(factors=factors, ranks=np.asarray(ranks, dtype=np.int64), errors=errors)


def _centered(K: NDArray[Any]) -> NDArray[np.float64]:
    """``H K H`` of ``K`` divided by its largest absolute entry (alignments are
    scale-invariant; the division keeps tiny or huge kernels from under- or overflowing)."""
    Kd = np.asarray(K, dtype=np.float64)
    scale = float(np.abs(Kd).max())
    if scale > 0.0:
        Kd = Kd / scale
    r = Kd.mean(axis=1)
    out: NDArray[np.float64] = Kd - r[:, None] - r[None, :] + r.mean()
    return out


def alignment(G: Any, y: Any = None) -> NDArray[np.float64]:
    """Centred kernel alignment (Cortes et al.; Kloft et al. §5.3).

    ``A(K, L) = <K_c, L_c>_F / (||K_c||_F ||L_c||_F)`` with ``K_c = H K H`` the centred kernel.
    Alignments do not depend on the scale of a kernel or of ``y``: each is divided by its
    largest absolute entry first, so that tiny or huge kernels neither underflow nor
    overflow.

    Parameters
    ----------
    G : ndarray of shape (M, n, n)
        Kernel stack, finite.
    y : array-like of shape (n,), optional
        Targets, finite. When given, the kernel–target alignments ``A(K_m, y yᵀ)`` are
        returned.

    Returns
    -------
    ndarray of shape (M, M) when ``y`` is None, else of shape (M,)
        Alignments in [-1, 1]; a kernel that is zero after centring has alignment 0.

    Raises
    ------
    ValueError
        ``G`` is not a stack of square kernels, ``G`` or ``y`` has NaN or infinite entries
        (:class:`~multikernel.exceptions.NonFiniteError`), or ``y`` has not n entries.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import alignment
    >>> y = np.array([1.0, 1.0, -1.0, -1.0])
    >>> G = np.stack([np.outer(y, y), np.eye(4)])
    >>> alignment(G, y).round(3)
    array([1.   , 0.577])
    >>> alignment(G).round(3)
    array([[1.   , 0.577],
           [0.577, 1.   ]])
    """
    arr = check_stack(G)
    M, n, _ = arr.shape
    for m in range(M):
        finite = np.isfinite(arr[m])
        if not finite.all():
            i, j = (int(v) for v in np.argwhere(~finite)[0])
            raise NonFiniteError(
                f"kernel {m} of G contains NaN or infinity (first at entry ({i}, {j}))",
                kernel=m,
                entry=(i, j),
            )
    if y is not None:
        yv = np.asarray(y, dtype=np.float64).ravel()
        if yv.shape[0] != n:
            raise InvalidInputError(f"y has {yv.shape[0]} entries but the kernels are {n}×{n}")
        if not np.isfinite(yv).all():
            raise NonFiniteError(
                f"y contains NaN or infinity (first at entry {int(np.argmin(np.isfinite(yv)))})"
            )
        y_scale = float(np.abs(yv).max())
        yc = yv / y_scale if y_scale > 0.0 else yv
        yc = yc - yc.mean()
        ynorm = float(yc @ yc)  # ||(y yᵀ)_c||_F = ||H y||²
        # <K_c, y yᵀ> = (H y)ᵀ K_c (H y): one quadratic form per (scaled, centred) kernel.
        num = np.empty(M)
        norms = np.empty(M)
        for m in range(M):
            Kc = _centered(arr[m])
            num[m] = yc @ Kc @ yc
            norms[m] = np.linalg.norm(Kc)
        den = norms * ynorm
        out: NDArray[np.float64] = np.divide(num, den, out=np.zeros(M), where=den > 0)
        return out
    flat = np.empty((M, n * n))
    for m in range(M):
        flat[m] = _centered(arr[m]).ravel()
    inner = flat @ flat.T
    d = np.sqrt(np.clip(np.diag(inner), 0.0, None))
    den = np.outer(d, d)
    res: NDArray[np.float64] = np.divide(inner, den, out=np.zeros((M, M)), where=den > 0)
    return res
