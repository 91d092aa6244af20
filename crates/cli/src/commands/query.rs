//! `gpsense query`: answer a query (the short dialect or standard SPARQL) on a graph, streaming rows
//! as they are found.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{Dialect, Form, Prepared, Projected, QueryError};
use gpsense_runtime::{MatchOptions, RowBatch};

use crate::explain;
use crate::graph_source;
use crate::input;
use crate::rows::{cell, RowFormat, RowWriter};
use crate::summary::{Answer, Summary};
use gpsense::solutions;
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
    /// Whether `--semantics` was given (else a standard SPARQL query brings its own).
    pub semantics_given: bool,
    /// Across processes on timely dataflow (`--workers`, `--processes`).
    pub dist: Option<super::distributed::DistArgs>,
    pub options: MatchOptions,
}

pub fn run(args: Args) -> Result<()> {
    let mut queries = query_source(&args)?;
    let Some((line, first)) = queries.next_query()? else {
        bail!("no query in the input (a query starts with SELECT)");
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
    run_several((line, first), queries, &matcher, &args)
}

/// Several queries, answered as they arrive, result sets separated by a blank line; one that fails
/// is reported and the others still run. Input that cannot be read ends the run.
fn run_several(
    first: (usize, String),
    mut queries: input::Queries,
    matcher: &Matcher,
    args: &Args,
) -> Result<()> {
    let (mut failed, mut timed_out, mut printed) = (0, 0, false);
    let mut next = Some(first);
    let mut k = 0;
    while let Some((line, text)) = next {
        k += 1;
        crate::out::note!("query {k} (line {line}):");
        // A blank line between result sets: the separator goes out with the next set.
        let separator = if printed { "\n" } else { "" };
        match run_one(&text, matcher, args, separator) {
            Err(e) if crate::out::closed_pipe(&e) => return Err(e),
            Err(e) if e.is::<crate::out::NoMatch>() => printed = true,
            Err(e) if e.is::<crate::out::TimedOut>() => {
                printed = true;
                timed_out += 1;
            }
            Err(e) => {
                let text = format!("{e:#}");
                match crate::lines::in_file(&text, line) {
                    Some(moved) => eprintln!("error: query {k}: {moved}"),
                    None => eprintln!("error: query {k} (line {line}): {text}"),
                }
                failed += 1;
            }
            Ok(()) => printed = true,
        }
        next = queries.next_query()?;
    }
    // A failure outranks a time-out: its exit status says more is wrong.
    if failed > 0 {
        bail!("{failed} of {k} queries failed");
    }
    if timed_out > 0 {
        crate::out::note!("{timed_out} of {k} queries timed out");
        return Err(crate::out::TimedOut.into());
    }
    Ok(())
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
    let opts = solutions::options_for(
        &p,
        &args.options,
        args.semantics_given.then_some(args.options.semantics),
    );
    crate::out::print(separator)?;
    let start = Instant::now();
    if args.explain {
        eprint!("{}", describe_form(&p));
    }
    // No variable (`cat IsA pet`) or ASK: a yes/no question.
    if p.form == Form::Ask && !args.count {
        return ask(matcher, &p, &opts, start);
    }
    let Reported { report, expansion } = if args.count {
        let reported = solutions::count(matcher, &p, &opts)?;
        let r = &reported.report;
        crate::out::print(crate::out::count_text(r.rows, r.timed_out))?;
        reported
    } else if let Some(column) = solutions::count_column(&p) {
        count_row(matcher, &p, &opts, column, args.format)?
    } else {
        stream_rows(matcher, &p, &opts, args.format)?
    };
    let elapsed = start.elapsed();
    if args.explain {
        let source = semantics_source(&p, args.semantics_given);
        eprint!("{}", explain::report(&p.graph, graph, &report, source));
        if let Some(x) = &expansion {
            eprint!("{}", explain::expansion(matcher, x));
        }
    }
    let answer = match (args.count, solutions::count_column(&p)) {
        (true, _) => Answer::Matches(report.rows),
        (false, Some(_)) => Answer::CountRow(report.rows),
        (false, None) => Answer::Rows(report.rows),
    };
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
fn count_row(
    matcher: &Matcher,
    p: &Prepared,
    opts: &MatchOptions,
    column: &str,
    format: RowFormat,
) -> Result<Reported> {
    let reported = solutions::count(matcher, p, opts)?;
    let mut writer = RowWriter::new(io::stdout(), format, &[column.to_owned()])?.numeric(0);
    let n = reported.report.rows.to_string();
    let timed_out = reported.report.timed_out;
    let written = writer.row(&[&n]).and_then(|()| writer.end(timed_out));
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        other => other.context("cannot write the results")?,
    }
    Ok(reported)
}

/// A yes/no question (ASK, or a query without variables): prints `yes` or `no`; `no` exits with
/// status 1 (as `grep` does when nothing matches), so scripts can test it. When the time limit
/// passed before a match was found the answer is unknown: `timeout`, and its own exit status.
fn ask(matcher: &Matcher, p: &Prepared, opts: &MatchOptions, start: Instant) -> Result<()> {
    let (yes, reported) = solutions::ask(matcher, p, opts)?;
    let report = reported.report;
    // A match found is a true yes, time limit or not.
    let cut = !yes && report.timed_out;
    let answer = match (yes, cut) {
        (true, _) => "yes",
        (false, true) => crate::out::TIMED_OUT_ANSWER,
        (false, false) => "no",
    };
    crate::out::print(format_args!("{answer}\n"))?;
    let why = match (p.dialect, cut) {
        (_, true) => "the time limit passed before a match was found",
        (Dialect::Short, false) => "no variable: a yes/no question",
        (Dialect::Sparql, false) => "ASK",
    };
    let summary = Summary {
        answer: Answer::YesNo(format!("{answer} ({why})")),
        timed_out: report.timed_out,
        limit_reached: false,
        elapsed: start.elapsed(),
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
    let kinds: Vec<bool> = q
        .projection
        .iter()
        .map(|p| matches!(p, Projected::Edge(_)))
        .collect();
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
