//! Kloft et al.'s Algorithm 1 (the wrapper): a full single-kernel solve on `K_θ = Σ θ_m K_m`
//! between closed-form θ updates (eq. 17), with a working set of points when `β` is sparse.

use super::{certificate, LpConfig};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::penalties::duals::{natural_dual, read_forms};
use crate::penalties::{p_norm, theta_update};
use crate::result::{FitResult, PsdWitness, SolveStatus};
use crate::solvers::driver::{Checked, Driver, Outcome, Solver};
use crate::solvers::points::{gather_points, new_points, scatter_points, PointSet};
use crate::solvers::schedule::{GapSchedule, Settled};
use crate::solvers::single::{GradientCaches, SingleKernel};
use crate::solvers::witness::PsdCheck;

/// The over-relaxation of the θ fixed point used while it helps (see [`extrapolate`]):
/// `ω = p* = p/(p−1)`, at most 4.
///
/// Why: with `β` held fixed, eq. 17 maps `log θ_m` to `(2/(p+1)) log θ_m + const`, a
/// contraction of rate `ρ = 2/(p+1)` that `ω = 1/(1−ρ) = (p+1)/(p−1)` would solve in one
/// step. `β` moves with `θ` and damps the iteration, and half that extrapolation beyond the
/// plain step, `ω = 1 + ρ/(2(1−ρ)) = p*`, measured best (docs/mathematics.md §3.3 (c)). The
/// cap keeps p near 1 from overshooting.
pub(crate) fn over_relaxation(p: f64) -> f64 {
    if p.is_finite() && p > 1.0 {
        (p / (p - 1.0)).min(4.0)
    } else {
        1.0
    }
}

/// `θ⁺ ∝ θ^{1−ω} T(θ)^ω` (normalised to unit p-norm), where `T(θ)` is eq. 17's update `next`:
/// the fixed-point iteration `θ ← T(θ)` converges linearly, and a step of `ω > 1` along
/// `log T(θ) − log θ` extrapolates it. Every iterate is still certified by its own `P` and
/// `D`, so the caller only needs to fall back to `ω = 1` when the gap stops shrinking.
/// Weights that are zero in `θ` or `T(θ)` take `T(θ)`'s value.
pub(crate) fn extrapolate(theta: &[f64], next: &[f64], omega: f64, p: f64) -> Vec<f64> {
    if omega == 1.0 || p.is_infinite() {
        return next.to_vec();
    }
    let t: Vec<f64> = theta
        .iter()
        .zip(next)
        .map(|(&a, &b)| {
            if a > 0.0 && b > 0.0 {
                a * (b / a).powf(omega)
            } else {
                b
            }
        })
        .collect();
    let mx = t.iter().fold(0.0f64, |a, &x| a.max(x));
    if !(mx > 0.0 && mx.is_finite()) {
        return next.to_vec();
    }
    let norm = p_norm(&t, p);
    t.iter().map(|x| x / norm).collect()
}

/// One Algorithm-1 step on a problem (the whole one, or the restricted one of a working set):
/// the solution `β` of the single-kernel problem on `K_θ`, and its certificate values.
struct Step {
    /// `βᵀK_mβ` for every kernel.
    quad: Vec<f64>,
    /// The model's intercept and the factor on `A` at which `primal` holds.
    b: f64,
    scale: f64,
    primal: f64,
    dual: f64,
    /// `‖w_m‖ = θ_m sqrt(βᵀK_mβ)`, the input of eq. 17.
    norms: Vec<f64>,
    /// A witness that a kernel is not PSD along `β` (then `dual` certifies nothing).
    witness: Option<PsdWitness>,
}

/// Where a step's quadratic forms `βᵀK_mβ` come from.
enum Forms<'a> {
    /// Read from a stack at `v`: the stack may be a sub-stack holding every non-zero of `β`,
    /// with `v` the matching entries, and all the kernels of the fit's.
    Read(&'a dyn KernelStack, &'a [f64]),
    /// Known already, from the per-kernel gradient caches (`βᵀh_m`, [`GradientCaches`]).
    Known(Vec<f64>),
}

impl Step {
    /// Completes a step at `(θ, β, b)` with `f = K_θ β`: the quadratic forms `βᵀK_mβ`
    /// ([`Forms`]), then the certificate and the witness check of its dual point. For the
    /// logistic loss the dual point is the model's natural one ([`natural_dual`]), whose
    /// forms come in the same pass as `β`'s.
    #[allow(clippy::too_many_arguments)]
    fn certify(
        forms: Forms<'_>,
        psd: &PsdCheck<'_>,
        cfg: &LpConfig,
        y: &[f64],
        c: &[f64],
        theta: &[f64],
        beta: &[f64],
        b: f64,
        f: &[f64],
    ) -> Step {
        let m = theta.len();
        let natural = natural_dual(cfg.loss, c, y, f, b);
        let hat = natural.as_ref().map(|n| n.1.as_slice());
        let mut hat_quad = vec![0.0; m];
        let (quad, v) = match forms {
            Forms::Read(stack, v) => {
                let all: Vec<usize> = (0..m).collect();
                // Newton's losses never use a working set: with `hat`, `v` is the whole `β`.
                debug_assert!(hat.is_none_or(|h| h.len() == v.len()));
                let mut quad = vec![0.0; m];
                read_forms(stack, v, hat, &all, &mut quad, &mut hat_quad);
                (quad, v)
            }
            Forms::Known(quad) => {
                debug_assert!(hat.is_none(), "the caches serve SMO's losses only");
                (quad, beta)
            }
        };
        let (b, point, scanned, forms) = match &natural {
            Some((b, h)) => (*b, h.as_slice(), h.as_slice(), &hat_quad),
            None => (b, beta, v, &quad),
        };
        let cert = certificate(cfg, y, c, theta, b, &quad, f, (point, forms));
        let witness = psd.all().scan(scanned, m, |k| forms[k]);
        Step {
            quad,
            b: cert.b,
            scale: cert.scale,
            primal: cert.primal,
            dual: cert.dual,
            norms: cert.norms,
            witness,
        }
    }
}

/// Algorithm 1, with a working set of points when `β` is sparse (SMO losses, `p > 1`).
///
/// The working set `W` holds the support vectors and the margin violators of a whole-problem
/// solution (the first, on the uniform θ). Restricted iterations run Algorithm 1 on
/// `K_m[W, W]`, with `β = 0` off `W`; such a `β` is feasible for the whole dual, so `D(β)` is
/// a whole-problem dual value, but the restricted primal is not and is recorded as `+∞`. A
/// whole-problem check evaluates `f = K_θ β` on every point by `combined_matvec` (reading only
/// the rows of the support vectors) and records the whole-problem `P`, `D` and gap. It runs
/// when the restricted gap is below `tol/2`, or after 16, 32, 64, … restricted iterations
/// ([`CheckSchedule`]). If then no point outside `W` violates optimality, `P ≤ P_W`, so the
/// whole gap is at most the restricted one; otherwise `W` grows by the violators (it never
/// shrinks, so this terminates). Above
/// [`MAX_FRACTION`](crate::solvers::points::MAX_FRACTION) of the points the whole problem takes
/// over.
pub(super) fn fit_analytic(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    let whole = SingleKernel::new(cfg.loss, c, y)?;
    let mut solver = Analytic {
        stack,
        psd: PsdCheck::new(stack),
        y,
        c,
        cfg,
        theta: theta_update(&vec![1.0; stack.m()], cfg.p),
        // For p = 1 θ turns sparse and each step is cheap relative to its slow convergence.
        use_ws: cfg.p > 1.0 && whole.is_sparse(),
        cacheable: whole.is_sparse() && GradientCaches::apply(stack, cfg.loss),
        caches: None,
        whole,
        ws: None,
        k_theta: Vec::new(),
        norms: Vec::new(),
        first: true,
    };
    let gaps = GapSchedule::new(cfg.tol, cfg.inner_tol, over_relaxation(cfg.p));
    Driver::new(cfg.tol, cfg.max_iter, interrupt)
        .with_gaps(gaps)
        .run(&mut solver)
}

/// Algorithm 1's state between iterations.
struct Analytic<'s> {
    stack: &'s dyn KernelStack,
    psd: PsdCheck<'s>,
    y: &'s [f64],
    c: &'s [f64],
    cfg: &'s LpConfig,
    theta: Vec<f64>,
    use_ws: bool,
    /// The single-kernel solver of the whole problem, and the working set of points.
    whole: SingleKernel,
    ws: Option<PointSet>,
    /// Whether whole steps keep per-kernel gradient caches (SMO on a stored stack), and the
    /// caches once the first whole step without a working set built them: later whole steps
    /// then solve on the columns of `K_θ` on demand instead of forming it.
    cacheable: bool,
    caches: Option<GradientCaches>,
    k_theta: Vec<f64>,
    /// `‖w_m‖` of the last iterate: the input of the next θ update.
    norms: Vec<f64>,
    first: bool,
}

impl Solver for Analytic<'_> {
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let first = std::mem::replace(&mut self.first, false);
        if self.ws.is_some() {
            self.restricted_step(d)
        } else {
            self.whole_step(d, first)
        }
    }

    fn restricted(&self) -> bool {
        self.ws.is_some()
    }

    /// The θ update of eq. 17, extrapolated (docs/mathematics.md §3.3 (c)): on the SimpleMKL
    /// UCI bank most points are support vectors, so no working set forms and each whole
    /// iteration reads the stack (`combine` and the forms); extrapolation halves their number.
    fn update(&mut self, d: &Driver<'_>) -> Result<()> {
        let omega = d.omega();
        let next = theta_update(&self.norms, self.cfg.p);
        self.theta = extrapolate(&self.theta, &next, omega, self.cfg.p);
        Ok(())
    }
}

impl Analytic<'_> {
    /// The single-kernel solve on `K_θ` and `‖w_m‖` in one pass over the stack; the first
    /// forms the working set from its support vectors and margin violators.
    fn whole_step(&mut self, d: &mut Driver<'_>, first: bool) -> Result<Outcome> {
        let (stack, y, c, cfg) = (self.stack, self.y, self.c, self.cfg);
        let n = stack.n();
        let (f, b) = match self.caches.as_mut() {
            Some(caches) => {
                let (theta, tol, kt) = (&self.theta, d.inner_tol(), &mut self.k_theta);
                self.whole
                    .solve_cached(stack, caches, y, c, theta, tol, kt, d.interrupt)?
            }
            None => self.whole.solve_combined(
                stack,
                y,
                c,
                &self.theta,
                d.inner_tol(),
                &mut self.k_theta,
                d.interrupt,
            )?,
        };
        if self.use_ws && first {
            let alpha = self.whole.alpha().unwrap_or(&[]).to_vec();
            let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
            let idx = new_points(cfg.loss, y, &z, &alpha, &[]);
            self.ws = PointSet::new(stack, y, c, cfg.loss, &idx, &alpha)?;
        }
        let (theta, beta) = (&self.theta, self.whole.beta());
        // With a working set, its sub-stack holds every non-zero of β: a cheaper pass.
        // Without, the caches' forms (built here at the first such step, at the cost of the
        // forms' pass) serve every later step.
        let v;
        let forms = match &self.ws {
            Some(set) => {
                v = gather_points(beta, n, set.idx());
                Forms::Read(set.stack.stack(), &v)
            }
            None if self.cacheable => {
                Forms::Known(GradientCaches::forms_in(&mut self.caches, stack, beta, 0))
            }
            None => Forms::Read(stack, beta),
        };
        let st = Step::certify(forms, &self.psd, cfg, y, c, theta, beta, b, &f);
        let scaled: Vec<f64> = beta.iter().map(|v| st.scale * v).collect();
        let dual = (st.dual, st.witness);
        let gap = d
            .tracker
            .record(st.primal, dual, theta, &scaled, st.b, st.norms.clone());
        self.norms = st.norms;
        let new_problem = self.ws.is_some() && gap > cfg.tol;
        if new_problem {
            d.checks.start(d.tracker.certified(st.dual));
        }
        Ok(Outcome::Gap {
            gap,
            whole: true,
            new_problem,
        })
    }

    /// The single-kernel solve on `K_θ[W, W]` and `‖w_m‖` from the sub-stack; a
    /// whole-problem check when one is due.
    fn restricted_step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let (y, c, cfg) = (self.y, self.c, self.cfg);
        let set = self
            .ws
            .as_mut()
            .expect("a restricted step has a working set");
        let (f, b) = set.solver.solve_combined(
            set.stack.stack(),
            &set.y,
            &set.c,
            &self.theta,
            d.inner_tol(),
            &mut self.k_theta,
            d.interrupt,
        )?;
        let beta = set.solver.beta();
        let (sy, sc) = (&set.y, &set.c);
        let forms = Forms::Read(set.stack.stack(), beta);
        let st = Step::certify(forms, &self.psd, cfg, sy, sc, &self.theta, beta, b, &f);
        // A whole-problem dual value (β = 0 off W), unless β carries a witness.
        d.tracker.note(st.witness);
        let dual = d.tracker.certified(st.dual);
        let rgap = d.checks.restricted_gap(st.primal, dual);
        let mut new_problem = false;
        if d.checks.due_after(rgap, cfg.tol) {
            match self.check(d, &st, y, c)? {
                Checked::End(status) => return Ok(Outcome::Stop(status)),
                Checked::Grew => new_problem = true,
                Checked::BackedOff => {}
            }
        } else {
            let active = self.theta.iter().filter(|&&t| t > 0.0).count();
            d.tracker
                .record_with(f64::INFINITY, (st.dual, None), active, || unreachable!());
        }
        self.norms = st.norms;
        Ok(Outcome::Gap {
            gap: rgap,
            whole: false,
            new_problem,
        })
    }

    /// The whole-problem check at `(θ, β)` (same β, so the same quadratic forms): it records
    /// the whole problem's certificate, then ends the fit or settles the working set.
    fn check(&mut self, d: &mut Driver<'_>, st: &Step, y: &[f64], c: &[f64]) -> Result<Checked> {
        let (stack, cfg, theta) = (self.stack, self.cfg, &self.theta);
        let n = stack.n();
        let set = self.ws.as_mut().expect("a check has a working set");
        let beta = scatter_points(set.solver.beta(), set.idx(), n);
        let mut f = vec![0.0; n];
        stack.combined_matvec(theta, &beta, &mut f);
        let b = cfg.loss.best_intercept(y, &f, c, st.b);
        let cert = certificate(cfg, y, c, theta, b, &st.quad, &f, (&beta, &st.quad));
        let gap = cert.record(&mut d.tracker, st.witness, theta, &beta);
        if gap <= cfg.tol {
            return Ok(Checked::End(SolveStatus::Converged));
        }
        let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
        let alpha = set.alpha(n);
        let more = new_points(cfg.loss, y, &z, &alpha, set.idx());
        Ok(match d.checks.settle(!more.is_empty()) {
            Settled::Grew => {
                if !set.grow(stack, y, c, &more, &alpha)? {
                    self.ws = None;
                    self.whole.set_warm_start(alpha);
                }
                Checked::Grew
            }
            Settled::Stalled => Checked::End(SolveStatus::Stalled),
            Settled::BackedOff => Checked::BackedOff,
        })
    }
}
