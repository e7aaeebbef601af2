"""Command line: ``python -m multikernel demo``."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

#: The row cache of the demo's kernels, computed on demand (MB): the dense stack of the bank
#: would take 1.2 GB, more than an installation check should ask of a machine.
CACHE_MB = 256.0


def demo(p: float = 4.0 / 3.0, C: float = 1.0, n_top: int = 10) -> None:
    """ℓp-norm MKL on scikit-learn's bundled breast-cancer data with the SimpleMKL kernel bank
    (Gaussian widths and polynomial degrees on all and on each single feature), its kernels
    computed on demand through a row cache of :data:`CACHE_MB`: prints the learned weights of
    the top kernels, the test accuracy, the duality gap and the fit time."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    import multikernel as mk

    data = load_breast_cancer()
    X_train, X_test, y_train, y_test = train_test_split(
        data.data, data.target_names[data.target], test_size=0.25, random_state=0,
        stratify=data.target,
    )  # fmt: skip
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    specs = mk.kernels.simplemkl_bank(X_train.shape[1])
    clf = mk.MKLClassifier(kernels=specs, penalty="lp", p=p, C=C, tol=1e-3, cache_size=CACHE_MB)
    t0 = time.perf_counter()
    clf.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    accuracy = clf.score(X_test, y_test)
    n, M = X_train.shape[0], len(specs)
    print(
        f"breast cancer: {n} training and {X_test.shape[0]} test points, "
        f"{X_train.shape[1]} features"
    )
    print(
        f"SimpleMKL bank: {M} kernels, computed on demand through a {CACHE_MB:.0f} MB row cache "
        f"(as a dense stack: {M * n * n * 8 / 2**20:.0f} MiB in float64)"
    )
    print(f"lp-norm MKL, p = {p:.4g}, C = {C:g}, hinge loss, solver 'analytic'")
    w = clf.kernel_weights_
    share = w**p / np.sum(w**p)
    order = np.argsort(-w)[:n_top]
    print(f"top {n_top} kernels (weight θ_m, share of ||θ||_p^p):")
    for m in order:
        print(f"  {w[m]:.4f}  {share[m]:6.1%}  {specs[m]}")
    print(f"test accuracy: {accuracy:.4f}")
    print(
        f"duality gap: {clf.duality_gap_:.2e} (primal {clf.primal_objective_:.6g}, "
        f"dual {clf.dual_objective_:.6g}), {clf.n_iter_} iterations, "
        f"{'converged' if clf.converged_ else 'NOT converged'}"
    )
    print(f"fit time: {seconds:.2f} s (kernels and solver)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multikernel")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="fit on the bundled breast-cancer data and print the result")
    d.add_argument("--p", type=float, default=4.0 / 3.0, help="norm of the kernel weights")
    d.add_argument("--C", type=float, default=1.0, help="loss weight")
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(p=args.p, C=args.C)
    return 0


if __name__ == "__main__":
    sys.exit(main())
