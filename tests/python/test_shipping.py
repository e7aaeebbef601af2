"""What shipping relies on: the GitHub Actions workflow is valid YAML that builds every
platform the project promises, and the baseline (no AVX2) build computes what the AVX2 build
computes (run in a subprocess with MULTIKERNEL_NO_AVX2=1, against numpy)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

import multikernel as mk

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_workflow_builds_every_promised_platform() -> None:
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "wheels.yml").read_text("utf-8"))
    jobs = wf["jobs"]
    assert set(jobs) == {"linux", "musllinux", "windows", "macos", "sdist"}
    for name in ("linux", "musllinux"):
        assert jobs[name]["strategy"]["matrix"]["target"] == ["x86_64", "aarch64"]
    build = {
        name: next(s for s in job["steps"] if s.get("uses", "").startswith("PyO3/maturin-action"))
        for name, job in jobs.items()
    }
    assert build["linux"]["with"]["manylinux"] == "2014"
    assert build["musllinux"]["with"]["manylinux"].startswith("musllinux")
    assert build["macos"]["with"]["target"] == "universal2-apple-darwin"
    assert build["sdist"]["with"]["command"] == "sdist"
    for job in jobs.values():
        uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload")]
        assert uploads and uploads[0]["with"]["path"] == "dist"


def test_baseline_build_matches_numpy() -> None:
    code = (
        "import numpy as np, multikernel as mk\n"
        "rng = np.random.default_rng(1)\n"
        "X = rng.normal(size=(70, 4))\n"
        "G = mk.kernels.gram(X, [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear()])\n"
        "v = rng.normal(size=70)\n"
        "for S in (G, G.astype(np.float32)):\n"
        "    ref = np.einsum('i,mij,j->m', v, S.astype(np.float64), v)\n"
        "    np.testing.assert_allclose(mk.kernels.quad_forms(S, v), ref, rtol=1e-10)\n"
        "assert mk._core.simd_level() == 'baseline', mk._core.simd_level()\n"
        "clf = mk.MKLClassifier(kernels='precomputed').fit(G, np.sign(X[:, 0]))\n"
        "print(repr(clf.primal_objective_))\n"
    )
    env = {**os.environ, "MULTIKERNEL_NO_AVX2": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # The same fit in this process (AVX2 kernels where the CPU has them): same objective.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(70, 4))
    G = mk.kernels.gram(X, [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Linear()])
    here = mk.MKLClassifier(kernels="precomputed").fit(G, np.sign(X[:, 0])).primal_objective_
    assert float(out.stdout) == np.float64(here) or abs(float(out.stdout) - here) <= 1e-9 * here
