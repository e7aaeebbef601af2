//! The working set of a step: the kernels it optimises and their columns.

use super::certificate::Point;
use super::rows::Rows;
use crate::linalg::norm;
use crate::penalties::BlockPenalty;

/// A working set: its kernels and their columns in order.
pub(super) struct WorkingSet {
    pub(super) kernels: Vec<usize>,
    pub(super) cols: Vec<usize>,
    /// Kernel `kernels[t]` owns the local columns `local[t]..local[t + 1]`.
    pub(super) local: Vec<usize>,
}

impl WorkingSet {
    /// Every kernel (ℓp's steps).
    pub(super) fn all(x: &dyn Rows) -> Self {
        WorkingSet {
            kernels: (0..x.m()).collect(),
            cols: (0..x.width()).collect(),
            local: x.offsets().to_vec(),
        }
    }

    /// The set's blocks as ranges of its local columns.
    pub(super) fn blocks(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        (0..self.kernels.len()).map(|s| self.local[s]..self.local[s + 1])
    }

    /// The set's block norms at `w + t δ`, `wl` the point's weights on the set's columns.
    fn norms_along(&self, wl: &[f64], delta: &[f64], t: f64) -> Vec<f64> {
        self.blocks()
            .map(|r| {
                r.map(|j| (wl[j] + t * delta[j]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    }

    /// `Ω` of the set's blocks at `w + t δ` (every block for ℓp, whose sets hold them all).
    pub(super) fn penalty_along(
        &self,
        pen: &BlockPenalty,
        wl: &[f64],
        delta: &[f64],
        t: f64,
    ) -> f64 {
        pen.value(&self.norms_along(wl, delta, t))
    }

    /// `d/dt Ω(w + t δ)` at `t`.
    pub(super) fn penalty_slope(
        &self,
        pen: &BlockPenalty,
        wl: &[f64],
        delta: &[f64],
        t: f64,
    ) -> f64 {
        let dots: Vec<f64> = self
            .blocks()
            .map(|r| r.map(|j| (wl[j] + t * delta[j]) * delta[j]).sum())
            .collect();
        let steps: Vec<f64> = self.blocks().map(|r| norm(&delta[r])).collect();
        pen.slope(&self.norms_along(wl, delta, t), &dots, &steps)
    }

    /// The penalty's part of the model's decrease along `δ`: `Ω(w + δ) − Ω(w)` for the sparse
    /// penalties, which the model holds exactly; the slope `∇Ωᵀδ` of the smooth ones (ℓp,
    /// smoothed `group`), as their Newton model is quadratic (its change over a whole step can
    /// exceed the loss's decrease on a descent direction, far from the optimum, where `Ω` is
    /// far from quadratic).
    pub(super) fn penalty_change(&self, pen: &BlockPenalty, wl: &[f64], delta: &[f64]) -> f64 {
        match pen {
            BlockPenalty::Sparse(_) => {
                self.penalty_along(pen, wl, delta, 1.0) - self.penalty_along(pen, wl, delta, 0.0)
            }
            BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => {
                self.penalty_slope(pen, wl, delta, 0.0)
            }
        }
    }
}

/// The model's predicted decrease along a step, `gᵀδ + g_b δ_b` plus the penalty's part
/// ([`WorkingSet::penalty_change`]).
pub(super) fn model_decrease(ws: &WorkingSet, pt: &Point, delta: &[f64], pen_change: f64) -> f64 {
    let k = ws.cols.len();
    let lin: f64 = ws
        .cols
        .iter()
        .zip(delta)
        .map(|(&j, d)| pt.grad[j] * d)
        .sum();
    lin + pt.d1_sum * delta[k] + pen_change
}

/// Kernels to optimise next (skglm's rule): the active ones and the largest violators, twice
/// as many as are active and at least `P0`, in kernel order.
pub(super) fn working_set(x: &dyn Rows, w: &[f64], viol: &[f64]) -> WorkingSet {
    const P0: usize = 10;
    let mm = x.m();
    let active: Vec<bool> = (0..mm)
        .map(|m| w[x.block(m)].iter().any(|&v| v != 0.0))
        .collect();
    let n_active = active.iter().filter(|&&a| a).count();
    let size = (2 * n_active).max(P0).min(mm);
    let mut order: Vec<usize> = (0..mm).filter(|&m| !active[m] && viol[m] > 0.0).collect();
    order.sort_by(|&a, &b| viol[b].total_cmp(&viol[a]).then(a.cmp(&b)));
    let mut chosen = active.clone();
    for &m in order.iter().take(size.saturating_sub(n_active)) {
        chosen[m] = true;
    }
    let kernels: Vec<usize> = (0..mm).filter(|&m| chosen[m]).collect();
    let mut cols = Vec::new();
    let mut local = vec![0];
    for &m in &kernels {
        cols.extend(x.block(m));
        local.push(cols.len());
    }
    WorkingSet {
        kernels,
        cols,
        local,
    }
}
