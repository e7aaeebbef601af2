"""
Multi-view learning with ``view_bank``: pixels and profiles of handwritten digits
=================================================================================

Multi-view data describe every sample in several ways: here scikit-learn's 8×8 handwritten
digits are seen through three views built from the same images:

- ``pixels``: the 64 grey levels;
- ``profiles``: the 16 row and column sums of the image (its projection profiles);
- ``halves``: 4 sums of ink in the top, bottom, left and right halves.

:func:`multikernel.kernels.view_bank` gives every view a few Gaussian kernels (widths scaled
with the view's number of columns) and returns the view index of each kernel, the ``groups=``
of group MKL (Nath et al.): ``penalty="group"`` uses every view and is sparse within the views.
Each view alone (``lp``, ``p = 2`` on its kernels) is the baseline. The digits 3, 5 and 8,
which are easily confused, make a three-class problem (one-vs-rest: three binary problems).
"""

# %%
# Three views of the digits
# -------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import multikernel as mk

digits = load_digits()
keep = np.isin(digits.target, [3, 5, 8])
images, y = digits.images[keep][:360], digits.target[keep][:360]
profiles = np.hstack([images.sum(axis=1), images.sum(axis=2)])
halves = np.stack(
    [
        images[:, :4].sum(axis=(1, 2)),
        images[:, 4:].sum(axis=(1, 2)),
        images[:, :, :4].sum(axis=(1, 2)),
        images[:, :, 4:].sum(axis=(1, 2)),
    ],
    axis=1,
)
X = np.hstack([images.reshape(len(images), -1), profiles, halves])
views = {"pixels": range(0, 64), "profiles": range(64, 80), "halves": range(80, 84)}
print(X.shape, {name: len(cols) for name, cols in views.items()})

# %%
# One bank per view
# -----------------
# ``view_bank`` takes one list of widths for every view; the distances between standardised
# points grow with ``sqrt(d_view)``, so each view gets its own call, widths in that unit.
specs, groups = [], []
for g, (name, cols) in enumerate(views.items()):
    scale = np.sqrt(len(cols))
    view_specs, _ = mk.kernels.view_bank({name: cols}, widths=[0.5 * scale, 1.0 * scale, 2 * scale])
    specs += view_specs
    groups += [g] * len(view_specs)
print(len(specs), "kernels, groups", groups)

# %%
# Group MKL against each view alone
# ---------------------------------
# Five-fold cross-validated accuracy (the scaler is fitted inside each fold).
group = mk.MKLClassifier(kernels=specs, penalty="group", groups=groups, C=1.0)
scores = {"group (all views)": cross_val_score(make_pipeline(StandardScaler(), group), X, y)}
for g, name in enumerate(views):
    alone = [s for s, gs in zip(specs, groups, strict=True) if gs == g]
    clf = mk.MKLClassifier(kernels=alone, penalty="lp", p=2.0, C=1.0)
    scores[f"{name} alone"] = cross_val_score(make_pipeline(StandardScaler(), clf), X, y)
for name, s in scores.items():
    print(f"{name:18s} accuracy {s.mean():.3f} ± {s.std():.3f}")

# %%
# What group MKL learned
# ----------------------
# Refit on all the data: ``group_weights_`` holds each view's share for each of the three
# one-vs-rest problems, ``kernel_weights_`` the kernels' weights within the views.
group.fit(StandardScaler().fit_transform(X), y)
print("duality gaps", np.round(group.duality_gap_, 5))
fig, (ax_views, ax_acc) = plt.subplots(
    1, 2, figsize=(11, 4), layout="constrained", gridspec_kw={"width_ratios": [3, 2]}
)
weights = group.kernel_weights_  # (3 problems, M)
im = ax_views.imshow(weights, aspect="auto", cmap="viridis")
ax_views.set_yticks(range(len(group.classes_)), [f"{c} vs rest" for c in group.classes_])
ax_views.set_xticks(range(len(specs)), [f"σ={s.sigma:.3g}" for s in specs], rotation=90)
for boundary in np.flatnonzero(np.diff(groups)) + 0.5:
    ax_views.axvline(boundary, color="white", lw=2)
for g, name in enumerate(views):
    cols = np.flatnonzero(np.asarray(groups) == g)
    ax_views.text(cols.mean(), -0.7, name, ha="center")
ax_views.set_title("group MKL: kernel weights, by view", pad=18)
fig.colorbar(im, ax=ax_views)
names = list(scores)
ax_acc.barh(names, [scores[n].mean() for n in names], xerr=[scores[n].std() for n in names])
ax_acc.set_xlim(0.5, 1.0)
ax_acc.invert_yaxis()
ax_acc.set_xlabel("5-fold accuracy")
