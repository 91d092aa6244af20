//! Read-only views of the data graph's CSR arrays, as a kernel sees them.

use crate::NONE;

/// An edge direction, seen from a node.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Out,
    In,
}

impl Dir {
    pub fn reverse(self) -> Dir {
        match self {
            Dir::Out => Dir::In,
            Dir::In => Dir::Out,
        }
    }
}

/// One CSR direction: the list of `v` is `targets[offsets[v]..offsets[v + 1]]`, sorted by
/// `(label, target)`.
#[derive(Clone, Copy, Debug)]
pub struct Adjacency<'a> {
    pub offsets: &'a [u32],
    pub targets: &'a [u32],
    pub labels: &'a [u16],
    /// The one relation every edge has (`NONE`: several, or not known): a lookup by label then
    /// reads no label, which on the CPU is a cache line less per node for unlabelled graphs.
    pub only_label: u32,
}

impl<'a> Adjacency<'a> {
    /// The arrays of one CSR direction, its relations not known to be one.
    pub fn new(offsets: &'a [u32], targets: &'a [u32], labels: &'a [u16]) -> Self {
        Adjacency {
            offsets,
            targets,
            labels,
            only_label: NONE,
        }
    }

    #[inline]
    pub fn range(&self, v: u32) -> (usize, usize) {
        (
            self.offsets[v as usize] as usize,
            self.offsets[v as usize + 1] as usize,
        )
    }

    #[inline]
    pub fn degree(&self, v: u32) -> usize {
        let (s, e) = self.range(v);
        e - s
    }

    /// `v`'s whole list: targets and their labels.
    #[inline]
    pub fn list(&self, v: u32) -> (&'a [u32], &'a [u16]) {
        let (s, e) = self.range(v);
        (&self.targets[s..e], &self.labels[s..e])
    }

    /// `v`'s neighbours by `label` (`NONE`: all of them), with their labels; sorted by target when
    /// the label is fixed.
    #[inline]
    pub fn by_label(&self, v: u32, label: u32) -> (&'a [u32], &'a [u16]) {
        let (targets, labels) = self.list(v);
        if label == NONE || label == self.only_label {
            return (targets, labels);
        }
        if self.only_label != NONE {
            return (&[], &[]);
        }
        // One relation in the whole list (unlabelled graphs, many hubs): no search for its range.
        if let (Some(&first), Some(&last)) = (labels.first(), labels.last()) {
            if first == last {
                return if first as u32 == label {
                    (targets, labels)
                } else {
                    (&[], &[])
                };
            }
        }
        let lo = labels.partition_point(|&l| (l as u32) < label);
        let hi = lo + labels[lo..].partition_point(|&l| l as u32 == label);
        (&targets[lo..hi], &labels[lo..hi])
    }

    /// Whether `v -label-> w` is in this direction (`label` `NONE`: with any label).
    #[inline]
    pub fn has(&self, v: u32, label: u32, w: u32) -> bool {
        if label == NONE {
            return self.list(v).0.contains(&w);
        }
        self.by_label(v, label).0.binary_search(&w).is_ok()
    }
}

/// The data graph as kernels see it.
#[derive(Clone, Copy, Debug)]
pub struct GraphView<'a> {
    pub out: Adjacency<'a>,
    pub inc: Adjacency<'a>,
    /// Node label per node; empty when the graph has none.
    pub node_labels: &'a [u32],
}

impl<'a> GraphView<'a> {
    #[inline]
    pub fn node_count(&self) -> usize {
        self.out.offsets.len().saturating_sub(1)
    }

    #[inline]
    pub fn adj(&self, dir: Dir) -> &Adjacency<'a> {
        match dir {
            Dir::Out => &self.out,
            Dir::In => &self.inc,
        }
    }

    #[inline]
    pub fn node_label(&self, v: u32) -> u32 {
        match self.node_labels.get(v as usize) {
            Some(&l) => l,
            None => 0,
        }
    }

    /// Whether the edge `from -label-> to` exists, looked up in the shorter of the two lists.
    #[inline]
    pub fn has_edge(&self, from: u32, label: u32, to: u32) -> bool {
        if self.out.degree(from) <= self.inc.degree(to) {
            self.out.has(from, label, to)
        } else {
            self.inc.has(to, label, from)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_by_the_only_relation_reads_no_label_and_agrees_with_the_search() {
        // Node 0 -> {1, 2}, node 1 -> {2}, every edge of relation 3.
        let (offsets, targets) = ([0u32, 2, 3], [1u32, 2, 2]);
        let searched = Adjacency {
            offsets: &offsets,
            targets: &targets,
            labels: &[3, 3, 3],
            only_label: NONE,
        };
        // Labels that contradict `only_label`: an answer read from them would differ.
        let known = Adjacency {
            labels: &[9, 9, 9],
            only_label: 3,
            ..searched
        };
        for v in 0..2 {
            assert_eq!(known.by_label(v, 3).0, searched.by_label(v, 3).0);
            assert_eq!(known.by_label(v, NONE).0, searched.by_label(v, NONE).0);
            assert!(known.by_label(v, 9).0.is_empty());
            assert_eq!(known.has(v, 3, 2), searched.has(v, 3, 2));
        }
    }
}
