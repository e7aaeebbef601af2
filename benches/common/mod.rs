//! Shared by the benches: the real data sets, from the repository's `tests/data` (the four UCI
//! sets of the tests) or else from a `shared/data` folder beside the repository, which holds the
//! whole benchmark collection and is not part of it (benches/README.md).

use ndarray::Array2;

/// The features of `<name>.csv` (last column, the label, dropped), each column
/// standardised; `None` (with a note) when the file is missing.
#[allow(dead_code)]
pub fn read_csv(name: &str) -> Option<Array2<f64>> {
    read_labelled(name).map(|(x, _)| x)
}

/// Features (standardised) and ±1 labels (the larger label in sorted order is +1).
pub fn read_labelled(name: &str) -> Option<(Array2<f64>, Vec<f64>)> {
    let root = env!("CARGO_MANIFEST_DIR");
    let paths = [
        format!("{root}/tests/data/{name}.csv"),
        format!("{root}/../shared/data/{name}.csv"),
    ];
    let Some(text) = paths.iter().find_map(|p| std::fs::read_to_string(p).ok()) else {
        eprintln!("skipping: {name}.csv not found in {paths:?}");
        return None;
    };
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for line in text.lines().skip(1) {
        // Feature columns first; the last column is the (possibly textual) label.
        let fields: Vec<&str> = line.split(',').collect();
        let vals: Option<Vec<f64>> = fields[..fields.len().saturating_sub(1)]
            .iter()
            .map(|s| s.trim().parse().ok())
            .collect();
        if let Some(v) = vals.filter(|v| !v.is_empty()) {
            rows.push(v);
            labels.push(fields[fields.len() - 1].trim().to_string());
        }
    }
    let d = rows.first()?.len();
    let mut x = Array2::from_shape_fn((rows.len(), d), |(i, j)| rows[i][j]);
    for mut col in x.columns_mut() {
        let mean = col.mean().unwrap_or(0.0);
        let sd = col.std(0.0);
        col.mapv_inplace(|v| if sd > 0.0 { (v - mean) / sd } else { 0.0 });
    }
    let mut distinct = labels.clone();
    distinct.sort();
    distinct.dedup();
    let positive = distinct.last()?.clone();
    let y = labels
        .iter()
        .map(|l| if *l == positive { 1.0 } else { -1.0 })
        .collect();
    Some((x, y))
}
