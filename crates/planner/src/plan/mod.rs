//! Matching order: the `generate query plan` step of Algorithm 1 (paper section 4), with the
//! common-sense modification of section 6.
//!
//! Each connected component of the query graph is ordered on its own, so that every node after the
//! first of its component has an edge to an earlier node (the filtering phase always has a visited
//! neighbour to filter a node's candidates by):
//!
//! - A component with concept nodes starts at a concept (one candidate, the smallest possible set),
//!   choosing the concept whose incident query edges are most selective in the data. It then grows
//!   by concepts first (free filters), then by the node covering most unvisited edges (section 6),
//!   then by the smallest estimated candidate count.
//! - A component of variables only (labelled graphs, benchmark queries) uses the ranking
//!   `rank(u) = deg(u) / freq(label(u))` of section 4, highest first, and grows by the same rank
//!   among neighbours of the visited nodes.

mod stats;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::ops::Range;

use gpsense_graph::KnowledgeGraph;
use thiserror::Error;

use crate::query::{EdgeLabel, QueryGraph};

pub use stats::PlannerStats;

/// A matching order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Every query node exactly once.
    pub order: Vec<usize>,
    /// Ranges of `order`, one per connected component, in order. Within each, every node after the
    /// first has an edge to an earlier node of the same range.
    pub components: Vec<Range<usize>>,
    /// One line per entry of `order`: why that node comes there (for `--explain`); empty from
    /// [`plan_brief`].
    pub rationale: Vec<String>,
}

/// A plan that breaks one of the guarantees of [`Plan`] for a query graph.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid plan: {0}")]
pub struct InvalidPlan(pub String);

impl Plan {
    /// Checks the guarantees documented on the fields against `q`: every node exactly once, ranges
    /// that tile `order` and are exactly the connected components, each connected in order, and one
    /// rationale line per node (or none). O(V_q · E_q); for tests and debug assertions.
    pub fn validate(&self, q: &QueryGraph) -> Result<(), InvalidPlan> {
        let n = q.nodes.len();
        let fail = |m: String| Err(InvalidPlan(m));
        if self.order.len() != n || !(self.rationale.is_empty() || self.rationale.len() == n) {
            return fail(format!(
                "{} nodes but {} in order and {} rationale lines",
                n,
                self.order.len(),
                self.rationale.len()
            ));
        }
        let mut seen = vec![false; n];
        for &u in &self.order {
            if u >= n || std::mem::replace(&mut seen[u], true) {
                return fail(format!("node {u} out of range or repeated"));
            }
        }
        let mut next = 0;
        let mut planned = Vec::with_capacity(self.components.len());
        for range in &self.components {
            if range.start != next || range.end <= range.start || range.end > n {
                return fail(format!("component range {range:?} does not follow {next}"));
            }
            next = range.end;
            let nodes = &self.order[range.clone()];
            if let Some(u) = first_unjoined(q, nodes) {
                return fail(format!(
                    "{} has no edge to an earlier node",
                    q.nodes[u].name
                ));
            }
            let mut sorted = nodes.to_vec();
            sorted.sort_unstable();
            planned.push(sorted);
        }
        if next != n {
            return fail(format!("component ranges end at {next}, not {n}"));
        }
        let mut components = q.components();
        components.sort();
        planned.sort();
        if planned != components {
            return fail("component ranges are not the connected components".into());
        }
        Ok(())
    }
}

/// The first node of `nodes` after the first with no edge to an earlier one.
fn first_unjoined(q: &QueryGraph, nodes: &[usize]) -> Option<usize> {
    (1..nodes.len())
        .map(|k| nodes[k])
        .zip(1..)
        .find_map(|(u, k)| {
            let earlier = &nodes[..k];
            let joined = q.edges.iter().any(|e| {
                (e.source == u && earlier.contains(&e.target))
                    || (e.target == u && earlier.contains(&e.source))
            });
            (!joined).then_some(u)
        })
}

/// Plans `q` over `g`, computing the statistics on the way: O(V + E) of the data graph. When
/// answering several queries on one graph, build [`PlannerStats`] once and call [`plan_with`].
pub fn plan(q: &QueryGraph, g: &KnowledgeGraph) -> Plan {
    plan_with(q, g, &PlannerStats::new(g))
}

/// Plans `q` over `g` with precomputed `stats` (sections 4 and 6; see the module docs).
///
/// Each step scans the component's unvisited nodes and their incident edges, so a component of C
/// nodes and E_C edges costs O(C · (C + E_C) · log d), the log factor being a per-relation degree
/// lookup in the data CSR (only for edges at concept nodes): a few microseconds for queries of tens
/// of nodes (about 3 µs to compile and plan a ConceptNet query in a release build). Data ids out
/// of range for `g` (a query graph resolved against another graph) count as degree 0 rather than
/// panicking.
pub fn plan_with(q: &QueryGraph, g: &KnowledgeGraph, stats: &PlannerStats) -> Plan {
    plan_inner(q, g, stats, true)
}

/// [`plan_with`] without the rationale lines: the same order, with no strings formatted (a few
/// percent of a small query's whole answer time).
pub fn plan_brief(q: &QueryGraph, g: &KnowledgeGraph, stats: &PlannerStats) -> Plan {
    plan_inner(q, g, stats, false)
}

fn plan_inner(q: &QueryGraph, g: &KnowledgeGraph, stats: &PlannerStats, explain: bool) -> Plan {
    let mut planner = Planner::new(q, g, stats, explain);
    for component in q.components() {
        let start = planner.plan.order.len();
        if component.iter().any(|&u| q.nodes[u].is_concept()) {
            planner.common_sense_order(&component);
        } else {
            planner.ranked_order(&component);
        }
        let end = planner.plan.order.len();
        planner.plan.components.push(start..end);
    }
    planner.plan
}

/// One query edge seen from one of its endpoints.
#[derive(Clone, Copy)]
struct Incidence {
    edge: usize,
    other: usize,
    /// Whether the edge leaves this endpoint (this endpoint is the source).
    outgoing: bool,
}

struct Planner<'a> {
    q: &'a QueryGraph,
    g: &'a KnowledgeGraph,
    stats: &'a PlannerStats,
    /// Incident edges per query node, `incident[incident_at[u]..incident_at[u + 1]]`; a self-loop
    /// appears once, as outgoing.
    incident_at: Vec<usize>,
    incident: Vec<Incidence>,
    visited: Vec<bool>,
    /// Per node, its edges to visited nodes other than itself ([`Planner::links`]), kept up to
    /// date by [`Planner::visit`]: the frontier is read once per step, for every node.
    linked: Vec<u32>,
    /// `rank(u)`, filled for a component by [`Planner::ranked_order`] (a node's rank never changes).
    rank: Vec<f64>,
    /// Estimated candidates of each visited node, given the nodes visited before it.
    estimate: Vec<f64>,
    /// Whether to write the rationale.
    explain: bool,
    plan: Plan,
}

impl<'a> Planner<'a> {
    fn new(
        q: &'a QueryGraph,
        g: &'a KnowledgeGraph,
        stats: &'a PlannerStats,
        explain: bool,
    ) -> Self {
        let n = q.nodes.len();
        // Each node's edges in query order, placed by counting (a stable sort of the pairs was a
        // sixth of a 16-node query's plan).
        let mut incident_at = vec![0; n + 1];
        for e in &q.edges {
            incident_at[e.source + 1] += 1;
            if e.target != e.source {
                incident_at[e.target + 1] += 1;
            }
        }
        for u in 0..n {
            incident_at[u + 1] += incident_at[u];
        }
        let mut next = incident_at.clone();
        let placeholder = Incidence {
            edge: 0,
            other: 0,
            outgoing: true,
        };
        let mut incident = vec![placeholder; incident_at[n]];
        for (i, e) in q.edges.iter().enumerate() {
            incident[next[e.source]] = Incidence {
                edge: i,
                other: e.target,
                outgoing: true,
            };
            next[e.source] += 1;
            if e.target != e.source {
                incident[next[e.target]] = Incidence {
                    edge: i,
                    other: e.source,
                    outgoing: false,
                };
                next[e.target] += 1;
            }
        }
        Planner {
            q,
            g,
            stats,
            incident_at,
            incident,
            visited: vec![false; n],
            linked: vec![0; n],
            rank: Vec::new(),
            estimate: vec![f64::INFINITY; n],
            explain,
            plan: Plan {
                order: Vec::with_capacity(n),
                components: Vec::new(),
                rationale: Vec::new(),
            },
        }
    }

    fn incidence(&self, u: usize) -> &[Incidence] {
        &self.incident[self.incident_at[u]..self.incident_at[u + 1]]
    }

    fn name(&self, u: usize) -> &str {
        &self.q.nodes[u].name
    }

    /// Visits `u` next; `why` (called only when explaining, before the visit) says why.
    fn visit(&mut self, u: usize, why: impl FnOnce(&Self) -> String) {
        if self.explain {
            let line = format!(
                "{}. {}: {}",
                self.plan.order.len() + 1,
                self.name(u),
                why(self)
            );
            self.plan.rationale.push(line);
        }
        self.estimate[u] = self.estimate_given_visited(u);
        self.visited[u] = true;
        for k in self.incident_at[u]..self.incident_at[u + 1] {
            let w = self.incident[k].other;
            if w != u {
                self.linked[w] += 1;
            }
        }
        self.plan.order.push(u);
    }

    /// Unvisited nodes of `component` with an edge to a visited node.
    fn frontier<'c>(&'c self, component: &'c [usize]) -> impl Iterator<Item = usize> + 'c {
        component
            .iter()
            .copied()
            .filter(|&u| !self.visited[u] && self.links(u) > 0)
    }

    /// Edges from `u` to visited nodes other than `u`.
    fn links(&self, u: usize) -> usize {
        self.linked[u] as usize
    }

    /// Edges from `u` to unvisited nodes other than `u`: what visiting `u` next would cover.
    fn cover(&self, u: usize) -> usize {
        self.incidence(u)
            .iter()
            .filter(|i| i.other != u && !self.visited[i.other])
            .count()
    }

    /// Query degree: incident edges, a self-loop once.
    fn degree(&self, u: usize) -> usize {
        self.incidence(u).len()
    }

    // ----- section 6: components with concepts -------------------------------------------------

    /// Concept start, then concepts, cover, estimate (section 6, as refined in the module docs).
    fn common_sense_order(&mut self, component: &[usize]) {
        let start = self.concept_start(component);
        self.visit(start, |p| p.concept_start_reason(start));
        while let Some(u) = self.next_common_sense(component) {
            self.visit(u, |p| p.common_sense_reason(u));
        }
    }

    /// The concept whose incident edges are most selective: smallest data degree along its most
    /// selective edge, then smallest total, then most query edges, then lowest index.
    fn concept_start(&self, component: &[usize]) -> usize {
        let concepts = component
            .iter()
            .copied()
            .filter(|&u| self.q.nodes[u].is_concept());
        concepts
            .min_by_key(|&u| {
                let degrees = self.concept_degrees(u);
                let least = degrees.iter().copied().min().unwrap_or(0);
                let total: usize = degrees.iter().sum();
                (least, total, Reverse(self.degree(u)), u)
            })
            .unwrap_or(component[0])
    }

    /// For each incident query edge of concept `u`, its data degree along that edge.
    fn concept_degrees(&self, u: usize) -> Vec<usize> {
        self.incidence(u)
            .iter()
            .map(|i| self.data_degree(u, i))
            .collect()
    }

    /// The number of data neighbours the concept node `u` has along incidence `i` (its relation and
    /// direction), summed over its data nodes: exactly the candidates that edge leaves for the other
    /// endpoint (at most, for a set). 0 for a variable.
    fn data_degree(&self, u: usize, i: &Incidence) -> usize {
        let Some(nodes) = self.q.concept_nodes(u) else {
            return 0;
        };
        let csr = if i.outgoing {
            self.g.out()
        } else {
            self.g.inc()
        };
        let n = self.g.node_count();
        nodes
            .iter()
            .filter(|&&d| (d as usize) < n)
            .map(|&d| match self.q.edges[i.edge].label {
                EdgeLabel::Fixed(r) => csr.degree_by_label(d, r),
                EdgeLabel::Variable(_) => csr.degree(d),
            })
            .sum()
    }

    /// Candidates of concept node `u` before filtering: 1, or the size of its set.
    fn concept_candidates(&self, u: usize) -> usize {
        self.q.concept_nodes(u).map_or(0, <[_]>::len)
    }

    fn concept_start_reason(&self, u: usize) -> String {
        let best = self
            .incidence(u)
            .iter()
            .min_by_key(|i| self.data_degree(u, i))
            .map(|i| {
                format!(
                    "; its most selective edge ({} {}) has {}",
                    self.edge_label_name(i.edge),
                    if i.outgoing { "out" } else { "in" },
                    crate::counted(
                        self.data_degree(u, i) as u64,
                        "data neighbour",
                        "data neighbours"
                    )
                )
            })
            .unwrap_or_default();
        format!(
            "start: concept, {}{best}",
            candidates(self.concept_candidates(u))
        )
    }

    /// Concepts first (one candidate each), then most unvisited edges covered, then fewest
    /// estimated candidates, then most edges to visited nodes, then lowest index.
    fn next_common_sense(&self, component: &[usize]) -> Option<usize> {
        self.frontier(component).min_by(|&a, &b| {
            let key = |u: usize| {
                (
                    Reverse(self.q.nodes[u].is_concept()),
                    Reverse(self.cover(u)),
                )
            };
            key(a)
                .cmp(&key(b))
                .then_with(|| {
                    self.estimate_given_visited(a)
                        .total_cmp(&self.estimate_given_visited(b))
                })
                .then_with(|| self.links(b).cmp(&self.links(a)))
                .then(a.cmp(&b))
        })
    }

    fn common_sense_reason(&self, u: usize) -> String {
        let links = self.links(u);
        if self.q.nodes[u].is_concept() {
            return format!(
                "concept, {}; {} to earlier nodes",
                candidates(self.concept_candidates(u)),
                crate::counted(links as u64, "edge", "edges")
            );
        }
        let estimate = rounded(self.estimate_given_visited(u));
        let (cover, word) = match self.cover(u) {
            1 => (1, "edge"),
            n => (n, "edges"),
        };
        let candidates = if estimate == "1" {
            "candidate"
        } else {
            "candidates"
        };
        format!(
            "{} to earlier nodes, covers {cover} more {word}, ~{estimate} {candidates}",
            crate::counted(links as u64, "edge", "edges"),
        )
    }

    // ----- section 4: variable-only components --------------------------------------------------

    /// Highest `deg / freq` first, then grow by the same rank among neighbours of visited nodes.
    fn ranked_order(&mut self, component: &[usize]) {
        if self.rank.is_empty() {
            self.rank = vec![f64::NAN; self.q.nodes.len()];
        }
        for &u in component {
            self.rank[u] = self.rank_of(u);
        }
        let start = component
            .iter()
            .copied()
            .min_by(|&a, &b| {
                self.rank(b)
                    .total_cmp(&self.rank(a))
                    .then_with(|| self.degree(b).cmp(&self.degree(a)))
                    .then(a.cmp(&b))
            })
            .unwrap_or(component[0]);
        self.visit(start, |p| {
            format!("start: highest rank, {}", p.rank_text(start))
        });
        while let Some(u) = self.next_ranked(component) {
            self.visit(u, |p| {
                format!(
                    "{}; {} to earlier nodes",
                    p.rank_text(u),
                    crate::counted(p.links(u) as u64, "edge", "edges")
                )
            });
        }
    }

    fn next_ranked(&self, component: &[usize]) -> Option<usize> {
        self.frontier(component).min_by(|&a, &b| {
            self.rank(b)
                .total_cmp(&self.rank(a))
                .then_with(|| self.links(b).cmp(&self.links(a)))
                .then(a.cmp(&b))
        })
    }

    /// `rank(u)` of a node of the component being ordered.
    fn rank(&self, u: usize) -> f64 {
        self.rank[u]
    }

    /// `rank(u) = deg(u) / freq(u)` (section 4); infinite when no data node can match.
    fn rank_of(&self, u: usize) -> f64 {
        let freq = self.frequency(u);
        if freq == 0 {
            f64::INFINITY
        } else {
            self.degree(u) as f64 / freq as f64
        }
    }

    fn rank_text(&self, u: usize) -> String {
        format!("rank deg/freq = {}/{}", self.degree(u), self.frequency(u))
    }

    /// The frequency of `u`'s label: data nodes with its node label, or for an unlabelled node the
    /// fewest data nodes with an edge of one of its (fixed) relations in the right direction.
    fn frequency(&self, u: usize) -> u64 {
        let node = &self.q.nodes[u];
        if node.is_concept() {
            return self.concept_candidates(u) as u64;
        }
        match node.label {
            Some(l) => self.stats.label_frequency(l),
            None => self.edge_frequency(u),
        }
    }

    fn edge_frequency(&self, u: usize) -> u64 {
        let by_edges = self
            .incidence(u)
            .iter()
            .filter_map(|i| match self.q.edges[i.edge].label {
                EdgeLabel::Fixed(r) => Some(self.stats.relation_endpoints(r, i.outgoing)),
                EdgeLabel::Variable(_) => None,
            });
        by_edges.min().unwrap_or(self.stats.node_count())
    }

    // ----- candidate estimates ------------------------------------------------------------------

    /// Estimated candidates of `u` if visited now: its data nodes for a concept; for a variable, the smallest of
    /// its unconditional frequency and, per edge to a visited node `w`, either `w`'s exact data
    /// degree along that edge (when `w` is a concept) or `estimate(w) × average fan-out`.
    fn estimate_given_visited(&self, u: usize) -> f64 {
        if self.q.nodes[u].is_concept() {
            return self.concept_candidates(u) as f64;
        }
        let mut best = self.frequency(u) as f64;
        for i in self.incidence(u) {
            if i.other == u || !self.visited[i.other] {
                continue;
            }
            best = best.min(self.through(i));
        }
        best
    }

    /// Candidates reached from the visited endpoint of incidence `i` (seen from the unvisited one).
    fn through(&self, i: &Incidence) -> f64 {
        let w = i.other;
        // Seen from `w`, the edge goes the other way.
        let from_w = Incidence {
            edge: i.edge,
            other: w,
            outgoing: !i.outgoing,
        };
        if self.q.nodes[w].is_concept() {
            return self.data_degree(w, &from_w) as f64;
        }
        let fanout = match self.q.edges[i.edge].label {
            EdgeLabel::Fixed(r) => self.stats.fanout(r, from_w.outgoing),
            EdgeLabel::Variable(_) => self.stats.average_degree(),
        };
        self.estimate[w] * fanout
    }

    fn edge_label_name(&self, edge: usize) -> String {
        match self.q.edges[edge].label {
            EdgeLabel::Fixed(r) if (r as usize) < self.g.relation_count() => {
                self.g.relation_name(r).to_owned()
            }
            EdgeLabel::Fixed(r) => format!("relation #{r}"),
            EdgeLabel::Variable(v) => self
                .q
                .edge_variables
                .get(v)
                .cloned()
                .unwrap_or_else(|| "?".into()),
        }
    }
}

fn rounded(x: f64) -> String {
    if x.is_finite() {
        format!("{}", x.round() as u64)
    } else {
        "?".into()
    }
}

/// "1 candidate", "8 candidates".
fn candidates(n: usize) -> String {
    crate::counted(n as u64, "candidate", "candidates")
}
