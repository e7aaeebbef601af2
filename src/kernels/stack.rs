//! The kernel stack: the one abstraction through which every solver reads its `M` Gram matrices.
//!
//! The cost model is memory bandwidth: a solver's hot loop is `quad_forms`, `vᵀ K_m v` for all
//! `m`, one pass over the stack. The dense implementations read only the upper triangle
//! (`vᵀKv = Σ_i K_ii v_i² + 2 Σ_{i<j} K_ij v_i v_j`), half the bytes of a full pass, and
//! evaluate several vectors per pass in the batched form.

use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::kernels::Element;

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
}

/// `Σ_k a_k b_k` with eight independent accumulators, so that the loop vectorises.
#[inline(always)]
pub fn dot<T: Element>(a: &[T], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l].to_f64() * y[l];
        }
    }
    let mut s = (acc[0] + acc[4]) + (acc[1] + acc[5]) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x.to_f64() * y;
    }
    s
}

/// A dense stack `(M, n, n)`, kernel-major and row-major, borrowed (zero-copy from numpy).
#[derive(Debug, Clone, Copy)]
pub struct DenseStack<'a, T: Element> {
    data: &'a [T],
    m: usize,
    n: usize,
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
        Ok(DenseStack { data, m, n })
    }

    /// Kernel `m` as a row-major slice.
    #[inline]
    pub fn kernel(&self, m: usize) -> &'a [T] {
        &self.data[m * self.n * self.n..(m + 1) * self.n * self.n]
    }

    /// Checks that every entry is finite and every kernel symmetric within
    /// `rtol · max|K_m|`; names the first offending kernel.
    pub fn validate(&self, rtol: f64) -> Result<()> {
        let n = self.n;
        let bad = (0..self.m).into_par_iter().find_map_first(|m| {
            let k = self.kernel(m);
            if k.iter().any(|v| !v.to_f64().is_finite()) {
                return Some(MkError::NonFinite(format!(
                    "kernel {m} contains NaN or infinity"
                )));
            }
            let scale = k.iter().fold(0.0f64, |a, v| a.max(v.to_f64().abs()));
            for i in 0..n {
                for j in 0..i {
                    let (a, b) = (k[i * n + j].to_f64(), k[j * n + i].to_f64());
                    if (a - b).abs() > rtol * scale {
                        return Some(MkError::NotPsd(format!(
                            "kernel {m} is not symmetric: K[{i},{j}] = {a} but K[{j},{i}] = {b}"
                        )));
                    }
                }
            }
            None
        });
        bad.map_or(Ok(()), Err)
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
            prefetch_row(&k[next * n + next..(next + 1) * n]);
        }
        let row = &k[i * n..(i + 1) * n];
        diag += row[i].to_f64() * v[i] * v[i];
        off += v[i] * dot(&row[i + 1..], &v[i + 1..]);
    }
    diag + 2.0 * off
}

/// Hints the first cache lines of `row` into cache (no effect off x86-64).
#[inline(always)]
fn prefetch_row<T>(row: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(row);
        let base = row.as_ptr() as *const i8;
        let mut off = 0;
        while off < bytes.min(512) {
            // SAFETY: prefetching is a hint and never faults; the address lies inside `row`.
            unsafe { _mm_prefetch(base.add(off), _MM_HINT_T0) };
            off += 64;
        }
    }
}

/// The same loop compiled for AVX2, chosen at run time: wheels target baseline x86-64, where
/// the loop is compute-bound rather than memory-bound.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quad_upper_avx2<T: Element>(k: &[T], n: usize, v: &[f64], nz: &[usize]) -> f64 {
    quad_upper(k, n, v, nz)
}

#[inline]
fn quad_upper_dispatch<T: Element>(k: &[T], n: usize, v: &[f64], nz: &[usize]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports the features the function was compiled for.
            return unsafe { quad_upper_avx2(k, n, v, nz) };
        }
    }
    quad_upper(k, n, v, nz)
}

/// [`quad_upper`] for the `b = out.len()` vectors of `vs` in one pass over the kernel: each
/// row is read from memory once and stays in cache for the other vectors.
#[inline(always)]
fn quad_batch_upper<T: Element>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) {
    let b = out.len();
    let mut diag = [0.0f64; 8];
    let mut off = [0.0f64; 8];
    // Up to 8 vectors per sweep (the solvers pass 2): accumulators stay in registers.
    for j0 in (0..b).step_by(8) {
        let jn = (b - j0).min(8);
        diag[..jn].fill(0.0);
        off[..jn].fill(0.0);
        for i in 0..n {
            if i + 2 < n {
                prefetch_row(&k[(i + 2) * n + i + 2..(i + 3) * n]);
            }
            let row = &k[i * n..(i + 1) * n];
            let kii = row[i].to_f64();
            for j in 0..jn {
                let v = &vs[(j0 + j) * n..(j0 + j + 1) * n];
                diag[j] += kii * v[i] * v[i];
                off[j] += v[i] * dot(&row[i + 1..], &v[i + 1..]);
            }
        }
        for j in 0..jn {
            out[j0 + j] = diag[j] + 2.0 * off[j];
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quad_batch_upper_avx2<T: Element>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) {
    quad_batch_upper(k, n, vs, out)
}

#[inline]
fn quad_batch_dispatch<T: Element>(k: &[T], n: usize, vs: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports the features the function was compiled for.
            return unsafe { quad_batch_upper_avx2(k, n, vs, out) };
        }
    }
    quad_batch_upper(k, n, vs, out)
}

/// The indices of the non-zero entries of `v`.
fn nonzeros(v: &[f64]) -> Vec<usize> {
    (0..v.len()).filter(|&i| v[i] != 0.0).collect()
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
        out.par_iter_mut()
            .zip(idx.par_iter())
            .for_each(|(o, &m)| *o = self.quad_one(m, v, &nz));
    }

    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        let n = self.n;
        let b = vs.len() / n;
        out.par_chunks_mut(b)
            .zip(idx.par_iter())
            .for_each(|(o, &m)| quad_batch_dispatch(self.kernel(m), n, vs, o));
    }

    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        let n = self.n;
        let k = self.kernel(m);
        out.par_iter_mut()
            .enumerate()
            .for_each(|(i, o)| *o = dot(&k[i * n..(i + 1) * n], v));
    }

    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        let n = self.n;
        let active: Vec<usize> = (0..self.m).filter(|&m| theta[m] != 0.0).collect();
        // Parallel over rows: each row sums the same row of every active kernel.
        out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            row.fill(0.0);
            for &m in &active {
                let t = theta[m];
                let src = &self.kernel(m)[i * n..(i + 1) * n];
                for (o, s) in row.iter_mut().zip(src) {
                    *o += t * s.to_f64();
                }
            }
        });
    }

    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        // Symmetric: column i is row i.
        let n = self.n;
        for (o, s) in out.iter_mut().zip(&self.kernel(m)[i * n..(i + 1) * n]) {
            *o = s.to_f64();
        }
    }

    fn add_column(&self, m: usize, i: usize, c: f64, out: &mut [f64]) {
        let n = self.n;
        for (o, s) in out.iter_mut().zip(&self.kernel(m)[i * n..(i + 1) * n]) {
            *o += c * s.to_f64();
        }
    }

    fn diag(&self, m: usize, out: &mut [f64]) {
        let n = self.n;
        let k = self.kernel(m);
        for (i, o) in out.iter_mut().enumerate().take(n) {
            *o = k[i * n + i].to_f64();
        }
    }
}
