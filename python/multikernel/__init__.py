"""multikernel: Multiple Kernel Learning with a Rust engine.

Every solver reports its primal objective, a dual objective from a feasible dual point and the
relative duality gap, which certifies how far the fit is from the optimum.
"""

from __future__ import annotations

from . import _config, exceptions, kernels
from ._base import default_kernels
from ._classifier import MKLClassifier

# The solver configs: a new solver's config is exported by being in ``_config.__all__``.
from ._config import *  # noqa: F403
from ._oneclass import MKLOneClass
from ._path import MKLPath, PathLoss, mkl_path
from ._path_cv import MKLClassifierCV, MKLRegressorCV
from ._regressor import MKLRegressor
from ._typing import LossName, MultiClass, Normalization, Penalty, SolverName

__version__ = "0.1.0"

__all__ = [
    "LossName",
    "MKLClassifier",
    "MKLClassifierCV",
    "MKLOneClass",
    "MKLPath",
    "MKLRegressor",
    "MKLRegressorCV",
    "MultiClass",
    "Normalization",
    "PathLoss",
    "Penalty",
    "SolverName",
    "__version__",
    "default_kernels",
    "exceptions",
    "kernels",
    "mkl_path",
]
__all__ += _config.__all__
