//! [`BlockPenalty`]: every penalty on the block norms as one value, for the solvers that take
//! any of them (proximal Newton in feature space; the shared duals of [`super::duals`]).

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::penalties::group::{dual_penalty, GroupPenalty, Groups};
use crate::penalties::lp::{dual_norm, lp_gradient_scales, lp_penalty, theta_update, DEFAULT_P};
use crate::penalties::sparse::{kernel_weights, SparsePenalty};

/// A penalty on the block norms as a function of them: the sparse ones, ℓp's
/// `½ (Σ_m s_m^q)^{2/q}`, `q = 2p/(p+1)` (docs/mathematics.md §0), twice differentiable
/// wherever every block is non-zero for `p > 1`, or group MKL's `½ max_j (Σ_{k∈G_j} s_k)²`,
/// exact or smoothed ([`GroupPenalty`]).
#[derive(Debug, Clone, PartialEq)]
pub enum BlockPenalty {
    Sparse(SparsePenalty),
    /// `p ∈ (1, ∞]`.
    Lp {
        p: f64,
    },
    Group(GroupPenalty),
}

impl From<SparsePenalty> for BlockPenalty {
    fn from(p: SparsePenalty) -> Self {
        BlockPenalty::Sparse(p)
    }
}

/// Any penalty as `penalty`, `l1_ratio` (read by `elasticnet` only), `p` (read by `lp` only)
/// and `groups` (a group id per kernel, read by `group` only).
impl Fields for BlockPenalty {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        let mut name = self.name().to_string();
        let mut l1_ratio = self.l1_ratio();
        let mut p = self.p();
        let mut groups = self.group_ids().map(<[usize]>::to_vec);
        v.text("penalty", &mut name)?;
        v.float("l1_ratio", &mut l1_ratio)?;
        v.float("p", &mut p)?;
        v.ids("groups", &mut groups)?;
        *self = BlockPenalty::parse(&name, l1_ratio, p, groups.as_deref())?;
        Ok(())
    }
}

impl BlockPenalty {
    /// Every penalty's name, as [`BlockPenalty::parse`] reads it.
    pub const NAMES: [&'static str; 4] = ["lp", "l1", "elasticnet", "group"];

    /// The penalty's name (`l1`, `elasticnet`, `lp` or `group`).
    pub fn name(&self) -> &'static str {
        match self {
            BlockPenalty::Sparse(s) => s.name(),
            BlockPenalty::Lp { .. } => "lp",
            BlockPenalty::Group(_) => "group",
        }
    }

    /// Parses a penalty name (`l1_ratio` is read by `elasticnet` only, `p` by `lp` only,
    /// `groups`, a group id per kernel, by `group` only, which needs them).
    pub fn parse(name: &str, l1_ratio: f64, p: f64, groups: Option<&[usize]>) -> Result<Self> {
        match name {
            "lp" => Ok(BlockPenalty::Lp { p }),
            "l1" | "elasticnet" => Ok(BlockPenalty::Sparse(SparsePenalty::parse(name, l1_ratio)?)),
            "group" => match groups {
                Some(ids) => Ok(BlockPenalty::Group(GroupPenalty::exact(Groups::new(ids)?))),
                None => Err(MkError::config(
                    "groups",
                    "penalty group needs a group id per kernel",
                )),
            },
            other => Err(MkError::config(
                "penalty",
                format!("must be l1, elasticnet, lp or group, got {other:?}"),
            )),
        }
    }

    /// `l1_ratio` (1 for `l1`, 0 for `lp` and `group`, whose values do not read it).
    pub fn l1_ratio(&self) -> f64 {
        match self {
            BlockPenalty::Sparse(s) => s.l1_ratio(),
            BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => 0.0,
        }
    }

    /// `p`; for the penalties that do not read it, ℓp's default (the estimators').
    pub fn p(&self) -> f64 {
        match *self {
            BlockPenalty::Lp { p } => p,
            _ => DEFAULT_P,
        }
    }

    /// The group id of every kernel (`group` only).
    pub fn group_ids(&self) -> Option<&[usize]> {
        match self {
            BlockPenalty::Group(g) => Some(g.groups.ids()),
            _ => None,
        }
    }

    /// Checks `l1_ratio ∈ [0, 1]`, or `p ∈ (1, ∞]`: at `p = 1` ℓp's penalty `½ (Σ s_m)²` is
    /// not differentiable where a block is zero, which Newton steps on it need.
    pub fn validate(&self) -> Result<()> {
        match *self {
            BlockPenalty::Sparse(s) => s.validate(),
            BlockPenalty::Lp { p } if p > 1.0 => Ok(()),
            BlockPenalty::Group(_) => Ok(()),
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
            BlockPenalty::Group(ref g) => g.value(norms),
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
            BlockPenalty::Group(ref g) => g.slope(norms, dots, steps),
        }
    }

    /// The penalty part of the dual at `t ρ̃` whose block norms are `t · norms`
    /// (docs/mathematics.md §1): the conjugate `Σ_m max(0, t s_m − r_1)²/(2 r_2)` of the elastic
    /// net, `½ t² ‖(s_m²)_m‖_{p*}` of ℓp, `½ t² (Σ_j max_{k∈G_j} s_k)²` of `group` (the
    /// exact penalty's: its dual norm, docs/mathematics.md §1.5), and for `l1` 0 inside the
    /// unit ball and `+∞` outside (beyond rounding).
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
            BlockPenalty::Group(ref g) => {
                let quad: Vec<f64> = norms.iter().map(|s| s * s).collect();
                t * t * dual_penalty(&quad, &g.groups, |_| true)
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

    /// The kernel weights of the block norms `norms` and the dual point's `dual_norms`
    /// (`‖G_mᵀρ̃‖`): [`kernel_weights`] of a sparse penalty, ℓp's `θ` of eq. 17 (unit p-norm)
    /// for ℓp, [`GroupPenalty::kernel_weights`] for `group`.
    pub fn kernel_weights(&self, norms: &[f64], dual_norms: &[f64]) -> Vec<f64> {
        match *self {
            BlockPenalty::Sparse(s) => kernel_weights(s, norms),
            BlockPenalty::Lp { p } => theta_update(norms, p),
            BlockPenalty::Group(ref g) => g.kernel_weights(norms, dual_norms),
        }
    }
}
