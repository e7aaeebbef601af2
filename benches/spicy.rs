//! SpicyMKL on the paper's kernel-count scaling problem (ringnorm, n = 200, Gaussian kernels
//! on random feature subsets with σ = 5χ² + 0.1, unit trace), on each kind of stack: dense
//! f64, dense f32 and low rank (pivoted Cholesky to 1e-6), next to one streaming
//! `quad_forms` pass over the f64 stack. The fits go through the engine's one entry
//! (`multikernel::fit`). Run with `cargo bench --bench spicy`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use multikernel::kernels::{
    gram, DenseStack, GramOptions, KernelFn, KernelSpec, KernelStack, LowRankStack, Normalization,
};
use multikernel::parallel::with_pool;
use multikernel::penalties::SparsePenalty;
use multikernel::solvers::spicy::SpicyConfig;
use multikernel::{fit, Data, Loss, NoInterrupt, Settings};

mod common;
use common::read_labelled;

/// A small deterministic generator: uniform in [0, 1).
struct Lcg(u64);

impl Lcg {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A χ²(1) draw: the square of a standard normal (Box–Muller).
    fn chi2(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
        z * z
    }
}

fn random_specs(m: usize, d: usize, seed: u64) -> Vec<KernelSpec> {
    let mut rng = Lcg(seed);
    (0..m)
        .map(|_| {
            let sigma = 5.0 * rng.chi2() + 0.1;
            let mut features: Vec<usize> = (0..d).filter(|_| rng.uniform() < 0.5).collect();
            if features.is_empty() {
                features.push((rng.uniform() * d as f64) as usize % d);
            }
            KernelSpec::on(KernelFn::Gaussian { sigma }, features)
        })
        .collect()
}

fn bench_spicy(c: &mut Criterion) {
    let Some((x_all, y_all)) = read_labelled("ringnorm") else {
        return;
    };
    let n = 200;
    let x = x_all.slice(ndarray::s![..n, ..]).to_owned();
    let y = &y_all[..n];
    let opts = GramOptions {
        normalization: Normalization::Trace,
        ..GramOptions::default()
    };
    let mut group = c.benchmark_group("spicy_ringnorm_n200");
    group.sample_size(10);
    for m in [200usize, 1000] {
        let specs = random_specs(m, x.ncols(), 7);
        let (g64, _) = gram::<f64>(x.view(), &specs, &opts, &NoInterrupt).expect("gram");
        let (g32, _) = gram::<f32>(x.view(), &specs, &opts, &NoInterrupt).expect("gram");
        let s64 = DenseStack::new(g64.as_slice().expect("contiguous"), m, n).expect("stack");
        let s32 = DenseStack::new(g32.as_slice().expect("contiguous"), m, n).expect("stack");
        let lr = LowRankStack::from_dense(&s64, 1e-6, n).expect("low rank");
        let mut out = vec![0.0; m];
        group.bench_function(format!("M{m}/one_quad_forms_pass_f64"), |b| {
            b.iter(|| with_pool(0, || s64.quad_forms(black_box(y), &mut out)).unwrap())
        });
        for (loss, name) in [(Loss::Hinge, "hinge"), (Loss::Logistic, "logistic")] {
            // The paper's C = 0.5 is our C = 2 (C weights the loss here).
            let settings = Settings::Spicy(SpicyConfig {
                penalty: SparsePenalty::L1,
                c: 2.0,
                loss,
                tol: 0.01,
                ..SpicyConfig::default()
            });
            let stacks: [(&str, &dyn KernelStack); 3] =
                [("f64", &s64), ("f32", &s32), ("lowrank", &lr)];
            for (kind, stack) in stacks {
                group.bench_function(format!("M{m}/{name}/{kind}"), |b| {
                    b.iter(|| {
                        let data = Data::Stack(stack);
                        with_pool(0, || fit(&settings, data, y, None, None, &NoInterrupt))
                            .unwrap()
                            .unwrap()
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_spicy);
criterion_main!(benches);
