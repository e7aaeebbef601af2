//! Losses `ℓ(y, z)` and their convex conjugates `ℓ*(y, u) = sup_z (u z − ℓ(y, z))`, the one
//! place every primal value and every dual value is computed (docs/mathematics.md §0).

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};

/// A loss of a label `y` and a prediction `z`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// `max(0, 1 − yz)`; `ℓ*(y,u) = yu` for `−1 ≤ yu ≤ 0`.
    Hinge,
    /// `½ max(0, 1 − yz)²`; `ℓ*(y,u) = −s + s²/2`, `s = −yu ≥ 0`.
    SquaredHinge,
    /// `log(1 + e^{−yz})`; `ℓ*(y,u) = s log s + (1−s) log(1−s)`, `s = −yu ∈ [0, 1]`.
    Logistic,
    /// `½ (y − z)²`; `ℓ*(y,u) = ½u² + yu`.
    Squared,
    /// `max(0, |y − z| − ε)`; `ℓ*(y,u) = yu + ε|u|` for `|u| ≤ 1`.
    EpsilonInsensitive { epsilon: f64 },
}

/// A loss or its Moreau envelope `ℓ_μ` ([`Loss::moreau`]; `μ = 0`: the loss itself): what the
/// Newton steps of `prox_newton` see for the losses without a second derivative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Envelope {
    pub loss: Loss,
    pub mu: f64,
}

impl From<Loss> for Envelope {
    fn from(loss: Loss) -> Self {
        Envelope { loss, mu: 0.0 }
    }
}

impl Envelope {
    // The loss's own functions at `μ = 0` ([`Loss::moreau`] would compute all three).
    #[inline]
    pub fn value(&self, y: f64, z: f64) -> f64 {
        if self.mu == 0.0 {
            return self.loss.value(y, z);
        }
        self.loss.moreau(y, z, self.mu)[0]
    }

    #[inline]
    pub fn deriv(&self, y: f64, z: f64) -> f64 {
        if self.mu == 0.0 {
            return self.loss.deriv(y, z);
        }
        self.loss.moreau(y, z, self.mu)[1]
    }

    #[inline]
    pub fn deriv2(&self, y: f64, z: f64) -> f64 {
        if self.mu == 0.0 {
            return self.loss.deriv2(y, z);
        }
        self.loss.moreau(y, z, self.mu)[2]
    }

    /// `ℓ_μ*(y, u) = ℓ*(y, u) + μu²/2`.
    #[inline]
    pub fn conjugate(&self, y: f64, u: f64) -> f64 {
        self.loss.conjugate(y, u) + 0.5 * self.mu * u * u
    }

    /// `Σ_i c_i ℓ_μ(y_i, f_i + b)`.
    pub fn weighted_total(&self, y: &[f64], f: &[f64], b: f64, c: &[f64]) -> f64 {
        y.iter()
            .zip(f)
            .zip(c)
            .map(|((&yi, &fi), &ci)| ci * self.value(yi, fi + b))
            .sum()
    }
}

/// The default width `ε` of the insensitive tube (the estimators' `epsilon=`).
pub const DEFAULT_EPSILON: f64 = 0.1;

/// The loss as its two settings, `loss` (the name) and `epsilon` (read by
/// `epsilon_insensitive` only).
impl Fields for Loss {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        let mut name = self.name().to_string();
        let mut epsilon = self.epsilon();
        v.text("loss", &mut name)?;
        v.float("epsilon", &mut epsilon)?;
        *self = Loss::parse(&name, epsilon)?;
        Ok(())
    }
}

impl Loss {
    /// The names of every loss, as [`Loss::parse`] reads them.
    pub const NAMES: [&'static str; 5] = [
        "hinge",
        "squared_hinge",
        "logistic",
        "squared",
        "epsilon_insensitive",
    ];

    /// The loss's name, as [`Loss::parse`] reads it.
    pub fn name(&self) -> &'static str {
        match self {
            Loss::Hinge => "hinge",
            Loss::SquaredHinge => "squared_hinge",
            Loss::Logistic => "logistic",
            Loss::Squared => "squared",
            Loss::EpsilonInsensitive { .. } => "epsilon_insensitive",
        }
    }

    /// `ε` of `epsilon_insensitive`; [`DEFAULT_EPSILON`] for the other losses, which ignore it.
    pub fn epsilon(&self) -> f64 {
        match *self {
            Loss::EpsilonInsensitive { epsilon } => epsilon,
            _ => DEFAULT_EPSILON,
        }
    }

    /// Parses a loss name (`epsilon` is used by `epsilon_insensitive` only).
    pub fn parse(name: &str, epsilon: f64) -> Result<Self> {
        match name {
            "hinge" => Ok(Loss::Hinge),
            "squared_hinge" => Ok(Loss::SquaredHinge),
            "logistic" => Ok(Loss::Logistic),
            "squared" => Ok(Loss::Squared),
            "epsilon_insensitive" => {
                if !(epsilon.is_finite() && epsilon >= 0.0) {
                    return Err(MkError::config(
                        "epsilon",
                        format!("must be ≥ 0, got {epsilon}"),
                    ));
                }
                Ok(Loss::EpsilonInsensitive { epsilon })
            }
            other => Err(MkError::config(
                "loss",
                format!(
                    "unknown loss {other:?}; valid: hinge, squared_hinge, logistic, squared, \
                     epsilon_insensitive"
                ),
            )),
        }
    }

    /// `true` for classification losses (labels ±1).
    pub fn is_classification(&self) -> bool {
        matches!(self, Loss::Hinge | Loss::SquaredHinge | Loss::Logistic)
    }

    /// `ℓ(y, z)`.
    #[inline]
    pub fn value(&self, y: f64, z: f64) -> f64 {
        match *self {
            Loss::Hinge => (1.0 - y * z).max(0.0),
            Loss::SquaredHinge => 0.5 * (1.0 - y * z).max(0.0).powi(2),
            Loss::Logistic => softplus(-y * z),
            Loss::Squared => 0.5 * (y - z) * (y - z),
            Loss::EpsilonInsensitive { epsilon } => ((y - z).abs() - epsilon).max(0.0),
        }
    }

    /// `∂ℓ/∂z` (a subgradient for the non-smooth losses).
    #[inline]
    pub fn deriv(&self, y: f64, z: f64) -> f64 {
        match *self {
            Loss::Hinge => {
                if y * z < 1.0 {
                    -y
                } else {
                    0.0
                }
            }
            Loss::SquaredHinge => -y * (1.0 - y * z).max(0.0),
            Loss::Logistic => -y * sigmoid(-y * z),
            Loss::Squared => z - y,
            Loss::EpsilonInsensitive { epsilon } => {
                let r = z - y;
                if r > epsilon {
                    1.0
                } else if r < -epsilon {
                    -1.0
                } else {
                    0.0
                }
            }
        }
    }

    /// `∂²ℓ/∂z²` (for the Newton solvers of the smooth losses).
    #[inline]
    pub fn deriv2(&self, y: f64, z: f64) -> f64 {
        match *self {
            Loss::SquaredHinge => {
                if y * z < 1.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Loss::Logistic => {
                let s = sigmoid(-y * z);
                s * (1.0 - s)
            }
            Loss::Squared => 1.0,
            Loss::Hinge | Loss::EpsilonInsensitive { .. } => 0.0,
        }
    }

    /// The Moreau envelope `ℓ_μ(y, z) = min_u ℓ(y, u) + (u − z)²/(2μ)` and its first two
    /// derivatives in `z`, `[ℓ_μ, ℓ_μ', ℓ_μ'']`, through the proximal point `p = prox_{μℓ}(z)`:
    /// `ℓ_μ = ℓ(p) + (p − z)²/(2μ)`, `ℓ_μ' = (z − p)/μ`, `ℓ_μ'' = (1 − ∂p/∂z)/μ`
    /// (docs/mathematics.md §2.13). For the hinge it is the Huber-smoothed hinge; its conjugate
    /// is `ℓ* + μu²/2`, and `0 ≤ ℓ − ℓ_μ ≤ μ/2` for the 1-Lipschitz losses. `μ = 0` is the
    /// loss itself (with [`Loss::deriv`] and [`Loss::deriv2`]).
    #[inline]
    pub fn moreau(&self, y: f64, z: f64, mu: f64) -> [f64; 3] {
        if mu == 0.0 {
            return [self.value(y, z), self.deriv(y, z), self.deriv2(y, z)];
        }
        let (p, dp) = self.prox(y, z, mu);
        let r = p - z;
        [
            self.value(y, p) + r * r / (2.0 * mu),
            -r / mu,
            (1.0 - dp) / mu,
        ]
    }

    /// `ℓ*(y, u)`, `+∞` outside the conjugate's domain (a small tolerance absorbs rounding).
    #[inline]
    pub fn conjugate(&self, y: f64, u: f64) -> f64 {
        const TOL: f64 = 1e-9;
        match *self {
            Loss::Hinge => {
                let s = y * u;
                if (-1.0 - TOL..=TOL).contains(&s) {
                    s.clamp(-1.0, 0.0)
                } else {
                    f64::INFINITY
                }
            }
            Loss::SquaredHinge => {
                let s = -y * u;
                if s >= -TOL {
                    let s = s.max(0.0);
                    -s + 0.5 * s * s
                } else {
                    f64::INFINITY
                }
            }
            Loss::Logistic => {
                let s = -y * u;
                if (-TOL..=1.0 + TOL).contains(&s) {
                    let s = s.clamp(0.0, 1.0);
                    // (1 − s)·ln(1 − s) through ln_1p: `ln(1 − s)` loses ~1e-16 absolute for
                    // small s, which the dual multiplies by C (C = 1e14: a relative gap of
                    // −2e-6, D above P).
                    xlogx(s) + xlogx_complement(s)
                } else {
                    f64::INFINITY
                }
            }
            Loss::Squared => 0.5 * u * u + y * u,
            Loss::EpsilonInsensitive { epsilon } => {
                if u.abs() <= 1.0 + TOL {
                    let u = u.clamp(-1.0, 1.0);
                    y * u + epsilon * u.abs()
                } else {
                    f64::INFINITY
                }
            }
        }
    }

    /// `(ψ′, ψ″, ψ‴)(u)` of `ψ(u) = ℓ*(y, u)` inside its domain, for the losses whose conjugate
    /// is smooth there (squared; logistic, with `s = −yu ∈ (0, 1)`, `y = ±1`); `None` for the
    /// others. The barrier of the regularization path needs all three (docs/mathematics.md §5).
    #[inline]
    pub fn conjugate_derivatives(&self, y: f64, u: f64) -> Option<[f64; 3]> {
        match *self {
            Loss::Squared => Some([u + y, 1.0, 0.0]),
            Loss::Logistic => {
                let s = -y * u;
                let w = s * (1.0 - s);
                Some([
                    y * ((-s).ln_1p() - s.ln()),
                    1.0 / w,
                    y * (1.0 - 2.0 * s) / (w * w),
                ])
            }
            _ => None,
        }
    }

    /// The nearest point of the conjugate's domain to `u` (used to make a dual point feasible).
    #[inline]
    pub fn project_conjugate_domain(&self, y: f64, u: f64) -> f64 {
        match *self {
            // yu ∈ [−1, 0] with y = ±1.
            Loss::Hinge | Loss::Logistic => y * (y * u).clamp(-1.0, 0.0),
            Loss::SquaredHinge => y * (y * u).min(0.0),
            Loss::Squared => u,
            Loss::EpsilonInsensitive { .. } => u.clamp(-1.0, 1.0),
        }
    }
}

impl Loss {
    /// The domain `[lo, hi]` of `u ↦ ℓ*(y, u)` (with infinite ends where it is unbounded);
    /// classification losses assume `y = ±1`.
    pub fn conjugate_domain(&self, y: f64) -> (f64, f64) {
        let inf = f64::INFINITY;
        match *self {
            // yu ∈ [−1, 0].
            Loss::Hinge | Loss::Logistic => {
                if y > 0.0 {
                    (-1.0, 0.0)
                } else {
                    (0.0, 1.0)
                }
            }
            // yu ≤ 0.
            Loss::SquaredHinge => {
                if y > 0.0 {
                    (-inf, 0.0)
                } else {
                    (0.0, inf)
                }
            }
            Loss::Squared => (-inf, inf),
            Loss::EpsilonInsensitive { .. } => (-1.0, 1.0),
        }
    }

    /// `∂ℓ*(y, u)/∂u` inside the domain (for hinge and ε-insensitive, the derivative of the
    /// linear pieces; `±∞` at the logistic boundary).
    #[inline]
    pub fn conjugate_grad(&self, y: f64, u: f64) -> f64 {
        match *self {
            Loss::Hinge => y,
            // ℓ* = −s + s²/2, s = −yu: dℓ*/du = −y(s − 1).
            Loss::SquaredHinge => y * (1.0 + y * u),
            // ℓ* = s log s + (1−s) log(1−s), s = −yu: dℓ*/du = −y log(s/(1−s)).
            Loss::Logistic => {
                let s = -y * u;
                -y * (s.ln() - (1.0 - s).ln())
            }
            Loss::Squared => u + y,
            Loss::EpsilonInsensitive { epsilon } => y + epsilon * u.signum(),
        }
    }

    /// `∂²ℓ*(y, u)/∂u²` inside the domain (0 on the linear pieces of hinge and ε-insensitive).
    #[inline]
    pub fn conjugate_hess(&self, y: f64, u: f64) -> f64 {
        match *self {
            Loss::Hinge | Loss::EpsilonInsensitive { .. } => 0.0,
            Loss::SquaredHinge => y * y,
            Loss::Logistic => {
                let s = -y * u;
                y * y / (s * (1.0 - s))
            }
            Loss::Squared => 1.0,
        }
    }

    /// `prox_{γℓ(y,·)}(w) = argmin_z ℓ(y, z) + (z − w)²/(2γ)` and its derivative in `w`
    /// (the slack updates of SpicyMKL, `solvers::spicy`). Classification losses assume `y = ±1`.
    pub fn prox(&self, y: f64, w: f64, gamma: f64) -> (f64, f64) {
        match *self {
            Loss::Hinge => {
                // In t = yw: identity above the hinge, shift by γ below it, the kink between.
                let t = y * w;
                if t >= 1.0 {
                    (w, 1.0)
                } else if t <= 1.0 - gamma {
                    (y * (t + gamma), 1.0)
                } else {
                    (y, 0.0)
                }
            }
            Loss::SquaredHinge => {
                let t = y * w;
                if t >= 1.0 {
                    (w, 1.0)
                } else {
                    (y * (t + gamma) / (1.0 + gamma), 1.0 / (1.0 + gamma))
                }
            }
            Loss::Squared => ((w + gamma * y) / (1.0 + gamma), 1.0 / (1.0 + gamma)),
            Loss::EpsilonInsensitive { epsilon } => {
                let r = w - y;
                if r.abs() <= epsilon {
                    (w, 1.0)
                } else if r.abs() <= epsilon + gamma {
                    (y + epsilon * r.signum(), 0.0)
                } else {
                    (w - gamma * r.signum(), 1.0)
                }
            }
            Loss::Logistic => {
                // z + γℓ'(z) = w is strictly increasing in z: safeguarded Newton from z = w.
                let (mut lo, mut hi) = (w - gamma, w + gamma);
                let mut z = w;
                for _ in 0..100 {
                    let g = z - w + gamma * self.deriv(y, z);
                    let step = g / (1.0 + gamma * self.deriv2(y, z));
                    if step.abs() <= 1e-15 * (1.0 + z.abs()) {
                        break;
                    }
                    if g > 0.0 {
                        hi = z;
                    } else {
                        lo = z;
                    }
                    let next = z - step;
                    z = if next > lo && next < hi {
                        next
                    } else {
                        0.5 * (lo + hi)
                    };
                }
                (z, 1.0 / (1.0 + gamma * self.deriv2(y, z)))
            }
        }
    }
}

impl Loss {
    /// `Σ_i ℓ(y_i, f_i + b)`, the data term of every primal value.
    pub fn total(&self, y: &[f64], f: &[f64], b: f64) -> f64 {
        y.iter()
            .zip(f)
            .map(|(&yi, &fi)| self.value(yi, fi + b))
            .sum()
    }

    /// `Σ_i c_i ℓ(y_i, f_i + b)`, the data term with the per-sample loss weights `c` of
    /// [`costs`].
    pub fn weighted_total(&self, y: &[f64], f: &[f64], b: f64, c: &[f64]) -> f64 {
        Envelope::from(*self).weighted_total(y, f, b, c)
    }

    /// The natural dual point `ρ̃_i = −c_i ℓ'(y_i, f_i + b)` of a model (docs/mathematics.md
    /// §1.2), before [`Loss::centre_dual`] makes it feasible (a subgradient for the non-smooth
    /// losses); `c` holds the per-sample loss weights ([`costs`]).
    pub fn natural_dual(&self, y: &[f64], f: &[f64], b: f64, c: &[f64]) -> Vec<f64> {
        y.iter()
            .zip(f)
            .zip(c)
            .map(|((&yi, &fi), &ci)| -ci * self.deriv(yi, fi + b))
            .collect()
    }

    /// The clipped shift of a dual candidate `ρ̃` to `Σ ρ̃ = 0` inside the conjugate's domain
    /// (docs/mathematics.md §1.4, steps 1–2): `ρ̃_i ← clip(ρ̃_i − τ, lo_i, hi_i)`, where
    /// `[lo_i, hi_i] = [−c_i·hi_u, −c_i·lo_u]` is the domain of `ρ̃_i ↦ ℓ*(y_i, −ρ̃_i/c_i)`; `τ`
    /// by bisection (`Σ clip(ρ̃ − τ)` is non-increasing in `τ`), or the mean when that stays
    /// inside. Shared by every solver that makes a dual point from a model (SpicyMKL, ℓp,
    /// SVRG); `c` holds the per-sample loss weights ([`costs`]).
    pub fn centre_dual(&self, y: &[f64], rho: &[f64], c: &[f64]) -> Vec<f64> {
        let bounds: Vec<(f64, f64)> = y
            .iter()
            .zip(c)
            .map(|(&yi, &ci)| {
                let (lo_u, hi_u) = self.conjugate_domain(yi);
                (-ci * hi_u, -ci * lo_u)
            })
            .collect();
        let c_max = c.iter().fold(0.0f64, |a, &v| a.max(v));
        let clip = |r: f64, (lo, hi): (f64, f64)| r.max(lo).min(hi);
        let mut r: Vec<f64> = rho.iter().zip(&bounds).map(|(&v, &b)| clip(v, b)).collect();
        let n = r.len() as f64;
        let mean = r.iter().sum::<f64>() / n;
        let fits = r
            .iter()
            .zip(&bounds)
            .all(|(&v, &(lo, hi))| v - mean >= lo && v - mean <= hi);
        if fits {
            r.iter_mut().for_each(|v| *v -= mean);
            return r;
        }
        let total = |t: f64| -> f64 { r.iter().zip(&bounds).map(|(&v, &b)| clip(v - t, b)).sum() };
        let span = r.iter().fold(0.0f64, |a, v| a.max(v.abs())) + c_max + 1.0;
        let tau = centre_tau(span, 1, |ts| {
            Ok::<Vec<f64>, std::convert::Infallible>(ts.iter().map(|&t| total(t)).collect())
        })
        .unwrap_or_else(|e| match e {});
        r = r
            .iter()
            .zip(&bounds)
            .map(|(&v, &b)| clip(v - tau, b))
            .collect();
        // Remove the bisection's rounding residual from the entries strictly inside.
        let free: Vec<usize> = (0..r.len())
            .filter(|&i| r[i] > bounds[i].0 && r[i] < bounds[i].1)
            .collect();
        if !free.is_empty() {
            let shift = r.iter().sum::<f64>() / free.len() as f64;
            for &i in &free {
                r[i] = clip(r[i] - shift, bounds[i]);
            }
        }
        r
    }

    /// The intercept minimising `Σ_i c_i ℓ(y_i, f_i + b)` for fixed `f`, by bisection on the
    /// monotone (sub)derivative `Σ_i c_i ℓ'(y_i, f_i + b)`, starting from `start` (`c`: the
    /// per-sample loss weights of [`costs`]; only their ratios matter).
    ///
    /// Every `b` gives a valid primal value; the best one makes the reported primal tight even
    /// when the inner solver's intercept rule is not primal-optimal (libsvm's average over free
    /// support vectors, or the midpoint when none is free).
    pub fn best_intercept(&self, y: &[f64], f: &[f64], c: &[f64], start: f64) -> f64 {
        let slope = |b: f64| -> f64 {
            y.iter()
                .zip(f)
                .zip(c)
                .map(|((&yi, &fi), &ci)| ci * self.deriv(yi, fi + b))
                .sum()
        };
        let total = |b: f64| self.weighted_total(y, f, b, c);
        intercept_search(
            start,
            1,
            |bs| Ok::<Vec<f64>, std::convert::Infallible>(bs.iter().map(|&b| slope(b)).collect()),
            |bs| Ok(bs.iter().map(|&b| total(b)).collect()),
        )
        .unwrap_or_else(|e| match e {})
    }
}

/// [`Loss::best_intercept`] given the data term's slope and value as functions of `b`, each
/// evaluated at `k` points at a time (`slope(bs)`, `total(bs)`: a pass over the rows wherever
/// they are, e.g. proximal Newton's chunks on a cluster, where a pass costs a round trip):
/// the bracket grows by doubling steps, `k` per pass, and then shrinks `k + 1`-fold per pass
/// (bisection at `k = 1`).
pub fn intercept_search<E>(
    start: f64,
    k: usize,
    mut slope: impl FnMut(&[f64]) -> std::result::Result<Vec<f64>, E>,
    mut total: impl FnMut(&[f64]) -> std::result::Result<Vec<f64>, E>,
) -> std::result::Result<f64, E> {
    let s0 = slope(&[start])?[0];
    if s0 == 0.0 || !start.is_finite() {
        return Ok(start);
    }
    // Bracket the sign change of the slope.
    let dir = if s0 > 0.0 { -1.0 } else { 1.0 };
    let mut step = 1e-3 * (1.0 + start.abs());
    let (mut lo, mut hi) = (start, start);
    let mut found = false;
    let mut tried = 0;
    while tried < 200 && !found {
        let mut bs = Vec::with_capacity(k);
        while bs.len() < k.max(1) && tried + bs.len() < 200 {
            bs.push(start + dir * step);
            step *= 2.0;
        }
        tried += bs.len();
        for (&b, v) in bs.iter().zip(slope(&bs)?) {
            if v * s0 <= 0.0 {
                if dir > 0.0 {
                    hi = b;
                } else {
                    lo = b;
                }
                found = true;
                break;
            }
            if dir > 0.0 {
                lo = b;
            } else {
                hi = b;
            }
        }
    }
    if !found {
        return Ok(start);
    }
    for _ in 0..100 {
        let mids = section_points(lo, hi, k);
        if mids.is_empty() {
            break;
        }
        for (&m, v) in mids.iter().zip(slope(&mids)?) {
            if v > 0.0 {
                hi = m;
                break;
            }
            lo = m;
        }
    }
    // For piecewise-linear losses the minimum is at the kink the bracket closed on; keep
    // whichever end (or the start) is lowest, so the result is never worse than `start`.
    let ends = [start, lo, hi];
    let values = total(&ends)?;
    let mut best = (values[0], start);
    for (&b, &v) in ends.iter().zip(&values).skip(1) {
        if v < best.0 {
            best = (v, b);
        }
    }
    Ok(best.1)
}

/// The `k` points that cut `(lo, hi)` into `k + 1` equal parts (the midpoint at `k = 1`),
/// those strictly inside only: none once the interval holds no other number.
fn section_points(lo: f64, hi: f64, k: usize) -> Vec<f64> {
    let mut pts: Vec<f64> = if k <= 1 {
        vec![0.5 * (lo + hi)]
    } else {
        (1..=k)
            .map(|j| lo + (hi - lo) * (j as f64 / (k + 1) as f64))
            .collect()
    };
    pts.retain(|&m| m > lo && m < hi);
    pts.dedup();
    pts
}

/// The shift `τ` of [`Loss::centre_dual`]'s clipped case: the root of the non-increasing
/// `total(τ) = Σ clip(ρ̃ − τ)` in `[−span, span]`, `k` points per evaluation of `total`
/// (a pass over the rows, wherever they are). Bisection at `k = 1`, to the last bit; with
/// more points to `10⁻⁹ span`, since the caller's shift of the entries strictly inside
/// removes the residual of `Σ = 0` whatever `τ` is (a few passes instead of fifty).
pub fn centre_tau<E>(
    span: f64,
    k: usize,
    mut total: impl FnMut(&[f64]) -> std::result::Result<Vec<f64>, E>,
) -> std::result::Result<f64, E> {
    let (mut lo, mut hi) = (-span, span);
    for _ in 0..200 {
        if k > 1 && hi - lo <= 1e-9 * span {
            break;
        }
        let mids = section_points(lo, hi, k);
        if mids.is_empty() {
            break;
        }
        for (&m, v) in mids.iter().zip(total(&mids)?) {
            if v > 0.0 {
                lo = m;
            } else {
                hi = m;
                break;
            }
        }
    }
    Ok(0.5 * (lo + hi))
}

/// Hinge points this far inside the margin (`0 < 1 − y(f + b) ≤ NEAR_MARGIN`) are lifted onto
/// it by [`Loss::lift_to_margin`].
const NEAR_MARGIN: f64 = 1e-6;

impl Loss {
    /// A better primal point on the ray `t·(f, b)`, `t ≥ 1`, for the hinge loss: the one that
    /// puts every point within `NEAR_MARGIN` inside the margin onto it. A solver's KKT
    /// tolerance leaves such points (margins `1 − 1e-12`), each costing `C·(1 − y(f + b))`
    /// in `P`, which matters when the objective itself is tiny: with a kernel scaled by 1e12,
    /// `P ≈ 6e-10` and these terms held the gap at 4.5e-3 at the inner solver's finest
    /// accuracy. Scaling the model (`A`, `b`) by `t = 1/(1 − v_max)` costs `(t² − 1)·penalty`
    /// for a penalty homogeneous of degree 2 in the block norms (ℓp, group) and is taken only
    /// when the primal value, recomputed from scratch, is lower. Returns `(t, b', P')`.
    pub fn lift_to_margin(
        &self,
        y: &[f64],
        f: &[f64],
        b: f64,
        c: &[f64],
        penalty: f64,
        primal: f64,
    ) -> Option<(f64, f64, f64)> {
        self.lift_to_margin_with(y, f, b, c, |t| t * t * penalty, primal)
    }

    /// [`Loss::lift_to_margin`] for any penalty: `penalty_at(t)` is the penalty of the model
    /// scaled by `t` (`l1`: `t Σ s_m`; elastic net: `Σ (r_1 t s_m + r_2 t² s_m²/2)`).
    pub fn lift_to_margin_with(
        &self,
        y: &[f64],
        f: &[f64],
        b: f64,
        c: &[f64],
        penalty_at: impl Fn(f64) -> f64,
        primal: f64,
    ) -> Option<(f64, f64, f64)> {
        if *self != Loss::Hinge {
            return None;
        }
        let v_max = y
            .iter()
            .zip(f)
            .map(|(&yi, &fi)| 1.0 - yi * (fi + b))
            .filter(|&v| v > 0.0 && v <= NEAR_MARGIN)
            .fold(0.0f64, f64::max);
        if v_max == 0.0 {
            return None;
        }
        // A few ulps more, so that rounding leaves the lifted points on the right side.
        let t = (1.0 + 4.0 * f64::EPSILON) / (1.0 - v_max);
        let bt = t * b;
        let scaled: Vec<f64> = f.iter().map(|fi| t * fi).collect();
        let lifted = self.weighted_total(y, &scaled, bt, c) + penalty_at(t);
        (lifted < primal).then_some((t, bt, lifted))
    }
}

/// The per-sample loss weights `c_i = C·w_i` of the data term `Σ_i c_i ℓ(y_i, z_i)`
/// (docs/mathematics.md §0): `C` alone when `sample_weight` is `None`. Weights must be finite
/// and > 0 (the estimators drop the samples of weight 0, as libsvm does: such a sample has
/// no loss, and `1/c_i` would be infinite in the squared losses' systems).
pub fn costs(c: f64, sample_weight: Option<&[f64]>, n: usize) -> Result<Vec<f64>> {
    let Some(w) = sample_weight else {
        return Ok(vec![c; n]);
    };
    if w.len() != n {
        return Err(MkError::Shape(format!(
            "sample_weight has {} values for {n} samples",
            w.len()
        )));
    }
    if let Some(bad) = w.iter().find(|&&v| !(v.is_finite() && v > 0.0)) {
        return Err(MkError::config(
            "sample_weight",
            format!("must be finite and > 0, got {bad}"),
        ));
    }
    Ok(w.iter().map(|v| c * v).collect())
}

/// `log(1 + e^x)` without overflow.
#[inline]
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `1 / (1 + e^{−x})` without overflow.
#[inline]
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `(1 − s)·ln(1 − s)` accurate for small `s`, 0 at `s = 1`.
#[inline]
fn xlogx_complement(s: f64) -> f64 {
    if s < 1.0 {
        (1.0 - s) * (-s).ln_1p()
    } else {
        0.0
    }
}

#[inline]
fn xlogx(x: f64) -> f64 {
    if x > 0.0 {
        x * x.ln()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One instance of every loss.
    const ALL: [Loss; 5] = [
        Loss::Hinge,
        Loss::SquaredHinge,
        Loss::Logistic,
        Loss::Squared,
        Loss::EpsilonInsensitive { epsilon: 0.3 },
    ];

    /// The logistic conjugate `s ln s + (1 − s) ln(1 − s)` to relative accuracy at small `s`,
    /// where the dual multiplies it by `C` (series `s ln s − s + Σ_{k≥2} s^k/(k(k−1))`); and its
    /// endpoints.
    #[test]
    fn logistic_conjugate_is_accurate_near_the_domain_edge() {
        for s in [1e-14f64, 1e-10, 1e-6, 1e-3] {
            let tail: f64 = (2..30).map(|k| s.powi(k) / f64::from(k * (k - 1))).sum();
            let series = s * s.ln() - s + tail;
            for &y in &[1.0, -1.0] {
                let v = Loss::Logistic.conjugate(y, -y * s);
                assert!(
                    (v - series).abs() <= 1e-14 * series.abs(),
                    "s={s} {v} {series}"
                );
            }
        }
        assert_eq!(Loss::Logistic.conjugate(1.0, 0.0), 0.0);
        assert_eq!(Loss::Logistic.conjugate(1.0, -1.0), 0.0);
    }

    /// The prox satisfies its optimality condition `z − w + γ ℓ'(y, z) ∋ 0`, and the conjugate
    /// derivatives match finite differences.
    #[test]
    fn prox_and_conjugate_derivatives() {
        for loss in ALL {
            for &y in &[1.0, -1.0] {
                for &w in &[-2.5, -0.7, 0.0, 0.4, 0.95, 1.6, 3.0] {
                    for &g in &[0.1, 1.0, 10.0] {
                        let (z, d) = loss.prox(y, w, g);
                        let obj = |v: f64| loss.value(y, v) + (v - w).powi(2) / (2.0 * g);
                        for h in [1e-4, -1e-4] {
                            assert!(obj(z) <= obj(z + h) + 1e-12, "{loss:?} y={y} w={w} g={g}");
                        }
                        let h = 1e-6;
                        let (zp, _) = loss.prox(y, w + h, g);
                        let (zm, _) = loss.prox(y, w - h, g);
                        let fd = (zp - zm) / (2.0 * h);
                        if (fd - d).abs() > 1e-4 {
                            // only at a breakpoint may the one-sided derivatives differ
                            assert!(fd > -1e-9 && fd < 1.0 + 1e-9, "{loss:?} {fd} {d}");
                        }
                    }
                }
                let (lo, hi) = loss.conjugate_domain(y);
                for &frac in &[0.2, 0.5, 0.8] {
                    let u = if lo.is_finite() && hi.is_finite() {
                        lo + frac * (hi - lo)
                    } else if lo.is_finite() {
                        lo + frac
                    } else if hi.is_finite() {
                        hi - frac
                    } else {
                        frac - 0.5
                    };
                    if u == 0.0 {
                        continue;
                    }
                    let h = 1e-6;
                    let fd = (loss.conjugate(y, u + h) - loss.conjugate(y, u - h)) / (2.0 * h);
                    assert!(
                        (fd - loss.conjugate_grad(y, u)).abs() < 1e-6,
                        "{loss:?} u={u}"
                    );
                    let fd2 =
                        (loss.conjugate_grad(y, u + h) - loss.conjugate_grad(y, u - h)) / (2.0 * h);
                    assert!(
                        (fd2 - loss.conjugate_hess(y, u)).abs() < 1e-4,
                        "{loss:?} u={u}"
                    );
                }
            }
        }
    }

    /// Fenchel–Young: ℓ(y,z) + ℓ*(y,u) ≥ uz, with equality at u = ℓ'(y,z).
    #[test]
    fn fenchel_young_equality_at_the_derivative() {
        for loss in ALL {
            for &y in &[1.0, -1.0, 0.7] {
                if loss.is_classification() && y == 0.7 {
                    continue;
                }
                for &z in &[-2.0, -0.4, 0.0, 0.5, 1.3, 3.0] {
                    let u = loss.deriv(y, z);
                    let lhs = loss.value(y, z) + loss.conjugate(y, u);
                    assert!(
                        (lhs - u * z).abs() < 1e-12,
                        "{loss:?} y={y} z={z}: {lhs} vs {}",
                        u * z
                    );
                    for &v in &[-0.9, -0.3, 0.2] {
                        let v = loss.project_conjugate_domain(y, v);
                        assert!(loss.value(y, z) + loss.conjugate(y, v) >= v * z - 1e-12);
                    }
                }
            }
        }
    }

    /// The Moreau envelope is `min_u ℓ(u) + (u − z)²/(2μ)` (a fine grid of `u` around the
    /// proximal point, never below it), its derivatives are its finite differences, the
    /// Huber form of the hinge holds, and `ℓ − μ/2 ≤ ℓ_μ ≤ ℓ` for the 1-Lipschitz losses.
    #[test]
    fn moreau_envelope_is_the_infimal_convolution() {
        for loss in ALL {
            for &mu in &[0.3, 1.0] {
                for &y in &[-1.0, 1.0] {
                    for k in -40..=40 {
                        let z = 0.07 * k as f64;
                        let [v, d1, d2] = loss.moreau(y, z, mu);
                        let at = |u: f64| loss.value(y, u) + (u - z) * (u - z) / (2.0 * mu);
                        let grid = (-4000..=4000)
                            .map(|i| at(z + 1e-3 * i as f64))
                            .fold(f64::INFINITY, f64::min);
                        assert!(v <= grid + 1e-12 && grid - v < 1e-5, "{loss:?} {z}");
                        let h = 1e-6;
                        let fd = (loss.moreau(y, z + h, mu)[0] - loss.moreau(y, z - h, mu)[0])
                            / (2.0 * h);
                        assert!((fd - d1).abs() < 1e-5, "{loss:?} {z}: {fd} vs {d1}");
                        let fd2 = (loss.moreau(y, z + h, mu)[1] - loss.moreau(y, z - h, mu)[1])
                            / (2.0 * h);
                        // Away from the kinks of ℓ_μ' the second derivative is its slope.
                        if (fd2 - d2).abs() > 1e-4 {
                            let near = |a: f64| (loss.moreau(y, z + a, mu)[2] - d2).abs() > 0.0;
                            assert!(near(h) || near(-h), "{loss:?} {z}: {fd2} vs {d2}");
                        }
                        if matches!(loss, Loss::Hinge | Loss::EpsilonInsensitive { .. }) {
                            let l = loss.value(y, z);
                            assert!(v <= l + 1e-15 && v >= l - mu / 2.0 - 1e-15, "{loss:?}");
                        }
                        if loss == Loss::Hinge {
                            let r = 1.0 - y * z;
                            let huber = if r <= 0.0 {
                                0.0
                            } else if r < mu {
                                r * r / (2.0 * mu)
                            } else {
                                r - mu / 2.0
                            };
                            assert!((v - huber).abs() < 1e-14, "{z}");
                        }
                    }
                }
            }
        }
    }
}
