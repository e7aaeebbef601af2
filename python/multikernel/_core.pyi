"""Type stub of the native module (checked by ``python -m mypy.stubtest multikernel._core``)."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "StackTooLargeError",
    "fit_lp",
    "fit_spicy",
    "gram_cross",
    "gram_fit",
    "low_rank",
    "quad_forms",
    "simplemkl_specs",
    "svm",
    "validate_stack",
]

_SpecTuple = tuple[str, float, float, float, list[int] | None]

class StackTooLargeError(ValueError): ...

def gram_fit(
    x: NDArray[np.float64],
    specs: list[_SpecTuple],
    normalize: str,
    center: bool,
    float32: bool,
    n_threads: int,
    max_bytes: int | None = None,
) -> tuple[NDArray[Any], dict[str, Any]]: ...
def gram_cross(
    x_new: NDArray[np.float64],
    x_train: NDArray[np.float64],
    specs: list[_SpecTuple],
    stats: dict[str, Any],
    float32: bool,
    n_threads: int,
    max_bytes: int | None = None,
) -> NDArray[Any]: ...
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
def fit_lp(
    g: NDArray[Any],
    y: NDArray[np.float64],
    *,
    p: float,
    C: float,
    loss: str,
    epsilon: float,
    algorithm: str,
    tol: float,
    max_iter: int,
    inner_tol: float,
    n_threads: int,
) -> dict[str, Any]: ...
def fit_spicy(
    g: NDArray[Any],
    y: NDArray[np.float64],
    *,
    penalty: str,
    l1_ratio: float,
    C: float,
    loss: str,
    epsilon: float,
    tol: float,
    max_iter: int,
    n_threads: int,
    max_inner: int = 100,
    gamma0: float = 1.0,
    gamma_factor: float = 10.0,
    gamma_max: float = 1e8,
    working_set: int = 0,
) -> dict[str, Any]: ...
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
