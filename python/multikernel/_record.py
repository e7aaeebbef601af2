"""One fit's result: as plain Python values (:class:`FitRecord`, the one type every estimator
stores from), as the estimators' attributes (``history_``, ``group_weights_``), and the
warnings it gives (a kernel not PSD, a gap above ``tol``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning

from . import _core
from .exceptions import (
    InternalError,
    InvalidParameterError,
    KernelNotPSDWarning,
    NumericalError,
)

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
    #: The engine solvers that ran, in order, and the iterations of each (summing to n_iter).
    solvers: list[str]
    solver_iterations: list[int]
    #: The entries read from a stored stack over ``M n²`` (None: no stored stack was read).
    stack_passes: float | None = None

    @classmethod
    def of(cls, r: _core.FitResult) -> FitRecord:
        return cls(
            r.coef, r.intercept, r.kernel_weights, r.kernel_norms, r.primal, r.dual, r.gap,
            r.n_iter, int(r.status), r.converged, r.history, r.feature_weights, r.psd_witness,
            list(r.solvers), list(r.solver_iterations), r.stack_passes,
        )  # fmt: skip

    @property
    def status(self) -> _core.Status:
        return next(s for s in _STATUSES if int(s) == self.status_code)


#: The dtype of ``history_``: one record per outer iteration.
HISTORY_DTYPE = np.dtype(
    [
        ("primal", np.float64),
        ("dual", np.float64),
        ("gap", np.float64),
        ("active", np.int64),
        ("seconds", np.float64),
        # The index in ``solvers_`` of the solver that ran the iteration: where it changes,
        # one solver handed over to the next.
        ("solver", np.int64),
    ]
)


def history(rows: NDArray[np.float64]) -> NDArray[Any]:
    """The engine's ``(n_records, 6)`` history as a structured array."""
    out = np.empty(rows.shape[0], dtype=HISTORY_DTYPE)
    for name, column in zip(HISTORY_DTYPE.names or (), rows.T, strict=True):
        out[name] = column
    return out


def group_weights(
    weights: NDArray[np.float64], ids: list[int], n_groups: int
) -> NDArray[np.float64]:
    """γ of the group penalty from the kernel weights ``θ_jk = λ_jk/γ_j`` (normalised to sum
    one), as the engine reads it back (its ``Groups::gammas``, docs/mathematics.md §4);
    ``n_groups`` groups, kernel ``k`` in group ``ids[k]``."""
    out = np.asarray(_core.group_weights([float(v) for v in weights], list(ids)))
    if out.shape != (n_groups,):  # the engine numbers the groups 0..J-1, as group_ids does
        raise InternalError(f"{out.shape[0]} group weights for {n_groups} groups")
    return out


def warn_not_psd(name: str, witness: tuple[int, float, float, float], which: str) -> None:
    """Warn that a fit found a kernel that is not PSD (``FitResult.psd_witness``)."""
    kernel, quad, bound, entry = witness
    cause = (
        "within what rounding the kernel's entries to the stack's precision can do "
        f"({entry:.1e}): e.g. a float32 stack, indefinite by rounding"
        if -quad <= entry
        else f"beyond what rounding the kernel's entries can do ({entry:.1e}): the kernel "
        "itself is indefinite"
    )
    warnings.warn(
        f"{name}{which}: kernel {kernel} is not positive semi-definite: a dual point ρ has "
        f"ρᵀKρ = {quad:.3e}, below −{bound:.1e} (the rounding of its computation) and "
        f"{cause}. Weak duality needs PSD kernels, so the fit has no certificate "
        "(dual_objective_ = -inf). Use a float64 stack, or psd='clip' to shift the training "
        "kernels by their smallest eigenvalue (docs/guide.md §6).",
        KernelNotPSDWarning,
        stacklevel=4,
    )


def warn_unconverged(
    name: str, r: _core.FitResult | FitRecord, which: str, tol: float, solver: str
) -> None:
    """Warn about a fit that did not reach ``tol`` (``name``: the estimator's class; ``which``:
    the problem of a multiclass fit, or empty; ``solver``: the ``solver`` parameter)."""
    if not r.converged:
        advice = {
            _core.Status.STALLED: "the gap stopped shrinking (less than 1 % over 10 "
            "iterations, at the inner solver's finest accuracy: docs/mathematics.md §1.9); "
            "increase tol, normalize kernels of very different scales, or try another "
            "solver (solver='spicy' for penalty='l1' or 'elasticnet', where solver='auto' "
            "continues a stalled wrapper fit with it)",
            _core.Status.UNCERTIFIED: "no dual value certifies the fit, see the "
            "KernelNotPSDWarning",
        }.get(r.status, "increase max_iter or tol")
        if solver == "svrg" and r.status == _core.Status.MAX_ITER:
            # First order: its epochs grow with the condition number, ~C·n times the
            # features' squared scale (breast cancer, n = 200, C = 1000: gap 1.8 after
            # 200 epochs, where 'analytic' needs 5 iterations).
            advice += (
                "; svrg is a first-order method whose epochs grow with C·n_samples and "
                "the features' scale: at large C use solver='analytic' on the kernels"
            )
        warnings.warn(
            f"{name} did not reach tol{which}: relative duality gap "
            f"{r.gap:.3e} > tol {tol:.3e} after {r.n_iter} iterations "
            f"({r.status}); {advice}",
            ConvergenceWarning,
            stacklevel=4,
        )


def internal_start_error(
    err: InvalidParameterError, C: float, weight: NDArray[np.float64] | None
) -> NumericalError | None:
    """The error of an engine fit given no warm start: the engine names ``warm_start`` when
    a start it made itself between its iterations (the ℓ1 wrapper's, the shared fit's) breaks
    ``yᵀα = 0``, which happens at a huge box ``C · w`` (from ~1e12 with ``penalty="l1"``);
    the user, who set no ``warm_start``, is told of ``C`` and ``sample_weight`` instead. None
    for any other error (raised as it is)."""
    if err.parameter != "warm_start":
        return None
    box = C * (1.0 if weight is None or not len(weight) else float(np.max(weight)))
    detail = str(err).split(": ", 1)[-1]
    return NumericalError(
        f"the solver's own start between its iterations broke the equality constraint of the "
        f"dual ({detail}) at the box C · max(sample_weight) = {box:.3g} (C = {C:g}): the "
        f"solver fails at so large a box (no warm_start was given). Lower C or rescale "
        f"sample_weight (only C · w matters), or use penalty='lp'"
    )
