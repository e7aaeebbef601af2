"""The shared base of the MKL estimators: :class:`BaseMKL` (parameters, validation, the
training and test inputs, the engine's fits, warm starts and the fitted attributes),
:func:`default_kernels`, and the names the estimator families share."""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from . import _auto, _core, _progress
from ._config import SOLVERS, Setting, SolverConfig
from ._data import Blocks, Stack, TestSide, TestStack, scatter_kept
from ._record import (
    FitRecord,
    group_weights,
    history,
    internal_start_error,
    warn_not_psd,
    warn_unconverged,
)
from ._sources import ESTIMATORS, Accepts, resolve, takes_sparse
from ._typing import LossName, Normalization, Penalty, PsdRepair, SolverName
from ._validation import (
    check_bool,
    check_n_threads,
    check_psd,
    check_random_state,
    check_real,
    check_sample_weight,
    check_verbose,
    check_weight_scale,
    group_ids,
    validate_points,
)
from .exceptions import InvalidParameterError
from .kernels import (
    FeatureBank,
    Gaussian,
    Kernel,
    KernelBank,
    Linear,
    Polynomial,
    _check_normalize,
)

__all__ = ["BaseMKL", "default_kernels", "publishes"]

_PENALTIES = tuple(dict.fromkeys(p for row in SOLVERS.values() for p in row.penalties))


#: The solvers that fit explicit features only (feature blocks, low-rank factors): the
#: engine's capabilities.
_FEATURE_SOLVERS = _auto.FEATURE_SOLVERS


#: A starting point of one binary problem: SpicyMKL's coefficients ``A`` (M, n), or
#: ``prox_newton``'s feature weights (R,), and the intercept.
Start: TypeAlias = "tuple[NDArray[np.float64], float]"

#: The last fit's warm-start key, starting points and intercepts, read before ``fit`` clears
#: them (:meth:`BaseMKL._previous_fit`); None when there is none to start from.
Previous: TypeAlias = "tuple[tuple[Any, ...], NDArray[Any], NDArray[Any]] | None"

#: What an estimator makes of the validated ``sample_weight`` (None: none given) with the
#: validated targets: the weights of the samples' losses (a classifier's ``class_weight``).
Weigh: TypeAlias = (
    "Callable[[NDArray[Any], NDArray[np.float64] | None], NDArray[np.float64] | None]"
)


def _start_args(solver: str, start: Start) -> dict[str, Any] | None:
    """The engine's arguments of a warm start for ``solver``; None when the start is of the
    other kind (a one-vs-one pair whose stack moved the choice: it starts cold)."""
    A, b = start
    if solver == "spicy" and A.ndim == 2:
        return {"init_coef": np.ascontiguousarray(A, dtype=np.float64), "init_intercept": b}
    if solver == "prox_newton" and A.ndim == 1:
        weights = np.ascontiguousarray(A, dtype=np.float64)
        return {"init_feature_weights": weights, "init_intercept": b}
    return None


#: The fitted attributes of an MKL estimator, cleared by each ``fit``.
FITTED = (
    "coef_",
    "dual_coef_",
    "intercept_",
    "kernel_weights_",
    "kernel_norms_",
    "primal_objective_",
    "dual_objective_",
    "duality_gap_",
    "n_iter_",
    "solvers_",
    "solver_iterations_",
    "stack_passes_",
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


_Fit = TypeVar("_Fit", bound=Callable[..., Any])


def _is_fitted_name(name: str) -> bool:
    """A fitted attribute, as scikit-learn's ``check_is_fitted`` reads them (``coef_``)."""
    return name.endswith("_") and not name.startswith("__")


def publishes(fit: _Fit) -> _Fit:
    """Make an estimator's ``fit`` publish what it fits in one step: the fit runs on a
    private shallow copy of the estimator, whose state then replaces the estimator's at
    once (one assignment of ``__dict__``). A reader, e.g. another thread's ``predict``,
    sees the previous fit or this one, never attributes of two fits mixed (one estimator
    fitted from two threads ends with one of the two fits). A fit that raises publishes
    the estimator without its fitted attributes (as a fit that cleared them first)."""

    @functools.wraps(fit)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        work = object.__new__(type(self))
        work.__dict__.update(self.__dict__)
        try:
            fit(work, *args, **kwargs)
        except BaseException:
            self.__dict__ = {k: v for k, v in self.__dict__.items() if not _is_fitted_name(k)}
            raise
        self.__dict__ = dict(work.__dict__)
        return self

    return cast(_Fit, run)


def decision_labels(f: NDArray[np.float64], classes: NDArray[Any]) -> NDArray[Any]:
    """The labels of binary (the sign of ``f``) or one-vs-rest (the largest column) decision
    values."""
    idx = (f > 0).astype(np.int64) if f.ndim == 1 else np.argmax(f, axis=1)
    out: NDArray[Any] = classes[idx]
    return out


def logistic_proba(f: NDArray[np.float64]) -> NDArray[np.float64]:
    """Class probabilities of logistic decision values: ``σ(f)`` for two classes, the
    one-vs-rest ``σ(f_k)`` normalised to sum to one for more."""
    if f.ndim == 1:
        p1 = 1.0 / (1.0 + np.exp(-f))
        return np.column_stack([1.0 - p1, p1])
    pr = 1.0 / (1.0 + np.exp(-f))
    out: NDArray[np.float64] = pr / pr.sum(axis=1, keepdims=True)
    return out


def checked_loss(est: Any, losses: tuple[str, ...]) -> str:
    """``est.loss``, or the first of ``losses`` when it is None, checked against ``losses``
    (the estimators' and the CV estimators' one rule)."""
    loss = losses[0] if est.loss is None else est.loss
    if loss not in losses:
        raise InvalidParameterError(
            f"loss must be one of {', '.join(losses)} for {type(est).__name__}; got {est.loss!r}",
            parameter="loss",
        )
    return str(loss)


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


class BaseMKL(BaseEstimator):  # type: ignore[misc]
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
    #: The engine solvers that ran, in order (``("wrapper", "spicy")`` when SpicyMKL continued a
    #: stalled wrapper fit), and the iterations of each, which sum to ``n_iter_``; a list of
    #: them for a multiclass classifier.
    solvers_: Any
    solver_iterations_: Any
    #: The fit's passes over a stored kernel stack (entries read over ``M n²``), or None; a list
    #: of them for a multiclass classifier.
    stack_passes_: Any
    converged_: Any
    #: A structured array (fields primal, dual, gap, active, seconds, solver), or a list of them
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

    def _check_params(self) -> tuple[_auto.Choice, _core.Settings]:
        """Validate the hyper-parameters before any kernel is computed; return the solver
        chosen before the input is resolved (its rule then chooses once per stack,
        :meth:`_auto.Choice.on`) and the engine's settings, validated once here by the
        engine's own ``validate`` (every numeric setting); choices between names are checked
        here."""
        if self.penalty not in _PENALTIES:
            valid = ", ".join(_PENALTIES)
            raise InvalidParameterError(
                f"penalty must be one of {valid}; got {self.penalty!r}", parameter="penalty"
            )
        loss = checked_loss(self, self._losses)
        solvers = [name for name, row in SOLVERS.items() if self.penalty in row.penalties]
        if self.solver != "auto" and self.solver not in solvers:
            raise InvalidParameterError(
                f"solver={self.solver!r} does not handle penalty={self.penalty!r}; valid: "
                f"auto, {', '.join(solvers)}",
                parameter="solver",
            )
        # The parameters' choice, checked here before any kernel is computed; the fit asks
        # its rule again once per stack it fits (Choice.on).
        early = self._rule(loss).on(None)
        solver = early.solver
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
        return early, _core.Settings(solver, named)

    @staticmethod
    def _default_kernels(n_features: int) -> list[Kernel]:
        """The bank of ``kernels=None``."""
        return default_kernels(n_features)

    def _training_stack(
        self,
        X: Any,
        y: Any,
        accepts: Accepts,
        check_input: bool = True,
        sample_weight: Any = None,
        weigh: Weigh | None = None,
    ) -> tuple[Stack, NDArray[Any], NDArray[np.float64] | None]:
        """Validate ``X``, ``y`` and ``sample_weight``, each once; return the training stack,
        repaired by ``psd="clip"`` (``psd_shifts_``), the targets (ones for a one-class fit,
        which takes none; ``accepts``: what the fit takes, :meth:`_accepts`; ``check_input``:
        see ``fit``) and the weights of the samples' losses: ``sample_weight`` as ``weigh``
        makes it (a classifier's ``class_weight``), None for none. Kernels computed from
        ``X`` have their normalisation statistics weighted by the same weights."""
        one_class = not accepts.targets
        threads = check_n_threads(self.n_threads)
        # The loss weights, made once: by resolve on raw points (the kernels' statistics
        # need them before the kernels are computed), else once the stack is known.
        made: list[NDArray[np.float64] | None] = []

        # The dual's box is C · w (one-class: w), whose scale check_weight_scale bounds.
        C = None if one_class else float(self.C)

        def weights(yv: Any, n: int) -> NDArray[np.float64] | None:
            w = check_sample_weight(sample_weight, n, C)
            out = w if weigh is None else weigh(yv, w)
            if out is not None and out is not w:  # class_weight's weights too
                what = "class_weight" if w is None else "sample_weight × class_weight"
                check_weight_scale(out, C, what)
            made.append(out)
            return made[0]

        # A FeatureBank reads its points batch by batch: float32 points stay float32 (a
        # float64 copy would double the input's memory, and the features are the same).
        dtype = (np.float64, np.float32) if isinstance(self.kernels, FeatureBank) else np.float64

        def points(Xr: Any, yr: Any) -> tuple[NDArray[Any], Any]:
            if one_class:
                return validate_points(self, Xr, dtype=dtype), None
            out: tuple[NDArray[Any], Any] = validate_points(
                self, Xr, yr, y_numeric=self._y_numeric, dtype=dtype
            )
            return out

        data, yv = resolve(
            self.kernels, X, None if one_class else y, accepts=accepts, points=points,
            default_specs=self._default_kernels, normalize=self.normalize, n_threads=threads,
            check_input=check_input, sample_weight=weights, verbose=int(self.verbose),
        )  # fmt: skip
        w = made[0] if made else weights(yv, data.n)
        self.kernel_bank_ = data.bank
        self.n_kernels_ = data.M
        # Plain data, not the TestSide itself: the fitted state pickles as plain values.
        side = data.test_side()
        self._feature_widths, self._factors = side.widths, side.factors
        self._on_demand = side.on_demand
        G, self.psd_shifts_ = data.stack.repair(self.psd, threads)
        return G, np.ones(data.n) if yv is None else yv, w

    def _accepts(self, early: _auto.Choice) -> Accepts:
        """What a fit whose solver before the input is resolved is ``early`` takes: the
        estimators' input, kernels computed on demand when :func:`_auto.on_demand` says so,
        and linear specifications fitted as feature blocks when ``early``'s rule moves their
        blocks to a feature solver (:meth:`_sources.Recipe.how`)."""
        on_demand = _auto.on_demand(
            early.solver, self._losses[0] if self.loss is None else self.loss, self.kernels,
            getattr(self, "cache_size", None),  # (absent from older pickles)
        )  # fmt: skip
        return ESTIMATORS.fitting(early, on_demand)

    def _rule(self, loss: str) -> _auto.Rule:
        """The rule that chooses the engine solver of this estimator's fits."""
        return _auto.Rule(
            penalty=self.penalty, p=self.p, loss=loss, solver=self.solver,
            solver_config=self.solver_config, warm_start=self.warm_start,
        )  # fmt: skip

    def _test_stack(self, X: Any) -> TestStack:
        check_is_fitted(self, "intercept_")
        side = TestSide(
            self.n_kernels_, self.n_train_, self.kernel_bank_, self._feature_widths,
            getattr(self, "_factors", False),  # (absent from fits pickled before it)
            getattr(self, "_on_demand", False),
        )  # fmt: skip
        return side.stack(X, lambda Xr: validate_points(self, Xr, reset=False))

    _y_numeric = False

    # --- fitting ------------------------------------------------------------------------

    def _clear(self) -> None:
        for name in (*FITTED, "_dual_factors"):
            self.__dict__.pop(name, None)

    if not TYPE_CHECKING:  # (a ``__getattr__`` would let type checkers accept any name)

        def __getattr__(self, name: str) -> Any:
            # ``dual_coef_`` of a fit on features that gave it factored (``_set_results``):
            # ``A[m, i] = scale[m] ρ̃_i``, formed at its first read (predictions do not).
            factors = self.__dict__.get("_dual_factors") if name == "dual_coef_" else None
            if factors is None:
                # The lookup's own error again (e.g. ``predict_proba``'s, which says why).
                return object.__getattribute__(self, name)
            A = np.outer(*factors)
            self.__dict__["dual_coef_"] = A
            return A

    def _solve(
        self,
        choice: _auto.Choice,
        G: Stack,
        y: NDArray[np.float64],
        settings: _core.Settings,
        label: str = "",
        start: Start | None = None,
        weight: NDArray[np.float64] | None = None,
    ) -> _core.FitResult | FitRecord:
        """One binary (or regression, one-class) problem on ``G`` by ``choice``, the engine
        solver chosen for ``G`` (``choice.on(G)``, carried from the fit)."""
        # SVRG records one iteration per epoch: its bar counts epochs.
        unit = "epoch" if choice.solver == "svrg" else "it"
        name = f"{type(self).__name__}{label}"
        with _progress.iteration_log(name, self.verbose, int(self.max_iter), unit) as log:
            return self._solve_logged(choice, G, y, settings, start, weight, log)

    def _solve_logged(
        self,
        choice: _auto.Choice,
        G: Stack,
        y: NDArray[np.float64],
        settings: _core.Settings,
        start: Start | None,
        weight: NDArray[np.float64] | None,
        log: _progress.IterationLog | None,
    ) -> _core.FitResult | FitRecord:
        """:meth:`_solve` with its iteration callback. Samples of weight 0 have no loss and
        are left out of the fit (as libsvm does), their coefficients 0."""
        yc = np.ascontiguousarray(y, dtype=np.float64)
        threads = check_n_threads(self.n_threads)
        if self.penalty == "group":
            settings = settings.with_groups(group_ids(self.groups, G.M)[0])
        if weight is None or bool(np.all(weight > 0)):
            return self._native_fit(choice, G, yc, settings, start, weight, threads, log)
        keep = np.flatnonzero(weight > 0)
        part = start
        if start is not None and start[0].ndim == 2:  # SpicyMKL's: one column per point
            part = (np.ascontiguousarray(start[0][:, keep]), start[1])
        kept = G.subset(keep)  # a stack of its own n: its own choice
        r = self._native_fit(
            choice.on(kept), kept, np.ascontiguousarray(yc[keep]), settings, part,
            weight[keep], threads, log,
        )  # fmt: skip
        record = r if isinstance(r, FitRecord) else FitRecord.of(r)
        return dataclasses.replace(record, coef=scatter_kept(record.coef, keep, G.n))

    def _native_fit(
        self,
        choice: _auto.Choice,
        G: Stack,
        yc: NDArray[np.float64],
        settings: _core.Settings,
        start: Start | None,
        weight: NDArray[np.float64] | None,
        threads: int,
        log: _progress.IterationLog | None,
    ) -> _core.FitResult:
        """One engine fit by ``choice``, the solver chosen for ``G``: from ``start`` as given
        (a warm start of that solver), or with SpicyMKL continuing the wrapper in the same
        engine call (:attr:`._auto.Choice.continued`)."""
        w = None if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
        init = None if start is None else _start_args(choice.solver, start)
        if init is not None:
            return _core.fit(
                choice.settings(settings), G.engine, yc, n_threads=threads, on_iteration=log,
                sample_weight=w, **init,
            )  # fmt: skip
        try:
            r = _core.fit(
                choice.settings(settings), G.engine, yc, n_threads=threads, on_iteration=log,
                sample_weight=w,
            )  # fmt: skip
        except InvalidParameterError as err:  # no warm start was given: not the user's
            # (one-class: the box is w itself, C = 1)
            internal = internal_start_error(err, float(getattr(self, "C", 1.0)), w)
            if internal is None:
                raise
            raise internal from err
        if log is not None and len(r.solvers) > 1:
            log.note(f"{' then '.join(r.solvers)}: SpicyMKL continued the wrapper's fit")
        return r

    def _previous_fit(self) -> Previous:
        """With ``warm_start``, the last fit by a solver that takes a start (its key, its
        starting points and ``intercept_``: SpicyMKL's ``dual_coef_``, ``prox_newton``'s
        feature weights), read before ``fit`` clears it; None otherwise."""
        key = self.__dict__.get("_warm_key")
        if not self.warm_start or key is None or not hasattr(self, "intercept_"):
            return None
        if key[0] == "prox_newton":
            W = np.asarray(self._feature_weights)
            return key, W[0] if np.ndim(self.intercept_) == 0 else W, np.asarray(self.intercept_)
        return key, np.asarray(self.dual_coef_), np.asarray(self.intercept_)

    def _warm_starts(
        self,
        previous: Previous,
        key: tuple[Any, ...] | None,
        index: Sequence[NDArray[np.intp]] | None = None,
    ) -> list[Start | None] | None:
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
        self, choice: _auto.Choice, settings: _core.Settings, G: Stack, *extra: Any
    ) -> tuple[Any, ...] | None:
        """What a warm start must share with the previous fit: ``choice``, the engine solver
        chosen for ``G`` (one that takes a start, :data:`~multikernel._auto.WARM_SOLVERS`),
        the loss, n, M and the feature widths (and for classifiers the classes and the
        scheme)."""
        solver = choice.solver
        if solver not in _auto.WARM_SOLVERS:
            return None
        widths = tuple(G.widths) if isinstance(G, Blocks) else None
        return (solver, settings["loss"], G.n, G.M, widths, *extra)

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

        factors = None if multi or coefs else getattr(results[0], "coef_factors", None)
        if factors is None:
            self.dual_coef_ = stack([r.coef for r in results] if coefs is None else coefs)
        else:
            # Kept factored (``dual_coef_`` is formed when read, ``__getattr__``): it would be
            # ``M`` copies of one vector (benches/peers/results/fit_memory.md).
            self._dual_factors = (np.asarray(factors[0]), np.asarray(factors[1]))
        self._feature_weights = [np.asarray(r.feature_weights) for r in results]
        self.intercept_ = stack([r.intercept for r in results])
        self.kernel_weights_ = stack([r.kernel_weights for r in results])
        self.kernel_norms_ = stack([r.kernel_norms for r in results])
        self.primal_objective_ = stack([r.primal for r in results])
        self.dual_objective_ = stack([r.dual for r in results])
        self.duality_gap_ = stack([r.gap for r in results])
        self.n_iter_ = stack([r.n_iter for r in results])
        # Lists for multiclass, not arrays: the problems' solvers may differ in number.
        solvers = [tuple(r.solvers) for r in results]
        self.solvers_ = solvers if multi else solvers[0]
        iterations = [tuple(int(k) for k in r.solver_iterations) for r in results]
        self.solver_iterations_ = iterations if multi else iterations[0]
        passes = [r.stack_passes for r in results]
        self.stack_passes_ = passes if multi else passes[0]
        self.converged_ = stack([r.converged for r in results])
        if self.penalty == "group":
            ids, n_groups = group_ids(self.groups, self.n_kernels_)
            self.group_weights_ = stack(
                [group_weights(r.kernel_weights, ids, n_groups) for r in results]
            )
        hist = [history(r.history) for r in results]
        self.history_ = hist if multi else hist[0]
        # How each problem ended, for the summary line (plain strings: the fit pickles).
        self._statuses = [str(r.status) for r in results]
        for k, r in enumerate(results):
            which = f" (problem {k})" if multi else label
            if r.psd_witness is not None:
                warn_not_psd(type(self).__name__, r.psd_witness, which)
            warn_unconverged(type(self).__name__, r, which, float(self.tol), self.solver)

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
                solvers=list(
                    zip(
                        self.solvers_[k] if multi else self.solvers_,
                        self.solver_iterations_[k] if multi else self.solver_iterations_,
                        strict=True,
                    )
                ),
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
            self._split_feature_weights(G.widths)
            return
        self.coef_ = G.weights(np.asarray(self.dual_coef_))

    def _split_feature_weights(self, widths: Sequence[int]) -> None:
        """``coef_`` from the solver's own weights (svrg, prox_newton), split into the
        kernels' blocks of ``widths`` (a row per problem for more than one)."""
        ends = np.cumsum(widths)[:-1]
        rows = [np.split(np.asarray(w), ends) for w in self._feature_weights]
        one = len(rows) == 1
        self.coef_ = [
            rows[0][m] if one else np.stack([r[m] for r in rows]) for m in range(len(widths))
        ]

    def _decision(self, G_test: TestStack) -> NDArray[np.float64]:
        """Decision values on a test stack: dense kernels read ``dual_coef_``, feature blocks
        ``coef_``."""
        b = np.asarray(self.intercept_)
        # (Feature blocks read ``coef_`` only: ``dual_coef_`` is not formed for them.)
        A = np.empty(0) if isinstance(G_test, Blocks) else np.asarray(self.dual_coef_)
        return G_test.decision(A, b, getattr(self, "coef_", None))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if isinstance(self.kernels, str) and self.kernels == "precomputed":
            tags.input_tags.pairwise = True
        tags.input_tags.sparse = takes_sparse(self.kernels)
        return tags
