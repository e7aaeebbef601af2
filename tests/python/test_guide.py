"""docs/guide.md: its Python blocks run as written, in order, in one namespace, and leave
what the prose around them says; the guide links only to files that exist."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"


def python_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks opened by exactly ```` ```python ````."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


@cache
def run_guide() -> tuple[dict[str, Any], str]:
    """Execute every Python block of the guide (once) and return the namespace and the
    printed output. A fit that does not converge fails, except where a block catches the
    warning itself."""
    blocks = python_blocks(GUIDE.read_text(encoding="utf-8"))
    ns: dict[str, Any] = {"__name__": "guide"}
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("error", ConvergenceWarning)
        for k, block in enumerate(blocks):
            try:
                exec(compile(block, f"docs/guide.md block {k}", "exec"), ns)
            except Exception as err:
                raise AssertionError(f"docs/guide.md block {k} failed:\n{block}") from err
    return ns, out.getvalue()


def test_guide_has_its_blocks() -> None:
    assert len(python_blocks(GUIDE.read_text(encoding="utf-8"))) >= 15


def test_guide_blocks_run_and_say_what_the_prose_says() -> None:
    ns, _ = run_guide()
    mk = ns["mk"]
    clf, l1, lp1 = ns["clf"], ns["l1"], ns["lp1"]
    M = len(ns["specs"])
    # §2: unit 2-norm weights; l1 at C is lp, p=1 at C·Σ‖f_m‖.
    np.testing.assert_allclose(np.linalg.norm(clf.kernel_weights_), 1.0, rtol=1e-9)
    np.testing.assert_allclose(l1.kernel_weights_.sum(), 1.0, rtol=1e-9)
    assert np.abs(l1.kernel_weights_ - lp1.kernel_weights_).max() < 1e-3
    assert np.count_nonzero(l1.kernel_weights_) < M  # sparse
    # §3: alignment shapes; group weights on the simplex, both groups used.
    assert ns["A"].shape == (M, M) and ns["a"].shape == (M,)
    np.testing.assert_allclose(np.diag(ns["A"]), 1.0)
    grp = ns["grp"]
    assert ns["groups"] == [0, 0, 0, 1, 1, 1]
    assert np.all(grp.group_weights_ > 0) and abs(grp.group_weights_.sum() - 1) < 1e-9
    # §5: bank sizes, and the variances the prose quotes.
    assert len(mk.default_kernels(30)) == 5 and len(mk.kernels.simplemkl_bank(30)) == 837
    assert ns["G_test"].shape == (M, 269, 300)
    # §6: precomputed = specs; float32 halves the bytes and keeps the objective.
    assert ns["pre"].score(ns["G_test"], ns["y_test"]) == clf.score(ns["X_test"], ns["y_test"])
    assert ns["G32"].dtype == np.float32 and ns["G32"].nbytes * 2 == ns["G_train"].nbytes
    assert abs(ns["pre32"].primal_objective_ / ns["pre"].primal_objective_ - 1) < 1e-6
    assert round(ns["big_bank"].nbytes(10_000) / 2**30) == 312
    # §6: the float32 kernels are indefinite (−5e-7 to −9e-7); clip shifts each by −λ_min.
    lam = np.array([np.linalg.eigvalsh(K.astype(np.float64))[0] for K in ns["G32"]])
    shifts = ns["clip32"].psd_shifts_
    assert np.all((-9.5e-7 < lam) & (lam < -5e-7))
    assert np.all(-lam <= shifts) and np.all(shifts <= -2 * lam)
    # §7: feature-space weights per kernel; both solvers certified.
    assert [w.shape for w in ns["fast"].coef_] == [(50,), (50,), (30,)]
    for est in (ns["low"], ns["fast"]):
        assert 0.0 <= est.duality_gap_ <= est.tol
    # §8: the leading axis of the multiclass attributes.
    ovr, ovo = ns["ovr"], ns["ovo"]
    assert ovr.dual_coef_.shape == (3, 5, 178) and ovr.kernel_weights_.shape == (3, 5)
    assert ovr.duality_gap_.shape == (3,) and len(ovr.history_) == 3
    assert ovo.pairs_.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert ovo.decision_function(ns["Xw"][:2]).shape == (2, 3)
    # §9: the certificate and the warning of a short fit.
    assert clf.primal_objective_ >= clf.dual_objective_ and clf.duality_gap_ <= clf.tol
    assert not ns["short"].converged_
    assert any(issubclass(w.category, ConvergenceWarning) for w in ns["caught"])
    # §10: a complete certified path; the CV refit is an l1 fit at C_.
    path, reg = ns["path"], ns["reg"]
    assert path.end == "complete" and np.all(np.diff(path.Cs) > 0)
    assert reg.C_ in reg.Cs_ and reg.scores_.shape == (3, 8)
    assert reg.estimator_.penalty == "l1" and reg.score(ns["Xd"][300:], ns["yd"][300:]) > 0.3
    # §11: the concurrent fits.
    assert [f.C for f in ns["fits"]] == [0.1, 10.0]


def test_guide_prints_what_its_comments_say() -> None:
    out = run_guide()[1]
    assert "5 837" in out
    assert "float32 0.5" in out
    assert "8.8e-07 True" in out
    assert "(3, 5, 178) (3, 5) (3,)" in out
    assert "[[0, 1], [0, 2], [1, 2]] (2, 3)" in out
    assert "True True" in out
    assert "('primal', 'dual', 'gap', 'active', 'seconds')" in out
    assert "False ConvergenceWarning" in out
    assert "C True" in out
    assert "1 (1, 0)" in out
    # §5: mean_diag leaves a ladder of feature-space variances; multiplicative makes them 1.
    lines = {line.split()[0]: line for line in out.splitlines() if line}
    assert "mean_diag [1. 1. 1. 1. 1.]" in out and "0.08" in lines["mean_diag"]
    assert "multiplicative" in lines and lines["multiplicative"].endswith("[1. 1. 1. 1. 1.]")


def test_guide_links_and_pictures_exist() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text
    targets = re.findall(r"\]\(([^)#\s]+)\)", text)
    assert "kernel_selection.png" in targets and "mathematics.md" in targets
    for target in targets:
        assert (GUIDE.parent / target).is_file(), target
    for path in re.findall(r"`((?:examples|tests/python|\.ci|\.github)/[\w./-]+)`", text):
        assert (ROOT / path).exists(), path


def test_readme_links_the_guide() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/guide.md)" in readme
