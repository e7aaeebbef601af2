//! The certificate of a point of proximal Newton (docs/mathematics.md §2.13): `P`, the loss's
//! gradient and the natural dual point, in one pass over the features.

use rayon::prelude::*;

use super::features::{FeatureOps, CHUNK};
use super::model::{norm, violation};
use super::ProxNewtonConfig;
use crate::losses::Envelope;
use crate::penalties::duals::{best_dual, best_envelope_dual};
use crate::penalties::BlockPenalty;
use crate::result::relative_gap;
use crate::solvers::tracker::{Model, Tracker};

/// [`Envelope::weighted_total`] `Σ_i c_i ℓ_μ(y_i, f_i + b)` in parallel, summed by fixed chunks
/// (the same bits on any number of threads).
pub(super) fn data_term(loss: Envelope, y: &[f64], f: &[f64], b: f64, c: &[f64]) -> f64 {
    let parts: Vec<f64> = y
        .par_chunks(CHUNK)
        .zip(f.par_chunks(CHUNK))
        .zip(c.par_chunks(CHUNK))
        .map(|((yc, fc), cc)| loss.weighted_total(yc, fc, b, cc))
        .collect();
    parts.iter().sum()
}

/// The iterate with the best primal value: its feature weights and what its representer form
/// needs.
pub(super) struct Best {
    pub(super) w: Vec<f64>,
    /// The centred dual point `ρ̃`.
    pub(super) rho: Vec<f64>,
    /// `d_m = s_m/‖ρ̃‖_{K_m}`.
    pub(super) scale: Vec<f64>,
}

impl Best {
    /// `A[m] = d_m ρ̃` (row-major `M × n`): the representer form, exact at the optimum, where
    /// `w_m = G_mᵀ A[m]` (the feature weights are the iterate itself).
    pub(super) fn coef(&self) -> Vec<f64> {
        self.scale
            .iter()
            .flat_map(|&d| self.rho.iter().map(move |r| d * r))
            .collect()
    }
}

/// The problem a step reads: the features, targets, loss weights and settings.
#[derive(Clone, Copy)]
pub(super) struct Problem<'a> {
    pub(super) x: &'a dyn FeatureOps,
    pub(super) y: &'a [f64],
    pub(super) c: &'a [f64],
    pub(super) cfg: &'a ProxNewtonConfig,
}

/// The point, its gradient and what the certificate found there.
pub(super) struct Point {
    /// `Σ_m G_m w_m` (without `b`).
    pub(super) f: Vec<f64>,
    /// The objective the steps minimise: `P` with the loss `ℓ_μ` of the level.
    pub(super) primal: f64,
    /// The loss part `C Σ ℓ_μ` of `primal`.
    pub(super) data: f64,
    /// `C ℓ_μ'(y_i, f_i + b)`.
    pub(super) d1: Vec<f64>,
    /// `g = C Gᵀℓ_μ'`, all columns.
    pub(super) grad: Vec<f64>,
    /// Per kernel: the distance to optimality ([`violation`]).
    pub(super) viol: Vec<f64>,
    /// The whole problem's relative gap (the loss itself), best values so far.
    pub(super) gap: f64,
    /// The smoothed problem's relative gap at this point (0 without smoothing).
    pub(super) level_gap: f64,
}

/// `P`, the gradient and the certificate at `(w, b)` (one pass over the features): the dual
/// point is the natural one, `ρ̃_i = −c_i ℓ_μ'(f_i + b)` centred into the dual's domain and
/// scaled ([`best_dual`], docs/mathematics.md §1.4); it is optimal at the solution of the
/// level's problem. With smoothing (`env.mu > 0`) the recorded `P` is the loss's own, at the
/// best intercept for `f` (any intercept gives a valid `P`), and the point also gets the
/// smoothed problem's own gap (dual `D − μ Σ ρ̃²/(2c)`, [`best_envelope_dual`]). `level` is
/// the penalty the steps minimise: `cfg.penalty` itself, or `group` smoothed
/// ([`GroupLevel`](super::continuation::GroupLevel)); the certificate and the level's gap
/// read the exact one.
#[allow(clippy::too_many_arguments)]
pub(super) fn certify(
    p: &Problem<'_>,
    env: Envelope,
    level: &BlockPenalty,
    w: &[f64],
    b: f64,
    f: Vec<f64>,
    tracker: &mut Tracker<'_>,
    best: &mut Best,
) -> Point {
    let Problem { x, y, c, cfg } = *p;
    let loss = cfg.loss;
    let norms: Vec<f64> = (0..x.m()).map(|m| norm(&w[x.block(m)])).collect();
    let pen = cfg.penalty.value(&norms);
    let data = data_term(env, y, &f, b, c);
    let primal = data + level.value(&norms);
    let (exact, b_exact) = if env.mu == 0.0 {
        (data + pen, b)
    } else {
        let bx = loss.best_intercept(y, &f, c, b);
        (data_term(loss.into(), y, &f, bx, c) + pen, bx)
    };
    let d1: Vec<f64> = y
        .iter()
        .zip(&f)
        .zip(c)
        .map(|((&yi, &fi), &ci)| ci * env.deriv(yi, fi + b))
        .collect();
    let raw: Vec<f64> = d1.iter().map(|v| -v).collect();
    let centred = loss.centre_dual(y, &raw, c);
    let mut prods = x.t_products(&[&d1, &centred]);
    let u = prods.pop().expect("two products");
    let grad = prods.pop().expect("two products");
    let dual_norms: Vec<f64> = (0..x.m()).map(|m| norm(&u[x.block(m)])).collect();
    let dual = best_dual(&dual_norms, y, &centred, c, loss, cfg.penalty.clone());
    let level_gap = if env.mu == 0.0 {
        0.0
    } else {
        // The exact penalty: a smoothed `group` is above it by its smoothing, which would
        // hold this gap above `tol` (docs/mathematics.md §2.13).
        let d = best_envelope_dual(&dual_norms, y, &centred, c, env, &cfg.penalty);
        relative_gap(data + pen, d)
    };
    // ℓp's and group's steps take every kernel: no working set to choose.
    let viol = match cfg.penalty {
        BlockPenalty::Sparse(sp) => (0..x.m())
            .map(|m| violation(sp.weights(), &grad[x.block(m)], &w[x.block(m)]))
            .collect(),
        BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => vec![0.0; x.m()],
    };
    let active = norms.iter().filter(|&&s| s > 0.0).count();
    if exact < tracker.best_primal() {
        best.w.copy_from_slice(w);
        best.rho.clone_from(&centred);
        best.scale = norms
            .iter()
            .zip(&dual_norms)
            .map(|(&s, &u)| if s > 0.0 && u > 0.0 { s / u } else { 0.0 })
            .collect();
    }
    // The coefficients are formed once, at the end ([`Best::coef`]).
    let gap = tracker.record_with(exact, (dual, None), active, || Model {
        coef: Vec::new(),
        intercept: b_exact,
        weights: cfg.penalty.kernel_weights(&norms, &dual_norms),
        norms: norms.clone(),
    });
    Point {
        f,
        primal,
        data,
        d1,
        grad,
        viol,
        gap,
        level_gap,
    }
}
