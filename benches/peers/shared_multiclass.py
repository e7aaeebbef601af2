"""One θ for all classes (``multi_class="shared"``) against one-vs-rest, issue 56.

Problem, as a new user would set it up: scikit-learn's digits (all 1 797 points, 10 classes),
features standardised (``StandardScaler``), five Gaussians of σ = √64 × (0.25, 0.5, 1, 2, 4)
(around the median heuristic of standardised features) and a linear kernel, the stack
computed once by ``mk.kernels.gram(..., normalize="mean_diag")`` (the estimators' default
normalisation) and passed as ``kernels="precomputed"``, so that the timings are the fits'
alone. C = 1, tol 1e-3, hinge and logistic; penalties ``lp`` p = 2 and 4/3, ``l1``,
``elasticnet`` (l1_ratio 0.5) and ``group`` (the Gaussians in one group, the linear kernel in
another). Reported: the median time of ``multi_class="shared"`` over that of
``multi_class="ovr"`` (the one-vs-rest fit, per-class weights), the two called in turn within
each repeat (``_timing.paired_median_times``).

BEFORE / AFTER in one run: ``--main PATH`` runs the same measurement in a second process
whose ``multikernel`` is imported from ``PATH`` (e.g. the main checkout's ``python`` folder,
the Python loop of ``_shared.py``); without it only this checkout is measured. ``--before
FILE`` reads that second process's JSON line (``--json`` mode) saved earlier instead.

    python benches/peers/shared_multiclass.py [--repeats 3] [--main PATH] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

CASES = [
    ("lp", {"penalty": "lp", "p": 2.0}),
    ("lp 4/3", {"penalty": "lp", "p": 4.0 / 3.0}),
    ("l1", {"penalty": "l1"}),
    ("elasticnet", {"penalty": "elasticnet", "l1_ratio": 0.5}),
    ("group", {"penalty": "group", "groups": [0, 0, 0, 0, 0, 1]}),
]


def measure(repeats: int) -> dict[str, object]:
    """The shared / one-vs-rest timings of this process's ``multikernel``."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    import multikernel as mk

    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    specs = [mk.kernels.Gaussian(sigma=8.0 * f) for f in (0.25, 0.5, 1.0, 2.0, 4.0)]
    G = mk.kernels.gram(X, [*specs, mk.kernels.Linear()], normalize="mean_diag")
    rows = {}
    for loss in ("hinge", "logistic"):
        for name, kw in CASES:

            def fit(mc: str, kw: dict[str, object] = kw, loss: str = loss) -> object:
                clf = mk.MKLClassifier(
                    kernels="precomputed", multi_class=mc, loss=loss, C=1.0, tol=1e-3,
                    max_iter=1000, **kw,
                )  # fmt: skip
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    clf.fit(G, y)
                gap = float(np.max(np.atleast_1d(clf.duality_gap_)))
                return gap, len(caught), float(clf.primal_objective_ if mc == "shared" else 0)

            (ts, rs), (to, _) = paired_median_times(
                [lambda: fit("shared"), lambda: fit("ovr")], repeats
            )
            rows[f"{loss} {name}"] = {"shared": ts, "ovr": to, "gap": rs[0], "warned": rs[1]}
            print(f"{loss:8s} {name:10s} shared {ts:7.2f}s ovr {to:7.2f}s ratio {ts / to:5.2f} "
                  f"gap {rs[0]:.1e} warnings {rs[1]}", flush=True)  # fmt: skip
    return {"module": mk.__file__, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--main", default=None)
    ap.add_argument("--before", default=None, help="a child's JSON line saved from --main's run")
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", action="store_true", help="print one JSON line (child mode)")
    a = ap.parse_args()
    if a.json:
        print(json.dumps(measure(a.repeats)))
        return
    after = measure(a.repeats)
    before = None
    if a.before is not None:
        before = json.loads(Path(a.before).read_text(encoding="utf-8").strip().splitlines()[-1])
    elif a.main is not None:
        env = dict(os.environ, PYTHONPATH=a.main)
        out = subprocess.run(
            [sys.executable, __file__, "--json", "--repeats", str(a.repeats)],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        before = json.loads(out.strip().splitlines()[-1])
    lines = [
        "| loss, penalty | shared (s) | ovr (s) | shared / ovr | gap | before: shared / ovr |",
        "|---|---|---|---|---|---|",
    ]
    for key, r in after["rows"].items():  # type: ignore[attr-defined]
        b = "" if before is None else before["rows"][key]
        was = "" if before is None else f"{b['shared'] / b['ovr']:.2f} ({b['shared']:.1f} s)"
        lines.append(
            f"| {key} | {r['shared']:.2f} | {r['ovr']:.2f} | {r['shared'] / r['ovr']:.2f} | "
            f"{r['gap']:.1e} | {was} |"
        )
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
