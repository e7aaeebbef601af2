//! The sparse penalties on the kernels' block norms `s_m = ‖f_m‖` (`l1` and `elasticnet`),
//! shared by the solvers that fit them (SpicyMKL, the wrapper, proximal Newton) as the losses
//! are by every solver (docs/mathematics.md §1), and [`BlockPenalty`], those and ℓp's, the
//! penalties of proximal Newton in feature space. The other penalties are their solvers'
//! settings: ℓp's `p` (`lp/`), the groups of group MKL (`mirror/`), the path's weights
//! (`path/`).

use crate::error::{MkError, Result};
use crate::solvers::duality::{dual_norm, lp_penalty};
use crate::solvers::lp::theta_update;

/// The penalty on the block norms `s_m = ‖f_m‖`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SparsePenalty {
    /// `Σ_m s_m`.
    L1,
    /// `r Σ_m s_m + (1 − r)/2 Σ_m s_m²`, `r = l1_ratio ∈ [0, 1]`.
    ElasticNet { l1_ratio: f64 },
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
        let (r1, r2) = self.weights();
        norms.iter().map(|&s| r1 * s + 0.5 * r2 * s * s).sum()
    }
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

/// A penalty on the block norms as a function of them: the sparse ones, or ℓp's
/// `½ (Σ_m s_m^q)^{2/q}`, `q = 2p/(p+1)` (docs/mathematics.md §0), twice differentiable
/// wherever every block is non-zero for `p > 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BlockPenalty {
    Sparse(SparsePenalty),
    /// `p ∈ (1, ∞]`.
    Lp {
        p: f64,
    },
}

impl From<SparsePenalty> for BlockPenalty {
    fn from(p: SparsePenalty) -> Self {
        BlockPenalty::Sparse(p)
    }
}

impl BlockPenalty {
    /// The penalty's name (`l1`, `elasticnet` or `lp`).
    pub fn name(&self) -> &'static str {
        match self {
            BlockPenalty::Sparse(s) => s.name(),
            BlockPenalty::Lp { .. } => "lp",
        }
    }

    /// Parses a penalty name (`l1_ratio` is read by `elasticnet` only, `p` by `lp` only).
    pub fn parse(name: &str, l1_ratio: f64, p: f64) -> Result<Self> {
        match name {
            "lp" => Ok(BlockPenalty::Lp { p }),
            "l1" | "elasticnet" => Ok(BlockPenalty::Sparse(SparsePenalty::parse(name, l1_ratio)?)),
            other => Err(MkError::config(
                "penalty",
                format!("must be l1, elasticnet or lp, got {other:?}"),
            )),
        }
    }

    /// `l1_ratio` (1 for `l1`, 0 for `lp`, whose value it does not read).
    pub fn l1_ratio(&self) -> f64 {
        match self {
            BlockPenalty::Sparse(s) => s.l1_ratio(),
            BlockPenalty::Lp { .. } => 0.0,
        }
    }

    /// `p`; for the sparse penalties, which do not read it, ℓp's default (the estimators').
    pub fn p(&self) -> f64 {
        match *self {
            BlockPenalty::Sparse(_) => crate::solvers::lp::LpConfig::default().p,
            BlockPenalty::Lp { p } => p,
        }
    }

    /// Checks `l1_ratio ∈ [0, 1]`, or `p ∈ (1, ∞]`: at `p = 1` ℓp's penalty `½ (Σ s_m)²` is
    /// not differentiable where a block is zero, which Newton steps on it need.
    pub fn validate(&self) -> Result<()> {
        match *self {
            BlockPenalty::Sparse(s) => s.validate(),
            BlockPenalty::Lp { p } if p > 1.0 => Ok(()),
            BlockPenalty::Lp { p } => Err(MkError::config(
                "p",
                format!(
                    "must be in (1, inf] for prox_newton, got {p} (p = 1 is group MKL with one \
                     group: solver mirror)"
                ),
            )),
        }
    }

    /// The penalty at the block norms `norms`.
    pub fn value(&self, norms: &[f64]) -> f64 {
        match *self {
            BlockPenalty::Sparse(s) => s.value(norms),
            BlockPenalty::Lp { p } => lp_penalty(norms, p),
        }
    }

    /// `d/dt Ω(w + t δ)` at `t = 0`, from the blocks' norms `s_m = ‖w_m‖`, `w_mᵀδ_m` and
    /// `‖δ_m‖` (a zero block moves the `l1` part by `r_1 ‖δ_m‖`).
    pub fn slope(&self, norms: &[f64], dots: &[f64], steps: &[f64]) -> f64 {
        match *self {
            BlockPenalty::Sparse(sp) => {
                let (r1, r2) = sp.weights();
                norms
                    .iter()
                    .zip(dots.iter().zip(steps))
                    .map(|(&s, (&d, &st))| if s > 0.0 { (r1 / s + r2) * d } else { r1 * st })
                    .sum()
            }
            BlockPenalty::Lp { p } => lp_gradient_scales(norms, p)
                .iter()
                .zip(dots)
                .map(|(g, d)| g * d)
                .sum(),
        }
    }

    /// The penalty part of the dual at `t ρ̃` whose block norms are `t · norms`
    /// (docs/mathematics.md §1): the conjugate `Σ_m max(0, t s_m − r_1)²/(2 r_2)` of the elastic
    /// net, `½ t² ‖(s_m²)_m‖_{p*}` of ℓp, and for `l1` 0 inside the unit ball and `+∞`
    /// outside (beyond rounding).
    pub fn conjugate(&self, t: f64, norms: &[f64]) -> f64 {
        match *self {
            BlockPenalty::Sparse(sp) => {
                let (r1, r2) = sp.weights();
                let mut out = 0.0;
                for s in norms.iter().map(|s| t * s) {
                    if r2 == 0.0 {
                        if s > 1.0 + 1e-9 {
                            return f64::INFINITY;
                        }
                    } else {
                        out += (s - r1).max(0.0).powi(2) / (2.0 * r2);
                    }
                }
                out
            }
            BlockPenalty::Lp { p } => {
                let quad: Vec<f64> = norms.iter().map(|s| s * s).collect();
                0.5 * t * t * dual_norm(&quad, p)
            }
        }
    }

    /// The largest multiple `t` of a dual point with block norms `norms` that the dual's
    /// domain allows: `1/max(1, max_m s_m)` for `l1`, 1 otherwise.
    pub fn top(&self, norms: &[f64]) -> f64 {
        let nmax = norms.iter().fold(0.0f64, |a, &v| a.max(v));
        match *self {
            BlockPenalty::Sparse(SparsePenalty::L1) if nmax > 1.0 => 1.0 / nmax,
            _ => 1.0,
        }
    }

    /// The kernel weights of the block norms: [`kernel_weights`] of a sparse penalty, ℓp's
    /// `θ` of eq. 17 (unit p-norm) for ℓp.
    pub fn kernel_weights(&self, norms: &[f64]) -> Vec<f64> {
        match *self {
            BlockPenalty::Sparse(s) => kernel_weights(s, norms),
            BlockPenalty::Lp { p } => theta_update(norms, p),
        }
    }
}

/// ℓp's gradient per block, `∇_m Ω = g_m w_m` with `g_m = N^{2−q} s_m^{q−2}`,
/// `N = (Σ_m s_m^q)^{1/q}` (docs/mathematics.md §2.13); 0 for a zero block and when every
/// block is zero (`Ω` is flat there for `q > 1`).
pub fn lp_gradient_scales(norms: &[f64], p: f64) -> Vec<f64> {
    let q = lp_q(p);
    let big_n = (2.0 * lp_penalty(norms, p)).sqrt();
    if big_n <= 0.0 {
        return vec![0.0; norms.len()];
    }
    let a = big_n.powf(2.0 - q);
    norms
        .iter()
        .map(|&s| if s > 0.0 { a * s.powf(q - 2.0) } else { 0.0 })
        .collect()
}

/// ℓp's `q = 2p/(p+1)` (2 for `p = ∞`).
pub fn lp_q(p: f64) -> f64 {
    if p.is_infinite() {
        2.0
    } else {
        2.0 * p / (p + 1.0)
    }
}
