"""A classifier's problems in a Dask fit (docs/dask.md, "Every setting of the classifier"):
its class weights, one problem for two classes, one per class (one-vs-rest) or per pair of
classes (one-vs-one) on the persisted features of :mod:`._dask_fit`, and Platt's sigmoid of
each problem from folds of whole chunks (:func:`folds`), fitted on the chunks' sums."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import _core, _platt
from ._dask_fit import Features, Problem, first_start, fit_problem, submit_costs
from ._multiclass import log_name, per_class_weights
from ._validation import check_n_threads, check_sparse, is_sparse
from .exceptions import InternalError, InvalidInputError, InvalidParameterError, NonFiniteError

__all__: list[str] = []


def _targets(codes: NDArray[Any], k: int) -> NDArray[np.float64]:
    """A chunk's targets of the problem "class ``k`` against the others": ±1."""
    return np.where(codes == k, 1.0, -1.0)


def _pair_rows(v: Any, codes: NDArray[Any], a: int, b: int) -> Any:
    """The rows of ``v`` (a chunk's features, dense or sparse, or its loss weights) of the
    classes ``a`` and ``b``; sparse ones in canonical form (what the engine reads)."""
    rows = (codes == a) | (codes == b)
    return check_sparse(v[rows]) if is_sparse(v) else v[rows]


def _pair_targets(codes: NDArray[Any], a: int, b: int) -> NDArray[np.float64]:
    """A chunk's targets of the one-vs-one problem of ``a`` (+1) and ``b`` (−1), on its rows
    of those classes."""
    return np.where(codes[(codes == a) | (codes == b)] == a, 1.0, -1.0)


def _decision(x: Any, w: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """A chunk's decision values ``F w + b`` (``F`` dense, or sparse: its stored entries)."""
    F = x if is_sparse(x) else np.require(x, requirements=["C", "A"])
    f: NDArray[np.float64] = np.asarray(F @ w, dtype=np.float64) + b
    return f


def _platt_part(
    f: NDArray[np.float64], y: NDArray[np.float64], a: float, b: float, n_pos: float, n_neg: float
) -> _platt.PlattSums:
    """A chunk's part of Platt's sums at ``(a, b)`` (:func:`._platt.platt_sums`)."""
    return _platt.platt_sums(f, y, a, b, n_pos, n_neg)


def _nonfinite(f: NDArray[np.float64]) -> int:
    return int(np.count_nonzero(~np.isfinite(f)))


def classify(
    est: Any,
    client: Any,
    data: Features,
    settings: _core.Settings,
    scheme: str | None,
    platt: bool,
    previous: Any,
    made: list[Any],
) -> tuple[list[_core.FitResult], list[tuple[float, float]]]:
    """A classifier's binary problems, one after the other (two classes: one; more: one per
    class, or per pair of classes, on the persisted features), with Platt's ``(A, B)`` of
    each when ``platt``; ``made`` collects the futures made for them."""
    classes, counts = data.classes, data.counts
    if classes is None or counts is None:
        raise InternalError("a classifier's fit reached its problems without its classes")
    K = len(classes)
    multi = scheme if K > 2 else None
    if multi == "shared":
        raise InvalidParameterError(
            "a Dask fit takes kernels=FeatureBank(...), and multi_class='shared' fits a dense "
            "kernel stack (the engine's shared solver has no feature-space form): use "
            "multi_class='ovr' or 'ovo'",
            parameter="multi_class",
        )
    per_class = None
    if est.class_weight is not None:
        per_class = per_class_weights(est.class_weight, classes, counts.sum(axis=0))
    costs = submit_costs(client, data, float(est.C), per_class)
    made += costs
    key = ("prox_newton", settings["loss"], data.n, len(data.dims), tuple(data.dims))
    starts = est._warm_starts(previous, (*key, tuple(classes.tolist()), multi))
    threads = check_n_threads(est.n_threads)
    name = [f"class {log_name(c)}" for c in classes]
    total = counts.sum(axis=1)

    def one_vs_rest(k: int, pos: str, neg: str, label: str) -> Problem:
        y = [client.submit(_targets, codes, k, pure=False) for codes in data.y]
        made.extend(y)
        sides = [(int(a), int(t - a)) for a, t in zip(counts[:, k], total, strict=True)]
        return Problem(data.x, y, costs, data.sizes, sides, pos, neg, label, data.sparse)

    def one_vs_one(a: int, b: int) -> tuple[Problem, list[Any]]:
        at = [i for i in range(len(data.x)) if counts[i, a] + counts[i, b] > 0]
        x = [client.submit(_pair_rows, data.x[i], data.y[i], a, b, pure=False) for i in at]
        c = [client.submit(_pair_rows, costs[i], data.y[i], a, b, pure=False) for i in at]
        y = [client.submit(_pair_targets, data.y[i], a, b, pure=False) for i in at]
        sides = [(int(counts[i, a]), int(counts[i, b])) for i in at]
        label = f" (class {log_name(classes[a])} vs {log_name(classes[b])})"
        problem = Problem(
            x, y, c, [p + q for p, q in sides], sides, name[a], name[b], label, data.sparse
        )
        return problem, [*x, *c, *y]

    results: list[_core.FitResult] = []
    ab: list[tuple[float, float]] = []

    def solve(problem: Problem, start: Any) -> None:
        results.append(fit_problem(est, client, problem, data.dims, threads, start))
        if platt:
            ab.append(_platt_problem(est, client, problem, data.dims, threads))

    if multi is None:
        solve(one_vs_rest(1, name[1], name[0], ""), first_start(starts))
    elif multi == "ovr":
        for k in range(K):
            solve(one_vs_rest(k, name[k], "the rest", f" (class {log_name(classes[k])} vs rest)"),
                  first_start(starts, k))  # fmt: skip
    else:
        pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
        for j, (a, b) in enumerate(pairs):
            problem, own = one_vs_one(a, b)
            made.extend(own)
            solve(problem, first_start(starts, j))
            client.cancel(own)  # a pair's rows: released before the next pair's are made
    return results, ab


def folds(chunks: int) -> list[list[int]]:
    """Platt's folds of a Dask fit on ``chunks`` chunks: ``min(5, chunks)`` sets of whole
    chunks, chunk ``i`` in fold ``i mod`` that number."""
    k = min(5, chunks)
    return [list(range(j, chunks, k)) for j in range(k)]


def _platt_problem(
    est: Any, client: Any, problem: Problem, dims: list[int], threads: int
) -> tuple[float, float]:
    """Platt's ``(A, B)`` of one binary problem of a Dask fit: decision values of each
    chunk from the fit on the chunks of the other folds (:func:`folds`), each fold's fit
    weighted as the problem, the sigmoid's fit unweighted and run on the chunks' sums
    (:func:`._platt.platt_newton`); nothing of size ``n`` reaches the client."""
    k = len(problem.x)
    if k < 2:
        raise InvalidInputError(
            f"probability=True on a Dask array cross-validates each binary problem on folds of "
            f"whole chunks, and the problem {problem.pos} vs {problem.neg} has its points in "
            f"{k} chunk: rechunk X into at least two row chunks"
        )
    sets = folds(k)
    f: list[Any] = [None] * k
    try:
        for test in sets:
            train = [i for i in range(k) if i not in test]
            pos = sum(problem.sides[i][0] for i in train)
            neg = sum(problem.sides[i][1] for i in train)
            if pos == 0 or neg == 0:
                side = problem.pos if pos == 0 else problem.neg
                raise InvalidInputError(
                    f"probability=True on a Dask array cross-validates each binary problem on "
                    f"folds of whole chunks (chunk i in fold i mod {len(sets)}), and the "
                    f"chunks outside fold {sets.index(test)} hold no point of {side} in the "
                    f"problem {problem.pos} vs {problem.neg}: shuffle the rows, or rechunk X"
                )
            sub = problem.chunks(train)
            sub.label = " (probability fold)"
            r = fit_problem(est, client, sub, dims, threads, None)
            w, b = np.asarray(r.feature_weights, dtype=np.float64), float(r.intercept)
            for i in test:
                f[i] = client.submit(_decision, problem.x[i], w, b, pure=False)
        bad = sum(client.gather(client.map(_nonfinite, f, pure=False)))
        if bad:
            raise NonFiniteError(
                f"probability=True: {bad} of the {problem.n} out-of-fold decision values of "
                f"the problem {problem.pos} vs {problem.neg} are not finite, so Platt's "
                "sigmoid cannot be fitted"
            )
        n_pos = float(sum(p for p, _ in problem.sides))
        n_neg = float(sum(q for _, q in problem.sides))

        def sums(a: float, b: float) -> _platt.PlattSums:
            parts = client.gather(
                [client.submit(_platt_part, fi, yi, a, b, n_pos, n_neg, pure=False)
                 for fi, yi in zip(f, problem.y, strict=True)]
            )  # fmt: skip
            return tuple(math.fsum(v) for v in zip(*parts, strict=True))  # type: ignore[return-value]

        return _platt.platt_newton(n_pos, n_neg, sums)
    finally:
        client.cancel([v for v in f if v is not None])
