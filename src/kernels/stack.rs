//! The kernel stack: the one abstraction through which every solver reads its `M` Gram matrices.
//!
//! The cost model is memory bandwidth: a solver's hot loop is `quad_forms`, `vᵀ K_m v` for all
//! `m`, one pass over the stack. The dense implementations read only the upper triangle
//! (`vᵀKv = Σ_i K_ii v_i² + 2 Σ_{i<j} K_ij v_i v_j`), half the bytes of a full pass, and
//! evaluate several vectors per pass in the batched form.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::kernels::simd::{avx2_dispatch, prefetch};
use crate::kernels::Element;
use crate::linalg::dot;

/// Read access to `M` symmetric PSD `n×n` kernels. Methods that loop over kernels run in
/// parallel on the current rayon pool.
pub trait KernelStack: Sync {
    /// Number of points.
    fn n(&self) -> usize;
    /// Number of kernels.
    fn m(&self) -> usize;

    /// `out[m] = vᵀ K_m v` for every kernel.
    fn quad_forms(&self, v: &[f64], out: &mut [f64]) {
        let all: Vec<usize> = (0..self.m()).collect();
        self.quad_forms_subset(v, &all, out);
    }

    /// `out[k] = vᵀ K_{idx[k]} v` for the kernels in `idx` (the active set of a solver).
    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]);

    /// `out[m·b + j] = v_jᵀ K_m v_j` for `b` vectors stored one after another in `vs` (`b·n`).
    fn quad_forms_batch(&self, vs: &[f64], out: &mut [f64]) {
        let all: Vec<usize> = (0..self.m()).collect();
        self.quad_forms_batch_subset(vs, &all, out);
    }

    /// `out[k·b + j] = v_jᵀ K_{idx[k]} v_j`: [`quad_forms_batch`](Self::quad_forms_batch) on
    /// the kernels in `idx`.
    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]);

    /// `out = K_m v`.
    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]);

    /// `out[(k·b + l)·n + i] = (K_{idx[k]} v_l)_i` for the `b` vectors stored one after another
    /// in `vs` (`b·n`) and the kernels in `idx`, in parallel over them.
    fn matvecs_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        let n = self.n().max(1);
        let b = vs.len() / n;
        out.par_chunks_mut(n)
            .enumerate()
            .for_each(|(kl, o)| self.matvec(idx[kl / b], &vs[(kl % b) * n..(kl % b + 1) * n], o));
    }

    /// `out[(m·b + k)·n + i] = (K_m v_k)_i` for the `b` vectors stored one after another in
    /// `vs` (`b·n`) and every kernel: all of a Newton step's products in one pass.
    fn matvecs(&self, vs: &[f64], out: &mut [f64]) {
        let all: Vec<usize> = (0..self.m()).collect();
        self.matvecs_subset(vs, &all, out);
    }

    /// `out = Σ_m θ_m K_m` as a dense row-major `n×n` matrix (kernels with `θ_m = 0` skipped).
    fn combine(&self, theta: &[f64], out: &mut [f64]);

    /// `out = K_m[:, i]`.
    fn column(&self, m: usize, i: usize, out: &mut [f64]);

    /// `out += c · K_m[:, i]` (the per-step update of per-kernel gradients).
    fn add_column(&self, m: usize, i: usize, c: f64, out: &mut [f64]) {
        let mut col = vec![0.0; self.n()];
        self.column(m, i, &mut col);
        for (o, v) in out.iter_mut().zip(&col) {
            *o += c * v;
        }
    }

    /// `out = diag(K_m)`.
    fn diag(&self, m: usize, out: &mut [f64]);

    /// `out = Σ_{(m, t) ∈ weights} t · K_m[:, i]`: one column of `K_θ` (`weights`: the
    /// non-zero `θ_m` with their indices) at `|weights|·n` entries read, for a solver that
    /// asks `K_θ` only for the columns it steps on instead of forming it.
    fn combined_column(&self, weights: &[(usize, f64)], i: usize, out: &mut [f64]) {
        out.fill(0.0);
        for &(m, t) in weights {
            self.add_column(m, i, t, out);
        }
    }

    /// `out[m·n..(m+1)·n] += K_m v` for every kernel: per-kernel gradient caches brought up to
    /// date from the coefficients that changed. By symmetry `K_m v = Σ_{j: v_j ≠ 0} v_j
    /// K_m[j, :]`, so only the columns where `v` is non-zero are read.
    fn add_matvecs(&self, v: &[f64], out: &mut [f64]) {
        let nz = nonzeros(v);
        let n = self.n().max(1);
        out.par_chunks_mut(n).enumerate().for_each(|(m, o)| {
            for &j in &nz {
                self.add_column(m, j, v[j], o);
            }
        });
    }

    /// `out = K_θ v = Σ_m θ_m K_m v` without forming `K_θ` (kernels with `θ_m = 0` skipped):
    /// the model values of a solver whose coefficients are sparse, for a fraction of a pass.
    fn combined_matvec(&self, theta: &[f64], v: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        let mut tmp = vec![0.0; self.n()];
        for (m, &t) in theta.iter().enumerate().filter(|(_, &t)| t != 0.0) {
            self.matvec(m, v, &mut tmp);
            for (o, x) in out.iter_mut().zip(&tmp) {
                *o += t * x;
            }
        }
    }

    /// `out[k] = K_m[rows[k], i]`: column `i` at some rows (a point joining a working set).
    fn column_at(&self, m: usize, i: usize, rows: &[usize], out: &mut [f64]) {
        let mut col = vec![0.0; self.n()];
        self.column(m, i, &mut col);
        for (o, &r) in out.iter_mut().zip(rows) {
            *o = col[r];
        }
    }

    /// Whether the values are stored in single precision (copies then keep that precision).
    fn single_precision(&self) -> bool {
        false
    }

    /// Whether [`column_at`](Self::column_at) gathers stored entries (a dense stack), so that
    /// products on a few rows cost the entries they read.
    fn stores_entries(&self) -> bool {
        false
    }

    /// The factors `K_m = G_m G_mᵀ` when the stack is stored as them: solvers whose systems
    /// are a diagonal plus a combination of kernels then work at the total rank instead of `n`.
    fn low_rank(&self) -> Option<&crate::kernels::LowRankStack> {
        None
    }

    /// Kernel `m`'s factor `G_m` (`K_m = G_m G_mᵀ`, `r_m` columns of length `n` one after
    /// another) when the stack stores one; views of some kernels (a working set) forward it.
    fn low_rank_factor(&self, _m: usize) -> Option<&[f64]> {
        None
    }

    /// The stack itself when its entries are computed from the points on demand: a solver
    /// then reads columns of `K_θ` through a row cache instead of forming it.
    /// The entries read from the stored stack so far, for a stack that counts them
    /// ([`DenseStack::counting`]); None for the others.
    fn entries_read(&self) -> Option<u64> {
        None
    }

    fn on_demand(&self) -> Option<&crate::kernels::OnDemandStack> {
        None
    }
}

/// What [`DenseStack::validate`] gathers over part of a kernel, in eight lanes so that the
/// loop vectorises: `Σ 0·x` (NaN as soon as an entry is not finite), `max |x|`,
/// `max |K_ij − K_ji|` and the smallest diagonal entry (a PSD kernel has none below 0).
#[derive(Debug, Clone, Copy, Default)]
struct SymmetryStats {
    finite: [f64; 8],
    scale: [f64; 8],
    diff: [f64; 8],
    /// `max (|K_ij| − sqrt(K_ii K_jj))`: positive where Cauchy–Schwarz fails.
    excess: [f64; 8],
    min_diag: f64,
}

impl SymmetryStats {
    /// The pair `(a, b) = (K_ij, K_ji)` with `bound = sqrt(K_ii K_jj)`.
    #[inline(always)]
    fn add_pair(&mut self, l: usize, a: f64, b: f64, bound: f64) {
        // NaN when a or b is not finite (or a − b overflows: then the asymmetry is reported).
        self.finite[l] += 0.0 * (a - b);
        let s = a.abs().max(b.abs());
        // `if` rather than `f64::max`: NaN is caught by `finite`, and this form vectorises.
        if s > self.scale[l] {
            self.scale[l] = s;
        }
        let d = (a - b).abs();
        if d > self.diff[l] {
            self.diff[l] = d;
        }
        let e = a.abs() - bound;
        if e > self.excess[l] {
            self.excess[l] = e;
        }
    }

    fn add_diagonal(&mut self, x: f64) {
        self.finite[0] += 0.0 * x;
        self.scale[0] = self.scale[0].max(x.abs());
        self.min_diag = self.min_diag.min(x);
    }

    fn merge(mut self, other: &Self) -> Self {
        for l in 0..8 {
            self.finite[l] += other.finite[l];
            self.scale[l] = self.scale[l].max(other.scale[l]);
            self.diff[l] = self.diff[l].max(other.diff[l]);
            self.excess[l] = self.excess[l].max(other.excess[l]);
        }
        self.min_diag = self.min_diag.min(other.min_diag);
        self
    }

    /// Whether every entry was finite, `max |x|`, `max |K_ij − K_ji|`, `min(0, min K_ii)` and
    /// `max(0, max |K_ij| − sqrt(K_ii K_jj))`.
    fn totals(&self) -> (bool, f64, f64, f64, f64) {
        let finite = self.finite.iter().sum::<f64>().is_finite();
        let max = |v: &[f64; 8]| v.iter().fold(0.0f64, |a, &b| a.max(b));
        (
            finite,
            max(&self.scale),
            max(&self.diff),
            self.min_diag,
            max(&self.excess),
        )
    }
}

/// The entry `(i, j)`, `j < i`, where `score` is largest (the first of ties): names the entry
/// of a failed check, on the second read of the one failing kernel.
fn worst_below_diagonal(n: usize, score: impl Fn(usize, usize) -> f64) -> (usize, usize) {
    let (mut worst, mut at) = (f64::NEG_INFINITY, (0, 0));
    for i in 0..n {
        for j in 0..i {
            let v = score(i, j);
            if v > worst {
                (worst, at) = (v, (i, j));
            }
        }
    }
    at
}

/// The side of the square tiles in which [`DenseStack::validate`] visits a kernel. Long row
/// segments keep the hardware prefetchers streaming a tile and its mirror tile; smaller tiles
/// measured slower (docs/performance.md, "Checking a stack", with the check's cost against one
/// pass over the stack).
const TILE: usize = 512;

/// The 4×4 blocks of a tile strictly below the diagonal: block rows `r0..ie`, block columns
/// `c0..je` (multiples of 4 from tile corners), those with `j < i` (see [`check_tile`]).
struct Blocks {
    n: usize,
    r0: usize,
    ie: usize,
    c0: usize,
    je: usize,
}

impl Blocks {
    /// The pairs of every block into lanes 0..4 of `st`, portably.
    #[inline(always)]
    fn check<T: Element>(&self, k: &[T], roots: &[f64], st: &mut SymmetryStats) {
        let n = self.n;
        let four = |o: usize| -> [f64; 4] {
            let s: &[T; 4] = k[o..o + 4].try_into().expect("four entries");
            s.map(|x| x.to_f64())
        };
        for i in (self.r0..self.ie).step_by(4) {
            for j in (self.c0..self.je.min(i)).step_by(4) {
                let u = [
                    four(j * n + i),
                    four((j + 1) * n + i),
                    four((j + 2) * n + i),
                    four((j + 3) * n + i),
                ];
                for a in 0..4 {
                    let l = four((i + a) * n + j);
                    let ut = [u[0][a], u[1][a], u[2][a], u[3][a]];
                    for q in 0..4 {
                        st.add_pair(q, l[q], ut[q], roots[i + a] * roots[j + q]);
                    }
                }
            }
        }
    }

    /// [`check`](Self::check) with the mirror block transposed in AVX registers: the
    /// portable form compiles to a transpose through memory, measured slower in a standalone
    /// benchmark. Same operations, same lanes, so the same results (a test compares them).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn check_avx2<T: Element>(&self, k: &[T], roots: &[f64], st: &mut SymmetryStats) {
        use std::arch::x86_64::*;
        let n = self.n;
        assert!(k.len() >= n * n && roots.len() >= n);
        // The two element types: f64 (8 bytes) and f32.
        let f64s = std::mem::size_of::<T>() == 8;
        let p = k.as_ptr();
        // SAFETY (every load): offsets of entries of the n×n kernel, four in a row.
        let load = |o: usize| {
            if f64s {
                _mm256_loadu_pd(p.add(o) as *const f64)
            } else {
                _mm256_cvtps_pd(_mm_loadu_ps(p.add(o) as *const f32))
            }
        };
        let lane = |v: &[f64; 8]| _mm256_loadu_pd(v.as_ptr());
        let (mut fin, mut sc) = (lane(&st.finite), lane(&st.scale));
        let (mut df, mut ex) = (lane(&st.diff), lane(&st.excess));
        let abs = |v: __m256d| _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
        let zero = _mm256_setzero_pd();
        // One block row at a time: its 4 rows and the 4 mirror rows of each block are the
        // only streams in flight. Two or four block rows at once (sharing each mirror row's
        // cache lines) measured slower: more row streams than the hardware prefetchers follow
        // (docs/performance.md, "Checking a stack").
        for i in (self.r0..self.ie).step_by(4) {
            for j in (self.c0..self.je.min(i)).step_by(4) {
                let (u0, u1) = (load(j * n + i), load((j + 1) * n + i));
                let (u2, u3) = (load((j + 2) * n + i), load((j + 3) * n + i));
                let (t0, t1) = (_mm256_unpacklo_pd(u0, u1), _mm256_unpackhi_pd(u0, u1));
                let (t2, t3) = (_mm256_unpacklo_pd(u2, u3), _mm256_unpackhi_pd(u2, u3));
                let ut = [
                    _mm256_permute2f128_pd(t0, t2, 0x20),
                    _mm256_permute2f128_pd(t1, t3, 0x20),
                    _mm256_permute2f128_pd(t0, t2, 0x31),
                    _mm256_permute2f128_pd(t1, t3, 0x31),
                ];
                let rj = _mm256_loadu_pd(roots.as_ptr().add(j));
                for (a, &uta) in ut.iter().enumerate() {
                    let x = load((i + a) * n + j);
                    // SymmetryStats::add_pair, four lanes at once (`max` for its `if`s: they
                    // differ only on NaN, which `finite` reports first).
                    let d = _mm256_sub_pd(x, uta);
                    fin = _mm256_fmadd_pd(zero, d, fin);
                    let ax = abs(x);
                    sc = _mm256_max_pd(sc, _mm256_max_pd(ax, abs(uta)));
                    df = _mm256_max_pd(df, abs(d));
                    let bound = _mm256_mul_pd(_mm256_set1_pd(roots[i + a]), rj);
                    ex = _mm256_max_pd(ex, _mm256_sub_pd(ax, bound));
                }
            }
        }
        let store = |v: __m256d, to: &mut [f64; 8]| _mm256_storeu_pd(to.as_mut_ptr(), v);
        store(fin, &mut st.finite);
        store(sc, &mut st.scale);
        store(df, &mut st.diff);
        store(ex, &mut st.excess);
    }
}

/// The tile of rows `r0..r1` and columns `c0..c1` (`c0 ≤ r0`, so on or below the diagonal) of
/// kernel `k`: adds every pair `(K_ij, K_ji)`, `j < i`, to `st` (with `roots[j] = sqrt(K_jj)`
/// for Cauchy–Schwarz), and the diagonal entries when the tile holds them.
///
/// Why 4×4 blocks: the pairs of a block and its mirror block are compared after a transpose
/// in registers, with no store; the tile-sized transposed copy this replaced cost as much as
/// the comparison.
fn check_tile<T: Element>(
    k: &[T],
    n: usize,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    roots: &[f64],
    st: &mut SymmetryStats,
) {
    // The block rows (i) and columns (j) of 4, and where the scalar edges start.
    let (ie, je) = (r0 + (r1 - r0) / 4 * 4, c0 + (c1 - c0) / 4 * 4);
    let blocks = Blocks { n, r0, ie, c0, je };
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::simd::avx2_fma() {
        // SAFETY: the CPU supports AVX2 and FMA.
        unsafe { blocks.check_avx2(k, roots, st) };
    } else {
        blocks.check(k, roots, st);
    }
    #[cfg(not(target_arch = "x86_64"))]
    blocks.check(k, roots, st);
    // The pairs no block took: those of the blocks on the diagonal and of the edges. Row i's
    // blocks cover the columns before its block row `bi` (and before `je`).
    for i in r0..r1 {
        let start = if i < ie {
            (r0 + (i - r0) / 4 * 4).min(je)
        } else {
            c0
        };
        for j in start..c1.min(i) {
            let (x, y) = (k[i * n + j].to_f64(), k[j * n + i].to_f64());
            st.add_pair(0, x, y, roots[i] * roots[j]);
        }
    }
    if c0 == r0 {
        for i in r0..r1 {
            st.add_diagonal(k[i * n + i].to_f64());
        }
    }
}

/// A dense stack `(M, n, n)`, kernel-major and row-major, borrowed (zero-copy from numpy).
#[derive(Debug, Clone, Copy)]
pub struct DenseStack<'a, T: Element> {
    data: &'a [T],
    m: usize,
    n: usize,
    /// Where the entries read are counted ([`DenseStack::counting`]), if anywhere.
    reads: Option<&'a AtomicU64>,
}

impl<'a, T: Element> DenseStack<'a, T> {
    /// Wraps `data` of length `m·n·n`.
    pub fn new(data: &'a [T], m: usize, n: usize) -> Result<Self> {
        if m == 0 || n == 0 || data.len() != m * n * n {
            return Err(MkError::Shape(format!(
                "a kernel stack must have shape (M, n, n) with M, n ≥ 1; got {} values for \
                 M={m}, n={n}",
                data.len()
            )));
        }
        Ok(DenseStack {
            data,
            m,
            n,
            reads: None,
        })
    }

    /// This stack counting into `reads` the entries each of its operations reads (one
    /// relaxed atomic add per operation), which [`KernelStack::entries_read`] reports: the
    /// passes over the stack a fit makes, in the unit of one read of every stored entry
    /// (docs/performance.md, "Passes over the stack").
    pub fn counting(self, reads: &'a AtomicU64) -> Self {
        DenseStack {
            reads: Some(reads),
            ..self
        }
    }

    /// Adds `entries` to the count of entries read, if this stack counts.
    #[inline]
    fn count(&self, entries: usize) {
        if let Some(r) = self.reads {
            r.fetch_add(entries as u64, Ordering::Relaxed);
        }
    }

    /// Kernel `m` as a row-major slice.
    #[inline]
    pub fn kernel(&self, m: usize) -> &'a [T] {
        &self.data[m * self.n * self.n..(m + 1) * self.n * self.n]
    }

    /// Checks that every entry is finite, every kernel symmetric within `rtol · max|K_m|`, no
    /// diagonal entry below `−rtol · max|K_m|` and no `|K_ij|` above `sqrt(K_ii K_jj)` by more
    /// than `max(rtol, 16ε) · max|K_m|` (either could not be PSD); names the first offending
    /// kernel and its entry (the largest asymmetry, the most negative diagonal, the largest
    /// excess).
    ///
    /// One read of the stack, parallel over kernels and block rows: each kernel is visited in
    /// `TILE×TILE` tiles on and below the diagonal, each compared with its mirror tile
    /// (`check_tile`). Only a failing kernel is read again, to name its entry.
    pub fn validate(&self, rtol: f64) -> Result<()> {
        self.check(rtol, true)
    }

    /// [`validate`](Self::validate) without the two PSD conditions: finite and symmetric
    /// only (a raw kernel that normalisation, e.g. centring, may still make PSD).
    pub fn validate_symmetric(&self, rtol: f64) -> Result<()> {
        self.check(rtol, false)
    }

    /// `sqrt(max(K_ii, 0))` of every kernel, kernel after kernel (`M·n` strided reads).
    fn roots(&self) -> Vec<f64> {
        let n = self.n;
        (0..self.m * n)
            .into_par_iter()
            .map(|w| {
                let (k, i) = (self.kernel(w / n), w % n);
                k[i * n + i].to_f64().max(0.0).sqrt()
            })
            .collect()
    }

    fn check(&self, rtol: f64, psd: bool) -> Result<()> {
        let n = self.n;
        // Every pair with its mirror, and the diagonal twice (the roots).
        self.count(self.m * n * (n + 1));
        let nb = n.div_ceil(TILE);
        let roots = self.roots();
        let parts: Vec<SymmetryStats> = (0..self.m * nb)
            .into_par_iter()
            .map(|w| {
                let (k, bi) = (w / nb, w % nb);
                let (kernel, root) = (self.kernel(k), &roots[k * n..(k + 1) * n]);
                let r = (bi * TILE, ((bi + 1) * TILE).min(n));
                let mut st = SymmetryStats::default();
                for bj in 0..=bi {
                    let c = (bj * TILE, ((bj + 1) * TILE).min(n));
                    check_tile(kernel, n, r, c, root, &mut st);
                }
                st
            })
            .collect();
        let stats = parts
            .chunks(nb)
            .map(|p| p.iter().fold(SymmetryStats::default(), |a, b| a.merge(b)))
            .collect::<Vec<_>>();
        self.verdict(&stats, &roots, rtol, psd)
    }

    /// The error of the first kernel whose `stats` fail a check (see
    /// [`validate`](Self::validate)), naming its worst entry.
    fn verdict(&self, stats: &[SymmetryStats], roots: &[f64], rtol: f64, psd: bool) -> Result<()> {
        let n = self.n;
        for (m, st) in stats.iter().enumerate() {
            let (finite, scale, diff, min_diag, excess) = st.totals();
            let k = self.kernel(m);
            if !finite {
                // None: two finite entries whose difference overflows, an asymmetry (below).
                if let Some(at) = k.iter().position(|x| !x.to_f64().is_finite()) {
                    return Err(MkError::NonFinite {
                        what: format!("kernel {m}"),
                        kernel: Some(m),
                        entry: Some((at / n, at % n)),
                    });
                }
            }
            if diff > rtol * scale {
                let at = worst_below_diagonal(n, |i, j| {
                    (k[i * n + j].to_f64() - k[j * n + i].to_f64()).abs()
                });
                let (i, j) = at;
                return Err(MkError::NotSymmetric {
                    kernel: m,
                    entry: at,
                    value: k[i * n + j].to_f64(),
                    mirror: k[j * n + i].to_f64(),
                });
            }
            if !psd {
                continue;
            }
            // A PSD matrix has K_ii = e_iᵀ K e_i ≥ 0; below −rtol·scale it is not rounding.
            if min_diag < -rtol * scale {
                let i = (0..n)
                    .min_by(|&a, &b| k[a * n + a].to_f64().total_cmp(&k[b * n + b].to_f64()))
                    .unwrap_or(0);
                return Err(MkError::NotPsd {
                    kernel: m,
                    entry: (i, i),
                    reason: format!(
                        "its diagonal entry K[{i},{i}] = {} is negative (K_ii = e_iᵀ K e_i ≥ 0 \
                         for a PSD kernel); fix the kernel, or shift it by adding c·I",
                        k[i * n + i].to_f64()
                    ),
                });
            }
            // Every PSD kernel has |K_ij| ≤ sqrt(K_ii K_jj) (Cauchy–Schwarz); rounding of the
            // stack's own type aside, a larger entry means the kernel is not PSD.
            if excess > rtol.max(16.0 * T::EPSILON) * scale {
                let root = &roots[m * n..(m + 1) * n];
                let at =
                    worst_below_diagonal(n, |i, j| k[i * n + j].to_f64().abs() - root[i] * root[j]);
                let (i, j) = at;
                return Err(MkError::NotPsd {
                    kernel: m,
                    entry: at,
                    reason: format!(
                        "|K[{i},{j}]| = {} exceeds sqrt(K[{i},{i}] K[{j},{j}]) = {} (every PSD \
                         kernel satisfies Cauchy–Schwarz)",
                        k[i * n + j].to_f64().abs(),
                        root[i] * root[j]
                    ),
                });
            }
        }
        Ok(())
    }

    /// `vᵀ K_m v` from the upper triangle, rows `nz` (the non-zeros of `v`).
    #[inline]
    fn quad_one(&self, m: usize, v: &[f64], nz: &[usize]) -> f64 {
        quad_upper_dispatch(self.kernel(m), self.n, v, nz)
    }
}

/// `vᵀKv = Σ_i K_ii v_i² + 2 Σ_i v_i Σ_{j>i} K_ij v_j`: half the bytes of a full pass, and
/// only the rows `nz` where `v_i ≠ 0` (a solver's coefficient vector is often sparse: SVM
/// duals are zero off the support vectors).
/// Each row of the triangle starts mid-row, where the hardware prefetcher has lost the
/// stream, so the start of the row after next is prefetched explicitly.
#[inline(always)]
fn quad_upper<T: Element>(k: &[T], n: usize, v: &[f64], nz: &[usize]) -> f64 {
    let mut diag = 0.0;
    let mut off = 0.0;
    for (idx, &i) in nz.iter().enumerate() {
        if let Some(&next) = nz.get(idx + 2) {
            prefetch(&k[next * n + next..(next + 1) * n]);
        }
        let row = &k[i * n..(i + 1) * n];
        diag += row[i].to_f64() * v[i] * v[i];
        off += v[i] * dot(&row[i + 1..], &v[i + 1..]);
    }
    diag + 2.0 * off
}

avx2_dispatch! {
    fn quad_upper_dispatch<T>(k: &[T], n: usize, v: &[f64], nz: &[usize]) -> f64 = quad_upper;
}

/// [`quad_upper`] for the `b = out.len()` vectors of `vs` in one pass over the kernel: each
/// row is read from memory once and stays in cache for every vector (the shared multiclass
/// fit passes ten or twenty). Every row, also where every vector is zero: a non-finite entry
/// anywhere makes the forms non-finite, which is how the solvers see a stack let through with
/// `check_input=False`.
#[inline(always)]
fn quad_batch_upper<T: Element>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) {
    let b = out.len();
    let mut diag = vec![0.0f64; b];
    let mut off = vec![0.0f64; b];
    for i in 0..n {
        if i + 2 < n {
            prefetch(&k[(i + 2) * n + i + 2..(i + 3) * n]);
        }
        let row = &k[i * n..(i + 1) * n];
        let kii = row[i].to_f64();
        for (j, v) in vs.chunks_exact(n).enumerate() {
            diag[j] += kii * v[i] * v[i];
            off[j] += v[i] * dot(&row[i + 1..], &v[i + 1..]);
        }
    }
    for j in 0..b {
        out[j] = diag[j] + 2.0 * off[j];
    }
}

avx2_dispatch! {
    fn quad_batch_dispatch<T>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) = quad_batch_upper;
}

/// `K v_k` for the `b` vectors of `vs` from the upper triangle, half the bytes of a full pass:
/// row segment `i` gives `(Kv)_i += K[i, i..]·v[i..]` and `(Kv)[i+1..] += v_i K[i, i+1..]`
/// (symmetry), while it is in cache for every vector.
#[inline(always)]
fn matvecs_upper<T: Element>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    for i in 0..n {
        if i + 2 < n {
            prefetch(&k[(i + 2) * n + i + 2..(i + 3) * n]);
        }
        let row = &k[i * n + i..(i + 1) * n];
        for (v, o) in vs.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
            o[i] += row[0].to_f64() * v[i] + dot(&row[1..], &v[i + 1..]);
            let vi = v[i];
            for (ol, x) in o[i + 1..].iter_mut().zip(&row[1..]) {
                *ol += vi * x.to_f64();
            }
        }
    }
}

avx2_dispatch! {
    fn matvecs_dispatch<T>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) = matvecs_upper;
}

/// `out[r·s + j] = K[r, :]·v_j` for a block of full rows `k` of an `n`-column matrix and the
/// `s` vectors of `vs` (one after another): each row is read once, in cache for every vector.
#[inline(always)]
fn rows_times<T: Element>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) {
    let s = vs.len() / n.max(1);
    for (row, o) in k.chunks_exact(n.max(1)).zip(out.chunks_exact_mut(s.max(1))) {
        for (oj, v) in o.iter_mut().zip(vs.chunks_exact(n.max(1))) {
            *oj = dot(row, v);
        }
    }
}

avx2_dispatch! {
    fn rows_times_dispatch<T>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) = rows_times;
}

/// `out_j = K v_j` for the vectors `v_j` stored one after another in `vs`, with a dense
/// row-major `n × n` matrix `K`: parallel over blocks of rows, each row read once for all the
/// vectors (the products are memory-bound; a matrix-product routine would first copy `K`
/// into its own blocks on every call). `out` is laid out as `vs`.
pub fn dense_matvecs(k: &[f64], n: usize, vs: &[f64], out: &mut [f64]) {
    const ROWS: usize = 16;
    let s = vs.len() / n.max(1);
    if s == 1 {
        out.par_chunks_mut(ROWS)
            .zip(k.par_chunks(ROWS * n.max(1)))
            .for_each(|(o, kb)| rows_times_dispatch(kb, n, vs, o));
        return;
    }
    let mut rows = vec![0.0; n * s];
    rows.par_chunks_mut(ROWS * s)
        .zip(k.par_chunks(ROWS * n.max(1)))
        .for_each(|(o, kb)| rows_times_dispatch(kb, n, vs, o));
    for (i, r) in rows.chunks_exact(s).enumerate() {
        for (j, v) in r.iter().enumerate() {
            out[j * n + i] = *v;
        }
    }
}

/// `row = Σ_{(m, t) ∈ active} t · K_m[i, from..from + row.len()]`, kernel after kernel: one
/// row segment of `K_θ` (of its upper triangle in [`KernelStack::combine`]). Each kernel's
/// segment starts a new stream, so the next kernel's is prefetched.
#[inline(always)]
fn combine_row<T: Element>(
    s: &DenseStack<'_, T>,
    active: &[(usize, f64)],
    i: usize,
    from: usize,
    row: &mut [f64],
) {
    let (n, len) = (s.n, row.len());
    let start = i * n + from;
    row.fill(0.0);
    for (a, &(m, t)) in active.iter().enumerate() {
        if let Some(&(next, _)) = active.get(a + 1) {
            prefetch(&s.kernel(next)[start..start + len]);
        }
        let src = &s.kernel(m)[start..start + len];
        for (o, x) in row.iter_mut().zip(src) {
            *o += t * x.to_f64();
        }
    }
}

avx2_dispatch! {
    fn combine_row_dispatch<T>(
        s: &DenseStack<'_, T>,
        active: &[(usize, f64)],
        i: usize,
        from: usize,
        row: &mut [f64],
    ) = combine_row;
}

/// `acc += t · Σ_{j ∈ nz} v_j K[j, :]` over the rows `nz` of one kernel.
#[inline(always)]
fn rows_axpy<T: Element>(k: &[T], n: usize, nz: &[usize], v: &[f64], t: f64, acc: &mut [f64]) {
    for (idx, &j) in nz.iter().enumerate() {
        if let Some(&next) = nz.get(idx + 1) {
            prefetch(&k[next * n..(next + 1) * n]);
        }
        let c = t * v[j];
        for (o, x) in acc.iter_mut().zip(&k[j * n..(j + 1) * n]) {
            *o += c * x.to_f64();
        }
    }
}

avx2_dispatch! {
    fn rows_axpy_dispatch<T>(
        k: &[T],
        n: usize,
        nz: &[usize],
        v: &[f64],
        t: f64,
        acc: &mut [f64],
    ) = rows_axpy;
}

/// Chunks of an [`ordered_sum`]: enough to balance the threads of a small machine.
pub(crate) const SUM_CHUNKS: usize = 16;

/// `Σ_c f(items[bounds[c]..bounds[c+1]])`, each term a vector of `len` that `f` adds into,
/// computed in parallel over the chunks and summed in chunk order: unlike a `fold`/`reduce`,
/// whose order depends on scheduling, the result is the same on every run and thread count.
pub(crate) fn ordered_sum<I: Sync>(
    items: &[I],
    bounds: &[usize],
    len: usize,
    f: impl Fn(&[I], &mut [f64]) + Sync,
) -> Vec<f64> {
    let parts: Vec<Vec<f64>> = bounds
        .par_windows(2)
        .map(|r| {
            let mut acc = vec![0.0; len];
            f(&items[r[0]..r[1]], &mut acc);
            acc
        })
        .collect();
    let mut out = vec![0.0; len];
    for part in &parts {
        for (o, x) in out.iter_mut().zip(part) {
            *o += x;
        }
    }
    out
}

/// An empty vector with room for `len` values, in memory asked to be backed by huge pages.
/// The room is mapped page by page on first write, where 4 KiB page faults can cost more than
/// the copy that fills it; room never written costs nothing. (A generic zero fill would write,
/// and so map, all of it.)
pub(crate) fn with_huge_capacity<T: Element>(len: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(len);
    advise_huge(v.as_ptr(), len);
    v
}

/// `len` zeros in memory asked to be backed by huge pages, for an output that is then written
/// in full (a Gram stack): a large zeroed allocation is fresh memory the operating system maps
/// as zeros on first write (nothing writes the zeros), and huge pages make that first write
/// 512 times fewer page faults.
pub(crate) fn zeros_huge<T: Element>(len: usize) -> Vec<T> {
    let v = vec![T::default(); len];
    advise_huge(v.as_ptr(), len);
    v
}

/// Asks for the whole huge pages inside the `len` values from `start` to be backed by huge
/// pages (Linux; elsewhere nothing).
fn advise_huge<T>(start: *const T, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let (start, bytes) = (start as usize, len * std::mem::size_of::<T>());
        let first = start.div_ceil(HUGE) * HUGE;
        let last = (start + bytes) / HUGE * HUGE;
        if last > first {
            // SAFETY: the range lies inside the caller's allocation; the advice changes only
            // how the kernel backs it, never its contents. Failure is harmless (4 KiB pages).
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// Copies the upper triangle of the row-major `n×n` matrix `a` onto its lower triangle (or,
/// with `from_upper = false`, the lower onto the upper), in `B×B` tiles: a strided column read
/// per element would touch a cache line per element.
pub(crate) fn mirror<T: Copy + Send + Sync>(a: &mut [T], n: usize, from_upper: bool) {
    const B: usize = 32;
    assert!(a.len() >= n * n);
    let base = a.as_mut_ptr() as usize;
    (0..n.div_ceil(B)).into_par_iter().for_each(|jb| {
        let p = base as *mut T;
        let rows = jb * B..((jb + 1) * B).min(n);
        for ib in (0..=jb).map(|b| b * B) {
            for j in rows.clone() {
                for i in ib..(ib + B).min(j) {
                    let (lo, up) = (j * n + i, i * n + j);
                    let (dst, src) = if from_upper { (lo, up) } else { (up, lo) };
                    // SAFETY: task `jb` only touches the pairs (a[j][i], a[i][j]) with i < j of
                    // its own j: it writes one of them and reads the other, which no task
                    // writes; all in bounds.
                    unsafe { *p.add(dst) = *p.add(src) };
                }
            }
        }
    });
}

/// The indices of the non-zero entries of `v`.
pub(crate) fn nonzeros(v: &[f64]) -> Vec<usize> {
    (0..v.len()).filter(|&i| v[i] != 0.0).collect()
}

/// The kernels with a non-zero weight in `theta`, with their weights: the terms of `K_θ`.
pub(crate) fn weighted(theta: &[f64]) -> Vec<(usize, f64)> {
    nonzeros(theta).into_iter().map(|m| (m, theta[m])).collect()
}

impl<T: Element> KernelStack for DenseStack<'_, T> {
    fn n(&self) -> usize {
        self.n
    }

    fn m(&self) -> usize {
        self.m
    }

    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]) {
        let nz = nonzeros(v);
        // Row i of the upper triangle from its diagonal: n − i entries.
        self.count(idx.len() * nz.iter().map(|&i| self.n - i).sum::<usize>());
        out.par_iter_mut()
            .zip(idx.par_iter())
            .for_each(|(o, &m)| *o = self.quad_one(m, v, &nz));
    }

    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        let n = self.n;
        let b = vs.len() / n;
        self.count(idx.len() * n * (n + 1) / 2);
        out.par_chunks_mut(b)
            .zip(idx.par_iter())
            .for_each(|(o, &m)| quad_batch_dispatch(self.kernel(m), n, vs, o));
    }

    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        let n = self.n;
        let k = self.kernel(m);
        self.count(n * n);
        out.par_iter_mut()
            .enumerate()
            .for_each(|(i, o)| *o = dot(&k[i * n..(i + 1) * n], v));
    }

    fn matvecs_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        // Parallel over kernels, each read once from its upper triangle (the bytes of its
        // quadratic form) for all vectors.
        let n = self.n.max(1);
        let b = vs.len() / n;
        self.count(idx.len() * n * (n + 1) / 2);
        out.par_chunks_mut(b * n)
            .zip(idx.par_iter())
            .for_each(|(o, &m)| matvecs_dispatch(self.kernel(m), self.n, vs, o));
    }

    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        let n = self.n;
        let active = weighted(&theta[..self.m]);
        self.count(active.len() * n * (n + 1) / 2);
        // Upper triangle only (half the bytes of a full pass), parallel over rows: each row
        // sums the same row segment of every active kernel; then mirror.
        out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            combine_row_dispatch(self, &active, i, i, &mut row[i..]);
        });
        mirror(out, n, true);
    }

    fn combined_matvec(&self, theta: &[f64], v: &[f64], out: &mut [f64]) {
        let n = self.n;
        let nz = nonzeros(v);
        let active = nonzeros(&theta[..self.m]);
        self.count(active.len() * nz.len() * n);
        // By symmetry `K_m v = Σ_{j: v_j ≠ 0} v_j K_m[j, :]`: only the rows where `v` is
        // non-zero are read, each contiguously. Parallel over chunks of kernels.
        let bounds: Vec<usize> = (0..=SUM_CHUNKS)
            .map(|c| c * active.len() / SUM_CHUNKS)
            .collect();
        let acc = ordered_sum(&active, &bounds, n, |ms, acc| {
            for &m in ms {
                rows_axpy_dispatch(self.kernel(m), n, &nz, v, theta[m], acc);
            }
        });
        out.copy_from_slice(&acc);
    }

    fn combined_column(&self, weights: &[(usize, f64)], i: usize, out: &mut [f64]) {
        // Row i (symmetry), summed kernel after kernel as `combine` sums each entry, so the
        // column equals the formed `K_θ`'s on a symmetric stack. Parallel over segments of
        // the row: each thread streams its segment of every kernel's row.
        self.count(weights.len() * self.n);
        let seg = self.n.div_ceil(rayon::current_num_threads()).max(64);
        out.par_chunks_mut(seg).enumerate().for_each(|(c, o)| {
            combine_row_dispatch(self, weights, i, c * seg, o);
        });
    }

    fn add_matvecs(&self, v: &[f64], out: &mut [f64]) {
        let n = self.n;
        let nz = nonzeros(v);
        if nz.is_empty() {
            return;
        }
        // The rows of the non-zeros cost |nz|·n entries, the upper triangle n²/2, but its
        // short row segments cost more per entry than whole rows: the triangle only past
        // 3n/4 (docs/performance.md, "ℓp steps on per-kernel gradient caches").
        let upper = 4 * nz.len() > 3 * n;
        self.count(self.m * if upper { n * (n + 1) / 2 } else { nz.len() * n });
        out.par_chunks_mut(n).enumerate().for_each(|(m, o)| {
            let k = self.kernel(m);
            if upper {
                let mut kv = vec![0.0; n];
                matvecs_dispatch(k, n, v, &mut kv);
                o.iter_mut().zip(&kv).for_each(|(o, x)| *o += x);
            } else {
                rows_axpy_dispatch(k, n, &nz, v, 1.0, o);
            }
        });
    }

    fn column_at(&self, m: usize, i: usize, rows: &[usize], out: &mut [f64]) {
        // Symmetric: column i is row i, one contiguous read. (Copying the row to a buffer
        // first, or prefetching it whole, measured no faster.)
        let row = &self.kernel(m)[i * self.n..(i + 1) * self.n];
        self.count(rows.len());
        for (o, &r) in out.iter_mut().zip(rows) {
            *o = row[r].to_f64();
        }
    }

    fn single_precision(&self) -> bool {
        std::mem::size_of::<T>() == 4
    }

    fn stores_entries(&self) -> bool {
        true
    }

    fn entries_read(&self) -> Option<u64> {
        self.reads.map(|r| r.load(Ordering::Relaxed))
    }

    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        // Symmetric: column i is row i.
        let n = self.n;
        self.count(n);
        for (o, s) in out.iter_mut().zip(&self.kernel(m)[i * n..(i + 1) * n]) {
            *o = s.to_f64();
        }
    }

    fn add_column(&self, m: usize, i: usize, c: f64, out: &mut [f64]) {
        let n = self.n;
        self.count(n);
        for (o, s) in out.iter_mut().zip(&self.kernel(m)[i * n..(i + 1) * n]) {
            *o += c * s.to_f64();
        }
    }

    fn diag(&self, m: usize, out: &mut [f64]) {
        let n = self.n;
        let k = self.kernel(m);
        self.count(n);
        for (i, o) in out.iter_mut().enumerate().take(n) {
            *o = k[i * n + i].to_f64();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernels::LowRankStack;

    /// `m` random PSD kernels `X_k X_kᵀ` of rank 3 on `n` points, row-major.
    pub(crate) fn kernels(m: usize, n: usize) -> Vec<f64> {
        let mut s = 7u64;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut data = vec![0.0; m * n * n];
        for k in 0..m {
            let x: Vec<f64> = (0..n * 3).map(|_| rnd()).collect();
            for i in 0..n {
                for j in 0..n {
                    data[k * n * n + i * n + j] =
                        (0..3).map(|d| x[i * 3 + d] * x[j * 3 + d]).sum::<f64>();
                }
            }
        }
        data
    }

    /// Every entry of every kernel, through `column`.
    fn dense_of(s: &dyn KernelStack) -> Vec<f64> {
        let n = s.n();
        let mut out = vec![0.0; s.m() * n * n];
        for m in 0..s.m() {
            for i in 0..n {
                s.column(m, i, &mut out[m * n * n + i * n..m * n * n + (i + 1) * n]);
            }
        }
        out
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    /// A counting stack adds, for each operation, the entries that operation reads by its
    /// definition: the upper triangle of each weighted kernel for `combine`, the rows of the
    /// non-zeros from their diagonal for the forms, a row per column, both triangles and the
    /// diagonal for the check; a stack that does not count reports None.
    #[test]
    fn a_counting_stack_counts_the_entries_each_operation_reads() {
        let (m, n) = (3, 37);
        let data = kernels(m, n);
        let plain = DenseStack::new(&data, m, n).unwrap();
        assert_eq!(plain.entries_read(), None);
        let reads = AtomicU64::new(0);
        let s = plain.counting(&reads);
        let read = |f: &dyn Fn()| {
            let before = s.entries_read().unwrap();
            f();
            s.entries_read().unwrap() - before
        };
        let tri = (n * (n + 1) / 2) as u64;
        let mut out = vec![0.0; n * n];
        assert_eq!(
            read(&|| s.combine(&[0.5, 0.0, 2.0], &mut out.clone())),
            2 * tri
        );
        let v: Vec<f64> = (0..n).map(|i| if i % 4 == 0 { 1.0 } else { 0.0 }).collect();
        let rows: u64 = (0..n).filter(|i| i % 4 == 0).map(|i| (n - i) as u64).sum();
        let mut forms = vec![0.0; m];
        assert_eq!(
            read(&|| s.quad_forms(&v, &mut forms.clone())),
            m as u64 * rows
        );
        let w = [(0, 1.0), (2, 0.5)];
        assert_eq!(
            read(&|| s.combined_column(&w, 5, &mut out.clone()[..n])),
            2 * n as u64
        );
        assert_eq!(
            read(&|| s.validate(1e-12).unwrap()),
            (m * n * (n + 1)) as u64
        );
        s.quad_forms(&v, &mut forms);
        out.truncate(n);
        s.column(1, 3, &mut out);
        assert_eq!(
            reads.into_inner(),
            (2 * tri + 2 * m as u64 * rows + 2 * n as u64 + (m * n * (n + 1)) as u64 + n as u64)
        );
    }

    /// `combine`, `combined_matvec` and `matvecs` against the naive sums, for f64, f32 and low-rank
    /// stacks, on sizes that are not multiples of the SIMD width or the mirror's tile.
    #[test]
    fn combine_and_matvec_match_the_naive_versions() {
        let (m, n) = (4, 70);
        let d64 = kernels(m, n);
        let d32: Vec<f32> = d64.iter().map(|&x| x as f32).collect();
        let s64 = DenseStack::new(&d64, m, n).unwrap();
        let s32 = DenseStack::new(&d32, m, n).unwrap();
        let lr = LowRankStack::from_dense(&s64, 0.0, n).unwrap();
        let theta = [0.5, 0.0, 2.0, 1.25];
        let mut v = vec![0.0; n];
        for (i, x) in v.iter_mut().enumerate() {
            if i % 3 != 1 {
                *x = (i as f64 * 0.37).sin();
            }
        }
        let stacks: [(&dyn KernelStack, f64); 3] = [(&s64, 1e-12), (&s32, 1e-5), (&lr, 1e-8)];
        for (s, tol) in stacks {
            let full = dense_of(s);
            let mut naive = vec![0.0; n * n];
            for (k, &t) in theta.iter().enumerate() {
                for (o, x) in naive.iter_mut().zip(&full[k * n * n..(k + 1) * n * n]) {
                    *o += t * x;
                }
            }
            let mut got = vec![0.0; n * n];
            s.combine(&theta, &mut got);
            close(&got, &naive, tol);
            let want: Vec<f64> = (0..n)
                .map(|i| (0..n).map(|j| naive[i * n + j] * v[j]).sum())
                .collect();
            let mut mv = vec![0.0; n];
            s.combined_matvec(&theta, &v, &mut mv);
            close(&mv, &want, tol);
            // Two vectors through every kernel at once, against the naive products.
            let w: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
            let vs = [v.clone(), w].concat();
            let mut all = vec![0.0; m * 2 * n];
            s.matvecs(&vs, &mut all);
            for (mk, got) in all.chunks_exact(n).enumerate() {
                let (k, x) = (mk / 2, &vs[(mk % 2) * n..(mk % 2 + 1) * n]);
                let want: Vec<f64> = (0..n)
                    .map(|i| (0..n).map(|j| full[k * n * n + i * n + j] * x[j]).sum())
                    .collect();
                close(got, &want, tol);
            }
        }
    }

    /// `combined_column` equals the column of the formed `K_θ` exactly on a symmetric stack
    /// (same sum, kernel after kernel), and `add_matvecs` adds `K_m v` to every kernel's
    /// vector from the rows of a sparse `v` and from the upper triangle of a dense one.
    #[test]
    fn columns_and_added_products_match_the_formed_kernel() {
        let (m, n) = (4, 150);
        let d64 = kernels(m, n);
        let s64 = DenseStack::new(&d64, m, n).unwrap();
        let theta = [0.5, 0.0, 2.0, 1.25];
        let mut formed = vec![0.0; n * n];
        s64.combine(&theta, &mut formed);
        let mut col = vec![0.0; n];
        for i in [0, 7, 64, n - 1] {
            s64.combined_column(&weighted(&theta), i, &mut col);
            assert_eq!(col, formed[i * n..(i + 1) * n]);
        }
        let full = dense_of(&s64);
        for every in [5, 1] {
            // Every 5th entry: the rows; every entry: the upper triangle.
            let v: Vec<f64> = (0..n)
                .map(|i| {
                    if i % every == 0 {
                        (i as f64).sin()
                    } else {
                        0.0
                    }
                })
                .collect();
            let mut got: Vec<f64> = (0..m * n).map(|i| i as f64).collect();
            s64.add_matvecs(&v, &mut got);
            for (k, g) in got.chunks_exact(n).enumerate() {
                let want: Vec<f64> = (0..n)
                    .map(|i| {
                        let kv: f64 = (0..n).map(|j| full[k * n * n + i * n + j] * v[j]).sum();
                        (k * n + i) as f64 + kv
                    })
                    .collect();
                close(g, &want, 1e-12);
            }
        }
    }

    /// The tiled check against single entries changed anywhere: in a diagonal or an
    /// off-diagonal tile, above or below the diagonal, in the last, partial tile; for f64 and
    /// f32 stacks; and an asymmetry within the tolerance passes.
    /// Every pair is compared, wherever it falls: inside a 4×4 block, on a diagonal block,
    /// on the scalar edges of a tile, or across tiles (n = 13: every pair of one tile;
    /// n = 530: two tiles, 530 = 132·4 + 2, pairs at their seams).
    #[test]
    fn validate_compares_every_pair_once_whatever_its_block() {
        let all: Vec<(usize, usize)> = (0..13).flat_map(|i| (0..i).map(move |j| (i, j))).collect();
        let seams = vec![
            (512, 511),
            (513, 512),
            (515, 508),
            (529, 0),
            (529, 528),
            (528, 527),
            (520, 100),
            (300, 299),
            (511, 3),
            (600 - 71, 510),
        ];
        for (n, pairs) in [(13, all), (530, seams)] {
            let good = kernels(1, n);
            for (i, j) in pairs {
                for (a, b) in [(i, j), (j, i)] {
                    let mut bad = good.clone();
                    bad[a * n + b] += 1e-3;
                    let e = DenseStack::new(&bad, 1, n).unwrap().validate(1e-8);
                    let msg = e.unwrap_err().to_string();
                    assert!(
                        msg.contains(&format!("K[{i},{j}]")),
                        "n {n} ({a}, {b}): {msg}"
                    );
                }
            }
        }
    }

    /// The subset products read the upper triangle only, and equal the full-row `matvec`.
    /// The row-blocked products equal the naive ones, for one and several vectors and a size
    /// that is not a multiple of the row block.
    #[test]
    fn dense_matvecs_equal_the_naive_products() {
        let n = 37;
        let k: Vec<f64> = (0..n * n)
            .map(|i| ((i * 31 % 17) as f64 - 8.0) / 5.0)
            .collect();
        for s in [1, 3] {
            let vs: Vec<f64> = (0..s * n)
                .map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0)
                .collect();
            let mut out = vec![0.0; s * n];
            dense_matvecs(&k, n, &vs, &mut out);
            for j in 0..s {
                for i in 0..n {
                    let want: f64 = (0..n).map(|l| k[i * n + l] * vs[j * n + l]).sum();
                    assert!((out[j * n + i] - want).abs() <= 1e-12 * (1.0 + want.abs()));
                }
            }
        }
    }

    #[test]
    fn matvecs_subset_equals_matvec() {
        let (m, n) = (4, 37);
        let data = kernels(m, n);
        let s = DenseStack::new(&data, m, n).unwrap();
        let v: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let idx = [3, 0, 2];
        let mut out = vec![0.0; idx.len() * n];
        s.matvecs_subset(&v, &idx, &mut out);
        for (k, &mk) in idx.iter().enumerate() {
            let mut one = vec![0.0; n];
            s.matvec(mk, &v, &mut one);
            for (a, b) in out[k * n..(k + 1) * n].iter().zip(&one) {
                assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} {b}");
            }
        }
    }

    /// The AVX2 block loop computes what the portable one does, lane for lane.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_blocks_match_the_portable_ones() {
        if !crate::kernels::simd::avx2_fma() {
            return;
        }
        let n = 150;
        let mut k = kernels(1, n);
        // An asymmetry and an entry beyond Cauchy–Schwarz inside the blocks.
        k[100 * n + 7] += 0.25;
        k[100 * n + 40] = 50.0;
        k[40 * n + 100] = 50.0;
        let k32: Vec<f32> = k.iter().map(|&x| x as f32).collect();
        let roots: Vec<f64> = (0..n).map(|i| k[i * n + i].max(0.0).sqrt()).collect();
        let blocks = Blocks {
            n,
            r0: 64,
            ie: 148,
            c0: 0,
            je: 148,
        };
        let (mut a, mut b) = (SymmetryStats::default(), SymmetryStats::default());
        blocks.check(&k, &roots, &mut a);
        // SAFETY: the CPU supports AVX2 and FMA (checked above).
        unsafe { blocks.check_avx2(&k, &roots, &mut b) };
        assert_eq!(a.totals(), b.totals());
        assert!(
            a.totals().2 > 0.2 && a.totals().4 > 40.0,
            "{:?}",
            a.totals()
        );
        let (mut a, mut b) = (SymmetryStats::default(), SymmetryStats::default());
        blocks.check(&k32, &roots, &mut a);
        unsafe { blocks.check_avx2(&k32, &roots, &mut b) };
        assert_eq!(a.totals(), b.totals());
        let mut bad = k.clone();
        bad[120 * n + 33] = f64::NAN;
        let (mut a, mut b) = (SymmetryStats::default(), SymmetryStats::default());
        blocks.check(&bad, &roots, &mut a);
        unsafe { blocks.check_avx2(&bad, &roots, &mut b) };
        assert!(!a.totals().0 && !b.totals().0);
    }

    #[test]
    fn validate_finds_every_asymmetry_and_non_finite_entry() {
        let (m, n) = (3, 150);
        let good = kernels(m, n);
        assert!(DenseStack::new(&good, m, n)
            .unwrap()
            .validate(1e-12)
            .is_ok());
        let scale = good[n * n..2 * n * n]
            .iter()
            .fold(0.0f64, |a, b| a.max(b.abs()));
        for (i, j) in [
            (3, 1),
            (1, 3),
            (100, 7),
            (7, 100),
            (149, 130),
            (64, 63),
            (149, 0),
        ] {
            let mut bad = good.clone();
            bad[n * n + i * n + j] += 1e-6 * scale;
            let e = DenseStack::new(&bad, m, n).unwrap().validate(1e-8);
            let msg = e.unwrap_err().to_string();
            let (lo, hi) = (i.max(j), i.min(j));
            assert!(
                msg.contains("kernel 1 is not symmetric") && msg.contains(&format!("K[{lo},{hi}]")),
                "({i}, {j}): {msg}"
            );
            assert!(DenseStack::new(&bad, m, n).unwrap().validate(1e-5).is_ok());
            let bad32: Vec<f32> = bad.iter().map(|&x| x as f32).collect();
            let e = DenseStack::new(&bad32, m, n).unwrap().validate(1e-8);
            assert!(e
                .unwrap_err()
                .to_string()
                .contains("kernel 1 is not symmetric"));
        }
        for (i, j) in [(0, 0), (5, 77), (149, 149), (120, 140)] {
            for x in [f64::NAN, f64::INFINITY] {
                let mut bad = good.clone();
                bad[2 * n * n + i * n + j] = x;
                let e = DenseStack::new(&bad, m, n).unwrap().validate(1e-8);
                assert!(e.unwrap_err().to_string().contains("kernel 2 contains NaN"));
            }
        }
    }

    /// The parallel sums give the same bits on every thread count: a fit is reproducible.
    #[test]
    fn parallel_sums_do_not_depend_on_the_threads() {
        use crate::kernels::point_subset;
        use crate::parallel::with_pool;
        let (m, n) = (37, 90);
        let d64 = kernels(m, n);
        let s = DenseStack::new(&d64, m, n).unwrap();
        let theta: Vec<f64> = (0..m).map(|k| 1.0 + (k as f64).sin()).collect();
        let v: Vec<f64> = (0..n).map(|i| (i as f64 * 1.3).cos()).collect();
        let idx: Vec<usize> = (0..n).rev().step_by(2).collect();
        let run = |threads| {
            with_pool(threads, || {
                let mut mv = vec![0.0; n];
                s.combined_matvec(&theta, &v, &mut mv);
                let sub = point_subset(&s, &idx, idx.len());
                let mut q = vec![0.0; m];
                sub.stack().quad_forms(&v[..idx.len()], &mut q);
                (mv, q)
            })
            .unwrap()
        };
        let one = run(1);
        for threads in [2, 3, 5] {
            assert_eq!(run(threads), one);
        }
    }
}
