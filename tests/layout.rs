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

/// The functions of `text` longer than `limit` lines (signature to closing brace), as
/// `(name, first line, lines)`; `#[cfg(test)]` items are left out. Braces are counted per line,
/// which the code's formatting (rustfmt) makes reliable enough for a length check.
fn long_functions(text: &str, limit: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let body_end = |from: usize| -> usize {
        let (mut depth, mut started) = (0i64, false);
        for (j, line) in lines.iter().enumerate().skip(from) {
            let code = line.split("//").next().unwrap_or("");
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            started |= code.contains('{');
            if started && depth <= 0 {
                return j;
            }
            if !started && code.trim_end().ends_with(';') {
                return j;
            }
        }
        lines.len() - 1
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if t.starts_with("#[cfg(test)]") {
            i = body_end(i + 1) + 1;
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| *w == "fn") {
            let before_ok = words[..k]
                .iter()
                .all(|w| w.starts_with("pub") || ["const", "unsafe", "async"].contains(w));
            if before_ok && k + 1 < words.len() {
                let name: String = words[k + 1]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let end = body_end(i);
                if end + 1 - i > limit {
                    out.push((name, i + 1, end + 1 - i));
                }
            }
        }
        i += 1;
    }
    out
}

/// No function of the engine outside tests is longer than 120 lines: a longer one holds a
/// whole algorithm that its named steps should (docs/reference.md, the driver).
#[test]
fn no_function_outside_tests_is_over_120_lines() {
    let mut long = Vec::new();
    for path in sources("") {
        if path
            .file_name()
            .is_some_and(|f| f == "tests.rs" || f == "test_util.rs")
        {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a source file");
        for (name, line, n) in long_functions(&text, 120) {
            long.push(format!("{}:{line} {name} ({n} lines)", path.display()));
        }
    }
    assert!(long.is_empty(), "functions over 120 lines: {long:#?}");
}

#[test]
fn the_length_scan_counts_bodies_and_skips_tests() {
    let body = "    let x = 1;\n".repeat(5);
    let text = format!(
        "pub(crate) fn short() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn long() {{\n{}    }}\n}}\nfn f(\n    a: u8,\n) -> u8 {{\n{body}    a\n}}\n",
        "        let y = 2;\n".repeat(200)
    );
    // `short` is 7 lines, `f` 10 (from its signature's first line, 213); `long`, 202 lines,
    // is in a test module.
    assert_eq!(long_functions(&text, 7), vec![("f".to_string(), 213, 10)]);
    assert!(long_functions(&text, 10).is_empty());
}
