//! Proximal Newton in feature space for `l1` and `elasticnet` on explicit features
//! (docs/mathematics.md §2.13).
//!
//! When every kernel is given by its features, `K_m = G_m G_mᵀ` with `G_m` of shape `n × r_m`
//! (a `FeatureBank` block, a low-rank factor), the model is `f = Σ_m G_m w_m + b` with
//! `‖f_m‖ = ‖w_m‖`, and the problem of §0.2 is the group lasso (elastic net) in `w`:
//!
//! ```text
//! P(w, b) = C Σ_i ℓ(y_i, f_i) + Σ_m (r_1 ‖w_m‖ + r_2/2 ‖w_m‖²).
//! ```
//!
//! Each outer iteration ([`fit_prox_newton`]) reads the features once for the gradient
//! `g = C Gᵀℓ'(f)` and the certificate (step `certify`), picks a working set of kernels
//! (`working_set`: the active ones and the worst violators of the optimality conditions),
//! forms the Hessian of the loss on them, `H = C [G_W, 1]ᵀ diag(ℓ'') [G_W, 1]`
//! (`hessian`: one pass over their columns, `(Σ_W r_m + 1)²` per row), minimises the quadratic
//! model plus the penalty by block coordinate descent (`inner`: no feature is read there), and
//! takes the step with a backtracking line search on `P` (`line_search`). The systems are
//! `R × R` in the working set's total width: the cost never grows like `n²` or `n³`.

#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{stack_dot as dot, KernelStack};
use crate::linalg::clear_upper_simd_state;
use crate::losses::{costs, Loss};
use crate::result::{FitResult, SolveStatus};
use crate::solvers::penalty::{kernel_weights, SparsePenalty};
use crate::solvers::spicy::dual::best_dual;
use crate::solvers::tracker::{Model, Tracker};

/// Rows per chunk of the passes over the points: a fixed split, so sums do not depend on the
/// number of threads.
const CHUNK: usize = 2048;

/// Settings of [`fit_prox_newton`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProxNewtonConfig {
    pub penalty: SparsePenalty,
    /// Loss weight.
    pub c: f64,
    /// A loss with a second derivative: logistic, squared or squared hinge.
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Newton steps at most.
    pub max_iter: usize,
}

impl Default for ProxNewtonConfig {
    fn default() -> Self {
        ProxNewtonConfig {
            penalty: SparsePenalty::L1,
            c: 1.0,
            loss: Loss::Logistic,
            tol: 1e-3,
            max_iter: 200,
        }
    }
}

impl ProxNewtonConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
        self.penalty.validate()?;
        if self.loss.deriv2(1.0, 0.0) == 0.0 {
            return Err(MkError::config(
                "loss",
                format!(
                    "solver prox_newton needs a loss with a second derivative (logistic, \
                     squared or squared_hinge), got {}; the hinge-type losses fit with \
                     solver='wrapper'",
                    self.loss.name()
                ),
            ));
        }
        Ok(())
    }
}

/// The features of every kernel as columns of length `n`, kernel after kernel.
struct Features<'a> {
    n: usize,
    cols: Vec<&'a [f64]>,
    /// Kernel `m` owns the columns `offsets[m]..offsets[m + 1]`.
    offsets: Vec<usize>,
}

impl<'a> Features<'a> {
    fn of(stack: &'a dyn KernelStack) -> Result<Self> {
        let n = stack.n();
        let mut cols = Vec::new();
        let mut offsets = vec![0];
        for m in 0..stack.m() {
            let g = stack.low_rank_factor(m).ok_or_else(|| {
                MkError::config(
                    "solver",
                    "prox_newton fits explicit features: feature blocks or low-rank factors \
                     (kernels=FeatureBank(...) or kernels.low_rank(...)), not a dense kernel \
                     stack",
                )
            })?;
            cols.extend(g.chunks_exact(n.max(1)));
            offsets.push(cols.len());
        }
        if cols.iter().any(|c| c.iter().any(|v| !v.is_finite())) {
            return Err(MkError::non_finite("the features"));
        }
        Ok(Features { n, cols, offsets })
    }

    fn m(&self) -> usize {
        self.offsets.len() - 1
    }

    fn block(&self, m: usize) -> std::ops::Range<usize> {
        self.offsets[m]..self.offsets[m + 1]
    }

    /// `Gᵀv` for each `v` of `vs`, column by column: `out[j][k] = G_{:,j} · vs[k]`.
    fn t_products(&self, vs: &[&[f64]]) -> Vec<Vec<f64>> {
        let per_col: Vec<Vec<f64>> = self
            .cols
            .par_iter()
            .map(|c| vs.iter().map(|v| dot(c, v)).collect())
            .collect();
        (0..vs.len())
            .map(|k| per_col.iter().map(|p| p[k]).collect())
            .collect()
    }

    /// `G_W δ` over the columns `cols` of a working set.
    fn product(&self, cols: &[usize], delta: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.n];
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, chunk)| {
                let r0 = k * CHUNK;
                for (&j, &d) in cols.iter().zip(delta) {
                    if d != 0.0 {
                        let c = &self.cols[j][r0..r0 + chunk.len()];
                        chunk.iter_mut().zip(c).for_each(|(o, x)| *o += d * x);
                    }
                }
            });
        out
    }

    /// `[G_W, 1]ᵀ diag(h) [G_W, 1]` (column-major, order `|cols| + 1`), by chunks of rows;
    /// the longest pass of a step, so `interrupt` is polled between batches of chunks.
    fn hessian(&self, cols: &[usize], h: &[f64], interrupt: &dyn Interrupt) -> Result<Vec<f64>> {
        const BATCH: usize = 16;
        let k = cols.len() + 1;
        let chunks = self.n.div_ceil(CHUNK);
        let mut hess = vec![0.0; k * k];
        for first in (0..chunks).step_by(BATCH) {
            interrupt.check()?;
            for p in self.hessian_chunks(cols, h, first..chunks.min(first + BATCH)) {
                hess.iter_mut().zip(&p).for_each(|(a, b)| *a += b);
            }
        }
        Ok(hess)
    }

    /// Each chunk's part of [`Features::hessian`].
    fn hessian_chunks(
        &self,
        cols: &[usize],
        h: &[f64],
        chunks: std::ops::Range<usize>,
    ) -> Vec<Vec<f64>> {
        let k = cols.len() + 1;
        chunks
            .into_par_iter()
            .map(|c| {
                let r0 = c * CHUNK;
                let rows = CHUNK.min(self.n - r0);
                let sq: Vec<f64> = h[r0..r0 + rows].iter().map(|v| v.max(0.0).sqrt()).collect();
                let mut z = Vec::with_capacity(rows * k);
                for &j in cols {
                    let col = &self.cols[j][r0..r0 + rows];
                    z.extend(col.iter().zip(&sq).map(|(x, s)| x * s));
                }
                z.extend_from_slice(&sq);
                let zm = faer::MatRef::from_column_major_slice(&z, rows, k);
                let mut out = faer::Mat::<f64>::zeros(k, k);
                // The lower triangle only (half the products of a full `ZᵀZ`).
                faer::linalg::matmul::triangular::matmul(
                    out.as_mut(),
                    faer::linalg::matmul::triangular::BlockStructure::TriangularLower,
                    faer::Accum::Replace,
                    zm.transpose(),
                    faer::linalg::matmul::triangular::BlockStructure::Rectangular,
                    zm,
                    faer::linalg::matmul::triangular::BlockStructure::Rectangular,
                    1.0,
                    faer::Par::Seq,
                );
                clear_upper_simd_state();
                (0..k * k)
                    .map(|i| {
                        let (r, c) = (i % k, i / k);
                        if r >= c {
                            out[(r, c)]
                        } else {
                            out[(c, r)]
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

/// [`Loss::weighted_total`] `Σ_i c_i ℓ(y_i, f_i + b)` in parallel, summed by fixed chunks (the
/// same bits on any number of threads).
fn data_term(loss: Loss, y: &[f64], f: &[f64], b: f64, c: &[f64]) -> f64 {
    let parts: Vec<f64> = y
        .par_chunks(CHUNK)
        .zip(f.par_chunks(CHUNK))
        .zip(c.par_chunks(CHUNK))
        .map(|((yc, fc), cc)| loss.weighted_total(yc, fc, b, cc))
        .collect();
    parts.iter().sum()
}

/// One block's penalty `r_1 ‖v‖ + r_2/2 ‖v‖²` from its norm.
fn block_penalty((r1, r2): (f64, f64), norm: f64) -> f64 {
    r1 * norm + 0.5 * r2 * norm * norm
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The distance of `−g` to the penalty's subdifferential at `w`: how far block `w` is from
/// optimal with the loss gradient `g` on it (0 exactly at a solution).
fn violation((r1, r2): (f64, f64), g: &[f64], w: &[f64]) -> f64 {
    let nw = norm(w);
    if nw > 0.0 {
        g.iter()
            .zip(w)
            .map(|(gi, wi)| (gi + (r1 / nw + r2) * wi).powi(2))
            .sum::<f64>()
            .sqrt()
    } else {
        (norm(g) - r1).max(0.0)
    }
}

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

/// A working set: its kernels and their columns in order.
struct WorkingSet {
    kernels: Vec<usize>,
    cols: Vec<usize>,
    /// Kernel `kernels[t]` owns the local columns `local[t]..local[t + 1]`.
    local: Vec<usize>,
}

/// Kernels to optimise next (skglm's rule): the active ones and the largest violators, twice
/// as many as are active and at least `P0`, in kernel order.
fn working_set(x: &Features<'_>, w: &[f64], viol: &[f64]) -> WorkingSet {
    const P0: usize = 10;
    let mm = x.m();
    let active: Vec<bool> = (0..mm)
        .map(|m| w[x.block(m)].iter().any(|&v| v != 0.0))
        .collect();
    let n_active = active.iter().filter(|&&a| a).count();
    let size = (2 * n_active).max(P0).min(mm);
    let mut order: Vec<usize> = (0..mm).filter(|&m| !active[m] && viol[m] > 0.0).collect();
    order.sort_by(|&a, &b| viol[b].total_cmp(&viol[a]).then(a.cmp(&b)));
    let mut chosen = active.clone();
    for &m in order.iter().take(size.saturating_sub(n_active)) {
        chosen[m] = true;
    }
    let kernels: Vec<usize> = (0..mm).filter(|&m| chosen[m]).collect();
    let mut cols = Vec::new();
    let mut local = vec![0];
    for &m in &kernels {
        cols.extend(x.block(m));
        local.push(cols.len());
    }
    WorkingSet {
        kernels,
        cols,
        local,
    }
}

/// The iterate with the best primal value: its feature weights and what its representer form
/// needs.
struct Best {
    w: Vec<f64>,
    /// The centred dual point `ρ̃`.
    rho: Vec<f64>,
    /// `d_m = s_m/‖ρ̃‖_{K_m}`.
    scale: Vec<f64>,
}

impl Best {
    /// `A[m] = d_m ρ̃` (row-major `M × n`): the representer form, exact at the optimum, where
    /// `w_m = G_mᵀ A[m]` (the feature weights are the iterate itself).
    fn coef(&self) -> Vec<f64> {
        self.scale
            .iter()
            .flat_map(|&d| self.rho.iter().map(move |r| d * r))
            .collect()
    }
}

/// The point, its gradient and what the certificate found there.
struct Point {
    /// `Σ_m G_m w_m` (without `b`).
    f: Vec<f64>,
    primal: f64,
    /// The loss part `C Σ ℓ` of `primal`.
    data: f64,
    /// `C ℓ'(y_i, f_i + b)`.
    d1: Vec<f64>,
    /// `g = C Gᵀℓ'`, all columns.
    grad: Vec<f64>,
    /// Per kernel: the distance to optimality ([`violation`]).
    viol: Vec<f64>,
    gap: f64,
}

/// `P`, the gradient and the certificate at `(w, b)` (one pass over the features): the dual
/// point is the natural one, `ρ̃_i = −c_i ℓ'(f_i + b)` centred into the dual's domain and scaled
/// ([`best_dual`], docs/mathematics.md §1.4); it is optimal at the solution.
#[allow(clippy::too_many_arguments)]
fn certify(
    x: &Features<'_>,
    y: &[f64],
    c: &[f64],
    cfg: &ProxNewtonConfig,
    w: &[f64],
    b: f64,
    f: Vec<f64>,
    tracker: &mut Tracker<'_>,
    best: &mut Best,
) -> Point {
    let loss = cfg.loss;
    let pw = cfg.penalty.weights();
    let norms: Vec<f64> = (0..x.m()).map(|m| norm(&w[x.block(m)])).collect();
    let data = data_term(loss, y, &f, b, c);
    let primal = data + cfg.penalty.value(&norms);
    let d1: Vec<f64> = y
        .iter()
        .zip(&f)
        .zip(c)
        .map(|((&yi, &fi), &ci)| ci * loss.deriv(yi, fi + b))
        .collect();
    let raw: Vec<f64> = d1.iter().map(|v| -v).collect();
    let centred = loss.centre_dual(y, &raw, c);
    let mut prods = x.t_products(&[&d1, &centred]);
    let u = prods.pop().expect("two products");
    let grad = prods.pop().expect("two products");
    let dual_norms: Vec<f64> = (0..x.m()).map(|m| norm(&u[x.block(m)])).collect();
    let dual = best_dual(&dual_norms, y, &centred, c, loss, cfg.penalty);
    let viol = (0..x.m())
        .map(|m| violation(pw, &grad[x.block(m)], &w[x.block(m)]))
        .collect();
    let active = norms.iter().filter(|&&s| s > 0.0).count();
    if primal < tracker.best_primal() {
        best.w.copy_from_slice(w);
        best.rho.clone_from(&centred);
        best.scale = norms
            .iter()
            .zip(&dual_norms)
            .map(|(&s, &u)| if s > 0.0 && u > 0.0 { s / u } else { 0.0 })
            .collect();
    }
    // The coefficients are formed once, at the end ([`Best::coef`]).
    let gap = tracker.record_with(primal, (dual, None), active, || Model {
        coef: Vec::new(),
        intercept: b,
        weights: kernel_weights(cfg.penalty, &norms),
        norms: norms.clone(),
    });
    Point {
        f,
        primal,
        data,
        d1,
        grad,
        viol,
        gap,
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
/// block's violation is at most `tol_in`, with an Anderson extrapolation of the last epochs
/// every few epochs kept when it lowers the model (blocks coupled through `H`, e.g. Gaussian
/// kernels of several widths on one feature, otherwise make cyclic descent linear and slow).
/// Returns `δ`.
fn inner(
    ws: &WorkingSet,
    hess: &[f64],
    g: &[f64],
    w: &[f64],
    pw: (f64, f64),
    tol_in: f64,
    interrupt: &dyn Interrupt,
) -> Result<Vec<f64>> {
    const MAX_EPOCHS: usize = 1000;
    let k = ws.cols.len() + 1;
    let nb = ws.kernels.len();
    let range = |t: usize| ws.local[t]..ws.local[t + 1];
    let blocks: Vec<(Vec<f64>, BlockSolver)> = (0..nb)
        .map(|t| {
            let r = range(t);
            let kb = r.len();
            let block: Vec<f64> = (0..kb * kb)
                .map(|i| hess[(r.start + i % kb) + (r.start + i / kb) * k])
                .collect();
            let solver = BlockSolver::new(&block, kb);
            (block, solver)
        })
        .collect();
    let hbb = hess[k * k - 1];
    let mut delta = vec![0.0; k];
    // `Hδ`, kept up to date column by column.
    let mut hd = vec![0.0; k];
    let mut cur = Vec::new();
    let model = |x: &[f64], hx: &[f64]| -> f64 {
        let lin: f64 = x.iter().zip(g).map(|(a, b)| a * b).sum();
        let quad: f64 = 0.5 * x.iter().zip(hx).map(|(a, b)| a * b).sum::<f64>();
        let pen: f64 = (0..nb)
            .map(|t| {
                let v: Vec<f64> = range(t).map(|j| w[j] + x[j]).collect();
                block_penalty(pw, norm(&v))
            })
            .sum();
        lin + quad + pen
    };
    const DEPTH: usize = 5;
    let mut recent: Vec<Vec<f64>> = Vec::with_capacity(DEPTH + 1);
    for epoch in 0..MAX_EPOCHS {
        if epoch % 64 == 63 {
            interrupt.check()?;
        }
        for (t, (block, solver)) in blocks.iter().enumerate() {
            let r = range(t);
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
        let worst = (0..nb)
            .map(|t| {
                let r = range(t);
                let gr: Vec<f64> = r.clone().map(|j| g[j] + hd[j]).collect();
                let wr: Vec<f64> = r.map(|j| w[j] + delta[j]).collect();
                violation(pw, &gr, &wr)
            })
            .fold((g[k - 1] + hd[k - 1]).abs(), f64::max);
        if worst <= tol_in {
            break;
        }
        recent.push(delta.clone());
        if recent.len() == DEPTH + 1 {
            if let Some(x) = anderson(&recent) {
                let hx = sym_matvec(hess, &x);
                if model(&x, &hx) < model(&delta, &hd) {
                    delta = x;
                    hd = hx;
                }
            }
            recent.clear();
        }
    }
    Ok(delta)
}

/// A step of the line search.
struct Step {
    t: f64,
    /// `Σ_m G_m w_m` after it.
    f: Vec<f64>,
    /// The model's decrease was below what `P` resolves.
    flat: bool,
}

/// The step `t ∈ {1, ½, ¼, …}` along `(δ, δ_b)` with sufficient decrease of `P` (Armijo on
/// the model's decrease `gᵀδ + pen(w + δ) − pen(w)`), or `None` when none was found.
#[allow(clippy::too_many_arguments)]
fn line_search(
    x: &Features<'_>,
    y: &[f64],
    c: &[f64],
    cfg: &ProxNewtonConfig,
    ws: &WorkingSet,
    w: &[f64],
    b: f64,
    pt: &Point,
    delta: &[f64],
) -> Option<Step> {
    let pw = cfg.penalty.weights();
    let k = ws.cols.len();
    let xd = x.product(&ws.cols, &delta[..k]);
    let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
    let pen = |t: f64| -> f64 {
        (0..ws.kernels.len())
            .map(|s| {
                let r = ws.local[s]..ws.local[s + 1];
                let v: Vec<f64> = r.map(|j| wl[j] + t * delta[j]).collect();
                block_penalty(pw, norm(&v))
            })
            .sum()
    };
    let pen0 = pen(0.0);
    let slope: f64 = ws
        .cols
        .iter()
        .zip(delta)
        .map(|(&j, d)| pt.grad[j] * d)
        .sum::<f64>()
        + pt.d1.iter().sum::<f64>() * delta[k];
    let decrease = slope + pen(1.0) - pen0;
    // A model that predicts no decrease beyond rounding: the point is as good as the
    // arithmetic allows (a `tol` below it is out of reach).
    // A decrease the values of `P` cannot resolve (rounding): the step is taken whole, as
    // near the optimum Newton's is, and the certificate judges it (the dual point keeps
    // improving with `w` after `P` has stopped changing visibly).
    let flat = decrease >= -1e-12 * pt.primal.abs();
    let mut t = 1.0;
    let mut trial = vec![0.0; x.n];
    while t > 1e-10 {
        trial
            .iter_mut()
            .zip(&pt.f)
            .zip(&xd)
            .for_each(|((o, f), d)| *o = f + t * d);
        let value = data_term(cfg.loss, y, &trial, b + t * delta[k], c)
            + (pt.primal - pt.data - pen0)
            + pen(t);
        if flat || value <= pt.primal + 1e-4 * t * decrease {
            return Some(Step { t, f: trial, flat });
        }
        t *= 0.5;
    }
    None
}

/// Fits `l1` / `elasticnet` MKL on explicit features by proximal Newton (module docs).
/// `feature_weights` of the result are `w` (kernel blocks in column order) at the best primal
/// iterate, and `coef` its representer form.
pub fn fit_prox_newton(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &ProxNewtonConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_prox_newton_weighted(stack, y, None, cfg, None, interrupt)
}

/// A starting point of [`fit_prox_newton_weighted`] (a warm start): the feature weights `w`,
/// kernel blocks in column order as the result's `feature_weights`, and the intercept.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureStart {
    pub weights: Vec<f64>,
    pub intercept: f64,
}

/// [`fit_prox_newton`] with a weight per sample on the loss (`C Σ_i w_i ℓ(y_i, f_i)`), from
/// `start` when given (certified first: a start already optimal ends the fit there), else from
/// `w = 0` and the best intercept.
pub fn fit_prox_newton_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::validate_targets(stack.n(), y)?;
    let c = &costs(cfg.c, sample_weight, y.len())?;
    let x = Features::of(stack)?;
    let pw = cfg.penalty.weights();
    let width = x.cols.len();
    let (mut w, mut b, f) = match start {
        None => {
            let f = vec![0.0; x.n];
            let b = cfg.loss.best_intercept(y, &f, c, 0.0);
            (vec![0.0; width], b, f)
        }
        Some(s) => {
            if s.weights.len() != width {
                return Err(MkError::Shape(format!(
                    "the start has {} feature weights for features of total width {width}",
                    s.weights.len()
                )));
            }
            if !(s.intercept.is_finite() && s.weights.iter().all(|v| v.is_finite())) {
                return Err(MkError::non_finite("the starting point"));
            }
            let cols: Vec<usize> = (0..width).filter(|&j| s.weights[j] != 0.0).collect();
            let vals: Vec<f64> = cols.iter().map(|&j| s.weights[j]).collect();
            (s.weights.clone(), s.intercept, x.product(&cols, &vals))
        }
    };
    let mut tracker = Tracker::new(interrupt);
    let mut best = Best {
        w: w.clone(),
        rho: Vec::new(),
        scale: vec![0.0; x.m()],
    };
    let mut pt = certify(&x, y, c, cfg, &w, b, f, &mut tracker, &mut best);
    let mut status = SolveStatus::MaxIterations;
    let mut steps = 0;
    // The squared loss's Hessian does not depend on the point: kept while the set is.
    let mut kept: Option<(Vec<usize>, Vec<f64>)> = None;
    while steps < cfg.max_iter {
        if pt.gap <= cfg.tol {
            status = SolveStatus::Converged;
            break;
        }
        interrupt.check()?;
        let ws = working_set(&x, &w, &pt.viol);
        let hess = match kept.take() {
            Some((cols, h)) if cols == ws.cols => h,
            _ => {
                let h2: Vec<f64> = y
                    .iter()
                    .zip(&pt.f)
                    .zip(c)
                    .map(|((&yi, &fi), &ci)| ci * cfg.loss.deriv2(yi, fi + b))
                    .collect();
                x.hessian(&ws.cols, &h2, interrupt)?
            }
        };
        let mut g: Vec<f64> = ws.cols.iter().map(|&j| pt.grad[j]).collect();
        g.push(pt.d1.iter().sum());
        let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
        // The model is solved well below the current violation: its epochs cost `|W|²`, no
        // feature read, and an accurate step keeps Newton's fast local convergence.
        let worst = pt
            .viol
            .iter()
            .copied()
            .fold(g[ws.cols.len()].abs(), f64::max);
        let delta = inner(&ws, &hess, &g, &wl, pw, 1e-3 * worst, interrupt)?;
        steps += 1;
        let Some(Step { t, f, flat }) = line_search(&x, y, c, cfg, &ws, &w, b, &pt, &delta) else {
            status = SolveStatus::Stalled;
            break;
        };
        let gap_before = pt.gap;
        for (&j, d) in ws.cols.iter().zip(&delta) {
            w[j] += t * d;
        }
        b += t * delta[ws.cols.len()];
        if cfg.loss == Loss::Squared {
            kept = Some((ws.cols, hess));
        }
        pt = certify(&x, y, c, cfg, &w, b, f, &mut tracker, &mut best);
        if flat && pt.gap >= 0.5 * gap_before {
            // Neither `P` nor the certificate moves any more: the arithmetic's limit.
            status = SolveStatus::Stalled;
            break;
        }
    }
    if status == SolveStatus::MaxIterations && pt.gap <= cfg.tol {
        status = SolveStatus::Converged;
    }
    let mut fit = tracker.finish(steps, status)?;
    fit.coef = best.coef();
    fit.feature_weights = best.w;
    Ok(fit)
}
