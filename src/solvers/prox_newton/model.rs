//! The Newton model of a step and its minimisers (docs/mathematics.md §2.13): for the sparse
//! penalties by block coordinate descent with exact block steps ([`inner`]), for ℓp and the
//! smoothed `group` by one Newton system ([`lp_direction`], [`group_direction`]).

use super::working_set::WorkingSet;
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::linalg::{clear_upper_simd_state, dot, norm, Cholesky};
use crate::penalties::{
    block_value, lp_gradient_scales, lp_penalty, lp_q, subgradient_distance, GroupPenalty,
};

/// The exact minimiser of one block of the Newton model, `½ vᵀH v + cᵀv + r_1 ‖v‖ + r_2/2 ‖v‖²`
/// over `v` (docs/mathematics.md §2.13): with `H = Q Λ Qᵀ` and `ĉ = Qᵀc`, `v = 0` when
/// `‖c‖ ≤ r_1`, else `v = −Q (Λ + r_2 + μ)⁻¹ ĉ` with `μ = r_1/‖v‖` the root of
/// `Σ_i ĉ_i² μ²/(λ_i + r_2 + μ)² = r_1²` (increasing in `μ`). Exact block steps make block
/// coordinate descent indifferent to correlated features within a kernel, where a gradient
/// step of length `1/λ_max` crawls.
struct BlockSolver {
    k: usize,
    /// Eigenvalues, floored at `10⁻¹⁰ max(λ_max, 1)` (a block flat in some direction, e.g.
    /// the squared hinge's inactive points, still has a bounded step).
    lam: Vec<f64>,
    /// Eigenvectors, column-major `k × k`.
    q: Vec<f64>,
}

impl BlockSolver {
    fn new(a: &[f64], k: usize) -> Self {
        let m = faer::Mat::from_fn(k, k, |i, j| a[i + j * k]);
        let e = m
            .self_adjoint_eigen(faer::Side::Lower)
            .expect("eigendecomposition of a symmetric block");
        clear_upper_simd_state();
        let raw: Vec<f64> = (0..k).map(|i| e.S().column_vector()[i]).collect();
        let floor = 1e-10 * raw.iter().fold(1.0f64, |a, &v| a.max(v));
        let lam = raw.iter().map(|&v| v.max(floor)).collect();
        let q = (0..k * k).map(|i| e.U()[(i % k, i / k)]).collect();
        BlockSolver { k, lam, q }
    }

    fn minimise(&self, c: &[f64], (r1, r2): (f64, f64)) -> Vec<f64> {
        let k = self.k;
        if norm(c) <= r1 {
            return vec![0.0; k];
        }
        let ch: Vec<f64> = (0..k)
            .map(|i| dot(&self.q[i * k..(i + 1) * k], c))
            .collect();
        let mu = if r1 == 0.0 {
            0.0
        } else {
            let h = |mu: f64| -> f64 {
                ch.iter()
                    .zip(&self.lam)
                    .map(|(c, l)| (c * mu / (l + r2 + mu)).powi(2))
                    .sum()
            };
            let rho = r1 / norm(&ch);
            let top = self.lam.iter().fold(0.0f64, |a, &v| a.max(v)) + r2;
            let (mut lo, mut hi) = (0.0, (top * rho / (1.0 - rho).max(1e-300)).max(1e-300));
            while h(hi) < r1 * r1 && hi < f64::MAX / 4.0 {
                hi *= 2.0;
            }
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if mid <= lo || mid >= hi {
                    break;
                }
                if h(mid) < r1 * r1 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        };
        let coef: Vec<f64> = ch
            .iter()
            .zip(&self.lam)
            .map(|(c, l)| -c / (l + r2 + mu))
            .collect();
        let mut v = vec![0.0; k];
        for (i, &a) in coef.iter().enumerate() {
            let col = &self.q[i * k..(i + 1) * k];
            v.iter_mut().zip(col).for_each(|(o, x)| *o += a * x);
        }
        v
    }
}

/// `Hx` for the symmetric `H` (column-major, order `x.len()`).
fn sym_matvec(hess: &[f64], x: &[f64]) -> Vec<f64> {
    let k = x.len();
    let mut out = vec![0.0; k];
    for (j, &xj) in x.iter().enumerate() {
        if xj != 0.0 {
            let col = &hess[j * k..(j + 1) * k];
            out.iter_mut().zip(col).for_each(|(o, a)| *o += xj * a);
        }
    }
    out
}

/// Anderson extrapolation of the iterates `xs` (oldest first): the affine combination
/// `Σ c_i x_{i+1}`, `Σ c_i = 1`, whose combination of the differences `x_{i+1} − x_i` has the
/// least norm ([Anderson 1965], as skglm's working-set solvers use it). `None` when the
/// differences are degenerate.
fn anderson(xs: &[Vec<f64>]) -> Option<Vec<f64>> {
    let kk = xs.len() - 1;
    let u: Vec<Vec<f64>> = (0..kk)
        .map(|i| xs[i + 1].iter().zip(&xs[i]).map(|(a, b)| a - b).collect())
        .collect();
    let mut c: Vec<Vec<f64>> = (0..kk)
        .map(|i| (0..kk).map(|j| dot(&u[i], &u[j])).collect())
        .collect();
    let trace: f64 = (0..kk).map(|i| c[i][i]).sum();
    if !(trace > 0.0 && trace.is_finite()) {
        return None;
    }
    for (i, row) in c.iter_mut().enumerate() {
        row[i] += 1e-10 * trace;
    }
    // Solve `C z = 1` by Gaussian elimination with partial pivoting (order ≤ 5).
    let mut z = vec![1.0; kk];
    for col in 0..kk {
        let piv = (col..kk).max_by(|&a, &b| c[a][col].abs().total_cmp(&c[b][col].abs()))?;
        c.swap(col, piv);
        z.swap(col, piv);
        if c[col][col] == 0.0 {
            return None;
        }
        let pivot_row = c[col].clone();
        for row in col + 1..kk {
            let f = c[row][col] / pivot_row[col];
            c[row]
                .iter_mut()
                .zip(&pivot_row)
                .skip(col)
                .for_each(|(a, p)| *a -= f * p);
            z[row] -= f * z[col];
        }
    }
    for col in (0..kk).rev() {
        let s: f64 = (col + 1..kk).map(|j| c[col][j] * z[j]).sum();
        z[col] = (z[col] - s) / c[col][col];
    }
    let total: f64 = z.iter().sum();
    if !(total.abs() > 0.0 && total.is_finite()) {
        return None;
    }
    let mut out = vec![0.0; xs[0].len()];
    for (i, zi) in z.iter().enumerate() {
        let ci = zi / total;
        out.iter_mut()
            .zip(&xs[i + 1])
            .for_each(|(o, x)| *o += ci * x);
    }
    Some(out)
}

/// Minimises the model `gᵀδ + ½ δᵀHδ + Σ_{m∈W} pen(w_m + δ_m)` (the last coordinate, the
/// intercept, unpenalised) by cyclic exact block minimisation ([`BlockSolver`]) until every
/// block's violation is at most `tol_in`. Two accelerations, each kept only when it lowers the
/// model: an Anderson extrapolation of the last epochs every few epochs (blocks coupled
/// through `H`, e.g. Gaussian kernels of several widths on one feature, otherwise make cyclic
/// descent linear and slow), and every [`NEWTON_EVERY`] epochs Newton steps on the active
/// blocks ([`NewtonModel::active_newton`]), for a nearly singular `H`. Returns `δ`.
pub(super) fn inner(
    ws: &WorkingSet,
    hess: &[f64],
    g: &[f64],
    w: &[f64],
    pw: (f64, f64),
    tol_in: f64,
    interrupt: &dyn Interrupt,
) -> Result<Vec<f64>> {
    const MAX_EPOCHS: usize = 1000;
    const DEPTH: usize = 5;
    let md = NewtonModel { ws, hess, g, w, pw };
    let k = ws.cols.len() + 1;
    let nb = ws.kernels.len();
    let blocks: Vec<(Vec<f64>, BlockSolver)> = (0..nb)
        .map(|t| {
            let r = md.range(t);
            let kb = r.len();
            let block: Vec<f64> = (0..kb * kb)
                .map(|i| hess[(r.start + i % kb) + (r.start + i / kb) * k])
                .collect();
            let solver = BlockSolver::new(&block, kb);
            (block, solver)
        })
        .collect();
    let mut delta = vec![0.0; k];
    // `Hδ`, kept up to date column by column.
    let mut hd = vec![0.0; k];
    let mut recent: Vec<Vec<f64>> = Vec::with_capacity(DEPTH + 1);
    for epoch in 0..MAX_EPOCHS {
        if epoch % 64 == 63 {
            interrupt.check()?;
        }
        sweep(&md, &blocks, &mut delta, &mut hd);
        if md.worst(&delta, &hd) <= tol_in {
            break;
        }
        if epoch % NEWTON_EVERY == NEWTON_EVERY - 1 && md.active_newton(&mut delta, &mut hd, tol_in)
        {
            break;
        }
        recent.push(delta.clone());
        if recent.len() == DEPTH + 1 {
            if let Some(x) = anderson(&recent) {
                let hx = sym_matvec(hess, &x);
                if md.value(&x, &hx) < md.value(&delta, &hd) {
                    delta = x;
                    hd = hx;
                }
            }
            recent.clear();
        }
    }
    Ok(delta)
}

/// One epoch of [`inner`]: each block of the working set minimised exactly in turn
/// ([`BlockSolver`], with the block `H_mm` it factors), then the intercept by its Newton step;
/// `δ` and `Hδ` updated as they go.
fn sweep(
    md: &NewtonModel<'_>,
    blocks: &[(Vec<f64>, BlockSolver)],
    delta: &mut [f64],
    hd: &mut [f64],
) {
    let (hess, g, w, pw) = (md.hess, md.g, md.w, md.pw);
    let k = delta.len();
    let hbb = hess[k * k - 1];
    let mut cur = Vec::new();
    for (t, (block, solver)) in blocks.iter().enumerate() {
        let r = md.range(t);
        let kb = r.len();
        cur.clear();
        cur.extend(r.clone().map(|j| w[j] + delta[j]));
        // The block's linear term with its own current value taken out:
        // `c = (g + Hδ)_m − H_mm (w_m + δ_m)`.
        let c: Vec<f64> = r
            .clone()
            .enumerate()
            .map(|(a, j)| {
                let hc: f64 = (0..kb).map(|b2| block[a + b2 * kb] * cur[b2]).sum();
                g[j] + hd[j] - hc
            })
            .collect();
        let z = solver.minimise(&c, pw);
        for ((j, znew), c) in r.clone().zip(&z).zip(&cur) {
            let ch = znew - c;
            if ch != 0.0 {
                delta[j] += ch;
                let col = &hess[j * k..(j + 1) * k];
                hd.iter_mut().zip(col).for_each(|(h, a)| *h += ch * a);
            }
        }
    }
    if hbb > 0.0 {
        let ch = -(g[k - 1] + hd[k - 1]) / hbb;
        delta[k - 1] += ch;
        let col = &hess[(k - 1) * k..];
        hd.iter_mut().zip(col).for_each(|(h, a)| *h += ch * a);
    }
}

/// The step `−A⁻¹ rhs` of a Newton system `A` (`k × k`, row-major) with right-hand side `rhs`.
fn newton_step(a: &[f64], rhs: &[f64], k: usize) -> Result<Vec<f64>> {
    let step = Cholesky::new(a, k)?.solve(rhs);
    Ok(step.iter().map(|v| -v).collect())
}

/// ℓp's Newton step (docs/mathematics.md §2.13). With `N = (Σ_m s_m^q)^{1/q}`, `q = 2p/(p+1)`,
/// the penalty `Ω = ½ N²` is twice differentiable wherever every block is non-zero (`p > 1`):
/// `∇_m Ω = a u_m` with `a = N^{2−q}`, `u_m = s_m^{q−2} w_m`, and
/// `∇²Ω = a · diag_m(s_m^{q−2} (I + (q−2) ŵ_m ŵ_mᵀ)) + (2−q) N^{2−2q} u uᵀ`.
/// The step solves `(H + ∇²Ω) δ = −(g + ∇Ω)` (intercept last) by Cholesky, `R + 1` unknowns.
///
/// At `w = 0` (the start) `Ω` has no Hessian: the step is that of its variational bound at the
/// uniform `θ` (Kloft eq. 17 at equal norms), `½ Σ_m ‖w_m‖²/θ_m` with `1/θ_m = M^{1/p}`,
/// whose gradient there is also 0. A zero block among non-zero ones takes the curvature of a
/// norm `10⁻³` of the largest, where the exact one is infinite for `q < 2` and would hold it
/// at zero.
pub(super) fn lp_direction(
    ws: &WorkingSet,
    hess: &[f64],
    g: &[f64],
    wl: &[f64],
    p: f64,
) -> Result<Vec<f64>> {
    let k = ws.cols.len() + 1;
    let q = lp_q(p);
    let norms: Vec<f64> = ws.blocks().map(|r| norm(&wl[r])).collect();
    let big_n = (2.0 * lp_penalty(&norms, p)).sqrt();
    let smax = norms.iter().fold(0.0f64, |a, &v| a.max(v));
    let mut a = hess.to_vec();
    let mut rhs = g.to_vec();
    if big_n > 0.0 {
        // `g_m s_m^{2−q} = N^{2−q}`; `∇Ω = (g_m w_m)_m`, and the rank-one term is
        // `(2−q) N^{2−2q} u uᵀ = (2−q)/N² ∇Ω ∇Ωᵀ`.
        let scales = lp_gradient_scales(&norms, p);
        let mut grad = vec![0.0; k - 1];
        for ((r, &s), &gm) in ws.blocks().zip(&norms).zip(&scales) {
            let sf = if s > 0.0 { s } else { 1e-3 * smax };
            let d = big_n.powf(2.0 - q) * sf.powf(q - 2.0);
            for i in r.clone() {
                a[i * k + i] += d;
                if s > 0.0 {
                    grad[i] = gm * wl[i];
                    rhs[i] += grad[i];
                    for j in r.clone() {
                        a[i * k + j] += d * (q - 2.0) * wl[i] * wl[j] / (s * s);
                    }
                }
            }
        }
        let cross = (2.0 - q) / (big_n * big_n);
        for i in 0..k - 1 {
            for j in 0..k - 1 {
                a[i * k + j] += cross * grad[i] * grad[j];
            }
        }
    } else {
        let d = if p.is_infinite() {
            1.0
        } else {
            (norms.len() as f64).powf(1.0 / p)
        };
        for i in 0..k - 1 {
            a[i * k + i] += d;
        }
    }
    newton_step(&a, &rhs, k)
}

/// Group MKL's Newton step on its smoothed penalty (docs/mathematics.md §2.13): solves
/// `(H + ∇²Ω) δ = −(g + ∇Ω)` (intercept last) by Cholesky, `R + 1` unknowns, with `∇²Ω` dense
/// within a group and rank one across ([`GroupPenalty::add_newton_terms`]).
pub(super) fn group_direction(
    ws: &WorkingSet,
    hess: &[f64],
    g: &[f64],
    wl: &[f64],
    pen: &GroupPenalty,
) -> Result<Vec<f64>> {
    let k = ws.cols.len() + 1;
    let mut a = hess.to_vec();
    let blocks: Vec<_> = ws.blocks().collect();
    let grad = pen.add_newton_terms(&blocks, wl, &mut a, k);
    let rhs: Vec<f64> = g
        .iter()
        .enumerate()
        .map(|(i, gi)| gi + grad.get(i).copied().unwrap_or(0.0))
        .collect();
    newton_step(&a, &rhs, k)
}

/// Epochs of cyclic descent between the Newton steps of [`NewtonModel::active_newton`].
const NEWTON_EVERY: usize = 10;

/// The Newton model of a step on a working set (see [`inner`]).
struct NewtonModel<'a> {
    ws: &'a WorkingSet,
    /// `H`, column-major, order `|cols| + 1`.
    hess: &'a [f64],
    g: &'a [f64],
    /// The point's weights on the working set's columns.
    w: &'a [f64],
    pw: (f64, f64),
}

impl NewtonModel<'_> {
    fn range(&self, t: usize) -> std::ops::Range<usize> {
        self.ws.local[t]..self.ws.local[t + 1]
    }

    /// The model's value at `δ` with `Hδ = hd`.
    fn value(&self, x: &[f64], hx: &[f64]) -> f64 {
        let lin: f64 = x.iter().zip(self.g).map(|(a, b)| a * b).sum();
        let quad: f64 = 0.5 * x.iter().zip(hx).map(|(a, b)| a * b).sum::<f64>();
        let pen: f64 = (0..self.ws.kernels.len())
            .map(|t| {
                let v: Vec<f64> = self.range(t).map(|j| self.w[j] + x[j]).collect();
                block_value(self.pw, norm(&v))
            })
            .sum();
        lin + quad + pen
    }

    /// The largest violation of the model's optimality conditions at `δ` (blocks and
    /// intercept).
    fn worst(&self, x: &[f64], hx: &[f64]) -> f64 {
        let k = x.len();
        (0..self.ws.kernels.len())
            .map(|t| {
                let r = self.range(t);
                let gr: Vec<f64> = r.clone().map(|j| self.g[j] + hx[j]).collect();
                let wr: Vec<f64> = r.map(|j| self.w[j] + x[j]).collect();
                subgradient_distance(self.pw, &gr, &wr)
            })
            .fold((self.g[k - 1] + hx[k - 1]).abs(), f64::max)
    }

    /// Up to 8 Newton steps on the blocks active at `w + δ` and the intercept, where the model
    /// is twice differentiable (a norm's curvature is `r_1 (I − ûûᵀ)/‖u‖ + r_2 I`), each with
    /// backtracking on the model: they finish what cyclic descent does slowly once the support
    /// is found, on coupled or nearly singular blocks (a smoothed level whose zone holds fewer
    /// points than the working set has columns). True when `δ` meets `tol_in`.
    fn active_newton(&self, delta: &mut Vec<f64>, hd: &mut Vec<f64>, tol_in: f64) -> bool {
        let (r1, r2) = self.pw;
        let k = delta.len();
        for _ in 0..8 {
            let mut idx = Vec::new();
            let mut act = Vec::new();
            for t in 0..self.ws.kernels.len() {
                if self.range(t).any(|j| self.w[j] + delta[j] != 0.0) {
                    idx.extend(self.range(t));
                    act.push(t);
                }
            }
            idx.push(k - 1);
            let q = idx.len();
            let mut a: Vec<f64> = (0..q * q)
                .map(|e| self.hess[idx[e % q] + idx[e / q] * k])
                .collect();
            let mut rhs: Vec<f64> = idx.iter().map(|&i| self.g[i] + hd[i]).collect();
            let mut pos = 0;
            for &t in &act {
                let u: Vec<f64> = self.range(t).map(|j| self.w[j] + delta[j]).collect();
                let nu = norm(&u);
                let kb = u.len();
                for i in 0..kb {
                    rhs[pos + i] += (r1 / nu + r2) * u[i];
                    for j in 0..kb {
                        let eye = if i == j { 1.0 } else { 0.0 };
                        a[(pos + i) * q + pos + j] +=
                            r1 / nu * (eye - u[i] * u[j] / (nu * nu)) + r2 * eye;
                    }
                }
                pos += kb;
            }
            let Ok(chol) = Cholesky::new(&a, q) else {
                return false;
            };
            let step = chol.solve(&rhs);
            let mut full = vec![0.0; k];
            for (&i, s) in idx.iter().zip(&step) {
                full[i] = -s;
            }
            let hs = sym_matvec(self.hess, &full);
            let slope = -dot(&rhs, &step);
            let v0 = self.value(delta, hd);
            let mut t = 1.0;
            let mut trial = vec![0.0; k];
            let mut htrial = vec![0.0; k];
            loop {
                for i in 0..k {
                    trial[i] = delta[i] + t * full[i];
                    htrial[i] = hd[i] + t * hs[i];
                }
                if self.value(&trial, &htrial) <= v0 + 1e-4 * t * slope {
                    break;
                }
                t *= 0.5;
                if t < 1e-3 {
                    return false;
                }
            }
            std::mem::swap(delta, &mut trial);
            std::mem::swap(hd, &mut htrial);
            if self.worst(delta, hd) <= tol_in {
                return true;
            }
        }
        false
    }
}
