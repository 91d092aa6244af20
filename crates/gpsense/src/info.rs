//! What `gpsense info` prints: what a graph holds and what it costs.

use gpsense_graph::KnowledgeGraph;

use crate::fmt::{bytes, thousands};

/// The summary of `g` (loaded from `origin`), with the `top_relations` most used relations.
///
/// ```
/// let loaded = gpsense::Loaded::embedded()?;
/// let text = gpsense::info::summary(&loaded.graph, &loaded.origin, 5);
/// assert!(text.contains("IsA"));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn summary(g: &KnowledgeGraph, origin: &str, top_relations: usize) -> String {
    let s = g.stats();
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<13} {v}\n"));
    line("graph", origin.to_owned());
    line("nodes", thousands(s.nodes as u64));
    line("edges", thousands(s.edges as u64));
    line("relations", thousands(s.relations as u64));
    let labels = if g.has_node_labels() {
        thousands(s.node_labels as u64)
    } else {
        "none".into()
    };
    line("node labels", labels);
    line(
        "weights",
        if g.has_weights() {
            "yes".into()
        } else {
            "all 1".into()
        },
    );
    line(
        "topology",
        format!(
            "{:.2} bytes/edge, {:.2} bytes/node (CSR out + in, labels)",
            s.topology_bytes_per_edge, s.topology_bytes_per_node
        ),
    );
    line("names", bytes(s.name_bytes));
    let aliases = g.aliases();
    if !aliases.is_empty() {
        let several = aliases.iter().filter(|(_, nodes)| nodes.len() > 1).count();
        line(
            "aliases",
            format!(
                "{} names of nodes ({} denote several, e.g. a word's senses)",
                thousands(aliases.names().len() as u64),
                thousands(several as u64)
            ),
        );
    }
    let mut freq: Vec<(u64, &str)> = g
        .relation_frequencies()
        .into_iter()
        .enumerate()
        .map(|(r, n)| (n, g.relation_name(r as u16)))
        .collect();
    freq.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let shown = freq.len().min(top_relations);
    out.push_str(&format!(
        "relations by edge count ({shown} of {}):\n",
        freq.len()
    ));
    for (n, name) in &freq[..shown] {
        out.push_str(&format!("  {name:<24} {:>12}\n", thousands(*n)));
    }
    out
}
