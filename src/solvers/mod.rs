//! Optimisation algorithms. Each solver touches kernels only through
//! [`crate::kernels::KernelStack`].

pub mod lp;
pub mod newton;
pub mod smo;
pub mod spicy;
mod tracker;
