//! Proximal Newton in feature space for `l1`, `elasticnet`, ℓp and group MKL on explicit
//! features (docs/mathematics.md §2.13).
//!
//! When every kernel is given by its features, `K_m = G_m G_mᵀ` with `G_m` of shape `n × r_m`
//! (a `FeatureBank` block, a low-rank factor), the model is `f = Σ_m G_m w_m + b` with
//! `‖f_m‖ = ‖w_m‖`, and the problem of §0.2 is the group lasso (elastic net) in `w`:
//!
//! ```text
//! P(w, b) = C Σ_i ℓ(y_i, f_i) + Σ_m (r_1 ‖w_m‖ + r_2/2 ‖w_m‖²).
//! ```
//!
//! Each step of the driver (`ProxNewton` in `solver`) reads the features once for the
//! gradient `g = C Gᵀℓ'(f)` and the certificate (`certificate`), picks a working set of
//! kernels (`working_set`: the active ones and the worst violators of the optimality
//! conditions), forms the Hessian of the loss on them, `H = C [G_W, 1]ᵀ diag(ℓ'') [G_W, 1]`
//! (one pass over their columns, `(Σ_W r_m + 1)²` per row), minimises the quadratic model plus
//! the penalty by block coordinate descent (`model`: no feature is read there), and takes the
//! step with a backtracking line search on `P` (`search`). The systems are `R × R` in the
//! working set's total width: the cost never grows like `n²` or `n³`. The losses without a
//! second derivative and the `group` penalty are smoothed, at levels lowered as the steps
//! solve them (`continuation`).

mod certificate;
mod chunk;
mod continuation;
mod features;
mod model;
mod products;
mod read;
mod rows;
mod search;
mod solver;
#[cfg(test)]
mod tests;
mod working_set;

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::{KernelStack, RowFeatures};
use crate::losses::{costs, Loss};
use crate::penalties::{BlockPenalty, SparsePenalty};
use crate::result::FitResult;
use crate::solvers::driver::Driver;
use certificate::Problem;
use features::rows_of;
use solver::ProxNewton;

pub use chunk::{Chunks, Memo};
pub use read::RowRead;
pub use rows::{Curvature, DualPoint, Op, Rows, Shift, Update};

/// Settings of [`fit_prox_newton`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProxNewtonConfig {
    /// `l1`, `elasticnet`, ℓp with `p > 1` (`lp_direction`), or
    /// `group` through the smoothing continuation of its penalty
    /// (`GroupLevel`).
    pub penalty: BlockPenalty,
    /// Loss weight.
    pub c: f64,
    /// Any loss: the hinge and ε-insensitive ones through the smoothing continuation
    /// (`Smoothing`).
    pub loss: Loss,
    /// Stop when the relative duality gap is at most this.
    pub tol: f64,
    /// Newton steps at most.
    pub max_iter: usize,
}

impl Default for ProxNewtonConfig {
    fn default() -> Self {
        ProxNewtonConfig {
            penalty: BlockPenalty::Sparse(SparsePenalty::L1),
            c: 1.0,
            loss: Loss::Hinge,
            tol: 1e-3,
            max_iter: 200,
        }
    }
}

/// The settings by name.
impl Fields for ProxNewtonConfig {
    fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        self.penalty.fields(v)?;
        crate::solvers::common::common_fields(
            v,
            &mut self.c,
            &mut self.loss,
            &mut self.tol,
            &mut self.max_iter,
        )
    }
}

impl ProxNewtonConfig {
    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        crate::solvers::common::validate_common(self.c, self.tol, self.max_iter)?;
        self.penalty.validate()
    }
}

/// Fits `l1` / `elasticnet` / ℓp / `group` MKL on explicit features by (proximal) Newton
/// (module docs).
/// `feature_weights` of the result are `w` (kernel blocks in column order) at the best primal
/// iterate, and `coef` its representer form.
pub fn fit_prox_newton(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &ProxNewtonConfig,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_prox_newton_weighted(stack, y, None, cfg, None, interrupt)
}

/// A starting point of [`fit_prox_newton_weighted`] (a warm start): the feature weights `w`,
/// kernel blocks in column order as the result's `feature_weights`, and the intercept.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureStart {
    pub weights: Vec<f64>,
    pub intercept: f64,
}

/// [`fit_prox_newton`] with a weight per sample on the loss (`C Σ_i w_i ℓ(y_i, f_i)`), from
/// `start` when given (certified first: a start already optimal ends the fit there), else from
/// `w = 0` and the best intercept.
pub fn fit_prox_newton_weighted(
    stack: &dyn KernelStack,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    let (data, dims) = rows_of(stack)?;
    let x = RowFeatures::new(&data, stack.n(), &dims)?;
    fit_prox_newton_rows(&x, y, sample_weight, cfg, start, interrupt)
}

/// [`fit_prox_newton_weighted`] on feature rows: row-major (numpy's blocks, f64 or f32, read
/// in place) or sparse ([`crate::kernels::SparseRowFeatures`]), any [`RowRead`].
pub fn fit_prox_newton_rows<X: RowRead + ?Sized>(
    x: &X,
    y: &[f64],
    sample_weight: Option<&[f64]>,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    cfg.validate()?;
    crate::solvers::common::validate_targets(x.n(), y)?;
    x.check_finite()?;
    let c = costs(cfg.c, sample_weight, y.len())?;
    let rows = Chunks::new(x, y, &c);
    fit_prox_newton_on(&rows, cfg, start, interrupt)
}

/// The fit on rows wherever they are ([`Rows`]: in memory, or the chunks of a Dask array on a
/// cluster), whose per-row state starts at `z = 0`: the start checked, then the Newton steps
/// (`ProxNewton`) on the driver.
pub fn fit_prox_newton_on(
    x: &dyn Rows,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
) -> Result<FitResult> {
    fit_on(
        x,
        cfg,
        start,
        interrupt,
        products::products_from(x.sparse()),
    )
}

/// [`fit_prox_newton_on`] with working sets of at least `products_from` columns taking
/// Hessian products (`products`; the tests lower it to compare both paths).
fn fit_on(
    x: &dyn Rows,
    cfg: &ProxNewtonConfig,
    start: Option<&FeatureStart>,
    interrupt: &dyn Interrupt,
    products_from: usize,
) -> Result<FitResult> {
    cfg.validate()?;
    let width = x.width();
    if let Some(ids) = cfg.penalty.group_ids() {
        if ids.len() != x.m() {
            return Err(MkError::config(
                "groups",
                format!("has {} entries for {} kernels", ids.len(), x.m()),
            ));
        }
    }
    let prob = Problem { x, cfg, interrupt };
    let point = match start {
        None => {
            prob.update(&Update::Point {
                cols: Vec::new(),
                vals: Vec::new(),
            })?;
            (vec![0.0; width], prob.start_intercept()?)
        }
        Some(s) => {
            if s.weights.len() != width {
                return Err(MkError::Shape(format!(
                    "the start has {} feature weights for features of total width {width}",
                    s.weights.len()
                )));
            }
            if !(s.intercept.is_finite() && s.weights.iter().all(|v| v.is_finite())) {
                return Err(MkError::non_finite("the starting point"));
            }
            let cols: Vec<usize> = (0..width).filter(|&j| s.weights[j] != 0.0).collect();
            let vals: Vec<f64> = cols.iter().map(|&j| s.weights[j]).collect();
            prob.update(&Update::Point { cols, vals })?;
            (s.weights.clone(), s.intercept)
        }
    };
    let mut driver = Driver::new(cfg.tol, cfg.max_iter, interrupt);
    let warm = start.is_some();
    let mut solver = ProxNewton::start(prob, point, warm, products_from, &mut driver.tracker)?;
    driver.run(&mut solver)
}
