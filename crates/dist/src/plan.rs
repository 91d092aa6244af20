//! The distributed join's plan: a binding order of the query nodes and, per level, how a partial
//! match proposes the next node's candidates and what the candidate's owner checks.
//!
//! Every worker computes the same plan from the same query and the replicated [`Vocab`], so no plan
//! is ever sent. The order is BiGJoin's: one global order of the query nodes, each (after the first
//! of its component) joined to an earlier one; the choice among a level's proposers is made per
//! partial match, from counts the match carries.

use gpsense_kernels::{Dir, NONE};
use gpsense_planner::{EdgeLabel, NodeKind, Plan, Projected, QueryGraph};
use gpsense_runtime::layout::{DataShape, FilterSpec, Layout};
use gpsense_runtime::Semantics;

use crate::{DistError, Vocab};

/// A bound neighbour that can propose a level's candidates: its neighbours over one query edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposer {
    /// The bound node's slot.
    pub slot: usize,
    /// Direction of the query edge seen from the bound node.
    pub dir: Dir,
    /// Relation (`NONE`: a relation variable).
    pub label: u32,
    /// The edge variable of a variable edge (its binding, when the match has one, narrows the list).
    pub edge_var: Option<usize>,
    /// Index of the count carried in the partial match: the length of that list.
    pub count: usize,
}

/// A query edge between the level's node and an earlier one (or a self-loop), checked at the
/// candidate's owner, in the candidate's own lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The other endpoint's slot; `None` for a self-loop.
    pub other: Option<usize>,
    /// Direction seen from the candidate.
    pub dir: Dir,
    pub label: EdgeLabel,
}

/// A count the candidate's owner computes when it binds the node, for a later level's proposer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carry {
    pub count: usize,
    pub dir: Dir,
    /// `NONE`: every relation.
    pub label: u32,
}

/// One level of the join: binds query node `node` into slot `slot`.
#[derive(Clone, Debug)]
pub struct Level {
    pub node: usize,
    /// The data nodes a concept node may take (empty for a variable).
    pub domain: Vec<u32>,
    pub proposers: Vec<Proposer>,
    pub checks: Vec<Check>,
    pub carries: Vec<Carry>,
    pub filter: FilterSpec,
}

/// The plan every worker runs.
#[derive(Clone, Debug)]
pub struct DistPlan {
    pub order: Vec<usize>,
    pub slot_of: Vec<usize>,
    /// Query nodes.
    pub nodes: usize,
    pub edge_variables: usize,
    /// Carried counts, after the node and edge-variable slots.
    pub counts: usize,
    pub levels: Vec<Level>,
    pub semantics: Semantics,
    /// Slots of the projected columns, and whether each is an edge variable.
    pub columns: Vec<(usize, bool)>,
}

impl DistPlan {
    /// Node slots, edge-variable slots, then carried counts.
    pub fn row_width(&self) -> usize {
        self.nodes + self.edge_variables + self.counts
    }

    /// Slot of edge variable `i`.
    pub fn edge_slot(&self, i: usize) -> usize {
        self.nodes + i
    }

    pub fn count_slot(&self, c: usize) -> usize {
        self.nodes + self.edge_variables + c
    }

    pub fn new(q: &QueryGraph, semantics: Semantics, vocab: &Vocab) -> Result<Self, DistError> {
        let order = order(q, vocab);
        let n = q.nodes.len();
        let plan = Plan {
            order: order.clone(),
            components: std::iter::once(0..n).collect(), // one component: the join covers them all
            rationale: Vec::new(),
        };
        let shape = DataShape {
            node_labels: vocab.node_labels,
            symmetric: vocab.symmetric,
        };
        let layout = Layout::filters(q, &plan, semantics, shape)?;
        let mut slot_of = vec![0; n];
        for (s, &u) in order.iter().enumerate() {
            slot_of[u] = s;
        }
        let mut levels: Vec<Level> = order
            .iter()
            .map(|&u| Level {
                node: u,
                domain: q.concept_nodes(u).map(<[u32]>::to_vec).unwrap_or_default(),
                proposers: Vec::new(),
                checks: Vec::new(),
                carries: Vec::new(),
                filter: layout.filters[u].clone(),
            })
            .collect();
        let mut counts = 0;
        for e in &q.edges {
            let (s, t) = (slot_of[e.source], slot_of[e.target]);
            let label = Layout::label_of(e.label);
            let edge_var = match e.label {
                EdgeLabel::Variable(i) => Some(i),
                EdgeLabel::Fixed(_) => None,
            };
            if s == t {
                levels[s].checks.push(Check {
                    other: None,
                    dir: Dir::Out,
                    label: e.label,
                });
                continue;
            }
            // The later endpoint checks the edge; the earlier one carries its count and proposes.
            let (early, late, dir_from_early) = if s < t {
                (s, t, Dir::Out)
            } else {
                (t, s, Dir::In)
            };
            levels[late].checks.push(Check {
                other: Some(early),
                dir: dir_from_early.reverse(),
                label: e.label,
            });
            levels[early].carries.push(Carry {
                count: counts,
                dir: dir_from_early,
                label,
            });
            levels[late].proposers.push(Proposer {
                slot: early,
                dir: dir_from_early,
                label,
                edge_var,
                count: counts,
            });
            counts += 1;
        }
        let columns = q
            .projection
            .iter()
            .map(|p| match *p {
                Projected::Node(u) => (slot_of[u], false),
                Projected::Edge(i) => (n + i, true),
            })
            .collect();
        Ok(DistPlan {
            order,
            slot_of,
            nodes: n,
            edge_variables: q.edge_variables.len(),
            counts,
            levels,
            semantics,
            columns,
        })
    }
}

/// Estimated candidates of `u` before anything is bound: a concept's nodes, a label's frequency, or
/// the fewest distinct endpoints of a relation at it.
fn estimate(q: &QueryGraph, vocab: &Vocab, u: usize) -> u64 {
    if let Some(nodes) = q.concept_nodes(u) {
        return nodes.len() as u64;
    }
    let mut best = u64::from(vocab.node_count);
    if let Some(l) = q.nodes[u].label {
        best = best.min(vocab.label_frequency.get(l as usize).copied().unwrap_or(0));
    }
    for e in &q.edges {
        if let EdgeLabel::Fixed(r) = e.label {
            let r = r as usize;
            if e.source == u {
                best = best.min(vocab.relation_sources.get(r).copied().unwrap_or(0));
            }
            if e.target == u {
                best = best.min(vocab.relation_targets.get(r).copied().unwrap_or(0));
            }
        }
    }
    best
}

/// The binding order: the node with the fewest estimated candidates first, then, while a node is
/// joined to the bound ones, concepts first, then the most edges back, then the smallest estimate;
/// a new component starts at its smallest estimate. Deterministic (ties by node index).
pub fn order(q: &QueryGraph, vocab: &Vocab) -> Vec<usize> {
    let n = q.nodes.len();
    let est: Vec<u64> = (0..n).map(|u| estimate(q, vocab, u)).collect();
    let mut bound = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let back = |u: usize| {
            q.edges
                .iter()
                .filter(|e| {
                    (e.source == u && e.target != u && bound[e.target])
                        || (e.target == u && e.source != u && bound[e.source])
                })
                .count()
        };
        let next = (0..n)
            .filter(|&u| !bound[u])
            .map(|u| {
                let joined = back(u);
                let concept = matches!(
                    q.nodes[u].kind,
                    NodeKind::Concept(_) | NodeKind::ConceptSet(_)
                );
                // Larger is better: joined first, then concept, edges back, fewer candidates.
                (
                    joined > 0,
                    concept,
                    joined,
                    std::cmp::Reverse(est[u]),
                    std::cmp::Reverse(u),
                )
            })
            .max()
            .map(|k| k.4 .0);
        let Some(u) = next else { break };
        bound[u] = true;
        order.push(u);
    }
    order
}

/// The relation a proposer or check reads for a match: its fixed relation, the match's binding of
/// its edge variable, or `NONE` (any relation) while the variable is unbound.
pub fn bound_label(label: u32, edge_var: Option<usize>, row: &[u32], plan: &DistPlan) -> u32 {
    match edge_var {
        Some(i) if label == NONE => row[plan.edge_slot(i)],
        _ => label,
    }
}
