//! `--explain` for a compressed graph (the rest is `gpsense::explain`).

use gpsense::fmt::{millis, thousands};
use gpsense::Matcher;
use gpsense_runtime::ExpansionStats;

pub use gpsense::explain::report;

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
