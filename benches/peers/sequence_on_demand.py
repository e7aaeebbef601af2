"""An MKL fit on many sequences with a bank of spectrum and weighted-degree kernels computed on
demand: its time, peak memory and certificate.

``n`` random DNA sequences of length ``L`` (default 20 000 of 60), labelled by a planted motif
(``TATAAT`` at positions 20–25, with 10 % of the labels flipped); the bank is ``Spectrum(k)``,
k = 2, 3, 4 and ``WeightedDegree(degree=8)``, cosine-normalised, fitted by
``MKLClassifier(penalty="lp", tol=1e-3, cache_size=...)``, so that no ``(M, n, n)`` stack is
stored (it would take 4 · n² · 8 bytes = 12.8 GB at n = 20 000). Printed: the fit's wall time,
the extra peak resident memory of the process during the fit (``VmHWM`` reset before it,
``_memory.peak_extra_mb``), the duality gap and the kernel weights.

    python benches/peers/sequence_on_demand.py [--n 20000] [--length 60] [--cache-mb 512]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import multikernel as mk
from multikernel.kernels import Spectrum, WeightedDegree

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import peak_extra_mb  # noqa: E402


def problem(n: int, length: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)[rng.integers(0, 4, (n, length))]
    y = rng.integers(0, 2, n)
    letters[y == 1, 20:26] = np.frombuffer(b"TATAAT", dtype=np.uint8)
    y = np.where(rng.random(n) < 0.1, 1 - y, y)
    return [row.tobytes().decode() for row in letters], y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--length", type=int, default=60)
    ap.add_argument("--cache-mb", type=int, default=512)
    args = ap.parse_args()
    seqs, y = problem(args.n, args.length)
    specs = [Spectrum(2), Spectrum(3), Spectrum(4), WeightedDegree(degree=8)]
    clf = mk.MKLClassifier(
        kernels=specs, penalty="lp", normalize="spherical", tol=1e-3,
        cache_size=args.cache_mb,
    )  # fmt: skip
    seconds, extra_mb, _ = peak_extra_mb(lambda: clf.fit(seqs, y))
    print(
        f"n = {args.n}, length {args.length}, {len(specs)} kernels on demand "
        f"(cache {args.cache_mb} MB), {os.cpu_count()} cores"
    )
    print(
        f"fit {seconds:.1f} s, extra peak memory {extra_mb:.0f} MB, on demand "
        f"{clf._on_demand}, converged {clf.converged_}, gap {clf.duality_gap_:.2e}, "
        f"weights {np.round(clf.kernel_weights_, 3)}"
    )
    print(f"training accuracy (first 2000): {clf.score(seqs[:2000], y[:2000]):.3f}")


if __name__ == "__main__":
    main()
