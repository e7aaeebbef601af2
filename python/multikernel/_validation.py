"""Input checks shared by the public functions and estimators: clear errors, no silent copies
of the wrong dtype."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse
from numpy.typing import NDArray

from . import _core
from ._pairwise import unwrap
from .exceptions import InvalidInputError, InvalidParameterError, NonFiniteError


def is_sparse(X: Any) -> bool:
    """Whether ``X`` is a ``scipy.sparse`` matrix or array (any format)."""
    return bool(scipy.sparse.issparse(X))


def sparse_refused(what: str, name: str = "X") -> InvalidInputError:
    """The error of ``what`` (a kernel, a feature) given a sparse ``name``: it names what
    refuses and what to do, rather than densifying ``X`` without a word."""
    return InvalidInputError(
        f"{what} does not take sparse {name} (scipy.sparse): pass {name}.toarray() if it fits "
        f"in memory, or use the vector kernel specifications (Linear, Gaussian, Polynomial, "
        f"Laplacian, Chi2, Intersection, Hellinger, Tanimoto), which read sparse {name} as it "
        f'is (docs/guide.md, "Sparse data")'
    )


def check_sparse(X: Any, name: str = "X") -> Any:
    """Return the sparse ``X`` as a float64 CSR matrix (or array, as given) in canonical
    form (each row's column indices sorted, no duplicates: what the engine reads), with
    finite stored values; copied only when it is not one already. Other formats (CSC, COO,
    ...) are converted to CSR: the engine reads rows."""
    csr = X.tocsr()
    if csr.dtype != np.float64:
        try:
            csr = csr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{name} must be numeric: {exc}") from None
    if csr.ndim != 2 or csr.shape[0] == 0 or csr.shape[1] == 0:
        raise InvalidInputError(
            f"{name} must have at least one sample and one feature, got {csr.shape}"
        )
    if not csr.has_canonical_format:
        csr = csr.copy() if csr is X else csr
        csr.sum_duplicates()
    if not np.isfinite(csr.data).all():
        k = int(np.flatnonzero(~np.isfinite(csr.data))[0])
        row = int(np.searchsorted(csr.indptr, k, side="right") - 1)
        col = int(csr.indices[k])
        raise NonFiniteError(
            f"{name} contains NaN or infinity (first at row {row}, column {col})",
            entry=(row, col),
        )
    return csr


def engine_sparse(X: Any) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], int]:
    """A checked sparse ``X`` (:func:`check_sparse`) as the engine takes it: its CSR arrays
    ``(data, indices, indptr, n_cols)``, aligned, indices as int64 (scipy may keep int32)."""

    def req(a: Any, dtype: Any) -> NDArray[Any]:
        return np.require(np.asarray(a, dtype=dtype), requirements=("C", "A"))

    return (
        req(X.data, np.float64),
        req(X.indices, np.int64),
        req(X.indptr, np.int64),
        int(X.shape[1]),
    )


def check_features(X: Any, name: str = "X", *, row_offset: int = 0) -> NDArray[np.float64]:
    """Return ``X`` as a finite, C-contiguous float64 matrix of shape (n_samples, n_features);
    ``row_offset`` is added to the row an error names (``X`` being a batch of rows). Sparse
    ``X`` is refused (feature maps, factors and feature blocks are dense): never densified
    here."""
    if is_sparse(X):
        raise sparse_refused("this input (feature maps, low-rank factors, feature blocks)", name)
    if isinstance(X, Points) or has_sequences(X):
        raise InvalidInputError(
            f"{name} holds strings (sequences), which only kernel specifications read "
            f"(Spectrum, WeightedDegree, and vector kernels on the numeric columns); feature "
            f"maps, low-rank factors and Dask arrays take numeric points"
        )
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric 2-D array: {exc}") from None
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name} must be 2-D (n_samples, n_features), got an array of shape {arr.shape}"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInputError(
            f"{name} must have at least one sample and one feature, got {arr.shape}"
        )
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise NonFiniteError(
            f"{name} contains NaN or infinity (first at row {bad[0] + row_offset}, "
            f"column {bad[1]})",
            entry=(int(bad[0]) + row_offset, int(bad[1])),
        )
    return np.require(arr, requirements=("C", "A"))  # aligned too: see ``aligned``


def column_names(X: Any) -> list[str] | None:
    """The column names of a DataFrame ``X`` (pandas, or any frame with ``columns``) when they
    are all strings, else None: the names scikit-learn keeps in ``feature_names_in_`` (a
    pandas Series: its name, :func:`as_table`)."""
    X = as_table(X)
    if isinstance(X, np.ndarray):
        return None
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    try:
        names = list(columns)
    except TypeError:
        return None
    return names if names and all(isinstance(c, str) for c in names) else None


def check_feature_blocks(blocks: Any, name: str = "the feature blocks") -> list[NDArray[Any]]:
    """Return precomputed feature blocks ``Φ_m`` (a list of ``(n, D_m)`` arrays, ``K_m =
    Φ_m Φ_mᵀ``) as float64 or float32 arrays, not copied when they already are (memmaps stay
    memmaps); finiteness is checked in row batches, without a temporary of their size."""
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise InvalidInputError(f"{name} must be a non-empty list of 2-D arrays (n, D_m)")
    out: list[NDArray[Any]] = []
    for m, F in enumerate(blocks):
        arr = F if isinstance(F, np.ndarray) else np.asarray(F)
        if arr.dtype not in (np.float64, np.float32):
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"block {m} of {name} is not numeric: {exc}") from None
        if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
            raise InvalidInputError(
                f"block {m} of {name} must be 2-D (n, D_m) and non-empty, got shape {arr.shape}"
            )
        if out and arr.shape[0] != out[0].shape[0]:
            raise InvalidInputError(
                f"every block of {name} must have the same rows: block {m} has "
                f"{arr.shape[0]}, block 0 has {out[0].shape[0]}"
            )
        step = max(1, (1 << 22) // arr.shape[1])
        for a in range(0, arr.shape[0], step):
            part = arr[a : a + step]
            if not np.isfinite(part).all():
                bad = np.argwhere(~np.isfinite(part))[0]
                raise NonFiniteError(
                    f"block {m} of {name} contains NaN or infinity (first at row "
                    f"{bad[0] + a}, column {bad[1]})",
                    kernel=m,
                    entry=(int(bad[0]) + a, int(bad[1])),
                )
        out.append(arr)
    if len({F.dtype for F in out}) > 1:
        out = [F.astype(np.float64, copy=False) for F in out]
    return out


def check_stack(
    G: Any, name: str = "G", *, square: bool = True, allow_float32: bool = True
) -> NDArray[Any]:
    """Return a kernel stack as a C-contiguous float64 (or float32) array of shape (M, n, n)
    (or (M, n_new, n) when ``square`` is false), checking its dtype and shape only.

    A C-contiguous float64 or float32 stack is returned as it is, its entries unread, so
    finiteness is not checked here: that costs a read of the whole stack, which
    :func:`multikernel.kernels.validate_stack` does in the same pass as its symmetry check
    (the estimators' ``fit`` calls it); other callers that need finite entries check them.
    """
    arr = np.asarray(unwrap(G))
    if arr.dtype == np.float32 and allow_float32:
        pass
    elif arr.dtype != np.float64:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim != 3:
        shape = "(M, n, n)" if square else "(M, n_samples, n_train)"
        raise InvalidInputError(f"{name} must be a 3-D kernel stack {shape}, got shape {arr.shape}")
    if square and arr.shape[1] != arr.shape[2]:
        # (k, k, n): a stack scikit-learn sliced as one kernel matrix, on its kernel axis.
        hint = (
            "; scikit-learn's model selection slices an estimator's precomputed input "
            "pairwise, X[np.ix_(train, train)], which a plain (M, n, n) array does not "
            "survive: wrap it, multikernel.kernels.PairwiseStack(G)"
            if arr.shape[0] == arr.shape[1]
            else ""
        )
        raise InvalidInputError(
            f"{name} must have shape (M, n, n) with square kernels, got shape {arr.shape}{hint}"
        )
    if min(arr.shape) == 0:
        raise InvalidInputError(f"{name} must not be empty, got shape {arr.shape}")
    return np.require(arr, requirements=("C", "A"))


def check_n_threads(n_threads: Any) -> int:
    """Validate ``n_threads`` (an integer, as scikit-learn's ``n_jobs``) and return it as the
    engine takes it. The rule is the engine's (``_core.requested_threads``, its one place):
    counts above the available cores are clipped to them, 0 and -1 mean all cores and give 0
    (resolved where the work runs, as ``OMP_NUM_THREADS`` when that is set), ``-k`` is all
    cores but ``k − 1``, and a ``-k`` that leaves none is an ``InvalidParameterError``."""
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)):
        raise InvalidParameterError(
            f"n_threads must be an integer, got {n_threads!r}", parameter="n_threads"
        )
    return _core.requested_threads(max(-(2**62), min(int(n_threads), 2**62)))


def check_psd(psd: Any) -> str:
    """Validate ``psd`` (``"check"`` or ``"clip"``)."""
    if not isinstance(psd, str) or psd not in ("check", "clip"):
        raise InvalidParameterError(f"psd must be 'check' or 'clip', got {psd!r}", parameter="psd")
    return psd


def check_verbose(verbose: Any) -> int:
    """Validate ``verbose`` (a non-negative integer)."""
    if isinstance(verbose, bool) or not isinstance(verbose, (int, np.integer)) or verbose < 0:
        raise InvalidParameterError(
            f"verbose must be a non-negative integer, got {verbose!r}", parameter="verbose"
        )
    return int(verbose)


def check_random_state(random_state: Any) -> int | None:
    """Validate a seed: None or an integer in [0, 2**64) (the engine's seeds are 64-bit)."""
    if random_state is not None and (
        isinstance(random_state, bool)
        or not isinstance(random_state, (int, np.integer))
        or not 0 <= random_state < 2**64
    ):
        raise InvalidParameterError(
            f"random_state must be None or an integer in [0, 2**64), got {random_state!r}",
            parameter="random_state",
        )
    return None if random_state is None else int(random_state)


def check_bool(value: Any, name: str) -> bool:
    """Validate a flag: ``True`` or ``False`` (a ``bool`` or a ``numpy.bool_``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}", parameter=name)
    return bool(value)


def check_real(
    value: Any, name: str, accepted: str, valid: Callable[[float], bool] = math.isfinite
) -> float:
    """Validate a real setting (an int or a float, not a bool) for which ``valid`` holds;
    ``accepted`` describes the valid values in the error (e.g. ``"in [0, 1]"``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(
            f"{name} must be a real number ({accepted}), got {value!r}", parameter=name
        )
    v = float(value)
    if not valid(v):
        raise InvalidParameterError(f"{name} must be {accepted}, got {value!r}", parameter=name)
    return v


def group_ids(groups: Any, n_kernels: int | None) -> tuple[list[int], int]:
    """The group of every kernel as ids ``0..J-1``, and ``J``.

    ``groups`` is either a group label per kernel (integers; groups are numbered in the order
    of the sorted labels) or a list of index lists (group ``j`` holds the kernels of list
    ``j``; every kernel in exactly one). With ``n_kernels=None`` only the form is checked.
    """
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__len__"):
        raise InvalidParameterError(
            f"groups must be a group id per kernel or a list of index lists, got {groups!r}",
            parameter="groups",
        )
    items = list(groups)
    if not items:
        raise InvalidParameterError("groups is empty", parameter="groups")

    def is_int(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

    if all(is_int(v) for v in items):
        # Labels are arbitrary integers (Python ints may exceed int64): numbered in Python.
        labels = sorted({int(v) for v in items})
        number = {label: j for j, label in enumerate(labels)}
        if n_kernels is not None and len(items) != n_kernels:
            raise InvalidParameterError(
                f"groups has {len(items)} ids for {n_kernels} kernels; give one group id per "
                f"kernel",
                parameter="groups",
            )
        return [number[int(v)] for v in items], len(labels)
    if not all(isinstance(v, (list, tuple, np.ndarray)) for v in items):
        bad = next(v for v in items if not is_int(v) and not isinstance(v, (list, tuple)))
        raise InvalidParameterError(
            f"groups must hold integer group ids (or be a list of index lists); got {bad!r}",
            parameter="groups",
        )
    out: dict[int, int] = {}
    for j, members in enumerate(items):
        members = list(members)
        if not members:
            raise InvalidParameterError(f"group {j} of groups is empty", parameter="groups")
        for k in members:
            if not is_int(k):
                raise InvalidParameterError(
                    f"group {j} of groups holds {k!r}; kernel indices must be integers",
                    parameter="groups",
                )
            if k < 0 or (n_kernels is not None and k >= n_kernels):
                raise InvalidParameterError(
                    f"group {j} of groups holds kernel {k}, outside 0..{n_kernels}",
                    parameter="groups",
                )
            if int(k) in out:
                raise InvalidParameterError(
                    f"kernel {k} is in groups {out[int(k)]} and {j}; each kernel belongs to "
                    f"one group",
                    parameter="groups",
                )
            out[int(k)] = j
    if n_kernels is None:
        return [], len(items)
    if len(out) != n_kernels:
        missing = sorted(set(range(n_kernels)) - set(out))
        raise InvalidParameterError(
            f"groups leaves kernels {missing[:10]} out; every kernel must be in one group",
            parameter="groups",
        )
    return [out[k] for k in range(len(out))], len(items)


def aligned(value: Any) -> Any:
    """``value`` with every numpy array in it (nested in dicts, lists and tuples) aligned and
    C-contiguous, copied only when it is not. Arrays unpickled from out-of-band buffers (Dask
    ships them so between processes) may start at any byte, and the engine refuses unaligned
    arrays."""
    if isinstance(value, np.ndarray):
        return np.require(value, requirements=("C", "A"))
    if isinstance(value, dict):
        return {k: aligned(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(aligned(v) for v in value)
    return value


#: The largest total ``Σ w`` of sample weights (loss weights too: ``class_weight`` times
#: them). Their pairwise products summed, ``(Σ w)²``, must stay representable: the weighted
#: statistics of the multiplicative normalisation and the one-class dual ``αᵀKα`` (``0 ≤ α ≤
#: w``) overflowed float64 from ``Σ w`` ≈ 1e156. Only ratios of weights matter to the
#: kernels' statistics, and ``C · w`` to a fit, so no meaningful weighting needs more.
MAX_WEIGHT_SUM = 1e150


def check_weight_scale(
    w: NDArray[np.float64], C: float | None = None, what: str = "sample_weight"
) -> None:
    """Refuse weights ``w`` (finite, ≥ 0) whose scale the engine cannot represent: a total
    above :data:`MAX_WEIGHT_SUM`, or, for a fit of loss weight ``C``, a box ``C · max(w)``
    beyond float64. Named ``what`` in the error, with ``C`` when given (the one check of
    every estimator, the path, the CV estimators and the banks)."""
    top, total = float(w.max()), float(w.sum())
    box = f"; the dual's box C · max({what}) = {C * top:.3g} with C = {C:g}" if C else ""
    if not total <= MAX_WEIGHT_SUM:
        i = int(np.argmax(w))
        raise InvalidInputError(
            f"{what} sums to {total:.3g} (largest {top:.3g}, sample {i}), beyond "
            f"{MAX_WEIGHT_SUM:.0e}: sums of their pairwise products overflow float64{box}. "
            f"Only the ratios of the weights matter to the kernels' statistics, and the box "
            f"C · w to a fit: divide {what} by its maximum (and multiply C by it for the same "
            f"fit)"
        )
    if C is not None and not math.isfinite(C * top):
        raise InvalidInputError(
            f"C · max({what}) = {C:g} · {top:.3g} overflows float64: the dual's box C · w "
            f"must be a float; lower C or rescale {what}"
        )


def check_sample_weight(
    sample_weight: Any, n: int, C: float | None = None
) -> NDArray[np.float64] | None:
    """``sample_weight`` as ``n`` finite weights ≥ 0 with a positive sum, or None; their
    scale checked by :func:`check_weight_scale` (with the fit's ``C`` when given)."""
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"sample_weight must be an array of numbers: {e}") from None
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,):
        raise InvalidInputError(
            f"sample_weight must have shape ({n},) (one weight per sample), got {w.shape}"
        )
    finite = bool(np.isfinite(w).all())
    error = weights_error(finite, float(w.min()) if finite else 0.0, float(w.sum()))
    if error is not None:
        raise error
    check_weight_scale(w, C)
    return w


def weights_error(finite: bool, minimum: float, total: float) -> InvalidInputError | None:
    """What is wrong with sample weights of these summaries (all finite, least, sum), if
    anything: the checks of :func:`check_sample_weight`, for weights summarised elsewhere
    (a Dask array's, in one pass)."""
    if not finite:
        return NonFiniteError("sample_weight contains NaN or infinity")
    if minimum < 0:
        return InvalidInputError(f"sample_weight must be non-negative, got min {minimum:.3g}")
    if not total > 0:
        return InvalidInputError("sample_weight is zero for every sample: nothing to fit")
    return None


def nonfinite_targets(row: int | None = None) -> NonFiniteError:
    """The error of targets ``y`` with NaN or infinity (first at ``row`` when known)."""
    where = "" if row is None else f" (first at row {row})"
    return NonFiniteError(f"y contains NaN or infinity{where}")


def numeric_dtype_error(name: str, dtype: Any, what: str) -> InvalidInputError | None:
    """The error of ``name`` of ``dtype`` where ``what`` takes numbers (booleans, integers,
    floats) only, if it is not one of them."""
    if np.dtype(dtype).kind in "biuf":
        return None
    return InvalidInputError(
        f"{what} takes numeric arrays (booleans, integers or floats), and {name} has dtype "
        f"{np.dtype(dtype)}: convert it (e.g. {name}.astype(float))"
    )


def check_weighted_classes(
    w: NDArray[np.float64] | None, yi: NDArray[np.intp], classes: NDArray[Any]
) -> None:
    """Every class (``yi`` indexes ``classes``) has a sample of positive weight ``w``: a class
    whose samples all weigh 0 has nothing to learn it from."""
    if w is None:
        return
    for k, c in enumerate(classes.tolist()):
        if not (w[yi == k] > 0).any():
            raise InvalidInputError(
                f"every sample of class {c!r} has weight 0: nothing to learn it from"
            )


@dataclass(frozen=True, eq=False)
class SeqColumn:
    """A column of ``n`` sequences as the engine reads it: their bytes one after another
    (``data``, uint8) and the ``n + 1`` offsets of their starts (int64)."""

    data: NDArray[np.uint8]
    offsets: NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def take(self, rows: Any) -> SeqColumn:
        """The sequences ``rows`` (indices, a slice or a mask), in that order."""
        idx = np.arange(len(self))[rows]
        return _encode([self.get(int(i)) for i in idx])

    def get(self, i: int) -> bytes:
        """Sequence ``i``."""
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()


@dataclass(frozen=True, eq=False)
class Points:
    """Points with sequence columns (strings): the numeric columns as one float64 matrix and
    each sequence column as a :class:`SeqColumn`, what :func:`check_points` makes of a
    DataFrame with string columns or a 1-D array of strings. It has a ``shape`` and takes row
    indices, as the arrays of numeric points do.

    Parameters
    ----------
    numeric : ndarray of shape (n, p)
        The numeric columns, in their order (``p`` may be 0).
    sequences : tuple of SeqColumn
        The sequence columns, in their order.
    columns : tuple of (bool, int)
        For each column of ``X``: whether it holds sequences, and its index among the
        numeric columns or among the sequence columns.
    names : tuple of str or None
        The column names of a DataFrame ``X`` (None otherwise): errors name the columns by
        them, whoever maps the kernels onto these points.
    """

    numeric: NDArray[np.float64]
    sequences: tuple[SeqColumn, ...]
    columns: tuple[tuple[bool, int], ...]
    names: tuple[str, ...] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_samples, n_columns)``."""
        return (int(self.numeric.shape[0]), len(self.columns))

    def __len__(self) -> int:
        return int(self.numeric.shape[0])

    def __getitem__(self, rows: Any) -> Points:
        numeric = np.require(self.numeric[rows], requirements=("C", "A"))
        sequences = tuple(c.take(rows) for c in self.sequences)
        return Points(numeric, sequences, self.columns, self.names)

    def copy(self) -> Points:
        """The points themselves (immutable)."""
        return self

    def engine(self) -> list[tuple[NDArray[np.uint8], NDArray[np.int64]]]:
        """The sequence columns as the engine takes them."""
        return [(c.data, c.offsets) for c in self.sequences]

    def label(self, j: int) -> str:
        """Column ``j`` as an error names it: by its DataFrame name, else by its index."""
        return f"column {self.names[j]!r}" if self.names is not None else f"column {j}"


#: Validated raw points: a float64 matrix, or points with sequence columns (or a float64 CSR
#: matrix from :func:`check_sparse`: scipy has no types, so it is ``Any`` to mypy).
CheckedPoints: TypeAlias = "NDArray[np.float64] | Points"


def _encode(values: Sequence[Any], where: str = "X") -> SeqColumn:
    """The column of ``values`` (str are encoded in UTF-8: the kernels count bytes); a str
    UTF-8 cannot encode (a lone surrogate) is refused naming its row of ``where``."""
    raw: list[bytes] = []
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raw.append(bytes(v))
            continue
        try:
            raw.append(v.encode())
        except UnicodeEncodeError as e:
            raise InvalidInputError(
                f"{where} holds strings (sequences), but row {i} is {v!r}, which UTF-8 cannot "
                f"encode ({e.reason}: character {e.start}); the kernels compare the UTF-8 "
                f"bytes of a str: pass valid text, or bytes"
            ) from None
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in raw], out=offsets[1:])
    return SeqColumn(np.frombuffer(b"".join(raw), dtype=np.uint8).copy(), offsets)


def _is_text(v: Any) -> bool:
    return isinstance(v, (str, bytes, np.str_, np.bytes_))


def _text_column(values: Any) -> bool:
    """Whether a column holds strings: a numpy str/bytes array, or objects any of which is
    one. Every entry is looked at, not the first only: a column of strings with a None, a NaN
    or a number somewhere is a column of strings with a bad entry, which :func:`check_points`
    names, not numbers that fail to convert."""
    arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if arr.dtype.kind in "US":
        return True
    return arr.dtype.kind == "O" and any(_is_text(v) for v in arr.flat)


def is_series(X: Any) -> bool:
    """Whether ``X`` is a pandas Series (or one like it: 1-D, named, ``to_frame``)."""
    return hasattr(X, "to_frame") and hasattr(X, "iloc") and not hasattr(X, "columns")


def as_table(X: Any) -> Any:
    """A pandas Series as the one-column DataFrame it is to the kernels (its name the
    column's, so ``features=["seq"]`` finds it, a Series of strings a sequence column and
    one of numbers a numeric column); anything else as it is."""
    return X.to_frame() if is_series(X) else X


def has_sequences(X: Any) -> bool:
    """Whether ``X`` holds sequences: :class:`Points`, a DataFrame with a column of strings,
    or a 1-D array or list of strings (str or bytes); any entry that is a string counts (see
    :func:`_text_column`); a pandas Series as its one-column table (:func:`as_table`)."""
    X = as_table(X)
    if isinstance(X, Points):
        return True
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns") and hasattr(X, "iloc"):
        # Only columns of objects (str, pandas' string dtype, categories) can hold strings.
        objects = [j for j, dt in enumerate(dtypes) if getattr(dt, "kind", "O") in "OSU"]
        return any(_text_column(X.iloc[:, j].to_numpy()) for j in objects)
    if isinstance(X, np.ndarray):
        return X.dtype.kind in "USO" and X.ndim >= 1 and X.size > 0 and _text_column(X.ravel())
    if isinstance(X, (list, tuple)):
        return any(
            _is_text(v) or (isinstance(v, (list, tuple)) and any(_is_text(u) for u in v)) for v in X
        )
    return False


def check_points(X: Any, name: str = "X") -> CheckedPoints:
    """The one place raw points are validated: ``X`` as a finite float64 matrix
    (:func:`check_features`), or, when it holds sequences (:func:`has_sequences`), as
    :class:`Points`: a DataFrame's string columns (every value a str or bytes) become sequence
    columns and the others numeric columns; a 1-D array of strings is one sequence column.
    An entry of a column of strings that is not one (None, NaN, a number) or that UTF-8 cannot
    encode is refused naming its row and value. A pandas Series is its one-column table
    (:func:`as_table`)."""
    X = as_table(X)
    if isinstance(X, Points):
        return X
    if is_sparse(X):
        csr: CheckedPoints = check_sparse(X, name)
        return csr
    if not has_sequences(X):
        return check_features(X, name)
    names = column_names(X)
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        cols = [X.iloc[:, j].to_numpy() for j in range(X.shape[1])]
        wheres = [f"column {c!r} of {name}" for c in X.columns]
    else:
        arr = np.asarray(X, dtype=object)
        one = arr.ndim == 1
        if one:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2 or arr.shape[0] == 0:
            raise InvalidInputError(
                f"{name} must be a 1-D array of strings or a 2-D table, got shape {arr.shape}"
            )
        cols = [arr[:, j] for j in range(arr.shape[1])]
        wheres = [name] if one else [f"column {j} of {name}" for j in range(arr.shape[1])]
    numeric: list[NDArray[Any]] = []
    sequences: list[SeqColumn] = []
    columns: list[tuple[bool, int]] = []
    for col, where in zip(cols, wheres, strict=True):
        if _text_column(col):
            bad = next((i for i, v in enumerate(col) if not _is_text(v)), None)
            if bad is not None:
                raise InvalidInputError(
                    f"{where} holds strings (sequences), but row {bad} is {col[bad]!r}: every "
                    f"entry of a sequence column must be a str or bytes"
                )
            columns.append((True, len(sequences)))
            sequences.append(_encode(list(col), where))
        else:
            try:
                numeric.append(np.asarray(col, dtype=np.float64))
            except (TypeError, ValueError) as e:
                raise InvalidInputError(
                    f"{where} is neither numeric nor a column of strings: {e}"
                ) from None
            columns.append((False, len(numeric) - 1))
    n = len(cols[0])
    num = np.column_stack(numeric) if numeric else np.empty((n, 0))
    if numeric:
        num = check_features(num, name)
    known = tuple(names) if names is not None else None
    return Points(np.require(num, requirements=("C", "A")), tuple(sequences), tuple(columns), known)


def validate_points(estimator: Any, X: Any, y: Any = "no_validation", **kwargs: Any) -> Any:
    """scikit-learn's ``validate_data`` of an estimator's raw points (``X``, with ``y`` when
    given): numeric points as float64 arrays (or as ``dtype`` in ``kwargs`` takes them:
    ``(np.float64, np.float32)`` keeps float32); points with sequences as :class:`Points`
    (:func:`check_points`), scikit-learn's checks of the columns (``n_features_in_``,
    ``feature_names_in_``) and of the targets running on a stand-in of ``X``'s shape and
    column names. A pandas Series is one column, of sequences or numbers (:func:`as_table`)."""
    from sklearn.utils.validation import validate_data

    X = as_table(X)
    dtype = kwargs.pop("dtype", np.float64)
    if is_sparse(X):
        # Any format in, CSR out (the engine reads rows); what refuses sparse points has
        # refused them before (_sources.resolve, kernels._sequence._refuse_sparse).
        out = validate_data(estimator, X, y, dtype=np.float64, accept_sparse="csr", **kwargs)
        if isinstance(y, str) and y == "no_validation":
            return check_sparse(out)
        return check_sparse(out[0]), out[1]
    if not has_sequences(X):
        return validate_data(estimator, X, y, dtype=dtype, **kwargs)
    points = check_points(X)
    stand_in: Any = np.zeros(points.shape)
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        stand_in = type(X)(stand_in, columns=X.columns)
    out = validate_data(estimator, stand_in, y, dtype=np.float64, **kwargs)
    return points if isinstance(y, str) and y == "no_validation" else (points, out[1])
