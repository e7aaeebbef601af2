"""The typed boundary between the engine and Python: result and status objects, the one table
of settings, the exception hierarchy, panics, and ``verbose`` logging."""

from __future__ import annotations

import ast
import dataclasses
import logging
import math
import pickle
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
from problems import fit_lp, small_problem
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel import _core
from multikernel._config import ALL_LOSSES, SOLVERS
from multikernel._typing import NativeSolver
from multikernel.exceptions import (
    InternalError,
    InvalidInputError,
    InvalidParameterError,
    KernelNotPSDError,
    KernelNotSymmetricError,
    MultikernelError,
    NonFiniteError,
    NumericalError,
    StackTooLargeError,
)


def psd_stack(n: int = 12, m: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(m):
        F = rng.normal(size=(n, 4))
        out.append(F @ F.T)
    return np.stack(out)


# --- exceptions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (InvalidParameterError, ValueError),
        (InvalidInputError, ValueError),
        (NonFiniteError, ValueError),
        (KernelNotSymmetricError, ValueError),
        (KernelNotPSDError, ValueError),
        (StackTooLargeError, MemoryError),
        (NumericalError, np.linalg.LinAlgError),
        (InternalError, RuntimeError),
    ],
)
def test_every_error_is_a_multikernel_error_and_a_builtin(cls: type, builtin: type) -> None:
    assert issubclass(cls, MultikernelError) and issubclass(cls, builtin)
    assert mk.exceptions.__dict__[cls.__name__] is cls


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stack_errors_name_the_kernel_and_the_entry(dtype: type) -> None:
    G = psd_stack().astype(dtype)
    bad = G.copy()
    bad[2, 7, 3] += 1.0  # below the diagonal: K[7, 3] ≠ K[3, 7]
    with pytest.raises(KernelNotSymmetricError, match=r"kernel 2 is not symmetric") as e:
        mk.kernels.validate_stack(bad)
    assert (e.value.kernel, e.value.entry) == (2, (7, 3))
    bad = G.copy()
    bad[1, 4, 9] = np.nan
    with pytest.raises(NonFiniteError) as f:
        mk.kernels.validate_stack(bad)
    assert (f.value.kernel, f.value.entry) == (1, (4, 9))
    bad = G.copy()
    bad[0, 5, 5] = -1.0
    with pytest.raises(KernelNotPSDError, match=r"K\[5,5\] = -1") as g:
        mk.kernels.validate_stack(bad)
    assert (g.value.kernel, g.value.entry) == (0, (5, 5))
    # Cauchy–Schwarz: |K_ij| ≤ sqrt(K_ii K_jj) for every PSD kernel.
    bad = G.copy()
    bound = np.sqrt(G[1, 6, 6] * G[1, 2, 2])
    bad[1, 6, 2] = bad[1, 2, 6] = 1.01 * bound + 1e-3
    with pytest.raises(KernelNotPSDError, match=r"\|K\[6,2\]\| = .* exceeds") as h:
        mk.kernels.validate_stack(bad)
    assert (h.value.kernel, h.value.entry) == (1, (6, 2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernels_at_the_cauchy_schwarz_bound_pass(dtype: type) -> None:
    """Rank-one kernels and duplicated points sit on the bound; rounding must not be a
    violation (checked on every normalisation of the Gram functions)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    X[20:] = X[:20] * (1 + 1e-9)  # near-duplicates
    specs = [mk.kernels.Linear(features=[0]), mk.kernels.Linear(), mk.kernels.Gaussian(sigma=0.3),
             mk.kernels.Polynomial(degree=3)]  # fmt: skip
    for norm in ("none", "trace", "mean_diag", "multiplicative", "spherical"):
        for center in (False, True):
            G = mk.kernels.gram(X, specs, normalize=norm, center=center, dtype=dtype)
            mk.kernels.validate_stack(G)


def test_a_kernel_breaking_cauchy_schwarz_is_refused_by_fit() -> None:
    # K + 50(11ᵀ − I): symmetric, positive diagonal, indefinite; it used to be fitted.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    K = X @ X.T
    y = np.where(X[:, 0] > 0, 1, -1)
    bad = K + 50 * (np.ones((30, 30)) - np.eye(30))
    with pytest.raises(KernelNotPSDError, match="Cauchy") as e:
        mk.MKLClassifier(kernels="precomputed").fit(np.stack([K, bad]), y)
    assert e.value.kernel == 1


def test_a_kernel_with_a_negative_diagonal_is_refused_by_fit() -> None:
    # It used to be fitted silently with zero weight.
    K = psd_stack(n=20, m=1)[0]
    y = np.where(np.arange(20) % 2 == 0, 1, -1)
    with pytest.raises(KernelNotPSDError) as e:
        mk.MKLClassifier(kernels="precomputed").fit(np.stack([K, K - 2 * np.eye(20) * K.max()]), y)
    assert e.value.kernel == 1 and e.value.entry is not None
    i, j = e.value.entry
    assert i == j


def test_stack_too_large_is_a_memory_error() -> None:
    with pytest.raises(MemoryError, match=r"GiB.*float32"):
        _core.gram_fit(np.zeros((10, 2)), [("linear", 0.0, 0.0, 0.0, None)] * 3, "none",
                       False, False, 1, 1000)  # fmt: skip


@pytest.mark.parametrize("in_pool", [False, True])
def test_a_panic_becomes_an_internal_error(in_pool: bool) -> None:
    # A Rust panic would otherwise be pyo3's PanicException, a BaseException.
    with pytest.raises(InternalError, match="test panic"):
        _core._panic_for_tests(in_pool)
    try:
        _core._panic_for_tests(in_pool)
    except Exception as exc:  # the point: an ordinary except clause catches it
        assert isinstance(exc, MultikernelError)
    # The pool still works after a panic in one of its workers.
    G = psd_stack()
    v = np.ones(12)
    np.testing.assert_allclose(mk.kernels.quad_forms(G, v), G.sum(axis=(1, 2)), rtol=1e-12)


# --- settings -----------------------------------------------------------------------------


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_config_defaults_are_the_engines(solver: str) -> None:
    engine = _core.Settings(solver).as_dict()  # type: ignore[arg-type]
    config = SOLVERS[solver].config()  # type: ignore[index]
    for f in dataclasses.fields(config):
        assert getattr(config, f.name) == engine[f.name], f.name
    # The estimator-level defaults are the engine's too.
    est = mk.MKLClassifier()
    for name in ("C", "tol", "max_iter", "epsilon") + (("p",) if "p" in engine else ()):
        assert getattr(est, name) == engine[name], name
    if "hinge" in SOLVERS[solver].losses:  # type: ignore[index]
        assert engine["loss"] == mk.MKLClassifier._losses[0] == "hinge"
    else:  # svrg: smooth losses only, its default is one of them
        assert engine["loss"] in SOLVERS[solver].losses  # type: ignore[index]


@pytest.mark.parametrize(
    ("make", "parameter"),
    [
        (lambda: mk.SpicyConfig(gamma_factor=0.5), "gamma_factor"),
        (lambda: mk.SpicyConfig(gamma_factor=1e7), "gamma_factor"),
        (lambda: mk.SpicyConfig(gamma0=2.0, gamma_max=1.0), "gamma_max"),
        (lambda: mk.SpicyConfig(gamma0=math.inf), "gamma0"),
        (lambda: mk.SpicyConfig(max_inner=0), "max_inner"),
        (lambda: mk.SpicyConfig(max_inner=True), "max_inner"),
        (lambda: mk.SpicyConfig(working_set=0), "working_set"),
        (lambda: mk.SpicyConfig(working_set=2.5), "working_set"),  # type: ignore[arg-type]
        (lambda: mk.AnalyticConfig(inner_tol=0.0), "inner_tol"),
        (lambda: mk.InterleavedConfig(inner_tol=-1.0), "inner_tol"),
    ],
)
def test_configs_are_checked_by_the_engine_on_creation(make: object, parameter: str) -> None:
    with pytest.raises(InvalidParameterError, match=parameter) as e:
        make()  # type: ignore[operator]
    assert e.value.parameter == parameter


def test_estimator_settings_are_checked_before_any_kernel_is_computed() -> None:
    X = np.zeros((1_000_000, 1))  # a bank that could not be computed
    with pytest.raises(InvalidParameterError) as e:
        mk.MKLClassifier(kernels=[mk.kernels.Linear()] * 4, C=math.nan).fit(X, np.arange(len(X)))
    assert e.value.parameter == "C"


def test_unknown_and_ill_typed_settings_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="gama0") as e:
        _core.Settings("spicy", {"gama0": 1.0})
    assert e.value.parameter == "gama0"
    with pytest.raises(InvalidParameterError, match="real number") as e:
        _core.Settings("analytic", {"C": "1"})
    assert e.value.parameter == "C"
    with pytest.raises(InvalidParameterError, match="loss"):
        _core.Settings("analytic", {"loss": "hinj"})
    with pytest.raises(InvalidParameterError, match="unknown solver") as e:
        _core.Settings("simplemkl")  # type: ignore[arg-type]
    assert e.value.parameter == "solver"


def _stub_imports(name: str) -> str:
    """Where the native module's stub takes its name ``name`` from (``module.name``)."""
    stub = Path(_core.__file__).with_name("_core.pyi")
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return f"{node.module}.{alias.name}"
    raise AssertionError(f"{name} is not imported by the stub")


def test_every_declaration_of_the_solvers_is_the_engines() -> None:
    # The engine's table is the one registry: the typing aliases, the stub and SOLVERS are
    # checked against it (a solver added on one side only fails here).
    engine = _core.Settings.solvers()
    assert len(set(engine)) == len(engine) == 8
    assert get_args(NativeSolver) == tuple(engine)
    # The names are written once in Python, in _typing: the stub imports them from there.
    assert _stub_imports("_Solver") == "multikernel._typing.NativeSolver"
    supervised = tuple(s for s in engine if s != "one_class")
    assert tuple(SOLVERS) == supervised
    assert get_args(mk.SolverName) == ("auto", *supervised)
    for solver in engine:
        assert _core.Settings(solver).solver == solver


def test_the_engine_states_what_each_solver_fits_and_python_derives_its_lists() -> None:
    """One table of capabilities, the engine's: each row's losses are those its settings
    accept (the test below, solver by solver), kernels on demand need one of them, and the
    facade's lists are read off the table. No module of the package writes a list of solver
    names by hand (outside the ``Literal`` types, which the test above ties to the engine)."""
    from multikernel import _auto

    caps = _core.capabilities()
    assert list(caps) == _core.Settings.solvers()
    for solver, row in caps.items():
        assert set(row) == {"features", "warm_start", "penalties", "losses", "on_demand_losses"}
        if solver in SOLVERS:
            assert set(row["losses"]) == set(SOLVERS[solver].losses)  # type: ignore[index]
            assert tuple(row["penalties"]) == SOLVERS[solver].penalties  # type: ignore[index]
        assert set(row["on_demand_losses"]) <= set(row["losses"])
    from multikernel import _shared

    shared = _core.shared_capabilities()
    assert _shared.SHARED_LOSSES == tuple(shared["losses"])
    assert _shared.SHARED_PENALTIES == tuple(shared["penalties"])
    assert set(shared["losses"]) == {"hinge", "squared_hinge", "logistic"}
    assert _auto.ON_DEMAND_SOLVERS == tuple(s for s in caps if caps[s]["on_demand_losses"])
    assert _auto.FEATURE_SOLVERS == tuple(s for s in caps if caps[s]["features"])
    assert _auto.WARM_SOLVERS == tuple(s for s in caps if caps[s]["warm_start"])
    # The engine refuses kernels on demand by the rule it states, in the words the facade
    # quotes: the one sentence names exactly the capable solvers.
    rule = _core.on_demand_rule()
    for solver in caps:
        assert (f"'{solver}'" in rule) == (solver in _auto.ON_DEMAND_SOLVERS), (solver, rule)
    names = set(caps)
    handwritten = []
    for path in Path(mk.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_literal = {
            id(sub)
            for node in ast.walk(tree)
            if isinstance(node, ast.Subscript)
            and getattr(node.value, "id", getattr(node.value, "attr", None)) == "Literal"
            for sub in ast.walk(node.slice)
        }
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and id(node) not in in_literal:
                values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
                if len(values) >= 2 and len(values) == len(node.elts) and set(values) <= names:
                    handwritten.append(f"{path.name}:{node.lineno} {values}")
    assert not handwritten, handwritten


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_each_solvers_losses_are_the_ones_its_engine_settings_accept(solver: str) -> None:
    accepted = []
    for loss in ALL_LOSSES:
        try:
            _core.Settings(solver, {"loss": loss})  # type: ignore[arg-type]
        except InvalidParameterError as e:
            assert e.parameter == "loss", e
        else:
            accepted.append(loss)
    assert set(accepted) == set(SOLVERS[solver].losses)  # type: ignore[index]


def test_settings_read_write_copy_and_pickle() -> None:
    s = _core.Settings("spicy", {"C": 2.0, "penalty": "elasticnet", "l1_ratio": 0.5})
    d = s.as_dict()
    assert (d["C"], d["penalty"], d["l1_ratio"], d["gamma0"]) == (2.0, "elasticnet", 0.5, 1.0)
    assert s["working_set"] is None and s["loss"] == "hinge"
    with pytest.raises(KeyError):
        s["p"]
    # Every setting written out reads back to the same settings; a pickle is the same.
    assert _core.Settings("spicy", d) == s
    assert pickle.loads(pickle.dumps(s)) == s
    assert s != _core.Settings("spicy", {**d, "C": 3.0})
    # A copy is validated as a new one.
    t = s.replace(gamma_factor=100.0)
    assert (t["gamma_factor"], t["C"], s["gamma_factor"]) == (100.0, 2.0, 10.0)
    with pytest.raises(InvalidParameterError) as e:
        s.replace(gamma_factor=0.5)
    assert e.value.parameter == "gamma_factor"
    with pytest.raises(InvalidParameterError) as e:
        s.replace(gama0=1.0)
    assert e.value.parameter == "gama0"


@pytest.mark.parametrize(
    ("solver", "named"),
    [
        ("wrapper", {"penalty": "elasticnet", "l1_ratio": 0.3, "inner_tol": 1e-5}),
        ("spicy", {"penalty": "l1", "gamma0": 4.0, "working_set": 3}),
        ("analytic", {"p": 1.5, "inner_tol": 1e-5}),
        ("mirror", {"groups": [0, 1, 0], "step": "paper", "working_set": False}),
    ],
)
def test_a_change_of_solver_is_the_engines_and_carries_the_same_settings(
    solver: str, named: dict[str, object]
) -> None:
    """``solver="auto"``'s moves to ``prox_newton`` are one typed engine operation
    (``Settings.for_solver``): the settings that arrive are those the dict of the old
    settings gave, its names that ``prox_newton`` has kept, the solver's own dropped and its
    penalty named, with no list of per-solver settings in Python."""
    common = {"C": 2.5, "loss": "epsilon_insensitive", "epsilon": 0.3, "tol": 1e-5, "max_iter": 17}
    old = _core.Settings(solver, {**common, **named})  # type: ignore[arg-type]
    moved = old.for_solver("prox_newton")
    target = _core.Settings("prox_newton").as_dict()
    kept = {k: v for k, v in old.as_dict().items() if k in target}
    implied = {"analytic": "lp", "mirror": "group"}
    kept["penalty"] = implied.get(solver, kept.get("penalty"))
    assert moved == _core.Settings("prox_newton", kept)  # type: ignore[arg-type]
    assert {k: moved[k] for k in common} == common
    from multikernel import _auto

    assert not [n for n in vars(_auto) if n.endswith("_OWN")]
    # The same solver keeps its settings; a penalty the solver does not solve is refused.
    assert old.for_solver(solver) == old
    if solver == "mirror":
        with pytest.raises(InvalidParameterError) as e:
            old.for_solver("analytic")
        assert e.value.parameter == "penalty"


def test_group_ids_are_set_typed_on_the_group_penalty_only() -> None:
    mirror = _core.Settings("mirror").with_groups([0, 0, 1])
    assert mirror["groups"] == [0, 0, 1]
    newton = _core.Settings("prox_newton", {"penalty": "group", "groups": [0]})
    assert newton.with_groups([1, 0, 1])["groups"] == [1, 0, 1]
    for settings in (_core.Settings("analytic"), _core.Settings("prox_newton")):
        with pytest.raises(InvalidParameterError) as e:
            settings.with_groups([0, 1])
        assert e.value.parameter == "groups"


def test_settings_are_validated_once_per_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    # One-vs-rest with 3 classes runs 3 engine fits on the settings validated once: as many
    # Settings are made as for one binary fit.
    made: list[str] = []
    real = _core.Settings

    def counting(solver: str, settings: object = None) -> _core.Settings:
        made.append(solver)
        return real(solver, settings)  # type: ignore[arg-type]

    monkeypatch.setattr(_core, "Settings", counting)
    G, y = small_problem("ionosphere", False, n=60, seed=1)
    three = np.arange(60) % 3
    for labels in (y, three):
        made.clear()
        mk.MKLClassifier(kernels="precomputed", solver="analytic").fit(G, labels)
        assert made == ["analytic", "analytic"], made  # the default config, then the fit's


# --- results ------------------------------------------------------------------------------


def test_fit_returns_a_typed_result_with_a_status() -> None:
    G, y = small_problem("ionosphere", False, n=60, seed=1)
    r = fit_lp(G, y, p=2.0, C=1.0, loss="hinge", tol=1e-6, max_iter=200)
    assert isinstance(r, _core.FitResult)
    assert r.status == _core.Status.CONVERGED and r.converged
    # The gap is the relative difference of the two reported objectives (its definition only:
    # test_certificate.py checks P and D against an optimum computed without the engine).
    assert r.gap <= 1e-6 and r.gap == pytest.approx((r.primal - r.dual) / abs(r.primal))
    assert r.coef.shape == (G.shape[0], G.shape[1]) and r.history.shape == (r.n_iter, 6)
    # The history's last gap is the reported one (the tracker keeps the best P and D).
    assert r.history[-1, 2] == pytest.approx(r.gap)
    short = fit_lp(G, y, p=1.0, C=1.0, loss="hinge", tol=1e-12, max_iter=2)
    assert short.status == _core.Status.MAX_ITER and not short.converged
    assert str(short.status) == "max_iter reached"
    assert short.n_iter == 2 and short.history.shape == (2, 6)


def test_estimator_reads_the_result_and_warns_with_the_status() -> None:
    G, y = small_problem("ionosphere", False, n=60, seed=1)
    clf = mk.MKLClassifier(kernels="precomputed", p=1.0, solver="analytic", tol=1e-12, max_iter=2)
    with pytest.warns(ConvergenceWarning, match=r"max_iter reached"):
        clf.fit(G, y)
    assert clf.converged_ is False and clf.n_iter_ == 2
    r = fit_lp(G, y, p=1.0, C=1.0, loss="hinge", tol=1e-12, max_iter=2, inner_tol=1e-7)
    assert clf.primal_objective_ == r.primal and clf.duality_gap_ == r.gap
    np.testing.assert_array_equal(clf.history_["gap"], r.history[:, 2])


# --- verbose ------------------------------------------------------------------------------


def test_verbose_logs_one_record_per_outer_iteration(caplog: pytest.LogCaptureFixture) -> None:
    G, y = small_problem("sonar", False, n=60, seed=1)
    with caplog.at_level(logging.INFO, logger="multikernel"):
        quiet = mk.MKLClassifier(kernels="precomputed", penalty="l1", tol=1e-6).fit(G, y)
        assert not caplog.records
        loud = mk.MKLClassifier(kernels="precomputed", penalty="l1", tol=1e-6, verbose=1)
        loud.fit(G, y)
    # One record per iteration, then the fit's summary line.
    records = [r for r in caplog.records if r.name == "multikernel"]
    assert "converged in" in records.pop().getMessage()
    assert len(records) == len(loud.history_) == loud.n_iter_
    for rec, row in zip(records, loud.history_, strict=True):
        assert f"gap {row['gap']:.3e}" in rec.getMessage()
    assert quiet.primal_objective_ == loud.primal_objective_
    with pytest.raises(InvalidParameterError, match="verbose"):
        mk.MKLClassifier(verbose=-1).fit(np.zeros((4, 1)), [0, 1, 0, 1])


def test_groups_with_another_penalty_is_refused() -> None:
    # Accepted and ignored before; it belongs to penalty="group".
    with pytest.raises(InvalidParameterError, match="groups") as e:
        mk.MKLClassifier(penalty="lp", groups=[0, 0, 1]).fit(np.zeros((4, 1)), [0, 1, 0, 1])
    assert e.value.parameter == "groups"
