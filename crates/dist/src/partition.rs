//! Partitioned snapshots: the data graph split by node across processes.
//!
//! Node `v` belongs to part `v % parts` and is local node `v / parts` there, so any process can
//! tell a node's owner without a table. A part holds, for its own nodes only, their names, their
//! aliases' entries, their node labels and their out- and in-lists (neighbours as global ids); every
//! part also holds the small replicated [`Vocab`]: relation and node-label names and the planner's
//! statistics of the whole graph.

use std::path::{Path, PathBuf};

use gpsense_graph::{Aliases, Dictionary, KnowledgeGraph, LabelId, NodeId};
use gpsense_kernels::view::Adjacency;
use serde::{Deserialize, Serialize};

use crate::DistError;

/// The snapshot `kind` of a partition file (1 is a graph, 2 a compressed graph).
pub const KIND_PARTITION: u32 = 3;

/// The part that owns data node `v` when the graph is split into `parts`.
#[inline]
pub fn owner(v: NodeId, parts: u32) -> u32 {
    v % parts
}

/// Node `v`'s index among its owner's nodes.
#[inline]
pub fn local(v: NodeId, parts: u32) -> u32 {
    v / parts
}

/// What every part holds of the whole graph: names of relations and node labels, and the
/// statistics planning reads. Small (relations and labels number in the thousands at most).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vocab {
    pub relations: Dictionary,
    /// Edges per relation (the popularity suggestions rank by).
    pub relation_edges: Vec<u64>,
    /// Distinct sources and targets per relation.
    pub relation_sources: Vec<u64>,
    pub relation_targets: Vec<u64>,
    pub node_label_names: Dictionary,
    /// Nodes per node label (one entry, all nodes, when the graph has no labels).
    pub label_frequency: Vec<u64>,
    /// Whether nodes carry labels (neighbour-label filters apply).
    pub node_labels: bool,
    /// Whether every edge has its reverse with the same relation (`DataShape::symmetric`).
    pub symmetric: bool,
    pub node_count: u32,
    pub edge_count: u64,
}

/// One direction of a part's adjacency: the list of local node `i` is
/// `targets[offsets[i]..offsets[i + 1]]`, sorted by `(label, target)`, targets global ids.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalCsr {
    pub offsets: Vec<u32>,
    pub targets: Vec<NodeId>,
    pub labels: Vec<LabelId>,
    /// The node label of each target (empty when the graph has no node labels): the neighbour-label
    /// filter reads it without asking the target's owner.
    pub target_labels: Vec<u32>,
}

/// One part of a partitioned graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    pub part: u32,
    pub parts: u32,
    /// The same for every part cut from one graph (a hash of its arrays), so parts of different
    /// graphs or cuts are never mixed.
    pub fingerprint: u64,
    pub vocab: Vocab,
    /// Names of the local nodes, in local order.
    pub names: Dictionary,
    /// Alias names with those of their nodes that are local (global ids, ascending).
    pub aliases: Aliases,
    /// Node label per local node (empty when the graph has none).
    pub node_labels: Vec<u32>,
    pub out: LocalCsr,
    pub inc: LocalCsr,
}
