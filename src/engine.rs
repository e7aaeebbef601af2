//! The engine's one entry: [`fit`] runs the solver that [`Settings`] names on [`Data`] (a
//! kernel stack, or explicit feature rows), continued by SpicyMKL where the settings say so.
//! [`Settings`] is the typed union of the solvers' configurations; what each solver fits is
//! stated once, by [`capabilities`]. The Python binding converts types to and from these and
//! holds no dispatch of its own.
//!
//! ```
//! use multikernel::engine::{fit, Data, Settings};
//! use multikernel::kernels::DenseStack;
//! use multikernel::NoInterrupt;
//!
//! // Two kernels on four points: the identity and the all-ones matrix.
//! let n = 4;
//! let mut g = vec![0.0; 2 * n * n];
//! for i in 0..n {
//!     g[i * n + i] = 1.0;
//!     for j in 0..n {
//!         g[n * n + i * n + j] = 1.0;
//!     }
//! }
//! let stack = DenseStack::new(&g, 2, n).unwrap();
//! let y = [1.0, 1.0, -1.0, -1.0];
//! let settings = Settings::default_of("analytic").unwrap();
//! let fitted = fit(&settings, Data::Stack(&stack), &y, None, None, &NoInterrupt).unwrap();
//! assert_eq!(fitted.solvers, ["analytic"]);
//! assert!(fitted.result.gap <= 1e-3);
//! ```

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::{Element, KernelStack, RowFeatures, SparseRowFeatures};
use crate::losses::Loss;
use crate::penalties::{BlockPenalty, GroupPenalty, Groups, SparsePenalty};
use crate::result::FitResult;
use crate::solvers::continued::fit_wrapper_continued;
use crate::solvers::lp::{
    fit_lp_weighted, fit_one_class_weighted, LpAlgorithm, LpConfig, OneClassConfig,
};
use crate::solvers::mirror::{fit_group_weighted, MirrorConfig};
#[cfg(doc)]
use crate::solvers::path::fit_path_weighted;
use crate::solvers::path::PathConfig;
use crate::solvers::prox_newton::{
    fit_prox_newton_rows, fit_prox_newton_weighted, FeatureStart, ProxNewtonConfig,
};
use crate::solvers::spicy::{fit_spicy_weighted, SpicyConfig, SpicyStart};
use crate::solvers::svrg::{fit_svrg_weighted, SvrgConfig};
use crate::solvers::wrapper::{fit_wrapper_weighted, WrapperConfig};

/// The settings of one solver: its settings struct, with the group ids of `mirror`.
#[derive(Debug, Clone, PartialEq)]
pub enum Settings {
    /// `analytic` or `interleaved` (the struct's `algorithm`).
    Lp(LpConfig),
    Spicy(SpicyConfig),
    /// With whether SpicyMKL continues a fit that stops above `tol` (`solver="auto"`'s
    /// choice, [`crate::solvers::continued`]).
    Wrapper(WrapperConfig, bool),
    /// On explicit features (a stack of factors).
    ProxNewton(ProxNewtonConfig),
    /// With the group id of every kernel (`None`: one group, `lp` with `p = 1`).
    Mirror(MirrorConfig, Option<Vec<usize>>),
    /// On explicit features, not a kernel stack.
    Svrg(SvrgConfig),
    /// One-class ℓp-MKL (the targets are not read).
    OneClass(OneClassConfig),
    /// The regularization path, run by [`fit_path_weighted`] rather than [`fit`].
    Path(PathConfig),
}

/// A fit's starting point (a warm start): SpicyMKL's in the kernels' space, or proximal
/// Newton's in feature space.
pub enum Start {
    Spicy(SpicyStart),
    Features(FeatureStart),
}

/// The solvers' names, as `solver=` and `Settings(solver, ...)` read them. `Settings("path",
/// ...)` also reads the settings of the regularization path, which `path()` runs: it is not a
/// solver of [`fit`] and so not in this list.
pub const SOLVER_NAMES: [&str; 8] = [
    "analytic",
    "interleaved",
    "spicy",
    "wrapper",
    "prox_newton",
    "mirror",
    "svrg",
    "one_class",
];

impl Settings {
    /// The engine's defaults of `solver` (each struct's `Default`).
    pub fn default_of(solver: &str) -> Result<Self> {
        let lp = |algorithm| {
            Settings::Lp(LpConfig {
                algorithm,
                ..LpConfig::default()
            })
        };
        Ok(match solver {
            "analytic" => lp(LpAlgorithm::Analytic),
            "interleaved" => lp(LpAlgorithm::Interleaved),
            "spicy" => Settings::Spicy(SpicyConfig::default()),
            "wrapper" => Settings::Wrapper(WrapperConfig::default(), false),
            "prox_newton" => Settings::ProxNewton(ProxNewtonConfig::default()),
            "mirror" => Settings::Mirror(MirrorConfig::default(), None),
            "svrg" => Settings::Svrg(SvrgConfig::default()),
            "one_class" => Settings::OneClass(OneClassConfig::default()),
            "path" => Settings::Path(PathConfig::default()),
            other => {
                return Err(MkError::config(
                    "solver",
                    format!(
                        "unknown solver {other:?}; valid: {}",
                        SOLVER_NAMES.join(", ")
                    ),
                ))
            }
        })
    }

    /// The solver's name (one of [`SOLVER_NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            Settings::Lp(c) => match c.algorithm {
                LpAlgorithm::Analytic => "analytic",
                LpAlgorithm::Interleaved => "interleaved",
            },
            Settings::Spicy(_) => "spicy",
            Settings::Wrapper(..) => "wrapper",
            Settings::ProxNewton(_) => "prox_newton",
            Settings::Mirror(..) => "mirror",
            Settings::Svrg(_) => "svrg",
            Settings::OneClass(_) => "one_class",
            Settings::Path(_) => "path",
        }
    }

    /// Checks every setting (and the group ids of `mirror`).
    pub fn validate(&self) -> Result<()> {
        match self {
            Settings::Lp(c) => c.validate(),
            Settings::Spicy(c) => c.validate(),
            Settings::Wrapper(c, _) => c.validate(),
            Settings::ProxNewton(c) => c.validate(),
            Settings::Mirror(c, groups) => {
                if let Some(ids) = groups {
                    Groups::new(ids)?;
                }
                c.validate()
            }
            Settings::Svrg(c) => c.validate(),
            Settings::OneClass(c) => c.validate(),
            Settings::Path(c) => c.validate(),
        }
    }

    /// `start` as the start of this solver: SpicyMKL's or proximal Newton's; an error for a
    /// start the solver does not take.
    pub fn split_start<'s>(
        &self,
        start: Option<&'s Start>,
    ) -> Result<(Option<&'s SpicyStart>, Option<&'s FeatureStart>)> {
        match start {
            None => Ok((None, None)),
            Some(Start::Spicy(st)) if matches!(self, Settings::Spicy(_)) => Ok((Some(st), None)),
            Some(Start::Features(st)) if matches!(self, Settings::ProxNewton(_)) => {
                Ok((None, Some(st)))
            }
            Some(Start::Spicy(_)) => Err(MkError::config(
                "init_coef",
                "a starting point (M, n) is taken by solver spicy only",
            )),
            Some(Start::Features(_)) => Err(MkError::config(
                "init_feature_weights",
                "a starting point in feature space is taken by solver prox_newton only",
            )),
        }
    }

    /// Whether the solver fits explicit feature blocks (`(n, D_m)` arrays, one per kernel)
    /// rather than only kernel stacks.
    pub fn reads_features(&self) -> bool {
        matches!(self, Settings::Svrg(_) | Settings::ProxNewton(_))
    }

    /// Whether the solver takes a warm start: SpicyMKL's in the kernels' space, proximal
    /// Newton's in feature space ([`Settings::split_start`]).
    pub fn warm_start(&self) -> bool {
        matches!(self, Settings::Spicy(_) | Settings::ProxNewton(_))
    }

    /// The loss of a supervised solver (the one-class solver has none).
    pub fn loss_mut(&mut self) -> Option<&mut Loss> {
        match self {
            Settings::Lp(c) => Some(&mut c.loss),
            Settings::Spicy(c) => Some(&mut c.loss),
            Settings::Wrapper(c, _) => Some(&mut c.loss),
            Settings::ProxNewton(c) => Some(&mut c.loss),
            Settings::Mirror(c, _) => Some(&mut c.loss),
            Settings::Svrg(c) => Some(&mut c.loss),
            Settings::Path(c) => Some(&mut c.loss),
            Settings::OneClass(_) => None,
        }
    }

    /// Whether these settings fit kernels computed on demand, without an `n×n` matrix: SMO
    /// (the hinge-type losses) inside the analytic ℓp solver, the l1 / elastic-net wrapper and
    /// group MKL (mirror); every other solver or loss would form one.
    pub fn on_demand(&self) -> bool {
        let smo = |loss: Loss| !matches!(loss, Loss::Squared | Loss::Logistic);
        match self {
            Settings::Lp(c) => c.algorithm == LpAlgorithm::Analytic && smo(c.loss),
            Settings::Wrapper(c, _) => smo(c.loss),
            Settings::Mirror(c, _) => smo(c.loss),
            _ => false,
        }
    }

    /// The penalties the solver solves, the estimators' names (`lp` at `p = 1` for `mirror`,
    /// as one group; the path's block ℓ1).
    pub fn penalties(&self) -> &'static [&'static str] {
        match self {
            Settings::Lp(_) | Settings::Svrg(_) | Settings::OneClass(_) => &["lp"],
            Settings::Spicy(_) | Settings::Wrapper(..) => &["l1", "elasticnet"],
            Settings::ProxNewton(_) => &["l1", "elasticnet", "lp", "group"],
            Settings::Mirror(..) => &["group", "lp"],
            Settings::Path(_) => &["l1"],
        }
    }

    /// The losses these settings' solver accepts (those its settings read and validate).
    pub fn losses(&self) -> Vec<&'static str> {
        Loss::NAMES
            .into_iter()
            .filter(|&loss| self.with_loss(loss).is_some())
            .collect()
    }

    /// The losses with which the solver fits kernels computed on demand (none: never).
    pub fn on_demand_losses(&self) -> Vec<&'static str> {
        self.losses()
            .into_iter()
            .filter(|&l| self.with_loss(l).is_some_and(|s| s.on_demand()))
            .collect()
    }

    /// Every setting by name ([`Fields`]): the solver's struct, then the variant's own
    /// (the wrapper's `continued`, `mirror`'s `groups`).
    pub fn fields<V: Visitor>(&mut self, v: &mut V) -> std::result::Result<(), V::Error> {
        match self {
            Settings::Lp(c) => c.fields(v),
            Settings::Spicy(c) => c.fields(v),
            Settings::Wrapper(c, continued) => {
                c.fields(v)?;
                v.flag("continued", continued)
            }
            Settings::ProxNewton(c) => c.fields(v),
            Settings::Mirror(c, groups) => {
                c.fields(v)?;
                v.ids("groups", groups)
            }
            Settings::Svrg(c) => c.fields(v),
            Settings::OneClass(c) => c.fields(v),
            Settings::Path(c) => c.fields(v),
        }
    }

    /// These settings as those of `solver` (`solver="auto"`'s move to another solver): `C`,
    /// the loss, `tol`, `max_iter` and the penalty carried over, the rest `solver`'s
    /// defaults; `continued` sets the wrapper's continuation by SpicyMKL. The same solver
    /// keeps every setting.
    ///
    /// # Errors
    ///
    /// An unknown solver; one without a loss (one-class, the path); a penalty `solver` does
    /// not solve; `continued` for a solver other than the wrapper.
    pub fn for_solver(&self, solver: &str, continued: bool) -> Result<Settings> {
        let mut out = match self.name() == solver {
            true => self.clone(),
            false => self.moved_to(solver)?,
        };
        match &mut out {
            Settings::Wrapper(_, c) => *c = continued,
            _ if continued => {
                return Err(MkError::config(
                    "continued",
                    "SpicyMKL continues the wrapper's fits only",
                ))
            }
            _ => {}
        }
        out.validate()?;
        Ok(out)
    }

    /// `solver`'s defaults with the common settings and the penalty of these.
    fn moved_to(&self, solver: &str) -> Result<Settings> {
        let mut from = self.clone();
        let mut out = Settings::default_of(solver)?;
        let (Some(from), Some(to)) = (from.common(), out.common()) else {
            return Err(MkError::config(
                "solver",
                format!(
                    "the settings of {:?} do not move to {solver:?}",
                    self.name()
                ),
            ));
        };
        (*to.c, *to.loss, *to.tol, *to.max_iter) = (*from.c, *from.loss, *from.tol, *from.max_iter);
        out.set_penalty(self.penalty()?)?;
        Ok(out)
    }

    /// These settings with the group ids `ids` of the group penalty (`mirror`'s, or
    /// `prox_newton`'s with `penalty="group"`).
    ///
    /// # Errors
    ///
    /// Invalid ids, or settings without a group penalty.
    pub fn with_groups(&self, ids: Vec<usize>) -> Result<Settings> {
        let mut out = self.clone();
        match &mut out {
            Settings::Mirror(_, groups) => *groups = Some(ids),
            Settings::ProxNewton(c) if matches!(c.penalty, BlockPenalty::Group(_)) => {
                c.penalty = BlockPenalty::Group(GroupPenalty::exact(Groups::new(&ids)?));
            }
            _ => {
                return Err(MkError::config(
                    "groups",
                    format!(
                        "is read by the group penalty only, not by {:?}",
                        self.name()
                    ),
                ))
            }
        }
        out.validate()?;
        Ok(out)
    }

    /// `C`, the loss, `tol` and `max_iter`: what every supervised solver has and a change of
    /// solver carries over ([`Settings::for_solver`]); `None` for the one-class solver and the
    /// path, which have no `C`.
    fn common(&mut self) -> Option<Common<'_>> {
        macro_rules! common {
            ($c:expr) => {
                Some(Common {
                    c: &mut $c.c,
                    loss: &mut $c.loss,
                    tol: &mut $c.tol,
                    max_iter: &mut $c.max_iter,
                })
            };
        }
        match self {
            Settings::Lp(c) => common!(c),
            Settings::Spicy(c) => common!(c),
            Settings::Wrapper(c, _) => common!(c),
            Settings::ProxNewton(c) => common!(c),
            Settings::Mirror(c, _) => common!(c),
            Settings::Svrg(c) => common!(c),
            Settings::OneClass(_) | Settings::Path(_) => None,
        }
    }

    /// The penalty these settings solve: ℓp's with its `p`, the sparse solvers' own,
    /// `mirror`'s group penalty (ℓp at `p = 1` without groups: one group), the path's `l1`.
    fn penalty(&self) -> Result<BlockPenalty> {
        Ok(match self {
            Settings::Lp(c) => BlockPenalty::Lp { p: c.p },
            Settings::Svrg(c) => BlockPenalty::Lp { p: c.p },
            Settings::OneClass(c) => BlockPenalty::Lp { p: c.p },
            Settings::Spicy(c) => BlockPenalty::Sparse(c.penalty),
            Settings::Wrapper(c, _) => BlockPenalty::Sparse(c.penalty),
            Settings::ProxNewton(c) => c.penalty.clone(),
            Settings::Mirror(_, Some(ids)) => {
                BlockPenalty::Group(GroupPenalty::exact(Groups::new(ids)?))
            }
            Settings::Mirror(_, None) => BlockPenalty::Lp { p: 1.0 },
            Settings::Path(_) => BlockPenalty::Sparse(SparsePenalty::L1),
        })
    }

    /// Sets the penalty of these settings to `penalty`, when their solver solves it.
    fn set_penalty(&mut self, penalty: BlockPenalty) -> Result<()> {
        match (self, penalty) {
            (Settings::Lp(c), BlockPenalty::Lp { p }) => c.p = p,
            (Settings::Svrg(c), BlockPenalty::Lp { p }) => c.p = p,
            (Settings::Spicy(c), BlockPenalty::Sparse(s)) => c.penalty = s,
            (Settings::Wrapper(c, _), BlockPenalty::Sparse(s)) => c.penalty = s,
            (Settings::ProxNewton(c), penalty) => c.penalty = penalty,
            (Settings::Mirror(_, groups), BlockPenalty::Group(g)) => {
                *groups = Some(g.groups.ids().to_vec())
            }
            (Settings::Mirror(_, groups), BlockPenalty::Lp { p: 1.0 }) => *groups = None,
            (s, penalty) => {
                return Err(MkError::config(
                    "penalty",
                    format!(
                        "solver {:?} does not solve penalty {}",
                        s.name(),
                        penalty.name()
                    ),
                ))
            }
        }
        Ok(())
    }

    /// These settings with `loss` instead, when the solver accepts it.
    pub fn with_loss(&self, loss: &str) -> Option<Settings> {
        let mut s = self.clone();
        let slot = s.loss_mut()?;
        *slot = Loss::parse(loss, slot.epsilon()).ok()?;
        s.validate().ok().map(|()| s)
    }
}

/// Borrows of the settings every supervised solver has ([`Settings::common`]).
struct Common<'a> {
    c: &'a mut f64,
    loss: &'a mut Loss,
    tol: &'a mut f64,
    max_iter: &'a mut usize,
}

/// What a fit reads: a kernel stack, or explicit feature rows (`(n, Σ D_k)`, one block of
/// columns per kernel) of float64 or float32, or sparse (CSR, float64: `prox_newton` only).
pub enum Data<'a> {
    Stack(&'a dyn KernelStack),
    Rows(&'a RowFeatures<'a, f64>),
    Rows32(&'a RowFeatures<'a, f32>),
    Sparse(&'a SparseRowFeatures),
}

/// The element types of feature rows the engine reads (float64, float32) and their [`Data`].
pub trait RowElement: Element {
    /// `x` as the data of a fit.
    fn data<'a>(x: &'a RowFeatures<'a, Self>) -> Data<'a>;
}

impl RowElement for f64 {
    fn data<'a>(x: &'a RowFeatures<'a, Self>) -> Data<'a> {
        Data::Rows(x)
    }
}

impl RowElement for f32 {
    fn data<'a>(x: &'a RowFeatures<'a, Self>) -> Data<'a> {
        Data::Rows32(x)
    }
}

/// A fit's result and the solvers that ran, in order (the wrapper, then `spicy` when SpicyMKL
/// continued it).
#[derive(Debug, Clone)]
pub struct Fitted {
    pub result: FitResult,
    pub solvers: Vec<&'static str>,
}

/// Fits `settings`' solver on `data` with targets `y`, sample weights `w` (finite, > 0; each
/// sample's loss weighs `C w_i`) and a warm `start` (SpicyMKL's in the kernels' space, or
/// proximal Newton's in feature space); `interrupt` is polled and told every iteration.
///
/// # Errors
///
/// Invalid settings or data, a start the solver does not take, data the solver does not fit
/// (explicit features for SVRG, a kernel stack for no feature-space-only solver), or the
/// path's settings (run by [`fit_path_weighted`]); the solver's own errors.
pub fn fit(
    settings: &Settings,
    data: Data<'_>,
    y: &[f64],
    w: Option<&[f64]>,
    start: Option<&Start>,
    i: &dyn Interrupt,
) -> Result<Fitted> {
    let (spicy, features) = settings.split_start(start)?;
    let one = |result| {
        Ok(Fitted {
            result,
            solvers: vec![settings.name()],
        })
    };
    let s = match data {
        Data::Stack(s) => s,
        Data::Rows(x) => return one(fit_rows(settings, x, y, w, features, i)?),
        Data::Rows32(x) => return one(fit_rows(settings, x, y, w, features, i)?),
        Data::Sparse(x) => return one(fit_sparse_rows(settings, x, y, w, features, i)?),
    };
    if let Settings::Wrapper(c, true) = settings {
        let r = fit_wrapper_continued(s, y, w, c, i)?;
        let mut solvers = vec![settings.name()];
        if r.continued {
            solvers.push("spicy");
        }
        return Ok(Fitted {
            result: r.result,
            solvers,
        });
    }
    one(match settings {
        Settings::Lp(c) => fit_lp_weighted(s, y, w, c, i),
        Settings::Spicy(c) => fit_spicy_weighted(s, y, w, c, spicy, i),
        Settings::Wrapper(c, _) => fit_wrapper_weighted(s, y, w, c, i),
        Settings::ProxNewton(c) => fit_prox_newton_weighted(s, y, w, c, features, i),
        Settings::Mirror(c, groups) => {
            let groups = match groups {
                Some(ids) => Groups::new(ids)?,
                None => Groups::single(s.m()),
            };
            fit_group_weighted(s, y, w, &groups, c, i)
        }
        Settings::Svrg(_) => Err(MkError::config(
            "solver",
            "svrg needs explicit features: a list of float64 or float32 arrays (n, D_k), \
             one per kernel, not a kernel stack (kernels=FeatureBank(...) in the estimators)",
        )),
        Settings::OneClass(c) => {
            crate::solvers::validate_targets(s.n(), y)?;
            fit_one_class_weighted(s, w, c, i)
        }
        Settings::Path(_) => Err(MkError::config(
            "solver",
            "Settings('path') are the regularization path's: run them with path(), not fit()",
        )),
    }?)
}

/// A feature-space solver (SVRG, proximal Newton) on rows.
fn fit_rows<T: Element>(
    settings: &Settings,
    x: &RowFeatures<'_, T>,
    y: &[f64],
    w: Option<&[f64]>,
    start: Option<&FeatureStart>,
    i: &dyn Interrupt,
) -> Result<FitResult> {
    match settings {
        Settings::Svrg(cfg) => fit_svrg_weighted(x, y, w, cfg, i),
        Settings::ProxNewton(cfg) => fit_prox_newton_rows(x, y, w, cfg, start, i),
        other => Err(MkError::config(
            "solver",
            format!(
                "{} fits a kernel stack, not explicit feature rows",
                other.name()
            ),
        )),
    }
}

/// A feature-space solver on sparse rows: proximal Newton, whose passes read the stored
/// entries only; SVRG (whose steps read dense rows) is refused by name, never densified.
fn fit_sparse_rows(
    settings: &Settings,
    x: &SparseRowFeatures,
    y: &[f64],
    w: Option<&[f64]>,
    start: Option<&FeatureStart>,
    i: &dyn Interrupt,
) -> Result<FitResult> {
    match settings {
        Settings::ProxNewton(cfg) => fit_prox_newton_rows(x, y, w, cfg, start, i),
        other => Err(sparse_refused(other)),
    }
}

/// The error of a solver given sparse feature blocks, which only proximal Newton fits.
pub fn sparse_refused(settings: &Settings) -> MkError {
    MkError::config(
        "solver",
        format!(
            "solver {:?} does not fit sparse feature blocks (a scipy.sparse X, or sequence \
             kernels, in kernels=FeatureBank(...)); solver 'prox_newton' does",
            settings.name()
        ),
    )
}

/// What a solver fits, as [`capabilities`] states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    /// One of [`SOLVER_NAMES`].
    pub solver: &'static str,
    /// It fits explicit feature blocks.
    pub features: bool,
    /// It takes a starting point.
    pub warm_start: bool,
    /// The penalties it solves ([`Settings::penalties`]).
    pub penalties: Vec<&'static str>,
    /// The losses it accepts.
    pub losses: Vec<&'static str>,
    /// The losses with which it fits kernels computed on demand (none: never).
    pub on_demand_losses: Vec<&'static str>,
}

/// What each solver of [`SOLVER_NAMES`] fits: the one table the Python facade derives its
/// lists from, so a solver states its capabilities once.
pub fn capabilities() -> Vec<Capability> {
    SOLVER_NAMES
        .into_iter()
        .map(|solver| {
            let s = Settings::default_of(solver).expect("every solver name has defaults");
            Capability {
                solver,
                features: s.reads_features(),
                warm_start: s.warm_start(),
                penalties: s.penalties().to_vec(),
                losses: s.losses(),
                on_demand_losses: s.on_demand_losses(),
            }
        })
        .collect()
}

/// The rule of kernels computed on demand, in words, from [`capabilities`]: the one sentence
/// both the engine's and the facade's refusals quote.
pub fn on_demand_rule() -> String {
    let mut solvers = Vec::new();
    let mut losses: Vec<&str> = Vec::new();
    for cap in capabilities() {
        if !cap.on_demand_losses.is_empty() {
            solvers.push(format!("'{}'", cap.solver));
            for l in cap.on_demand_losses {
                if !losses.contains(&l) {
                    losses.push(l);
                }
            }
        }
    }
    format!(
        "kernels computed on demand are fitted by solvers {} with the {} losses (every \
         other solver or loss forms n×n matrices)",
        solvers.join(", "),
        losses.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::NoInterrupt;
    use crate::kernels::DenseStack;
    use crate::solvers::test_util::Lcg;

    /// `n` points with 2 features per kernel: the kernels `1 + X_m X_mᵀ` of `m` feature blocks
    /// as a stack (the constant keeps the one-class optimum off zero), the blocks as rows
    /// `(n, 2m)`, labels from the first block.
    fn problem(n: usize, m: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = Lcg(3);
        let x: Vec<f64> = (0..n * 2 * m).map(|_| rng.next()).collect();
        let y = (0..n)
            .map(|i| {
                if x[i * 2 * m] + 0.3 * x[i * 2 * m + 1] > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let mut g = vec![0.0; m * n * n];
        for k in 0..m {
            for i in 0..n {
                for j in 0..n {
                    let (a, b) = (&x[i * 2 * m + 2 * k..][..2], &x[j * 2 * m + 2 * k..][..2]);
                    g[k * n * n + i * n + j] = 1.0 + a[0] * b[0] + a[1] * b[1];
                }
            }
        }
        (g, x, y)
    }

    /// Every solver through the one entry: the kernel-space solvers on the stack, the
    /// feature-space ones on rows, each certified to its tolerance and named in the result;
    /// kernel-space solvers refuse rows, and SVRG a stack, with a message that says what they
    /// need.
    #[test]
    fn every_solver_fits_through_the_one_entry_or_refuses_the_data_by_name() {
        let (n, m) = (40, 3);
        let (g, x, y) = problem(n, m);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let rows = RowFeatures::new(&x, n, &[2; 3]).unwrap();
        for cap in capabilities() {
            let settings = Settings::default_of(cap.solver).unwrap();
            let data = match cap.features {
                true => Data::Rows(&rows),
                false => Data::Stack(&stack),
            };
            let fitted = fit(&settings, data, &y, None, None, &NoInterrupt).unwrap();
            assert_eq!(fitted.solvers, [cap.solver]);
            let r = &fitted.result;
            assert!(r.gap <= 1e-3 && r.dual <= r.primal, "{}: {r:?}", cap.solver);
            if !cap.features {
                let err = fit(&settings, Data::Rows(&rows), &y, None, None, &NoInterrupt)
                    .unwrap_err()
                    .to_string();
                assert!(err.contains("fits a kernel stack"), "{}: {err}", cap.solver);
            }
        }
        let svrg = Settings::default_of("svrg").unwrap();
        let err = fit(&svrg, Data::Stack(&stack), &y, None, None, &NoInterrupt).unwrap_err();
        assert!(err.to_string().contains("needs explicit features"), "{err}");
        let path = Settings::default_of("path").unwrap();
        let err = fit(&path, Data::Stack(&stack), &y, None, None, &NoInterrupt).unwrap_err();
        assert!(err.to_string().contains("regularization path"), "{err}");
    }

    /// Every field by name with its value written out (`Debug`): what the binding's dicts
    /// hold.
    #[derive(Default)]
    struct Named(Vec<(&'static str, String)>);

    impl Named {
        fn of(settings: &Settings) -> Self {
            let mut named = Named::default();
            settings.clone().fields(&mut named).unwrap();
            named
        }

        fn put(&mut self, key: &'static str, v: &dyn std::fmt::Debug) -> Result<()> {
            self.0.push((key, format!("{v:?}")));
            Ok(())
        }

        fn get(&self, key: &str) -> Option<&str> {
            self.0
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.as_str())
        }
    }

    impl Visitor for Named {
        type Error = MkError;
        fn float(&mut self, key: &'static str, v: &mut f64) -> Result<()> {
            self.put(key, v)
        }
        fn count(&mut self, key: &'static str, v: &mut usize) -> Result<()> {
            self.put(key, v)
        }
        fn optional_count(&mut self, key: &'static str, v: &mut Option<usize>) -> Result<()> {
            self.put(key, v)
        }
        fn flag(&mut self, key: &'static str, v: &mut bool) -> Result<()> {
            self.put(key, v)
        }
        fn text(&mut self, key: &'static str, v: &mut String) -> Result<()> {
            self.put(key, v)
        }
        fn ids(&mut self, key: &'static str, v: &mut Option<Vec<usize>>) -> Result<()> {
            self.put(key, v)
        }
        fn optional_float(&mut self, key: &'static str, v: &mut Option<f64>) -> Result<()> {
            self.put(key, v)
        }
        fn floats(&mut self, key: &'static str, v: &mut Option<Vec<f64>>) -> Result<()> {
            self.put(key, v)
        }
    }

    /// Source settings of every supervised solver, none at its defaults.
    fn sources() -> Vec<Settings> {
        let loss = Loss::EpsilonInsensitive { epsilon: 0.3 };
        let mut out = Vec::new();
        for solver in SOLVER_NAMES {
            let Ok(mut s) = Settings::default_of(solver) else {
                continue;
            };
            if let Some(c) = s.common() {
                (*c.c, *c.tol, *c.max_iter) = (2.5, 1e-5, 17);
                if solver != "interleaved" && solver != "svrg" {
                    *c.loss = loss;
                }
            }
            match &mut s {
                Settings::Lp(c) => (c.p, c.inner_tol) = (1.5, 1e-5),
                Settings::Svrg(c) => (c.p, c.seed) = (1.5, 7),
                Settings::Spicy(c) => {
                    c.penalty = SparsePenalty::ElasticNet { l1_ratio: 0.3 };
                    c.gamma0 = 4.0;
                }
                Settings::Wrapper(c, _) => c.penalty = SparsePenalty::ElasticNet { l1_ratio: 0.3 },
                Settings::Mirror(c, groups) => (c.inner_tol, *groups) = (1e-5, Some(vec![0, 1, 0])),
                _ => continue, // one-class: not a supervised solver
            }
            out.push(s);
        }
        out
    }

    /// A change of solver carries `C`, the loss (with `epsilon`), `tol`, `max_iter` and the
    /// penalty by value, and every other setting of the new solver is its default: what the
    /// moves of `solver="auto"` made through the binding's dicts (the names both solvers have
    /// kept, the old solver's own dropped, the penalty named), now typed. A penalty the new
    /// solver does not solve is refused.
    #[test]
    fn a_change_of_solver_carries_the_common_settings_and_the_penalty() {
        let carried = ["C", "loss", "epsilon", "tol", "max_iter"];
        // Written from the penalty, which is compared whole.
        let of_penalty = ["penalty", "l1_ratio", "p", "groups"];
        let mut moves = Vec::new();
        for from in sources() {
            let named = Named::of(&from);
            let others = SOLVER_NAMES.into_iter().filter(|&s| s != from.name());
            for to in others.filter(|&s| s != "one_class") {
                let moved = match from.for_solver(to, false) {
                    Ok(moved) => moved,
                    // The new solver does not solve the penalty or does not take the loss.
                    Err(MkError::InvalidConfig { field, .. })
                        if field == "penalty" || field == "loss" =>
                    {
                        continue
                    }
                    Err(e) => panic!("{} → {to}: {e}", from.name()),
                };
                moves.push(format!("{}→{to}", from.name()));
                assert_eq!(moved.name(), to);
                assert_eq!(moved.penalty().unwrap(), from.penalty().unwrap());
                let defaults = Named::of(&Settings::default_of(to).unwrap());
                for (key, value) in Named::of(&moved).0 {
                    let expected = match carried.contains(&key) {
                        true => named.get(key),
                        false if of_penalty.contains(&key) => continue,
                        false => defaults.get(key),
                    };
                    assert_eq!(
                        Some(value.as_str()),
                        expected,
                        "{} → {to}: {key}",
                        from.name()
                    );
                }
            }
        }
        // `solver="auto"`'s moves (python/multikernel/_auto.py) are among them.
        for m in [
            "wrapper→prox_newton",
            "spicy→prox_newton",
            "analytic→prox_newton",
        ] {
            assert!(moves.contains(&m.to_string()), "{m}: {moves:?}");
        }
        assert!(
            moves.contains(&"mirror→prox_newton".to_string()),
            "{moves:?}"
        );
        assert!(!moves.contains(&"mirror→analytic".to_string()), "{moves:?}");
    }

    /// The same solver keeps every setting; `continued` is the wrapper's only; the group ids
    /// are set on the group penalty only.
    #[test]
    fn the_same_solver_keeps_its_settings_and_groups_go_to_the_group_penalty() {
        for from in sources() {
            let same = from.for_solver(from.name(), false).unwrap();
            let continued = from.for_solver(from.name(), true);
            match &from {
                Settings::Wrapper(c, _) => {
                    assert_eq!(same, from);
                    assert_eq!(continued.unwrap(), Settings::Wrapper(*c, true));
                }
                _ => {
                    assert_eq!(same, from);
                    assert!(continued.unwrap_err().to_string().contains("continued"));
                }
            }
        }
        let mirror = Settings::default_of("mirror").unwrap();
        let grouped = mirror.with_groups(vec![0, 0, 1]).unwrap();
        assert_eq!(
            grouped,
            Settings::Mirror(MirrorConfig::default(), Some(vec![0, 0, 1]))
        );
        let newton = grouped.for_solver("prox_newton", false).unwrap();
        let Settings::ProxNewton(c) = newton.with_groups(vec![1, 0]).unwrap() else {
            panic!("prox_newton's settings");
        };
        assert_eq!(c.penalty.group_ids(), Some(&[1, 0][..]));
        for other in ["analytic", "spicy", "prox_newton"] {
            let err = Settings::default_of(other)
                .unwrap()
                .with_groups(vec![0])
                .unwrap_err();
            assert!(err.to_string().contains("groups"), "{other}: {err}");
        }
        let one_class = Settings::default_of("one_class").unwrap();
        assert!(one_class.for_solver("analytic", false).is_err());
    }

    /// A start the solver does not take is refused, naming the argument.
    #[test]
    fn a_start_for_another_solver_is_refused() {
        let (n, m) = (20, 2);
        let (g, _, y) = problem(n, m);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let start = Start::Spicy(SpicyStart {
            coef: vec![0.0; m * n],
            intercept: 0.0,
            dual: None,
        });
        let lp = Settings::default_of("analytic").unwrap();
        let err = fit(
            &lp,
            Data::Stack(&stack),
            &y,
            None,
            Some(&start),
            &NoInterrupt,
        );
        assert!(err.unwrap_err().to_string().contains("init_coef"));
    }
}
