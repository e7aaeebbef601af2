//! The dual values every solver's certificate reads (docs/mathematics.md §1): the loss part of
//! the SVM-type duals, the ℓp penalty and its dual norm, and the forms `βᵀK_mβ` of a dual point.

use crate::kernels::KernelStack;
use crate::losses::Loss;

/// `½ (Σ_m s_m^q)^{2/q}` with `q = 2p/(p+1)` (`q = 2` for `p = ∞`).
pub fn lp_penalty(norms: &[f64], p: f64) -> f64 {
    let q = crate::solvers::penalty::lp_q(p);
    let s: f64 = norms.iter().map(|s| s.max(0.0).powf(q)).sum();
    0.5 * s.powf(2.0 / q)
}

/// `‖v‖_{p*}` with `p* = p/(p−1)` (`∞` for `p = 1`, `1` for `p = ∞`), for `v ≥ 0`.
pub fn dual_norm(v: &[f64], p: f64) -> f64 {
    if p == 1.0 {
        v.iter().fold(0.0f64, |a, &x| a.max(x.max(0.0)))
    } else if p.is_infinite() {
        v.iter().map(|x| x.max(0.0)).sum()
    } else {
        let ps = p / (p - 1.0);
        // Scale by the maximum so that large p* does not overflow.
        let mx = v.iter().fold(0.0f64, |a, &x| a.max(x));
        if mx <= 0.0 {
            return 0.0;
        }
        mx * v
            .iter()
            .map(|x| (x.max(0.0) / mx).powf(ps))
            .sum::<f64>()
            .powf(1.0 / ps)
    }
}

/// `D(β) = −Σ c_i ℓ*(y_i, −β_i/c_i) − ½ ‖(βᵀK_mβ)_m‖_{p*}` (docs/mathematics.md §1), `c` the
/// per-sample loss weights ([`costs`](crate::losses::costs)).
pub fn lp_dual(loss: Loss, c: &[f64], y: &[f64], beta: &[f64], quad: &[f64], p: f64) -> f64 {
    loss_dual(loss, c, y, beta) - 0.5 * dual_norm(quad, p)
}

/// The loss part `−Σ_i c_i ℓ*(y_i, −β_i/c_i)` of every SVM-type dual (docs/mathematics.md
/// §1.2).
pub(crate) fn loss_dual(loss: Loss, c: &[f64], y: &[f64], beta: &[f64]) -> f64 {
    let conj: f64 = y
        .iter()
        .zip(beta)
        .zip(c)
        .map(|((&yi, &bi), &ci)| ci * loss.conjugate(yi, -bi / ci))
        .sum();
    -conj
}

/// The natural dual point of the model `f` (without intercept) for the logistic loss
/// (docs/mathematics.md §1.3): the best intercept `b̂` from `b`, and
/// `β̂ = −C ℓ'(y, f + b̂)` centred exactly to `Σβ̂ = 0` inside the conjugate's domain
/// ([`Loss::centre_dual`]); `None` for the other losses.
///
/// Why not Newton's own `β`: it satisfies `−β/C ∈ dom ℓ*` only up to its rounding,
/// `~1e-16·C` in `u = −β/C`, which the conjugate's absolute tolerance stops absorbing at large
/// `C` (C ≥ 1e11, or a kernel ×1e12: every dual value `+∞` or above the primal, gap `∞`).
/// `β̂` is feasible at any scale and equals `β` at the optimum. The squared loss keeps `β`:
/// its domain is unbounded, and `β̂` would carry the rounding of the residuals times `C`
/// (C = 1e12 on a Gaussian kernel: gap 3e-3 at `β̂`, 1e-12 at `β`). The SMO losses' `β = Yα`
/// is in the box by construction.
pub(crate) fn natural_dual(
    loss: Loss,
    c: &[f64],
    y: &[f64],
    f: &[f64],
    b: f64,
) -> Option<(f64, Vec<f64>)> {
    if loss != Loss::Logistic {
        return None;
    }
    let b = loss.best_intercept(y, f, c, b);
    Some((b, loss.centre_dual(y, &loss.natural_dual(y, f, b, c), c)))
}

/// `quad[k] = βᵀK_kβ` for `k ∈ idx` and, given the natural dual point `hat` (logistic loss,
/// [`natural_dual`]), `hat_quad[k] = β̂ᵀK_kβ̂` from the same pass over those kernels (ℓp's
/// certificate and the mirror solvers').
pub(crate) fn read_forms(
    stack: &dyn KernelStack,
    beta: &[f64],
    hat: Option<&[f64]>,
    idx: &[usize],
    quad: &mut [f64],
    hat_quad: &mut [f64],
) {
    let mut out = vec![0.0; idx.len() * if hat.is_some() { 2 } else { 1 }];
    match hat {
        Some(hat) => {
            stack.quad_forms_batch_subset(&[beta, hat].concat(), idx, &mut out);
            for (&k, q) in idx.iter().zip(out.chunks_exact(2)) {
                quad[k] = q[0];
                hat_quad[k] = q[1];
            }
        }
        None => {
            stack.quad_forms_subset(beta, idx, &mut out);
            for (&k, &q) in idx.iter().zip(&out) {
                quad[k] = q;
            }
        }
    }
}
