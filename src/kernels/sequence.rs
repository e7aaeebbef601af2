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
//!   the longest run of matches.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use crate::error::{MkError, Result};
use crate::kernels::gram::BlockKernel;
use crate::kernels::simd::avx2_dispatch;
use crate::kernels::Element;

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

    /// Sequence `i` followed by at least [`PAD`] more bytes of the buffer (the next sequences,
    /// then zeros): whole 32-byte loads from any position of the sequence stay inside it.
    #[inline(always)]
    fn padded(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1] + PAD]
    }

    /// The sequences `idx`, in that order.
    pub fn subset(&self, idx: &[usize]) -> Self {
        let seqs: Vec<&[u8]> = idx.iter().map(|&i| self.get(i)).collect();
        SeqColumn::from_strings(&seqs)
    }
}

/// Zero bytes after the last sequence of a column, so that a 32-byte load starting inside
/// any sequence stays inside the buffer.
const PAD: usize = 32;

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

/// Bit `t` of word `t / 64` of `mask` is set where `x[t] == y[t]`, `t < len`, for `x` and
/// `y` of at least `len + 31` bytes (sequences read with their padding); the bits from `len`
/// on are 0. `avx2`: the CPU has AVX2 (byte compares and move-masks of 32 bytes at a time).
#[inline(always)]
fn match_mask(x: &[u8], y: &[u8], len: usize, mask: &mut [u64], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the caller checked that the CPU has AVX2.
        return unsafe { match_mask_avx2(x, y, len, mask) };
    }
    let _ = avx2;
    for (w, (a, b)) in x[..len].chunks(64).zip(y[..len].chunks(64)).enumerate() {
        let mut m = 0u64;
        for (t, (p, q)) in a.iter().zip(b).enumerate() {
            m |= ((p == q) as u64) << t;
        }
        mask[w] = m;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn match_mask_avx2(x: &[u8], y: &[u8], len: usize, mask: &mut [u64]) {
    use std::arch::x86_64::{__m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8};
    assert!(x.len().min(y.len()) + 1 >= len + PAD);
    // A macro, not a closure: a closure would not inherit this function's target features.
    macro_rules! bits {
        ($p:expr) => {{
            // SAFETY: $p < len, and both strings have len + 31 readable bytes.
            let a = _mm256_loadu_si256(x.as_ptr().add($p) as *const __m256i);
            let b = _mm256_loadu_si256(y.as_ptr().add($p) as *const __m256i);
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)) as u32 as u64
        }};
    }
    let words = len.div_ceil(64);
    for (w, m) in mask[..words].iter_mut().enumerate() {
        let k = 64 * w;
        let hi = if k + 32 < len { bits!(k + 32) << 32 } else { 0 };
        *m = bits!(k) | hi;
    }
    if len % 64 != 0 {
        // The bytes past the end (padding, or the next sequence) are no matches.
        mask[words - 1] &= (1u64 << (len % 64)) - 1;
    }
}

/// `Σ_{k=1..β.len()} β_k · #{l : x[l..l+k] = y[l..l+k]}` for `x`, `y` of length `len`, read
/// with their padding ([`match_mask`]), with `mask` scratch space of at least `⌈len / 64⌉`
/// words.
#[inline(always)]
fn wd_unshifted(x: &[u8], y: &[u8], len: usize, beta: &[f64], mask: &mut [u64], avx2: bool) -> f64 {
    let words = len.div_ceil(64);
    if words <= SHORT_WORDS {
        // Up to 256 bytes: the mask stays in registers.
        let mut m = [0u64; SHORT_WORDS];
        match_mask(x, y, len, &mut m[..words], avx2);
        return wd_of_mask(&mut m, beta);
    }
    let mask = &mut mask[..words];
    match_mask(x, y, len, mask, avx2);
    wd_of_mask(mask, beta)
}

/// Words of the mask kept in registers (sequences of up to 256 bytes).
const SHORT_WORDS: usize = 4;

/// `Σ_k β_k popcount(R_k)` from the match mask `R_1` (bits beyond the strings 0), `mask`
/// overwritten.
#[inline(always)]
fn wd_of_mask(mask: &mut [u64], beta: &[f64]) -> f64 {
    let words = mask.len();
    let mut sum = 0.0;
    for &b in beta {
        let count: u32 = mask.iter().map(|w| w.count_ones()).sum();
        if count == 0 {
            break;
        }
        sum += b * count as f64;
        // R_{k+1}(l) = R_k(l) & R_k(l + 1): shift the whole mask right by one bit.
        for w in 0..words {
            let next = if w + 1 < words { mask[w + 1] << 63 } else { 0 };
            mask[w] &= (mask[w] >> 1) | next;
        }
    }
    sum
}

/// Whether the byte compares may use AVX2.
#[inline(always)]
fn avx2_cpu() -> bool {
    #[cfg(target_arch = "x86_64")]
    return crate::kernels::simd::avx2_fma();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The weighted-degree kernel with shifts of `x` and `y` (of length `len`, read with their
/// padding): `WD(x, y) + Σ_{s=1..S} (WD(x[s..], y[..L−s]) + WD(x[..L−s], y[s..])) / (2(s + 1))`.
#[inline(always)]
fn wd_pair(x: &[u8], y: &[u8], len: usize, beta: &[f64], shift: usize, mask: &mut [u64]) -> f64 {
    let avx2 = avx2_cpu();
    let mut sum = wd_unshifted(x, y, len, beta, mask, avx2);
    for s in 1..=shift.min(len.saturating_sub(1)) {
        let delta = 1.0 / (2.0 * (s as f64 + 1.0));
        let a = wd_unshifted(&x[s..], y, len - s, beta, mask, avx2);
        let b = wd_unshifted(x, &y[s..], len - s, beta, mask, avx2);
        sum += delta * (a + b);
    }
    sum
}

/// `out[j] = k(x, cols_j)` of the weighted-degree kernel for the first `out.len()`
/// sequences of `cols`. `_e` only carries the element type the dispatch macro asks for.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn wd_row_body<T: Element>(
    x: &[u8],
    len: usize,
    cols: &SeqColumn,
    beta: &[f64],
    shift: usize,
    mask: &mut [u64],
    out: &mut [f64],
    _e: T,
) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = wd_pair(x, cols.padded(j), len, beta, shift, mask);
    }
}

avx2_dispatch! {
    fn wd_row<T>(
        x: &[u8], len: usize, cols: &SeqColumn, beta: &[f64], shift: usize,
        mask: &mut [u64], out: &mut [f64], _e: T
    ) = wd_row_body;
}

/// `out[t] = k(x, cols_{js[t]})` of the weighted-degree kernel (the columns `js` of a kernel
/// computed on demand). `_e` only carries the element type the dispatch macro asks for.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn wd_list_body<T: Element>(
    x: &[u8],
    len: usize,
    cols: &SeqColumn,
    js: &[usize],
    beta: &[f64],
    shift: usize,
    mask: &mut [u64],
    out: &mut [f64],
    _e: T,
) {
    for (o, &j) in out.iter_mut().zip(js) {
        *o = wd_pair(x, cols.padded(j), len, beta, shift, mask);
    }
}

avx2_dispatch! {
    fn wd_list<T>(
        x: &[u8], len: usize, cols: &SeqColumn, js: &[usize], beta: &[f64], shift: usize,
        mask: &mut [u64], out: &mut [f64], _e: T
    ) = wd_list_body;
}

/// A sequence kernel on one column, evaluated pair by pair for kernels computed on demand
/// (`kernels::on_demand`): the spectrum kernel as a merge of two sorted count rows, the
/// weighted-degree kernel as in a Gram row.
pub(crate) struct SeqPairs {
    func: SeqKernelFn,
    col: SeqColumn,
    counts: Option<CountRows>,
    beta: Vec<f64>,
}

impl SeqPairs {
    /// The kernel `func` (kernel `m` of its bank, for errors) on the sequences `col`.
    pub(crate) fn new(m: usize, func: SeqKernelFn, col: SeqColumn) -> Result<Self> {
        func.validate()?;
        let (counts, beta) = match func {
            SeqKernelFn::Spectrum { k } => {
                (Some(count_rows(&col, k, &mut KmerIds::default())), vec![])
            }
            SeqKernelFn::WeightedDegree { degree, .. } => {
                check_equal_lengths(m, &col, None)?;
                (None, wd_weights(degree))
            }
        };
        Ok(SeqPairs {
            func,
            col,
            counts,
            beta,
        })
    }

    /// `out[t] = k(s_i, s_{js[t]})`, raw.
    pub(crate) fn values(&self, i: usize, js: &[usize], out: &mut [f64]) {
        match (self.func, &self.counts) {
            (SeqKernelFn::Spectrum { .. }, Some(rows)) => {
                let (ai, ac) = rows.row(i);
                for (o, &j) in out.iter_mut().zip(js) {
                    let (bi, bc) = rows.row(j);
                    let (mut p, mut q, mut sum) = (0, 0, 0.0);
                    while p < ai.len() && q < bi.len() {
                        match ai[p].cmp(&bi[q]) {
                            std::cmp::Ordering::Less => p += 1,
                            std::cmp::Ordering::Greater => q += 1,
                            std::cmp::Ordering::Equal => {
                                sum += ac[p] * bc[q];
                                p += 1;
                                q += 1;
                            }
                        }
                    }
                    *o = sum;
                }
            }
            (SeqKernelFn::WeightedDegree { shift, .. }, _) => {
                let len = self.col.get(i).len();
                let mut mask = vec![0u64; len.div_ceil(64)];
                let x = self.col.padded(i);
                wd_list(
                    x, len, &self.col, js, &self.beta, shift, &mut mask, out, 0.0,
                );
            }
            (SeqKernelFn::Spectrum { .. }, None) => {
                unreachable!("spectrum counts are built in new")
            }
        }
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
struct Fnv(u64);

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

type KmerIds<'s> = HashMap<&'s [u8], u32, BuildHasherDefault<Fnv>>;

/// The k-mer count rows of `col`, giving each new k-mer the next id of `ids`.
fn count_rows<'s>(col: &'s SeqColumn, k: usize, ids: &mut KmerIds<'s>) -> CountRows {
    let mut ptr = vec![0];
    let (mut out_ids, mut counts) = (Vec::new(), Vec::new());
    let mut row: Vec<u32> = Vec::new();
    for i in 0..col.len() {
        let s = col.get(i);
        row.clear();
        for w in s.windows(k) {
            let next = ids.len() as u32;
            row.push(*ids.entry(w).or_insert(next));
        }
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
    WeightedDegree {
        beta: Vec<f64>,
        shift: usize,
    },
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
                Prepared::WeightedDegree {
                    beta: wd_weights(degree),
                    shift,
                }
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
    fn row(&self, i: usize, out: &mut [f64], mask: &mut Vec<u64>) {
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
            Prepared::WeightedDegree { beta, shift } => {
                let len = self.a.get(i).len();
                mask.resize(len.div_ceil(64), 0);
                wd_row(
                    self.a.padded(i),
                    len,
                    self.cols(),
                    beta,
                    *shift,
                    mask,
                    out,
                    0.0,
                );
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
        let mut mask = Vec::new();
        for (r, row) in out.chunks_mut(nb.max(1)).enumerate() {
            let i = start + r;
            // A training block is filled on and below the diagonal (then mirrored).
            let width = if lower { i + 1 } else { nb };
            self.row(i, &mut row[..width.min(nb)], &mut mask);
        }
        Ok(())
    }

    fn self_values(&self, rows: Range<usize>, out: &mut [f64]) -> Result<()> {
        let mut mask = Vec::new();
        for (i, o) in rows.zip(out.iter_mut()) {
            *o = match &self.prepared {
                Prepared::Spectrum { self_a, .. } => self_a[i],
                Prepared::WeightedDegree { beta, shift } => {
                    let (x, len) = (self.a.padded(i), self.a.get(i).len());
                    mask.resize(len.div_ceil(64), 0);
                    wd_pair(x, x, len, beta, *shift, &mut mask)
                }
            };
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
