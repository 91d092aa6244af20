//! `gpsense query`: answer a query (the short dialect or standard SPARQL) on a graph, streaming rows
//! as they are found.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{Dialect, Form, Prepared, Projected, QueryError, QueryGraph};
use gpsense_runtime::{
    DeviceCounters, EngineKind, MatchError, MatchOptions, MatchReport, Outgrown, RowBatch,
};

use crate::explain;
use crate::graph_source;
use crate::input;
use crate::rows::{cell, RowFormat, RowWriter};
use crate::summary::{batch_line, Answer, Summary};
use gpsense::solutions::{self, Asked, Held, HELD_VALUES};
use gpsense::{Matcher, Reported};

pub struct Args {
    pub graph: Option<PathBuf>,
    /// Resolves relative IRIs in the query and in a text graph.
    pub base: Option<String>,
    pub text: Option<String>,
    pub file: Option<PathBuf>,
    pub format: RowFormat,
    pub count: bool,
    pub explain: bool,
    /// Queries read ahead and counted as one batch on a device engine (1: one at a time).
    pub batch: usize,
    /// Whether `--semantics` was given (else a standard SPARQL query brings its own).
    pub semantics_given: bool,
    /// Across processes on timely dataflow (`--workers`, `--processes`).
    pub dist: Option<super::distributed::DistArgs>,
    pub options: MatchOptions,
}

pub fn run(args: Args) -> Result<()> {
    let mut queries = query_source(&args)?;
    let Some((line, first)) = queries.next_query()? else {
        bail!("no query in the input (a query starts with SELECT or ASK)");
    };
    if let Some(d) = &args.dist {
        if queries.more() {
            bail!("--workers/--processes answer one query at a time; this input holds more");
        }
        if args.explain {
            bail!("--explain is not available with --workers/--processes");
        }
        return super::distributed::query(
            args.graph.as_deref(),
            &first,
            args.format,
            args.count,
            &args.options,
            args.semantics_given,
            d,
        )
        .map_err(|e| in_file(e, line));
    }
    let loaded = graph_source::load_with_base(args.graph.as_deref(), args.base.as_deref())?;
    // A compressed graph (`gpsense compress`) matches on its hyper-nodes, then expands exactly.
    let matcher = Matcher::new(&loaded)?;
    graph_source::announce_engine(
        matcher.engine(),
        args.options.engine,
        args.explain || crate::out::verbose(),
    )?;
    if !queries.more() {
        return run_one(&first, &matcher, &args, "").map_err(|e| in_file(e, line));
    }
    let batch = if batching(&matcher, &args) {
        args.batch
    } else {
        1
    };
    run_several((line, first), queries, &matcher, &args, batch)
}

/// Whether several queries are read ahead for device batches: `--device-batch` above 1 on the
/// `gpu` or `emulated` engine, or `auto` with a GPU, on a graph that is not compressed.
fn batching(matcher: &Matcher, args: &Args) -> bool {
    let device = match args.options.engine {
        EngineKind::Gpu | EngineKind::Emulated => true,
        EngineKind::Auto => matcher.engine().gpu().is_ok(),
        _ => false,
    };
    device && args.batch > 1 && matcher.compressed().is_none()
}

/// Several queries, answered as they arrive, result sets separated by a blank line; one that fails
/// is reported and the others still run. Input that cannot be read ends the run. With `batch`
/// above 1, up to that many queries that have arrived are taken before any is answered (from a
/// pipe, only those its writer has sent: [`input::Arrivals`]), and those the engine answers whole
/// are answered together ([`answer_in_order`]); the answers go out in the input's order.
fn run_several(
    first: (usize, String),
    queries: input::Queries,
    matcher: &Matcher,
    args: &Args,
    batch: usize,
) -> Result<()> {
    let mut tally = Tally::default();
    let mut batches = Batches::default();
    let mut pending = vec![first];
    let mut queries = input::Arrivals::new(queries, batch);
    loop {
        let mut unread = None;
        while pending.len() < batch {
            match queries.arrived() {
                Some(Ok(Some(q))) => pending.push(q),
                None | Some(Ok(None)) => break,
                Some(Err(e)) => {
                    unread = Some(e);
                    break;
                }
            }
        }
        if batch > 1 {
            answer_in_order(&pending, matcher, args, &mut batches, &mut tally)?;
        } else {
            answer_each(&pending, matcher, args, &mut tally)?;
        }
        pending.clear();
        if let Some(e) = unread {
            return Err(e);
        }
        match queries.next()? {
            Some(q) => pending.push(q),
            None => break,
        }
    }
    if args.explain && batches.batches > 0 {
        let b = &batches;
        crate::out::note!("{}", batch_line(b.batched, b.batches, &b.counters));
    }
    tally.status()
}

/// The outcomes of a run's queries so far.
#[derive(Default)]
struct Tally {
    queries: usize,
    failed: usize,
    timed_out: usize,
    /// Whether a result set went out (the next one is then preceded by a blank line).
    printed: bool,
}

impl Tally {
    /// Announces the next query (starting on `line`) and answers it with `answer`, given the
    /// separator its result set goes out after.
    fn next(&mut self, line: usize, answer: impl FnOnce(&str) -> Result<()>) -> Result<()> {
        self.queries += 1;
        crate::out::note!("query {} (line {line}):", self.queries);
        // A blank line between result sets: the separator goes out with the next set.
        let separator = if self.printed { "\n" } else { "" };
        answer(separator)
    }

    /// Counts the outcome of query `self.queries` (starting on `line`), reporting its error; only
    /// a closed pipe ends the run.
    fn record(&mut self, done: Result<()>, line: usize) -> Result<()> {
        let k = self.queries;
        match done {
            Err(e) if crate::out::closed_pipe(&e) => return Err(e),
            Err(e) if e.is::<crate::out::NoMatch>() => self.printed = true,
            Err(e) if e.is::<crate::out::TimedOut>() => {
                self.printed = true;
                self.timed_out += 1;
            }
            Err(e) => {
                let text = format!("{e:#}");
                match crate::lines::in_file(&text, line) {
                    Some(moved) => eprintln!("error: query {k}: {moved}"),
                    None => eprintln!("error: query {k} (line {line}): {text}"),
                }
                self.failed += 1;
            }
            Ok(()) => self.printed = true,
        }
        Ok(())
    }

    /// The run's exit status: a failure outranks a time-out, its exit status says more is wrong.
    fn status(&self) -> Result<()> {
        let k = self.queries;
        if self.failed > 0 {
            bail!("{} of {k} queries failed", self.failed);
        }
        if self.timed_out > 0 {
            crate::out::note!("{} of {k} queries timed out", self.timed_out);
            return Err(crate::out::TimedOut.into());
        }
        Ok(())
    }
}

/// The device batches of a run: their counters and how many queries they answered.
#[derive(Default)]
struct Batches {
    counters: DeviceCounters,
    batches: usize,
    batched: usize,
}

/// How a counting query's answer is printed.
#[derive(Clone, Copy)]
enum Counting {
    /// `--count`: the number alone.
    Matches,
    /// `SELECT (COUNT(*) AS ?n)`: one row.
    Row,
    /// ASK (or a query without variables, without `--count`): yes or no.
    Ask,
}

/// Whether `p` only counts, and how its answer is printed.
fn counting(p: &Prepared, count: bool) -> Option<Counting> {
    match (count, &p.form) {
        (true, _) => Some(Counting::Matches),
        (false, Form::Ask) => Some(Counting::Ask),
        (false, Form::Count { .. }) => Some(Counting::Row),
        (false, Form::Select) => None,
    }
}

/// The options `p` is counted with: its semantics, and for ASK one match is enough.
fn counting_options(p: &Prepared, args: &Args, kind: Counting) -> MatchOptions {
    let mut opts = solutions::options_for(
        p,
        &args.options,
        args.semantics_given.then_some(args.options.semantics),
    );
    if let Counting::Ask = kind {
        opts.limit = Some(1);
    }
    opts
}

/// A SELECT answered ahead, in a batch: its projected rows, held.
struct Listed {
    p: Prepared,
    answer: Result<Reported, MatchError>,
    values: Vec<u32>,
    /// Its share of the batch's time.
    elapsed: Duration,
}

impl Listed {
    fn print(self, matcher: &Matcher, args: &Args, separator: &str) -> Result<()> {
        crate::out::print(separator)?;
        let reported = self.answer?;
        if args.explain {
            eprint!("{}", describe_form(&self.p));
        }
        let r = &reported.report;
        write_held(
            matcher.graph(),
            &self.p,
            args.format,
            &self.values,
            r.timed_out,
        )?;
        let answer = Answer::Rows(r.rows);
        conclude(matcher, &self.p, args, &reported, answer, self.elapsed)
    }
}

/// A counting query answered ahead, in a batch.
struct Counted {
    p: Prepared,
    kind: Counting,
    answer: Result<Reported, MatchError>,
    /// Its share of the batch's time.
    elapsed: Duration,
}

impl Counted {
    fn print(self, matcher: &Matcher, args: &Args, separator: &str) -> Result<()> {
        // The separator goes out first, as for a query answered alone (which may fail after it).
        crate::out::print(separator)?;
        let reported = self.answer?;
        print_counted(matcher, &self.p, args, self.kind, reported, self.elapsed)
    }
}

/// The queries among `pending` on the graph path that the engine answers whole: the counting
/// ones (`--count`, COUNT(*), ASK) and SELECTs without FILTER, OFFSET or ORDER BY, with their place
/// in `pending`, how a count is printed (`None`: rows) and their options.
fn batchable(
    pending: &[(usize, String)],
    matcher: &Matcher,
    args: &Args,
) -> Vec<(usize, Prepared, Option<Counting>, MatchOptions)> {
    let mut chosen = Vec::new();
    for (i, (_, text)) in pending.iter().enumerate() {
        // A text that does not read is answered alone, so that its error has its hints.
        let Ok(gpsense::Reading::Graph(p)) = gpsense::read(matcher, text, args.base.as_deref())
        else {
            continue;
        };
        match counting(&p, args.count) {
            Some(kind) => {
                let opts = counting_options(&p, args, kind);
                chosen.push((i, *p, Some(kind), opts));
            }
            None if !solutions::needs_stage(&p) => {
                let given = args.semantics_given.then_some(args.options.semantics);
                let opts = solutions::options_for(&p, &args.options, given);
                chosen.push((i, *p, None, opts));
            }
            None => {}
        }
    }
    chosen
}

/// `pending` answered one by one, in order.
fn answer_each(
    pending: &[(usize, String)],
    matcher: &Matcher,
    args: &Args,
    tally: &mut Tally,
) -> Result<()> {
    for (line, text) in pending {
        let done = tally.next(*line, |separator| run_one(text, matcher, args, separator));
        tally.record(done, *line)?;
    }
    Ok(())
}

/// A batched query's answer, when it came (since the batch started).
type Arrived = (Result<Reported, MatchError>, Duration);

/// Answers `pending` in order, those [`batchable`] as one batch (`solutions::match_batch_each`,
/// each with its own options, a SELECT's rows held for its turn) on a thread of its own, the
/// others one by one here meanwhile. Each result set goes out as soon as it and those before it
/// are final: a query that fits its batch room does not wait for one after it that goes on alone.
/// A batched answer's time is the batch's up to it, divided by the batch's queries. A SELECT whose
/// held rows would pass [`HELD_VALUES`] is answered again alone, streaming. When the output
/// closes, the batch is stopped.
fn answer_in_order(
    pending: &[(usize, String)],
    matcher: &Matcher,
    args: &Args,
    batches: &mut Batches,
    tally: &mut Tally,
) -> Result<()> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut chosen = batchable(pending, matcher, args);
    if chosen.is_empty() {
        return answer_each(pending, matcher, args, tally);
    }
    for (_, _, _, opts) in &mut chosen {
        opts.cancel.get_or_insert_with(|| stop.clone());
    }
    let mut place: Vec<Option<usize>> = vec![None; pending.len()];
    for (k, (i, ..)) in chosen.iter().enumerate() {
        place[*i] = Some(k);
    }
    let held_values = AtomicUsize::new(0);
    let held: Vec<Mutex<Held>> = chosen.iter().map(|_| Mutex::default()).collect();
    let mut sinks: Vec<_> = held
        .iter()
        .map(|h| {
            let held_values = &held_values;
            move |b: RowBatch| lock(h).take(b, held_values, HELD_VALUES)
        })
        .collect();
    let asked: Vec<Asked> = chosen
        .iter()
        .zip(sinks.iter_mut())
        .map(|((_, p, kind, opts), sink)| {
            let rows: Option<&mut (dyn FnMut(RowBatch) -> bool + Send)> = match kind {
                Some(_) => None,
                None => Some(sink),
            };
            Asked { p, opts, rows }
        })
        .collect();
    let batched = chosen.len() as u32;
    let (send, receive) = std::sync::mpsc::channel::<(usize, Arrived)>();
    std::thread::scope(|s| {
        let start = Instant::now();
        let batch = s.spawn(move || {
            // The sender goes with the thread: its end ends the waits below.
            let tell = |k: usize, a: &Result<Reported, MatchError>| {
                let _ = send.send((k, (a.clone(), start.elapsed())));
            };
            solutions::match_batch_each(matcher, asked, Outgrown::GoOn, &tell)
        });
        let mut arrived: Vec<Option<Arrived>> = chosen.iter().map(|_| None).collect();
        let printed = (|| -> Result<()> {
            for (j, (line, text)) in pending.iter().enumerate() {
                let done = tally.next(*line, |separator| match place[j] {
                    None => run_one(text, matcher, args, separator),
                    Some(k) => {
                        while arrived[k].is_none() {
                            let Ok((at, a)) = receive.recv() else { break };
                            arrived[at] = Some(a);
                        }
                        let (answer, at) = arrived[k].take().unwrap_or_else(|| {
                            (
                                Err(MatchError::Plan("query not answered".into())),
                                start.elapsed(),
                            )
                        });
                        let rows = std::mem::take(&mut *lock(&held[k]));
                        held_values.fetch_sub(rows.values.len(), Ordering::Relaxed);
                        let (_, p, kind, _) = &chosen[k];
                        let elapsed = at / batched;
                        let (p, answer) = (p.clone(), answer);
                        match kind {
                            Some(kind) => Counted {
                                p,
                                kind: *kind,
                                answer,
                                elapsed,
                            }
                            .print(matcher, args, separator),
                            None if rows.spilled => run_one(text, matcher, args, separator),
                            None => Listed {
                                p,
                                answer,
                                values: rows.values,
                                elapsed,
                            }
                            .print(matcher, args, separator),
                        }
                    }
                });
                tally.record(done, *line)?;
            }
            Ok(())
        })();
        if printed.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        if let Ok(counted) = batch.join() {
            let b = &counted.batch;
            batches.counters += b.counters;
            batches.batches += b.batches;
            batches.batched += b.batched;
            crate::summary::note_batch(b);
        }
        printed
    })
}

/// `m` locked, whatever a panic elsewhere left in it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A query's error with its positions counted in the file's (or the argument's) lines, the query
/// starting on line `first`; any other error as it is.
fn in_file(e: anyhow::Error, first: usize) -> anyhow::Error {
    let query_error = e.is::<gpsense::Error>()
        || e.is::<gpsense::sparql::SparqlError>()
        || e.is::<Hinted>()
        || e.is::<crate::lines::Rendered>();
    match crate::lines::in_file(&format!("{e:#}"), first) {
        Some(moved) if query_error => anyhow::anyhow!(moved),
        _ => e,
    }
}

/// A query error and what to do about it, on a line of its own.
#[derive(Debug)]
struct Hinted {
    error: gpsense::Error,
    hint: String,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\nhint: {}", self.error, self.hint)
    }
}

impl std::error::Error for Hinted {}

/// An unknown concept on WordNet loaded without its lemma table, where the word's synsets are
/// named `dog/02084071-n` only: the error says how to name them by word.
fn lemma_hint(e: gpsense::Error, g: &KnowledgeGraph) -> anyhow::Error {
    let gpsense::Error::Query {
        error: QueryError::UnknownConcept { suggestions, .. },
        ..
    } = &e
    else {
        return e.into();
    };
    let Some(synset) = suggestions.iter().find(|s| is_synset_name(s)) else {
        return e.into();
    };
    if !g.aliases().is_empty() {
        return e.into();
    }
    let hint = format!(
        "this graph names WordNet synsets `lemma/synset` ({synset}); to name them by word too, \
         ingest the lemma table with it: gpsense ingest wn30_synset.lemmas.tsv.gz \
         wn30_synset.nodes.tsv.gz wn30_synset.edges.tsv.gz -o wordnet.gps (datasets/wordnet30/; \
         its format is wordnet-lemmas)"
    );
    Hinted { error: e, hint }.into()
}

/// `dog/02084071-n`: a lemma, `/`, WordNet's 8-digit synset offset, `-` and its part of speech.
fn is_synset_name(name: &str) -> bool {
    let Some((lemma, synset)) = name.rsplit_once('/') else {
        return false;
    };
    let b = synset.as_bytes();
    !lemma.is_empty()
        && b.len() == 10
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b"nvasr".contains(&b[9])
}

/// The queries: the argument's text, or a file's (`-` for standard input) as they arrive.
fn query_source(args: &Args) -> Result<input::Queries> {
    match (&args.text, &args.file) {
        (Some(t), None) => Ok(input::Queries::from_text(t.clone())),
        (None, Some(f)) => input::Queries::open(f),
        (Some(_), Some(_)) => {
            bail!("give the query either as an argument or with -f FILE, not both")
        }
        (None, None) => {
            bail!("no query: give it as an argument (SELECT ?x WHERE {{ ... }}) or with -f FILE")
        }
    }
}

/// Answers one query, its output preceded by `separator` (once it is known to have one).
fn run_one(text: &str, matcher: &Matcher, args: &Args, separator: &str) -> Result<()> {
    let graph = matcher.graph();
    let read = gpsense::read(matcher, text, args.base.as_deref());
    let p = match read.map_err(|e| lemma_hint(e, graph))? {
        gpsense::Reading::Graph(p) => *p,
        gpsense::Reading::Algebra(query) => {
            crate::out::print(separator)?;
            let settings = super::algebra::Settings {
                format: args.format,
                count: args.count,
                explain: args.explain,
                options: &args.options,
            };
            return super::algebra::run(matcher, text, *query, &settings);
        }
    };
    crate::out::print(separator)?;
    let start = Instant::now();
    if let Some(kind) = counting(&p, args.count) {
        let opts = counting_options(&p, args, kind);
        let reported = solutions::count(matcher, &p, &opts)?;
        return print_counted(matcher, &p, args, kind, reported, start.elapsed());
    }
    let opts = solutions::options_for(
        &p,
        &args.options,
        args.semantics_given.then_some(args.options.semantics),
    );
    if args.explain {
        eprint!("{}", describe_form(&p));
    }
    let reported = stream_rows(matcher, &p, &opts, args.format)?;
    let rows = reported.report.rows;
    conclude(
        matcher,
        &p,
        args,
        &reported,
        Answer::Rows(rows),
        start.elapsed(),
    )
}

/// A counting query's answer (`reported`, `elapsed` after it started): the number, the COUNT row
/// or yes/no, then as for any query.
fn print_counted(
    matcher: &Matcher,
    p: &Prepared,
    args: &Args,
    kind: Counting,
    reported: Reported,
    elapsed: Duration,
) -> Result<()> {
    if args.explain {
        eprint!("{}", describe_form(p));
    }
    let r = &reported.report;
    let answer = match (kind, solutions::count_column(p)) {
        (Counting::Ask, _) => return ask(p, r, elapsed),
        (Counting::Row, Some(column)) => {
            count_row(column, r, args.format)?;
            Answer::CountRow(r.rows)
        }
        _ => {
            crate::out::print(crate::out::count_text(r.rows, r.timed_out))?;
            Answer::Matches(r.rows)
        }
    };
    conclude(matcher, p, args, &reported, answer, elapsed)
}

/// After a query's answer: `--explain`'s report, the summary, `-v`'s note on `auto`, and a
/// time-out's exit status.
fn conclude(
    matcher: &Matcher,
    p: &Prepared,
    args: &Args,
    reported: &Reported,
    answer: Answer,
    elapsed: Duration,
) -> Result<()> {
    let Reported { report, expansion } = reported;
    if args.explain {
        let source = semantics_source(p, args.semantics_given);
        eprint!(
            "{}",
            explain::report(&p.graph, matcher.graph(), report, source)
        );
        if let Some(x) = expansion {
            eprint!("{}", explain::expansion(matcher, x));
        }
    }
    let summary = Summary {
        answer,
        timed_out: report.timed_out,
        limit_reached: report.limit_reached,
        elapsed,
        semantics: &report.semantics,
        engine: &report.engine,
    };
    crate::out::note!("{summary}");
    if crate::out::verbose() {
        if let Some(auto) = &report.auto {
            let ran = match &report.fallback {
                Some(why) if auto.pick != report.engine => format!("; dfs ran instead ({why})"),
                _ => String::new(),
            };
            crate::out::note!("engine auto chose {}: {}{ran}", auto.pick, auto.reason);
        }
    }
    if report.timed_out {
        return Err(crate::out::TimedOut.into());
    }
    Ok(())
}

/// For `--explain`: where the semantics came from (the report after the run says which they are).
pub(crate) fn semantics_source(p: &Prepared, semantics_given: bool) -> &'static str {
    match (p.injective, semantics_given) {
        (_, true) => "from --semantics",
        (None, false) => "the default",
        (Some(true), false) => "the FILTERs make every two query nodes differ",
        (Some(false), false) => "as SPARQL evaluates a pattern",
    }
}

/// For `--explain`: the dialect and what runs around the pattern.
pub(crate) fn describe_form(p: &Prepared) -> String {
    let dialect = match p.dialect {
        Dialect::Short => "gpsense's short SPARQL (bare words)",
        Dialect::Sparql => "standard SPARQL 1.1 (parsed by spargebra)",
    };
    let mut out = format!("dialect:   {dialect}\n");
    let form = match &p.form {
        Form::Select => None,
        Form::Ask => Some("ASK (yes or no)".to_owned()),
        Form::Count { variable, .. } => Some(format!("COUNT(*) AS ?{variable}")),
    };
    let mut extras: Vec<String> = form.into_iter().collect();
    if !p.filters.is_empty() {
        extras.push(format!("{} FILTER test(s) on rows", p.filters.len()));
    }
    if p.offset > 0 {
        extras.push(format!("OFFSET {}", p.offset));
    }
    if !p.order.is_empty() {
        extras.push(format!("ORDER BY {} key(s)", p.order.len()));
    }
    if !extras.is_empty() {
        out.push_str(&format!("solution:  {}\n", extras.join(", ")));
    }
    out
}

/// `SELECT (COUNT(*) AS ?n)`: one row, one numeric column.
fn count_row(column: &str, report: &MatchReport, format: RowFormat) -> Result<()> {
    let mut writer = RowWriter::new(io::stdout(), format, &[column.to_owned()])?.numeric(0);
    let n = report.rows.to_string();
    let written = writer
        .row(&[&n])
        .and_then(|()| writer.end(report.timed_out));
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write the results"),
    }
}

/// A yes/no question (ASK, or a query without variables), counted with a limit of 1: prints `yes`
/// or `no`; `no` exits with status 1 (as `grep` does when nothing matches), so scripts can test
/// it. When the time limit passed before a match was found the answer is unknown: `timeout`, and
/// its own exit status.
fn ask(p: &Prepared, report: &MatchReport, elapsed: Duration) -> Result<()> {
    let yes = report.rows > 0;
    // A match found is a true yes, time limit or not.
    let cut = !yes && report.timed_out;
    let answer = match (yes, cut) {
        (true, _) => "yes",
        (false, true) => crate::out::TIMED_OUT_ANSWER,
        (false, false) => "no",
    };
    crate::out::print(format_args!("{answer}\n"))?;
    // The short dialect's ASK projects nothing, as a query without variables does.
    let variables = p.graph.variable_count() + p.graph.edge_variables.len();
    let why = match (p.dialect, cut) {
        (_, true) => "the time limit passed before a match was found",
        (Dialect::Short, false) if variables == 0 => "no variable: a yes/no question",
        (_, false) => "ASK",
    };
    let summary = Summary {
        answer: Answer::YesNo(format!("{answer} ({why})")),
        timed_out: report.timed_out,
        limit_reached: false,
        elapsed,
        semantics: &report.semantics,
        engine: &report.engine,
    };
    crate::out::note!("{summary}");
    match (yes, cut) {
        (true, _) => Ok(()),
        (false, true) => Err(crate::out::TimedOut.into()),
        (false, false) => Err(crate::out::NoMatch.into()),
    }
}

/// Runs the query, writing each batch of rows to stdout as soon as it arrives.
fn stream_rows(
    engine: &Matcher,
    p: &Prepared,
    opts: &MatchOptions,
    format: RowFormat,
) -> Result<Reported> {
    let graph = engine.graph();
    let q = &p.graph;
    let header = solutions::column_names(q);
    let stdout = io::stdout();
    let mut writer = RowWriter::new(stdout, format, &header)?;
    let mut failure: Option<io::Error> = None;
    let kinds = edge_columns(q);
    let bare = format != RowFormat::Json;
    let report = solutions::select(engine, p, opts, &mut |batch: RowBatch| match write_batch(
        &mut writer,
        graph,
        &kinds,
        bare,
        batch,
    ) {
        Ok(()) => true,
        Err(e) => {
            failure = Some(e);
            false
        }
    })?;
    match failure {
        // A closed pipe (`| head`) is the reader saying it has enough.
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(report),
        Some(e) => return Err(e).context("cannot write the results"),
        None => {}
    }
    writer
        .end(report.report.timed_out)
        .context("cannot write the results")?;
    Ok(report)
}

/// Which projected columns are edge variables (named as relations).
fn edge_columns(q: &QueryGraph) -> Vec<bool> {
    q.projection
        .iter()
        .map(|p| matches!(p, Projected::Edge(_)))
        .collect()
}

/// Projected rows held in memory (`values`), written as [`stream_rows`] writes them.
fn write_held(
    g: &KnowledgeGraph,
    p: &Prepared,
    format: RowFormat,
    values: &[u32],
    timed_out: bool,
) -> Result<()> {
    let q = &p.graph;
    let mut writer = RowWriter::new(io::stdout(), format, &solutions::column_names(q))?;
    let width = q.projection.len();
    let batch = RowBatch {
        data: values,
        width,
        rows: values.len().checked_div(width).unwrap_or(0),
    };
    let bare = format != RowFormat::Json;
    let written = write_batch(&mut writer, g, &edge_columns(q), bare, batch)
        .and_then(|()| writer.end(timed_out));
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write the results"),
    }
}

/// `bare`: numbers as cells (TSV, CSV); JSON keeps names.
fn write_batch<W: Write>(
    writer: &mut RowWriter<W>,
    g: &KnowledgeGraph,
    is_edge: &[bool],
    bare: bool,
    batch: RowBatch,
) -> io::Result<()> {
    let mut names: Vec<std::borrow::Cow<str>> = Vec::with_capacity(batch.width);
    for row in batch.iter() {
        names.clear();
        names.extend(row.iter().zip(is_edge).map(|(&id, &edge)| {
            if edge {
                g.relation_name(id as u16).into()
            } else if bare {
                cell(g.node_name(id))
            } else {
                g.node_name(id).into()
            }
        }));
        let refs: Vec<&str> = names.iter().map(|n| n.as_ref()).collect();
        writer.row(&refs)?;
    }
    writer.flush()
}
