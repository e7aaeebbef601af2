//! The working sets' whole-problem checks (step 3 of the module docs of `wrapper`).

use super::certificate::{Certificate, Point};
use super::WrapperConfig;
use crate::kernels::KernelStack;
use crate::solvers::points::{new_points, scatter_points};
use crate::solvers::schedule::CheckSchedule;
use crate::solvers::tracker::Tracker;
use crate::solvers::witness::PsdCheck;

/// At a stall of the iterated problem, whether the fit stalls: a restricted problem's stall
/// forces a whole-problem check instead (only it can tell why), once.
pub(super) fn stalls(restricted: bool, checks: &mut CheckSchedule) -> bool {
    if restricted && !checks.is_forced() {
        checks.force();
        false
    } else {
        true
    }
}

/// The whole-problem check of a restricted iterate at weights `w` (module docs): `f = K_w β`
/// on every point from the rows of the support vectors, the whole certificate recorded
/// (the forms `q` are the whole problem's, `β` being zero off the set `idx`). Returns the
/// relative gap, and the points outside the set that violate optimality, by the QP variables
/// `alpha` over all points and the whole model.
#[allow(clippy::too_many_arguments)]
pub(super) fn whole_check(
    stack: &dyn KernelStack,
    y: &[f64],
    c: &[f64],
    cfg: &WrapperConfig,
    psd: &PsdCheck,
    tracker: &mut Tracker,
    w: &[f64],
    q: &[f64],
    restricted: &Point,
    idx: &[usize],
    alpha: &[f64],
) -> (f64, Vec<usize>) {
    let n = y.len();
    let beta = scatter_points(&restricted.beta, idx, n);
    let mut f = vec![0.0; n];
    stack.combined_matvec(w, &beta, &mut f);
    let b = cfg.loss.best_intercept(y, &f, c, restricted.b);
    let z: Vec<f64> = f.iter().map(|fi| fi + b).collect();
    let point = Point {
        beta,
        f,
        b,
        value: f64::NAN,
    };
    let gap = Certificate::new(psd, cfg, y, c, w, q, &point).record(tracker, cfg, w, &point);
    (gap, new_points(cfg.loss, y, &z, alpha, idx))
}
