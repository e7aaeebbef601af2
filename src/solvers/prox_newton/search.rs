//! The step length along a Newton direction: Armijo's backtracking on `P` ([`line_search`]),
//! or the exact minimiser on a smoothed level ([`exact_step`]).

use super::certificate::{Point, Problem};
use super::rows::{Op, Update};
use super::working_set::{model_decrease, WorkingSet};
use crate::error::Result;
use crate::losses::Envelope;
use crate::penalties::BlockPenalty;

/// A step of the line search (the rows hold `G_W δ` for [`Update::Accept`]).
pub(super) struct Step {
    pub(super) t: f64,
    /// The model's decrease was below what `P` resolves.
    pub(super) flat: bool,
}

/// Stores `G_W δ` with the rows (one pass over the working set's columns).
fn direction(p: &Problem<'_>, ws: &WorkingSet, delta: &[f64]) -> Result<()> {
    let k = ws.cols.len();
    p.update(&Update::Direction {
        cols: ws.cols.clone(),
        delta: delta[..k].to_vec(),
    })
}

/// The step `t ∈ {1, ½, ¼, …}` along `(δ, δ_b)` with sufficient decrease of `P` (Armijo on
/// the model's decrease `gᵀδ + pen(w + δ) − pen(w)`), or `None` when none was found.
pub(super) fn line_search(
    p: &Problem<'_>,
    pen_level: &BlockPenalty,
    ws: &WorkingSet,
    w: &[f64],
    b: f64,
    pt: &Point,
    delta: &[f64],
) -> Result<Option<Step>> {
    let k = ws.cols.len();
    direction(p, ws, delta)?;
    let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
    let pen = |t: f64| ws.penalty_along(pen_level, &wl, delta, t);
    let pen0 = pen(0.0);
    let decrease = model_decrease(ws, pt, delta, ws.penalty_change(pen_level, &wl, delta));
    // A model that predicts no decrease beyond rounding: the point is as good as the
    // arithmetic allows (a `tol` below it is out of reach).
    // A decrease the values of `P` cannot resolve (rounding): the step is taken whole, as
    // near the optimum Newton's is, and the certificate judges it (the dual point keeps
    // improving with `w` after `P` has stopped changing visibly).
    let flat = decrease >= -1e-12 * pt.primal.abs();
    let mut t = 1.0;
    while t > 1e-10 {
        let env = p.cfg.loss.into();
        let (bs, step) = (vec![b], Some((t, delta[k])));
        let value = p.scalar(&Op::Loss { env, bs, step })? + (pt.primal - pt.data - pen0) + pen(t);
        if flat || value <= pt.primal + 1e-4 * t * decrease {
            return Ok(Some(Step { t, flat }));
        }
        t *= 0.5;
    }
    Ok(None)
}

/// The step along `(δ, δ_b)` of a smoothed level: the minimiser `t ∈ [0, 1]` of the smoothed
/// `P` (convex in `t`, piecewise quadratic for the hinge), by Illinois regula falsi on its
/// slope to `10⁻³` relative in `t`; `t = 1` when the slope there is still ≤ 0. One product
/// with the step's columns, then a pass over the rows per evaluation. An exact search, not Armijo's halving:
/// at small `μ` the smoothing zone moves with every step, and halving from `t = 1` loses most
/// of a step that crosses it.
#[allow(clippy::too_many_arguments)]
pub(super) fn exact_step(
    p: &Problem<'_>,
    env: Envelope,
    pen: &BlockPenalty,
    ws: &WorkingSet,
    w: &[f64],
    b: f64,
    pt: &Point,
    delta: &[f64],
) -> Result<Step> {
    let k = ws.cols.len();
    direction(p, ws, delta)?;
    let db = delta[k];
    let wl: Vec<f64> = ws.cols.iter().map(|&j| w[j]).collect();
    let slope = |t: f64| -> Result<f64> {
        Ok(p.scalar(&Op::Slope { env, b, t, db })? + ws.penalty_slope(pen, &wl, delta, t))
    };
    // As in [`line_search`]: a decrease `P` cannot resolve is taken whole.
    let change = ws.penalty_change(pen, &wl, delta);
    let flat = model_decrease(ws, pt, delta, change) >= -1e-12 * pt.primal.abs();
    let t = if flat { 1.0 } else { slope_root(slope)? };
    Ok(Step { t, flat })
}

/// The minimiser on `[0, 1]` of a convex function given by its non-decreasing `slope`: 1 when
/// `slope(1) ≤ 0`, 0 when `slope(0) ≥ 0`, else the root by Illinois regula falsi to `10⁻³`
/// relative, from the side where the slope is negative (no overshoot of the minimum).
fn slope_root(slope: impl Fn(f64) -> Result<f64>) -> Result<f64> {
    let (mut a, mut fa) = (0.0, slope(0.0)?);
    let (mut b, mut fb) = (1.0, slope(1.0)?);
    if fb <= 0.0 {
        return Ok(1.0);
    }
    if fa >= 0.0 {
        return Ok(0.0);
    }
    let mut side = 0;
    for _ in 0..60 {
        let m = (a * fb - b * fa) / (fb - fa);
        let fm = slope(m)?;
        if fm > 0.0 {
            (b, fb) = (m, fm);
            if side == -1 {
                fa *= 0.5;
            }
            side = -1;
        } else {
            (a, fa) = (m, fm);
            if side == 1 {
                fb *= 0.5;
            }
            side = 1;
        }
        if b - a <= 1e-3 * b {
            break;
        }
    }
    Ok(if a > 0.0 { a } else { b })
}
