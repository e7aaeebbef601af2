//! An iterate: the single-kernel solution at the weights `w`, the forms `q_m = βᵀK_mβ`, and its
//! certificate (module docs of `wrapper`).

use super::{Combined, WrapperConfig};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::linalg::dot;
use crate::losses::Loss;
use crate::penalties::duals::{best_dual, best_on_segment, best_scale, DualPoint};
use crate::penalties::BlockPenalty;
use crate::penalties::{block_value, kernel_weights};
use crate::result::PsdWitness;
use crate::solvers::points::{gather_points, scatter_points};
use crate::solvers::single::SingleKernel;
use crate::solvers::tracker::{Model, Tracker};
use crate::solvers::witness::PsdCheck;

/// The most values `M·n` of all products `K_mβ` kept at once (128 MB).
const ALL_PRODUCTS_MAX: usize = 1 << 24;

/// The solution of the single-kernel problem on `K_w` as the wrapper uses it.
pub(crate) struct Point {
    /// The dual point `β`: SMO's, or for the smooth losses the natural point
    /// `−Cℓ'(f + b)` of Newton's model, centred (feasible, docs/mathematics.md §1.4).
    pub(crate) beta: Vec<f64>,
    /// `K_w β`.
    pub(crate) f: Vec<f64>,
    /// The intercept that minimises the loss for `f`.
    pub(crate) b: f64,
    /// `S(w)`: SMO's dual value (a lower bound), or the primal value at `β` (an upper bound).
    pub(crate) value: f64,
}

impl Point {
    /// The point of SMO's last solve, whose model is `f = K_w β` with intercept `b`.
    pub(super) fn of_smo(solver: &SingleKernel, f: Vec<f64>, b: f64) -> Point {
        Point {
            beta: solver.beta().to_vec(),
            f,
            b,
            value: solver.svm_dual_value().unwrap_or(f64::NEG_INFINITY),
        }
    }
}

/// Solves the single-kernel problem on `kw` (of `stack`) to accuracy `tol` (warm-started).
pub(super) fn solve_point(
    solver: &mut SingleKernel,
    stack: &dyn KernelStack,
    kw: &Combined,
    y: &[f64],
    c: &[f64],
    tol: f64,
    interrupt: &dyn Interrupt,
) -> Result<Point> {
    let loss = solver.loss();
    let mut f = kw.solve(solver, stack, tol, interrupt)?;
    let b = loss.best_intercept(y, &f, c, solver.intercept());
    if solver.is_sparse() {
        return Ok(Point::of_smo(solver, f, b));
    }
    // Newton stops inexactly: its `β` can leave the conjugate's domain (logistic), so the
    // model and the certificate both move to the natural point of its model (one more
    // product with `K_w`), where `q_m`, `P` and `D` all belong to one `β`.
    let beta = loss.centre_dual(y, &loss.natural_dual(y, &f, b, c), c);
    kw.op().matvec(&beta, &mut f);
    let b = loss.best_intercept(y, &f, c, b);
    let value = loss.weighted_total(y, &f, b, c) + 0.5 * dot(&beta, &f);
    solver.set_newton_point(&beta, b);
    Ok(Point { beta, f, b, value })
}

/// The forms `q_m = βᵀK_mβ` of the kernels `set` into `q` (of every kernel when `None`; the
/// others' are set to 0, so that the gradient and the dual read those of the problem
/// restricted to `set`); for a dense `β` (the smooth losses) also their products `K_mβ` (laid
/// out for all `M` kernels, zero off `set`, when `M·n` fits in [`ALL_PRODUCTS_MAX`]): the same
/// one pass over the kernels gives both, where the Hessian's products would read them again.
pub(super) fn forms(
    stack: &dyn KernelStack,
    beta: &[f64],
    dense: bool,
    set: Option<&[usize]>,
    q: &mut [f64],
) -> Option<Vec<f64>> {
    let (m, n) = (stack.m(), stack.n());
    let all: Vec<usize>;
    let set = match set {
        Some(s) => {
            q.fill(0.0);
            s
        }
        None => {
            all = (0..m).collect();
            &all
        }
    };
    if !dense || m * n > ALL_PRODUCTS_MAX {
        let mut qs = vec![0.0; set.len()];
        stack.quad_forms_subset(beta, set, &mut qs);
        set.iter().zip(qs).for_each(|(&k, v)| q[k] = v);
        return None;
    }
    let mut local = vec![0.0; set.len() * n];
    stack.matvecs_subset(beta, set, &mut local);
    let mut prod = vec![0.0; m * n];
    for (&k, pk) in set.iter().zip(local.chunks_exact(n)) {
        q[k] = dot(pk, beta);
        prod[k * n..(k + 1) * n].copy_from_slice(pk);
    }
    Some(prod)
}

/// What [`Aggregate::segment_forms`] read: the best point on the iterated problem's points,
/// its forms and those of its sum with the iterate's `β` (exact or upper bounds).
pub(super) struct Segment {
    rho: Vec<f64>,
    qhat: Vec<f64>,
    qs: Vec<f64>,
}

/// Dual aggregation (docs/mathematics.md §2.11): the best dual point of the whole problem
/// so far, which each new iterate's `β` is combined with
/// ([`best_on_segment`](crate::penalties::duals::best_on_segment)) for the hinge-type losses:
/// near the optimum the iterates' own dual values scatter (the measurements are in
/// docs/mathematics.md §2.11, "Dual aggregation").
#[derive(Debug, Default)]
pub(super) struct Aggregate {
    /// Over all `n` points, at its best multiple.
    best: Option<DualPoint>,
}

impl Aggregate {
    /// The best point on the iterated problem's points `idx` (all when `None`); `None`
    /// without one, or when it is non-zero off `idx` (a working set of points only grows,
    /// so only a whole-problem point is ever dropped).
    fn local(&self, idx: Option<&[usize]>) -> Option<Vec<f64>> {
        let best = self.best.as_ref()?;
        let Some(idx) = idx else {
            return Some(best.rho.clone());
        };
        let local = gather_points(&best.rho, best.rho.len(), idx);
        let on: f64 = local.iter().map(|v| v.abs()).sum();
        let all: f64 = best.rho.iter().map(|v| v.abs()).sum();
        (on == all).then_some(local)
    }

    /// What the segment search reads ([`offer`](Self::offer)): the best point `ρ` on the
    /// points `idx` of `β`, its forms and those of `β + ρ`. They are exact on the `cap`
    /// kernels with the largest forms of either point (the kernels that bound the dual) and
    /// upper bounds on the others: `ρ`'s stored ones, and Cauchy–Schwarz's `(√q + √q̂)²`.
    /// Larger forms only lower the dual value, so the certificate stays valid while one pass
    /// over `cap` kernels is all the aggregation reads (why not every kernel:
    /// docs/mathematics.md §2.11, "Dual aggregation").
    pub(super) fn segment_forms(
        &self,
        stack: &dyn KernelStack,
        (beta, q): (&[f64], &[f64]),
        idx: Option<&[usize]>,
        cap: usize,
    ) -> Option<Segment> {
        let best = self.best.as_ref()?;
        let rho = self.local(idx)?;
        let m = q.len();
        let mut order: Vec<usize> = (0..m).collect();
        let top = |k: usize| q[k].max(best.q[k]);
        order.sort_by(|&a, &b| top(b).total_cmp(&top(a)));
        let mut read: Vec<usize> = order[..cap.min(m)].to_vec();
        read.sort_unstable();
        let sum: Vec<f64> = beta.iter().zip(&rho).map(|(a, b)| a + b).collect();
        let mut out = vec![0.0; 2 * read.len()];
        stack.quad_forms_batch_subset(&[&rho[..], &sum[..]].concat(), &read, &mut out);
        let mut qhat = best.q.clone();
        let mut qs: Vec<f64> = (0..m)
            .map(|k| {
                let r = q[k].max(0.0).sqrt() + qhat[k].max(0.0).sqrt();
                r * r
            })
            .collect();
        for (&k, pair) in read.iter().zip(out.chunks_exact(2)) {
            qhat[k] = pair[0];
            qs[k] = pair[1];
        }
        Some(Segment { rho, qhat, qs })
    }

    /// Offers the iterate's `β` (on the points `idx` of the `n`, forms `q`, own dual value
    /// `own`; `segment` what [`segment_forms`](Self::segment_forms) read): the best point
    /// becomes the best of the segment to `β` and `β` itself. Returns its value.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn offer(
        &mut self,
        (beta, q, own): (&[f64], &[f64], f64),
        segment: Option<Segment>,
        (idx, n): (Option<&[usize]>, usize),
        (y, c): (&[f64], &[f64]),
        loss: Loss,
        penalty: BlockPenalty,
    ) -> f64 {
        let segment = match (segment, self.best.as_ref()) {
            (Some(Segment { rho, qhat, qs }), Some(best)) => {
                let a = DualPoint {
                    rho,
                    q: qhat,
                    value: best.value,
                };
                let pen = penalty.clone();
                Some(best_on_segment(&a, (beta, q), &qs, y, c, loss, pen))
            }
            _ => None,
        };
        let chosen = match segment {
            Some(s) if s.value >= own => s,
            _ => {
                let roots: Vec<f64> = q.iter().map(|v| v.max(0.0).sqrt()).collect();
                let t = best_scale(&roots, y, beta, c, loss.into(), &penalty);
                DualPoint {
                    rho: beta.iter().map(|v| t * v).collect(),
                    q: q.iter().map(|v| t * t * v).collect(),
                    value: own,
                }
            }
        };
        if self.best.as_ref().is_some_and(|b| b.value >= chosen.value) {
            return self.best.as_ref().map_or(own, |b| b.value);
        }
        let rho = match idx {
            Some(idx) => scatter_points(&chosen.rho, idx, n),
            None => chosen.rho,
        };
        let value = chosen.value;
        self.best = Some(DualPoint {
            rho,
            value,
            ..chosen
        });
        value
    }
}

/// The certificate values of an iterate: `P` at `A[m] = scale · w_m β` (lifted onto the
/// margin for the hinge), `D` at the best feasible multiple of `β` (module docs), and the
/// witness check of `β`.
pub(super) struct Certificate {
    pub(super) primal: f64,
    pub(super) dual: f64,
    pub(super) witness: Option<PsdWitness>,
    scale: f64,
    b: f64,
    /// `‖f_m‖` at the model, `scale · w_m sqrt(q_m)`.
    norms: Vec<f64>,
}

impl Certificate {
    /// The values at `point` of the problem of `y` and `c` (the whole one, or a restricted one
    /// whose `P` bounds only itself), with the forms `q` of `β` on every kernel.
    pub(super) fn new(
        psd: &PsdCheck,
        cfg: &WrapperConfig,
        y: &[f64],
        c: &[f64],
        w: &[f64],
        q: &[f64],
        point: &Point,
    ) -> Self {
        let weights = cfg.penalty.weights();
        let norms: Vec<f64> = w
            .iter()
            .zip(q)
            .map(|(wk, qk)| wk * qk.max(0.0).sqrt())
            .collect();
        let penalty_at =
            |t: f64| -> f64 { norms.iter().map(|s| block_value(weights, t * s)).sum() };
        let primal = cfg.loss.weighted_total(y, &point.f, point.b, c) + penalty_at(1.0);
        // Points a hair inside the margin (SMO's tolerance) cost `C` each: at large `C` the
        // model scaled onto the margin is the better primal point (lp's certificate does the
        // same).
        let (scale, b, primal) = cfg
            .loss
            .lift_to_margin_with(y, &point.f, point.b, c, penalty_at, primal)
            .unwrap_or((1.0, point.b, primal));
        let roots: Vec<f64> = q.iter().map(|v| v.max(0.0).sqrt()).collect();
        let beta = &point.beta;
        Certificate {
            primal,
            dual: best_dual(&roots, y, beta, c, cfg.loss, cfg.penalty.into()),
            witness: psd.all().scan(beta, w.len(), |kk| q[kk]),
            scale,
            b,
            norms: norms.iter().map(|s| scale * s).collect(),
        }
    }

    /// Records these values of the whole problem at `point` (weights `w`) and returns the
    /// relative gap.
    pub(super) fn record(
        self,
        tracker: &mut Tracker,
        cfg: &WrapperConfig,
        w: &[f64],
        point: &Point,
    ) -> f64 {
        let active = w.iter().filter(|&&v| v > 0.0).count();
        let Certificate {
            primal,
            dual,
            witness,
            scale,
            b,
            norms,
        } = self;
        tracker.record_with(primal, (dual, witness), active, || {
            // A kernel whose norm is 0 (a zero kernel that still has a weight) carries no
            // model.
            let w: Vec<f64> = w
                .iter()
                .zip(&norms)
                .map(|(&wk, &s)| if s > 0.0 { wk } else { 0.0 })
                .collect();
            Model::outer(
                &w,
                &point.beta,
                scale,
                b,
                kernel_weights(cfg.penalty, &norms),
                norms.clone(),
            )
        })
    }
}
