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

use super::{certificate, LpConfig, Tracker};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{nonzeros, KernelStack};
use crate::penalties::theta_update;
use crate::result::{FitResult, SolveStatus};
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
    let mut theta = theta_update(&vec![1.0; m], cfg.p);
    let mut k_theta = vec![0.0; n * n];
    stack.combine(&theta, &mut k_theta);
    let minus_one = vec![-1.0; n];
    let upper = c.to_vec();
    let spec = QpSpec {
        p: &minus_one,
        y,
        upper: &upper,
        diag_shift: None,
        kernel_index: None,
    };
    let opts = SmoOptions {
        eps: cfg.inner_tol.min(0.1 * cfg.tol),
        ..SmoOptions::default()
    };
    let mut state = SmoState::new(&DenseKernel::new(&k_theta, n)?, &spec, &vec![0.0; n], &opts)?;
    let mut h = vec![0.0; m * n];
    let mut beta = vec![0.0; n];
    let mut delta = vec![0.0; n];
    let mut quad = vec![0.0; m];
    let mut f = vec![0.0; n];
    let mut tracker = Tracker::new(interrupt);
    let psd = PsdCheck::new(stack);
    let mut status = SolveStatus::MaxIterations;
    let mut n_iter = 0;
    let parallel = m * n >= 1 << 15;
    for _ in 0..cfg.max_iter {
        interrupt.check()?;
        n_iter += 1;
        let kernel = DenseKernel::new(&k_theta, n)?;
        for _ in 0..n.max(100) {
            let StepOutcome::Step(s) = state.step(&kernel) else {
                break;
            };
            delta[s.i] += y[s.i] * s.delta_i;
            delta[s.j] += y[s.j] * s.delta_j;
        }
        // The per-kernel gradients are read only here: the steps' changes are added in one
        // batch, one kernel column per changed coefficient (SMO revisits the same few points,
        // so far fewer than two columns per step).
        let changed = nonzeros(&delta);
        let update = |(k, hm): (usize, &mut [f64])| {
            for &i in &changed {
                stack.add_column(k, i, delta[i], hm);
            }
        };
        if parallel {
            h.par_chunks_mut(n).enumerate().for_each(update);
        } else {
            h.chunks_mut(n).enumerate().for_each(update);
        }
        for &i in &changed {
            beta[i] += delta[i];
            delta[i] = 0.0;
        }
        // Certificate at the current α and θ, from the maintained h (no pass over the stack).
        for (q, hm) in quad.iter_mut().zip(h.chunks(n)) {
            *q = hm.iter().zip(&beta).map(|(a, b)| a * b).sum();
        }
        // The maintained h_m carry the rounding of many updates, which the witness bound does
        // not cover: a negative form is recomputed from the stack (only those kernels) first.
        let negative: Vec<usize> = (0..m).filter(|&k| quad[k] < 0.0).collect();
        if !negative.is_empty() {
            let mut fresh = vec![0.0; negative.len()];
            stack.quad_forms_subset(&beta, &negative, &mut fresh);
            for (&k, q) in negative.iter().zip(fresh) {
                quad[k] = q;
            }
        }
        let witness = psd.all().scan(&beta, m, |k| quad[k]);
        dense_matvec(&k_theta, &beta, &mut f);
        let b = cfg.loss.best_intercept(y, &f, c, -state.rho());
        let cert = certificate(cfg, y, c, &theta, b, &quad, &f, (&beta, &quad));
        let norms = cert.norms.clone();
        let gap = cert.record(&mut tracker, witness, &theta, &beta);
        if gap <= cfg.tol {
            status = SolveStatus::Converged;
            break;
        }
        theta = theta_update(&norms, cfg.p);
        stack.combine(&theta, &mut k_theta);
        let mut grad = vec![0.0; n];
        for (t, hm) in theta.iter().zip(h.chunks(n)) {
            for (g, v) in grad.iter_mut().zip(hm) {
                *g += t * v;
            }
        }
        for (g, yi) in grad.iter_mut().zip(y) {
            *g = yi * *g - 1.0;
        }
        state.set_gradient(&DenseKernel::new(&k_theta, n)?, &grad)?;
    }
    tracker.finish(n_iter, status)
}
