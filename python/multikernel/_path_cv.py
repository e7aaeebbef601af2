"""Cross-validated sparse MKL on regularization paths: :class:`MKLClassifierCV` and
:class:`MKLRegressorCV` (scikit-learn's ``LogisticRegressionCV`` / ``LassoCV`` style)."""

from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias, cast

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import _progress
from ._base import FITTED as _FITTED
from ._base import checked_loss, default_kernels, publishes
from ._classifier import MKLClassifier
from ._cv_docs import ATTRS_DOC, GRID_DOC, INPUTS_DOC, params_doc
from ._cv_folds import AtCClassifier, AtCRegressor, fold_grid_scores, problem_entry_C
from ._data import TestStack
from ._path import MKLPath, path_on
from ._regressor import MKLRegressor
from ._sources import PATH_CV, Input, resolve, takes_sparse
from ._typing import MultiClass, Normalization, PsdRepair
from ._validation import check_n_threads, check_psd, check_sample_weight, validate_points
from .exceptions import InternalError, InvalidInputError, InvalidParameterError
from .kernels import FeatureBank, Kernel

__all__ = ["MKLClassifierCV", "MKLRegressorCV"]

#: The refit model's fitted attributes that the CV estimators expose (their own ``classes_``
#: and ``n_features_in_`` are set by their fit).
_DELEGATED = tuple(
    name for name in _FITTED if name not in ("classes_", "n_features_in_", "feature_names_in_")
)


#: One fold: its paths with their target offset (``_BaseMKLCV._paths``), its held-out stack
#: and its held-out targets.
#: A fold's paths and target offset, its held-out stack, targets and sample weights.
_FoldPath: TypeAlias = tuple[
    tuple[list[MKLPath], float], TestStack, NDArray[Any], NDArray[np.float64] | None
]


class _BaseMKLCV(BaseEstimator):  # type: ignore[misc]
    """Shared fit of the CV estimators: paths per fold, C chosen on held-out scores, refit."""

    #: The losses, the first the default and the path's.
    _losses: tuple[str, ...]
    _classifier: bool
    loss: str | None

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None,
        Cs: int | Sequence[float],
        cv: Any,
        scoring: Any,
        mu: float | None,
        normalize: Normalization | None,
        psd: PsdRepair,
        tol: float,
        max_iter: int,
        n_threads: int,
        verbose: int,
    ) -> None:
        # The public classes declare their own parameters (scikit-learn reads a class's
        # __init__, and an unknown parameter's TypeError then names the public class).
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

    def _paths(
        self, Xtr: Input, ytr: NDArray[Any], wtr: NDArray[np.float64] | None
    ) -> tuple[list[MKLPath], float]:
        """The fold's paths (one per class for more than two classes) and the target offset
        (the weighted mean of the targets), with the training rows' sample weights ``wtr``."""
        common: dict[str, Any] = {
            "mu": self.mu,
            "tol": self.tol,
            "psd": self.psd,
            "n_threads": self.n_threads,
            "sample_weight": wtr,
        }
        M = Xtr.M
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if not self._classifier:
                offset = float(np.average(ytr, weights=wtr))
                return [path_on(Xtr, ytr - offset, loss="squared", d=np.ones(M), **common)], offset
            if len(self.classes_) == 2:
                yb = np.where(ytr == self.classes_[1], 1.0, -1.0)
                return [path_on(Xtr, yb, loss="logistic", d=np.ones(M), **common)], 0.0
            paths = []
            for c in self.classes_:
                yb = np.where(ytr == c, 1.0, -1.0)
                paths.append(path_on(Xtr, yb, loss="logistic", d=np.ones(M), **common))
            return paths, 0.0

    @publishes
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        """Fit a path per fold, choose ``C`` on the held-out scores, refit at ``C_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n, n), or LowRankFactors
            Training points (``kernels=`` specs, a FeatureBank or None), a precomputed stack
            (``kernels="precomputed"``), or low-rank factors ``K_m = G_m G_mᵀ``
            (:func:`multikernel.kernels.low_rank`, with ``kernels="precomputed"`` or None):
            each fold's path then runs on the training rows ``G_m[tr]`` and is scored on
            ``G_m[te] (G_m[tr]ᵀ A_m)`` (the cross kernels ``G_m[te] G_m[tr]ᵀ``, not formed),
            and the refit reads the factors as feature blocks.
        y : array-like of shape (n_samples,)
            Targets or labels.
        sample_weight : array-like of shape (n_samples,) or None, default None
            A weight ``w_i ≥ 0`` on each sample's loss, in every fold's path
            (:func:`multikernel.mkl_path`), in the held-out scores (passed to the scorer)
            and in the refit; kernels computed from specifications weigh their normalisation
            statistics by it, and a regressor's target offset is the weighted mean. None:
            every weight 1.

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        InvalidParameterError
            If ``Cs`` is not a positive integer or a sequence of positive numbers,
            low-rank factors come with kernel specs or a FeatureBank, or no candidate has a
            score (e.g. every score is NaN: R² on leave-one-out folds).
        InvalidInputError
            If a FeatureBank gets a 3-D ``X`` (it maps raw points), factors have different
            numbers of rows or non-finite entries, or ``y`` does not have one entry per
            training point of a stack or factors.

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

        On low-rank factors (``predict`` then takes the cross kernels, or factor rows):

        >>> G = mk.kernels.gram(X[:120], specs)
        >>> yc = (y[:120] - y[:120].mean()) / y[:120].std()
        >>> low = mk.kernels.low_rank(G, tol=1e-4)
        >>> reg = mk.MKLRegressorCV(kernels="precomputed", Cs=8, cv=3).fit(low, yc)
        >>> reg.predict(G[:, :5]).shape
        (5,)
        """
        started = time.perf_counter()
        is_count = self._check_Cs()
        loss = self._check_loss()
        data, yv = self._resolve_input(X, y, sample_weight)
        sw = check_sample_weight(sample_weight, data.n)
        folds = list(check_cv(self.cv, yv, classifier=self._classifier).split(np.zeros(data.n), yv))
        if self._follows_path(loss):
            self._fit_paths(data, yv, sw, folds, is_count)
        else:
            self._fit_grid(data, yv, sw, folds, is_count, loss)
        self._refit(data, X, yv, sample_weight)
        if self.verbose:
            self._log_summary(time.perf_counter() - started)
        return self

    def _fit_paths(
        self,
        data: Input,
        yv: NDArray[Any],
        sw: NDArray[np.float64] | None,
        folds: list[tuple[NDArray[np.intp], NDArray[np.intp]]],
        is_count: bool,
    ) -> None:
        """The folds' paths, the candidates and scores read off them, and ``C_``."""
        name = type(self).__name__
        with _progress.bar(self.verbose, len(folds), f"{name}: fold paths", "fold") as b:
            fold_paths = []
            for tr, te in folds:
                fold_paths.append(self._fold_path(data, yv, sw, tr, te))
                b.update()
        grid = self._candidates(fold_paths, is_count)
        if self.verbose and is_count:
            _progress.info(
                "%s: %d candidates C from %.4g to %.4g (the smallest C at which a kernel "
                "enters a fold's path, to the largest end of the paths)",
                type(self).__name__, len(grid), grid[0], grid[-1],
            )  # fmt: skip
        scores = self._scores(fold_paths, grid)
        self.Cs_ = grid
        self.scores_ = scores
        self.paths_: list[list[MKLPath]] | None = [paths for (paths, _), _, _, _ in fold_paths]
        self.C_ = self._choose_C(scores, grid, [len(te) for _, te in folds])

    def _fit_grid(
        self,
        data: Input,
        yv: NDArray[Any],
        sw: NDArray[np.float64] | None,
        folds: list[tuple[NDArray[np.intp], NDArray[np.intp]]],
        is_count: bool,
        loss: str,
    ) -> None:
        """Per fold, its kernels computed once (one fold at a time) and a grid of fits on
        them at the candidates (ascending); the candidates of a count span ``[C0, 1000·C0]``
        from the entry point ``C0`` of all the data (:func:`entry_C`), where the refit runs."""
        threads = check_n_threads(self.n_threads)
        if is_count:
            own: dict[str, Any] = {"classifier": self._classifier, **self._own_params()}
            own.pop("multi_class", None)
            lo = problem_entry_C(data.stack, yv, sw, loss, **own)
            if not math.isfinite(lo):
                raise InvalidInputError("a constant fits the targets: no kernel enters at any C")
            grid = np.geomspace(lo, 1000.0 * lo, int(cast(int, self.Cs)))
        else:
            grid = np.sort(np.asarray(self.Cs, dtype=np.float64))
        if self.verbose:
            _progress.info(
                "%s: %d candidates C from %.4g to %.4g%s, a grid of fits per fold",
                type(self).__name__, len(grid), grid[0], grid[-1],
                " (the smallest C at which a kernel enters the fit of all the data, to 1000 "
                "times it)" if is_count else "",
            )  # fmt: skip
        scorer = check_scoring(self, scoring=self.scoring)
        scores = np.empty((len(folds), len(grid)))
        name = f"{type(self).__name__}: fold grids"
        with _progress.bar(self.verbose, len(folds), name, "fold") as b:
            for k, (tr, te) in enumerate(folds):
                train, test = data.fold(tr, te)
                stack, _ = train.stack.repair(self.psd, threads)  # once per fold, not per C
                fold = self._estimator(loss, "precomputed", psd="check")
                scores[k] = fold_grid_scores(
                    fold, stack, test, yv[tr], yv[te], None if sw is None else sw[tr],
                    None if sw is None else sw[te], grid, scorer,
                )  # fmt: skip
                b.update()
        self.Cs_ = grid
        self.scores_ = scores
        self.paths_ = None
        self.C_ = self._choose_C(scores, grid, [len(te) for _, te in folds])

    def _follows_path(self, loss: str) -> bool:
        """Whether the folds follow the path (the l1 path's losses, one-vs-rest, no class
        weights), or fit a grid."""
        return loss == self._losses[0]

    def _check_loss(self) -> str:
        """The loss, validated (None: the path's)."""
        return checked_loss(self, self._losses)

    def _own_params(self) -> dict[str, Any]:
        """The parameters the fold fits and the refit take from this estimator beyond the
        shared ones (``multi_class``, ``class_weight``; ``epsilon``)."""
        return {}

    def _estimator(self, loss: str, kernels: Any, **extra: Any) -> Any:
        """The ``penalty="l1"`` estimator of this CV estimator's loss and parameters, on
        ``kernels`` (``extra`` overrides)."""
        cls = MKLClassifier if self._classifier else MKLRegressor
        params: dict[str, Any] = {
            "kernels": kernels, "penalty": "l1", "loss": loss, "normalize": self.normalize,
            "psd": self.psd, "tol": self.tol, "max_iter": self.max_iter,
            "n_threads": self.n_threads, "verbose": 0, **self._own_params(), **extra,
        }  # fmt: skip
        return cls(**params)

    def _log_summary(self, seconds: float) -> None:
        """The summary record of the CV fit: the chosen C and its mean held-out score, the
        folds' paths, and how the refit ended (its own summary line precedes this one)."""
        est = self.estimator_
        chosen = int(np.flatnonzero(self.Cs_ == self.C_)[0])
        column = self.scores_[:, chosen]
        mean = float(np.mean(column[~np.isnan(column)]))
        points = (
            len(self.Cs_) * self.scores_.shape[0]
            if self.paths_ is None
            else sum(p.Cs.shape[0] for paths in self.paths_ for p in paths)
        )
        converged = np.atleast_1d(est.converged_)
        refit = (
            "converged"
            if converged.all()
            else f"did not converge ({int((~converged).sum())} of {converged.size} problems)"
        )
        gap = float(np.max(est.duality_gap_))
        active = int(np.count_nonzero(np.atleast_2d(est.kernel_weights_).max(axis=0) > 0))
        _progress.info(
            "%s: C_ %.6e, candidate %d of %d, mean held-out score %.4g over %d folds "
            "(%d path points or fits); refit %s, largest gap %.3e %s tol %g, %d of %d kernels "
            "active, %.2f s",
            type(self).__name__, self.C_, chosen + 1, len(self.Cs_), mean,
            self.scores_.shape[0], points, refit, gap, "≤" if gap <= self.tol else ">",
            self.tol, active, est.n_kernels_, seconds,
        )  # fmt: skip

    def _check_Cs(self) -> bool:
        """Validate ``Cs``; whether it is a number of candidates (else the candidates)."""
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
        return is_count

    def _resolve_input(self, X: Any, y: Any, sample_weight: Any) -> tuple[Input, NDArray[Any]]:
        """The training input (kernels from specifications with statistics weighted by
        ``sample_weight``) and the targets; a classifier's ``classes_`` (at least two)."""
        check_psd(self.psd)
        data, yv = resolve(
            self.kernels, X, y, accepts=PATH_CV, default_specs=default_kernels,
            normalize=self.normalize, n_threads=check_n_threads(self.n_threads),
            verbose=int(self.verbose), sample_weight=sample_weight,
            points=lambda Xr, yr: validate_points(self, Xr, yr, y_numeric=not self._classifier),
        )  # fmt: skip
        if yv is None:
            raise InternalError(f"{type(self).__name__}: the input resolved without targets")
        if self._classifier:
            check_classification_targets(yv)
            self.classes_ = np.unique(yv)
            if len(self.classes_) < 2:
                raise InvalidInputError(
                    f"needs samples of at least 2 classes, got one class: {self.classes_[0]!r}"
                )
        return data, yv

    def _fold_path(
        self,
        data: Input,
        yv: NDArray[Any],
        sw: NDArray[np.float64] | None,
        tr: NDArray[np.intp],
        te: NDArray[np.intp],
    ) -> _FoldPath:
        """One fold: its paths and target offset on the training rows, its held-out stack,
        targets and sample weights."""
        # A bank is fitted on the fold's training rows only (honest CV).
        Xtr, Xte = data.fold(tr, te)
        wtr, wte = (None, None) if sw is None else (sw[tr], sw[te])
        return self._paths(Xtr, yv[tr], wtr), Xte, yv[te], wte

    def _candidates(self, fold_paths: list[_FoldPath], is_count: bool) -> NDArray[np.float64]:
        """The candidate Cs: ``Cs`` of them log-spaced over the folds' paths, or ``Cs``
        sorted."""
        Cs: Any = self.Cs
        if is_count:
            lo = min(p.C0 for (ps, _), _, _, _ in fold_paths for p in ps)
            hi = max(p.Cs[-1] for (ps, _), _, _, _ in fold_paths for p in ps)
            return np.geomspace(lo, hi, int(Cs))
        return np.sort(np.asarray(Cs, dtype=np.float64))

    def _scores(self, fold_paths: list[_FoldPath], grid: NDArray[np.float64]) -> Any:
        """The held-out score of every fold (rows) at every candidate C (columns), read off
        the fold's paths."""
        scorer = check_scoring(self, scoring=self.scoring)
        at = AtCClassifier if self._classifier else AtCRegressor
        classes = self.classes_ if self._classifier else None
        scores = np.empty((len(fold_paths), len(grid)))
        total = len(fold_paths) * len(grid)
        name = f"{type(self).__name__}: held-out scores"
        with _progress.bar(self.verbose, total, name, "score", leave=False) as b:
            for k, ((paths, offset), Xte, yte, wte) in enumerate(fold_paths):
                # A scorer takes sample_weight only when it is given (scikit-learn's rule).
                kw = {} if wte is None else {"sample_weight": wte}
                for i, C in enumerate(grid):
                    scores[k, i] = scorer(at(paths, float(C), classes, offset), Xte, yte, **kw)
                    b.update()
        return scores

    def _choose_C(
        self, scores: NDArray[np.float64], grid: NDArray[np.float64], fold_sizes: list[int]
    ) -> float:
        """The candidate of the best mean held-out score."""
        # Folds with a NaN score at every candidate (the scoring undefined there, e.g. R² on
        # one held-out point) are left out; a candidate NaN on another fold is not chosen
        # (np.argmax would take NaN for the best).
        defined = scores[~np.isnan(scores).all(axis=1)]
        choosable = np.flatnonzero(~np.isnan(defined).any(axis=0))
        if len(defined) == 0 or len(choosable) == 0:
            what = (
                "every held-out score is NaN"
                if len(defined) == 0
                else "no candidate C has a score on every fold where the scoring is defined"
            )
            default = "accuracy" if self._classifier else "R²"
            name = self.scoring if self.scoring is not None else default
            raise InvalidParameterError(
                f"{what}: the scoring ({name}) is undefined on these folds (R² needs at least "
                f"two held-out points; the smallest of the {len(fold_sizes)} folds holds "
                f"{min(fold_sizes)}); use fewer folds (cv) or another scoring, e.g. "
                "scoring='neg_mean_squared_error'",
                parameter="scoring",
            )
        mean = defined[:, choosable].mean(axis=0)
        return float(grid[choosable[int(np.argmax(mean))]])

    def _refit(self, data: Input, X: Any, yv: NDArray[Any], sample_weight: Any) -> None:
        """Refit ``penalty="l1"`` at ``C_`` on all the data (``estimator_``, with the same
        ``sample_weight``) and copy its fitted attributes."""
        # On factors the refit reads them as feature blocks (no n×n matrix formed), and
        # predicts from their rows or from the dense cross kernels (resolve's factors). It
        # reads X itself, so that kernels reading a DataFrame's columns by name find them.
        raw = data.points is not None
        self.estimator_ = self._estimator(
            self._check_loss(), self.kernels if raw else "precomputed", C=self.C_,
            verbose=self.verbose,
        ).fit(X, yv, sample_weight=sample_weight)  # fmt: skip
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        for name in _DELEGATED:
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))

    def plot_scores(self, ax: Any = None) -> Any:
        """Plot the mean held-out score (± one standard deviation over folds) against ``C``.

        Needs matplotlib (``pip install multikernel[plot]``).

        Parameters
        ----------
        ax : matplotlib Axes or None, default None
            Where to draw; None: the axes of a new figure with a constrained layout, so that
            the labels survive a default ``savefig``.

        Returns
        -------
        matplotlib Axes
            The axes drawn on; the y label names the scoring (``scoring``, or accuracy / R²
            by default).

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
        >>> print(ax.get_ylabel())
        held-out R²
        (mean ± std over 3 folds)
        """
        import matplotlib.pyplot as plt

        check_is_fitted(self, "scores_")
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        if self.scoring is None:
            metric = "accuracy" if self._classifier else "R²"
        elif isinstance(self.scoring, str):
            metric = self.scoring
        else:  # a callable scorer: the name of its score function when it has one
            fn = getattr(self.scoring, "_score_func", self.scoring)
            metric = getattr(fn, "__name__", "score")
        mean, std = self.scores_.mean(axis=0), self.scores_.std(axis=0)
        ax.plot(self.Cs_, mean, marker="o", markersize=3)
        ax.fill_between(self.Cs_, mean - std, mean + std, alpha=0.2)
        ax.axvline(self.C_, color="0.4", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlabel(f"C (dashed: the chosen C_ = {self.C_:.3g})")
        # Two lines: a long scoring name on one would run off a 4-inch-high figure.
        ax.set_ylabel(f"held-out {metric}\n(mean ± std over {self.scores_.shape[0]} folds)")
        return ax

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if isinstance(self.kernels, str) and self.kernels == "precomputed":
            tags.input_tags.pairwise = True
        tags.input_tags.sparse = takes_sparse(self.kernels)
        return tags


_CLASSIFIER_PARAMS = """    loss : {"logistic", "hinge", "squared_hinge"} or None, default None
        The loss of the fits (None: ``"logistic"``, the path's).
    multi_class : {"ovr", "ovo", "shared"}, default "ovr"
        The scheme for more than two classes, as :class:`MKLClassifier`'s.
    class_weight : dict, "balanced" or None, default None
        Weights of the classes' losses, as :class:`MKLClassifier`'s (``"balanced"`` from
        each fold's training labels, and from all of ``y`` in the refit).
"""

_REGRESSOR_PARAMS = """    loss : {"squared", "epsilon_insensitive"} or None, default None
        The loss of the fits (None: ``"squared"``, the path's).
    epsilon : float, default 0.1
        The half-width of the ε-insensitive loss's tube.
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
        + GRID_DOC.format(estimator="MKLClassifier")
        + INPUTS_DOC
        + params_doc(_CLASSIFIER_PARAMS)
        + ATTRS_DOC.format(estimator="MKLClassifier")
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

    Explicit features, fitted on every fold's training rows and then on all of ``X``:

    >>> bank = mk.kernels.FeatureBank(specs, n_components=20)
    >>> clf = mk.MKLClassifierCV(kernels=bank, Cs=8, cv=3).fit(X[:150], y[:150])
    >>> bool(clf.score(X[150:300], y[150:300]) > 0.8), clf.kernel_bank_ is not bank
    (True, True)
"""
    )

    _losses = ("logistic", "hinge", "squared_hinge")
    _classifier = True

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
        Cs: int | Sequence[float] = 20,
        cv: Any = 5,
        scoring: Any = None,
        loss: Literal["logistic", "hinge", "squared_hinge"] | None = None,
        multi_class: MultiClass = "ovr",
        class_weight: dict[Any, float] | Literal["balanced"] | None = None,
        mu: float | None = None,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        tol: float = 1e-3,
        max_iter: int = 1000,
        n_threads: int = 0,
        verbose: int = 0,
    ) -> None:
        super().__init__(
            kernels=kernels, Cs=Cs, cv=cv, scoring=scoring, mu=mu, normalize=normalize,
            psd=psd, tol=tol, max_iter=max_iter, n_threads=n_threads, verbose=verbose,
        )  # fmt: skip
        self.loss = loss
        self.multi_class = multi_class
        self.class_weight = class_weight

    def _check_loss(self) -> str:
        loss = super()._check_loss()
        if self.multi_class not in ("ovr", "ovo", "shared"):
            raise InvalidParameterError(
                f"multi_class must be 'ovr', 'ovo' or 'shared', got {self.multi_class!r}",
                parameter="multi_class",
            )
        return loss

    def _follows_path(self, loss: str) -> bool:
        binary = len(self.classes_) == 2
        return (
            loss == self._losses[0]
            and self.class_weight is None
            and (binary or self.multi_class == "ovr")
        )

    def _own_params(self) -> dict[str, Any]:
        return {"multi_class": self.multi_class, "class_weight": self.class_weight}

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Decision values of the refit model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (M, n_samples, n_train), or list
            New points, or cross kernels to the training points (``kernels="precomputed"``,
            and after a fit on low-rank factors: ``k_m(x, x_i)``, exact or
            ``G_m(x) G_mᵀ``); after factors also a list of ``M`` arrays
            ``(n_samples, r_m)``, the new points' rows of the same factorisation.

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
        X : array-like of shape (n_samples, n_features), (M, n_samples, n_train), or list
            New points, or cross kernels to the training points (``kernels="precomputed"``,
            and after a fit on low-rank factors: ``k_m(x, x_i)``, exact or
            ``G_m(x) G_mᵀ``); after factors also a list of ``M`` arrays
            ``(n_samples, r_m)``, the new points' rows of the same factorisation.

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
        X : array-like of shape (n_samples, n_features), (M, n_samples, n_train), or list
            New points, or cross kernels to the training points (``kernels="precomputed"``,
            and after a fit on low-rank factors: ``k_m(x, x_i)``, exact or
            ``G_m(x) G_mᵀ``); after factors also a list of ``M`` arrays
            ``(n_samples, r_m)``, the new points' rows of the same factorisation.

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
        + GRID_DOC.format(estimator="MKLRegressor")
        + INPUTS_DOC
        + params_doc(_REGRESSOR_PARAMS)
        + ATTRS_DOC.format(estimator="MKLRegressor")
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

    _losses = ("squared", "epsilon_insensitive")
    _classifier = False

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
        Cs: int | Sequence[float] = 20,
        cv: Any = 5,
        scoring: Any = None,
        loss: Literal["squared", "epsilon_insensitive"] | None = None,
        epsilon: float = 0.1,
        mu: float | None = None,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        tol: float = 1e-3,
        max_iter: int = 1000,
        n_threads: int = 0,
        verbose: int = 0,
    ) -> None:
        super().__init__(
            kernels=kernels, Cs=Cs, cv=cv, scoring=scoring, mu=mu, normalize=normalize,
            psd=psd, tol=tol, max_iter=max_iter, n_threads=n_threads, verbose=verbose,
        )  # fmt: skip
        self.loss = loss
        self.epsilon = epsilon

    def _own_params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon}

    def predict(self, X: Any) -> NDArray[np.float64]:
        """Predictions of the refit model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), (M, n_samples, n_train), or list
            New points, or cross kernels to the training points (``kernels="precomputed"``,
            and after a fit on low-rank factors: ``k_m(x, x_i)``, exact or
            ``G_m(x) G_mᵀ``); after factors also a list of ``M`` arrays
            ``(n_samples, r_m)``, the new points' rows of the same factorisation.

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
