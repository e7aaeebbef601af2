//! The solvers, and the engine's one entry over them.
//!
//! Each solver is a folder here and touches kernels only through
//! [`crate::kernels::KernelStack`]. [`fit`] runs the solver that [`Settings`] names on [`Data`] (a
//! kernel stack, or explicit feature rows), continued by SpicyMKL where the settings say so.
//! [`Settings`] is the typed union of the solvers' configurations; what each solver fits is
//! stated once, by [`capabilities`]. The Python binding converts types to and from these and
//! holds no dispatch of its own. A new solver is its folder, its `pub mod` line below and its
//! variant of [`Settings`] with their arms, all in this file (docs/reference.md, "Adding a
//! solver").
//!
//! ```
//! use multikernel::{fit, Data, Settings};
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

pub(crate) mod common;
pub mod continued;
mod driver;
pub mod lp;
pub mod mirror;
pub mod path;
mod points;
pub mod prox_newton;
mod schedule;
pub mod shared;
pub mod single;
pub mod smo;
pub mod spicy;
pub mod svrg;
#[cfg(test)]
pub(crate) mod test_util;
mod tracker;
pub mod witness;
pub mod wrapper;

use crate::error::{MkError, Result};
use crate::fields::{Fields, Visitor};
use crate::interrupt::Interrupt;
use crate::kernels::{Element, KernelStack, RowFeatures, SparseRowFeatures};
use crate::losses::Loss;
use crate::penalties::{BlockPenalty, GroupPenalty, Groups, SparsePenalty};
use crate::result::FitResult;
use continued::fit_wrapper_continued;
use lp::{fit_lp_weighted, fit_one_class_weighted, LpAlgorithm, LpConfig, OneClassConfig};
use mirror::{fit_group_weighted, MirrorConfig};
#[cfg(doc)]
use path::fit_path_weighted;
use path::PathConfig;
use prox_newton::{fit_prox_newton_rows, fit_prox_newton_weighted, FeatureStart, ProxNewtonConfig};
use spicy::{fit_spicy_weighted, SpicyConfig, SpicyStart};
use svrg::{fit_svrg_weighted, SvrgConfig};
use wrapper::{fit_wrapper_weighted, WrapperConfig};

/// The settings of one solver: its settings struct, with the group ids of `mirror`.
#[derive(Debug, Clone, PartialEq)]
pub enum Settings {
    /// `analytic` or `interleaved` (the struct's `algorithm`).
    Lp(LpConfig),
    Spicy(SpicyConfig),
    /// With whether SpicyMKL continues a fit that stops above `tol` (`solver="auto"`'s
    /// choice, [`continued`]).
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
            common::validate_targets(s.n(), y)?;
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
mod tests;
