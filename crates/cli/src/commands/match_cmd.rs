//! `gpsense match`: the subgraph-matching benchmark format. Loads the data graph once, then answers
//! each query file (or every `.graph` file of a directory) and prints `name<TAB>count<TAB>ms`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::benchmark_query;
use gpsense_runtime::{Engine, MatchOptions};

use crate::graph_source;
use gpsense::fmt::millis;

pub struct Args {
    pub data: PathBuf,
    pub queries: Vec<PathBuf>,
    pub expected: Option<PathBuf>,
    /// Only the queries with an expected count of at most this.
    pub max_expected: Option<u64>,
    /// Print the search counters.
    pub search_stats: bool,
    /// Across processes on timely dataflow (`--workers`, `--processes`).
    pub dist: Option<super::distributed::DistArgs>,
    pub options: MatchOptions,
}

pub fn run(args: Args) -> Result<()> {
    if let Some(d) = &args.dist {
        return run_distributed(&args, d);
    }
    let loaded = graph_source::load(Some(&args.data))?;
    let data = &loaded.graph;
    let mut files = query_files(&args.queries)?;
    let expected = match &args.expected {
        Some(p) => Some(read_expected(p)?),
        None => None,
    };
    if let (Some(max), Some(e)) = (args.max_expected, &expected) {
        files.retain(|f| lookup(e, &stem(f)).is_some_and(|n| n <= max));
        if files.is_empty() {
            bail!("no query has an expected count of at most {max}");
        }
    }
    let engine = Engine::new(data);
    graph_source::announce_engine(&engine, args.options.engine, crate::out::verbose())?;
    let (mut total_ms, mut mismatches, mut checked, mut exact) = (0.0, 0usize, 0usize, 0usize);
    let (mut nodes, mut backjumps, mut twins, mut with_stats) = (0u64, 0u64, 0u64, 0usize);
    let mut timed_out = 0usize;
    // Queries the expected-answers file does not name.
    let mut unnamed: Vec<String> = Vec::new();
    for file in &files {
        let name = stem(file);
        let q = load_query(file, data)?;
        let start = Instant::now();
        let report = engine
            .count(&q, &args.options)
            .with_context(|| format!("{}", file.display()))?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        total_ms += ms;
        let mut line = format!("{name}\t{}\t{ms:.3}", report.rows);
        if report.limit_reached {
            line.push_str("\tlimit reached");
        }
        if report.timed_out {
            line.push_str("\ttimed out");
            timed_out += 1;
        }
        if let (true, Some(s)) = (args.search_stats, &report.search) {
            line.push_str(&format!(
                "\tnodes={} backjumps={} twins={}",
                s.nodes, s.backjumps, s.twins
            ));
            nodes += s.nodes;
            backjumps += s.backjumps;
            twins += s.twins;
            with_stats += 1;
        }
        if expected
            .as_ref()
            .is_some_and(|e| lookup(e, &name).is_none())
        {
            unnamed.push(name.clone());
        }
        if let Some(want) = expected
            .as_ref()
            .and_then(|e| lookup(e, &name))
            .map(u128::from)
        {
            checked += 1;
            let cut_short = report.limit_reached || report.timed_out;
            if want != report.rows && !(cut_short && want > report.rows) {
                mismatches += 1;
                line.push_str(&format!("\tMISMATCH: expected {want}"));
            } else if want == report.rows && !report.timed_out {
                exact += 1;
            }
        }
        crate::out::print(format_args!("{line}\n"))?;
    }
    crate::out::note!(
        "{} queries in {:.1} ms of processing ({:.3} ms per query), data graph loaded once in {}",
        files.len(),
        total_ms,
        total_ms / files.len().max(1) as f64,
        millis(loaded.load_time)
    );
    if args.search_stats {
        if with_stats == 0 {
            crate::out::note!("search: no counters (only the dfs engine keeps them)");
        } else {
            crate::out::note!("search: {nodes} nodes, {backjumps} backjumps, {twins} twins");
        }
    }
    if let (Some(path), true) = (&args.expected, expected.is_some()) {
        if !unnamed.is_empty() {
            let shown: Vec<&str> = unnamed.iter().take(5).map(String::as_str).collect();
            let more = if unnamed.len() > 5 { ", ..." } else { "" };
            crate::out::note!(
                "{} of {} queries have no expected count in {}: {}{more}",
                unnamed.len(),
                files.len(),
                path.display(),
                shown.join(", ")
            );
        }
        if checked == 0 {
            bail!(
                "no count was checked: {} names none of the {} queries (its lines are `name count` \
                 or `name:count`, the name being the query file's name without `.graph`)",
                path.display(),
                files.len()
            );
        }
        crate::out::note!(
            "{checked} counts checked against the expected answers, {mismatches} mismatches, \
             {exact} counted exactly (the others stopped at a limit or the time limit)"
        );
        if mismatches > 0 {
            bail!("{mismatches} counts differ from the expected answers");
        }
    }
    timed_out_status(timed_out, files.len())
}

/// The time limit cut `timed_out` of `queries` counts (marked `timed out` on their lines): their
/// own exit status, once nothing worse (a mismatch, an error) decided it.
fn timed_out_status(timed_out: usize, queries: usize) -> Result<()> {
    if timed_out == 0 {
        return Ok(());
    }
    crate::out::note!("{timed_out} of {queries} queries timed out: their counts are lower bounds");
    Err(crate::out::TimedOut.into())
}

/// A query's name: its file name without `.graph`.
fn stem(file: &Path) -> String {
    file.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_owned()
}

/// The query files: each argument, or the `.graph` files of a directory argument, sorted by name.
fn query_files(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in args {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot list {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "graph"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    if files.is_empty() {
        bail!("no query files (a directory must hold .graph files)");
    }
    Ok(files)
}

fn load_query(path: &Path, data: &KnowledgeGraph) -> Result<gpsense_planner::QueryGraph> {
    let opts = IngestOptions {
        format: Some(gpsense_graph::ingest::Format::Benchmark),
        ..Default::default()
    };
    let (g, _) = ingest(&[path.to_path_buf()], &opts, &NoProgress)?;
    benchmark_query(&g, data).with_context(|| format!("{}", path.display()))
}

/// Expected counts: `name:count` lines (the SIGMOD study) or `file count` lines (yeast_ans.txt).
fn read_expected(path: &Path) -> Result<HashMap<String, u64>> {
    use crate::input::{read_text, MAX_EXPECTED_BYTES, MAX_EXPECTED_LINE};
    let text = read_text(path, MAX_EXPECTED_BYTES, MAX_EXPECTED_LINE)?;
    let counts = gpsense_graph::ingest::expected_counts(&text)
        .with_context(|| format!("{}", path.display()))?;
    Ok(counts.into_iter().collect())
}

fn lookup(expected: &HashMap<String, u64>, name: &str) -> Option<u64> {
    expected.get(name).copied()
}

/// `match` across processes: every query in one timely run; process 0 prints the lines.
fn run_distributed(args: &Args, d: &super::distributed::DistArgs) -> Result<()> {
    let start = Instant::now();
    let part = super::distributed::load(Some(&args.data), d)?;
    let names = super::distributed::names_only(&part.vocab)?;
    let mut files = query_files(&args.queries)?;
    let expected = match &args.expected {
        Some(p) => Some(read_expected(p)?),
        None => None,
    };
    if let (Some(max), Some(e)) = (args.max_expected, &expected) {
        files.retain(|f| lookup(e, &stem(f)).is_some_and(|n| n <= max));
        if files.is_empty() {
            bail!("no query has an expected count of at most {max}");
        }
    }
    let queries = files
        .iter()
        .map(|f| load_query(f, &names))
        .collect::<Result<Vec<_>>>()?;
    let outcome = super::distributed::count_graphs(&part, queries, &args.options, d)?;
    let (mut mismatches, mut timed_out) = (0, 0);
    for (file, r) in files.iter().zip(&outcome.reports) {
        let report = match r {
            Ok(Some(report)) => report,
            Ok(None) => continue,
            Err(e) => bail!("{}: {e}", file.display()),
        };
        let name = stem(file);
        let ms = report.elapsed.as_secs_f64() * 1e3;
        let mut line = format!("{name}\t{}\t{ms:.3}", report.rows);
        if report.limit_reached {
            line.push_str("\tlimit reached");
        }
        if report.timed_out {
            line.push_str("\ttimed out");
            timed_out += 1;
        }
        if let Some(want) = expected
            .as_ref()
            .and_then(|e| lookup(e, &name))
            .map(u128::from)
        {
            let cut_short = report.limit_reached || report.timed_out;
            if want != report.rows && !(cut_short && want > report.rows) {
                mismatches += 1;
                line.push_str(&format!("\tMISMATCH: expected {want}"));
            }
        }
        crate::out::print(format_args!("{line}\n"))?;
    }
    super::distributed::traffic_note(&outcome, d, start);
    if mismatches > 0 {
        bail!("{mismatches} counts differ from the expected answers");
    }
    timed_out_status(timed_out, files.len())
}
