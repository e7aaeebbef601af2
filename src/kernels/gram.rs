//! Training and cross Gram matrices of many kernel specifications, in parallel.
//!
//! Specifications that read the same feature columns share one inner-product matrix (a faer
//! matrix product) and one matrix of each other pairwise sum they read (ℓ1 distances, χ² sums,
//! minima: `pairwise`); each kernel is then an
//! elementwise map of those, computed in parallel over kernels. A bank may also hold
//! [`BlockKernel`]s, evaluated by the caller (a Python function) in blocks of rows: their raw
//! Gram matrices are normalised by the same code as the others.

use std::ops::Range;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{Array2, Array3, ArrayView2};
use rayon::prelude::*;

use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;
use crate::kernels::normalize::{KernelStats, NormStats, Normalization};
use crate::kernels::pairwise::{sum_matrix, PairSum};
use crate::kernels::sparse::{self, CsrMatrix};
use crate::kernels::{DenseStack, Element, KernelFn, KernelSpec};
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

/// The points a Gram matrix reads: a dense matrix, or a sparse one ([`CsrMatrix`]) whose
/// kernels are computed from its stored entries, without a dense copy.
#[derive(Debug, Clone, Copy)]
pub enum Points<'a> {
    Dense(ArrayView2<'a, f64>),
    Sparse(&'a CsrMatrix),
}

impl<'a> From<ArrayView2<'a, f64>> for Points<'a> {
    fn from(x: ArrayView2<'a, f64>) -> Self {
        Points::Dense(x)
    }
}

impl<'a> From<&'a CsrMatrix> for Points<'a> {
    fn from(x: &'a CsrMatrix) -> Self {
        Points::Sparse(x)
    }
}

impl Points<'_> {
    /// Number of points.
    pub fn nrows(&self) -> usize {
        match self {
            Points::Dense(x) => x.nrows(),
            Points::Sparse(x) => x.nrows(),
        }
    }

    /// Number of features.
    pub fn ncols(&self) -> usize {
        match self {
            Points::Dense(x) => x.ncols(),
            Points::Sparse(x) => x.ncols(),
        }
    }

    /// The columns a kernel reads ([`select`]).
    fn select(&self, features: &Option<Vec<usize>>, sqrt: bool) -> Selected {
        match self {
            Points::Dense(x) => Selected::Dense(select(x, features, sqrt)),
            Points::Sparse(x) => Selected::Sparse(x.select(features, sqrt)),
        }
    }
}

/// The columns a group of kernels reads, dense (contiguous row-major) or sparse.
#[derive(Clone)]
enum Selected {
    Dense(Array2<f64>),
    Sparse(CsrMatrix),
}

impl Selected {
    fn nrows(&self) -> usize {
        match self {
            Selected::Dense(x) => x.nrows(),
            Selected::Sparse(x) => x.nrows(),
        }
    }

    /// Each row's pairwise sum `kind` with itself.
    fn own(&self, kind: PairSum) -> Vec<f64> {
        match self {
            Selected::Dense(x) => {
                let d = x.ncols();
                let rows = x.as_slice().unwrap_or(&[]);
                rows.chunks(d.max(1)).map(|r| kind.own(r)).collect()
            }
            Selected::Sparse(x) => x.own(kind),
        }
    }

    /// The matrix of the sums `kind` of the rows of `self` and `b` (of the same kind).
    fn sum_matrix(&self, kind: PairSum, b: &Selected, symmetric: bool) -> Vec<f64> {
        match (self, b) {
            (Selected::Dense(a), Selected::Dense(b)) => sum_matrix(
                kind,
                a.as_slice().unwrap_or(&[]),
                b.as_slice().unwrap_or(&[]),
                a.ncols(),
                symmetric,
            ),
            (Selected::Sparse(a), Selected::Sparse(b)) => sparse::sum_matrix(kind, a, b, symmetric),
            _ => unreachable!("both sides of a Gram are dense or both sparse (Points::pair)"),
        }
    }
}

/// A kernel the engine does not evaluate itself (in the binding, a Python function): the
/// implementor holds the points of the stack's rows and columns, and computes blocks of rows
/// on demand, so that the engine can normalise its Gram matrix like any other.
pub trait BlockKernel: Sync {
    /// Writes `k(a_i, b_j)` for the rows `i` in `rows` and every column `j`, row-major, into
    /// `out` (`rows.len() × n_cols`).
    fn rows(&self, rows: Range<usize>, out: &mut [f64]) -> Result<()>;

    /// Writes the self-values `k(a_i, a_i)` of the rows `i` in `rows` into `out`.
    fn self_values(&self, rows: Range<usize>, out: &mut [f64]) -> Result<()>;

    /// Whether this is one of the engine's own kernels (the sequence kernels): finite, PSD
    /// and exactly symmetric, so that for a training stack [`rows`](Self::rows) writes only
    /// the entries `j ≤ i` (the engine mirrors them), blocks of rows may be computed in
    /// parallel, and none of the checks a caller's function needs is made.
    fn exact(&self) -> bool {
        false
    }
}

impl BankKernel<'_> {
    /// A kernel whose values need no check: a specification, or an exact block kernel.
    fn trusted(&self) -> bool {
        match self {
            BankKernel::Spec(_) => true,
            BankKernel::Blocks(b) => b.exact(),
        }
    }
}

/// One kernel of a bank: a specification the engine evaluates, or a [`BlockKernel`].
#[derive(Clone, Copy)]
pub enum BankKernel<'a> {
    /// Evaluated by the engine.
    Spec(&'a KernelSpec),
    /// Evaluated by the caller, block of rows by block of rows.
    Blocks(&'a dyn BlockKernel),
}

impl<'a> BankKernel<'a> {
    /// The bank of specifications only.
    fn of_specs(specs: &'a [KernelSpec]) -> Vec<Self> {
        specs.iter().map(BankKernel::Spec).collect()
    }
}

/// Values per call of a [`BlockKernel`] (16 MB of f64): a few hundred rows, fewer when rows
/// are long, so the caller's temporaries stay small.
const BLOCK_VALUES: usize = 1 << 21;

/// Rows per call of a [`BlockKernel`] with `cols` columns.
fn block_rows(cols: usize) -> usize {
    (BLOCK_VALUES / cols.max(1)).clamp(1, 256)
}

/// Asymmetry tolerated in a training block kernel, relative to its largest entry: rounding of
/// a blockwise evaluation in f64, or of its f32 conversion (half an f32 ulp on either side).
/// An error of kernel 0 of a one-kernel stack, named as kernel `m` of the bank.
fn as_kernel(m: usize, e: MkError) -> MkError {
    match e {
        MkError::NotSymmetric {
            entry,
            value,
            mirror,
            ..
        } => MkError::NotSymmetric {
            kernel: m,
            entry,
            value,
            mirror,
        },
        MkError::NotPsd { entry, reason, .. } => MkError::NotPsd {
            kernel: m,
            entry,
            reason,
        },
        other => other,
    }
}

fn symmetry_rtol<T: Element>() -> f64 {
    if std::mem::size_of::<T>() < 8 {
        1e-6
    } else {
        1e-8
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

fn check_finite(x: &Points<'_>, name: &str) -> Result<()> {
    let first = match x {
        Points::Dense(x) => x
            .indexed_iter()
            .find(|(_, v)| !v.is_finite())
            .map(|(idx, _)| idx),
        Points::Sparse(x) => x.first_non_finite(),
    };
    if let Some(idx) = first {
        return Err(MkError::NonFinite {
            what: name.to_string(),
            kernel: None,
            entry: Some(idx),
        });
    }
    Ok(())
}

/// The columns `features` of `x` (all when `None`) as a contiguous row-major matrix, of their
/// square roots when `sqrt`.
fn select(x: &ArrayView2<f64>, features: &Option<Vec<usize>>, sqrt: bool) -> Array2<f64> {
    let mut out = match features {
        None => x.as_standard_layout().into_owned(),
        Some(f) => Array2::from_shape_fn((x.nrows(), f.len()), |(i, j)| x[[i, f[j]]]),
    };
    if sqrt {
        out.mapv_inplace(f64::sqrt);
    }
    out
}

/// The pairwise sums a group of kernels reads, each computed once: the sums other than the
/// inner products by [`sum_matrix`], with each point's sum with itself. The inner products
/// are computed by blocks of rows where they are read ([`dot_rows`]): no `na × nb` matrix of
/// them is stored.
struct PairSums {
    others: Vec<(PairSum, Vec<f64>)>,
    nb: usize,
    own: Vec<(PairSum, Vec<f64>, Vec<f64>)>,
}

/// The rows of one pairwise-sum matrix.
#[derive(Clone, Copy)]
enum SumRows<'s> {
    /// The inner products: the rows of the block being computed.
    Dot,
    /// Row-major, rows of `nb` entries.
    Rows(&'s [f64], usize),
}

impl PairSums {
    fn of<T: Element>(
        a: &Selected,
        b: &Selected,
        symmetric: bool,
        kernels: &GroupWork<'_, T>,
    ) -> Self {
        let mut kinds: Vec<PairSum> = kernels.iter().map(|(f, _, _)| f.reads()).collect();
        kinds.sort_by_key(|k| *k as u8);
        kinds.dedup();
        let others = kinds
            .iter()
            .filter(|&&k| k != PairSum::Dot)
            .map(|&kind| (kind, a.sum_matrix(kind, b, symmetric)))
            .collect();
        let own = kinds.iter().map(|&k| (k, a.own(k), b.own(k))).collect();
        PairSums {
            others,
            nb: b.nrows(),
            own,
        }
    }

    /// The rows of the sum `kind`, and each point's sum with itself (rows of `a`, of `b`).
    fn get(&self, kind: PairSum) -> (SumRows<'_>, &[f64], &[f64]) {
        let (_, oa, ob) = self
            .own
            .iter()
            .find(|(k, _, _)| *k == kind)
            .expect("computed");
        let rows = match kind {
            PairSum::Dot => SumRows::Dot,
            _ => {
                let (_, s) = self
                    .others
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .expect("computed");
                SumRows::Rows(s, self.nb)
            }
        };
        (rows, oa, ob)
    }
}

/// The inner products of the rows `rows` of `xa` with the rows `cols` of `xb`, into `out`
/// (row-major, `rows.len() × cols.len()`): one sequential matrix product per block of rows
/// (sparse rows: their merges), the blocks run in parallel.
fn dot_rows(xa: &Selected, xb: &Selected, rows: Range<usize>, cols: Range<usize>, out: &mut [f64]) {
    let (xa, xb) = match (xa, xb) {
        (Selected::Dense(a), Selected::Dense(b)) => (a, b),
        (Selected::Sparse(a), Selected::Sparse(b)) => {
            return sparse::sums_block(PairSum::Dot, a, b, rows, cols, out)
        }
        _ => unreachable!("both sides of a Gram are dense or both sparse (Points::pair)"),
    };
    let d = xa.ncols();
    let fa = &xa.as_slice().unwrap_or(&[])[rows.start * d..rows.end * d];
    let fb = &xb.as_slice().unwrap_or(&[])[cols.start * d..cols.end * d];
    let a = MatRef::from_row_major_slice(fa, rows.len(), d);
    let b = MatRef::from_row_major_slice(fb, cols.len(), d);
    let o = MatMut::from_row_major_slice_mut(out, rows.len(), cols.len());
    matmul(o, Accum::Replace, a, b.transpose(), 1.0, Par::Seq);
}

/// The kernels of one group of specifications that read the same feature columns.
type GroupWork<'a, T> = Vec<(KernelFn, &'a mut [T], &'a mut [f64])>;

/// What one parallel task of [`raw_kernels`] computes.
enum Work<'a, T> {
    /// Specifications sharing their feature columns (and whether they read their square
    /// roots).
    Group(&'a Option<Vec<usize>>, bool, GroupWork<'a, T>),
    /// Kernel `m`, computed by the caller block by block.
    Blocks(usize, &'a dyn BlockKernel, &'a mut [T], &'a mut [f64]),
}

/// Raw kernels between the rows of `xa` and of `xb` into `out` (`(M, na, nb)`, kernel-major),
/// and the raw self-values `k(a, a)` into `self_values` (`(M, na)`; those of cross block
/// kernels only when `need_self`, as a call costs one more block). With `upper`, the
/// specifications of a training kernel (`symmetric`) fill its upper triangle only (for
/// statistics that read the diagonal alone; `normalise_training` mirrors it).
///
/// Specifications are grouped by the feature columns they read; each group shares one matrix
/// of each pairwise sum its kernels read (inner products, ℓ1 distances, χ² sums, minima). Groups and block
/// kernels run in parallel (a bank of many single-feature kernels has many small groups), and
/// so do the rows within a kernel.
#[allow(clippy::too_many_arguments)]
fn raw_kernels<T: Element>(
    xa: Points<'_>,
    xb: Points<'_>,
    (symmetric, upper): (bool, bool),
    kernels: &[BankKernel<'_>],
    out: &mut [T],
    self_values: &mut [f64],
    need_self: bool,
    interrupt: &dyn Interrupt,
) -> Result<()> {
    let (na, nb) = (xa.nrows(), xb.nrows());
    let mut outs = out.chunks_mut(na * nb).zip(self_values.chunks_mut(na));
    let mut work: Vec<Work<'_, T>> = Vec::new();
    for (m, kernel) in kernels.iter().enumerate() {
        let (k, sv) = outs.next().expect("one slice per kernel");
        match *kernel {
            BankKernel::Blocks(b) => work.push(Work::Blocks(m, b, k, sv)),
            BankKernel::Spec(s) => {
                let sqrt = s.func.sqrt_input();
                let group = work.iter_mut().find_map(|w| match w {
                    Work::Group(f, r, g) if **f == s.features && *r == sqrt => Some(g),
                    _ => None,
                });
                match group {
                    Some(g) => g.push((s.func, k, sv)),
                    None => work.push(Work::Group(&s.features, sqrt, vec![(s.func, k, sv)])),
                }
            }
        }
    }
    work.into_par_iter().try_for_each(|w| match w {
        Work::Group(features, sqrt, kernels) => {
            let count = kernels.len();
            let cols = Columns { features, sqrt };
            group_kernels(xa, xb, symmetric, upper, cols, kernels, interrupt)?;
            interrupt.kernels_done(count);
            Ok(())
        }
        Work::Blocks(m, b, k, sv) => {
            block_kernel(m, b, symmetric, need_self, k, sv, interrupt)?;
            interrupt.kernels_done(1);
            Ok(())
        }
    })
}

/// The columns a group of specifications reads (all when `None`), of their square roots when
/// `sqrt`.
struct Columns<'a> {
    features: &'a Option<Vec<usize>>,
    sqrt: bool,
}

/// The raw kernels of one group of specifications reading the same columns, in parallel
/// blocks of rows: each block computes its rows of the inner products once (when the group
/// reads them) and then its rows of every kernel. With `upper`, a training kernel's block of
/// rows `r0..` is computed from column `r0` on only (the rest left as it is, for a mirror of
/// the upper triangle): half the products.
#[allow(clippy::too_many_arguments)]
fn group_kernels<T: Element>(
    xa: Points<'_>,
    xb: Points<'_>,
    symmetric: bool,
    upper: bool,
    Columns { features, sqrt }: Columns<'_>,
    mut kernels: GroupWork<'_, T>,
    interrupt: &dyn Interrupt,
) -> Result<()> {
    /// Rows per block: a block of inner products is `ROWS × nb` values.
    const ROWS: usize = 32;
    interrupt.check()?;
    let nb = xb.nrows();
    let a = xa.select(features, sqrt);
    let b = if symmetric {
        a.clone()
    } else {
        xb.select(features, sqrt)
    };
    let sums = PairSums::of(&a, &b, symmetric, &kernels);
    let funcs: Vec<KernelFn> = kernels.iter().map(|(f, _, _)| *f).collect();
    let reads_dot = funcs.iter().any(|f| f.reads() == PairSum::Dot);
    // blocks[t][k]: rows ROWS·t.. of kernel k.
    let mut blocks: Vec<Vec<&mut [T]>> = Vec::new();
    for (_, k, _) in kernels.iter_mut() {
        for (t, rows) in k.chunks_mut(ROWS * nb.max(1)).enumerate() {
            if t == blocks.len() {
                blocks.push(Vec::new());
            }
            blocks[t].push(rows);
        }
    }
    blocks
        .into_par_iter()
        .enumerate()
        .try_for_each_init(Vec::new, |dot, (t, mut outs)| {
            interrupt.check()?;
            crate::linalg::clear_upper_simd_state();
            let r0 = t * ROWS;
            let count = outs.first().map_or(0, |o| o.len() / nb.max(1));
            let c0 = if upper && symmetric { r0.min(nb) } else { 0 };
            let w = nb - c0;
            if reads_dot {
                dot.resize(count * w, 0.0);
                dot_rows(&a, &b, r0..r0 + count, c0..nb, dot);
            }
            for (&f, out) in funcs.iter().zip(outs.iter_mut()) {
                let (s, own_a, own_b) = sums.get(f.reads());
                for (r, row) in out.chunks_mut(nb.max(1)).enumerate() {
                    let i = r0 + r;
                    let si = match s {
                        SumRows::Dot => &dot[r * w..(r + 1) * w],
                        SumRows::Rows(m, nb) => &m[i * nb + c0..(i + 1) * nb],
                    };
                    for (j, v) in (c0..).zip(row[c0..].iter_mut()) {
                        let sij = si[j - c0];
                        *v = T::from_f64(if symmetric && i == j {
                            f.self_value(sij)
                        } else {
                            f.eval(sij, own_a[i], own_b[j])
                        });
                    }
                }
            }
            Ok(())
        })?;
    for (f, _, sv) in kernels.iter_mut() {
        let (_, own_a, _) = sums.get(f.reads());
        for (s, &q) in sv.iter_mut().zip(own_a) {
            *s = f.self_value(q);
        }
    }
    Ok(())
}

/// Kernel `m` computed by `kernel` in blocks of rows into `out` (`na × nb`), each block
/// checked finite; a training kernel (`symmetric`) is checked symmetric within rounding and
/// then made exactly symmetric, its diagonal giving the self-values.
fn block_kernel<T: Element>(
    m: usize,
    kernel: &dyn BlockKernel,
    symmetric: bool,
    need_self: bool,
    out: &mut [T],
    self_values: &mut [f64],
    interrupt: &dyn Interrupt,
) -> Result<()> {
    let na = self_values.len();
    let nb = out.len() / na;
    if kernel.exact() {
        return exact_block_kernel(kernel, symmetric, need_self, out, self_values, interrupt);
    }
    let step = block_rows(nb);
    let mut buf = vec![0.0; step * nb];
    for (r0, rows) in (0..na).step_by(step).zip(out.chunks_mut(step * nb)) {
        interrupt.check()?;
        let r1 = r0 + rows.len() / nb;
        let block = &mut buf[..rows.len()];
        kernel.rows(r0..r1, block)?;
        if let Some(at) = block.iter().position(|v| !v.is_finite()) {
            return Err(non_finite(m, (r0 + at / nb, at % nb), ""));
        }
        for (o, &v) in rows.iter_mut().zip(block.iter()) {
            *o = T::from_f64(v);
        }
        if need_self && !symmetric {
            let sv = &mut self_values[r0..r1];
            kernel.self_values(r0..r1, sv)?;
            if let Some(at) = sv.iter().position(|v| !v.is_finite()) {
                return Err(non_finite(m, (r0 + at, r0 + at), ""));
            }
        }
    }
    if symmetric {
        interrupt.check()?;
        // Finite and symmetric; whether it is PSD is checked after normalisation (a
        // conditionally PSD kernel, e.g. additive χ², is PSD once centred).
        DenseStack::new(out, 1, na)?
            .validate_symmetric(symmetry_rtol::<T>())
            .map_err(|e| as_kernel(m, e))?;
        // A blockwise evaluation need not be bitwise symmetric; the Gram must be.
        for i in 0..na {
            for j in 0..i {
                let v = T::from_f64(0.5 * (out[i * na + j].to_f64() + out[j * na + i].to_f64()));
                out[i * na + j] = v;
                out[j * na + i] = v;
            }
            self_values[i] = out[i * na + i].to_f64();
        }
    }
    Ok(())
}

/// An exact block kernel ([`BlockKernel::exact`]) into `out` (`na × nb`): blocks of rows in
/// parallel, no checks. A training kernel's blocks compute their lower triangle only, and
/// each block also writes its transpose into the columns of its rows above the diagonal (the
/// `ROWS` consecutive entries of each earlier row: whole cache lines), so no separate mirror
/// pass reads the matrix across.
fn exact_block_kernel<T: Element>(
    kernel: &dyn BlockKernel,
    symmetric: bool,
    need_self: bool,
    out: &mut [T],
    self_values: &mut [f64],
    interrupt: &dyn Interrupt,
) -> Result<()> {
    /// `out` shared by the blocks, each writing entries no other block writes.
    struct Shared<T>(*mut T);
    // SAFETY: the blocks write disjoint entries (see below), and nothing reads them meanwhile.
    unsafe impl<T> Sync for Shared<T> {}
    const ROWS: usize = 16;
    let na = self_values.len();
    let nb = out.len() / na;
    let shared = Shared(out.as_mut_ptr());
    let shared = &shared;
    self_values
        .par_chunks_mut(ROWS)
        .enumerate()
        .try_for_each_init(Vec::new, |buf, (t, sv)| {
            interrupt.check()?;
            let (r0, count) = (t * ROWS, sv.len());
            buf.resize(count * nb, 0.0);
            kernel.rows(r0..r0 + count, buf)?;
            for (r, b) in buf.chunks(nb).enumerate() {
                let i = r0 + r;
                let width = if symmetric { i + 1 } else { nb };
                // SAFETY: row i, entries j ≤ i (all of a cross row) are this block's; the
                // transposed entries (j, i), j < r0, lie above the diagonal in rows of earlier
                // blocks, which write only on and below it; inside the block, (j, i) for
                // r0 ≤ j < i is above the diagonal of row j, written by no one else.
                let row = unsafe { std::slice::from_raw_parts_mut(shared.0.add(i * nb), width) };
                for (o, &v) in row.iter_mut().zip(&b[..width]) {
                    *o = T::from_f64(v);
                }
                if symmetric {
                    sv[r] = b[i];
                    for (j, &v) in b[..i].iter().enumerate() {
                        unsafe { *shared.0.add(j * nb + i) = T::from_f64(v) };
                    }
                }
            }
            if need_self && !symmetric {
                kernel.self_values(r0..r0 + count, sv)?;
            }
            Ok(())
        })
}

/// Entry `entry` of kernel `m` is not finite.
fn non_finite(m: usize, entry: (usize, usize), cause: &str) -> MkError {
    MkError::NonFinite {
        what: format!("kernel {m}{cause}"),
        kernel: Some(m),
        entry: Some(entry),
    }
}

/// Relabels a setting error of kernel `m` (`sigma` becomes `kernel 3 sigma`).
pub(crate) fn of_kernel(m: usize, e: MkError) -> MkError {
    match e {
        MkError::InvalidConfig { field, reason } => MkError::InvalidConfig {
            field: format!("kernel {m} {field}"),
            reason,
        },
        other => other,
    }
}

fn validate_inputs(x: &Points<'_>, kernels: &[BankKernel<'_>], name: &str) -> Result<()> {
    if kernels.is_empty() {
        return Err(MkError::config("kernels", "at least one kernel is needed"));
    }
    // Kernels evaluated by the caller (functions, sequence kernels) may come with no
    // numeric column at all.
    let specs = kernels.iter().any(|k| matches!(k, BankKernel::Spec(_)));
    if x.nrows() == 0 || (x.ncols() == 0 && specs) {
        return Err(MkError::Shape(format!(
            "{name} must have at least one row and one column, got shape ({}, {})",
            x.nrows(),
            x.ncols()
        )));
    }
    check_finite(x, name)?;
    for (m, kernel) in kernels.iter().enumerate() {
        if let BankKernel::Spec(s) = kernel {
            s.validate(x.ncols()).map_err(|e| of_kernel(m, e))?;
            match x {
                Points::Dense(x) => {
                    s.check_nonnegative(m, name, x.nrows(), x.ncols(), |i, j| x[(i, j)])?
                }
                // The stored entries only: the others are 0.
                Points::Sparse(x) => s.check_nonnegative_entries(m, name, x.entries())?,
            }
        }
    }
    Ok(())
}

/// An error naming the first non-finite entry of kernel `k` (`g`, rows of `cols` entries, the
/// first of them row `first_row`):
/// a specification's kernel overflows on large inputs or parameters (a Gaussian of tiny width,
/// a polynomial of huge degree), which no solver could fit.
fn finite<T: Element>(k: usize, g: &[T], cols: usize, first_row: usize) -> Result<()> {
    match g.iter().position(|v| !v.to_f64().is_finite()) {
        None => Ok(()),
        Some(at) => Err(non_finite(
            k,
            (first_row + at / cols, at % cols),
            ", evaluated on these points (its values overflow: rescale X or the kernel's \
             parameters),",
        )),
    }
}

/// Normalises the raw training kernel `m` (`g`, `n × n`, its raw self-values `sv`) in place
/// and leaves it exactly symmetric, in parallel blocks of rows.
///
/// Centring computes `K[i,j]` and `K[j,i]` in different orders, and where it cancels (a nearly
/// constant kernel) the two may differ far beyond one rounding; a specification's raw kernel
/// (a matrix product) need not be bitwise symmetric either; and a float32 spherical kernel
/// divides by its raw self-values and by its rounded diagonal. These kernels get the upper
/// triangle copied onto the lower one. A block kernel's raw Gram is exactly symmetric
/// (`block_kernel`), and the scales and the spherical factors `1/√(K_ii K_jj)` of float64
/// keep it so (products of the same two numbers): no mirror pass.
fn normalise_training<T: Element>(
    m: usize,
    kernel: &BankKernel<'_>,
    stats: &NormStats,
    opts: &GramOptions,
    g: &mut [T],
    sv: &[f64],
) -> Result<()> {
    const ROWS: usize = 16;
    let n = sv.len();
    let spherical = opts.normalization == Normalization::Spherical;
    let mirror = opts.center
        || matches!(kernel, BankKernel::Spec(_))
        || (spherical && std::mem::size_of::<T>() < 8);
    let trusted = kernel.trusted();
    // k(x,x)/k(x,x) is 1; the centred diagonal entry and the centred self-value it is
    // divided by are summed in different orders. A specification's kernel is PSD, so
    // |k| ≤ 1 (Cauchy–Schwarz): beyond it is rounding, amplified where centring cancels (a
    // nearly constant kernel in float32). A caller's function is checked instead, below.
    let finish = |r0: usize, rows: &mut [T]| -> Result<()> {
        for (r, row) in rows.chunks_exact_mut(n).enumerate() {
            let i = r0 + r;
            if spherical {
                if row[i].to_f64() != 0.0 {
                    row[i] = T::from_f64(1.0);
                }
                if trusted {
                    for v in row.iter_mut() {
                        *v = T::from_f64(v.to_f64().clamp(-1.0, 1.0));
                    }
                }
            }
            if trusted {
                finite(m, row, n, i)?;
            }
        }
        Ok(())
    };
    g.par_chunks_mut(ROWS * n)
        .zip(sv.par_chunks(ROWS))
        .enumerate()
        .try_for_each(|(t, (rows, s))| {
            crate::linalg::clear_upper_simd_state();
            stats.apply_rows(m, t * ROWS, rows, s);
            if mirror {
                Ok(())
            } else {
                finish(t * ROWS, rows)
            }
        })?;
    if mirror {
        crate::kernels::stack::mirror(g, n, true);
        g.par_chunks_mut(ROWS * n)
            .enumerate()
            .try_for_each(|(t, rows)| finish(t * ROWS, rows))?;
    }
    // A caller's function need not give a PSD kernel (sigmoid, additive χ² uncentred): the
    // normalised kernel must pass the PSD conditions.
    if !trusted {
        DenseStack::new(g, 1, n)?
            .validate(symmetry_rtol::<T>())
            .map_err(|e| as_kernel(m, e))?;
    }
    Ok(())
}

/// The normalised training Gram stack `(M, n, n)` of `specs` on the rows of `x`, and the
/// statistics that normalise cross kernels the same way.
pub fn gram<'x, T: Element>(
    x: impl Into<Points<'x>>,
    specs: &[KernelSpec],
    opts: &GramOptions,
    interrupt: &dyn Interrupt,
) -> Result<(Array3<T>, NormStats)> {
    gram_bank(x, &BankKernel::of_specs(specs), opts, interrupt)
}

/// [`gram`] of a bank that may hold [`BlockKernel`]s, whose points must be the rows of `x`.
pub fn gram_bank<'x, T: Element>(
    x: impl Into<Points<'x>>,
    kernels: &[BankKernel<'_>],
    opts: &GramOptions,
    interrupt: &dyn Interrupt,
) -> Result<(Array3<T>, NormStats)> {
    gram_bank_weighted(x, kernels, opts, None, interrupt)
}

/// [`gram_bank`] with the normalisation statistics weighted by `weights` (one per row of `x`,
/// finite, ≥ 0, not all 0): integer weights give the statistics of duplicated rows.
pub fn gram_bank_weighted<'x, T: Element>(
    x: impl Into<Points<'x>>,
    kernels: &[BankKernel<'_>],
    opts: &GramOptions,
    weights: Option<&[f64]>,
    interrupt: &dyn Interrupt,
) -> Result<(Array3<T>, NormStats)> {
    let x = x.into();
    validate_inputs(&x, kernels, "X")?;
    if let Some(w) = weights {
        check_weights(w, x.nrows())?;
    }
    let (m, n) = (kernels.len(), x.nrows());
    check_memory::<T>(m, n, n, opts)?;
    with_pool(opts.n_threads, || {
        let mut out = crate::kernels::stack::zeros_huge::<T>(m * n * n);
        let mut selfv = vec![0.0; m * n];
        // Without centring, the statistics other than the multiplicative one read the
        // diagonal alone, and a specification's kernel is mirrored anyway.
        let upper = !opts.center && opts.normalization != Normalization::Multiplicative;
        let entries = (true, upper);
        raw_kernels(
            x, x, entries, kernels, &mut out, &mut selfv, true, interrupt,
        )?;
        interrupt.check()?;
        let per: Vec<KernelStats> = out
            .par_chunks(n * n)
            .map(|k| NormStats::of_kernel(opts.normalization, opts.center, k, n, weights))
            .collect();
        // A caller's function need not give a PSD kernel: its diagonal is checked before
        // any normalisation, which would hide a negative one (see check_diagonal).
        for (k, st) in per.iter().enumerate() {
            if !kernels[k].trusted() {
                st.check_diagonal(k, symmetry_rtol::<T>())?;
            }
        }
        let stats = NormStats::collect(opts.normalization, opts.center, n, per, weights);
        out.par_chunks_mut(n * n)
            .zip(selfv.par_chunks(n))
            .enumerate()
            .try_for_each(|(k, (g, sv))| normalise_training(k, &kernels[k], &stats, opts, g, sv))?;
        let arr =
            Array3::from_shape_vec((m, n, n), out).map_err(|e| MkError::Shape(e.to_string()))?;
        Ok((arr, stats))
    })?
}

/// Checks the weights of the statistics: one per point, finite, ≥ 0, some positive.
pub(crate) fn check_weights(w: &[f64], n: usize) -> Result<()> {
    if w.len() != n {
        return Err(MkError::Shape(format!(
            "sample_weight has {} entries for {n} points",
            w.len()
        )));
    }
    if !w.iter().all(|v| v.is_finite() && *v >= 0.0) || !w.iter().any(|v| *v > 0.0) {
        return Err(MkError::config(
            "sample_weight",
            "must be finite and ≥ 0, with some weight > 0",
        ));
    }
    Ok(())
}

/// The cross kernels `(M, n_new, n)` between the rows of `x_new` and the training rows
/// `x_train`, normalised with the training statistics `stats` (from [`gram`]).
pub fn cross_gram<'x, T: Element>(
    x_new: impl Into<Points<'x>>,
    x_train: impl Into<Points<'x>>,
    specs: &[KernelSpec],
    stats: &NormStats,
    opts: &GramOptions,
    interrupt: &dyn Interrupt,
) -> Result<Array3<T>> {
    cross_gram_bank(
        x_new,
        x_train,
        &BankKernel::of_specs(specs),
        stats,
        opts,
        interrupt,
    )
}

/// [`cross_gram`] of a bank that may hold [`BlockKernel`]s, whose rows must be those of
/// `x_new` and columns those of `x_train`.
pub fn cross_gram_bank<'x, T: Element>(
    x_new: impl Into<Points<'x>>,
    x_train: impl Into<Points<'x>>,
    kernels: &[BankKernel<'_>],
    stats: &NormStats,
    opts: &GramOptions,
    interrupt: &dyn Interrupt,
) -> Result<Array3<T>> {
    let (x_new, x_train) = (x_new.into(), x_train.into());
    if matches!(x_new, Points::Sparse(_)) != matches!(x_train, Points::Sparse(_)) {
        return Err(MkError::Shape(
            "X and X_train must both be dense or both sparse (CSR)".into(),
        ));
    }
    validate_inputs(&x_new, kernels, "X")?;
    validate_inputs(&x_train, kernels, "X_train")?;
    if x_new.ncols() != x_train.ncols() {
        return Err(MkError::Shape(format!(
            "X has {} features but the kernels were fitted on {}",
            x_new.ncols(),
            x_train.ncols()
        )));
    }
    let (m, na, n) = (kernels.len(), x_new.nrows(), x_train.nrows());
    stats.validate(m, n)?;
    check_memory::<T>(m, na, n, opts)?;
    // Only the spherical normalisation reads the self-values k(x, x) of new points.
    let need_self = stats.normalization == Normalization::Spherical;
    with_pool(opts.n_threads, || {
        let mut out = vec![T::default(); m * na * n];
        let mut selfv = vec![0.0; m * na];
        raw_kernels(
            x_new,
            x_train,
            (false, false),
            kernels,
            &mut out,
            &mut selfv,
            need_self,
            interrupt,
        )?;
        interrupt.check()?;
        out.par_chunks_mut(na * n)
            .zip(selfv.par_chunks(na))
            .enumerate()
            .try_for_each(|(k, (g, sv))| {
                let lowest = stats.apply(k, g, sv);
                // The spherical normalisation divides by a caller's function's self-values
                // k(x, x) of the new points: a negative one (beyond rounding) is a kernel
                // that is not PSD, which would otherwise leave a row of zeros.
                if let (false, Some((a, v, terms))) = (kernels[k].trusted(), lowest) {
                    if v < -symmetry_rtol::<T>() * terms {
                        return Err(MkError::NotPsd {
                            kernel: k,
                            entry: (a, a),
                            reason: format!(
                                "its self-value k(x, x) of new point {a} is {v}{}, negative \
                                 (k(x, x) ≥ 0 for a PSD kernel); the spherical normalisation \
                                 divides by it",
                                if stats.center { " after centring" } else { "" }
                            ),
                        });
                    }
                }
                finite(k, g, n, 0)
            })?;
        Array3::from_shape_vec((m, na, n), out).map_err(|e| MkError::Shape(e.to_string()))
    })?
}
