//! Data-graph statistics the planner reads: computed once per loaded graph, shared by every query.

use gpsense_graph::{Csr, KnowledgeGraph, LabelId, NodeId};

/// Node-label and relation frequencies of one data graph.
///
/// Build it once per loaded graph with [`PlannerStats::new`] (O(V + E), a single pass over each CSR)
/// and pass it to [`plan_with`](super::plan_with) for every query, so that planning itself touches
/// only the query and a few per-node degree lookups.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannerStats {
    nodes: u64,
    edges: u64,
    /// Nodes per node label; a graph without labels has every node under label 0, as
    /// `KnowledgeGraph::node_label` reports.
    label_frequency: Vec<u64>,
    /// Edges per relation.
    relation_edges: Vec<u64>,
    /// Distinct sources per relation (nodes with at least one outgoing edge of it).
    relation_sources: Vec<u64>,
    /// Distinct targets per relation.
    relation_targets: Vec<u64>,
    /// Per relation, the most edges of it one node has: outgoing, incoming.
    relation_longest: Vec<[u64; 2]>,
    /// The most edges one node has: outgoing, incoming.
    longest: [u64; 2],
}

impl PlannerStats {
    /// O(V + E).
    pub fn new(g: &KnowledgeGraph) -> Self {
        let n = g.node_count() as u64;
        let label_frequency = if g.has_node_labels() {
            let mut freq = vec![0u64; g.node_label_names().len()];
            for &l in g.node_labels() {
                if let Some(f) = freq.get_mut(l as usize) {
                    *f += 1;
                }
            }
            freq
        } else {
            vec![n]
        };
        let (relation_sources, longest_out) = relation_runs(g.out(), g.relation_count());
        let (relation_targets, longest_in) = relation_runs(g.inc(), g.relation_count());
        let most = |csr: &Csr| {
            (0..csr.node_count() as NodeId)
                .map(|v| csr.degree(v) as u64)
                .max()
                .unwrap_or(0)
        };
        PlannerStats {
            nodes: n,
            edges: g.edge_count() as u64,
            label_frequency,
            relation_edges: g.relation_frequencies(),
            relation_sources,
            relation_targets,
            relation_longest: longest_out
                .into_iter()
                .zip(longest_in)
                .map(<[u64; 2]>::from)
                .collect(),
            longest: [most(g.out()), most(g.inc())],
        }
    }

    /// Data nodes. All accessors are O(1).
    pub fn node_count(&self) -> u64 {
        self.nodes
    }

    /// Data edges (distinct triples, as `KnowledgeGraph::edge_count`).
    pub fn edge_count(&self) -> u64 {
        self.edges
    }

    /// Data nodes with node label `label` (0 for a label the graph does not have).
    pub fn label_frequency(&self, label: u32) -> u64 {
        self.label_frequency
            .get(label as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Data edges with relation `r`.
    pub fn relation_frequency(&self, r: LabelId) -> u64 {
        self.relation_edges.get(r as usize).copied().unwrap_or(0)
    }

    /// Data nodes with an outgoing (`outgoing`) or incoming edge of relation `r`: an upper bound on
    /// the candidates of a query node with such an edge.
    pub fn relation_endpoints(&self, r: LabelId, outgoing: bool) -> u64 {
        let table = if outgoing {
            &self.relation_sources
        } else {
            &self.relation_targets
        };
        table.get(r as usize).copied().unwrap_or(0)
    }

    /// The most `r`-neighbours (outgoing or incoming) one node has: the longest list a step over
    /// `r` can scan.
    pub fn longest_list(&self, r: LabelId, outgoing: bool) -> u64 {
        self.relation_longest
            .get(r as usize)
            .map_or(0, |l| l[usize::from(!outgoing)])
    }

    /// The most edges, of any relation, one node has (outgoing or incoming).
    pub fn longest_any(&self, outgoing: bool) -> u64 {
        self.longest[usize::from(!outgoing)]
    }

    /// Average number of `r`-neighbours (outgoing or incoming) of a node that has at least one.
    pub fn fanout(&self, r: LabelId, outgoing: bool) -> f64 {
        self.relation_frequency(r) as f64 / self.relation_endpoints(r, outgoing).max(1) as f64
    }

    /// Average degree in one direction, for edges of any relation.
    pub fn average_degree(&self) -> f64 {
        self.edges as f64 / self.nodes.max(1) as f64
    }
}

/// For each relation, the number of nodes whose list in `csr` has at least one edge of it, and
/// the longest run of it in one list. Lists are sorted by label, so each distinct label of a list
/// starts a new run. O(V + E).
fn relation_runs(csr: &Csr, relations: usize) -> (Vec<u64>, Vec<u64>) {
    let mut count = vec![0u64; relations];
    let mut longest = vec![0u64; relations];
    for v in 0..csr.node_count() as NodeId {
        let (_, labels) = csr.neighbours(v);
        for run in labels.chunk_by(|a, b| a == b) {
            let l = run[0] as usize;
            if let (Some(c), Some(m)) = (count.get_mut(l), longest.get_mut(l)) {
                *c += 1;
                *m = (*m).max(run.len() as u64);
            }
        }
    }
    (count, longest)
}
