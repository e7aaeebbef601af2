"""``solver="auto"`` (``multikernel._auto``): the rule against the table of docs/guide.md §4,
the on-demand predicate, SpicyMKL's continuation, and the engine solver that estimator fits
run."""

from __future__ import annotations

import dataclasses
import itertools
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from problems import small_problem, solvers_called
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel import _auto, _core
from multikernel._auto import Choice, StackInfo, choose, on_demand
from multikernel._config import ALL_LOSSES, SOLVERS, SolverConfig
from multikernel._data import Blocks, Dense, OnDemand, OnDemandRule
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, KernelBank, Linear

FloatArray = NDArray[np.float64]
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"

DENSE = StackInfo("dense", 200, 10)
ON_DEMAND = StackInfo("on_demand", 200, 10)
NARROW = StackInfo("features", 200, 5, width=100)  # 2 · 100 ≤ 200: the bound, but the hinge's
QUARTER = StackInfo("features", 400, 5, width=100)  # 4 · 100 ≤ 400: the hinge's bound
WIDE = StackInfo("features", 200, 5, width=101)
WRAPPER = Choice("wrapper", continued=True)
# Every move to prox_newton is one engine operation (Settings.for_solver): the choice names
# the solver only.
PROX_NEWTON = Choice("prox_newton")

#: The rows of the table in docs/guide.md §4 ("Choosing a solver"), case by case:
#: (penalty, p, loss, solver, solver_config, warm_start, stack) and the choice.
CASES: list[tuple[str, float, str, str, SolverConfig | None, bool, StackInfo | None, Choice]] = [
    # lp: analytic; prox_newton (penalty="lp") on features of total width ≤ n/2 (≤ n/4 with
    # the hinge), with or without warm_start, without an AnalyticConfig; mirror at p = 1
    # (also before the stack is known, and with warm_start).
    ("lp", 2.0, "hinge", "auto", None, False, DENSE, Choice("analytic")),
    ("lp", 2.0, "logistic", "auto", None, False, None, Choice("analytic")),
    ("lp", 4 / 3, "logistic", "auto", None, False, NARROW, PROX_NEWTON),
    ("lp", 4 / 3, "squared", "auto", None, True, NARROW, PROX_NEWTON),
    ("lp", 2.0, "hinge", "auto", None, False, NARROW, Choice("analytic")),
    ("lp", 2.0, "hinge", "auto", None, False, QUARTER, PROX_NEWTON),
    ("lp", 2.0, "logistic", "auto", None, False, WIDE, Choice("analytic")),
    ("lp", 2.0, "logistic", "auto", mk.AnalyticConfig(), False, NARROW, Choice("analytic")),
    ("lp", 1.0, "logistic", "auto", None, False, NARROW, Choice("mirror")),
    # ... and from p = 1.05 (LP_NEWTON_MIN_P): nearer 1 its Newton steps crawl.
    ("lp", 1.04, "logistic", "auto", None, False, NARROW, Choice("analytic")),
    ("lp", 1.05, "logistic", "auto", None, False, NARROW, PROX_NEWTON),
    ("lp", 2.0, "hinge", "auto", None, False, ON_DEMAND, Choice("analytic")),
    ("lp", 1.0, "hinge", "auto", None, False, DENSE, Choice("mirror")),
    ("lp", 1, "squared", "auto", None, True, None, Choice("mirror")),
    # group: mirror; prox_newton (penalty="group") on features of total width ≤ n/2 (≤ n/4
    # with the hinge) without a MirrorConfig.
    ("group", 2.0, "hinge", "auto", None, False, DENSE, Choice("mirror")),
    ("group", 2.0, "logistic", "auto", None, False, None, Choice("mirror")),
    ("group", 2.0, "logistic", "auto", None, False, NARROW, PROX_NEWTON),
    ("group", 2.0, "hinge", "auto", None, True, NARROW, Choice("mirror")),
    ("group", 2.0, "hinge", "auto", None, False, QUARTER, PROX_NEWTON),
    ("group", 2.0, "logistic", "auto", None, False, WIDE, Choice("mirror")),
    ("group", 2.0, "squared", "auto", mk.MirrorConfig(), False, NARROW, Choice("mirror")),
    # l1 / elasticnet: the wrapper, continued by SpicyMKL on a stored stack ...
    ("l1", 2.0, "hinge", "auto", None, False, DENSE, WRAPPER),
    ("elasticnet", 2.0, "logistic", "auto", None, False, DENSE, WRAPPER),
    ("l1", 2.0, "squared", "auto", mk.WrapperConfig(), False, DENSE, WRAPPER),
    # ... not on kernels computed on demand, and not yet before the stack is known;
    ("elasticnet", 2.0, "hinge", "auto", None, False, ON_DEMAND, Choice("wrapper")),
    ("l1", 2.0, "logistic", "auto", None, False, None, Choice("wrapper")),
    # prox_newton on features of total width ≤ n/2 (≤ n/4 with the hinge), else the wrapper;
    ("l1", 2.0, "logistic", "auto", None, False, NARROW, PROX_NEWTON),
    ("elasticnet", 2.0, "squared_hinge", "auto", mk.WrapperConfig(), False, NARROW, PROX_NEWTON),
    ("l1", 2.0, "squared", "auto", None, False, NARROW, PROX_NEWTON),
    ("l1", 2.0, "logistic", "auto", None, False, WIDE, WRAPPER),
    ("l1", 2.0, "hinge", "auto", None, False, NARROW, WRAPPER),
    ("l1", 2.0, "hinge", "auto", None, False, QUARTER, PROX_NEWTON),
    ("l1", 2.0, "epsilon_insensitive", "auto", None, False, NARROW, PROX_NEWTON),
    # With warm_start: prox_newton on narrow features (it takes a start in feature space),
    # else spicy; a SpicyConfig keeps spicy whatever the stack.
    ("l1", 2.0, "logistic", "auto", None, True, NARROW, PROX_NEWTON),
    ("elasticnet", 2.0, "squared", "auto", None, True, NARROW, PROX_NEWTON),
    ("l1", 2.0, "logistic", "auto", None, True, WIDE, Choice("spicy")),
    ("l1", 2.0, "hinge", "auto", None, True, NARROW, Choice("spicy")),
    ("l1", 2.0, "hinge", "auto", None, True, QUARTER, PROX_NEWTON),
    ("l1", 2.0, "logistic", "auto", None, True, None, Choice("spicy")),
    ("elasticnet", 2.0, "hinge", "auto", None, True, DENSE, Choice("spicy")),
    ("l1", 2.0, "logistic", "auto", mk.SpicyConfig(), True, NARROW, Choice("spicy")),
    ("l1", 2.0, "hinge", "auto", mk.SpicyConfig(), False, DENSE, Choice("spicy")),
    ("l1", 2.0, "logistic", "auto", mk.SpicyConfig(), False, NARROW, Choice("spicy")),
    # Another config falls back to the first l1 solver, whose config check refuses it early.
    ("l1", 2.0, "logistic", "auto", mk.ProxNewtonConfig(), False, None, Choice("spicy")),
    # A named solver runs as named: no move, no continuation.
    ("l1", 2.0, "logistic", "wrapper", None, False, NARROW, Choice("wrapper")),
    ("l1", 2.0, "hinge", "wrapper", None, False, DENSE, Choice("wrapper")),
    ("lp", 1.0, "hinge", "analytic", None, False, DENSE, Choice("analytic")),
    ("l1", 2.0, "hinge", "spicy", None, False, DENSE, Choice("spicy")),
]


def _choose(case: tuple[Any, ...]) -> Choice:
    penalty, p, loss, solver, config, warm, stack, _ = case
    return choose(
        penalty=penalty, p=p, loss=loss, solver=solver, solver_config=config, warm_start=warm,
        stack=stack,
    )  # fmt: skip


def _id(case: tuple[Any, ...]) -> str:
    penalty, p, loss, solver, config, warm, stack, _ = case
    kind = "unresolved" if stack is None else f"{stack.kind}{stack.width or ''}"
    return f"{penalty}-p{p:.3g}-{loss}-{solver}-{type(config).__name__}-warm{warm}-{kind}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_rule(case: tuple[Any, ...]) -> None:
    assert _choose(case) == case[-1]


def _guide_table() -> dict[str, set[str]]:
    """Per penalty, the solvers the ``auto`` column of the guide's §4 table names."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## 4. Choosing a solver") : text.index("## 5.")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    out: dict[str, set[str]] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        named = set(re.findall(r"`(\w+)`", cells[2])) & set(SOLVERS)
        for penalty in re.findall(r"`(\w+)`", cells[0]):
            out[penalty] = named
    return out


def test_the_guide_names_what_the_rule_picks() -> None:
    """The guide's table names, per penalty, exactly the solvers that ``auto`` picks in the
    cases above; and every auto case of a penalty is one the table covers."""
    table = _guide_table()
    picked: dict[str, set[str]] = {}
    for case in CASES:
        if case[3] == "auto":
            picked.setdefault(case[0], set()).add(case[-1].solver)
    assert table == picked
    assert table == {
        "lp": {"analytic", "prox_newton", "mirror"},
        "l1": {"wrapper", "prox_newton", "spicy"},
        "elasticnet": {"wrapper", "prox_newton", "spicy"},
        "group": {"mirror", "prox_newton"},
    }


def test_only_feature_blocks_move_the_early_choice() -> None:
    """What the estimators validate before resolution (``stack=None``) and what the
    on-demand predicate reads is the solver of every dense or on-demand fit; only feature
    blocks move it, from the wrapper (or, with warm_start, SpicyMKL) to prox_newton."""
    configs: list[SolverConfig | None] = [None, mk.WrapperConfig(), mk.SpicyConfig()]
    grid = itertools.product(
        ("lp", "l1", "elasticnet", "group"), (1.0, 2.0), ALL_LOSSES, configs, (False, True)
    )
    for penalty, p, loss, config, warm in grid:
        kw: dict[str, Any] = dict(
            penalty=penalty, p=p, loss=loss, solver="auto", solver_config=config,
            warm_start=warm,
        )  # fmt: skip
        early = choose(**kw, stack=None).solver
        assert (choose(**kw, stack=DENSE).solver, choose(**kw, stack=ON_DEMAND).solver) == (
            early,
            early,
        ), kw
        # Narrow features move the wrapper, the warm SpicyMKL without a config, and ℓp's
        # wrapper (p > 1) and group's mirror without one.
        movable = (
            early == "wrapper"
            or (early == "spicy" and warm and config is None)
            or (early == "analytic" and config is None)
            or (penalty == "group" and config is None)
        )
        moved = movable and loss != "hinge"
        assert choose(**kw, stack=NARROW).solver == ("prox_newton" if moved else early), kw
        # Every loss moves at a quarter of the points, the hinge not before.
        expected = "prox_newton" if movable else early
        assert choose(**kw, stack=QUARTER).solver == expected, kw
        wider = StackInfo("features", 399, 5, width=100)
        assert choose(**kw, stack=wider).solver == ("prox_newton" if moved else early), kw


def test_settings_and_stack_descriptions() -> None:
    settings = _core.Settings("wrapper", {"C": 2.0, "loss": "logistic", "inner_tol": 1e-6})
    moved = PROX_NEWTON.settings(settings)
    assert moved.solver == "prox_newton"
    # Every setting but the wrapper's own, and prox_newton's `p` and `groups`, which `l1`
    # does not read.
    assert {k: v for k, v in moved.as_dict().items() if k not in ("p", "groups")} == {
        k: v for k, v in settings.as_dict().items() if k not in ("inner_tol", "continued")
    }
    assert Choice("wrapper").settings(settings) == settings
    assert WRAPPER.settings(settings) == settings.replace(continued=True)
    # SpicyMKL's move keeps the elastic net and drops SpicyMKL's own settings.
    spicy = _core.Settings("spicy", {"penalty": "elasticnet", "l1_ratio": 0.3, "gamma0": 4.0})
    moved = PROX_NEWTON.settings(spicy)
    assert (moved["penalty"], moved["l1_ratio"]) == ("elasticnet", 0.3)
    assert moved.as_dict() == _core.Settings("prox_newton", {
        k: v for k, v in spicy.as_dict().items() if k not in dataclasses.asdict(mk.SpicyConfig())
    }).as_dict()  # fmt: skip
    # ℓp's move keeps p, C and the loss, and names the penalty.
    lp = _core.Settings("analytic", {"C": 2.0, "loss": "hinge", "p": 1.5, "inner_tol": 1e-6})
    moved = PROX_NEWTON.settings(lp)
    assert (moved.solver, moved["penalty"], moved["p"]) == ("prox_newton", "lp", 1.5)
    assert {k: moved[k] for k in ("C", "loss", "tol", "max_iter")} == {
        k: lp[k] for k in ("C", "loss", "tol", "max_iter")
    }
    # group's move keeps the groups, C and the loss, and names the penalty.
    mirror = _core.Settings("mirror", {"C": 2.0, "loss": "hinge", "groups": [0, 1, 0]})
    moved = PROX_NEWTON.settings(mirror)
    assert (moved.solver, moved["penalty"], moved["groups"]) == ("prox_newton", "group", [0, 1, 0])
    assert {k: moved[k] for k in ("C", "loss", "tol", "max_iter")} == {
        k: mirror[k] for k in ("C", "loss", "tol", "max_iter")
    }
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    specs = [Linear(), Gaussian(sigma=2.0)]
    assert StackInfo.of(Dense(KernelBank(specs).fit_transform(X))) == StackInfo("dense", 30, 2)
    blocks = Blocks([X[:, :1], X[:, 1:]])
    assert StackInfo.of(blocks) == StackInfo("features", 30, 2, width=4)
    lazy = OnDemand(KernelBank(specs).fit_on_demand(X, cache_bytes=1 << 20))
    assert StackInfo.of(lazy) == StackInfo("on_demand", 30, 2)


SPECS = [Linear(), Gaussian(sigma=1.0)]


@pytest.mark.parametrize(
    ("solver", "loss", "kernels", "cache_size", "expected"),
    [
        ("analytic", "hinge", SPECS, None, OnDemandRule(1024 << 20, False)),
        ("wrapper", "squared_hinge", SPECS, 2.0, OnDemandRule(2 << 20, True)),
        ("mirror", "epsilon_insensitive", None, 0.5, OnDemandRule(1 << 19, True)),
        ("spicy", "hinge", SPECS, None, None),
        ("interleaved", "hinge", SPECS, None, None),
        ("analytic", "logistic", SPECS, None, None),
        ("analytic", "hinge", "precomputed", None, None),
        ("wrapper", "hinge", FeatureBank([Linear()]), None, None),
    ],
)
def test_on_demand(
    solver: str, loss: str, kernels: Any, cache_size: float | None, expected: Any
) -> None:
    assert on_demand(solver, loss, kernels, cache_size) == expected


@pytest.mark.parametrize(
    ("solver", "loss", "kernels", "cache_size", "message"),
    [
        ("spicy", "hinge", SPECS, 1.0, "got solver='spicy', loss='hinge', kernels=list"),
        ("analytic", "logistic", SPECS, 1.0, "got solver='analytic', loss='logistic'"),
        ("analytic", "hinge", "precomputed", 1.0, "kernels=str"),
        ("analytic", "hinge", SPECS, 0.0, "cache_size must be in"),
    ],
)
def test_on_demand_refusals(
    solver: str, loss: str, kernels: Any, cache_size: float, message: str
) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        on_demand(solver, loss, kernels, cache_size)


def _wrapper_fit(max_iter: int) -> tuple[_core.FitResult, _core.Settings]:
    G, y = small_problem("pima", False, n=80, seed=2)
    settings = _core.Settings("wrapper", {
        "penalty": "l1", "l1_ratio": 1.0, "C": 10.0, "loss": "hinge", "tol": 1e-6,
        "max_iter": max_iter, "inner_tol": 1e-7,
    })  # fmt: skip
    return _core.fit(settings, G, y), settings


def test_continuation() -> None:
    """SpicyMKL continues a wrapper fit that stopped above tol when the rule asked for it, in
    the same engine call: the result is that of SpicyMKL's default settings in place of the
    wrapper's own, started from the stopped fit's model (the better certificate kept)."""
    stopped, settings = _wrapper_fit(max_iter=1)
    assert stopped.status == _core.Status.MAX_ITER and stopped.solvers == ["wrapper"]
    continued = WRAPPER.settings(settings)
    assert continued["continued"] and not Choice("wrapper").settings(settings)["continued"]
    G, y = small_problem("pima", False, n=80, seed=2)
    both = _core.fit(continued, G, y)
    expected = {k: v for k, v in settings.as_dict().items() if k not in ("inner_tol", "continued")}
    spicy = _core.Settings("spicy", expected | mk.SpicyConfig()._native())
    assert spicy["C"] == 10.0 and spicy["tol"] == 1e-6 and spicy["gamma0"] == 1.0
    second = _core.fit(
        spicy, G, y, init_coef=np.ascontiguousarray(stopped.coef),
        init_intercept=float(stopped.intercept),
    )  # fmt: skip
    kept = second if second.converged or second.gap < stopped.gap else stopped
    assert both.solvers == ["wrapper", "spicy"]
    np.testing.assert_array_equal(both.coef, kept.coef)
    assert both.gap == kept.gap and both.primal == kept.primal
    done, settings = _wrapper_fit(max_iter=500)
    assert done.status == _core.Status.CONVERGED
    assert _core.fit(WRAPPER.settings(settings), G, y).solvers == ["wrapper"]


def _cancer(n: int) -> tuple[FloatArray, FloatArray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X[:n], np.where(y[:n] == 1, 1.0, -1.0)


def test_estimators_run_the_rules_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine solver of each fit: prox_newton on a narrow FeatureBank, the wrapper on a
    dense stack, SpicyMKL with warm_start, mirror at p = 1, analytic for lp."""
    G, y = small_problem("sonar", False, n=60, seed=1)
    X, yc = _cancer(120)
    bank = FeatureBank([Linear(features=list(range(k, k + 5))) for k in (0, 5)], normalize="none")
    calls = solvers_called(monkeypatch)
    cases: list[tuple[dict[str, Any], Any, Any, str]] = [
        (dict(kernels=bank, penalty="l1", loss="logistic"), X, yc, "prox_newton"),
        (dict(kernels="precomputed", penalty="l1"), G, y, "wrapper"),
        (dict(kernels="precomputed", penalty="l1", warm_start=True), G, y, "spicy"),
        (dict(kernels="precomputed", penalty="lp", p=1.0), G, y, "mirror"),
        (dict(kernels="precomputed", penalty="lp", p=2.0), G, y, "analytic"),
        (dict(kernels="precomputed", penalty="group", groups=[0] * 5 + [1] * 5), G, y, "mirror"),
        (dict(kernels=bank, penalty="group", groups=[0, 1], loss="logistic"), X, yc, "prox_newton"),
    ]
    for params, data, target, solver in cases:
        calls.clear()
        mk.MKLClassifier(**params).fit(data, target)
        assert calls == [solver], params


def test_each_fitted_stack_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule reads the stack each engine fit runs on: 10 features on 20 points are narrow
    (prox_newton), and a zero weight leaves 19 points, too few (the wrapper)."""
    X, y = _cancer(20)
    bank = FeatureBank([Linear(features=list(range(k, k + 5))) for k in (0, 5)], normalize="none")
    calls = solvers_called(monkeypatch)
    est = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic")
    est.fit(X, y)
    est.fit(X, y, sample_weight=np.r_[0.0, np.ones(19)])
    assert calls == ["prox_newton", "wrapper"]


def test_a_fit_chooses_once_per_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule decides once before the input is resolved, then once per stack a fit runs
    on, its choice carried to that stack's warm-start key and engine fit: the training stack,
    the points of positive weight, each one-vs-one pair."""
    X, y = _cancer(40)
    bank = FeatureBank([Linear(features=list(range(k, k + 5))) for k in (0, 5)], normalize="none")
    asked: list[StackInfo | None] = []
    real = _auto.choose

    def spy(**kw: Any) -> Choice:
        asked.append(kw["stack"])
        return real(**kw)

    monkeypatch.setattr(_auto, "choose", spy)
    est = mk.MKLClassifier(kernels=bank, penalty="l1", loss="logistic", warm_start=True)
    est.fit(X, y)
    assert asked == [None, StackInfo("features", 40, 2, width=10)]
    asked.clear()
    est.fit(X, y, sample_weight=np.r_[0.0, np.ones(39)])
    assert asked == [None, StackInfo("features", 40, 2, 10), StackInfo("features", 39, 2, 10)]
    asked.clear()
    labels = np.arange(40) % 3
    est.set_params(multi_class="ovo", warm_start=False).fit(X, labels)
    pairs = [StackInfo("features", int(np.sum((labels == a) | (labels == b))), 2, 10)
             for a, b in ((0, 1), (0, 2), (1, 2))]  # fmt: skip
    assert asked == [None, StackInfo("features", 40, 2, 10), *pairs]


def test_a_stopped_wrapper_is_continued_under_auto_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``auto`` SpicyMKL continues a wrapper fit that stopped at ``max_iter``; a named
    wrapper, and the wrapper on kernels computed on demand, end there."""
    G, y = small_problem("pima", False, n=80, seed=2)
    kw: dict[str, Any] = dict(penalty="l1", C=10.0, max_iter=1, tol=1e-10, normalize="none")
    X = np.random.default_rng(3).normal(size=(80, 3))
    calls = solvers_called(monkeypatch)
    runs: list[tuple[dict[str, Any], Any, list[str]]] = [
        (dict(kernels="precomputed"), G, ["wrapper", "spicy"]),
        (dict(kernels="precomputed", solver="wrapper"), G, ["wrapper"]),
        (dict(kernels=SPECS, cache_size=1.0), X, ["wrapper"]),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for params, data, expected in runs:
            calls.clear()
            mk.MKLClassifier(**kw, **params).fit(data, y)
            assert calls == expected, params


def test_a_continued_fit_reports_both_solvers_their_iterations_and_the_handover(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 70: a wrapper fit that stops above tol (here at max_iter) is continued by SpicyMKL;
    the estimator reports both solvers, the iterations of each (summing to ``n_iter_``, which
    counts every engine iteration), and ``history_`` marks where one handed over."""
    G, y = small_problem("ionosphere", False, n=60, seed=1)
    clf = mk.MKLClassifier(
        kernels="precomputed", penalty="l1", C=10.0, tol=1e-9, max_iter=3, verbose=1
    )
    with caplog.at_level("INFO", logger="multikernel"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(G, y)
    assert clf.solvers_ == ("wrapper", "spicy")
    wrapper_iters, spicy_iters = clf.solver_iterations_
    # (SpicyMKL counts the certificate of its start as one iteration: max_iter + 1.)
    assert wrapper_iters == 3 and 1 <= spicy_iters <= 4
    assert clf.n_iter_ == wrapper_iters + spicy_iters
    # The engine's own records of the two fits, in order: the wrapper's, then SpicyMKL's.
    marks = np.asarray(clf.history_["solver"])
    assert marks[0] == 0 and marks[-1] == 1
    assert np.all(np.diff(marks) >= 0)
    assert np.count_nonzero(marks == 1) == spicy_iters
    last = caplog.records[-1].getMessage()
    assert f"in {clf.n_iter_} iterations (wrapper {wrapper_iters} then spicy {spicy_iters})" in last


@pytest.mark.parametrize(
    ("kw", "solver"),
    [
        ({"penalty": "lp", "p": 2.0}, "analytic"),
        ({"penalty": "group", "groups": [0] * 5 + [1] * 5}, "mirror"),
    ],
)
def test_a_single_solver_reports_itself_with_every_iteration(
    kw: dict[str, Any], solver: str
) -> None:
    G, y = small_problem("sonar", False, n=60, seed=1)
    clf = mk.MKLClassifier(kernels="precomputed", C=1.0, tol=1e-4, **kw).fit(G, y)
    assert clf.solvers_ == (solver,)
    assert clf.solver_iterations_ == (clf.n_iter_,)
    assert len(clf.history_) == clf.n_iter_ and np.all(clf.history_["solver"] == 0)
