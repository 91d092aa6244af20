//! The graph as spareval's [`QueryableDataset`]: one default graph, its terms as node and relation
//! ids, quads read from the CSR (out-lists when the subject is known, in-lists when the object is,
//! a per-relation edge index otherwise).

use std::convert::Infallible;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use gpsense_graph::rdf::{iri_name, nt_predicate, nt_term, term_kind, Term as GraphTerm, TermKind};
use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_planner::sparql::{node_names, relation_names};
use oxrdf::{BlankNode, Literal, NamedNode, Term};
use spareval::{InternalQuad, QueryableDataset};

use crate::limits::{Interrupted, Watch};

/// IRIs under which the matcher's answers travel to spareval as ids rather than names (see
/// `bgp.rs`): parsed back here without a dictionary lookup. Never seen outside an evaluation.
pub(crate) const NODE_ID_IRI: &str = "urn:x-gpsense-internal:node:";
pub(crate) const RELATION_ID_IRI: &str = "urn:x-gpsense-internal:relation:";

/// A term as the evaluator holds it. Each RDF term has exactly one form (spareval compares these
/// for `sameTerm`): a node when the graph has a node of that term, else a relation, else the term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    Node(NodeId),
    Relation(LabelId),
    Other(Term),
}

/// Edges grouped by relation: `edges[offsets[r]..offsets[r + 1]]` are positions in the out-CSR.
struct ByRelation {
    offsets: Vec<u32>,
    edges: Vec<u32>,
    sources: Vec<NodeId>,
}

/// Per-graph indexes the dataset builds on first use and keeps across queries.
#[derive(Default)]
pub struct Indexes {
    by_relation: OnceLock<ByRelation>,
    /// For each relation, the node of the same IRI, if any (then that is the relation's term form).
    relation_nodes: OnceLock<Vec<Option<NodeId>>>,
    /// Each node's term kind, 0 until first needed (`View::node_term`).
    node_kinds: OnceLock<Vec<AtomicU8>>,
    /// Each node's IRI (or blank node label) and each relation's IRI, spelled out on first
    /// use (`View::node_text`): the native evaluator's STR, ORDER BY and MIN/MAX read these.
    node_texts: OnceLock<NodeTexts>,
    relation_texts: OnceLock<Vec<OnceLock<Box<str>>>>,
    /// What the graph's literals hold that the evaluator cannot keep apart (`gaps.rs`).
    pub(crate) literal_facts: OnceLock<crate::gaps::LiteralFacts>,
}

/// Every node's IRI or blank node label, one after the other.
struct NodeTexts {
    offsets: Vec<usize>,
    text: String,
    /// The blank nodes, sorted.
    blank: Vec<NodeId>,
}

impl NodeTexts {
    fn new(view: View<'_>) -> NodeTexts {
        let n = view.graph.node_count();
        let mut t = NodeTexts {
            offsets: Vec::with_capacity(n + 1),
            text: String::new(),
            blank: Vec::new(),
        };
        t.offsets.push(0);
        for v in 0..n as NodeId {
            match view.node_term(v) {
                Term::NamedNode(i) => t.text.push_str(i.as_str()),
                Term::BlankNode(b) => {
                    t.blank.push(v);
                    t.text.push_str(b.as_str());
                }
                Term::Literal(l) => t.text.push_str(&l.to_string()),
            }
            t.offsets.push(t.text.len());
        }
        t
    }
}

/// The graph and its indexes: what reading quads needs.
#[derive(Clone, Copy)]
pub struct View<'g> {
    pub graph: &'g KnowledgeGraph,
    pub indexes: &'g Indexes,
}

/// The graph seen by spareval.
#[derive(Clone)]
pub struct GraphDataset<'g> {
    pub view: View<'g>,
    pub watch: Arc<Watch>,
}

impl<'g> View<'g> {
    pub(crate) fn relation_term(&self, r: LabelId) -> Id {
        let nodes = self.indexes.relation_nodes.get_or_init(|| {
            (0..self.graph.relation_count() as LabelId)
                .map(|r| {
                    let name = self.graph.relation_name(r);
                    (term_kind(name) == TermKind::Iri)
                        .then(|| self.graph.node_id(name))
                        .flatten()
                })
                .collect()
        });
        match nodes.get(r as usize).copied().flatten() {
            Some(v) => Id::Node(v),
            None => Id::Relation(r),
        }
    }

    /// The relation a predicate term denotes.
    pub(crate) fn relation_of(&self, id: &Id) -> Option<LabelId> {
        match id {
            Id::Relation(r) => Some(*r),
            Id::Node(v) => {
                let name = self.graph.node_name(*v);
                (term_kind(name) == TermKind::Iri)
                    .then(|| self.graph.relation_id(name))
                    .flatten()
            }
            Id::Other(_) => None,
        }
    }

    fn by_relation(self) -> &'g ByRelation {
        self.indexes.by_relation.get_or_init(|| {
            let out = self.graph.out();
            let relations = self.graph.relation_count();
            let mut counts = vec![0u32; relations + 1];
            for &l in out.labels() {
                counts[l as usize + 1] += 1;
            }
            for i in 0..relations {
                counts[i + 1] += counts[i];
            }
            let mut next = counts.clone();
            let mut edges = vec![0u32; out.edge_count()];
            let mut sources = vec![0 as NodeId; out.edge_count()];
            for v in 0..out.node_count() as NodeId {
                for e in out.range(v) {
                    let slot = &mut next[out.labels()[e] as usize];
                    edges[*slot as usize] = e as u32;
                    sources[*slot as usize] = v;
                    *slot += 1;
                }
            }
            ByRelation {
                offsets: counts,
                edges,
                sources,
            }
        })
    }

    fn quad(&self, s: NodeId, r: LabelId, o: NodeId) -> InternalQuad<Id> {
        InternalQuad {
            subject: Id::Node(s),
            predicate: self.relation_term(r),
            object: Id::Node(o),
            graph_name: None,
        }
    }

    /// Out-edges of `s`, of relation `r` if given.
    fn starting_at(
        self,
        s: NodeId,
        r: Option<LabelId>,
        o: Option<NodeId>,
    ) -> impl Iterator<Item = (NodeId, LabelId, NodeId)> + 'g {
        let out = self.graph.out();
        let range = match r {
            Some(r) => out.label_range(s, r),
            None => out.range(s),
        };
        range
            .map(move |e| (s, out.labels()[e], out.targets()[e]))
            .filter(move |&(_, _, t)| o.is_none_or(|o| o == t))
    }

    /// In-edges of `o`, of relation `r` if given.
    fn ending_at(
        self,
        o: NodeId,
        r: Option<LabelId>,
    ) -> impl Iterator<Item = (NodeId, LabelId, NodeId)> + 'g {
        let inc = self.graph.inc();
        let range = match r {
            Some(r) => inc.label_range(o, r),
            None => inc.range(o),
        };
        range.map(move |e| (inc.targets()[e], inc.labels()[e], o))
    }

    fn of_relation(self, r: LabelId) -> impl Iterator<Item = (NodeId, LabelId, NodeId)> + 'g {
        let index = self.by_relation();
        let out = self.graph.out();
        let range = index.offsets[r as usize] as usize..index.offsets[r as usize + 1] as usize;
        range.map(move |i| (index.sources[i], r, out.targets()[index.edges[i] as usize]))
    }

    /// Calls `f` with each edge matching the given ends and relation, until it returns false.
    pub(crate) fn triples(
        self,
        s: Option<NodeId>,
        r: Option<LabelId>,
        o: Option<NodeId>,
        f: &mut dyn FnMut(NodeId, LabelId, NodeId) -> bool,
    ) {
        let mut go = |it: &mut dyn Iterator<Item = (NodeId, LabelId, NodeId)>| {
            for (a, r, b) in it {
                if !f(a, r, b) {
                    break;
                }
            }
        };
        match (s, r, o) {
            (Some(s), r, o) => go(&mut self.starting_at(s, r, o)),
            (None, r, Some(o)) => go(&mut self.ending_at(o, r)),
            (None, Some(r), None) => go(&mut self.of_relation(r)),
            (None, None, None) => go(&mut self.all()),
        }
    }

    fn all(self) -> impl Iterator<Item = (NodeId, LabelId, NodeId)> + 'g {
        let out = self.graph.out();
        (0..out.node_count() as NodeId).flat_map(move |s| self.starting_at(s, None, None))
    }

    /// The term of node `v`. Its kind is found once and kept (one byte a node): `term_kind`
    /// parses the name, too slow to repeat for each comparison of an ORDER BY.
    pub fn node_term(&self, v: NodeId) -> Term {
        let name = self.graph.node_name(v);
        match self.node_kind(v, name) {
            TermKind::Iri if !name.starts_with("gpsense:") => NamedNode::new_unchecked(name).into(),
            TermKind::BlankNode => BlankNode::new_unchecked(&name[2..]).into(),
            TermKind::Literal => nt_to_term(name),
            _ => nt_to_term(&nt_term(name)),
        }
    }

    fn node_kind(&self, v: NodeId, name: &str) -> TermKind {
        let kinds = self.indexes.node_kinds.get_or_init(|| {
            (0..self.graph.node_count())
                .map(|_| AtomicU8::new(0))
                .collect()
        });
        let Some(slot) = kinds.get(v as usize) else {
            return term_kind(name);
        };
        let codes = [
            TermKind::Iri,
            TermKind::Literal,
            TermKind::BlankNode,
            TermKind::Plain,
        ];
        match slot.load(Ordering::Relaxed) {
            0 => {
                let kind = term_kind(name);
                let code = codes.iter().position(|k| *k == kind).unwrap_or(3) as u8 + 1;
                slot.store(code, Ordering::Relaxed);
                kind
            }
            code => codes[(code as usize - 1).min(3)],
        }
    }

    /// Node `v`'s IRI, or its blank node label (then `true`). All nodes are spelled out at the
    /// first call, into one string (a node's text is then one slice of it: near the others in
    /// memory, which an expression over thousands of nodes reads at random). Only for graphs
    /// without literal nodes (a literal's text is its N-Triples form).
    pub(crate) fn node_text(&self, v: NodeId) -> (bool, &'g str) {
        let t = self
            .indexes
            .node_texts
            .get_or_init(|| NodeTexts::new(*self));
        let (from, to) = (t.offsets[v as usize], t.offsets[v as usize + 1]);
        let blank = !t.blank.is_empty() && t.blank.binary_search(&v).is_ok();
        (blank, &t.text[from..to])
    }

    /// Relation `r`'s IRI, kept once spelled out.
    pub(crate) fn relation_text(&self, r: LabelId) -> &'g str {
        let texts = self.indexes.relation_texts.get_or_init(|| {
            (0..self.graph.relation_count())
                .map(|_| OnceLock::new())
                .collect()
        });
        texts[r as usize].get_or_init(|| match self.relation_iri(r) {
            Term::NamedNode(n) => n.into_string().into(),
            t => t.to_string().into(),
        })
    }

    /// The term of relation `r`.
    pub fn relation_iri(&self, r: LabelId) -> Term {
        nt_to_term(&nt_predicate(self.graph.relation_name(r)))
    }
}

/// A term from the N-Triples form `gpsense_graph::rdf` writes (IRI, blank node or literal).
pub(crate) fn nt_to_term(nt: &str) -> Term {
    if let Some(iri) = nt.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
        return NamedNode::new_unchecked(iri).into();
    }
    if let Some(label) = nt.strip_prefix("_:") {
        return BlankNode::new_unchecked(label).into();
    }
    // Read by hand: `Literal::from_str` would write numbers in canonical form (`"1.0e0"^^xsd:double`
    // as `"1"`), and SPARQL's `str` must see the lexical form the data has.
    match gpsense_graph::rdf::literal(nt) {
        Some(GraphTerm::Literal {
            value,
            lang: Some(lang),
            ..
        }) => Literal::new_language_tagged_literal_unchecked(value, lang).into(),
        Some(GraphTerm::Literal {
            value,
            datatype: Some(dt),
            ..
        }) => Literal::new_typed_literal(value, NamedNode::new_unchecked(dt)).into(),
        Some(GraphTerm::Literal { value, .. }) => Literal::new_simple_literal(value).into(),
        _ => Literal::new_simple_literal(nt).into(),
    }
}

type Triples<'g> = Box<dyn Iterator<Item = (NodeId, LabelId, NodeId)> + 'g>;

impl<'g> QueryableDataset<'g> for GraphDataset<'g> {
    type InternalTerm = Id;
    type Error = Interrupted;

    fn internal_quads_for_pattern(
        &self,
        subject: Option<&Id>,
        predicate: Option<&Id>,
        object: Option<&Id>,
        graph_name: Option<Option<&Id>>,
    ) -> impl Iterator<Item = Result<InternalQuad<Id>, Interrupted>> + use<'g> {
        let this = self.view;
        // One default graph: a named graph (or any named graph) has nothing.
        let in_default = matches!(graph_name, Some(None));
        let node = |t: Option<&Id>| match t {
            None => Some(None),
            Some(Id::Node(v)) => Some(Some(*v)),
            Some(_) => None,
        };
        let relation = match predicate {
            None => Some(None),
            Some(p) => this.relation_of(p).map(Some),
        };
        if let Some(why) = self.watch.stopped() {
            return Box::new(std::iter::once(Err(why))) as Box<dyn Iterator<Item = _>>;
        }
        let triples: Triples<'g> = match (in_default, node(subject), relation, node(object)) {
            (true, Some(Some(s)), Some(r), Some(o)) => Box::new(this.starting_at(s, r, o)),
            (true, Some(None), Some(r), Some(Some(o))) => Box::new(this.ending_at(o, r)),
            (true, Some(None), Some(Some(r)), Some(None)) => Box::new(this.of_relation(r)),
            (true, Some(None), Some(None), Some(None)) => Box::new(this.all()),
            _ => Box::new(std::iter::empty()),
        };
        let watch = Arc::clone(&self.watch);
        Box::new(triples.map(move |(s, r, o)| {
            watch.tick()?;
            Ok(this.quad(s, r, o))
        }))
    }

    fn internalize_term(&self, term: Term) -> Result<Id, Interrupted> {
        Ok(self.view.internalize(term))
    }

    fn externalize_term(&self, term: Id) -> Result<Term, Interrupted> {
        Ok(match term {
            Id::Node(v) => self.view.node_term(v),
            Id::Relation(r) => self.view.relation_iri(r),
            Id::Other(t) => t,
        })
    }
}

impl View<'_> {
    /// A term's one form (see [`Id`]).
    pub(crate) fn internalize(&self, term: Term) -> Id {
        match &term {
            Term::NamedNode(iri) => {
                let iri = iri.as_str();
                if let Some(id) = parse_id(iri) {
                    return id;
                }
                self.named(iri).unwrap_or(Id::Other(term))
            }
            Term::BlankNode(_) | Term::Literal(_) => {
                let name = gpsense_graph::rdf::term_name(&term);
                match self.graph.node_id(&name) {
                    Some(v) if term_kind(&name) != TermKind::Plain => Id::Node(v),
                    _ => Id::Other(term),
                }
            }
        }
    }
}

impl View<'_> {
    /// The node a VALUES term is, if the graph has it.
    pub fn ground_node(&self, t: &spargebra::term::GroundTerm) -> Option<NodeId> {
        use spargebra::term::GroundTerm;
        match t {
            GroundTerm::NamedNode(n) => match self.named(n.as_str())? {
                Id::Node(v) => Some(v),
                _ => None,
            },
            GroundTerm::Literal(l) => self.graph.node_id(&l.to_string()),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The node or relation an IRI names: `gpsense:n/…` a plain node, `gpsense:r/…` a plain
    /// relation, any other IRI the node or relation of that very name.
    pub(crate) fn named(&self, iri: &str) -> Option<Id> {
        use gpsense_graph::rdf::{NODE_SCHEME, RELATION_SCHEME};
        let name = iri_name(iri);
        if iri.starts_with(RELATION_SCHEME) && name != iri {
            return self.graph.relation_id(&name).map(|r| self.relation_term(r));
        }
        let node = self
            .graph
            .node_id(&name)
            .filter(|&v| nt_term(self.graph.node_name(v)) == format!("<{iri}>"));
        if let Some(v) = node {
            return Some(Id::Node(v));
        }
        if iri.starts_with(NODE_SCHEME) {
            return None;
        }
        let relation = self
            .graph
            .relation_id(iri)
            .filter(|_| term_kind(iri) == TermKind::Iri);
        if let Some(r) = relation {
            return Some(self.relation_term(r));
        }
        self.conceptnet(iri)
    }

    /// ConceptNet's URIs (`http://conceptnet.io/c/en/ice_cream`, `.../r/IsA`) denote the concept
    /// and relation of a graph ingested from ConceptNet, as in a basic graph pattern (the
    /// planner's `node_names`), so VALUES and FILTER see them as the patterns do.
    fn conceptnet(&self, iri: &str) -> Option<Id> {
        if !iri.starts_with("http://conceptnet.io/") {
            return None;
        }
        let node = node_names(iri)
            .iter()
            .skip(1)
            .find_map(|name| self.graph.node_id(name));
        if let Some(v) = node {
            return Some(Id::Node(v));
        }
        relation_names(iri)
            .iter()
            .skip(1)
            .find_map(|name| self.graph.relation_id(name))
            .map(|r| self.relation_term(r))
    }
}

/// An id the matcher's answers carry (`NODE_ID_IRI` + decimal).
fn parse_id(iri: &str) -> Option<Id> {
    if let Some(n) = iri.strip_prefix(NODE_ID_IRI) {
        return n.parse().ok().map(Id::Node);
    }
    iri.strip_prefix(RELATION_ID_IRI)?
        .parse()
        .ok()
        .map(Id::Relation)
}

/// Relation ids in matcher answers are turned into their term form on the way in.
pub(crate) fn canonical_relation(d: View<'_>, r: LabelId) -> Id {
    d.relation_term(r)
}

impl From<Infallible> for Interrupted {
    fn from(e: Infallible) -> Self {
        match e {}
    }
}
