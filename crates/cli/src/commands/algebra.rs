//! `gpsense query` for standard SPARQL beyond a basic graph pattern (OPTIONAL, UNION, paths,
//! aggregates, expressions, CONSTRUCT, DESCRIBE): the full evaluator, its answer written in the
//! command's formats. Terms are written as node names are (`gpsense_graph::rdf`): IRIs bare,
//! literals in N-Triples form, the graph's plain names as they are.

use std::io::{self, Write};
use std::time::Instant;

use anyhow::{Context, Result};
use gpsense::sparql::{Answer, Options, Sparql, SparqlError, Term};
use gpsense::Matcher;
use gpsense_graph::rdf::term_name;
use gpsense_runtime::MatchOptions;
use spargebra::Query;

use crate::rows::{cell, RowFormat, RowWriter};
use crate::summary::{Answer as Shown, Summary};
use gpsense::fmt::thousands;

/// What `run` needs from the command line.
pub struct Settings<'a> {
    pub format: RowFormat,
    pub count: bool,
    pub explain: bool,
    pub options: &'a MatchOptions,
}

pub fn run(matcher: &Matcher, text: &str, query: Query, s: &Settings) -> Result<()> {
    let start = Instant::now();
    let counts = count_columns(&query);
    let sparql = Sparql::new(matcher);
    let options = Options {
        base_iri: None,
        matching: s.options.clone(),
    };
    let evaluation = sparql
        .evaluate_query(query, &options)
        .map_err(|e| stopped(e.at(text)))?;
    for unknown in &evaluation.matcher.unknown {
        crate::out::note!("{unknown} (that pattern has no solution)");
    }
    if s.explain {
        let m = &evaluation.matcher;
        eprintln!(
            "dialect:   standard SPARQL 1.1, full algebra\nevaluator: {}\nmatcher:   {} basic \
             graph pattern(s), {} rows{}",
            m.evaluator(),
            m.patterns,
            thousands(u128::from(m.rows)),
            if m.declined.is_empty() {
                String::new()
            } else {
                format!("; left to spareval: {}", m.declined.join("; "))
            }
        );
    }
    let native = evaluation.matcher.native;
    let (shown, outcome) = match evaluation.answer {
        Answer::Boolean(yes) => {
            crate::out::print(if yes { "yes\n" } else { "no\n" })?;
            let outcome = if yes {
                Ok(())
            } else {
                Err(crate::out::NoMatch.into())
            };
            let word = if yes { "yes (ASK)" } else { "no (ASK)" };
            (Shown::YesNo(word.to_owned()), outcome)
        }
        Answer::Solutions { variables, rows } => {
            let header: Vec<String> = variables.iter().map(|v| v.as_str().to_owned()).collect();
            let n = u128::from(write_solutions(&header, &counts, rows, s)?);
            let shown = if s.count {
                Shown::Matches(n)
            } else {
                Shown::Rows(n)
            };
            (shown, Ok(()))
        }
        Answer::Graph(triples) => {
            let n = write_triples(triples, s.count)?;
            (Shown::Triples(u128::from(n)), Ok(()))
        }
    };
    let engine = if native {
        "full SPARQL evaluator (native)"
    } else {
        "full SPARQL evaluator (spareval)"
    };
    // The full evaluator runs every pattern as SPARQL does: under homomorphism.
    let summary = Summary {
        answer: shown,
        timed_out: false,
        limit_reached: false,
        elapsed: start.elapsed(),
        semantics: &"hom",
        engine: &engine,
    };
    crate::out::note!("{summary}");
    outcome
}

/// The projected variables bound to a COUNT aggregate (`(COUNT(*) AS ?n)`, `(COUNT(?x) AS ?n)`).
fn count_columns(query: &Query) -> Vec<String> {
    use spargebra::algebra::{AggregateExpression, AggregateFunction, Expression, GraphPattern};
    fn walk(p: &GraphPattern, counted: &mut Vec<String>, out: &mut Vec<String>) {
        match p {
            GraphPattern::Group {
                inner, aggregates, ..
            } => {
                for (v, a) in aggregates {
                    let count = matches!(
                        a,
                        AggregateExpression::CountSolutions { .. }
                            | AggregateExpression::FunctionCall {
                                name: AggregateFunction::Count,
                                ..
                            }
                    );
                    if count {
                        counted.push(v.as_str().to_owned());
                    }
                }
                walk(inner, counted, out);
            }
            GraphPattern::Extend {
                inner,
                variable,
                expression,
            } => {
                walk(inner, counted, out);
                if let Expression::Variable(v) = expression {
                    if counted.iter().any(|c| c == v.as_str()) {
                        out.push(variable.as_str().to_owned());
                    }
                }
            }
            GraphPattern::Project { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::Slice { inner, .. }
            | GraphPattern::OrderBy { inner, .. }
            | GraphPattern::Filter { inner, .. } => walk(inner, counted, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Query::Select { pattern, .. } = query {
        walk(pattern, &mut Vec::new(), &mut out);
    }
    out
}

/// A time-out as the CLI reports every time-out (exit 3); anything else as it is.
fn stopped(e: SparqlError) -> anyhow::Error {
    match e {
        SparqlError::TimedOut => {
            crate::out::note!("the query ran out of time (--timeout-ms)");
            crate::out::TimedOut.into()
        }
        e => e.into(),
    }
}

fn write_solutions(
    header: &[String],
    counts: &[String],
    rows: Box<dyn Iterator<Item = Result<Vec<Option<Term>>, SparqlError>> + '_>,
    s: &Settings,
) -> Result<u64> {
    let limit = s.options.limit.unwrap_or(u64::MAX);
    let mut n = 0u64;
    if s.count {
        for row in rows {
            row.map_err(stopped)?;
            n += 1;
        }
        crate::out::print(format_args!("{n}\n"))?;
        return Ok(n);
    }
    let mut writer = RowWriter::new(io::stdout(), s.format, header)?;
    // A COUNT is a number in JSON, as the graph path writes `COUNT(*)`; other values are names.
    for (i, name) in header.iter().enumerate() {
        if counts.contains(name) {
            writer = writer.numeric(i);
        }
    }
    let json = s.format == RowFormat::Json;
    let mut cells: Vec<String> = Vec::with_capacity(header.len());
    for row in rows {
        if n == limit {
            break;
        }
        let row = row.map_err(stopped)?;
        cells.clear();
        cells.extend(row.iter().zip(header).map(|(t, column)| match t {
            Some(Term::Literal(l)) if json && counts.contains(column) => l.value().to_owned(),
            Some(t) if json => term_name(t).into_owned(),
            Some(t) => cell(&term_name(t)).into_owned(),
            None => String::new(),
        }));
        let refs: Vec<&str> = cells.iter().map(String::as_str).collect();
        match writer.row(&refs) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(n),
            other => other.context("cannot write the results")?,
        }
        n += 1;
    }
    writer.end(false).context("cannot write the results")?;
    Ok(n)
}

/// CONSTRUCT and DESCRIBE: N-Triples on stdout.
fn write_triples(
    triples: Box<dyn Iterator<Item = Result<gpsense::sparql::Triple, SparqlError>> + '_>,
    count_only: bool,
) -> Result<u64> {
    let mut out = io::BufWriter::new(io::stdout());
    let mut n = 0u64;
    for t in triples {
        let t = t.map_err(stopped)?;
        n += 1;
        if !count_only {
            match writeln!(out, "{t} .") {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(n),
                other => other.context("cannot write the results")?,
            }
        }
    }
    if count_only {
        writeln!(out, "{n}")?;
    }
    out.flush().context("cannot write the results")?;
    Ok(n)
}
