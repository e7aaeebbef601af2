//! The one result type every solver returns.

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolveStatus {
    /// The relative duality gap reached the tolerance.
    Converged,
    /// `max_iter` outer iterations without reaching the tolerance.
    MaxIterations,
    /// No progress was possible any more (e.g. the gap stopped decreasing at rounding level).
    Stalled,
}

/// One outer iteration, for `history_`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterRecord {
    pub primal: f64,
    pub dual: f64,
    /// Relative duality gap `(P − D)/max(|P|, 1e-12)`.
    pub gap: f64,
    /// Kernels with a non-zero weight.
    pub active: usize,
    /// Seconds since the start of the solve.
    pub seconds: f64,
}

/// A fitted model `f(x) = Σ_m Σ_i coef[m·n + i] k_m(x, x_i) + intercept` with its certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// `(M, n)` per-kernel coefficients `A` (row-major), `f_m = K_m A[m]`.
    pub coef: Vec<f64>,
    pub intercept: f64,
    /// `(M,)` the penalty's kernel combination.
    pub kernel_weights: Vec<f64>,
    /// `(M,)` `‖f_m‖` in each RKHS.
    pub kernel_norms: Vec<f64>,
    pub primal: f64,
    pub dual: f64,
    pub gap: f64,
    pub n_iter: usize,
    pub status: SolveStatus,
    pub history: Vec<IterRecord>,
    /// `(D,)` the weights in feature space of a solver on explicit features (SVRG: kernel
    /// blocks in column order, and `primal` is theirs); empty for the others.
    pub feature_weights: Vec<f64>,
}

/// The relative duality gap `(P − D)/max(|P|, 1e-12)`.
pub fn relative_gap(primal: f64, dual: f64) -> f64 {
    (primal - dual) / primal.abs().max(1e-12)
}
