"""Helpers shared by the paper experiments (``benches/papers/*.py``): the report, timing in
turn, the data folder and the peer benchmarks' problem builders."""

from __future__ import annotations

import datetime
import gc
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import multikernel as mk

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "benches" / "peers"
RESULTS = Path(__file__).resolve().parent / "results"
# ``tests/python/reference.py`` loads the data sets (``tests/data``; ringnorm from its formula).
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.append(str(PEERS))  # the peer benchmarks import their helpers by bare name


def peer_module(name: str) -> ModuleType:
    """A benchmark of ``benches/peers`` as a module (``peers_<name>``: the paper scripts can
    share its file name)."""
    spec = importlib.util.spec_from_file_location(f"peers_{name}", PEERS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class Report:
    """Markdown lines, printed as they come and written at the end."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def header(self, title: str, command: str) -> None:
        cores = len(os.sched_getaffinity(0))
        self(f"# {title}")
        self()
        self(
            f"Command: `{command}` ({datetime.date.today().isoformat()}, {cores}-core shared "
            f"machine; multikernel {mk.__version__}, numpy {np.__version__}). Times are medians "
            "of the repeats shown, the methods of a row block timed in turn within each repeat; "
            "compare their ratios, not the seconds, with other runs."
        )

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        print(f"wrote {path}", flush=True)


def timed_in_turn(
    fs: Sequence[Callable[[], Any]], repeats: int, slow: float
) -> list[tuple[float, int, Any]]:
    """Median time, number of runs and last result of each of ``fs``, called in turn within
    each repeat; one whose first run took more than ``slow`` seconds is not run again."""
    times: list[list[float]] = [[] for _ in fs]
    outs: list[Any] = [None] * len(fs)
    for r in range(repeats):
        for k, f in enumerate(fs):
            if r > 0 and times[k][0] > slow:
                continue
            gc.collect()
            t = time.perf_counter()
            outs[k] = f()
            times[k].append(time.perf_counter() - t)
    return [(statistics.median(ts), len(ts), o) for ts, o in zip(times, outs, strict=True)]


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


ANALYSIS_HEADING = "## What agrees, what differs"


def kept_analysis(path: Path) -> str:
    """The hand-written paragraph under ``ANALYSIS_HEADING`` of an earlier page, kept on a rerun
    (its numbers may then need a look); a placeholder on the first run."""
    if path.exists():
        old = path.read_text()
        if ANALYSIS_HEADING in old:
            return old.split(ANALYSIS_HEADING, 1)[1].strip()
    return "(to be written from the tables above)"


def write_page(path: Path, page: list[str]) -> None:
    """Writes ``page`` to ``path`` followed by the analysis kept from its earlier version
    (:func:`kept_analysis`), and prints it."""
    text = "\n".join([*page, ANALYSIS_HEADING, "", kept_analysis(path), ""])
    path.write_text(text)
    print(text)
