//! The witness that a kernel is not positive semi-definite, read off the quadratic forms that
//! the duals are computed from (docs/mathematics.md §1.8).
//!
//! Weak duality (§1.2) bounds `ρ̃ᵀK_m A[m]` by Cauchy–Schwarz in each kernel's inner product,
//! which holds only for a PSD `K_m`. Every dual value takes the block norms as
//! `sqrt(max(q_m, 0))` of `q_m = ρ̃ᵀK_mρ̃`, so a kernel that is indefinite along `ρ̃` looks free
//! there, and a dual point that exploits it can lie above the optimum (docs/guide.md §6 has
//! such a fit). A PSD kernel can only produce `q_m < 0`
//! through the rounding of `q_m`'s own computation, which [`quad_form_rounding`] bounds; a
//! `q_m` below minus that bound proves that the kernel, as stored, is not PSD, and the dual
//! value of that point proves nothing.
//!
//! The check costs nothing where the duals are computed: `q_m` and `ρ̃` are at hand, and
//! `max_i K_m,ii` is read (`n` entries of one kernel, once per fit) only for a kernel that
//! shows a negative `q_m`.

use std::cell::OnceCell;

use crate::kernels::KernelStack;
use crate::result::PsdWitness;

/// The safety factor `c` of [`quad_form_rounding`] over the first-order error bound
/// `(n + 2) ε Σ_ij |K_ij| |ρ_i| |ρ_j|`: it covers the second-order terms, `max |K_ij|` above
/// `max K_ii` by the tolerance of the stack's validation (Cauchy–Schwarz to `16 ε_T`), and
/// summation orders other than the one analysed (blocked and parallel sums).
const SAFETY: f64 = 4.0;

/// An upper bound on the rounding error of a computed quadratic form `ρᵀKρ` of a kernel with
/// largest diagonal entry `max_diag`, `‖ρ‖₁ = rho_l1` and `n` entries:
/// `c (n + 2) ε₆₄ max_i K_ii ‖ρ‖₁²`, `c` = `SAFETY`.
///
/// The stack's entries are exact in f64 (float32 widens exactly) and every solver sums the
/// products in f64, as `Σ_i K_ii ρ_i² + 2 Σ_i ρ_i (Σ_{j>i} K_ij ρ_j)`: each term passes through
/// at most `2n + 4` roundings of unit `ε₆₄/2`, so the error is at most
/// `(n + 2) ε₆₄ Σ_ij |K_ij| |ρ_i| |ρ_j|` to first order (Higham, *Accuracy and Stability of
/// Numerical Algorithms*, §3.1), and `Σ_ij |K_ij| |ρ_i| |ρ_j| ≤ max_ij |K_ij| ‖ρ‖₁²` with
/// `max_ij |K_ij| = max_i K_ii` for a PSD kernel (Cauchy–Schwarz).
///
/// What it does not cover, on purpose: the rounding of the stored entries themselves. A
/// float32 kernel is the problem the solver is given; if rounding left it indefinite, weak
/// duality fails for it. (Entry-wise rounding `|E_ij| ≤ ε_T |K_ij|` of a PSD `K` can lower a
/// quadratic form by at most `ε_T max K_ii ‖ρ‖₁²`, [`PsdWitness::entry_rounding`]: a bound
/// that included it would excuse exactly the float32 failures it is meant to catch.)
pub fn quad_form_rounding(n: usize, max_diag: f64, rho_l1: f64) -> f64 {
    SAFETY * (n as f64 + 2.0) * f64::EPSILON * max_diag * rho_l1 * rho_l1
}

/// Whether `q`, the computed `ρᵀKρ`, witnesses that `K` is not PSD: `q < −bound`, `bound`
/// from [`quad_form_rounding`].
pub fn is_witness(q: f64, bound: f64) -> bool {
    q < -bound
}

/// The witness check of one fit: the stack it reads and the largest diagonal entry of each
/// kernel, read the first time that kernel shows a negative quadratic form.
pub struct PsdCheck<'a> {
    stack: &'a dyn KernelStack,
    max_diag: Vec<OnceCell<f64>>,
    entry_eps: f64,
}

impl<'a> PsdCheck<'a> {
    /// The check of the kernels of `stack` (the whole stack of the fit: a solver's sub-stacks
    /// hold some of its kernels on some of its points, whose largest diagonal entry is at most
    /// the whole one, so the bound stays valid for them).
    pub fn new(stack: &'a dyn KernelStack) -> Self {
        PsdCheck {
            stack,
            max_diag: (0..stack.m()).map(|_| OnceCell::new()).collect(),
            entry_eps: if stack.single_precision() {
                f32::EPSILON as f64
            } else {
                f64::EPSILON
            },
        }
    }

    /// `max_i |K_m,ii|` of the whole stack (`n` reads, once per kernel and fit).
    fn max_diag(&self, m: usize) -> f64 {
        *self.max_diag[m].get_or_init(|| {
            let mut d = vec![0.0; self.stack.n()];
            self.stack.diag(m, &mut d);
            d.iter().fold(0.0f64, |a, v| a.max(v.abs()))
        })
    }

    /// The strongest witness among the quadratic forms `quads` = `(m, ρᵀK_mρ)` (`m` a kernel
    /// of the whole stack) of the dual point `rho`, if any: the one most negative relative
    /// to `max_i K_m,ii ‖ρ‖₁²`. Without a negative form nothing is read.
    pub fn scan(
        &self,
        rho: &[f64],
        quads: impl IntoIterator<Item = (usize, f64)>,
    ) -> Option<PsdWitness> {
        let l1 = || rho.iter().map(|v| v.abs()).sum::<f64>();
        self.scan_with(rho.len(), l1, quads)
    }

    /// [`PsdCheck::scan`] of forms summed over several dual points of `n` entries each (the
    /// shared multiclass fit, docs/mathematics.md §3.8): `mass()` is `sqrt(Σ_c ‖ρ_c‖₁²)`, in
    /// place of `‖ρ‖₁` (the bound of a sum of forms is the sum of their bounds).
    pub fn scan_with(
        &self,
        n: usize,
        mass: impl FnOnce() -> f64,
        quads: impl IntoIterator<Item = (usize, f64)>,
    ) -> Option<PsdWitness> {
        let mut mass = Some(mass);
        let mut l1 = None;
        let mut best: Option<(f64, PsdWitness)> = None;
        for (m, q) in quads {
            if q >= 0.0 || q.is_nan() {
                continue;
            }
            let l1 = *l1.get_or_insert_with(|| mass.take().map_or(0.0, |f| f()));
            let scale = self.max_diag(m) * l1 * l1;
            let bound = quad_form_rounding(n, self.max_diag(m), l1);
            if !is_witness(q, bound) {
                continue;
            }
            let strength = -q / scale;
            if best.as_ref().is_none_or(|(s, _)| strength > *s) {
                let w = PsdWitness {
                    kernel: m,
                    quad_form: q,
                    bound,
                    entry_rounding: self.entry_eps * scale,
                };
                best = Some((strength, w));
            }
        }
        best.map(|(_, w)| w)
    }
}

/// Some kernels of a fit's stack (a working set), as [`PsdCheck::scan`] needs them: local
/// kernel `k` is kernel `ids[k]` of the whole stack (all kernels, in order, for `None`).
#[derive(Clone, Copy)]
pub struct PsdScope<'c, 'a> {
    check: &'c PsdCheck<'a>,
    ids: Option<&'c [usize]>,
}

impl<'c, 'a> PsdScope<'c, 'a> {
    /// [`PsdCheck::scan`] of `rho` with `q(k)` the quadratic form of local kernel `k < m`.
    pub fn scan(&self, rho: &[f64], m: usize, q: impl Fn(usize) -> f64) -> Option<PsdWitness> {
        let ids = self.ids;
        self.check
            .scan(rho, (0..m).map(|k| (ids.map_or(k, |ids| ids[k]), q(k))))
    }
}

impl<'a> PsdCheck<'a> {
    /// All kernels of the stack.
    pub fn all(&self) -> PsdScope<'_, 'a> {
        PsdScope {
            check: self,
            ids: None,
        }
    }

    /// The kernels `ids` of the stack, in that order.
    pub fn of<'c>(&'c self, ids: &'c [usize]) -> PsdScope<'c, 'a> {
        PsdScope {
            check: self,
            ids: Some(ids),
        }
    }
}

/// The stronger of two witnesses (relative to `max_i K_ii ‖ρ‖₁²`, which `bound` is
/// proportional to for the same `n`; across `n` the ratio to `entry_rounding` is used).
pub(crate) fn stronger(a: Option<PsdWitness>, b: Option<PsdWitness>) -> Option<PsdWitness> {
    match (a, b) {
        (Some(x), Some(y)) => {
            let s = |w: &PsdWitness| -w.quad_form / w.entry_rounding;
            Some(if s(&y) > s(&x) { y } else { x })
        }
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::DenseStack;
    use crate::solvers::test_util::Lcg;

    /// A Gaussian kernel on `n` random points in 3-D (PSD, rapidly decaying spectrum: many
    /// eigenvalues at rounding level, the hardest PSD case for a sign test).
    fn gaussian(n: usize, sigma: f64, rng: &mut Lcg) -> Vec<f64> {
        let x: Vec<[f64; 3]> = (0..n)
            .map(|_| [rng.next(), rng.next(), rng.next()])
            .collect();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let d2: f64 = (0..3).map(|t| (x[i][t] - x[j][t]).powi(2)).sum();
                k[i * n + j] = (-d2 / (2.0 * sigma * sigma)).exp();
            }
        }
        k
    }

    /// The smallest eigenvalue of the symmetric `k` and its unit eigenvector (faer, f64).
    fn smallest_eigen(k: &[f64], n: usize) -> (f64, Vec<f64>) {
        let a = faer::Mat::from_fn(n, n, |i, j| k[i * n + j]);
        let e = a
            .self_adjoint_eigen(faer::Side::Lower)
            .expect("eigendecomposition");
        let lam = e.S().column_vector()[0];
        (lam, (0..n).map(|i| e.U()[(i, 0)]).collect())
    }

    fn quad(stack: &dyn KernelStack, v: &[f64]) -> Vec<f64> {
        let mut q = vec![0.0; stack.m()];
        stack.quad_forms(v, &mut q);
        q
    }

    /// A Gaussian kernel (width 2) on `n` random points and its float32 rounding.
    fn rounded_gaussian(n: usize, rng: &mut Lcg) -> (Vec<f64>, Vec<f32>) {
        let k64 = gaussian(n, 2.0, rng);
        let k32 = k64.iter().map(|&v| v as f32).collect();
        (k64, k32)
    }

    /// The f64 Gaussian kernel and its float32 rounding never flag, for random dual points
    /// and for the direction of the smallest eigenvalue of the f64 kernel (where its
    /// quadratic form is smallest): PSD kernels go negative only by rounding.
    #[test]
    fn psd_kernels_never_flag() {
        let (mut rng, n) = (Lcg(7), 120);
        let (k64, k32) = rounded_gaussian(n, &mut rng);
        let s64 = DenseStack::new(&k64, 1, n).unwrap();
        let (lam, v) = smallest_eigen(&k64, n);
        assert!(
            lam.abs() < 1e-9,
            "a Gaussian kernel this wide is singular to rounding"
        );
        let c64 = PsdCheck::new(&s64);
        let mut dirs: Vec<Vec<f64>> = (0..200)
            .map(|_| (0..n).map(|_| 1e3 * rng.next()).collect())
            .collect();
        dirs.push(v.iter().map(|a| 1e3 * a).collect());
        for rho in &dirs {
            let q = quad(&s64, rho);
            assert!(
                c64.scan(rho, [(0, q[0])]).is_none(),
                "f64 PSD flagged: q = {}",
                q[0]
            );
        }
        // The float32 rounding of the same kernel is not PSD any more: its own smallest
        // eigenvector does flag (below), but random points, whose quadratic forms are
        // dominated by the large eigenvalues, never do.
        let s32 = DenseStack::new(&k32, 1, n).unwrap();
        let c32 = PsdCheck::new(&s32);
        for rho in &dirs[..200] {
            let q = quad(&s32, rho);
            assert!(c32.scan(rho, [(0, q[0])]).is_none());
        }
    }

    /// A rank-3 PSD kernel `K = X Xᵀ` (f64) along directions of its null space: the exact
    /// form is 0, the computed one is rounding noise of either sign, and the bound covers it
    /// (the test fails with a bound of 0: some forms are negative).
    #[test]
    fn rounding_noise_of_a_null_direction_never_flags() {
        let mut rng = Lcg(13);
        let n = 200;
        let x: Vec<[f64; 3]> = (0..n)
            .map(|_| [rng.next(), rng.next(), 1.0 + rng.next()])
            .collect();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = (0..3).map(|t| x[i][t] * x[j][t]).sum();
            }
        }
        let s = DenseStack::new(&k, 1, n).unwrap();
        let check = PsdCheck::new(&s);
        // Gram–Schmidt against the three columns of X.
        let cols: Vec<Vec<f64>> = (0..3).map(|t| x.iter().map(|r| r[t]).collect()).collect();
        let mut basis: Vec<Vec<f64>> = Vec::new();
        for c in cols {
            let mut u = c.clone();
            for b in &basis {
                let d: f64 = u.iter().zip(b).map(|(a, b)| a * b).sum();
                u.iter_mut().zip(b).for_each(|(a, b)| *a -= d * b);
            }
            let norm = u.iter().map(|a| a * a).sum::<f64>().sqrt();
            basis.push(u.iter().map(|a| a / norm).collect());
        }
        let mut negative = 0;
        for _ in 0..200 {
            let mut rho: Vec<f64> = (0..n).map(|_| 100.0 * rng.next()).collect();
            for _ in 0..2 {
                for b in &basis {
                    let d: f64 = rho.iter().zip(b).map(|(a, b)| a * b).sum();
                    rho.iter_mut().zip(b).for_each(|(a, b)| *a -= d * b);
                }
            }
            let q = quad(&s, &rho)[0];
            negative += usize::from(q < 0.0);
            assert!(check.scan(&rho, [(0, q)]).is_none(), "q = {q}");
        }
        assert!(negative > 10, "{negative} negative forms");
    }

    /// Float32 rounding leaves the Gaussian kernel indefinite: along its most negative
    /// eigenvector the quadratic form is negative far beyond the rounding of its computation
    /// (a witness), but within what the rounding of the entries can explain (the witness
    /// says so).
    #[test]
    fn float32_rounding_is_a_witness_within_entry_rounding() {
        let (mut rng, n) = (Lcg(11), 120);
        let (_, k32) = rounded_gaussian(n, &mut rng);
        let widened: Vec<f64> = k32.iter().map(|&v| v as f64).collect();
        let (lam, v) = smallest_eigen(&widened, n);
        assert!(
            lam < -1e-9,
            "float32 rounding made the kernel indefinite: λ_min = {lam}"
        );
        let s32 = DenseStack::new(&k32, 1, n).unwrap();
        let check = PsdCheck::new(&s32);
        let q = quad(&s32, &v);
        let w = check.scan(&v, [(0, q[0])]).expect("a witness");
        assert_eq!(w.kernel, 0);
        assert!(w.quad_form < -w.bound);
        assert!(-w.quad_form <= w.entry_rounding, "{w:?}");
    }

    /// A kernel with a clearly negative eigenvalue flags along its eigenvector, in either
    /// precision, beyond the rounding of its entries; a scaled dual point flags the same.
    #[test]
    fn an_indefinite_kernel_flags_along_its_eigenvector() {
        let mut rng = Lcg(3);
        let n = 60;
        let mut k = gaussian(n, 0.5, &mut rng);
        let v: Vec<f64> = {
            let raw: Vec<f64> = (0..n).map(|_| rng.next()).collect();
            let norm = raw.iter().map(|a| a * a).sum::<f64>().sqrt();
            raw.iter().map(|a| a / norm).collect()
        };
        // K − (vᵀKv + δ) vvᵀ has vᵀ(·)v = −δ.
        let kv: f64 = (0..n)
            .map(|i| v[i] * (0..n).map(|j| k[i * n + j] * v[j]).sum::<f64>())
            .sum();
        let delta = 1e-3;
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] -= (kv + delta) * v[i] * v[j];
            }
        }
        let k32: Vec<f32> = k.iter().map(|&a| a as f32).collect();
        let s64 = DenseStack::new(&k, 1, n).unwrap();
        let s32 = DenseStack::new(&k32, 1, n).unwrap();
        for scale in [1.0, 1e4] {
            let rho: Vec<f64> = v.iter().map(|a| scale * a).collect();
            for s in [&s64 as &dyn KernelStack, &s32] {
                let q = quad(s, &rho);
                let w = PsdCheck::new(s).scan(&rho, [(0, q[0])]).expect("a witness");
                assert!(w.quad_form < -0.5 * delta * scale * scale);
                assert!(-w.quad_form > w.entry_rounding, "{w:?}");
            }
        }
    }

    /// The bound is the first-order error bound, times the safety factor: an independent
    /// evaluation of one quadratic form in f64 and in exact (f128-like, compensated)
    /// arithmetic differs by far less.
    #[test]
    fn the_bound_covers_the_computed_error() {
        let mut rng = Lcg(5);
        let n = 300;
        let k = gaussian(n, 2.0, &mut rng);
        let s = DenseStack::new(&k, 1, n).unwrap();
        for _ in 0..20 {
            let rho: Vec<f64> = (0..n).map(|_| rng.next()).collect();
            let q = quad(&s, &rho)[0];
            // Compensated (Kahan–Babuška) reference sum of the n² products, each split into
            // its rounded value and exact error by two-product (fma).
            let (mut sum, mut comp) = (0.0f64, 0.0f64);
            for i in 0..n {
                for j in 0..n {
                    let a = k[i * n + j] * rho[i];
                    let ea = k[i * n + j].mul_add(rho[i], -a);
                    for term in [a * rho[j], a.mul_add(rho[j], -(a * rho[j])), ea * rho[j]] {
                        let t = sum + term;
                        comp += if sum.abs() >= term.abs() {
                            (sum - t) + term
                        } else {
                            (term - t) + sum
                        };
                        sum = t;
                    }
                }
            }
            let exact = sum + comp;
            let l1: f64 = rho.iter().map(|a| a.abs()).sum();
            let bound = quad_form_rounding(n, 1.0, l1);
            assert!((q - exact).abs() <= bound / SAFETY, "{q} vs {exact}");
        }
    }
}
