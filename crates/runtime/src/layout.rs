//! From a query graph and its plan to what the kernels take: per query node a filter and its
//! incident edges, the forward filtering steps, and per plan position a join step (its backward
//! edges as [`Check`]s). Also the row layout: one slot per query node in plan order, then one per
//! edge variable.

use gpsense_kernels::filter::{Incident, Need, NodeFilter};
use gpsense_kernels::join::{Check, MAX_CHECKS, MAX_EDGE_VARIABLES};
use gpsense_kernels::{Dir, NONE};
use gpsense_planner::{EdgeLabel, NodeKind, Plan, QueryEdge, QueryGraph};

use crate::{MatchError, Semantics};

/// The most query nodes a row can hold.
pub const MAX_QUERY_NODES: usize = 64;

/// A node label no data node has (graphs have far fewer than `u32::MAX - 1` labels).
const UNMATCHABLE_LABEL: u32 = NONE - 1;

/// Owned data behind a [`NodeFilter`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterSpec {
    pub fixed: u32,
    /// The data nodes a concept set may take, ascending (empty: no such restriction). Kept beside
    /// the kernel filter, not in it: engines seed the node's candidates with it instead.
    pub domain: Vec<u32>,
    pub label: u32,
    pub degrees: Vec<Need>,
    pub neighbour_labels: Vec<Need>,
    pub self_loops: Vec<u32>,
}

impl FilterSpec {
    pub fn view(&self) -> NodeFilter<'_> {
        NodeFilter {
            fixed: self.fixed,
            label: self.label,
            degrees: &self.degrees,
            neighbour_labels: &self.neighbour_labels,
            self_loops: &self.self_loops,
        }
    }
}

/// A forward filtering step: the candidates of `from` mark those of `to` over `dir`/`label`.
#[derive(Clone, Copy, Debug)]
pub struct NeighbourStep {
    /// The query edge.
    pub edge: usize,
    pub from: usize,
    pub to: usize,
    pub dir: Dir,
    pub label: u32,
}

/// One position of the join: query node `node` fills slot `slot`.
#[derive(Clone, Debug)]
pub struct JoinStep {
    pub node: usize,
    pub slot: u32,
    /// Backward edges and self-loops; `Check::slot` is the earlier endpoint's slot.
    pub checks: Vec<Check>,
    /// Indexes into `checks` usable as pivot: not self-loops, with a relation known when the step runs
    /// (fixed, or a variable bound earlier). Empty when only unbound variable edges lead back.
    pub fixed_pivots: Vec<u32>,
    /// A variable-edge check to scan when `fixed_pivots` is empty; `NONE` when the node starts a
    /// connected component.
    pub variable_pivot: u32,
    /// For each check, the query edge it came from.
    pub edge_of_check: Vec<usize>,
}

/// Everything derived from (query, plan, semantics) before any data is touched.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub order: Vec<usize>,
    /// Slot of each query node.
    pub slot_of: Vec<u32>,
    pub width: usize,
    pub nodes: usize,
    pub filters: Vec<FilterSpec>,
    pub incident: Vec<Vec<Incident>>,
    pub neighbour_steps: Vec<NeighbourStep>,
    pub steps: Vec<JoinStep>,
    /// Query edges (self-loops included).
    pub edge_count: usize,
}

impl crate::spares::Room for Layout {
    fn room_bytes(&self) -> usize {
        use crate::spares::bytes_of;
        let specs: usize = self
            .filters
            .iter()
            .map(|f| {
                bytes_of(&f.domain)
                    + bytes_of(&f.degrees)
                    + bytes_of(&f.neighbour_labels)
                    + bytes_of(&f.self_loops)
            })
            .sum();
        let incident: usize = self.incident.iter().map(bytes_of).sum();
        specs + incident + bytes_of(&self.filters) + bytes_of(&self.incident)
    }
}

/// What the data graph's shape lets the filters assume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataShape {
    /// Nodes carry labels: neighbour-label needs apply.
    pub node_labels: bool,
    /// Every edge has its reverse with the same relation (the suites' undirected graphs, stored
    /// both ways), so a node's out- and in-lists are equal: its needs are checked once, over its
    /// query neighbours in both directions (half the reads, and under iso stronger counts).
    pub symmetric: bool,
}

impl DataShape {
    pub fn of(g: &gpsense_kernels::GraphView) -> Self {
        let (o, i) = (&g.out, &g.inc);
        DataShape {
            node_labels: !g.node_labels.is_empty(),
            symmetric: o.offsets == i.offsets && o.targets == i.targets && o.labels == i.labels,
        }
    }
}

impl Layout {
    pub fn new(
        q: &QueryGraph,
        plan: &Plan,
        semantics: Semantics,
        shape: DataShape,
    ) -> Result<Self, MatchError> {
        Self::build(q, plan, semantics, shape, true)
    }

    /// The filters and incident edges only, without the GPU-shaped engines' filtering and join
    /// steps (the dfs engine's candidate space needs no more).
    pub fn filters(
        q: &QueryGraph,
        plan: &Plan,
        semantics: Semantics,
        shape: DataShape,
    ) -> Result<Self, MatchError> {
        Self::build(q, plan, semantics, shape, false)
    }

    /// [`Layout::filters`] into `self`, reusing its vectors: an engine keeps one between queries
    /// (a 16-node query's layout made some fifty small allocations, a fifth of its time).
    pub fn refill_filters(
        &mut self,
        q: &QueryGraph,
        plan: &Plan,
        semantics: Semantics,
        shape: DataShape,
    ) -> Result<(), MatchError> {
        self.build_into(q, plan, semantics, shape, false)
    }

    fn build(
        q: &QueryGraph,
        plan: &Plan,
        semantics: Semantics,
        shape: DataShape,
        joins: bool,
    ) -> Result<Self, MatchError> {
        let mut layout = Layout::default();
        layout.build_into(q, plan, semantics, shape, joins)?;
        Ok(layout)
    }

    fn build_into(
        &mut self,
        q: &QueryGraph,
        plan: &Plan,
        semantics: Semantics,
        shape: DataShape,
        joins: bool,
    ) -> Result<(), MatchError> {
        check_size(q)?;
        let n = q.nodes.len();
        if n == 0 {
            // The joins fill at least one slot; a pattern always has a triple.
            return Err(MatchError::Plan("the query has no nodes".into()));
        }
        if plan.order.len() != n {
            return Err(MatchError::Plan(format!(
                "{} nodes planned for a query of {n}",
                plan.order.len()
            )));
        }
        self.slot_of.clear();
        self.slot_of.resize(n, NONE);
        for (slot, &u) in plan.order.iter().enumerate() {
            self.slot_of[u] = slot as u32;
        }
        let mut scratch = SpecScratch::default();
        let (at, of) = edges_at(q);
        let edges = |u: usize| of[at[u]..at[u + 1]].iter().map(|&i| &q.edges[i]);
        self.filters.resize_with(n, FilterSpec::default);
        for (u, spec) in self.filters.iter_mut().enumerate() {
            filter_spec(spec, q, u, edges(u), semantics, shape, &mut scratch);
        }
        self.incident.resize_with(n, Vec::new);
        for (u, list) in self.incident.iter_mut().enumerate() {
            incident(list, u, edges(u));
        }
        (self.neighbour_steps, self.steps) = if joins {
            (
                neighbour_steps(q, &self.slot_of),
                join_steps(q, plan, &self.slot_of)?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        self.order.clear();
        self.order.extend_from_slice(&plan.order);
        self.width = n + q.edge_variables.len();
        self.nodes = n;
        self.edge_count = q.edges.len();
        Ok(())
    }

    /// The relation id stored for a fixed label, or `NONE` for a variable edge.
    pub fn label_of(label: EdgeLabel) -> u32 {
        match label {
            EdgeLabel::Fixed(r) => r as u32,
            EdgeLabel::Variable(_) => NONE,
        }
    }
}

fn check_size(q: &QueryGraph) -> Result<(), MatchError> {
    if q.nodes.len() > MAX_QUERY_NODES {
        return Err(MatchError::QueryTooLarge {
            what: "nodes",
            found: q.nodes.len(),
            limit: MAX_QUERY_NODES,
        });
    }
    if q.edge_variables.len() > MAX_EDGE_VARIABLES {
        return Err(MatchError::QueryTooLarge {
            what: "edge variables",
            found: q.edge_variables.len(),
            limit: MAX_EDGE_VARIABLES,
        });
    }
    // One pass over the edges (a pass per node was a tenth of a 16-node query's layout).
    let mut degree = [0usize; MAX_QUERY_NODES];
    for e in &q.edges {
        if let Some(d) = degree.get_mut(e.source) {
            *d += 1;
        }
        if e.target != e.source {
            if let Some(d) = degree.get_mut(e.target) {
                *d += 1;
            }
        }
    }
    match degree.iter().copied().max() {
        Some(found) if found > MAX_CHECKS => Err(MatchError::QueryTooLarge {
            what: "edges at one node",
            found,
            limit: MAX_CHECKS,
        }),
        _ => Ok(()),
    }
}

/// Per query node its edges (a self-loop once), in query order: `of[at[u]..at[u + 1]]`, so that each
/// node's filter reads its own edges, not all of them (O(E) in all, not O(V · E)).
fn edges_at(q: &QueryGraph) -> (Vec<usize>, Vec<usize>) {
    let n = q.nodes.len();
    let mut at = vec![0usize; n + 1];
    for e in &q.edges {
        at[e.source + 1] += 1;
        if e.target != e.source {
            at[e.target + 1] += 1;
        }
    }
    for u in 0..n {
        at[u + 1] += at[u];
    }
    let mut next = at.clone();
    let mut of = vec![0usize; at[n]];
    for (i, e) in q.edges.iter().enumerate() {
        of[next[e.source]] = i;
        next[e.source] += 1;
        if e.target != e.source {
            of[next[e.target]] = i;
            next[e.target] += 1;
        }
    }
    (at, of)
}

/// Room `filter_spec` reuses from node to node.
#[derive(Default)]
struct SpecScratch {
    /// Per fixed relation, the neighbours over it as a bit set.
    fixed: Vec<(u32, u64)>,
    labels: Vec<u32>,
}

/// Necessary conditions on a candidate of `u`. Under iso, distinct query neighbours need distinct data
/// neighbours, so counts are exact lower bounds; under hom they only need to exist.
fn filter_spec<'q>(
    spec: &mut FilterSpec,
    q: &QueryGraph,
    u: usize,
    edges: impl Iterator<Item = &'q QueryEdge> + Clone,
    semantics: Semantics,
    shape: DataShape,
    scratch: &mut SpecScratch,
) {
    let cap = |count: usize| {
        if semantics == Semantics::Iso {
            count as u32
        } else {
            count.min(1) as u32
        }
    };
    spec.fixed = match q.nodes[u].kind {
        NodeKind::Concept(v) => v,
        NodeKind::ConceptSet(_) | NodeKind::Variable => NONE,
    };
    spec.domain.clear();
    if let NodeKind::ConceptSet(i) = q.nodes[u].kind {
        spec.domain.extend_from_slice(&q.concept_sets[i]);
    }
    spec.label = match q.nodes[u].label {
        None => NONE,
        // The planner's `ABSENT_LABEL` (equal to `NONE`) is a label the data lacks: it must match
        // no node, not every node as `NONE` would.
        Some(NONE) => UNMATCHABLE_LABEL,
        Some(l) => l,
    };
    spec.degrees.clear();
    spec.neighbour_labels.clear();
    let dirs: &[Dir] = if shape.symmetric {
        &[Dir::Out]
    } else {
        &[Dir::Out, Dir::In]
    };
    for &dir in dirs {
        let ends = |e: &gpsense_planner::QueryEdge| match dir {
            _ if shape.symmetric => (e.source == u)
                .then_some(e.target)
                .or((e.target == u).then_some(e.source)),
            Dir::Out => (e.source == u).then_some(e.target),
            Dir::In => (e.target == u).then_some(e.source),
        };
        // Neighbours as bit sets (a query has at most 64 nodes), all and per fixed relation: one
        // pass over the node's edges, no sorting of pairs.
        let mut any = 0u64;
        let fixed = &mut scratch.fixed;
        fixed.clear();
        for e in edges.clone() {
            let Some(w) = ends(e) else { continue };
            any |= 1 << w;
            let label = Layout::label_of(e.label);
            if label == NONE {
                continue;
            }
            match fixed.iter_mut().find(|f| f.0 == label) {
                Some(f) => f.1 |= 1 << w,
                None => fixed.push((label, 1 << w)),
            }
        }
        if any != 0 {
            spec.degrees.push(Need {
                dir,
                label: NONE,
                count: cap(any.count_ones() as usize),
            });
        }
        fixed.sort_unstable_by_key(|f| f.0);
        for &(label, set) in fixed.iter() {
            spec.degrees.push(Need {
                dir,
                label,
                count: cap(set.count_ones() as usize),
            });
        }
        if semantics == Semantics::Iso && shape.node_labels {
            let labels = &mut scratch.labels;
            labels.clear();
            let mut rest = any;
            while rest != 0 {
                let w = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                if let Some(l) = q.nodes[w].label.filter(|&l| l != NONE) {
                    labels.push(l);
                }
            }
            labels.sort_unstable();
            for group in labels.chunk_by(|a, b| a == b) {
                spec.neighbour_labels.push(Need {
                    dir,
                    label: group[0],
                    count: group.len() as u32,
                });
            }
        }
    }
    spec.self_loops.clear();
    spec.self_loops.extend(
        edges
            .filter(|e| e.source == u && e.target == u)
            .map(|e| Layout::label_of(e.label)),
    );
}

/// The non-loop query edges at `u`, seen from `u`.
fn incident<'q>(out: &mut Vec<Incident>, u: usize, edges: impl Iterator<Item = &'q QueryEdge>) {
    out.clear();
    out.extend(edges.filter(|e| e.source != e.target).filter_map(|e| {
        let label = Layout::label_of(e.label);
        if e.source == u {
            Some(Incident {
                dir: Dir::Out,
                label,
                other: e.target as u32,
            })
        } else if e.target == u {
            Some(Incident {
                dir: Dir::In,
                label,
                other: e.source as u32,
            })
        } else {
            None
        }
    }));
}

/// Each non-loop query edge, oriented from its earlier endpoint in the plan to its later one.
fn neighbour_steps(q: &QueryGraph, slot_of: &[u32]) -> Vec<NeighbourStep> {
    let mut steps: Vec<NeighbourStep> = q
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.source != e.target)
        .map(|(edge, e)| {
            let label = Layout::label_of(e.label);
            if slot_of[e.source] < slot_of[e.target] {
                NeighbourStep {
                    edge,
                    from: e.source,
                    to: e.target,
                    dir: Dir::Out,
                    label,
                }
            } else {
                NeighbourStep {
                    edge,
                    from: e.target,
                    to: e.source,
                    dir: Dir::In,
                    label,
                }
            }
        })
        .collect();
    steps.sort_by_key(|s| (slot_of[s.from], slot_of[s.to]));
    steps
}

fn join_steps(q: &QueryGraph, plan: &Plan, slot_of: &[u32]) -> Result<Vec<JoinStep>, MatchError> {
    let n = q.nodes.len();
    let mut var_bound = vec![false; q.edge_variables.len()];
    let mut steps = Vec::with_capacity(n);
    for (slot, &y) in plan.order.iter().enumerate() {
        let mut step = JoinStep {
            node: y,
            slot: slot as u32,
            checks: Vec::new(),
            fixed_pivots: Vec::new(),
            variable_pivot: NONE,
            edge_of_check: Vec::new(),
        };
        for (ei, e) in q.edges.iter().enumerate() {
            let (other, dir) = if e.source == y && e.target == y {
                (None, Dir::Out)
            } else if e.target == y && slot_of[e.source] < slot as u32 {
                (Some(e.source), Dir::Out)
            } else if e.source == y && slot_of[e.target] < slot as u32 {
                (Some(e.target), Dir::In)
            } else {
                continue;
            };
            let (label, var) = match e.label {
                EdgeLabel::Fixed(r) => (r as u32, NONE),
                EdgeLabel::Variable(k) => (NONE, (n + k) as u32),
            };
            let check = Check {
                slot: other.map_or(NONE, |o| slot_of[o]),
                dir,
                label,
                var,
            };
            let index = step.checks.len() as u32;
            if other.is_some() {
                let known = label != NONE || var_bound[var as usize - n];
                if known {
                    step.fixed_pivots.push(index);
                } else if step.variable_pivot == NONE {
                    step.variable_pivot = index;
                }
            }
            step.checks.push(check);
            step.edge_of_check.push(ei);
        }
        for c in &step.checks {
            if c.var != NONE {
                var_bound[c.var as usize - n] = true;
            }
        }
        let starts_component = plan.components.iter().any(|r| r.start == slot);
        if starts_component != (step.fixed_pivots.is_empty() && step.variable_pivot == NONE) {
            return Err(MatchError::Plan(format!(
                "node at position {slot} is not connected as the plan says"
            )));
        }
        steps.push(step);
    }
    Ok(steps)
}
