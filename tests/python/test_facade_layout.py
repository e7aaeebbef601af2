"""The layout of the Python facade (docs/reference.md, "Layout"): modules of a readable size, and
estimator families that share code through the base module, never through each other's private
names."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import multikernel as mk

PACKAGE = Path(mk.__file__).parent

#: The most lines a module of the package may have.
MAX_LINES = 800

#: The modules of each estimator family (by module name under ``multikernel``). What two
#: families share lives in a module of no family (``_base`` and the input, config and record
#: modules), under names without a leading underscore.
FAMILIES = {
    "_classifier": "classifier",
    "_multiclass": "classifier",
    "_regressor": "regressor",
    "_oneclass": "one-class",
    "_path": "path",
    "_path_cv": "path",
    "_cv_folds": "path",
}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    """``_classifier`` for ``multikernel/_classifier.py``, ``kernels._banks`` below it."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def _imports(source: str, package: list[str]) -> list[tuple[str, str, int]]:
    """``(module, name, line)`` of each name that ``source``, a module of the package
    ``package`` (``[]``: multikernel, ``["kernels"]``), imports from a module of multikernel
    (``from ._base import BaseMKL``, ``from multikernel._path import mkl_path``). A module
    imported whole (``from . import _classifier``) is ``(module, "*", line)``: its private
    names are then within reach."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
        elif node.module and node.module.startswith("multikernel."):
            module = node.module.removeprefix("multikernel.")
        else:
            continue
        for alias in node.names:
            whole = f"{module}.{alias.name}" if module else alias.name
            if not module or whole in FAMILIES:
                out.append((whole, "*", node.lineno))
            else:
                out.append((module, alias.name, node.lineno))
    return out


def _imports_of(path: Path) -> list[tuple[str, str, int]]:
    package = list(path.relative_to(PACKAGE).parent.parts)
    return _imports(path.read_text(encoding="utf-8"), package)


def test_the_family_table_names_the_modules_of_the_public_estimators() -> None:
    # A family module that is renamed, or a new estimator module, must be in the table.
    for name in FAMILIES:
        assert (PACKAGE / f"{name}.py").is_file(), name
    for name in mk.__all__:
        obj = getattr(mk, name)
        estimator = inspect.isclass(obj) and issubclass(obj, BaseEstimator)
        if estimator or name == "mkl_path":
            assert obj.__module__.removeprefix("multikernel.") in FAMILIES, name


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_no_module_is_over_the_line_limit(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{_name(path)} has {lines} lines (at most {MAX_LINES})"


def test_no_family_imports_another_familys_private_names() -> None:
    crossing = [
        f"{_name(path)}:{line} imports {name} from {module}"
        for path in _modules()
        if _name(path) in FAMILIES
        for module, name, line in _imports_of(path)
        if module in FAMILIES
        and FAMILIES[module] != FAMILIES[_name(path)]
        and (name.startswith("_") or name == "*")
    ]
    assert crossing == []


def test_the_base_module_imports_no_family() -> None:
    # The families build on the base, never the reverse.
    assert [m for m, _, _ in _imports_of(PACKAGE / "_base.py") if m in FAMILIES] == []


def test_the_import_reader_resolves_relative_and_absolute_imports() -> None:
    source = (
        "from ._classifier import _available_unless, MKLClassifier\n"
        "from .. import _regressor\n"
        "from multikernel._path import _secret\n"
        "from numpy import _pytesttester\n"
    )
    assert [(m, n) for m, n, _ in _imports(source, ["kernels"])] == [
        ("kernels._classifier", "_available_unless"),
        ("kernels._classifier", "MKLClassifier"),
        ("_regressor", "*"),
        ("_path", "_secret"),
    ]
    assert [(m, n) for m, n, _ in _imports(source, [])][:2] == [
        ("_classifier", "_available_unless"),
        ("_classifier", "MKLClassifier"),
    ]
