"""Linear kernel specifications against the same kernels given as a FeatureBank (issue 53):
``kernels=[Linear(features=g), …]`` under ``solver="auto"`` is fitted in feature space, on
the blocks ``sqrt(s_m) X[:, g]``, as the FeatureBank of the same specifications is; before,
the specifications took the n² kernel path.

Data: 100 standard normal features in 20 groups of 5, 15 informative; classification
``y = sign(Xw + 0.5ε)`` (logistic loss), regression ``y = Xw + 0.5ε`` (squared loss); both
inputs with the default ``normalize="mean_diag"``; C = 1, tol 1e-3, ``penalty="l1"`` and
``"lp"`` (p = 2). The two fits are called in turn within each repeat (medians of
``--repeats``); the table reports both times, their ratio, the solver each fit ran (the engine
calls counted) and the relative difference of the certified primal values. With
``--kernel-path`` the specifications are also fitted once on the stored stack, by the solver
``auto`` picked for them before (``wrapper`` for l1, ``analytic`` for lp, named).

    python benches/peers/linear_specs.py [--sizes 5000] [--repeats 3] [--kernel-path]
        [--out benches/peers/results/linear_specs.md]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _timing import paired_median_times
from numpy.typing import NDArray

import multikernel as mk
from multikernel import _core
from multikernel.kernels import FeatureBank, Linear

FloatArray = NDArray[np.float64]
SPECS = [Linear(features=list(range(k, k + 5))) for k in range(0, 100, 5)]
CASES = [("l1", "logistic"), ("l1", "squared"), ("lp", "logistic"), ("lp", "squared")]


def data(n: int, regression: bool) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 100))
    w = np.zeros(100)
    w[:15] = rng.normal(size=15)
    t = X @ w + 0.5 * rng.normal(size=n)
    return X, (t if regression else np.where(t > 0, 1.0, -1.0))


def fit(X: FloatArray, y: FloatArray, penalty: str, loss: str, kernels: Any, **kw: Any) -> Any:
    est: Any = mk.MKLRegressor if loss == "squared" else mk.MKLClassifier
    return est(kernels=kernels, penalty=penalty, loss=loss, C=1.0, tol=1e-3, **kw).fit(X, y)


def solver_of(f: Any) -> str:
    """The engine solvers a call of ``f`` ran (``_core.fit`` counted)."""
    calls: list[str] = []
    real = _core.fit

    def spy(settings: _core.Settings, *args: Any, **kwargs: Any) -> Any:
        calls.append(settings.solver)
        return real(settings, *args, **kwargs)

    _core.fit = spy  # type: ignore[assignment]
    try:
        f()
    finally:
        _core.fit = real  # type: ignore[assignment]
    return "+".join(calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kernel-path", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    head = "| penalty | loss | n | specs s | FeatureBank s | specs / bank | solvers | ΔP/P |"
    rows = [head, "|---|---|---|---|---|---|---|---|"]
    if args.kernel_path:
        rows[0] += " kernel path s (1 run) |"
        rows[1] += "---|"
    print("\n".join(rows), flush=True)
    for n in [int(s) for s in args.sizes.split(",")]:
        for penalty, loss in CASES:
            X, y = data(n, loss == "squared")
            specs = partial(fit, X, y, penalty, loss, SPECS)
            bank = partial(fit, X, y, penalty, loss, FeatureBank(SPECS))
            (t_s, m_s), (t_b, m_b) = paired_median_times([specs, bank], args.repeats)
            solvers = f"{solver_of(specs)} / {solver_of(bank)}"
            dp = (m_s.primal_objective_ - m_b.primal_objective_) / m_b.primal_objective_
            row = (
                f"| {penalty} | {loss} | {n} | {t_s:.4f} | {t_b:.4f} | **{t_s / t_b:.2f}×** | "
                f"{solvers} | {dp:+.1e} |"
            )
            if args.kernel_path:
                named = "wrapper" if penalty == "l1" else "analytic"
                t = time.perf_counter()
                fit(X, y, penalty, loss, SPECS, solver=named)
                row += f" {time.perf_counter() - t:.2f} ({named}) |"
            rows.append(row)
            print(row, flush=True)
    if args.out:
        cmd = " ".join(["python", "benches/peers/linear_specs.py", *sys.argv[1:]])
        text = (
            "# Linear specifications against the same kernels as a FeatureBank\n\n"
            f"    {cmd}\n\n"
            f"multikernel {mk.__version__}, {platform.machine()}; medians of {args.repeats} in "
            "one run, the two fits called in turn; 100 standard normal features in 20 groups "
            'of 5 (`Linear(features=g)`), `normalize="mean_diag"`, C = 1, tol 1e-3.\n\n'
            + "\n".join(rows)
            + "\n"
        )
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
