//! The certificate of a point of proximal Newton (docs/mathematics.md §2.13): `P`, the loss's
//! gradient and the natural dual point, in one pass over the features.

use super::rows::{DualPoint, Op, Rows, Shift, Update};
use super::ProxNewtonConfig;
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::linalg::norm;
use crate::losses::{centre_tau, intercept_search, Envelope};
use crate::penalties::duals::best_envelope_dual_by;
use crate::penalties::{subgradient_distance, BlockPenalty};
use crate::result::{relative_gap, OuterCoef};
use crate::solvers::tracker::{Model, Tracker};

/// The iterate with the best primal value: its feature weights and what its representer form
/// needs.
pub(super) struct Best {
    pub(super) w: Vec<f64>,
    /// The centred dual point `ρ̃` (its rows are kept with the rows, [`Update::KeepBest`]).
    pub(super) dual: Option<DualPoint>,
    /// `d_m = s_m/‖ρ̃‖_{K_m}`.
    pub(super) scale: Vec<f64>,
    /// The iterate's model as the tracker records it (intercept, kernel weights, norms).
    pub(super) model: Option<Model>,
}

impl Best {
    /// Keeps the iterate `(w, b)` of kernel weights `weights`, block norms `norms` and dual
    /// point `dual` (whose block norms are `dual_norms`) as the best, its rows too.
    fn keep(
        &mut self,
        p: &Problem<'_>,
        (w, b): (&[f64], f64),
        weights: Vec<f64>,
        (norms, dual_norms): (&[f64], &[f64]),
        dual: DualPoint,
    ) -> Result<()> {
        self.model = Some(Model {
            coef: Vec::new(),
            intercept: b,
            weights,
            norms: norms.to_vec(),
        });
        self.w.copy_from_slice(w);
        self.dual = Some(dual);
        p.update(&Update::KeepBest)?;
        self.scale = norms
            .iter()
            .zip(dual_norms)
            .map(|(&s, &u)| if s > 0.0 && u > 0.0 { s / u } else { 0.0 })
            .collect();
        Ok(())
    }

    /// `A[m] = d_m ρ̃` as its factors `d` and `ρ̃`: the representer form, exact at the
    /// optimum, where `w_m = G_mᵀ A[m]` (the feature weights are the iterate itself); `None`
    /// where the rows stay on a cluster ([`Rows::best_dual_rows`]).
    pub(super) fn coef(&self, x: &dyn Rows) -> Option<OuterCoef> {
        let rows = self.dual.as_ref().and_then(|d| x.best_dual_rows(d))?;
        Some(OuterCoef {
            scale: self.scale.clone(),
            rows,
        })
    }
}

/// The problem a step reads: the rows (features, targets, loss weights and the per-row
/// state), the settings, and the interrupt polled between the passes over the rows.
#[derive(Clone, Copy)]
pub(super) struct Problem<'a> {
    pub(super) x: &'a dyn Rows,
    pub(super) cfg: &'a ProxNewtonConfig,
    pub(super) interrupt: &'a dyn Interrupt,
}

impl Problem<'_> {
    pub(super) fn reduce(&self, op: &Op) -> Result<Vec<f64>> {
        self.x.reduce(op, self.interrupt)
    }

    /// A reduction to one number.
    pub(super) fn scalar(&self, op: &Op) -> Result<f64> {
        Ok(self.reduce(op)?[0])
    }

    pub(super) fn update(&self, op: &Update) -> Result<()> {
        self.interrupt.check()?;
        self.x.update(op)
    }

    /// `Σ c ℓ_μ(y, z + b)`.
    pub(super) fn data_term(&self, env: Envelope, b: f64) -> Result<f64> {
        let bs = vec![b];
        self.scalar(&Op::Loss {
            env,
            bs,
            step: None,
        })
    }

    /// The intercept minimising the loss's own data term for the current `z`, from `start`
    /// ([`Loss::best_intercept`](crate::losses::Loss::best_intercept)).
    pub(super) fn best_intercept(&self, start: f64) -> Result<f64> {
        let env: Envelope = self.cfg.loss.into();
        intercept_search(
            start,
            self.x.search_points(),
            |bs| {
                self.reduce(&Op::InterceptSlope {
                    env,
                    bs: bs.to_vec(),
                })
            },
            |bs| {
                self.reduce(&Op::Loss {
                    env,
                    bs: bs.to_vec(),
                    step: None,
                })
            },
        )
    }

    /// The intercept minimising the loss's data term at `z = 0` (the cold start): with
    /// targets `±1` the term is `c₊ ℓ(1, b) + c₋ ℓ(−1, b)`, whose search needs one pass for
    /// the labels' weights and no more (a cluster's round trips); otherwise
    /// [`Problem::best_intercept`].
    pub(super) fn start_intercept(&self) -> Result<f64> {
        let s = self.reduce(&Op::LabelWeights)?;
        if s[2] > 0.0 {
            return self.best_intercept(0.0);
        }
        let env: Envelope = self.cfg.loss.into();
        let both = |f: &dyn Fn(f64, f64) -> f64, bs: &[f64]| -> Result<Vec<f64>> {
            Ok(bs
                .iter()
                .map(|&b| s[0] * f(1.0, b) + s[1] * f(-1.0, b))
                .collect())
        };
        intercept_search(
            0.0,
            1,
            |bs| both(&|y, b| env.deriv(y, b), bs),
            |bs| both(&|y, b| env.value(y, b), bs),
        )
    }

    /// The natural dual point `ρ̃_i = −c_i ℓ_μ'(z_i + b)` centred into the dual's domain
    /// ([`Loss::centre_dual`](crate::losses::Loss::centre_dual), by its passes over the rows).
    /// Also the data term `Σ c ℓ_μ(y, z + b)`, from the same pass.
    fn dual_point(&self, env: Envelope, b: f64) -> Result<(DualPoint, f64)> {
        let s = self.reduce(&Op::Centre { env, b })?;
        let mean = s[0] / self.x.n() as f64;
        let shift = if s[1] >= mean && s[2] <= mean {
            Shift::Mean(mean)
        } else {
            // The root lies within `max |v| + max c`: a bracket on the entries' own scale, so
            // that a search to `10⁻⁹` of it is as accurate for `C = 10⁻⁶` as for `C = 1`.
            let span = (s[3] + s[4]).max(f64::MIN_POSITIVE);
            let tau = centre_tau(span, self.x.centre_points(), |taus| {
                self.reduce(&Op::CentreTau {
                    env,
                    b,
                    taus: taus.to_vec(),
                })
            })?;
            // Remove the bisection's rounding residual from the entries strictly inside.
            let free = self.reduce(&Op::CentreFree { env, b, tau })?;
            let shift = if free[1] > 0.0 {
                free[0] / free[1]
            } else {
                0.0
            };
            Shift::Clipped { tau, shift }
        };
        Ok((DualPoint { env, b, shift }, s[5]))
    }
}

/// The point, its gradient and what the certificate found there.
pub(super) struct Point {
    /// The objective the steps minimise: `P` with the loss `ℓ_μ` of the level.
    pub(super) primal: f64,
    /// The loss part `C Σ ℓ_μ` of `primal`.
    pub(super) data: f64,
    /// `Σ_i c_i ℓ_μ'(y_i, z_i + b)`: the intercept's gradient.
    pub(super) d1_sum: f64,
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
pub(super) fn certify(
    p: &Problem<'_>,
    env: Envelope,
    level: &BlockPenalty,
    (w, b): (&[f64], f64),
    tracker: &mut Tracker<'_>,
    best: &mut Best,
) -> Result<Point> {
    let Problem { x, cfg, .. } = *p;
    let loss = cfg.loss;
    let norms: Vec<f64> = (0..x.m()).map(|m| norm(&w[x.block(m)])).collect();
    let pen = cfg.penalty.value(&norms);
    let (dual, data) = p.dual_point(env, b)?;
    let primal = data + level.value(&norms);
    let (exact, b_exact) = if env.mu == 0.0 {
        (data + pen, b)
    } else {
        let bx = p.best_intercept(b)?;
        (p.data_term(loss.into(), bx)? + pen, bx)
    };
    let r = x.width();
    let mut prods = p.reduce(&Op::Gradient { dual })?;
    let d1_sum = prods[2 * r];
    let u = prods.split_off(r);
    let grad = prods;
    let dual_norms: Vec<f64> = (0..x.m()).map(|m| norm(&u[x.block(m)])).collect();
    let dual_of = |conj: Envelope| {
        best_envelope_dual_by(&dual_norms, &cfg.penalty, x.search_points(), |ts| {
            let ts = ts.to_vec();
            p.reduce(&Op::Conjugate { dual, conj, ts })
        })
    };
    let dual_value = dual_of(loss.into())?;
    let level_gap = if env.mu == 0.0 {
        0.0
    } else {
        // The exact penalty: a smoothed `group` is above it by its smoothing, which would
        // hold this gap above `tol` (docs/mathematics.md §2.13).
        relative_gap(data + pen, dual_of(env)?)
    };
    // ℓp's and group's steps take every kernel: no working set to choose.
    let viol = match cfg.penalty {
        BlockPenalty::Sparse(sp) => (0..x.m())
            .map(|m| subgradient_distance(sp.weights(), &grad[x.block(m)], &w[x.block(m)]))
            .collect(),
        BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => vec![0.0; x.m()],
    };
    let active = norms.iter().filter(|&&s| s > 0.0).count();
    // The newest iterate unless its `P` is above the best beyond rounding: near the optimum
    // the last iterates' values agree to rounding, where a choice by `<` flips with the
    // order of the sums (a cluster's chunks against memory), and the newest is the most
    // accurate. The recorded `P` stays the least (at most 1e-13 relative below this one's).
    let least = tracker.best_primal();
    if exact < least || exact <= least + 1e-13 * least.abs() {
        let weights = cfg.penalty.kernel_weights(&norms, &dual_norms);
        best.keep(p, (w, b_exact), weights, (&norms, &dual_norms), dual)?;
    }
    // The coefficients are formed once, at the end ([`Best::coef`]).
    let gap = tracker.record_with(exact, (dual_value, None), active, || Model {
        coef: Vec::new(),
        intercept: b_exact,
        weights: cfg.penalty.kernel_weights(&norms, &dual_norms),
        norms: norms.clone(),
    });
    Ok(Point {
        primal,
        data,
        d1_sum,
        grad,
        viol,
        gap,
        level_gap,
    })
}
