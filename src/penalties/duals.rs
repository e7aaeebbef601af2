//! The dual values that several solvers' certificates read (docs/mathematics.md §1): the loss
//! part of every SVM-type dual (`loss_dual`), ℓp's dual ([`lp_dual`]), the natural dual point
//! of the logistic loss (`natural_dual`), the forms `βᵀK_mβ` of a dual point (`read_forms`),
//! and the best multiple of a dual point for every [`BlockPenalty`] (`best_dual`,
//! `best_envelope_dual`; [`dual_value`] at the point itself).
//!
//! Why here and not in `solvers/`: a dual value is the loss's conjugate plus the penalty's
//! conjugate at a dual point, so it reads the losses, the kernels' forms and the penalties, and
//! no solver's state. Here, below every solver that certifies with it (ℓp, mirror, SVRG,
//! SpicyMKL, the wrapper, proximal Newton), no solver imports another's folder for it and
//! the penalties never import a solver. SpicyMKL's projection of a candidate onto the dual's
//! domain, which also runs the witness check, stays in `solvers/spicy/dual.rs`.

use rayon::prelude::*;

use crate::kernels::KernelStack;
use crate::losses::{Envelope, Loss};
use crate::penalties::block::BlockPenalty;
use crate::penalties::lp::dual_norm;
use crate::penalties::sparse::SparsePenalty;

/// Points per parallel chunk of a dual value.
const CONJ_CHUNK: usize = 4096;

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
/// `C` (every dual value `+∞` or above the primal). `β̂` is feasible at any scale and equals
/// `β` at the optimum. The squared loss keeps `β`: its domain is unbounded, and `β̂` would
/// carry the rounding of the residuals times `C` (docs/mathematics.md §1.3 has the figures).
/// The SMO losses' `β = Yα` is in the box by construction.
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

/// The multiple `t ∈ [0, top]` of a feasible point with the largest dual value `d(t)`, by
/// golden-section search (`d` is concave: `ℓ*` and the penalty's conjugate are convex in `t`),
/// or `top` when that is at least as good. Every such `tρ̃` is feasible: the domain is an
/// interval containing 0 and the sum stays 0; `top` keeps the `l1` norm constraint.
///
/// Why: the elastic-net dual charges `Σ max(0, ‖ρ̃‖_{K_m} − r_1)²/(2r_2)`, and at extreme
/// kernel scales every candidate's norms were so large that its value fell below `D(0) = 0`
/// (docs/mathematics.md §1.4); shrinking the point trades loss for penalty, and `d'(0) > 0`
/// whenever the loss part can grow. Each evaluation costs O(n + M), no kernel read.
///
/// When `d(top) ≥ d(top(1 − 10⁻⁶))`, concavity makes `d` non-decreasing on `[0, top]` and
/// `top` is returned after two evaluations (the usual case near an optimum). Otherwise the
/// search narrows `[0, top]` to `10⁻⁹ top` (44 evaluations): near its maximum `d` is flat to
/// second order, so the value is then exact to rounding.
pub(crate) fn best_multiple(top: f64, d: impl Fn(f64) -> f64) -> f64 {
    best_multiple_by(top, 1, |ts| {
        Ok::<Vec<f64>, std::convert::Infallible>(ts.iter().map(|&t| d(t)).collect())
    })
    .unwrap_or_else(|e| match e {})
}

/// [`best_multiple`] with `d` taking several multiples at once (one pass over the rows for
/// all, wherever they are): the first two are asked together; then golden-section search at
/// `k = 1`, and with `k > 1` points per pass (a pass costs a round trip on a cluster) the
/// bracket around the best of `k` equally spaced points, `(k + 1)/2`-fold smaller per pass
/// (`d` is concave), to the same `10⁻⁹ top`, the best point seen returned.
fn best_multiple_by<E>(
    top: f64,
    k: usize,
    mut dd: impl FnMut(&[f64]) -> std::result::Result<Vec<f64>, E>,
) -> std::result::Result<f64, E> {
    const INV_PHI: f64 = 0.618_033_988_749_894_9;
    let first = dd(&[top, top * (1.0 - 1e-6)])?;
    let at_top = first[0];
    if at_top >= first[1] {
        return Ok(top);
    }
    if k > 1 {
        let (mut lo, mut hi, mut best) = (0.0, top, (at_top, top));
        while hi - lo > 1e-9 * top {
            let pts: Vec<f64> = (1..=k)
                .map(|j| lo + (hi - lo) * (j as f64 / (k + 1) as f64))
                .collect();
            let vals = dd(&pts)?;
            let j = (0..k).fold(0, |a, j| if vals[j] > vals[a] { j } else { a });
            if vals[j] > best.0 {
                best = (vals[j], pts[j]);
            }
            (lo, hi) = (
                if j == 0 { lo } else { pts[j - 1] },
                if j + 1 == k { hi } else { pts[j + 1] },
            );
        }
        return Ok(best.1);
    }
    let mut d = |t: f64| Ok(dd(&[t])?[0]);
    let (mut lo, mut hi) = (0.0, top);
    let mut x1 = hi - INV_PHI * (hi - lo);
    let mut x2 = lo + INV_PHI * (hi - lo);
    let (mut d1, mut d2) = (d(x1)?, d(x2)?);
    while hi - lo > 1e-9 * top {
        if d1 < d2 {
            lo = x1;
            (x1, d1) = (x2, d2);
            x2 = lo + INV_PHI * (hi - lo);
            d2 = d(x2)?;
        } else {
            hi = x2;
            (x2, d2) = (x1, d1);
            x1 = hi - INV_PHI * (hi - lo);
            d1 = d(x1)?;
        }
    }
    let t = 0.5 * (lo + hi);
    Ok(if d(t)? > at_top { t } else { top })
}

/// `D(ρ̃) = −Σ_i c_i ℓ*(y_i, −ρ̃_i/c_i)` (`c`: the per-sample loss weights), minus
/// `Σ_m max(0, ‖ρ̃‖_{K_m} − r_1)²/(2 r_2)` for the elastic net; `−∞` if `ρ̃` violates the `l1`
/// norm constraint (beyond rounding).
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
/// net and ℓp ([`BlockPenalty::top`]): the certificate of SpicyMKL's projection without its
/// pass over the kernels, for a solver that has the forms already (the SVM wrapper, whose `β`
/// is feasible by construction; proximal Newton).
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
pub(crate) fn best_scale(
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

/// [`best_envelope_dual`] given the loss part `conj(t) = Σ_i c_i ℓ_μ*(y_i, −t ρ̃_i/c_i)` at
/// several multiples at once (a pass over the rows, wherever they are: proximal Newton's
/// chunks on a cluster), `k` per pass after the first two ([`best_multiple_by`]).
pub(crate) fn best_envelope_dual_by<E>(
    norms: &[f64],
    penalty: &BlockPenalty,
    k: usize,
    mut conj: impl FnMut(&[f64]) -> std::result::Result<Vec<f64>, E>,
) -> std::result::Result<f64, E> {
    // The values already computed: the search's last point is usually one of them.
    let mut seen: Vec<(f64, f64)> = Vec::new();
    let mut values = |ts: &[f64]| -> std::result::Result<Vec<f64>, E> {
        if let [t] = ts {
            if let Some(&(_, v)) = seen.iter().find(|(s, _)| s.to_bits() == t.to_bits()) {
                return Ok(vec![v]);
            }
        }
        let cs = conj(ts)?;
        let out: Vec<f64> = ts
            .iter()
            .zip(cs)
            .map(|(&t, c)| -c - penalty.conjugate(t, norms))
            .collect();
        seen.extend(ts.iter().copied().zip(out.iter().copied()));
        Ok(out)
    };
    let t = best_multiple_by(penalty.top(norms), k, &mut values)?;
    Ok(values(&[t])?[0])
}

/// A feasible dual point with its forms `q_m = ρᵀK_mρ` and its dual value.
#[derive(Debug, Clone)]
pub(crate) struct DualPoint {
    pub(crate) rho: Vec<f64>,
    pub(crate) q: Vec<f64>,
    pub(crate) value: f64,
}

/// The best dual point on the segment between the feasible points `a` and `b`, each at its
/// best multiple: `t((1 − λ)a + λb)` with `λ ∈ [0, 1]` and `t` those of the largest value,
/// from the forms of `a` and `b` and those of their sum `qs` (the cross forms
/// `aᵀK_mb = (qs − qa − qb)/2`, so one pass over the kernels gives `qb` and `qs` together).
///
/// Why: every point of the segment is feasible (the conjugate's domain is convex and the
/// sums stay 0) and the dual is concave in the point, so its best value on the segment is at
/// least both ends'. Near an optimum a solver's dual points scatter around the solution's
/// (a dual point inherits the first-order error of its weights, a primal value the second
/// order), and their combination cancels much of it (docs/mathematics.md §2.11, "Dual
/// aggregation"). Each evaluation costs O(n + M), no kernel read.
pub(crate) fn best_on_segment(
    a: &DualPoint,
    (b, qb): (&[f64], &[f64]),
    qs: &[f64],
    y: &[f64],
    c: &[f64],
    loss: Loss,
    penalty: BlockPenalty,
) -> DualPoint {
    let cross: Vec<f64> = (0..qb.len())
        .map(|m| 0.5 * (qs[m] - a.q[m] - qb[m]))
        .collect();
    let forms = |l: f64| -> Vec<f64> {
        (0..qb.len())
            .map(|m| {
                let v =
                    (1.0 - l) * (1.0 - l) * a.q[m] + 2.0 * l * (1.0 - l) * cross[m] + l * l * qb[m];
                v.max(0.0)
            })
            .collect()
    };
    let point = |l: f64| -> Vec<f64> {
        a.rho
            .iter()
            .zip(b)
            .map(|(&x, &z)| (1.0 - l) * x + l * z)
            .collect()
    };
    let value = |l: f64| -> f64 {
        let roots: Vec<f64> = forms(l).iter().map(|v| v.sqrt()).collect();
        best_envelope_dual(&roots, y, &point(l), c, loss.into(), &penalty)
    };
    // The segment from `a`'s end (`best_multiple` searches `[0, top]` from its top), then
    // `b`'s end, which a search of a function that need not be concave can miss.
    let inner = 1.0 - best_multiple(1.0, |u| value(1.0 - u));
    let l = if value(1.0) > value(inner) {
        1.0
    } else {
        inner
    };
    let (q, rho) = (forms(l), point(l));
    let roots: Vec<f64> = q.iter().map(|v| v.sqrt()).collect();
    let t = best_scale(&roots, y, &rho, c, loss.into(), &penalty);
    let value = scaled_dual_value(t, &roots, y, &rho, c, loss.into(), &penalty);
    DualPoint {
        rho: rho.iter().map(|v| t * v).collect(),
        q: q.iter().map(|v| t * t * v).collect(),
        value,
    }
}

/// [`best_dual`] of several problems that share one penalty (the shared multiclass fit,
/// docs/mathematics.md §3.8): the loss parts of the points `rhos[c]` (targets `ys[c]`, the
/// same per-sample weights `c`) summed, the penalty's conjugate at the block norms
/// `norms[m] = sqrt(Σ_c ρ_cᵀK_mρ_c)`, at the best common multiple `t ∈ [0, top]`.
pub(crate) fn best_shared_dual(
    norms: &[f64],
    ys: &[Vec<f64>],
    rhos: &[Vec<f64>],
    c: &[f64],
    loss: Loss,
    penalty: &BlockPenalty,
) -> f64 {
    let value = |t: f64| {
        let conj: f64 = ys
            .par_iter()
            .zip(rhos)
            .map(|(y, rho)| {
                let scaled: Vec<f64> = rho.iter().map(|r| t * r).collect();
                loss_dual(loss, c, y, &scaled)
            })
            .sum();
        conj - penalty.conjugate(t, norms)
    };
    value(best_multiple(penalty.top(norms), value))
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
