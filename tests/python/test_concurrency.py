"""Fits from several Python threads at once equal serial fits (the GIL is released); a fit in a
process forked after the parent used the thread pool completes; joblib's loky and threading
backends run ``GridSearchCV`` and ``cross_val_score`` with ``n_jobs=2`` and give the serial
results."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import joblib
import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, cross_val_score

import multikernel as mk
from multikernel import _core
from multikernel.kernels import FeatureBank, Gaussian, Linear


@cache
def data() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X[:150, :6], y[:150]


SPECS = [Gaussian(sigma=1.0), Gaussian(sigma=3.0), Linear(features=[0, 1])]


def estimators() -> list[Any]:
    bank = FeatureBank(SPECS, n_components=20, random_state=0)
    return [
        mk.MKLClassifier(kernels=SPECS, p=2.0, n_threads=1),
        mk.MKLClassifier(kernels=SPECS, penalty="l1", loss="logistic", n_threads=1),
        mk.MKLClassifier(kernels=SPECS, penalty="group", groups=[0, 0, 1], n_threads=1),
        mk.MKLClassifier(kernels=bank, solver="svrg", loss="logistic", random_state=1),
        mk.MKLOneClass(kernels=SPECS, nu=0.2, n_threads=1),
    ]


def test_threads_give_the_serial_results() -> None:
    X, y = data()
    serial = [est.fit(X, y).dual_coef_.copy() for est in estimators()]
    with ThreadPoolExecutor(max_workers=4) as pool:
        # Distinct instances: one estimator (and its FeatureBank) fitted by two threads at
        # once is a race in any scikit-learn estimator (this test flaked under load with
        # `estimators() * 2`, which repeats the same objects).
        fresh = estimators() + estimators()
        parallel = list(pool.map(lambda est: est.fit(X, y).dual_coef_.copy(), fresh))
    for k, A in enumerate(parallel):
        np.testing.assert_array_equal(A, serial[k % len(serial)])


def _fit_in_child(queue: Any) -> None:
    X, y = data()
    clf = mk.MKLClassifier(kernels=SPECS, p=2.0).fit(X, y)
    queue.put(clf.primal_objective_)


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the Linux default")
def test_a_fit_completes_in_a_child_forked_after_the_pool_was_used() -> None:
    X, y = data()
    ref = mk.MKLClassifier(kernels=SPECS, p=2.0).fit(X, y)  # the pool now has threads
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_fit_in_child, args=(queue,))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0, "the forked fit hung or failed"
    assert queue.get(timeout=5) == ref.primal_objective_
    assert os.getpid() != child.pid


def test_n_threads_0_takes_the_share_a_process_manager_gives() -> None:
    """``n_threads=0`` follows ``OMP_NUM_THREADS`` (set by joblib's loky workers to
    cores // n_jobs, and by Dask's workers), so workers × threads ≤ cores."""
    code = "from multikernel import _core; print(_core.thread_count(0), _core.thread_count(3))"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out == ["1", "3"]
    env.pop("OMP_NUM_THREADS")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert out[1] == "3" and 1 <= int(out[0]) <= (cores or 1)
    shares = joblib.Parallel(n_jobs=2, backend="loky")(
        joblib.delayed(_core.thread_count)(0) for _ in range(2)
    )
    assert all(1 <= s <= max(1, (cores or 1) // 2) for s in shares), shares


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_joblib_backends_give_the_serial_results(backend: str) -> None:
    X, y = data()
    grid = {"C": [0.1, 10.0], "p": [1.5, 2.0]}
    est = mk.MKLClassifier(kernels=SPECS, n_threads=1)
    serial = GridSearchCV(est, grid, cv=3).fit(X, y)
    serial_scores = cross_val_score(est, X, y, cv=3)
    with joblib.parallel_backend(backend, n_jobs=2):
        par = GridSearchCV(est, grid, cv=3, n_jobs=2).fit(X, y)
        par_scores = cross_val_score(est, X, y, cv=3, n_jobs=2)
    np.testing.assert_array_equal(
        par.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )
    assert par.best_params_ == serial.best_params_
    np.testing.assert_array_equal(par.best_estimator_.dual_coef_, serial.best_estimator_.dual_coef_)
    np.testing.assert_array_equal(par_scores, serial_scores)
