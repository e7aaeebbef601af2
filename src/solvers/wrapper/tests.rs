use super::certificate::{solve_point, Point};
use super::newton::{free_points, s_hessian, svm_hessian};
use super::start::{scale_search, Sample, SAMPLE_MIN};
use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::DenseStack;
use crate::linalg::dot;
use crate::penalties::duals::{best_dual, best_on_segment, dual_value, DualPoint};
use crate::penalties::WeightPenalty;
use crate::result::SolveStatus;
use crate::solvers::single::bordered_many;
use crate::solvers::spicy::{fit_spicy, SpicyConfig};
use crate::solvers::test_util::{problem, Formed, Lcg};

fn losses() -> [Loss; 3] {
    [
        Loss::Hinge,
        Loss::SquaredHinge,
        Loss::EpsilonInsensitive { epsilon: 0.1 },
    ]
}

/// Fits `cfg` by the wrapper and by SpicyMKL (an independent algorithm) to `spicy_tol`, and
/// asserts that the wrapper converged within `cfg.tol` to SpicyMKL's primal value within `rel`.
fn meets_spicy(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &WrapperConfig,
    spicy_tol: f64,
    rel: f64,
    what: &str,
) -> FitResult {
    meets_spicy_from(stack, y, cfg, MIN_POINTS, (spicy_tol, rel), what)
}

/// [`meets_spicy`] with a working set of points from `min_points` points on.
fn meets_spicy_from(
    stack: &dyn KernelStack,
    y: &[f64],
    cfg: &WrapperConfig,
    min_points: usize,
    (spicy_tol, rel): (f64, f64),
    what: &str,
) -> FitResult {
    let ours = fit_from(stack, y, None, cfg, min_points, false, &NoInterrupt).unwrap();
    let spicy = fit_spicy(
        stack,
        y,
        &SpicyConfig {
            penalty: cfg.penalty,
            c: cfg.c,
            loss: cfg.loss,
            tol: spicy_tol,
            ..SpicyConfig::default()
        },
        &NoInterrupt,
    )
    .unwrap();
    assert_eq!(ours.status, SolveStatus::Converged, "{what}");
    assert!(ours.gap <= cfg.tol, "{what}: gap {}", ours.gap);
    let r = (ours.primal - spicy.primal).abs() / spicy.primal;
    assert!(r < rel, "{what}: {} vs {}", ours.primal, spicy.primal);
    ours
}

/// The reported primal value is that of the returned model (`coef`, `intercept`, norms).
fn assert_primal_of_model(
    stack: &dyn KernelStack,
    y: &[f64],
    ours: &FitResult,
    cfg: &WrapperConfig,
    what: &str,
) {
    let (n, m) = (y.len(), stack.m());
    let mut f = vec![ours.intercept; n];
    let mut kv = vec![0.0; n];
    for k in 0..m {
        stack.matvec(k, &ours.coef[k * n..(k + 1) * n], &mut kv);
        f.iter_mut().zip(&kv).for_each(|(a, b)| *a += b);
    }
    let (r1, r2) = cfg.penalty.weights();
    let pen: f64 = ours
        .kernel_norms
        .iter()
        .map(|s| r1 * s + 0.5 * r2 * s * s)
        .sum();
    let p = cfg.c * cfg.loss.total(y, &f, 0.0) + pen;
    assert!(
        (p - ours.primal).abs() <= 1e-9 * p,
        "{what}: {p} vs {}",
        ours.primal
    );
}

/// The wrapper and SpicyMKL (an independent algorithm) meet at the same optimum, each
/// certified by its own gap, for every hinge-type loss and both penalties.
#[test]
fn wrapper_meets_spicy() {
    for loss in losses() {
        let regression = loss.name() == "epsilon_insensitive";
        let (g, m, y) = problem(40, regression, 7);
        let stack = DenseStack::new(&g, m, 40).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
            SparsePenalty::ElasticNet { l1_ratio: 0.0 },
        ] {
            for c in [1.0, 10.0] {
                let cfg = WrapperConfig {
                    penalty,
                    c,
                    loss,
                    tol: 1e-7,
                    ..WrapperConfig::default()
                };
                let what = format!("{} {penalty:?} C={c}", loss.name());
                let ours = meets_spicy(&stack, &y, &cfg, 1e-7, 3e-7, &what);
                assert!(ours.dual <= ours.primal * (1.0 + 1e-12), "{what}");
                assert_primal_of_model(&stack, &y, &ours, &cfg, &what);
            }
        }
    }
}

/// For the smooth losses, the Hessian of `S` from Newton's systems (by one factorisation and
/// by block conjugate gradients with a forced preconditioner) equals the finite differences
/// of its gradient `−½ q`.
#[test]
fn smooth_hessian_matches_finite_differences() {
    let n = 40;
    let w = [0.3, 0.05, 0.8, 0.2, 0.1];
    for loss in [Loss::Logistic, Loss::Squared] {
        let (g, m, y) = problem(n, loss == Loss::Squared, 3);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let cfg = WrapperConfig {
            loss,
            c: 3.0,
            ..WrapperConfig::default()
        };
        let cs = vec![cfg.c; n];
        let at = |w: &[f64]| -> (SingleKernel, Combined, Point, Vec<f64>) {
            let mut s = SingleKernel::new(loss, &cs, &y).unwrap();
            let mut kw = Combined::Dense(Vec::new());
            kw.set(&stack, w, false);
            let point = solve_point(&mut s, &stack, &kw, &y, &cs, 1e-15, &NoInterrupt).unwrap();
            let mut prod = vec![0.0; m * n];
            stack.matvecs(&point.beta, &mut prod);
            (s, kw, point, prod)
        };
        let grad = |w: &[f64]| -> Vec<f64> {
            let (_, _, point, prod) = at(w);
            (0..m)
                .map(|j| -0.5 * dot(&prod[j * n..(j + 1) * n], &point.beta))
                .collect()
        };
        let (s, kw, point, prod) = at(&w);
        let h = s_hessian(&s, &stack, &kw, &point, &prod, &cs, &cfg).unwrap();
        // The same systems by block conjugate gradients, preconditioned by a rank-3 factor.
        let Combined::Dense(k) = &kw else {
            unreachable!()
        };
        let fb: Vec<f64> = point.f.iter().map(|v| v + point.b).collect();
        let d = s.system_diagonal(kw.op(), &fb).unwrap();
        let diag: Vec<f64> = (0..n).map(|i| k[i * n + i]).collect();
        let row = |j: usize, out: &mut [f64]| out.copy_from_slice(&k[j * n..(j + 1) * n]);
        let (l, _) = crate::kernels::pivoted_cholesky(n, &diag, row, 0.0, 3);
        let x = bordered_many(kw.op(), Some(&l), None, &d, &prod, 1e-12).unwrap();
        let g0 = grad(&w);
        for j in 0..m {
            let eps = 1e-5 * w[j];
            let mut wp = w.to_vec();
            wp[j] += eps;
            let mut wm = w.to_vec();
            wm[j] -= eps;
            let (gp, gm) = (grad(&wp), grad(&wm));
            let scale = g0.iter().fold(1e-3f64, |a, v| a.max(v.abs())) / w[j];
            for i in 0..m {
                let fd = (gp[i] - gm[i]) / (2.0 * eps);
                assert!(
                    (fd - h[(i, j)]).abs() <= 1e-4 * scale,
                    "{}: H[{i},{j}] = {} vs {fd}",
                    loss.name(),
                    h[(i, j)]
                );
                let cg = dot(&prod[i * n..(i + 1) * n], &x[j * n..(j + 1) * n]);
                assert!(
                    (cg - h[(i, j)]).abs() <= 1e-8 * scale,
                    "{}: CG H[{i},{j}] = {cg} vs {}",
                    loss.name(),
                    h[(i, j)]
                );
            }
        }
    }
}

/// The Hessian of `J` from the free support vectors equals the finite differences of its
/// gradient `−½ q + π'` (SVM solves to 1e-13), for the hinge and squared hinge losses.
#[test]
fn hessian_matches_finite_differences() {
    let (g, m, y) = problem(30, false, 3);
    let n = y.len();
    let stack = DenseStack::new(&g, m, n).unwrap();
    let pen = WeightPenalty { r1: 0.7, r2: 0.3 };
    let w = [0.3, 0.05, 0.8, 0.2, 0.1];
    for loss in [Loss::Hinge, Loss::SquaredHinge] {
        let c = 3.0;
        let grad_at = |w: &[f64]| -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
            let mut s = SingleKernel::new(loss, &[c; 30], &y).unwrap();
            let mut k = vec![0.0; n * n];
            stack.combine(w, &mut k);
            s.solve(&k, 1e-13, &NoInterrupt).unwrap();
            let beta = s.beta().to_vec();
            let mut prod = vec![0.0; m * n];
            stack.matvecs(&beta, &mut prod);
            let grad = (0..m)
                .map(|j| {
                    let q: f64 = (0..n).map(|i| prod[j * n + i] * beta[i]).sum();
                    -0.5 * q + pen.d1(w[j])
                })
                .collect();
            (grad, beta, prod, k)
        };
        let (g0, beta, prod, k) = grad_at(&w);
        let (upper, ridge) = match loss {
            Loss::SquaredHinge => (f64::INFINITY, 1.0 / c),
            _ => (c, 0.0),
        };
        let free = free_points(&beta, &vec![upper; n]);
        assert!(
            free.len() >= 2,
            "{}: {} free points",
            loss.name(),
            free.len()
        );
        let vars: Vec<usize> = (0..m).collect();
        let k_ff: Vec<f64> = free
            .iter()
            .flat_map(|&i| free.iter().map(|&j| k[i * n + j]).collect::<Vec<_>>())
            .collect();
        let h = svm_hessian(k_ff, n, &free, &vec![ridge; n], &prod, &vars).unwrap();
        for j in 0..m {
            let eps = 1e-6 * w[j];
            let mut wp = w.to_vec();
            wp[j] += eps;
            let (gp, ..) = grad_at(&wp);
            let mut wm = w.to_vec();
            wm[j] -= eps;
            let (gm, ..) = grad_at(&wm);
            for i in 0..m {
                let fd = (gp[i] - gm[i]) / (2.0 * eps);
                let model = h[(i, j)] + if i == j { pen.d2(w[j]) } else { 0.0 };
                let scale = g0.iter().fold(1e-3f64, |a, v| a.max(v.abs())) / w[j];
                assert!(
                    (fd - model).abs() <= 1e-4 * scale,
                    "{}: H[{i},{j}] = {model} vs {fd}",
                    loss.name()
                );
            }
        }
    }
}

/// The smooth losses: the wrapper (Newton inside) and SpicyMKL meet at the same optimum, with
/// the Hessian's systems by one factorisation (n = 40) and by block conjugate gradients
/// (n = 520, past `PCG_MIN_POINTS`), for both penalties.
#[test]
fn smooth_losses_meet_spicy() {
    for (n, tol) in [(40, 1e-7), (520, 1e-5)] {
        for loss in [Loss::Logistic, Loss::Squared] {
            let (g, m, y) = problem(n, loss == Loss::Squared, 5);
            let stack = DenseStack::new(&g, m, n).unwrap();
            for penalty in [
                SparsePenalty::L1,
                SparsePenalty::ElasticNet { l1_ratio: 0.5 },
            ] {
                for c in [1.0, 10.0] {
                    let cfg = WrapperConfig {
                        penalty,
                        c,
                        loss,
                        tol,
                        ..WrapperConfig::default()
                    };
                    let what = format!("n={n} {} {penalty:?} C={c}", loss.name());
                    meets_spicy(&stack, &y, &cfg, 0.1 * tol, 2.0 * tol, &what);
                }
            }
        }
    }
}

/// On a stack of factors the smooth losses' Newton and Hessian systems go through the
/// capacitance matrix; the fit equals the wrapper's on the dense products of the factors.
#[test]
fn smooth_losses_on_factors_equal_the_dense_products() {
    let n = 60;
    let (g, m, y) = problem(n, false, 9);
    let (lr, products) = crate::solvers::test_util::factored(&g, m, n, 6);
    let dense = DenseStack::new(&products, m, n).unwrap();
    for loss in [Loss::Logistic, Loss::Squared] {
        let cfg = WrapperConfig {
            loss,
            c: 4.0,
            tol: 1e-8,
            ..WrapperConfig::default()
        };
        let a = fit_wrapper(&lr, &y, &cfg, &NoInterrupt).unwrap();
        let b = fit_wrapper(&dense, &y, &cfg, &NoInterrupt).unwrap();
        assert!(a.gap <= 1e-8 && b.gap <= 1e-8, "{}", loss.name());
        let rel = (a.primal - b.primal).abs() / b.primal;
        assert!(rel < 2e-8, "{}: {} vs {}", loss.name(), a.primal, b.primal);
    }
}

/// Nine copies of each kernel of a test problem on `n` points, each scaled differently to
/// about unit trace (45 kernels): small kernels need large weights.
fn scaled_copies(n: usize, regression: bool) -> (Vec<f64>, usize, Vec<f64>) {
    let (g, m, y) = problem(n, regression, 11);
    let copies = 9;
    let mut big = Vec::with_capacity(copies * g.len());
    for c in 0..copies {
        let s = (0.5 + 0.25 * c as f64) / n as f64;
        big.extend(g.iter().map(|v| s * v));
    }
    (big, m * copies, y)
}

/// More than `2 · START_KERNELS` kernels: the fit starts from the 20 the first SVM ranks
/// first, and the others enter when they violate optimality.
#[test]
fn many_kernels_start_from_a_working_set() {
    let (big, m, y) = scaled_copies(30, false);
    let stack = DenseStack::new(&big, m, y.len()).unwrap();
    for penalty in [
        SparsePenalty::L1,
        SparsePenalty::ElasticNet { l1_ratio: 0.5 },
    ] {
        let cfg = WrapperConfig {
            penalty,
            tol: 1e-6,
            ..WrapperConfig::default()
        };
        let ours = fit_wrapper(&stack, &y, &cfg, &NoInterrupt).unwrap();
        let spicy = fit_spicy(
            &stack,
            &y,
            &SpicyConfig {
                penalty,
                tol: 1e-8,
                ..SpicyConfig::default()
            },
            &NoInterrupt,
        )
        .unwrap();
        assert_eq!(ours.status, SolveStatus::Converged, "{penalty:?}");
        let rel = (ours.primal - spicy.primal).abs() / spicy.primal;
        assert!(
            rel < 2e-6,
            "{penalty:?}: {} vs {}",
            ours.primal,
            spicy.primal
        );
    }
}

/// On kernels computed on demand (SMO's columns through the row cache, `K_w[F, F]` and the
/// products from views of the points), with or without a working set of points, the wrapper
/// reaches the fit of the same kernels stored:
/// same objective to 1e-8 relative and the same weights, for every hinge-type loss, both
/// penalties and a cache of three columns as well as one that holds them all; the smooth
/// losses are refused.
#[test]
fn on_demand_kernels_fit_like_the_stored_stack() {
    let pb = crate::solvers::test_util::OnDemandProblem::new();
    let dense = pb.stored();
    for cache in [3 * 8 * pb.n, 1 << 24] {
        let od = pb.on_demand(cache);
        for loss in losses() {
            let y = if loss.name() == "epsilon_insensitive" {
                &pb.targets
            } else {
                &pb.labels
            };
            for penalty in [
                SparsePenalty::L1,
                SparsePenalty::ElasticNet { l1_ratio: 0.5 },
            ] {
                let cfg = WrapperConfig {
                    penalty,
                    c: 2.0,
                    loss,
                    tol: 1e-9,
                    ..WrapperConfig::default()
                };
                // The whole problem, and a working set of points (views of the points).
                for min_points in [MIN_POINTS, 0] {
                    let a = fit_from(&od, y, None, &cfg, min_points, false, &NoInterrupt).unwrap();
                    let b =
                        fit_from(&dense, y, None, &cfg, min_points, false, &NoInterrupt).unwrap();
                    let what = format!("{} {penalty:?}, cache {cache}, {min_points}", loss.name());
                    crate::solvers::test_util::assert_same_fit(&a, &b, 1e-8, 1e-4, &what);
                }
            }
        }
        let cfg = WrapperConfig {
            loss: Loss::Logistic,
            ..WrapperConfig::default()
        };
        assert!(fit_wrapper(&od, &pb.labels, &cfg, &NoInterrupt).is_err());
    }
}

/// On many points the start's scale comes from a sample whose loss weights are multiplied by
/// `n/s`: it is within a factor 1.25 of the whole problem's stationary scale (found here by
/// bisection with exact solves; it is within 0.86–1.0 of it), and the whole search (the route
/// below [`SAMPLE_MIN`] points, with its predicted last step) ends within a factor 1.3. Without
/// the factor `n/s` (2 here) the sample's scale is 0.54–0.81 of the whole one's.
#[test]
fn the_sampled_scale_is_near_the_whole_problems() {
    let n = SAMPLE_MIN;
    let pen = WeightPenalty { r1: 1.0, r2: 0.0 };
    for loss in [Loss::Hinge, Loss::Logistic, Loss::Squared] {
        let (g, m, y) = problem(n, loss == Loss::Squared, 3);
        let stack = DenseStack::new(&g, m, n).unwrap();
        let c = vec![1.0; n];
        let mut k_lambda = Combined::Dense(Vec::new());
        k_lambda.set(&stack, &vec![1.0 / m as f64; m], false);
        let sampled = Sample::new(&stack, &y, &c, loss)
            .unwrap()
            .expect("a sample on this many points")
            .scale(&stack, &pen, &NoInterrupt)
            .unwrap();
        // `βᵀK_λβ / target` at `t` by an exact solve: it falls as `t` grows.
        let ratio_at = |t: f64| {
            let mut solver = SingleKernel::new(loss, &c, &y).unwrap();
            let mut kw = Combined::Dense(Vec::new());
            k_lambda.scaled_into(t, &mut kw);
            solver.solve_op(kw.op(), 1e-10, &NoInterrupt).unwrap();
            let mut kb = vec![0.0; n];
            k_lambda.op().matvec(solver.beta(), &mut kb);
            dot(&kb, solver.beta()) / (2.0 * pen.d1(t / m as f64))
        };
        let (mut lo, mut hi) = (sampled / 4.0, sampled * 4.0);
        assert!(ratio_at(lo) > 1.0 && ratio_at(hi) < 1.0, "{}", loss.name());
        for _ in 0..10 {
            let mid = (lo * hi).sqrt();
            if ratio_at(mid) > 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let exact = (lo * hi).sqrt();
        let what = format!("{}: sampled {sampled}, exact {exact}", loss.name());
        assert!((sampled / exact).ln().abs() < 1.25f64.ln(), "{what}");
        let mut solver = SingleKernel::new(loss, &c, &y).unwrap();
        let mut kw = Combined::Dense(Vec::new());
        let found = scale_search(&mut solver, &stack, &k_lambda, &mut kw, &pen, &NoInterrupt)
            .unwrap()
            .t;
        assert!(
            (found / exact).ln().abs() < 1.3f64.ln(),
            "{what}, found {found}"
        );
    }
}

/// From [`SAMPLE_MIN`] points on a fit starts from the sample (SMO warm-started from its
/// variables). The hinge and logistic fits meet
/// SpicyMKL, an independent algorithm, at the same optimum for both penalties, each certified
/// by its own gap; the ε-insensitive fit (SMO's
/// `[α; α*]` warm start) is certified to 1e-8 by the whole problem's gap (SpicyMKL takes over a
/// minute on it).
#[test]
fn fits_started_from_a_sample_meet_spicy() {
    let n = SAMPLE_MIN;
    for loss in [
        Loss::Hinge,
        Loss::Logistic,
        Loss::EpsilonInsensitive { epsilon: 0.1 },
    ] {
        let regression = loss.name() == "epsilon_insensitive";
        let (g, m, y) = problem(n, regression, 13);
        let stack = DenseStack::new(&g, m, n).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            let tol = if regression { 1e-8 } else { 1e-6 };
            let cfg = WrapperConfig {
                penalty,
                loss,
                tol,
                ..WrapperConfig::default()
            };
            let what = format!("{} {penalty:?}", loss.name());
            if regression {
                let ours = fit_wrapper(&stack, &y, &cfg, &NoInterrupt).unwrap();
                assert_eq!(ours.status, SolveStatus::Converged, "{what}");
                assert!(ours.gap <= tol, "{what}: gap {}", ours.gap);
            } else {
                meets_spicy(&stack, &y, &cfg, 0.1 * tol, 2.0 * tol, &what);
            }
        }
    }
}

/// With the hinge-type losses the iterates after the first are those of the working set of
/// points (recorded with the primal `+∞`), and the whole-problem checks end the fit at the
/// optimum of SpicyMKL, an independent algorithm, for both penalties and C = 1 and 10; the
/// reported primal is that of the returned model on all points.
#[test]
fn a_working_set_of_points_reaches_the_whole_optimum() {
    for loss in losses() {
        let regression = loss.name() == "epsilon_insensitive";
        let (g, m, y) = problem(200, regression, 5);
        let n = y.len();
        let stack = DenseStack::new(&g, m, n).unwrap();
        // Fits that formed a working set (not every one does: above 70 % of the points are
        // support vectors or violators, the whole problem is iterated).
        let mut restricted = 0;
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            for c in [1.0, 10.0] {
                let cfg = WrapperConfig {
                    penalty,
                    c,
                    loss,
                    tol: 1e-7,
                    ..WrapperConfig::default()
                };
                let what = format!("{} {penalty:?} C={c}", loss.name());
                // The set from any size on: these 200 points keep SpicyMKL's reference quick.
                let ours = meets_spicy_from(&stack, &y, &cfg, 0, (1e-8, 3e-7), &what);
                restricted += ours.history.iter().any(|r| r.primal == f64::INFINITY) as usize;
                assert_primal_of_model(&stack, &y, &ours, &cfg, &what);
            }
        }
        assert!(restricted >= 1, "{}: no fit restricted", loss.name());
    }
}

/// Once at most half the kernels can move the iterates read only theirs (recorded without a
/// dual value), and the whole-problem checks end the fit at the optimum of SpicyMKL, an
/// independent algorithm, for every loss and both penalties. No recorded primal value lies
/// below the certified dual value: a restricted iterate whose weights left the set (a retried
/// trust-region step keeps weights that its first trial had zeroed) read their forms as 0 and
/// recorded a primal value below the optimum.
#[test]
fn a_working_set_of_kernels_reaches_the_whole_optimum() {
    let all = [Loss::Logistic, Loss::Squared];
    for loss in all.into_iter().chain(losses()) {
        let regression = matches!(loss, Loss::Squared | Loss::EpsilonInsensitive { .. });
        let (big, m, y) = scaled_copies(60, regression);
        let stack = DenseStack::new(&big, m, y.len()).unwrap();
        for penalty in [
            SparsePenalty::L1,
            SparsePenalty::ElasticNet { l1_ratio: 0.5 },
        ] {
            let cfg = WrapperConfig {
                penalty,
                loss,
                tol: 1e-6,
                ..WrapperConfig::default()
            };
            let what = format!("{} {penalty:?}", loss.name());
            let ours = meets_spicy(&stack, &y, &cfg, 1e-8, 2e-6, &what);
            assert!(
                ours.history.iter().any(|r| r.dual == f64::NEG_INFINITY),
                "{what}: no restricted iterate"
            );
            let low = ours
                .history
                .iter()
                .map(|r| r.primal)
                .fold(f64::INFINITY, f64::min);
            assert!(
                low >= ours.dual,
                "{what}: a primal {low} below the dual {}",
                ours.dual
            );
            assert_primal_of_model(&stack, &y, &ours, &cfg, &what);
        }
    }
}

/// Noisy labels (150 points, most of them support vectors, many bounded on the margin): `J`
/// is piecewise quadratic in narrow pieces, and steps refused for the model's error must
/// shrink the trust region below 5 % (`MIN_RADIUS`); at 1.05 this fit stalled at a gap of
/// 1.2e-2 after 35 solves. It meets SpicyMKL's optimum.
#[test]
fn a_narrow_model_still_converges() {
    use crate::solvers::test_util::Lcg;
    let n = 150;
    let mut rng = Lcg(1);
    let x: Vec<[f64; 3]> = (0..n)
        .map(|_| [rng.next(), rng.next(), rng.next()])
        .collect();
    let y: Vec<f64> = x
        .iter()
        .map(|p| {
            let t = (3.0 * p[0]).sin() + p[1] * p[1] + 4.0 * rng.next();
            if t > 0.3 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    // Gaussians on one feature each (widths 0.3, 1, 3).
    let (m, widths) = (6, [0.3, 1.0, 3.0]);
    let mut g = vec![0.0; m * n * n];
    for k in 0..m {
        let (d, s) = (k % 3, widths[k % 2 + k / 4]);
        for i in 0..n {
            for j in 0..n {
                let e = (-(x[i][d] - x[j][d]).powi(2) / s).exp();
                g[k * n * n + i * n + j] = e + if i == j { 1e-8 } else { 0.0 };
            }
        }
    }
    let stack = DenseStack::new(&g, m, n).unwrap();
    let cfg = WrapperConfig::default();
    meets_spicy_from(&stack, &y, &cfg, 0, (1e-8, 2e-3), "noisy labels");
}
/// A feasible hinge dual point: `β = yα`, `0 ≤ α ≤ c`, `Σβ = 0` (the larger class's
/// `α` scaled down to the other's total).
fn hinge_point(y: &[f64], c: f64, rng: &mut Lcg) -> Vec<f64> {
    let mut alpha: Vec<f64> = y.iter().map(|_| c * 0.5 * (rng.next() + 1.0)).collect();
    let total = |s: f64, a: &[f64]| -> f64 {
        a.iter()
            .zip(y)
            .filter(|(_, &yi)| yi == s)
            .map(|(a, _)| a)
            .sum()
    };
    let (pos, neg) = (total(1.0, &alpha), total(-1.0, &alpha));
    let (big, ratio) = if pos > neg {
        (1.0, neg / pos)
    } else {
        (-1.0, pos / neg)
    };
    for (a, &yi) in alpha.iter_mut().zip(y) {
        if yi == big {
            *a *= ratio;
        }
    }
    alpha.iter().zip(y).map(|(a, yi)| a * yi).collect()
}

#[test]
fn the_best_point_of_a_segment_is_feasible_and_beats_both_ends() {
    let n = 40;
    let (g, m, y) = problem(n, false, 3);
    let stack = DenseStack::new(&g, m, n).unwrap();
    let c = vec![1.0; n];
    let mut rng = Lcg(11);
    for penalty in [
        SparsePenalty::L1,
        SparsePenalty::ElasticNet { l1_ratio: 0.5 },
    ] {
        let (a, b) = (
            hinge_point(&y, 1.0, &mut rng),
            hinge_point(&y, 1.0, &mut rng),
        );
        let forms = |v: &[f64]| -> Vec<f64> {
            let mut q = vec![0.0; m];
            stack.quad_forms(v, &mut q);
            q
        };
        let roots = |q: &[f64]| -> Vec<f64> { q.iter().map(|v| v.max(0.0).sqrt()).collect() };
        let own = |v: &[f64]| best_dual(&roots(&forms(v)), &y, v, &c, Loss::Hinge, penalty.into());
        let sum: Vec<f64> = a.iter().zip(&b).map(|(x, z)| x + z).collect();
        let start = DualPoint {
            rho: a.clone(),
            q: forms(&a),
            value: own(&a),
        };
        let best = best_on_segment(
            &start,
            (&b, &forms(&b)),
            &forms(&sum),
            &y,
            &c,
            Loss::Hinge,
            penalty.into(),
        );
        assert!(best.value >= own(&a).max(own(&b)) - 1e-12 * best.value.abs());
        // Its forms and value are those of the point it returns, read directly.
        let q = forms(&best.rho);
        for (x, z) in q.iter().zip(&best.q) {
            assert!((x - z).abs() <= 1e-10 * x.abs().max(1.0), "{x} vs {z}");
        }
        let direct = dual_value(&roots(&q), &y, &best.rho, &c, Loss::Hinge, penalty);
        assert!((direct - best.value).abs() <= 1e-10 * best.value.abs());
        assert!(best.rho.iter().sum::<f64>().abs() < 1e-12 * n as f64);
        assert!(best
            .rho
            .iter()
            .zip(&y)
            .all(|(r, yi)| r * yi >= -1e-15 && r * yi <= 1.0 + 1e-15));
    }
}

/// Whole iterates on the per-kernel gradient caches (SMO on the columns of `K_w` on demand,
/// trial weights without a combine, the forms `βᵀh_m` and the Hessian's products `h_k`; with
/// more than 40 kernels also the start's ranking) certify what forming `K_w` and reading the
/// forms certifies: the same iterations, primal and dual values to 1e-10, and the same
/// weights. At a tight tolerance: rounding can change SMO's path within its accuracy, which
/// the wrapper's solves follow (`inner_tol ≤ tol/10`).
#[test]
fn cached_iterates_certify_like_the_formed_kernel() {
    let n = 80;
    let (g, m, y) = problem(n, false, 3);
    // The five kernels at nine scales: a ranked start.
    let many: Vec<f64> = (1..=9)
        .flat_map(|s| g.iter().map(move |v| (1.0 + 0.1 * s as f64) * v))
        .collect();
    let enet = SparsePenalty::ElasticNet { l1_ratio: 0.5 };
    // The caches' path rounds differently from the formed one: some fit must show it ran.
    let mut cached_ran = false;
    for (kernels, gram) in [(m, &g), (9 * m, &many)] {
        let dense = DenseStack::new(gram, kernels, n).unwrap();
        let formed = Formed(DenseStack::new(gram, kernels, n).unwrap());
        for (penalty, loss, c) in [
            (SparsePenalty::L1, Loss::Hinge, 1.0),
            (SparsePenalty::L1, Loss::Hinge, 10.0),
            (enet, Loss::Hinge, 1.0),
            (SparsePenalty::L1, Loss::SquaredHinge, 1.0),
            (enet, Loss::SquaredHinge, 10.0),
        ] {
            let cfg = WrapperConfig {
                penalty,
                c,
                loss,
                tol: 1e-10,
                ..WrapperConfig::default()
            };
            let a = fit_wrapper(&dense, &y, &cfg, &NoInterrupt).unwrap();
            let b = fit_wrapper(&formed, &y, &cfg, &NoInterrupt).unwrap();
            let case = format!("M = {kernels}, {penalty:?} {loss:?} C = {c}");
            assert_eq!(a.status, SolveStatus::Converged, "{case}");
            assert!(
                a.n_iter >= 2,
                "{case}: the first iterate alone tests no cache"
            );
            assert_eq!(a.n_iter, b.n_iter, "{case}");
            let close = |u: f64, v: f64| (u - v).abs() <= 1e-10 * v.abs();
            assert!(
                close(a.primal, b.primal),
                "{case}: P {} vs {}",
                a.primal,
                b.primal
            );
            assert!(close(a.dual, b.dual), "{case}: D {} vs {}", a.dual, b.dual);
            for (u, v) in a.kernel_weights.iter().zip(&b.kernel_weights) {
                assert!((u - v).abs() <= 1e-8, "{case}: {u} vs {v}");
            }
            cached_ran |= a.primal != b.primal || a.dual != b.dual;
        }
    }
    assert!(cached_ran, "no fit ran on the caches");
}
