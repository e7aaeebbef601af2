use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::features::SplitMix;
use crate::kernels::DenseStack;

/// Uniform on (−1, 1) from the crate's seeded stream.
fn next(rng: &mut SplitMix) -> f64 {
    2.0 * rng.uniform() - 1.0
}

/// `n` points in 3-D, Gaussian kernels on each feature (widths 0.5 and 2) and one on all
/// three; targets depend on features 0 and 1 (labels ±1 when `classify`).
fn problem(n: usize, classify: bool) -> (Vec<f64>, usize, Vec<f64>) {
    let mut rng = SplitMix(3);
    let x: Vec<[f64; 3]> = (0..n)
        .map(|_| [next(&mut rng), next(&mut rng), next(&mut rng)])
        .collect();
    let y: Vec<f64> = x
        .iter()
        .map(|p| {
            let t = (2.0 * p[0]).sin() + p[1] * p[1] - 0.3 + 0.2 * next(&mut rng);
            if classify {
                t.signum()
            } else {
                t
            }
        })
        .collect();
    let feats: Vec<(Vec<usize>, f64)> = vec![
        (vec![0], 0.5),
        (vec![0], 2.0),
        (vec![1], 0.5),
        (vec![1], 2.0),
        (vec![2], 0.5),
        (vec![2], 2.0),
        (vec![0, 1, 2], 1.0),
    ];
    let m = feats.len();
    let mut g = vec![0.0; m * n * n];
    for (k, (cols, w)) in feats.iter().enumerate() {
        for i in 0..n {
            for j in 0..n {
                let d2: f64 = cols.iter().map(|&c| (x[i][c] - x[j][c]).powi(2)).sum();
                g[k * n * n + i * n + j] = (-d2 / w).exp();
            }
        }
    }
    (g, m, y)
}

/// The path's loss for labels (`classify`) or real targets.
fn loss_of(classify: bool) -> Loss {
    if classify {
        Loss::Logistic
    } else {
        Loss::Squared
    }
}

fn path(g: &[f64], m: usize, y: &[f64], cfg: &PathConfig) -> PathResult {
    let stack = DenseStack::new(g, m, y.len()).unwrap();
    fit_path(&stack, y, cfg, &NoInterrupt).unwrap()
}

#[test]
fn every_point_is_certified_within_the_barrier_gap() {
    for classify in [false, true] {
        let (g, m, y) = problem(40, classify);
        let mu = 1e-3;
        let cfg = PathConfig {
            loss: loss_of(classify),
            mu: Some(mu),
            ..PathConfig::default()
        };
        let r = path(&g, m, &y, &cfg);
        assert_eq!(r.end, PathEnd::Complete);
        assert!(r.points.len() >= 5, "{} points", r.points.len());
        let last = r.points.last().unwrap();
        assert!((last.c / (1e3 * r.c0) - 1.0).abs() < 1e-9);
        for w in r.points.windows(2) {
            assert!(w[1].c > w[0].c);
        }
        for p in &r.points {
            // P ≥ D, and P − D within 1.5× the exact barrier gap ≤ Mμ/2 (plus rounding).
            let abs_gap = p.primal - p.dual;
            assert!(
                abs_gap >= -1e-10 * p.primal.abs(),
                "negative gap {abs_gap:e}"
            );
            assert!(
                abs_gap <= 1.5 * m as f64 * mu / 2.0 + 1e-9,
                "gap {abs_gap:e}"
            );
            assert_eq!(p.mu, mu);
            assert!(p.eta.iter().all(|e| *e >= 0.0 && e.is_finite()));
            // P is the objective of the reported model A[j] = −η_j α (kernels off their
            // boundary may be left out, η_j = 0).
            let n = y.len();
            let mut f = vec![0.0; n];
            let mut pen = 0.0;
            for (j, &e) in p.eta.iter().enumerate() {
                let k = &g[j * n * n..(j + 1) * n * n];
                let kj: Vec<f64> = (0..n)
                    .map(|i| dot(&k[i * n..(i + 1) * n], &p.alpha))
                    .collect();
                pen += r.weights[j] * e * dot(&kj, &p.alpha).max(0.0).sqrt();
                axpy(-e, &kj, &mut f);
            }
            let data: f64 = f
                .iter()
                .zip(&y)
                .map(|(&fi, &yi)| cfg.loss.value(yi, fi))
                .sum();
            let want = p.c * data + pen;
            assert!(
                (p.primal - want).abs() <= 1e-9 * want.abs(),
                "{} vs {want}",
                p.primal
            );
        }
    }
}

/// With one kernel the path is kernel ridge regression with a self-consistent ridge:
/// `f = K(K + νI)⁻¹y` with `ν‖f‖ = d/C`, found here by bisection on ν.
#[test]
fn one_kernel_is_ridge_with_a_self_consistent_ridge() {
    let (g, _, y) = problem(30, false);
    let n = y.len();
    let k = &g[6 * n * n..7 * n * n];
    let r = path(
        k,
        1,
        &y,
        &PathConfig {
            mu: Some(1e-6),
            ..PathConfig::default()
        },
    );
    let d = r.weights[0];
    let ridge = |nu: f64| -> (Vec<f64>, f64) {
        let mut a = k.to_vec();
        for i in 0..n {
            a[i * n + i] += nu;
        }
        let c = Cholesky::new(&a, n).unwrap();
        let coef = c.solve(&y);
        let f: Vec<f64> = (0..n).map(|i| dot(&k[i * n..(i + 1) * n], &coef)).collect();
        let norm = dot(&coef, &f).max(0.0).sqrt();
        (f, norm)
    };
    let mut checked = 0;
    for p in r.points.iter().filter(|p| p.c > 2.0 * r.c0) {
        // ν ‖f_ν‖ is increasing in ν: bisect on log ν for ν ‖f_ν‖ = d/C.
        let (mut lo, mut hi) = (1e-12f64, 1e6f64);
        for _ in 0..200 {
            let mid = (lo * hi).sqrt();
            if mid * ridge(mid).1 > d / p.c {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let (f_ref, _) = ridge(lo);
        let f: Vec<f64> = (0..n)
            .map(|i| -p.eta[0] * dot(&k[i * n..(i + 1) * n], &p.alpha))
            .collect();
        let err = f
            .iter()
            .zip(&f_ref)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let scale = f_ref.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        assert!(err <= 1e-3 * scale, "C = {}: {err:e} vs {scale:e}", p.c);
        checked += 1;
    }
    assert!(checked >= 3);
}

#[test]
fn weights_scale_with_the_kernels() {
    // Scaling K_j by s and d_j by sqrt(s) leaves the path unchanged (‖f‖ scales by 1/sqrt(s)).
    let (g, m, y) = problem(30, false);
    let n = y.len();
    let mut scaled = g.clone();
    for v in &mut scaled[..n * n] {
        *v *= 9.0;
    }
    let base = path(&g, m, &y, &PathConfig::default());
    let other = path(&scaled, m, &y, &PathConfig::default());
    assert!((other.weights[0] / base.weights[0] - 3.0).abs() < 1e-12);
    assert!((other.c0 / base.c0 - 1.0).abs() < 1e-9);
    let (p, q) = (base.points.last().unwrap(), other.points.last().unwrap());
    assert!((p.primal / q.primal - 1.0).abs() < 1e-3);
}

#[test]
fn bad_settings_are_refused() {
    let (g, m, y) = problem(20, false);
    let stack = DenseStack::new(&g, m, y.len()).unwrap();
    let bad = |cfg: PathConfig| fit_path(&stack, &y, &cfg, &NoInterrupt).unwrap_err();
    assert!(matches!(
        bad(PathConfig {
            loss: Loss::Hinge,
            ..PathConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
    assert!(matches!(
        bad(PathConfig {
            mu: Some(0.0),
            ..PathConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
    assert!(matches!(
        bad(PathConfig {
            c_max: Some(1e-9),
            ..PathConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
    assert!(matches!(
        bad(PathConfig {
            weights: Some(vec![1.0; m - 1]),
            ..PathConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
    assert!(matches!(
        bad(PathConfig {
            loss: Loss::Logistic,
            ..PathConfig::default()
        }),
        MkError::InvalidConfig { .. }
    ));
}

/// With μ following P (the default), every point's relative gap is at most `tol`, for two
/// tolerances and both losses, while the barrier weight varies along the path; a fixed μ of
/// the same order misses `tol` near `C₀` on this problem, so the rule is what holds it.
#[test]
fn adaptive_mu_keeps_every_relative_gap_within_tol() {
    for classify in [false, true] {
        let (g, m, y) = problem(40, classify);
        let loss = loss_of(classify);
        for tol in [1e-2, 1e-4] {
            let r = path(
                &g,
                m,
                &y,
                &PathConfig {
                    loss,
                    tol,
                    ..PathConfig::default()
                },
            );
            assert_eq!(r.end, PathEnd::Complete);
            for p in &r.points {
                assert!(
                    p.gap <= tol && p.gap >= -1e-9,
                    "C = {}: gap {:e}",
                    p.c,
                    p.gap
                );
            }
            let (lo, hi) = r.points.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| {
                (a.min(p.mu), b.max(p.mu))
            });
            assert!(hi > 2.0 * lo, "μ in [{lo:e}, {hi:e}]");
            // One μ for the whole path, the largest the rule chose, misses tol near C₀.
            let fixed = path(
                &g,
                m,
                &y,
                &PathConfig {
                    loss,
                    mu: Some(hi),
                    ..PathConfig::default()
                },
            );
            assert!(fixed.points.iter().any(|p| p.gap > tol));
        }
    }
}

/// Chord steps on the predictor's factor change the work, not the path: both paths' points,
/// interpolated in log C, agree within their certified gaps, with fewer factorisations.
#[test]
fn reused_factorisations_give_the_same_path_within_the_gaps() {
    for classify in [false, true] {
        let (g, m, y) = problem(40, classify);
        let cfg = PathConfig {
            loss: loss_of(classify),
            ..PathConfig::default()
        };
        let chord = path(&g, m, &y, &cfg);
        let newton = path(
            &g,
            m,
            &y,
            &PathConfig {
                reuse_factors: false,
                ..cfg
            },
        );
        assert!(chord.factorizations < newton.factorizations);
        // Both end at C_max, where each brackets the optimum by its certificate.
        let (p, q) = (chord.points.last().unwrap(), newton.points.last().unwrap());
        assert!((p.c / q.c - 1.0).abs() < 1e-9);
        assert!((p.primal - q.primal).abs() <= (p.primal - p.dual) + (q.primal - q.dual));
        assert_brackets(&chord, &newton);
    }
}

/// The optimal value is increasing in C: at each point of `one` it lies between `other`'s
/// certified values at the neighbouring points, `[D(a), P(b)]`.
fn assert_brackets(one: &PathResult, other: &PathResult) {
    for p in &one.points {
        let k = other.points.partition_point(|q| q.c <= p.c);
        if k == 0 || k == other.points.len() {
            continue;
        }
        let (a, b) = (&other.points[k - 1], &other.points[k]);
        assert!(p.primal >= a.dual - 1e-9, "C = {}", p.c);
        assert!(p.dual <= b.primal + 1e-9, "C = {}", p.c);
    }
}

/// The working set of kernels changes the barrier, not the problem: every point of a path
/// whose barrier holds only the kernels near their boundary is certified for the whole
/// problem, and both paths bracket the same optimal values; the barrier holds fewer kernels.
#[test]
fn a_working_set_path_is_certified_for_the_whole_problem() {
    // 24 kernels: the 7 of `problem` at four scales of their widths' exponent, so that many
    // stay far from their boundary.
    for classify in [false, true] {
        let (g7, m7, y) = problem(40, classify);
        let n = y.len();
        let mut g = Vec::with_capacity(4 * g7.len());
        for p in [1.0, 0.5, 2.0, 4.0] {
            g.extend(g7.iter().map(|v: &f64| v.powf(p)));
        }
        let m = 4 * m7;
        let cfg = PathConfig {
            loss: loss_of(classify),
            ..PathConfig::default()
        };
        let all = path(
            &g,
            m,
            &y,
            &PathConfig {
                working_set: None,
                ..cfg.clone()
            },
        );
        assert!(all.points.iter().all(|p| p.barrier_kernels == m));
        // The default admission, and one so late that α crosses idle ellipsoids and the
        // path has to return to its last point inside them.
        let late = path(
            &g,
            m,
            &y,
            &PathConfig {
                working_set: Some(0.999),
                ..cfg.clone()
            },
        );
        // (Measured: the squared path returns twice; the logistic one never crosses.)
        assert!(classify || late.returns > 0);
        for ws in [path(&g, m, &y, &cfg), late] {
            assert_eq!(ws.end, PathEnd::Complete);
            assert!(ws.points.iter().any(|p| p.barrier_kernels < m));
            assert!(ws.points.windows(2).all(|w| w[0].c < w[1].c));
            let stack = DenseStack::new(&g, m, n).unwrap();
            for p in &ws.points {
                assert!(p.gap <= cfg.tol * 1.0001, "gap {} at C = {}", p.gap, p.c);
                // The dual point α/max(1, max_j r_j/d_j) is feasible for every kernel: r_j ≤ d_j.
                let mut q = vec![0.0; m];
                stack.quad_forms(&p.alpha, &mut q);
                let scale = q
                    .iter()
                    .zip(&ws.weights)
                    .map(|(q, d)| q.max(0.0).sqrt() / d)
                    .fold(1.0f64, f64::max);
                assert!(scale < 1.0 + 1e-9, "α outside an ellipsoid by {scale}");
                // The recorded dual value is the whole problem's at that point.
                let lam = 1.0 / p.c;
                let psi: f64 = p
                    .alpha
                    .iter()
                    .zip(&y)
                    .map(|(&a, &yi)| cfg.loss.conjugate(yi, lam * a))
                    .sum();
                assert!((-p.c * psi - p.dual).abs() <= 1e-9 * p.dual.abs().max(1.0));
                // The primal of the model A[j] = −η_j α, recomputed with every kernel.
                let mut f = vec![0.0; n];
                let mut kv = vec![0.0; n];
                let mut pen = 0.0;
                for (j, (&e, &qj)) in p.eta.iter().zip(&q).enumerate() {
                    if e > 0.0 {
                        stack.matvec(j, &p.alpha, &mut kv);
                        axpy(-e, &kv, &mut f);
                        pen += ws.weights[j] * e * qj.max(0.0).sqrt();
                    }
                }
                let data: f64 = f
                    .iter()
                    .zip(&y)
                    .map(|(&fi, &yi)| cfg.loss.value(yi, fi))
                    .sum();
                let primal = p.c * data + pen;
                assert!(
                    (primal - p.primal).abs() <= 1e-9 * primal.abs(),
                    "{primal} vs {}",
                    p.primal
                );
            }
            assert_brackets(&ws, &all);
        }
    }
}

/// A stack of random factors `K_j = G_jG_jᵀ` (`n = 40`, four kernels of rank 3) and the same
/// kernels as a dense stack.
fn low_rank_problem() -> (LowRankStack, Vec<f64>, Vec<f64>) {
    let (n, m, r) = (40, 4, 3);
    let mut rng = SplitMix(11);
    let factors: Vec<Vec<f64>> = (0..m)
        .map(|_| (0..n * r).map(|_| next(&mut rng) / 2.0).collect())
        .collect();
    let mut dense = vec![0.0; m * n * n];
    for (k, g) in factors.iter().enumerate() {
        for col in g.chunks_exact(n) {
            for i in 0..n {
                for j in 0..n {
                    dense[k * n * n + i * n + j] += col[i] * col[j];
                }
            }
        }
    }
    let y = (0..n).map(|_| next(&mut rng)).collect();
    (LowRankStack::from_factors(n, factors).unwrap(), dense, y)
}

/// The Hessian of a stack of factors is factorised at its total rank (12 < n = 40) and solves
/// exactly like the dense stack's `n × n` factor.
#[test]
fn low_rank_hessians_solve_like_dense_ones() {
    let (lr, dense, y) = low_rank_problem();
    let (n, m) = (lr.n(), lr.m());
    let ds = DenseStack::new(&dense, m, n).unwrap();
    let ones = vec![1.0; m];
    let unit = vec![1.0; n];
    let barrier = |stack| {
        Barrier::new(
            stack,
            (0..m).collect(),
            &ones,
            &y,
            &unit,
            Loss::Squared,
            Some(0.3),
        )
    };
    let (mut a, mut b) = (barrier(&lr), barrier(&ds));
    let alpha: Vec<f64> = (0..n).map(|i| ((i * 7 % 5) as f64 - 2.0) / 10.0).collect();
    let (ia, ib) = (a.products(&alpha), b.products(&alpha));
    let eta = [0.5, 2.0, 1e-3, 7.0];
    let (fa, fb) = (
        a.factor(&ia, 0.7, &eta).unwrap(),
        b.factor(&ib, 0.7, &eta).unwrap(),
    );
    assert!(matches!(fa, SpdFactor::DiagPlusLowRank(_)));
    assert!(matches!(fb, SpdFactor::Dense(_)));
    let rhs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.3).cos()).collect();
    let (xa, xb) = (fa.solve(&rhs), fb.solve(&rhs));
    for (p, q) in xa.iter().zip(&xb) {
        assert!((p - q).abs() <= 1e-9 * (1.0 + q.abs()), "{p} vs {q}");
    }
}

/// A whole path on the factors equals the path on the dense stack, within the certificates.
#[test]
fn a_low_rank_path_follows_the_dense_one() {
    let (lr, dense, y) = low_rank_problem();
    let cfg = PathConfig::default();
    let low = fit_path(&lr, &y, &cfg, &NoInterrupt).unwrap();
    let full = path(&dense, lr.m(), &y, &cfg);
    assert_eq!(low.end, PathEnd::Complete);
    let (p, q) = (low.points.last().unwrap(), full.points.last().unwrap());
    assert!((p.c / q.c - 1.0).abs() < 1e-9);
    assert!((p.primal - q.primal).abs() <= (p.primal - p.dual) + (q.primal - q.dual) + 1e-12);
    assert_eq!(low.points.len(), full.points.len());
    for (p, q) in low.points.iter().zip(&full.points) {
        assert!((p.c / q.c - 1.0).abs() < 1e-6, "{} vs {}", p.c, q.c);
    }
}

/// Integer sample weights equal duplicated rows: the same default `d_j` and `C₀`, and at the
/// same ends of the path (`C_max` = 3, 30 and 1000 `C₀`) primal values within the two certificates and the same
/// block norms; the unweighted path differs, which shows the weights are read.
#[test]
fn integer_weights_follow_the_path_of_duplicated_rows() {
    for classify in [false, true] {
        let (mut g, m, y) = problem(30, classify);
        let n = y.len();
        // A varying diagonal on kernel 0 (D K D): the default d_j is a weighted mean.
        let s: Vec<f64> = (0..n).map(|i| 1.0 + 0.5 * (i as f64).sin()).collect();
        for i in 0..n {
            for j in 0..n {
                g[i * n + j] *= s[i] * s[j];
            }
        }
        let w: Vec<f64> = (0..n).map(|i| (1 + i % 3) as f64).collect();
        let rows: Vec<usize> = (0..n).flat_map(|i| vec![i; w[i] as usize]).collect();
        let nd = rows.len();
        let mut gd = vec![0.0; m * nd * nd];
        for k in 0..m {
            for (a, &i) in rows.iter().enumerate() {
                for (b, &j) in rows.iter().enumerate() {
                    gd[k * nd * nd + a * nd + b] = g[k * n * n + i * n + j];
                }
            }
        }
        let yd: Vec<f64> = rows.iter().map(|&i| y[i]).collect();
        let stack = DenseStack::new(&g, m, n).unwrap();
        let base = PathConfig {
            loss: loss_of(classify),
            tol: 1e-6,
            ..PathConfig::default()
        };
        let c0 = fit_path_weighted(&stack, &y, Some(&w), &base, &NoInterrupt)
            .unwrap()
            .c0;
        let unweighted = fit_path(&stack, &y, &base, &NoInterrupt).unwrap().c0;
        assert!((unweighted / c0 - 1.0).abs() > 1e-3, "{unweighted} vs {c0}");
        for end in [3.0, 30.0, 1000.0] {
            let cfg = PathConfig {
                c_max: Some(end * c0),
                ..base.clone()
            };
            let a = fit_path_weighted(&stack, &y, Some(&w), &cfg, &NoInterrupt).unwrap();
            let b = path(&gd, m, &yd, &cfg);
            assert!((a.c0 / b.c0 - 1.0).abs() < 1e-12, "{} vs {}", a.c0, b.c0);
            for (p, q) in a.weights.iter().zip(&b.weights) {
                assert!((p / q - 1.0).abs() < 1e-12, "d {p} vs {q}");
            }
            let (p, q) = (a.points.last().unwrap(), b.points.last().unwrap());
            assert!(
                (p.c / q.c - 1.0).abs() < 1e-9,
                "C = {end} C₀: ends {} and {} at {:?} and {:?}",
                p.c,
                q.c,
                a.end,
                b.end
            );
            let slack = (p.primal - p.dual) + (q.primal - q.dual) + 1e-12 * q.primal;
            assert!(
                (p.primal - q.primal).abs() <= slack,
                "C = {end} C₀: {} vs {} (gaps allow {slack:e})",
                p.primal,
                q.primal
            );
            // Points within a relative gap of 1e-6 pin the norms to about its square root.
            for (s, t) in p.norms.iter().zip(&q.norms) {
                assert!((s - t).abs() <= 1e-3 * (1.0 + t), "norms {s} vs {t}");
            }
        }
    }
}
