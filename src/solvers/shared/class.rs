//! One class's single-kernel problem in the shared fit, on every point or, for the hinge-type
//! losses, on a working set of points `W_c` (the SVM wrapper's design, docs/mathematics.md
//! §2.11 step 3, per class): the support vectors and margin violators of the first iterate.
//! Each solve on `K_θ[W_c, W_c]` is checked against every point at once (`f_c = K_θ β_c`
//! from the rows of the support vectors): the points outside `W_c` that violate optimality
//! join it and the class is solved again, so every iterate the shared fit records is the
//! whole problem's (its `β_c`, zero off `W_c`, is the whole SVM's solution at θ, and the
//! trust region's `J` is the whole one). A set that would hold more than
//! [`MAX_FRACTION`](crate::solvers::points::MAX_FRACTION) of the points gives way to the
//! whole problem.

use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::Loss;
use crate::solvers::points::{new_points, scatter_points, PointSet};
use crate::solvers::single::SingleKernel;
use crate::solvers::wrapper::Combined;

/// A class's solver and, once formed, its working set of points with `K_θ` on it.
pub(super) struct Class {
    pub(super) whole: SingleKernel,
    set: Option<Restricted>,
}

/// The working set, `K_θ` on it, and its last solve: `β` over every point and the model
/// values on the set.
struct Restricted {
    points: PointSet,
    kw: Combined,
    beta: Vec<f64>,
    f: Vec<f64>,
}

/// What a class's problem is solved on: the stack, `K_θ` and the solver of the whole problem or
/// of the working set, with the set's targets and loss weights (the Newton model's input).
pub(super) struct Solved<'a> {
    pub(super) stack: &'a dyn KernelStack,
    pub(super) kw: &'a Combined,
    pub(super) solver: &'a SingleKernel,
    pub(super) c: &'a [f64],
    /// `β` and `f` on the problem's points (`f` is `None` for the whole problem: the caller
    /// holds it).
    pub(super) local: Option<(&'a [f64], &'a [f64])>,
}

impl Class {
    pub(super) fn new(whole: SingleKernel) -> Self {
        Class { whole, set: None }
    }

    /// `β_c` over every point.
    pub(super) fn beta(&self) -> &[f64] {
        match &self.set {
            Some(r) => &r.beta,
            None => self.whole.beta(),
        }
    }

    /// The last SVM solve's dual value (the whole problem's: the solve is complete).
    pub(super) fn svm_dual_value(&self) -> Option<f64> {
        match &self.set {
            Some(r) => r.points.solver.svm_dual_value(),
            None => self.whole.svm_dual_value(),
        }
    }

    /// The problem the last solve was on (for the Newton model's Hessian).
    pub(super) fn solved<'a>(
        &'a self,
        stack: &'a dyn KernelStack,
        kw: &'a Combined,
        c: &'a [f64],
    ) -> Solved<'a> {
        match &self.set {
            Some(r) => Solved {
                stack: r.points.stack.stack(),
                kw: &r.kw,
                solver: &r.points.solver,
                c: &r.points.c,
                local: Some((r.points.solver.beta(), &r.f)),
            },
            None => Solved {
                stack,
                kw,
                solver: &self.whole,
                c,
                local: None,
            },
        }
    }

    /// The support vectors and margin violators of the last whole solve (model values `f`,
    /// intercept `b`) become the class's working set, warm-started there; nothing changes
    /// when the set would not pay off.
    pub(super) fn form_set(
        &mut self,
        stack: &dyn KernelStack,
        y: &[f64],
        c: &[f64],
        (f, b): (&[f64], f64),
    ) -> Result<()> {
        let loss = self.whole.loss();
        let alpha = self.whole.alpha().unwrap_or(&[]).to_vec();
        let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
        let idx = new_points(loss, y, &z, &alpha, &[]);
        if let Some(points) = PointSet::new(stack, y, c, loss, &idx, &alpha)? {
            self.set = Some(Restricted {
                points,
                kw: Combined::Dense(Vec::new()),
                beta: Vec::new(),
                f: Vec::new(),
            });
        }
        Ok(())
    }

    /// The solve at `theta` on the working set, grown until no point outside it violates
    /// optimality (module docs): `f_c` on every point and the intercept. `None` when the set
    /// gave way to the whole problem (the whole solver warm-started at its solution).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn solve_restricted(
        &mut self,
        stack: &dyn KernelStack,
        theta: &[f64],
        y: &[f64],
        c: &[f64],
        loss: Loss,
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<Option<(Vec<f64>, f64)>> {
        let n = y.len();
        let Some(r) = self.set.as_mut() else {
            return Ok(None);
        };
        loop {
            let sub = r.points.stack.stack();
            r.kw.set(sub, theta, false);
            r.f = r.kw.solve(&mut r.points.solver, sub, tol, interrupt)?;
            r.beta = scatter_points(r.points.solver.beta(), r.points.idx(), n);
            let mut f = vec![0.0; n];
            stack.combined_matvec(theta, &r.beta, &mut f);
            let b = loss.best_intercept(y, &f, c, r.points.solver.intercept());
            let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
            let alpha = r.points.alpha(n);
            let more = new_points(loss, y, &z, &alpha, r.points.idx());
            if more.is_empty() {
                return Ok(Some((f, b)));
            }
            if !r.points.grow(stack, y, c, &more, &alpha)? {
                self.whole.set_warm_start(alpha);
                self.set = None;
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::DenseStack;
    use crate::solvers::test_util::problem;

    /// A class's solve on its working set, formed at one θ and solved at another (points must
    /// join it), equals the whole problem's solve at that θ: the same `β`, model values and
    /// intercept, for the hinge and the squared hinge.
    #[test]
    fn a_working_set_solve_is_the_whole_solve() {
        let n = 450;
        let (g, m, y) = problem(n, false, 5);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let c = vec![1.0; n];
        for loss in [Loss::Hinge, Loss::SquaredHinge] {
            let mut class = Class::new(SingleKernel::new(loss, &c, &y).unwrap());
            let mut kw = Combined::Dense(Vec::new());
            let solve_whole = |s: &mut SingleKernel, kw: &mut Combined, theta: &[f64]| {
                kw.set(&stack, theta, false);
                let f = kw.solve(s, &stack, 1e-12, &NoInterrupt).unwrap();
                let b = loss.best_intercept(&y, &f, &c, s.intercept());
                (f, b)
            };
            let (f, b) = solve_whole(&mut class.whole, &mut kw, &[4.0, 0.0, 0.0, 0.0, 0.0]);
            class.form_set(&stack, &y, &c, (&f, b)).unwrap();
            let formed = class.set.as_ref().map(|r| r.points.idx().len());
            assert!(formed.is_some_and(|w| w < n), "{loss:?}: no working set");
            let theta = [0.2, 1.0, 3.0, 0.5, 2.0];
            let (f_w, b_w) = class
                .solve_restricted(&stack, &theta, &y, &c, loss, 1e-12, &NoInterrupt)
                .unwrap()
                .expect("the set holds");
            let grown = class.set.as_ref().map(|r| r.points.idx().len());
            assert!(grown > formed, "{loss:?}: no point joined ({formed:?})");
            let mut reference = SingleKernel::new(loss, &c, &y).unwrap();
            let (f, b) = solve_whole(&mut reference, &mut kw, &theta);
            let scale = f.iter().fold(1.0f64, |a, v| a.max(v.abs()));
            for (i, (x, z)) in f_w.iter().zip(&f).enumerate() {
                assert!((x - z).abs() <= 1e-6 * scale, "{loss:?} f[{i}]: {x} vs {z}");
            }
            assert!((b_w - b).abs() <= 1e-6 * scale, "{loss:?}: b {b_w} vs {b}");
            for (x, z) in class.beta().iter().zip(reference.beta()) {
                assert!((x - z).abs() <= 1e-6, "{loss:?} β: {x} vs {z}");
            }
        }
    }
}
