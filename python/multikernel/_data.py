"""The input layer: ``kernels=`` and ``X`` resolved once, by :func:`resolve`, into a training
stack that every estimator, the path and the CV estimators read the same way.

The Python mirror of the engine's ``KernelStack`` trait: a :class:`Dense` stack of Gram
matrices or :class:`Blocks` (feature blocks or low-rank factors, ``K_m = Φ_m Φ_mᵀ``), each
knowing ``n``, ``M``, its sub-problem on some rows, and its decision function; an
:class:`Input` adds where the stack came from (a fitted bank and its raw points, or
precomputed kernels), and a :class:`TestSide` how a fitted model reads new points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._validation import (
    aligned,
    check_feature_blocks,
    check_sample_weight,
    check_stack,
    column_names,
)
from .exceptions import (
    InternalError,
    InvalidInputError,
    InvalidParameterError,
    MultikernelError,
)
from .kernels import FeatureBank, Kernel, KernelBank, LowRankFactors, shift_to_psd, validate_stack
from .kernels._specs import _resolve_columns

#: Validates raw training points and their targets (the estimators' ``validate_data``).
FitPoints: TypeAlias = Callable[[Any, Any], tuple[NDArray[np.float64], Any]]
#: Validates raw test points.
TestPoints: TypeAlias = Callable[[Any], NDArray[np.float64]]

_BANK_NOTE = (
    " (a FeatureBank maps raw points (n_samples, n_features); a kernel stack or low-rank "
    "factors take kernels='precomputed', not a FeatureBank)"
)


@dataclass(frozen=True, eq=False)
class Dense:
    """Dense Gram matrices: a training stack or the test kernels against training points.

    Parameters
    ----------
    G : ndarray of shape (M, n, n) or (M, n_test, n_train)
        float64 or float32, read in place (a memory-mapped stack stays one).
    """

    G: NDArray[Any]

    @property
    def n(self) -> int:
        """Rows: the training points, or the test points of test kernels."""
        return int(self.G.shape[1])

    @property
    def M(self) -> int:  # noqa: N802 (the number of kernels, M throughout the docs)
        """Number of kernels."""
        return int(self.G.shape[0])

    @property
    def engine(self) -> NDArray[Any]:
        """What the engine's ``fit`` and ``path`` read."""
        return self.G

    def aligned(self) -> Dense:
        """This stack with an aligned array (after unpickling in another process)."""
        return Dense(aligned(self.G))

    def subset(self, rows: NDArray[np.intp]) -> Dense:
        """The training stack of the points ``rows`` (a one-vs-one pair, a fold)."""
        return Dense(np.ascontiguousarray(self.G[:, rows][:, :, rows]))

    def cross(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> Dense:
        """The test kernels of the points ``rows`` against the training points ``cols``."""
        return Dense(self.G[:, rows][:, :, cols])

    def repair(self, psd: str, n_threads: int) -> tuple[Dense, NDArray[np.float64]]:
        """With ``psd="clip"``, the stack shifted to PSD and the shifts (zeros otherwise)."""
        if psd != "clip":
            return self, np.zeros(self.M)
        G, shifts = shift_to_psd(self.G, n_threads=n_threads)
        return Dense(G), shifts

    def weights(self, A: NDArray[Any]) -> None:
        """Nothing: a dense stack reads the dual coefficients themselves."""
        return None

    def decision(
        self, A: NDArray[Any], b: Any, W: Sequence[NDArray[Any]] | None = None
    ) -> NDArray[np.float64]:
        """``f = Σ_m K_m A[m] + b``, one column per problem when ``A`` is ``(k, M, n)``."""
        A = np.asarray(A)
        if A.ndim == 2:
            f: NDArray[np.float64] = np.einsum("mij,mj->i", self.G, A, dtype=np.float64)
            return f + float(b)
        out: NDArray[np.float64] = np.einsum("mij,kmj->ik", self.G, A, dtype=np.float64) + b
        return out


@dataclass(frozen=True, eq=False)
class Blocks:
    """Feature blocks or low-rank factors ``Φ_m`` with ``K_m = Φ_m Φ_mᵀ``: no ``n × n``
    matrix is formed, and a model lives in feature space, ``w_m = Φ_mᵀ A[m]``.

    Parameters
    ----------
    F : list of ndarray of shape (n, D_m)
        One block per kernel, float64 or float32, read in place (column ranges of one
        array for a :class:`~multikernel.kernels.FeatureBank`, memmaps included).
    """

    F: list[NDArray[Any]]

    @property
    def n(self) -> int:
        """Rows: the training points, or the test points of test blocks."""
        return int(self.F[0].shape[0])

    @property
    def M(self) -> int:  # noqa: N802 (the number of kernels, M throughout the docs)
        """Number of kernels."""
        return len(self.F)

    @property
    def widths(self) -> list[int]:
        """``D_m``, the columns of every block."""
        return [int(F.shape[1]) for F in self.F]

    @property
    def engine(self) -> list[NDArray[Any]]:
        """What the engine's ``fit`` and ``path`` read."""
        return self.F

    def aligned(self) -> Blocks:
        """These blocks as aligned arrays (after unpickling in another process)."""
        return Blocks(aligned(self.F))

    def subset(self, rows: NDArray[np.intp]) -> Blocks:
        """The blocks of the points ``rows`` (a one-vs-one pair, a fold)."""
        return Blocks([np.ascontiguousarray(F[rows]) for F in self.F])

    def cross(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> Blocks:
        """The test blocks of the points ``rows``; a model fitted on ``cols`` reaches them
        through its feature weights (:meth:`weights`), so ``cols`` is not needed here."""
        return Blocks([F[rows] for F in self.F])

    def repair(self, psd: str, n_threads: int) -> tuple[Blocks, NDArray[np.float64]]:
        """The blocks as they are: ``Φ Φᵀ`` is PSD, nothing to repair."""
        return self, np.zeros(self.M)

    def weights(self, A: NDArray[Any]) -> list[NDArray[Any]]:
        """Per kernel ``w_m = Φ_mᵀ A[m]`` (a row per problem when ``A`` is ``(k, M, n)``)."""
        A = np.asarray(A)
        return [A[m] @ F if A.ndim == 2 else A[:, m, :] @ F for m, F in enumerate(self.F)]

    def decision(
        self, A: NDArray[Any], b: Any, W: Sequence[NDArray[Any]] | None = None
    ) -> NDArray[np.float64]:
        """``f = Σ_m Φ_m w_m + b`` from the feature weights ``W`` (``A`` is not read)."""
        if W is None:
            raise InternalError("the decision of feature blocks needs their feature weights W")
        parts = [F @ np.asarray(w).T for F, w in zip(self.F, W, strict=True)]
        out: NDArray[np.float64] = np.sum(parts, axis=0) + b
        return out


@dataclass(frozen=True, eq=False)
class OnDemand:
    """Training kernels computed from the points when the engine reads them: no ``n × n``
    matrix is stored (docs/performance.md, "Beyond memory").

    Parameters
    ----------
    K : multikernel._core.OnDemandKernels
        The engine's kernels.
    """

    K: _core.OnDemandKernels

    @property
    def n(self) -> int:
        """Number of training points."""
        return int(self.K.n)

    @property
    def M(self) -> int:  # noqa: N802 (the number of kernels, M throughout the docs)
        """Number of kernels."""
        return int(self.K.m)

    @property
    def engine(self) -> _core.OnDemandKernels:
        """What the engine's ``fit`` reads."""
        return self.K

    def aligned(self) -> OnDemand:
        """This stack (it holds no array)."""
        return self

    def subset(self, rows: NDArray[np.intp]) -> OnDemand:
        """The kernels of the points ``rows`` (a view: the points are shared)."""
        return OnDemand(self.K.subset([int(r) for r in rows]))

    def repair(self, psd: str, n_threads: int) -> tuple[OnDemand, NDArray[np.float64]]:
        """Nothing to repair: the built-in kernels are PSD; ``psd="clip"`` is refused, as
        it needs the stored kernels."""
        if psd == "clip":
            raise InvalidParameterError(
                "psd='clip' repairs stored kernels; kernels computed on demand (cache_size=, "
                "or a stack above the on-demand threshold) are built-in kernels, PSD already: "
                "use psd='check'",
                parameter="psd",
            )
        return self, np.zeros(self.M)

    def cross(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> Dense:
        """Refused: held-out kernels between training points (Platt's internal folds) are
        a stored stack's slices."""
        raise InvalidParameterError(
            "probability=True fits Platt scaling on held-out kernels of a stored stack; "
            "kernels computed on demand (cache_size=) do not take it",
            parameter="probability",
        )

    def weights(self, A: NDArray[Any]) -> None:
        """Nothing: the engine reads the dual coefficients themselves."""
        return None


@dataclass(frozen=True, eq=False)
class CrossOnDemand:
    """The test kernels of raw points against the training points of an on-demand fit,
    computed by :meth:`decision` against the support points only, in blocks of rows.

    Parameters
    ----------
    bank : KernelBank
        The fitted bank.
    X : ndarray of shape (n_test, n_features)
        Validated test points.
    """

    bank: KernelBank
    X: NDArray[np.float64]

    #: Bytes of one block of cross kernels.
    BLOCK_BYTES = 1 << 27

    @property
    def n(self) -> int:
        """Number of test points."""
        return int(self.X.shape[0])

    @property
    def M(self) -> int:  # noqa: N802 (the number of kernels, M throughout the docs)
        """Number of kernels."""
        return len(self.bank.specs)

    def decision(
        self, A: NDArray[Any], b: Any, W: Sequence[NDArray[Any]] | None = None
    ) -> NDArray[np.float64]:
        """``f = Σ_m K_m A[m] + b`` (see :meth:`Dense.decision`), reading the training
        points where some coefficient is non-zero."""
        A = np.asarray(A)
        cols = np.flatnonzero(np.any(A.reshape(-1, A.shape[-1]) != 0, axis=0))
        rows = max(1, self.BLOCK_BYTES // (8 * self.M * max(1, len(cols))))
        parts = []
        for start in range(0, self.n, rows):
            G = self.bank.transform(self.X[start : start + rows], columns=cols)
            parts.append(Dense(G).decision(A[..., cols], b))
        return np.concatenate(parts, axis=0)


#: A training stack.
Stack: TypeAlias = Dense | Blocks | OnDemand
#: A test stack: test kernels against the training points, or how to compute them.
TestStack: TypeAlias = Dense | Blocks | CrossOnDemand

#: The dense stack above which kernels of a solver that can are computed on demand.
ON_DEMAND_ABOVE = 2 << 30


@dataclass(frozen=True)
class OnDemandRule:
    """When the kernels of specifications are computed on demand.

    Parameters
    ----------
    cache_bytes : int
        The solvers' cache budget.
    forced : bool
        Always (``cache_size=`` given); else only when the dense float64 stack would take
        more than :data:`ON_DEMAND_ABOVE` bytes.
    """

    cache_bytes: int
    forced: bool

    def applies(self, M: int, n: int) -> bool:  # noqa: N803 (M kernels)
        """Whether ``M`` kernels on ``n`` points are computed on demand."""
        return self.forced or 8 * M * n * n > ON_DEMAND_ABOVE


@dataclass(frozen=True, eq=False)
class TestSide:
    """How a fitted model reads new points: its test counterpart of the training input.

    Parameters
    ----------
    M, n : int
        The number of kernels and of training points.
    bank : KernelBank, FeatureBank or None
        The fitted bank that maps raw test points (None for precomputed inputs).
    widths : list of int or None
        The training blocks' widths, when new points come as feature blocks or factor rows.
    factors : bool
        The blocks were low-rank factors: new points may also come as the dense cross
        kernels ``(M, n_test, n)`` (exact, or ``G_m(x) G_mᵀ``), and lists are their rows.
    on_demand : bool
        The model was fitted on kernels computed on demand: the test kernels are computed
        against its support points only (:class:`CrossOnDemand`).
    """

    __test__ = False  # not a pytest class, whatever its name

    M: int
    n: int
    bank: KernelBank | FeatureBank | None = None
    widths: list[int] | None = None
    factors: bool = False
    on_demand: bool = False

    def stack(self, X: Any, points: TestPoints) -> TestStack:
        """The test stack of ``X``, checked against the training input (``points``
        validates raw points for a bank)."""
        if self.bank is not None:
            bank = self.bank
            Xv = _raw_points(X, points, isinstance(bank, FeatureBank))
            if self.on_demand and isinstance(bank, KernelBank):
                return CrossOnDemand(bank, Xv)
            out = bank.transform(Xv)
            return Blocks(out) if isinstance(out, list) else Dense(out)
        rows = "the test points' factor rows" if self.factors else "the test feature blocks"
        if self.widths is not None and (isinstance(X, (list, tuple)) or not self.factors):
            blocks = check_feature_blocks(X, rows)
            got = [F.shape[1] for F in blocks]
            if got != self.widths:
                what = "factors" if self.factors else "blocks"
                raise InvalidInputError(
                    f"{rows} must be {len(self.widths)} arrays (n_samples, D_m) with the "
                    f"widths of the training {what} {self.widths}, got widths {got}"
                )
            return Blocks(blocks)
        G = check_stack(X, "G_test", square=False)
        if G.shape[0] != self.M or G.shape[2] != self.n:
            also = f", or a list of {rows}" if self.factors else ""
            raise InvalidInputError(
                f"G_test must have shape (M={self.M}, n_samples, n_train={self.n}), the cross "
                f"kernels to the training points{also}; got shape {G.shape}"
            )
        if not np.isfinite(G).all():
            raise InvalidInputError("G_test contains NaN or infinity")
        return Dense(G)


@dataclass(frozen=True, eq=False)
class Input:
    """A resolved training input: its stack and where the stack came from.

    Parameters
    ----------
    stack : Dense or Blocks
        The training stack (not repaired: see :meth:`Dense.repair`).
    bank : KernelBank, FeatureBank or None
        The fitted bank that computed it from raw points (None for precomputed inputs).
    points : ndarray of shape (n, n_features) or None
        The validated raw points of a bank, refitted on the rows of a :meth:`subset`.
    spec : sequence of Kernel or FeatureBank, optional
        The unfitted kernels of a bank, for those refits.
    normalize : str or None
        The normalisation of a :class:`~multikernel.kernels.KernelBank`.
    n_threads : int
        Checked threads.
    factors : bool
        The stack holds low-rank factors (:class:`~multikernel.kernels.LowRankFactors`).
    on_demand : OnDemandRule or None
        When a bank's kernels are computed on demand (refits of a :meth:`subset` follow it).
    sample_weight : ndarray of shape (n,) or None
        The weights of a bank's normalisation statistics (refits of a :meth:`subset` take
        their rows).
    """

    stack: Stack
    bank: KernelBank | FeatureBank | None = None
    points: NDArray[np.float64] | None = None
    spec: Sequence[Kernel] | FeatureBank | None = None
    normalize: Any = None
    n_threads: int = 0
    factors: bool = False
    on_demand: OnDemandRule | None = None
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
        if self.points is None:
            return Input(self.stack.subset(rows), factors=self.factors)
        if self.spec is None:
            raise InternalError("an input of raw points without its kernels")
        w = None if self.sample_weight is None else self.sample_weight[rows]
        points = self.points[rows]
        return _fit_bank(self.spec, points, self.normalize, self.n_threads, self.on_demand, w)

    def fold(self, train: NDArray[np.intp], test: NDArray[np.intp]) -> tuple[Input, TestStack]:
        """The input of the points ``train`` and the test stack of the points ``test``
        against them (computed once, read by every model of the fold)."""
        sub = self.subset(train)
        if self.points is None:
            return sub, self.stack.cross(test, train)
        if isinstance(sub.stack, OnDemand) and isinstance(sub.bank, KernelBank):
            return sub, CrossOnDemand(sub.bank, self.points[test])
        if sub.bank is None or isinstance(sub.stack, OnDemand):
            raise InternalError("a fold of raw points without its fitted kernel bank")
        out = sub.bank.transform(self.points[test])
        return sub, Blocks(out) if isinstance(out, list) else Dense(out)

    def test_side(self) -> TestSide:
        """How a model fitted on this input reads new points."""
        widths = self.stack.widths if isinstance(self.stack, Blocks) else None
        on_demand = isinstance(self.stack, OnDemand)
        return TestSide(self.M, self.n, self.bank, widths, self.factors, on_demand)


def scatter_kept(part: NDArray[np.float64], keep: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """Coefficients over the ``n`` training points from those of the points ``keep`` (the
    samples of positive weight a fit was run on; last axis): the samples of weight 0 have no
    loss and get coefficient 0, as libsvm leaves them out."""
    out = np.zeros(part.shape[:-1] + (n,))
    out[..., keep] = part
    return out


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
    points: FitPoints,
    default_specs: Callable[[int], list[Kernel]],
    normalize: Any = "mean_diag",
    n_threads: int = 0,
    check_input: bool = True,
    targets: bool = True,
    block_lists: bool = True,
    stack_if_3d: bool = False,
    blocks_only: str | None = None,
    on_demand: OnDemandRule | None = None,
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
        Targets, checked to have one entry per training point when ``targets``.
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
    targets : bool
        False: there are no targets (one-class); None is returned for them.
    block_lists : bool
        A list with ``kernels="precomputed"`` is feature blocks (the estimators); else a
        stack (:func:`~multikernel.mkl_path`, which takes factors as ``LowRankFactors``).
    stack_if_3d : bool
        ``kernels=None`` reads a 3-D ``X`` as a precomputed stack (:func:`~multikernel.mkl_path`).
    blocks_only : str or None
        The solver that fits explicit features only (``"svrg"``, ``"prox_newton"``): a
        precomputed ``X`` must then be feature blocks or factors.
    on_demand : OnDemandRule or None
        When kernel specifications are computed on demand (None: never).
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
        The training input and the targets.
    """
    precomputed = isinstance(kernels, str) and kernels == "precomputed"
    if isinstance(kernels, str) and not precomputed:
        raise InvalidParameterError(
            f"kernels must be a sequence of kernel specifications, 'precomputed', a "
            f"FeatureBank or None; got {kernels!r}",
            parameter="kernels",
        )
    data: Input
    if isinstance(X, LowRankFactors):
        if not (precomputed or kernels is None):
            what = "a FeatureBank" if isinstance(kernels, FeatureBank) else f"specs {kernels!r}"
            raise InvalidParameterError(
                f"low-rank factors are a precomputed stack: pass kernels='precomputed' or "
                f"None, got {what}",
                parameter="kernels",
            )
        data = Input(Blocks(_check_factors(X.factors)), factors=True)
    elif precomputed or (stack_if_3d and kernels is None and np.ndim(X) == 3):
        is_list = isinstance(X, (list, tuple))
        if blocks_only and not is_list:
            raise InvalidInputError(
                f"solver={blocks_only!r} fits explicit features: with kernels='precomputed', X "
                "must be a list of feature blocks (n, D_m), one per kernel, not a kernel stack"
            )
        if is_list and block_lists:
            data = Input(Blocks(check_feature_blocks(X)))
        elif check_input:
            data = Input(Dense(validate_stack(X, n_threads=n_threads)))
        else:
            data = Input(Dense(check_stack(X)))
    else:
        Xv, y = _wrapped(points, isinstance(kernels, FeatureBank), X, y)
        spec = default_specs(Xv.shape[1]) if kernels is None else kernels
        spec = _with_columns(spec, column_names(X))
        if callable(sample_weight):  # an estimator's, which validates them itself
            w = sample_weight(y, Xv.shape[0])
        else:
            w = check_sample_weight(sample_weight, Xv.shape[0])
        data = _fit_bank(spec, Xv, normalize, n_threads, on_demand, w, verbose)
    return data, check_targets(y, data.n) if targets else None


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


def _fit_bank(
    spec: Sequence[Kernel] | FeatureBank,
    Xv: NDArray[np.float64],
    normalize: Any,
    threads: int,
    on_demand: OnDemandRule | None = None,
    sample_weight: NDArray[np.float64] | None = None,
    verbose: int = 0,
) -> Input:
    """The input computed by a bank fitted on the raw points ``Xv``: a copy of a FeatureBank
    (the parameter stays as the user gave it), or a KernelBank of the specifications, its
    kernels computed on demand when ``on_demand`` applies, with statistics weighted by
    ``sample_weight`` (a FeatureBank's maps take none)."""
    bank: KernelBank | FeatureBank
    stack: Stack
    if isinstance(spec, FeatureBank):
        bank = spec._shallow_copy()
        stack = Blocks(bank.fit_transform(Xv))
    else:
        bank = KernelBank(spec, normalize=normalize, n_threads=threads, verbose=verbose)
        stack = Dense(np.empty((0, 0, 0)))
        if on_demand is not None and on_demand.applies(len(bank.specs), Xv.shape[0]):
            try:
                cache = on_demand.cache_bytes
                stack = OnDemand(bank.fit_on_demand(Xv, cache, sample_weight=sample_weight))
            except (InvalidParameterError, InvalidInputError):
                # Kernels that need every entry (centring, the multiplicative
                # normalisation, Python functions): the stored stack, unless asked for.
                if on_demand.forced:
                    raise
        if isinstance(stack, Dense):
            stack = Dense(bank.fit_transform(Xv, sample_weight=sample_weight))
    return Input(
        stack, bank, Xv, spec, normalize, threads, on_demand=on_demand, sample_weight=sample_weight
    )


def _wrapped(f: Callable[..., Any], is_bank: bool, *args: Any) -> Any:
    """``f(*args)`` with its ``ValueError`` raised as an :class:`InvalidInputError` (the
    validators are scikit-learn's), noting for a FeatureBank what it maps."""
    try:
        return f(*args)
    except MultikernelError:
        raise
    except ValueError as e:
        raise InvalidInputError(f"{e}{_BANK_NOTE if is_bank else ''}") from e


def _raw_points(X: Any, points: TestPoints, is_bank: bool) -> NDArray[np.float64]:
    """Raw test points for a bank, validated by ``points``."""
    if is_bank and isinstance(X, LowRankFactors):
        raise InvalidInputError(
            f"X must have shape (n_samples, n_features), got {type(X).__name__}{_BANK_NOTE}"
        )
    out: NDArray[np.float64] = _wrapped(points, is_bank, X)
    return out


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
