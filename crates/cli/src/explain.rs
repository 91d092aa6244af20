//! `--explain` for the command line: the facade's report with where the semantics came from, and
//! what expansion did on a compressed graph.

use gpsense::fmt::{millis, thousands};
use gpsense::Matcher;
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::QueryGraph;
use gpsense_runtime::{ExpansionStats, MatchReport};

/// `gpsense::explain::report`, its `semantics:` line followed by `source` (where they came from:
/// `--semantics`, the default, the query's own), so the semantics are said once, with the reason.
pub fn report(q: &QueryGraph, g: &KnowledgeGraph, r: &MatchReport, source: &str) -> String {
    let text = gpsense::explain::report(q, g, r);
    let mut out = String::with_capacity(text.len() + source.len() + 4);
    for line in text.lines() {
        out.push_str(line);
        if line.starts_with("semantics: ") {
            out.push_str(&format!("; {source}"));
        }
        out.push('\n');
    }
    out
}
/// For a compressed graph: its size against the original's, and what expansion did.
pub fn expansion(m: &Matcher, expansion: &ExpansionStats) -> String {
    let Some(c) = m.compressed() else {
        return String::new();
    };
    let top = c.compressed().top();
    format!(
        "compressed graph: {} levels, {} hyper-nodes and {} edges for {} nodes and {} edges\n\
         expansion: {} compressed matches, {} pruned by the weight test (Definition 5), {}\n",
        c.compressed().levels().len(),
        thousands(top.node_count() as u64),
        thousands(top.edge_count() as u64),
        thousands(c.original().node_count() as u64),
        thousands(c.original().edge_count() as u64),
        thousands(expansion.compressed_matches),
        thousands(expansion.pruned_by_weight),
        millis(expansion.expand_time)
    )
}
