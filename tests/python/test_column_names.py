"""Kernels that read a pandas DataFrame's columns by name: every fit with names gives the bits
of the same fit with the integer indices they stand for, the names are resolved at fit and
kept (``kernel_bank_`` reads indices, ``feature_names_in_`` the names), new points are checked
against them, and a name that cannot be resolved is a clear ``InvalidParameterError``."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer

import multikernel as mk
from multikernel.exceptions import InvalidInputError, InvalidParameterError
from multikernel.kernels import FeatureBank, Gaussian, KernelBank, Linear, Polynomial

pd = pytest.importorskip("pandas")

SIZE = ["mean radius", "mean perimeter", "mean area"]
TEXTURE = ["mean texture", "worst texture"]


@pytest.fixture(scope="module")
def frame() -> tuple[Any, Any]:
    data = load_breast_cancer(as_frame=True)
    X = (data.data - data.data.mean()) / data.data.std()
    return X.iloc[:160], data.target.iloc[:160]


def _idx(X: Any, names: list[str]) -> list[int]:
    return [list(X.columns).index(c) for c in names]


def _specs(X: Any, by_name: bool) -> list[mk.kernels.Kernel]:
    size = SIZE if by_name else _idx(X, SIZE)
    texture = TEXTURE if by_name else _idx(X, TEXTURE)
    # One kernel mixes a name and an index: both forms may be combined.
    mixed = ["worst area", 0] if by_name else [*_idx(X, ["worst area"]), 0]
    return [
        Gaussian(sigma=2.0, features=size),
        Gaussian(sigma=1.0, features=texture),
        Polynomial(degree=2, features=mixed),
        Linear(features=texture),
    ]


def test_a_classifier_reads_the_named_columns(frame: tuple[Any, Any]) -> None:
    X, y = frame
    named = mk.MKLClassifier(kernels=_specs(X, True), C=3.0).fit(X, y)
    by_index = mk.MKLClassifier(kernels=_specs(X, False), C=3.0).fit(X, y)
    np.testing.assert_array_equal(named.kernel_weights_, by_index.kernel_weights_)
    np.testing.assert_array_equal(named.dual_coef_, by_index.dual_coef_)
    X_new = X.iloc[100:]
    np.testing.assert_array_equal(named.decision_function(X_new), by_index.decision_function(X_new))
    # Resolved and stored: the fitted bank reads indices, the parameter keeps the names.
    assert named.kernel_bank_.specs == _specs(X, False)
    assert named.kernels == _specs(X, True)
    assert list(named.feature_names_in_) == list(X.columns)
    assert clone(named).get_params()["kernels"] == _specs(X, True)
    again = pickle.loads(pickle.dumps(named))
    np.testing.assert_array_equal(again.predict(X_new), named.predict(X_new))


def test_new_points_with_other_columns_are_refused(frame: tuple[Any, Any]) -> None:
    X, y = frame
    clf = mk.MKLClassifier(kernels=_specs(X, True)).fit(X, y)
    with pytest.raises(InvalidInputError, match="feature names"):
        clf.predict(X[X.columns[::-1]])


def test_view_bank_by_name_gives_the_group_fit_by_index(frame: tuple[Any, Any]) -> None:
    X, y = frame
    views = {"size": SIZE, "texture": TEXTURE}
    specs, groups = mk.kernels.view_bank(views, widths=[1.0, 3.0], linear=True)
    ispecs, igroups = mk.kernels.view_bank(
        {k: _idx(X, v) for k, v in views.items()}, widths=[1.0, 3.0], linear=True
    )
    assert groups == igroups
    a = mk.MKLClassifier(kernels=specs, penalty="group", groups=groups).fit(X, y)
    b = mk.MKLClassifier(kernels=ispecs, penalty="group", groups=igroups).fit(X, y)
    np.testing.assert_array_equal(a.kernel_weights_, b.kernel_weights_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_the_path_and_the_cv_estimators_read_names(frame: tuple[Any, Any]) -> None:
    X, y = frame
    t = X["mean radius"] - 0.5 * X["mean texture"]
    pa = mk.mkl_path(X, t, kernels=_specs(X, True))
    pb = mk.mkl_path(X, t, kernels=_specs(X, False))
    np.testing.assert_array_equal(pa.Cs, pb.Cs)
    np.testing.assert_array_equal(pa.kernel_weights, pb.kernel_weights)
    C = 10 * pa.C0
    np.testing.assert_array_equal(pa.predict(X.iloc[:5], C=C), pb.predict(X.iloc[:5], C=C))

    ca = mk.MKLClassifierCV(kernels=_specs(X, True), Cs=4, cv=3).fit(X, y)
    cb = mk.MKLClassifierCV(kernels=_specs(X, False), Cs=4, cv=3).fit(X, y)
    np.testing.assert_array_equal(ca.scores_, cb.scores_)
    assert ca.C_ == cb.C_
    np.testing.assert_array_equal(ca.kernel_weights_, cb.kernel_weights_)
    np.testing.assert_array_equal(ca.decision_function(X), cb.decision_function(X))
    assert list(ca.feature_names_in_) == list(X.columns)


def test_one_class_reads_names(frame: tuple[Any, Any]) -> None:
    X, _ = frame
    a = mk.MKLOneClass(kernels=_specs(X, True)[:2]).fit(X)
    b = mk.MKLOneClass(kernels=_specs(X, False)[:2]).fit(X)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_banks_and_gram_resolve_names_at_each_fit(frame: tuple[Any, Any]) -> None:
    X, y = frame
    named, by_index = _specs(X, True), _specs(X, False)
    np.testing.assert_array_equal(
        mk.kernels.gram(X, named, normalize="trace"),
        mk.kernels.gram(X.to_numpy(), by_index, normalize="trace"),
    )
    bank = KernelBank(named, normalize="spherical").fit(X)
    ref = KernelBank(by_index, normalize="spherical").fit(X.to_numpy())
    np.testing.assert_array_equal(bank.transform(X.iloc[:7]), ref.transform(X.iloc[:7]))
    # Arrays are read by position; a frame must have the training columns in their order.
    np.testing.assert_array_equal(bank.transform(X.to_numpy()[:7]), ref.transform(X.iloc[:7]))
    with pytest.raises(InvalidInputError, match="column 0 is 'worst fractal dimension'"):
        bank.transform(X[X.columns[::-1]])
    # A refit on other columns looks the names up again (index 0 of the mixed kernel stays
    # positional, so it is left out here).
    shuffled = X[X.columns[::-1]]
    names_only = KernelBank([named[0], named[1], named[3]]).fit(X)
    refit = names_only.fit_transform(shuffled)
    ref_refit = KernelBank([by_index[j] for j in (0, 1, 3)]).fit_transform(X)
    np.testing.assert_array_equal(refit, ref_refit)
    assert list(names_only.feature_names_in_) == list(shuffled.columns)

    fb = FeatureBank(named, n_components=12, random_state=0)
    fi = FeatureBank(by_index, n_components=12, random_state=0)
    for F, G in zip(fb.fit_transform(X), fi.fit_transform(X.to_numpy()), strict=True):
        np.testing.assert_array_equal(F, G)
    assert fb.specs == named  # the bank keeps the names; its fit resolves them
    unfitted = FeatureBank(named, n_components=12, random_state=0)
    a = mk.MKLClassifier(kernels=unfitted).fit(X, y)
    b = mk.MKLClassifier(kernels=fi).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    # The parameter stays as given (unfitted, with its names); the fitted copy reads indices.
    assert a.kernels is unfitted and not hasattr(unfitted, "params_")
    assert a.kernel_bank_.specs == by_index


def test_names_that_cannot_be_resolved(frame: tuple[Any, Any]) -> None:
    X, y = frame
    named = _specs(X, True)
    with pytest.raises(InvalidParameterError, match="pass X as a pandas DataFrame") as err:
        mk.MKLClassifier(kernels=named).fit(X.to_numpy(), y)
    assert err.value.parameter == "features" and "'mean radius'" in str(err.value)
    with pytest.raises(InvalidParameterError, match="pass X as a pandas DataFrame"):
        mk.kernels.gram(X.to_numpy(), named)
    with pytest.raises(InvalidParameterError, match=r"\['radius'\], which X does not have"):
        mk.MKLClassifier(kernels=[Gaussian(features=["radius", "mean area"])]).fit(X, y)
    twice = pd.DataFrame(np.ones((4, 2)), columns=["a", "a"])
    with pytest.raises(InvalidParameterError, match="more than once"):
        mk.kernels.gram(twice, [Linear(features=["a"])])
    # A single name is not a sequence of names; floats and bools are neither.
    for bad in ("mean radius", [1.5], [True]):
        with pytest.raises(InvalidParameterError, match="features"):
            Gaussian(features=bad)
    with pytest.raises(InvalidParameterError, match="views"):
        mk.kernels.view_bank({"a": [None]})
