"""A pandas Series is one column: of sequences (strings) for the sequence kernels, of numbers
for the others; every estimator, ``mkl_path`` and ``gram`` read it as the one-column
DataFrame it is, with the same results as the list or the 2-D array of that column."""

from __future__ import annotations

import numpy as np
import pytest

import multikernel as mk
from multikernel.kernels import Gaussian, Linear, Spectrum, WeightedDegree

pd = pytest.importorskip("pandas")


def _table(n: int = 48) -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(5)
    seqs = ["".join(rng.choice(list("ACGT"), size=20)) for _ in range(n)]
    y = np.array([int("GC" in s[:8]) for s in seqs])
    return pd.DataFrame({"seq": seqs, "x": rng.normal(size=n) + y}), y


@pytest.mark.parametrize("named", [False, True])
def test_a_series_of_strings_is_a_sequence_column(named: bool) -> None:
    df, y = _table()
    cols = ["seq"] if named else None
    specs = [Spectrum(2, features=cols), WeightedDegree(degree=3, features=cols)]
    a = mk.MKLClassifier(kernels=specs, C=3.0).fit(df["seq"], y)
    b = mk.MKLClassifier(kernels=specs, C=3.0).fit(df[["seq"]], y)
    np.testing.assert_array_equal(a.decision_function(df["seq"]), b.decision_function(df[["seq"]]))
    assert list(a.feature_names_in_) == ["seq"] and a.n_features_in_ == 1
    if not named:  # a list of the same strings is the same column (without its name)
        c = mk.MKLClassifier(kernels=specs, C=3.0).fit(list(df["seq"]), y)
        np.testing.assert_array_equal(
            a.decision_function(df["seq"]), c.decision_function(list(df["seq"]))
        )
    np.testing.assert_array_equal(
        mk.kernels.gram(df["seq"], specs), mk.kernels.gram(df[["seq"]], specs)
    )


def test_a_series_of_numbers_is_one_numeric_column() -> None:
    df, y = _table()
    specs = [Gaussian(sigma=1.0), Linear()]
    a = mk.MKLRegressor(kernels=specs).fit(df["x"], y)
    b = mk.MKLRegressor(kernels=specs).fit(df[["x"]].to_numpy(), y)
    np.testing.assert_allclose(a.predict(df["x"]), b.predict(df[["x"]].to_numpy()), rtol=1e-12)
    assert list(a.feature_names_in_) == ["x"]


def test_the_cv_estimators_and_the_path_take_a_series() -> None:
    df, y = _table()
    specs = [Spectrum(2), Spectrum(3)]
    a = mk.MKLClassifierCV(kernels=specs, loss="hinge", Cs=[1.0, 10.0], cv=3).fit(df["seq"], y)
    b = mk.MKLClassifierCV(kernels=specs, loss="hinge", Cs=[1.0, 10.0], cv=3).fit(df[["seq"]], y)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    t = np.where(y == 1, 1.0, -1.0)
    pa = mk.mkl_path(df["x"], t, kernels=[Gaussian(sigma=1.0)], loss="logistic")
    pb = mk.mkl_path(df[["x"]], t, kernels=[Gaussian(sigma=1.0)], loss="logistic")
    assert pa.C0 == pb.C0


def test_verbose_hints_spherical_for_sequences_of_different_lengths(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rng = np.random.default_rng(6)
    varying = ["".join(rng.choice(list("ACGT"), size=int(k))) for k in rng.integers(10, 30, 30)]
    equal = [s.ljust(30, "A") for s in varying]
    y = np.arange(30) % 2
    hint = "normalize='spherical' removes the lengths"
    for seqs, normalize, shown in [
        (varying, "mean_diag", True),
        (varying, "spherical", False),
        (equal, "mean_diag", False),
    ]:
        caplog.clear()
        with caplog.at_level("INFO", logger="multikernel"):
            mk.MKLClassifier(kernels=[Spectrum(2)], normalize=normalize, verbose=1).fit(seqs, y)
        assert (hint in caplog.text) == shown, (normalize, shown)
