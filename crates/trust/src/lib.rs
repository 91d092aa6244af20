//! TruST: inexact (approximate) subgraph matching over a knowledge graph. This crate owns the
//! TruST method (Truncated Search Tree; Gross et al., parallelised after the seed paper `002`):
//! templates with fuzzy node names, the name index, the similarity and one-hop score tables, the
//! beam search, and the ranked answer with per-node and per-edge agreement. The per-pair work runs
//! as the `no_std` kernel bodies of `gpsense_kernels::trust`, executed in parallel with rayon.
//!
//! # Scoring
//!
//! For a template node `t` and a data node `d` (all scores in `[0, 1]`):
//!
//! - `S(t, d) = 1 - lev(t, d) / max(|t|, |d|)`, the seed's normalised similarity of their
//!   case-folded names in Unicode code points, with `lev` the edit distance in its optimal string
//!   alignment form (an adjacent transposition is one edit, as the commonest typo should be),
//!   taken as `0` below [`Params::threshold`]; `1` for a template node that matches anything (a
//!   query variable). A data node with aliases (WordNet's lemmas) has several names: `S` is the
//!   maximum over its name and its aliases (under [`NodeText::Label`], its label name only).
//! - `W(t, d)`: the value of a maximum-weight bipartite matching (exact, by the Hungarian method)
//!   between the incident edges of `t` and of `d`, divided by `t`'s template degree (`1` for an
//!   isolated `t`). A template edge `t - t'` and a data edge `d - d'` weigh
//!   `S(t', d') * (1 - b + b * [same relation])` when they have the same direction at `t` and `d`,
//!   and `0` otherwise; `b` is [`Params::relation_weight`]; a variable relation always agrees.
//! - `OH(t, d) = a * S(t, d) + (1 - a) * W(t, d)`, `a` = [`Params::alpha`] (0.5 as in the paper).
//! - A matching `m` (injective) also scores each template edge `u -r-> v`: `E = 1` when
//!   `m(u) -r-> m(v)` is a data edge, `1 - b` when only other relations join them that way, `0`
//!   otherwise.
//! - `score(m) = (sum_t OH(t, m(t)) + sum_e E(e)) / (|V_T| + |E_T|)`. It is `1` exactly for an exact
//!   embedding (equal names, every template edge present with its relation), the maximum.
//!
//! # Search
//!
//! Beam search over the template nodes in a connected order (see `search`): a branch grows only to
//! data nodes adjacent to its already matched images, in the template edge's direction; the `beam`
//! best branches by cumulative score survive each level; branches that reach the same matching
//! are kept once. The depth is the number of template nodes. A template node with no matched
//! neighbour yet (the first, or the first of another connected component) starts from the `beam`
//! data nodes with the best one-hop score.

mod device;
mod error;
mod names;
mod score;
mod search;
mod template;

use std::time::{Duration, Instant};

use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_kernels::trust::{edge_score, Scoring, ABSENT_RELATION, ANY_RELATION};
use gpsense_kernels::{Adjacency, GraphView};
use gpsense_runtime::device::{Device, DeviceError};
use gpsense_runtime::DeviceCounters;

pub use device::{open, open_beside, Opened, Searched, TrustDevice, TrustEngine};
pub use error::TrustError;
pub use gpsense_kernels::trust::MAX_TEMPLATE_DEGREE;
pub use names::{fold, NameIndex};
pub use score::MAX_TEMPLATE_NODES;
pub use template::{node_text, NodeLabel, NodeText, Template, TemplateEdge, TemplateNode};

use score::Prepared;
use search::{Beam, Branches, Plan};

/// The knobs of a search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// `a`: weight of the name similarity in the one-hop score (the rest is the neighbourhood).
    pub alpha: f32,
    /// `b`: the share of an edge's score that needs its relation to match.
    pub relation_weight: f32,
    /// Names less similar than this count as `0` (and are never compared one by one).
    pub threshold: f32,
    /// Branches kept per level.
    pub beam: usize,
    /// Matchings returned (at most `beam`).
    pub top: usize,
    /// Stop after this long: the answer is what was complete by then, marked timed out.
    pub timeout: Option<std::time::Duration>,
    /// When `timeout` started counting (`None`: when the search starts). A caller that builds the
    /// name index or opens a device for the search first passes the instant before, so that the
    /// limit holds for all of it.
    pub started: Option<Instant>,
    /// Bytes the score tables may take (`None`: unchecked). They hold two `f32` per template node
    /// and data node, the bulk of a search's memory on a large graph.
    pub memory_budget: Option<u64>,
    /// A stop flag another thread or a signal handler sets: the search stops as at its time limit.
    pub cancel: Option<Cancel>,
}

/// A caller's stop flag (compared by identity).
#[derive(Clone, Copy, Debug)]
pub struct Cancel(pub &'static std::sync::atomic::AtomicBool);

impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

/// When a search stops early: its time limit, or its caller's flag.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stop {
    deadline: Option<Instant>,
    cancel: Option<Cancel>,
}

impl Stop {
    pub(crate) fn hit(&self) -> bool {
        self.cancel
            .is_some_and(|c| c.0.load(std::sync::atomic::Ordering::Relaxed))
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

impl Default for Params {
    fn default() -> Self {
        Params {
            alpha: 0.5,
            relation_weight: 0.5,
            threshold: 0.5,
            beam: 128,
            top: 10,
            timeout: None,
            started: None,
            memory_budget: None,
            cancel: None,
        }
    }
}

impl Params {
    /// When a search that starts at `start` stops: its time limit, counted from
    /// [`Params::started`] when set, and its cancellation.
    pub(crate) fn stop(&self, start: Instant) -> Stop {
        Stop {
            deadline: self.timeout.map(|t| self.started.unwrap_or(start) + t),
            cancel: self.cancel,
        }
    }

    pub fn validate(&self) -> Result<(), TrustError> {
        let unit = |name, v: f32| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(TrustError::BadParameter {
                    name,
                    value: v.to_string(),
                    why: "must lie between 0 and 1",
                })
            }
        };
        unit("alpha", self.alpha)?;
        unit("relation weight", self.relation_weight)?;
        unit("threshold", self.threshold)?;
        if self.beam == 0 || self.top == 0 {
            return Err(TrustError::BadParameter {
                name: if self.beam == 0 { "beam" } else { "top" },
                value: "0".into(),
                why: "must be at least 1",
            });
        }
        if self.top > self.beam {
            return Err(TrustError::BadParameter {
                name: "top",
                value: self.top.to_string(),
                why: "cannot exceed the beam width (only that many branches survive)",
            });
        }
        Ok(())
    }

    fn scoring(&self) -> Scoring {
        Scoring {
            alpha: self.alpha,
            relation_weight: self.relation_weight,
        }
    }
}

/// How a template node was matched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeAgreement {
    /// `S(t, m(t))`.
    pub similarity: f32,
    /// `OH(t, m(t))`.
    pub one_hop: f32,
}

/// What the data graph has between the images of a template edge's endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeFound {
    /// The edge, with the template's relation (or any, for a variable relation).
    Exact(LabelId),
    /// Only other relations, in the template's direction.
    OtherRelation(LabelId),
    /// Only edges the other way round (scored 0: direction matters).
    Reversed(LabelId),
    Missing,
}

/// How a template edge was matched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgeAgreement {
    pub found: EdgeFound,
    /// `E(e)`.
    pub score: f32,
}

/// One ranked matching.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// `score(m)`, in `[0, 1]`; `1` for an exact embedding.
    pub score: f32,
    /// The template's fuzzy nodes (concepts) whose data node resembles them by name (similarity at
    /// least the threshold). Matchings rank by this first, then by `score`: a concept earned
    /// through its neighbourhood alone never outranks one whose name matches too.
    pub resembling: usize,
    /// The data node of each template node.
    pub nodes: Vec<NodeId>,
    /// Per template node.
    pub node_agreement: Vec<NodeAgreement>,
    /// Per template edge.
    pub edge_agreement: Vec<EdgeAgreement>,
}

/// Time per phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    pub similarity: Duration,
    pub one_hop: Duration,
    pub traversal: Duration,
}

/// The answer to a search: best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub matches: Vec<Match>,
    /// The template nodes in the order the search matched them.
    pub order: Vec<usize>,
    /// Template relations the data graph lacks (their edges never earn the relation bonus).
    pub unknown_relations: Vec<String>,
    pub timings: Timings,
    /// The time limit stopped the search: `matches` are those complete by then (often none).
    pub timed_out: bool,
    /// The device the search ran on ([`Trust::search_on`]) and what was asked of it.
    pub device: Option<DeviceRun>,
}

/// A search's device and its counters (launches, reads, allocations, bytes each way).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRun {
    pub device: String,
    pub counters: DeviceCounters,
    pub traversal: TraversalSpan,
}

/// The traversal's work on the device, per level the branch that took longest, summed over the
/// levels: the candidates it judged (one after another with a thread per branch) and the rounds
/// its warp took (up to 32 candidates judged at once in each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraversalSpan {
    pub levels: u64,
    pub judged: u64,
    pub rounds: u64,
}

/// The three phases of a search, on the CPU ([`Cpu`]) or on a device (`device::OnDevice`).
trait Phases {
    /// `S`, row-major data nodes x template nodes.
    /// `stop` is seen between launches on a device (chunks not started stay 0); the CPU's table
    /// is quick and always whole.
    fn similarity(
        &mut self,
        t: &Template,
        index: &NameIndex,
        threshold: f32,
        stop: Stop,
    ) -> Result<Vec<f32>, TrustError>;
    /// `OH`, same layout; chunks not started once `stop` is hit stay 0.
    fn one_hop(
        &mut self,
        p: &Prepared,
        sim: &[f32],
        g: &GraphView,
        scoring: &Scoring,
        stop: Stop,
    ) -> Result<Vec<f32>, TrustError>;
    /// The beam search's kept branches, best first.
    fn traverse(&mut self, beam: &Beam, stop: Stop) -> Result<Branches, TrustError>;
}

/// The phases on the CPU executor (rayon).
struct Cpu;

impl Phases for Cpu {
    fn similarity(
        &mut self,
        t: &Template,
        index: &NameIndex,
        threshold: f32,
        _stop: Stop,
    ) -> Result<Vec<f32>, TrustError> {
        Ok(score::similarity_table(t, index, threshold))
    }

    fn one_hop(
        &mut self,
        p: &Prepared,
        sim: &[f32],
        g: &GraphView,
        scoring: &Scoring,
        stop: Stop,
    ) -> Result<Vec<f32>, TrustError> {
        Ok(score::one_hop_table(p, sim, g, scoring, stop))
    }

    fn traverse(&mut self, beam: &Beam, stop: Stop) -> Result<Branches, TrustError> {
        Ok(beam.run(stop))
    }
}

/// TruST over one data graph: the name index is built once and shared by every search.
pub struct Trust<'g> {
    graph: &'g KnowledgeGraph,
    index: NameIndex,
    text: NodeText,
}

impl<'g> Trust<'g> {
    /// Compares template names with data node names and aliases.
    pub fn new(graph: &'g KnowledgeGraph) -> Self {
        Self::with_node_text(graph, NodeText::Name)
    }

    /// Compares template names with the chosen text of data nodes (names and aliases, or label
    /// names).
    pub fn with_node_text(graph: &'g KnowledgeGraph, text: NodeText) -> Self {
        Trust {
            graph,
            index: NameIndex::build(graph, text),
            text,
        }
    }

    pub fn graph(&self) -> &'g KnowledgeGraph {
        self.graph
    }

    pub fn node_text(&self) -> NodeText {
        self.text
    }

    /// The `params.top` best matchings of `template`, best first (fewer when fewer exist), on the
    /// CPU (rayon over the kernel bodies).
    pub fn search(&self, template: &Template, params: &Params) -> Result<Answer, TrustError> {
        self.run(template, params, &mut Cpu)
    }

    /// As [`Trust::search`], each phase's kernels launched on `device` (the GPU, or the emulator);
    /// the same ranked answer as the CPU's, with the device's counters in [`Answer::device`].
    pub fn search_on<D: Device>(
        &self,
        device: &TrustDevice<D>,
        template: &Template,
        params: &Params,
    ) -> Result<Answer, TrustError> {
        // A search tried again after waiting for room keeps the time limit of its first try.
        let params = &Params {
            started: Some(params.started.unwrap_or_else(Instant::now)),
            ..*params
        };
        let stop = params.stop(Instant::now());
        loop {
            let user = device.state().user();
            let before = device.device().counters();
            let mut phases = device::OnDevice::new(device, params.memory_budget)?;
            let ran = self.run(template, params, &mut phases);
            let span = phases.span;
            // Its buffers go before it waits for room.
            drop(phases);
            match ran {
                Err(e) if refused_for_others(&e, params) => {
                    if device.state().make_room_for(user, || stop.hit()) {
                        continue;
                    }
                    return Err(e);
                }
                Err(e) => return Err(e),
                Ok(mut answer) => {
                    answer.device = Some(DeviceRun {
                        device: device.describe(),
                        counters: device.device().counters() - before,
                        traversal: span,
                    });
                    return Ok(answer);
                }
            }
        }
    }

    /// The three phases on `phases`, then the ranked answer.
    fn run(
        &self,
        template: &Template,
        params: &Params,
        phases: &mut impl Phases,
    ) -> Result<Answer, TrustError> {
        params.validate()?;
        if self.graph.node_count() == 0 {
            return Err(TrustError::EmptyData);
        }
        let prepared = Prepared::new(template, self.graph)?;
        tables_fit(
            template.nodes.len(),
            self.graph.node_count(),
            params.memory_budget,
        )?;
        let g = view(self.graph);
        let scoring = params.scoring();
        let start = Instant::now();
        let stop = params.stop(start);
        let sim = phases.similarity(template, &self.index, params.threshold, stop)?;
        let similarity = start.elapsed();
        let start = Instant::now();
        let oh = phases.one_hop(&prepared, &sim, &g, &scoring, stop)?;
        let one_hop = start.elapsed();
        let start = Instant::now();
        let plan = Plan::new(template, &prepared.edge_relations);
        let beam = Beam {
            plan: &plan,
            oh: &oh,
            sim: &sim,
            g: &g,
            scoring,
            beam: params.beam,
        };
        let branches = phases.traverse(&beam, stop)?;
        let traversal = start.elapsed();
        let timed_out = stop.hit();
        let complete = if branches.len() > 0 && !branches.row(0).contains(&gpsense_kernels::NONE) {
            branches.len().min(params.top)
        } else {
            0
        };
        let matches = (0..complete)
            .map(|b| self.explain(template, &prepared, branches.row(b), &sim, &oh, params))
            .collect();
        Ok(Answer {
            matches,
            order: plan.order,
            unknown_relations: self.unknown_relations(template, &prepared),
            timings: Timings {
                similarity,
                one_hop,
                traversal,
            },
            timed_out,
            device: None,
        })
    }

    /// A matching with its agreements and its score recomputed from them.
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        t: &Template,
        p: &Prepared,
        row: &[u32],
        sim: &[f32],
        oh: &[f32],
        params: &Params,
    ) -> Match {
        let nt = t.nodes.len();
        let node_agreement: Vec<NodeAgreement> = row
            .iter()
            .enumerate()
            .map(|(u, &d)| NodeAgreement {
                similarity: sim[d as usize * nt + u],
                one_hop: oh[d as usize * nt + u],
            })
            .collect();
        let g = view(self.graph);
        let edge_agreement: Vec<EdgeAgreement> = t
            .edges
            .iter()
            .zip(&p.edge_relations)
            .map(|(e, &rel)| {
                let (from, to) = (row[e.source], row[e.target]);
                EdgeAgreement {
                    found: edge_found(&g, from, to, rel),
                    score: edge_score(&g, from, to, rel, &params.scoring()),
                }
            })
            .collect();
        let total: f32 = node_agreement.iter().map(|a| a.one_hop).sum::<f32>()
            + edge_agreement.iter().map(|a| a.score).sum::<f32>();
        let resembling = t
            .nodes
            .iter()
            .zip(&node_agreement)
            .filter(|(n, a)| matches!(n.label, NodeLabel::Fuzzy(_)) && a.similarity > 0.0)
            .count();
        Match {
            score: total / (t.nodes.len() + t.edges.len()) as f32,
            resembling,
            nodes: row.to_vec(),
            node_agreement,
            edge_agreement,
        }
    }

    fn unknown_relations(&self, t: &Template, p: &Prepared) -> Vec<String> {
        let mut names: Vec<String> = t
            .edges
            .iter()
            .zip(&p.edge_relations)
            .filter(|(_, &r)| r == ABSENT_RELATION)
            .filter_map(|(e, _)| e.relation.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// Whether a device search was refused for memory that other users of the device held: by the
/// device itself, or by a budget that its free memory cut below the search's own.
fn refused_for_others(e: &TrustError, params: &Params) -> bool {
    match e {
        TrustError::Device(DeviceError::OutOfMemory(_)) => true,
        TrustError::DeviceBudget { budget, .. } => {
            *budget < params.memory_budget.unwrap_or(u64::MAX)
        }
        _ => false,
    }
}

/// Whether the similarity and one-hop tables (an `f32` per template node and data node each) fit
/// in `budget`: checked before they are allocated.
fn tables_fit(template: usize, data: usize, budget: Option<u64>) -> Result<(), TrustError> {
    let bytes = (template as u64)
        .saturating_mul(data as u64)
        .saturating_mul(2 * std::mem::size_of::<f32>() as u64);
    match budget {
        Some(budget) if bytes > budget => Err(TrustError::MemoryBudget {
            bytes,
            budget,
            template,
            data,
        }),
        _ => Ok(()),
    }
}

/// What joins `from` and `to` in the data, for the template relation `rel`.
fn edge_found(g: &GraphView, from: u32, to: u32, rel: u32) -> EdgeFound {
    if rel < ABSENT_RELATION && g.out.has(from, rel, to) {
        return EdgeFound::Exact(rel as LabelId);
    }
    if let Some(l) = first_relation(&g.out, from, to) {
        return if rel == ANY_RELATION {
            EdgeFound::Exact(l)
        } else {
            EdgeFound::OtherRelation(l)
        };
    }
    match first_relation(&g.out, to, from) {
        Some(l) => EdgeFound::Reversed(l),
        None => EdgeFound::Missing,
    }
}

/// The smallest relation of an edge `from -> to`, if any.
fn first_relation(adj: &Adjacency, from: u32, to: u32) -> Option<LabelId> {
    let (targets, labels) = adj.list(from);
    targets
        .iter()
        .zip(labels)
        .find(|(&w, _)| w == to)
        .map(|(_, &l)| l)
}

/// The graph's CSR arrays as the kernels see them.
pub fn view(g: &KnowledgeGraph) -> GraphView<'_> {
    GraphView {
        out: adjacency(g.out()),
        inc: adjacency(g.inc()),
        node_labels: g.node_labels(),
    }
}

fn adjacency(c: &gpsense_graph::Csr) -> Adjacency<'_> {
    Adjacency::new(c.offsets(), c.targets(), c.labels())
}

/// One-shot convenience: index `graph` and search it (build a [`Trust`] to search one graph often).
pub fn search(
    graph: &KnowledgeGraph,
    template: &Template,
    params: &Params,
) -> Result<Answer, TrustError> {
    Trust::new(graph).search(template, params)
}

#[cfg(test)]
mod tests;
