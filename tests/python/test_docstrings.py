"""Every public object of the package has a numpydoc docstring whose sections match its
signature, and whose Examples run.

The public objects are everything in ``multikernel.__all__`` and in the ``__all__`` of the
public submodules it lists (``kernels``, ``exceptions``), with the public methods of the
public classes that the package defines (not those inherited from scikit-learn or the
built-ins). Constants and type aliases (``SIMPLEMKL_WIDTHS``, ``Penalty``, ``SolverConfig``)
have no docstring of their own and are skipped.
"""

from __future__ import annotations

import doctest
import inspect
import re
import types
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import multikernel

try:
    from numpydoc.docscrape import NumpyDocString
except ImportError:  # numpydoc is in the docs extra; scikit-learn vendors the same parser
    from sklearn.externals._numpydoc.docscrape import NumpyDocString

#: Objects exempt from the section checks, with the reason. Keep empty when possible.
EXEMPT: dict[str, str] = {}


def _public_methods(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties that ``cls`` or one of its package bases defines."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("multikernel"):
            continue  # inherited from scikit-learn, dataclasses or the built-ins
        raw = vars(owner)[name]
        if isinstance(raw, property):
            yield name, raw
            continue
        fn = getattr(cls, name)
        # Routines written in the package; not the set_*_request methods that scikit-learn's
        # metadata routing adds to every estimator class, nor dataclass defaults.
        if inspect.isroutine(fn) and getattr(fn, "__module__", "").startswith("multikernel"):
            yield name, fn


def _walk(module: types.ModuleType, prefix: str) -> Iterator[tuple[str, Any]]:
    yield prefix, module
    for name in module.__all__:
        obj = getattr(module, name)
        qual = f"{prefix}.{name}"
        if inspect.ismodule(obj):
            yield from _walk(obj, qual)
        elif inspect.isclass(obj):
            yield qual, obj
            for meth, fn in _public_methods(obj):
                yield f"{qual}.{meth}", fn
        elif inspect.isfunction(obj):
            yield qual, obj


def public_objects() -> list[tuple[str, Any]]:
    """(name, object) pairs, each object once (``KernelSpec`` is ``Kernel``)."""
    seen: set[int] = set()
    out = []
    for name, obj in _walk(multikernel, "multikernel"):
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append((name, obj))
    return out


OBJECTS = public_objects()
DOCUMENTED = [(n, o) for n, o in OBJECTS if not inspect.ismodule(o) and n not in EXEMPT]


def parse(obj: Any) -> NumpyDocString:
    doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
    assert doc, "no docstring"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown or malformed section fails
        return NumpyDocString(doc)


def documented_names(params: list[Any]) -> list[str]:
    """Names of a Parameters section; ``a, b : float`` documents two parameters."""
    return [n.strip().lstrip("*") for p in params for n in p.name.split(",") if n.strip()]


def _init_owner(cls: type) -> type | None:
    """The class whose ``__init__`` builds ``cls``, when this docstring must document it: its
    own (dataclasses too) or a private base's; None when it is a documented public parent's
    (an exception subclass) or a built-in one."""
    owner = next(k for k in cls.__mro__ if "__init__" in vars(k))
    if not owner.__module__.startswith("multikernel"):
        return None
    if owner is not cls and not owner.__name__.startswith("_"):
        return None
    return owner


def signature_names(obj: Any) -> list[str] | None:
    """Parameters a docstring must document, in order; None when there is nothing to check."""
    if isinstance(obj, property) or (inspect.isclass(obj) and _init_owner(obj) is None):
        return None
    sig = inspect.signature(obj)
    names = [
        p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def _raises_directly(obj: Any) -> bool:
    """Whether the source of ``obj`` (of its ``__init__``/``__post_init__`` for a class) has a
    ``raise`` statement: then its docstring needs a Raises section."""
    if inspect.isclass(obj):
        funcs = [vars(obj)[n] for n in ("__init__", "__post_init__") if n in vars(obj)]
    elif isinstance(obj, property):
        funcs = [obj.fget]
    else:
        funcs = [inspect.unwrap(obj)]
    for f in funcs:
        try:
            src = inspect.getsource(f)
        except (OSError, TypeError):
            continue
        if re.search(r"^\s*raise\b(?! NotImplementedError$)", src, re.MULTILINE):
            return True
    return False


def section_problems(obj: Any) -> list[str]:
    """What the numpydoc docstring of ``obj`` lacks; empty when it is complete."""
    try:
        doc = parse(obj)
    except (AssertionError, ValueError, UserWarning) as exc:
        return [f"unparsable docstring: {exc}"]
    problems = []
    if not "".join(doc["Summary"]).strip():
        problems.append("no summary line")
    expected = signature_names(obj)
    if expected is not None:
        documented = documented_names(doc["Parameters"])
        if documented != expected:
            problems.append(f"Parameters document {documented}, the signature has {expected}")
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        ret = inspect.signature(obj).return_annotation
        if ret not in (None, "None") and not doc["Returns"]:
            problems.append(f"no Returns section (returns {ret})")
    if _raises_directly(obj) and not doc["Raises"]:
        problems.append("raises, but has no Raises section")
    if not isinstance(obj, property) and not any(">>>" in line for line in doc["Examples"]):
        problems.append("no Examples section with a doctest")
    return problems


@pytest.mark.parametrize(("name", "obj"), DOCUMENTED, ids=[n for n, _ in DOCUMENTED])
def test_numpydoc_sections(name: str, obj: Any) -> None:
    assert section_problems(obj) == []


def test_the_walk_finds_the_public_api() -> None:
    names = {n for n, _ in OBJECTS}
    for expected in (
        "multikernel.MKLClassifier.fit",
        "multikernel.MKLClassifier.predict_proba",
        "multikernel.MKLRegressor.predict",
        "multikernel.default_kernels",
        "multikernel.kernels.Kernel",
        "multikernel.kernels.KernelBank.nbytes",
        "multikernel.kernels.Gaussian.from_gamma",
        "multikernel.kernels.Gaussian.gamma",
        "multikernel.kernels.gram",
    ):
        assert expected in names
    # Inherited scikit-learn methods are scikit-learn's to document.
    assert "multikernel.MKLClassifier.get_params" not in names
    assert "multikernel.MKLClassifier.score" not in names


def test_a_missing_section_is_caught() -> None:
    """The checker itself: a docstring without Returns, Raises or Examples, or with a
    parameter missing or misnamed, is reported."""

    def f(x: int, y: int = 0) -> int:
        """Add.

        Parameters
        ----------
        x : int
            A number.
        y : int
            Another.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            Negative ``x``.

        Examples
        --------
        >>> f(1)
        1
        """
        if x < 0:
            raise ValueError("x")
        return x + y

    assert section_problems(f) == []
    full = f.__doc__
    assert full is not None
    for section in ("Returns", "Raises", "Examples"):
        start = full.index(section)
        end = full.find("\n\n", start)
        f.__doc__ = full[:start] + (full[end + 2 :] if end > 0 else "")
        assert any(section in p for p in section_problems(f)), section
    f.__doc__ = full.replace("        y : int\n            Another.\n", "")
    assert any("Parameters document ['x']" in p for p in section_problems(f))


def _examples() -> list[tuple[str, doctest.DocTest]]:
    parser = doctest.DocTestParser()
    tests = []
    for name, obj in OBJECTS:
        target = obj.fget if isinstance(obj, property) else obj
        doc = inspect.getdoc(target) if not inspect.ismodule(obj) else obj.__doc__
        if not doc or ">>>" not in doc:
            continue
        try:
            filename = inspect.getsourcefile(target)
            lineno = inspect.getsourcelines(target)[1]
        except (OSError, TypeError):
            filename, lineno = None, 0
        tests.append((name, parser.get_doctest(doc, {}, name, filename, lineno)))
    return tests


EXAMPLES = _examples()


@pytest.mark.parametrize(("name", "test"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_examples_run(name: str, test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out: list[str] = []
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)
    assert result.attempted > 0


def _documented_literals() -> dict[str, tuple[str, ...]]:
    """The ``.. py:data::`` type aliases of docs/api/estimators.rst with their ``:value:``."""
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "api" / "estimators.rst"
    found = re.findall(
        r"\.\. py:data:: (\w+)\n(?:   :\w+:.*\n)*?   :value: Literal\[(.*)\]", page.read_text()
    )
    return {name: tuple(re.findall(r'"([^"]*)"', values)) for name, values in found}


def test_the_documented_type_aliases_list_the_values_the_package_takes() -> None:
    """The reference page writes each alias's values by hand (Sphinx shows no value of a
    ``Literal`` alias): they must be those of the alias, which a new solver, loss or scheme
    changes."""
    from typing import get_args

    documented = _documented_literals()
    assert {"SolverName", "MultiClass", "LossName", "PathLoss"} <= set(documented)
    for name, values in documented.items():
        alias = getattr(multikernel, name)
        assert values == get_args(alias), name
