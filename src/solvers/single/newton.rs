//! Single-kernel solvers for the smooth losses, on a dense kernel `K` with an intercept:
//! `min_{β,b} C Σ_i ℓ(y_i, (Kβ)_i + b) + ½ βᵀKβ`.
//!
//! Squared loss: kernel ridge, one Cholesky solve of `(K + I/C) β = y − b1`, `Σβ = 0`.
//! Logistic (and any twice-differentiable loss): damped Newton in IRLS form. At `f = Kβ + b`,
//! with `w = ℓ''(f)`, `g = ℓ'(f)` and the working response `z = f − g/w`, the Newton step solves
//! the weighted ridge `(K + (C W)⁻¹) β' = z − b' 1`, `Σβ' = 0`, followed by a backtracking line
//! search on the objective. At the optimum `β = −C ℓ'(f)`, the dual point of docs/mathematics.md §1.
//!
//! The kernel is dense, or `K = UUᵀ` of rank `R < n` (a low-rank stack's combined kernel,
//! [`crate::kernels::weighted_factors`]); then every system `K + D` is solved through its
//! `R × R` capacitance matrix and nothing `n × n` is formed (docs/mathematics.md §3.2). A
//! dense kernel of at least [`PCG_MIN_POINTS`] points is solved by conjugate gradients
//! preconditioned by a pivoted Cholesky of `K` (one `K` product per iteration, no `n³`
//! factorisation; docs/mathematics.md §3.2, "Conjugate gradients").

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{dense_matvecs, factor_matvec, pivoted_cholesky};
use crate::linalg::{
    dot, solve_with_intercept, solve_with_intercept_many, Cholesky, DiagPlusLowRank, SpdFactor,
};
use crate::losses::Loss;

/// From this many points on, a dense kernel's systems are solved by preconditioned conjugate
/// gradients instead of Cholesky (measured in docs/mathematics.md §3.2).
pub(crate) const PCG_MIN_POINTS: usize = 500;

/// Conjugate gradients predict their iterations from the rate of this many.
const PREDICT_AFTER: usize = 5;

/// The conjugate-gradient iterations with `s` right-hand sides that cost about one
/// factorisation of an `n × n` system (`n³/3` flops against a memory-bound read of `K` and
/// `2n²s` flops per iteration; the calibration is in docs/mathematics.md §3.2), at least 10
/// and at most 100.
fn cg_budget(n: usize, s: usize) -> usize {
    let per_iteration = 1.0 + s as f64 / 8.0;
    ((n as f64 / 60.0) / per_iteration).clamp(10.0, 100.0) as usize
}

/// Largest rank of the pivoted-Cholesky preconditioner, and its relative trace tolerance.
const PRECOND_RANK: usize = 150;
const PRECOND_TOL: f64 = 1e-4;

/// The solutions of [`pcg_bordered`]'s systems, one after another.
struct Cg {
    x: Vec<f64>,
    /// The intercepts `b_j`.
    b: Vec<f64>,
    /// `K x_j`.
    kx: Vec<f64>,
}

/// The bordered systems `(K + diag(d)) x_j + b_j 1 = r_j`, `1ᵀx_j = 0` for `s` right-hand
/// sides `r` (stored one after another, `s·n`), solved by conjugate gradients on `1^⊥` from
/// `x0` with the preconditioner `M = LLᵀ + diag(d)` (Woodbury) projected on `1^⊥`:
/// `P v = M⁻¹v − M⁻¹1 (1ᵀM⁻¹v)/(1ᵀM⁻¹1)`, which maps `1` to 0 (the projected CG of Gould,
/// Hribar & Nocedal 2001). Each residual is moved by the multiple of `1` that `P` removes and
/// that multiple added to `b_j`, so the residual stays the bordered system's: left in it, the
/// `b1` part grows, cancels, and the iteration drifts away from the solution after converging
/// (docs/mathematics.md §3.2). The `s` recurrences run in lockstep so that each iteration reads
/// `K` once for all of them ([`dense_matvecs`]; the wrapper's Hessian, docs/mathematics.md
/// §2.11).
/// Column `j` stops when `r_jᵀPr_j` is at most `rtol²` times its start or `atol²` times that
/// of `r_j`. `None` when one has not converged in `max_iter` iterations, or will not at the
/// rate of its first [`PREDICT_AFTER`] (the caller then factorises). `kx0` is `K x0` when the caller has it.
/// The columns `cols` of `v` (packed, `n` rows), packed.
fn gather_columns(v: &[f64], cols: &[usize], n: usize) -> Vec<f64> {
    cols.iter()
        .flat_map(|&j| v[j * n..(j + 1) * n].iter().copied())
        .collect()
}

/// Each column of `x0` (packed, `n` rows) less its mean.
fn centred(x0: &[f64], n: usize) -> Vec<f64> {
    x0.chunks_exact(n)
        .flat_map(|c| {
            let mean = c.iter().sum::<f64>() / n as f64;
            c.iter().map(move |v| v - mean)
        })
        .collect()
}

/// `(K + diag(d)) x` from `K x` (columns packed).
fn plus_diag(kx: &[f64], d: &[f64], x: &[f64]) -> Vec<f64> {
    kx.iter()
        .zip(d.iter().cycle())
        .zip(x)
        .map(|((k, di), xi)| k + di * xi)
        .collect()
}

/// The iterations the `active` columns still need at the rate of their first `it`:
/// `r_jᵀPr_j` went from `start_j` to `rz_j` and must reach `stop_j`.
fn needed(active: &[usize], rz: &[f64], start: &[f64], stop: &[f64], it: usize) -> f64 {
    active
        .iter()
        .map(|&j| {
            let rate = (rz[j] / start[j]).ln() / it as f64;
            if rate < 0.0 {
                (stop[j] / rz[j]).ln() / rate
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0f64, f64::max)
}

/// `dst += alpha · src`.
fn add_scaled(dst: &mut [f64], src: &[f64], alpha: f64) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d += alpha * s);
}

/// `(K v, (K + diag(d)) v)` for the columns of `v`, packed one after another.
fn apply_shifted(k: &[f64], d: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = d.len().max(1);
    let mut kv = vec![0.0; v.len()];
    dense_matvecs(k, n, v, &mut kv);
    let mut out = kv.clone();
    for (oj, vj) in out.chunks_exact_mut(n).zip(v.chunks_exact(n)) {
        oj.iter_mut()
            .zip(d)
            .zip(vj)
            .for_each(|((o, di), vi)| *o += di * vi);
    }
    (kv, out)
}

/// The preconditioner `P = M⁻¹` (`M = diag(d) + LLᵀ`) of the bordered systems, restricted to
/// the vectors that sum to zero.
struct Projector {
    pre: DiagPlusLowRank,
    m_one: Vec<f64>,
    s_one: f64,
}

impl Projector {
    fn new(d: &[f64], l: &[f64]) -> Result<Self> {
        let pre = DiagPlusLowRank::new(d, l.to_vec())?;
        let m_one = pre.solve(&vec![1.0; d.len().max(1)]);
        let s_one = m_one.iter().sum();
        Ok(Projector { pre, m_one, s_one })
    }

    /// `z = P res` for columns packed one after another, and each res and b moved by the
    /// multiple of 1 that P removes; returns `res_jᵀ z_j`.
    fn project(&self, res: &mut [f64], b: &mut [f64], z: &mut Vec<f64>) -> Vec<f64> {
        let n = self.m_one.len();
        z.clear();
        z.extend_from_slice(res);
        self.pre.solve_many(z);
        let chunks = res.chunks_exact_mut(n).zip(z.chunks_exact_mut(n));
        chunks
            .zip(b.iter_mut())
            .map(|((rj, zj), bj)| {
                let c = zj.iter().sum::<f64>() / self.s_one;
                zj.iter_mut()
                    .zip(&self.m_one)
                    .for_each(|(zi, mi)| *zi -= c * mi);
                rj.iter_mut().for_each(|ri| *ri -= c);
                *bj += c;
                dot(rj, zj)
            })
            .collect()
    }
}

#[allow(clippy::too_many_arguments)]
fn pcg_bordered(
    k: &[f64],
    d: &[f64],
    l: &[f64],
    r: &[f64],
    x0: &[f64],
    kx0: Option<&[f64]>,
    rtol: f64,
    atol: f64,
    max_iter: usize,
) -> Result<Option<Cg>> {
    let n = d.len().max(1);
    let s = r.len() / n;
    let projector = Projector::new(d, l)?;
    let project = |res: &mut [f64], b: &mut [f64], z: &mut Vec<f64>| projector.project(res, b, z);
    let apply = |v: &[f64]| apply_shifted(k, d, v);
    let gather = |v: &[f64], cols: &[usize]| gather_columns(v, cols, n);
    let mut z = Vec::new();
    let mut rhs = r.to_vec();
    let rhs_norm: Vec<f64> = project(&mut rhs, &mut vec![0.0; s], &mut z);
    let mut x = centred(x0, n);
    // `K x` is carried along (one product of `K` with each direction), so that the caller's
    // line search needs no product of its own.
    let (mut kx, ax) = match kx0 {
        // (`x0` sums to zero up to rounding: its centring moves `K x0` by nothing.)
        Some(kx0) => (kx0.to_vec(), plus_diag(kx0, d, &x)),
        None => apply(&x),
    };
    let mut res: Vec<f64> = r.iter().zip(&ax).map(|(a, b)| a - b).collect();
    let mut b = vec![0.0; s];
    let mut rz = project(&mut res, &mut b, &mut z);
    let stop: Vec<f64> = (0..s)
        .map(|j| (rtol * rtol * rz[j]).max(atol * atol * rhs_norm[j].max(0.0)))
        .collect();
    let mut p = z.clone();
    let start = rz.clone();
    for it in 0..max_iter {
        let active: Vec<usize> = (0..s).filter(|&j| rz[j] > stop[j]).collect();
        if active.is_empty() {
            return Ok(Some(Cg { x, b, kx }));
        }
        if it == PREDICT_AFTER
            && it as f64 + needed(&active, &rz, &start, &stop, it) > max_iter as f64
        {
            // Past `max_iter` at the rate seen so far, the factorisation is the cheaper route
            // (a preconditioner that misses the spectrum converges slowly from the start).
            return Ok(None);
        }
        let pa = gather(&p, &active);
        let (kpa, apa) = apply(&pa);
        let mut ra = gather(&res, &active);
        let mut ba: Vec<f64> = active.iter().map(|&j| b[j]).collect();
        for (a, &j) in active.iter().enumerate() {
            let (pj, apj) = (&pa[a * n..(a + 1) * n], &apa[a * n..(a + 1) * n]);
            let pap = dot(pj, apj);
            if pap.is_nan() || pap <= 0.0 {
                return Ok(None);
            }
            let alpha = rz[j] / pap;
            add_scaled(&mut x[j * n..(j + 1) * n], pj, alpha);
            add_scaled(&mut kx[j * n..(j + 1) * n], &kpa[a * n..(a + 1) * n], alpha);
            add_scaled(&mut ra[a * n..(a + 1) * n], apj, -alpha);
        }
        let rz_new = project(&mut ra, &mut ba, &mut z);
        for (a, &j) in active.iter().enumerate() {
            let beta = rz_new[a] / rz[j];
            rz[j] = rz_new[a];
            b[j] = ba[a];
            res[j * n..(j + 1) * n].copy_from_slice(&ra[a * n..(a + 1) * n]);
            p[j * n..(j + 1) * n]
                .iter_mut()
                .zip(&z[a * n..(a + 1) * n])
                .for_each(|(pi, zi)| *pi = zi + beta * *pi);
        }
    }
    Ok(None)
}

/// A factorisation of `K + diag(d)`, kept for more systems with the same matrix.
pub(crate) struct Factored {
    d: Vec<f64>,
    factor: SpdFactor,
}

/// How [`NewtonSolver`]'s bordered system was solved.
enum Solved {
    /// By conjugate gradients, with `K x`.
    Cg(Vec<f64>),
    Factored(SpdFactor),
}

/// Solves the bordered systems `(K + diag(d)) x_j + b_j 1 = r_j`, `1ᵀx_j = 0` for the `s`
/// right-hand sides `r` (`s·n`, one after another) and returns the `x_j` the same way: with
/// `factored` when it is of this matrix; else by block conjugate gradients to a relative
/// accuracy `rtol` when `precond` (a pivoted Cholesky of a dense `K`) is given and they
/// converge within about the cost of a factorisation ([`cg_budget`]); else by one
/// factorisation of `K + diag(d)`.
pub(crate) fn bordered_many(
    k: KernelOp<'_>,
    precond: Option<&[f64]>,
    factored: Option<&Factored>,
    d: &[f64],
    r: &[f64],
    rtol: f64,
) -> Result<Vec<f64>> {
    if let Some(f) = factored.filter(|f| f.d == d) {
        return Ok(solve_with_intercept_many(&f.factor, r).0);
    }
    if let (KernelOp::Dense(kd), Some(l)) = (k, precond) {
        let x0 = vec![0.0; r.len()];
        let budget = cg_budget(d.len(), r.len() / d.len().max(1));
        if let Some(cg) = pcg_bordered(kd, d, l, r, &x0, Some(&x0), rtol, 0.0, budget)? {
            return Ok(cg.x);
        }
    }
    Ok(solve_with_intercept_many(&k.plus_diagonal(d)?, r).0)
}

/// The kernel of a single-kernel solve.
#[derive(Clone, Copy)]
pub(crate) enum KernelOp<'a> {
    /// Row-major `n × n`.
    Dense(&'a [f64]),
    /// `K = UUᵀ`, `U` column-major `n × R`.
    Factor(&'a [f64]),
}

impl KernelOp<'_> {
    /// `out = K v`.
    pub(crate) fn matvec(&self, v: &[f64], out: &mut [f64]) {
        match *self {
            KernelOp::Dense(k) => dense_matvec(k, v, out),
            KernelOp::Factor(u) => factor_matvec(u, v, out),
        }
    }

    /// The mean of `K`'s diagonal.
    fn mean_diag(&self, n: usize) -> f64 {
        let total: f64 = match *self {
            KernelOp::Dense(k) => (0..n).map(|i| k[i * n + i]).sum(),
            KernelOp::Factor(u) => u.iter().map(|x| x * x).sum(),
        };
        total / n.max(1) as f64
    }

    /// A factorisation of `K + diag(d)` (`d > 0`).
    fn plus_diagonal(&self, d: &[f64]) -> Result<SpdFactor> {
        let n = d.len();
        Ok(match *self {
            KernelOp::Dense(k) => {
                let mut a = k.to_vec();
                for (i, di) in d.iter().enumerate() {
                    a[i * n + i] += di;
                }
                SpdFactor::Dense(Cholesky::new(&a, n)?)
            }
            KernelOp::Factor(u) => SpdFactor::DiagPlusLowRank(DiagPlusLowRank::new(d, u.to_vec())?),
        })
    }
}

/// `out = K v` for a dense row-major `n×n` kernel.
pub(crate) fn dense_matvec(k: &[f64], v: &[f64], out: &mut [f64]) {
    dense_matvecs(k, v.len(), v, out);
}

/// `Σ c_i ℓ(y_i, f_i) + ½ βᵀ K β` with `f = Kβ + b`, given `Kβ`.
fn objective(loss: Loss, c: &[f64], y: &[f64], kb: &[f64], beta: &[f64], b: f64, o: &[f64]) -> f64 {
    let reg: f64 = beta.iter().zip(kb).map(|(x, k)| x * k).sum();
    let data = if o.is_empty() {
        loss.weighted_total(y, kb, b, c)
    } else {
        let f: Vec<f64> = kb.iter().zip(o).map(|(a, b)| a + b).collect();
        loss.weighted_total(y, &f, b, c)
    };
    data + 0.5 * reg
}

/// The floor on the curvature `w = ℓ''` of the Newton systems, for a kernel of mean diagonal
/// `kscale`. It keeps `1/(Cw)` finite for points whose ℓ″ underflows: such a point gets the
/// diagonal `1/(C w_min)`, which decouples it from the system. A floor of 1e-10 on w alone is
/// that only up to C ≈ 1: at C = 1e12 (or a kernel ×1e12) it capped `1/(Cw)` at 1e-2, far
/// below the kernel's scale, so well-classified points with `Cw ≈ 1e-2` were treated as tight
/// and Newton converged linearly (docs/mathematics.md §3.2). Capping `1/(Cw)` at 1e12 times
/// the kernel's mean diagonal decouples only what is negligible. With per-sample weights `c`
/// is the largest of them (the tightest cap).
fn curvature_floor(c: f64, kscale: f64) -> f64 {
    if kscale > 0.0 && kscale.is_finite() {
        1e-10f64.min(1e-12 / (c * kscale))
    } else {
        1e-10
    }
}

/// Newton / ridge state, warm-started across calls. (`pub` only because the public
/// [`SingleKernel`](super::SingleKernel) holds one: this module is private.)
pub struct NewtonSolver {
    loss: Loss,
    /// The per-sample loss weights.
    c: Vec<f64>,
    /// Their largest value.
    c_max: f64,
    y: Vec<f64>,
    pub(super) beta: Vec<f64>,
    pub(super) b: f64,
    /// Newton iterations of the last solve.
    pub(super) iterations: usize,
    /// Dense kernels of at least this many points are solved by conjugate gradients.
    pub(super) pcg_min: usize,
    /// The preconditioner of the last solve's kernel (conjugate gradients only).
    pub(super) precond: Option<Vec<f64>>,
    /// The last solve's factorisation of its system, when it was the last system (squared
    /// loss).
    pub(super) factored: Option<Factored>,
    /// A fixed function added to the model, `f = Kβ + o + b` (empty: none).
    pub(super) offset: Vec<f64>,
}

impl NewtonSolver {
    /// The loss being fitted.
    pub(super) fn loss(&self) -> Loss {
        self.loss
    }

    /// `f + o`, the model values with the offset.
    pub(super) fn shifted(&self, f: &[f64]) -> Vec<f64> {
        if self.offset.is_empty() {
            return f.to_vec();
        }
        f.iter().zip(&self.offset).map(|(a, b)| a + b).collect()
    }

    pub(super) fn new(loss: Loss, c: &[f64], y: &[f64]) -> Result<Self> {
        if !matches!(loss, Loss::Squared | Loss::Logistic) {
            return Err(MkError::config(
                "loss",
                "the Newton solver handles the squared and logistic losses",
            ));
        }
        Ok(NewtonSolver {
            loss,
            c: c.to_vec(),
            c_max: c.iter().fold(0.0f64, |a, &v| a.max(v)),
            y: y.to_vec(),
            beta: vec![0.0; y.len()],
            b: 0.0,
            iterations: 0,
            pcg_min: PCG_MIN_POINTS,
            precond: None,
            factored: None,
            offset: Vec::new(),
        })
    }

    /// Solves the bordered system `(K + diag(d)) x + b1 = r`, `1ᵀx = 0`: by conjugate
    /// gradients from `x0` when `precond` (a pivoted Cholesky of a dense `K`) is given and
    /// they converge, else by a factorisation of `K + diag(d)`.
    /// Also returns `K x` when conjugate gradients carried it (`kx0`: `K x0`, if known), or
    /// the factorisation when they were not used.
    #[allow(clippy::too_many_arguments)]
    fn bordered(
        k: KernelOp<'_>,
        precond: Option<&[f64]>,
        d: &[f64],
        r: &[f64],
        x0: &[f64],
        kx0: Option<&[f64]>,
        rtol: f64,
        atol: f64,
    ) -> Result<(Vec<f64>, f64, Solved)> {
        if let (KernelOp::Dense(kd), Some(l)) = (k, precond) {
            // Past about a factorisation's cost the factorisation is the cheaper route
            // (§3.2).
            let budget = cg_budget(d.len(), 1);
            if let Some(cg) = pcg_bordered(kd, d, l, r, x0, kx0, rtol, atol, budget)? {
                return Ok((cg.x, cg.b[0], Solved::Cg(cg.kx)));
            }
        }
        let factor = k.plus_diagonal(d)?;
        let (x, b) = solve_with_intercept(&factor, r);
        Ok((x, b, Solved::Factored(factor)))
    }

    /// The diagonal `1/(C ℓ''(y_i, f_i))` of the Newton system on the kernel `k` at the model
    /// values `f` (intercept included), the curvature floored as in [`NewtonSolver::solve`].
    pub(super) fn system_diagonal(&self, k: KernelOp<'_>, f: &[f64]) -> Vec<f64> {
        let w_min = curvature_floor(self.c_max, k.mean_diag(f.len()));
        self.y
            .iter()
            .zip(f)
            .zip(&self.c)
            .map(|((&yi, &fi), &ci)| 1.0 / (ci * self.loss.deriv2(yi, fi).max(w_min)))
            .collect()
    }

    /// The preconditioner of a dense kernel of at least `pcg_min` points: its pivoted
    /// Cholesky factor (`n · rank²` flops).
    fn preconditioner(&self, k: KernelOp<'_>) -> Option<Vec<f64>> {
        let n = self.y.len();
        match k {
            KernelOp::Dense(kd) if n >= self.pcg_min => {
                let diag: Vec<f64> = (0..n).map(|i| kd[i * n + i]).collect();
                let row = |j: usize, out: &mut [f64]| out.copy_from_slice(&kd[j * n..(j + 1) * n]);
                Some(pivoted_cholesky(n, &diag, row, PRECOND_TOL, PRECOND_RANK).0)
            }
            _ => None,
        }
    }

    /// Solves on the kernel `k` to a relative objective decrease of `tol` (squared loss:
    /// exactly); keeps the preconditioner of `k` for [`bordered_many`] on the same kernel.
    pub(super) fn solve(
        &mut self,
        k: KernelOp<'_>,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<()> {
        let precond = self.preconditioner(k);
        self.factored = None;
        let out = self.solve_with(k, precond.as_deref(), tol, interrupt);
        self.precond = precond;
        out
    }

    fn solve_with(
        &mut self,
        k: KernelOp<'_>,
        precond: Option<&[f64]>,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<()> {
        let n = self.y.len();
        let c = self.c.as_slice();
        if self.loss == Loss::Squared {
            let d: Vec<f64> = c.iter().map(|ci| 1.0 / ci).collect();
            // The offset moves the targets: (y − o − f − b)².
            let r: Vec<f64> = match self.offset.is_empty() {
                true => self.y.clone(),
                false => self
                    .y
                    .iter()
                    .zip(&self.offset)
                    .map(|(y, o)| y - o)
                    .collect(),
            };
            let (beta, b, how) = Self::bordered(k, precond, &d, &r, &self.beta, None, 0.0, 1e-10)?;
            if let Solved::Factored(factor) = how {
                // The Hessian of the l1 wrapper solves more systems with this matrix.
                self.factored = Some(Factored { d, factor });
            }
            self.beta = beta;
            self.b = b;
            self.iterations = 1;
            return Ok(());
        }
        let mut kb = vec![0.0; n];
        k.matvec(&self.beta, &mut kb);
        // The warm start's intercept belongs to the last kernel: re-fitted to this one
        // (1-D, O(n) per step), since a stale `b` can leave points misclassified by hundreds
        // when the kernel's scale is large, where Newton's quadratic model is useless.
        self.b = self
            .loss
            .best_intercept(&self.y, &self.shifted(&kb), c, self.b);
        let o = std::mem::take(&mut self.offset);
        let out = self.newton_steps(k, precond, tol, interrupt, kb, &o);
        self.offset = o;
        out
    }

    /// The damped Newton steps of [`NewtonSolver::solve_with`] from `β` (`kb = Kβ`) for a
    /// smooth loss on `f = Kβ + o + b`.
    fn newton_steps(
        &mut self,
        k: KernelOp<'_>,
        precond: Option<&[f64]>,
        tol: f64,
        interrupt: &dyn Interrupt,
        mut kb: Vec<f64>,
        o: &[f64],
    ) -> Result<()> {
        let n = self.y.len();
        let c = self.c.as_slice();
        let mut obj = objective(self.loss, c, &self.y, &kb, &self.beta, self.b, o);
        let mut kb_new = vec![0.0; n];
        let w_min = curvature_floor(self.c_max, k.mean_diag(n));
        self.iterations = 0;
        // Conjugate gradients give inexact Newton steps (forcing term 1e-2); a step that
        // decreases nothing is retried with the factorisation before Newton stops.
        let mut inexact = precond;
        for _ in 0..100 {
            interrupt.check()?;
            self.iterations += 1;
            let mut z = vec![0.0; n];
            let mut d = vec![0.0; n];
            for i in 0..n {
                let shift = o.get(i).copied().unwrap_or(0.0);
                let f = kb[i] + shift + self.b;
                let w = self.loss.deriv2(self.y[i], f).max(w_min);
                let g = self.loss.deriv(self.y[i], f);
                // The system's unknowns are `Kβ + b`: the offset stays on the right.
                z[i] = f - shift - g / w;
                d[i] = 1.0 / (c[i] * w);
            }
            let (beta_full, b_full, how) =
                Self::bordered(k, inexact, &d, &z, &self.beta, Some(&kb), 1e-2, 1e-12)?;
            let kb_full = match how {
                Solved::Cg(kx) => kx,
                Solved::Factored(_) => {
                    let mut v = vec![0.0; n];
                    k.matvec(&beta_full, &mut v);
                    v
                }
            };
            // Backtracking on the objective along the Newton direction (`Kβ` is linear in
            // the step: no product per trial).
            let mut t = 1.0;
            let mut accepted = false;
            let mut beta_t = vec![0.0; n];
            for _ in 0..40 {
                for i in 0..n {
                    beta_t[i] = self.beta[i] + t * (beta_full[i] - self.beta[i]);
                    kb_new[i] = kb[i] + t * (kb_full[i] - kb[i]);
                }
                let b_t = self.b + t * (b_full - self.b);
                let obj_t = objective(self.loss, c, &self.y, &kb_new, &beta_t, b_t, o);
                if obj_t <= obj + 1e-14 * obj.abs().max(1.0) {
                    let decrease = obj - obj_t;
                    std::mem::swap(&mut self.beta, &mut beta_t);
                    std::mem::swap(&mut kb, &mut kb_new);
                    self.b = b_t;
                    obj = obj_t;
                    accepted = true;
                    if decrease <= tol * obj.abs().max(1e-300) && t == 1.0 {
                        return Ok(());
                    }
                    break;
                }
                t *= 0.5;
            }
            if !accepted {
                if inexact.is_some() {
                    inexact = None;
                    continue;
                }
                // No decrease even for tiny steps: at the optimum to rounding.
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::{DenseStack, KernelStack};
    use crate::solvers::test_util::problem;

    /// Block conjugate gradients solve every bordered system as the factorisation does, carry
    /// `K x` exactly, and give up early when their rate cannot meet a small budget.
    #[test]
    fn block_conjugate_gradients_solve_like_the_factorisation() {
        let n = 150;
        let (g, m, _) = problem(n, true, 6);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let mut k = vec![0.0; n * n];
        stack.combine(&[0.5, 1.0, 0.2, 2.0, 0.3], &mut k);
        let d: Vec<f64> = (0..n).map(|i| 0.05 + (i % 7) as f64 * 0.1).collect();
        let r: Vec<f64> = (0..3 * n)
            .map(|i| ((i * 13 % 23) as f64 - 11.0) / 7.0)
            .collect();
        let diag: Vec<f64> = (0..n).map(|i| k[i * n + i]).collect();
        let row = |j: usize, out: &mut [f64]| out.copy_from_slice(&k[j * n..(j + 1) * n]);
        let (l, _) = pivoted_cholesky(n, &diag, row, 0.0, 10);
        let x0 = vec![0.0; r.len()];
        let cg = pcg_bordered(&k, &d, &l, &r, &x0, None, 1e-12, 0.0, 500)
            .unwrap()
            .expect("converges");
        let op = KernelOp::Dense(&k);
        let (want, want_b) = solve_with_intercept_many(&op.plus_diagonal(&d).unwrap(), &r);
        let scale = want.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for (a, b) in cg.x.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-8 * scale, "{a} vs {b}");
        }
        for (a, b) in cg.b.iter().zip(&want_b) {
            assert!((a - b).abs() <= 1e-8 * (1.0 + b.abs()));
        }
        let mut kx = vec![0.0; r.len()];
        dense_matvecs(&k, n, &cg.x, &mut kx);
        for (a, b) in cg.kx.iter().zip(&kx) {
            assert!((a - b).abs() <= 1e-9 * scale);
        }
        // A rank-1 preconditioner converges too slowly for a budget of 6 iterations.
        let (l1, _) = pivoted_cholesky(n, &diag, row, 0.0, 1);
        let slow = pcg_bordered(&k, &d, &l1, &r, &x0, None, 1e-12, 0.0, 6).unwrap();
        assert!(slow.is_none());
    }

    /// Conjugate gradients (forced on a small problem) reach the optimum the Cholesky route
    /// reaches, for kernel ridge and for logistic regression, from a cold and a warm start.
    #[test]
    fn conjugate_gradients_solve_like_cholesky() {
        let n = 150;
        let (g, m, yr) = problem(n, true, 4);
        let (_, _, yc) = problem(n, false, 4);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let mut k = vec![0.0; n * n];
        stack.combine(&[0.5, 1.0, 0.0, 2.0, 0.3], &mut k);
        for (loss, y) in [(Loss::Squared, &yr), (Loss::Logistic, &yc)] {
            let mut direct = NewtonSolver::new(loss, &vec![4.0; y.len()], y).unwrap();
            direct.pcg_min = usize::MAX;
            let mut cg = NewtonSolver::new(loss, &vec![4.0; y.len()], y).unwrap();
            cg.pcg_min = 0;
            assert!(cg.preconditioner(KernelOp::Dense(&k)).is_some());
            for _ in 0..2 {
                direct
                    .solve(KernelOp::Dense(&k), 1e-14, &NoInterrupt)
                    .unwrap();
                cg.solve(KernelOp::Dense(&k), 1e-14, &NoInterrupt).unwrap();
                let scale = direct.beta.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                for (p, q) in cg.beta.iter().zip(&direct.beta) {
                    assert!((p - q).abs() <= 1e-6 * scale, "{loss:?}: {p} vs {q}");
                }
                assert!(
                    (cg.b - direct.b).abs() <= 1e-6 * (1.0 + direct.b.abs()),
                    "{loss:?}"
                );
                assert!(cg.beta.iter().sum::<f64>().abs() <= 1e-9 * scale * n as f64);
            }
        }
    }
}
