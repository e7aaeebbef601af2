"""One comparison of ``run.py``, run in its own process: a problem, our estimator and one peer.

    python benches/peers/_peers_case.py '<case as JSON>' --out result.json

The case names a setup (``kloft``, ``ringnorm``, ``uci``, ``breast_cancer``, ``nutrimouse``),
its sizes and a peer (``sklearn``, ``cvxpy``, ``mklpy``). The process builds the training and
test stacks, then

1. runs every method once, in turn, measuring its peak memory: the Linux high-water mark of
   the process's resident set (``VmHWM``) is reset (``/proc/self/clear_refs``) before the fit
   and read after it; the figure is that peak minus the resident set before the fit (the
   stacks, the imports), i.e. the extra memory the fit needed at its peak, native (Rust, BLAS,
   torch) allocations included; a method that raises is reported with its error and left
   out of the rest;
2. times every method with ``_timing.paired_median_times`` (all methods called in turn within
   each repeat; the number of repeats shrinks so that the repeats fit the case's time budget;
   when even one pass exceeds it, the first pass, also in turn, is the measurement);
3. scores the fitted models on the held-out split: accuracy, kernels selected (weight above
   1e-6 of the largest) and, for ours against cvxpy, the relative distance of our primal
   objective, recomputed independently by ``tests/python/reference.py``, to Clarabel's.

The result (rows of methods, versions, the process's ``ru_maxrss``) is written as JSON.
A peer whose package is missing gives ``{"status": "not installed"}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import platform
import resource
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

import multikernel as mk

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "python"))
sys.path.insert(0, str(HERE))
from _memory import peak_extra_mb  # noqa: E402
from _timing import paired_median_times  # noqa: E402
from lp_mkl_vs_peers import digits, kloft_stack  # noqa: E402
from reference import cvxpy_mkl, load_dataset, primal_objective  # noqa: E402
from spicy_scaling import C_OURS, random_specs, ringnorm  # noqa: E402

FloatArray = NDArray[np.float64]

TEST_SIZE = 0.25  # held-out share of every setup but the UCI sets (SpicyMKL's 80/20 there)
SEED = 0
SELECTED = 1e-6  # a kernel counts as selected when its weight exceeds this share of the max
#: Our penalties: label -> estimator parameters.
PENALTIES: dict[str, dict[str, Any]] = {
    "lp p=2": {"penalty": "lp", "p": 2.0},
    "lp p=4/3": {"penalty": "lp", "p": 4.0 / 3.0},
    "l1": {"penalty": "l1"},
    "group": {"penalty": "group"},
}
#: MKLpy's two-step algorithms (GRAM, RMKL, MEMO) stop only when a scheduler decays the
#: learning rate below 1e-7 or after ``max_iter`` steps (default 1000): capped by the case's
#: ``mklpy_max_iter`` (this by default).
MKLPY_MAX_ITER = 100


@dataclass
class Problem:
    Gtr: FloatArray
    Gte: FloatArray
    ytr: FloatArray
    yte: FloatArray
    C: float
    groups: list[int] | None
    about: str


@dataclass
class Method:
    name: str
    family: str  # "ours" or the peer
    penalty: str | None  # ours: its penalty; a cvxpy reference: the penalty it solves
    fit: Callable[[], Any]
    score: Callable[[Any], dict[str, Any]]
    row: dict[str, Any] = field(default_factory=dict)


# --- problems -------------------------------------------------------------------------------


def _split(n_total: int, y: FloatArray, test_size: float) -> tuple[Any, Any]:
    idx = np.arange(n_total)
    tr, te = train_test_split(idx, test_size=test_size, stratify=y, random_state=SEED)
    return np.sort(tr), np.sort(te)


def _bank_split(
    X: FloatArray, y: FloatArray, specs: list[Any], normalize: str, test_size: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Training stack (normalised on the training part) and test stack (test × train)."""
    tr, te = _split(len(y), y, test_size)
    bank = mk.kernels.KernelBank(specs, normalize=normalize)  # type: ignore[arg-type]
    return bank.fit_transform(X[tr]), bank.transform(X[te]), y[tr], y[te]


def _n_total(n_train: int, test_size: float = TEST_SIZE) -> int:
    return int(math.ceil(n_train / (1.0 - test_size)))


def kloft_problem(n: int, M: int) -> Problem:
    """Kloft et al.: digits odd vs even, X/16, K_j = exp(−d²/1.2^(j−1)), C = 1."""
    X, y = digits(_n_total(n))
    if len(y) > 1797:
        raise ValueError("at most 1797 digits: larger samples would repeat points")
    G = kloft_stack(X, M)  # unit diagonal: no normalisation
    tr, te = _split(len(y), y, TEST_SIZE)
    Gtr = np.ascontiguousarray(G[:, tr[:, None], tr])
    Gte = np.ascontiguousarray(G[:, te[:, None], tr])
    return Problem(Gtr, Gte, y[tr], y[te], 1.0, None, f"digits odd/even, M = {M} Gaussians")


def ringnorm_problem(n: int, M: int) -> Problem:
    """SpicyMKL's scaling bank: Gaussians on random feature subsets, σ = 5χ²+0.1, unit trace."""
    X, y = ringnorm(_n_total(n))
    specs = random_specs(M, X.shape[1], seed=M)
    Gtr, Gte, ytr, yte = _bank_split(X, y, specs, "trace", TEST_SIZE)
    return Problem(Gtr, Gte, ytr, yte, C_OURS, None, f"ringnorm, M = {M} random Gaussians")


def _uci_problem(X: FloatArray, y: FloatArray, name: str) -> Problem:
    """The SimpleMKL / SpicyMKL bank, unit trace, 80/20 split, their C = 0.05 (ours 20); the
    group penalty groups the kernels by variable (all variables together are group 0)."""
    specs = mk.kernels.simplemkl_bank(X.shape[1])
    per = len(specs) // (X.shape[1] + 1)
    Gtr, Gte, ytr, yte = _bank_split(X, y, specs, "trace", 0.2)
    groups = [k // per for k in range(len(specs))]
    about = f"{name}, SimpleMKL bank M = {len(specs)}"
    return Problem(Gtr, Gte, ytr, yte, C_OURS, groups, about)


def uci_problem(dataset: str) -> Problem:
    X, y = load_dataset(dataset)
    return _uci_problem(X, y, dataset)


def breast_cancer_problem() -> Problem:
    X, target = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return _uci_problem(X, np.where(target == 1, 1.0, -1.0), "breast cancer (scikit-learn)")


def nutrimouse_problem() -> Problem:
    """Two views (120 genes, 21 lipids), Gaussians and a linear kernel per view, C = 1."""
    X, y = load_dataset("nutrimouse")
    specs, groups = mk.kernels.view_bank(
        {"gene": range(0, 120), "lipid": range(120, 141)}, linear=True
    )
    Gtr, Gte, ytr, yte = _bank_split(X, y, specs, "mean_diag", TEST_SIZE)
    about = f"nutrimouse genotype, 2 views, M = {len(specs)}"
    return Problem(Gtr, Gte, ytr, yte, 1.0, groups, about)


def build_problem(case: dict[str, Any]) -> Problem:
    setup = case["setup"]
    if setup == "kloft":
        return kloft_problem(case["n"], case["M"])
    if setup == "ringnorm":
        return ringnorm_problem(case["n"], case["M"])
    if setup == "uci":
        return uci_problem(case["dataset"])
    if setup == "breast_cancer":
        return breast_cancer_problem()
    if setup == "nutrimouse":
        return nutrimouse_problem()
    raise ValueError(f"unknown setup {setup!r}")


# --- methods --------------------------------------------------------------------------------


def n_selected(weights: Any) -> int:
    w = np.abs(np.asarray(weights, dtype=np.float64))
    return int(np.count_nonzero(w > SELECTED * w.max())) if w.size and w.max() > 0 else 0


def accuracy(pred: Any, y: FloatArray) -> float:
    return float(np.mean(np.asarray(pred, dtype=np.float64).reshape(-1) == y))


def ours(P: Problem, exact: bool) -> list[Method]:
    """MKLClassifier on the precomputed stack, one method per penalty (group if grouped)."""
    tol, max_iter = (1e-6, 5000) if exact else (1e-3, 500)
    methods = []
    for label, params in PENALTIES.items():
        if label == "group" and P.groups is None:
            continue
        extra = {"groups": P.groups} if label == "group" else {}

        def fit(params: dict[str, Any] = params, extra: dict[str, Any] = extra) -> Any:
            clf = mk.MKLClassifier(
                kernels="precomputed", C=P.C, tol=tol, max_iter=max_iter, **params, **extra
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return clf.fit(P.Gtr, P.ytr)

        def score(clf: Any, params: dict[str, Any] = params, extra: dict[str, Any] = extra) -> Any:
            objective = primal_objective(
                P.Gtr, clf.dual_coef_, float(clf.intercept_), P.ytr, C=P.C, loss="hinge",
                penalty=params["penalty"], p=params.get("p"), groups=extra.get("groups"),
            )  # fmt: skip
            return {
                "acc": float(clf.score(P.Gte, P.yte)),
                "selected": n_selected(clf.kernel_weights_),
                "objective": objective,
                "gap": float(clf.duality_gap_),
                "converged": bool(clf.converged_),
            }

        methods.append(Method(f"ours {label}", "ours", label, fit, score))
    return methods


def sklearn_peer(P: Problem, case: dict[str, Any]) -> list[Method]:
    """SVC on the sum kernel; the summation of the stack is inside the timed call."""

    def fit() -> Any:
        return SVC(kernel="precomputed", C=P.C).fit(P.Gtr.sum(axis=0), P.ytr)

    def score(svc: Any) -> dict[str, Any]:
        acc = accuracy(svc.predict(P.Gte.sum(axis=0)), P.yte)
        return {"acc": acc, "selected": P.Gtr.shape[0]}

    return [Method("sklearn SVC (sum kernel)", "sklearn", None, fit, score)]


def cvxpy_peer(P: Problem, case: dict[str, Any]) -> list[Method]:
    """``reference.cvxpy_mkl`` (cvxpy + Clarabel) on each of our penalties."""
    methods = []
    for label, params in PENALTIES.items():
        if label == "group" and P.groups is None:
            continue
        groups = P.groups if label == "group" else None

        def fit(params: dict[str, Any] = params, groups: list[int] | None = groups) -> Any:
            return cvxpy_mkl(P.Gtr, P.ytr, C=P.C, loss="hinge", groups=groups, **params)

        def score(ref: Any) -> dict[str, Any]:
            z = np.einsum("mij,mj->i", P.Gte, ref.A) + ref.b
            acc = accuracy(np.where(z >= 0, 1.0, -1.0), P.yte)
            return {"acc": acc, "selected": n_selected(ref.norms), "objective": ref.objective}

        methods.append(Method(f"cvxpy+Clarabel {label}", "cvxpy", label, fit, score))
    return methods


def mklpy_peer(P: Problem, case: dict[str, Any]) -> list[Method]:
    """MKLpy's EasyMKL, GRAM, RMKL, MEMO and AverageMKL on lists of torch tensors (views of
    our stacks, no copy). EasyMKL and AverageMKL train an SVC(C) on the combined kernel; the
    two-step ones use their own SVM-like decision and ReduceOnWorsening, capped at
    ``case["mklpy_max_iter"]`` steps. MEMO, whose start is an O(M²) Python loop over n²-long
    products, runs only up to M = ``case["memo_M"]``."""
    import torch
    from MKLpy.algorithms import GRAM, MEMO, RMKL, AverageMKL, EasyMKL
    from MKLpy.scheduler import ReduceOnWorsening

    torch.ones(64, 64) @ torch.ones(64, 64)  # start torch's thread pool outside the timings
    KLtr = [torch.from_numpy(K) for K in P.Gtr]
    KLte = [torch.from_numpy(K) for K in P.Gte]
    Y = P.ytr.astype(np.int64)
    two_step = {"max_iter": case.get("mklpy_max_iter", MKLPY_MAX_ITER)}
    makers: dict[str, Callable[[], Any]] = {
        "EasyMKL": lambda: EasyMKL(lam=0.1, learner=SVC(C=P.C)),
        "GRAM": lambda: GRAM(scheduler=ReduceOnWorsening(), **two_step),
        "RMKL": lambda: RMKL(C=P.C, scheduler=ReduceOnWorsening(), **two_step),
        "MEMO": lambda: MEMO(theta=0.0, scheduler=ReduceOnWorsening(), **two_step),
        "AverageMKL": lambda: AverageMKL(learner=SVC(C=P.C)),
    }

    def fitter(make: Callable[[], Any]) -> Callable[[], Any]:
        def fit() -> Any:
            # MEMO prints shapes; torch warns about deprecated idioms: keep the log clean.
            with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return make().fit(KLtr, Y)

        return fit

    def score(mkl: Any) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred = mkl.predict(KLte)
        return {"acc": accuracy(pred, P.yte), "selected": n_selected(mkl.solution.weights)}

    return [
        Method(f"MKLpy {k}", "mklpy", None, fitter(f), score)
        for k, f in makers.items()
        if k != "MEMO" or P.Gtr.shape[0] <= case.get("memo_M", math.inf)
    ]


PEERS: dict[str, tuple[str, Callable[[Problem, dict[str, Any]], list[Method]]]] = {
    "sklearn": ("sklearn", sklearn_peer),
    "cvxpy": ("cvxpy", cvxpy_peer),
    "mklpy": ("MKLpy", mklpy_peer),
}


# --- measuring ------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "multikernel": mk.__version__}
    for dist in ("numpy", "scipy", "scikit-learn", "cvxpy", "clarabel", "MKLpy", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    package, make_peer = PEERS[case["peer"]]
    result: dict[str, Any] = {"case": case, "versions": versions()}
    try:
        P = build_problem(case)
        peer = make_peer(P, case)
    except ImportError as err:  # the peer's package (or one it needs) is missing
        return {**result, "status": "not installed", "error": f"{package}: {err}"}
    methods = ours(P, exact=case["peer"] == "cvxpy") + peer
    result["about"] = P.about
    result["shape"] = {"M": P.Gtr.shape[0], "n_train": P.Gtr.shape[1], "n_test": P.Gte.shape[1]}
    result["C"] = P.C
    first, outs, ok = [], [], []
    for m in methods:  # one pass in turn: warm-up, memory, and the budget's estimate
        m.row = {"name": m.name, "family": m.family, "penalty": m.penalty}
        try:
            t, mem, out = peak_extra_mb(m.fit)
        except Exception as err:  # a peer failing on this problem: reported, not timed
            m.row["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:120]
            continue
        m.row["mem_mb"] = mem
        first.append(t)
        outs.append(out)
        ok.append(m)
    # Repeats that fit the budget; none when one pass exceeds it: the first pass (also in
    # turn) is then the measurement, which also gives the scored results.
    repeats = int(min(case["repeats"], case["budget"] // max(sum(first), 1e-9)))
    if repeats > 0:
        timed = paired_median_times([m.fit for m in ok], repeats)
    else:
        timed, repeats = list(zip(first, outs, strict=True)), 1
    refs: dict[str, float] = {}
    for m, (t, out) in zip(ok, timed, strict=True):
        m.row.update(time=t, runs=repeats, **m.score(out))
        if m.family == "cvxpy" and m.penalty is not None:
            refs[m.penalty] = m.row["objective"]
    for m in ok:
        ref = refs.get(m.penalty or "")
        if m.family == "ours" and ref is not None:
            m.row["obj_dist"] = (m.row["objective"] - ref) / abs(ref)
    result["rows"] = [m.row for m in methods]
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result["status"] = "ok"
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", help="the case as JSON")
    ap.add_argument("--out", required=True, help="where to write the result (JSON)")
    args = ap.parse_args()
    result = run_case(json.loads(args.case))
    Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
