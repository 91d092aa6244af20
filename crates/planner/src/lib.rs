//! The query side of gpsense: this crate owns the query language, query graphs and matching order.
//!
//! - [`mod@parse`]: the basic graph pattern of SPARQL (`SELECT ?x WHERE { ?x IsA animal }`) into a
//!   [`Query`] AST, with positioned [`ParseError`]s.
//! - [`query`]: a [`Query`] resolved against a [`KnowledgeGraph`](gpsense_graph::KnowledgeGraph)
//!   (or any [`Vocabulary`]: the names resolution reads) into a [`QueryGraph`] (concept and
//!   variable nodes, fixed and variable edge labels), with "did you mean" suggestions for unknown
//!   names; and benchmark query files into the same form.
//! - [`sparql`]: standard SPARQL 1.1 (through `spargebra`) into the same query graph, with the
//!   query form, row filters, OFFSET and ORDER BY; [`prepare`] takes either dialect.
//! - [`mod@plan`]: the matching order of GpSense (paper sections 4 and 6), with per-graph
//!   [`PlannerStats`] computed once and reused across queries.
//!
//! It reads the graph model of `gpsense-graph` and knows nothing about executing a match.

pub mod parse;
pub mod plan;
pub mod query;
pub mod sparql;
mod suggest;
#[cfg(test)]
mod testutil;
mod vocabulary;

pub use parse::{parse, ParseError, Query};
pub use plan::{plan, plan_brief, plan_with, InvalidPlan, Plan, PlannerStats};
pub use query::{
    benchmark_query, compile, resolve, EdgeLabel, NodeKind, Projected, QueryEdge, QueryError,
    QueryGraph, QueryNode,
};
pub use sparql::{prepare, prepare_bgp, Dialect, Form, OrderKey, Prepared, RowFilter, Slot};
pub use suggest::nearest_names;
pub use suggest::{concept_names, relations_near};
pub use vocabulary::Vocabulary;

/// `1 edge`, `2 edges`: a count in the words of plans and query descriptions (`--explain`).
pub fn counted(n: impl Into<u128>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}
