"""docs/guide.md: its Python blocks run as written, in order, in one namespace; every ``print``
prints what the comment after it says; the main figures agree with a second computation
(scikit-learn's SVC, alignments and variances by hand); the guide links only to files that
exist.

The output comments are read as the guide's introduction says: the comment on the line where a
``print(...)`` ends, and the comment-only lines right after it, hold its output (the lines of
every iteration for a ``print`` in a loop). A number matches when the printed one rounds to it at
the digits shown; ``~x`` matches within a factor 3 of x (figures at rounding level, which
depend on the platform's arithmetic); ``...`` matches anything.
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import sys
import tokenize
import warnings
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"

FENCE = re.compile(r"^```python\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
TOKEN = re.compile(rf"\.\.\.|~{NUMBER}|{NUMBER}|\w+|\S")


def python_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks opened by exactly ```` ```python ````."""
    return FENCE.findall(text)


def _block_starts(text: str) -> list[int]:
    """The guide line (1-based) of each block's first line of code."""
    return [text.count("\n", 0, m.start(1)) + 1 for m in FENCE.finditer(text)]


@dataclass
class Print:
    """One ``print`` call of the guide: its guide line, its output comment, what it printed."""

    line: int
    expected: str | None
    printed: list[str]


def _output_comments(block: str) -> dict[int, str]:
    """Comment text by block line (1-based), for every line that has a comment."""
    comments = {}
    for tok in tokenize.generate_tokens(io.StringIO(block).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string[1:].strip()
    return comments


def _prints_of(tree: ast.AST, block: str) -> dict[tuple[int, int], str | None]:
    """Each print call's (first, last) block line, with its output comment (None if absent)."""
    comments = _output_comments(block)
    lines = block.splitlines()
    out: dict[tuple[int, int], str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            end = node.end_lineno or node.lineno
            expected = [comments[end]] if end in comments else []
            # The comment-only lines that follow, past the end of a loop the print is in.
            k = end
            while k < len(lines) and lines[k].strip().startswith("#"):
                expected.append(lines[k].strip()[1:].strip())
                k += 1
            out[(node.lineno, end)] = "\n".join(expected) if expected else None
    return out


def _recorder(
    calls: dict[tuple[int, int], str | None],
    start: int,
    printed: dict[tuple[int, int], list[str]],
) -> Any:
    """A ``print`` that files its output under the call it comes from (by the caller's line)."""

    def record(*args: Any, **kwargs: Any) -> None:
        line = sys._getframe(1).f_lineno - start + 1
        buf = io.StringIO()
        builtins.print(*args, **kwargs, file=buf)
        span = next(s for s in calls if s[0] <= line <= s[1])
        printed[span].append(buf.getvalue().rstrip("\n"))

    return record


@cache
def run_guide() -> tuple[dict[str, Any], tuple[Print, ...]]:
    """Execute every Python block of the guide (once); return the namespace and every print
    call with what it printed. A fit that does not converge fails, except where a
    block catches the warning itself."""
    text = GUIDE.read_text(encoding="utf-8")
    ns: dict[str, Any] = {"__name__": "guide"}
    prints: list[Print] = []
    for block, start in zip(python_blocks(text), _block_starts(text), strict=True):
        tree = ast.parse(block)
        calls = _prints_of(tree, block)
        printed: dict[tuple[int, int], list[str]] = defaultdict(list)
        ns["print"] = _recorder(calls, start, printed)
        ast.increment_lineno(tree, start - 1)  # tracebacks name guide lines
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            try:
                exec(compile(tree, "docs/guide.md", "exec"), ns)
            except Exception as err:
                raise AssertionError(f"docs/guide.md block at line {start} failed") from err
        for span, expected in calls.items():
            prints.append(Print(start + span[1] - 1, expected, printed[span]))
    del ns["print"]
    return ns, tuple(prints)


def _parse(token: str) -> float | None:
    try:
        return float(token.lstrip("~"))
    except ValueError:
        return None


def _same_number(shown: str, value: float) -> bool:
    """Whether ``value`` rounds to ``shown`` at its digits (``~shown``: within a factor 3)."""
    target = _parse(shown)
    assert target is not None
    if shown.startswith("~"):
        return target / 3 <= value <= target * 3 if target > 0 else value == target
    mantissa, _, exponent = shown.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    unit = 10.0 ** (int(exponent or 0) - decimals)
    return abs(value - target) <= 0.5 * unit * (1 + 1e-9) + 1e-15 * abs(target)


def matches(expected: str, printed: str) -> bool:
    """Whether the printed text is what the comment shows (token by token, spaces ignored)."""
    want, got = TOKEN.findall(expected), TOKEN.findall(printed)

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        if j == len(got):
            return False
        value = _parse(got[j])
        if _parse(want[i]) is not None and value is not None:
            return _same_number(want[i], value) and match(i + 1, j + 1)
        return want[i] == got[j] and match(i + 1, j + 1)

    return match(0, 0)


def shown(fragment: str) -> list[float]:
    """The numbers of the output comment of the one print whose guide line contains
    ``fragment`` (what the guide tells the reader, to be checked against a second
    computation)."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    (p,) = [p for p in run_guide()[1] if fragment in lines[p.line - 1]]
    assert p.expected is not None
    return [v for t in TOKEN.findall(p.expected) if (v := _parse(t)) is not None]


def test_guide_has_its_blocks() -> None:
    assert len(python_blocks(GUIDE.read_text(encoding="utf-8"))) >= 15


def test_matching_rules() -> None:
    assert matches("0.985 1.0", "0.9851301115241635 1.0000000000000002")
    assert not matches("0.986 1.0", "0.9851301115241635 1.0000000000000002")
    assert matches("[0.7  0.66 0.27]", "[0.7 0.66 0.27]") and matches("837", "837")
    assert not matches("836", "837") and not matches("True", "False")
    assert matches("~5e-09", "5.431355934448767e-09") and not matches("~9e-07", "5.4e-09")
    assert matches("8.8e-07 True", "8.8e-07 True") and not matches("8.8e-07", "8.6e-07")
    assert matches("complete ... True", "complete 28 0.0145 True")
    assert not matches("(3, 5)", "(3, 5, 178)")


def test_guide_prints_what_its_comments_say() -> None:
    _, prints = run_guide()
    assert len(prints) >= 30
    missing = [p.line for p in prints if p.expected is None]
    assert not missing, f"prints without their output as a comment, guide lines {missing}"
    wrong = [
        f"line {p.line}: the comment says\n{p.expected}\nthe code prints\n" + "\n".join(p.printed)
        for p in prints
        if p.expected is not None and not matches(p.expected, "\n".join(p.printed))
    ]
    assert not wrong, "\n\n".join(wrong)


def test_guide_figures_computed_a_second_way() -> None:
    ns, _ = run_guide()
    X_train, y_train, X_test, y_test = (ns[k] for k in ("X_train", "y_train", "X_test", "y_test"))
    G, G_test = ns["G"], ns["G_test"]  # both mean_diag-normalised stacks of `specs`
    # §3: p = inf is SVC on the summed kernels at the same C: the same test accuracy as the guide
    # prints, and SVC's primal objective within the fit's certified tolerance of ours.
    svc = SVC(kernel="precomputed", C=1.0, tol=1e-8).fit(G.sum(axis=0), y_train)
    accuracy = svc.score(G_test.sum(axis=0), y_test)
    assert _same_number(f"{shown('svm_sum.score')[0]}", accuracy)
    svm_sum = ns["svm_sum"]
    assert svm_sum.score(X_test, y_test) == accuracy
    alpha = np.zeros(len(y_train))
    alpha[svc.support_] = svc.dual_coef_[0]
    f = G.sum(axis=0) @ alpha + svc.intercept_[0]
    ypm = np.where(y_train == svc.classes_[1], 1.0, -1.0)
    p_svc = np.maximum(0.0, 1 - ypm * f).sum() + 0.5 * alpha @ G.sum(axis=0) @ alpha
    assert abs(svm_sum.primal_objective_ - p_svc) <= 2 * svm_sum.tol * p_svc
    # §3: centred alignments by their definition, and the three kernels the guide names.
    H = np.eye(len(y_train)) - 1.0 / len(y_train)
    Kc = np.array([H @ K @ H for K in G])
    yc = H @ (y_train - y_train.mean())
    a = np.array([np.sum(K * np.outer(yc, yc)) / np.linalg.norm(K) / (yc @ yc) for K in Kc])
    np.testing.assert_allclose(ns["a"], a, rtol=1e-9)
    norms = np.linalg.norm(Kc, axis=(1, 2))
    A = np.einsum("aij,bij->ab", Kc, Kc) / np.outer(norms, norms)
    np.testing.assert_allclose(ns["A"], A, rtol=1e-9, atol=1e-12)
    assert shown("np.argsort(-a)")[-3:] == np.argsort(-a)[:3].tolist()
    # §3: γ_j ∝ 1 / (the group's kernel weights), and equal group sums of the norms at the optimum.
    grp, groups = ns["grp"], np.array(ns["groups"])
    inv = 1 / np.array([grp.kernel_weights_[groups == j].sum() for j in (0, 1)])
    np.testing.assert_allclose(grp.group_weights_, inv / inv.sum(), rtol=1e-6)
    sums = [grp.kernel_norms_[groups == j].sum() for j in (0, 1)]
    assert abs(sums[0] - sums[1]) <= 1e-2 * max(sums)
    # §5: the Gaussians' variances in feature space, from scikit-learn's RBF kernel and
    # tr(HKH)/n = mean(diag K) - mean(K): the guide's mean_diag ladder, and multiplicative's
    # diagonal as their inverses.
    sigmas = [s.sigma for s in ns["bank5"][:4]]
    variance = [1 - rbf_kernel(X_train, gamma=1 / (2 * s**2)).mean() for s in sigmas]
    mean_diag = shown('print(f"{norm:14}"')  # the three lines, five diagonals + five variances
    for k, v in enumerate(variance):
        assert _same_number(f"{mean_diag[15 + k]:.2f}", v)
        assert _same_number(f"{mean_diag[20 + k]:.2f}", 1 / v)
    # §5 and §6: the bank sizes and the bytes, by arithmetic.
    assert shown("print(len(mk.default_kernels(30))") == [5, 27 * (30 + 1)]
    assert _same_number(f"{shown('print(round(gib')[0]:.1f}", 837 * 10_000**2 * 4 / 2**30)
    # §6: the float32 kernels are indefinite by rounding (−5e-7 to −9e-7, as the prose says);
    # clip shifts each by about −λ_min (a Cholesky-certified shift, at most twice it).
    lam = np.array([np.linalg.eigvalsh(K.astype(np.float64))[0] for K in ns["G32"]])
    shifts = ns["clip32"].psd_shifts_
    assert np.all((-9.5e-7 < lam) & (lam < -5e-7))
    assert np.all(-lam <= shifts) and np.all(shifts <= -2 * lam)
    # §10: the CV estimator chose the best mean score and refitted l1 at it, as a fresh fit does.
    reg, Xd, yd = ns["reg"], ns["Xd"], ns["yd"]
    assert reg.C_ == reg.Cs_[np.argmax(reg.scores_.mean(axis=0))]
    fresh = ns["mk"].MKLRegressor(kernels=ns["per_feature"], penalty="l1", C=reg.C_)
    fresh.fit(Xd[:300], yd[:300])
    np.testing.assert_allclose(reg.predict(Xd[300:]), fresh.predict(Xd[300:]), atol=1e-9)
    # §10: the warm fit at the last C is a cold fit's optimum, within the two certificates.
    warm = ns["warm"]
    cold = ns["mk"].MKLRegressor(kernels=ns["per_feature"], penalty="l1", C=4.0)
    cold.fit(Xd[:300], yd[:300])
    assert abs(warm.primal_objective_ - cold.primal_objective_) <= 2e-3 * cold.primal_objective_


def test_guide_blocks_leave_what_the_prose_says() -> None:
    ns, _ = run_guide()
    clf, l1, lp1 = ns["clf"], ns["l1"], ns["lp1"]
    M = len(ns["specs"])
    # §2: unit 2-norm weights; l1 at C is lp, p=1 at C·Σ‖f_m‖.
    np.testing.assert_allclose(np.linalg.norm(clf.kernel_weights_), 1.0, rtol=1e-9)
    np.testing.assert_allclose(l1.kernel_weights_.sum(), 1.0, rtol=1e-9)
    assert np.abs(l1.kernel_weights_ - lp1.kernel_weights_).max() < 1e-3
    assert np.count_nonzero(l1.kernel_weights_) < M  # sparse
    # §3: alignment shapes; group weights on the simplex, both groups used.
    assert ns["A"].shape == (M, M) and ns["a"].shape == (M,)
    grp = ns["grp"]
    assert np.all(grp.group_weights_ > 0) and abs(grp.group_weights_.sum() - 1) < 1e-9
    # §6: precomputed = specs; float32 halves the bytes and keeps the objective.
    assert ns["G32"].dtype == np.float32 and ns["G32"].nbytes * 2 == ns["G_train"].nbytes
    assert abs(ns["pre32"].primal_objective_ / ns["pre"].primal_objective_ - 1) < 1e-6
    # §7: both solvers certified.
    for est in (ns["low"], ns["fast"]):
        assert 0.0 <= est.duality_gap_ <= est.tol
    # §8: the shared l1 fit reports s / Σ s, one θ for the three classes.
    l1s = ns["l1s"]
    s = l1s.kernel_norms_
    assert l1s.kernel_weights_.shape == (l1s.n_kernels_,) and l1s.dual_coef_.shape[0] == 3
    np.testing.assert_allclose(l1s.kernel_weights_, s / s.sum(), rtol=1e-9, atol=1e-15)
    # §9: the certificate, and the gap its definition gives.
    assert clf.primal_objective_ >= clf.dual_objective_ and clf.duality_gap_ <= clf.tol
    gap = (clf.primal_objective_ - clf.dual_objective_) / abs(clf.primal_objective_)
    np.testing.assert_allclose(clf.duality_gap_, gap, rtol=1e-9)
    assert any(issubclass(w.category, ConvergenceWarning) for w in ns["caught"])
    # §10: a certified path; the CV refit is an l1 fit.
    path, reg = ns["path"], ns["reg"]
    assert np.all(np.diff(path.Cs) > 0) and reg.estimator_.penalty == "l1"
    # §11: the concurrent fits.
    assert [f.C for f in ns["fits"]] == [0.1, 10.0]


def test_guide_prose_figures() -> None:
    # §5: mean_diag leaves a ladder of feature-space variances from 1.0 to 0.08; multiplicative
    # makes them 1. The prose quotes the printed ladder.
    text = GUIDE.read_text(encoding="utf-8")
    ladder = shown('print(f"{norm:14}"')[15:20]
    assert f"fall from {ladder[0]} for the narrowest Gaussian to {ladder[3]} for the" in text
    assert shown('print(f"{norm:14}"')[25:] == [1.0] * 5


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
