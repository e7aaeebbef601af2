"""Side-by-side benchmark of ``MKLClassifier(kernels="precomputed")`` against its peers.

    python benches/peers/run.py [--quick | --full] [--python .peers-venv/bin/python]

Every comparison runs in its own subprocess (``_peers_case.py``): one problem, our estimator
with the penalties lp p = 2, lp p = 4/3, l1 (and group where the kernels have groups), and one
peer, every method called in turn within each repeat (``_timing.paired_median_times``), so the
ratios ours / peer come from the same moments of a shared machine. Real data only:

* Kloft et al.'s digits kernels: scikit-learn's digits, odd vs even, X/16, M Gaussian kernels
  exp(−d²/1.2^(j−1)) (``lp_mkl_vs_peers.digits`` / ``kloft_stack``), C = 1;
* SpicyMKL's ringnorm bank (``../shared/data/ringnorm.csv``): Gaussians on random feature
  subsets, σ = 5χ²+0.1, unit trace, C = 20 (``spicy_scaling``); the scaling plots (time
  against M at n = 200, time against n at M = 20) use it;
* the SimpleMKL bank (``multikernel.kernels.simplemkl_bank``, SpicyMKL's UCI experiment):
  Liver, Pima, Ionosphere, Sonar from ``../shared/data`` and scikit-learn's breast cancer,
  unit trace, 80/20 split, C = 20; the group penalty groups the kernels by variable;
* nutrimouse (genotype), two views with ``kernels.view_bank``: the group penalty's setting.

Held-out split: 25 % (UCI sets: 20 %), stratified, seed 0; the kernels are normalised on the
training part. Hinge loss everywhere. Peers:

* ``sklearn``: ``SVC(kernel="precomputed", C)`` on the sum of the stack, the summation inside
  the timed call (what a user does without MKL);
* ``cvxpy``: ``tests/python/reference.py::cvxpy_mkl`` (cvxpy + Clarabel, tight tolerances) on
  each of our penalties, small problems only; ours then runs at tol 1e-6 and the table gives the
  relative distance of our primal objective (recomputed by ``reference.primal_objective``)
  to Clarabel's optimum;
* ``mklpy``: MKLpy's EasyMKL, GRAM, RMKL, MEMO, AverageMKL. They solve OTHER problems (margin,
  radius/margin ratio, …, not the lp-MKL objective): compare accuracy, time and kernels
  selected, never objectives. EasyMKL (λ = 0.1) and AverageMKL train ``SVC(C)`` on their
  combined kernel; GRAM, RMKL (C) and MEMO (θ = 0) use their own decision function, the
  ``ReduceOnWorsening`` scheduler and at most 100 steps (their default, 1000 steps with no other
  stopping rule, costs minutes per fit); MKLpy runs up to n = 400 (quick) / 800 (full)
  training points, and MEMO, whose start is an O(M²) Python loop over n²-long products,
  only up to M = 400. The subprocesses get ``OMP_WAIT_POLICY=PASSIVE`` (unless
  set): torch's spinning OpenMP threads otherwise fight the other jobs of a shared machine
  (EasyMKL on Liver: 8.9 s instead of 0.045 s with 2 threads).

No hyper-parameter is tuned: every method gets the setup's C. Writes
``results/peers.md`` (``--md`` to change), the raw results as JSON beside it, and the PNG plots
``results/peers_time_vs_M.png``, ``results/peers_time_vs_n.png``.

Setting up the peers' virtualenv (MKLpy needs torch; only the main Python package index is
reachable here, whose Linux torch wheels depend on ~3 GB of CUDA packages; torch runs on the
CPU without them, so it is installed without its dependencies, and those it needs are listed)::

    python -m venv .peers-venv
    .peers-venv/bin/pip install numpy scipy scikit-learn cvxpy clarabel matplotlib pytest
    .peers-venv/bin/pip install --no-deps torch
    .peers-venv/bin/pip install filelock fsspec networkx sympy typing_extensions jinja2 MKLpy
    # multikernel from this tree: the editable build leaves python/multikernel/_core*.so there
    echo "$PWD/python" > .peers-venv/lib/python3.11/site-packages/multikernel-src.pth
    python benches/peers/run.py --python .peers-venv/bin/python

The subprocesses need numpy, scipy, scikit-learn, cvxpy and clarabel (the test-suite's
reference solver) and pytest (which the test references import); a peer whose packages are
missing from ``--python`` is reported as "not installed" and skipped.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER = HERE / "_peers_case.py"
RESULTS = HERE / "results"
PENALTIES = ("lp p=2", "lp p=4/3", "l1", "group")
#: OpenMP threads (torch's) that spin while they wait fight the concurrent builds on a shared
#: 2-core machine: EasyMKL on Liver took 8.9 s with them instead of 0.045 s.
ENV = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
#: Modules a peer needs in the subprocesses' interpreter.
NEEDS = {"sklearn": ["sklearn"], "cvxpy": ["cvxpy", "clarabel"], "mklpy": ["MKLpy", "torch"]}
#: Sizes per mode: ringnorm scaling grids, the cvxpy limit (n·M), Kloft sizes, UCI sets.
MODES: dict[str, dict[str, Any]] = {
    "quick": {
        "ringnorm_M": [10, 20, 50, 200],
        "ringnorm_n": [100, 200, 400],
        "cvxpy_nM": 2000,
        "mklpy_n": 400,
        "memo_M": 400,
        "kloft": [(300, 50)],
        "kloft_cvxpy": [(100, 10)],
        "uci": ["liver_bupa"],
        "repeats": 5,
        "budget": 15.0,
        "timeout": 300.0,
    },
    "full": {
        "ringnorm_M": [10, 20, 50, 200, 1000],
        "ringnorm_n": [100, 200, 400, 800, 1600],
        "cvxpy_nM": 10000,
        "mklpy_n": 800,
        "memo_M": 400,
        "kloft": [(300, 50), (1000, 50)],
        "kloft_cvxpy": [(100, 10), (150, 50)],
        "uci": ["liver_bupa", "pima", "ionosphere", "sonar", "breast_cancer"],
        "repeats": 5,
        "budget": 60.0,
        "timeout": 1200.0,
    },
}


def cases(mode: str) -> list[dict[str, Any]]:
    cfg = MODES[mode]
    out: list[dict[str, Any]] = []
    sizes = sorted({(200, M) for M in cfg["ringnorm_M"]} | {(n, 20) for n in cfg["ringnorm_n"]})
    for n, M in sizes:
        peers = ["sklearn"] + (["mklpy"] if n <= cfg["mklpy_n"] else [])
        peers += ["cvxpy"] if n * M <= cfg["cvxpy_nM"] else []
        out += [{"setup": "ringnorm", "n": n, "M": M, "peer": p} for p in peers]
    for n, M in cfg["kloft"]:
        peers = ["sklearn"] + (["mklpy"] if n <= cfg["mklpy_n"] else [])
        out += [{"setup": "kloft", "n": n, "M": M, "peer": p} for p in peers]
    out += [{"setup": "kloft", "n": n, "M": M, "peer": "cvxpy"} for n, M in cfg["kloft_cvxpy"]]
    for name in cfg["uci"]:
        setup = {"setup": "breast_cancer"} if name == "breast_cancer" else {
            "setup": "uci", "dataset": name}  # fmt: skip
        out += [{**setup, "peer": p} for p in ("sklearn", "mklpy")]
    out += [{"setup": "nutrimouse", "peer": p} for p in ("sklearn", "cvxpy", "mklpy")]
    for c in out:
        c.update(repeats=cfg["repeats"], budget=cfg["budget"])
        if c["peer"] == "mklpy":
            c["memo_M"] = cfg["memo_M"]
    return out


def case_id(case: dict[str, Any]) -> str:
    where = case.get("dataset") or case["setup"]
    size = f" n={case['n']} M={case['M']}" if "n" in case else ""
    return f"{where}{size} vs {case['peer']}"


def missing_modules(python: str) -> dict[str, list[str]]:
    """Per peer, the modules ``python`` cannot find."""
    probe = (
        "import importlib.util, json, sys; needs = json.loads(sys.argv[1]); "
        "print(json.dumps({k: [m for m in v if importlib.util.find_spec(m) is None] "
        "for k, v in needs.items()}))"
    )
    out = subprocess.run(
        [python, "-c", probe, json.dumps(NEEDS)], capture_output=True, text=True, check=True
    )
    found: dict[str, list[str]] = json.loads(out.stdout)
    return found


def run_case(python: str, case: dict[str, Any], timeout: float, log: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [python, str(WORKER), json.dumps(case), "--out", str(out)],
                cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=ENV,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"case": case, "status": f"timeout after {timeout:.0f} s"}
        with log.open("a") as fh:
            fh.write(f"\n=== {case_id(case)} (rc {proc.returncode})\n{proc.stderr}")
        if proc.returncode != 0 or not out.exists():
            tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            return {"case": case, "status": f"failed: {tail[0]}"}
        result: dict[str, Any] = json.loads(out.read_text())
        result["wall_s"] = time.perf_counter() - t0
        return result


# --- report ---------------------------------------------------------------------------------


def fmt(v: Any, spec: str = ".3g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return format(v, spec)


def fmt_time(t: float) -> str:
    return f"{t:.3g}" if t >= 1e-3 else f"{t:.1e}"


def our_rows(r: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["penalty"]: row for row in r["rows"] if row["family"] == "ours"}


def ratios(r: dict[str, Any], peer: dict[str, Any]) -> str:
    """Ours / peer time per penalty: all penalties, or the peer's own for cvxpy."""
    cells = []
    for pen, row in our_rows(r).items():
        if peer["penalty"] in (None, pen) and "time" in row:
            cells.append(f"{pen}: {row['time'] / peer['time']:.2g}")
    return "; ".join(cells)


def summary_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| comparison | n train / test | M | peer method | peer fit (s) | ours / peer time | "
        "acc. peer | acc. ours | kernels peer | kernels ours | rel. Δ objective |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.get("status") != "ok":
            lines.append(f"| {case_id(r['case'])} | – | – | {r.get('status')} | | | | | | | |")
            continue
        mine = our_rows(r)
        sh = r["shape"]
        for peer in (row for row in r["rows"] if row["family"] != "ours"):
            if "error" in peer:
                lines.append(
                    f"| {case_id(r['case'])} | {sh['n_train']} / {sh['n_test']} | {sh['M']} | "
                    f"{peer['name']} | failed: {peer['error']} | | | | | | |"
                )
                continue
            pens = [p for p in mine if peer["penalty"] in (None, p)]
            acc = " / ".join(fmt(mine[p].get("acc"), ".3f") for p in pens)
            sel = " / ".join(str(mine[p].get("selected", "–")) for p in pens)
            dist = " / ".join(fmt(mine[p].get("obj_dist"), ".1e") for p in pens)
            lines.append(
                f"| {case_id(r['case'])} | {sh['n_train']} / {sh['n_test']} | {sh['M']} | "
                f"{peer['name']} | {fmt_time(peer['time'])} | {ratios(r, peer)} | "
                f"{fmt(peer['acc'], '.3f')} | {acc} | {peer['selected']} | {sel} | "
                f"{dist if peer['family'] == 'cvxpy' else '–'} |"
            )
    return lines


def detail_table(r: dict[str, Any]) -> list[str]:
    sh = r["shape"]
    lines = [
        f"### {case_id(r['case'])}: {r['about']}, n = {sh['n_train']} train / {sh['n_test']} "
        f"test, C = {r['C']:g}",
        "",
        f"Process peak RSS (ru_maxrss) {r['maxrss_mb']:.0f} MB; subprocess wall time "
        f"{r.get('wall_s', math.nan):.0f} s.",
        "",
        "| method | fit (s), median | runs | test acc. | kernels selected | duality gap | "
        "rel. Δ objective | extra peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in r["rows"]:
        if "error" in row:
            lines.append(f"| {row['name']} | failed: {row['error']} | | | | | | |")
            continue
        lines.append(
            f"| {row['name']} | {fmt_time(row['time'])} | {row['runs']} | "
            f"{fmt(row['acc'], '.3f')} | {row['selected']} | {fmt(row.get('gap'), '.1e')} | "
            f"{fmt(row.get('obj_dist'), '.1e')} | {row['mem_mb']:.1f} |"
        )
    return lines + [""]


def machine() -> str:
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kb = float(meminfo.read_text().split()[1])
        mem = f", {kb / 1024**2:.0f} GB RAM"
    return f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}"


def write_markdown(
    path: Path, results: list[dict[str, Any]], mode: str, command: str, total_s: float
) -> None:
    ok = [r for r in results if r.get("status") == "ok"]
    vers = ok[0]["versions"] if ok else {}
    lines = [
        "# multikernel against its peers",
        "",
        f"- command: `{command}` ({mode} suite, {total_s / 60:.1f} min in all)",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {machine()}, shared with concurrent builds: timings are noisy, compare "
        "the ratios (medians of repeats, every method called in turn within each repeat)",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()),
        "",
        'Ours is `MKLClassifier(kernels="precomputed", penalty=...)` (tol 1e-3; 1e-6 against '
        "cvxpy), hinge loss, all cores; SVC and cvxpy + Clarabel run on one core, MKLpy's "
        "torch on all. SVC's time includes summing the stack. **MKLpy's algorithms solve other "
        "problems than lp-MKL: compare them on accuracy, time and kernels selected only.** "
        "Kernels selected: weights above 1e-6 of the largest (SVC and AverageMKL: all). "
        "Rel. Δ objective: (our primal, recomputed by `tests/python/reference.py`, − Clarabel's "
        "optimum) / |Clarabel's optimum|, per penalty. Extra peak RSS: the Linux high-water mark "
        "of the subprocess's resident memory (`VmHWM`, reset through `/proc/self/clear_refs` "
        "before the fit) minus its resident memory before the fit, from one untimed run; "
        "native allocations (Rust, BLAS, torch) included. Runs: timed repeats (1 when one pass "
        "over all methods exceeds the case's budget: then the first pass is the measurement). "
        "Cells with several values follow the order lp p=2 / lp p=4/3 / l1 / group.",
        "",
        "## Summary",
        "",
        *summary_table(results),
        "",
        "## Per comparison",
        "",
    ]
    for r in ok:
        lines += detail_table(r)
    path.write_text("\n".join(lines) + "\n")


def scaling_series(
    results: Iterable[dict[str, Any]], vary: str, fixed: dict[str, int]
) -> dict[str, list[tuple[int, float]]]:
    """Per method, (size, median fit time) on the ringnorm grid; ours from the SVC runs."""
    series: dict[str, list[tuple[int, float]]] = {}
    for r in results:
        c = r["case"]
        if r.get("status") != "ok" or c["setup"] != "ringnorm":
            continue
        if any(c[k] != v for k, v in fixed.items()):
            continue
        for row in r["rows"]:
            if row["family"] == "ours" and c["peer"] != "sklearn":
                continue
            series.setdefault(row["name"], []).append((c[vary], row["time"]))
    return {k: sorted(v) for k, v in series.items()}


def plot(results: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots", file=sys.stderr)
        return []
    written = []
    for vary, fixed, label in (
        ("M", {"n": 200}, "number of kernels M (ringnorm, n = 200 training points)"),
        ("n", {"M": 20}, "training points n (ringnorm, M = 20 kernels)"),
    ):
        series = scaling_series(results, vary, fixed)
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(10, 5))
        for name, pts in series.items():
            xs, ts = zip(*pts, strict=True)
            style = "-o" if name.startswith("ours") else "--s" if "cvxpy" in name else ":^"
            ax.loglog(xs, ts, style, label=name, linewidth=2 if name.startswith("ours") else 1)
        ax.set_xlabel(label)
        ax.set_ylabel("fit time (s), median")
        ax.set_title(f"Fit time against {vary} (hinge loss, C = 20, unit-trace kernels)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        path = out_dir / f"peers_time_vs_{vary}.png"
        fig.savefig(path, dpi=110, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes, ≤ ~10 min (default)")
    size.add_argument("--full", action="store_true", help="larger sizes, ≤ ~45 min")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the subprocesses")
    ap.add_argument("--only", default="", help="run the cases whose id contains this text")
    ap.add_argument("--md", type=Path, default=RESULTS / "peers.md", help="markdown report")
    args = ap.parse_args()
    mode = "full" if args.full else "quick"
    command = "python benches/peers/run.py " + shlex.join(sys.argv[1:])
    out_dir = args.md.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / f"peers_{mode}.log"
    log.write_text(f"{command}\n")
    missing = missing_modules(args.python)
    todo = [c for c in cases(mode) if args.only in case_id(c)]
    results = []
    t0 = time.perf_counter()
    for k, case in enumerate(todo, 1):
        if missing[case["peer"]]:
            r = {"case": case, "status": "not installed (" + ", ".join(missing[case["peer"]]) + ")"}
        else:
            r = run_case(args.python, case, MODES[mode]["timeout"], log)
        results.append(r)
        wall = r.get("wall_s", 0.0)
        print(f"[{k}/{len(todo)}] {case_id(case)}: {r['status']} ({wall:.0f} s)", flush=True)
    total = time.perf_counter() - t0
    (out_dir / f"peers_{mode}.json").write_text(json.dumps(results, indent=1))
    write_markdown(args.md, results, mode, command, total)
    for path in [args.md, *plot(results, out_dir)]:
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
