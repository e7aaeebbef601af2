"""Small real MKL problems shared by the solver test suites."""

from __future__ import annotations

import math
from functools import cache
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from reference import load_dataset

import multikernel as mk
from multikernel import _core
from multikernel.kernels import Gaussian, KernelSpec, Linear, Polynomial

FloatArray = NDArray[np.float64]


@cache
def small_problem(
    dataset: str, regression: bool, n: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """``n`` points of a real data set and M = 10 kernels with unit mean diagonal; for
    regression the first feature is the target and the others the inputs."""
    X, y = load_dataset(dataset, n=n, seed=seed)
    if regression:
        y, X = X[:, 0].copy(), X[:, 1:]
    d = X.shape[1]
    s = math.sqrt(d)
    specs: list[KernelSpec] = [
        Linear(),
        Polynomial(degree=2, scale=1.0 / d),
        Gaussian(sigma=0.5 * s),
        Gaussian(sigma=s),
        Gaussian(sigma=2 * s),
        Gaussian(sigma=1.0, features=[0]),
        Gaussian(sigma=1.0, features=[1]),
        Gaussian(sigma=1.0, features=[2, 3]),
        Linear(features=[0]),
        Polynomial(degree=2, features=[1, 2]),
    ]
    return mk.kernels.gram(X, specs, normalize="mean_diag"), y


def fit_lp(
    G: NDArray[np.float32] | FloatArray, y: FloatArray, *,
    algorithm: Literal["analytic", "interleaved"] = "analytic",
    n_threads: int = 0, **settings: float | str | None,
) -> _core.FitResult:  # fmt: skip
    """The native ℓp solver (``algorithm`` is ``analytic`` or ``interleaved``)."""
    return _core.fit(algorithm, G, y, settings, n_threads=n_threads)


def fit_spicy(
    G: NDArray[np.float32] | FloatArray, y: FloatArray, *, n_threads: int = 0,
    **settings: float | str | None,
) -> _core.FitResult:  # fmt: skip
    """The native SpicyMKL solver."""
    return _core.fit("spicy", G, y, settings, n_threads=n_threads)
