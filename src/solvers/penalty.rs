//! The sparse penalties on the kernels' block norms `s_m = ‖f_m‖` (`l1` and `elasticnet`),
//! shared by the solvers that fit them (SpicyMKL, the wrapper, proximal Newton) as the losses
//! are by every solver (docs/mathematics.md §1), and [`BlockPenalty`], those and ℓp's, the
//! penalties of proximal Newton in feature space, with group MKL's ([`GroupPenalty`]). The other
//! penalties are their solvers' settings: ℓp's `p` (`lp/`), the groups of group MKL in the
//! kernels' space (`mirror/`), the path's weights (`path/`).

use crate::error::{MkError, Result};
use crate::solvers::duality::{dual_norm, lp_penalty};
use crate::solvers::lp::theta_update;
use crate::solvers::mirror::{dual_penalty, group_penalty, Groups};

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

impl BlockPenalty {
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
            _ => crate::solvers::lp::LpConfig::default().p,
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

/// Group MKL's penalty on the block norms ("On the algorithmics and applications of a
/// mixed-norm based kernel learning formulation", Nath et al.; docs/mathematics.md §0, §1.5):
/// `Ω(s) = ½ max_j (Σ_{k∈G_j} s_k)²`, ℓ∞ across the groups and ℓ1 within each, exact when
/// `eps = tau = 0`. Its smoothed form, for Newton steps in feature space
/// (docs/mathematics.md §2.13), smooths both kinks:
///
/// ```text
/// s̃_k = sqrt(s_k² + ε²),  S_j = Σ_{k∈G_j} s̃_k,  Ω_τ = τ log Σ_j exp(S_j/τ),  Ω = ½ Ω_τ²,
/// ```
///
/// convex and `C²` for `ε, τ > 0`, with `0 ≤ Ω_τ − max_j Σ_{k∈G_j} s_k ≤ τ log J + ε max_j |G_j|`.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupPenalty {
    pub groups: Groups,
    /// The smoothing `ε` of every block norm.
    pub eps: f64,
    /// The soft max's temperature `τ`.
    pub tau: f64,
}

impl GroupPenalty {
    /// The exact penalty of `groups`.
    pub fn exact(groups: Groups) -> Self {
        GroupPenalty {
            groups,
            eps: 0.0,
            tau: 0.0,
        }
    }

    /// The same groups smoothed by `eps` and `tau` (both positive).
    pub fn smoothed(&self, eps: f64, tau: f64) -> Self {
        GroupPenalty {
            groups: self.groups.clone(),
            eps,
            tau,
        }
    }

    fn is_exact(&self) -> bool {
        self.eps == 0.0 && self.tau == 0.0
    }

    /// The smoothed norms `s̃`, `Ω_τ` and the soft max's weights `p_j = exp(S_j/τ)/Σ exp(S/τ)`
    /// (the first largest group's indicator at `τ = 0`).
    pub fn parts(&self, norms: &[f64]) -> (Vec<f64>, f64, Vec<f64>) {
        let st: Vec<f64> = norms
            .iter()
            .map(|&s| (s * s + self.eps * self.eps).sqrt())
            .collect();
        let sums: Vec<f64> = self
            .groups
            .members()
            .iter()
            .map(|g| g.iter().map(|&k| st[k]).sum())
            .collect();
        let top = sums.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (omega, p) = if self.tau > 0.0 {
            let e: Vec<f64> = sums.iter().map(|s| ((s - top) / self.tau).exp()).collect();
            let total: f64 = e.iter().sum();
            (
                top + self.tau * total.ln(),
                e.iter().map(|v| v / total).collect(),
            )
        } else {
            let first = sums.iter().position(|&s| s == top).unwrap_or(0);
            (
                top,
                (0..sums.len()).map(|j| f64::from(j == first)).collect(),
            )
        };
        (st, omega, p)
    }

    /// The penalty at the block norms (the exact one through mirror's [`group_penalty`]).
    pub fn value(&self, norms: &[f64]) -> f64 {
        if self.is_exact() {
            return group_penalty(norms, &self.groups);
        }
        let (_, omega, _) = self.parts(norms);
        0.5 * omega * omega
    }

    /// `d/dt Ω(w + t δ)` at `t = 0` from `s_k`, `w_kᵀδ_k` and `‖δ_k‖`: `Ω_τ Σ_j p_j Σ_{k∈G_j}
    /// w_kᵀδ_k/s̃_k`, a zero block (exact penalty) moving by `‖δ_k‖`.
    pub fn slope(&self, norms: &[f64], dots: &[f64], steps: &[f64]) -> f64 {
        let (st, omega, p) = self.parts(norms);
        let ids = self.groups.ids();
        (0..norms.len())
            .map(|k| {
                let d = if st[k] > 0.0 {
                    dots[k] / st[k]
                } else {
                    steps[k]
                };
                p[ids[k]] * d
            })
            .sum::<f64>()
            * omega
    }

    /// Mirror's kernel weights (docs/mathematics.md §4): `θ_jk = λ_jk/γ_j`, normalised to sum
    /// to one. At the saddle point `s_jk = θ_jk max_{k'∈G_j} ‖G_k'ᵀρ̃‖` (every active kernel of
    /// a group attains its group's max), so `θ_jk = s_jk / max_{k'∈G_j} ‖G_k'ᵀρ̃‖` from the
    /// block norms and the dual point's; uniform when every block is zero.
    pub fn kernel_weights(&self, norms: &[f64], dual_norms: &[f64]) -> Vec<f64> {
        let ids = self.groups.ids();
        let tops: Vec<f64> = self
            .groups
            .members()
            .iter()
            .map(|g| g.iter().map(|&k| dual_norms[k]).fold(0.0f64, f64::max))
            .collect();
        let theta: Vec<f64> = norms
            .iter()
            .zip(ids)
            .map(|(&s, &j)| {
                if s > 0.0 && tops[j] > 0.0 {
                    s / tops[j]
                } else {
                    0.0
                }
            })
            .collect();
        let total: f64 = theta.iter().sum();
        if total > 0.0 && total.is_finite() {
            theta.iter().map(|t| t / total).collect()
        } else {
            vec![1.0 / norms.len() as f64; norms.len()]
        }
    }

    /// The gradient `∇Ω` of the smoothed penalty (`ε, τ > 0`) at the weights `w` (blocks
    /// `blocks`, every kernel in order), its Hessian added into `a` (column-major, order
    /// `k ≥ w.len()`): with `e_k = w_k/s̃_k`, `U_j` the `e_k` of group `j` (zero elsewhere),
    /// `g = Σ_j p_j U_j = ∇Ω_τ` and `D_j = diag_{k∈G_j} (I − e_k e_kᵀ)/s̃_k = ∇²S_j`,
    ///
    /// ```text
    /// ∇Ω = Ω_τ g,   ∇²Ω = g gᵀ + Ω_τ [Σ_j p_j (D_j + U_j U_jᵀ/τ) − g gᵀ/τ],
    /// ```
    ///
    /// dense within a group, rank one across groups: `(R + Σ_j R_j²)` work beside the loss's
    /// `n R²`.
    pub fn add_newton_terms(
        &self,
        blocks: &[std::ops::Range<usize>],
        w: &[f64],
        a: &mut [f64],
        k: usize,
    ) -> Vec<f64> {
        let norms: Vec<f64> = blocks
            .iter()
            .map(|r| w[r.clone()].iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect();
        let (st, omega, p) = self.parts(&norms);
        let ids = self.groups.ids();
        let mut e = vec![0.0; w.len()];
        for (m, r) in blocks.iter().enumerate() {
            for i in r.clone() {
                e[i] = w[i] / st[m];
            }
        }
        // g = Σ_j p_j U_j: kernel m's part is p_{j(m)} e_m.
        let mut g = vec![0.0; w.len()];
        for (m, r) in blocks.iter().enumerate() {
            for i in r.clone() {
                g[i] = p[ids[m]] * e[i];
            }
        }
        let inv_tau = 1.0 / self.tau;
        // Rank one: g gᵀ (1 − Ω_τ/τ).
        let c1 = 1.0 - omega * inv_tau;
        for j in 0..w.len() {
            if g[j] == 0.0 {
                continue;
            }
            let col = &mut a[j * k..j * k + w.len()];
            col.iter_mut()
                .zip(&g)
                .for_each(|(o, gi)| *o += c1 * gi * g[j]);
        }
        // Per group: Ω_τ p_j (U_j U_jᵀ/τ + diag_k (I − e_k e_kᵀ)/s̃_k).
        for (jg, members) in self.groups.members().iter().enumerate() {
            let wgt = omega * p[jg];
            if wgt == 0.0 {
                continue;
            }
            let cols: Vec<usize> = members.iter().flat_map(|&m| blocks[m].clone()).collect();
            for &c in &cols {
                for &r in &cols {
                    a[c * k + r] += wgt * inv_tau * e[r] * e[c];
                }
            }
            for &m in members {
                let d = wgt / st[m];
                for c in blocks[m].clone() {
                    for r in blocks[m].clone() {
                        let eye = if r == c { 1.0 } else { 0.0 };
                        a[c * k + r] += d * (eye - e[r] * e[c]);
                    }
                }
            }
        }
        g.iter_mut().for_each(|v| *v *= omega);
        g
    }
}
