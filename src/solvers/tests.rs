//! The engine's one entry ([`super::fit`]): every solver through it, or its refusal by name.

use super::*;
use crate::interrupt::NoInterrupt;
use crate::kernels::DenseStack;
use crate::solvers::test_util::Lcg;

/// `n` points with 2 features per kernel: the kernels `1 + X_m X_mᵀ` of `m` feature blocks
/// as a stack (the constant keeps the one-class optimum off zero), the blocks as rows
/// `(n, 2m)`, labels from the first block.
fn problem(n: usize, m: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = Lcg(3);
    let x: Vec<f64> = (0..n * 2 * m).map(|_| rng.next()).collect();
    let y = (0..n)
        .map(|i| {
            if x[i * 2 * m] + 0.3 * x[i * 2 * m + 1] > 0.0 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let mut g = vec![0.0; m * n * n];
    for k in 0..m {
        for i in 0..n {
            for j in 0..n {
                let (a, b) = (&x[i * 2 * m + 2 * k..][..2], &x[j * 2 * m + 2 * k..][..2]);
                g[k * n * n + i * n + j] = 1.0 + a[0] * b[0] + a[1] * b[1];
            }
        }
    }
    (g, x, y)
}

/// Every solver through the one entry: the kernel-space solvers on the stack, the
/// feature-space ones on rows, each certified to its tolerance and named in the result;
/// kernel-space solvers refuse rows, and SVRG a stack, with a message that says what they
/// need.
#[test]
fn every_solver_fits_through_the_one_entry_or_refuses_the_data_by_name() {
    let (n, m) = (40, 3);
    let (g, x, y) = problem(n, m);
    let stack = DenseStack::new(&g, m, n).unwrap();
    let rows = RowFeatures::new(&x, n, &[2; 3]).unwrap();
    for cap in capabilities() {
        let settings = Settings::default_of(cap.solver).unwrap();
        let data = match cap.features {
            true => Data::Rows(&rows),
            false => Data::Stack(&stack),
        };
        let fitted = fit(&settings, data, &y, None, None, &NoInterrupt).unwrap();
        assert_eq!(fitted.solvers, [cap.solver]);
        let r = &fitted.result;
        assert!(r.gap <= 1e-3 && r.dual <= r.primal, "{}: {r:?}", cap.solver);
        if !cap.features {
            let err = fit(&settings, Data::Rows(&rows), &y, None, None, &NoInterrupt)
                .unwrap_err()
                .to_string();
            assert!(err.contains("fits a kernel stack"), "{}: {err}", cap.solver);
        }
    }
    let svrg = Settings::default_of("svrg").unwrap();
    let err = fit(&svrg, Data::Stack(&stack), &y, None, None, &NoInterrupt).unwrap_err();
    assert!(err.to_string().contains("needs explicit features"), "{err}");
    let path = Settings::default_of("path").unwrap();
    let err = fit(&path, Data::Stack(&stack), &y, None, None, &NoInterrupt).unwrap_err();
    assert!(err.to_string().contains("regularization path"), "{err}");
}

/// Every field by name with its value written out (`Debug`): what the binding's dicts
/// hold.
#[derive(Default)]
struct Named(Vec<(&'static str, String)>);

impl Named {
    fn of(settings: &Settings) -> Self {
        let mut named = Named::default();
        settings.clone().fields(&mut named).unwrap();
        named
    }

    fn put(&mut self, key: &'static str, v: &dyn std::fmt::Debug) -> Result<()> {
        self.0.push((key, format!("{v:?}")));
        Ok(())
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl Visitor for Named {
    type Error = MkError;
    fn float(&mut self, key: &'static str, v: &mut f64) -> Result<()> {
        self.put(key, v)
    }
    fn count(&mut self, key: &'static str, v: &mut usize) -> Result<()> {
        self.put(key, v)
    }
    fn optional_count(&mut self, key: &'static str, v: &mut Option<usize>) -> Result<()> {
        self.put(key, v)
    }
    fn flag(&mut self, key: &'static str, v: &mut bool) -> Result<()> {
        self.put(key, v)
    }
    fn text(&mut self, key: &'static str, v: &mut String) -> Result<()> {
        self.put(key, v)
    }
    fn ids(&mut self, key: &'static str, v: &mut Option<Vec<usize>>) -> Result<()> {
        self.put(key, v)
    }
    fn optional_float(&mut self, key: &'static str, v: &mut Option<f64>) -> Result<()> {
        self.put(key, v)
    }
    fn floats(&mut self, key: &'static str, v: &mut Option<Vec<f64>>) -> Result<()> {
        self.put(key, v)
    }
}

/// Source settings of every supervised solver, none at its defaults.
fn sources() -> Vec<Settings> {
    let loss = Loss::EpsilonInsensitive { epsilon: 0.3 };
    let mut out = Vec::new();
    for solver in SOLVER_NAMES {
        let Ok(mut s) = Settings::default_of(solver) else {
            continue;
        };
        if let Some(c) = s.common() {
            (*c.c, *c.tol, *c.max_iter) = (2.5, 1e-5, 17);
            if solver != "interleaved" && solver != "svrg" {
                *c.loss = loss;
            }
        }
        match &mut s {
            Settings::Lp(c) => (c.p, c.inner_tol) = (1.5, 1e-5),
            Settings::Svrg(c) => (c.p, c.seed) = (1.5, 7),
            Settings::Spicy(c) => {
                c.penalty = SparsePenalty::ElasticNet { l1_ratio: 0.3 };
                c.gamma0 = 4.0;
            }
            Settings::Wrapper(c, _) => c.penalty = SparsePenalty::ElasticNet { l1_ratio: 0.3 },
            Settings::Mirror(c, groups) => (c.inner_tol, *groups) = (1e-5, Some(vec![0, 1, 0])),
            _ => continue, // one-class: not a supervised solver
        }
        out.push(s);
    }
    out
}

/// A change of solver carries `C`, the loss (with `epsilon`), `tol`, `max_iter` and the
/// penalty by value, and every other setting of the new solver is its default: what the
/// moves of `solver="auto"` made through the binding's dicts (the names both solvers have
/// kept, the old solver's own dropped, the penalty named), now typed. A penalty the new
/// solver does not solve is refused.
#[test]
fn a_change_of_solver_carries_the_common_settings_and_the_penalty() {
    let carried = ["C", "loss", "epsilon", "tol", "max_iter"];
    // Written from the penalty, which is compared whole.
    let of_penalty = ["penalty", "l1_ratio", "p", "groups"];
    let mut moves = Vec::new();
    for from in sources() {
        let named = Named::of(&from);
        let others = SOLVER_NAMES.into_iter().filter(|&s| s != from.name());
        for to in others.filter(|&s| s != "one_class") {
            let moved = match from.for_solver(to, false) {
                Ok(moved) => moved,
                // The new solver does not solve the penalty or does not take the loss.
                Err(MkError::InvalidConfig { field, .. })
                    if field == "penalty" || field == "loss" =>
                {
                    continue
                }
                Err(e) => panic!("{} → {to}: {e}", from.name()),
            };
            moves.push(format!("{}→{to}", from.name()));
            assert_eq!(moved.name(), to);
            assert_eq!(moved.penalty().unwrap(), from.penalty().unwrap());
            let defaults = Named::of(&Settings::default_of(to).unwrap());
            for (key, value) in Named::of(&moved).0 {
                let expected = match carried.contains(&key) {
                    true => named.get(key),
                    false if of_penalty.contains(&key) => continue,
                    false => defaults.get(key),
                };
                assert_eq!(
                    Some(value.as_str()),
                    expected,
                    "{} → {to}: {key}",
                    from.name()
                );
            }
        }
    }
    // `solver="auto"`'s moves (python/multikernel/_auto.py) are among them.
    for m in [
        "wrapper→prox_newton",
        "spicy→prox_newton",
        "analytic→prox_newton",
    ] {
        assert!(moves.contains(&m.to_string()), "{m}: {moves:?}");
    }
    assert!(
        moves.contains(&"mirror→prox_newton".to_string()),
        "{moves:?}"
    );
    assert!(!moves.contains(&"mirror→analytic".to_string()), "{moves:?}");
}

/// The same solver keeps every setting; `continued` is the wrapper's only; the group ids
/// are set on the group penalty only.
#[test]
fn the_same_solver_keeps_its_settings_and_groups_go_to_the_group_penalty() {
    for from in sources() {
        let same = from.for_solver(from.name(), false).unwrap();
        let continued = from.for_solver(from.name(), true);
        match &from {
            Settings::Wrapper(c, _) => {
                assert_eq!(same, from);
                assert_eq!(continued.unwrap(), Settings::Wrapper(*c, true));
            }
            _ => {
                assert_eq!(same, from);
                assert!(continued.unwrap_err().to_string().contains("continued"));
            }
        }
    }
    let mirror = Settings::default_of("mirror").unwrap();
    let grouped = mirror.with_groups(vec![0, 0, 1]).unwrap();
    assert_eq!(
        grouped,
        Settings::Mirror(MirrorConfig::default(), Some(vec![0, 0, 1]))
    );
    let newton = grouped.for_solver("prox_newton", false).unwrap();
    let Settings::ProxNewton(c) = newton.with_groups(vec![1, 0]).unwrap() else {
        panic!("prox_newton's settings");
    };
    assert_eq!(c.penalty.group_ids(), Some(&[1, 0][..]));
    for other in ["analytic", "spicy", "prox_newton"] {
        let err = Settings::default_of(other)
            .unwrap()
            .with_groups(vec![0])
            .unwrap_err();
        assert!(err.to_string().contains("groups"), "{other}: {err}");
    }
    let one_class = Settings::default_of("one_class").unwrap();
    assert!(one_class.for_solver("analytic", false).is_err());
}

/// A start the solver does not take is refused, naming the argument.
#[test]
fn a_start_for_another_solver_is_refused() {
    let (n, m) = (20, 2);
    let (g, _, y) = problem(n, m);
    let stack = DenseStack::new(&g, m, n).unwrap();
    let start = Start::Spicy(SpicyStart {
        coef: vec![0.0; m * n],
        intercept: 0.0,
        dual: None,
    });
    let lp = Settings::default_of("analytic").unwrap();
    let err = fit(
        &lp,
        Data::Stack(&stack),
        &y,
        None,
        Some(&start),
        &NoInterrupt,
    );
    assert!(err.unwrap_err().to_string().contains("init_coef"));
}
