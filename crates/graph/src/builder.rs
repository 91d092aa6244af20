//! `GraphBuilder`: collects named triples and freezes them into a [`KnowledgeGraph`].

use crate::{Aliases, Csr, Dictionary, GraphError, KnowledgeGraph, LabelId, NodeId};

/// The node label of nodes left unlabelled in a graph that has node labels.
pub const UNLABELLED: &str = "-";

/// Accumulates nodes, relations and edges; `build` sorts, deduplicates and lays out both CSRs.
///
/// Memory while building: 12 bytes per edge (plus 4 with weights), then the frozen graph. Repeats
/// are merged as edges arrive (whenever the list has doubled since the last merge), so memory
/// follows the distinct triples, not the input lines.
#[derive(Default)]
pub struct GraphBuilder {
    nodes: Dictionary,
    relations: Dictionary,
    node_labels: Vec<u32>,
    node_label_names: Dictionary,
    edges: Vec<(NodeId, LabelId, NodeId)>,
    weights: Vec<f32>,
    weighted: bool,
    /// Edges added, repeats included.
    added: u64,
    /// Repeats merged so far.
    merged: u64,
    /// Merge repeats when the list reaches this length.
    merge_at: usize,
    alias_names: Dictionary,
    /// `(alias name id, node)`, repeats included.
    aliases: Vec<(u32, NodeId)>,
}

/// The edge list is first merged at this length (then at twice what a merge leaves).
const FIRST_MERGE: usize = 1 << 20;

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of node `name`, adding it if new.
    pub fn node(&mut self, name: &str) -> Result<NodeId, GraphError> {
        if name.is_empty() {
            return Err(GraphError::EmptyName { what: "node" });
        }
        self.nodes.intern(name)
    }

    /// The id of an existing node.
    pub fn existing_node(&self, name: &str) -> Option<NodeId> {
        self.nodes.get(name)
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Makes `name` a further name of `node` (see [`Aliases`]); a name may denote several nodes.
    pub fn alias(&mut self, name: &str, node: NodeId) -> Result<(), GraphError> {
        if name.is_empty() {
            return Err(GraphError::EmptyName { what: "alias" });
        }
        if self.aliases.len() >= u32::MAX as usize {
            return Err(GraphError::TooMany {
                what: "aliases",
                limit: u32::MAX as u64 - 1,
            });
        }
        let id = self.alias_names.intern(name)?;
        self.aliases.push((id, node));
        Ok(())
    }

    /// The id of relation `name`, adding it if new.
    pub fn relation(&mut self, name: &str) -> Result<LabelId, GraphError> {
        if name.is_empty() {
            return Err(GraphError::EmptyName { what: "relation" });
        }
        if let Some(id) = self.relations.get(name) {
            return Ok(id as LabelId);
        }
        if self.relations.len() > LabelId::MAX as usize {
            return Err(GraphError::TooMany {
                what: "relations",
                limit: LabelId::MAX as u64 + 1,
            });
        }
        Ok(self.relations.intern(name)? as LabelId)
    }

    /// Sets the label of `node`. In a graph with node labels, nodes never given one get label `-`.
    pub fn set_node_label(&mut self, node: NodeId, label: &str) -> Result<(), GraphError> {
        let label = self.node_label_names.intern(label)?;
        let i = node as usize;
        if i > self.node_labels.len() {
            let unlabelled = self.node_label_names.intern(UNLABELLED)?;
            self.node_labels.resize(i, unlabelled);
        }
        match self.node_labels.get_mut(i) {
            Some(slot) => *slot = label,
            None => self.node_labels.push(label),
        }
        Ok(())
    }

    /// Adds the edge `source -relation-> target` with a weight (1.0 when the input has none).
    pub fn add_edge(&mut self, source: NodeId, relation: LabelId, target: NodeId, weight: f32) {
        if self.edges.len() >= self.merge_at.max(FIRST_MERGE) {
            self.merge_repeats();
        }
        self.added += 1;
        self.edges.push((source, relation, target));
        if weight != 1.0 && !self.weighted {
            self.weighted = true;
            self.weights = vec![1.0; self.edges.len() - 1];
        }
        if self.weighted {
            self.weights.push(weight);
        }
    }

    /// Adds an edge by names, creating nodes and relation as needed.
    pub fn add_triple(
        &mut self,
        head: &str,
        relation: &str,
        tail: &str,
        weight: f32,
    ) -> Result<(), GraphError> {
        let s = self.node(head)?;
        let r = self.relation(relation)?;
        let t = self.node(tail)?;
        self.add_edge(s, r, t, weight);
        Ok(())
    }

    /// Edges added so far (duplicates included).
    pub fn edge_count(&self) -> usize {
        self.added as usize
    }

    /// Sorts the edges and keeps one of each triple (the largest weight).
    fn merge_repeats(&mut self) {
        let weights = self.weighted.then(|| std::mem::take(&mut self.weights));
        let (edges, weights, dropped) = sort_dedup(std::mem::take(&mut self.edges), weights);
        self.edges = edges;
        self.weights = weights.unwrap_or_default();
        self.merged += dropped;
        self.merge_at = 2 * self.edges.len();
    }

    /// Freezes the graph. Duplicate triples are stored once (keeping the largest weight); the number
    /// dropped is returned beside the graph.
    pub fn build(self) -> Result<(KnowledgeGraph, u64), GraphError> {
        let GraphBuilder {
            nodes,
            relations,
            mut node_labels,
            mut node_label_names,
            edges,
            weights,
            weighted,
            merged,
            alias_names,
            aliases,
            ..
        } = self;
        let n = nodes.len();
        if edges.len() >= u32::MAX as usize {
            return Err(GraphError::TooMany {
                what: "edges",
                limit: u32::MAX as u64 - 1,
            });
        }
        if !node_labels.is_empty() && node_labels.len() < n {
            let unlabelled = node_label_names.intern(UNLABELLED)?;
            node_labels.resize(n, unlabelled);
        }
        let (edges, weights, dropped) = sort_dedup(edges, weighted.then_some(weights));
        let duplicates = merged + dropped;
        let out = Csr::from_sorted(n, &edges);
        let inc = Csr::from_sorted(n, &reversed(&edges));
        let weights = weights.unwrap_or_default();
        let graph = KnowledgeGraph {
            nodes,
            relations,
            node_labels,
            node_label_names,
            out,
            inc,
            weights,
            aliases: Aliases::from_pairs(alias_names, aliases),
            literal_nodes: Default::default(),
        };
        Ok((graph, duplicates))
    }
}

type Edge = (NodeId, LabelId, NodeId);

fn sort_dedup(
    mut edges: Vec<Edge>,
    weights: Option<Vec<f32>>,
) -> (Vec<Edge>, Option<Vec<f32>>, u64) {
    let before = edges.len() as u64;
    match weights {
        None => {
            edges.sort_unstable();
            edges.dedup();
            let dropped = before - edges.len() as u64;
            (edges, None, dropped)
        }
        Some(weights) => {
            let mut pairs: Vec<(Edge, f32)> = edges.into_iter().zip(weights).collect();
            // Largest weight first within equal triples, so dedup keeps it.
            pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
            pairs.dedup_by(|a, b| a.0 == b.0);
            let dropped = before - pairs.len() as u64;
            let (edges, weights) = pairs.into_iter().unzip();
            (edges, Some(weights), dropped)
        }
    }
}

/// The edges reversed and sorted by `(target, label, source)`, for the incoming CSR.
fn reversed(edges: &[Edge]) -> Vec<Edge> {
    let mut rev: Vec<Edge> = edges.iter().map(|&(s, l, t)| (t, l, s)).collect();
    rev.sort_unstable();
    rev
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> KnowledgeGraph {
        let mut b = GraphBuilder::new();
        b.add_triple("cat", "IsA", "animal", 1.0).unwrap();
        b.add_triple("dog", "IsA", "animal", 2.0).unwrap();
        b.add_triple("dog", "IsA", "animal", 3.0).unwrap();
        b.add_triple("dog", "AtLocation", "home", 1.0).unwrap();
        b.add_triple("cat", "AtLocation", "home", 1.0).unwrap();
        b.add_triple("cat", "IsA", "cat", 1.0).unwrap();
        let (g, dups) = b.build().unwrap();
        assert_eq!(dups, 1);
        g
    }

    #[test]
    fn memory_follows_distinct_triples_not_repeats() {
        let mut b = GraphBuilder::new();
        let (cat, animal) = (b.node("cat").unwrap(), b.node("animal").unwrap());
        let isa = b.relation("IsA").unwrap();
        for i in 0..3 * FIRST_MERGE {
            b.add_edge(cat, isa, animal, if i == 7 { 2.0 } else { 1.0 });
        }
        assert!(
            b.edges.capacity() <= 2 * FIRST_MERGE,
            "{}",
            b.edges.capacity()
        );
        assert_eq!(b.edge_count(), 3 * FIRST_MERGE);
        let (g, dups) = b.build().unwrap();
        assert_eq!(g.edge_count(), 1);
        assert_eq!(dups, 3 * FIRST_MERGE as u64 - 1);
        assert_eq!(g.weight(0), 2.0, "the largest weight survives the merges");
    }

    #[test]
    fn csr_both_ways_sorted_by_label_then_neighbour() {
        let g = small();
        g.validate().unwrap();
        assert_eq!(
            (g.node_count(), g.edge_count(), g.relation_count()),
            (4, 5, 2)
        );
        let cat = g.node_id("cat").unwrap();
        let animal = g.node_id("animal").unwrap();
        let isa = g.relation_id("IsA").unwrap();
        // cat was named first (id 0), animal second (id 1): the list is sorted by neighbour id.
        assert_eq!(g.out().neighbours_by_label(cat, isa), &[cat, animal]);
        assert_eq!(g.inc().degree_by_label(animal, isa), 2);
        assert_eq!(g.inc().degree(animal), 2);
        assert_eq!(
            g.out()
                .degree_by_label(cat, g.relation_id("AtLocation").unwrap()),
            1
        );
        assert!(g.out().has_edge(cat, Some(isa), cat));
        assert!(!g.out().has_edge(animal, None, cat));
    }

    #[test]
    fn duplicates_keep_the_largest_weight() {
        let g = small();
        let dog = g.node_id("dog").unwrap();
        let animal = g.node_id("animal").unwrap();
        let isa = g.relation_id("IsA").unwrap();
        let i = g.out().label_range(dog, isa).start;
        assert_eq!(g.out().targets()[i], animal);
        assert_eq!(g.weight(i), 3.0);
    }

    #[test]
    fn topology_fits_the_memory_target() {
        let s = small().stats();
        assert!(s.topology_bytes_per_edge <= 14.0, "{s:?}");
        assert!(s.topology_bytes_per_node <= 24.0, "{s:?}");
    }

    #[test]
    fn rejects_empty_names() {
        let mut b = GraphBuilder::new();
        assert!(b.add_triple("", "IsA", "x", 1.0).is_err());
        assert!(b.add_triple("x", "", "y", 1.0).is_err());
    }
}
