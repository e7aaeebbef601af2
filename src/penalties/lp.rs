//! ℓp-norm MKL's penalty (Kloft et al. 2011; docs/mathematics.md §0, §1.3, §3.1):
//! `Ω(s) = ½ (Σ_m s_m^q)^{2/q}`, `q = 2p/(p+1)`, on the block norms `s_m = ‖f_m‖`, its dual
//! norm `‖·‖_{p*}`, its gradient and the closed-form kernel weights θ of eq. 17.

/// ℓp's default `p` (the estimators' and `LpConfig`'s).
pub const DEFAULT_P: f64 = 2.0;

/// ℓp's `q = 2p/(p+1)` (2 for `p = ∞`).
pub fn lp_q(p: f64) -> f64 {
    if p.is_infinite() {
        2.0
    } else {
        2.0 * p / (p + 1.0)
    }
}

/// `½ (Σ_m s_m^q)^{2/q}` with `q = 2p/(p+1)` (`q = 2` for `p = ∞`).
pub fn lp_penalty(norms: &[f64], p: f64) -> f64 {
    let q = lp_q(p);
    let s: f64 = norms.iter().map(|s| s.max(0.0).powf(q)).sum();
    0.5 * s.powf(2.0 / q)
}

/// `‖v‖_{p*}` with `p* = p/(p−1)` (`∞` for `p = 1`, `1` for `p = ∞`), for `v ≥ 0`.
pub fn dual_norm(v: &[f64], p: f64) -> f64 {
    if p == 1.0 {
        v.iter().fold(0.0f64, |a, &x| a.max(x.max(0.0)))
    } else if p.is_infinite() {
        v.iter().map(|x| x.max(0.0)).sum()
    } else {
        p_norm(v, p / (p - 1.0))
    }
}

/// `(Σ_m v_m^p)^{1/p}` for `v ≥ 0` (the largest entry for `p = ∞`), scaled by the largest
/// entry so that a large `p` does not overflow: the one p-norm of the ℓp solvers' weights.
pub fn p_norm(v: &[f64], p: f64) -> f64 {
    let mx = v.iter().fold(0.0f64, |a, &x| a.max(x));
    if p.is_infinite() || !(mx > 0.0 && mx.is_finite()) {
        return mx.max(0.0);
    }
    mx * v
        .iter()
        .map(|x| (x.max(0.0) / mx).powf(p))
        .sum::<f64>()
        .powf(1.0 / p)
}

/// Kloft eq. 17: the optimal unit-p-norm θ given the block norms `‖w_m‖`.
pub fn theta_update(wnorms: &[f64], p: f64) -> Vec<f64> {
    if p.is_infinite() {
        return vec![1.0; wnorms.len()];
    }
    let mx = wnorms.iter().fold(0.0f64, |a, &x| a.max(x));
    if mx <= 0.0 {
        let m = wnorms.len() as f64;
        return vec![m.powf(-1.0 / p); wnorms.len()];
    }
    // θ_m ∝ ‖w_m‖^{2/(p+1)}, normalised to unit p-norm (scale-free, so divide by the max first).
    let t: Vec<f64> = wnorms
        .iter()
        .map(|w| (w / mx).powf(2.0 / (p + 1.0)))
        .collect();
    let norm = p_norm(&t, p);
    t.iter().map(|x| x / norm).collect()
}

/// ℓp's gradient per block, `∇_m Ω = g_m w_m` with `g_m = N^{2−q} s_m^{q−2}`,
/// `N = (Σ_m s_m^q)^{1/q}` (docs/mathematics.md §2.13); 0 for a zero block and when every
/// block is zero (`Ω` is flat there for `q > 1`).
pub fn lp_gradient_scales(norms: &[f64], p: f64) -> Vec<f64> {
    let q = lp_q(p);
    let big_n = (2.0 * lp_penalty(norms, p)).sqrt();
    if big_n <= 0.0 {
        return vec![0.0; norms.len()];
    }
    let a = big_n.powf(2.0 - q);
    norms
        .iter()
        .map(|&s| if s > 0.0 { a * s.powf(q - 2.0) } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theta_has_unit_p_norm_and_matches_eq_17() {
        let w = [0.3, 1.2, 0.0, 2.5];
        for p in [1.0, 4.0 / 3.0, 2.0, 4.0] {
            let t = theta_update(&w, p);
            let norm: f64 = t.iter().map(|x| x.powf(p)).sum::<f64>().powf(1.0 / p);
            assert!((norm - 1.0).abs() < 1e-12);
            let denom: f64 = w
                .iter()
                .map(|x: &f64| x.powf(2.0 * p / (p + 1.0)))
                .sum::<f64>();
            for (ti, wi) in t.iter().zip(&w) {
                let e = wi.powf(2.0 / (p + 1.0)) / denom.powf(1.0 / p);
                assert!((ti - e).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn penalty_is_the_variational_form() {
        // ½(Σ s^q)^{2/q} = min_{‖θ‖_p ≤ 1} ½ Σ s_m²/θ_m, attained at eq. 17.
        let s = [0.5, 1.5, 0.2];
        for p in [1.0, 2.0, 3.0] {
            let t = theta_update(&s, p);
            let v: f64 = s.iter().zip(&t).map(|(a, b)| 0.5 * a * a / b).sum();
            assert!((v - lp_penalty(&s, p)).abs() < 1e-12);
        }
    }
}
