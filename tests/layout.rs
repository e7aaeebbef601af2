//! The crate's dependency rule, read from the sources: `solvers → penalties → losses, kernels,
//! linalg`, never back. Nothing under `src/penalties/`, `src/losses/`, `src/kernels/` or in
//! `src/linalg.rs` uses `crate::solvers`, and `src/losses/`, `src/kernels/` do not use
//! `crate::penalties` (docs/reference.md, "Layout").

use std::fs;
use std::path::{Path, PathBuf};

/// The `.rs` files at `rel` under `src/` (a file, or a folder read recursively), sorted.
fn sources(rel: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(rel);
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            for e in fs::read_dir(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())) {
                stack.push(e.expect("a directory entry").path());
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    assert!(!out.is_empty(), "no Rust source at {}", root.display());
    out.sort();
    out
}

/// The 1-based lines of `text` whose code (comments left out) reaches the module `crate::name`:
/// a path `crate::name…`, or `name` inside a grouped import `use crate::{…}` (which may span
/// lines).
fn uses_of(text: &str, name: &str) -> Vec<usize> {
    let path = format!("crate::{name}");
    let is_word = |code: &str| {
        code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == name)
    };
    let mut hits = Vec::new();
    let mut in_group = false;
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let starts_group = code.contains("crate::{");
        if code.match_indices(&path).any(|(at, _)| {
            !code[at + path.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        }) || ((in_group || starts_group)
            && is_word(code.split("crate::{").last().unwrap_or("")))
        {
            hits.push(i + 1);
        }
        if starts_group {
            in_group = true;
        }
        if in_group && code.contains(';') {
            in_group = false;
        }
    }
    hits
}

/// Every use of `crate::name` in the files at `dirs`, as `file:line: text`.
fn violations(dirs: &[&str], name: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in dirs {
        for file in sources(dir) {
            let text =
                fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let lines: Vec<&str> = text.lines().collect();
            for n in uses_of(&text, name) {
                let rel = file.strip_prefix(root).unwrap_or(&file);
                out.push(format!("{}:{n}: {}", rel.display(), lines[n - 1].trim()));
            }
        }
    }
    out
}

#[test]
fn penalties_losses_kernels_and_linalg_do_not_use_the_solvers() {
    let found = violations(&["penalties", "losses", "kernels", "linalg.rs"], "solvers");
    assert!(
        found.is_empty(),
        "the solvers depend on these modules, never the reverse:\n{}",
        found.join("\n")
    );
}

#[test]
fn losses_and_kernels_do_not_use_the_penalties() {
    let found = violations(&["losses", "kernels"], "penalties");
    assert!(
        found.is_empty(),
        "the penalties depend on the losses and kernels, never the reverse:\n{}",
        found.join("\n")
    );
}

/// The scan sees a path, a grouped import over several lines and nothing in comments.
#[test]
fn the_scan_finds_paths_and_grouped_imports_but_not_comments() {
    let text = "use crate::solvers::lp;\n\
                // crate::solvers in a comment\n\
                /// [`crate::solvers::smo`] in a doc link\n\
                let x = crate::solvers_like::f();\n\
                use crate::{\n    kernels,\n    solvers::mirror,\n};\n\
                fn f() { crate::solvers::g() }\n";
    assert_eq!(uses_of(text, "solvers"), vec![1, 7, 9]);
}
