//! Matching through a compressed graph (GpSense section 5 and 6): match on the weighted top-level
//! graph, then expand each hyper-node through its mapping list to exact answers on the original.
//!
//! A match `f` of a query in the original graph maps to `H ∘ f` in the compressed graph (`H`: node to
//! hyper-node), because every original edge keeps an image between hyper-nodes; `H ∘ f` is a
//! homomorphism, not necessarily injective, since two query nodes can fall into one hyper-node. So
//! the compressed step runs the exact [`Engine`] under [`Semantics::Hom`] whatever the user asked,
//! with each concept fixed to its hyper-node, and yields every query node's hyper-node and every edge
//! variable's relation. Each original match has exactly one such image, so expanding the images
//! one by one (members of each hyper-node, every query edge checked in the original graph,
//! injectivity under iso) enumerates every original match exactly once. Full rows then go through
//! the same projection, DISTINCT and LIMIT as the uncompressed engine.
//!
//! Before expanding an image under iso, Definition 5's test prunes it when a hyper-node's weight
//! bound is below its query node's degree (Theorem 1: no member could match).
//!
//! When only a count is wanted, leaves (`leaves.rs`) are left out of the compressed match and
//! counted on the original per expansion of the rest, so a star of leaves costs a product, not an
//! enumeration.

mod leaves;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use gpsense_compress::{CompressError, CompressedGraph};
use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_kernels::NONE;
use gpsense_planner::{
    plan_with, EdgeLabel, NodeKind, PlannerStats, Projected, QueryGraph, QueryNode,
};
use rayon::prelude::*;

use crate::filtering::FilterReport;
use crate::output::{OnRows, Output, RowBatch};
use crate::{Engine, MatchError, MatchOptions, MatchReport, Semantics, Timings};

/// Compressed matches buffered before they are expanded in parallel.
const CHUNK_ROWS: usize = 4096;

/// Rows an expansion collects before handing them to the output.
const EMIT_ROWS: usize = 1024;

/// What the compressed path did beyond the inner engine's report.
#[derive(Clone, Debug, Default)]
pub struct ExpansionStats {
    /// Matches found on the compressed graph (homomorphisms into hyper-nodes).
    pub compressed_matches: u64,
    /// Of those, pruned by Definition 5's weight test before expansion (iso only).
    pub pruned_by_weight: u64,
    /// Time spent expanding and verifying on the original graph.
    pub expand_time: Duration,
    /// Query nodes counted on the original graph instead of expanded (leaves, counts only).
    pub counted_leaves: usize,
}

/// The report of a match through a compressed graph. `report.rows` and `report.limit_reached`
/// describe the final answer; its plan, candidate counts and phase times are those of the match on
/// the compressed graph.
#[derive(Clone, Debug)]
pub struct CompressedReport {
    pub report: MatchReport,
    pub expansion: ExpansionStats,
}

/// An original graph and its compression, prepared for matching.
pub struct CompressedEngine<'g> {
    original: &'g KnowledgeGraph,
    compressed: &'g CompressedGraph,
    inner: Engine<'g>,
    top_stats: PlannerStats,
    /// Threads expanding compressed matches; separate from the pool the inner engine runs on, whose
    /// workers wait on the inner output's lock while a batch is expanded.
    pool: OnceLock<Option<rayon::ThreadPool>>,
}

impl<'g> CompressedEngine<'g> {
    /// Fails when `compressed` was not built from `original`. O(V + E) for that check.
    pub fn new(
        original: &'g KnowledgeGraph,
        compressed: &'g CompressedGraph,
    ) -> Result<Self, CompressError> {
        compressed.check_original(original)?;
        Ok(CompressedEngine {
            original,
            compressed,
            inner: Engine::new(compressed.top()),
            top_stats: PlannerStats::new(compressed.top()),
            pool: OnceLock::new(),
        })
    }

    /// The engine over the compressed graph (for the GPU, which holds the compressed graph).
    pub fn inner(&self) -> &Engine<'g> {
        &self.inner
    }

    pub fn original(&self) -> &'g KnowledgeGraph {
        self.original
    }

    pub fn compressed(&self) -> &'g CompressedGraph {
        self.compressed
    }

    /// Finds the matches of `q` (on the original graph), handing projected rows to `on_rows`.
    pub fn run(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        on_rows: OnRows,
    ) -> Result<CompressedReport, MatchError> {
        self.execute(q, opts, false, on_rows)
    }

    /// Counts the matches of `q` without handing rows out.
    pub fn count(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
    ) -> Result<CompressedReport, MatchError> {
        self.execute(q, opts, true, &mut |_| true)
    }

    /// All projected rows, in memory.
    pub fn collect(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
    ) -> Result<(Vec<Vec<u32>>, CompressedReport), MatchError> {
        let mut rows = Vec::new();
        let report = self.run(q, opts, &mut |b: RowBatch| {
            rows.extend(b.iter().map(<[u32]>::to_vec));
            true
        })?;
        Ok((rows, report))
    }

    fn execute(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        count_only: bool,
        on_rows: OnRows,
    ) -> Result<CompressedReport, MatchError> {
        let start = Instant::now();
        let limit = opts.limit_for(q.limit);
        let qc = self.compressed_query(q);
        if q.components().len() > 1 && limit.is_none() {
            let guard = crate::engine::guard_disconnected(
                q,
                &q.components(),
                opts,
                count_only,
                start,
                |sub, o| self.count(sub, o).map(|r| r.report),
            )?;
            if let Some(guard) = guard {
                let mut report = self.base_report(&qc, opts);
                match guard {
                    crate::engine::Guard::Count(n) => report.rows = n,
                    crate::engine::Guard::TimedOut => report.timed_out = true,
                }
                report.times.total = start.elapsed();
                return Ok(CompressedReport {
                    report,
                    expansion: ExpansionStats::default(),
                });
            }
        }
        let out = crate::engine::output(
            q,
            crate::engine::by_node(q),
            opts,
            limit,
            count_only,
            on_rows,
            start,
        );
        // Leaves are counted, not expanded, only where no row is wanted.
        let leaves = if out.count_only() {
            leaves::leaves_of(q)
        } else {
            Vec::new()
        };
        let (qc, core) = leaves::core_query(&qc, &leaves);
        let expander = Expander::new(q, self.original, self.compressed, opts.semantics)
            .with_leaves(leaves, core, q);
        let (inner, expansion) = self.match_and_expand(&qc, opts, &expander, &out)?;
        let timed_out = inner.timed_out || out.timed_out();
        let (rows, limit_reached, error) = out.finish();
        if let Some(e) = error {
            return Err(e);
        }
        let mut report = inner;
        report.timed_out = timed_out;
        report.rows = rows;
        report.limit_reached = limit_reached;
        report.semantics = opts.semantics;
        report.times.total = start.elapsed();
        Ok(CompressedReport { report, expansion })
    }

    /// Runs the inner engine (hom, every node and edge variable projected, no DISTINCT or LIMIT) and
    /// expands its matches as they stream in, stopping it once the output has enough.
    fn match_and_expand(
        &self,
        qc: &QueryGraph,
        opts: &MatchOptions,
        expander: &Expander,
        out: &Output,
    ) -> Result<(MatchReport, ExpansionStats), MatchError> {
        let inner_opts = MatchOptions {
            semantics: Semantics::Hom,
            limit: None,
            // The user's guard applies to the original answer (checked in `execute`), not to the
            // compressed graph's counts.
            max_cartesian: u64::MAX,
            // The inner engine keeps the user's time limit (measured from nearly the same start),
            // so a long filtering phase on the compressed graph stops too.
            ..opts.clone()
        };
        let stats = Counters::default();
        let stream = Stream {
            qc,
            opts: &inner_opts,
            expander,
            out,
            stats: &stats,
            width: qc.nodes.len() + qc.edge_variables.len(),
        };
        let report = if opts.single_thread {
            self.inline(&stream)?
        } else if opts.blocking_rows {
            // A callback that blocks would hold the shared pool's threads: this match's own.
            match expansion_pool() {
                Some(pool) => self.pipelined(&stream, &pool)?,
                None => self.inline(&stream)?,
            }
        } else {
            match self.pool() {
                Some(pool) => self.pipelined(&stream, pool)?,
                None => self.inline(&stream)?,
            }
        };
        let mut stats = stats.finish();
        stats.counted_leaves = expander.leaves.len();
        Ok((report, stats))
    }

    /// One thread: each batch of compressed matches is expanded inside the inner engine's callback.
    fn inline(&self, st: &Stream) -> Result<MatchReport, MatchError> {
        let mut on_batch = |b: RowBatch| {
            expand_rows(st, &b.data[..b.rows * b.width], None);
            !st.out.stopped()
        };
        self.inner.run(st.qc, st.opts, &mut on_batch)
    }

    /// The inner engine streams chunks of compressed matches to a thread that expands each chunk on
    /// the expansion pool, so matching and expansion overlap. Expanding inside the callback in
    /// parallel would deadlock: the callback runs under the inner output's lock, and a rayon worker
    /// waiting for parallel work may pick up an inner-engine task that needs that same lock.
    fn pipelined(&self, st: &Stream, pool: &rayon::ThreadPool) -> Result<MatchReport, MatchError> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u32>>(2);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for chunk in rx {
                    expand_rows(st, &chunk, Some(pool));
                }
            });
            let mut buffer: Vec<u32> = Vec::new();
            let report = {
                let mut on_batch = |b: RowBatch| {
                    buffer.extend_from_slice(&b.data[..b.rows * b.width]);
                    if buffer.len() >= CHUNK_ROWS * st.width.max(1)
                        && tx.send(std::mem::take(&mut buffer)).is_err()
                    {
                        return false;
                    }
                    !st.out.stopped()
                };
                self.inner.run(st.qc, st.opts, &mut on_batch)
            };
            if !buffer.is_empty() {
                // Fails only if the expanding thread is gone, which the scope then reports.
                let _ = tx.send(buffer);
            }
            drop(tx);
            report
        })
    }

    fn pool(&self) -> &Option<rayon::ThreadPool> {
        self.pool.get_or_init(expansion_pool)
    }

    /// The query on the compressed graph: concepts fixed to their hyper-nodes (a concept set to the
    /// hyper-nodes of its members); every node, then every edge variable, projected (one row per
    /// compressed match); no DISTINCT, no LIMIT.
    fn compressed_query(&self, q: &QueryGraph) -> QueryGraph {
        let mut concept_sets = Vec::new();
        let nodes = q
            .nodes
            .iter()
            .map(|node| QueryNode {
                kind: match node.kind {
                    NodeKind::Concept(c) => NodeKind::Concept(self.compressed.hyper_node(c)),
                    NodeKind::ConceptSet(i) => {
                        let mut hypers: Vec<NodeId> = q.concept_sets[i]
                            .iter()
                            .map(|&c| self.compressed.hyper_node(c))
                            .collect();
                        hypers.sort_unstable();
                        hypers.dedup();
                        match hypers[..] {
                            [h] => NodeKind::Concept(h),
                            _ => {
                                concept_sets.push(hypers);
                                NodeKind::ConceptSet(concept_sets.len() - 1)
                            }
                        }
                    }
                    NodeKind::Variable => NodeKind::Variable,
                },
                ..node.clone()
            })
            .collect();
        let mut projection: Vec<Projected> = (0..q.nodes.len()).map(Projected::Node).collect();
        projection.extend((0..q.edge_variables.len()).map(Projected::Edge));
        QueryGraph {
            nodes,
            edges: q.edges.clone(),
            edge_variables: q.edge_variables.clone(),
            concept_sets,
            projection,
            distinct: false,
            limit: None,
        }
    }

    /// A report for an answer found without a join (the guard's exact product).
    fn base_report(&self, qc: &QueryGraph, opts: &MatchOptions) -> MatchReport {
        let plan = plan_with(qc, self.compressed.top(), &self.top_stats);
        MatchReport {
            device_report: None,
            rows: 0,
            limit_reached: false,
            timed_out: false,
            engine: opts.engine,
            fallback: None,
            auto: None,
            device: None,
            semantics: opts.semantics,
            join_plan: plan.clone(),
            plan,
            filter: FilterReport::default(),
            edge_candidates: None,
            search: None,
            times: Timings::default(),
        }
    }
}

/// Shared counters of one match.
#[derive(Default)]
struct Counters {
    matches: AtomicU64,
    pruned: AtomicU64,
    nanos: AtomicU64,
}

impl Counters {
    fn finish(self) -> ExpansionStats {
        ExpansionStats {
            compressed_matches: self.matches.into_inner(),
            pruned_by_weight: self.pruned.into_inner(),
            expand_time: Duration::from_nanos(self.nanos.into_inner()),
            counted_leaves: 0,
        }
    }
}

/// Threads to expand compressed matches on, as many as the calling pool has.
fn expansion_pool() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("gpsense-expand-{i}"))
        .build()
        .ok()
}

/// What a match streams from the inner engine to the expansion.
struct Stream<'a, 'o> {
    qc: &'a QueryGraph,
    opts: &'a MatchOptions,
    expander: &'a Expander<'a>,
    out: &'a Output<'o>,
    stats: &'a Counters,
    /// Values per compressed match: a hyper-node per query node, a relation per edge variable.
    width: usize,
}

/// Expands compressed matches (rows of `st.width`), in parallel on `pool` when there is one.
fn expand_rows(st: &Stream, rows: &[u32], pool: Option<&rayon::ThreadPool>) {
    let (width, out, stats, expander) = (st.width, st.out, st.stats, st.expander);
    if rows.is_empty() || width == 0 || out.stopped() {
        return;
    }
    let start = Instant::now();
    let run = |row: &[u32], scratch: &mut Scratch| {
        if out.stopped() {
            return;
        }
        stats.matches.fetch_add(1, Ordering::Relaxed);
        let mut wide = std::mem::take(&mut scratch.wide);
        let row = if expander.leaves.is_empty() {
            row
        } else {
            expander.widen(row, &mut wide);
            &wide[..]
        };
        if expander.passes_weights(row) {
            expander.expand(row, scratch, out);
        } else {
            stats.pruned.fetch_add(1, Ordering::Relaxed);
        }
        scratch.wide = wide;
    };
    match pool {
        Some(pool) if rows.len() > width => pool.install(|| {
            rows.par_chunks(width)
                .for_each_init(|| expander.scratch(), |s, row| run(row, s))
        }),
        _ => {
            let mut scratch = expander.scratch();
            rows.chunks_exact(width)
                .for_each(|row| run(row, &mut scratch));
        }
    }
    let nanos = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
    stats.nanos.fetch_add(nanos, Ordering::Relaxed);
}

/// The label of a query edge in one compressed match.
#[derive(Clone, Copy, Debug)]
enum Label {
    Fixed(LabelId),
    /// Bound by the compressed match: edge variable `k`.
    Variable(usize),
}

/// A query edge between the node being placed and an earlier one (or itself).
#[derive(Clone, Copy, Debug)]
struct Back {
    /// The earlier query node (the node itself for a self-loop).
    other: usize,
    /// Whether the data edge goes from `other` to the new node (else from the new node to `other`).
    from_other: bool,
    label: Label,
}

/// One position of the expansion order.
#[derive(Clone, Debug)]
struct Step {
    node: usize,
    /// A concept's data nodes (one, or a concept set's).
    concept: Option<Vec<NodeId>>,
    /// Edges to earlier nodes.
    back: Vec<Back>,
    /// Self-loops.
    loops: Vec<Label>,
}

/// The compressed match being expanded and where its expansions go.
struct Match<'r, 'o> {
    /// Hyper-node per query node, then relation per edge variable.
    row: &'r [u32],
    out: &'r Output<'o>,
    /// Count instead of producing rows.
    counting: bool,
}

/// Per-thread state of an expansion.
struct Scratch {
    /// Data node of each query node (by query index).
    assigned: Vec<NodeId>,
    /// Full rows found, waiting to be handed to the output.
    rows: Vec<u32>,
    counted: u128,
    /// A compressed match of the core widened to every query node (leaves `NONE`).
    wide: Vec<u32>,
    leaves: leaves::Room,
}

/// Expands compressed matches of one query into original matches.
struct Expander<'a> {
    g: &'a KnowledgeGraph,
    c: &'a CompressedGraph,
    nodes: usize,
    variables: usize,
    steps: Vec<Step>,
    injective: bool,
    /// Per query node, the fewest outgoing and incoming data edges a match needs under iso (0 under
    /// hom): distinct query neighbours need distinct data neighbours; distinct fixed relations to one
    /// neighbour need distinct edges.
    need_out: Vec<u32>,
    need_in: Vec<u32>,
    /// Query nodes counted on the original instead of expanded, and the query node of each slot of
    /// the compressed match (the rest).
    leaves: Vec<leaves::Leaf>,
    core: Vec<usize>,
}

impl<'a> Expander<'a> {
    fn new(
        q: &QueryGraph,
        g: &'a KnowledgeGraph,
        c: &'a CompressedGraph,
        semantics: Semantics,
    ) -> Self {
        let injective = semantics == Semantics::Iso;
        let degree = |out: bool| -> Vec<u32> {
            (0..q.nodes.len())
                .map(|u| if injective { need(q, u, out) } else { 0 })
                .collect()
        };
        Expander {
            g,
            c,
            nodes: q.nodes.len(),
            variables: q.edge_variables.len(),
            steps: expansion_steps(q, &[]),
            injective,
            need_out: degree(true),
            need_in: degree(false),
            leaves: Vec::new(),
            core: (0..q.nodes.len()).collect(),
        }
    }

    /// Counts `leaves` instead of expanding them; compressed matches then hold the `core` nodes
    /// only (`core[i]`: the query node of slot `i`).
    fn with_leaves(mut self, leaves: Vec<leaves::Leaf>, core: Vec<usize>, q: &QueryGraph) -> Self {
        if !leaves.is_empty() {
            self.steps = expansion_steps(q, &core);
        }
        self.leaves = leaves;
        self.core = core;
        self
    }

    fn scratch(&self) -> Scratch {
        Scratch {
            assigned: vec![NodeId::MAX; self.nodes],
            rows: Vec::new(),
            counted: 0,
            wide: vec![NONE; self.nodes + self.variables],
            leaves: leaves::Room::default(),
        }
    }

    /// A compressed match of the core as a row over every query node (leaves `NONE`).
    fn widen(&self, row: &[u32], wide: &mut [u32]) {
        for (i, &u) in self.core.iter().enumerate() {
            wide[u] = row[i];
        }
        let vars = self.core.len();
        wide[self.nodes..].copy_from_slice(&row[vars..vars + self.variables]);
    }

    /// Definition 5 on the weighted graph: under iso, each hyper-node's weight bound must reach its
    /// query node's degree in both directions. Always true under hom.
    fn passes_weights(&self, row: &[u32]) -> bool {
        if !self.injective {
            return true;
        }
        let (out, inc) = (self.c.out_weights(), self.c.in_weights());
        self.steps.iter().all(|step| {
            let u = step.node;
            let x = row[u] as usize;
            out.bound[x] >= self.need_out[u] && inc.bound[x] >= self.need_in[u]
        })
    }

    /// Every original match whose image is `row` (hyper-nodes, then relations, by query node),
    /// into `out`.
    fn expand(&self, row: &[u32], s: &mut Scratch, out: &Output) {
        s.rows.clear();
        s.counted = 0;
        let counting = out.count_only();
        self.place(0, &Match { row, out, counting }, s);
        if counting {
            if s.counted > 0 {
                out.add_count(s.counted);
            }
        } else if !s.rows.is_empty() {
            out.rows(&s.rows, self.nodes + self.variables);
        }
    }

    /// Backtracking over the expansion order; returns false to stop.
    fn place(&self, i: usize, m: &Match, s: &mut Scratch) -> bool {
        let Some(step) = self.steps.get(i) else {
            return self.emit(m, s);
        };
        let hyper = m.row[step.node];
        if let Some(nodes) = &step.concept {
            for &c in nodes {
                if self.c.hyper_node(c) == hyper
                    && self.fits(step, c, i, m.row, s)
                    && !self.descend(step, c, i, m, s)
                {
                    return false;
                }
            }
            return true;
        }
        let members = self.c.members(hyper);
        let (list, from_adjacency) = match self.shortest_back_list(step, m.row, s) {
            Some(list) if list.len() < members.len() => (list, true),
            _ => (members, false),
        };
        for &v in list {
            if from_adjacency && self.c.hyper_node(v) != hyper {
                continue;
            }
            if self.fits(step, v, i, m.row, s) && !self.descend(step, v, i, m, s) {
                return false;
            }
        }
        true
    }

    fn descend(&self, step: &Step, v: NodeId, i: usize, m: &Match, s: &mut Scratch) -> bool {
        s.assigned[step.node] = v;
        let go_on = self.place(i + 1, m, s);
        s.assigned[step.node] = NodeId::MAX;
        go_on
    }

    /// The shortest original adjacency list that must contain the new node's match, if it has an
    /// edge to an earlier node.
    fn shortest_back_list(&self, step: &Step, row: &[u32], s: &Scratch) -> Option<&'a [NodeId]> {
        step.back
            .iter()
            .map(|b| {
                let w = s.assigned[b.other];
                let r = self.relation(b.label, row);
                if b.from_other {
                    self.g.out().neighbours_by_label(w, r)
                } else {
                    self.g.inc().neighbours_by_label(w, r)
                }
            })
            .min_by_key(|list| list.len())
    }

    /// Whether data node `v` can take step `i`'s query node: injectivity (iso), degrees (iso), every
    /// edge to earlier nodes and every self-loop present in the original graph.
    fn fits(&self, step: &Step, v: NodeId, i: usize, row: &[u32], s: &Scratch) -> bool {
        if self.injective && self.steps[..i].iter().any(|p| s.assigned[p.node] == v) {
            return false;
        }
        let u = step.node;
        if self.g.out().degree(v) < self.need_out[u] as usize
            || self.g.inc().degree(v) < self.need_in[u] as usize
        {
            return false;
        }
        let edges_ok = step.back.iter().all(|b| {
            let w = s.assigned[b.other];
            let (from, to) = if b.from_other { (w, v) } else { (v, w) };
            self.g
                .out()
                .has_edge(from, Some(self.relation(b.label, row)), to)
        });
        edges_ok
            && step
                .loops
                .iter()
                .all(|&l| self.g.out().has_edge(v, Some(self.relation(l, row)), v))
    }

    fn relation(&self, label: Label, row: &[u32]) -> LabelId {
        match label {
            Label::Fixed(r) => r,
            // Relation ids of the compressed graph are the original's.
            Label::Variable(k) => row[self.nodes + k] as LabelId,
        }
    }

    /// A full row: data nodes by query index, then the edge variables' relations.
    fn emit(&self, m: &Match, s: &mut Scratch) -> bool {
        let (row, out) = (m.row, m.out);
        if m.counting {
            let n = if self.leaves.is_empty() {
                Some(1)
            } else {
                leaves::count(
                    self.g,
                    &self.leaves,
                    &s.assigned,
                    &self.core,
                    self.injective,
                    &mut s.leaves,
                )
            };
            let Some(total) = n.and_then(|n| s.counted.checked_add(n)) else {
                out.count_overflowed();
                return false;
            };
            s.counted = total;
            // Handing counts over now and then lets a limit stop a large expansion early.
            if s.counted >= EMIT_ROWS as u128 {
                out.add_count(s.counted);
                s.counted = 0;
                return !out.stopped();
            }
            return true;
        }
        s.rows.extend_from_slice(&s.assigned);
        s.rows
            .extend_from_slice(&row[self.nodes..self.nodes + self.variables]);
        if s.rows.len() >= EMIT_ROWS * (self.nodes + self.variables).max(1) {
            let go_on = out.rows(&s.rows, self.nodes + self.variables);
            s.rows.clear();
            return go_on;
        }
        true
    }
}

/// The order query nodes are expanded in: concepts first (one candidate, or a set's few), then repeatedly the
/// node with the most edges to nodes already placed (a new component starts at its lowest index).
/// Only the nodes of `core` when it is not empty (the others are counted).
fn expansion_steps(q: &QueryGraph, core: &[usize]) -> Vec<Step> {
    let n = q.nodes.len();
    let in_core = |u: usize| core.is_empty() || core.contains(&u);
    let size = if core.is_empty() { n } else { core.len() };
    let mut placed = vec![false; n];
    let mut order: Vec<usize> = (0..n)
        .filter(|&u| in_core(u) && q.nodes[u].is_concept())
        .collect();
    for &u in &order {
        placed[u] = true;
    }
    while order.len() < size {
        let links = |u: usize| {
            q.edges
                .iter()
                .filter(|e| {
                    (e.source == u && placed[e.target]) || (e.target == u && placed[e.source])
                })
                .count()
        };
        let next = (0..n)
            .filter(|&u| !placed[u] && in_core(u))
            .max_by_key(|&u| (links(u), std::cmp::Reverse(u)))
            .unwrap_or(0);
        placed[next] = true;
        order.push(next);
    }
    // Nodes outside the core come after every other: no step checks an edge to them (their one
    // edge is counted with them).
    let mut position = vec![usize::MAX; n];
    for (i, &u) in order.iter().enumerate() {
        position[u] = i;
    }
    order.iter().map(|&u| step(q, u, &position)).collect()
}

/// The step of query node `u`: its concept, and its edges to nodes earlier in the order.
fn step(q: &QueryGraph, u: usize, position: &[usize]) -> Step {
    let label = |l: EdgeLabel| match l {
        EdgeLabel::Fixed(r) => Label::Fixed(r),
        EdgeLabel::Variable(k) => Label::Variable(k),
    };
    let mut back = Vec::new();
    let mut loops = Vec::new();
    for e in &q.edges {
        if e.source == u && e.target == u {
            loops.push(label(e.label));
        } else if e.target == u && position[e.source] < position[u] {
            back.push(Back {
                other: e.source,
                from_other: true,
                label: label(e.label),
            });
        } else if e.source == u && position[e.target] < position[u] {
            back.push(Back {
                other: e.target,
                from_other: false,
                label: label(e.label),
            });
        }
    }
    Step {
        node: u,
        concept: q.concept_nodes(u).map(<[NodeId]>::to_vec),
        back,
        loops,
    }
}

/// The fewest data edges at a match of `u` in one direction under iso: one per distinct query
/// neighbour, or per distinct fixed relation to it when there are several (variable edges may
/// coincide with them).
fn need(q: &QueryGraph, u: usize, out: bool) -> u32 {
    let mut ends: Vec<(usize, Option<LabelId>)> = q
        .edges
        .iter()
        .filter_map(|e| {
            let other = if out {
                (e.source == u).then_some(e.target)
            } else {
                (e.target == u).then_some(e.source)
            }?;
            let fixed = match e.label {
                EdgeLabel::Fixed(r) => Some(r),
                EdgeLabel::Variable(_) => None,
            };
            Some((other, fixed))
        })
        .collect();
    ends.sort_unstable();
    ends.dedup();
    ends.chunk_by(|a, b| a.0 == b.0)
        .map(|group| group.iter().filter(|e| e.1.is_some()).count().max(1) as u32)
        .sum()
}
