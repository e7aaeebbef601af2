"""The MKL regressor: :class:`MKLRegressor`."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import RegressorMixin

from . import _dask
from ._base import BaseMKL, publishes
from ._validation import check_bool, nonfinite_targets
from .exceptions import InvalidInputError

__all__ = ["MKLRegressor"]


class MKLRegressor(RegressorMixin, BaseMKL):  # type: ignore[misc]
    """Multiple kernel learning regressor.

    Same model, penalties and certificate as :class:`MKLClassifier`, with the losses
    ``"squared"`` (``½ (y − f)²``: kernel ridge inside, solved by Cholesky) and
    ``"epsilon_insensitive"`` (``max(0, |y − f| − ε)``: ε-SVR by SMO inside).

    Parameters
    ----------
    kernels, penalty, p, l1_ratio, groups, C
        As for :class:`MKLClassifier`.
    loss : {"squared", "epsilon_insensitive"}, optional
        None means ``"squared"``.
    epsilon : float, default 0.1
        Width of the insensitive tube of ``"epsilon_insensitive"``.
    solver, tol, max_iter, solver_config, normalize, psd, n_threads, random_state, verbose, \
warm_start, cache_size
        As for :class:`MKLClassifier`.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (M, n_train)
        Per-kernel coefficients ``A``: ``f_m(x) = Σ_i A[m, i] k_m(x, x_i)``.
        A ``prox_newton`` fit on feature blocks keeps ``A[m] = d_m ρ̃`` as its two
        factors and forms ``A`` at its first read (``M`` times their memory; predictions read
        ``coef_``).
    intercept_ : float
        The offset ``b``.
    kernel_weights_, kernel_norms_ : ndarray of shape (M,)
        As for :class:`MKLClassifier`.
    primal_objective_, dual_objective_, duality_gap_ : float
        The certificate, as for :class:`MKLClassifier`.
    n_iter_ : int
        Outer iterations run, by every engine solver that ran (a warm start's certificate
        counts as one).
    solvers_, solver_iterations_ : tuple of str, tuple of int
        The engine solvers that ran and the iterations of each, as for
        :class:`MKLClassifier`.
    stack_passes_ : float or None
        The fit's passes over a stored kernel stack, as for :class:`MKLClassifier`.
    converged_ : bool
        Whether the duality gap reached ``tol``.
    history_ : structured ndarray of shape ``(n_records,)``
        Per recorded iterate: primal, dual, gap, active kernels, seconds, and the index in
        ``solvers_`` of the solver that ran it (how ``n_records`` relates to ``n_iter_``: as
        for :class:`MKLClassifier`).
    kernel_bank_, n_features_in_, n_kernels_, n_train_, psd_shifts_
        As for :class:`MKLClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=80)
    >>> reg = mk.MKLRegressor(C=10.0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    # One problem: the certificate's scalars are scalars (the base declares them ``Any``).
    intercept_: float
    primal_objective_: float
    dual_objective_: float
    duality_gap_: float
    n_iter_: int
    converged_: bool

    _losses = ("squared", "epsilon_insensitive")
    _y_numeric = True

    @publishes
    def fit(
        self, X: Any, y: Any, sample_weight: Any = None, check_input: bool = True
    ) -> MKLRegressor:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n, n)
            Training points (``scipy.sparse`` too, for kernel specifications: docs/guide.md,
            "Sparse data"), or the training kernel stack for ``kernels="precomputed"``.
        y : array-like of shape (n_samples,)
            Real targets.
        sample_weight : array-like of shape (n_samples,), default None
            A weight ``w_i ≥ 0`` per sample on its loss: the data term becomes
            ``C Σ_i w_i ℓ(y_i, f(x_i))``, so an integer weight equals that many copies of the
            sample; samples of weight 0 are left out. Taken by every solver. The kernels'
            normalisation statistics are weighted by it too (integer weights give the kernels
            of duplicated rows).
        check_input : bool, default True
            False skips :func:`~multikernel.kernels.validate_stack`'s read of a dense
            precomputed stack (shape and dtype are still checked), for a stack known to be
            valid, as scikit-learn's ``Lasso.fit``; see docs/guide.md §6. Ignored for other
            inputs.

        Returns
        -------
        MKLRegressor
            ``self``, fitted. A fit that does not reach ``tol`` within ``max_iter`` warns
            with a ``ConvergenceWarning``; one whose dual point proves a kernel not
            positive semi-definite has no certificate and warns with
            :class:`~multikernel.exceptions.KernelNotPSDWarning` (docs/guide.md §6).

        Raises
        ------
        ValueError
            An invalid hyper-parameter, a solver that does not handle the penalty or the
            loss, non-finite or ill-shaped data, fewer than two samples with
            ``loss="epsilon_insensitive"``, or (precomputed) a stack that is not symmetric.

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> from multikernel.kernels import Gaussian, Linear
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(60, 2)); y = np.sin(2 * X[:, 0]) + 0.05 * rng.normal(size=60)
        >>> specs = [Linear(features=[0]), Gaussian(sigma=0.5, features=[0]), Linear(features=[1])]
        >>> reg = mk.MKLRegressor(kernels=specs, penalty="l1", C=10.0, tol=1e-6).fit(X, y)
        >>> reg.kernel_weights_.round(2)  # the RBF kernel on the informative column
        array([0., 1., 0.])
        """
        if _dask.is_dask_array(X) or _dask.is_dask_frame(X):
            from . import _dask_fit  # imports Dask's parts only when handed Dask data

            _dask_fit.fit(self, X, y, sample_weight)
            return self
        started = time.perf_counter()
        previous = self._previous_fit()
        self._clear()
        early, settings = self._check_params()
        G, yv, sw = self._training_stack(
            X, y, self._accepts(early), check_bool(check_input, "check_input"), sample_weight
        )
        yf = np.asarray(yv, dtype=np.float64)
        if not np.isfinite(yf).all():
            raise nonfinite_targets(int(np.argmin(np.isfinite(yf))))
        if settings["loss"] == "epsilon_insensitive" and yf.shape[0] < 2:
            raise InvalidInputError(
                f"loss='epsilon_insensitive' needs at least 2 samples; got n_samples = "
                f"{yf.shape[0]}"
            )
        choice = early.on(G)  # the solver of this stack, for its warm start and its fit
        st = self._warm_starts(previous, self._warm_key_of(choice, settings, G))
        self._set_results(
            [self._solve(choice, G, yf, settings, start=st[0] if st else None, weight=sw)],
            multi=False,
        )
        self.n_train_ = G.n
        self._feature_coefs(G)
        self._log_summary(started)
        return self

    @_dask.by_row_blocks
    def predict(self, X: Any) -> NDArray[np.float64]:
        """Predicted targets.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``f(x) = Σ_m f_m(x) + b``.

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
        >>> X = np.linspace(-1.0, 1.0, 20)[:, None]
        >>> reg = mk.MKLRegressor(kernels=[mk.kernels.Linear()], C=1e4, tol=1e-8)
        >>> reg.fit(X, 3.0 * X[:, 0] + 1.0).predict(np.array([[0.0], [2.0]])).round(3)
        array([1., 7.])
        """
        return self._decision(self._test_stack(X))
