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
    /// The gap computed as if every kernel were PSD reached the tolerance, but a dual point
    /// proved a kernel is not PSD, so no dual value certifies the fit (docs/mathematics.md
    /// §1.8): stopped where it would have converged, without a certificate.
    Uncertified,
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
    /// Which of the fit's solvers ran the iteration: its index in [`FitResult::solver_iters`]
    /// (0 but in the records of a continuation).
    pub solver: usize,
}

/// Evidence that a kernel, as stored, is not positive semi-definite: a dual point `ρ̃` whose
/// quadratic form `ρ̃ᵀK_mρ̃` is negative beyond the rounding of its own computation. A dual value
/// computed at such a point certifies nothing (docs/mathematics.md §1.8); see
/// [`crate::solvers::witness`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsdWitness {
    /// The kernel's index in the stack.
    pub kernel: usize,
    /// `ρ̃ᵀK_mρ̃` as computed, below `−bound`.
    pub quad_form: f64,
    /// The rounding bound of that computation, `c (n + 2) ε₆₄ max_i K_ii ‖ρ̃‖₁²`.
    pub bound: f64,
    /// `ε_T max_i K_ii ‖ρ̃‖₁²` with `ε_T` the machine epsilon of the stack's precision: the most
    /// that rounding the entries of a PSD kernel to that precision can lower a quadratic form.
    /// `−quad_form` within it is consistent with, e.g., float32 rounding of a PSD kernel.
    pub entry_rounding: f64,
}

impl PsdWitness {
    /// Whether the rounding of the stored entries (e.g. to float32) can explain the witness.
    pub fn within_entry_rounding(&self) -> bool {
        -self.quad_form <= self.entry_rounding
    }
}

/// Coefficients `A[m, i] = scale[m] · rows[i]`, kept as their two factors: a solver on explicit
/// features whose every kernel's coefficients are one dual vector scaled (proximal Newton's
/// representer form) would otherwise hold `M` copies of it, `8·M·n` bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct OuterCoef {
    /// `(M,)`.
    pub scale: Vec<f64>,
    /// `(n,)`.
    pub rows: Vec<f64>,
}

/// A fitted model `f(x) = Σ_m Σ_i coef[m·n + i] k_m(x, x_i) + intercept` with its certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// `(M, n)` per-kernel coefficients `A` (row-major), `f_m = K_m A[m]`; empty when
    /// `coef_outer` holds them.
    pub coef: Vec<f64>,
    /// `A` as the product of two factors, when the solver gives it so.
    pub coef_outer: Option<OuterCoef>,
    pub intercept: f64,
    /// `(M,)` the penalty's kernel combination.
    pub kernel_weights: Vec<f64>,
    /// `(M,)` `‖f_m‖` in each RKHS.
    pub kernel_norms: Vec<f64>,
    pub primal: f64,
    pub dual: f64,
    pub gap: f64,
    /// Every iteration of the fit, over all the solvers that ran.
    pub n_iter: usize,
    pub status: SolveStatus,
    pub history: Vec<IterRecord>,
    /// The iterations of each solver that ran, in order (one entry, `n_iter`, unless a second
    /// solver continued the first: [`crate::solvers::continued`]); they sum to `n_iter`.
    pub solver_iters: Vec<usize>,
    /// The strongest witness, over the fit, that a kernel is not PSD (its dual values were
    /// not counted); `None` when every dual point was consistent with PSD kernels.
    pub psd_witness: Option<PsdWitness>,
    /// `(D,)` the weights in feature space of a solver on explicit features (SVRG: kernel
    /// blocks in column order, and `primal` is theirs); empty for the others.
    pub feature_weights: Vec<f64>,
}

impl FitResult {
    /// Sets the iterations of a one-solver fit to the count its solver keeps (SpicyMKL's
    /// certified steps, proximal Newton's Newton steps) in place of the driver's: `n_iter`
    /// and `solver_iters` together, so that they still sum.
    pub(crate) fn set_iterations(&mut self, n_iter: usize) {
        self.n_iter = n_iter;
        self.solver_iters = vec![n_iter];
    }
}

/// The relative duality gap `(P − D)/max(|P|, 1e-12)`.
pub fn relative_gap(primal: f64, dual: f64) -> f64 {
    (primal - dual) / primal.abs().max(1e-12)
}
