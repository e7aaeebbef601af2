//! The second-order step on `λ` (docs/mathematics.md §4, "Second-order step"), after
//! Chapelle & Rakotomamonjy's HessianMKL ("Second order optimization of kernel parameters",
//! 2008), for the hinge and squared hinge losses.
//!
//! Saddle function ([Nath] eq. 3–4), `Q_jk = Y K_jk Y`:
//! `φ(λ, α, γ) = 1ᵀα − ½ αᵀα/C_sq − ½ Σ_j Σ_k (λ_jk/γ_j) αᵀQ_jkα` (`1/C_sq = 0` for the hinge
//! loss, `1/C` for the squared hinge, whose SMO dual adds `diag(1/C)`), and
//! `J(λ) = max_{α, γ} φ` is convex in `λ` (a max of linear functions). With the free support
//! vectors `F` (`0 < α_i < C`; squared hinge: `0 < α_i`) fixed,
//! `x = (α_F, γ)` solves the equality-constrained problem `max φ` s.t. `y_Fᵀα_F = const`,
//! `1ᵀγ = 1`, so (implicit function theorem) `J`'s second-order model at `(λ, x)` is
//!
//! ```text
//! J(λ + d) ≈ J + (φ_λ + φ_λx dx₀)ᵀd + ½ dᵀ(φ_λx X)d,
//! [φ_xx Aᵀ; A 0] [X dx₀; · ·] = −[φ_xλ φ_x; 0 0],
//! ```
//!
//! `dx₀` the Newton correction of the inner variables (`γ` is one alternation behind `α`) and
//! `X = dx/dλ`. The blocks: `φ_αα = −Q_eff,FF − I/C_sq`, `φ_αγ_j = u_j/γ_j²` with
//! `u_j = Σ_k λ_jk (Q_jkα)_F`, `φ_γ_jγ_j = −W_j/γ_j³`, `φ_λ_jk = −½ q_jk/γ_j` (the mirror
//! step's gradient), `φ_λ_jk α = −(Q_jkα)_F/γ_j`, `φ_λ_jk γ_j = ½ q_jk/γ_j²`. The step
//! minimises the model over the product of simplexes (a QP in the working-set weights).
//!
//! The shared multiclass fit (docs/mathematics.md §3.8) has one `α_c` per class on one `K_eff`
//! and one `γ`: `φ = Σ_c φ_c` with `W_j` summed over the classes, `x = (α_1F, …, α_KF, γ)`,
//! and `φ_xx` an arrow (the classes' blocks couple only through `γ`), solved by eliminating
//! each class's block (a Schur complement on `(γ, μ)`).

use faer::linalg::solvers::Solve;
use faer::Mat;

use crate::kernels::CombinedKernel;
use crate::linalg::clear_upper_simd_state;
use crate::losses::Loss;

/// What an iterate offers the second-order step, on the kernels of `set`.
pub(crate) struct Iterate<'a> {
    pub y: &'a [f64],
    /// The SVM's `α ∈ [0, upper]ⁿ`.
    pub alpha: &'a [f64],
    /// The box of `α` (`c_i`; `∞` for the squared hinge) and the ridge `1/c_i` of the squared
    /// hinge's dual, per sample.
    pub upper: &'a [f64],
    pub ridge: &'a [f64],
    /// `K_eff` (stored, or computed on demand) and `K_eff β`.
    pub k_eff: CombinedKernel<'a>,
    pub f: &'a [f64],
    /// `K_k β` for the kernels of `set`, one after another.
    pub products: &'a [f64],
    pub set: &'a [usize],
}

/// The second-order model of `J` on the variables `vars` (kernels of live groups).
pub(super) struct Model {
    /// Global kernel index of each variable.
    pub vars: Vec<usize>,
    /// Local (live) group of each variable, `0..live.len()`.
    pub group: Vec<usize>,
    /// The live groups (`γ_j > 0`).
    pub live: Vec<usize>,
    /// `φ_λ + φ_λx dx₀`.
    pub grad: Vec<f64>,
    /// `φ_λx X` (symmetrised).
    pub hess: Mat<f64>,
    /// `γ + dγ₀` on the live groups, and `dγ/dλ` (`live × vars`).
    pub gamma0: Vec<f64>,
    pub dgamma: Mat<f64>,
}

/// The box and ridge of the SVM dual of `loss` at the per-sample loss weights `c`, for the
/// losses that take the second-order step (the hinge-type classifiers).
pub(crate) fn dual_box(loss: Loss, c: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    match loss {
        Loss::Hinge => Some((c.to_vec(), vec![0.0; c.len()])),
        Loss::SquaredHinge => Some((
            vec![f64::INFINITY; c.len()],
            c.iter().map(|ci| 1.0 / ci).collect(),
        )),
        _ => None,
    }
}

/// The model's variables: the kernels of the iterate's set whose group has `γ_j > 0`.
struct Variables {
    /// Each variable's position in the set (its columns in `Iterate::products`).
    pos: Vec<usize>,
    /// Each variable's kernel.
    vars: Vec<usize>,
    /// The live groups, and each variable's index among them.
    live: Vec<usize>,
    group: Vec<usize>,
}

impl Variables {
    fn of(it: &Iterate, ids: &[usize], gamma: &[f64]) -> Self {
        let mut v = Variables {
            pos: Vec::new(),
            vars: Vec::new(),
            live: Vec::new(),
            group: Vec::new(),
        };
        let mut local = vec![usize::MAX; gamma.len()];
        for (p, &k) in it.set.iter().enumerate() {
            let j = ids[k];
            if gamma[j] > 0.0 {
                if local[j] == usize::MAX {
                    local[j] = v.live.len();
                    v.live.push(j);
                }
                v.pos.push(p);
                v.vars.push(k);
                v.group.push(local[j]);
            }
        }
        v
    }
}

/// Each class's free support vectors, and where its block starts in the model's `x`.
fn free_points(its: &[Iterate], n: usize) -> (Vec<Vec<usize>>, Vec<usize>) {
    let frees: Vec<Vec<usize>> = its
        .iter()
        .map(|it| {
            (0..n)
                .filter(|&i| it.alpha[i] > 0.0 && it.alpha[i] < it.upper[i] * (1.0 - 1e-12))
                .collect()
        })
        .collect();
    let starts: Vec<usize> = frees
        .iter()
        .scan(0, |o, f| {
            let at = *o;
            *o += f.len();
            Some(at)
        })
        .collect();
    (frees, starts)
}

/// The model at the iterate, or `None` when it is degenerate (no live group, a singular or
/// non-finite system). Several iterates are the shared multiclass fit's classes on one
/// `K_eff` (docs/mathematics.md §3.8): `x` holds every class's `α_F` and the one `γ`, each
/// class adds its own block, its coupling to `γ` and its `y`-constraint, and `quad` holds the
/// forms summed over the classes (so `W_j` and `φ_λ` are the sums of the classes' terms).
pub(super) fn model(
    its: &[Iterate],
    ids: &[usize],
    lambda: &[f64],
    gamma: &[f64],
    quad: &[f64],
) -> Option<Model> {
    let n = its.first()?.y.len();
    let Variables {
        pos,
        vars,
        live,
        group,
    } = Variables::of(&its[0], ids, gamma);
    let (s, jl) = (vars.len(), live.len());
    if s == 0 {
        return None;
    }
    let (frees, starts) = free_points(its, n);
    let nf: usize = frees.iter().map(Vec::len).sum();
    let g_of = |r: usize| gamma[live[group[r]]];
    // (Q_k α)_F = y_F (K_k β)_F, class `c`'s `a`-th free point.
    let qa = |c: usize, r: usize, a: usize| {
        let i = frees[c][a];
        its[c].y[i] * its[c].products[pos[r] * n + i]
    };
    let mut w = vec![0.0; jl];
    for r in 0..s {
        w[group[r]] += lambda[vars[r]] * quad[vars[r]].max(0.0);
    }
    // −φ_xλ (one column per variable): the α rows of every class, then γ's.
    let nx = nf + jl;
    let mut pxl = Mat::<f64>::zeros(nx, s);
    for r in 0..s {
        for (c, free) in frees.iter().enumerate() {
            for a in 0..free.len() {
                pxl[(starts[c] + a, r)] = -qa(c, r, a) / g_of(r);
            }
        }
        pxl[(nf + group[r], r)] = 0.5 * quad[vars[r]].max(0.0) / (g_of(r) * g_of(r));
    }
    let x = solve_arrow(
        its,
        (&frees, &starts),
        &pxl,
        lambda,
        (&vars, &group),
        (&live, gamma),
        &w,
    );
    let h = pxl.transpose() * x.subcols(0, s);
    clear_upper_simd_state();
    let grad: Vec<f64> = (0..s)
        .map(|r| {
            let first = -0.5 * quad[vars[r]].max(0.0) / g_of(r);
            first + (0..nx).map(|i| pxl[(i, r)] * x[(i, s)]).sum::<f64>()
        })
        .collect();
    let hess = Mat::from_fn(s, s, |a, b| 0.5 * (h[(a, b)] + h[(b, a)]));
    let gamma0: Vec<f64> = (0..jl).map(|l| gamma[live[l]] + x[(nf + l, s)]).collect();
    let dgamma = Mat::from_fn(jl, s, |l, r| x[(nf + l, r)]);
    let finite = grad.iter().chain(&gamma0).all(|v| v.is_finite())
        && (0..s).all(|a| (0..s).all(|b| hess[(a, b)].is_finite()));
    finite.then_some(Model {
        vars,
        group,
        live,
        grad,
        hess,
        gamma0,
        dgamma,
    })
}

/// The model's system (module docs) for the right-hand sides `−φ_xλ` (`pxl`, one column per
/// variable) and `−φ_x`: `X` and `dx₀` on the classes' `α_F` (each class's free points `frees`
/// from `starts` in `x`) and `γ`. The KKT matrix is an arrow: each class's block
/// `[φ_αα y; yᵀ 0]` couples only to the shared `(γ, μ)` (μ the simplex's multiplier), so each
/// block is eliminated on its own (the Schur complement on `(γ, μ)`), at `Σ_c |F_c|³`, not
/// `(Σ_c |F_c|)³`.
fn solve_arrow(
    its: &[Iterate],
    (frees, starts): (&[Vec<usize>], &[usize]),
    pxl: &Mat<f64>,
    lambda: &[f64],
    (vars, group): (&[usize], &[usize]),
    (live, gamma): (&[usize], &[f64]),
    w: &[f64],
) -> Mat<f64> {
    let (nx, s) = (pxl.nrows(), pxl.ncols());
    let jl = live.len();
    let nf = nx - jl;
    let g_of = |r: usize| gamma[live[group[r]]];
    let (ng, cols) = (jl + 1, s + 1);
    let mut schur = Mat::<f64>::zeros(ng, ng);
    let mut rg = Mat::<f64>::zeros(ng, cols);
    for (l, &j) in live.iter().enumerate() {
        schur[(l, l)] = -w[l] / gamma[j].powi(3);
        schur[(jl, l)] = 1.0;
        schur[(l, jl)] = 1.0;
        for r in 0..s {
            rg[(l, r)] = -pxl[(nf + l, r)];
        }
        rg[(l, s)] = -0.5 * w[l] / (gamma[j] * gamma[j]);
    }
    let mut eliminated = Vec::with_capacity(its.len());
    for (c, it) in its.iter().enumerate() {
        let (free, o) = (&frees[c], starts[c]);
        let nc = free.len();
        if nc == 0 {
            eliminated.push(None);
            continue;
        }
        let k_ff = it.k_eff.block(free);
        let mut a_c = Mat::<f64>::zeros(nc + 1, nc + 1);
        let mut b_c = Mat::<f64>::zeros(nc + 1, ng);
        let mut r_c = Mat::<f64>::zeros(nc + 1, cols);
        for a in 0..nc {
            for b in 0..nc {
                a_c[(a, b)] = -it.y[free[a]] * it.y[free[b]] * k_ff[a * nc + b];
            }
            a_c[(a, a)] -= it.ridge[free[a]];
            a_c[(nc, a)] = it.y[free[a]];
            a_c[(a, nc)] = it.y[free[a]];
            for r in 0..s {
                // φ_αγ_j = Σ_k λ_jk (Q_jkα)_F/γ_j², and pxl's α rows are −(Q_jkα)_F/γ_j.
                b_c[(a, group[r])] -= lambda[vars[r]] / g_of(r) * pxl[(o + a, r)];
                r_c[(a, r)] = -pxl[(o + a, r)];
            }
            let i = free[a];
            r_c[(a, s)] = -(1.0 - it.y[i] * it.f[i] - it.ridge[i] * it.alpha[i]);
        }
        let lu = a_c.partial_piv_lu();
        let (ab, ar) = (lu.solve(&b_c), lu.solve(&r_c));
        schur -= b_c.transpose() * &ab;
        rg -= b_c.transpose() * &ar;
        eliminated.push(Some((ab, ar)));
    }
    schur.partial_piv_lu().solve_in_place(rg.as_mut());
    // Back substitution: every class's `α_F`, then γ.
    let mut x = Mat::<f64>::zeros(nx, cols);
    for (c, e) in eliminated.iter().enumerate() {
        if let Some((ab, ar)) = e {
            let xc = ar - ab * &rg;
            for a in 0..frees[c].len() {
                for col in 0..cols {
                    x[(starts[c] + a, col)] = xc[(a, col)];
                }
            }
        }
    }
    for l in 0..jl {
        for col in 0..cols {
            x[(nf + l, col)] = rg[(l, col)];
        }
    }
    x
}

/// `argmin ½xᵀHx + cᵀx` over `x ≥ 0` with `Σ_{r: group[r] = g} x_r = 1` for every group, by a
/// primal active-set method from the feasible `x0` (each pass solves the equality-constrained
/// QP on the free coordinates, then either moves to the first bound met or frees the bound
/// with the most negative multiplier). `H` must be positive definite.
pub(super) fn simplex_qp(h: &Mat<f64>, c: &[f64], x0: &[f64], group: &[usize]) -> Vec<f64> {
    let s = c.len();
    let groups = group.iter().max().map_or(0, |&g| g + 1);
    let mut x = x0.to_vec();
    let mut free: Vec<bool> = x.iter().map(|&v| v > 0.0).collect();
    let scale = c.iter().fold(1e-300f64, |a, v| a.max(v.abs()));
    // After a full step x minimises the QP on its face: only a multiplier can move it on.
    let mut on_minimum = false;
    for _ in 0..4 * s + 10 {
        let idx: Vec<usize> = (0..s).filter(|&r| free[r]).collect();
        let nf = idx.len();
        let grad: Vec<f64> = (0..s)
            .map(|a| c[a] + (0..s).map(|b| h[(a, b)] * x[b]).sum::<f64>())
            .collect();
        let mut kkt = Mat::<f64>::zeros(nf + groups, nf + groups);
        let mut rhs = Mat::<f64>::zeros(nf + groups, 1);
        for (a, &ra) in idx.iter().enumerate() {
            for (b, &rb) in idx.iter().enumerate() {
                kkt[(a, b)] = h[(ra, rb)];
            }
            kkt[(a, nf + group[ra])] = 1.0;
            kkt[(nf + group[ra], a)] = 1.0;
            rhs[(a, 0)] = -grad[ra];
        }
        kkt.partial_piv_lu().solve_in_place(rhs.as_mut());
        clear_upper_simd_state();
        let p: Vec<f64> = (0..nf).map(|a| rhs[(a, 0)]).collect();
        if p.iter().any(|v| !v.is_finite()) {
            break;
        }
        if on_minimum || p.iter().all(|v| v.abs() <= 1e-13) {
            // Multiplier of x_r ≥ 0 for a bound r: grad_r + ν_g (ν_g = −grad_r', r' free in g).
            let worst = (0..s)
                .filter(|&r| !free[r])
                .map(|r| (r, grad[r] + rhs[(nf + group[r], 0)]))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match worst {
                Some((r, mu)) if mu < -1e-12 * scale => free[r] = true,
                _ => break,
            }
            on_minimum = false;
            continue;
        }
        let mut t = 1.0;
        let mut block = None;
        for (a, &r) in idx.iter().enumerate() {
            if p[a] < 0.0 && -x[r] / p[a] < t {
                t = -x[r] / p[a];
                block = Some(r);
            }
        }
        for (a, &r) in idx.iter().enumerate() {
            x[r] = (x[r] + t * p[a]).max(0.0);
        }
        match block {
            Some(r) => {
                x[r] = 0.0;
                free[r] = false;
            }
            None => on_minimum = true,
        }
    }
    // Rounding: back onto the simplexes.
    let mut total = vec![0.0; groups];
    for r in 0..s {
        total[group[r]] += x[r];
    }
    for r in 0..s {
        x[r] /= total[group[r]];
    }
    x
}
