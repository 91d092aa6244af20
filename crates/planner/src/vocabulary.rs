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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};

    use super::Vocabulary;
    use crate::testutil::small;
    use crate::{compile, nearest_names, prepare, Dialect, QueryError};

    /// A vocabulary that is not a graph: names in hash maps, each with its popularity (as a part of
    /// a distributed graph holds them), ranked by `nearest_names`.
    struct Names {
        nodes: HashMap<String, (Vec<NodeId>, u64)>,
        relations: HashMap<String, (LabelId, u64)>,
    }

    impl Names {
        fn of(g: &KnowledgeGraph) -> Self {
            let nodes = g
                .nodes()
                .iter()
                .map(|(v, n)| (n.to_owned(), (vec![v], g.degree(v) as u64)))
                .collect();
            let freq = g.relation_frequencies();
            let relations = g
                .relations()
                .iter()
                .map(|(r, n)| (n.to_owned(), (r as LabelId, freq[r as usize])))
                .collect();
            Names { nodes, relations }
        }
    }

    impl Vocabulary for Names {
        fn nodes_named(&self, name: &str) -> Vec<NodeId> {
            self.nodes
                .get(name)
                .map_or_else(Vec::new, |(v, _)| v.clone())
        }

        fn relation_id(&self, name: &str) -> Option<LabelId> {
            self.relations.get(name).map(|&(r, _)| r)
        }

        fn concept_suggestions(&self, name: &str, limit: usize) -> Vec<String> {
            let names = self.nodes.iter().map(|(n, (_, p))| (n.as_str(), *p));
            nearest_names(name, names, limit)
        }

        fn relation_suggestions(&self, name: &str, limit: usize) -> Vec<String> {
            let names = self.relations.iter().map(|(n, (_, p))| (n.as_str(), *p));
            nearest_names(name, names, limit)
        }
    }

    #[test]
    fn a_vocabulary_resolves_as_its_graph_does() {
        let g = small();
        let names = Names::of(&g);
        let short = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation ?y . ?x ?r chocolate }";
        assert_eq!(compile(short, &names), compile(short, &g));
        assert!(compile(short, &names).is_ok());
        let standard =
            "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/>\n\
             SELECT ?x WHERE { ?x r:IsA c:animal ; r:AtLocation c:home . \
             <http://conceptnet.io/c/en/chocolate_cake> r:HasA ?y FILTER(?x != c:dog) }";
        let (a, b) = (
            prepare(standard, &names, Dialect::Sparql).unwrap(),
            prepare(standard, &g, Dialect::Sparql).unwrap(),
        );
        assert_eq!((a.dialect, a.graph.edges.len()), (Dialect::Sparql, 3));
        assert_eq!((a.graph, a.form, a.filters), (b.graph, b.form, b.filters));
        // Errors, suggestions included, are the same too.
        for text in ["SELECT ?x { ?x IsA aminal }", "SELECT ?x { ?x isa animal }"] {
            let (a, b) = (compile(text, &names), compile(text, &g));
            assert!(a.is_err());
            assert_eq!(a, b);
        }
    }

    #[test]
    fn unknown_concept_suggestions_come_from_the_vocabulary() {
        let g = small();
        let mut names = Names::of(&g);
        names.nodes.insert("lizards".to_owned(), (Vec::new(), 1));
        let Err(QueryError::UnknownConcept { suggestions, .. }) =
            compile("SELECT ?x { ?x IsA lizardz }", &names)
        else {
            panic!("lizardz resolved");
        };
        assert_eq!(suggestions[..2], ["lizard", "lizards"]);
    }
}
