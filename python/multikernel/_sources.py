"""``kernels=`` and ``X`` classified once into a typed source (:func:`classify`) and resolved
by :func:`resolve` into the training :class:`Input` that every estimator, the path and the CV
estimators read the same way (its stacks are :mod:`._data`'s).

A source is one of four kinds, decided from ``kernels=`` and the type of ``X`` alone:
a precomputed ``(M, n, n)`` stack (:class:`PrecomputedStack`), precomputed feature blocks
(:class:`PrecomputedBlocks`), low-rank factors (:class:`Factors`), or raw points
(:class:`RawPoints`) with a FeatureBank or kernel specifications. How the kernels of
specifications are computed is decided once too, before any is, by :meth:`Recipe.how`: a
stored stack (always for Python functions), on demand, or, for linear kernels that the fit's
solver reads as features, their feature blocks. Each caller states what it takes by one
:class:`Accepts` value (:data:`ESTIMATORS` and its :meth:`~Accepts.fitting`,
:data:`ONE_CLASS`, :data:`PATH`, :data:`PATH_CV`). Dask arrays are no source of their own: a
fit validates them into memory like any array, and prediction dispatches them in
:mod:`._dask` (``by_row_blocks``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from . import _progress
from ._auto import FEATURE_SOLVERS, Choice, StackInfo
from ._data import (
    Blocks,
    Dense,
    OnDemand,
    OnDemandRule,
    Stack,
    TestSide,
    TestStack,
    wrapped,
)
from ._pairwise import PairwiseStack
from ._validation import (
    CheckedPoints,
    Points,
    as_table,
    check_feature_blocks,
    check_sample_weight,
    check_stack,
    column_names,
    is_sparse,
    sparse_refused,
)
from .exceptions import InternalError, InvalidInputError, InvalidParameterError
from .kernels import FeatureBank, Kernel, KernelBank, LowRankFactors, validate_stack
from .kernels._sequence import Spectrum, _refuse_numbers, _refuse_sparse
from .kernels._specs import _resolve_columns

#: Validates raw training points and their targets (the estimators' ``validate_data``).
FitPoints: TypeAlias = Callable[[Any, Any], tuple[CheckedPoints, Any]]

#: How the kernels of specifications are computed (:meth:`Recipe.how`).
How: TypeAlias = Literal["stack", "on_demand", "features"]


@dataclass(frozen=True)
class Accepts:
    """What a caller of :func:`resolve` takes: one value per caller, below.

    Parameters
    ----------
    lists : {"blocks", "kernels"}
        What a list of arrays under ``kernels="precomputed"`` is: feature blocks (the
        estimators), or the kernels of a stack (the path, which takes factors as
        :class:`~multikernel.kernels.LowRankFactors`).
    targets : bool
        There are targets, checked to have one entry per point (none for one-class).
    stack_if_3d : bool
        ``kernels=None`` reads a 3-D ``X`` as a precomputed stack (:func:`~multikernel.mkl_path`).
    choice : Choice or None
        An estimator fit's solver before the input is resolved: one that fits explicit
        features only needs feature blocks or factors, not a precomputed stack; and linear
        specifications are fitted as their feature blocks when the choice on those blocks is
        a feature solver (:meth:`Recipe.how`). None: neither.
    on_demand : OnDemandRule or None
        When kernels of specifications are computed on demand (None: never).
    """

    lists: Literal["blocks", "kernels"]
    targets: bool = True
    stack_if_3d: bool = False
    choice: Choice | None = None
    on_demand: OnDemandRule | None = None

    def fitting(self, choice: Choice, on_demand: OnDemandRule | None) -> Accepts:
        """What an estimator's fit takes, with its solver ``choice`` before the input is
        resolved and its rule for kernels computed on demand."""
        return dataclasses.replace(self, choice=choice, on_demand=on_demand)


#: The estimators (:meth:`Accepts.fitting` adds a fit's solver), and ``multi_class="shared"``.
ESTIMATORS = Accepts("blocks")
#: :class:`~multikernel.MKLOneClass`: no targets.
ONE_CLASS = Accepts("blocks", targets=False)
#: :func:`~multikernel.mkl_path`: lists and 3-D arrays under ``kernels=None`` are stacks.
PATH = Accepts("kernels", stack_if_3d=True)
#: The CV estimators' paths: lists are stacks.
PATH_CV = Accepts("kernels")


@dataclass(frozen=True)
class PrecomputedStack:
    """``kernels="precomputed"`` with an ``(M, n, n)`` stack of Gram matrices (a 3-D array,
    or a list of kernels for the path)."""

    X: Any

    def load(self, check_input: bool, n_threads: int) -> Input:
        """The stack, checked (finite and symmetric too unless not ``check_input``)."""
        if check_input:
            return Input(Dense(validate_stack(self.X, n_threads=n_threads)))
        return Input(Dense(check_stack(self.X)))


@dataclass(frozen=True)
class PrecomputedBlocks:
    """``kernels="precomputed"`` with a list of feature blocks ``(n, D_m)``."""

    X: Sequence[Any]

    def load(self, check_input: bool, n_threads: int) -> Input:
        """The blocks, checked."""
        return Input(Blocks(check_feature_blocks(self.X)))


@dataclass(frozen=True)
class Factors:
    """Low-rank factors ``G_m`` (``K_m = G_m G_mᵀ``), read as feature blocks."""

    X: LowRankFactors

    def load(self, check_input: bool, n_threads: int) -> Input:
        """The factors, checked."""
        return Input(Blocks(_check_factors(self.X.factors)), factors=True)


@dataclass(frozen=True)
class RawPoints:
    """Raw points ``(n, n_features)`` and what computes their kernels: a FeatureBank, or
    kernel specifications (None: the caller's defaults)."""

    X: Any
    kernels: Sequence[Kernel] | Kernel | FeatureBank | None

    @property
    def is_bank(self) -> bool:
        """The kernels are a FeatureBank's (its errors say what it maps)."""
        return isinstance(self.kernels, FeatureBank)


#: A classified ``kernels=`` and ``X``.
Source: TypeAlias = PrecomputedStack | PrecomputedBlocks | Factors | RawPoints


def takes_sparse(kernels: Any) -> bool:
    """Whether ``kernels=`` reads sparse ``X`` (the estimators' ``input_tags.sparse``): the
    defaults (None) and vector kernel specifications, which the engine computes from the
    stored entries, and a FeatureBank of ``Linear`` kernels (sparse blocks, fitted by
    ``prox_newton``); not Python functions, sequence kernels, other FeatureBanks or
    precomputed kernels."""
    from .kernels._sequence import _SequenceKernel
    from .kernels._specs import Callable as CallableKernel
    from .kernels._specs import Linear

    if kernels is None:
        return True
    if isinstance(kernels, FeatureBank):
        return all(isinstance(s, Linear) for s in kernels.specs)
    specs = [kernels] if isinstance(kernels, Kernel) else kernels
    return isinstance(specs, (list, tuple)) and all(
        isinstance(s, Kernel) and not isinstance(s, (CallableKernel, _SequenceKernel))
        for s in specs
    )


def classify(kernels: Any, X: Any, accepts: Accepts) -> Source:
    """The one source that ``kernels=`` and ``X`` make for the caller ``accepts``.

    Raises
    ------
    InvalidParameterError
        ``kernels`` is a string other than ``"precomputed"``, or low-rank factors come with
        specifications or a FeatureBank.
    InvalidInputError
        A solver that fits explicit features only, given a precomputed stack.
    """
    precomputed = isinstance(kernels, str) and kernels == "precomputed"
    if isinstance(kernels, str) and not precomputed:
        raise InvalidParameterError(
            f"kernels must be a sequence of kernel specifications, 'precomputed', a "
            f"FeatureBank or None; got {kernels!r}",
            parameter="kernels",
        )
    if isinstance(X, LowRankFactors):
        if not (precomputed or kernels is None):
            what = "a FeatureBank" if isinstance(kernels, FeatureBank) else f"specs {kernels!r}"
            raise InvalidParameterError(
                f"low-rank factors are a precomputed stack: pass kernels='precomputed' or "
                f"None, got {what}",
                parameter="kernels",
            )
        return Factors(X)
    if isinstance(X, PairwiseStack) and not (
        precomputed or (accepts.stack_if_3d and kernels is None)
    ):
        raise InvalidInputError(
            f"a PairwiseStack holds precomputed kernels: pass kernels='precomputed' (got "
            f"kernels={kernels!r})"
        )
    if precomputed and (
        is_sparse(X) or (isinstance(X, (list, tuple)) and any(is_sparse(F) for F in X))
    ):
        raise sparse_refused(
            "kernels='precomputed' (a stack of Gram matrices or feature blocks)", "G"
        )
    if not (precomputed or (accepts.stack_if_3d and kernels is None and np.ndim(X) == 3)):
        return RawPoints(X, kernels)
    if isinstance(X, (list, tuple)) and accepts.lists == "blocks":
        return PrecomputedBlocks(X)
    solver = None if accepts.choice is None else accepts.choice.solver
    if solver in FEATURE_SOLVERS and not isinstance(X, (list, tuple)):
        raise InvalidInputError(
            f"solver={solver!r} fits explicit features: with kernels='precomputed', X "
            "must be a list of feature blocks (n, D_m), one per kernel, not a kernel stack"
        )
    return PrecomputedStack(X)


@dataclass(frozen=True)
class Recipe:
    """How kernels are computed from raw points: a FeatureBank, or specifications with their
    normalisation, threads and the fit's rules. An :class:`Input` keeps it, so that the
    refits of its subsets (the folds of a CV estimator) follow it.

    Parameters
    ----------
    kernels : sequence of Kernel or FeatureBank
        The kernels, their column names resolved to indices.
    normalize : str or None
        The normalisation of specifications (a FeatureBank has its own).
    n_threads : int
        Checked threads.
    accepts : Accepts
        The caller's: its solver choice and on-demand rule (:meth:`how`).
    """

    kernels: Sequence[Kernel] | FeatureBank
    normalize: Any
    n_threads: int
    accepts: Accepts

    def how(self, bank: KernelBank, n: int, n_features: int) -> How:
        """How the kernels of ``bank`` on ``n`` points of ``n_features`` are computed,
        decided before any is.

        On demand when ``cache_size=`` asks for it (the engine refuses what it cannot
        compute so). Feature blocks when every kernel is linear under a normalisation that
        scales it (``K_m = Φ_m Φ_mᵀ`` exactly, :meth:`KernelBank._linear_widths`) and the
        fit's choice on blocks of their widths is a feature solver: the fit is then the one
        of the same blocks given as a FeatureBank. On demand when the stored stack would
        exceed the threshold and the engine computes these kernels so
        (:meth:`KernelBank._on_demand_ok`). Else a stored stack.
        """
        rule = self.accepts.on_demand
        if rule is not None and rule.forced:
            return "on_demand"
        widths = bank._linear_widths(n_features)
        choice = self.accepts.choice
        if widths is not None and choice is not None:
            blocks = StackInfo("features", n, len(widths), sum(widths))
            if choice.on(blocks).solver in FEATURE_SOLVERS:
                return "features"
        if rule is not None and rule.applies(len(bank.specs), n) and bank._on_demand_ok():
            return "on_demand"
        return "stack"

    def fit(
        self,
        Xv: CheckedPoints,
        sample_weight: NDArray[np.float64] | None = None,
        verbose: int = 0,
    ) -> Input:
        """The input computed from the raw points ``Xv``: by a copy of a FeatureBank (the
        parameter stays as the user gave it), or by a KernelBank of the specifications, its
        statistics weighted by ``sample_weight`` (a FeatureBank's maps take none)."""
        bank: KernelBank | FeatureBank
        stack: Stack
        if isinstance(self.kernels, FeatureBank):
            bank = self.kernels._shallow_copy()
            stack = Blocks(bank.fit_transform(Xv))
        else:
            bank = KernelBank(
                self.kernels, normalize=self.normalize, n_threads=self.n_threads, verbose=verbose
            )
            if verbose and self.normalize == "mean_diag":
                _length_hint(self.kernels, Xv)
            how = self.how(bank, Xv.shape[0], Xv.shape[1])
            if how == "features" and isinstance(Xv, Points):
                how = "stack"  # feature blocks are of numeric points only
            if is_sparse(Xv):
                rule = self.accepts.on_demand
                if how == "on_demand" and rule is not None and rule.forced:
                    raise sparse_refused("kernels computed on demand (cache_size=)")
                # Sparse points give a stored stack: feature blocks (and the kernels on
                # demand) read dense rows.
                how = "stack"
            if how == "features":
                stack = Blocks(bank._fit_linear(Xv, sample_weight))
            elif how == "on_demand":
                if self.accepts.on_demand is None:
                    raise InternalError("kernels on demand without the on-demand rule")
                cache = self.accepts.on_demand.cache_bytes
                stack = OnDemand(bank.fit_on_demand(Xv, cache, sample_weight=sample_weight))
            else:
                stack = Dense(bank.fit_transform(Xv, sample_weight=sample_weight))
        return Input(stack, bank, Xv, self, sample_weight=sample_weight)


def _length_hint(kernels: Sequence[Kernel], Xv: CheckedPoints) -> None:
    """Log, once per fit, that sequences of different lengths keep their lengths' weight
    under ``normalize="mean_diag"`` (docs/guide.md §5): the hint of ``verbose``."""
    if not isinstance(Xv, Points) or not any(isinstance(k, Spectrum) for k in kernels):
        return
    varying = any(len(np.unique(np.diff(c.offsets))) > 1 for c in Xv.sequences)
    if varying:
        _progress.info(
            "sequences of different lengths under normalize='mean_diag': a longer sequence "
            "keeps a larger k(s, s); normalize='spherical' removes the lengths (docs/guide.md "
            "section 5)"
        )


@dataclass(frozen=True, eq=False)
class Input:
    """A resolved training input: its stack and where the stack came from.

    Parameters
    ----------
    stack : Dense, Blocks or OnDemand
        The training stack (not repaired: see :meth:`Dense.repair`).
    bank : KernelBank, FeatureBank or None
        The fitted bank that computed it from raw points (None for precomputed inputs).
    points : ndarray of shape (n, n_features) or None
        The validated raw points of a bank, refitted on the rows of a :meth:`subset`.
    recipe : Recipe or None
        How the bank computed the stack (refits of a :meth:`subset` follow it).
    factors : bool
        The stack holds low-rank factors (:class:`~multikernel.kernels.LowRankFactors`).
    sample_weight : ndarray of shape (n,) or None
        The weights of a bank's normalisation statistics (refits of a :meth:`subset` take
        their rows).
    """

    stack: Stack
    bank: KernelBank | FeatureBank | None = None
    points: CheckedPoints | None = None
    recipe: Recipe | None = None
    factors: bool = False
    sample_weight: NDArray[np.float64] | None = None

    @property
    def n(self) -> int:
        """Number of training points."""
        return self.stack.n

    @property
    def M(self) -> int:  # noqa: N802 (the number of kernels, M throughout the docs)
        """Number of kernels."""
        return self.stack.M

    def subset(self, rows: NDArray[np.intp]) -> Input:
        """The input of the training points ``rows``: a bank is refitted on their raw points
        only (honest cross-validation), a precomputed stack is sliced."""
        if self.points is None or self.recipe is None:
            return Input(self.stack.subset(rows), factors=self.factors)
        w = None if self.sample_weight is None else self.sample_weight[rows]
        return self.recipe.fit(self.points[rows], w)

    def fold(self, train: NDArray[np.intp], test: NDArray[np.intp]) -> tuple[Input, TestStack]:
        """The input of the points ``train`` and the test stack of the points ``test``
        against them (computed once, read by every model of the fold)."""
        sub = self.subset(train)
        if self.points is None:
            return sub, self.stack.cross(test, train)
        return sub, sub.test_side().stack(self.points[test], lambda X: X)

    def test_side(self) -> TestSide:
        """How a model fitted on this input reads new points."""
        widths = self.stack.widths if isinstance(self.stack, Blocks) else None
        on_demand = isinstance(self.stack, OnDemand)
        return TestSide(self.M, self.n, self.bank, widths, self.factors, on_demand)


def check_targets(y: Any, n: int) -> NDArray[Any]:
    """``y`` as a 1-D array with one entry per training point."""
    yv = np.asarray(y)
    if yv.ndim != 1 or yv.shape[0] != n:
        raise InvalidInputError(
            f"y must be 1-D with one entry per training point ({n}), got shape {yv.shape}"
        )
    return yv


def resolve(
    kernels: Any,
    X: Any,
    y: Any = None,
    *,
    accepts: Accepts,
    points: FitPoints,
    default_specs: Callable[[int], list[Kernel]],
    normalize: Any = "mean_diag",
    n_threads: int = 0,
    check_input: bool = True,
    sample_weight: Any = None,
    verbose: int = 0,
) -> tuple[Input, NDArray[Any] | None]:
    """Resolve ``kernels=`` and ``X`` (and ``y``) into the training input.

    Parameters
    ----------
    kernels : sequence of Kernel, FeatureBank, "precomputed" or None
        The estimator's ``kernels=``.
    X : array-like, list of arrays or LowRankFactors
        Raw points, a precomputed stack, feature blocks or low-rank factors.
    y : array-like or None
        Targets, checked to have one entry per training point when ``accepts.targets``.
    accepts : Accepts
        What the caller takes (:data:`ESTIMATORS`, :data:`ONE_CLASS`, :data:`PATH`,
        :data:`PATH_CV`).
    points : callable
        ``points(X, y) -> (X, y)`` validates raw points (and their targets).
    default_specs : callable
        The kernels of ``kernels=None`` for a number of features.
    normalize : str or None
        Normalisation of kernels computed from specifications.
    n_threads : int
        Checked threads.
    check_input : bool
        False skips :func:`~multikernel.kernels.validate_stack`'s read of a dense stack.
    sample_weight : array-like of shape (n_samples,), callable or None
        Weights of the points in the normalisation statistics of kernels computed from
        specifications (checked here: finite, ≥ 0, not all 0); a callable takes the validated
        targets and the number of points and returns them, validated (an estimator's: its
        loss weights, a classifier's ``class_weight`` times ``sample_weight``).
    verbose : int
        ``2`` or more: a progress bar over the kernels of a stack computed from
        specifications (the refits of :meth:`Input.subset` draw none).

    Returns
    -------
    Input, ndarray or None
        The training input and the targets (None when ``accepts.targets`` is False).
    """
    source = classify(kernels, X, accepts)
    if isinstance(source, RawPoints):
        X = as_table(X)  # a pandas Series: one column, of sequences or numbers
        if isinstance(source.kernels, (Kernel, list, tuple)):
            specs = [source.kernels] if isinstance(source.kernels, Kernel) else source.kernels
            _refuse_sparse(specs, X)  # before scikit-learn accepts X as sparse
            _refuse_numbers(specs, X)  # before scikit-learn reads X as numbers
        Xv, y = wrapped(points, source.is_bank, X, y)
        spec = default_specs(Xv.shape[1]) if source.kernels is None else source.kernels
        recipe = Recipe(_with_columns(spec, column_names(X)), normalize, n_threads, accepts)
        if callable(sample_weight):  # an estimator's, which validates them itself
            w = sample_weight(y, Xv.shape[0])
        else:
            w = check_sample_weight(sample_weight, Xv.shape[0])
        data = recipe.fit(Xv, w, verbose)
    else:
        data = source.load(check_input, n_threads)
    return data, check_targets(y, data.n) if accepts.targets else None


def _with_columns(spec: Any, names: list[str] | None) -> Any:
    """``kernels=`` with its column names resolved against ``names``, the columns of the
    raw ``X`` (None when it has none): the bank is then fitted on the validated array, the
    folds of a CV refit on its rows, and the fitted bank maps arrays by index (the estimators
    check the names of new points with ``feature_names_in_``). Anything that is not kernels
    is returned as it is, for the bank to refuse."""
    if isinstance(spec, FeatureBank):
        return spec._with_columns(names)
    if isinstance(spec, Kernel):
        spec = [spec]
    if isinstance(spec, (list, tuple)):
        return _resolve_columns(spec, names)
    return spec


def _check_factors(factors: Sequence[Any]) -> list[NDArray[np.float64]]:
    """Low-rank factors ``G_m`` of shape ``(n, r_m)``: finite float64, C-contiguous, one
    common ``n``, at least one kernel."""
    out = [np.ascontiguousarray(f, dtype=np.float64) for f in factors]
    if not out:
        raise InvalidInputError("the low-rank stack holds no kernel")
    n = out[0].shape[0] if out[0].ndim == 2 else -1
    for m, f in enumerate(out):
        if f.ndim != 2 or f.shape[0] != n or n < 1:
            raise InvalidInputError(
                f"factor {m} must have shape (n, r) with the n = {n} of the first, got {f.shape}"
            )
        if not np.isfinite(f).all():
            raise InvalidInputError(f"factor {m} contains NaN or infinity")
    return out
