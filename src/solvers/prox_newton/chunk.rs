//! [`Rows`] in memory ([`Chunks`]): feature rows (dense f64 or f32, or sparse: any
//! [`RowRead`]) with their targets, loss weights and per-row state, reduced by chunks of [`CHUNK`] rows in
//! parallel and combined in chunk order, so results do not depend on the number of threads. A
//! cluster's worker runs the same code on its array chunk (`chunk_run` in the binding), its
//! state kept between tasks ([`Memo`]).

use std::ops::Range;
use std::sync::RwLock;

use rayon::prelude::*;

use super::features::CHUNK;
use super::read::RowRead;
use super::rows::{Curvature, DualPoint, Op, Rows, Shift, Update};
use crate::error::Result;
use crate::interrupt::Interrupt;
use crate::losses::Envelope;

/// The per-row state of a fit: the predictions `z` (without the intercept), the step's
/// `d = G_W δ`, and `z` at the best point.
#[derive(Debug, Clone, Default)]
struct RowState {
    z: Vec<f64>,
    d: Vec<f64>,
    best: Vec<f64>,
}

/// Rows below which a search's pass over them runs on one thread ([`Rows::reduce`]).
const SERIAL_SEARCH_BELOW: usize = 1 << 20;

/// The rows of a fit in memory.
pub struct Chunks<'a, X: ?Sized> {
    x: &'a X,
    y: &'a [f64],
    c: &'a [f64],
    state: RwLock<RowState>,
    /// The rows of the last dual point's `(μ, b)` ([`Kept`]); dropped when `z` changes.
    slopes: RwLock<Option<Kept>>,
}

/// What a chunk keeps between a cluster's tasks (`ChunkMemo` in the binding): its state and
/// its `Kept` rows, so that a pass over `z` alone costs what it costs in memory.
#[derive(Default)]
pub struct Memo {
    state: RowState,
    slopes: Option<Kept>,
}

/// `ℓ' = c ℓ_μ'(y, z + b)` of a dual point's `(μ, b)`, its candidate `v = clip(−ℓ')` and the
/// domain `[lo, hi]` per row: a certificate's passes (the centring's search, some fifty
/// passes, the gradient, the conjugates) read them instead of an `exp` per row each. The
/// centred point's rows `ρ̃` are a few comparisons from these, made where a pass reads them
/// (the gradient's, the conjugates'): kept, they would be `8n` more bytes on a cluster's
/// worker, beside its features.
struct Kept {
    env: Envelope,
    b: f64,
    d1: Vec<f64>,
    v: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl Kept {
    /// Row `i`'s [`Slope`].
    fn row(&self, i: usize) -> Slope {
        Slope {
            v: self.v[i],
            bd: (self.lo[i], self.hi[i]),
        }
    }
}

/// A vector `v` on the columns `cols` as [`RowRead::dot`] reads it: its nonzeros (column,
/// value), and by column (`R` entries).
struct Moved {
    list: Vec<(usize, f64)>,
    dense: Vec<f64>,
}

impl Moved {
    fn new(cols: &[usize], v: &[f64], width: usize) -> Self {
        let list: Vec<(usize, f64)> = cols
            .iter()
            .zip(v)
            .filter(|(_, &d)| d != 0.0)
            .map(|(&j, &d)| (j, d))
            .collect();
        let mut dense = vec![0.0; width];
        list.iter().for_each(|&(j, d)| dense[j] += d);
        Moved { list, dense }
    }
}

/// A row's candidate and domain.
#[derive(Clone, Copy)]
struct Slope {
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

/// A row's natural candidate `clip(−ℓ')`, `ℓ' = c ℓ_μ'(y, z + b)`, and domain.
fn slope(env: Envelope, b: f64, y: f64, c: f64, z: f64) -> Slope {
    let d1 = c * env.deriv(y, z + b);
    let bd = bounds(env, y, c);
    Slope {
        v: clip(-d1, bd),
        bd,
    }
}

/// The rows `r` of `dual`'s `ρ̃` from the [`Kept`] rows of its `(μ, b)`.
fn dual_rows(dual: &DualPoint, k: &Kept, r: Range<usize>) -> Vec<f64> {
    r.map(|i| dual_entry(dual, k.row(i))).collect()
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

impl<'a, X: RowRead + ?Sized> Chunks<'a, X> {
    /// The rows `x` with targets `y`, loss weights `c` and predictions `z = 0`.
    pub fn new(x: &'a X, y: &'a [f64], c: &'a [f64]) -> Self {
        Chunks::with_memo(x, y, c, Memo::default())
    }

    /// The rows with what a task before kept ([`Memo`]; the default: `z = 0`); vectors of
    /// another length read as zeros.
    pub fn with_memo(x: &'a X, y: &'a [f64], c: &'a [f64], memo: Memo) -> Self {
        let n = x.n();
        let fill = |v: Vec<f64>| if v.len() == n { v } else { vec![0.0; n] };
        let st = memo.state;
        let state = RowState {
            z: fill(st.z),
            d: fill(st.d),
            best: st.best,
        };
        let slopes = memo.slopes.filter(|k| k.v.len() == n);
        Chunks {
            x,
            y,
            c,
            state: RwLock::new(state),
            slopes: RwLock::new(slopes),
        }
    }

    /// What the next task on these rows starts from.
    pub fn into_memo(self) -> Memo {
        Memo {
            state: self.state.into_inner().unwrap_or_else(|e| e.into_inner()),
            slopes: self.slopes.into_inner().unwrap_or_else(|e| e.into_inner()),
        }
    }

    fn ranges(&self) -> Vec<Range<usize>> {
        let n = self.x.n();
        (0..n.div_ceil(CHUNK))
            .map(|ch| ch * CHUNK..(ch * CHUNK + CHUNK).min(n))
            .collect()
    }

    /// `G_W v` on every row.
    fn product(&self, cols: &[usize], v: &[f64], out: &mut [f64]) {
        let mv = Moved::new(cols, v, self.x.width());
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(ch, chunk)| {
                for (t, o) in chunk.iter_mut().enumerate() {
                    *o = self.x.dot(ch * CHUNK + t, &mv.list, &mv.dense);
                }
            });
    }

    /// The [`Kept`] rows of `(env, b)`.
    fn keep_slopes(&self, st: &RowState, env: Envelope, b: f64) {
        let mut kept = self.slopes.write().unwrap_or_else(|e| e.into_inner());
        if !matches!(&*kept, Some(k) if k.env == env && k.b.to_bits() == b.to_bits()) {
            *kept = Some(self.slopes_of(st, env, b, kept.take()));
        }
    }

    /// The [`Kept`] rows of `(env, b)` at `z`, in the vectors of `old` when it has them (the
    /// last certificate's: a certificate allocates nothing), its domains kept when its loss
    /// is the same (they do not depend on `z`).
    fn slopes_of(&self, st: &RowState, env: Envelope, b: f64, old: Option<Kept>) -> Kept {
        let (y, c, n) = (self.y, self.c, st.z.len());
        let mut k = match old {
            Some(k) if k.v.len() == n && k.env.loss == env.loss => k,
            _ => {
                let (lo, hi) = (0..n)
                    .into_par_iter()
                    .with_min_len(CHUNK)
                    .map(|i| bounds(env, y[i], c[i]))
                    .unzip();
                Kept {
                    env,
                    b,
                    d1: vec![0.0; n],
                    v: vec![0.0; n],
                    lo,
                    hi,
                }
            }
        };
        let Kept { d1, v, lo, hi, .. } = &mut k;
        d1.par_chunks_mut(CHUNK)
            .zip(v.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(ch, (d1c, vc))| {
                for (t, (d, vv)) in d1c.iter_mut().zip(vc.iter_mut()).enumerate() {
                    let i = ch * CHUNK + t;
                    *d = c[i] * env.deriv(y[i], st.z[i] + b);
                    *vv = clip(-*d, (lo[i], hi[i]));
                }
            });
        (k.env, k.b) = (env, b);
        k
    }

    /// One chunk's part of [`Op::Gradient`] at the dual point `dual`: `[Gᵀℓ', Gᵀρ̃, Σℓ']`.
    fn gradient_part(&self, dual: &DualPoint, k: &Kept, r: Range<usize>) -> Vec<f64> {
        let (x, width) = (self.x, self.x.width());
        let d1 = &k.d1[r.clone()];
        // `[Gᵀℓ', Gᵀρ̃, Σℓ']`.
        let rho = dual_rows(dual, k, r.clone());
        let mut acc = vec![0.0; 2 * width + 1];
        let (grad, rest) = acc.split_at_mut(width);
        let (u, total) = rest.split_at_mut(width);
        for (t, i) in r.enumerate() {
            for (v, a) in [(d1[t], &mut *grad), (rho[t], &mut *u)] {
                if v != 0.0 {
                    x.add_row(i, v, a);
                }
            }
            total[0] += d1[t];
        }
        acc
    }

    /// One chunk's part of a certificate's `op` (the dual point's: [`Op::Centre`] to
    /// [`Op::Conjugate`]), from the [`Kept`] rows of its dual point: loops over slices, the
    /// points of a search outside (a pass reads three vectors per point, no `exp`).
    fn dual_part(&self, op: &Op, st: &RowState, kept: Option<&Kept>, r: Range<usize>) -> Vec<f64> {
        let (y, c, z) = (&self.y[r.clone()], &self.c[r.clone()], &st.z[r.clone()]);
        let k = kept.expect("the rows of the op's dual point are kept");
        let (v, lo, hi) = (&k.v[r.clone()], &k.lo[r.clone()], &k.hi[r.clone()]);
        let rows = || {
            v.iter()
                .zip(lo)
                .zip(hi)
                .map(|((&v, &lo), &hi)| (v, (lo, hi)))
        };
        match op {
            Op::Centre { env, b } => {
                let mut out = [0.0, f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0, 0.0];
                out[5] = (0..z.len()).map(|i| c[i] * env.value(y[i], z[i] + b)).sum();
                for (v, (lo, hi)) in rows() {
                    out[0] += v;
                    out[1] = out[1].min(v - lo);
                    out[2] = out[2].max(v - hi);
                    out[3] = out[3].max(v.abs());
                }
                out[4] = c.iter().copied().fold(0.0, f64::max);
                out.to_vec()
            }
            Op::CentreTau { taus, .. } => taus
                .iter()
                .map(|tau| rows().map(|(v, bd)| clip(v - tau, bd)).sum())
                .collect(),
            Op::CentreFree { tau, .. } => {
                let mut out = [0.0, 0.0];
                for (v, bd) in rows() {
                    let ri = clip(v - tau, bd);
                    out[0] += ri;
                    if ri > bd.0 && ri < bd.1 {
                        out[1] += 1.0;
                    }
                }
                out.to_vec()
            }
            Op::Gradient { dual } => self.gradient_part(dual, k, r),
            Op::Conjugate { dual, conj, ts } => {
                let rho = dual_rows(dual, k, r);
                ts.iter()
                    .map(|t| {
                        (0..rho.len())
                            .map(|i| c[i] * conj.conjugate(y[i], -t * rho[i] / c[i]))
                            .sum()
                    })
                    .collect()
            }
            _ => unreachable!("not a certificate's operation"),
        }
    }

    /// One chunk's part of [`Op::Hessian`]: the lower triangle of `ZᵀZ`, `Z` the columns
    /// `cols` and the intercept's of the rows scaled by `sqrt(C ℓ'')` (in the zone, only the
    /// rows where it is positive).
    fn hessian_part(&self, op: &Op, st: &RowState, r: Range<usize>) -> Vec<f64> {
        let Op::Hessian { env, b, cols, zone } = op else {
            unreachable!("a Hessian's operation")
        };
        let (x, y, c, z) = (self.x, self.y, self.c, &st.z);
        let k = cols.len() + 1;
        let (rows, sq): (Vec<usize>, Vec<f64>) = r
            .map(|i| (i, c[i] * env.deriv2(y[i], z[i] + b)))
            .filter(|&(_, h)| !zone || h > 0.0)
            .map(|(i, h)| (i, h.max(0.0).sqrt()))
            .unzip();
        if rows.is_empty() {
            return vec![0.0; k * k];
        }
        x.weighted_gram(&rows, &sq, cols)
    }

    /// One chunk's part of [`Op::HessianProduct`]: `Σ_i h_i (x_{i,W}ᵀ v_W + v_b) [x_{i,W}, 1]`
    /// with `h_i = c_i ℓ_μ''(y_i, z_i + b)`, two reads of each row (a sparse row's stored
    /// entries), `k` numbers returned where [`Op::Hessian`]'s part is `k²`.
    fn product_part(&self, op: &Op, st: &RowState, mv: &Moved, r: Range<usize>) -> Vec<f64> {
        let Op::HessianProduct { env, b, cols, v } = op else {
            unreachable!("a Hessian product's operation")
        };
        let (x, y, c, z) = (self.x, self.y, self.c, &st.z);
        let k = cols.len() + 1;
        let mut acc = vec![0.0; x.width()];
        let mut total = 0.0;
        for i in r {
            let h = (c[i] * env.deriv2(y[i], z[i] + b)).max(0.0);
            if h == 0.0 {
                continue;
            }
            let s = h * (x.dot(i, &mv.list, &mv.dense) + v[k - 1]);
            if s != 0.0 {
                x.add_row(i, s, &mut acc);
                total += s;
            }
        }
        let mut out: Vec<f64> = cols.iter().map(|&j| acc[j]).collect();
        out.push(total);
        out
    }

    /// One chunk's part of the loss's value ([`Op::Loss`]) or slopes ([`Op::Slope`],
    /// [`Op::InterceptSlope`]).
    fn loss_part(&self, op: &Op, st: &RowState, r: Range<usize>) -> Vec<f64> {
        let (y, c, z, d) = (self.y, self.c, &st.z, &st.d);
        match op {
            Op::Loss { env, bs, step } => {
                let (y, c, z, d) = (&y[r.clone()], &c[r.clone()], &z[r.clone()], &d[r.clone()]);
                let rows = || y.iter().zip(c).zip(z);
                bs.iter()
                    .map(|&b| match step {
                        None => rows().map(|((&y, &c), &z)| c * env.value(y, z + b)).sum(),
                        Some((t, db)) => {
                            let bt = b + t * db;
                            rows()
                                .zip(d)
                                .map(|(((&y, &c), &z), &d)| c * env.value(y, (z + t * d) + bt))
                                .sum()
                        }
                    })
                    .collect()
            }
            Op::Slope { env, b, t, db } => {
                let (y, c, z, d) = (&y[r.clone()], &c[r.clone()], &z[r.clone()], &d[r]);
                vec![y
                    .iter()
                    .zip(c)
                    .zip(z)
                    .zip(d)
                    .map(|(((&y, &c), &z), &d)| c * env.deriv(y, z + t * d + b + t * db) * (d + db))
                    .sum()]
            }
            Op::InterceptSlope { env, bs } => {
                let (y, c, z) = (&y[r.clone()], &c[r.clone()], &z[r]);
                bs.iter()
                    .map(|&b| {
                        y.iter()
                            .zip(c)
                            .zip(z)
                            .map(|((&y, &c), &z)| c * env.deriv(y, z + b))
                            .sum()
                    })
                    .collect()
            }
            _ => unreachable!("a loss's operation"),
        }
    }

    /// One chunk's part of `op` (`kept`: the [`Kept`] rows of the op's dual point, when it
    /// has one; `mv`: a product's vector, when it is one).
    fn part(
        &self,
        op: &Op,
        st: &RowState,
        kept: Option<&Kept>,
        mv: Option<&Moved>,
        r: Range<usize>,
    ) -> Vec<f64> {
        let (x, y, c, z) = (self.x, self.y, self.c, &st.z);
        let width = x.width();
        match op {
            Op::Loss { .. } | Op::Slope { .. } | Op::InterceptSlope { .. } => {
                self.loss_part(op, st, r)
            }
            Op::Hessian { .. } => self.hessian_part(op, st, r),
            Op::HessianProduct { .. } => {
                self.product_part(op, st, mv.expect("a product's vector"), r)
            }
            Op::Squares { weight } => {
                let mut acc = vec![0.0; width];
                for i in r {
                    let h = match weight {
                        Curvature::Cost => c[i],
                        Curvature::Zone { mu } => c[i] / mu,
                        Curvature::Second { env, b } => c[i] * env.deriv2(y[i], z[i] + b).max(1e-3),
                    };
                    x.add_squares(i, h, &mut acc);
                }
                acc
            }
            Op::Moments => {
                let len = r.len() as f64;
                vec![y[r.clone()].iter().sum(), len, c[r].iter().sum()]
            }
            Op::AbsDev { mean } => vec![y[r].iter().map(|v| (v - mean).abs()).sum()],
            Op::LabelWeights => {
                let mut out = vec![0.0; 3];
                for (&y, &c) in y[r.clone()].iter().zip(&c[r]) {
                    let k = if y == 1.0 {
                        0
                    } else if y == -1.0 {
                        1
                    } else {
                        2
                    };
                    out[k] += if k == 2 { 1.0 } else { c };
                }
                out
            }
            _ => self.dual_part(op, st, kept, r),
        }
    }
}

impl<X: RowRead + ?Sized> Rows for Chunks<'_, X> {
    fn n(&self) -> usize {
        self.x.n()
    }

    fn offsets(&self) -> &[usize] {
        self.x.offsets()
    }

    fn sparse(&self) -> bool {
        self.x.sparse()
    }

    /// From a million rows, 15 (a pass's memory traffic outweighs the arithmetic of 15
    /// points, where bisection to the last bit takes a pass per bit).
    fn centre_points(&self) -> usize {
        if self.x.n() < SERIAL_SEARCH_BELOW {
            1
        } else {
            15
        }
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
        // A product's vector, laid out once for every chunk (`R` entries).
        let moved = match op {
            Op::HessianProduct { cols, v, .. } => Some(Moved::new(cols, v, self.x.width())),
            _ => None,
        };
        let ranges = self.ranges();
        let reads_features = matches!(
            op,
            Op::Gradient { .. }
                | Op::Hessian { .. }
                | Op::HessianProduct { .. }
                | Op::Squares { .. }
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
        // The searches' passes (the intercept's, the centring's: some sixty per search, a
        // few operations per row each) run on one thread up to a million rows: a parallel
        // pass's join costs as much as such a pass, and on a loaded machine a time slice.
        // Beyond, a pass is long enough to share (16 chunks per job).
        let serial = self.x.n() < SERIAL_SEARCH_BELOW
            && matches!(
                op,
                Op::InterceptSlope { .. } | Op::CentreTau { .. } | Op::CentreFree { .. }
            );
        let mut acc = Vec::new();
        for group in ranges.chunks(batch) {
            interrupt.check()?;
            // Passes over `z` alone are short: jobs of two chunks (the dual's passes' size),
            // small enough to balance the threads of a loaded machine.
            let grain = if serial {
                group.len()
            } else if reads_features {
                1
            } else if matches!(op, Op::CentreTau { .. } | Op::CentreFree { .. }) {
                16
            } else {
                2
            };
            let parts: Vec<Vec<f64>> = group
                .par_iter()
                .with_min_len(grain)
                .map(|r| self.part(op, &st, kept, moved.as_ref(), r.clone()))
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
