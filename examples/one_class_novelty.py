"""
Novelty detection with one-class MKL
====================================

:class:`multikernel.MKLOneClass` is the one-class SVM of Schölkopf et al. on a learned
combination ``Σ_m θ_m K_m`` of kernels (Kloft et al.'s ℓp-norm MKL, ``‖θ‖_p ≤ 1``): it
learns a region that holds most of the training points (at most a fraction ``ν`` outside) and
flags new points outside it as novelties.

The training data are "normal" points only: two Gaussian clusters in two dimensions. The test
data add uniformly scattered novelties. Three Gaussian widths are offered; the fit chooses
their weights, and its certificate (the relative duality gap) is printed.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np

import multikernel as mk
from multikernel.kernels import Gaussian

rng = np.random.default_rng(0)
centers = np.array([[-2.0, -2.0], [2.0, 1.5]])
X_train = np.vstack([c + 0.6 * rng.normal(size=(150, 2)) for c in centers])
X_normal = np.vstack([c + 0.6 * rng.normal(size=(40, 2)) for c in centers])
X_novel = rng.uniform(-5.0, 5.0, size=(40, 2))

# %%
# Fit on normal points only
# -------------------------
specs = [Gaussian(sigma=s) for s in (0.3, 1.0, 3.0)]
det = mk.MKLOneClass(kernels=specs, p=2.0, nu=0.05).fit(X_train)
print("kernel weights θ:", np.round(det.kernel_weights_, 3), f"gap {det.duality_gap_:.1e}")
print(f"training points outside the region: {np.mean(det.predict(X_train) == -1):.3f} (ν = 0.05)")
print(f"new normal points flagged: {np.mean(det.predict(X_normal) == -1):.3f}")
print(f"novelties flagged:         {np.mean(det.predict(X_novel) == -1):.3f}")

# %%
# The learned region
# ------------------
# ``decision_function`` is positive inside the region; its zero level is the boundary.
xx, yy = np.meshgrid(np.linspace(-5.5, 5.5, 200), np.linspace(-5.5, 5.5, 200))
f = det.decision_function(np.column_stack([xx.ravel(), yy.ravel()])).reshape(xx.shape)
fig, ax = plt.subplots(figsize=(6.5, 6), layout="constrained")
ax.contourf(xx, yy, f, levels=np.linspace(f.min(), 0, 8), cmap="Blues_r")
ax.contour(xx, yy, f, levels=[0.0], colors="darkred", linewidths=2)
ax.scatter(*X_train.T, s=10, c="white", edgecolor="k", label="training (normal)")
ax.scatter(*X_normal.T, s=25, c="gold", edgecolor="k", label="new normal")
ax.scatter(*X_novel.T, s=25, c="red", marker="X", label="novelties")
ax.legend(loc="upper left")
ax.set_title(f"one-class MKL, θ = {np.round(det.kernel_weights_, 2)}")
