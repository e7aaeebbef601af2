"""Kernel banks: specifications evaluated on training points, with the normalisation
statistics kept so that new points get cross kernels normalised the same way
(:class:`KernelBank`), and the standard lists of specifications (:func:`simplemkl_bank`,
:func:`view_bank`). The Dask path of a bank lives in ``multikernel._dask``, which the bank
calls through :meth:`KernelBank._dask_job` and which never touches the bank itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

import numpy as np
import scipy.sparse
from numpy.typing import DTypeLike, NDArray

from .. import _core, _dask, _progress
from .._typing import Normalization
from .._validation import (
    CheckedPoints,
    Points,
    aligned,
    check_features,
    check_n_threads,
    check_sample_weight,
    check_verbose,
    column_names,
    engine_sparse,
    is_sparse,
    sparse_refused,
)
from ..exceptions import InternalError, InvalidInputError, InvalidParameterError, NotFittedError
from ._histogram import Chi2, Hellinger, Intersection, _from_histogram_tuple
from ._sequence import _engine_entries, _points_for
from ._specs import (
    Callable,
    Gaussian,
    Kernel,
    Laplacian,
    Linear,
    Polynomial,
    _check_specs,
    _Entry,
    _features,
    _positive,
    _resolve_columns,
    _SpecTuple,
)

__all__ = ["SIMPLEMKL_WIDTHS", "KernelBank", "simplemkl_bank", "view_bank"]


_NORMALIZATIONS: tuple[str, ...] = get_args(Normalization)

#: The 24 Gaussian widths of the SimpleMKL and SpicyMKL experiments.
SIMPLEMKL_WIDTHS: tuple[float, ...] = (
    0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0,
)  # fmt: skip


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


def _from_tuple(t: _SpecTuple) -> Kernel:
    """The specification of the engine's tuple ``t`` (a bank's kernels, as the engine lists
    them)."""
    kind, a, b, c, feats = t
    if kind == "linear":
        return Linear(features=feats)
    if kind == "polynomial":
        return Polynomial(degree=int(a), coef0=b, scale=c, features=feats)
    if kind == "gaussian":
        return Gaussian(sigma=a, features=feats)
    if kind == "laplacian":
        return Laplacian(sigma=a, features=feats)
    histogram = _from_histogram_tuple(t)
    if histogram is not None:
        return histogram
    raise InternalError(f"the engine returned a kernel specification of unknown kind {kind!r}")


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
    chi2: Sequence[float] = (),
    intersection: bool = False,
    hellinger: bool = False,
) -> tuple[list[Kernel], list[int]]:
    """Kernels per named view (a set of columns) and the group of each: the input of
    ``penalty="group"`` (Nath et al.'s multi-view setting: sparse within a view, every
    view used). Views of histograms (image descriptors, bags of words) take the histogram
    kernels: exponential χ² kernels of several ``gamma`` (Nath et al.'s Gaussians of χ²
    distances), the intersection and the Hellinger kernel.

    Parameters
    ----------
    views : mapping of str to sequence of int or str
        Each view's columns of ``X``, in the order the groups are numbered (e.g.
        ``{"gene": range(0, 120), "lipid": range(120, 141)}``), by index or by the name of
        a DataFrame's column (resolved at fit, as the kernels' ``features``).
    widths : sequence of float, default (0.5, 1, 2, 5, 10)
        Gaussian widths sigma, one kernel each per view. Distances grow with the number of
        columns: for standardised columns, widths near ``sqrt(len(columns))`` are the
        typical scale.
    degrees : sequence of int, default ()
        Polynomial degrees (``(<x, x'> + 1) ** d``), one kernel each per view.
    linear : bool, default False
        Also a linear kernel per view.
    chi2 : sequence of float, default ()
        Scales ``gamma`` of exponential χ² kernels (:class:`Chi2`), one kernel each per
        view; a view's columns must then be non-negative.
    intersection : bool, default False
        Also an intersection kernel (:class:`Intersection`) per view.
    hellinger : bool, default False
        Also a Hellinger kernel (:class:`Hellinger`) per view.

    Returns
    -------
    specs : list of Kernel
        Per view, in the order of ``views``: the Gaussians, the polynomials, the linear
        kernel, the χ² kernels, the intersection and the Hellinger kernel.
    groups : list of int
        The view (group) index of every specification, for ``groups=``.

    Raises
    ------
    ValueError
        ``views`` is not a mapping, no view, a view without columns or with a negative
        index or a column neither an integer nor a string, a width or χ² scale that is not
        positive, a degree that is not a positive integer, or no kernel per view.

    Examples
    --------
    >>> from multikernel.kernels import view_bank
    >>> specs, groups = view_bank({"a": [0, 1], "b": [2]}, widths=[1.0, 2.0], linear=True)
    >>> groups
    [0, 0, 0, 1, 1, 1]
    >>> specs[2], specs[3]
    (Linear(features=(0, 1)), Gaussian(sigma=1.0, features=(2,)))
    >>> view_bank({"size": ["mean radius", "mean area"]}, widths=[1.0])[0]
    [Gaussian(sigma=1.0, features=('mean radius', 'mean area'))]
    >>> view_bank({"colour": range(3)}, widths=[], chi2=[0.5], hellinger=True)[0]
    [Chi2(gamma=0.5, features=(0, 1, 2)), Hellinger(features=(0, 1, 2))]
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
    gs = [_positive("chi2", g) for g in chi2]
    if not ws and not ds and not linear and not gs and not intersection and not hellinger:
        raise InvalidParameterError(
            "view_bank needs a width, a degree, a χ² scale, or linear, intersection or "
            "hellinger=True",
            parameter="widths",
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
        view += [Chi2(gamma=g, features=feats) for g in gs]
        if intersection:
            view.append(Intersection(features=feats))
        if hellinger:
            view.append(Hellinger(features=feats))
        specs += view
        groups += [j] * len(view)
    return specs, groups


def _bank_repr(
    name: str, specs: Sequence[Kernel], options: dict[str, Any], fitted: str | None
) -> str:
    """``name(M kernels: the first three…, option=value, …; fitted …)``: a bank of hundreds
    of kernels shows its size and its first specifications, not all of them."""
    shown = ", ".join(repr(s) for s in specs[:3]) + (", …" if len(specs) > 3 else "")
    opts = ", ".join(f"{k}={v!r}" for k, v in options.items())
    kernels = f"{len(specs)} kernel{'s' if len(specs) != 1 else ''}"
    return f"{name}({kernels}: [{shown}], {opts}{'' if fitted is None else '; ' + fitted})"


class KernelBank:
    """Kernel specifications with the normalisation statistics of a training set.

    Parameters
    ----------
    specs : sequence of Kernel
        Kernel specifications; columns named in their ``features`` are looked up in the
        columns of the DataFrame ``X`` at each fit.
    normalize : {"none", "trace", "mean_diag", "multiplicative", "spherical"}, optional
        See :func:`gram`.
    center : bool, default False
        Centre each kernel in feature space (with the training means) before scaling.
    dtype : float64 or float32
        Element type of the stacks produced.
    n_threads : int, default 0
        Threads, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or ``OMP_NUM_THREADS`` when that
        is set (joblib's workers set it to their share); ``-k`` all but ``k − 1``; ``k > 0`` that
        many, clipped to the available cores.
    verbose : int, default 0
        ``2`` or more: a progress bar over the kernels while :meth:`fit_transform` computes
        the training stack (tqdm, the optional ``progress`` extra; nothing without it).

    Raises
    ------
    ValueError
        Invalid specifications, an unknown ``normalize``, a ``dtype`` other than float64 and
        float32, or an ``n_threads`` that is not an integer or leaves no thread (below
        minus the number of cores).

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
    feature_names_in_ : ndarray of str
        The column names of a training DataFrame (absent otherwise); ``transform`` refuses
        a DataFrame whose columns differ.

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
        verbose: int = 0,
    ) -> None:
        self.specs: list[Kernel] = _check_specs(specs)
        self.normalize: str = _check_normalize(normalize)
        self.center = bool(center)
        self.dtype = np.dtype(np.float32 if _is_float32(dtype) else np.float64)
        self.n_threads = check_n_threads(n_threads)
        self.verbose = check_verbose(verbose)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled (e.g. on a Dask worker): the engine needs aligned arrays.
        self.__dict__.update(aligned(state))

    def __len__(self) -> int:
        return len(self.specs)

    def __repr__(self) -> str:
        fitted = getattr(self, "X_train_", None)
        return _bank_repr(
            "KernelBank", self.specs,
            {"normalize": self.normalize, "center": self.center, "dtype": self.dtype.name},
            None if fitted is None else f"fitted on {fitted.shape[0]} points",
        )  # fmt: skip

    def fit(self, X: Any) -> KernelBank:
        """Compute and keep the training statistics of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points (strings and sparse matrices too: see :meth:`fit_transform`).

        Returns
        -------
        KernelBank
            ``self``, fitted.

        Raises
        ------
        ValueError
            ``X`` is not a finite 2-D array, a feature index is out of range, or a kernel
            names a column that ``X`` (a DataFrame, else no names) does not have.
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

    def fit_transform(self, X: Any, sample_weight: Any = None) -> NDArray[Any]:
        """Compute the training Gram stack of ``X`` and keep its statistics.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points (``scipy.sparse`` read as it is: docs/guide.md, "Sparse data");
            for a Dask array the points are gathered, the statistics
            computed block by block on the workers, and a Dask array returned (docs/dask.md).
            For sequence kernels, a 1-D array or list of strings (str or bytes), or a
            DataFrame whose columns of strings hold sequences beside numeric columns: each
            kernel reads its own kind of column.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the points in the normalisation statistics (trace, mean diagonal,
            centring, the multiplicative variance): a point of weight 2 counts as two copies,
            so integer weights give the statistics of duplicated rows. Not with Dask arrays.

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
        # Column names resolve against this X's columns, so a refit on other columns reads
        # the right ones.
        names = column_names(X)
        if _dask.is_dask_array(X):  # statistics and blocks on the workers (docs/dask.md)
            if is_sparse(getattr(X, "_meta", None)):
                raise sparse_refused("the Dask path of a kernel bank (sparse chunks)")
            entries = [s._entry() for s in _resolve_columns(self.specs, names)]
            if sample_weight is not None:
                raise InvalidParameterError(
                    "sample_weight in the statistics of a Dask array is not supported; "
                    "compute the weighted bank on a NumPy array",
                    parameter="sample_weight",
                )
            X_train, train_stats, stack = _dask.bank_fit_transform(self._dask_job(entries), X)
            self._keep_fit(X_train, train_stats, entries, names)
            return stack  # type: ignore[no-any-return]
        Xc = _points_for(self.specs, X)
        entries = _engine_entries(_resolve_columns(self.specs, names), Xc, names)
        verbose = getattr(self, "verbose", 0)  # (absent from banks pickled before it)
        with _progress.bar(verbose, len(entries), "Gram stack", "kernel") as bar:
            G, stats = _core.gram_fit(
                _numeric(Xc),
                entries,
                self.normalize,
                self.center,
                self.dtype == np.float32,
                self.n_threads,
                sample_weight=check_sample_weight(sample_weight, Xc.shape[0]),
                on_kernels=_progress.counter(bar) if _progress.bars_on(verbose) else None,
                sequences=_sequences(Xc),
            )
        self._keep_fit(Xc.copy(), stats, entries, names)
        return G

    def fit_on_demand(
        self, X: Any, cache_bytes: int, sample_weight: Any = None
    ) -> _core.OnDemandKernels:
        """Keep the statistics of ``X`` and return its kernels computed on demand: the
        engine evaluates entries when a solver reads them, and no ``(M, n, n)`` stack is
        stored (docs/performance.md, "Beyond memory").

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points (strings too: see :meth:`fit_transform`).
        cache_bytes : int
            Bytes the solvers may spend on cached kernel columns.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the points in the normalisation statistics (see
            :meth:`fit_transform`).

        Returns
        -------
        multikernel._core.OnDemandKernels
            The training kernels, for the engine's ``fit``.

        Raises
        ------
        InvalidParameterError
            ``center=True`` or ``normalize="multiplicative"`` (their statistics need every
            kernel entry), or a kernel given as a Python function.

        Examples
        --------
        >>> import numpy as np
        >>> from multikernel.kernels import Gaussian, KernelBank
        >>> K = KernelBank([Gaussian(sigma=1.0)], normalize="trace").fit_on_demand(
        ...     np.eye(3), cache_bytes=1 << 20)
        >>> K.n, K.m
        (3, 1)
        """
        if self.center:
            raise InvalidParameterError(
                "kernels computed on demand cannot be centred (centring needs the mean of "
                "every kernel row); use center=False",
                parameter="center",
            )
        if is_sparse(X):
            raise sparse_refused("kernels computed on demand (cache_size=)")
        names = column_names(X)
        Xc = _points_for(self.specs, X)
        entries = _engine_entries(_resolve_columns(self.specs, names), Xc, names)
        w = check_sample_weight(sample_weight, Xc.shape[0])
        K = _core.OnDemandKernels(
            _numeric(Xc), entries, self.normalize, int(cache_bytes), w, sequences=_sequences(Xc)
        )
        self._keep_fit(Xc.copy(), K.stats(), entries, names)
        return K

    def _on_demand_ok(self) -> bool:
        """Whether :meth:`fit_on_demand` takes these kernels: it refuses centring, the
        multiplicative normalisation (their statistics need every kernel entry) and kernels
        given as Python functions, which the engine does not evaluate on demand."""
        return (
            not self.center
            and self.normalize != "multiplicative"
            and not any(isinstance(s, Callable) for s in self.specs)
        )

    def _linear_widths(self, n_features: int) -> list[int] | None:
        """The widths ``D_m`` of the feature blocks ``Φ_m = sqrt(s_m) X[:, cols_m]`` whose
        products are these kernels exactly (``K_m = s_m X_m X_mᵀ = Φ_m Φ_mᵀ``), on points of
        ``n_features`` columns: when every kernel is :class:`Linear`, uncentred, float64,
        under a normalisation that multiplies a kernel by a scale ``s_m`` of its diagonal
        (``"none"``, ``"trace"``, ``"mean_diag"``; the multiplicative one reads every entry,
        the spherical one scales each point). None otherwise."""
        linear = [s for s in self.specs if isinstance(s, Linear)]
        if (
            self.center
            or self.dtype != np.float64
            or self.normalize not in ("none", "trace", "mean_diag")
            or len(linear) < len(self.specs)
        ):
            return None
        return [n_features if s.features is None else len(s.features) for s in linear]

    def _fit_linear(self, X: Any, sample_weight: Any = None) -> list[NDArray[np.float64]]:
        """Keep the statistics of ``X`` (from the kernels' diagonals, weighted by
        ``sample_weight``: the engine's, as for a stored stack) and return its feature blocks
        (:meth:`_linear_features`); no ``n × n`` matrix is formed. The kernels are those
        :meth:`_linear_widths` describes."""
        self.fit_on_demand(X, 0, sample_weight=sample_weight)
        return self._linear_features(self.X_train_)

    def _linear_features(self, X: Any) -> list[NDArray[np.float64]]:
        """The feature blocks ``Φ_m = sqrt(s_m) X[:, cols_m]`` of the points ``X`` for a bank
        fitted by :meth:`_fit_linear`, with the training scales ``s_m``: column ranges of one
        row-major array, as a FeatureBank's."""
        if is_sparse(X):
            raise sparse_refused("a model whose linear kernels were fitted as feature blocks")
        Xc = check_features(X)
        if Xc.shape[1] != self.X_train_.shape[1]:
            raise InvalidInputError(
                f"X has {Xc.shape[1]} features but the bank was fitted on {self.X_train_.shape[1]}"
            )
        cols = [range(Xc.shape[1]) if t[-1] is None else t[-1] for t in self._tuples]
        scales = np.sqrt(np.asarray(self.stats_["scales"], dtype=np.float64))
        ends = np.cumsum([len(c) for c in cols])
        out = np.empty((Xc.shape[0], int(ends[-1])))
        for c, s, end in zip(cols, scales, ends, strict=True):
            out[:, end - len(c) : end] = Xc[:, list(c)] * s
        return [out[:, end - len(c) : end] for c, end in zip(cols, ends, strict=True)]

    def transform(self, X: Any, columns: Any = None) -> NDArray[Any]:
        """Cross kernels between ``X`` and the training points, with the training
        normalisation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, n_features)
            New points (sparse or dense, whatever the training points were); a Dask array
            gives a Dask array, chunked along ``n_new``, one task per row block
            (docs/dask.md).
        columns : array-like of int, optional
            Only these training points (e.g. the support vectors of a model): the result
            has ``len(columns)`` columns. Not with ``center=True``, whose cross kernels
            read every training point.

        Returns
        -------
        ndarray of shape (M, n_new, n_train)
            ``K_m(x_new, x_train)``, scaled (and centred) with the training statistics.

        Raises
        ------
        ValueError
            The bank is not fitted, ``X`` is not a finite 2-D array with as many columns as
            the training points, or it is a DataFrame whose columns differ from the training
            ones.

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
        _check_same_columns(X, getattr(self, "feature_names_in_", None))
        if _dask.is_dask_array(X):  # one task per row block (docs/dask.md)
            if is_sparse(getattr(X, "_meta", None)):
                raise sparse_refused("the Dask path of a kernel bank (sparse chunks)")
            if isinstance(self.X_train_, Points):
                raise InvalidInputError(
                    "a bank fitted on sequences maps NumPy arrays or DataFrames, not Dask arrays"
                )
            return _dask.bank_transform(  # type: ignore[no-any-return]
                self._dask_job(), X, self.X_train_, self.stats_
            )
        Xc = _points_for(self.specs, X)
        _check_same_kinds(Xc, self.X_train_)
        X_train, stats = self.X_train_, self.stats_
        if columns is not None:
            if self.center:
                raise InvalidParameterError(
                    "columns= needs an uncentred bank: centred cross kernels read every "
                    "training point",
                    parameter="columns",
                )
            cols = np.asarray(columns, dtype=np.intp)
            X_train = X_train[cols]
            # The statistics per training point (the spherical diagonal) follow the columns.
            diag, w = stats["diag"], stats.get("weights", np.empty(0))
            stats = {**stats, "n": len(cols),
                     "diag": np.ascontiguousarray(diag[:, cols]) if diag.shape[1] else diag,
                     "weights": np.ascontiguousarray(w[cols]) if len(w) else w}  # fmt: skip
        if is_sparse(Xc) != is_sparse(X_train):
            # The engine reads both sides alike: the dense side as CSR (no larger than it is).
            Xc, X_train = _as_csr(Xc), _as_csr(X_train)
        return _core.gram_cross(
            _numeric(Xc), _numeric(X_train), self._tuples, stats, self.dtype == np.float32,
            self.n_threads, sequences_new=_sequences(Xc), sequences_train=_sequences(X_train),
        )  # fmt: skip

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

    def _keep_fit(
        self,
        X_train: CheckedPoints,
        stats: dict[str, Any],
        entries: list[_Entry],
        names: list[str] | None,
    ) -> None:
        """Keep the fitted state: the training points, their statistics, the engine's
        kernels (column names resolved) and the names of the training columns."""
        self.X_train_ = X_train
        self.stats_: dict[str, Any] = stats
        self.degenerate_: list[int] = list(stats["degenerate"])
        self._tuples = entries
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _dask_job(self, entries: list[_Entry] | None = None) -> _dask.BankJob:
        """The hook of the Dask path: what its tasks need of this bank (``entries``: the
        engine's kernels of a fit, else the fitted ones). ``_dask`` computes and returns; the
        bank keeps the results (:meth:`_keep_fit`)."""
        kernels = self._tuples if entries is None else entries
        return _dask.BankJob(kernels, self.normalize, self.center, self.dtype, self.n_threads)


def _check_same_columns(X: Any, fitted: NDArray[Any] | None) -> None:
    """New points named differently from the training columns are refused (as scikit-learn's
    estimators refuse them): a kernel would silently read another column."""
    names = column_names(X)
    if fitted is None or names is None or names == list(fitted):
        return
    train = list(fitted)
    if len(names) != len(train):
        raise InvalidInputError(
            f"X has {len(names)} columns but the bank was fitted on {len(train)}"
        )
    j = next(j for j, (a, b) in enumerate(zip(names, train, strict=True)) if a != b)
    raise InvalidInputError(
        f"X's columns differ from those the bank was fitted on: column {j} is {names[j]!r}, "
        f"at fit {train[j]!r} (pass the training columns in their order)"
    )


def _numeric(X: CheckedPoints) -> Any:
    """The numeric columns of checked points, as the engine takes them: a float64 matrix, or
    the CSR arrays of sparse points (:func:`engine_sparse`)."""
    if is_sparse(X):
        return engine_sparse(X)
    return X.numeric if isinstance(X, Points) else X


def _as_csr(X: CheckedPoints) -> Any:
    """Checked numeric points as a float64 CSR matrix (sparse ones as they are)."""
    if is_sparse(X):
        return X
    if isinstance(X, Points):
        raise sparse_refused("kernels on points with sequences (strings)")
    return scipy.sparse.csr_matrix(X)


def _sequences(X: CheckedPoints) -> Any:
    """The sequence columns of checked points, as the engine takes them (None: none)."""
    return X.engine() if isinstance(X, Points) else None


def _check_same_kinds(X: CheckedPoints, fitted: CheckedPoints) -> None:
    """New points with the training points' columns: as many, with strings (sequences) in
    the same ones."""
    if X.shape[1] != fitted.shape[1]:
        raise InvalidInputError(
            f"X has {X.shape[1]} features but the bank was fitted on {fitted.shape[1]}"
        )
    kinds = X.columns if isinstance(X, Points) else None
    train = fitted.columns if isinstance(fitted, Points) else None
    if kinds != train:

        def strings(columns: Any) -> list[int]:
            return [j for j, (is_seq, _) in enumerate(columns or ()) if is_seq]

        raise InvalidInputError(
            f"X has strings (sequences) in the columns {strings(kinds)}, but the bank was "
            f"fitted on points with strings in the columns {strings(train)}"
        )
