//! The quotient graph of a node map: hyper-node `X -r-> Z` exists iff some member of `X` has an
//! `r`-edge to some member of `Z`. Built in both directions with the graph crate's CSR invariants
//! (lists sorted by `(relation, neighbour)`, distinct triples), so the exact engine can run on it.

use gpsense_graph::{Csr, LabelId, NodeId};
use serde::{Deserialize, Serialize};

/// The mapping lists: the members of each hyper-node, as CSR (`offsets` has one entry per
/// hyper-node plus one; members ascending within each list).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Members {
    offsets: Vec<u32>,
    ids: Vec<NodeId>,
}

impl Members {
    /// Groups `0..map.len()` by `map[v]` (every value below `groups`). O(n + groups), counting sort.
    pub(crate) fn from_map(map: &[u32], groups: usize) -> Self {
        let mut offsets = vec![0u32; groups + 1];
        for &x in map {
            offsets[x as usize + 1] += 1;
        }
        for i in 0..groups {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut ids = vec![0; map.len()];
        for (v, &x) in map.iter().enumerate() {
            ids[next[x as usize] as usize] = v as NodeId;
            next[x as usize] += 1;
        }
        Members { offsets, ids }
    }

    /// Number of hyper-nodes.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The members of hyper-node `x`, ascending.
    #[inline]
    pub fn of(&self, x: u32) -> &[NodeId] {
        &self.ids[self.offsets[x as usize] as usize..self.offsets[x as usize + 1] as usize]
    }
}

/// Outgoing and incoming CSR of the quotient of `out` under `map` (old node -> new node).
/// O(E log d) for the outgoing lists, O(E + R) for the incoming mirror.
pub(crate) fn quotient(out: &Csr, map: &[u32], members: &Members, relations: usize) -> (Csr, Csr) {
    let n = members.len();
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u32);
    let mut targets = Vec::with_capacity(out.edge_count());
    let mut labels = Vec::with_capacity(out.edge_count());
    let mut scratch: Vec<(LabelId, NodeId)> = Vec::new();
    for x in 0..n as u32 {
        scratch.clear();
        for &v in members.of(x) {
            let (t, l) = out.neighbours(v);
            scratch.extend(l.iter().zip(t).map(|(&r, &w)| (r, map[w as usize])));
        }
        scratch.sort_unstable();
        scratch.dedup();
        labels.extend(scratch.iter().map(|e| e.0));
        targets.extend(scratch.iter().map(|e| e.1));
        offsets.push(targets.len() as u32);
    }
    let out = Csr::from_parts(offsets, targets, labels);
    let inc = mirror(&out, relations);
    (out, inc)
}

/// The incoming CSR of `out`: edges visited in `(relation, source)` order (a stable counting sort by
/// relation of the source-major edge list) land in each target's list already sorted. O(E + R).
pub(crate) fn mirror(out: &Csr, relations: usize) -> Csr {
    let n = out.node_count();
    let mut by_label = vec![0u32; relations + 1];
    for &l in out.labels() {
        by_label[l as usize + 1] += 1;
    }
    for i in 0..relations {
        by_label[i + 1] += by_label[i];
    }
    // (source, target) of every edge, grouped by relation, sources ascending within a relation.
    let mut ordered = vec![(0u32, 0u32); out.edge_count()];
    for s in 0..n as NodeId {
        let (t, l) = out.neighbours(s);
        for (&w, &r) in t.iter().zip(l) {
            let at = &mut by_label[r as usize];
            ordered[*at as usize] = (s, w);
            *at += 1;
        }
    }
    let mut offsets = vec![0u32; n + 1];
    for &w in out.targets() {
        offsets[w as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets.clone();
    let mut sources = vec![0; out.edge_count()];
    let mut labels = vec![0; out.edge_count()];
    let mut relation = 0usize;
    // `by_label[r]` now holds the end of relation r's group.
    for (i, &(s, w)) in ordered.iter().enumerate() {
        while i as u32 >= by_label[relation] {
            relation += 1;
        }
        let at = next[w as usize] as usize;
        sources[at] = s;
        labels[at] = relation as LabelId;
        next[w as usize] += 1;
    }
    Csr::from_parts(offsets, sources, labels)
}
