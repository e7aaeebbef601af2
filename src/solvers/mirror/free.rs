//! Free groups (docs/mathematics.md §4, "Free groups"): a group whose norm sum stays below the
//! largest at the optimum costs nothing at the margin (the penalty is a max over groups), so
//! its blocks are unpenalised and the dual point must be orthogonal to its kernels,
//! `K_jk β = 0`. In the saddle form that is `γ_j = 0`, `θ_jk = λ_jk/γ_j = ∞`: mirror descent
//! drives `γ_j` to zero geometrically, `K_eff` grows ill-conditioned (SMO slows down by orders
//! of magnitude) and the group cut-off drops the block and brings it back in cycles.
//!
//! A free group's kernels leave the saddle form instead: their blocks `f_k = K_k v_k` are
//! fitted by proximal-point steps, `v_k ← v_k + τ β` after each single-kernel solve on
//! `K_eff + τ Σ_{k free} K_k` with the fixed function `o = Σ_{k free} K_k v_k` added to the
//! model (the method of multipliers for the constraint `K_k β = 0`). The weight `τ` is the
//! largest `θ` of the penalised kernels, so `K_eff` keeps its scale. As the steps converge,
//! `K_k β = (f_k⁺ − f_k)/τ → 0` and the dual penalty's term of the group vanishes. Every
//! iterate stays a primal point (`A[k] = τ β + v_k`, its norms counted by the exact penalty)
//! and its `β` a dual point, so a wrong guess costs steps, never correctness; a free group
//! whose norm sum exceeds every penalised group's rejoins the saddle form.

use crate::kernels::KernelStack;
use crate::linalg::dot;
use crate::penalties::Groups;

/// A penalised group is freed when its `γ_j` falls below this fraction of the largest `γ`
/// while its norm sum is at least this fraction of the largest group's (it still carries
/// norm: a group that vanishes on `β`, e.g. a constant kernel, is left to the cut-off).
pub(crate) const FREE_GAMMA: f64 = 1e-3;

/// A penalised group whose `γ_j` fell below [`FREE_GAMMA`] of the largest is freed with any
/// norm sum when its kernels' weighted traces `Σ θ_k tr K_k` are this multiple of all the
/// others': `K_eff` is then that group's few directions scaled by `θ = λ/γ` (a rank-one kernel
/// alone in its group reached `θ = 1.4·10⁶`), and SMO on it spins (docs/mathematics.md §4).
/// The kernels' own scales enter through the traces, so kernels of scales 1 and 1e12 whose
/// weights balance them are left in the saddle form.
pub(crate) const DOMINANT: f64 = 1e3;

/// `tr K_m` of every kernel of the stack.
pub(crate) fn traces(stack: &dyn KernelStack) -> Vec<f64> {
    let mut diag = vec![0.0; stack.n()];
    (0..stack.m())
        .map(|m| {
            stack.diag(m, &mut diag);
            diag.iter().sum()
        })
        .collect()
}

/// The unpenalised blocks of the free groups.
pub(crate) struct FreeBlocks {
    /// Whether each group is free.
    pub free: Vec<bool>,
    /// Whether each group rejoined the saddle form after being free (never freed again).
    pub rejoined: Vec<bool>,
    /// `v_k` of every kernel of a free group (empty otherwise).
    pub coef: Vec<Vec<f64>>,
    /// `K_k v_k`, alongside.
    pub values: Vec<Vec<f64>>,
}

/// A free kernel's block after one proximal step: `v⁺ = v + τ β`, `K v⁺` and `‖f⁺‖`.
pub(crate) struct Moved {
    pub kernel: usize,
    pub coef: Vec<f64>,
    pub values: Vec<f64>,
    pub norm: f64,
}

impl FreeBlocks {
    pub fn new(groups: &Groups) -> Self {
        let m = groups.ids().len();
        FreeBlocks {
            free: vec![false; groups.len()],
            rejoined: vec![false; groups.len()],
            coef: vec![Vec::new(); m],
            values: vec![Vec::new(); m],
        }
    }

    /// Whether some group is free.
    pub fn any(&self) -> bool {
        self.free.iter().any(|&f| f)
    }

    /// Whether kernel `k` (of group `j`) is free.
    pub fn kernel(&self, groups: &Groups, k: usize) -> bool {
        self.free[groups.ids()[k]]
    }

    /// The fixed function `o = Σ_k K_k v_k` of the single-kernel solve (empty: none).
    pub fn offset(&self, n: usize) -> Vec<f64> {
        if !self.any() {
            return Vec::new();
        }
        let mut o = vec![0.0; n];
        for v in self.values.iter().filter(|v| !v.is_empty()) {
            o.iter_mut().zip(v).for_each(|(a, b)| *a += b);
        }
        o
    }

    /// The proximal step of every free kernel from the solve's `β` at weight `tau`, with
    /// `q_k = βᵀK_kβ` written into `quad` (every kernel of a free group is read, one product
    /// each): `‖f⁺‖² = vᵀKv + 2τ βᵀKv + τ² q`.
    pub fn step(
        &self,
        stack: &dyn KernelStack,
        groups: &Groups,
        beta: &[f64],
        tau: f64,
        quad: &mut [f64],
    ) -> Vec<Moved> {
        let n = beta.len();
        let mut moved = Vec::new();
        for k in (0..groups.ids().len()).filter(|&k| self.kernel(groups, k)) {
            let mut kb = vec![0.0; n];
            stack.matvec(k, beta, &mut kb);
            quad[k] = dot(beta, &kb);
            let (v, kv) = (&self.coef[k], &self.values[k]);
            let coef: Vec<f64> = v.iter().zip(beta).map(|(a, b)| a + tau * b).collect();
            let values: Vec<f64> = kv.iter().zip(&kb).map(|(a, b)| a + tau * b).collect();
            let norm = dot(&coef, &values).max(0.0).sqrt();
            moved.push(Moved {
                kernel: k,
                coef,
                values,
                norm,
            });
        }
        moved
    }

    /// Frees group `j` at the iterate `A[k] = θ_k β` (`kb[k] = K_k β` of its kernels).
    pub fn free_group(
        &mut self,
        groups: &Groups,
        j: usize,
        theta: &[f64],
        beta: &[f64],
        kb: &[Vec<f64>],
    ) {
        self.free[j] = true;
        for (&k, kbk) in groups.members()[j].iter().zip(kb) {
            self.coef[k] = beta.iter().map(|b| theta[k] * b).collect();
            self.values[k] = kbk.iter().map(|v| theta[k] * v).collect();
        }
    }

    /// Returns group `j` to the saddle form, its blocks dropped.
    pub fn join(&mut self, groups: &Groups, j: usize) {
        self.free[j] = false;
        for &k in &groups.members()[j] {
            self.coef[k].clear();
            self.values[k].clear();
        }
    }
}
