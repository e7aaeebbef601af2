"""docs/reference.md's layout section against the tree: every file and folder it names exists,
and every module of the folders it describes file by file is named there, so that a file added,
moved or removed without the docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The folders the layout describes file by file, and what needs no line there.
LISTED = {
    "src/solvers": {"mod.rs", "test_util.rs"},
    "src/penalties": {"mod.rs"},
    "python/multikernel": {"__pycache__", "_core.abi3.so"},
}


def layout() -> dict[str, str]:
    """The layout block by its top-level entries: ``{"src/solvers/": its text, ...}``."""
    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines()[1:]:
        if line and not line[0].isspace():
            head, _, rest = line.partition(" ")
            current = head
            entries[current] = rest
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def named(text: str) -> set[str]:
    """The file and folder names a layout entry mentions (``analytic.rs``, ``smo/``, …)."""
    files = re.findall(r"[\w./]+\.(?:rs|pyi?|md|typed)\b", text)
    folders = re.findall(r"(?<![\w/])\w+/(?![\w])", text)
    return set(files) | set(folders)


def test_every_name_in_the_layout_exists() -> None:
    missing = []
    for head, text in layout().items():
        base = ROOT / head.rstrip("/")
        if not base.exists():
            missing.append(head)
            continue
        if base.is_file():
            base = base.parent
        for name in named(text):
            plain = name.rstrip("/")
            # A path from the repository root, or a name in the entry's folder or below it.
            if "/" in plain:
                found = (ROOT / plain).exists()
            else:
                found = any(True for _ in base.rglob(plain))
            if not found:
                missing.append(f"{head}: {name}")
    assert not missing, f"docs/reference.md's layout names what the tree lacks: {missing}"


def test_every_module_of_the_listed_folders_is_in_the_layout() -> None:
    entries = layout()
    unlisted = []
    for folder, exempt in LISTED.items():
        text = entries[f"{folder}/"]
        names = named(text)
        for child in sorted((ROOT / folder).iterdir()):
            name = child.name + ("/" if child.is_dir() else "")
            if child.name in exempt or name in names or child.name in names:
                continue
            unlisted.append(f"{folder}/{name}")
    assert not unlisted, f"docs/reference.md's layout does not describe: {unlisted}"
