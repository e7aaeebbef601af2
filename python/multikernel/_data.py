"""The training and test stacks that every estimator, the path and the CV estimators read the
same way (the input is resolved into them by :mod:`._sources`).

The Python mirror of the engine's ``KernelStack`` trait: a :class:`Dense` stack of Gram
matrices or :class:`Blocks` (feature blocks or low-rank factors, ``K_m = Φ_m Φ_mᵀ``), each
knowing ``n``, ``M``, its sub-problem on some rows, and its decision function; kernels computed
:class:`OnDemand` and their test side :class:`CrossOnDemand`; and a :class:`TestSide`, how a
fitted model reads new points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._pairwise import take_block
from ._validation import (
    CheckedPoints,
    aligned,
    check_feature_blocks,
    check_sparse,
    check_stack,
    engine_sparse,
    is_sparse,
)
from .exceptions import InternalError, InvalidInputError, InvalidParameterError, MultikernelError
from .kernels import FeatureBank, KernelBank, LowRankFactors, shift_to_psd
from .kernels._sequence import _refuse_numbers

#: Validates raw test points.
TestPoints: TypeAlias = Callable[[Any], CheckedPoints]

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
        return Dense(take_block(self.G, rows, rows))

    def cross(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> Dense:
        """The test kernels of the points ``rows`` against the training points ``cols``."""
        return Dense(take_block(self.G, rows, cols))

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
    def sparse(self) -> bool:
        """Whether the blocks are ``scipy.sparse`` (a FeatureBank's on sparse points)."""
        return any(is_sparse(F) for F in self.F)

    @property
    def engine(self) -> list[Any]:
        """What the engine's ``fit`` and ``path`` read: the blocks, sparse ones (a
        FeatureBank's on ``scipy.sparse`` points) as their CSR arrays (:func:`engine_sparse`),
        which ``prox_newton`` reads at the cost of their stored entries."""
        return [engine_sparse(check_sparse(F)) if is_sparse(F) else F for F in self.F]

    def aligned(self) -> Blocks:
        """These blocks as aligned arrays (after unpickling in another process)."""
        return Blocks(aligned(self.F))

    def subset(self, rows: NDArray[np.intp]) -> Blocks:
        """The blocks of the points ``rows`` (a one-vs-one pair, a fold)."""
        return Blocks([F[rows] if is_sparse(F) else np.ascontiguousarray(F[rows]) for F in self.F])

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
    X : ndarray of shape (n_test, n_features) or Points
        Validated test points.
    """

    bank: KernelBank
    X: CheckedPoints

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
        The training blocks' widths, when new points come as feature blocks or factor rows,
        or are mapped to feature blocks by ``bank`` (a FeatureBank, or a KernelBank of linear
        kernels fitted as their blocks).
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
            if isinstance(bank, KernelBank):
                _refuse_numbers(bank.specs, X)  # before scikit-learn reads X as numbers
            Xv = _raw_points(X, points, isinstance(bank, FeatureBank))
            if self.on_demand and isinstance(bank, KernelBank):
                return CrossOnDemand(bank, Xv)
            if self.widths is not None and isinstance(bank, KernelBank):
                # Linear specifications fitted as their feature blocks (_sources.Recipe.how).
                return Blocks(bank._linear_features(Xv))
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


def scatter_kept(part: NDArray[np.float64], keep: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """Coefficients over the ``n`` training points from those of the points ``keep`` (the
    samples of positive weight a fit was run on; last axis): the samples of weight 0 have no
    loss and get coefficient 0, as libsvm leaves them out."""
    out = np.zeros(part.shape[:-1] + (n,))
    out[..., keep] = part
    return out


def wrapped(f: Callable[..., Any], is_bank: bool, *args: Any) -> Any:
    """``f(*args)`` with its ``ValueError`` raised as an :class:`InvalidInputError` (the
    validators are scikit-learn's), noting for a FeatureBank what it maps."""
    try:
        return f(*args)
    except MultikernelError:
        raise
    except ValueError as e:
        raise InvalidInputError(f"{e}{_BANK_NOTE if is_bank else ''}") from e


def _raw_points(X: Any, points: TestPoints, is_bank: bool) -> CheckedPoints:
    """Raw test points for a bank, validated by ``points``."""
    if is_bank and isinstance(X, LowRankFactors):
        raise InvalidInputError(
            f"X must have shape (n_samples, n_features), got {type(X).__name__}{_BANK_NOTE}"
        )
    out: CheckedPoints = wrapped(points, is_bank, X)
    return out
