use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::{DenseStack, LowRankStack};
use crate::linalg::dot;
use crate::result::SolveStatus;
use crate::solvers::lp::{fit_lp, LpConfig};
use crate::solvers::spicy::{fit_spicy, SpicyConfig};
use crate::solvers::test_util::{factored, problem};

const SMOOTH: [Loss; 3] = [Loss::Logistic, Loss::Squared, Loss::SquaredHinge];

/// `P` of the returned feature weights, computed from the factors directly.
fn primal_of(lr: &LowRankStack, y: &[f64], r: &FitResult, cfg: &ProxNewtonConfig) -> f64 {
    let n = y.len();
    let mut f = vec![r.intercept; n];
    let mut norms = Vec::new();
    let mut off = 0;
    for m in 0..lr.m() {
        let g = lr.factor(m);
        let mut s = 0.0;
        for col in g.chunks_exact(n) {
            let wj = r.feature_weights[off];
            off += 1;
            s += wj * wj;
            f.iter_mut().zip(col).for_each(|(a, x)| *a += wj * x);
        }
        norms.push(s.sqrt());
    }
    assert_eq!(off, r.feature_weights.len());
    cfg.c * cfg.loss.total(y, &f, 0.0) + cfg.penalty.value(&norms)
}

/// SpicyMKL's fit of the same problem on a dense stack, to 1e-9: the independent reference.
fn spicy_on(dense: &DenseStack<'_, f64>, y: &[f64], cfg: &ProxNewtonConfig) -> FitResult {
    let BlockPenalty::Sparse(penalty) = cfg.penalty else {
        panic!("a sparse penalty")
    };
    let spicy = SpicyConfig {
        penalty,
        c: cfg.c,
        loss: cfg.loss,
        tol: 1e-9,
        ..SpicyConfig::default()
    };
    fit_spicy(dense, y, &spicy, &NoInterrupt).unwrap()
}

/// Proximal Newton on the factors and SpicyMKL (an independent algorithm) on their dense
/// products meet at the same optimum, each certified by its own gap, and the reported primal
/// value is that of the returned feature weights.
#[test]
fn prox_newton_meets_spicy_on_the_products() {
    let n = 50;
    for loss in SMOOTH {
        let (g, m, y) = problem(n, loss == Loss::Squared, 3);
        let (lr, products) = factored(&g, m, n, 8);
        let dense = DenseStack::new(&products, m, n).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
            SparsePenalty::ElasticNet { l1_ratio: 0.0 },
        ] {
            for c in [1.0, 10.0] {
                let cfg = ProxNewtonConfig {
                    penalty: penalty.into(),
                    c,
                    loss,
                    tol: 1e-8,
                    ..ProxNewtonConfig::default()
                };
                let ours = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
                let spicy = spicy_on(&dense, &y, &cfg);
                let what = format!("{} {penalty:?} C={c}", loss.name());
                assert_eq!(ours.status, SolveStatus::Converged, "{what}");
                assert!(ours.gap <= 1e-8, "{what}: gap {}", ours.gap);
                assert!(ours.dual <= ours.primal * (1.0 + 1e-12), "{what}");
                let rel = (ours.primal - spicy.primal).abs() / spicy.primal;
                assert!(rel < 2e-8, "{what}: {} vs {}", ours.primal, spicy.primal);
                let p = primal_of(&lr, &y, &ours, &cfg);
                assert!((p - ours.primal).abs() <= 1e-10 * p, "{what}: {p}");
            }
        }
    }
}

/// The hinge-type losses through the smoothing continuation meet SpicyMKL's optimum on the
/// dense products, certified by the loss's own gap (not the smoothed problem's), and the
/// reported primal value is that of the returned feature weights and intercept.
#[test]
fn smoothed_hinge_losses_meet_spicy_on_the_products() {
    let n = 50;
    for loss in [Loss::Hinge, Loss::EpsilonInsensitive { epsilon: 0.1 }] {
        let regression = loss != Loss::Hinge;
        let (g, m, y) = problem(n, regression, 3);
        let (lr, products) = factored(&g, m, n, 8);
        let dense = DenseStack::new(&products, m, n).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            for c in [1.0, 10.0] {
                let cfg = ProxNewtonConfig {
                    penalty: penalty.into(),
                    c,
                    loss,
                    tol: 1e-7,
                    max_iter: 1000,
                };
                let ours = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
                let spicy = spicy_on(&dense, &y, &cfg);
                let what = format!("{} {penalty:?} C={c}", loss.name());
                assert_eq!(ours.status, SolveStatus::Converged, "{what}");
                assert!(ours.gap <= 1e-7, "{what}: gap {}", ours.gap);
                let rel = (ours.primal - spicy.primal).abs() / spicy.primal;
                assert!(rel < 2e-7, "{what}: {} vs {}", ours.primal, spicy.primal);
                let p = primal_of(&lr, &y, &ours, &cfg);
                assert!((p - ours.primal).abs() <= 1e-10 * p, "{what}: {p}");
            }
        }
    }
}

/// ℓp in feature space (Newton on the smooth penalty, the smoothing continuation for the
/// hinge-type losses) meets Kloft's wrapper (`fit_lp`, an independent algorithm) on the dense
/// products, certified by its own gap; the reported primal is that of the returned weights,
/// and the kernel weights are eq. 17's `θ`.
#[test]
fn lp_meets_the_analytic_wrapper_on_the_products() {
    let n = 50;
    let losses = [
        Loss::Hinge,
        Loss::SquaredHinge,
        Loss::Logistic,
        Loss::Squared,
        Loss::EpsilonInsensitive { epsilon: 0.1 },
    ];
    for loss in losses {
        let regression = matches!(loss, Loss::Squared | Loss::EpsilonInsensitive { .. });
        let (g, m, y) = problem(n, regression, 3);
        let (lr, products) = factored(&g, m, n, 8);
        let dense = DenseStack::new(&products, m, n).unwrap();
        for p in [4.0 / 3.0, 2.0, f64::INFINITY] {
            for c in [1.0, 10.0] {
                let cfg = ProxNewtonConfig {
                    penalty: BlockPenalty::Lp { p },
                    c,
                    loss,
                    tol: 1e-8,
                    max_iter: 1000,
                };
                let ours = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
                let lp = LpConfig {
                    p,
                    c,
                    loss,
                    tol: 1e-9,
                    max_iter: 5000,
                    inner_tol: 1e-10,
                    ..LpConfig::default()
                };
                let reference = fit_lp(&dense, &y, &lp, &NoInterrupt).unwrap();
                let what = format!("{} p={p} C={c}", loss.name());
                assert_eq!(
                    ours.status,
                    SolveStatus::Converged,
                    "{what}: gap {}",
                    ours.gap
                );
                assert!(ours.gap <= 1e-8, "{what}: gap {}", ours.gap);
                let rel = (ours.primal - reference.primal).abs() / reference.primal;
                assert!(
                    rel < 2e-8,
                    "{what}: {} vs {}",
                    ours.primal,
                    reference.primal
                );
                let pv = primal_of(&lr, &y, &ours, &cfg);
                assert!((pv - ours.primal).abs() <= 1e-10 * pv, "{what}: {pv}");
                let theta = crate::penalties::theta_update(&ours.kernel_norms, p);
                for (a, b) in ours.kernel_weights.iter().zip(&theta) {
                    assert!((a - b).abs() <= 1e-12, "{what}: {a} vs {b}");
                }
            }
        }
    }
}

/// More kernels than the first working set (45 differently scaled copies): kernels enter
/// when they violate optimality, and the optimum is SpicyMKL's.
#[test]
fn kernels_enter_the_working_set_when_they_violate_optimality() {
    let n = 40;
    let (g, m, y) = problem(n, false, 11);
    let copies = 9;
    let mut big = Vec::with_capacity(copies * g.len());
    for c in 0..copies {
        let s = (0.5 + 0.25 * c as f64) / n as f64;
        big.extend(g.iter().map(|v| s * v));
    }
    let (lr, products) = factored(&big, m * copies, n, 6);
    let dense = DenseStack::new(&products, m * copies, n).unwrap();
    let cfg = ProxNewtonConfig {
        c: 30.0,
        loss: Loss::Logistic,
        tol: 1e-8,
        ..ProxNewtonConfig::default()
    };
    let ours = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
    let spicy = spicy_on(&dense, &y, &cfg);
    assert!(ours.gap <= 1e-8, "gap {}", ours.gap);
    let rel = (ours.primal - spicy.primal).abs() / spicy.primal;
    assert!(rel < 2e-8, "{} vs {}", ours.primal, spicy.primal);
    let active = ours.kernel_norms.iter().filter(|&&s| s > 0.0).count();
    assert!(active < m * copies, "{active} kernels active");
}

/// At the optimum the representer form `A[m]` reproduces the feature weights:
/// `G_mᵀ A[m] = w_m`.
#[test]
fn the_coefficients_reproduce_the_feature_weights() {
    let n = 50;
    let (g, m, y) = problem(n, false, 5);
    let (lr, _) = factored(&g, m, n, 8);
    let cfg = ProxNewtonConfig {
        c: 10.0,
        loss: Loss::Logistic,
        tol: 1e-10,
        ..ProxNewtonConfig::default()
    };
    let r = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
    let outer = r.coef_outer.as_ref().unwrap();
    assert!(r.coef.is_empty());
    let mut off = 0;
    for k in 0..m {
        let a: Vec<f64> = outer.rows.iter().map(|v| outer.scale[k] * v).collect();
        for col in lr.factor(k).chunks_exact(n) {
            let got = dot(col, &a);
            let want = r.feature_weights[off];
            assert!(
                (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
            off += 1;
        }
    }
}

/// A dense stack is refused with the reason.
#[test]
fn refuses_dense_stacks() {
    let n = 20;
    let (g, m, y) = problem(n, false, 1);
    let dense = DenseStack::new(&g, m, n).unwrap();
    let err = fit_prox_newton(&dense, &y, &ProxNewtonConfig::default(), &NoInterrupt);
    assert!(format!("{}", err.unwrap_err()).contains("explicit features"));
}

/// A warm start: from the optimum at one C, the fit at another reaches the cold fit's optimum
/// in fewer steps; from the optimum at the same C it is certified before any step; a start of
/// the wrong width is refused.
#[test]
fn warm_starts_reach_the_cold_optimum_in_fewer_steps() {
    let n = 80;
    let (g, m, y) = problem(n, false, 7);
    let (lr, _) = factored(&g, m, n, 6);
    let at = |c: f64| ProxNewtonConfig {
        c,
        loss: Loss::Logistic,
        tol: 1e-8,
        ..ProxNewtonConfig::default()
    };
    let first = fit_prox_newton(&lr, &y, &at(1.0), &NoInterrupt).unwrap();
    let start = FeatureStart {
        weights: first.feature_weights.clone(),
        intercept: first.intercept,
    };
    let cold = fit_prox_newton(&lr, &y, &at(3.0), &NoInterrupt).unwrap();
    let warm =
        fit_prox_newton_weighted(&lr, &y, None, &at(3.0), Some(&start), &NoInterrupt).unwrap();
    assert_eq!(
        (cold.status, warm.status),
        (SolveStatus::Converged, SolveStatus::Converged)
    );
    let (pc, pw) = (
        primal_of(&lr, &y, &cold, &at(3.0)),
        primal_of(&lr, &y, &warm, &at(3.0)),
    );
    assert!((pc - pw).abs() <= 1e-7 * pc, "{pc} vs {pw}");
    assert!(
        warm.n_iter < cold.n_iter,
        "{} vs {}",
        warm.n_iter,
        cold.n_iter
    );
    let again =
        fit_prox_newton_weighted(&lr, &y, None, &at(1.0), Some(&start), &NoInterrupt).unwrap();
    assert_eq!((again.status, again.n_iter), (SolveStatus::Converged, 0));
    let short = FeatureStart {
        weights: vec![0.0; 3],
        intercept: 0.0,
    };
    let err = fit_prox_newton_weighted(&lr, &y, None, &at(1.0), Some(&short), &NoInterrupt);
    assert!(matches!(err, Err(MkError::Shape(_))), "{err:?}");
}

/// The group penalty of the ids `ids`.
fn group_of(ids: &[usize]) -> BlockPenalty {
    BlockPenalty::parse("group", 0.0, 2.0, Some(ids)).unwrap()
}

/// Group MKL in feature space (Newton steps on the smoothed penalty, certified by the exact
/// dual) meets the `mirror` solver (Nath et al.'s saddle form, an independent algorithm) on the
/// dense products, for the smooth losses and three groupings; the reported primal is that of
/// the returned weights, and the kernel weights are mirror's `θ` convention.
#[test]
fn group_meets_mirror_on_the_products() {
    use crate::penalties::Groups;
    use crate::solvers::mirror::{fit_group, MirrorConfig};
    let n = 50;
    for loss in SMOOTH {
        let (g, m, y) = problem(n, loss == Loss::Squared, 3);
        let (lr, products) = factored(&g, m, n, 8);
        let dense = DenseStack::new(&products, m, n).unwrap();
        for ids in [
            vec![0, 0, 0, 1, 1],
            vec![0, 1, 0, 1, 0],
            vec![0, 1, 2, 3, 4],
        ] {
            for c in [1.0, 10.0] {
                let cfg = ProxNewtonConfig {
                    penalty: group_of(&ids),
                    c,
                    loss,
                    tol: 1e-8,
                    max_iter: 500,
                };
                let ours = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
                let mirror = MirrorConfig {
                    c,
                    loss,
                    tol: 1e-8,
                    max_iter: 5000,
                    ..MirrorConfig::default()
                };
                let groups = Groups::new(&ids).unwrap();
                let reference = fit_group(&dense, &y, &groups, &mirror, &NoInterrupt).unwrap();
                let what = format!("{} {ids:?} C={c}", loss.name());
                assert_eq!(
                    ours.status,
                    SolveStatus::Converged,
                    "{what}: gap {}",
                    ours.gap
                );
                assert!(ours.dual <= ours.primal * (1.0 + 1e-12), "{what}");
                let rel = (ours.primal - reference.primal).abs() / reference.primal;
                assert!(
                    rel < 1e-6,
                    "{what}: {} vs {} (mirror gap {}, {} steps: {})",
                    ours.primal,
                    reference.primal,
                    reference.gap,
                    ours.n_iter,
                    ours.gap
                );
                let pv = primal_of(&lr, &y, &ours, &cfg);
                assert!((pv - ours.primal).abs() <= 1e-10 * pv, "{what}: {pv}");
                let close = ours
                    .kernel_weights
                    .iter()
                    .zip(&reference.kernel_weights)
                    .all(|(a, b)| (a - b).abs() <= 1e-3);
                assert!(
                    close,
                    "{what}: {:?} vs {:?}",
                    ours.kernel_weights, reference.kernel_weights
                );
                eprintln!("{what}: {} steps, gap {:.1e}", ours.n_iter, ours.gap);
            }
        }
    }
}

/// The hinge and ε-insensitive losses through the continuation of both smoothings are
/// certified by the exact gap, at `mirror`'s primal value where `mirror` converges.
#[test]
fn group_with_hinge_losses_is_certified() {
    use crate::penalties::Groups;
    use crate::solvers::mirror::{fit_group, MirrorConfig};
    let n = 50;
    for loss in [Loss::Hinge, Loss::EpsilonInsensitive { epsilon: 0.1 }] {
        let (g, m, y) = problem(n, loss != Loss::Hinge, 3);
        let (lr, products) = factored(&g, m, n, 8);
        let dense = DenseStack::new(&products, m, n).unwrap();
        for ids in [vec![0, 0, 0, 1, 1], vec![0, 1, 2, 3, 4]] {
            let cfg = ProxNewtonConfig {
                penalty: group_of(&ids),
                c: 1.0,
                loss,
                tol: 1e-6,
                max_iter: 1000,
            };
            let ours = fit_prox_newton(&lr, &y, &cfg, &NoInterrupt).unwrap();
            let what = format!("{} {ids:?}", loss.name());
            assert_eq!(
                ours.status,
                SolveStatus::Converged,
                "{what}: gap {}",
                ours.gap
            );
            assert!(ours.gap <= 1e-6, "{what}");
            let pv = primal_of(&lr, &y, &ours, &cfg);
            assert!((pv - ours.primal).abs() <= 1e-10 * pv, "{what}: {pv}");
            let mirror = MirrorConfig {
                c: 1.0,
                loss,
                tol: 1e-6,
                max_iter: 5000,
                ..MirrorConfig::default()
            };
            let groups = Groups::new(&ids).unwrap();
            let reference = fit_group(&dense, &y, &groups, &mirror, &NoInterrupt).unwrap();
            // Each primal is above the other's dual.
            assert!(ours.primal >= reference.dual * (1.0 - 1e-12), "{what}");
            assert!(reference.primal >= ours.dual * (1.0 - 1e-12), "{what}");
            eprintln!(
                "{what}: {} steps, gap {:.1e}; mirror {} {:.1e}",
                ours.n_iter, ours.gap, reference.primal, reference.gap
            );
        }
    }
}
