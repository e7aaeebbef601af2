"""What ``verbose`` shows: iteration lines whose primal, dual and gap agree (no ``primal
inf``), a summary line per fit equal to the fitted attributes, path points with their C, and
progress bars at ``verbose=2`` that leave the fit unchanged (with tqdm, a stand-in for it, and
without it)."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.exceptions import ConvergenceWarning

import multikernel as mk
from multikernel import _progress
from multikernel._typing import MultiClass, Penalty
from multikernel.kernels import FeatureBank, Gaussian, KernelBank, Linear

_NUM = r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)"
#: A certificate as the records print it.
_CERT = re.compile(rf"primal ({_NUM}), dual ({_NUM}), gap ({_NUM})")
_SUMMARY = re.compile(
    rf": (converged|did not converge \((.+?)\)) in (\d+) iterations(?: \([^)]*\))?"
    rf"(?:, [\d.]+ s)?: "
    rf"primal ({_NUM}), dual ({_NUM}), gap ({_NUM}) ([≤>]) tol ({_NUM}), (\d+) of (\d+) "
    "kernels active"
)


def _cancer(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X[:n], y[:n]


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "multikernel"]


def _fit_logged(caplog: pytest.LogCaptureFixture, est: Any, *args: Any) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="multikernel"):
        est.fit(*args)
    return _messages(caplog)


def _assert_certificates_agree(lines: list[str]) -> int:
    """Every printed certificate's gap is the relative gap of the primal and dual printed
    beside it (to the printed digits); returns how many were checked."""
    checked = 0
    for line in lines:
        assert "primal inf" not in line, line
        for p, d, g in _CERT.findall(line):
            P, D, G = float(p), float(d), float(g)
            own = _progress.relative_gap(P, D)
            if np.isinf(G):
                assert own == G, line
            else:
                digits = len(p.split("e")[0].replace("-", "").replace(".", ""))
                slack = 2.0 * 10.0 ** (1 - digits) * (1 + abs(D) / max(abs(P), 1e-12))
                assert abs(own - G) <= slack + 1e-3 * abs(G), (line, own)
            checked += 1
    return checked


def _assert_summary(line: str, est: Any, k: int | None = None) -> None:
    """The summary line's numbers are the fitted attributes (of problem ``k``)."""
    m = _SUMMARY.search(line)
    assert m is not None, line

    def attr(name: str) -> Any:
        value = getattr(est, name)
        return value if k is None else np.asarray(value)[k]

    converged = m.group(1) == "converged"
    assert converged == bool(attr("converged_"))
    assert int(m.group(3)) == int(attr("n_iter_"))
    assert float(m.group(4)) == pytest.approx(attr("primal_objective_"), rel=1e-6)
    assert float(m.group(5)) == pytest.approx(attr("dual_objective_"), rel=1e-6)
    assert float(m.group(6)) == pytest.approx(attr("duality_gap_"), rel=1e-3)
    assert (m.group(7) == "≤") == (attr("duality_gap_") <= est.tol)
    weights = np.asarray(est.kernel_weights_)
    w = weights if k is None else weights[k]
    assert int(m.group(9)) == np.count_nonzero(w > 0)
    assert int(m.group(10)) == est.n_kernels_
    # The solvers that ran and their iterations, which sum to n_iter_ (issue 70).
    ran = re.search(r" iterations \(([^)]*)\)", line)
    assert ran is not None, line
    solvers, counts = attr("solvers_"), attr("solver_iterations_")
    assert ran.group(1) == " then ".join(f"{s} {c}" for s, c in zip(solvers, counts, strict=True))
    assert sum(counts) == int(attr("n_iter_"))


# --- lines that agree, and the summary line ----------------------------------------------


@pytest.mark.parametrize("penalty", ["lp", "l1", "elasticnet"])
def test_iteration_lines_agree_and_summary_equals_attributes(
    caplog: pytest.LogCaptureFixture, penalty: Penalty
) -> None:
    X, y = _cancer()
    clf = mk.MKLClassifier(penalty=penalty, C=10.0, verbose=1)
    lines = _fit_logged(caplog, clf, X, y)
    iterations = [s for s in lines if " iteration " in s]
    assert len(iterations) == clf.n_iter_ == len(clf.history_)
    assert _assert_certificates_agree(lines) >= len(iterations)
    _assert_summary(lines[-1], clf)
    assert lines[-1].startswith("MKLClassifier: converged in")


def test_a_working_set_step_says_so_in_plain_words(caplog: pytest.LogCaptureFixture) -> None:
    # The ℓp working set records restricted iterations with an infinite primal: the old
    # lines printed "primal inf" beside a gap that came from earlier values.
    X, y = _cancer(300)
    clf = mk.MKLClassifier(penalty="lp", C=10.0, verbose=1)
    lines = _fit_logged(caplog, clf, X, y)
    assert np.isinf(clf.history_["primal"]).any()  # the case is exercised
    restricted = [s for s in lines if "working-set step: dual" in s]
    assert len(restricted) == int(np.isinf(clf.history_["primal"]).sum())
    # No primal is printed for such a step (it has none of the whole problem), and no jargon.
    assert not any("primal inf" in s or "whole-problem" in s for s in lines)
    _assert_certificates_agree(lines)


def test_a_non_best_iterate_is_told_apart_from_the_certificate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # l1 (wrapper), logistic: the engine's gap is that of the best dual so far, not the
    # iterate's. (The hinge-type losses certify every iterate by the best dual point on the
    # segment to the best one so far, so their iterates' duals are the best ones.)
    X, y = _cancer(300)
    clf = mk.MKLClassifier(penalty="l1", loss="logistic", C=10.0, verbose=1)
    lines = _fit_logged(caplog, clf, X, y)
    h = clf.history_
    own = (h["primal"] - h["dual"]) / np.maximum(np.abs(h["primal"]), 1e-12)
    differ = np.flatnonzero(np.abs(own - h["gap"]) > 1e-6)
    # The case is exercised: some iterate's own gap differs from the engine's best-so-far gap.
    assert differ.size > 0, "every iterate was the certificate: the case is not exercised"
    iterations = [s for s in lines if " iteration " in s]
    for i in differ:
        assert "this iterate: primal" in iterations[i] and "best so far:" in iterations[i]
    _assert_certificates_agree(lines)


def test_regressor_one_class_and_svrg_summaries(caplog: pytest.LogCaptureFixture) -> None:
    X, t = load_diabetes(return_X_y=True)
    X, t = X[:120], (t[:120] - t[:120].mean()) / t[:120].std()
    reg = mk.MKLRegressor(penalty="l1", C=10.0, verbose=1)
    lines = _fit_logged(caplog, reg, X, t)
    _assert_summary(lines[-1], reg)
    _assert_certificates_agree(lines)
    det = mk.MKLOneClass(nu=0.2, verbose=1)
    lines = _fit_logged(caplog, det, X)
    assert lines[-1].startswith("MKLOneClass: converged in")
    _assert_summary(lines[-1], det)
    bank = FeatureBank([Gaussian(sigma=4.0), Linear()], method="rff", random_state=0)
    sv = mk.MKLRegressor(kernels=bank, solver="svrg", C=0.5, tol=1e-4, max_iter=500, verbose=1)
    lines = _fit_logged(caplog, sv, X, t)
    _assert_summary(lines[-1], sv)
    _assert_certificates_agree(lines)


def test_a_fit_that_does_not_converge_says_so(caplog: pytest.LogCaptureFixture) -> None:
    X, y = _cancer()
    # The wrapper named: under "auto" SpicyMKL continues a wrapper fit stopped above tol, and
    # its warm start's certificate counts as one more iteration.
    clf = mk.MKLClassifier(penalty="l1", solver="wrapper", C=10.0, tol=1e-10, max_iter=2, verbose=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lines = _fit_logged(caplog, clf, X, y)
    assert not clf.converged_
    assert "did not converge (max_iter reached) in 2 iterations" in lines[-1]
    assert "> tol 1e-10" in lines[-1]
    _assert_summary(lines[-1], clf)


@pytest.mark.parametrize("scheme", ["ovr", "ovo"])
def test_multiclass_logs_one_summary_per_problem_then_the_fit(
    caplog: pytest.LogCaptureFixture, scheme: MultiClass
) -> None:
    X, y = load_iris(return_X_y=True)
    clf = mk.MKLClassifier(C=10.0, multi_class=scheme, verbose=1)
    lines = _fit_logged(caplog, clf, X, y)
    summaries = [s for s in lines if " iteration " not in s]
    problems = np.asarray(clf.n_iter_).shape[0]
    assert len(summaries) == problems + 1
    for k, line in enumerate(summaries[:-1]):
        _assert_summary(line, clf, k)
        assert "np." not in line  # class labels as the user wrote them
    assert summaries[-1].startswith(f"MKLClassifier: {problems} binary problems, ")
    assert f"{int(np.sum(clf.converged_))} converged" in summaries[-1]
    _assert_certificates_agree(lines)


# --- paths and CV ---------------------------------------------------------------------------


def _path_problem() -> tuple[np.ndarray, np.ndarray, list[Any]]:
    X, y = load_diabetes(return_X_y=True)
    specs = [Gaussian(sigma=s, features=[j]) for j in range(4) for s in (0.05, 0.2)]
    return X[:100], (y[:100] - y[:100].mean()) / y.std(), specs  # the path has no intercept


def test_path_lines_carry_their_C(caplog: pytest.LogCaptureFixture) -> None:
    X, y, specs = _path_problem()
    with caplog.at_level(logging.INFO, logger="multikernel"):
        path = mk.mkl_path(X, y, kernels=specs, verbose=1)
    lines = _messages(caplog)
    points = [s for s in lines if s.startswith("mkl_path point")]
    assert len(points) == path.Cs.shape[0]
    for i, line in enumerate(points):
        m = re.search(rf"point +(\d+)/(\d+): C ({_NUM}), +(\d+) of (\d+) kernels active", line)
        assert m is not None, line
        assert int(m.group(1)) == i + 1 and int(m.group(2)) == path.Cs.shape[0]
        assert float(m.group(3)) == pytest.approx(path.Cs[i], rel=1e-6)
        assert int(m.group(4)) == np.count_nonzero(path.kernel_weights[i] > 0)
        (p, d, g) = _CERT.findall(line)[0]
        assert float(g) == pytest.approx(path.duality_gaps[i], rel=1e-3)
    assert _assert_certificates_agree(lines) == len(points)
    assert lines[-1].startswith(f"mkl_path: complete, {path.Cs.shape[0]} points from C ")
    assert "every point within tol 0.001" in lines[-1]


def test_cv_summary_names_the_chosen_C(caplog: pytest.LogCaptureFixture) -> None:
    X, y, specs = _path_problem()
    cv = mk.MKLRegressorCV(kernels=specs, Cs=5, cv=3, verbose=1)
    lines = _fit_logged(caplog, cv, X, y)
    m = re.match(rf"MKLRegressorCV: C_ ({_NUM}), candidate (\d+) of 5", lines[-1])
    assert m is not None, lines[-1]
    assert float(m.group(1)) == pytest.approx(cv.C_, rel=1e-6)
    assert cv.Cs_[int(m.group(2)) - 1] == cv.C_
    _assert_summary(lines[-2], cv.estimator_)  # the refit's own summary comes first
    _assert_certificates_agree(lines)


# --- bars -----------------------------------------------------------------------------------


class _FakeBar:
    """A stand-in for tqdm's bar: records what it is told and draws to stderr."""

    made: list[_FakeBar] = []

    def __init__(self, *, total: int | None, desc: str, unit: str, **kwargs: Any) -> None:
        self.total, self.desc, self.unit, self.n, self.closed = total, desc, unit, 0, False
        _FakeBar.made.append(self)

    def update(self, n: int = 1) -> None:
        self.n += n
        sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} {self.unit}")

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_tqdm(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[_FakeBar]]:
    monkeypatch.setattr(_progress, "_terminal", lambda: True)  # pytest captures stderr
    module = types.ModuleType("tqdm")
    module.tqdm = _FakeBar  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm", module)
    _FakeBar.made = []
    yield _FakeBar.made


def _same_fit(a: Any, b: Any) -> None:
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(a.kernel_weights_, b.kernel_weights_)
    np.testing.assert_array_equal(a.duality_gap_, b.duality_gap_)


def test_bars_follow_problems_iterations_and_probability_folds(
    fake_tqdm: list[_FakeBar], caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    X, y = load_iris(return_X_y=True)
    quiet = mk.MKLClassifier(C=10.0, probability=True).fit(X, y)
    lines = _fit_logged(caplog, loud := mk.MKLClassifier(C=10.0, probability=True, verbose=2), X, y)
    _same_fit(quiet, loud)
    np.testing.assert_array_equal(quiet.probA_, loud.probA_)
    err = capsys.readouterr().err
    assert "MKLClassifier: binary problems: 3/3 problem" in err
    assert "probability folds: 5/5 fold" in err
    problems = [b for b in fake_tqdm if b.unit == "problem"]
    assert len(problems) == 1 and problems[0].n == 3
    iterations = [b for b in fake_tqdm if b.unit == "it"]
    # One bar per binary problem and per probability fold fit, as many ticks as iterations.
    assert sum(b.n for b in iterations[:3]) == int(np.sum(loud.n_iter_))
    assert all(b.closed for b in fake_tqdm)
    # Bars replace the iteration lines; the summary lines stay.
    assert not [s for s in lines if " iteration " in s]
    assert len(lines) == 4


def test_bars_follow_svrg_epochs_path_points_and_cv_folds(
    fake_tqdm: list[_FakeBar], capsys: pytest.CaptureFixture[str]
) -> None:
    X, t = load_diabetes(return_X_y=True)
    X, t = X[:120], (t[:120] - t[:120].mean()) / t[:120].std()
    bank = FeatureBank([Gaussian(sigma=4.0), Linear()], method="rff", random_state=0)
    common: dict[str, Any] = {"kernels": bank, "solver": "svrg", "C": 0.5, "max_iter": 300}
    quiet = mk.MKLRegressor(**common).fit(X, t)
    loud = mk.MKLRegressor(**common, verbose=2).fit(X, t)
    _same_fit(quiet, loud)
    epochs = [b for b in fake_tqdm if b.unit == "epoch"]
    assert len(epochs) == 1 and epochs[0].n == loud.n_iter_ and epochs[0].total == 300
    Xp, yp, specs = _path_problem()
    path = mk.mkl_path(Xp, yp, kernels=specs, verbose=2)
    points = [b for b in fake_tqdm if b.unit == "point"]
    assert len(points) == 1 and points[0].n == path.Cs.shape[0]
    quiet_cv = mk.MKLRegressorCV(kernels=specs, Cs=4, cv=3).fit(Xp, yp)
    cv = mk.MKLRegressorCV(kernels=specs, Cs=4, cv=3, verbose=2).fit(Xp, yp)
    assert cv.C_ == quiet_cv.C_
    np.testing.assert_array_equal(cv.scores_, quiet_cv.scores_)
    assert [b.n for b in fake_tqdm if b.unit == "fold"] == [3]
    assert [b.n for b in fake_tqdm if b.unit == "score"] == [12]
    assert "MKLRegressorCV: fold paths: 3/3 fold" in capsys.readouterr().err


def test_a_bar_counts_the_kernels_of_a_gram_stack(fake_tqdm: list[_FakeBar]) -> None:
    """The engine reports the kernels it has computed (groups of kernels on the same
    features and single ones); the bar ends at M, and the stack is the quiet one's."""
    X, y = _cancer(300)
    specs = [Gaussian(sigma=s) for s in (1.0, 2.0, 4.0)]
    specs += [Gaussian(sigma=2.0, features=[0, 1]), Linear(features=[2, 3, 4])]
    quiet = KernelBank(specs).fit_transform(X)
    loud = KernelBank(specs, verbose=2).fit_transform(X)
    np.testing.assert_array_equal(quiet, loud)
    bars = [b for b in fake_tqdm if b.unit == "kernel"]
    assert [(b.total, b.n, b.closed) for b in bars] == [(5, 5, True)]
    mk.MKLClassifier(kernels=specs, verbose=2).fit(X, y)
    assert [b.n for b in fake_tqdm if b.unit == "kernel"] == [5, 5]
    KernelBank(specs, verbose=1).fit_transform(X)
    assert len([b for b in fake_tqdm if b.unit == "kernel"]) == 2


def test_a_real_tqdm_bar_is_drawn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tqdm")
    monkeypatch.setattr(_progress, "_terminal", lambda: True)
    X, y = load_iris(return_X_y=True)
    quiet = mk.MKLClassifier(C=10.0).fit(X, y)
    loud = mk.MKLClassifier(C=10.0, verbose=2).fit(X, y)
    _same_fit(quiet, loud)
    err = capsys.readouterr().err
    assert "MKLClassifier: binary problems" in err and "3/3" in err


def test_a_log_written_to_a_file_gets_lines_not_bars(tmp_path: Path) -> None:
    """verbose=2 with stderr redirected to a file (a batch job's log): no bar redraws in it,
    the iteration lines of verbose=1 instead; in a terminal the same code draws bars."""
    pytest.importorskip("tqdm")
    script = (
        "import logging, numpy as np, multikernel as mk\n"
        "from sklearn.datasets import load_iris\n"
        "X, y = load_iris(return_X_y=True)\n"
        "mk.MKLClassifier(C=10.0, verbose=2).fit(X, y)\n"
    )
    log = tmp_path / "fit.log"
    with log.open("w") as fh:
        subprocess.run([sys.executable, "-c", script], stderr=fh, check=True)
    text = log.read_text()
    assert "\r" not in text and "it/s" not in text  # no bar was drawn
    assert " iteration " in text and "MKLClassifier: 3 binary problems" in text


def test_without_tqdm_verbose_2_logs_lines(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `import tqdm` raises ImportError
    assert not _progress.bars_on(2)
    X, y = load_iris(return_X_y=True)
    quiet = mk.MKLClassifier(C=10.0, probability=True).fit(X, y)
    loud = mk.MKLClassifier(C=10.0, probability=True, verbose=2)
    lines = _fit_logged(caplog, loud, X, y)
    _same_fit(quiet, loud)
    assert sum(" iteration " in s for s in lines) >= int(np.sum(loud.n_iter_))
    assert lines[-1].startswith("MKLClassifier: 3 binary problems")
    Xp, yp, specs = _path_problem()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="multikernel"):
        path = mk.mkl_path(Xp, yp, kernels=specs, verbose=2)
    assert sum(s.startswith("mkl_path point") for s in _messages(caplog)) == path.Cs.shape[0]


def test_an_uncertified_certificate_says_why() -> None:
    text = _progress.certificate(2.0, -np.inf, np.inf)
    assert "dual -inf, gap inf" in text and "not PSD" in text
    # A small gap gets the digits of P and D that give it.
    p, d = 1.0, 1.0 - 3e-9
    m = _CERT.search(_progress.certificate(p, d, _progress.relative_gap(p, d)))
    assert m is not None
    assert _progress.relative_gap(float(m.group(1)), float(m.group(2))) == pytest.approx(
        3e-9, rel=1e-3
    )
