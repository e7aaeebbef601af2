//! Closed forms, an independent QP reference (FISTA with exact projection), KKT checks, warm
//! starts, shrinking, the step API and input validation.

// Index loops mirror the formulas of the reference QP.
#![allow(clippy::needless_range_loop)]

use super::*;
use crate::error::MkError;
use crate::interrupt::NoInterrupt;

// ---------------------------------------------------------------- helpers

struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Points in 3-d, two shifted Gaussian clouds with some overlap; labels ±1 and a real target.
fn data(n: usize, seed: u64) -> (Vec<[f64; 3]>, Vec<f64>, Vec<f64>) {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut x = Vec::with_capacity(n);
    let mut y = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let yi = if i % 2 == 0 { 1.0 } else { -1.0 };
        let p = [r.normal() + 0.8 * yi, r.normal() - 0.3 * yi, r.normal()];
        t.push(p[0].sin() + 0.5 * p[1] + 0.1 * r.normal());
        x.push(p);
        y.push(yi);
    }
    (x, y, t)
}

fn gaussian(x: &[[f64; 3]], gamma: f64) -> Vec<f64> {
    let n = x.len();
    let mut k = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let d: f64 = (0..3).map(|c| (x[i][c] - x[j][c]).powi(2)).sum();
            k[i * n + j] = (-gamma * d).exp();
        }
    }
    k
}

/// A generic QP in explicit dense form, built independently of the solver.
struct DenseQp {
    q: Vec<f64>,
    p: Vec<f64>,
    y: Vec<f64>,
    upper: Vec<f64>,
    delta: f64,
}

impl DenseQp {
    fn l(&self) -> usize {
        self.p.len()
    }
    fn grad(&self, a: &[f64]) -> Vec<f64> {
        let l = self.l();
        (0..l)
            .map(|s| self.p[s] + (0..l).map(|t| self.q[s * l + t] * a[t]).sum::<f64>())
            .collect()
    }
    fn objective(&self, a: &[f64]) -> f64 {
        let g = self.grad(a);
        0.5 * a
            .iter()
            .zip(&g)
            .zip(&self.p)
            .map(|((a, g), p)| a * (g + p))
            .sum::<f64>()
    }

    fn svc(k: &[f64], y: &[f64], c: &[f64]) -> Self {
        let n = y.len();
        let mut q = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                q[i * n + j] = y[i] * y[j] * k[i * n + j];
            }
        }
        Self {
            q,
            p: vec![-1.0; n],
            y: y.to_vec(),
            upper: c.to_vec(),
            delta: 0.0,
        }
    }
    fn l2svm(k: &[f64], y: &[f64], c: f64) -> Self {
        let mut qp = Self::svc(k, y, &vec![f64::INFINITY; y.len()]);
        let n = y.len();
        for i in 0..n {
            qp.q[i * n + i] += 1.0 / c;
        }
        qp
    }
    fn svr(k: &[f64], t: &[f64], c: f64, eps: f64) -> Self {
        let n = t.len();
        let l = 2 * n;
        let s: Vec<f64> = (0..l).map(|i| if i < n { 1.0 } else { -1.0 }).collect();
        let mut q = vec![0.0; l * l];
        for a in 0..l {
            for b in 0..l {
                q[a * l + b] = s[a] * s[b] * k[(a % n) * n + b % n];
            }
        }
        let p = t
            .iter()
            .map(|t| eps - t)
            .chain(t.iter().map(|t| eps + t))
            .collect();
        Self {
            q,
            p,
            y: s,
            upper: vec![c; l],
            delta: 0.0,
        }
    }
    fn one_class(k: &[f64], n: usize, nu: f64) -> Self {
        Self {
            q: k.to_vec(),
            p: vec![0.0; n],
            y: vec![1.0; n],
            upper: vec![1.0; n],
            delta: nu * n as f64,
        }
    }

    /// Euclidean projection onto `{yᵀα = Δ, 0 ≤ α ≤ U}`: `α(λ) = clip(v + λy)`, with `yᵀα(λ)`
    /// nondecreasing in λ, solved by bisection.
    fn project(&self, v: &[f64], out: &mut [f64]) {
        let h = |lam: f64, out: &mut [f64]| -> f64 {
            let mut s = 0.0;
            for t in 0..v.len() {
                out[t] = (v[t] + lam * self.y[t]).clamp(0.0, self.upper[t]);
                s += self.y[t] * out[t];
            }
            s
        };
        let (mut lo, mut hi) = (-1.0, 1.0);
        while h(lo, out) > self.delta {
            lo *= 2.0;
        }
        while h(hi, out) < self.delta {
            hi *= 2.0;
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if h(mid, out) < self.delta {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        h(0.5 * (lo + hi), out);
    }

    /// FISTA with gradient restart, step 1/L (L = Gershgorin bound of Q).
    fn reference(&self, iters: usize) -> (Vec<f64>, f64) {
        let l = self.l();
        let lips = (0..l)
            .map(|s| (0..l).map(|t| self.q[s * l + t].abs()).sum::<f64>())
            .fold(0.0, f64::max);
        let mut x = vec![0.0; l];
        let start: Vec<f64> = vec![self.delta.abs() / l as f64; l];
        self.project(&start, &mut x);
        let mut z = x.clone();
        let mut xn = x.clone();
        let mut tk = 1.0f64;
        let mut v = vec![0.0; l];
        for _ in 0..iters {
            let g = self.grad(&z);
            for t in 0..l {
                v[t] = z[t] - g[t] / lips;
            }
            self.project(&v, &mut xn);
            let tn = 0.5 * (1.0 + (1.0 + 4.0 * tk * tk).sqrt());
            // Restart when the momentum direction goes uphill.
            let uphill: f64 = (0..l).map(|t| g[t] * (xn[t] - x[t])).sum();
            if uphill > 0.0 {
                tk = 1.0;
                z.copy_from_slice(&x);
                continue;
            }
            for t in 0..l {
                z[t] = xn[t] + (tk - 1.0) / tn * (xn[t] - x[t]);
            }
            x.copy_from_slice(&xn);
            tk = tn;
        }
        let f = self.objective(&x);
        (x, f)
    }

    /// Feasibility and `m(α) − M(α)` from a fresh gradient.
    fn check_kkt(&self, a: &[f64], tol: f64) {
        let l = self.l();
        assert_eq!(a.len(), l);
        let ya: f64 = a.iter().zip(&self.y).map(|(a, y)| a * y).sum();
        assert!(
            (ya - self.delta).abs() < 1e-9 * (1.0 + self.delta.abs()),
            "yᵀα = {ya}"
        );
        for t in 0..l {
            assert!(
                a[t] >= 0.0 && a[t] <= self.upper[t],
                "α_{t} = {} out of box",
                a[t]
            );
        }
        let g = self.grad(a);
        let (mut up, mut low) = (f64::NEG_INFINITY, f64::INFINITY);
        for t in 0..l {
            let v = -self.y[t] * g[t];
            let (at_up, at_low) = (a[t] >= self.upper[t], a[t] <= 0.0);
            let in_up = if self.y[t] > 0.0 { !at_up } else { !at_low };
            let in_low = if self.y[t] > 0.0 { !at_low } else { !at_up };
            if in_up {
                up = up.max(v);
            }
            if in_low {
                low = low.min(v);
            }
        }
        assert!(up - low <= tol, "KKT violation {}", up - low);
    }
}

fn tight() -> SmoOptions {
    SmoOptions {
        eps: 1e-10,
        ..SmoOptions::default()
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

/// A kernel without `column_slice`: exercises the column cache.
struct Opaque<'a>(DenseKernel<'a>);

impl KernelColumns for Opaque<'_> {
    fn n(&self) -> usize {
        self.0.n()
    }
    fn diag(&self, out: &mut [f64]) {
        self.0.diag(out)
    }
    fn column(&self, i: usize, out: &mut [f64]) {
        self.0.column(i, out)
    }
}

// ---------------------------------------------------------------- closed forms

#[test]
fn svc_two_points_closed_form() {
    // x = 2 (y = +1), x = 0 (y = −1), linear kernel: w = 1, b = −1, α = 0.5.
    let k = [4.0, 0.0, 0.0, 0.0];
    let kern = DenseKernel::new(&k, 2).unwrap();
    let y = [1.0, -1.0];
    let s = svc(&kern, &y, &[10.0], &tight(), None, &NoInterrupt).unwrap();
    assert!(s.converged);
    assert!((s.alpha[0] - 0.5).abs() < 1e-12 && (s.alpha[1] - 0.5).abs() < 1e-12);
    assert!((s.coef[1] + 0.5).abs() < 1e-12);
    assert!((s.intercept + 1.0).abs() < 1e-12);
    assert!((s.objective + 0.5).abs() < 1e-12);
    assert!((s.dual_value() - 0.5).abs() < 1e-12);

    // C = 0.25: both at the bound; any b ∈ [−1, 0] is optimal, libsvm takes the midpoint.
    let s = svc(&kern, &y, &[0.25], &tight(), None, &NoInterrupt).unwrap();
    assert_eq!(s.alpha, vec![0.25, 0.25]);
    assert!((s.intercept + 0.5).abs() < 1e-12);
    assert!((s.objective + 0.375).abs() < 1e-12);
}

#[test]
fn l2svm_two_points_closed_form() {
    // Dual: max 2α − 2α² − α²/C ⇒ α = 1/(2 + 1/C); C = 1: α = 1/3, b = −2/3, F = −1/3.
    let k = [4.0, 0.0, 0.0, 0.0];
    let kern = DenseKernel::new(&k, 2).unwrap();
    let s = l2svm(&kern, &[1.0, -1.0], &[1.0], &tight(), None, &NoInterrupt).unwrap();
    assert!(s.converged);
    assert!((s.alpha[0] - 1.0 / 3.0).abs() < 1e-12);
    assert!((s.intercept + 2.0 / 3.0).abs() < 1e-12);
    assert!((s.objective + 1.0 / 3.0).abs() < 1e-12);
    // Margin identity of the squared hinge: 1 − y f(x) = α / C.
    let f0 = s.coef[0] * 4.0 + s.intercept;
    assert!((1.0 - f0 - s.alpha[0]).abs() < 1e-12);
}

#[test]
fn svr_two_points_closed_form() {
    // K = I, y = (1, −1), ε = 0.1, large C: β = (0.9, −0.9), b = 0, F = −0.81.
    let k = [1.0, 0.0, 0.0, 1.0];
    let kern = DenseKernel::new(&k, 2).unwrap();
    let s = svr(
        &kern,
        &[1.0, -1.0],
        &[100.0],
        0.1,
        &tight(),
        None,
        &NoInterrupt,
    )
    .unwrap();
    assert!(s.converged);
    assert_eq!(s.alpha.len(), 4);
    assert!((s.coef[0] - 0.9).abs() < 1e-12 && (s.coef[1] + 0.9).abs() < 1e-12);
    assert!(s.intercept.abs() < 1e-12);
    assert!((s.objective + 0.81).abs() < 1e-12);
}

#[test]
fn one_class_two_points_closed_form() {
    // K = I, ν = 0.5: Σα = 1, min ½‖α‖² ⇒ α = (½, ½), ρ = 0.5, F = 0.25.
    let k = [1.0, 0.0, 0.0, 1.0];
    let kern = DenseKernel::new(&k, 2).unwrap();
    let s = one_class(&kern, 0.5, &[1.0], &tight(), None, &NoInterrupt).unwrap();
    assert!(s.converged);
    assert!((s.alpha[0] - 0.5).abs() < 1e-12 && (s.alpha[1] - 0.5).abs() < 1e-12);
    assert!((s.rho - 0.5).abs() < 1e-12 && (s.intercept + 0.5).abs() < 1e-12);
    assert!((s.objective - 0.25).abs() < 1e-12);
}

// ---------------------------------------------------------------- independent reference

#[test]
fn svc_matches_reference_qp() {
    for (seed, c) in [(1, 0.1), (2, 1.0), (3, 10.0), (4, 1000.0)] {
        let (x, y, _) = data(8, seed);
        let k = gaussian(&x, 0.5);
        let kern = DenseKernel::new(&k, 8).unwrap();
        // Per-sample C, as class weights would give.
        let cs: Vec<f64> = y
            .iter()
            .map(|&y| if y > 0.0 { c } else { 2.0 * c })
            .collect();
        let qp = DenseQp::svc(&k, &y, &cs);
        let (_, f_ref) = qp.reference(20_000);
        for shrinking in [true, false] {
            let opts = SmoOptions {
                shrinking,
                ..tight()
            };
            let s = svc(&kern, &y, &cs, &opts, None, &NoInterrupt).unwrap();
            qp.check_kkt(&s.alpha, 1e-8);
            assert!(close(s.objective, qp.objective(&s.alpha), 1e-12));
            assert!(
                close(s.objective, f_ref, 1e-9),
                "C={c}: {} vs {f_ref}",
                s.objective
            );
        }
    }
}

#[test]
fn l2svm_matches_reference_qp() {
    for (seed, c) in [(5, 0.1), (6, 1.0), (7, 100.0)] {
        let (x, y, _) = data(8, seed);
        let k = gaussian(&x, 0.5);
        let kern = DenseKernel::new(&k, 8).unwrap();
        let qp = DenseQp::l2svm(&k, &y, c);
        let (a_ref, f_ref) = qp.reference(20_000);
        let s = l2svm(&kern, &y, &[c], &tight(), None, &NoInterrupt).unwrap();
        qp.check_kkt(&s.alpha, 1e-8);
        assert!(
            close(s.objective, f_ref, 1e-9),
            "C={c}: {} vs {f_ref}",
            s.objective
        );
        // Strictly convex: α is unique.
        for (a, b) in s.alpha.iter().zip(&a_ref) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
}

#[test]
fn svr_matches_reference_qp() {
    for (seed, c, eps) in [
        (8, 0.1, 0.1),
        (9, 1.0, 0.0),
        (10, 10.0, 0.2),
        (11, 100.0, 0.05),
    ] {
        let (x, _, t) = data(6, seed);
        let k = gaussian(&x, 0.3);
        let kern = DenseKernel::new(&k, 6).unwrap();
        let qp = DenseQp::svr(&k, &t, c, eps);
        let (_, f_ref) = qp.reference(30_000);
        for shrinking in [true, false] {
            let opts = SmoOptions {
                shrinking,
                ..tight()
            };
            let s = svr(&kern, &t, &[c], eps, &opts, None, &NoInterrupt).unwrap();
            qp.check_kkt(&s.alpha, 1e-8);
            assert!(close(s.objective, qp.objective(&s.alpha), 1e-12));
            assert!(
                close(s.objective, f_ref, 1e-9),
                "C={c}: {} vs {f_ref}",
                s.objective
            );
        }
    }
}

#[test]
fn one_class_matches_reference_qp() {
    for (seed, nu) in [(12, 0.1), (13, 0.35), (14, 0.5), (15, 0.9), (16, 1.0)] {
        let (x, _, _) = data(8, seed);
        let k = gaussian(&x, 0.5);
        let kern = DenseKernel::new(&k, 8).unwrap();
        let qp = DenseQp::one_class(&k, 8, nu);
        let (_, f_ref) = qp.reference(20_000);
        let s = one_class(&kern, nu, &[1.0], &tight(), None, &NoInterrupt).unwrap();
        qp.check_kkt(&s.alpha, 1e-8);
        assert!(
            close(s.objective, f_ref, 1e-9),
            "ν={nu}: {} vs {f_ref}",
            s.objective
        );
        assert!((s.alpha.iter().sum::<f64>() - nu * 8.0).abs() < 1e-10);
    }
}

#[test]
fn kkt_and_intercept_on_larger_problems() {
    let n = 120;
    let (x, y, t) = data(n, 21);
    let k = gaussian(&x, 0.4);
    let kern = DenseKernel::new(&k, n).unwrap();
    let cs = vec![1.0; n];

    let s = svc(&kern, &y, &cs, &tight(), None, &NoInterrupt).unwrap();
    DenseQp::svc(&k, &y, &cs).check_kkt(&s.alpha, 1e-8);
    // Free SVs lie on the margin: y_i f(x_i) = 1.
    let f = |coef: &[f64], b: f64, i: usize| -> f64 {
        (0..n).map(|j| coef[j] * k[i * n + j]).sum::<f64>() + b
    };
    let mut free = 0;
    for i in 0..n {
        if s.alpha[i] > 1e-8 && s.alpha[i] < 1.0 - 1e-8 {
            free += 1;
            assert!((y[i] * f(&s.coef, s.intercept, i) - 1.0).abs() < 1e-7);
        }
    }
    assert!(free > 0);

    let s = l2svm(&kern, &y, &[2.0], &tight(), None, &NoInterrupt).unwrap();
    DenseQp::l2svm(&k, &y, 2.0).check_kkt(&s.alpha, 1e-8);
    for i in 0..n {
        if s.alpha[i] > 1e-8 {
            let margin = 1.0 - y[i] * f(&s.coef, s.intercept, i);
            assert!((margin - s.alpha[i] / 2.0).abs() < 1e-7);
        }
    }

    let s = svr(&kern, &t, &[3.0], 0.1, &tight(), None, &NoInterrupt).unwrap();
    DenseQp::svr(&k, &t, 3.0, 0.1).check_kkt(&s.alpha, 1e-8);
    for i in 0..n {
        let (a, b) = (s.alpha[i], s.alpha[n + i]);
        assert!(a * b < 1e-12, "α and α* both nonzero");
        if (a > 1e-8 && a < 3.0 - 1e-8) || (b > 1e-8 && b < 3.0 - 1e-8) {
            // Free SVs lie on the tube's edge.
            let r = t[i] - f(&s.coef, s.intercept, i);
            assert!((r.abs() - 0.1).abs() < 1e-7, "residual {r}");
        }
    }

    let s = one_class(&kern, 0.3, &[1.0], &tight(), None, &NoInterrupt).unwrap();
    DenseQp::one_class(&k, n, 0.3).check_kkt(&s.alpha, 1e-8);
    for i in 0..n {
        if s.alpha[i] > 1e-8 && s.alpha[i] < 1.0 - 1e-8 {
            assert!(f(&s.coef, s.intercept, i).abs() < 1e-7);
        }
    }
}

// ---------------------------------------------------------------- solver behaviour

/// Once shrinking leaves at most half the kernel active, the steps read a compact copy of
/// the working kernel that follows every swap: the solution must be the unshrunk one, for a
/// C-SVC and an ε-SVR (two variables per kernel row), on a dense and an opaque kernel.
#[test]
fn compact_working_kernel_gives_the_unshrunk_solution() {
    let n = 400;
    let (x, y, t) = data(n, 17);
    let k = gaussian(&x, 0.5);
    let dense = DenseKernel::new(&k, n).unwrap();
    let opaque = Opaque(dense);
    let (eps, c) = (0.1, 10.0);
    let svc_p = vec![-1.0; n];
    let svr_p: Vec<f64> = t
        .iter()
        .map(|ti| eps - ti)
        .chain(t.iter().map(|ti| eps + ti))
        .collect();
    let svr_y: Vec<f64> = [1.0, -1.0].iter().flat_map(|&s| vec![s; n]).collect();
    let svr_k: Vec<usize> = (0..n).chain(0..n).collect();
    let upper = vec![c; 2 * n];
    let specs = [
        QpSpec {
            p: &svc_p,
            y: &y,
            upper: &upper[..n],
            diag_shift: None,
            kernel_index: None,
        },
        QpSpec {
            p: &svr_p,
            y: &svr_y,
            upper: &upper,
            diag_shift: None,
            kernel_index: Some(&svr_k),
        },
    ];
    let kernels: [&dyn KernelColumns; 2] = [&dense, &opaque];
    for spec in &specs {
        for kern in kernels {
            let l = spec.p.len();
            let run = |shrinking: bool| {
                let opts = SmoOptions {
                    eps: 1e-9,
                    shrinking,
                    max_iter: None,
                };
                let mut st = SmoState::new(kern, spec, &vec![0.0; l], &opts).unwrap();
                let mut largest = 0;
                let mut steps = 0;
                while let StepOutcome::Step(_) = st.step(kern) {
                    largest = largest.max(st.compact_size());
                    steps += 1;
                    assert!(steps < 1_000_000, "no convergence");
                }
                (st.objective(), st.alpha(), largest)
            };
            let (obj_on, alpha_on, compact) = run(true);
            let (obj_off, alpha_off, never) = run(false);
            assert!(compact > 0 && compact <= n / 2, "compact size {compact}");
            assert_eq!(never, 0);
            assert!(close(obj_on, obj_off, 1e-9), "{obj_on} vs {obj_off}");
            let dist = alpha_on
                .iter()
                .zip(&alpha_off)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(dist < 1e-4 * c, "max |Δα| = {dist}");
        }
    }
}

#[test]
fn shrinking_does_not_change_the_objective() {
    let n = 300;
    let (x, y, t) = data(n, 31);
    let k = gaussian(&x, 0.5);
    let kern = DenseKernel::new(&k, n).unwrap();
    let on = SmoOptions {
        eps: 1e-9,
        shrinking: true,
        max_iter: None,
    };
    let off = SmoOptions {
        shrinking: false,
        ..on.clone()
    };
    let pairs = [
        (
            svc(&kern, &y, &[1.0], &on, None, &NoInterrupt).unwrap(),
            svc(&kern, &y, &[1.0], &off, None, &NoInterrupt).unwrap(),
        ),
        (
            l2svm(&kern, &y, &[1.0], &on, None, &NoInterrupt).unwrap(),
            l2svm(&kern, &y, &[1.0], &off, None, &NoInterrupt).unwrap(),
        ),
        (
            svr(&kern, &t, &[1.0], 0.1, &on, None, &NoInterrupt).unwrap(),
            svr(&kern, &t, &[1.0], 0.1, &off, None, &NoInterrupt).unwrap(),
        ),
        (
            one_class(&kern, 0.2, &[1.0], &on, None, &NoInterrupt).unwrap(),
            one_class(&kern, 0.2, &[1.0], &off, None, &NoInterrupt).unwrap(),
        ),
    ];
    for (a, b) in &pairs {
        assert!(a.converged && b.converged);
        assert!(
            close(a.objective, b.objective, 1e-9),
            "{} vs {}",
            a.objective,
            b.objective
        );
        assert!((a.intercept - b.intercept).abs() < 1e-6);
    }
}

#[test]
fn opaque_kernel_gives_the_same_solution() {
    let n = 150;
    let (x, y, t) = data(n, 41);
    let k = gaussian(&x, 0.5);
    let dense = DenseKernel::new(&k, n).unwrap();
    let opaque = Opaque(dense);
    let opts = SmoOptions::default();
    let a = svc(&dense, &y, &[2.0], &opts, None, &NoInterrupt).unwrap();
    let b = svc(&opaque, &y, &[2.0], &opts, None, &NoInterrupt).unwrap();
    // Same arithmetic, same path: identical to rounding.
    assert_eq!(a.iterations, b.iterations);
    assert!(close(a.objective, b.objective, 1e-12));
    let a = svr(&dense, &t, &[2.0], 0.1, &opts, None, &NoInterrupt).unwrap();
    let b = svr(&opaque, &t, &[2.0], 0.1, &opts, None, &NoInterrupt).unwrap();
    assert!(close(a.objective, b.objective, 1e-9));
}

#[test]
fn warm_start_after_kernel_change_is_faster() {
    let n = 400;
    let (x, y, t) = data(n, 51);
    let k1 = gaussian(&x, 0.5);
    let k2: Vec<f64> = gaussian(&x, 0.7)
        .iter()
        .zip(&k1)
        .map(|(a, b)| 0.1 * a + 0.9 * b)
        .collect();
    let (kern1, kern2) = (
        DenseKernel::new(&k1, n).unwrap(),
        DenseKernel::new(&k2, n).unwrap(),
    );
    let opts = SmoOptions {
        eps: 1e-9,
        ..SmoOptions::default()
    };
    let first = svc(&kern1, &y, &[1.0], &opts, None, &NoInterrupt).unwrap();
    let cold = svc(&kern2, &y, &[1.0], &opts, None, &NoInterrupt).unwrap();
    let warm = svc(&kern2, &y, &[1.0], &opts, Some(&first.alpha), &NoInterrupt).unwrap();
    assert!(warm.converged && cold.converged);
    assert!(close(warm.objective, cold.objective, 1e-9));
    assert!(
        warm.iterations < cold.iterations,
        "{} ≥ {}",
        warm.iterations,
        cold.iterations
    );

    let first = svr(&kern1, &t, &[1.0], 0.1, &opts, None, &NoInterrupt).unwrap();
    let cold = svr(&kern2, &t, &[1.0], 0.1, &opts, None, &NoInterrupt).unwrap();
    let warm = svr(
        &kern2,
        &t,
        &[1.0],
        0.1,
        &opts,
        Some(&first.alpha),
        &NoInterrupt,
    )
    .unwrap();
    assert!(close(warm.objective, cold.objective, 1e-9));
    assert!(warm.iterations < cold.iterations);

    // Same through the state API: recompute the gradient on the new kernel and go on.
    let p = vec![-1.0; n];
    let upper = vec![1.0; n];
    let spec = QpSpec {
        p: &p,
        y: &y,
        upper: &upper,
        diag_shift: None,
        kernel_index: None,
    };
    let mut st = SmoState::new(&kern1, &spec, &vec![0.0; n], &opts).unwrap();
    st.solve(&kern1, &NoInterrupt).unwrap();
    st.recompute_gradient(&kern2).unwrap();
    let info = st.solve(&kern2, &NoInterrupt).unwrap();
    assert!(close(
        info.objective,
        cold_objective(&kern2, &y, &opts),
        1e-9
    ));
    assert!(info.iterations < cold.iterations.max(1) * 10);
}

#[test]
fn set_gradient_then_shrinking_solve() {
    // Ḡ is rebuilt lazily after set_gradient: a shrinking solve must still end exact.
    let n = 300;
    let (x, y, _) = data(n, 57);
    let k1 = gaussian(&x, 0.5);
    let k2 = gaussian(&x, 0.8);
    let (kern1, kern2) = (
        DenseKernel::new(&k1, n).unwrap(),
        DenseKernel::new(&k2, n).unwrap(),
    );
    let opts = SmoOptions {
        eps: 1e-9,
        ..SmoOptions::default()
    };
    let p = vec![-1.0; n];
    let upper: Vec<f64> = y.iter().map(|&v| if v > 0.0 { 0.5 } else { 0.8 }).collect();
    let spec = QpSpec {
        p: &p,
        y: &y,
        upper: &upper,
        diag_shift: None,
        kernel_index: None,
    };
    let mut st = SmoState::new(&kern1, &spec, &vec![0.0; n], &opts).unwrap();
    st.solve(&kern1, &NoInterrupt).unwrap();
    let qp2 = DenseQp::svc(&k2, &y, &upper);
    st.set_gradient(&kern2, &qp2.grad(&st.alpha())).unwrap();
    let info = st.solve(&kern2, &NoInterrupt).unwrap();
    assert!(info.converged);
    // Long enough for shrinking (every n steps) and the lazy Ḡ to be exercised.
    assert!(info.iterations > n);
    let a = st.alpha();
    qp2.check_kkt(&a, 1e-8);
    assert!(close(info.objective, qp2.objective(&a), 1e-12));
    let cold = svc(&kern2, &y, &upper, &opts, None, &NoInterrupt).unwrap();
    assert!(close(info.objective, cold.objective, 1e-9));
    // The state's gradient is exact at the end.
    for (g, r) in st.gradient().iter().zip(qp2.grad(&a)) {
        assert!((g - r).abs() < 1e-9);
    }
}

#[test]
fn warm_start_with_model_values_solves_as_with_the_columns() {
    // The gradient from the model values `K̃ coef` is the one the columns give: the same
    // steps, so the same solution, for the hinge and the squared hinge (diagonal shift).
    let n = 200;
    let (x, y, _) = data(n, 61);
    let k1 = gaussian(&x, 0.5);
    let k2 = gaussian(&x, 0.8);
    let (kern1, kern2) = (
        DenseKernel::new(&k1, n).unwrap(),
        DenseKernel::new(&k2, n).unwrap(),
    );
    let opts = SmoOptions {
        eps: 1e-6,
        ..SmoOptions::default()
    };
    let c = [2.0];
    for squared in [false, true] {
        let solve = |k: &DenseKernel<'_>, warm: Option<Warm<'_>>| {
            if squared {
                l2svm_shifted(k, &y, &c, None, &opts, warm, &NoInterrupt).unwrap()
            } else {
                svc_shifted(k, &y, &c, None, &opts, warm, &NoInterrupt).unwrap()
            }
        };
        let first = solve(&kern1, None);
        let values: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|j| k2[i * n + j] * first.coef[j]).sum())
            .collect();
        let plain = solve(&kern2, Some(Warm::at(&first.alpha)));
        let warm = Warm {
            alpha: &first.alpha,
            values: Some(&values),
        };
        let valued = solve(&kern2, Some(warm));
        assert_eq!(plain.iterations, valued.iterations, "squared {squared}");
        assert!(close(plain.objective, valued.objective, 1e-12));
        for (a, b) in plain.coef.iter().zip(&valued.coef) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + a.abs()));
        }
    }
    // Model values of the wrong length are refused.
    let first = svc(&kern1, &y, &c, &opts, None, &NoInterrupt).unwrap();
    let warm = Warm {
        alpha: &first.alpha,
        values: Some(&[0.0; 3]),
    };
    let err = svc_shifted(&kern2, &y, &c, None, &opts, Some(warm), &NoInterrupt);
    assert!(matches!(err, Err(MkError::Shape(_))));
}

fn cold_objective(k: &DenseKernel<'_>, y: &[f64], opts: &SmoOptions) -> f64 {
    svc(k, y, &[1.0], opts, None, &NoInterrupt)
        .unwrap()
        .objective
}

#[test]
fn step_api_reports_the_updates() {
    let n = 60;
    let (x, y, _) = data(n, 61);
    let k = gaussian(&x, 0.5);
    let kern = DenseKernel::new(&k, n).unwrap();
    let p = vec![-1.0; n];
    let upper = vec![0.5; n];
    let spec = QpSpec {
        p: &p,
        y: &y,
        upper: &upper,
        diag_shift: None,
        kernel_index: None,
    };
    let opts = SmoOptions {
        eps: 1e-8,
        ..SmoOptions::default()
    };
    let mut st = SmoState::new(&kern, &spec, &vec![0.0; n], &opts).unwrap();
    let mut alpha = vec![0.0; n];
    // An outer algorithm tracking its own gradient from the reported steps.
    let mut grad = p.clone();
    let mut steps = 0;
    loop {
        match st.step(&kern) {
            StepOutcome::Optimal => break,
            StepOutcome::Step(s) => {
                assert_ne!(s.i, s.j);
                alpha[s.i] += s.delta_i;
                alpha[s.j] += s.delta_j;
                for r in 0..n {
                    grad[r] += y[r]
                        * (y[s.i] * k[s.i * n + r] * s.delta_i
                            + y[s.j] * k[s.j * n + r] * s.delta_j);
                }
                steps += 1;
                if steps % 25 == 0 {
                    // Hand our gradient back, as an interleaved MKL step would.
                    st.set_gradient(&kern, &grad).unwrap();
                }
            }
        }
        assert!(steps < 100_000);
    }
    let a = st.alpha();
    for (u, v) in alpha.iter().zip(&a) {
        assert!((u - v).abs() < 1e-12);
    }
    DenseQp::svc(&k, &y, &upper).check_kkt(&a, 1e-7);
    assert_eq!(st.total_iterations(), steps);
}

#[test]
fn max_iter_stops_with_a_consistent_state() {
    let n = 200;
    let (x, y, _) = data(n, 71);
    let k = gaussian(&x, 0.5);
    let kern = DenseKernel::new(&k, n).unwrap();
    let opts = SmoOptions {
        max_iter: Some(5),
        ..SmoOptions::default()
    };
    let s = svc(&kern, &y, &[1.0], &opts, None, &NoInterrupt).unwrap();
    assert!(!s.converged);
    assert_eq!(s.iterations, 5);
    let qp = DenseQp::svc(&k, &y, &vec![1.0; n]);
    assert!(close(s.objective, qp.objective(&s.alpha), 1e-12));
    assert!(s.violation > opts.eps);
}

#[test]
fn interrupt_is_honoured() {
    let n = 50;
    let (x, y, _) = data(n, 81);
    let k = gaussian(&x, 0.5);
    let kern = DenseKernel::new(&k, n).unwrap();
    let stop = || true;
    let r = svc(&kern, &y, &[1.0], &SmoOptions::default(), None, &stop);
    assert_eq!(r.unwrap_err(), MkError::Interrupted);
}

#[test]
fn invalid_inputs_are_rejected() {
    let k = [1.0, 0.0, 0.0, 1.0];
    let kern = DenseKernel::new(&k, 2).unwrap();
    let o = SmoOptions::default();
    let ni = &NoInterrupt;
    let is_config =
        |r: crate::error::Result<SvmSolution>| matches!(r, Err(MkError::InvalidConfig { .. }));
    let is_shape = |r: crate::error::Result<SvmSolution>| matches!(r, Err(MkError::Shape(_)));
    assert!(DenseKernel::new(&k, 3).is_err());
    assert!(is_config(svc(&kern, &[1.0, 1.0], &[1.0], &o, None, ni)));
    assert!(is_config(svc(&kern, &[1.0, 0.0], &[1.0], &o, None, ni)));
    assert!(is_config(svc(&kern, &[1.0], &[1.0], &o, None, ni)));
    assert!(is_config(svc(&kern, &[1.0, -1.0], &[0.0], &o, None, ni)));
    assert!(is_config(svc(
        &kern,
        &[1.0, -1.0],
        &[f64::NAN],
        &o,
        None,
        ni
    )));
    assert!(is_shape(svc(
        &kern,
        &[1.0, -1.0],
        &[1.0, 1.0, 1.0],
        &o,
        None,
        ni
    )));
    assert!(is_shape(svc(
        &kern,
        &[1.0, -1.0, 1.0],
        &[1.0],
        &o,
        None,
        ni
    )));
    // Warm starts: wrong length, outside the box, off the hyperplane.
    assert!(is_shape(svc(
        &kern,
        &[1.0, -1.0],
        &[1.0],
        &o,
        Some(&[0.0]),
        ni
    )));
    assert!(is_config(svc(
        &kern,
        &[1.0, -1.0],
        &[1.0],
        &o,
        Some(&[2.0, 2.0]),
        ni
    )));
    assert!(is_config(svc(
        &kern,
        &[1.0, -1.0],
        &[1.0],
        &o,
        Some(&[0.5, 0.0]),
        ni
    )));
    assert!(is_config(svr(
        &kern,
        &[1.0, 2.0],
        &[1.0],
        -0.1,
        &o,
        None,
        ni
    )));
    assert!(is_config(l2svm(&kern, &[1.0, -1.0], &[-1.0], &o, None, ni)));
    assert!(is_config(one_class(&kern, 0.0, &[1.0], &o, None, ni)));
    assert!(is_config(one_class(&kern, 1.5, &[1.0], &o, None, ni)));
    let bad_eps = SmoOptions {
        eps: 0.0,
        ..SmoOptions::default()
    };
    assert!(is_config(svc(
        &kern,
        &[1.0, -1.0],
        &[1.0],
        &bad_eps,
        None,
        ni
    )));
    let nan_k = [f64::NAN, 0.0, 0.0, 1.0];
    let nan_kern = DenseKernel::new(&nan_k, 2).unwrap();
    assert!(matches!(
        svc(&nan_kern, &[1.0, -1.0], &[1.0], &o, None, ni),
        Err(MkError::NonFinite { .. })
    ));
}

/// A tolerance below what the gradient resolves (an outer solver's `tol = 1e-300`) stops at
/// the rounding floor, 64ε times the gradient, with the tight solution: before the floor
/// every such solve spun to libsvm's 10⁷ steps (36 s for a 20-point group fit).
#[test]
fn a_tolerance_below_rounding_stops_at_the_rounding_floor() {
    let (x, y, t) = data(20, 9);
    let k = gaussian(&x, 0.5);
    let kern = DenseKernel::new(&k, 20).unwrap();
    let tiny = SmoOptions {
        eps: 1e-300,
        ..SmoOptions::default()
    };
    let c = [10.0];
    let solves = [
        (
            svc(&kern, &y, &c, &tiny, None, &NoInterrupt).unwrap(),
            svc(&kern, &y, &c, &tight(), None, &NoInterrupt).unwrap(),
            DenseQp::svc(&k, &y, &[10.0; 20]),
        ),
        (
            svr(&kern, &t, &c, 0.1, &tiny, None, &NoInterrupt).unwrap(),
            svr(&kern, &t, &c, 0.1, &tight(), None, &NoInterrupt).unwrap(),
            DenseQp::svr(&k, &t, 10.0, 0.1),
        ),
        (
            one_class(&kern, 0.3, &[1.0], &tiny, None, &NoInterrupt).unwrap(),
            one_class(&kern, 0.3, &[1.0], &tight(), None, &NoInterrupt).unwrap(),
            DenseQp::one_class(&k, 20, 0.3),
        ),
    ];
    for (s, reference, qp) in solves {
        assert!(
            s.converged && s.iterations < 100_000,
            "{} steps",
            s.iterations
        );
        qp.check_kkt(&s.alpha, 1e-11);
        assert!(close(s.objective, reference.objective, 1e-12));
    }
}

/// The model values read from the final gradient equal `K coef` for every formulation, and
/// the byte-sized column cache gives the same solution as the dense kernel.
#[test]
fn values_from_the_gradient_equal_the_kernel_product_and_cached_columns_agree() {
    let (x, y, t) = data(60, 7);
    let k = gaussian(&x, 0.4);
    let kernel = DenseKernel::new(&k, 60).unwrap();
    let product = |coef: &[f64]| -> Vec<f64> {
        (0..60)
            .map(|i| (0..60).map(|j| k[i * 60 + j] * coef[j]).sum())
            .collect()
    };
    let o = tight();
    let sols = [
        svc(&kernel, &y, &[2.0], &o, None, &NoInterrupt).unwrap(),
        l2svm(&kernel, &y, &[2.0], &o, None, &NoInterrupt).unwrap(),
        svr(&kernel, &t, &[2.0], 0.1, &o, None, &NoInterrupt).unwrap(),
    ];
    for s in &sols {
        for (a, b) in s.values.iter().zip(product(&s.coef)) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
    let mut diag = vec![0.0; 60];
    kernel.diag(&mut diag);
    // Room for 3 columns: every step evicts.
    let cached = CachedColumns::new(diag, |i, out| kernel.column(i, out), 3 * 8 * 60);
    assert_eq!(cached.capacity(), 3);
    let c = svc(&cached, &y, &[2.0], &o, None, &NoInterrupt).unwrap();
    for (a, b) in c.alpha.iter().zip(&sols[0].alpha) {
        assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    }
}
