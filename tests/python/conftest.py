"""Put tests/python on sys.path so that tests can ``from reference import ...``, and the
fixtures shared by several test files."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="module")
def two_cores() -> Iterator[None]:
    """At least two cores for ``n_threads`` (which clips to the cores available), so that
    ``n_threads=2`` runs two worker threads even on a one-core runner (time-sliced there):
    without it the 1-against-2-thread identity tests compare a run with itself. The tests
    check the threads the engine was given with ``problems.engine_threads``. The floor is the
    engine's (its private test hook), where the thread rule lives."""
    from multikernel import _core

    _core._set_min_cores_for_tests(2)
    try:
        yield
    finally:
        _core._set_min_cores_for_tests(1)


@pytest.fixture(scope="module")
def inprocess_client() -> Iterator[Any]:
    """A Dask client on an in-process cluster of two one-thread workers, no dashboard (the
    test file is skipped without ``distributed``)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c
