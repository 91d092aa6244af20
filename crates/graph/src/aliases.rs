//! `Aliases`: further names of nodes, where one name may denote several nodes.
//!
//! WordNet is the case in point: a node is a synset (`dog/02084071-n`, named by its first lemma and
//! its id), and every lemma of every synset is a name of it, so `dog` denotes the seven noun senses
//! and the verb. The names live in one [`Dictionary`]; the nodes of name `i` are
//! `nodes[offsets[i]..offsets[i + 1]]`, ascending and distinct.

use serde::{Deserialize, Serialize};

use crate::{Dictionary, GraphError, NodeId};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Aliases {
    names: Dictionary,
    /// `names.len() + 1` entries when there is a name, else none.
    offsets: Vec<u32>,
    nodes: Vec<NodeId>,
}

impl Aliases {
    /// The aliases from `(name, node)` pairs (repeats allowed): groups them by name id, each name's
    /// nodes ascending and distinct. Public so that a subset of a graph's aliases (one part of a
    /// partitioned graph: only the nodes a process owns) is built the same way the builder builds
    /// the whole. Every id of `names` must occur in `pairs` (a name without nodes fails
    /// [`Aliases::validate`]), and every pair's name id must be below `names.len()` (else this
    /// panics: the ids come from interning into `names`).
    pub fn from_pairs(names: Dictionary, mut pairs: Vec<(u32, NodeId)>) -> Self {
        pairs.sort_unstable();
        pairs.dedup();
        let mut offsets = vec![0u32; names.len() + 1];
        for &(name, _) in &pairs {
            offsets[name as usize + 1] += 1;
        }
        for i in 0..names.len() {
            offsets[i + 1] += offsets[i];
        }
        if names.is_empty() {
            offsets.clear();
        }
        Aliases {
            names,
            offsets,
            nodes: pairs.into_iter().map(|(_, v)| v).collect(),
        }
    }

    /// The alias names.
    pub fn names(&self) -> &Dictionary {
        &self.names
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The nodes alias `id` denotes, ascending.
    pub fn nodes_of(&self, id: u32) -> &[NodeId] {
        let i = id as usize;
        &self.nodes[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The nodes `name` denotes as an alias, ascending (empty if it is none).
    pub fn nodes(&self, name: &str) -> &[NodeId] {
        self.names.get(name).map_or(&[], |id| self.nodes_of(id))
    }

    /// Iterates `(name, nodes)` in name-id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[NodeId])> + '_ {
        self.names
            .iter()
            .map(move |(id, name)| (name, self.nodes_of(id)))
    }

    /// Gives back the spare capacity a decoder's growth left (a loaded file's arrays).
    pub fn shrink_to_fit(&mut self) {
        self.offsets.shrink_to_fit();
        self.nodes.shrink_to_fit();
    }

    pub fn heap_bytes(&self) -> usize {
        self.names.heap_bytes() + (self.offsets.capacity() + self.nodes.capacity()) * 4
    }

    /// Offsets cover `nodes` in order, every name has a node, and each name's nodes are ascending,
    /// distinct and below `node_count`. Public for other containers of aliases loaded from outside
    /// (partition files), which must check them before [`Aliases::nodes_of`] may index.
    pub fn validate(&self, node_count: usize) -> Result<(), GraphError> {
        let bad = |what: &str| Err(GraphError::Inconsistent(format!("aliases: {what}")));
        if self.names.is_empty() {
            return if self.offsets.is_empty() && self.nodes.is_empty() {
                Ok(())
            } else {
                bad("nodes without names")
            };
        }
        if self.offsets.len() != self.names.len() + 1
            || self.offsets[0] != 0
            || self.offsets[self.names.len()] as usize != self.nodes.len()
        {
            return bad("offsets do not cover the nodes");
        }
        for pair in self.offsets.windows(2) {
            if pair[0] >= pair[1] {
                return bad("a name without nodes, or offsets out of order");
            }
            let group = &self.nodes[pair[0] as usize..pair[1] as usize];
            if group.windows(2).any(|w| w[0] >= w[1]) {
                return bad("a name's nodes are not ascending and distinct");
            }
            if group.last().is_some_and(|&v| v as usize >= node_count) {
                return bad("a node out of range");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aliases(pairs: &[(&str, NodeId)]) -> Aliases {
        let mut names = Dictionary::new();
        let ids = pairs
            .iter()
            .map(|&(name, v)| (names.intern(name).unwrap(), v))
            .collect();
        Aliases::from_pairs(names, ids)
    }

    #[test]
    fn groups_sorts_and_deduplicates() {
        let a = aliases(&[("dog", 7), ("frank", 2), ("dog", 3), ("dog", 7)]);
        assert_eq!(a.nodes("dog"), &[3, 7]);
        assert_eq!(a.nodes("frank"), &[2]);
        assert_eq!(a.nodes("cat"), &[] as &[NodeId]);
        assert!(a.validate(8).is_ok());
        assert!(a.validate(7).is_err(), "node 7 out of range");
        assert!(Aliases::default().validate(0).is_ok());
    }

    #[test]
    fn rejects_crafted_parts() {
        let mut a = aliases(&[("dog", 7), ("dog", 3)]);
        a.nodes.swap(0, 1);
        assert!(a.validate(8).is_err(), "descending");
        let mut a = aliases(&[("dog", 7), ("cat", 3)]);
        a.offsets[1] = 0;
        assert!(a.validate(8).is_err(), "a name without nodes");
        let mut a = aliases(&[("dog", 7)]);
        a.offsets.pop();
        assert!(a.validate(8).is_err(), "short offsets");
    }
}
