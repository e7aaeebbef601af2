//! The working set of points `W` of Algorithm 1 (see [`super::analytic`]): the restricted
//! problem on `K_m[W, W]` with `β = 0` off `W`, the points that join `W` after a whole-problem
//! check, and when such a check follows the restricted iterations.

use super::{LpConfig, SingleKernel};
use crate::error::Result;
use crate::kernels::{point_subset, KernelStack, PointSubset};
use crate::losses::Loss;
use crate::result::relative_gap;

/// `v[idx]` in each block of `n` values of `v` (ε-SVR's QP has two variables per point).
pub(super) fn gather_points(v: &[f64], n: usize, idx: &[usize]) -> Vec<f64> {
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

/// The restricted iterations between whole-problem checks: their gap, and when the next check
/// is due (the restricted gap is below `margin·tol`, the budget of iterations is spent, or a
/// check was forced).
pub(crate) struct CheckSchedule {
    /// The best dual value since `W` was formed: every restricted `β` is feasible for the whole
    /// dual, and so for every later (larger) restricted one.
    best_dual: f64,
    /// Restricted iterations allowed before a check: 16, doubled after every check that finds
    /// `W` complete.
    budget: i32,
    since_check: i32,
    /// Set when the restricted problem stalls: only a whole-problem check can tell why.
    forced: bool,
    /// The fraction of `tol` the restricted gap must reach before a check: 1/2 by default;
    /// the mirror solver, whose restricted tail converges slowly, checks at `tol`.
    margin: f64,
}

impl CheckSchedule {
    const FIRST_BUDGET: i32 = 16;

    pub(crate) fn new() -> Self {
        CheckSchedule {
            best_dual: f64::NEG_INFINITY,
            budget: Self::FIRST_BUDGET,
            since_check: 0,
            forced: false,
            margin: 0.5,
        }
    }

    /// The same schedule, checking once the restricted gap is below `margin·tol`.
    pub(crate) fn with_margin(self, margin: f64) -> Self {
        CheckSchedule { margin, ..self }
    }

    /// Starts from the dual value `dual` of the whole-problem solution that formed `W`.
    pub(crate) fn start(&mut self, dual: f64) {
        self.best_dual = dual;
    }

    /// The relative gap of a restricted step of values `primal` and `dual`, against the best
    /// dual value so far.
    pub(crate) fn restricted_gap(&mut self, primal: f64, dual: f64) -> f64 {
        self.best_dual = self.best_dual.max(dual);
        relative_gap(primal, self.best_dual)
    }

    /// Counts a restricted iteration of relative gap `rgap`: whether a whole-problem check is
    /// due after it.
    pub(crate) fn due_after(&mut self, rgap: f64, tol: f64) -> bool {
        self.since_check += 1;
        let due = !(rgap > self.margin * tol && self.since_check < self.budget && !self.forced);
        if due {
            self.since_check = 0;
        }
        due
    }

    /// Makes the next check due after the next restricted iteration.
    pub(crate) fn force(&mut self) {
        self.forced = true;
    }

    /// Whether the check under way was forced.
    pub(crate) fn is_forced(&self) -> bool {
        self.forced
    }

    /// After a check that grew `W`: a new restricted problem, with the first budget.
    pub(crate) fn restart(&mut self) {
        self.budget = Self::FIRST_BUDGET;
        self.forced = false;
    }

    /// After a check that found `W` complete: twice the budget before the next.
    pub(crate) fn back_off(&mut self) {
        self.budget *= 2;
        self.forced = false;
    }
}
