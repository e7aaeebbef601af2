"""Kernel specifications, Gram stacks and their normalisation.

A kernel specification is a frozen dataclass naming a kernel function and, optionally, the
feature columns it reads; each derives from :class:`Kernel` (:class:`Linear`,
:class:`Polynomial`, :class:`Gaussian`, :class:`Laplacian`, and :class:`Callable` for any
function of two feature matrices, e.g. scikit-learn's χ² kernel). :func:`gram` computes the stack
of training Gram matrices ``(M, n, n)``; :class:`KernelBank` keeps the training statistics so
that :meth:`KernelBank.transform` gives cross kernels ``(M, n_new, n)`` normalised the same
way.
All heavy work runs in Rust, in parallel, with the GIL released (taken back only to call a
:class:`Callable`'s function on a block of rows).

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

import abc
import functools
import math
import numbers
from collections.abc import Callable as _Function
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

import numpy as np
import scipy.linalg
from numpy.typing import DTypeLike, NDArray

from . import _core, _dask
from ._typing import Normalization
from ._validation import (
    aligned,
    check_features,
    check_n_threads,
    check_random_state,
    check_real,
    check_stack,
)
from .exceptions import (
    InternalError,
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDError,
    NonFiniteError,
    NotFittedError,
    StackTooLargeError,
)

__all__ = [
    "Callable",
    "FeatureBank",
    "FeatureMethod",
    "Gaussian",
    "Kernel",
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
    "shift_to_psd",
    "simplemkl_bank",
    "validate_stack",
    "view_bank",
]


_NORMALIZATIONS: tuple[str, ...] = get_args(Normalization)

#: The 24 Gaussian widths of the SimpleMKL and SpicyMKL experiments.
SIMPLEMKL_WIDTHS: tuple[float, ...] = (
    0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0,
)  # fmt: skip

_SpecTuple: TypeAlias = tuple[str, float, float, float, "list[int] | None"]
#: A kernel function of two feature matrices: ``(A, B) -> (len(A), len(B))``.
_KernelFunction: TypeAlias = _Function[[NDArray[np.float64], NDArray[np.float64]], Any]
#: A kernel as the engine's Gram functions take it: a specification tuple, or a function with
#: the columns it reads.
_Entry: TypeAlias = "_SpecTuple | tuple[_KernelFunction, list[int] | None]"


def _features(value: Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise InvalidParameterError(
            f"features must be a sequence of column indices, got {value!r}", parameter="features"
        )
    try:
        items = np.asarray(value, dtype=object).ravel().tolist()
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"features must be a sequence of column indices, got {value!r}", parameter="features"
        ) from None
    bad = [
        j for j in items if isinstance(j, (bool, np.bool_)) or not isinstance(j, numbers.Integral)
    ]
    if bad:
        raise InvalidParameterError(
            f"features must be integer column indices (ints, not floats or bools), got "
            f"{bad[0]!r} in {value!r}",
            parameter="features",
        )
    feats = tuple(int(j) for j in items)
    if len(feats) == 0:
        raise InvalidParameterError(
            "features must not be empty (use None for all columns)", parameter="features"
        )
    if min(feats) < 0:
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
    :class:`Linear`, :class:`Polynomial`, :class:`Gaussian` and :class:`Laplacian`, which the
    engine evaluates, and :class:`Callable`, a Python function the engine calls on blocks of
    rows; this class gives a list of mixed specifications a common type, so that
    ``[Gaussian(sigma=2.0), Linear()]`` is a ``list[Kernel]`` for a type checker, as
    scikit-learn's Gaussian-process kernels share ``Kernel``. It is abstract.

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


@dataclass(frozen=True)
class Linear(Kernel):
    """Linear kernel ``k(x, x') = <x, x'>``.

    Parameters
    ----------
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.

    Raises
    ------
    ValueError
        ``features`` is empty or holds negative or non-integer indices.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Linear, gram
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> gram(X, [Linear(), Linear(features=[1])])[:, 0, 1]
    array([11.,  8.])
    """

    features: Sequence[int] | None = None

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
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.

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
    features: Sequence[int] | None = None

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
        Positive width. Use :meth:`from_gamma` for scikit-learn's parameterisation
        ``exp(-gamma ||x - x'||²)``.
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.

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
    features: Sequence[int] | None = None

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
    def from_gamma(cls, gamma: float, features: Sequence[int] | None = None) -> Gaussian:
        """The kernel ``exp(-gamma ||x - x'||²)``, i.e. ``sigma = 1 / sqrt(2 gamma)``.

        Parameters
        ----------
        gamma : float
            Positive scale of the squared distance (scikit-learn's ``gamma``).
        features : sequence of int, optional
            Columns of ``X`` the kernel reads; all columns when None.

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
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.

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
    features: Sequence[int] | None = None

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
    features : sequence of int, optional
        Columns of ``X`` the kernel reads; all columns when None.

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
    normalised training kernel breaks a condition every PSD kernel meets (a negative diagonal
    entry, or ``|K_ij| > sqrt(K_ii K_jj)``), each with ``kernel`` the index of the
    specification; an exception raised by ``fn`` itself propagates as it is. MKL needs PSD
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
    features: Sequence[int] | None
    #: The keyword arguments of ``fn``, sorted by name (a tuple, so the spec stays hashable).
    params: tuple[tuple[str, Any], ...]

    def __init__(
        self,
        fn: str | _KernelFunction,
        features: Sequence[int] | None = None,
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
            from sklearn.metrics.pairwise import pairwise_kernels

            return functools.partial(pairwise_kernels, metric=self.fn, **kwargs)
        return functools.partial(self.fn, **kwargs) if kwargs else self.fn

    def _to_tuple(self) -> _SpecTuple:
        raise InvalidParameterError(
            f"{self!r} is a Python function, not a kernel the engine evaluates",
            parameter="specs",
        )

    def _entry(self) -> _Entry:
        return (self.function, _flist(self.features))


#: Alias of :class:`Kernel`, kept for compatibility (it was the union of the four kernels).
KernelSpec: TypeAlias = Kernel


def _flist(features: Sequence[int] | None) -> list[int] | None:
    return None if features is None else list(features)


def _from_tuple(t: _SpecTuple) -> Kernel:
    kind, a, b, c, feats = t
    if kind == "linear":
        return Linear(features=feats)
    if kind == "polynomial":
        return Polynomial(degree=int(a), coef0=b, scale=c, features=feats)
    if kind == "gaussian":
        return Gaussian(sigma=a, features=feats)
    if kind == "laplacian":
        return Laplacian(sigma=a, features=feats)
    raise InternalError(f"the engine returned a kernel specification of unknown kind {kind!r}")


def _check_specs(specs: Sequence[Kernel]) -> list[Kernel]:
    if isinstance(specs, Kernel):
        specs = [specs]
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
                "(Linear, Polynomial, Gaussian, Laplacian, Callable)",
                parameter="kernels",
            )
    return specs


def _check_normalize(normalize: str | None) -> str:
    name = "none" if normalize is None else normalize
    if not isinstance(name, str) or name not in _NORMALIZATIONS:
        raise InvalidParameterError(
            f"normalize must be one of {', '.join(_NORMALIZATIONS)} or None, got {normalize!r}",
            parameter="normalize",
        )
    return name


def _is_float32(dtype: DTypeLike) -> bool:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise InvalidParameterError(
            f"dtype must be float64 or float32, got {dt}", parameter="dtype"
        )
    return dt == np.dtype(np.float32)


def simplemkl_bank(
    n_features: int,
    widths: Sequence[float] = SIMPLEMKL_WIDTHS,
    degrees: Sequence[int] = (1, 2, 3),
) -> list[Kernel]:
    """The kernel bank of SimpleMKL and SpicyMKL.

    Every Gaussian width and every polynomial degree (``(<x, x'> + 1) ** d``), first on all
    variables, then on each single variable: ``(len(widths) + len(degrees)) * (n_features + 1)``
    specifications (27 · (d + 1) with the defaults).

    Parameters
    ----------
    n_features : int
        Number of columns of ``X``.
    widths : sequence of float, default SIMPLEMKL_WIDTHS
        Gaussian widths sigma.
    degrees : sequence of int, default (1, 2, 3)
        Polynomial degrees.

    Returns
    -------
    list of Kernel
        The Gaussian kernels, then the polynomial ones, on all variables, then the same on
        each single variable.

    Raises
    ------
    ValueError
        ``n_features`` is not a positive integer, a width is not positive, a degree is not a
        positive integer, or both ``widths`` and ``degrees`` are empty.

    Examples
    --------
    >>> from multikernel.kernels import simplemkl_bank
    >>> len(simplemkl_bank(n_features=4))
    135
    >>> simplemkl_bank(2, widths=[1.0], degrees=[2])[:3]  # doctest: +NORMALIZE_WHITESPACE
    [Gaussian(sigma=1.0, features=None),
     Polynomial(degree=2, coef0=1.0, scale=1.0, features=None),
     Gaussian(sigma=1.0, features=(0,))]
    """
    if isinstance(n_features, bool) or int(n_features) != n_features or n_features < 1:
        raise InvalidParameterError(
            f"n_features must be a positive integer, got {n_features!r}", parameter="n_features"
        )
    ws = [_positive("width", w) for w in widths]
    ds = [Polynomial(degree=d).degree for d in degrees]
    if not ws and not ds:
        raise InvalidParameterError(
            "the bank needs at least one width or degree", parameter="widths"
        )
    return [_from_tuple(t) for t in _core.simplemkl_specs(int(n_features), ws, ds)]


def view_bank(
    views: Mapping[str, Sequence[int]],
    *,
    widths: Sequence[float] = (0.5, 1.0, 2.0, 5.0, 10.0),
    degrees: Sequence[int] = (),
    linear: bool = False,
) -> tuple[list[Kernel], list[int]]:
    """Kernels per named view (a set of columns) and the group of each: the input of
    ``penalty="group"`` (Nath et al.'s multi-view setting: sparse within a view, every
    view used).

    Parameters
    ----------
    views : mapping of str to sequence of int
        Each view's columns of ``X``, in the order the groups are numbered (e.g.
        ``{"gene": range(0, 120), "lipid": range(120, 141)}``).
    widths : sequence of float, default (0.5, 1, 2, 5, 10)
        Gaussian widths sigma, one kernel each per view. Distances grow with the number of
        columns: for standardised columns, widths near ``sqrt(len(columns))`` are the
        typical scale.
    degrees : sequence of int, default ()
        Polynomial degrees (``(<x, x'> + 1) ** d``), one kernel each per view.
    linear : bool, default False
        Also a linear kernel per view.

    Returns
    -------
    specs : list of Kernel
        Per view, in the order of ``views``: the Gaussians, the polynomials, then the linear
        kernel.
    groups : list of int
        The view (group) index of every specification, for ``groups=``.

    Raises
    ------
    ValueError
        ``views`` is not a mapping, no view, a view without columns or with a non-integer or
        negative column, a width that is not positive, a degree that is not a positive
        integer, or no kernel per view.

    Examples
    --------
    >>> from multikernel.kernels import view_bank
    >>> specs, groups = view_bank({"a": [0, 1], "b": [2]}, widths=[1.0, 2.0], linear=True)
    >>> groups
    [0, 0, 0, 1, 1, 1]
    >>> specs[2], specs[3]
    (Linear(features=(0, 1)), Gaussian(sigma=1.0, features=(2,)))
    """
    if not isinstance(views, Mapping):
        raise InvalidParameterError(
            f"views must be a mapping of view names to column indices (e.g. "
            f"{{'a': [0, 1], 'b': [2]}}), got {type(views).__name__} {views!r}",
            parameter="views",
        )
    if not views:
        raise InvalidParameterError("view_bank needs at least one view", parameter="views")
    ws = [_positive("width", w) for w in widths]
    ds = [Polynomial(degree=d).degree for d in degrees]
    if not ws and not ds and not linear:
        raise InvalidParameterError(
            "view_bank needs a width, a degree or linear=True", parameter="widths"
        )
    specs: list[Kernel] = []
    groups: list[int] = []
    for j, (name, columns) in enumerate(views.items()):
        cols = list(columns)
        if not cols:
            raise InvalidParameterError(f"view {name!r} has no columns", parameter="views")
        try:
            feats = _features(cols)
        except ValueError as e:
            raise InvalidParameterError(f"view {name!r} of views: {e}", parameter="views") from None
        view: list[Kernel] = [Gaussian(sigma=w, features=feats) for w in ws]
        view += [Polynomial(degree=d, features=feats) for d in ds]
        if linear:
            view.append(Linear(features=feats))
        specs += view
        groups += [j] * len(view)
    return specs, groups


def gram(
    X: Any,
    specs: Sequence[Kernel],
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
        Training points; a Dask array gives a Dask array of row blocks, computed on the
        workers (docs/dask.md).
    specs : sequence of Kernel
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
        Threads for the computation, 0 or -1 = all cores (-k: all but k − 1); values above
        the number of cores are clipped to it.

    Returns
    -------
    ndarray of shape (M, n_samples, n_samples)

    Raises
    ------
    ValueError
        Non-finite ``X``, invalid specifications, or feature indices out of range; for a
        :class:`Callable` whose function returns a block of the wrong shape, non-finite or
        (training kernels) not symmetric, the ``InvalidInputError`` kinds of
        :mod:`multikernel.exceptions` with ``kernel`` set to its index.
    StackTooLargeError
        The stack would not fit in the available memory (raised before allocating it).

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Gaussian, Linear, gram
    >>> X = np.random.default_rng(0).normal(size=(10, 3))
    >>> G = gram(X, [Linear(), Gaussian(sigma=2.0, features=[0, 2])], normalize="mean_diag")
    >>> G.shape, G.dtype
    ((2, 10, 10), dtype('float64'))
    >>> np.diagonal(G, axis1=1, axis2=2).mean(axis=1)
    array([1., 1.])
    """
    return KernelBank(
        specs, normalize=normalize, center=center, dtype=dtype, n_threads=n_threads
    ).fit_transform(X)


class KernelBank:
    """Kernel specifications with the normalisation statistics of a training set.

    Parameters
    ----------
    specs : sequence of Kernel
        Kernel specifications.
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"}, optional
        See :func:`gram`.
    center : bool, default False
        Centre each kernel in feature space (with the training means) before scaling.
    dtype : float64 or float32
        Element type of the stacks produced.
    n_threads : int, default 0
        Threads, 0 or -1 = all cores (-k: all but k − 1); values above the number of
        cores are clipped to it.

    Raises
    ------
    ValueError
        Invalid specifications, an unknown ``normalize``, a ``dtype`` other than float64 and
        float32, or a negative ``n_threads``.

    Attributes
    ----------
    specs : list of Kernel
        The specifications (features stored as tuples).
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
        specs: Sequence[Kernel],
        *,
        normalize: Normalization | None = None,
        center: bool = False,
        dtype: DTypeLike = np.float64,
        n_threads: int = 0,
    ) -> None:
        self.specs: list[Kernel] = _check_specs(specs)
        self._tuples = [s._entry() for s in self.specs]
        self.normalize: str = _check_normalize(normalize)
        self.center = bool(center)
        self.dtype = np.dtype(np.float32 if _is_float32(dtype) else np.float64)
        self.n_threads = check_n_threads(n_threads)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled (e.g. on a Dask worker): the engine needs aligned arrays.
        self.__dict__.update(aligned(state))

    def __len__(self) -> int:
        return len(self.specs)

    def fit(self, X: Any) -> KernelBank:
        """Compute and keep the training statistics of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points.

        Returns
        -------
        KernelBank
            ``self``, fitted.

        Raises
        ------
        ValueError
            ``X`` is not a finite 2-D array, or a feature index is out of range.
        StackTooLargeError
            The training stack would not fit in the available memory.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import Gaussian, KernelBank
        >>> bank = KernelBank([Gaussian(sigma=1.0)], normalize="trace").fit(np.eye(3))
        >>> bank.X_train_.shape, bank.degenerate_
        ((3, 3), [])
        """
        self.fit_transform(X)
        return self

    def fit_transform(self, X: Any) -> NDArray[Any]:
        """Compute the training Gram stack of ``X`` and keep its statistics.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points; for a Dask array the points are gathered, the statistics
            computed block by block on the workers, and a Dask array returned (docs/dask.md).

        Returns
        -------
        ndarray of shape (M, n_samples, n_samples)
            The normalised training kernels, of the bank's ``dtype``.

        Raises
        ------
        ValueError
            ``X`` is not a finite 2-D array, or a feature index is out of range.
        StackTooLargeError
            The stack would not fit in the available memory.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import KernelBank, Linear, Polynomial
        >>> bank = KernelBank([Linear(), Polynomial(degree=2)], normalize="trace", dtype=np.float32)
        >>> G = bank.fit_transform(np.arange(8.0).reshape(4, 2))
        >>> G.shape, G.dtype, np.trace(G, axis1=1, axis2=2).round(6)
        ((2, 4, 4), dtype('float32'), array([1., 1.], dtype=float32))
        """
        if _dask.is_dask_array(X):  # statistics and blocks on the workers (docs/dask.md)
            X_train, train_stats, stack = _dask.bank_fit_transform(self._dask_job(), X)
            self._keep_fit(X_train, train_stats)
            return stack  # type: ignore[no-any-return]
        Xc = check_features(X)
        G, stats = _core.gram_fit(
            Xc,
            self._tuples,
            self.normalize,
            self.center,
            self.dtype == np.float32,
            self.n_threads,
        )
        self._keep_fit(Xc.copy(), stats)
        return G

    def transform(self, X: Any) -> NDArray[Any]:
        """Cross kernels between ``X`` and the training points, with the training
        normalisation.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)
            New points; a Dask array gives a Dask array, chunked along ``n_new``, one
            task per row block (docs/dask.md).

        Returns
        -------
        ndarray of shape (M, n_new, n_train)
            ``K_m(x_new, x_train)``, scaled (and centred) with the training statistics.

        Raises
        ------
        ValueError
            The bank is not fitted, or ``X`` is not a finite 2-D array with as many columns as
            the training points.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import Gaussian, KernelBank
        >>> X = np.arange(12.0).reshape(6, 2)
        >>> bank = KernelBank([Gaussian(sigma=2.0)], normalize="trace").fit(X)
        >>> Gx = bank.transform(X[:2])
        >>> Gx.shape, bool(np.allclose(Gx, bank.fit_transform(X)[:, :2, :]))
        ((1, 2, 6), True)
        """
        if not hasattr(self, "stats_"):
            raise NotFittedError("this KernelBank is not fitted yet: call fit(X_train) first")
        if _dask.is_dask_array(X):  # one task per row block (docs/dask.md)
            return _dask.bank_transform(  # type: ignore[no-any-return]
                self._dask_job(), X, self.X_train_, self.stats_
            )
        Xc = check_features(X)
        if Xc.shape[1] != self.X_train_.shape[1]:
            raise InvalidInputError(
                f"X has {Xc.shape[1]} features but the bank was fitted on {self.X_train_.shape[1]}"
            )
        return _core.gram_cross(
            Xc, self.X_train_, self._tuples, self.stats_, self.dtype == np.float32, self.n_threads
        )

    def nbytes(self, n_samples: int, n_train: int | None = None) -> int:
        """Bytes of a stack of these kernels on ``n_samples`` (× ``n_train``) points.

        Parameters
        ----------
        n_samples : int
            Rows of each kernel.
        n_train : int, optional
            Columns of each kernel (a cross stack); ``n_samples`` when None.

        Returns
        -------
        int
            ``M · n_samples · n_train · itemsize``.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import KernelBank, simplemkl_bank
        >>> bank = KernelBank(simplemkl_bank(n_features=30), dtype=np.float32)
        >>> len(bank), round(bank.nbytes(1000) / 2**30, 2)  # GiB of the training stack
        (837, 3.12)
        >>> bank.nbytes(10, 1000)
        33480000
        """
        cols = n_samples if n_train is None else n_train
        return len(self.specs) * n_samples * cols * self.dtype.itemsize

    def _keep_fit(self, X_train: NDArray[np.float64], stats: dict[str, Any]) -> None:
        """Keep the fitted state: the training points and their statistics."""
        self.X_train_ = X_train
        self.stats_: dict[str, Any] = stats
        self.degenerate_: list[int] = list(stats["degenerate"])

    def _dask_job(self) -> _dask.BankJob:
        """The hook of the Dask path: what its tasks need of this bank. ``_dask`` computes
        and returns; the bank keeps the results (:meth:`_keep_fit`)."""
        return _dask.BankJob(self._tuples, self.normalize, self.center, self.dtype, self.n_threads)


#: How :class:`FeatureBank` approximates a kernel (``method=``).
FeatureMethod: TypeAlias = Literal["nystroem", "rff"]


class FeatureBank:
    """Explicit feature maps ``φ_m`` with ``φ_m(x)ᵀφ_m(x') ≈ k_m(x, x')``, one per spec.

    A fitted bank turns ``n`` points into ``M`` feature blocks ``Φ_m`` of shape
    ``(n, D_m)``, so a kernel is the low-rank factor ``Φ_m Φ_mᵀ`` and no ``n×n`` matrix is
    formed. ``Linear`` specs get their own columns (exact); the others get random Fourier
    features (``method="rff"``, Gaussian and Laplacian only: unbiased, error ``~ 1/sqrt(D)``)
    or Nyström features (``method="nystroem"``, any kernel: ``φ(x) = R⁻¹k(P, x)`` with
    landmarks ``P`` and ``K_PP = RRᵀ``; exact on the landmarks). Pass it as ``kernels=`` to
    the estimators to fit on the low-rank stack.

    Parameters
    ----------
    specs : sequence of Kernel
        The kernels.
    method : {"nystroem", "rff"}, default "nystroem"
        The approximation of the non-linear kernels.
    n_components : int, default 100
        Features per kernel (``D``), or the most landmarks (Nyström; pivoted selection stops
        earlier when the kernel's rank is reached).
    landmarks : {"pivoted", "uniform"}, default "pivoted"
        Nyström landmarks: the pivots of the incomplete Cholesky of the training kernel
        (deterministic, adapted to the data), or rows drawn uniformly with ``random_state``.
    normalize : {"mean_diag", "trace", "none"} or None, default "mean_diag"
        Scale each block so that the approximate training kernel has unit mean diagonal (or
        unit trace); the scale is kept and applied to new points.
    random_state : int or None, default None
        Seed (≥ 0) of the random Fourier features and of uniform landmarks (None: 0).
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Type of the returned blocks: float32 halves their memory (computed in float64, then
        rounded); the solvers compute in float64 either way.
    n_threads : int, default 0
        Threads of the engine (0 or -1: all cores, -k: all but k − 1; values above the
        number of cores are clipped to it).

    Raises
    ------
    InvalidParameterError
        An unknown ``method``, ``landmarks`` or ``normalize``, ``n_components < 1``, a
        non-integer ``random_state``, ``method="rff"`` for a kernel that is not
        shift-invariant, or a :class:`Callable` (it has no feature map here, with either
        method).

    Attributes
    ----------
    params_ : list of dict
        The fitted map of every kernel (its arrays).
    scales_ : ndarray of shape (M,)
        The normalisation factor of every block.
    n_components_ : ndarray of shape (M,)
        Features per kernel, ``D_m`` (their sum is the width of ``transform``'s ``out``).
    n_features_in_ : int
        Columns of the training ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import FeatureBank, Gaussian, Linear
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> bank = FeatureBank([Gaussian(sigma=1.0), Linear(features=[0])], n_components=20)
    >>> [F.shape for F in bank.fit_transform(X)]
    [(50, 20), (50, 1)]
    """

    def __init__(
        self,
        specs: Sequence[Kernel],
        *,
        method: FeatureMethod = "nystroem",
        n_components: int = 100,
        landmarks: Literal["pivoted", "uniform"] = "pivoted",
        normalize: Literal["mean_diag", "trace", "none"] | None = "mean_diag",
        random_state: int | None = None,
        dtype: DTypeLike = np.float64,
        n_threads: int = 0,
    ) -> None:
        self.specs: list[Kernel] = _check_specs(specs)
        for m, s in enumerate(self.specs):
            if isinstance(s, Callable):
                raise InvalidParameterError(
                    f"kernel {m}, {s!r}, has no feature map: random Fourier features need a "
                    "shift-invariant kernel the engine knows, and the engine does not evaluate "
                    "Python functions for Nyström features; pass the specifications as "
                    "kernels=[...] (exact Gram matrices) instead",
                    parameter="specs",
                )
        self._tuples = [s._to_tuple() for s in self.specs]
        self.dtype = np.dtype(np.float32 if _is_float32(dtype) else np.float64)
        if method not in ("nystroem", "rff"):
            raise InvalidParameterError(
                f"method must be 'nystroem' or 'rff', got {method!r}", parameter="method"
            )
        if (
            isinstance(n_components, bool)
            or not isinstance(n_components, numbers.Integral)
            or (n_components < 1)
        ):
            raise InvalidParameterError(
                f"n_components must be a positive integer, got {n_components!r}",
                parameter="n_components",
            )
        if landmarks not in ("pivoted", "uniform"):
            raise InvalidParameterError(
                f"landmarks must be 'pivoted' or 'uniform', got {landmarks!r}",
                parameter="landmarks",
            )
        norm = "none" if normalize is None else normalize
        if norm not in ("mean_diag", "trace", "none"):
            raise InvalidParameterError(
                f"normalize must be 'mean_diag', 'trace', 'none' or None, got {normalize!r}",
                parameter="normalize",
            )
        check_random_state(random_state)
        if method == "rff":
            bad = [s for s in self.specs if not isinstance(s, (Gaussian, Laplacian, Linear))]
            if bad:
                raise InvalidParameterError(
                    f"method='rff' approximates Gaussian and Laplacian kernels only, got "
                    f"{bad[0]!r}; use method='nystroem'",
                    parameter="method",
                )
        self.method: FeatureMethod = method
        self.n_components: int = int(n_components)
        self.landmarks: Literal["pivoted", "uniform"] = landmarks
        self.normalize: str = norm
        self.random_state: int | None = random_state
        self.n_threads: int = check_n_threads(n_threads)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled (e.g. on a Dask worker): the engine needs aligned arrays.
        self.__dict__.update(aligned(state))

    def __len__(self) -> int:
        return len(self.specs)

    def fit(self, X: Any) -> FeatureBank:
        """Fit the maps (and the normalisation) on the training points ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points; a ``numpy.memmap`` is read in row batches (pivoted Nyström
            landmarks read it whole, as float64).

        Returns
        -------
        FeatureBank
            ``self``, fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import FeatureBank, Gaussian
        >>> bank = FeatureBank([Gaussian(sigma=1.0)], method="rff", random_state=0)
        >>> bank.fit(np.zeros((4, 2))).scales_.shape
        (1,)
        """
        rows = _feature_rows(X)
        self._fit_maps(rows)
        sq: list[NDArray[np.float64]] = []
        for batch in _row_batches(rows.shape[0], int(self.n_components_.sum())):
            sq.append(self._row_squares(self._raw_rows(rows, batch)))
        self._set_scales(sq, rows.shape[0])
        return self

    def fit_transform(self, X: Any) -> list[NDArray[Any]]:
        """Fit the maps on ``X`` and return its feature blocks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points.

        Returns
        -------
        list of ndarray of shape (n_samples, D_m)
            One block per kernel, normalised: consecutive column ranges of one row-major
            ``(n_samples, n_components_.sum())`` array, which the solvers read in place.
            Equal to ``transform(X)`` (to float32 rounding with ``dtype=float32``: here the
            stored values are scaled, there the scaled values stored).

        Raises
        ------
        ValueError
            ``X`` is not a finite 2-D array, or a feature index is out of range.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import FeatureBank, Polynomial
        >>> X = np.random.default_rng(0).normal(size=(30, 2))
        >>> F, = FeatureBank([Polynomial(degree=2)], normalize="none").fit_transform(X)
        >>> F.shape[1]  # a degree-2 polynomial kernel on 2 features has rank 6
        6
        """
        rows = _feature_rows(X)
        self._fit_maps(rows)
        n, width = rows.shape[0], int(self.n_components_.sum())
        out = np.empty((n, width), dtype=self.dtype)
        sq: list[NDArray[np.float64]] = []
        for batch in _row_batches(n, width):
            raw = self._raw_rows(rows, batch)
            sq.append(self._row_squares(raw))
            out[batch] = raw
        self._set_scales(sq, n)
        for batch in _row_batches(n, width):
            out[batch] *= self._column_scales()
        return self._split(out)

    def transform(self, X: Any, *, out: NDArray[Any] | None = None) -> list[NDArray[Any]]:
        """Feature blocks of new points, with the training normalisation.

        The features are computed in row batches of about 32 MB, so the memory a call needs
        beyond its result is one batch; with ``out`` a file-backed array
        (``numpy.lib.format.open_memmap``) and ``X`` a ``numpy.memmap``, ``n_samples`` may
        exceed the memory (pass the blocks with ``kernels="precomputed"`` to fit on them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New points (a ``numpy.memmap`` is read batch by batch).
        out : ndarray of shape (n_samples, n_components_.sum()), optional
            C-ordered array of the bank's ``dtype`` to write the features into (e.g. a
            ``numpy.memmap``); by default a new array.

        Returns
        -------
        list of ndarray of shape (n_samples, D_m)
            One block per kernel: consecutive column ranges of one row-major array (``out``
            when given), which the solvers read in place.

        Raises
        ------
        ValueError
            The bank is not fitted, ``X`` has another number of features, or ``out`` has
            the wrong shape, type or memory order.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import FeatureBank, Gaussian
        >>> X = np.random.default_rng(0).normal(size=(40, 2))
        >>> bank = FeatureBank([Gaussian(sigma=1.0)], n_components=40).fit(X)
        >>> F, = bank.transform(X[:5])
        >>> T, = bank.fit_transform(X)
        >>> bool(np.allclose(F, T[:5]))
        True
        """
        if not hasattr(self, "params_"):
            raise NotFittedError("this FeatureBank is not fitted yet: call fit(X_train) first")
        rows = _feature_rows(X)
        if rows.shape[1] != self.n_features_in_:
            raise InvalidInputError(
                f"X has {rows.shape[1]} features but the bank was fitted on {self.n_features_in_}"
            )
        n, width = rows.shape[0], int(self.n_components_.sum())
        if out is None:
            out = np.empty((n, width), dtype=self.dtype)
        elif not (
            isinstance(out, np.ndarray)
            and out.shape == (n, width)
            and out.dtype == self.dtype
            and out.flags.c_contiguous
            and out.flags.writeable
        ):
            raise InvalidParameterError(
                f"out must be a writeable C-ordered {self.dtype} array of shape "
                f"({n}, {width}), got {getattr(out, 'dtype', type(out).__name__)} "
                f"{getattr(out, 'shape', '')}",
                parameter="out",
            )
        scales = self._column_scales()
        for batch in _row_batches(n, width):
            out[batch] = self._raw_rows(rows, batch) * scales
        return self._split(out)

    def _fit_maps(self, X: NDArray[Any]) -> None:
        """The maps' parameters (``params_``, ``n_components_``, ``n_features_in_``)."""
        n, d = X.shape
        seed = 0 if self.random_state is None else int(self.random_state)
        seeds = [(seed + m) % 2**64 for m in range(len(self.specs))]  # the engine's are 64-bit
        pivoted = self.landmarks == "pivoted"
        # Pivoted landmarks read X whole; uniform ones need the row count only.
        whole = np.empty((n, 0))
        if self.method == "nystroem" and pivoted:
            if not all(isinstance(spec, Linear) for spec in self.specs):
                whole = check_features(X)
        params: list[dict[str, Any]] = []
        for m, (spec, t) in enumerate(zip(self.specs, self._tuples, strict=True)):
            cols = t[4] if t[4] is not None else list(range(d))
            if any(c >= d for c in cols):
                raise InvalidInputError(
                    f"kernel {m} reads feature {max(cols)} but X has {d} features"
                )
            if isinstance(spec, Linear):
                p: dict[str, Any] = {"kind": "linear", "cols": cols}
            elif self.method == "rff":
                W, b = _core.fourier_params(t, len(cols), self.n_components, seeds[m])
                p = {"kind": "rff", "W": W, "b": b}
            else:
                idx = _core.nystroem_landmarks(
                    whole, t, self.n_components, pivoted, seeds[m], self.n_threads
                )
                L = check_features(X[np.asarray(idx, dtype=np.intp)])
                p = {"kind": "nystroem", "landmarks": L, "R": _core.nystroem_factor(L, t)}
            params.append(p)
        self.params_ = params
        self.n_components_ = np.array([_map_width(p) for p in params], dtype=np.intp)
        self.n_features_in_ = d

    def _row_squares(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        """``‖φ_m(x)‖²`` of every row (rows × M)."""
        return np.stack([np.einsum("ij,ij->i", raw[:, c], raw[:, c]) for c in self._columns()], 1)

    def _set_scales(self, row_squares: list[NDArray[np.float64]], n: int) -> None:
        if self.normalize == "none":
            self.scales_ = np.ones(len(self.params_))
            return
        # Summed exactly (fsum), so the scales do not depend on the row batches.
        rows = np.concatenate(row_squares)
        sq = np.array([math.fsum(rows[:, m]) for m in range(rows.shape[1])])
        per = sq / n if self.normalize == "mean_diag" else sq
        self.scales_ = np.where(per > 0, 1.0 / np.sqrt(np.where(per > 0, per, 1.0)), 0.0)

    def _columns(self) -> list[slice]:
        ends = np.cumsum(self.n_components_)
        return [slice(int(e - w), int(e)) for e, w in zip(ends, self.n_components_, strict=True)]

    def _column_scales(self) -> NDArray[np.float64]:
        return np.repeat(self.scales_, self.n_components_)

    def _split(self, F: NDArray[Any]) -> list[NDArray[Any]]:
        return [F[:, c] for c in self._columns()]

    def _raw_rows(self, X: NDArray[Any], batch: slice) -> NDArray[np.float64]:
        """The unscaled features ``(rows, n_components_.sum())`` of the rows ``batch``."""
        Xb = check_features(X[batch], row_offset=batch.start or 0)
        out = np.empty((Xb.shape[0], int(self.n_components_.sum())))
        for m, (p, c) in enumerate(zip(self.params_, self._columns(), strict=True)):
            t = self._tuples[m]
            if p["kind"] == "linear":
                out[:, c] = Xb[:, p["cols"]]
            elif p["kind"] == "rff":
                out[:, c] = _core.fourier_features(Xb, t, p["W"], p["b"], self.n_threads)
            else:
                out[:, c] = _core.nystroem_features(
                    Xb, p["landmarks"], t, p["R"], self.n_threads
                )  # fmt: skip
        return out


def _map_width(p: dict[str, Any]) -> int:
    """``D_m``: the columns a fitted map produces."""
    if p["kind"] == "linear":
        return len(p["cols"])
    if p["kind"] == "rff":
        return int(len(p["b"]))
    return int(p["landmarks"].shape[0])


def _feature_rows(X: Any) -> NDArray[Any]:
    """``X`` as a 2-D array whose rows are converted (and checked) batch by batch: arrays,
    memmaps included, are kept as they are; anything else becomes float64."""
    arr = X if isinstance(X, np.ndarray) else check_features(X)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInputError(
            f"X must be 2-D (n_samples, n_features) with at least one of each, got an array "
            f"of shape {arr.shape}"
        )
    return arr


def _row_batches(n: int, width: int, budget: int = 1 << 22) -> list[slice]:
    """Row ranges of about ``budget`` float64 values (32 MB) of ``width`` columns."""
    step = max(1, budget // max(1, width))
    return [slice(a, min(a + step, n)) for a in range(0, n, step)]


def validate_stack(G: Any, *, rtol: float = 1e-8, n_threads: int = 0) -> NDArray[Any]:
    """Check a precomputed stack ``(M, n, n)``: finite, symmetric within ``rtol · max|K_m|``,
    and meeting the entry-wise conditions of a positive semi-definite kernel (no diagonal
    entry below ``-rtol · max|K_m|``, no ``|K_ij|`` above ``sqrt(K_ii K_jj)`` beyond rounding),
    in one read of the stack. A kernel that passes can still be indefinite (e.g. by float32
    rounding): the solvers detect that when a dual point exploits it
    (:class:`~multikernel.exceptions.KernelNotPSDWarning`).

    Parameters
    ----------
    G : array-like of shape (M, n, n)
        Kernel stack.
    rtol : float, default 1e-8
        Tolerated asymmetry ``|K_m[i, j] - K_m[j, i]|``, relative to ``max|K_m|``; finite
        and ≥ 0.
    n_threads : int, default 0
        Threads, 0 or -1 = all cores (-k: all but k − 1); values above the number of
        cores are clipped to it.

    Returns
    -------
    ndarray of shape (M, n, n)
        ``G`` as a C-contiguous float64 array (float32 stays float32), not copied when it
        already is one.

    Raises
    ------
    ValueError
        ``rtol`` is not finite and ≥ 0, wrong shape, non-finite entries
        (:class:`~multikernel.exceptions.NonFiniteError`),
        an asymmetric kernel (:class:`~multikernel.exceptions.KernelNotSymmetricError`) or
        one that cannot be PSD (:class:`~multikernel.exceptions.KernelNotPSDError`); the
        error's ``kernel`` and ``entry`` name the offending kernel and entry.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import validate_stack
    >>> G = np.stack([np.eye(3), np.ones((3, 3))])
    >>> validate_stack(G) is G
    True
    >>> G[1, 0, 2] = 2.0
    >>> try:
    ...     validate_stack(G)
    ... except ValueError:
    ...     print("rejected")
    rejected
    """
    tol = check_real(rtol, "rtol", "finite and >= 0", lambda v: 0.0 <= v < math.inf)
    arr = check_stack(G)
    _core.validate_stack(arr, tol, check_n_threads(n_threads))
    return arr


def shift_to_psd(
    G: Any, *, max_shift: float = 1e-2, n_threads: int = 0
) -> tuple[NDArray[Any], NDArray[np.float64]]:
    """Repair a slightly indefinite precomputed stack: ``K_m + s_m I`` with ``s_m ≥ 0`` the
    smallest shift that makes ``K_m``, as stored, positive semi-definite (PSD) for the solvers.

    A stack rounded to float32, or assembled from noisy similarities, can have kernels whose
    smallest eigenvalue is slightly negative; a fit then finds a dual point that exploits it
    and has no certificate (:class:`~multikernel.exceptions.KernelNotPSDWarning`,
    docs/mathematics.md §1.8). This function is the explicit repair the estimators apply with
    ``psd="clip"``. For each kernel, with ``τ_m = (n + 2) ε₆₄ max_i K_m,ii`` the rounding unit
    of the solvers' quadratic forms (their witness needs ``ρᵀK_mρ < −4 τ_m ‖ρ‖₁²``):

    1. if ``K_m + 2τ_m I`` has a Cholesky factor in float64, ``s_m = 0`` and the kernel is
       left as it is: its eigenvalues are above ``−2τ_m``, where no dual point can show a
       witness;
    2. otherwise ``λ`` = the smallest eigenvalue of ``K_m`` (``numpy.linalg.eigvalsh`` in
       float64) and ``s_m = −λ + 4τ_m``, enlarged (by ``4τ_m``, doubling) until the shifted
       kernel as stored, minus ``τ_m I``, has a Cholesky factor: the stored kernel is then
       PSD with a margin of ``τ_m``, whatever the rounding of the shift. So
       ``−λ ≤ s_m ≤ −2λ + O(τ_m)``.

    The shift is a ridge on the training diagonal only: a model fitted on the result solves
    the problem of the kernels ``K_m + s_m I`` as stored, and the cross kernels between test
    and training points are unchanged. float32 diagonal entries are rounded up, so each moves
    by ``s_m`` plus less than one float32 unit of ``K_ii`` (``1.2e-7`` for a unit entry, which
    can exceed ``s_m`` itself: float32 cannot store a smaller ridge); float64 entries move by
    ``s_m`` to rounding. At a large ``C`` even such a ridge changes the optimum measurably (the
    model can fit each training point on its own). The upper triangle is read (what the
    solvers' quadratic forms read).

    Cost: one Cholesky factorisation of each kernel (``n³/3`` flops) and, for a kernel that
    needs a shift, an eigenvalue decomposition without vectors (about ``4n³/3`` more) and one
    or two more factorisations, each on an ``n × n`` float64 work array: 3.9 s on one core for
    ``M = 50`` float32 Gaussian kernels at ``n = 1000``, 32 of them shifted (0.7 s for the same
    kernels in float64, none shifted). The LAPACK routines run on NumPy's BLAS threads.

    Parameters
    ----------
    G : array-like of shape (M, n, n)
        Kernel stack, float64 or float32.
    max_shift : float, default 1e-2
        The largest repair allowed, relative to each kernel's largest diagonal entry: a kernel
        that needs ``s_m > max_shift · max_i K_m,ii`` is refused. Rounding cannot need that
        much: rounding the entries of a PSD kernel to float32 (by ``2⁻²⁴ = 6e-8`` of each
        at most) moves its eigenvalues by at most ``n · 6e-8 · max_i K_ii``, below 1 % of the
        diagonal for every ``n < 160 000``. A kernel that needs more is indefinite by
        construction (a sigmoid "kernel", an edit-distance similarity), and shifting it is a
        modelling decision: raise ``max_shift`` to take it.
    n_threads : int, default 0
        Threads of the stack's validation (:func:`validate_stack`), 0 or -1 = all cores
        (-k: all but k − 1); values above the number of cores are clipped to it.

    Returns
    -------
    G_psd : ndarray of shape (M, n, n)
        The repaired stack, of ``G``'s dtype (float32 stays float32). When no kernel needs a
        shift it is ``G`` itself as :func:`validate_stack` returns it (not copied); otherwise
        one copy of the stack.
    shifts : ndarray of shape (M,)
        ``s_m``, 0.0 exactly for the kernels left as they were.

    Raises
    ------
    ValueError
        A stack that :func:`validate_stack` rejects (e.g. a negative diagonal entry:
        :class:`~multikernel.exceptions.KernelNotPSDError`), a kernel that needs a shift
        above ``max_shift · max_i K_ii`` (:class:`~multikernel.exceptions.KernelNotPSDError`
        naming the kernel), or an invalid ``max_shift``
        (:class:`~multikernel.exceptions.InvalidParameterError`).

    See Also
    --------
    validate_stack : The necessary entry-wise conditions, checked first.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import shift_to_psd
    >>> v = np.array([1.0, 1.0, -1.0, -1.0]) / 2
    >>> K = 0.5 * np.ones((4, 4)) + 0.5 * np.eye(4) - 0.501 * np.outer(v, v)
    >>> round(float(np.linalg.eigvalsh(K)[0]), 9)  # passes validate_stack, yet indefinite
    -0.001
    >>> G_psd, shifts = shift_to_psd(np.stack([np.eye(4), K]))
    >>> shifts[0], bool(1e-3 <= shifts[1] < 1.001e-3)
    (np.float64(0.0), True)
    >>> bool(np.linalg.eigvalsh(G_psd[1]).min() >= 0.0)
    True
    """
    if isinstance(max_shift, bool) or not (
        isinstance(max_shift, numbers.Real) and 0.0 <= max_shift < math.inf
    ):
        raise InvalidParameterError(
            f"max_shift must be a finite number >= 0, got {max_shift!r}", parameter="max_shift"
        )
    arr = validate_stack(G, n_threads=n_threads)
    shifts = np.array([_psd_shift(K, m, float(max_shift)) for m, K in enumerate(arr)])
    if not shifts.any():
        return arr, shifts
    out = arr.copy()
    for m in np.flatnonzero(shifts):
        np.fill_diagonal(out[m], _shifted_diagonal(arr[m], float(shifts[m])))
    return out, shifts


def _shifted_diagonal(K: NDArray[Any], s: float) -> NDArray[Any]:
    """The diagonal of ``K + sI`` in ``K``'s dtype, float32 entries rounded up (so that each
    stored entry is shifted by at least ``s``)."""
    d = K.diagonal().astype(np.float64) + s
    if K.dtype != np.float32:
        return d
    d32 = d.astype(np.float32)
    return np.where(d32 < d, np.nextafter(d32, np.float32(np.inf)), d32)


def _factorizes(K: NDArray[Any], diagonal: NDArray[Any], delta: float) -> bool:
    """Whether ``K`` with ``diagonal + delta`` on its diagonal has a Cholesky factor in
    float64 (upper triangle read; float32 widens exactly)."""
    A = np.array(K, dtype=np.float64, order="F")
    np.fill_diagonal(A, diagonal.astype(np.float64) + delta)
    try:
        scipy.linalg.cholesky(A, lower=False, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return False
    return True


def _psd_shift(K: NDArray[Any], m: int, max_shift: float) -> float:
    """``s_m`` of :func:`shift_to_psd` for kernel ``m``."""
    top = max(float(K.diagonal().max()), 0.0)
    tau: float = (K.shape[0] + 2) * float(np.finfo(np.float64).eps) * top
    # A zero diagonal means a zero kernel (|K_ij| ≤ sqrt(K_ii K_jj), checked): PSD.
    if tau == 0.0 or _factorizes(K, K.diagonal(), 2.0 * tau):
        return 0.0
    lam = float(np.linalg.eigvalsh(K.astype(np.float64), UPLO="U")[0])
    s, step = max(-lam, 0.0) + 4.0 * tau, 4.0 * tau
    while s <= max_shift * top:
        if _factorizes(K, _shifted_diagonal(K, s), -tau):
            return s
        s, step = s + step, 2.0 * step
    raise KernelNotPSDError(
        f"kernel {m} has smallest eigenvalue {lam:.3e}: making it PSD needs a shift of "
        f"{s:.3e}, above max_shift = {max_shift:g} times its largest diagonal entry "
        f"{top:.3e}. That is no rounding error: the kernel is indefinite by construction. "
        "Repair it deliberately (shift_to_psd with a larger max_shift, or clip its negative "
        "eigenvalues) or use another kernel.",
        kernel=m,
    )


def quad_forms(G: Any, v: Any, *, n_threads: int = 0) -> NDArray[np.float64]:
    """``vᵀ K_m v`` for every kernel of a stack, in parallel (the hot loop of every solver).

    Parameters
    ----------
    G : ndarray of shape (M, n, n), float64 or float32
        Kernel stack (symmetric; only the upper triangle is read). Its finiteness is not
        checked (that would cost another read of the stack): see :func:`validate_stack`.
    v : array-like of shape (n,)
        Vector.
    n_threads : int, default 0
        Threads, 0 or -1 = all cores (-k: all but k − 1); values above the number of
        cores are clipped to it.

    Returns
    -------
    ndarray of shape (M,)
        ``vᵀ K_m v`` for each kernel, accumulated in float64.

    Raises
    ------
    ValueError
        ``G`` is not a stack of square kernels, or ``v`` is not 1-D of length n.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import quad_forms
    >>> G = np.stack([np.eye(3), np.ones((3, 3))])
    >>> quad_forms(G, np.array([1.0, 2.0, 3.0]))
    array([14., 36.])
    """
    arr = check_stack(G)
    vec = np.ascontiguousarray(np.asarray(v, dtype=np.float64))
    if vec.ndim != 1:
        raise InvalidInputError(f"v must be 1-D, got shape {vec.shape}")
    return _core.quad_forms(arr, vec, check_n_threads(n_threads))


@dataclass(frozen=True)
class LowRankFactors:
    """Pivoted incomplete Cholesky factors ``K_m ≈ factors[m] @ factors[m].T``.

    The result of :func:`low_rank`; the parameters are also its attributes.

    Parameters
    ----------
    factors : list of ndarray of shape (n, rank_m)
        The factor ``G_m`` of each kernel.
    ranks : ndarray of shape (M,)
        ``rank_m``, the number of columns of each factor.
    errors : ndarray of shape (M,)
        ``trace(K_m - G_m G_mᵀ) / trace(K_m)``, which also bounds
        ``||K_m - G_m G_mᵀ||_F / trace(K_m)``.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import low_rank
    >>> B = np.random.default_rng(0).normal(size=(6, 2))
    >>> res = low_rank(np.stack([B @ B.T, np.eye(6)]))
    >>> res.ranks
    array([2, 6])
    >>> bool(np.allclose(res.factors[0] @ res.factors[0].T, B @ B.T))
    True
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
        Symmetric PSD kernels (finiteness is not checked: see :func:`validate_stack`).
    tol : float, default 1e-6
        Relative trace error, in [0, 1).
    max_rank : int, optional
        Cap on the rank, an integer ≥ 1 (default n; larger values mean n).
    n_threads : int, default 0
        Threads, 0 or -1 = all cores (-k: all but k − 1); values above the number of
        cores are clipped to it.

    Returns
    -------
    LowRankFactors
        The factors, their ranks and their relative trace errors.

    Raises
    ------
    ValueError
        ``G`` is not a stack of square kernels, ``tol`` is outside [0, 1), or ``max_rank`` is
        not an integer ≥ 1.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Gaussian, gram, low_rank
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> res = low_rank(gram(X, [Gaussian(sigma=3.0)]), tol=1e-4)
    >>> bool(res.ranks[0] < 20), bool(res.errors[0] <= 1e-4)
    (True, True)
    """
    arr = np.ascontiguousarray(check_stack(G), dtype=np.float64)
    tol_f = float(tol)
    if not (0.0 <= tol_f < 1.0):
        raise InvalidParameterError(f"tol must be in [0, 1), got {tol!r}", parameter="tol")
    if max_rank is not None and (
        isinstance(max_rank, (bool, np.bool_))
        or not isinstance(max_rank, numbers.Integral)
        or max_rank < 1
    ):
        raise InvalidParameterError(
            f"max_rank must be None or an integer ≥ 1, got {max_rank!r}", parameter="max_rank"
        )
    rank = arr.shape[1] if max_rank is None else min(int(max_rank), arr.shape[1])
    factors, ranks, errors = _core.low_rank(arr, tol_f, rank, check_n_threads(n_threads))
    return LowRankFactors(factors=factors, ranks=np.asarray(ranks, dtype=np.int64), errors=errors)


def _centered(K: NDArray[Any]) -> NDArray[np.float64]:
    """``H K H`` of ``K`` divided by its largest absolute entry (alignments are
    scale-invariant; the division keeps tiny or huge kernels from under- or overflowing)."""
    Kd = np.asarray(K, dtype=np.float64)
    scale = float(np.abs(Kd).max())
    if scale > 0.0:
        Kd = Kd / scale
    r = Kd.mean(axis=1)
    out: NDArray[np.float64] = Kd - r[:, None] - r[None, :] + r.mean()
    return out


def alignment(G: Any, y: Any = None) -> NDArray[np.float64]:
    """Centred kernel alignment (Cortes et al.; Kloft et al. §5.3).

    ``A(K, L) = <K_c, L_c>_F / (||K_c||_F ||L_c||_F)`` with ``K_c = H K H`` the centred kernel.
    Alignments do not depend on the scale of a kernel or of ``y``: each is divided by its
    largest absolute entry first, so that tiny or huge kernels neither underflow nor
    overflow.

    Parameters
    ----------
    G : ndarray of shape (M, n, n)
        Kernel stack, finite.
    y : array-like of shape (n,), optional
        Targets, finite. When given, the kernel–target alignments ``A(K_m, y yᵀ)`` are
        returned.

    Returns
    -------
    ndarray of shape (M, M) when ``y`` is None, else of shape (M,)
        Alignments in [-1, 1]; a kernel that is zero after centring has alignment 0.

    Raises
    ------
    ValueError
        ``G`` is not a stack of square kernels, ``G`` or ``y`` has NaN or infinite entries
        (:class:`~multikernel.exceptions.NonFiniteError`), or ``y`` has not n entries.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import alignment
    >>> y = np.array([1.0, 1.0, -1.0, -1.0])
    >>> G = np.stack([np.outer(y, y), np.eye(4)])
    >>> alignment(G, y).round(3)
    array([1.   , 0.577])
    >>> alignment(G).round(3)
    array([[1.   , 0.577],
           [0.577, 1.   ]])
    """
    arr = check_stack(G)
    M, n, _ = arr.shape
    for m in range(M):
        finite = np.isfinite(arr[m])
        if not finite.all():
            i, j = (int(v) for v in np.argwhere(~finite)[0])
            raise NonFiniteError(
                f"kernel {m} of G contains NaN or infinity (first at entry ({i}, {j}))",
                kernel=m,
                entry=(i, j),
            )
    if y is not None:
        yv = np.asarray(y, dtype=np.float64).ravel()
        if yv.shape[0] != n:
            raise InvalidInputError(f"y has {yv.shape[0]} entries but the kernels are {n}×{n}")
        if not np.isfinite(yv).all():
            raise NonFiniteError(
                f"y contains NaN or infinity (first at entry {int(np.argmin(np.isfinite(yv)))})"
            )
        y_scale = float(np.abs(yv).max())
        yc = yv / y_scale if y_scale > 0.0 else yv
        yc = yc - yc.mean()
        ynorm = float(yc @ yc)  # ||(y yᵀ)_c||_F = ||H y||²
        # <K_c, y yᵀ> = (H y)ᵀ K_c (H y): one quadratic form per (scaled, centred) kernel.
        num = np.empty(M)
        norms = np.empty(M)
        for m in range(M):
            Kc = _centered(arr[m])
            num[m] = yc @ Kc @ yc
            norms[m] = np.linalg.norm(Kc)
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
