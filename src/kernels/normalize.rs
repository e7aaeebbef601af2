//! Normalisation of Gram matrices with statistics kept from the training stack, so that the
//! cross kernels of new points are scaled exactly like the training kernels.
//!
//! For every kernel the training statistics are computed once from the raw training Gram, and
//! then one formula, [`NormStats::apply`], serves both the training Gram (whose "new points" are
//! the training points) and any cross kernel. That makes the invariant
//! `cross(X_train) == gram(X_train)` hold by construction.

use crate::error::{MkError, Result};
use crate::kernels::Element;

/// How each Gram matrix is scaled after the optional centring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalization {
    /// Raw kernel.
    None,
    /// Unit trace: `K / tr(K)` (SimpleMKL, SpicyMKL).
    Trace,
    /// Unit mean diagonal: `K / (tr(K)/n)`.
    MeanDiag,
    /// Kloft et al. eq. 25: `K / ((1/n) Σ_i k(x_i,x_i) − (1/n²) Σ_ij k(x_i,x_j))`, the variance
    /// of the points in feature space.
    Multiplicative,
    /// Kloft et al. eq. 26: `k(x,x') / sqrt(k(x,x) k(x',x'))`, all points on the unit sphere.
    Spherical,
}

impl Normalization {
    /// Parses `none`, `trace`, `mean_diag`, `multiplicative`, `spherical`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "none" => Ok(Normalization::None),
            "trace" => Ok(Normalization::Trace),
            "mean_diag" => Ok(Normalization::MeanDiag),
            "multiplicative" => Ok(Normalization::Multiplicative),
            "spherical" => Ok(Normalization::Spherical),
            other => Err(MkError::config(
                "normalize",
                format!(
                    "unknown normalisation {other:?}; valid: none, trace, mean_diag, \
                     multiplicative, spherical"
                ),
            )),
        }
    }
}

/// Training statistics of a whole stack (flat arrays, kernel-major), enough to normalise the
/// cross kernels of new points.
#[derive(Debug, Clone, PartialEq)]
pub struct NormStats {
    pub normalization: Normalization,
    pub center: bool,
    /// Number of training points.
    pub n: usize,
    /// `(M, n)` training row means of the raw kernels (empty unless `center`).
    pub row_means: Vec<f64>,
    /// `(M,)` mean of all entries of each raw training kernel (0 unless `center`).
    pub total_means: Vec<f64>,
    /// `(M, n)` diagonal of the centred training kernels (empty unless spherical).
    pub diag: Vec<f64>,
    /// `(M,)` factor applied after centring (1 for none and spherical; 0 for a kernel that is
    /// zero after centring, which stays zero).
    pub scales: Vec<f64>,
    /// `(n,)` the training points' weights in every mean and trace (a sample's weight counts
    /// it that many times: integer weights give the statistics of duplicated rows); empty for
    /// uniform weights.
    pub weights: Vec<f64>,
}

/// Relative size below which a kernel counts as zero (e.g. a constant kernel after centring).
const DEGENERATE: f64 = 1e-12;

impl NormStats {
    /// Number of kernels.
    pub fn m(&self) -> usize {
        self.scales.len()
    }

    /// Indices of kernels that were zero after centring and so could not be scaled.
    pub fn degenerate(&self) -> Vec<usize> {
        (0..self.m())
            .filter(|&m| self.scales[m] == 0.0 && self.normalization != Normalization::Spherical)
            .collect()
    }

    /// Statistics of one raw training kernel `k` (n×n, row-major) and its diagonal, with the
    /// points weighted by `w` (`None`: uniformly).
    pub(crate) fn of_kernel<T: Element>(
        normalization: Normalization,
        center: bool,
        k: &[T],
        n: usize,
        w: Option<&[f64]>,
    ) -> KernelStats {
        let wsum = |row: &[T]| -> f64 {
            match w {
                Some(w) => row.iter().zip(w).map(|(v, w)| w * v.to_f64()).sum(),
                None => row.iter().map(|v| v.to_f64()).sum(),
            }
        };
        let row_sums: Vec<f64> = if center {
            k.chunks_exact(n).map(wsum).collect()
        } else {
            Vec::new()
        };
        let diag: Vec<f64> = (0..n).map(|i| k[i * n + i].to_f64()).collect();
        // Only the multiplicative normalisation without centring reads the total.
        let total = match w {
            _ if normalization != Normalization::Multiplicative || center => 0.0,
            None => k.iter().map(|v| v.to_f64()).sum::<f64>(),
            Some(w) => k
                .chunks_exact(n)
                .zip(w)
                .map(|(row, wi)| wi * wsum(row))
                .sum(),
        };
        Self::from_sums(normalization, center, n, &row_sums, &diag, total, w)
    }

    /// Statistics of one raw training kernel without centring from its diagonal alone (the
    /// normalisations other than the multiplicative one).
    pub(crate) fn of_diagonal(
        normalization: Normalization,
        n: usize,
        diag: &[f64],
        w: Option<&[f64]>,
    ) -> KernelStats {
        Self::from_sums(normalization, false, n, &[], diag, 0.0, w)
    }

    /// Statistics of one raw training kernel from its row sums (read only with `center`),
    /// its diagonal and the sum of all its entries (read only by the multiplicative
    /// normalisation without centring): what a pass over row blocks can gather, e.g. on the
    /// workers of a cluster. With weights `w`, the row sums are `Σ_j w_j k_ij` and the total
    /// `Σ_ij w_i w_j k_ij`, and every mean and trace below weighs point `i` by `w_i`.
    pub(crate) fn from_sums(
        normalization: Normalization,
        center: bool,
        n: usize,
        row_sums: &[f64],
        diag: &[f64],
        total_sum: f64,
        w: Option<&[f64]>,
    ) -> KernelStats {
        // The total weight: n for uniform weights.
        let weight = w.map_or(n as f64, |w| w.iter().sum());
        let mut row_means = Vec::new();
        let mut total = 0.0;
        if center {
            row_means = row_sums.iter().map(|s| s / weight).collect();
            total = weighted_sum(&row_means, w) / weight;
        }
        // The centred diagonal: k_ii − 2 r_i + t.
        let cdiag: Vec<f64> = diag
            .iter()
            .enumerate()
            .map(|(i, &kii)| {
                if center {
                    kii - 2.0 * row_means[i] + total
                } else {
                    kii
                }
            })
            .collect();
        // The most negative centred diagonal entry, and the size of the terms it was summed
        // from (its rounding is relative to them): a PSD kernel, centred or not, has none
        // below rounding.
        let lowest = cdiag
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map_or((0, 0.0), |(i, &v)| (i, v));
        let terms = diag
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if center {
                    d.abs() + 2.0 * row_means[i].abs() + total.abs()
                } else {
                    d.abs()
                }
            })
            .fold(0.0, f64::max);
        let abs_diag: Vec<f64> = diag.iter().map(|d| d.abs()).collect();
        let raw_scale = weighted_sum(&abs_diag, w).max(f64::MIN_POSITIVE);
        let trace = weighted_sum(&cdiag, w);
        let mean_all = if center {
            0.0 // with centring the mean of all entries is 0 already
        } else {
            total_sum / (weight * weight)
        };
        let scale = normalization.scale(trace, weight, mean_all, raw_scale);
        KernelStats {
            row_means,
            total,
            diag: if normalization == Normalization::Spherical {
                cdiag
            } else {
                Vec::new()
            },
            scale,
            lowest: (
                lowest.0,
                lowest.1,
                diag.get(lowest.0).copied().unwrap_or(0.0),
            ),
            terms,
            center,
        }
    }

    /// Assembles per-kernel statistics into the stack's statistics (`w`: the weights they
    /// were computed with).
    pub(crate) fn collect(
        normalization: Normalization,
        center: bool,
        n: usize,
        per_kernel: Vec<KernelStats>,
        w: Option<&[f64]>,
    ) -> Self {
        let mut s = NormStats {
            normalization,
            center,
            n,
            row_means: Vec::new(),
            total_means: Vec::with_capacity(per_kernel.len()),
            diag: Vec::new(),
            scales: Vec::with_capacity(per_kernel.len()),
            weights: w.map_or_else(Vec::new, <[f64]>::to_vec),
        };
        for k in per_kernel {
            s.row_means.extend(k.row_means);
            s.total_means.push(k.total);
            s.diag.extend(k.diag);
            s.scales.push(k.scale);
        }
        s
    }

    /// Checks that these statistics fit a stack of `m` kernels on `n` training points.
    pub fn validate(&self, m: usize, n: usize) -> Result<()> {
        let ok = self.scales.len() == m
            && self.total_means.len() == m
            && self.n == n
            && (!self.center || self.row_means.len() == m * n)
            && (self.normalization != Normalization::Spherical || self.diag.len() == m * n)
            && (self.weights.is_empty() || self.weights.len() == n);
        if ok {
            Ok(())
        } else {
            Err(MkError::Shape(format!(
                "normalisation statistics do not match {m} kernels on {n} training points"
            )))
        }
    }

    /// Normalises, in place, the raw kernel `m` between new points and the training points:
    /// `k` is `(n_new, n)` row-major and `self_values[a] = k(x_a, x_a)` (raw).
    ///
    /// Centring in feature space: `k̃(a,i) = k(a,i) − mean_j k(a,j) − r_i + t` and
    /// `k̃(a,a) = k(a,a) − 2 mean_j k(a,j) + t`, with `r`, `t` the training row and total means.
    ///
    /// Returns, for the spherical normalisation (the one that reads the self-values), the
    /// new point of the most negative centred self-value: `(a, k̃(a,a), scale of its
    /// terms)`, which a PSD kernel has only by rounding (its row is then 0).
    pub(crate) fn apply<T: Element>(
        &self,
        m: usize,
        k: &mut [T],
        self_values: &[f64],
    ) -> Option<(usize, f64, f64)> {
        self.apply_rows(m, 0, k, self_values)
    }

    /// [`NormStats::apply`] to the rows `first_row..` of kernel `m` only (`k` holds those
    /// rows, `self_values` their self-values), so blocks of rows can be normalised in
    /// parallel; the point of the returned self-value counts from row 0.
    pub(crate) fn apply_rows<T: Element>(
        &self,
        m: usize,
        first_row: usize,
        k: &mut [T],
        self_values: &[f64],
    ) -> Option<(usize, f64, f64)> {
        let n = self.n;
        let rows = self.row_means.get(m * n..(m + 1) * n);
        let t = self.total_means[m];
        let scale = self.scales[m];
        let spherical = self.normalization == Normalization::Spherical;
        let dtrain = if spherical {
            &self.diag[m * n..(m + 1) * n]
        } else {
            &[][..]
        };
        let w = (!self.weights.is_empty()).then_some(self.weights.as_slice());
        let weight = w.map_or(n as f64, |w| w.iter().sum());
        let mut lowest: Option<(usize, f64, f64)> = None;
        for (r, (row, &kaa)) in k.chunks_exact_mut(n).zip(self_values).enumerate() {
            let a = first_row + r;
            let mut self_c = kaa;
            let mut terms = kaa.abs();
            if let (true, Some(r)) = (self.center, rows) {
                let vals: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
                let mean_a = weighted_sum(&vals, w) / weight;
                for (v, &ri) in row.iter_mut().zip(r) {
                    *v = T::from_f64(v.to_f64() - mean_a - ri + t);
                }
                self_c = kaa - 2.0 * mean_a + t;
                terms += 2.0 * mean_a.abs() + t.abs();
            }
            if spherical {
                if !matches!(lowest, Some((_, v, _)) if v <= self_c) {
                    lowest = Some((a, self_c, terms));
                }
                for (v, &di) in row.iter_mut().zip(dtrain) {
                    // A point at the origin of feature space (a self-value ≤ 0, rounding
                    // included) has no direction: its row is 0.
                    let f = if self_c > 0.0 && di > 0.0 {
                        1.0 / (self_c * di).sqrt()
                    } else {
                        0.0
                    };
                    *v = T::from_f64(v.to_f64() * f);
                }
            } else if scale != 1.0 {
                for v in row.iter_mut() {
                    *v = T::from_f64(v.to_f64() * scale);
                }
            }
        }
        lowest
    }
}

/// `Σ_i w_i v_i` (`Σ_i v_i` without weights).
fn weighted_sum(v: &[f64], w: Option<&[f64]>) -> f64 {
    match w {
        Some(w) => v.iter().zip(w).map(|(a, b)| a * b).sum(),
        None => v.iter().sum(),
    }
}

/// Statistics of one kernel, before they are gathered into [`NormStats`].
pub(crate) struct KernelStats {
    row_means: Vec<f64>,
    total: f64,
    diag: Vec<f64>,
    scale: f64,
    /// The most negative diagonal entry after the optional centring, before any scaling:
    /// `(i, centred K_ii, raw K_ii)`.
    lowest: (usize, f64, f64),
    /// The largest `|K_ii|` (`|K_ii| + 2|r_i| + |t|` when centred): the scale of the
    /// rounding of a centred diagonal entry.
    terms: f64,
    center: bool,
}

impl Normalization {
    /// The factor on a kernel of (centred) trace `trace` over points of total weight
    /// `weight`, with `mean_all` the mean of all its entries (read by the multiplicative
    /// normalisation only) and `raw_scale` the trace of `|diag|`: 0 for a kernel whose trace
    /// (or variance) is rounding of that scale, which carries nothing.
    fn scale(self, trace: f64, weight: f64, mean_all: f64, raw_scale: f64) -> f64 {
        let zero = trace <= DEGENERATE * raw_scale;
        match self {
            Normalization::None | Normalization::Spherical => 1.0,
            _ if zero => 0.0,
            Normalization::Trace => 1.0 / trace,
            Normalization::MeanDiag => weight / trace,
            Normalization::Multiplicative => {
                let var = trace / weight - mean_all;
                if var <= DEGENERATE * raw_scale / weight {
                    0.0
                } else {
                    1.0 / var
                }
            }
        }
    }
}

impl KernelStats {
    /// Checks, before any normalisation, the condition every PSD kernel meets on its
    /// diagonal: `K_ii = e_iᵀ K e_i ≥ 0` (after centring, `K̃_ii ≥ 0`: a conditionally PSD
    /// kernel passes once centred), to rounding (`rtol` of the diagonal's terms). A
    /// normalisation would hide the failure: a kernel of negative trace is scaled to zero as
    /// degenerate, and the spherical one zeroes the rows of negative self-values.
    ///
    /// # Errors
    /// [`MkError::NotPsd`] naming kernel `m` and its most negative diagonal entry.
    pub(crate) fn check_diagonal(&self, m: usize, rtol: f64) -> Result<()> {
        let (i, centred, raw) = self.lowest;
        if centred.is_nan() || centred >= -rtol * self.terms {
            return Ok(());
        }
        let reason = if self.center {
            format!(
                "its diagonal entry after centring K̃[{i},{i}] = {centred} is negative (raw \
                 K[{i},{i}] = {raw}; a centred PSD kernel has K̃_ii ≥ 0), before any \
                 normalisation; fix the kernel, or shift it by adding c·I"
            )
        } else {
            format!(
                "its diagonal entry K[{i},{i}] = {raw} is negative (K_ii = e_iᵀ K e_i ≥ 0 for \
                 a PSD kernel), before any normalisation; fix the kernel, or shift it by \
                 adding c·I"
            )
        };
        Err(MkError::NotPsd {
            kernel: m,
            entry: (i, i),
            reason,
        })
    }
}
