"""Kernel specifications: frozen dataclasses naming a kernel function and the feature
columns it reads (:class:`Kernel` and its subclasses), and their conversion to the engine's
entries. They compute nothing themselves: the banks (``_banks``, ``_feature_maps``) evaluate
them."""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
import numbers
from collections.abc import Callable as _Function
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from .._validation import check_real
from ..exceptions import InvalidParameterError

__all__ = [
    "Callable",
    "Gaussian",
    "Kernel",
    "KernelSpec",
    "Laplacian",
    "Linear",
    "Polynomial",
]

#: A specification as the engine takes it: ``(kind, a, b, c, features)``.
_SpecTuple: TypeAlias = tuple[str, float, float, float, "list[int] | None"]
#: A kernel function of two feature matrices: ``(A, B) -> (len(A), len(B))``.
_KernelFunction: TypeAlias = _Function[[NDArray[np.float64], NDArray[np.float64]], Any]
#: A kernel as the engine's Gram functions take it: a specification tuple, or a function with
#: the columns it reads.
_Entry: TypeAlias = "_SpecTuple | tuple[_KernelFunction, list[int] | None]"


#: The columns a kernel reads: integer indices, or names of a DataFrame's columns (resolved
#: against the columns of ``X`` at fit, :func:`_resolve_columns`).
Features: TypeAlias = Sequence[int | str]


def _features(value: Features | None) -> tuple[int | str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise InvalidParameterError(
            f"features must be a sequence of column indices or names, got {value!r} (a "
            f"single column is [{value!r}])",
            parameter="features",
        )
    try:
        items = np.asarray(value, dtype=object).ravel().tolist()
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"features must be a sequence of column indices or names, got {value!r}",
            parameter="features",
        ) from None
    bad = [
        j
        for j in items
        if isinstance(j, (bool, np.bool_)) or not isinstance(j, (numbers.Integral, str))
    ]
    if bad:
        raise InvalidParameterError(
            f"features must be integer column indices or column names (str), not floats or "
            f"bools; got {bad[0]!r} in {value!r}",
            parameter="features",
        )
    feats = tuple(j if isinstance(j, str) else int(j) for j in items)
    if len(feats) == 0:
        raise InvalidParameterError(
            "features must not be empty (use None for all columns)", parameter="features"
        )
    if any(isinstance(j, int) and j < 0 for j in feats):
        raise InvalidParameterError(
            f"features must be non-negative column indices, got {list(feats)}",
            parameter="features",
        )
    return feats


def _positive(name: str, value: float) -> float:
    return check_real(value, name, "positive and finite", lambda v: 0.0 < v < math.inf)


@dataclass(frozen=True)
class Kernel(abc.ABC):
    """Base class of the kernel specifications.

    A specification is a frozen (immutable, hashable) dataclass that names a kernel function
    and, optionally, the feature columns it reads; it computes nothing itself (:func:`gram`
    and :class:`KernelBank` evaluate specifications in Rust). The concrete kernels are
    :class:`Linear`, :class:`Polynomial`, :class:`Gaussian`, :class:`Laplacian`, the
    histogram kernels :class:`Chi2`, :class:`Intersection`, :class:`Hellinger` and
    :class:`Tanimoto` and the sequence kernels :class:`Spectrum` and :class:`WeightedDegree`,
    which the engine evaluates, and :class:`Callable`, a Python function
    the engine calls on blocks of rows; this class gives a list of mixed specifications a
    common type, so that ``[Gaussian(sigma=2.0), Linear()]`` is a ``list[Kernel]`` for a type
    checker, as scikit-learn's Gaussian-process kernels share ``Kernel``. It is abstract.

    See Also
    --------
    KernelSpec : Alias of this class, kept for compatibility.

    Examples
    --------
    >>> from multikernel.kernels import Gaussian, Kernel, Linear
    >>> specs = [Gaussian(sigma=2.0, features=[0, 1]), Linear()]
    >>> all(isinstance(s, Kernel) for s in specs)
    True
    >>> Gaussian(2.0) == Gaussian(sigma=2.0)
    True
    """

    @abc.abstractmethod
    def _to_tuple(self) -> _SpecTuple:
        """The specification as the engine's tuple ``(kind, a, b, c, features)``."""
        raise NotImplementedError

    def _entry(self) -> _Entry:
        """The kernel as the engine's Gram functions take it."""
        return self._to_tuple()

    def _with_features(self, features: tuple[int, ...]) -> Kernel:
        """This kernel reading the columns ``features`` (its names resolved)."""
        # Every concrete kernel has the field (the abstract base declares none).
        changes: dict[str, Any] = {"features": features}
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Linear(Kernel):
    """Linear kernel ``k(x, x') = <x, x'>``.

    Parameters
    ----------
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit (the estimators keep
        them in ``feature_names_in_``); indices and names may be mixed.

    Raises
    ------
    ValueError
        ``features`` is empty or holds negative indices, or items neither integers nor
        strings.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Linear, gram
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> gram(X, [Linear(), Linear(features=[1])])[:, 0, 1]
    array([11.,  8.])
    """

    features: Features | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("linear", 0.0, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class Polynomial(Kernel):
    """Polynomial kernel ``k(x, x') = (scale * <x, x'> + coef0) ** degree``.

    Parameters
    ----------
    degree : int, default 2
        Positive integer degree.
    coef0 : float, default 1.0
        Additive constant.
    scale : float, default 1.0
        Factor of the inner product (scikit-learn's ``gamma``).
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit (the estimators keep
        them in ``feature_names_in_``); indices and names may be mixed.

    Raises
    ------
    ValueError
        ``degree`` is not a positive integer, ``coef0`` or ``scale`` is not finite, or
        ``features`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.metrics.pairwise import polynomial_kernel
    >>> from multikernel.kernels import Polynomial, gram
    >>> X = np.array([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]])
    >>> G = gram(X, [Polynomial(degree=3, coef0=1.0, scale=0.5)])
    >>> bool(np.allclose(G[0], polynomial_kernel(X, degree=3, gamma=0.5, coef0=1.0)))
    True
    """

    degree: int = 2
    coef0: float = 1.0
    scale: float = 1.0
    features: Features | None = None

    def __post_init__(self) -> None:
        d = self.degree
        if (
            isinstance(d, (bool, np.bool_))
            or not isinstance(d, numbers.Real)
            or not float(d).is_integer()
            or d < 1
        ):
            raise InvalidParameterError(
                f"degree must be a positive integer, got {d!r}", parameter="degree"
            )
        object.__setattr__(self, "degree", int(d))
        object.__setattr__(self, "coef0", check_real(self.coef0, "coef0", "finite"))
        object.__setattr__(self, "scale", check_real(self.scale, "scale", "finite"))
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("polynomial", float(self.degree), self.coef0, self.scale, _flist(self.features))


@dataclass(frozen=True)
class Gaussian(Kernel):
    """Gaussian (RBF) kernel ``k(x, x') = exp(-||x - x'||² / (2 sigma²))``.

    Parameters
    ----------
    sigma : float, default 1.0
        Positive width. Use :meth:`Gaussian.from_gamma` for scikit-learn's parameterisation
        ``exp(-gamma ||x - x'||²)``.
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit (the estimators keep
        them in ``feature_names_in_``); indices and names may be mixed.

    Raises
    ------
    ValueError
        ``sigma`` is not a positive finite number, or so small (below about 5.3e-155) that
        ``gamma = 1 / (2 sigma²)`` is not finite, or ``features`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Gaussian, gram
    >>> X = np.array([[0.0, 0.0], [2.0, 0.0]])
    >>> k = Gaussian(sigma=2.0)
    >>> k.gamma
    0.125
    >>> bool(np.isclose(gram(X, [k])[0, 0, 1], np.exp(-4.0 / 8.0)))
    True
    """

    sigma: float = 1.0
    features: Features | None = None

    def __post_init__(self) -> None:
        sigma = _positive("sigma", self.sigma)
        two_s2 = 2.0 * sigma * sigma
        if not (two_s2 > 0.0 and math.isfinite(1.0 / two_s2)):
            raise InvalidParameterError(
                f"sigma={self.sigma!r} is too small: gamma = 1 / (2 sigma²) is not finite; "
                "sigma must be at least about 5.3e-155",
                parameter="sigma",
            )
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "features", _features(self.features))

    @classmethod
    def from_gamma(cls, gamma: float, features: Features | None = None) -> Gaussian:
        """The kernel ``exp(-gamma ||x - x'||²)``, i.e. ``sigma = 1 / sqrt(2 gamma)``.

        Parameters
        ----------
        gamma : float
            Positive scale of the squared distance (scikit-learn's ``gamma``).
        features : sequence of int or str, optional
            Columns of ``X`` the kernel reads, by index or by name; all columns when None.

        Returns
        -------
        Gaussian

        Raises
        ------
        ValueError
            ``gamma`` is not a positive finite number (below about 9e307), or ``features``
            is invalid.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.metrics.pairwise import rbf_kernel
        >>> from multikernel.kernels import Gaussian, gram
        >>> X = np.array([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]])
        >>> Gaussian.from_gamma(0.5)
        Gaussian(sigma=1.0, features=None)
        >>> bool(np.allclose(gram(X, [Gaussian.from_gamma(0.5)])[0], rbf_kernel(X, gamma=0.5)))
        True
        """
        g = _positive("gamma", gamma)
        if not math.isfinite(2.0 * g):
            raise InvalidParameterError(
                f"gamma={gamma!r} is too large: sigma = 1 / sqrt(2 gamma) underflows to 0",
                parameter="gamma",
            )
        return cls(sigma=1.0 / math.sqrt(2.0 * g), features=_features(features))

    @property
    def gamma(self) -> float:
        """scikit-learn's ``gamma = 1 / (2 sigma²)``."""
        return 1.0 / (2.0 * self.sigma**2)

    def _to_tuple(self) -> _SpecTuple:
        return ("gaussian", self.sigma, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class Laplacian(Kernel):
    """Laplacian kernel ``k(x, x') = exp(-||x - x'||₁ / sigma)``.

    Parameters
    ----------
    sigma : float, default 1.0
        Positive width (scikit-learn's ``laplacian_kernel`` uses ``gamma = 1 / sigma``).
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit (the estimators keep
        them in ``feature_names_in_``); indices and names may be mixed.

    Raises
    ------
    ValueError
        ``sigma`` is not a positive finite number, or ``features`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.metrics.pairwise import laplacian_kernel
    >>> from multikernel.kernels import Laplacian, gram
    >>> X = np.array([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]])
    >>> bool(np.allclose(gram(X, [Laplacian(sigma=2.0)])[0], laplacian_kernel(X, gamma=0.5)))
    True
    """

    sigma: float = 1.0
    features: Features | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _positive("sigma", self.sigma))
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("laplacian", self.sigma, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True, init=False, repr=False)
class Callable(Kernel):
    """Any kernel a user brings: a Python function of two feature matrices, or a
    scikit-learn ``pairwise_kernels`` metric by name.

    ``fn(A, B)`` receives two float64 matrices of the selected columns, ``(a, d)`` and
    ``(b, d)``, and returns the block ``K[i, j] = k(A[i], B[j])`` of shape ``(a, b)`` (any
    numeric array-like; converted to the stack's ``dtype``). It mixes freely with the other
    specifications in :func:`gram`, :class:`KernelBank` and the estimators' ``kernels=``, and
    every normalisation and centring applies to it exactly as to them (the engine normalises
    the raw blocks with the same code). The engine calls ``fn`` on blocks of at most 256 rows
    of the stack against all its columns, taking the GIL only for each call, so the other
    kernels are computed meanwhile; for the training kernel, ``fn(X_rows, X)``. Spherical
    normalisation of new points also calls ``fn(A, A)`` for their self-values ``k(a, a)``.
    ``A`` and ``B`` are read-only views of the caller's points (or of copies of the selected
    columns): a function that writes to them gets numpy's ``ValueError`` (assignment
    destination is read-only) and the caller's ``X`` is never changed; copy them first
    (``np.array(A)``) where writable arrays are needed.

    A named metric pickles (a fitted :class:`KernelBank` or estimator with it too); a lambda or
    a local function does not (use a module-level function to pickle). :class:`FeatureBank`
    has no feature map for it. ``fn`` runs inside the engine's thread pool: it must not call
    multikernel itself (a nested call on the same pool can wait for itself).

    Parameters
    ----------
    fn : callable or str
        ``fn(A, B) -> (len(A), len(B))``, or the name of a scikit-learn ``pairwise_kernels``
        metric: ``"chi2"`` (``exp(-gamma Σ (a - b)² / (a + b))``, histograms, non-negative
        features), ``"additive_chi2"``, ``"cosine"``, ``"sigmoid"``, and the others of
        ``sklearn.metrics.pairwise.PAIRWISE_KERNEL_FUNCTIONS``.
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit (the estimators keep
        them in ``feature_names_in_``); indices and names may be mixed.

    Other Parameters
    ----------------
    **params
        Keyword arguments passed to ``fn`` at every call (for a metric, its parameters, e.g.
        ``gamma``).

    Raises
    ------
    ValueError
        ``fn`` is neither callable nor a known metric name, or ``features`` is invalid.

    Notes
    -----
    At evaluation, :func:`gram` and :class:`KernelBank` raise
    :class:`~multikernel.exceptions.InvalidInputError` when ``fn`` returns a block of the wrong
    shape, :class:`~multikernel.exceptions.NonFiniteError` for a NaN or infinite value and
    :class:`~multikernel.exceptions.KernelNotSymmetricError` for a training kernel that is not
    symmetric (to rounding), and :class:`~multikernel.exceptions.KernelNotPSDError` when the
    training kernel breaks a condition every PSD kernel meets: a negative diagonal entry
    (checked on the raw kernel, or the centred one with ``center=True``, before any
    normalisation, which would otherwise hide it), ``|K_ij| > sqrt(K_ii K_jj)`` once
    normalised, or under the spherical normalisation a negative self-value ``k(a, a)`` of a
    new point; each with ``kernel`` the index of the specification. An exception raised by
    ``fn`` itself propagates as it is. MKL needs PSD
    kernels: ``"additive_chi2"`` is only conditionally PSD (its diagonal is 0), so it is
    refused unless ``center=True`` makes it PSD; ``"sigmoid"`` is not PSD in general.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.metrics.pairwise import chi2_kernel
    >>> from multikernel.kernels import Callable, Gaussian, Linear, gram
    >>> X = np.random.default_rng(0).random((6, 4))  # histograms: non-negative
    >>> G = gram(X, [Gaussian(1.0), Callable("chi2", gamma=0.5)], normalize="trace")
    >>> bool(np.allclose(G[1], chi2_kernel(X, gamma=0.5) / 6))
    True
    >>> mine = Callable(lambda A, B: A @ B.T, features=[0, 1])
    >>> bool(np.allclose(gram(X, [mine]), gram(X, [Linear(features=[0, 1])])))
    True
    >>> Callable("chi2", gamma=0.5)
    Callable('chi2', gamma=0.5)
    """

    fn: str | _KernelFunction
    features: Features | None
    #: The keyword arguments of ``fn``, sorted by name (a tuple, so the spec stays hashable).
    params: tuple[tuple[str, Any], ...]

    def __init__(
        self,
        fn: str | _KernelFunction,
        features: Features | None = None,
        **params: Any,
    ) -> None:
        if isinstance(fn, str):
            from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS

            if fn not in PAIRWISE_KERNEL_FUNCTIONS:
                raise InvalidParameterError(
                    f"fn must be a function (A, B) -> (len(A), len(B)) or a scikit-learn "
                    f"pairwise_kernels metric ({', '.join(sorted(PAIRWISE_KERNEL_FUNCTIONS))}), "
                    f"got {fn!r}",
                    parameter="fn",
                )
        elif not callable(fn):
            raise InvalidParameterError(
                f"fn must be callable or a metric name, got {fn!r}", parameter="fn"
            )
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "features", _features(features))
        object.__setattr__(self, "params", tuple(sorted(params.items())))

    def __repr__(self) -> str:
        fn = repr(self.fn) if isinstance(self.fn, str) else getattr(self.fn, "__name__", "fn")
        args = [fn] + ([] if self.features is None else [f"features={self.features!r}"])
        args += [f"{k}={v!r}" for k, v in self.params]
        return f"Callable({', '.join(args)})"

    @property
    def function(self) -> _KernelFunction:
        """The function the engine calls on blocks, ``(A, B) -> (len(A), len(B))``: ``fn``
        with ``params``, or scikit-learn's ``pairwise_kernels`` with the metric."""
        kwargs = dict(self.params)
        if isinstance(self.fn, str):
            return functools.partial(_pairwise_metric, metric=self.fn, **kwargs)
        return functools.partial(self.fn, **kwargs) if kwargs else self.fn

    def _to_tuple(self) -> _SpecTuple:
        raise InvalidParameterError(
            f"{self!r} is a Python function, not a kernel the engine evaluates",
            parameter="specs",
        )

    def _entry(self) -> _Entry:
        return (self.function, _flist(self.features))

    def _with_features(self, features: tuple[int, ...]) -> Kernel:
        return Callable(self.fn, features, **dict(self.params))


#: Alias of :class:`Kernel`, kept for compatibility (it was the union of the four kernels).
KernelSpec: TypeAlias = Kernel


def _pairwise_metric(
    A: NDArray[np.float64], B: NDArray[np.float64], *, metric: str, **kwargs: Any
) -> Any:
    """scikit-learn's ``pairwise_kernels`` of ``metric`` on copies of the engine's read-only
    blocks (some of its compiled metrics, e.g. ``additive_chi2``, take writable arrays only)."""
    from sklearn.metrics.pairwise import pairwise_kernels

    return pairwise_kernels(np.array(A), np.array(B), metric=metric, **kwargs)


def _flist(features: Features | None) -> list[int] | None:
    """The engine's columns: indices only, so names must have been resolved before."""
    if features is None:
        return None
    names = [j for j in features if isinstance(j, str)]
    if names:
        raise InvalidParameterError(
            f"a kernel reads the columns {names} by name, but X has no column names: pass X "
            f"as a pandas DataFrame with these columns, or use integer column indices",
            parameter="features",
        )
    return [int(j) for j in features]


def _named(specs: Sequence[Kernel]) -> bool:
    """Whether some kernel reads columns by name."""
    return any(any(isinstance(j, str) for j in getattr(s, "features", None) or ()) for s in specs)


def _resolve_columns(specs: Sequence[Kernel], names: Sequence[str] | None) -> list[Kernel]:
    """``specs`` with their column names replaced by the indices of those names in
    ``names`` (the columns of ``X``, None when ``X`` has no names); kernels without names are
    returned as they are.

    Raises
    ------
    InvalidParameterError
        A kernel names columns and ``X`` has no names, names a column ``X`` does not have,
        or one ``X`` has twice.
    """
    if not _named(specs):
        return list(specs)
    index: dict[str, int] = {}
    twice: set[str] = set()
    for j, name in enumerate(names or ()):
        if name in index:
            twice.add(name)
        index.setdefault(name, j)
    out: list[Kernel] = []
    for m, s in enumerate(specs):
        feats = getattr(s, "features", None)
        if feats is None or not any(isinstance(j, str) for j in feats):
            out.append(s)
            continue
        wanted = [j for j in feats if isinstance(j, str)]
        if names is None:
            raise InvalidParameterError(
                f"kernel {m}, {s!r}, reads the columns {wanted} by name, but X has no column "
                f"names: pass X as a pandas DataFrame with these columns, or use integer "
                f"column indices",
                parameter="features",
            )
        missing = [j for j in wanted if j not in index]
        if missing:
            shown = ", ".join(repr(n) for n in list(names)[:10])
            more = f", ... ({len(names)} columns)" if len(names) > 10 else ""
            raise InvalidParameterError(
                f"kernel {m}, {s!r}, reads the columns {missing}, which X does not have; "
                f"X's columns: {shown}{more}",
                parameter="features",
            )
        ambiguous = [j for j in wanted if j in twice]
        if ambiguous:
            raise InvalidParameterError(
                f"kernel {m}, {s!r}, reads the columns {ambiguous}, which X has more than "
                f"once: rename them or use integer column indices",
                parameter="features",
            )
        out.append(s._with_features(tuple(index[j] if isinstance(j, str) else j for j in feats)))
    return out


def _check_specs(specs: Sequence[Kernel]) -> list[Kernel]:
    if isinstance(specs, Kernel):
        specs = [specs]
    if isinstance(specs, (str, bytes)):
        # A string is a sequence too: without this, "bogus" would be read as five kernels
        # and the error would name "b".
        raise InvalidParameterError(
            f"kernels must be a sequence of kernel specifications (Linear, Polynomial, "
            f"Gaussian, Laplacian, Chi2, Intersection, Hellinger, Tanimoto, Spectrum, "
            f"WeightedDegree, Callable), got the string {specs!r}",
            parameter="kernels",
        )
    try:
        specs = list(specs)
    except TypeError:
        raise InvalidParameterError(
            f"kernels must be a sequence of kernel specifications, got {specs!r}",
            parameter="kernels",
        ) from None
    if not specs:
        raise InvalidParameterError(
            "at least one kernel specification is needed", parameter="kernels"
        )
    for i, s in enumerate(specs):
        if not isinstance(s, Kernel):
            raise InvalidParameterError(
                f"kernel {i} is {s!r}, not a kernel specification "
                "(Linear, Polynomial, Gaussian, Laplacian, Chi2, Intersection, Hellinger, "
                "Tanimoto, Spectrum, WeightedDegree, Callable)",
                parameter="kernels",
            )
    return specs
