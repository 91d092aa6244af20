//! `gpsense query`: answer a SPARQL basic graph pattern on a graph, streaming rows as they are found.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{compile, Projected, QueryGraph};
use gpsense_runtime::{MatchOptions, RowBatch};

use crate::explain;
use crate::fmt::{millis, thousands};
use crate::graph_source;
use crate::matcher::{Matcher, Reported};
use crate::rows::{RowFormat, RowWriter};

pub struct Args {
    pub graph: Option<PathBuf>,
    pub text: Option<String>,
    pub file: Option<PathBuf>,
    pub format: RowFormat,
    pub count: bool,
    pub explain: bool,
    pub options: MatchOptions,
}

pub fn run(args: Args) -> Result<()> {
    let text = query_text(&args)?;
    let queries = split_queries(&text);
    if queries.is_empty() {
        bail!("no query in the input (a query starts with SELECT)");
    }
    let loaded = graph_source::load(args.graph.as_deref())?;
    // A compressed graph (`gpsense compress`) matches on its hyper-nodes, then expands exactly.
    let matcher = Matcher::new(&loaded)?;
    graph_source::announce_engine(
        matcher.engine(),
        args.options.engine,
        args.explain || crate::out::verbose(),
    )?;
    if let [(_, only)] = queries[..] {
        return run_one(only, &matcher, &args, "");
    }
    // Several queries: answered in turn, result sets separated by a blank line; one that fails is
    // reported and the others still run.
    let (mut failed, mut printed) = (0, false);
    for (k, &(line, text)) in queries.iter().enumerate() {
        crate::out::note!("query {} (line {line}):", k + 1);
        // A blank line between result sets: the separator goes out with the next set.
        let separator = if printed { "\n" } else { "" };
        match run_one(text, &matcher, &args, separator) {
            Err(e) if crate::out::closed_pipe(&e) => return Err(e),
            Err(e) if e.is::<crate::out::NoMatch>() => printed = true,
            Err(e) => {
                eprintln!("error: query {} (line {line}): {e:#}", k + 1);
                failed += 1;
            }
            Ok(()) => printed = true,
        }
    }
    if failed > 0 {
        bail!("{failed} of {} queries failed", queries.len());
    }
    Ok(())
}

/// The queries of a text, each from its `SELECT` (outside quotes, IRIs and comments) to the next,
/// with the line it starts on.
fn split_queries(text: &str) -> Vec<(usize, &str)> {
    let mut starts = Vec::new();
    let (mut quote, mut iri, mut comment) = (false, false, false);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\n' => comment = false,
            _ if comment => {}
            b'"' if !iri => quote = !quote,
            b'<' if !quote => iri = true,
            b'>' if !quote => iri = false,
            b'#' if !quote && !iri => comment = true,
            _ if quote || iri => {}
            _ => {
                let word_start = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
                if word_start
                    && bytes[i..].len() >= 6
                    && bytes[i..i + 6].eq_ignore_ascii_case(b"SELECT")
                    && bytes.get(i + 6).is_none_or(|c| !c.is_ascii_alphanumeric())
                {
                    starts.push(i);
                }
            }
        }
    }
    if starts.is_empty() {
        // Not a query the splitter recognises: the parser says what is wrong with it.
        return if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![(1, text)]
        };
    }
    // Whatever comes before the first SELECT belongs to it (the parser judges it).
    starts[0] = 0;
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(text.len());
        let lead = text[s..].len() - text[s..].trim_start().len();
        let line = text[..s + lead].matches('\n').count() + 1;
        out.push((line, &text[s..end]));
    }
    out
}

/// Answers one query, its output preceded by `separator` (once it is known to have one).
fn run_one(text: &str, matcher: &Matcher, args: &Args, separator: &str) -> Result<()> {
    let graph = matcher.graph();
    let q = compile(text, graph).map_err(|e| anyhow::anyhow!("{}", e.render(text)))?;
    crate::out::print(separator)?;
    let start = Instant::now();
    // No variable (`cat IsA pet`): a yes/no question, answered as SPARQL's ASK would be.
    if q.projection.is_empty() && !args.count {
        return ask(matcher, &q, args, start);
    }
    let Reported { report, expansion } = if args.count {
        let reported = matcher.count(&q, &args.options)?;
        crate::out::print(format_args!("{}\n", reported.report.rows))?;
        reported
    } else {
        stream_rows(matcher, &q, args)?
    };
    let elapsed = start.elapsed();
    if args.explain {
        eprint!("{}", explain::report(&q, graph, &report));
        if let Some(x) = &expansion {
            eprint!("{}", matcher.describe(x));
        }
    }
    let cut = if report.timed_out {
        " (timed out: the answer is incomplete)"
    } else if report.limit_reached {
        " (limit reached: more matches exist)"
    } else {
        ""
    };
    let what = match (args.count, report.rows == 1) {
        (true, true) => "match",
        (true, false) => "matches",
        (false, true) => "row",
        (false, false) => "rows",
    };
    crate::out::note!(
        "{} {what}{cut} in {} [{} semantics, {} engine]",
        thousands(report.rows),
        millis(elapsed),
        report.semantics,
        report.engine
    );
    Ok(())
}

fn query_text(args: &Args) -> Result<String> {
    match (&args.text, &args.file) {
        (Some(t), None) => Ok(t.clone()),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut text = String::new();
            io::Read::read_to_string(&mut io::stdin(), &mut text)
                .context("cannot read the queries from standard input")?;
            Ok(text)
        }
        (None, Some(f)) => std::fs::read_to_string(f)
            .with_context(|| format!("cannot read the query file {}", f.display())),
        (Some(_), Some(_)) => {
            bail!("give the query either as an argument or with -f FILE, not both")
        }
        (None, None) => {
            bail!("no query: give it as an argument (SELECT ?x WHERE {{ ... }}) or with -f FILE")
        }
    }
}

/// A query without variables: prints `yes` or `no`; `no` exits with status 1 (as `grep` does when
/// nothing matches), so scripts can test it.
fn ask(matcher: &Matcher, q: &QueryGraph, args: &Args, start: Instant) -> Result<()> {
    let opts = MatchOptions {
        limit: Some(1),
        ..args.options.clone()
    };
    let report = matcher.count(q, &opts)?.report;
    let yes = report.rows > 0;
    crate::out::print(if yes { "yes\n" } else { "no\n" })?;
    crate::out::note!(
        "{} (no variable: a yes/no question) in {} [{} semantics, {} engine]",
        if yes { "yes" } else { "no" },
        millis(start.elapsed()),
        report.semantics,
        report.engine
    );
    if yes {
        Ok(())
    } else {
        Err(crate::out::NoMatch.into())
    }
}

/// Runs the query, writing each batch of rows to stdout as soon as it arrives.
fn stream_rows(engine: &Matcher, q: &QueryGraph, args: &Args) -> Result<Reported> {
    let graph = engine.graph();
    let header = column_names(q);
    let stdout = io::stdout();
    let mut writer = RowWriter::new(stdout, args.format, &header)?;
    let mut failure: Option<io::Error> = None;
    let kinds: Vec<bool> = q
        .projection
        .iter()
        .map(|p| matches!(p, Projected::Edge(_)))
        .collect();
    let report = engine.run(q, &args.options, &mut |batch: RowBatch| match write_batch(
        &mut writer,
        graph,
        &kinds,
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
    writer.finish().context("cannot write the results")?;
    Ok(report)
}

fn write_batch<W: Write>(
    writer: &mut RowWriter<W>,
    g: &KnowledgeGraph,
    is_edge: &[bool],
    batch: RowBatch,
) -> io::Result<()> {
    let mut names: Vec<&str> = Vec::with_capacity(batch.width);
    for row in batch.iter() {
        names.clear();
        names.extend(row.iter().zip(is_edge).map(|(&id, &edge)| {
            if edge {
                g.relation_name(id as u16)
            } else {
                g.node_name(id)
            }
        }));
        writer.row(&names)?;
    }
    writer.flush()
}

/// Column headers: the projected variables, without `?`.
pub fn column_names(q: &QueryGraph) -> Vec<String> {
    q.projection
        .iter()
        .map(|p| match *p {
            Projected::Node(u) => q.nodes[u].name.trim_start_matches('?').to_owned(),
            Projected::Edge(k) => q.edge_variables[k].trim_start_matches('?').to_owned(),
        })
        .collect()
}
