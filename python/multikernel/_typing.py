"""``Literal`` types of the string parameters of the public API.

A type checker rejects a misspelt option (``penalty="l2"``) before the code runs; at run time
the estimators and :func:`multikernel.kernels.gram` still validate every value and raise a
``ValueError`` naming the valid ones, for callers without a type checker.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["LossName", "MultiClass", "Normalization", "Penalty", "PsdRepair", "SolverName"]

#: Regularisers of the kernel functions (``penalty=`` of the estimators).
Penalty: TypeAlias = Literal["lp", "l1", "elasticnet", "group"]

#: Losses (``loss=``): the first three classify, the last two regress.
LossName: TypeAlias = Literal[
    "hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive"
]

#: The engine's solvers of the supervised estimators: the one place their names are written
#: in Python (``SolverName``, ``_config`` and the native module's stub read them;
#: tests/python/test_boundary.py holds them equal to the engine's ``Settings.solvers()``).
_Supervised: TypeAlias = Literal[
    "analytic", "interleaved", "spicy", "wrapper", "prox_newton", "mirror", "svrg"
]

#: Every engine solver: the supervised ones and ``MKLOneClass``'s, in the engine's order.
NativeSolver: TypeAlias = Literal[_Supervised, "one_class"]

#: Solvers (``solver=``); ``"auto"`` picks the fastest valid one for the penalty.
SolverName: TypeAlias = Literal["auto", _Supervised]

#: Scalings of the Gram matrices (``normalize=``); None means ``"none"``.
Normalization: TypeAlias = Literal["none", "trace", "mean_diag", "multiplicative", "spherical"]

#: Reductions of a multiclass problem to binary ones (``multi_class=`` of the classifier).
MultiClass: TypeAlias = Literal["ovr", "ovo", "shared"]

#: What a fit does about a training kernel that is not positive semi-definite (``psd=``):
#: ``"check"`` detects it, ``"clip"`` shifts it by its smallest eigenvalue first.
PsdRepair: TypeAlias = Literal["check", "clip"]
