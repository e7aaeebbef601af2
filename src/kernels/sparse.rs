//! Sparse points (CSR): the pairwise sums of [`crate::kernels::pairwise`] computed from the
//! entries two rows store, never from a dense copy, so that [`crate::kernels::gram`] takes
//! sparse `X` (TF-IDF, one-hot, fingerprints) at the cost of its non-zeros.
//!
//! Each sum is a merge of the two rows' sorted column indices: a column stored in one row
//! only contributes the dense path's term with a zero on the other side (`|x|` to an ℓ1
//! distance, `x` to a χ² sum, `min(x, 0)` to a sum of minima), and a column stored in neither
//! contributes `term(0, 0) = 0` to every sum, so it is skipped. The per-column terms are the
//! dense path's ([`term`]): one formula per kernel.

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::kernels::pairwise::{term, PairSum};

/// A sparse matrix in compressed sparse row form: row `i` stores the columns
/// `indices[indptr[i]..indptr[i + 1]]`, strictly increasing, with the values `data[..]` at
/// the same positions; every other entry is 0.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix {
    nrows: usize,
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<f64>,
}

impl CsrMatrix {
    /// A CSR matrix of `ncols` columns and `indptr.len() − 1` rows, checked: `indptr` starts
    /// at 0, never decreases and ends at `indices.len() == data.len()`; each row's indices are
    /// strictly increasing (sorted, no duplicates: scipy's canonical format) and below
    /// `ncols`.
    pub fn new(
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<usize>,
        data: Vec<f64>,
    ) -> Result<Self> {
        let bad = |reason: String| Err(MkError::Shape(format!("sparse X: {reason}")));
        if indptr.first() != Some(&0) {
            return bad("indptr must start at 0".into());
        }
        if indices.len() != data.len() || indptr.last() != Some(&indices.len()) {
            return bad(format!(
                "indptr ends at {:?} but there are {} indices and {} values",
                indptr.last(),
                indices.len(),
                data.len()
            ));
        }
        for (i, w) in indptr.windows(2).enumerate() {
            if w[1] < w[0] || w[1] > indices.len() {
                return bad(format!("indptr decreases at row {i}"));
            }
            let row = &indices[w[0]..w[1]];
            if row.windows(2).any(|p| p[1] <= p[0]) {
                return bad(format!(
                    "the column indices of row {i} are not strictly increasing (sort them and \
                     sum the duplicates: scipy's sum_duplicates)"
                ));
            }
            if let Some(&j) = row.last().filter(|&&j| j >= ncols) {
                return bad(format!(
                    "row {i} stores column {j}, out of range for {ncols} columns"
                ));
            }
        }
        Ok(CsrMatrix {
            nrows: indptr.len() - 1,
            ncols,
            indptr,
            indices,
            data,
        })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The positions of the stored entries of `rows` in [`CsrMatrix::values`].
    pub(crate) fn row_range(&self, rows: Range<usize>) -> Range<usize> {
        self.indptr[rows.start]..self.indptr[rows.end]
    }

    /// Every stored value, row after row.
    pub(crate) fn values(&self) -> &[f64] {
        &self.data
    }

    /// The stored columns and values of row `i`.
    #[inline]
    pub(crate) fn row(&self, i: usize) -> (&[usize], &[f64]) {
        let r = self.indptr[i]..self.indptr[i + 1];
        (&self.indices[r.clone()], &self.data[r])
    }

    /// Every stored entry `(i, j, x_ij)`, row by row.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        (0..self.nrows).flat_map(move |i| {
            let (idx, val) = self.row(i);
            idx.iter().zip(val).map(move |(&j, &v)| (i, j, v))
        })
    }

    /// The columns `features` (all when `None`) as a CSR matrix whose column `k` is column
    /// `features[k]` (repeated and reordered columns too, as the dense selection), of their
    /// square roots when `sqrt` (`√0 = 0`: the zeros stay unstored).
    pub(crate) fn select(&self, features: &Option<Vec<usize>>, sqrt: bool) -> CsrMatrix {
        let mut out = match features {
            None => self.clone(),
            Some(f) => {
                // (old column, new position) sorted by old column: each stored entry finds
                // its new positions by binary search, in memory of the selection's size, not
                // of the (maybe millions of) columns.
                let mut map: Vec<(usize, usize)> =
                    f.iter().enumerate().map(|(k, &j)| (j, k)).collect();
                map.sort_unstable();
                let mut indptr = Vec::with_capacity(self.nrows + 1);
                indptr.push(0);
                let (mut indices, mut data) = (Vec::new(), Vec::new());
                let mut row: Vec<(usize, f64)> = Vec::new();
                for i in 0..self.nrows {
                    row.clear();
                    let (idx, val) = self.row(i);
                    for (&j, &v) in idx.iter().zip(val) {
                        let first = map.partition_point(|&(c, _)| c < j);
                        let to = map[first..].iter().take_while(|&&(c, _)| c == j);
                        row.extend(to.map(|&(_, k)| (k, v)));
                    }
                    row.sort_unstable_by_key(|&(k, _)| k);
                    indices.extend(row.iter().map(|&(k, _)| k));
                    data.extend(row.iter().map(|&(_, v)| v));
                    indptr.push(indices.len());
                }
                CsrMatrix {
                    nrows: self.nrows,
                    ncols: f.len(),
                    indptr,
                    indices,
                    data,
                }
            }
        };
        if sqrt {
            out.data.iter_mut().for_each(|v| *v = v.sqrt());
        }
        out
    }

    /// The first stored entry that is not finite, as `(row, column)`.
    pub(crate) fn first_non_finite(&self) -> Option<(usize, usize)> {
        self.entries()
            .find(|&(_, _, v)| !v.is_finite())
            .map(|(i, j, _)| (i, j))
    }

    /// Each row's sum `kind` with itself ([`PairSum::own`] of its stored values: the zeros
    /// add nothing to `‖x‖²` or `Σ x`).
    pub(crate) fn own(&self, kind: PairSum) -> Vec<f64> {
        (0..self.nrows).map(|i| kind.own(self.row(i).1)).collect()
    }
}

/// `s(a, b)` of two sparse rows (their stored columns and values), by a merge of their
/// sorted columns.
#[inline]
pub(crate) fn pair(
    kind: PairSum,
    (ia, va): (&[usize], &[f64]),
    (ib, vb): (&[usize], &[f64]),
) -> f64 {
    let (mut p, mut q, mut s) = (0, 0, 0.0);
    while p < ia.len() && q < ib.len() {
        let (ja, jb) = (ia[p], ib[q]);
        if ja == jb {
            s += term(kind, va[p], vb[q]);
            p += 1;
            q += 1;
        } else if ja < jb {
            s += term(kind, va[p], 0.0);
            p += 1;
        } else {
            s += term(kind, 0.0, vb[q]);
            q += 1;
        }
    }
    // The inner product's one-sided terms are 0: only the other sums read the tails.
    if kind != PairSum::Dot {
        s += va[p..].iter().map(|&x| term(kind, x, 0.0)).sum::<f64>();
        s += vb[q..].iter().map(|&y| term(kind, 0.0, y)).sum::<f64>();
    }
    s
}

/// `out[r, c] = s(a_i, b_j)` for the rows `i` in `rows` of `a` and `j` in `cols` of `b`
/// (row-major, `rows.len() × cols.len()`), sequentially.
pub(crate) fn sums_block(
    kind: PairSum,
    a: &CsrMatrix,
    b: &CsrMatrix,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [f64],
) {
    let w = cols.len();
    for (i, o) in rows.zip(out.chunks_mut(w.max(1))) {
        let ra = a.row(i);
        for (j, v) in cols.clone().zip(o.iter_mut()) {
            *v = pair(kind, ra, b.row(j));
        }
    }
}

/// The matrix `S[i, j] = s(a_i, b_j)` (row-major `na × nb`), rows in parallel; when
/// `symmetric` (`b` is `a`), the lower triangle is computed and mirrored, so that `S` is
/// exactly symmetric (as [`crate::kernels::pairwise::sum_matrix`]).
pub(crate) fn sum_matrix(kind: PairSum, a: &CsrMatrix, b: &CsrMatrix, symmetric: bool) -> Vec<f64> {
    let (na, nb) = (a.nrows, b.nrows);
    let mut s = vec![0.0; na * nb];
    if nb == 0 {
        return s;
    }
    s.par_chunks_mut(nb).enumerate().for_each(|(i, row)| {
        let end = if symmetric { i + 1 } else { nb };
        sums_block(kind, a, b, i..i + 1, 0..end, &mut row[..end]);
    });
    if symmetric {
        // Only the lower triangle was computed (na = nb).
        crate::kernels::stack::mirror(&mut s, na, false);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::pairwise;

    /// A dense `n × d` matrix with about half its entries 0 (whole zero rows too), and its
    /// CSR form.
    fn data(n: usize, d: usize) -> (Vec<f64>, CsrMatrix) {
        let x: Vec<f64> = (0..n * d)
            .map(|t| {
                let (i, h) = (t / d, (t * 7919 + 13) % 101);
                if i == 3 || h % 2 == 0 {
                    0.0
                } else {
                    h as f64 / 10.0
                }
            })
            .collect();
        (x.clone(), csr_of(&x, n, d))
    }

    fn csr_of(x: &[f64], n: usize, d: usize) -> CsrMatrix {
        let (mut indptr, mut indices, mut vals) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for j in 0..d {
                if x[i * d + j] != 0.0 {
                    indices.push(j);
                    vals.push(x[i * d + j]);
                }
            }
            indptr.push(indices.len());
        }
        CsrMatrix::new(d, indptr, indices, vals).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn sums_match_the_dense_sums() {
        let (n, d) = (23, 11);
        let (x, c) = data(n, d);
        let (y, cy) = data(7, d);
        for kind in [PairSum::Dot, PairSum::L1, PairSum::Chi2, PairSum::Min] {
            let dense = pairwise::sum_matrix(kind, &x, &x, d, true);
            let sparse = sum_matrix(kind, &c, &c, true);
            assert!(
                dense.iter().zip(&sparse).all(|(&a, &b)| close(a, b)),
                "{kind:?}"
            );
            assert!((0..n).all(|i| (0..n).all(|j| sparse[i * n + j] == sparse[j * n + i])));
            let dense = pairwise::sum_matrix(kind, &y, &x, d, false);
            let sparse = sum_matrix(kind, &cy, &c, false);
            assert!(
                dense.iter().zip(&sparse).all(|(&a, &b)| close(a, b)),
                "{kind:?}"
            );
            let own: Vec<f64> = x.chunks(d).map(|r| kind.own(r)).collect();
            assert!(own.iter().zip(c.own(kind)).all(|(&a, b)| close(a, b)));
        }
    }

    #[test]
    fn one_sided_terms_count_in_distances() {
        // Disjoint supports: ℓ1 = Σ|x| + Σ|y|, χ² = Σ x + Σ y, min = 0, dot = 0.
        let c =
            CsrMatrix::new(4, vec![0, 2, 4], vec![0, 2, 1, 3], vec![1.0, 2.0, 3.0, 0.5]).unwrap();
        let (a, b) = (c.row(0), c.row(1));
        assert_eq!(pair(PairSum::L1, a, b), 6.5);
        assert_eq!(pair(PairSum::Chi2, a, b), 6.5);
        assert_eq!(pair(PairSum::Min, a, b), 0.0);
        assert_eq!(pair(PairSum::Dot, a, b), 0.0);
    }

    #[test]
    fn select_matches_the_dense_columns() {
        let (n, d) = (9, 6);
        let (x, c) = data(n, d);
        let f = vec![4, 1, 4, 0];
        let picked: Vec<f64> = (0..n)
            .flat_map(|i| f.iter().map(move |&j| i * d + j))
            .map(|t| x[t].sqrt())
            .collect();
        assert_eq!(
            c.select(&Some(f.clone()), true),
            csr_of(&picked, n, f.len())
        );
        assert_eq!(c.select(&None, false), c);
    }

    #[test]
    fn grams_match_the_dense_grams() {
        use crate::interrupt::NoInterrupt;
        use crate::kernels::{cross_gram, gram, GramOptions, KernelFn, KernelSpec, Normalization};
        use ndarray::ArrayView2;
        let (n, d) = (19, 8);
        let (x, c) = data(n, d);
        let (y, cy) = data(6, d);
        let (xv, yv) = (
            ArrayView2::from_shape((n, d), &x).unwrap(),
            ArrayView2::from_shape((6, d), &y).unwrap(),
        );
        let funcs = [
            KernelFn::Linear,
            KernelFn::Polynomial {
                degree: 3,
                coef0: 1.0,
                scale: 0.1,
            },
            KernelFn::Gaussian { sigma: 2.0 },
            KernelFn::Laplacian { sigma: 3.0 },
            KernelFn::Chi2 { gamma: 0.2 },
            KernelFn::Intersection,
            KernelFn::Hellinger,
            KernelFn::Tanimoto,
        ];
        let mut specs: Vec<KernelSpec> = funcs.iter().map(|&f| KernelSpec::new(f)).collect();
        specs.extend(funcs.iter().map(|&f| KernelSpec::on(f, vec![5, 0, 5, 2])));
        for (normalization, center) in [
            (Normalization::None, false),
            (Normalization::Spherical, false),
            (Normalization::Multiplicative, true),
        ] {
            let opts = GramOptions {
                normalization,
                center,
                ..GramOptions::default()
            };
            let (gd, sd) = gram::<f64>(xv, &specs, &opts, &NoInterrupt).unwrap();
            let (gs, ss) = gram::<f64>(&c, &specs, &opts, &NoInterrupt).unwrap();
            assert!(gd.iter().zip(gs.iter()).all(|(&a, &b)| close(a, b)));
            let cd = cross_gram::<f64>(yv, xv, &specs, &sd, &opts, &NoInterrupt).unwrap();
            let cs = cross_gram::<f64>(&cy, &c, &specs, &ss, &opts, &NoInterrupt).unwrap();
            assert!(cd.iter().zip(cs.iter()).all(|(&a, &b)| close(a, b)));
            // Sparse against dense points is refused, not read as something else.
            assert!(cross_gram::<f64>(&cy, xv, &specs, &ss, &opts, &NoInterrupt).is_err());
        }
    }

    #[test]
    fn negative_stored_entries_are_refused_where_read() {
        use crate::interrupt::NoInterrupt;
        use crate::kernels::{gram, GramOptions, KernelFn, KernelSpec};
        let c = CsrMatrix::new(3, vec![0, 1, 3], vec![1, 0, 2], vec![1.0, 2.0, -1.0]).unwrap();
        let opts = GramOptions::default();
        let on = |f| {
            gram::<f64>(
                &c,
                &[KernelSpec::on(KernelFn::Chi2 { gamma: 1.0 }, f)],
                &opts,
                &NoInterrupt,
            )
        };
        let e = on(vec![0, 2]).unwrap_err().to_string();
        assert!(e.contains("X[1, 2] = -1"), "{e}");
        assert!(on(vec![0, 1]).is_ok());
        let nan = CsrMatrix::new(3, vec![0, 1], vec![2], vec![f64::NAN]).unwrap();
        let lin = [KernelSpec::new(KernelFn::Linear)];
        assert!(gram::<f64>(&nan, &lin, &opts, &NoInterrupt).is_err());
    }

    #[test]
    fn malformed_input_is_refused() {
        let e = |r: Result<CsrMatrix>| r.unwrap_err().to_string();
        assert!(e(CsrMatrix::new(3, vec![0, 2], vec![2, 1], vec![1.0, 1.0])).contains("increasing"));
        assert!(e(CsrMatrix::new(3, vec![0, 2], vec![1, 1], vec![1.0, 1.0])).contains("increasing"));
        assert!(e(CsrMatrix::new(2, vec![0, 1], vec![2], vec![1.0])).contains("out of range"));
        assert!(e(CsrMatrix::new(2, vec![0, 2], vec![0], vec![1.0])).contains("indptr"));
        assert!(e(CsrMatrix::new(2, vec![1, 1], vec![0], vec![1.0])).contains("start at 0"));
        assert!(e(CsrMatrix::new(2, vec![0, 1, 0], vec![0], vec![1.0])).contains("indptr"));
    }
}
