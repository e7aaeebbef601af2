"""Sphinx configuration of the multikernel documentation.

Build with ``bash docs/build.sh`` (``python -m sphinx -W -b html docs docs/_build/html``) after
installing the package and its ``docs`` extra (``pip install -e ".[docs]"``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import multikernel

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))  # _gallery_argv (sphinx-gallery's reset_argv)


def _benchmark_pages() -> None:
    """One page per results file of the benchmark suites (``benches/*/results/*.md``), in
    ``benchmarks/generated/`` (not committed): each includes its file, so the site shows the
    tables as committed, and a suite added later (``benches/papers/``) appears by itself."""
    out = DOCS / "benchmarks" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    pages = {}
    for results in sorted(ROOT.glob("benches/*/results")):
        for md in sorted(results.glob("*.md")):
            rel = os.path.relpath(md, out).replace(os.sep, "/")
            pages[f"{results.parent.name}_{md.stem}.md"] = (
                f"```{{include}} {rel}\n:relative-images:\n```\n"
            )
    for old in out.glob("*.md"):
        if old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        page = out / name
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")


_benchmark_pages()

project = "multikernel"
author = "the multikernel developers"
copyright = "the multikernel developers"
release = multikernel.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "**/GALLERY_HEADER.rst", "auto_examples/*.ipynb"]
templates_path = ["_templates"]

# Warnings are errors (-W) and every cross-reference must resolve. No intersphinx: the build
# runs offline. The signatures are shown without annotations and the numpydoc types are plain
# text, so no name of numpy, scikit-learn or the standard library needs a link or an ignore list.
nitpicky = True

# autodoc / autosummary: the signatures carry no annotations (the numpydoc sections give the
# types in words), members in source order.
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autosummary_generate = True
autosummary_imported_members = False

# numpydoc: the class pages list their own members (templates in _templates/autosummary).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# MyST: the user guide pages are Markdown; `$…$` / `$$…$$` and amsmath environments render with
# MathJax, headings get anchors so that links like guide.md#1-installation resolve.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 4
suppress_warnings = ["myst.header"]

# sphinx-gallery: examples/ is the gallery; each example runs in its quick mode
# (_gallery_argv.argv) and its open matplotlib figures become the page's images.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/[a-z_]+\.py$",
    "ignore_pattern": r"__init__\.py|/data/",
    "reset_argv": "_gallery_argv.argv",
    "doc_module": ("multikernel",),
    "backreferences_dir": "api/generated/backreferences",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "min_reported_time": 1,
    "show_memory": False,
    "plot_gallery": os.environ.get("MULTIKERNEL_DOCS_PLOT_GALLERY", "True"),
}

html_theme = "pydata_sphinx_theme"
html_title = f"multikernel {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
html_static_path: list[str] = []
