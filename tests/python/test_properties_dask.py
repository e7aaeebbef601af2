"""Properties of the Dask fit's inputs (multikernel._dask_fit, docs/dask.md "Inputs"): under
any row chunking of ``X`` and ``y`` (uneven, size-1 chunks, ``y`` chunked apart from ``X``)
and dtype (float32, float64, int64), a valid input gives the in-memory fit of the same
estimator, and a hostile one (NaN or infinity in ``X`` or ``y``, unknown chunk sizes,
strings) a ``multikernel.exceptions`` error that names the problem and where it is. One
in-process cluster for the module; few examples, derandomized."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import multikernel as mk
from multikernel.exceptions import InvalidInputError, NonFiniteError
from multikernel.kernels import FeatureBank, Linear

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

N, D = 40, 3
SETTINGS = settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def client(inprocess_client: Any) -> Any:
    return inprocess_client


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[int, ...]:
    """Row chunks of ``N`` rows: at most 6, uneven, sometimes one of a single row."""
    cuts = set(draw(st.lists(st.integers(1, N - 1), max_size=4)))
    if draw(st.booleans()):
        at = draw(st.integers(1, N - 2))
        cuts |= {at, at + 1}
    edges = [0, *sorted(cuts), N]
    return tuple(b - a for a, b in zip(edges, edges[1:], strict=False))


def problem(seed: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) * (4 if dtype == "int64" else 1)
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(N) > 0, 1.0, -1.0)
    return X.astype(dtype), y


def estimator() -> Any:
    bank = FeatureBank([Linear(features=[j]) for j in range(D)], normalize="none")
    return mk.MKLClassifier(
        kernels=bank, penalty="lp", loss="logistic", solver="prox_newton", C=1.0, tol=1e-8
    )


def rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@settings(SETTINGS, max_examples=8)
@given(
    x_chunks=chunkings(),
    y_chunks=chunkings(),
    dtype=st.sampled_from(["float32", "float64", "int64"]),
    seed=st.integers(0, 2**16),
)
def test_any_chunking_and_dtype_gives_the_in_memory_fit(
    client: Any, x_chunks: tuple[int, ...], y_chunks: tuple[int, ...], dtype: str, seed: int
) -> None:
    X, y = problem(seed, dtype)
    est = estimator().fit(da.from_array(X, chunks=(x_chunks, D)), da.from_array(y, chunks=y_chunks))
    ref = estimator().fit(X, y)
    assert est.n_iter_ == ref.n_iter_
    assert rel(est.kernel_weights_, ref.kernel_weights_) < 1e-10
    assert rel(est.decision_function(X), ref.decision_function(X)) < 1e-9


@settings(SETTINGS, max_examples=20)
@given(
    x_chunks=chunkings(),
    kind=st.sampled_from(["X", "y", "unknown", "strings"]),
    dtype=st.sampled_from(["float32", "float64"]),
    value=st.sampled_from([np.nan, np.inf, -np.inf]),
    rows=st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True),
    column=st.integers(0, D - 1),
)
def test_a_hostile_input_is_named(
    client: Any,
    x_chunks: tuple[int, ...],
    kind: str,
    dtype: str,
    value: float,
    rows: list[int],
    column: int,
) -> None:
    X, y = problem(0, dtype)
    Xd, yd = da.from_array(X, chunks=(x_chunks, D)), da.from_array(y, chunks=(x_chunks,))
    error: type[Exception] = NonFiniteError
    if kind == "X":
        # One point: the chunks' features are computed in parallel, and the first chunk to
        # fail names its own first point.
        X[rows[0], column] = value
        Xd = da.from_array(X, chunks=(x_chunks, D))
        message = rf"^X contains NaN or infinity \(first at row {rows[0]}, column {column}\)$"
    elif kind == "y":
        y[rows] = value
        yd = da.from_array(y, chunks=(x_chunks,))
        message = rf"^y contains NaN or infinity \(first at row {min(rows)}\)$"
    elif kind == "unknown":
        keep = da.from_array(np.arange(N) != rows[0], chunks=(x_chunks,))
        Xd, yd = Xd[keep], yd[keep]
        error, message = InvalidInputError, r"^X has unknown chunk sizes .*compute_chunk_sizes"
    else:
        Xd = da.from_array(X.astype(str), chunks=(x_chunks, D))
        error, message = InvalidInputError, r"numeric arrays .*X has dtype <U"
    with pytest.raises(error, match=message):
        estimator().fit(Xd, yd)
