//! Group MKL's free groups in the shared fit (docs/mathematics.md §4, "Free groups", and
//! §3.8): the binary mirror solver's design (`solvers::mirror::free`) with one block per class.
//! A free group's kernels leave the saddle form; each class's blocks `f_k^c = K_k v_k^c` are
//! fitted by the proximal-point steps `v_k^c ← v_k^c + τ β_c` after each solve, the fixed
//! function `o_c = Σ_{k free} K_k v_k^c` added to class `c`'s model, and the block norm over
//! the classes `s_k = sqrt(Σ_c ‖f_k^c‖²)` counted by the exact penalty. Which groups are free
//! is decided on those norms by the mirror solver's own rule ([`State::revise_groups`]).

use rayon::prelude::*;

use super::weights::Weights;
use super::Shared;
use crate::kernels::{support_products, KernelStack};
use crate::solvers::mirror::{dual_box, FreeBlocks, Moved, NewtonIterate, NEWTON_MAX};

impl Shared<'_> {
    /// Adds every class's free blocks to its next solve as a fixed function of the model.
    pub(super) fn set_offsets(&mut self) {
        let n = self.stack.n();
        if let Weights::Group { blocks, .. } = &self.weights {
            for (s, b) in self.classes.iter_mut().zip(blocks) {
                s.whole.set_offset(b.offset(n));
            }
        }
    }

    /// The proximal steps of the free kernels' blocks from the solves' `β_c` at weight `tau`:
    /// per class the moved blocks, and the block norms over the classes written into `norms`
    /// (`None` without a free group).
    pub(super) fn free_steps(&self, tau: f64, norms: &mut [f64]) -> Option<Vec<Vec<Moved>>> {
        let Weights::Group { groups, blocks, .. } = &self.weights else {
            return None;
        };
        if !blocks.first().is_some_and(FreeBlocks::any) {
            return None;
        }
        let mut quad = vec![0.0; self.stack.m()];
        let moved: Vec<Vec<Moved>> = self
            .classes
            .iter()
            .zip(blocks)
            .map(|(s, b)| b.step(self.stack, groups, s.beta(), tau, &mut quad))
            .collect();
        let mut sq = vec![0.0; norms.len()];
        for mv in moved.iter().flatten() {
            sq[mv.kernel] += mv.norm * mv.norm;
        }
        for mv in &moved[0] {
            norms[mv.kernel] = sq[mv.kernel].sqrt();
        }
        Some(moved)
    }

    /// Group MKL's step after an iterate: the mirror step on the summed forms, then the free
    /// groups revised: the moved blocks kept, groups rejoining or leaving the saddle form by
    /// the mirror solver's rule, a freed group's blocks set per class at `θ_k β_c`.
    pub(super) fn group_step(&mut self, moved: Option<Vec<Vec<Moved>>>) {
        let (stack, n) = (self.stack, self.stack.n());
        let Weights::Group {
            groups,
            state,
            stepper,
            blocks,
            traces,
        } = &mut self.weights
        else {
            return;
        };
        let theta = state.theta(groups).0;
        // The second-order step on every class's iterate (hinge-type losses, as the binary
        // fit: its model knows nothing of free blocks, and its QP is cubic in the set).
        let m = self.forms.len();
        let boxes = dual_box(self.cfg.loss, &self.c).filter(|_| {
            !blocks[0].any() && m <= NEWTON_MAX && self.classes[0].whole.alpha().is_some()
        });
        // Kernels whose weight fell to zero (the second-order step's QP sets them there) come
        // back when their form exceeds their group's largest in the set, the dual's violators,
        // as the binary fit's checks bring them (every form is read at every iterate here): at
        // zero weight for the second-order step, seeded for the mirror step, which cannot move
        // a zero weight (docs/mathematics.md §3.8).
        state.grow(groups, &self.forms, |size| size, boxes.is_none());
        let set = state.set();
        let support: Vec<Vec<f64>> = match boxes {
            Some(_) => self
                .classes
                .par_iter()
                .map(|s| support_products(stack, s.beta(), &set))
                .collect(),
            None => Vec::new(),
        };
        let iterates: Option<Vec<NewtonIterate>> = boxes.as_ref().map(|(upper, ridge)| {
            (self.classes.iter().zip(self.ys).zip(&self.solved))
                .zip(&support)
                .map(|(((s, y), (f, _)), p)| NewtonIterate {
                    y,
                    alpha: s.whole.alpha().unwrap_or_default(),
                    upper,
                    ridge,
                    k_eff: self.kw.kernel(stack),
                    f,
                    products: p,
                    set: &set,
                })
                .collect()
        });
        stepper.summed(state, &self.forms, self.primal, groups, iterates.as_deref());
        for (b, class) in blocks.iter_mut().zip(moved.into_iter().flatten()) {
            for mv in class {
                b.coef[mv.kernel] = mv.coef;
                b.values[mv.kernel] = mv.values;
            }
        }
        let (joined, freed) = state.revise_groups(groups, &self.norms, &self.forms, traces);
        for b in blocks.iter_mut() {
            joined.iter().for_each(|&j| b.join(groups, j));
        }
        for &j in &freed {
            state.blocks.free[j] = true;
            for (b, s) in blocks.iter_mut().zip(&self.classes) {
                let kb = products(stack, &groups.members()[j], s.beta(), n);
                b.free_group(groups, j, &theta, s.beta(), &kb);
            }
        }
    }
}

/// `K_k β` of the kernels `ks`.
fn products(stack: &dyn KernelStack, ks: &[usize], beta: &[f64], n: usize) -> Vec<Vec<f64>> {
    ks.iter()
        .map(|&k| {
            let mut out = vec![0.0; n];
            stack.matvec(k, beta, &mut out);
            out
        })
        .collect()
}
