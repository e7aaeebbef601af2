"""
The regularization path and the cross-validation curve of a sparse classifier
=============================================================================

:class:`multikernel.MKLClassifierCV` chooses ``C`` of sparse (block-ℓ1) MKL with the logistic
loss by cross-validation *along regularization paths*: each fold computes the whole path of
solutions with :func:`multikernel.mkl_path` (Bach et al.'s predictor–corrector, every point
certified by a duality gap), the held-out accuracy is read off the paths at every candidate
``C``, and the best ``C`` is refit on all the data.

The data are scikit-learn's wine recognition set restricted to its first two cultivars; each of
the 13 standardised features gets two Gaussian kernels (widths 1 and 3), 26 kernels.
"""

# %%
# The path on all the training data
# ---------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import multikernel as mk

wine = load_wine()
two = wine.target < 2
X_train, X_test, y_train, y_test = train_test_split(
    wine.data[two], wine.target[two], test_size=0.3, stratify=wine.target[two], random_state=0
)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
specs = [
    mk.kernels.Gaussian(sigma=s, features=[j]) for j in range(X_train.shape[1]) for s in (1.0, 3.0)
]
names = [f"{wine.feature_names[j]}, σ={s:g}" for j in range(X_train.shape[1]) for s in (1.0, 3.0)]

path = mk.mkl_path(X_train, np.where(y_train == 1, 1.0, -1.0), kernels=specs, loss="logistic")
print(
    f"{len(path.Cs)} points from C = {path.Cs[0]:.3g} to {path.Cs[-1]:.3g}, "
    f"largest relative duality gap {path.duality_gaps.max():.1e}"
)
active = path.kernel_norms > 1e-2 * path.kernel_norms.max()
first = {j: int(np.argmax(active[:, j])) for j in range(len(specs)) if active[:, j].any()}
print("first to enter:", "; ".join(names[j] for j in sorted(first, key=first.get)[:4]))

# %%
# C chosen by cross-validation along the paths
# --------------------------------------------
clf = mk.MKLClassifierCV(kernels=specs, Cs=15, cv=5).fit(X_train, y_train)
kept = [names[j] for j in np.flatnonzero(clf.kernel_weights_ > 1e-3)]
print(f"C_ = {clf.C_:.3g}, test accuracy {clf.score(X_test, y_test):.3f}")
print(f"{len(kept)} kernels kept:", "; ".join(kept))

# %%
# The path (left) and the cross-validation curve (right)
# ------------------------------------------------------
# :meth:`multikernel.MKLPath.plot` draws the kernel weights against ``C`` with the kinks
# (where a kernel enters or leaves) marked; :meth:`multikernel.MKLClassifierCV.plot_scores`
# the mean held-out accuracy over the folds.
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
path.plot(ax=axes[0], top=6)
clf.plot_scores(ax=axes[1])
axes[1].axvline(clf.C_, color="k", ls=":", label=f"C_ = {clf.C_:.3g}")
axes[1].legend()
