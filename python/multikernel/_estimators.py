"""scikit-learn estimators: :class:`MKLClassifier` and :class:`MKLRegressor`."""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
import scipy.special
from joblib import Parallel, delayed
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _auto, _core, _dask, _progress
from ._config import (
    SOLVERS,
    AnalyticConfig,
    Setting,
    SolverConfig,
    _NativeSolver,
)
from ._data import Blocks, Dense, Stack, TestSide, TestStack, resolve, scatter_kept
from ._platt import out_of_fold, pairwise_coupling, platt_fit, platt_proba
from ._record import FitRecord
from ._shared import SHARED_PENALTIES, fit_shared
from ._typing import LossName, MultiClass, Normalization, Penalty, PsdRepair, SolverName
from ._validation import (
    check_bool,
    check_n_threads,
    check_psd,
    check_random_state,
    check_real,
    check_sample_weight,
    check_verbose,
    group_ids,
)
from .exceptions import (
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDWarning,
    NonFiniteError,
    NotFittedError,
)
from .kernels import (
    FeatureBank,
    Gaussian,
    Kernel,
    KernelBank,
    Linear,
    Polynomial,
    _check_normalize,
)

__all__ = ["MKLClassifier", "MKLRegressor"]

_PENALTIES = tuple(dict.fromkeys(p for row in SOLVERS.values() for p in row.penalties))


class _available_unless:  # noqa: N801 (a decorator, named as scikit-learn's available_if)
    """A method that is absent (``AttributeError``, so ``hasattr`` is False) when
    ``reason(obj)`` returns a reason, with that reason in the message itself: scikit-learn's
    ``available_if`` states only that the attribute is missing and chains the reason."""

    def __init__(self, reason: Callable[[Any], str | None]) -> None:
        self.reason = reason

    def __call__(self, fn: Callable[..., Any]) -> Any:
        reason = self.reason

        class _Method:
            __doc__ = fn.__doc__

            def __set_name__(self, owner: type, name: str) -> None:
                self.name = name

            def __get__(self, obj: Any, owner: type | None = None) -> Any:
                if obj is None:
                    return fn
                why = reason(obj)
                if why is not None:
                    raise AttributeError(f"{type(obj).__name__} has no {self.name}: {why}")
                return fn.__get__(obj, owner)

        return _Method()


#: The solvers that fit explicit features only (feature blocks, low-rank factors).
_FEATURE_SOLVERS = ("svrg", "prox_newton")


def _class_weights(
    class_weight: Any, classes: NDArray[Any], yi: NDArray[np.intp], w: NDArray[np.float64] | None
) -> NDArray[np.float64] | None:
    """The per-sample weights ``w`` (None: ones) times ``class_weight``'s weight of each
    sample's class, as scikit-learn's ``SVC`` defines it: ``"balanced"`` gives class ``k``
    ``n / (K · n_k)``; a dict maps labels to weights (missing labels: 1). None when both are
    None."""
    if class_weight is None:
        return w
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InvalidParameterError(
                f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}",
                parameter="class_weight",
            )
        # scikit-learn's "balanced" counts samples, not weights.
        counts = np.bincount(yi, minlength=len(classes)).astype(np.float64)
        per_class = len(yi) / (len(classes) * counts)
    elif isinstance(class_weight, dict):
        unknown = [k for k in class_weight if k not in set(classes.tolist())]
        if unknown:
            raise InvalidParameterError(
                f"class_weight names labels {unknown!r} that are not among the classes "
                f"{classes.tolist()!r}",
                parameter="class_weight",
            )
        per_class = np.array([float(class_weight.get(c, 1.0)) for c in classes.tolist()])
        if not (np.isfinite(per_class).all() and (per_class > 0).all()):
            raise InvalidParameterError(
                f"class_weight values must be finite and > 0, got {class_weight!r}",
                parameter="class_weight",
            )
    else:
        raise InvalidParameterError(
            f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}",
            parameter="class_weight",
        )
    cw = per_class[yi]
    return cw if w is None else w * cw


def _warn_not_psd(name: str, witness: tuple[int, float, float, float], which: str) -> None:
    """Warn that a fit found a kernel that is not PSD (``FitResult.psd_witness``)."""
    kernel, quad, bound, entry = witness
    cause = (
        "within what rounding the kernel's entries to the stack's precision can do "
        f"({entry:.1e}): e.g. a float32 stack, indefinite by rounding"
        if -quad <= entry
        else f"beyond what rounding the kernel's entries can do ({entry:.1e}): the kernel "
        "itself is indefinite"
    )
    warnings.warn(
        f"{name}{which}: kernel {kernel} is not positive semi-definite: a dual point ρ has "
        f"ρᵀKρ = {quad:.3e}, below −{bound:.1e} (the rounding of its computation) and "
        f"{cause}. Weak duality needs PSD kernels, so the fit has no certificate "
        "(dual_objective_ = -inf). Use a float64 stack, or psd='clip' to shift the training "
        "kernels by their smallest eigenvalue (docs/guide.md §6).",
        KernelNotPSDWarning,
        stacklevel=4,
    )


#: A starting point of one binary problem: SpicyMKL's coefficients ``A`` (M, n), or
#: ``prox_newton``'s feature weights (R,), and the intercept.
_Start: TypeAlias = "tuple[NDArray[np.float64], float]"


def _start_args(solver: str, start: _Start) -> dict[str, Any] | None:
    """The engine's arguments of a warm start for ``solver``; None when the start is of the
    other kind (a one-vs-one pair whose stack moved the choice: it starts cold)."""
    A, b = start
    if solver == "spicy" and A.ndim == 2:
        return {"init_coef": np.ascontiguousarray(A, dtype=np.float64), "init_intercept": b}
    if solver == "prox_newton" and A.ndim == 1:
        weights = np.ascontiguousarray(A, dtype=np.float64)
        return {"init_feature_weights": weights, "init_intercept": b}
    return None


#: One binary problem of a multiclass fit: its stack, ±1 targets, log label, warm start and
#: sample weights.
_Problem: TypeAlias = (
    "tuple[Stack, NDArray[np.float64], str, _Start | None, NDArray[np.float64] | None]"
)


def _solve_record(
    est: _BaseMKL,
    solver: _NativeSolver,
    G: Stack,
    y: NDArray[np.float64],
    settings: _core.Settings,
    label: str,
    start: _Start | None = None,
    weight: NDArray[np.float64] | None = None,
) -> FitRecord:
    """One binary problem of a multiclass fit (a joblib task, maybe in another process)."""
    r = est._solve(solver, G.aligned(), y, settings, label, start, weight)
    return r if isinstance(r, FitRecord) else FitRecord.of(r)


_FITTED = (
    "coef_",
    "dual_coef_",
    "intercept_",
    "kernel_weights_",
    "kernel_norms_",
    "primal_objective_",
    "dual_objective_",
    "duality_gap_",
    "n_iter_",
    "converged_",
    "history_",
    "group_weights_",
    "classes_",
    "kernel_bank_",
    "n_features_in_",
    "n_kernels_",
    "n_train_",
    "psd_shifts_",
)
_HISTORY_DTYPE = np.dtype(
    [
        ("primal", np.float64),
        ("dual", np.float64),
        ("gap", np.float64),
        ("active", np.int64),
        ("seconds", np.float64),
    ]
)


def _decision_labels(f: NDArray[np.float64], classes: NDArray[Any]) -> NDArray[Any]:
    """The labels of binary (the sign of ``f``) or one-vs-rest (the largest column) decision
    values."""
    idx = (f > 0).astype(np.int64) if f.ndim == 1 else np.argmax(f, axis=1)
    out: NDArray[Any] = classes[idx]
    return out


def _logistic_proba(f: NDArray[np.float64]) -> NDArray[np.float64]:
    """Class probabilities of logistic decision values: ``σ(f)`` for two classes, the
    one-vs-rest ``σ(f_k)`` normalised to sum to one for more."""
    if f.ndim == 1:
        p1 = 1.0 / (1.0 + np.exp(-f))
        return np.column_stack([1.0 - p1, p1])
    pr = 1.0 / (1.0 + np.exp(-f))
    out: NDArray[np.float64] = pr / pr.sum(axis=1, keepdims=True)
    return out


def default_kernels(n_features: int) -> list[Kernel]:
    """The bank used when ``kernels=None``.

    Linear, quadratic and three Gaussian widths (0.5, 1 and 2 times sqrt(n_features), suited
    to standardised features), each scaled to unit mean diagonal by the estimators' default
    ``normalize="mean_diag"``.

    Parameters
    ----------
    n_features : int
        Number of columns of ``X``.

    Returns
    -------
    list of Kernel
        Five kernel specifications.

    Examples
    --------
    >>> import multikernel as mk
    >>> mk.default_kernels(4)  # doctest: +NORMALIZE_WHITESPACE
    [Linear(features=None), Polynomial(degree=2, coef0=1.0, scale=1.0, features=None),
     Gaussian(sigma=1.0, features=None), Gaussian(sigma=2.0, features=None),
     Gaussian(sigma=4.0, features=None)]
    """
    s = math.sqrt(n_features)
    return [
        Linear(),
        Polynomial(degree=2),
        Gaussian(sigma=0.5 * s),
        Gaussian(sigma=s),
        Gaussian(sigma=2.0 * s),
    ]


class _BaseMKL(BaseEstimator):  # type: ignore[misc]
    """Shared parameters, validation and kernel handling of the MKL estimators."""

    _losses: tuple[str, ...] = ()
    #: The ``solver`` parameter (a fixed class attribute of :class:`MKLOneClass`).
    solver: str

    # Fitted attributes, set by ``fit`` (documented in the estimators' Attributes sections).
    # Annotations only: an unfitted estimator has none of them. The arrays gain a leading
    # axis of one entry per binary problem for a multiclass classifier. The certificate's
    # scalars are a float (int, bool) for one problem and an array for several: ``Any`` here
    # and in the classifier, so that ``gap: float = clf.duality_gap_`` type-checks for the
    # common binary case without a cast; the regressor and the one-class estimator, which
    # always fit one problem, declare them exactly.
    dual_coef_: NDArray[np.float64]
    intercept_: Any
    kernel_weights_: NDArray[np.float64]
    kernel_norms_: NDArray[np.float64]
    primal_objective_: Any
    dual_objective_: Any
    duality_gap_: Any
    n_iter_: Any
    converged_: Any
    #: A structured array (fields primal, dual, gap, active, seconds), or a list of them
    #: for a multiclass classifier: ``Any`` so that ``history_["gap"]`` type-checks.
    history_: Any
    group_weights_: NDArray[np.float64]
    kernel_bank_: KernelBank | FeatureBank | None
    n_features_in_: int
    n_kernels_: int
    n_train_: int
    psd_shifts_: NDArray[np.float64]

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
        penalty: Penalty = "lp",
        p: float = 2.0,
        l1_ratio: float = 0.5,
        groups: Sequence[int] | None = None,
        C: float = 1.0,
        loss: LossName | None = None,
        epsilon: float = 0.1,
        solver: SolverName = "auto",
        tol: float = 1e-3,
        max_iter: int = 200,
        solver_config: SolverConfig | None = None,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        n_threads: int = 0,
        random_state: int | None = None,
        verbose: int = 0,
        warm_start: bool = False,
        cache_size: float | None = None,
    ) -> None:
        self.kernels = kernels
        self.penalty = penalty
        self.p = p
        self.l1_ratio = l1_ratio
        self.groups = groups
        self.C = C
        self.loss = loss
        self.epsilon = epsilon
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.solver_config = solver_config
        self.normalize = normalize
        self.psd = psd
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.cache_size = cache_size

    # --- validation ---------------------------------------------------------------------

    def _check_params(self) -> tuple[_NativeSolver, _core.Settings]:
        """Validate the hyper-parameters before any kernel is computed; return the solver
        and the engine's settings, validated once here by the engine's own ``validate``
        (every numeric setting); choices between names are checked here."""
        if self.penalty not in _PENALTIES:
            valid = ", ".join(_PENALTIES)
            raise InvalidParameterError(
                f"penalty must be one of {valid}; got {self.penalty!r}", parameter="penalty"
            )
        loss = self._losses[0] if self.loss is None else self.loss
        if loss not in self._losses:
            raise InvalidParameterError(
                f"loss must be one of {', '.join(self._losses)} for {type(self).__name__}; "
                f"got {self.loss!r}",
                parameter="loss",
            )
        solvers = [name for name, row in SOLVERS.items() if self.penalty in row.penalties]
        if self.solver != "auto" and self.solver not in solvers:
            raise InvalidParameterError(
                f"solver={self.solver!r} does not handle penalty={self.penalty!r}; valid: "
                f"auto, {', '.join(solvers)}",
                parameter="solver",
            )
        # The parameters' choice, checked here before any kernel is computed; the stack
        # refines it per engine fit (_native_fit).
        solver = self._choice(loss, None).solver
        row = SOLVERS[solver]
        if loss not in row.losses:
            raise InvalidParameterError(
                f"solver={solver!r} does not handle loss={loss!r}; it handles "
                f"{', '.join(row.losses)} (solver='auto' handles every loss)",
                parameter="loss",
            )
        cfg = row.config() if self.solver_config is None else self.solver_config
        if not isinstance(cfg, row.config):
            raise InvalidParameterError(
                f"solver_config for solver={solver!r} must be a {row.config.__name__}, got "
                f"{type(cfg).__name__}",
                parameter="solver_config",
            )
        if self.penalty == "group":
            if self.groups is None:
                raise InvalidParameterError(
                    "penalty='group' needs groups= (a group id per kernel, or a list of index "
                    "lists)",
                    parameter="groups",
                )
            group_ids(self.groups, None)
        elif self.groups is not None:
            raise InvalidParameterError(
                f"groups is used by penalty='group' only; got groups with penalty={self.penalty!r}",
                parameter="groups",
            )
        check_n_threads(self.n_threads)
        check_psd(self.psd)
        if solver in _FEATURE_SOLVERS and not (
            isinstance(self.kernels, FeatureBank) or self.kernels == "precomputed"
        ):
            raise InvalidParameterError(
                f"solver={solver!r} fits explicit features: pass kernels=FeatureBank(specs, "
                "...), or kernels='precomputed' and a list of feature blocks (or "
                "kernels.low_rank factors) to fit",
                parameter="solver",
            )
        rs = check_random_state(self.random_state)
        check_verbose(self.verbose)
        check_bool(self.warm_start, "warm_start")
        _check_normalize(self.normalize)
        # Checked whatever the penalty and loss, as scikit-learn checks every parameter.
        check_real(self.p, "p", "in [1, inf]", lambda v: v >= 1.0)
        check_real(self.l1_ratio, "l1_ratio", "in [0, 1]", lambda v: 0.0 <= v <= 1.0)
        check_real(self.epsilon, "epsilon", "in [0, inf)", lambda v: 0.0 <= v < math.inf)
        named: dict[str, Setting] = {
            "C": self.C,
            "loss": loss,
            "epsilon": self.epsilon,
            "tol": self.tol,
            "max_iter": self.max_iter,
            **cfg._native(),
        }
        if solver == "mirror":
            if self.penalty == "lp" and self.p != 1:
                raise InvalidParameterError(
                    f"solver='mirror' solves penalty='lp' at p=1 only (one group); got "
                    f"p={self.p!r}; use solver='analytic' or 'auto'",
                    parameter="p",
                )
        else:
            if "lp" in row.penalties:
                named["p"] = self.p
            if solver == "svrg":
                named["seed"] = 0 if rs is None else int(rs)
            if row.penalties != ("lp",):
                named["penalty"] = self.penalty
                named["l1_ratio"] = self.l1_ratio
            if self.penalty == "group":
                # Checked per fit against the stack's kernels (_solve_logged).
                named["groups"] = group_ids(self.groups, None)[0]
        return solver, _core.Settings(solver, named)

    @staticmethod
    def _default_kernels(n_features: int) -> list[Kernel]:
        """The bank of ``kernels=None``."""
        return default_kernels(n_features)

    def _training_stack(
        self, X: Any, y: Any, solver: str, check_input: bool = True, sample_weight: Any = None
    ) -> tuple[Stack, NDArray[Any]]:
        """Validate ``X``/``y``; return the training stack, repaired by ``psd="clip"``
        (``psd_shifts_``), and the targets (ones for a one-class fit, which takes none;
        ``check_input``: see ``fit``). Kernels computed from ``X`` have their normalisation
        statistics weighted by ``sample_weight``."""
        one_class = solver == "one_class"
        threads = check_n_threads(self.n_threads)

        def points(Xr: Any, yr: Any) -> tuple[NDArray[np.float64], Any]:
            if one_class:
                return validate_data(self, Xr, dtype=np.float64), None
            out: tuple[NDArray[np.float64], Any] = validate_data(
                self, Xr, yr, dtype=np.float64, y_numeric=self._y_numeric
            )
            return out

        data, yv = resolve(
            self.kernels, X, None if one_class else y, points=points,
            default_specs=self._default_kernels, normalize=self.normalize, n_threads=threads,
            check_input=check_input, targets=not one_class,
            blocks_only=solver if solver in _FEATURE_SOLVERS else None,
            on_demand=None if one_class else _auto.on_demand(
                solver, self._losses[0] if self.loss is None else self.loss, self.kernels,
                getattr(self, "cache_size", None),  # (absent from older pickles)
            ),
            sample_weight=sample_weight, verbose=int(self.verbose),
        )  # fmt: skip
        self.kernel_bank_ = data.bank
        self.n_kernels_ = data.M
        # Plain data, not the TestSide itself: the fitted state pickles as plain values.
        side = data.test_side()
        self._feature_widths, self._factors = side.widths, side.factors
        self._on_demand = side.on_demand
        G, self.psd_shifts_ = data.stack.repair(self.psd, threads)
        return G, np.ones(data.n) if yv is None else yv

    def _choice(self, loss: str, stack: _auto.StackInfo | None) -> _auto.Choice:
        """The engine solver of a fit on ``stack`` (None: before the input is resolved)."""
        return _auto.choose(
            penalty=self.penalty, p=self.p, loss=loss, solver=self.solver,
            solver_config=self.solver_config, warm_start=self.warm_start, stack=stack,
        )  # fmt: skip

    def _test_stack(self, X: Any) -> TestStack:
        check_is_fitted(self, "dual_coef_")
        side = TestSide(
            self.n_kernels_, self.n_train_, self.kernel_bank_, self._feature_widths,
            getattr(self, "_factors", False),  # (absent from fits pickled before it)
            getattr(self, "_on_demand", False),
        )  # fmt: skip
        return side.stack(X, lambda Xr: validate_data(self, Xr, dtype=np.float64, reset=False))

    _y_numeric = False

    # --- fitting ------------------------------------------------------------------------

    def _clear(self) -> None:
        for name in _FITTED:
            self.__dict__.pop(name, None)

    def _solve(
        self,
        solver: _NativeSolver,
        G: Stack,
        y: NDArray[np.float64],
        settings: _core.Settings,
        label: str = "",
        start: _Start | None = None,
        weight: NDArray[np.float64] | None = None,
    ) -> _core.FitResult | FitRecord:
        # SVRG records one iteration per epoch: its bar counts epochs.
        unit = "epoch" if solver == "svrg" else "it"
        name = f"{type(self).__name__}{label}"
        with _progress.iteration_log(name, self.verbose, int(self.max_iter), unit) as log:
            return self._solve_logged(solver, G, y, settings, start, weight, log)

    def _solve_logged(
        self,
        solver: _NativeSolver,
        G: Stack,
        y: NDArray[np.float64],
        settings: _core.Settings,
        start: _Start | None,
        weight: NDArray[np.float64] | None,
        log: _progress.IterationLog | None,
    ) -> _core.FitResult | FitRecord:
        """:meth:`_solve` with its iteration callback. Samples of weight 0 have no loss and
        are left out of the fit (as libsvm does), their coefficients 0."""
        yc = np.ascontiguousarray(y, dtype=np.float64)
        threads = check_n_threads(self.n_threads)
        if self.penalty == "group":
            settings = settings.replace(groups=group_ids(self.groups, G.M)[0])
        if weight is None or bool(np.all(weight > 0)):
            return self._native_fit(solver, G, yc, settings, start, weight, threads, log)
        keep = np.flatnonzero(weight > 0)
        part = start
        if start is not None and start[0].ndim == 2:  # SpicyMKL's: one column per point
            part = (np.ascontiguousarray(start[0][:, keep]), start[1])
        r = self._native_fit(
            solver, G.subset(keep), np.ascontiguousarray(yc[keep]), settings, part,
            weight[keep], threads, log,
        )  # fmt: skip
        record = r if isinstance(r, FitRecord) else FitRecord.of(r)
        return dataclasses.replace(record, coef=scatter_kept(record.coef, keep, G.n))

    def _native_fit(
        self,
        solver: _NativeSolver,
        G: Stack,
        yc: NDArray[np.float64],
        settings: _core.Settings,
        start: _Start | None,
        weight: NDArray[np.float64] | None,
        threads: int,
        log: _progress.IterationLog | None,
    ) -> _core.FitResult:
        """One engine fit: from ``start`` as given (a SpicyMKL warm start), or the rule's
        choice on this stack with its SpicyMKL continuation (:mod:`._auto`)."""
        w = None if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
        if self.solver == "auto":
            choice = self._choice(str(settings["loss"]), _auto.StackInfo.of(G))
        else:  # a named solver (and one-class fits, which have no other) runs as named
            choice = _auto.Choice(solver)
        init = None if start is None else _start_args(choice.solver, start)
        if init is not None:
            return _core.fit(
                choice.settings(settings), G.engine, yc, n_threads=threads, on_iteration=log,
                sample_weight=w, **init,
            )  # fmt: skip
        r = _core.fit(
            choice.settings(settings), G.engine, yc, n_threads=threads, on_iteration=log,
            sample_weight=w,
        )  # fmt: skip
        spicy = _auto.continuation(choice, r, settings)
        if spicy is not None:
            # SpicyMKL takes over from the wrapper's model; the better certificate is kept.
            if log is not None:
                log.restart(f"{log.label} (SpicyMKL continuing the wrapper)")
            r2 = _core.fit(
                spicy, G.engine, yc, n_threads=threads, on_iteration=log,
                init_coef=np.ascontiguousarray(r.coef), init_intercept=float(r.intercept),
                sample_weight=w,
            )  # fmt: skip
            if r2.converged or r2.gap < r.gap:
                return r2
        return r

    def _previous_fit(self) -> tuple[tuple[Any, ...], NDArray[Any], NDArray[Any]] | None:
        """With ``warm_start``, the last fit by a solver that takes a start (its key, its
        starting points and ``intercept_``: SpicyMKL's ``dual_coef_``, ``prox_newton``'s
        feature weights), read before ``fit`` clears it; None otherwise."""
        key = self.__dict__.get("_warm_key")
        if not self.warm_start or key is None or not hasattr(self, "dual_coef_"):
            return None
        if key[0] == "prox_newton":
            W = np.asarray(self._feature_weights)
            return key, W[0] if np.ndim(self.intercept_) == 0 else W, np.asarray(self.intercept_)
        return key, np.asarray(self.dual_coef_), np.asarray(self.intercept_)

    def _warm_starts(
        self,
        previous: tuple[tuple[Any, ...], NDArray[Any], NDArray[Any]] | None,
        key: tuple[Any, ...] | None,
        index: Sequence[NDArray[np.intp]] | None = None,
    ) -> list[_Start | None] | None:
        """The starting point of each binary problem of this fit from the previous one, when
        both are fits of the same problems by the same solver that takes a start (``key``:
        solver, loss, n, M, feature widths, classes, multiclass scheme); None (cold starts)
        otherwise. ``index``: the points of each one-vs-one problem."""
        self._warm_key = key
        if previous is None or key is None or previous[0] != key:
            return None
        _, A, b = previous
        points = key[0] == "spicy"  # SpicyMKL's start has a column per point
        if A.ndim == (2 if points else 1):
            return [(A, float(b))]
        if index is None or not points:
            return [(A[k], float(b[k])) for k in range(A.shape[0])]
        return [(A[k][:, idx], float(b[k])) for k, idx in enumerate(index)]

    def _warm_key_of(
        self, solver: str, settings: _core.Settings, G: Stack, *extra: Any
    ) -> tuple[Any, ...] | None:
        """What a warm start must share with the previous fit: the engine solver of ``G``
        (one that takes a start, :data:`~multikernel._auto.WARM_SOLVERS`), the loss, n, M and
        the feature widths (and for classifiers the classes and the scheme)."""
        if self.solver == "auto":
            solver = self._choice(str(settings["loss"]), _auto.StackInfo.of(G)).solver
        if solver not in _auto.WARM_SOLVERS:
            return None
        widths = tuple(G.widths) if isinstance(G, Blocks) else None
        return (solver, settings["loss"], G.n, G.M, widths, *extra)

    def _solve_many(
        self,
        solver: _NativeSolver,
        problems: Iterable[_Problem],
        settings: _core.Settings,
    ) -> list[FitRecord]:
        """The binary problems ``(G, y, label)`` of a multiclass fit, through joblib: one after
        the other by default, fanned out under a parallel backend (``joblib.parallel_backend
        ("dask")`` runs them on a Dask cluster). Each fit is deterministic: the same bits
        wherever it runs."""
        todo = list(problems)
        jobs = (
            delayed(_solve_record)(self, solver, G, y, settings, lb, st, w)
            for G, y, lb, st, w in todo
        )
        if not _progress.bars_on(self.verbose):
            out: list[FitRecord] = Parallel()(jobs)
            return out
        # A bar over the problems, ticked as each result arrives (in order).
        name = f"{type(self).__name__}: binary problems"
        with _progress.bar(self.verbose, len(todo), name, "problem") as b:
            out = []
            for r in Parallel(return_as="generator")(jobs):
                out.append(r)
                b.update()
        return out

    def _set_results(
        self,
        results: Sequence[_core.FitResult | FitRecord],
        multi: bool,
        coefs: list[NDArray[Any]] | None = None,
        label: str = "",
    ) -> None:
        """Store the fits as numpy attributes (``coefs`` replaces the results' coefficients,
        e.g. scattered back to all points for one-vs-one; ``label`` names a single fit in the
        warnings, e.g. `` (shared)``)."""

        def stack(values: list[Any]) -> Any:
            return np.asarray(values) if multi else values[0]

        self.dual_coef_ = stack([r.coef for r in results] if coefs is None else coefs)
        self._feature_weights = [np.asarray(r.feature_weights) for r in results]
        self.intercept_ = stack([r.intercept for r in results])
        self.kernel_weights_ = stack([r.kernel_weights for r in results])
        self.kernel_norms_ = stack([r.kernel_norms for r in results])
        self.primal_objective_ = stack([r.primal for r in results])
        self.dual_objective_ = stack([r.dual for r in results])
        self.duality_gap_ = stack([r.gap for r in results])
        self.n_iter_ = stack([r.n_iter for r in results])
        self.converged_ = stack([r.converged for r in results])
        if self.penalty == "group":
            ids, n_groups = group_ids(self.groups, self.n_kernels_)
            self.group_weights_ = stack(
                [_group_weights(r.kernel_weights, ids, n_groups) for r in results]
            )
        hist = [_history(r.history) for r in results]
        self.history_ = hist if multi else hist[0]
        # How each problem ended, for the summary line (plain strings: the fit pickles).
        self._statuses = [str(r.status) for r in results]
        for k, r in enumerate(results):
            which = f" (problem {k})" if multi else label
            if r.psd_witness is not None:
                _warn_not_psd(type(self).__name__, r.psd_witness, which)
            self._warn_unconverged(r, which)

    def _warn_unconverged(self, r: _core.FitResult | FitRecord, which: str) -> None:
        """Warn about a fit that did not reach ``tol`` (``which``: the problem of a multiclass
        fit, or empty)."""
        tol = float(self.tol)
        if not r.converged:
            advice = {
                _core.Status.STALLED: "the gap stopped shrinking at the inner solver's "
                "finest accuracy; increase tol, or normalize kernels of very different "
                "scales",
                _core.Status.UNCERTIFIED: "no dual value certifies the fit, see the "
                "KernelNotPSDWarning",
            }.get(r.status, "increase max_iter or tol")
            if self.solver == "svrg" and r.status == _core.Status.MAX_ITER:
                # First order: its epochs grow with the condition number, ~C·n times the
                # features' squared scale (breast cancer, n = 200, C = 1000: gap 1.8 after
                # 200 epochs, where 'analytic' needs 5 iterations).
                advice += (
                    "; svrg is a first-order method whose epochs grow with C·n_samples and "
                    "the features' scale: at large C use solver='analytic' on the kernels"
                )
            warnings.warn(
                f"{type(self).__name__} did not reach tol{which}: relative duality gap "
                f"{r.gap:.3e} > tol {tol:.3e} after {r.n_iter} iterations "
                f"({r.status}); {advice}",
                ConvergenceWarning,
                stacklevel=4,
            )

    def _problem_labels(self) -> list[str]:
        """The log label of each binary problem of a multiclass fit (as the iteration
        lines')."""
        return [""]

    def _log_summary(self, started: float) -> None:
        """With ``verbose``, one summary record at the end of the fit (``started``: its
        ``time.perf_counter()``): how it ended, its certificate and its active kernels;
        for a multiclass fit one record per binary problem, then one for the whole fit."""
        if not self.verbose:
            return
        seconds = time.perf_counter() - started
        name = type(self).__name__
        multi = np.ndim(self.primal_objective_) > 0
        labels = self._problem_labels() if multi else [""]
        weights = np.atleast_2d(self.kernel_weights_)
        for k, label in enumerate(labels):
            _progress.summary(
                f"{name}{label}",
                primal=float(np.atleast_1d(self.primal_objective_)[k]),
                dual=float(np.atleast_1d(self.dual_objective_)[k]),
                gap=float(np.atleast_1d(self.duality_gap_)[k]),
                tol=float(self.tol),
                n_iter=int(np.atleast_1d(self.n_iter_)[k]),
                converged=bool(np.atleast_1d(self.converged_)[k]),
                status=self._statuses[k],
                active=int(np.count_nonzero(weights[k] > 0)),
                n_kernels=self.n_kernels_,
                seconds=None if multi else seconds,
            )
        if multi:
            _progress.info(
                "%s: %d binary problems, %d converged, largest gap %.3e, %.2f s",
                name, len(labels), int(np.count_nonzero(self.converged_)),
                float(np.max(self.duality_gap_)), seconds,
            )  # fmt: skip

    def _feature_coefs(self, G: Stack) -> None:
        """With feature blocks: ``coef_``, per kernel the weights ``w_m = Φ_mᵀ A[m]`` in
        feature space (a row per problem for more than one), so prediction needs no
        training features."""
        if not isinstance(G, Blocks):
            return
        if all(len(w) for w in self._feature_weights):
            # The solver's own weights (svrg, prox_newton), split into the kernels' blocks.
            ends = np.cumsum(G.widths)[:-1]
            rows = [np.split(w, ends) for w in self._feature_weights]
            one = len(rows) == 1
            self.coef_ = [rows[0][m] if one else np.stack([r[m] for r in rows]) for m in range(G.M)]
            return
        self.coef_ = G.weights(np.asarray(self.dual_coef_))

    def _decision(self, G_test: TestStack) -> NDArray[np.float64]:
        """Decision values on a test stack: dense kernels read ``dual_coef_``, feature blocks
        ``coef_``."""
        b = np.asarray(self.intercept_)
        return G_test.decision(np.asarray(self.dual_coef_), b, getattr(self, "coef_", None))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if isinstance(self.kernels, str) and self.kernels == "precomputed":
            tags.input_tags.pairwise = True
        return tags


def _name(label: Any) -> str:
    """A class label as a log line names it: ``'a'`` or ``3``, not ``np.int64(3)``."""
    return repr(label.item() if isinstance(label, np.generic) else label)


def _group_weights(
    weights: NDArray[np.float64], ids: list[int], n_groups: int
) -> NDArray[np.float64]:
    """γ of the group penalty from the kernel weights ``θ_jk = λ_jk/γ_j`` (normalised to sum
    one): each ``λ_j`` sums to one, so ``Σ_{k∈G_j} θ_jk ∝ 1/γ_j`` (docs/mathematics.md §4)."""
    sums = np.bincount(np.asarray(ids), weights=weights, minlength=n_groups)
    inv = np.divide(1.0, sums, out=np.zeros(n_groups), where=sums > 0)
    out: NDArray[np.float64] = inv / inv.sum()
    return out


def _history(rows: NDArray[np.float64]) -> NDArray[Any]:
    """The engine's ``(n_records, 5)`` history as a structured array."""
    out = np.empty(rows.shape[0], dtype=_HISTORY_DTYPE)
    for name, column in zip(_HISTORY_DTYPE.names or (), rows.T, strict=True):
        out[name] = column
    return out


class MKLClassifier(ClassifierMixin, _BaseMKL):  # type: ignore[misc]
    """Multiple kernel learning classifier.

    Learns ``f(x) = Σ_m f_m(x) + b`` with one function per kernel by minimising
    ``C Σ_i ℓ(y_i, f(x_i)) + Ω(‖f_1‖, …, ‖f_M‖)``, and certifies the solution with a duality
    gap (see docs/mathematics.md).

    Parameters
    ----------
    kernels : sequence of Kernel, FeatureBank, "precomputed" or None, default None
        Kernel specifications, evaluated on ``X`` (cross kernels at predict time); or a
        :class:`multikernel.kernels.FeatureBank` (fitted on ``X`` by ``fit``, a copy): the
        solvers then read the low-rank kernels ``Φ_m Φ_mᵀ`` (no ``(M, n, n)`` stack), and the
        fit sets ``coef_``, per kernel the weights in feature space; or
        ``"precomputed"``: ``fit(G, y)`` with ``G`` of shape (M, n, n) and
        ``predict(G_test)`` with ``G_test`` of shape (M, n_test, n). None uses
        :func:`default_kernels`. A precomputed ``G`` may be float32: the solvers then read
        half the bytes (ℓp fits about 1.5x faster on the benchmark of Kloft et al.), and the
        certificate is exact for the float32 kernels. ``fit`` first checks that ``G`` is
        finite and symmetric, which reads all of it once. With ``"precomputed"`` (or None),
        ``X`` may also be a list of feature blocks ``(n, D_m)`` or the
        :class:`~multikernel.kernels.LowRankFactors` of
        :func:`~multikernel.kernels.low_rank` (``K_m = G_m G_mᵀ``, read at their rank);
        ``predict`` then takes the test points' rows of the blocks or factors (or, after
        factors, the dense cross kernels). With ``X`` a pandas DataFrame, the kernels'
        ``features`` may name its columns (``Gaussian(features=["mean radius"])``,
        :func:`~multikernel.kernels.view_bank`): ``fit`` resolves them to indices
        (``kernel_bank_`` holds the resolved kernels, ``feature_names_in_`` the names) and
        ``predict`` refuses a DataFrame whose columns differ.
    penalty : {"lp", "l1", "elasticnet", "group"}, default "lp"
        ``"lp"``: ``Ω = ½ (Σ_m ‖f_m‖^q)^{2/q}``, ``q = 2p/(p+1)``, i.e. Kloft et al.'s
        ℓp-norm MKL with ``‖θ‖_p ≤ 1``. ``"l1"``: ``Ω = Σ_m ‖f_m‖`` (sparse MKL, SpicyMKL);
        ``"elasticnet"``: ``Ω = r Σ_m ‖f_m‖ + (1 − r)/2 Σ_m ‖f_m‖²`` with ``r = l1_ratio``.
        ``"group"``: ``Ω = ½ max_j (Σ_{k∈G_j} ‖f_k‖)²`` over the groups of ``groups`` (Nath et
        al.'s mixed norm: sparse within a group, every group used), solved by ``"mirror"``,
        or ``"prox_newton"`` on explicit features.
    p : float, default 2.0
        Norm of the kernel weights, in [1, inf]; ``p=inf`` is an SVM on the unweighted sum of
        the kernels.
    l1_ratio : float, default 0.5
        Elastic-net mixing (``penalty="elasticnet"``).
    groups : sequence of int, or sequence of sequences of int, optional
        The kernel groups of ``penalty="group"`` (required there, refused otherwise): an
        integer group label per kernel (groups ordered by sorted label), or a list of index
        lists (group ``j`` = the kernels of list ``j``, each kernel in exactly one).
        :func:`multikernel.kernels.view_bank` builds both specifications and groups.
    C : float, default 1.0
        Weight of the loss (as in scikit-learn's SVC).
    loss : {"hinge", "squared_hinge", "logistic"}, optional
        Classification loss; None means ``"hinge"``.
    epsilon : float, default 0.1
        Unused by classification losses (kept for a uniform parameter set; still checked to
        be in [0, inf), as ``p`` and ``l1_ratio`` are whatever the penalty).
    solver : {"auto", "analytic", "interleaved", "spicy", "wrapper", "prox_newton", \
"mirror", "svrg"}, default "auto"
        For ``"lp"``: ``"analytic"``, Kloft's Algorithm 1 (single-kernel solves — SMO for the
        hinge losses, Newton for logistic — between closed-form updates of θ), or
        ``"interleaved"``, Algorithm 2 (θ updated inside SMO; hinge only); ``"auto"`` picks
        ``"analytic"``, the fastest valid solver for every loss in our benchmarks, except at
        ``p=1``, where it picks ``"mirror"`` (Kloft's update has no convergence guarantee
        there and crawls). For ``"l1"`` and ``"elasticnet"``: ``"spicy"`` (SpicyMKL's dual
        augmented Lagrangian) or ``"wrapper"`` (Newton steps on the kernel weights around
        one warm-started single-kernel solve: SMO, or Newton for the smooth losses);
        ``"auto"`` picks ``"wrapper"`` unless ``warm_start`` or a ``SpicyConfig`` is
        given. On explicit features (``kernels=FeatureBank(...)``, feature blocks or
        low-rank factors) whose total width is at most half the points (a quarter with the
        hinge loss), ``"auto"`` picks ``"prox_newton"`` instead (with ``warm_start``
        too, not with a ``SpicyConfig``): proximal Newton in feature space (the group lasso
        over the kernels' weights), whose systems are the size of the working set's
        features, not of ``n``; the hinge-type losses through a continuation on their
        smoothed versions, certified by the loss's own duality gap. It also solves ``"lp"``
        at ``p > 1`` on explicit features (Newton steps on the smooth penalty), and
        ``"auto"`` picks it there on the same widths from ``p = 1.05`` unless an
        ``AnalyticConfig`` is given.
        For ``"group"``:
        ``"mirror"`` (mirror descent over the kernel weights, Nath et al.), also ``"auto"``; it
        solves ``"lp"`` at ``p=1`` too (one group). On explicit features of the same widths
        ``"auto"`` picks ``"prox_newton"`` for ``"group"`` unless a ``MirrorConfig`` is given:
        Newton steps on a smoothed penalty whose smoothing is lowered step by step, certified
        by the exact group dual.
        ``"svrg"`` also solves ``"lp"`` (smooth losses: logistic, squared, squared_hinge) by
        multi-epoch stochastic variance-reduced gradient on explicit features, for large n:
        it needs ``kernels=FeatureBank(...)`` and is seeded by ``random_state``.
    tol : float, default 1e-3
        Stop when the relative duality gap is at most ``tol``.
    max_iter : int, default 200
        Maximal number of outer iterations.
    solver_config : AnalyticConfig, InterleavedConfig, SpicyConfig, WrapperConfig, \
ProxNewtonConfig, MirrorConfig or SvrgConfig, optional
        Solver-specific settings (defaults when None).
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"} or None, \
default "mean_diag"
        Normalisation of kernels computed from specifications (see
        :func:`multikernel.kernels.gram`); ignored for precomputed kernels. None is
        ``"none"``.
    psd : {"check", "clip"}, default "check"
        What ``fit`` does about training kernels that are not positive semi-definite (PSD),
        e.g. float32 stacks indefinite by rounding (docs/guide.md §6). ``"check"``: nothing
        is changed; a fit whose dual point exploits a negative direction has no certificate
        and warns (:class:`~multikernel.exceptions.KernelNotPSDWarning`). ``"clip"``: the
        training stack (precomputed or computed from ``kernels``) is first repaired by
        :func:`multikernel.kernels.shift_to_psd`: ``K_m + s_m I`` with ``s_m`` the smallest
        shift that makes ``K_m`` PSD as stored (0 for a kernel that is, left bit-identical;
        ``fit`` then makes one copy of the stack if any ``s_m > 0``), recorded in
        ``psd_shifts_``. The shift is a ridge on the training diagonal only: the fit solves
        the problem of ``K_m + s_m I``, and test-time cross kernels are unchanged. A kernel
        that needs more than 1 % of its largest diagonal entry is no rounding case and is
        refused (``KernelNotPSDError``). Costs an ``O(n³)`` factorisation per kernel.
    multi_class : {"ovr", "ovo", "shared"}, default "ovr"
        How more than two classes are handled: one-vs-rest (one problem per class),
        one-vs-one (one problem per pair of classes, on their points only), or ``"shared"``:
        the one-vs-rest problems coupled through one set of kernel weights, minimising
        ``C Σ_c Σ_i w_i ℓ(y_i^c, f^c(x_i)) + Ω(s)`` with ``s_m = sqrt(Σ_c ‖f_m^c‖²)`` and
        ``w`` the samples' weights (``sample_weight`` times ``class_weight``; 1 without)
        (docs/mathematics.md §3.8). ``"shared"`` fits ``penalty="lp"``
        (``Ω = ½ (Σ_m s_m^q)^{2/q}``, ``solver`` ``"auto"`` or ``"analytic"``) and
        ``penalty="l1"`` (``Ω = Σ_m s_m``, ``kernel_weights_ = s / Σ s``) and
        ``penalty="elasticnet"`` (``Ω = r Σ_m s_m + (1 − r)/2 Σ_m s_m²``, ``r = l1_ratio``)
        and ``penalty="group"`` (``Ω = ½ max_j (Σ_{k∈G_j} s_k)²`` over ``groups``, by Nath et
        al.'s mirror descent; ``kernel_weights_`` and ``group_weights_`` as the binary group
        fit reports them), the last three with ``solver="auto"``, from kernel specifications
        or a precomputed ``(M, n, n)`` stack; ``kernel_weights_`` and ``kernel_norms_`` are
        then of shape (M,) and the certificate attributes are the whole problem's scalars. It
        refuses a ``FeatureBank``, feature blocks or factors, ``cache_size``, a
        ``solver_config`` with ``"l1"`` / ``"elasticnet"`` / ``"group"`` and
        ``probability=True`` with a hinge-type loss. With two classes every choice is the
        binary fit.
    probability : bool, default False
        For the hinge-type losses, fit Platt's sigmoid ``1/(1 + exp(A f + B))`` to decision
        values from an internal 5-fold cross-validation of every binary problem (as
        scikit-learn's ``SVC(probability=True)``: five more fits per problem), so that
        ``predict_proba`` is available; one-vs-one pairs are coupled (Wu, Lin & Weng 2004).
        The logistic loss has probabilities of its own and ignores it.
    class_weight : dict, "balanced" or None, default None
        A weight per class on the loss of its samples, as scikit-learn's ``SVC``: a dict maps
        labels to weights (missing labels: 1); ``"balanced"`` weights class ``k`` by
        ``n_samples / (n_classes · n_k)``. Multiplies ``fit``'s ``sample_weight``; taken by
        the same solvers.
    n_threads : int, default 0
        Threads, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or ``OMP_NUM_THREADS`` when that
        is set (joblib's workers set it to their share); ``-k`` all but ``k − 1``; ``k > 0`` that
        many, clipped to the available cores.
    random_state : int, optional
        Seed of the stochastic solver ``"svrg"`` and of the folds of ``probability=True``,
        in [0, 2**64) (None: 0); the other solvers are deterministic and ignore it.
    verbose : int, default 0
        ``0``: silent. ``1``: INFO records on the ``multikernel`` logger (a stderr handler is
        added when logging is not configured): one per outer iteration, its certificate
        (primal, dual and the relative gap they give; an iterate that is not the best so far,
        or a restricted working-set step without a whole-problem primal, is told apart from
        the certificate), active kernels and seconds; and one summary line at the end of the
        fit (how it ended, iterations, seconds, certificate, active kernels). A multiclass
        fit logs one summary line per binary problem, then one for the whole fit. ``2`` or
        more: progress bars instead of the iteration lines (over the iterations, SVRG's
        epochs, the binary problems and the probability folds), the summary lines kept;
        they need tqdm (the ``progress`` extra), without which ``2`` logs as ``1``.
    warm_start : bool, default False
        ``penalty="l1"`` and ``"elasticnet"`` (SpicyMKL, and ``prox_newton`` on explicit
        features), and ``"lp"`` with ``prox_newton``: when True, ``fit`` starts from the
        previous fit's solution (SpicyMKL's ``dual_coef_``, ``prox_newton``'s feature
        weights, and ``intercept_``), as
        scikit-learn's ``warm_start`` does: ``set_params(C=...)`` then ``fit`` again follows
        a grid of C (or of ``l1_ratio``, ``tol``) at a fraction of the cost of cold starts.
        The start is certified first (a fit already optimal for the new settings ends
        there); the result is the same certified optimum as from a cold start. A previous
        fit that cannot seed this one (another solver, loss, number of points, kernels or
        feature widths, classes or ``multi_class``) is ignored: the fit starts cold,
        silently. The other solvers always start cold, so with ``warm_start=True``
        ``solver="auto"`` picks ``"prox_newton"`` for ``"l1"``, ``"elasticnet"`` and
        ``"lp"`` (p ≥ 1.05) on explicit features of total width at most n/2 (n/4 with the
        hinge), and ``"spicy"`` otherwise (``"analytic"`` for ``"lp"``, which starts
        cold).
    cache_size : float or None, default None
        Megabytes of kernel values the solver may hold when the kernels are computed on
        demand (half for columns of the combined kernel, half for a packed working set of
        points). Given, the kernels of specifications are always computed on demand: entries
        are evaluated from ``X`` when the solver reads them and no ``(M, n, n)`` stack is
        stored (solvers ``analytic``, ``wrapper`` and ``mirror`` with the hinge, squared
        hinge or ε-insensitive loss; normalisations ``none``, ``trace``, ``mean_diag``,
        ``spherical``). None: on demand
        only when the float64 stack would exceed 2 GiB and the fit allows it, with a
        1024 MB cache (docs/performance.md, "Beyond memory").

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    probA_, probB_ : ndarray of shape (n_problems,)
        With ``probability=True`` and a hinge-type loss, Platt's ``A`` and ``B`` of each binary
        problem (one for two classes); empty otherwise.
    dual_coef_ : ndarray of shape (M, n_train), or (n_problems, M, n_train) for multiclass
        Per-kernel coefficients ``A``: ``f_m(x) = Σ_i A[m, i] k_m(x, x_i)``.
    intercept_ : float, or ndarray of shape (n_problems,) for multiclass
        The offset ``b``.
    kernel_weights_ : ndarray of shape (M,) or (n_problems, M)
        The kernel combination: θ with unit p-norm for ``"lp"``; ``‖f_m‖ / Σ_k ‖f_k‖`` on the
        simplex for ``"l1"`` and ``"elasticnet"`` (zero exactly for unused kernels);
        ``λ_jk/γ_j`` normalised to the simplex for ``"group"`` (and for ``"lp"`` solved by
        ``"mirror"``, which then equals the unit 1-norm θ).
    kernel_norms_ : ndarray of shape (M,) or (n_problems, M)
        ``‖f_m‖`` in each RKHS.
    primal_objective_, dual_objective_, duality_gap_ : float, or ndarray of shape \
(n_problems,)
        The certificate: primal value, dual value of a feasible dual point, and
        ``(P − D)/|P|``.
    n_iter_ : int, or ndarray of shape (n_problems,)
        Outer iterations run (a warm start's certificate of its starting point counts as
        one).
    converged_ : bool, or ndarray of shape (n_problems,)
        Whether the duality gap reached ``tol``.
    history_ : structured ndarray of shape ``(n_iter_,)``, or a list of them for multiclass
        Per outer iteration: primal, dual, gap, active kernels, seconds.
    group_weights_ : ndarray of shape (n_groups,) or (n_problems, n_groups)
        ``penalty="group"`` only: the group weights γ on the simplex (in the order of
        ``groups``; one vector for ``multi_class="shared"``). At the optimum
        ``γ_j ∝ max_{k∈G_j} ‖β‖_{K_k}`` (the group's share of the dual norm,
        ``A[k] = θ_k β``), and the group sums ``Σ_{k∈G_j} ‖f_k‖`` are equal.
    kernel_bank_ : KernelBank, FeatureBank or None
        The fitted bank that computes the test kernels, or the test features for a
        ``FeatureBank`` (None for precomputed kernels); its kernels read columns by index
        (names resolved).
    coef_ : list of ndarray of shape (D_m,) or (n_problems, D_m)
        With ``kernels=FeatureBank``: per kernel, the weights ``w_m = Φ_mᵀ A[m]`` in its
        feature space, so that ``f_m(x) = φ_m(x)ᵀ w_m`` (not set otherwise).
    n_features_in_ : int
        Columns of ``X`` (not set for precomputed kernels).
    n_kernels_ : int
        The number of kernels M.
    n_train_ : int
        The number of training points.
    pairs_ : ndarray of shape (n_pairs, 2)
        The class indices ``(a, b)`` of each one-vs-one problem (``a`` positive); empty
        otherwise.
    psd_shifts_ : ndarray of shape (M,)
        The shifts ``s_m`` added to the training kernels' diagonals by ``psd="clip"``; all
        zeros when nothing was shifted (always with ``psd="check"``, and for feature blocks,
        PSD by construction).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> import multikernel as mk
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = mk.MKLClassifier(p=2.0, C=1.0).fit(X[:300], y[:300])
    >>> bool(clf.duality_gap_ <= 1e-3), bool(clf.score(X[300:], y[300:]) > 0.9)
    (True, True)
    """

    _losses = ("hinge", "squared_hinge", "logistic")

    classes_: NDArray[Any]
    pairs_: NDArray[np.int64]

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
        penalty: Penalty = "lp",
        p: float = 2.0,
        l1_ratio: float = 0.5,
        groups: Sequence[int] | None = None,
        C: float = 1.0,
        loss: LossName | None = None,
        epsilon: float = 0.1,
        solver: SolverName = "auto",
        tol: float = 1e-3,
        max_iter: int = 200,
        solver_config: SolverConfig | None = None,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        multi_class: MultiClass = "ovr",
        probability: bool = False,
        class_weight: dict[Any, float] | Literal["balanced"] | None = None,
        n_threads: int = 0,
        random_state: int | None = None,
        verbose: int = 0,
        warm_start: bool = False,
        cache_size: float | None = None,
    ) -> None:
        super().__init__(
            kernels=kernels,
            penalty=penalty,
            p=p,
            l1_ratio=l1_ratio,
            groups=groups,
            C=C,
            loss=loss,
            epsilon=epsilon,
            solver=solver,
            tol=tol,
            max_iter=max_iter,
            solver_config=solver_config,
            normalize=normalize,
            psd=psd,
            n_threads=n_threads,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            cache_size=cache_size,
        )
        self.multi_class = multi_class
        self.probability = probability
        self.class_weight = class_weight

    def fit(
        self, X: Any, y: Any, sample_weight: Any = None, check_input: bool = True
    ) -> MKLClassifier:
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n, n) if precomputed
            Training points, or the training kernel stack for ``kernels="precomputed"``.
        y : array-like of shape (n_samples,)
            Class labels (any hashable type: strings are fine), two classes at least.
        sample_weight : array-like of shape (n_samples,), default None
            A weight ``w_i ≥ 0`` per sample on its loss: the data term becomes
            ``C Σ_i w_i ℓ(y_i, f(x_i))`` (SMO's boxes ``0 ≤ α_i ≤ C w_i``, as SVC's), so an
            integer weight equals that many copies of the sample; samples of weight 0 are left
            out. Multiplied by ``class_weight``. Taken by every solver and by
            ``multi_class="shared"`` (every class's loss of sample ``i`` weighted by ``w_i``,
            docs/mathematics.md §3.8). The kernels' normalisation
            statistics are weighted by it too (integer weights give the kernels of duplicated
            rows).
        check_input : bool, default True
            False skips :func:`~multikernel.kernels.validate_stack`'s read of a dense
            precomputed stack (shape and dtype are still checked), for a stack known to be
            valid, as scikit-learn's ``Lasso.fit``; see docs/guide.md §6. Ignored for other
            inputs.

        Returns
        -------
        MKLClassifier
            ``self``, fitted. A fit that does not reach ``tol`` within ``max_iter`` warns
            with a ``ConvergenceWarning``; one whose dual point proves a kernel not
            positive semi-definite has no certificate and warns with
            :class:`~multikernel.exceptions.KernelNotPSDWarning` (docs/guide.md §6).

        Raises
        ------
        ValueError
            An invalid hyper-parameter, a solver that does not handle the penalty or the
            loss, non-finite or ill-shaped data, fewer than two classes, or (precomputed)
            a stack that is not symmetric.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> import multikernel as mk
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = mk.MKLClassifier(C=10.0).fit(X, y)  # one-vs-rest: three problems
        >>> clf.classes_, clf.dual_coef_.shape, clf.kernel_weights_.shape
        (array([0, 1, 2]), (3, 5, 150), (3, 5))
        >>> G = mk.kernels.gram(X, mk.default_kernels(4), normalize="mean_diag")
        >>> pre = mk.MKLClassifier(kernels="precomputed", C=10.0).fit(G, y)
        >>> bool(abs(pre.primal_objective_ - clf.primal_objective_).max() < 1e-8)
        True
        """
        started = time.perf_counter()
        previous = self._previous_fit()
        self._clear()
        shared = self.multi_class == "shared"
        if shared:
            self._check_shared()
        solver, settings = self._check_params()
        if self.multi_class not in ("ovr", "ovo", "shared"):
            raise InvalidParameterError(
                f"multi_class must be 'ovr', 'ovo' or 'shared', got {self.multi_class!r}",
                parameter="multi_class",
            )
        platt = check_bool(self.probability, "probability") and settings["loss"] != "logistic"

        def stack_weights(yv: Any) -> NDArray[np.float64] | None:
            # The normalisation statistics weigh the points as the loss does, class_weight
            # included: class_weight={k: 3} is then sample_weight 3 on class k, and both the
            # fit of the rows of class k written three times.
            check_classification_targets(yv)
            classes, yi = np.unique(yv, return_inverse=True)
            w = check_sample_weight(sample_weight, len(yi))
            return _class_weights(self.class_weight, classes, yi, w)

        # A shared fit reads a dense stack: never kernels computed on demand.
        G, yv = self._training_stack(
            X, y, "shared" if shared else solver, check_bool(check_input, "check_input"),
            sample_weight if self.class_weight is None else stack_weights,
        )  # fmt: skip
        if shared and not isinstance(G, Dense):
            raise InvalidParameterError(
                "multi_class='shared' fits a dense kernel stack (kernels=specifications, or "
                "kernels='precomputed' with an (M, n, n) stack); got feature blocks or "
                "low-rank factors: use multi_class='ovr' for them",
                parameter="multi_class",
            )
        check_classification_targets(yv)
        classes, yi = np.unique(yv, return_inverse=True)
        if len(classes) < 2:
            raise InvalidInputError(
                f"the training data must contain at least two classes, got {len(classes)} class"
            )
        sw = check_sample_weight(sample_weight, G.n)
        sw = _class_weights(self.class_weight, classes, yi, sw)
        if sw is not None:
            for k in range(len(classes)):
                if not (sw[yi == k] > 0).any():
                    raise InvalidInputError(
                        f"every sample of class {classes[k]!r} has weight 0: nothing to learn "
                        "it from"
                    )
        results: Sequence[_core.FitResult | FitRecord] = []
        coefs: list[NDArray[Any]] | None = None
        problems: list[tuple[int, int]] = []
        scheme = self.multi_class if len(classes) > 2 else None
        key = self._warm_key_of(solver, settings, G, tuple(classes.tolist()), scheme)
        # Each problem and its weights, for Platt.
        binary: list[tuple[Stack, NDArray[np.float64], NDArray[np.float64] | None]] = []
        if len(classes) == 2:
            st = self._warm_starts(previous, key)
            yb = np.where(yi == 1, 1.0, -1.0)
            binary = [(G, yb, sw)]
            results = [self._solve(solver, G, yb, settings, start=st[0] if st else None, weight=sw)]
        elif shared:
            assert isinstance(G, Dense)  # checked above
            self._set_shared(G, yi, len(classes), settings, sw)
        elif self.multi_class == "ovr":
            starts = self._warm_starts(previous, key) or [None] * len(classes)

            # One problem per class, through joblib (fanned out under a parallel backend).
            def ovr() -> Iterator[_Problem]:
                for k in range(len(classes)):
                    label = f" (class {_name(classes[k])} vs rest)"
                    yield G, np.where(yi == k, 1.0, -1.0), label, starts[k], sw

            results = self._solve_many(solver, ovr(), settings)
            binary = [(G, np.where(yi == k, 1.0, -1.0), sw) for k in range(len(classes))]
        else:
            # One-vs-one: each pair on its own points; coefficients scattered back to all n.
            n = G.n
            problems = [(a, b) for a in range(len(classes)) for b in range(a + 1, len(classes))]
            index = [np.flatnonzero((yi == a) | (yi == b)) for a, b in problems]
            pair_starts = self._warm_starts(previous, key, index) or [None] * len(problems)

            def ovo() -> Iterator[_Problem]:
                for (a, b), idx, st in zip(problems, index, pair_starts, strict=True):
                    label = f" (class {_name(classes[a])} vs {_name(classes[b])})"
                    w = None if sw is None else sw[idx]
                    yield G.subset(idx), np.where(yi[idx] == a, 1.0, -1.0), label, st, w

            results = self._solve_many(solver, ovo(), settings)
            if platt:
                binary = [
                    (
                        G.subset(idx),
                        np.where(yi[idx] == a, 1.0, -1.0),
                        None if sw is None else sw[idx],
                    )
                    for (a, _), idx in zip(problems, index, strict=True)
                ]
            coefs = []
            for r, idx in zip(results, index, strict=True):
                full = np.zeros((G.M, n))
                full[:, idx] = r.coef
                coefs.append(full)
        if results:
            self._set_results(results, multi=len(classes) > 2, coefs=coefs)
        self.classes_ = classes
        self.pairs_ = np.asarray(problems, dtype=np.int64).reshape(-1, 2)
        self.n_train_ = G.n
        self._feature_coefs(G)
        ab = [self._platt(solver, settings, Gp, yb, wb) for Gp, yb, wb in binary] if platt else []
        self.probA_ = np.array([a for a, _ in ab], dtype=np.float64)
        self.probB_ = np.array([b for _, b in ab], dtype=np.float64)
        self._log_summary(started)
        return self

    def _check_shared(self) -> None:
        """Refuse, before any kernel is computed and before the solver is chosen (which
        would name the ``l1`` solvers'), what ``multi_class="shared"`` does not fit."""
        what: tuple[str, str] | None = None
        loss = self._losses[0] if self.loss is None else self.loss
        platt = check_bool(self.probability, "probability") and loss != "logistic"
        if self.penalty not in SHARED_PENALTIES:
            what = (
                "penalty",
                f"penalty={self.penalty!r}; it fits penalty='lp' (p in [1, inf]), "
                "penalty='l1', penalty='elasticnet' and penalty='group'",
            )
        elif self.solver not in ("auto", "analytic") or (
            self.penalty != "lp" and self.solver != "auto"
        ):
            what = (
                "solver",
                f"solver={self.solver!r}; its solver is 'auto' (Kloft's alternation, or "
                "mirror descent for penalty='group', on the engine's single-kernel solves; "
                "'analytic' names it for penalty='lp')",
            )
        elif self.solver_config is not None and not isinstance(self.solver_config, AnalyticConfig):
            what = "solver_config", "a solver_config other than AnalyticConfig"
        elif self.solver_config is not None and self.penalty != "lp":
            # solver='auto' reads the config as the l1 solvers' (wrapper, spicy).
            what = (
                "solver_config",
                f"a solver_config with penalty={self.penalty!r} (its solves take defaults)",
            )
        elif isinstance(self.kernels, FeatureBank):
            what = "kernels", "a FeatureBank; it fits kernel specifications or 'precomputed'"
        elif self.cache_size is not None:
            what = "cache_size", "cache_size= (kernels computed on demand); it reads a stack"
        elif platt:
            what = (
                "probability",
                (
                    "probability=True with a hinge-type loss; use loss='logistic' for "
                    "probabilities, or multi_class='ovr'"
                ),
            )
        if what is not None:
            raise InvalidParameterError(
                f"multi_class='shared' does not take {what[1]}", parameter=what[0]
            )

    def _set_shared(
        self,
        G: Dense,
        yi: NDArray[np.intp],
        n_classes: int,
        settings: _core.Settings,
        weight: NDArray[np.float64] | None,
    ) -> None:
        """Fit the one-vs-rest problems coupled through one θ (docs/mathematics.md §3.8)
        and store the whole problem's model and certificate. ``weight``: the samples'
        weights (``class_weight`` included); samples of weight 0 have no loss in any class
        and are left out of the fit (as :meth:`_solve_weighted`), their coefficients 0."""
        keep = None if weight is None else np.flatnonzero(weight > 0)
        if keep is not None and len(keep) < len(yi):
            assert weight is not None
            r = self._fit_shared(G.subset(keep), yi[keep], n_classes, settings, weight[keep])
            r = dataclasses.replace(r, coef=scatter_kept(r.coef, keep, G.n))
        else:
            r = self._fit_shared(G, yi, n_classes, settings, weight)
        # One record with a leading class axis: the single-fit path of _set_results.
        self._set_results([r], multi=False, label=" (shared)")

    def _fit_shared(
        self,
        G: Dense,
        yi: NDArray[np.intp],
        n_classes: int,
        settings: _core.Settings,
        weight: NDArray[np.float64] | None,
    ) -> FitRecord:
        """One shared fit on the samples of positive weight."""
        Y = np.stack([np.where(yi == k, 1.0, -1.0) for k in range(n_classes)])
        cfg = self.solver_config if isinstance(self.solver_config, AnalyticConfig) else None
        inner = {key: settings[key] for key in ("C", "loss", "epsilon", "tol", "max_iter")} | (
            cfg or AnalyticConfig()
        )._native()
        name = f"{type(self).__name__} (shared)"
        groups = group_ids(self.groups, G.M)[0] if self.penalty == "group" else None
        with _progress.iteration_log(name, self.verbose, int(self.max_iter), "it") as log:
            return fit_shared(
                G.G, Y, inner, penalty=str(self.penalty), p=float(self.p),
                l1_ratio=float(self.l1_ratio), groups=groups,
                n_threads=check_n_threads(self.n_threads), sample_weight=weight,
                on_iteration=log,
            )  # fmt: skip

    def _problem_labels(self) -> list[str]:
        if self.multi_class == "ovo":
            c = self.classes_
            return [f" (class {_name(c[a])} vs {_name(c[b])})" for a, b in self.pairs_]
        return [f" (class {_name(c)} vs rest)" for c in self.classes_]

    def _platt(
        self,
        solver: _NativeSolver,
        settings: _core.Settings,
        G: Stack,
        y: NDArray[np.float64],
        w: NDArray[np.float64] | None,
    ) -> tuple[float, float]:
        """Platt's ``(A, B)`` of one binary problem from out-of-fold decision values (5
        stratified folds, fewer when a class has fewer points; each fold's fit weighted by
        ``w``, the sigmoid's fit unweighted, as libsvm's)."""
        smallest = int(min((y > 0).sum(), (y < 0).sum()))
        if smallest < 2:
            raise InvalidInputError(
                f"probability=True cross-validates every binary problem and needs at least two "
                f"points of each of its classes; one has {smallest}"
            )

        n_splits = min(5, smallest)
        desc = f"{type(self).__name__}: probability folds"
        with _progress.bar(self.verbose, n_splits, desc, "fold", leave=False) as b:

            def decision(tr: NDArray[np.intp], te: NDArray[np.intp]) -> NDArray[np.float64]:
                # A fit on the points tr, evaluated on the points te of the same stack.
                sub = G.subset(tr)
                wt = None if w is None else w[tr]
                r = self._solve(solver, sub, y[tr], settings, " (probability fold)", weight=wt)
                A = np.asarray(r.coef)
                b.update()
                return G.cross(te, tr).decision(A, float(r.intercept), sub.weights(A))

            seed = (check_random_state(self.random_state) or 0) % 2**32
            return platt_fit(out_of_fold(decision, y, n_splits, seed), y)

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Decision values ``f(x) = Σ_m f_m(x) + b``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels against the training points for
            ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_pairs)
            For two classes, one value per point (positive means ``classes_[1]``); else one
            column per one-vs-rest problem (class) or per one-vs-one pair (see ``pairs_``,
            positive means the pair's first class).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.
        ValueError
            Non-finite or ill-shaped ``X`` (another number of features, or a precomputed
            stack of another shape than (M, n_samples, n_train)).

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> clf = mk.MKLClassifier(kernels=[mk.kernels.Linear()]).fit(X, ["a", "a", "b", "b"])
        >>> f = clf.decision_function(np.array([[-3.0], [3.0]]))
        >>> f.shape, bool(f[0] < 0 < f[1])
        ((2,), True)
        """
        if _dask.is_dask_array(X):  # one task per row block (docs/dask.md)
            return _dask.map_rows(self, "decision_function", X)  # type: ignore[no-any-return]
        return self._decision(self._test_stack(X))

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``: the sign of the decision value for two classes, the
            largest one-vs-rest value, or the most one-vs-one votes (ties broken by the
            summed decision values).

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
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> clf = mk.MKLClassifier(kernels=[mk.kernels.Linear()]).fit(X, ["a", "a", "b", "b"])
        >>> clf.predict(np.array([[-3.0], [3.0]]))
        array(['a', 'b'], dtype='<U1')
        """
        if _dask.is_dask_array(X):  # one task per row block (docs/dask.md)
            return _dask.map_rows(self, "predict", X)  # type: ignore[no-any-return]
        f = self.decision_function(X)
        if f.ndim == 1:
            return _decision_labels(f, self.classes_)
        if self.multi_class == "ovo" and len(self.classes_) > 2:
            votes = np.zeros((f.shape[0], len(self.classes_)))
            for k, (a, b) in enumerate(self.pairs_):
                votes[:, a] += f[:, k] > 0
                votes[:, b] += f[:, k] <= 0
            # Ties broken by the summed confidences, as scikit-learn's SVC does.
            conf = np.zeros_like(votes)
            for k, (a, b) in enumerate(self.pairs_):
                conf[:, a] += f[:, k]
                conf[:, b] -= f[:, k]
            votes += conf / (3 * (np.abs(conf).max() + 1))
            res: NDArray[Any] = self.classes_[np.argmax(votes, axis=1)]
            return res
        return _decision_labels(f, self.classes_)

    def _proba_unavailable(self) -> str | None:
        """Why this classifier has no ``predict_proba`` (None: it has one)."""
        if self.loss == "logistic" or self.probability is True:
            return None
        return (
            f"loss={self.loss or 'hinge'!r} gives decision values, not probabilities: use "
            "loss='logistic', or probability=True for Platt scaling fitted by internal "
            "cross-validation (as SVC(probability=True)), or wrap the classifier in "
            "scikit-learn's CalibratedClassifierCV"
        )

    @_available_unless(_proba_unavailable)
    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities: the logistic model's, or Platt's (``probability=True``).

        ``loss="logistic"``: ``σ(f)`` for two classes; the one-vs-rest ``σ(f_k)`` normalised
        to sum to one for more, the one-vs-one pairs' ``σ(f_ab)`` coupled pairwise (Wu, Lin &
        Weng 2004). Hinge-type losses with ``probability=True``: Platt's
        ``1/(1 + exp(A f + B))`` of each binary problem (``probA_``, ``probB_``), normalised
        over the classes for one-vs-rest, coupled pairwise (Wu, Lin & Weng 2004) for
        one-vs-one; as scikit-learn's ``SVC``, the most probable class need not be the one
        ``predict`` returns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of the classes in the order of ``classes_``; rows sum to one.

        Raises
        ------
        AttributeError
            A hinge-type loss without ``probability=True``: the method is then absent
            (``hasattr`` is False) and the message itself says what to do (``loss="logistic"``,
            ``probability=True``, or scikit-learn's ``CalibratedClassifierCV``).
        sklearn.exceptions.NotFittedError
            The estimator is not fitted, or was fitted without ``probability=True``
            (:class:`multikernel.exceptions.NotFittedError`, a subclass, in that case).

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> clf = mk.MKLClassifier(kernels=[mk.kernels.Linear()], loss="logistic")
        >>> P = clf.fit(X, [0, 0, 1, 1]).predict_proba(np.array([[-3.0], [0.0], [3.0]]))
        >>> P.round(2)
        array([[0.87, 0.13],
               [0.5 , 0.5 ],
               [0.13, 0.87]])
        >>> hasattr(mk.MKLClassifier(loss="hinge"), "predict_proba")
        False
        >>> from sklearn.datasets import load_breast_cancer
        >>> Xb, yb = load_breast_cancer(return_X_y=True)
        >>> Xb = (Xb - Xb.mean(0)) / Xb.std(0)
        >>> svm = mk.MKLClassifier(probability=True).fit(Xb[:200], yb[:200])
        >>> Pb = svm.predict_proba(Xb[200:205])
        >>> Pb.shape, bool(np.allclose(Pb.sum(axis=1), 1.0))
        ((5, 2), True)
        """
        if _dask.is_dask_array(X):  # one task per row block (docs/dask.md)
            return _dask.map_rows(self, "predict_proba", X)  # type: ignore[no-any-return]
        f = self.decision_function(X)
        if self.loss == "logistic":
            if f.ndim == 2 and self.multi_class == "ovo":
                # Each pair's logistic model is P(a | a or b) = σ(f_ab): coupled as Platt's.
                return self._couple(scipy.special.expit(f))
            return _logistic_proba(f)
        problems = 1 if f.ndim == 1 else f.shape[1]
        if getattr(self, "probA_", np.empty(0)).shape != (problems,):
            raise NotFittedError(
                "this classifier was fitted without probability=True: refit it with "
                "probability=True for predict_proba"
            )
        if f.ndim == 1:
            p1 = platt_proba(f, self.probA_[0], self.probB_[0])
            return np.column_stack([1.0 - p1, p1])
        P = np.column_stack(
            [platt_proba(f[:, k], self.probA_[k], self.probB_[k]) for k in range(problems)]
        )
        if self.multi_class == "ovr":
            out: NDArray[np.float64] = P / P.sum(axis=1, keepdims=True)
            return out
        return self._couple(P)

    def _couple(self, P: NDArray[np.float64]) -> NDArray[np.float64]:
        """Class probabilities from ``P[:, k]``, the probability of the pair ``k``'s first
        class against its second (``pairs_``), by Wu, Lin & Weng's pairwise coupling."""
        r = np.zeros((P.shape[0], len(self.classes_), len(self.classes_)))
        for k, (a, b) in enumerate(self.pairs_):
            r[:, a, b], r[:, b, a] = P[:, k], 1.0 - P[:, k]
        return pairwise_coupling(r)


class MKLRegressor(RegressorMixin, _BaseMKL):  # type: ignore[misc]
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
    intercept_ : float
        The offset ``b``.
    kernel_weights_, kernel_norms_ : ndarray of shape (M,)
        As for :class:`MKLClassifier`.
    primal_objective_, dual_objective_, duality_gap_ : float
        The certificate, as for :class:`MKLClassifier`.
    n_iter_ : int
        Outer iterations run (a warm start's certificate counts as one).
    converged_ : bool
        Whether the duality gap reached ``tol``.
    history_ : structured ndarray of shape ``(n_iter_,)``
        Per outer iteration: primal, dual, gap, active kernels, seconds.
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

    def fit(
        self, X: Any, y: Any, sample_weight: Any = None, check_input: bool = True
    ) -> MKLRegressor:
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n, n) if precomputed
            Training points, or the training kernel stack for ``kernels="precomputed"``.
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
        started = time.perf_counter()
        previous = self._previous_fit()
        self._clear()
        solver, settings = self._check_params()
        G, yv = self._training_stack(
            X, y, solver, check_bool(check_input, "check_input"), sample_weight
        )
        yf = np.asarray(yv, dtype=np.float64)
        if not np.isfinite(yf).all():
            raise NonFiniteError("y contains NaN or infinity")
        if settings["loss"] == "epsilon_insensitive" and yf.shape[0] < 2:
            raise InvalidInputError(
                f"loss='epsilon_insensitive' needs at least 2 samples; got n_samples = "
                f"{yf.shape[0]}"
            )
        sw = check_sample_weight(sample_weight, G.n)
        st = self._warm_starts(previous, self._warm_key_of(solver, settings, G))
        self._set_results(
            [self._solve(solver, G, yf, settings, start=st[0] if st else None, weight=sw)],
            multi=False,
        )
        self.n_train_ = G.n
        self._feature_coefs(G)
        self._log_summary(started)
        return self

    def predict(self, X: Any) -> NDArray[np.float64]:
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n_samples, n_train)
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
        if _dask.is_dask_array(X):  # one task per row block (docs/dask.md)
            return _dask.map_rows(self, "predict", X)  # type: ignore[no-any-return]
        return self._decision(self._test_stack(X))
