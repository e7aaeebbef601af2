"""An l1 MKL fit on sequences through the exact sparse features of the spectrum kernels
(``FeatureBank``), against the Gram path where a Gram fits.

``n`` random DNA sequences of length ``L`` (default 100), labelled by a planted motif
(``TATAAT`` at a random position in the positive class, 10 % of the labels flipped); the bank
is ``FeatureBank([Spectrum(k) for k in ks])``, default k = 3..6 (sparse CSR blocks of k-mer counts,
``mean_diag`` scales), fitted by ``MKLClassifier(penalty="l1", loss="logistic",
solver="prox_newton", tol=1e-3)``. Printed per ``n``: the wall time of the fit (features
included) and of the features alone, the extra peak resident memory of the fit
(``_memory.peak_extra_mb``: ``VmHWM`` reset before it), the nonzeros and widths of the blocks,
the duality gap, and the accuracy on 2 000 held-out sequences. With ``--gram`` (``n`` at most
20 000), the Gram path on the same data: ``gram(seqs, specs, normalize="mean_diag")`` and
``MKLClassifier(kernels="precomputed", penalty="l1", loss="logistic", tol=1e-3)`` (auto
solver) on the stack, its time, memory and accuracy.

    python benches/peers/sequence_features.py [--n 10000 100000] [--length 100]
        [--ks 3 4 5 6] [--gram]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import multikernel as mk
from multikernel.kernels import FeatureBank, KernelBank, Spectrum, gram

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import peak_extra_mb  # noqa: E402

TEST = 2000


def problem(n: int, length: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)[rng.integers(0, 4, (n, length))]
    y = rng.integers(0, 2, n)
    at = rng.integers(0, length - 6, n)
    for i in np.flatnonzero(y == 1):
        letters[i, at[i] : at[i] + 6] = np.frombuffer(b"TATAAT", dtype=np.uint8)
    y = np.where(rng.random(n) < 0.1, 1 - y, y)
    return [row.tobytes().decode() for row in letters], y


def features_run(
    ks: list[int], seqs: list[str], y: np.ndarray, test: list[str], y_test: np.ndarray
) -> None:
    specs = [Spectrum(k) for k in ks]
    t = time.perf_counter()
    blocks = FeatureBank(specs).fit_transform(seqs)
    feat_s = time.perf_counter() - t
    nnz = [B.nnz for B in blocks]
    widths = [B.shape[1] for B in blocks]
    del blocks
    clf = mk.MKLClassifier(
        kernels=FeatureBank(specs), penalty="l1", loss="logistic", solver="prox_newton", tol=1e-3
    )
    seconds, extra_mb, _ = peak_extra_mb(lambda: clf.fit(seqs, y))
    print(
        f"  features: fit {seconds:.1f} s (features alone {feat_s:.1f} s), extra peak "
        f"{extra_mb:.0f} MB, nnz {nnz} (≤ n(L−k+1) = "
        f"{[len(seqs) * (len(seqs[0]) - k + 1) for k in ks]}), widths {widths}, gap "
        f"{clf.duality_gap_:.1e}, converged {clf.converged_}, weights "
        f"{np.round(clf.kernel_weights_, 3)}, test accuracy {clf.score(test, y_test):.3f}",
        flush=True,
    )


def gram_run(
    ks: list[int], seqs: list[str], y: np.ndarray, test: list[str], y_test: np.ndarray
) -> None:
    specs = [Spectrum(k) for k in ks]
    g_s, g_mb, G = peak_extra_mb(lambda: gram(seqs, specs, normalize="mean_diag"))
    print(f"  Gram: gram {g_s:.1f} s, extra peak {g_mb:.0f} MB (the stack)", flush=True)
    clf = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="logistic", tol=1e-3)
    seconds, extra_mb, _ = peak_extra_mb(lambda: clf.fit(G, y))
    G_test = KernelBank(specs, normalize="mean_diag").fit(seqs).transform(test)
    print(
        f"  Gram: fit {seconds:.1f} s, extra peak {extra_mb:.0f} MB beyond the stack, solvers "
        f"{clf.solvers_}, gap {clf.duality_gap_:.1e}, converged {clf.converged_}, weights "
        f"{np.round(clf.kernel_weights_, 3)}, test accuracy {clf.score(G_test, y_test):.3f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--length", type=int, default=100)
    ap.add_argument("--ks", type=int, nargs="+", default=[3, 4, 5, 6])
    ap.add_argument("--gram", action="store_true")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()}")
    for n in args.n:
        seqs, y = problem(n + TEST, args.length)
        train, test, y_train, y_test = seqs[:n], seqs[n:], y[:n], y[n:]
        print(f"n = {n}, length {args.length}, Spectrum k = {args.ks}", flush=True)
        features_run(args.ks, train, y_train, test, y_test)
        if args.gram and n <= 20000:
            gram_run(args.ks, train, y_train, test, y_test)
        print(f"  load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
