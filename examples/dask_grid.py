"""
Grids of models on a Dask cluster
=================================

The estimators work under joblib's Dask backend, so scikit-learn's ``GridSearchCV`` spreads
its fits over a Dask cluster: every (candidate, fold) fit is a task, and the results are the
same bits as the serial search's. This example starts a small local cluster in this process
(``processes=False``: threads, no subprocesses); on a real cluster, pass the scheduler's
address to ``dask.distributed.Client`` instead.

Each fit runs the engine with ``n_threads=1``: the cluster's worker threads are the
parallelism, and ``workers × threads per worker × n_threads`` should not exceed the cores.
Requires the ``dask`` extra (``pip install "multikernel[dask]"``).
"""

# %%
# The grid
# --------
import joblib
import matplotlib.pyplot as plt
import numpy as np
from dask.distributed import Client, LocalCluster
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import multikernel as mk

X, y = load_breast_cancer(return_X_y=True)
X, y = X[:300], y[:300]
specs = [mk.kernels.Gaussian(sigma=s) for s in (2.0, 5.0, 10.0)] + [mk.kernels.Linear()]
ps, Cs = [1.5, 2.0, 4.0, np.inf], [0.01, 0.1, 1.0, 10.0]
search = GridSearchCV(
    make_pipeline(StandardScaler(), mk.MKLClassifier(kernels=specs, n_threads=1)),
    {"mklclassifier__p": ps, "mklclassifier__C": Cs},
    cv=3,
    n_jobs=-1,
)

# %%
# On a local cluster
# ------------------
with (
    LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster,
    Client(cluster) as client,
):
    print(f"{len(client.nthreads())} worker, {sum(client.nthreads().values())} threads")
    with joblib.parallel_backend("dask"):
        search.fit(X, y)
print("best:", search.best_params_, f"accuracy {search.best_score_:.3f}")
print("its kernel weights:", np.round(search.best_estimator_[-1].kernel_weights_, 3))

# %%
# The mean held-out accuracy over the grid
# ----------------------------------------
scores = search.cv_results_["mean_test_score"].reshape(len(Cs), len(ps))
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
im = ax.imshow(scores, cmap="viridis", origin="lower")
ax.set_xticks(range(len(ps)), [f"p={p:g}" for p in ps])
ax.set_yticks(range(len(Cs)), [f"C={c:g}" for c in Cs])
for (i, j), s in np.ndenumerate(scores):
    ax.text(j, i, f"{s:.3f}", ha="center", va="center", color="w")
fig.colorbar(im, ax=ax, label="3-fold accuracy")
ax.set_title("GridSearchCV under joblib's Dask backend")
