"""Memory probes shared by the peer benchmarks (Linux ``/proc/self/status``)."""

from __future__ import annotations

import gc
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def status_kb(key: str) -> float:
    """The value of ``key`` (e.g. ``VmHWM``, ``RssAnon``) in ``/proc/self/status``, in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == key:
            return float(value.split()[0])
    return math.nan


def peak_extra_mb(f: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall time, extra peak resident memory (MB) and result of one call of ``f``: the peak
    (``VmHWM``) is reset to the current resident set (``/proc/self/clear_refs``) before it."""
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = status_kb("VmRSS")
    t = time.perf_counter()
    out = f()
    elapsed = time.perf_counter() - t
    return elapsed, (status_kb("VmHWM") - before) / 1024.0, out


class PeakMemory:
    """Peak ``RssAnon`` and ``RssFile`` of this process (GB), sampled every 20 ms: unlike
    ``VmHWM`` it tells anonymous memory from page cache (memory-mapped files)."""

    def __init__(self) -> None:
        self.peak = {"RssAnon": 0.0, "RssFile": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        for key in self.peak:
            self.peak[key] = max(self.peak[key], status_kb(key) / 1e6)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.sample()

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
