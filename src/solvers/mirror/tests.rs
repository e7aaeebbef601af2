use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::DenseStack;
use crate::solvers::lp::{fit_lp, LpConfig};
use crate::solvers::test_util::Lcg;

#[allow(clippy::needless_range_loop)]
/// `n` points in 4-D; per feature `d` a group of Gaussian kernels on that feature of widths
/// `0.25·2^w`, `w < per`, each with a 1e-8 jitter. Labels depend on features 0 and 1.
fn problem(n: usize, per: usize, regression: bool) -> (Vec<f64>, usize, Vec<f64>, Vec<usize>) {
    let mut rng = Lcg(7);
    let x: Vec<[f64; 4]> = (0..n)
        .map(|_| [rng.next(), rng.next(), rng.next(), rng.next()])
        .collect();
    let y: Vec<f64> = x
        .iter()
        .map(|p| {
            let t = (3.0 * p[0]).sin() + p[1] * p[1] + 0.3 * rng.next();
            match (regression, t > 0.3) {
                (true, _) => t,
                (false, true) => 1.0,
                (false, false) => -1.0,
            }
        })
        .collect();
    let m = 4 * per;
    let mut g = vec![0.0; m * n * n];
    let mut ids = Vec::new();
    for d in 0..4 {
        for w in 0..per {
            let k = d * per + w;
            ids.push(d);
            let width = 0.25 * 2f64.powi(w as i32);
            for i in 0..n {
                for j in 0..n {
                    let e = x[i][d] - x[j][d];
                    g[k * n * n + i * n + j] =
                        (-e * e / width).exp() + if i == j { 1e-8 } else { 0.0 };
                }
            }
        }
    }
    (g, m, y, ids)
}

/// The primal value of a result, recomputed from its coefficients.
fn primal(
    g: &[f64],
    m: usize,
    y: &[f64],
    r: &FitResult,
    groups: &Groups,
    cfg: &MirrorConfig,
) -> f64 {
    let n = y.len();
    let mut f = vec![r.intercept; n];
    let mut norms = vec![0.0; m];
    for k in 0..m {
        let a = &r.coef[k * n..(k + 1) * n];
        let kk = &g[k * n * n..(k + 1) * n * n];
        let mut q = 0.0;
        for i in 0..n {
            let row: f64 = (0..n).map(|j| kk[i * n + j] * a[j]).sum();
            f[i] += row;
            q += a[i] * row;
        }
        norms[k] = q.max(0.0).sqrt();
    }
    let data: f64 = y
        .iter()
        .zip(&f)
        .map(|(&yi, &fi)| cfg.loss.value(yi, fi))
        .sum();
    cfg.c * data + group_penalty(&norms, groups)
}

fn all_losses() -> Vec<Loss> {
    vec![
        Loss::Hinge,
        Loss::SquaredHinge,
        Loss::Logistic,
        Loss::Squared,
        Loss::EpsilonInsensitive { epsilon: 0.1 },
    ]
}

#[test]
fn certificate_is_valid_and_reached_for_every_loss() {
    for loss in all_losses() {
        let regression = matches!(loss, Loss::Squared | Loss::EpsilonInsensitive { .. });
        let (g, m, y, ids) = problem(40, 3, regression);
        let stack = DenseStack::new(&g, m, y.len()).unwrap();
        let groups = Groups::new(&ids).unwrap();
        let cfg = MirrorConfig {
            loss,
            tol: 1e-4,
            ..MirrorConfig::default()
        };
        let r = fit_group(&stack, &y, &groups, &cfg, &NoInterrupt).unwrap();
        assert_eq!(r.status, SolveStatus::Converged, "{loss:?}: {}", r.gap);
        assert!(r.gap >= -1e-9 && r.gap <= 1e-4, "{loss:?}: {}", r.gap);
        let p = primal(&g, m, &y, &r, &groups, &cfg);
        assert!(
            (p - r.primal).abs() <= 1e-9 * p.abs().max(1.0),
            "{loss:?}: {p} vs {}",
            r.primal
        );
        let total: f64 = r.kernel_weights.iter().sum();
        assert!((total - 1.0).abs() < 1e-12);
    }
}

#[test]
fn one_group_is_lp_with_p_one() {
    let (g, m, y, _) = problem(40, 3, false);
    let stack = DenseStack::new(&g, m, y.len()).unwrap();
    let cfg = MirrorConfig {
        tol: 1e-6,
        max_iter: 5000,
        ..MirrorConfig::default()
    };
    let r = fit_group(&stack, &y, &Groups::single(m), &cfg, &NoInterrupt).unwrap();
    let lp = LpConfig {
        p: 1.0,
        tol: 1e-6,
        max_iter: 20000,
        ..LpConfig::default()
    };
    let s = fit_lp(&stack, &y, &lp, &NoInterrupt).unwrap();
    // Both certified to 1e-6: their optima agree to the sum of the gaps.
    assert!(r.gap <= 1e-6 && s.gap <= 1e-6, "{} {}", r.gap, s.gap);
    assert!(
        (r.primal - s.primal).abs() <= 3e-6 * s.primal,
        "{} vs {}",
        r.primal,
        s.primal
    );
    assert!(r.dual <= s.primal * (1.0 + 1e-9) && s.dual <= r.primal * (1.0 + 1e-9));
}

#[test]
fn working_set_and_both_step_rules_reach_the_same_optimum() {
    let (g, m, y, ids) = problem(40, 8, false);
    let stack = DenseStack::new(&g, m, y.len()).unwrap();
    let groups = Groups::new(&ids).unwrap();
    let mut primals = Vec::new();
    for (step, working_set) in [
        (StepRule::Adaptive, true),
        (StepRule::Adaptive, false),
        (StepRule::Paper, true),
    ] {
        let cfg = MirrorConfig {
            step,
            working_set,
            tol: 1e-3,
            max_iter: 5000,
            ..MirrorConfig::default()
        };
        let r = fit_group(&stack, &y, &groups, &cfg, &NoInterrupt).unwrap();
        assert_eq!(r.status, SolveStatus::Converged, "{step:?} {working_set}");
        primals.push((r.primal, r.dual));
    }
    // Every primal is above every dual: one optimum.
    for &(p, _) in &primals {
        for &(_, d) in &primals {
            assert!(d <= p * (1.0 + 1e-12), "{d} > {p}");
        }
    }
}

#[test]
fn invalid_groups_are_errors() {
    assert!(Groups::new(&[0, 2, 2]).is_err());
    let (g, m, y, _) = problem(10, 1, false);
    let stack = DenseStack::new(&g, m, y.len()).unwrap();
    let e = fit_group(
        &stack,
        &y,
        &Groups::new(&[0, 1]).unwrap(),
        &MirrorConfig::default(),
        &NoInterrupt,
    )
    .unwrap_err();
    assert!(e.to_string().contains("groups"), "{e}");
}

#[test]
fn penalty_and_dual_penalty_are_the_group_norms() {
    let groups = Groups::new(&[0, 0, 1]).unwrap();
    assert_eq!(group_penalty(&[1.0, 2.0, 4.0], &groups), 8.0);
    assert_eq!(group_penalty(&[1.0, 2.0, 2.5], &groups), 4.5);
    assert_eq!(dual_penalty(&[1.0, 4.0, 9.0], &groups, |_| true), 12.5);
    assert_eq!(dual_penalty(&[1.0, 4.0, 9.0], &groups, |k| k != 1), 8.0);
}
