//! Every solver works on every kind of stack: dense f64, dense f32 and low rank give the same
//! optimum (an exact factorisation, tol 0, represents the same kernels).

use multikernel::kernels::{
    gram, DenseStack, GramOptions, KernelFn, KernelSpec, KernelStack, LowRankStack, Normalization,
};
use multikernel::solvers::lp::{fit_lp, LpConfig};
use multikernel::solvers::spicy::{fit_spicy, SpicyConfig};
use multikernel::{Loss, NoInterrupt};
use ndarray::Array2;

fn problem() -> (Array2<f64>, Vec<f64>) {
    let mut s = 11u64;
    let mut r = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let x = Array2::from_shape_fn((60, 3), |_| r());
    let y = (0..60)
        .map(|i| {
            if x[[i, 0]] * x[[i, 1]] + 0.2 * x[[i, 2]] > 0.0 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    (x, y)
}

fn specs() -> Vec<KernelSpec> {
    vec![
        KernelSpec::new(KernelFn::Linear),
        KernelSpec::new(KernelFn::Gaussian { sigma: 0.7 }),
        KernelSpec::on(KernelFn::Gaussian { sigma: 0.5 }, vec![0, 1]),
        KernelSpec::on(
            KernelFn::Polynomial {
                degree: 2,
                coef0: 1.0,
                scale: 1.0,
            },
            vec![0, 1],
        ),
        KernelSpec::on(KernelFn::Linear, vec![2]),
    ]
}

#[test]
fn solvers_agree_across_stack_kinds() {
    let (x, y) = problem();
    let opts = GramOptions {
        normalization: Normalization::MeanDiag,
        ..GramOptions::default()
    };
    let (g64, _) = gram::<f64>(x.view(), &specs(), &opts, &NoInterrupt).unwrap();
    let (g32, _) = gram::<f32>(x.view(), &specs(), &opts, &NoInterrupt).unwrap();
    let (m, n) = (specs().len(), x.nrows());
    let d64 = DenseStack::new(g64.as_slice().unwrap(), m, n).unwrap();
    let d32 = DenseStack::new(g32.as_slice().unwrap(), m, n).unwrap();
    let lr = LowRankStack::from_dense(&d64, 0.0, n).unwrap();
    let stacks: [(&str, &dyn KernelStack, f64); 3] = [
        ("f64", &d64, 1e-9),
        ("f32", &d32, 1e-4),
        ("lowrank", &lr, 1e-7),
    ];
    for loss in [Loss::Hinge, Loss::Logistic] {
        let spicy = SpicyConfig {
            loss,
            c: 2.0,
            tol: 1e-8,
            ..SpicyConfig::default()
        };
        let lp = LpConfig {
            loss,
            p: 2.0,
            tol: 1e-8,
            ..LpConfig::default()
        };
        let s_ref = fit_spicy(&d64, &y, &spicy, &NoInterrupt).unwrap().primal;
        let l_ref = fit_lp(&d64, &y, &lp, &NoInterrupt).unwrap().primal;
        for (name, stack, rtol) in stacks {
            let s = fit_spicy(stack, &y, &spicy, &NoInterrupt).unwrap();
            let l = fit_lp(stack, &y, &lp, &NoInterrupt).unwrap();
            assert!(s.gap <= 1e-8 && l.gap <= 1e-8, "{name} {loss:?}");
            assert!(
                (s.primal - s_ref).abs() <= rtol * s_ref,
                "{name} {loss:?} spicy"
            );
            assert!(
                (l.primal - l_ref).abs() <= rtol * l_ref,
                "{name} {loss:?} lp"
            );
        }
    }
}
