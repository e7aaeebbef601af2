"""The estimators' former module, kept so that pickles made by earlier versions, which name
``multikernel._estimators``, still load: it re-exports :class:`MKLClassifier`,
:class:`MKLRegressor` and :func:`default_kernels`. Their code lives in ``_classifier.py``,
``_regressor.py`` and ``_base.py``; import them from :mod:`multikernel`."""

from __future__ import annotations

from ._base import default_kernels
from ._classifier import MKLClassifier
from ._regressor import MKLRegressor

__all__ = ["MKLClassifier", "MKLRegressor", "default_kernels"]
