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


SolverConfig = AnalyticConfig | InterleavedConfig
