//! One reading of a query text for every front end. A text that parses as standard SPARQL is
//! standard SPARQL; the short dialect is what does not. A standard query the matcher answers
//! whole (a basic graph pattern under FILTERs, DISTINCT, LIMIT, OFFSET, ORDER BY, COUNT, ASK) runs
//! on the graph's own path, streamed from the engine; any other goes to `gpsense-sparql` (spareval's
//! algebra, the matcher for every basic graph pattern inside). On a graph holding RDF literals a
//! FILTER or ORDER BY compares values (`1 = 1.0`), not nodes: those queries go to `gpsense-sparql`.

use gpsense_planner::{Dialect, Prepared, QueryError, prepare};
use gpsense_sparql::Sparql;
use spargebra::Query;
use spargebra::algebra::GraphPattern;

use crate::{Error, Matcher};

/// How a text is answered.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let text = "PREFIX r: <http://conceptnet.io/r/> SELECT ?x WHERE { ?x r:IsA ?y OPTIONAL { ?y r:IsA ?z } } LIMIT 1";
/// assert!(matches!(gpsense::read(&m, text, None)?, gpsense::Reading::Algebra(_)));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub enum Reading {
    /// By the matcher and the solution stage around it.
    Graph(Box<Prepared>),
    /// By the full SPARQL evaluator.
    Algebra(Box<Query>),
}

/// Reads `text`. `base` resolves relative IRIs (then the query is standard SPARQL or an error).
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let reading = gpsense::read(&m, "SELECT ?x WHERE { ?x IsA animal }", None)?;
/// assert!(matches!(reading, gpsense::Reading::Graph(_)));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn read(m: &Matcher, text: &str, base: Option<&str>) -> Result<Reading, Error> {
    let parsed = match base {
        Some(_) => Some(Sparql::<Matcher>::parse(text, base).map_err(Error::Sparql)?),
        None => Sparql::<Matcher>::try_parse(text),
    };
    let Some(query) = parsed else {
        // Not standard SPARQL: the short dialect (its errors, or standard's for a text that
        // looks standard, as `prepare` decides).
        return prepare(text, m.graph(), Dialect::Short)
            .map(|p| Reading::Graph(Box::new(p)))
            .map_err(|e| Error::query(e, text));
    };
    if base.is_none() && matches!(query, Query::Select { .. } | Query::Ask { .. }) {
        match prepare(text, m.graph(), Dialect::Sparql) {
            // A predicate variable a FILTER restricts to a few relations: the native evaluator
            // reads those relations' edges, the matcher would enumerate every edge.
            Ok(p)
                if p.dialect == Dialect::Sparql
                    && values_agree(m, &query)
                    && !gpsense_sparql::restricts_predicate(&query) =>
            {
                return Ok(Reading::Graph(Box::new(p)));
            }
            Ok(_) | Err(QueryError::Parse(_)) => {}
            // An unknown name: the standard's answer is empty, with the suggestion as a note.
            Err(_) => {}
        }
    }
    Ok(Reading::Algebra(Box::new(query)))
}

/// Whether comparing nodes gives the standard's answer: no RDF literal in the graph, or no FILTER
/// and no ORDER BY in the query.
fn values_agree(m: &Matcher, query: &Query) -> bool {
    if !m.graph().has_literal_nodes() {
        return true;
    }
    let pattern = match query {
        Query::Select { pattern, .. } | Query::Ask { pattern, .. } => pattern,
        _ => return false,
    };
    !compares(pattern)
}

fn compares(p: &GraphPattern) -> bool {
    use GraphPattern as G;
    match p {
        G::Filter { .. } | G::OrderBy { .. } => true,
        G::Project { inner, .. }
        | G::Distinct { inner }
        | G::Reduced { inner }
        | G::Slice { inner, .. }
        | G::Extend { inner, .. }
        | G::Group { inner, .. } => compares(inner),
        G::Join { left, right } => compares(left) || compares(right),
        _ => false,
    }
}
