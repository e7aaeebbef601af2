"""The MKL classifier: :class:`MKLClassifier` (its binary problems and multiclass schemes in
:mod:`._multiclass`, Platt's probabilities in :mod:`._platt`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import scipy.special
from numpy.typing import NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from . import _core, _dask
from ._base import decision_labels, logistic_proba, publishes
from ._config import SolverConfig
from ._data import Dense
from ._multiclass import (
    Binary,
    Classifier,
    check_shared,
    class_weights,
    log_name,
    one_vs_one,
    one_vs_rest,
    platt_problem,
    set_shared,
    vote,
)
from ._platt import couple, platt_proba
from ._record import FitRecord
from ._sources import ESTIMATORS
from ._typing import LossName, MultiClass, Normalization, Penalty, PsdRepair, SolverName
from ._validation import check_bool, check_weighted_classes
from .exceptions import InternalError, InvalidInputError, InvalidParameterError, NotFittedError
from .kernels import FeatureBank, Kernel

__all__ = ["MKLClassifier"]


class _available_unless:  # noqa: N801 (a decorator, named as scikit-learn's available_if)
    """A method that is absent (``AttributeError``, so ``hasattr`` is False) when
    ``reason(obj)`` returns a reason, with that reason in the message itself: scikit-learn's
    ``available_if`` states only that the attribute is missing and chains the reason."""

    def __init__(self, reason: Callable[[Any], str | None]) -> None:
        self.reason = reason

    def __call__(self, fn: Callable[..., Any]) -> Any:
        reason = self.reason

        class _Method:
            __doc__ = fn.__doc__

            def __set_name__(self, owner: type, name: str) -> None:
                self.name = name

            def __get__(self, obj: Any, owner: type | None = None) -> Any:
                if obj is None:
                    return fn
                why = reason(obj)
                if why is not None:
                    raise AttributeError(f"{type(obj).__name__} has no {self.name}: {why}")
                return fn.__get__(obj, owner)

        return _Method()


class MKLClassifier(ClassifierMixin, Classifier):  # type: ignore[misc]
    """Multiple kernel learning classifier.

    Learns ``f(x) = Σ_m f_m(x) + b`` with one function per kernel by minimising
    ``C Σ_i ℓ(y_i, f(x_i)) + Ω(‖f_1‖, …, ‖f_M‖)``, and certifies the solution with a duality
    gap (see docs/mathematics.md).

    Parameters
    ----------
    kernels : sequence of Kernel, FeatureBank, "precomputed" or None, default None
        Kernel specifications, evaluated on ``X`` (cross kernels at predict time); or a
        :class:`multikernel.kernels.FeatureBank` (fitted on ``X`` by ``fit``, a copy): the
        solvers then read the low-rank kernels ``Φ_m Φ_mᵀ`` (no ``(M, n, n)`` stack), and the
        fit sets ``coef_``, per kernel the weights in feature space; or
        ``"precomputed"``: ``fit(G, y)`` with ``G`` of shape (M, n, n) and
        ``predict(G_test)`` with ``G_test`` of shape (M, n_test, n), either of them also
        wrapped in a :class:`~multikernel.kernels.PairwiseStack`, which scikit-learn's model
        selection (``GridSearchCV``, ``cross_val_score``, …) splits pairwise. None uses
        :func:`default_kernels`. A precomputed ``G`` may be float32: the solvers then read
        half the bytes (ℓp fits about 1.5x faster on the benchmark of Kloft et al.), and the
        certificate is exact for the float32 kernels. ``fit`` first checks that ``G`` is
        finite and symmetric, which reads all of it once. With ``"precomputed"`` (or None),
        ``X`` may also be a list of feature blocks ``(n, D_m)`` or the
        :class:`~multikernel.kernels.LowRankFactors` of
        :func:`~multikernel.kernels.low_rank` (``K_m = G_m G_mᵀ``, read at their rank);
        ``predict`` then takes the test points' rows of the blocks or factors (or, after
        factors, the dense cross kernels). With ``X`` a pandas DataFrame, the kernels'
        ``features`` may name its columns (``Gaussian(features=["mean radius"])``,
        :func:`~multikernel.kernels.view_bank`): ``fit`` resolves them to indices
        (``kernel_bank_`` holds the resolved kernels, ``feature_names_in_`` the names) and
        ``predict`` refuses a DataFrame whose columns differ.
    penalty : {"lp", "l1", "elasticnet", "group"}, default "lp"
        ``"lp"``: ``Ω = ½ (Σ_m ‖f_m‖^q)^{2/q}``, ``q = 2p/(p+1)``, i.e. Kloft et al.'s
        ℓp-norm MKL with ``‖θ‖_p ≤ 1``. ``"l1"``: ``Ω = Σ_m ‖f_m‖`` (sparse MKL, SpicyMKL);
        ``"elasticnet"``: ``Ω = r Σ_m ‖f_m‖ + (1 − r)/2 Σ_m ‖f_m‖²`` with ``r = l1_ratio``.
        ``"group"``: ``Ω = ½ max_j (Σ_{k∈G_j} ‖f_k‖)²`` over the groups of ``groups`` (Nath et
        al.'s mixed norm: sparse within a group, every group used), solved by ``"mirror"``,
        or ``"prox_newton"`` on explicit features.
    p : float, default 2.0
        Norm of the kernel weights, in [1, inf]; ``p=inf`` is an SVM on the unweighted sum of
        the kernels.
    l1_ratio : float, default 0.5
        Elastic-net mixing (``penalty="elasticnet"``).
    groups : sequence of int, or sequence of sequences of int, optional
        The kernel groups of ``penalty="group"`` (required there, refused otherwise): an
        integer group label per kernel (groups ordered by sorted label), or a list of index
        lists (group ``j`` = the kernels of list ``j``, each kernel in exactly one).
        :func:`multikernel.kernels.view_bank` builds both specifications and groups.
    C : float, default 1.0
        Weight of the loss (as in scikit-learn's SVC).
    loss : {"hinge", "squared_hinge", "logistic"}, optional
        Classification loss; None means ``"hinge"``.
    epsilon : float, default 0.1
        Unused by classification losses (kept for a uniform parameter set; still checked to
        be in [0, inf), as ``p`` and ``l1_ratio`` are whatever the penalty).
    solver : {"auto", "analytic", "interleaved", "spicy", "wrapper", "prox_newton", \
"mirror", "svrg"}, default "auto"
        For ``"lp"``: ``"analytic"``, Kloft's Algorithm 1 (single-kernel solves — SMO for the
        hinge losses, Newton for logistic — between closed-form updates of θ), or
        ``"interleaved"``, Algorithm 2 (θ updated inside SMO; hinge only); ``"auto"`` picks
        ``"analytic"``, the fastest valid solver for every loss in our benchmarks, except at
        ``p=1``, where it picks ``"mirror"`` (Kloft's update has no convergence guarantee
        there and crawls). For ``"l1"`` and ``"elasticnet"``: ``"spicy"`` (SpicyMKL's dual
        augmented Lagrangian) or ``"wrapper"`` (Newton steps on the kernel weights around
        one warm-started single-kernel solve: SMO, or Newton for the smooth losses);
        ``"auto"`` picks ``"wrapper"`` unless ``warm_start`` or a ``SpicyConfig`` is
        given. On explicit features (``kernels=FeatureBank(...)``, feature blocks or
        low-rank factors) whose total width is at most half the points (a quarter with the
        hinge loss), ``"auto"`` picks ``"prox_newton"`` instead (with ``warm_start``
        too, not with a ``SpicyConfig``): proximal Newton in feature space (the group lasso
        over the kernels' weights), whose systems are the size of the working set's
        features, not of ``n``; the hinge-type losses through a continuation on their
        smoothed versions, certified by the loss's own duality gap. It also solves ``"lp"``
        at ``p > 1`` on explicit features (Newton steps on the smooth penalty), and
        ``"auto"`` picks it there on the same widths from ``p = 1.05`` unless an
        ``AnalyticConfig`` is given.
        For ``"group"``:
        ``"mirror"`` (mirror descent over the kernel weights, Nath et al.), also ``"auto"``; it
        solves ``"lp"`` at ``p=1`` too (one group). On explicit features of the same widths
        ``"auto"`` picks ``"prox_newton"`` for ``"group"`` unless a ``MirrorConfig`` is given:
        Newton steps on a smoothed penalty whose smoothing is lowered step by step, certified
        by the exact group dual.
        Kernel specifications that are all ``Linear`` are explicit features too, the blocks
        ``sqrt(s_m) X[:, features]`` (``s_m`` the scale of ``normalize`` ``"none"``,
        ``"trace"`` or ``"mean_diag"`` on the training points): where ``"auto"`` picks
        ``"prox_newton"`` for those blocks, it fits them so, as the same kernels given as a
        ``FeatureBank`` (``coef_`` is then set; ``kernel_bank_`` is their ``KernelBank``),
        unless ``cache_size`` asks for kernels computed on demand.
        ``"svrg"`` also solves ``"lp"`` (smooth losses: logistic, squared, squared_hinge) by
        multi-epoch stochastic variance-reduced gradient on explicit features, for large n:
        it needs ``kernels=FeatureBank(...)`` and is seeded by ``random_state``.
    tol : float, default 1e-3
        Stop when the relative duality gap is at most ``tol``.
    max_iter : int, default 200
        Maximal number of outer iterations.
    solver_config : AnalyticConfig, InterleavedConfig, SpicyConfig, WrapperConfig, \
ProxNewtonConfig, MirrorConfig or SvrgConfig, optional
        Solver-specific settings (defaults when None).
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"} or None, \
default "mean_diag"
        Normalisation of kernels computed from specifications (see
        :func:`multikernel.kernels.gram`); ignored for precomputed kernels. None is
        ``"none"``.
    psd : {"check", "clip"}, default "check"
        What ``fit`` does about training kernels that are not positive semi-definite (PSD),
        e.g. float32 stacks indefinite by rounding (docs/guide.md §6). ``"check"``: nothing
        is changed; a fit whose dual point exploits a negative direction has no certificate
        and warns (:class:`~multikernel.exceptions.KernelNotPSDWarning`). ``"clip"``: the
        training stack (precomputed or computed from ``kernels``) is first repaired by
        :func:`multikernel.kernels.shift_to_psd`: ``K_m + s_m I`` with ``s_m`` the smallest
        shift that makes ``K_m`` PSD as stored (0 for a kernel that is, left bit-identical;
        ``fit`` then makes one copy of the stack if any ``s_m > 0``), recorded in
        ``psd_shifts_``. The shift is a ridge on the training diagonal only: the fit solves
        the problem of ``K_m + s_m I``, and test-time cross kernels are unchanged. A kernel
        that needs more than 1 % of its largest diagonal entry is no rounding case and is
        refused (``KernelNotPSDError``). Costs an ``O(n³)`` factorisation per kernel.
    multi_class : {"ovr", "ovo", "shared"}, default "ovr"
        How more than two classes are handled: one-vs-rest (one problem per class),
        one-vs-one (one problem per pair of classes, on their points only), or ``"shared"``:
        the one-vs-rest problems coupled through one set of kernel weights, minimising
        ``C Σ_c Σ_i w_i ℓ(y_i^c, f^c(x_i)) + Ω(s)`` with ``s_m = sqrt(Σ_c ‖f_m^c‖²)`` and
        ``w`` the samples' weights (``sample_weight`` times ``class_weight``; 1 without)
        (docs/mathematics.md §3.8). ``"shared"`` fits ``penalty="lp"``
        (``Ω = ½ (Σ_m s_m^q)^{2/q}``, ``solver`` ``"auto"`` or ``"analytic"``) and
        ``penalty="l1"`` (``Ω = Σ_m s_m``, ``kernel_weights_ = s / Σ s``) and
        ``penalty="elasticnet"`` (``Ω = r Σ_m s_m + (1 − r)/2 Σ_m s_m²``, ``r = l1_ratio``)
        and ``penalty="group"`` (``Ω = ½ max_j (Σ_{k∈G_j} s_k)²`` over ``groups``, by Nath et
        al.'s mirror descent; ``kernel_weights_`` and ``group_weights_`` as the binary group
        fit reports them), the last three with ``solver="auto"``, from kernel specifications
        or a precomputed ``(M, n, n)`` stack; ``kernel_weights_`` and ``kernel_norms_`` are
        then of shape (M,) and the certificate attributes are the whole problem's scalars. It
        refuses a ``FeatureBank``, feature blocks or factors, ``cache_size``, a
        ``solver_config`` with ``"l1"`` / ``"elasticnet"`` / ``"group"`` and
        ``probability=True`` with a hinge-type loss. With two classes every choice is the
        binary fit.
    probability : bool, default False
        For the hinge-type losses, fit Platt's sigmoid ``1/(1 + exp(A f + B))`` to decision
        values from an internal 5-fold cross-validation of every binary problem (as
        scikit-learn's ``SVC(probability=True)``: five more fits per problem), so that
        ``predict_proba`` is available; one-vs-one pairs are coupled (Wu, Lin & Weng 2004).
        Samples of weight 0 take no part in the folds nor in the sigmoid's fit (libsvm
        removes them too), so each class of each problem needs two samples of nonzero
        weight. The logistic loss has probabilities of its own and ignores it.
    class_weight : dict, "balanced" or None, default None
        A weight per class on the loss of its samples, as scikit-learn's ``SVC``: a dict maps
        labels to weights (missing labels: 1); ``"balanced"`` weights class ``k`` by
        ``n_samples / (n_classes · n_k)``. Multiplies ``fit``'s ``sample_weight``; taken by
        the same solvers.
    n_threads : int, default 0
        Threads, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or ``OMP_NUM_THREADS`` when that
        is set (joblib's workers set it to their share); ``-k`` all but ``k − 1``; ``k > 0`` that
        many, clipped to the available cores.
    random_state : int, optional
        Seed of the stochastic solver ``"svrg"`` and of the folds of ``probability=True``,
        in [0, 2**64) (None: 0); the other solvers are deterministic and ignore it.
    verbose : int, default 0
        ``0``: silent. ``1``: INFO records on the ``multikernel`` logger (a stderr handler is
        added when logging is not configured): one per outer iteration, its certificate
        (primal, dual and the relative gap they give; an iterate that is not the best so far,
        or a restricted working-set step without a whole-problem primal, is told apart from
        the certificate), active kernels and seconds; and one summary line at the end of the
        fit (how it ended, iterations, seconds, certificate, active kernels). A multiclass
        fit logs one summary line per binary problem, then one for the whole fit. ``2`` or
        more: progress bars instead of the iteration lines (over the iterations, SVRG's
        epochs, the binary problems and the probability folds), the summary lines kept;
        they need tqdm (the ``progress`` extra), without which ``2`` logs as ``1``.
    warm_start : bool, default False
        ``penalty="l1"`` and ``"elasticnet"`` (SpicyMKL, and ``prox_newton`` on explicit
        features), and ``"lp"`` with ``prox_newton``: when True, ``fit`` starts from the
        previous fit's solution (SpicyMKL's ``dual_coef_``, ``prox_newton``'s feature
        weights, and ``intercept_``), as
        scikit-learn's ``warm_start`` does: ``set_params(C=...)`` then ``fit`` again follows
        a grid of C (or of ``l1_ratio``, ``tol``) at a fraction of the cost of cold starts.
        The start is certified first (a fit already optimal for the new settings ends
        there); the result is the same certified optimum as from a cold start. A previous
        fit that cannot seed this one (another solver, loss, number of points, kernels or
        feature widths, classes or ``multi_class``) is ignored: the fit starts cold,
        silently. The other solvers always start cold, so with ``warm_start=True``
        ``solver="auto"`` picks ``"prox_newton"`` for ``"l1"``, ``"elasticnet"`` and
        ``"lp"`` (p ≥ 1.05) on explicit features of total width at most n/2 (n/4 with the
        hinge), and ``"spicy"`` otherwise (``"analytic"`` for ``"lp"``, which starts
        cold).
    cache_size : float or None, default None
        Megabytes of kernel values the solver may hold when the kernels are computed on
        demand (half for columns of the combined kernel, half for a packed working set of
        points), in (0, 2**44 − 1], the bytes the engine can address. Given, the kernels
        of specifications are always computed on demand: entries are evaluated from ``X``
        when the solver reads them and no ``(M, n, n)`` stack is stored (solvers
        ``analytic``, ``wrapper`` and ``mirror`` with the hinge, squared hinge or
        ε-insensitive loss; normalisations ``none``, ``trace``, ``mean_diag``,
        ``spherical``). None: on demand only when the float64 stack would exceed 2 GiB
        and the fit allows it, with a 1024 MB cache (docs/performance.md, "Beyond
        memory").

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    probA_, probB_ : ndarray of shape (n_problems,)
        With ``probability=True`` and a hinge-type loss, Platt's ``A`` and ``B`` of each binary
        problem (one for two classes); empty otherwise.
    dual_coef_ : ndarray of shape (M, n_train), or (n_problems, M, n_train) for multiclass
        Per-kernel coefficients ``A``: ``f_m(x) = Σ_i A[m, i] k_m(x, x_i)``.
        A binary ``prox_newton`` fit on feature blocks keeps ``A[m] = d_m ρ̃`` as its two
        factors and forms ``A`` at its first read (``M`` times their memory; predictions read
        ``coef_``).
    intercept_ : float, or ndarray of shape (n_problems,) for multiclass
        The offset ``b``.
    kernel_weights_ : ndarray of shape (M,) or (n_problems, M)
        The kernel combination: θ with unit p-norm for ``"lp"``; ``‖f_m‖ / Σ_k ‖f_k‖`` on the
        simplex for ``"l1"`` and ``"elasticnet"`` (zero exactly for unused kernels);
        ``λ_jk/γ_j`` normalised to the simplex for ``"group"`` (and for ``"lp"`` solved by
        ``"mirror"``, which then equals the unit 1-norm θ).
    kernel_norms_ : ndarray of shape (M,) or (n_problems, M)
        ``‖f_m‖`` in each RKHS.
    primal_objective_, dual_objective_, duality_gap_ : float, or ndarray of shape \
(n_problems,)
        The certificate: primal value, dual value of a feasible dual point, and
        ``(P − D)/|P|``.
    n_iter_ : int, or ndarray of shape (n_problems,)
        Outer iterations run, by every engine solver that ran (a warm start's certificate of
        its starting point counts as one).
    solvers_ : tuple of str, or list of them for multiclass
        The engine solvers that ran, in order: one, or ``("wrapper", "spicy")`` when
        ``solver="auto"`` continued a wrapper fit that stalled or reached ``max_iter`` with
        SpicyMKL (``multi_class="shared"``: ``("shared",)``).
    solver_iterations_ : tuple of int, or list of them for multiclass
        The iterations of each solver in ``solvers_``; they sum to ``n_iter_``.
    stack_passes_ : float or None, or list of them for multiclass
        The engine's reads of a stored kernel stack: the entries it read over ``M n²``, so 1.0
        is one read of every stored entry (the summed-kernel SVM's sum costs one pass). None
        when no stored stack was read (kernels on demand, low-rank factors, explicit
        features). The input check of ``check_input=True`` reads every entry once more, and
        is not counted here (docs/performance.md, "Passes over the stack").
    converged_ : bool, or ndarray of shape (n_problems,)
        Whether the duality gap reached ``tol``.
    history_ : structured ndarray of shape ``(n_records,)``, or a list of them for multiclass
        Per recorded iterate: primal, dual, gap, active kernels, seconds, and ``solver``, the
        index in ``solvers_`` of the solver that ran it (where it changes, one solver handed
        over to the next). The SVM wrapper and the shared fit's trust region count a refused
        trial step as an iteration and record no iterate (``n_records ≤ n_iter_``); proximal
        Newton counts its Newton steps and also records the certificate of its starting point
        and of each point it certifies again at a lower smoothing level
        (``n_records > n_iter_``).
    group_weights_ : ndarray of shape (n_groups,) or (n_problems, n_groups)
        ``penalty="group"`` only: the group weights γ on the simplex (in the order of
        ``groups``; one vector for ``multi_class="shared"``). At the optimum
        ``γ_j ∝ max_{k∈G_j} ‖β‖_{K_k}`` (the group's share of the dual norm,
        ``A[k] = θ_k β``), and the group sums ``Σ_{k∈G_j} ‖f_k‖`` are equal.
    kernel_bank_ : KernelBank, FeatureBank or None
        The fitted bank that computes the test kernels, or the test features for a
        ``FeatureBank`` (None for precomputed kernels); its kernels read columns by index
        (names resolved).
    coef_ : list of ndarray of shape (D_m,) or (n_problems, D_m)
        With ``kernels=FeatureBank``, feature blocks or factors, and linear specifications
        fitted as their blocks (see ``solver``): per kernel, the weights ``w_m = Φ_mᵀ A[m]``
        in its feature space, so that ``f_m(x) = φ_m(x)ᵀ w_m`` (not set otherwise).
    n_features_in_ : int
        Columns of ``X`` (not set for precomputed kernels).
    n_kernels_ : int
        The number of kernels M.
    n_train_ : int
        The number of training points.
    pairs_ : ndarray of shape (n_pairs, 2)
        The class indices ``(a, b)`` of each one-vs-one problem (``a`` positive); empty
        otherwise.
    psd_shifts_ : ndarray of shape (M,)
        The shifts ``s_m`` added to the training kernels' diagonals by ``psd="clip"``; all
        zeros when nothing was shifted (always with ``psd="check"``, and for feature blocks,
        PSD by construction).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> import multikernel as mk
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = mk.MKLClassifier(p=2.0, C=1.0).fit(X[:300], y[:300])
    >>> bool(clf.duality_gap_ <= 1e-3), bool(clf.score(X[300:], y[300:]) > 0.9)
    (True, True)
    """

    _losses = ("hinge", "squared_hinge", "logistic")

    classes_: NDArray[Any]
    pairs_: NDArray[np.int64]

    def __init__(
        self,
        *,
        kernels: Sequence[Kernel] | FeatureBank | Literal["precomputed"] | None = None,
        penalty: Penalty = "lp",
        p: float = 2.0,
        l1_ratio: float = 0.5,
        groups: Sequence[int] | None = None,
        C: float = 1.0,
        loss: LossName | None = None,
        epsilon: float = 0.1,
        solver: SolverName = "auto",
        tol: float = 1e-3,
        max_iter: int = 200,
        solver_config: SolverConfig | None = None,
        normalize: Normalization | None = "mean_diag",
        psd: PsdRepair = "check",
        multi_class: MultiClass = "ovr",
        probability: bool = False,
        class_weight: dict[Any, float] | Literal["balanced"] | None = None,
        n_threads: int = 0,
        random_state: int | None = None,
        verbose: int = 0,
        warm_start: bool = False,
        cache_size: float | None = None,
    ) -> None:
        super().__init__(
            kernels=kernels,
            penalty=penalty,
            p=p,
            l1_ratio=l1_ratio,
            groups=groups,
            C=C,
            loss=loss,
            epsilon=epsilon,
            solver=solver,
            tol=tol,
            max_iter=max_iter,
            solver_config=solver_config,
            normalize=normalize,
            psd=psd,
            n_threads=n_threads,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            cache_size=cache_size,
        )
        self.multi_class = multi_class
        self.probability = probability
        self.class_weight = class_weight

    @publishes
    def fit(
        self, X: Any, y: Any, sample_weight: Any = None, check_input: bool = True
    ) -> MKLClassifier:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n, n)
            Training points (``scipy.sparse`` too, for kernel specifications: docs/guide.md,
            "Sparse data"), or the training kernel stack for ``kernels="precomputed"``.
        y : array-like of shape (n_samples,)
            Class labels (any hashable type: strings are fine), two classes at least.
        sample_weight : array-like of shape (n_samples,), default None
            A weight ``w_i ≥ 0`` per sample on its loss: the data term becomes
            ``C Σ_i w_i ℓ(y_i, f(x_i))`` (SMO's boxes ``0 ≤ α_i ≤ C w_i``, as SVC's), so an
            integer weight equals that many copies of the sample; samples of weight 0 are left
            out. Multiplied by ``class_weight``. Taken by every solver and by
            ``multi_class="shared"`` (every class's loss of sample ``i`` weighted by ``w_i``,
            docs/mathematics.md §3.8). The kernels' normalisation
            statistics are weighted by it too (integer weights give the kernels of duplicated
            rows).
        check_input : bool, default True
            False skips :func:`~multikernel.kernels.validate_stack`'s read of a dense
            precomputed stack (shape and dtype are still checked), for a stack known to be
            valid, as scikit-learn's ``Lasso.fit``; see docs/guide.md §6. Ignored for other
            inputs. A stack with NaN or infinity that leads to non-finite decision values
            in Platt's folds (``probability=True``), or to no finite iterate of
            ``multi_class="shared"``, still raises
            :class:`~multikernel.exceptions.NonFiniteError`.

        Returns
        -------
        MKLClassifier
            ``self``, fitted. A fit that does not reach ``tol`` within ``max_iter`` warns
            with a ``ConvergenceWarning``; one whose dual point proves a kernel not
            positive semi-definite has no certificate and warns with
            :class:`~multikernel.exceptions.KernelNotPSDWarning` (docs/guide.md §6).

        Raises
        ------
        ValueError
            An invalid hyper-parameter, a solver that does not handle the penalty or the
            loss, non-finite or ill-shaped data, fewer than two classes, or (precomputed)
            a stack that is not symmetric; with ``probability=True``, a binary problem
            with fewer than two samples of nonzero weight in one of its classes.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> import multikernel as mk
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = mk.MKLClassifier(C=10.0).fit(X, y)  # one-vs-rest: three problems
        >>> clf.classes_, clf.dual_coef_.shape, clf.kernel_weights_.shape
        (array([0, 1, 2]), (3, 5, 150), (3, 5))
        >>> G = mk.kernels.gram(X, mk.default_kernels(4), normalize="mean_diag")
        >>> pre = mk.MKLClassifier(kernels="precomputed", C=10.0).fit(G, y)
        >>> bool(abs(pre.primal_objective_ - clf.primal_objective_).max() < 1e-8)
        True
        """
        if _dask.is_dask_array(X) or _dask.is_dask_frame(X):
            # Dask's parts are imported only when handed Dask data.
            from . import _dask_classes, _dask_fit

            _dask_fit.fit(self, X, y, sample_weight, classify=_dask_classes.classify)
            return self
        started = time.perf_counter()
        previous = self._previous_fit()
        self._clear()
        shared = self.multi_class == "shared"
        if shared:
            check_shared(self)
        early, settings = self._check_params()
        if self.multi_class not in ("ovr", "ovo", "shared"):
            raise InvalidParameterError(
                f"multi_class must be 'ovr', 'ovo' or 'shared', got {self.multi_class!r}",
                parameter="multi_class",
            )
        platt = check_bool(self.probability, "probability") and settings["loss"] != "logistic"

        def weigh(yv: Any, w: NDArray[np.float64] | None) -> NDArray[np.float64] | None:
            # The loss weights, sample_weight times class_weight, are also those of the
            # normalisation statistics: class_weight={k: 3} is then sample_weight 3 on class
            # k, and both the fit of the rows of class k written three times.
            check_classification_targets(yv)
            classes, yi = np.unique(yv, return_inverse=True)
            return class_weights(self.class_weight, classes, yi, w)

        # A shared fit reads a dense stack: never kernels computed on demand or linear
        # specifications as feature blocks.
        G, yv, sw = self._training_stack(
            X, y, ESTIMATORS if shared else self._accepts(early),
            check_bool(check_input, "check_input"), sample_weight, weigh,
        )  # fmt: skip
        if shared and not isinstance(G, Dense):
            raise InvalidParameterError(
                "multi_class='shared' fits a dense kernel stack (kernels=specifications, or "
                "kernels='precomputed' with an (M, n, n) stack); got feature blocks or "
                "low-rank factors: use multi_class='ovr' for them",
                parameter="multi_class",
            )
        classes, yi = np.unique(yv, return_inverse=True)
        if len(classes) < 2:
            raise InvalidInputError(
                f"the training data must contain at least two classes, got {len(classes)} class"
            )
        check_weighted_classes(sw, yi, classes)
        results: Sequence[_core.FitResult | FitRecord] = []
        coefs: list[NDArray[Any]] | None = None
        problems: list[tuple[int, int]] = []
        scheme = self.multi_class if len(classes) > 2 else None
        choice = early.on(G)  # the solver of this stack, for its warm start and its fits
        key = self._warm_key_of(choice, settings, G, tuple(classes.tolist()), scheme)
        # Each problem and its weights, for Platt.
        binary: list[Binary] = []
        if len(classes) == 2:
            st = self._warm_starts(previous, key)
            yb = np.where(yi == 1, 1.0, -1.0)
            pos, neg = f"class {log_name(classes[1])}", f"class {log_name(classes[0])}"
            binary = [(G, yb, sw, pos, neg)]
            results = [self._solve(choice, G, yb, settings, start=st[0] if st else None, weight=sw)]
        elif shared:
            if not isinstance(G, Dense):  # refused above
                raise InternalError("multi_class='shared' reached the fit without a dense stack")
            set_shared(self, G, yi, len(classes), settings, sw)
        elif self.multi_class == "ovr":
            starts = self._warm_starts(previous, key)
            results, binary = one_vs_rest(self, choice, settings, G, yi, classes, sw, starts)
        else:
            results, binary, coefs, problems = one_vs_one(
                self, choice, settings, G, yi, classes, sw, previous, key, platt
            )
        if results:
            self._set_results(results, multi=len(classes) > 2, coefs=coefs)
        self.classes_ = classes
        self.pairs_ = np.asarray(problems, dtype=np.int64).reshape(-1, 2)
        self.n_train_ = G.n
        self._feature_coefs(G)
        ab = (
            [platt_problem(self, choice, settings, *problem) for problem in binary] if platt else []
        )
        self.probA_ = np.array([a for a, _ in ab], dtype=np.float64)
        self.probB_ = np.array([b for _, b in ab], dtype=np.float64)
        self._log_summary(started)
        return self

    def _problem_labels(self) -> list[str]:
        if self.multi_class == "ovo":
            c = self.classes_
            return [f" (class {log_name(c[a])} vs {log_name(c[b])})" for a, b in self.pairs_]
        return [f" (class {log_name(c)} vs rest)" for c in self.classes_]

    @_dask.by_row_blocks
    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Decision values ``f(x) = Σ_m f_m(x) + b``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels against the training points for
            ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_pairs)
            For two classes, one value per point (positive means ``classes_[1]``); else one
            column per one-vs-rest problem (class) or per one-vs-one pair (see ``pairs_``,
            positive means the pair's first class).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.
        ValueError
            Non-finite or ill-shaped ``X`` (another number of features, or a precomputed
            stack of another shape than (M, n_samples, n_train)).

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> clf = mk.MKLClassifier(kernels=[mk.kernels.Linear()]).fit(X, ["a", "a", "b", "b"])
        >>> f = clf.decision_function(np.array([[-3.0], [3.0]]))
        >>> f.shape, bool(f[0] < 0 < f[1])
        ((2,), True)
        """
        return self._decision(self._test_stack(X))

    @_dask.by_row_blocks
    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``: the sign of the decision value for two classes, the
            largest one-vs-rest value, or the most one-vs-one votes (ties broken by the
            summed decision values).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.
        ValueError
            Non-finite or ill-shaped ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> clf = mk.MKLClassifier(kernels=[mk.kernels.Linear()]).fit(X, ["a", "a", "b", "b"])
        >>> clf.predict(np.array([[-3.0], [3.0]]))
        array(['a', 'b'], dtype='<U1')
        """
        f = self.decision_function(X)
        if f.ndim == 1:
            return decision_labels(f, self.classes_)
        if self.multi_class == "ovo" and len(self.classes_) > 2:
            return vote(f, self.pairs_, self.classes_)
        return decision_labels(f, self.classes_)

    def _proba_unavailable(self) -> str | None:
        """Why this classifier has no ``predict_proba`` (None: it has one)."""
        if self.loss == "logistic" or self.probability is True:
            return None
        return (
            f"loss={self.loss or 'hinge'!r} gives decision values, not probabilities: use "
            "loss='logistic', or probability=True for Platt scaling fitted by internal "
            "cross-validation (as SVC(probability=True)), or wrap the classifier in "
            "scikit-learn's CalibratedClassifierCV"
        )

    @_available_unless(_proba_unavailable)
    @_dask.by_row_blocks
    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities: the logistic model's, or Platt's (``probability=True``).

        ``loss="logistic"``: ``σ(f)`` for two classes; the one-vs-rest ``σ(f_k)`` normalised
        to sum to one for more, the one-vs-one pairs' ``σ(f_ab)`` coupled pairwise (Wu, Lin &
        Weng 2004). Hinge-type losses with ``probability=True``: Platt's
        ``1/(1 + exp(A f + B))`` of each binary problem (``probA_``, ``probB_``), normalised
        over the classes for one-vs-rest, coupled pairwise (Wu, Lin & Weng 2004) for
        one-vs-one; as scikit-learn's ``SVC``, the most probable class need not be the one
        ``predict`` returns.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or (M, n_samples, n_train)
            Test points, or the test kernels for ``kernels="precomputed"``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of the classes in the order of ``classes_``; rows sum to one.

        Raises
        ------
        AttributeError
            A hinge-type loss without ``probability=True``: the method is then absent
            (``hasattr`` is False) and the message itself says what to do (``loss="logistic"``,
            ``probability=True``, or scikit-learn's ``CalibratedClassifierCV``).
        sklearn.exceptions.NotFittedError
            The estimator is not fitted, or was fitted without ``probability=True``
            (:class:`multikernel.exceptions.NotFittedError`, a subclass, in that case).

        Examples
        --------
        >>> import numpy as np
        >>> import multikernel as mk
        >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> clf = mk.MKLClassifier(kernels=[mk.kernels.Linear()], loss="logistic")
        >>> P = clf.fit(X, [0, 0, 1, 1]).predict_proba(np.array([[-3.0], [0.0], [3.0]]))
        >>> P.round(2)
        array([[0.87, 0.13],
               [0.5 , 0.5 ],
               [0.13, 0.87]])
        >>> hasattr(mk.MKLClassifier(loss="hinge"), "predict_proba")
        False
        >>> from sklearn.datasets import load_breast_cancer
        >>> Xb, yb = load_breast_cancer(return_X_y=True)
        >>> Xb = (Xb - Xb.mean(0)) / Xb.std(0)
        >>> svm = mk.MKLClassifier(probability=True).fit(Xb[:200], yb[:200])
        >>> Pb = svm.predict_proba(Xb[200:205])
        >>> Pb.shape, bool(np.allclose(Pb.sum(axis=1), 1.0))
        ((5, 2), True)
        """
        f = self.decision_function(X)
        if self.loss == "logistic":
            if f.ndim == 2 and self.multi_class == "ovo":
                # Each pair's logistic model is P(a | a or b) = σ(f_ab): coupled as Platt's.
                return couple(scipy.special.expit(f), self.pairs_, len(self.classes_))
            return logistic_proba(f)
        problems = 1 if f.ndim == 1 else f.shape[1]
        if getattr(self, "probA_", np.empty(0)).shape != (problems,):
            raise NotFittedError(
                "this classifier was fitted without probability=True: refit it with "
                "probability=True for predict_proba"
            )
        if f.ndim == 1:
            p1 = platt_proba(f, self.probA_[0], self.probB_[0])
            return np.column_stack([1.0 - p1, p1])
        P = np.column_stack(
            [platt_proba(f[:, k], self.probA_[k], self.probB_[k]) for k in range(problems)]
        )
        if self.multi_class == "ovr":
            out: NDArray[np.float64] = P / P.sum(axis=1, keepdims=True)
            return out
        return couple(P, self.pairs_, len(self.classes_))
