//! Group MKL's penalty (Nath et al., "On the algorithmics and applications of a mixed-norm
//! based kernel learning formulation"; docs/mathematics.md §0, §1.5, §4): ℓ∞ across groups of
//! kernels, ℓ1 within each. [`Groups`] (which kernels form each group), the exact penalty and
//! its dual penalty as mirror descent reads them ([`group_penalty`], `dual_penalty`), and
//! [`GroupPenalty`], exact or smoothed, as proximal Newton reads it (docs/mathematics.md §2.13).

use crate::error::{MkError, Result};

/// The kernels of each group: `ids[m]` is kernel `m`'s group, `0..J`, every group non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    ids: Vec<usize>,
    members: Vec<Vec<usize>>,
}

impl Groups {
    /// Groups from a group id per kernel; the ids must be `0..J` with no gap.
    pub fn new(ids: &[usize]) -> Result<Self> {
        let count = ids.iter().max().map_or(0, |&j| j + 1);
        let mut members = vec![Vec::new(); count];
        for (m, &j) in ids.iter().enumerate() {
            members[j].push(m);
        }
        if let Some(j) = members.iter().position(Vec::is_empty) {
            return Err(MkError::config(
                "groups",
                format!("group ids must be 0..{count} with no gap; group {j} has no kernel"),
            ));
        }
        Ok(Groups {
            ids: ids.to_vec(),
            members,
        })
    }

    /// One group of `m` kernels (`group` = `lp` with `p = 1`, docs/mathematics.md §0.4).
    pub fn single(m: usize) -> Self {
        Groups {
            ids: vec![0; m],
            members: vec![(0..m).collect()],
        }
    }

    /// The number of groups `J`.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there is no group (no kernel).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The group of every kernel.
    pub fn ids(&self) -> &[usize] {
        &self.ids
    }

    /// The kernels of every group.
    pub fn members(&self) -> &[Vec<usize>] {
        &self.members
    }

    /// The groups' weights `γ` (summing to one) of kernel weights `θ_jk = λ_jk/γ_j`: each
    /// `λ_j` sums to one, so `Σ_{k∈G_j} θ_jk ∝ 1/γ_j` (docs/mathematics.md §4); a group
    /// whose kernels all have weight 0 has `γ_j = 0` (all zeros when every group does).
    pub fn gammas(&self, theta: &[f64]) -> Vec<f64> {
        let inv: Vec<f64> = self
            .members
            .iter()
            .map(|g| {
                let sum: f64 = g.iter().map(|&k| theta[k]).sum();
                if sum > 0.0 {
                    1.0 / sum
                } else {
                    0.0
                }
            })
            .collect();
        let total: f64 = inv.iter().sum();
        if total > 0.0 {
            inv.iter().map(|v| v / total).collect()
        } else {
            inv
        }
    }

    /// `max_j |G_j|`.
    pub(crate) fn largest(&self) -> usize {
        self.members.iter().map(Vec::len).max().unwrap_or(0)
    }
}

/// `½ max_j (Σ_{k∈G_j} s_jk)²`, the group penalty of the block norms `s`.
pub fn group_penalty(norms: &[f64], groups: &Groups) -> f64 {
    let top = groups
        .members
        .iter()
        .map(|g| g.iter().map(|&m| norms[m].max(0.0)).sum::<f64>())
        .fold(0.0f64, f64::max);
    0.5 * top * top
}

/// `½ (Σ_j max_{k∈G_j} sqrt(q_jk))²`, the dual penalty of the quadratic forms `q`, taken over
/// the kernels for which `counted` holds.
pub(crate) fn dual_penalty(quad: &[f64], groups: &Groups, counted: impl Fn(usize) -> bool) -> f64 {
    let total: f64 = groups
        .members
        .iter()
        .map(|g| {
            g.iter()
                .filter(|&&m| counted(m))
                .map(|&m| quad[m].max(0.0).sqrt())
                .fold(0.0f64, f64::max)
        })
        .sum();
    0.5 * total * total
}

/// Group MKL's penalty on the block norms (docs/mathematics.md §0, §1.5):
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

    /// The penalty at the block norms (the exact one by [`group_penalty`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_and_dual_penalty_are_the_group_norms() {
        let groups = Groups::new(&[0, 0, 1]).unwrap();
        assert_eq!(group_penalty(&[1.0, 2.0, 4.0], &groups), 8.0);
        assert_eq!(group_penalty(&[1.0, 2.0, 2.5], &groups), 4.5);
        assert_eq!(dual_penalty(&[1.0, 4.0, 9.0], &groups, |_| true), 12.5);
        assert_eq!(dual_penalty(&[1.0, 4.0, 9.0], &groups, |k| k != 1), 8.0);
    }

    /// `θ_jk = λ_jk/γ_j` with each `λ_j` summing to one: the γ read back from θ is the γ that
    /// made it, normalised; a group of zero weight gets γ = 0.
    #[test]
    fn gammas_invert_the_kernel_weights() {
        let groups = Groups::new(&[0, 1, 0, 2, 1]).unwrap();
        let (lambda, gamma) = ([0.25, 0.6, 0.75, 1.0, 0.4], [0.5, 0.3, 0.2]);
        let theta: Vec<f64> = (0..5).map(|k| lambda[k] / gamma[groups.ids()[k]]).collect();
        for (a, b) in groups.gammas(&theta).iter().zip(gamma) {
            assert!((a - b).abs() < 1e-15, "{a} vs {b}");
        }
        let got = groups.gammas(&[0.5, 0.0, 0.5, 1.0, 0.0]);
        assert_eq!(got, vec![0.5, 0.0, 0.5]);
        assert_eq!(groups.gammas(&[0.0; 5]), vec![0.0; 3]);
    }
}
