"""Scale-out on Dask (docs/dask.md): grids under joblib's Dask backend on a local cluster of
worker processes, multiclass problems fanned out, fitted models pickled between processes, and
kernel stacks / predictions of Dask arrays computed block by block on the workers.

Every result is compared with the serial, in-memory one: bit for bit where the same engine call
computes it (fits, cross-kernel blocks, predictions), to a few ulps where the training
statistics are summed in another order (the training stack of a Dask array).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import multikernel as mk
from multikernel.kernels import Gaussian, KernelBank, Laplacian, Linear, Polynomial, gram

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
joblib = pytest.importorskip("joblib")

from sklearn.datasets import load_breast_cancer, load_iris  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

SPECS = [
    Gaussian(sigma=2.0),
    Polynomial(degree=2, features=[0, 1]),
    Linear(features=[2]),
    Laplacian(sigma=3.0, features=[1, 3]),
]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes of one thread each on loopback, no dashboard."""
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _cancer(n: int = 240) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:n, :6], y[:n]


def _points(n: int, seed: int) -> NDArray[np.float64]:
    return np.random.default_rng(seed).normal(size=(n, 4))


# --- grids, multiclass, pickling ------------------------------------------------------------


def test_grid_search_under_dask_equals_serial(client: Any) -> None:
    X, y = _cancer()
    grid = [
        {"penalty": ["lp"], "p": [1.5, 2.0], "C": [0.1, 1.0]},
        {"penalty": ["l1"], "C": [0.1, 1.0]},
    ]

    def search() -> GridSearchCV:
        # n_threads=1: one engine thread per fit, the workers' threads fill the cores.
        est = mk.MKLClassifier(tol=1e-4, n_threads=1)
        return GridSearchCV(est, grid, cv=3, n_jobs=-1).fit(X, y)

    with joblib.parallel_backend("sequential"):
        serial = search()
    with distributed.get_task_stream(client) as stream, joblib.parallel_backend("dask"):
        remote = search()
    assert len(stream.data) >= 6  # the fits ran as tasks on the cluster
    assert {t["worker"] for t in stream.data} == set(client.scheduler_info()["workers"])
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "params"):
        assert np.array_equal(np.asarray(remote.cv_results_[key]), serial.cv_results_[key])
    for k in range(3):
        key = f"split{k}_test_score"
        assert np.array_equal(remote.cv_results_[key], serial.cv_results_[key])
    assert remote.best_params_ == serial.best_params_
    a, b = remote.best_estimator_, serial.best_estimator_
    assert np.array_equal(a.kernel_weights_, b.kernel_weights_)
    assert np.array_equal(a.dual_coef_, b.dual_coef_)
    assert a.intercept_ == b.intercept_


def test_multiclass_problems_fan_out_and_equal_serial(client: Any) -> None:
    X, y = load_iris(return_X_y=True)
    for multi_class, n_problems in (("ovr", 3), ("ovo", 3)):
        est = mk.MKLClassifier(C=10.0, multi_class=multi_class, n_threads=1)
        serial = pickle.loads(pickle.dumps(est)).fit(X, y)
        with distributed.get_task_stream(client) as stream, joblib.parallel_backend("dask"):
            remote = est.fit(X, y)
        assert len(stream.data) >= 2, "the binary problems did not run as Dask tasks"
        assert remote.dual_coef_.shape[0] == n_problems
        for name in ("dual_coef_", "kernel_weights_", "intercept_", "duality_gap_", "n_iter_"):
            assert np.array_equal(getattr(remote, name), getattr(serial, name)), name
        assert np.array_equal(remote.predict(X), serial.predict(X))


def test_fitted_models_round_trip_between_processes(client: Any) -> None:
    X, y = load_iris(return_X_y=True)
    local = mk.MKLClassifier(kernels=SPECS, C=10.0, n_threads=1).fit(X, y)
    # Fitted in a worker process and pickled back.
    remote = client.submit(mk.MKLClassifier(kernels=SPECS, C=10.0, n_threads=1).fit, X, y)
    back = remote.result()
    assert back is not local
    for name in ("dual_coef_", "kernel_weights_", "intercept_", "classes_", "duality_gap_"):
        assert np.array_equal(getattr(back, name), getattr(local, name)), name
    assert np.array_equal(back.kernel_bank_.X_train_, local.kernel_bank_.X_train_)
    # Fitted here, pickled to a worker, predicting there.
    Xn = _points(30, 1)
    f_remote = client.submit(local.decision_function, Xn).result()
    assert np.array_equal(f_remote, local.decision_function(Xn))
    reg = mk.MKLRegressor(kernels=SPECS, penalty="l1", C=10.0).fit(X, X[:, 0])
    assert np.array_equal(client.submit(reg.predict, Xn).result(), reg.predict(Xn))


# --- stacks of Dask arrays ----------------------------------------------------------------


def test_transform_of_dask_array_is_blocks_of_the_numpy_cross_kernel(client: Any) -> None:
    X, Xn = _points(80, 0), _points(53, 1)
    for dtype in (np.float64, np.float32):
        bank = KernelBank(SPECS, normalize="spherical", center=True, dtype=dtype).fit(X)
        lazy = bank.transform(da.from_array(Xn, chunks=(20, 2)))
        assert isinstance(lazy, da.Array)
        assert lazy.shape == (4, 53, 80) and lazy.dtype == dtype
        assert lazy.chunks == ((4,), (20, 20, 13), (80,))
        # Every block is the engine's cross kernel of those rows: the same bits.
        assert np.array_equal(lazy.compute(), bank.transform(Xn))


@pytest.mark.parametrize("normalize", ["none", "trace", "mean_diag", "multiplicative", "spherical"])
@pytest.mark.parametrize("center", [False, True])
def test_gram_of_dask_array_equals_numpy_gram(client: Any, normalize: str, center: bool) -> None:
    X = _points(70, 2)
    X[:, 3] = 0.0  # Linear on column 3 is the zero kernel: degenerate, left zero
    specs = [*SPECS, Linear(features=[3])]
    ref = KernelBank(specs, normalize=normalize, center=center)  # type: ignore[arg-type]
    G = ref.fit_transform(X)
    bank = KernelBank(specs, normalize=normalize, center=center)  # type: ignore[arg-type]
    lazy = bank.fit_transform(da.from_array(X, chunks=(25, 4)))
    assert isinstance(lazy, da.Array) and lazy.chunks[1] == (25, 25, 20)
    assert bank.degenerate_ == ref.degenerate_
    if normalize not in ("none", "spherical"):
        assert bank.degenerate_ == [4]
    for key in ("row_means", "total_means", "diag", "scales"):
        np.testing.assert_allclose(bank.stats_[key], ref.stats_[key], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(lazy.compute(), G, rtol=1e-12, atol=1e-14)
    # The statistics carry over: new points are scaled like the numpy bank's.
    Xn = _points(9, 3)
    np.testing.assert_allclose(bank.transform(Xn), ref.transform(Xn), rtol=1e-12, atol=1e-14)
    gd = gram(da.from_array(X, chunks=(30, 4)), specs, normalize=normalize, center=center)  # type: ignore[arg-type]
    np.testing.assert_allclose(gd.compute(), G, rtol=1e-12, atol=1e-14)


def test_stack_stored_to_zarr_block_by_block(client: Any, tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    X, Xn = _points(60, 4), _points(45, 5)
    bank = KernelBank(SPECS, normalize="mean_diag").fit(X)
    lazy = bank.transform(da.from_array(Xn, chunks=(16, 4)))
    path = str(tmp_path / "cross.zarr")
    lazy.to_zarr(path)  # each worker writes its row blocks
    stored = zarr.open_array(path, mode="r")
    assert stored.shape == (4, 45, 60)
    assert np.array_equal(stored[...], bank.transform(Xn))
    # Read back lazily, the stack is the test input of a precomputed model.
    G = gram(X, SPECS, normalize="mean_diag")
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    pre = mk.MKLClassifier(kernels="precomputed", C=10.0).fit(G, y)
    f = pre.decision_function(da.from_zarr(path))
    assert isinstance(f, da.Array)
    assert np.array_equal(f.compute(), pre.decision_function(bank.transform(Xn)))


def test_predictions_on_dask_arrays(client: Any) -> None:
    X, y = load_iris(return_X_y=True)
    Xn = _points(57, 6)
    Xd = da.from_array(Xn, chunks=(20, 2))
    for clf in (
        mk.MKLClassifier(kernels=SPECS, C=10.0).fit(X, y),
        mk.MKLClassifier(kernels=SPECS, C=10.0, multi_class="ovo").fit(X, y),
        mk.MKLClassifier(kernels=SPECS, loss="logistic").fit(X, y == 2),
    ):
        for method in ("predict", "decision_function", "predict_proba"):
            if method == "predict_proba" and clf.loss != "logistic":
                continue
            out = getattr(clf, method)(Xd)
            assert isinstance(out, da.Array) and out.chunks[0] == (20, 20, 17)
            assert np.array_equal(out.compute(), getattr(clf, method)(Xn)), method
    reg = mk.MKLRegressor(kernels=SPECS, C=10.0).fit(X, X[:, 3])
    assert np.array_equal(reg.predict(Xd).compute(), reg.predict(Xn))


def test_package_imports_and_fits_without_dask() -> None:
    code = (
        "import sys\n"
        "sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
        "import numpy as np, multikernel as mk\n"
        "from sklearn.datasets import load_iris\n"
        "X, y = load_iris(return_X_y=True)\n"
        "clf = mk.MKLClassifier(C=10.0).fit(X, y)\n"
        "assert (clf.predict(X) == y).mean() > 0.9\n"
        "bank = mk.kernels.KernelBank(mk.default_kernels(4)).fit(X)\n"
        "assert bank.transform(X[:3]).shape == (5, 3, 150)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    plain = "import sys, multikernel; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "False", out.stderr
