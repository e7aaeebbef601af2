//! The single-kernel problem on `K_θ = Σ_m θ_m K_m` of a dense stored stack, solved without
//! forming `K_θ` again once θ moves: per-kernel gradient caches `h_m = K_m β` and the columns
//! of `K_θ` computed as SMO reads them.
//!
//! Kloft et al. ("ℓp-Norm Multiple Kernel Learning", JMLR 12, 2011) keep `g_m = K_m α`
//! beside the SVM so that the block norms `‖w_m‖² = θ_m² αᵀK_mα` of eq. 17's θ update cost
//! `O(n)` per kernel (their Algorithm 2). Here the caches serve Algorithm 1's warm-started
//! solves (docs/mathematics.md §3.3), and are brought up to date only after a solve, from the
//! coefficients it changed:
//!
//! - the forms `γ_m = βᵀK_mβ = βᵀh_m` of the certificate and of eq. 17 cost `O(nM)`, no
//!   pass over the stack;
//! - the model at any θ, `f = K_θ β = Σ_m θ_m h_m`, is SMO's warm-start gradient at a new θ
//!   (`G = Y f − 1` for the hinge), so moving θ reads nothing;
//! - SMO asks `K_θ` for the columns it steps on, `Σ_{θ_m > 0} θ_m K_m[:, i]`, kept in a
//!   column cache until θ moves (libsvm's `get_Q`, as SMO-MKL and SPG-GMKL do).
//!
//! A whole iteration then reads the rows of the coefficients that changed and the columns SMO
//! touched, where forming `K_θ` and reading the forms read the stack once and a half
//! (benches/peers/results/proto_cached_engine.md).

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::SingleKernel;
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{weighted, KernelStack};
use crate::linalg::dot;
use crate::losses::Loss;
use crate::solvers::smo::{CachedColumns, DenseKernel};

/// `h_m = K_m β_c` for every kernel of a stack, exact at the coefficients `β_c`.
pub(crate) struct GradientCaches {
    n: usize,
    /// `h_m`, kernel after kernel (`M × n`).
    h: Vec<f64>,
    /// `β_c`.
    at: Vec<f64>,
    /// `diag(K_m)`, kernel after kernel: every `K_θ`'s diagonal without reading the stack.
    diag: Vec<f64>,
    /// The columns of `K_θ` the last solve computed on demand.
    columns: usize,
}

impl GradientCaches {
    /// Whether the caches serve `loss` on `stack`: SMO's classification losses on a stack
    /// whose entries are stored (a stack computed on demand has its own column cache, factors
    /// have their own Newton path, and ε-SVR's warm start is not a `y ∘ α`).
    pub fn apply(stack: &dyn KernelStack, loss: Loss) -> bool {
        matches!(loss, Loss::Hinge | Loss::SquaredHinge)
            && stack.stores_entries()
            && stack.on_demand().is_none()
            && stack.low_rank().is_none()
    }

    /// Empty caches (`β_c = 0`) of `stack`, with its diagonals (`M·n` entries read).
    pub fn new(stack: &dyn KernelStack) -> Self {
        let n = stack.n();
        let mut diag = vec![0.0; stack.m() * n];
        diag.par_chunks_mut(n.max(1))
            .enumerate()
            .for_each(|(m, d)| stack.diag(m, d));
        GradientCaches {
            n,
            h: vec![0.0; stack.m() * n],
            at: vec![0.0; n],
            diag,
            columns: 0,
        }
    }

    /// Whether the next solve should form `K_θ` (its upper triangle: `n²/2` entries per
    /// kernel, in long row segments) rather than compute its columns on demand (`n` each,
    /// one row of every kernel): when the last solve computed more than `n/4` of them. The
    /// same free support vectors move from one θ to the next, and a column on demand costs
    /// more per entry than the formed triangle (docs/performance.md, "ℓp steps on
    /// per-kernel gradient caches").
    fn form(&self) -> bool {
        4 * self.columns > self.n
    }

    /// Brings the caches to `beta`: `h_m += K_m (β − β_c)`, reading only the rows of the
    /// coefficients that changed ([`KernelStack::add_matvecs`]).
    pub fn update(&mut self, stack: &dyn KernelStack, beta: &[f64]) {
        let delta: Vec<f64> = beta.iter().zip(&self.at).map(|(b, a)| b - a).collect();
        if delta.iter().all(|&d| d == 0.0) {
            return;
        }
        stack.add_matvecs(&delta, &mut self.h);
        self.at.copy_from_slice(beta);
    }

    /// `γ_m = βᵀK_mβ` at `beta` for every kernel: the forms of a solver's whole iterates,
    /// after which its solves run on [`SingleKernel::solve_cached`]. From the caches in
    /// `slot`, brought to `beta` where that reads no more entries than the forms do; else
    /// read from `stack`, the caches left behind (the solves then add `K_θ (β − β_c)` from
    /// the kernels with a weight). Built in `slot` at the first call (the rows of `β`'s
    /// non-zeros) when `moving` coefficients changing at the next forms would make the
    /// update pay (`moving = 0`: always; the SVM wrapper passes its free support vectors,
    /// since the bounded ones mostly stay).
    pub fn forms_in(
        slot: &mut Option<Self>,
        stack: &dyn KernelStack,
        beta: &[f64],
        moving: usize,
    ) -> Vec<f64> {
        let refresh = match slot {
            Some(caches) => {
                let changed = beta.iter().zip(&caches.at).filter(|(b, a)| b != a).count();
                update_pays(changed, beta)
            }
            None => update_pays(moving, beta),
        };
        if !refresh {
            let mut q = vec![0.0; stack.m()];
            stack.quad_forms(beta, &mut q);
            return q;
        }
        let caches = slot.get_or_insert_with(|| GradientCaches::new(stack));
        caches.update(stack, beta);
        caches.forms(beta)
    }

    /// Whether the caches are at `beta` (`h_m = K_m β`).
    pub fn is_at(&self, beta: &[f64]) -> bool {
        self.at == beta
    }

    /// `h_k = K_k β_c` for the kernels `set`, `n` values each, one after another (the SVM
    /// Hessian's products, docs/mathematics.md §2.11).
    pub fn products(&self, set: &[usize]) -> Vec<f64> {
        let n = self.n;
        set.iter()
            .flat_map(|&k| self.h[k * n..(k + 1) * n].iter().copied())
            .collect()
    }

    /// `γ_m = βᵀK_mβ = βᵀh_m` for every kernel (the caches must be at `beta`).
    pub fn forms(&self, beta: &[f64]) -> Vec<f64> {
        debug_assert!(self.at == beta, "the caches are at another β");
        self.h
            .chunks_exact(self.n.max(1))
            .map(|h| dot(h, beta))
            .collect()
    }

    /// `Σ_{(m, t) ∈ w} t · v_m` of per-kernel vectors `v` (`M × n`).
    fn combined_of(&self, v: &[f64], w: &[(usize, f64)]) -> Vec<f64> {
        let n = self.n;
        let mut out = vec![0.0; n];
        for &(m, t) in w {
            for (o, x) in out.iter_mut().zip(&v[m * n..(m + 1) * n]) {
                *o += t * x;
            }
        }
        out
    }

    /// `K_θ β_c = Σ_m θ_m h_m` (`w` = [`weighted`]`(θ)`).
    pub fn combined(&self, w: &[(usize, f64)]) -> Vec<f64> {
        self.combined_of(&self.h, w)
    }

    /// Whether the caches follow every solve of `θ` (`w` = [`weighted`]`(θ)`): when `θ`
    /// weighs most kernels, so that the rows the update reads are mostly those a model at a
    /// new `β` reads anyway (ℓp, whose forms read the caches at every solve). Else they wait
    /// for the forms ([`Self::forms_in`]; the SVM wrapper's trial weights, whose solves a
    /// refused step never certifies).
    fn eager(stack: &dyn KernelStack, w: &[(usize, f64)]) -> bool {
        2 * w.len() > stack.m()
    }

    /// The model at `beta`, `K_θ β = Σ_m θ_m h_m + K_θ (β − β_c)` (`w` = [`weighted`]`(θ)`):
    /// the caches brought to `beta` first when [`Self::eager`], else the kernels of `θ` read
    /// on the rows where `β` differs from `β_c`.
    fn model(
        &mut self,
        stack: &dyn KernelStack,
        theta: &[f64],
        w: &[(usize, f64)],
        beta: &[f64],
    ) -> Vec<f64> {
        if Self::eager(stack, w) {
            self.update(stack, beta);
            return self.combined(w);
        }
        let mut f = self.combined(w);
        let delta: Vec<f64> = beta.iter().zip(&self.at).map(|(b, a)| b - a).collect();
        if delta.iter().any(|&d| d != 0.0) {
            let mut kd = vec![0.0; self.n];
            stack.combined_matvec(theta, &delta, &mut kd);
            f.iter_mut().zip(&kd).for_each(|(a, b)| *a += b);
        }
        f
    }
}

/// Whether an update of the caches for `changed` coefficients reads no more than the forms
/// `βᵀK_mβ` at `beta` do: `n` entries per changed coefficient and kernel against the upper
/// triangle's rows of `β`'s non-zeros (`n − i` from row `i`).
fn update_pays(changed: usize, beta: &[f64]) -> bool {
    let n = beta.len();
    let forms: usize = (0..n).filter(|&i| beta[i] != 0.0).map(|i| n - i).sum();
    changed * n <= forms
}

/// The coefficients `β = y ∘ α` of the classification losses' QP variables.
fn coef_of(y: &[f64], alpha: &[f64]) -> Vec<f64> {
    y.iter().zip(alpha).map(|(y, a)| y * a).collect()
}

impl SingleKernel {
    /// Solves by SMO on `K_θ` of `stack` without forming it, warm-started at the last
    /// solution (or the warm start set), whose gradient comes from `caches`; returns
    /// `f = K_θ β` (from the caches brought to the new `β` when `θ` weighs most kernels,
    /// else SMO's own, the caches left for [`GradientCaches::forms_in`]) and the intercept
    /// that minimises the loss for it (as [`SingleKernel::solve_combined`]). The columns SMO reads cost
    /// `|{m: θ_m > 0}|·n` entries each and stay in a cache of up to `n` columns (the memory
    /// of a formed `K_θ`), for this θ only; when the last solve needed more than a quarter of
    /// them ([`GradientCaches::form`]), `K_θ` is formed in `k_theta` instead, which reads
    /// fewer entries.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve_cached(
        &mut self,
        stack: &dyn KernelStack,
        caches: &mut GradientCaches,
        y: &[f64],
        c: &[f64],
        theta: &[f64],
        tol: f64,
        k_theta: &mut Vec<f64>,
        interrupt: &dyn Interrupt,
    ) -> Result<(Vec<f64>, f64)> {
        let start = match self {
            SingleKernel::Smo { last: Some(s), .. } => s.coef.clone(),
            SingleKernel::Smo {
                warm: Some(a), y, ..
            } => coef_of(y, a),
            _ => vec![0.0; stack.n()],
        };
        let w = weighted(theta);
        // Where the caches wait and `K_θ` is formed, SMO's gradient from the formed columns
        // of the start's non-zeros reads less than their rows in every weighted kernel.
        let values = (GradientCaches::eager(stack, &w) || !caches.form())
            .then(|| caches.model(stack, theta, &w, &start));
        let n = stack.n();
        if caches.form() {
            k_theta.resize(n * n, 0.0);
            stack.combine(theta, k_theta);
            let kernel = DenseKernel::new(k_theta, n)?;
            self.solve_smo(&kernel, tol, interrupt, values.as_deref())?;
            // Count the columns as on demand: the free support vectors' steps.
            caches.columns = self.changed(&start);
        } else {
            *k_theta = Vec::new();
            let diag = caches.combined_of(&caches.diag, &w);
            let computed = AtomicUsize::new(0);
            let compute = |i: usize, out: &mut [f64]| {
                computed.fetch_add(1, Ordering::Relaxed);
                stack.combined_column(&w, i, out)
            };
            let kernel = CachedColumns::new(diag, compute, 8 * n * n);
            self.solve_smo(&kernel, tol, interrupt, values.as_deref())?;
            caches.columns = computed.into_inner();
        }
        // SMO's model values at its final gradient, where the caches wait for the forms.
        let f = match self {
            SingleKernel::Smo { last: Some(s), .. } if !GradientCaches::eager(stack, &w) => {
                s.values.clone()
            }
            _ => caches.model(stack, theta, &w, self.beta()),
        };
        let b = self
            .loss()
            .best_intercept(y, &self.shifted(&f), c, self.intercept());
        Ok((f, b))
    }

    /// How many coefficients of `β` differ from `start`.
    fn changed(&self, start: &[f64]) -> usize {
        self.beta()
            .iter()
            .zip(start)
            .filter(|(a, b)| a != b)
            .count()
    }
}
