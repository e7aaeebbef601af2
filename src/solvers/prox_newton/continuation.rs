//! The continuations of proximal Newton (docs/mathematics.md §2.13): the smoothing of the
//! losses without a second derivative ([`Smoothing`]) and of group MKL's penalty
//! ([`GroupLevel`]). The steps minimise the smoothed problem of a level; every certificate is
//! the exact problem's.

use super::certificate::{Point, Problem};
use super::rows::{Curvature, DualPoint, Op, Shift};
use crate::error::Result;
use crate::linalg::norm;
use crate::losses::{Envelope, Loss};
use crate::penalties::{BlockPenalty, GroupPenalty};

/// The smoothing continuation of group MKL's penalty (docs/mathematics.md §2.13): the steps
/// minimise `P` with [`GroupPenalty`] smoothed at a level `ν`, block norms by `ε = ν a` and
/// the max across groups at the temperature `τ = ν Ω₀` (`a`, `Ω₀`: the scales of a block norm
/// and of `max_j Σ_{k∈G_j} s_k` at the start), while every certificate is the exact problem's.
/// With a smooth loss `ν` starts at 1 and drops by [`GroupLevel::FACTOR`] once the Newton
/// decrement is at most `tol/4` of the level's objective (one level per step: a level lowered
/// on a stale decrement would skip towards `ν ≈ 0`, where the Hessian is as ill-conditioned
/// as the kinks). With the hinge and ε-insensitive losses it follows the loss's `μ`
/// ([`Smoothing`]), [`GroupLevel::LIGHT`] times lighter, so that the level's gap (read with
/// the exact penalty) measures nearly the objective the steps minimise.
pub(super) struct GroupLevel {
    exact: GroupPenalty,
    a: f64,
    omega0: f64,
    nu: f64,
    /// `ν` is not lowered below this.
    floor: f64,
    /// The last pass lowered `ν` (smooth losses).
    lowered: bool,
}

impl GroupLevel {
    const FACTOR: f64 = 0.3;
    const LIGHT: f64 = 1e-2;

    /// The first level at the start `(w, b)` (`warm`: a given start,
    /// [`Smoothing::WARM_SKIP`] levels on), following `smoothing` when the loss has one.
    /// The scales: from the start's block norms when it has any, else from the ridge step
    /// `w_0 = −(diag(H) + I)⁻¹ g` at `w = 0` (`g` the loss's gradient, `H`'s diagonal from the
    /// curvature per point, every point in the zone of a smoothed loss).
    pub(super) fn start(
        exact: &GroupPenalty,
        p: &Problem<'_>,
        smoothing: Option<&Smoothing>,
        (w, b): (&[f64], f64),
        warm: bool,
    ) -> Result<Self> {
        let x = p.x;
        let env = smoothing.map_or(p.cfg.loss.into(), |s| s.env);
        let block_norms =
            |v: &[f64]| -> Vec<f64> { (0..x.m()).map(|m| norm(&v[x.block(m)])).collect() };
        let mut s = block_norms(w);
        if s.iter().all(|&v| v == 0.0) {
            let shift = Shift::Mean(0.0);
            let dual = DualPoint { env, b, shift };
            let g = p.reduce(&Op::Gradient { dual })?;
            let weight = match smoothing {
                Some(sm) => Curvature::Zone { mu: sm.env.mu },
                None => Curvature::Second { env, b },
            };
            let diag = p.reduce(&Op::Squares { weight })?;
            let w0: Vec<f64> = g
                .iter()
                .zip(&diag)
                .map(|(gi, di)| -gi / (di + 1.0))
                .collect();
            s = block_norms(&w0);
        }
        let cold = if warm {
            GroupLevel::FACTOR.powi(Smoothing::WARM_SKIP)
        } else {
            1.0
        };
        let light = if smoothing.is_some() {
            GroupLevel::LIGHT
        } else {
            1.0
        };
        Ok(GroupLevel::new(exact, &s, light * cold))
    }

    /// The first level `nu` with the scales of the block norms `s`.
    fn new(exact: &GroupPenalty, s: &[f64], nu: f64) -> Self {
        let a = s.iter().sum::<f64>() / s.len().max(1) as f64;
        let omega0 = exact.parts(s).1;
        let (a, omega0) = if a > 0.0 && omega0 > 0.0 && (a * omega0).is_finite() {
            (a, omega0)
        } else {
            (1.0, 1.0)
        };
        GroupLevel {
            exact: exact.clone(),
            a,
            omega0,
            nu,
            floor: 1e-12 * nu,
            lowered: false,
        }
    }

    /// The penalty the steps minimise at this level.
    pub(super) fn penalty(&self) -> BlockPenalty {
        BlockPenalty::Group(self.exact.smoothed(self.nu * self.a, self.nu * self.omega0))
    }

    /// Whether `ν` can still be lowered.
    pub(super) fn above_floor(&self) -> bool {
        self.nu > self.floor
    }

    /// With a smoothed loss: the next level, following the loss's `μ`.
    pub(super) fn follow(&mut self) {
        self.nu = (self.nu * Smoothing::FACTOR).max(self.floor);
    }

    /// With a smooth loss, after a Newton direction of decrement `decrement` at a point of
    /// objective `primal`: lowers `ν` when the level is solved (the decrement at most `tol/4`
    /// of the objective), not on two passes in a row. Whether it did.
    pub(super) fn lower(&mut self, decrement: f64, tol: f64, primal: f64) -> bool {
        if !self.lowered && self.nu > self.floor && decrement <= 0.25 * tol * primal.abs() {
            self.nu *= GroupLevel::FACTOR;
            self.lowered = true;
            return true;
        }
        self.lowered = false;
        false
    }
}

/// The smoothing continuation for the losses without a second derivative (hinge,
/// ε-insensitive; docs/mathematics.md §2.13): Newton steps on the Moreau envelope `ℓ_μ`, `μ`
/// lowered by [`Smoothing::FACTOR`] whenever the smoothed problem's gap is at most `tol/2`,
/// while the certificate is always the loss's own. Once `μ` is small the smoothing zone holds
/// about the margin's support vectors, fewer than the working set's columns, and the Hessian
/// is singular: it gets a Levenberg–Marquardt damping ([`Smoothing::damp`]).
pub(super) struct Smoothing {
    pub(super) env: Envelope,
    /// `μ` is not lowered below this (`10⁻¹²` of the first).
    pub(super) floor: f64,
    kappa: f64,
    /// The last step was below what `P_μ` resolves: the level is as solved as it gets.
    pub(super) flat: bool,
    /// Per column `Σ_i c_i x_ij²` (floored at `10⁻¹²` of the largest), and `Σ_i c_i`: the
    /// damping's scale per coordinate.
    col_scale: Vec<f64>,
    total_cost: f64,
}

impl Smoothing {
    const FACTOR: f64 = 0.3;
    const KAPPA_FLOOR: f64 = 1e-10;
    const WARM_SKIP: i32 = 3;

    /// The first level: `μ = 1` for the hinge (the margin's scale); for the ε-insensitive
    /// loss the mean absolute deviation of `y` (the residuals' scale), or 1 when `y` is
    /// constant; [`Smoothing::WARM_SKIP`] levels lower from a warm start, which is near an
    /// optimum already. `None` for the losses with a second derivative.
    pub(super) fn start(p: &Problem<'_>, warm: bool) -> Result<Option<Self>> {
        let loss = p.cfg.loss;
        if !matches!(loss, Loss::Hinge | Loss::EpsilonInsensitive { .. }) {
            return Ok(None);
        }
        let moments = p.reduce(&Op::Moments)?;
        let n = moments[1].max(1.0);
        let mu = match loss {
            Loss::EpsilonInsensitive { .. } => {
                let mean = moments[0] / n;
                let mad = p.scalar(&Op::AbsDev { mean })? / n;
                if mad > 0.0 && mad.is_finite() {
                    mad
                } else {
                    1.0
                }
            }
            _ => 1.0,
        };
        let mu = if warm {
            mu * Self::FACTOR.powi(Self::WARM_SKIP)
        } else {
            mu
        };
        let weight = Curvature::Cost;
        let mut col_scale = p.reduce(&Op::Squares { weight })?;
        let top = col_scale.iter().fold(0.0f64, |a, &v| a.max(v));
        col_scale.iter_mut().for_each(|v| *v = v.max(1e-12 * top));
        Ok(Some(Smoothing {
            env: Envelope { loss, mu },
            floor: 1e-12 * mu,
            kappa: 1e-3,
            flat: false,
            col_scale,
            total_cost: moments[2],
        }))
    }

    /// Lowers `μ` when the level is solved (its gap at most `tol/2`, or its last step flat);
    /// false when it stays (or is at its floor).
    pub(super) fn next_level(&mut self, pt: &Point, tol: f64) -> bool {
        if !(self.flat || pt.level_gap <= 0.5 * tol) || self.env.mu <= self.floor {
            return false;
        }
        self.env.mu *= Self::FACTOR;
        self.flat = false;
        true
    }

    /// The damping of the diagonal (the working set's columns `cols`, then the intercept),
    /// per coordinate in proportion to its curvature were every point in the zone
    /// (Marquardt's scaling: the step does not depend on the features' units).
    pub(super) fn damping(&self, cols: &[usize]) -> Vec<f64> {
        let scale = self.kappa / (cols.len().max(1) as f64 * self.env.mu);
        let mut d: Vec<f64> = cols.iter().map(|&j| scale * self.col_scale[j]).collect();
        d.push(scale * self.total_cost);
        d
    }

    /// Adds the [`Smoothing::damping`] to the diagonal of `hess`.
    pub(super) fn damp(&self, hess: &mut [f64], cols: &[usize]) {
        let k = cols.len() + 1;
        for (i, d) in self.damping(cols).into_iter().enumerate() {
            hess[i * k + i] += d;
        }
    }

    /// `κ` after a step of length `t`: ÷4 after a whole step, ×4 after a shortened one.
    pub(super) fn adapt(&mut self, t: f64) {
        self.kappa = if t == 1.0 {
            (self.kappa / 4.0).max(Self::KAPPA_FLOOR)
        } else {
            self.kappa * 4.0
        };
    }
}
