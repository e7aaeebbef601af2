"""Input checks shared by the public functions and estimators: clear errors, no silent copies
of the wrong dtype."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .exceptions import InvalidInputError, InvalidParameterError, NonFiniteError


def check_features(X: Any, name: str = "X") -> NDArray[np.float64]:
    """Return ``X`` as a finite, C-contiguous float64 matrix of shape (n_samples, n_features)."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric 2-D array: {exc}") from None
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name} must be 2-D (n_samples, n_features), got an array of shape {arr.shape}"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInputError(
            f"{name} must have at least one sample and one feature, got {arr.shape}"
        )
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise NonFiniteError(
            f"{name} contains NaN or infinity (first at row {bad[0]}, column {bad[1]})",
            entry=(int(bad[0]), int(bad[1])),
        )
    return np.ascontiguousarray(arr)


def check_stack(
    G: Any, name: str = "G", *, square: bool = True, allow_float32: bool = True
) -> NDArray[Any]:
    """Return a kernel stack as a C-contiguous float64 (or float32) array of shape (M, n, n)
    (or (M, n_new, n) when ``square`` is false), checking its dtype and shape only.

    A C-contiguous float64 or float32 stack is returned as it is, its entries unread, so
    finiteness is not checked here: that costs a read of the whole stack, which
    :func:`multikernel.kernels.validate_stack` does in the same pass as its symmetry check
    (the estimators' ``fit`` calls it); other callers that need finite entries check them.
    """
    arr = np.asarray(G)
    if arr.dtype == np.float32 and allow_float32:
        pass
    elif arr.dtype != np.float64:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim != 3:
        shape = "(M, n, n)" if square else "(M, n_samples, n_train)"
        raise InvalidInputError(f"{name} must be a 3-D kernel stack {shape}, got shape {arr.shape}")
    if square and arr.shape[1] != arr.shape[2]:
        raise InvalidInputError(
            f"{name} must have shape (M, n, n) with square kernels, got shape {arr.shape}"
        )
    if min(arr.shape) == 0:
        raise InvalidInputError(f"{name} must not be empty, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def check_n_threads(n_threads: Any) -> int:
    """Validate ``n_threads`` (0 = all cores)."""
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)):
        raise InvalidParameterError(
            f"n_threads must be a non-negative integer, got {n_threads!r}", parameter="n_threads"
        )
    if n_threads < 0:
        raise InvalidParameterError(
            f"n_threads must be >= 0 (0 = all cores), got {n_threads}", parameter="n_threads"
        )
    return int(n_threads)
