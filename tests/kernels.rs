//! The kernel layer from Rust: every stack operation against a naive reference, the
//! cross-kernel invariant for every normalisation, and the low-rank error bound.

use std::ops::Range;

use multikernel::kernels::{
    cross_gram, cross_gram_bank, gram, gram_bank, BankKernel, BlockKernel, DenseStack, GramOptions,
    KernelFn, KernelSpec, KernelStack, LowRankStack, Normalization,
};
use multikernel::{MkError, NoInterrupt};
use ndarray::{Array2, ArrayView2};

/// A small deterministic pseudo-random generator (no dependency needed).
fn lcg(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

fn data(n: usize, d: usize) -> Array2<f64> {
    let mut r = lcg(7);
    Array2::from_shape_fn((n, d), |_| r())
}

fn specs() -> Vec<KernelSpec> {
    vec![
        KernelSpec::new(KernelFn::Linear),
        KernelSpec::new(KernelFn::Gaussian { sigma: 1.1 }),
        KernelSpec::on(
            KernelFn::Polynomial {
                degree: 2,
                coef0: 1.0,
                scale: 0.5,
            },
            vec![1, 2],
        ),
        KernelSpec::on(KernelFn::Laplacian { sigma: 0.9 }, vec![0]),
    ]
}

fn naive_quad(k: &[f64], n: usize, v: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..n {
            s += v[i] * k[i * n + j] * v[j];
        }
    }
    s
}

#[test]
fn gram_entries_match_definitions() {
    let x = data(15, 3);
    let (g, _) = gram::<f64>(x.view(), &specs(), &GramOptions::default(), &NoInterrupt).unwrap();
    for i in 0..15 {
        for j in 0..15 {
            let (a, b) = (x.row(i), x.row(j));
            let dot = a.dot(&b);
            let sq: f64 = a.iter().zip(b.iter()).map(|(p, q)| (p - q) * (p - q)).sum();
            let poly = (0.5 * (a[1] * b[1] + a[2] * b[2]) + 1.0).powi(2);
            let lap = (-(a[0] - b[0]).abs() / 0.9).exp();
            assert!((g[[0, i, j]] - dot).abs() < 1e-12);
            assert!((g[[1, i, j]] - (-sq / (2.0 * 1.1 * 1.1)).exp()).abs() < 1e-12);
            assert!((g[[2, i, j]] - poly).abs() < 1e-12);
            assert!((g[[3, i, j]] - lap).abs() < 1e-12);
        }
    }
}

#[test]
fn cross_of_training_points_is_training_rows_for_every_normalisation() {
    let x = data(20, 3);
    let norms = [
        Normalization::None,
        Normalization::Trace,
        Normalization::MeanDiag,
        Normalization::Multiplicative,
        Normalization::Spherical,
    ];
    for &normalization in &norms {
        for center in [false, true] {
            let opts = GramOptions {
                normalization,
                center,
                ..GramOptions::default()
            };
            let (g, st) = gram::<f64>(x.view(), &specs(), &opts, &NoInterrupt).unwrap();
            let c =
                cross_gram::<f64>(x.view(), x.view(), &specs(), &st, &opts, &NoInterrupt).unwrap();
            let err = (&g - &c).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(err < 1e-10, "{normalization:?} center={center}: {err}");
        }
    }
}

#[test]
fn dense_stack_operations_match_naive() {
    let x = data(37, 3);
    let opts = GramOptions {
        normalization: Normalization::Trace,
        ..GramOptions::default()
    };
    let (g, _) = gram::<f64>(x.view(), &specs(), &opts, &NoInterrupt).unwrap();
    let (g32, _) = gram::<f32>(x.view(), &specs(), &opts, &NoInterrupt).unwrap();
    let (m, n) = (4, 37);
    let s = DenseStack::new(g.as_slice().unwrap(), m, n).unwrap();
    let s32 = DenseStack::new(g32.as_slice().unwrap(), m, n).unwrap();
    let mut r = lcg(3);
    let v: Vec<f64> = (0..n).map(|_| r()).collect();
    let w: Vec<f64> = (0..n).map(|_| r()).collect();
    let mut q = vec![0.0; m];
    let mut q32 = vec![0.0; m];
    s.quad_forms(&v, &mut q);
    s32.quad_forms(&v, &mut q32);
    let mut batch = vec![0.0; 2 * m];
    let vw: Vec<f64> = v.iter().chain(&w).copied().collect();
    s.quad_forms_batch(&vw, &mut batch);
    for k in 0..m {
        let kk = s.kernel(k);
        let refv = naive_quad(kk, n, &v);
        assert!((q[k] - refv).abs() < 1e-12 * (1.0 + refv.abs()));
        assert!((q32[k] - refv).abs() < 1e-5 * (1.0 + refv.abs()));
        assert!((batch[2 * k] - refv).abs() < 1e-12 * (1.0 + refv.abs()));
        assert!((batch[2 * k + 1] - naive_quad(kk, n, &w)).abs() < 1e-12);
        let mut mv = vec![0.0; n];
        s.matvec(k, &v, &mut mv);
        for i in 0..n {
            let e: f64 = (0..n).map(|j| kk[i * n + j] * v[j]).sum();
            assert!((mv[i] - e).abs() < 1e-12);
        }
    }
    // A sparse vector (an SVM dual): only its rows are read, the value is the same.
    let mut sparse = v.clone();
    for (i, x) in sparse.iter_mut().enumerate() {
        if i % 3 != 0 {
            *x = 0.0;
        }
    }
    let mut qs = vec![0.0; m];
    s.quad_forms(&sparse, &mut qs);
    for (k, q) in qs.iter().enumerate() {
        let refv = naive_quad(s.kernel(k), n, &sparse);
        assert!((q - refv).abs() < 1e-12 * (1.0 + refv.abs()));
    }
    let idx = [3, 1];
    let mut sub = vec![0.0; 2];
    s.quad_forms_subset(&v, &idx, &mut sub);
    assert_eq!(sub, vec![q[3], q[1]]);
    let theta = [0.5, 0.0, 2.0, 1.0];
    let mut comb = vec![0.0; n * n];
    s.combine(&theta, &mut comb);
    for (i, c) in comb.iter().enumerate() {
        let e: f64 = (0..m).map(|k| theta[k] * s.kernel(k)[i]).sum();
        assert!((c - e).abs() < 1e-14);
    }
}

#[test]
fn low_rank_error_is_within_tolerance_and_ops_agree() {
    let x = data(40, 3);
    let opts = GramOptions {
        normalization: Normalization::Trace,
        ..GramOptions::default()
    };
    let (g, _) = gram::<f64>(x.view(), &specs(), &opts, &NoInterrupt).unwrap();
    let (m, n) = (4, 40);
    let s = DenseStack::new(g.as_slice().unwrap(), m, n).unwrap();
    for tol in [1e-2, 1e-6] {
        let lr = LowRankStack::from_dense(&s, tol, n).unwrap();
        let mut v = vec![0.0; n];
        v[0] = 1.0;
        v[5] = -2.0;
        let mut qd = vec![0.0; m];
        let mut ql = vec![0.0; m];
        s.quad_forms(&v, &mut qd);
        lr.quad_forms(&v, &mut ql);
        for k in 0..m {
            assert!(lr.errors()[k] <= tol);
            // |vᵀRv| ≤ ‖v‖² λ_max(R) ≤ ‖v‖² tr(R) and tr K_k = 1.
            assert!((qd[k] - ql[k]).abs() <= 5.0 * tol + 1e-12, "{tol} {k}");
            let mut col = vec![0.0; n];
            let mut diag = vec![0.0; n];
            lr.column(k, 5, &mut col);
            lr.diag(k, &mut diag);
            assert!((col[5] - diag[5]).abs() < 1e-14);
        }
        // A linear kernel on 3 features has rank 3.
        assert_eq!(lr.ranks()[0], 3);
    }
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let mut x = data(5, 2);
    let bad = vec![KernelSpec::on(KernelFn::Linear, vec![2])];
    assert!(gram::<f64>(x.view(), &bad, &GramOptions::default(), &NoInterrupt).is_err());
    let neg = vec![KernelSpec::new(KernelFn::Gaussian { sigma: -1.0 })];
    assert!(gram::<f64>(x.view(), &neg, &GramOptions::default(), &NoInterrupt).is_err());
    x[[1, 1]] = f64::NAN;
    let ok = vec![KernelSpec::new(KernelFn::Linear)];
    let e = gram::<f64>(x.view(), &ok, &GramOptions::default(), &NoInterrupt).unwrap_err();
    assert!(e.to_string().contains("entry [1, 1]"));
    let small = GramOptions {
        max_bytes: Some(10),
        ..GramOptions::default()
    };
    let x = data(5, 2);
    let e = gram::<f64>(x.view(), &ok, &small, &NoInterrupt).unwrap_err();
    assert!(e.to_string().contains("float32"));
    assert!(DenseStack::new(&[0.0f64; 7], 1, 3).is_err());
    let asym = [1.0, 0.5, 0.0, 1.0];
    assert!(DenseStack::new(&asym, 1, 2)
        .unwrap()
        .validate(1e-8)
        .is_err());
}

#[test]
fn interrupt_stops_a_gram_computation() {
    let x = data(10, 3);
    let stop = || true;
    let e = gram::<f64>(x.view(), &specs(), &GramOptions::default(), &stop).unwrap_err();
    assert_eq!(e, multikernel::MkError::Interrupted);
}

/// The linear kernel computed outside the engine, as a Python function would be, times
/// `sign`, with `skew` added below the diagonal and `poison` written at one entry.
struct LinearBlocks<'a> {
    a: ArrayView2<'a, f64>,
    b: ArrayView2<'a, f64>,
    skew: f64,
    poison: Option<(usize, usize)>,
    sign: f64,
}

impl BlockKernel for LinearBlocks<'_> {
    fn rows(&self, rows: Range<usize>, out: &mut [f64]) -> multikernel::Result<()> {
        let nb = self.b.nrows();
        for (r, i) in rows.enumerate() {
            for j in 0..nb {
                let skew = if i > j { self.skew } else { 0.0 };
                let bad = self.poison == Some((i, j));
                out[r * nb + j] = if bad {
                    f64::NAN
                } else {
                    self.sign * self.a.row(i).dot(&self.b.row(j)) + skew
                };
            }
        }
        Ok(())
    }

    fn self_values(&self, rows: Range<usize>, out: &mut [f64]) -> multikernel::Result<()> {
        for (o, i) in out.iter_mut().zip(rows) {
            *o = self.sign * self.a.row(i).dot(&self.a.row(i));
        }
        Ok(())
    }
}

fn linear_blocks<'a>(a: &'a Array2<f64>, b: &'a Array2<f64>) -> LinearBlocks<'a> {
    LinearBlocks {
        a: a.view(),
        b: b.view(),
        skew: 0.0,
        poison: None,
        sign: 1.0,
    }
}

/// A block kernel (over several blocks of rows) gives the training and cross kernels of the
/// specification it computes, under every normalisation, with and without centring.
#[test]
fn block_kernels_are_normalised_like_specifications() {
    let (x, xn) = (data(300, 3), data(40, 3).mapv(|v| v * 0.7 + 0.1));
    let gauss = KernelSpec::new(KernelFn::Gaussian { sigma: 1.1 });
    let linear = KernelSpec::new(KernelFn::Linear);
    let (train, cross) = (linear_blocks(&x, &x), linear_blocks(&xn, &x));
    for normalization in [
        Normalization::None,
        Normalization::Trace,
        Normalization::MeanDiag,
        Normalization::Multiplicative,
        Normalization::Spherical,
    ] {
        for center in [false, true] {
            let opts = GramOptions {
                normalization,
                center,
                ..GramOptions::default()
            };
            let specs = [gauss.clone(), linear.clone()];
            let (g, st) = gram::<f64>(x.view(), &specs, &opts, &NoInterrupt).unwrap();
            let c =
                cross_gram::<f64>(xn.view(), x.view(), &specs, &st, &opts, &NoInterrupt).unwrap();
            let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&train)];
            let (gb, stb) = gram_bank::<f64>(x.view(), &bank, &opts, &NoInterrupt).unwrap();
            let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&cross)];
            let cb = cross_gram_bank::<f64>(xn.view(), x.view(), &bank, &stb, &opts, &NoInterrupt)
                .unwrap();
            let close = |p: f64, q: f64| (p - q).abs() <= 1e-12 * (1.0 + q.abs());
            assert!(
                g.iter().zip(&gb).all(|(p, q)| close(*p, *q)),
                "{normalization:?}"
            );
            assert!(
                c.iter().zip(&cb).all(|(p, q)| close(*p, *q)),
                "{normalization:?}"
            );
        }
    }
}

/// A training block that is not symmetric, or not finite, is an error naming the kernel.
#[test]
fn block_kernel_errors_name_the_kernel() {
    let x = data(300, 3);
    let gauss = KernelSpec::new(KernelFn::Gaussian { sigma: 1.1 });
    let opts = GramOptions::default();
    let skewed = LinearBlocks {
        skew: 1e-3,
        ..linear_blocks(&x, &x)
    };
    let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&skewed)];
    let e = gram_bank::<f64>(x.view(), &bank, &opts, &NoInterrupt).unwrap_err();
    assert!(matches!(e, MkError::NotSymmetric { kernel: 1, .. }), "{e}");
    let nan = LinearBlocks {
        poison: Some((270, 5)),
        ..linear_blocks(&x, &x)
    };
    let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&nan)];
    let e = gram_bank::<f32>(x.view(), &bank, &opts, &NoInterrupt).unwrap_err();
    assert_eq!(
        e,
        MkError::NonFinite {
            what: "kernel 1".into(),
            kernel: Some(1),
            entry: Some((270, 5)),
        }
    );
}

/// A block kernel with a negative diagonal is refused under every normalisation, with and
/// without centring, naming its most negative raw (or centred) entry: the trace and
/// mean-diagonal normalisations would scale a kernel of negative trace to zero, and the
/// spherical one zero the rows of negative self-values. A negative self-value of a new point
/// is refused where it is read (the spherical normalisation).
#[test]
fn block_kernels_with_a_negative_diagonal_are_refused_before_normalisation() {
    let x = data(50, 3);
    let gauss = KernelSpec::new(KernelFn::Gaussian { sigma: 1.1 });
    let negative = LinearBlocks {
        sign: -1.0,
        ..linear_blocks(&x, &x)
    };
    let norms = (0..50).map(|i| x.row(i).dot(&x.row(i)));
    let worst = norms
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
        .unwrap();
    let xn = data(4, 3);
    let (train, cross) = (
        linear_blocks(&xn, &x),
        LinearBlocks {
            sign: -1.0,
            ..linear_blocks(&xn, &x)
        },
    );
    for normalization in [
        Normalization::None,
        Normalization::Trace,
        Normalization::MeanDiag,
        Normalization::Multiplicative,
        Normalization::Spherical,
    ] {
        for center in [false, true] {
            let opts = GramOptions {
                normalization,
                center,
                ..GramOptions::default()
            };
            let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&negative)];
            let e = gram_bank::<f64>(x.view(), &bank, &opts, &NoInterrupt).unwrap_err();
            match &e {
                MkError::NotPsd {
                    kernel: 1,
                    entry: (i, j),
                    reason,
                } => {
                    assert_eq!(i, j, "{e}");
                    if !center {
                        assert_eq!(*i, worst, "{e}");
                    }
                    assert!(reason.contains("before any normalisation"), "{e}");
                }
                _ => panic!("{normalization:?} {center}: {e}"),
            }
        }
        // New points against a PSD training kernel: their negative self-values are read by
        // the spherical normalisation only.
        let opts = GramOptions {
            normalization,
            ..GramOptions::default()
        };
        let own = linear_blocks(&x, &x);
        let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&own)];
        let (_, st) = gram_bank::<f64>(x.view(), &bank, &opts, &NoInterrupt).unwrap();
        let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&train)];
        assert!(
            cross_gram_bank::<f64>(xn.view(), x.view(), &bank, &st, &opts, &NoInterrupt).is_ok()
        );
        let bank = [BankKernel::Spec(&gauss), BankKernel::Blocks(&cross)];
        let r = cross_gram_bank::<f64>(xn.view(), x.view(), &bank, &st, &opts, &NoInterrupt);
        if normalization == Normalization::Spherical {
            let e = r.unwrap_err();
            assert!(matches!(e, MkError::NotPsd { kernel: 1, .. }), "{e}");
            assert!(e.to_string().contains("new point"), "{e}");
        } else {
            assert!(r.is_ok());
        }
    }
}
