"""scikit-learn estimators: :class:`MKLClassifier` and :class:`MKLRegressor`."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._config import AnalyticConfig, InterleavedConfig, SolverConfig, SpicyConfig
from ._validation import check_n_threads, check_stack
from .kernels import Gaussian, KernelBank, KernelSpec, Linear, Polynomial, validate_stack

__all__ = ["MKLClassifier", "MKLRegressor"]

#: Penalties, and the solvers that handle each of them in this version.
_SOLVERS: dict[str, tuple[str, ...]] = {
    "lp": ("analytic", "interleaved"),
    "l1": ("spicy",),
    "elasticnet": ("spicy",),
}
#: Penalties of the public contract that later versions add, with their solvers.
_PLANNED: dict[str, str] = {"group": "mirror"}
_ALL_LOSSES = ("hinge", "squared_hinge", "logistic", "squared", "epsilon_insensitive")
_SOLVER_LOSSES: dict[str, tuple[str, ...]] = {
    "analytic": _ALL_LOSSES,
    "interleaved": ("hinge",),
    "spicy": _ALL_LOSSES,
}
_CONFIG_TYPES: dict[str, type] = {
    "analytic": AnalyticConfig,
    "interleaved": InterleavedConfig,
    "spicy": SpicyConfig,
}
_FITTED = (
    "dual_coef_",
    "intercept_",
    "kernel_weights_",
    "kernel_norms_",
    "primal_objective_",
    "dual_objective_",
    "duality_gap_",
    "n_iter_",
    "converged_",
    "history_",
    "classes_",
    "kernel_bank_",
    "n_features_in_",
    "n_kernels_",
    "n_train_",
)
_HISTORY_DTYPE = np.dtype(
    [
        ("primal", np.float64),
        ("dual", np.float64),
        ("gap", np.float64),
        ("active", np.int64),
        ("seconds", np.float64),
    ]
)


def default_kernels(n_features: int) -> list[KernelSpec]:
    """The bank used when ``kernels=None``: linear, quadratic and three Gaussian widths
    (0.5, 1 and 2 times sqrt(n_features), suited to standardised features), each normalised
    to unit trace by the estimators' default ``normalize="trace"``."""
    s = math.sqrt(n_features)
    return [
        Linear(),
        Polynomial(degree=2),
        Gaussian(sigma=0.5 * s),
        Gaussian(sigma=s),
        Gaussian(sigma=2.0 * s),
    ]


class _BaseMKL(BaseEstimator):  # type: ignore[misc]
    """Shared parameters, validation and kernel handling of the MKL estimators."""

    _losses: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        kernels: Sequence[KernelSpec] | Literal["precomputed"] | None = None,
        penalty: str = "lp",
        p: float = 2.0,
        l1_ratio: float = 0.5,
        groups: Sequence[int] | None = None,
        C: float = 1.0,
        loss: str | None = None,
        epsilon: float = 0.1,
        solver: str = "auto",
        tol: float = 1e-3,
        max_iter: int = 200,
        solver_config: SolverConfig | None = None,
        normalize: str | None = "mean_diag",
        n_threads: int = 0,
        random_state: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.penalty = penalty
        self.p = p
        self.l1_ratio = l1_ratio
        self.groups = groups
        self.C = C
        self.loss = loss
        self.epsilon = epsilon
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.solver_config = solver_config
        self.normalize = normalize
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    # --- validation ---------------------------------------------------------------------

    def _check_params(self) -> tuple[str, dict[str, Any]]:
        """Validate the hyper-parameters; return the solver and the engine's settings."""
        if self.penalty in _PLANNED:
            raise NotImplementedError(
                f"penalty={self.penalty!r} (solver {_PLANNED[self.penalty]!r}) is not available "
                f"in this version; available penalties: {', '.join(_SOLVERS)}"
            )
        if self.penalty not in _SOLVERS:
            valid = ", ".join([*_SOLVERS, *_PLANNED])
            raise ValueError(f"penalty must be one of {valid}; got {self.penalty!r}")
        loss = self._losses[0] if self.loss is None else self.loss
        if loss not in self._losses:
            raise ValueError(
                f"loss must be one of {', '.join(self._losses)} for {type(self).__name__}; "
                f"got {self.loss!r}"
            )
        solvers = _SOLVERS[self.penalty]
        solver = self.solver
        if solver == "auto":
            # lp: Algorithm 1 is the fastest valid choice for every loss here (its inner SMO
            # runs on one combined kernel, O(n) per step, while Algorithm 2 pays O(M·n) per
            # step); l1 and elasticnet have one solver.
            solver = solvers[0]
        elif solver not in solvers:
            raise ValueError(
                f"solver={self.solver!r} does not handle penalty={self.penalty!r}; valid: "
                f"auto, {', '.join(solvers)}"
            )
        if loss not in _SOLVER_LOSSES[solver]:
            raise ValueError(
                f"solver={solver!r} does not handle loss={loss!r}; it handles "
                f"{', '.join(_SOLVER_LOSSES[solver])} (solver='auto' handles every loss)"
            )
        p = _real("p", self.p)
        if not p >= 1.0:
            raise ValueError(f"p must be in [1, inf], got {self.p!r}")
        C = _real("C", self.C)
        if not (math.isfinite(C) and C > 0):
            raise ValueError(f"C must be a positive finite number, got {self.C!r}")
        tol = _real("tol", self.tol)
        if not (math.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a positive finite number, got {self.tol!r}")
        eps = _real("epsilon", self.epsilon)
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"epsilon must be a non-negative number, got {self.epsilon!r}")
        if (
            isinstance(self.max_iter, bool)
            or not isinstance(self.max_iter, numbers.Integral)
            or self.max_iter < 1
        ):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        cfg = self.solver_config
        if cfg is None:
            cfg = _CONFIG_TYPES[solver]()
        elif not isinstance(cfg, _CONFIG_TYPES[solver]):
            raise ValueError(
                f"solver_config for solver={solver!r} must be a "
                f"{_CONFIG_TYPES[solver].__name__}, got {type(cfg).__name__}"
            )
        common = {
            "C": C,
            "loss": loss,
            "epsilon": eps,
            "tol": tol,
            "max_iter": int(self.max_iter),
            "n_threads": check_n_threads(self.n_threads),
        }
        if solver == "spicy":
            r = _real("l1_ratio", self.l1_ratio)
            if self.penalty == "elasticnet" and not 0.0 <= r <= 1.0:
                raise ValueError(f"l1_ratio must be in [0, 1], got {self.l1_ratio!r}")
            settings = {
                **common,
                "penalty": self.penalty,
                "l1_ratio": r if self.penalty == "elasticnet" else 1.0,
                "max_inner": int(cfg.max_inner),
                "gamma0": float(cfg.gamma0),
                "gamma_factor": float(cfg.gamma_factor),
                "gamma_max": float(cfg.gamma_max),
                "working_set": 0 if cfg.working_set is None else int(cfg.working_set),
            }
        else:
            settings = {
                **common,
                "p": p,
                "algorithm": solver,
                "inner_tol": float(cfg.inner_tol),
            }
        return solver, settings

    def _training_stack(self, X: Any, y: Any) -> tuple[NDArray[Any], NDArray[Any]]:
        """Validate ``X``/``y`` and return the training stack and the targets."""
        if isinstance(self.kernels, str):
            if self.kernels != "precomputed":
                raise ValueError(
                    f"kernels must be a sequence of kernel specifications, 'precomputed' or "
                    f"None; got {self.kernels!r}"
                )
            G = validate_stack(X, n_threads=check_n_threads(self.n_threads))
            yv = np.asarray(y)
            if yv.ndim != 1 or yv.shape[0] != G.shape[1]:
                raise ValueError(
                    f"y must be 1-D with one entry per training point ({G.shape[1]}), "
                    f"got shape {yv.shape}"
                )
            self.kernel_bank_ = None
            self.n_kernels_ = G.shape[0]
            return G, yv
        Xv, yv = validate_data(self, X, y, dtype=np.float64, y_numeric=self._y_numeric)
        specs = default_kernels(Xv.shape[1]) if self.kernels is None else self.kernels
        bank = KernelBank(
            specs,
            normalize=self.normalize,  # type: ignore[arg-type]  # validated by KernelBank
            n_threads=self.n_threads,
        )
        G = bank.fit_transform(Xv)
        self.kernel_bank_ = bank
        self.n_kernels_ = G.shape[0]
        return G, yv

    def _test_stack(self, X: Any) -> NDArray[Any]:
        check_is_fitted(self, "dual_coef_")
        if self.kernel_bank_ is None:
            G = check_stack(X, "G_test", square=False)
            if G.shape[0] != self.n_kernels_ or G.shape[2] != self.n_train_:
                raise ValueError(
                    f"G_test must have shape (M={self.n_kernels_}, n_samples, "
                    f"n_train={self.n_train_}), got {G.shape}"
                )
            if not np.isfinite(G).all():
                raise ValueError("G_test contains NaN or infinity")
            return G
        Xv = validate_data(self, X, dtype=np.float64, reset=False)
        return self.kernel_bank_.transform(Xv)

    _y_numeric = False

    # --- fitting ------------------------------------------------------------------------

    def _clear(self) -> None:
        for name in _FITTED:
            self.__dict__.pop(name, None)

    def _solve(
        self, G: NDArray[Any], y: NDArray[np.float64], settings: dict[str, Any]
    ) -> dict[str, Any]:
        yc = np.ascontiguousarray(y, dtype=np.float64)
        if "penalty" in settings:
            return _core.fit_spicy(G, yc, **settings)
        return _core.fit_lp(G, yc, **settings)

    def _set_results(self, results: list[dict[str, Any]], multi: bool) -> None:
        def stack(key: str) -> Any:
            vals = [r[key] for r in results]
            return np.asarray(vals) if multi else vals[0]

        self.dual_coef_ = stack("coef")
        self.intercept_ = stack("intercept")
        self.kernel_weights_ = stack("kernel_weights")
        self.kernel_norms_ = stack("kernel_norms")
        self.primal_objective_ = stack("primal")
        self.dual_objective_ = stack("dual")
        self.duality_gap_ = stack("gap")
        self.n_iter_ = stack("n_iter")
        self.converged_ = stack("converged")
        hist = [
            np.array([tuple(row) for row in r["history"]], dtype=_HISTORY_DTYPE) for r in results
        ]
        self.history_ = hist if multi else hist[0]
        tol = float(self.tol)
        for k, r in enumerate(results):
            if not r["converged"]:
                which = f" (problem {k})" if multi else ""
                warnings.warn(
                    f"{type(self).__name__} did not reach tol{which}: relative duality gap "
                    f"{r['gap']:.3e} > tol {tol:.3e} after {r['n_iter']} iterations "
                    f"({r['status']}); increase max_iter or tol",
                    ConvergenceWarning,
                    stacklevel=3,
                )

    def _decision(self, G_test: NDArray[Any]) -> NDArray[np.float64]:
        A = np.asarray(self.dual_coef_)
        b = np.asarray(self.intercept_)
        if A.ndim == 2:
            f: NDArray[np.float64] = np.einsum("mij,mj->i", G_test, A, dtype=np.float64)
            return f + float(b)
        out: NDArray[np.float64] = np.einsum("mij,kmj->ik", G_test, A, dtype=np.float64) + b
        return out

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if isinstance(self.kernels, str) and self.kernels == "precomputed":
            tags.input_tags.pairwise = True
        return tags


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


class MKLClassifier(ClassifierMixin, _BaseMKL):  # type: ignore[misc]
    """Multiple kernel learning classifier.

    Learns ``f(x) = Σ_m f_m(x) + b`` with one function per kernel by minimising
    ``C Σ_i ℓ(y_i, f(x_i)) + Ω(‖f_1‖, …, ‖f_M‖)``, and certifies the solution with a duality
    gap (see ALGORITHMS.md of the project).

    Parameters
    ----------
    kernels : sequence of KernelSpec, "precomputed" or None, default None
        Kernel specifications, evaluated on ``X`` (cross kernels at predict time); or
        ``"precomputed"``: ``fit(G, y)`` with ``G`` of shape (M, n, n) and
        ``predict(G_test)`` with ``G_test`` of shape (M, n_test, n). None uses
        :func:`default_kernels`. A precomputed ``G`` may be float32: the solvers then read
        half the bytes (ℓp fits about 1.5x faster on the benchmark of Kloft et al.), and the
        certificate is exact for the float32 kernels. ``fit`` first checks that ``G`` is
        finite and symmetric, which reads all of it once.
    penalty : {"lp", "l1", "elasticnet"}, default "lp"
        ``"lp"``: ``Ω = ½ (Σ_m ‖f_m‖^q)^{2/q}``, ``q = 2p/(p+1)``, i.e. Kloft et al.'s
        ℓp-norm MKL with ``‖θ‖_p ≤ 1``. ``"l1"``: ``Ω = Σ_m ‖f_m‖`` (sparse MKL, SpicyMKL);
        ``"elasticnet"``: ``Ω = r Σ_m ‖f_m‖ + (1 − r)/2 Σ_m ‖f_m‖²`` with ``r = l1_ratio``.
        (``"group"`` arrives with its solver in a later version and raises
        ``NotImplementedError`` here.)
    p : float, default 2.0
        Norm of the kernel weights, in [1, inf]; ``p=inf`` is an SVM on the unweighted sum of
        the kernels.
    l1_ratio : float, default 0.5
        Elastic-net mixing (``penalty="elasticnet"``).
    groups : sequence of int, optional
        Group id per kernel (``penalty="group"``).
    C : float, default 1.0
        Weight of the loss (as in scikit-learn's SVC).
    loss : {"hinge", "squared_hinge", "logistic"}, optional
        Classification loss; None means ``"hinge"``.
    epsilon : float, default 0.1
        Unused by classification losses (kept for a uniform parameter set).
    solver : {"auto", "analytic", "interleaved", "spicy"}, default "auto"
        For ``"lp"``: ``"analytic"``, Kloft's Algorithm 1 (single-kernel solves — SMO for the
        hinge losses, Newton for logistic — between closed-form updates of θ), or
        ``"interleaved"``, Algorithm 2 (θ updated inside SMO; hinge only); ``"auto"`` picks
        ``"analytic"``, the fastest valid solver for every loss in our benchmarks. For ``"l1"``
        and ``"elasticnet"``: ``"spicy"`` (SpicyMKL's dual augmented Lagrangian), also
        ``"auto"``.
    tol : float, default 1e-3
        Stop when the relative duality gap is at most ``tol``.
    max_iter : int, default 200
        Maximal number of outer iterations.
    solver_config : AnalyticConfig, InterleavedConfig or SpicyConfig, optional
        Solver-specific settings (defaults when None).
    normalize : str or None, default "trace"
        Normalisation of kernels computed from specifications (see
        :func:`multikernel.kernels.gram`); ignored for precomputed kernels.
    n_threads : int, default 0
        Threads, 0 = all cores.
    random_state : int, optional
        Unused by the deterministic solvers of this version.
    verbose : int, default 0
        Unused in this version.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (M, n_train), or (n_problems, M, n_train) for multiclass
        Per-kernel coefficients ``A``: ``f_m(x) = Σ_i A[m, i] k_m(x, x_i)``.
    intercept_ : float, or ndarray of shape (n_problems,)
    kernel_weights_ : ndarray of shape (M,) or (n_problems, M)
        The kernel combination: θ with unit p-norm for ``"lp"``; ``‖f_m‖ / Σ_k ‖f_k‖`` on the
        simplex for ``"l1"`` and ``"elasticnet"`` (zero exactly for unused kernels).
    kernel_norms_ : ndarray of shape (M,) or (n_problems, M)
        ``‖f_m‖`` in each RKHS.
    primal_objective_, dual_objective_, duality_gap_ : float or ndarray
        The certificate: primal value, dual value of a feasible dual point, and
        ``(P − D)/|P|``.
    n_iter_ : int or ndarray
    converged_ : bool or ndarray
    history_ : structured ndarray (or list of them for multiclass)
        Per outer iteration: primal, dual, gap, active kernels, seconds.
    multi_class : {"ovr", "ovo"}
        How more than two classes are handled (one-vs-rest or one-vs-one).

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

    def __init__(
        self,
        *,
        kernels: Sequence[KernelSpec] | Literal["precomputed"] | None = None,
        penalty: str = "lp",
        p: float = 2.0,
        l1_ratio: float = 0.5,
        groups: Sequence[int] | None = None,
        C: float = 1.0,
        loss: str | None = None,
        epsilon: float = 0.1,
        solver: str = "auto",
        tol: float = 1e-3,
        max_iter: int = 200,
        solver_config: SolverConfig | None = None,
        normalize: str | None = "mean_diag",
        multi_class: str = "ovr",
        n_threads: int = 0,
        random_state: int | None = None,
        verbose: int = 0,
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
            n_threads=n_threads,
            random_state=random_state,
            verbose=verbose,
        )
        self.multi_class = multi_class

    def fit(self, X: Any, y: Any) -> MKLClassifier:
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n, n) if precomputed
        y : array-like of shape (n_samples,)
            Class labels (any hashable type: strings are fine).

        Returns
        -------
        self
        """
        self._clear()
        _, settings = self._check_params()
        if self.multi_class not in ("ovr", "ovo"):
            raise ValueError(f"multi_class must be 'ovr' or 'ovo', got {self.multi_class!r}")
        G, yv = self._training_stack(X, y)
        check_classification_targets(yv)
        classes, yi = np.unique(yv, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(
                f"the training data must contain at least two classes, got {len(classes)} class"
            )
        results: list[dict[str, Any]] = []
        problems: list[tuple[int, int]] = []
        if len(classes) == 2:
            results.append(self._solve(G, np.where(yi == 1, 1.0, -1.0), settings))
        elif self.multi_class == "ovr":
            for k in range(len(classes)):
                results.append(self._solve(G, np.where(yi == k, 1.0, -1.0), settings))
        else:
            # One-vs-one: each pair on its own points; coefficients scattered back to all n.
            n = G.shape[1]
            for a in range(len(classes)):
                for b in range(a + 1, len(classes)):
                    idx = np.flatnonzero((yi == a) | (yi == b))
                    sub = np.ascontiguousarray(G[:, idx][:, :, idx])
                    r = self._solve(sub, np.where(yi[idx] == a, 1.0, -1.0), settings)
                    full = np.zeros((G.shape[0], n))
                    full[:, idx] = r["coef"]
                    r["coef"] = full
                    results.append(r)
                    problems.append((a, b))
        self._set_results(results, multi=len(classes) > 2)
        self.classes_ = classes
        self.pairs_ = np.asarray(problems, dtype=np.int64).reshape(-1, 2)
        self.n_train_ = G.shape[1]
        return self

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """Decision values: shape (n_samples,) for two classes (positive means
        ``classes_[1]``), (n_samples, n_classes) for one-vs-rest and
        (n_samples, n_pairs) for one-vs-one."""
        return self._decision(self._test_stack(X))

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted class labels."""
        f = self.decision_function(X)
        if f.ndim == 1:
            out: NDArray[Any] = self.classes_[(f > 0).astype(np.int64)]
            return out
        if self.multi_class == "ovo" and len(self.classes_) > 2:
            votes = np.zeros((f.shape[0], len(self.classes_)))
            for k, (a, b) in enumerate(self.pairs_):
                votes[:, a] += f[:, k] > 0
                votes[:, b] += f[:, k] <= 0
            # Ties broken by the summed confidences, as scikit-learn's SVC does.
            conf = np.zeros_like(votes)
            for k, (a, b) in enumerate(self.pairs_):
                conf[:, a] += f[:, k]
                conf[:, b] -= f[:, k]
            votes += conf / (3 * (np.abs(conf).max() + 1))
            res: NDArray[Any] = self.classes_[np.argmax(votes, axis=1)]
            return res
        res2: NDArray[Any] = self.classes_[np.argmax(f, axis=1)]
        return res2

    def _check_proba(self) -> bool:
        if self.loss != "logistic":
            raise AttributeError("predict_proba is available for loss='logistic' only")
        return True

    @available_if(_check_proba)  # type: ignore[untyped-decorator]
    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities (``loss="logistic"`` only): the logistic model's
        ``σ(f)`` for two classes; normalised one-vs-rest probabilities otherwise."""
        f = self.decision_function(X)
        if f.ndim == 1:
            p1 = 1.0 / (1.0 + np.exp(-f))
            return np.column_stack([1.0 - p1, p1])
        if self.multi_class == "ovo":
            raise AttributeError("predict_proba needs multi_class='ovr'")
        pr = 1.0 / (1.0 + np.exp(-f))
        out: NDArray[np.float64] = pr / pr.sum(axis=1, keepdims=True)
        return out


class MKLRegressor(RegressorMixin, _BaseMKL):  # type: ignore[misc]
    """Multiple kernel learning regressor.

    Same model, penalties and certificate as :class:`MKLClassifier`, with the losses
    ``"squared"`` (``½ (y − f)²``: kernel ridge inside, solved by Cholesky) and
    ``"epsilon_insensitive"`` (``max(0, |y − f| − ε)``: ε-SVR by SMO inside).

    Parameters
    ----------
    kernels, penalty, p, l1_ratio, groups, C, solver, tol, max_iter, solver_config,
    normalize, n_threads, random_state, verbose
        As for :class:`MKLClassifier`.
    loss : {"squared", "epsilon_insensitive"}, optional
        None means ``"squared"``.
    epsilon : float, default 0.1
        Width of the insensitive tube of ``"epsilon_insensitive"``.

    Attributes
    ----------
    dual_coef_, intercept_, kernel_weights_, kernel_norms_, primal_objective_,
    dual_objective_, duality_gap_, n_iter_, converged_, history_
        As for a binary :class:`MKLClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=80)
    >>> reg = mk.MKLRegressor(C=10.0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    _losses = ("squared", "epsilon_insensitive")
    _y_numeric = True

    def fit(self, X: Any, y: Any) -> MKLRegressor:
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (M, n, n) if precomputed
        y : array-like of shape (n_samples,)
            Real targets.

        Returns
        -------
        self
        """
        self._clear()
        _, settings = self._check_params()
        G, yv = self._training_stack(X, y)
        yf = np.asarray(yv, dtype=np.float64)
        if not np.isfinite(yf).all():
            raise ValueError("y contains NaN or infinity")
        self._set_results([self._solve(G, yf, settings)], multi=False)
        self.n_train_ = G.shape[1]
        return self

    def predict(self, X: Any) -> NDArray[np.float64]:
        """Predicted targets."""
        return self._decision(self._test_stack(X))
