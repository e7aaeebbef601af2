//! Exact explicit features of the sequence kernels, as sparse rows (docs/mathematics.md §7).
//!
//! - Spectrum (Leslie, Eskin & Noble, "The spectrum kernel: a string kernel for SVM protein
//!   classification"): `k(s, t) = ⟨c(s), c(t)⟩` with `c_u(s)` the number of windows of `s`
//!   equal to the k-mer `u`. Column `u` of a row holds `c_u(s)`.
//! - Weighted degree without shifts (Rätsch & Sonnenburg, "Accurate splice site prediction
//!   using support vector machines"): `k(s, t) = Σ_k β_k Σ_l 1[s[l:l+k] = t[l:l+k]]` is the
//!   inner product of the indicators of the position-specific substrings `(l, s[l:l+k])`,
//!   `k = 1..d`, each of value `sqrt(β_k)`: the features of Sonnenburg, Rätsch & Rieck, "Large
//!   scale learning with string kernels". With shifts the kernel compares substrings at
//!   different positions with weights that no such indicator map reproduces, and is refused.
//!
//! The columns are the substrings seen at fit, numbered in order of first occurrence with the
//! spectrum kernel's exact ids (`sequence::KmerIds`: one hash map per position class, the
//! whole sequence for the spectrum kernel, each position for the weighted degree). New
//! sequences are mapped onto those columns; a substring unseen at fit has no column and is
//! dropped. That is exact for a fitted model: its weights `w = Φ_trainᵀ α` lie in the span of
//! the training features, whose entries at an unseen substring are all 0, so
//! `⟨w, φ(x)⟩` never reads it. Rows are built in parallel; a row stores its distinct
//! substrings only (at most `L − k + 1` for the spectrum kernel, `Σ_k (L − k + 1)` for the
//! weighted degree), never a dense vector over the vocabulary.

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::kernels::sequence::{wd_weights, KmerIds, SeqColumn, SeqKernelFn};

/// The columns of a fitted feature map: the substring of each column, in the order of the
/// ids, with the position it is taken at (always 0 for the spectrum kernel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    /// Substring `u` of column `u`.
    pub kmers: SeqColumn,
    /// The position of column `u`'s substring (the weighted degree's `l`).
    pub positions: Vec<u32>,
    /// The length of the training sequences (the weighted degree compares equal lengths).
    pub length: usize,
}

/// Sparse feature rows (CSR): row `i` holds `values[indptr[i]..indptr[i + 1]]` at the columns
/// `indices[..]`, sorted; `squares[i] = ‖φ(s_i)‖² = k(s_i, s_i)`, the substrings outside the
/// vocabulary included (what the cosine normalisation divides by).
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureRows {
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub values: Vec<f64>,
    pub squares: Vec<f64>,
    pub n_cols: usize,
}

/// The feature map of a kernel with finite explicit features of this form.
#[derive(Debug, Clone)]
enum Map {
    Spectrum { k: usize },
    WeightedDegree { roots: Vec<f64> },
}

impl Map {
    /// The map of `func` (kernel `m` of its bank, for errors).
    fn of(m: usize, func: SeqKernelFn) -> Result<Self> {
        func.validate()?;
        match func {
            SeqKernelFn::Spectrum { k } => Ok(Map::Spectrum { k }),
            SeqKernelFn::WeightedDegree { degree, shift: 0 } => Ok(Map::WeightedDegree {
                roots: wd_weights(degree).iter().map(|b| b.sqrt()).collect(),
            }),
            SeqKernelFn::WeightedDegree { shift, .. } => Err(MkError::KernelFunction {
                kernel: m,
                reason: format!(
                    "WeightedDegree with shift={shift} has no explicit feature map of \
                     position-specific substrings: its shifted matches compare substrings at \
                     different positions, which no finite map of this form reproduces; use \
                     shift=0 for feature blocks, or pass the kernel as kernels=[...] (Gram \
                     matrices)"
                ),
            }),
        }
    }

    /// Calls `f(slot, substring, value)` for every feature of `s`: `slot` the hash map (the
    /// position class) the substring is looked up in.
    #[inline(always)]
    fn each<'s>(&self, s: &'s [u8], mut f: impl FnMut(usize, &'s [u8], f64)) {
        match self {
            Map::Spectrum { k } => s.windows(*k).for_each(|w| f(0, w, 1.0)),
            Map::WeightedDegree { roots } => {
                for l in 0..s.len() {
                    for (k, &r) in roots.iter().enumerate().take(s.len() - l) {
                        f(l, &s[l..l + k + 1], r);
                    }
                }
            }
        }
    }

    /// The number of hash maps for sequences of length `len`.
    fn slots(&self, len: usize) -> usize {
        match self {
            Map::Spectrum { .. } => 1,
            Map::WeightedDegree { .. } => len,
        }
    }
}

/// The common length of the sequences of `col` for the weighted degree (`want`: the training
/// length, checked at transform).
fn wd_length(m: usize, col: &SeqColumn, want: Option<usize>) -> Result<usize> {
    let len = want.unwrap_or(if col.is_empty() { 0 } else { col.get(0).len() });
    match (0..col.len()).find(|&i| col.get(i).len() != len) {
        None => Ok(len),
        Some(i) => Err(MkError::KernelFunction {
            kernel: m,
            reason: format!(
                "WeightedDegree compares sequences position by position and needs equal \
                 lengths, but sequence {i} has length {} where the {} have {len}; use \
                 Spectrum for sequences of different lengths",
                col.get(i).len(),
                if want.is_some() {
                    "training sequences"
                } else {
                    "first"
                }
            ),
        }),
    }
}

/// Appends to `idx`, `val` the features `row` (column, value) merged by column, and returns
/// the sum of their squares.
fn merge(row: &mut [(u32, f64)], idx: &mut Vec<u32>, val: &mut Vec<f64>) -> f64 {
    row.sort_unstable_by_key(|&(u, _)| u);
    let before = idx.len();
    for &(u, v) in row.iter() {
        if idx.len() > before && idx.last() == Some(&u) {
            *val.last_mut().expect("a value per index") += v;
        } else {
            idx.push(u);
            val.push(v);
        }
    }
    val[before..].iter().map(|v| v * v).sum()
}

/// The sum of the squares of the features `unseen` (position class, substring, value)
/// merged by substring.
fn unseen_squares(unseen: &mut [(usize, &[u8], f64)]) -> f64 {
    unseen.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let mut sum = 0.0;
    for g in unseen.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let v: f64 = g.iter().map(|t| t.2).sum();
        sum += v * v;
    }
    sum
}

/// The rows of `col` over the columns `ids` (one map per slot), in parallel.
fn rows(map: &Map, col: &SeqColumn, ids: &[KmerIds<'_>], n_cols: usize) -> FeatureRows {
    const CHUNK: usize = 256;
    let starts: Vec<usize> = (0..col.len()).step_by(CHUNK).collect();
    let parts: Vec<FeatureRows> = starts
        .into_par_iter()
        .map(|a| {
            let mut part = FeatureRows {
                indptr: Vec::new(),
                indices: Vec::new(),
                values: Vec::new(),
                squares: Vec::new(),
                n_cols,
            };
            let mut row: Vec<(u32, f64)> = Vec::new();
            let mut unseen: Vec<(usize, &[u8], f64)> = Vec::new();
            for i in a..(a + CHUNK).min(col.len()) {
                row.clear();
                unseen.clear();
                map.each(col.get(i), |slot, w, v| {
                    match ids.get(slot).and_then(|m| m.get(w)) {
                        Some(&u) => row.push((u, v)),
                        None => unseen.push((slot, w, v)),
                    }
                });
                let before = part.indices.len();
                let sq = merge(&mut row, &mut part.indices, &mut part.values);
                part.squares.push(sq + unseen_squares(&mut unseen));
                part.indptr.push(part.indices.len() - before);
            }
            part
        })
        .collect();
    let nnz = parts.iter().map(|p| p.indices.len()).sum();
    let mut out = FeatureRows {
        indptr: Vec::with_capacity(col.len() + 1),
        indices: Vec::with_capacity(nnz),
        values: Vec::with_capacity(nnz),
        squares: Vec::with_capacity(col.len()),
        n_cols,
    };
    out.indptr.push(0);
    for part in parts {
        for l in part.indptr {
            out.indptr.push(out.indptr.last().copied().unwrap_or(0) + l);
        }
        out.indices.extend_from_slice(&part.indices);
        out.values.extend_from_slice(&part.values);
        out.squares.extend_from_slice(&part.squares);
    }
    out
}

/// Fits the feature map of `func` (kernel `m`, for errors) on the training sequences `col`:
/// its vocabulary (the substrings of `col`, numbered in order of first occurrence) and the
/// training rows.
///
/// # Errors
/// An invalid parameter, a weighted degree with shifts, or one on sequences of different
/// lengths.
pub fn fit_features(
    m: usize,
    func: SeqKernelFn,
    col: &SeqColumn,
) -> Result<(FeatureRows, Vocabulary)> {
    let map = Map::of(m, func)?;
    let length = match map {
        Map::WeightedDegree { .. } => wd_length(m, col, None)?,
        Map::Spectrum { .. } => 0,
    };
    let mut ids: Vec<KmerIds<'_>> = (0..map.slots(length)).map(|_| KmerIds::default()).collect();
    let mut order: Vec<(u32, &[u8])> = Vec::new();
    for i in 0..col.len() {
        map.each(col.get(i), |slot, w, _| {
            let next = order.len() as u32;
            ids[slot].entry(w).or_insert_with(|| {
                order.push((slot as u32, w));
                next
            });
        });
    }
    let n_cols = order.len();
    let out = rows(&map, col, &ids, n_cols);
    let kmers: Vec<&[u8]> = order.iter().map(|&(_, w)| w).collect();
    let vocab = Vocabulary {
        kmers: SeqColumn::from_strings(&kmers),
        positions: order.iter().map(|&(l, _)| l).collect(),
        length,
    };
    Ok((out, vocab))
}

/// The feature rows of the sequences `col` under the map of `func` fitted as `vocab`
/// ([`fit_features`]); substrings outside the vocabulary are dropped.
///
/// # Errors
/// As [`fit_features`], and for the weighted degree sequences of another length than the
/// training ones, or a vocabulary that is not one of a fit.
pub fn features(
    m: usize,
    func: SeqKernelFn,
    col: &SeqColumn,
    vocab: &Vocabulary,
) -> Result<FeatureRows> {
    let map = Map::of(m, func)?;
    if let Map::WeightedDegree { .. } = map {
        wd_length(m, col, Some(vocab.length))?;
    }
    let slots = map.slots(vocab.length);
    if vocab.positions.len() != vocab.kmers.len()
        || vocab.positions.iter().any(|&l| l as usize >= slots)
    {
        return Err(MkError::Shape(format!(
            "a feature vocabulary of {} substrings with {} positions below {slots}",
            vocab.kmers.len(),
            vocab.positions.len()
        )));
    }
    let mut ids: Vec<KmerIds<'_>> = (0..slots).map(|_| KmerIds::default()).collect();
    for (u, &l) in vocab.positions.iter().enumerate() {
        ids[l as usize].insert(vocab.kmers.get(u), u as u32);
    }
    Ok(rows(&map, col, &ids, vocab.kmers.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::sequence::SeqKernel;
    use crate::kernels::BlockKernel;

    fn random(n: usize, len: impl Fn(usize) -> usize, seed: u64) -> SeqColumn {
        let mut state = seed;
        let seqs: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                (0..len(i))
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        b"ACGT"[(state >> 33) as usize % 4]
                    })
                    .collect()
            })
            .collect();
        SeqColumn::from_strings(&seqs)
    }

    fn dot(a: &FeatureRows, i: usize, b: &FeatureRows, j: usize) -> f64 {
        let (ra, rb) = (a.indptr[i]..a.indptr[i + 1], b.indptr[j]..b.indptr[j + 1]);
        let mut sum = 0.0;
        for p in ra {
            for q in rb.clone() {
                if a.indices[p] == b.indices[q] {
                    sum += a.values[p] * b.values[q];
                }
            }
        }
        sum
    }

    /// `F_a F_bᵀ` equals the kernel's cross block (unseen substrings of `b` dropped).
    fn check(func: SeqKernelFn, train: &SeqColumn, new: &SeqColumn) {
        let (ft, vocab) = fit_features(0, func, train).unwrap();
        let fn_ = features(0, func, new, &vocab).unwrap();
        assert_eq!(features(0, func, train, &vocab).unwrap(), ft);
        let kern = SeqKernel::new(0, func, new, Some(train)).unwrap();
        let (na, nb) = (new.len(), train.len());
        let mut want = vec![0.0; na * nb];
        kern.rows(0..na, &mut want).unwrap();
        for i in 0..na {
            for j in 0..nb {
                let got = dot(&fn_, i, &ft, j);
                let w = want[i * nb + j];
                assert!((got - w).abs() <= 1e-12 * w.max(1.0), "{func:?} {i} {j}");
            }
        }
        let mut own = vec![0.0; na];
        SeqKernel::new(0, func, new, None)
            .unwrap()
            .self_values(0..na, &mut own)
            .unwrap();
        for (a, b) in fn_.squares.iter().zip(&own) {
            assert!((a - b).abs() <= 1e-12 * b.max(1.0), "{func:?}");
        }
    }

    #[test]
    fn spectrum_features_give_the_kernel() {
        let train = random(15, |i| i * 2, 1);
        let new = random(6, |i| 5 + 3 * i, 2);
        for k in [1, 3, 6] {
            check(SeqKernelFn::Spectrum { k }, &train, &new);
        }
        let (f, vocab) = fit_features(0, SeqKernelFn::Spectrum { k: 2 }, &train).unwrap();
        assert!(f.indptr.windows(2).all(|w| w[1] - w[0] <= 16));
        assert!(vocab.positions.iter().all(|&l| l == 0));
    }

    #[test]
    fn weighted_degree_features_give_the_kernel() {
        for (len, d) in [(12, 4), (30, 8), (3, 5), (0, 2)] {
            let f = SeqKernelFn::WeightedDegree {
                degree: d,
                shift: 0,
            };
            check(f, &random(10, |_| len, 3), &random(4, |_| len, 4));
        }
    }

    #[test]
    fn shifts_and_other_lengths_are_refused() {
        let col = random(3, |_| 8, 5);
        let shifted = SeqKernelFn::WeightedDegree {
            degree: 3,
            shift: 1,
        };
        assert!(matches!(
            fit_features(4, shifted, &col),
            Err(MkError::KernelFunction { kernel: 4, .. })
        ));
        let f = SeqKernelFn::WeightedDegree {
            degree: 3,
            shift: 0,
        };
        let (_, vocab) = fit_features(0, f, &col).unwrap();
        assert!(features(0, f, &random(2, |_| 9, 6), &vocab).is_err());
        assert!(fit_features(0, f, &random(2, |i| 4 + i, 6)).is_err());
    }
}
