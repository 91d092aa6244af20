//! One query, start to end, on a blocking thread: parse and resolve (standard SPARQL first, the
//! short dialect as the fallback), run through `solutions` as `gpsense query` does, write the body.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{prepare, Dialect, Form, Prepared, Projected, QueryError};
use gpsense_runtime::{MatchError, MatchOptions, RowBatch};
use spargebra::algebra::GraphPattern;
use spargebra::{Query as SparqlQuery, SparqlParser};

use super::results::{self, Format, SolutionsWriter, Term, XSD_INTEGER};
use super::terms::TermKinds;
use gpsense::solutions;
use gpsense::solutions::{column_names, options_for};
use gpsense::Matcher;

/// What every query shares: the engine over the graph loaded once, and the base options.
pub struct Engine {
    pub matcher: Matcher<'static>,
    pub kinds: TermKinds,
    /// Engine kind and memory budget; semantics, time limit and row cap are set per query.
    pub options: MatchOptions,
}

/// One query to answer.
pub struct Request {
    pub text: String,
    pub format: Format,
    pub timeout: Duration,
    pub max_rows: u64,
    /// Set when the client is gone: the rows are no longer wanted.
    pub cancel: Arc<AtomicBool>,
}

/// A body ready to send.
#[derive(Debug)]
pub struct Answer {
    pub body: Vec<u8>,
    /// More rows than the row cap: the first ones were sent.
    pub truncated: bool,
    /// Said in a response header: why a standard query's answer is empty (an unknown name).
    pub warning: Option<String>,
}

/// Why there is no answer.
#[derive(Debug)]
pub enum Failure {
    /// The query does not parse, uses an unsupported construct, or names nothing in the graph
    /// (short dialect): the planner's message with its line, column and caret.
    BadQuery(String),
    /// The time limit passed before the answer was complete.
    TimedOut(Duration),
    /// The client went away.
    Cancelled,
    /// The engine refused or failed (a budget, a device).
    Engine(MatchError),
}

impl From<MatchError> for Failure {
    fn from(e: MatchError) -> Self {
        Failure::Engine(e)
    }
}

impl Engine {
    fn graph(&self) -> &'static KnowledgeGraph {
        self.matcher.graph()
    }

    /// Answers `req`. Never panics on its input: errors come back as [`Failure`]s.
    pub fn execute(&self, req: &Request) -> Result<Answer, Failure> {
        let p = match prepare(&req.text, self.graph(), Dialect::Sparql) {
            Ok(p) => p,
            Err(e) => return self.unknown_name(req, &e),
        };
        let mut opts = options_for(&p, &self.options, false);
        opts.timeout = Some(req.timeout);
        match &p.form {
            Form::Ask => self.ask(req, &p, &opts),
            Form::Count { variable, .. } => self.count(req, &p, &opts, variable),
            Form::Select => self.select(req, &p, opts),
        }
    }

    /// SPARQL has no error for a name the data lacks: a standard query naming an unknown concept
    /// or relation has no solution (as pyoxigraph answers), the planner's message (with its
    /// suggestions) going in a header. Any other error, or the short dialect's, is a bad query.
    fn unknown_name(&self, req: &Request, e: &QueryError) -> Result<Answer, Failure> {
        let unknown = matches!(
            e,
            QueryError::UnknownConcept { .. } | QueryError::UnknownRelation { .. }
        );
        let shape = unknown.then(|| empty_shape(&req.text)).flatten();
        let Some(shape) = shape else {
            return Err(Failure::BadQuery(e.render(&req.text)));
        };
        let body = match shape {
            Shape::Ask => results::boolean(req.format, false),
            Shape::Count(var) => count_body(req.format, &var, 0),
            Shape::Select(vars) => SolutionsWriter::new(req.format, &vars).finish(),
        };
        Ok(Answer {
            body,
            truncated: false,
            warning: Some(e.to_string()),
        })
    }

    fn ask(&self, req: &Request, p: &Prepared, opts: &MatchOptions) -> Result<Answer, Failure> {
        let (yes, reported) = solutions::ask(&self.matcher, p, opts)?;
        // A match found before the limit is an answer; no match by then is not.
        if reported.report.timed_out && !yes {
            return Err(Failure::TimedOut(req.timeout));
        }
        Ok(answer(results::boolean(req.format, yes)))
    }

    fn count(
        &self,
        req: &Request,
        p: &Prepared,
        opts: &MatchOptions,
        variable: &str,
    ) -> Result<Answer, Failure> {
        let reported = solutions::count(&self.matcher, p, opts)?;
        if reported.report.timed_out {
            return Err(Failure::TimedOut(req.timeout));
        }
        Ok(answer(count_body(
            req.format,
            variable,
            reported.report.rows,
        )))
    }

    /// The rows, at most `max_rows` of them (one more is asked for, to know whether there are more),
    /// held as ids until the match is complete, then written.
    fn select(
        &self,
        req: &Request,
        p: &Prepared,
        mut opts: MatchOptions,
    ) -> Result<Answer, Failure> {
        let cap = req.max_rows;
        opts.limit = Some(cap.saturating_add(1));
        let mut ids: Vec<u32> = Vec::new();
        let mut rows = 0u64;
        let cancel = &req.cancel;
        let mut take = |batch: RowBatch| {
            if cancel.load(Relaxed) {
                return false;
            }
            for row in batch.iter() {
                if rows > cap {
                    break;
                }
                ids.extend_from_slice(row);
                rows += 1;
            }
            rows <= cap
        };
        let reported = solutions::select(&self.matcher, p, &opts, &mut take)?;
        if cancel.load(Relaxed) {
            return Err(Failure::Cancelled);
        }
        if reported.report.timed_out {
            return Err(Failure::TimedOut(req.timeout));
        }
        let truncated = rows > cap;
        let width = p.graph.projection.len();
        ids.truncate(width * cap.min(rows) as usize);
        Ok(Answer {
            body: self.write_rows(req.format, p, &ids),
            truncated,
            warning: None,
        })
    }

    fn write_rows(&self, format: Format, p: &Prepared, ids: &[u32]) -> Vec<u8> {
        let g = self.graph();
        let vars = column_names(&p.graph);
        let is_edge: Vec<bool> = p
            .graph
            .projection
            .iter()
            .map(|c| matches!(c, Projected::Edge(_)))
            .collect();
        let mut writer = SolutionsWriter::new(format, &vars);
        let mut terms: Vec<Term> = Vec::with_capacity(vars.len());
        // An empty projection cannot reach here (no variable is ASK), but `chunks` needs width > 0.
        for row in ids.chunks(vars.len().max(1)) {
            terms.clear();
            terms.extend(
                row.iter()
                    .zip(&is_edge)
                    .map(|(&id, &edge)| self.kinds.term(g, id, edge)),
            );
            writer.row(&terms);
        }
        writer.finish()
    }
}

fn answer(body: Vec<u8>) -> Answer {
    Answer {
        body,
        truncated: false,
        warning: None,
    }
}

/// `SELECT (COUNT(*) AS ?n)`: one row, an `xsd:integer`.
fn count_body(format: Format, variable: &str, n: u128) -> Vec<u8> {
    let mut writer = SolutionsWriter::new(format, &[variable.to_owned()]);
    writer.row(&[Term::typed(n.to_string(), XSD_INTEGER)]);
    writer.finish()
}

/// The form of a standard query, enough to write an empty answer.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Ask,
    Count(String),
    Select(Vec<String>),
}

/// The form and projected variables of `text` as standard SPARQL, or `None` if it is not.
fn empty_shape(text: &str) -> Option<Shape> {
    let query = SparqlParser::new().parse_query(text).ok()?;
    let SparqlQuery::Select { pattern, .. } = query else {
        return matches!(query, SparqlQuery::Ask { .. }).then_some(Shape::Ask);
    };
    let mut p = &pattern;
    loop {
        p = match p {
            GraphPattern::Slice { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::OrderBy { inner, .. } => inner,
            GraphPattern::Project { inner, variables } => {
                let vars: Vec<String> = variables.iter().map(|v| v.as_str().to_owned()).collect();
                // The planner accepts one aggregate only: `(COUNT(*) AS ?n)`, an Extend of a Group.
                let count = matches!(inner.as_ref(), GraphPattern::Extend { inner, .. }
                    if matches!(inner.as_ref(), GraphPattern::Group { .. }));
                return Some(match (count, &vars[..]) {
                    (true, [one]) => Shape::Count(one.clone()),
                    _ => Shape::Select(vars),
                });
            }
            _ => return None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_answer_keeps_the_query_form() {
        assert_eq!(
            empty_shape("SELECT ?x ?y WHERE { ?x <http://x/p> ?y } ORDER BY ?x LIMIT 3"),
            Some(Shape::Select(vec!["x".into(), "y".into()]))
        );
        assert_eq!(
            empty_shape("SELECT * WHERE { ?x <http://x/p> ?y }"),
            Some(Shape::Select(vec!["x".into(), "y".into()]))
        );
        assert_eq!(
            empty_shape("SELECT (COUNT(*) AS ?n) WHERE { ?x <http://x/p> ?y }"),
            Some(Shape::Count("n".into()))
        );
        assert_eq!(empty_shape("ASK { ?x <http://x/p> ?y }"), Some(Shape::Ask));
        // The short dialect is not standard SPARQL: its errors stay errors.
        assert_eq!(empty_shape("SELECT ?x WHERE { ?x IsA animl }"), None);
    }

    #[test]
    fn a_count_is_an_integer() {
        let body = String::from_utf8(count_body(Format::Tsv, "n", 42)).unwrap();
        assert_eq!(body, "?n\n42\n");
        let body = String::from_utf8(count_body(Format::Json, "n", 0)).unwrap();
        assert!(body.contains(
            r#"{"n":{"type":"literal","value":"0","datatype":"http://www.w3.org/2001/XMLSchema#integer"}}"#
        ));
    }
}
