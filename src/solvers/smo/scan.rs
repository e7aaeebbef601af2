//! The hot loops of an SMO step, written branch-free over plain slices so that they vectorise:
//! the two scans of WSS2 and the gradient update. Lane-wise accumulators keep libsvm's
//! tie-breaking (the *last* index among equal maxima/minima) without a serial dependency.

/// Accumulator width (two AVX-512 / four AVX2 / eight SSE2 registers of f64).
const L: usize = 8;

/// Curvature used for non-positive-definite pairs (libsvm's `TAU`).
pub(super) const TAU: f64 = 1e-12;

/// `max_t h_t + mask_t` and its last index (`mask_t ∈ {0, −∞}` excludes `t`);
/// `None` when every entry is excluded.
pub(super) fn last_argmax(h: &[f64], mask: &[f64]) -> Option<(f64, usize)> {
    let len = h.len().min(mask.len());
    let (h, mask) = (&h[..len], &mask[..len]);
    let mut best = [f64::NEG_INFINITY; L];
    let mut idx = [0usize; L];
    let full = len / L * L;
    for (c, (hc, mc)) in h[..full]
        .chunks_exact(L)
        .zip(mask[..full].chunks_exact(L))
        .enumerate()
    {
        let base = c * L;
        for l in 0..L {
            let v = hc[l] + mc[l];
            let take = v >= best[l];
            best[l] = if take { v } else { best[l] };
            idx[l] = if take { base + l } else { idx[l] };
        }
    }
    for t in full..len {
        let v = h[t] + mask[t];
        if v >= best[0] {
            best[0] = v;
            idx[0] = t;
        }
    }
    let mut out: Option<(f64, usize)> = None;
    for l in 0..L {
        // An excluded entry is −∞, so a finite best always points at an eligible one.
        if best[l] == f64::NEG_INFINITY {
            continue;
        }
        out = match out {
            Some((v, i)) if v > best[l] || (v == best[l] && i > idx[l]) => Some((v, i)),
            _ => Some((best[l], idx[l])),
        };
    }
    out
}

/// Lane-wise state of WSS2's second scan.
pub(super) struct Scan2 {
    gmax2: [f64; L],
    obj: [f64; L],
    idx: [usize; L],
}

impl Scan2 {
    pub(super) fn new() -> Self {
        Self {
            gmax2: [f64::NEG_INFINITY; L],
            obj: [f64::INFINITY; L],
            idx: [0; L],
        }
    }

    /// Over one block of positions `base..base + h.len()`, with `h_t = −y_t G_t`, `low_t` the
    /// `I_low` mask, `qd_t = Q_tt` and `ki_t = K̃_{k(i) k(t)}`:
    /// `M' = max_{t∈I_low} −h_t` and `argmin_{t∈I_low, b_t>0} −b_t²/a_t`, `b_t = m − h_t`,
    /// `a_t = qd_i + qd_t − 2 ki_t` (τ if ≤ 0).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn block(
        &mut self,
        gmax: f64,
        qdi: f64,
        h: &[f64],
        low: &[f64],
        qd: &[f64],
        ki: &[f64],
        base: usize,
    ) {
        let len = h.len().min(low.len()).min(qd.len()).min(ki.len());
        let (h, low, qd, ki) = (&h[..len], &low[..len], &qd[..len], &ki[..len]);
        let full = len / L * L;
        let (mut gm2, mut obj, mut idx) = (self.gmax2, self.obj, self.idx);
        macro_rules! one {
            ($l:expr, $t:expr, $hv:expr, $m:expr, $q:expr, $k:expr) => {{
                let (hv, m) = ($hv, $m);
                let neg = m - hv;
                gm2[$l] = if neg > gm2[$l] { neg } else { gm2[$l] };
                let b = gmax - hv + m;
                let quad = qdi + $q - 2.0 * $k;
                let quad = if quad > 0.0 { quad } else { TAU };
                let o = if b > 0.0 {
                    -(b * b) / quad
                } else {
                    f64::INFINITY
                };
                let take = o <= obj[$l];
                obj[$l] = if take { o } else { obj[$l] };
                idx[$l] = if take { base + $t } else { idx[$l] };
            }};
        }
        for c in 0..full / L {
            let s = c * L;
            let (hc, mc, qc, kc) = (&h[s..s + L], &low[s..s + L], &qd[s..s + L], &ki[s..s + L]);
            for l in 0..L {
                one!(l, s + l, hc[l], mc[l], qc[l], kc[l]);
            }
        }
        for t in full..len {
            one!(0, t, h[t], low[t], qd[t], ki[t]);
        }
        (self.gmax2, self.obj, self.idx) = (gm2, obj, idx);
    }

    /// `(M', j)`; `j` is `None` when no pair makes progress.
    pub(super) fn finish(&self) -> (f64, Option<usize>) {
        let gmax2 = self.gmax2.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut out: Option<(f64, usize)> = None;
        for l in 0..L {
            // Non-candidates score +∞, so a finite minimum always points at a candidate.
            if self.obj[l] == f64::INFINITY {
                continue;
            }
            out = match out {
                Some((v, i)) if v < self.obj[l] || (v == self.obj[l] && i > self.idx[l]) => {
                    Some((v, i))
                }
                _ => Some((self.obj[l], self.idx[l])),
            };
        }
        (gmax2, out.map(|(_, j)| j))
    }
}

/// `h_t −= ki_t c_i + kj_t c_j`: the gradient update of one step.
#[inline]
pub(super) fn update(h: &mut [f64], ki: &[f64], kj: &[f64], ci: f64, cj: f64) {
    for ((g, &a), &b) in h.iter_mut().zip(ki).zip(kj) {
        *g -= a * ci + b * cj;
    }
}

/// `out_t = row[kidx_t]`: a kernel column in position order.
#[inline]
pub(super) fn gather(row: &[f64], kidx: &[u32], out: &mut [f64]) {
    for (o, &k) in out.iter_mut().zip(kidx) {
        *o = row[k as usize];
    }
}
