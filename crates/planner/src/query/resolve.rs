//! Resolution of a parsed query against a data graph: names to ids, variables to query nodes.

use std::collections::{HashMap, HashSet};

use gpsense_graph::NodeId;

use super::{EdgeLabel, NodeKind, Projected, QueryEdge, QueryError, QueryGraph, QueryNode};
use crate::parse::{self, Projection, Query, Spanned, Term};
use crate::Vocabulary;

/// The most names an unknown-name error suggests.
pub const MAX_SUGGESTIONS: usize = 5;

/// Parses `text` and resolves it against `g`. See [`resolve`].
pub fn compile(text: &str, g: &dyn Vocabulary) -> Result<QueryGraph, QueryError> {
    resolve(&parse::parse(text)?, g)
}

/// Turns a parsed query into a query graph over `g` (paper section 3, Fig. 3).
///
/// The same concept named twice is one query node, as is the same variable; repeated triples give
/// one edge. `SELECT *` projects every node variable and edge variable in order of first
/// appearance (subject, predicate, object, triple after triple); concepts are never projected.
/// The first unknown concept or relation, in text order, is an error with suggestions.
///
/// `g` is a graph or any other [`Vocabulary`] (a partitioned graph's names, spread over processes).
/// O(T) name look-ups for T triples when every name exists; an unknown name adds one suggestion
/// query (over a graph, one scan of its dictionary: see `suggest`).
pub fn resolve(q: &Query, g: &dyn Vocabulary) -> Result<QueryGraph, QueryError> {
    let mut b = Builder::new(g);
    for t in &q.triples {
        let source = b.node(&t.subject)?;
        let label = b.label(&t.predicate)?;
        let target = b.node(&t.object)?;
        b.edge(QueryEdge {
            source,
            target,
            label,
        });
    }
    let projection = match &q.projection {
        Projection::All => b.appearance.clone(),
        // The parser checked that every projected variable occurs in the pattern.
        Projection::Variables(vars) => vars.iter().filter_map(|v| b.projected(&v.value)).collect(),
    };
    Ok(QueryGraph {
        nodes: b.nodes,
        edges: b.edges,
        edge_variables: b.edge_variables,
        concept_sets: b.concept_sets,
        projection,
        distinct: q.distinct,
        limit: q.limit,
    })
}

/// The query graph under construction and the indexes that deduplicate it.
struct Builder<'g> {
    g: &'g dyn Vocabulary,
    nodes: Vec<QueryNode>,
    variables: HashMap<String, usize>,
    /// Query node per denoted data-node set (one node for a plain concept).
    concepts: HashMap<Vec<NodeId>, usize>,
    concept_sets: Vec<Vec<NodeId>>,
    edges: Vec<QueryEdge>,
    seen_edges: HashSet<QueryEdge>,
    edge_variables: Vec<String>,
    edge_variable_index: HashMap<String, usize>,
    /// Variables (node and edge) in order of first appearance, for `SELECT *`.
    appearance: Vec<Projected>,
}

impl<'g> Builder<'g> {
    fn new(g: &'g dyn Vocabulary) -> Self {
        Builder {
            g,
            nodes: Vec::new(),
            variables: HashMap::new(),
            concepts: HashMap::new(),
            concept_sets: Vec::new(),
            edges: Vec::new(),
            seen_edges: HashSet::new(),
            edge_variables: Vec::new(),
            edge_variable_index: HashMap::new(),
            appearance: Vec::new(),
        }
    }

    /// The query node of a subject or object, created on first use.
    fn node(&mut self, term: &Spanned<Term>) -> Result<usize, QueryError> {
        match &term.value {
            Term::Variable(v) => Ok(self.variable(v)),
            Term::Name(name) => self.concept(name, term),
        }
    }

    fn variable(&mut self, v: &str) -> usize {
        if let Some(&i) = self.variables.get(v) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(QueryNode {
            name: format!("?{v}"),
            kind: NodeKind::Variable,
            label: None,
        });
        self.variables.insert(v.to_owned(), i);
        self.appearance.push(Projected::Node(i));
        i
    }

    /// The query node of a concept name: the data nodes it denotes (`KnowledgeGraph::nodes_named`;
    /// with underscores read as spaces if that finds nothing, as WordNet writes `hot_dog`).
    fn concept(&mut self, name: &str, term: &Spanned<Term>) -> Result<usize, QueryError> {
        let mut nodes = self.g.nodes_named(name);
        if nodes.is_empty() && name.contains('_') {
            nodes = self.g.nodes_named(&name.replace('_', " "));
        }
        if nodes.is_empty() {
            return Err(QueryError::UnknownConcept {
                name: name.to_owned(),
                line: term.span.line,
                column: term.span.column,
                suggestions: self.g.concept_suggestions(name, MAX_SUGGESTIONS),
            });
        }
        if let Some(&i) = self.concepts.get(&nodes) {
            return Ok(i);
        }
        let i = self.nodes.len();
        let kind = match nodes[..] {
            [v] => NodeKind::Concept(v),
            _ => {
                self.concept_sets.push(nodes.clone());
                NodeKind::ConceptSet(self.concept_sets.len() - 1)
            }
        };
        self.nodes.push(QueryNode {
            name: name.to_owned(),
            kind,
            label: None,
        });
        self.concepts.insert(nodes, i);
        Ok(i)
    }

    /// The edge label of a predicate: a relation id or an edge variable.
    fn label(&mut self, term: &Spanned<Term>) -> Result<EdgeLabel, QueryError> {
        match &term.value {
            Term::Variable(v) => Ok(EdgeLabel::Variable(self.edge_variable(v))),
            Term::Name(name) => match self.g.relation_id(name) {
                Some(r) => Ok(EdgeLabel::Fixed(r)),
                None => Err(QueryError::UnknownRelation {
                    name: name.clone(),
                    line: term.span.line,
                    column: term.span.column,
                    suggestions: self.g.relation_suggestions(name, MAX_SUGGESTIONS),
                }),
            },
        }
    }

    fn edge_variable(&mut self, v: &str) -> usize {
        if let Some(&i) = self.edge_variable_index.get(v) {
            return i;
        }
        let i = self.edge_variables.len();
        self.edge_variables.push(format!("?{v}"));
        self.edge_variable_index.insert(v.to_owned(), i);
        self.appearance.push(Projected::Edge(i));
        i
    }

    fn edge(&mut self, e: QueryEdge) {
        if self.seen_edges.insert(e) {
            self.edges.push(e);
        }
    }

    /// The column of a projected variable (node or edge).
    fn projected(&self, v: &str) -> Option<Projected> {
        self.variables
            .get(v)
            .map(|&i| Projected::Node(i))
            .or_else(|| self.edge_variable_index.get(v).map(|&i| Projected::Edge(i)))
    }
}
