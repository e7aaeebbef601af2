//! libsvm's `Solver` (WSS2, shrinking, gradient reconstruction) on a [`KernelColumns`] kernel,
//! with a step-level API for outer MKL loops.
//!
//! Internally every per-variable array is stored in *position* order: shrinking swaps inactive
//! variables to the tail, as libsvm does, so that all scans run over the contiguous prefix
//! `0..active_size`. `perm[pos]` is the original index; the public API speaks original indices.
//! While no swap has happened (`natural`), the kernel row of variable `t` is `t mod n`, and the
//! gradient update runs over contiguous slices of the kernel columns (vectorised); otherwise it
//! gathers through `kidx`.

use super::scan::{self, Scan2, TAU};
use super::{KernelColumns, SmoOptions};
use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;

/// The smallest KKT tolerance, relative to the largest entry of the gradient (64 ε).
const EPS_FLOOR: f64 = 64.0 * f64::EPSILON;

/// How often (in steps) [`SmoState::solve`] polls the interrupt and libsvm shrinks.
const CHECK_EVERY: usize = 1000;

/// The data of the QP besides the kernel, in original variable order (length `l` each).
#[derive(Debug, Clone, Copy)]
pub struct QpSpec<'a> {
    /// Linear term `p`.
    pub p: &'a [f64],
    /// Signs `y_t ∈ {+1, −1}`.
    pub y: &'a [f64],
    /// Upper bounds `U_t > 0`, `f64::INFINITY` allowed.
    pub upper: &'a [f64],
    /// Diagonal shift `d_t ≥ 0` added to `Q_tt` (`None`: zero).
    pub diag_shift: Option<&'a [f64]>,
    /// Kernel row `k(t) < n` of each variable (`None`: `t`, which needs `l == n`).
    pub kernel_index: Option<&'a [usize]>,
}

/// One SMO step, in original indices: `α_i += delta_i`, `α_j += delta_j`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub i: usize,
    pub j: usize,
    pub delta_i: f64,
    pub delta_j: f64,
}

/// What [`SmoState::step`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepOutcome {
    /// One pair was updated.
    Step(Step),
    /// `m(α) − M(α) < eps` on the full (unshrunk) problem: nothing was changed.
    Optimal,
}

/// Summary of [`SmoState::solve`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolveInfo {
    /// `F(α) = ½αᵀQα + pᵀα`, libsvm's `obj`.
    pub objective: f64,
    /// libsvm's `ρ` (the intercept is `b = −ρ`).
    pub rho: f64,
    /// Steps taken by this call.
    pub iterations: usize,
    /// Whether the stopping test was met (otherwise `max_iter` was reached).
    pub converged: bool,
    /// Final maximal KKT violation `m(α) − M(α)` (≤ 0 would mean exactly optimal).
    pub violation: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Lower,
    Upper,
    Free,
}

#[inline]
fn bound_of(alpha: f64, upper: f64) -> Bound {
    if alpha >= upper {
        Bound::Upper
    } else if alpha <= 0.0 {
        Bound::Lower
    } else {
        Bound::Free
    }
}

/// Status of α in `[0, U]`, and the `I_up` / `I_low` masks (`0` in the set, `−∞` outside):
/// `I_up` holds `y = +1` below `U` and `y = −1` above 0, `I_low` the other way round.
#[inline]
fn classify(alpha: f64, upper: f64, y: f64) -> (Bound, f64, f64) {
    let st = bound_of(alpha, upper);
    let pos = y > 0.0;
    let (in_up, in_low) = match st {
        Bound::Free => (true, true),
        Bound::Lower => (pos, !pos),
        Bound::Upper => (!pos, pos),
    };
    let mask = |inside: bool| if inside { 0.0 } else { f64::NEG_INFINITY };
    (st, mask(in_up), mask(in_low))
}

/// libsvm's clipping of the two-variable step: the new `(α_i, α_j)` from `old`, the gradients
/// `g = (G_i, G_j)`, the curvature `quad` and the bounds `upper`, along `y_iα_i + y_jα_j =
/// const` (`opposite`: `y_i ≠ y_j`). With infinite bounds `c_i − c_j` may be NaN (∞ − ∞): the
/// comparison is then false and the branch that tests `α_j > c_j = ∞` (never true) runs, which
/// is correct because no upper bound can be hit.
#[inline]
fn clip_pair(
    opposite: bool,
    (mut ai, mut aj): (f64, f64),
    (g_i, g_j): (f64, f64),
    quad: f64,
    (c_i, c_j): (f64, f64),
) -> (f64, f64) {
    if opposite {
        let delta = (-g_i - g_j) / quad;
        let diff = ai - aj;
        ai += delta;
        aj += delta;
        if diff > 0.0 {
            if aj < 0.0 {
                aj = 0.0;
                ai = diff;
            }
        } else if ai < 0.0 {
            ai = 0.0;
            aj = -diff;
        }
        if diff > c_i - c_j {
            if ai > c_i {
                ai = c_i;
                aj = c_i - diff;
            }
        } else if aj > c_j {
            aj = c_j;
            ai = c_j + diff;
        }
    } else {
        let delta = (g_i - g_j) / quad;
        let sum = ai + aj;
        ai -= delta;
        aj += delta;
        if sum > c_i {
            if ai > c_i {
                ai = c_i;
                aj = sum - c_i;
            }
        } else if aj < 0.0 {
            aj = 0.0;
            ai = sum;
        }
        if sum > c_j {
            if aj > c_j {
                aj = c_j;
                ai = sum - c_j;
            }
        } else if ai < 0.0 {
            ai = 0.0;
            aj = sum;
        }
    }
    (ai, aj)
}

/// The kernel row of every variable of `spec` (on a kernel of size `n`), after the checks of
/// the lengths (`l_alpha`: the start's) against the linear term's.
fn kernel_rows(spec: &QpSpec<'_>, l_alpha: usize, n: usize) -> Result<Vec<u32>> {
    let l = spec.p.len();
    if l == 0 || n == 0 {
        return Err(MkError::Shape("the QP has no variables".into()));
    }
    if n > u32::MAX as usize {
        return Err(MkError::Unsupported(format!(
            "SMO indexes points with 32 bits: at most {} points, got {n}",
            u32::MAX
        )));
    }
    for (name, len) in [
        ("y", spec.y.len()),
        ("upper", spec.upper.len()),
        ("alpha0", l_alpha),
        ("diag_shift", spec.diag_shift.map_or(l, <[f64]>::len)),
        ("kernel_index", spec.kernel_index.map_or(l, <[usize]>::len)),
    ] {
        if len != l {
            return Err(MkError::Shape(format!(
                "{name} has length {len}, the linear term has {l}"
            )));
        }
    }
    match spec.kernel_index {
        Some(ki) => {
            if let Some(&bad) = ki.iter().find(|&&k| k >= n) {
                return Err(MkError::Shape(format!(
                    "kernel index {bad} out of range for a kernel of size {n}"
                )));
            }
            Ok(ki.iter().map(|&k| k as u32).collect())
        }
        None => {
            if l != n {
                return Err(MkError::Shape(format!(
                    "{l} variables need a kernel_index for a kernel of size {n}"
                )));
            }
            Ok((0..l as u32).collect())
        }
    }
}

/// Checks the signs, the linear term and the bounds of `spec`; returns the diagonal shift
/// (zeros when none).
fn checked_terms(spec: &QpSpec<'_>) -> Result<Vec<f64>> {
    if spec.y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(MkError::config("y", "signs must be +1 or -1"));
    }
    if spec.p.iter().any(|v| !v.is_finite()) {
        return Err(MkError::non_finite("the linear term p"));
    }
    if spec.upper.iter().any(|&u| u.is_nan() || u <= 0.0) {
        return Err(MkError::config("upper", "bounds must be > 0 (or +inf)"));
    }
    let shift = spec
        .diag_shift
        .map_or_else(|| vec![0.0; spec.p.len()], <[f64]>::to_vec);
    if shift.iter().any(|&d| !(d.is_finite() && d >= 0.0)) {
        return Err(MkError::config("diag_shift", "must be finite and ≥ 0"));
    }
    Ok(shift)
}

/// `alpha0` clamped into its box `[0, upper]`: rounding from a previous solve is tolerated,
/// real infeasibility refused (a warm start is the last solve's α).
fn feasible_start(alpha0: &[f64], upper: &[f64]) -> Result<Vec<f64>> {
    let mut alpha = alpha0.to_vec();
    for (a, &u) in alpha.iter_mut().zip(upper) {
        let tol = 1e-9 * if u.is_finite() { u.max(1.0) } else { 1.0 };
        if !a.is_finite() || *a < -tol || *a > u + tol {
            return Err(MkError::config(
                "alpha0",
                format!("initial point {a} outside its box [0, {u}]"),
            ));
        }
        *a = a.clamp(0.0, u);
    }
    Ok(alpha)
}

/// Two kernel columns, for kernels without [`KernelColumns::column_slice`]: an SMO step needs
/// columns `i` and `j`, and the next step's `i` is usually one of them.
#[derive(Debug, Clone)]
struct ColumnCache {
    keys: [usize; 2],
    data: [Vec<f64>; 2],
    next: usize,
}

impl ColumnCache {
    fn new() -> Self {
        Self {
            keys: [usize::MAX; 2],
            data: [Vec::new(), Vec::new()],
            next: 0,
        }
    }

    fn invalidate(&mut self) {
        self.keys = [usize::MAX; 2];
    }

    /// Loads column `key` unless present, never evicting slot `protect`; returns its slot.
    fn ensure<K: KernelColumns + ?Sized>(
        &mut self,
        k: &K,
        key: usize,
        protect: Option<usize>,
    ) -> usize {
        if let Some(s) = self.keys.iter().position(|&c| c == key) {
            return s;
        }
        let slot = if protect == Some(self.next) {
            1 - self.next
        } else {
            self.next
        };
        let buf = &mut self.data[slot];
        buf.resize(k.n(), 0.0);
        k.column(key, buf);
        self.keys[slot] = key;
        self.next = 1 - slot;
        slot
    }

    fn one<'a, K: KernelColumns + ?Sized>(&'a mut self, k: &'a K, key: usize) -> &'a [f64] {
        if let Some(c) = k.column_slice(key) {
            return c;
        }
        let s = self.ensure(k, key, None);
        &self.data[s]
    }

    fn two<'a, K: KernelColumns + ?Sized>(
        &'a mut self,
        k: &'a K,
        a: usize,
        b: usize,
    ) -> (&'a [f64], &'a [f64]) {
        if let (Some(ca), Some(cb)) = (k.column_slice(a), k.column_slice(b)) {
            return (ca, cb);
        }
        let sa = self.ensure(k, a, None);
        let sb = self.ensure(k, b, Some(sa));
        (&self.data[sa], &self.data[sb])
    }
}

/// The state of an SMO solve: α, the gradient `G = Qα + p`, the shrinking bookkeeping.
///
/// The kernel is passed to every method that needs it rather than stored, so an outer
/// algorithm may change it between steps; after a change call
/// [`recompute_gradient`](Self::recompute_gradient) or [`set_gradient`](Self::set_gradient)
/// (both also re-read the diagonal and drop cached columns and `Ḡ`).
#[derive(Debug, Clone)]
pub struct SmoState {
    l: usize,
    n: usize,
    active_size: usize,
    perm: Vec<usize>,
    kidx: Vec<u32>,
    y: Vec<f64>,
    p: Vec<f64>,
    upper: Vec<f64>,
    shift: Vec<f64>,
    qd: Vec<f64>,
    alpha: Vec<f64>,
    status: Vec<Bound>,
    /// `h_t = −y_t G_t`: what WSS ranks, and updated without the signs.
    h: Vec<f64>,
    /// `0` if `t ∈ I_up` (resp. `I_low`), `−∞` otherwise: masks for the branch-free scans.
    up_mask: Vec<f64>,
    low_mask: Vec<f64>,
    /// `Ḡ_t = Σ_{s: α_s = U_s} U_s Q_ts` (G-form), maintained only when shrinking.
    grad_bar: Vec<f64>,
    /// `Ḡ` matches α and the kernel (it is rebuilt lazily after a kernel change).
    grad_bar_valid: bool,
    eps: f64,
    /// The tolerance asked for; `eps` is it or, when smaller, [`EPS_FLOOR`] times the gradient.
    eps_asked: f64,
    shrinking: bool,
    max_iter: usize,
    unshrunk: bool,
    counter: usize,
    iter: usize,
    /// No swap has happened: `perm` is the identity.
    natural: bool,
    /// The kernel map is `t mod n` (so contiguous slices apply while `natural`).
    periodic: bool,
    kdiag: Vec<f64>,
    /// Columns `i` and `j` gathered in position order (when not contiguous). `buf_i` is filled
    /// by `select_working_set` and reused by the `update_pair` that always follows it.
    buf_i: Vec<f64>,
    buf_j: Vec<f64>,
    cache: ColumnCache,
    /// `K̃[k(r), k(c)]` for the positions `r, c < compact_stride` (row-major, that stride),
    /// kept in step with every swap: once shrinking has left few variables, an SMO step reads
    /// two short rows that stay in cache instead of two kernel columns of length `n`
    /// gathered through `kidx`, as libsvm's cache of shrunk columns does. Empty while
    /// `compact_stride == 0`.
    compact: Vec<f64>,
    compact_stride: usize,
}

/// A compact kernel is built when shrinking leaves at most this fraction of the kernel's
/// size active (its memory is then at most a quarter of a dense kernel's).
const COMPACT_FRACTION: f64 = 0.5;

impl SmoState {
    /// Sets up the problem `spec` on `kernel` from the feasible point `alpha0` (zeros for a cold
    /// start; a previous solution for a warm start) and computes `G = Qα₀ + p`, costing one
    /// kernel column per nonzero `α₀_t`. `yᵀα₀` defines `Δ`, which every step preserves.
    pub fn new<K: KernelColumns + ?Sized>(
        kernel: &K,
        spec: &QpSpec<'_>,
        alpha0: &[f64],
        options: &SmoOptions,
    ) -> Result<Self> {
        let mut st = Self::setup(kernel, spec, alpha0, options)?;
        st.recompute_gradient(kernel)?;
        Ok(st)
    }

    /// [`SmoState::new`] at a point whose model values `values = K̃ coef(α₀)` (length `n`) the
    /// caller already holds: `G_t = y_t values_{k(t)} + p_t + d_t α₀_t` (as `Q_st = y_s y_t
    /// K̃_{k(s) k(t)} + [s = t] d_t`), in `O(l)` instead of one kernel column per non-zero
    /// `α₀_t`. An MKL solver keeping `K_m β` per kernel has them for any θ (`K_θ β =
    /// Σ θ_m K_m β`) while the columns of `K_θ` are computed on demand.
    pub(crate) fn with_values<K: KernelColumns + ?Sized>(
        kernel: &K,
        spec: &QpSpec<'_>,
        alpha0: &[f64],
        options: &SmoOptions,
        values: &[f64],
    ) -> Result<Self> {
        let mut st = Self::setup(kernel, spec, alpha0, options)?;
        if values.len() != st.n {
            return Err(MkError::Shape(format!(
                "model values of length {} for a kernel of size {}",
                values.len(),
                st.n
            )));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(MkError::non_finite("the SMO gradient"));
        }
        st.reset_kernel(kernel)?;
        for t in 0..st.l {
            let (y, k) = (st.y[t], st.kidx[t] as usize);
            // h_t = −y_t G_t (y_t² = 1).
            st.h[t] = -values[k] - y * (st.p[t] + st.shift[t] * st.alpha[t]);
        }
        Ok(st)
    }

    /// The state of [`SmoState::new`] before its gradient is computed.
    fn setup<K: KernelColumns + ?Sized>(
        kernel: &K,
        spec: &QpSpec<'_>,
        alpha0: &[f64],
        options: &SmoOptions,
    ) -> Result<Self> {
        options.validate()?;
        let n = kernel.n();
        let l = spec.p.len();
        let kidx = kernel_rows(spec, alpha0.len(), n)?;
        let shift = checked_terms(spec)?;
        let alpha = feasible_start(alpha0, spec.upper)?;
        let periodic = kidx.iter().enumerate().all(|(t, &k)| k as usize == t % n);
        let mut st = Self {
            l,
            n,
            active_size: l,
            perm: (0..l).collect(),
            kidx,
            y: spec.y.to_vec(),
            p: spec.p.to_vec(),
            upper: spec.upper.to_vec(),
            shift,
            qd: vec![0.0; l],
            alpha,
            status: vec![Bound::Lower; l],
            h: vec![0.0; l],
            up_mask: vec![0.0; l],
            low_mask: vec![0.0; l],
            grad_bar: vec![0.0; l],
            grad_bar_valid: false,
            eps: options.eps,
            eps_asked: options.eps,
            shrinking: options.shrinking,
            max_iter: options.max_iter_for(l),
            unshrunk: false,
            counter: l.min(CHECK_EVERY) + 1,
            iter: 0,
            natural: true,
            periodic,
            kdiag: vec![0.0; n],
            buf_i: vec![0.0; l],
            buf_j: vec![0.0; l],
            cache: ColumnCache::new(),
            compact: Vec::new(),
            compact_stride: 0,
        };
        for t in 0..l {
            st.set_status(t);
        }
        Ok(st)
    }

    /// Number of variables `l`.
    pub fn len(&self) -> usize {
        self.l
    }

    /// Always `false` (a QP has at least one variable).
    pub fn is_empty(&self) -> bool {
        self.l == 0
    }

    /// Variables currently in the working problem (`len()` unless shrunk).
    pub fn active_size(&self) -> usize {
        self.active_size
    }

    /// The size of the compact kernel of the working problem (0: none).
    #[cfg(test)]
    pub(super) fn compact_size(&self) -> usize {
        self.compact_stride
    }

    /// Total steps taken since construction.
    pub fn total_iterations(&self) -> usize {
        self.iter
    }

    /// α in original order.
    pub fn alpha(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.l];
        for (&o, &a) in self.perm.iter().zip(&self.alpha) {
            out[o] = a;
        }
        out
    }

    /// The gradient `G = Qα + p` in original order. Entries of shrunk variables are stale until
    /// [`unshrink`](Self::unshrink) (never the case after [`solve`](Self::solve)).
    pub fn gradient(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.l];
        for ((&o, &h), &y) in self.perm.iter().zip(&self.h).zip(&self.y) {
            out[o] = -y * h;
        }
        out
    }

    /// `F(α) = ½αᵀQα + pᵀα = ½ Σ_t α_t (G_t + p_t)`; exact when nothing is shrunk.
    pub fn objective(&self) -> f64 {
        let mut s = 0.0;
        for t in 0..self.l {
            s += self.alpha[t] * (self.p[t] - self.y[t] * self.h[t]);
        }
        0.5 * s
    }

    /// libsvm's `ρ`: mean of `y_t G_t` over free variables of the working problem, else the
    /// midpoint of `[max lower, min upper]` given by the bound variables (one side alone when
    /// the other is empty, where libsvm would return ±∞).
    pub fn rho(&self) -> f64 {
        let (mut ub, mut lb) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut nr_free, mut sum_free) = (0usize, 0.0);
        for t in 0..self.active_size {
            let yg = -self.h[t];
            let pos = self.y[t] > 0.0;
            match self.status[t] {
                Bound::Upper if pos => lb = lb.max(yg),
                Bound::Upper => ub = ub.min(yg),
                Bound::Lower if pos => ub = ub.min(yg),
                Bound::Lower => lb = lb.max(yg),
                Bound::Free => {
                    nr_free += 1;
                    sum_free += yg;
                }
            }
        }
        if nr_free > 0 {
            sum_free / nr_free as f64
        } else if ub.is_finite() && lb.is_finite() {
            (ub + lb) / 2.0
        } else if ub.is_finite() {
            ub
        } else if lb.is_finite() {
            lb
        } else {
            0.0
        }
    }

    /// `m(α) − M(α)` over the working problem (the whole problem when nothing is shrunk).
    pub fn violation(&self) -> f64 {
        let (up, low) = self.extremes();
        if up == f64::NEG_INFINITY || low == f64::NEG_INFINITY {
            0.0
        } else {
            up + low
        }
    }

    /// `(m(α), −M(α))` over the working problem.
    fn extremes(&self) -> (f64, f64) {
        let a = self.active_size;
        let (mut up, mut low) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for ((&h, &u), &w) in self.h[..a]
            .iter()
            .zip(&self.up_mask[..a])
            .zip(&self.low_mask[..a])
        {
            up = up.max(h + u);
            low = low.max(w - h);
        }
        (up, low)
    }

    /// Status and masks of position `t` from its α.
    #[inline]
    fn set_status(&mut self, t: usize) {
        (self.status[t], self.up_mask[t], self.low_mask[t]) =
            classify(self.alpha[t], self.upper[t], self.y[t]);
    }

    /// `out_t += c · K̃_{row, k(t)}` for `t` in `range` (a kernel column mapped to positions).
    fn add_column(
        row: &[f64],
        kidx: &[u32],
        out: &mut [f64],
        range: std::ops::Range<usize>,
        c: f64,
    ) {
        for (o, &k) in out[range.clone()].iter_mut().zip(&kidx[range]) {
            *o += c * row[k as usize];
        }
    }

    /// `Σ_{(s, c)} c K̃_{kidx[s], ·}` (over the kernel's points) when the kernel has a product
    /// faster than its columns ([`KernelColumns::products`]) and there are terms to gather;
    /// `None` when the columns are to be read.
    fn products<K: KernelColumns + ?Sized>(
        &self,
        kernel: &K,
        terms: &[(usize, f64)],
    ) -> Option<Vec<f64>> {
        if terms.len() < 2 {
            return None;
        }
        let mut w = vec![0.0; self.n];
        for &(s, c) in terms {
            w[self.kidx[s] as usize] += c;
        }
        let mut out = vec![0.0; self.n];
        kernel.products(&w, &mut out).then_some(out)
    }

    /// `out[t] += Σ_{(s, c)} c K̃_{kidx[s], kidx[t]}` for `t` in `range`: one product with the
    /// kernel ([`SmoState::products`]), or one column per term.
    fn add_columns<K: KernelColumns + ?Sized>(
        &mut self,
        kernel: &K,
        terms: &[(usize, f64)],
        range: std::ops::Range<usize>,
        out: &mut [f64],
    ) {
        if let Some(prod) = self.products(kernel, terms) {
            return Self::add_column(&prod, &self.kidx, out, range, 1.0);
        }
        for &(s, c) in terms {
            let row = self.cache.one(kernel, self.kidx[s] as usize);
            Self::add_column(row, &self.kidx, out, range.clone(), c);
        }
    }

    /// Recomputes `diag(K̃)` and `G = Qα + p` from scratch on `kernel` (e.g. after an outer
    /// MKL step changed it) and restores the full working problem. Costs one column per
    /// nonzero α.
    pub fn recompute_gradient<K: KernelColumns + ?Sized>(&mut self, kernel: &K) -> Result<()> {
        self.reset_kernel(kernel)?;
        let l = self.l;
        // h_t = −y_t G_t = −y_t p_t − Σ_s y_s α_s K̃_{s,t} (− y_t d_t α_t).
        for ((h, &y), &p) in self.h.iter_mut().zip(&self.y).zip(&self.p) {
            *h = -y * p;
        }
        let terms: Vec<(usize, f64)> = (0..l)
            .filter(|&s| self.status[s] != Bound::Lower)
            .map(|s| (s, -self.alpha[s] * self.y[s]))
            .collect();
        let mut h = std::mem::take(&mut self.h);
        self.add_columns(kernel, &terms, 0..l, &mut h);
        self.h = h;
        for &(s, _) in &terms {
            self.h[s] -= self.y[s] * self.shift[s] * self.alpha[s];
        }
        Ok(())
    }

    /// Replaces the gradient by `g` (original order, length `l`), e.g. one an interleaved MKL
    /// algorithm recombined as `Σ_m θ_m g_m`; `kernel` must be the kernel `g` belongs to (its
    /// diagonal is re-read). Costs `O(l)`: `Ḡ` is rebuilt only if shrinking later needs it.
    pub fn set_gradient<K: KernelColumns + ?Sized>(&mut self, kernel: &K, g: &[f64]) -> Result<()> {
        if g.len() != self.l {
            return Err(MkError::Shape(format!(
                "gradient of length {} for {} variables",
                g.len(),
                self.l
            )));
        }
        if g.iter().any(|v| !v.is_finite()) {
            return Err(MkError::non_finite("the SMO gradient"));
        }
        self.reset_kernel(kernel)?;
        for ((h, &y), &g) in self.h.iter_mut().zip(&self.y).zip(g) {
            *h = -y * g;
        }
        Ok(())
    }

    /// `Ḡ_t = Σ_{s: α_s = U_s} U_s Q_ts` from scratch (one column per variable at its bound).
    fn compute_grad_bar<K: KernelColumns + ?Sized>(&mut self, kernel: &K) {
        let l = self.l;
        let terms: Vec<(usize, f64)> = (0..l)
            .filter(|&s| self.status[s] == Bound::Upper)
            .map(|s| (s, self.upper[s] * self.y[s]))
            .collect();
        let mut g = std::mem::take(&mut self.grad_bar);
        g.iter_mut().for_each(|v| *v = 0.0);
        self.add_columns(kernel, &terms, 0..l, &mut g);
        self.grad_bar = g;
        for &(s, _) in &terms {
            // Pre-signed: the loop below multiplies by y_s again.
            self.grad_bar[s] += self.y[s] * self.shift[s] * self.upper[s];
        }
        for (g, &y) in self.grad_bar.iter_mut().zip(&self.y) {
            *g *= y;
        }
        self.grad_bar_valid = true;
    }

    /// Back to the natural order with every variable active, fresh diagonal, empty cache.
    fn reset_kernel<K: KernelColumns + ?Sized>(&mut self, kernel: &K) -> Result<()> {
        if kernel.n() != self.n {
            return Err(MkError::Shape(format!(
                "kernel of size {} for a problem set up on size {}",
                kernel.n(),
                self.n
            )));
        }
        self.active_size = self.l;
        self.drop_compact();
        self.restore_order();
        self.unshrunk = false;
        self.counter = self.l.min(CHECK_EVERY) + 1;
        self.cache.invalidate();
        self.grad_bar_valid = false;
        kernel.diag(&mut self.kdiag);
        if self.kdiag.iter().any(|v| !v.is_finite()) {
            return Err(MkError::non_finite("the kernel diagonal"));
        }
        for t in 0..self.l {
            self.qd[t] = self.kdiag[self.kidx[t] as usize] + self.shift[t];
        }
        Ok(())
    }

    /// Makes every variable active again, reconstructing the gradient of the shrunk ones.
    pub fn unshrink<K: KernelColumns + ?Sized>(&mut self, kernel: &K) {
        self.reconstruct_gradient(kernel);
        self.active_size = self.l;
        self.drop_compact();
        self.restore_order();
    }

    fn drop_compact(&mut self) {
        self.compact_stride = 0;
        self.compact = Vec::new();
    }

    /// Builds the compact kernel of the working problem (see the `compact` field).
    fn build_compact<K: KernelColumns + ?Sized>(&mut self, kernel: &K) {
        let a = self.active_size;
        self.compact.resize(a * a, 0.0);
        for r in 0..a {
            let row = self.cache.one(kernel, self.kidx[r] as usize);
            for (o, &k) in self.compact[r * a..(r + 1) * a]
                .iter_mut()
                .zip(&self.kidx[..a])
            {
                *o = row[k as usize];
            }
        }
        self.compact_stride = a;
    }

    /// One SMO step (libsvm's main loop body, shrinking included). Returns
    /// [`StepOutcome::Optimal`] when the stopping test holds on the full problem.
    pub fn step<K: KernelColumns + ?Sized>(&mut self, kernel: &K) -> StepOutcome {
        self.counter -= 1;
        if self.counter == 0 {
            self.counter = self.l.min(CHECK_EVERY);
            if self.shrinking {
                self.do_shrinking(kernel);
            }
        }
        let (i, j) = match self.select_working_set(kernel) {
            Some(ij) => ij,
            None => {
                // Optimal on the shrunk problem: check again on the full one.
                self.unshrink(kernel);
                match self.select_working_set(kernel) {
                    Some(ij) => {
                        self.counter = 1; // shrink at the next step
                        ij
                    }
                    None => return StepOutcome::Optimal,
                }
            }
        };
        self.iter += 1;
        StepOutcome::Step(self.update_pair(kernel, i, j))
    }

    /// Runs [`step`](Self::step) until optimal or `max_iter` steps, polling `interrupt` every
    /// 1000 steps; ends with the full problem active (exact gradient, objective and ρ).
    pub fn solve<K: KernelColumns + ?Sized>(
        &mut self,
        kernel: &K,
        interrupt: &dyn Interrupt,
    ) -> Result<SolveInfo> {
        let mut steps = 0usize;
        let mut converged = false;
        while steps < self.max_iter {
            if steps.is_multiple_of(CHECK_EVERY) {
                interrupt.check()?;
                // The gradient is known to about ε times its own size at best: below that no
                // pair can be told optimal, and a smaller eps only spins to max_iter
                // (docs/mathematics.md §3.2).
                let size = self.h.iter().fold(0.0f64, |a, x| a.max(x.abs()));
                self.eps = self.eps_asked.max(EPS_FLOOR * size);
            }
            match self.step(kernel) {
                StepOutcome::Optimal => {
                    converged = true;
                    break;
                }
                StepOutcome::Step(_) => steps += 1,
            }
        }
        if !converged {
            self.unshrink(kernel);
        }
        Ok(SolveInfo {
            objective: self.objective(),
            rho: self.rho(),
            iterations: steps,
            converged,
            violation: self.violation(),
        })
    }

    /// Kernels rows can be read in place over positions (no swap, map `t mod n`).
    #[inline]
    fn contiguous(&self) -> bool {
        self.natural && self.periodic
    }

    /// WSS2 over the working problem (libsvm's `select_working_set`, in terms of
    /// `h = −y∘G`); `None` when `m − M < eps`. Leaves column `i` in `buf_i` when not
    /// contiguous.
    fn select_working_set<K: KernelColumns + ?Sized>(
        &mut self,
        kernel: &K,
    ) -> Option<(usize, usize)> {
        let a = self.active_size;
        let (gmax, i) = scan::last_argmax(&self.h[..a], &self.up_mask[..a])?;
        let contiguous = self.contiguous();
        let qdi = self.qd[i];
        let mut sc = Scan2::new();
        let cs = self.compact_stride;
        if cs > 0 || !contiguous {
            let row_i: &[f64] = if cs > 0 {
                &self.compact[i * cs..i * cs + a]
            } else {
                let row = self.cache.one(kernel, self.kidx[i] as usize);
                scan::gather(row, &self.kidx[..a], &mut self.buf_i[..a]);
                &self.buf_i[..a]
            };
            sc.block(
                gmax,
                qdi,
                &self.h[..a],
                &self.low_mask[..a],
                &self.qd[..a],
                row_i,
                0,
            );
        } else {
            let row = self.cache.one(kernel, self.kidx[i] as usize);
            let mut s = 0;
            while s < a {
                let e = (s + self.n).min(a);
                sc.block(
                    gmax,
                    qdi,
                    &self.h[s..e],
                    &self.low_mask[s..e],
                    &self.qd[s..e],
                    &row[..e - s],
                    s,
                );
                s = e;
            }
        }
        let (gmax2, j) = sc.finish();
        match j {
            Some(j) if gmax + gmax2 >= self.eps => Some((i, j)),
            _ => None,
        }
    }

    /// Solves the two-variable subproblem on positions `i, j` and updates `h` (and `Ḡ`).
    fn update_pair<K: KernelColumns + ?Sized>(&mut self, kernel: &K, i: usize, j: usize) -> Step {
        let (ki, kj) = (self.kidx[i] as usize, self.kidx[j] as usize);
        let cs = self.compact_stride;
        let k_ij = if cs > 0 {
            self.compact[i * cs + j]
        } else {
            self.cache.two(kernel, ki, kj).0[kj]
        };
        let (old_i, old_j) = (self.alpha[i], self.alpha[j]);
        let (g_i, g_j) = (-self.y[i] * self.h[i], -self.y[j] * self.h[j]);
        // Same curvature for both sign cases (see select_working_set).
        let quad = self.qd[i] + self.qd[j] - 2.0 * k_ij;
        let quad = if quad > 0.0 { quad } else { TAU };
        let (ai, aj) = clip_pair(
            self.y[i] != self.y[j],
            (old_i, old_j),
            (g_i, g_j),
            quad,
            (self.upper[i], self.upper[j]),
        );
        self.alpha[i] = ai;
        self.alpha[j] = aj;
        let (d_i, d_j) = (ai - old_i, aj - old_j);
        self.update_h(kernel, (i, ki, self.y[i] * d_i), (j, kj, self.y[j] * d_j));
        // Ḡ follows the variables that reach or leave their upper bound.
        for (pos, key) in [(i, ki), (j, kj)] {
            let was_upper = self.status[pos] == Bound::Upper;
            (self.status[pos], self.up_mask[pos], self.low_mask[pos]) =
                classify(self.alpha[pos], self.upper[pos], self.y[pos]);
            if self.grad_bar_valid && was_upper != (self.status[pos] == Bound::Upper) {
                self.track_grad_bar(kernel, pos, key);
            }
        }
        Step {
            i: self.perm[i],
            j: self.perm[j],
            delta_i: d_i,
            delta_j: d_j,
        }
    }

    /// The gradient update of a step over the working problem, `h_t −= K̃_{t,i} c_i +
    /// K̃_{t,j} c_j` with `c = yΔα` for the pair `(i, k(i), c_i)`, `(j, k(j), c_j)`: as
    /// `h_t = −y_t G_t` and `G_t += y_t (K̃_{t,i} y_iΔα_i + K̃_{t,j} y_jΔα_j)` plus the shifts,
    /// no signs in the loop. It reads the compact kernel, the columns in place, or (not
    /// contiguous) the columns gathered to positions.
    #[inline]
    fn update_h<K: KernelColumns + ?Sized>(
        &mut self,
        kernel: &K,
        (i, ki, ci): (usize, usize, f64),
        (j, kj, cj): (usize, usize, f64),
    ) {
        let (a, cs) = (self.active_size, self.compact_stride);
        if cs > 0 {
            let (row_i, row_j) = (
                &self.compact[i * cs..i * cs + a],
                &self.compact[j * cs..j * cs + a],
            );
            scan::update(&mut self.h[..a], row_i, row_j, ci, cj);
        } else if self.contiguous() {
            let (col_i, col_j) = self.cache.two(kernel, ki, kj);
            let mut s = 0;
            while s < a {
                let e = (s + self.n).min(a);
                scan::update(&mut self.h[s..e], &col_i[..e - s], &col_j[..e - s], ci, cj);
                s = e;
            }
        } else {
            let col_j = self.cache.two(kernel, ki, kj).1;
            // buf_i holds column i from select_working_set.
            scan::gather(col_j, &self.kidx[..a], &mut self.buf_j[..a]);
            scan::update(&mut self.h[..a], &self.buf_i[..a], &self.buf_j[..a], ci, cj);
        }
        self.h[i] -= ci * self.shift[i];
        self.h[j] -= cj * self.shift[j];
    }

    /// `Ḡ` (which tracks `Σ_{α_s = U_s} U_s Q_{:,s}` over all `l` variables, for
    /// reconstruction) after position `pos` (kernel row `key`) moved onto or off its upper
    /// bound: `±U Q_{:,pos}` from the whole kernel column.
    fn track_grad_bar<K: KernelColumns + ?Sized>(&mut self, kernel: &K, pos: usize, key: usize) {
        let c_pos = self.upper[pos];
        let col = self.cache.one(kernel, key);
        let sign = if self.status[pos] == Bound::Upper {
            1.0
        } else {
            -1.0
        };
        let c = sign * c_pos * self.y[pos];
        for ((g, &yt), &kt) in self.grad_bar.iter_mut().zip(&self.y).zip(&self.kidx) {
            *g += yt * c * col[kt as usize];
        }
        self.grad_bar[pos] += sign * c_pos * self.shift[pos];
    }

    /// libsvm's `be_shrunk`: a bound variable in only one of `I_up`, `I_low` whose score lies
    /// beyond the current extreme of the other set, so it will not be chosen soon.
    fn be_shrunk(&self, t: usize, gmax1: f64, gmax2: f64) -> bool {
        let h = self.h[t];
        let (in_up, in_low) = (self.up_mask[t] == 0.0, self.low_mask[t] == 0.0);
        match (in_up, in_low) {
            (true, false) => -h > gmax2,
            (false, true) => h > gmax1,
            _ => false,
        }
    }

    fn do_shrinking<K: KernelColumns + ?Sized>(&mut self, kernel: &K) {
        // gmax1 = m(α) over I_up, gmax2 = −M(α) over I_low.
        let (gmax1, gmax2) = self.extremes();
        if !self.unshrunk && gmax1 + gmax2 <= self.eps * 10.0 {
            // Close to the end: unshrink once so that early, wrong shrinking decisions are undone.
            self.unshrunk = true;
            self.unshrink(kernel);
        }
        let mut t = 0;
        while t < self.active_size {
            if self.be_shrunk(t, gmax1, gmax2) {
                self.active_size -= 1;
                while self.active_size > t {
                    if !self.be_shrunk(self.active_size, gmax1, gmax2) {
                        self.swap(t, self.active_size);
                        break;
                    }
                    self.active_size -= 1;
                }
            }
            t += 1;
        }
        if self.compact_stride == 0 && (self.active_size as f64) <= COMPACT_FRACTION * self.n as f64
        {
            self.build_compact(kernel);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.perm.swap(a, b);
        self.kidx.swap(a, b);
        self.y.swap(a, b);
        self.p.swap(a, b);
        self.upper.swap(a, b);
        self.shift.swap(a, b);
        self.qd.swap(a, b);
        self.alpha.swap(a, b);
        self.status.swap(a, b);
        self.h.swap(a, b);
        self.up_mask.swap(a, b);
        self.low_mask.swap(a, b);
        self.grad_bar.swap(a, b);
        self.natural = false;
        let cs = self.compact_stride;
        if cs > 0 {
            // Positions beyond the stride are never swapped in: shrinking only moves
            // variables within the working prefix, which only shrinks while compact.
            debug_assert!(a < cs && b < cs);
            let (lo, hi) = (a.min(b), a.max(b));
            let (head, tail) = self.compact.split_at_mut(hi * cs);
            head[lo * cs..(lo + 1) * cs].swap_with_slice(&mut tail[..cs]);
            for row in self.compact.chunks_exact_mut(cs) {
                row.swap(a, b);
            }
        }
    }

    /// Puts every variable back at its original position (only with the full problem active),
    /// so the contiguous loops apply again. Rare (once per unshrink): allocates.
    fn restore_order(&mut self) {
        if self.natural {
            return;
        }
        debug_assert_eq!(self.active_size, self.l);
        fn scatter<T: Copy>(v: &mut Vec<T>, perm: &[usize]) {
            let mut out = v.clone();
            for (&o, &x) in perm.iter().zip(v.iter()) {
                out[o] = x;
            }
            *v = out;
        }
        let perm = std::mem::take(&mut self.perm);
        scatter(&mut self.kidx, &perm);
        scatter(&mut self.y, &perm);
        scatter(&mut self.p, &perm);
        scatter(&mut self.upper, &perm);
        scatter(&mut self.shift, &perm);
        scatter(&mut self.qd, &perm);
        scatter(&mut self.alpha, &perm);
        scatter(&mut self.status, &perm);
        scatter(&mut self.h, &perm);
        scatter(&mut self.up_mask, &perm);
        scatter(&mut self.low_mask, &perm);
        scatter(&mut self.grad_bar, &perm);
        self.perm = (0..self.l).collect();
        self.natural = true;
    }

    /// libsvm's `reconstruct_gradient`: `G_t = Ḡ_t + p_t + Σ_{s free} α_s Q_ts` for the shrunk
    /// `t` (free variables are never shrunk, so they are all in the working prefix).
    fn reconstruct_gradient<K: KernelColumns + ?Sized>(&mut self, kernel: &K) {
        let (a, l) = (self.active_size, self.l);
        if a == l {
            return;
        }
        if !self.grad_bar_valid {
            self.compute_grad_bar(kernel);
        }
        // Work in G-form on the tail: h_t ← G_t, converted at the end.
        for t in a..l {
            self.h[t] = self.grad_bar[t] + self.p[t];
        }
        let nr_free = self.status[..a]
            .iter()
            .filter(|&&s| s == Bound::Free)
            .count();
        let free: Vec<(usize, f64)> = (0..a)
            .filter(|&s| self.status[s] == Bound::Free)
            .map(|s| (s, self.alpha[s] * self.y[s]))
            .collect();
        if let Some(prod) = self.products(kernel, &free) {
            for t in a..l {
                self.h[t] += self.y[t] * prod[self.kidx[t] as usize];
            }
        } else if nr_free * l > 2 * a * (l - a) {
            // The loop order that reads fewer kernel columns.
            for t in a..l {
                let row = self.cache.one(kernel, self.kidx[t] as usize);
                let mut acc = 0.0;
                for s in 0..a {
                    if self.status[s] == Bound::Free {
                        acc += self.alpha[s] * self.y[s] * row[self.kidx[s] as usize];
                    }
                }
                self.h[t] += self.y[t] * acc;
            }
        } else {
            for s in 0..a {
                if self.status[s] != Bound::Free {
                    continue;
                }
                let row = self.cache.one(kernel, self.kidx[s] as usize);
                let c = self.alpha[s] * self.y[s];
                for ((g, &yt), &kt) in self.h[a..l]
                    .iter_mut()
                    .zip(&self.y[a..l])
                    .zip(&self.kidx[a..l])
                {
                    *g += yt * c * row[kt as usize];
                }
            }
        }
        for t in a..l {
            self.h[t] *= -self.y[t];
        }
    }
}
