//! The trust-region subproblem of the wrapper: a small convex QP over a box.

use faer::linalg::solvers::Solve;
use faer::Mat;

use crate::linalg::clear_upper_simd_state;

/// `argmin gᵀd + ½ dᵀHd` over `lo ≤ d ≤ hi` (`lo ≤ 0 ≤ hi`), `H` positive definite, by a
/// primal active-set method from `d = 0`: each pass solves the Newton system on the free
/// coordinates with the others held at their bounds, and moves along it to the first bound
/// met, which joins the bounds; after a full step (the minimum on the face) the bound with the
/// most negative multiplier is freed, until none is: the KKT point.
pub(super) fn box_qp(h: &Mat<f64>, g: &[f64], lo: &[f64], hi: &[f64]) -> Vec<f64> {
    let s = g.len();
    let mut x = vec![0.0; s];
    // Coordinates held at a bound (those whose box is a point, or starts at 0, to begin with).
    let mut fixed: Vec<bool> = (0..s).map(|a| lo[a] >= 0.0 || hi[a] <= 0.0).collect();
    let scale = g.iter().fold(f64::MIN_POSITIVE, |a, v| a.max(v.abs()));
    let gradient = |x: &[f64]| -> Vec<f64> {
        (0..s)
            .map(|a| g[a] + (0..s).map(|b| h[(a, b)] * x[b]).sum::<f64>())
            .collect()
    };
    let mut on_minimum = false;
    for _ in 0..4 * s + 20 {
        let grad = gradient(&x);
        let free: Vec<usize> = (0..s).filter(|&a| !fixed[a]).collect();
        if on_minimum || free.is_empty() {
            // Multiplier of a bound: the gradient, which must point out of the box.
            let worst = (0..s)
                .filter(|&a| fixed[a] && lo[a] < hi[a])
                .map(|a| {
                    let wrong = if x[a] <= lo[a] { -grad[a] } else { grad[a] };
                    (a, wrong)
                })
                .max_by(|p, q| p.1.total_cmp(&q.1));
            match worst {
                Some((a, v)) if v > 1e-12 * scale => fixed[a] = false,
                _ => break,
            }
            on_minimum = false;
            continue;
        }
        let (p, mut t) = face_step(h, &grad, &free, scale);
        let mut block = None;
        for (a, &r) in free.iter().enumerate() {
            let limit = if p[a] > 0.0 {
                (hi[r] - x[r]) / p[a]
            } else if p[a] < 0.0 {
                (lo[r] - x[r]) / p[a]
            } else {
                f64::INFINITY
            };
            if limit < t {
                t = limit.max(0.0);
                block = Some((r, p[a] > 0.0));
            }
        }
        if !t.is_finite() {
            // Unbounded: only an infinite box (never the wrapper's) leaves no bound to meet.
            break;
        }
        for (a, &r) in free.iter().enumerate() {
            x[r] = (x[r] + t * p[a]).clamp(lo[r], hi[r]);
        }
        match block {
            Some((r, up)) => {
                x[r] = if up { hi[r] } else { lo[r] };
                fixed[r] = true;
            }
            None => on_minimum = true,
        }
    }
    x
}

/// The step on the face of the free coordinates `free` at the gradient `grad`: the Newton
/// step (length 1), or where the block has no curvature to stop it (a model with no free
/// support vectors is linear) steepest descent with the length that minimises along it
/// (infinite when nothing does).
fn face_step(h: &Mat<f64>, grad: &[f64], free: &[usize], scale: f64) -> (Vec<f64>, f64) {
    let nf = free.len();
    let mut sub = Mat::from_fn(nf, nf, |a, b| h[(free[a], free[b])]);
    let mut rhs = Mat::from_fn(nf, 1, |a, _| -grad[free[a]]);
    match sub.as_ref().llt(faer::Side::Lower) {
        Ok(llt) => llt.solve_in_place(rhs.as_mut()),
        Err(_) => {
            // Rounding made the block indefinite: a tiny shift, then LU.
            for a in 0..nf {
                sub[(a, a)] += 1e-12 * scale;
            }
            sub.partial_piv_lu().solve_in_place(rhs.as_mut());
        }
    }
    clear_upper_simd_state();
    let p: Vec<f64> = (0..nf).map(|a| rhs[(a, 0)]).collect();
    if p.iter().all(|v| v.is_finite()) {
        return (p, 1.0);
    }
    let p: Vec<f64> = free.iter().map(|&a| -grad[a]).collect();
    let pp: f64 = p.iter().map(|v| v * v).sum();
    let php: f64 = (0..nf)
        .map(|a| p[a] * (0..nf).map(|b| h[(free[a], free[b])] * p[b]).sum::<f64>())
        .sum();
    (p, if php > 0.0 { pp / php } else { f64::INFINITY })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the KKT conditions, on problems whose bounds bind in different ways.
    #[test]
    fn box_qp_meets_the_kkt_conditions() {
        let h = Mat::from_fn(3, 3, |a, b| {
            [[4.0, 1.0, 0.5], [1.0, 3.0, -0.5], [0.5, -0.5, 2.0]][a][b]
        });
        for (g, lo, hi) in [
            ([-1.0, 2.0, -3.0], [-0.1, -0.1, -0.1], [0.2, 0.2, 0.2]),
            ([-10.0, 2.0, 0.3], [-1.0, -0.05, -1.0], [1.0, 1.0, 1.0]),
            ([0.1, 0.1, 0.1], [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]),
            ([-1.0, -1.0, -1.0], [0.0, 0.0, 0.0], [0.0, 5.0, 5.0]),
        ] {
            let x = box_qp(&h, &g, &lo, &hi);
            for a in 0..3 {
                let grad = g[a] + (0..3).map(|b| h[(a, b)] * x[b]).sum::<f64>();
                assert!(x[a] >= lo[a] - 1e-15 && x[a] <= hi[a] + 1e-15);
                if x[a] > lo[a] + 1e-12 && x[a] < hi[a] - 1e-12 {
                    assert!(grad.abs() < 1e-10, "{g:?}: free {a} has gradient {grad}");
                } else if x[a] <= lo[a] + 1e-12 && lo[a] < hi[a] {
                    assert!(
                        grad >= -1e-10,
                        "{g:?}: lower bound {a} with gradient {grad}"
                    );
                } else if lo[a] < hi[a] {
                    assert!(grad <= 1e-10, "{g:?}: upper bound {a} with gradient {grad}");
                }
            }
        }
    }

    /// A model without curvature (no free support vectors, the regularisation below the
    /// smallest normal number: the Newton direction overflows) goes to the bounds its
    /// gradient points at.
    #[test]
    fn box_qp_without_curvature_goes_to_the_bounds() {
        let h = Mat::from_fn(3, 3, |a, b| if a == b { 1e-318 } else { 0.0 });
        let x = box_qp(&h, &[-0.1, -0.2, 0.3], &[0.0, 0.0, -1.0], &[3.0, 2.0, 1.0]);
        assert_eq!(x, vec![3.0, 2.0, -1.0]);
    }
}
