"""The README's first command, ``python -m multikernel demo``: it runs, and what it prints is
the certificate of a fit that agrees with itself and with scikit-learn's data."""

from __future__ import annotations

import re

import numpy as np
import pytest

from multikernel.__main__ import main


def test_the_demo_prints_a_certified_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "breast cancer: 426 training and 143 test points, 30 features" in out
    assert "SimpleMKL bank: 837 kernels, computed on demand" in out
    weights = [float(m) for m in re.findall(r"^\s+(\d\.\d{4})\s+[\d.]+%", out, re.M)]
    assert len(weights) == 10
    assert all(w > 0 for w in weights) and weights == sorted(weights, reverse=True)
    accuracy = float(re.search(r"test accuracy: ([\d.]+)", out).group(1))  # type: ignore[union-attr]
    assert 0.9 < accuracy <= 1.0
    m = re.search(
        r"duality gap: (\S+) \(primal (\S+), dual (\S+)\), \d+ iterations, converged", out
    )
    assert m is not None, out
    gap, primal, dual = (float(v) for v in m.groups())
    assert dual <= primal and 0 <= gap <= 1e-3
    # The printed gap is that of the printed primal and dual (to their printed digits).
    np.testing.assert_allclose(gap, (primal - dual) / primal, rtol=0.05, atol=2e-6)
