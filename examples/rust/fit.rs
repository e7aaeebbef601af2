//! A multiple kernel learning fit through the engine's one entry, `multikernel::fit`,
//! from Rust: Gaussian kernels of several widths and a linear kernel on generated points,
//! fitted twice with ℓp-norm MKL (hinge loss): once on the Gram matrices stored as a dense
//! stack, once with the kernels computed on demand (no `n × n` matrix stored). Both fits are
//! certified by their duality gap, and they agree.
//!
//! Run with `cargo run --release --example fit`.

use multikernel::kernels::{
    gram, DenseStack, GramOptions, KernelFn, KernelSpec, Normalization, OnDemandStack,
};
use multikernel::{fit, Data, Settings};
use multikernel::{MkError, NoInterrupt};

/// `n` points in 4 dimensions (a fixed pseudo-random stream) and ±1 labels that depend on
/// the first two features only, so the kernels on those features should carry the weight.
fn points(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut state = 12345u64;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
    };
    let x: Vec<f64> = (0..n * 4).map(|_| uniform()).collect();
    let y = (0..n)
        .map(|i| {
            let (a, b) = (x[i * 4], x[i * 4 + 1]);
            if a * a + b * b < 1.5 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    (x, y)
}

fn main() -> Result<(), MkError> {
    let (n, p) = (300, 4);
    let (x, y) = points(n);
    // Three Gaussian widths on features {0, 1}, the same on {2, 3}, and a linear kernel on all.
    let mut specs: Vec<KernelSpec> = Vec::new();
    for features in [vec![0, 1], vec![2, 3]] {
        for sigma in [0.5, 1.0, 2.0] {
            specs.push(KernelSpec::on(
                KernelFn::Gaussian { sigma },
                features.clone(),
            ));
        }
    }
    specs.push(KernelSpec::new(KernelFn::Linear));
    let m = specs.len();
    let settings = Settings::default_of("analytic")?;

    // The kernels stored: the (M, n, n) stack of Gram matrices, normalised to unit mean
    // diagonal.
    let opts = GramOptions {
        normalization: Normalization::MeanDiag,
        ..GramOptions::default()
    };
    let xa =
        ndarray::ArrayView2::from_shape((n, p), &x).map_err(|e| MkError::Shape(e.to_string()))?;
    let (g, _stats) = gram::<f64>(xa, &specs, &opts, &NoInterrupt)?;
    let values = g.as_slice().expect("a fresh array is contiguous");
    let stack = DenseStack::new(values, m, n)?;
    let stored = fit(&settings, Data::Stack(&stack), &y, None, None, &NoInterrupt)?;

    // The same kernels computed on demand, with a column cache of 1 MB.
    let on_demand = OnDemandStack::new(&x, n, p, &specs, Normalization::MeanDiag, None, 1 << 20)?;
    let computed = fit(
        &settings,
        Data::Stack(&on_demand),
        &y,
        None,
        None,
        &NoInterrupt,
    )?;

    for (name, f) in [("stored", &stored), ("on demand", &computed)] {
        let r = &f.result;
        println!(
            "{name:>9}: {:?} after {} iterations of {:?}; primal {:.6}, dual {:.6}, gap {:.1e}",
            r.status, r.n_iter, f.solvers, r.primal, r.dual, r.gap
        );
        let weights: Vec<String> = r.kernel_weights.iter().map(|w| format!("{w:.3}")).collect();
        println!("           kernel weights [{}]", weights.join(", "));
    }
    let (a, b) = (stored.result.primal, computed.result.primal);
    assert!(
        (a - b).abs() <= 1e-3 * a.abs().max(1.0),
        "the two fits agree"
    );
    Ok(())
}
