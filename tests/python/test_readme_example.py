"""The README's Python example: ``typed_example.py`` holds it verbatim (CI type-checks that
file with ``mypy --strict``), and it runs and does what its comments say."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from typed_example import readme_example, typed_certificate

ROOT = Path(__file__).resolve().parents[2]


def readme_python_block() -> str:
    """The README's second fenced code block (the first is the install/test commands CI
    runs), without its fences."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    fences = [i for i, line in enumerate(lines) if line.startswith("```")]
    assert len(fences) >= 4, "README.md has fewer than two fenced code blocks"
    assert lines[fences[2]] == "```python", lines[fences[2]]
    return "\n".join(lines[fences[2] + 1 : fences[3]]) + "\n"


def test_typed_example_holds_the_readme_block_verbatim() -> None:
    block = readme_python_block()
    assert block.startswith("import multikernel as mk\n")
    source = (Path(__file__).parent / "typed_example.py").read_text(encoding="utf-8")
    body = textwrap.indent(block, "    ")  # the function body: blank lines stay empty
    assert body in source, (
        "tests/python/typed_example.py no longer holds README.md's Python example verbatim "
        "(indented in readme_example); copy the README block there, or the fix back"
    )
    assert "type: ignore" not in source


def test_readme_example_runs() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # every fit of the example converges
        ns = readme_example()
    clf, X, y = ns["clf"], ns["X"], ns["y"]
    M = 3 + 27 * (X.shape[1] + 1)
    assert len(ns["specs"]) == M
    assert ns["A"].shape == (M, len(y))  # (M, n)
    assert ns["G"].shape == (M, len(y), len(y))  # (M, n, n)
    np.testing.assert_allclose(np.sum(ns["theta"] ** (4 / 3)), 1.0, rtol=1e-10)  # unit p-norm
    assert 0.0 <= clf.duality_gap_ <= 1e-3
    assert clf.dual_objective_ <= clf.primal_objective_
    assert ns["f"].shape == (len(ns["X_test"]),)
    np.testing.assert_array_equal(ns["y_pred"], clf.classes_[(ns["f"] > 0).astype(int)])
    assert ns["accuracy"] == np.mean(ns["y_pred"] == ns["y_test"]) > 0.85
    path = ns["path"]
    assert path.end == "complete" and np.all(np.diff(path.Cs) > 0)
    assert path.predict(ns["X_test"], C=1.0).shape == (len(ns["X_test"]),)
    assert ns["reg"].C_ in ns["reg"].Cs_ and ns["reg"].scores_.shape == (5, 10)
    assert 0.0 <= ns["big"].duality_gap_ <= 1e-3
    assert len(ns["big"].coef_) == 3 and ns["big"].score(ns["X_test"], ns["y_test"]) > 0.8


def test_a_binary_certificate_is_plain_scalars() -> None:
    """What ``typed_certificate`` declares to mypy is what it gets: Python scalars for one
    problem, whose gap is that of its primal and dual values."""
    gap, n_iter, converged, primal, reg_gap, reg_iter, reg_converged = typed_certificate()
    assert type(gap) is float and type(reg_gap) is float and type(primal) is float
    assert type(n_iter) is int and type(reg_iter) is int and n_iter >= 1 and reg_iter >= 1
    assert type(converged) is bool and type(reg_converged) is bool
    assert converged and reg_converged and 0.0 <= gap <= 1e-3 and 0.0 <= reg_gap <= 1e-3
