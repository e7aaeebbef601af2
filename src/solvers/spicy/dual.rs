//! SpicyMKL's feasibility projection: a candidate dual point made feasible for the dual of
//! docs/mathematics.md §1.4 (`l1` / `elasticnet`), witness-checked, and scaled to its best
//! multiple (the shared dual values are in `penalties::duals`).

use crate::kernels::KernelStack;
use crate::losses::Loss;
use crate::penalties::duals::best_scale;
use crate::penalties::SparsePenalty;
use crate::result::PsdWitness;
use crate::solvers::witness::{PsdCheck, PsdScope};

/// A feasible dual point made from a candidate by [`project_duals`].
pub struct Projected {
    /// The feasible point `ρ̃`.
    pub rho: Vec<f64>,
    /// Its block norms `‖ρ̃‖_{K_m}`.
    pub norms: Vec<f64>,
    /// The block norms after centring, before the `l1` scaling: the optimality test of a
    /// kernel outside a working set (`> r_1` means it should be active).
    pub centred: Vec<f64>,
    /// A witness that a kernel is not PSD along the point (docs/mathematics.md §1.8): then
    /// its dual value certifies nothing.
    pub witness: Option<PsdWitness>,
}

/// Makes each candidate `ρ̃` (our scale) a feasible dual point, with one batched pass over the
/// kernels for all of them.
///
/// Centring is a clipped shift, `ρ̃_i ← clip(ρ̃_i − τ, lo_i, hi_i)` with `τ` such that
/// `Σ ρ̃ = 0`, where `[lo_i, hi_i]` is the domain of `ρ̃_i ↦ ℓ*(y_i, −ρ̃_i/c_i)`: plain mean
/// subtraction can leave a bounded domain (hinge, logistic, …); `Σ clip(ρ̃ − τ)` is
/// non-increasing in `τ`, so `τ` is found by bisection. For `l1` the point is then divided by
/// `max(1, max_m ‖ρ̃‖_{K_m})`, which keeps the sum and the domain (it contains 0).
/// `psd` names the kernels of `stack` in the fit's stack, for the witness check of each point
/// (on the centred point: the check is invariant to the scaling).
pub fn project_duals(
    stack: &dyn KernelStack,
    y: &[f64],
    candidates: &[&[f64]],
    c: &[f64],
    loss: Loss,
    penalty: SparsePenalty,
    psd: PsdScope<'_, '_>,
) -> Vec<Projected> {
    let n = y.len();
    let mm = stack.m();
    let centred: Vec<Vec<f64>> = candidates
        .iter()
        .map(|r| loss.centre_dual(y, r, c))
        .collect();
    let b = centred.len();
    let mut q = vec![0.0; b * mm];
    if b == 1 {
        stack.quad_forms(&centred[0], &mut q);
    } else {
        let vs: Vec<f64> = centred.iter().flatten().copied().collect();
        debug_assert_eq!(vs.len(), b * n);
        stack.quad_forms_batch(&vs, &mut q);
    }
    centred
        .into_iter()
        .enumerate()
        .map(|(j, mut r)| {
            let witness = psd.scan(&r, mm, |m| q[m * b + j]);
            let raw: Vec<f64> = (0..mm).map(|m| q[m * b + j].max(0.0).sqrt()).collect();
            let t = best_scale(&raw, y, &r, c, loss.into(), &penalty.into());
            r.iter_mut().for_each(|v| *v *= t);
            let norms = raw.iter().map(|s| t * s).collect();
            Projected {
                rho: r,
                norms,
                centred: raw,
                witness,
            }
        })
        .collect()
}

/// [`project_duals`] for one candidate on a whole stack: the point and its block norms.
pub fn project_dual(
    stack: &dyn KernelStack,
    y: &[f64],
    rho: &[f64],
    c: &[f64],
    loss: Loss,
    penalty: SparsePenalty,
) -> (Vec<f64>, Vec<f64>) {
    let check = PsdCheck::new(stack);
    let p = project_duals(stack, y, &[rho], c, loss, penalty, check.all())
        .pop()
        .expect("one candidate");
    (p.rho, p.norms)
}
