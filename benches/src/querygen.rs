//! Common-sense query generation as in the GpSense paper's experiments: pick a node in a dense
//! region, grow the query by BFS (over both edge directions) to `k` nodes, keep the data edges among
//! them, and turn a random part of the nodes into fixed concepts (at least one). Seeded: runs repeat.

use std::collections::{HashSet, VecDeque};

use gpsense_graph::{KnowledgeGraph, NodeId};
use gpsense_planner::parse::quote_if_needed;

use crate::synth::Rng;

/// A generated query as SPARQL text.
pub fn common_sense_query(
    g: &KnowledgeGraph,
    k: usize,
    concept_fraction: f64,
    min_degree: usize,
    rng: &mut Rng,
) -> Option<String> {
    let n = g.node_count() as u64;
    for _ in 0..1000 {
        let start = rng.below(n) as NodeId;
        if g.degree(start) < min_degree {
            continue;
        }
        let nodes = bfs(g, start, k);
        if nodes.len() < k {
            continue;
        }
        return Some(to_sparql(g, &nodes, concept_fraction, rng));
    }
    None
}

fn bfs(g: &KnowledgeGraph, start: NodeId, k: usize) -> Vec<NodeId> {
    let mut seen = HashSet::from([start]);
    let mut order = vec![start];
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in g
            .out()
            .neighbours(v)
            .0
            .iter()
            .chain(g.inc().neighbours(v).0)
        {
            if order.len() == k {
                return order;
            }
            if seen.insert(w) {
                order.push(w);
                queue.push_back(w);
            }
        }
    }
    order
}

fn to_sparql(g: &KnowledgeGraph, nodes: &[NodeId], concept_fraction: f64, rng: &mut Rng) -> String {
    let concept_count =
        ((nodes.len() as f64 * concept_fraction).round() as usize).clamp(1, nodes.len() - 1);
    let mut is_concept = vec![false; nodes.len()];
    let mut placed = 0;
    while placed < concept_count {
        let i = rng.below(nodes.len() as u64) as usize;
        if !is_concept[i] {
            is_concept[i] = true;
            placed += 1;
        }
    }
    let term = |i: usize| {
        if is_concept[i] {
            quote_if_needed(g.node_name(nodes[i]))
        } else {
            format!("?v{i}")
        }
    };
    let mut triples = Vec::new();
    for (i, &v) in nodes.iter().enumerate() {
        let (targets, labels) = g.out().neighbours(v);
        for (&w, &r) in targets.iter().zip(labels) {
            if let Some(j) = nodes.iter().position(|&x| x == w) {
                triples.push(format!(
                    "{} {} {}",
                    term(i),
                    quote_if_needed(g.relation_name(r)),
                    term(j)
                ));
            }
        }
    }
    format!("SELECT * WHERE {{ {} }}", triples.join(" . "))
}
