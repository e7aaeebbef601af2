"""Group MKL with a rank-one kernel alone in its group (issue "Group MKL that never stalls"):
n = 60 points of 4 standard normal features (``numpy.random.default_rng(seed)``), two Gaussians
(widths 0.5 and 2) on features 0–1 and two on features 2–3, the linear kernel ``X Xᵀ`` and the
rank-one ``x₃ x₃ᵀ``, each scaled to trace n; groups ``[0, 0, 1, 1, 2, 3]``; C = 10; the
``mirror`` solver at ``tol`` (default 1e-6), hinge and logistic, one fit per seed. Prints each
fit's time, status, iterations and gap, and the worst time and iteration count.

``shared`` (third argument): the shared multiclass fit (``multi_class="shared"``, docs/
mathematics.md §3.8) on three classes, the tertiles of the same score, one-vs-rest targets,
by the engine's ``fit_shared`` with the same kernels, groups and C.

    python benches/peers/group_free.py [tol] [seeds] [binary|shared]
"""

import sys
import time

import numpy as np

from multikernel import _core


def gauss(X, w):
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-d / (2 * w * w))


def make(seed, n=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 + 0.5 * rng.normal(size=n)
    y = np.sign(score)
    y[y == 0] = 1
    Ks = [
        gauss(X[:, :2], 0.5),
        gauss(X[:, :2], 2.0),
        gauss(X[:, 2:], 0.5),
        gauss(X[:, 2:], 2.0),
        X @ X.T,
        np.outer(X[:, 3], X[:, 3]),
    ]
    G = np.stack([K / np.trace(K) * n for K in Ks])
    groups = [0, 0, 1, 1, 2, 3]
    return G, y, groups, np.searchsorted(np.quantile(score, [1 / 3, 2 / 3]), score)


def fit(G, y, groups, loss, tol, C=10.0, max_iter=2000, **kw):
    s = {"C": C, "loss": loss, "tol": tol, "max_iter": max_iter, "groups": list(groups), **kw}
    return _core.fit(_core.Settings("mirror", s), G, y)


def fit_shared(G, classes, groups, loss, tol, C=10.0, max_iter=2000):
    Y = np.stack([np.where(classes == k, 1.0, -1.0) for k in range(3)])
    s = {"C": C, "loss": loss, "tol": tol, "max_iter": max_iter}
    return _core.fit_shared(_core.Settings("analytic", s), G, Y, penalty="group", groups=groups)


if __name__ == "__main__":
    tol = float(sys.argv[1]) if len(sys.argv) > 1 else 1e-6
    seeds = range(int(sys.argv[2]) if len(sys.argv) > 2 else 8)
    shared = len(sys.argv) > 3 and sys.argv[3] == "shared"
    worst_t, worst_it = 0, 0
    for loss in ["hinge", "logistic"]:
        for seed in seeds:
            G, y, groups, classes = make(seed)
            t = time.perf_counter()
            if shared:
                r = fit_shared(G, classes, groups, loss, tol)
            else:
                r = fit(G, y, groups, loss, tol)
            dt = time.perf_counter() - t
            print(
                f"{loss:8s} seed {seed}: {dt:7.3f}s {r.status} iters {r.n_iter} gap {r.gap:.2e}",
                flush=True,
            )
            worst_t = max(worst_t, dt)
            worst_it = max(worst_it, r.n_iter)
    print(f"max time {worst_t:.3f}s  max iters {worst_it}")
