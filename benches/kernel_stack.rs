//! Bandwidth of the hot loop: `quad_forms` on a dense f64 stack (M = 6000, n = 200) next to a
//! plain streaming read of the same bytes, and the f32 and low-rank stacks on the SimpleMKL
//! bank of ionosphere; and the passes of ℓp-MKL's analytic solver (`combine`,
//! `combined_matvec`) on a stack shaped like Kloft's benchmark. Run with
//! `cargo bench --bench kernel_stack`; criterion prints the throughput of each in GiB/s
//! (bytes of the full dense stack per pass).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use multikernel::kernels::{
    gram, point_subset, simplemkl_bank, DenseStack, GramOptions, KernelStack, LowRankStack,
    Normalization, SIMPLEMKL_WIDTHS,
};
use multikernel::parallel::with_pool;
use multikernel::NoInterrupt;
use rayon::prelude::*;

mod common;
use common::read_csv;

/// The baseline: read every byte once, in parallel over kernels, summing with independent
/// accumulators so that the loop is bound by memory, not by the adder.
fn stream_sum(data: &[f64], chunk: usize) -> f64 {
    data.par_chunks(chunk)
        .map(|c| {
            let mut acc = [0.0f64; 8];
            for x in c.chunks_exact(8) {
                for l in 0..8 {
                    acc[l] += x[l];
                }
            }
            acc.iter().sum::<f64>()
        })
        .sum()
}

fn lcg_vec(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// `m` symmetric kernels `v vᵀ + I` on `n` points: values do not matter for bandwidth.
fn rank_one_stack(m: usize, n: usize) -> Vec<f64> {
    let mut data = vec![0.0f64; m * n * n];
    data.par_chunks_mut(n * n).enumerate().for_each(|(k, g)| {
        let v = lcg_vec(n, k as u64);
        for i in 0..n {
            for j in 0..n {
                g[i * n + j] = v[i] * v[j] + if i == j { 1.0 } else { 0.0 };
            }
        }
    });
    data
}

fn bench_bandwidth(c: &mut Criterion) {
    let (m, n) = (6000usize, 200usize);
    let data = rank_one_stack(m, n);
    let stack = DenseStack::new(&data, m, n).expect("shape");
    let v = lcg_vec(n, 99);
    let mut out = vec![0.0; m];
    let bytes = (m * n * n * 8) as u64;
    let mut g = c.benchmark_group("dense_f64_M6000_n200");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("stream_read", |b| {
        b.iter(|| with_pool(0, || black_box(stream_sum(&data, n * n))).unwrap())
    });
    g.bench_function("quad_forms", |b| {
        b.iter(|| with_pool(0, || stack.quad_forms(black_box(&v), &mut out)).unwrap())
    });
    let vs: Vec<f64> = (0..4).flat_map(|s| lcg_vec(n, s)).collect();
    let mut out4 = vec![0.0; 4 * m];
    g.bench_function("quad_forms_batch4_per_vector", |b| {
        b.iter_custom(|iters| {
            let t = std::time::Instant::now();
            for _ in 0..iters {
                with_pool(0, || stack.quad_forms_batch(black_box(&vs), &mut out4)).unwrap();
            }
            // Time per vector, so that the throughput compares with one quad_forms pass.
            t.elapsed() / 4
        })
    });
    g.finish();
}

fn bench_ionosphere(c: &mut Criterion) {
    let Some(x) = read_csv("ionosphere") else {
        return;
    };
    let specs = simplemkl_bank(x.ncols(), &SIMPLEMKL_WIDTHS, &[1, 2, 3]);
    let opts = GramOptions {
        normalization: Normalization::Trace,
        ..GramOptions::default()
    };
    let (g64, _) = gram::<f64>(x.view(), &specs, &opts, &NoInterrupt).expect("gram");
    let (g32, _) = gram::<f32>(x.view(), &specs, &opts, &NoInterrupt).expect("gram");
    let (m, n) = (specs.len(), x.nrows());
    let s64 = DenseStack::new(g64.as_slice().expect("contiguous"), m, n).expect("shape");
    let s32 = DenseStack::new(g32.as_slice().expect("contiguous"), m, n).expect("shape");
    let lr = LowRankStack::from_dense(&s64, 1e-6, n).expect("low rank");
    let ranks = lr.ranks();
    eprintln!(
        "ionosphere SimpleMKL bank: M={m}, n={n}; low-rank (tol 1e-6) mean rank {:.1}, max {}",
        ranks.iter().sum::<usize>() as f64 / m as f64,
        ranks.iter().max().copied().unwrap_or(0)
    );
    let v = lcg_vec(n, 5);
    let mut out = vec![0.0; m];
    let mut g = c.benchmark_group("ionosphere_simplemkl_quad_forms");
    g.sample_size(30);
    g.throughput(Throughput::Bytes((m * n * n * 8) as u64));
    g.bench_function("dense_f64", |b| {
        b.iter(|| with_pool(0, || s64.quad_forms(black_box(&v), &mut out)).unwrap())
    });
    g.bench_function("dense_f32", |b| {
        b.iter(|| with_pool(0, || s32.quad_forms(black_box(&v), &mut out)).unwrap())
    });
    g.bench_function("low_rank_1e-6", |b| {
        b.iter(|| with_pool(0, || lr.quad_forms(black_box(&v), &mut out)).unwrap())
    });
    g.finish();
}

/// The passes of ℓp-MKL's analytic solver on a dense f64 stack shaped like Kloft's benchmark
/// (M = 50, n = 1000): `combine` (the upper triangle of `K_θ`, then mirrored) and
/// `combined_matvec` at a vector with 30% non-zeros (its support vectors), next to a
/// streaming read of the whole stack; and the estimator's check of the stack (`validate`)
/// before the first `combine`.
fn bench_lp_passes(c: &mut Criterion) {
    let (m, n) = (50usize, 1000usize);
    let data = rank_one_stack(m, n);
    let stack = DenseStack::new(&data, m, n).expect("shape");
    let theta = vec![1.0 / (m as f64).sqrt(); m];
    let mut v = lcg_vec(n, 7);
    for (i, x) in v.iter_mut().enumerate() {
        if i % 10 >= 3 {
            *x = 0.0;
        }
    }
    let mut k_theta = vec![0.0; n * n];
    let mut f = vec![0.0; n];
    let mut g = c.benchmark_group("dense_f64_M50_n1000");
    g.sample_size(20);
    g.throughput(Throughput::Bytes((m * n * n * 8) as u64));
    g.bench_function("stream_read", |b| {
        b.iter(|| with_pool(0, || black_box(stream_sum(&data, n * n))).unwrap())
    });
    g.bench_function("combine", |b| {
        b.iter(|| with_pool(0, || stack.combine(black_box(&theta), &mut k_theta)).unwrap())
    });
    // The estimator's check of a precomputed stack, alone and before the first combine: 1.24
    // stream reads (23.9 against 19.3 ms, one run); 2.2 (41.5 ms) before its 4×4 blocks were
    // taken two block rows at a time, each mirror cache line then read once.
    stack.validate(1e-8).expect("a valid stack");
    g.bench_function("validate", |b| {
        b.iter(|| with_pool(0, || stack.validate(black_box(1e-8))).unwrap())
    });
    g.bench_function("validate_then_combine", |b| {
        b.iter(|| {
            with_pool(0, || {
                stack.validate(1e-8).expect("valid");
                stack.combine(black_box(&theta), &mut k_theta)
            })
            .unwrap()
        })
    });
    g.bench_function("combined_matvec_30pct", |b| {
        b.iter(|| with_pool(0, || stack.combined_matvec(&theta, black_box(&v), &mut f)).unwrap())
    });
    let idx: Vec<usize> = (0..n).filter(|i| i % 3 == 0).collect();
    g.bench_function("point_subset_33pct", |b| {
        b.iter(|| with_pool(0, || black_box(point_subset(&stack, &idx, 700))).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench_bandwidth, bench_ionosphere, bench_lp_passes);
criterion_main!(benches);
