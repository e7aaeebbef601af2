"""Cross-validated sparse MKL on regularization paths: :class:`MKLClassifierCV` and
:class:`MKLRegressorCV` (scikit-learn's ``LogisticRegressionCV`` / ``LassoCV`` style)."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._estimators import _FITTED, MKLClassifier, MKLRegressor, default_kernels
from ._path import MKLPath, mkl_path
from ._typing import Normalization, PsdRepair
from ._validation import check_psd
from .exceptions import InvalidParameterError
from .kernels import Kernel, validate_stack

__all__ = ["MKLClassifierCV", "MKLRegressorCV"]

#: The refit model's fitted attributes that the CV estimators expose (their own ``classes_``
#: and ``n_features_in_`` are set by their fit).
_DELEGATED = tuple(
    name for name in _FITTED if name not in ("classes_", "n_features_in_", "feature_names_in_")
)


class _AtC(BaseEstimator):  # type: ignore[misc]
    """The models of one fold's paths at one C, as an estimator a scikit-learn scorer can
    call: ``paths`` holds one path (regression, two classes) or one per class (one-vs-rest)."""

    def __init__(
        self, paths: list[MKLPath], C: float, classes: NDArray[Any] | None, offset: float
    ) -> None:
        self.paths = paths
        self.C = C
        self.classes = classes
        self.offset = offset

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        f = np.column_stack([p.decision_function(X, self.C) for p in self.paths])
        out: NDArray[np.float64] = f[:, 0] + self.offset if f.shape[1] == 1 else f
        return out

    def predict(self, X: Any) -> NDArray[Any]:
        f = self.decision_function(X)
        if self.classes is None:
            return f
        idx = (f > 0).astype(int) if f.ndim == 1 else np.argmax(f, axis=1)
        out: NDArray[Any] = self.classes[idx]
        return out


class _AtCClassifier(ClassifierMixin, _AtC):  # type: ignore[misc]
    @property
    def classes_(self) -> NDArray[Any] | None:
        return self.classes

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        f = self.decision_function(X)
        if f.ndim == 1:
            p1 = 1.0 / (1.0 + np.exp(-f))
            return np.column_stack([1.0 - p1, p1])
        p = 1.0 / (1.0 + np.exp(-f))
        out: NDArray[np.float64] = p / p.sum(axis=1, keepdims=True)
        return out


class _AtCRegressor(RegressorMixin, _AtC):  # type: ignore[misc]
    pass


class _BaseMKLCV(BaseEstimator):  # type: ignore[misc]
    """Shared fit of the CV estimators: paths per fold, C chosen on held-out scores, refit."""

    _loss: Literal["squared", "logistic"]
    _classifier: bool

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | Literal["precomputed"] | None = None,
        Cs: int | Sequence[float] = 20,
        cv: Any = 5,
        scoring: Any = None,
        mu: float = 1e-3,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        tol: float = 1e-3,
        max_iter: int = 1000,
        n_threads: int = 0,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.Cs = Cs
        self.cv = cv
        self.scoring = scoring
        self.mu = mu
        self.normalize = normalize
        self.psd = psd
        self.tol = tol
        self.max_iter = max_iter
        self.n_threads = n_threads
        self.verbose = verbose

    def _fold_stacks(
        self, X: Any, tr: NDArray[np.intp], te: NDArray[np.intp]
    ) -> tuple[Any, Any, Any]:
        """Training input, test input and the ``kernels=`` of one fold's paths."""
        if self._precomputed:
            G = self._G
            return G[:, tr][:, :, tr], G[:, te][:, :, tr], "precomputed"
        return X[tr], X[te], self._specs

    def _paths(self, Xtr: Any, ytr: NDArray[Any], kernels: Any) -> tuple[list[MKLPath], float]:
        """The fold's paths (one per class for more than two classes) and the target offset."""
        common: dict[str, Any] = {
            "kernels": kernels,
            "mu": self.mu,
            "normalize": self.normalize,
            "psd": self.psd,
            "n_threads": self.n_threads,
        }
        M = self._n_kernels
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if not self._classifier:
                offset = float(np.mean(ytr))
                return [mkl_path(Xtr, ytr - offset, loss="squared", d=np.ones(M), **common)], offset
            if len(self.classes_) == 2:
                yb = np.where(ytr == self.classes_[1], 1.0, -1.0)
                return [mkl_path(Xtr, yb, loss="logistic", d=np.ones(M), **common)], 0.0
            paths = []
            for c in self.classes_:
                yb = np.where(ytr == c, 1.0, -1.0)
                paths.append(mkl_path(Xtr, yb, loss="logistic", d=np.ones(M), **common))
            return paths, 0.0

    def fit(self, X: Any, y: Any) -> Any:
        """Fit a path per fold, choose ``C`` on the held-out scores, refit at ``C_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n, n)
            Training points, or a precomputed stack (``kernels="precomputed"``).
        y : array-like of shape (n_samples,)
            Targets or labels.

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        InvalidParameterError
            If ``Cs`` is not a positive integer or a sequence of positive numbers.

        Examples
        --------
        >>> import multikernel as mk
        >>> from sklearn.datasets import load_diabetes
        >>> X, y = load_diabetes(return_X_y=True)
        >>> specs = [mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(4)
        ...          for s in (0.05, 0.2)]
        >>> reg = mk.MKLRegressorCV(kernels=specs, Cs=8, cv=3).fit(X[:120], y[:120])
        >>> reg.scores_.shape
        (3, 8)
        """
        Cs: Any = self.Cs
        is_count = isinstance(Cs, numbers.Integral) and not isinstance(Cs, bool)
        is_values = (
            not isinstance(Cs, (str, bool, numbers.Number))
            and np.ndim(Cs) == 1
            and len(Cs) >= 1
            and bool(np.all(np.asarray(Cs, dtype=np.float64) > 0))
        )
        if not ((is_count and int(Cs) >= 2) or is_values):
            raise InvalidParameterError(
                f"Cs must be an integer ≥ 2 or a sequence of positive numbers, got {Cs!r}",
                parameter="Cs",
            )
        check_psd(self.psd)
        self._precomputed = isinstance(self.kernels, str) and self.kernels == "precomputed"
        if self._precomputed:
            self._G = validate_stack(X, n_threads=self.n_threads)
            yv = np.asarray(y)
            if yv.ndim != 1 or yv.shape[0] != self._G.shape[1]:
                raise ValueError(
                    f"y must be 1-D with one entry per training point ({self._G.shape[1]}), "
                    f"got shape {yv.shape}"
                )
            Xv: Any = None
            self._n_kernels = self._G.shape[0]
            n = self._G.shape[1]
        else:
            Xv, yv = validate_data(self, X, y, dtype=np.float64, y_numeric=not self._classifier)
            self._specs = (
                default_kernels(Xv.shape[1]) if self.kernels is None else list(self.kernels)
            )
            self._n_kernels = len(self._specs)
            n = Xv.shape[0]
        if self._classifier:
            check_classification_targets(yv)
            self.classes_ = np.unique(yv)
            if len(self.classes_) < 2:
                raise ValueError(
                    f"needs samples of at least 2 classes, got one class: {self.classes_[0]!r}"
                )
        folds = list(check_cv(self.cv, yv, classifier=self._classifier).split(np.zeros(n), yv))
        fold_paths = []
        for tr, te in folds:
            Xtr, Xte, kernels = self._fold_stacks(Xv, tr, te)
            fold_paths.append((self._paths(Xtr, yv[tr], kernels), Xte, yv[te]))
        if is_count:
            lo = min(p.C0 for (ps, _), _, _ in fold_paths for p in ps)
            hi = max(p.Cs[-1] for (ps, _), _, _ in fold_paths for p in ps)
            grid = np.geomspace(lo, hi, int(Cs))
        else:
            grid = np.sort(np.asarray(Cs, dtype=np.float64))
        scorer = check_scoring(self, scoring=self.scoring)
        at = _AtCClassifier if self._classifier else _AtCRegressor
        classes = self.classes_ if self._classifier else None
        scores = np.empty((len(folds), len(grid)))
        for k, ((paths, offset), Xte, yte) in enumerate(fold_paths):
            for i, C in enumerate(grid):
                scores[k, i] = scorer(at(paths, float(C), classes, offset), Xte, yte)
        self.Cs_ = grid
        self.scores_ = scores
        self.paths_ = [paths for (paths, _), _, _ in fold_paths]
        mean = scores.mean(axis=0)
        self.C_ = float(grid[int(np.argmax(mean))])
        refit_cls = MKLClassifier if self._classifier else MKLRegressor
        self.estimator_ = refit_cls(
            kernels=self.kernels,
            penalty="l1",
            loss=self._loss,
            C=self.C_,
            normalize=self.normalize,
            psd=self.psd,
            tol=self.tol,
            max_iter=self.max_iter,
            n_threads=self.n_threads,
            verbose=self.verbose,
        ).fit(X if self._precomputed else Xv, yv)
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        for name in _DELEGATED:
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        for name in ("_G", "_specs"):
            self.__dict__.pop(name, None)
        return self

    def plot_scores(self, ax: Any = None) -> Any:
        """Plot the mean held-out score (± one standard deviation over folds) against ``C``.

        Needs matplotlib (``pip install multikernel[plot]``).

        Parameters
        ----------
        ax : matplotlib Axes or None, default None
            Where to draw; None: a new figure's axes.

        Returns
        -------
        matplotlib Axes
            The axes drawn on.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import multikernel as mk
        >>> from sklearn.datasets import load_diabetes
        >>> X, y = load_diabetes(return_X_y=True)
        >>> reg = mk.MKLRegressorCV(kernels=[mk.kernels.Gaussian(sigma=0.1, features=[j])
        ...                                  for j in range(3)], Cs=6, cv=3).fit(X[:90], y[:90])
        >>> ax = reg.plot_scores()
        """
        import matplotlib.pyplot as plt

        check_is_fitted(self, "scores_")
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        mean, std = self.scores_.mean(axis=0), self.scores_.std(axis=0)
        ax.plot(self.Cs_, mean, marker="o", markersize=3)
        ax.fill_between(self.Cs_, mean - std, mean + std, alpha=0.2)
        ax.axvline(self.C_, color="0.4", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("C (dashed: the chosen C_)")
        ax.set_ylabel("held-out score (mean ± std over folds)")
        return ax

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if isinstance(self.kernels, str) and self.kernels == "precomputed":
            tags.input_tags.pairwise = True
        return tags


_PARAMS_DOC = """
    Parameters
    ----------
    kernels : sequence of Kernel, "precomputed" or None, default None
        Kernel specifications evaluated on ``X``; "precomputed": ``X`` is an ``(M, n, n)``
        stack (and ``(M, n_test, n)`` at predict time); None:
        :func:`multikernel.default_kernels`.
    Cs : int or sequence of float, default 20
        The candidate ``C``: that many values spread geometrically from the smallest ``C0``
        of the folds' paths to their largest end (``1000·C0``), or the values given.
    cv : int, cross-validation generator or iterable, default 5
        As in scikit-learn (stratified folds for the classifier).
    scoring : str, callable or None, default None
        A scikit-learn scorer; None: accuracy (classifier) or R² (regressor).
    mu : float, default 1e-3
        Barrier weight of the paths (see :func:`multikernel.mkl_path`).
    normalize : {"mean_diag", "trace", "multiplicative", "spherical", "none"} or None
        Scaling of kernels evaluated from specs.
    psd : {"check", "clip"}, default "check"
        ``"clip"``: each training stack (every fold's, and the refit's) is shifted to
        positive semi-definite kernels first (:func:`multikernel.kernels.shift_to_psd`);
        the refit's shifts are ``psd_shifts_``, each fold path's its ``psd_shifts``.
    tol : float, default 1e-3
        Relative duality gap of the refit.
    max_iter : int, default 1000
        Iteration budget of the refit.
    n_threads : int, default 0
        Threads of the engine (0: all cores).
    verbose : int, default 0
        1 logs the refit's iterations on the ``multikernel`` logger.
"""

_ATTRS_DOC = """
    Attributes
    ----------
    C_ : float
        The chosen ``C`` (best mean held-out score).
    Cs_ : ndarray of shape (n_Cs,)
        The candidates.
    scores_ : ndarray of shape (n_folds, n_Cs)
        Held-out score of every fold at every candidate.
    paths_ : list of list of MKLPath
        Per fold, its path (one per class, one-vs-rest, for more than two classes).
    estimator_ : {estimator}
        The refit at ``C_`` (``penalty="l1"``); its fitted attributes (``dual_coef_``,
        ``kernel_weights_``, ``duality_gap_``, …) are also set on this estimator.
"""


class MKLClassifierCV(ClassifierMixin, _BaseMKLCV):  # type: ignore[misc]
    __doc__ = (
        """Sparse MKL classifier with ``C`` chosen by cross-validation along paths.

    Every fold computes the regularization path of the weighted block-ℓ1 problem with the
    logistic loss (:func:`multikernel.mkl_path`, weights ``d = 1``), one path per class
    (one-vs-rest) for more than two classes; the held-out score of each fold is read off the
    paths at every candidate ``C``, and the best mean wins. The final model is then refit on
    all the data by :class:`MKLClassifier` with ``penalty="l1"``, ``loss="logistic"`` at
    ``C_``. The paths have no intercept and the refit has one: with unbalanced classes the
    chosen ``C`` can differ from the one a grid of refits would pick.
"""
        + _PARAMS_DOC
        + _ATTRS_DOC.format(estimator="MKLClassifier")
        + """
    Examples
    --------
    >>> import multikernel as mk
    >>> from sklearn.datasets import load_breast_cancer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> specs = [mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(6)
    ...          for s in (1.0, 3.0)]
    >>> clf = mk.MKLClassifierCV(kernels=specs, Cs=8, cv=3).fit(X[:150], y[:150])
    >>> bool(clf.score(X[150:300], y[150:300]) > 0.8)
    True
"""
    )

    _loss = "logistic"
    _classifier = True

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Decision values of the refit model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            New points, or cross kernels to the training points.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)

        Examples
        --------
        >>> import multikernel as mk
        >>> from sklearn.datasets import load_breast_cancer
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> clf = mk.MKLClassifierCV(kernels=[mk.kernels.Gaussian(sigma=2.0, features=[j])
        ...                                   for j in range(4)], Cs=5, cv=3).fit(X[:90], y[:90])
        >>> clf.decision_function(X[:3]).shape
        (3,)
        """
        check_is_fitted(self, "estimator_")
        out: NDArray[np.float64] = self.estimator_.decision_function(X)
        return out

    def predict(self, X: Any) -> NDArray[Any]:
        """Labels of the refit model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            New points, or cross kernels to the training points.

        Returns
        -------
        ndarray of shape (n_samples,)

        Examples
        --------
        >>> import multikernel as mk
        >>> from sklearn.datasets import load_breast_cancer
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> clf = mk.MKLClassifierCV(kernels=[mk.kernels.Gaussian(sigma=2.0, features=[j])
        ...                                   for j in range(4)], Cs=5, cv=3).fit(X[:90], y[:90])
        >>> clf.predict(X[:3]).shape
        (3,)
        """
        check_is_fitted(self, "estimator_")
        out: NDArray[Any] = self.estimator_.predict(X)
        return out

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities of the refit (logistic) model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            New points, or cross kernels to the training points.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import multikernel as mk
        >>> from sklearn.datasets import load_breast_cancer
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> clf = mk.MKLClassifierCV(kernels=[mk.kernels.Gaussian(sigma=2.0, features=[j])
        ...                                   for j in range(4)], Cs=5, cv=3).fit(X[:90], y[:90])
        >>> clf.predict_proba(X[:3]).shape
        (3, 2)
        """
        check_is_fitted(self, "estimator_")
        out: NDArray[np.float64] = self.estimator_.predict_proba(X)
        return out


class MKLRegressorCV(RegressorMixin, _BaseMKLCV):  # type: ignore[misc]
    __doc__ = (
        """Sparse MKL regressor with ``C`` chosen by cross-validation along paths.

    Every fold computes the regularization path of the weighted block-ℓ1 problem with the
    squared loss (:func:`multikernel.mkl_path`, weights ``d = 1``) on targets centred by the
    fold's training mean (the paths have no intercept); the held-out score is read off the
    path at every candidate ``C`` and the best mean wins. The final model is refit on all the
    data by :class:`MKLRegressor` with ``penalty="l1"``, ``loss="squared"`` at ``C_`` (with an
    intercept).
"""
        + _PARAMS_DOC
        + _ATTRS_DOC.format(estimator="MKLRegressor")
        + """
    Examples
    --------
    >>> import multikernel as mk
    >>> from sklearn.datasets import load_diabetes
    >>> X, y = load_diabetes(return_X_y=True)
    >>> specs = [mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(4)
    ...          for s in (0.05, 0.2)]
    >>> reg = mk.MKLRegressorCV(kernels=specs, Cs=8, cv=3).fit(X[:150], y[:150])
    >>> bool(reg.score(X[150:300], y[150:300]) > 0.1)
    True
"""
    )

    _loss = "squared"
    _classifier = False

    def predict(self, X: Any) -> NDArray[np.float64]:
        """Predictions of the refit model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            New points, or cross kernels to the training points.

        Returns
        -------
        ndarray of shape (n_samples,)

        Examples
        --------
        >>> import multikernel as mk
        >>> from sklearn.datasets import load_diabetes
        >>> X, y = load_diabetes(return_X_y=True)
        >>> reg = mk.MKLRegressorCV(kernels=[mk.kernels.Gaussian(sigma=0.1, features=[j])
        ...                                  for j in range(3)], Cs=5, cv=3).fit(X[:90], y[:90])
        >>> reg.predict(X[:3]).shape
        (3,)
        """
        check_is_fitted(self, "estimator_")
        out: NDArray[np.float64] = self.estimator_.predict(X)
        return out
