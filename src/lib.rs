//! # multikernel — Multiple Kernel Learning engine
//!
//! A model is `f(x) = Σ_m f_m(x) + b` with `f_m(x) = Σ_i A[m,i] k_m(x, x_i)`, so that
//! `‖f_m‖_H = sqrt(A[m]ᵀ K_m A[m])`. Every solver minimises
//!
//! ```text
//! P(A, b) = C Σ_i ℓ(y_i, f(x_i)) + Ω(‖f_1‖, …, ‖f_M‖)
//! ```
//!
//! for a loss ℓ and a penalty Ω (block-ℓ1, elastic net, ℓp, group), and reports `P`, a dual value
//! `D ≤ P` from a feasible dual point, and the relative gap `(P − D)/|P|` as a certificate
//! (see `docs/mathematics.md`).
//!
//! Layout: [`fit`] is the one entry: it runs the solver that [`Settings`] names on [`Data`].
//! [`kernels`] computes and normalises Gram matrices and holds them in a
//! [`kernels::KernelStack`], the one abstraction through which solvers touch kernels;
//! [`losses`] and [`penalties`] hold the two parts of the objective, with their conjugates and
//! the dual values built on them; [`solvers`] holds the optimisation algorithms, a folder
//! each, and at its root the typed union over them that [`fit`] dispatches on; the `python`
//! module (feature `python`) is a thin binding without logic. Dependencies run
//! `solvers → penalties → losses, kernels, linalg`, never back (`tests/layout.rs`).

pub mod error;
pub mod fields;
pub mod interrupt;
pub mod kernels;
pub mod linalg;
pub mod losses;
pub mod parallel;
pub mod penalties;
pub mod result;
pub mod solvers;

#[cfg(feature = "python")]
mod python;

pub use error::{MkError, Result};
pub use interrupt::{Interrupt, NoInterrupt};
pub use losses::Loss;
pub use result::{FitResult, IterRecord, PsdWitness, SolveStatus};
pub use solvers::{fit, Data, Settings};
