"""The plots say what they show: a path on many kernels names its largest kernels by their
specification in a legend and counts the others, the CV score plot names its metric, and the
labels and legend of a new figure stay inside it after a default ``savefig``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import multikernel as mk
from multikernel.exceptions import InvalidParameterError
from multikernel.kernels import Gaussian

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _inside(artist: Any, tmp_path: Path) -> None:
    """After a default ``savefig``, ``artist`` lies within its figure (nothing cut)."""
    fig = artist.figure
    fig.savefig(tmp_path / "figure.png")
    box = artist.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.y0 >= 0, box
    assert box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1, (box, fig.bbox)


def _data() -> tuple[Any, Any]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X[:80, :8], y[:80]


def test_a_large_path_names_its_largest_kernels(tmp_path: Path) -> None:
    X, y = _data()
    specs = [Gaussian(sigma=s, features=[j]) for j in range(8) for s in (0.5, 1.0, 2.0, 4.0, 8.0)]
    path = mk.mkl_path(X, y - y.mean(), kernels=specs)
    ax = path.plot()
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    # The ten largest final weights, largest first, named by their spec; then the others.
    largest = np.argsort(-path.kernel_weights[-1], kind="stable")[:10]
    assert texts[:10] == [repr(specs[j]) for j in largest]
    assert texts[10:] == ["30 other kernels"]
    assert ax.get_legend().get_title().get_text() == f"largest 10 at C = {path.Cs[-1]:.3g}"
    assert ax.get_ylabel() == "kernel weight η"
    assert ax.get_title() == "mkl_path, squared loss, 40 kernels"
    # Every kernel is drawn, the legend names only the largest.
    assert len(ax.get_lines()) >= 40
    _inside(ax.xaxis.label, tmp_path)
    _inside(ax.get_legend(), tmp_path)

    ax = path.plot(top=3)
    assert [t.get_text() for t in ax.get_legend().get_texts()][3] == "37 other kernels"
    with pytest.raises(InvalidParameterError, match="top"):
        path.plot(top=-1)


def test_a_precomputed_path_labels_kernels_by_index() -> None:
    X, y = _data()
    specs = [Gaussian(sigma=1.0, features=[j]) for j in range(4)]
    G = mk.kernels.gram(X, specs, normalize="mean_diag")
    path = mk.mkl_path(G, y - y.mean(), kernels="precomputed")
    texts = [t.get_text() for t in path.plot().get_legend().get_texts()]
    largest = np.argsort(-path.kernel_weights[-1], kind="stable")
    # Four kernels: all named, none "other"; kernels at zero weight last.
    assert sorted(texts) == [f"kernel {j}" for j in range(4)]
    assert texts[0] == f"kernel {largest[0]}"


@pytest.mark.parametrize(
    ("make", "metric"),
    [
        (lambda: mk.MKLRegressorCV(kernels=None, Cs=4, cv=3), "R²"),
        (lambda: mk.MKLClassifierCV(kernels=None, Cs=4, cv=3), "accuracy"),
        (
            lambda: mk.MKLRegressorCV(kernels=None, Cs=4, cv=3, scoring="neg_mean_squared_error"),
            "neg_mean_squared_error",
        ),
    ],
    ids=["regressor", "classifier", "scoring"],
)
def test_plot_scores_names_the_metric(make: Any, metric: str, tmp_path: Path) -> None:
    X, y = _data()
    est = make()
    est.fit(X, y if isinstance(est, mk.MKLClassifierCV) else y * 2.0)
    ax = est.plot_scores()
    assert ax.get_ylabel() == f"held-out {metric}\n(mean ± std over 3 folds)"
    assert ax.get_xlabel() == f"C (dashed: the chosen C_ = {est.C_:.3g})"
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), est.scores_.mean(axis=0))
    _inside(ax.xaxis.label, tmp_path)
    _inside(ax.yaxis.label, tmp_path)
