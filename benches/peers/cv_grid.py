"""``MKLClassifierCV(loss="hinge", multi_class="ovr")`` against the hand-written grid a user
writes on precomputed slices (issue 68's goal), nested: an outer 3-fold split, C chosen on
each outer training part by an inner 3-fold split, the chosen model scored on the outer test
part.

Data: generated DNA-like sequences, three classes as in the splice-junction task (a donor-like
motif, an acceptor-like motif, or neither, each at a jittered centre and with point
mutations; ``--n`` sequences of length 60). Kernels: ``Spectrum(3)``, ``Spectrum(4)`` and
``WeightedDegree(degree=8)``, the estimators' default ``normalize="mean_diag"``.

Per outer fold, three ways to the same nested CV (the same Cs, the same inner splits, ``l1``
penalty, hinge loss, one-vs-rest, ``tol=1e-3``, ``max_iter=1000``):

- ``specs``: ``MKLClassifierCV(kernels=specs)`` on the outer training sequences: every inner
  fold computes its kernels on its own training rows (honest CV), then a warm grid of fits;
- ``stack``: ``MKLClassifierCV(kernels="precomputed")`` on ``PairwiseStack(G)[tr, tr]``, ``G``
  the Gram stack of all sequences computed once beforehand (as the peer's);
- ``peer``: the hand-written loop: ``MKLClassifier(kernels="precomputed", penalty="l1",
  loss="hinge")`` fitted cold at every C on ``G[np.ix_(inner_train, inner_train)]`` of every
  kernel, scored on ``G[np.ix_(inner_test, inner_train)]``, the best mean C refit on the outer
  training part.

Times are medians of ``--repeats`` per outer fold, the three ways in turn within a repeat; the
ratios are ours / peer. The Gram stack's one computation (for ``stack`` and ``peer``) is
reported apart.

    python benches/peers/cv_grid.py [--n 1200] [--Cs 6] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

import multikernel as mk
from multikernel.kernels import PairwiseStack, Spectrum, WeightedDegree

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_median_times  # noqa: E402

SPECS = [Spectrum(3), Spectrum(4), WeightedDegree(degree=8)]
MOTIFS = ["CAGGTAAGT", "TTTCCAGGT"]  # donor-like, acceptor-like; class 2: neither


def splice_like(n: int, length: int = 60, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``n`` sequences of ``length`` nt and their classes 0, 1, 2 (motif 0, motif 1, none),
    the motif at the centre ± 3 with 10 % of its bases mutated."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("ACGT"))
    y = rng.integers(0, 3, n)
    seqs = []
    for c in y:
        s = alphabet[rng.integers(0, 4, length)]
        if c < 2:
            motif = np.array(list(MOTIFS[c]))
            motif = np.where(
                rng.random(len(motif)) < 0.1, alphabet[rng.integers(0, 4, len(motif))], motif
            )
            at = length // 2 - len(motif) // 2 + int(rng.integers(-3, 4))
            s[at : at + len(motif)] = motif
        seqs.append("".join(s))
    return seqs, y


def hand_grid(G: np.ndarray, y: np.ndarray, tr: np.ndarray, Cs: np.ndarray) -> Any:
    """The peer: the inner grid by hand on precomputed slices, the refit at the best C."""
    est = mk.MKLClassifier(kernels="precomputed", penalty="l1", loss="hinge", max_iter=1000)
    inner = StratifiedKFold(3).split(tr, y[tr])
    scores = np.zeros((3, len(Cs)))
    for k, (a, b) in enumerate(inner):
        itr, ite = tr[a], tr[b]
        Gtr, Gte = G[:, itr][:, :, itr], G[:, ite][:, :, itr]
        for i, C in enumerate(Cs):
            model = clone(est).set_params(C=float(C)).fit(Gtr, y[itr], check_input=False)
            scores[k, i] = model.score(Gte, y[ite])
    C = float(Cs[int(np.argmax(scores.mean(axis=0)))])
    return clone(est).set_params(C=C).fit(G[:, tr][:, :, tr], y[tr], check_input=False), C


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1200)
    ap.add_argument("--Cs", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    seqs, y = splice_like(args.n)
    Cs = np.geomspace(0.1, 100.0, args.Cs)
    t = time.perf_counter()
    G = mk.kernels.gram(seqs, SPECS, normalize="mean_diag")
    gram_s = time.perf_counter() - t
    S = PairwiseStack(G)
    arr = np.array(seqs, dtype=object)
    print(f"n = {args.n}, 3 classes, {len(SPECS)} kernels, Cs = {np.round(Cs, 3).tolist()}, "
          f"repeats = {args.repeats}; Gram stack of all sequences: {gram_s:.2f} s")  # fmt: skip
    print("fold | specs s | stack s | peer s | specs/peer | stack/peer | accuracy | C_")
    print("(accuracy and C_: specs, stack, peer)")
    ratios: list[tuple[float, float]] = []
    for f, (tr, te) in enumerate(StratifiedKFold(3, shuffle=True, random_state=0).split(arr, y)):
        cv = StratifiedKFold(3)

        def specs(tr: np.ndarray = tr, te: np.ndarray = te, cv: Any = cv) -> tuple[float, float]:
            clf = mk.MKLClassifierCV(kernels=SPECS, loss="hinge", multi_class="ovr", Cs=Cs, cv=cv)
            clf.fit(list(arr[tr]), y[tr])
            return clf.score(list(arr[te]), y[te]), clf.C_

        def stack(tr: np.ndarray = tr, te: np.ndarray = te, cv: Any = cv) -> tuple[float, float]:
            clf = mk.MKLClassifierCV(kernels="precomputed", loss="hinge", Cs=Cs, cv=cv)
            clf.fit(S[np.ix_(tr, tr)], y[tr])
            return clf.score(S[np.ix_(te, tr)], y[te]), clf.C_

        def peer(tr: np.ndarray = tr, te: np.ndarray = te) -> tuple[float, float]:
            model, C = hand_grid(G, y, tr, Cs)
            return model.score(G[:, te][:, :, tr], y[te]), C

        (ts, (a_s, c_s)), (tk, (a_k, c_k)), (tp, (a_p, c_p)) = paired_median_times(
            [specs, stack, peer], args.repeats
        )
        ratios.append((ts / tp, tk / tp))
        print(f"{f} | {ts:.2f} | {tk:.2f} | {tp:.2f} | {ts / tp:.2f} | {tk / tp:.2f} | "
              f"{a_s:.4f}, {a_k:.4f}, {a_p:.4f} | {c_s:.3g}, {c_k:.3g}, {c_p:.3g}")  # fmt: skip
    med = np.median(np.array(ratios), axis=0)
    print(f"median ratio over folds: specs/peer {med[0]:.2f}, stack/peer {med[1]:.2f}")


if __name__ == "__main__":
    main()
