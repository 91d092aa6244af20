//! SPARQL beyond basic graph patterns, side by side with Oxigraph: the query set
//! `benches/sparql/algebra.rq` (OPTIONAL, UNION, MINUS, FILTER, BIND, VALUES, property paths,
//! aggregates, subqueries, ORDER BY, DISTINCT, CONSTRUCT) over ConceptNet-100K, both engines
//! in-process and warm: gpsense in `--example sparql_algebra` (the embedded graph, as `gpsense
//! query` answers), pyoxigraph in `xtask/bench/sparql_peer.py` (an in-memory Store of the N-Triples
//! the example dumps of the same graph). Each loads once, answers every query once untimed, then
//! times up to `runs` runs; the two answers are compared by row count and digest.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use gpsense_benches::sparql_set::{self, SetQuery};
use serde::Deserialize;

use super::exec::median;
use super::report::ms;

/// The query set, relative to the repository root.
pub const QUERIES: &str = "benches/sparql/algebra.rq";

pub struct Options<'a> {
    pub root: &'a Path,
    /// Where the quick subset and the N-Triples dump are written.
    pub work: &'a Path,
    /// The venv's Python with pyoxigraph, or why there is none.
    pub python: Result<&'a Path, String>,
    /// The first query of each class, one timed run.
    pub quick: bool,
}

/// The report section, and how many answers differ between the engines.
pub struct Section {
    pub markdown: String,
    pub differ: usize,
}

/// One engine's line for one query (both sides print the same JSON).
#[derive(Clone, Debug, Deserialize)]
pub struct Measured {
    pub name: String,
    pub class: String,
    pub status: String,
    #[serde(default)]
    pub rows: Option<u64>,
    #[serde(default)]
    pub digest: Option<String>,
    #[serde(default)]
    pub seconds: Vec<f64>,
    #[serde(default)]
    pub message: Option<String>,
    /// gpsense only: `graph` (the matcher and its solution stage), `native` (gpsense-sparql's
    /// native evaluator) or `algebra` (gpsense-sparql through spareval).
    #[serde(default)]
    pub path: Option<String>,
}

impl Measured {
    fn median_ms(&self) -> Option<f64> {
        (self.status == "ok")
            .then(|| median(&self.seconds))
            .flatten()
            .map(|s| s * 1e3)
    }
}

pub fn run(o: &Options, log: &mut dyn FnMut(&str)) -> Result<Section, String> {
    let python = o.python.clone()?;
    let text = std::fs::read_to_string(o.root.join(QUERIES))
        .map_err(|e| format!("cannot read {QUERIES}: {e}"))?;
    let set = sparql_set::parse(&text).map_err(|e| format!("{QUERIES}: {e}"))?;
    let (queries, runs, count) = if o.quick {
        let subset = quick_subset(&set);
        let path = o.work.join("sparql-quick.rq");
        std::fs::write(&path, write_set(&subset))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        (path, 1, subset.len())
    } else {
        (o.root.join(QUERIES), 5, set.len())
    };
    let nt = o.work.join("conceptnet-100k.nt");
    log("gpsense: cargo run --release -p gpsense-benches --example sparql_algebra");
    let mut ours = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    ours.current_dir(o.root)
        .args(["run", "--release", "--quiet", "-p", "gpsense-benches"])
        .args(["--example", "sparql_algebra", "--"])
        .arg(&queries)
        .arg("--runs")
        .arg(runs.to_string())
        .arg("--dump")
        .arg(&nt);
    let (_, ours) = lines(ours)?;
    log("oxigraph: xtask/bench/sparql_peer.py (pyoxigraph, in-memory Store)");
    let mut peer = Command::new(python);
    peer.arg(o.root.join("xtask/bench/sparql_peer.py"))
        .arg(&nt)
        .arg(&queries)
        .arg(runs.to_string());
    let (ready, theirs) = lines(peer)?;
    let version = ready
        .get("version")
        .and_then(|v| v.as_str())
        .unwrap_or("?")
        .to_owned();
    let (table, differ) = table(&ours, &theirs);
    let mut md = format!(
        "{} queries of `{QUERIES}`{} over ConceptNet-100K (100,000 edges), in-process and warm on \
         both sides, one thread: gpsense as `gpsense query` answers (the graph path, or \
         gpsense-sparql: native or through spareval), pyoxigraph {version} on an in-memory \
         Store of the graph's N-Triples dump. Each query runs once untimed (its answer is compared: rows and a digest of the sorted \
         rows), then up to {runs} timed runs that consume every row (fewer once they took 2 s); \
         the median is shown. Ratio: Oxigraph's time / gpsense's (above 1: gpsense is faster).\n\n",
        count,
        if o.quick {
            " (--quick: the first query of each class, one timed run)"
        } else {
            ""
        },
    );
    md.push_str(&table);
    Ok(Section {
        markdown: md,
        differ,
    })
}

/// The first query of each class.
pub fn quick_subset(set: &[SetQuery]) -> Vec<SetQuery> {
    let mut seen = Vec::new();
    set.iter()
        .filter(|q| {
            let new = !seen.contains(&q.class);
            if new {
                seen.push(q.class.clone());
            }
            new
        })
        .cloned()
        .collect()
}

/// A set written back in its own format.
pub fn write_set(set: &[SetQuery]) -> String {
    set.iter()
        .map(|q| format!("#@ {} {}\n{}\n\n", q.name, q.class, q.text))
        .collect()
}

/// Runs `command` and reads its JSON lines: the `ready` line, then one [`Measured`] per query.
fn lines(mut command: Command) -> Result<(serde_json::Value, Vec<Measured>), String> {
    let shown = format!("{command:?}");
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{shown} failed ({}): {}",
            out.status,
            err.lines().last().unwrap_or("")
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ready = serde_json::Value::Null;
    let mut measured = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("{shown} printed {line:?}, not JSON: {e}"))?;
        if value.get("ready").is_some() {
            ready = value;
        } else {
            measured.push(
                serde_json::from_value(value)
                    .map_err(|e| format!("{shown} printed {line:?}: {e}"))?,
            );
        }
    }
    Ok((ready, measured))
}

/// The table per query, the geometric mean per class, and the number of answers that differ.
pub fn table(ours: &[Measured], theirs: &[Measured]) -> (String, usize) {
    let mut md = String::from(
        "| query | class | gpsense path | rows | gpsense ms | oxigraph ms | ratio | answers |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mut by_class: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut differ = Vec::new();
    for o in ours {
        let t = theirs.iter().find(|t| t.name == o.name);
        let (om, tm) = (o.median_ms(), t.and_then(Measured::median_ms));
        let ratio = match (om, tm) {
            (Some(a), Some(b)) if a > 0.0 => Some(b / a),
            _ => None,
        };
        if let Some(r) = ratio {
            by_class.entry(&o.class).or_default().push(r);
        }
        let answers = agreement(o, t);
        if answers.starts_with("DIFFER") {
            differ.push(o.name.clone());
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {answers} |",
            o.name,
            o.class,
            o.path.as_deref().unwrap_or("-"),
            o.rows.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            om.map(ms).unwrap_or_else(|| "-".into()),
            tm.map(ms).unwrap_or_else(|| "-".into()),
            ratio.map(times).unwrap_or_else(|| "-".into()),
        );
    }
    md.push_str("\nGeometric mean of the ratio per class (and its smallest):\n\n| class | queries | geometric mean | slowest query's ratio |\n|---|---|---|---|\n");
    let mut beyond_bgp = Vec::new();
    for (class, ratios) in &by_class {
        if *class != "bgp" {
            beyond_bgp.extend(ratios.iter().copied());
        }
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let _ = writeln!(
            md,
            "| {class} | {} | {} | {} |",
            ratios.len(),
            geomean(ratios).map(times).unwrap_or_else(|| "-".into()),
            times(min)
        );
    }
    if let Some(g) = geomean(&beyond_bgp) {
        let below5 = beyond_bgp.iter().filter(|&&r| r < 5.0).count();
        let below1 = beyond_bgp.iter().filter(|&&r| r < 1.0).count();
        let _ = writeln!(
            md,
            "\nBeyond basic graph patterns: geometric mean **{}** over {} queries; {below5} below 5x, \
             {below1} slower than Oxigraph.",
            times(g),
            beyond_bgp.len()
        );
    }
    if !differ.is_empty() {
        let _ = writeln!(
            md,
            "\n<span style=\"color:red\">**Answers differ on {}: {}**</span>",
            differ.len(),
            differ.join(", ")
        );
    }
    (md, differ.len())
}

/// `same`, or how the answers differ, or which side failed.
fn agreement(ours: &Measured, theirs: Option<&Measured>) -> String {
    let Some(t) = theirs else {
        return "oxigraph did not answer".into();
    };
    match (ours.status.as_str(), t.status.as_str()) {
        ("ok", "ok") if ours.rows == t.rows && ours.digest == t.digest => "same".into(),
        ("ok", "ok") => format!(
            "DIFFER: gpsense {} rows, oxigraph {} rows",
            ours.rows.unwrap_or(0),
            t.rows.unwrap_or(0)
        ),
        ("ok", _) => format!("oxigraph: {}", t.message.as_deref().unwrap_or("error")),
        _ => format!("gpsense: {}", ours.message.as_deref().unwrap_or("error")),
    }
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

fn times(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}x")
    } else {
        format!("{r:.1}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, class: &str, rows: u64, digest: &str, ms: f64) -> Measured {
        Measured {
            name: name.into(),
            class: class.into(),
            status: "ok".into(),
            rows: Some(rows),
            digest: Some(digest.into()),
            seconds: vec![ms / 1e3],
            message: None,
            path: None,
        }
    }

    #[test]
    fn table_has_ratios_class_means_and_differences() {
        let ours = [
            m("a", "path", 3, "x", 1.0),
            m("b", "path", 2, "y", 2.0),
            m("c", "bgp", 1, "z", 1.0),
        ];
        let theirs = [
            m("a", "path", 3, "x", 4.0),
            m("b", "path", 2, "w", 32.0),
            m("c", "bgp", 1, "z", 30.0),
        ];
        let (md, differ) = table(&ours, &theirs);
        assert_eq!(differ, 1, "{md}");
        assert!(
            md.contains("| a | path | - | 3 | 1.00 | 4.00 | 4.0x | same |"),
            "{md}"
        );
        assert!(
            md.contains("DIFFER: gpsense 2 rows, oxigraph 2 rows"),
            "{md}"
        );
        // Geometric mean of 4 and 16.
        assert!(md.contains("| path | 2 | 8.0x | 4.0x |"), "{md}");
        assert!(
            md.contains("geometric mean **8.0x** over 2 queries; 1 below 5x"),
            "{md}"
        );
        assert!(md.contains("Answers differ on 1: b"), "{md}");
    }

    #[test]
    fn errors_are_shown_not_compared() {
        let mut err = m("a", "path", 0, "", 0.0);
        err.status = "error".into();
        err.message = Some("SyntaxError: x".into());
        let (md, differ) = table(&[m("a", "path", 1, "x", 1.0)], &[err]);
        assert_eq!(differ, 0);
        assert!(md.contains("| - | oxigraph: SyntaxError: x |"), "{md}");
    }

    #[test]
    fn quick_subset_takes_each_class_once_and_round_trips() {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(QUERIES),
        )
        .unwrap();
        let set = sparql_set::parse(&text).unwrap();
        let quick = quick_subset(&set);
        let classes: std::collections::BTreeSet<&str> =
            set.iter().map(|q| q.class.as_str()).collect();
        assert_eq!(quick.len(), classes.len());
        assert_eq!(sparql_set::parse(&write_set(&quick)).unwrap(), quick);
    }
}
