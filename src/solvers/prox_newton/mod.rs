//! Proximal Newton in feature space for `l1`, `elasticnet`, ℓp and group MKL on explicit
//! features (docs/mathematics.md §2.13).
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

mod features;
#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{Element, KernelStack, RowFeatures};
use crate::linalg::{clear_upper_simd_state, dot, Cholesky};
use crate::losses::{costs, Envelope, Loss};
use crate::penalties::duals::{best_dual, best_envelope_dual};
use crate::penalties::{
    lp_gradient_scales, lp_penalty, lp_q, BlockPenalty, GroupPenalty, SparsePenalty,
};
use crate::result::{relative_gap, FitResult, SolveStatus};
use crate::solvers::tracker::{Model, Tracker};
use features::{check_finite, rows_of, FeatureOps, CHUNK};

/// Settings of [`fit_prox_newton`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProxNewtonConfig {
    /// `l1`, `elasticnet`, ℓp with `p > 1` ([`lp_direction`]), or `group` through the
    /// smoothing continuation of its penalty ([`GroupLevel`]).
    pub penalty: BlockPenalty,
    /// Loss weight.
    pub c: f64,
    /// Any loss: the hinge and ε-insensitive ones through the smoothing continuation
    /// ([`Smoothing`]).
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Newton steps at most.
    pub max_iter: usize,
}

impl Default for ProxNewtonConfig {
    fn default() -> Self {
        ProxNewtonConfig {
            penalty: BlockPenalty::Sparse(SparsePenalty::L1),
            c: 1.0,
            loss: Loss::Hinge,
            tol: 1e-3,
            max_iter: 200,
        }
    }
}

impl ProxNewtonConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
        self.penalty.validate()
    }
}

/// [`Envelope::weighted_total`] `Σ_i c_i ℓ_μ(y_i, f_i + b)` in parallel, summed by fixed chunks
/// (the same bits on any number of threads).
fn data_term(loss: Envelope, y: &[f64], f: &[f64], b: f64, c: &[f64]) -> f64 {
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

impl WorkingSet {
    /// Every kernel (ℓp's steps).
    fn all(x: &dyn FeatureOps) -> Self {
        WorkingSet {
            kernels: (0..x.m()).collect(),
            cols: (0..x.width()).collect(),
            local: x.offsets().to_vec(),
        }
    }

    /// The set's blocks as ranges of its local columns.
    fn blocks(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        (0..self.kernels.len()).map(|s| self.local[s]..self.local[s + 1])
    }

    /// The set's block norms at `w + t δ`, `wl` the point's weights on the set's columns.
    fn norms_along(&self, wl: &[f64], delta: &[f64], t: f64) -> Vec<f64> {
        self.blocks()
            .map(|r| {
                r.map(|j| (wl[j] + t * delta[j]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    }

    /// `Ω` of the set's blocks at `w + t δ` (every block for ℓp, whose sets hold them all).
    fn penalty_along(&self, pen: &BlockPenalty, wl: &[f64], delta: &[f64], t: f64) -> f64 {
        pen.value(&self.norms_along(wl, delta, t))
    }

    /// `d/dt Ω(w + t δ)` at `t`.
    fn penalty_slope(&self, pen: &BlockPenalty, wl: &[f64], delta: &[f64], t: f64) -> f64 {
        let dots: Vec<f64> = self
            .blocks()
            .map(|r| r.map(|j| (wl[j] + t * delta[j]) * delta[j]).sum())
            .collect();
        let steps: Vec<f64> = self.blocks().map(|r| norm(&delta[r])).collect();
        pen.slope(&self.norms_along(wl, delta, t), &dots, &steps)
    }

    /// The penalty's part of the model's decrease along `δ`: `Ω(w + δ) − Ω(w)` for the sparse
    /// penalties, which the model holds exactly; the slope `∇Ωᵀδ` of the smooth ones (ℓp,
    /// smoothed `group`), as their Newton model is quadratic (its change over a whole step can
    /// exceed the loss's decrease on a descent direction, far from the optimum, where `Ω` is
    /// far from quadratic).
    fn penalty_change(&self, pen: &BlockPenalty, wl: &[f64], delta: &[f64]) -> f64 {
        match pen {
            BlockPenalty::Sparse(_) => {
                self.penalty_along(pen, wl, delta, 1.0) - self.penalty_along(pen, wl, delta, 0.0)
            }
            BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => {
                self.penalty_slope(pen, wl, delta, 0.0)
            }
        }
    }
}

/// The model's predicted decrease along a step, `gᵀδ + g_b δ_b` plus the penalty's part
/// ([`WorkingSet::penalty_change`]).
fn model_decrease(ws: &WorkingSet, pt: &Point, delta: &[f64], pen_change: f64) -> f64 {
    let k = ws.cols.len();
    let lin: f64 = ws
        .cols
        .iter()
        .zip(delta)
        .map(|(&j, d)| pt.grad[j] * d)
        .sum();
    lin + pt.d1.iter().sum::<f64>() * delta[k] + pen_change
}

/// Kernels to optimise next (skglm's rule): the active ones and the largest violators, twice
/// as many as are active and at least `P0`, in kernel order.
fn working_set(x: &dyn FeatureOps, w: &[f64], viol: &[f64]) -> WorkingSet {
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

/// The problem a step reads: the features, targets, loss weights and settings.
#[derive(Clone, Copy)]
struct Problem<'a> {
    x: &'a dyn FeatureOps,
    y: &'a [f64],
    c: &'a [f64],
    cfg: &'a ProxNewtonConfig,
}

/// The point, its gradient and what the certificate found there.
struct Point {
    /// `Σ_m G_m w_m` (without `b`).
    f: Vec<f64>,
    /// The objective the steps minimise: `P` with the loss `ℓ_μ` of the level.
    primal: f64,
    /// The loss part `C Σ ℓ_μ` of `primal`.
    data: f64,
    /// `C ℓ_μ'(y_i, f_i + b)`.
    d1: Vec<f64>,
    /// `g = C Gᵀℓ_μ'`, all columns.
    grad: Vec<f64>,
    /// Per kernel: the distance to optimality ([`violation`]).
    viol: Vec<f64>,
    /// The whole problem's relative gap (the loss itself), best values so far.
    gap: f64,
    /// The smoothed problem's relative gap at this point (0 without smoothing).
    level_gap: f64,
}

/// `P`, the gradient and the certificate at `(w, b)` (one pass over the features): the dual
/// point is the natural one, `ρ̃_i = −c_i ℓ_μ'(f_i + b)` centred into the dual's domain and
/// scaled ([`best_dual`], docs/mathematics.md §1.4); it is optimal at the solution of the
/// level's problem. With smoothing (`env.mu > 0`) the recorded `P` is the loss's own, at the
/// best intercept for `f` (any intercept gives a valid `P`), and the point also gets the
/// smoothed problem's own gap (dual `D − μ Σ ρ̃²/(2c)`, [`best_envelope_dual`]). `level` is
/// the penalty the steps minimise: `cfg.penalty` itself, or `group` smoothed ([`GroupLevel`]);
/// the certificate and the level's gap read the exact one.
#[allow(clippy::too_many_arguments)]
fn certify(
    p: &Problem<'_>,
    env: Envelope,
    level: &BlockPenalty,
    w: &[f64],
    b: f64,
    f: Vec<f64>,
    tracker: &mut Tracker<'_>,
    best: &mut Best,
) -> Point {
    let Problem { x, y, c, cfg } = *p;
    let loss = cfg.loss;
    let norms: Vec<f64> = (0..x.m()).map(|m| norm(&w[x.block(m)])).collect();
    let pen = cfg.penalty.value(&norms);
    let data = data_term(env, y, &f, b, c);
    let primal = data + level.value(&norms);
    let (exact, b_exact) = if env.mu == 0.0 {
        (data + pen, b)
    } else {
        let bx = loss.best_intercept(y, &f, c, b);
        (data_term(loss.into(), y, &f, bx, c) + pen, bx)
    };
    let d1: Vec<f64> = y
        .iter()
        .zip(&f)
        .zip(c)
        .map(|((&yi, &fi), &ci)| ci * env.deriv(yi, fi + b))
        .collect();
    let raw: Vec<f64> = d1.iter().map(|v| -v).collect();
    let centred = loss.centre_dual(y, &raw, c);
    let mut prods = x.t_products(&[&d1, &centred]);
    let u = prods.pop().expect("two products");
    let grad = prods.pop().expect("two products");
    let dual_norms: Vec<f64> = (0..x.m()).map(|m| norm(&u[x.block(m)])).collect();
    let dual = best_dual(&dual_norms, y, &centred, c, loss, cfg.penalty.clone());
    let level_gap = if env.mu == 0.0 {
        0.0
    } else {
        // The exact penalty: a smoothed `group` is above it by its smoothing, which would
        // hold this gap above `tol` (docs/mathematics.md §2.13).
        let d = best_envelope_dual(&dual_norms, y, &centred, c, env, &cfg.penalty);
        relative_gap(data + pen, d)
    };
    // ℓp's and group's steps take every kernel: no working set to choose.
    let viol = match cfg.penalty {
        BlockPenalty::Sparse(sp) => (0..x.m())
            .map(|m| violation(sp.weights(), &grad[x.block(m)], &w[x.block(m)]))
            .collect(),
        BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => vec![0.0; x.m()],
    };
    let active = norms.iter().filter(|&&s| s > 0.0).count();
    if exact < tracker.best_primal() {
        best.w.copy_from_slice(w);
        best.rho.clone_from(&centred);
        best.scale = norms
            .iter()
            .zip(&dual_norms)
            .map(|(&s, &u)| if s > 0.0 && u > 0.0 { s / u } else { 0.0 })
            .collect();
    }
    // The coefficients are formed once, at the end ([`Best::coef`]).
    let gap = tracker.record_with(exact, (dual, None), active, || Model {
        coef: Vec::new(),
        intercept: b_exact,
        weights: cfg.penalty.kernel_weights(&norms, &dual_norms),
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
        level_gap,
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
    let hbb = hess[k * k - 1];
    let mut delta = vec![0.0; k];
    // `Hδ`, kept up to date column by column.
    let mut hd = vec![0.0; k];
    let mut cur = Vec::new();
    let mut recent: Vec<Vec<f64>> = Vec::with_capacity(DEPTH + 1);
    for epoch in 0..MAX_EPOCHS {
        if epoch % 64 == 63 {
            interrupt.check()?;
        }
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
fn lp_direction(ws: &WorkingSet, hess: &[f64], g: &[f64], wl: &[f64], p: f64) -> Result<Vec<f64>> {
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
fn group_direction(
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

/// The smoothing continuation of group MKL's penalty (docs/mathematics.md §2.13): the steps
/// minimise `P` with [`GroupPenalty`] smoothed at a level `ν`, block norms by `ε = ν a` and
/// the max across groups at the temperature `τ = ν Ω₀` (`a`, `Ω₀`: the scales of a block norm
/// and of `max_j Σ_{k∈G_j} s_k` at the start), while every certificate is the exact problem's.
/// With a smooth loss `ν` starts at 1 and drops by [`GroupLevel::FACTOR`] once the Newton
/// decrement is at most `tol/4` of the level's objective (one level per step: a level lowered
/// on a stale decrement would skip towards `ν ≈ 0`, where the Hessian is as ill-conditioned
/// as the kinks). With the hinge and ε-insensitive losses it follows the loss's `μ`
/// ([`Smoothing`]), [`GroupLevel::LIGHT`] times lighter, so that the level's gap (read with
/// the exact penalty) measures nearly the objective the steps minimise.
struct GroupLevel {
    exact: GroupPenalty,
    a: f64,
    omega0: f64,
    nu: f64,
    /// `ν` is not lowered below this.
    floor: f64,
    /// The last pass lowered `ν` (smooth losses).
    lowered: bool,
}

impl GroupLevel {
    const FACTOR: f64 = 0.3;
    const LIGHT: f64 = 1e-2;

    /// The first level. The scales: from the start's block norms when it has any, else from
    /// the ridge step `w_0 = −(diag(H) + I)⁻¹ g` at `w = 0` (`g` the loss's gradient, `H`'s
    /// diagonal from the curvature `h` per point).
    fn start(
        exact: &GroupPenalty,
        x: &dyn FeatureOps,
        w: &[f64],
        d1: &[f64],
        h: &[f64],
        nu: f64,
    ) -> Self {
        let block_norms =
            |v: &[f64]| -> Vec<f64> { (0..x.m()).map(|m| norm(&v[x.block(m)])).collect() };
        let mut s = block_norms(w);
        if s.iter().all(|&v| v == 0.0) {
            let g = x.t_products(&[d1]).pop().expect("one product");
            let diag = x.weighted_squares(h);
            let w0: Vec<f64> = g
                .iter()
                .zip(&diag)
                .map(|(gi, di)| -gi / (di + 1.0))
                .collect();
            s = block_norms(&w0);
        }
        let a = s.iter().sum::<f64>() / s.len().max(1) as f64;
        let omega0 = exact.parts(&s).1;
        let (a, omega0) = if a > 0.0 && omega0 > 0.0 && (a * omega0).is_finite() {
            (a, omega0)
        } else {
            (1.0, 1.0)
        };
        GroupLevel {
            exact: exact.clone(),
            a,
            omega0,
            nu,
            floor: 1e-12 * nu,
            lowered: false,
        }
    }

    /// The penalty the steps minimise at this level.
    fn penalty(&self) -> BlockPenalty {
        BlockPenalty::Group(self.exact.smoothed(self.nu * self.a, self.nu * self.omega0))
    }
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
                block_penalty(self.pw, norm(&v))
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
                violation(self.pw, &gr, &wr)
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
fn line_search(
    p: &Problem<'_>,
    pen_level: &BlockPenalty,
    ws: &WorkingSet,
    w: &[f64],
    b: f64,
    pt: &Point,
    delta: &[f64],
) -> Option<Step> {
    let Problem { x, y, c, cfg } = *p;
    let k = ws.cols.len();
    let xd = x.product(&ws.cols, &delta[..k]);
    let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
    let pen = |t: f64| ws.penalty_along(pen_level, &wl, delta, t);
    let pen0 = pen(0.0);
    let decrease = model_decrease(ws, pt, delta, ws.penalty_change(pen_level, &wl, delta));
    // A model that predicts no decrease beyond rounding: the point is as good as the
    // arithmetic allows (a `tol` below it is out of reach).
    // A decrease the values of `P` cannot resolve (rounding): the step is taken whole, as
    // near the optimum Newton's is, and the certificate judges it (the dual point keeps
    // improving with `w` after `P` has stopped changing visibly).
    let flat = decrease >= -1e-12 * pt.primal.abs();
    let mut t = 1.0;
    let mut trial = vec![0.0; x.n()];
    while t > 1e-10 {
        trial
            .iter_mut()
            .zip(&pt.f)
            .zip(&xd)
            .for_each(|((o, f), d)| *o = f + t * d);
        let value = data_term(cfg.loss.into(), y, &trial, b + t * delta[k], c)
            + (pt.primal - pt.data - pen0)
            + pen(t);
        if flat || value <= pt.primal + 1e-4 * t * decrease {
            return Some(Step { t, f: trial, flat });
        }
        t *= 0.5;
    }
    None
}

/// The step along `(δ, δ_b)` of a smoothed level: the minimiser `t ∈ [0, 1]` of the smoothed
/// `P` (convex in `t`, piecewise quadratic for the hinge), by Illinois regula falsi on its
/// slope to `10⁻³` relative in `t`; `t = 1` when the slope there is still ≤ 0. One product
/// with the step's columns, then `O(n)` per evaluation. An exact search, not Armijo's halving:
/// at small `μ` the smoothing zone moves with every step, and halving from `t = 1` loses most
/// of a step that crosses it.
#[allow(clippy::too_many_arguments)]
fn exact_step(
    p: &Problem<'_>,
    env: Envelope,
    pen: &BlockPenalty,
    ws: &WorkingSet,
    w: &[f64],
    b: f64,
    pt: &Point,
    delta: &[f64],
) -> Step {
    let Problem { x, y, c, .. } = *p;
    let k = ws.cols.len();
    let xd = x.product(&ws.cols, &delta[..k]);
    let db = delta[k];
    let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
    let slope = |t: f64| -> f64 {
        let parts: Vec<f64> = (0..x.n().div_ceil(CHUNK))
            .into_par_iter()
            .map(|ch| {
                let r = ch * CHUNK..(ch * CHUNK + CHUNK).min(x.n());
                r.map(|i| {
                    let z = pt.f[i] + t * xd[i] + b + t * db;
                    c[i] * env.deriv(y[i], z) * (xd[i] + db)
                })
                .sum::<f64>()
            })
            .collect();
        parts.iter().sum::<f64>() + ws.penalty_slope(pen, &wl, delta, t)
    };
    // As in [`line_search`]: a decrease `P` cannot resolve is taken whole.
    let change = ws.penalty_change(pen, &wl, delta);
    let flat = model_decrease(ws, pt, delta, change) >= -1e-12 * pt.primal.abs();
    let t = if flat { 1.0 } else { slope_root(slope) };
    let f = pt.f.iter().zip(&xd).map(|(f, d)| f + t * d).collect();
    Step { t, f, flat }
}

/// The minimiser on `[0, 1]` of a convex function given by its non-decreasing `slope`: 1 when
/// `slope(1) ≤ 0`, 0 when `slope(0) ≥ 0`, else the root by Illinois regula falsi to `10⁻³`
/// relative, from the side where the slope is negative (no overshoot of the minimum).
fn slope_root(slope: impl Fn(f64) -> f64) -> f64 {
    let (mut a, mut fa) = (0.0, slope(0.0));
    let (mut b, mut fb) = (1.0, slope(1.0));
    if fb <= 0.0 {
        return 1.0;
    }
    if fa >= 0.0 {
        return 0.0;
    }
    let mut side = 0;
    for _ in 0..60 {
        let m = (a * fb - b * fa) / (fb - fa);
        let fm = slope(m);
        if fm > 0.0 {
            (b, fb) = (m, fm);
            if side == -1 {
                fa *= 0.5;
            }
            side = -1;
        } else {
            (a, fa) = (m, fm);
            if side == 1 {
                fb *= 0.5;
            }
            side = 1;
        }
        if b - a <= 1e-3 * b {
            break;
        }
    }
    if a > 0.0 {
        a
    } else {
        b
    }
}

/// The smoothing continuation for the losses without a second derivative (hinge,
/// ε-insensitive; docs/mathematics.md §2.13): Newton steps on the Moreau envelope `ℓ_μ`, `μ`
/// lowered by [`Smoothing::FACTOR`] whenever the smoothed problem's gap is at most `tol/2`,
/// while the certificate is always the loss's own. Once `μ` is small the smoothing zone holds
/// about the margin's support vectors, fewer than the working set's columns, and the Hessian
/// is singular: it gets a Levenberg–Marquardt damping ([`Smoothing::damp`]).
struct Smoothing {
    env: Envelope,
    /// `μ` is not lowered below this (`10⁻¹²` of the first).
    floor: f64,
    kappa: f64,
    /// The last step was below what `P_μ` resolves: the level is as solved as it gets.
    flat: bool,
    /// Per column `Σ_i c_i x_ij²` (floored at `10⁻¹²` of the largest), and `Σ_i c_i`: the
    /// damping's scale per coordinate.
    col_scale: Vec<f64>,
    total_cost: f64,
}

impl Smoothing {
    const FACTOR: f64 = 0.3;
    const KAPPA_FLOOR: f64 = 1e-10;
    const WARM_SKIP: i32 = 3;

    /// The first level: `μ = 1` for the hinge (the margin's scale); for the ε-insensitive
    /// loss the mean absolute deviation of `y` (the residuals' scale), or 1 when `y` is
    /// constant; [`Smoothing::WARM_SKIP`] levels lower from a warm start, which is near an
    /// optimum already. `None` for the losses with a second derivative.
    fn start(loss: Loss, x: &dyn FeatureOps, y: &[f64], c: &[f64], warm: bool) -> Option<Self> {
        let mu = match loss {
            Loss::Hinge => 1.0,
            Loss::EpsilonInsensitive { .. } => {
                let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
                let mad = y.iter().map(|v| (v - mean).abs()).sum::<f64>() / y.len().max(1) as f64;
                if mad > 0.0 && mad.is_finite() {
                    mad
                } else {
                    1.0
                }
            }
            _ => return None,
        };
        let mu = if warm {
            mu * Self::FACTOR.powi(Self::WARM_SKIP)
        } else {
            mu
        };
        let mut col_scale = x.weighted_squares(c);
        let top = col_scale.iter().fold(0.0f64, |a, &v| a.max(v));
        col_scale.iter_mut().for_each(|v| *v = v.max(1e-12 * top));
        Some(Smoothing {
            env: Envelope { loss, mu },
            floor: 1e-12 * mu,
            kappa: 1e-3,
            flat: false,
            col_scale,
            total_cost: c.iter().sum(),
        })
    }

    /// Lowers `μ` when the level is solved (its gap at most `tol/2`, or its last step flat);
    /// false when it stays (or is at its floor).
    fn next_level(&mut self, pt: &Point, tol: f64) -> bool {
        if !(self.flat || pt.level_gap <= 0.5 * tol) || self.env.mu <= self.floor {
            return false;
        }
        self.env.mu *= Self::FACTOR;
        self.flat = false;
        true
    }

    /// Adds the damping to the diagonal of `hess` (order `k`).
    /// Adds the damping to the diagonal of `hess` (the working set's columns `cols` and the
    /// intercept), per coordinate in proportion to its curvature were every point in the zone
    /// (Marquardt's scaling: the step does not depend on the features' units).
    fn damp(&self, hess: &mut [f64], cols: &[usize]) {
        let k = cols.len() + 1;
        let scale = self.kappa / (cols.len().max(1) as f64 * self.env.mu);
        for (i, &j) in cols.iter().enumerate() {
            hess[i * k + i] += scale * self.col_scale[j];
        }
        hess[k * k - 1] += scale * self.total_cost;
    }

    /// `κ` after a step of length `t`: ÷4 after a whole step, ×4 after a shortened one.
    fn adapt(&mut self, t: f64) {
        self.kappa = if t == 1.0 {
            (self.kappa / 4.0).max(Self::KAPPA_FLOOR)
        } else {
            self.kappa * 4.0
        };
    }
}

/// Fits `l1` / `elasticnet` / ℓp / `group` MKL on explicit features by (proximal) Newton
/// (module docs).
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
    let (data, dims) = rows_of(stack)?;
    let x = RowFeatures::new(&data, stack.n(), &dims)?;
    fit_prox_newton_rows(&x, y, sample_weight, cfg, start, interrupt)
}

/// [`fit_prox_newton_weighted`] on row-major features (numpy's blocks, f64 or f32, read in
/// place).
pub fn fit_prox_newton_rows<T: Element>(
    x: &RowFeatures<'_, T>,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::validate_targets(x.n(), y)?;
    check_finite(x)?;
    fit_features(x, y, sample_weight, cfg, start, interrupt)
}

/// The fit on the features `x` (module docs).
fn fit_features(
    x: &dyn FeatureOps,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    let c = &costs(cfg.c, sample_weight, y.len())?;
    let width = x.width();
    if let Some(ids) = cfg.penalty.group_ids() {
        if ids.len() != x.m() {
            return Err(MkError::config(
                "groups",
                format!("has {} entries for {} kernels", ids.len(), x.m()),
            ));
        }
    }
    let (mut w, mut b, f) = match start {
        None => {
            let f = vec![0.0; x.n()];
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
    let prob = Problem { x, y, c, cfg };
    let mut smoothing = Smoothing::start(cfg.loss, x, y, c, start.is_some());
    let env = |s: &Option<Smoothing>| s.as_ref().map_or(cfg.loss.into(), |s| s.env);
    let mut group = match &cfg.penalty {
        BlockPenalty::Group(gp) => {
            let e = env(&smoothing);
            let d1: Vec<f64> = (0..x.n()).map(|i| c[i] * e.deriv(y[i], f[i] + b)).collect();
            // Every point in the zone of a smoothed loss, as for the damping's scales.
            let h: Vec<f64> = (0..x.n())
                .map(|i| match &smoothing {
                    Some(sm) => c[i] / sm.env.mu,
                    None => c[i] * e.deriv2(y[i], f[i] + b).max(1e-3),
                })
                .collect();
            let cold = if start.is_some() {
                GroupLevel::FACTOR.powi(Smoothing::WARM_SKIP)
            } else {
                1.0
            };
            let light = if smoothing.is_some() {
                GroupLevel::LIGHT
            } else {
                1.0
            };
            Some(GroupLevel::start(gp, x, &w, &d1, &h, light * cold))
        }
        _ => None,
    };
    // The penalty the steps minimise: `cfg.penalty`, or group's at its level.
    let mut level = group
        .as_ref()
        .map_or(cfg.penalty.clone(), GroupLevel::penalty);
    let mut pt = certify(
        &prob,
        env(&smoothing),
        &level,
        &w,
        b,
        f,
        &mut tracker,
        &mut best,
    );
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
        if let Some(sm) = smoothing.as_mut() {
            if sm.next_level(&pt, cfg.tol) {
                if let Some(gl) = group.as_mut() {
                    // The penalty's level follows the loss's.
                    gl.nu = (gl.nu * Smoothing::FACTOR).max(gl.floor);
                    level = gl.penalty();
                }
                let f = std::mem::take(&mut pt.f);
                pt = certify(&prob, sm.env, &level, &w, b, f, &mut tracker, &mut best);
                continue;
            }
        }
        let ws = match cfg.penalty {
            BlockPenalty::Sparse(_) => working_set(x, &w, &pt.viol),
            BlockPenalty::Lp { .. } | BlockPenalty::Group(_) => WorkingSet::all(x),
        };
        let mut hess = match kept.take() {
            Some((cols, h)) if cols == ws.cols => h,
            _ => {
                let e = env(&smoothing);
                let h2: Vec<f64> = y
                    .iter()
                    .zip(&pt.f)
                    .zip(c)
                    .map(|((&yi, &fi), &ci)| ci * e.deriv2(yi, fi + b))
                    .collect();
                // A smoothed level's curvature sits on the points of its zone only.
                let zone: Option<Vec<usize>> = smoothing
                    .as_ref()
                    .map(|_| (0..x.n()).filter(|&i| h2[i] > 0.0).collect());
                x.hessian(&ws.cols, &h2, zone.as_deref(), interrupt)?
            }
        };
        if let Some(sm) = &smoothing {
            sm.damp(&mut hess, &ws.cols);
        }
        let mut g: Vec<f64> = ws.cols.iter().map(|&j| pt.grad[j]).collect();
        g.push(pt.d1.iter().sum());
        let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
        let delta = match cfg.penalty {
            BlockPenalty::Sparse(sp) => {
                // The model is solved well below the current violation: its epochs cost
                // `|W|²`, no feature read, and an accurate step keeps Newton's fast local
                // convergence.
                let worst = pt
                    .viol
                    .iter()
                    .copied()
                    .fold(g[ws.cols.len()].abs(), f64::max);
                inner(&ws, &hess, &g, &wl, sp.weights(), 1e-3 * worst, interrupt)?
            }
            BlockPenalty::Lp { p } => lp_direction(&ws, &hess, &g, &wl, p)?,
            BlockPenalty::Group(_) => {
                let BlockPenalty::Group(gp) = &level else {
                    unreachable!("group's level is group")
                };
                group_direction(&ws, &hess, &g, &wl, gp)?
            }
        };
        if let Some(gl) = group.as_mut().filter(|_| smoothing.is_none()) {
            // With a smooth loss the level is solved once the Newton decrement is small.
            let change = ws.penalty_change(&level, &wl, &delta);
            let decrement = -model_decrease(&ws, &pt, &delta, change);
            if !gl.lowered && gl.nu > gl.floor && decrement <= 0.25 * cfg.tol * pt.primal.abs() {
                gl.nu *= GroupLevel::FACTOR;
                gl.lowered = true;
                level = gl.penalty();
                let f = std::mem::take(&mut pt.f);
                pt = certify(
                    &prob,
                    env(&smoothing),
                    &level,
                    &w,
                    b,
                    f,
                    &mut tracker,
                    &mut best,
                );
                continue;
            }
            gl.lowered = false;
        }
        steps += 1;
        let step = match &mut smoothing {
            Some(sm) => {
                let step = exact_step(&prob, sm.env, &level, &ws, &w, b, &pt, &delta);
                sm.adapt(step.t);
                Some(step)
            }
            None => line_search(&prob, &level, &ws, &w, b, &pt, &delta),
        };
        let Some(Step { t, f, flat }) = step else {
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
        pt = certify(
            &prob,
            env(&smoothing),
            &level,
            &w,
            b,
            f,
            &mut tracker,
            &mut best,
        );
        if let Some(sm) = smoothing.as_mut().filter(|s| s.env.mu > s.floor) {
            // The next level goes on where this one cannot.
            sm.flat = flat;
        } else if flat
            && pt.gap >= 0.5 * gap_before
            // A flat step on a group level has a small decrement: the next pass lowers it.
            && !group.as_ref().is_some_and(|gl| gl.nu > gl.floor)
        {
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
