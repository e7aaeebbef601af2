use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::DenseStack;
use crate::penalties::{GroupPenalty, SparsePenalty};
use crate::result::SolveStatus;
use crate::solvers::lp::{fit_lp, LpConfig};
use crate::solvers::mirror::{fit_group, MirrorConfig};
use crate::solvers::test_util::problem;
use crate::solvers::wrapper::{fit_wrapper, WrapperConfig};

const TOL: f64 = 1e-8;

fn config(penalty: BlockPenalty, loss: Loss, c: f64) -> SharedConfig {
    SharedConfig {
        penalty,
        c,
        loss,
        tol: TOL,
        max_iter: 5000,
        inner_tol: 1e-10,
    }
}

/// The binary solver's optimum of `penalty` on `(stack, y)` at `c`.
fn binary(
    stack: &DenseStack<'_, f64>,
    y: &[f64],
    penalty: &BlockPenalty,
    loss: Loss,
    c: f64,
) -> f64 {
    let r = match penalty {
        BlockPenalty::Lp { p } => {
            let cfg = LpConfig {
                p: *p,
                c,
                loss,
                tol: TOL,
                max_iter: 5000,
                inner_tol: 1e-10,
                ..LpConfig::default()
            };
            fit_lp(stack, y, &cfg, &NoInterrupt)
        }
        BlockPenalty::Sparse(s) => {
            let cfg = WrapperConfig {
                penalty: *s,
                c,
                loss,
                tol: TOL,
                max_iter: 5000,
                inner_tol: 1e-10,
            };
            fit_wrapper(stack, y, &cfg, &NoInterrupt)
        }
        BlockPenalty::Group(g) => {
            let cfg = MirrorConfig {
                c,
                loss,
                tol: TOL,
                max_iter: 20000,
                ..MirrorConfig::default()
            };
            fit_group(stack, y, &g.groups, &cfg, &NoInterrupt)
        }
    }
    .unwrap();
    assert!(
        r.gap <= 10.0 * TOL,
        "binary {penalty:?} {loss:?}: gap {}",
        r.gap
    );
    r.primal
}

fn penalties() -> Vec<BlockPenalty> {
    vec![
        BlockPenalty::Lp { p: 2.0 },
        BlockPenalty::Lp { p: 4.0 / 3.0 },
        BlockPenalty::Sparse(SparsePenalty::L1),
        BlockPenalty::Sparse(SparsePenalty::ElasticNet { l1_ratio: 0.5 }),
        BlockPenalty::Group(GroupPenalty::exact(
            crate::penalties::Groups::new(&[0, 0, 1, 1, 2]).unwrap(),
        )),
    ]
}

/// One class is the binary problem (§3.8, "K = 1 is §0.2 itself"): the shared optimum is the
/// binary solver's, for every penalty and loss.
#[test]
fn one_class_is_the_binary_fit() {
    let (g, m, y) = problem(40, false, 7);
    let stack = DenseStack::new(&g, m, 40).unwrap();
    for loss in [Loss::Hinge, Loss::Logistic] {
        for penalty in penalties() {
            let cfg = config(penalty.clone(), loss, 2.0);
            let r = fit_shared(&stack, std::slice::from_ref(&y), None, &cfg, &NoInterrupt).unwrap();
            let what = format!("{penalty:?} {loss:?}");
            assert_eq!(r.fit.status, SolveStatus::Converged, "{what}");
            let want = binary(&stack, &y, &penalty, loss, 2.0);
            assert!(
                (r.fit.primal - want).abs() <= 1e-6 * want,
                "{what}: {} vs {want}",
                r.fit.primal
            );
        }
    }
}

/// Two classes `y` and `−y`: by symmetry `f² = −f¹`, so `s = √2 s¹` and the shared optimum is
/// twice the binary one at the same C for the penalties of degree 2 (`lp`, `group`), and
/// `√2` times the binary one at `√2 C` for `l1` (degree 1).
#[test]
fn two_opposite_classes_are_the_binary_fit_rescaled() {
    let (g, m, y) = problem(40, false, 11);
    let stack = DenseStack::new(&g, m, 40).unwrap();
    let neg: Vec<f64> = y.iter().map(|v| -v).collect();
    for loss in [Loss::Hinge, Loss::SquaredHinge, Loss::Logistic] {
        for penalty in penalties() {
            if matches!(
                penalty,
                BlockPenalty::Sparse(SparsePenalty::ElasticNet { .. })
            ) {
                continue; // neither homogeneous of degree 1 nor 2
            }
            let cfg = config(penalty.clone(), loss, 2.0);
            let r =
                fit_shared(&stack, &[y.clone(), neg.clone()], None, &cfg, &NoInterrupt).unwrap();
            let what = format!("{penalty:?} {loss:?}");
            assert_eq!(r.fit.status, SolveStatus::Converged, "{what}");
            let want = match penalty {
                BlockPenalty::Sparse(_) => {
                    2f64.sqrt() * binary(&stack, &y, &penalty, loss, 2.0 * 2f64.sqrt())
                }
                _ => 2.0 * binary(&stack, &y, &penalty, loss, 2.0),
            };
            assert!(
                (r.fit.primal - want).abs() <= 1e-6 * want,
                "{what}: {} vs {want}",
                r.fit.primal
            );
            // Opposite models: f² = −f¹, so b² = −b¹.
            assert!((r.intercepts[0] + r.intercepts[1]).abs() <= 1e-3, "{what}");
        }
    }
}

/// Integer sample weights are duplicated rows, in the shared fit too (§0.2).
#[test]
fn integer_weights_are_duplicated_rows() {
    let n = 30;
    let (g, m, y) = problem(n, false, 3);
    let (_, _, y2) = problem(n, false, 5);
    let stack = DenseStack::new(&g, m, n).unwrap();
    // A third class from another labelling: three targets, not all of them opposite.
    let ys = vec![y.clone(), y2[..n].to_vec(), y.iter().map(|v| -v).collect()];
    let reps: Vec<usize> = (0..n).map(|i| 1 + i % 3).collect();
    let (gd, idx) = crate::solvers::test_util::duplicated(&g, m, n, &reps);
    let nd = idx.len();
    let dup = DenseStack::new(&gd, m, nd).unwrap();
    let ysd: Vec<Vec<f64>> = ys
        .iter()
        .map(|t| idx.iter().map(|&i| t[i]).collect())
        .collect();
    let w: Vec<f64> = reps.iter().map(|&r| r as f64).collect();
    for penalty in [
        BlockPenalty::Lp { p: 2.0 },
        BlockPenalty::Sparse(SparsePenalty::L1),
    ] {
        let cfg = config(penalty.clone(), Loss::Hinge, 1.5);
        let a = fit_shared(&stack, &ys, Some(&w), &cfg, &NoInterrupt).unwrap();
        let b = fit_shared(&dup, &ysd, None, &cfg, &NoInterrupt).unwrap();
        assert!(
            (a.fit.primal - b.fit.primal).abs() <= 1e-6 * b.fit.primal,
            "{penalty:?}: {} vs {}",
            a.fit.primal,
            b.fit.primal
        );
    }
}

/// Three classes with the rank-one linear kernel of `problem` alone in its group, whose norm
/// sum ties the other groups' at the optimum (to 1e-3): every fit is certified at tol 1e-6 and
/// the certificate is the whole problem's (`D ≤ P`): a group that rejoined the saddle form is
/// not freed again, where freeing and rejoining it cycled (docs/mathematics.md §4, "Free
/// groups").
#[test]
fn a_rank_one_kernel_alone_in_its_group_is_certified() {
    let n = 50;
    let (g, m, ys) = crate::solvers::test_util::tied_groups_problem(n);
    let stack = DenseStack::new(&g, m, n).unwrap();
    let groups = crate::penalties::Groups::new(&[0, 0, 0, 1, 2]).unwrap();
    for loss in [Loss::Hinge, Loss::Logistic] {
        for c in [10.0, 1.0] {
            let cfg = SharedConfig {
                tol: 1e-6,
                max_iter: 3000,
                ..config(
                    BlockPenalty::Group(GroupPenalty::exact(groups.clone())),
                    loss,
                    c,
                )
            };
            let r = fit_shared(&stack, &ys, None, &cfg, &NoInterrupt).unwrap();
            assert_eq!(r.fit.status, SolveStatus::Converged, "{loss:?} C = {c}");
            assert!(r.fit.gap <= 1e-6, "{loss:?} C = {c}: gap {}", r.fit.gap);
            assert!(
                r.fit.dual <= r.fit.primal * (1.0 + 1e-12),
                "{loss:?} C = {c}"
            );
        }
    }
}

/// Newton on a stack of factors (total rank below n, `K_θ = UUᵀ`) reaches the optimum of the
/// same kernels stored dense, and SMO on kernels computed on demand that of the stored ones.
#[test]
fn factors_and_kernels_on_demand_fit_like_the_stored_stack() {
    let n = 60;
    let (g, m, y) = problem(n, false, 5);
    let (_, _, y2) = problem(n, false, 6);
    let ys = vec![y, y2];
    let (lr, products) = crate::solvers::test_util::factored(&g, m, n, 3);
    let dense = DenseStack::new(&products, m, n).unwrap();
    let pb = crate::solvers::test_util::OnDemandProblem::new();
    let od = pb.on_demand(3 * 8 * pb.n);
    let stored = pb.stored();
    let labels = vec![pb.labels.clone(), pb.labels.iter().map(|v| -v).collect()];
    for penalty in [
        BlockPenalty::Lp { p: 2.0 },
        BlockPenalty::Sparse(SparsePenalty::L1),
    ] {
        let cfg = config(penalty.clone(), Loss::Logistic, 3.0);
        let a = fit_shared(&lr, &ys, None, &cfg, &NoInterrupt).unwrap();
        let b = fit_shared(&dense, &ys, None, &cfg, &NoInterrupt).unwrap();
        assert!(
            (a.fit.primal - b.fit.primal).abs() <= 1e-7 * b.fit.primal,
            "{penalty:?}"
        );
        let cfg = config(penalty.clone(), Loss::Hinge, 2.0);
        let a = fit_shared(&od, &labels, None, &cfg, &NoInterrupt).unwrap();
        let b = fit_shared(&stored, &labels, None, &cfg, &NoInterrupt).unwrap();
        assert_eq!(
            a.fit.status,
            SolveStatus::Converged,
            "{penalty:?} on demand"
        );
        assert!(
            (a.fit.primal - b.fit.primal).abs() <= 1e-7 * b.fit.primal,
            "{penalty:?}"
        );
    }
}
