//! `KnowledgeGraph`: the directed, edge-labelled multigraph every other crate reads.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::{Aliases, Csr, Dictionary, GraphError, LabelId, NodeId};

/// A directed multigraph with edge labels (relations) and optional node labels.
///
/// Nodes are dense ids `0..node_count()` named by `nodes()`; relations are dense ids named by
/// `relations()`. Distinct `(source, relation, target)` triples are stored once, in both an outgoing
/// and an incoming [`Csr`]. Edge `i` of the outgoing CSR has weight `weight(i)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeGraph {
    pub(crate) nodes: Dictionary,
    pub(crate) relations: Dictionary,
    /// Node label per node (empty when the graph has no node labels).
    pub(crate) node_labels: Vec<u32>,
    pub(crate) node_label_names: Dictionary,
    pub(crate) out: Csr,
    pub(crate) inc: Csr,
    /// Weight per outgoing edge; empty when every weight is 1.
    pub(crate) weights: Vec<f32>,
    /// Further names of nodes (WordNet's lemmas); a name may denote several nodes.
    pub(crate) aliases: Aliases,
    /// Whether some node is an RDF literal, found on first use.
    #[serde(skip)]
    pub(crate) literal_nodes: LiteralNodes,
}

/// A cache that is not part of a graph's value: equal whatever it holds.
#[derive(Clone, Debug, Default)]
pub(crate) struct LiteralNodes(OnceLock<bool>);

impl PartialEq for LiteralNodes {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The arrays a [`KnowledgeGraph`] is made of, for other layouts (devices, raw files, compressed
/// graphs). [`KnowledgeGraph::from_parts`] validates them.
#[derive(Clone, Debug, Default)]
pub struct GraphParts {
    pub nodes: Dictionary,
    pub relations: Dictionary,
    pub node_labels: Vec<u32>,
    pub node_label_names: Dictionary,
    pub out: Csr,
    pub inc: Csr,
    pub weights: Vec<f32>,
    pub aliases: Aliases,
}

/// Sizes of a graph, as `gpsense info` prints them.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphStats {
    pub nodes: usize,
    pub edges: usize,
    pub relations: usize,
    pub node_labels: usize,
    /// Topology bytes (both CSR directions and node labels) per edge and per node.
    pub topology_bytes_per_edge: f64,
    pub topology_bytes_per_node: f64,
    /// Bytes of names (node and relation dictionaries, with their hash indexes).
    pub name_bytes: usize,
}

impl KnowledgeGraph {
    /// Assembles a graph from its arrays, checking every invariant (see [`KnowledgeGraph::validate`]).
    pub fn from_parts(p: GraphParts) -> Result<Self, GraphError> {
        let g = KnowledgeGraph {
            nodes: p.nodes,
            relations: p.relations,
            node_labels: p.node_labels,
            node_label_names: p.node_label_names,
            out: p.out,
            inc: p.inc,
            weights: p.weights,
            aliases: p.aliases,
            literal_nodes: Default::default(),
        };
        g.validate()?;
        Ok(g)
    }

    /// The graph's arrays.
    pub fn into_parts(self) -> GraphParts {
        GraphParts {
            nodes: self.nodes,
            relations: self.relations,
            node_labels: self.node_labels,
            node_label_names: self.node_label_names,
            out: self.out,
            inc: self.inc,
            weights: self.weights,
            aliases: self.aliases,
        }
    }

    /// Whether some node is an RDF literal (`"5"^^<...#integer>`, `"chat"@fr`): then SPARQL's
    /// value comparisons differ from comparing nodes. Computed once, O(V) the first time.
    pub fn has_literal_nodes(&self) -> bool {
        *self.literal_nodes.0.get_or_init(|| {
            self.nodes.iter().any(|(_, name)| {
                name.starts_with('"')
                    && crate::rdf::term_kind(name) == crate::rdf::TermKind::Literal
            })
        })
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn edge_count(&self) -> usize {
        self.out.edge_count()
    }

    pub fn relation_count(&self) -> usize {
        self.relations.len()
    }

    /// Node names.
    pub fn nodes(&self) -> &Dictionary {
        &self.nodes
    }

    /// Relation (edge label) names.
    pub fn relations(&self) -> &Dictionary {
        &self.relations
    }

    pub fn node_name(&self, v: NodeId) -> &str {
        self.nodes.name(v)
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes.get(name)
    }

    /// Further names of nodes (see [`Aliases`]).
    pub fn aliases(&self) -> &Aliases {
        &self.aliases
    }

    /// Every node `name` denotes, ascending: the node of that name and the nodes it is an alias of.
    pub fn nodes_named(&self, name: &str) -> Vec<NodeId> {
        let mut nodes = self.aliases.nodes(name).to_vec();
        if let Some(v) = self.node_id(name) {
            if let Err(at) = nodes.binary_search(&v) {
                nodes.insert(at, v);
            }
        }
        nodes
    }

    pub fn relation_id(&self, name: &str) -> Option<LabelId> {
        self.relations.get(name).map(|id| id as LabelId)
    }

    pub fn relation_name(&self, r: LabelId) -> &str {
        self.relations.name(r as u32)
    }

    /// Whether nodes carry labels (the benchmark format, WordNet's part of speech).
    pub fn has_node_labels(&self) -> bool {
        !self.node_labels.is_empty()
    }

    /// The label of `v`, or 0 when the graph has no node labels.
    #[inline]
    pub fn node_label(&self, v: NodeId) -> u32 {
        self.node_labels.get(v as usize).copied().unwrap_or(0)
    }

    /// Node labels, one per node (empty when the graph has none).
    pub fn node_labels(&self) -> &[u32] {
        &self.node_labels
    }

    pub fn node_label_names(&self) -> &Dictionary {
        &self.node_label_names
    }

    /// Outgoing edges.
    pub fn out(&self) -> &Csr {
        &self.out
    }

    /// Incoming edges (`targets()` are the sources).
    pub fn inc(&self) -> &Csr {
        &self.inc
    }

    /// Weight of the `i`-th outgoing edge (1.0 unless the input gave weights).
    pub fn weight(&self, i: usize) -> f32 {
        self.weights.get(i).copied().unwrap_or(1.0)
    }

    /// Whether any edge has a weight other than 1.
    pub fn has_weights(&self) -> bool {
        !self.weights.is_empty()
    }

    /// Total degree (in + out) of `v`.
    pub fn degree(&self, v: NodeId) -> usize {
        self.out.degree(v) + self.inc.degree(v)
    }

    /// Iterates all edges as `(source, relation, target)` in outgoing-CSR order.
    pub fn edges(&self) -> impl Iterator<Item = (NodeId, LabelId, NodeId)> + '_ {
        (0..self.node_count() as NodeId).flat_map(move |v| {
            let (t, l) = self.out.neighbours(v);
            t.iter().zip(l).map(move |(&w, &r)| (v, r, w))
        })
    }

    /// Number of edges per relation, indexed by relation id.
    pub fn relation_frequencies(&self) -> Vec<u64> {
        let mut freq = vec![0u64; self.relation_count()];
        for &l in self.out.labels() {
            freq[l as usize] += 1;
        }
        freq
    }

    pub fn stats(&self) -> GraphStats {
        let topology = self.out.heap_bytes() + self.inc.heap_bytes() + self.node_labels.len() * 4;
        let edge_part = (self.out.targets.len() + self.inc.targets.len()) * 4
            + (self.out.labels.len() + self.inc.labels.len()) * 2;
        let node_part = topology - edge_part;
        GraphStats {
            nodes: self.node_count(),
            edges: self.edge_count(),
            relations: self.relation_count(),
            node_labels: self.node_label_names.len(),
            topology_bytes_per_edge: ratio(edge_part, self.edge_count()),
            topology_bytes_per_node: ratio(node_part, self.node_count()),
            name_bytes: self.nodes.heap_bytes()
                + self.relations.heap_bytes()
                + self.node_label_names.heap_bytes()
                + self.aliases.heap_bytes(),
        }
    }

    /// Checks every invariant the accessors rely on; run on anything loaded from outside.
    pub fn validate(&self) -> Result<(), GraphError> {
        let n = self.node_count();
        let r = self.relation_count();
        if r > LabelId::MAX as usize + 1 {
            return Err(GraphError::Inconsistent("too many relations".into()));
        }
        self.out.validate(n, r)?;
        self.inc.validate(n, r)?;
        if self.out.edge_count() != self.inc.edge_count() {
            return Err(GraphError::Inconsistent(
                "incoming and outgoing edge counts differ".into(),
            ));
        }
        if !self.node_labels.is_empty()
            && (self.node_labels.len() != n
                || self
                    .node_labels
                    .iter()
                    .any(|&l| l as usize >= self.node_label_names.len()))
        {
            return Err(GraphError::Inconsistent("node labels out of range".into()));
        }
        if !self.weights.is_empty() && self.weights.len() != self.edge_count() {
            return Err(GraphError::Inconsistent(
                "weights disagree with edges".into(),
            ));
        }
        self.aliases.validate(n)?;
        self.check_mirror()?;
        Ok(())
    }
}

impl KnowledgeGraph {
    /// The incoming CSR must be exactly the outgoing one transposed. A counting sort by target writes
    /// each outgoing edge into its target's incoming region (sequential in the sources, O(E)); each
    /// region, sorted by (relation, source), must then equal the stored list. Far faster on large
    /// graphs than a binary search per incoming entry.
    fn check_mirror(&self) -> Result<(), GraphError> {
        let bad = || GraphError::Inconsistent("incoming CSR does not mirror outgoing".into());
        let n = self.node_count();
        let inc = &self.inc;
        let mut next: Vec<u32> = inc.offsets[..n].to_vec();
        let mut keys = vec![0u64; inc.targets.len()];
        for s in 0..n as NodeId {
            let (targets, labels) = self.out.neighbours(s);
            for (&t, &l) in targets.iter().zip(labels) {
                let at = next[t as usize];
                if at >= inc.offsets[t as usize + 1] {
                    return Err(bad());
                }
                keys[at as usize] = (l as u64) << 32 | s as u64;
                next[t as usize] = at + 1;
            }
        }
        // Equal edge counts and no overflowing region: every region is exactly filled.
        for v in 0..n as NodeId {
            let r = inc.range(v);
            let region = &mut keys[r.clone()];
            region.sort_unstable();
            let same = region
                .iter()
                .zip(&inc.targets[r.clone()])
                .zip(&inc.labels[r])
                .all(|((&k, &s), &l)| k == (l as u64) << 32 | s as u64);
            if !same {
                return Err(bad());
            }
        }
        Ok(())
    }
}

fn ratio(bytes: usize, count: usize) -> f64 {
    if count == 0 {
        0.0
    } else {
        bytes as f64 / count as f64
    }
}
