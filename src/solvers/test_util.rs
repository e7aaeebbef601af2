//! Shared by the solvers' unit tests.

use crate::kernels::{DenseStack, KernelStack};

/// A deterministic uniform(−1, 1) stream (Knuth's MMIX linear congruential generator).
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

type KernelFn = dyn Fn(&[f64; 3], &[f64; 3]) -> f64;

/// `n` points in 3-D; kernels: Gaussians of widths 0.5, 1, 2 on all features, a linear kernel
/// on feature 0, a Gaussian on feature 2 (noise), each with a 1e-8 jitter (as the paper).
pub(crate) fn problem(n: usize, regression: bool, seed: u64) -> (Vec<f64>, usize, Vec<f64>) {
    let mut rng = Lcg(seed);
    let x: Vec<[f64; 3]> = (0..n)
        .map(|_| [rng.next(), rng.next(), rng.next()])
        .collect();
    let y: Vec<f64> = x
        .iter()
        .map(|p| {
            let t = (3.0 * p[0]).sin() + p[1] * p[1] + 0.3 * rng.next();
            if regression {
                t
            } else if t > 0.3 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let kernels: Vec<Box<KernelFn>> = vec![
        Box::new(|a, b| gauss(a, b, 0.5, 3)),
        Box::new(|a, b| gauss(a, b, 1.0, 3)),
        Box::new(|a, b| gauss(a, b, 2.0, 3)),
        Box::new(|a, b| a[0] * b[0]),
        Box::new(|a, b| (-(a[2] - b[2]).powi(2)).exp()),
    ];
    let m = kernels.len();
    let mut g = vec![0.0; m * n * n];
    for (k, kern) in kernels.iter().enumerate() {
        for i in 0..n {
            for j in 0..n {
                g[k * n * n + i * n + j] = kern(&x[i], &x[j]) + if i == j { 1e-8 } else { 0.0 };
            }
        }
    }
    (g, m, y)
}

/// [`problem`]'s kernels under three labellings (seeds 21, 22 and their sign product): with
/// the groups `[0, 0, 0, 1, 2]` the rank-one linear kernel sits alone in its group and the
/// groups' norm sums tie at group MKL's optimum (docs/mathematics.md §4, "Free groups").
pub(crate) fn tied_groups_problem(n: usize) -> (Vec<f64>, usize, Vec<Vec<f64>>) {
    let (g, m, y) = problem(n, false, 21);
    let (_, _, y2) = problem(n, false, 22);
    let third: Vec<f64> = y
        .iter()
        .zip(&y2)
        .map(|(a, b)| if a + b < 0.0 { 1.0 } else { -1.0 })
        .collect();
    (g, m, vec![y, y2, third])
}

fn gauss(a: &[f64; 3], b: &[f64; 3], sigma: f64, d: usize) -> f64 {
    let s: f64 = (0..d).map(|i| (a[i] - b[i]).powi(2)).sum();
    (-s / (2.0 * sigma * sigma)).exp()
}

/// The kernels of [`problem`] factorised to at most `rank` columns each, and the same low-rank
/// kernels `G_m G_mᵀ` as a dense stack (flat `M·n·n`): an identity between the low-rank and
/// the dense route of a solver.
pub(crate) fn factored(
    g: &[f64],
    m: usize,
    n: usize,
    rank: usize,
) -> (crate::kernels::LowRankStack, Vec<f64>) {
    use crate::kernels::LowRankStack;
    let dense = DenseStack::new(g, m, n).unwrap();
    let lr = LowRankStack::from_dense(&dense, 0.0, rank).unwrap();
    let mut products = vec![0.0; m * n * n];
    for (k, out) in products.chunks_exact_mut(n * n).enumerate() {
        let mut theta = vec![0.0; m];
        theta[k] = 1.0;
        lr.combine(&theta, out);
    }
    (lr, products)
}

/// Points, kernels and targets for fits on kernels computed on demand against the same
/// kernels stored: 90 points in 4-D, six Gaussians on feature pairs and a linear kernel
/// (mean-diagonal normalised).
pub(crate) struct OnDemandProblem {
    pub x: Vec<f64>,
    pub n: usize,
    pub p: usize,
    pub specs: Vec<crate::kernels::KernelSpec>,
    pub norm: crate::kernels::Normalization,
    /// The stored stack, `M·n·n` values.
    pub gram: Vec<f64>,
    /// ±1 labels and real targets.
    pub labels: Vec<f64>,
    pub targets: Vec<f64>,
}

impl OnDemandProblem {
    pub fn new() -> Self {
        use crate::interrupt::NoInterrupt;
        use crate::kernels::{gram, GramOptions, KernelFn, KernelSpec, Normalization};
        let (n, p) = (90, 4);
        let x: Vec<f64> = (0..n * p)
            .map(|k| ((k * 2654435761usize) % 1000) as f64 / 250.0 - 2.0)
            .collect();
        let labels = (0..n)
            .map(|i| {
                if x[i * p] * x[i * p + 1] + 0.3 * x[i * p + 2] > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let targets = (0..n).map(|i| (x[i * p] + x[i * p + 3]).sin()).collect();
        let specs: Vec<KernelSpec> = (0..6)
            .map(|m| {
                KernelSpec::on(
                    KernelFn::Gaussian {
                        sigma: 0.5 + 0.4 * m as f64,
                    },
                    vec![m % p, (m + 1) % p],
                )
            })
            .chain([KernelSpec::new(KernelFn::Linear)])
            .collect();
        let xa = ndarray::ArrayView2::from_shape((n, p), &x).unwrap();
        let norm = Normalization::MeanDiag;
        let opts = GramOptions {
            normalization: norm,
            ..GramOptions::default()
        };
        let (g, _) = gram::<f64>(xa, &specs, &opts, &NoInterrupt).unwrap();
        OnDemandProblem {
            gram: g.as_slice().unwrap().to_vec(),
            x,
            n,
            p,
            specs,
            norm,
            labels,
            targets,
        }
    }

    /// The kernels computed on demand with a cache of `cache` bytes.
    pub fn on_demand(&self, cache: usize) -> crate::kernels::OnDemandStack {
        crate::kernels::OnDemandStack::new(
            &self.x,
            self.n,
            self.p,
            &self.specs,
            self.norm,
            None,
            cache,
        )
        .unwrap()
    }

    /// The same kernels stored.
    pub fn stored(&self) -> DenseStack<'_, f64> {
        DenseStack::new(&self.gram, self.specs.len(), self.n).unwrap()
    }
}

/// The fit `a` on demand converged to the stored stack's `b`: primal to `rtol` relative, and
/// kernel weights to `wtol` relative (above 1e-3).
pub(crate) fn assert_same_fit(
    a: &crate::result::FitResult,
    b: &crate::result::FitResult,
    rtol: f64,
    wtol: f64,
    what: &str,
) {
    assert_eq!(
        a.status,
        crate::result::SolveStatus::Converged,
        "{what}: gap {}",
        a.gap
    );
    assert!(
        (a.primal - b.primal).abs() <= rtol * b.primal,
        "{what}: {} vs {}",
        a.primal,
        b.primal
    );
    for (s, t) in a.kernel_weights.iter().zip(&b.kernel_weights) {
        assert!((s - t).abs() <= wtol * (1e-3 + t), "{what}: θ {s} vs {t}");
    }
}

/// The stack `g` (`m × n × n`) with row and column `i` repeated `reps[i]` times, and the
/// source of each copy: the fit of integer sample weights against that of duplicated rows.
pub(crate) fn duplicated(g: &[f64], m: usize, n: usize, reps: &[usize]) -> (Vec<f64>, Vec<usize>) {
    let rows: Vec<usize> = (0..n).flat_map(|i| vec![i; reps[i]]).collect();
    let dup = (0..m)
        .flat_map(|k| {
            let rows = &rows;
            rows.iter()
                .flat_map(move |&i| rows.iter().map(move |&j| g[k * n * n + i * n + j]))
        })
        .collect();
    (dup, rows)
}

/// A dense stack that hides that it stores its entries: the solvers on per-kernel gradient
/// caches (ℓp's `analytic`, the SVM wrapper) then form `K_θ` and read the forms at every
/// whole step, as before the caches.
pub(crate) struct Formed<'a>(pub DenseStack<'a, f64>);

impl KernelStack for Formed<'_> {
    fn n(&self) -> usize {
        self.0.n()
    }
    fn m(&self) -> usize {
        self.0.m()
    }
    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]) {
        self.0.quad_forms_subset(v, idx, out)
    }
    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        self.0.quad_forms_batch_subset(vs, idx, out)
    }
    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        self.0.matvec(m, v, out)
    }
    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        self.0.combine(theta, out)
    }
    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        self.0.column(m, i, out)
    }
    fn diag(&self, m: usize, out: &mut [f64]) {
        self.0.diag(m, out)
    }
}
