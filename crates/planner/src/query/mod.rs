//! Query graphs: a parsed [`Query`](crate::parse::Query) resolved against a [`KnowledgeGraph`], or a
//! benchmark query file turned into the same form.
//!
//! The model follows section 3 of the GpSense paper ("direct transformation" of a common-sense
//! query, Fig. 3): concepts become concept nodes with their data nodes (one, or several for a
//! name such as a WordNet lemma that denotes several senses), `?x` subjects and
//! objects become variable nodes, relations become fixed edge labels and `?r` predicates variable
//! edges. Edges keep their direction (subject -> object).

mod benchmark;
mod resolve;
#[cfg(test)]
mod tests;

use std::fmt;

use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use thiserror::Error;

use crate::parse::{render_at, ParseError};

pub use benchmark::{benchmark_query, ABSENT_LABEL};
pub use resolve::{compile, resolve, MAX_SUGGESTIONS};

/// What a query node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A named concept: exactly one data node.
    Concept(NodeId),
    /// A name that denotes several data nodes (a word with several senses, see
    /// `gpsense_graph::Aliases`): any one of them. Index into `QueryGraph::concept_sets`.
    ConceptSet(usize),
    /// A variable: any data node (with the required label, if any).
    Variable,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QueryNode {
    /// `?x` for variables, the concept name otherwise.
    pub name: String,
    pub kind: NodeKind,
    /// The data node label a match must have (`KnowledgeGraph::node_label`); `None` = any.
    pub label: Option<u32>,
}

impl QueryNode {
    pub fn is_concept(&self) -> bool {
        !matches!(self.kind, NodeKind::Variable)
    }
}

/// The label of a query edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeLabel {
    /// Data edges with exactly this relation.
    Fixed(LabelId),
    /// Any relation, bound to the edge variable with this index in `QueryGraph::edge_variables`.
    Variable(usize),
}

/// A directed query edge between query nodes (indexes into `QueryGraph::nodes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueryEdge {
    pub source: usize,
    pub target: usize,
    pub label: EdgeLabel,
}

/// One output column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Projected {
    /// A query node (index into `nodes`).
    Node(usize),
    /// An edge variable (index into `edge_variables`).
    Edge(usize),
}

/// A query ready for planning and matching.
///
/// Invariants (kept by [`resolve`] and [`benchmark_query`]): edge endpoints and `Variable` indexes are
/// in range; no two edges are equal; concept nodes are distinct data nodes, concept sets distinct
/// sets of two or more ascending data nodes; variable names are unique.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QueryGraph {
    pub nodes: Vec<QueryNode>,
    pub edges: Vec<QueryEdge>,
    /// Names of the edge variables (`?r`).
    pub edge_variables: Vec<String>,
    /// The data nodes of each `NodeKind::ConceptSet`, ascending.
    pub concept_sets: Vec<Vec<NodeId>>,
    pub projection: Vec<Projected>,
    pub distinct: bool,
    pub limit: Option<u64>,
}

/// Why a query cannot be answered on a given graph.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum QueryError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(
        "line {line}, column {column}: unknown concept {name:?}{}",
        did_you_mean(suggestions)
    )]
    UnknownConcept {
        name: String,
        line: usize,
        column: usize,
        /// Up to [`MAX_SUGGESTIONS`] existing concept names, nearest first.
        suggestions: Vec<String>,
    },
    #[error(
        "line {line}, column {column}: unknown relation {name:?}{}",
        did_you_mean(suggestions)
    )]
    UnknownRelation {
        name: String,
        line: usize,
        column: usize,
        /// Up to [`MAX_SUGGESTIONS`] existing relation names, nearest first.
        suggestions: Vec<String>,
    },
    /// A benchmark query uses an edge label the data graph does not have.
    #[error(
        "the data graph has no relation {name:?}, which the benchmark query's edges use \
         (was the data graph ingested from the benchmark format?)"
    )]
    BenchmarkRelation { name: String },
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = suggestions.iter().map(|s| format!("{s:?}")).collect();
    format!("; did you mean {}?", quoted.join(", "))
}

impl QueryError {
    /// The position in the query text the error points at, if any.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            QueryError::Parse(e) => Some((e.line, e.column)),
            QueryError::UnknownConcept { line, column, .. }
            | QueryError::UnknownRelation { line, column, .. } => Some((*line, *column)),
            QueryError::BenchmarkRelation { .. } => None,
        }
    }

    /// The message, followed (when the error has a position) by the offending line of `source`
    /// with a caret under the column.
    pub fn render(&self, source: &str) -> String {
        match self.position() {
            Some((line, column)) => render_at(source, line, column, &self.to_string()),
            None => self.to_string(),
        }
    }
}

impl QueryGraph {
    /// Connected components over the edges, ignoring direction; an isolated node is its own
    /// component. Components are ordered by their smallest node, nodes ascending within each.
    /// O(V + E α(V)) by union-find.
    pub fn components(&self) -> Vec<Vec<usize>> {
        let mut parent: Vec<usize> = (0..self.nodes.len()).collect();
        for e in &self.edges {
            let (a, b) = (find(&mut parent, e.source), find(&mut parent, e.target));
            // The smaller root wins, so each root is its component's smallest node.
            parent[a.max(b)] = a.min(b);
        }
        let mut slot = vec![usize::MAX; self.nodes.len()];
        let mut components: Vec<Vec<usize>> = Vec::new();
        for v in 0..self.nodes.len() {
            let root = find(&mut parent, v);
            if slot[root] == usize::MAX {
                slot[root] = components.len();
                components.push(Vec::new());
            }
            components[slot[root]].push(v);
        }
        components
    }

    /// The data nodes concept node `u` may take: its one node, or its set; `None` for a variable.
    pub fn concept_nodes(&self, u: usize) -> Option<&[NodeId]> {
        match &self.nodes[u].kind {
            NodeKind::Concept(v) => Some(std::slice::from_ref(v)),
            NodeKind::ConceptSet(i) => Some(&self.concept_sets[*i]),
            NodeKind::Variable => None,
        }
    }

    /// Number of variable nodes (edge variables are `edge_variables.len()`).
    pub fn variable_count(&self) -> usize {
        self.nodes.iter().filter(|n| !n.is_concept()).count()
    }

    /// The query graph with relation and node-label names from `g`, for `--explain`.
    pub fn describe(&self, g: &KnowledgeGraph) -> String {
        Describe {
            q: self,
            g: Some(g),
        }
        .to_string()
    }

    /// The name of an edge's label: the relation name from `g`, or the edge variable.
    fn label_text(&self, label: EdgeLabel, g: Option<&KnowledgeGraph>) -> String {
        match label {
            EdgeLabel::Fixed(r) => match g {
                Some(g) if (r as usize) < g.relation_count() => g.relation_name(r).to_owned(),
                _ => format!("relation #{r}"),
            },
            EdgeLabel::Variable(i) => self
                .edge_variables
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("?edge{i}")),
        }
    }

    fn projected_name(&self, p: Projected) -> String {
        match p {
            Projected::Node(i) => self.nodes.get(i).map(|n| n.name.clone()),
            Projected::Edge(i) => self.edge_variables.get(i).cloned(),
        }
        .unwrap_or_else(|| "?".into())
    }
}

fn find(parent: &mut [usize], mut v: usize) -> usize {
    while parent[v] != v {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    v
}

/// Renders a query graph, with names from the data graph when there is one.
struct Describe<'a> {
    q: &'a QueryGraph,
    g: Option<&'a KnowledgeGraph>,
}

impl fmt::Display for Describe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = self.q;
        writeln!(
            f,
            "query graph: {} ({}), {}, {}",
            crate::counted(q.nodes.len() as u64, "node", "nodes"),
            crate::counted(q.variable_count() as u64, "variable", "variables"),
            crate::counted(q.edges.len() as u64, "edge", "edges"),
            crate::counted(
                q.edge_variables.len() as u64,
                "edge variable",
                "edge variables"
            )
        )?;
        for (i, n) in q.nodes.iter().enumerate() {
            write!(f, "  node {i}: {}", n.name)?;
            match n.kind {
                NodeKind::Concept(id) => write!(f, " (concept, data node {id})")?,
                NodeKind::ConceptSet(s) => self.concept_set(f, &q.concept_sets[s])?,
                NodeKind::Variable => f.write_str(" (variable)")?,
            }
            if let Some(l) = n.label {
                write!(f, " label {}", self.node_label_text(l))?;
            }
            writeln!(f)?;
        }
        for (i, e) in q.edges.iter().enumerate() {
            let name = |v: usize| q.nodes.get(v).map_or("?", |n| n.name.as_str());
            writeln!(
                f,
                "  edge {i}: {} -[{}]-> {}",
                name(e.source),
                q.label_text(e.label, self.g),
                name(e.target)
            )?;
        }
        let columns: Vec<String> = q.projection.iter().map(|&p| q.projected_name(p)).collect();
        write!(
            f,
            "  select{} {}",
            if q.distinct { " distinct" } else { "" },
            if columns.is_empty() {
                "(no variables)".to_owned()
            } else {
                columns.join(" ")
            }
        )?;
        if let Some(n) = q.limit {
            write!(f, " limit {n}")?;
        }
        Ok(())
    }
}

impl Describe<'_> {
    /// `(concept, one of 8 data nodes: a, b, c, d, ...)`, names from the data graph when there is one.
    fn concept_set(&self, f: &mut fmt::Formatter<'_>, nodes: &[NodeId]) -> fmt::Result {
        const SHOWN: usize = 4;
        write!(f, " (concept, one of {} data nodes:", nodes.len())?;
        for &v in nodes.iter().take(SHOWN) {
            match self.g {
                Some(g) if (v as usize) < g.node_count() => write!(f, " {}", g.node_name(v))?,
                _ => write!(f, " {v}")?,
            }
        }
        if nodes.len() > SHOWN {
            f.write_str(" ...")?;
        }
        f.write_str(")")
    }

    fn node_label_text(&self, l: u32) -> String {
        match self.g {
            Some(g) if (l as usize) < g.node_label_names().len() => {
                format!("{:?}", g.node_label_names().name(l))
            }
            _ if l == u32::MAX => "(absent from the data)".into(),
            _ => format!("#{l}"),
        }
    }
}

impl fmt::Display for QueryGraph {
    /// Like [`QueryGraph::describe`] without a data graph: relations are shown by id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Describe { q: self, g: None }.fmt(f)
    }
}
