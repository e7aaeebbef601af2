//! The kernel weights of the shared fit's single-kernel solves and their step, per penalty
//! (docs/mathematics.md §3.8), each the binary solver's step on the forms summed over the
//! classes: Kloft's eq. 17 with the analytic solver's over-relaxation (`lp`), the same
//! alternation with `θ = s` (`l1`, `elasticnet`), group MKL's mirror step (`group`).

use crate::kernels::KernelStack;
use crate::penalties::{kernel_weights, theta_update, BlockPenalty, Groups, WeightPenalty};
use crate::solvers::lp::{extrapolate, over_relaxation};
use crate::solvers::mirror::{traces, FreeBlocks, State, StepRule, Stepper};
use crate::solvers::wrapper::{NewtonModel, START_RADIUS};

/// The weights' state between iterations.
pub(super) enum Weights {
    /// θ with unit p-norm (θ ≡ 1 at `p = ∞`: one solve per class).
    Lp { p: f64, theta: Vec<f64> },
    /// The effective weights `w` of the solves (`w = θ/(r_1 + r_2 θ)` of the alternation
    /// `θ = s`) and the wrapper's trust region on them ([`Trust`]).
    Sparse {
        pen: WeightPenalty,
        w: Vec<f64>,
        trust: Trust,
    },
    /// [Nath]'s `(λ, γ)`, `θ̃ = λ/γ`, and the adaptive step's state (§4).
    Group {
        groups: Groups,
        state: Box<State>,
        stepper: Stepper,
        /// Every class's free blocks (`super::group`).
        blocks: Vec<FreeBlocks>,
        /// `tr K_k`, read once: the freeing rule's weighted traces.
        traces: Vec<f64>,
    },
}

impl Weights {
    /// The starting weights of `penalty` on `m` kernels and `k` classes: uniform θ of unit
    /// p-norm, θ ≡ 1, uniform `λ` and `γ`.
    pub fn new(penalty: &BlockPenalty, stack: &dyn KernelStack, k: usize) -> Self {
        let m = stack.m();
        match penalty {
            BlockPenalty::Lp { p } => Weights::Lp {
                p: *p,
                theta: theta_update(&vec![1.0; m], *p),
            },
            BlockPenalty::Sparse(s) => {
                let pen = WeightPenalty::of(*s);
                Weights::Sparse {
                    pen,
                    // θ ≡ 1.
                    w: vec![1.0 / (pen.r1 + pen.r2); m],
                    trust: Trust::new(),
                }
            }
            BlockPenalty::Group(g) => Weights::Group {
                groups: g.groups.clone(),
                state: Box::new(State::new(&g.groups)),
                stepper: Stepper::new(StepRule::Newton, &g.groups),
                blocks: (0..k).map(|_| FreeBlocks::new(&g.groups)).collect(),
                traces: traces(stack),
            },
        }
    }

    /// The over-relaxation of the θ step while it helps (ℓp's, §3.3 (c); 1: none).
    pub fn over_relaxation(&self) -> f64 {
        match self {
            Weights::Lp { p, .. } => over_relaxation(*p),
            _ => 1.0,
        }
    }

    /// After a stall of the driver's rule: group MKL's step falls back to the adaptive rule
    /// and goes on, as the binary fit's ([`Stepper::fall_back`]); the others go on while the
    /// gap still moves.
    pub fn recover(&mut self, frozen: bool) -> bool {
        match self {
            Weights::Group {
                groups,
                state,
                stepper,
                ..
            } => {
                stepper.fall_back(state, groups);
                true
            }
            _ => !frozen,
        }
    }

    /// Iterations without progress before a stall: mirror descent is not monotone (§4).
    pub fn patience(&self) -> usize {
        match self {
            Weights::Group { .. } => 50,
            _ => 10,
        }
    }

    /// The kernel weights of the single-kernel solves.
    pub fn solve_weights(&self) -> Vec<f64> {
        match self {
            Weights::Lp { theta, .. } => theta.clone(),
            Weights::Sparse { w, .. } => w.clone(),
            Weights::Group { groups, state, .. } => state.theta(groups).0,
        }
    }

    /// The kernel weights reported at block norms `norms` of an iterate on `theta`: θ
    /// (`lp`), `d/Σ d` with `d_m = s_m/(r_1 + r_2 s_m)` (`l1`, `elasticnet`, §2.9), `θ̃/Σ θ̃`
    /// (`group`, as the binary fit, §4).
    pub fn reported(&self, norms: &[f64], theta: &[f64]) -> Vec<f64> {
        match self {
            Weights::Lp { .. } => theta.to_vec(),
            Weights::Sparse { pen, .. } => {
                let (r1, r2) = (pen.r1, pen.r2);
                let penalty = if r2 == 0.0 {
                    crate::penalties::SparsePenalty::L1
                } else {
                    crate::penalties::SparsePenalty::ElasticNet { l1_ratio: r1 }
                };
                kernel_weights(penalty, norms)
            }
            Weights::Group { .. } => {
                let total: f64 = theta.iter().sum();
                theta.iter().map(|t| t / total).collect()
            }
        }
    }

    /// ℓp's step from an iterate with block norms `norms` (`s_m = θ_m sqrt(q_m)`): eq. 17,
    /// over-relaxed by `omega` (the sparse penalties' and group's steps read the classes'
    /// solves: `super::sparse`, `super::group`).
    pub fn update(&mut self, norms: &[f64], omega: f64) {
        if let Weights::Lp { p, theta } = self {
            let next = theta_update(norms, *p);
            *theta = extrapolate(theta, &next, omega, *p);
        }
    }
}

/// The alternation's step of the sparse penalties (§3.8): `θ = s`, the minimiser of
/// `½ Σ (s²/θ + θ)` (the η-trick), as effective weights `w = θ/(r_1 + r_2 θ)`; `r_1 = 0` keeps
/// the sum kernel `w ≡ 1/r_2`, whatever θ.
pub(super) fn alternate(pen: &WeightPenalty, w: &mut [f64], norms: &[f64]) {
    if pen.r1 > 0.0 {
        for (v, &s) in w.iter_mut().zip(norms) {
            *v = s / (pen.r1 + pen.r2 * s);
        }
    }
}

/// The trust region of the Newton model on the effective weights.
pub(crate) struct Trust {
    /// The ratio `R` of the region.
    pub(super) radius: f64,
    /// The model of the last accepted iterate and the decrease it predicted for the trial.
    pub(super) model: Option<(NewtonModel, f64)>,
    /// Whether the next step is the alternation's (the first, or after the model failed).
    pub(super) alternate: bool,
}

impl Trust {
    pub(super) fn new() -> Self {
        Trust {
            radius: START_RADIUS,
            model: None,
            alternate: true,
        }
    }

    /// Whether the Newton model reads the next iterate (its step is not the alternation's).
    pub(super) fn modelled(&self) -> bool {
        !self.alternate
    }
}
