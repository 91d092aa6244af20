//! Node signatures at one level: the entries `(direction, relation, neighbour)` of both adjacency
//! lists. Two nodes' common edges `e(label, v)` (Definition 4) are the entries both signatures hold.
//!
//! The paper prints the similarity test as `max(|adj(u)|/|common|, |adj(v)|/|common|) >= delta`, which
//! holds for every pair when `delta <= 1` (each ratio is at least 1). We use the evident intent,
//! `|common(u, v)| / max(|adj(u)|, |adj(v)|) >= delta`, over both edge directions.

use gpsense_graph::{Csr, LabelId, NodeId};

/// One level's topology, as the pairing reads it.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub out: &'a Csr,
    pub inc: &'a Csr,
    /// Node labels (empty when the graph has none). Only nodes with equal labels merge.
    pub labels: &'a [u32],
}

impl View<'_> {
    pub fn node_count(&self) -> usize {
        self.out.node_count()
    }

    pub fn edge_count(&self) -> usize {
        self.out.edge_count()
    }

    /// `|adj(v)|` over both directions.
    #[inline]
    pub fn degree(&self, v: NodeId) -> usize {
        self.out.degree(v) + self.inc.degree(v)
    }

    #[inline]
    pub fn label(&self, v: NodeId) -> u32 {
        self.labels.get(v as usize).copied().unwrap_or(0)
    }

    /// Whether `u` and `v` have equal labels and equal signatures. O(deg).
    pub fn identical(&self, u: NodeId, v: NodeId) -> bool {
        self.label(u) == self.label(v)
            && self.out.neighbours(u) == self.out.neighbours(v)
            && self.inc.neighbours(u) == self.inc.neighbours(v)
    }

    /// `|common(u, v)| / max(|adj(u)|, |adj(v)|)`, 0 for different labels, 1 for two empty
    /// signatures. O(deg u + deg v) by merging the sorted lists.
    pub fn similarity(&self, u: NodeId, v: NodeId) -> f64 {
        if self.label(u) != self.label(v) {
            return 0.0;
        }
        let most = self.degree(u).max(self.degree(v));
        if most == 0 {
            return 1.0;
        }
        let common = merge_count(self.out.neighbours(u), self.out.neighbours(v))
            + merge_count(self.inc.neighbours(u), self.inc.neighbours(v));
        common as f64 / most as f64
    }

    /// An order-dependent hash of the label and both (sorted) lists: equal signatures, equal hashes.
    pub fn signature_hash(&self, v: NodeId) -> u64 {
        let mut h = mix64(self.label(v) as u64 ^ 0x9e37_79b9_7f4a_7c15);
        for x in self.entries(v) {
            h = mix64(h.rotate_left(7) ^ x);
        }
        h
    }

    /// The signature of `v` as packed entries (see [`pack`]).
    pub fn entries(&self, v: NodeId) -> impl Iterator<Item = u64> + '_ {
        let (ot, ol) = self.out.neighbours(v);
        let (it, il) = self.inc.neighbours(v);
        let out = ot.iter().zip(ol).map(|(&w, &r)| pack(0, r, w));
        out.chain(it.iter().zip(il).map(|(&w, &r)| pack(1, r, w)))
    }
}

/// Whether a similarity reaches `delta`. The tolerance keeps ratios such as 7/10 against 0.7 from
/// failing by a rounding error.
#[inline]
pub(crate) fn reaches(similarity: f64, delta: f64) -> bool {
    similarity >= delta - 1e-9
}

/// The smallest `|adj|` of a node that can be similar to a node with a different signature:
/// `common <= max - 1` needs `max >= 1 / (1 - delta)`, and `min >= common >= delta * max`.
/// Below it, only identical signatures pair (found by hashing). `usize::MAX` for `delta = 1`.
pub(crate) fn min_near_degree(delta: f64) -> usize {
    if delta >= 1.0 - 1e-9 {
        return usize::MAX;
    }
    let d = (delta / (1.0 - delta) - 1e-9).ceil();
    (d as usize).max(1)
}

/// One signature entry as a 64-bit value: neighbour (32 bits), relation (16), direction (1).
#[inline]
pub(crate) fn pack(dir: u64, r: LabelId, w: NodeId) -> u64 {
    ((w as u64) << 17) | ((r as u64) << 1) | dir
}

/// Entries of two lists sorted by `(label, neighbour)` present in both.
fn merge_count((ta, la): (&[NodeId], &[LabelId]), (tb, lb): (&[NodeId], &[LabelId])) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < ta.len() && j < tb.len() {
        match (la[i], ta[i]).cmp(&(lb[j], tb[j])) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The SplitMix64 finaliser: a fast 64-bit mixer, good enough for bucketing and MinHash.
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_degree_bound_matches_small_cases() {
        // delta 0.7: a 4-list and a 3-subset (3/4 = 0.75) pair; nothing smaller can differ.
        assert_eq!(min_near_degree(0.7), 3);
        assert_eq!(min_near_degree(0.8), 4);
        assert_eq!(min_near_degree(0.5), 1);
        assert_eq!(min_near_degree(1.0), usize::MAX);
        assert!(reaches(7.0 / 10.0, 0.7));
        assert!(!reaches(2.0 / 3.0, 0.7));
    }
}
