"""One fit's result as plain Python values, the one type every estimator stores from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _core

_STATUSES = (
    _core.Status.CONVERGED,
    _core.Status.MAX_ITER,
    _core.Status.STALLED,
    _core.Status.UNCERTIFIED,
)


@dataclass(frozen=True)
class FitRecord:
    """A :class:`_core.FitResult` as plain Python values: the engine's result does not pickle,
    and one-vs-rest / one-vs-one problems may be solved in other processes (joblib).

    A ``multi_class="shared"`` fit (docs/mathematics.md §3.8) is one record with a leading
    class axis on the model: ``coef`` (K, M, n) and ``intercept`` (K,), with the one θ, the
    block norms over the classes and the whole problem's certificate."""

    coef: NDArray[np.float64]
    intercept: float | NDArray[np.float64]
    kernel_weights: NDArray[np.float64]
    kernel_norms: NDArray[np.float64]
    primal: float
    dual: float
    gap: float
    n_iter: int
    status_code: int
    converged: bool
    history: NDArray[np.float64]
    feature_weights: NDArray[np.float64]
    psd_witness: tuple[int, float, float, float] | None

    @classmethod
    def of(cls, r: _core.FitResult) -> FitRecord:
        return cls(
            r.coef, r.intercept, r.kernel_weights, r.kernel_norms, r.primal, r.dual, r.gap,
            r.n_iter, int(r.status), r.converged, r.history, r.feature_weights, r.psd_witness,
        )  # fmt: skip

    @property
    def status(self) -> _core.Status:
        return next(s for s in _STATUSES if int(s) == self.status_code)
