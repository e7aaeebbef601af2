"""
Choosing a penalty: ℓp, ℓ1 and group MKL on one data set
========================================================

The 30 features of scikit-learn's breast-cancer data come in three blocks of ten: the *mean*
of each cell-nucleus measurement over the image, its *standard error* and its *worst* (largest)
value. Each feature gets one Gaussian kernel, and three penalties learn a combination of the
30 kernels:

- ``penalty="lp"`` with ``p = 4/3`` (Kloft et al.'s ℓp-norm MKL): every kernel gets some
  weight, the informative ones more;
- ``penalty="l1"`` (SpicyMKL's block ℓ1): sparse, a few kernels carry the whole model;
- ``penalty="group"`` with the three blocks as groups (Nath et al.'s mixed norm): every block
  is used, and the weights are sparse within each block.

The weights are drawn side by side, with the held-out accuracy and the certificate (the
relative duality gap) of each fit.
"""

# %%
# The data and the kernels
# ------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import multikernel as mk

data = load_breast_cancer()
X_train, X_test, y_train, y_test = train_test_split(
    data.data, data.target, test_size=0.3, stratify=data.target, random_state=0
)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

names = list(data.feature_names)
specs = [mk.kernels.Gaussian(sigma=1.0, features=[j]) for j in range(len(names))]
blocks = ["mean", "error", "worst"]
groups = [0 if n.startswith("mean") else 1 if n.endswith("error") else 2 for n in names]
print({b: groups.count(i) for i, b in enumerate(blocks)})

# %%
# Three penalties
# ---------------
# ``C`` weights the loss in each; the penalties' ``C`` are not on one scale, so each gets a
# value that suits it (a grid search would choose them, as in the kernel-selection example).
models = {
    "lp, p=4/3": mk.MKLClassifier(kernels=specs, penalty="lp", p=4 / 3, C=1.0),
    "l1": mk.MKLClassifier(kernels=specs, penalty="l1", C=0.3),
    "group": mk.MKLClassifier(kernels=specs, penalty="group", groups=groups, C=1.0),
}
for name, clf in models.items():
    clf.fit(X_train, y_train)
    kept = int(np.sum(clf.kernel_weights_ > 1e-3 * clf.kernel_weights_.max()))
    print(
        f"{name:10s} accuracy {clf.score(X_test, y_test):.3f}  kernels kept {kept:2d} / 30  "
        f"gap {clf.duality_gap_:.1e}"
    )

# %%
# The weights side by side
# ------------------------
# Each bar is one feature's kernel, coloured by its block. ``lp`` spreads the weight over all
# kernels, ``l1`` keeps a handful, ``group`` keeps kernels in every block.
colors = np.array(["tab:blue", "tab:orange", "tab:green"])[groups]
fig, axes = plt.subplots(1, 3, figsize=(12, 5.5), sharey=True, layout="constrained")
for ax, (name, clf) in zip(axes, models.items(), strict=True):
    w = clf.kernel_weights_ / clf.kernel_weights_.sum()
    ax.barh(np.arange(len(names)), w, color=colors)
    ax.set_title(f"{name}\naccuracy {clf.score(X_test, y_test):.3f}")
    ax.set_xlabel("share of the kernel weights")
    # Four ticks: the panels' edge labels (0.14 | 0.00) touched with matplotlib's default.
    ax.xaxis.set_major_locator(plt.MaxNLocator(4))
axes[0].set_yticks(np.arange(len(names)), names, fontsize=7)
axes[0].invert_yaxis()
handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("tab:blue", "tab:orange", "tab:green")]
fig.legend(handles, blocks, loc="outside lower center", ncols=3)
