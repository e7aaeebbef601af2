"""Command-line arguments sphinx-gallery passes to the examples (``reset_argv``).

The examples that have a slow full mode run their ``--quick`` mode in the gallery, so that the
site builds in minutes on two cores; ``python examples/<name>.py`` runs the full one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

QUICK = {"group_multiview.py", "kernel_selection.py", "regularization_path.py"}


def argv(gallery_conf: dict[str, Any], script_vars: dict[str, Any]) -> list[str]:
    """The arguments of one example: ``--quick`` for those with a slow full mode."""
    return ["--quick"] if Path(script_vars["src_file"]).name in QUICK else []
