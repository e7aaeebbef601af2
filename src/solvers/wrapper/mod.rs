//! `l1` and elastic-net MKL as a wrapper around one single-kernel solver (docs/mathematics.md
//! §2.11): SMO for the hinge-type losses (hinge, squared hinge, ε-insensitive), Newton with
//! conjugate gradients for the smooth ones (logistic, squared), both warm-started.
//!
//! # The problem in the kernel weights
//! By `r_1 s = min_{θ>0} ½ (s²/θ + r_1² θ)` (minimum at `θ = s/r_1`), the primal
//! `P = C Σ_i ℓ(y_i, f(x_i)) + Σ_m (r_1 s_m + r_2 s_m²/2)`, `s_m = ‖f_m‖`, is
//! `min_{θ ≥ 0} S(w(θ)) + ½ r_1² Σ_m θ_m` with `w_m = θ_m/(1 + r_2 θ_m)` and `S(w)` the
//! optimum of the single-kernel problem `min_f C Σ ℓ + ½ ‖f‖²` on `K_w = Σ_m w_m K_m`
//! (`Σ_m ‖f_m‖²/w_m = Σ_m (‖f_m‖²/θ_m + r_2 ‖f_m‖²)`). We iterate on the effective weights
//! `w ∈ [0, 1/r_2)^M` themselves:
//!
//! `J(w) = S(w) + Σ_m π(w_m)`,  `π(w) = ½ r_1² w/(1 − r_2 w)`,
//!
//! convex (`S` is a supremum of functions linear in `w`, `π` is convex). With the SVM's dual
//! point `β` (`f = K_w β + b`, `f_m = w_m K_m β`):
//!
//! - `∂J/∂w_m = −½ q_m + π'(w_m)`, `q_m = βᵀK_mβ`, `π'(w) = ½ r_1²/(1 − r_2 w)²`: at the
//!   optimum `q_m = r_1²/(1 − r_2 w_m)²` where `w_m > 0` and `q_m ≤ r_1²` where `w_m = 0`,
//!   the norm condition of the `l1` dual (docs/mathematics.md §1.1), so the certificate of
//!   SpicyMKL applies unchanged: `P` at `A[m] = w_m β`, `D` at the multiple of `β` that is
//!   best and feasible ([`best_dual`]).
//! - `∂²J/∂w_m∂w_k = g_mᵀ Z g_k + [m = k] π''(w_m)`, `g_m = (K_mβ)_F` on the free support
//!   vectors `F`, and `Z = A⁻¹ − A⁻¹11ᵀA⁻¹/(1ᵀA⁻¹1)` with `A = K_w[F, F] + R` (`R = I/C`
//!   for the squared hinge, 0 otherwise): the implicit function theorem on the SVM's
//!   optimality conditions restricted to `F`, `(K_wβ)_F + Rβ_F + ν1 = c_F`, `1ᵀβ = 0`
//!   (Chapelle & Rakotomamonjy's HessianMKL, "Second order optimization of kernel
//!   parameters", 2008, without its simplex constraint). For a smooth loss the same theorem
//!   on `β = −Cℓ'(K_wβ + b)` gives every point as free and `A = K_w + (CW)⁻¹`,
//!   `W = diag ℓ''(f)`: the matrix of Newton's own last system, so `Z g_k` for all the
//!   model's kernels are one block of conjugate-gradient solves with Newton's
//!   preconditioner (no `n × n` factorisation), or a factorisation through the capacitance
//!   matrix on a stack of factors.
//!
//! # The iteration
//! 1. The scale: along the uniform direction `w = tλ`, `λ_m = 1/M`, the derivative
//!    `−½ βᵀK_λβ + Σ_m λ_m π'(tλ_m)` changes sign where `βᵀK_λβ = r_1²/(1 − r_2t/M)²`; it is
//!    found by SMO solves on `t K_λ` alone (one combine, no further kernel reads), since
//!    a Newton step from a wrong scale crawls (`J` grows like `1/t` below the optimum).
//!    With more than `2 · START_KERNELS` kernels, only the `START_KERNELS` that this SVM's
//!    solution ranks first (largest `q_m`) start non-zero, with the same total weight.
//!    From [`SAMPLE_MIN`] points on, the search and the ranking run on a [`Sample`] of the
//!    points instead (no solve on all of them before the first iterate).
//! 2. Trust-region Newton steps: minimise the quadratic model over the box
//!    `d_m ≤ (R − 1) w_m` (a weight may drop to zero, or by the factor `R` at most once a
//!    refused step shrank `R` below its start; a kernel at zero with `∂J/∂w_m < 0` may
//!    enter up to a quarter of the mean weight times `R − 1`; at most [`MAX_MODEL`] kernels).
//!    The next SVM solve gives `J` at the trial point (its SMO dual value plus the penalty):
//!    a step that raised `J` is refused and retried from the same model with a smaller `R`;
//!    `R` doubles after a step that achieved half the predicted decrease.
//!
//! 3. Working sets (docs/mathematics.md §2.11), with whole-problem checks on the schedule of
//!    [`CheckSchedule`]: for the hinge-type losses a set of points `W` (the first iterate's
//!    support vectors and margin violators), whose restricted iterates solve SMO on
//!    `K_m[W, W]` and certify the whole problem's `D` (their `P` is recorded as `+∞`); for the
//!    smooth losses, whose dense `β` makes the forms read every kernel whole, a set of kernels
//!    (those with a weight or a negative gradient), whose restricted iterates read only theirs
//!    and certify the whole problem's `P` (their `D` bounds the restricted problem only).
//!
//! Every accepted iterate is certified with the whole problem's `P`, `D` and gap (outside the
//! working sets); each costs one combine of the active kernels, one warm-started solve, the
//! forms `q_m` of every kernel (SMO: the rows of the support vectors only) and `K_mβ` for the
//! model's kernels (the smooth losses' dense `β`: every `K_mβ` in the same one pass as the
//! forms).
//!
//! On kernels computed on demand (hinge-type losses) nothing `n × n` is formed: SMO reads the
//! columns of `K_w` through its row cache, and the Hessian needs `K_w[F, F]` and `K_kβ` on the
//! support vectors only (`|S|²` evaluations per kernel, from views of those points).

mod qp;

use faer::Mat;
use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{support_products, weighted_factors, CombinedKernel, KernelStack};
use crate::linalg::{dot, Cholesky};
use crate::losses::{costs, Loss};
use crate::penalties::duals::best_dual;
use crate::penalties::{kernel_weights, SparsePenalty};
use crate::result::{FitResult, PsdWitness, SolveStatus};
use crate::solvers::points::{gather_points, new_points, scatter_points, PointSet, MIN_POINTS};
use crate::solvers::schedule::{CheckSchedule, Settled};
use crate::solvers::single::{KernelOp, SingleKernel};
use crate::solvers::tracker::{Model, Tracker};
use crate::solvers::witness::PsdCheck;

/// The most exact SMO solve asked for when the model stalls above `tol`.
const MIN_INNER_TOL: f64 = 1e-12;

/// The kernels that start with a non-zero weight when there are more than twice as many.
const START_KERNELS: usize = 20;

/// The accuracy of the scale search's solves (SMO: maximal KKT violation; Newton: relative
/// decrease): the scale is bracketed within a factor 1.2 only.
const SCALE_TOL: f64 = 1e-3;

/// Within this factor of its stationary value, `βᵀK_λβ` predicts the scale (its last step is
/// taken without a solve).
const PREDICTED_RATIO: f64 = 4.0;

/// The trust region's first ratio `R`.
const START_RADIUS: f64 = 4.0;

/// The smallest ratio `R`: a step refused there tightens the SVM's accuracy.
const MIN_RADIUS: f64 = 1.05;

/// The most kernels a Newton model takes (its QP costs `O(s³)` per change of its active set):
/// beyond, those with the largest `|∂J/∂w_m| · max(w_m, mean w)` (the decrease a first-order
/// step on them could give); the others keep their weights for that step.
const MAX_MODEL: usize = 200;

/// The most kernels a Newton model of a smooth loss takes: its Hessian costs one product of
/// `K_w` with that many columns per conjugate-gradient iteration.
const MAX_MODEL_SMOOTH: usize = 40;

/// The smooth losses' first Newton accuracy (a relative decrease of the objective); then
/// `0.03 ×` the gap, as the ℓp wrapper's (docs/mathematics.md §2.11).
const NEWTON_START_TOL: f64 = 1e-4;

/// The relative accuracy of the smooth losses' Hessian systems: the trust region absorbs a
/// model this inexact.
const HESSIAN_RTOL: f64 = 1e-2;

/// The most values `M·n` of all products `K_mβ` kept at once (128 MB).
const ALL_PRODUCTS_MAX: usize = 1 << 24;

/// Settings of an `l1` / elastic-net fit by the SVM wrapper.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WrapperConfig {
    pub penalty: SparsePenalty,
    /// Loss weight.
    pub c: f64,
    /// Any loss: SMO solves the single-kernel problem of the hinge-type ones, Newton that of
    /// the smooth ones.
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// SVM solves at most (refused trial steps included).
    pub max_iter: usize,
    /// Accuracy of each SMO solve (maximal KKT violation): the Newton model is the derivative
    /// of the exact solution, so it is asked from the first step. (The smooth losses'
    /// Newton solves follow the gap instead.)
    pub inner_tol: f64,
}

impl Default for WrapperConfig {
    fn default() -> Self {
        WrapperConfig {
            penalty: SparsePenalty::L1,
            c: 1.0,
            loss: Loss::Hinge,
            tol: 1e-3,
            max_iter: 200,
            inner_tol: 1e-7,
        }
    }
}

impl WrapperConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::validate_common(self.c, self.tol, self.max_iter)?;
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        self.penalty.validate()
    }
}

/// The penalty `π(w) = ½ r_1² w/(1 − r_2 w)` on an effective weight, and its derivatives.
#[derive(Debug, Clone, Copy)]
struct Penalty {
    r1: f64,
    r2: f64,
}

impl Penalty {
    fn value(&self, w: f64) -> f64 {
        0.5 * self.r1 * self.r1 * w / (1.0 - self.r2 * w)
    }

    fn d1(&self, w: f64) -> f64 {
        0.5 * self.r1 * self.r1 / (1.0 - self.r2 * w).powi(2)
    }

    fn d2(&self, w: f64) -> f64 {
        self.r1 * self.r1 * self.r2 / (1.0 - self.r2 * w).powi(3)
    }

    /// The supremum `1/r_2` of the effective weights (∞ for `l1`).
    fn cap(&self) -> f64 {
        if self.r2 > 0.0 {
            1.0 / self.r2
        } else {
            f64::INFINITY
        }
    }
}

/// The second-order model of `J` at an iterate, on the kernels `vars`.
struct NewtonModel {
    vars: Vec<usize>,
    grad: Vec<f64>,
    hess: Mat<f64>,
    /// `J` at the iterate and its weights.
    j: f64,
    w: Vec<f64>,
}

impl NewtonModel {
    /// The trust-region step from the model with ratio `r`: the new weights and the predicted
    /// decrease of `J`.
    fn step(&self, r: f64, pen: &Penalty) -> (Vec<f64>, f64) {
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
fn free_points(beta: &[f64], upper: &[f64]) -> Vec<usize> {
    (0..beta.len())
        .filter(|&i| {
            let floor = 1e-12 * if upper[i].is_finite() { upper[i] } else { 1.0 };
            beta[i].abs() > floor && beta[i].abs() < upper[i] * (1.0 - 1e-12)
        })
        .collect()
}

/// `H_S = Gᵀ Z G` (module docs) for the kernels `vars`, `prod` holding `K_kβ` for the kernels
/// `0, 1, …` of its numbering, one after another (`n` values each, of which the free points'
/// are read), and `a` the block `K_w[F, F]` of the free points `free`.
fn svm_hessian(
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

/// The combined kernel `K_w` of an iterate: dense, or `K_w = UUᵀ` (`U` column-major `n × R`)
/// for the smooth losses on a stack of factors, where Newton and the Hessian's systems form
/// nothing `n × n` (docs/mathematics.md §3.2), or on a stack computed on demand its weights
/// `w` only (SMO computes the columns it reads, through a row cache).
enum Combined {
    Dense(Vec<f64>),
    Factor(Vec<f64>),
    OnDemand(Vec<f64>),
}

impl Combined {
    /// `K_w` of `stack`: its factors when `factors` and the stack stores them, else dense (in
    /// the buffer `self` already holds).
    fn set(&mut self, stack: &dyn KernelStack, w: &[f64], factors: bool) {
        if stack.on_demand().is_some() {
            *self = Combined::OnDemand(w.to_vec());
            return;
        }
        if let Some(u) = factors.then(|| weighted_factors(stack, w)).flatten() {
            *self = Combined::Factor(u);
            return;
        }
        let n = stack.n();
        let mut k = match std::mem::replace(self, Combined::Dense(Vec::new())) {
            Combined::Dense(k) => k,
            Combined::Factor(_) | Combined::OnDemand(_) => Vec::new(),
        };
        k.resize(n * n, 0.0);
        stack.combine(w, &mut k);
        *self = Combined::Dense(k);
    }

    /// The stored kernel (`fit_wrapper_weighted` refuses the losses that would need one on a
    /// stack computed on demand, and SMO reads that stack's columns itself).
    fn op(&self) -> KernelOp<'_> {
        match self {
            Combined::Dense(k) => KernelOp::Dense(k),
            Combined::Factor(u) => KernelOp::Factor(u),
            Combined::OnDemand(_) => unreachable!("SMO solves on demand without an operator"),
        }
    }

    /// `out = t K` (the factor scaled by `√t`).
    fn scaled_into(&self, t: f64, out: &mut Combined) {
        let mut buf = match std::mem::replace(out, Combined::Dense(Vec::new())) {
            Combined::Dense(b) | Combined::Factor(b) | Combined::OnDemand(b) => b,
        };
        buf.clear();
        *out = match self {
            Combined::OnDemand(w) => {
                buf.extend(w.iter().map(|v| t * v));
                Combined::OnDemand(buf)
            }
            Combined::Dense(k) => {
                buf.extend(k.iter().map(|v| t * v));
                Combined::Dense(buf)
            }
            Combined::Factor(u) => {
                let s = t.sqrt();
                buf.extend(u.iter().map(|v| s * v));
                Combined::Factor(buf)
            }
        };
    }

    /// `tr K` of a stored kernel on `n` points (NaN on demand: [`Combined::trace`] reads those).
    fn trace_of(&self, n: usize) -> f64 {
        match self {
            Combined::Dense(k) => (0..n).map(|i| k[i * n + i]).sum(),
            Combined::Factor(u) => u.iter().map(|x| x * x).sum(),
            Combined::OnDemand(_) => f64::NAN,
        }
    }

    /// `tr K` (of `stack`'s kernels on demand, else [`Combined::trace_of`]).
    fn trace(&self, stack: &dyn KernelStack) -> f64 {
        let n = stack.n();
        match self {
            Combined::Dense(_) | Combined::Factor(_) => self.trace_of(n),
            Combined::OnDemand(w) => {
                let mut d = vec![0.0; n];
                let mut total = 0.0;
                for (m, &wm) in w.iter().enumerate().filter(|(_, &v)| v != 0.0) {
                    stack.diag(m, &mut d);
                    total += wm * d.iter().sum::<f64>();
                }
                total
            }
        }
    }

    /// Solves the single-kernel problem on this kernel (of `stack`) by `solver`, warm-started,
    /// to accuracy `tol`; returns `f = Kβ` (on demand from SMO's final gradient).
    fn solve(
        &self,
        solver: &mut SingleKernel,
        stack: &dyn KernelStack,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<Vec<f64>> {
        if let Combined::OnDemand(w) = self {
            let od = stack.on_demand().ok_or_else(|| {
                MkError::Unsupported("weights on demand of a stored stack".into())
            })?;
            return solver.solve_on_demand(od, w, tol, interrupt);
        }
        solver.solve_op(self.op(), tol, interrupt)?;
        let mut f = vec![0.0; stack.n()];
        self.op().matvec(solver.beta(), &mut f);
        Ok(f)
    }

    /// `K[F, F]` of the points `free`, row-major.
    fn block(&self, stack: &dyn KernelStack, free: &[usize]) -> Vec<f64> {
        let kernel = match (self, stack.on_demand()) {
            (Combined::OnDemand(w), Some(od)) => CombinedKernel::OnDemand(od, w),
            (Combined::Dense(k), _) => CombinedKernel::Stored(k, stack.n()),
            _ => unreachable!("SMO runs on a dense kernel or on demand"),
        };
        kernel.block(free)
    }
}

/// The solution of the single-kernel problem on `K_w` as the wrapper uses it.
struct Point {
    /// The dual point `β`: SMO's, or for the smooth losses the natural point
    /// `−Cℓ'(f + b)` of Newton's model, centred (feasible, docs/mathematics.md §1.4).
    beta: Vec<f64>,
    /// `K_w β`.
    f: Vec<f64>,
    /// The intercept that minimises the loss for `f`.
    b: f64,
    /// `S(w)`: SMO's dual value (a lower bound), or the primal value at `β` (an upper bound).
    value: f64,
}

/// Solves the single-kernel problem on `kw` (of `stack`) to accuracy `tol` (warm-started).
fn solve_point(
    solver: &mut SingleKernel,
    stack: &dyn KernelStack,
    kw: &Combined,
    y: &[f64],
    c: &[f64],
    tol: f64,
    interrupt: &dyn Interrupt,
) -> Result<Point> {
    let loss = solver.loss();
    let mut f = kw.solve(solver, stack, tol, interrupt)?;
    let b = loss.best_intercept(y, &f, c, solver.intercept());
    if solver.is_sparse() {
        return Ok(Point {
            beta: solver.beta().to_vec(),
            f,
            b,
            value: solver.svm_dual_value().unwrap_or(f64::NEG_INFINITY),
        });
    }
    // Newton stops inexactly: its `β` can leave the conjugate's domain (logistic), so the
    // model and the certificate both move to the natural point of its model (one more
    // product with `K_w`), where `q_m`, `P` and `D` all belong to one `β`.
    let beta = loss.centre_dual(y, &loss.natural_dual(y, &f, b, c), c);
    kw.op().matvec(&beta, &mut f);
    let b = loss.best_intercept(y, &f, c, b);
    let value = loss.weighted_total(y, &f, b, c) + 0.5 * dot(&beta, &f);
    solver.set_newton_point(&beta, b);
    Ok(Point { beta, f, b, value })
}

/// The scale `t` of the uniform weights `w = t/M` where `J` is stationary along them (step 1
/// of the module docs), from solves on `t K_λ`; `k_lambda` is `K_λ`, `kw` receives `t K_λ`
/// and `solver` ends warm near it.
fn scale_search(
    solver: &mut SingleKernel,
    stack: &dyn KernelStack,
    k_lambda: &Combined,
    kw: &mut Combined,
    pen: &Penalty,
    interrupt: &dyn Interrupt,
) -> Result<f64> {
    let t0 = unit_mean_diagonal(k_lambda.trace(stack), stack.n());
    let t = bracket_scale(solver, stack, k_lambda, kw, t0, pen, interrupt)?;
    k_lambda.scaled_into(t, kw);
    Ok(t)
}

/// The scale that gives a kernel of trace `trace` on `n` points a unit mean diagonal: the
/// search's start.
fn unit_mean_diagonal(trace: f64, n: usize) -> f64 {
    if trace > 0.0 && trace.is_finite() {
        n as f64 / trace
    } else {
        1.0
    }
}

/// From this many points on, the start is found on a [`Sample`] of them.
const SAMPLE_MIN: usize = 800;

/// The points of the [`Sample`] (at least; a tenth of them on larger problems).
const SAMPLE_POINTS: usize = 400;

/// The start of a fit on many points, found on an evenly spaced sample `S` of `s` of the `n`
/// points whose loss weights are multiplied by `n/s` (docs/mathematics.md §2.11): that problem's
/// loss is an unbiased estimate of the whole one's, so its solution approximates the whole
/// problem's, at `(s/n)²` of a solve's cost, and the scale search and the ranking of the start
/// kernels read `K_m[S, S]` only (`M s²` values, where the whole search combines `K_λ` and
/// ranks with a pass over the stack).
struct Sample {
    rows: Vec<usize>,
    solver: SingleKernel,
    /// `K_λ[S, S]`, `λ_m = 1/M`.
    k_lambda: Combined,
}

impl Sample {
    /// `None` on fewer than [`SAMPLE_MIN`] points, on kernels computed on demand (the whole
    /// search then reads only SMO's columns), or when the sample misses a class.
    fn new(stack: &dyn KernelStack, y: &[f64], c: &[f64], loss: Loss) -> Result<Option<Sample>> {
        let n = y.len();
        if n < SAMPLE_MIN || stack.on_demand().is_some() {
            return Ok(None);
        }
        let s = SAMPLE_POINTS.max(n / 10);
        let rows: Vec<usize> = (0..s).map(|j| j * n / s).collect();
        let ys: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
        if loss.is_classification() && !(ys.contains(&1.0) && ys.contains(&-1.0)) {
            return Ok(None);
        }
        let cs: Vec<f64> = rows.iter().map(|&i| c[i] * n as f64 / s as f64).collect();
        let solver = SingleKernel::new(loss, &cs, &ys)?;
        let inv_m = 1.0 / stack.m() as f64;
        let mut k = vec![0.0; s * s];
        k.par_chunks_mut(s).zip(&rows).for_each(|(out, &i)| {
            let mut col = vec![0.0; s];
            for m in 0..stack.m() {
                stack.column_at(m, i, &rows, &mut col);
                for (o, v) in out.iter_mut().zip(&col) {
                    *o += inv_m * v;
                }
            }
        });
        Ok(Some(Sample {
            rows,
            solver,
            k_lambda: Combined::Dense(k),
        }))
    }

    /// The scale of [`scale_search`] on the sample.
    fn scale(
        &mut self,
        stack: &dyn KernelStack,
        pen: &Penalty,
        interrupt: &dyn Interrupt,
    ) -> Result<f64> {
        let s = self.rows.len();
        let t0 = unit_mean_diagonal(self.k_lambda.trace_of(s), s);
        let mut kw = Combined::Dense(Vec::new());
        bracket_scale(
            &mut self.solver,
            stack,
            &self.k_lambda,
            &mut kw,
            t0,
            pen,
            interrupt,
        )
    }

    /// The forms `β_Sᵀ K_m[S, S] β_S` of the sample's solution, every kernel (the ranking of
    /// the start kernels).
    fn forms(&self, stack: &dyn KernelStack) -> Vec<f64> {
        let beta = self.solver.beta();
        let mut q = vec![0.0; stack.m()];
        q.par_iter_mut().enumerate().for_each(|(m, qm)| {
            let mut col = vec![0.0; self.rows.len()];
            *qm = self
                .rows
                .iter()
                .zip(beta)
                .map(|(&i, &bi)| {
                    stack.column_at(m, i, &self.rows, &mut col);
                    bi * dot(&col, beta)
                })
                .sum();
        });
        q
    }

    /// SMO's warm start on all `n` points: the sample's QP variables times `s/n` (in the box and
    /// on `yᵀα = 0` as they are), zero elsewhere; `None` for Newton.
    fn warm_start(&self, n: usize) -> Option<Vec<f64>> {
        let alpha = self.solver.alpha()?;
        let s = self.rows.len();
        let scale = s as f64 / n as f64;
        // ε-SVR's variables are `[α; α*]`.
        let halves = alpha.len() / s;
        let mut out = vec![0.0; halves * n];
        for h in 0..halves {
            for (a, &i) in self.rows.iter().enumerate() {
                out[h * n + i] = scale * alpha[h * s + a];
            }
        }
        Some(out)
    }
}

/// The bracketing of [`scale_search`] from `t`: solves on `t K_λ` until `βᵀK_λβ` is within a
/// factor 1.2 of its stationary value, or until the last step predicts that ([`PREDICTED_RATIO`]);
/// `solver` ends warm at the last `t` solved (`stack` is only read when `K_λ` is computed on
/// demand).
fn bracket_scale(
    solver: &mut SingleKernel,
    stack: &dyn KernelStack,
    k_lambda: &Combined,
    kw: &mut Combined,
    mut t: f64,
    pen: &Penalty,
    interrupt: &dyn Interrupt,
) -> Result<f64> {
    let m = stack.m();
    let cap = pen.cap() * m as f64;
    t = t.min(0.5 * cap);
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut kb = vec![0.0; solver.beta().len()];
    for _ in 0..40 {
        interrupt.check()?;
        k_lambda.scaled_into(t, kw);
        let v = if let Combined::OnDemand(_) = kw {
            // `βᵀK_λβ` from SMO's `f = tK_λβ`: no product on demand.
            let f = kw.solve(solver, stack, SCALE_TOL, interrupt)?;
            dot(&f, solver.beta()) / t
        } else {
            solver.solve_op(kw.op(), SCALE_TOL, interrupt)?;
            k_lambda.op().matvec(solver.beta(), &mut kb);
            dot(&kb, solver.beta())
        };
        let target = 2.0 * pen.d1(t / m as f64);
        let ratio = v / target;
        if !(ratio.is_finite() && ratio > 0.0) || (ratio.ln()).abs() < 1.2f64.ln() {
            break;
        }
        if ratio > 1.0 {
            lo = t;
        } else {
            hi = t;
        }
        // Near the scale `βᵀK_λβ` falls like `1/t` (measured in docs/mathematics.md §2.11):
        // that step lands within the factor 1.2 without a solve to confirm it, when the
        // target is constant (`l1`; the elastic net's grows with `t`).
        let predicted = pen.r2 == 0.0 && (ratio.ln()).abs() < PREDICTED_RATIO.ln();
        t = if predicted {
            (t * ratio.sqrt()).max(lo).min(hi)
        } else if lo > 0.0 && hi.is_finite() {
            (lo * hi).sqrt()
        } else {
            t * ratio.sqrt().clamp(0.01, 100.0)
        };
        if t >= cap {
            t = 0.5 * (lo + cap);
        }
        if predicted {
            break;
        }
    }
    Ok(t)
}

/// The first iterate (step 1 of the module docs): its weights, with `kw` holding `K_w` and
/// `solver` warm near it.
#[allow(clippy::too_many_arguments)]
fn start(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    solver: &mut SingleKernel,
    kw: &mut Combined,
    pen: &Penalty,
    factors: bool,
    interrupt: &dyn Interrupt,
) -> Result<Vec<f64>> {
    let m = stack.m();
    if pen.r1 > 0.0 {
        if let Some(mut sample) = Sample::new(stack, y, c, solver.loss())? {
            let t = sample.scale(stack, pen, interrupt)?;
            let w = if m <= 2 * START_KERNELS {
                vec![t / m as f64; m]
            } else {
                ranked_start(&sample.forms(stack), t, pen)
            };
            if let Some(alpha) = sample.warm_start(stack.n()) {
                solver.set_warm_start(alpha);
            }
            kw.set(stack, &w, factors);
            return Ok(w);
        }
    }
    let mut k_lambda = Combined::Dense(Vec::new());
    k_lambda.set(stack, &vec![1.0 / m as f64; m], factors);
    if pen.r1 == 0.0 {
        // No ℓ1 part: every weight sits at its supremum, one SVM on Σ_m K_m / r_2.
        k_lambda.scaled_into(m as f64 * pen.cap(), kw);
        return Ok(vec![pen.cap(); m]);
    }
    let t = scale_search(solver, stack, &k_lambda, kw, pen, interrupt)?;
    if m <= 2 * START_KERNELS {
        return Ok(vec![t / m as f64; m]);
    }
    drop(k_lambda);
    let mut q = vec![0.0; m];
    stack.quad_forms(solver.beta(), &mut q);
    let w = ranked_start(&q, t, pen);
    kw.set(stack, &w, factors);
    Ok(w)
}

/// Most weights end at zero: the start puts the total weight `t` on the [`START_KERNELS`]
/// kernels that the scaled SVM's solution ranks first (largest `q_m`, the most negative
/// `∂J/∂w_m`); the others enter when their gradient turns negative.
fn ranked_start(q: &[f64], t: f64, pen: &Penalty) -> Vec<f64> {
    let m = q.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| q[b].total_cmp(&q[a]));
    // (Below the elastic net's supremum `1/r_2`: halfway from `t/M` at most.)
    let each = t / m as f64;
    let start = (t / START_KERNELS as f64).min(each + 0.5 * (pen.cap() - each));
    let mut w = vec![0.0; m];
    for &kk in &order[..START_KERNELS] {
        w[kk] = start;
    }
    w
}

/// The forms `q_m = βᵀK_mβ` of the kernels `set` into `q` (of every kernel when `None`; the
/// others' are set to 0, so that the gradient and the dual read those of the problem
/// restricted to `set`); for a dense `β` (the smooth losses) also their products `K_mβ` (laid
/// out for all `M` kernels, zero off `set`, when `M·n` fits in [`ALL_PRODUCTS_MAX`]): the same
/// one pass over the kernels gives both, where the Hessian's products would read them again.
fn forms(
    stack: &dyn KernelStack,
    beta: &[f64],
    dense: bool,
    set: Option<&[usize]>,
    q: &mut [f64],
) -> Option<Vec<f64>> {
    let (m, n) = (stack.m(), stack.n());
    let all: Vec<usize>;
    let set = match set {
        Some(s) => {
            q.fill(0.0);
            s
        }
        None => {
            all = (0..m).collect();
            &all
        }
    };
    if !dense || m * n > ALL_PRODUCTS_MAX {
        let mut qs = vec![0.0; set.len()];
        stack.quad_forms_subset(beta, set, &mut qs);
        set.iter().zip(qs).for_each(|(&k, v)| q[k] = v);
        return None;
    }
    let mut local = vec![0.0; set.len() * n];
    stack.matvecs_subset(beta, set, &mut local);
    let mut prod = vec![0.0; m * n];
    for (&k, pk) in set.iter().zip(local.chunks_exact(n)) {
        q[k] = dot(pk, beta);
        prod[k * n..(k + 1) * n].copy_from_slice(pk);
    }
    Some(prod)
}

/// The certificate values of an iterate: `P` at `A[m] = scale · w_m β` (lifted onto the
/// margin for the hinge), `D` at the best feasible multiple of `β` (module docs), and the
/// witness check of `β`.
struct Certificate {
    primal: f64,
    dual: f64,
    witness: Option<PsdWitness>,
    scale: f64,
    b: f64,
    /// `‖f_m‖` at the model, `scale · w_m sqrt(q_m)`.
    norms: Vec<f64>,
}

impl Certificate {
    /// The values at `point` of the problem of `y` and `c` (the whole one, or a restricted one
    /// whose `P` bounds only itself), with the forms `q` of `β` on every kernel.
    fn new(
        psd: &PsdCheck,
        cfg: &WrapperConfig,
        y: &[f64],
        c: &[f64],
        w: &[f64],
        q: &[f64],
        point: &Point,
    ) -> Self {
        let (r1, r2) = cfg.penalty.weights();
        let norms: Vec<f64> = w
            .iter()
            .zip(q)
            .map(|(wk, qk)| wk * qk.max(0.0).sqrt())
            .collect();
        let penalty_at = |t: f64| -> f64 {
            norms
                .iter()
                .map(|s| r1 * t * s + 0.5 * r2 * (t * s).powi(2))
                .sum()
        };
        let primal = cfg.loss.weighted_total(y, &point.f, point.b, c) + penalty_at(1.0);
        // Points a hair inside the margin (SMO's tolerance) cost `C` each: at large `C` the
        // model scaled onto the margin is the better primal point (lp's certificate does the
        // same).
        let (scale, b, primal) = cfg
            .loss
            .lift_to_margin_with(y, &point.f, point.b, c, penalty_at, primal)
            .unwrap_or((1.0, point.b, primal));
        let roots: Vec<f64> = q.iter().map(|v| v.max(0.0).sqrt()).collect();
        let beta = &point.beta;
        Certificate {
            primal,
            dual: best_dual(&roots, y, beta, c, cfg.loss, cfg.penalty.into()),
            witness: psd.all().scan(beta, w.len(), |kk| q[kk]),
            scale,
            b,
            norms: norms.iter().map(|s| scale * s).collect(),
        }
    }

    /// Records these values of the whole problem at `point` (weights `w`) and returns the
    /// relative gap.
    fn record(self, tracker: &mut Tracker, cfg: &WrapperConfig, w: &[f64], point: &Point) -> f64 {
        let active = w.iter().filter(|&&v| v > 0.0).count();
        let Certificate {
            primal,
            dual,
            witness,
            scale,
            b,
            norms,
        } = self;
        tracker.record_with(primal, (dual, witness), active, || {
            // A kernel whose norm is 0 (a zero kernel that still has a weight) carries no
            // model.
            let w: Vec<f64> = w
                .iter()
                .zip(&norms)
                .map(|(&wk, &s)| if s > 0.0 { wk } else { 0.0 })
                .collect();
            Model::outer(
                &w,
                &point.beta,
                scale,
                b,
                kernel_weights(cfg.penalty, &norms),
                norms.clone(),
            )
        })
    }
}

/// The kernels of the next Newton model: those with a weight or a negative gradient, at most
/// `cap` of them, by the decrease a first-order step on them could give
/// (`|∂J/∂w_m| · max(w_m, mean w)`).
fn model_kernels(w: &[f64], grad: &[f64], cap: usize) -> Vec<usize> {
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
fn s_hessian(
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
    let (upper, ridge): (Vec<f64>, Vec<f64>) = match cfg.loss {
        Loss::SquaredHinge => (
            vec![f64::INFINITY; n],
            c.iter().map(|ci| 1.0 / ci + 1e-10 * mean_diag).collect(),
        ),
        _ => (c.to_vec(), vec![1e-10 * mean_diag; n]),
    };
    let free = free_points(&point.beta, &upper);
    let local: Vec<usize> = (0..s).collect();
    svm_hessian(kw.block(stack, &free), n, &free, &ridge, prod, &local)
}

/// Fits `l1` or elastic-net MKL with the SVM wrapper.
pub fn fit_wrapper(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &WrapperConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_wrapper_weighted(stack, y, None, cfg, interrupt)
}

/// [`fit_wrapper`] with a weight per sample on the loss (`C Σ_i w_i ℓ(y_i, f_i)`; SMO's boxes
/// `0 ≤ α_i ≤ C w_i`).
pub fn fit_wrapper_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_from(stack, y, sample_weight, cfg, MIN_POINTS, interrupt)
}

/// [`fit_wrapper_weighted`] with a working set of points from `min_points` points on (the
/// hinge-type losses; the tests move the threshold).
fn fit_from(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    min_points: usize,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::validate_targets(stack.n(), y)?;
    let c = &costs(cfg.c, sample_weight, y.len())?;
    let (m, n) = (stack.m(), stack.n());
    let (r1, r2) = cfg.penalty.weights();
    let pen = Penalty { r1, r2 };
    let mut solver = SingleKernel::new(cfg.loss, c, y)?;
    // The smooth losses' `β` is dense; Newton then works on factors where the stack has them.
    let smooth = !solver.is_sparse();
    if smooth && stack.on_demand().is_some() {
        return Err(MkError::Unsupported(
            "the wrapper fits kernels computed on demand with the hinge-type losses only \
             (Newton's systems of the smooth losses are n × n)"
                .into(),
        ));
    }
    let mut kw = Combined::Dense(Vec::new());
    let mut w = start(stack, y, c, &mut solver, &mut kw, &pen, smooth, interrupt)?;
    let mut tracker = Tracker::new(interrupt);
    let psd = PsdCheck::new(stack);
    let mut q = vec![0.0; m];
    let mut radius = START_RADIUS;
    // The model of the last accepted iterate and the decrease it predicted for the step taken.
    let mut model: Option<(NewtonModel, f64)> = None;
    let mut status = SolveStatus::MaxIterations;
    let mut n_iter = 0;
    // Whether `kw` already holds `K_w` (after the start, or a retry at the same weights).
    let mut kw_is_w = true;
    // As the other wrappers' floor (`GapSchedule`): the SVM's accuracy must not bound the gap.
    // Newton's (a relative decrease of the objective) follows the gap instead.
    let mut inner_tol = if smooth {
        NEWTON_START_TOL.min(0.1 * cfg.tol)
    } else {
        cfg.inner_tol.min(0.1 * cfg.tol)
    }
    .max(MIN_INNER_TOL);
    // The working set of points of the hinge-type losses (module docs), formed from the first
    // whole-problem iterate from `min_points` on; `ws` is `None` while the whole problem is
    // iterated.
    let use_ws = !smooth && r1 > 0.0 && n >= min_points;
    let mut ws: Option<PointSet> = None;
    // The smooth losses' working set of kernels (module docs), sorted; `None` while every
    // kernel's form is read.
    let mut kset: Option<Vec<usize>> = None;
    let mut checks = CheckSchedule::new();
    while n_iter < cfg.max_iter {
        interrupt.check()?;
        n_iter += 1;
        let restricted = ws.is_some() || kset.is_some();
        // The iterated problem: its kernels, labels, loss weights, solver, and (restricted)
        // the indices of its points.
        let (pstack, py, pc, psolver, pidx): (_, &[f64], &[f64], _, _) = match ws.as_mut() {
            Some(set) => (
                set.stack.stack(),
                &set.y,
                &set.c,
                &mut set.solver,
                Some(set.stack.indices()),
            ),
            None => (stack, y, c, &mut solver, None),
        };
        if !kw_is_w {
            kw.set(pstack, &w, smooth);
        }
        kw_is_w = false;
        let point = solve_point(psolver, pstack, &kw, py, pc, inner_tol, interrupt)?;
        let j = point.value + w.iter().map(|&v| pen.value(v)).sum::<f64>();
        if let Some((prev, pred)) = &mut model {
            let rose = j.is_nan() || j > prev.j + 1e-12 * prev.j.abs();
            if rose && radius <= MIN_RADIUS {
                // Refused in the smallest region: `J`'s noise (the SVM's accuracy) is all the
                // model can still see; a more exact SVM, else a stall.
                if inner_tol <= MIN_INNER_TOL && stalls(restricted, &mut checks) {
                    status = SolveStatus::Stalled;
                    break;
                }
                inner_tol = (0.01 * inner_tol).max(MIN_INNER_TOL);
                w = prev.w.clone();
                model = None;
                radius = START_RADIUS;
                continue;
            }
            if rose {
                // Refused: retry from the same model in a smaller region.
                radius = radius.sqrt().max(MIN_RADIUS);
                let (next, p) = prev.step(radius, &pen);
                w = next;
                *pred = p;
                continue;
            }
            let ratio = (prev.j - j) / pred.max(f64::MIN_POSITIVE);
            if ratio > 0.5 {
                radius = (2.0 * radius).min(1e6);
            } else if ratio < 0.1 {
                radius = radius.sqrt().max(MIN_RADIUS);
            }
        }
        if use_ws && pidx.is_none() && n_iter == 1 {
            // The support vectors and margin violators of the first iterate form the working
            // set: `β` is zero off it, so its forms read the set's kernels only, and the next
            // iterates are the restricted problem's, from this `w`.
            let alpha = psolver.alpha().unwrap_or(&[]).to_vec();
            let z: Vec<f64> = point.f.iter().map(|fi| fi + point.b).collect();
            let idx = new_points(cfg.loss, y, &z, &alpha, &[]);
            if let Some(set) = PointSet::new(stack, y, c, cfg.loss, &idx, &alpha)? {
                let beta_w = gather_points(&point.beta, n, set.idx());
                set.stack.stack().quad_forms(&beta_w, &mut q);
                let cert = Certificate::new(&psd, cfg, y, c, &w, &q, &point);
                let dual = cert.dual;
                if cert.record(&mut tracker, cfg, &w, &point) <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                checks.start(tracker.certified(dual));
                ws = Some(set);
                kw_is_w = false;
                continue;
            }
        }
        let mut all_prod = forms(pstack, &point.beta, smooth, kset.as_deref(), &mut q);
        let cert = Certificate::new(&psd, cfg, py, pc, &w, &q, &point);
        let gap = if let Some(idx) = pidx {
            // A restricted iterate: `D` is the whole problem's (β = 0 off W), `P` bounds the
            // restricted problem only.
            tracker.note(cert.witness);
            let rgap = checks.restricted_gap(cert.primal, tracker.certified(cert.dual));
            if checks.due_after(rgap, cfg.tol) {
                let alpha = scatter_points(psolver.alpha().unwrap_or(&[]), idx, n);
                let (gap, more) = whole_check(
                    stack,
                    y,
                    c,
                    cfg,
                    &psd,
                    &mut tracker,
                    &w,
                    &q,
                    &point,
                    idx,
                    &alpha,
                );
                if gap <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                match checks.settle(!more.is_empty()) {
                    Settled::Grew => {
                        // A larger problem, whose `J` the last model does not predict.
                        model = None;
                        let set = ws.as_mut().expect("restricted iterates have a working set");
                        if !set.grow(stack, y, c, &more, &alpha)? {
                            ws = None;
                            solver.set_warm_start(alpha);
                        }
                        continue;
                    }
                    Settled::Stalled => {
                        status = SolveStatus::Stalled;
                        break;
                    }
                    Settled::BackedOff => {}
                }
            } else {
                let active = w.iter().filter(|&&v| v > 0.0).count();
                tracker.record_with(f64::INFINITY, (cert.dual, None), active, || unreachable!());
            }
            rgap
        } else if let Some(set) = &kset {
            // A kernel-restricted iterate (smooth losses): `P` is the whole problem's (`w = 0`
            // off the set), `D` bounds the restricted problem only and is not recorded.
            let rgap = checks.restricted_gap(cert.primal, cert.dual);
            if checks.due_after(rgap, cfg.tol) {
                // Whole-problem check: every form, in the one pass that also gives the
                // products of the kernels that join.
                all_prod = forms(pstack, &point.beta, smooth, None, &mut q);
                let cert = Certificate::new(&psd, cfg, py, pc, &w, &q, &point);
                let dual = cert.dual;
                let gap = cert.record(&mut tracker, cfg, &w, &point);
                if gap <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                let mut grown = set.clone();
                grown.extend(
                    movable(&w, &gradient(&w, &q, &pen))
                        .into_iter()
                        .filter(|k| set.binary_search(k).is_err()),
                );
                match checks.settle(grown.len() > set.len()) {
                    Settled::Grew => {
                        grown.sort_unstable();
                        kset = Some(grown);
                        checks.start(tracker.certified(dual));
                    }
                    Settled::Stalled => {
                        status = SolveStatus::Stalled;
                        break;
                    }
                    Settled::BackedOff => {}
                }
                gap
            } else {
                let mut cert = cert;
                tracker.note(cert.witness.take());
                cert.dual = f64::NEG_INFINITY;
                // Stops on the best whole dual value so far, if this primal value meets it.
                if cert.record(&mut tracker, cfg, &w, &point) <= cfg.tol {
                    status = SolveStatus::Converged;
                    break;
                }
                rgap
            }
        } else {
            let dual = cert.dual;
            let gap = cert.record(&mut tracker, cfg, &w, &point);
            if gap <= cfg.tol {
                status = SolveStatus::Converged;
                break;
            }
            // The smooth losses read every kernel for the forms: once few kernels can move,
            // the next iterates read theirs only (module docs).
            let set = movable(&w, &gradient(&w, &q, &pen));
            if smooth && r1 > 0.0 && 2 * set.len() <= m {
                kset = Some(set);
                checks.start(tracker.certified(dual));
            }
            gap
        };
        if smooth {
            inner_tol = inner_tol.min((0.03 * gap).max(MIN_INNER_TOL));
        }
        if r1 == 0.0 {
            // The one SVM is the solution; only its accuracy bounds the gap.
            if inner_tol <= MIN_INNER_TOL {
                status = SolveStatus::Stalled;
                break;
            }
            inner_tol = (0.01 * inner_tol).max(MIN_INNER_TOL);
            kw_is_w = true;
            continue;
        }
        let grad_all = gradient(&w, &q, &pen);
        // Outside the kernel set no weight is left (their forms read as 0).
        debug_assert!(kset.as_ref().map_or(true, |s| {
            (0..m).all(|k| w[k] == 0.0 || s.binary_search(&k).is_ok())
        }));
        let vars = model_kernels(
            &w,
            &grad_all,
            if smooth { MAX_MODEL_SMOOTH } else { MAX_MODEL },
        );
        if vars.is_empty() {
            if stalls(restricted, &mut checks) {
                status = SolveStatus::Stalled;
                break;
            }
            kw_is_w = true;
            continue;
        }
        // `K_kβ` for the model's kernels only: few, once the weights are sparse.
        let prod = match &all_prod {
            Some(all) => vars
                .iter()
                .flat_map(|&kk| all[kk * n..(kk + 1) * n].iter().copied())
                .collect(),
            None => support_products(pstack, &point.beta, &vars),
        };
        let mut hess = s_hessian(psolver, pstack, &kw, &point, &prod, pc, cfg)?;
        let s = vars.len();
        for (a, &kk) in vars.iter().enumerate() {
            hess[(a, a)] += pen.d2(w[kk]);
        }
        let top = (0..s).fold(0.0f64, |a, r| a.max(hess[(r, r)].abs()));
        for a in 0..s {
            hess[(a, a)] += 1e-10 * top.max(f64::MIN_POSITIVE);
        }
        let next = NewtonModel {
            grad: vars.iter().map(|&kk| grad_all[kk]).collect(),
            vars,
            hess,
            j,
            w: w.clone(),
        };
        let (step, pred) = next.step(radius, &pen);
        // `J` converges to second order in the gradient and the gap to first order, so a step
        // that `J` no longer resolves (1e-15) can still close the gap: it counts while it moves
        // a weight by more than 1e-9 of itself.
        let moves = w
            .iter()
            .zip(&step)
            .any(|(a, b)| (a - b).abs() > 1e-9 * a.max(*b));
        if !(pred > 1e-15 * j.abs() || moves && pred >= 0.0) {
            // The model sees no progress left: only a more exact SVM can move the certificate.
            if inner_tol <= MIN_INNER_TOL {
                if stalls(restricted, &mut checks) {
                    status = SolveStatus::Stalled;
                    break;
                }
            } else {
                inner_tol = (0.01 * inner_tol).max(MIN_INNER_TOL);
            }
            model = None;
            kw_is_w = true;
            continue;
        }
        w = step;
        model = Some((next, pred));
        if let Some(set) = &mut kset {
            // Kernels leave the set when their weight is zero and their gradient not negative.
            set.retain(|&k| w[k] > 0.0 || grad_all[k] < 0.0);
        }
    }
    tracker.finish(n_iter, status)
}

/// `∂J/∂w_m = −½ q_m + π'(w_m)` of every kernel, at weights `w` with forms `q`.
fn gradient(w: &[f64], q: &[f64], pen: &Penalty) -> Vec<f64> {
    w.iter()
        .zip(q)
        .map(|(&wk, &qk)| -0.5 * qk + pen.d1(wk))
        .collect()
}

/// The kernels a Newton model may move: those with a weight or a negative gradient.
fn movable(w: &[f64], grad: &[f64]) -> Vec<usize> {
    (0..w.len())
        .filter(|&k| w[k] > 0.0 || grad[k] < 0.0)
        .collect()
}

/// At a stall of the iterated problem, whether the fit stalls: a restricted problem's stall
/// forces a whole-problem check instead (only it can tell why), once.
fn stalls(restricted: bool, checks: &mut CheckSchedule) -> bool {
    if restricted && !checks.is_forced() {
        checks.force();
        false
    } else {
        true
    }
}

/// The whole-problem check of a restricted iterate at weights `w` (module docs): `f = K_w β`
/// on every point from the rows of the support vectors, the whole certificate recorded
/// (the forms `q` are the whole problem's, `β` being zero off the set `idx`). Returns the
/// relative gap, and the points outside the set that violate optimality, by the QP variables
/// `alpha` over all points and the whole model.
#[allow(clippy::too_many_arguments)]
fn whole_check(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    cfg: &WrapperConfig,
    psd: &PsdCheck,
    tracker: &mut Tracker,
    w: &[f64],
    q: &[f64],
    restricted: &Point,
    idx: &[usize],
    alpha: &[f64],
) -> (f64, Vec<usize>) {
    let n = y.len();
    let beta = scatter_points(&restricted.beta, idx, n);
    let mut f = vec![0.0; n];
    stack.combined_matvec(w, &beta, &mut f);
    let b = cfg.loss.best_intercept(y, &f, c, restricted.b);
    let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
    let point = Point {
        beta,
        f,
        b,
        value: f64::NAN,
    };
    let gap = Certificate::new(psd, cfg, y, c, w, q, &point).record(tracker, cfg, w, &point);
    (gap, new_points(cfg.loss, y, &z, alpha, idx))
}

#[cfg(test)]
mod tests;
