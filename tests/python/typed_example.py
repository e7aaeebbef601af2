"""The README's Python example, verbatim and unannotated, as a user would write it.

CI runs ``mypy --strict`` on this file, so the public API must type-check in unannotated user
code (``specs = [Gaussian(...), Linear()]`` is a ``list[Kernel]``); ``test_readme_example.py``
runs it and checks that it is still the README's block, word for word. Only the setup lines
before the block, which define the data the README takes as given, are annotated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler


def readme_example() -> dict[str, Any]:
    """Run the README's example on 100 training and 100 test points of the breast-cancer data
    (5 features: 3 + 27·6 = 165 kernels); return its variables."""
    data = load_breast_cancer()
    Z: NDArray[np.float64] = StandardScaler().fit_transform(data.data)
    labels: NDArray[np.int64] = data.target
    idx = np.random.default_rng(0).permutation(len(labels))
    train, test = idx[:100], idx[100:200]
    X, X_test = Z[train, :5], Z[test, :5]
    y, y_test = labels[train], labels[test]
    t = Z[train, 20]  # a real target: the worst radius, from the mean features

    # The README's Python example, from here to the return (test_readme_example.py checks it).
    import multikernel as mk
    from multikernel.kernels import Gaussian, Linear, Polynomial

    specs = [Gaussian(sigma=2.0, features=[0, 3]), Polynomial(degree=2), Linear()]
    specs += mk.kernels.simplemkl_bank(n_features=X.shape[1])  # 27·(d+1) kernels
    clf = mk.MKLClassifier(kernels=specs, penalty="lp", p=4 / 3, C=1.0, loss="hinge", tol=1e-3)
    clf.fit(X, y)  # any labels, two or more classes (one-vs-rest / one-vs-one)
    y_pred = clf.predict(X_test)
    f = clf.decision_function(X_test)  # (n_test,), or one column per class (ovr) / pair (ovo)
    accuracy = clf.score(X_test, y_test)
    theta = clf.kernel_weights_  # the kernel weights θ, unit p-norm
    print(clf.primal_objective_, clf.dual_objective_, clf.duality_gap_)  # the certificate
    A = clf.dual_coef_  # (M, n): f_m(x) = Σ_i A[m, i] k_m(x, x_i)

    G = mk.kernels.gram(X, specs, normalize="mean_diag")  # (M, n, n)
    mk.MKLClassifier(kernels="precomputed", p=2.0).fit(G, y)  # predict with (M, n_test, n)
    S = mk.kernels.PairwiseStack(G)  # G for GridSearchCV, cross_val_score, …: split pairwise
    mk.MKLRegressor(kernels=specs, loss="squared").fit(X, t)  # or loss="epsilon_insensitive"
    mk.MKLClassifier(kernels=specs, penalty="l1", loss="logistic", C=10.0).fit(X, y)  # sparse θ
    mk.MKLClassifier(kernels=specs[:3], multi_class="shared", class_weight="balanced").fit(X, y)
    mk.MKLRegressor(kernels=specs, penalty="elasticnet", l1_ratio=0.5).fit(X, t)
    path = mk.mkl_path(X, t, kernels=specs)  # l1 at every C: path.predict(X_test, C=1.0)
    reg = mk.MKLRegressorCV(kernels=specs[:3], Cs=10).fit(X, t)  # C chosen along the paths
    cv = mk.MKLClassifierCV(kernels=specs[:3], loss="hinge", multi_class="ovo", Cs=5).fit(X, y)
    bank = mk.kernels.FeatureBank(specs[:3], n_components=50)  # explicit features, low rank
    big = mk.MKLClassifier(kernels=bank, solver="svrg", loss="logistic").fit(X, y)  # large n

    return locals()


def typed_certificate() -> tuple[float, int, bool, float, float, int, bool]:
    """A typed user's reading of the certificate, without casts (``mypy --strict`` checks
    it): a binary classifier's and a regressor's gap, iterations and convergence flag, and
    ``KernelBank``'s summary."""
    import multikernel as mk
    from multikernel.kernels import Gaussian, Linear

    data = load_breast_cancer()
    X: NDArray[np.float64] = StandardScaler().fit_transform(data.data)[:120, :4]
    y: NDArray[np.int64] = data.target[:120]
    specs = [Gaussian(sigma=2.0), Linear()]
    clf = mk.MKLClassifier(kernels=specs, p=2.0).fit(X, y)
    gap: float = clf.duality_gap_
    n_iter: int = clf.n_iter_
    converged: bool = clf.converged_
    primal: float = clf.primal_objective_
    reg = mk.MKLRegressor(kernels=specs, loss="squared").fit(X[:, 1:], X[:, 0])
    reg_gap: float = reg.duality_gap_
    reg_iter: int = reg.n_iter_
    reg_converged: bool = reg.converged_
    return gap, n_iter, converged, primal, reg_gap, reg_iter, reg_converged
