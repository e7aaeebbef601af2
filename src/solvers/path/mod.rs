//! The regularization path of block-ℓ1 MKL without intercept (Bach, Thibaux & Jordan,
//! "Computing regularization paths for learning multiple kernels"), followed by a
//! predictor–corrector method on the log-barrier of its dual (docs/mathematics.md §5).
//!
//! At `C = 1/λ` the primal is `P = C Σ_i ℓ(y_i, f(x_i)) + Σ_j d_j ‖f_j‖` and the dual
//! `D(α) = −C Σ_i ψ_i(λα_i)` over `αᵀK_jα ≤ d_j²`, `ψ_i = ℓ*(y_i, ·)`. The path follows the
//! minimisers of the barrier problem (the paper's F multiplied by λ, "C-form"):
//!
//! `G(α) = Σ_i ψ_i(λα_i)/λ − (μ/2) Σ_j log(d_j² − αᵀK_jα)`,
//!
//! with gradient `g = ψ′(λα) + Σ_j η_j K_jα`, `η_j = μ/(d_j² − αᵀK_jα)`, and Hessian
//! `H = λ diag ψ″(λα) + Σ_j [η_j K_j + (2η_j²/μ)(K_jα)(K_jα)ᵀ]` (the paper's J and H times λ).
//! The model is `A[j] = −η_j α`, so `f = −Σ_j η_j K_jα = ψ′(λα)` at a centre, and the duality
//! gap paid there is exactly `μ Σ_j r_j/(d_j + r_j)`, `r_j = sqrt(αᵀK_jα)`: about μ/2 per
//! active kernel (the paper's `η_j(d_j² − αᵀK_jα)` misses the factor `r_j/(d_j + r_j)`).
//!
//! Steps are taken in `t = log C`. The predictor is second order,
//! `α(t) = α + t α′ + ½t² α″` with `α′ = H⁻¹(λψ″(λα)∘α − g)` (the paper's tangent, with the
//! residual `g` of an inexact centre) and `α″ = −H⁻¹Q`, `Q` the second derivative of `g` along
//! the first-order curve; both reuse the factor of the last corrector step. The step is the
//! longest whose predicted point has a Newton decrement `sqrt((2/μ) gᵀH⁻¹g) ≤ ε` (measured in
//! the units in which `(2/μ)G` is self-concordant), with ε halved after a corrector of more than
//! 5 steps and doubled after one of fewer than 3 (the paper's §3.4 rule, tightened for the
//! second-order predictor). The corrector is damped Newton that stays strictly inside the
//! ellipsoids and the conjugate's domain.

#[cfg(test)]
mod tests;

use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::{KernelStack, LowRankStack, SubStack};
use crate::linalg::{clear_upper_simd_state, dot, Cholesky, DiagPlusLowRank, SpdFactor};
use crate::losses::Loss;
use crate::result::{relative_gap, IterRecord};

/// Settings of a path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathConfig {
    /// `squared` or `logistic` (the losses whose conjugate is smooth inside its domain).
    pub loss: Loss,
    /// The penalty weights `d_j`; `None`: `sqrt(tr K_j / n)` (1 for unit-diagonal kernels),
    /// the scaling that makes the path invariant to rescaling any kernel.
    pub weights: Option<Vec<f64>>,
    /// A fixed barrier weight μ (the duality gap paid at each point is about μ/2 per kernel at
    /// its boundary); `None`: μ follows the primal value so that every point's relative gap
    /// is at most `tol`.
    pub mu: Option<f64>,
    /// The relative duality gap promised at every point when `mu` is `None`.
    pub tol: f64,
    /// The end of the path; `None`: 1000 `C₀`, where `C₀` is the largest `C` at which `f = 0`.
    pub c_max: Option<f64>,
    /// The most points the path may hold.
    pub max_points: usize,
    /// Whether the corrector starts with chord steps on the predictor's factor (one
    /// factorisation per point when they converge) rather than a Newton step each.
    pub reuse_factors: bool,
    /// The ratio `r_j/d_j` at which a kernel joins the barrier's working set (default
    /// `ADMIT`; the others are checked once per point), or `None`: every kernel is in the
    /// barrier throughout.
    pub working_set: Option<f64>,
}

impl Default for PathConfig {
    fn default() -> Self {
        PathConfig {
            loss: Loss::Squared,
            weights: None,
            mu: None,
            tol: 1e-3,
            c_max: None,
            max_points: 500,
            reuse_factors: true,
            working_set: Some(ADMIT),
        }
    }
}

/// The settings by name: `d` the weights; `working_set` on or off only (benchmarks switch it
/// off), the admission ratio is the engine's.
impl Fields for PathConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        self.loss.fields(v)?;
        v.floats("d", &mut self.weights)?;
        v.optional_float("mu", &mut self.mu)?;
        v.float("tol", &mut self.tol)?;
        v.optional_float("C_max", &mut self.c_max)?;
        v.count("max_points", &mut self.max_points)?;
        let mut working_set = self.working_set.is_some();
        v.flag("working_set", &mut working_set)?;
        self.working_set = match working_set {
            true => self.working_set.or(PathConfig::default().working_set),
            false => None,
        };
        Ok(())
    }
}

impl PathConfig {
    /// Checks the settings that do not depend on the data.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.loss, Loss::Squared | Loss::Logistic) {
            return Err(MkError::config(
                "loss",
                format!(
                    "the path needs a loss with a smooth conjugate: squared or logistic, got {}",
                    self.loss.name()
                ),
            ));
        }
        if let Some(mu) = self.mu {
            if !(mu.is_finite() && mu > 0.0 && mu < 1.0) {
                return Err(MkError::config(
                    "mu",
                    format!("must be in (0, 1), got {mu}"),
                ));
            }
        }
        if !(self.tol.is_finite() && self.tol > 0.0 && self.tol < 1.0) {
            return Err(MkError::config(
                "tol",
                format!("must be in (0, 1), got {}", self.tol),
            ));
        }
        if let Some(a) = self.working_set {
            if !(a > 0.0 && a < 1.0) {
                return Err(MkError::config(
                    "working_set",
                    format!("the admission ratio must be in (0, 1), got {a}"),
                ));
            }
        }
        if let Some(c) = self.c_max {
            if !(c.is_finite() && c > 0.0) {
                return Err(MkError::config(
                    "C_max",
                    format!("must be positive and finite, got {c}"),
                ));
            }
        }
        if self.max_points < 2 {
            return Err(MkError::config("max_points", "must be at least 2"));
        }
        if let Some(d) = &self.weights {
            if let Some((j, v)) = d
                .iter()
                .enumerate()
                .find(|(_, v)| !(v.is_finite() && **v > 0.0))
            {
                return Err(MkError::config(
                    "d",
                    format!("must be positive and finite, got d[{j}] = {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// One point of the path: the barrier centre at `c`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPoint {
    pub c: f64,
    /// `(n,)` the dual variable; the model is `A[j] = −η_j α`.
    pub alpha: Vec<f64>,
    /// `(M,)` `η_j = μ/(d_j² − αᵀK_jα)`, the kernel weights.
    pub eta: Vec<f64>,
    /// `(M,)` `‖f_j‖ = η_j sqrt(αᵀK_jα)`.
    pub norms: Vec<f64>,
    pub primal: f64,
    pub dual: f64,
    /// Relative duality gap of this point.
    pub gap: f64,
    /// The barrier weight μ of this point.
    pub mu: f64,
    /// Newton steps of the corrector (and of the start's centring, for the first point).
    pub corrector_steps: usize,
    /// The kernels in the barrier at this point (all `M` without a working set).
    pub barrier_kernels: usize,
}

/// Why a path ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathEnd {
    /// It reached `C_max`.
    Complete,
    /// It holds `max_points` points.
    MaxPoints,
    /// The corrector failed even for tiny steps (ill-conditioning at large C): the points so
    /// far are kept.
    Stalled,
}

/// A regularization path.
#[derive(Debug, Clone, PartialEq)]
pub struct PathResult {
    pub points: Vec<PathPoint>,
    /// `C₀ = min_j d_j / sqrt(βᵀK_jβ)`: `f = 0` is optimal for every `C ≤ C₀`.
    pub c0: f64,
    /// `(M,)` the weights `d_j` used.
    pub weights: Vec<f64>,
    /// Indices of the points where the active set (kernels with `slack_j/d_j² < sqrt(μ)`)
    /// differs from the previous point's.
    pub kinks: Vec<usize>,
    pub end: PathEnd,
    /// Cholesky factorisations of `n×n` Hessians, the unit of cost.
    pub factorizations: usize,
    /// Points abandoned because `α` left the ellipsoid of a kernel outside the working set
    /// (the path returned to the last point inside them all).
    pub returns: usize,
}

/// The barrier problem on a stack, with the products at the current `α`.
struct Barrier<'a> {
    /// The whole stack (its low-rank factors, when it has them).
    full: &'a dyn KernelStack,
    /// The kernels in the barrier (the working set), numbered `0..m` in every vector below.
    stack: SubStack<'a>,
    y: &'a [f64],
    /// The per-sample loss weights `w_i` (ones without `sample_weight`): point `i`'s dual term
    /// is `w_i ψ_i(λα_i/w_i)`, the conjugate of `w_i ℓ(y_i, ·)`.
    w: &'a [f64],
    loss: Loss,
    d: Vec<f64>,
    d2: Vec<f64>,
    /// The barrier weight at the current `C`.
    mu: f64,
    /// Whether μ follows the primal value (else it is fixed).
    adaptive: bool,
    n: usize,
    m: usize,
    factorizations: usize,
}

/// `α` with `K_jα` (`(M, n)` row-major) and `r_j² = αᵀK_jα`.
#[derive(Clone)]
struct Iterate {
    a: Vec<f64>,
    ka: Vec<f64>,
    r2: Vec<f64>,
}

/// A corrector's outcome: the centre, the factor of its last Hessian, its steps.
struct Centred {
    it: Iterate,
    /// The last factor computed; `None` when the one passed in was used throughout.
    chol: Option<SpdFactor>,
    /// The tangent's parts at the centre when the last step computed them in the same pass as
    /// the centre's products (then `it` holds products from scratch).
    tangent: Option<Tangent>,
    steps: usize,
    converged: bool,
}

/// A point's certificate: primal and dual values, and the model's kernel weights and norms.
struct Certificate {
    primal: f64,
    dual: f64,
    eta: Vec<f64>,
    norms: Vec<f64>,
}

/// `(v, K_jv)` pairs: `H⁻¹(λψ″(λα)∘α)` and, when μ varies, `H⁻¹ψ′(λα)`; the tangent is the
/// first plus γ times the second.
type Tangent = Vec<(Vec<f64>, Vec<f64>)>;

/// The predictor's derivatives at a centre, `(α′, K_jα′)` and `(α″, K_jα″)`.
struct Prediction {
    ta: Vec<f64>,
    kta: Vec<f64>,
    ta2: Vec<f64>,
    kta2: Vec<f64>,
}

impl Prediction {
    /// The predicted iterate `α + tα′ + ½t²α″` from the centre `it`.
    fn at(&self, it: &Iterate, t: f64) -> Iterate {
        let h = 0.5 * t * t;
        let a = (0..it.a.len())
            .map(|i| it.a[i] + t * self.ta[i] + h * self.ta2[i])
            .collect::<Vec<f64>>();
        let ka: Vec<f64> = (0..it.ka.len())
            .map(|k| it.ka[k] + t * self.kta[k] + h * self.kta2[k])
            .collect();
        let r2 = ka.chunks_exact(a.len()).map(|row| dot(row, &a)).collect();
        Iterate { a, ka, r2 }
    }
}

/// The share κ of the promised gap that the adaptive μ aims at (the rest absorbs the drift of P
/// and of the active set over a step; docs/mathematics.md §5 compares other shares).
const MU_SHARE: f64 = 0.7;

/// The corrector stops at a squared decrement `(2/μ) gᵀH⁻¹g ≤ NEWTON_TOL` (then takes that
/// last, quadratically convergent step unchecked).
const NEWTON_TOL: f64 = 1e-3;
/// The ratio `r_j/d_j = sqrt(αᵀK_jα)/d_j` at which a kernel joins the barrier's working set
/// (or that it is predicted to reach by the next point). The solution leaves the others at
/// `η_j = 0`, and a point where each of them is strictly inside its ellipsoid is certified for
/// the whole problem (docs/mathematics.md §5, "Working set").
const ADMIT: f64 = 0.9;
/// Corrector steps after which a predictor step is rejected and retried shorter.
const CORRECTOR_MAX: usize = 20;
/// Armijo constant of the corrector's backtracking.
const ARMIJO: f64 = 0.25;
/// Bounds of the predictor's decrement budget ε.
const EPS_RANGE: (f64, f64) = (1e-3, 1e3);
/// ε doubles after a corrector of fewer steps than the first and halves after one of more
/// than the second ([Bach] §3.4's 4 and 8; chord steps are cheap, so they count as steps).
const EPS_STEPS: (usize, usize) = (4, 8);
/// The corrector's chord steps (with the predictor's factor) stop, for fresh Newton steps,
/// once a step shrinks the squared decrement by less than this factor.
const CHORD_RATE: f64 = 0.25;

/// `U` with `UUᵀ = Σ_j [η_j K_j + (2/μ) η_j² (K_jα)(K_jα)ᵀ]` on a stack of factors
/// `K_j = G_jG_jᵀ`, column-major `n × Σ_j r_j`: with `z_j = G_jᵀα` (so `G_jz_j = K_jα`),
/// `U_j = √η_j G_j (I + c_j z_jz_jᵀ)`, `c_j = b_j/‖z_j‖²`, `(1 + b_j)² = 1 + (2/μ)η_j‖z_j‖²`:
/// then `U_jU_jᵀ = η_j G_j (I + (2c_j + c_j²‖z_j‖²) z_jz_jᵀ) G_jᵀ` and the bracket's factor is
/// `(2/μ)η_j`. Each column is `√η_j (g_k + c_j z_{jk} K_jα)`: `K_jα` is the iterate's.
/// `ids[j]` is local kernel `j`'s index in `lr`.
fn low_rank_term(lr: &LowRankStack, ids: &[usize], it: &Iterate, eta: &[f64], mu: f64) -> Vec<f64> {
    let n = lr.n();
    let ranks = lr.ranks();
    let mut u = Vec::with_capacity(ids.iter().map(|&j| ranks[j]).sum::<usize>() * n);
    for (j, &e) in eta.iter().enumerate() {
        let g = lr.factor(ids[j]);
        let ka = &it.ka[j * n..(j + 1) * n];
        let z: Vec<f64> = g.chunks_exact(n).map(|col| dot(col, &it.a)).collect();
        let zz = dot(&z, &z);
        let c = if zz > 0.0 {
            ((1.0 + 2.0 * e * zz / mu).sqrt() - 1.0) / zz
        } else {
            0.0
        };
        let se = e.sqrt();
        for (col, zk) in g.chunks_exact(n).zip(&z) {
            let t = c * zk;
            u.extend(col.iter().zip(ka).map(|(gi, ki)| se * (gi + t * ki)));
        }
    }
    u
}

/// `y += a x`.
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

impl<'a> Barrier<'a> {
    /// The barrier problem on the kernels `set` of `full` with their weights `d`, the
    /// samples' loss weights `w`, and a fixed barrier weight `mu` (`None`: μ follows the primal
    /// value, from 1e-3).
    fn new(
        full: &'a dyn KernelStack,
        set: Vec<usize>,
        d: &[f64],
        y: &'a [f64],
        w: &'a [f64],
        loss: Loss,
        mu: Option<f64>,
    ) -> Self {
        let d: Vec<f64> = set.iter().map(|&j| d[j]).collect();
        Barrier {
            full,
            m: set.len(),
            stack: SubStack::new(full, set),
            y,
            w,
            loss,
            d2: d.iter().map(|v| v * v).collect(),
            d,
            mu: mu.unwrap_or(1e-3),
            adaptive: mu.is_none(),
            n: full.n(),
            factorizations: 0,
        }
    }

    /// Adds the kernels `more` of the whole stack, with their weights from `d` (all of them),
    /// to the barrier; the local numbers of the others do not change.
    fn grow(&mut self, more: &[usize], d: &[f64]) {
        self.stack.extend(more);
        for &j in more {
            self.d.push(d[j]);
            self.d2.push(d[j] * d[j]);
        }
        self.m += more.len();
    }

    /// `(K_j v)_j` for each vector of `vs`, one `(M, n)` block each, in one pass over the
    /// stack (a pass costs the same for one vector as for a few).
    fn apply_many(&self, vs: &[&[f64]]) -> Vec<Vec<f64>> {
        let (n, b) = (self.n, vs.len());
        let mut out = vec![0.0; self.m * b * n];
        self.stack.matvecs(&vs.concat(), &mut out);
        let mut blocks = vec![Vec::with_capacity(self.m * n); b];
        for (mk, row) in out.chunks_exact(n).enumerate() {
            blocks[mk % b].extend_from_slice(row);
        }
        blocks
    }

    /// The kernels of the whole stack outside the barrier and their ratios `r_j/d_j` at `a`
    /// (`d` the weights of all kernels): one pass over those kernels.
    fn idle_ratios(&self, a: &[f64], d: &[f64]) -> (Vec<usize>, Vec<f64>) {
        let mut inside = vec![false; self.full.m()];
        for &j in self.stack.indices() {
            inside[j] = true;
        }
        let idle: Vec<usize> = (0..inside.len()).filter(|&j| !inside[j]).collect();
        let mut q = vec![0.0; idle.len()];
        self.full.quad_forms_subset(a, &idle, &mut q);
        let ratio = q
            .iter()
            .zip(&idle)
            .map(|(q, &j)| q.max(0.0).sqrt() / d[j])
            .collect();
        (idle, ratio)
    }

    /// The idle kernels that join the barrier at the centre `a`: those whose ratio
    /// `r_j/d_j` is at `admit`, or is predicted there after one more step like the last
    /// (`prev_ratio`, updated here, holds their ratios at the last check). Also whether `a`
    /// has left an idle kernel's ellipsoid (a ratio ≥ 1: `a` is not a dual point then).
    fn admissions(
        &self,
        a: &[f64],
        d: &[f64],
        admit: f64,
        prev_ratio: &mut [f64],
    ) -> (Vec<usize>, bool) {
        let (idle, ratio) = self.idle_ratios(a, d);
        let crossed = ratio.iter().any(|&r| r >= 1.0);
        let joining = idle
            .iter()
            .zip(&ratio)
            .filter(|&(&j, &r)| {
                let g = (r / prev_ratio[j]).max(1.0);
                r * if g.is_finite() { g } else { 1.0 } >= admit
            })
            .map(|(&j, _)| j)
            .collect();
        for (&j, &r) in idle.iter().zip(&ratio) {
            prev_ratio[j] = r;
        }
        (joining, crossed)
    }

    /// The second-order predictor at the centre `it` (docs/mathematics.md §5): the tangent
    /// `α′ = H⁻¹(λψ″(λα)∘α − γB − g)` and `α″ = −H⁻¹Q`, `Q` the second derivative of `g`
    /// along `α + tα′` with `μ(t) = μ e^{γt}`, `B = Σ_j η_j K_jα` the barrier's part of `g`
    /// (whose μ-derivative is `B/μ`). The corrector's last pass gives the tangent when it made
    /// one (`tangent`: there `g ≈ 0` after a full Newton step and `B ≈ −ψ′(λα)`).
    fn predictor(
        &self,
        it: &Iterate,
        tangent: Option<Tangent>,
        chol: &SpdFactor,
        lam: f64,
        gamma: f64,
    ) -> Prediction {
        let n = it.a.len();
        let mu0 = self.mu;
        let mut b = vec![0.0; n];
        for (row, e) in it.ka.chunks_exact(n).zip(self.eta(&it.r2)) {
            for (bi, k) in b.iter_mut().zip(row) {
                *bi += e * k;
            }
        }
        let (ta, kta) = match tangent {
            Some(mut parts) => {
                let (mut ta, mut kta) = parts.swap_remove(0);
                if let Some((a2, ka2)) = parts.pop() {
                    axpy(gamma, &a2, &mut ta);
                    axpy(gamma, &ka2, &mut kta);
                }
                (ta, kta)
            }
            None => {
                let g = self.gradient(it, lam, &self.eta(&it.r2));
                let mut rhs = self.tangent_rhs(&it.a, lam);
                axpy(-gamma, &b, &mut rhs);
                axpy(-1.0, &g, &mut rhs);
                let ta = chol.solve(&rhs);
                let kta = self.apply(&ta);
                (ta, kta)
            }
        };
        let mut q: Vec<f64> = (0..n)
            .map(|i| {
                let v = lam * it.a[i];
                let [_, p2, p3] = self.derivs(i, v);
                let v1 = lam * (ta[i] - it.a[i]);
                let v2 = lam * (it.a[i] - 2.0 * ta[i]);
                p3 * v1 * v1 + p2 * v2 + gamma * gamma * b[i]
            })
            .collect();
        let eta = self.eta(&it.r2);
        for j in 0..self.m {
            let (row, trow) = (&it.ka[j * n..(j + 1) * n], &kta[j * n..(j + 1) * n]);
            let s = self.d2[j] - it.r2[j];
            let (rp, rpp) = (2.0 * dot(trow, &it.a), 2.0 * dot(trow, &ta));
            let e1 = mu0 * rp / (s * s);
            let e2 = mu0 * (rpp / (s * s) + 2.0 * rp * rp / (s * s * s));
            // B″ plus 2γB′, B′ = Σ_j (η_j′ K_jα + η_j K_jα′).
            let (ca, ct) = (e2 + 2.0 * gamma * e1, 2.0 * e1 + 2.0 * gamma * eta[j]);
            for i in 0..n {
                q[i] += ca * row[i] + ct * trow[i];
            }
        }
        let ta2: Vec<f64> = chol.solve(&q).into_iter().map(|v| -v).collect();
        let kta2 = self.apply(&ta2);
        Prediction { ta, kta, ta2, kta2 }
    }

    /// `(K_j v)_j` only.
    fn apply(&self, v: &[f64]) -> Vec<f64> {
        self.apply_many(&[v]).swap_remove(0)
    }

    /// `α` with its products `K_jα` and the quadratic forms `r_j² = αᵀK_jα`.
    fn iterate(&self, a: Vec<f64>, ka: Vec<f64>) -> Iterate {
        let r2 = ka.chunks_exact(self.n).map(|row| dot(row, &a)).collect();
        Iterate { a, ka, r2 }
    }

    /// `α` with products from scratch (one pass over the stack).
    fn products(&self, a: &[f64]) -> Iterate {
        self.iterate(a.to_vec(), self.apply(a))
    }

    /// `λψ″(λα)∘α`, the tangent's right-hand side at a centre (`−∂g/∂t`).
    fn tangent_rhs(&self, a: &[f64], lam: f64) -> Vec<f64> {
        (0..self.n)
            .map(|i| lam * self.derivs(i, lam * a[i])[1] * a[i])
            .collect()
    }

    /// The first three derivatives of `v ↦ w_i ψ_i(v/w_i)`:
    /// `ψ′(v/w)`, `ψ″(v/w)/w`, `ψ‴(v/w)/w²`.
    fn derivs(&self, i: usize, v: f64) -> [f64; 3] {
        let w = self.w[i];
        self.loss
            .conjugate_derivatives(self.y[i], v / w)
            .map_or([f64::NAN; 3], |[d1, d2, d3]| [d1, d2 / w, d3 / (w * w)])
    }

    /// The open interval of `v = λα_i` where point `i`'s dual term is finite: the
    /// conjugate's domain times `w_i`.
    fn domain(&self, i: usize) -> (f64, f64) {
        let (lo, hi) = self.loss.conjugate_domain(self.y[i]);
        (self.w[i] * lo, self.w[i] * hi)
    }

    /// `Σ_i w_i ψ_i(v_i/w_i)` at `v = λα/scale`.
    fn conjugate_sum(&self, a: &[f64], lam: f64, scale: f64) -> f64 {
        a.iter()
            .zip(self.y)
            .zip(self.w)
            .map(|((&a, &y), &w)| w * self.loss.conjugate(y, lam * a / scale / w))
            .sum()
    }

    /// Strictly inside the ellipsoids and the conjugate's domain at `λα`.
    fn feasible(&self, it: &Iterate, lam: f64) -> bool {
        it.r2.iter().zip(&self.d2).all(|(r, d)| r < d)
            && it.a.iter().enumerate().all(|(i, &a)| {
                let (lo, hi) = self.domain(i);
                let v = lam * a;
                v > lo && v < hi
            })
    }

    fn eta(&self, r2: &[f64]) -> Vec<f64> {
        self.eta_at(r2, self.mu)
    }

    /// `η_j = μ/(d_j² − r_j²)` at a given μ.
    fn eta_at(&self, r2: &[f64], mu: f64) -> Vec<f64> {
        r2.iter().zip(&self.d2).map(|(r, d)| mu / (d - r)).collect()
    }

    /// `G(α)`, `+∞` outside the domain.
    fn value(&self, it: &Iterate, lam: f64) -> f64 {
        if !self.feasible(it, lam) {
            return f64::INFINITY;
        }
        let psi = self.conjugate_sum(&it.a, lam, 1.0);
        let logs: f64 = it.r2.iter().zip(&self.d2).map(|(r, d)| (d - r).ln()).sum();
        psi / lam - 0.5 * self.mu * logs
    }

    /// `g = ψ′(λα) + Σ_j η_j K_jα`.
    fn gradient(&self, it: &Iterate, lam: f64, eta: &[f64]) -> Vec<f64> {
        let n = self.n;
        let mut g: Vec<f64> = (0..n).map(|i| self.derivs(i, lam * it.a[i])[0]).collect();
        for (row, &e) in it.ka.chunks_exact(n.max(1)).zip(eta) {
            for (gi, k) in g.iter_mut().zip(row) {
                *gi += e * k;
            }
        }
        g
    }

    /// Factorises `H = λ diag ψ″(λα) + Σ_j η_j K_j + (2/μ) Σ_j η_j² (K_jα)(K_jα)ᵀ`: densely,
    /// or, on a stack of factors `K_j = G_jG_jᵀ` of total rank `R < n`, as the diagonal plus
    /// `UUᵀ` of [`low_rank_term`], an `R × R` system (docs/mathematics.md §5, "Low rank").
    fn factor(&mut self, it: &Iterate, lam: f64, eta: &[f64]) -> Result<SpdFactor> {
        let n = self.n;
        let diag: Vec<f64> = (0..n)
            .map(|i| lam * self.derivs(i, lam * it.a[i])[1])
            .collect();
        self.factorizations += 1;
        if let Some(lr) = self.full.low_rank() {
            let ids = self.stack.indices();
            let ranks = lr.ranks();
            if ids.iter().map(|&j| ranks[j]).sum::<usize>() < n {
                let u = low_rank_term(lr, ids, it, eta, self.mu);
                return Ok(SpdFactor::DiagPlusLowRank(DiagPlusLowRank::new(&diag, u)?));
            }
        }
        let mut h = vec![0.0; n * n];
        self.stack.combine(eta, &mut h);
        // The rank-M term as one product WᵀW, rows of W = sqrt(2/μ) η_j K_jα.
        let scale = (2.0 / self.mu).sqrt();
        let w: Vec<f64> = it
            .ka
            .chunks_exact(n.max(1))
            .zip(eta)
            .flat_map(|(row, &e)| row.iter().map(move |k| scale * e * k))
            .collect();
        {
            let wm = MatRef::from_row_major_slice(&w, self.m, n);
            let hm = MatMut::from_row_major_slice_mut(&mut h, n, n);
            matmul(hm, Accum::Add, wm.transpose(), wm, 1.0, Par::rayon(0));
            clear_upper_simd_state();
        }
        for (i, d) in diag.iter().enumerate() {
            h[i * n + i] += d;
        }
        Ok(SpdFactor::Dense(Cholesky::new(&h, n)?))
    }

    /// The longest step `t` along `da` (with `K_j da` in `kda`) that stays strictly inside
    /// every ellipsoid (a quadratic in `t` each) and the conjugate's domain.
    fn max_step(&self, it: &Iterate, lam: f64, da: &[f64], kda: &[f64]) -> f64 {
        let n = self.n;
        let mut t = f64::INFINITY;
        for (i, &a) in it.a.iter().enumerate() {
            let (lo, hi) = self.domain(i);
            let (v, dv) = (lam * a, lam * da[i]);
            if dv > 0.0 && hi.is_finite() {
                t = t.min((hi - v) / dv);
            } else if dv < 0.0 && lo.is_finite() {
                t = t.min((lo - v) / dv);
            }
        }
        for (j, row) in kda.chunks_exact(n.max(1)).enumerate() {
            // r²(t) = r² + 2tb + t²c < d²: the positive root of c t² + 2b t − s.
            let (b, c) = (dot(row, &it.a), dot(row, da));
            let s = self.d2[j] - it.r2[j];
            if c <= 0.0 && b <= 0.0 {
                continue;
            }
            let q = b + (b * b + c * s).max(0.0).sqrt();
            if q > 0.0 {
                t = t.min(s / q);
            }
        }
        t
    }

    /// Damped Newton on `G(·, λ)` from `start` (strictly feasible): at most `max_steps`
    /// steps, stopping at a squared decrement `≤ tol` after one last full step. The first step
    /// uses `reuse` when given (a chord step with an older Hessian's factor). The factor
    /// returned is the last one computed (at the point before the last step). The last step
    /// computes the centre's products from scratch and, in the same pass, the tangent there.
    fn centre(
        &mut self,
        start: Iterate,
        lam: f64,
        tol: f64,
        max_steps: usize,
        reuse: Option<&SpdFactor>,
        interrupt: &dyn Interrupt,
    ) -> Result<Centred> {
        let mut it = start;
        let mut value = self.value(&it, lam);
        let mut steps = 0;
        let mut own: Option<SpdFactor> = None;
        let mut chord = reuse;
        let mut last_nd2 = f64::INFINITY;
        loop {
            interrupt.check()?;
            let eta = self.eta(&it.r2);
            let g = self.gradient(&it, lam, &eta);
            let mut chol = match chord {
                Some(c) => c,
                None => &*own.insert(self.factor(&it, lam, &eta)?),
            };
            let mut da: Vec<f64> = chol.solve(&g).into_iter().map(|v| -v).collect();
            let dec2 = -dot(&g, &da);
            let nd2 = 2.0 / self.mu * dec2;
            steps += 1;
            if nd2 <= tol && chord.is_some() {
                // The last step is a Newton step with a fresh factor, the next tangent's.
                chol = &*own.insert(self.factor(&it, lam, &eta)?);
                da = chol.solve(&g).into_iter().map(|v| -v).collect();
            }
            if chord.is_some() && nd2 > CHORD_RATE * last_nd2 {
                chord = None;
            }
            last_nd2 = nd2;
            if nd2 <= tol {
                let (it, tangent) = self.last_step(&it, &da, chol, lam);
                return Ok(Centred {
                    it,
                    chol: own,
                    tangent,
                    steps,
                    converged: true,
                });
            }
            let kda = self.apply(&da);
            let mut t = (0.99 * self.max_step(&it, lam, &da, &kda)).min(1.0);
            let (next, next_value) = loop {
                let next = self.moved(&it, t, &da, &kda);
                let v = self.value(&next, lam);
                if v <= value - ARMIJO * t * dec2 || t < 1e-14 {
                    break (next, v);
                }
                t *= 0.5;
            };
            let stuck = !next_value.is_finite();
            if !stuck {
                it = next;
                value = next_value;
            }
            if stuck || steps >= max_steps {
                // The caller rejects the step (corrector) or stops polishing.
                return Ok(Centred {
                    it,
                    chol: own,
                    tangent: None,
                    steps,
                    converged: false,
                });
            }
        }
    }

    /// The last, full step of [`Self::centre`] from `it` along `da`: products from scratch
    /// (the slack d² − r² ≈ μ/η cancels badly in updated ones) and the next tangent from
    /// `chol`, in one pass; `it` itself, recomputed and without a tangent, if the step leaves
    /// the domain.
    fn last_step(
        &self,
        it: &Iterate,
        da: &[f64],
        chol: &SpdFactor,
        lam: f64,
    ) -> (Iterate, Option<Tangent>) {
        let a: Vec<f64> = it.a.iter().zip(da).map(|(a, d)| a + d).collect();
        let mut parts = vec![chol.solve(&self.tangent_rhs(&a, lam))];
        if self.adaptive {
            let d1: Vec<f64> = (0..self.n).map(|i| self.derivs(i, lam * a[i])[0]).collect();
            parts.push(chol.solve(&d1));
        }
        let mut vs: Vec<&[f64]> = vec![&a];
        vs.extend(parts.iter().map(|v| v.as_slice()));
        let mut products = self.apply_many(&vs).into_iter();
        let ka = products.next().unwrap_or_default();
        let tangent: Tangent = parts.into_iter().zip(products).collect();
        let next = self.iterate(a, ka);
        if self.feasible(&next, lam) {
            (next, Some(tangent))
        } else {
            (self.products(&it.a), None)
        }
    }

    /// `α + t·da` with its products updated from `K_j da` (no pass over the stack).
    fn moved(&self, it: &Iterate, t: f64, da: &[f64], kda: &[f64]) -> Iterate {
        let n = self.n;
        let a: Vec<f64> = it.a.iter().zip(da).map(|(a, d)| a + t * d).collect();
        let ka: Vec<f64> = it.ka.iter().zip(kda).map(|(k, d)| k + t * d).collect();
        let r2 = (0..self.m)
            .map(|j| {
                let drow = &kda[j * n..(j + 1) * n];
                it.r2[j] + 2.0 * t * dot(drow, &it.a) + t * t * dot(drow, da)
            })
            .collect();
        Iterate { a, ka, r2 }
    }

    /// The certificate at a centre in C-form. The dual point is `α` scaled into every
    /// ellipsoid (`α / max(1, max_j r_j/d_j)`). The primal point is the better of the model
    /// `A[j] = −η_j α` and the same model without the kernels off their boundary (slack
    /// `d_j² − r_j² ≥ sqrt(μ) d_j²`): such a kernel pays a gap `μ r_j/(d_j + r_j)` (up to μ/2),
    /// and leaving it out saves that to first order, so that the gap counts only the kernels
    /// the solution uses.
    fn certificate(&self, it: &Iterate, lam: f64) -> Certificate {
        let c = 1.0 / lam;
        let full = self.eta(&it.r2);
        let tight = self.mu.sqrt();
        let idle: Vec<bool> = it
            .r2
            .iter()
            .zip(&self.d2)
            .map(|(r, d)| (d - r) / d >= tight)
            .collect();
        // Per kernel, the first-order saving μ r_j/(d_j + r_j) against the loss' curvature
        // term (C/2) Σ_i ℓ″(y_i, f_i) (η_j (K_jα)_i)², cross terms between kernels ignored:
        // at large C the second term wins for most idle kernels, but not for all.
        let f = self.model(it, &full);
        let curv: Vec<f64> = (0..self.n)
            .map(|i| 0.5 * c * self.w[i] * self.loss.deriv2(self.y[i], f[i]))
            .collect();
        let worth: Vec<bool> = (0..self.m)
            .map(|j| {
                let row = &it.ka[j * self.n..(j + 1) * self.n];
                let r = it.r2[j].max(0.0).sqrt();
                let cost: f64 = row
                    .iter()
                    .zip(&curv)
                    .map(|(k, w)| w * (full[j] * k).powi(2))
                    .sum();
                idle[j] && self.mu * r / (self.d[j] + r) > cost
            })
            .collect();
        let mut best = self.primal(it, c, full.clone());
        for drop in [idle, worth] {
            let eta: Vec<f64> = full
                .iter()
                .zip(&drop)
                .map(|(&e, &x)| if x { 0.0 } else { e })
                .collect();
            if eta != best.1 {
                let other = self.primal(it, c, eta);
                if other.0 < best.0 {
                    best = other;
                }
            }
        }
        let (primal, eta, norms) = best;
        let scale = it
            .r2
            .iter()
            .zip(&self.d)
            .map(|(r, d)| r.max(0.0).sqrt() / d)
            .fold(1.0f64, f64::max);
        let psi = self.conjugate_sum(&it.a, lam, scale);
        Certificate {
            primal,
            dual: -c * psi,
            eta,
            norms,
        }
    }

    /// `f = −Σ_j η_j K_jα` at the training points.
    fn model(&self, it: &Iterate, eta: &[f64]) -> Vec<f64> {
        let mut f = vec![0.0; self.n];
        for (row, &e) in it.ka.chunks_exact(self.n).zip(eta) {
            axpy(-e, row, &mut f);
        }
        f
    }

    /// `(P, η, ‖f_j‖)` of the model `A[j] = −η_j α`.
    fn primal(&self, it: &Iterate, c: f64, eta: Vec<f64>) -> (f64, Vec<f64>, Vec<f64>) {
        let f = self.model(it, &eta);
        let norms: Vec<f64> = eta
            .iter()
            .zip(&it.r2)
            .map(|(e, r)| e * r.max(0.0).sqrt())
            .collect();
        let data: f64 = f
            .iter()
            .zip(self.y)
            .zip(self.w)
            .map(|((&fi, &y), &w)| w * self.loss.value(y, fi))
            .sum();
        (c * data + dot(&self.d, &norms), eta, norms)
    }

    /// `w = Σ_j r_j/(d_j + r_j)`: the exact gap of a centre is `μw` (each term below ½).
    fn gap_factor(&self, r2: &[f64]) -> f64 {
        r2.iter()
            .zip(&self.d)
            .map(|(r, d)| {
                let r = r.max(0.0).sqrt();
                r / (d + r)
            })
            .sum()
    }

    /// The exact gap of a centre, `μw`.
    fn barrier_gap(&self, r2: &[f64]) -> f64 {
        self.mu * self.gap_factor(r2)
    }

    /// The first centre, from `a` at `c = 1/lam`; an adaptive μ starts at `κ tol` of the
    /// primal value there, `P ≈ C Σ_i w_i ℓ(y_i, 0)` (`f ≈ 0` at the start).
    fn first_centre(
        &mut self,
        a: &[f64],
        c: f64,
        lam: f64,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<Centred> {
        let start = self.products(a);
        if self.adaptive {
            let p0 = c * self
                .y
                .iter()
                .zip(self.w)
                .map(|(&v, &wi)| wi * self.loss.value(v, 0.0))
                .sum::<f64>();
            self.mu = MU_SHARE * tol * p0 / self.gap_factor(&start.r2).max(1e-300);
        }
        let first = self.centre(start, lam, NEWTON_TOL, 100, None, interrupt)?;
        if !first.converged {
            return Err(MkError::Numerical(
                "the barrier problem at the start of the path did not converge; check that the \
                 kernels are positive semi-definite and finite"
                    .into(),
            ));
        }
        Ok(first)
    }

    /// Makes an accepted point (`it` with products from scratch) as accurate as promised;
    /// returns the Newton steps taken. The primal recovered through η has a relative error of
    /// about the decrement: first polish while the measured gap exceeds 1.5× the exact barrier
    /// gap. Then, when μ follows P, a point still above `tol` (P grew less than μ over the
    /// step, or more kernels reached their boundary) is re-centred at a μ scaled down to
    /// `κ tol` of the gap, at the same C; the path goes on with that μ.
    fn accurate(
        &mut self,
        it: &mut Iterate,
        tangent: &mut Option<Tangent>,
        chol: &mut SpdFactor,
        lam: f64,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<usize> {
        let mut steps = 0;
        for round in 0..6 {
            let Certificate {
                primal: p,
                dual: dl,
                ..
            } = self.certificate(it, lam);
            let (tol_steps, max_steps) =
                if p - dl > 1.5 * self.barrier_gap(&it.r2) + 1e-12 * p.abs() && round < 3 {
                    (NEWTON_TOL * 1e-6, 1)
                } else if self.adaptive && relative_gap(p, dl) > tol {
                    // At most 10× per round: a far centre is out of the corrector's reach.
                    self.mu *= (MU_SHARE * tol / relative_gap(p, dl)).max(0.1);
                    (NEWTON_TOL, CORRECTOR_MAX)
                } else {
                    break;
                };
            let more = self.centre(it.clone(), lam, tol_steps, max_steps, None, interrupt)?;
            steps += more.steps;
            if let Some(f) = more.chol {
                *chol = f;
            }
            (*it, *tangent) = settle(self, more.it, more.tangent);
        }
        Ok(steps)
    }
}

/// A corrector's centre with products from scratch, and its tangent when the last step
/// computed one (else the caller computes it with the residual term).
fn settle(pb: &Barrier<'_>, it: Iterate, tangent: Option<Tangent>) -> (Iterate, Option<Tangent>) {
    match tangent {
        Some(t) => (it, Some(t)),
        None => (pb.products(&it.a), None),
    }
}

/// The default weights `d_j = sqrt(Σ_i w_i K_j[i,i] / Σ_i w_i)`, `sqrt(tr K_j / n)` for unit
/// sample weights `w` (1 for a zero kernel, which any weight leaves out of the model): the
/// weighted mean keeps integer weights equal to duplicated rows.
fn default_weights(stack: &dyn KernelStack, w: &[f64]) -> Vec<f64> {
    let mut diag = vec![0.0; stack.n()];
    let total: f64 = w.iter().sum();
    (0..stack.m())
        .map(|j| {
            stack.diag(j, &mut diag);
            let tr: f64 = diag.iter().zip(w).map(|(k, w)| w * k).sum();
            if tr > 0.0 && tr.is_finite() {
                (tr / total).sqrt()
            } else {
                1.0
            }
        })
        .collect()
}

/// Records the points of a path: each point's certificate on all kernels, the kinks (where
/// the active set changes) and a progress record.
struct PointLog<'a> {
    /// The active kernels of the last point.
    prev_active: Vec<bool>,
    started: Instant,
    interrupt: &'a dyn Interrupt,
}

impl PointLog<'_> {
    /// Appends the centre `it` at `λ` (reached in `steps` corrector steps) to `out`; false,
    /// and nothing appended, when its certificate or model is not finite.
    fn record(
        &mut self,
        pb: &Barrier<'_>,
        it: &Iterate,
        lam: f64,
        steps: usize,
        out: &mut PathResult,
    ) -> bool {
        let Certificate {
            primal,
            dual,
            eta,
            norms,
        } = pb.certificate(it, lam);
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite() && *x >= 0.0);
        if !(primal.is_finite() && dual.is_finite() && finite(&eta) && finite(&norms)) {
            return false;
        }
        // Local to the barrier's kernels; the idle ones have η = 0 and are not active.
        let m = pb.full.m();
        let (mut eta_all, mut norms_all) = (vec![0.0; m], vec![0.0; m]);
        let mut active = vec![false; m];
        let active_tol = pb.mu.sqrt();
        for (k, &j) in pb.stack.indices().iter().enumerate() {
            eta_all[j] = eta[k];
            norms_all[j] = norms[k];
            active[j] = (pb.d2[k] - it.r2[k]) / pb.d2[k] < active_tol;
        }
        if !self.prev_active.is_empty() && active != self.prev_active {
            out.kinks.push(out.points.len());
        }
        let gap = relative_gap(primal, dual);
        self.interrupt.progress(&IterRecord {
            primal,
            dual,
            gap,
            active: active.iter().filter(|&&a| a).count(),
            seconds: self.started.elapsed().as_secs_f64(),
            solver: 0,
        });
        self.prev_active = active;
        out.points.push(PathPoint {
            c: 1.0 / lam,
            alpha: it.a.clone(),
            eta: eta_all,
            norms: norms_all,
            primal,
            dual,
            gap,
            mu: pb.mu,
            corrector_steps: steps,
            barrier_kernels: pb.m,
        });
        true
    }
}

/// The rate `γ` of `μ(t) = μ e^{γt}` over the next step, and the factor `target` where μ
/// stops, after the point `last` (`d` the kernels' weights, `tol` the promised gap, `t_prev`
/// the last step): μ follows P, whose slope is `d log P/dt = C Σ ℓ/P` (envelope theorem),
/// pulled towards a gap of `κ tol` over a step like the last one. It moves only towards that
/// target, and stops there: a long step must not grow μ past what the last point's gap allows.
fn mu_rate(last: &PathPoint, d: &[f64], tol: f64, t_prev: f64) -> (f64, f64) {
    let slope = 1.0 - dot(d, &last.norms) / last.primal;
    let target = MU_SHARE * tol / last.gap.max(1e-3 * tol);
    let gamma = slope + (target.ln() / t_prev).clamp(-1.0, 1.0);
    let towards = if target >= 1.0 {
        gamma.max(0.0)
    } else {
        gamma.min(0.0)
    };
    (towards, target)
}

/// The longest step `t ≤ t_cap` (in `log C`, from the trial `t`) whose predicted point has a
/// Newton `decrement(t) ≤ eps` ([Bach] §3.4): trials on the model decrement `∝ t³`, then
/// halving.
fn step_length(decrement: impl Fn(f64) -> f64, mut t: f64, t_cap: f64, eps: f64) -> f64 {
    let mut best = 0.0f64;
    for _ in 0..6 {
        let nd = decrement(t);
        if nd <= eps {
            best = best.max(t);
            if t >= t_cap || nd >= 0.7 * eps {
                break;
            }
            t = t_cap.min(t * (0.9 * eps / nd.max(1e-300)).powf(1.0 / 3.0).min(4.0));
        } else {
            t *= if nd.is_finite() {
                (0.9 * eps / nd).powf(1.0 / 3.0).clamp(0.1, 0.7)
            } else {
                0.3
            };
            if best > 0.0 && t <= best {
                break;
            }
        }
    }
    if best == 0.0 {
        while decrement(t) > eps && t > 1e-12 {
            t *= 0.5;
        }
        best = t;
    }
    best
}

/// The path's checks of its input; returns the sample weights and the penalty weights `d`.
fn checked_input(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &PathConfig,
) -> Result<(Vec<f64>, Vec<f64>)> {
    cfg.validate()?;
    crate::solvers::common::validate_targets(stack.n(), y)?;
    let w = crate::losses::costs(1.0, sample_weight, stack.n())?;
    let (n, m) = (stack.n(), stack.m());
    if n == 0 || m == 0 {
        return Err(MkError::Shape(
            "the path needs at least one point and one kernel".into(),
        ));
    }
    if cfg.loss == Loss::Logistic && y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(MkError::config("y", "the logistic loss needs labels ±1"));
    }
    let d = match &cfg.weights {
        Some(d) if d.len() != m => {
            return Err(MkError::config(
                "d",
                format!("has {} weights for {m} kernels", d.len()),
            ))
        }
        Some(d) => d.clone(),
        None => default_weights(stack, &w),
    };
    Ok((w, d))
}

/// The start of the path ([Bach] §2.3): `β` with `φ_i'(β_i) = 0` (`f = 0`: `−wy` for the
/// squared loss, `−wy/2` for the logistic), each kernel's ratio `sqrt(βᵀK_jβ)/d_j` and their
/// largest, `λ₀ = 1/C₀`. A form `βᵀK_jβ` below zero beyond rounding is refused: the barrier
/// needs PSD kernels.
fn start_point(
    stack: &dyn KernelStack,
    y: &[f64],
    w: &[f64],
    d: &[f64],
    loss: Loss,
) -> Result<(Vec<f64>, Vec<f64>, f64)> {
    let beta: Vec<f64> = y
        .iter()
        .zip(w)
        .map(|(&v, &wi)| wi * if loss == Loss::Logistic { -0.5 * v } else { -v })
        .collect();
    let mut q_beta = vec![0.0; stack.m()];
    stack.quad_forms(&beta, &mut q_beta);
    for (j, &r) in q_beta.iter().enumerate() {
        if r < -1e-9 * dot(&beta, &beta) * (d[j] * d[j]).max(1e-300) {
            return Err(MkError::NotPsd {
                kernel: j,
                entry: (0, 0),
                reason: format!(
                    "βᵀKβ = {r:.3e} < 0 at the start of the path (β = ψ′⁻¹(0)); the barrier \
                     needs positive semi-definite kernels"
                ),
            });
        }
    }
    let ratio0: Vec<f64> = q_beta
        .iter()
        .zip(d)
        .map(|(r, d)| r.max(0.0).sqrt() / d)
        .collect();
    let lam0 = ratio0.iter().fold(0.0f64, |a, &r| a.max(r));
    if !(lam0 > 0.0 && lam0.is_finite()) {
        return Err(MkError::Numerical(
            "every kernel vanishes on the targets (βᵀK_jβ = 0): f = 0 for every C".into(),
        ));
    }
    Ok((beta, ratio0, lam0))
}

/// The path's range of `C` from `λ₀ = 1/C₀`: `(C₀, C₀/2, C_max)`. It starts at `C₀/2`, since
/// at `C₀` itself `α = β/λ₀` lies on an ellipsoid; `C_max` defaults to 1000 `C₀`.
fn range(cfg: &PathConfig, lam0: f64) -> Result<(f64, f64, f64)> {
    let c0 = 1.0 / lam0;
    let c_max = cfg.c_max.unwrap_or(1e3 * c0);
    let c = 0.5 * c0;
    if c_max <= c {
        return Err(MkError::config(
            "C_max",
            format!("must exceed the start of the path C₀/2 = {c:.6e}, got {c_max:.6e}"),
        ));
    }
    Ok((c0, c, c_max))
}

/// Follows the regularization path of block-ℓ1 MKL on `stack` from below `C₀` to `C_max`.
pub fn fit_path(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &PathConfig,
    interrupt: &dyn Interrupt,
) -> Result<PathResult> {
    fit_path_weighted(stack, y, None, cfg, interrupt)
}

/// [`fit_path`] with a weight `w_i > 0` on each sample's loss, `C Σ_i w_i ℓ(y_i, f_i)`
/// (docs/mathematics.md §5, "Sample weights"); `None`: every weight 1.
pub fn fit_path_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &PathConfig,
    interrupt: &dyn Interrupt,
) -> Result<PathResult> {
    let (w, d) = checked_input(stack, y, sample_weight, cfg)?;
    let mut path = PathState::start(stack, y, &w, d, cfg, interrupt)?;
    let end = path.follow()?;
    Ok(path.finish(end))
}

/// The last point known strictly inside every ellipsoid, to return to when `α` crosses the
/// ellipsoid of a kernel outside the barrier.
#[derive(Clone)]
struct Inside {
    a: Vec<f64>,
    lam: f64,
    mu: f64,
    /// Whether it is a point of the path already (then it is not recorded again).
    recorded: bool,
}

/// The barrier weight over a predictor step: `μ(t) = μ₀ e^{γt}`, stopped at `μ₀·target`
/// ([`mu_rate`]; `γ = 0` for a fixed μ).
struct MuPath {
    mu0: f64,
    gamma: f64,
    target: f64,
}

impl MuPath {
    fn at(&self, t: f64) -> f64 {
        let (lo, hi) = (self.target.min(1.0), self.target.max(1.0));
        self.mu0 * (self.gamma * t).exp().clamp(lo, hi)
    }
}

/// What the kernels that reached the barrier's working set led to.
enum Admitted {
    /// None joined.
    Nothing,
    /// The barrier grew and the path was re-centred (here, or at the last point inside).
    Recentred,
    /// The re-centring failed: the path ends.
    Stalled,
}

/// The path between its points: the barrier, the centre at `λ = 1/C` with the factor of its
/// last Hessian and its tangent, and the predictor's controls.
struct PathState<'a> {
    pb: Barrier<'a>,
    cfg: &'a PathConfig,
    interrupt: &'a dyn Interrupt,
    /// The weights `d_j` of all kernels (the barrier holds its own kernels').
    d: Vec<f64>,
    c_max: f64,
    it: Iterate,
    tangent: Option<Tangent>,
    chol: SpdFactor,
    lam: f64,
    c: f64,
    /// Newton steps spent on the current point.
    steps: usize,
    /// The predictor's decrement budget ε and its last step in `log C`.
    eps: f64,
    t_prev: f64,
    /// The ratio `r_j/d_j` at which a kernel joins the barrier (0: all are in it).
    admit_ratio: f64,
    /// The idle kernels' ratios at the last check.
    prev_ratio: Vec<f64>,
    inside: Inside,
    /// Whether the centre is a recorded point (after a return to one).
    recorded_here: bool,
    log: PointLog<'a>,
    out: PathResult,
}

impl<'a> PathState<'a> {
    /// The first centre, at `C₀/2` ([Bach] §2.3, see [`range`]). The barrier starts with the
    /// kernels whose ratio at `C₀` is at least the admission ratio (the first to enter among
    /// them); the others join as they approach their boundary.
    fn start(
        stack: &'a dyn KernelStack,
        y: &'a [f64],
        w: &'a [f64],
        d: Vec<f64>,
        cfg: &'a PathConfig,
        interrupt: &'a dyn Interrupt,
    ) -> Result<Self> {
        let started = Instant::now();
        let m = stack.m();
        let (beta, ratio0, lam0) = start_point(stack, y, w, &d, cfg.loss)?;
        let set: Vec<usize> = (0..m)
            .filter(|&j| cfg.working_set.is_none_or(|a| ratio0[j] >= a * lam0))
            .collect();
        let mut pb = Barrier::new(stack, set, &d, y, w, cfg.loss, cfg.mu);
        let (c0, c, c_max) = range(cfg, lam0)?;
        let lam = 1.0 / c;
        let a: Vec<f64> = beta.iter().map(|b| b / lam).collect();
        let first = pb.first_centre(&a, c, lam, cfg.tol, interrupt)?;
        let out = PathResult {
            points: Vec::new(),
            c0,
            weights: d.clone(),
            kinks: Vec::new(),
            end: PathEnd::Complete,
            factorizations: 0,
            returns: 0,
        };
        let chol = first
            .chol
            .ok_or_else(|| MkError::Panic("the start was not factorised".into()))?;
        let (it, tangent) = settle(&pb, first.it, first.tangent);
        let inside = Inside {
            a,
            lam,
            mu: pb.mu,
            recorded: false,
        };
        Ok(PathState {
            cfg,
            interrupt,
            d,
            c_max,
            it,
            tangent,
            chol,
            lam,
            c,
            steps: first.steps,
            eps: 0.5,
            t_prev: 0.1,
            admit_ratio: cfg.working_set.unwrap_or(0.0),
            prev_ratio: vec![f64::NAN; m],
            inside,
            recorded_here: false,
            log: PointLog {
                prev_active: Vec::new(),
                started,
                interrupt,
            },
            out,
            pb,
        })
    }

    /// Point after point to `C_max`: polish the centre, admit the kernels near their
    /// boundary (re-centring), record the point, then predict and correct the next one.
    fn follow(&mut self) -> Result<PathEnd> {
        loop {
            self.steps += self.pb.accurate(
                &mut self.it,
                &mut self.tangent,
                &mut self.chol,
                self.lam,
                self.cfg.tol,
                self.interrupt,
            )?;
            match self.admit()? {
                Admitted::Nothing => {}
                Admitted::Recentred => continue,
                Admitted::Stalled => return Ok(PathEnd::Stalled),
            }
            if !self.record() {
                return Ok(PathEnd::Stalled);
            }
            if self.c >= self.c_max * (1.0 - 1e-12) {
                return Ok(PathEnd::Complete);
            }
            if self.out.points.len() >= self.cfg.max_points {
                return Ok(PathEnd::MaxPoints);
            }
            self.interrupt.check()?;
            if !self.advance()? {
                return Ok(PathEnd::Stalled);
            }
        }
    }

    /// Grows the barrier by the idle kernels that reach the admission ratio at the centre, and
    /// re-centres with them: here, or, when `α` left an idle kernel's ellipsoid (not a dual
    /// point then), at the last point strictly inside them all.
    fn admit(&mut self) -> Result<Admitted> {
        let (admit, crossed) =
            self.pb
                .admissions(&self.it.a, &self.d, self.admit_ratio, &mut self.prev_ratio);
        if admit.is_empty() {
            return Ok(Admitted::Nothing);
        }
        self.pb.grow(&admit, &self.d);
        let back = if crossed {
            self.out.returns += 1;
            self.inside.clone()
        } else {
            Inside {
                a: self.it.a.clone(),
                lam: self.lam,
                mu: self.pb.mu,
                recorded: self.recorded_here,
            }
        };
        (self.lam, self.pb.mu) = (back.lam, back.mu);
        self.c = 1.0 / self.lam;
        let start = self.pb.products(&back.a);
        let r = self
            .pb
            .centre(start, self.lam, NEWTON_TOL, 100, None, self.interrupt)?;
        let Some(f) = r.chol.filter(|_| r.converged) else {
            return Ok(Admitted::Stalled);
        };
        self.chol = f;
        self.steps += r.steps;
        (self.it, self.tangent) = settle(&self.pb, r.it, r.tangent);
        self.recorded_here = back.recorded;
        Ok(Admitted::Recentred)
    }

    /// Records the centre as a point of the path (unless it is one already) and keeps it as
    /// the last point inside every ellipsoid; false when its certificate is not finite: a
    /// centre float64 no longer resolves (μ driven towards 0 by a tol beyond rounding).
    fn record(&mut self) -> bool {
        if !self.recorded_here
            && !self
                .log
                .record(&self.pb, &self.it, self.lam, self.steps, &mut self.out)
        {
            return false;
        }
        self.inside = Inside {
            a: self.it.a.clone(),
            lam: self.lam,
            mu: self.pb.mu,
            recorded: true,
        };
        self.recorded_here = false;
        true
    }

    /// The next point: the predictor's step length, then the corrector; false (with μ as it
    /// was) when the corrector fails even for tiny steps.
    fn advance(&mut self) -> Result<bool> {
        let mu = self.mu_path();
        let prediction = self.pb.predictor(
            &self.it,
            self.tangent.take(),
            &self.chol,
            self.lam,
            mu.gamma,
        );
        let t = self.step_length(&prediction, &mu);
        let Some((r, lam1, t)) = self.correct(&prediction, &mu, t)? else {
            self.pb.mu = mu.mu0;
            return Ok(false);
        };
        self.accept(r, lam1, t);
        Ok(true)
    }

    /// μ over the next step: it follows P ([`mu_rate`]) when adaptive, else it stays.
    fn mu_path(&self) -> MuPath {
        let (gamma, target) = match self.out.points.last().filter(|_| self.pb.adaptive) {
            Some(last) => mu_rate(last, &self.d, self.cfg.tol, self.t_prev),
            None => (0.0, 1.0),
        };
        MuPath {
            mu0: self.pb.mu,
            gamma,
            target,
        }
    }

    /// The predictor's step in `log C` ([`step_length`]), from twice the last one and at
    /// most to `C_max`, on the predicted decrement at `μ(t)` (∞ outside the domain;
    /// `O(Mn + n²)` per trial, with the last factor).
    fn step_length(&self, prediction: &Prediction, mu: &MuPath) -> f64 {
        let (pb, it, chol, lam) = (&self.pb, &self.it, &self.chol, self.lam);
        let decrement = |t: f64| -> f64 {
            let (lam1, mu1) = (lam * (-t).exp(), mu.at(t));
            let p = prediction.at(it, t);
            if !pb.feasible(&p, lam1) {
                return f64::INFINITY;
            }
            let g1 = pb.gradient(&p, lam1, &pb.eta_at(&p.r2, mu1));
            let h = chol.solve(&g1);
            (2.0 / mu1 * dot(&g1, &h)).max(0.0).sqrt()
        };
        let t_cap = (self.c_max / self.c).ln();
        step_length(decrement, (2.0 * self.t_prev).min(t_cap), t_cap, self.eps)
    }

    /// The corrector from the predicted point at step `t` (with μ set to `μ(t)`): a step
    /// whose corrector fails is rejected for a quarter of it, with ε quartered. The centre,
    /// its `λ` and the step taken; `None` when even a step below 1e-10 fails.
    fn correct(
        &mut self,
        prediction: &Prediction,
        mu: &MuPath,
        mut t: f64,
    ) -> Result<Option<(Centred, f64, f64)>> {
        loop {
            let lam1 = self.lam * (-t).exp();
            self.pb.mu = mu.at(t);
            let p = prediction.at(&self.it, t);
            if self.pb.feasible(&p, lam1) {
                let reuse = self.cfg.reuse_factors.then_some(&self.chol);
                let r =
                    self.pb
                        .centre(p, lam1, NEWTON_TOL, CORRECTOR_MAX, reuse, self.interrupt)?;
                if r.converged {
                    return Ok(Some((r, lam1, t)));
                }
            }
            if t < 1e-10 {
                return Ok(None);
            }
            t *= 0.25;
            self.eps = (self.eps / 4.0).max(EPS_RANGE.0);
        }
    }

    /// Moves to the corrected centre `r` at `lam1`, a step `t` on, and adapts ε to the
    /// corrector's steps ([Bach] §3.4).
    fn accept(&mut self, r: Centred, lam1: f64, t: f64) {
        self.lam = lam1;
        self.c = 1.0 / self.lam;
        self.steps = r.steps;
        if let Some(f) = r.chol {
            self.chol = f;
        }
        (self.it, self.tangent) = settle(&self.pb, r.it, r.tangent);
        self.t_prev = t;
        if self.steps > EPS_STEPS.1 {
            self.eps = (self.eps / 2.0).max(EPS_RANGE.0);
        } else if self.steps < EPS_STEPS.0 {
            self.eps = (self.eps * 2.0).min(EPS_RANGE.1);
        }
    }

    /// The path with why it ended and its cost.
    fn finish(mut self, end: PathEnd) -> PathResult {
        self.out.end = end;
        self.out.factorizations = self.pb.factorizations;
        self.out
    }
}
