use super::start::first_points;
use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::DenseStack;
use crate::linalg::{solve_with_intercept, Cholesky, SpdFactor};
use crate::solvers::test_util::problem;

fn quad(k: &[f64], n: usize, v: &[f64]) -> f64 {
    (0..n)
        .map(|i| v[i] * (0..n).map(|j| k[i * n + j] * v[j]).sum::<f64>())
        .sum()
}

fn matvec(k: &[f64], n: usize, v: &[f64]) -> Vec<f64> {
    (0..n)
        .map(|i| (0..n).map(|j| k[i * n + j] * v[j]).sum())
        .collect()
}

/// The primal recomputed from the returned coefficients, independently of the solver.
fn primal(g: &[f64], m: usize, n: usize, y: &[f64], r: &FitResult, cfg: &SpicyConfig) -> f64 {
    let mut f = vec![r.intercept; n];
    let mut norms = vec![0.0; m];
    for k in 0..m {
        let kk = &g[k * n * n..(k + 1) * n * n];
        let a = &r.coef[k * n..(k + 1) * n];
        for (fi, v) in f.iter_mut().zip(matvec(kk, n, a)) {
            *fi += v;
        }
        norms[k] = quad(kk, n, a).max(0.0).sqrt();
    }
    let data: f64 = y.iter().zip(&f).map(|(&a, &b)| cfg.loss.value(a, b)).sum();
    cfg.c * data + cfg.penalty.value(&norms)
}

fn all_losses() -> Vec<Loss> {
    vec![
        Loss::Squared,
        Loss::Logistic,
        Loss::Hinge,
        Loss::SquaredHinge,
        Loss::EpsilonInsensitive { epsilon: 0.1 },
    ]
}

/// l1 with one kernel and the squared loss is kernel ridge with a norm penalty: the solution is
/// the ridge solution (K + μ/C I) α = y − b1, Σα = 0, at the μ with μ ‖α_μ‖_K = 1 (the
/// subgradient of ‖α‖_K is Kα/‖α‖_K). Found here by bisection in log μ.
#[test]
fn single_kernel_squared_is_norm_penalised_ridge() {
    let (g, _, y) = problem(30, true, 7);
    let n = 30;
    let k = g[..n * n].to_vec();
    let c = 3.0;
    let ridge = |mu: f64| -> (Vec<f64>, f64, f64) {
        let mut a = k.clone();
        for i in 0..n {
            a[i * n + i] += mu / c;
        }
        let chol = SpdFactor::Dense(Cholesky::new(&a, n).unwrap());
        let (alpha, b) = solve_with_intercept(&chol, &y);
        let s = quad(&k, n, &alpha).sqrt();
        (alpha, b, s)
    };
    let (mut lo, mut hi) = (-12.0f64, 12.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        let mu = 10f64.powf(mid);
        if mu * ridge(mu).2 > 1.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let mu = 10f64.powf(0.5 * (lo + hi));
    let (alpha, b, s) = ridge(mu);
    assert!((mu * s - 1.0).abs() < 1e-8, "no non-zero solution in range");
    let fk = matvec(&k, n, &alpha);
    let p_ref: f64 = c * y
        .iter()
        .zip(&fk)
        .map(|(yi, fi)| 0.5 * (yi - fi - b).powi(2))
        .sum::<f64>()
        + s;

    let stack = DenseStack::new(&k, 1, n).unwrap();
    let cfg = SpicyConfig {
        c,
        loss: Loss::Squared,
        tol: 1e-10,
        ..SpicyConfig::default()
    };
    let r = fit_spicy(&stack, &y, &cfg, &NoInterrupt).unwrap();
    assert_eq!(r.status, SolveStatus::Converged);
    assert!(
        (r.primal - p_ref).abs() <= 1e-8 * p_ref,
        "{} vs {p_ref}",
        r.primal
    );
    for (a, e) in r.coef.iter().zip(&alpha) {
        assert!((a - e).abs() < 1e-5 * (1.0 + e.abs()), "{a} vs {e}");
    }
    assert!((r.kernel_weights[0] - 1.0).abs() < 1e-15);
}

/// Every loss and both penalties: a valid, tight certificate, and a primal that an independent
/// recomputation from `coef` and `intercept` reproduces.
#[test]
fn certificate_is_valid_for_every_loss_and_penalty() {
    let n = 40;
    for loss in all_losses() {
        let regression = !loss.is_classification();
        let (g, m, y) = problem(n, regression, 11);
        let stack = DenseStack::new(&g, m, n).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            let cfg = SpicyConfig {
                penalty,
                c: 2.0,
                loss,
                tol: 1e-7,
                ..SpicyConfig::default()
            };
            let r = fit_spicy(&stack, &y, &cfg, &NoInterrupt).unwrap();
            let msg = format!("{loss:?} {penalty:?}: {:?} gap {}", r.status, r.gap);
            assert_eq!(r.status, SolveStatus::Converged, "{msg}");
            assert!(r.gap >= -1e-12 && r.gap <= cfg.tol, "{msg}");
            assert!(r.primal >= r.dual - 1e-12 * r.primal.abs(), "{msg}");
            let p = primal(&g, m, n, &y, &r, &cfg);
            assert!(
                (p - r.primal).abs() <= 1e-10 * p.abs(),
                "{msg}: {p} vs {}",
                r.primal
            );
            let wsum: f64 = r.kernel_weights.iter().sum();
            assert!((wsum - 1.0).abs() < 1e-12, "{msg}");
            assert!(!r.history.is_empty());
        }
    }
}

/// KKT of l1 for the smooth losses: with `ρ̃ = −C ℓ'(y, f)`, `Σρ̃ = 0`, `A[m] = ‖f_m‖ ρ̃` on
/// the active kernels and `‖ρ̃‖_{K_m} ≤ 1` on the others.
#[test]
fn l1_kkt_for_smooth_losses() {
    let n = 40;
    for loss in [Loss::Squared, Loss::Logistic] {
        let (g, m, y) = problem(n, !loss.is_classification(), 5);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let cfg = SpicyConfig {
            c: 2.0,
            loss,
            tol: 1e-10,
            ..SpicyConfig::default()
        };
        let r = fit_spicy(&stack, &y, &cfg, &NoInterrupt).unwrap();
        assert_eq!(r.status, SolveStatus::Converged);
        let mut f = vec![r.intercept; n];
        for k in 0..m {
            let v = matvec(
                &g[k * n * n..(k + 1) * n * n],
                n,
                &r.coef[k * n..(k + 1) * n],
            );
            f.iter_mut().zip(v).for_each(|(a, b)| *a += b);
        }
        let rho: Vec<f64> = y
            .iter()
            .zip(&f)
            .map(|(&yi, &fi)| -cfg.c * loss.deriv(yi, fi))
            .collect();
        let scale = rho.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(rho.iter().sum::<f64>().abs() < 1e-6 * scale * n as f64);
        let mut active = 0;
        for k in 0..m {
            let s = r.kernel_norms[k];
            let nr = quad(&g[k * n * n..(k + 1) * n * n], n, &rho).sqrt();
            if s > 0.0 {
                active += 1;
                assert!((nr - 1.0).abs() < 1e-4, "{loss:?} kernel {k}: ‖ρ‖ = {nr}");
                for (a, ri) in r.coef[k * n..(k + 1) * n].iter().zip(&rho) {
                    assert!((a - s * ri).abs() < 1e-4 * (1.0 + s * scale));
                }
            } else {
                assert!(nr <= 1.0 + 1e-6, "{loss:?} inactive kernel {k}: ‖ρ‖ = {nr}");
            }
        }
        assert!(active >= 1 && active < m, "{loss:?}: {active} active");
    }
}

#[test]
fn elastic_net_with_ratio_one_is_l1() {
    let n = 30;
    let (g, m, y) = problem(n, false, 3);
    let stack = DenseStack::new(&g, m, n).unwrap();
    let base = SpicyConfig {
        c: 1.5,
        loss: Loss::Logistic,
        tol: 1e-9,
        ..SpicyConfig::default()
    };
    let l1 = fit_spicy(&stack, &y, &base, &NoInterrupt).unwrap();
    let en = fit_spicy(
        &stack,
        &y,
        &SpicyConfig {
            penalty: SparsePenalty::ElasticNet { l1_ratio: 1.0 },
            ..base
        },
        &NoInterrupt,
    )
    .unwrap();
    assert!((l1.primal - en.primal).abs() < 1e-12 * l1.primal);
}

#[test]
fn invalid_settings_are_rejected() {
    let n = 10;
    let (g, m, y) = problem(n, false, 1);
    let stack = DenseStack::new(&g, m, n).unwrap();
    for cfg in [
        SpicyConfig {
            c: 0.0,
            ..SpicyConfig::default()
        },
        SpicyConfig {
            penalty: SparsePenalty::ElasticNet { l1_ratio: 1.5 },
            ..SpicyConfig::default()
        },
        SpicyConfig {
            gamma_factor: 0.5,
            ..SpicyConfig::default()
        },
    ] {
        assert!(matches!(
            fit_spicy(&stack, &y, &cfg, &NoInterrupt),
            Err(MkError::InvalidConfig { .. })
        ));
    }
    let bad_y = vec![0.5; n];
    assert!(fit_spicy(&stack, &bad_y, &SpicyConfig::default(), &NoInterrupt).is_err());
}

/// A working set smaller than the active set must grow until it holds every active kernel:
/// the same optimum as the fit over all kernels, with a certificate for the whole problem.
#[test]
fn working_set_reaches_the_full_optimum() {
    let n = 40;
    let mut grew = false;
    for loss in all_losses() {
        let (g, m, y) = problem(n, !loss.is_classification(), 13);
        let stack = DenseStack::new(&g, m, n).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            let all = SpicyConfig {
                penalty,
                c: 2.0,
                loss,
                tol: 1e-8,
                ..SpicyConfig::default()
            };
            let full = fit_spicy(&stack, &y, &all, &NoInterrupt).unwrap();
            let ws = fit_spicy(
                &stack,
                &y,
                &SpicyConfig {
                    working_set: Some(1),
                    ..all
                },
                &NoInterrupt,
            )
            .unwrap();
            let msg = format!("{loss:?} {penalty:?}: {:?} gap {}", ws.status, ws.gap);
            assert_eq!(ws.status, SolveStatus::Converged, "{msg}");
            assert!(ws.gap >= -1e-12 && ws.gap <= all.tol, "{msg}");
            let p = primal(&g, m, n, &y, &ws, &all);
            assert!((p - ws.primal).abs() <= 1e-10 * p.abs(), "{msg}");
            assert!(
                (ws.primal - full.primal).abs() <= 2.0 * all.tol * full.primal,
                "{msg}: {} vs {}",
                ws.primal,
                full.primal
            );
            grew |= ws.kernel_norms.iter().filter(|&&s| s > 0.0).count() > 1;
        }
    }
    assert!(grew, "no case needed more than one kernel");
}

/// The working set of points (hinge-type losses) must reach the optimum of the fit on all
/// points, with a certificate of the whole problem and the coefficients of every point in
/// place; at the larger C it starts from a proper subset of the points.
#[test]
fn point_working_set_reaches_the_full_optimum() {
    let n = 120;
    let losses = [
        Loss::Hinge,
        Loss::SquaredHinge,
        Loss::EpsilonInsensitive { epsilon: 0.2 },
    ];
    for loss in losses {
        let (g, m, y) = problem(n, !loss.is_classification(), 21);
        let stack = DenseStack::new(&g, m, n).unwrap();
        for (c, penalty) in [
            (0.5, SparsePenalty::L1),
            (20.0, SparsePenalty::L1),
            (20.0, SparsePenalty::ElasticNet { l1_ratio: 0.5 }),
        ] {
            let all = SpicyConfig {
                penalty,
                c,
                loss,
                tol: 1e-6,
                point_working_set: false,
                ..SpicyConfig::default()
            };
            let ws_cfg = SpicyConfig {
                point_working_set: true,
                ..all
            };
            if loss == Loss::Hinge && c == 20.0 {
                let kernels: Vec<usize> = (0..m).collect();
                let cu = vec![c; n];
                let first = first_points(&stack, &y, &cu, &ws_cfg, &kernels, &NoInterrupt).unwrap();
                let size = first.map_or(n, |p| p.indices().len());
                assert!(size < n / 2, "{size} of {n} points");
            }
            let full = fit(&stack, &y, &all, 0, &NoInterrupt).unwrap();
            let ws = fit(&stack, &y, &ws_cfg, 0, &NoInterrupt).unwrap();
            let msg = format!("{loss:?} {penalty:?} C={c}: {:?} gap {}", ws.status, ws.gap);
            assert_eq!(ws.status, SolveStatus::Converged, "{msg}");
            assert!(ws.gap >= -1e-12 && ws.gap <= all.tol, "{msg}");
            let p = primal(&g, m, n, &y, &ws, &all);
            assert!(
                (p - ws.primal).abs() <= 1e-9 * p.abs(),
                "{msg}: {p} vs {}",
                ws.primal
            );
            assert!(ws.dual <= full.primal * (1.0 + 1e-12), "{msg}");
            assert!(full.dual <= ws.primal * (1.0 + 1e-12), "{msg}");
        }
    }
}

/// A warm start from the solution at another C reaches the same certified optimum as a cold
/// start, in fewer outer iterations over all cases; from the optimum at the same C it stops at
/// the first certificate. With a kernel working set (2 of 5 kernels) and a point working set.
#[test]
fn warm_start_reaches_the_cold_optimum() {
    let n = 60;
    let (mut warm_iters, mut cold_iters) = (0, 0);
    for loss in all_losses() {
        let (g, m, y) = problem(n, !loss.is_classification(), 33);
        let stack = DenseStack::new(&g, m, n).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            for (c1, c2, ws) in [(1.0, 2.0, None), (10.0, 5.0, Some(2))] {
                let cfg1 = SpicyConfig {
                    penalty,
                    c: c1,
                    loss,
                    tol: 1e-6,
                    working_set: ws,
                    ..SpicyConfig::default()
                };
                let cfg2 = SpicyConfig { c: c2, ..cfg1 };
                let first = fit_from(&stack, &y, None, &cfg1, None, 0, &NoInterrupt).unwrap();
                let start = SpicyStart {
                    coef: first.coef.clone(),
                    intercept: first.intercept,
                    dual: None,
                };
                let cold = fit_from(&stack, &y, None, &cfg2, None, 0, &NoInterrupt).unwrap();
                let warm =
                    fit_from(&stack, &y, None, &cfg2, Some(&start), 0, &NoInterrupt).unwrap();
                let msg = format!("{loss:?} {penalty:?} C {c1} -> {c2}: {warm:?}");
                assert_eq!(warm.status, SolveStatus::Converged, "{msg}");
                assert!(warm.gap >= -1e-12 && warm.gap <= cfg2.tol, "{msg}");
                let p = primal(&g, m, n, &y, &warm, &cfg2);
                assert!((p - warm.primal).abs() <= 1e-9 * p.abs(), "{msg}");
                // Both certified: each one's dual bounds the other's primal.
                assert!(warm.dual <= cold.primal * (1.0 + 1e-12), "{msg}");
                assert!(cold.dual <= warm.primal * (1.0 + 1e-12), "{msg}");
                warm_iters += warm.n_iter;
                cold_iters += cold.n_iter;

                // From the optimum (to 1e-10) at the same C: certified at the start.
                let exact_cfg = SpicyConfig { tol: 1e-10, ..cfg2 };
                let exact = fit_from(&stack, &y, None, &exact_cfg, Some(&start), 0, &NoInterrupt);
                let exact = exact.unwrap();
                let again = SpicyStart {
                    coef: exact.coef.clone(),
                    intercept: exact.intercept,
                    dual: None,
                };
                // The start's dual is recovered from A (Warm::parallel_dual): to ~2e-6 here.
                let loose = SpicyConfig { tol: 1e-5, ..cfg2 };
                let same =
                    fit_from(&stack, &y, None, &loose, Some(&again), 0, &NoInterrupt).unwrap();
                assert_eq!(same.status, SolveStatus::Converged, "{msg}");
                assert_eq!(same.n_iter, 1, "{msg}: restart {:?}", same.history);
                assert!(same.primal <= exact.primal * (1.0 + 1e-12), "{msg}");
            }
        }
    }
    assert!(
        warm_iters < cold_iters,
        "warm {warm_iters} vs cold {cold_iters} outer iterations"
    );
}

#[test]
fn warm_start_is_validated() {
    let n = 20;
    let (g, m, y) = problem(n, false, 3);
    let stack = DenseStack::new(&g, m, n).unwrap();
    let cfg = SpicyConfig::default();
    let bad = [
        SpicyStart {
            coef: vec![0.0; m * n - 1],
            intercept: 0.0,
            dual: None,
        },
        SpicyStart {
            coef: vec![0.0; m * n],
            intercept: f64::NAN,
            dual: None,
        },
        SpicyStart {
            coef: vec![0.0; m * n],
            intercept: 0.0,
            dual: Some(vec![0.0; n + 1]),
        },
    ];
    for start in &bad {
        assert!(fit_spicy_from(&stack, &y, &cfg, Some(start), &NoInterrupt).is_err());
    }
    // A = 0 is the cold start's point: a valid start.
    let zero = SpicyStart {
        coef: vec![0.0; m * n],
        intercept: 0.0,
        dual: None,
    };
    let r = fit_spicy_from(&stack, &y, &cfg, Some(&zero), &NoInterrupt).unwrap();
    assert_eq!(r.status, SolveStatus::Converged);
}

/// SpicyMKL on a stack of factors (total rank 20 < n = 60: every Newton system through the
/// capacitance matrix) reaches the optimum of the same kernels stored dense, for the smooth
/// losses and both sparse penalties.
#[test]
fn low_rank_newton_systems_reach_the_dense_optimum() {
    let n = 60;
    let (g, m, yr) = problem(n, true, 9);
    let (_, _, yc) = problem(n, false, 9);
    let (lr, products) = crate::solvers::test_util::factored(&g, m, n, 4);
    let dense = DenseStack::new(&products, m, n).unwrap();
    for (loss, y) in [(Loss::Squared, &yr), (Loss::Logistic, &yc)] {
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            let cfg = SpicyConfig {
                penalty,
                c: 5.0,
                loss,
                tol: 1e-9,
                ..SpicyConfig::default()
            };
            let a = fit_spicy(&lr, y, &cfg, &NoInterrupt).unwrap();
            let b = fit_spicy(&dense, y, &cfg, &NoInterrupt).unwrap();
            let msg = format!("{loss:?} {penalty:?}: {} vs {}", a.primal, b.primal);
            assert_eq!(a.status, SolveStatus::Converged, "{msg}");
            assert_eq!(b.status, SolveStatus::Converged, "{msg}");
            assert!((a.primal - b.primal).abs() <= 1e-7 * b.primal, "{msg}");
        }
    }
}

/// Integer sample weights equal duplicated rows for every loss and both penalties, on the
/// whole problem and through the working sets of points (from 0 points on, hinge-type
/// losses) and of kernels: the same primal and kernel weights; the unweighted fit differs.
#[test]
fn integer_weights_equal_duplicated_rows() {
    let n = 30;
    let reps: Vec<usize> = (0..n).map(|i| 1 + i % 3).collect();
    let w: Vec<f64> = reps.iter().map(|&r| r as f64).collect();
    for loss in all_losses() {
        let (g, m, y) = problem(n, !loss.is_classification(), 21);
        let (dup, rows) = crate::solvers::test_util::duplicated(&g, m, n, &reps);
        let yd: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
        let stack = DenseStack::new(&g, m, n).unwrap();
        let copies = DenseStack::new(&dup, m, rows.len()).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            for (working_set, min_points) in [(None, MIN_POINTS), (Some(2), 0)] {
                let cfg = SpicyConfig {
                    penalty,
                    c: 0.5,
                    loss,
                    tol: 1e-9,
                    working_set,
                    ..SpicyConfig::default()
                };
                let what = format!("{loss:?} {penalty:?} {working_set:?}");
                let a =
                    fit_from(&stack, &y, Some(&w), &cfg, None, min_points, &NoInterrupt).unwrap();
                let b = fit_from(&copies, &yd, None, &cfg, None, min_points, &NoInterrupt).unwrap();
                // Within a gap of 1e-9 the weights are pinned to about its square root.
                crate::solvers::test_util::assert_same_fit(&a, &b, 1e-7, 1e-3, &what);
                let plain = fit_spicy(&stack, &y, &cfg, &NoInterrupt).unwrap();
                assert!(
                    (plain.primal - a.primal).abs() > 1e-4 * a.primal,
                    "{what}: the weights are not read"
                );
            }
        }
    }
}

/// Real-valued weights: SpicyMKL and the SVM wrapper (an independent algorithm) reach the
/// same weighted optimum, and each dual bounds the other's primal.
#[test]
fn weights_meet_the_weighted_wrapper() {
    use crate::solvers::wrapper::{fit_wrapper_weighted, WrapperConfig};
    let n = 40;
    let w: Vec<f64> = (0..n)
        .map(|i| 0.3 + (i as f64 * 0.7).sin().abs() * 2.5)
        .collect();
    for loss in [Loss::Hinge, Loss::SquaredHinge, Loss::Logistic] {
        let (g, m, y) = problem(n, false, 22);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let cfg = SpicyConfig {
            c: 3.0,
            loss,
            tol: 1e-9,
            ..SpicyConfig::default()
        };
        let wcfg = WrapperConfig {
            c: 3.0,
            loss,
            tol: 1e-9,
            ..WrapperConfig::default()
        };
        let a = fit_spicy_weighted(&stack, &y, Some(&w), &cfg, None, &NoInterrupt).unwrap();
        let b = fit_wrapper_weighted(&stack, &y, Some(&w), &wcfg, &NoInterrupt).unwrap();
        let what = format!("{loss:?}");
        crate::solvers::test_util::assert_same_fit(&a, &b, 1e-7, 1e-3, &what);
        assert!(a.dual <= b.primal * (1.0 + 1e-12), "{what}");
        assert!(b.dual <= a.primal * (1.0 + 1e-12), "{what}");
    }
}
