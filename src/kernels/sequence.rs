//! Kernels on sequences (strings of bytes, any alphabet): the spectrum kernel and the
//! weighted-degree kernel with shifts (docs/mathematics.md §7).
//!
//! A column of sequences is one byte buffer and `n + 1` offsets ([`SeqColumn`]), never one
//! allocation per string. A [`SeqKernel`] between the sequences of the stack's rows and those
//! of its columns is an exact [`BlockKernel`]: the engine normalises it with the code of every
//! other kernel and computes its blocks of rows in parallel, and the kernel fills only the
//! lower triangle of a training block (its values are exactly symmetric).
//!
//! - Spectrum (Leslie, Eskin & Noble, "The spectrum kernel: a string kernel for SVM protein
//!   classification"): the inner product of the k-mer count vectors. The k-mers of both sides
//!   get exact integer ids once (a hash map over the k-byte windows); the rows' sequences are
//!   sparse count rows and the columns' sequences posting lists (id → (column, count)), so a
//!   row of the kernel is one pass over the postings of its distinct k-mers: a sparse × sparse
//!   product, rows in parallel.
//! - Weighted degree (Rätsch & Sonnenburg, "Accurate splice site prediction using support
//!   vector machines"; with shifts, Rätsch, Sonnenburg & Schölkopf, "RASE: recognition of
//!   alternatively spliced exons in C. elegans", and Sonnenburg, Rätsch & Rieck, "Large scale
//!   learning with string kernels"): `Σ_k β_k Σ_l 1[s[l:l+k] = t[l:l+k]]`. With `m` the bit mask
//!   of the positions where the strings agree and `R_k = R_{k−1} & (R_{k−1} >> 1)` (`R_1 = m`),
//!   `R_k` marks the positions where a match of length `k` starts, so the kernel is
//!   `Σ_k β_k popcount(R_k)`: one byte-compare pass builds `m`, and the loop over `k` stops at
//!   the longest run of matches. Eight pairs run side by side in the lanes of vector registers
//!   (AVX-512 or AVX2, chosen at run time), their sums integers scaled once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use crate::error::{MkError, Result};
use crate::kernels::gram::BlockKernel;

/// A column of `n` sequences: the bytes of all of them, one after another, and the `n + 1`
/// offsets of their starts (sequence `i` is `data[offsets[i]..offsets[i + 1]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqColumn {
    data: Vec<u8>,
    offsets: Vec<usize>,
}

impl SeqColumn {
    /// The column of `data` cut at `offsets` (non-decreasing, from 0 to `data.len()`).
    pub fn new(data: Vec<u8>, offsets: Vec<usize>) -> Result<Self> {
        let ok = offsets.first() == Some(&0)
            && offsets.last() == Some(&data.len())
            && offsets.windows(2).all(|w| w[0] <= w[1]);
        if !ok {
            return Err(MkError::Shape(format!(
                "a sequence column needs non-decreasing offsets from 0 to the {} bytes of its \
                 data, got {} offsets",
                data.len(),
                offsets.len()
            )));
        }
        let mut data = data;
        data.resize(data.len() + PAD, 0);
        Ok(SeqColumn { data, offsets })
    }

    /// The column of the byte strings `seqs`.
    pub fn from_strings<S: AsRef<[u8]>>(seqs: &[S]) -> Self {
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for s in seqs {
            data.extend_from_slice(s.as_ref());
            offsets.push(data.len());
        }
        data.resize(data.len() + PAD, 0);
        SeqColumn { data, offsets }
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether the column holds no sequence.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sequence `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Sequence `i` followed by [`PAD`] more bytes of the buffer (the next sequences, then
    /// zeros): whole 64-byte loads from any position of the sequence stay inside it.
    #[inline(always)]
    fn padded(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1] + PAD]
    }

    /// The bytes of the sequences, one after another, and the `n + 1` offsets of their
    /// starts (what [`SeqColumn::new`] takes).
    pub fn parts(&self) -> (&[u8], &[usize]) {
        (&self.data[..self.data.len() - PAD], &self.offsets)
    }

    /// The sequences `idx`, in that order.
    pub fn subset(&self, idx: &[usize]) -> Self {
        let seqs: Vec<&[u8]> = idx.iter().map(|&i| self.get(i)).collect();
        SeqColumn::from_strings(&seqs)
    }
}

/// Zero bytes after the last sequence of a column, so that a 64-byte load starting inside
/// any sequence stays inside the buffer.
const PAD: usize = 64;

/// A kernel function on sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqKernelFn {
    /// The inner product of the counts of the `k`-byte substrings.
    Spectrum { k: usize },
    /// `Σ_{k=1..degree} β_k Σ_l 1[s[l:l+k] = t[l:l+k]]`, `β_k = 2(d−k+1)/(d(d+1))`, plus the
    /// matches shifted by `1..=shift` positions weighted `1/(2(s+1))` (equal lengths only).
    WeightedDegree { degree: usize, shift: usize },
}

impl SeqKernelFn {
    /// The kernel's name in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            SeqKernelFn::Spectrum { .. } => "Spectrum",
            SeqKernelFn::WeightedDegree { .. } => "WeightedDegree",
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        match *self {
            SeqKernelFn::Spectrum { k: 0 } => {
                Err(MkError::config("k", "must be a positive integer, got 0"))
            }
            SeqKernelFn::WeightedDegree { degree: 0, .. } => Err(MkError::config(
                "degree",
                "must be a positive integer, got 0",
            )),
            _ => Ok(()),
        }
    }
}

/// The weights `β_k = 2(d − k + 1) / (d(d + 1))` of the weighted-degree kernel, `k = 1..=d`.
pub fn wd_weights(degree: usize) -> Vec<f64> {
    let d = degree as f64;
    (1..=degree)
        .map(|k| 2.0 * (d - k as f64 + 1.0) / (d * (d + 1.0)))
        .collect()
}

/// The instruction sets of the weighted-degree loops, chosen at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    Baseline,
    /// 32-byte compares and move-masks; popcounts of 64-bit lanes from nibble lookups.
    Avx2,
    /// 64-byte compares straight into a 64-bit mask; `vpopcntq`.
    Avx512,
}

impl Isa {
    /// The best this CPU runs (see `kernels::simd`).
    fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::kernels::simd::avx512_popcnt() {
                return Isa::Avx512;
            }
            if crate::kernels::simd::avx2_fma() {
                return Isa::Avx2;
            }
        }
        Isa::Baseline
    }
}

/// `r[w][l]` = word `w` of the match mask of `xs[l]` and `ys[l]`: bit `t` of word `t / 64` is
/// set where `x[t] == y[t]`, `t < len`, the bits from `len` on 0, for sequences of at least
/// `len + PAD − 1` bytes (read with their padding); `r` has `⌈len / 64⌉` words.
#[inline(always)]
fn lane_masks(
    xs: &[&[u8]; LANES],
    ys: &[&[u8]; LANES],
    len: usize,
    r: &mut [[u64; LANES]],
    isa: Isa,
) {
    assert!(r.len() == len.div_ceil(64));
    if len == 0 {
        return;
    }
    assert!(xs.iter().chain(ys).all(|s| s.len() + 1 >= len + PAD));
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: `isa` is what the CPU runs (Isa::detected), and the lengths are checked.
        Isa::Avx512 => return unsafe { lane_masks_avx512(xs, ys, len, r) },
        Isa::Avx2 => return unsafe { lane_masks_avx2(xs, ys, len, r) },
        Isa::Baseline => {}
    }
    let _ = isa;
    for l in 0..LANES {
        let (x, y) = (&xs[l][..len], &ys[l][..len]);
        for (w, (a, b)) in x.chunks(64).zip(y.chunks(64)).enumerate() {
            let mut m = 0u64;
            for (t, (p, q)) in a.iter().zip(b).enumerate() {
                m |= ((p == q) as u64) << t;
            }
            r[w][l] = m;
        }
    }
}

/// The bits of the last word of a match mask of `len` bits that lie inside the strings
/// (the bytes past the end, padding or the next sequence, are no matches).
#[inline(always)]
fn last_word_bits(len: usize) -> u64 {
    if len.is_multiple_of(64) {
        u64::MAX
    } else {
        (1u64 << (len % 64)) - 1
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn lane_masks_avx2(
    xs: &[&[u8]; LANES],
    ys: &[&[u8]; LANES],
    len: usize,
    r: &mut [[u64; LANES]],
) {
    use std::arch::x86_64::{__m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8};
    let words = r.len();
    for l in 0..LANES {
        let (x, y) = (xs[l].as_ptr(), ys[l].as_ptr());
        // A macro, not a closure: a closure would not inherit this function's features.
        macro_rules! bits {
            ($p:expr) => {{
                // SAFETY: $p < len, and both strings have len + PAD − 1 readable bytes.
                let a = _mm256_loadu_si256(x.add($p) as *const __m256i);
                let b = _mm256_loadu_si256(y.add($p) as *const __m256i);
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)) as u32 as u64
            }};
        }
        for (w, rw) in r.iter_mut().enumerate() {
            let k = 64 * w;
            let hi = if k + 32 < len { bits!(k + 32) << 32 } else { 0 };
            rw[l] = bits!(k) | hi;
        }
        r[words - 1][l] &= last_word_bits(len);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn lane_masks_avx512(
    xs: &[&[u8]; LANES],
    ys: &[&[u8]; LANES],
    len: usize,
    r: &mut [[u64; LANES]],
) {
    use std::arch::x86_64::{_mm512_cmpeq_epi8_mask, _mm512_loadu_si512};
    let words = r.len();
    for l in 0..LANES {
        let (x, y) = (xs[l].as_ptr(), ys[l].as_ptr());
        for (w, rw) in r.iter_mut().enumerate() {
            // SAFETY: 64w < len, and both strings have len + PAD − 1 ≥ 64w + 64 readable
            // bytes.
            let a = _mm512_loadu_si512(x.add(64 * w).cast());
            let b = _mm512_loadu_si512(y.add(64 * w).cast());
            rw[l] = _mm512_cmpeq_epi8_mask(a, b);
        }
        r[words - 1][l] &= last_word_bits(len);
    }
}

/// Pairs whose weighted-degree sums run side by side, one per lane: the loops over lanes
/// compile to vector instructions (shifts, ands and popcounts of 64-bit lanes).
const LANES: usize = 8;

/// For each lane `l`, `Σ_{k=1..degree} (degree − k + 1) · popcount(R_k)` where `R_1 = m` is
/// the match mask of pair `l` (`r[w][l]` its word `w`, bits beyond the strings 0) and
/// `R_{k+1} = R_k & (R_k >> 1)`; `r` is overwritten. The kernel is this integer times
/// `2/(d(d + 1))` (`β_k = 2(d − k + 1)/(d(d + 1))`): one rounding, whatever the order of the
/// sums.
///
/// The weight `d − k + 1` of `popcount(R_k)` is accumulated as `Σ_{j ≤ d} q_j`, `q_j =
/// Σ_{k ≤ j} popcount(R_k)`: two additions per length, no multiplication. Once every `R_k`
/// is 0 (the longest run of matches has ended in all lanes), `q` stays as it is for the
/// remaining lengths.
#[inline(always)]
fn wd_sums(r: &mut [[u64; LANES]], degree: usize) -> [u64; LANES] {
    let words = r.len();
    let (mut q, mut acc) = ([0u64; LANES], [0u64; LANES]);
    for k in 0..degree {
        for rw in r.iter() {
            for (ql, &v) in q.iter_mut().zip(rw) {
                *ql += v.count_ones() as u64;
            }
        }
        for (a, &ql) in acc.iter_mut().zip(&q) {
            *a += ql;
        }
        // R_{k+1}(l) = R_k(l) & R_k(l + 1): the whole mask shifted right by one bit (word
        // w + 1 is read before it is overwritten).
        let mut any = [0u64; LANES];
        for w in 0..words {
            let next = if w + 1 < words { r[w + 1] } else { [0; LANES] };
            for l in 0..LANES {
                r[w][l] &= (r[w][l] >> 1) | (next[l] << 63);
                any[l] |= r[w][l];
            }
        }
        if any.iter().all(|&a| a == 0) {
            let rest = (degree - k - 1) as u64;
            for (a, &ql) in acc.iter_mut().zip(&q) {
                *a += rest * ql;
            }
            break;
        }
    }
    acc
}

/// Settings of the weighted-degree kernel.
#[derive(Debug, Clone, Copy)]
struct Wd {
    degree: usize,
    shift: usize,
}

impl Wd {
    /// [`wd_sums`] of the unshifted pairs `xs[l]`, `ys[l]` of length `len` (read with their
    /// padding), `scratch` holding the masks of sequences longer than four words (256 bytes).
    #[inline(always)]
    fn sums(
        self,
        xs: &[&[u8]; LANES],
        ys: &[&[u8]; LANES],
        len: usize,
        scratch: &mut Vec<[u64; LANES]>,
        isa: Isa,
    ) -> [u64; LANES] {
        /// The masks in registers: `W` words.
        #[inline(always)]
        fn short<const W: usize>(
            xs: &[&[u8]; LANES],
            ys: &[&[u8]; LANES],
            len: usize,
            degree: usize,
            isa: Isa,
        ) -> [u64; LANES] {
            let mut r = [[0u64; LANES]; W];
            lane_masks(xs, ys, len, &mut r, isa);
            wd_sums(&mut r, degree)
        }
        let d = self.degree;
        match len.div_ceil(64) {
            0 => [0; LANES],
            1 => short::<1>(xs, ys, len, d, isa),
            2 => short::<2>(xs, ys, len, d, isa),
            3 => short::<3>(xs, ys, len, d, isa),
            4 => short::<4>(xs, ys, len, d, isa),
            words => {
                scratch.resize(words, [0; LANES]);
                lane_masks(xs, ys, len, scratch, isa);
                wd_sums(scratch, d)
            }
        }
    }

    /// The kernel with shifts of each pair `xs[l]`, `ys[l]` of length `len` (read with their
    /// padding): `WD(x, y) + Σ_{s=1..S} (WD(x[s..], y[..L−s]) + WD(x[..L−s], y[s..])) /
    /// (2(s + 1))`.
    #[inline(always)]
    fn lanes(
        self,
        xs: &[&[u8]; LANES],
        ys: &[&[u8]; LANES],
        len: usize,
        scratch: &mut Vec<[u64; LANES]>,
        isa: Isa,
    ) -> [f64; LANES] {
        let d = self.degree as f64;
        let unit = 2.0 / (d * (d + 1.0));
        let plain = self.sums(xs, ys, len, scratch, isa);
        let mut out = plain.map(|v| unit * v as f64);
        for s in 1..=self.shift.min(len.saturating_sub(1)) {
            let delta = unit / (2.0 * (s as f64 + 1.0));
            let a = self.sums(&xs.map(|x| &x[s..]), ys, len - s, scratch, isa);
            let b = self.sums(xs, &ys.map(|y| &y[s..]), len - s, scratch, isa);
            for l in 0..LANES {
                out[l] += delta * (a[l] + b[l]) as f64;
            }
        }
        out
    }
}

/// The pairs of sequences a weighted-degree evaluation runs over, pair `t` for `out[t]`.
enum WdPairs<'s> {
    /// `(x, cols_t)`: a row of a Gram block.
    Row { x: &'s [u8], cols: &'s SeqColumn },
    /// `(x, cols_{js[t]})`: the columns `js` of a row of a kernel computed on demand.
    List {
        x: &'s [u8],
        cols: &'s SeqColumn,
        js: &'s [usize],
    },
    /// `(s_{first + t}, s_{first + t})`: self-values.
    Own { col: &'s SeqColumn, first: usize },
}

impl<'s> WdPairs<'s> {
    /// Pair `t`, both sequences read with their padding.
    #[inline(always)]
    fn get(&self, t: usize) -> (&'s [u8], &'s [u8]) {
        match *self {
            WdPairs::Row { x, cols } => (x, cols.padded(t)),
            WdPairs::List { x, cols, js } => (x, cols.padded(js[t])),
            WdPairs::Own { col, first } => (col.padded(first + t), col.padded(first + t)),
        }
    }
}

/// `out[t]` = the weighted-degree kernel of pair `t` of `pairs` (all of length `len`),
/// [`LANES`] pairs at a time (the last group padded with copies of its first pair).
#[inline(always)]
fn wd_values_body(
    pairs: &WdPairs<'_>,
    len: usize,
    wd: Wd,
    scratch: &mut Vec<[u64; LANES]>,
    out: &mut [f64],
    isa: Isa,
) {
    for (g, o) in out.chunks_mut(LANES).enumerate() {
        let first = pairs.get(g * LANES);
        let (mut xs, mut ys) = ([first.0; LANES], [first.1; LANES]);
        for l in 1..o.len() {
            (xs[l], ys[l]) = pairs.get(g * LANES + l);
        }
        let v = wd.lanes(&xs, &ys, len, scratch, isa);
        o.copy_from_slice(&v[..o.len()]);
    }
}

/// [`wd_values_body`] compiled for the instruction set `isa` (the loops over lanes become
/// 256- or 512-bit vector instructions).
fn wd_values_with(
    isa: Isa,
    pairs: &WdPairs<'_>,
    len: usize,
    wd: Wd,
    scratch: &mut Vec<[u64; LANES]>,
    out: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vpopcntdq,avx2,popcnt")]
        unsafe fn avx512(
            p: &WdPairs<'_>,
            len: usize,
            wd: Wd,
            s: &mut Vec<[u64; LANES]>,
            o: &mut [f64],
        ) {
            wd_values_body(p, len, wd, s, o, Isa::Avx512)
        }
        #[target_feature(enable = "avx2,popcnt")]
        unsafe fn avx2(
            p: &WdPairs<'_>,
            len: usize,
            wd: Wd,
            s: &mut Vec<[u64; LANES]>,
            o: &mut [f64],
        ) {
            wd_values_body(p, len, wd, s, o, Isa::Avx2)
        }
        match isa {
            // SAFETY: `isa` is what the CPU runs (Isa::detected, or checked by the tests).
            Isa::Avx512 => return unsafe { avx512(pairs, len, wd, scratch, out) },
            Isa::Avx2 => return unsafe { avx2(pairs, len, wd, scratch, out) },
            Isa::Baseline => {}
        }
    }
    wd_values_body(pairs, len, wd, scratch, out, Isa::Baseline)
}

/// [`wd_values_with`] the instruction set of this CPU.
fn wd_values(
    pairs: &WdPairs<'_>,
    len: usize,
    wd: Wd,
    scratch: &mut Vec<[u64; LANES]>,
    out: &mut [f64],
) {
    wd_values_with(Isa::detected(), pairs, len, wd, scratch, out)
}

/// A sequence kernel on one column, evaluated pair by pair for kernels computed on demand
/// (`kernels::on_demand`); the weighted-degree kernel as in a Gram row, the spectrum kernel
/// as `k(s, t) = Σ_u c_u(s) c_u(t) = Σ_l c_{t[l..l+k]}(s)`: the counts of `s` scattered once
/// into a dense vector over the k-mer ids, then for each `t` one lookup per window of `t`
/// (its k-mer ids in order, 4 bytes a window: no merge of two sorted lists, no counts read).
pub(crate) struct SeqPairs {
    func: SeqKernelFn,
    col: SeqColumn,
    windows: Option<WindowIds>,
    /// The number of distinct k-mers of the spectrum kernel.
    n_ids: usize,
    /// The spectrum kernel's counts as dense rows of bytes, when they fit ([`ByteCounts`]).
    bytes: Option<ByteCounts>,
}

/// The k-mer counts of every sequence as a dense row of bytes, `width` per sequence (the ids
/// padded to a multiple of 64), when few k-mers occur (`k ≤ 4` on DNA) and every count fits a
/// byte: a pair is then a dot product of two byte rows (vector instructions) instead of one
/// lookup per window. Its sum is at most `256 · 255²` (exact in `u32`).
struct ByteCounts {
    width: usize,
    counts: Vec<u8>,
}

impl ByteCounts {
    /// The most k-mer ids kept as byte rows: a row then reads no more bytes than the window
    /// ids of a sequence of about 64 windows.
    const MAX_IDS: usize = 256;

    fn of(windows: &WindowIds, n_ids: usize) -> Option<Self> {
        if n_ids > Self::MAX_IDS {
            return None;
        }
        let width = n_ids.div_ceil(64).max(1) * 64;
        let n = windows.ptr.len() - 1;
        let mut counts = vec![0u8; n * width];
        for i in 0..n {
            for &u in windows.row(i) {
                let c = &mut counts[i * width + u as usize];
                *c = c.checked_add(1)?;
            }
        }
        Some(ByteCounts { width, counts })
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.counts[i * self.width..(i + 1) * self.width]
    }
}

/// `out[t] = Σ_u q[u] r_{js[t]}[u]` over the byte rows `rows`.
#[inline(always)]
fn byte_dots_body(q: &[u8], rows: &ByteCounts, js: &[usize], out: &mut [f64]) {
    for (o, &j) in out.iter_mut().zip(js) {
        let r = rows.row(j);
        *o = q
            .iter()
            .zip(r)
            .map(|(&a, &b)| a as u32 * b as u32)
            .sum::<u32>() as f64;
    }
}

/// [`byte_dots_body`] compiled for the instruction set `isa`.
fn byte_dots(isa: Isa, q: &[u8], rows: &ByteCounts, js: &[usize], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
        unsafe fn avx512(q: &[u8], rows: &ByteCounts, js: &[usize], out: &mut [f64]) {
            byte_dots_body(q, rows, js, out)
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(q: &[u8], rows: &ByteCounts, js: &[usize], out: &mut [f64]) {
            byte_dots_body(q, rows, js, out)
        }
        match isa {
            // SAFETY: `isa` is what the CPU runs (Isa::detected, or checked by the tests).
            Isa::Avx512 => return unsafe { avx512(q, rows, js, out) },
            Isa::Avx2 => return unsafe { avx2(q, rows, js, out) },
            Isa::Baseline => {}
        }
    }
    byte_dots_body(q, rows, js, out)
}

thread_local! {
    /// Each thread's dense count vector of the spectrum kernel on demand, all zeros between
    /// calls (a sequence's counts are scattered into it and cleared after use), grown to the
    /// largest number of k-mer ids met.
    static DENSE_COUNTS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl SeqPairs {
    /// The kernel `func` (kernel `m` of its bank, for errors) on the sequences `col`.
    pub(crate) fn new(m: usize, func: SeqKernelFn, col: SeqColumn) -> Result<Self> {
        func.validate()?;
        let (windows, n_ids) = match func {
            SeqKernelFn::Spectrum { k } => {
                let mut ids = KmerIds::default();
                let windows = WindowIds::of(&col, k, &mut ids);
                (Some(windows), ids.len())
            }
            SeqKernelFn::WeightedDegree { .. } => {
                check_equal_lengths(m, &col, None)?;
                (None, 0)
            }
        };
        let bytes = windows.as_ref().and_then(|w| ByteCounts::of(w, n_ids));
        Ok(SeqPairs {
            func,
            col,
            windows,
            n_ids,
            bytes,
        })
    }

    /// `out[t] = k(s_i, s_{js[t]})`, raw.
    pub(crate) fn values(&self, i: usize, js: &[usize], out: &mut [f64]) {
        match (self.func, &self.windows) {
            (SeqKernelFn::Spectrum { .. }, _) if self.bytes.is_some() => {
                let rows = self.bytes.as_ref().expect("checked");
                byte_dots(Isa::detected(), rows.row(i), rows, js, out);
            }
            (SeqKernelFn::Spectrum { .. }, Some(windows)) => DENSE_COUNTS.with(|dense| {
                let mut dense = dense.borrow_mut();
                if dense.len() < self.n_ids {
                    dense.resize(self.n_ids, 0);
                }
                let wi = windows.row(i);
                for &u in wi {
                    dense[u as usize] += 1;
                }
                for (o, &j) in out.iter_mut().zip(js) {
                    let w = windows.row(j);
                    // Integers: exact in any order (≤ L², far below 2⁵³).
                    *o = w.iter().map(|&u| dense[u as usize] as u64).sum::<u64>() as f64;
                }
                for &u in wi {
                    dense[u as usize] = 0;
                }
            }),
            (SeqKernelFn::WeightedDegree { degree, shift }, _) => {
                let pairs = WdPairs::List {
                    x: self.col.padded(i),
                    cols: &self.col,
                    js,
                };
                let len = self.col.get(i).len();
                wd_values(&pairs, len, Wd { degree, shift }, &mut Vec::new(), out);
            }
            (SeqKernelFn::Spectrum { .. }, None) => {
                unreachable!("spectrum windows are built in new")
            }
        }
    }
}

impl SeqPairs {
    /// For the spectrum kernel, `z = Σ_t coef[t] c(s_{js[t]})`: the k-mer counts of the
    /// sequences `js` weighted by `coef`, dense over the k-mer ids; `None` for the other
    /// kernels. Then `Σ_t coef[t] k(s_i, s_{js[t]}) = c(s_i) · z` ([`SeqPairs::dot_counts`])
    /// for every `i`: a product with the kernel costs one pass over the windows of `js` and
    /// one of the rows, not `|js|` evaluations per row.
    pub(crate) fn weighted_counts(&self, js: &[usize], coef: &[f64]) -> Option<Vec<f64>> {
        let windows = self.windows.as_ref()?;
        let mut z = vec![0.0; self.n_ids];
        for (&j, &a) in js.iter().zip(coef) {
            for &u in windows.row(j) {
                z[u as usize] += a;
            }
        }
        Some(z)
    }

    /// Whether the kernel has explicit features ([`SeqPairs::weighted_counts`]).
    pub(crate) fn explicit(&self) -> bool {
        self.windows.is_some()
    }

    /// `c(s_i) · z` for `z` from [`SeqPairs::weighted_counts`].
    pub(crate) fn dot_counts(&self, i: usize, z: &[f64]) -> f64 {
        let windows = self.windows.as_ref().expect("a spectrum kernel");
        windows.row(i).iter().map(|&u| z[u as usize]).sum()
    }
}

/// The spectrum features of one side: each sequence's distinct k-mer ids with their counts,
/// sorted by id (a CSR matrix).
struct CountRows {
    ptr: Vec<usize>,
    ids: Vec<u32>,
    counts: Vec<f64>,
}

impl CountRows {
    fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let r = self.ptr[i]..self.ptr[i + 1];
        (&self.ids[r.clone()], &self.counts[r])
    }

    /// `Σ_u c_u(x)²`, the spectrum kernel of each sequence with itself.
    fn squares(&self) -> Vec<f64> {
        (0..self.ptr.len() - 1)
            .map(|i| self.row(i).1.iter().map(|c| c * c).sum())
            .collect()
    }
}

/// FNV-1a: a fast, deterministic hash of the k-mers (the map's keys are trusted bytes).
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

pub(crate) type KmerIds<'s> = HashMap<&'s [u8], u32, BuildHasherDefault<Fnv>>;

/// Each sequence's k-mer ids, window by window (a CSR matrix whose row `i` lists the id of
/// `s_i[l..l+k]` for every `l`, repeats included).
struct WindowIds {
    ptr: Vec<usize>,
    ids: Vec<u32>,
}

impl WindowIds {
    /// The windows of `col`, giving each new k-mer the next id of `ids`.
    fn of<'s>(col: &'s SeqColumn, k: usize, ids: &mut KmerIds<'s>) -> Self {
        let mut ptr = Vec::with_capacity(col.len() + 1);
        ptr.push(0);
        let mut out = Vec::new();
        for i in 0..col.len() {
            for w in col.get(i).windows(k) {
                let next = ids.len() as u32;
                out.push(*ids.entry(w).or_insert(next));
            }
            ptr.push(out.len());
        }
        WindowIds { ptr, ids: out }
    }

    fn row(&self, i: usize) -> &[u32] {
        &self.ids[self.ptr[i]..self.ptr[i + 1]]
    }
}

/// The k-mer count rows of `col`, giving each new k-mer the next id of `ids`.
fn count_rows<'s>(col: &'s SeqColumn, k: usize, ids: &mut KmerIds<'s>) -> CountRows {
    let windows = WindowIds::of(col, k, ids);
    let mut ptr = vec![0];
    let (mut out_ids, mut counts) = (Vec::new(), Vec::new());
    let mut row: Vec<u32> = Vec::new();
    for i in 0..col.len() {
        row.clear();
        row.extend_from_slice(windows.row(i));
        row.sort_unstable();
        let mut t = 0;
        while t < row.len() {
            let id = row[t];
            let mut c = 0;
            while t < row.len() && row[t] == id {
                c += 1;
                t += 1;
            }
            out_ids.push(id);
            counts.push(c as f64);
        }
        ptr.push(out_ids.len());
    }
    CountRows {
        ptr,
        ids: out_ids,
        counts,
    }
}

/// The columns' side of a spectrum kernel: for each k-mer id, the columns holding it, in
/// increasing order, with their counts.
struct Postings {
    ptr: Vec<usize>,
    cols: Vec<u32>,
    counts: Vec<f64>,
}

impl Postings {
    fn of(rows: &CountRows, n_ids: usize) -> Self {
        let mut ptr = vec![0usize; n_ids + 1];
        for &id in &rows.ids {
            ptr[id as usize + 1] += 1;
        }
        for u in 0..n_ids {
            ptr[u + 1] += ptr[u];
        }
        let mut fill = ptr.clone();
        let mut cols = vec![0u32; rows.ids.len()];
        let mut counts = vec![0.0; rows.ids.len()];
        for j in 0..rows.ptr.len() - 1 {
            let (ids, cs) = rows.row(j);
            for (&u, &c) in ids.iter().zip(cs) {
                let at = &mut fill[u as usize];
                cols[*at] = j as u32;
                counts[*at] = c;
                *at += 1;
            }
        }
        Postings { ptr, cols, counts }
    }
}

/// What a kernel precomputes of its two sides.
enum Prepared {
    Spectrum {
        rows: CountRows,
        postings: Postings,
        self_a: Vec<f64>,
    },
    WeightedDegree(Wd),
}

/// A sequence kernel between the sequences `a` (the stack's rows) and `b` (its columns;
/// `None` for a training stack, whose columns are its rows).
pub struct SeqKernel<'c> {
    func: SeqKernelFn,
    a: &'c SeqColumn,
    b: Option<&'c SeqColumn>,
    prepared: Prepared,
}

impl<'c> SeqKernel<'c> {
    /// The kernel `func` (kernel `m` of its bank, for errors) between `a` and `b`.
    ///
    /// # Errors
    /// An invalid parameter, or for the weighted-degree kernel sequences of different lengths.
    pub fn new(
        m: usize,
        func: SeqKernelFn,
        a: &'c SeqColumn,
        b: Option<&'c SeqColumn>,
    ) -> Result<Self> {
        func.validate()?;
        let prepared = match func {
            SeqKernelFn::Spectrum { k } => {
                let mut ids = KmerIds::default();
                let rows = count_rows(a, k, &mut ids);
                let cols = b.map(|b| count_rows(b, k, &mut ids));
                let postings = Postings::of(cols.as_ref().unwrap_or(&rows), ids.len());
                let self_a = rows.squares();
                Prepared::Spectrum {
                    rows,
                    postings,
                    self_a,
                }
            }
            SeqKernelFn::WeightedDegree { degree, shift } => {
                check_equal_lengths(m, a, b)?;
                Prepared::WeightedDegree(Wd { degree, shift })
            }
        };
        Ok(SeqKernel {
            func,
            a,
            b,
            prepared,
        })
    }

    fn cols(&self) -> &SeqColumn {
        self.b.unwrap_or(self.a)
    }

    /// The kernel function.
    pub fn func(&self) -> SeqKernelFn {
        self.func
    }

    /// Row `i` of the kernel, columns `0..out.len()`.
    fn row(&self, i: usize, out: &mut [f64], scratch: &mut Vec<[u64; LANES]>) {
        match &self.prepared {
            Prepared::Spectrum { rows, postings, .. } => {
                out.fill(0.0);
                let end = out.len() as u32;
                let (ids, cs) = rows.row(i);
                for (&u, &c) in ids.iter().zip(cs) {
                    let p = postings.ptr[u as usize]..postings.ptr[u as usize + 1];
                    for (&j, &cj) in postings.cols[p.clone()].iter().zip(&postings.counts[p]) {
                        if j >= end {
                            break;
                        }
                        out[j as usize] += c * cj;
                    }
                }
            }
            Prepared::WeightedDegree(wd) => {
                let pairs = WdPairs::Row {
                    x: self.a.padded(i),
                    cols: self.cols(),
                };
                wd_values(&pairs, self.a.get(i).len(), *wd, scratch, out);
            }
        }
    }
}

/// Refuses sequences of different lengths (the weighted-degree kernel compares positions).
fn check_equal_lengths(m: usize, a: &SeqColumn, b: Option<&SeqColumn>) -> Result<()> {
    let len = if a.is_empty() { 0 } else { a.get(0).len() };
    let sides = std::iter::once(("", a)).chain(b.map(|b| (" of the training points", b)));
    for (side, col) in sides {
        if let Some(i) = (0..col.len()).find(|&i| col.get(i).len() != len) {
            return Err(MkError::KernelFunction {
                kernel: m,
                reason: format!(
                    "WeightedDegree compares sequences position by position and needs equal \
                     lengths, but sequence {i}{side} has length {} where sequence 0 has {len}; \
                     use Spectrum for sequences of different lengths",
                    col.get(i).len()
                ),
            });
        }
    }
    Ok(())
}

impl BlockKernel for SeqKernel<'_> {
    fn rows(&self, rows: Range<usize>, out: &mut [f64]) -> Result<()> {
        let nb = self.cols().len();
        let start = rows.start;
        let lower = self.b.is_none();
        let mut scratch = Vec::new();
        for (r, row) in out.chunks_mut(nb.max(1)).enumerate() {
            let i = start + r;
            // A training block is filled on and below the diagonal (then mirrored).
            let width = if lower { i + 1 } else { nb };
            self.row(i, &mut row[..width.min(nb)], &mut scratch);
        }
        Ok(())
    }

    fn self_values(&self, rows: Range<usize>, out: &mut [f64]) -> Result<()> {
        match &self.prepared {
            Prepared::Spectrum { self_a, .. } => out.copy_from_slice(&self_a[rows]),
            Prepared::WeightedDegree(wd) if !rows.is_empty() => {
                let pairs = WdPairs::Own {
                    col: self.a,
                    first: rows.start,
                };
                let len = self.a.get(rows.start).len();
                wd_values(&pairs, len, *wd, &mut Vec::new(), out);
            }
            Prepared::WeightedDegree(_) => {}
        }
        Ok(())
    }

    fn exact(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The weighted-degree kernel with shifts as the plain sums of its definition.
    fn wd_naive(x: &[u8], y: &[u8], d: usize, shift: usize) -> f64 {
        let beta = wd_weights(d);
        let len = x.len();
        let same = |p: usize, q: usize, k: usize| {
            p + k <= len && q + k <= len && x[p..p + k] == y[q..q + k]
        };
        let mut sum = 0.0;
        for k in 1..=d {
            for l in 0..len {
                if same(l, l, k) {
                    sum += beta[k - 1];
                }
                for s in 1..=shift {
                    let delta = 1.0 / (2.0 * (s as f64 + 1.0));
                    if same(l + s, l, k) {
                        sum += beta[k - 1] * delta;
                    }
                    if same(l, l + s, k) {
                        sum += beta[k - 1] * delta;
                    }
                }
            }
        }
        sum
    }

    fn spectrum_naive(x: &[u8], y: &[u8], k: usize) -> f64 {
        let count = |s: &[u8]| {
            let mut c: HashMap<Vec<u8>, f64> = HashMap::new();
            for w in s.windows(k) {
                *c.entry(w.to_vec()).or_default() += 1.0;
            }
            c
        };
        let (cx, cy) = (count(x), count(y));
        cx.iter()
            .map(|(u, a)| a * cy.get(u).copied().unwrap_or(0.0))
            .sum()
    }

    fn random(n: usize, len: impl Fn(usize) -> usize, alphabet: &[u8], seed: u64) -> SeqColumn {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let seqs: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                (0..len(i))
                    .map(|_| alphabet[next() % alphabet.len()])
                    .collect()
            })
            .collect();
        SeqColumn::from_strings(&seqs)
    }

    fn full(k: &SeqKernel<'_>, na: usize, nb: usize) -> Vec<f64> {
        let mut out = vec![0.0; na * nb];
        k.rows(0..na, &mut out).unwrap();
        out
    }

    /// The instruction sets this CPU runs, the baseline first.
    fn isas() -> Vec<Isa> {
        let mut out = vec![Isa::Baseline];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
                out.push(Isa::Avx2);
            }
            if out.len() == 2
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512vpopcntdq")
            {
                out.push(Isa::Avx512);
            }
        }
        out
    }

    #[test]
    fn every_instruction_set_gives_the_definition() {
        // Lengths around the words of the masks, masks beyond the four words kept in
        // registers (300), the empty string; pairs of rows, lists and self-values, groups of
        // lanes with a partial last one (13 sequences).
        for (len, alphabet, d, shift) in [
            (0, &b"AB"[..], 3, 1),
            (1, &b"AB"[..], 3, 0),
            (63, &b"AB"[..], 10, 1),
            (64, &b"A"[..], 70, 0),
            (65, &b"AB"[..], 4, 2),
            (141, &b"ACGT"[..], 10, 0),
            (256, &b"AB"[..], 20, 1),
            (300, &b"AB"[..], 12, 3),
        ] {
            let a = random(13, |_| len, alphabet, 5);
            let wd = Wd { degree: d, shift };
            let js: Vec<usize> = (0..13).rev().collect();
            for isa in isas() {
                let mut scratch = Vec::new();
                for i in 0..13 {
                    let x = a.padded(i);
                    let mut row = vec![0.0; 13];
                    let pairs = WdPairs::Row { x, cols: &a };
                    wd_values_with(isa, &pairs, len, wd, &mut scratch, &mut row);
                    let mut list = vec![0.0; 13];
                    let pairs = WdPairs::List {
                        x,
                        cols: &a,
                        js: &js,
                    };
                    wd_values_with(isa, &pairs, len, wd, &mut scratch, &mut list);
                    for j in 0..13 {
                        let want = wd_naive(a.get(i), a.get(j), d, shift);
                        assert!(
                            (row[j] - want).abs() <= 1e-12 * want.max(1.0),
                            "{isa:?} {len}"
                        );
                        assert_eq!(list[12 - j], row[j]);
                    }
                }
                let mut own = vec![0.0; 11];
                let pairs = WdPairs::Own { col: &a, first: 2 };
                wd_values_with(isa, &pairs, len, wd, &mut scratch, &mut own);
                for (t, v) in own.iter().enumerate() {
                    let want = wd_naive(a.get(2 + t), a.get(2 + t), d, shift);
                    assert!((v - want).abs() <= 1e-12 * want.max(1.0), "{isa:?} {len}");
                }
            }
        }
    }

    #[test]
    fn weighted_degree_matches_its_definition() {
        // Lengths across the 64-bit words of the mask; a two-letter alphabet gives long runs.
        for (len, alphabet, d, shift) in [
            (7, &b"AB"[..], 3, 0),
            (70, &b"AB"[..], 10, 2),
            (141, &b"ACGT"[..], 10, 0),
            (130, &b"A"[..], 5, 3),
            (64, &b"\x00\xff\x80"[..], 8, 1),
        ] {
            let a = random(9, |_| len, alphabet, 1);
            let b = random(4, |_| len, alphabet, 2);
            let f = SeqKernelFn::WeightedDegree { degree: d, shift };
            let train = full(&SeqKernel::new(0, f, &a, None).unwrap(), 9, 9);
            let cross = full(&SeqKernel::new(0, f, &b, Some(&a)).unwrap(), 4, 9);
            for i in 0..9 {
                for j in 0..=i {
                    let want = wd_naive(a.get(i), a.get(j), d, shift);
                    assert!(
                        (train[i * 9 + j] - want).abs() <= 1e-12 * want.max(1.0),
                        "{len}"
                    );
                }
            }
            for i in 0..4 {
                for j in 0..9 {
                    let want = wd_naive(b.get(i), a.get(j), d, shift);
                    assert!((cross[i * 9 + j] - want).abs() <= 1e-12 * want.max(1.0));
                }
            }
        }
    }

    #[test]
    fn spectrum_matches_the_count_vectors() {
        let a = random(12, |i| i * 3, b"ACGT", 3); // lengths 0, 3, …: empty and shorter than k
        let b = random(5, |i| 20 + i, b"ACGTN", 4);
        for k in [1, 3, 5] {
            let f = SeqKernelFn::Spectrum { k };
            let kern = SeqKernel::new(0, f, &a, None).unwrap();
            let train = full(&kern, 12, 12);
            let cross = full(&SeqKernel::new(0, f, &b, Some(&a)).unwrap(), 5, 12);
            let mut own = vec![0.0; 12];
            kern.self_values(0..12, &mut own).unwrap();
            for i in 0..12 {
                assert_eq!(own[i], spectrum_naive(a.get(i), a.get(i), k));
                for j in 0..=i {
                    assert_eq!(train[i * 12 + j], spectrum_naive(a.get(i), a.get(j), k));
                }
            }
            for i in 0..5 {
                for j in 0..12 {
                    assert_eq!(cross[i * 12 + j], spectrum_naive(b.get(i), a.get(j), k));
                }
            }
        }
    }

    #[test]
    fn spectrum_pairs_on_demand_match_the_count_vectors() {
        // Few k-mers (byte rows), many (window lookups), and a count beyond a byte (300
        // letters of a one-letter alphabet: window lookups); empty sequences among them.
        for (col, k, bytes) in [
            (random(20, |i| i * 4, b"ACGT", 9), 3, true),
            (random(20, |i| 10 + i, b"ACGTNRYKM", 10), 5, false),
            (random(6, |_| 300, b"A", 11), 2, false),
        ] {
            let pairs = SeqPairs::new(0, SeqKernelFn::Spectrum { k }, col.clone()).unwrap();
            assert_eq!(pairs.bytes.is_some(), bytes);
            let js: Vec<usize> = (0..col.len()).rev().collect();
            for i in 0..col.len() {
                let mut out = vec![0.0; js.len()];
                pairs.values(i, &js, &mut out);
                for (t, &j) in js.iter().enumerate() {
                    assert_eq!(out[t], spectrum_naive(col.get(i), col.get(j), k));
                }
                if let Some(rows) = &pairs.bytes {
                    for isa in isas() {
                        let mut again = vec![0.0; js.len()];
                        byte_dots(isa, rows.row(i), rows, &js, &mut again);
                        assert_eq!(again, out, "{isa:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn unequal_lengths_and_bad_settings_are_refused() {
        let a = SeqColumn::from_strings(&["ACGT", "ACG"]);
        let f = SeqKernelFn::WeightedDegree {
            degree: 3,
            shift: 0,
        };
        assert!(matches!(
            SeqKernel::new(2, f, &a, None),
            Err(MkError::KernelFunction { kernel: 2, .. })
        ));
        assert!(SeqKernel::new(0, SeqKernelFn::Spectrum { k: 0 }, &a, None).is_err());
        assert!(SeqColumn::new(b"AB".to_vec(), vec![0, 3]).is_err());
        assert_eq!(a.subset(&[1, 0]).get(0), b"ACG");
    }
}
