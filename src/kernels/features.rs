//! Explicit feature maps `φ` with `φ(x)ᵀφ(x') ≈ k(x, x')`, so that a kernel becomes the
//! low-rank factor `Φ Φᵀ` of a [`crate::kernels::LowRankStack`] and n is no longer bounded
//! by an `n×n` matrix.
//!
//! - Random Fourier features (Rahimi & Recht) for shift-invariant kernels: by Bochner's theorem
//!   `k(x − x') = E_ω[cos(ωᵀ(x − x'))]` with `ω` from the kernel's spectral density, so
//!   `φ(x) = sqrt(2/D) cos(Wᵀx + b)`, `b ~ U[0, 2π)`, is unbiased. Gaussian
//!   `exp(−‖δ‖²/(2σ²))`: `ω ~ N(0, σ⁻² I)`; Laplacian `exp(−‖δ‖₁/σ)`: independent Cauchy
//!   coordinates of scale `1/σ`.
//! - Nyström features for any kernel: with landmarks `P` and the Cholesky factor
//!   `K_PP = R Rᵀ`, `φ(x) = R⁻¹ k(P, x)`, so `Φ Φᵀ = K_XP K_PP⁻¹ K_PX`. Landmarks come from the
//!   pivoted incomplete Cholesky of the training kernel (then `Φ` on the training points is that
//!   factor) or uniformly at random.
//!
//! Every map is given by arrays the caller keeps (`W`, `b`; landmark rows and `R`), so the
//! Python side can pickle a fitted bank; the functions here are stateless.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::NoInterrupt;
use crate::kernels::{
    cross_gram, pivoted_cholesky, GramOptions, KernelFn, KernelSpec, NormStats, Normalization,
};

/// A seeded SplitMix64 stream: reproducible across platforms and thread counts.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on the open interval (0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The columns a spec reads (all `d` when it has no subset).
fn columns(spec: &KernelSpec, d: usize) -> Result<Vec<usize>> {
    let cols = spec.features.clone().unwrap_or_else(|| (0..d).collect());
    if let Some(&c) = cols.iter().find(|&&c| c >= d) {
        return Err(MkError::Shape(format!(
            "a kernel reads feature {c} but X has {d} features"
        )));
    }
    Ok(cols)
}

/// Draws the random Fourier map of a Gaussian or Laplacian spec on `dim` input columns:
/// `W` (`dim × n_components`, row-major) and `b` (`n_components`).
pub fn fourier_params(
    func: KernelFn,
    dim: usize,
    n_components: usize,
    seed: u64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if n_components == 0 {
        return Err(MkError::config("n_components", "must be at least 1"));
    }
    let mut rng = SplitMix(seed);
    let w: Vec<f64> = match func {
        KernelFn::Gaussian { sigma } => (0..dim * n_components)
            .map(|_| rng.normal() / sigma)
            .collect(),
        KernelFn::Laplacian { sigma } => (0..dim * n_components)
            .map(|_| (std::f64::consts::PI * (rng.uniform() - 0.5)).tan() / sigma)
            .collect(),
        _ => {
            return Err(MkError::config(
                "method",
                "random Fourier features exist for shift-invariant kernels (Gaussian, \
                 Laplacian); use method='nystroem' for linear and polynomial kernels",
            ))
        }
    };
    let b = (0..n_components)
        .map(|_| std::f64::consts::TAU * rng.uniform())
        .collect();
    Ok((w, b))
}

/// `φ(x) = sqrt(2/D) cos(Wᵀx_S + b)` for every row of `x` (`S` the spec's columns):
/// `(n, D)` row-major.
pub fn fourier_features(
    x: ArrayView2<f64>,
    spec: &KernelSpec,
    w: &[f64],
    b: &[f64],
) -> Result<Vec<f64>> {
    let cols = columns(spec, x.ncols())?;
    let big_d = b.len();
    if w.len() != cols.len() * big_d {
        return Err(MkError::Shape(format!(
            "W has {} entries for {} columns × {big_d} components",
            w.len(),
            cols.len()
        )));
    }
    let scale = (2.0 / big_d as f64).sqrt();
    let mut out = vec![0.0; x.nrows() * big_d];
    out.par_chunks_mut(big_d.max(1))
        .enumerate()
        .for_each(|(i, row)| {
            row.copy_from_slice(b);
            for (k, &c) in cols.iter().enumerate() {
                let xv = x[(i, c)];
                if xv != 0.0 {
                    for (o, wv) in row.iter_mut().zip(&w[k * big_d..(k + 1) * big_d]) {
                        *o += xv * wv;
                    }
                }
            }
            for o in row.iter_mut() {
                *o = scale * o.cos();
            }
        });
    Ok(out)
}

/// Raw (unnormalised) kernel values `k(a_i, b_j)` of one spec: `(n_a, n_b)` row-major.
fn raw_block(a: ArrayView2<f64>, b: ArrayView2<f64>, spec: &KernelSpec) -> Result<Vec<f64>> {
    let specs = std::slice::from_ref(spec);
    let opts = GramOptions::default();
    // No normalisation: the statistics are only the training size and a unit scale.
    let stats = NormStats {
        normalization: Normalization::None,
        center: false,
        n: b.nrows(),
        row_means: Vec::new(),
        total_means: vec![0.0],
        diag: Vec::new(),
        scales: vec![1.0],
        weights: Vec::new(),
    };
    let block = cross_gram::<f64>(a, b, specs, &stats, &opts, &NoInterrupt)?;
    Ok(block.into_raw_vec_and_offset().0)
}

/// Landmark rows for Nyström features of `spec` on the training rows `x`: the pivots of the
/// pivoted incomplete Cholesky of the training kernel (stopping at `n_components` or at a
/// relative trace error of 1e-10), or `n_components` distinct rows drawn with `seed`.
pub fn nystroem_landmarks(
    x: ArrayView2<f64>,
    spec: &KernelSpec,
    n_components: usize,
    pivoted: bool,
    seed: u64,
) -> Result<Vec<usize>> {
    let n = x.nrows();
    if n_components == 0 {
        return Err(MkError::config("n_components", "must be at least 1"));
    }
    let r = n_components.min(n);
    if !pivoted {
        // A partial Fisher–Yates shuffle.
        let mut idx: Vec<usize> = (0..n).collect();
        let mut rng = SplitMix(seed);
        for i in 0..r {
            let j = i + (rng.next_u64() % (n - i) as u64) as usize;
            idx.swap(i, j);
        }
        idx.truncate(r);
        return Ok(idx);
    }
    let cols = columns(spec, x.ncols())?;
    let diag: Vec<f64> = (0..n)
        .map(|i| {
            let row: Vec<f64> = cols.iter().map(|&c| x[(i, c)]).collect();
            spec.func.self_value_of(&row)
        })
        .collect();
    let mut pivots = Vec::new();
    let mut failure = None;
    pivoted_cholesky(
        n,
        &diag,
        |i, out| {
            pivots.push(i);
            match raw_block(x, x.slice(ndarray::s![i..i + 1, ..]), spec) {
                Ok(col) => out.copy_from_slice(&col),
                Err(e) => {
                    failure = Some(e);
                    out.fill(0.0);
                }
            }
        },
        1e-10,
        r,
    );
    match failure {
        Some(e) => Err(e),
        None => Ok(pivots),
    }
}

/// The lower Cholesky factor `R` (`r × r`, row-major) of the landmarks' kernel `K_PP`, with a
/// relative ridge of 1e-10 (grown tenfold until it factors: `K_PP` is PSD but may be singular
/// in rounding).
pub fn nystroem_factor(landmarks: ArrayView2<f64>, spec: &KernelSpec) -> Result<Vec<f64>> {
    let r = landmarks.nrows();
    let k = raw_block(landmarks, landmarks, spec)?;
    let mean_diag = (0..r).map(|i| k[i * r + i]).sum::<f64>() / r.max(1) as f64;
    let mut ridge = 1e-10 * mean_diag.max(f64::MIN_POSITIVE);
    for _ in 0..12 {
        if let Some(l) = cholesky_lower(&k, r, ridge) {
            return Ok(l);
        }
        ridge *= 10.0;
    }
    Err(MkError::Numerical(
        "the landmarks' kernel matrix did not factor even with a ridge".into(),
    ))
}

/// Plain lower Cholesky of `a + ridge·I` (`None` if not positive definite).
fn cholesky_lower(a: &[f64], r: usize, ridge: f64) -> Option<Vec<f64>> {
    let mut l = vec![0.0; r * r];
    for i in 0..r {
        for j in 0..=i {
            let mut s = a[i * r + j] + if i == j { ridge } else { 0.0 };
            for k in 0..j {
                s -= l[i * r + k] * l[j * r + k];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * r + i] = s.sqrt();
            } else {
                l[i * r + j] = s / l[j * r + j];
            }
        }
    }
    Some(l)
}

/// `φ(x) = R⁻¹ k(P, x)` for every row of `x`: `(n, r)` row-major.
pub fn nystroem_features(
    x: ArrayView2<f64>,
    landmarks: ArrayView2<f64>,
    spec: &KernelSpec,
    factor: &[f64],
) -> Result<Vec<f64>> {
    let r = landmarks.nrows();
    if factor.len() != r * r {
        return Err(MkError::Shape(format!(
            "the factor has {} entries for {r} landmarks",
            factor.len()
        )));
    }
    let mut out = raw_block(x, landmarks, spec)?;
    // Forward substitution R z = k(P, x), row by row.
    out.par_chunks_mut(r.max(1)).for_each(|row| {
        for i in 0..r {
            let mut s = row[i];
            for k in 0..i {
                s -= factor[i * r + k] * row[k];
            }
            row[i] = s / factor[i * r + i];
        }
    });
    Ok(out)
}

/// The features as an `(n, D)` array.
pub fn to_array(n: usize, data: Vec<f64>) -> Result<Array2<f64>> {
    let d = data.len().checked_div(n).unwrap_or(0);
    Array2::from_shape_vec((n, d), data).map_err(|e| MkError::Shape(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn points(n: usize, d: usize) -> Array2<f64> {
        let mut rng = SplitMix(11);
        Array2::from_shape_fn((n, d), |_| rng.normal())
    }

    fn max_error(x: &Array2<f64>, spec: &KernelSpec, phi: &[f64]) -> f64 {
        let n = x.nrows();
        let k = raw_block(x.view(), x.view(), spec).unwrap();
        let r = phi.len() / n;
        let mut worst = 0.0f64;
        for i in 0..n {
            for j in 0..n {
                let approx: f64 = (0..r).map(|c| phi[i * r + c] * phi[j * r + c]).sum();
                worst = worst.max((approx - k[i * n + j]).abs());
            }
        }
        worst
    }

    #[test]
    fn fourier_features_converge_to_the_kernel() {
        let x = points(60, 3);
        for func in [
            KernelFn::Gaussian { sigma: 1.5 },
            KernelFn::Laplacian { sigma: 2.0 },
        ] {
            let spec = KernelSpec::new(func);
            let errs: Vec<f64> = [50, 5000]
                .iter()
                .map(|&d| {
                    let (w, b) = fourier_params(func, 3, d, 7).unwrap();
                    max_error(
                        &x,
                        &spec,
                        &fourier_features(x.view(), &spec, &w, &b).unwrap(),
                    )
                })
                .collect();
            // Monte-Carlo error ~ 1/sqrt(D): 10x more accurate for 100x more features.
            assert!(errs[1] < 0.25 * errs[0], "{errs:?}");
            assert!(errs[1] < 0.1, "{errs:?}");
        }
    }

    #[test]
    fn nystroem_is_exact_on_its_landmarks_and_converges() {
        let x = points(80, 4);
        let spec = KernelSpec::new(KernelFn::Polynomial {
            degree: 2,
            coef0: 1.0,
            scale: 0.5,
        });
        // A degree-2 polynomial kernel on 4 features has rank 15: 15 pivots reproduce it.
        let piv = nystroem_landmarks(x.view(), &spec, 40, true, 0).unwrap();
        assert!(piv.len() <= 16, "{} pivots", piv.len());
        let lm = x.select(ndarray::Axis(0), &piv);
        let r = nystroem_factor(lm.view(), &spec).unwrap();
        let phi = nystroem_features(x.view(), lm.view(), &spec, &r).unwrap();
        let scale = 1.0 + max_error(&x, &spec, &vec![0.0; x.nrows()]);
        assert!(max_error(&x, &spec, &phi) < 1e-6 * scale);
        // Uniform landmarks of a Gaussian: the error falls with the number of landmarks.
        let g = KernelSpec::new(KernelFn::Gaussian { sigma: 2.0 });
        let errs: Vec<f64> = [5, 60]
            .iter()
            .map(|&m| {
                let idx = nystroem_landmarks(x.view(), &g, m, false, 3).unwrap();
                let lm = x.select(ndarray::Axis(0), &idx);
                let r = nystroem_factor(lm.view(), &g).unwrap();
                max_error(
                    &x,
                    &g,
                    &nystroem_features(x.view(), lm.view(), &g, &r).unwrap(),
                )
            })
            .collect();
        assert!(errs[1] < 0.2 * errs[0], "{errs:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_map() {
        let a = fourier_params(KernelFn::Gaussian { sigma: 1.0 }, 2, 10, 5).unwrap();
        let b = fourier_params(KernelFn::Gaussian { sigma: 1.0 }, 2, 10, 5).unwrap();
        let c = fourier_params(KernelFn::Gaussian { sigma: 1.0 }, 2, 10, 6).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(fourier_params(KernelFn::Linear, 2, 10, 5).is_err());
    }
}
