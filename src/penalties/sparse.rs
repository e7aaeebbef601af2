//! The sparse penalties on the block norms `s_m = ‖f_m‖`, `l1` and `elasticnet`
//! (docs/mathematics.md §0, §1.4), shared by the solvers that fit them (SpicyMKL, the wrapper,
//! proximal Newton), and the kernel weights they imply at the optimum.

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::linalg::norm;

/// The penalty on the block norms `s_m = ‖f_m‖`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SparsePenalty {
    /// `Σ_m s_m`.
    L1,
    /// `r Σ_m s_m + (1 − r)/2 Σ_m s_m²`, `r = l1_ratio ∈ [0, 1]`.
    ElasticNet { l1_ratio: f64 },
}

/// The `l1` / `elasticnet` penalty as `penalty` and `l1_ratio` (read by `elasticnet` only).
impl Fields for SparsePenalty {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        let mut name = self.name().to_string();
        let mut l1_ratio = self.l1_ratio();
        v.text("penalty", &mut name)?;
        v.float("l1_ratio", &mut l1_ratio)?;
        *self = SparsePenalty::parse(&name, l1_ratio)?;
        Ok(())
    }
}

impl SparsePenalty {
    /// The penalty's name, as [`SparsePenalty::parse`] reads it.
    pub fn name(&self) -> &'static str {
        match self {
            SparsePenalty::L1 => "l1",
            SparsePenalty::ElasticNet { .. } => "elasticnet",
        }
    }

    /// `l1_ratio` (1 for `l1`).
    pub fn l1_ratio(&self) -> f64 {
        self.weights().0
    }

    /// Parses a penalty name (`l1_ratio` is used by `elasticnet` only).
    pub fn parse(name: &str, l1_ratio: f64) -> Result<Self> {
        match name {
            "l1" => Ok(SparsePenalty::L1),
            "elasticnet" => Ok(SparsePenalty::ElasticNet { l1_ratio }),
            other => Err(MkError::config(
                "penalty",
                format!("must be l1 or elasticnet, got {other:?}"),
            )),
        }
    }

    /// `(r_1, r_2)`: the weights of `Σ s_m` and `½ Σ s_m²`.
    pub fn weights(&self) -> (f64, f64) {
        match *self {
            SparsePenalty::L1 => (1.0, 0.0),
            SparsePenalty::ElasticNet { l1_ratio } => (l1_ratio, 1.0 - l1_ratio),
        }
    }

    /// Checks `l1_ratio ∈ [0, 1]`.
    pub fn validate(&self) -> Result<()> {
        if let SparsePenalty::ElasticNet { l1_ratio } = *self {
            if !(0.0..=1.0).contains(&l1_ratio) {
                return Err(MkError::config(
                    "l1_ratio",
                    format!("must be in [0, 1], got {l1_ratio}"),
                ));
            }
        }
        Ok(())
    }

    /// `Σ_m r_1 s_m + r_2 s_m²/2`.
    pub fn value(&self, norms: &[f64]) -> f64 {
        let weights = self.weights();
        norms.iter().map(|&s| block_value(weights, s)).sum()
    }
}

/// One block's penalty `r_1 s + r_2 s²/2` from its norm `s`, with the weights `(r_1, r_2)` of
/// [`SparsePenalty::weights`].
pub fn block_value((r1, r2): (f64, f64), s: f64) -> f64 {
    r1 * s + 0.5 * r2 * s * s
}

/// The sparse penalty in the wrapper's variational form: `π(w) = ½ r_1² w/(1 − r_2 w)` on an
/// effective kernel weight `w ∈ [0, 1/r_2)` (docs/mathematics.md §2.11), with `(r_1, r_2)` the
/// weights of [`SparsePenalty::weights`]; its derivatives are the wrapper's gradient and
/// Hessian terms.
#[derive(Debug, Clone, Copy)]
pub struct WeightPenalty {
    pub r1: f64,
    pub r2: f64,
}

impl WeightPenalty {
    /// The variational form of `penalty`.
    pub fn of(penalty: SparsePenalty) -> Self {
        let (r1, r2) = penalty.weights();
        WeightPenalty { r1, r2 }
    }

    /// `π(w)`.
    pub fn value(&self, w: f64) -> f64 {
        0.5 * self.r1 * self.r1 * w / (1.0 - self.r2 * w)
    }

    /// `π'(w)`.
    pub fn d1(&self, w: f64) -> f64 {
        0.5 * self.r1 * self.r1 / (1.0 - self.r2 * w).powi(2)
    }

    /// `π''(w)`.
    pub fn d2(&self, w: f64) -> f64 {
        self.r1 * self.r1 * self.r2 / (1.0 - self.r2 * w).powi(3)
    }

    /// The supremum `1/r_2` of the effective weights (∞ for `l1`).
    pub fn cap(&self) -> f64 {
        if self.r2 > 0.0 {
            1.0 / self.r2
        } else {
            f64::INFINITY
        }
    }
}

/// The distance of `−g` to the subdifferential of one block's penalty `r_1 ‖w‖ + r_2/2 ‖w‖²`
/// at `w` (weights `(r_1, r_2)` of [`SparsePenalty::weights`]): how far block `w` is from
/// optimal with the loss gradient `g` on it (0 exactly at a solution).
pub fn subgradient_distance((r1, r2): (f64, f64), g: &[f64], w: &[f64]) -> f64 {
    let nw = norm(w);
    if nw > 0.0 {
        g.iter()
            .zip(w)
            .map(|(gi, wi)| (gi + (r1 / nw + r2) * wi).powi(2))
            .sum::<f64>()
            .sqrt()
    } else {
        (norm(g) - r1).max(0.0)
    }
}

/// The proximal map of one block's penalty `γ(λ_1 ‖v‖ + λ_2/2 ‖v‖²)` as a factor on `v`,
/// `prox(v)/v = max(‖v‖ − γλ_1, 0)/(‖v‖(1 + γλ_2))` at `‖v‖ = s` (SpicyMKL's block
/// soft-threshold, eq. 5; `(λ_1, λ_2)` the penalty's weights scaled by the solver).
pub fn prox_shrink((lam1, lam2): (f64, f64), s: f64, gamma: f64) -> f64 {
    if s <= 0.0 {
        return 0.0;
    }
    (s - gamma * lam1).max(0.0) / (s * (1.0 + gamma * lam2))
}

/// The term `h(s) = max(s − γλ_1, 0)² / (2γ(1 + γλ_2))` that one block of norm `s = ‖v‖`
/// adds to SpicyMKL's augmented Lagrangian `φ_γ` (eq. 7): the Moreau envelope of the block
/// penalty's conjugate, whose gradient is the shrink of [`prox_shrink`].
pub fn envelope_term((lam1, lam2): (f64, f64), s: f64, gamma: f64) -> f64 {
    let w = (s - gamma * lam1).max(0.0);
    w * w / (2.0 * gamma * (1.0 + gamma * lam2))
}

/// The kernel weights on the simplex. At the optimum every active `A[m]` is parallel to the
/// common dual point, `A[m] = d_m ρ̃` with `‖ρ̃‖_{K_m} = r_1 + r_2 s_m`, so `f = Σ d_m K_m ρ̃`
/// and `θ_m ∝ d_m = s_m/(r_1 + r_2 s_m)` (for `l1`, `θ_m = s_m/Σ_k s_k`).
pub fn kernel_weights(penalty: SparsePenalty, norms: &[f64]) -> Vec<f64> {
    let (r1, r2) = penalty.weights();
    let d: Vec<f64> = norms
        .iter()
        .map(|&s| if s > 0.0 { s / (r1 + r2 * s) } else { 0.0 })
        .collect();
    let total: f64 = d.iter().sum();
    if total > 0.0 && total.is_finite() {
        d.iter().map(|x| x / total).collect()
    } else {
        vec![1.0 / norms.len() as f64; norms.len()]
    }
}
