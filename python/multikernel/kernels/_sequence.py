"""Kernel specifications on sequences (strings of any alphabet, read as bytes):
:class:`Spectrum` and :class:`WeightedDegree`, and the mapping of a bank's specifications onto
points with sequence columns (:func:`_engine_entries`). Like the vector kernels they compute
nothing themselves; the engine evaluates them in Rust (:func:`gram`, :class:`KernelBank` and
the estimators' ``kernels=``), on a 1-D array of strings or the string columns of a
DataFrame."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import (
    CheckedPoints,
    Points,
    check_points,
    has_sequences,
    is_sparse,
    sparse_refused,
)
from ..exceptions import InvalidInputError, InvalidParameterError
from ._specs import Callable, Features, Kernel, _Entry, _features, _flist, _SpecTuple

__all__ = ["Spectrum", "WeightedDegree"]


#: The largest ``k``, ``degree`` and ``shift`` the engine takes (it reads them as 32-bit
#: counts). Any count up to it is meaningful: a ``k`` or a ``degree`` longer than every
#: sequence counts no k-mer or stops at the longest match, a ``shift`` past the length adds no
#: shifted match.
MAX_COUNT = 2**32 - 1


def _count(name: str, value: Any, least: int) -> int:
    what = "a positive" if least > 0 else "a non-negative"
    exact: int | None = None
    if isinstance(value, (bool, np.bool_)):
        pass
    elif isinstance(value, numbers.Integral):
        exact = int(value)  # exactly, however large: no float on the way
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        exact = int(float(value))
    if exact is None or exact < least:
        raise InvalidParameterError(f"{name} must be {what} integer, got {value!r}", parameter=name)
    if exact > MAX_COUNT:
        raise InvalidParameterError(
            f"{name} must be {what} integer of at most 2**32 - 1 = {MAX_COUNT} (the engine's "
            f"32-bit counts), got {value!r}: too large",
            parameter=name,
        )
    return exact


def _one_column(features: Features | None) -> tuple[int | str, ...] | None:
    feats = _features(features)
    if feats is not None and len(feats) != 1:
        raise InvalidParameterError(
            f"a sequence kernel reads one column of sequences, got features={list(feats)}",
            parameter="features",
        )
    return feats


@dataclass(frozen=True)
class _SequenceKernel(Kernel):
    """A kernel on one column of sequences (what :func:`_engine_entries` maps to one)."""


@dataclass(frozen=True)
class Spectrum(_SequenceKernel):
    """Spectrum kernel ``k(s, t) = Σ_u c_u(s) c_u(t)``: the inner product of the counts of
    every substring ``u`` of length ``k`` (k-mer) in ``s`` and in ``t``.

    Leslie, Eskin & Noble, "The spectrum kernel: a string kernel for SVM protein
    classification". Sequences may have any lengths (one shorter than ``k``, or empty, has no
    k-mer: its row of the kernel is 0) and any alphabet: the kernel counts bytes, a ``str``
    being encoded in UTF-8 (so a non-ASCII character is several bytes). PSD. Under the
    estimators' default ``normalize="mean_diag"`` (one scale per kernel) a longer sequence
    keeps a larger ``k(s, s)``; the cosine normalisation ``normalize="spherical"``
    (``k(s, t) / sqrt(k(s, s) k(t, t))``) removes the effect of the lengths (docs/guide.md
    §5). Computed in Rust: each
    k-mer gets an exact integer id once, and each row of the kernel is a sparse product, rows
    in parallel.

    Parameters
    ----------
    k : int, default 3
        Length of the substrings counted, at most ``2**32 − 1`` (the engine's bound); a ``k``
        longer than every sequence is allowed (no k-mer: the kernel is 0).
    features : sequence of one int or str, optional
        The column of sequences the kernel reads (an index or a DataFrame's column name); when
        None, the only column of strings of ``X``.

    Raises
    ------
    ValueError
        ``k`` is not a positive integer or above ``2**32 − 1``, or ``features`` names more
        than one column. At evaluation, :class:`~multikernel.exceptions.InvalidInputError`
        when the column it reads holds numbers, ``X`` holds no strings, or an entry of the
        column is not a string or not encodable in UTF-8 (named by its row and value).

    Examples
    --------
    >>> from multikernel.kernels import Spectrum, gram
    >>> gram(["GATTACA", "TACAGAT", "CC"], [Spectrum(k=3)])[0]
    array([[5., 3., 0.],
           [3., 5., 0.],
           [0., 0., 0.]])
    """

    k: int = 3
    features: Features | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", _count("k", self.k, 1))
        object.__setattr__(self, "features", _one_column(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return ("spectrum", float(self.k), 0.0, 0.0, _flist(self.features))


@dataclass(frozen=True)
class WeightedDegree(_SequenceKernel):
    """Weighted-degree kernel (Rätsch & Sonnenburg), with shifts.

    ``k(s, t) = Σ_{k=1..d} β_k Σ_l 1[s[l:l+k] = t[l:l+k]]`` with ``β_k = 2(d − k + 1) / (d(d +
    1))``: the matches of the substrings of every length up to ``d`` at the same positions
    (Rätsch & Sonnenburg, "Accurate splice site prediction using support vector machines").
    With ``shift = S > 0`` it adds the matches shifted by ``σ = 1 .. S`` positions with weight
    ``δ_σ = 1 / (2(σ + 1))`` (Rätsch, Sonnenburg & Schölkopf, "RASE: recognition of
    alternatively spliced exons in C. elegans"; Sonnenburg, Rätsch & Rieck, "Large scale
    learning with string kernels")::

        k(s, t) = Σ_k β_k Σ_l [ 1[s[l:l+k] = t[l:l+k]]
                  + Σ_{σ=1..S} δ_σ (1[s[l+σ:l+σ+k] = t[l:l+k]] + 1[s[l:l+k] = t[l+σ:l+σ+k]]) ]

    where every compared substring lies inside the sequences (docs/mathematics.md §7).
    Sequences must all have the same length (the training and the new ones); bytes are
    compared, a ``str`` being encoded in UTF-8. PSD, shifts included: the position weights
    form a Toeplitz matrix whose symbol ``1 + Σ_σ cos(σθ) / (σ + 1)`` stays above 1/2
    (docs/mathematics.md §7). Computed in Rust: one
    byte-compare pass per pair builds the bit mask of the matching positions, and ``β_k``
    times the number of starts of matches of length ``k`` follows from it by ``k`` shifts.

    Parameters
    ----------
    degree : int, default 10
        The longest substrings compared, ``d``, at most ``2**32 − 1`` (the engine's bound).
    shift : int, default 0
        The largest shift ``S`` (0: the plain weighted-degree kernel), at most ``2**32 − 1``;
        shifts past the sequences' length add nothing.
    features : sequence of one int or str, optional
        The column of sequences the kernel reads (an index or a DataFrame's column name); when
        None, the only column of strings of ``X``.

    Raises
    ------
    ValueError
        ``degree`` is not a positive integer, ``shift`` not a non-negative one (either above
        ``2**32 − 1``), or ``features`` names more than one column. At evaluation,
        :class:`~multikernel.exceptions.InvalidInputError` for sequences of different lengths,
        a column of numbers, ``X`` without strings, or an entry that is not a string or not
        encodable in UTF-8.

    Examples
    --------
    >>> from multikernel.kernels import WeightedDegree, gram
    >>> G = gram(["ACGT", "ACGA"], [WeightedDegree(degree=2)])[0]
    >>> G  # β = (2/3, 1/3): 4·2/3 + 3·1/3 = 11/3; 3·2/3 + 2·1/3 = 8/3
    array([[3.66666667, 2.66666667],
           [2.66666667, 3.66666667]])
    """

    degree: int = 10
    shift: int = 0
    features: Features | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "degree", _count("degree", self.degree, 1))
        object.__setattr__(self, "shift", _count("shift", self.shift, 0))
        object.__setattr__(self, "features", _one_column(self.features))

    def _to_tuple(self) -> _SpecTuple:
        return (
            "weighted_degree",
            float(self.degree),
            float(self.shift),
            0.0,
            _flist(self.features),
        )


def _engine_entries(
    specs: Sequence[Kernel], X: NDArray[np.float64] | Points, names: Sequence[str] | None = None
) -> list[_Entry]:
    """The engine's kernels of ``specs`` (column names resolved) on the checked points
    ``X``: on :class:`Points`, each kernel's columns are mapped to the numeric columns or to
    the sequence columns, and a kernel reading the other kind is refused (errors name the
    columns by ``names``, else by those the points keep of a DataFrame).

    Every column of points with sequences is read by some kernel, unless every kernel names
    its columns (``features=``): a column no kernel reads is then left out on purpose, and
    otherwise refused, as a scikit-learn estimator reads every column it is given (a column of
    strings or categories beside vector kernels would be dropped without a word).

    Raises
    ------
    InvalidInputError
        A sequence kernel on numeric points or on a numeric column, a vector kernel on a
        column of strings, a kernel that does not say which column it reads when that is
        ambiguous, or a column that no kernel reads while some kernel does not name its
        columns.
    """
    if not isinstance(X, Points):
        for m, s in enumerate(specs):
            if isinstance(s, _SequenceKernel):
                raise InvalidInputError(_numeric_note(m, s, X))
        return [s._entry() for s in specs]

    def col(j: int) -> str:
        return f"column {names[j]!r}" if names is not None else X.label(j)

    seq_cols = [j for j, (is_seq, _) in enumerate(X.columns) if is_seq]
    num_cols = [j for j, (is_seq, _) in enumerate(X.columns) if not is_seq]
    out: list[_Entry] = []
    read: set[int] = set()
    for m, s in enumerate(specs):
        feats = getattr(s, "features", None)
        wanted: list[int] = list(range(len(X.columns))) if feats is None else list(feats)
        if any(j >= len(X.columns) for j in wanted):
            raise InvalidInputError(
                f"kernel {m}, {s!r}, reads column {max(wanted)}, but X has {len(X.columns)} columns"
            )
        if isinstance(s, _SequenceKernel):
            if feats is None:
                if len(seq_cols) != 1:
                    raise InvalidInputError(
                        f"kernel {m}, {s!r}, does not say which column of sequences it reads "
                        f"and X has {len(seq_cols)}: pass features=[column]"
                    )
                wanted = seq_cols
            j = wanted[0]
            if j not in seq_cols:
                raise InvalidInputError(
                    f"kernel {m}, {s!r}, reads sequences, but {col(j)} of X holds numbers; "
                    f"the columns of strings are {', '.join(col(c) for c in seq_cols)}"
                )
            read.add(j)
            out.append(s._with_features((X.columns[j][1],))._entry())
            continue
        if feats is None:
            wanted = num_cols
        strings = [j for j in wanted if j in seq_cols]
        if strings or not wanted:
            raise InvalidInputError(
                f"kernel {m}, {s!r}, reads numeric features, but {col(strings[0])} of X "
                f"holds strings (sequences): use a sequence kernel (Spectrum, WeightedDegree) "
                f"for it"
                if strings
                else f"kernel {m}, {s!r}, reads numeric features, but X has only columns of "
                f"strings (sequences): use a sequence kernel (Spectrum, WeightedDegree)"
            )
        read.update(wanted)
        out.append(s._with_features(tuple(X.columns[j][1] for j in wanted))._entry())
    unread = [j for j in range(len(X.columns)) if j not in read]
    if unread and any(getattr(s, "features", None) is None for s in specs):
        kinds = [
            f"{col(j)} ({'strings: sequences or categories' if j in seq_cols else 'numbers'})"
            for j in unread
        ]
        raise InvalidInputError(
            f"{', '.join(kinds)} of X {'is' if len(unread) == 1 else 'are'} read by no kernel: "
            f"vector kernels read numeric columns, a sequence kernel (Spectrum, WeightedDegree) "
            f"one column of strings. Every column of X is read unless every kernel names its "
            f"columns (features=[...]): name them to leave {'it' if len(unread) == 1 else 'them'}"
            f" out, drop {'it' if len(unread) == 1 else 'them'} from X, or encode categories "
            f"as numbers (e.g. one-hot)"
        )
    return out


def _numeric_note(m: int, s: Kernel, X: Any) -> str:
    """Why the sequence kernel ``s`` (kernel ``m``) refuses ``X``, which holds no strings,
    saying what ``X`` is."""
    arr = X if isinstance(X, np.ndarray) else None
    what = (
        f"an array of shape {arr.shape} and dtype {arr.dtype}"
        if arr is not None
        else f"a {type(X).__name__}"
    )
    return (
        f"kernel {m}, {s!r}, reads sequences (strings), but X is numeric ({what}): pass the "
        f"sequences as a 1-D array (or list) of strings, or a DataFrame with a column of "
        f"strings"
    )


def _refuse_numbers(specs: Sequence[Any], X: Any) -> None:
    """Refuse raw points ``X`` without strings for a sequence kernel of ``specs``, before
    they are read as numbers (an object array of numbers was refused for its shape, not for
    what the kernel reads)."""
    seq = next(((m, s) for m, s in enumerate(specs) if isinstance(s, _SequenceKernel)), None)
    if seq is not None and not has_sequences(X):
        raise InvalidInputError(_numeric_note(seq[0], seq[1], X))


def _refuse_sparse(specs: Sequence[Any], X: Any) -> None:
    """Refuse sparse ``X`` for a kernel of ``specs`` that cannot read it: a sequence kernel
    (sequences are strings) or a :class:`Callable` (its function takes NumPy arrays), naming
    it; the vector kernels read sparse points as they are."""
    if not is_sparse(X):
        return
    for m, s in enumerate(specs):
        if isinstance(s, (_SequenceKernel, Callable)):
            raise sparse_refused(f"kernel {m}, {s!r},")


def _points_for(specs: Sequence[Any], X: Any) -> CheckedPoints:
    """The raw points ``X`` of the kernels ``specs``, checked (:func:`check_points`) after
    :func:`_refuse_sparse` and :func:`_refuse_numbers`."""
    _refuse_sparse(specs, X)
    _refuse_numbers(specs, X)
    return check_points(X)
