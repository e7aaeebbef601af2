"""Put tests/python on sys.path so that tests can ``from reference import ...``, and the
fixtures shared by several test files."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="module")
def two_cores() -> Iterator[None]:
    """At least two cores for ``n_threads`` (which clips to the cores available), so that
    ``n_threads=2`` runs two worker threads even on a one-core runner (time-sliced there):
    without it the 1-against-2-thread identity tests compare a run with itself. The tests
    check the threads the engine was given with ``problems.engine_threads``."""
    from multikernel import _validation

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_validation, "_MIN_CORES", 2)
        yield
