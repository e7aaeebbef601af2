//! The Newton model of the kernel weights (step 2 of the module docs of `wrapper`): the
//! penalty `π`, the gradient and Hessian of `J`, and the trust-region step.

use faer::Mat;

use super::{qp, Combined, Point, WrapperConfig};
use crate::error::Result;
use crate::kernels::KernelStack;
use crate::linalg::{dot, Cholesky};
use crate::losses::Loss;
use crate::penalties::WeightPenalty;
use crate::solvers::single::SingleKernel;

/// The trust region's first ratio `R`.
pub(crate) const START_RADIUS: f64 = 4.0;

/// The smallest ratio `R`: a step refused there tightens the SVM's accuracy. Not larger: with
/// many bounded support vectors near the margin (hinge, noisy labels) `J` is piecewise
/// quadratic in pieces far narrower than 5 % of the weights, and the model of the free support
/// vectors holds on its piece only. At 1.05 the fits of pima (SimpleMKL's bank, C = 1) and of
/// `a_narrow_model_still_converges` stalled at gaps of 6e-3 and 1.2e-2 with `J` within 1e-6
/// of its optimum, steps refused for the model's error, not the SVM's.
pub(crate) const MIN_RADIUS: f64 = 1.001;

/// The trust region's verdict on a trial step from the model of value `prev_j` that
/// predicted the decrease `pred`, by `J` at the trial weights: whether `J` rose (the step is
/// refused). An accepted step resizes `radius` by the decrease it achieved against the
/// predicted one (module docs of `wrapper`, step 2); the caller shrinks it on a refusal.
pub(crate) fn step_rose(radius: &mut f64, prev_j: f64, pred: f64, j: f64) -> bool {
    let rose = j.is_nan() || j > prev_j + 1e-12 * prev_j.abs();
    if !rose {
        let ratio = (prev_j - j) / pred.max(f64::MIN_POSITIVE);
        if ratio > 0.5 {
            *radius = (2.0 * *radius).min(1e6);
        } else if ratio < 0.1 {
            *radius = radius.sqrt().max(MIN_RADIUS);
        }
    }
    rose
}

/// The most kernels a Newton model takes (its QP costs `O(s³)` per change of its active set):
/// beyond, those with the largest `|∂J/∂w_m| · max(w_m, mean w)` (the decrease a first-order
/// step on them could give); the others keep their weights for that step.
pub(crate) const MAX_MODEL: usize = 200;

/// The most kernels a Newton model of a smooth loss takes: its Hessian costs one product of
/// `K_w` with that many columns per conjugate-gradient iteration.
pub(crate) const MAX_MODEL_SMOOTH: usize = 40;

/// The relative accuracy of the smooth losses' Hessian systems: the trust region absorbs a
/// model this inexact.
const HESSIAN_RTOL: f64 = 1e-2;

/// The second-order model of `J` at an iterate, on the kernels `vars`.
pub(crate) struct NewtonModel {
    pub(crate) vars: Vec<usize>,
    pub(crate) grad: Vec<f64>,
    pub(crate) hess: Mat<f64>,
    /// `J` at the iterate and its weights.
    pub(crate) j: f64,
    pub(crate) w: Vec<f64>,
}

impl NewtonModel {
    /// The trust-region step from the model with ratio `r`: the new weights and the predicted
    /// decrease of `J`.
    pub(crate) fn step(&self, r: f64, pen: &WeightPenalty) -> (Vec<f64>, f64) {
        let w = &self.w;
        let top = w.iter().fold(0.0f64, |a, &v| a.max(v));
        let (sum, count) = w
            .iter()
            .filter(|&&v| v > 0.0)
            .fold((0.0, 0usize), |(s, c), &v| (s + v, c + 1));
        let mean = if count > 0 { sum / count as f64 } else { 1.0 };
        let cap = pen.cap();
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        for &k in &self.vars {
            let wk = w[k];
            let (l, h) = if wk > 0.0 {
                // A weight may drop to zero in one step unless a refused step shrank the
                // region below its start (then by the factor `r` at most, as it grows).
                let l = if wk < 1e-3 * top || r >= START_RADIUS {
                    -wk
                } else {
                    wk * (1.0 / r - 1.0)
                };
                (l, wk * (r - 1.0))
            } else {
                (0.0, 0.25 * mean * (r - 1.0))
            };
            // Halfway to the elastic net's supremum at most.
            lo.push(l);
            hi.push(h.min(0.5 * (cap - wk)));
        }
        let d = qp::box_qp(&self.hess, &self.grad, &lo, &hi);
        let s = d.len();
        let quad: f64 = (0..s)
            .map(|a| d[a] * (0..s).map(|b| self.hess[(a, b)] * d[b]).sum::<f64>())
            .sum();
        let pred = -(self.grad.iter().zip(&d).map(|(g, x)| g * x).sum::<f64>() + 0.5 * quad);
        let mut next = w.clone();
        for (&k, &dk) in self.vars.iter().zip(&d) {
            next[k] = (w[k] + dk).max(0.0);
        }
        let top = next.iter().fold(0.0f64, |a, &v| a.max(v));
        for v in next.iter_mut() {
            if *v < 1e-9 * top {
                *v = 0.0;
            }
        }
        (next, pred)
    }
}

/// The free support vectors of an SVM solution `β`: `0 < |β_i| < upper_i` (the dual's box,
/// per sample; `∞` for the squared hinge).
pub(crate) fn free_points(beta: &[f64], upper: &[f64]) -> Vec<usize> {
    (0..beta.len())
        .filter(|&i| {
            let floor = 1e-12 * if upper[i].is_finite() { upper[i] } else { 1.0 };
            beta[i].abs() > floor && beta[i].abs() < upper[i] * (1.0 - 1e-12)
        })
        .collect()
}

/// The box of SMO's dual per sample: `c` (the hinge), unbounded for the squared hinge.
fn dual_box(loss: Loss, c: &[f64]) -> Vec<f64> {
    match loss {
        Loss::SquaredHinge => vec![f64::INFINITY; c.len()],
        _ => c.to_vec(),
    }
}

/// How many of an SVM solution's coefficients are free support vectors ([`free_points`]):
/// those that move with the weights, where the bounded ones mostly stay.
pub(crate) fn free_count(beta: &[f64], c: &[f64], loss: Loss) -> usize {
    free_points(beta, &dual_box(loss, c)).len()
}

/// `H_S = Gᵀ Z G` (module docs) for the kernels `vars`, `prod` holding `K_kβ` for the kernels
/// `0, 1, …` of its numbering, one after another (`n` values each, of which the free points'
/// are read), and `a` the block `K_w[F, F]` of the free points `free`.
pub(crate) fn svm_hessian(
    mut a: Vec<f64>,
    n: usize,
    free: &[usize],
    ridge: &[f64],
    prod: &[f64],
    vars: &[usize],
) -> Result<Mat<f64>> {
    let (nf, s) = (free.len(), vars.len());
    if nf == 0 {
        return Ok(Mat::zeros(s, s));
    }
    for (r, &i) in free.iter().enumerate() {
        a[r * nf + r] += ridge[i];
    }
    let chol = Cholesky::new(&a, nf)?;
    let g = |col: usize, r: usize| prod[vars[col] * n + free[r]];
    let mut x = Mat::from_fn(nf, s + 1, |r, col| if col < s { g(col, r) } else { 1.0 });
    chol.solve_in_place(&mut x);
    let ones: f64 = (0..nf).map(|r| x[(r, s)]).sum();
    let sums: Vec<f64> = (0..s).map(|c| (0..nf).map(|r| x[(r, c)]).sum()).collect();
    let mut h = Mat::zeros(s, s);
    for a in 0..s {
        for b in 0..=a {
            let gx: f64 = (0..nf).map(|r| g(a, r) * x[(r, b)]).sum();
            let v = gx - sums[a] * sums[b] / ones;
            h[(a, b)] = v;
            h[(b, a)] = v;
        }
    }
    Ok(h)
}

/// The kernels of the next Newton model: those with a weight or a negative gradient, at most
/// `cap` of them, by the decrease a first-order step on them could give
/// (`|∂J/∂w_m| · max(w_m, mean w)`).
pub(crate) fn model_kernels(w: &[f64], grad: &[f64], cap: usize) -> Vec<usize> {
    let mut vars = movable(w, grad);
    if vars.len() > cap {
        let mean = w.iter().sum::<f64>() / w.iter().filter(|&&v| v > 0.0).count().max(1) as f64;
        let score = |kk: usize| grad[kk].abs() * w[kk].max(mean);
        vars.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
        vars.truncate(cap);
        vars.sort_unstable();
    }
    vars
}

/// `∂²S/∂w_a∂w_b = g_aᵀ Z g_b` (module docs) for the model's kernels, `prod` holding their
/// `g = K_kβ` one after another: on the free support vectors by a Cholesky (SMO), or on every
/// point with `A = K_w + (CW)⁻¹` by the systems of Newton's own kernel (block conjugate
/// gradients, or one factorisation; the smooth losses).
pub(crate) fn s_hessian(
    solver: &SingleKernel,
    stack: &dyn KernelStack,
    kw: &Combined,
    point: &Point,
    prod: &[f64],
    c: &[f64],
    cfg: &WrapperConfig,
) -> Result<Mat<f64>> {
    let n = point.f.len();
    let s = prod.len() / n.max(1);
    let fb: Vec<f64> = point.f.iter().map(|v| v + point.b).collect();
    let newton = (!solver.is_sparse())
        .then(|| solver.system_diagonal(kw.op(), &fb))
        .flatten();
    if let Some(d) = newton {
        let x = solver.newton_systems(kw.op(), &d, prod, HESSIAN_RTOL)?;
        let col = |a: usize| &prod[a * n..(a + 1) * n];
        let xc = |a: usize| &x[a * n..(a + 1) * n];
        let mut h = Mat::zeros(s, s);
        for a in 0..s {
            for b in 0..=a {
                let v = 0.5 * (dot(col(a), xc(b)) + dot(col(b), xc(a)));
                h[(a, b)] = v;
                h[(b, a)] = v;
            }
        }
        return Ok(h);
    }
    let mean_diag = kw.trace(stack) / n as f64;
    let ridge: Vec<f64> = match cfg.loss {
        Loss::SquaredHinge => c.iter().map(|ci| 1.0 / ci + 1e-10 * mean_diag).collect(),
        _ => vec![1e-10 * mean_diag; n],
    };
    let free = free_points(&point.beta, &dual_box(cfg.loss, c));
    let local: Vec<usize> = (0..s).collect();
    svm_hessian(kw.block(stack, &free), n, &free, &ridge, prod, &local)
}

/// `∂J/∂w_m = −½ q_m + π'(w_m)` of every kernel, at weights `w` with forms `q`.
pub(crate) fn gradient(w: &[f64], q: &[f64], pen: &WeightPenalty) -> Vec<f64> {
    w.iter()
        .zip(q)
        .map(|(&wk, &qk)| -0.5 * qk + pen.d1(wk))
        .collect()
}

/// The kernels a Newton model may move: those with a weight or a negative gradient.
pub(crate) fn movable(w: &[f64], grad: &[f64]) -> Vec<usize> {
    (0..w.len())
        .filter(|&k| w[k] > 0.0 || grad[k] < 0.0)
        .collect()
}
