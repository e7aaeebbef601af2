"""Solver settings (``solver_config=``) and the one table of solvers.

Each solver has one settings struct in the Rust engine, whose ``Default`` holds every default
and whose ``validate`` holds every check; ``_core.Settings(solver, named)`` is that struct,
read over its defaults and validated. The frozen dataclasses below mirror its solver-specific
fields and check themselves by building one. The engine's list of solvers
(``_core.Settings.solvers()``) is the registry; the tests hold the typing aliases, the rows of
:data:`SOLVERS` (losses included) and the dataclasses' defaults equal to it. On this side a
new solver is its name in ``_typing`` and its dataclass here, in ``__all__`` (the package
exports this module's ``__all__``), :data:`SolverConfig` and ``_CONFIGS`` (the whole list:
docs/reference.md, "Adding a solver").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias

from . import _core
from ._typing import LossName, NativeSolver, Penalty

#: The public names of this module, which the package exports as they are.
__all__ = [
    "AnalyticConfig",
    "InterleavedConfig",
    "MirrorConfig",
    "ProxNewtonConfig",
    "SolverConfig",
    "SpicyConfig",
    "SvrgConfig",
    "WrapperConfig",
]

#: One setting's value as the engine reads it.
Setting: TypeAlias = float | int | str | list[int] | list[float] | None


class _Config:
    """Shared behaviour of the solver settings: the engine checks them on creation."""

    _solver: ClassVar[NativeSolver]

    def __post_init__(self) -> None:
        _core.Settings(self._solver, self._native())

    def _native(self) -> dict[str, Setting]:
        """The settings as the engine reads them (its names and encodings)."""
        return dict(vars(self))


@dataclass(frozen=True)
class AnalyticConfig(_Config):
    """Settings of the ``analytic`` ℓp-MKL solver (Kloft et al., Algorithm 1).

    Parameters
    ----------
    inner_tol : float, default 1e-7
        Final accuracy of each single-kernel solve (SMO: maximal KKT violation; Newton:
        relative decrease), positive. Early outer iterations use a looser accuracy, tightened
        as the duality gap closes.

    Raises
    ------
    multikernel.exceptions.InvalidParameterError
        A setting out of range (a ``ValueError``).

    Examples
    --------
    >>> import multikernel as mk
    >>> clf = mk.MKLClassifier(solver="analytic", solver_config=mk.AnalyticConfig(inner_tol=1e-8))
    >>> clf.solver_config.inner_tol
    1e-08
    """

    _solver: ClassVar[NativeSolver] = "analytic"
    inner_tol: float = 1e-7


@dataclass(frozen=True)
class InterleavedConfig(_Config):
    """Settings of the ``interleaved`` ℓp-MKL solver (Kloft et al., Algorithm 2: θ updated
    inside SMO from per-kernel gradients; hinge loss only).

    Parameters
    ----------
    inner_tol : float, default 1e-7
        Maximal KKT violation at which SMO stops between θ updates, positive.

    Raises
    ------
    multikernel.exceptions.InvalidParameterError
        A setting out of range (a ``ValueError``).

    Examples
    --------
    >>> import multikernel as mk
    >>> mk.InterleavedConfig(inner_tol=1e-6).inner_tol
    1e-06
    """

    _solver: ClassVar[NativeSolver] = "interleaved"
    inner_tol: float = 1e-7


@dataclass(frozen=True)
class SpicyConfig(_Config):
    """Settings of the ``spicy`` solver (SpicyMKL: dual augmented Lagrangian for the ``l1`` and
    ``elasticnet`` penalties, Suzuki & Tomioka).

    Parameters
    ----------
    max_inner : int, default 100
        Newton steps per proximal (outer) iteration at most (≥ 1).
    gamma0 : float, default 1.0
        First proximal parameter γ of the intercept and the slack, positive; the kernel
        blocks take γ/s with ``s`` the kernels' scale (the largest trace for the hinge-type
        losses, the largest mean diagonal for the smooth ones), which makes the iteration the
        same for any common scale of the kernels.
    gamma_factor : float, default 10.0
        Growth of γ per outer iteration, in [1, 1e6): larger converges in fewer outer
        iterations, with harder inner problems.
    gamma_max : float, default 1e8
        Cap on γ, times ``max(1, C·sqrt(s))`` (bounds the condition number of the inner
        Newton systems; the ℓ1 threshold scales with 1/(C·sqrt(s))); finite and at least
        ``gamma0``.
    working_set : int or None, default None
        Kernels in the working set: the solver runs on the ``working_set`` kernels with the
        largest block norm of the starting dual point, checks all kernels in one pass when it
        is optimal there, and adds the kernels that violate optimality until the duality gap
        over all kernels is below ``tol``. The result is the same as without a working set;
        only the time changes. ``None`` uses 20 kernels when there are more than 40, else
        all kernels. Ignored when ``l1_ratio = 0`` (every kernel is active).
    point_working_set : bool, default True
        For the hinge-type losses (hinge, squared hinge, ε-insensitive) from 400 points on,
        iterate on a working set of points: the support vectors and margin violators of one
        SVM on the mean kernel, then every point that violates optimality when the fit is
        optimal on the set. Points outside the set have a zero dual variable, so the
        Newton systems are the size of the set instead of ``n``; the certificate is that of
        the whole problem at every iteration. Above 70 % of the points the whole problem
        takes over. The result is the same as without it; only the time changes.

    Raises
    ------
    multikernel.exceptions.InvalidParameterError
        A setting out of range (a ``ValueError``), naming it.

    Examples
    --------
    >>> import multikernel as mk
    >>> cfg = mk.SpicyConfig(gamma_factor=100.0, working_set=10)
    >>> clf = mk.MKLClassifier(penalty="l1", solver_config=cfg)
    >>> clf.solver_config.gamma_factor
    100.0
    """

    _solver: ClassVar[NativeSolver] = "spicy"
    max_inner: int = 100
    gamma0: float = 1.0
    gamma_factor: float = 10.0
    gamma_max: float = 1e8
    working_set: int | None = None
    point_working_set: bool = True


@dataclass(frozen=True)
class WrapperConfig(_Config):
    """Settings of the ``wrapper`` solver: ``l1`` and ``elasticnet`` MKL as a wrapper around
    one single-kernel solver, SMO for the hinge-type losses and Newton (with conjugate
    gradients from 500 points) for the smooth ones. The kernel weights move by trust-region
    Newton steps whose Hessian comes from the free support vectors (HessianMKL-style; every
    point for the smooth losses), each step a warm-started solve on the combined kernel
    (docs/mathematics.md §2.11).

    Parameters
    ----------
    inner_tol : float, default 1e-7
        Accuracy of each SMO solve (maximal KKT violation), positive; tightened (to 1e-12 at
        most) when the Newton model sees no progress left above ``tol``. The smooth losses'
        Newton solves follow the duality gap instead.

    Raises
    ------
    multikernel.exceptions.InvalidParameterError
        A setting out of range (a ``ValueError``), naming it.

    Examples
    --------
    >>> import multikernel as mk
    >>> clf = mk.MKLClassifier(penalty="l1", solver="wrapper",
    ...                        solver_config=mk.WrapperConfig(inner_tol=1e-8))
    >>> clf.solver_config.inner_tol
    1e-08
    """

    _solver: ClassVar[NativeSolver] = "wrapper"
    inner_tol: float = 1e-7


@dataclass(frozen=True)
class ProxNewtonConfig(_Config):
    """Settings of the ``prox_newton`` solver: ``l1``, ``elasticnet``, ``lp`` (p > 1) and
    ``group`` MKL on explicit features (``kernels=FeatureBank(...)``, feature blocks or
    ``kernels.low_rank`` factors) by proximal Newton in feature space, where the problem is the
    group lasso (elastic net) over the kernels' weight vectors ``w_m``; for ``lp`` the penalty
    ``½ (Σ_m ‖w_m‖^q)^{2/q}`` is smooth and each step is one Newton system over every
    feature; for ``group`` (``½ max_j (Σ_{k∈G_j} ‖w_k‖)²``) the same on a smoothed penalty
    whose smoothing is lowered step by step, certified by the exact dual. Each Newton step
    reads the features once for
    the gradient and the certificate, forms the loss's Hessian on a working set of kernels
    (the active ones and the worst violators of optimality), ``R × R`` in their total width,
    and solves the model by block coordinate descent; a line search on the objective takes
    the step (docs/mathematics.md §2.13). Every loss: the hinge and ε-insensitive losses,
    which have no second derivative, through a continuation on their smoothed (Huber)
    versions, certified by the gap of the loss itself. It has no settings of its own;
    ``max_iter`` bounds the Newton steps.

    Examples
    --------
    >>> import multikernel as mk
    >>> from multikernel.kernels import FeatureBank, Linear
    >>> bank = FeatureBank([Linear(features=[0, 1]), Linear(features=[2, 3])], normalize="none")
    >>> clf = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic",
    ...                        solver="prox_newton", solver_config=mk.ProxNewtonConfig())
    >>> clf.solver
    'prox_newton'
    """

    _solver: ClassVar[NativeSolver] = "prox_newton"


@dataclass(frozen=True)
class MirrorConfig(_Config):
    """Settings of the ``mirror`` solver (group MKL by mirror descent, Nath et al.): the
    closed-form group weights γ alternate with entropic mirror steps on the within-group
    weights λ, each step a warm-started single-kernel solve on ``Σ_jk (λ_jk/γ_j) K_jk``.

    Parameters
    ----------
    inner_tol : float, default 1e-7
        Final accuracy of each single-kernel solve (SMO: maximal KKT violation), positive;
        early steps use a looser accuracy, tightened as the duality gap closes.
    step : {"newton", "adaptive", "paper"}, default "newton"
        The step on λ. ``"newton"``: a second-order step, the Hessian of the saddle value in
        λ from the free support vectors, minimised over the simplexes; for the hinge and
        squared hinge losses on working sets of at most 300 kernels, and the adaptive step
        otherwise (the other losses, the step after the working set was first restricted,
        after a step that raised the primal objective, and a step that would change a group
        weight γ_j more than 4x). It measured 5–10 stack reads to a 1e-3 gap where the adaptive
        step needed 26–293 (docs/mathematics.md §4). ``"adaptive"``: the mirror step
        ``c_t/‖g‖_∞`` with ``c`` grown 1.5x after a step that lowered the primal objective
        and halved after one that did not; every step is certified by its duality gap, and
        it needs several times fewer steps than ``"paper"``: Nath et al.'s rule
        ``sqrt(log max_j n_j) / (‖g‖_∞ sqrt(t))``, the one of their convergence proof.
    working_set : bool, default True
        Iterate on a working set of kernels (``⌈√n_j⌉`` per group to start with, grown by
        the kernels that violate optimality at whole-problem checks, each one pass over the
        stack). The result is the same as without; only the time changes. It is used only
        when it leaves out at least half the kernels.

    Raises
    ------
    multikernel.exceptions.InvalidParameterError
        A setting out of range (a ``ValueError``), naming it.

    Examples
    --------
    >>> import multikernel as mk
    >>> cfg = mk.MirrorConfig(step="paper")
    >>> clf = mk.MKLClassifier(penalty="group", groups=[0, 0, 1], solver_config=cfg)
    >>> clf.solver_config.step
    'paper'
    """

    _solver: ClassVar[NativeSolver] = "mirror"
    inner_tol: float = 1e-7
    step: Literal["adaptive", "newton", "paper"] = "newton"
    working_set: bool = True


@dataclass(frozen=True)
class SvrgConfig(_Config):
    """Settings of the ``svrg`` solver (ℓp-norm MKL on explicit features by multi-epoch SVRG,
    Alioscha-Perez et al.). It has no settings of its own yet: each epoch is ``n`` steps of
    length ``1/(L + λ/d_k)`` per kernel (docs/mathematics.md §6), and the estimator's
    ``random_state`` seeds the sampled points.

    Examples
    --------
    >>> import multikernel as mk
    >>> from multikernel.kernels import FeatureBank, Gaussian
    >>> clf = mk.MKLClassifier(kernels=FeatureBank([Gaussian(sigma=1.0)]), solver="svrg",
    ...                        loss="logistic", solver_config=mk.SvrgConfig(), random_state=0)
    >>> clf.solver
    'svrg'
    """

    _solver: ClassVar[NativeSolver] = "svrg"


SolverConfig: TypeAlias = (
    AnalyticConfig
    | InterleavedConfig
    | SpicyConfig
    | WrapperConfig
    | ProxNewtonConfig
    | MirrorConfig
    | SvrgConfig
)

ALL_LOSSES: tuple[LossName, ...] = (
    "hinge",
    "squared_hinge",
    "logistic",
    "squared",
    "epsilon_insensitive",
)

#: What each solver fits, as the engine states it (``_core.capabilities``).
CAPABILITIES = _core.capabilities()

#: The losses with a second derivative (svrg's losses, as the engine states them).
SMOOTH_LOSSES: tuple[LossName, ...] = tuple(CAPABILITIES["svrg"]["losses"])


@dataclass(frozen=True)
class SolverInfo:
    """One row of :data:`SOLVERS`: what a solver handles and how it is configured.

    Attributes
    ----------
    penalties : tuple of str
        The penalties it solves.
    losses : tuple of str
        The losses it handles.
    config : type
        Its settings dataclass (``solver_config=``).
    """

    penalties: tuple[Penalty, ...]
    losses: tuple[LossName, ...]
    config: type[SolverConfig]


#: Every solver of this version. The first row that handles the penalty is
#: ``solver="auto"``'s default (``_auto.choose`` states the whole rule): ``analytic`` for
#: ``lp`` (its inner SMO runs on one combined kernel, O(n) per step, while ``interleaved``
#: pays O(M·n) per step; it measured as fast or faster for p > 1 on the Kloft benchmark),
#: ``spicy`` for ``l1`` and ``elasticnet``; ``mirror`` for ``group``, which ``_auto.choose``
#: names itself (``prox_newton``, listed first, takes it on narrow explicit features only;
#: ``mirror`` also solves ``lp`` at ``p = 1``, as one group).
_CONFIGS: dict[NativeSolver, type[SolverConfig]] = {
    "analytic": AnalyticConfig,
    "interleaved": InterleavedConfig,
    "spicy": SpicyConfig,
    "wrapper": WrapperConfig,
    "prox_newton": ProxNewtonConfig,
    "mirror": MirrorConfig,
    "svrg": SvrgConfig,
}
#: The penalties and losses of each row are the engine's (``_core.capabilities``), in its
#: order of solvers; only the settings dataclass is this module's.
SOLVERS: dict[NativeSolver, SolverInfo] = {
    solver: SolverInfo(
        tuple(CAPABILITIES[solver]["penalties"]),
        tuple(CAPABILITIES[solver]["losses"]),
        config,
    )
    for solver, config in _CONFIGS.items()
}
