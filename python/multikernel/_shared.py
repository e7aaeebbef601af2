"""One set of kernel weights shared by all classes (``multi_class="shared"``).

The one-vs-rest problems coupled through one θ (docs/mathematics.md §3.8) are one engine
solver (``src/solvers/shared/``): this module is its call and the record it returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._config import Setting
from ._record import FitRecord, internal_start_error
from .exceptions import InvalidParameterError, NonFiniteError, NumericalError

_SHARED = _core.shared_capabilities()
#: The losses of a shared fit (the classifier's), as the engine states them.
SHARED_LOSSES: tuple[str, ...] = tuple(_SHARED["losses"])
#: The penalties a shared fit solves with a certificate (docs/mathematics.md §3.8), as the
#: engine states them.
SHARED_PENALTIES: tuple[str, ...] = tuple(_SHARED["penalties"])


def fit_shared(
    G: NDArray[np.float64] | NDArray[np.float32],
    Y: NDArray[np.float64],
    settings: dict[str, Setting],
    *,
    penalty: str = "lp",
    p: float,
    l1_ratio: float = 1.0,
    groups: Sequence[int] | None = None,
    n_threads: int,
    sample_weight: NDArray[np.float64] | None = None,
    on_iteration: Callable[[float, float, float, int, float], object] | None = None,
) -> FitRecord:
    """The shared problem of ``G`` (M, n, n) and the one-vs-rest targets ``Y`` (K, n)
    (docs/mathematics.md §3.8), solved by the engine: each iteration solves the classes'
    single-kernel problems on one ``K_θ`` in parallel (warm-started), certifies the whole
    problem and moves θ by the binary solver's step for the penalty on the forms summed over
    the classes. ``settings``: the engine's ``analytic`` settings (C, loss, tol, max_iter,
    inner_tol); ``penalty`` ``"lp"`` (``p`` in [1, ∞]), ``"l1"``, ``"elasticnet"``
    (``l1_ratio``) or ``"group"`` (``groups``, the group id ``0..J−1`` of every kernel).
    ``sample_weight``: ``w_i > 0`` on every sample's loss in every class (§0.2).

    Returns one record with a leading class axis: ``coef`` (K, M, n) with
    ``coef[c, m] = θ̃_m β_c``, ``intercept`` (K,); ``kernel_weights`` is θ (``lp``, unit
    p-norm), ``d / Σ d``, ``d_m = s_m / (r1 + r2 s_m)`` (``l1`` / ``elasticnet``, §2.9) or
    ``θ̃ / Σ θ̃`` (``group``, as the engine's group fit, §4)."""
    if penalty == "group" and groups is None:
        raise InvalidParameterError(
            "penalty='group' needs groups (a group id per kernel)", parameter="groups"
        )
    engine = _core.Settings("analytic", {k: v for k, v in settings.items() if k != "p"})
    try:
        r, intercepts = _core.fit_shared(
            engine, G, np.ascontiguousarray(Y, dtype=np.float64), penalty=penalty, p=float(p),
            l1_ratio=float(l1_ratio), groups=None if groups is None else [int(g) for g in groups],
            n_threads=n_threads, on_iteration=on_iteration,
            sample_weight=(
                None if sample_weight is None
                else np.ascontiguousarray(sample_weight, dtype=np.float64)
            ),
        )  # fmt: skip
    except NumericalError as err:
        raise _no_finite_iterate(G, int(settings["max_iter"])) from err  # type: ignore[arg-type]
    except InvalidParameterError as err:  # a shared fit takes no warm start: not the user's
        internal = internal_start_error(err, float(settings["C"]), sample_weight)  # type: ignore[arg-type]
        if internal is None:
            raise
        raise internal from err
    return dataclasses.replace(FitRecord.of(r), intercept=intercepts)


def _no_finite_iterate(G: NDArray[np.float64] | NDArray[np.float32], n_iter: int) -> Exception:
    """The error of a shared fit none of whose ``n_iter`` iterations had a finite primal
    objective: a :class:`~multikernel.exceptions.NonFiniteError` naming the first non-finite
    entry of the stack (which ``check_input=False`` let through), else a
    :class:`~multikernel.exceptions.NumericalError`."""
    for m in range(G.shape[0]):
        bad = np.argwhere(~np.isfinite(G[m]))
        if len(bad):
            i, j = (int(v) for v in bad[0])
            return NonFiniteError(
                f"multi_class='shared': kernel {m} contains NaN or infinity (first at entry "
                f"[{i}, {j}]), and no iteration had a finite objective; check_input=False "
                "skips the check of the stack",
                kernel=m,
                entry=(i, j),
            )
    return NumericalError(
        f"multi_class='shared': none of the {n_iter} iterations had a finite primal "
        "objective (C or the kernels' scale may be extreme: normalize the kernels or lower C)"
    )
