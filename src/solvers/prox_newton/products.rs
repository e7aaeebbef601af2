//! The Newton model of a wide working set, minimised with products by its Hessian instead of
//! the formed matrix (docs/mathematics.md §2.13, "Hessian-free steps").
//!
//! Formed, the Hessian of a working set of `R_W` columns costs `R_W²` memory and, on sparse
//! rows, `Σ_i nnz_W(x_i)²` plus `R_W²` per chunk to reduce, and the model's epochs `R_W²`
//! each. A product `H v = [G_W, 1]ᵀ D [G_W, 1] v` (`D = diag(c ℓ_μ'')`) is one pass over the
//! rows' stored entries ([`Op::HessianProduct`]), `R_W + 1` numbers back. Above
//! [`products_from`] columns (1024 on sparse rows, 8192 on dense ones), the model
//!
//! ```text
//! q(δ, δ_b) = gᵀδ + g_b δ_b + ½ [δ; δ_b]ᵀ H [δ; δ_b] + Σ_{m∈W} pen(w_m + δ_m)
//! ```
//!
//! is minimised by accelerated proximal gradient (FISTA, Beck & Teboulle 2009, with the
//! adaptive restart of O'Donoghue & Candès 2015: docs/mathematics.md's sources), one product
//! per iteration:
//!
//! * the intercept is minimised out exactly: with `H = [[A, a], [aᵀ, β]]`,
//!   `δ_b(δ) = −(g_b + aᵀδ)/β`, leaving `δ ↦ q(δ, δ_b(δ))` whose Hessian is the Schur
//!   complement `S = A − a aᵀ/β` (the features centred with the weights `D`; uncentred
//!   non-negative features, counts or TF-IDF, make `A` nearly rank one plus a diagonal, and
//!   `S` well conditioned) and whose gradient is `g + Aδ − a (g_b + aᵀδ)/β`;
//! * the metric is block-scalar, `α L_m I` on block `m`, `L_m` the largest diagonal entry of
//!   `S` on the block (a diagonal's bound on `S_mm` for nearly orthogonal columns), so that
//!   each block's step is the closed-form block soft-threshold; `α ≥ 1` doubles until
//!   `dᵀ S d ≤ α Σ_m L_m ‖d_m‖²` holds for the step `d` (the majorisation FISTA needs,
//!   checked exactly, as `q` is quadratic: `S d` is the difference of two products).
//!
//! The certificate does not see how the direction was found: the step's line search and the
//! certificate read the rows as for a formed Hessian.

use super::certificate::Problem;
use super::rows::{Curvature, Op};
use super::working_set::WorkingSet;
use crate::error::Result;
use crate::linalg::{dot, norm};
use crate::losses::Envelope;
use crate::penalties::{prox_shrink, subgradient_distance};

/// The width from which a working set takes products ([`inner_products`]) on sparse rows or on
/// dense ones. A formed Hessian's reduction and model epochs cost `R_W²`, products a pass over
/// the rows each; but a first-order inner solver crawls on strongly coupled blocks (Gaussian
/// widths on the same features, dense), where the formed Hessian's exact block and Newton
/// steps are needed: dense rows keep it until it no longer fits (docs/performance.md,
/// "Hessian-free steps").
pub(super) fn products_from(sparse: bool) -> usize {
    if sparse {
        1024
    } else {
        8192
    }
}

/// The Hessian of a step's model.
pub(super) enum Hessian {
    /// Formed: column-major, order `R_W + 1` (intercept last), damped on a smoothed level.
    Formed(Vec<f64>),
    /// Given by products over the rows.
    Products(Products),
}

/// The Hessian `H + diag(damp)` of the model at the point `(z, b)` the rows hold, by products.
pub(super) struct Products {
    pub(super) env: Envelope,
    pub(super) b: f64,
    pub(super) cols: Vec<usize>,
    /// The smoothing's damping of the diagonal, columns then intercept (zeros without one).
    pub(super) damp: Vec<f64>,
}

impl Products {
    /// `(H + diag(damp)) [x; x_b]`, `R_W + 1` entries (one pass over the rows).
    fn apply(&self, p: &Problem<'_>, x: &[f64], xb: f64) -> Result<Vec<f64>> {
        let mut v = x.to_vec();
        v.push(xb);
        let mut out = p.reduce(&Op::HessianProduct {
            env: self.env,
            b: self.b,
            cols: self.cols.clone(),
            v: v.clone(),
        })?;
        out.iter_mut()
            .zip(&v)
            .zip(&self.damp)
            .for_each(|((o, vi), d)| *o += d * vi);
        Ok(out)
    }
}

/// The model with the intercept minimised out (module docs): `a`, `β` and the blocks'
/// metrics `L_m`.
struct Reduced<'w> {
    ws: &'w WorkingSet,
    /// `g` of the columns, then the intercept's.
    g: &'w [f64],
    /// `w` on the columns.
    w: &'w [f64],
    pw: (f64, f64),
    a: Vec<f64>,
    beta: f64,
    lips: Vec<f64>,
}

impl Reduced<'_> {
    /// `u_b/β`'s coefficient: 0 when the intercept has no curvature (it then stays).
    fn inv_beta(&self) -> f64 {
        if self.beta > 0.0 {
            1.0 / self.beta
        } else {
            0.0
        }
    }

    /// The gradient at `δ` from `u = H [δ; 0]`: `g + u_W − a (g_b + u_b)/β`.
    fn gradient(&self, u: &[f64]) -> Vec<f64> {
        let k = u.len() - 1;
        let s = (self.g[k] + u[k]) * self.inv_beta();
        (0..k).map(|j| self.g[j] + u[j] - self.a[j] * s).collect()
    }

    /// `S d` from `u = H [d; 0]`: `u_W − a u_b/β`.
    fn schur(&self, u: &[f64]) -> Vec<f64> {
        let k = u.len() - 1;
        let s = u[k] * self.inv_beta();
        (0..k).map(|j| u[j] - self.a[j] * s).collect()
    }

    /// The proximal step from `y` along the gradient `gy`, metric `α L_m` on block `m`.
    fn prox(&self, y: &[f64], gy: &[f64], alpha: f64) -> Vec<f64> {
        let mut out = vec![0.0; y.len()];
        for (r, &l) in self.ws.blocks().zip(&self.lips) {
            let step = 1.0 / (alpha * l);
            let p: Vec<f64> = r.clone().map(|j| self.w[j] + y[j] - step * gy[j]).collect();
            let f = prox_shrink(self.pw, norm(&p), step);
            for (j, pj) in r.zip(p) {
                out[j] = f * pj - self.w[j];
            }
        }
        out
    }

    /// `Σ_m L_m ‖d_m‖²`.
    fn metric(&self, d: &[f64]) -> f64 {
        self.ws
            .blocks()
            .zip(&self.lips)
            .map(|(r, l)| l * d[r].iter().map(|v| v * v).sum::<f64>())
            .sum()
    }

    /// The largest violation of the model's optimality conditions at `δ` (gradient `gd`).
    fn worst(&self, x: &[f64], gd: &[f64]) -> f64 {
        self.ws
            .blocks()
            .map(|r| {
                let wr: Vec<f64> = r.clone().map(|j| self.w[j] + x[j]).collect();
                subgradient_distance(self.pw, &gd[r], &wr)
            })
            .fold(0.0, f64::max)
    }
}

/// The set's `a = [G_W]ᵀ D 1`, `β` and block metrics `L_m` (two passes over the rows).
fn reduced<'w>(
    p: &Problem<'_>,
    hp: &Products,
    ws: &'w WorkingSet,
    g: &'w [f64],
    w: &'w [f64],
    pw: (f64, f64),
) -> Result<Reduced<'w>> {
    let k = hp.cols.len();
    let mut a = hp.apply(p, &vec![0.0; k], 1.0)?;
    let beta = a.pop().unwrap_or(0.0);
    let weight = Curvature::Second {
        env: hp.env,
        b: hp.b,
    };
    let squares = p.reduce(&Op::Squares { weight })?;
    let inv = if beta > 0.0 { 1.0 / beta } else { 0.0 };
    let diag: Vec<f64> = (0..k)
        .map(|j| squares[hp.cols[j]] + hp.damp[j] - a[j] * a[j] * inv)
        .collect();
    let top = diag.iter().fold(0.0f64, |m, &v| m.max(v));
    let lips = ws
        .blocks()
        .map(|r| {
            diag[r]
                .iter()
                .fold(1e-12 * top, |m, &v| m.max(v))
                .max(1e-300)
        })
        .collect();
    Ok(Reduced {
        ws,
        g,
        w,
        pw,
        a,
        beta,
        lips,
    })
}

/// Minimises the model (module docs) by accelerated proximal gradient with products until
/// every block's violation is at most `tol_in`; `g`: the columns' gradient then the
/// intercept's, `w` the point on the columns. Returns `(δ, δ_b)`.
#[allow(clippy::too_many_arguments)]
pub(super) fn inner_products(
    p: &Problem<'_>,
    hp: &Products,
    ws: &WorkingSet,
    g: &[f64],
    w: &[f64],
    pw: (f64, f64),
    tol_in: f64,
) -> Result<Vec<f64>> {
    const MAX_ITER: usize = 5000;
    let md = reduced(p, hp, ws, g, w, pw)?;
    let k = hp.cols.len();
    // `x`, `y` and their products `H [x; 0]`, `H [y; 0]` (products are linear: `y`'s is
    // combined from `x`'s, one pass per iteration).
    let (mut x, mut ux) = (vec![0.0; k], vec![0.0; k + 1]);
    let (mut y, mut uy) = (x.clone(), ux.clone());
    let (mut t, mut alpha) = (1.0f64, 1.0f64);
    for _ in 0..MAX_ITER {
        let gy = md.gradient(&uy);
        let (xn, un) = loop {
            let xn = md.prox(&y, &gy, alpha);
            let un = hp.apply(p, &xn, 0.0)?;
            let d: Vec<f64> = xn.iter().zip(&y).map(|(a, b)| a - b).collect();
            let ud: Vec<f64> = un.iter().zip(&uy).map(|(a, b)| a - b).collect();
            let (curv, bound) = (dot(&d, &md.schur(&ud)), md.metric(&d));
            if curv <= alpha * bound * (1.0 + 1e-10) || bound == 0.0 {
                break (xn, un);
            }
            alpha = (2.0 * alpha).max(curv / bound);
        };
        let done = md.worst(&xn, &md.gradient(&un)) <= tol_in;
        // Restart when the momentum points uphill (`(y − x⁺)ᵀ(x⁺ − x) > 0`).
        let uphill: f64 = (0..k).map(|j| (y[j] - xn[j]) * (xn[j] - x[j])).sum();
        let (tn, mom) = if uphill > 0.0 {
            (1.0, 0.0)
        } else {
            let tn = 0.5 * (1.0 + (1.0 + 4.0 * t * t).sqrt());
            (tn, (t - 1.0) / tn)
        };
        y = xn.iter().zip(&x).map(|(a, b)| a + mom * (a - b)).collect();
        uy = un.iter().zip(&ux).map(|(a, b)| a + mom * (a - b)).collect();
        (x, ux, t) = (xn, un, tn);
        if done {
            break;
        }
    }
    let db = -(g[k] + ux[k]) * md.inv_beta();
    x.push(db);
    Ok(x)
}
