//! The seam between proximal Newton's steps and the rows (docs/mathematics.md §2.13,
//! docs/dask.md): every per-row vector of a fit — the predictions `z = Gw`, the step's `Gδ`,
//! the loss's derivatives, the dual point — lives where the rows are, and the steps see the
//! rows only through [`Rows`]: *reductions* ([`Op`]: given a few numbers, each chunk of rows
//! returns a small vector — a loss value, block gradients `Gᵀℓ'`, the working set's Hessian,
//! the certificate's sums — and the chunks' parts are combined in chunk order) and *updates*
//! of the per-row state ([`Update`]). In memory the chunks are those of `CHUNK` rows
//! ([`Chunks`](super::chunk::Chunks)); across a Dask cluster they are the array's chunks, each
//! reduced by the same engine code on its worker (`multikernel._dask_fit`), so that one loop,
//! this engine's, fits both.

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::losses::{Envelope, Loss};

/// The rows of a fit as the steps read them.
pub trait Rows: Sync {
    /// Points.
    fn n(&self) -> usize;
    /// `[0, D_0, D_0 + D_1, …, R]`: kernel `m` owns columns `offsets[m]..offsets[m + 1]`.
    fn offsets(&self) -> &[usize];
    /// The parts of every chunk for `op`, combined in chunk order ([`Op::combine`]);
    /// `interrupt` is polled between batches of chunks.
    fn reduce(&self, op: &Op, interrupt: &dyn Interrupt) -> Result<Vec<f64>>;
    /// Updates the per-row state of every chunk.
    fn update(&self, op: &Update) -> Result<()>;
    /// The rows of `dual` at the point kept by [`Update::KeepBest`] (the representer form's
    /// `ρ̃`), or `None` where they stay with the rows (a cluster: `n` values are not brought
    /// back).
    fn best_dual_rows(&self, dual: &DualPoint) -> Option<Vec<f64>>;

    /// Points per pass of the one-dimensional searches over the rows (the intercept, the
    /// dual point's shift): 1 (bisection) where a pass is cheap, more where it costs a round
    /// trip (a cluster), each pass then shrinking the bracket that many times + 1.
    fn search_points(&self) -> usize {
        1
    }

    /// Points per pass of the dual point's centring search, whose pass reads three numbers
    /// per row and point and computes no `exp`: [`Rows::search_points`], unless a pass over
    /// the rows costs more than its arithmetic (rows beyond the caches).
    fn centre_points(&self) -> usize {
        self.search_points()
    }

    /// Whether the rows store their nonzeros only (a cluster's rows: as its chunks are).
    fn sparse(&self) -> bool {
        false
    }

    /// Kernels.
    fn m(&self) -> usize {
        self.offsets().len() - 1
    }

    /// The total width `R`.
    fn width(&self) -> usize {
        self.offsets()[self.m()]
    }

    /// The columns of kernel `m`.
    fn block(&self, m: usize) -> std::ops::Range<usize> {
        self.offsets()[m]..self.offsets()[m + 1]
    }
}

/// How the natural dual candidate `v_i = clip(−c_i ℓ_μ'(y_i, z_i + b))` is centred to `Σ = 0`
/// inside the conjugate's domain ([`Loss::centre_dual`]'s two cases).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shift {
    /// `v_i − mean`, when that stays inside.
    Mean(f64),
    /// `r_i = clip(v_i − τ)`, then `clip(r_i − shift)` on the entries strictly inside.
    Clipped { tau: f64, shift: f64 },
}

/// A dual point `ρ̃` given by the numbers that make it from the rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DualPoint {
    /// The loss (or envelope) whose derivative gives the candidate; the domain is its loss's.
    pub env: Envelope,
    pub b: f64,
    pub shift: Shift,
}

/// The per-row weights of [`Op::Squares`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Curvature {
    /// `c_i`.
    Cost,
    /// `c_i / μ`: every point in a smoothing's zone.
    Zone { mu: f64 },
    /// `c_i max(ℓ''(y_i, z_i + b), 10⁻³)`.
    Second { env: Envelope, b: f64 },
}

/// A reduction over the rows (`z`: the predictions without the intercept; `d`: `G_W δ` of
/// the last [`Update::Direction`]; `c`: the per-sample loss weights).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// For each `b` of `bs`: `Σ c ℓ(y, z + b)`, or along the step,
    /// `Σ c ℓ(y, (z + t d) + (b + t δ_b))`.
    Loss {
        env: Envelope,
        bs: Vec<f64>,
        step: Option<(f64, f64)>,
    },
    /// The slope along the step, `Σ c ℓ'(y, z + t d + b + t δ_b) (d + δ_b)`.
    Slope {
        env: Envelope,
        b: f64,
        t: f64,
        db: f64,
    },
    /// For each `b` of `bs`: the intercept's slope `Σ c ℓ'(y, z + b)`.
    InterceptSlope { env: Envelope, bs: Vec<f64> },
    /// The candidate `v` of [`DualPoint`] and the loss: `[Σ v, min (v − lo), max (v − hi),
    /// max |v|, max c, Σ c ℓ_μ(y, z + b)]` (the certificate's first pass).
    Centre { env: Envelope, b: f64 },
    /// For each `τ` of `taus`: `Σ clip(v − τ)`.
    CentreTau {
        env: Envelope,
        b: f64,
        taus: Vec<f64>,
    },
    /// With `r = clip(v − τ)`: `[Σ r, #{lo < r < hi}]`.
    CentreFree { env: Envelope, b: f64, tau: f64 },
    /// `[Gᵀℓ' (R), Gᵀρ̃ (R), Σ ℓ']` with `ℓ' = c ℓ_μ'(y, z + b)` of the dual's envelope.
    Gradient { dual: DualPoint },
    /// For each `t` of `ts`: `Σ c ℓ_conj*(y, −t ρ̃/c)`.
    Conjugate {
        dual: DualPoint,
        conj: Envelope,
        ts: Vec<f64>,
    },
    /// `[G_W, 1]ᵀ diag(c ℓ_μ'') [G_W, 1]`, column-major, order `|cols| + 1` (`zone`: over the
    /// rows where the curvature is positive only).
    Hessian {
        env: Envelope,
        b: f64,
        cols: Vec<usize>,
        zone: bool,
    },
    /// `[G_W, 1]ᵀ diag(c ℓ_μ'') [G_W, 1] v`, order `|cols| + 1` (`v`: the columns' entries,
    /// then the intercept's): a product with [`Op::Hessian`]'s matrix, never formed.
    HessianProduct {
        env: Envelope,
        b: f64,
        cols: Vec<usize>,
        v: Vec<f64>,
    },
    /// Per column `Σ h x²` with the weights `h` of `weight`.
    Squares { weight: Curvature },
    /// `[Σ y, n, Σ c]`.
    Moments,
    /// `[Σ_{y=1} c, Σ_{y=−1} c, #{y ∉ {±1}}]`.
    LabelWeights,
    /// `[Σ |y − mean|]`.
    AbsDev { mean: f64 },
}

/// An update of the per-row state.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// `z = G_W w` (the start).
    Point { cols: Vec<usize>, vals: Vec<f64> },
    /// `d = G_W δ`.
    Direction { cols: Vec<usize>, delta: Vec<f64> },
    /// `z ← z + t d`.
    Accept { t: f64 },
    /// Keeps `z` as the best point's (for [`Rows::best_dual_rows`]).
    KeepBest,
}

impl Op {
    /// Adds a chunk's part into the running total `acc` (empty at first): sums, but
    /// [`Op::Centre`]'s extremes.
    pub fn combine(&self, acc: &mut Vec<f64>, part: &[f64]) {
        if acc.is_empty() {
            acc.extend_from_slice(part);
            return;
        }
        match self {
            Op::Centre { .. } => {
                acc[0] += part[0];
                acc[1] = acc[1].min(part[1]);
                acc[2] = acc[2].max(part[2]);
                acc[3] = acc[3].max(part[3]);
                acc[4] = acc[4].max(part[4]);
                acc[5] += part[5];
            }
            _ => acc.iter_mut().zip(part).for_each(|(a, p)| *a += p),
        }
    }

    /// The parts of the chunks combined in order ([`Op::combine`]).
    pub fn total(&self, parts: impl IntoIterator<Item = Vec<f64>>) -> Vec<f64> {
        let mut acc = Vec::new();
        for p in parts {
            self.combine(&mut acc, &p);
        }
        acc
    }
}

// The flat encodings of the operations, for the chunks on a cluster's workers.

fn put_env(out: &mut Vec<f64>, e: Envelope) {
    let (code, eps) = match e.loss {
        Loss::Hinge => (0.0, 0.0),
        Loss::SquaredHinge => (1.0, 0.0),
        Loss::Logistic => (2.0, 0.0),
        Loss::Squared => (3.0, 0.0),
        Loss::EpsilonInsensitive { epsilon } => (4.0, epsilon),
    };
    out.extend([code, eps, e.mu]);
}

fn put_dual(out: &mut Vec<f64>, d: &DualPoint) {
    put_env(out, d.env);
    out.push(d.b);
    match d.shift {
        Shift::Mean(m) => out.extend([0.0, m, 0.0]),
        Shift::Clipped { tau, shift } => out.extend([1.0, tau, shift]),
    }
}

/// Columns and values (either may be empty): their counts, then them.
fn put_cols(out: &mut Vec<f64>, cols: &[usize], vals: &[f64]) {
    out.extend([cols.len() as f64, vals.len() as f64]);
    out.extend(cols.iter().map(|&j| j as f64));
    out.extend_from_slice(vals);
}

/// Reads a flat encoding back.
struct Reader<'a>(&'a [f64]);

impl Reader<'_> {
    fn num(&mut self) -> Result<f64> {
        let (&v, rest) = self
            .0
            .split_first()
            .ok_or_else(|| MkError::config("op", "a truncated operation"))?;
        self.0 = rest;
        Ok(v)
    }

    fn index(&mut self) -> Result<usize> {
        let v = self.num()?;
        if v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(52) {
            Ok(v as usize)
        } else {
            Err(MkError::config("op", format!("{v} is not an index")))
        }
    }

    fn env(&mut self) -> Result<Envelope> {
        let (code, eps, mu) = (self.index()?, self.num()?, self.num()?);
        let loss = match code {
            0 => Loss::Hinge,
            1 => Loss::SquaredHinge,
            2 => Loss::Logistic,
            3 => Loss::Squared,
            4 => Loss::EpsilonInsensitive { epsilon: eps },
            _ => return Err(MkError::config("op", format!("no loss {code}"))),
        };
        Ok(Envelope { loss, mu })
    }

    fn dual(&mut self) -> Result<DualPoint> {
        let (env, b) = (self.env()?, self.num()?);
        let (kind, a, s) = (self.index()?, self.num()?, self.num()?);
        let shift = match kind {
            0 => Shift::Mean(a),
            _ => Shift::Clipped { tau: a, shift: s },
        };
        Ok(DualPoint { env, b, shift })
    }

    /// Columns and values ([`put_cols`]).
    fn cols(&mut self) -> Result<(Vec<usize>, Vec<f64>)> {
        let (k, v) = (self.index()?, self.index()?);
        let cols = (0..k).map(|_| self.index()).collect::<Result<_>>()?;
        let vals = (0..v).map(|_| self.num()).collect::<Result<_>>()?;
        Ok((cols, vals))
    }

    fn values(&mut self) -> Result<Vec<f64>> {
        Ok(self.cols()?.1)
    }
}

impl Op {
    /// A flat encoding ([`Op::decode`] reads it).
    pub fn encode(&self) -> Vec<f64> {
        let mut o = Vec::new();
        match self {
            Op::Loss { env, bs, step } => {
                o.push(0.0);
                put_env(&mut o, *env);
                let (flag, (t, db)) = step.map_or((0.0, (0.0, 0.0)), |s| (1.0, s));
                o.extend([flag, t, db]);
                put_cols(&mut o, &[], bs);
            }
            Op::Slope { env, b, t, db } => {
                o.push(1.0);
                put_env(&mut o, *env);
                o.extend([*b, *t, *db]);
            }
            Op::InterceptSlope { env, bs } => {
                o.push(2.0);
                put_env(&mut o, *env);
                put_cols(&mut o, &[], bs);
            }
            Op::Centre { env, b } => {
                o.push(3.0);
                put_env(&mut o, *env);
                o.push(*b);
            }
            Op::CentreTau { env, b, taus } => {
                o.push(4.0);
                put_env(&mut o, *env);
                o.push(*b);
                put_cols(&mut o, &[], taus);
            }
            Op::CentreFree { env, b, tau } => {
                o.push(5.0);
                put_env(&mut o, *env);
                o.extend([*b, *tau]);
            }
            Op::Gradient { dual } => {
                o.push(6.0);
                put_dual(&mut o, dual);
            }
            Op::Conjugate { dual, conj, ts } => {
                o.push(7.0);
                put_dual(&mut o, dual);
                put_env(&mut o, *conj);
                put_cols(&mut o, &[], ts);
            }
            Op::Hessian { env, b, cols, zone } => {
                o.push(8.0);
                put_env(&mut o, *env);
                o.extend([*b, f64::from(u8::from(*zone))]);
                put_cols(&mut o, cols, &[]);
            }
            Op::HessianProduct { env, b, cols, v } => {
                o.push(13.0);
                put_env(&mut o, *env);
                o.push(*b);
                put_cols(&mut o, cols, v);
            }
            Op::Squares { weight } => {
                o.push(9.0);
                match weight {
                    Curvature::Cost => o.extend([0.0, 0.0]),
                    Curvature::Zone { mu } => o.extend([1.0, *mu]),
                    Curvature::Second { env, b } => {
                        o.extend([2.0, *b]);
                        put_env(&mut o, *env);
                    }
                }
            }
            Op::Moments => o.push(10.0),
            Op::AbsDev { mean } => o.extend([11.0, *mean]),
            Op::LabelWeights => o.push(12.0),
        }
        o
    }

    /// The operation of a flat encoding ([`Op::encode`]).
    pub fn decode(code: &[f64]) -> Result<Op> {
        let mut r = Reader(code);
        Ok(match r.index()? {
            0 => {
                let (env, flag, t, db) = (r.env()?, r.num()?, r.num()?, r.num()?);
                let step = (flag != 0.0).then_some((t, db));
                Op::Loss {
                    env,
                    bs: r.values()?,
                    step,
                }
            }
            1 => {
                let (env, b, t, db) = (r.env()?, r.num()?, r.num()?, r.num()?);
                Op::Slope { env, b, t, db }
            }
            2 => Op::InterceptSlope {
                env: r.env()?,
                bs: r.values()?,
            },
            3 => Op::Centre {
                env: r.env()?,
                b: r.num()?,
            },
            4 => Op::CentreTau {
                env: r.env()?,
                b: r.num()?,
                taus: r.values()?,
            },
            5 => Op::CentreFree {
                env: r.env()?,
                b: r.num()?,
                tau: r.num()?,
            },
            6 => Op::Gradient { dual: r.dual()? },
            7 => Op::Conjugate {
                dual: r.dual()?,
                conj: r.env()?,
                ts: r.values()?,
            },
            8 => {
                let (env, b, zone) = (r.env()?, r.num()?, r.num()? != 0.0);
                let (cols, _) = r.cols()?;
                Op::Hessian { env, b, cols, zone }
            }
            9 => {
                let (kind, a) = (r.index()?, r.num()?);
                let weight = match kind {
                    0 => Curvature::Cost,
                    1 => Curvature::Zone { mu: a },
                    _ => Curvature::Second {
                        env: r.env()?,
                        b: a,
                    },
                };
                Op::Squares { weight }
            }
            10 => Op::Moments,
            11 => Op::AbsDev { mean: r.num()? },
            12 => Op::LabelWeights,
            13 => {
                let (env, b) = (r.env()?, r.num()?);
                let (cols, v) = r.cols()?;
                Op::HessianProduct { env, b, cols, v }
            }
            k => return Err(MkError::config("op", format!("no operation {k}"))),
        })
    }
}

impl Update {
    /// A flat encoding ([`Update::decode`] reads it).
    pub fn encode(&self) -> Vec<f64> {
        let mut o = Vec::new();
        match self {
            Update::Point { cols, vals } => {
                o.push(0.0);
                put_cols(&mut o, cols, vals);
            }
            Update::Direction { cols, delta } => {
                o.push(1.0);
                put_cols(&mut o, cols, delta);
            }
            Update::Accept { t } => o.extend([2.0, *t]),
            Update::KeepBest => o.push(3.0),
        }
        o
    }

    /// The update of a flat encoding ([`Update::encode`]).
    pub fn decode(code: &[f64]) -> Result<Update> {
        let mut r = Reader(code);
        Ok(match r.index()? {
            0 => {
                let (cols, vals) = r.cols()?;
                Update::Point { cols, vals }
            }
            1 => {
                let (cols, delta) = r.cols()?;
                Update::Direction { cols, delta }
            }
            2 => Update::Accept { t: r.num()? },
            3 => Update::KeepBest,
            k => return Err(MkError::config("update", format!("no update {k}"))),
        })
    }
}
