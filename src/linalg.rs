//! Dense linear algebra on faer: Cholesky solves with a ridge fallback.

use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef, Side};

use crate::error::{MkError, Result};

/// faer's kernels run AVX-512/AVX2 code and can leave the upper halves of the vector registers
/// dirty on the threads that ran them; the SSE code that follows (ours, and libm's `exp` and
/// `log`) then pays a state-transition penalty on every instruction (measured: Gram matrices
/// of Gaussian kernels 14× slower). `vzeroupper` clears that state; call this on a thread
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

/// Solves the bordered system `[A 1; 1ᵀ 0] [x; b] = [r; 0]` of a kernel model with an intercept
/// (`Σ x = 0`) through two solves with `A`: `x = A⁻¹(r − b1)`, `b = 1ᵀA⁻¹r / 1ᵀA⁻¹1`.
pub fn solve_with_intercept(chol: &Cholesky, r: &[f64]) -> (Vec<f64>, f64) {
    let n = r.len();
    let mut rhs = Mat::from_fn(n, 2, |i, j| if j == 0 { r[i] } else { 1.0 });
    chol.solve_in_place(&mut rhs);
    let s_r: f64 = (0..n).map(|i| rhs[(i, 0)]).sum();
    let s_1: f64 = (0..n).map(|i| rhs[(i, 1)]).sum();
    let b = s_r / s_1;
    let x = (0..n).map(|i| rhs[(i, 0)] - b * rhs[(i, 1)]).collect();
    (x, b)
}
