//! A view of some kernels of a stack: the working set of a solver that has ruled the other
//! kernels out (SpicyMKL's kernel working set).

use crate::kernels::KernelStack;

/// The kernels `idx` of `inner`, renumbered `0..idx.len()` in that order. Every method maps
/// its kernel indices and reads `inner` directly: nothing is copied.
pub struct SubStack<'a> {
    inner: &'a dyn KernelStack,
    idx: Vec<usize>,
}

impl<'a> SubStack<'a> {
    /// The view of kernels `idx` (each `< inner.m()`) of `inner`.
    pub fn new(inner: &'a dyn KernelStack, idx: Vec<usize>) -> Self {
        debug_assert!(idx.iter().all(|&m| m < inner.m()));
        SubStack { inner, idx }
    }

    /// The kernels of `inner` in the view, in local order.
    pub fn indices(&self) -> &[usize] {
        &self.idx
    }

    /// Appends kernels of `inner` to the view; the local indices of the others do not change.
    pub fn extend(&mut self, more: &[usize]) {
        debug_assert!(more.iter().all(|&m| m < self.inner.m()));
        self.idx.extend_from_slice(more);
    }

    fn global(&self, local: &[usize]) -> Vec<usize> {
        local.iter().map(|&k| self.idx[k]).collect()
    }
}

impl KernelStack for SubStack<'_> {
    fn n(&self) -> usize {
        self.inner.n()
    }

    fn m(&self) -> usize {
        self.idx.len()
    }

    fn quad_forms(&self, v: &[f64], out: &mut [f64]) {
        self.inner.quad_forms_subset(v, &self.idx, out);
    }

    fn quad_forms_subset(&self, v: &[f64], idx: &[usize], out: &mut [f64]) {
        self.inner.quad_forms_subset(v, &self.global(idx), out);
    }

    fn quad_forms_batch(&self, vs: &[f64], out: &mut [f64]) {
        self.inner.quad_forms_batch_subset(vs, &self.idx, out);
    }

    fn quad_forms_batch_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        self.inner
            .quad_forms_batch_subset(vs, &self.global(idx), out);
    }

    fn matvec(&self, m: usize, v: &[f64], out: &mut [f64]) {
        self.inner.matvec(self.idx[m], v, out);
    }

    fn matvecs_subset(&self, vs: &[f64], idx: &[usize], out: &mut [f64]) {
        self.inner.matvecs_subset(vs, &self.global(idx), out);
    }

    fn matvecs(&self, vs: &[f64], out: &mut [f64]) {
        self.inner.matvecs_subset(vs, &self.idx, out);
    }

    fn low_rank_factor(&self, m: usize) -> Option<&[f64]> {
        self.inner.low_rank_factor(self.idx[m])
    }

    fn combine(&self, theta: &[f64], out: &mut [f64]) {
        // The inner stack skips the zero weights, so the kernels outside the view cost nothing.
        let mut full = vec![0.0; self.inner.m()];
        for (&m, &t) in self.idx.iter().zip(theta) {
            full[m] = t;
        }
        self.inner.combine(&full, out);
    }

    fn column(&self, m: usize, i: usize, out: &mut [f64]) {
        self.inner.column(self.idx[m], i, out);
    }

    fn add_column(&self, m: usize, i: usize, c: f64, out: &mut [f64]) {
        self.inner.add_column(self.idx[m], i, c, out);
    }

    fn column_at(&self, m: usize, i: usize, rows: &[usize], out: &mut [f64]) {
        self.inner.column_at(self.idx[m], i, rows, out);
    }

    fn single_precision(&self) -> bool {
        self.inner.single_precision()
    }

    fn stores_entries(&self) -> bool {
        self.inner.stores_entries()
    }

    fn diag(&self, m: usize, out: &mut [f64]) {
        self.inner.diag(self.idx[m], out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::DenseStack;

    /// Every method of the view equals the same method of the parent at the mapped index.
    #[test]
    fn view_matches_the_parent_kernels() {
        let (m, n) = (5, 7);
        let mut data = vec![0.0; m * n * n];
        let mut s = 1u64;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for k in 0..m {
            let x: Vec<f64> = (0..n * 3).map(|_| rnd()).collect();
            for i in 0..n {
                for j in 0..n {
                    data[k * n * n + i * n + j] =
                        (0..3).map(|d| x[i * 3 + d] * x[j * 3 + d]).sum::<f64>() * (k + 1) as f64;
                }
            }
        }
        let full = DenseStack::new(&data, m, n).unwrap();
        let idx = vec![3, 0, 4];
        let mut view = SubStack::new(&full, idx.clone());
        let v: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let vs: Vec<f64> = (0..2 * n).map(|_| rnd()).collect();
        let (mut q_all, mut q_view) = (vec![0.0; m], vec![0.0; 3]);
        full.quad_forms(&v, &mut q_all);
        view.quad_forms(&v, &mut q_view);
        let (mut b_all, mut b_view) = (vec![0.0; 2 * m], vec![0.0; 6]);
        full.quad_forms_batch(&vs, &mut b_all);
        view.quad_forms_batch(&vs, &mut b_view);
        for (k, &g) in idx.iter().enumerate() {
            assert!((q_view[k] - q_all[g]).abs() < 1e-12);
            assert!((b_view[2 * k] - b_all[2 * g]).abs() < 1e-12);
            assert!((b_view[2 * k + 1] - b_all[2 * g + 1]).abs() < 1e-12);
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            full.matvec(g, &v, &mut a);
            view.matvec(k, &v, &mut b);
            assert_eq!(a, b);
            // Both vectors of `vs` through the view's batched products.
            let mut batch = vec![0.0; 3 * 2 * n];
            view.matvecs(&vs, &mut batch);
            for l in 0..2 {
                full.matvec(g, &vs[l * n..(l + 1) * n], &mut a);
                let got = &batch[(k * 2 + l) * n..(k * 2 + l + 1) * n];
                assert!(a.iter().zip(got).all(|(x, y)| (x - y).abs() < 1e-12));
            }
        }
        let theta = [0.5, 0.0, 2.0];
        let (mut c_view, mut c_all) = (vec![0.0; n * n], vec![0.0; n * n]);
        view.combine(&theta, &mut c_view);
        full.combine(&[0.0, 0.0, 0.0, 0.5, 2.0], &mut c_all);
        assert_eq!(c_view, c_all);
        view.extend(&[1]);
        assert_eq!(view.m(), 4);
        assert_eq!(view.indices(), &[3, 0, 4, 1]);
        let mut sub = vec![0.0; 2];
        view.quad_forms_subset(&v, &[3, 1], &mut sub);
        assert!((sub[0] - q_all[1]).abs() < 1e-12 && (sub[1] - q_all[0]).abs() < 1e-12);
    }
}
