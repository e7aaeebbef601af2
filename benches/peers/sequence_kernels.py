"""Gram matrices of the sequence kernels against what a Python user writes today, and against
a floor.

Training Gram of ``n`` random DNA sequences of length ``L`` (default n = 5 000, L = 141):

- ``Spectrum(k)``, k = 3..6, against scikit-learn's ``CountVectorizer(analyzer="char",
  ngram_range=(k, k), lowercase=False)`` followed by the sparse product ``C Cᵀ`` (scipy,
  made dense): the k-mer counts and their inner products, which is what the spectrum kernel
  is;
- ``WeightedDegree(degree=10)`` against a floor: one byte-compare pass over the n(n+1)/2
  pairs at this machine's rate, measured by ``wd_floor.rs`` (compares and popcounts counting
  the equal bytes of every pair, the engine's thread count, rows dealt round-robin), compiled
  here with ``rustc -O``: the AVX2 pass (32-byte compares and move-masks), and on an AVX-512
  machine also the AVX-512 pass (64-byte compares into bit masks). The weighted-degree
  kernel does that compare and then its sums over the lengths of the matches, and writes the
  Gram matrix (the floor writes nothing), so its ratio to the floor is what those cost.
  The engine runs its AVX-512 loops where the CPU has them; ``MULTIKERNEL_NO_AVX512=1`` in
  the environment times its AVX2 loops instead.

Each spectrum kernel is checked equal to its peer (exactly: integer counts), then timed:
medians of ``--repeats``, both calls in turn within every repeat. Ratios are multikernel /
peer.

    python benches/peers/sequence_kernels.py [--n 5000] [--length 141] [--repeats 3]
        [--skip-spectrum]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

import multikernel as mk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

HERE = Path(__file__).resolve().parent


def dna(n: int, length: int) -> list[str]:
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ACGT", dtype=np.uint8)[rng.integers(0, 4, (n, length))]
    return [row.tobytes().decode() for row in letters]


def count_vectorizer_gram(seqs: list[str], k: int) -> np.ndarray:
    C = CountVectorizer(analyzer="char", ngram_range=(k, k), lowercase=False).fit_transform(seqs)
    C = C.astype(np.float64)
    return np.asarray((C @ C.T).toarray())


def floor_binary(workdir: Path) -> Path:
    out = workdir / "wd_floor"
    subprocess.run(
        ["rustc", "-O", "--edition", "2021", str(HERE / "wd_floor.rs"), "-o", str(out)],
        check=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--length", type=int, default=141)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-spectrum", action="store_true", help="time the weighted degree only")
    args = ap.parse_args()
    seqs = dna(args.n, args.length)
    threads = mk._core.thread_count(0)
    print(
        f"n = {args.n}, length {args.length}, {os.cpu_count()} cores, SIMD "
        f"{mk._core.simd_level()}, medians of {args.repeats}"
    )
    print(f"{'kernel':>16} {'multikernel s':>14} {'peer s':>9} {'ratio':>7} {'max abs err':>12}")
    for k in () if args.skip_spectrum else (3, 4, 5, 6):
        spec = mk.kernels.Spectrum(k=k)
        (t_mk, G), (t_peer, ref) = paired_median_times(
            [lambda spec=spec: mk.kernels.gram(seqs, [spec])[0],
             lambda k=k: count_vectorizer_gram(seqs, k)],
            args.repeats,
        )  # fmt: skip
        err = float(np.max(np.abs(G - ref)))
        name = f"spectrum k={k}"
        print(f"{name:>16} {t_mk:14.3f} {t_peer:9.3f} {t_mk / t_peer:7.3f} {err:12.1e}", flush=True)
        del G, ref
    if "avx2" not in mk._core.simd_level():
        print("the floor needs AVX2; weighted degree not timed")
        return
    workdir = Path(tempfile.mkdtemp())
    try:
        binary = floor_binary(workdir)
        data = workdir / "seqs.bin"
        data.write_bytes("".join(seqs).encode())

        def floor(isa: str) -> tuple[float, str]:
            run = [str(binary), str(data), str(args.n), str(threads), isa]
            out = subprocess.run(run, check=True, capture_output=True, text=True).stdout.split()
            return float(out[0]), out[2]  # its own clock: process start and file read excluded

        wd = mk.kernels.WeightedDegree(degree=10)
        # The output alone: an n × n float64 matrix written once (numpy's fill of fresh
        # memory), and our Gram of a kernel that computes nothing (k longer than every
        # sequence: every entry 0), the floor of any Gram whatever its kernel.
        empty = mk.kernels.Spectrum(k=args.length + 1)
        ours: list[float] = []
        floors: dict[str, list[float]] = {}
        writes: dict[str, list[float]] = {}
        for _ in range(args.repeats):  # in turn, as paired_median_times
            t = time.perf_counter()
            mk.kernels.gram(seqs, [wd])
            ours.append(time.perf_counter() - t)
            for isa in ("avx2", "best"):
                t_floor, used = floor(isa)
                floors.setdefault(used, []).append(t_floor)
            t = time.perf_counter()
            np.full((args.n, args.n), 1.0)
            writes.setdefault("numpy full", []).append(time.perf_counter() - t)
            t = time.perf_counter()
            mk.kernels.gram(seqs, [empty])
            writes.setdefault("empty Gram", []).append(time.perf_counter() - t)
        t_mk = statistics.median(ours)
        for used, times in floors.items():
            t_floor = statistics.median(times)
            name = "WD degree 10"
            print(
                f"{name:>16} {t_mk:14.3f} {t_floor:9.3f} {t_mk / t_floor:7.3f} "
                f"{'(' + used + ' floor)':>12}"
            )
        best = statistics.median(floors[max(floors, key=lambda u: u != "avx2")])
        for what, times in writes.items():
            t_w = statistics.median(times)
            label = "(output / fastest floor)"
            print(f"{what:>16} {t_w:14.3f} {best:9.3f} {t_w / best:7.3f} {label:>12}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
