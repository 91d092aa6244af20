//! Templates: the small graphs TruST looks for, with fuzzy node names and optional relations.

use gpsense_graph::KnowledgeGraph;
use gpsense_planner::parse::Term;
use gpsense_planner::{parse, Query};

use crate::TrustError;

/// What a template node asks of its data node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeLabel {
    /// A name, compared by normalised edit-distance similarity (a misspelling still scores).
    Fuzzy(String),
    /// Anything: only the topology and the neighbours' names decide (a query's `?x`).
    Any,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateNode {
    /// How the node is shown: the concept as written, or `?x`.
    pub name: String,
    pub label: NodeLabel,
}

/// A directed template edge between template nodes (indexes into `Template::nodes`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateEdge {
    pub source: usize,
    pub target: usize,
    /// The relation name; `None` matches any relation (a query's `?r`). A name the data graph does
    /// not have is allowed: such an edge is still matched by topology but never earns the relation
    /// bonus.
    pub relation: Option<String>,
}

/// A template graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Template {
    pub nodes: Vec<TemplateNode>,
    pub edges: Vec<TemplateEdge>,
}

/// Which text of a data or template graph node is compared with template names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NodeText {
    /// The node's name (concepts) and, for data nodes, its aliases (the best of them counts).
    #[default]
    Name,
    /// The node's label name (the benchmark format, whose names are mere vertex ids).
    Label,
}

impl Template {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node matched by name similarity; returns its index.
    pub fn add_fuzzy(&mut self, name: &str) -> usize {
        self.push(name.to_owned(), NodeLabel::Fuzzy(name.to_owned()))
    }

    /// Adds a node that matches any data node; returns its index.
    pub fn add_any(&mut self, name: &str) -> usize {
        self.push(name.to_owned(), NodeLabel::Any)
    }

    fn push(&mut self, name: String, label: NodeLabel) -> usize {
        self.nodes.push(TemplateNode { name, label });
        self.nodes.len() - 1
    }

    /// Adds `source -relation-> target` (`None`: any relation). A repeated edge is stored once.
    pub fn add_edge(
        &mut self,
        source: usize,
        target: usize,
        relation: Option<&str>,
    ) -> Result<(), TrustError> {
        for node in [source, target] {
            if node >= self.nodes.len() {
                return Err(TrustError::BadEdge {
                    edge: self.edges.len(),
                    node,
                    nodes: self.nodes.len(),
                });
            }
        }
        let edge = TemplateEdge {
            source,
            target,
            relation: relation.map(str::to_owned),
        };
        if !self.edges.contains(&edge) {
            self.edges.push(edge);
        }
        Ok(())
    }

    /// Parses a query (`SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }`) into a
    /// template: concepts become fuzzy nodes (one per distinct name), variables match anything, a
    /// variable predicate matches any relation. Names are kept as written, so a misspelt or unknown
    /// concept is not an error.
    pub fn parse(text: &str) -> Result<(Template, Query), TrustError> {
        let query = parse(text)?;
        Ok((Template::from_query(&query), query))
    }

    /// The template of a parsed query (see [`Template::parse`]).
    pub fn from_query(query: &Query) -> Template {
        let mut t = Template::new();
        for triple in &query.triples {
            let s = t.node_for(&triple.subject.value);
            let o = t.node_for(&triple.object.value);
            let relation = match &triple.predicate.value {
                Term::Name(r) => Some(r.as_str()),
                Term::Variable(_) => None,
            };
            // Both endpoints were just created, so the edge is always valid.
            let _ = t.add_edge(s, o, relation);
        }
        t
    }

    /// The node for a subject or object term, created on first use.
    fn node_for(&mut self, term: &Term) -> usize {
        let (name, label) = match term {
            Term::Variable(v) => (format!("?{v}"), NodeLabel::Any),
            Term::Name(n) => (n.clone(), NodeLabel::Fuzzy(n.clone())),
        };
        match self.nodes.iter().position(|n| n.name == name) {
            Some(i) => i,
            None => self.push(name, label),
        }
    }

    /// A template from a graph file's graph: every node fuzzy by its name or label name, except
    /// nodes named `?something`, which match anything; every edge with its relation.
    pub fn from_graph(g: &KnowledgeGraph, text: NodeText) -> Template {
        let mut t = Template::new();
        for v in 0..g.node_count() as u32 {
            let name = g.node_name(v);
            if name.starts_with('?') {
                t.add_any(name);
            } else {
                let label = node_text(g, v, text).to_owned();
                t.push(name.to_owned(), NodeLabel::Fuzzy(label));
            }
        }
        for (s, r, o) in g.edges() {
            t.edges.push(TemplateEdge {
                source: s as usize,
                target: o as usize,
                relation: Some(g.relation_name(r).to_owned()),
            });
        }
        t
    }

    /// The template degree of `node`: its incident edge ends, both directions (a self-loop counts
    /// twice), as the one-hop score normalises by.
    pub fn degree(&self, node: usize) -> usize {
        self.edges
            .iter()
            .map(|e| (e.source == node) as usize + (e.target == node) as usize)
            .sum()
    }
}

/// The own text of node `v` under `text` (the label name falls back to the name when the graph has
/// no node labels). One text: a template node has one name; a data node's aliases are further texts
/// that only the name index adds.
pub fn node_text(g: &KnowledgeGraph, v: u32, text: NodeText) -> &str {
    match text {
        NodeText::Label if g.has_node_labels() => g.node_label_names().name(g.node_label(v)),
        _ => g.node_name(v),
    }
}
