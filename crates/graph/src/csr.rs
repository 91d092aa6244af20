//! `Csr`: one direction of the graph in compressed sparse row form.
//!
//! Each adjacency list is sorted by `(label, neighbour)`, so the neighbours of `v` by relation `r` are
//! a binary search plus a contiguous slice, and a per-label degree is two binary searches.

use serde::{Deserialize, Serialize};

use crate::{GraphError, LabelId, NodeId};

/// Compressed sparse rows: `offsets` has `|V| + 1` entries; the list of `v` is
/// `targets[offsets[v]..offsets[v + 1]]` with the matching `labels`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Csr {
    pub(crate) offsets: Vec<u32>,
    pub(crate) targets: Vec<NodeId>,
    pub(crate) labels: Vec<LabelId>,
}

impl Csr {
    /// Builds from `(source, label, target)` triples already sorted and deduplicated.
    pub(crate) fn from_sorted(node_count: usize, edges: &[(NodeId, LabelId, NodeId)]) -> Self {
        let mut offsets = vec![0u32; node_count + 1];
        for &(s, _, _) in edges {
            offsets[s as usize + 1] += 1;
        }
        for i in 0..node_count {
            offsets[i + 1] += offsets[i];
        }
        Csr {
            offsets,
            targets: edges.iter().map(|e| e.2).collect(),
            labels: edges.iter().map(|e| e.1).collect(),
        }
    }

    /// A CSR from its arrays; checked when the graph holding it is assembled or validated.
    pub fn from_parts(offsets: Vec<u32>, targets: Vec<NodeId>, labels: Vec<LabelId>) -> Self {
        Csr {
            offsets,
            targets,
            labels,
        }
    }

    pub fn node_count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// The offsets array (`|V| + 1` entries), as uploaded to a device.
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// All neighbours, list after list.
    pub fn targets(&self) -> &[NodeId] {
        &self.targets
    }

    /// The label of each entry of `targets()`.
    pub fn labels(&self) -> &[LabelId] {
        &self.labels
    }

    /// The range of `v`'s list in `targets()`.
    #[inline]
    pub fn range(&self, v: NodeId) -> std::ops::Range<usize> {
        self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize
    }

    #[inline]
    pub fn degree(&self, v: NodeId) -> usize {
        self.range(v).len()
    }

    /// Neighbours of `v` with their labels, sorted by `(label, neighbour)`.
    #[inline]
    pub fn neighbours(&self, v: NodeId) -> (&[NodeId], &[LabelId]) {
        let r = self.range(v);
        (&self.targets[r.clone()], &self.labels[r])
    }

    /// The range in `targets()` of `v`'s neighbours by `label`.
    #[inline]
    pub fn label_range(&self, v: NodeId, label: LabelId) -> std::ops::Range<usize> {
        let r = self.range(v);
        let labels = &self.labels[r.clone()];
        let lo = labels.partition_point(|&l| l < label);
        let hi = lo + labels[lo..].partition_point(|&l| l == label);
        r.start + lo..r.start + hi
    }

    /// Neighbours of `v` by `label`, sorted.
    #[inline]
    pub fn neighbours_by_label(&self, v: NodeId, label: LabelId) -> &[NodeId] {
        &self.targets[self.label_range(v, label)]
    }

    #[inline]
    pub fn degree_by_label(&self, v: NodeId, label: LabelId) -> usize {
        self.label_range(v, label).len()
    }

    /// Whether the edge `v -label-> w` exists (`label: None` = any label).
    pub fn has_edge(&self, v: NodeId, label: Option<LabelId>, w: NodeId) -> bool {
        match label {
            Some(l) => self.neighbours_by_label(v, l).binary_search(&w).is_ok(),
            None => self.neighbours(v).0.contains(&w),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.offsets.len() * 4 + self.targets.len() * 4 + self.labels.len() * 2
    }

    /// Checks what the accessors rely on, so that a loaded snapshot can never make them panic.
    pub(crate) fn validate(&self, node_count: usize, label_count: usize) -> Result<(), GraphError> {
        let bad = |what: &str| Err(GraphError::Inconsistent(format!("CSR {what}")));
        if self.offsets.len() != node_count + 1 || self.offsets.first() != Some(&0) {
            return bad("offsets have the wrong length");
        }
        if self.targets.len() != self.labels.len()
            || *self.offsets.last().unwrap_or(&0) as usize != self.targets.len()
        {
            return bad("arrays disagree in length");
        }
        if self.offsets.windows(2).any(|w| w[0] > w[1]) {
            return bad("offsets decrease");
        }
        if self.targets.iter().any(|&t| t as usize >= node_count) {
            return bad("has a neighbour out of range");
        }
        if self.labels.iter().any(|&l| l as usize >= label_count) {
            return bad("has a label out of range");
        }
        for v in 0..node_count as NodeId {
            let (t, l) = self.neighbours(v);
            let sorted = (1..t.len()).all(|i| (l[i - 1], t[i - 1]) < (l[i], t[i]));
            if !sorted {
                return bad("adjacency list not sorted by (label, neighbour)");
            }
        }
        Ok(())
    }
}
