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

/// Dense rows `(n, Σ dims)` with about 70 % zeros, and the same rows as CSR blocks.
fn dense_and_sparse(
    n: usize,
    dims: &[usize],
    seed: u64,
) -> (Vec<f64>, Vec<crate::kernels::CsrMatrix>) {
    let mut rng = crate::solvers::test_util::Lcg(seed);
    let width: usize = dims.iter().sum();
    let data: Vec<f64> = (0..n * width)
        .map(|_| {
            let keep = rng.next() < 0.3;
            let v = rng.next() - 0.5;
            if keep {
                v
            } else {
                0.0
            }
        })
        .collect();
    let mut blocks = Vec::new();
    let mut j0 = 0;
    for &d in dims {
        let (mut indptr, mut indices, mut vals) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for k in 0..d {
                let v = data[i * width + j0 + k];
                if v != 0.0 {
                    indices.push(k);
                    vals.push(v);
                }
            }
            indptr.push(indices.len());
        }
        blocks.push(crate::kernels::CsrMatrix::new(d, indptr, indices, vals).unwrap());
        j0 += d;
    }
    (data, blocks)
}

/// Every reduction of the chunks on sparse rows equals the dense rows' (several chunks, a
/// point and a step on a few columns): the predictions, `Gδ`, block gradients, the working
/// set's Hessian, the squares and the certificate's sums.
#[test]
fn sparse_chunks_reduce_as_dense_ones() {
    use crate::kernels::{RowFeatures, SparseRowFeatures};
    use chunk::Chunks;
    let (n, dims) = (2 * features::CHUNK + 300, [5, 1, 7, 3]);
    let (data, blocks) = dense_and_sparse(n, &dims, 11);
    let dense = RowFeatures::new(&data, n, &dims).unwrap();
    let sparse = SparseRowFeatures::new(&blocks).unwrap();
    let mut rng = crate::solvers::test_util::Lcg(5);
    let y: Vec<f64> = (0..n)
        .map(|_| if rng.next() < 0.4 { 1.0 } else { -1.0 })
        .collect();
    let c: Vec<f64> = (0..n).map(|_| 0.5 + rng.next()).collect();
    let (a, b) = (Chunks::new(&dense, &y, &c), Chunks::new(&sparse, &y, &c));
    let cols = vec![0, 3, 5, 7, 12, 15];
    let updates = [
        Update::Point {
            cols: cols.clone(),
            vals: vec![0.5, -1.0, 2.0, 0.0, 0.3, -0.7],
        },
        Update::Direction {
            cols: cols.clone(),
            delta: vec![0.1, 0.2, -0.3, 0.4, 0.0, 0.6],
        },
    ];
    for u in &updates {
        a.update(u).unwrap();
        b.update(u).unwrap();
    }
    let env = crate::losses::Envelope::from(Loss::Logistic);
    let dual = DualPoint {
        env,
        b: 0.1,
        shift: Shift::Mean(0.0),
    };
    let ops = [
        Op::Loss {
            env,
            bs: vec![0.0, 0.2],
            step: Some((0.5, 0.1)),
        },
        Op::Slope {
            env,
            b: 0.1,
            t: 0.5,
            db: 0.2,
        },
        Op::Centre { env, b: 0.1 },
        Op::Gradient { dual },
        Op::Conjugate {
            dual,
            conj: env,
            ts: vec![0.5, 1.0],
        },
        Op::Hessian {
            env,
            b: 0.1,
            cols: cols.clone(),
            zone: false,
        },
        Op::Squares {
            weight: Curvature::Second { env, b: 0.1 },
        },
        Op::HessianProduct {
            env,
            b: 0.1,
            cols: cols.clone(),
            v: vec![0.3, 0.0, -1.0, 0.5, 2.0, -0.2, 0.7],
        },
    ];
    for op in &ops {
        let (ra, rb) = (
            a.reduce(op, &NoInterrupt).unwrap(),
            b.reduce(op, &NoInterrupt).unwrap(),
        );
        assert_eq!(ra.len(), rb.len(), "{op:?}");
        for (k, (u, v)) in ra.iter().zip(&rb).enumerate() {
            assert!(u.is_finite(), "{op:?} [{k}]");
            assert!(
                (u - v).abs() <= 1e-12 * (1.0 + u.abs()),
                "{op:?} [{k}]: {u} vs {v}"
            );
        }
    }
}

/// A fit on sparse rows reaches the dense rows' optimum (same steps, up to rounding).
#[test]
fn prox_newton_on_sparse_rows_fits_as_on_dense_rows() {
    use crate::kernels::{RowFeatures, SparseRowFeatures};
    let (n, dims) = (300, [4, 6, 3, 5]);
    let (data, blocks) = dense_and_sparse(n, &dims, 3);
    let dense = RowFeatures::new(&data, n, &dims).unwrap();
    let sparse = SparseRowFeatures::new(&blocks).unwrap();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            if data[i * 18] + data[i * 18 + 5] > 0.0 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let cfg = ProxNewtonConfig {
        loss: Loss::Logistic,
        c: 5.0,
        tol: 1e-10,
        ..ProxNewtonConfig::default()
    };
    let a = fit_prox_newton_rows(&dense, &y, None, &cfg, None, &NoInterrupt).unwrap();
    let b = fit_prox_newton_rows(&sparse, &y, None, &cfg, None, &NoInterrupt).unwrap();
    assert!((a.primal - b.primal).abs() <= 1e-10 * a.primal.abs());
    assert!((a.intercept - b.intercept).abs() <= 1e-8);
    for (u, v) in a.feature_weights.iter().zip(&b.feature_weights) {
        assert!((u - v).abs() <= 1e-8, "{u} vs {v}");
    }
}

/// A Hessian product over the rows is the formed Hessian's product, on dense and sparse rows,
/// and its flat encoding (a cluster's) decodes to itself.
#[test]
fn hessian_products_are_the_formed_hessians() {
    use crate::kernels::{RowFeatures, SparseRowFeatures};
    use chunk::Chunks;
    let (n, dims) = (features::CHUNK + 500, [3, 4, 2]);
    let (data, blocks) = dense_and_sparse(n, &dims, 7);
    let dense = RowFeatures::new(&data, n, &dims).unwrap();
    let sparse = SparseRowFeatures::new(&blocks).unwrap();
    let y: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let c = vec![0.7; n];
    let env = crate::losses::Envelope::from(Loss::Logistic);
    let (cols, v) = (vec![1, 2, 4, 8], vec![0.5, -1.0, 0.0, 2.0, 0.3]);
    let point = Update::Point {
        cols: vec![0, 4],
        vals: vec![1.0, -0.5],
    };
    let k = cols.len() + 1;
    let formed = Op::Hessian {
        env,
        b: 0.2,
        cols: cols.clone(),
        zone: false,
    };
    let product = Op::HessianProduct {
        env,
        b: 0.2,
        cols,
        v: v.clone(),
    };
    assert_eq!(Op::decode(&product.encode()).unwrap(), product);
    let rows: [&dyn RowRead; 2] = [&dense, &sparse];
    for x in rows {
        let chunks = Chunks::new(x, &y, &c);
        chunks.update(&point).unwrap();
        let h = chunks.reduce(&formed, &NoInterrupt).unwrap();
        let hv = chunks.reduce(&product, &NoInterrupt).unwrap();
        for (i, got) in hv.iter().enumerate() {
            let want: f64 = (0..k).map(|j| h[i + j * k] * v[j]).sum();
            assert!(
                (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}

/// Steps by Hessian products (every working set, the threshold lowered to 0) reach the formed
/// Hessian's optimum on sparse rows, for the smooth losses and the smoothed hinge (its
/// damping; certified to 1e-6, as the formed path is at this size), the lasso and the elastic
/// net: both certified, their objectives within the tolerance.
#[test]
fn hessian_products_fit_as_the_formed_hessian() {
    use crate::kernels::SparseRowFeatures;
    let (n, dims) = (400, [5, 3, 6, 4, 2, 5]);
    let (data, blocks) = dense_and_sparse(n, &dims, 9);
    let sparse = SparseRowFeatures::new(&blocks).unwrap();
    let width: usize = dims.iter().sum();
    let signal =
        |i: usize| data[i * width] - 2.0 * data[i * width + 9] + 0.5 * data[i * width + 20];
    for loss in [
        Loss::Logistic,
        Loss::Squared,
        Loss::SquaredHinge,
        Loss::Hinge,
    ] {
        let y: Vec<f64> = (0..n)
            .map(|i| match loss {
                Loss::Squared => signal(i) + 0.3,
                _ if signal(i) > 0.0 => 1.0,
                _ => -1.0,
            })
            .collect();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            let cfg = ProxNewtonConfig {
                penalty: penalty.into(),
                loss,
                c: 2.0,
                tol: if loss == Loss::Hinge { 1e-6 } else { 1e-9 },
                ..ProxNewtonConfig::default()
            };
            let cost = costs(cfg.c, None, n).unwrap();
            let fit = |from| {
                let rows = Chunks::new(&sparse, &y, &cost);
                fit_on(&rows, &cfg, None, &NoInterrupt, from).unwrap()
            };
            let (formed, products) = (fit(usize::MAX), fit(0));
            let what = format!("{} {penalty:?}", loss.name());
            for r in [&formed, &products] {
                assert_eq!(r.status, SolveStatus::Converged, "{what}");
                assert!(r.gap <= cfg.tol, "{what}: gap {}", r.gap);
            }
            let rel = (formed.primal - products.primal).abs() / formed.primal;
            assert!(
                rel <= cfg.tol.max(1e-8),
                "{what}: {} vs {}",
                formed.primal,
                products.primal
            );
        }
    }
}
