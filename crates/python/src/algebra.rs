//! Standard SPARQL beyond a basic graph pattern (OPTIONAL, UNION, MINUS, paths, aggregates, BIND,
//! VALUES, subqueries, CONSTRUCT, DESCRIBE): answered by the full evaluator (`gpsense-sparql`), as
//! the CLI and the endpoint answer it. Terms are named as the graph names nodes (`term_name`: IRIs
//! bare, literals in N-Triples form), an unbound value is `None`, and CONSTRUCT or DESCRIBE gives
//! (subject, predicate, object) rows. The answer is evaluated whole on the first read, with the GIL
//! released, within the memory budget, the time limit and Ctrl-C.

use std::time::{Duration, Instant};

use gpsense::sparql::{Answer, MatcherUse, Options, Sparql, SparqlError};
use gpsense::{MatchOptions, Semantics};
use gpsense_graph::rdf::{subject_name, term_name};
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use spargebra::algebra::GraphPattern;
use spargebra::Query;

use crate::errors;
use crate::graph::inline;
use crate::options::Call;
use crate::shared::Shared;

/// The columns of a CONSTRUCT or DESCRIBE answer.
const TRIPLE_COLUMNS: [&str; 3] = ["subject", "predicate", "object"];

/// The column names of `q`'s rows, known before it runs (empty for ASK).
pub fn columns(q: &Query) -> Vec<String> {
    match q {
        Query::Select { pattern, .. } => projection(pattern),
        Query::Ask { .. } => Vec::new(),
        Query::Construct { .. } | Query::Describe { .. } => {
            TRIPLE_COLUMNS.iter().map(|c| (*c).to_owned()).collect()
        }
    }
}

/// The projected variables: spargebra puts the projection under the slice and DISTINCT.
fn projection(p: &GraphPattern) -> Vec<String> {
    match p {
        GraphPattern::Slice { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner } => projection(inner),
        GraphPattern::Project { variables, .. } => {
            variables.iter().map(|v| v.as_str().to_owned()).collect()
        }
        other => {
            let mut names = Vec::new();
            other.on_in_scope_variable(|v| names.push(v.as_str().to_owned()));
            names
        }
    }
}

/// The matcher's options for the evaluator. Its semantics is SPARQL's (hom): `semantics="iso"` is
/// not applied, and says so.
pub fn options(py: Python<'_>, call: &Call) -> PyResult<MatchOptions> {
    if call.semantics_given && call.options.semantics == Semantics::Iso {
        PyErr::warn(
            py,
            &py.get_type::<PyUserWarning>(),
            c"semantics=\"iso\" does not apply to this query: beyond a basic graph pattern \
              (OPTIONAL, UNION, paths, aggregates, ...) the full SPARQL evaluator answers it with \
              SPARQL's semantics (hom)",
            1,
        )?;
    }
    Ok(call.options.clone())
}

/// What to keep of the rows.
#[derive(Clone, Copy)]
pub enum Keep {
    /// Their names, at most this many rows.
    Rows(Option<u64>),
    /// Only their number, at most this many (`limit=`; 1 for `ask()`).
    Count(Option<u64>),
}

/// The evaluator's answer, whole.
pub struct Evaluated {
    /// The rows kept (none when only counting).
    pub rows: Vec<Vec<Option<String>>>,
    /// The rows (or triples) seen; 1 or 0 for ASK.
    pub count: u64,
    /// ASK's answer.
    pub boolean: Option<bool>,
    /// The time limit stopped the evaluation before its end.
    pub timed_out: bool,
    /// What the matcher answered inside, and the names the graph lacks.
    pub matcher: MatcherUse,
    pub elapsed: Duration,
}

/// Evaluates `query` on the calling thread with the GIL released; the names the graph lacks become
/// Python warnings (their patterns have no solution, as the standard says).
pub fn evaluate(
    py: Python<'_>,
    shared: &Shared,
    query: &Query,
    options: &MatchOptions,
    keep: Keep,
) -> PyResult<Evaluated> {
    let budget = options.memory_budget;
    let outcome = inline(py, |cancel| {
        let mut matching = options.clone();
        matching.cancel = Some(cancel);
        let options = Options {
            base_iri: None,
            matching,
        };
        shared.with_dependent(|_, e| run(&Sparql::new(&e.matcher), query.clone(), &options, keep))
    })?;
    let evaluated = match outcome {
        Ok(evaluated) => evaluated,
        Err(Stop::OverBudget) => {
            return Err(errors::match_error(
                py,
                format!(
                    "the rows take more than the memory budget ({budget} bytes as names, before \
                     Python objects): add a LIMIT, or count them with count()"
                ),
            ))
        }
        Err(Stop::Failed(e)) => return Err(sparql_error(py, e)),
    };
    for unknown in &evaluated.matcher.unknown {
        let message = format!("{unknown} (that pattern has no solution)");
        PyErr::warn(
            py,
            &py.get_type::<PyUserWarning>(),
            &std::ffi::CString::new(message.replace('\0', " "))?,
            1,
        )?;
    }
    Ok(evaluated)
}

/// Why an evaluation gave no answer.
enum Stop {
    OverBudget,
    Failed(SparqlError),
}

fn run<M: gpsense::sparql::Matching + ?Sized>(
    sparql: &Sparql<'_, M>,
    query: Query,
    options: &Options,
    keep: Keep,
) -> Result<Evaluated, Stop> {
    let start = Instant::now();
    let mut out = Evaluated {
        rows: Vec::new(),
        count: 0,
        boolean: None,
        timed_out: false,
        matcher: MatcherUse::default(),
        elapsed: Duration::ZERO,
    };
    let evaluation = match sparql.evaluate_query(query, options) {
        Ok(evaluation) => evaluation,
        // The time limit passed in a basic graph pattern, before any row.
        Err(SparqlError::TimedOut) => {
            out.timed_out = true;
            out.elapsed = start.elapsed();
            return Ok(out);
        }
        Err(e) => return Err(Stop::Failed(e)),
    };
    out.matcher = evaluation.matcher;
    let rows: Box<dyn Iterator<Item = Result<Vec<Option<String>>, SparqlError>> + '_> =
        match evaluation.answer {
            Answer::Boolean(yes) => {
                out.boolean = Some(yes);
                out.count = u64::from(yes);
                out.elapsed = start.elapsed();
                return Ok(out);
            }
            Answer::Solutions { rows, .. } => Box::new(rows.map(|row| {
                row.map(|row| {
                    row.iter()
                        .map(|t| t.as_ref().map(|t| term_name(t).into_owned()))
                        .collect()
                })
            })),
            Answer::Graph(triples) => Box::new(triples.map(|t| {
                t.map(|t| {
                    vec![
                        Some(subject_name(t.subject.as_ref()).into_owned()),
                        Some(term_name(t.predicate.as_ref()).into_owned()),
                        Some(term_name(&t.object).into_owned()),
                    ]
                })
            })),
        };
    let (limit, names) = match keep {
        Keep::Rows(limit) => (limit, true),
        Keep::Count(limit) => (limit, false),
    };
    let budget = options.matching.memory_budget;
    let mut bytes = 0u64;
    for row in rows {
        if limit.is_some_and(|l| out.count >= l) {
            break;
        }
        let row = match row {
            Ok(row) => row,
            Err(SparqlError::TimedOut) => {
                out.timed_out = true;
                break;
            }
            Err(e) => return Err(Stop::Failed(e)),
        };
        out.count += 1;
        if names {
            bytes += row_bytes(&row);
            if bytes > budget {
                return Err(Stop::OverBudget);
            }
            out.rows.push(row);
        }
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

/// What a row of names holds in memory, roughly.
fn row_bytes(row: &[Option<String>]) -> u64 {
    let cells = std::mem::size_of_val(row) as u64 + 24;
    cells + row.iter().flatten().map(|s| s.len() as u64).sum::<u64>()
}

/// An evaluator's error as the matching Python exception.
pub fn sparql_error(py: Python<'_>, e: SparqlError) -> PyErr {
    match e {
        SparqlError::MemoryBudget { .. } | SparqlError::Memory(_) | SparqlError::Matcher(_) => {
            errors::match_error(py, e.to_string())
        }
        SparqlError::TimedOut => errors::timeout(py, e.to_string(), py.None()),
        SparqlError::Syntax(_) | SparqlError::Unsupported { .. } | SparqlError::Evaluation(_) => {
            errors::raise(py, "QueryError", (e.to_string(),))
        }
    }
}

/// `Graph.explain`'s dict for a query the full evaluator answered.
pub fn explained<'py>(
    py: Python<'py>,
    options: &MatchOptions,
    e: &Evaluated,
) -> PyResult<Bound<'py, PyDict>> {
    let m = &e.matcher;
    let d = PyDict::new(py);
    d.set_item("dialect", "sparql")?;
    d.set_item("evaluator", "algebra")?;
    // Which evaluator ran: the native one on ids, or spareval behind it.
    d.set_item("native", m.native)?;
    d.set_item("semantics", "hom")?;
    d.set_item("engine", options.engine.to_string())?;
    d.set_item("patterns", m.patterns)?;
    d.set_item("pattern_rows", m.rows)?;
    d.set_item("declined", m.declined.clone())?;
    d.set_item("unknown", m.unknown.clone())?;
    let times = PyDict::new(py);
    times.set_item("total", e.elapsed.as_secs_f64() * 1e3)?;
    d.set_item("times_ms", times)?;
    d.set_item("matches", e.count)?;
    d.set_item("timed_out", e.timed_out)?;
    let declined = if m.declined.is_empty() {
        String::new()
    } else {
        format!("; left to spareval: {}", m.declined.join("; "))
    };
    let text = format!(
        "dialect:   standard SPARQL 1.1, full algebra\nevaluator: {}\nmatcher:   {} basic graph \
         pattern(s), {} rows{declined}\n",
        m.evaluator(),
        m.patterns,
        m.rows
    );
    d.set_item("text", text)?;
    Ok(d)
}
