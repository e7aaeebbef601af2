//! The dual of docs/mathematics.md §1 for `l1` / `elasticnet` and its feasibility projection;
//! the best multiple of a dual point for every [`BlockPenalty`] (ℓp's and group MKL's duals
//! through [`BlockPenalty::conjugate`]).

use crate::kernels::KernelStack;
use crate::losses::{Envelope, Loss};
use crate::result::PsdWitness;
use crate::solvers::witness::{PsdCheck, PsdScope};

use rayon::prelude::*;

use crate::solvers::penalty::{BlockPenalty, SparsePenalty};

/// Points per parallel chunk of a dual value.
const CONJ_CHUNK: usize = 4096;

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

/// The multiple `t ∈ [0, top]` of a feasible point with the largest dual value `d(t)`, by
/// golden-section search (`d` is concave: `ℓ*` and the penalty's conjugate are convex in `t`),
/// or `top` when that is at least as good. Every such `tρ̃` is feasible: the domain is an
/// interval containing 0 and the sum stays 0; `top` keeps the `l1` norm constraint.
///
/// Why: the elastic-net dual charges `Σ max(0, ‖ρ̃‖_{K_m} − r_1)²/(2r_2)`, and at extreme
/// kernel scales every candidate's norms were so large that its value fell below `D(0) = 0`
/// (a linear kernel ×1e12 on breast cancer: gap 1.0 for 200 iterations); shrinking the point
/// trades loss for penalty, and `d'(0) > 0` whenever the loss part can grow. Each evaluation
/// costs O(n + M), no kernel read.
///
/// When `d(top) ≥ d(top(1 − 10⁻⁶))`, concavity makes `d` non-decreasing on `[0, top]` and
/// `top` is returned after two evaluations (the usual case near an optimum). Otherwise the
/// search narrows `[0, top]` to `10⁻⁹ top` (44 evaluations): near its maximum `d` is flat to
/// second order, so the value is then exact to rounding.
fn best_multiple(top: f64, d: impl Fn(f64) -> f64) -> f64 {
    const INV_PHI: f64 = 0.618_033_988_749_894_9;
    let at_top = d(top);
    if at_top >= d(top * (1.0 - 1e-6)) {
        return top;
    }
    let (mut lo, mut hi) = (0.0, top);
    let mut x1 = hi - INV_PHI * (hi - lo);
    let mut x2 = lo + INV_PHI * (hi - lo);
    let (mut d1, mut d2) = (d(x1), d(x2));
    while hi - lo > 1e-9 * top {
        if d1 < d2 {
            lo = x1;
            (x1, d1) = (x2, d2);
            x2 = lo + INV_PHI * (hi - lo);
            d2 = d(x2);
        } else {
            hi = x2;
            (x2, d2) = (x1, d1);
            x1 = hi - INV_PHI * (hi - lo);
            d1 = d(x1);
        }
    }
    let t = 0.5 * (lo + hi);
    if d(t) > at_top {
        t
    } else {
        top
    }
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

/// `D(ρ̃) = −Σ_i c_i ℓ*(y_i, −ρ̃_i/c_i)` (`c`: the per-sample loss weights), minus `Σ_m max(0, ‖ρ̃‖_{K_m} − r_1)²/(2 r_2)` for the
/// elastic net; `−∞` if `ρ̃` violates the `l1` norm constraint (beyond rounding).
/// `norms` are the block norms `‖ρ̃‖_{K_m}` of all kernels.
pub fn dual_value(
    norms: &[f64],
    y: &[f64],
    rho: &[f64],
    c: &[f64],
    loss: Loss,
    penalty: SparsePenalty,
) -> f64 {
    scaled_dual_value(1.0, norms, y, rho, c, loss.into(), &penalty.into())
}

/// The best dual value over the multiples `t ρ̃`, `t ∈ [0, top]`, of a point `ρ̃` with
/// `Σ ρ̃ = 0` inside the conjugate's domain and block norms `norms` (all kernels), where
/// `top = 1/max(1, max_m ‖ρ̃‖_{K_m})` for `l1` (the norm constraint) and 1 for the elastic
/// net and ℓp ([`BlockPenalty::top`]): the certificate of [`project_duals`] without its pass over the kernels, for a solver
/// that has the forms already (the SVM wrapper, whose `β` is feasible by construction).
pub(crate) fn best_dual(
    norms: &[f64],
    y: &[f64],
    rho: &[f64],
    c: &[f64],
    loss: Loss,
    penalty: BlockPenalty,
) -> f64 {
    best_envelope_dual(norms, y, rho, c, loss.into(), &penalty)
}

/// [`best_dual`] of the problem with the loss's Moreau envelope `ℓ_μ` (conjugate
/// `ℓ* + μu²/2`, [`Envelope`]): the smoothed problem's own certificate, which says when
/// `prox_newton`'s smoothing continuation lowers `μ` (docs/mathematics.md §2.13).
pub(crate) fn best_envelope_dual(
    norms: &[f64],
    y: &[f64],
    rho: &[f64],
    c: &[f64],
    loss: Envelope,
    penalty: &BlockPenalty,
) -> f64 {
    let t = best_scale(norms, y, rho, c, loss, penalty);
    scaled_dual_value(t, norms, y, rho, c, loss, penalty)
}

/// The multiple `t ∈ [0, top]` of [`best_dual`] ([`best_multiple`]), `top` keeping the `l1`
/// norm constraint.
fn best_scale(
    norms: &[f64],
    y: &[f64],
    rho: &[f64],
    c: &[f64],
    loss: Envelope,
    penalty: &BlockPenalty,
) -> f64 {
    best_multiple(penalty.top(norms), |t| {
        scaled_dual_value(t, norms, y, rho, c, loss, penalty)
    })
}

/// [`dual_value`] at `t ρ̃` (block norms `t · norms`), without forming the scaled point.
fn scaled_dual_value(
    t: f64,
    norms: &[f64],
    y: &[f64],
    rho: &[f64],
    c: &[f64],
    loss: Envelope,
    penalty: &BlockPenalty,
) -> f64 {
    // Fixed chunks summed in order: the value does not depend on the number of threads.
    let conj: f64 = y
        .par_chunks(CONJ_CHUNK)
        .zip(rho.par_chunks(CONJ_CHUNK))
        .zip(c.par_chunks(CONJ_CHUNK))
        .map(|((yc, rc), cc)| {
            yc.iter()
                .zip(rc)
                .zip(cc)
                .map(|((&yi, &ri), &ci)| ci * loss.conjugate(yi, -t * ri / ci))
                .sum::<f64>()
        })
        .collect::<Vec<f64>>()
        .iter()
        .sum();
    -conj - penalty.conjugate(t, norms)
}
