"""ℓp-norm MKL (Kloft, Brefeld, Sonnenburg & Zien, "Lp-Norm Multiple Kernel Learning", JMLR 2011):
the toy sparsity experiment and the execution-time figure, ours beside the paper's figures.

1. Toy experiment (the paper's §5.1 and Figure 2): a balanced sample from two d = 50
   dimensional Gaussians with identity covariance and means ±μ, μ = ρ θ / ‖θ‖₂, ρ = 1.75, θ
   binary; ν(θ) = fraction of zero entries ∈ {0, 44, 64, 82, 92, 98} % (50, 28, 18, 9, 4 and 1
   informative features). Each feature is one linear kernel (M = 50), multiplicatively
   normalised (unit variance in feature space, training statistics), passed as feature
   blocks (n, 1) that the solvers read at rank one. ℓp-norm MKL for
   p ∈ {1, 4/3, 2, 4, ∞} (∞: the SVM on the unweighted sum), hinge loss, relative duality gap
   1e-3; C chosen on an independent 10,000-point validation set over C ∈ 10^{-4, -3.5, …, 0};
   test error on an independent 10,000-point test set, and the model error
   ‖θ̂/‖θ̂‖₂ − θ/‖θ‖₂‖₂ of the learnt kernel weights; n = 50 and n = 800 training points. The
   paper draws 250 data sets per ν; we draw ``--reps`` (default 8 at n = 50, 1 at n = 800).
   ``MKLClassifier(kernels="precomputed", penalty="lp", p=p, solver="analytic")`` (Kloft's
   analytic algorithm) for every p: at p = 1 the default, mirror descent, stalls on these
   rank-one kernels (gap 5 at C = 1 after 3000 steps). The decision function on
   the 20,000 validation and test points is evaluated in the (linear) feature space from
   ``dual_coef_``: w_m = Σ_i A[m, i] z_im (checked against ``decision_function``).
2. Execution time (the paper's §5.5 and Figure 6): the paper's MNIST odd-vs-even task is not in
   our data; we use scikit-learn's bundled 8×8 digits (1797 points, odd vs even, pixels / 16)
   as ``benches/peers/lp_mkl_vs_peers.py`` does (beyond 1797 points, points repeat). Precomputed
   Gaussian kernels K_j = exp(−‖x − x'‖² / 1.2^(j−1)), j = 1, …, M, C = 1, relative gap 1e-3;
   (a) M = 50 and n growing, (b) n = 1000 and M growing (the paper goes to 10^4 kernels; a
   dense float64 stack of M = 1000 at n = 1000 takes 8 GB, so the default stops at M = 200).
   Ours at p ∈ {1, 4/3, 2, 3} (the paper's "direct" curves) against scikit-learn's
   ``SVC(kernel="precomputed", C=1)`` on the sum kernel (the paper's "SVM", there SVMlight),
   the summing of the stack outside and inside its timed call. At p = 1 also the analytic
   update (the paper's "1-norm direct"), capped at 100 iterations and run only while
   n·M ≤ 50,000: it crawls there, as the paper says of it. Each point: median of
   ``--repeats`` repeats in which every method runs in turn (ratios from the same moments).
3. Beyond n = 2000 (part ``ondemand``, the on-the-fly curves of Figure 6, top): the same 50
   Gaussian kernels and settings on ringnorm (Breiman's generator, 20 inputs: digits has only
   1797 distinct points), n from ``--on-demand-n`` (up to 7400 from the shared file, beyond
   that with fresh draws of the same generator). Ours: ``MKLClassifier(kernels=specs, p=p,
   cache_size=1024, n_threads=1)``, the kernels computed on demand (no (50, n, n) stack;
   ``solver="auto"``: mirror descent at p = 1, analytic for p > 1), against ``SVC`` on the
   precomputed sum kernel (one n × n matrix, its computation timed apart). One thread: run
   it with ``OMP_NUM_THREADS=1``. Run alone (``--parts ondemand``) it replaces its section of
   the existing page and keeps the rest.

Parts 1 and 2 use all cores of a 2-core shared machine: compare the ratios, not the seconds.

    python benches/papers/lp_norm_mkl.py            # default run (all three parts), ~25 minutes
    python benches/papers/lp_norm_mkl.py --quick    # smoke run, < 1 minute
    OMP_NUM_THREADS=1 python benches/papers/lp_norm_mkl.py --parts ondemand  # ~15 minutes

Options: ``--reps`` / ``--reps-large`` (toy data sets at n = 50 / n = 800), ``--max-n``
(largest n of the timing, default 1000; the results page used 2000), ``--max-m`` (largest M,
default 200), ``--repeats`` (timing repeats, default 3), ``--parts`` (``toy``, ``time`` or
both), ``--on-demand-n`` (part 3's numbers of points), ``--slow`` (part 3: a method whose first
run takes longer runs once), ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
from numpy.typing import NDArray  # noqa: E402
from scipy.stats import norm  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.metrics.pairwise import euclidean_distances  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import multikernel as mk  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
from _common import ANALYSIS_HEADING, timed_in_turn, write_page  # noqa: E402
from _timing import paired_median_times  # noqa: E402
from reference import DATA_DIR, load_dataset  # noqa: E402

FloatArray = NDArray[np.float64]

# ---------------------------------------------------------------- 1. toy experiment

D = 50
RHO = 1.75
NU_PERCENT = (0, 44, 64, 82, 92, 98)
P_TOY = (1.0, 4.0 / 3.0, 2.0, 4.0, math.inf)
C_GRID = tuple(10.0**e for e in np.arange(-4.0, 0.01, 0.5))
N_EVAL = 10_000
TOL_TOY = 1e-3
BAYES_ERROR = float(norm.cdf(-RHO))
MAX_ITER_TOY = 2000
#: Toy fits that stopped before the tolerance, per n.
NOT_CONVERGED: dict[int, int] = {50: 0, 800: 0}

PAPER_MACHINE = (
    "not stated in the paper (JMLR 2011; SHOGUN implementations, SVMlight as the SVM solver)"
)
PAPER_TOY = (
    '"ℓ1 performs best and reaches the Bayes error in the sparse scenario, where only a single '
    "kernel carries the whole discriminative information of the learning problem. However, in "
    "the other scenarios it mostly performs worse than the other MKL variants. [...] the vanilla "
    "SVM using an unweighted sum kernel performs best when all kernels are equally informative, "
    "however, its performance does not approach the Bayes error rate. [...] The non-sparse ℓ4- "
    "and ℓ2-norm MKL variants perform best in the balanced scenarios, i.e., when the noise level "
    "is ranging in the interval 64%-92%. Intuitively, the non-sparse ℓ4-norm MKL is the most "
    'robust MKL variant, achieving a test error of less than 10% in all scenarios." (n = 50); '
    '"When the sample size is increased to n = 800 training instances, test errors decrease '
    "significantly. Nevertheless, we still observe differences of up to 1% test error between "
    "the best (ℓ∞-norm MKL) and worst (ℓ1-norm MKL) prediction model in the two most non-sparse "
    'scenarios. Note that all ℓp-norm MKL variants perform well in the sparse scenarios." '
    "Its Figure 2 plots test errors between about 0.04 and 0.22 (Bayes error drawn as a line) "
    "and model errors between 0 and 1.4, without numbers in the text."
)


def p_label(p: float) -> str:
    return {1.0: "1", 4.0 / 3.0: "4/3", 2.0: "2", 3.0: "3", 4.0: "4", math.inf: "∞ (SVM)"}[p]


def toy_sample(
    n: int, theta: FloatArray, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """A balanced sample of the two Gaussians N(±μ, I), μ = ρ θ / ‖θ‖₂."""
    mu = RHO * theta / np.linalg.norm(theta)
    y = np.where(np.arange(n) < n // 2, 1.0, -1.0)
    X = y[:, None] * mu[None, :] + rng.standard_normal((n, theta.size))
    return X, y


def toy_theta(nu_percent: int) -> FloatArray:
    theta = np.zeros(D)
    theta[: D - round(D * nu_percent / 100)] = 1.0
    return theta


def linear_weights(clf: mk.MKLClassifier, Z: FloatArray) -> FloatArray:
    """w with f(x) = z(x)·w + b for one linear kernel per (scaled) feature."""
    A = np.asarray(clf.dual_coef_)
    return np.einsum("mi,im->m", A, Z)


def toy_run(
    n: int, reps: int, seed: int, check: bool
) -> dict[tuple[int, float], tuple[list[float], list[float], list[float]]]:
    """(ν, p) → (test errors, model errors, chosen C) over ``reps`` data sets."""
    out: dict[tuple[int, float], tuple[list[float], list[float], list[float]]] = {}
    rng = np.random.default_rng(seed)
    for nu in NU_PERCENT:
        theta = toy_theta(nu)
        zeta = theta / np.linalg.norm(theta)
        for _ in range(reps):
            X, y = toy_sample(n, theta, rng)
            Xv, yv = toy_sample(N_EVAL, theta, rng)
            Xt, yt = toy_sample(N_EVAL, theta, rng)
            # Multiplicative normalisation of the linear kernel x_m x'_m: divide by its variance
            # in feature space on the training points, i.e. scale the feature by its sd.
            sd = X.std(axis=0)
            sd[sd == 0.0] = 1.0
            Z, Zv, Zt = X / sd, Xv / sd, Xt / sd
            # One rank-one linear kernel per feature, given as feature blocks (n, 1): the
            # solvers read them at their rank (10-40x faster than the dense (50, n, n) stack
            # at n = 800, same solutions).
            blocks = [np.ascontiguousarray(Z[:, [m]]) for m in range(D)]
            for p in P_TOY:
                best: tuple[float, float, FloatArray, float] | None = None
                for C in C_GRID:
                    clf = mk.MKLClassifier(
                        kernels="precomputed", p=p, C=C, tol=TOL_TOY, max_iter=MAX_ITER_TOY,
                        solver="analytic",
                    )  # fmt: skip
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        clf.fit(blocks, y)
                    NOT_CONVERGED[n] += int(not clf.converged_)
                    w, b = linear_weights(clf, Z), float(clf.intercept_)
                    if check:
                        ref = clf.decision_function([Zt[:50, [m]] for m in range(D)])
                        assert np.allclose(Zt[:50] @ w + b, ref, atol=1e-8), "decision mismatch"
                    val_err = float(np.mean(np.sign(Zv @ w + b) != yv))
                    if best is None or val_err < best[0]:
                        me = model_error(np.asarray(clf.kernel_weights_, dtype=float), zeta)
                        best = (val_err, C, np.sign(Zt @ w + b), me)
                assert best is not None
                test_err = float(np.mean(best[2] != yt))
                errs, mes, cs = out.setdefault((nu, p), ([], [], []))
                errs.append(test_err)
                mes.append(best[3])
                cs.append(best[1])
        print(f"  toy n = {n}: ν = {nu} % done", flush=True)
    return out


def model_error(weights: FloatArray, zeta: FloatArray) -> float:
    w = np.abs(weights)
    if not np.all(np.isfinite(w)) or w.sum() == 0.0:
        w = np.ones_like(zeta)
    return float(np.linalg.norm(w / np.linalg.norm(w) - zeta))


def toy_tables(
    n: int, res: dict[tuple[int, float], tuple[list[float], list[float], list[float]]]
) -> list[str]:
    reps = len(next(iter(res.values()))[0])
    head = " | ".join(f"p = {p_label(p)}" for p in P_TOY)
    sep = "|---" * (len(P_TOY) + 1) + "|"
    lines = [
        f"### n = {n} training points ({reps} data sets per ν; mean ± sd)",
        "",
        f"Test error (Bayes error {BAYES_ERROR:.3f}):",
        "",
        f"| ν (noise kernels) | {head} |",
        sep,
    ]
    for nu in NU_PERCENT:
        cells = []
        means = [statistics.mean(res[(nu, p)][0]) for p in P_TOY]
        for p, m in zip(P_TOY, means, strict=True):
            e = res[(nu, p)][0]
            sd = statistics.stdev(e) if len(e) > 1 else 0.0
            txt = f"{m:.3f} ± {sd:.3f}"
            cells.append(f"**{txt}**" if m == min(means) else txt)
        lines.append(f"| {nu} % | " + " | ".join(cells) + " |")
    lines += ["", "Model error ‖θ̂/‖θ̂‖₂ − θ/‖θ‖₂‖₂:", "", f"| ν | {head} |", sep]
    for nu in NU_PERCENT:
        lines.append(
            f"| {nu} % | "
            + " | ".join(f"{statistics.mean(res[(nu, p)][1]):.2f}" for p in P_TOY)
            + " |"
        )
    lines += [
        "",
        f"Fits (all p, ν, C and data sets) that stopped at max_iter = {MAX_ITER_TOY} before the "
        f"tolerance: {NOT_CONVERGED[n]} of {len(NU_PERCENT) * len(P_TOY) * len(C_GRID) * reps}.",
    ]
    lines += ["", "Chosen C (median over data sets; grid 1e-4 … 1):", "", f"| ν | {head} |", sep]
    for nu in NU_PERCENT:
        lines.append(
            f"| {nu} % | "
            + " | ".join(f"{statistics.median(res[(nu, p)][2]):.2g}" for p in P_TOY)
            + " |"
        )
    return lines + [""]


def toy_figure(
    results: dict[int, dict[tuple[int, float], tuple[list[float], list[float], list[float]]]],
    path: Path,
) -> None:
    """The paper's Figure 2 layout: rows n, columns test error and model error."""
    fig, axes = plt.subplots(
        len(results), 2, figsize=(8.5, 3.0 * len(results)), squeeze=False, layout="constrained"
    )
    x = np.arange(len(NU_PERCENT))
    for row, (n, res) in enumerate(results.items()):
        ax_e, ax_m = axes[row]
        for p in P_TOY:
            ax_e.plot(x, [statistics.mean(res[(nu, p)][0]) for nu in NU_PERCENT], marker="o",
                      label=f"p = {p_label(p)}")  # fmt: skip
            ax_m.plot(x, [statistics.mean(res[(nu, p)][1]) for nu in NU_PERCENT], marker="o")
        ax_e.axhline(BAYES_ERROR, color="k", ls="--", lw=0.8, label="Bayes error")
        for ax in (ax_e, ax_m):
            ax.set_xticks(x, [str(nu) for nu in NU_PERCENT])
            ax.set_xlabel("ν(θ) = fraction of noise kernels [%]")
        ax_e.set_ylabel(f"test error (n = {n})")
        ax_m.set_ylabel(f"model error Δθ (n = {n})")
    axes[0][0].legend(fontsize=7)
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---------------------------------------------------------------- 2. execution time

#: (label, p, solver) of our timed fits: at p = 1 both the solver of ``solver="auto"``
#: (mirror descent) and Kloft's analytic update (the paper's "1-norm direct").
P_TIME = (
    ("1 (mirror)", 1.0, "auto"),
    ("1 (analytic)", 1.0, "analytic"),
    ("4/3", 4.0 / 3.0, "auto"),
    ("2", 2.0, "auto"),
    ("3", 3.0, "auto"),
)
TOL_TIME = 1e-3
#: The analytic update at p = 1 crawls (no convergence guarantee there, as the paper says):
#: capped, its final gap reported.
MAX_ITER_ANALYTIC_P1 = 100
ANALYTIC_P1_MAX_NM = 50 * 1000
PAPER_TIME = (
    "Figure 6 (log-log plots, no numbers in the text): training time of 1- to 3-norm MKL "
    '("direct" = the analytic algorithm, SIP, SILP, SimpleMKL, HessianMKL) and of the SVM on '
    "the unweighted-sum kernel, on MNIST odd vs even, 50 precomputed kernels and n from about "
    "10² to 10⁴ (top), and n = 1000 with 10 to 10⁴ kernels (bottom). What the text states: "
    '"As expected, the SVM with the unweighted-sum kernel using precomputed kernel matrices is '
    'the fastest method." [...] "Non-sparse MKL scales similarly as ℓ1-norm SILP for both '
    'optimization strategies" [...] (against M) "the SVM with the unweighted-sum kernel is '
    "hardly affected by this setup, taking an essentially constant training time. [...] The "
    "sparse analytical method performs worse than its non-sparse counterpart; this might be "
    "related to the fact that convergence of the analytical method is only guaranteed for "
    'p > 1." [...] "performing MKL with 1,000 precomputed kernel matrices of size 1,000 times '
    '1,000 requires less than 3 minutes for the SILP."'
)


def digits(n: int, seed: int = 0) -> tuple[FloatArray, FloatArray]:
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    idx = np.resize(np.random.default_rng(seed).permutation(len(y)), n)
    return X[idx], np.where(y[idx] % 2 == 1, 1.0, -1.0)


def kloft_stack(X: FloatArray, M: int) -> FloatArray:
    # exp(−d²/w) = exp(−d²/(2σ²)) with σ = sqrt(w/2), w = 1.2^(j−1).
    specs = [mk.kernels.Gaussian(sigma=math.sqrt(1.2 ** (j - 1) / 2.0)) for j in range(1, M + 1)]
    return mk.kernels.gram(X, specs)


def time_point(n: int, M: int, repeats: int) -> dict[str, Any]:
    """Median fit times (paired repeats) of ours at every p and of SVC on the sum kernel; the
    analytic update at p = 1 only while n·M ≤ ``ANALYTIC_P1_MAX_NM`` (it crawls)."""
    specs = [s for s in P_TIME if s[0] != "1 (analytic)" or n * M <= ANALYTIC_P1_MAX_NM]
    X, y = digits(n)
    G = kloft_stack(X, M)
    K = G.sum(axis=0)
    fits: dict[str, mk.MKLClassifier] = {}

    def ours(label: str, p: float, solver: str) -> Callable[[], Any]:
        def run() -> Any:
            max_iter = MAX_ITER_ANALYTIC_P1 if (p == 1.0 and solver == "analytic") else 500
            clf = mk.MKLClassifier(
                kernels="precomputed", p=p, C=1.0, tol=TOL_TIME, max_iter=max_iter, solver=solver
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits[label] = clf.fit(G, y)

        return run

    calls = [ours(*spec) for spec in specs] + [
        lambda: SVC(kernel="precomputed", C=1.0).fit(K, y),
        lambda: SVC(kernel="precomputed", C=1.0).fit(G.sum(axis=0), y),
    ]
    timed = paired_median_times(calls, repeats)
    row: dict[str, Any] = {
        spec[0]: t for spec, (t, _) in zip(specs, timed[: len(specs)], strict=True)
    }
    row["SVC"] = timed[-2][0]
    row["SVC + sum"] = timed[-1][0]
    row["gap"] = {k: float(c.duality_gap_) for k, c in fits.items()}
    row["iters"] = {k: int(c.n_iter_) for k, c in fits.items()}
    row["converged"] = {k: bool(c.converged_) for k, c in fits.items()}
    return row


def time_table(rows: dict[int, dict[str, Any]], key: str) -> list[str]:
    labels = [spec[0] for spec in P_TIME]
    head = " | ".join(f"p = {lb} (s)" for lb in labels)
    ratios = " | ".join(f"p = {lb} / SVC" for lb in labels)
    lines = [
        f"| {key} | {head} | SVC (s) | SVC + sum (s) | {ratios} | "
        f"iterations ({', '.join(labels)}) |"
    ]
    lines.append("|---" * (2 * len(labels) + 4) + "|")
    for k, r in rows.items():
        times = " | ".join(f"{r[lb]:.3g}" if lb in r else "–" for lb in labels)
        rat = " | ".join(f"{r[lb] / r['SVC']:.3g}" if lb in r else "–" for lb in labels)
        its = " / ".join(str(r["iters"][lb]) if lb in r else "–" for lb in labels)
        lines.append(f"| {k} | {times} | {r['SVC']:.3g} | {r['SVC + sum']:.3g} | {rat} | {its} |")
    gaps = [g for r in rows.values() for lb, g in r["gap"].items() if r["converged"][lb]]
    lines += ["", f"Largest final relative gap of the converged fits: {max(gaps):.2g}."]
    for label in labels:
        missed = [k for k, r in rows.items() if not r["converged"].get(label, True)]
        if missed:
            gaps = ", ".join(f"{rows[k]['gap'][label]:.2g}" for k in missed)
            lines.append(
                f"p = {label} stopped at max_iter before the tolerance at {key} = "
                f"{', '.join(map(str, missed))} (final relative gaps {gaps})."
            )
    return lines + [""]


def time_figure(
    by_n: dict[int, dict[str, Any]], by_m: dict[int, dict[str, Any]], n_m: int, path: Path
) -> None:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.5, 3.3), layout="constrained")
    labels = [spec[0] for spec in P_TIME] + ["SVC"]
    for lb in labels:
        name = "SVM (SVC, sum kernel)" if lb == "SVC" else f"p = {lb} (ours)"
        if by_n:
            pts = [(k, r[lb]) for k, r in by_n.items() if lb in r]
            ax1.loglog(*zip(*pts, strict=True), marker="o", label=name)
        if by_m:
            pts = [(k, r[lb]) for k, r in by_m.items() if lb in r]
            ax2.loglog(*zip(*pts, strict=True), marker="o", label=name)
    for ax, keys in ((ax1, list(by_n)), (ax2, list(by_m))):
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(keys, [str(k) for k in keys])
    ax1.set_xlabel("training examples n (M = 50)")
    ax2.set_xlabel(f"number of kernels M (n = {n_m})")
    ax1.set_ylabel("training time (s), median")
    ax1.set_title("50 precomputed kernels", fontsize=9)
    ax2.set_title(f"{n_m} examples, M precomputed kernels", fontsize=9)
    ax1.legend(fontsize=7)
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---------------------------------------------------------------- 3. kernels computed on demand

#: (label, p) of our on-demand fits, all with ``solver="auto"``: mirror descent at p = 1, the
#: analytic algorithm for p > 1.
P_ON_DEMAND = (("1 (mirror)", 1.0), ("4/3", 4.0 / 3.0), ("2", 2.0), ("3", 3.0))
M_ON_DEMAND = 50
#: Megabytes of kernel values an on-demand fit may hold (``cache_size=``): the automatic
#: mode's default.
CACHE_MB = 1024.0
RINGNORM_N = 7400
#: Breiman's ringnorm: class −1 ~ N(0, 4 I), class +1 ~ N(a 1, I), a = 2 / sqrt(20).
RINGNORM_A = 2.0 / math.sqrt(20.0)
PAPER_ON_THE_FLY = (
    "The paper's Figure 6 (top) goes to about 2·10⁴ training examples with 50 kernels: "
    'precomputed kernels to n = 8000 ("50 kernel matrices of size 8,000 times 8,000 (memory '
    'requirements about 24GB for double precision numbers)", where "SimpleMKL is the slowest '
    'method: it is more than 120 times slower than the ℓ1-norm SILP solver"), and beyond that '
    '"kernel caching and interleaved optimization still allow to train our algorithm on '
    "kernel matrices of size 20000 × 20000, which would usually not completely fit into "
    'memory since they require about 149GB". Its on-the-fly curves ("2-norm direct '
    'on-the-fly", "SVM on-the-fly", "1-/2-norm SIP on-the-fly") include the kernel '
    'computations: "runtimes of on-the-fly methods should be expected to be higher than the '
    'ones of the precomputed counterparts", and the classical wrappers (SimpleMKL, SILP '
    'wrapper) "are even slower than methods that compute kernels on-the-fly". Error bars: '
    "standard error over 5 repetitions; the y axis spans 10⁰ to 10⁴ s; no numbers in the text. "
    "JMLR 2011, SHOGUN, SVMlight inside; the machine is not stated."
)


def ringnorm(n: int, seed: int = 0) -> tuple[FloatArray, FloatArray]:
    """``n`` ringnorm points, standardised: a stratified subset of the shared file's 7400 for
    ``n ≤ 7400``; beyond, all 7400 and ``n − 7400`` fresh draws of Breiman's generator
    (balanced classes, ``default_rng(seed + 1)``), standardised together."""
    if n <= RINGNORM_N:
        X, y = load_dataset("ringnorm", n=n, seed=seed)
        return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    raw = np.loadtxt(DATA_DIR / "ringnorm.csv", delimiter=",", skiprows=1)
    X0, y0 = raw[:, :-1], np.where(raw[:, -1] == 1.0, 1.0, -1.0)
    rng = np.random.default_rng(seed + 1)
    k = n - RINGNORM_N
    y1 = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    X1 = np.where(
        y1[:, None] > 0,
        RINGNORM_A + rng.standard_normal((k, X0.shape[1])),
        2.0 * rng.standard_normal((k, X0.shape[1])),
    )
    X = np.vstack([X0, X1])
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), np.concatenate([y0, y1])


def kloft_specs(M: int) -> list[mk.kernels.Kernel]:
    return [mk.kernels.Gaussian(sigma=math.sqrt(1.2 ** (j - 1) / 2.0)) for j in range(1, M + 1)]


def sum_kernel(X: FloatArray, M: int) -> FloatArray:
    """Σ_j exp(−‖x − x'‖² / 1.2^(j−1)) without the (M, n, n) stack: one n × n matrix (and one
    of squared distances, one of scratch)."""
    D = np.asarray(euclidean_distances(X, squared=True), dtype=np.float64)
    K = np.zeros_like(D)
    tmp = np.empty_like(D)
    for j in range(1, M + 1):
        np.multiply(D, -1.0 / 1.2 ** (j - 1), out=tmp)
        np.exp(tmp, out=tmp)
        K += tmp
    return K


def on_demand_point(n: int, repeats: int, slow: float) -> dict[str, Any]:
    """Times (in turn within each repeat, medians) of our on-demand fits at every p of
    ``P_ON_DEMAND``, of the sum kernel's computation and of SVC on it, on ``n`` ringnorm
    points; one thread everywhere."""
    X, y = ringnorm(n)
    specs = kloft_specs(M_ON_DEMAND)
    holder: dict[str, FloatArray] = {}

    def ours(p: float) -> Callable[[], mk.MKLClassifier]:
        def run() -> mk.MKLClassifier:
            clf = mk.MKLClassifier(
                kernels=specs, p=p, C=1.0, tol=TOL_TIME, max_iter=500, normalize="none",
                cache_size=CACHE_MB, n_threads=1,
            )  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return clf.fit(X, y)

        return run

    def kernel() -> None:
        holder["K"] = sum_kernel(X, M_ON_DEMAND)

    def svc() -> SVC:
        return SVC(kernel="precomputed", C=1.0).fit(holder["K"], y)

    calls: list[Callable[[], Any]] = [ours(p) for _, p in P_ON_DEMAND] + [kernel, svc]
    timed = timed_in_turn(calls, repeats, slow)
    holder.clear()
    row: dict[str, Any] = {"stack GB": 8.0 * M_ON_DEMAND * n * n / 1e9}
    for (label, _), (t, runs, clf) in zip(P_ON_DEMAND, timed[:-2], strict=True):
        row[label] = t
        row.setdefault("runs", {})[label] = runs
        row.setdefault("gap", {})[label] = float(clf.duality_gap_)
        row.setdefault("iters", {})[label] = int(clf.n_iter_)
        row.setdefault("converged", {})[label] = bool(clf.converged_)
        row.setdefault("sv", {})[label] = int(np.count_nonzero(np.abs(clf.dual_coef_).sum(0)))
    row["kernel"], row["SVC"] = timed[-2][0], timed[-1][0]
    row["runs"]["SVC"] = timed[-1][1]
    row["sv"]["SVC"] = int(timed[-1][2].support_.size)
    return row


def on_demand_table(rows: dict[int, dict[str, Any]]) -> list[str]:
    labels = [lb for lb, _ in P_ON_DEMAND]
    lines = [
        "| n | dense stack (GB) | "
        + " | ".join(f"p = {lb} (s)" for lb in labels)
        + " | sum kernel (s) | SVC (s) | "
        + " | ".join(f"p = {lb} / SVC" for lb in labels)
        + " | "
        + " | ".join(f"p = {lb} / (kernel + SVC)" for lb in labels)
        + " | runs |",
        "|---" * (3 * len(labels) + 5) + "|",
    ]
    for n, r in rows.items():
        both = r["kernel"] + r["SVC"]
        lines.append(
            f"| {n} | {r['stack GB']:.3g} | "
            + " | ".join(f"{r[lb]:.3g}" for lb in labels)
            + f" | {r['kernel']:.3g} | {r['SVC']:.3g} | "
            + " | ".join(f"{r[lb] / r['SVC']:.3g}" for lb in labels)
            + " | "
            + " | ".join(f"{r[lb] / both:.3g}" for lb in labels)
            + f" | {min(r['runs'].values())}–{max(r['runs'].values())} |"
        )
    lines += [
        "",
        "Certificates and sizes (relative duality gap reached, outer iterations, support "
        "vectors; SVC: its support vectors):",
        "",
        "| n | " + " | ".join(f"p = {lb}: gap / iterations / SV" for lb in labels) + " | SVC SV |",
        "|---" * (len(labels) + 2) + "|",
    ]
    for n, r in rows.items():
        cells = []
        for lb in labels:
            mark = "" if r["converged"][lb] else " (not converged)"
            cells.append(f"{r['gap'][lb]:.1e}{mark} / {r['iters'][lb]} / {r['sv'][lb]}")
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {r['sv']['SVC']} |")
    return lines + [""]


def on_demand_figure(rows: dict[int, dict[str, Any]], path: Path) -> None:
    """Figure 6 (top)'s layout: log-log training time against n, 50 kernels."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6), layout="constrained")
    ns = list(rows)
    for lb, _ in P_ON_DEMAND:
        ax.loglog(ns, [rows[n][lb] for n in ns], marker="o", label=f"p = {lb}, ours on demand")
    ax.loglog(ns, [rows[n]["kernel"] + rows[n]["SVC"] for n in ns], marker="s", color="k",
              label="SVM: sum kernel + SVC")  # fmt: skip
    ax.loglog(ns, [rows[n]["SVC"] for n in ns], marker="s", ls="--", color="grey",
              label="SVM: SVC on the precomputed sum")  # fmt: skip
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_xlabel("training examples n (ringnorm, M = 50)")
    ax.set_ylabel("training time (s), median")
    ax.set_title("50 kernels computed on demand, one thread", fontsize=9)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def on_demand_section(
    rows: dict[int, dict[str, Any]], stem: str, command: str, minutes: float, repeats: int
) -> list[str]:
    big = [n for n in rows if n > RINGNORM_N]
    return [
        "## 3. Beyond n = 2000: kernels computed on demand (the paper's Figure 6, top, "
        "on-the-fly curves)",
        "",
        f"Command: `{command}` ({datetime.date.today().isoformat()}, {minutes:.1f} min, one "
        "core: `OMP_NUM_THREADS=1`, `n_threads=1`).",
        "",
        "Data: ringnorm (Breiman's generator, 20 inputs, the shared `../shared/data/"
        "ringnorm.csv`, standardised), not digits: digits has 1797 distinct points, so a "
        "larger n only repeats them (and at n = 2000 the repeats stalled mirror descent, "
        f"section 2). Up to {RINGNORM_N} the points are a stratified subset of the file"
        + (
            f"; n = {', '.join(map(str, big))} adds fresh draws of the same generator (class "
            "−1 ~ N(0, 4I), class +1 ~ N(a·1, I), a = 2/√20), standardised with the file's "
            "points"
            if big
            else ""
        )
        + ". Kernels as in section 2: M = 50 Gaussians exp(−‖x − x'‖² / 1.2^(j−1)), "
        "C = 1, hinge loss, relative gap 1e-3. Ours: `MKLClassifier(kernels=specs, p=p, "
        f'normalize="none", cache_size={CACHE_MB:g}, n_threads=1)` (Gaussians have a unit '
        "diagonal, so no normalisation is needed), which computes the kernels from X when "
        'the solver reads them and never stores the (50, n, n) stack; `solver="auto"` '
        "picks mirror descent at p = 1 and the analytic algorithm for p > 1; the times "
        'include every kernel evaluation. The SVM: scikit-learn\'s `SVC(kernel="precomputed",'
        " C=1)` on the sum kernel, which it needs stored (one n × n matrix); 'sum kernel' is "
        "computing it with numpy (squared distances, then 50 exponentials, one thread), the "
        "comparable of the paper's \"SVM on-the-fly\" being 'kernel + SVC'. The 'dense stack' "
        "column is the memory a precomputed float64 stack would take. Medians of "
        f"{repeats} repeats, the methods in turn within each (a method whose first run took "
        "more than the `--slow` threshold ran once: 'runs').",
        "",
        f"**The paper's figure.** {PAPER_ON_THE_FLY}",
        "",
        f"![training time against n, kernels on demand]({stem}_on_demand.png)",
        "",
        *on_demand_table(rows),
    ]


def splice_sections(path: Path, new: dict[str, list[str]]) -> list[str]:
    """The page at ``path`` (without its analysis) with the sections whose headings start with
    the keys of ``new`` replaced (or added after the last section): a part run on its own
    keeps the others' sections and the page's header."""
    old = path.read_text().split(ANALYSIS_HEADING, 1)[0].rstrip("\n").split("\n")
    blocks: list[list[str]] = [[]]
    for line in old:
        if line.startswith("## "):
            blocks.append([])
        blocks[-1].append(line)
    out = blocks[0]
    done: set[str] = set()
    for block in blocks[1:]:
        key = next((k for k in new if block[0].startswith(k)), None)
        if key is None:
            out += block
        else:
            out += new[key]
            done.add(key)
    for key, lines in new.items():
        if key not in done:
            out += lines
    return out


# ---------------------------------------------------------------- driver


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (< 1 minute)")
    ap.add_argument("--reps", type=int, default=8, help="toy data sets per ν at n = 50")
    ap.add_argument("--reps-large", type=int, default=1, help="toy data sets per ν at n = 800")
    ap.add_argument("--max-n", type=int, default=1000)
    ap.add_argument("--max-m", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parts", default="toy,time,ondemand")
    ap.add_argument(
        "--on-demand-n",
        default="1000,2000,4000,7400,14800",
        help="part ondemand's numbers of ringnorm points (beyond 7400: fresh draws)",
    )
    ap.add_argument("--slow", type=float, default=60.0, help="part ondemand: run once above")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.reps_large, args.repeats = 1, 0, 1
        args.max_n, args.max_m = min(args.max_n, 500), min(args.max_m, 50)
        args.on_demand_n = "500,1000"
    parts = args.parts.split(",")
    stem = "lp_norm_mkl_quick" if args.quick else "lp_norm_mkl"
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sections: dict[str, list[str]] = {}

    if "toy" in parts:
        toy: dict[int, dict[tuple[int, float], tuple[list[float], list[float], list[float]]]] = {}
        for n, reps in ((50, args.reps), (800, args.reps_large)):
            if reps > 0:
                toy[n] = toy_run(n, reps, args.seed + n, check=args.quick)
        toy_figure(toy, args.out / f"{stem}_toy.png")
        sections["## 1."] = [
            "## 1. Toy experiment: test error against the sparsity of the true weights "
            "(the paper's Figure 2)",
            "",
            f"Setting as the paper's §5.1: d = M = {D} linear kernels (one per feature, "
            f"multiplicatively normalised), ρ = {RHO}, ν ∈ {{{', '.join(map(str, NU_PERCENT))}}} "
            '% noise kernels, hinge loss, relative gap 1e-3 (`solver="analytic"` for every '
            "p: mirror descent, the default at p = 1, stalls on these rank-one kernels), C "
            "chosen on a 10,000-point "
            "validation set over 10^{-4, -3.5, …, 0}, test error on 10,000 points. The paper "
            "averages 250 data sets per ν; the numbers of data sets here are in the headings. "
            "Bold: the lowest mean test error of the row.",
            "",
            f"**The paper's results are plots only.** What it states: {PAPER_TOY}",
            "",
            f"![test and model error against ν]({stem}_toy.png)",
            "",
        ]
        for n, res in toy.items():
            sections["## 1."] += toy_tables(n, res)

    if "time" in parts:
        ns = [n for n in (250, 500, 1000, 2000, 4000, 8000) if n <= args.max_n]
        Ms = [m for m in (10, 20, 50, 100, 200, 500, 1000) if m <= args.max_m]
        by_n, by_m = {}, {}
        for n in ns:
            by_n[n] = time_point(n, 50, args.repeats)
            print(f"  time: n = {n}, M = 50 done", flush=True)
        n_m = min(1000, args.max_n)
        for M in Ms:
            by_m[M] = time_point(n_m, M, args.repeats)
            print(f"  time: n = {n_m}, M = {M} done", flush=True)
        time_figure(by_n, by_m, n_m, args.out / f"{stem}_time.png")
        sections["## 2."] = [
            "## 2. Execution time against n and M (the paper's Figure 6)",
            "",
            "Digits odd vs even (scikit-learn's bundled 8×8 digits, 1797 points, standing in "
            "for MNIST; larger n repeat points), precomputed Gaussian kernels "
            "exp(−‖x − x'‖² / 1.2^(j−1)), C = 1, relative gap 1e-3, hinge loss. Ours: "
            '`MKLClassifier(kernels="precomputed", p=p)` (analytic algorithm for p > 1; at '
            "p = 1 both mirror descent, the default, and the analytic update, the paper's "
            '"1-norm direct"; the input check, one read of the stack, included); SVC: '
            '`SVC(kernel="precomputed", C=1)` on the sum kernel, the summing outside ("SVC") '
            f'and inside ("SVC + sum") the timed call. Medians of {args.repeats} paired '
            "repeats.",
            "",
            f"**The paper's timings are plots only.** {PAPER_TIME}",
            "",
            f"![training time against n and M]({stem}_time.png)",
            "",
            "M = 50 kernels, n growing:",
            "",
            *time_table(by_n, "n"),
            f"n = {n_m}, M growing:",
            "",
            *time_table(by_m, "M"),
        ]

    command = "python benches/papers/lp_norm_mkl.py" + (" --quick" if args.quick else "")
    extra = [a for a in sys.argv[1:] if a != "--quick"]
    if extra:
        command += " " + " ".join(extra)
    if "ondemand" in parts:
        t_od = time.perf_counter()
        rows: dict[int, dict[str, Any]] = {}
        for n in (int(v) for v in args.on_demand_n.split(",")):
            rows[n] = on_demand_point(n, args.repeats, args.slow)
            print(f"  on demand: n = {n} done", flush=True)
        on_demand_figure(rows, args.out / f"{stem}_on_demand.png")
        minutes = (time.perf_counter() - t_od) / 60
        sections["## 3."] = on_demand_section(rows, stem, command, minutes, args.repeats)

    total = time.perf_counter() - t0
    path = args.out / f"{stem}.md"
    if path.exists() and not {"toy", "time"} <= set(parts):
        # A part run on its own: the page keeps its header and the other parts' sections.
        page = splice_sections(path, sections)
    else:
        page = [
            "# ℓp-norm MKL (Kloft, Brefeld, Sonnenburg & Zien, 2011): the paper's experiments, "
            "ours beside",
            "",
            f"- command: `{command}` ({total / 60:.1f} min in all)",
            f"- date: {datetime.date.today().isoformat()}",
            "- machine: 2-core shared machine (other jobs running): compare ratios measured in "
            "this run, not absolute seconds",
            f"- versions: multikernel {mk.__version__}, numpy {np.__version__}",
            f"- the paper's machine: {PAPER_MACHINE}",
            "",
            *(line for lines in sections.values() for line in lines),
        ]
    write_page(path, page)


if __name__ == "__main__":
    main()
