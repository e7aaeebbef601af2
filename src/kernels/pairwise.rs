//! Pairwise sums over the features, `s(x, x') = Σ_k t(x_k, x'_k)`: every kernel function is
//! a function of one of them ([`crate::kernels::KernelFn::reads`]). The inner product of a
//! training Gram is a matrix product (in `gram`); the others are computed here, pair by pair,
//! in tiles that stay in cache, compiled for AVX2 + FMA where the CPU has them.

use rayon::prelude::*;

use crate::kernels::simd::avx2_dispatch;

/// A sum over the features of two points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PairSum {
    /// `Σ x_k x'_k`.
    Dot,
    /// `Σ |x_k − x'_k|`.
    L1,
    /// `Σ (x_k − x'_k)² / (x_k + x'_k)` of non-negative features, 0/0 terms counting 0.
    Chi2,
    /// `Σ min(x_k, x'_k)`.
    Min,
}

impl PairSum {
    /// The sum of `x` with itself: `‖x‖²`, 0, 0 and `Σ x`.
    pub(crate) fn own(self, x: &[f64]) -> f64 {
        match self {
            PairSum::Dot => crate::linalg::dot(x, x),
            PairSum::L1 | PairSum::Chi2 => 0.0,
            PairSum::Min => x.iter().sum(),
        }
    }

    /// `s(a, b)`.
    pub(crate) fn of(self, a: &[f64], b: &[f64]) -> f64 {
        let mut out = [0.0];
        sums_row(self, a, b, &mut out, 0.0);
        out[0]
    }
}

/// One feature's term `t(x, y)` of the sum `kind`. The χ² denominator is floored at the
/// smallest normal number: with non-negative features `x + y = 0` means `x = y = 0`, whose
/// term is then exactly 0, and below that floor the term is below it too.
#[inline(always)]
pub(crate) fn term(kind: PairSum, x: f64, y: f64) -> f64 {
    match kind {
        PairSum::Dot => x * y,
        PairSum::L1 => (x - y).abs(),
        PairSum::Chi2 => {
            let d = x - y;
            d * d / (x + y).max(f64::MIN_POSITIVE)
        }
        PairSum::Min => {
            if x < y {
                x
            } else {
                y
            }
        }
    }
}

/// `out[j] = s(xi, rows_j)` for the consecutive rows of `rows` (`out.len()` rows of
/// `xi.len()` features). `_e` only carries the element type the dispatch macro asks for.
#[inline(always)]
fn sums_row_body<T: crate::kernels::Element>(
    kind: PairSum,
    xi: &[f64],
    rows: &[f64],
    out: &mut [f64],
    _e: T,
) {
    let d = xi.len();
    // One loop per kind, so that each is a plain vectorised loop.
    macro_rules! each {
        ($k:expr) => {
            for (j, o) in out.iter_mut().enumerate() {
                *o = crate::linalg::sum_terms(xi, &rows[j * d..(j + 1) * d], |x, y| term($k, x, y));
            }
        };
    }
    match kind {
        PairSum::Dot => each!(PairSum::Dot),
        PairSum::L1 => each!(PairSum::L1),
        PairSum::Chi2 => each!(PairSum::Chi2),
        PairSum::Min => each!(PairSum::Min),
    }
}

avx2_dispatch! {
    fn sums_row<T>(kind: PairSum, xi: &[f64], rows: &[f64], out: &mut [f64], _e: T) =
        sums_row_body;
}

/// Rows of `a` per parallel task, and rows of `b` per tile (`TILE_B` rows of a few hundred
/// features stay in L2 while a task's rows pass over them).
const TILE_A: usize = 16;
const TILE_B: usize = 96;

/// The matrix `S[i, j] = s(a_i, b_j)` (row-major `na × nb`) of the rows of `a` (`na × d`)
/// and `b` (`nb × d`); when `symmetric` (`b` is `a`), the lower triangle is computed and
/// mirrored, so that `S` is exactly symmetric.
pub(crate) fn sum_matrix(
    kind: PairSum,
    a: &[f64],
    b: &[f64],
    d: usize,
    symmetric: bool,
) -> Vec<f64> {
    let na = a.len() / d.max(1);
    let nb = b.len() / d.max(1);
    let mut s = vec![0.0; na * nb];
    if d == 0 {
        return s;
    }
    s.par_chunks_mut(TILE_A * nb)
        .enumerate()
        .for_each(|(t, block)| {
            crate::linalg::clear_upper_simd_state();
            let i0 = t * TILE_A;
            let rows = block.len() / nb;
            for j0 in (0..nb).step_by(TILE_B) {
                if symmetric && j0 > i0 + rows {
                    break;
                }
                for r in 0..rows {
                    let i = i0 + r;
                    let j1 = if symmetric {
                        (j0 + TILE_B).min(i + 1)
                    } else {
                        (j0 + TILE_B).min(nb)
                    };
                    if j1 <= j0 {
                        continue;
                    }
                    sums_row(
                        kind,
                        &a[i * d..(i + 1) * d],
                        &b[j0 * d..j1 * d],
                        &mut block[r * nb + j0..r * nb + j1],
                        0.0,
                    );
                }
            }
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

    #[test]
    fn sums_match_the_plain_loops() {
        let (n, d) = (37, 13);
        let x: Vec<f64> = (0..n * d)
            .map(|i| {
                if i % 5 == 0 {
                    0.0
                } else {
                    ((i * 7919) % 101) as f64 / 10.0
                }
            })
            .collect();
        for kind in [PairSum::Dot, PairSum::L1, PairSum::Chi2, PairSum::Min] {
            let s = sum_matrix(kind, &x, &x, d, true);
            for i in 0..n {
                for j in 0..n {
                    let (a, b) = (&x[i * d..(i + 1) * d], &x[j * d..(j + 1) * d]);
                    let want: f64 = a.iter().zip(b).map(|(&p, &q)| term(kind, p, q)).sum();
                    assert!((s[i * n + j] - want).abs() <= 1e-12 * want.abs().max(1.0));
                    assert_eq!(s[i * n + j], s[j * n + i]);
                }
            }
            let c = sum_matrix(kind, &x[..5 * d], &x, d, false);
            assert!((0..5 * n).all(|t| (c[t] - s[t]).abs() <= 1e-12 * s[t].abs().max(1.0)));
            assert!((kind.of(&x[..d], &x[d..2 * d]) - s[1]).abs() <= 1e-12 * s[1].abs().max(1.0));
        }
    }
}
