"""Stalls over a grid of fits (issue 70): the longest run of engine iterations in which a fit's
best duality gap did not improve by at least 1 %.

Grid, as the issue words it ("every set in the shared data folder and scikit-learn's loaders,
and generated data; C on a grid of 7 values from 0.01 to 100 and every penalty"):

* data: the CSV sets of the shared data folder ``../shared/data`` relative to the repository
  (liver_bupa, pima, ionosphere, sonar; ringnorm subsampled to 400 points, stratified, seed
  0), scikit-learn's bundled breast cancer, wine (class 0 against the rest) and digits (even
  against odd, 400 points, stratified, seed 0), and ``make_classification(n_samples=300,
  n_features=10, n_informative=4, random_state=0)``; an 80 % stratified training split
  (random_state 0), capped at 300 points (stratified, seed 0); columns constant on the
  training points dropped, the rest standardised (``StandardScaler`` on the training points);
* kernels: the SimpleMKL bank of 27·(d+1) kernels (``simplemkl_bank``), each normalised to
  unit trace on the training points, computed once per set and fitted with
  ``kernels="precomputed"``;
* C in ``np.logspace(-2, 2, 7)``; penalties ``l1``, ``elasticnet`` (l1_ratio 0.5), ``lp`` at
  p = 2 and p = 4/3, and ``group`` (one group per variable: the bank's 27 kernels on that
  variable; one group for the 27 kernels on all variables); hinge, tol 1e-3,
  ``solver="auto"``, default ``max_iter``.

The measure: for a fit's per-record best gap g_1..g_T (from ``history_``; best so far, see
:func:`best_gaps`), a record t improves when g_t is finite and at most 0.99 times the
reference, the best gap at the last improvement (+inf before the first); a run is the number
of consecutive records that do not improve. The longest run before convergence is reported:
for a converged fit the record at which the best gap first reaches ``tol`` ends the last run
(records after it do not count); for one that did not converge the last run goes to the end.
``history_`` holds one record per recorded iterate: the SVM wrapper does not record a refused
trust-region step, which ``n_iter_`` counts, so both are reported. With ``solver="auto"``,
``l1`` and ``elasticnet`` run the wrapper and, when it stops above ``tol``, SpicyMKL from its
model: when ``history_`` has a field ``solver`` the records of each solver are named and the
measure runs over all of them; otherwise it runs over the records there are. The attributes
``solvers_`` and ``solver_iterations_`` are reported when the estimator has them, and so are
the engine solvers each fit ran (``_core.fit`` counted; its result's ``solvers``). Beside the
measure, the same over the records that carry a dual value only: a solver that computes its
dual point every few iterations (mirror descent, ``group``) cannot improve the gap in between.
A converged fit whose best gap never reaches ``tol`` in ``history_`` is shown as such.

Times: the fit (validation included, as a user calls it) and ``SVC(kernel="precomputed", C=C)``
on the stack summed inside the timed call, called in turn within each of ``--repeats``
(``_timing.paired_median_times``), medians.

    python benches/peers/stall_grid.py [--sets liver_bupa,pima,...] [--penalties l1,enet,...]
        [--Cs 0.01,1,100] [--quick] [--repeats 3] [--out benches/peers/results/stall_grid.md]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import multikernel as mk
from multikernel import _core

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _timing import paired_median_times  # noqa: E402

FloatArray = NDArray[np.float64]
#: The shared data folder, ``../shared/data`` relative to the repository.
DATA = HERE.parents[2] / "shared" / "data"
SEED = 0
N_CAP = 300  # training points at most
TOL = 1e-3
IMPROVE = 0.99  # a record improves when its best gap is at most this times the reference
LONG = 10  # runs longer than this are counted in the summary
CS = np.logspace(-2, 2, 7)
SETS = "liver_bupa,pima,ionosphere,sonar,ringnorm,breast_cancer,wine,digits,generated".split(",")
QUICK_SETS = ["liver_bupa", "wine", "generated"]
QUICK_CS = CS[[0, 3, 6]]
#: Penalty label -> estimator parameters (``group`` adds ``groups``).
PENALTIES: dict[str, dict[str, Any]] = {
    "l1": {"penalty": "l1"},
    "enet": {"penalty": "elasticnet", "l1_ratio": 0.5},
    "lp2": {"penalty": "lp", "p": 2.0},
    "lp43": {"penalty": "lp", "p": 4.0 / 3.0},
    "group": {"penalty": "group"},
}


#: The engine solvers of each engine call of the fit being measured (``_core.fit`` counted).
ENGINE_CALLS: list[str] = []


def _spy_engine() -> None:
    """Counts the engine calls and the solvers each ran (``FitResult.solvers``: the wrapper,
    then ``spicy`` when SpicyMKL continued it) into :data:`ENGINE_CALLS`."""
    real = _core.fit

    def spy(*args: Any, **kwargs: Any) -> Any:
        r = real(*args, **kwargs)
        ENGINE_CALLS.append("+".join(getattr(r, "solvers", None) or [args[0].solver]))
        return r

    _core.fit = spy


# --- data -----------------------------------------------------------------------------------


def _signs(labels: NDArray[Any]) -> FloatArray:
    """±1 labels: the larger class name in sorted order is +1."""
    classes = np.unique(labels)
    if len(classes) != 2:
        raise ValueError(f"{len(classes)} classes, expected 2")
    return np.where(labels == classes[-1], 1.0, -1.0)


def _stratified(X: FloatArray, y: FloatArray, n: int) -> tuple[FloatArray, FloatArray]:
    """A stratified subsample of ``n`` points (seed 0); all of them when there are no more."""
    if len(y) <= n:
        return X, y
    Xs, _, ys, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=SEED)
    return Xs, ys


def _csv(name: str) -> tuple[FloatArray, FloatArray]:
    path = DATA / f"{name}.csv"
    with path.open(encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    if header[-1] != "label":
        raise ValueError(f"{path.name}: last column is {header[-1]!r}, expected 'label'")
    raw = np.loadtxt(path, delimiter=",", skiprows=1, dtype=str, ndmin=2)
    return raw[:, :-1].astype(np.float64), _signs(raw[:, -1])


def load(name: str) -> tuple[FloatArray, FloatArray]:
    """The whole set ``name`` as features and ±1 labels (ringnorm and digits: 400 points)."""
    if name == "ringnorm":
        return _stratified(*_csv(name), 400)
    if name in ("liver_bupa", "pima", "ionosphere", "sonar"):
        return _csv(name)
    if name == "breast_cancer":
        X, t = load_breast_cancer(return_X_y=True)
        return X, np.where(t == 1, 1.0, -1.0)
    if name == "wine":
        X, t = load_wine(return_X_y=True)
        return X, np.where(t == 0, 1.0, -1.0)
    if name == "digits":
        X, t = load_digits(return_X_y=True)
        return _stratified(X, np.where(t % 2 == 0, 1.0, -1.0), 400)
    if name == "generated":
        X, t = make_classification(n_samples=300, n_features=10, n_informative=4, random_state=SEED)
        return X, np.where(t == 1, 1.0, -1.0)
    raise ValueError(f"unknown set {name!r}; known: {','.join(SETS)}")


def training(name: str) -> tuple[FloatArray, FloatArray]:
    """The standardised training points of ``name``: 80 % stratified split, at most
    ``N_CAP`` points, columns constant on them dropped."""
    X, y = load(name)
    Xtr, _, ytr, _ = train_test_split(X, y, train_size=0.8, stratify=y, random_state=SEED)
    Xtr, ytr = _stratified(Xtr, ytr, N_CAP)
    Xtr = Xtr[:, np.ptp(Xtr, axis=0) > 0]
    return np.ascontiguousarray(StandardScaler().fit_transform(Xtr)), ytr


def groups_of(specs: list[Any], d: int) -> list[int]:
    """One group per variable (the kernels on that variable alone), group ``d`` for the kernels
    on all variables."""
    return [d if s.features is None else int(s.features[0]) for s in specs]


# --- the measure ----------------------------------------------------------------------------


def best_gaps(history: NDArray[Any]) -> tuple[FloatArray, float]:
    """The best relative gap after each record, ``(min P − max D)/max(|min P|, 1e-12)`` over
    the records so far, a dual value counting only while it is at most the best primal value
    (weak duality; as the engine's tracker does); and the largest relative difference between
    it and the recorded ``gap`` (0 when the records hold the best gap so far, as one engine
    solver's do; not when the gap's reference restarts within ``history_``). The relative
    gap need not decrease: a smaller best primal value is a smaller denominator."""
    P, D, G = (np.asarray(history[k], dtype=np.float64) for k in ("primal", "dual", "gap"))
    own = np.full(len(P), np.inf)
    best_p = np.inf
    for t in range(len(P)):
        best_p = min(best_p, P[t])
        if not np.isfinite(best_p):
            continue
        duals = D[: t + 1]
        valid = duals[duals <= best_p + 1e-9 * abs(best_p)]
        if valid.size and np.isfinite(valid.max()):
            own[t] = (best_p - valid.max()) / max(abs(best_p), 1e-12)
    same = (own == G) | (np.isinf(own) & np.isinf(G))
    with np.errstate(invalid="ignore"):
        diff = np.abs(own - G) / np.maximum(np.abs(G), 1e-12)
    return own, float(np.max(np.where(same, 0.0, np.nan_to_num(diff, nan=np.inf)), initial=0.0))


@dataclass
class Run:
    length: int  # records in the longest run without a 1 % improvement
    first: int  # its first record (1-based), 0 when there is none
    end: int  # the record at which convergence was reached (1-based), 0 when never


def longest_run(gaps: FloatArray, converged: bool, tol: float = TOL) -> Run:
    """The longest run of records without a 1 % improvement of the best gap ``gaps``, up to
    convergence (the first record at or below ``tol``) for a converged fit."""
    reached = np.flatnonzero(gaps <= tol)
    end = int(reached[0]) + 1 if converged and reached.size else 0
    last = end - 1 if end else len(gaps)  # records counted: [0, last)
    ref, run, best, first = np.inf, 0, 0, 0
    for t in range(last):
        g = gaps[t]
        if np.isfinite(g) and (not np.isfinite(ref) or g <= IMPROVE * ref):
            ref, run = g, 0
        else:
            run += 1
            if run > best:
                best, first = run, t + 2 - run
    return Run(best, first, end)


def solver_segments(history: NDArray[Any]) -> str:
    """The records of each solver in order (``wrapper 12 + spicy 5``) when ``history_`` names
    them (a field ``solver``), else empty."""
    if "solver" not in (history.dtype.names or ()):
        return ""
    names = [v.decode() if isinstance(v, bytes) else str(v) for v in history["solver"].tolist()]
    parts: list[list[Any]] = []
    for s in names:
        if parts and parts[-1][0] == s:
            parts[-1][1] += 1
        else:
            parts.append([s, 1])
    return " + ".join(f"{s} {k}" for s, k in parts)


# --- the grid -------------------------------------------------------------------------------


@dataclass
class Row:
    set: str
    n: int
    M: int
    penalty: str
    C: float
    converged: bool
    n_iter: int
    records: int
    duals: int  # records with a finite dual value
    run: int
    run_first: int
    run_duals: int  # the longest run over the records with a dual value only
    converged_at: int
    final_gap: float
    ours_s: float
    svc_s: float
    ratio: float
    solvers: str  # the engine solvers; per-record solver names, solvers_, solver_iterations_
    gap_check: float  # largest relative difference of own and recorded best gaps
    warnings: str


def _attr(est: Any, name: str) -> Any:
    value = getattr(est, name, None)
    return value.tolist() if isinstance(value, np.ndarray) else value


def measure(
    name: str, G: FloatArray, y: FloatArray, label: str, kw: dict[str, Any], C: float,
    repeats: int,
) -> Row:  # fmt: skip
    def ours() -> Any:
        ENGINE_CALLS.clear()
        est = mk.MKLClassifier(kernels="precomputed", C=C, loss="hinge", tol=TOL, **kw)
        return est.fit(G, y)

    def svc() -> Any:
        return SVC(kernel="precomputed", C=C).fit(G.sum(axis=0), y)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (t_ours, est), (t_svc, _) = paired_median_times([ours, svc], repeats)
    hist = est.history_
    gaps, check = best_gaps(hist)
    run = longest_run(gaps, bool(est.converged_))
    named = [
        ", ".join(ENGINE_CALLS),
        solver_segments(hist),
        *(f"{a}={_attr(est, a)}" for a in ("solvers_", "solver_iterations_") if hasattr(est, a)),
    ]
    return Row(
        set=name,
        n=G.shape[1],
        M=G.shape[0],
        penalty=label,
        C=float(C),
        converged=bool(est.converged_),
        n_iter=int(est.n_iter_),
        records=len(hist),
        duals=int(np.isfinite(hist["dual"]).sum()),
        run=run.length,
        run_first=run.first,
        run_duals=longest_run(gaps[np.isfinite(hist["dual"])], bool(est.converged_)).length,
        converged_at=run.end,
        final_gap=float(est.duality_gap_),
        ours_s=t_ours,
        svc_s=t_svc,
        ratio=t_ours / t_svc,
        solvers="; ".join(s for s in named if s),
        gap_check=check,
        warnings=",".join(sorted({type(w.message).__name__ for w in caught})),
    )


def line(r: Row) -> str:
    flag = "" if r.converged else " NOT CONVERGED"
    at = f" from record {r.run_first}" if r.run else ""
    return (
        f"{r.set:>13} n={r.n:<3} M={r.M:<4} {r.penalty:>5} C={r.C:<7.3g} run {r.run:>3}{at} "
        f"({r.run_duals} over dual records); "
        f"n_iter {r.n_iter} ({r.records} records, {r.duals} with a dual) gap {r.final_gap:.1e} "
        f"{r.ours_s:.3f}s / SVC {r.svc_s:.4f}s = {r.ratio:.1f}x{flag}"
        + (f" [{r.solvers}]" if r.solvers else "")
        + (f" gap check {r.gap_check:.1e}" if r.gap_check > 1e-9 else "")
    )


def grid(
    sets: list[str], pens: list[str], Cs: FloatArray, repeats: int, emit: Callable[[Row], None]
) -> None:
    for name in sets:
        Xtr, ytr = training(name)
        specs = mk.kernels.simplemkl_bank(n_features=Xtr.shape[1])
        t = time.perf_counter()
        G = mk.kernels.gram(Xtr, specs, normalize="trace")
        print(
            f"# {name}: n = {len(ytr)}, d = {Xtr.shape[1]}, M = {len(specs)}, "
            f"Gram {time.perf_counter() - t:.1f} s",
            flush=True,
        )
        for label in pens:
            kw = dict(PENALTIES[label])
            if label == "group":
                kw["groups"] = groups_of(specs, Xtr.shape[1])
            for C in Cs:
                emit(measure(name, G, ytr, label, kw, float(C), repeats))
        del G


# --- the page -------------------------------------------------------------------------------


def summary(rows: list[Row], pens: list[str]) -> list[str]:
    out = [
        "| penalty | fits | longest run | (set, C) | runs > 10 | longest, records with a dual "
        "| not converged | n_iter_ ≠ records | engine solvers | ratio ours/SVC: median | max |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pens:
        rs = [r for r in rows if r.penalty == p]
        if not rs:
            continue
        worst = max(rs, key=lambda r: (r.run, r.n_iter))
        ratios = [r.ratio for r in rs]
        out.append(
            f"| {p} | {len(rs)} | {worst.run} | {worst.set}, {worst.C:.3g} | "
            f"{sum(r.run > LONG for r in rs)} | {max(r.run_duals for r in rs)} | "
            f"{sum(not r.converged for r in rs)} | {sum(r.n_iter != r.records for r in rs)} | "
            f"{', '.join(sorted({r.solvers.split(';')[0] for r in rs}))} | "
            f"{statistics.median(ratios):.1f} | {max(ratios):.1f} |"
        )
    return out


def worst(rows: list[Row], k: int = 15) -> list[str]:
    out = [
        "| set | n | M | penalty | C | longest run | from record | over dual records "
        "| converged (record) | n_iter_ "
        "| records (with a dual) | final gap | ours (s) | SVC (s) | ours/SVC | solvers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (-r.run, -r.n_iter, -r.ratio))[:k]:
        conv = "**no**" if not r.converged else f"yes ({r.converged_at or 'not in history_'})"
        out.append(
            f"| {r.set} | {r.n} | {r.M} | {r.penalty} | {r.C:.3g} | {r.run} | "
            f"{r.run_first or '–'} | {r.run_duals} | {conv} | {r.n_iter} | "
            f"{r.records} ({r.duals}) | {r.final_gap:.1e} | {r.ours_s:.3f} | {r.svc_s:.4f} | "
            f"{r.ratio:.1f} | {r.solvers or '–'} |"
        )
    return out


def write_page(path: Path, rows: list[Row], pens: list[str], a: argparse.Namespace) -> None:
    cmd = "python benches/peers/stall_grid.py " + shlex.join(sys.argv[1:])
    sets = list(dict.fromkeys(r.set for r in rows))
    Cs = list(dict.fromkeys(r.C for r in rows))
    shapes = ", ".join(
        f"{s} {r.n}/{r.M}" for s in sets for r in [next(r for r in rows if r.set == s)]
    )
    lines = [
        "# Stalls over a grid of fits: the longest run without a 1 % better gap",
        "",
        f"    {cmd}",
        "",
        f"multikernel {mk.__version__}, numpy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores shared with other work (load average {a.load[0]:.1f} at the "
        f"start, {a.load[1]:.1f} at the end); {len(rows)} fits in {a.seconds / 60:.1f} min.",
        "",
        f"Sets (training n / kernels M): {shapes}. SimpleMKL bank, unit trace, "
        f"C ∈ {{{', '.join(f'{c:.3g}' for c in Cs)}}}, hinge, tol 1e-3, "
        '`solver="auto"`, default `max_iter`. Longest run: the most consecutive records of '
        "`history_` whose best gap was not 1 % below the best gap at the last improvement, "
        "up to convergence (see the script's docstring). `n_iter_` can exceed the records: "
        "the SVM wrapper records no refused trust-region step. Times: medians of "
        f'{a.repeats}, the fit and `SVC(kernel="precomputed")` on the summed stack called '
        "in turn.",
        "",
        "## Per penalty",
        "",
        *summary(rows, pens),
        "",
        "## The 15 longest runs",
        "",
        *worst(rows),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", help=f"comma-separated, of {','.join(SETS)} (default all)")
    ap.add_argument("--penalties", default=",".join(PENALTIES))
    ap.add_argument("--Cs", help="comma-separated (default logspace(-2, 2, 7))")
    ap.add_argument("--quick", action="store_true", help="3 sets and 3 values of C")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, help="the markdown page")
    ap.add_argument("--json", type=Path, help="every fit's row")
    a = ap.parse_args()
    sets = a.sets.split(",") if a.sets else (QUICK_SETS if a.quick else SETS)
    pens = a.penalties.split(",")
    for p in pens:
        if p not in PENALTIES:
            ap.error(f"unknown penalty {p!r}; known: {','.join(PENALTIES)}")
    Cs = np.array([float(c) for c in a.Cs.split(",")]) if a.Cs else (QUICK_CS if a.quick else CS)
    rows: list[Row] = []

    def emit(r: Row) -> None:
        rows.append(r)
        print(line(r), flush=True)

    _spy_engine()
    load0, start = os.getloadavg()[0], time.perf_counter()
    grid(sets, pens, Cs, a.repeats, emit)
    a.seconds, a.load = time.perf_counter() - start, (load0, os.getloadavg()[0])
    print("\n".join(summary(rows, pens)), flush=True)
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    if a.out:
        write_page(a.out, rows, pens, a)


if __name__ == "__main__":
    main()
