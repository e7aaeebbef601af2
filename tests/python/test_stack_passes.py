"""``stack_passes_``: the entries a fit reads from a stored kernel stack, over ``M n²``.

What each stack operation counts is checked against its definition in the engine's tests
(``a_counting_stack_counts_the_entries_each_operation_reads``). Here: the estimator reports
what the engine's fit on the same stack reports, a fit reads at least the combined kernel of
its first step (the upper triangle of every kernel at uniform weights), and nothing is
reported where no stored stack is read."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import multikernel as mk
from multikernel import _core
from multikernel.kernels import FeatureBank, Gaussian, KernelBank, Linear


def _problem(n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X[:n, :6], y[:n]


def _stack(X: np.ndarray) -> np.ndarray:
    bank = KernelBank([Gaussian(s) for s in (0.5, 1.0, 2.0)] + [Linear()])
    return np.asarray(bank.fit_transform(X))


@pytest.mark.parametrize("penalty", ["lp", "l1"])
def test_the_estimator_reports_the_engines_passes(penalty: str) -> None:
    X, y = _problem()
    G = _stack(X)
    est = mk.MKLClassifier(kernels="precomputed", penalty=penalty, C=1.0).fit(G, y)
    solver = est.solvers_[0]
    settings = _core.Settings(solver, {"C": 1.0})
    r = _core.fit(settings, np.ascontiguousarray(G), np.where(y == est.classes_[1], 1.0, -1.0))
    assert r.stack_passes is not None and est.stack_passes_ is not None
    assert est.stack_passes_ == pytest.approx(r.stack_passes, rel=1e-12)
    n = G.shape[1]
    # The first step combines every kernel at uniform weights: each upper triangle once.
    assert est.stack_passes_ >= (n + 1) / (2 * n)


def test_a_multiclass_fit_reports_each_problems_passes() -> None:
    X, y = _problem(150)
    y3 = np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    G = _stack(X)
    est = mk.MKLClassifier(kernels="precomputed", C=1.0).fit(G, y3)
    assert isinstance(est.stack_passes_, list) and len(est.stack_passes_) == 3
    for k, passes in enumerate(est.stack_passes_):
        binary = mk.MKLClassifier(kernels="precomputed", C=1.0)
        binary.fit(G, np.where(y3 == k, 1, -1))
        assert passes == pytest.approx(binary.stack_passes_, rel=1e-12)


def test_no_passes_are_reported_without_a_stored_stack() -> None:
    X, y = _problem()
    features = mk.MKLClassifier(kernels=FeatureBank([Linear(features=[0, 1]), Linear()]))
    assert features.fit(X, y).stack_passes_ is None
    on_demand = mk.MKLClassifier(kernels=[Gaussian(1.0), Linear()], cache_size=1.0).fit(X, y)
    assert on_demand.stack_passes_ is None
    stored = mk.MKLClassifier(kernels=[Gaussian(1.0), Linear()]).fit(X, y)
    assert stored.stack_passes_ is not None
