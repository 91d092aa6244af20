//! EGSM (github.com/RapidsAtHKUST/EGSM; Sun and Luo, "Efficient GPU-Accelerated Subgraph Matching",
//! SIGMOD 2023), the GPU peer, side by side with gpsense on the same data and queries.
//!
//! EGSM counts subgraph isomorphisms of vertex-labelled undirected graphs: injective (a candidate
//! already in the partial match is skipped), non-induced (only the query's edges are checked),
//! label-preserving; gpsense's `--semantics iso` on the suites' files, so it runs beside the iso
//! suites (HPRD-200 and yeast) and each of its counts is held to dfs's.
//!
//! - `convert.rs`: the suites' files in EGSM's stricter format, and which queries it cannot take;
//!   done at bundle time (the bundle holds the converted files) or at run time.
//! - `source.rs`: its source as a tarball for a bundle; `benches/gpu/egsm-build.sh` builds it on
//!   the GPU machine.
//! - `output.rs`: its count and phase times, from what it prints.
//! - `side.rs`: one process per query beside gpsense's answers; `render.rs`: the report.

mod convert;
mod output;
mod render;
mod side;
mod source;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use render::{csv, detail, line, summary};
pub use side::{run_suite, Peer, SideBySide, SuiteSide};
pub use source::pack as pack_source;

/// The build script a bundle carries (`egsm/build.sh`).
pub const BUILD_SH: &str = include_str!("../../../benches/gpu/egsm-build.sh");

/// The suites EGSM runs on, by directory under `subgraph-matching/`, with their data graphs.
pub const SUITES: [(&str, &str); 2] = [
    ("hprd-study", "data_graph/HPRD.graph"),
    ("yeast", "data_graph/yeast.graph"),
];

/// Converts both suites into `out/<suite>/`: `data.graph`, `queries/<name>.graph` for each query
/// EGSM can take, and `skipped.tsv` (`name<TAB>why`) for the others. Returns a line per suite.
pub fn convert_inputs(datasets: &Path, out: &Path) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for (suite, data) in SUITES {
        let from = datasets.join("subgraph-matching").join(suite);
        lines.push(convert_suite(&from, data, &out.join(suite))?);
    }
    Ok(lines)
}

fn convert_suite(from: &Path, data_rel: &str, to: &Path) -> Result<String> {
    let data = read_graph(&from.join(data_rel))?;
    let queries_dir = to.join("queries");
    fs::create_dir_all(&queries_dir)
        .with_context(|| format!("cannot create {}", queries_dir.display()))?;
    write(&to.join("data.graph"), &data.to_egsm())?;
    let mut skipped = String::new();
    let mut converted = 0;
    for (name, path) in query_files(&from.join("query_graph"))? {
        let query = read_graph(&path)?;
        match query.refusal(&data) {
            Some(why) => skipped.push_str(&format!("{name}\t{why}\n")),
            None => {
                write(&queries_dir.join(format!("{name}.graph")), &query.to_egsm())?;
                converted += 1;
            }
        }
    }
    write(&to.join("skipped.tsv"), &skipped)?;
    Ok(format!(
        "{}: {converted} queries converted, {} beyond EGSM's bounds",
        from.display(),
        skipped.lines().count()
    ))
}

/// The `.graph` files of a directory by name (the file stem, as `gpsense match` names them).
fn query_files(dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "graph") {
            if let Some(stem) = path.file_stem() {
                out.insert(stem.to_string_lossy().into_owned(), path);
            }
        }
    }
    Ok(out)
}

fn read_graph(path: &Path) -> Result<convert::LabelledGraph> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    convert::parse(&text).with_context(|| format!("{}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The converted files of one suite, as `convert_inputs` wrote them.
pub struct Inputs {
    dir: PathBuf,
    skipped: BTreeMap<String, String>,
}

impl Inputs {
    pub fn open(root: &Path, suite: &str) -> Result<Inputs> {
        let dir = root.join(suite);
        let list = dir.join("skipped.tsv");
        let text =
            fs::read_to_string(&list).with_context(|| format!("cannot read {}", list.display()))?;
        let skipped = text
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(name, why)| (name.to_owned(), why.to_owned()))
            .collect();
        Ok(Inputs { dir, skipped })
    }

    pub fn data(&self) -> PathBuf {
        self.dir.join("data.graph")
    }

    /// The converted query, or why there is none.
    pub fn query(&self, name: &str) -> std::result::Result<PathBuf, String> {
        if let Some(why) = self.skipped.get(name) {
            return Err(why.clone());
        }
        let path = self.dir.join("queries").join(format!("{name}.graph"));
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!("not converted ({} missing)", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_is_converted_with_its_skipped_queries_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("suite");
        fs::create_dir_all(from.join("data_graph")).unwrap();
        fs::create_dir_all(from.join("query_graph")).unwrap();
        fs::write(
            from.join("data_graph/d.graph"),
            "t 3 3\nv 0 1 2\nv 1 2 2\nv 2 1 2\ne 0 1\ne 1 2\ne 0 2\n",
        )
        .unwrap();
        fs::write(
            from.join("query_graph/q1.graph"),
            "t 2 1\nv 0 1 1\nv 1 2 1\ne 0 1 0\n",
        )
        .unwrap();
        let mut big = String::from("t 17 0\n");
        (0..17).for_each(|i| big.push_str(&format!("v {i} 1 0\n")));
        fs::write(from.join("query_graph/q2.graph"), big).unwrap();
        fs::write(from.join("query_graph/notes.txt"), "not a query").unwrap();
        let to = tmp.path().join("out");
        let line = convert_suite(&from, "data_graph/d.graph", &to).unwrap();
        assert!(
            line.ends_with(": 1 queries converted, 1 beyond EGSM's bounds"),
            "{line}"
        );
        let inputs = Inputs::open(tmp.path(), "out").unwrap();
        assert_eq!(
            fs::read_to_string(inputs.data()).unwrap(),
            "t 3 3\nv 0 1 2\nv 1 2 2\nv 2 1 2\ne 0 1\ne 1 2\ne 0 2\n"
        );
        let q1 = inputs.query("q1").unwrap();
        assert_eq!(
            fs::read_to_string(q1).unwrap(),
            "t 2 1\nv 0 1 1\nv 1 2 1\ne 0 1\n"
        );
        assert_eq!(
            inputs.query("q2").unwrap_err(),
            "17 vertices (EGSM takes at most 16)"
        );
        assert!(inputs.query("q3").unwrap_err().starts_with("not converted"));
    }

    #[test]
    fn a_bad_query_file_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("suite");
        fs::create_dir_all(from.join("query_graph")).unwrap();
        fs::write(from.join("d.graph"), "t 1 0\nv 0 1\n").unwrap();
        fs::write(from.join("query_graph/bad.graph"), "t 1 1\nv 0 1\ne 0 0\n").unwrap();
        let err = format!(
            "{:#}",
            convert_suite(&from, "d.graph", &tmp.path().join("o")).unwrap_err()
        );
        assert!(err.contains("bad.graph: line 3"), "{err}");
        assert!(err.contains("self-loop"), "{err}");
    }
}
