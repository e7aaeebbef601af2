"""The Dask fit takes what the in-memory classifier takes (multikernel._dask_fit,
docs/dask.md): ``class_weight``, more than two classes (one-vs-rest, one-vs-one),
``probability=True`` with the hinge losses (Platt's folds as sets of whole chunks), and a
Dask DataFrame whose columns the kernels name. Each equals the in-memory fit on the bank's
features (``kernels="precomputed"``), or on the pandas frame, under uneven chunkings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import multikernel as mk
from multikernel._platt import platt_fit
from multikernel.exceptions import InvalidInputError
from multikernel.kernels import FeatureBank, Gaussian, Linear

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

N = 480
TOL = 1e-8


@pytest.fixture(scope="module")
def client(inprocess_client: Any) -> Any:
    return inprocess_client


def data(classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points, labels (strings, unbalanced classes) and sample weights."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, 5))
    score = X[:, 0] - 0.7 * X[:, 1] + 0.5 * np.sin(2 * X[:, 2]) + 0.4 * rng.standard_normal(N)
    cuts = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1] ** 0.7)
    y = np.array([f"c{k}" for k in np.searchsorted(cuts, score)])
    return X, y, rng.uniform(0.5, 2.0, N)


def bank() -> FeatureBank:
    specs = [Linear(features=[j]) for j in range(5)] + [Gaussian(sigma=2.0)]
    return FeatureBank(specs, method="rff", n_components=8, random_state=0)


def classifier(kernels: Any, **kw: Any) -> mk.MKLClassifier:
    settings = {"loss": "logistic", "penalty": "l1", "tol": 1e-10, **kw}
    return mk.MKLClassifier(kernels=kernels, solver="prox_newton", C=2.0, max_iter=500, **settings)


def rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def dask_fit(est: Any, X: Any, y: Any, w: Any, chunks: Any) -> Any:
    Xd, yd, wd = (da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in (X, y, w))
    return est.fit(Xd, yd, sample_weight=wd)


def assert_same_fit(est: Any, ref: Any) -> None:
    """The certificates, weights, intercepts and predictions of two fits, to ``TOL``."""
    for name in ("primal_objective_", "dual_objective_", "kernel_weights_", "intercept_"):
        assert rel(getattr(est, name), getattr(ref, name)) < TOL, name
    assert np.shape(est.primal_objective_) == np.shape(ref.primal_objective_)
    for a, b in zip(est.coef_, ref.coef_, strict=True):
        assert a.shape == b.shape
        assert rel(a, b) < TOL
    np.testing.assert_array_equal(est.classes_, ref.classes_)
    np.testing.assert_array_equal(est.pairs_, ref.pairs_)


def fold_decisions(
    blocks: list[np.ndarray], yb: np.ndarray, w: np.ndarray, chunks: list[np.ndarray], **kw: Any
) -> np.ndarray:
    """Out-of-fold decision values of the folds of whole chunks (chunk ``i`` of the problem
    in fold ``i mod min(5, chunks)``): in-memory fits on the other folds' rows."""
    k = min(5, len(chunks))
    f = np.empty(len(yb))
    for j in range(k):
        test = np.concatenate([c for i, c in enumerate(chunks) if i % k == j])
        train = np.concatenate([c for i, c in enumerate(chunks) if i % k != j])
        fit = classifier("precomputed", **kw).fit(
            [b[train] for b in blocks], yb[train], sample_weight=w[train]
        )
        f[test] = fit.decision_function([b[test] for b in blocks])
    return f


def row_chunks(chunks: tuple[int, ...]) -> list[np.ndarray]:
    ends = np.cumsum((0, *chunks))
    return [np.arange(a, b) for a, b in zip(ends[:-1], ends[1:], strict=True)]


@pytest.mark.parametrize(
    ("classes", "kw", "chunks"),
    [
        (2, {"class_weight": "balanced"}, (250, 50, 180)),
        (2, {"class_weight": {"c1": 3.0}, "loss": "squared_hinge", "penalty": "lp"}, 120),
        (3, {"multi_class": "ovr", "class_weight": "balanced"}, (100, 230, 150)),
        (3, {"multi_class": "ovo", "class_weight": {"c0": 0.5, "c2": 2.0}}, (300, 180)),
        (4, {"multi_class": "ovo", "loss": "squared_hinge", "penalty": "elasticnet"}, 200),
    ],
)
def test_class_weight_and_multiclass_equal_the_in_memory_fit(
    client: Any, classes: int, kw: dict[str, Any], chunks: Any
) -> None:
    X, y, w = data(classes)
    est = dask_fit(classifier(bank(), **kw), X, y, w, chunks)
    blocks = est.kernel_bank_.transform(X)
    ref = classifier("precomputed", **kw).fit(blocks, y, sample_weight=w)
    assert_same_fit(est, ref)
    assert est.dual_coef_.shape[-1] == 0  # the columns stay on the cluster
    np.testing.assert_array_equal(est.predict(X), ref.predict(blocks))
    if kw.get("loss", "logistic") == "logistic":
        P, R = est.predict_proba(X), ref.predict_proba(blocks)
        assert rel(P, R) < TOL


def test_class_weight_changes_the_fit(client: Any) -> None:
    """The weights reach the loss: a fit with ``class_weight`` is not the fit without."""
    X, y, w = data(2)
    plain = dask_fit(classifier(bank()), X, y, w, 200)
    weighted = dask_fit(classifier(bank(), class_weight={"c0": 4.0}), X, y, w, 200)
    assert rel(weighted.primal_objective_, plain.primal_objective_) > 1e-3


@pytest.mark.parametrize(
    ("classes", "kw", "chunks"),
    [
        (2, {"loss": "squared_hinge", "tol": 1e-8, "class_weight": "balanced"}, (250, 50, 180)),
        (3, {"loss": "squared_hinge", "tol": 1e-8, "multi_class": "ovo"}, (130, 90, 160, 100)),
        # (The hinge's smoothing levels and five problems of six fits: heavier.)
        pytest.param(
            2,
            {"loss": "hinge", "tol": 1e-2, "class_weight": "balanced"},
            (250, 50, 180),
            marks=pytest.mark.slow,
        ),
        pytest.param(
            3,
            {"loss": "squared_hinge", "tol": 1e-8, "multi_class": "ovr"},
            (100, 60, 90, 150, 80),
            marks=pytest.mark.slow,
        ),
    ],
)
def test_platt_folds_are_chunk_sets_and_equal_the_in_memory_folds(
    client: Any, classes: int, kw: dict[str, Any], chunks: tuple[int, ...]
) -> None:
    X, y, w = data(classes, seed=1)
    est = dask_fit(classifier(bank(), probability=True, **kw), X, y, w, chunks)
    blocks = est.kernel_bank_.transform(X)
    plain = {k: v for k, v in kw.items() if k != "class_weight"}
    ref = classifier("precomputed", **kw).fit(blocks, y, sample_weight=w)
    assert_same_fit(est, ref)
    # Each binary problem's Platt (A, B), from its own in-memory folds of whole chunks.
    names = est.classes_
    cw = np.ones(N)
    if kw.get("class_weight") == "balanced":
        counts = {c: np.sum(y == c) for c in names}
        cw = np.array([N / (len(names) * counts[c]) for c in y])
    problems: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, ±1 targets)
    if len(names) == 2:
        problems = [(np.arange(N), np.where(y == names[1], 1.0, -1.0))]
    elif kw["multi_class"] == "ovr":
        problems = [(np.arange(N), np.where(y == c, 1.0, -1.0)) for c in names]
    else:
        for a, b in est.pairs_:
            rows = np.flatnonzero((y == names[a]) | (y == names[b]))
            problems.append((rows, np.where(y[rows] == names[a], 1.0, -1.0)))
    assert len(est.probA_) == len(problems)
    for k, (rows, yb) in enumerate(problems):
        # The problem's chunks: each row chunk's rows of the problem (none is empty here).
        pos = np.searchsorted(rows, np.cumsum(chunks)[:-1])
        parts = [np.arange(a, b) for a, b in zip((0, *pos), (*pos, len(rows)), strict=True)]
        assert all(len(p) for p in parts)
        sub = [b[rows] for b in blocks]
        f = fold_decisions(sub, yb, (w * cw)[rows], parts, **plain)
        A, B = platt_fit(f, yb)
        assert abs(est.probA_[k] - A) < TOL * max(1.0, abs(A)), k
        assert abs(est.probB_[k] - B) < TOL * max(1.0, abs(B)), k
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P.shape == (N, len(names))


def test_platt_needs_two_chunks_and_both_classes_outside_each_fold(client: Any) -> None:
    X, y, w = data(2)
    est = classifier(bank(), loss="squared_hinge", probability=True)
    with pytest.raises(InvalidInputError, match="at least two row chunks"):
        dask_fit(est, X, y, w, N)
    # Sorted labels: the chunks outside a fold hold one class only.
    order = np.argsort(y, kind="stable")
    with pytest.raises(InvalidInputError, match="hold no point of class"):
        dask_fit(est, X[order], y[order], w[order], N // 2)


def test_a_dask_dataframe_equals_the_in_memory_fit_on_the_pandas_frame(client: Any) -> None:
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y, _ = data(3)
    cols = ["alpha", "beta", "gamma", "delta", "eps"]
    df = pd.DataFrame(X, columns=cols).assign(delta=lambda f: (f.delta > 0).astype(np.int64))
    specs = [Linear(features=["alpha", "beta"]), Linear(features=["delta"])]
    specs += [Gaussian(sigma=2.0, features=["gamma", "eps"])]
    make = lambda: FeatureBank(specs, method="rff", n_components=8, random_state=0)  # noqa: E731
    ddf = dd.from_pandas(df, npartitions=3)
    ys = dd.from_pandas(pd.Series(y), npartitions=2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, N)
    ws = dd.from_pandas(pd.Series(w), npartitions=4)
    est = classifier(make(), multi_class="ovr").fit(ddf, ys, sample_weight=ws)
    ref = classifier(make(), multi_class="ovr").fit(df, y, sample_weight=w)
    assert_same_fit(est, ref)
    np.testing.assert_array_equal(est.feature_names_in_, cols)
    np.testing.assert_array_equal(est.kernel_bank_.feature_names_in_, cols)
    assert rel(est.decision_function(df), ref.decision_function(df)) < TOL
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[cols[::-1]])
    with pytest.raises(InvalidInputError, match=r"\['label'\] of X are not"):
        classifier(make()).fit(ddf.assign(label="a"), ys)
    with pytest.raises(ValueError, match="zeta"):
        bad = FeatureBank([Linear(features=["zeta"])], method="rff")
        classifier(bad).fit(ddf, ys)


def test_one_vs_rest_warm_starts_reuse_the_features(client: Any) -> None:
    """A grid of ``C`` over one-vs-rest problems: the features stay on the cluster, each
    class starts from its last fit, and the fits are the cold fits."""
    from multikernel import _dask_fit

    X, y, w = data(3)
    Xd, yd = da.from_array(X, chunks=(200, 280)), da.from_array(y, chunks=(200, 280))
    est = classifier(bank(), tol=1e-8, warm_start=True).fit(Xd, yd)
    first = _dask_fit.held(est)
    for C in (1.0, 4.0):
        est.set_params(C=C).fit(Xd, yd)
        assert _dask_fit.held(est) is first
        cold = classifier(bank(), tol=1e-8).set_params(C=C).fit(Xd, yd)
        assert rel(est.primal_objective_, cold.primal_objective_) < 1e-7
    assert np.sum(est.n_iter_) < np.sum(cold.n_iter_)


def test_auto_moves_the_group_penalty_to_prox_newton_with_its_groups() -> None:
    """``solver="auto"`` with ``penalty="group"`` on narrow features: the estimator's settings
    are ``mirror``'s, and the move to ``prox_newton`` (the engine's ``Settings.for_solver``)
    carries the group penalty with its ids, set before the move as in memory."""
    from multikernel._dask_fit import _settings

    est = mk.MKLClassifier(kernels=FeatureBank([Linear()]), penalty="group", groups=[0, 0, 1])
    settings = _settings(est, N, [2, 2, 2])
    assert (settings.solver, settings["penalty"], settings["groups"]) == (
        "prox_newton", "group", [0, 0, 1]
    )  # fmt: skip
