//! What query resolution reads of a graph: its names. A trait, so that a graph whose node names
//! are spread over several processes (`gpsense-dist`) resolves queries exactly as a whole graph does.

use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};

use crate::suggest;

/// The names a query is resolved against: node names (with aliases) and relation names.
pub trait Vocabulary {
    /// The data nodes `name` denotes: its node and the nodes it is an alias of, ascending and
    /// distinct (as [`KnowledgeGraph::nodes_named`]).
    fn nodes_named(&self, name: &str) -> Vec<NodeId>;
    fn relation_id(&self, name: &str) -> Option<LabelId>;
    /// Up to `limit` concept names nearest to `name`, for an unknown-concept error.
    fn concept_suggestions(&self, name: &str, limit: usize) -> Vec<String>;
    /// Up to `limit` relation names nearest to `name`, for an unknown-relation error.
    fn relation_suggestions(&self, name: &str, limit: usize) -> Vec<String>;
}

impl Vocabulary for KnowledgeGraph {
    fn nodes_named(&self, name: &str) -> Vec<NodeId> {
        KnowledgeGraph::nodes_named(self, name)
    }

    fn relation_id(&self, name: &str) -> Option<LabelId> {
        KnowledgeGraph::relation_id(self, name)
    }

    fn concept_suggestions(&self, name: &str, limit: usize) -> Vec<String> {
        suggest::concept_names(self, name, limit)
    }

    fn relation_suggestions(&self, name: &str, limit: usize) -> Vec<String> {
        suggest::relations_near(self, name, limit)
    }
}
