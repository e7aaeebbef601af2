//! The kernel layer: kernel functions on feature subsets, training and cross Gram matrices,
//! normalisation with training statistics, and the [`KernelStack`] through which every solver
//! reads kernels.

pub mod features;
mod gram;
mod lowrank;
mod normalize;
mod on_demand;
mod packed;
mod pairwise;
mod rows;
mod seq_features;
mod sequence;
pub(crate) mod simd;
mod sparse;
mod spec;
mod stack;
mod subset;

#[cfg(feature = "python")]
pub(crate) use gram::of_kernel;
pub use gram::{
    cross_gram, cross_gram_bank, gram, gram_bank, gram_bank_weighted, stack_bytes, BankKernel,
    BlockKernel, GramOptions, Points,
};
pub(crate) use lowrank::factor_matvec;
pub use lowrank::{pivoted_cholesky, weighted_factors, LowRankStack};
pub use normalize::{NormStats, Normalization};
pub(crate) use on_demand::support_products;
pub use on_demand::{CombinedKernel, OnDemandKernel, OnDemandStack};
pub use packed::{point_subset, PackedStack, PointSubset};
pub use rows::{RowFeatures, SparseRowFeatures};
pub use seq_features::{
    features as sequence_features, fit_features as fit_sequence_features, FeatureRows, Vocabulary,
};
pub use sequence::{wd_weights, SeqColumn, SeqKernel, SeqKernelFn};
pub use sparse::CsrMatrix;
pub use spec::{simplemkl_bank, validate_features, KernelFn, KernelSpec, SIMPLEMKL_WIDTHS};
pub use stack::{dense_matvecs, DenseStack, KernelStack};
pub(crate) use stack::{nonzeros, weighted};
pub use subset::SubStack;

/// A floating-point element a dense stack may hold: f64, or f32 for half the bytes per pass.
/// Arithmetic is always carried in f64 (`Into<f64>` is what [`crate::linalg::dot`] reads).
pub trait Element: Copy + Send + Sync + Default + Into<f64> + 'static {
    /// The type's machine epsilon, as f64 (what a rounding tolerance scales with).
    const EPSILON: f64;
    /// Widen to f64.
    fn to_f64(self) -> f64;
    /// Narrow from f64 (rounding for f32).
    fn from_f64(v: f64) -> Self;
}

impl Element for f64 {
    const EPSILON: f64 = f64::EPSILON;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Element for f32 {
    const EPSILON: f64 = f32::EPSILON as f64;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
