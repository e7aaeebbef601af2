"""Regularization paths of block-ℓ1 MKL (Bach, Thibaux & Jordan): :func:`mkl_path` and the
:class:`MKLPath` it returns (docs/mathematics.md §5)."""

from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_array

from . import _core, _progress
from ._base import default_kernels
from ._data import Blocks, Dense, TestSide, TestStack, scatter_kept
from ._sources import PATH, Input, check_targets, resolve
from ._typing import Normalization, PsdRepair
from ._validation import (
    Points,
    check_n_threads,
    check_points,
    check_psd,
    check_sample_weight,
    check_verbose,
    check_weighted_classes,
    has_sequences,
    is_sparse,
)
from .exceptions import InvalidInputError, InvalidParameterError
from .kernels import FeatureBank, Kernel, KernelBank

__all__ = ["MKLPath", "PathLoss", "mkl_path"]

#: Losses of the path: those whose conjugate is smooth inside its domain.
PathLoss: TypeAlias = Literal["squared", "logistic"]


@dataclass(frozen=True, eq=False)
class MKLPath:
    """A regularization path of ``C Σ_i ℓ(y_i, f(x_i)) + Σ_j d_j ‖f_j‖`` (no intercept).

    Each point is the centre of the log-barrier problem at its ``C``, certified by a primal
    value, a dual value and their relative gap (at most ``tol``, or about ``mu/2`` per active
    kernel, absolute, for a fixed ``mu``). Returned by :func:`mkl_path`; not built by hand.

    Parameters
    ----------
    Cs : ndarray of shape (n_points,)
        Increasing values of ``C`` (``C = 1/λ`` of the paper).
    alphas : ndarray of shape (n_points, n_train)
        The dual variables ``α``; the model at a point is ``A[j] = −η_j α``.
    kernel_weights : ndarray of shape (n_points, M)
        ``η_j``, the kernel weights (``‖f_j‖ = η_j sqrt(αᵀK_jα)``); exactly 0 for the kernels
        off their boundary when leaving them out gives the smaller primal value (the better
        certificate).
    kernel_norms : ndarray of shape (n_points, M)
        ``‖f_j‖`` in each RKHS.
    d : ndarray of shape (M,)
        The penalty weights used.
    kinks : tuple of int
        Indices of the points where the set of active kernels (barrier slack below
        ``sqrt(mu)·d_j²``) differs from the previous point's.
    n_corrector_steps : ndarray of shape (n_points,)
        Newton steps of the corrector at each point.
    primal_objectives, dual_objectives, duality_gaps : ndarray of shape (n_points,)
        The certificate of each point (relative gap ``(P − D)/|P|``).
    C0 : float
        The largest ``C`` at which ``f = 0`` is optimal.
    loss : {"squared", "logistic"}
        The loss.
    mu : float or None
        The fixed barrier weight, None when it followed ``tol``.
    tol : float
        The relative gap promised at every point (when ``mu`` is None).
    mus : ndarray of shape (n_points,)
        The barrier weight of each point.
    end : {"complete", "max_points", "stalled"}
        Why the path ended.
    n_factorizations : int
        Cholesky factorisations of ``n×n`` Hessians, the path's cost.
    classes : ndarray of shape (2,) or None
        The labels of the logistic loss (``classes[1]`` is the positive class).
    kernel_bank : KernelBank, FeatureBank or None
        The fitted bank of ``kernels=`` specs, or the fitted copy of a ``kernels=``
        :class:`~multikernel.kernels.FeatureBank` (new points are then mapped by its
        ``transform``); None for a precomputed stack or low-rank factors.
    psd_shifts : ndarray of shape (M,)
        The shifts ``s_m`` that ``psd="clip"`` added to the kernels' diagonals (zeros when
        none was, always with ``psd="check"``, feature blocks and low-rank factors).
    feature_coefs : tuple of ndarray of shape (n_points, D_m), or None, default None
        For a path on feature blocks (``kernels=FeatureBank``) or low-rank factors: per kernel,
        the weights ``w_m = Φ_mᵀ A[m]`` of every point in that kernel's feature space (the
        columns of its block or factor ``Φ_m``), so that ``f_m(x) = φ_m(x)ᵀ w_m``; None for a
        dense stack.

    Examples
    --------
    >>> import numpy as np, multikernel as mk
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    >>> specs = [mk.kernels.Gaussian(sigma=1.0, features=[j]) for j in range(3)]
    >>> path = mk.mkl_path(X, y, kernels=specs)
    >>> int(np.argmax(path.kernel_norms[-1]))  # the kernel on the feature that matters
    0
    >>> path.decision_function(X[:2], C=10 * path.C0).shape
    (2,)
    """

    Cs: NDArray[np.float64]
    alphas: NDArray[np.float64]
    kernel_weights: NDArray[np.float64]
    kernel_norms: NDArray[np.float64]
    d: NDArray[np.float64]
    kinks: tuple[int, ...]
    n_corrector_steps: NDArray[np.int64]
    primal_objectives: NDArray[np.float64]
    dual_objectives: NDArray[np.float64]
    duality_gaps: NDArray[np.float64]
    C0: float
    loss: PathLoss
    mu: float | None
    tol: float
    mus: NDArray[np.float64]
    end: str
    n_factorizations: int
    classes: NDArray[Any] | None
    kernel_bank: KernelBank | FeatureBank | None
    psd_shifts: NDArray[np.float64]
    feature_coefs: tuple[NDArray[np.float64], ...] | None = None

    @property
    def dual_coefs(self) -> NDArray[np.float64]:
        """``(n_points, M, n_train)`` per-kernel coefficients ``A[j] = −η_j α``."""
        out: NDArray[np.float64] = -self.kernel_weights[:, :, None] * self.alphas[:, None, :]
        return out

    def coef_at(self, C: float) -> NDArray[np.float64]:
        """The per-kernel coefficients at ``C``.

        Zero below the first point (``C0/2``; the exact solution is zero for every
        ``C ≤ C0``, and the points up to ``C0`` hold only the barrier's smoothing, of the
        order of ``mu``), interpolated linearly in ``log C`` between points, the last point's
        beyond the end of the path.

        Parameters
        ----------
        C : float
            A positive loss weight.

        Returns
        -------
        ndarray of shape (M, n_train)
            ``A`` with ``f_j = K_j A[j]``.

        Raises
        ------
        InvalidParameterError
            If ``C`` is not a positive number.

        Examples
        --------
        >>> import numpy as np, multikernel as mk
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
        >>> path = mk.mkl_path(X, y, kernels=[mk.kernels.Gaussian(sigma=1.0, features=[j])
        ...                                   for j in range(3)])
        >>> bool(np.any(path.coef_at(0.4 * path.C0)))
        False
        >>> np.allclose(path.coef_at(float(path.Cs[3])), path.dual_coefs[3])
        True
        """
        if not (isinstance(C, numbers.Real) and not isinstance(C, bool) and C > 0):
            raise InvalidParameterError(f"C must be a positive number, got {C!r}", parameter="C")
        return self._at(self.dual_coefs, C)

    def _at(self, values: NDArray[np.float64], C: float) -> NDArray[np.float64]:
        """``values`` (one row per point, linear in the dual coefficients: ``dual_coefs`` or
        one kernel's ``feature_coefs``) at ``C``, as :meth:`coef_at` describes."""
        logs = np.log(self.Cs)
        x = float(np.log(C))
        if x < logs[0]:
            return np.zeros(values.shape[1:])
        if x >= logs[-1]:
            last: NDArray[np.float64] = values[-1]
            return last
        k = int(np.searchsorted(logs, x, side="right"))
        lo, hi = logs[k - 1], logs[k]
        w = (x - lo) / (hi - lo)
        out: NDArray[np.float64] = (1.0 - w) * values[k - 1] + w * values[k]
        return out

    def _decision(self, G: TestStack, C: float) -> NDArray[np.float64]:
        """``f`` at ``C`` on a test stack: dense kernels read ``coef_at(C)``, feature blocks
        (or factor rows) the feature weights at ``C``."""
        W = None if self.feature_coefs is None else [self._at(V, C) for V in self.feature_coefs]
        return G.decision(self.coef_at(C), 0.0, W)

    def decision_function(self, X: Any, C: float) -> NDArray[np.float64]:
        """``f(x) = Σ_j Σ_i A[j, i] k_j(x, x_i)`` at ``C``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (M, n_samples, n_train), or list
            New points, when the path was computed from ``kernels=`` specs or a
            ``kernels=FeatureBank`` (mapped by its fitted copy, ``kernel_bank``); else the
            cross kernels to the training points, ``k_m(x, x_i)`` (a precomputed stack, or
            low-rank factors: ``G_m(x) G_mᵀ`` or the exact kernels). After low-rank factors,
            also a list of ``M`` arrays of shape ``(n_samples, r_m)``: the rows of the new
            points in the same factorisation (e.g. of one factorisation of the training and
            test points together); a list is always read as such rows there.
        C : float
            Where on the path (see :meth:`coef_at`).

        Returns
        -------
        ndarray of shape (n_samples,)

        Raises
        ------
        InvalidInputError
            If a precomputed ``X`` does not have the shape of the path's stack, factor rows
            do not have the widths of the training factors, or new points have another
            number of features than the training points.

        Examples
        --------
        >>> import numpy as np, multikernel as mk
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
        >>> path = mk.mkl_path(X, y, kernels=[mk.kernels.Gaussian(sigma=1.0, features=[j])
        ...                                   for j in range(3)])
        >>> path.decision_function(X[:3], C=10 * path.C0).shape
        (3,)
        """
        self.coef_at(C)  # C checked before X
        M, n = self.kernel_weights.shape[1], self.alphas.shape[1]
        widths = None if self.feature_coefs is None else [W.shape[1] for W in self.feature_coefs]
        # Factor rows (or dense cross kernels) after a path on low-rank factors.
        side = TestSide(M, n, self.kernel_bank, widths, factors=self.kernel_bank is None)
        return self._decision(side.stack(X, _raw), C)

    def predict(self, X: Any, C: float) -> NDArray[Any]:
        """Labels (logistic loss) or values (squared loss) at ``C``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (M, n_samples, n_train), or list
            As in :meth:`decision_function`.
        C : float
            Where on the path.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``classes[f > 0]`` for the logistic loss, ``f`` for the squared loss.

        Examples
        --------
        >>> import numpy as np, multikernel as mk
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
        >>> path = mk.mkl_path(X, y, kernels=[mk.kernels.Gaussian(sigma=1.0, features=[j])
        ...                                   for j in range(3)])
        >>> bool(np.corrcoef(path.predict(X, C=100 * path.C0), y)[0, 1] > 0.9)
        True
        """
        f = self.decision_function(X, C)
        if self.classes is None:
            return f
        out: NDArray[Any] = self.classes[(f > 0).astype(int)]
        return out

    def plot(self, ax: Any = None, *, top: int = 10) -> Any:
        """Plot the kernel weights ``η`` against ``C`` (log scale), kinks marked.

        The ``top`` kernels of largest weight at the end of the path are coloured and named
        in the legend by their specification (``"kernel j"`` for a precomputed stack); the
        others are drawn in grey, their number in the legend. Needs matplotlib
        (``pip install multikernel[plot]``).

        Parameters
        ----------
        ax : matplotlib Axes or None, default None
            Where to draw; None: the axes of a new figure with a constrained layout, so that
            the labels and the legend survive a default ``savefig``.
        top : int, default 10
            How many kernels to name in the legend.

        Returns
        -------
        matplotlib Axes
            The axes drawn on.

        Raises
        ------
        InvalidParameterError
            ``top`` is not a non-negative integer.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np, multikernel as mk
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(40, 3))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
        >>> path = mk.mkl_path(X, y, kernels=[mk.kernels.Gaussian(sigma=1.0, features=[j])
        ...                                   for j in range(3)])
        >>> ax = path.plot()
        >>> [t.get_text() for t in ax.get_legend().get_texts()][0]
        'Gaussian(sigma=1.0, features=(0,))'
        """
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D

        if isinstance(top, bool) or not isinstance(top, numbers.Integral) or top < 0:
            raise InvalidParameterError(
                f"top must be a non-negative integer, got {top!r}", parameter="top"
            )
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
        W = self.kernel_weights
        M = W.shape[1]
        specs = getattr(self.kernel_bank, "specs", None)
        # Largest final weight first; ties (e.g. kernels at 0 at the end) by the path's peak.
        order = np.lexsort((-W.max(axis=0), -W[-1]))
        named = order[: min(int(top), M)]
        rest = np.setdiff1d(np.arange(M), named)
        for j in rest:  # under the named ones
            ax.plot(self.Cs, W[:, j], color="0.75", linewidth=0.6, zorder=1)
        handles = []
        for j in named:
            label = repr(specs[j]) if specs is not None else f"kernel {j}"
            handles += ax.plot(self.Cs, W[:, j], linewidth=1.4, zorder=2, label=label)
        if len(rest):
            other = f"{len(rest)} other kernels"
            handles.append(Line2D([], [], color="0.75", linewidth=0.6, label=other))
        for k in self.kinks:
            ax.axvline(self.Cs[k], color="0.7", linestyle=":", linewidth=0.8, zorder=0)
        ax.axvline(self.C0, color="0.4", linestyle="--", linewidth=0.8, zorder=0)
        ax.set_xscale("log")
        ax.set_xlabel("C (dashed: C0, below which f = 0; dotted: kinks)")
        ax.set_ylabel("kernel weight η")
        ax.set_title(f"mkl_path, {self.loss} loss, {M} kernels")
        if handles:
            some = len(rest) and len(named)
            title = f"largest {len(named)} at C = {self.Cs[-1]:.3g}" if some else None
            ax.legend(handles=handles, fontsize="small", loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), title=title, title_fontsize="small")  # fmt: skip
        return ax


def _raw(X: Any) -> NDArray[np.float64] | Points:
    """Raw points for a bank (sparse ones as CSR: :func:`check_points`)."""
    if has_sequences(X) or is_sparse(X):
        return check_points(X)
    out: NDArray[np.float64] = check_array(X, dtype=np.float64)
    return out


def _run_path(
    stack: Dense | Blocks,
    target: NDArray[np.float64],
    settings: _core.Settings,
    sw: NDArray[np.float64] | None,
    threads: int,
    log: _progress.IterationLog | None,
) -> tuple[_core.PathResult, NDArray[np.float64]]:
    """The engine's path and its ``alphas`` over all training points: samples of weight 0
    have no loss and are left out of the path (as libsvm leaves them out of a fit), with
    ``α = 0``."""
    if sw is None or bool(np.all(sw > 0)):
        r = _core.path(
            stack.engine, target, settings, n_threads=threads, on_iteration=log, sample_weight=sw
        )
        return r, np.asarray(r.alphas)
    keep = np.flatnonzero(sw > 0)
    r = _core.path(
        stack.subset(keep).engine, np.ascontiguousarray(target[keep]), settings,
        n_threads=threads, on_iteration=log, sample_weight=np.ascontiguousarray(sw[keep]),
    )  # fmt: skip
    return r, scatter_kept(np.asarray(r.alphas), keep, len(sw))


def _feature_coefs(
    alphas: NDArray[np.float64], eta: NDArray[np.float64], blocks: Sequence[NDArray[Any]]
) -> tuple[NDArray[np.float64], ...]:
    """Every point's weights ``w_m = Φ_mᵀ A[m] = −η_m Φ_mᵀ α`` per kernel, ``(n_points, D_m)``."""
    return tuple(
        np.ascontiguousarray(-eta[:, m, None] * (alphas @ F), dtype=np.float64)
        for m, F in enumerate(blocks)
    )


def _warn_uncentred(target: NDArray[np.float64], sw: NDArray[np.float64] | None) -> None:
    """Warn when real targets sit more than one standard deviation from 0 (weighted as the
    loss): the path has no intercept, so its kernels must fit that offset, poorly."""
    mean = float(np.average(target, weights=sw))
    spread = float(np.sqrt(np.average((target - mean) ** 2, weights=sw)))
    if abs(mean) > spread:
        warnings.warn(
            f"mkl_path fits no intercept, and y has mean {mean:.4g}, "
            f"{abs(mean) / spread if spread > 0 else math.inf:.3g} standard deviations from 0: "
            "the kernels must fit that offset and predictions are biased. Centre the targets "
            "(fit on y - y.mean() and add the mean to the predictions), or use "
            "MKLRegressorCV, which centres them",
            UserWarning,
            stacklevel=4,
        )


def mkl_path(
    X: Any,
    y: Any,
    *,
    kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
    loss: PathLoss = "squared",
    d: Any = None,
    tol: float = 1e-3,
    mu: float | None = None,
    C_max: float | None = None,
    max_points: int = 500,
    normalize: Normalization | None = "mean_diag",
    psd: PsdRepair = "check",
    n_threads: int = 0,
    verbose: int = 0,
    sample_weight: Any = None,
) -> MKLPath:
    """Follow the regularization path of block-ℓ1 MKL by predictor–corrector steps.

    The objective at ``C`` is ``C Σ_i ℓ(y_i, f(x_i)) + Σ_j d_j ‖f_j‖`` with
    ``f = Σ_j f_j`` and no intercept (Bach, Thibaux & Jordan, "Computing regularization paths
    for learning multiple kernels"). The path starts below ``C0``, the largest ``C`` at
    which ``f = 0``, and follows the log-barrier centres of the dual up to ``C_max``, with
    steps as long as the next centre stays within reach of a few Newton steps.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or (M, n, n), or LowRankFactors
        Training points (for ``kernels=`` specs or a FeatureBank), or a precomputed kernel
        stack (``kernels="precomputed"``, or ``kernels=None`` with a 3-D array), or low-rank
        factors ``K_m = G_m G_mᵀ`` (:func:`multikernel.kernels.low_rank`, with
        ``kernels="precomputed"`` or None). On factors (and feature blocks) of total rank
        ``R < n`` every Newton system is solved at size ``R × R`` (Woodbury) instead of
        ``n × n``; predictions after factors take the dense test kernels as for a precomputed
        stack, or the test points' rows of the factorisation (:meth:`MKLPath.decision_function`),
        and ``psd`` is not needed (``G Gᵀ`` is PSD).
    y : array-like of shape (n_samples,)
        Real targets (``squared``) or two class labels (``logistic``; the larger label, as
        sorted by numpy, is the positive class).
    kernels : sequence of Kernel, FeatureBank, "precomputed" or None, default None
        Kernel specifications evaluated on ``X``; a :class:`multikernel.kernels.FeatureBank`,
        whose copy is fitted on ``X`` (the parameter stays unfitted, as in the estimators)
        and whose feature blocks ``Φ_m`` are the path's low-rank factors, ``K_m = Φ_m Φ_mᵀ``
        (the bank's own ``normalize`` applies, and ``normalize``/``psd`` here are ignored;
        predictions then take new raw points, mapped by the fitted copy,
        ``MKLPath.kernel_bank``); "precomputed": ``X`` is a stack or low-rank factors; None: a
        precomputed stack if ``X`` is 3-D or factors, else
        :func:`multikernel.default_kernels`.
    loss : {"squared", "logistic"}, default "squared"
        The loss ``ℓ``; the path needs a conjugate that is smooth inside its domain, so the
        hinge-type losses are not available.
    d : array-like of shape (M,) or None, default None
        Penalty weights ``d_j > 0``. None: ``sqrt(tr K_j / n)``, which makes the path
        invariant to rescaling a kernel (``‖f_j‖`` scales like ``1/sqrt(s)`` when ``K_j``
        scales by ``s``), and is 1 for unit-diagonal kernels. Larger weights for richer
        kernels (the paper's advice) can be passed here.
    tol : float, default 1e-3
        The relative duality gap ``(P − D)/P`` promised at every point, in (0, 1). A barrier
        centre's gap is ``μ Σ_j r_j/(d_j + r_j)`` (``r_j = sqrt(αᵀK_jα)``, each term below
        1/2; kernels off their boundary are left out of the certified model, which removes
        their terms to first order). The barrier weight ``μ`` follows ``P`` along the path,
        keeping the measured gap near ``0.7·tol`` (the tangent includes ``dμ/dC``), and a
        point whose gap still exceeds ``tol`` is re-centred with a smaller ``μ`` at the same
        ``C`` (docs/mathematics.md §5). Ignored when ``mu`` is given.
    mu : float or None, default None
        A fixed barrier weight in (0, 1) instead: each point's absolute duality gap is then
        about ``mu/2`` per kernel at its boundary, so the relative gap is largest near
        ``C0``, where ``P`` is smallest. Smaller values follow the exact path more closely,
        with more points (roughly ``mu**(-1/3)``); below 1e-5 rounding limits the gap.
    C_max : float or None, default None
        Where the path ends; None: ``1000·C0``.
    max_points : int, default 500
        The most points the path may hold.
    normalize : {"mean_diag", "trace", "multiplicative", "spherical", "none"} or None
        Scaling of kernels evaluated from ``kernels=`` specs (ignored for a precomputed stack,
        factors and a FeatureBank, which has its own).
    psd : {"check", "clip"}, default "check"
        ``"clip"`` shifts the kernels to positive semi-definite ones first
        (:func:`multikernel.kernels.shift_to_psd`: ``K_m + s_m I``, recorded in
        ``MKLPath.psd_shifts``, one copy of the stack when some ``s_m > 0``); the path is then
        that of the shifted kernels, and the cross kernels of new points are unchanged.
        ``"check"`` uses the kernels as they are (the path refuses a kernel with a negative
        ``βᵀK_jβ`` at its start only).
    n_threads : int, default 0
        Threads of the engine, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or
        ``OMP_NUM_THREADS`` when that is set (joblib's workers set it to their share); ``-k`` all
        but ``k − 1``; ``k > 0`` that many, clipped to the available cores.
    verbose : int, default 0
        ``0``: silent. ``1``: INFO records on the ``multikernel`` logger once the path is
        done, one per point (its ``C``, active kernels and certificate) and a summary line
        (the engine reports a point without its ``C``, so the lines are written from the
        result). ``2`` or more: also a progress bar over the points while the path runs
        (tqdm, the ``progress`` extra; without it, as ``1``).
    sample_weight : array-like of shape (n_samples,) or None, default None
        A weight ``w_i ≥ 0`` on each sample's loss: the objective becomes
        ``C Σ_i w_i ℓ(y_i, f(x_i)) + Σ_j d_j ‖f_j‖`` (docs/mathematics.md §5, "Sample
        weights"). Integer weights give the path of the duplicated rows: the default ``d_j``
        is the weighted mean ``sqrt(Σ_i w_i K_j[i,i] / Σ_i w_i)``, and kernels computed from
        specifications weigh their normalisation statistics by ``w``. Samples of weight 0 are
        left out (their ``alphas`` are 0). None: every weight 1.

    Returns
    -------
    MKLPath

    Raises
    ------
    InvalidParameterError
        If a setting is invalid (loss, tol, mu, C_max at or below the start ``C0/2``, d,
        max_points, psd, n_threads, verbose), or low-rank factors come with kernel specs or a
        FeatureBank.
    InvalidInputError
        If ``X`` or ``y`` are invalid (shapes, non-finite values, factors with different
        numbers of rows, a FeatureBank with anything but raw 2-D points, not two classes for
        the logistic loss, a kernel that is not positive semi-definite, or with
        ``psd="clip"`` one too far from it to be shifted).

    Warns
    -----
    ConvergenceWarning
        When the path stops before ``C_max`` (``max_points`` reached, or the corrector
        failed at the last step); the points computed so far are returned.

    Examples
    --------
    >>> import numpy as np, multikernel as mk
    >>> from sklearn.datasets import load_diabetes
    >>> X, y = load_diabetes(return_X_y=True)
    >>> specs = [mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(4) for s in (0.05, 0.2)]
    >>> yc = (y[:100] - y[:100].mean()) / y.std()  # no intercept: centre the targets
    >>> path = mk.mkl_path(X[:100], yc, kernels=specs)
    >>> bool(np.all(np.diff(path.Cs) > 0))
    True

    Explicit features: the path on the feature blocks of a FeatureBank (the same path as on
    the dense stack ``Φ_m Φ_mᵀ``), predicting on new raw points:

    >>> bank = mk.kernels.FeatureBank(specs, n_components=20)
    >>> fpath = mk.mkl_path(X[:100], yc, kernels=bank)
    >>> fpath.kernel_bank is not bank, hasattr(bank, "params_")  # a fitted copy
    (True, False)
    >>> fpath.predict(X[100:103], C=10 * fpath.C0).shape
    (3,)
    """
    threads = _check_settings(loss, n_threads, verbose, psd, max_points)
    data, yv = resolve(
        kernels, X, y, accepts=PATH, points=lambda Xr, yr: (_raw(Xr), yr),
        default_specs=default_kernels, normalize=normalize, n_threads=threads, verbose=verbose,
        sample_weight=sample_weight,
    )  # fmt: skip
    if loss == "logistic":
        # As the estimators: a class whose samples all weigh 0 has nothing to learn it
        # from (checked on the caller's data, not in the CV estimators' folds).
        classes, yi = np.unique(np.asarray(yv), return_inverse=True)
        if classes.shape[0] == 2:
            check_weighted_classes(check_sample_weight(sample_weight, data.n), yi, classes)
    return _follow(
        data, yv, loss=loss, d=d, tol=tol, mu=mu, C_max=C_max, max_points=max_points, psd=psd,
        threads=threads, verbose=verbose, sample_weight=sample_weight,
    )  # fmt: skip


def _check_settings(loss: str, n_threads: int, verbose: int, psd: str, max_points: int) -> int:
    """The path's own checks (the engine's settings check the rest): the thread count."""
    if loss not in ("squared", "logistic"):
        raise InvalidParameterError(
            f"loss must be 'squared' or 'logistic' (a conjugate smooth inside its domain), "
            f"got {loss!r}",
            parameter="loss",
        )
    threads = check_n_threads(n_threads)
    check_verbose(verbose)
    check_psd(psd)
    if isinstance(max_points, bool) or not isinstance(max_points, numbers.Integral):
        raise InvalidParameterError(
            f"max_points must be an integer ≥ 2, got {max_points!r}", parameter="max_points"
        )
    return threads


def path_on(
    data: Input,
    y: Any,
    *,
    loss: PathLoss,
    d: Any,
    tol: float,
    mu: float | None,
    psd: PsdRepair = "check",
    n_threads: int = 0,
    verbose: int = 0,
    sample_weight: Any = None,
) -> MKLPath:
    """:func:`mkl_path` on a training input resolved once (the CV estimators' folds), with
    its checks; warnings of a path that stops early are the caller's to filter."""
    threads = _check_settings(loss, n_threads, verbose, psd, 500)
    return _follow(
        data, check_targets(y, data.n), loss=loss, d=d, tol=tol, mu=mu, C_max=None,
        max_points=500, psd=psd, threads=threads, verbose=verbose, sample_weight=sample_weight,
    )  # fmt: skip


def _follow(
    data: Input,
    yv: Any,
    *,
    loss: PathLoss,
    d: Any,
    tol: float,
    mu: float | None,
    C_max: float | None,
    max_points: int,
    psd: PsdRepair,
    threads: int,
    verbose: int,
    sample_weight: Any,
) -> MKLPath:
    """The path on a resolved input with checked settings; its warnings point at the caller
    of :func:`mkl_path` or :func:`path_on`."""
    sw = check_sample_weight(sample_weight, data.n)
    stack, shifts = data.stack.repair(psd, threads)
    if not isinstance(stack, (Dense, Blocks)):
        # resolve() computes no kernels on demand for the path: its Newton systems need them.
        raise InvalidInputError("the path needs a stored kernel stack or explicit features")
    M = stack.M
    classes: NDArray[Any] | None = None
    if loss == "logistic":
        classes = np.unique(yv)
        if classes.shape[0] != 2:
            raise InvalidInputError(
                f"the logistic path needs exactly two classes, got {classes.shape[0]}"
            )
        target = np.where(yv == classes[1], 1.0, -1.0)
    else:
        try:
            target = np.asarray(yv, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"y must be numeric for the squared loss: {e}") from None
        if not np.isfinite(target).all():
            raise InvalidInputError("y contains NaN or infinity")
        _warn_uncentred(target, sw)
    weights = None
    if d is not None:
        dv = np.asarray(d, dtype=np.float64)
        if dv.shape != (M,):
            raise InvalidParameterError(
                f"d must have one weight per kernel ({M}), got shape {dv.shape}",
                parameter="d",
            )
        weights = [float(v) for v in dv]
    settings = _core.Settings(
        "path",
        {
            "loss": loss,
            "mu": mu,
            "tol": tol,
            "C_max": C_max,
            "max_points": max_points,
            "d": weights,
        },
    )
    started = time.perf_counter()
    # The engine's record of a point carries no C: the points are logged with their C from
    # the result (_log_path); during the path only a bar (verbose ≥ 2) follows the points.
    with _progress.iteration_log("mkl_path", 2 if verbose >= 2 else 0, None, "point") as log:
        if log is not None and log.bar is None:
            log = None  # no tqdm: the table after the path says it all
        r, alphas = _run_path(stack, target, settings, sw, threads, log)
    path = MKLPath(
        Cs=np.asarray(r.cs),
        alphas=alphas,
        kernel_weights=np.asarray(r.eta),
        kernel_norms=np.asarray(r.kernel_norms),
        d=np.asarray(r.weights),
        kinks=tuple(r.kinks),
        n_corrector_steps=np.asarray(r.corrector_steps),
        primal_objectives=np.asarray(r.primal),
        dual_objectives=np.asarray(r.dual),
        duality_gaps=np.asarray(r.gap),
        C0=float(r.c0),
        loss=loss,
        mu=None if mu is None else float(mu),
        tol=float(tol),
        mus=np.asarray(r.mu),
        end=r.end,
        n_factorizations=int(r.factorizations),
        classes=classes,
        kernel_bank=data.bank,
        psd_shifts=shifts,
        feature_coefs=(
            _feature_coefs(alphas, np.asarray(r.eta), stack.F)
            if isinstance(stack, Blocks)
            else None
        ),
    )
    if r.end != "complete":
        why = (
            f"max_points={max_points} was reached"
            if r.end == "max_points"
            else "the corrector failed even for tiny steps (ill-conditioning; try a larger mu "
            "or a smaller C_max)"
        )
        warnings.warn(
            f"mkl_path stopped at C = {path.Cs[-1]:.4g} before C_max: {why}; returning "
            f"{path.Cs.shape[0]} points",
            ConvergenceWarning,
            stacklevel=3,
        )
    # With μ following P every point is promised within tol; where float64 cannot resolve the
    # loss against C (C_max = 1e300), the corrector stops above it: say so, never pretend.
    over = np.flatnonzero(path.duality_gaps > tol)
    if mu is None and over.size:
        warnings.warn(
            f"{over.size} of the {path.Cs.shape[0]} path points are not certified within "
            f"tol={tol:g} (the first at C = {path.Cs[over[0]]:.4g}, relative gaps up to "
            f"{path.duality_gaps[over].max():.3g}); a larger C exceeds what float64 resolves "
            "here: lower C_max",
            ConvergenceWarning,
            stacklevel=3,
        )
    if verbose:
        _log_path(path, time.perf_counter() - started)
    return path


def _log_path(path: MKLPath, seconds: float) -> None:
    """``verbose``'s records of a path, after it: one line per point with its ``C`` (the
    engine's per-point callback has none, so the lines are written from the result, a
    table once the path is done rather than lines without C during it), then a summary."""
    n, M = path.Cs.shape[0], path.d.shape[0]
    active = np.count_nonzero(path.kernel_weights > 0, axis=1)
    width = len(str(n))
    for i in range(n):
        _progress.info(
            "mkl_path point %*d/%d: C %.6e, %*d of %d kernels active, %s",
            width, i + 1, n, path.Cs[i], len(str(M)), active[i], M,
            _progress.certificate(
                path.primal_objectives[i], path.dual_objectives[i], path.duality_gaps[i]
            ),
        )  # fmt: skip
    worst = float(path.duality_gaps.max())
    within = (
        f"every point within tol {path.tol:g}"
        if path.mu is None and worst <= path.tol
        else f"{int(np.count_nonzero(path.duality_gaps > path.tol))} points above tol {path.tol:g}"
        if path.mu is None
        else f"fixed mu {path.mu:g}"
    )
    how = "complete" if path.end == "complete" else f"stopped early ({path.end})"
    _progress.info(
        "mkl_path: %s, %d points from C %.4e to %.4e (C0 %.4e), %.2f s, %d factorizations: "
        "%s, largest gap %.3e; %d of %d kernels active at the last point",
        how, n, path.Cs[0], path.Cs[-1], path.C0, seconds, path.n_factorizations, within,
        worst, active[-1], M,
    )  # fmt: skip
