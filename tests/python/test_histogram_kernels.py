"""The histogram and set kernels (Chi2, Intersection, Hellinger, Tanimoto) against independent
computations (scikit-learn's ``chi2_kernel``, numpy loops) on random and adversarial inputs,
train and cross blocks, through every surface the vector kernels work on (KernelBank with each
normalisation, kernels on demand, low rank, Nyström, groups, pickling); and
``from_distances`` against a numpy reference, with its errors."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.spatial.distance import cdist
from sklearn.metrics.pairwise import chi2_kernel

import multikernel as mk
from multikernel.exceptions import InvalidInputError, KernelNotPSDError, NonFiniteError
from multikernel.kernels import (
    Chi2,
    FeatureBank,
    Gaussian,
    Hellinger,
    Intersection,
    KernelBank,
    Tanimoto,
    from_distances,
    gram,
    low_rank,
    view_bank,
)

FloatArray = NDArray[np.float64]


def ref_intersection(A: FloatArray, B: FloatArray) -> FloatArray:
    out = np.zeros((len(A), len(B)))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            out[i, j] = sum(min(p, q) for p, q in zip(a, b, strict=True))
    return out


def ref_hellinger(A: FloatArray, B: FloatArray) -> FloatArray:
    out = np.zeros((len(A), len(B)))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            out[i, j] = sum(np.sqrt(p * q) for p, q in zip(a, b, strict=True))
    return out


def ref_tanimoto(A: FloatArray, B: FloatArray) -> FloatArray:
    out = np.zeros((len(A), len(B)))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            lo = sum(min(p, q) for p, q in zip(a, b, strict=True))
            hi = sum(max(p, q) for p, q in zip(a, b, strict=True))
            out[i, j] = lo / hi if hi > 0 else 1.0
    return out


def ref_jaccard(A: FloatArray, B: FloatArray) -> FloatArray:
    a, b = A.astype(bool), B.astype(bool)
    out = np.ones((len(A), len(B)))
    for i in range(len(A)):
        for j in range(len(B)):
            union = np.sum(a[i] | b[j])
            if union:
                out[i, j] = np.sum(a[i] & b[j]) / union
    return out


CASES: list[tuple[Any, Any]] = [
    (Chi2(gamma=0.7), lambda A, B: chi2_kernel(A, B, gamma=0.7)),
    (Chi2(gamma=3.0), lambda A, B: chi2_kernel(A, B, gamma=3.0)),
    (Intersection(), ref_intersection),
    (Hellinger(), ref_hellinger),
    (Tanimoto(), ref_tanimoto),
]


def inputs() -> dict[str, tuple[FloatArray, FloatArray]]:
    """Training and new rows: random, sparse counts, zero rows and columns, tiny and huge."""
    rng = np.random.default_rng(3)
    dense = rng.random((25, 11))
    counts = rng.poisson(0.6, size=(30, 19)).astype(float)
    counts[:, [2, 7]] = 0.0  # zero columns
    counts[[0, 5, 9]] = 0.0  # zero rows
    zeros = np.zeros((6, 4))
    scales = rng.random((20, 9)) * np.logspace(-8, 3, 9)
    scales[rng.random(scales.shape) < 0.3] = 0.0
    binary = (rng.random((28, 40)) < 0.2).astype(float)
    binary[3] = 0.0
    out = {}
    for name, X in dict(
        dense=dense, counts=counts, zeros=zeros, scales=scales, binary=binary
    ).items():
        k = 2 * len(X) // 3
        out[name] = (X[:k], X[k:])
    return out


def assert_rel(a: FloatArray, b: FloatArray, rtol: float = 1e-12) -> None:
    scale = np.maximum(np.abs(b), np.abs(b).max() * 1e-3 if b.size else 0.0)
    bad = np.abs(a - b) > rtol * np.maximum(scale, 1e-300)
    assert not bad.any(), f"max rel err {np.max(np.abs(a - b) / np.maximum(scale, 1e-300))}"


@pytest.mark.parametrize("name", list(inputs()))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_train_and_cross_blocks_equal_the_reference(name: str, case: int) -> None:
    spec, ref = CASES[case]
    X, Xt = inputs()[name]
    G = gram(X, [spec])[0]
    assert_rel(G, ref(X, X))
    assert np.array_equal(G, G.T)
    lam = np.linalg.eigvalsh(G)
    assert lam[0] >= -1e-10 * max(abs(lam[-1]), 1e-300)
    bank = KernelBank([spec], normalize="none").fit(X)
    assert_rel(bank.transform(Xt)[0], ref(Xt, X))
    # float32 stacks hold the same values to float32 rounding.
    G32 = gram(X, [spec], dtype=np.float32)[0]
    assert np.allclose(G32, G, rtol=1e-6, atol=1e-6 * np.abs(G).max())


def test_tanimoto_is_jaccard_on_binary_vectors() -> None:
    X, Xt = inputs()["binary"]
    assert_rel(gram(X, [Tanimoto()])[0], ref_jaccard(X, X))
    assert_rel(
        KernelBank([Tanimoto()], normalize="none").fit(X).transform(Xt)[0], ref_jaccard(Xt, X)
    )


def test_feature_subsets_and_mixed_banks() -> None:
    rng = np.random.default_rng(5)
    X = np.hstack([rng.random((30, 6)), rng.normal(size=(30, 3))])  # histogram + signed columns
    hist = list(range(6))
    specs = [
        Chi2(1.5, features=hist),
        Intersection(features=[0, 2, 4]),
        Hellinger(features=hist),
        Tanimoto(features=[1, 3, 5]),
        Gaussian(1.0, features=[6, 7, 8]),
    ]
    G = gram(X, specs)
    H = X[:, hist]
    assert_rel(G[0], chi2_kernel(H, gamma=1.5))
    assert_rel(G[1], ref_intersection(X[:, [0, 2, 4]], X[:, [0, 2, 4]]))
    assert_rel(G[2], ref_hellinger(H, H))
    assert_rel(G[3], ref_tanimoto(X[:, [1, 3, 5]], X[:, [1, 3, 5]]))
    assert_rel(G[4], gram(X, [Gaussian(1.0, features=[6, 7, 8])])[0])


@pytest.mark.parametrize("spec", [Chi2(), Intersection(), Hellinger(), Tanimoto()])
def test_negative_entries_are_refused_naming_the_column(spec: Any) -> None:
    rng = np.random.default_rng(1)
    X = rng.random((10, 5))
    bad = X.copy()
    bad[4, 3] = -0.25
    with pytest.raises(InvalidInputError, match=r"column 3 .*X\[4, 3\] = -0.25") as err:
        gram(bad, [spec])
    assert err.value.kernel == 0
    # Columns the kernel does not read may be negative.
    gram(bad, [spec._with_features((0, 1, 2))])
    bank = KernelBank([Gaussian(1.0), spec], normalize="none").fit(X)
    with pytest.raises(InvalidInputError, match=r"kernel 1: .*column 3 of X"):
        bank.transform(bad)
    with pytest.raises(InvalidInputError, match="column 3"):
        KernelBank([spec]).fit_on_demand(bad, cache_bytes=1 << 16)
    with pytest.raises(InvalidInputError, match="column 3"):
        mk.MKLClassifier(kernels=[spec]).fit(bad, np.arange(10) % 2)
    clf = mk.MKLClassifier(kernels=[spec], cache_size=1.0).fit(X, np.arange(10) % 2)
    with pytest.raises(InvalidInputError, match="column 3"):
        clf.predict(bad)


def test_parameters_repr_and_pickling() -> None:
    with pytest.raises(ValueError, match="gamma"):
        Chi2(gamma=0.0)
    with pytest.raises(ValueError, match="gamma"):
        Chi2(gamma=float("inf"))
    specs = [Chi2(0.5, features=[0, 1]), Intersection(), Hellinger(features=["a"]), Tanimoto()]
    assert repr(specs[0]) == "Chi2(gamma=0.5, features=(0, 1))"
    assert repr(specs[3]) == "Tanimoto(features=None)"
    assert pickle.loads(pickle.dumps(specs)) == specs
    assert len(set(specs)) == 4
    X = np.random.default_rng(0).random((12, 3))
    bank = KernelBank(specs[:2] + [Hellinger(), specs[3]], normalize="trace").fit(X)
    again = pickle.loads(pickle.dumps(bank))
    assert np.array_equal(again.transform(X[:4]), bank.transform(X[:4]))


@pytest.mark.parametrize("normalize", ["none", "trace", "mean_diag", "multiplicative", "spherical"])
@pytest.mark.parametrize("center", [False, True])
def test_bank_normalisations_map_training_points_to_the_training_kernels(
    normalize: Any, center: bool
) -> None:
    rng = np.random.default_rng(2)
    X = rng.poisson(1.0, size=(40, 8)).astype(float)
    X[0] = 0.0
    specs = [Chi2(0.3), Intersection(), Hellinger(), Tanimoto()]
    bank = KernelBank(specs, normalize=normalize, center=center)
    G = bank.fit_transform(X)
    assert np.allclose(bank.transform(X), G, rtol=1e-10, atol=1e-12)
    raw = gram(X, specs)
    assert np.allclose(gram(X, specs, normalize=normalize, center=center), G)
    if normalize == "spherical" and not center:
        d = np.sqrt(np.einsum("mii->mi", raw))
        d[d == 0] = 1.0
        assert np.allclose(G, raw / d[:, :, None] / d[:, None, :])
    if normalize == "trace" and not center:
        assert np.allclose(G, raw / np.einsum("mii->m", raw)[:, None, None])
    for K in G:
        lam = np.linalg.eigvalsh(K)
        assert lam[0] >= -1e-10 * max(abs(lam[-1]), 1e-300)


@pytest.mark.parametrize("normalize", ["none", "trace", "mean_diag", "spherical"])
def test_on_demand_reads_equal_the_stored_stack(normalize: Any) -> None:
    rng = np.random.default_rng(4)
    X = rng.poisson(1.5, size=(60, 7)).astype(float)
    X[[3, 8]] = 0.0
    specs = [Chi2(0.4), Intersection(features=[0, 1, 2, 3]), Hellinger(), Tanimoto()]
    stored = KernelBank(specs, normalize=normalize)
    G = stored.fit_transform(X)
    bank = KernelBank(specs, normalize=normalize)
    K = bank.fit_on_demand(X, cache_bytes=1 << 16)
    assert (K.n, K.m) == (60, len(specs))
    assert np.allclose(bank.stats_["scales"], stored.stats_["scales"], rtol=1e-12)
    cols = np.array([0, 3, 41, 59])
    Xt = rng.poisson(1.5, size=(9, 7)).astype(float)
    T = stored.transform(Xt)
    assert np.allclose(bank.transform(Xt, columns=cols), T[:, :, cols], rtol=1e-12, atol=1e-14)
    # Every column of every kernel, read through the stack's subset of all points.
    for m in range(len(specs)):
        for i in (0, 3, 17):
            assert np.allclose(mk.kernels.quad_forms(G[m : m + 1], np.eye(60)[i])[0], G[m, i, i])
    sub = K.subset(list(range(60)))
    assert sub.n == 60


def test_classifier_on_demand_reaches_the_stored_objective() -> None:
    rng = np.random.default_rng(6)
    X = rng.poisson(1.0, size=(90, 10)).astype(float)
    y = (X[:, :5].sum(1) > X[:, 5:].sum(1)).astype(int)
    kw: dict[str, Any] = dict(
        kernels=[Chi2(0.5), Intersection(), Hellinger(), Tanimoto()], C=2.0, tol=1e-10
    )
    a = mk.MKLClassifier(**kw).fit(X[:70], y[:70])
    b = mk.MKLClassifier(cache_size=0.02, **kw).fit(X[:70], y[:70])
    assert b.converged_ and a.converged_
    assert abs(b.primal_objective_ - a.primal_objective_) <= 1e-8 * abs(a.primal_objective_)
    assert np.allclose(b.kernel_weights_, a.kernel_weights_, atol=1e-6)
    assert np.allclose(b.decision_function(X[70:]), a.decision_function(X[70:]), atol=1e-6)


def test_low_rank_and_nystroem() -> None:
    rng = np.random.default_rng(7)
    X = rng.random((50, 6))
    specs = [Chi2(1.0), Intersection(), Hellinger(), Tanimoto()]
    G = gram(X, specs, normalize="trace")
    with pytest.warns(UserWarning, match="compress nothing"):  # full rank on 50 points
        F = low_rank(G, tol=1e-12)
    for m in range(len(specs)):
        R = F.factors[m]
        assert np.allclose(R @ R.T, G[m], atol=1e-9)
    # At full rank, a fit on the factors is the fit on the stack.
    y = (X[:, 0] > np.median(X[:, 0])).astype(int)
    kw: dict[str, Any] = {"penalty": "lp", "tol": 1e-8}
    stored = mk.MKLClassifier(kernels="precomputed", **kw).fit(G, y)
    factored = mk.MKLClassifier(kernels="precomputed", **kw).fit(F, y)
    rel = abs(factored.primal_objective_ - stored.primal_objective_)
    assert rel <= 1e-6 * abs(stored.primal_objective_)
    assert np.allclose(factored.kernel_weights_, stored.kernel_weights_, atol=1e-4)
    phi = FeatureBank(specs, method="nystroem", n_components=50, normalize="none").fit(X)
    feats = phi.transform(X)
    raw = gram(X, specs)
    for m, P in enumerate(feats):
        assert np.allclose(P @ P.T, raw[m], atol=1e-6 * np.abs(raw[m]).max())


def test_view_bank_of_histogram_views() -> None:
    """view_bank's histogram kernels per view equal the references on the view's columns,
    fit as groups, and refuse a negative entry of a view they read, naming its column."""
    rng = np.random.default_rng(5)
    X = rng.random((36, 7))
    views = {"colour": range(4), "shape": [4, 5, 6]}
    specs, groups = view_bank(
        views, widths=(), chi2=(0.5, 2.0), intersection=True, hellinger=True
    )  # fmt: skip
    assert groups == [0] * 4 + [1] * 4
    G = gram(X, specs)
    for j, cols in enumerate(views.values()):
        V = X[:, list(cols)]
        want = [chi2_kernel(V, gamma=0.5), chi2_kernel(V, gamma=2.0)]
        want += [ref_intersection(V, V), ref_hellinger(V, V)]
        for t, W in enumerate(want):
            assert np.allclose(G[4 * j + t], W, rtol=1e-12, atol=1e-14)
    y = (X[:, 0] + X[:, 5] > 1.0).astype(int)
    clf = mk.MKLClassifier(kernels=specs, penalty="group", groups=groups, tol=1e-4).fit(X, y)
    assert clf.converged_ and clf.duality_gap_ <= clf.tol
    bad = X.copy()
    bad[3, 5] = -0.1
    with pytest.raises(InvalidInputError, match="column 5"):
        gram(bad, specs)
    with pytest.raises(ValueError, match="chi2"):
        view_bank(views, chi2=(0.0,))


def test_groups_and_a_mixed_mkl_fit() -> None:
    """A Chi2 kernel on histogram columns beside Gaussians on numeric columns: the fit uses
    both views, with the group penalty too, and predicts new rows."""
    rng = np.random.default_rng(8)
    n = 160
    labels = rng.integers(0, 2, n)
    profiles = np.array([[5, 1, 1, 3, 0, 2], [1, 4, 3, 1, 2, 0]], dtype=float)
    hist = rng.poisson(profiles[labels] * 2.0).astype(float)
    hist /= hist.sum(1, keepdims=True).clip(1.0)
    numeric = rng.normal(size=(n, 2)) + labels[:, None] * 0.8
    X = np.hstack([hist, numeric])
    specs = [
        Chi2(1.0, features=range(6)),
        Chi2(5.0, features=range(6)),
        Gaussian(1.0, features=[6, 7]),
        Gaussian(3.0, features=[6, 7]),
    ]
    clf = mk.MKLClassifier(kernels=specs, C=1.0).fit(X[:120], labels[:120])
    assert clf.converged_ and clf.duality_gap_ <= clf.tol
    assert clf.score(X[120:], labels[120:]) > 0.8
    grp = mk.MKLClassifier(kernels=specs, penalty="group", groups=[0, 0, 1, 1]).fit(
        X[:120], labels[:120]
    )
    assert grp.score(X[120:], labels[120:]) > 0.8


# from_distances --------------------------------------------------------------------------


def ref_distance_kernels(Ds: list[FloatArray], widths: list[float]) -> FloatArray:
    out = []
    for D in Ds:
        n = len(D)
        mean = sum(D[i, j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
        out += [np.exp(-D / (w * mean)) for w in widths]
    return np.array(out)


def test_from_distances_train_and_cross_blocks() -> None:
    rng = np.random.default_rng(9)
    X, Xt = rng.random((30, 4)), rng.random((7, 4))
    views = [(X, Xt, "euclidean"), (X[:, :2], Xt[:, :2], "cityblock")]
    D = [cdist(a, a, metric) for a, _, metric in views]
    Dt = [cdist(b, a, metric) for a, b, metric in views]
    widths = [0.25, 1.0, 4.0]
    K = from_distances(D, widths)
    assert K.stack_.shape == (6, 30, 30) and K.n_views == 2
    assert_rel(K.stack_, ref_distance_kernels(D, widths))
    assert np.all(K.shifts_ == 0.0)
    means = np.array([d[~np.eye(30, dtype=bool)].mean() for d in D])
    assert np.allclose(K.mean_distances_, means, rtol=1e-14)
    ref_cross = np.array(
        [np.exp(-d / (w * m)) for d, m in zip(Dt, means, strict=True) for w in widths]
    )
    assert_rel(K.transform(Dt), ref_cross)
    # A single view; the training distances give the training kernels.
    one = from_distances(D[0], 1.0)
    assert one.stack_.shape == (1, 30, 30)
    assert np.array_equal(one.transform(D[0]), one.stack_)
    # In an estimator, as a precomputed stack.
    y = (X[:, 0] > 0.5).astype(int)
    clf = mk.MKLClassifier(kernels="precomputed").fit(K.stack_, y)
    assert clf.predict(K.transform(Dt)).shape == (7,)
    assert "DistanceKernels(n_views=2" in repr(K)


def test_from_distances_psd_check_and_shift() -> None:
    # Four points whose "distances" break the triangle inequality badly: exp(-D/c) is
    # indefinite.
    D = np.array(
        [[0.0, 0.01, 0.01, 10.0], [0.01, 0.0, 10.0, 0.01], [0.01, 10.0, 0.0, 0.01],
         [10.0, 0.01, 0.01, 0.0]]
    )  # fmt: skip
    with pytest.raises(KernelNotPSDError, match="shift=True") as err:
        from_distances(D, [0.5])
    assert err.value.kernel == 0
    K = from_distances(D, [0.5], shift=True)
    assert K.shifts_[0] > 0
    assert np.linalg.eigvalsh(K.stack_[0])[0] >= 0
    # The cross blocks are not shifted.
    assert np.allclose(K.transform(D)[0] + K.shifts_[0] * np.eye(4), K.stack_[0])
    with pytest.raises(KernelNotPSDError):
        from_distances(D, [0.5], shift=True, max_shift=1e-6)


def test_from_distances_errors() -> None:
    D = cdist(np.arange(5.0)[:, None], np.arange(5.0)[:, None])
    cases: list[tuple[Any, type[Exception], str]] = [
        (-D, InvalidInputError, "negative distance"),
        (D + np.eye(5), InvalidInputError, r"non-zero diagonal entry D\[0, 0\]"),
        (np.triu(D), InvalidInputError, "not symmetric"),
        (np.where(D == 2.0, np.nan, D), NonFiniteError, "non-finite"),
        (np.where(D == 2.0, np.inf, D), NonFiniteError, "non-finite"),
        (D[:, :4], InvalidInputError, "square"),
        (np.zeros((3, 3)), InvalidInputError, "all zeros"),
        ([D, D[:4, :4]], InvalidInputError, "different sizes"),
        ([], InvalidInputError, "at least one"),
    ]
    for bad, cls, match in cases:
        with pytest.raises(cls, match=match):
            from_distances(bad, [1.0])
    for widths in ([], [0.0], [-1.0], [float("nan")], "a"):
        with pytest.raises(ValueError, match="widths"):
            from_distances(D, widths)  # type: ignore[arg-type]
    K = from_distances(D, [1.0])
    with pytest.raises(InvalidInputError, match="columns"):
        K.transform(D[:, :3])
    with pytest.raises(InvalidInputError, match="views"):
        K.transform([D, D])
    with pytest.raises(InvalidInputError, match="negative"):
        K.transform(-D[:2])
    with pytest.raises(NonFiniteError):
        K.transform(np.full((1, 5), np.nan))
