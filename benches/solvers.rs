//! Solver benches on real data: one SMO solve and ℓp-MKL fits (analytic and interleaved) on
//! the SimpleMKL bank of ionosphere, through the engine's one entry (`multikernel::fit`). Run
//! with `cargo bench --bench solvers`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use multikernel::kernels::{
    gram, simplemkl_bank, DenseStack, GramOptions, KernelStack, Normalization, SIMPLEMKL_WIDTHS,
};
use multikernel::parallel::with_pool;
use multikernel::solvers::lp::{LpAlgorithm, LpConfig};
use multikernel::solvers::smo::{svc, DenseKernel, SmoOptions};
use multikernel::{fit, Data, Loss, NoInterrupt, Settings};

mod common;
use common::read_labelled;

fn bench_solvers(c: &mut Criterion) {
    let Some((x, y)) = read_labelled("ionosphere") else {
        return;
    };
    let specs = simplemkl_bank(x.ncols(), &SIMPLEMKL_WIDTHS, &[1, 2, 3]);
    let opts = GramOptions {
        normalization: Normalization::MeanDiag,
        ..GramOptions::default()
    };
    let (g, _) = gram::<f64>(x.view(), &specs, &opts, &NoInterrupt).expect("gram");
    let (m, n) = (specs.len(), x.nrows());
    let stack = DenseStack::new(g.as_slice().expect("contiguous"), m, n).expect("shape");
    let mut group = c.benchmark_group("ionosphere_simplemkl");
    group.sample_size(10);
    let mut k_sum = vec![0.0; n * n];
    stack.combine(&vec![1.0 / m as f64; m], &mut k_sum);
    group.bench_function("smo_svc_mean_kernel", |b| {
        let kernel = DenseKernel::new(&k_sum, n).expect("kernel");
        b.iter(|| {
            svc(
                &kernel,
                &y,
                &[1.0],
                &SmoOptions::default(),
                None,
                &NoInterrupt,
            )
        })
    });
    for (name, algorithm) in [
        ("lp_p2_analytic", LpAlgorithm::Analytic),
        ("lp_p2_interleaved", LpAlgorithm::Interleaved),
    ] {
        let settings = Settings::Lp(LpConfig {
            p: 2.0,
            algorithm,
            ..LpConfig::default()
        });
        group.bench_function(name, |b| b.iter(|| fit_on(&settings, &stack, &y)));
    }
    let settings = Settings::Lp(LpConfig {
        loss: Loss::Logistic,
        ..LpConfig::default()
    });
    group.bench_function("lp_p2_logistic", |b| {
        b.iter(|| fit_on(&settings, &stack, &y))
    });
    group.finish();
}

/// One fit through the engine's entry, on the bench's thread pool.
fn fit_on(settings: &Settings, stack: &DenseStack<f64>, y: &[f64]) -> multikernel::FitResult {
    let data = Data::Stack(stack);
    let fitted = with_pool(0, || {
        fit(settings, data, black_box(y), None, None, &NoInterrupt)
    });
    fitted.unwrap().unwrap().result
}

criterion_group!(benches, bench_solvers);
criterion_main!(benches);
