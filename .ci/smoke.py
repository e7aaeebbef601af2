"""Smoke test of an installed wheel, run from outside the source tree by .ci/run (twice: with
the AVX2 kernels and with MULTIKERNEL_NO_AVX2=1, the baseline build a CPU without AVX2 runs).
Every value is checked against numpy or scikit-learn computed here; exits non-zero on failure."""

from __future__ import annotations

import os
import sys

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.svm import SVC

import multikernel as mk

assert "site-packages" in mk.__file__, f"not the installed package: {mk.__file__}"
# The wheel's release build still turns an engine panic into an ordinary exception.
for in_pool in (False, True):
    try:
        mk._core._panic_for_tests(in_pool)
        raise AssertionError("the panic hook returned")
    except mk.exceptions.InternalError:
        pass
X, y = load_breast_cancer(return_X_y=True)
X = (X - X.mean(0)) / X.std(0)
X, y = X[:200], np.where(y[:200] == 1, 1.0, -1.0)
specs = [mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(5) for s in (1.0, 3.0)]
G = mk.kernels.gram(X, specs, normalize="mean_diag")
v = np.random.default_rng(0).normal(size=len(y))
# The SIMD loops: quadratic forms of the stack, float64 and float32.
for stack in (G, G.astype(np.float32)):
    ref = np.einsum("i,mij,j->m", v, stack.astype(np.float64), v)
    got = mk.kernels.quad_forms(stack, v)
    np.testing.assert_allclose(got, ref, rtol=1e-10)
# lp with p = inf is an SVC on the sum kernel (the same objective as scikit-learn's).
clf = mk.MKLClassifier(kernels="precomputed", p=np.inf, C=1.0, tol=1e-6).fit(G, y)
svc = SVC(kernel="precomputed", C=1.0, tol=1e-8).fit(G.sum(0), y)
np.testing.assert_allclose(clf.decision_function(G), svc.decision_function(G.sum(0)), atol=1e-3)
assert 0.0 <= clf.duality_gap_ <= 1e-6 and clf.dual_objective_ <= clf.primal_objective_
l1 = mk.MKLClassifier(kernels=specs, penalty="l1", loss="logistic").fit(X, y)
assert l1.duality_gap_ <= 1e-3 and l1.score(X, y) > 0.9
path = mk.mkl_path(G, y, loss="logistic")
assert path.end == "complete" and np.all(np.diff(path.Cs) > 0)
bank = mk.kernels.FeatureBank(specs, method="rff", random_state=0)
big = mk.MKLClassifier(kernels=bank, solver="svrg", loss="logistic", random_state=0).fit(X, y)
assert big.duality_gap_ <= 1e-3 and big.score(X, y) > 0.9
mode = mk._core.simd_level()
if os.environ.get("MULTIKERNEL_NO_AVX2"):
    assert mode == "baseline", mode
print(f"smoke test passed ({mode}), python {sys.version.split()[0]}, {mk.__file__}")
