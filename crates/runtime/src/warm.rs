//! The warm-up [`Engine::new`](crate::Engine::new) ends with: one small query cut from the graph
//! itself (a triangle where the first nodes have one, else a two-edge star), anchored at its first
//! node and counted on `dfs` under a tight limit. A process's first query otherwise pays for cold
//! code (page faults on the binary's text, empty instruction caches) and fresh allocator pages:
//! 0.1-0.3 ms more than its later runs on HPRD and yeast, 0.5-2 ms on ConceptNet-100K. The warm-up
//! pays that once, at load time (a one-shot query pays about the same in all: the warm-up's own
//! work is a few hundredths of a millisecond once warm).

use std::time::Duration;

use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_planner::{EdgeLabel, NodeKind, Projected, QueryEdge, QueryGraph, QueryNode};

use crate::{Engine, EngineKind, MatchOptions, Semantics};

/// Nodes looked at for a triangle before the star is taken: the look stays far below a
/// millisecond on any graph.
const LOOK: usize = 256;

/// Neighbours of one node looked at, at most.
const FAN: usize = 16;

impl Engine<'_> {
    /// Answers the warm-up query (nothing when the graph has no node with two out-edges). Its
    /// answer is dropped; its time is bounded by a 5 ms limit and 64 matches.
    pub(crate) fn warm_up(&self) {
        let Some(q) = warm_query(self.graph()) else {
            return;
        };
        let opts = MatchOptions {
            semantics: Semantics::Iso,
            engine: EngineKind::Dfs,
            single_thread: true,
            limit: Some(64),
            timeout: Some(Duration::from_millis(5)),
            ..MatchOptions::default()
        };
        let _ = self.count(&q, &opts);
    }
}

/// A triangle `a→b, a→c, b→c` of the graph's own relations and node labels, or the star `a→b,
/// a→c` of the first node with two distinct out-neighbours.
pub(crate) fn warm_query(g: &KnowledgeGraph) -> Option<QueryGraph> {
    let out = g.out();
    let mut star = None;
    for v in (0..g.node_count() as NodeId).take(LOOK) {
        let (targets, labels) = out.neighbours(v);
        let fan: Vec<(NodeId, LabelId)> = (targets.iter().copied())
            .zip(labels.iter().copied())
            .filter(|&(w, _)| w != v)
            .take(FAN)
            .collect();
        for (i, &(b, rb)) in fan.iter().enumerate() {
            for &(c, rc) in &fan[i + 1..] {
                if c == b {
                    continue;
                }
                let (bt, bl) = out.neighbours(b);
                if let Some(k) = bt.iter().position(|&t| t == c) {
                    return Some(shape(
                        g,
                        [v, b, c],
                        &[(0, 1, rb), (0, 2, rc), (1, 2, bl[k])],
                    ));
                }
                star.get_or_insert_with(|| shape(g, [v, b, c], &[(0, 1, rb), (0, 2, rc)]));
            }
        }
    }
    star
}

/// The query of variables labelled as `nodes` are, joined by `edges` (query node indices and
/// relation).
fn shape(g: &KnowledgeGraph, nodes: [NodeId; 3], edges: &[(usize, usize, LabelId)]) -> QueryGraph {
    let nodes: Vec<QueryNode> = (nodes.iter().enumerate())
        .map(|(i, &v)| QueryNode {
            name: format!("?w{i}"),
            // Anchored, so that its candidates are a few neighbour lists on any graph.
            kind: match i {
                0 => NodeKind::Concept(v),
                _ => NodeKind::Variable,
            },
            label: g.has_node_labels().then(|| g.node_label(v)),
        })
        .collect();
    QueryGraph {
        projection: (0..nodes.len()).map(Projected::Node).collect(),
        nodes,
        edges: (edges.iter())
            .map(|&(source, target, r)| QueryEdge {
                source,
                target,
                label: EdgeLabel::Fixed(r),
            })
            .collect(),
        edge_variables: Vec::new(),
        concept_sets: Vec::new(),
        distinct: false,
        limit: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpsense_graph::GraphBuilder;

    fn graph(edges: &[(&str, &str, &str)]) -> KnowledgeGraph {
        let mut b = GraphBuilder::new();
        for (s, r, t) in edges {
            let (s, r, t) = (
                b.node(s).unwrap(),
                b.relation(r).unwrap(),
                b.node(t).unwrap(),
            );
            b.add_edge(s, r, t, 1.0);
        }
        b.build().unwrap().0
    }

    #[test]
    fn the_warm_up_is_a_triangle_of_the_graph_where_it_has_one() {
        let g = graph(&[
            ("a", "r", "b"),
            ("a", "s", "c"),
            ("b", "t", "c"),
            ("c", "r", "d"),
        ]);
        let q = warm_query(&g).expect("a query");
        assert_eq!(q.edges.len(), 3);
        let engine = Engine::new(&g);
        let opts = MatchOptions {
            engine: EngineKind::Dfs,
            ..MatchOptions::default()
        };
        assert_eq!(engine.count(&q, &opts).expect("counted").rows, 1);
    }

    #[test]
    fn without_a_triangle_it_is_a_star_and_without_two_out_edges_nothing() {
        let star = graph(&[("a", "r", "b"), ("a", "r", "c"), ("c", "r", "d")]);
        assert_eq!(warm_query(&star).map(|q| q.edges.len()), Some(2));
        let path = graph(&[("a", "r", "b"), ("b", "r", "c")]);
        assert!(warm_query(&path).is_none());
    }
}
