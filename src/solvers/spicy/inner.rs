//! One proximal step: Newton's method with Armijo backtracking on `φ_γ` (eq. 7–9), then the
//! updates of `A`, `b` and the slack `z` (eq. 5, 6, 10, 11). All in the paper's scale (loss
//! weight 1), see the module documentation of `solvers::spicy`.

use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{weighted_factors, KernelStack};
use crate::linalg::{dot, Cholesky, DiagPlusLowRank, SpdFactor};
use crate::losses::Loss;
use crate::penalties::{envelope_term, prox_shrink};

/// The primal iterate and the dual point carried between outer iterations.
#[derive(Clone)]
pub(super) struct Outer {
    m: usize,
    n: usize,
    /// `A` (M×n, row-major); rows off the support are zero.
    pub a: Vec<f64>,
    /// `K_m A[m]` for the rows on the support.
    ka: Vec<f64>,
    /// `‖A[m]‖_{K_m}`.
    norm: Vec<f64>,
    /// Kernels with `A[m] ≠ 0`.
    support: Vec<usize>,
    pub b: f64,
    /// Slack (predictions) of the hinge-type losses.
    z: Vec<f64>,
    /// The last inner minimiser (warm start).
    pub rho: Vec<f64>,
}

impl Outer {
    pub fn new(m: usize, n: usize, loss: Loss, y: &[f64], w: &[f64]) -> Self {
        // ρ = −wℓ'(y, 0): strictly inside the logistic domain (yρ/w = ½).
        let rho = y
            .iter()
            .zip(w)
            .map(|(&yi, &wi)| -wi * loss.deriv(yi, 0.0))
            .collect();
        Outer {
            m,
            n,
            a: vec![0.0; m * n],
            ka: vec![0.0; m * n],
            norm: vec![0.0; m],
            support: Vec::new(),
            b: 0.0,
            z: vec![0.0; n],
            rho,
        }
    }

    /// A warm start: the iterate `A` (rows of `stack`'s kernels on its points, row-major),
    /// `b`, the slack `z` and the dual `ρ`. `K_m A[m]` and the block norms are computed on
    /// `stack` for the non-zero rows; a row with `‖A[m]‖_{K_m} = 0` is set to zero.
    pub fn warm(
        stack: &dyn KernelStack,
        mut a: Vec<f64>,
        b: f64,
        z: Vec<f64>,
        rho: Vec<f64>,
    ) -> Self {
        let (m, n) = (stack.m(), stack.n());
        let mut ka = vec![0.0; m * n];
        let mut norm = vec![0.0; m];
        let mut support = Vec::new();
        for (k, s) in norm.iter_mut().enumerate() {
            let row = k * n..(k + 1) * n;
            if a[row.clone()].iter().all(|&v| v == 0.0) {
                continue;
            }
            stack.matvec(k, &a[row.clone()], &mut ka[row.clone()]);
            let s2 = dot(&a[row.clone()], &ka[row.clone()]);
            if s2 > 0.0 {
                *s = s2.sqrt();
                support.push(k);
            } else {
                a[row.clone()].iter_mut().for_each(|v| *v = 0.0);
                ka[row].iter_mut().for_each(|v| *v = 0.0);
            }
        }
        Outer {
            m,
            n,
            a,
            ka,
            norm,
            support,
            b,
            z,
            rho,
        }
    }

    /// `f = Σ_{m ∈ support} K_m A[m]` (without the intercept).
    pub fn predictions(&self, f: &mut [f64]) {
        f.iter_mut().for_each(|v| *v = 0.0);
        for &m in &self.support {
            for (fi, k) in f.iter_mut().zip(&self.ka[m * self.n..(m + 1) * self.n]) {
                *fi += k;
            }
        }
    }

    /// `‖A[m]‖_{K_m}` for all m.
    pub fn norms(&self) -> Vec<f64> {
        self.norm.clone()
    }

    /// The same iterate on a new set of points that contains the current ones (the working
    /// set of points grew, or the whole problem took over): the current point `k` moves to
    /// `place[k]` of the `stack` (the kernels on the new set), and the other points join with
    /// `A = 0`, `ρ = 0` and the slack at their entry of `z` (their current prediction, with
    /// the intercept). The iterate, its block norms and the predictions are unchanged;
    /// `K_m A[m]` is recomputed on `stack` for the kernels on the support.
    pub fn move_points(&mut self, stack: &dyn KernelStack, place: &[usize], mut z: Vec<f64>) {
        let (n_old, n) = (self.n, stack.n());
        let mut a = vec![0.0; self.m * n];
        for (new, old) in a.chunks_exact_mut(n).zip(self.a.chunks_exact(n_old.max(1))) {
            for (&i, &v) in place.iter().zip(old) {
                new[i] = v;
            }
        }
        let mut ka = vec![0.0; self.m * n];
        for &m in &self.support {
            stack.matvec(m, &a[m * n..(m + 1) * n], &mut ka[m * n..(m + 1) * n]);
        }
        let mut rho = vec![0.0; n];
        for (k, &i) in place.iter().enumerate() {
            rho[i] = self.rho[k];
            z[i] = self.z[k];
        }
        self.a = a;
        self.ka = ka;
        self.n = n;
        self.rho = rho;
        self.z = z;
    }

    /// Appends `extra` kernels with `A[m] = 0` (the working set grew); the iterate is unchanged.
    pub fn grow(&mut self, extra: usize) {
        self.m += extra;
        self.a.resize(self.m * self.n, 0.0);
        self.ka.resize(self.m * self.n, 0.0);
        self.norm.resize(self.m, 0.0);
    }
}

/// The fixed data of the inner problems.
pub(super) struct Inner<'a> {
    pub stack: &'a dyn KernelStack,
    pub y: &'a [f64],
    /// The points' loss weights `w_i` (ones without `sample_weight`): point `i`'s loss is
    /// `w_i ℓ`, its conjugate term `w_i ℓ*(y_i, −ρ_i/w_i)` (docs/mathematics.md §2.4).
    pub w: &'a [f64],
    pub loss: Loss,
    /// Hinge-type loss handled through the slack `z`.
    pub slack: bool,
    pub lam1: f64,
    pub lam2: f64,
    /// `1/s`, `s` the kernels' scale: the kernel blocks' proximal parameter is `γ_m = γ/s`
    /// (see the module documentation of `solvers::spicy`, "Scale").
    pub kernel_gamma: f64,
    pub max_inner: usize,
    /// Stop Newton when `‖∇φ‖_∞` is at most this.
    pub inner_tol: f64,
}

/// Per-kernel quantities along the search line `ρ + cΔ`:
/// `‖v_m(c)‖² = aa + 2γ(cr + c·cd) + γ²(qr + 2c·qx + c²·qd)`.
struct Line {
    aa: Vec<f64>,
    cr: Vec<f64>,
    cd: Vec<f64>,
    qr: Vec<f64>,
    qx: Vec<f64>,
    qd: Vec<f64>,
}

impl Line {
    fn norm(&self, m: usize, gamma: f64, c: f64) -> f64 {
        let s2 = self.aa[m]
            + 2.0 * gamma * (self.cr[m] + c * self.cd[m])
            + gamma * gamma * (self.qr[m] + 2.0 * c * self.qx[m] + c * c * self.qd[m]);
        s2.max(0.0).sqrt()
    }
}

impl Inner<'_> {
    /// `L(ρ)` (see the module documentation), `+∞` outside the conjugate's domain. Point
    /// `i`'s loss `w_iℓ` has the proximal map of `ℓ` at `w_iγ_z` and the conjugate
    /// `w_iℓ*(y, u/w_i)`.
    fn loss_value(&self, st: &Outer, rho: &[f64], gz: f64) -> f64 {
        let mut total = 0.0;
        for (i, (&yi, &ri)) in self.y.iter().zip(rho).enumerate() {
            let wi = self.w[i];
            total += if self.slack {
                let (z, _) = self.loss.prox(yi, st.z[i] - gz * ri, gz * wi);
                let d = z - st.z[i];
                -(wi * self.loss.value(yi, z) + ri * z + d * d / (2.0 * gz))
            } else {
                match self.loss {
                    Loss::Logistic => {
                        let s = yi * ri / wi;
                        if !(s > 0.0 && s < 1.0) {
                            return f64::INFINITY;
                        }
                        wi * (s * s.ln() + (1.0 - s) * (1.0 - s).ln())
                    }
                    _ => wi * self.loss.conjugate(yi, -ri / wi),
                }
            };
        }
        total
    }

    /// `∇L` and the diagonal `∇²L` at `ρ`.
    fn loss_derivs(&self, st: &Outer, rho: &[f64], gz: f64, g: &mut [f64], h: &mut [f64]) {
        for i in 0..rho.len() {
            let (yi, ri, wi) = (self.y[i], rho[i], self.w[i]);
            if self.slack {
                let (z, dz) = self.loss.prox(yi, st.z[i] - gz * ri, gz * wi);
                g[i] = -z;
                h[i] = gz * dz;
            } else {
                g[i] = -self.loss.conjugate_grad(yi, -ri / wi);
                h[i] = self.loss.conjugate_hess(yi, -ri / wi) / wi;
            }
        }
    }

    /// `h(‖v‖)` of the kernel blocks' penalty ([`envelope_term`]).
    fn kernel_term(&self, s: f64, gamma: f64) -> f64 {
        envelope_term((self.lam1, self.lam2), s, gamma)
    }

    /// `φ_γ(ρ + cΔ)`.
    fn phi(&self, st: &Outer, line: &Line, rho: &[f64], gamma: f64, c: f64) -> f64 {
        let loss = self.loss_value(st, rho, slack_gamma(gamma));
        if !loss.is_finite() {
            return f64::INFINITY;
        }
        let gk = gamma * self.kernel_gamma;
        let kern: f64 = (0..st.m)
            .map(|m| self.kernel_term(line.norm(m, gk, c), gk))
            .sum();
        let t = st.b + gamma * rho.iter().sum::<f64>();
        loss + kern + t * t / (2.0 * gamma)
    }

    /// One outer iteration with penalty parameter `γ` (`γ_b = γ`, `γ_z = √γ`, `γ_m = γ/s`). Returns
    /// whether Newton's method solved the inner problem: `‖∇φ‖_∞` at most the inner tolerance
    /// or a thousandth of its start. When it stalls far from the minimiser (a `γ` too large
    /// for the conditioning, e.g. right after kernels joined the working set) the outer update
    /// from its `ρ` can diverge, and the caller retries with a smaller `γ`.
    ///
    /// The inner problem (eq. 7) is solved by Newton's method on `ρ`: the active blocks at `ρ`,
    /// the gradient (eq. 8), the Newton system (eq. 9), a backtracking line search on `φ_γ`
    /// read from quadratic forms (§3.4); then the outer update (eq. 5, 6, 11).
    pub fn step(&self, st: &mut Outer, gamma: f64, interrupt: &dyn Interrupt) -> Result<bool> {
        let n = st.n;
        // The kernel blocks' γ_m; `gamma` itself is γ_b (intercept) and sets γ_z (slack).
        let gk = gamma * self.kernel_gamma;
        let mut rho = st.rho.clone();
        let mut line = Line {
            aa: st.norm.iter().map(|s| s * s).collect(),
            cr: vec![0.0; st.m],
            cd: vec![0.0; st.m],
            qr: vec![0.0; st.m],
            qx: vec![0.0; st.m],
            qd: vec![0.0; st.m],
        };
        self.stack.quad_forms(&rho, &mut line.qr);
        if matches!(self.loss, Loss::Logistic) {
            self.scale_start(st, &mut rho, &mut line, gamma);
        }
        let mut grad = vec![0.0; n];
        let mut hdiag = vec![0.0; n];
        let mut blocks = Blocks::default();
        let mut history: Vec<f64> = Vec::new();
        for it in 0..=self.max_inner {
            interrupt.check()?;
            blocks = self.active_blocks(st, &rho, &mut line, gk);
            let frozen = self.gradient(st, &rho, gamma, &blocks, &mut grad, &mut hdiag);
            let gnorm = grad
                .iter()
                .zip(&frozen)
                .filter(|(_, &f)| !f)
                .fold(0.0f64, |a, (g, _)| a.max(g.abs()));
            history.push(gnorm);
            if gnorm <= self.inner_tol || it == self.max_inner || stagnates(&history) {
                break;
            }
            let (delta, clipped) =
                self.newton_direction(&blocks, &rho, gamma, &hdiag, &frozen, &mut grad)?;
            let slope = dot(&grad, &delta);
            if slope >= 0.0 {
                break;
            }
            let Some(c) =
                self.line_search(st, &mut line, &blocks, &rho, &delta, gamma, slope, clipped)
            else {
                break;
            };
            for (r, d) in rho.iter_mut().zip(&delta) {
                *r += c * d;
            }
            for m in 0..st.m {
                line.cr[m] += c * line.cd[m];
                line.qr[m] = (line.qr[m] + 2.0 * c * line.qx[m] + c * c * line.qd[m]).max(0.0);
                line.cd[m] = 0.0;
            }
        }
        self.outer_update(st, rho, &blocks, gamma);
        let (first, last) = (history[0], history[history.len() - 1]);
        Ok(last <= self.inner_tol || last <= 1e-3 * first)
    }

    /// The kernels active at `ρ` (`‖v_m‖ > γλ_1`, `v_m = A[m] + γ_m ρ`), with `K_m v_m`,
    /// `‖v_m‖` and `K_m ρ`; updates the line's `K_m`-products of `ρ` on the way.
    fn active_blocks(&self, st: &Outer, rho: &[f64], line: &mut Line, gk: f64) -> Blocks {
        let n = st.n;
        // Activity from the all-kernel quadratic forms.
        for &m in &st.support {
            line.cr[m] = dot(&st.ka[m * n..(m + 1) * n], rho);
        }
        let mut b = Blocks::default();
        for m in 0..st.m {
            let s = line.norm(m, gk, 0.0);
            if s > gk * self.lam1 && s > 0.0 {
                b.active.push(m);
            }
        }
        for &m in &b.active {
            let mut kr = vec![0.0; n];
            self.stack.matvec(m, rho, &mut kr);
            line.qr[m] = dot(&kr, rho);
            let a = &st.a[m * n..(m + 1) * n];
            let ka = &st.ka[m * n..(m + 1) * n];
            let k_v: Vec<f64> = ka.iter().zip(&kr).map(|(x, k)| x + gk * k).collect();
            let s2: f64 = a
                .iter()
                .zip(rho)
                .zip(&k_v)
                .map(|((ai, ri), k)| (ai + gk * ri) * k)
                .sum();
            b.kv.push(k_v);
            b.sv.push(s2.max(0.0).sqrt());
            b.krho.push(kr);
        }
        // The activity test reads ‖v_m‖ from expanded quadratic forms, the gradient and
        // Hessian from `sv`, computed directly. At extreme kernel scales the two differ by
        // rounding (docs/mathematics.md §2.5), and a kernel active by one but not the other
        // got the weight 1 − γλ₁/sv < 0: an indefinite Newton system. The norm the step uses
        // decides.
        let keep: Vec<bool> =
            b.sv.iter()
                .map(|&s| s > gk * self.lam1 && s > 0.0)
                .collect();
        if keep.contains(&false) {
            retain_by(&mut b.active, &keep);
            retain_by(&mut b.kv, &keep);
            retain_by(&mut b.sv, &keep);
            retain_by(&mut b.krho, &keep);
        }
        b
    }

    /// Eq. 8: `∇φ = ∇L + Σ K_m prox_m(v_m) + (b + γΣρ) 1`, `K_m prox_m(v_m)` the shrink of
    /// `K_m v_m`, into `grad`, and the diagonal `∇²L` into `hdiag`. Returns the points held
    /// fixed for the step.
    ///
    /// A logistic point with a large margin has its optimal dual `yρ = 1/(1 + e^{margin})`
    /// below what ρ resolves (it underflows for margins beyond ~700): its curvature
    /// `1/(s(1 − s))` overflows, its gradient cannot vanish and any step towards the boundary
    /// leaves the domain. Such a point (curvature above MAX_CURVATURE, descent pointing
    /// outwards) is held fixed and left out of the stopping test.
    fn gradient(
        &self,
        st: &Outer,
        rho: &[f64],
        gamma: f64,
        blocks: &Blocks,
        grad: &mut [f64],
        hdiag: &mut [f64],
    ) -> Vec<bool> {
        let gk = gamma * self.kernel_gamma;
        self.loss_derivs(st, rho, slack_gamma(gamma), grad, hdiag);
        let t = st.b + gamma * rho.iter().sum::<f64>();
        for (s, kv) in blocks.sv.iter().zip(&blocks.kv) {
            let shrink = self.shrink(*s, gk);
            for (g, x) in grad.iter_mut().zip(kv) {
                *g += shrink * x;
            }
        }
        grad.iter_mut().for_each(|g| *g += t);
        (0..rho.len())
            .map(|i| {
                let s = self.y[i] * rho[i] / self.w[i];
                let ds = -self.y[i] * grad[i];
                hdiag[i] > MAX_CURVATURE && (if s < 0.5 { ds < 0.0 } else { ds > 0.0 })
            })
            .collect()
    }

    /// Eq. 9: the Newton direction `Δ = −(∇²φ)⁻¹∇φ`, its largest entry capped at ten times
    /// `1 + ‖ρ‖_∞`; the frozen points' gradient entries are set to 0 in `grad`. Returns the
    /// direction and whether it was capped.
    fn newton_direction(
        &self,
        blocks: &Blocks,
        rho: &[f64],
        gamma: f64,
        hdiag: &[f64],
        frozen: &[bool],
        grad: &mut [f64],
    ) -> Result<(Vec<f64>, bool)> {
        let gk = gamma * self.kernel_gamma;
        let mut theta = vec![0.0; self.stack.m()];
        let scale = gk / (1.0 + gk * self.lam2);
        let mut rank_one = Vec::with_capacity(blocks.active.len());
        for (k, &m) in blocks.active.iter().enumerate() {
            let sv = blocks.sv[k];
            theta[m] = scale * (1.0 - gk * self.lam1 / sv);
            let q = gk * self.lam1 / sv;
            if q != 0.0 {
                rank_one.push((scale * q / (sv * sv), blocks.kv[k].as_slice()));
            }
        }
        let curvature: Vec<f64> = hdiag.iter().map(|h| h.min(MAX_CURVATURE)).collect();
        let system = NewtonSystem {
            theta: &theta,
            rank_one: &rank_one,
            gamma,
            curvature: &curvature,
            frozen,
        };
        // The hinge-type slack has zero curvature off the prox's kinks: a diagonal that
        // small makes the capacitance matrix as ill-conditioned as the system itself.
        let factor = if self.slack {
            system.dense(self.stack)?
        } else {
            system
                .low_rank(self.stack)
                .unwrap_or_else(|| system.dense(self.stack))?
        };
        for (g, _) in grad.iter_mut().zip(frozen).filter(|(_, &f)| f) {
            *g = 0.0;
        }
        let mut delta = factor.solve(&grad.iter().map(|g| -g).collect::<Vec<_>>());
        let cap = 10.0 * (1.0 + rho.iter().fold(0.0f64, |a, r| a.max(r.abs())));
        let dmax = delta.iter().fold(0.0f64, |a, d| a.max(d.abs()));
        if dmax > cap {
            delta.iter_mut().for_each(|d| *d *= cap / dmax);
        }
        Ok((delta, dmax > cap))
    }

    /// The step length `c` along `Δ` by backtracking on `φ_γ` (Armijo, factor 1/2); `φ_γ` at
    /// any `c` comes from the line's quadratic forms, set here (§3.4: `‖ρ + cΔ‖_{K_m}` for
    /// every kernel and every `c` from two quadratic forms). None: no step.
    #[allow(clippy::too_many_arguments)]
    fn line_search(
        &self,
        st: &Outer,
        line: &mut Line,
        blocks: &Blocks,
        rho: &[f64],
        delta: &[f64],
        gamma: f64,
        slope: f64,
        clipped: bool,
    ) -> Option<f64> {
        let (n, mm) = (st.n, st.m);
        let mut buf = vec![0.0; 2 * n];
        buf[..n].copy_from_slice(delta);
        for i in 0..n {
            buf[n + i] = rho[i] + delta[i];
        }
        let mut qb = vec![0.0; 2 * mm];
        self.stack.quad_forms_batch(&buf, &mut qb);
        for m in 0..mm {
            line.qd[m] = qb[2 * m];
            line.qx[m] = 0.5 * (qb[2 * m + 1] - line.qr[m] - line.qd[m]);
        }
        for (k, &m) in blocks.active.iter().enumerate() {
            // Exact cross terms where they matter most (polarisation loses digits).
            line.qx[m] = dot(&blocks.krho[k], delta);
        }
        for &m in &st.support {
            line.cd[m] = dot(&st.ka[m * n..(m + 1) * n], delta);
        }
        let phi0 = self.phi(st, line, rho, gamma, 0.0);
        let mut c = 1.0;
        let mut trial = vec![0.0; n];
        for _ in 0..60 {
            for i in 0..n {
                trial[i] = rho[i] + c * delta[i];
            }
            if self.phi(st, line, &trial, gamma, c) <= phi0 + 1e-4 * c * slope {
                return Some(c);
            }
            c *= 0.5;
        }
        // Near the minimiser rounding hides the decrease: take the Newton step when the
        // predicted decrease is below rounding, otherwise stop.
        if -slope <= 1e-13 * (1.0 + phi0.abs()) && !clipped {
            for i in 0..n {
                trial[i] = rho[i] + delta[i];
            }
            if self.loss_value(st, &trial, slack_gamma(gamma)).is_finite() {
                return Some(1.0);
            }
        }
        None
    }

    /// Eq. 5, 6, 11: `A[m] ← prox_m(v_m)`, `b ← b + γ_bΣρ`, `z ← prox_{γ_zℓ}(z − γ_zρ)`; the
    /// new `K_m A[m]` is the same shrink of `K_m v_m`, so no kernel is touched here.
    fn outer_update(&self, st: &mut Outer, rho: Vec<f64>, blocks: &Blocks, gamma: f64) {
        let (mm, n) = (st.m, st.n);
        let gk = gamma * self.kernel_gamma;
        let mut a = vec![0.0; mm * n];
        let mut ka = vec![0.0; mm * n];
        let mut norm = vec![0.0; mm];
        let mut support = Vec::with_capacity(blocks.active.len());
        for (k, &m) in blocks.active.iter().enumerate() {
            let shrink = self.shrink(blocks.sv[k], gk);
            if shrink <= 0.0 {
                continue;
            }
            let row = m * n..(m + 1) * n;
            for ((dst, &old), &r) in a[row.clone()].iter_mut().zip(&st.a[row.clone()]).zip(&rho) {
                *dst = shrink * (old + gk * r);
            }
            for (dst, &x) in ka[row].iter_mut().zip(&blocks.kv[k]) {
                *dst = shrink * x;
            }
            norm[m] = shrink * blocks.sv[k];
            support.push(m);
        }
        st.b += gamma * rho.iter().sum::<f64>();
        if self.slack {
            let gz = slack_gamma(gamma);
            for (((z, &yi), &ri), &wi) in st.z.iter_mut().zip(self.y).zip(&rho).zip(self.w) {
                *z = self.loss.prox(yi, *z - gz * ri, gz * wi).0;
            }
        }
        st.a = a;
        st.ka = ka;
        st.norm = norm;
        st.support = support;
        st.rho = rho;
    }

    /// Replaces the start `ρ` by the best multiple `tρ`, `t` a power of two in `[2⁻²⁰, 2⁶]`
    /// inside the domain. Along the ray every block norm is a quadratic in `t` from the
    /// quadratic forms already at hand, so this reads no kernel. The logistic dual's entropy
    /// keeps `0 < yρ < 1`: from `yρ = ½` (or the last step's `ρ`), Newton's steps towards the
    /// small `yρ` of the large margins leave the domain and backtracking cuts them to ¼, for
    /// many steps. The ray's minimum takes most of that way at once; the squared loss gained
    /// nothing, so only the logistic loss uses it (docs/mathematics.md §2.5, "Logistic start
    /// on the ray").
    fn scale_start(&self, st: &Outer, rho: &mut [f64], line: &mut Line, gamma: f64) {
        let n = rho.len();
        let mut cr = vec![0.0; st.m];
        for &m in &st.support {
            cr[m] = dot(&st.ka[m * n..(m + 1) * n], rho);
        }
        // ρ + cΔ with Δ = ρ is the point tρ at c = t − 1.
        let ray = Line {
            aa: line.aa.clone(),
            cr: cr.clone(),
            cd: cr,
            qr: line.qr.clone(),
            qx: line.qr.clone(),
            qd: line.qr.clone(),
        };
        let mut trial = vec![0.0; n];
        let (mut best_t, mut best) = (1.0, self.phi(st, &ray, rho, gamma, 0.0));
        for k in -20..=6 {
            let t = 2f64.powi(k);
            trial
                .iter_mut()
                .zip(rho.iter())
                .for_each(|(x, r)| *x = t * r);
            let v = self.phi(st, &ray, &trial, gamma, t - 1.0);
            if v < best {
                (best_t, best) = (t, v);
            }
        }
        if best_t != 1.0 {
            rho.iter_mut().for_each(|r| *r *= best_t);
            line.qr.iter_mut().for_each(|q| *q *= best_t * best_t);
        }
    }

    /// `prox_m(v)/v` of the kernel blocks' penalty ([`prox_shrink`]).
    fn shrink(&self, s: f64, gamma: f64) -> f64 {
        prox_shrink((self.lam1, self.lam2), s, gamma)
    }
}

/// The Newton system of eq. 9,
/// `H = Σ_m θ_m K_m + Σ_k c_k u_k u_kᵀ + γ 11ᵀ + diag(∇²L) + ridge·I`, with the frozen points'
/// rows and columns replaced by the identity's.
struct NewtonSystem<'a> {
    theta: &'a [f64],
    /// `(c_k, u_k)`: the curvature of each active block norm along `K_m v_m`.
    rank_one: &'a [(f64, &'a [f64])],
    gamma: f64,
    /// `∇²L`'s diagonal, capped at `MAX_CURVATURE`.
    curvature: &'a [f64],
    frozen: &'a [bool],
}

impl NewtonSystem<'_> {
    /// A relative 1e-10 ridge: flat directions (hinge-type points on a kink, no active kernel)
    /// get a long but finite step, which the cap and line search then control.
    fn ridge(trace: f64, n: usize) -> f64 {
        1e-10 * trace / n as f64
    }

    /// `H` formed `n × n` (one `combine` over the active kernels) and factorised by Cholesky.
    fn dense(&self, stack: &dyn KernelStack) -> Result<SpdFactor> {
        let n = self.curvature.len();
        let mut hess = vec![0.0; n * n];
        if self.theta.iter().any(|&t| t != 0.0) {
            stack.combine(self.theta, &mut hess);
        }
        for &(coef, u) in self.rank_one {
            for i in 0..n {
                let ci = coef * u[i];
                for (h, uj) in hess[i * n..(i + 1) * n].iter_mut().zip(u) {
                    *h += ci * uj;
                }
            }
        }
        for i in 0..n {
            for h in &mut hess[i * n..(i + 1) * n] {
                *h += self.gamma;
            }
            hess[i * n + i] += self.curvature[i];
        }
        for i in (0..n).filter(|&i| self.frozen[i]) {
            for j in 0..n {
                hess[i * n + j] = 0.0;
                hess[j * n + i] = 0.0;
            }
            hess[i * n + i] = 1.0;
        }
        let ridge = Self::ridge((0..n).map(|i| hess[i * n + i]).sum(), n);
        for i in 0..n {
            hess[i * n + i] += ridge;
        }
        Ok(SpdFactor::Dense(Cholesky::new(&hess, n)?))
    }

    /// `H = D + UUᵀ` on a stack of factors, `U = [sqrt(θ_m) G_m, sqrt(c_k) u_k, sqrt(γ) 1]`,
    /// solved through its capacitance matrix (docs/mathematics.md §2.12): `n R²` flops per
    /// step instead of `n³/3`. `None` unless the active kernels are stored as factors of
    /// total rank below `n` less the other columns.
    fn low_rank(&self, stack: &dyn KernelStack) -> Option<Result<SpdFactor>> {
        let n = self.curvature.len();
        let mut u = weighted_factors(stack, self.theta)?;
        if u.len() / n + self.rank_one.len() + 1 >= n {
            return None;
        }
        for &(coef, col) in self.rank_one {
            let s = coef.sqrt();
            u.extend(col.iter().map(|x| s * x));
        }
        u.resize(u.len() + n, self.gamma.sqrt());
        let mut d = self.curvature.to_vec();
        for (i, _) in self.frozen.iter().enumerate().filter(|(_, &f)| f) {
            d[i] = 1.0;
            for col in u.chunks_exact_mut(n) {
                col[i] = 0.0;
            }
        }
        let trace = d.iter().sum::<f64>() + u.iter().map(|x| x * x).sum::<f64>();
        let ridge = Self::ridge(trace, n);
        d.iter_mut().for_each(|x| *x += ridge);
        Some(DiagPlusLowRank::new(&d, u).map(SpdFactor::DiagPlusLowRank))
    }
}

/// The kernels active at the current `ρ` with `K_m v_m`, `‖v_m‖` and `K_m ρ`.
#[derive(Default)]
struct Blocks {
    active: Vec<usize>,
    kv: Vec<Vec<f64>>,
    sv: Vec<f64>,
    krho: Vec<Vec<f64>>,
}

/// Whether Newton's residuals (`history`, one per step) have stagnated.
///
/// Semismooth Newton on the hinge-type slack can cycle points across the prox's kinks with
/// tiny accepted steps, so it stops when the residual has not halved in STALL steps once it is
/// a hundredth of its start. Earlier, slow progress is the damped phase of Newton's method,
/// which must go on. Once the residual is 1e-4 of its start Newton is in its quadratic phase,
/// so two steps without halving it mean a point it cannot resolve (docs/mathematics.md §2.5,
/// "Stop", has the cases).
fn stagnates(history: &[f64]) -> bool {
    let it = history.len() - 1;
    let (first, g) = (history[0], history[it]);
    (it >= STALL && g > 0.5 * history[it - STALL] && g <= 1e-2 * first)
        || (it >= 2 && g > 0.5 * history[it - 2] && g <= 1e-4 * first)
}

/// The slack's proximal parameter `γ_z = √γ`. Any positive, non-decreasing `γ_z` gives a
/// proximal point method (a block-diagonal metric); its growth sets the inner difficulty of
/// the hinge-type losses. `∇²L = γ_z diag(prox')` pins the points on a face of the dual box
/// (`prox' = 1`) with curvature `γ_z`, and when `γ_z` jumps tenfold with `γ` the first Newton
/// step throws most of them across the box, after which Newton crawls back a few points per
/// step (docs/mathematics.md §2.4 has the measurements).
fn slack_gamma(gamma: f64) -> f64 {
    gamma.sqrt()
}

/// Newton steps without halving the residual that end an inner solve (see [`Inner::step`]).
const STALL: usize = 8;

/// The largest diagonal curvature of `L` used in the Newton system: `1e12` is `yρ` within
/// `1e-12` of the logistic domain's boundary (see the frozen points in [`Inner::step`]).
const MAX_CURVATURE: f64 = 1e12;

/// Keeps the items of `v` whose flag in `keep` is set.
fn retain_by<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut flags = keep.iter();
    v.retain(|_| *flags.next().unwrap_or(&false));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::DenseStack;
    use crate::solvers::test_util::{factored, problem};

    /// The capacitance route solves eq. 9's system as the dense Cholesky does, frozen points,
    /// rank-one terms and the intercept's `γ11ᵀ` included.
    #[test]
    fn low_rank_system_solves_like_the_dense_one() {
        let n = 50;
        let (g, m, _) = problem(n, true, 3);
        let (lr, products) = factored(&g, m, n, 3);
        let dense = DenseStack::new(&products, m, n).unwrap();
        let theta = [0.7, 0.0, 2.0, 0.1, 1.5];
        let u: Vec<Vec<f64>> = (0..2)
            .map(|k| (0..n).map(|i| ((i * (k + 3)) as f64).sin()).collect())
            .collect();
        let rank_one = [(0.4, u[0].as_slice()), (1.3, u[1].as_slice())];
        let curvature: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64).collect();
        let frozen: Vec<bool> = (0..n).map(|i| i % 11 == 4).collect();
        let system = NewtonSystem {
            theta: &theta,
            rank_one: &rank_one,
            gamma: 3.0,
            curvature: &curvature,
            frozen: &frozen,
        };
        let low = system.low_rank(&lr).expect("rank 12 + 3 < 50").unwrap();
        assert!(matches!(low, SpdFactor::DiagPlusLowRank(_)));
        assert!(system.low_rank(&dense).is_none());
        let full = system.dense(&dense).unwrap();
        let b: Vec<f64> = (0..n).map(|i| (0.3 * i as f64).cos()).collect();
        for (p, q) in low.solve(&b).iter().zip(full.solve(&b)) {
            assert!((p - q).abs() <= 1e-9 * (1.0 + q.abs()), "{p} vs {q}");
        }
    }
}
