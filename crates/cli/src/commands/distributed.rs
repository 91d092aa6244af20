//! `gpsense query|match --workers W --processes P --process I --hostfile H`: the same answers from
//! timely dataflow workers across processes (`gpsense-dist`), each process holding one part of the
//! graph.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use gpsense_dist::cluster::{read_hostfile, Cluster};
use gpsense_dist::dataflow::RowSink;
use gpsense_dist::job::{Job, Report, Request, SinkFactory};
use gpsense_dist::partition::{self, load_part};
use gpsense_dist::{Outcome, Partition, Vocab};
use gpsense_graph::{Csr, GraphParts, KnowledgeGraph};
use gpsense_planner::Form;
use gpsense_runtime::MatchOptions;

use crate::rows::{RowFormat, RowWriter};
use crate::summary::{plural, Answer, Summary};
use gpsense::fmt::{millis, thousands};

/// Where this process stands, from the command line.
#[derive(Clone, Debug)]
pub struct DistArgs {
    /// An option given that matching across processes does not use (refused).
    pub unused: Option<&'static str>,
    pub workers: usize,
    pub processes: usize,
    /// `None` when `--process` was not given (only a single process may leave it out).
    pub process: Option<usize>,
    pub hostfile: Option<PathBuf>,
    /// Seeds per worker per epoch.
    pub batch: usize,
    pub connect_timeout: Duration,
}

impl DistArgs {
    /// This process's index: `--process`, which several processes must each be given (a
    /// default of 0 would start two processes 0 when one is forgotten).
    fn index(&self) -> Result<usize> {
        match (self.process, self.processes) {
            (Some(i), p) if i >= p => {
                bail!("--process {i} of --processes {p}: processes count from 0")
            }
            (Some(i), _) => Ok(i),
            (None, 1) => Ok(0),
            (None, p) => bail!(
                "--processes {p} needs --process (this process's index, from 0 to {})",
                p - 1
            ),
        }
    }

    fn cluster(&self) -> Result<Cluster> {
        let process = self.index()?;
        let hosts = match (&self.hostfile, self.processes) {
            (Some(h), _) => read_hostfile(h, self.processes)?,
            (None, 1) => Vec::new(),
            (None, p) => bail!("--processes {p} needs --hostfile (one host:port line per process)"),
        };
        Ok(Cluster {
            processes: self.processes,
            process,
            workers: self.workers,
            hosts,
            connect_timeout: self.connect_timeout,
        })
    }
}

/// This process's part: from a `gpsense partition` directory, or cut from a whole graph (which
/// this process then loads whole, once).
pub fn load(graph: Option<&Path>, d: &DistArgs) -> Result<Arc<Partition>> {
    if let Some(option) = d.unused {
        bail!("{option} is not available with --workers/--processes");
    }
    // A bad index or hostfile is an error before a large part is loaded, not after.
    let process = d.cluster()?.process;
    let start = Instant::now();
    if let Some(dir) = graph.filter(|p| p.is_dir()) {
        let part = load_part(dir, process as u32, d.processes as u32)?;
        note_part(&part, start);
        return Ok(Arc::new(part));
    }
    let loaded = crate::graph_source::load(graph)?;
    if loaded.compressed.is_some() {
        bail!("a compressed graph cannot be cut into parts: give the original graph");
    }
    if d.processes > 1 {
        crate::out::note!(
            "process {process}: loaded the whole graph to cut its part; `gpsense partition` \
             writes parts that each process loads alone"
        );
    }
    let g = &loaded.graph;
    let vocab = Vocab::of(g);
    let fp = partition::fingerprint(g);
    let part = Partition::cut(g, &vocab, fp, process as u32, d.processes as u32)?;
    drop(loaded);
    note_part(&part, start);
    Ok(Arc::new(part))
}

/// What this process holds: the measure of a cut's balance and of memory against the count of parts.
fn note_part(part: &Partition, start: Instant) {
    crate::release_freed_memory();
    let resident = resident_bytes()
        .map(|b| format!(" (process resident: {:.1} MB)", b as f64 / 1e6))
        .unwrap_or_default();
    crate::out::note!(
        "process {}: part {} of {}: {} nodes, {} edges out and {} in, {:.1} MB in memory{resident}; \
         loaded in {}",
        part.part,
        part.part,
        part.parts,
        thousands(part.local_count() as u64),
        thousands(part.out.targets.len() as u64),
        thousands(part.inc.targets.len() as u64),
        part.heap_bytes() as f64 / 1e6,
        millis(start.elapsed())
    );
}

/// The process's resident memory now (Linux's `VmRSS`; `None` elsewhere): what holding the part
/// costs once the file read during the load is freed.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The row writer, handed back when the dataflow drops its sink, so that the query ends the
/// output once it knows whether the time limit cut it (JSON's closing bracket, the mark).
type Finished = Arc<Mutex<Option<RowWriter<io::Stdout>>>>;

/// Writes rows as they reach worker 0.
struct Writer {
    out: Option<RowWriter<io::Stdout>>,
    failure: Arc<Mutex<Option<io::Error>>>,
    finished: Finished,
}

impl RowSink for Writer {
    fn row(&mut self, names: &[&str]) -> bool {
        let Some(out) = &mut self.out else {
            return false;
        };
        match out.row(names) {
            Ok(()) => true,
            Err(e) => {
                if let Ok(mut f) = self.failure.lock() {
                    f.get_or_insert(e);
                }
                false
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(mut out) = self.out.take() {
            let _ = out.flush();
            if let Ok(mut slot) = self.finished.lock() {
                *slot = Some(out);
            }
        }
    }
}

/// `gpsense query` across processes. Only process 0 prints rows.
pub fn query(
    graph: Option<&Path>,
    text: &str,
    format: RowFormat,
    count: bool,
    options: &MatchOptions,
    semantics_given: bool,
    d: &DistArgs,
) -> Result<()> {
    // What the distributed join cannot answer is refused from the text, before the part loads
    // and before any peer is reached.
    let request = Request::text(text).map_err(|e| render_dist(&e, text))?;
    let part = load(graph, d)?;
    let job = Job {
        request,
        semantics: semantics_given.then_some(options.semantics),
        count_only: count,
        limit: options.limit,
        timeout: options.timeout,
        max_cartesian: options.max_cartesian,
        memory_budget: options.memory_budget,
        batch: d.batch,
    };
    let failure = Arc::new(Mutex::new(None));
    let sink_failure = Arc::clone(&failure);
    let finished: Finished = Arc::new(Mutex::new(None));
    let sink_finished = Arc::clone(&finished);
    let factory: SinkFactory = Box::new(move |columns: &[String]| {
        let out = RowWriter::new(io::stdout(), format, columns);
        Box::new(Writer {
            out: match out {
                Ok(w) => Some(w),
                Err(e) => {
                    if let Ok(mut f) = sink_failure.lock() {
                        f.get_or_insert(e);
                    }
                    None
                }
            },
            failure: Arc::clone(&sink_failure),
            finished: Arc::clone(&sink_finished),
        }) as Box<dyn RowSink>
    });
    let start = Instant::now();
    let cluster = d.cluster()?;
    let mut outcome = gpsense_dist::run(&cluster, vec![part], vec![job], vec![Some(factory)])?;
    let result = outcome.reports.pop().unwrap_or(Ok(None));
    let report = result.map_err(|e| render_dist(&e, text))?;
    if let Some(e) = failure.lock().ok().and_then(|mut f| f.take()) {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err(e).context("cannot write the results");
        }
    }
    let Some(report) = &report else {
        note_traffic(&outcome, d, start);
        return Ok(());
    };
    for unknown in &report.notes {
        crate::out::note!("{unknown} (that pattern has no solution)");
    }
    let cut = report.timed_out;
    let ask = matches!(report.form, Form::Ask) && !count;
    match &report.form {
        _ if ask => {
            let answer = match (report.rows > 0, cut) {
                (true, _) => "yes",
                (false, true) => crate::out::TIMED_OUT_ANSWER,
                (false, false) => "no",
            };
            crate::out::print(format_args!("{answer}\n"))?
        }
        Form::Count { variable, .. } if !count => {
            let mut w =
                RowWriter::new(io::stdout(), format, std::slice::from_ref(variable))?.numeric(0);
            w.row(&[&report.rows.to_string()])?;
            w.end(cut)?;
        }
        _ if count => crate::out::print(crate::out::count_text(report.rows, cut))?,
        _ => {
            let writer = finished.lock().ok().and_then(|mut w| w.take());
            match writer.map(|w| w.end(cut)) {
                Some(Err(e)) if e.kind() != io::ErrorKind::BrokenPipe => {
                    return Err(e).context("cannot write the results")
                }
                _ => io::stdout().flush()?,
            }
        }
    }
    summary(report, &outcome, d, count, start);
    // A match found answers a yes/no question whatever the clock says.
    if ask && report.rows > 0 {
        Ok(())
    } else if cut {
        Err(crate::out::TimedOut.into())
    } else if ask {
        Err(crate::out::NoMatch.into())
    } else {
        Ok(())
    }
}

/// A query error with its caret under the offending text, like single-process queries.
fn render_dist(e: &gpsense_dist::DistError, text: &str) -> anyhow::Error {
    match e {
        gpsense_dist::DistError::Query(q) => crate::lines::Rendered(q.render(text)).into(),
        other => anyhow::anyhow!(other.to_string()),
    }
}

/// The summary every query prints, then what the cluster did.
fn summary(report: &Report, o: &Outcome, d: &DistArgs, count: bool, start: Instant) {
    let answer = match report.form {
        Form::Ask if !count => Answer::YesNo(if report.rows > 0 { "yes" } else { "no" }.to_owned()),
        Form::Count { .. } if !count => Answer::CountRow(report.rows),
        _ if count => Answer::Matches(report.rows),
        _ => Answer::Rows(report.rows),
    };
    let line = Summary {
        answer,
        timed_out: report.timed_out,
        limit_reached: report.limit_reached,
        elapsed: report.elapsed,
        semantics: &report.semantics,
        engine: &"timely dataflow",
    };
    crate::out::note!("{line}");
    crate::out::note!(
        "{}; {} partial matches, at most {} queued at one stage; {}",
        cluster_text(d),
        thousands(report.partial_matches),
        thousands(report.peak_queued),
        traffic_text(o, start)
    );
}

/// `cluster: 2 processes × 4 workers`.
pub fn cluster_text(d: &DistArgs) -> String {
    format!(
        "cluster: {} x {}",
        plural(d.processes as u64, "process", "processes"),
        plural(d.workers as u64, "worker", "workers")
    )
}

/// What this process sent and received, and the time with starting the cluster.
pub fn traffic_text(o: &Outcome, start: Instant) -> String {
    format!(
        "sent {} and received {} bytes; {} with starting the cluster",
        thousands(o.bytes_sent),
        thousands(o.bytes_received),
        millis(start.elapsed())
    )
}

fn note_traffic(o: &Outcome, d: &DistArgs, start: Instant) {
    crate::out::note!(
        "process {}: done; {}",
        d.process.unwrap_or(0),
        traffic_text(o, start)
    );
}

/// A graph with no nodes but the part's relation and node-label names, for resolving benchmark
/// queries (which name labels, never nodes).
pub fn names_only(v: &Vocab) -> Result<KnowledgeGraph> {
    let empty = || Csr::from_parts(vec![0], Vec::new(), Vec::new());
    Ok(KnowledgeGraph::from_parts(GraphParts {
        relations: v.relations.clone(),
        node_label_names: v.node_label_names.clone(),
        out: empty(),
        inc: empty(),
        ..GraphParts::default()
    })?)
}

/// Benchmark queries across processes, in one connection: their counts (`gpsense match`).
pub fn count_graphs(
    part: &Arc<Partition>,
    queries: Vec<gpsense_planner::QueryGraph>,
    options: &MatchOptions,
    d: &DistArgs,
) -> Result<Outcome> {
    let jobs: Vec<Job> = queries
        .into_iter()
        .map(|q| Job {
            request: Request::Graph(q),
            semantics: Some(options.semantics),
            count_only: true,
            limit: options.limit,
            timeout: options.timeout,
            max_cartesian: options.max_cartesian,
            memory_budget: options.memory_budget,
            batch: d.batch,
        })
        .collect();
    let sinks = jobs.iter().map(|_| None).collect();
    Ok(gpsense_dist::run(
        &d.cluster()?,
        vec![Arc::clone(part)],
        jobs,
        sinks,
    )?)
}

/// Process 0's note on what it sent; the others' (with `-v`).
pub fn traffic_note(o: &Outcome, d: &DistArgs, start: Instant) {
    note_traffic(o, d, start)
}
