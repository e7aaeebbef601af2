//! The `multikernel._core` extension module: conversion, GIL release and error mapping only.
//! All validation that needs Python types lives in the Python facade; all logic in the engine.

mod convert;
mod kernels;
mod rows;
mod shared;
mod solvers;

use pyo3::prelude::*;

/// The native core of multikernel.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    kernels::register(m)?;
    solvers::register(m)?;
    rows::register(m)?;
    shared::register(m)?;
    Ok(())
}
