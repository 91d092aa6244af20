//! Node and relation names as RDF terms: the kind comes from `gpsense_graph::rdf::term_kind` (an
//! IRI, a literal in N-Triples form, a blank node, or a plain name, served as a simple literal).

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use gpsense_graph::rdf::{term_kind, TermKind};
use gpsense_graph::KnowledgeGraph;

use gpsense_graph::rdf::{literal, Term};

/// Each name's kind, found on first use and kept: `term_kind` parses the name, which is too slow
/// to repeat for every cell of every answer, and computing all kinds at start would cost seconds
/// on a large RDF graph. One byte per node.
pub struct TermKinds {
    /// 0: not known yet; else `code(kind)`.
    nodes: Vec<AtomicU8>,
    relations: Vec<TermKind>,
}

impl TermKinds {
    pub fn new(g: &KnowledgeGraph) -> Self {
        TermKinds {
            nodes: (0..g.node_count()).map(|_| AtomicU8::new(0)).collect(),
            relations: (0..g.relation_count())
                .map(|r| term_kind(g.relation_name(r as u16)))
                .collect(),
        }
    }

    /// The term of node `id` (or of relation `id`, for an edge-variable column).
    pub fn term<'g>(&self, g: &'g KnowledgeGraph, id: u32, relation: bool) -> Term<'g> {
        if relation {
            let name = g.relation_name(id as u16);
            // A predicate is an IRI in RDF; any other relation name is served as a literal.
            return match self.relations.get(id as usize) {
                Some(TermKind::Iri) => Term::Iri(name),
                _ => Term::plain(name),
            };
        }
        let name = g.node_name(id);
        term_of(name, self.node_kind(name, id))
    }

    fn node_kind(&self, name: &str, id: u32) -> TermKind {
        let Some(slot) = self.nodes.get(id as usize) else {
            return term_kind(name);
        };
        match decode(slot.load(Relaxed)) {
            Some(kind) => kind,
            None => {
                // Two threads may both compute it: the same value, stored twice.
                let kind = term_kind(name);
                slot.store(code(kind), Relaxed);
                kind
            }
        }
    }
}

fn code(kind: TermKind) -> u8 {
    match kind {
        TermKind::Iri => 1,
        TermKind::Literal => 2,
        TermKind::BlankNode => 3,
        TermKind::Plain => 4,
    }
}

fn decode(code: u8) -> Option<TermKind> {
    Some(match code {
        1 => TermKind::Iri,
        2 => TermKind::Literal,
        3 => TermKind::BlankNode,
        4 => TermKind::Plain,
        _ => return None,
    })
}

/// The term a name of a known kind stands for.
pub fn term_of(name: &str, kind: TermKind) -> Term<'_> {
    match kind {
        TermKind::Iri => Term::Iri(name),
        TermKind::BlankNode => Term::Blank(name.strip_prefix("_:").unwrap_or(name)),
        // `term_kind` checked the form; should parsing fail all the same, the name stays readable.
        TermKind::Literal => literal(name).unwrap_or(Term::plain(name)),
        TermKind::Plain => Term::plain(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_terms() {
        assert_eq!(
            term_of("http://x/a", TermKind::Iri),
            Term::Iri("http://x/a")
        );
        assert_eq!(term_of("_:b1", TermKind::BlankNode), Term::Blank("b1"));
        assert_eq!(term_of("dog", TermKind::Plain), Term::plain("dog"));
        assert_eq!(term_of("\"open", TermKind::Literal), Term::plain("\"open"));
        for kind in [
            TermKind::Iri,
            TermKind::Literal,
            TermKind::BlankNode,
            TermKind::Plain,
        ] {
            assert_eq!(decode(code(kind)), Some(kind));
        }
        assert_eq!(decode(0), None);
    }
}
