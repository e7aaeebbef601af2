//! The first iterate (step 1 of the module docs of `wrapper`): the scale of the uniform
//! weights, on a sample of the points from [`SAMPLE_MIN`] on, and the ranked start of many
//! kernels.

use rayon::prelude::*;

use super::newton::free_count;
use super::Combined;
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{CombinedKernel, KernelStack};
use crate::linalg::dot;
use crate::losses::Loss;
use crate::penalties::WeightPenalty;
use crate::solvers::single::{GradientCaches, SingleKernel};

/// The kernels that start with a non-zero weight when there are more than twice as many.
const START_KERNELS: usize = 20;

/// The accuracy of the scale search's solves (SMO: maximal KKT violation; Newton: relative
/// decrease): the scale is bracketed within a factor 1.2 only.
const SCALE_TOL: f64 = 1e-3;

/// The scale of a collapsed ray ([`Scale`]) as a fraction of the last one solved: the zero
/// model's neighbourhood, where the search's 40 halvings used to end (then the first iterate
/// certifies the zero model, when it is the solution).
const COLLAPSED: f64 = 1e-12;

/// Within this factor of its stationary value, `βᵀK_λβ` predicts the scale (its last step is
/// taken without a solve).
const PREDICTED_RATIO: f64 = 4.0;

/// The scale `t` of the uniform weights `w = t/M` where `J` is stationary along them (step 1
/// of the module docs), from solves on `t K_λ`; `k_lambda` is `K_λ`, `kw` receives `t K_λ`
/// and `solver` ends warm near it.
pub(super) fn scale_search(
    solver: &mut SingleKernel,
    stack: &dyn KernelStack,
    k_lambda: &Combined,
    kw: &mut Combined,
    pen: &WeightPenalty,
    interrupt: &dyn Interrupt,
) -> Result<Scale> {
    let t0 = unit_mean_diagonal(k_lambda.trace(stack), stack.n());
    let scale = bracket_scale(solver, stack, k_lambda, kw, t0, pen, interrupt)?;
    k_lambda.scaled_into(scale.t, kw);
    Ok(scale)
}

/// The scale that gives a kernel of trace `trace` on `n` points a unit mean diagonal: the
/// search's start.
fn unit_mean_diagonal(trace: f64, n: usize) -> f64 {
    if trace > 0.0 && trace.is_finite() {
        n as f64 / trace
    } else {
        1.0
    }
}

/// From this many points on, the start is found on a [`Sample`] of them.
pub(super) const SAMPLE_MIN: usize = 800;

/// The points of the [`Sample`] (at least; a tenth of them on larger problems).
const SAMPLE_POINTS: usize = 400;

/// The start of a fit on many points, found on an evenly spaced sample `S` of `s` of the `n`
/// points whose loss weights are multiplied by `n/s` (docs/mathematics.md §2.11): that problem's
/// loss is an unbiased estimate of the whole one's, so its solution approximates the whole
/// problem's, at `(s/n)²` of a solve's cost, and the scale search and the ranking of the start
/// kernels read `K_m[S, S]` only (`M s²` values, where the whole search combines `K_λ` and
/// ranks with a pass over the stack).
pub(super) struct Sample {
    rows: Vec<usize>,
    solver: SingleKernel,
    /// `K_λ[S, S]`, `λ_m = 1/M`.
    k_lambda: Combined,
}

impl Sample {
    /// `None` on fewer than [`SAMPLE_MIN`] points, on kernels computed on demand (the whole
    /// search then reads only SMO's columns), or when the sample misses a class.
    pub(super) fn new(
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        loss: Loss,
    ) -> Result<Option<Sample>> {
        let n = y.len();
        if n < SAMPLE_MIN || stack.on_demand().is_some() {
            return Ok(None);
        }
        let s = SAMPLE_POINTS.max(n / 10);
        let rows: Vec<usize> = (0..s).map(|j| j * n / s).collect();
        let ys: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
        if loss.is_classification() && !(ys.contains(&1.0) && ys.contains(&-1.0)) {
            return Ok(None);
        }
        let cs: Vec<f64> = rows.iter().map(|&i| c[i] * n as f64 / s as f64).collect();
        let solver = SingleKernel::new(loss, &cs, &ys)?;
        let lambda = vec![1.0 / stack.m() as f64; stack.m()];
        let k = CombinedKernel::Columns(stack, &lambda).block(&rows);
        Ok(Some(Sample {
            rows,
            solver,
            k_lambda: Combined::Dense(k),
        }))
    }

    /// The scale of [`scale_search`] on the sample.
    pub(super) fn scale(
        &mut self,
        stack: &dyn KernelStack,
        pen: &WeightPenalty,
        interrupt: &dyn Interrupt,
    ) -> Result<f64> {
        let s = self.rows.len();
        let t0 = unit_mean_diagonal(self.k_lambda.trace_of(s), s);
        let mut kw = Combined::Dense(Vec::new());
        bracket_scale(
            &mut self.solver,
            stack,
            &self.k_lambda,
            &mut kw,
            t0,
            pen,
            interrupt,
        )
        .map(|scale| scale.t)
    }

    /// The forms `β_Sᵀ K_m[S, S] β_S` of the sample's solution, every kernel (the ranking of
    /// the start kernels).
    fn forms(&self, stack: &dyn KernelStack) -> Vec<f64> {
        let beta = self.solver.beta();
        let mut q = vec![0.0; stack.m()];
        q.par_iter_mut().enumerate().for_each(|(m, qm)| {
            let mut col = vec![0.0; self.rows.len()];
            *qm = self
                .rows
                .iter()
                .zip(beta)
                .map(|(&i, &bi)| {
                    stack.column_at(m, i, &self.rows, &mut col);
                    bi * dot(&col, beta)
                })
                .sum();
        });
        q
    }

    /// SMO's warm start on all `n` points: the sample's QP variables times `s/n` (in the box and
    /// on `yᵀα = 0` as they are), zero elsewhere; `None` for Newton.
    fn warm_start(&self, n: usize) -> Option<Vec<f64>> {
        let alpha = self.solver.alpha()?;
        let s = self.rows.len();
        let scale = s as f64 / n as f64;
        // ε-SVR's variables are `[α; α*]`.
        let halves = alpha.len() / s;
        let mut out = vec![0.0; halves * n];
        for h in 0..halves {
            for (a, &i) in self.rows.iter().enumerate() {
                out[h * n + i] = scale * alpha[h * s + a];
            }
        }
        Some(out)
    }
}

/// The bracketing of [`scale_search`] from `t`: solves on `t K_λ` until `βᵀK_λβ` is within a
/// factor 1.2 of its stationary value, or until the last step predicts that ([`PREDICTED_RATIO`]);
/// `solver` ends warm at the last `t` solved (`stack` is only read when `K_λ` is computed on
/// demand).
fn bracket_scale(
    solver: &mut SingleKernel,
    stack: &dyn KernelStack,
    k_lambda: &Combined,
    kw: &mut Combined,
    mut t: f64,
    pen: &WeightPenalty,
    interrupt: &dyn Interrupt,
) -> Result<Scale> {
    let m = stack.m();
    let cap = pen.cap() * m as f64;
    t = t.min(0.5 * cap);
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut kb = vec![0.0; solver.beta().len()];
    let mut below: Option<f64> = None;
    for _ in 0..40 {
        interrupt.check()?;
        k_lambda.scaled_into(t, kw);
        let v = if let Combined::OnDemand(_) = kw {
            // `βᵀK_λβ` from SMO's `f = tK_λβ`: no product on demand.
            let f = kw.solve(solver, stack, SCALE_TOL, interrupt)?;
            dot(&f, solver.beta()) / t
        } else {
            solver.solve_op(kw.op(), SCALE_TOL, interrupt)?;
            k_lambda.op().matvec(solver.beta(), &mut kb);
            dot(&kb, solver.beta())
        };
        let target = 2.0 * pen.d1(t / m as f64);
        let ratio = v / target;
        if !(ratio.is_finite() && ratio > 0.0) || (ratio.ln()).abs() < 1.2f64.ln() {
            break;
        }
        if ratio > 1.0 {
            lo = t;
        } else {
            // `βᵀK_λβ` that stays put while `t` falls: every point on its bound (the
            // soft-margin limit, where `β` no longer depends on `t`), so `J` rises along the
            // whole ray and its minimum is the zero model.
            if below.is_some_and(|prev| (v - prev).abs() <= 1e-9 * v.abs()) {
                return Ok(Scale {
                    t: COLLAPSED * t,
                    collapsed: true,
                });
            }
            below = Some(v);
            hi = t;
        }
        // Near the scale `βᵀK_λβ` falls like `1/t` (measured in docs/mathematics.md §2.11):
        // that step lands within the factor 1.2 without a solve to confirm it, when the
        // target is constant (`l1`; the elastic net's grows with `t`).
        let predicted = pen.r2 == 0.0 && (ratio.ln()).abs() < PREDICTED_RATIO.ln();
        t = if predicted {
            (t * ratio.sqrt()).max(lo).min(hi)
        } else if lo > 0.0 && hi.is_finite() {
            (lo * hi).sqrt()
        } else {
            t * ratio.sqrt().clamp(0.01, 100.0)
        };
        if t >= cap {
            t = 0.5 * (lo + cap);
        }
        if predicted {
            break;
        }
    }
    Ok(Scale {
        t,
        collapsed: false,
    })
}

/// The scale of a bracketing, and whether the ray collapsed to the zero model (`J` rising
/// along all of it).
pub(super) struct Scale {
    pub(super) t: f64,
    pub(super) collapsed: bool,
}

/// The first iterate (step 1 of the module docs): its weights, with `solver` warm near it and
/// `kw` holding `K_w`, or, when `cacheable` and the kernels are ranked on all the points, the
/// per-kernel gradient caches that ranked them instead: the first iterate then solves on
/// their columns of `K_w` on demand, and its forms read only the rows that its solve changed.
#[allow(clippy::too_many_arguments)]
pub(super) fn start(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    solver: &mut SingleKernel,
    kw: &mut Combined,
    pen: &WeightPenalty,
    (factors, cacheable): (bool, bool),
    interrupt: &dyn Interrupt,
) -> Result<(Vec<f64>, Option<GradientCaches>)> {
    let m = stack.m();
    if pen.r1 > 0.0 {
        if let Some(mut sample) = Sample::new(stack, y, c, solver.loss())? {
            let t = sample.scale(stack, pen, interrupt)?;
            let w = if m <= 2 * START_KERNELS {
                vec![t / m as f64; m]
            } else {
                ranked_start(&sample.forms(stack), t, pen)
            };
            if let Some(alpha) = sample.warm_start(stack.n()) {
                solver.set_warm_start(alpha);
            }
            kw.set(stack, &w, factors);
            return Ok((w, None));
        }
    }
    let mut k_lambda = Combined::Dense(Vec::new());
    k_lambda.set(stack, &vec![1.0 / m as f64; m], factors);
    if pen.r1 == 0.0 {
        // No ℓ1 part: every weight sits at its supremum, one SVM on Σ_m K_m / r_2.
        k_lambda.scaled_into(m as f64 * pen.cap(), kw);
        return Ok((vec![pen.cap(); m], None));
    }
    let scale = scale_search(solver, stack, &k_lambda, kw, pen, interrupt)?;
    if m <= 2 * START_KERNELS {
        return Ok((vec![scale.t / m as f64; m], None));
    }
    drop(k_lambda);
    let mut caches = None;
    let q = if cacheable {
        let moving = free_count(solver.beta(), c, solver.loss());
        GradientCaches::forms_in(&mut caches, stack, solver.beta(), moving)
    } else {
        let mut q = vec![0.0; m];
        stack.quad_forms(solver.beta(), &mut q);
        q
    };
    let mut w = ranked_start(&q, scale.t, pen);
    if scale.collapsed {
        // The uniform ray's minimum is the zero model, but the ranked kernels' need not be:
        // their own scale, which the trust region would otherwise reach by doubling from
        // `t ≈ 0` (docs/mathematics.md §2.11, step 1, "A collapsed ray").
        let total: f64 = w.iter().sum();
        let mut k_ranked = Combined::Dense(Vec::new());
        k_ranked.set(
            stack,
            &w.iter().map(|v| v / total).collect::<Vec<_>>(),
            factors,
        );
        let ranked = scale_search(solver, stack, &k_ranked, kw, pen, interrupt)?;
        if !ranked.collapsed {
            w = ranked_start(&q, ranked.t, pen);
        }
    }
    if caches.is_none() {
        kw.set(stack, &w, factors);
    }
    Ok((w, caches))
}

/// Most weights end at zero: the start puts the total weight `t` on the [`START_KERNELS`]
/// kernels that the scaled SVM's solution ranks first (largest `q_m`, the most negative
/// `∂J/∂w_m`); the others enter when their gradient turns negative.
fn ranked_start(q: &[f64], t: f64, pen: &WeightPenalty) -> Vec<f64> {
    let m = q.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| q[b].total_cmp(&q[a]));
    // (Below the elastic net's supremum `1/r_2`: halfway from `t/M` at most.)
    let each = t / m as f64;
    let start = (t / START_KERNELS as f64).min(each + 0.5 * (pen.cap() - each));
    let mut w = vec![0.0; m];
    for &kk in &order[..START_KERNELS] {
        w[kk] = start;
    }
    w
}
