//! `gpsense match`: the subgraph-matching benchmark format. Loads the data graph once, then answers
//! each query file (or every `.graph` file of a directory) and prints `name<TAB>count<TAB>ms`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::benchmark_query;
use gpsense_runtime::{
    BatchPhases, DeviceCounters, DeviceReport, Engine, EngineKind, MatchOptions, MatchReport,
};

use crate::graph_source;
use crate::summary::{batch_line, host_calls_line, phases_line, plural, MatchTally};
use gpsense::fmt::{millis, thousands};

pub struct Args {
    pub data: PathBuf,
    pub queries: Vec<PathBuf>,
    pub expected: Option<PathBuf>,
    /// Only the queries with an expected count of at most this.
    pub max_expected: Option<u64>,
    /// Print the search counters.
    pub search_stats: bool,
    /// Queries per batch on a device engine (1: one at a time).
    pub batch: usize,
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
    let device = match args.options.engine {
        EngineKind::Gpu | EngineKind::Emulated => true,
        // `auto` batches the queries it sends to a GPU (the others go one by one in the batch).
        EngineKind::Auto => engine.gpu().is_ok(),
        _ => false,
    };
    if device && args.batch > 1 {
        let place = format!("data graph loaded once in {}", millis(loaded.load_time));
        return run_batched(&args, &engine, &files, expected.as_ref(), &place);
    }
    let mut tally = MatchTally::default();
    let (mut nodes, mut backjumps, mut twins, mut with_stats) = (0u64, 0u64, 0u64, 0usize);
    let mut device = DeviceTotals::default();
    let mut unnamed = Unnamed::default();
    let mut errors = 0usize;
    for file in &files {
        let name = stem(file);
        let start = Instant::now();
        // A query that fails is reported on its own and the others are answered, as in a batch.
        let answered = load_query(file, data).and_then(|q| {
            engine
                .count(&q, &args.options)
                .with_context(|| format!("{}", file.display()))
        });
        let report = match answered {
            Ok(report) => report,
            Err(e) if files.len() == 1 => return Err(e),
            Err(e) => {
                eprintln!("error: {e:#}");
                errors += 1;
                continue;
            }
        };
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let counted = Counted::new(&report, ms);
        let mut line = counted.line(&name, &mut tally);
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
        if let (true, Some(d)) = (args.search_stats, &report.device_report) {
            line.push_str(&device_stats(d));
            device += d;
            with_stats += 1;
        }
        line.push_str(&check(
            expected.as_ref(),
            &name,
            &counted,
            &mut tally,
            &mut unnamed,
        ));
        crate::out::print(format_args!("{line}\n"))?;
    }
    let place = format!("data graph loaded once in {}", millis(loaded.load_time));
    crate::out::note!("{}", tally.processed(&place));
    if args.search_stats {
        if with_stats == 0 {
            crate::out::note!(
                "search: no counters (the dfs engine and the device engines keep them)"
            );
        } else if device.queries > 0 {
            crate::out::note!("device: {}", device.line());
        } else {
            crate::out::note!("search: {nodes} nodes, {backjumps} backjumps, {twins} twins");
        }
    }
    let status = finish(&tally, args.expected.as_deref(), &unnamed);
    failed(errors, files.len()).and(status)
}

/// `match` on a device engine (or `auto` with a GPU), `args.batch` queries at a time, each batch
/// one sequence of launches (`Engine::count_batch`). A query's error is reported on its own and
/// the others are answered; the exit status is then 1. Each line's time is its batch's divided by
/// its queries.
fn run_batched(
    args: &Args,
    engine: &Engine,
    files: &[PathBuf],
    expected: Option<&HashMap<String, u64>>,
    place: &str,
) -> Result<()> {
    let data = engine.graph();
    let mut tally = MatchTally::default();
    let mut unnamed = Unnamed::default();
    let (mut counters, mut batches, mut errors) = (DeviceCounters::default(), 0usize, 0usize);
    let mut phases = BatchPhases::default();
    let (mut sent, mut shared, mut shared_on_device) = (0usize, 0usize, 0usize);
    for chunk in files.chunks(args.batch) {
        // A file that fails to load is that query's error; the batch answers the others.
        let loaded: Vec<Result<_>> = chunk.iter().map(|f| load_query(f, data)).collect();
        let list: Vec<_> = loaded
            .iter()
            .filter_map(|q| q.as_ref().ok())
            .map(|q| (q, &args.options))
            .collect();
        let start = Instant::now();
        let batch = engine.count_batch(&list);
        let ms = start.elapsed().as_secs_f64() * 1e3 / list.len().max(1) as f64;
        counters += batch.counters;
        phases += batch.phases;
        crate::summary::note_batch(&batch);
        sent += batch.batched;
        batches += batch.batches;
        shared += batch.shared;
        shared_on_device += batch.shared_on_device;
        let mut answers = batch.reports.into_iter();
        for (file, q) in chunk.iter().zip(&loaded) {
            let report = match q {
                // A load error already names the file (and the line).
                Err(e) => {
                    eprintln!("error: {e:#}");
                    errors += 1;
                    continue;
                }
                Ok(_) => match answers.next() {
                    Some(Ok(report)) => report,
                    Some(Err(e)) => {
                        eprintln!("error: {}: {e}", file.display());
                        errors += 1;
                        continue;
                    }
                    None => bail!("{}: the batch returned no answer", file.display()),
                },
            };
            let name = stem(file);
            if let (Some(why), true) = (&report.fallback, crate::out::verbose()) {
                crate::out::note!("note: {name}: {why}");
            }
            let counted = Counted::new(&report, ms);
            let mut line = counted.line(&name, &mut tally);
            line.push_str(&check(expected, &name, &counted, &mut tally, &mut unnamed));
            crate::out::print(format_args!("{line}\n"))?;
        }
    }
    crate::out::note!("{}", tally.processed(place));
    crate::out::note!("{}", batch_line(sent, batches, &counters));
    crate::out::note!("{}", host_calls_line(&counters));
    if shared > 0 {
        crate::out::note!("{}", crate::summary::shared_line(shared, shared_on_device));
    }
    crate::out::note!("{}", phases_line(&phases));
    let status = finish(&tally, args.expected.as_deref(), &unnamed);
    failed(errors, files.len()).and(status)
}

/// The exit status when `errors` of `queries` failed: a failure outranks a mismatch and a
/// time-out, as for `query -f`.
fn failed(errors: usize, queries: usize) -> Result<()> {
    if errors > 0 {
        bail!(
            "{errors} of {} failed (the others were answered)",
            plural(queries as u64, "query", "queries")
        );
    }
    Ok(())
}

/// One query's count, as either path reports it.
struct Counted {
    rows: u128,
    ms: f64,
    limit_reached: bool,
    timed_out: bool,
}

impl Counted {
    fn new(report: &MatchReport, ms: f64) -> Counted {
        Counted {
            rows: report.rows,
            ms,
            limit_reached: report.limit_reached,
            timed_out: report.timed_out,
        }
    }

    /// The query's output line, `name<TAB>count<TAB>ms` and what cut it, counted into `tally`.
    fn line(&self, name: &str, tally: &mut MatchTally) -> String {
        tally.queries += 1;
        tally.total_ms += self.ms;
        let mut line = format!("{name}\t{}\t{:.3}", self.rows, self.ms);
        if self.limit_reached {
            line.push_str("\tlimit reached");
        }
        if self.timed_out {
            line.push_str("\ttimed out");
            tally.timed_out += 1;
        }
        line
    }
}

/// Queries the expected-answers file does not name.
#[derive(Default)]
struct Unnamed(Vec<String>);

/// Compares a count with the expected one, if any: the mark its line gets (empty when it agrees).
fn check(
    expected: Option<&HashMap<String, u64>>,
    name: &str,
    c: &Counted,
    tally: &mut MatchTally,
    unnamed: &mut Unnamed,
) -> String {
    let Some(e) = expected else {
        return String::new();
    };
    let Some(want) = lookup(e, name).map(u128::from) else {
        unnamed.0.push(name.to_owned());
        return String::new();
    };
    tally.checked += 1;
    let cut_short = c.limit_reached || c.timed_out;
    if want != c.rows && !(cut_short && want > c.rows) {
        tally.mismatches += 1;
        return format!("\tMISMATCH: expected {want}");
    }
    if want == c.rows && !c.timed_out {
        tally.exact += 1;
    }
    String::new()
}

/// The checks' summary and the exit status: mismatches, then time-outs, decide it.
fn finish(tally: &MatchTally, expected: Option<&Path>, unnamed: &Unnamed) -> Result<()> {
    if let Some(path) = expected {
        if !unnamed.0.is_empty() {
            let shown: Vec<&str> = unnamed.0.iter().take(5).map(String::as_str).collect();
            let more = if unnamed.0.len() > 5 { ", ..." } else { "" };
            crate::out::note!(
                "{} of {} {} no expected count in {}: {}{more}",
                thousands(unnamed.0.len() as u64),
                plural(tally.queries as u64, "query", "queries"),
                if unnamed.0.len() == 1 { "has" } else { "have" },
                path.display(),
                shown.join(", ")
            );
        }
        if tally.checked == 0 {
            bail!(
                "no count was checked: {} names none of the {} (its lines are `name count` \
                 or `name:count`, the name being the query file's name without `.graph`)",
                path.display(),
                plural(tally.queries as u64, "query", "queries")
            );
        }
        crate::out::note!("{}", tally.checks());
        if tally.mismatches > 0 {
            bail!(
                "{} from the expected answers",
                match tally.mismatches {
                    1 => "1 count differs".to_owned(),
                    n => format!("{} counts differ", thousands(n as u64)),
                }
            );
        }
    }
    timed_out_status(tally.timed_out, tally.queries)
}

/// The time limit cut `timed_out` of `queries` counts (marked `timed out` on their lines): their
/// own exit status, once nothing worse (a mismatch, an error) decided it.
fn timed_out_status(timed_out: usize, queries: usize) -> Result<()> {
    if timed_out == 0 {
        return Ok(());
    }
    crate::out::note!(
        "{timed_out} of {} timed out: {}",
        plural(queries as u64, "query", "queries"),
        if timed_out == 1 {
            "its count is a lower bound"
        } else {
            "their counts are lower bounds"
        }
    );
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
    let mut tally = MatchTally::default();
    let mut unnamed = Unnamed::default();
    let mut printed = false;
    for (file, r) in files.iter().zip(&outcome.reports) {
        let report = match r {
            Ok(Some(report)) => report,
            // Only process 0 has the reports.
            Ok(None) => continue,
            Err(e) => bail!("{}: {e}", file.display()),
        };
        printed = true;
        let name = stem(file);
        let counted = Counted {
            rows: report.rows,
            ms: report.elapsed.as_secs_f64() * 1e3,
            limit_reached: report.limit_reached,
            timed_out: report.timed_out,
        };
        let mut line = counted.line(&name, &mut tally);
        line.push_str(&check(
            expected.as_ref(),
            &name,
            &counted,
            &mut tally,
            &mut unnamed,
        ));
        crate::out::print(format_args!("{line}\n"))?;
    }
    if !printed {
        super::distributed::traffic_note(&outcome, d, start);
        return Ok(());
    }
    let place = format!(
        "{}; {}",
        super::distributed::cluster_text(d),
        super::distributed::traffic_text(&outcome, start)
    );
    crate::out::note!("{}", tally.processed(&place));
    finish(&tally, args.expected.as_deref(), &unnamed)
}

/// A device query's counters as `--search-stats` adds them to its line: launches, reads (waits),
/// join levels run, partial matches the levels produced, chunks run depth first, and the host's
/// milliseconds between filtering and the join (the order and its estimates).
fn device_stats(d: &DeviceReport) -> String {
    format!(
        "\tlaunches={} reads={} levels={} partials={} chunks={} plan_ms={:.3}",
        d.counters.launches,
        d.counters.syncs,
        d.levels,
        d.partial_matches,
        d.chunks,
        d.plan_time.as_secs_f64() * 1e3
    )
}

/// The device counters of the queries answered one at a time, summed.
#[derive(Default)]
struct DeviceTotals {
    queries: u64,
    launches: u64,
    reads: u64,
    partials: u64,
    chunks: u64,
    plan_time: std::time::Duration,
}

impl std::ops::AddAssign<&DeviceReport> for DeviceTotals {
    fn add_assign(&mut self, d: &DeviceReport) {
        self.queries += 1;
        self.launches += d.counters.launches;
        self.reads += d.counters.syncs;
        self.partials += d.partial_matches;
        self.chunks += d.chunks;
        self.plan_time += d.plan_time;
    }
}

impl DeviceTotals {
    fn line(&self) -> String {
        format!(
            "{} launches, {} reads, {} partial matches, {} chunks, {:.1} ms of host planning over {}",
            thousands(self.launches),
            thousands(self.reads),
            thousands(self.partials),
            thousands(self.chunks),
            self.plan_time.as_secs_f64() * 1e3,
            plural(self.queries, "query", "queries")
        )
    }
}
