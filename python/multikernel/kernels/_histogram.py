"""Kernel specifications on histograms, counts and sets (non-negative features):
:class:`Chi2`, :class:`Intersection`, :class:`Hellinger` and :class:`Tanimoto`. Like the
vector kernels of ``_specs`` they compute nothing themselves; the engine evaluates them in
Rust, wherever the vector kernels work (:func:`gram`, :class:`KernelBank`, kernels on demand,
:class:`FeatureBank` with ``method="nystroem"``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ._specs import Features, Kernel, _features, _flist, _positive, _SpecTuple

__all__ = ["Chi2", "Hellinger", "Intersection", "Tanimoto"]


@dataclass(frozen=True)
class Chi2(Kernel):
    """Exponential χ² kernel ``k(x, x') = exp(-gamma Σ_k (x_k - x'_k)² / (x_k + x'_k))``.

    The kernel of scikit-learn's ``sklearn.metrics.pairwise.chi2_kernel``, for histograms
    (non-negative features); a term with ``x_k + x'_k = 0`` counts 0. It is positive
    definite on non-negative vectors, with ``k(x, x) = 1``. Computed in Rust, in parallel,
    with AVX2 where the CPU has it.

    Parameters
    ----------
    gamma : float, default 1.0
        Positive scale of the χ² distance (scikit-learn's ``gamma``).
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit (the estimators keep
        them in ``feature_names_in_``); indices and names may be mixed.

    Raises
    ------
    ValueError
        ``gamma`` is not a positive finite number, or ``features`` is invalid. At
        evaluation, :class:`~multikernel.exceptions.InvalidInputError` names the column of a
        negative entry among the columns the kernel reads (training or new rows).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.metrics.pairwise import chi2_kernel
    >>> from multikernel.kernels import Chi2, gram
    >>> X = np.array([[0.2, 0.8, 0.0], [0.5, 0.5, 0.0], [0.0, 0.1, 0.9]])
    >>> bool(np.allclose(gram(X, [Chi2(gamma=0.5)])[0], chi2_kernel(X, gamma=0.5)))
    True
    """

    gamma: float = 1.0
    features: Features | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "gamma", _positive("gamma", self.gamma))
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("chi2", self.gamma, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class _ColumnsOnly(Kernel):
    """A histogram kernel whose only setting is its columns; ``_kind`` names it to the engine."""

    _kind: ClassVar[str]
    features: Features | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", _features(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return (self._kind, 0.0, 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class Intersection(_ColumnsOnly):
    """Histogram intersection kernel ``k(x, x') = Σ_k min(x_k, x'_k)``.

    Positive semidefinite on non-negative features (Swain & Ballard; Barla et al.), with
    ``k(x, x) = Σ_k x_k``.

    Parameters
    ----------
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit; indices and names
        may be mixed.

    Raises
    ------
    ValueError
        ``features`` is invalid. At evaluation,
        :class:`~multikernel.exceptions.InvalidInputError` names the column of a negative
        entry among the columns the kernel reads.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Intersection, gram
    >>> X = np.array([[1.0, 3.0, 0.0], [2.0, 1.0, 4.0]])
    >>> gram(X, [Intersection()])[0]
    array([[4., 2.],
           [2., 7.]])
    """

    _kind: ClassVar[str] = "intersection"


@dataclass(frozen=True)
class Hellinger(_ColumnsOnly):
    """Hellinger (Bhattacharyya) kernel ``k(x, x') = Σ_k sqrt(x_k x'_k)``.

    The linear kernel of the square roots of the features, so PSD, with
    ``k(x, x) = Σ_k x_k``; for normalised histograms (``Σ x = 1``) it is the Bhattacharyya
    coefficient, and ``sqrt(2 - 2 k)`` is proportional to the Hellinger distance. The engine
    computes it as a matrix product of ``sqrt(X)``.

    Parameters
    ----------
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit; indices and names
        may be mixed.

    Raises
    ------
    ValueError
        ``features`` is invalid. At evaluation,
        :class:`~multikernel.exceptions.InvalidInputError` names the column of a negative
        entry among the columns the kernel reads.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Hellinger, gram
    >>> X = np.array([[0.25, 0.75], [1.0, 0.0]])
    >>> gram(X, [Hellinger()])[0]
    array([[1. , 0.5],
           [0.5, 1. ]])
    """

    _kind: ClassVar[str] = "hellinger"


@dataclass(frozen=True)
class Tanimoto(_ColumnsOnly):
    """Tanimoto (min–max) kernel ``k(x, x') = Σ_k min(x_k, x'_k) / Σ_k max(x_k, x'_k)``.

    On binary vectors (sets, molecular fingerprints) it is Jaccard's similarity
    ``|x ∧ x'| / |x ∨ x'|``; on non-negative counts, the min–max kernel. Two zero vectors
    have similarity 1 (``0/0`` counts as 1), a zero vector and another 0. PSD on non-negative
    features, with ``k(x, x) = 1``.

    Parameters
    ----------
    features : sequence of int or str, optional
        Columns of ``X`` the kernel reads; all columns when None. Names (str) are the
        columns of a pandas DataFrame ``X``, resolved to indices at fit; indices and names
        may be mixed.

    Raises
    ------
    ValueError
        ``features`` is invalid. At evaluation,
        :class:`~multikernel.exceptions.InvalidInputError` names the column of a negative
        entry among the columns the kernel reads.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import Tanimoto, gram
    >>> X = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [0, 0, 0, 0]], dtype=float)
    >>> gram(X, [Tanimoto()])[0]
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0. ],
           [0. , 0. , 1. ]])
    """

    _kind: ClassVar[str] = "tanimoto"


def _from_histogram_tuple(t: _SpecTuple) -> Kernel | None:
    """The histogram kernel of the engine's tuple ``t``, None for another kind."""
    kind, a, _, _, feats = t
    if kind == "chi2":
        return Chi2(gamma=a, features=feats)
    if kind == "intersection":
        return Intersection(features=feats)
    if kind == "hellinger":
        return Hellinger(features=feats)
    if kind == "tanimoto":
        return Tanimoto(features=feats)
    return None
