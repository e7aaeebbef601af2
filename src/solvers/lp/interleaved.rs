//! Kloft et al.'s Algorithm 2: θ updated inside SMO (hinge loss).
//!
//! SMO runs on the combined kernel `K_θ`, while per-kernel "gradients" `h_m = K_m β`
//! (`β = Yα`, so that the per-kernel SVM gradient is `Q_m α = Y h_m`) are kept up to date:
//! the steps' changes of `β` are added in one batch before each θ update, the only place
//! that reads them (the same `h_m` as Kloft's two columns per kernel and step, far fewer
//! reads). Every `n` steps, or as soon as SMO is optimal for
//! the current θ, the block norms `‖w_m‖² = θ_m² βᵀh_m` give the new θ (eq. 17) without a
//! pass over the stack, the certificate is evaluated, and SMO continues from the recombined
//! gradient `Q_θ α − 1 = Y Σ_m θ_m h_m − 1`.

use rayon::prelude::*;

use super::{certificate, LpConfig};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{nonzeros, KernelStack};
use crate::penalties::theta_update;
use crate::result::FitResult;
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::single::dense_matvec;
use crate::solvers::smo::{DenseKernel, QpSpec, SmoOptions, SmoState, StepOutcome};
use crate::solvers::witness::PsdCheck;

pub(super) fn fit_interleaved(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    cfg: &LpConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    let (m, n) = (stack.m(), stack.n());
    let theta = theta_update(&vec![1.0; m], cfg.p);
    let mut k_theta = vec![0.0; n * n];
    stack.combine(&theta, &mut k_theta);
    let minus_one = vec![-1.0; n];
    let spec = QpSpec {
        p: &minus_one,
        y,
        upper: c,
        diag_shift: None,
        kernel_index: None,
    };
    let opts = SmoOptions {
        eps: cfg.inner_tol.min(0.1 * cfg.tol),
        ..SmoOptions::default()
    };
    let smo = SmoState::new(&DenseKernel::new(&k_theta, n)?, &spec, &vec![0.0; n], &opts)?;
    let mut solver = Interleaved {
        stack,
        psd: PsdCheck::new(stack),
        y,
        c,
        cfg,
        theta,
        k_theta,
        smo,
        h: vec![0.0; m * n],
        beta: vec![0.0; n],
        delta: vec![0.0; n],
        norms: Vec::new(),
    };
    Driver::new(cfg.tol, cfg.max_iter, interrupt).run(&mut solver)
}

/// Algorithm 2's state: SMO on `K_θ` and the per-kernel gradients `h_m = K_m β`.
struct Interleaved<'s> {
    stack: &'s dyn KernelStack,
    psd: PsdCheck<'s>,
    y: &'s [f64],
    c: &'s [f64],
    cfg: &'s LpConfig,
    theta: Vec<f64>,
    k_theta: Vec<f64>,
    smo: SmoState,
    h: Vec<f64>,
    beta: Vec<f64>,
    /// The steps' changes of `β` since `h` was last brought up to date.
    delta: Vec<f64>,
    /// `‖w_m‖` of the last certificate: the input of the next θ update.
    norms: Vec<f64>,
}

impl Solver for Interleaved<'_> {
    /// `n` SMO steps on `K_θ` (or until SMO is optimal for θ), `h` brought up to date, and
    /// the certificate at the current `α` and `θ` from `h` (no pass over the stack).
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let (stack, y, c, cfg) = (self.stack, self.y, self.c, self.cfg);
        let (m, n) = (stack.m(), stack.n());
        let kernel = DenseKernel::new(&self.k_theta, n)?;
        for _ in 0..n.max(100) {
            let StepOutcome::Step(s) = self.smo.step(&kernel) else {
                break;
            };
            self.delta[s.i] += y[s.i] * s.delta_i;
            self.delta[s.j] += y[s.j] * s.delta_j;
        }
        self.update_gradients();
        let quad = self.forms();
        let witness = self.psd.all().scan(&self.beta, m, |k| quad[k]);
        let mut f = vec![0.0; n];
        dense_matvec(&self.k_theta, &self.beta, &mut f);
        let b = cfg.loss.best_intercept(y, &f, c, -self.smo.rho());
        let cert = certificate(cfg, y, c, &self.theta, b, &quad, &f, (&self.beta, &quad));
        self.norms.clone_from(&cert.norms);
        let gap = cert.record(&mut d.tracker, witness, &self.theta, &self.beta);
        Ok(Outcome::Gap {
            gap,
            whole: true,
            new_problem: false,
        })
    }

    /// θ by eq. 17, and SMO continues from the recombined gradient
    /// `Q_θ α − 1 = Y Σ_m θ_m h_m − 1`.
    fn update(&mut self, _d: &Driver<'_>) -> Result<()> {
        let n = self.stack.n();
        self.theta = theta_update(&self.norms, self.cfg.p);
        self.stack.combine(&self.theta, &mut self.k_theta);
        let mut grad = vec![0.0; n];
        for (t, hm) in self.theta.iter().zip(self.h.chunks(n)) {
            for (g, v) in grad.iter_mut().zip(hm) {
                *g += t * v;
            }
        }
        for (g, yi) in grad.iter_mut().zip(self.y) {
            *g = yi * *g - 1.0;
        }
        self.smo
            .set_gradient(&DenseKernel::new(&self.k_theta, n)?, &grad)
    }
}

impl Interleaved<'_> {
    /// Adds the steps' changes of `β` to the per-kernel gradients, the only place that reads
    /// them: in one batch, one kernel column per changed coefficient (SMO revisits the same
    /// few points, so far fewer than two columns per step).
    fn update_gradients(&mut self) {
        let (stack, n) = (self.stack, self.stack.n());
        let changed = nonzeros(&self.delta);
        let delta = &self.delta;
        let update = |(k, hm): (usize, &mut [f64])| {
            for &i in &changed {
                stack.add_column(k, i, delta[i], hm);
            }
        };
        if stack.m() * n >= 1 << 15 {
            self.h.par_chunks_mut(n).enumerate().for_each(update);
        } else {
            self.h.chunks_mut(n).enumerate().for_each(update);
        }
        for &i in &changed {
            self.beta[i] += self.delta[i];
            self.delta[i] = 0.0;
        }
    }

    /// `βᵀK_mβ` from the maintained `h`. Those carry the rounding of many updates, which the
    /// witness bound does not cover: a negative form is recomputed from the stack (only those
    /// kernels) first.
    fn forms(&self) -> Vec<f64> {
        let (stack, n) = (self.stack, self.stack.n());
        let mut quad: Vec<f64> = self
            .h
            .chunks(n)
            .map(|hm| hm.iter().zip(&self.beta).map(|(a, b)| a * b).sum())
            .collect();
        let negative: Vec<usize> = (0..stack.m()).filter(|&k| quad[k] < 0.0).collect();
        if !negative.is_empty() {
            let mut fresh = vec![0.0; negative.len()];
            stack.quad_forms_subset(&self.beta, &negative, &mut fresh);
            for (&k, q) in negative.iter().zip(fresh) {
                quad[k] = q;
            }
        }
        quad
    }
}
