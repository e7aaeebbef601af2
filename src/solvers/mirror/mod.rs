//! Group MKL (Nath et al., "On the algorithmics and applications of a mixed-norm based kernel
//! learning formulation"): ℓ∞ across groups of kernels, ℓ1 within each group, solved by
//! mirror descent over a product of simplexes (docs/mathematics.md §1.5 and §4).
//!
//! Primal: `P = C Σ_i ℓ(y_i, f(x_i)) + ½ max_j (Σ_{k∈G_j} ‖f_jk‖)²`.
//! Dual (any loss, `β` feasible for the single-kernel dual):
//! `D(β) = −C Σ_i ℓ*(y_i, −β_i/C) − ½ (Σ_j max_{k∈G_j} sqrt(βᵀK_jkβ))²`.
//! Saddle form (Nath eq. 3–4): `min_λ max_{β, γ} −C Σ ℓ* − ½ Σ_j W_j/γ_j` with
//! `W_j = Σ_k λ_jk βᵀK_jkβ`, `λ_j` and `γ` on simplexes. For fixed `(λ, γ)` the inner
//! problem is a single-kernel problem on `K_eff = Σ_j Σ_k θ_jk K_jk`, `θ_jk = λ_jk/γ_j`, so
//! every iterate `A[jk] = θ_jk β` is a primal point and its `β` a dual point: each step is
//! certified.
//!
//! One step: the warm-started single-kernel solve on `K_eff`, the quadratic forms
//! `q_jk = βᵀK_jkβ`, the certificate, the closed-form `γ_j = √W_j / Σ_j' √W_j'` (Nath eq. 6)
//! and the entropic mirror step on `λ` (Nath eq. 8) with the gradient
//! `g_jk = −½ q_jk/γ_j`: `λ_jk ← λ_jk e^{−η g_jk} / Σ_{k'∈G_j} λ_jk' e^{−η g_jk'}`.
//! The step `η` follows [`StepRule`]; `StepRule::Newton` replaces the mirror step by a
//! second-order step on the working set (hinge and squared hinge losses, `newton`).
//!
//! Working set of kernels (beyond the paper): the solution keeps few kernels per group, so
//! the iterations run on a set `S` of kernels (`θ = 0` off `S`, which touches only their
//! Gram matrices). The primal of such an iterate is a whole-problem primal; its dual is not
//! (the max over `G_j` ranges over `S` only), so a whole-problem check computes all `q_jk` at
//! the current `β` (one pass over the stack), records the whole dual, and adds to `S` the
//! kernels whose `q_jk` exceed the largest of their group in `S` (the dual's violators).
//! Without violators the restricted dual equals the whole one.

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::{support_products, CombinedKernel, KernelStack};
use crate::losses::{costs, Loss};
use crate::penalties::duals::{loss_dual, natural_dual, read_forms};
use crate::penalties::group::dual_penalty;
use crate::penalties::{group_penalty, Groups};
use crate::result::{FitResult, SolveStatus};
use crate::solvers::driver::{Checked, Driver, Outcome, Solver};
use crate::solvers::schedule::{CheckSchedule, GapSchedule, Settled};
use crate::solvers::single::SingleKernel;
use crate::solvers::tracker::Model;
use crate::solvers::witness::PsdCheck;

mod certify;
mod free;
mod newton;

pub(crate) use free::{traces, FreeBlocks, Moved, DOMINANT, FREE_GAMMA};
pub(crate) use newton::{dual_box, Iterate as NewtonIterate};

/// How the mirror step `η_t` is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepRule {
    /// Nath eq. 9: `η_t = sqrt(ln max_j n_j) / (‖g‖_∞ √t)`, the rule of its convergence
    /// proof.
    Paper,
    /// `η_t = c_t/‖g‖_∞` with `c_0 = 1`, `c` × 1.5 after a step that lowered the primal and
    /// × 0.5 after one that did not. Safe because every iterate is certified, and measured
    /// to need several times fewer steps than eq. 9 (docs/mathematics.md §4).
    Adaptive,
    /// The second-order step of `newton` (hinge and squared hinge, working sets of at most
    /// `NEWTON_MAX` kernels), the adaptive step otherwise: after the first restriction of
    /// the working set (which resets `λ`) and after a step that raised the primal (the
    /// safeguards; each `γ_j` moves at most `GAMMA_TRUST`× per step). Several
    /// times fewer stack reads than the adaptive rule (docs/mathematics.md §4, "Measured").
    Newton,
}

impl StepRule {
    /// The setting's value: `"paper"`, `"adaptive"` or `"newton"`.
    pub fn name(&self) -> &'static str {
        match self {
            StepRule::Paper => "paper",
            StepRule::Adaptive => "adaptive",
            StepRule::Newton => "newton",
        }
    }

    /// The rule named `name`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "paper" => Ok(StepRule::Paper),
            "adaptive" => Ok(StepRule::Adaptive),
            "newton" => Ok(StepRule::Newton),
            other => Err(MkError::config(
                "step",
                format!("must be 'adaptive', 'newton' or 'paper', got {other:?}"),
            )),
        }
    }
}

/// Settings of a group-MKL fit by mirror descent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MirrorConfig {
    /// Loss weight.
    pub c: f64,
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Mirror steps at most.
    pub max_iter: usize,
    /// Smallest accuracy asked of the single-kernel solver (SMO: maximal KKT violation).
    pub inner_tol: f64,
    pub step: StepRule,
    /// Iterate on a working set of kernels, with whole-problem checks.
    pub working_set: bool,
}

impl Default for MirrorConfig {
    fn default() -> Self {
        MirrorConfig {
            c: 1.0,
            loss: Loss::Hinge,
            tol: 1e-3,
            max_iter: 200,
            inner_tol: 1e-7,
            step: StepRule::Newton,
            working_set: true,
        }
    }
}

/// The settings by name (the group ids are the engine's `Settings::Mirror`'s).
impl Fields for MirrorConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        crate::solvers::common::common_fields(
            v,
            &mut self.c,
            &mut self.loss,
            &mut self.tol,
            &mut self.max_iter,
        )?;
        v.float("inner_tol", &mut self.inner_tol)?;
        let mut step = self.step.name().to_string();
        v.text("step", &mut step)?;
        self.step = StepRule::parse(&step)?;
        v.flag("working_set", &mut self.working_set)
    }
}

impl MirrorConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        Ok(())
    }
}

/// A weight below this (relative to its group's total of 1) leaves the working set: the
/// multiplicative step can never bring it back, a whole-problem check can.
const PRUNE: f64 = 1e-10;

/// A group whose `√W_j` is below this fraction of the largest is left out of `K_eff`.
const GROUP_CUTOFF: f64 = 1e-6;

/// Steps that raised the primal value over a stall for the second-order rule to give way: its
/// model mispredicted, where a slow but steady second-order fit keeps its rule.
const MISPREDICTED: usize = 2;

/// The share of uniform weights mixed into `λ` when a stall ends the second-order rule: the
/// restart keeps half of where the second-order steps led (docs/mathematics.md §1.9).
const REOPEN_MIX: f64 = 0.5;

/// The longest adaptive step, `η ≤ MAX_SCALE/‖g‖_∞`: longer steps overshoot
/// (docs/mathematics.md §4, "The adaptive step").
const MAX_SCALE: f64 = 8.0;

/// The largest working set that takes the second-order step: its QP costs `O(s³)` per change
/// of its active set, and sets this large occur only without the kernel working set.
pub(crate) const NEWTON_MAX: usize = 300;

/// The second-order step moves each group weight `γ_j` by at most this factor
/// ([`trusted_gamma`]).
const GAMMA_TRUST: f64 = 4.0;

/// A linearised `γ_j` this many times its current value (or as far below zero) means the
/// model is no guide at all (kernels of very different scales, docs/mathematics.md §4, "Safeguard"): no step.
const GAMMA_ABSURD: f64 = 100.0;

/// The group weight after a second-order step whose linearised `γ_j` is `model` from `now`:
/// `model` within [`GAMMA_TRUST`]× of `now` (`now/GAMMA_TRUST` when `model` is not positive),
/// or None (the step is not taken) when `|model/now|` reaches [`GAMMA_ABSURD`].
///
/// Near a saddle point with a group at `γ_j = 0` (its kernels vanish on `α`),
/// `φ_γγ = −W_j/γ_j³` is singular and the linearisation overshoots, to zero or below, or jumps
/// up from `γ_j ≈ 1e-6`. A trust region per group lets the step in `λ` be taken while that
/// group's `γ_j` falls geometrically; refusing every such step left the adaptive mirror step
/// to crawl (docs/mathematics.md §4, "Safeguard").
fn trusted_gamma(model: f64, now: f64) -> Option<f64> {
    let ratio = model / now;
    if !(ratio.is_finite() && ratio.abs() < GAMMA_ABSURD) {
        return None;
    }
    Some(if ratio > 0.0 {
        now * ratio.clamp(1.0 / GAMMA_TRUST, GAMMA_TRUST)
    } else {
        now / GAMMA_TRUST
    })
}

/// The step-size state of [`StepRule`] (also the shared multiclass fit's group step,
/// `solvers::shared`).
pub(crate) struct Stepper {
    rule: StepRule,
    /// `c_t` of the adaptive rule.
    scale: f64,
    /// The primal value of the last iterate.
    last_primal: f64,
    t: usize,
    log_n: f64,
    /// Second-order steps that raised the primal value since the last stall: the model's
    /// mispredictions (an adaptive step's rise says nothing of the model).
    rises: usize,
    /// Whether the last step was the second-order one.
    second_order: bool,
}

impl Stepper {
    pub(crate) fn new(rule: StepRule, groups: &Groups) -> Self {
        Stepper {
            rule,
            scale: 1.0,
            last_primal: f64::INFINITY,
            t: 0,
            log_n: (groups.largest() as f64).ln(),
            rises: 0,
            second_order: false,
        }
    }

    /// The mirror step from the iterate `state` of primal value `primal` and quadratic forms
    /// `quad`; `restart` when the problem changed (kernels joined the working set).
    ///
    /// The adaptive rule lengthens the step 1.5x after an iterate that did not raise the
    /// primal and halves it after one that did, between the paper's step (below) and
    /// [`MAX_SCALE`]. Without that floor the steps collapse (docs/mathematics.md §4): the
    /// primal zigzags across kinks, and a step too short to move the warm-started inner
    /// solution leaves it unchanged. Taking a failed step back (backtracking) measured worse:
    /// the primal is not smooth in `λ` (the max over groups), so short steps from a kink fail
    /// too and the line search stalls.
    ///
    /// The Newton rule takes the second-order step when `second` is given, unless `λ` was just
    /// reset (`restart`: the model was taken at other weights) or the last step raised the
    /// primal (its model was wrong: the set of free support vectors changed), and the adaptive
    /// step otherwise.
    fn step(
        &mut self,
        state: &mut State,
        quad: &[f64],
        primal: f64,
        restart: bool,
        groups: &Groups,
        second: Option<&[newton::Iterate]>,
    ) {
        self.t += 1;
        if self.rule == StepRule::Paper {
            let t = self.t as f64;
            let log_n = self.log_n;
            state.update(groups, quad, |g_inf| log_n.sqrt() / (g_inf * t.sqrt()));
            return;
        }
        let rose = self.t > 1 && !restart && primal > self.last_primal;
        self.rises += usize::from(rose && self.second_order);
        self.second_order = false;
        if self.t > 1 && !restart {
            let factor = if rose { 0.5 } else { 1.5 };
            let floor = self.log_n.sqrt() / (self.t as f64).sqrt();
            self.scale = (self.scale * factor).clamp(floor.min(MAX_SCALE), MAX_SCALE);
        }
        self.last_primal = primal;
        if let (StepRule::Newton, Some(it), false, false) = (self.rule, second, restart, rose) {
            if state.newton(groups, quad, it) {
                self.second_order = true;
                return;
            }
        }
        let scale = self.scale;
        state.update(groups, quad, |g_inf| scale / g_inf);
    }
}

impl Stepper {
    /// After a stall in which the second-order step raised the primal value [`MISPREDICTED`]
    /// times: the adaptive rule from its first step length, whose step needs no model of the
    /// free support vectors, with every kernel back in the set at a weight the entropic step
    /// can move (docs/mathematics.md §1.9). Whether it fell back.
    pub(crate) fn fall_back(&mut self, state: &mut State, groups: &Groups) -> bool {
        let mispredicted = std::mem::take(&mut self.rises) >= MISPREDICTED;
        if self.rule == StepRule::Newton && mispredicted {
            *self = Stepper::new(StepRule::Adaptive, groups);
            state.reopen(groups, REOPEN_MIX);
            return true;
        }
        false
    }

    /// The step of an iterate whose forms `quad` are summed over several single-kernel
    /// problems on one `K_eff` (the shared multiclass fit, `solvers::shared`): the rule's step,
    /// second-order with the classes' iterates `second` ([`newton::model`] takes them all).
    pub(crate) fn summed(
        &mut self,
        state: &mut State,
        quad: &[f64],
        primal: f64,
        groups: &Groups,
        second: Option<&[newton::Iterate]>,
    ) {
        self.step(state, quad, primal, false, groups, second);
    }
}

/// The iterate `(λ, γ)` and the working set of kernels.
pub(crate) struct State {
    /// `λ_jk`, summing to one in each group; zero off the working set.
    lambda: Vec<f64>,
    /// `γ_j` on the simplex.
    gamma: Vec<f64>,
    /// Membership of the working set.
    in_set: Vec<bool>,
    /// The free groups' unpenalised blocks ([`free`]; the shared fit reads their flags and
    /// keeps the blocks per class).
    pub(crate) blocks: FreeBlocks,
}

impl State {
    pub(crate) fn new(groups: &Groups) -> Self {
        let m = groups.ids().len();
        let mut lambda = vec![0.0; m];
        for g in groups.members() {
            for &k in g {
                lambda[k] = 1.0 / g.len() as f64;
            }
        }
        let j = groups.len();
        State {
            lambda,
            gamma: vec![1.0 / j as f64; j],
            in_set: vec![true; m],
            blocks: FreeBlocks::new(groups),
        }
    }

    /// `θ_jk = λ_jk/γ_j` (zero off the working set), and the proximal weight `τ` (the largest
    /// of them) that the free groups' kernels take ([`free`]).
    pub(crate) fn theta(&self, groups: &Groups) -> (Vec<f64>, f64) {
        let free = &self.blocks.free;
        let mut theta: Vec<f64> = self
            .lambda
            .iter()
            .zip(groups.ids())
            .map(|(&l, &j)| {
                if l > 0.0 && self.gamma[j] > 0.0 && !free[j] {
                    l / self.gamma[j]
                } else {
                    0.0
                }
            })
            .collect();
        let tau = theta.iter().fold(0.0f64, |a, &t| a.max(t));
        for (t, &j) in theta.iter_mut().zip(groups.ids()) {
            if free[j] {
                *t = tau;
            }
        }
        (theta, tau)
    }

    pub(crate) fn set(&self) -> Vec<usize> {
        (0..self.in_set.len()).filter(|&m| self.in_set[m]).collect()
    }

    /// Every kernel back in the set, each group's `λ` mixed with `mix` of the uniform weights
    /// (the entropic step moves no zero weight).
    fn reopen(&mut self, groups: &Groups, mix: f64) {
        for (j, g) in groups.members().iter().enumerate() {
            if self.blocks.free[j] {
                continue;
            }
            for &k in g {
                self.lambda[k] = (1.0 - mix) * self.lambda[k] + mix / g.len() as f64;
                self.in_set[k] = true;
            }
        }
    }

    /// Restricts the set to the `top` kernels of largest `q` in each group, uniformly weighted.
    fn restrict(&mut self, groups: &Groups, quad: &[f64], top: impl Fn(usize) -> usize) {
        for g in groups.members() {
            let mut order = g.clone();
            order.sort_by(|&a, &b| quad[b].total_cmp(&quad[a]));
            let keep = top(g.len()).clamp(1, g.len());
            for (r, &k) in order.iter().enumerate() {
                self.in_set[k] = r < keep;
                self.lambda[k] = if r < keep { 1.0 / keep as f64 } else { 0.0 };
            }
        }
    }

    /// Adds the kernels of `q` above their group's largest in the set (at most `top(n_j)` per
    /// group, the largest first), each at the group's mean weight if `seeded`, else at zero;
    /// returns how many.
    pub(crate) fn grow(
        &mut self,
        groups: &Groups,
        quad: &[f64],
        top: impl Fn(usize) -> usize,
        seeded: bool,
    ) -> usize {
        let mut added = 0;
        for g in groups.members() {
            let best = g
                .iter()
                .filter(|&&k| self.in_set[k])
                .map(|&k| quad[k])
                .fold(f64::NEG_INFINITY, f64::max);
            let mut more: Vec<usize> = g
                .iter()
                .copied()
                .filter(|&k| !self.in_set[k] && quad[k] > best * (1.0 + 1e-9))
                .collect();
            if more.is_empty() {
                continue;
            }
            more.sort_by(|&a, &b| quad[b].total_cmp(&quad[a]));
            more.truncate(top(g.len()).max(1));
            let size = g.iter().filter(|&&k| self.in_set[k]).count();
            let share = if seeded {
                1.0 / size.max(1) as f64
            } else {
                0.0
            };
            for &k in &more {
                self.in_set[k] = true;
                self.lambda[k] = share;
            }
            let total: f64 = g.iter().map(|&k| self.lambda[k]).sum();
            for &k in g {
                self.lambda[k] /= total;
            }
            added += more.len();
        }
        added
    }

    /// The free groups' membership after a step with block norms `norms` ([`free`]): a free
    /// group whose norm sum exceeds every penalised group's rejoins the saddle form (its
    /// blocks dropped, `λ` from its block norms, `γ_j` the largest); a penalised group (not
    /// the one of largest `γ`) whose `γ_j` fell below [`FREE_GAMMA`] of the largest while its
    /// norm sum is at least that fraction of the largest group's, or is not zero while its
    /// weighted traces `Σ θ_k tr K_k` (`traces`: `tr K_k`) are [`DOMINANT`] times all the other
    /// groups', leaves it (`γ_j = 0`). `γ`
    /// is renormalised. Returns the groups that rejoined and those to free, whose blocks the
    /// caller sets (`FreeBlocks::free_group`).
    pub(crate) fn revise_groups(
        &mut self,
        groups: &Groups,
        norms: &[f64],
        quad: &[f64],
        traces: &[f64],
    ) -> (Vec<usize>, Vec<usize>) {
        let sums: Vec<f64> = groups
            .members()
            .iter()
            .map(|g| g.iter().map(|&k| norms[k]).sum())
            .collect();
        let penalised = (0..groups.len())
            .filter(|&j| !self.blocks.free[j])
            .map(|j| sums[j])
            .fold(0.0f64, f64::max);
        // The group of largest γ (a rejoining group re-enters at most at that γ, so it stays
        // the largest), and the penalised groups' common ratio `γ_i / √W_i` of eq. 6 from it.
        let root = |lambda: &[f64], g: &[usize]| {
            g.iter()
                .map(|&k| lambda[k] * quad[k].max(0.0))
                .sum::<f64>()
                .sqrt()
        };
        let top = self.gamma.iter().fold(0.0f64, |a, &v| a.max(v));
        let lead = (0..groups.len()).find(|&j| !self.blocks.free[j] && self.gamma[j] == top);
        let ratio = lead
            .map(|j| top / root(&self.lambda, &groups.members()[j]))
            .filter(|r| r.is_finite() && *r > 0.0);
        let mut joined = Vec::new();
        for (j, g) in groups.members().iter().enumerate() {
            if self.blocks.free[j] && sums[j] > penalised {
                self.blocks.join(groups, j);
                self.blocks.rejoined[j] = true;
                for &k in g {
                    self.lambda[k] = if sums[j] > 0.0 {
                        norms[k] / sums[j]
                    } else {
                        1.0 / g.len() as f64
                    };
                    self.in_set[k] = true;
                }
                // Eq. 6 at the block's λ, on the penalised groups' scale: the group re-enters
                // near the weight its block had, where the largest γ would collapse its
                // kernels' θ (docs/mathematics.md §4, "Free groups").
                let at = ratio.map_or(0.0, |r| r * root(&self.lambda, g));
                self.gamma[j] = if at > 0.0 && at.is_finite() {
                    at.min(top)
                } else {
                    top
                };
                joined.push(j);
            }
        }
        let freed = self.free_carrying(groups, &sums, traces, (lead, top));
        let total: f64 = self.gamma.iter().sum();
        if total > 0.0 {
            self.gamma.iter_mut().for_each(|v| *v /= total);
        }
        (joined, freed)
    }

    /// The penalised groups that [`revise_groups`](Self::revise_groups) frees (their `γ_j`
    /// set to 0), given every group's norm sum `sums`, the kernels' traces and the group of
    /// largest `γ` with that `γ` (`lead`, `top`).
    fn free_carrying(
        &mut self,
        groups: &Groups,
        sums: &[f64],
        traces: &[f64],
        (lead, top): (Option<usize>, f64),
    ) -> Vec<usize> {
        let top_sum = sums.iter().fold(0.0f64, |a, &v| a.max(v));
        // Each penalised group's share of `K_eff`'s trace, `Σ_k θ_k tr K_k` with `θ = λ/γ`.
        let weighted: Vec<f64> = groups
            .members()
            .iter()
            .enumerate()
            .map(|(j, g)| match self.gamma[j] > 0.0 && !self.blocks.free[j] {
                true => g.iter().map(|&k| self.lambda[k] * traces[k]).sum::<f64>() / self.gamma[j],
                false => 0.0,
            })
            .collect();
        let all: f64 = weighted.iter().sum();
        let mut freed = Vec::new();
        for (j, g) in groups.members().iter().enumerate() {
            let dominates = weighted[j] >= DOMINANT * (all - weighted[j]);
            let carries = sums[j] > 0.0 && (sums[j] >= FREE_GAMMA * top_sum || dominates);
            // A group that rejoined carries the largest norm sum at some iterate: tied at the
            // optimum, not below it; freed again it would cycle.
            if self.blocks.free[j] || self.blocks.rejoined[j] || Some(j) == lead || !carries {
                continue;
            }
            if self.gamma[j] < FREE_GAMMA * top {
                g.iter().for_each(|&k| self.in_set[k] = true);
                self.gamma[j] = 0.0;
                freed.push(j);
            }
        }
        freed
    }

    /// [Nath] eq. 6, then the entropic mirror step eq. 8 on the set, given `q` on the set;
    /// returns `‖g‖_∞` through `step_for`, which maps it to `η`.
    fn update(&mut self, groups: &Groups, quad: &[f64], step_for: impl FnOnce(f64) -> f64) {
        self.gamma_step(groups, quad);
        // g_jk = −½ q_jk/γ_j; the step is shifted by the group's smallest g (no overflow).
        let gamma = &self.gamma;
        let grad = |k: usize| {
            let g = gamma[groups.ids()[k]];
            if g > 0.0 {
                -0.5 * quad[k].max(0.0) / g
            } else {
                0.0
            }
        };
        let g_inf = (0..quad.len())
            .filter(|&k| self.in_set[k])
            .map(|k| grad(k).abs())
            .fold(0.0f64, f64::max);
        if !(g_inf > 0.0 && g_inf.is_finite()) {
            return;
        }
        let eta = step_for(g_inf);
        if eta.is_nan() || eta <= 0.0 {
            return;
        }
        for (j, g) in groups.members().iter().enumerate() {
            if self.blocks.free[j] {
                continue;
            }
            let low = g
                .iter()
                .filter(|&&k| self.in_set[k])
                .map(|&k| grad(k))
                .fold(f64::INFINITY, f64::min);
            let members: Vec<usize> = g.iter().copied().filter(|&k| self.in_set[k]).collect();
            let mut total = 0.0;
            for &k in &members {
                self.lambda[k] *= (-eta * (grad(k) - low)).exp();
                total += self.lambda[k];
            }
            for &k in &members {
                self.lambda[k] /= total;
                if self.lambda[k] < PRUNE {
                    self.lambda[k] = 0.0;
                    self.in_set[k] = false;
                }
            }
        }
    }

    /// `γ ∝ weights`, leaving out the groups below [`GROUP_CUTOFF`] of the largest.
    fn set_gamma(&mut self, weights: &[f64]) {
        let top = weights.iter().fold(0.0f64, |a, &r| a.max(r));
        if top > 0.0 && top.is_finite() {
            let kept = |r: f64| if r > GROUP_CUTOFF * top { r } else { 0.0 };
            let total: f64 = weights.iter().map(|&r| kept(r)).sum();
            for (g, &r) in self.gamma.iter_mut().zip(weights) {
                *g = kept(r) / total;
            }
        }
    }

    /// The second-order step ([`newton`]): `λ` minimises the model over the simplexes and `γ`
    /// follows its linearisation `γ + dγ₀ + (dγ/dλ)(λ⁺ − λ)`, each group's within
    /// [`GAMMA_TRUST`]× of its current weight ([`trusted_gamma`]). False (nothing changed) when
    /// the model is degenerate or absurd in some `γ_j`.
    fn newton(&mut self, groups: &Groups, quad: &[f64], its: &[newton::Iterate]) -> bool {
        let Some(model) = newton::model(its, groups.ids(), &self.lambda, &self.gamma, quad) else {
            return false;
        };
        let s = model.vars.len();
        let x0: Vec<f64> = model.vars.iter().map(|&k| self.lambda[k]).collect();
        // A small ridge centred at λ: kernels that do not move α span flat directions.
        let top = (0..s).fold(0.0f64, |a, r| a.max(model.hess[(r, r)].abs()));
        let mut h = model.hess;
        for r in 0..s {
            h[(r, r)] += 1e-8 * top.max(f64::MIN_POSITIVE);
        }
        let c: Vec<f64> = (0..s)
            .map(|a| model.grad[a] - (0..s).map(|b| h[(a, b)] * x0[b]).sum::<f64>())
            .collect();
        let x = newton::simplex_qp(&h, &c, &x0, &model.group);
        let mut gamma = vec![0.0; self.gamma.len()];
        for (l, &j) in model.live.iter().enumerate() {
            gamma[j] = model.gamma0[l]
                + (0..s)
                    .map(|r| model.dgamma[(l, r)] * (x[r] - x0[r]))
                    .sum::<f64>();
        }
        let trusted: Option<Vec<f64>> = (model.live.iter())
            .map(|&j| trusted_gamma(gamma[j], self.gamma[j]))
            .collect();
        let Some(trusted) = trusted else {
            return false;
        };
        for (&j, t) in model.live.iter().zip(trusted) {
            gamma[j] = t;
        }
        for (&k, &v) in model.vars.iter().zip(&x) {
            self.lambda[k] = if v < PRUNE { 0.0 } else { v };
            self.in_set[k] = v >= PRUNE;
        }
        for &j in &model.live {
            let total: f64 = groups.members()[j].iter().map(|&k| self.lambda[k]).sum();
            for &k in &groups.members()[j] {
                self.lambda[k] /= total;
            }
        }
        self.set_gamma(&gamma);
        true
    }

    /// [Nath] eq. 6 given `q` on the set: `γ_j ∝ √W_j`.
    fn gamma_step(&mut self, groups: &Groups, quad: &[f64]) {
        let free = &self.blocks.free;
        let roots: Vec<f64> = groups
            .members()
            .iter()
            .zip(free)
            .map(|(g, &free)| {
                // A free group is out of the saddle form: γ_j = 0.
                if free {
                    return 0.0;
                }
                g.iter()
                    .map(|&k| self.lambda[k] * quad[k].max(0.0))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect();
        // A group whose kernels (nearly) vanish on β is left out of K_eff (γ_j = 0, so
        // θ = 0): its weight λ/γ_j would be huge and swamp the other kernels in K_eff's
        // rounding (e.g. a constant kernel, K1 ⊥ β), while its contribution K_jk β is nil.
        self.set_gamma(&roots);
    }
}

/// How many kernels of a group of `n_j` the working set starts with, and adds at most per
/// check: `⌈√n_j⌉`.
fn per_group(n_j: usize) -> usize {
    (n_j as f64).sqrt().ceil() as usize
}

/// The accuracy of the next single-kernel solve, the schedule's being `scheduled`. The
/// second-order step asks for the final one from the start: its model is the derivative of the
/// exact solution (and a warm-started SMO run costs no stack read). It still follows the
/// schedule below that, when a stalled gap makes the schedule tighten its floor: at extreme
/// scales the fixed `inner_tol` held the gap still (docs/mathematics.md §4, "Stopping").
fn inner_tol(scheduled: f64, cfg: &MirrorConfig) -> f64 {
    if cfg.step == StepRule::Newton && newton::dual_box(cfg.loss, &[cfg.c]).is_some() {
        cfg.inner_tol.min(scheduled)
    } else {
        scheduled
    }
}

/// Fits group MKL on a kernel stack with the group id of every kernel.
pub fn fit_group(
    stack: &dyn KernelStack,
    y: &[f64],
    groups: &Groups,
    cfg: &MirrorConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_group_weighted(stack, y, None, groups, cfg, interrupt)
}

/// The forms `q_k = βᵀK_kβ` of the kernels `set` into `quad` (and at the natural point
/// `hat` into `hat_quad`, logistic loss) in one pass; with `products` (the second-order step)
/// also every `K_kβ` on the support vectors, returned one kernel after another.
fn read_set(
    stack: &dyn KernelStack,
    beta: &[f64],
    hat: Option<&[f64]>,
    set: &[usize],
    products: bool,
    quad: &mut [f64],
    hat_quad: &mut [f64],
) -> Vec<f64> {
    if !products {
        read_forms(stack, beta, hat, set, quad, hat_quad);
        return Vec::new();
    }
    let p = support_products(stack, beta, set);
    for (&k, row) in set.iter().zip(p.chunks_exact(beta.len().max(1))) {
        quad[k] = row.iter().zip(beta).map(|(a, b)| a * b).sum();
    }
    p
}

/// [`fit_group`] with a weight per sample on the loss (the data term `C Σ_i w_i ℓ(y_i, f_i)`).
pub fn fit_group_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    groups: &Groups,
    cfg: &MirrorConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::common::validate_targets(stack.n(), y)?;
    let c = costs(cfg.c, sample_weight, y.len())?;
    let m = stack.m();
    if groups.ids().len() != m {
        return Err(MkError::config(
            "groups",
            format!("has {} entries for {m} kernels", groups.ids().len()),
        ));
    }
    let mut mirror = Mirror::new(stack, y, c, groups, cfg)?;
    run(&mut mirror, cfg, interrupt)
}

/// Runs mirror descent from `mirror` under the driver's rules.
fn run(
    mirror: &mut Mirror<'_>,
    cfg: &MirrorConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    // Mirror descent is not monotone: a stall is declared only after 50 steps without progress.
    let gaps = GapSchedule::new(cfg.tol, cfg.inner_tol, 1.0).with_patience(50);
    // Checked at `tol` itself: the restricted tail is first-order, so chasing tol/2 costs
    // more restricted steps than one check (docs/mathematics.md §4, "Kernel working set").
    let checks = CheckSchedule::new().with_margin(1.0);
    Driver::new(cfg.tol, cfg.max_iter, interrupt)
        .with_gaps(gaps)
        .with_checks(checks)
        .run(mirror)
}

/// Mirror descent's state between iterations: the weights `(λ, γ)` and their working set, the
/// step rule, the warm-started single-kernel solver and the forms `q_jk` of the last `β`.
struct Mirror<'s> {
    stack: &'s dyn KernelStack,
    psd: PsdCheck<'s>,
    y: &'s [f64],
    /// The loss weights `C w_i`.
    c: Vec<f64>,
    groups: &'s Groups,
    cfg: &'s MirrorConfig,
    state: State,
    stepper: Stepper,
    solver: SingleKernel,
    k_eff: Vec<f64>,
    /// `q_jk = βᵀK_jkβ`, and the forms at the natural dual point (logistic loss only).
    quad: Vec<f64>,
    hat_quad: Vec<f64>,
    /// `tr K_k`, read once: the freeing rule's weighted traces ([`State::revise_groups`]).
    traces: Vec<f64>,
    /// Whether the iterations after the first run on a working set of kernels.
    restricts: bool,
    first: bool,
    /// The last step, for the update that follows it.
    last: Option<Step>,
    /// The certified gap's progress over the records: when a restricted iterate is certified
    /// on the whole problem alone ([`certify`]).
    watch: certify::Watch,
}

/// One iterate `A[jk] = scale·θ_jk β` (intercept `b`): its certificate's values and what the
/// next step on `(λ, γ)` needs.
struct Step {
    theta: Vec<f64>,
    /// `f = K_eff β`.
    f: Vec<f64>,
    /// The natural dual point (logistic loss); the dual point is `β` otherwise.
    hat: Option<Vec<f64>>,
    /// `θ_jk sqrt(q_jk)`, the block norms of the unscaled model.
    norms: Vec<f64>,
    scale: f64,
    b: f64,
    primal: f64,
    /// The loss term `−C Σ ℓ*` of the dual value at the dual point.
    dual_loss: f64,
    /// The working set of the solve.
    set: Vec<usize>,
    /// Whether the next step may be the second-order one, and then the products `K_jk β` of
    /// the set's kernels, one after another.
    second: bool,
    products: Vec<f64>,
    /// `λ` was reset after the certificate (the set formed, or grown by seeded weights): the
    /// step rule restarts.
    restart: bool,
    /// The free kernels' blocks after this step's proximal step (`A[k] = v⁺_k`).
    moved: Vec<Moved>,
    /// The kernel weights reported: `θ`, a free kernel's `s_k / max_{k'∈G_j} sqrt(q_k')` (its
    /// weight `λ/γ_j` at the saddle, `GroupPenalty::kernel_weights`'s rule).
    reported: Vec<f64>,
}

impl Step {
    /// The model at `β`: the weights `θ/Σθ` and the block norms of `scale·A`.
    fn model(&self, beta: &[f64]) -> Model {
        let total: f64 = self.reported.iter().sum();
        let weights = self.reported.iter().map(|t| t / total).collect();
        let norms = self.norms.iter().map(|s| self.scale * s).collect();
        let mut model = Model::outer(&self.theta, beta, self.scale, self.b, weights, norms);
        let n = beta.len();
        for mv in &self.moved {
            let row = &mut model.coef[mv.kernel * n..(mv.kernel + 1) * n];
            row.iter_mut()
                .zip(&mv.coef)
                .for_each(|(a, v)| *a = self.scale * v);
        }
        model
    }
}

impl Solver for Mirror<'_> {
    /// The warm-started single-kernel solve on `K_eff` and the certificate of its iterate: the
    /// whole problem's, or the restricted problem's with a whole-problem check when one is due.
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let first = std::mem::replace(&mut self.first, false);
        let mut st = self.solve(d)?;
        let outcome = if st.set.len() == self.stack.m() {
            self.whole_step(d, &mut st, first)
        } else {
            self.restricted_step(d, &mut st)
        };
        let dual = d.tracker.history.last().is_some_and(|r| r.dual.is_finite());
        self.watch.observe(d.tracker.gap(), dual);
        self.last = Some(st);
        Ok(outcome)
    }

    fn restricted(&self) -> bool {
        !self.state.in_set.iter().all(|&s| s)
    }

    /// A stall under the second-order rule falls back to the adaptive step for the rest of
    /// the fit (its model mispredicts there, docs/mathematics.md §1.9); otherwise mirror
    /// descent goes on: its plateaus outlast the driver's patience and still converge (tied
    /// groups, logistic, at 1e-6), and its inner schedule's own patience of 50 ends a stall.
    fn recover(&mut self, _d: &mut Driver<'_>, _frozen: bool) -> bool {
        self.stepper.fall_back(&mut self.state, self.groups);
        true
    }

    /// [Nath] eq. 6 and the mirror step eq. 8 on `(λ, γ)`, or the second-order step
    /// ([`Stepper::step`]).
    fn update(&mut self, _d: &Driver<'_>) -> Result<()> {
        let st = self.last.take().expect("an update follows a step");
        let (upper, ridge) = newton::dual_box(self.cfg.loss, &self.c).unwrap_or_default();
        let iterate = st.second.then(|| newton::Iterate {
            y: self.y,
            alpha: self.solver.alpha().unwrap_or_default(),
            upper: &upper,
            ridge: &ridge,
            k_eff: match self.stack.on_demand() {
                Some(od) => CombinedKernel::OnDemand(od, &st.theta),
                None => CombinedKernel::Stored(&self.k_eff, self.stack.n()),
            },
            f: &st.f,
            products: &st.products,
            set: &st.set,
        });
        let groups = self.groups;
        let (quad, restart) = (&self.quad, st.restart);
        let state = &mut self.state;
        self.stepper.step(
            state,
            quad,
            st.primal,
            restart,
            groups,
            iterate.as_ref().map(std::slice::from_ref),
        );
        self.revise_free(st);
        Ok(())
    }
}

impl<'s> Mirror<'s> {
    /// The start: uniform weights `λ` in each group and `γ` across them, every kernel in the
    /// set.
    fn new(
        stack: &'s dyn KernelStack,
        y: &'s [f64],
        c: Vec<f64>,
        groups: &'s Groups,
        cfg: &'s MirrorConfig,
    ) -> Result<Self> {
        let m = stack.m();
        // The working set pays when it leaves out most kernels.
        let restricts = cfg.working_set
            && groups
                .members()
                .iter()
                .map(|g| per_group(g.len()))
                .sum::<usize>()
                * 2
                <= m;
        Ok(Mirror {
            state: State::new(groups),
            solver: SingleKernel::new(cfg.loss, &c, y)?,
            stack,
            psd: PsdCheck::new(stack),
            y,
            c,
            groups,
            cfg,
            stepper: Stepper::new(cfg.step, groups),
            k_eff: Vec::new(),
            traces: traces(stack),
            quad: vec![0.0; m],
            hat_quad: vec![0.0; m],
            restricts,
            first: true,
            last: None,
            watch: certify::Watch::new(certify::CERTIFY_RUN),
        })
    }

    /// The single-kernel solve on `K_eff = Σ θ_jk K_jk`, the forms `q_jk` of the set in one
    /// pass (with the products `K_jk β` for the second-order step), and the iterate's primal
    /// value and dual loss term.
    fn solve(&mut self, d: &Driver<'_>) -> Result<Step> {
        let (stack, y, c, cfg) = (self.stack, self.y, &self.c, self.cfg);
        let (theta, tau) = self.state.theta(self.groups);
        let tol = inner_tol(d.inner_tol(), cfg);
        // The free groups' blocks enter as a fixed function of the model ([`free`]).
        self.solver.set_offset(self.state.blocks.offset(y.len()));
        let (f, b) =
            self.solver
                .solve_combined(stack, y, c, &theta, tol, &mut self.k_eff, d.interrupt)?;
        let f = self.solver.shifted(&f);
        let beta = self.solver.beta();
        let set = self.state.set();
        // The second-order step needs every `K_jk β` on the set, from the same one pass; its
        // model knows nothing of the free groups' blocks.
        let second = cfg.step == StepRule::Newton
            && newton::dual_box(cfg.loss, c).is_some()
            && set.len() <= NEWTON_MAX
            && self.solver.alpha().is_some()
            && !self.state.blocks.any();
        // The logistic dual is evaluated at the model's natural point, feasible at any scale
        // (docs/mathematics.md §1.3); `b` becomes the best intercept, the primal's too.
        let natural = natural_dual(cfg.loss, c, y, &f, b);
        let b = natural.as_ref().map_or(b, |n| n.0);
        let hat = natural.map(|n| n.1);
        let (quad, hat_quad) = (&mut self.quad, &mut self.hat_quad);
        let products = read_set(stack, beta, hat.as_deref(), &set, second, quad, hat_quad);
        let moved = self.state.blocks.step(stack, self.groups, beta, tau, quad);
        let mut norms: Vec<f64> = theta
            .iter()
            .zip(&self.quad)
            .map(|(t, q)| t * q.max(0.0).sqrt())
            .collect();
        let mut reported = theta.clone();
        for mv in &moved {
            norms[mv.kernel] = mv.norm;
            let members = &self.groups.members()[self.groups.ids()[mv.kernel]];
            let top = members.iter().map(|&k| self.quad[k]).fold(0.0f64, f64::max);
            if top > 0.0 {
                reported[mv.kernel] = mv.norm / top.sqrt();
            }
        }
        let penalty = group_penalty(&norms, self.groups);
        let primal = cfg.loss.weighted_total(y, &f, b, c) + penalty;
        // The model `scale·A` with intercept `b` (the margin lift of the hinge loss).
        let (scale, b, primal) = cfg
            .loss
            .lift_to_margin(y, &f, b, c, penalty, primal)
            .unwrap_or((1.0, b, primal));
        let dual_loss = loss_dual(cfg.loss, c, y, hat.as_deref().unwrap_or(beta));
        Ok(Step {
            theta,
            f,
            hat,
            norms,
            scale,
            b,
            primal,
            dual_loss,
            set,
            second,
            products,
            restart: false,
            moved,
            reported,
        })
    }

    /// The free groups after a step ([`free`]): the free kernels' proximal steps are kept,
    /// the groups revised by [`State::revise_groups`], and a group freed at the step's blocks
    /// `θ_k β`.
    fn revise_free(&mut self, st: Step) {
        let groups = self.groups;
        let n = self.y.len();
        for mv in st.moved {
            self.state.blocks.coef[mv.kernel] = mv.coef;
            self.state.blocks.values[mv.kernel] = mv.values;
        }
        let (_, freed) = self
            .state
            .revise_groups(groups, &st.norms, &self.quad, &self.traces);
        let beta = self.solver.beta();
        for j in freed {
            let kb: Vec<Vec<f64>> = groups.members()[j]
                .iter()
                .map(|&k| {
                    let mut out = vec![0.0; n];
                    self.stack.matvec(k, beta, &mut out);
                    out
                })
                .collect();
            self.state
                .blocks
                .free_group(groups, j, &st.theta, beta, &kb);
        }
    }

    /// The dual point of a step (its natural point for the logistic loss, else `β`) and the
    /// forms `q_jk` at that point.
    fn dual_point<'a>(&'a self, st: &'a Step) -> (&'a [f64], &'a [f64]) {
        match &st.hat {
            Some(hat) => (hat, &self.hat_quad),
            None => (self.solver.beta(), &self.quad),
        }
    }

    /// A step on the whole problem: its certificate; after the first (unless it converged),
    /// the working set is formed by the kernels of largest `q_jk` in each group.
    fn whole_step(&mut self, d: &mut Driver<'_>, st: &mut Step, first: bool) -> Outcome {
        let (gap, dual) = self.certify(d, st);
        let converged = gap <= d.tol;
        let new_problem = self.restricts && first && !converged;
        if new_problem {
            self.state.restrict(self.groups, &self.quad, per_group);
            d.checks.start(dual);
            st.restart = true;
        }
        Outcome::Gap {
            gap,
            whole: true,
            new_problem,
        }
    }

    /// Records the whole problem's certificate from every `q_jk` at the step's dual point: the
    /// gap to stop on, and the dual value. The dual value is screened by the witness check of
    /// its point on the kernels whose `q_jk` it uses (docs/mathematics.md §1.8).
    fn certify(&self, d: &mut Driver<'_>, st: &Step) -> (f64, f64) {
        let (point, dq) = self.dual_point(st);
        self.certify_at(d, st, point, dq)
    }

    /// [`Mirror::certify`] at the dual point `point` with the forms `dq` of every kernel there.
    fn certify_at(&self, d: &mut Driver<'_>, st: &Step, point: &[f64], dq: &[f64]) -> (f64, f64) {
        let m = self.stack.m();
        let witness = self.psd.all().scan(point, m, |k| dq[k]);
        let dual = st.dual_loss - dual_penalty(dq, self.groups, |_| true);
        let beta = self.solver.beta();
        let gap = d
            .tracker
            .record_with(st.primal, (dual, witness), st.set.len(), || st.model(beta));
        (gap, dual)
    }

    /// A step on the restricted problem of the working set. Its primal value is a whole-problem
    /// one; its dual value (the max over `G_j` ranges over the set only) bounds the restricted
    /// problem alone and decides only when a whole-problem check is due. Between checks, a
    /// certified gap that has not moved for [`certify::CERTIFY_RUN`] records gets the whole
    /// dual value at this `β`, nothing else changed ([`certify`]).
    fn restricted_step(&mut self, d: &mut Driver<'_>, st: &mut Step) -> Outcome {
        let set = &st.set;
        let (point, dq) = self.dual_point(st);
        let witness = self.psd.of(set).scan(point, set.len(), |k| dq[set[k]]);
        // Only the witness is recorded: the restricted dual bounds the restricted problem
        // alone, so it neither certifies nor stops the fit, witness or not.
        d.tracker.note(witness);
        let in_set = &self.state.in_set;
        let rdual = st.dual_loss - dual_penalty(dq, self.groups, |k| in_set[k]);
        let rgap = d.checks.restricted_gap(st.primal, rdual);
        let mut new_problem = false;
        if d.checks.due_after(rgap, d.tol) {
            match self.check(d, st) {
                Checked::End(status) => return Outcome::Stop(status),
                Checked::Grew => new_problem = true,
                Checked::BackedOff => {}
            }
        } else if self.watch.wants(d.tracker.gap_with(st.primal)) {
            // The whole dual value at this `β`, the iterates unchanged ([`certify`]).
            if self.certify_only(d, st) <= d.tol {
                return Outcome::Stop(SolveStatus::Converged);
            }
        } else {
            // The restricted dual bounds the restricted problem only: not recorded.
            let beta = self.solver.beta();
            let dual = (f64::NEG_INFINITY, None);
            d.tracker
                .record_with(st.primal, dual, st.set.len(), || st.model(beta));
        }
        Outcome::Gap {
            gap: rgap,
            whole: false,
            new_problem,
        }
    }

    /// The whole-problem check at the step's `β`: every `q_jk`, one pass over the stack (with
    /// the products `K_jk β` for the second-order step on the grown set), the whole
    /// certificate recorded; then the fit ends, or the working set grows by the dual's
    /// violators (the kernels whose `q_jk` exceed the largest of their group in the set), or
    /// it is complete.
    fn check(&mut self, d: &mut Driver<'_>, st: &mut Step) -> Checked {
        let all: Vec<usize> = (0..self.stack.m()).collect();
        let (beta, hat) = (self.solver.beta(), st.hat.as_deref());
        let (quad, hat_quad) = (&mut self.quad, &mut self.hat_quad);
        let all_products = read_set(self.stack, beta, hat, &all, st.second, quad, hat_quad);
        let (gap, dual) = self.certify(d, st);
        if gap <= d.tol {
            return Checked::End(SolveStatus::Converged);
        }
        // The second-order step brings the new kernels in from λ = 0, with the model at the
        // current weights; the mirror step cannot move a zero weight.
        let grew = self
            .state
            .grow(self.groups, &self.quad, per_group, !st.second)
            > 0;
        match d.checks.settle(grew) {
            Settled::Grew => {
                d.checks.start(d.tracker.certified(dual));
                // The mirror step restarts from the seeded weights; the second-order step goes
                // on from this iterate's (the set grew by zero weights) on the grown set.
                st.restart = !st.second;
                if st.second {
                    st.set = self.state.set();
                    let n = self.solver.beta().len();
                    st.products = st
                        .set
                        .iter()
                        .flat_map(|&k| all_products[k * n..(k + 1) * n].iter().copied())
                        .collect();
                }
                Checked::Grew
            }
            Settled::Stalled => Checked::End(SolveStatus::Stalled),
            Settled::BackedOff => Checked::BackedOff,
        }
    }
}

#[cfg(test)]
mod tests;
