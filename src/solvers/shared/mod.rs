//! One set of kernel weights for all classes (`multi_class="shared"`, docs/mathematics.md §3.8):
//! the one-vs-rest problems coupled through one θ, as one solver over them.
//!
//! Primal: `P = Σ_c Σ_i c_i ℓ(y_i^c, f^c(x_i)) + Ω(s)`, `s_m = sqrt(Σ_c ‖f_m^c‖²)` (the block
//! norm of kernel `m` over the classes), `Ω` any [`BlockPenalty`] (`lp` with `p ∈ [1, ∞]`).
//! For fixed θ the classes separate: class `c`'s problem is the single-kernel problem on
//! `K_θ = Σ_m θ_m K_m`, with `A^c[m] = θ_m β_c`, so every iteration solves the K problems in
//! parallel (rayon; SMO or Newton, each warm-started at its last solution), reads the forms
//! `q_m = Σ_c β_cᵀK_mβ_c` in one pass over the stack, certifies the whole problem and moves θ
//! by the binary solver's step for the penalty, on the summed forms (`weights`).
//!
//! Dual (any penalty): `D = −Σ_c Σ_i c_i ℓ*(y_i^c, −ρ_ci/c_i) − Ω°(t)`, `t_m = sqrt(Σ_c
//! ρ_cᵀK_mρ_c)`, at the best common multiple of the points `ρ_c` (`β_c`, or the logistic
//! loss's natural point), `best_shared_dual`.

mod class;
mod group;
mod sparse;
#[cfg(test)]
mod tests;
mod weights;

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::KernelStack;
use crate::losses::{costs, Loss};
use crate::penalties::duals::{best_shared_dual, natural_dual};
use crate::penalties::{BlockPenalty, SparsePenalty};
use crate::result::FitResult;
use crate::solvers::driver::{Driver, Outcome, Solver};
use crate::solvers::mirror::Moved;
use crate::solvers::points::MIN_POINTS;
use crate::solvers::schedule::GapSchedule;
use crate::solvers::single::SingleKernel;
use crate::solvers::tracker::Model;
use crate::solvers::witness::PsdCheck;
use crate::solvers::wrapper::Combined;
use class::Class;
use weights::Weights;

/// Settings of a shared fit.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedConfig {
    /// The penalty on the block norms over the classes (`lp`: `p ∈ [1, ∞]`).
    pub penalty: BlockPenalty,
    /// Loss weight.
    pub c: f64,
    /// A classification loss (hinge, squared hinge or logistic).
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Outer iterations at most.
    pub max_iter: usize,
    /// Smallest accuracy asked of the single-kernel solves.
    pub inner_tol: f64,
}

impl SharedConfig {
    /// The losses a shared fit accepts (those [`SharedConfig::validate`] accepts): what the
    /// facade's `multi_class="shared"` checks against.
    pub fn losses() -> Vec<&'static str> {
        Loss::NAMES
            .into_iter()
            .filter(|&name| {
                Loss::parse(name, 0.0).is_ok_and(|loss| {
                    SharedConfig {
                        penalty: BlockPenalty::Lp { p: 2.0 },
                        c: 1.0,
                        loss,
                        tol: 1e-3,
                        max_iter: 1,
                        inner_tol: 1e-7,
                    }
                    .validate()
                    .is_ok()
                })
            })
            .collect()
    }

    /// The penalties a shared fit solves with a certificate: every block penalty
    /// (docs/mathematics.md §3.8).
    pub fn penalties() -> &'static [&'static str] {
        &BlockPenalty::NAMES
    }

    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        match self.penalty {
            BlockPenalty::Lp { p } if p.is_nan() || p < 1.0 => {
                return Err(MkError::config(
                    "p",
                    format!("must be in [1, inf], got {p}"),
                ))
            }
            BlockPenalty::Sparse(s) => s.validate()?,
            _ => {}
        }
        if !self.loss.is_classification() || matches!(self.loss, Loss::Squared) {
            return Err(MkError::config(
                "loss",
                "the shared fit takes hinge, squared_hinge or logistic",
            ));
        }
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
        if !(self.inner_tol.is_finite() && self.inner_tol > 0.0) {
            return Err(MkError::config("inner_tol", "must be positive"));
        }
        Ok(())
    }
}

/// A shared fit: the whole problem's certificate in `fit` (its `coef` `(K, M, n)` row-major,
/// `coef[c, m] = θ_m β_c`; its `intercept` unused), and the classes' intercepts.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedFit {
    pub fit: FitResult,
    pub intercepts: Vec<f64>,
}

/// Fits the shared problem of the one-vs-rest targets `ys` (one `±1` vector per class) on
/// `stack`, each sample's loss weighted by `C w_i` in every class (`sample_weight`, §0.2).
pub fn fit_shared(
    stack: &dyn KernelStack,
    ys: &[Vec<f64>],
    sample_weight: Option<&[f64]>,
    cfg: &SharedConfig,
    interrupt: &dyn Interrupt,
) -> Result<SharedFit> {
    cfg.validate()?;
    // `l1_ratio = 1` is `l1` (§0.4 (5)): the same iterates, and the dual's norm constraint.
    let cfg = &SharedConfig {
        penalty: match cfg.penalty {
            BlockPenalty::Sparse(SparsePenalty::ElasticNet { l1_ratio: 1.0 }) => {
                BlockPenalty::Sparse(SparsePenalty::L1)
            }
            ref other => other.clone(),
        },
        ..cfg.clone()
    };
    if ys.is_empty() {
        return Err(MkError::config("y", "needs at least one class"));
    }
    for y in ys {
        crate::solvers::common::validate_targets(stack.n(), y)?;
    }
    let c = costs(cfg.c, sample_weight, stack.n())?;
    let classes = ys
        .iter()
        .map(|y| SingleKernel::new(cfg.loss, &c, y).map(Class::new))
        .collect::<Result<Vec<_>>>()?;
    let weights = Weights::new(&cfg.penalty, stack, ys.len());
    let gaps = GapSchedule::new(cfg.tol, cfg.inner_tol, weights.over_relaxation())
        .with_patience(weights.patience());
    let mut solver = Shared {
        stack,
        psd: PsdCheck::new(stack),
        ys,
        c,
        cfg,
        classes,
        weights,
        kw: Combined::Dense(Vec::new()),
        solved: Vec::new(),
        j: f64::INFINITY,
        moved: None,
        forms: Vec::new(),
        norms: Vec::new(),
        primal: f64::INFINITY,
        first: true,
    };
    let fit = Driver::new(cfg.tol, cfg.max_iter, interrupt)
        .with_gaps(gaps)
        .run(&mut solver)?;
    Ok(split(fit, ys.len()))
}

/// The result with the `k` classes' intercepts taken off the end of `coef`.
fn split(mut fit: FitResult, k: usize) -> SharedFit {
    let intercepts = fit.coef.split_off(fit.coef.len() - k);
    SharedFit { fit, intercepts }
}

/// The shared fit's state between iterations.
struct Shared<'s> {
    stack: &'s dyn KernelStack,
    psd: PsdCheck<'s>,
    ys: &'s [Vec<f64>],
    c: Vec<f64>,
    cfg: &'s SharedConfig,
    /// One warm-started single-kernel solver per class, with its working set of points.
    classes: Vec<Class>,
    weights: Weights,
    /// `K_θ` of the last solves.
    kw: Combined,
    /// The last solves' `(f_c, b_c)` and the value `J` of the sparse penalties' Newton model
    /// ([`sparse`]) at them.
    solved: Vec<(Vec<f64>, f64)>,
    j: f64,
    /// Group MKL's free blocks after the last iterate's proximal steps, per class.
    moved: Option<Vec<Vec<Moved>>>,
    /// `q_m = Σ_c β_cᵀK_mβ_c`, `s_m = θ_m sqrt(q_m)` and `P` of the last iterate: the input
    /// of the next θ step.
    forms: Vec<f64>,
    norms: Vec<f64>,
    primal: f64,
    /// Whether the next iterate is the first (whose solves form the working sets).
    first: bool,
}

impl Solver for Shared<'_> {
    /// The K solves at the current weights; a trial step of the sparse penalties' Newton
    /// model that raised `J` is refused (retried in a smaller region, nothing recorded),
    /// else the iterate is certified.
    fn step(&mut self, d: &mut Driver<'_>) -> Result<Outcome> {
        let theta = self.weights.solve_weights();
        // The Newton model differentiates the exact solutions, and its trust region compares
        // their values: SMO is asked its floor at every iterate that the model reads, as in
        // the wrapper (not at one that only the alternation's step reads, e.g. the first).
        let tol = match (&self.weights, self.classes[0].whole.is_sparse()) {
            (Weights::Sparse { trust, .. }, true) if trust.modelled() => {
                self.cfg.inner_tol.min(0.1 * self.cfg.tol)
            }
            _ => d.inner_tol(),
        };
        self.set_offsets();
        self.solved = self.solve(&theta, tol, d.interrupt)?;
        if self.refused()? {
            return Ok(Outcome::Gap {
                gap: f64::INFINITY,
                whole: false,
                new_problem: false,
            });
        }
        let gap = self.certify(d, &theta);
        if std::mem::take(&mut self.first) {
            self.form_sets()?;
        }
        Ok(Outcome::Gap {
            gap,
            whole: true,
            new_problem: false,
        })
    }

    fn recover(&mut self, _d: &mut Driver<'_>, frozen: bool) -> bool {
        self.weights.recover(frozen)
    }

    fn update(&mut self, d: &Driver<'_>) -> Result<()> {
        if !self.norms.iter().any(|&s| s > 0.0) {
            return Ok(());
        }
        match self.weights {
            Weights::Sparse { .. } => return self.newton_step(),
            Weights::Group { .. } => {
                let moved = self.moved.take();
                self.group_step(moved);
            }
            Weights::Lp { .. } => self.weights.update(&self.norms, d.omega()),
        }
        Ok(())
    }
}

impl Shared<'_> {
    /// The K single-kernel solves on `K_θ`, in parallel over the classes: each class's model
    /// values `f_c = K_θ β_c` on every point and intercept. A class with a working set of
    /// points solves on it ([`class`]); `K_θ` on every point is formed once for the others
    /// (the wrapper's [`Combined`]: dense, `UUᵀ` for Newton on factors of total rank below
    /// `n`, or its weights only on kernels computed on demand, whose columns SMO computes
    /// through each class's cache).
    fn solve(
        &mut self,
        theta: &[f64],
        tol: f64,
        interrupt: &dyn Interrupt,
    ) -> Result<Vec<(Vec<f64>, f64)>> {
        let (stack, c, loss) = (self.stack, &self.c, self.cfg.loss);
        let smooth = !self.classes[0].whole.is_sparse();
        let mut out = self
            .classes
            .par_iter_mut()
            .zip(self.ys.par_iter())
            .map(|(s, y)| s.solve_restricted(stack, theta, y, c, loss, tol, interrupt))
            .collect::<Result<Vec<_>>>()?;
        if out.iter().all(Option::is_some) {
            return Ok(out.into_iter().flatten().collect());
        }
        self.kw.set(stack, theta, smooth);
        let kw = &self.kw;
        self.classes
            .par_iter_mut()
            .zip(self.ys.par_iter())
            .zip(out.par_iter_mut())
            .filter(|(_, o)| o.is_none())
            .try_for_each(|((s, y), o)| -> Result<()> {
                // The model values with group MKL's free blocks (`group`), if any.
                let f = kw.solve(&mut s.whole, stack, tol, interrupt)?;
                let f = s.whole.shifted(&f);
                let b = loss.best_intercept(y, &f, c, s.whole.intercept());
                *o = Some((f, b));
                Ok(())
            })?;
        Ok(out.into_iter().flatten().collect())
    }

    /// The classes' working sets of points from the first iterate's solves ([`class`]), for
    /// the hinge-type losses from [`MIN_POINTS`] points on, as the binary wrapper's; not for
    /// group MKL, whose free blocks are functions on every point.
    fn form_sets(&mut self) -> Result<()> {
        let sparse = self.classes[0].whole.is_sparse();
        if !sparse || self.stack.n() < MIN_POINTS || matches!(self.weights, Weights::Group { .. }) {
            return Ok(());
        }
        let (stack, c) = (self.stack, &self.c);
        self.classes
            .par_iter_mut()
            .zip(self.ys.par_iter())
            .zip(self.solved.par_iter())
            .try_for_each(|((s, y), (f, b))| s.form_set(stack, y, c, (f, *b)))
    }

    /// The classes' dual points and the forms at them, summed over the classes, in one batch
    /// of passes: the logistic loss's dual points are the models' natural ones (§1.3), with
    /// their best intercepts; the others' are the solvers' β.
    fn summed_forms(&self) -> SummedForms {
        let (stack, loss, c) = (self.stack, self.cfg.loss, &self.c);
        let (k, m, n) = (self.ys.len(), stack.m(), stack.n());
        let points: Vec<Option<(f64, Vec<f64>)>> = self
            .ys
            .par_iter()
            .zip(&self.solved)
            .map(|(y, (f, b))| natural_dual(loss, c, y, f, *b))
            .collect();
        let natural = points.iter().all(Option::is_some);
        let mut vs: Vec<f64> = self
            .classes
            .iter()
            .flat_map(|s| s.beta().to_vec())
            .collect();
        if natural {
            vs.extend(points.iter().flatten().flat_map(|(_, r)| r.iter().copied()));
        }
        let b = vs.len() / n.max(1);
        let mut out = vec![0.0; m * b];
        stack.quad_forms_batch(&vs, &mut out);
        let sum = |from: usize| -> Vec<f64> {
            (0..m)
                .map(|q| out[q * b + from..q * b + from + k].iter().sum())
                .collect()
        };
        let forms = sum(0);
        let dual_forms = if natural { sum(k) } else { forms.clone() };
        let rhos: Vec<Vec<f64>> = vs[(b - k) * n..]
            .chunks_exact(n)
            .map(<[f64]>::to_vec)
            .collect();
        SummedForms {
            points,
            forms,
            dual_forms,
            rhos,
        }
    }

    /// The whole problem's certificate at `A^c[m] = θ_m β_c` with the model values and
    /// intercepts `solved`: the forms of every class's `β_c` (and dual point) in one pass over
    /// the stack, `P`, `D` and the witness check, recorded; returns the gap.
    fn certify(&mut self, d: &mut Driver<'_>, theta: &[f64]) -> f64 {
        let (loss, c) = (self.cfg.loss, &self.c);
        let solved = &self.solved;
        let (k, m, n) = (self.ys.len(), self.stack.m(), self.stack.n());
        let SummedForms {
            points,
            forms,
            dual_forms,
            rhos,
        } = self.summed_forms();
        let intercepts: Vec<f64> = points
            .iter()
            .zip(solved)
            .map(|(p, (_, b))| p.as_ref().map_or(*b, |p| p.0))
            .collect();
        let mut norms: Vec<f64> = theta
            .iter()
            .zip(&forms)
            .map(|(t, q)| t * q.max(0.0).sqrt())
            .collect();
        let tau = theta.iter().fold(0.0f64, |a, &v| a.max(v));
        let moved = self.free_steps(tau, &mut norms);
        let data: f64 = (0..k)
            .into_par_iter()
            .map(|j| loss.weighted_total(&self.ys[j], &solved[j].0, intercepts[j], c))
            .sum();
        // A non-finite form (a stack with NaN let through) makes no primal value: the penalty's
        // maxima would skip it.
        let primal = match forms.iter().all(|q| q.is_finite()) {
            true => data + self.cfg.penalty.value(&norms),
            false => f64::NAN,
        };
        let t: Vec<f64> = dual_forms.iter().map(|q| q.max(0.0).sqrt()).collect();
        let dual = best_shared_dual(&t, self.ys, &rhos, c, loss, &self.cfg.penalty);
        let mass = || {
            let l1 = |r: &Vec<f64>| r.iter().map(|v| v.abs()).sum::<f64>().powi(2);
            rhos.iter().map(l1).sum::<f64>().sqrt()
        };
        let witness = self
            .psd
            .scan_with(n, mass, dual_forms.iter().copied().enumerate());
        let active = theta.iter().filter(|&&v| v > 0.0).count();
        let reported = self.weights.reported(&norms, theta);
        let model = || {
            let mut coef = Vec::with_capacity(k * m * n + k);
            for (c, s) in self.classes.iter().enumerate() {
                let mut a = Model::outer(theta, s.beta(), 1.0, 0.0, Vec::new(), Vec::new()).coef;
                // A free kernel's block is its proximal step's, `v_k^c + τ β_c`.
                for mv in moved.iter().flat_map(|all| &all[c]) {
                    a[mv.kernel * n..(mv.kernel + 1) * n].copy_from_slice(&mv.coef);
                }
                coef.extend(a);
            }
            // The intercepts ride at the end of `coef` until `split` takes them off.
            coef.extend(&intercepts);
            Model {
                coef,
                intercept: 0.0,
                weights: reported,
                norms: norms.clone(),
            }
        };
        let gap = d
            .tracker
            .record_with(primal, (dual, witness), active, model);
        (self.forms, self.norms, self.primal) = (forms, norms, primal);
        self.moved = moved;
        gap
    }
}

/// [`Shared::summed_forms`]'s result.
struct SummedForms {
    /// Each class's natural dual point and its intercept (logistic loss), else `None`.
    points: Vec<Option<(f64, Vec<f64>)>>,
    /// `Σ_c β_cᵀK_mβ_c`, and the same at the dual points.
    forms: Vec<f64>,
    dual_forms: Vec<f64>,
    /// The classes' dual points.
    rhos: Vec<Vec<f64>>,
}
