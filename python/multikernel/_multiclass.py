"""How :class:`~multikernel.MKLClassifier` reduces its classes to binary problems: the
samples' class weights, the one-vs-rest and one-vs-one problems (fitted through joblib,
fanned out under a parallel backend), the one problem of ``multi_class="shared"``, Platt's
folds of each binary problem, and the one-vs-one votes of ``predict``."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Iterator
from typing import Any, TypeAlias

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import NDArray

from . import _core, _progress
from ._auto import Choice
from ._base import BaseMKL, Previous, Start
from ._config import AnalyticConfig
from ._data import Dense, Stack, scatter_kept
from ._platt import out_of_fold, platt_fit
from ._record import FitRecord
from ._shared import SHARED_PENALTIES, fit_shared
from ._validation import check_bool, check_n_threads, check_random_state, group_ids
from .exceptions import InvalidInputError, InvalidParameterError, NonFiniteError
from .kernels import FeatureBank


class Classifier(BaseMKL):
    """What the reductions read of a classifier, beyond every estimator's settings:
    :class:`~multikernel.MKLClassifier` is the one (declared here, not imported, so that
    the reductions do not depend on the estimator that calls them)."""

    probability: bool
    random_state: int | None


#: One binary problem of a multiclass fit: the solver chosen for its stack, the stack, ±1
#: targets, log label, warm start and sample weights.
Problem: TypeAlias = (
    "tuple[Choice, Stack, NDArray[np.float64], str, Start | None, NDArray[np.float64] | None]"
)

#: One binary problem as Platt's folds read it: its stack, ±1 targets, sample weights and
#: the names of its +1 and −1 sides (for errors: ``"class 2"``, ``"the rest"``).
Binary: TypeAlias = "tuple[Stack, NDArray[np.float64], NDArray[np.float64] | None, str, str]"


def class_weights(
    class_weight: Any, classes: NDArray[Any], yi: NDArray[np.intp], w: NDArray[np.float64] | None
) -> NDArray[np.float64] | None:
    """The per-sample weights ``w`` (None: ones) times ``class_weight``'s weight of each
    sample's class (:func:`per_class_weights`). None when both are None."""
    if class_weight is None:
        return w
    counts = np.bincount(yi, minlength=len(classes))
    cw = per_class_weights(class_weight, classes, counts)[yi]
    return cw if w is None else w * cw


def per_class_weights(
    class_weight: Any, classes: NDArray[Any], counts: NDArray[np.integer[Any]]
) -> NDArray[np.float64]:
    """``class_weight``'s weight of each of the ``classes`` (``counts``: their samples), as
    scikit-learn's ``SVC`` defines it: ``"balanced"`` gives class ``k`` ``n / (K · n_k)``;
    a dict maps labels to weights (missing labels: 1)."""
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InvalidParameterError(
                f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}",
                parameter="class_weight",
            )
        # scikit-learn's "balanced" counts samples, not weights.
        n = np.asarray(counts).astype(np.float64)
        per_class: NDArray[np.float64] = n.sum() / (len(classes) * n)
        return per_class
    if isinstance(class_weight, dict):
        unknown = [k for k in class_weight if k not in set(classes.tolist())]
        if unknown:
            raise InvalidParameterError(
                f"class_weight names labels {unknown!r} that are not among the classes "
                f"{classes.tolist()!r}",
                parameter="class_weight",
            )
        per_class = np.ones(len(classes))
        for k, c in enumerate(classes.tolist()):
            value = class_weight.get(c, 1.0)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise InvalidParameterError(
                    f"class_weight values must be real numbers (finite and > 0), got "
                    f"{value!r} for class {c!r}",
                    parameter="class_weight",
                )
            per_class[k] = float(value)
        if not (np.isfinite(per_class).all() and (per_class > 0).all()):
            raise InvalidParameterError(
                f"class_weight values must be finite and > 0, got {class_weight!r}",
                parameter="class_weight",
            )
        return per_class
    raise InvalidParameterError(
        f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}",
        parameter="class_weight",
    )


def log_name(c: Any) -> str:
    """A class label as a log line names it: ``'a'`` or ``3``, not ``np.int64(3)``."""
    return repr(c.item() if isinstance(c, np.generic) else c)


def solve_record(
    est: BaseMKL,
    choice: Choice,
    G: Stack,
    y: NDArray[np.float64],
    settings: _core.Settings,
    label: str,
    start: Start | None = None,
    weight: NDArray[np.float64] | None = None,
) -> FitRecord:
    """One binary problem of a multiclass fit (a joblib task, maybe in another process)."""
    r = est._solve(choice, G.aligned(), y, settings, label, start, weight)
    return r if isinstance(r, FitRecord) else FitRecord.of(r)


def solve_many(
    est: BaseMKL,
    problems: Iterable[Problem],
    settings: _core.Settings,
) -> list[FitRecord]:
    """The binary problems ``(choice, G, y, label, start, w)`` of a multiclass fit, through
    joblib: one after the other by default, fanned out under a parallel backend
    (``joblib.parallel_backend("dask")`` runs them on a Dask cluster). Each fit is
    deterministic: the same bits wherever it runs."""
    todo = list(problems)
    jobs = (
        delayed(solve_record)(est, choice, G, y, settings, lb, st, w)
        for choice, G, y, lb, st, w in todo
    )
    if not _progress.bars_on(est.verbose):
        out: list[FitRecord] = Parallel()(jobs)
        return out
    # A bar over the problems, ticked as each result arrives (in order).
    name = f"{type(est).__name__}: binary problems"
    with _progress.bar(est.verbose, len(todo), name, "problem") as b:
        out = []
        for r in Parallel(return_as="generator")(jobs):
            out.append(r)
            b.update()
    return out


def one_vs_rest(
    est: Classifier,
    choice: Choice,
    settings: _core.Settings,
    G: Stack,
    yi: NDArray[np.intp],
    classes: NDArray[Any],
    sw: NDArray[np.float64] | None,
    starts: list[Start | None] | None,
) -> tuple[list[FitRecord], list[Binary]]:
    """One problem per class on ``G``, by ``choice``, the solver chosen for it (``starts``:
    their warm starts, None: cold), through joblib; the fits and the problems."""
    start = starts or [None] * len(classes)

    def ovr() -> Iterator[Problem]:
        for k in range(len(classes)):
            name = f" (class {log_name(classes[k])} vs rest)"
            yield choice, G, np.where(yi == k, 1.0, -1.0), name, start[k], sw

    results = solve_many(est, ovr(), settings)
    binary: list[Binary] = [
        (G, np.where(yi == k, 1.0, -1.0), sw, f"class {log_name(c)}", "the rest")
        for k, c in enumerate(classes)
    ]
    return results, binary


def one_vs_one(
    est: Classifier,
    choice: Choice,
    settings: _core.Settings,
    G: Stack,
    yi: NDArray[np.intp],
    classes: NDArray[Any],
    sw: NDArray[np.float64] | None,
    previous: Previous,
    key: tuple[Any, ...] | None,
    platt: bool,
) -> tuple[list[FitRecord], list[Binary], list[NDArray[Any]], list[tuple[int, int]]]:
    """One problem per pair of classes, each on its own points (a stack with its own choice
    of ``choice``'s rule), through joblib (warm started from ``previous`` when it shares
    ``key``); the fits, the problems (for Platt's folds when ``platt``), the coefficients
    scattered back to all n points, and the pairs."""
    n = G.n
    problems = [(a, b) for a in range(len(classes)) for b in range(a + 1, len(classes))]
    index = [np.flatnonzero((yi == a) | (yi == b)) for a, b in problems]
    pair_starts = est._warm_starts(previous, key, index) or [None] * len(problems)

    def ovo() -> Iterator[Problem]:
        for (a, b), idx, st in zip(problems, index, pair_starts, strict=True):
            name = f" (class {log_name(classes[a])} vs {log_name(classes[b])})"
            w = None if sw is None else sw[idx]
            pair = G.subset(idx)
            yield choice.on(pair), pair, np.where(yi[idx] == a, 1.0, -1.0), name, st, w

    results = solve_many(est, ovo(), settings)
    binary: list[Binary] = []
    if platt:
        binary = [
            (
                G.subset(idx),
                np.where(yi[idx] == a, 1.0, -1.0),
                None if sw is None else sw[idx],
                f"class {log_name(classes[a])}",
                f"class {log_name(classes[b])}",
            )
            for (a, b), idx in zip(problems, index, strict=True)
        ]
    coefs = []
    for r, idx in zip(results, index, strict=True):
        full = np.zeros((G.M, n))
        full[:, idx] = r.coef
        coefs.append(full)
    return results, binary, coefs, problems


def check_shared(est: Classifier) -> None:
    """Refuse, before any kernel is computed and before the solver is chosen (which
    would name the ``l1`` solvers'), what ``multi_class="shared"`` does not fit."""
    what: tuple[str, str] | None = None
    loss = est._losses[0] if est.loss is None else est.loss
    platt = check_bool(est.probability, "probability") and loss != "logistic"
    if est.penalty not in SHARED_PENALTIES:
        what = (
            "penalty",
            f"penalty={est.penalty!r}; it fits penalty='lp' (p in [1, inf]), "
            "penalty='l1', penalty='elasticnet' and penalty='group'",
        )
    elif est.solver not in ("auto", "analytic") or (est.penalty != "lp" and est.solver != "auto"):
        what = (
            "solver",
            f"solver={est.solver!r}; its solver is 'auto' (the engine's shared solver: "
            "the classes' single-kernel solves with the binary solvers' steps on the "
            "kernel weights; 'analytic' names it for penalty='lp')",
        )
    elif est.solver_config is not None and not isinstance(est.solver_config, AnalyticConfig):
        what = "solver_config", "a solver_config other than AnalyticConfig"
    elif est.solver_config is not None and est.penalty != "lp":
        # solver='auto' reads the config as the l1 solvers' (wrapper, spicy).
        what = (
            "solver_config",
            f"a solver_config with penalty={est.penalty!r} (its solves take defaults)",
        )
    elif isinstance(est.kernels, FeatureBank):
        what = "kernels", "a FeatureBank; it fits kernel specifications or 'precomputed'"
    elif est.cache_size is not None:
        what = "cache_size", "cache_size= (kernels computed on demand); it reads a stack"
    elif platt:
        what = (
            "probability",
            (
                "probability=True with a hinge-type loss; use loss='logistic' for "
                "probabilities, or multi_class='ovr'"
            ),
        )
    if what is not None:
        raise InvalidParameterError(
            f"multi_class='shared' does not take {what[1]}", parameter=what[0]
        )


def set_shared(
    est: Classifier,
    G: Dense,
    yi: NDArray[np.intp],
    n_classes: int,
    settings: _core.Settings,
    weight: NDArray[np.float64] | None,
) -> None:
    """Fit the one-vs-rest problems coupled through one θ (docs/mathematics.md §3.8)
    and store the whole problem's model and certificate. ``weight``: the samples'
    weights (``class_weight`` included); samples of weight 0 have no loss in any class
    and are left out of the fit (as :meth:`BaseMKL._solve_logged`), their coefficients 0."""
    if weight is not None and not bool(np.all(weight > 0)):
        keep = np.flatnonzero(weight > 0)
        r = _fit_shared(est, G.subset(keep), yi[keep], n_classes, settings, weight[keep])
        r = dataclasses.replace(r, coef=scatter_kept(r.coef, keep, G.n))
    else:
        r = _fit_shared(est, G, yi, n_classes, settings, weight)
    # One record with a leading class axis: the single-fit path of _set_results.
    est._set_results([r], multi=False, label=" (shared)")


def _fit_shared(
    est: Classifier,
    G: Dense,
    yi: NDArray[np.intp],
    n_classes: int,
    settings: _core.Settings,
    weight: NDArray[np.float64] | None,
) -> FitRecord:
    """One shared fit on the samples of positive weight."""
    Y = np.stack([np.where(yi == k, 1.0, -1.0) for k in range(n_classes)])
    cfg = est.solver_config if isinstance(est.solver_config, AnalyticConfig) else None
    inner = {key: settings[key] for key in ("C", "loss", "epsilon", "tol", "max_iter")} | (
        cfg or AnalyticConfig()
    )._native()
    name = f"{type(est).__name__} (shared)"
    groups = group_ids(est.groups, G.M)[0] if est.penalty == "group" else None
    with _progress.iteration_log(name, est.verbose, int(est.max_iter), "it") as log:
        return fit_shared(
            G.G, Y, inner, penalty=str(est.penalty), p=float(est.p),
            l1_ratio=float(est.l1_ratio), groups=groups,
            n_threads=check_n_threads(est.n_threads), sample_weight=weight,
            on_iteration=log,
        )  # fmt: skip


def platt_problem(
    est: Classifier,
    choice: Choice,
    settings: _core.Settings,
    G: Stack,
    y: NDArray[np.float64],
    w: NDArray[np.float64] | None,
    pos: str = "one class",
    neg: str = "the other",
) -> tuple[float, float]:
    """Platt's ``(A, B)`` of one binary problem (its sides named ``pos`` and ``neg``) from
    out-of-fold decision values (5 stratified folds, fewer when a class has fewer points;
    each fold's fit weighted by ``w``, the sigmoid's fit unweighted, as libsvm's). Samples
    of weight 0 are left out of the folds and of the sigmoid's fit, as libsvm removes them
    before its cross-validation: a fold would otherwise train on none of a class's weighted
    samples. Non-finite decision values (a stack with NaN that ``check_input=False`` let
    through) are a :class:`~multikernel.exceptions.NonFiniteError`."""
    weighted = w is not None and not bool(np.all(w > 0))
    if w is not None and weighted:
        keep = np.flatnonzero(w > 0)
        G, y, w = G.subset(keep), y[keep], w[keep]
    sides = [(int((y > 0).sum()), pos), (int((y < 0).sum()), neg)]
    smallest, name = min(sides, key=lambda s: s[0])
    if smallest < 2:
        of = " of nonzero weight" if weighted else ""
        raise InvalidInputError(
            f"probability=True cross-validates every binary problem and needs at least two "
            f"points{of} of each of its classes for the probability folds; {name} has "
            f"{smallest} in the problem {pos} vs {neg}"
        )

    n_splits = min(5, smallest)
    desc = f"{type(est).__name__}: probability folds"
    with _progress.bar(est.verbose, n_splits, desc, "fold", leave=False) as b:

        def decision(tr: NDArray[np.intp], te: NDArray[np.intp]) -> NDArray[np.float64]:
            # A fit on the points tr, evaluated on the points te of the same stack.
            sub = G.subset(tr)
            wt = None if w is None else w[tr]
            r = est._solve(choice.on(sub), sub, y[tr], settings, " (probability fold)", weight=wt)
            A = np.asarray(r.coef)
            b.update()
            return G.cross(te, tr).decision(A, float(r.intercept), sub.weights(A))

        seed = (check_random_state(est.random_state) or 0) % 2**32
        f = out_of_fold(decision, y, n_splits, seed)
    bad = np.flatnonzero(~np.isfinite(f))
    if len(bad):
        raise NonFiniteError(
            f"probability=True: {len(bad)} of the {len(f)} out-of-fold decision values of the "
            f"problem {pos} vs {neg} are not finite (e.g. {f[bad[0]]}), so Platt's sigmoid "
            "cannot be fitted; the kernel stack or the features likely hold NaN or infinity, "
            "which check_input=False does not look for"
        )
    return platt_fit(f, y)


def vote(f: NDArray[np.float64], pairs: NDArray[np.int64], classes: NDArray[Any]) -> NDArray[Any]:
    """The labels of one-vs-one decision values ``f`` (a column per pair of ``pairs``,
    positive for its first class): the most votes."""
    votes = np.zeros((f.shape[0], len(classes)))
    for k, (a, b) in enumerate(pairs):
        votes[:, a] += f[:, k] > 0
        votes[:, b] += f[:, k] <= 0
    # Ties broken by the summed confidences, as scikit-learn's SVC does.
    conf = np.zeros_like(votes)
    for k, (a, b) in enumerate(pairs):
        conf[:, a] += f[:, k]
        conf[:, b] -= f[:, k]
    votes += conf / (3 * (np.abs(conf).max() + 1))
    res: NDArray[Any] = classes[np.argmax(votes, axis=1)]
    return res
