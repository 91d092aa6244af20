//! Conversion to and from `petgraph::Graph`, for users who want petgraph's algorithms.

use petgraph::graph::{DiGraph, NodeIndex};

use crate::{GraphBuilder, GraphError, KnowledgeGraph};

impl KnowledgeGraph {
    /// A `petgraph` directed graph with node names as node weights and relation names as edge
    /// weights, borrowing the names. Node `v` becomes `NodeIndex::new(v)`. O(|V| + |E|).
    pub fn to_petgraph(&self) -> DiGraph<&str, &str> {
        let mut g = DiGraph::with_capacity(self.node_count(), self.edge_count());
        for (_, name) in self.nodes().iter() {
            g.add_node(name);
        }
        for (s, r, t) in self.edges() {
            g.add_edge(
                NodeIndex::new(s as usize),
                NodeIndex::new(t as usize),
                self.relation_name(r),
            );
        }
        g
    }

    /// Builds from a `petgraph` directed graph whose node weights name the nodes (unique) and whose
    /// edge weights name the relations. Parallel edges with the same relation are stored once.
    pub fn from_petgraph<N: AsRef<str>, E: AsRef<str>>(
        g: &DiGraph<N, E>,
    ) -> Result<Self, GraphError> {
        let mut b = GraphBuilder::new();
        for w in g.node_weights() {
            let name = w.as_ref();
            if b.existing_node(name).is_some() {
                return Err(GraphError::DuplicateNode(name.to_owned()));
            }
            b.node(name)?;
        }
        for e in g.raw_edges() {
            let r = b.relation(e.weight.as_ref())?;
            b.add_edge(e.source().index() as u32, r, e.target().index() as u32, 1.0);
        }
        Ok(b.build()?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_petgraph() {
        let mut b = GraphBuilder::new();
        b.add_triple("cat", "IsA", "animal", 1.0).unwrap();
        b.add_triple("cat", "AtLocation", "home", 1.0).unwrap();
        b.add_triple("home", "AtLocation", "home", 1.0).unwrap();
        let g = b.build().unwrap().0;
        let pg = g.to_petgraph();
        assert_eq!((pg.node_count(), pg.edge_count()), (3, 3));
        let back = KnowledgeGraph::from_petgraph(&pg).unwrap();
        assert_eq!(back, g);
    }

    #[test]
    fn duplicate_node_names_are_refused() {
        let mut pg = DiGraph::<&str, &str>::new();
        pg.add_node("a");
        pg.add_node("a");
        assert_eq!(
            KnowledgeGraph::from_petgraph(&pg),
            Err(GraphError::DuplicateNode("a".into()))
        );
    }
}
