//! `CompressedGraph`: the levels of a compression, the weighted top-level graph the matcher runs on,
//! and the mapping lists back to the original graph.

use gpsense_graph::{Csr, Dictionary, GraphParts, KnowledgeGraph, NodeId};
use serde::{Deserialize, Serialize};

use crate::contract::{quotient, Members};
use crate::signature::mix64;
use crate::weights::{direction_weights, DirectionWeights};
use crate::CompressError;

/// One level of a compression: which node of the previous level went into which node of this one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelRecord {
    /// The similarity threshold used.
    pub delta: f64,
    /// `parent[v]`: the node of this level that node `v` of the previous level (level 0: the
    /// original graph) belongs to. Surjective onto `0..nodes`.
    pub parent: Vec<u32>,
    /// Nodes and edges of this level's graph.
    pub nodes: u64,
    pub edges: u64,
    /// Pairs merged because their signatures were identical, and because they were near-equal.
    pub exact_pairs: u64,
    pub near_pairs: u64,
    /// Wall-clock time of the level.
    pub seconds: f64,
}

/// One row of the paper's Table 4.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelRow {
    /// 0 for the original graph.
    pub level: usize,
    pub delta: Option<f64>,
    pub nodes: u64,
    pub edges: u64,
    /// `(nodes + edges)` over the original's.
    pub ratio: f64,
    /// Topology bytes (both CSRs and node labels), as the engine and a GPU hold them.
    pub bytes: u64,
    pub exact_pairs: u64,
    pub near_pairs: u64,
    pub seconds: f64,
}

/// Identifies the original graph a compression belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub nodes: usize,
    pub edges: usize,
    pub relations: usize,
    /// A 64-bit hash of the outgoing CSR and the node labels.
    pub hash: u64,
}

impl Fingerprint {
    /// O(V + E).
    pub fn of(g: &KnowledgeGraph) -> Self {
        let words = g.out().offsets().iter().chain(g.out().targets());
        let mut h = 0x6a09_e667_f3bc_c908u64;
        for &x in words.chain(g.node_labels()) {
            h = mix64(h.rotate_left(9) ^ x as u64);
        }
        for &l in g.out().labels() {
            h = mix64(h.rotate_left(9) ^ l as u64);
        }
        Fingerprint {
            nodes: g.node_count(),
            edges: g.edge_count(),
            relations: g.relation_count(),
            hash: h,
        }
    }
}

/// A compressed graph: Definition 4's weighted graph at the last level, plus mapping lists.
///
/// Answers stay exact (Theorems 1 and 2): every edge `a -r-> b` of the original graph has the image
/// `H(a) -r-> H(b)` in [`top`](Self::top), where `H` is [`hyper_node`](Self::hyper_node); so a match in
/// the original graph maps to a (not necessarily injective) match in the top graph, and a hyper-node
/// that matches nothing prunes all its members. Relation ids and node-label ids are the original's.
#[derive(Clone, Debug)]
pub struct CompressedGraph {
    levels: Vec<LevelRecord>,
    target_bytes: Option<u64>,
    top: KnowledgeGraph,
    member_of: Vec<u32>,
    members: Members,
    out_weights: DirectionWeights,
    in_weights: DirectionWeights,
    fingerprint: Fingerprint,
    original_size: (u64, u64),
    labelled: bool,
}

impl CompressedGraph {
    /// Builds the compressed graph of `original` from its levels, checking every level. `top` is the
    /// last level's topology when the caller has it (a fresh compression); otherwise it is rebuilt
    /// from the original and the composed map, which is also what guarantees that a loaded file
    /// cannot lose answers. O(E log d).
    pub fn assemble(
        original: &KnowledgeGraph,
        levels: Vec<LevelRecord>,
        target_bytes: Option<u64>,
        top: Option<(Csr, Csr)>,
    ) -> Result<Self, CompressError> {
        let member_of = compose(original, &levels)?;
        let n = levels
            .last()
            .map_or(original.node_count(), |l| l.nodes as usize);
        let members = Members::from_map(&member_of, n);
        let labels = hyper_labels(original, &member_of, &members)?;
        let relations = original.relation_count();
        let (out, inc) = match top {
            Some(t) => t,
            None => quotient(original.out(), &member_of, &members, relations),
        };
        if let Some(last) = levels.last() {
            if last.edges != out.edge_count() as u64 {
                return Err(CompressError::inconsistent(format!(
                    "the last level says {} edges, its graph has {}",
                    last.edges,
                    out.edge_count()
                )));
            }
        }
        let out_weights = direction_weights(original.out(), &member_of, &out)?;
        let in_weights = direction_weights(original.inc(), &member_of, &inc)?;
        let top = top_graph(original, &members, labels, out, inc)?;
        Ok(CompressedGraph {
            levels,
            target_bytes,
            top,
            member_of,
            members,
            out_weights,
            in_weights,
            fingerprint: Fingerprint::of(original),
            original_size: (original.node_count() as u64, original.edge_count() as u64),
            labelled: original.has_node_labels(),
        })
    }

    /// The weighted graph of the last level: hyper-nodes named after their first member, relation ids
    /// and node-label ids of the original. Edge and node weights: [`Self::out_weights`],
    /// [`Self::in_weights`].
    pub fn top(&self) -> &KnowledgeGraph {
        &self.top
    }

    /// The hyper-node holding original node `v`.
    #[inline]
    pub fn hyper_node(&self, v: NodeId) -> u32 {
        self.member_of[v as usize]
    }

    /// The hyper-node of every original node.
    pub fn hyper_nodes(&self) -> &[u32] {
        &self.member_of
    }

    /// The mapping list of hyper-node `x`: its original nodes, ascending.
    #[inline]
    pub fn members(&self, x: u32) -> &[NodeId] {
        self.members.of(x)
    }

    /// Weights of outgoing edges (`edge` indexes `top().out().targets()`).
    pub fn out_weights(&self) -> &DirectionWeights {
        &self.out_weights
    }

    /// Weights of incoming edges (`edge` indexes `top().inc().targets()`).
    pub fn in_weights(&self) -> &DirectionWeights {
        &self.in_weights
    }

    pub fn levels(&self) -> &[LevelRecord] {
        &self.levels
    }

    pub fn target_bytes(&self) -> Option<u64> {
        self.target_bytes
    }

    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// Checks that `g` is the graph this compression was built from. O(V + E).
    pub fn check_original(&self, g: &KnowledgeGraph) -> Result<(), CompressError> {
        let found = Fingerprint::of(g);
        if found == self.fingerprint {
            return Ok(());
        }
        Err(CompressError::WrongGraph(format!(
            "expected {} nodes, {} edges, fingerprint {:016x}; found {} nodes, {} edges, fingerprint {:016x}",
            self.fingerprint.nodes,
            self.fingerprint.edges,
            self.fingerprint.hash,
            found.nodes,
            found.edges,
            found.hash
        )))
    }

    /// Table 4: one row for the original graph, then one per level.
    pub fn table(&self) -> Vec<LevelRow> {
        let (n0, e0) = self.original_size;
        let row = |level, delta, nodes, edges, rec: Option<&LevelRecord>| LevelRow {
            level,
            delta,
            nodes,
            edges,
            ratio: ratio(nodes + edges, n0 + e0),
            bytes: topology_bytes(nodes, edges, self.labelled),
            exact_pairs: rec.map_or(0, |r| r.exact_pairs),
            near_pairs: rec.map_or(0, |r| r.near_pairs),
            seconds: rec.map_or(0.0, |r| r.seconds),
        };
        let mut rows = vec![row(0, None, n0, e0, None)];
        for (i, r) in self.levels.iter().enumerate() {
            rows.push(row(i + 1, Some(r.delta), r.nodes, r.edges, Some(r)));
        }
        rows
    }
}

/// Bytes of a topology of `nodes` and `edges`: offsets and `(target, relation)` entries in both
/// directions, plus a label per node when the graph has labels.
pub fn topology_bytes(nodes: u64, edges: u64, labelled: bool) -> u64 {
    let labels = if labelled { 4 * nodes } else { 0 };
    2 * 4 * (nodes + 1) + 2 * 6 * edges + labels
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// The map from original nodes to last-level nodes, checking each level's parent map: one entry per
/// node of the previous level, every value in range, every node of the level used.
fn compose(original: &KnowledgeGraph, levels: &[LevelRecord]) -> Result<Vec<u32>, CompressError> {
    let mut map: Vec<u32> = (0..original.node_count() as u32).collect();
    let mut prev = original.node_count();
    for (i, level) in levels.iter().enumerate() {
        crate::options::check_deltas(&[level.delta])?;
        let bad = |what: &str| CompressError::inconsistent(format!("level {}: {what}", i + 1));
        if level.parent.len() != prev {
            return Err(bad("parent map has the wrong length"));
        }
        let n = usize::try_from(level.nodes).map_err(|_| bad("too many nodes"))?;
        if n > prev {
            return Err(bad("more nodes than the level below"));
        }
        let mut used = vec![false; n];
        for &p in &level.parent {
            *used
                .get_mut(p as usize)
                .ok_or_else(|| bad("parent out of range"))? = true;
        }
        if used.contains(&false) {
            return Err(bad("a node has no members"));
        }
        for x in map.iter_mut() {
            *x = level.parent[*x as usize];
        }
        prev = n;
    }
    Ok(map)
}

/// The label of each hyper-node; all its members must share it (only equal labels merge).
fn hyper_labels(
    original: &KnowledgeGraph,
    member_of: &[u32],
    members: &Members,
) -> Result<Vec<u32>, CompressError> {
    if !original.has_node_labels() {
        return Ok(Vec::new());
    }
    let labels: Vec<u32> = (0..members.len() as u32)
        .map(|x| original.node_label(members.of(x)[0]))
        .collect();
    let mixed = (0..member_of.len())
        .any(|v| original.node_label(v as NodeId) != labels[member_of[v] as usize]);
    if mixed {
        return Err(CompressError::inconsistent(
            "a hyper-node mixes node labels",
        ));
    }
    Ok(labels)
}

/// The top level as a validated `KnowledgeGraph` with the original's relations and label names.
fn top_graph(
    original: &KnowledgeGraph,
    members: &Members,
    node_labels: Vec<u32>,
    out: Csr,
    inc: Csr,
) -> Result<KnowledgeGraph, CompressError> {
    let mut bytes = String::new();
    let mut ends = Vec::with_capacity(members.len());
    for x in 0..members.len() as u32 {
        // Each original node is in one hyper-node, so first members' names are distinct.
        bytes.push_str(original.node_name(members.of(x)[0]));
        ends.push(
            u32::try_from(bytes.len())
                .map_err(|_| CompressError::inconsistent("hyper-node names exceed 4 GiB"))?,
        );
    }
    let parts = GraphParts {
        nodes: Dictionary::from_parts(bytes, ends)?,
        relations: original.relations().clone(),
        node_labels,
        node_label_names: original.node_label_names().clone(),
        out,
        inc,
        weights: Vec::new(),
        aliases: Default::default(),
    };
    Ok(KnowledgeGraph::from_parts(parts)?)
}
