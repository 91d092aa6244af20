//! The candidate space (as DAF, VEQ, CECI and EGSM build it): per query node a sorted candidate
//! array, per query edge and direction the candidate-to-candidate adjacency, refined to a fixpoint.
//!
//! Candidates are generated in plan order, each query node from the neighbourhood of an earlier
//! neighbour's candidates when that is cheaper than scanning its label's nodes (or all nodes), so an
//! anchored query never touches all `|V|` nodes. Every per-candidate step is a `gpsense_kernels`
//! body (`node_matches`, `count_expansion`/`write_expansion`, `count_space_edges`/
//! `write_space_edges`) run by the CPU executor with the two-step output (count, scan, write): the
//! same work a GPU launch does. Refinement drops candidates with an empty list toward some query
//! neighbour, to the fixpoint (arc consistency over the query's edges, by AC-4's support counts:
//! what DAF's dynamic programme over its query DAG and its reverse approximates in three passes).
//!
//! The space lives in a few flat arrays that the engine keeps between queries
//! ([`CandidateSpace::clear`] keeps their room): a small query allocates nothing here, which on
//! HPRD-sized queries is a large part of the time.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use gpsense_kernels::filter::{node_matches, Incident, Need, NodeFilter};
use gpsense_kernels::space::{
    count_expansion, count_space_edges, dedup_sorted, write_expansion, write_space_edges,
    write_space_edges_indexed,
};
use gpsense_kernels::{Dir, GraphView, NONE};

use crate::executor::{offsets_of, Executor};
use crate::filtering::{FilterReport, LabelIndex, LabelMask, NeighbourLabels};
use crate::layout::{Layout, MAX_QUERY_NODES};
use crate::prefetch;
use crate::spares::Spares;
use crate::MatchError;

/// One query edge seen from one endpoint: for candidate `i` of `from`, the indices of its data
/// neighbours among `to`'s candidates, ascending ([`CandidateSpace::list`]).
#[derive(Clone, Copy, Debug)]
pub struct SpaceEdge {
    pub from: usize,
    pub to: usize,
    /// Direction seen from `from`.
    pub dir: Dir,
    /// The fixed relation, or `NONE` for a variable edge.
    pub label: u32,
    /// Where its offsets start in `CandidateSpace::offsets` (one per candidate of `from`, plus
    /// one), relative to `base`, where its lists start in `CandidateSpace::targets`.
    at: usize,
    base: usize,
}

/// Candidates and candidate edges of every query node and non-loop query edge, in flat arrays.
/// Edges are stored in index order: an edge's offsets and lists follow those of the edge before.
#[derive(Clone, Debug, Default)]
pub struct CandidateSpace {
    cand: Vec<u32>,
    /// Per query node, where its candidates start in `cand` and how many there are.
    cand_at: Vec<(usize, usize)>,
    /// Two per non-loop query edge, one from each endpoint.
    pub edges: Vec<SpaceEdge>,
    offsets: Vec<u32>,
    targets: Vec<u32>,
    /// Per query node `u`, the indexes of the edges that start at it:
    /// `from_edges[from_at[u]..from_at[u + 1]]`, ascending.
    from_at: Vec<u32>,
    from_edges: Vec<u32>,
    /// `0, 1, 2, ...` as long as the longest candidate array: a root's list of candidate indices.
    identity: Vec<u32>,
    /// Per candidate slot, whether no other query node has that data node among its candidates
    /// (what an injective twin needs; [`CandidateSpace::twins_of`]).
    alone: Vec<bool>,
    scratch: Scratch,
}

/// Room the build reuses from query to query.
#[derive(Clone, Debug, Default)]
struct Scratch {
    pool: Vec<u32>,
    alive: Vec<bool>,
    renumber: Vec<u32>,
    next: Vec<u32>,
    counted: Vec<Need>,
    mask: LabelMask,
    /// Candidates refinement removed, in the order it found them.
    dead: Vec<(u32, u32)>,
    /// Per data node, its index among the candidates of the edge's far end being listed, else
    /// `NONE` (all `NONE` between edges). `|V|` entries, kept with the space so that no query
    /// allocates or fills them again (not counted in `room_bytes`).
    index_of: Vec<u32>,
    /// Per data node a bit, clear between uses: the far end's candidates when only membership
    /// counts (joins), 1/32 of `index_of`'s room, so it stays in the core's first cache beside
    /// the adjacency it is tested against (HPRD: 1.2 KB against 38 KB).
    members: Vec<u64>,
}

impl Scratch {
    /// `members` for a graph of `nodes` nodes, all clear.
    fn members(&mut self, nodes: usize) -> &mut Vec<u64> {
        let words = nodes.div_ceil(64);
        if self.members.len() != words {
            self.members.clear();
            self.members.resize(words, 0);
        }
        &mut self.members
    }

    /// `index_of` for a graph of `nodes` nodes, all `NONE`.
    fn index_of(&mut self, nodes: usize) -> &mut Vec<u32> {
        if self.index_of.len() != nodes {
            self.index_of.clear();
            self.index_of.resize(nodes, NONE);
        }
        &mut self.index_of
    }
}

impl CandidateSpace {
    /// Empties the space, keeping its room for the next query.
    pub fn clear(&mut self) {
        self.cand.clear();
        self.cand_at.clear();
        self.edges.clear();
        self.offsets.clear();
        self.targets.clear();
        self.from_at.clear();
        self.from_edges.clear();
    }

    /// Bytes this query's candidates and candidate edges take.
    pub fn used_bytes(&self) -> u64 {
        4 * (self.cand.len() + self.offsets.len() + self.targets.len()) as u64
    }

    /// Bytes of room held (the engine drops a space whose room grew past its keep limit).
    pub fn room_bytes(&self) -> usize {
        let s = &self.scratch;
        4 * (self.cand.capacity()
            + self.offsets.capacity()
            + self.targets.capacity()
            + self.identity.capacity()
            + self.alone.capacity() / 4
            + s.pool.capacity()
            + s.renumber.capacity()
            + s.next.capacity())
            + s.alive.capacity()
    }

    /// `u`'s candidates (data nodes), ascending.
    #[inline]
    pub fn cands(&self, u: usize) -> &[u32] {
        let (s, n) = self.cand_at[u];
        &self.cand[s..s + n]
    }

    /// Where `u`'s candidates start among all candidate slots.
    #[inline]
    pub fn cand_start(&self, u: usize) -> usize {
        self.cand_at[u].0
    }

    /// Candidate slots of all nodes (`cand_start(u) + i` is below this).
    #[inline]
    pub fn slot_count(&self) -> usize {
        self.cand.len()
    }

    /// How many candidates `u` has.
    #[inline]
    pub fn cand_count(&self, u: usize) -> usize {
        self.cand_at[u].1
    }

    /// Edge `k`'s list at candidate `i` of its `from` node.
    #[inline]
    pub fn list(&self, k: usize, i: u32) -> &[u32] {
        let e = &self.edges[k];
        let at = e.at + i as usize;
        &self.targets[e.base + self.offsets[at] as usize..e.base + self.offsets[at + 1] as usize]
    }

    /// The edges that start at `u`.
    #[inline]
    pub fn from(&self, u: usize) -> &[u32] {
        &self.from_edges[self.from_at[u] as usize..self.from_at[u + 1] as usize]
    }

    /// `0..n` as a slice (`n` at most the longest candidate array).
    #[inline]
    pub fn identity(&self, n: usize) -> &[u32] {
        &self.identity[..n]
    }

    pub fn any_empty(&self) -> bool {
        self.cand_at.iter().any(|&(_, n)| n == 0)
    }

    /// Candidate edges in all lists.
    pub fn edge_count(&self) -> u64 {
        self.targets.len() as u64
    }

    /// Twin candidates of `u` (VEQ's equivalent data vertices, in their static form): for each of
    /// its candidates `i`, into `out[i]`, the first candidate whose lists toward every query
    /// neighbour are the very same as `i`'s, or `NONE` where nothing may be shared. Twins narrow
    /// every neighbour alike, so their subtrees are the same search: the same count, the same
    /// failing set. Under injective semantics that also needs both to be candidates of `u` alone (no
    /// other query node can take either); `exclusive` asks for that. `keyed` is scratch.
    pub fn twins_of(
        &self,
        u: usize,
        exclusive: bool,
        out: &mut [u32],
        keyed: &mut Vec<(u64, u32)>,
    ) {
        let (start, count) = self.cand_at[u];
        out[..count].fill(NONE);
        keyed.clear();
        for i in 0..count as u32 {
            if !exclusive || self.alone[start + i as usize] {
                keyed.push((self.signature(u, i), i));
            }
        }
        keyed.sort_unstable();
        for run in keyed.chunk_by(|a, b| a.0 == b.0) {
            for (at, &(_, i)) in run.iter().enumerate() {
                // The first earlier one with the very same lists (a hash is only a hint).
                let rep = run[..at]
                    .iter()
                    .map(|&(_, j)| j)
                    .find(|&j| out[j as usize] == j && self.same_lists(u, i, j))
                    .unwrap_or(i);
                out[i as usize] = rep;
            }
        }
    }

    fn signature(&self, u: usize, i: u32) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for &k in self.from(u) {
            for &j in self.list(k as usize, i).iter().chain([&NONE]) {
                h = (h ^ j as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }

    fn same_lists(&self, u: usize, i: u32, j: u32) -> bool {
        self.from(u)
            .iter()
            .all(|&k| self.list(k as usize, i) == self.list(k as usize, j))
    }

    fn push_cands(&mut self, u: usize, from: &[u32]) {
        self.cand_at[u] = (self.cand.len(), from.len());
        self.cand.extend_from_slice(from);
    }

    /// Appends the reverse of edge `k` (its lists seen from the other endpoint): ascending, since the
    /// sources are visited in order. Linear in the lists.
    fn push_transpose(&mut self, k: usize) {
        let e = self.edges[k];
        let (from_len, to_len) = (self.cand_at[e.from].1, self.cand_at[e.to].1);
        let total = self.offsets[e.at + from_len] as usize;
        let at = self.offsets.len();
        self.offsets.resize(at + to_len + 1, 0);
        let lists = &self.targets[e.base..e.base + total];
        let counts = &mut self.offsets[at..];
        for &j in lists {
            counts[j as usize + 1] += 1;
        }
        for j in 0..to_len {
            counts[j + 1] += counts[j];
        }
        let next = &mut self.scratch.next;
        next.clear();
        next.extend_from_slice(&counts[..to_len]);
        let base = self.targets.len();
        self.targets.resize(base + total, 0);
        let (old, new) = self.targets.split_at_mut(base);
        for i in 0..from_len {
            let (s, t) = (self.offsets[e.at + i], self.offsets[e.at + i + 1]);
            for &j in &old[e.base + s as usize..e.base + t as usize] {
                new[next[j as usize] as usize] = i as u32;
                next[j as usize] += 1;
            }
        }
        self.edges.push(SpaceEdge {
            from: e.to,
            to: e.from,
            dir: e.dir.reverse(),
            label: e.label,
            at,
            base,
        });
    }

    /// Fills `alone`: counts each data node's query nodes in `index_of` (all `NONE` again after).
    /// Linear in the candidates; it was a binary search in every other node's candidates per
    /// candidate, most of the twin search's time on 32-node queries.
    fn mark_alone(&mut self, nodes: usize) {
        let index_of = self.scratch.index_of(nodes);
        let live = |&(s, n): &(usize, usize)| s..s + n;
        for r in self.cand_at.iter().map(live) {
            for &v in &self.cand[r] {
                index_of[v as usize] = index_of[v as usize].wrapping_add(1);
            }
        }
        self.alone.clear();
        self.alone.resize(self.cand.len(), false);
        for r in self.cand_at.iter().map(live) {
            for i in r {
                // From `NONE`, one owner wraps to 0.
                self.alone[i] = index_of[self.cand[i] as usize] == 0;
            }
        }
        for r in self.cand_at.iter().map(live) {
            for &v in &self.cand[r] {
                index_of[v as usize] = NONE;
            }
        }
    }

    /// Builds `from_at`/`from_edges` (a counting sort of the edges by their start).
    fn index_from(&mut self, n: usize) {
        self.from_at.clear();
        self.from_at.resize(n + 1, 0);
        for e in &self.edges {
            self.from_at[e.from + 1] += 1;
        }
        for u in 0..n {
            self.from_at[u + 1] += self.from_at[u];
        }
        let next = &mut self.scratch.next;
        next.clear();
        next.extend_from_slice(&self.from_at[..n]);
        self.from_edges.clear();
        self.from_edges.resize(self.edges.len(), 0);
        for (k, e) in self.edges.iter().enumerate() {
            self.from_edges[next[e.from] as usize] = k as u32;
            next[e.from] += 1;
        }
    }
}

/// Spaces kept between queries, so that their arrays are allocated once, not per query.
pub type SpacePool = Spares<CandidateSpace>;

impl crate::spares::Room for CandidateSpace {
    fn room_bytes(&self) -> usize {
        CandidateSpace::room_bytes(self)
    }

    /// One per query running at once is plenty.
    const KEEP: usize = 8;
}

/// A pool holding one space with its per-data-node index for `nodes` nodes already filled, so that
/// a first query neither allocates nor faults in those pages (`|V|` entries: 0.3 MB on
/// ConceptNet-100K).
pub fn prepared_spaces(nodes: usize) -> SpacePool {
    let mut space = CandidateSpace::default();
    space.scratch.index_of.resize(nodes, NONE);
    Spares::holding(space)
}

/// How many times a node read in an expansion a scanned node costs, in the choice between them:
/// a scanned node pays its node tests and the join check against each earlier neighbour (several
/// cache lines), an expanded one a read in a neighbour list. Measured with `exact_phases` on HPRD
/// and yeast's 32-vertex queries: weights 2-8 cut candidate generation by 10-20% against 1.
const SCAN_WEIGHT: u64 = 4;

/// Candidates in all from which the bottom-up pass pays: below, its reads of every candidate's
/// list cost about what the few lists it spares would (HPRD's queries, 20-200 candidates: 5% fewer
/// instructions without it, time the same or a little less; yeast's, thousands: the same either
/// way).
const PRUNE_FROM: usize = 512;

/// Builds a [`CandidateSpace`] for a layout (its filters and plan order) over a graph.
pub struct SpaceBuilder<'a> {
    pub layout: &'a Layout,
    pub g: GraphView<'a>,
    pub labels: &'a LabelIndex,
    /// Neighbour-label sets, when the engine keeps them: they decide the count-one needs.
    pub neighbour_labels: Option<&'a NeighbourLabels>,
    pub ex: Executor,
    /// The query's time limit: past it the build stops and leaves an empty space (no match found
    /// by then), so a long build does not overrun it.
    pub deadline: Option<Instant>,
    /// The caller's stop flag, seen as a passed deadline.
    pub cancel: Option<&'a std::sync::atomic::AtomicBool>,
    /// The query's memory budget: a space that outgrows it stops the build (see
    /// [`SpaceBuilder::build`]).
    pub budget: u64,
}

impl SpaceBuilder<'_> {
    /// Fills `space` (emptied first; its room is reused). Past the memory budget the build stops
    /// and the error says how far it got.
    pub fn build(&self, space: &mut CandidateSpace) -> Result<FilterReport, MatchError> {
        let n = self.layout.nodes;
        let mut report = FilterReport::default();
        let start = Instant::now();
        space.clear();
        space.cand_at.resize(n, (0, 0));
        let mut done = 0u64;
        for &u in &self.layout.order {
            if self.expired() {
                return Ok(self.stopped(space, report));
            }
            report.tested += self.generate(u, space, done);
            self.within_budget(space)?;
            done |= 1 << u;
            if space.cand_at[u].1 == 0 {
                break;
            }
        }
        if !space.any_empty() && space.cand.len() >= PRUNE_FROM {
            self.prune_backward(space);
        }
        report.after_filter = space.cand_at.iter().map(|c| c.1).collect();
        if !space.any_empty() && !self.collect_edges(space)? {
            return Ok(self.stopped(space, report));
        }
        space.index_from(n);
        report.filter_time = start.elapsed();
        let start = Instant::now();
        if !space.any_empty() {
            refine(space);
        }
        report.refine_time = start.elapsed();
        report.after_refine = space.cand_at.iter().map(|c| c.1).collect();
        space.mark_alone(self.g.node_count());
        let longest = space.cand_at.iter().map(|c| c.1).max().unwrap_or(0);
        if space.identity.len() < longest {
            space.identity = (0..longest as u32).collect();
        }
        Ok(report)
    }

    fn within_budget(&self, space: &CandidateSpace) -> Result<(), MatchError> {
        let bytes = space.used_bytes();
        if bytes > self.budget {
            return Err(MatchError::SpaceBudget {
                bytes,
                budget: self.budget,
            });
        }
        Ok(())
    }

    /// The candidates of `u`: its concept's nodes, from the cheapest earlier neighbour's adjacency,
    /// or by a scan. Returns how many nodes were given the node test.
    fn generate(&self, u: usize, space: &mut CandidateSpace, done: u64) -> u64 {
        let f = self.layout.filters[u].view();
        let g = self.g;
        if f.fixed != NONE {
            let ok = (f.fixed as usize) < g.node_count() && node_matches(&f, &g, f.fixed);
            let one = [f.fixed];
            space.push_cands(u, if ok { &one } else { &[] });
            return 1;
        }
        let domain = &self.layout.filters[u].domain;
        if !domain.is_empty() {
            let mut pool = std::mem::take(&mut space.scratch.pool);
            pool.clear();
            pool.extend(
                domain
                    .iter()
                    .copied()
                    .filter(|&v| (v as usize) < g.node_count() && node_matches(&f, &g, v)),
            );
            let tested = domain.len() as u64;
            space.push_cands(u, &pool);
            space.scratch.pool = pool;
            return tested;
        }
        let mut scan: &[u32] = match (f.label != NONE).then(|| self.labels.nodes(f.label)) {
            Some(Some(nodes)) => nodes,
            _ => &[],
        };
        let mut scan_cost = if f.label != NONE && self.labels.nodes(f.label).is_some() {
            scan.len() as u64
        } else {
            g.node_count() as u64
        };
        // The nodes of u's label with a neighbour of a needed label: the shortest such list is a
        // cheaper scan. The other needs are left to the word tests below: intersecting with their
        // lists cost their whole length, mostly longer than the pool (yeast's 32-node queries: 8%
        // of generation).
        let spec = &self.layout.filters[u];
        if let Some(nl) = self
            .neighbour_labels
            .filter(|nl| nl.has_pairs() && f.label != NONE)
        {
            // The slots' misses overlap: all asked for before the first is read.
            for need in &spec.neighbour_labels {
                nl.prefetch_pair(need.dir, f.label, need.label);
            }
            for need in &spec.neighbour_labels {
                let list = nl.with_neighbour(need.dir, f.label, need.label);
                if (list.len() as u64) < scan_cost {
                    (scan, scan_cost) = (list, list.len() as u64);
                }
            }
        }
        // The cheapest earlier neighbour to expand from; a sum stops once it cannot win.
        let scan_weight = scan_cost.saturating_mul(SCAN_WEIGHT);
        let mut best: Option<(u64, usize, Dir, u32)> = None;
        for e in self.layout.incident[u]
            .iter()
            .filter(|e| done & (1 << e.other) != 0)
        {
            let bound = best.map_or(scan_weight, |b| b.0.min(scan_weight));
            let dir = e.dir.reverse();
            let mut cost = 0u64;
            for &w in space.cands(e.other as usize) {
                cost += g.adj(dir).by_label(w, e.label).0.len() as u64;
                if cost >= bound {
                    break;
                }
            }
            if cost < bound {
                best = Some((cost, e.other as usize, dir, e.label));
            }
        }
        let mut pool = std::mem::take(&mut space.scratch.pool);
        pool.clear();
        match best {
            Some((cost, w, dir, label)) if cost < scan_weight => {
                self.expand(space.cands(w), dir, label, f.label, &mut pool)
            }
            _ if scan_cost < g.node_count() as u64 => pool.extend_from_slice(scan),
            _ => pool.extend(0..g.node_count() as u32),
        }
        // With neighbour-label sets, the count-one needs are a few word tests and the pass over a
        // node's list is left to the needs of two or more.
        let s = &mut space.scratch;
        let masked = match self.neighbour_labels {
            Some(nl) if !spec.neighbour_labels.is_empty() => {
                nl.mask_into(&spec.neighbour_labels, &mut s.mask);
                s.counted.clear();
                s.counted.extend(
                    spec.neighbour_labels
                        .iter()
                        .copied()
                        .filter(|n| n.count > 1),
                );
                Some(nl)
            }
            _ => None,
        };
        let (mask, counted) = (&s.mask, &s.counted);
        // The needs of two or more: by the sorted neighbour labels where the engine has them.
        let sorted = masked.filter(|nl| nl.has_sorted() && !counted.is_empty());
        let f = match (masked, sorted) {
            (_, Some(_)) => NodeFilter {
                neighbour_labels: &[],
                ..f
            },
            (Some(_), None) => NodeFilter {
                neighbour_labels: counted,
                ..f
            },
            (None, _) => f,
        };
        let covered = |v: u32| masked.is_none_or(|nl| nl.covers(v, mask));
        let counts = |v: u32| sorted.is_none_or(|nl| nl.has_counts(&g, v, counted));
        let pass = |v: u32| covered(v) && node_matches(&f, &g, v) && counts(v);
        let tested = pool.len() as u64;
        if !self.ex.is_parallel_for(pool.len()) {
            // The sorted-label counts read the node's CSR range too.
            let reads_dir = |dir: Dir| {
                f.reads(dir) || (sorted.is_some() && counted.iter().any(|n| n.dir == dir))
            };
            let reads = prefetch::NodeReads {
                label: f.label != NONE,
                out: reads_dir(Dir::Out),
                inc: reads_dir(Dir::In),
            };
            let ask = |v: u32| {
                prefetch::node(&g, v, reads);
                if let Some(nl) = masked {
                    nl.prefetch(v);
                }
            };
            prefetch::retain(&mut pool, ask, pass);
        } else {
            let mut keep = vec![false; pool.len()];
            self.ex.map(&mut keep, |i| pass(pool[i]));
            let mut k = 0;
            pool.retain(|_| {
                k += 1;
                keep[k - 1]
            });
        }
        // A pool expanded from a neighbour is joined to it already; the other earlier neighbours
        // are checked here, the later ones by `prune_backward`, and refinement does the rest.
        let from = best
            .filter(|b| b.0 < scan_weight)
            .map(|(_, w, dir, label)| Incident {
                dir: dir.reverse(),
                label,
                other: w as u32,
            });
        self.joined(u, done, from, space, &mut pool);
        space.push_cands(u, &pool);
        space.scratch.pool = pool;
        tested
    }

    /// Keeps the nodes of `pool` with a neighbour among the candidates of each earlier query
    /// neighbour of `u` (but the edge `from` it was expanded over, which holds already), as DAF
    /// builds its candidates from all its parents: every candidate left costs candidate-edge lists
    /// and refinement. Linear in the pool's lists.
    fn joined(
        &self,
        u: usize,
        done: u64,
        from: Option<Incident>,
        space: &mut CandidateSpace,
        pool: &mut Vec<u32>,
    ) {
        for e in &self.layout.incident[u] {
            if done & (1 << e.other) == 0 || from == Some(*e) || pool.is_empty() {
                continue;
            }
            keep_joined(self.g, space, e, pool);
        }
    }

    /// DAF's bottom-up pass, before any list is built: in reverse plan order, each node keeps the
    /// candidates with a neighbour among the (already pruned) candidates of each later query
    /// neighbour. Generation joined every node to its earlier neighbours; this joins it to the
    /// later ones, so that the lists are built for the few candidates refinement would keep
    /// (yeast's 32-node queries: 41% of the generated candidates died in refinement, after their
    /// lists were built and before they were compacted away).
    fn prune_backward(&self, space: &mut CandidateSpace) {
        let mut pool = std::mem::take(&mut space.scratch.pool);
        let mut later = 0u64;
        for &u in self.layout.order.iter().rev() {
            let (s, n) = space.cand_at[u];
            pool.clear();
            pool.extend_from_slice(&space.cand[s..s + n]);
            for e in &self.layout.incident[u] {
                if later & (1 << e.other) != 0 && !pool.is_empty() {
                    keep_joined(self.g, space, e, &mut pool);
                }
            }
            space.cand[s..s + pool.len()].copy_from_slice(&pool);
            space.cand_at[u].1 = pool.len();
            if pool.is_empty() {
                break;
            }
            later |= 1 << u;
        }
        space.scratch.pool = pool;
    }
}

/// Keeps the nodes of `pool` with a neighbour over `e` among the candidates of `e.other`.
fn keep_joined(g: GraphView, space: &mut CandidateSpace, e: &Incident, pool: &mut Vec<u32>) {
    let w = e.other as usize;
    let members = space.scratch.members(g.node_count());
    let (s, n) = space.cand_at[w];
    for &c in &space.cand[s..s + n] {
        members[c as usize / 64] |= 1 << (c % 64);
    }
    let adj = g.adj(e.dir);
    let (offsets, list) = (|v| prefetch::offsets(adj, v), |v| prefetch::list(adj, v));
    prefetch::retain_staged(pool, offsets, list, |v| {
        adj.by_label(v, e.label)
            .0
            .iter()
            .any(|&t| members[t as usize / 64] & 1 << (t % 64) != 0)
    });
    for &c in &space.cand[s..s + n] {
        members[c as usize / 64] = 0;
    }
}

impl SpaceBuilder<'_> {
    /// Appends to `out` the distinct neighbours of `from` over `dir`/`label` with node label
    /// `node_label`, ascending (two-step output, then sort).
    fn expand(&self, from: &[u32], dir: Dir, label: u32, node_label: u32, out: &mut Vec<u32>) {
        let g = self.g;
        // The label test needs labels on the graph (an absent label matches no node anyway).
        let node_label = if g.node_labels.is_empty() {
            NONE
        } else {
            node_label
        };
        if self.ex.is_parallel_for(from.len()) {
            let mut counts = vec![0u32; from.len()];
            self.ex.map(&mut counts, |i| {
                count_expansion(i, from, dir, label, node_label, &g)
            });
            let offsets = offsets_of(&counts);
            out.resize(*offsets.last().unwrap_or(&0) as usize, 0);
            self.ex.scatter(out, &offsets, 1, |i, region| {
                write_expansion(i, from, dir, label, node_label, &g, region);
            });
        } else {
            // The same write body into a growing buffer: no count pass, no offsets.
            for i in 0..from.len() {
                let at = out.len();
                out.resize(at + g.adj(dir).by_label(from[i], label).0.len(), 0);
                let n = write_expansion(i, from, dir, label, node_label, &g, &mut out[at..]);
                out.truncate(at + n);
            }
        }
        out.sort_unstable();
        let n = dedup_sorted(out);
        out.truncate(n);
    }

    fn expired(&self) -> bool {
        self.cancel
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The build stopped at the deadline: an empty space, every node without candidates.
    fn stopped(&self, space: &mut CandidateSpace, mut report: FilterReport) -> FilterReport {
        space.clear();
        space.cand_at.resize(self.layout.nodes, (0, 0));
        space.index_from(self.layout.nodes);
        report.after_filter = vec![0; self.layout.nodes];
        report.after_refine = vec![0; self.layout.nodes];
        report
    }

    /// Both directions' lists of every non-loop query edge: one by intersections, from the endpoint
    /// with fewer candidates, the other by transposing it (linear in the lists). False when the
    /// deadline stopped it.
    fn collect_edges(&self, space: &mut CandidateSpace) -> Result<bool, MatchError> {
        for u in 0..self.layout.nodes {
            if self.expired() {
                return Ok(false);
            }
            for inc in &self.layout.incident[u] {
                let w = inc.other as usize;
                // Each edge once: from the endpoint with fewer candidates (ties: the lower id).
                if (space.cand_count(w), w) < (space.cand_count(u), u) {
                    continue;
                }
                let k = space.edges.len();
                self.push_lists(space, u, w, inc.dir, inc.label);
                space.push_transpose(k);
                self.within_budget(space)?;
            }
        }
        Ok(true)
    }

    /// Appends edge `from`-`to`'s lists: count (an upper bound), scan, write (sorted, distinct),
    /// compact. Below the executor's parallel size, one pass writes into the growing list array
    /// instead (each list's room is its adjacency's length): the same write body, half the
    /// intersections.
    fn push_lists(&self, s: &mut CandidateSpace, from: usize, to: usize, dir: Dir, label: u32) {
        let g = self.g;
        let (at, base) = (s.offsets.len(), s.targets.len());
        s.edges.push(SpaceEdge {
            from,
            to,
            dir,
            label,
            at,
            base,
        });
        let (fs, fl) = s.cand_at[from];
        let (ts, tl) = s.cand_at[to];
        let (from, to) = (&s.cand[fs..fs + fl], &s.cand[ts..ts + tl]);
        let targets = &mut s.targets;
        if !self.ex.is_parallel_for(from.len()) {
            let index_of = s.scratch.index_of(g.node_count());
            for (j, &w) in to.iter().enumerate() {
                index_of[w as usize] = j as u32;
            }
            s.offsets.push(0);
            for (i, &v) in from.iter().enumerate() {
                let end = targets.len();
                targets.resize(end + g.adj(dir).by_label(v, label).0.len(), 0);
                let n = write_space_edges_indexed(
                    i,
                    from,
                    dir,
                    label,
                    to,
                    index_of,
                    &g,
                    &mut targets[end..],
                );
                targets.truncate(end + n);
                s.offsets.push((targets.len() - base) as u32);
            }
            for &w in to {
                index_of[w as usize] = NONE;
            }
            return;
        }
        let mut counts = vec![0u32; from.len()];
        self.ex.map(&mut counts, |i| {
            count_space_edges(i, from, dir, label, to, &g)
        });
        let offsets = offsets_of(&counts);
        targets.resize(base + *offsets.last().unwrap_or(&0) as usize, 0);
        let written: Vec<AtomicU32> = (0..from.len()).map(|_| AtomicU32::new(0)).collect();
        self.ex
            .scatter(&mut targets[base..], &offsets, 1, |i, region| {
                let n = write_space_edges(i, from, dir, label, to, &g, region);
                written[i].store(n as u32, Ordering::Relaxed);
            });
        // Variable edges may have counted one neighbour more than once: close the gaps (a no-op
        // for fixed relations, whose counts are exact).
        let mut w = 0usize;
        s.offsets.push(0);
        for i in 0..from.len() {
            let (start, n) = (
                base + offsets[i] as usize,
                written[i].load(Ordering::Relaxed) as usize,
            );
            targets.copy_within(start..start + n, base + w);
            w += n;
            s.offsets.push(w as u32);
        }
        targets.truncate(base + w);
    }
}

/// Arc consistency over the candidate space, to its fixpoint (AC-4's counting): each (edge,
/// candidate) keeps how many live candidates its list holds; a candidate with an empty list dies,
/// and its death lowers the counts of the lists that hold it (the reverse edge's: edges come in
/// pairs, `k` and `k ^ 1`). Linear in the lists of the candidates that die, so a space that is
/// already consistent costs one look per list. Then dead candidates are removed and the lists
/// renumbered.
fn refine(space: &mut CandidateSpace) {
    let mut alive = std::mem::take(&mut space.scratch.alive);
    alive.clear();
    alive.resize(space.cand.len(), true);
    // One count per offsets entry (the last of each edge unused).
    let mut support = std::mem::take(&mut space.scratch.renumber);
    support.clear();
    support.extend(space.offsets.windows(2).map(|w| w[1].wrapping_sub(w[0])));
    let mut dead = std::mem::take(&mut space.scratch.dead);
    dead.clear();
    let mut left = [0usize; MAX_QUERY_NODES];
    for (u, c) in space.cand_at.iter().enumerate() {
        left[u] = c.1;
    }
    let mut kill = |u: usize, i: usize, alive: &mut [bool], dead: &mut Vec<(u32, u32)>| {
        let at = space.cand_at[u].0 + i;
        if alive[at] {
            alive[at] = false;
            left[u] -= 1;
            dead.push((u as u32, i as u32));
        }
        left[u] == 0
    };
    let mut emptied = false;
    for e in &space.edges {
        for i in 0..space.cand_at[e.from].1 {
            if support[e.at + i] == 0 {
                emptied |= kill(e.from, i, &mut alive, &mut dead);
            }
        }
    }
    let mut next = 0;
    while next < dead.len() && !emptied {
        let (u, i) = (dead[next].0 as usize, dead[next].1);
        next += 1;
        for &k in space.from(u) {
            let back = space.edges[k as usize ^ 1];
            debug_assert!(back.from == space.edges[k as usize].to && back.to == u);
            for &j in space.list(k as usize, i) {
                let c = &mut support[back.at + j as usize];
                *c -= 1;
                if *c == 0 {
                    emptied |= kill(back.from, j as usize, &mut alive, &mut dead);
                }
            }
        }
    }
    space.scratch.renumber = support;
    space.scratch.dead = dead;
    compact(space, &alive);
    space.scratch.alive = alive;
}

/// Keeps the live candidates and renumbers every list, in place: edges are stored in index order
/// and only shrink, so every write lands at or before what is still to be read.
fn compact(space: &mut CandidateSpace, alive: &[bool]) {
    if alive.iter().all(|&x| x) {
        return;
    }
    let renumber = &mut space.scratch.renumber;
    renumber.clear();
    renumber.resize(alive.len(), NONE);
    for &(start, count) in &space.cand_at {
        let mut next = 0;
        for i in start..start + count {
            if alive[i] {
                renumber[i] = next;
                next += 1;
            }
        }
    }
    let (offsets, targets) = (&mut space.offsets, &mut space.targets);
    let (mut wo, mut wt) = (0usize, 0usize);
    for e in &mut space.edges {
        let (fs, fl) = space.cand_at[e.from];
        let ts = space.cand_at[e.to].0;
        let (at, base) = (wo, wt);
        let mut old_start = offsets[e.at];
        offsets[wo] = 0;
        wo += 1;
        for i in 0..fl {
            // Read before writing: the write may land on this very entry.
            let old_end = offsets[e.at + i + 1];
            if alive[fs + i] {
                for r in e.base + old_start as usize..e.base + old_end as usize {
                    let j = renumber[ts + targets[r] as usize];
                    if j != NONE {
                        targets[wt] = j;
                        wt += 1;
                    }
                }
                offsets[wo] = (wt - base) as u32;
                wo += 1;
            }
            old_start = old_end;
        }
        e.at = at;
        e.base = base;
    }
    offsets.truncate(wo);
    targets.truncate(wt);
    for c in &mut space.cand_at {
        let (start, count) = *c;
        let mut k = 0;
        for (i, &keep) in alive[start..start + count].iter().enumerate() {
            if keep {
                space.cand[start + k] = space.cand[start + i];
                k += 1;
            }
        }
        c.1 = k;
    }
}

#[cfg(test)]
mod tests {
    use gpsense_graph::{GraphBuilder, KnowledgeGraph};
    use gpsense_planner::{EdgeLabel, NodeKind, Projected, QueryEdge, QueryGraph, QueryNode};

    use crate::{Engine, EngineKind, MatchOptions, Semantics};

    /// A labelled graph stored both ways (the suites' shape): `(node, label)` and undirected edges.
    fn graph(nodes: &[(String, &str)], edges: &[(String, String)]) -> KnowledgeGraph {
        let mut b = GraphBuilder::new();
        for (name, label) in nodes {
            let v = b.node(name).unwrap();
            b.set_node_label(v, label).unwrap();
        }
        let r = b.relation("edge").unwrap();
        for (s, t) in edges {
            let (s, t) = (b.node(s).unwrap(), b.node(t).unwrap());
            b.add_edge(s, r, t, 1.0);
            b.add_edge(t, r, s, 1.0);
        }
        b.build().unwrap().0
    }

    /// A query of labelled variables and undirected edges over `g`'s one relation.
    fn query(g: &KnowledgeGraph, labels: &[&str], edges: &[(usize, usize)]) -> QueryGraph {
        let label = |name: &str| g.node_label_names().get(name).unwrap();
        QueryGraph {
            projection: (0..labels.len()).map(Projected::Node).collect(),
            nodes: labels
                .iter()
                .enumerate()
                .map(|(i, l)| QueryNode {
                    name: format!("?u{i}"),
                    kind: NodeKind::Variable,
                    label: Some(label(l)),
                })
                .collect(),
            edges: edges
                .iter()
                .map(|&(source, target)| QueryEdge {
                    source,
                    target,
                    label: EdgeLabel::Fixed(g.relation_id("edge").unwrap()),
                })
                .collect(),
            edge_variables: Vec::new(),
            concept_sets: Vec::new(),
            distinct: false,
            limit: None,
        }
    }

    fn count(g: &KnowledgeGraph, q: &QueryGraph) -> crate::MatchReport {
        let opts = MatchOptions {
            semantics: Semantics::Iso,
            engine: EngineKind::Dfs,
            single_thread: true,
            ..MatchOptions::default()
        };
        Engine::new(g).count(q, &opts).unwrap()
    }

    fn n(prefix: &str, i: usize) -> String {
        format!("{prefix}{i}")
    }

    #[test]
    fn a_scan_starts_from_the_nodes_of_its_label_with_the_needed_neighbour_labels() {
        // 20 A nodes, each with its own B neighbour; 40 C nodes on the B nodes; only a0 has a C
        // neighbour. The query x:A - y:B, x:A - z:C starts at x (the highest deg/freq) by a scan:
        // the A nodes with a C neighbour are a0 alone, so one node is tested, not 20.
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for i in 0..20 {
            nodes.push((n("a", i), "A"));
            nodes.push((n("b", i), "B"));
            edges.push((n("a", i), n("b", i)));
        }
        for i in 0..40 {
            nodes.push((n("c", i), "C"));
            edges.push((n("c", i), n("b", i % 20)));
        }
        edges.push(("a0".into(), "c0".into()));
        let g = graph(&nodes, &edges);
        let q = query(&g, &["A", "B", "C"], &[(0, 1), (0, 2)]);
        let report = count(&g, &q);
        assert_eq!(report.rows, 1);
        assert_eq!(report.plan.order[0], 0);
        assert_eq!(report.filter.after_filter[0], 1);
        // x: a0; y and z: a0's neighbours of their labels.
        assert!(report.filter.tested <= 3, "{}", report.filter.tested);
    }

    #[test]
    fn a_scanned_pool_keeps_only_nodes_joined_to_every_earlier_neighbour() {
        // b0 has 50 D neighbours and a0; b1..b4 each have one A neighbour. The query y:B - x:A,
        // y:B - d:D starts at y (only b0 has a D neighbour); x's scan of the 5 A nodes (cheaper
        // than b0's 51 neighbours) keeps only a0, the one next to y's candidate.
        let mut nodes = vec![("b0".to_string(), "B")];
        let mut edges = vec![("b0".to_string(), "a0".to_string())];
        for i in 0..5 {
            nodes.push((n("a", i), "A"));
        }
        for i in 1..5 {
            nodes.push((n("b", i), "B"));
            edges.push((n("b", i), n("a", i)));
        }
        for i in 0..50 {
            nodes.push((n("d", i), "D"));
            edges.push(("b0".into(), n("d", i)));
        }
        let g = graph(&nodes, &edges);
        let q = query(&g, &["A", "B", "D"], &[(1, 0), (1, 2)]);
        let report = count(&g, &q);
        assert_eq!(report.rows, 50);
        assert_eq!(report.plan.order[..2], [1, 0]);
        assert_eq!(report.filter.after_filter, [1, 1, 50]);
    }

    #[test]
    fn candidates_without_a_neighbour_among_a_later_nodes_go_before_the_lists() {
        // 600 paths a_i - b_i - c_i; only c0 has a D neighbour (d0; 999 more D nodes have none).
        // The query x:A - y:B - z:C - w:D starts at y (all b_i have A and C neighbours); z is c0
        // alone (the one C with a D neighbour). Generation joins each node to its earlier
        // neighbours only, so y would keep all 600; the bottom-up pass (a space of
        // `PRUNE_FROM` candidates or more) keeps b0, the one next to z's candidate, before any
        // list is built. (x, generated from y's 600 and after it in the plan, is left to
        // refinement: DAF's third pass, top-down, cost more than it saved.)
        const PATHS: usize = 600;
        const { assert!(2 * PATHS >= super::PRUNE_FROM) };
        let mut nodes = Vec::new();
        let mut edges = vec![("c0".to_string(), "d0".to_string())];
        for i in 0..PATHS {
            nodes.extend([(n("a", i), "A"), (n("b", i), "B"), (n("c", i), "C")]);
            edges.push((n("a", i), n("b", i)));
            edges.push((n("b", i), n("c", i)));
        }
        for i in 0..1000 {
            nodes.push((n("d", i), "D"));
        }
        let g = graph(&nodes, &edges);
        let q = query(&g, &["A", "B", "C", "D"], &[(0, 1), (1, 2), (2, 3)]);
        let report = count(&g, &q);
        assert_eq!(report.rows, 1);
        assert_eq!(report.plan.order, [1, 2, 0, 3]);
        assert_eq!(report.filter.after_filter, [PATHS, 1, 1, 1]);
        assert_eq!(report.filter.after_refine, [1, 1, 1, 1]);
    }
}
