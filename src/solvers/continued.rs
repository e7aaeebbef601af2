//! The wrapper continued by SpicyMKL: `solver="auto"`'s fit of `l1` and the elastic net on a
//! stored stack, as one engine call.
//!
//! The wrapper is the fast solver of these penalties, but its trust-region steps on `θ` can end
//! above `tol` (`max_iter`, or a gap that stopped shrinking: seen at extreme kernel scales and
//! `C`). SpicyMKL, an independent algorithm (dual augmented Lagrangian, docs/mathematics.md
//! §2.8), then starts from the wrapper's model and the better certificate is kept. The result
//! accounts for both: `n_iter` and `history` span the two solvers, `solver_iters` holds each
//! one's iterations and every history record names its solver.

use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::result::{FitResult, IterRecord, SolveStatus};
use crate::solvers::spicy::{fit_spicy_weighted, SpicyConfig, SpicyStart};
use crate::solvers::wrapper::{fit_wrapper_handing_over, WrapperConfig};

/// A fit and whether a second solver continued it.
#[derive(Debug)]
pub struct Continued {
    /// The better of the two fits (the first when it was not continued).
    pub result: FitResult,
    /// Whether SpicyMKL ran after the wrapper.
    pub continued: bool,
}

/// The wrapper's fit of `cfg`, continued by SpicyMKL (its default settings, the wrapper's
/// penalty, `C`, loss, `tol` and `max_iter`) from the wrapper's coefficients and intercept when
/// it stopped above `tol` without a witness that a kernel is not PSD (no solver certifies such
/// a stack, docs/mathematics.md §1.8). The continuation's result is kept when it converged or
/// its gap is smaller.
pub fn fit_wrapper_continued(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &WrapperConfig,
    interrupt: &dyn Interrupt,
) -> Result<Continued> {
    let first = fit_wrapper_handing_over(stack, y, sample_weight, cfg, interrupt)?;
    let stopped = matches!(
        first.status,
        SolveStatus::MaxIterations | SolveStatus::Stalled
    );
    if !stopped || first.psd_witness.is_some() {
        return Ok(Continued {
            result: first,
            continued: false,
        });
    }
    let spicy = SpicyConfig {
        penalty: cfg.penalty,
        c: cfg.c,
        loss: cfg.loss,
        tol: cfg.tol,
        max_iter: cfg.max_iter,
        ..SpicyConfig::default()
    };
    let start = SpicyStart {
        coef: first.coef.clone(),
        intercept: first.intercept,
        dual: None,
    };
    let next = fit_spicy_weighted(stack, y, sample_weight, &spicy, Some(&start), interrupt)?;
    let better = next.status == SolveStatus::Converged || next.gap < first.gap;
    let solver_iters = vec![first.n_iter, next.n_iter];
    let mut history = first.history.clone();
    history.extend(next.history.iter().map(|r| IterRecord { solver: 1, ..*r }));
    let kept = if better { next } else { first };
    Ok(Continued {
        result: FitResult {
            n_iter: solver_iters.iter().sum(),
            history,
            solver_iters,
            ..kept
        },
        continued: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::DenseStack;
    use crate::losses::Loss;
    use crate::penalties::SparsePenalty;
    use crate::solvers::test_util::problem;

    fn wrapper(max_iter: usize) -> WrapperConfig {
        WrapperConfig {
            penalty: SparsePenalty::L1,
            c: 10.0,
            loss: Loss::Hinge,
            tol: 1e-6,
            max_iter,
            ..WrapperConfig::default()
        }
    }

    /// One call equals its two parts: the wrapper stopped at `max_iter`, then SpicyMKL from
    /// the wrapper's model with SpicyMKL's defaults; a converged wrapper fit is not continued.
    #[test]
    fn a_stopped_wrapper_fit_is_continued_by_spicy_from_its_model() {
        let (g, m, y) = problem(40, false, 2);
        let stack = DenseStack::new(&g, m, y.len()).unwrap();
        let cfg = wrapper(1);
        let both = fit_wrapper_continued(&stack, &y, None, &cfg, &NoInterrupt).unwrap();
        let first = fit_wrapper_handing_over(&stack, &y, None, &cfg, &NoInterrupt).unwrap();
        assert_eq!(first.status, SolveStatus::MaxIterations);
        let spicy = SpicyConfig {
            c: 10.0,
            tol: 1e-6,
            max_iter: 1,
            ..SpicyConfig::default()
        };
        let start = SpicyStart {
            coef: first.coef.clone(),
            intercept: first.intercept,
            dual: None,
        };
        let next =
            fit_spicy_weighted(&stack, &y, None, &spicy, Some(&start), &NoInterrupt).unwrap();
        // Both solvers' iterations are counted and recorded, each record with its solver.
        assert_eq!(both.result.solver_iters, vec![first.n_iter, next.n_iter]);
        assert_eq!(both.result.n_iter, first.n_iter + next.n_iter);
        let marks: Vec<usize> = both.result.history.iter().map(|r| r.solver).collect();
        let expected_marks: Vec<usize> = (first.history.iter().map(|_| 0))
            .chain(next.history.iter().map(|_| 1))
            .collect();
        assert_eq!(marks, expected_marks);
        let expected = if next.status == SolveStatus::Converged || next.gap < first.gap {
            next
        } else {
            first
        };
        assert!(both.continued);
        assert_eq!(both.result.coef, expected.coef);
        assert_eq!(both.result.gap, expected.gap);

        let done = fit_wrapper_continued(&stack, &y, None, &wrapper(500), &NoInterrupt).unwrap();
        assert_eq!(done.result.status, SolveStatus::Converged);
        assert!(!done.continued);
    }
}
