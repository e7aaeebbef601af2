//! The combined kernel `K_w` of an iterate, and the single-kernel solve on it.

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::{weighted_factors, CombinedKernel, KernelStack};
use crate::solvers::single::{KernelOp, SingleKernel};

/// The combined kernel `K_w` of an iterate: dense, or `K_w = UUᵀ` (`U` column-major `n × R`)
/// for the smooth losses on a stack of factors, where Newton and the Hessian's systems form
/// nothing `n × n` (docs/mathematics.md §3.2), or its weights `w` only where SMO computes the
/// columns it reads: through a row cache on a stack computed on demand, or from the stored
/// kernels' columns beside the per-kernel gradient caches ([`SingleKernel::solve_cached`]).
pub(crate) enum Combined {
    Dense(Vec<f64>),
    Factor(Vec<f64>),
    OnDemand(Vec<f64>),
}

impl Combined {
    /// `K_w` of `stack`: its factors when `factors` and the stack stores them, else dense (in
    /// the buffer `self` already holds).
    pub(crate) fn set(&mut self, stack: &dyn KernelStack, w: &[f64], factors: bool) {
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
    pub(crate) fn op(&self) -> KernelOp<'_> {
        match self {
            Combined::Dense(k) => KernelOp::Dense(k),
            Combined::Factor(u) => KernelOp::Factor(u),
            Combined::OnDemand(_) => unreachable!("SMO solves on demand without an operator"),
        }
    }

    /// The dense buffer (empty when there is none), `self` left empty: the formed `K_w` of a
    /// solve on the gradient caches, or the columns on demand.
    pub(crate) fn take_dense(&mut self) -> Vec<f64> {
        match std::mem::replace(self, Combined::Dense(Vec::new())) {
            Combined::Dense(k) => k,
            Combined::Factor(_) | Combined::OnDemand(_) => Vec::new(),
        }
    }

    /// `out = t K` (the factor scaled by `√t`).
    pub(crate) fn scaled_into(&self, t: f64, out: &mut Combined) {
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
    pub(crate) fn trace_of(&self, n: usize) -> f64 {
        match self {
            Combined::Dense(k) => (0..n).map(|i| k[i * n + i]).sum(),
            Combined::Factor(u) => u.iter().map(|x| x * x).sum(),
            Combined::OnDemand(_) => f64::NAN,
        }
    }

    /// `tr K` (of `stack`'s kernels on demand, else [`Combined::trace_of`]).
    pub(crate) fn trace(&self, stack: &dyn KernelStack) -> f64 {
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
    pub(crate) fn solve(
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
    pub(crate) fn block(&self, stack: &dyn KernelStack, free: &[usize]) -> Vec<f64> {
        self.kernel(stack).block(free)
    }

    /// The kernel SMO solved on (of `stack`): stored, computed on demand, or combined from the
    /// stored kernels' columns.
    pub(crate) fn kernel<'a>(&'a self, stack: &'a dyn KernelStack) -> CombinedKernel<'a> {
        match (self, stack.on_demand()) {
            (Combined::OnDemand(w), Some(od)) => CombinedKernel::OnDemand(od, w),
            (Combined::OnDemand(w), None) => CombinedKernel::Columns(stack, w),
            (Combined::Dense(k), _) => CombinedKernel::Stored(k, stack.n()),
            (Combined::Factor(_), _) => unreachable!("SMO runs on a dense kernel or on demand"),
        }
    }
}
