//! Dense linear algebra: Cholesky solves on faer with a ridge fallback, and the one inner
//! product [`dot`] that the kernels and the solvers share.

use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef, Side};

use crate::error::{MkError, Result};

/// faer's kernels run AVX-512/AVX2 code and can leave the upper halves of the vector registers
/// dirty on the threads that ran them; the SSE code that follows (ours, and libm's `exp` and
/// `log`) then pays a state-transition penalty on every instruction (docs/performance.md,
/// "Vector state after faer"). `vzeroupper` clears that state; call this on a thread
/// after faer has run on it.
#[inline(always)]
pub fn clear_upper_simd_state() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU supports AVX, which is all `vzeroupper` needs.
            unsafe { zero_upper() };
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn zero_upper() {
    std::arch::x86_64::_mm256_zeroupper();
}

/// `Σ_k a_k b_k` over the common length ([`sum_terms`] of the product); `a` may be f32 (a
/// stack's or a feature matrix's entries), widened to f64.
#[inline(always)]
pub fn dot<T: Copy + Into<f64>>(a: &[T], b: &[f64]) -> f64 {
    sum_terms(a, b, |x, y| x * y)
}

/// The Euclidean norm `‖v‖`.
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `Σ_k t(a_k, b_k)` over the common length, with eight independent accumulators so that the
/// loop vectorises (and a fixed summation order: the same result on every run).
#[inline(always)]
pub fn sum_terms<T: Copy + Into<f64>>(a: &[T], b: &[f64], t: impl Fn(f64, f64) -> f64) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += t(x[l].into(), y[l]);
        }
    }
    let mut s = (acc[0] + acc[4]) + (acc[1] + acc[5]) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (&x, &y) in ra.iter().zip(rb) {
        s += t(x.into(), y);
    }
    s
}

/// A Cholesky factorisation of an SPD matrix, with the ridge that had to be added (0 if none).
pub struct Cholesky {
    llt: faer::linalg::solvers::Llt<f64>,
    pub ridge: f64,
}

impl Cholesky {
    /// Factorises the row-major symmetric `n×n` matrix `a`. When it is not numerically positive
    /// definite, retries with `a + r·I` for growing `r` (from `1e-12·mean diag`), because the
    /// systems solved here are PSD by construction and fail only through rounding.
    pub fn new(a: &[f64], n: usize) -> Result<Self> {
        let m = MatRef::from_row_major_slice(a, n, n);
        let mean_diag = (0..n).map(|i| a[i * n + i].abs()).sum::<f64>() / n as f64;
        let mut ridge = 0.0;
        let mut base = 1e-12 * mean_diag.max(f64::MIN_POSITIVE);
        for _ in 0..8 {
            let attempt = if ridge == 0.0 {
                m.llt(Side::Lower)
            } else {
                let mut shifted = m.to_owned();
                for i in 0..n {
                    shifted[(i, i)] += ridge;
                }
                shifted.llt(Side::Lower)
            };
            clear_upper_simd_state();
            if let Ok(llt) = attempt {
                return Ok(Cholesky { llt, ridge });
            }
            ridge = base;
            base *= 100.0;
        }
        Err(MkError::Numerical(format!(
            "Cholesky factorisation failed even with a ridge of {ridge:.3e}: the system is not \
             positive definite. The systems are PSD when the kernels are, so a kernel is likely \
             indefinite, e.g. rounded to float32 (each entry moves by up to 6e-8 of its size): \
             use float64, or psd=\"clip\" to shift the kernels to PSD ones (docs/guide.md §6)"
        )))
    }

    /// Solves `A x = b` for each column of `b` (`n × k`), in place.
    pub fn solve_in_place(&self, b: &mut Mat<f64>) {
        self.llt.solve_in_place(b.as_mut());
        clear_upper_simd_state();
    }

    /// Solves `A x = b` for one right-hand side.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut m = Mat::from_fn(b.len(), 1, |i, _| b[i]);
        self.solve_in_place(&mut m);
        (0..b.len()).map(|i| m[(i, 0)]).collect()
    }
}

/// A factorisation of an SPD matrix `A`, dense or as a positive diagonal plus a low-rank term.
pub enum SpdFactor {
    Dense(Cholesky),
    DiagPlusLowRank(DiagPlusLowRank),
}

impl SpdFactor {
    /// Solves `A x = b`.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        match self {
            SpdFactor::Dense(c) => c.solve(b),
            SpdFactor::DiagPlusLowRank(w) => w.solve(b),
        }
    }

    /// Solves `A X = B` in place for the columns of `b` (column-major `n × s`).
    pub fn solve_many(&self, b: &mut [f64]) {
        match self {
            SpdFactor::Dense(c) => {
                let n = c.llt.L().nrows();
                let s = b.len() / n.max(1);
                c.llt
                    .solve_in_place(faer::MatMut::from_column_major_slice_mut(b, n, s));
                clear_upper_simd_state();
            }
            SpdFactor::DiagPlusLowRank(w) => w.solve_many(b),
        }
    }
}

/// `A = D + U Uᵀ` with `D` diagonal positive and `U` of shape `n × r`, solved through the
/// `r × r` capacitance matrix (Woodbury): with `V = D^{-1/2} U`,
/// `A = D^{1/2} (I + V Vᵀ) D^{1/2}` and `(I + VVᵀ)⁻¹ = I − V (I + VᵀV)⁻¹ Vᵀ`. Forming `VᵀV`
/// costs `n r²` and its Cholesky `r³`, against `n³` for `A` itself; every eigenvalue of
/// `I + VᵀV` is at least 1, so the small system is never worse conditioned than `A`'s scaled
/// form.
pub struct DiagPlusLowRank {
    /// `D^{-1/2}`.
    inv_sqrt: Vec<f64>,
    /// `V`, column-major (`r` columns of length `n`).
    v: Vec<f64>,
    cap: Cholesky,
}

impl DiagPlusLowRank {
    /// Factorises `diag(d) + U Uᵀ` with `u` holding `U`'s columns one after another
    /// (column-major `n × r`); every `d_i` must be positive and finite.
    pub fn new(d: &[f64], u: Vec<f64>) -> Result<Self> {
        let n = d.len();
        if d.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
            return Err(MkError::Numerical(
                "the diagonal of a diagonal-plus-low-rank system must be positive".into(),
            ));
        }
        let r = u.len().checked_div(n).unwrap_or(0);
        let inv_sqrt: Vec<f64> = d.iter().map(|x| 1.0 / x.sqrt()).collect();
        let mut v = u;
        for col in v.chunks_exact_mut(n.max(1)) {
            col.iter_mut().zip(&inv_sqrt).for_each(|(x, s)| *x *= s);
        }
        let mut cap = Mat::<f64>::identity(r, r);
        if r > 0 {
            let vm = MatRef::from_column_major_slice(&v, n, r);
            faer::linalg::matmul::matmul(
                cap.as_mut(),
                faer::Accum::Add,
                vm.transpose(),
                vm,
                1.0,
                faer::Par::rayon(0),
            );
            clear_upper_simd_state();
        }
        let dense: Vec<f64> = (0..r * r)
            .map(|k| cap[(k / r.max(1), k % r.max(1))])
            .collect();
        Ok(DiagPlusLowRank {
            inv_sqrt,
            v,
            cap: Cholesky::new(&dense, r)?,
        })
    }

    /// Solves `(D + UUᵀ) x = b` in `O(n r)` after the factorisation.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut x = b.to_vec();
        self.solve_many(&mut x);
        x
    }

    /// Solves `(D + UUᵀ) X = B` in place for the columns of `b` (column-major `n × s`): two
    /// matrix products with `V` for all of them.
    pub fn solve_many(&self, b: &mut [f64]) {
        let n = self.inv_sqrt.len();
        let scale = |b: &mut [f64]| {
            for col in b.chunks_exact_mut(n.max(1)) {
                col.iter_mut()
                    .zip(&self.inv_sqrt)
                    .for_each(|(x, s)| *x *= s);
            }
        };
        scale(b);
        let r = self.v.len().checked_div(n).unwrap_or(0);
        if r > 0 {
            let s = b.len() / n;
            let vm = MatRef::from_column_major_slice(&self.v, n, r);
            let mut w = Mat::<f64>::zeros(r, s);
            let par = faer::Par::rayon(0);
            faer::linalg::matmul::matmul(
                w.as_mut(),
                faer::Accum::Replace,
                vm.transpose(),
                MatRef::from_column_major_slice(b, n, s),
                1.0,
                par,
            );
            self.cap.llt.solve_in_place(w.as_mut());
            faer::linalg::matmul::matmul(
                faer::MatMut::from_column_major_slice_mut(b, n, s),
                faer::Accum::Add,
                vm,
                w.as_ref(),
                -1.0,
                par,
            );
            clear_upper_simd_state();
        }
        scale(b);
    }
}

/// Solves the bordered system `[A 1; 1ᵀ 0] [x; b] = [r; 0]` of a kernel model with an intercept
/// (`Σ x = 0`) through two solves with `A`: `x = A⁻¹(r − b1)`, `b = 1ᵀA⁻¹r / 1ᵀA⁻¹1`.
pub fn solve_with_intercept(a: &SpdFactor, r: &[f64]) -> (Vec<f64>, f64) {
    let (x, b) = solve_with_intercept_many(a, r);
    (x, b[0])
}

/// [`solve_with_intercept`] for the right-hand sides `r` stored one after another (`s·n`):
/// one solve with `A` for all of them and one for `1`.
pub fn solve_with_intercept_many(a: &SpdFactor, r: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = match a {
        SpdFactor::Dense(c) => c.llt.L().nrows(),
        SpdFactor::DiagPlusLowRank(w) => w.inv_sqrt.len(),
    };
    let mut x = Vec::with_capacity(r.len() + n);
    x.extend_from_slice(r);
    x.resize(r.len() + n, 1.0);
    a.solve_many(&mut x);
    let x_1 = x.split_off(r.len());
    let s_1: f64 = x_1.iter().sum();
    let mut bs = Vec::with_capacity(r.len() / n.max(1));
    for col in x.chunks_exact_mut(n.max(1)) {
        let b = col.iter().sum::<f64>() / s_1;
        col.iter_mut().zip(&x_1).for_each(|(u, v)| *u -= b * v);
        bs.push(b);
    }
    (x, bs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Woodbury against a dense Cholesky of the same matrix.
    #[test]
    fn diagonal_plus_low_rank_solves_like_the_dense_matrix() {
        let (n, r) = (7, 3);
        let d: Vec<f64> = (0..n).map(|i| 0.5 + i as f64).collect();
        let u: Vec<f64> = (0..n * r)
            .map(|k| ((k * 37 % 11) as f64 - 5.0) / 3.0)
            .collect();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            a[i * n + i] = d[i];
            for j in 0..n {
                a[i * n + j] += (0..r).map(|k| u[k * n + i] * u[k * n + j]).sum::<f64>();
            }
        }
        let b: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        let dense = Cholesky::new(&a, n).unwrap().solve(&b);
        let low = DiagPlusLowRank::new(&d, u).unwrap().solve(&b);
        for (x, y) in dense.iter().zip(&low) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{x} vs {y}");
        }
        assert!(DiagPlusLowRank::new(&[1.0, 0.0], vec![1.0, 1.0]).is_err());
    }
}
