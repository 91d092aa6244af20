//! The native evaluator: the algebra over rows of `u32` ids (a node, a relation, or a value the
//! query computed, interned), never terms until the answer leaves. It takes the queries whose
//! every construct it knows (`plan.rs` decides, once, before anything runs) and answers them with
//! the matcher for basic graph patterns of two or more triples, CSR lookups for one triple (per
//! bound row inside a join: an index nested loop), hash joins on id keys, per-node memoised
//! expressions (`expr.rs`), traversals for property paths (`path.rs`) and grouping on id keys
//! (`group.rs`). Anything else stays with spareval, which answers the same text the same way:
//! the differential tests hold the two side by side.

mod exec;
mod expr;
mod group;
mod path;
mod plan;

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Instant;

use gpsense_graph::{LabelId, NodeId};
use gpsense_runtime::MatchOptions;
use oxrdf::{Literal, NamedNode, Term, Variable};
use spargebra::Query;

use crate::bgp::MatcherUse;
use crate::dataset::{Id, View};
use crate::limits::Watch;
use crate::{Answer, Matching, SparqlError};

pub(crate) use plan::{restricted_predicate, Plan};

/// An unbound cell.
pub(crate) const UNBOUND: u32 = u32::MAX;

/// A value the query computed (or named) that is no node or relation of the graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Computed {
    /// A simple literal (`xsd:string`).
    Str(Arc<str>),
    Int(i64),
    Bool(bool),
    /// An IRI the graph lacks.
    Iri(Arc<str>),
    /// Any other term (only where no expression looks at it: `plan.rs` sees to that).
    Other(Term),
}

/// What an id stands for.
pub(crate) enum Decoded<'a> {
    Node(NodeId),
    Relation(LabelId),
    Computed(&'a Computed),
}

/// Ids: nodes first, then relations without a node of their IRI, then the interned values.
pub(crate) struct Terms {
    nodes: u32,
    relations: u32,
    values: Vec<Computed>,
    index: HashMap<Computed, u32, Fx>,
}

impl Terms {
    fn new(view: View<'_>) -> Option<Terms> {
        let nodes = u32::try_from(view.graph.node_count()).ok()?;
        let relations = u32::try_from(view.graph.relation_count()).ok()?;
        // Room for computed values below `UNBOUND`.
        (u64::from(nodes) + u64::from(relations) < u64::from(u32::MAX / 2)).then(|| Terms {
            nodes,
            relations,
            values: Vec::new(),
            index: HashMap::default(),
        })
    }

    pub fn encode(&mut self, id: Id) -> u32 {
        match id {
            Id::Node(v) => v,
            Id::Relation(r) => self.nodes + u32::from(r),
            Id::Other(Term::NamedNode(n)) => self.intern(Computed::Iri(n.as_str().into())),
            Id::Other(Term::Literal(l)) => self.intern(literal_value(l)),
            Id::Other(t) => self.intern(Computed::Other(t)),
        }
    }

    pub fn intern(&mut self, c: Computed) -> u32 {
        if let Some(&i) = self.index.get(&c) {
            return i;
        }
        let i = self.nodes + self.relations + self.values.len() as u32;
        self.values.push(c.clone());
        self.index.insert(c, i);
        i
    }

    pub fn decode(&self, id: u32) -> Decoded<'_> {
        if id < self.nodes {
            Decoded::Node(id)
        } else if id < self.nodes + self.relations {
            Decoded::Relation((id - self.nodes) as LabelId)
        } else {
            Decoded::Computed(&self.values[(id - self.nodes - self.relations) as usize])
        }
    }

    pub fn is_node(&self, id: u32) -> bool {
        id < self.nodes
    }

    pub fn is_relation(&self, id: u32) -> bool {
        (self.nodes..self.nodes + self.relations).contains(&id)
    }

    fn term(&self, view: View<'_>, id: u32) -> Term {
        match self.decode(id) {
            // Spelled out once per node (a literal node is spelled its own way).
            Decoded::Node(v) if !view.graph.has_literal_nodes() => match view.node_text(v) {
                (true, label) => oxrdf::BlankNode::new_unchecked(label).into(),
                (false, iri) => NamedNode::new_unchecked(iri).into(),
            },
            Decoded::Node(v) => view.node_term(v),
            Decoded::Relation(r) => view.relation_iri(r),
            Decoded::Computed(c) => match c {
                Computed::Str(s) => Literal::new_simple_literal(s.as_ref()).into(),
                Computed::Int(i) => Literal::from(*i).into(),
                Computed::Bool(b) => Literal::from(*b).into(),
                Computed::Iri(s) => NamedNode::new_unchecked(s.as_ref()).into(),
                Computed::Other(t) => t.clone(),
            },
        }
    }
}

/// A literal as the value expressions hold: a simple literal, or an integer or boolean in its
/// canonical form (`"01"^^xsd:integer` is another term than `1`: kept opaque).
fn literal_value(l: Literal) -> Computed {
    use oxrdf::vocab::xsd;
    let (value, datatype) = (l.value(), l.datatype());
    if l.language().is_some() {
        return Computed::Other(l.into());
    }
    if datatype == xsd::STRING {
        return Computed::Str(value.into());
    }
    if datatype == xsd::INTEGER {
        if let Ok(i) = value.parse::<i64>() {
            if i.to_string() == value {
                return Computed::Int(i);
            }
        }
    }
    if datatype == xsd::BOOLEAN && matches!(value, "true" | "false") {
        return Computed::Bool(value == "true");
    }
    Computed::Other(l.into())
}

/// A fast hasher for id keys (FxHash's multiply-rotate).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes at a time: interned strings (a GROUP_CONCAT) can be long.
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

impl FxHasher {
    fn add(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

pub(crate) type Fx = BuildHasherDefault<FxHasher>;
pub(crate) type FxMap<K, V> = HashMap<K, V, Fx>;

/// Rows of a fixed width, row-major.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    pub width: usize,
    pub rows: usize,
    pub cells: Vec<u32>,
}

impl Table {
    pub fn new(width: usize) -> Table {
        Table {
            width,
            rows: 0,
            cells: Vec::new(),
        }
    }

    pub fn row(&self, i: usize) -> &[u32] {
        &self.cells[i * self.width..(i + 1) * self.width]
    }

    pub fn push(&mut self, row: &[u32]) {
        self.cells.extend_from_slice(row);
        self.rows += 1;
    }

    /// Whether column `c` is bound in every row.
    pub fn always_bound(&self, c: usize) -> bool {
        (0..self.rows).all(|i| self.cells[i * self.width + c] != UNBOUND)
    }
}

/// What one native evaluation holds: the graph, the interned values, the limits.
pub(crate) struct Ctx<'a, 'g, M: Matching + ?Sized> {
    pub matcher: &'g M,
    pub view: View<'g>,
    pub options: &'a MatchOptions,
    pub deadline: Option<Instant>,
    pub watch: Arc<Watch>,
    pub terms: RefCell<Terms>,
    pub used: RefCell<MatcherUse>,
    /// Relation `r`'s id in rows (its node's when the graph has a node of its IRI).
    pub relation_ids: Vec<u32>,
}

impl<M: Matching + ?Sized> Ctx<'_, '_, M> {
    pub fn tick(&self) -> Result<(), SparqlError> {
        self.watch.tick().map_err(crate::interrupted)
    }
}

/// The plan of `query` when the native evaluator takes all of it.
pub(crate) fn plan(query: &Query, view: View<'_>) -> Option<Plan> {
    let (Query::Select { pattern, .. } | Query::Ask { pattern, .. }) = query else {
        return None;
    };
    let mut terms = Terms::new(view)?;
    plan::plan(pattern, view, &mut terms).map(|mut p| {
        p.terms = Some(terms);
        p
    })
}

/// Evaluates a planned query; `Ok(None)` when the matcher declined a pattern (then spareval
/// answers the query: nothing has been handed out yet).
pub(crate) fn evaluate<'g, M: Matching + ?Sized>(
    mut plan: Plan,
    ask: bool,
    matcher: &'g M,
    view: View<'g>,
    options: &MatchOptions,
    deadline: Option<Instant>,
    watch: Arc<Watch>,
) -> Result<Option<(Answer<'g>, MatcherUse)>, SparqlError> {
    let Some(mut terms) = plan.terms.take() else {
        return Ok(None);
    };
    let relation_ids = path::relation_ids(view, &mut terms);
    let ctx = Ctx {
        relation_ids,
        matcher,
        view,
        options,
        deadline,
        watch: Arc::clone(&watch),
        terms: RefCell::new(terms),
        used: RefCell::new(MatcherUse::default()),
    };
    let table = match exec::run(&ctx, &plan.root, &exec::Seeds::default())? {
        Some(t) => t,
        None => return Ok(None),
    };
    let mut used = ctx.used.into_inner();
    used.native = true;
    used.unknown = std::mem::take(&mut plan.unknown);
    if ask {
        return Ok(Some((Answer::Boolean(table.rows > 0), used)));
    }
    let terms = ctx.terms.into_inner();
    let variables: Vec<Variable> = plan.root.vars.clone();
    let width = table.width;
    let rows = (0..table.rows).map(move |i| {
        watch.tick().map_err(crate::interrupted)?;
        Ok(table.cells[i * width..(i + 1) * width]
            .iter()
            .map(|&c| (c != UNBOUND).then(|| terms.term(view, c)))
            .collect())
    });
    Ok(Some((
        Answer::Solutions {
            variables,
            rows: Box::new(rows),
        },
        used,
    )))
}
