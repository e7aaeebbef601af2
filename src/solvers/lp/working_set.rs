//! The working set of points `W` of Algorithm 1 (see [`super::analytic`]): the restricted
//! problem on `K_m[W, W]` with `β = 0` off `W`. The points that join `W` are chosen in
//! `solvers::points`, and when a whole-problem check follows in `solvers::schedule`.

use super::LpConfig;
use crate::error::Result;
use crate::kernels::{point_subset, KernelStack, PointSubset};
use crate::solvers::points::{gather_points, scatter_points, MAX_FRACTION};
use crate::solvers::single::SingleKernel;

/// The restricted problem of a working set of points: `β` is zero off the set.
pub(super) struct PointSet {
    /// The kernels on the set; its indices are the set's points in local order.
    pub(super) stack: PointSubset,
    pub(super) y: Vec<f64>,
    /// The loss weights of the set's points.
    pub(super) c: Vec<f64>,
    pub(super) solver: SingleKernel,
}

impl PointSet {
    /// The largest set worth a restricted problem for `n` points.
    fn max_points(n: usize) -> usize {
        (MAX_FRACTION * n as f64) as usize
    }

    /// The problem on `idx`, warm-started at the QP variables `alpha` of the whole problem
    /// (zero off `idx`, so the warm start stays feasible). `None` when the set is too large to
    /// pay off or cannot hold a problem (a classifier needs both classes).
    pub(super) fn new(
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        cfg: &LpConfig,
        idx: &[usize],
        alpha: &[f64],
    ) -> Result<Option<Self>> {
        let n = y.len();
        let yw: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
        let both = yw.contains(&1.0) && yw.contains(&-1.0);
        if idx.len() > Self::max_points(n)
            || idx.len() < 2
            || (cfg.loss.is_classification() && !both)
        {
            return Ok(None);
        }
        let cw: Vec<f64> = idx.iter().map(|&i| c[i]).collect();
        let mut solver = SingleKernel::new(cfg.loss, &cw, &yw)?;
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
    pub(super) fn grow(
        &mut self,
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        cfg: &LpConfig,
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
        self.solver = SingleKernel::new(cfg.loss, &self.c, &self.y)?;
        self.solver
            .set_warm_start(gather_points(alpha, n, self.stack.indices()));
        Ok(true)
    }

    /// The points of the set, in local order.
    pub(super) fn idx(&self) -> &[usize] {
        self.stack.indices()
    }

    /// The QP variables over all `n` points.
    pub(super) fn alpha(&self, n: usize) -> Vec<f64> {
        scatter_points(self.solver.alpha().unwrap_or(&[]), self.idx(), n)
    }
}
