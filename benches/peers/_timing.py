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
