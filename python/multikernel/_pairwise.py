"""A precomputed kernel stack that scikit-learn's model selection slices pairwise:
:class:`PairwiseStack` (public as ``multikernel.kernels.PairwiseStack``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .exceptions import InvalidInputError

__all__ = ["PairwiseStack"]


class PairwiseStack:
    """A stack of ``M`` kernels that indexes like one kernel matrix whose entries are
    ``M``-vectors, so that scikit-learn's model selection splits it.

    ``GridSearchCV``, ``RandomizedSearchCV``, ``cross_val_score``, ``cross_validate``,
    ``learning_curve``, ``validation_curve``, ``permutation_test_score`` and ``Pipeline``
    slice the input of an estimator with ``kernels="precomputed"`` pairwise (the estimator's
    ``pairwise`` tag): the training kernels as ``X[np.ix_(train, train)]`` and the held-out
    cross kernels as ``X[np.ix_(test, train)]``, as for ``SVC(kernel="precomputed")``. A
    plain ``(M, n, n)`` array would be sliced on its kernel axis; wrapped, ``shape`` is
    ``(n_rows, n_cols)`` and an index ``X[rows, cols]`` (``np.ix_`` pairs, slices, index
    arrays) selects rows and columns of every kernel at once. A slice copies only the
    ``(M, len(rows), len(cols))`` block it selects (one gather, no intermediate), and the
    wrapped stack itself is read in place (a memory map stays one).

    The estimators (and :func:`multikernel.mkl_path`) read a ``PairwiseStack`` wherever they
    read a precomputed ``(M, n, n)`` stack or ``(M, n_test, n_train)`` cross kernels, with
    the same results.

    Parameters
    ----------
    G : array-like of shape (M, n_rows, n_cols)
        The kernels: training Gram matrices ``(M, n, n)`` or cross kernels. Wrapped without
        a copy when it is an array (float64 or float32 is read as it is by the fits).

    Attributes
    ----------
    kernels : ndarray of shape (M, n_rows, n_cols)
        The wrapped stack (``np.asarray(stack)`` gives it too).

    Raises
    ------
    InvalidInputError
        If ``G`` is not 3-D.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> from sklearn.model_selection import cross_val_score
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> G = mk.kernels.gram(X, [mk.kernels.Gaussian(sigma=2.0), mk.kernels.Linear()])
    >>> S = mk.kernels.PairwiseStack(G)
    >>> S.shape, S[np.ix_([0, 1, 2], [3, 4])].kernels.shape
    ((60, 60), (2, 3, 2))
    >>> clf = mk.MKLClassifier(kernels="precomputed", C=10.0)
    >>> cross_val_score(clf, S, y, cv=3).shape
    (3,)
    """

    __slots__ = ("kernels",)

    kernels: NDArray[Any]

    def __init__(self, G: Any) -> None:
        arr = G.kernels if isinstance(G, PairwiseStack) else np.asarray(G)
        if arr.ndim != 3:
            raise InvalidInputError(
                f"PairwiseStack takes a 3-D kernel stack (M, n_rows, n_cols), got shape {arr.shape}"
            )
        self.kernels = arr

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_rows, n_cols)``: the points of the rows and of the columns, as scikit-learn
        reads a kernel matrix (the number of kernels is ``kernels.shape[0]``)."""
        return int(self.kernels.shape[1]), int(self.kernels.shape[2])

    def __len__(self) -> int:
        return int(self.kernels.shape[1])

    def __getitem__(self, key: Any) -> PairwiseStack:
        """The rows and columns ``key`` of every kernel, as numpy indexes a 2-D array:
        ``S[rows]`` (all columns), ``S[rows, cols]``, ``S[np.ix_(rows, cols)]``."""
        index = key if isinstance(key, tuple) else (key,)
        if len(index) > 2:
            raise InvalidInputError(f"a PairwiseStack takes (rows, cols), got {len(index)} indices")
        rows, cols = (*index, slice(None)) if len(index) == 1 else index
        _, n_rows, n_cols = self.kernels.shape
        return PairwiseStack(
            take_block(self.kernels, _axis(rows, n_rows, 0), _axis(cols, n_cols, 1))
        )

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray[Any]:
        if dtype is None or np.dtype(dtype) == self.kernels.dtype:
            return self.kernels.copy() if copy else self.kernels
        return self.kernels.astype(dtype)

    def __repr__(self) -> str:
        M, r, c = self.kernels.shape
        return f"PairwiseStack(M={M}, n_rows={r}, n_cols={c}, dtype={self.kernels.dtype})"

    def __getstate__(self) -> NDArray[Any]:
        return self.kernels

    def __setstate__(self, state: NDArray[Any]) -> None:
        self.kernels = state


def _axis(key: Any, n: int, axis: int) -> NDArray[np.intp]:
    """The positions that ``key`` (an index array, a mask, a slice, or ``np.ix_``'s column
    ``(k, 1)`` for rows, row ``(1, l)`` for columns) selects on an axis of ``n``."""
    idx: NDArray[np.intp] = np.asarray(np.arange(n)[key], dtype=np.intp)
    if idx.ndim == 2 and idx.shape[1 - axis] == 1:
        idx = idx.ravel()
    if idx.ndim != 1:
        raise InvalidInputError(
            "a PairwiseStack index must keep rows and columns: index arrays, masks, slices "
            f"or np.ix_(rows, cols), not {key!r}"
        )
    return idx


def take_block(G: NDArray[Any], rows: NDArray[np.intp], cols: NDArray[np.intp]) -> NDArray[Any]:
    """``G[:, rows][:, :, cols]`` as one C-contiguous array, gathered kernel by kernel with
    no ``(M, len(rows), n)`` intermediate (three times faster on a ``(10, 2000, 2000)``
    stack)."""
    out = np.empty((G.shape[0], len(rows), len(cols)), dtype=G.dtype)
    block = np.ix_(rows, cols)
    for m in range(G.shape[0]):
        out[m] = G[m][block]
    return out


def unwrap(X: Any) -> Any:
    """The ``(M, n_rows, n_cols)`` array of a :class:`PairwiseStack`, else ``X`` itself."""
    return X.kernels if isinstance(X, PairwiseStack) else X
