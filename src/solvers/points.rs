//! Working sets of points shared by the solvers (ℓp's Algorithm 1, SpicyMKL): moving vectors
//! between the points of a set and all points, and the points that join a set.

use crate::losses::Loss;

/// `v[idx]` in each block of `n` values of `v` (ε-SVR's QP has two variables per point).
pub(crate) fn gather_points(v: &[f64], n: usize, idx: &[usize]) -> Vec<f64> {
    v.chunks_exact(n)
        .flat_map(|block| idx.iter().map(move |&i| block[i]))
        .collect()
}

/// The inverse of [`gather_points`]: blocks of `n` values, zero off `idx`.
pub(crate) fn scatter_points(v: &[f64], idx: &[usize], n: usize) -> Vec<f64> {
    let w = idx.len();
    let mut out = vec![0.0; (v.len() / w.max(1)) * n];
    for (block, src) in out.chunks_exact_mut(n).zip(v.chunks_exact(w.max(1))) {
        for (&i, &x) in idx.iter().zip(src) {
            block[i] = x;
        }
    }
    out
}

/// A working set is used only while it holds at most this fraction of the points: above it
/// the sub-stack (`(w/n)²` of the stack's memory) saves too little.
pub(crate) const MAX_FRACTION: f64 = 0.7;

/// The points that join the working set `current` after a whole-problem evaluation: those
/// with a non-zero QP variable (`alpha`, blocks of `n`) and those whose loss has a non-zero
/// (sub)derivative at the prediction `z_i = f_i + b`, the violators of the optimality of
/// `β_i = 0`. Points near the margin are not added ahead of time: each costs every restricted
/// iteration, which measured more than the occasional extra growth it saves.
pub(crate) fn new_points(
    loss: Loss,
    y: &[f64],
    z: &[f64],
    alpha: &[f64],
    current: &[usize],
) -> Vec<usize> {
    let n = y.len();
    let mut keep = vec![false; n];
    for block in alpha.chunks_exact(n) {
        for (k, &a) in keep.iter_mut().zip(block) {
            *k |= a != 0.0;
        }
    }
    for (i, k) in keep.iter_mut().enumerate() {
        *k |= loss.deriv(y[i], z[i]) != 0.0;
    }
    for &i in current {
        keep[i] = false;
    }
    (0..n).filter(|&i| keep[i]).collect()
}
