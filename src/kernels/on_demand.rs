//! Kernels computed from the points when a solver reads them: exact MKL on `n` points without
//! the `M` stored `n×n` matrices (`docs/performance.md`, "Beyond memory").
//!
//! An [`OnDemandStack`] holds the training points (one contiguous copy per distinct feature
//! subset), the kernel functions and the normalisation statistics, and evaluates entries
//! `K_m(x_i, x_j)` as the [`KernelStack`] methods ask for them. Every read is priced in kernel
//! evaluations: `vᵀK_m v` costs `|S|²/2` of them for the `|S|` non-zeros of `v` (the support
//! vectors of an SVM step), `K_m v` costs `n·|S|`, and one column of `K_θ = Σ θ_m K_m` (what an
//! SMO step reads, through the row cache of [`crate::solvers::smo::CachedColumns`]) costs `n`
//! per active kernel.
//!
//! Normalisations whose statistics come from the diagonal alone (`none`, `trace`,
//! `mean_diag`, `spherical`) are computed in one pass over the points; centring and the
//! multiplicative normalisation need every entry (row and total means) and are refused.

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::kernels::normalize::KernelStats;
use crate::kernels::pairwise::{term, PairSum};
use crate::kernels::sequence::SeqPairs;
use crate::kernels::simd::avx2_dispatch;
use crate::kernels::stack::{nonzeros, weighted};
use crate::kernels::{
    Element, KernelFn, KernelSpec, KernelStack, NormStats, Normalization, SeqColumn, SeqKernelFn,
};

/// A kernel of an on-demand stack: a specification on the numeric columns, or a sequence
/// kernel on a column of sequences (one per point).
pub enum OnDemandKernel {
    Spec(KernelSpec),
    Seq(SeqKernelFn, SeqColumn),
}

/// The points' columns read by one or more kernels, row-major `(N, d)`.
struct Block {
    x: Vec<f64>,
    /// The same values column-major `(d, N)`: a run of consecutive points then reads each
    /// feature contiguously, and the loop over the points vectorises.
    xt: Vec<f64>,
    d: usize,
    /// `Σ_k x_k` of each point (what the Tanimoto kernel's union reads).
    sums: Vec<f64>,
}

/// One kernel: its function, the block of columns it reads and its normalisation.
struct OnKernel {
    func: KernelFn,
    block: usize,
    /// A sequence kernel: its index in [`Shared::seqs`] (then `func` and `block` are unused).
    seq: Option<usize>,
    /// Factor after evaluation (1 for `none` and `spherical`).
    scale: f64,
}

/// What every view of one training set shares.
struct Shared {
    blocks: Vec<Block>,
    seqs: Vec<SeqPairs>,
    kernels: Vec<OnKernel>,
    /// `(M, N)`: `1/sqrt(k_m(x_i, x_i))` for the spherical normalisation (0 for a point at
    /// the origin of feature space, whose row is 0), empty otherwise.
    inv_sqrt_diag: Vec<f64>,
    /// `(M, N)`: the normalised diagonals.
    diag: Vec<f64>,
    stats: NormStats,
    n_total: usize,
}

/// `M` kernels on `n` points, evaluated when read (see the module docs). A view of a subset
/// of the points ([`OnDemandStack::subset`]) shares the data and the statistics.
pub struct OnDemandStack {
    shared: Arc<Shared>,
    /// The training indices of this view's points, in local order.
    rows: Arc<Vec<usize>>,
    /// The bytes a solver may spend on cached kernel values for this stack.
    cache_bytes: usize,
    /// Whether `rows` is `0..N` in order (the training stack itself).
    identity: bool,
}

/// Rows computed per parallel task: enough evaluations to outweigh a task's overhead.
const CHUNK: usize = 2048;

/// The checks of [`OnDemandStack::new`] that need no kernel evaluation: the shapes, a
/// normalisation computable from the diagonals, the weights and finite points.
fn check_input(
    x: &[f64],
    n: usize,
    p: usize,
    n_specs: usize,
    normalization: Normalization,
    weights: Option<&[f64]>,
) -> Result<()> {
    if x.len() != n * p || n == 0 || n_specs == 0 {
        return Err(MkError::Shape(format!(
            "on-demand kernels need n ≥ 1 points of {p} features and at least one kernel; \
             got {} values for n = {n} and {n_specs} kernels",
            x.len(),
        )));
    }
    if matches!(normalization, Normalization::Multiplicative) {
        return Err(MkError::config(
            "normalize",
            "'multiplicative' needs the mean of every kernel entry, which kernels computed \
             on demand do not have; use 'mean_diag', 'trace', 'spherical' or 'none'",
        ));
    }
    if let Some(w) = weights {
        crate::kernels::gram::check_weights(w, n)?;
    }
    if let Some(at) = x.iter().position(|v| !v.is_finite()) {
        return Err(MkError::NonFinite {
            what: "X".into(),
            kernel: None,
            entry: Some((at / p, at % p)),
        });
    }
    Ok(())
}

/// One copy of the points' columns per distinct feature subset of `specs` (row-major `x`,
/// `n × p`), and each kernel with the block it reads (unscaled).
fn blocks(
    x: &[f64],
    n: usize,
    p: usize,
    entries: Vec<OnDemandKernel>,
) -> Result<(Vec<Block>, Vec<OnKernel>, Vec<SeqPairs>)> {
    let mut blocks: Vec<(Option<Vec<usize>>, bool, Block)> = Vec::new();
    let mut kernels = Vec::with_capacity(entries.len());
    let mut seqs = Vec::new();
    for (m, entry) in entries.into_iter().enumerate() {
        let spec = match entry {
            OnDemandKernel::Spec(spec) => spec,
            OnDemandKernel::Seq(func, col) => {
                if col.len() != n {
                    return Err(MkError::Shape(format!(
                        "kernel {m} reads {} sequences for {n} points",
                        col.len()
                    )));
                }
                seqs.push(SeqPairs::new(m, func, col)?);
                kernels.push(OnKernel {
                    func: KernelFn::Linear,
                    block: usize::MAX,
                    seq: Some(seqs.len() - 1),
                    scale: 1.0,
                });
                continue;
            }
        };
        let spec = &spec;
        spec.validate(p)?;
        spec.check_nonnegative(m, "X", n, p, |i, j| x[i * p + j])?;
        // Hellinger reads the square roots of its columns.
        let sqrt = spec.func.sqrt_input();
        let found = blocks
            .iter()
            .position(|(f, r, _)| *f == spec.features && *r == sqrt);
        let block = match found {
            Some(b) => b,
            None => {
                let cols: Vec<usize> = spec.features.clone().unwrap_or((0..p).collect());
                let d = cols.len();
                let data: Vec<f64> = (0..n)
                    .flat_map(|i| cols.iter().map(move |&j| x[i * p + j]))
                    .map(|v| if sqrt { v.sqrt() } else { v })
                    .collect();
                let xt = (0..d)
                    .flat_map(|k| (0..n).map(move |i| (i, k)))
                    .map(|(i, k)| data[i * d + k])
                    .collect();
                let sums = data.chunks(d).map(|r| r.iter().sum()).collect();
                let block = Block {
                    x: data,
                    xt,
                    d,
                    sums,
                };
                blocks.push((spec.features.clone(), sqrt, block));
                blocks.len() - 1
            }
        };
        kernels.push(OnKernel {
            func: spec.func,
            block,
            seq: None,
            scale: 1.0,
        });
    }
    let blocks = blocks.into_iter().map(|(_, _, b)| b).collect();
    Ok((blocks, kernels, seqs))
}

impl OnDemandStack {
    /// The kernels `specs` on the rows of `x` (row-major, `n × p`), normalised by
    /// `normalization` with statistics of these points (weighted by `weights`, see
    /// [`NormStats::weights`]), with `cache_bytes` for the solvers' row caches.
    ///
    /// # Errors
    /// A non-finite `x`, a bad specification, a normalisation that needs every entry, or a
    /// kernel whose diagonal is not finite.
    pub fn new(
        x: &[f64],
        n: usize,
        p: usize,
        specs: &[KernelSpec],
        normalization: Normalization,
        weights: Option<&[f64]>,
        cache_bytes: usize,
    ) -> Result<Self> {
        let kernels = specs.iter().cloned().map(OnDemandKernel::Spec).collect();
        Self::of_bank(x, n, p, kernels, normalization, weights, cache_bytes)
    }

    /// [`new`](Self::new) of a bank that may hold sequence kernels.
    ///
    /// # Errors
    /// As [`new`](Self::new), and a sequence column of another length than `n`.
    pub fn of_bank(
        x: &[f64],
        n: usize,
        p: usize,
        entries: Vec<OnDemandKernel>,
        normalization: Normalization,
        weights: Option<&[f64]>,
        cache_bytes: usize,
    ) -> Result<Self> {
        let n_kernels = entries.len();
        check_input(x, n, p, n_kernels, normalization, weights)?;
        let (blocks, kernels, seqs) = blocks(x, n, p, entries)?;
        let mut shared = Shared {
            blocks,
            seqs,
            kernels,
            inv_sqrt_diag: Vec::new(),
            diag: Vec::new(),
            stats: NormStats {
                normalization,
                center: false,
                n,
                row_means: Vec::new(),
                total_means: vec![0.0; n_kernels],
                diag: Vec::new(),
                scales: Vec::new(),
                weights: Vec::new(),
            },
            n_total: n,
        };
        shared.set_stats(normalization, weights)?;
        Ok(OnDemandStack {
            shared: Arc::new(shared),
            rows: Arc::new((0..n).collect()),
            cache_bytes,
            identity: true,
        })
    }

    /// The normalisation statistics of the training points, for the cross kernels of new
    /// points.
    pub fn stats(&self) -> &NormStats {
        &self.shared.stats
    }

    /// The bytes a solver may spend on cached kernel values.
    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes
    }

    /// The share of [`cache_bytes`](Self::cache_bytes) for columns of `K_θ`: half, the other
    /// half holding a packed working set of points, so that both together stay within it.
    pub fn column_cache_bytes(&self) -> usize {
        self.cache_bytes / 2
    }

    /// The share of [`cache_bytes`](Self::cache_bytes) for a packed working set (see
    /// [`column_cache_bytes`](Self::column_cache_bytes)).
    pub fn packed_bytes(&self) -> usize {
        self.cache_bytes - self.column_cache_bytes()
    }

    /// The training indices of this view's points.
    pub fn indices(&self) -> &[usize] {
        &self.rows
    }

    /// A view of the points `idx` (local indices of this view), sharing the data.
    pub fn subset(&self, idx: &[usize]) -> OnDemandStack {
        OnDemandStack {
            shared: Arc::clone(&self.shared),
            rows: Arc::new(idx.iter().map(|&i| self.rows[i]).collect()),
            cache_bytes: self.cache_bytes,
            identity: false,
        }
    }

    /// This view grown by the points `more` (local indices of `source`, the view this one
    /// was taken from).
    pub fn extend(&mut self, source: &OnDemandStack, more: &[usize]) {
        let mut rows = self.rows.as_ref().clone();
        rows.extend(more.iter().map(|&i| source.rows[i]));
        self.rows = Arc::new(rows);
    }

    /// `out[k] = K_m(x_i, x_{cols[k]})` (local indices).
    fn values(&self, m: usize, i: usize, cols: &[usize], out: &mut [f64]) {
        let gcols: Vec<usize> = cols.iter().map(|&j| self.rows[j]).collect();
        self.shared.values(m, self.rows[i], &gcols, out);
    }

    /// `out[k] = Σ_{(m, w) ∈ weights} w K_m(x_i, x_k)` for every local point `k`: column `i`
    /// of a combined kernel, in parallel over blocks of rows.
    pub fn combined_column(&self, weights: &[(usize, f64)], i: usize, out: &mut [f64]) {
        let gi = self.rows[i];
        let rows = &self.rows;
        // The training stack's points are 0..N in order: its columns read runs of points.
        let identity = self.identity;
        out.par_chunks_mut(CHUNK)
            .zip(rows.par_chunks(CHUNK))
            .for_each(|(o, r)| {
                o.fill(0.0);
                let mut tmp = vec![0.0; o.len()];
                for &(m, w) in weights {
                    if identity {
                        self.shared.values_run(m, gi, r[0], &mut tmp);
                    } else {
                        self.shared.values(m, gi, r, &mut tmp);
                    }
                    for (a, t) in o.iter_mut().zip(&tmp) {
                        *a += w * t;
                    }
                }
            });
    }

    /// The diagonal of the combined kernel `Σ w K_m`.
    pub fn combined_diag(&self, weights: &[(usize, f64)], out: &mut [f64]) {
        out.fill(0.0);
        let nt = self.shared.n_total;
        for &(m, w) in weights {
            let d = &self.shared.diag[m * nt..(m + 1) * nt];
            for (o, &g) in out.iter_mut().zip(self.rows.iter()) {
                *o += w * d[g];
            }
        }
    }
}

impl Shared {
    /// The statistics of `normalization` (weighted by `weights`) from one pass over the
    /// points, whose raw diagonals give every statistic, then each kernel's scale and the
    /// normalised diagonals. Refuses a diagonal that is not finite.
    fn set_stats(&mut self, normalization: Normalization, weights: Option<&[f64]>) -> Result<()> {
        let (n, n_kernels) = (self.n_total, self.kernels.len());
        // Before the scales are set, `values` reads raw entries.
        let mut per_kernel: Vec<KernelStats> = Vec::with_capacity(n_kernels);
        let mut raw_diag = Vec::with_capacity(n_kernels * n);
        for m in 0..n_kernels {
            let mut one = [0.0];
            let raw: Vec<f64> = (0..n)
                .map(|i| {
                    self.values(m, i, &[i], &mut one);
                    one[0]
                })
                .collect();
            if let Some(i) = raw.iter().position(|v| !v.is_finite()) {
                return Err(MkError::NonFinite {
                    what: format!("kernel {m}"),
                    kernel: Some(m),
                    entry: Some((i, i)),
                });
            }
            per_kernel.push(NormStats::of_diagonal(normalization, n, &raw, weights));
            raw_diag.extend(raw);
        }
        self.stats = NormStats::collect(normalization, false, n, per_kernel, weights);
        for (m, k) in self.kernels.iter_mut().enumerate() {
            k.scale = self.stats.scales[m];
        }
        if normalization == Normalization::Spherical {
            self.inv_sqrt_diag = self
                .stats
                .diag
                .iter()
                .map(|&d| if d > 0.0 { 1.0 / d.sqrt() } else { 0.0 })
                .collect();
            self.diag = self
                .stats
                .diag
                .iter()
                .map(|&d| if d > 0.0 { 1.0 } else { 0.0 })
                .collect();
        } else {
            self.diag = raw_diag
                .chunks_exact(n)
                .zip(&self.kernels)
                .flat_map(|(d, k)| d.iter().map(move |v| k.scale * v))
                .collect();
        }
        Ok(())
    }

    /// `out[k] = K_m(x_i, x_{start+k})`: [`values`](Self::values) on a run of consecutive
    /// points, reading the column-major copy feature by feature.
    fn values_run(&self, m: usize, i: usize, start: usize, out: &mut [f64]) {
        let k = &self.kernels[m];
        if k.seq.is_some() {
            let js: Vec<usize> = (start..start + out.len()).collect();
            return self.values(m, i, &js, out);
        }
        let b = &self.blocks[k.block];
        let (d, nt, len) = (b.d, self.n_total, out.len());
        let xi = &b.x[i * d..(i + 1) * d];
        let col = |f: usize| &b.xt[f * nt + start..f * nt + start + len];
        out.fill(0.0);
        // The Gaussian accumulates squared distances; the others the sum they read.
        let kind = match (k.func, k.func.reads()) {
            (KernelFn::Gaussian { .. }, _) => 0,
            (_, PairSum::L1) => 1,
            (_, PairSum::Dot) => 2,
            (_, PairSum::Chi2) => 3,
            (_, PairSum::Min) => 4,
        };
        for (f, &a) in xi.iter().enumerate() {
            accumulate::<f64>(out, col(f), a, kind);
        }
        self.finish(m, i, out, |t| start + t);
    }

    /// `out[t] = K_m(x_i, x_{j(t)})`, normalised, from `out[t]` the sum kernel `m` reads
    /// (the squared distance for the Gaussian).
    fn finish(&self, m: usize, i: usize, out: &mut [f64], j: impl Fn(usize) -> usize) {
        let k = &self.kernels[m];
        match k.func {
            KernelFn::Gaussian { sigma } => exp_all::<f64>(out, -1.0 / (2.0 * sigma * sigma)),
            KernelFn::Laplacian { sigma } => exp_all::<f64>(out, -1.0 / sigma),
            KernelFn::Chi2 { gamma } => exp_all::<f64>(out, -gamma),
            KernelFn::Linear | KernelFn::Intersection | KernelFn::Hellinger => {}
            f => {
                // Polynomial (of the inner product) and Tanimoto (of the minima and sums).
                let sums = &self.blocks[k.block].sums;
                for (t, o) in out.iter_mut().enumerate() {
                    *o = if j(t) == i {
                        f.self_value(*o)
                    } else {
                        f.eval(*o, sums[i], sums[j(t)])
                    };
                }
            }
        }
        self.normalise(m, i, out, j);
    }

    /// Scales `out[t] = K_m(x_i, x_{j(t)})` by the normalisation of kernel `m`.
    fn normalise(&self, m: usize, i: usize, out: &mut [f64], j: impl Fn(usize) -> usize) {
        let k = &self.kernels[m];
        if self.inv_sqrt_diag.is_empty() {
            if k.scale != 1.0 {
                out.iter_mut().for_each(|o| *o *= k.scale);
            }
        } else {
            // The spherical normalisation: k(x, x') / sqrt(k(x, x) k(x', x')).
            let nt = self.n_total;
            let inv = &self.inv_sqrt_diag[m * nt..(m + 1) * nt];
            for (t, o) in out.iter_mut().enumerate() {
                *o *= inv[i] * inv[j(t)];
            }
        }
    }

    /// For a kernel with explicit features (the spectrum kernel: k-mer counts `c`), `z =
    /// Σ_t v[t] f(g[t]) c(x_{g[t]})`, `f` the spherical factors `1/√k(x, x)` (1 for the other
    /// normalisations); `None` for the other kernels. Then `Σ_t v[t] K_m(x_i, x_{g[t]}) =
    /// scale · f(i) · c(x_i) · z` ([`Shared::explicit_value`]) and `vᵀK_m v = scale · ‖z‖²`.
    fn explicit_products(&self, m: usize, g: &[usize], v: &[f64]) -> Option<Vec<f64>> {
        let s = self.kernels[m].seq?;
        let coef: Vec<f64> = g
            .iter()
            .zip(v)
            .map(|(&j, &a)| a * self.factor(m, j))
            .collect();
        self.seqs[s].weighted_counts(g, &coef)
    }

    /// `Σ_t v[t] K_m(x_i, x_{g[t]})` from `z` of [`Shared::explicit_products`].
    fn explicit_value(&self, m: usize, i: usize, z: &[f64]) -> f64 {
        let k = &self.kernels[m];
        let s = k.seq.expect("a kernel with explicit features");
        k.scale * self.factor(m, i) * self.seqs[s].dot_counts(i, z)
    }

    /// The spherical factor `1/√k_m(x_i, x_i)` of point `i` (1 for the other normalisations).
    fn factor(&self, m: usize, i: usize) -> f64 {
        if self.inv_sqrt_diag.is_empty() {
            1.0
        } else {
            self.inv_sqrt_diag[m * self.n_total + i]
        }
    }

    /// `out[k] = K_m(x_i, x_{js[k]})`, normalised (training indices). The kernel's function
    /// is matched once per call, so that the loop over `js` is a plain one.
    fn values(&self, m: usize, i: usize, js: &[usize], out: &mut [f64]) {
        let k = &self.kernels[m];
        if let Some(s) = k.seq {
            self.seqs[s].values(i, js, out);
            return self.normalise(m, i, out, |t| js[t]);
        }
        let b = &self.blocks[k.block];
        let d = b.d;
        let xi = &b.x[i * d..(i + 1) * d];
        let row = |j: usize| &b.x[j * d..(j + 1) * d];
        match k.func {
            KernelFn::Gaussian { .. } => {
                for (o, &j) in out.iter_mut().zip(js) {
                    *o = sqdist(xi, row(j));
                }
            }
            f => {
                let kind = f.reads();
                for (o, &j) in out.iter_mut().zip(js) {
                    *o = kind.of(xi, row(j));
                }
            }
        }
        self.finish(m, i, out, |t| js[t]);
    }
}

/// `e^x`, branch-free so that a loop over it vectorises (libm's `exp` is a call per entry,
/// and the kernel evaluations of an on-demand fit are mostly exponentials): `x = k ln 2 + r`
/// with `|r| ≤ ln 2 / 2` (Cody–Waite, `ln 2` in two parts), `e^r` by its Taylor polynomial of
/// degree 13 (truncation `r¹⁴/14! < 5e-18`), and `2^k` built in the exponent bits. Within 2
/// ulp of the exact value on `[−708, 709]`; below `−708` it returns `e^{−708} ≈ 3e-308` where
/// the exact value is subnormal or 0, a kernel value below any rounding of the others.
#[inline(always)]
fn exp_fast(x: f64) -> f64 {
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²: adding it rounds to an integer
                                                // fdlibm's split of ln 2: LN2_HI has 32 bits, so k·LN2_HI is exact for |k| < 2²⁰.
    let ln2_hi = f64::from_bits(0x3fe6_2e42_fee0_0000);
    let ln2_lo = f64::from_bits(0x3dea_39ef_3579_3c76);
    let x = x.clamp(-708.0, 709.0);
    let t = x * std::f64::consts::LOG2_E + SHIFT;
    let k = t - SHIFT;
    let r = (x - k * ln2_hi) - k * ln2_lo;
    let mut p: f64 = 1.0 / 6_227_020_800.0; // 1/13!
    for d in [
        479_001_600.0,
        39_916_800.0,
        3_628_800.0,
        362_880.0,
        40_320.0,
        5_040.0,
        720.0,
        120.0,
        24.0,
        6.0,
        2.0,
        1.0,
        1.0,
    ] {
        // Not `mul_add`: without FMA hardware (the baseline build) it is a libm call.
        p = p * r + 1.0 / d;
    }
    // The low bits of `t` hold k (two's complement within the mantissa): add the exponent
    // bias and shift them into the exponent field.
    p * f64::from_bits(t.to_bits().wrapping_add(1023) << 52)
}

/// `v ← e^{g·v}` for every entry (see [`exp_fast`]).
#[inline(always)]
fn exp_all_body<T: Element>(v: &mut [f64], g: T) {
    let g = g.to_f64();
    for x in v.iter_mut() {
        *x = exp_fast(g * *x);
    }
}

avx2_dispatch! {
    fn exp_all<T>(v: &mut [f64], g: T) = exp_all_body;
}

/// `out[t] += (a − c[t])²` (`kind` 0), `|a − c[t]|` (1), `a·c[t]` (2), the χ² term
/// `(a − c[t])² / (a + c[t])` (3) or `min(a, c[t])` (4): one feature's contribution to the
/// squared distances, ℓ1 distances, inner products, χ² sums or minima of a run of points.
#[inline(always)]
fn accumulate_body<T: Element>(out: &mut [f64], c: &[T], a: f64, kind: u8) {
    let pairs = out.iter_mut().zip(c);
    match kind {
        0 => pairs.for_each(|(o, &x)| {
            let t = a - x.to_f64();
            *o += t * t;
        }),
        1 => pairs.for_each(|(o, &x)| *o += term(PairSum::L1, a, x.to_f64())),
        3 => pairs.for_each(|(o, &x)| *o += term(PairSum::Chi2, a, x.to_f64())),
        4 => pairs.for_each(|(o, &x)| *o += term(PairSum::Min, a, x.to_f64())),
        _ => pairs.for_each(|(o, &x)| *o += a * x.to_f64()),
    }
}

avx2_dispatch! {
    fn accumulate<T>(out: &mut [f64], c: &[T], a: f64, kind: u8) = accumulate_body;
}

/// `‖a − b‖²`.
#[inline(always)]
fn sqdist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// A combined kernel `K_θ = Σ_m θ_m K_m` as a solver holds it: stored (row-major `n × n`), the
/// weights `θ` of a stack computed on demand, or the weights `θ` of a stack that stores its
/// entries, `K_θ` never formed (a solver that reads its columns on demand from the kernels').
#[derive(Clone, Copy)]
pub enum CombinedKernel<'a> {
    Stored(&'a [f64], usize),
    OnDemand(&'a OnDemandStack, &'a [f64]),
    Columns(&'a dyn KernelStack, &'a [f64]),
}

impl CombinedKernel<'_> {
    /// `K_θ[idx, idx]`, row-major (an SVM's free points: small where `K_θ` is not).
    pub fn block(&self, idx: &[usize]) -> Vec<f64> {
        match *self {
            CombinedKernel::Stored(k, n) => idx
                .iter()
                .flat_map(|&i| idx.iter().map(move |&j| k[i * n + j]))
                .collect(),
            CombinedKernel::OnDemand(od, theta) => {
                let mut a = vec![0.0; idx.len() * idx.len()];
                if !idx.is_empty() {
                    od.subset(idx).combine(theta, &mut a);
                }
                a
            }
            CombinedKernel::Columns(stack, theta) => {
                // `Σ_m θ_m K_m[idx, i]` per row: `|idx|²` entries of each kernel with a weight.
                let (s, w) = (idx.len(), weighted(theta));
                let mut a = vec![0.0; s * s];
                a.par_chunks_mut(s.max(1)).zip(idx).for_each(|(out, &i)| {
                    let mut col = vec![0.0; s];
                    for &(m, t) in &w {
                        stack.column_at(m, i, idx, &mut col);
                        out.iter_mut().zip(&col).for_each(|(o, x)| *o += t * x);
                    }
                });
                a
            }
        }
    }
}

/// `K_k v` for the kernels `set`, `n` values each, one after another, exact on the rows of
/// the non-zeros of `v` (the support vectors, the only rows an SVM's Hessian and forms read).
/// A stack computed on demand gives those rows only (zeros elsewhere), from the view of the
/// support vectors: `|S|²` evaluations per kernel, where every row costs `n·|S|`. A stack
/// that stores its entries does the same from `|S|²` gathered entries while the support is
/// small ([`GATHER_FRACTION`]), where the whole product streams `n²/2` per kernel (the shared
/// multiclass fit reads one support per class; docs/mathematics.md §3.8).
pub(crate) fn support_products(stack: &dyn KernelStack, v: &[f64], set: &[usize]) -> Vec<f64> {
    let n = stack.n();
    let mut prod = vec![0.0; set.len() * n];
    let sv = nonzeros(v);
    let ns = sv.len();
    let od = stack.on_demand();
    let gather = stack.stores_entries() && GATHER_FRACTION * ((ns * ns) as f64) < (n * n) as f64;
    if od.is_none() && !gather {
        stack.matvecs_subset(v, set, &mut prod);
        return prod;
    }
    if ns == 0 {
        return prod;
    }
    let v_s: Vec<f64> = sv.iter().map(|&i| v[i]).collect();
    let mut local = vec![0.0; set.len() * ns];
    match od {
        Some(od) => od.subset(&sv).matvecs_subset(&v_s, set, &mut local),
        None => support_rows(stack, &v_s, &sv, set, &mut local),
    }
    for (out, part) in prod.chunks_exact_mut(n).zip(local.chunks_exact(ns.max(1))) {
        for (&i, &x) in sv.iter().zip(part) {
            out[i] = x;
        }
    }
    prod
}

/// [`support_products`] gathers entries while `GATHER_FRACTION · |S|² < n²`: a gathered entry
/// costs about what two streamed ones do, and the whole product streams `n²/2` per kernel.
const GATHER_FRACTION: f64 = 4.0;

/// `out[k·s + a] = Σ_b K_{set[k]}[sv[a], sv[b]] v_s[b]` (`s = |sv|`): the products on the
/// support's rows from its columns (rows of a symmetric kernel), in parallel over the kernels.
fn support_rows(
    stack: &dyn KernelStack,
    v_s: &[f64],
    sv: &[usize],
    set: &[usize],
    out: &mut [f64],
) {
    let s = sv.len();
    out.par_chunks_mut(s)
        .zip(set.par_iter())
        .for_each(|(o, &k)| {
            let mut col = vec![0.0; s];
            o.fill(0.0);
            for (&j, &vj) in sv.iter().zip(v_s) {
                stack.column_at(k, j, sv, &mut col);
                for (x, c) in o.iter_mut().zip(&col) {
                    *x += vj * c;
                }
            }
        });
}

impl KernelStack for OnDemandStack {
    fn n(&self) -> usize {
        self.rows.len()
    }

    fn m(&self) -> usize {
        self.shared.kernels.len()
    }

    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]) {
        self.quad_forms_batch_subset(v, idx, out);
    }

    /// `vᵀK_mv = Σ_a v_a (K_aa v_a + 2 Σ_{c<a} K_ac v_c)` over the points where some vector
    /// is non-zero: `|S|(|S|+1)/2` evaluations per kernel, shared by the vectors.
    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        let n = self.n();
        let b = vs.len() / n.max(1);
        let support: Vec<usize> = (0..n)
            .filter(|&i| (0..b).any(|l| vs[l * n + i] != 0.0))
            .collect();
        let g: Vec<usize> = support.iter().map(|&i| self.rows[i]).collect();
        let s = support.len();
        // `vsup[l·s + c] = v_l[support[c]]`.
        let vsup: Vec<f64> = (0..b)
            .flat_map(|l| support.iter().map(move |&i| vs[l * n + i]))
            .collect();
        let nk = idx.len();
        // Kernels with explicit features: vᵀK_m v = scale · ‖z‖² (explicit_products).
        let mut explicit = vec![false; nk];
        let mut forms = vec![0.0; nk * b];
        for (k, &m) in idx.iter().enumerate() {
            for l in 0..b {
                let v = &vsup[l * s..(l + 1) * s];
                if let Some(z) = self.shared.explicit_products(m, &g, v) {
                    let scale = self.shared.kernels[m].scale;
                    forms[k * b + l] = scale * z.iter().map(|x| x * x).sum::<f64>();
                    explicit[k] = true;
                }
            }
        }
        let acc = (0..s)
            .into_par_iter()
            .fold(
                || (vec![0.0; nk * b], vec![0.0; s]),
                |(mut acc, mut tmp), a| {
                    for (k, &m) in idx.iter().enumerate() {
                        if explicit[k] {
                            continue;
                        }
                        let t = &mut tmp[..=a];
                        self.shared.values(m, g[a], &g[..=a], t);
                        for l in 0..b {
                            let v = &vsup[l * s..(l + 1) * s];
                            let off: f64 = t[..a].iter().zip(&v[..a]).map(|(x, y)| x * y).sum();
                            acc[k * b + l] += v[a] * (2.0 * off + t[a] * v[a]);
                        }
                    }
                    (acc, tmp)
                },
            )
            .map(|(acc, _)| acc)
            .reduce(
                || vec![0.0; nk * b],
                |mut x, y| {
                    x.iter_mut().zip(&y).for_each(|(a, c)| *a += c);
                    x
                },
            );
        for ((o, &a), &f) in out[..nk * b].iter_mut().zip(&acc).zip(&forms) {
            *o = a + f;
        }
    }

    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        self.combined_matvec_of(&[(m, 1.0)], v, out);
    }

    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        let n = self.n();
        let w = weighted(theta);
        out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            row.fill(0.0);
            let mut tmp = vec![0.0; n];
            for &(m, t) in &w {
                self.shared.values(m, self.rows[i], &self.rows, &mut tmp);
                row.iter_mut().zip(&tmp).for_each(|(o, x)| *o += t * x);
            }
        });
    }

    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        self.combined_column(&[(m, 1.0)], i, out);
    }

    fn diag(&self, m: usize, out: &mut [f64]) {
        self.combined_diag(&[(m, 1.0)], out);
    }

    fn combined_matvec(&self, theta: &[f64], v: &[f64], out: &mut [f64]) {
        self.combined_matvec_of(&weighted(theta), v, out);
    }

    fn column_at(&self, m: usize, i: usize, rows: &[usize], out: &mut [f64]) {
        self.values(m, i, rows, out);
    }

    fn on_demand(&self) -> Option<&OnDemandStack> {
        Some(self)
    }
}

impl OnDemandStack {
    /// `out = Σ_{(m, w)} w K_m v` when some kernel of `weights` has explicit features (the
    /// spectrum kernel), which make its product one pass over the points instead of `n`
    /// evaluations per non-zero of `v` (`Shared::explicit_products`); `false` otherwise (the
    /// solver then reads columns it may cache).
    pub fn combined_products(&self, weights: &[(usize, f64)], v: &[f64], out: &mut [f64]) -> bool {
        let explicit = weights.iter().any(|&(m, _)| {
            self.shared.kernels[m]
                .seq
                .is_some_and(|s| self.shared.seqs[s].explicit())
        });
        if explicit {
            self.combined_matvec_of(weights, v, out);
        }
        explicit
    }

    /// `out = Σ_{(m, w)} w K_m v`, reading only the columns of the non-zeros of `v`:
    /// `n·|S|` evaluations per kernel, in parallel over the points.
    fn combined_matvec_of(&self, weights: &[(usize, f64)], v: &[f64], out: &mut [f64]) {
        let support = nonzeros(v);
        let g: Vec<usize> = support.iter().map(|&i| self.rows[i]).collect();
        let vs: Vec<f64> = support.iter().map(|&i| v[i]).collect();
        // Kernels with explicit features: one pass over the support, then one per row.
        let explicit: Vec<Option<Vec<f64>>> = weights
            .iter()
            .map(|&(m, _)| self.shared.explicit_products(m, &g, &vs))
            .collect();
        out.par_iter_mut().zip(self.rows.par_iter()).for_each_init(
            || vec![0.0; g.len()],
            |tmp, (o, &gi)| {
                *o = 0.0;
                for (&(m, w), z) in weights.iter().zip(&explicit) {
                    *o += w * match z {
                        Some(z) => self.shared.explicit_value(m, gi, z),
                        None => {
                            self.shared.values(m, gi, &g, tmp);
                            tmp.iter().zip(&vs).map(|(x, y)| x * y).sum::<f64>()
                        }
                    };
                }
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{gram, DenseStack, GramOptions};
    use crate::NoInterrupt;

    fn points(n: usize, p: usize) -> Vec<f64> {
        (0..n * p)
            .map(|k| ((k * 7919 % 113) as f64 / 37.0 - 1.5) * (1.0 + (k % 3) as f64))
            .collect()
    }

    fn specs() -> Vec<KernelSpec> {
        vec![
            KernelSpec::on(KernelFn::Gaussian { sigma: 1.3 }, vec![0, 2]),
            KernelSpec::on(KernelFn::Gaussian { sigma: 0.7 }, vec![0, 2]),
            KernelSpec::new(KernelFn::Linear),
            KernelSpec::on(
                KernelFn::Polynomial {
                    degree: 2,
                    coef0: 1.0,
                    scale: 0.5,
                },
                vec![1],
            ),
            KernelSpec::on(KernelFn::Laplacian { sigma: 2.0 }, vec![2, 1]),
        ]
    }

    /// Every read of the on-demand stack equals the stored Gram stack's, under every
    /// normalisation it takes, on the whole set and on a subset view.
    #[test]
    fn on_demand_reads_equal_the_stored_stack() {
        let (n, p) = (37, 3);
        let x = points(n, p);
        let xa = ndarray::ArrayView2::from_shape((n, p), &x).unwrap();
        for norm in [
            Normalization::None,
            Normalization::Trace,
            Normalization::MeanDiag,
            Normalization::Spherical,
        ] {
            let opts = GramOptions {
                normalization: norm,
                ..GramOptions::default()
            };
            let (g, st) = gram::<f64>(xa, &specs(), &opts, &NoInterrupt).unwrap();
            let dense = DenseStack::new(g.as_slice().unwrap(), 5, n).unwrap();
            let od = OnDemandStack::new(&x, n, p, &specs(), norm, None, 1 << 20).unwrap();
            for (a, b) in od.stats().scales.iter().zip(&st.scales) {
                assert!((a - b).abs() <= 1e-12 * b.abs(), "{norm:?}: {a} vs {b}");
            }
            let mut v = vec![0.0; 2 * n];
            for i in (0..n).step_by(3) {
                v[i] = (i as f64 * 0.37).sin();
                v[n + (i + 6) % n] = 0.5 - (i % 4) as f64;
            }
            let theta = [0.3, 0.0, 1.2, 0.5, 0.25];
            let all: Vec<usize> = (0..5).collect();
            let close = |a: &[f64], b: &[f64], what: &str| {
                let s = b.iter().fold(1.0f64, |m, x| m.max(x.abs()));
                for (x, y) in a.iter().zip(b) {
                    assert!((x - y).abs() <= 1e-11 * s, "{norm:?} {what}: {x} vs {y}");
                }
            };
            let (mut qa, mut qb) = (vec![0.0; 10], vec![0.0; 10]);
            od.quad_forms_batch_subset(&v, &all, &mut qa);
            dense.quad_forms_batch_subset(&v, &all, &mut qb);
            close(&qa, &qb, "quad forms");
            let (mut fa, mut fb) = (vec![0.0; n], vec![0.0; n]);
            od.combined_matvec(&theta, &v[..n], &mut fa);
            dense.combined_matvec(&theta, &v[..n], &mut fb);
            close(&fa, &fb, "combined matvec");
            // Products on the support of a sparse vector (13 of 37 points: the dense stack
            // gathers them too) equal whole products there.
            let set = [4, 0, 2];
            let support: Vec<usize> = (0..n).filter(|&i| v[i] != 0.0).collect();
            for stack in [&od as &dyn KernelStack, &dense] {
                let got = support_products(stack, &v[..n], &set);
                for (a, &m) in set.iter().enumerate() {
                    dense.matvec(m, &v[..n], &mut fb);
                    let want: Vec<f64> = support.iter().map(|&i| fb[i]).collect();
                    let at: Vec<f64> = support.iter().map(|&i| got[a * n + i]).collect();
                    close(&at, &want, "support products");
                }
            }
            let (mut ka, mut kb) = (vec![0.0; n * n], vec![0.0; n * n]);
            od.combine(&theta, &mut ka);
            dense.combine(&theta, &mut kb);
            close(&ka, &kb, "combine");
            for m in 0..5 {
                od.column(m, 4, &mut fa);
                dense.column(m, 4, &mut fb);
                close(&fa, &fb, "column");
                od.diag(m, &mut fa);
                dense.diag(m, &mut fb);
                close(&fa, &fb, "diag");
            }
            // A view of some points reads the same entries as the whole stack there.
            let idx = [5, 30, 2, 11];
            let mut sub = od.subset(&idx[..2]);
            sub.extend(&od, &idx[2..]);
            assert_eq!(sub.indices(), &idx);
            let mut col = vec![0.0; 4];
            sub.column_at(2, 1, &[0, 1, 2, 3], &mut col);
            let want: Vec<f64> = idx.iter().map(|&j| dense.kernel(2)[30 * n + j]).collect();
            close(&col, &want, "subset column");
        }
    }

    /// The branch-free exponential is within 2 ulp of libm's on the whole range kernels use,
    /// at the ends and at the points where `k` changes.
    #[test]
    fn fast_exponential_is_within_two_ulp() {
        let mut worst = 0.0f64;
        let mut x: f64 = -708.0;
        while x <= 709.0 {
            for dx in [0.0, 1e-9, 0.173_286_795_139_986_3, 0.346_573_590_279_972_6] {
                let y = (x + dx).min(709.0);
                let (a, b) = (exp_fast(y), y.exp());
                worst = worst.max((a - b).abs() / b);
            }
            x += 0.0137;
        }
        assert!(
            worst <= 2.0 * f64::EPSILON,
            "worst relative error {worst:e}"
        );
        assert_eq!(exp_fast(0.0), 1.0);
        assert!(exp_fast(-1e6) >= 0.0 && exp_fast(-1e6) < 1e-300);
    }

    #[test]
    fn normalisations_that_need_every_entry_are_refused() {
        let x = points(5, 3);
        let err = OnDemandStack::new(&x, 5, 3, &specs(), Normalization::Multiplicative, None, 0);
        assert!(matches!(err, Err(MkError::InvalidConfig { .. })));
    }
}
