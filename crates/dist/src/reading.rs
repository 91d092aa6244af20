//! A query text read as every front end reads it (standard SPARQL when it parses as such, else the
//! short dialect), and refused from the text alone when the distributed join cannot answer it: what
//! one process hands to the full SPARQL evaluator (OPTIONAL, UNION, paths, aggregates, subqueries,
//! BIND, VALUES, CONSTRUCT, DESCRIBE), and FILTER and ORDER BY. Refused before any part is loaded
//! or any peer connected, naming the construct and where it is.

use gpsense_graph::{LabelId, NodeId};
use gpsense_planner::sparql::{nesting_depth, MAX_NESTING};
use gpsense_planner::{prepare, Dialect, ParseError, QueryError, Vocabulary};
use spargebra::SparqlParser;

use crate::job::Request;
use crate::DistError;

/// What to do instead, said by every refusal.
const ONE_PROCESS: &str = "the distributed join answers basic graph patterns (with DISTINCT, \
    LIMIT, OFFSET, ASK and COUNT(*)); this query runs in one process: `gpsense query` without \
    --workers/--processes";

impl Request {
    /// The request for `text`, or why the distributed join cannot answer it.
    pub fn text(text: &str) -> Result<Request, DistError> {
        let standard =
            nesting_depth(text) <= MAX_NESTING && SparqlParser::new().parse_query(text).is_ok();
        let prefer = if standard {
            Dialect::Sparql
        } else {
            Dialect::Short
        };
        // Names do not change the shape of a query: every name is known here, so that what fails
        // is the construct (or, for a text in neither dialect, its syntax).
        match prepare(text, &EveryName, prefer) {
            Ok(p) if !p.filters.is_empty() => Err(refusal(text, "FILTER", "filter")),
            Ok(p) if !p.order.is_empty() => Err(refusal(text, "ORDER BY", "order")),
            Ok(_) => Ok(Request::Text {
                text: text.to_owned(),
                prefer,
            }),
            Err(QueryError::Parse(e)) if standard => Err(refused(e)),
            Err(QueryError::Parse(e)) => Err(DistError::Query(QueryError::Parse(e))),
            // A name's error cannot come from `EveryName`: the workers resolve the names.
            Err(_) => Ok(Request::Text {
                text: text.to_owned(),
                prefer,
            }),
        }
    }
}

/// The compile's refusal (`OPTIONAL is not supported: ...`) in words that fit a cluster.
fn refused(e: ParseError) -> DistError {
    let what = e
        .message
        .split_once(" is not supported")
        .map_or(e.message.as_str(), |(what, _)| what);
    DistError::Query(QueryError::Parse(ParseError {
        message: format!("{what} cannot run across processes: {ONE_PROCESS}"),
        ..e
    }))
}

/// A refusal of `what`, placed at the first `keyword` of the text.
fn refusal(text: &str, what: &str, keyword: &str) -> DistError {
    let at = text.to_ascii_lowercase().find(keyword).unwrap_or(0);
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    refused(ParseError {
        line,
        column,
        message: format!("{what} is not supported"),
    })
}

/// A vocabulary that knows every name (as node 0 and relation 0).
pub(crate) struct EveryName;

impl Vocabulary for EveryName {
    fn nodes_named(&self, _: &str) -> Vec<NodeId> {
        vec![0]
    }

    fn relation_id(&self, _: &str) -> Option<LabelId> {
        Some(0)
    }

    fn concept_suggestions(&self, _: &str, _: usize) -> Vec<String> {
        Vec::new()
    }

    fn relation_suggestions(&self, _: &str, _: usize) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> ";

    fn refusal_of(text: &str) -> String {
        match Request::text(text) {
            Err(DistError::Query(e)) => e.render(text),
            Err(other) => panic!("{text}: not a query error: {other}"),
            Ok(_) => panic!("{text}: accepted"),
        }
    }

    #[test]
    fn what_one_process_evaluates_in_full_is_refused_naming_it() {
        for (query, construct) in [
            (
                "SELECT ?x ?y WHERE { ?x r:IsA c:animal OPTIONAL { ?x r:HasA ?y } }",
                "OPTIONAL",
            ),
            (
                "SELECT ?x WHERE { { ?x r:IsA c:dog } UNION { ?x r:IsA c:cat } }",
                "UNION",
            ),
            ("SELECT ?y WHERE { c:puppy r:IsA+ ?y }", "a property path"),
            (
                "SELECT ?y (COUNT(?x) AS ?n) WHERE { ?x r:IsA ?y } GROUP BY ?y",
                "GROUP BY",
            ),
            (
                "SELECT (COUNT(?x) AS ?n) WHERE { ?x r:IsA c:animal }",
                "an aggregate",
            ),
            (
                "SELECT ?x WHERE { ?x r:IsA c:animal BIND(1 AS ?one) }",
                "BIND",
            ),
            (
                "SELECT ?x WHERE { VALUES ?x { c:dog } ?x r:IsA c:animal }",
                "VALUES",
            ),
            (
                "CONSTRUCT { ?x r:IsA c:pet } WHERE { ?x r:IsA c:animal }",
                "CONSTRUCT",
            ),
            ("DESCRIBE c:dog", "DESCRIBE"),
            (
                "SELECT * WHERE { ?x r:IsA ?y . ?y r:IsA ?z FILTER(?x != ?z) }",
                "FILTER",
            ),
            (
                "SELECT ?x WHERE { ?x r:IsA c:animal } ORDER BY ?x",
                "ORDER BY",
            ),
            (
                "SELECT ?x WHERE { { SELECT ?x WHERE { ?x r:IsA c:animal } LIMIT 2 } }",
                "subquery",
            ),
        ] {
            let text = format!("{P}{query}");
            let message = refusal_of(&text);
            assert!(
                message.contains(construct)
                    && message.contains("cannot run across processes")
                    && message.contains("without --workers/--processes"),
                "{query}: {message}"
            );
        }
    }

    #[test]
    fn basic_graph_patterns_are_read_as_one_process_reads_them() {
        let prefer = |text: &str| match Request::text(text) {
            Ok(Request::Text { prefer, .. }) => prefer,
            Ok(Request::Graph(_)) => panic!("{text}: a graph request"),
            Err(e) => panic!("{text}: {e}"),
        };
        // Variables only: standard SPARQL (hom), as the CLI, the endpoint and Python read it.
        assert_eq!(
            prefer("SELECT * WHERE { ?a ?r ?b . ?b ?s ?c }"),
            Dialect::Sparql
        );
        assert_eq!(
            prefer("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"),
            Dialect::Short
        );
        let pairwise =
            format!("{P}SELECT * WHERE {{ ?x r:IsA ?y . ?y r:IsA ?x FILTER(?x != ?y) }}");
        assert_eq!(prefer(&pairwise), Dialect::Sparql);
        assert_eq!(
            prefer(&format!(
                "{P}SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"
            )),
            Dialect::Sparql
        );
    }

    #[test]
    fn a_text_in_neither_dialect_is_its_syntax_error() {
        let text = "SELECT ?x WHERE { ?x IsA }";
        let message = refusal_of(text);
        assert!(!message.contains("across processes"), "{message}");
    }
}
