//! Working sets of points shared by the solvers (ℓp's Algorithm 1, the SVM wrapper of `l1` and
//! the elastic net, SpicyMKL): moving vectors between the points of a set and all points, the
//! points that join a set, and the restricted single-kernel problem on a set ([`PointSet`]).

use crate::error::Result;
use crate::kernels::{point_subset, KernelStack, PointSubset};
use crate::losses::Loss;
use crate::solvers::single::SingleKernel;

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

/// A working set of points is used from this many points on: below, the whole problem's
/// solves are as cheap as the restricted ones and the checks' extra solves do not pay
/// (measured in docs/mathematics.md §2.11, step 4).
pub(crate) const MIN_POINTS: usize = 400;

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

/// The restricted problem of a working set of points `W`: the kernels `K_m[W, W]`, and a
/// single-kernel solver whose `β` is zero off `W`. Such a `β` is feasible for the whole
/// problem's dual, and with a hinge-type loss (conjugate 0 at 0) its dual value is the whole
/// problem's; the restricted primal bounds nothing (docs/mathematics.md §2.11).
pub(crate) struct PointSet {
    /// The kernels on the set; its indices are the set's points in local order.
    pub(crate) stack: PointSubset,
    pub(crate) y: Vec<f64>,
    /// The loss weights of the set's points.
    pub(crate) c: Vec<f64>,
    pub(crate) solver: SingleKernel,
}

impl PointSet {
    /// The largest set worth a restricted problem for `n` points.
    fn max_points(n: usize) -> usize {
        (MAX_FRACTION * n as f64) as usize
    }

    /// The problem on `idx`, warm-started at the QP variables `alpha` of the whole problem
    /// (zero off `idx`, so the warm start stays feasible). `None` when the set is too large to
    /// pay off or cannot hold a problem (a classifier needs both classes).
    pub(crate) fn new(
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        loss: Loss,
        idx: &[usize],
        alpha: &[f64],
    ) -> Result<Option<Self>> {
        let n = y.len();
        let yw: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
        let both = yw.contains(&1.0) && yw.contains(&-1.0);
        if idx.len() > Self::max_points(n) || idx.len() < 2 || (loss.is_classification() && !both) {
            return Ok(None);
        }
        let cw: Vec<f64> = idx.iter().map(|&i| c[i]).collect();
        let mut solver = SingleKernel::new(loss, &cw, &yw)?;
        solver.set_warm_start(gather_points(alpha, n, idx));
        Ok(Some(PointSet {
            stack: point_subset(stack, idx, Self::max_points(n)),
            y: yw,
            c: cw,
            solver,
        }))
    }

    /// Adds the points `more` (read from `stack`), warm-started at the whole problem's QP
    /// variables `alpha`. `false` when the grown set is too large to pay off.
    pub(crate) fn grow(
        &mut self,
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        more: &[usize],
        alpha: &[f64],
    ) -> Result<bool> {
        let n = y.len();
        if self.idx().len() + more.len() > Self::max_points(n) {
            return Ok(false);
        }
        self.stack.extend(stack, more);
        self.y.extend(more.iter().map(|&i| y[i]));
        self.c.extend(more.iter().map(|&i| c[i]));
        self.solver = SingleKernel::new(self.solver.loss(), &self.c, &self.y)?;
        self.solver
            .set_warm_start(gather_points(alpha, n, self.stack.indices()));
        Ok(true)
    }

    /// The points of the set, in local order.
    pub(crate) fn idx(&self) -> &[usize] {
        self.stack.indices()
    }

    /// The QP variables over all `n` points.
    pub(crate) fn alpha(&self, n: usize) -> Vec<f64> {
        scatter_points(self.solver.alpha().unwrap_or(&[]), self.idx(), n)
    }
}
