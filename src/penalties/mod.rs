//! The penalties `Ω` on the block norms `s_m = ‖f_m‖` (docs/mathematics.md §0) and the dual
//! values built from them (§1): what every solver's objective and certificate read.
//!
//! - [`lp`]: ℓp-norm MKL's `½ (Σ s_m^q)^{2/q}`, its dual norm `‖·‖_{p*}`, its gradient and
//!   the kernel weights θ of Kloft's eq. 17;
//! - [`sparse`]: `l1` and `elasticnet` ([`SparsePenalty`]) and their kernel weights;
//! - [`group`]: group MKL's `½ max_j (Σ_{k∈G_j} s_k)²` ([`Groups`], the exact penalty and
//!   its dual penalty, [`GroupPenalty`] exact or smoothed);
//! - [`block`]: [`BlockPenalty`], any of the above as one value (value, slope, conjugate,
//!   kernel weights);
//! - [`duals`]: the dual values and dual points that several solvers share (the loss part,
//!   ℓp's dual, the logistic loss's natural dual point, the forms `βᵀK_mβ`, the best
//!   multiple of a dual point).
//!
//! Dependencies run one way: `solvers → penalties → losses, kernels, linalg`. Nothing here
//! imports a solver, and the losses and kernels import nothing from here (`tests/layout.rs`).

pub mod block;
pub mod duals;
pub mod group;
pub mod lp;
pub mod sparse;

pub use block::BlockPenalty;
pub use group::{group_penalty, GroupPenalty, Groups};
pub use lp::{dual_norm, lp_gradient_scales, lp_penalty, lp_q, p_norm, theta_update};
pub use sparse::{
    block_value, envelope_term, kernel_weights, prox_shrink, subgradient_distance, SparsePenalty,
    WeightPenalty,
};
