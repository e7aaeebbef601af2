"""Kernel specifications, Gram stacks and their normalisation.

A kernel specification is a frozen dataclass naming a kernel function and, optionally, the
feature columns it reads. :func:`gram` computes the stack of training Gram matrices
``(M, n, n)``; :class:`KernelBank` keeps the training statistics so that
:meth:`KernelBank.transform` gives cross kernels ``(M, n_new, n)`` normalised the same way.
All heavy work runs in Rust, in parallel, with the GIL released.

Examples
--------
>>> import numpy as np
>>> import multikernel as mk
>>> X = np.random.default_rng(0).normal(size=(20, 3))
>>> specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Polynomial(degree=2, features=[0])]
>>> G = mk.kernels.gram(X, specs, normalize="trace")
>>> G.shape, round(float(np.trace(G[0])), 12)
((2, 20, 20), 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import DTypeLike, NDArray

from . import _core
from ._validation import check_features, check_n_threads, check_stack

__all__ = [
    "Gaussian",
    "KernelBank",
    "KernelSpec",
    "Laplacian",
    "Linear",
    "LowRankFactors",
    "Normalization",
    "Polynomial",
    "SIMPLEMKL_WIDTHS",
    "StackTooLargeError",
    "alignment",
    "gram",
    "low_rank",
    "quad_forms",
    "simplemkl_bank",
    "validate_stack",
]

StackTooLargeError = _core.StackTooLargeError

Normalization: TypeAlias = Literal["none", "trace", "mean_diag", "multiplicative", "spherical"]
_NORMALIZATIONS = ("none", "trace", "mean_diag", "multiplicative", "spherical")

#: The 24 Gaussian widths of the SimpleMKL and SpicyMKL experiments.
SIMPLEMKL_WIDTHS: tuple[float, ...] = (
    0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0,
)  # fmt: skip

_SpecTuple: TypeAlias = tuple[str, float, float, float, "list[int] | None"]


def _features(value: Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        feats = tuple(int(j) for j in np.asarray(value).ravel())
    except (TypeError, ValueError):
        raise ValueError(f"features must be a sequence of column indices, got {value!r}") from None
    if len(feats) == 0:
        raise ValueError("features must not be empty (use None for all columns)")
    if min(feats) < 0:
        raise ValueError(f"features must be non-negative column indices, got {list(feats)}")
    return feats


def _positive(name: str, value: float) -> float:
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


@dataclass(frozen=True)
class Linear:
    """Linear kernel ``k(x, x') = <x, x'>``.

    Parameters
    ----------
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.
    """

    features: Sequence[int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("linear", 0.0, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class Polynomial:
    """Polynomial kernel ``k(x, x') = (scale * <x, x'> + coef0) ** degree``.

    Parameters
    ----------
    degree : int
        Positive integer degree.
    coef0 : float, default 1.0
        Additive constant.
    scale : float, default 1.0
        Factor of the inner product (scikit-learn's ``gamma``).
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.
    """

    degree: int = 2
    coef0: float = 1.0
    scale: float = 1.0
    features: Sequence[int] | None = None

    def __post_init__(self) -> None:
        d = self.degree
        if isinstance(d, bool) or not float(d).is_integer() or d < 1:
            raise ValueError(f"degree must be a positive integer, got {d!r}")
        if not (math.isfinite(self.coef0) and math.isfinite(self.scale)):
            raise ValueError("coef0 and scale must be finite")
        object.__setattr__(self, "degree", int(d))
        object.__setattr__(self, "coef0", float(self.coef0))
        object.__setattr__(self, "scale", float(self.scale))
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("polynomial", float(self.degree), self.coef0, self.scale, _flist(self.features))


@dataclass(frozen=True)
class Gaussian:
    """Gaussian (RBF) kernel ``k(x, x') = exp(-||x - x'||² / (2 sigma²))``.

    Parameters
    ----------
    sigma : float
        Positive width. Use :meth:`from_gamma` for scikit-learn's parameterisation
        ``exp(-gamma ||x - x'||²)``.
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.
    """

    sigma: float = 1.0
    features: Sequence[int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _positive("sigma", self.sigma))
        object.__setattr__(self, "features", _features(self.features))

    @classmethod
    def from_gamma(cls, gamma: float, features: Sequence[int] | None = None) -> Gaussian:
        """The kernel ``exp(-gamma ||x - x'||²)``, i.e. ``sigma = 1 / sqrt(2 gamma)``."""
        g = _positive("gamma", gamma)
        return cls(sigma=1.0 / math.sqrt(2.0 * g), features=_features(features))

    @property
    def gamma(self) -> float:
        """scikit-learn's ``gamma = 1 / (2 sigma²)``."""
        return 1.0 / (2.0 * self.sigma**2)

    def _to_tuple(self) -> _SpecTuple:
        return ("gaussian", self.sigma, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class Laplacian:
    """Laplacian kernel ``k(x, x') = exp(-||x - x'||₁ / sigma)``.

    Parameters
    ----------
    sigma : float
        Positive width (scikit-learn's ``laplacian_kernel`` uses ``gamma = 1 / sigma``).
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.
    """

    sigma: float = 1.0
    features: Sequence[int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _positive("sigma", self.sigma))
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("laplacian", self.sigma, 0.0, 0.0, _flist(self.features))


KernelSpec: TypeAlias = Linear | Polynomial | Gaussian | Laplacian
_SPEC_TYPES = (Linear, Polynomial, Gaussian, Laplacian)


def _flist(features: Sequence[int] | None) -> list[int] | None:
    return None if features is None else list(features)


def _from_tuple(t: _SpecTuple) -> KernelSpec:
    kind, a, b, c, feats = t
    if kind == "linear":
        return Linear(features=feats)
    if kind == "polynomial":
        return Polynomial(degree=int(a), coef0=b, scale=c, features=feats)
    if kind == "gaussian":
        return Gaussian(sigma=a, features=feats)
    return Laplacian(sigma=a, features=feats)


def _spec_tuples(specs: Sequence[KernelSpec]) -> list[_SpecTuple]:
    if isinstance(specs, _SPEC_TYPES):
        specs = [specs]
    try:
        specs = list(specs)
    except TypeError:
        raise ValueError(
            f"kernels must be a sequence of kernel specifications, got {specs!r}"
        ) from None
    if not specs:
        raise ValueError("at least one kernel specification is needed")
    for i, s in enumerate(specs):
        if not isinstance(s, _SPEC_TYPES):
            raise ValueError(
                f"kernel {i} is {s!r}, not a kernel specification "
                "(Linear, Polynomial, Gaussian, Laplacian)"
            )
    return [s._to_tuple() for s in specs]


def _check_normalize(normalize: str | None) -> str:
    name = "none" if normalize is None else normalize
    if name not in _NORMALIZATIONS:
        raise ValueError(
            f"normalize must be one of {', '.join(_NORMALIZATIONS)} or None, got {normalize!r}"
        )
    return name


def _is_float32(dtype: DTypeLike) -> bool:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    return dt == np.dtype(np.float32)


def simplemkl_bank(
    n_features: int,
    widths: Sequence[float] = SIMPLEMKL_WIDTHS,
    degrees: Sequence[int] = (1, 2, 3),
) -> list[KernelSpec]:
    """The kernel bank of SimpleMKL and SpicyMKL.

    Every Gaussian width and every polynomial degree (``(<x, x'> + 1) ** d``), first on all
    variables, then on each single variable: ``(len(widths) + len(degrees)) * (n_features + 1)``
    specifications (27 · (d + 1) with the defaults).

    Parameters
    ----------
    n_features : int
        Number of columns of ``X``.
    widths : sequence of float
        Gaussian widths sigma.
    degrees : sequence of int
        Polynomial degrees.

    Returns
    -------
    list of KernelSpec
    """
    if isinstance(n_features, bool) or int(n_features) != n_features or n_features < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    ws = [_positive("width", w) for w in widths]
    ds = [Polynomial(degree=d).degree for d in degrees]
    if not ws and not ds:
        raise ValueError("the bank needs at least one width or degree")
    return [_from_tuple(t) for t in _core.simplemkl_specs(int(n_features), ws, ds)]


def gram(
    X: Any,
    specs: Sequence[KernelSpec],
    *,
    normalize: Normalization | None = None,
    center: bool = False,
    dtype: DTypeLike = np.float64,
    n_threads: int = 0,
) -> NDArray[Any]:
    """The stack of training Gram matrices of ``specs`` on ``X``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training points.
    specs : sequence of KernelSpec
        Kernel specifications.
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"}, optional
        Scaling of each Gram matrix: unit trace, unit mean diagonal, Kloft et al.'s
        multiplicative normalisation (eq. 25, unit variance in feature space) or spherical
        normalisation (eq. 26, unit diagonal). A kernel that is zero (after centring) stays zero.
    center : bool, default False
        Centre each kernel in feature space before scaling.
    dtype : float64 or float32
        Element type of the stack (float32 halves its memory).
    n_threads : int, default 0
        Threads for the computation, 0 = all cores.

    Returns
    -------
    ndarray of shape (M, n_samples, n_samples)

    Raises
    ------
    ValueError
        Non-finite ``X``, invalid specifications, or feature indices out of range.
    StackTooLargeError
        The stack would not fit in the available memory (a ``ValueError``).
    """
    return KernelBank(
        specs, normalize=normalize, center=center, dtype=dtype, n_threads=n_threads
    ).fit_transform(X)


class KernelBank:
    """Kernel specifications with the normalisation statistics of a training set.

    Parameters
    ----------
    specs : sequence of KernelSpec
        Kernel specifications.
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"}, optional
        See :func:`gram`.
    center : bool, default False
        Centre each kernel in feature space (with the training means) before scaling.
    dtype : float64 or float32
        Element type of the stacks produced.
    n_threads : int, default 0
        Threads, 0 = all cores.

    Attributes
    ----------
    X_train_ : ndarray of shape (n_samples, n_features)
        The training points (cross kernels are computed against them).
    stats_ : dict
        Normalisation statistics of the training kernels (numpy arrays).
    degenerate_ : list of int
        Kernels that were zero after centring and so were left unscaled (zero).

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Gaussian, KernelBank
    >>> X = np.arange(12.0).reshape(6, 2)
    >>> bank = KernelBank([Gaussian(sigma=2.0)], normalize="spherical")
    >>> G = bank.fit_transform(X)
    >>> bool(np.allclose(bank.transform(X[:2]), G[:, :2, :]))
    True
    """

    def __init__(
        self,
        specs: Sequence[KernelSpec],
        *,
        normalize: Normalization | None = None,
        center: bool = False,
        dtype: DTypeLike = np.float64,
        n_threads: int = 0,
    ) -> None:
        self._tuples = _spec_tuples(specs)
        self.specs: list[KernelSpec] = [_from_tuple(t) for t in self._tuples]
        self.normalize: str = _check_normalize(normalize)
        self.center = bool(center)
        self.dtype = np.dtype(np.float32 if _is_float32(dtype) else np.float64)
        self.n_threads = check_n_threads(n_threads)

    def __len__(self) -> int:
        return len(self.specs)

    def fit(self, X: Any) -> KernelBank:
        """Compute and keep the training statistics of ``X``; returns ``self``."""
        self.fit_transform(X)
        return self

    def fit_transform(self, X: Any) -> NDArray[Any]:
        """Compute the training Gram stack ``(M, n, n)`` of ``X`` and keep its statistics."""
        Xc = check_features(X)
        G, stats = _core.gram_fit(
            Xc,
            self._tuples,
            self.normalize,
            self.center,
            self.dtype == np.float32,
            self.n_threads,
        )
        self.X_train_ = Xc.copy()
        self.stats_: dict[str, Any] = stats
        self.degenerate_: list[int] = list(stats["degenerate"])
        return G

    def transform(self, X: Any) -> NDArray[Any]:
        """Cross kernels ``(M, n_new, n_train)`` between ``X`` and the training points, with
        the training normalisation."""
        if not hasattr(self, "stats_"):
            raise ValueError("this KernelBank is not fitted yet: call fit(X_train) first")
        Xc = check_features(X)
        if Xc.shape[1] != self.X_train_.shape[1]:
            raise ValueError(
                f"X has {Xc.shape[1]} features but the bank was fitted on {self.X_train_.shape[1]}"
            )
        return _core.gram_cross(
            Xc, self.X_train_, self._tuples, self.stats_, self.dtype == np.float32, self.n_threads
        )

    def nbytes(self, n_samples: int, n_train: int | None = None) -> int:
        """Bytes of a stack of these kernels on ``n_samples`` (× ``n_train``) points."""
        cols = n_samples if n_train is None else n_train
        return len(self.specs) * n_samples * cols * self.dtype.itemsize


def validate_stack(G: Any, *, rtol: float = 1e-8, n_threads: int = 0) -> NDArray[Any]:
    """Check a precomputed stack ``(M, n, n)``: finite and symmetric within
    ``rtol · max|K_m|``. Returns it as a C-contiguous float64 (or float32) array.

    Raises
    ------
    ValueError
        Wrong shape, non-finite entries, or an asymmetric kernel (naming its index).
    """
    arr = check_stack(G)
    _core.validate_stack(arr, float(rtol), check_n_threads(n_threads))
    return arr


def quad_forms(G: Any, v: Any, *, n_threads: int = 0) -> NDArray[np.float64]:
    """``vᵀ K_m v`` for every kernel of a stack, in parallel (the hot loop of every solver).

    Parameters
    ----------
    G : ndarray of shape (M, n, n), float64 or float32
        Kernel stack (symmetric; only the upper triangle is read).
    v : array-like of shape (n,)
        Vector.
    n_threads : int, default 0
        Threads, 0 = all cores.

    Returns
    -------
    ndarray of shape (M,)
    """
    arr = check_stack(G)
    vec = np.ascontiguousarray(np.asarray(v, dtype=np.float64))
    if vec.ndim != 1:
        raise ValueError(f"v must be 1-D, got shape {vec.shape}")
    return _core.quad_forms(arr, vec, check_n_threads(n_threads))


@dataclass(frozen=True)
class LowRankFactors:
    """Pivoted incomplete Cholesky factors ``K_m ≈ factors[m] @ factors[m].T``.

    Attributes
    ----------
    factors : list of ndarray of shape (n, rank_m)
    ranks : ndarray of shape (M,)
    errors : ndarray of shape (M,)
        ``trace(K_m - G_m G_mᵀ) / trace(K_m)``, which also bounds
        ``||K_m - G_m G_mᵀ||_F / trace(K_m)``.
    """

    factors: list[NDArray[np.float64]] = field(repr=False)
    ranks: NDArray[np.int64]
    errors: NDArray[np.float64]


def low_rank(
    G: Any, *, tol: float = 1e-6, max_rank: int | None = None, n_threads: int = 0
) -> LowRankFactors:
    """Pivoted incomplete Cholesky factorisation of every kernel of a stack.

    Stops for each kernel when the trace of the residual is at most ``tol · trace(K_m)``
    (or at ``max_rank`` columns).

    Parameters
    ----------
    G : ndarray of shape (M, n, n)
        Symmetric PSD kernels.
    tol : float, default 1e-6
        Relative trace error, in [0, 1).
    max_rank : int, optional
        Cap on the rank (default n).
    n_threads : int, default 0
        Threads, 0 = all cores.

    Returns
    -------
    LowRankFactors
    """
    arr = np.ascontiguousarray(check_stack(G), dtype=np.float64)
    tol_f = float(tol)
    if not (0.0 <= tol_f < 1.0):
        raise ValueError(f"tol must be in [0, 1), got {tol!r}")
    rank = arr.shape[1] if max_rank is None else int(max_rank)
    if rank < 1:
        raise ValueError(f"max_rank must be at least 1, got {max_rank!r}")
    factors, ranks, errors = _core.low_rank(arr, tol_f, rank, check_n_threads(n_threads))
    return LowRankFactors(factors=factors, ranks=np.asarray(ranks, dtype=np.int64), errors=errors)


def _centered(K: NDArray[Any]) -> NDArray[np.float64]:
    Kd = np.asarray(K, dtype=np.float64)
    r = Kd.mean(axis=1)
    out: NDArray[np.float64] = Kd - r[:, None] - r[None, :] + r.mean()
    return out


def alignment(G: Any, y: Any = None) -> NDArray[np.float64]:
    """Centred kernel alignment (Cortes et al.; Kloft et al. §5.3).

    ``A(K, L) = <K_c, L_c>_F / (||K_c||_F ||L_c||_F)`` with ``K_c = H K H`` the centred kernel.

    Parameters
    ----------
    G : ndarray of shape (M, n, n)
        Kernel stack.
    y : array-like of shape (n,), optional
        Targets. When given, the kernel–target alignments ``A(K_m, y yᵀ)`` are returned.

    Returns
    -------
    ndarray of shape (M, M) when ``y`` is None, else of shape (M,)
        Alignments in [-1, 1]; a kernel that is zero after centring has alignment 0.
    """
    arr = check_stack(G)
    M, n, _ = arr.shape
    norms = np.empty(M)
    if y is not None:
        yv = np.asarray(y, dtype=np.float64).ravel()
        if yv.shape[0] != n:
            raise ValueError(f"y has {yv.shape[0]} entries but the kernels are {n}×{n}")
        yc = yv - yv.mean()
        ynorm = float(yc @ yc)  # ||(y yᵀ)_c||_F = ||H y||²
        # <K_c, y yᵀ> = (H y)ᵀ K (H y): one quadratic form per kernel.
        num = quad_forms(arr, yc)
        for m in range(M):
            norms[m] = np.linalg.norm(_centered(arr[m]))
        den = norms * ynorm
        out: NDArray[np.float64] = np.divide(num, den, out=np.zeros(M), where=den > 0)
        return out
    flat = np.empty((M, n * n))
    for m in range(M):
        flat[m] = _centered(arr[m]).ravel()
    inner = flat @ flat.T
    d = np.sqrt(np.clip(np.diag(inner), 0.0, None))
    den = np.outer(d, d)
    res: NDArray[np.float64] = np.divide(inner, den, out=np.zeros((M, M)), where=den > 0)
    return res
