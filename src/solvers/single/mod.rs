//! The single-kernel problem on a combined kernel `K_θ`, warm-started across outer iterations
//! (ℓp's Algorithm 1, the SVM wrapper, group MKL, SpicyMKL's first points): SMO for the hinge,
//! squared-hinge and ε-insensitive losses, Newton (Cholesky or conjugate gradients) for the
//! squared and logistic losses. Every variant exposes the model as
//! `f = K_θ β + b`, with `β` a feasible point of the ℓp dual (docs/mathematics.md §1).

mod cached;
mod newton;

use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{weighted, weighted_factors, KernelStack, OnDemandStack};
use crate::losses::Loss;
use crate::solvers::smo::{
    l2svm_shifted, svc_shifted, svr, CachedColumns, DenseKernel, KernelColumns, SmoOptions,
    SvmSolution, Warm,
};
pub(crate) use cached::GradientCaches;
use newton::NewtonSolver;
pub(crate) use newton::{bordered_many, dense_matvec, KernelOp};

/// A warm-started single-kernel solver.
pub enum SingleKernel {
    Smo {
        loss: Loss,
        /// The per-sample loss weights: SMO's boxes (hinge, ε-insensitive) or diagonal shifts
        /// (squared hinge).
        c: Vec<f64>,
        y: Vec<f64>,
        last: Option<SvmSolution>,
        /// The warm start of the next solve when it is not the last solution.
        warm: Option<Vec<f64>>,
        zero: Vec<f64>,
        /// A fixed function added to the model (`f = K_θ β + o + b`), empty for none.
        offset: Vec<f64>,
    },
    Newton(NewtonSolver),
}

impl SingleKernel {
    /// A solver for `loss` with per-sample loss weights `c` ([`costs`](crate::losses::costs))
    /// and targets `y`.
    pub fn new(loss: Loss, c: &[f64], y: &[f64]) -> Result<Self> {
        Ok(match loss {
            Loss::Squared | Loss::Logistic => SingleKernel::Newton(NewtonSolver::new(loss, c, y)?),
            _ => SingleKernel::Smo {
                loss,
                c: c.to_vec(),
                y: y.to_vec(),
                last: None,
                warm: None,
                zero: vec![0.0; y.len()],
                offset: Vec::new(),
            },
        })
    }

    /// Solves on the dense row-major kernel `k` to accuracy `tol` (SMO: maximal KKT violation).
    pub fn solve(&mut self, k: &[f64], tol: f64, interrupt: &dyn Interrupt) -> Result<()> {
        self.solve_op(KernelOp::Dense(k), tol, interrupt)
    }

    /// [`SingleKernel::solve`] on a dense kernel or, for Newton, on `K = UUᵀ`.
    pub(crate) fn solve_op(
        &mut self,
        k: KernelOp<'_>,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<()> {
        match (self, k) {
            // The accuracy follows the outer gap as SMO's does (a relative decrease of the
            // objective here): exact solves of the first, far-from-optimal θ cost twice the
            // Newton steps (benches/peers/results/sparse_large.md).
            (SingleKernel::Newton(s), k) => s.solve(k, tol, interrupt),
            (SingleKernel::Smo { .. }, KernelOp::Factor(_)) => Err(
                crate::error::MkError::Unsupported("SMO needs a dense kernel".into()),
            ),
            (s @ SingleKernel::Smo { .. }, KernelOp::Dense(k)) => {
                let n = match s {
                    SingleKernel::Smo { y, .. } => y.len(),
                    SingleKernel::Newton(_) => unreachable!("an SMO loss"),
                };
                s.solve_smo(&DenseKernel::new(k, n)?, tol, interrupt, None)
            }
        }
    }

    /// The SMO solve on the kernel `kernel`, warm-started at the last solution (or the warm
    /// start set), whose model values `K coef` are `values` when the caller has them.
    fn solve_smo<K: KernelColumns + ?Sized>(
        &mut self,
        kernel: &K,
        tol: f64,
        interrupt: &dyn Interrupt,
        values: Option<&[f64]>,
    ) -> Result<()> {
        let SingleKernel::Smo {
            loss,
            c,
            y,
            last,
            warm,
            offset,
            ..
        } = self
        else {
            unreachable!("SMO losses only")
        };
        let o = (!offset.is_empty()).then_some(offset.as_slice());
        let opts = SmoOptions {
            eps: tol,
            ..SmoOptions::default()
        };
        let warm = match last {
            Some(s) => Some(s.alpha.as_slice()),
            None => warm.as_deref(),
        };
        let start = warm.map(|alpha| Warm { alpha, values });
        let cs = c.as_slice();
        let sol = match *loss {
            Loss::Hinge => svc_shifted(kernel, y, cs, o, &opts, start, interrupt)?,
            Loss::SquaredHinge => l2svm_shifted(kernel, y, cs, o, &opts, start, interrupt)?,
            Loss::EpsilonInsensitive { epsilon } => {
                // The offset moves the targets: |y − o − f − b|_ε.
                let t: Vec<f64> = match o {
                    Some(o) => y.iter().zip(o).map(|(y, o)| y - o).collect(),
                    None => y.clone(),
                };
                svr(kernel, &t, cs, epsilon, &opts, warm, interrupt)?
            }
            Loss::Squared | Loss::Logistic => unreachable!("Newton losses"),
        };
        *last = Some(sol);
        Ok(())
    }

    /// Solves on the combined kernel `K_θ = Σ_m θ_m K_m` of `stack` (formed in `k_theta`, a
    /// reused buffer) to accuracy `tol`; returns `f = K_θ β` and the intercept that minimises
    /// the loss for it (the primal is evaluated there, docs/mathematics.md §1.1). Newton on a
    /// stack of factors of total rank `R < n` works on `K_θ = UUᵀ` and forms nothing `n × n`.
    #[allow(clippy::too_many_arguments)]
    pub fn solve_combined(
        &mut self,
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        theta: &[f64],
        tol: f64,
        k_theta: &mut Vec<f64>,
        interrupt: &dyn Interrupt,
    ) -> Result<(Vec<f64>, f64)> {
        let n = stack.n();
        if let SingleKernel::Newton(s) = self {
            if let Some(u) = weighted_factors(stack, theta) {
                let op = KernelOp::Factor(&u);
                s.solve(op, tol, interrupt)?;
                let mut f = vec![0.0; n];
                op.matvec(&s.beta, &mut f);
                let b = s.loss().best_intercept(y, &s.shifted(&f), c, s.b);
                return Ok((f, b));
            }
        }
        if let (SingleKernel::Smo { .. }, Some(od)) = (&*self, stack.on_demand()) {
            let f = self.solve_on_demand(od, theta, tol, interrupt)?;
            let b = self
                .loss()
                .best_intercept(y, &self.shifted(&f), c, self.intercept());
            return Ok((f, b));
        }
        k_theta.resize(n * n, 0.0);
        stack.combine(theta, k_theta);
        self.solve(k_theta, tol, interrupt)?;
        let mut f = vec![0.0; n];
        dense_matvec(k_theta, self.beta(), &mut f);
        let b = self
            .loss()
            .best_intercept(y, &self.shifted(&f), c, self.intercept());
        Ok((f, b))
    }

    /// Adds the fixed function `o` to the model of the next solves, `f = K_θ β + o + b`
    /// (empty: none). Group MKL's unpenalised blocks (docs/mathematics.md §4, "Free groups").
    pub(crate) fn set_offset(&mut self, o: Vec<f64>) {
        match self {
            SingleKernel::Newton(s) => s.offset = o,
            SingleKernel::Smo { offset, .. } => *offset = o,
        }
    }

    /// `f + o`, the model values of `f = K_θ β` with the offset.
    pub(crate) fn shifted(&self, f: &[f64]) -> Vec<f64> {
        let o = match self {
            SingleKernel::Newton(s) => &s.offset,
            SingleKernel::Smo { offset, .. } => offset,
        };
        if o.is_empty() {
            return f.to_vec();
        }
        f.iter().zip(o).map(|(a, b)| a + b).collect()
    }

    /// Solves by SMO on `K_θ = Σ_m θ_m K_m` of a stack computed on demand, whose columns are
    /// computed as SMO reads them through a row cache (nothing `n × n`); returns
    /// `f = K_θ β`, from SMO's final gradient (a product would compute `n·|S|` entries per
    /// kernel).
    pub(crate) fn solve_on_demand(
        &mut self,
        od: &OnDemandStack,
        theta: &[f64],
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<Vec<f64>> {
        if !self.is_sparse() {
            return Err(crate::error::MkError::Unsupported(
                "kernels computed on demand are solved by SMO only (the hinge-type losses)".into(),
            ));
        }
        let w = weighted(theta);
        let mut diag = vec![0.0; od.n()];
        od.combined_diag(&w, &mut diag);
        let compute = |i: usize, out: &mut [f64]| od.combined_column(&w, i, out);
        let products = |v: &[f64], out: &mut [f64]| od.combined_products(&w, v, out);
        let kernel =
            CachedColumns::new(diag, compute, od.column_cache_bytes()).with_products(&products);
        self.solve_smo(&kernel, tol, interrupt, None)?;
        match self {
            SingleKernel::Smo { last: Some(s), .. } => Ok(s.values.clone()),
            _ => unreachable!("solved by SMO"),
        }
    }

    /// Solves the bordered systems `(K + diag(d)) x_j + b_j 1 = r_j`, `1ᵀx_j = 0` on the
    /// kernel `k` of the last Newton solve ([`bordered_many`]), with its preconditioner or
    /// its factorisation when it has one.
    pub(crate) fn newton_systems(
        &self,
        k: KernelOp<'_>,
        d: &[f64],
        r: &[f64],
        rtol: f64,
    ) -> Result<Vec<f64>> {
        let (precond, factored) = match self {
            SingleKernel::Newton(s) => (s.precond.as_deref(), s.factored.as_ref()),
            SingleKernel::Smo { .. } => (None, None),
        };
        bordered_many(k, precond, factored, d, r, rtol)
    }

    /// The diagonal `1/(C ℓ'')` of the Newton system on `k` at the model values `f`
    /// (intercept included; Newton only).
    pub(crate) fn system_diagonal(&self, k: KernelOp<'_>, f: &[f64]) -> Option<Vec<f64>> {
        match self {
            SingleKernel::Newton(s) => Some(s.system_diagonal(k, f)),
            SingleKernel::Smo { .. } => None,
        }
    }

    /// Sets the point of the next Newton solve's warm start (Newton only).
    pub(crate) fn set_newton_point(&mut self, beta: &[f64], b: f64) {
        if let SingleKernel::Newton(s) = self {
            s.beta.copy_from_slice(beta);
            s.b = b;
        }
    }

    /// The loss being fitted.
    pub fn loss(&self) -> Loss {
        match self {
            SingleKernel::Newton(s) => s.loss(),
            SingleKernel::Smo { loss, .. } => *loss,
        }
    }

    /// Whether `β` is sparse (SMO: zero off the support vectors), so that a working set of
    /// points pays off.
    pub fn is_sparse(&self) -> bool {
        matches!(self, SingleKernel::Smo { .. })
    }

    /// The QP variables of the last solve (SMO only; `2n` of them for ε-SVR: `[α; α*]`).
    pub fn alpha(&self) -> Option<&[f64]> {
        match self {
            SingleKernel::Smo { last, .. } => last.as_ref().map(|s| s.alpha.as_slice()),
            SingleKernel::Newton(_) => None,
        }
    }

    /// Warm-starts the next solve at the QP variables `alpha` (SMO only; ignored by Newton).
    pub fn set_warm_start(&mut self, alpha: Vec<f64>) {
        if let SingleKernel::Smo { last, warm, .. } = self {
            *last = None;
            *warm = Some(alpha);
        }
    }

    /// `β` of the last solve (zeros before the first).
    pub fn beta(&self) -> &[f64] {
        match self {
            SingleKernel::Newton(s) => &s.beta,
            SingleKernel::Smo { last, zero, .. } => {
                last.as_ref().map_or(zero.as_slice(), |s| s.coef.as_slice())
            }
        }
    }

    /// The SVM dual value `−F(α)` of the last solve (SMO only), a lower bound on the
    /// single-kernel optimum.
    pub fn svm_dual_value(&self) -> Option<f64> {
        match self {
            SingleKernel::Smo { last, .. } => last.as_ref().map(|s| s.dual_value()),
            SingleKernel::Newton(_) => None,
        }
    }

    /// The intercept `b` of the last solve.
    pub fn intercept(&self) -> f64 {
        match self {
            SingleKernel::Newton(s) => s.b,
            SingleKernel::Smo { last, .. } => last.as_ref().map_or(0.0, |s| s.intercept),
        }
    }
}
