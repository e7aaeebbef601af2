"""Kernels of user-supplied distance matrices: :func:`from_distances` turns one square
training distance matrix per view into the stack ``exp(-D / (w D̄))`` over a set of widths,
and the :class:`DistanceKernels` it returns computes the cross blocks of new points with the
same scale ``D̄`` (Nath et al.'s χ²-distance kernels; the Oxford flowers data ship as such
matrices)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..exceptions import (
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDError,
    NonFiniteError,
)
from ._stacks import shift_to_psd, validate_stack

__all__ = ["DistanceKernels", "from_distances"]

#: Asymmetry tolerated in a training distance matrix, relative to its largest entry.
_SYMMETRY_RTOL = 1e-10


def _is_matrix(item: Any) -> bool:
    """Whether ``item`` is 2-D (an array, or a nested sequence of rows)."""
    try:
        return bool(np.ndim(item) == 2)
    except (TypeError, ValueError):
        return False


def _views(D: Any, what: str) -> list[NDArray[np.float64]]:
    """``D`` as a list of 2-D float64 matrices: one array, or a list of them (one per view)."""
    # A list of 2-D items is a list of views; a nested list of numbers is one matrix.
    many = isinstance(D, (list, tuple)) and all(_is_matrix(item) for item in D)
    items = list(D) if many else [D]
    if not items:
        raise InvalidInputError(f"{what} must hold at least one distance matrix")
    out = []
    for v, item in enumerate(items):
        try:
            arr = np.asarray(item, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise InvalidInputError(
                f"{what} view {v} is not a numeric matrix: {err}", kernel=None
            ) from None
        if arr.ndim != 2:
            raise InvalidInputError(
                f"{what} view {v} must be a 2-D distance matrix, got shape {arr.shape}"
            )
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            i, j = (int(t) for t in bad[0])
            raise NonFiniteError(
                f"{what} view {v} has the non-finite distance {arr[i, j]} at ({i}, {j})",
                entry=(i, j),
            )
        neg = np.argwhere(arr < 0.0)
        if neg.size:
            i, j = (int(t) for t in neg[0])
            raise InvalidInputError(
                f"{what} view {v} has the negative distance {arr[i, j]} at ({i}, {j}): "
                "distances are ≥ 0",
                entry=(i, j),
            )
        out.append(arr)
    return out


def _check_training(D: NDArray[np.float64], v: int) -> NDArray[np.float64]:
    """The training matrix of view ``v``, checked square, zero on the diagonal and symmetric
    (within ``1e-10`` of its largest entry, then made exactly symmetric)."""
    n, p = D.shape
    if n != p or n < 2:
        raise InvalidInputError(
            f"D view {v} must be a square training distance matrix (n, n) with n ≥ 2, got "
            f"shape {D.shape} (the cross distances of new points go to transform)"
        )
    diag = np.flatnonzero(np.diagonal(D))
    if diag.size:
        i = int(diag[0])
        raise InvalidInputError(
            f"D view {v} has the non-zero diagonal entry D[{i}, {i}] = {D[i, i]}: a point's "
            "distance to itself is 0",
            entry=(i, i),
        )
    gap = np.abs(D - D.T)
    top = float(D.max())
    if float(gap.max()) > _SYMMETRY_RTOL * top:
        i, j = (int(t) for t in np.unravel_index(int(np.argmax(gap)), gap.shape))
        raise InvalidInputError(
            f"D view {v} is not symmetric: D[{i}, {j}] = {D[i, j]} but D[{j}, {i}] = "
            f"{D[j, i]}; a distance matrix is symmetric (symmetrise it, e.g. (D + D.T) / 2, "
            "if that is what you mean)",
            entry=(i, j),
        )
    if top == 0.0:
        raise InvalidInputError(
            f"D view {v} is all zeros: its mean off-diagonal distance, the scale of the "
            "kernels, is 0"
        )
    sym: NDArray[np.float64] = 0.5 * (D + D.T)
    return sym


def _widths(widths: Any) -> tuple[float, ...]:
    items = [widths] if isinstance(widths, numbers.Real) else list(widths)
    if not items or not all(
        isinstance(w, numbers.Real) and not isinstance(w, bool) and 0.0 < float(w) < math.inf
        for w in items
    ):
        raise InvalidParameterError(
            f"widths must be positive finite numbers (at least one), got {widths!r}",
            parameter="widths",
        )
    return tuple(float(w) for w in items)


class DistanceKernels:
    """The kernels ``exp(-D / (w D̄))`` of distance matrices, fitted by :func:`from_distances`.

    For each view ``v`` (a training distance matrix ``D_v``) and each width ``w``, kernel
    ``m = v · len(widths) + index of w`` is ``exp(-D_v / (w D̄_v))``, with ``D̄_v`` the mean
    off-diagonal entry of the training matrix. ``stack_`` holds the training stack;
    :meth:`transform` computes the cross kernels of new points from their distances to the
    training points, with the same ``D̄_v`` (training shifts are not applied to them: a
    shift is a ridge on the training diagonal only, as with :func:`shift_to_psd`). Made by
    :func:`from_distances`, not by hand.

    Parameters
    ----------
    widths : tuple of float
        The widths ``w``.
    mean_distances : ndarray of shape (n_views,)
        ``D̄_v`` of each view.
    stack : ndarray of shape (M, n, n)
        The training kernels.
    shifts : ndarray of shape (M,)
        The diagonal shift added to each training kernel.
    scales : ndarray of shape (n_views,), optional
        The largest training distance of each view, by which every distance is divided
        before anything else is computed; None: ``mean_distances`` (kernels made before it).
    relative_means : ndarray of shape (n_views,), optional
        ``D̄_v`` divided by ``scales``, the mean of the divided training distances (ones when
        ``scales`` is None).

    Attributes
    ----------
    widths : tuple of float
        The widths ``w``.
    mean_distances_ : ndarray of shape (n_views,)
        ``D̄_v``, the mean off-diagonal training distance of each view.
    stack_ : ndarray of shape (M, n, n)
        The training kernels, ``M = n_views · len(widths)``, view-major.
    shifts_ : ndarray of shape (M,)
        The diagonal shift added to each training kernel (all 0 unless ``shift=True`` was
        asked for and needed).
    scales_ : ndarray of shape (n_views,)
        The largest training distance of each view: the kernels are computed from the
        distances divided by it, ``exp(-(D / s) / (w · mean(D / s)))``, so that they do not
        depend on the scale of ``D`` (distances of 1e-320 or 1e300 give the kernels of the same
        distances at scale 1, where ``1 / (w D̄)`` would overflow or ``D̄`` underflow).
    n_train_ : int
        The number of training points ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import cdist
    >>> from multikernel.kernels import from_distances
    >>> rng = np.random.default_rng(0)
    >>> X, X_new = rng.random((8, 3)), rng.random((2, 3))
    >>> K = from_distances(cdist(X, X), widths=[0.5, 1.0])
    >>> K.stack_.shape, K.transform(cdist(X_new, X)).shape
    ((2, 8, 8), (2, 2, 8))
    """

    def __init__(
        self,
        widths: tuple[float, ...],
        mean_distances: NDArray[np.float64],
        stack: NDArray[np.float64],
        shifts: NDArray[np.float64],
        *,
        scales: NDArray[np.float64] | None = None,
        relative_means: NDArray[np.float64] | None = None,
    ) -> None:
        self.widths = widths
        self.mean_distances_ = mean_distances
        self.stack_ = stack
        self.shifts_ = shifts
        self.n_train_ = int(stack.shape[1])
        self.scales_ = mean_distances if scales is None else scales
        self._relative_means = (
            np.ones(len(mean_distances)) if scales is None or relative_means is None
            else relative_means
        )  # fmt: skip

    @property
    def n_views(self) -> int:
        """The number of distance views."""
        return len(self.mean_distances_)

    def _kernels(self, views: list[NDArray[np.float64]]) -> NDArray[np.float64]:
        """``exp(-D_v / (w D̄_v))`` for every view and width, view-major, computed from
        ``D_v / s_v`` (``scales_``) and the mean of the training ``D_v / s_v``."""
        # Kernels pickled before the scales were kept: the mean distance is the scale.
        scales = getattr(self, "scales_", self.mean_distances_)
        rel = getattr(self, "_relative_means", np.ones(len(scales)))
        return np.stack(
            [
                np.exp((D / s) * (-1.0 / (w * r)))
                for D, s, r in zip(views, scales, rel, strict=True)
                for w in self.widths
            ]
        )

    def transform(self, D_new: Any) -> NDArray[np.float64]:
        """The cross kernels of new points from their distances to the training points.

        Parameters
        ----------
        D_new : array-like of shape (n_new, n), or a list of them (one per view)
            ``D_new[i, j]`` the distance of new point ``i`` to training point ``j``, in the
            views' order.

        Returns
        -------
        ndarray of shape (M, n_new, n)
            ``exp(-D_new_v / (w D̄_v))``, with the training ``D̄_v``.

        Raises
        ------
        InvalidInputError
            A different number of views or of training columns, a negative distance, or a
            non-finite one (:class:`~multikernel.exceptions.NonFiniteError`).

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import from_distances
        >>> D = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
        >>> K = from_distances(D, widths=[1.0])
        >>> K.transform([[0.0, 1.0, 2.0]])[0, 0] == K.stack_[0, 0]
        array([ True,  True,  True])
        """
        views = _views(D_new, "D_new")
        if len(views) != self.n_views:
            raise InvalidInputError(
                f"D_new has {len(views)} views, but the kernels were fitted on {self.n_views}"
            )
        for v, D in enumerate(views):
            if D.shape[1] != self.n_train_:
                raise InvalidInputError(
                    f"D_new view {v} has {D.shape[1]} columns, but there are {self.n_train_} "
                    "training points: D_new[i, j] is the distance of new point i to training "
                    "point j"
                )
        return self._kernels(views)

    def __repr__(self) -> str:
        return (
            f"DistanceKernels(n_views={self.n_views}, widths={list(self.widths)}, "
            f"n_train={self.n_train_})"
        )


def from_distances(
    D: Any,
    widths: Sequence[float] | float = (0.5, 1.0, 2.0),
    *,
    shift: bool = False,
    max_shift: float = 1.0,
) -> DistanceKernels:
    """Kernels ``exp(-D / (w D̄))`` of training distance matrices, over a set of widths.

    Each view's square matrix ``D`` (``D[i, j]`` the distance between training points ``i``
    and ``j``: χ² distances of image descriptors, edit distances, ...) gives one kernel per
    width ``w``, ``K = exp(-D / (w D̄))`` with ``D̄`` the mean off-diagonal entry of ``D``, so
    that the widths are relative to the typical distance. Such a kernel is PSD when ``D`` is
    a negative-type metric (e.g. Euclidean, ℓ1, χ²); other distances may give an indefinite
    kernel, which the solvers cannot use: the stack is checked (:func:`validate_stack`, then
    a Cholesky factorisation of each kernel, as in :func:`shift_to_psd`), and a kernel that is
    not PSD beyond rounding raises :class:`~multikernel.exceptions.KernelNotPSDError` unless
    ``shift=True``, which adds the smallest diagonal shift that makes it PSD
    (:func:`shift_to_psd`). Fit an estimator with ``kernels="precomputed"`` on
    ``DistanceKernels.stack_`` and predict on :meth:`DistanceKernels.transform` of the
    new points' distances to the training points.

    Parameters
    ----------
    D : array-like of shape (n, n), or a list of them (one per view)
        Training distances: finite, ≥ 0, symmetric (within ``1e-10`` of the largest entry;
        then symmetrised exactly), zero on the diagonal, not all zero.
    widths : sequence of float or float, default (0.5, 1.0, 2.0)
        Positive widths, relative to each view's mean distance.
    shift : bool, default False
        Repair kernels that are not PSD with :func:`shift_to_psd` (a ridge on the training
        diagonal, recorded in ``DistanceKernels.shifts_``) instead of refusing them.
    max_shift : float, default 1.0
        With ``shift=True``, the largest shift allowed, relative to the unit diagonal
        (``shift_to_psd``'s ``max_shift``).

    Returns
    -------
    DistanceKernels
        The training stack ``stack_`` of shape ``(n_views · len(widths), n, n)``, view-major,
        and :meth:`~DistanceKernels.transform` for new points.

    Raises
    ------
    InvalidInputError
        A matrix that is not square, has a negative distance, a non-zero diagonal entry, is
        not symmetric or is all zeros, or views of different sizes; a non-finite distance
        (:class:`~multikernel.exceptions.NonFiniteError`); a kernel that is not PSD without
        ``shift=True``, or that needs more than ``max_shift`` with it
        (:class:`~multikernel.exceptions.KernelNotPSDError`, naming the kernel). The error's
        ``entry`` names the offending entry.
    InvalidParameterError
        ``widths`` are not positive finite numbers.

    See Also
    --------
    DistanceKernels.transform : The cross kernels of new points.
    shift_to_psd : The repair ``shift=True`` applies.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import cdist
    >>> import multikernel as mk
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((40, 5))
    >>> y = np.where(X[:, 0] > 0.5, 1, -1)
    >>> D1, D2 = cdist(X, X, "cityblock"), cdist(X[:, :2], X[:, :2])
    >>> K = mk.kernels.from_distances([D1, D2], widths=[0.5, 1.0, 2.0])
    >>> K.stack_.shape
    (6, 40, 40)
    >>> D1_bar = D1[~np.eye(40, dtype=bool)].mean()
    >>> bool(np.allclose(K.stack_[1], np.exp(-D1 / D1_bar)))
    True
    >>> clf = mk.MKLClassifier(kernels="precomputed").fit(K.stack_, y)
    >>> X_new = rng.random((3, 5))
    >>> G_new = K.transform([cdist(X_new, X, "cityblock"), cdist(X_new[:, :2], X[:, :2])])
    >>> clf.predict(G_new).shape
    (3,)
    """
    ws = _widths(widths)
    if not isinstance(shift, (bool, np.bool_)):
        raise InvalidParameterError(f"shift must be a bool, got {shift!r}", parameter="shift")
    views = [_check_training(Dv, v) for v, Dv in enumerate(_views(D, "D"))]
    sizes = {Dv.shape[0] for Dv in views}
    if len(sizes) > 1:
        raise InvalidInputError(
            f"the views' distance matrices have different sizes {[Dv.shape[0] for Dv in views]}"
            ": every view holds the distances between the same training points"
        )
    n = views[0].shape[0]
    off = ~np.eye(n, dtype=bool)
    # Distances divided by their largest (> 0: an all-zero view is refused) before anything
    # else: 1 / (w D̄) overflows for subnormal distances, and D̄ for distances near the float
    # maximum; the divided distances lie in [0, 1] whatever the scale.
    scales = np.array([float(Dv.max()) for Dv in views])
    rel = np.array([float((Dv[off] / s).mean()) for Dv, s in zip(views, scales, strict=True)])
    fitted = DistanceKernels(
        ws, scales * rel, np.empty((0, n, n)), np.zeros(0), scales=scales, relative_means=rel
    )
    stack = validate_stack(fitted._kernels(views))
    if shift:
        stack, shifts = shift_to_psd(stack, max_shift=max_shift)
    else:
        try:
            shift_to_psd(stack, max_shift=0.0)
        except KernelNotPSDError as err:
            m = int(err.kernel) if err.kernel is not None else 0
            v, w = divmod(m, len(ws))
            raise KernelNotPSDError(
                f"the kernel exp(-D / (w D̄)) of view {v} at width {ws[w]:g} (kernel {m}) is "
                f"not positive semidefinite: the distances are not of negative type. Pass "
                f"shift=True to add the smallest diagonal shift that makes it PSD "
                f"(shift_to_psd), try other widths, or use another distance. ({err})",
                kernel=m,
            ) from None
        shifts = np.zeros(len(stack))
    return DistanceKernels(ws, scales * rel, stack, shifts, scales=scales, relative_means=rel)
