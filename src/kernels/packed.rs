//! A stack restricted to a growing set of points: the working set of a solver whose
//! coefficients are zero off a few points (the support vectors of ℓp-MKL's SVM steps).
//!
//! Each kernel `K_m[W, W]` keeps its upper triangle only, packed column by column (LAPACK's
//! `'U'` packed layout: column `j` holds `K[0..=j, j]`), and the `M` kernels' columns `j` are
//! stored one after another, point by point. Adding a point then appends one block at the end
//! and leaves the stored ones in place; only the memory in use is ever written; and the
//! passes over all kernels (`combine`, `quad_forms`) read the memory in order.

use rayon::prelude::*;

use crate::kernels::simd::avx2_dispatch;
use crate::kernels::stack::{
    mirror, nonzeros, ordered_sum, weighted, with_huge_capacity, SUM_CHUNKS,
};
use crate::kernels::{Element, KernelStack};
use crate::linalg::dot;

/// Entries of the first `j` packed columns of one kernel.
#[inline(always)]
fn tri(j: usize) -> usize {
    j * (j + 1) / 2
}

/// `K_m[W, W]` for the points `W` of a source stack, packed (see the module docs).
pub struct PackedStack<T: Element> {
    /// Point `j`'s block, at `m·tri(j)`, holds kernel `k`'s column `j` at `k·(j+1)`.
    data: Vec<T>,
    m: usize,
    /// The source's indices of the points, in local order.
    idx: Vec<usize>,
}

/// `acc[k] += v_j (K_jj v_j + 2 Σ_{i<j} K_ij v_i)` for the kernels `kernels` (local `k`) of
/// the block `blk` of point `j`: summed over the `j` with `v_j ≠ 0`, `vᵀK_mv`.
#[inline(always)]
fn quad_block<T: Element>(blk: &[T], j: usize, v: &[f64], kernels: &[usize], acc: &mut [f64]) {
    for (a, &m) in acc.iter_mut().zip(kernels) {
        let col = &blk[m * (j + 1)..(m + 1) * (j + 1)];
        *a += v[j] * (2.0 * dot(&col[..j], &v[..j]) + col[j].to_f64() * v[j]);
    }
}

avx2_dispatch! {
    fn quad_block_dispatch<T>(
        blk: &[T],
        j: usize,
        v: &[f64],
        kernels: &[usize],
        acc: &mut [f64],
    ) = quad_block;
}

/// `out = Σ_{(m, t) ∈ active} t · K_m[..=j, j]` from the block `blk` of point `j`.
#[inline(always)]
fn combine_block<T: Element>(blk: &[T], active: &[(usize, f64)], j: usize, out: &mut [f64]) {
    out.fill(0.0);
    for &(m, t) in active {
        for (o, x) in out.iter_mut().zip(&blk[m * (j + 1)..(m + 1) * (j + 1)]) {
            *o += t * x.to_f64();
        }
    }
}

avx2_dispatch! {
    fn combine_block_dispatch<T>(
        blk: &[T],
        active: &[(usize, f64)],
        j: usize,
        out: &mut [f64],
    ) = combine_block;
}

impl<T: Element> PackedStack<T> {
    /// The kernels of `source` on the points `idx` (distinct), with room reserved for `cap`
    /// points before [`extend`](Self::extend) reallocates. Reserved room costs address space
    /// only.
    pub fn new(source: &dyn KernelStack, idx: &[usize], cap: usize) -> Self {
        let m = source.m();
        let data = with_huge_capacity::<T>(m * tri(cap.max(idx.len())));
        let mut s = PackedStack {
            data,
            m,
            idx: Vec::new(),
        };
        s.extend(source, idx);
        s
    }

    /// The source's indices of the points, in local order.
    pub fn indices(&self) -> &[usize] {
        &self.idx
    }

    /// The block of point `j`.
    #[inline]
    fn block(&self, j: usize) -> &[T] {
        &self.data[self.m * tri(j)..self.m * tri(j + 1)]
    }

    /// Kernel `m`'s packed column `j`, `K_m[..=j, j]`.
    #[inline]
    fn col(&self, m: usize, j: usize) -> &[T] {
        &self.block(j)[m * (j + 1)..(m + 1) * (j + 1)]
    }

    /// Appends the points `more` (not yet in the set) of `source`: one block per point, read
    /// from the source's columns of that point; the stored blocks and the local indices of
    /// the other points do not change.
    pub fn extend(&mut self, source: &dyn KernelStack, more: &[usize]) {
        debug_assert!(more.iter().all(|i| !self.idx.contains(i)));
        let (first, m) = (self.idx.len(), self.m);
        self.idx.extend_from_slice(more);
        let (old, new) = (self.data.len(), m * tri(self.idx.len()));
        self.data.reserve(new - old);
        // The new blocks are written straight into the spare room: a zero fill first would
        // write (and page-fault) every byte twice.
        let mut blocks = Vec::with_capacity(more.len());
        let mut rest = &mut self.data.spare_capacity_mut()[..new - old];
        for j in first..self.idx.len() {
            let (blk, tail) = rest.split_at_mut(m * (j + 1));
            blocks.push((j, blk));
            rest = tail;
        }
        let idx = &self.idx;
        blocks.into_par_iter().for_each_init(
            || vec![0.0; idx.len()],
            |col, (j, blk)| {
                for (k, dst) in blk.chunks_exact_mut(j + 1).enumerate() {
                    source.column_at(k, idx[j], &idx[..=j], &mut col[..=j]);
                    for (o, &x) in dst.iter_mut().zip(col.iter()) {
                        o.write(T::from_f64(x));
                    }
                }
            },
        );
        // SAFETY: the blocks tile `new - old` values of the spare room, and each block's M
        // columns of `j + 1` values were all written above.
        unsafe { self.data.set_len(new) };
    }
}

impl<T: Element> KernelStack for PackedStack<T> {
    fn n(&self) -> usize {
        self.idx.len()
    }

    fn m(&self) -> usize {
        self.m
    }

    fn single_precision(&self) -> bool {
        std::mem::size_of::<T>() == 4
    }

    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]) {
        let nz = nonzeros(v);
        // Parallel over points in memory order, in chunks of equal work (point j costs j + 1).
        let total: usize = nz.iter().map(|j| j + 1).sum();
        let mut bounds = vec![0];
        let mut work = 0;
        for (a, &j) in nz.iter().enumerate() {
            work += j + 1;
            if work * SUM_CHUNKS >= total * bounds.len() && a + 1 < nz.len() {
                bounds.push(a + 1);
            }
        }
        bounds.push(nz.len());
        let acc = ordered_sum(&nz, &bounds, idx.len(), |js, acc| {
            for &j in js {
                quad_block_dispatch(self.block(j), j, v, idx, acc);
            }
        });
        out.copy_from_slice(&acc);
    }

    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        let n = self.n().max(1);
        let b = vs.len() / n;
        let mut one = vec![0.0; idx.len()];
        for (r, v) in vs.chunks_exact(n).enumerate() {
            self.quad_forms_subset(v, idx, &mut one);
            for (k, q) in one.iter().enumerate() {
                out[k * b + r] = *q;
            }
        }
    }

    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        for j in 0..self.n() {
            let col = self.col(m, j);
            // Column j above the diagonal feeds out[..j]; by symmetry it is also row j.
            for (o, x) in out[..j].iter_mut().zip(col) {
                *o += v[j] * x.to_f64();
            }
            out[j] += dot(col, &v[..=j]);
        }
    }

    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        let w = self.n();
        let active = weighted(&theta[..self.m]);
        // Column j of the upper triangle is row j's lower part: fill the lower triangle row
        // by row in parallel, then mirror it.
        out[..w * w]
            .par_chunks_mut(w.max(1))
            .enumerate()
            .for_each(|(j, row)| {
                combine_block_dispatch(self.block(j), &active, j, &mut row[..=j]);
            });
        mirror(&mut out[..w * w], w, false);
    }

    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        for (r, o) in out.iter_mut().enumerate().take(self.n()) {
            *o = if r <= i {
                self.col(m, i)[r]
            } else {
                self.col(m, r)[i]
            }
            .to_f64();
        }
    }

    fn diag(&self, m: usize, out: &mut [f64]) {
        for (j, o) in out.iter_mut().enumerate().take(self.n()) {
            *o = self.col(m, j)[j].to_f64();
        }
    }
}

/// The stack restricted to the points `idx` of `source`, in the source's precision, with
/// room for `cap` points: the working set of [`crate::solvers::lp`]'s analytic solver. A
/// source computed on demand is packed while the packed kernels fit in its share of the cache
/// budget ([`OnDemandStack::packed_bytes`](crate::kernels::OnDemandStack::packed_bytes)), and
/// read on demand past it.
pub fn point_subset(source: &dyn KernelStack, idx: &[usize], cap: usize) -> PointSubset {
    if let Some(od) = source.on_demand() {
        let fits = packed_fit(source.m(), od.packed_bytes());
        if idx.len() > fits {
            return PointSubset::OnDemand(od.subset(idx), idx.to_vec());
        }
        return PointSubset::F64(PackedStack::new(source, idx, cap.min(fits)));
    }
    if source.single_precision() {
        PointSubset::F32(PackedStack::new(source, idx, cap))
    } else {
        PointSubset::F64(PackedStack::new(source, idx, cap))
    }
}

/// The most points whose `m` packed f64 kernels fit in `bytes`.
fn packed_fit(m: usize, bytes: usize) -> usize {
    let per_kernel = bytes as f64 / (8.0 * m.max(1) as f64);
    // tri(w) = w(w+1)/2 ≤ per_kernel.
    ((2.0 * per_kernel + 0.25).sqrt() - 0.5).floor().max(0.0) as usize
}

/// A [`PackedStack`] of either precision, or a view of an on-demand stack with the source's
/// indices of its points.
pub enum PointSubset {
    F64(PackedStack<f64>),
    F32(PackedStack<f32>),
    OnDemand(crate::kernels::OnDemandStack, Vec<usize>),
}

impl PointSubset {
    /// The stack, read-only.
    pub fn stack(&self) -> &dyn KernelStack {
        match self {
            PointSubset::F64(s) => s,
            PointSubset::F32(s) => s,
            PointSubset::OnDemand(s, _) => s,
        }
    }

    /// The source's indices of the points, in local order.
    pub fn indices(&self) -> &[usize] {
        match self {
            PointSubset::F64(s) => s.indices(),
            PointSubset::F32(s) => s.indices(),
            PointSubset::OnDemand(_, idx) => idx,
        }
    }

    /// See [`PackedStack::extend`]; a packed subset of an on-demand source that would outgrow
    /// its share of the source's cache budget becomes an on-demand view.
    pub fn extend(&mut self, source: &dyn KernelStack, more: &[usize]) {
        if let (PointSubset::F64(s), Some(od)) = (&*self, source.on_demand()) {
            if s.indices().len() + more.len() > packed_fit(source.m(), od.packed_bytes()) {
                let mut idx = s.indices().to_vec();
                idx.extend_from_slice(more);
                *self = PointSubset::OnDemand(od.subset(&idx), idx);
                return;
            }
        }
        match self {
            PointSubset::F64(s) => s.extend(source, more),
            PointSubset::F32(s) => s.extend(source, more),
            PointSubset::OnDemand(s, idx) => {
                let od = source
                    .on_demand()
                    .expect("an on-demand view has an on-demand source");
                s.extend(od, more);
                idx.extend_from_slice(more);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::stack::tests::kernels;
    use crate::kernels::{DenseStack, LowRankStack};

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
    }

    /// Every method of the packed subset against the naive reads of the source at the
    /// source's indices, after a first gather in unsorted order and two growths (the second
    /// past the capacity), for f64, f32 and low-rank sources.
    #[test]
    fn packed_subset_matches_the_source_entries() {
        let (m, n) = (3, 41);
        let d64 = kernels(m, n);
        let d32: Vec<f32> = d64.iter().map(|&x| x as f32).collect();
        let f64s = DenseStack::new(&d64, m, n).unwrap();
        let f32s = DenseStack::new(&d32, m, n).unwrap();
        let lr = LowRankStack::from_dense(&f64s, 0.0, n).unwrap();
        let sources: [(&dyn KernelStack, f64); 3] = [(&f64s, 1e-12), (&f32s, 1e-6), (&lr, 1e-9)];
        for (src, tol) in sources {
            let mut sub = point_subset(src, &[7, 3, 30, 12], 6);
            sub.extend(src, &[0, 40]);
            sub.extend(src, &[21, 5, 9]);
            let idx = sub.indices().to_vec();
            assert_eq!(idx, [7, 3, 30, 12, 0, 40, 21, 5, 9]);
            let s = sub.stack();
            assert_eq!((s.m(), s.n()), (m, idx.len()));
            assert_eq!(
                s.single_precision(),
                std::ptr::eq(src, &f32s as &dyn KernelStack)
            );
            let w = idx.len();
            let entry = |k: usize, a: usize, b: usize| {
                let mut c = vec![0.0; n];
                src.column(k, idx[b], &mut c);
                c[idx[a]]
            };
            let mut v: Vec<f64> = (0..w).map(|i| (i as f64 * 0.7).sin()).collect();
            v[2] = 0.0;
            let theta = [0.5, 0.0, 2.0];
            let mut kt = vec![0.0; w * w];
            s.combine(&theta, &mut kt);
            let mut quad = vec![0.0; m];
            s.quad_forms(&v, &mut quad);
            let mut batch = vec![0.0; 2 * m];
            let vs: Vec<f64> = v.iter().copied().chain(v.iter().map(|x| x * x)).collect();
            s.quad_forms_batch(&vs, &mut batch);
            for k in 0..m {
                let mut q = 0.0;
                let mut col = vec![0.0; w];
                let mut mv = vec![0.0; w];
                let mut dg = vec![0.0; w];
                s.matvec(k, &v, &mut mv);
                s.diag(k, &mut dg);
                let mut q2 = 0.0;
                for b in 0..w {
                    s.column(k, b, &mut col);
                    let mut row = 0.0;
                    for a in 0..w {
                        let e = entry(k, a, b);
                        close(col[a], e, tol);
                        q += v[a] * e * v[b];
                        q2 += vs[w + a] * e * vs[w + b];
                        row += e * v[a];
                    }
                    close(mv[b], row, tol);
                    close(dg[b], entry(k, b, b), tol);
                }
                close(quad[k], q, tol);
                close(batch[2 * k], q, tol);
                close(batch[2 * k + 1], q2, tol);
            }
            for a in 0..w {
                for b in 0..w {
                    let e: f64 = (0..m).map(|k| theta[k] * entry(k, a, b)).sum();
                    close(kt[a * w + b], e, tol);
                }
            }
        }
    }
}
