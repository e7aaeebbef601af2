//! Where a SpicyMKL fit starts: a warm start seen from the whole problem and its certificate,
//! and the first working sets of kernels and points (module documentation of
//! `solvers::spicy`, "Working set").

use super::inner::Outer;
use super::{project_duals, Fit, SpicyConfig, SpicyStart};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{point_subset, KernelStack, PointSubset, SubStack};
use crate::losses::Loss;
use crate::penalties::duals::dual_value;
use crate::penalties::{kernel_weights, SparsePenalty};
use crate::solvers::points::new_points;
use crate::solvers::single::SingleKernel;
use crate::solvers::tracker::{Model, Tracker};

/// The warm start seen from the whole problem: its predictions `f = Σ_m K_m A[m]` (without
/// the intercept) and its dual in the solver's scale.
pub(super) struct Warm<'a> {
    start: &'a SpicyStart,
    f: Vec<f64>,
    /// `‖A[m]‖_{K_m}`.
    norms: Vec<f64>,
    rho: Vec<f64>,
}

impl<'a> Warm<'a> {
    pub(super) fn new(
        stack: &dyn KernelStack,
        y: &[f64],
        wt: &[f64],
        cfg: &SpicyConfig,
        start: &'a SpicyStart,
    ) -> Self {
        let n = stack.n();
        let loss = cfg.loss;
        let mut f = vec![0.0; n];
        let mut tmp = vec![0.0; n];
        let mut norms = vec![0.0; stack.m()];
        for (m, row) in start.coef.chunks_exact(n.max(1)).enumerate() {
            if row.iter().any(|&v| v != 0.0) {
                stack.matvec(m, row, &mut tmp);
                f.iter_mut().zip(&tmp).for_each(|(o, t)| *o += t);
                let s2: f64 = row.iter().zip(&tmp).map(|(a, k)| a * k).sum();
                norms[m] = s2.max(0.0).sqrt();
            }
        }
        let b = start.intercept;
        let mut warm = Warm {
            start,
            f,
            norms,
            rho: Vec::new(),
        };
        warm.rho = match &start.dual {
            Some(d) => d.clone(),
            None => y
                .iter()
                .zip(&warm.f)
                .zip(wt)
                .map(|((&yi, &fi), &wi)| -wi * loss.deriv(yi, fi + b))
                .collect(),
        };
        if loss == Loss::Logistic {
            // Newton needs a point strictly inside the conjugate's domain, 0 < yρ/w < 1.
            for ((r, &yi), &wi) in warm.rho.iter_mut().zip(y).zip(wt) {
                *r = wi * yi * (yi * *r / wi).clamp(1e-12, 1.0 - 1e-12);
            }
        }
        warm
    }

    /// The dual point the start's coefficients are parallel to: at an optimum every active
    /// `A[m] = d_m ρ̃` with `‖ρ̃‖_{K_m} = r_1 + r_2 s_m`, so `ρ̃ = A[m] (r_1 + r_2 s_m)/s_m`,
    /// here averaged with weights `s_m`: `ρ̃ = Σ_m (r_1 + r_2 s_m) A[m] / Σ_m s_m`. It is the
    /// optimal `ρ̃` of the start's own C whatever that C (the block norms fix its scale),
    /// including the hinge-type losses' margin points, where `−C ℓ'(y, f + b)` is only a
    /// subgradient (zero or the box's face). Zero when `A = 0`.
    fn parallel_dual(&self, penalty: SparsePenalty) -> Vec<f64> {
        let (r1, r2) = penalty.weights();
        let n = self.f.len();
        let mut rho = vec![0.0; n];
        let total: f64 = self.norms.iter().sum();
        if total <= 0.0 {
            return rho;
        }
        for (row, &s) in self.start.coef.chunks_exact(n.max(1)).zip(&self.norms) {
            if s > 0.0 {
                let w = (r1 + r2 * s) / total;
                rho.iter_mut().zip(row).for_each(|(r, a)| *r += w * a);
            }
        }
        rho
    }

    /// The start restricted to the `kernels` and `points` being iterated (`A` is zero off
    /// them), with the slack at the start's predictions.
    pub(super) fn state(
        &self,
        stack: &dyn KernelStack,
        kernels: &[usize],
        points: Option<&PointSubset>,
    ) -> Outer {
        let n = stack.n();
        let all: Vec<usize>;
        let idx: &[usize] = match points {
            Some(p) => p.indices(),
            None => {
                all = (0..n).collect();
                &all
            }
        };
        let mut a = Vec::with_capacity(kernels.len() * idx.len());
        for &m in kernels {
            a.extend(idx.iter().map(|&i| self.start.coef[m * n + i]));
        }
        let b = self.start.intercept;
        let z = idx.iter().map(|&i| self.f[i] + b).collect();
        let rho = idx.iter().map(|&i| self.rho[i]).collect();
        let base: &dyn KernelStack = points.map_or(stack, |p| p.stack());
        Outer::warm(&SubStack::new(base, kernels.to_vec()), a, b, z, rho)
    }
}

impl Fit<'_> {
    /// Certifies a warm start on the whole problem (recorded as the first iteration): the
    /// best whole-problem dual value of its three candidates, the relative gap, and the
    /// centred block norms of the best candidate, which rank the kernels for a working set.
    pub(super) fn certify_warm(&self, w: &Warm<'_>, tracker: &mut Tracker) -> (f64, f64, Vec<f64>) {
        let (cfg, y, cu) = (self.cfg, self.y, &self.cu[..]);
        let b0 = cfg.loss.best_intercept(y, &w.f, cu, w.start.intercept);
        let natural = cfg.loss.natural_dual(y, &w.f, b0, cu);
        let scaled: Vec<f64> = w.rho.iter().map(|r| cfg.c * r).collect();
        let parallel = w.parallel_dual(cfg.penalty);
        let mut candidates = project_duals(
            self.stack,
            y,
            &[&natural, &scaled, &parallel],
            cu,
            cfg.loss,
            cfg.penalty,
            self.psd.all(),
        );
        let values: Vec<f64> = candidates
            .iter()
            .map(|p| dual_value(&p.norms, y, &p.rho, cu, cfg.loss, cfg.penalty))
            .collect();
        let j = (0..values.len())
            .max_by(|&a, &b| values[a].total_cmp(&values[b]))
            .expect("three candidates");
        for p in &candidates {
            tracker.note(p.witness);
        }
        let primal =
            cfg.c * cfg.loss.weighted_total(y, &w.f, b0, &self.wt) + cfg.penalty.value(&w.norms);
        let active = w.norms.iter().filter(|&&s| s > 0.0).count();
        let gap = tracker.record_with(primal, (values[j], None), active, || Model {
            coef: w.start.coef.clone(),
            intercept: b0,
            weights: kernel_weights(cfg.penalty, &w.norms),
            norms: w.norms.clone(),
        });
        (values[j], gap, candidates.swap_remove(j).centred)
    }

    /// The first working set of `size` kernels: ranked by a warm start's best dual candidate
    /// (`warm`: the start and that ranking), its support kept in the set (its kernels would
    /// otherwise be dropped with their `A[m]`); or, from `A = 0`, by the natural dual point
    /// there, whose block norms are the first activity test and whose value is already a
    /// certificate for the whole problem (into `full_dual`).
    pub(super) fn first_kernels(
        &self,
        size: usize,
        warm: Option<(&Warm<'_>, &[f64])>,
        tracker: &mut Tracker,
        full_dual: &mut f64,
    ) -> Vec<usize> {
        let (cfg, y, cu) = (self.cfg, self.y, &self.cu[..]);
        let m_all = self.stack.m();
        if let Some((w, score)) = warm {
            let mut set = largest(score, (0..m_all).collect(), size);
            set.extend((0..m_all).filter(|&m| w.norms[m] > 0.0));
            set.sort_unstable();
            set.dedup();
            return set;
        }
        let f0 = vec![0.0; y.len()];
        let b0 = cfg.loss.best_intercept(y, &f0, cu, 0.0);
        let start = cfg.loss.natural_dual(y, &f0, b0, cu);
        let p = project_duals(
            self.stack,
            y,
            &[&start],
            cu,
            cfg.loss,
            cfg.penalty,
            self.psd.all(),
        )
        .pop()
        .expect("one candidate");
        *full_dual = dual_value(&p.norms, y, &p.rho, cu, cfg.loss, cfg.penalty);
        tracker.note(p.witness);
        largest(&p.centred, (0..m_all).collect(), size)
    }
}

/// A working set of points is used when the first holds at most this fraction of the points:
/// the Newton systems shrink by its cube, but each growth costs outer iterations
/// (docs/mathematics.md §2.8, "Start").
const FIRST_FRACTION: f64 = 0.5;

/// The first working set of points: the support vectors and margin violators of the
/// single-kernel problem on the mean of the working-set kernels, rescaled once (one or two
/// SMO solves). `None` when it is too large to pay off ([`FIRST_FRACTION`]) or cannot hold
/// a problem (a classifier needs both classes).
pub(super) fn first_points(
    stack: &dyn KernelStack,
    y: &[f64],
    cu: &[f64],
    cfg: &SpicyConfig,
    kernels: &[usize],
    interrupt: &dyn Interrupt,
) -> Result<Option<PointSubset>> {
    let n = stack.n();
    let mut theta = vec![0.0; stack.m()];
    for &m in kernels {
        theta[m] = 1.0 / kernels.len() as f64;
    }
    let mut solver = SingleKernel::new(cfg.loss, cu, y)?;
    let mut buf = Vec::new();
    let (mut f, mut b) = solver.solve_combined(stack, y, cu, &theta, 1e-3, &mut buf, interrupt)?;
    // The scale of the kernel matters (it acts as C does): at the l1 optimum the active
    // kernels' `A[m] = η_m β` have `βᵀK_mβ = 1` (‖ρ̃‖_{K_m} = 1), while a mean of
    // trace-normalised kernels is far smaller. One fixed-point step `θ ← θ √(βᵀK_θβ)` of
    // the scale (exact when every α is free) fixes it (docs/mathematics.md §2.8, "Start").
    let q: f64 = solver.beta().iter().zip(&f).map(|(bi, fi)| bi * fi).sum();
    if q > 0.0 && q.is_finite() && !(0.25..=4.0).contains(&q) {
        theta.iter_mut().for_each(|t| *t *= q.sqrt());
        (f, b) = solver.solve_combined(stack, y, cu, &theta, 1e-3, &mut buf, interrupt)?;
    }
    let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
    let idx = new_points(cfg.loss, y, &z, solver.alpha().unwrap_or(&[]), &[]);
    let both = idx.iter().any(|&i| y[i] > 0.0) && idx.iter().any(|&i| y[i] < 0.0);
    if idx.len() < 2 || idx.len() as f64 > FIRST_FRACTION * n as f64 || !both {
        return Ok(None);
    }
    Ok(Some(point_subset(stack, &idx, n)))
}

/// The first working set of points of a warm start: the points where the start has a
/// significant coefficient ([`WARM_COLUMN`]) or a non-zero dual, or a non-zero loss derivative
/// at its prediction. The start's coefficients off the set are dropped (a nearby start; the
/// problem and its certificate do not change). `None` under the same conditions as
/// [`first_points`].
pub(super) fn warm_points(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &SpicyConfig,
    w: &Warm<'_>,
) -> Option<PointSubset> {
    let n = y.len();
    let z: Vec<f64> = w.f.iter().map(|fi| fi + w.start.intercept).collect();
    let mut column = vec![0.0f64; n];
    for row in w.start.coef.chunks_exact(n.max(1)) {
        for (c, a) in column.iter_mut().zip(row) {
            *c = c.max(a.abs());
        }
    }
    let top = column.iter().fold(0.0f64, |a, &c| a.max(c));
    let mut marks: Vec<f64> = column
        .iter()
        .map(|&c| if c > WARM_COLUMN * top { 1.0 } else { 0.0 })
        .collect();
    marks.extend_from_slice(&w.rho);
    let idx = new_points(cfg.loss, y, &z, &marks, &[]);
    let both = idx.iter().any(|&i| y[i] > 0.0) && idx.iter().any(|&i| y[i] < 0.0);
    if idx.len() < 2 || idx.len() as f64 > FIRST_FRACTION * n as f64 || !both {
        return None;
    }
    Some(point_subset(stack, &idx, n))
}

/// A warm start's column `A[:, i]` below this fraction of its largest entry is a remain of the
/// proximal iterates, not a support vector: `A ← prox(A + γρ)` only shrinks the entries of a
/// point that left the support (docs/mathematics.md §2.10, "Working sets").
const WARM_COLUMN: f64 = 1e-3;

/// The (at most) `k` entries of `ids` with the largest `score`, in increasing index order.
pub(super) fn largest(score: &[f64], mut ids: Vec<usize>, k: usize) -> Vec<usize> {
    ids.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
    ids.truncate(k);
    ids.sort_unstable();
    ids
}
