//! Kernel specifications: a kernel function applied to a subset of the feature columns.

use crate::error::{MkError, Result};
use crate::kernels::pairwise::PairSum;

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
    /// The exponential χ² `exp(−γ Σ_k (x_k − x'_k)² / (x_k + x'_k))` of histograms (terms
    /// with `x_k + x'_k = 0` count 0).
    Chi2 { gamma: f64 },
    /// Histogram intersection `Σ_k min(x_k, x'_k)`.
    Intersection,
    /// Hellinger (Bhattacharyya) `Σ_k √(x_k x'_k)`: the inner product of `√x` and `√x'`.
    Hellinger,
    /// Tanimoto (min–max) `Σ_k min(x_k, x'_k) / Σ_k max(x_k, x'_k)`, 1 for two zero vectors:
    /// Jaccard's `|x ∧ x'| / |x ∨ x'|` on binary vectors.
    Tanimoto,
}

impl KernelFn {
    /// The pairwise sum over the features `k(x, x')` is a function of (of `√x` and `√x'`
    /// where [`sqrt_input`](Self::sqrt_input)).
    #[inline(always)]
    pub(crate) fn reads(&self) -> PairSum {
        match self {
            KernelFn::Linear
            | KernelFn::Polynomial { .. }
            | KernelFn::Gaussian { .. }
            | KernelFn::Hellinger => PairSum::Dot,
            KernelFn::Laplacian { .. } => PairSum::L1,
            KernelFn::Chi2 { .. } => PairSum::Chi2,
            KernelFn::Intersection | KernelFn::Tanimoto => PairSum::Min,
        }
    }

    /// Whether the kernel reads `√x` rather than `x` (Hellinger: a linear kernel of `√x`).
    #[inline(always)]
    pub(crate) fn sqrt_input(&self) -> bool {
        matches!(self, KernelFn::Hellinger)
    }

    /// Whether the kernel is defined on non-negative features only (histograms, counts).
    pub(crate) fn nonnegative_input(&self) -> bool {
        matches!(
            self,
            KernelFn::Chi2 { .. }
                | KernelFn::Intersection
                | KernelFn::Hellinger
                | KernelFn::Tanimoto
        )
    }

    /// The kernel's name in error messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            KernelFn::Linear => "Linear",
            KernelFn::Polynomial { .. } => "Polynomial",
            KernelFn::Gaussian { .. } => "Gaussian",
            KernelFn::Laplacian { .. } => "Laplacian",
            KernelFn::Chi2 { .. } => "Chi2",
            KernelFn::Intersection => "Intersection",
            KernelFn::Hellinger => "Hellinger",
            KernelFn::Tanimoto => "Tanimoto",
        }
    }

    /// `k(x, x')` from `s`, the pairwise sum [`reads`](Self::reads) of `x` and `x'`, and
    /// `na`, `nb`, the same sum of each point with itself (`‖x‖²` for the inner product, `Σx`
    /// for the minimum, 0 for the distances). `eval(s, s, s)` is `k(x, x)` when `s` is the
    /// sum of `x` with itself (the Gaussian's distance is then exactly 0).
    #[inline(always)]
    pub(crate) fn eval(&self, s: f64, na: f64, nb: f64) -> f64 {
        match *self {
            KernelFn::Linear | KernelFn::Intersection | KernelFn::Hellinger => s,
            KernelFn::Polynomial {
                degree,
                coef0,
                scale,
            } => (scale * s + coef0).powi(degree as i32),
            KernelFn::Gaussian { sigma } => {
                (-(na + nb - 2.0 * s).max(0.0) / (2.0 * sigma * sigma)).exp()
            }
            KernelFn::Laplacian { sigma } => (-s / sigma).exp(),
            KernelFn::Chi2 { gamma } => (-gamma * s).exp(),
            KernelFn::Tanimoto => {
                // Σ max = Σ x + Σ x' − Σ min ≥ max(Σ x, Σ x'): no cancellation.
                let union = na + nb - s;
                if union > 0.0 {
                    s / union
                } else {
                    1.0
                }
            }
        }
    }

    /// `k(x, x)` from the pairwise sum of `x` with itself.
    #[inline(always)]
    pub(crate) fn self_value(&self, own: f64) -> f64 {
        self.eval(own, own, own)
    }

    /// `k(x, x)` of the row `x` (the columns the kernel reads).
    pub(crate) fn self_value_of(&self, x: &[f64]) -> f64 {
        let own = if self.sqrt_input() {
            x.iter().sum()
        } else {
            self.reads().own(x)
        };
        self.self_value(own)
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
            KernelFn::Linear
            | KernelFn::Intersection
            | KernelFn::Hellinger
            | KernelFn::Tanimoto => Ok(()),
            KernelFn::Chi2 { gamma } => positive("gamma", gamma),
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

    /// Refuses a negative entry in the columns this kernel reads, when its function takes
    /// non-negative features only (`x(i, j)` the entries of the `n × p` matrix `what`; `m`
    /// the kernel's index in its bank).
    pub(crate) fn check_nonnegative(
        &self,
        m: usize,
        what: &str,
        n: usize,
        p: usize,
        x: impl Fn(usize, usize) -> f64,
    ) -> Result<()> {
        if !self.func.nonnegative_input() {
            return Ok(());
        }
        let all: Vec<usize>;
        let cols = match &self.features {
            Some(f) => f.as_slice(),
            None => {
                all = (0..p).collect();
                &all
            }
        };
        let x = &x;
        let entries = (0..n).flat_map(|i| cols.iter().map(move |&j| (i, j, x(i, j))));
        self.check_nonnegative_entries(m, what, entries)
    }

    /// [`check_nonnegative`](Self::check_nonnegative) of the entries `(i, j, x_ij)` that may
    /// be negative (a sparse matrix's stored ones: the others are 0), row by row.
    pub(crate) fn check_nonnegative_entries(
        &self,
        m: usize,
        what: &str,
        mut entries: impl Iterator<Item = (usize, usize, f64)>,
    ) -> Result<()> {
        if !self.func.nonnegative_input() {
            return Ok(());
        }
        // The columns read, sorted for a binary search (not a mask of all `p` columns: a
        // sparse matrix may have millions).
        let read: Option<Vec<usize>> = self.features.as_ref().map(|f| {
            let mut f = f.clone();
            f.sort_unstable();
            f
        });
        let reads = |j: usize| match &read {
            None => true,
            Some(f) => f.binary_search(&j).is_ok(),
        };
        match entries.find(|&(_, j, v)| v < 0.0 && reads(j)) {
            None => Ok(()),
            Some((i, j, v)) => Err(MkError::KernelFunction {
                kernel: m,
                reason: format!(
                    "{} takes non-negative features (histograms, counts), but column {j} \
                     of {what} has the negative entry {what}[{i}, {j}] = {v}",
                    self.func.name(),
                ),
            }),
        }
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
