//! Kernel specifications: a kernel function applied to a subset of the feature columns.

use crate::error::{MkError, Result};

/// A kernel function `k(x, x')` on feature vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelFn {
    /// `⟨x, x'⟩`.
    Linear,
    /// `(scale·⟨x, x'⟩ + coef0)^degree`.
    Polynomial { degree: u32, coef0: f64, scale: f64 },
    /// `exp(−‖x − x'‖² / (2σ²))`.
    Gaussian { sigma: f64 },
    /// `exp(−‖x − x'‖₁ / σ)`.
    Laplacian { sigma: f64 },
}

impl KernelFn {
    /// `k(x, x')` from the inner product, the squared Euclidean distance and the ℓ1 distance
    /// (each caller supplies the ones this function needs).
    #[inline(always)]
    pub(crate) fn eval(&self, dot: f64, sqdist: f64, l1dist: f64) -> f64 {
        match *self {
            KernelFn::Linear => dot,
            KernelFn::Polynomial {
                degree,
                coef0,
                scale,
            } => (scale * dot + coef0).powi(degree as i32),
            KernelFn::Gaussian { sigma } => (-sqdist.max(0.0) / (2.0 * sigma * sigma)).exp(),
            KernelFn::Laplacian { sigma } => (-l1dist / sigma).exp(),
        }
    }

    /// `k(x, x)` from `‖x‖²`.
    #[inline(always)]
    pub(crate) fn self_value(&self, sqnorm: f64) -> f64 {
        self.eval(sqnorm, 0.0, 0.0)
    }

    pub(crate) fn needs_l1(&self) -> bool {
        matches!(self, KernelFn::Laplacian { .. })
    }

    fn validate(&self) -> Result<()> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(MkError::config(
                    name,
                    format!("must be a positive finite number, got {v}"),
                ))
            }
        };
        match *self {
            KernelFn::Linear => Ok(()),
            KernelFn::Polynomial {
                degree,
                coef0,
                scale,
            } => {
                if degree == 0 {
                    return Err(MkError::config(
                        "degree",
                        "must be a positive integer, got 0",
                    ));
                }
                if !coef0.is_finite() || !scale.is_finite() {
                    return Err(MkError::config("coef0/scale", "must be finite"));
                }
                Ok(())
            }
            KernelFn::Gaussian { sigma } | KernelFn::Laplacian { sigma } => {
                positive("sigma", sigma)
            }
        }
    }
}

/// A kernel function and the feature columns it reads (`None` = all columns).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    pub func: KernelFn,
    pub features: Option<Vec<usize>>,
}

impl KernelSpec {
    /// A kernel on all features.
    pub fn new(func: KernelFn) -> Self {
        KernelSpec {
            func,
            features: None,
        }
    }

    /// A kernel on the given feature columns.
    pub fn on(func: KernelFn, features: Vec<usize>) -> Self {
        KernelSpec {
            func,
            features: Some(features),
        }
    }

    /// Checks the parameters and that every feature index is below `n_features`.
    pub fn validate(&self, n_features: usize) -> Result<()> {
        self.func.validate()?;
        validate_features(&self.features, n_features)
    }
}

/// Checks that `features` (the columns a kernel reads, `None` = all) is not empty and that
/// every index is below `n_features`.
pub fn validate_features(features: &Option<Vec<usize>>, n_features: usize) -> Result<()> {
    if let Some(f) = features {
        if f.is_empty() {
            return Err(MkError::config("features", "must not be empty"));
        }
        if let Some(&bad) = f.iter().find(|&&j| j >= n_features) {
            return Err(MkError::config(
                "features",
                format!("index {bad} is out of range for X with {n_features} columns"),
            ));
        }
    }
    Ok(())
}

/// The 24 Gaussian widths of the SimpleMKL / SpicyMKL experiments.
pub const SIMPLEMKL_WIDTHS: [f64; 24] = [
    0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0,
    14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0,
];

/// The SimpleMKL bank: every Gaussian width and every polynomial degree (`(⟨x,x'⟩ + 1)^d`),
/// first on all variables, then on each single variable: `(|widths| + |degrees|)·(d + 1)` specs.
pub fn simplemkl_bank(n_features: usize, widths: &[f64], degrees: &[u32]) -> Vec<KernelSpec> {
    let funcs: Vec<KernelFn> = widths
        .iter()
        .map(|&sigma| KernelFn::Gaussian { sigma })
        .chain(degrees.iter().map(|&degree| KernelFn::Polynomial {
            degree,
            coef0: 1.0,
            scale: 1.0,
        }))
        .collect();
    let mut specs: Vec<KernelSpec> = funcs.iter().map(|&f| KernelSpec::new(f)).collect();
    for j in 0..n_features {
        specs.extend(funcs.iter().map(|&f| KernelSpec::on(f, vec![j])));
    }
    specs
}
