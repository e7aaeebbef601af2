"""Explicit feature maps (:class:`FeatureBank`): random Fourier or Nyström features whose
inner products approximate the kernels, so that a kernel is the low-rank factor
``Φ_m Φ_mᵀ`` and no ``n × n`` matrix is formed."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias, cast

import numpy as np
import scipy.sparse
from numpy.typing import DTypeLike, NDArray

from .. import _core
from .._validation import (
    Points,
    aligned,
    check_features,
    check_n_threads,
    check_random_state,
    check_sparse,
    column_names,
    is_sparse,
    sparse_refused,
)
from ..exceptions import InvalidInputError, InvalidParameterError, NotFittedError
from ._banks import _bank_repr, _check_same_columns, _is_float32
from ._sequence import WeightedDegree, _engine_entries, _points_for, _SequenceKernel
from ._specs import (
    Callable,
    Gaussian,
    Kernel,
    Laplacian,
    Linear,
    _check_specs,
    _named,
    _resolve_columns,
    _SpecTuple,
)

__all__ = ["FeatureBank", "FeatureMethod"]


#: How :class:`FeatureBank` approximates a kernel (``method=``).
FeatureMethod: TypeAlias = Literal["nystroem", "rff"]


class FeatureBank:
    """Explicit feature maps ``φ_m`` with ``φ_m(x)ᵀφ_m(x') ≈ k_m(x, x')``, one per spec.

    A fitted bank turns ``n`` points into ``M`` feature blocks ``Φ_m`` of shape
    ``(n, D_m)``, so a kernel is the low-rank factor ``Φ_m Φ_mᵀ`` and no ``n×n`` matrix is
    formed. ``Linear`` specs get their own columns (exact), and the sequence kernels their
    exact features as sparse CSR blocks (:class:`Spectrum`: the k-mer counts;
    :class:`WeightedDegree` without shifts: the position-specific substrings of lengths
    ``1..d`` weighted ``sqrt(β_k)``; columns are the substrings seen at fit, unseen ones are
    dropped from new strings: docs/guide.md §7, "Sequences at scale"). The others get random
    Fourier features (``method="rff"``, Gaussian and Laplacian only: unbiased, error
    ``~ 1/sqrt(D)``) or Nyström features (``method="nystroem"``, any kernel:
    ``φ(x) = R⁻¹k(P, x)`` with landmarks ``P`` and ``K_PP = RRᵀ``; exact on the landmarks).
    Pass it as ``kernels=`` to the estimators to fit on the low-rank stack.

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
    normalize : {"mean_diag", "trace", "none", "spherical"} or None, default "mean_diag"
        Scale each block so that the approximate training kernel has unit mean diagonal (or
        unit trace); the scale is kept and applied to new points. ``"spherical"`` (sequence
        kernels only) divides each row by ``sqrt(k(s, s))``, the cosine normalisation of the
        Gram matrices.
    random_state : int or None, default None
        Seed (≥ 0) of the random Fourier features and of uniform landmarks (None: 0).
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Type of the returned blocks: float32 halves their memory (computed in float64, then
        rounded); the solvers compute in float64 either way.
    n_threads : int, default 0
        Threads of the engine, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or
        ``OMP_NUM_THREADS`` when that is set (joblib's workers set it to their share); ``-k`` all
        but ``k − 1``; ``k > 0`` that many, clipped to the available cores.

    Raises
    ------
    InvalidParameterError
        An unknown ``method``, ``landmarks`` or ``normalize``, ``n_components < 1``, a
        non-integer ``random_state``, ``method="rff"`` for a kernel that is not
        shift-invariant, a :class:`Callable` (no feature map), a :class:`WeightedDegree`
        with ``shift > 0`` (no finite explicit feature map), or sequence kernels beside
        vector kernels (a bank reads strings or numbers).

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
    feature_names_in_ : ndarray of str
        The column names of a training DataFrame (absent otherwise): the kernels' column
        names are resolved against them, and ``transform`` refuses a DataFrame whose
        columns differ.

    Examples
    --------
    >>> import numpy as np
    >>> from multikernel.kernels import FeatureBank, Gaussian, Linear
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> bank = FeatureBank([Gaussian(sigma=1.0), Linear(features=[0])], n_components=20)
    >>> [F.shape for F in bank.fit_transform(X)]
    [(50, 20), (50, 1)]
    >>> from multikernel.kernels import Spectrum
    >>> F, = FeatureBank([Spectrum(k=3)], normalize="none").fit_transform(["GATTACA", "TACAGAT"])
    >>> F.format, F.shape, (F @ F.T).toarray().tolist()  # k-mer counts: the spectrum kernel
    ('csr', (2, 7), [[5.0, 3.0], [3.0, 5.0]])
    """

    params_: list[dict[str, Any]]
    n_features_in_: int

    def __init__(
        self,
        specs: Sequence[Kernel],
        *,
        method: FeatureMethod = "nystroem",
        n_components: int = 100,
        landmarks: Literal["pivoted", "uniform"] = "pivoted",
        normalize: Literal["mean_diag", "trace", "none", "spherical"] | None = "mean_diag",
        random_state: int | None = None,
        dtype: DTypeLike = np.float64,
        n_threads: int = 0,
    ) -> None:
        self.specs: list[Kernel] = _check_specs(specs)
        _check_sequence_specs(self.specs)
        for m, s in enumerate(self.specs):
            if isinstance(s, Callable):
                raise InvalidParameterError(
                    f"kernel {m}, {s!r}, has no feature map: random Fourier features need a "
                    "shift-invariant kernel the engine knows, and the engine does not evaluate "
                    "Python functions for Nyström features; pass the specifications as "
                    "kernels=[...] (exact Gram matrices) instead",
                    parameter="specs",
                )
        # Column names resolve at fit, against the columns of X (:meth:`_resolve`).
        self._tuples = [] if _named(self.specs) else [s._to_tuple() for s in self.specs]
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
        sequences = _is_sequence_bank(self.specs)
        if norm not in ("mean_diag", "trace", "none") and not (sequences and norm == "spherical"):
            also = " ('spherical' for sequence kernels only)" if norm == "spherical" else ""
            raise InvalidParameterError(
                f"normalize must be 'mean_diag', 'trace', 'none' or None{also}, got {normalize!r}",
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

    def __repr__(self) -> str:
        widths = getattr(self, "n_components_", None)
        return _bank_repr(
            "FeatureBank", self.specs,
            {"method": self.method, "n_components": self.n_components,
             "normalize": self.normalize, "dtype": self.dtype.name},
            None if widths is None else f"fitted, {int(widths.sum())} features",
        )  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled (e.g. on a Dask worker): the engine needs aligned arrays.
        self.__dict__.update(aligned(state))

    def __len__(self) -> int:
        return len(self.specs)

    def _shallow_copy(self) -> FeatureBank:
        """A copy sharing every attribute (without ``__setstate__``'s alignment pass): the
        specs are frozen and fitting assigns new attributes, never mutates them."""
        bank = object.__new__(FeatureBank)
        bank.__dict__.update(self.__dict__)
        return bank

    def fit(self, X: Any) -> FeatureBank:
        """Fit the maps (and the normalisation) on the training points ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points; a ``numpy.memmap`` is read in row batches (pivoted Nyström
            landmarks read it whole, as float64); a ``scipy.sparse`` matrix when every
            kernel is :class:`Linear` (docs/guide.md, "Sparse data"); strings (a 1-D array
            or list, or a DataFrame's string columns) for sequence kernels.

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
        if _is_sequence_bank(self.specs):
            self._sequence_blocks(X, fit=True)
            return self
        if is_sparse(X):
            self._fit_sparse(X)
            return self
        self._resolve(X)
        rows = _feature_rows(X)
        self._fit_maps(rows)
        sq: list[NDArray[np.float64]] = []
        for batch in _batches(rows.shape[0], int(self.n_components_.sum())):
            sq.append(self._row_squares(self._raw_rows(rows, batch)))
        self._set_scales(sq, rows.shape[0])
        return self

    def fit_transform(self, X: Any) -> list[NDArray[Any]]:
        """Fit the maps on ``X`` and return its feature blocks.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points (``scipy.sparse`` when every kernel is :class:`Linear`; strings
            for sequence kernels).

        Returns
        -------
        list of ndarray of shape (n_samples, D_m)
            One block per kernel, normalised: consecutive column ranges of one row-major
            ``(n_samples, n_components_.sum())`` array, which the solvers read in place;
            for sparse ``X``, CSR matrices (each the columns its kernel reads, scaled); for
            sequence kernels, CSR matrices of their exact features.
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
        if _is_sequence_bank(self.specs):
            return self._sequence_blocks(X, fit=True)
        if is_sparse(X):
            return self._sparse_blocks(self._fit_sparse(X))
        self._resolve(X)
        rows = _feature_rows(X)
        self._fit_maps(rows)
        n, width = rows.shape[0], int(self.n_components_.sum())
        out = np.empty((n, width), dtype=self.dtype)
        if self.normalize == "none":
            # No statistics and no scaling pass: the features go straight into place.
            for batch in _batches(n, width):
                self._raw_rows(rows, batch, into=out[batch])
            self._set_scales([], n)
            return self._split(out)
        sq: list[NDArray[np.float64]] = []
        for batch in _batches(n, width):
            raw = self._raw_rows(rows, batch)
            sq.append(self._row_squares(raw))
            out[batch] = raw
        self._set_scales(sq, n)
        for batch in _batches(n, width):
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
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            New points (a ``numpy.memmap`` is read batch by batch; a ``scipy.sparse``
            matrix when every kernel is :class:`Linear`, whose blocks are then CSR
            matrices; strings for sequence kernels, CSR blocks too).
        out : ndarray of shape ``(n_samples, n_components_.sum())``, optional
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
        _check_same_columns(X, getattr(self, "feature_names_in_", None))
        if _is_sequence_bank(self.specs):
            if out is not None:
                raise InvalidParameterError(
                    "out= takes dense blocks; the blocks of sequence kernels are sparse matrices",
                    parameter="out",
                )
            return self._sequence_blocks(X, fit=False)
        if is_sparse(X):
            if out is not None:
                raise InvalidParameterError(
                    "out= takes the dense blocks of dense points; the blocks of sparse X are "
                    "sparse matrices",
                    parameter="out",
                )
            Xc = self._sparse_points(X)
            if Xc.shape[1] != self.n_features_in_:
                raise InvalidInputError(
                    f"X has {Xc.shape[1]} features but the bank was fitted on {self.n_features_in_}"
                )
            return self._sparse_blocks(Xc)
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
        unit = bool(np.all(scales == 1.0))  # (normalize="none"): x · 1 is x, the same bits
        for batch in _batches(n, width):
            if unit:
                self._raw_rows(rows, batch, into=out[batch])
            else:
                out[batch] = self._raw_rows(rows, batch) * scales
        return self._split(out)

    def _with_columns(self, names: list[str] | None) -> FeatureBank:
        """A copy whose kernels read columns by index, their names resolved against
        ``names`` (the columns of the estimators' ``X``, which the copy is fitted without).
        Shallow: the specs are frozen and fitting assigns new attributes, never mutates."""
        bank = self._shallow_copy()
        bank.specs = _resolve_columns(self.specs, names)
        bank._tuples = [s._to_tuple() for s in bank.specs]
        return bank

    def _resolve(self, X: Any) -> None:
        """The engine's kernels with their column names resolved against ``X``'s columns,
        and those names (``feature_names_in_``)."""
        names = column_names(X)
        self._tuples = [s._to_tuple() for s in _resolve_columns(self.specs, names)]
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _sparse_points(self, X: Any) -> Any:
        """Sparse ``X`` as a checked CSR matrix, when every map is linear: the others (random
        Fourier, Nyström) need dense rows, and are refused naming the kernel."""
        for m, spec in enumerate(self.specs):
            if not isinstance(spec, Linear):
                # (Only the linear maps take sparse X: docs/guide.md, "Sparse data".)
                raise sparse_refused(f"FeatureBank's {self.method} map of kernel {m}, {spec!r},")
        return check_sparse(X)

    def _fit_sparse(self, X: Any) -> Any:
        """Fit the linear maps and their scales on sparse ``X`` (:meth:`_sparse_points`);
        return ``X`` checked. The scales are the dense path's: from each block's row
        squares, summed exactly."""
        self._resolve(X)
        Xc = self._sparse_points(X)
        self._fit_maps(Xc)  # linear maps read the shape only
        self.scales_ = np.ones(len(self.params_))
        blocks = self._sparse_blocks(Xc, scaled=False)
        sq = np.stack([np.asarray(B.multiply(B).sum(axis=1)).ravel() for B in blocks], 1)
        self._set_scales([sq], Xc.shape[0])
        return Xc

    def _sparse_blocks(self, X: Any, scaled: bool = True) -> list[Any]:
        """The feature blocks of checked sparse ``X`` for linear maps: each block the
        columns its kernel reads, scaled, as a CSR matrix of the bank's ``dtype`` (never a
        dense copy of ``X``)."""
        csc = X.tocsc()  # (column selection reads the selected columns only)
        out: list[Any] = []
        for p, s in zip(self.params_, self.scales_, strict=True):
            B = csc[:, np.asarray(p["cols"], dtype=np.intp)].tocsr()
            if scaled and s != 1.0:
                B = B * s
            out.append(B.astype(self.dtype, copy=False))
        return out

    def _sequence_blocks(self, X: Any, fit: bool) -> list[Any]:
        """The exact feature blocks of the sequence kernels on ``X`` (strings), as CSR
        matrices of the bank's ``dtype``: k-mer counts for :class:`Spectrum`,
        position-specific substrings weighted ``sqrt(β_k)`` for :class:`WeightedDegree`
        (docs/mathematics.md §7). ``fit`` numbers the substrings of ``X`` (``params_``) and
        sets the scales; otherwise a substring unseen at fit is dropped, which the fitted
        models' weights (spanned by the training rows) never read.

        Scaled as the Gram matrices of the same kernels are: one factor per block from the
        training rows (``mean_diag``, ``trace``), or each row divided by its norm
        (``spherical``: ``k(s, t) / sqrt(k(s, s) k(t, t))``, with ``k(s, s)`` of every
        substring of ``s``, unseen ones included)."""
        if fit:
            self._resolve(X)
        specs = _resolve_columns(self.specs, column_names(X))
        points = _points_for(specs, X)
        if not isinstance(points, Points):  # (_points_for refuses X without strings)
            raise InvalidInputError("the sequence kernels read strings")
        entries = [cast(_SpecTuple, e) for e in _engine_entries(specs, points)]
        if not fit and points.shape[1] != self.n_features_in_:
            raise InvalidInputError(
                f"X has {points.shape[1]} columns but the bank was fitted on {self.n_features_in_}"
            )
        params: list[dict[str, Any]] = []
        blocks: list[Any] = []
        squares: list[NDArray[np.float64]] = []
        for m, t in enumerate(entries):
            col = points.sequences[cast(list[int], t[4])[0]]
            vocab = None if fit else _vocabulary(self.params_[m])
            csr, sq, fitted = _core.sequence_features(
                (col.data, col.offsets), t, vocab, self.n_threads
            )
            if fitted is not None:
                params.append(_sequence_params(fitted))
            blocks.append(_csr(csr, len(col)))
            squares.append(sq)
        if fit:
            self.params_ = params
            self.n_components_ = np.array([B.shape[1] for B in blocks], dtype=np.intp)
            self.n_features_in_ = points.shape[1]
            if self.normalize == "spherical":
                self.scales_ = np.ones(len(blocks))
            else:
                self._set_scales([np.stack(squares, 1)], points.shape[0])
        for B, sq, s in zip(blocks, squares, self.scales_, strict=True):
            if self.normalize == "spherical":
                norms = np.sqrt(sq)
                inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
                B.data *= np.repeat(inv, np.diff(B.indptr))
            elif s != 1.0:
                B.data *= s
        return [B.astype(self.dtype, copy=False) for B in blocks]

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

    def _linear_runs(self) -> list[tuple[slice, slice]]:
        """The linear kernels' columns of ``X`` and of the features, as slice runs."""
        src: list[int] = []
        dst: list[int] = []
        for p, c in zip(self.params_, self._columns(), strict=True):
            if p["kind"] == "linear":
                src += [int(v) for v in p["cols"]]
                dst += range(c.start, c.stop)
        return _runs(src, dst)

    def _columns(self) -> list[slice]:
        ends = np.cumsum(self.n_components_)
        return [slice(int(e - w), int(e)) for e, w in zip(ends, self.n_components_, strict=True)]

    def _column_scales(self) -> NDArray[np.float64]:
        return np.repeat(self.scales_, self.n_components_)

    def _split(self, F: NDArray[Any]) -> list[NDArray[Any]]:
        return [F[:, c] for c in self._columns()]

    def _raw_rows(
        self, X: NDArray[Any], batch: slice, into: NDArray[Any] | None = None
    ) -> NDArray[Any]:
        """The unscaled features ``(rows, n_components_.sum())`` of the rows ``batch``, in
        ``into`` when given (cast to its dtype), else in a new float64 array."""
        Xb = X[batch]
        linear = into is not None and all(p["kind"] == "linear" for p in self.params_)
        if not (linear and _finite_floats(Xb)):
            # (A linear map copies columns: float points are read in their own type, the
            # features cast once; others, or points with NaN, as float64 through the check.)
            Xb = check_features(Xb, row_offset=batch.start or 0)
        out = np.empty((Xb.shape[0], int(self.n_components_.sum()))) if into is None else into
        for src, dst in self._linear_runs():
            out[:, dst] = Xb[:, src]
        for m, (p, c) in enumerate(zip(self.params_, self._columns(), strict=True)):
            t = self._tuples[m]
            if p["kind"] == "linear":
                continue
            if p["kind"] == "rff":
                out[:, c] = _core.fourier_features(Xb, t, p["W"], p["b"], self.n_threads)
            else:
                out[:, c] = _core.nystroem_features(
                    Xb, p["landmarks"], t, p["R"], self.n_threads
                )  # fmt: skip
        return out


def _is_sequence_bank(specs: Sequence[Kernel]) -> bool:
    """Whether ``specs`` are sequence kernels (:func:`_check_sequence_specs`: then all)."""
    return any(isinstance(s, _SequenceKernel) for s in specs)


def _check_sequence_specs(specs: Sequence[Kernel]) -> None:
    """Refuse sequence kernels beside other kernels (the blocks of a bank read one kind of
    points), and a :class:`WeightedDegree` with shifts (no finite explicit map)."""
    seq = [m for m, s in enumerate(specs) if isinstance(s, _SequenceKernel)]
    if seq and len(seq) < len(specs):
        other = next(m for m in range(len(specs)) if m not in seq)
        raise InvalidParameterError(
            f"kernel {seq[0]}, {specs[seq[0]]!r}, is a sequence kernel and kernel {other}, "
            f"{specs[other]!r}, is not: a FeatureBank holds sequence kernels only (exact "
            "sparse features of strings) or vector kernels only; pass the specifications as "
            "kernels=[...] to combine them (Gram matrices)",
            parameter="specs",
        )
    for m in seq:
        s = specs[m]
        if isinstance(s, WeightedDegree) and s.shift > 0:
            raise InvalidParameterError(
                f"kernel {m}, {s!r}, has no explicit feature map: the shifted weighted-degree "
                "kernel compares substrings at different positions, which no finite map of "
                "position-specific substrings reproduces; use shift=0 in a FeatureBank, or "
                "pass the specification as kernels=[...] (Gram matrices)",
                parameter="specs",
            )


def _sequence_params(fitted: Any) -> dict[str, Any]:
    """The fitted map of a sequence kernel: its vocabulary as the engine returned it."""
    kmers, offsets, positions, length = fitted
    return {
        "kind": "sequence",
        "kmers": kmers,
        "offsets": offsets,
        "positions": positions,
        "length": int(length),
    }


def _vocabulary(p: dict[str, Any]) -> tuple[Any, Any, Any, int]:
    """The vocabulary of a fitted sequence map as the engine takes it."""
    return (p["kmers"], p["offsets"], p["positions"], int(p["length"]))


def _csr(arrays: tuple[Any, Any, Any, int], n: int) -> Any:
    """The CSR matrix of the engine's arrays ``(data, indices, indptr, n_cols)``."""
    data, indices, indptr, width = arrays
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, int(width)))


def _finite_floats(X: Any) -> bool:
    """Whether ``X`` is a finite 2-D float32 or float64 array (read as it is)."""
    return (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.dtype in (np.float32, np.float64)
        and min(X.shape) > 0
        and bool(np.isfinite(X).all())
    )


def _runs(src: list[int], dst: list[int]) -> list[tuple[slice, slice]]:
    """``src → dst`` column copies as maximal runs where both advance by one: a slice copy
    each (a linear bank on consecutive groups is one), no fancy-indexing temporary."""
    runs: list[tuple[slice, slice]] = []
    k = 0
    while k < len(src):
        j = k + 1
        while j < len(src) and src[j] == src[j - 1] + 1 and dst[j] == dst[j - 1] + 1:
            j += 1
        runs.append((slice(src[k], src[j - 1] + 1), slice(dst[k], dst[j - 1] + 1)))
        k = j
    return runs


def _map_width(p: dict[str, Any]) -> int:
    """``D_m``: the columns a fitted map produces."""
    if p["kind"] == "linear":
        return len(p["cols"])
    if p["kind"] == "rff":
        return int(len(p["b"]))
    if p["kind"] == "sequence":
        return int(len(p["offsets"]) - 1)
    return int(p["landmarks"].shape[0])


def _feature_rows(X: Any) -> NDArray[Any]:
    """``X`` as a 2-D array whose rows are converted (and checked) batch by batch: arrays,
    memmaps included, are kept as they are; anything else becomes float64."""
    if is_sparse(X):
        raise sparse_refused("FeatureBank's maps other than Linear")
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


def _batches(n: int, width: int) -> list[slice]:
    """:func:`_row_batches` as the package holds it at the call: the tests force small batches
    by patching ``multikernel.kernels._row_batches``, the name from before the package."""
    from . import _row_batches as row_batches

    return row_batches(n, width)
