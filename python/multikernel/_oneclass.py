"""One-class multiple kernel learning: :class:`MKLOneClass` (scikit-learn's ``OneClassSVM``
conventions) on the ℓp-norm penalty."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.base import OutlierMixin

from . import _core
from ._auto import Choice
from ._base import BaseMKL, default_kernels, publishes
from ._config import Setting
from ._sources import ONE_CLASS
from ._typing import Normalization, PsdRepair
from ._validation import check_bool, check_psd, check_verbose
from .exceptions import InvalidInputError, InvalidParameterError
from .kernels import FeatureBank, Gaussian, Kernel

__all__ = ["MKLOneClass"]

#: Decision values this close to 0 (relative to ρ) are on the boundary.
_BOUNDARY = 1e-10


class MKLOneClass(OutlierMixin, BaseMKL):  # type: ignore[misc]
    """One-class ℓp-norm multiple kernel learning (novelty and outlier detection).

    The one-class SVM of Schölkopf et al. on a learned combination ``Σ_m θ_m K_m`` of the
    kernels, ``‖θ‖_p ≤ 1`` (Kloft et al.'s Algorithm 1 around libsvm's one-class solver): it
    minimises, in scikit-learn's ``OneClassSVM`` scale,

        ``P = ½ (Σ_m ‖f_m‖^q)^{2/q} + Σ_i max(0, ρ − f(x_i)) − ν n ρ``,  ``q = 2p/(p+1)``,

    over ``f = Σ_m f_m`` and the offset ρ (docs/mathematics.md §3.7); its dual
    ``D(α) = −½ ‖(αᵀK_mα)_m‖_{p*}`` over ``0 ≤ α ≤ 1``, ``Σα = νn`` certifies every fit. With
    one kernel it is ``OneClassSVM(kernel="precomputed", nu=nu)``, with or without
    ``sample_weight``. Only ``penalty="lp"``: the
    SpicyMKL solver of ``l1`` handles losses of ``(y, f(x))``, and the one-class objective is
    not one (its ``−νnρ`` term couples the offset to ν).

    Parameters
    ----------
    kernels : sequence of Kernel, FeatureBank, "precomputed" or None, default None
        As for :class:`MKLClassifier`. None means the three Gaussian kernels of
        :func:`default_kernels` (widths 0.5, 1 and 2 times sqrt(n_features)): the region
        ``f(x) ≥ ρ`` bounds the data only for kernels with a constant ``k(x, x)``; with linear
        or polynomial kernels points far out along the data's mean direction score high.
    penalty : {"lp"}, default "lp"
        The penalty (ℓp-norm MKL).
    p : float, default 2.0
        The norm ``p ∈ [1, ∞]`` of the kernel weights (``numpy.inf``: the unweighted sum).
    nu : float, default 0.5
        ``ν ∈ (0, 1]``: an upper bound on the fraction of training points outside the
        region (``decision_function < 0``) and a lower bound on the fraction of support
        vectors, as in ``OneClassSVM``.
    tol : float, default 1e-3
        Stop when the relative duality gap is at most this.
    max_iter : int, default 200
        Outer iterations (θ updates) at most.
    normalize : str or None, default "mean_diag"
        Kernel normalisation (``"mean_diag"``, ``"trace"``, ``"multiplicative"``,
        ``"spherical"``, ``"none"`` or None), as for :class:`MKLClassifier`.
    psd : {"check", "clip"}, default "check"
        ``"clip"`` shifts the training kernels to positive semi-definite ones before the fit
        (``K_m + s_m I``, recorded in ``psd_shifts_``), as for :class:`MKLClassifier`.
    n_threads : int, default 0
        Threads of the engine, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or
        ``OMP_NUM_THREADS`` when that is set (joblib's workers set it to their share); ``-k`` all
        but ``k − 1``; ``k > 0`` that many, clipped to the available cores.
    verbose : int, default 0
        ``0``: silent. ``1``: one INFO record per outer iteration (its certificate, active
        kernels, seconds) and a summary line at the end of the fit on the ``multikernel``
        logger. ``2`` or more: a progress bar over the iterations instead of their lines
        (tqdm, the ``progress`` extra; without it, as ``1``).

    Attributes
    ----------
    dual_coef_ : ndarray of shape (M, n_train)
        Per-kernel coefficients ``A[m] = θ_m α`` (libsvm's ``α``, summing to ``νn``):
        ``score_samples(x) = Σ_m Σ_i A[m, i] k_m(x, x_i)``.
    intercept_ : float
        ``−ρ``.
    offset_ : float
        ``ρ``: ``decision_function = score_samples − offset_``, as in ``OneClassSVM``.
    kernel_weights_ : ndarray of shape (M,)
        θ, of unit p-norm.
    kernel_norms_ : ndarray of shape (M,)
        ``‖f_m‖`` in each kernel's space.
    primal_objective_, dual_objective_, duality_gap_ : float
        The certificate: ``P``, ``D`` and ``(P − D)/|P|``.
    n_iter_, solvers_, solver_iterations_, stack_passes_, converged_, history_, \
kernel_bank_, n_features_in_, n_kernels_, n_train_, psd_shifts_
        As for :class:`MKLClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> det = mk.MKLOneClass(nu=0.1).fit(X)
    >>> bool(np.mean(det.predict(X) == -1) <= 0.1 + 1e-9)  # ν bounds the outlier fraction
    True
    >>> det.predict(np.array([[0.0, 0.0], [6.0, 6.0]]))
    array([ 1, -1])
    """

    # One problem: the certificate's scalars are scalars (the base declares them ``Any``).
    intercept_: float
    primal_objective_: float
    dual_objective_: float
    duality_gap_: float
    n_iter_: int
    converged_: bool

    #: Its one solver (not a parameter: one-class MKL has no other).
    solver = "one_class"

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
        penalty: Literal["lp"] = "lp",
        p: float = 2.0,
        nu: float = 0.5,
        tol: float = 1e-3,
        max_iter: int = 200,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        n_threads: int = 0,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.penalty = penalty
        self.p = p
        self.nu = nu
        self.tol = tol
        self.max_iter = max_iter
        self.normalize = normalize
        self.psd = psd
        self.n_threads = n_threads
        self.verbose = verbose

    @staticmethod
    def _default_kernels(n_features: int) -> list[Kernel]:
        return [k for k in default_kernels(n_features) if isinstance(k, Gaussian)]

    def _settings(self) -> _core.Settings:
        if self.penalty != "lp":
            raise InvalidParameterError(
                f"MKLOneClass supports penalty='lp' only; got {self.penalty!r}",
                parameter="penalty",
            )
        check_verbose(self.verbose)
        check_psd(self.psd)
        named: dict[str, Setting] = {
            "p": self.p,
            "nu": self.nu,
            "tol": self.tol,
            "max_iter": self.max_iter,
        }
        return _core.Settings("one_class", named)

    @publishes
    def fit(
        self, X: Any, y: Any = None, sample_weight: Any = None, check_input: bool = True
    ) -> MKLOneClass:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n, n)
            Training points (``scipy.sparse`` too, for kernel specifications: docs/guide.md,
            "Sparse data"), or the training kernel stack for ``kernels="precomputed"``.
        y : None
            Ignored (present for the scikit-learn API).
        sample_weight : array-like of shape (n_samples,), optional
            A weight per sample, as ``OneClassSVM.fit`` takes it: the loss becomes
            ``Σ_i w_i max(0, ρ − f(x_i)) − ν W ρ`` with ``W = Σ_i w_i`` (the dual's box
            ``0 ≤ α_i ≤ w_i``, ``Σ α = νW``), so integer weights equal duplicated rows;
            kernels computed from ``X`` weigh their normalisation statistics by it. Samples
            of weight 0 are left out (coefficient 0).
        check_input : bool, default True
            False skips :func:`~multikernel.kernels.validate_stack`'s read of a dense
            precomputed stack (shape and dtype are still checked), for a stack known to be
            valid, as scikit-learn's ``Lasso.fit``; see docs/guide.md §6. Ignored for other
            inputs.

        Returns
        -------
        MKLOneClass
            ``self``, fitted. A fit that does not reach ``tol`` within ``max_iter`` warns
            with a ``ConvergenceWarning``; one whose dual point proves a kernel not
            positive semi-definite has no certificate and warns with
            :class:`~multikernel.exceptions.KernelNotPSDWarning` (docs/guide.md §6).

        Raises
        ------
        ValueError
            An invalid hyper-parameter, non-finite or ill-shaped data, or (precomputed) a
            stack that is not symmetric.

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.random.default_rng(1).normal(size=(50, 3))
        >>> det = mk.MKLOneClass(nu=0.2, p=1.0).fit(X)
        >>> det.kernel_weights_.shape, bool(det.duality_gap_ <= det.tol)
        ((3,), True)
        """
        started = time.perf_counter()
        self._clear()
        settings = self._settings()
        G, ones, sw = self._training_stack(
            X, None, ONE_CLASS, check_bool(check_input, "check_input"), sample_weight
        )
        if ones.shape[0] < 2:
            raise InvalidInputError(
                f"one-class MKL needs at least 2 samples; got n_samples = {ones.shape[0]}"
            )
        result = self._solve(Choice("one_class"), G, ones, settings, weight=sw)
        self._set_results([result], multi=False)
        self.offset_ = -float(self.intercept_)
        self.n_train_ = int(ones.shape[0])
        self._feature_coefs(G)
        self._log_summary(started)
        return self

    def score_samples(self, X: Any) -> NDArray[np.float64]:
        """Raw scores ``Σ_m f_m(x)``: the larger, the more typical (``OneClassSVM``'s
        ``score_samples``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``decision_function(X) + offset_``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.random.default_rng(2).normal(size=(60, 2))
        >>> det = mk.MKLOneClass(nu=0.3).fit(X)
        >>> s = det.score_samples(np.array([[0.0, 0.0], [5.0, 5.0]]))
        >>> bool(s[0] > s[1])
        True
        """
        return self.decision_function(X) + self.offset_

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Signed distance to the region's boundary: positive inside (inliers), negative
        outside (outliers).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``Σ_m f_m(x) − ρ``; values within ``1e-10·max(1, ρ)`` of 0 are 0. The free
            support vectors lie on the boundary, and rounding (which depends on how many
            points are evaluated together) would otherwise put them on either side.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.
        ValueError
            Non-finite or ill-shaped ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.random.default_rng(3).normal(size=(60, 2))
        >>> det = mk.MKLOneClass(nu=0.3).fit(X)
        >>> bool(det.decision_function(np.array([[9.0, 9.0]]))[0] < 0)
        True
        """
        dec = self._decision(self._test_stack(X))
        dec[np.abs(dec) <= _BOUNDARY * max(1.0, abs(self.offset_))] = 0.0
        return dec

    def predict(self, X: Any) -> NDArray[np.intp]:
        """``+1`` for inliers, ``−1`` for outliers.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``+1`` where ``decision_function ≥ 0``, else ``−1`` (as scikit-learn).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.random.default_rng(4).normal(size=(80, 2))
        >>> mk.MKLOneClass(nu=0.1).fit(X).predict(np.array([[0.0, 0.0], [8.0, 0.0]]))
        array([ 1, -1])
        """
        out: NDArray[np.intp] = np.where(self.decision_function(X) >= 0, 1, -1)
        return out
