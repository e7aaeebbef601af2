//! The `l1` / elastic-net weights of the shared fit by the SVM wrapper's Newton model
//! (`solvers::wrapper`, docs/mathematics.md §2.11) with the classes summed:
//! `J(w) = Σ_c S_c(w) + Σ_m π(w_m)`, `S_c` the optimum of class `c`'s single-kernel problem on
//! `K_w`, so `∂J/∂w_m = −½ Σ_c β_cᵀK_mβ_c + π'(w_m)` and `∇²J = Σ_c ∇²S_c + diag π''` (each
//! class's Hessian the wrapper's, on its own free support vectors or Newton system). The
//! trust-region step is the wrapper's; its verdict compares `J` at the trial point with the
//! model's. The first step, and any after the model fails, is the alternation's `θ = s`
//! ([`alternate`]), which sets the weights' scale (a Newton step from a wrong scale crawls,
//! the wrapper's step 1).

use faer::Mat;
use rayon::prelude::*;

use super::weights::{alternate, Weights};
use super::Shared;
use crate::error::Result;
use crate::kernels::support_products;
use crate::linalg::dot;
use crate::penalties::{SparsePenalty, WeightPenalty};
use crate::solvers::wrapper::{
    gradient, model_kernels, s_hessian, step_rose, NewtonModel, Point, WrapperConfig, MAX_MODEL,
    MAX_MODEL_SMOOTH, MIN_RADIUS, START_RADIUS,
};

impl Shared<'_> {
    /// `J` at the last solves: each class's single-kernel value (SMO's dual value, or the
    /// Newton model's primal value `Σ c_i ℓ + ½ βᵀf`) plus the penalty of the weights.
    fn objective(&self, pen: &WeightPenalty, w: &[f64]) -> f64 {
        let (loss, c) = (self.cfg.loss, &self.c);
        let values: f64 = self
            .classes
            .par_iter()
            .zip(&self.solved)
            .zip(self.ys.par_iter())
            .map(|((s, (f, b)), y)| match s.svm_dual_value() {
                Some(v) => v,
                None => loss.weighted_total(y, f, *b, c) + 0.5 * dot(s.beta(), f),
            })
            .sum();
        values + w.iter().map(|&v| pen.value(v)).sum::<f64>()
    }

    /// The verdict on a trial step of the sparse penalties' model (the wrapper's): a step
    /// that raised `J` is retried from the same model in a smaller region (true: nothing is
    /// recorded); refused in the smallest region, the iterate stands and the next step is
    /// the alternation's. An accepted step resizes the region by the decrease it achieved.
    pub(super) fn refused(&mut self) -> Result<bool> {
        let Weights::Sparse { pen, w, .. } = &self.weights else {
            return Ok(false);
        };
        let j = self.objective(pen, w);
        self.j = j;
        let Weights::Sparse { pen, w, trust } = &mut self.weights else {
            unreachable!("matched above")
        };
        let Some((prev, pred)) = trust.model.as_mut() else {
            return Ok(false);
        };
        if !step_rose(&mut trust.radius, prev.j, *pred, j) {
            return Ok(false);
        }
        if trust.radius > MIN_RADIUS {
            trust.radius = trust.radius.sqrt().max(MIN_RADIUS);
            let (next, p) = prev.step(trust.radius, pen);
            *pred = p;
            *w = next;
            return Ok(true);
        }
        trust.model = None;
        trust.radius = START_RADIUS;
        trust.alternate = true;
        Ok(false)
    }

    /// The next weights of the sparse penalties: the trust-region step of the Newton model at
    /// the last iterate, or the alternation's where the model is not used or sees no
    /// progress.
    pub(super) fn newton_step(&mut self) -> Result<()> {
        let model = match &self.weights {
            Weights::Sparse { trust, .. } if trust.alternate => None,
            Weights::Sparse { pen, w, .. } => self.model(pen, w)?,
            _ => return Ok(()),
        };
        let j = self.j;
        let Weights::Sparse { pen, w, trust } = &mut self.weights else {
            return Ok(());
        };
        trust.alternate = false;
        if let Some(model) = model {
            let (step, pred) = model.step(trust.radius, pen);
            if pred > 1e-15 * j.abs() {
                *w = step;
                trust.model = Some((model, pred));
                return Ok(());
            }
        }
        trust.model = None;
        alternate(pen, w, &self.norms);
        Ok(())
    }

    /// The Newton model of `J` at the weights `w` of the last iterate (module docs), on the
    /// kernels the wrapper's rule picks; `None` when there is none to move.
    fn model(&self, pen: &WeightPenalty, w: &[f64]) -> Result<Option<NewtonModel>> {
        let grad = gradient(w, &self.forms, pen);
        let smooth = !self.classes[0].whole.is_sparse();
        let vars = model_kernels(w, &grad, if smooth { MAX_MODEL_SMOOTH } else { MAX_MODEL });
        if vars.is_empty() {
            return Ok(None);
        }
        let (stack, c) = (self.stack, &self.c);
        let cfg = WrapperConfig {
            penalty: SparsePenalty::L1,
            c: self.cfg.c,
            loss: self.cfg.loss,
            tol: self.cfg.tol,
            max_iter: self.cfg.max_iter,
            inner_tol: self.cfg.inner_tol,
        };
        let kw = &self.kw;
        let hessians = self
            .classes
            .par_iter()
            .zip(&self.solved)
            .map(|(s, (f, b))| {
                // On the class's working set of points where it has one.
                let p = s.solved(stack, kw, c);
                let (beta, f) = p.local.unwrap_or((s.beta(), f));
                let point = Point {
                    beta: beta.to_vec(),
                    f: f.to_vec(),
                    b: *b,
                    value: 0.0,
                };
                let prod = support_products(p.stack, &point.beta, &vars);
                s_hessian(p.solver, p.stack, p.kw, &point, &prod, p.c, &cfg)
            })
            .collect::<Result<Vec<Mat<f64>>>>()?;
        let s = vars.len();
        let mut hess = Mat::<f64>::zeros(s, s);
        for h in &hessians {
            hess += h;
        }
        for (a, &k) in vars.iter().enumerate() {
            hess[(a, a)] += pen.d2(w[k]);
        }
        let top = (0..s).fold(0.0f64, |a, r| a.max(hess[(r, r)].abs()));
        for a in 0..s {
            hess[(a, a)] += 1e-10 * top.max(f64::MIN_POSITIVE);
        }
        Ok(Some(NewtonModel {
            grad: vars.iter().map(|&k| grad[k]).collect(),
            vars,
            hess,
            j: self.j,
            w: w.to_vec(),
        }))
    }
}
