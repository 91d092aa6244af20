//! Property paths as traversals of the CSR: a step follows out-lists (or in-lists, reversed),
//! `*` and `+` are searches with a visited set (a cycle ends them), `/` and `|` keep their
//! duplicates (they are a join and a union), `*`, `+` and `?` do not.

use gpsense_graph::LabelId;
use spargebra::algebra::PropertyPathExpression;

use super::{Decoded, FxMap, Terms};
use crate::dataset::View;

#[derive(Debug)]
pub(crate) enum Path {
    /// One edge of this relation (`None`: the IRI names no relation: no edge).
    Step(Option<LabelId>),
    Reverse(Box<Path>),
    Sequence(Box<Path>, Box<Path>),
    Alternative(Box<Path>, Box<Path>),
    ZeroOrMore(Box<Path>),
    OneOrMore(Box<Path>),
    ZeroOrOne(Box<Path>),
    /// Any edge whose relation is none of these.
    Negated(Vec<LabelId>),
}

pub(crate) fn compile(p: &PropertyPathExpression, view: View<'_>) -> Option<Path> {
    use PropertyPathExpression as P;
    let go = |p: &PropertyPathExpression| compile(p, view).map(Box::new);
    Some(match p {
        P::NamedNode(n) => Path::Step(relation(view, n)),
        P::Reverse(a) => Path::Reverse(go(a)?),
        P::Sequence(a, b) => Path::Sequence(go(a)?, go(b)?),
        P::Alternative(a, b) => Path::Alternative(go(a)?, go(b)?),
        P::ZeroOrMore(a) => Path::ZeroOrMore(go(a)?),
        P::OneOrMore(a) => Path::OneOrMore(go(a)?),
        P::ZeroOrOne(a) => Path::ZeroOrOne(go(a)?),
        P::NegatedPropertySet(list) => {
            Path::Negated(list.iter().filter_map(|n| relation(view, n)).collect())
        }
    })
}

fn relation(view: View<'_>, n: &oxrdf::NamedNode) -> Option<LabelId> {
    view.named(n.as_str()).and_then(|id| view.relation_of(&id))
}

impl Path {
    /// Whether the path matches the empty path (then every term reaches itself).
    pub fn nullable(&self) -> bool {
        match self {
            Path::ZeroOrMore(_) | Path::ZeroOrOne(_) => true,
            Path::Reverse(a) | Path::OneOrMore(a) => a.nullable(),
            Path::Sequence(a, b) => a.nullable() && b.nullable(),
            Path::Alternative(a, b) => a.nullable() || b.nullable(),
            Path::Step(_) | Path::Negated(_) => false,
        }
    }
}

/// Walks paths from one term at a time.
pub(crate) struct Walker<'w, 'g> {
    pub view: View<'g>,
    pub terms: &'w Terms,
}

impl Walker<'_, '_> {
    /// Appends the ends of `p` from `v` (forward) or its starts (backward), duplicates kept where
    /// the path keeps them.
    pub fn step(&self, p: &Path, v: u32, forward: bool, out: &mut Vec<u32>) {
        match p {
            Path::Step(r) => {
                if let (Some(r), Decoded::Node(v)) = (r, self.terms.decode(v)) {
                    let csr = if forward {
                        self.view.graph.out()
                    } else {
                        self.view.graph.inc()
                    };
                    out.extend_from_slice(&csr.targets()[csr.label_range(v, *r)]);
                }
            }
            Path::Negated(except) => {
                if let Decoded::Node(v) = self.terms.decode(v) {
                    let csr = if forward {
                        self.view.graph.out()
                    } else {
                        self.view.graph.inc()
                    };
                    for e in csr.range(v) {
                        if !except.contains(&csr.labels()[e]) {
                            out.push(csr.targets()[e]);
                        }
                    }
                }
            }
            Path::Reverse(a) => self.step(a, v, !forward, out),
            Path::Sequence(a, b) => {
                let (first, second) = if forward { (a, b) } else { (b, a) };
                let mut middle = Vec::new();
                self.step(first, v, forward, &mut middle);
                for m in middle {
                    self.step(second, m, forward, out);
                }
            }
            Path::Alternative(a, b) => {
                self.step(a, v, forward, out);
                self.step(b, v, forward, out);
            }
            Path::ZeroOrOne(a) => {
                let start = out.len();
                out.push(v);
                self.step(a, v, forward, out);
                dedup_tail(out, start);
            }
            Path::ZeroOrMore(a) => self.closure(a, v, forward, true, out),
            Path::OneOrMore(a) => self.closure(a, v, forward, false, out),
        }
    }

    /// Everything reachable from `v` by one or more steps of `p` (and `v` itself if `zero`).
    fn closure(&self, p: &Path, v: u32, forward: bool, zero: bool, out: &mut Vec<u32>) {
        let mut seen = FxMap::default();
        let mut frontier = Vec::new();
        if zero {
            seen.insert(v, ());
            out.push(v);
        }
        self.step(p, v, forward, &mut frontier);
        let mut next = Vec::new();
        while !frontier.is_empty() {
            for &w in &frontier {
                if seen.insert(w, ()).is_none() {
                    out.push(w);
                    self.step(p, w, forward, &mut next);
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            next.clear();
        }
    }
}

fn dedup_tail(out: &mut Vec<u32>, start: usize) {
    let mut seen = FxMap::default();
    let mut keep = start;
    for i in start..out.len() {
        let x = out[i];
        if seen.insert(x, ()).is_none() {
            out[keep] = x;
            keep += 1;
        }
    }
    out.truncate(keep);
}

/// A relation's id in rows.
pub(crate) fn relation_ids(view: View<'_>, terms: &mut Terms) -> Vec<u32> {
    (0..view.graph.relation_count())
        .map(|r| terms.encode(view.relation_term(r as LabelId)))
        .collect()
}
