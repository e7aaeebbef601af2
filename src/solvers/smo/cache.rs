//! A least-recently-used cache of kernel columns sized in bytes (libsvm's `Cache`, the
//! `cache_size` of scikit-learn's SVC), for kernels whose columns are computed when read.

use std::collections::HashMap;
use std::sync::Mutex;

use super::KernelColumns;

/// The cached columns and their last use.
struct Lru {
    columns: HashMap<usize, (u64, Box<[f64]>)>,
    clock: u64,
    capacity: usize,
}

/// The product `out = K w` of a kernel, where it is faster than its columns
/// ([`KernelColumns::products`]); returns whether it computed it.
pub type Products<'a> = &'a (dyn Fn(&[f64], &mut [f64]) -> bool + Sync);

/// [`KernelColumns`] of an `n×n` kernel whose column `i` is computed by `compute(i, out)`,
/// with the most recently used columns kept in at most `bytes` (at least two columns: an SMO
/// step reads two), and optionally a product with the kernel.
pub struct CachedColumns<'p, F: Fn(usize, &mut [f64]) + Sync> {
    n: usize,
    diag: Vec<f64>,
    compute: F,
    products: Option<Products<'p>>,
    lru: Mutex<Lru>,
}

impl<'p, F: Fn(usize, &mut [f64]) + Sync> CachedColumns<'p, F> {
    /// The kernel of diagonal `diag` and columns `compute`, cached in `bytes`.
    pub fn new(diag: Vec<f64>, compute: F, bytes: usize) -> Self {
        let n = diag.len();
        let capacity = (bytes / (8 * n.max(1))).clamp(2, n.max(2));
        CachedColumns {
            n,
            diag,
            compute,
            products: None,
            lru: Mutex::new(Lru {
                columns: HashMap::with_capacity(capacity.min(1 << 16)),
                clock: 0,
                capacity,
            }),
        }
    }

    /// This kernel with the product `products` ([`KernelColumns::products`]).
    pub fn with_products(mut self, products: Products<'p>) -> Self {
        self.products = Some(products);
        self
    }

    /// How many columns the cache holds.
    pub fn capacity(&self) -> usize {
        self.lru.lock().map_or(0, |l| l.capacity)
    }
}

impl<F: Fn(usize, &mut [f64]) + Sync> KernelColumns for CachedColumns<'_, F> {
    fn n(&self) -> usize {
        self.n
    }

    fn products(&self, w: &[f64], out: &mut [f64]) -> bool {
        self.products.is_some_and(|p| p(w, out))
    }

    fn diag(&self, out: &mut [f64]) {
        out.copy_from_slice(&self.diag);
    }

    fn column(&self, i: usize, out: &mut [f64]) {
        // The SMO loop is sequential, so the lock is never contended; the column itself is
        // computed in parallel inside `compute`.
        let mut lru = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        lru.clock += 1;
        let now = lru.clock;
        if let Some((used, col)) = lru.columns.get_mut(&i) {
            *used = now;
            out.copy_from_slice(col);
            return;
        }
        let mut col = if lru.columns.len() >= lru.capacity {
            // Evict the least recently used column and reuse its memory.
            let oldest = lru
                .columns
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(&k, _)| k)
                .expect("a full cache is not empty");
            lru.columns.remove(&oldest).expect("present").1
        } else {
            vec![0.0; self.n].into_boxed_slice()
        };
        (self.compute)(i, &mut col);
        out.copy_from_slice(&col);
        lru.columns.insert(i, (now, col));
    }
}
