"""Type stub of the native module (checked by ``python -m mypy.stubtest multikernel._core``)."""

from collections.abc import Callable
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypedDict, final

import numpy as np
from numpy.typing import NDArray

# The solvers' names are written once on this side of the boundary, in `multikernel._typing`.
from multikernel._typing import NativeSolver as _Solver

__all__ = [
    "ChunkMemo",
    "FitResult",
    "OnDemandKernels",
    "PathResult",
    "Settings",
    "Status",
    "_panic_for_tests",
    "_set_min_cores_for_tests",
    "capabilities",
    "chunk_run",
    "fit",
    "fit_rows",
    "fit_shared",
    "fourier_features",
    "fourier_params",
    "gram_cross",
    "gram_fit",
    "group_weights",
    "low_rank",
    "norm_stats",
    "nystroem_factor",
    "nystroem_features",
    "nystroem_landmarks",
    "on_demand_rule",
    "path",
    "quad_forms",
    "requested_threads",
    "sequence_features",
    "shared_capabilities",
    "simd_level",
    "simplemkl_specs",
    "svm",
    "thread_count",
    "validate_stack",
]

_SpecTuple = tuple[str, float, float, float, list[int] | None]
# A Python kernel function (A, B) -> (len(A), len(B)) and the columns it reads.
_FuncEntry = tuple[Callable[[NDArray[np.float64], NDArray[np.float64]], Any], list[int] | None]
# The settings of the regularization path (run by `path`, not `fit`): not a solver of `fit`.
_SettingsOf = _Solver | Literal["path"]
_Setting = float | int | str | list[int] | list[float] | None
_LossName = Literal["hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive"]

class _Capabilities(TypedDict):
    """What one solver fits (`capabilities`)."""

    features: bool
    warm_start: bool
    penalties: list[Literal["lp", "l1", "elasticnet", "group"]]
    losses: list[_LossName]
    on_demand_losses: list[_LossName]

@final
class Status:
    """How a fit ended."""

    CONVERGED: Final[Status]
    MAX_ITER: Final[Status]
    STALLED: Final[Status]
    UNCERTIFIED: Final[Status]
    def __int__(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class FitResult:
    """A fitted model with its certificate (arrays are numpy, shapes in the comments)."""

    @property
    def coef(self) -> NDArray[np.float64]: ...  # (M, n); (K, M, n) from fit_shared
    @property
    def coef_factors(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None: ...  # (M,), (n,)
    @property
    def intercept(self) -> float: ...
    @property
    def kernel_weights(self) -> NDArray[np.float64]: ...  # (M,)
    @property
    def kernel_norms(self) -> NDArray[np.float64]: ...  # (M,)
    @property
    def primal(self) -> float: ...
    @property
    def dual(self) -> float: ...
    @property
    def gap(self) -> float: ...
    @property
    def n_iter(self) -> int: ...
    @property
    def status(self) -> Status: ...
    @property
    def converged(self) -> bool: ...
    @property
    def history(self) -> NDArray[np.float64]: ...  # (n_records, 6): ..., seconds, solver index
    @property
    def feature_weights(self) -> NDArray[np.float64]: ...  # (D,), svrg and prox_newton only
    @property
    def psd_witness(self) -> tuple[int, float, float, float] | None: ...
    @property
    def solvers(self) -> list[str]: ...  # the solvers that ran: ["wrapper", "spicy"] when continued
    @property
    def solver_iterations(self) -> list[int]: ...  # each solver's iterations; they sum to n_iter
    @property
    def stack_passes(self) -> float | None: ...  # entries read from a stored stack / (M n^2)

@final
class PathResult:
    """A regularization path, one row per point (shapes in the comments)."""

    @property
    def cs(self) -> NDArray[np.float64]: ...  # (P,)
    @property
    def alphas(self) -> NDArray[np.float64]: ...  # (P, n)
    @property
    def eta(self) -> NDArray[np.float64]: ...  # (P, M)
    @property
    def kernel_norms(self) -> NDArray[np.float64]: ...  # (P, M)
    @property
    def primal(self) -> NDArray[np.float64]: ...  # (P,)
    @property
    def dual(self) -> NDArray[np.float64]: ...  # (P,)
    @property
    def gap(self) -> NDArray[np.float64]: ...  # (P,)
    @property
    def mu(self) -> NDArray[np.float64]: ...  # (P,)
    @property
    def corrector_steps(self) -> NDArray[np.int64]: ...  # (P,)
    @property
    def barrier_kernels(self) -> NDArray[np.int64]: ...  # (P,) kernels in the barrier
    @property
    def c0(self) -> float: ...
    @property
    def weights(self) -> NDArray[np.float64]: ...  # (M,)
    @property
    def kinks(self) -> list[int]: ...
    @property
    def end(self) -> str: ...
    @property
    def factorizations(self) -> int: ...

#: A column of sequences: their bytes one after another (uint8) and the n + 1 offsets of
#: their starts (int64).
_SeqColumn: TypeAlias = tuple[NDArray[np.uint8], NDArray[np.int64]]

#: Sparse points: the CSR arrays (data, indices, indptr, n_cols) of a canonical CSR matrix
#: (float64, int64, int64; each row's indices sorted, no duplicates).
_Csr: TypeAlias = tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int]

def gram_fit(
    x: NDArray[np.float64] | _Csr,
    specs: list[_SpecTuple | _FuncEntry],
    normalize: str,
    center: bool,
    float32: bool,
    n_threads: int,
    max_bytes: int | None = None,
    sample_weight: NDArray[np.float64] | None = None,
    on_kernels: Callable[[int], object] | None = None,
    sequences: list[_SeqColumn] | None = None,
) -> tuple[NDArray[Any], dict[str, Any]]: ...

@final
class OnDemandKernels:
    def __new__(
        cls,
        x: NDArray[np.float64],
        specs: list[_SpecTuple | _FuncEntry],
        normalize: str,
        cache_bytes: int,
        sample_weight: NDArray[np.float64] | None = None,
        sequences: list[_SeqColumn] | None = None,
    ) -> OnDemandKernels: ...
    @property
    def n(self) -> int: ...
    @property
    def m(self) -> int: ...
    @property
    def cache_bytes(self) -> int: ...
    def stats(self) -> dict[str, Any]: ...
    def subset(self, idx: list[int]) -> OnDemandKernels: ...

def gram_cross(
    x_new: NDArray[np.float64] | _Csr,
    x_train: NDArray[np.float64] | _Csr,
    specs: list[_SpecTuple | _FuncEntry],
    stats: dict[str, Any],
    float32: bool,
    n_threads: int,
    max_bytes: int | None = None,
    sequences_new: list[_SeqColumn] | None = None,
    sequences_train: list[_SeqColumn] | None = None,
) -> NDArray[Any]: ...
def fourier_params(
    spec: _SpecTuple, dim: int, n_components: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
def fourier_features(
    x: NDArray[np.float64],
    spec: _SpecTuple,
    w: NDArray[np.float64],
    b: NDArray[np.float64],
    n_threads: int = 0,
) -> NDArray[np.float64]: ...
def sequence_features(
    sequences: tuple[NDArray[np.uint8], NDArray[np.int64]],
    spec: _SpecTuple,
    vocabulary: tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.uint32], int] | None = None,
    n_threads: int = 0,
) -> tuple[
    tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int],
    NDArray[np.float64],
    tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.uint32], int] | None,
]: ...
def nystroem_landmarks(
    x: NDArray[np.float64],
    spec: _SpecTuple,
    n_components: int,
    pivoted: bool,
    seed: int,
    n_threads: int = 0,
) -> list[int]: ...
def nystroem_factor(landmarks: NDArray[np.float64], spec: _SpecTuple) -> NDArray[np.float64]: ...
def nystroem_features(
    x: NDArray[np.float64],
    landmarks: NDArray[np.float64],
    spec: _SpecTuple,
    factor: NDArray[np.float64],
    n_threads: int = 0,
) -> NDArray[np.float64]: ...
def simd_level() -> str: ...
def thread_count(n_threads: int = 0) -> int: ...
def requested_threads(n_threads: int) -> int: ...
def norm_stats(
    normalize: str,
    center: bool,
    row_sums: NDArray[np.float64],
    diag: NDArray[np.float64],
    totals: NDArray[np.float64],
    check_psd: list[int] = ...,
) -> dict[str, Any]: ...
def quad_forms(
    g: NDArray[Any], v: NDArray[np.float64], n_threads: int = 0
) -> NDArray[np.float64]: ...
def validate_stack(g: NDArray[Any], rtol: float, n_threads: int = 0) -> None: ...
def low_rank(
    g: NDArray[np.float64], tol: float, max_rank: int, n_threads: int = 0
) -> tuple[list[NDArray[np.float64]], list[int], NDArray[np.float64]]: ...
def simplemkl_specs(
    n_features: int, widths: list[float], degrees: list[int]
) -> list[_SpecTuple]: ...

@final
class Settings:
    """One solver's settings, read over the engine's defaults and validated on creation
    (``InvalidParameterError`` naming the setting); ``Settings("path", ...)`` are the
    regularization path's, which :func:`path` runs."""

    def __new__(
        cls, solver: _SettingsOf, settings: dict[str, _Setting] | None = None
    ) -> Settings: ...
    @property
    def solver(self) -> _SettingsOf: ...
    def as_dict(self) -> dict[str, _Setting]: ...
    def replace(self, **changes: _Setting) -> Settings: ...
    def for_solver(self, solver: _Solver, continued: bool = False) -> Settings: ...
    def with_groups(self, ids: list[int]) -> Settings: ...
    def __getitem__(self, key: str, /) -> _Setting: ...
    @staticmethod
    def solvers() -> list[_Solver]: ...
    def __reduce__(self) -> tuple[type[Settings], tuple[_SettingsOf, dict[str, _Setting]]]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def capabilities() -> dict[_Solver, _Capabilities]:
    """What each solver fits: explicit feature blocks (``features``), a starting point
    (``warm_start``), which penalties and losses, and with which losses kernels computed on
    demand (``on_demand_losses``, empty: never)."""

def on_demand_rule() -> str:
    """The rule of kernels computed on demand, in words (quoted by every refusal)."""

def group_weights(weights: list[float], ids: list[int]) -> list[float]:
    """The group penalty's group weights γ (summing to one) of the kernel weights, kernel
    ``m`` in group ``ids[m]`` (``0..J``)."""

def shared_capabilities() -> dict[str, list[str]]:
    """What the shared fit takes: its ``losses`` and ``penalties``."""

def fit(
    settings: Settings,
    g: NDArray[Any] | list[NDArray[np.float64]] | OnDemandKernels,
    y: NDArray[np.float64],
    *,
    n_threads: int = 0,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
    init_coef: NDArray[np.float64] | None = None,
    init_intercept: float = 0.0,
    init_dual: NDArray[np.float64] | None = None,
    init_feature_weights: NDArray[np.float64] | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> FitResult: ...
def fit_rows(
    settings: Settings,
    rows: Any,
    dims: list[int],
    n: int,
    *,
    n_threads: int = 0,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
    init_feature_weights: NDArray[np.float64] | None = None,
    init_intercept: float = 0.0,
    sparse: bool = False,
) -> FitResult: ...

@final
class ChunkMemo:
    """What a worker keeps of one chunk between the tasks of a Dask fit."""

    def __new__(cls) -> ChunkMemo: ...
    @property
    def applied(self) -> int: ...

def chunk_run(
    x: NDArray[Any] | _Csr,
    dims: list[int],
    y: NDArray[np.float64],
    c: NDArray[np.float64],
    memo: ChunkMemo,
    log: list[list[float]],
    ops: list[list[float]],
    *,
    n_threads: int = 1,
) -> list[list[float]]: ...
def fit_shared(
    settings: Settings,
    g: NDArray[Any] | OnDemandKernels,
    y: NDArray[np.float64],
    *,
    penalty: str = "lp",
    p: float = 2.0,
    l1_ratio: float = 1.0,
    groups: list[int] | None = None,
    n_threads: int = 0,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> tuple[FitResult, NDArray[np.float64]]: ...  # the fit, and the classes' intercepts (K,)
def path(
    g: NDArray[Any] | list[NDArray[np.float64]],
    y: NDArray[np.float64],
    settings: Settings,
    *,
    n_threads: int = 0,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> PathResult: ...
def svm(
    k: NDArray[np.float64],
    y: NDArray[np.float64],
    *,
    kind: str,
    C: float = 1.0,
    epsilon: float = 0.1,
    nu: float = 0.5,
    tol: float = 1e-6,
    shrinking: bool = True,
) -> dict[str, Any]: ...
def _set_min_cores_for_tests(cores: int) -> None:
    """Test hook: the fewest cores the thread rules assume (1 outside tests)."""

def _panic_for_tests(in_pool: bool) -> None:
    """Test hook: panics in the engine, to check that it surfaces as InternalError."""
