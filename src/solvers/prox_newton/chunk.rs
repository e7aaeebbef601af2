//! [`Rows`] in memory ([`Chunks`]): row-major features (f64 or f32, [`RowFeatures`]) with
//! their targets, loss weights and per-row state, reduced by chunks of [`CHUNK`] rows in
//! parallel and combined in chunk order, so results do not depend on the number of threads. A
//! cluster's worker runs the same code on its array chunk (`chunk_reduce` in the binding).

use std::ops::Range;
use std::sync::RwLock;

use rayon::prelude::*;

use super::features::{gram_lower, CHUNK};
use super::rows::{Curvature, DualPoint, Op, Rows, Shift, Update};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::kernels::{Element, RowFeatures};
use crate::losses::Envelope;

/// The per-row state of a fit: the predictions `z` (without the intercept), the step's
/// `d = G_W δ`, and `z` at the best point.
#[derive(Debug, Clone, Default)]
pub struct RowState {
    pub z: Vec<f64>,
    pub d: Vec<f64>,
    pub best: Vec<f64>,
}

/// The rows of a fit in memory.
pub struct Chunks<'a, T> {
    x: &'a RowFeatures<'a, T>,
    y: &'a [f64],
    c: &'a [f64],
    state: RwLock<RowState>,
    /// The rows of the last dual point's `(μ, b)` ([`Kept`]); dropped when `z` changes.
    slopes: RwLock<Option<Kept>>,
}

/// `ℓ' = c ℓ_μ'(y, z + b)` of a dual point's `(μ, b)`, its candidate `v = clip(−ℓ')` and the
/// domain `[lo, hi]` per row: a certificate's passes (the centring's search, some fifty
/// passes, the gradient, the conjugates) read them instead of an `exp` per row each.
struct Kept {
    env: Envelope,
    b: f64,
    d1: Vec<f64>,
    v: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

/// A row's `ℓ'`, candidate and domain.
#[derive(Clone, Copy)]
struct Slope {
    d1: f64,
    v: f64,
    bd: (f64, f64),
}

/// `clip(v, lo, hi)`.
fn clip(v: f64, (lo, hi): (f64, f64)) -> f64 {
    v.max(lo).min(hi)
}

/// The domain `[lo, hi]` of `ρ̃_i ↦ ℓ*(y_i, −ρ̃_i/c_i)` ([`crate::losses::Loss::centre_dual`]).
fn bounds(env: Envelope, y: f64, c: f64) -> (f64, f64) {
    let (lo_u, hi_u) = env.loss.conjugate_domain(y);
    (-c * hi_u, -c * lo_u)
}

/// A row's `ℓ' = c ℓ_μ'(y, z + b)`, natural candidate `clip(−ℓ')` and domain.
fn slope(env: Envelope, b: f64, y: f64, c: f64, z: f64) -> Slope {
    let d1 = c * env.deriv(y, z + b);
    let bd = bounds(env, y, c);
    Slope {
        d1,
        v: clip(-d1, bd),
        bd,
    }
}

/// `ρ̃_i` of `dual` from the row's [`Slope`].
fn dual_entry(dual: &DualPoint, s: Slope) -> f64 {
    let (v, bd) = (s.v, s.bd);
    match dual.shift {
        Shift::Mean(m) => v - m,
        Shift::Clipped { tau, shift } => {
            let r = clip(v - tau, bd);
            if r > bd.0 && r < bd.1 {
                clip(r - shift, bd)
            } else {
                r
            }
        }
    }
}

impl<'a, T: Element> Chunks<'a, T> {
    /// The rows `x` with targets `y`, loss weights `c` and predictions `z = 0`.
    pub fn new(x: &'a RowFeatures<'a, T>, y: &'a [f64], c: &'a [f64]) -> Self {
        Chunks::with_state(x, y, c, RowState::default())
    }

    /// The rows with a given state (a worker's chunk); empty vectors read as zeros.
    pub fn with_state(x: &'a RowFeatures<'a, T>, y: &'a [f64], c: &'a [f64], st: RowState) -> Self {
        let n = x.n();
        let fill = |v: Vec<f64>| if v.len() == n { v } else { vec![0.0; n] };
        let state = RowState {
            z: fill(st.z),
            d: fill(st.d),
            best: st.best,
        };
        Chunks {
            x,
            y,
            c,
            state: RwLock::new(state),
            slopes: RwLock::new(None),
        }
    }

    /// A copy of the state.
    pub fn state(&self) -> RowState {
        self.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn ranges(&self) -> Vec<Range<usize>> {
        let n = self.x.n();
        (0..n.div_ceil(CHUNK))
            .map(|ch| ch * CHUNK..(ch * CHUNK + CHUNK).min(n))
            .collect()
    }

    /// `G_W v` on every row.
    fn product(&self, cols: &[usize], v: &[f64], out: &mut [f64]) {
        let moved: Vec<(usize, f64)> = cols
            .iter()
            .zip(v)
            .filter(|(_, &d)| d != 0.0)
            .map(|(&j, &d)| (j, d))
            .collect();
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(ch, chunk)| {
                for (t, o) in chunk.iter_mut().enumerate() {
                    let row = self.x.row(ch * CHUNK + t);
                    *o = moved.iter().map(|&(j, d)| d * row[j].to_f64()).sum();
                }
            });
    }

    /// The [`Kept`] rows of `(env, b)`.
    fn keep_slopes(&self, st: &RowState, env: Envelope, b: f64) {
        let mut kept = self.slopes.write().unwrap_or_else(|e| e.into_inner());
        if matches!(&*kept, Some(k) if k.env == env && k.b.to_bits() == b.to_bits()) {
            return;
        }
        let (y, c) = (self.y, self.c);
        let rows: Vec<Slope> = (0..st.z.len())
            .into_par_iter()
            .with_min_len(CHUNK)
            .map(|i| slope(env, b, y[i], c[i], st.z[i]))
            .collect();
        *kept = Some(Kept {
            env,
            b,
            d1: rows.iter().map(|s| s.d1).collect(),
            v: rows.iter().map(|s| s.v).collect(),
            lo: rows.iter().map(|s| s.bd.0).collect(),
            hi: rows.iter().map(|s| s.bd.1).collect(),
        });
    }

    /// One chunk's part of a certificate's `op` (the dual point's: [`Op::Centre`] to
    /// [`Op::Conjugate`]), from the [`Kept`] rows of its dual point.
    fn dual_part(&self, op: &Op, st: &RowState, kept: Option<&Kept>, r: Range<usize>) -> Vec<f64> {
        let (x, y, c, z) = (self.x, self.y, self.c, &st.z);
        let width = x.width();
        let k = kept.expect("the rows of the op's dual point are kept");
        let row = |i: usize| Slope {
            d1: k.d1[i],
            v: k.v[i],
            bd: (k.lo[i], k.hi[i]),
        };
        match op {
            Op::Centre { env, b } => {
                let mut out = [0.0, f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0, 0.0];
                for i in r {
                    out[5] += c[i] * env.value(y[i], z[i] + b);
                    let Slope {
                        v, bd: (lo, hi), ..
                    } = row(i);
                    out[0] += v;
                    out[1] = out[1].min(v - lo);
                    out[2] = out[2].max(v - hi);
                    out[3] = out[3].max(v.abs());
                    out[4] = out[4].max(c[i]);
                }
                out.to_vec()
            }
            Op::CentreTau { taus, .. } => {
                let mut out = vec![0.0; taus.len()];
                for i in r {
                    let Slope { v, bd, .. } = row(i);
                    out.iter_mut()
                        .zip(taus)
                        .for_each(|(o, tau)| *o += clip(v - tau, bd));
                }
                out
            }
            Op::CentreFree { tau, .. } => {
                let mut out = [0.0, 0.0];
                for i in r {
                    let Slope { v, bd, .. } = row(i);
                    let ri = clip(v - tau, bd);
                    out[0] += ri;
                    if ri > bd.0 && ri < bd.1 {
                        out[1] += 1.0;
                    }
                }
                out.to_vec()
            }
            Op::Gradient { dual } => {
                // `[Gᵀℓ', Gᵀρ̃, Σℓ']`.
                let mut acc = vec![0.0; 2 * width + 1];
                let (grad, rest) = acc.split_at_mut(width);
                let (u, total) = rest.split_at_mut(width);
                for i in r {
                    let s = row(i);
                    let rho = dual_entry(dual, s);
                    let xi = x.row(i);
                    for (v, a) in [(s.d1, &mut *grad), (rho, &mut *u)] {
                        if v != 0.0 {
                            a.iter_mut()
                                .zip(xi)
                                .for_each(|(s, xj)| *s += v * xj.to_f64());
                        }
                    }
                    total[0] += s.d1;
                }
                acc
            }
            Op::Conjugate { dual, conj, ts } => {
                let mut out = vec![0.0; ts.len()];
                for i in r {
                    let rho = dual_entry(dual, row(i));
                    out.iter_mut()
                        .zip(ts)
                        .for_each(|(o, t)| *o += c[i] * conj.conjugate(y[i], -t * rho / c[i]));
                }
                out
            }
            _ => unreachable!("not a certificate's operation"),
        }
    }

    /// One chunk's part of `op` (`kept`: the [`Kept`] rows of the op's dual point, when it
    /// has one).
    fn part(&self, op: &Op, st: &RowState, kept: Option<&Kept>, r: Range<usize>) -> Vec<f64> {
        let (x, y, c, z, d) = (self.x, self.y, self.c, &st.z, &st.d);
        let width = x.width();
        match op {
            Op::Loss { env, bs, step } => bs
                .iter()
                .map(|&b| match step {
                    None => r.clone().map(|i| c[i] * env.value(y[i], z[i] + b)).sum(),
                    Some((t, db)) => {
                        let bt = b + t * db;
                        r.clone()
                            .map(|i| c[i] * env.value(y[i], (z[i] + t * d[i]) + bt))
                            .sum()
                    }
                })
                .collect(),
            Op::Slope { env, b, t, db } => vec![r
                .map(|i| {
                    let zi = z[i] + t * d[i] + b + t * db;
                    c[i] * env.deriv(y[i], zi) * (d[i] + db)
                })
                .sum()],
            Op::InterceptSlope { env, bs } => bs
                .iter()
                .map(|&b| r.clone().map(|i| c[i] * env.deriv(y[i], z[i] + b)).sum())
                .collect(),
            Op::Hessian { env, b, cols, zone } => {
                let k = cols.len() + 1;
                let (rows, sq): (Vec<usize>, Vec<f64>) = r
                    .map(|i| (i, c[i] * env.deriv2(y[i], z[i] + b)))
                    .filter(|&(_, h)| !zone || h > 0.0)
                    .map(|(i, h)| (i, h.max(0.0).sqrt()))
                    .unzip();
                if rows.is_empty() {
                    return vec![0.0; k * k];
                }
                let nr = rows.len();
                let mut zs = vec![0.0; nr * k];
                for (t, (&i, &s)) in rows.iter().zip(&sq).enumerate() {
                    let row = x.row(i);
                    for (cc, &j) in cols.iter().enumerate() {
                        zs[cc * nr + t] = row[j].to_f64() * s;
                    }
                    zs[cols.len() * nr + t] = s;
                }
                gram_lower(&zs, nr, k)
            }
            Op::Squares { weight } => {
                let mut acc = vec![0.0; width];
                for i in r {
                    let h = match weight {
                        Curvature::Cost => c[i],
                        Curvature::Zone { mu } => c[i] / mu,
                        Curvature::Second { env, b } => c[i] * env.deriv2(y[i], z[i] + b).max(1e-3),
                    };
                    acc.iter_mut()
                        .zip(x.row(i))
                        .for_each(|(a, xj)| *a += h * xj.to_f64() * xj.to_f64());
                }
                acc
            }
            Op::Moments => {
                let len = r.len() as f64;
                vec![y[r.clone()].iter().sum(), len, c[r].iter().sum()]
            }
            Op::AbsDev { mean } => vec![y[r].iter().map(|v| (v - mean).abs()).sum()],
            _ => self.dual_part(op, st, kept, r),
        }
    }
}

impl<T: Element> Rows for Chunks<'_, T> {
    fn n(&self) -> usize {
        self.x.n()
    }

    fn offsets(&self) -> &[usize] {
        self.x.offsets()
    }

    fn reduce(&self, op: &Op, interrupt: &dyn Interrupt) -> Result<Vec<f64>> {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        let dual = match op {
            Op::Centre { env, b }
            | Op::CentreTau { env, b, .. }
            | Op::CentreFree { env, b, .. } => Some((*env, *b)),
            Op::Gradient { dual } | Op::Conjugate { dual, .. } => Some((dual.env, dual.b)),
            _ => None,
        };
        if let Some((env, b)) = dual {
            self.keep_slopes(&st, env, b);
        }
        let kept = self.slopes.read().unwrap_or_else(|e| e.into_inner());
        let kept = kept.as_ref().filter(|_| dual.is_some());
        let ranges = self.ranges();
        let reads_features = matches!(
            op,
            Op::Gradient { .. } | Op::Hessian { .. } | Op::Squares { .. }
        );
        // Chunks per batch: up to 16, fewer for wide Hessians, whose parts are `k²` each
        // (benches/peers/results/fit_memory.md); the other parts are at most `2R + 1`.
        let batch = match op {
            Op::Hessian { cols, .. } => {
                let k = cols.len() + 1;
                ((1usize << 23) / (k * k)).clamp(2, 16)
            }
            _ => ranges.len().max(1),
        };
        let mut acc = Vec::new();
        for group in ranges.chunks(batch) {
            interrupt.check()?;
            // Passes over `z` alone are short: fewer, longer rayon jobs for them.
            let grain = if reads_features { 1 } else { 8 };
            let parts: Vec<Vec<f64>> = group
                .par_iter()
                .with_min_len(grain)
                .map(|r| self.part(op, &st, kept, r.clone()))
                .collect();
            for p in parts {
                op.combine(&mut acc, &p);
            }
        }
        Ok(acc)
    }

    fn update(&self, op: &Update) -> Result<()> {
        if matches!(op, Update::Point { .. } | Update::Accept { .. }) {
            *self.slopes.write().unwrap_or_else(|e| e.into_inner()) = None;
        }
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let st = &mut *st;
        match op {
            Update::Point { cols, vals } => self.product(cols, vals, &mut st.z),
            Update::Direction { cols, delta } => self.product(cols, delta, &mut st.d),
            Update::Accept { t } => {
                st.z.par_chunks_mut(CHUNK)
                    .zip(st.d.par_chunks(CHUNK))
                    .for_each(|(zc, dc)| zc.iter_mut().zip(dc).for_each(|(z, d)| *z += t * d))
            }
            Update::KeepBest => st.best.clone_from(&st.z),
        }
        Ok(())
    }

    fn best_dual_rows(&self, dual: &DualPoint) -> Option<Vec<f64>> {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        let (y, c, (env, b)) = (self.y, self.c, (dual.env, dual.b));
        Some(
            (0..st.best.len())
                .map(|i| dual_entry(dual, slope(env, b, y[i], c[i], st.best[i])))
                .collect(),
        )
    }
}
