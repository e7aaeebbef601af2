//! Training and cross Gram matrices of many kernel specifications, in parallel.
//!
//! Specifications that read the same feature columns share one inner-product matrix (a faer
//! matrix product) and, for Laplacian kernels, one ℓ1-distance matrix; each kernel is then an
//! elementwise map of those, computed in parallel over kernels.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use ndarray::{Array2, Array3, ArrayView2};
use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::normalize::{KernelStats, NormStats, Normalization};
use crate::kernels::{Element, KernelSpec};
use crate::parallel::with_pool;

/// Settings of a Gram computation.
#[derive(Debug, Clone, Copy)]
pub struct GramOptions {
    pub normalization: Normalization,
    /// Centre each kernel in feature space before scaling.
    pub center: bool,
    /// Threads (0 = all cores).
    pub n_threads: usize,
    /// Refuse to allocate a stack larger than this many bytes (`None`: the memory the operating
    /// system reports as available).
    pub max_bytes: Option<u64>,
}

impl Default for GramOptions {
    fn default() -> Self {
        GramOptions {
            normalization: Normalization::None,
            center: false,
            n_threads: 0,
            max_bytes: None,
        }
    }
}

/// Bytes of a stack of `m` kernels of `rows × cols` elements of `elem` bytes.
pub fn stack_bytes(m: usize, rows: usize, cols: usize, elem: usize) -> u64 {
    (m as u64)
        .saturating_mul(rows as u64)
        .saturating_mul(cols as u64)
        .saturating_mul(elem as u64)
}

fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Fails with a clear message, before anything is allocated, when a stack would not fit.
fn check_memory<T: Element>(m: usize, rows: usize, cols: usize, opts: &GramOptions) -> Result<()> {
    let elem = std::mem::size_of::<T>();
    let need = stack_bytes(m, rows, cols, elem);
    let limit = opts.max_bytes.or_else(available_memory);
    if let Some(limit) = limit {
        if need > limit {
            let dtype = if elem == 4 { "float32" } else { "float64" };
            return Err(MkError::TooLarge {
                what: format!("the kernel stack ({m} kernels of {rows}×{cols} {dtype})"),
                needed: need,
                available: limit,
                advice: "use dtype=float32 (half the memory), a low-rank stack, fewer kernels or \
                         fewer points"
                    .into(),
            });
        }
    }
    Ok(())
}

fn check_finite(x: &ArrayView2<f64>, name: &str) -> Result<()> {
    if let Some((idx, _)) = x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(MkError::NonFinite {
            what: name.to_string(),
            kernel: None,
            entry: Some(idx),
        });
    }
    Ok(())
}

/// The columns `features` of `x` (all when `None`) as a contiguous row-major matrix.
fn select(x: &ArrayView2<f64>, features: &Option<Vec<usize>>) -> Array2<f64> {
    match features {
        None => x.as_standard_layout().into_owned(),
        Some(f) => Array2::from_shape_fn((x.nrows(), f.len()), |(i, j)| x[[i, f[j]]]),
    }
}

/// Inner products as a column-major `nb × na` matrix `xb xaᵀ`: its column `i` is row `i` of
/// `xa xbᵀ`, contiguous in memory.
fn inner_products(xa: &Array2<f64>, xb: &Array2<f64>, par: Par) -> Mat<f64> {
    let a = MatRef::from_row_major_slice(xa.as_slice().unwrap_or(&[]), xa.nrows(), xa.ncols());
    let b = MatRef::from_row_major_slice(xb.as_slice().unwrap_or(&[]), xb.nrows(), xb.ncols());
    let mut out = Mat::<f64>::zeros(xb.nrows(), xa.nrows());
    matmul(out.as_mut(), Accum::Replace, b, a.transpose(), 1.0, par);
    out
}

/// The kernels of one group of specifications that read the same feature columns.
type GroupWork<'a, T> = Vec<(usize, &'a mut [T], &'a mut [f64])>;

/// Raw kernels between the rows of `xa` and of `xb` into `out` (`(M, na, nb)`, kernel-major),
/// and the raw self-values `k(a, a)` into `self_values` (`(M, na)`).
///
/// Specifications are grouped by the feature columns they read; each group shares one
/// inner-product matrix (and one ℓ1-distance matrix for Laplacian kernels). Groups run in
/// parallel (a bank of many single-feature kernels has many small groups), and so do the rows
/// within a kernel.
fn raw_kernels<T: Element>(
    xa: &ArrayView2<f64>,
    xb: &ArrayView2<f64>,
    symmetric: bool,
    specs: &[KernelSpec],
    out: &mut [T],
    self_values: &mut [f64],
    interrupt: &dyn Interrupt,
) -> Result<()> {
    let (na, nb) = (xa.nrows(), xb.nrows());
    let mut groups: Vec<(&Option<Vec<usize>>, Vec<usize>)> = Vec::new();
    for (m, s) in specs.iter().enumerate() {
        match groups.iter_mut().find(|(f, _)| **f == s.features) {
            Some((_, idx)) => idx.push(m),
            None => groups.push((&s.features, vec![m])),
        }
    }
    let mut outs: Vec<Option<&mut [T]>> = out.chunks_mut(na * nb).map(Some).collect();
    let mut selfs: Vec<Option<&mut [f64]>> = self_values.chunks_mut(na).map(Some).collect();
    let work: Vec<(&Option<Vec<usize>>, GroupWork<'_, T>)> = groups
        .into_iter()
        .map(|(features, idx)| {
            let w = idx
                .into_iter()
                .map(|m| {
                    let k = outs[m].take().expect("each kernel belongs to one group");
                    let sv = selfs[m].take().expect("each kernel belongs to one group");
                    (m, k, sv)
                })
                .collect();
            (features, w)
        })
        .collect();
    // One big product parallelises inside faer; many small ones run side by side.
    let par = if work.len() == 1 {
        Par::rayon(0)
    } else {
        Par::Seq
    };
    work.into_par_iter()
        .try_for_each(|(features, mut kernels)| {
            interrupt.check()?;
            let a = select(xa, features);
            let b = if symmetric {
                a.clone()
            } else {
                select(xb, features)
            };
            let mut dot = inner_products(&a, &b, par);
            if symmetric {
                // The product need not be bitwise symmetric; the Gram must be.
                for i in 0..na {
                    for j in 0..i {
                        let v = 0.5 * (dot[(i, j)] + dot[(j, i)]);
                        dot[(i, j)] = v;
                        dot[(j, i)] = v;
                    }
                }
            }
            let sq_a: Vec<f64> = a.rows().into_iter().map(|r| r.dot(&r)).collect();
            let sq_b: Vec<f64> = b.rows().into_iter().map(|r| r.dot(&r)).collect();
            let l1 = if kernels.iter().any(|(m, _, _)| specs[*m].func.needs_l1()) {
                let mut d = vec![0.0; na * nb];
                d.par_chunks_mut(nb).enumerate().for_each(|(i, row)| {
                    let ai = a.row(i);
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = ai.iter().zip(b.row(j)).map(|(p, q)| (p - q).abs()).sum();
                    }
                });
                Some(d)
            } else {
                None
            };
            for (m, k, sv) in kernels.iter_mut() {
                interrupt.check()?;
                let f = specs[*m].func;
                k.par_chunks_mut(nb).enumerate().for_each(|(i, row)| {
                    crate::linalg::clear_upper_simd_state();
                    let d = dot.col_as_slice(i);
                    let l = l1.as_ref().map(|l| &l[i * nb..(i + 1) * nb]);
                    for (j, v) in row.iter_mut().enumerate() {
                        let sq = if symmetric && i == j {
                            0.0
                        } else {
                            sq_a[i] + sq_b[j] - 2.0 * d[j]
                        };
                        *v = T::from_f64(f.eval(d[j], sq, l.map_or(0.0, |l| l[j])));
                    }
                });
                for (s, &q) in sv.iter_mut().zip(&sq_a) {
                    *s = f.self_value(q);
                }
            }
            Ok(())
        })
}

fn validate_inputs(x: &ArrayView2<f64>, specs: &[KernelSpec], name: &str) -> Result<()> {
    if specs.is_empty() {
        return Err(MkError::config("kernels", "at least one kernel is needed"));
    }
    if x.nrows() == 0 || x.ncols() == 0 {
        return Err(MkError::Shape(format!(
            "{name} must have at least one row and one column, got shape ({}, {})",
            x.nrows(),
            x.ncols()
        )));
    }
    check_finite(x, name)?;
    for (m, s) in specs.iter().enumerate() {
        s.validate(x.ncols()).map_err(|e| match e {
            MkError::InvalidConfig { field, reason } => MkError::InvalidConfig {
                field: format!("kernel {m} {field}"),
                reason,
            },
            other => other,
        })?;
    }
    Ok(())
}

/// Copies the upper triangle of the row-major `n×n` kernel `k` onto the lower one, in tiles
/// that stay in cache. Centring computes `K[i,j]` and `K[j,i]` in different orders, and where it
/// cancels (a nearly constant kernel) the two may differ far beyond one rounding; a training
/// kernel must be exactly symmetric.
fn mirror_upper<T: Element>(k: &mut [T], n: usize) {
    const B: usize = 64;
    for bi in (0..n).step_by(B) {
        for bj in (0..=bi).step_by(B) {
            for i in bi..(bi + B).min(n) {
                for j in bj..(bj + B).min(i) {
                    k[i * n + j] = k[j * n + i];
                }
            }
        }
    }
}

/// The normalised training Gram stack `(M, n, n)` of `specs` on the rows of `x`, and the
/// statistics that normalise cross kernels the same way.
pub fn gram<T: Element>(
    x: ArrayView2<f64>,
    specs: &[KernelSpec],
    opts: &GramOptions,
    interrupt: &dyn Interrupt,
) -> Result<(Array3<T>, NormStats)> {
    validate_inputs(&x, specs, "X")?;
    let (m, n) = (specs.len(), x.nrows());
    check_memory::<T>(m, n, n, opts)?;
    with_pool(opts.n_threads, || {
        let mut out = vec![T::default(); m * n * n];
        let mut selfv = vec![0.0; m * n];
        raw_kernels(&x, &x, true, specs, &mut out, &mut selfv, interrupt)?;
        interrupt.check()?;
        let per: Vec<KernelStats> = out
            .par_chunks(n * n)
            .map(|k| NormStats::of_kernel(opts.normalization, opts.center, k, n))
            .collect();
        let stats = NormStats::collect(opts.normalization, opts.center, n, per);
        out.par_chunks_mut(n * n)
            .zip(selfv.par_chunks(n))
            .enumerate()
            .for_each(|(k, (g, sv))| {
                stats.apply(k, g, sv);
                mirror_upper(g, n);
                if opts.normalization == Normalization::Spherical {
                    // k(x,x)/k(x,x) is 1; the centred diagonal entry and the centred
                    // self-value it is divided by are summed in different orders.
                    for i in 0..n {
                        if g[i * n + i].to_f64() != 0.0 {
                            g[i * n + i] = T::from_f64(1.0);
                        }
                    }
                }
            });
        let arr =
            Array3::from_shape_vec((m, n, n), out).map_err(|e| MkError::Shape(e.to_string()))?;
        Ok((arr, stats))
    })?
}

/// The cross kernels `(M, n_new, n)` between the rows of `x_new` and the training rows
/// `x_train`, normalised with the training statistics `stats` (from [`gram`]).
pub fn cross_gram<T: Element>(
    x_new: ArrayView2<f64>,
    x_train: ArrayView2<f64>,
    specs: &[KernelSpec],
    stats: &NormStats,
    opts: &GramOptions,
    interrupt: &dyn Interrupt,
) -> Result<Array3<T>> {
    validate_inputs(&x_new, specs, "X")?;
    validate_inputs(&x_train, specs, "X_train")?;
    if x_new.ncols() != x_train.ncols() {
        return Err(MkError::Shape(format!(
            "X has {} features but the kernels were fitted on {}",
            x_new.ncols(),
            x_train.ncols()
        )));
    }
    let (m, na, n) = (specs.len(), x_new.nrows(), x_train.nrows());
    stats.validate(m, n)?;
    check_memory::<T>(m, na, n, opts)?;
    with_pool(opts.n_threads, || {
        let mut out = vec![T::default(); m * na * n];
        let mut selfv = vec![0.0; m * na];
        raw_kernels(
            &x_new, &x_train, false, specs, &mut out, &mut selfv, interrupt,
        )?;
        interrupt.check()?;
        out.par_chunks_mut(na * n)
            .zip(selfv.par_chunks(na))
            .enumerate()
            .for_each(|(k, (g, sv))| stats.apply(k, g, sv));
        Array3::from_shape_vec((m, na, n), out).map_err(|e| MkError::Shape(e.to_string()))
    })?
}
