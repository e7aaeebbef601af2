"""``solver="auto"``: the whole rule in one place (docs/guide.md §4, docs/reference.md).

:func:`choose` maps the parameters and the resolved training stack to the engine solver of a
fit (with :attr:`Choice.continued`, SpicyMKL continues a wrapper fit that stops above ``tol``,
in the same engine call); :func:`on_demand`
decides, before any kernel is computed, whether kernels of specifications are computed on
demand. The measurements behind the choices are in docs/guide.md §4 and docs/performance.md.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Literal

from . import _core
from ._config import CAPABILITIES, SOLVERS, SolverConfig, WrapperConfig
from ._data import Blocks, Dense, OnDemand, OnDemandRule, Stack
from ._typing import NativeSolver
from ._validation import check_real
from .exceptions import InvalidParameterError
from .kernels import FeatureBank

#: What each solver fits, as the engine states it (``_config.CAPABILITIES``, read once): the
#: lists below and the estimators' feature solvers are read from it, never written here.

#: The losses with which each solver fits kernels computed on demand (SMO inside: no n × n
#: matrix); the solvers with none never do.
ON_DEMAND_LOSSES: dict[str, tuple[str, ...]] = {
    s: tuple(c["on_demand_losses"]) for s, c in CAPABILITIES.items()
}

#: The solvers that fit kernels computed on demand.
ON_DEMAND_SOLVERS = tuple(s for s, losses in ON_DEMAND_LOSSES.items() if losses)

#: The solvers that fit explicit feature blocks.
FEATURE_SOLVERS = tuple(s for s, c in CAPABILITIES.items() if c["features"])

#: The row cache of kernels computed on demand when ``cache_size`` is not given (MB).
DEFAULT_CACHE_MB = 1024.0

#: The largest ``cache_size`` (MB) whose bytes the engine can hold (a 64-bit ``usize``):
#: 2**44 - 1 MB, about 1.8e13 MB.
MAX_CACHE_MB = float((2 * sys.maxsize + 1) >> 20)

#: The smallest ``p`` at which ``solver="auto"`` fits ``lp`` by ``prox_newton``: its Newton
#: steps slow down as ``p → 1``, where blocks of nearly zero norm meet the penalty's curvature
#: ``‖w_m‖^{q−2}`` (measured in docs/guide.md §4 and docs/mathematics.md §2.13).
LP_NEWTON_MIN_P = 1.05

#: The solvers that take a warm start (``warm_start=True``): SpicyMKL in the kernels' space,
#: ``prox_newton`` in feature space (the engine's capabilities).
WARM_SOLVERS = tuple(s for s, c in CAPABILITIES.items() if c["warm_start"])


@dataclass(frozen=True)
class StackInfo:
    """What the rule reads of a resolved training stack.

    Parameters
    ----------
    kind : {"dense", "on_demand", "features"}
        Stored Gram matrices, kernels computed on demand, or feature blocks / low-rank
        factors (``K_m = Φ_m Φ_mᵀ``).
    n, M : int
        Points and kernels.
    width : int
        The blocks' total width ``Σ_m D_m`` (0 for kernels).
    sparse : bool
        The blocks are sparse (a FeatureBank's on ``scipy.sparse`` points): only
        ``prox_newton`` fits them.
    """

    kind: Literal["dense", "on_demand", "features"]
    n: int
    M: int
    width: int = 0
    sparse: bool = False

    @staticmethod
    def of(G: Stack) -> StackInfo:
        """The description of the stack ``G``."""
        if isinstance(G, Blocks):
            return StackInfo("features", G.n, G.M, sum(G.widths), G.sparse)
        return StackInfo("on_demand" if isinstance(G, OnDemand) else "dense", G.n, G.M)


@dataclass(frozen=True)
class Choice:
    """The engine solver of a fit.

    Parameters
    ----------
    solver : str
        The engine solver.
    continued : bool
        A wrapper fit that stops above ``tol`` is continued by SpicyMKL in the same engine
        call (the wrapper's setting ``continued``: the engine's ``solvers::continued``).
    rule : Rule or None
        The rule that made this choice (None: a fixed solver, e.g. a one-class fit's), which
        :meth:`on` asks again for another stack; not compared.
    """

    solver: NativeSolver
    continued: bool = False
    rule: Rule | None = field(default=None, compare=False, repr=False)

    def on(self, stack: Stack | StackInfo) -> Choice:
        """The choice of the same rule for a fit on ``stack``: the training stack once it is
        resolved, or a part of it with its own ``n`` (the points of positive weight, a
        one-vs-one pair, a fold); this choice itself when it has no rule."""
        return self if self.rule is None else self.rule.on(stack)

    def settings(self, settings: _core.Settings) -> _core.Settings:
        """``settings`` for :attr:`solver`, moved by the engine (``Settings.for_solver``):
        themselves when they are its settings, else ``C``, the loss, ``tol``, ``max_iter``
        and the penalty carried over and :attr:`solver`'s own settings at their defaults."""
        return settings.for_solver(self.solver, self.continued)


@dataclass(frozen=True)
class Rule:
    """What chooses the engine solver of an estimator's fits: its parameters, read once.

    :meth:`on` is the one decision (:func:`choose`): before the input is resolved (the
    solver the estimator validates and the input layer reads), then once per training stack,
    whose :class:`Choice` the fit carries to that stack's warm-start key and engine fit.

    Parameters
    ----------
    penalty, loss, solver : str
        The estimator's (``loss`` resolved from None), checked by it.
    p : float
        The ℓp norm.
    solver_config : SolverConfig or None
        The estimator's ``solver_config``.
    warm_start : bool
        The estimator's ``warm_start``.
    """

    penalty: str
    p: float
    loss: str
    solver: str
    solver_config: SolverConfig | None
    warm_start: bool

    def on(self, stack: Stack | StackInfo | None) -> Choice:
        """The engine solver of a fit on ``stack`` (None: before the input is resolved)."""
        info = StackInfo.of(stack) if isinstance(stack, (Dense, Blocks, OnDemand)) else stack
        choice = choose(
            penalty=self.penalty, p=self.p, loss=self.loss, solver=self.solver,
            solver_config=self.solver_config, warm_start=self.warm_start, stack=info,
        )  # fmt: skip
        return dataclasses.replace(choice, rule=self)


def choose(
    *,
    penalty: str,
    p: float,
    loss: str,
    solver: str,
    solver_config: SolverConfig | None,
    warm_start: bool,
    stack: StackInfo | None,
) -> Choice:
    """The engine solver of a fit: ``solver`` itself when named, else ``"auto"``'s choice.

    - ``lp`` at ``p = 1``: ``mirror``. Kloft's update has no convergence guarantee there and
      crawls; mirror descent does not (docs/guide.md §4).
    - ``l1`` / ``elasticnet``: ``wrapper`` (for every loss the faster in all measured cases
      from 1000 points on, and in most below), unless ``warm_start`` is set or
      ``solver_config`` is not a :class:`WrapperConfig`. In its place: ``prox_newton`` on
      feature blocks or factors of total width at most ``n / 2``, ``n / 4`` for the hinge
      ("narrow features"; the hinge and ε-insensitive losses through a smoothing
      continuation, where the wrapper's SMO for regression is slow and its SMO for the hinge
      is fast on few points): its Newton systems are ``R × R`` in the working set's width,
      where the wrapper's are ``n × n`` or go through an ``R × R`` capacitance matrix per
      single-kernel solve. A wrapper fit on a stored stack that stops above
      ``tol`` is continued by SpicyMKL in the same engine call; not on kernels computed on
      demand, where SpicyMKL's ``n × n`` systems are what the mode avoids. With
      ``warm_start`` (the solvers that take a start, :data:`WARM_SOLVERS`): ``prox_newton``
      on narrow features without a ``solver_config``, else ``spicy``.
    - ``group``: ``mirror``; ``prox_newton`` in its place on narrow features (as above)
      without a ``solver_config``: Newton steps on the smoothed penalty, where ``mirror``'s
      single-kernel solves on low-rank kernels are slow or, with the hinge, cycle (measured
      in docs/guide.md §4).
    - otherwise the first solver of :data:`SOLVERS` that handles the penalty: ``analytic``
      for ``lp``, ``spicy`` for ``l1`` / ``elasticnet``.

    ``stack`` None: before the input is resolved. The parameters alone then decide, and the
    estimators validate that choice early (its config, loss and settings) and read it in
    :func:`on_demand` and the input layer (linear kernel specifications are fitted as feature
    blocks when this rule moves their blocks to a feature solver); the stack can only move
    the solver to ``prox_newton`` and decide the continuation, so a fit asks again, through
    :meth:`Rule.on`, once for each stack it fits (one-vs-one pairs, folds and the points of
    non-zero weight have their own ``n``). ``penalty`` and ``solver`` are checked by the
    caller.
    """
    if solver != "auto":
        return Choice(next(name for name in SOLVERS if name == solver))
    solvers = [name for name, row in SOLVERS.items() if penalty in row.penalties]
    if penalty == "lp" and isinstance(p, (int, float)) and p == 1 and "mirror" in solvers:
        return Choice("mirror")
    # Sparse blocks count as narrow whatever their width: the kernels' space solvers would
    # need their Gram matrices, and prox_newton's passes cost their stored entries.
    narrow = (
        stack is not None
        and stack.kind == "features"
        and (stack.sparse or (4 if loss == "hinge" else 2) * stack.width <= stack.n)
    )
    if penalty == "group":
        if narrow and solver_config is None:
            return Choice("prox_newton")
        return Choice("mirror")
    if penalty == "lp":
        if narrow and solver_config is None and p >= LP_NEWTON_MIN_P:
            return Choice("prox_newton")
        return Choice(solvers[0])
    if "wrapper" not in solvers:
        return Choice(solvers[0])
    if warm_start:
        if narrow and solver_config is None:
            return Choice("prox_newton")
        return Choice(solvers[0])
    if not (solver_config is None or isinstance(solver_config, WrapperConfig)):
        return Choice(solvers[0])
    if stack is None:
        return Choice("wrapper")
    if narrow:
        return Choice("prox_newton")
    return Choice("wrapper", continued=stack.kind != "on_demand")


def on_demand(
    solver: str, loss: str, kernels: object, cache_size: float | None
) -> OnDemandRule | None:
    """When the fit's kernels are computed on demand: always with ``cache_size=``, or when the
    dense stack would exceed :data:`~multikernel._data.ON_DEMAND_ABOVE`, for the solvers and
    losses that fit without an ``n × n`` matrix and kernel specifications
    (docs/performance.md, "Beyond memory").

    It runs before any kernel is computed, so it cannot wait for the stack: ``solver`` is the
    choice of :func:`choose` before resolution, which is the fit's solver on specifications
    (the stack moves only feature blocks; linear specifications that the rule moves so are
    fitted as feature blocks, :meth:`multikernel._sources.Recipe.how`, unless ``cache_size``
    is given). ``cache_size`` given where kernels cannot be
    computed on demand is an :class:`~multikernel.exceptions.InvalidParameterError`.
    """
    forced = cache_size is not None
    if forced:
        check_real(
            cache_size,
            "cache_size",
            f"in (0, {MAX_CACHE_MB:.0f}] MB (the bytes the engine can address)",
            lambda v: 0 < v <= MAX_CACHE_MB,
        )
    specs = not isinstance(kernels, (FeatureBank, str))
    if not (loss in ON_DEMAND_LOSSES.get(solver, ()) and specs):
        if forced:
            raise InvalidParameterError(
                f"cache_size= computes the kernels on demand from kernel specifications: "
                f"{_core.on_demand_rule()} ('auto' picks one of them for every penalty unless "
                f"warm_start=True or a SpicyConfig is given); got solver={solver!r}, "
                f"loss={loss!r}, kernels={type(kernels).__name__}",
                parameter="cache_size",
            )
        return None
    mb = DEFAULT_CACHE_MB if cache_size is None else float(cache_size)
    return OnDemandRule(int(mb * 2**20), forced)
