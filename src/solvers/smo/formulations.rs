//! The SVM duals built on [`SmoState`], each set up exactly as libsvm's `solve_*` functions so
//! that the reported objective equals libsvm's (and scikit-learn's) dual objective.

use super::solver::{QpSpec, SmoState};
use super::{KernelColumns, SmoOptions};
use crate::error::{MkError, Result};
use crate::interrupt::Interrupt;

/// A solved SVM dual. The model is `f(x) = Σ_i coef_i K(x, x_i) + intercept`.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmSolution {
    /// The QP's own variables α ≥ 0 (length `n`; `2n` for ε-SVR: `[α; α*]`). Pass them back as
    /// the warm start of the next solve.
    pub alpha: Vec<f64>,
    /// Expansion coefficients (length `n`): `y_i α_i` for the SVMs, `α_i − α*_i` for ε-SVR,
    /// `α_i` for the one-class SVM (scikit-learn's `dual_coef_`).
    pub coef: Vec<f64>,
    /// `b = −ρ`.
    pub intercept: f64,
    /// libsvm's `ρ`.
    pub rho: f64,
    /// libsvm's dual objective `F(α) = ½αᵀQα + pᵀα`, the value SMO *minimises* (libsvm's
    /// `obj`). For C-SVC it is `½αᵀQα − 1ᵀα`; see [`dual_value`](Self::dual_value) for the
    /// maximisation form.
    pub objective: f64,
    /// SMO steps taken.
    pub iterations: usize,
    /// Whether `m(α) − M(α) < eps` was reached (else `max_iter` stopped it).
    pub converged: bool,
    /// Final maximal KKT violation `m(α) − M(α)`.
    pub violation: f64,
    /// The model without intercept at every kernel row, `f = K̃ coef`, read from the final
    /// gradient (`f_{k(t)} = y_t (G_t − p_t − d_t α_t)`, as `Q_st = y_s y_t K̃ + [s = t] d_t`):
    /// no product with the kernel, whose columns may be costly to compute.
    pub values: Vec<f64>,
}

impl SvmSolution {
    /// The dual in maximisation form, `−F(α)`: for C-SVC `1ᵀα − ½αᵀQα`, which lower-bounds the
    /// primal `C Σ hinge + ½‖f‖²` (the `D` of `docs/mathematics.md` §1); for the squared hinge
    /// `1ᵀα − ½αᵀQα − Σ α_i²/(2C_i)`; for ε-SVR `Σ y_i(α_i − α*_i) − ε Σ(α_i + α*_i) − ½βᵀKβ`.
    pub fn dual_value(&self) -> f64 {
        -self.objective
    }
}

/// `C` given as one value or one per sample; every value must be finite and > 0.
fn expand_c(c: &[f64], n: usize) -> Result<Vec<f64>> {
    let v = match c.len() {
        1 => vec![c[0]; n],
        len if len == n => c.to_vec(),
        len => {
            return Err(MkError::Shape(format!(
                "C must have length 1 or n = {n}, got {len}"
            )))
        }
    };
    if let Some(bad) = v.iter().find(|&&x| !(x.is_finite() && x > 0.0)) {
        return Err(MkError::config(
            "C",
            format!("must be finite and > 0, got {bad}"),
        ));
    }
    Ok(v)
}

fn check_kernel<K: KernelColumns + ?Sized>(kernel: &K, n: usize, what: &str) -> Result<()> {
    if kernel.n() != n {
        return Err(MkError::Shape(format!(
            "kernel of size {} for {n} {what}",
            kernel.n()
        )));
    }
    Ok(())
}

fn check_labels(y: &[f64]) -> Result<()> {
    if y.len() < 2 {
        return Err(MkError::config("y", "need at least 2 samples"));
    }
    if y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(MkError::config("y", "labels must be +1 or -1"));
    }
    if !(y.contains(&1.0) && y.contains(&-1.0)) {
        return Err(MkError::config(
            "y",
            "both classes +1 and -1 must be present",
        ));
    }
    Ok(())
}

/// The warm start, or `default`; checks length and the equality constraint `yᵀα = Δ` (box
/// violations beyond rounding are checked by [`SmoState::new`]).
///
/// A previous solve's `α` meets `yᵀα = Δ` only up to the rounding of its many pair updates
/// and bound clamps: with a kernel scaled by 1e12 the drift reached 2.3e-9 of `Σ|α|` and the
/// group solver's next warm start was refused. A drift up to [`REPAIRABLE`] of the scale is
/// removed here: `α` is clamped to its box `[0, upper]` and the residual moved onto the
/// variables with the most room in the needed direction, so the start is feasible.
fn initial_alpha(
    warm: Option<&[f64]>,
    y: &[f64],
    upper: &[f64],
    delta: f64,
    default: impl FnOnce() -> Vec<f64>,
) -> Result<Vec<f64>> {
    let Some(a) = warm else {
        return Ok(default());
    };
    if a.len() != y.len() {
        return Err(MkError::Shape(format!(
            "warm start of length {}, expected {}",
            a.len(),
            y.len()
        )));
    }
    let dot: f64 = a.iter().zip(y).map(|(a, y)| a * y).sum();
    let scale: f64 = a
        .iter()
        .map(|a| a.abs())
        .sum::<f64>()
        .max(delta.abs())
        .max(1.0);
    if (dot - delta).abs() <= 1e-9 * scale {
        return Ok(a.to_vec());
    }
    // NaN included: it is not below the bound.
    if (dot - delta).abs().partial_cmp(&(REPAIRABLE * scale)) != Some(std::cmp::Ordering::Less) {
        return Err(MkError::config(
            "warm_start",
            format!("violates the equality constraint: yᵀα = {dot}, expected {delta}"),
        ));
    }
    let mut alpha: Vec<f64> = a
        .iter()
        .zip(upper)
        .map(|(&v, &u)| v.clamp(0.0, u))
        .collect();
    let mut residual = delta - alpha.iter().zip(y).map(|(a, y)| a * y).sum::<f64>();
    // Moving α_i by y_i·t changes yᵀα by t (y_i = ±1): room for t of the residual's sign,
    // which never flips (no step overshoots).
    let sign = residual.signum();
    let room = |i: usize, alpha: &[f64]| {
        if sign * y[i] > 0.0 {
            upper[i] - alpha[i]
        } else {
            alpha[i]
        }
    };
    let mut order: Vec<usize> = (0..alpha.len()).collect();
    order.sort_by(|&i, &j| room(j, &alpha).total_cmp(&room(i, &alpha)));
    for i in order {
        if residual == 0.0 {
            break;
        }
        let t = residual.abs().min(room(i, &alpha));
        alpha[i] += y[i] * sign * t;
        residual -= sign * t;
    }
    Ok(alpha)
}

/// The largest drift of `yᵀα` from `Δ`, relative to `Σ|α|`, that [`initial_alpha`] repairs
/// as rounding; a larger one is a wrong warm start.
const REPAIRABLE: f64 = 1e-6;

/// A warm start: the QP variables `alpha` of a previous solve and, when the caller holds
/// them, the model values `K̃ coef` at them, from which the gradient costs no kernel column
/// ([`SmoState::with_values`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Warm<'a> {
    pub alpha: &'a [f64],
    pub values: Option<&'a [f64]>,
}

impl<'a> Warm<'a> {
    /// The warm start `alpha`, without model values.
    pub fn at(alpha: &'a [f64]) -> Self {
        Warm {
            alpha,
            values: None,
        }
    }
}

fn run<K: KernelColumns + ?Sized>(
    kernel: &K,
    spec: &QpSpec<'_>,
    alpha0: &[f64],
    values: Option<&[f64]>,
    options: &SmoOptions,
    interrupt: &dyn Interrupt,
    coef: impl FnOnce(&[f64]) -> Vec<f64>,
) -> Result<SvmSolution> {
    let mut state = match values {
        Some(v) => SmoState::with_values(kernel, spec, alpha0, options, v)?,
        None => SmoState::new(kernel, spec, alpha0, options)?,
    };
    let info = state.solve(kernel, interrupt)?;
    let alpha = state.alpha();
    let g = state.gradient();
    // Variables t < n read kernel row t (the identity, or t mod n for ε-SVR).
    let values = (0..kernel.n())
        .map(|t| {
            let d = spec.diag_shift.map_or(0.0, |d| d[t]);
            spec.y[t] * (g[t] - spec.p[t] - d * alpha[t])
        })
        .collect();
    Ok(SvmSolution {
        values,
        coef: coef(&alpha),
        alpha,
        intercept: -info.rho,
        rho: info.rho,
        objective: info.objective,
        iterations: info.iterations,
        converged: info.converged,
        violation: info.violation,
    })
}

/// C-SVC (hinge loss), libsvm's `solve_c_svc`:
///
/// ```text
/// primal  min_{f,b}  Σ_i C_i max(0, 1 − y_i (f(x_i) + b)) + ½‖f‖²
/// dual    min_α  ½ αᵀQα − 1ᵀα   s.t.  yᵀα = 0,  0 ≤ α_i ≤ C_i,    Q = Y K Y
/// ```
///
/// `y ∈ {±1}ⁿ` with both classes, `c` of length 1 or `n` (per-sample C, e.g. class weights),
/// `warm`: a previous `alpha` (feasible for these bounds). `coef = y ∘ α`.
pub fn svc<K: KernelColumns + ?Sized>(
    kernel: &K,
    y: &[f64],
    c: &[f64],
    options: &SmoOptions,
    warm: Option<&[f64]>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    svc_shifted(kernel, y, c, None, options, warm.map(Warm::at), interrupt)
}

/// [`svc`] with a fixed function `o` added to the model, `f(x_i) + o_i + b`: the margin of
/// point `i` is `1 − y_i o_i`, so `p_i = y_i o_i − 1` (group MKL's unpenalised blocks,
/// docs/mathematics.md §4).
pub(crate) fn svc_shifted<K: KernelColumns + ?Sized>(
    kernel: &K,
    y: &[f64],
    c: &[f64],
    offset: Option<&[f64]>,
    options: &SmoOptions,
    warm: Option<Warm<'_>>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    check_labels(y)?;
    let upper = expand_c(c, y.len())?;
    classifier(kernel, y, &upper, None, offset, options, warm, interrupt)
}

/// The two-class dual shared by [`svc`] and [`l2svm`]: `p = −1` (`y ∘ o − 1` with an offset
/// `o`), `Δ = 0`, `coef = y ∘ α`.
#[allow(clippy::too_many_arguments)]
fn classifier<K: KernelColumns + ?Sized>(
    kernel: &K,
    y: &[f64],
    upper: &[f64],
    diag_shift: Option<&[f64]>,
    offset: Option<&[f64]>,
    options: &SmoOptions,
    warm: Option<Warm<'_>>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    let n = y.len();
    check_kernel(kernel, n, "labels")?;
    let p = match offset {
        Some(o) => y.iter().zip(o).map(|(y, o)| y * o - 1.0).collect(),
        None => vec![-1.0; n],
    };
    let alpha0 = initial_alpha(warm.map(|w| w.alpha), y, upper, 0.0, || vec![0.0; n])?;
    // The values belong to the warm start as given, not to a repaired one.
    let values = warm.and_then(|w| w.values.filter(|_| w.alpha == alpha0.as_slice()));
    let spec = QpSpec {
        p: &p,
        y,
        upper,
        diag_shift,
        kernel_index: None,
    };
    run(kernel, &spec, &alpha0, values, options, interrupt, |a| {
        a.iter().zip(y).map(|(a, y)| a * y).collect()
    })
}

/// L2-SVM (squared hinge loss):
///
/// ```text
/// primal  min_{f,b}  Σ_i C_i · ½ max(0, 1 − y_i (f(x_i) + b))² + ½‖f‖²
/// dual    min_α  ½ αᵀ(Q + diag(1/C))α − 1ᵀα   s.t.  yᵀα = 0,  α ≥ 0   (no upper bound)
/// ```
///
/// At the optimum `max(0, 1 − y_i f(x_i)) = α_i / C_i`. `coef = y ∘ α`. The upper bounds are
/// `+∞`; the solver's clipping never fires on them.
pub fn l2svm<K: KernelColumns + ?Sized>(
    kernel: &K,
    y: &[f64],
    c: &[f64],
    options: &SmoOptions,
    warm: Option<&[f64]>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    l2svm_shifted(kernel, y, c, None, options, warm.map(Warm::at), interrupt)
}

/// [`l2svm`] with a fixed function `o` added to the model (as [`svc_shifted`]).
pub(crate) fn l2svm_shifted<K: KernelColumns + ?Sized>(
    kernel: &K,
    y: &[f64],
    c: &[f64],
    offset: Option<&[f64]>,
    options: &SmoOptions,
    warm: Option<Warm<'_>>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    check_labels(y)?;
    let n = y.len();
    let shift: Vec<f64> = expand_c(c, n)?.iter().map(|c| 1.0 / c).collect();
    let upper = vec![f64::INFINITY; n];
    classifier(
        kernel,
        y,
        &upper,
        Some(&shift),
        offset,
        options,
        warm,
        interrupt,
    )
}

/// ε-SVR, libsvm's `solve_epsilon_svr`, with `2n` variables `[α; α*]`:
///
/// ```text
/// primal  min_{f,b}  Σ_i C_i max(0, |y_i − f(x_i) − b| − ε) + ½‖f‖²
/// dual    min  ½ (α − α*)ᵀK(α − α*) + Σ_i (ε − y_i) α_i + Σ_i (ε + y_i) α*_i
///         s.t. Σ_i (α_i − α*_i) = 0,  0 ≤ α_i, α*_i ≤ C_i
/// ```
///
/// i.e. the generic problem with signs `[+1…; −1…]`, `p = [ε − y; ε + y]` and `K̃` read through
/// the index map `t ↦ t mod n` (libsvm's `SVR_Q`, never materialised). `coef = α − α*`;
/// `warm` is a previous `alpha` of length `2n`.
pub fn svr<K: KernelColumns + ?Sized>(
    kernel: &K,
    y: &[f64],
    c: &[f64],
    epsilon: f64,
    options: &SmoOptions,
    warm: Option<&[f64]>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    let n = y.len();
    if n < 2 {
        return Err(MkError::config("y", "need at least 2 samples"));
    }
    if y.iter().any(|v| !v.is_finite()) {
        return Err(MkError::non_finite("the targets y"));
    }
    if !(epsilon.is_finite() && epsilon >= 0.0) {
        return Err(MkError::config(
            "epsilon",
            format!("must be finite and ≥ 0, got {epsilon}"),
        ));
    }
    check_kernel(kernel, n, "targets")?;
    let c = expand_c(c, n)?;
    let upper: Vec<f64> = c.iter().chain(&c).copied().collect();
    let p: Vec<f64> = y
        .iter()
        .map(|y| epsilon - y)
        .chain(y.iter().map(|y| epsilon + y))
        .collect();
    let signs: Vec<f64> = (0..2 * n).map(|t| if t < n { 1.0 } else { -1.0 }).collect();
    let kidx: Vec<usize> = (0..2 * n).map(|t| t % n).collect();
    let alpha0 = initial_alpha(warm, &signs, &upper, 0.0, || vec![0.0; 2 * n])?;
    let spec = QpSpec {
        p: &p,
        y: &signs,
        upper: &upper,
        diag_shift: None,
        kernel_index: Some(&kidx),
    };
    run(kernel, &spec, &alpha0, None, options, interrupt, |a| {
        a[..n].iter().zip(&a[n..]).map(|(a, b)| a - b).collect()
    })
}

/// One-class SVM (Schölkopf et al. 2001), libsvm's `solve_one_class`, scaled as libsvm and
/// scikit-learn's `OneClassSVM`, with a weight `w_i` per sample as scikit-learn's libsvm
/// takes `sample_weight` (`w` of length 1: the same weight for all):
///
/// ```text
/// dual  min_α  ½ αᵀKα   s.t.  1ᵀα = ν Σ_i w_i,  0 ≤ α_i ≤ w_i
/// ```
///
/// Decision function `f(x) = Σ_i α_i K(x, x_i) − ρ` (`coef = α`, `intercept = −ρ`). The cold
/// start is libsvm's: the variables in order at their bound until the sum is reached.
pub fn one_class<K: KernelColumns + ?Sized>(
    kernel: &K,
    nu: f64,
    w: &[f64],
    options: &SmoOptions,
    warm: Option<&[f64]>,
    interrupt: &dyn Interrupt,
) -> Result<SvmSolution> {
    let n = kernel.n();
    if n < 2 {
        return Err(MkError::config("kernel", "need at least 2 samples"));
    }
    if !(nu > 0.0 && nu <= 1.0) {
        return Err(MkError::config(
            "nu",
            format!("must be in (0, 1], got {nu}"),
        ));
    }
    let upper = expand_c(w, n)?;
    let ones = vec![1.0; n];
    let total = nu * upper.iter().sum::<f64>();
    let alpha0 = initial_alpha(warm, &ones, &upper, total, || {
        let mut left = total;
        upper
            .iter()
            .map(|&u| {
                let a = u.min(left).max(0.0);
                left -= a;
                a
            })
            .collect()
    })?;
    let p = vec![0.0; n];
    let spec = QpSpec {
        p: &p,
        y: &ones,
        upper: &upper,
        diag_shift: None,
        kernel_index: None,
    };
    run(
        kernel,
        &spec,
        &alpha0,
        None,
        options,
        interrupt,
        <[f64]>::to_vec,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warm_start_drifted_by_rounding_is_repaired_and_a_wrong_one_refused() {
        let y = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0];
        let upper = [1.0; 6];
        // yᵀα = 2.5e-8 (Σ|α| = 3): beyond the 1e-9 of rounding, within REPAIRABLE.
        let a = [1.0, 1.0, 0.3 + 2.5e-8, 0.5, 0.2, 0.0];
        let fixed = initial_alpha(Some(&a), &y, &upper, 0.0, Vec::new).unwrap();
        let dot: f64 = fixed.iter().zip(&y).map(|(a, y)| a * y).sum();
        assert!(dot.abs() < 1e-15, "{dot}");
        assert!(fixed
            .iter()
            .zip(&upper)
            .all(|(&v, &u)| (0.0..=u).contains(&v)));
        let moved: f64 = fixed.iter().zip(&a).map(|(f, a)| (f - a).abs()).sum();
        assert!(moved <= 2.6e-8, "{moved}");
        // A box violation is clamped first; then the residual (here +3e-8) goes where there
        // is room: α_0 = 1 is at its bound and cannot grow.
        for b in [
            [1.0, 1.0 + 5e-8, 0.0, 0.0, 0.0, 0.0],
            [1.0, 0.5, 0.0, 0.5 + 3e-8, 0.0, 0.0],
        ] {
            let fixed = initial_alpha(Some(&b), &y, &upper, 0.0, Vec::new).unwrap();
            let dot: f64 = fixed.iter().zip(&y).map(|(a, y)| a * y).sum();
            assert!(dot.abs() < 1e-15, "{dot}");
            assert!(fixed.iter().all(|&v| (0.0..=1.0).contains(&v)));
            assert_eq!(fixed[0], 1.0);
        }
        let wrong = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!(initial_alpha(Some(&wrong), &y, &upper, 0.0, Vec::new).is_err());
    }
}
