"""Timing helper shared by the peer benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(f: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls of ``f`` and the last result."""
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def paired_median_times(fs: list[Callable[[], Any]], repeats: int) -> list[tuple[float, Any]]:
    """Median wall time and last result of each of ``fs``, called in turn within each repeat:
    load that comes and goes on a shared machine then falls on all of them alike, so their
    ratios are steadier than those of back-to-back series."""
    times: list[list[float]] = [[] for _ in fs]
    outs: list[Any] = [None] * len(fs)
    for _ in range(repeats):
        for k, f in enumerate(fs):
            t = time.perf_counter()
            outs[k] = f()
            times[k].append(time.perf_counter() - t)
    return [(statistics.median(ts), out) for ts, out in zip(times, outs, strict=True)]
