use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::{DenseStack, RowFeatures};
use crate::result::SolveStatus;
use crate::solvers::lp::{fit_lp_weighted, LpConfig};

/// `n` rows of 3 feature blocks (widths 2, 3, 2) of a deterministic stream; labels from a
/// noisy linear rule on the first two blocks.
fn problem(n: usize, classify: bool) -> (Vec<f64>, Vec<usize>, Vec<f64>) {
    let mut rng = SplitMix(17);
    let u = |r: &mut SplitMix| 2.0 * r.uniform() - 1.0;
    let dims = vec![2, 3, 2];
    let width: usize = dims.iter().sum();
    let x: Vec<f64> = (0..n * width).map(|_| u(&mut rng)).collect();
    let y = (0..n)
        .map(|t| {
            let r = &x[t * width..(t + 1) * width];
            let s = 1.5 * r[0] - r[1] + 0.8 * r[3] + 0.3 * u(&mut rng);
            if classify {
                s.signum()
            } else {
                s
            }
        })
        .collect();
    (x, dims, y)
}

/// The linear kernels `K_k = Φ_kΦ_kᵀ` of the blocks as a dense stack.
fn kernels(x: &[f64], dims: &[usize], n: usize) -> Vec<f64> {
    let width: usize = dims.iter().sum();
    let mut g = Vec::with_capacity(dims.len() * n * n);
    let mut off = 0;
    for &dk in dims {
        for i in 0..n {
            for j in 0..n {
                g.push(
                    (0..dk)
                        .map(|c| x[i * width + off + c] * x[j * width + off + c])
                        .sum(),
                );
            }
        }
        off += dk;
    }
    g
}

/// SVRG meets the analytic solver (an independent algorithm) on the linear kernels of its
/// blocks, without and with sample weights (not the same optimum: the weights are read).
#[test]
fn svrg_meets_the_analytic_solver_on_linear_kernels() {
    let n = 150;
    let weights: Vec<f64> = (0..n).map(|t| [0.5, 1.0, 3.0][t % 3]).collect();
    for (loss, classify) in [
        (Loss::Logistic, true),
        (Loss::SquaredHinge, true),
        (Loss::Squared, false),
    ] {
        let (x, dims, y) = problem(n, classify);
        let g = kernels(&x, &dims, n);
        let stack = DenseStack::new(&g, dims.len(), n).unwrap();
        let mut unweighted = f64::NAN;
        for (p, w) in [(1.5, None), (2.0, None), (2.0, Some(weights.as_slice()))] {
            let lp = LpConfig {
                p,
                c: 1.0,
                loss,
                tol: 1e-8,
                max_iter: 2000,
                ..LpConfig::default()
            };
            let reference = fit_lp_weighted(&stack, &y, w, &lp, &NoInterrupt).unwrap();
            let feats = RowFeatures::new(&x, n, &dims).unwrap();
            let cfg = SvrgConfig {
                p,
                loss,
                tol: 1e-6,
                max_iter: 500,
                ..SvrgConfig::default()
            };
            let r = fit_svrg_weighted(&feats, &y, w, &cfg, &NoInterrupt).unwrap();
            assert_eq!(r.status, SolveStatus::Converged, "{loss:?} p={p}");
            let rel = (r.primal - reference.primal) / reference.primal;
            assert!(rel.abs() < 1e-4, "{loss:?} p={p}: {rel:e}");
            if w.is_none() {
                unweighted = r.primal;
            } else {
                assert!((unweighted - r.primal).abs() > 1e-3 * r.primal, "{loss:?}");
            }
            // A valid certificate on every epoch: D ≤ optimum ≤ P.
            for h in &r.history {
                assert!(h.dual <= reference.primal * (1.0 + 1e-8) + 1e-12);
                assert!(h.primal >= reference.primal * (1.0 - 1e-8) - 1e-12);
            }
            // The norms of the returned weights are the reported kernel norms.
            let mut off = 0;
            for (k, &dk) in dims.iter().enumerate() {
                let nk: f64 = r.feature_weights[off..off + dk]
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt();
                assert!((nk - r.kernel_norms[k]).abs() <= 1e-12 * (1.0 + nk));
                off += dk;
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_fit() {
    let n = 80;
    let (x, dims, y) = problem(n, true);
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let feats = RowFeatures::new(&x32, n, &dims).unwrap();
    let cfg = |seed| SvrgConfig {
        seed,
        max_iter: 5,
        tol: 1e-12,
        ..SvrgConfig::default()
    };
    let a = fit_svrg(&feats, &y, &cfg(1), &NoInterrupt).unwrap();
    let b = fit_svrg(&feats, &y, &cfg(1), &NoInterrupt).unwrap();
    let c = fit_svrg(&feats, &y, &cfg(2), &NoInterrupt).unwrap();
    assert_eq!(a.feature_weights, b.feature_weights);
    assert_ne!(a.feature_weights, c.feature_weights);
}

#[test]
fn bad_settings_are_refused() {
    let (x, dims, y) = problem(10, true);
    let feats = RowFeatures::new(&x, 10, &dims).unwrap();
    let bad = |cfg: SvrgConfig| fit_svrg(&feats, &y, &cfg, &NoInterrupt).unwrap_err();
    assert!(matches!(
        bad(SvrgConfig {
            loss: Loss::Hinge,
            ..SvrgConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
    assert!(matches!(
        bad(SvrgConfig {
            p: 0.5,
            ..SvrgConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
    assert!(RowFeatures::new(&x, 11, &dims).is_err());
}
