"""Frozen dataclass configurations of the solvers (``solver_config=``)."""

from __future__ import annotations

import math
from dataclasses import dataclass


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


@dataclass(frozen=True)
class AnalyticConfig:
    """Settings of the ``analytic`` ℓp-MKL solver (Kloft et al., Algorithm 1).

    Parameters
    ----------
    inner_tol : float, default 1e-7
        Final accuracy of each single-kernel solve (SMO: maximal KKT violation; Newton:
        relative decrease). Early outer iterations use a looser accuracy, tightened as the
        duality gap closes.
    """

    inner_tol: float = 1e-7

    def __post_init__(self) -> None:
        _positive("inner_tol", self.inner_tol)


@dataclass(frozen=True)
class InterleavedConfig:
    """Settings of the ``interleaved`` ℓp-MKL solver (Kloft et al., Algorithm 2: θ updated
    inside SMO from per-kernel gradients; hinge loss only).

    Parameters
    ----------
    inner_tol : float, default 1e-7
        Maximal KKT violation at which SMO stops between θ updates.
    """

    inner_tol: float = 1e-7

    def __post_init__(self) -> None:
        _positive("inner_tol", self.inner_tol)


@dataclass(frozen=True)
class SpicyConfig:
    """Settings of the ``spicy`` solver (SpicyMKL: dual augmented Lagrangian for the ``l1`` and
    ``elasticnet`` penalties, Suzuki & Tomioka).

    Parameters
    ----------
    max_inner : int, default 100
        Newton steps per proximal (outer) iteration at most.
    gamma0 : float, default 1.0
        First proximal parameter γ (shared by the kernel blocks, the intercept and the slack).
    gamma_factor : float, default 10.0
        Growth of γ per outer iteration (≥ 1): larger converges in fewer outer iterations,
        with harder inner problems.
    gamma_max : float, default 1e8
        Cap on γ (bounds the condition number of the inner Newton systems).
    working_set : int or None, default None
        Kernels in the working set: the solver runs on the ``working_set`` kernels with the
        largest block norm of the starting dual point, checks all kernels in one pass when it
        is optimal there, and adds the kernels that violate optimality until the duality gap
        over all kernels is below ``tol``. The result is the same as without a working set;
        only the time changes. ``None`` uses 20 kernels when there are more than 40, else
        all kernels. Ignored when ``l1_ratio = 0`` (every kernel is active).
    """

    max_inner: int = 100
    gamma0: float = 1.0
    gamma_factor: float = 10.0
    gamma_max: float = 1e8
    working_set: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_inner, bool) or not isinstance(self.max_inner, int):
            raise ValueError(f"max_inner must be a positive integer, got {self.max_inner!r}")
        if self.max_inner < 1:
            raise ValueError(f"max_inner must be a positive integer, got {self.max_inner!r}")
        _positive("gamma0", self.gamma0)
        _positive("gamma_max", self.gamma_max)
        if not (isinstance(self.gamma_factor, (int, float)) and 1.0 <= self.gamma_factor < 1e6):
            raise ValueError(f"gamma_factor must be in [1, 1e6), got {self.gamma_factor!r}")
        ws = self.working_set
        if ws is not None and (isinstance(ws, bool) or not isinstance(ws, int) or ws < 1):
            raise ValueError(f"working_set must be None or a positive integer, got {ws!r}")


SolverConfig = AnalyticConfig | InterleavedConfig | SpicyConfig
