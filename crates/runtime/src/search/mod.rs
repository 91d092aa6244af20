//! The CPU search over a candidate space, as the best CPU matchers do it:
//! - **adaptive order** (DAF's): a node is extendable once one of its query neighbours is matched;
//!   its extendable candidates are the intersection of its matched neighbours' candidate-space
//!   lists, narrowed one list at a time as they are matched. The search extends the extendable
//!   node with the fewest;
//! - **failing sets with backjumping** (DAF): each search node returns the query nodes its failure
//!   depends on, built from dynamic ancestors (a node and, transitively, the neighbours that
//!   narrowed its candidates); a sibling loop whose node is not among them stops at once. A node left
//!   with no free extendable candidate fails its neighbour's assignment at once;
//! - **leaf decomposition**: leaves are matched last; when only a count is wanted they are counted
//!   combinatorially (falling factorials over groups of leaves with the same candidates: VEQ's
//!   equivalent query nodes) instead of enumerated, and the last node is counted, not visited;
//! - **parallel search with work stealing** at any depth (`pool.rs`): one thread until the search is
//!   big enough, then idle workers take the untried half of the shallowest open level.
//!
//! Exact under `iso` and `hom`, with variable edges (each relation a separate solution, as in
//! SPARQL), edge variables shared across edges, projection, DISTINCT and LIMIT (in `Output`).
//! Deadlines cost one clock read every `MatchOptions::check_every` search nodes.

mod dag;
pub(crate) mod leaves;
mod pool;

use std::sync::atomic::{AtomicU64, Ordering};

use gpsense_kernels::space::intersect_into;
use gpsense_kernels::{GraphView, NONE};

pub use dag::Dag;
use dag::{bit, ALL};
pub use pool::run;

use crate::layout::MAX_QUERY_NODES;
use crate::output::Output;
use crate::space::CandidateSpace;
use gpsense_kernels::join::MAX_EDGE_VARIABLES;

/// Rows a worker buffers before handing them to the output.
const FLUSH_ROWS: usize = 1024;

/// What the search did, for `--explain` and the benches.
#[derive(Debug, Default)]
pub struct SearchStats {
    /// Partial matches grown by one node.
    pub nodes: AtomicU64,
    /// Sibling loops cut short by a failing set.
    pub backjumps: AtomicU64,
    /// Groups of leaves counted without enumeration.
    pub leaf_counts: AtomicU64,
    /// Pieces of work handed to an idle worker.
    pub splits: AtomicU64,
    /// Helpers asked for from the rayon pool (none until the search has proved big).
    pub helpers: AtomicU64,
    /// Candidates whose subtree a twin's stood for.
    pub twins: AtomicU64,
}

/// Everything a worker reads and never writes.
pub struct Context<'a, 'o> {
    pub space: &'a CandidateSpace,
    pub dag: &'a Dag,
    pub g: GraphView<'a>,
    pub injective: bool,
    pub vars: usize,
    pub out: &'a Output<'o>,
    pub stats: &'a SearchStats,
    /// Search nodes between two looks at the stop flag, the clock and idle workers (at least 1).
    pub check_every: u32,
    /// Zeroed `owner` arrays kept between searches (allocating `|V|` bytes per query would make an
    /// anchored query's time grow with the graph).
    pub owners: &'a OwnerPool,
    /// Workers' arrays kept between searches.
    pub rooms: &'a RoomPool,
    /// Whether twin candidates stand for each other ([`CandidateSpace::twins_of`]): when counting,
    /// without edge variables.
    pub twins: bool,
}

/// Spare all-zero per-data-node arrays of a graph.
#[derive(Debug, Default)]
pub struct OwnerPool(std::sync::Mutex<Vec<Vec<u8>>>);

impl OwnerPool {
    /// A pool holding one array for `nodes` nodes, so that a first query does not allocate it.
    pub fn prepared(nodes: usize) -> Self {
        OwnerPool(std::sync::Mutex::new(vec![vec![0u8; nodes]]))
    }

    fn take(&self, nodes: usize) -> Vec<u8> {
        let spare = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match spare {
            Some(v) if v.len() == nodes => v,
            _ => vec![0u8; nodes],
        }
    }

    fn give(&self, v: Vec<u8>) {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // One per thread that may search at once is plenty.
        if spare.len() < 64 {
            spare.push(v);
        }
    }
}

/// A worker's arrays, kept between searches: a small query's search allocated them afresh, and
/// each level's buffer again as it first filled, which was a third of its search time (HPRD, warm).
#[derive(Default)]
pub struct Room {
    buf: Vec<Vec<u32>>,
    len: Vec<u32>,
    owned: Vec<bool>,
    anc: Vec<u64>,
    frames: Vec<Frame>,
    prefix: Vec<(usize, u32)>,
    scratch: Vec<u32>,
    rows: Vec<u32>,
    groups: Vec<leaves::Group>,
    group_scratch: Vec<u32>,
    group_order: Vec<usize>,
    counter: leaves::Counter,
    twins: Vec<u32>,
    twin_keys: Vec<(u64, u32)>,
    memo: Vec<(u64, u64, u64)>,
}

impl crate::spares::Room for Room {
    fn room_bytes(&self) -> usize {
        use crate::spares::bytes_of;
        let levels: usize = self.buf.iter().map(bytes_of).sum();
        levels
            + bytes_of(&self.buf)
            + bytes_of(&self.len)
            + bytes_of(&self.owned)
            + bytes_of(&self.anc)
            + bytes_of(&self.scratch)
            + bytes_of(&self.rows)
            + bytes_of(&self.group_scratch)
            + bytes_of(&self.twins)
            + bytes_of(&self.twin_keys)
            + bytes_of(&self.memo)
    }
}

/// Spare [`Room`]s of an engine's workers.
pub type RoomPool = crate::spares::Spares<Room>;

/// One open level of the depth-first search: node `u` tries `ext[u][pos..end]`.
#[derive(Clone, Debug, Default)]
struct Frame {
    u: usize,
    pos: usize,
    end: usize,
    /// The union of the children's failing sets so far.
    fail: u64,
    /// Some of this level's candidates went to another worker: it can claim no failing set.
    split: bool,
    /// The variable edges bound with this level's node, the edge variables among them it binds,
    /// and the bindings (`new_vars.len()` values each) of the
    /// current candidate still to try.
    var_edges: Vec<dag::VarEdge>,
    new_vars: Vec<usize>,
    combos: Vec<u32>,
    combo_pos: usize,
    /// Whether the current candidate is assigned.
    assigned: bool,
    /// This frame's instance (twin results are kept per instance), the current candidate's twin
    /// slot (`NONE`: none), and the worker's count and gifts when it was assigned.
    epoch: u64,
    twin: u32,
    count_at: u128,
    gave_at: u64,
    /// The failing set the current candidate's subtree reported.
    last_fail: u64,
}

/// A piece of work: the partial match (in assignment order, as candidate indices) and edge
/// variables to rebuild, and the candidates of node `u` to try under it.
#[derive(Clone, Debug)]
pub struct Task {
    prefix: Vec<(usize, u32)>,
    vars: [u32; MAX_EDGE_VARIABLES],
    u: usize,
    cands: Vec<u32>,
}

/// What a search node does next.
enum Next {
    Embedding,
    /// Count mode: the rest is counted here; the failing set applies when the count is zero.
    Counted(u128, u64),
    Extend(usize),
}

/// A worker's mutable search state.
///
/// Each query node has a stack of *levels*, one per matched neighbour: level `k` holds the node's
/// extendable candidates (indices into its candidate array) once `k` of its neighbours are matched,
/// the intersection of their candidate-space lists, and its dynamic ancestors (DAF's): the node and
/// the ancestors of the neighbours that narrowed it. Matching a node pushes a level on each
/// unmatched neighbour, unmatching pops it. A node with a level is extendable.
pub struct Worker<'c, 'a, 'o> {
    cx: &'c Context<'a, 'o>,
    /// Data node and candidate index per query node (`NONE`: unmatched).
    m: [u32; MAX_QUERY_NODES],
    mi: [u32; MAX_QUERY_NODES],
    vars: [u32; MAX_EDGE_VARIABLES],
    matched: u64,
    all: u64,
    /// Nodes with at least one level.
    extendable: u64,
    /// Levels per node; level `k` of node `u` is entry `u * stride + k - 1` of the arrays below.
    depth: [u8; MAX_QUERY_NODES],
    stride: usize,
    /// A list of the space itself when one list decides the level (no copy), else `buf[..len]`;
    /// `len` holds the length either way.
    borrowed: Vec<&'a [u32]>,
    buf: Vec<Vec<u32>>,
    len: Vec<u32>,
    owned: Vec<bool>,
    anc: Vec<u64>,
    /// Under iso: per data node, the query node using it plus one (0: free).
    owner: Vec<u8>,
    frames: Vec<Frame>,
    top: usize,
    /// The assignments below the frames: a task's prefix.
    prefix: Vec<(usize, u32)>,
    scratch: Vec<u32>,
    rows: Vec<u32>,
    /// Matches counted and not yet handed to the output (u128: leaf products pass 2^64).
    counted: u128,
    until_check: u32,
    stopped: bool,
    /// The search stopped to be continued with helpers (`resume`): its frames are still open.
    paused: bool,
    stats: Local,
    /// Reused by leaf counting.
    groups: Vec<leaves::Group>,
    group_scratch: Vec<u32>,
    group_order: Vec<usize>,
    counter: leaves::Counter,
    /// Per candidate slot, its twin representative, for the nodes in `twins_known` (found the
    /// first time a node branches); per slot, (frame instance, count, failing set) of a finished
    /// subtree.
    twins: Vec<u32>,
    twins_known: u64,
    twin_keys: Vec<(u64, u32)>,
    memo: Vec<(u64, u64, u64)>,
    epoch: u64,
    /// Matches counted and pieces of work given away by this worker, ever (never reset).
    total: u128,
    gave: u64,
}

impl Drop for Worker<'_, '_, '_> {
    /// Gives the owner array back, all zero again.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if self.cx.injective {
            self.release();
            self.cx.owners.give(std::mem::take(&mut self.owner));
        }
        let room = Room {
            buf: std::mem::take(&mut self.buf),
            len: std::mem::take(&mut self.len),
            owned: std::mem::take(&mut self.owned),
            anc: std::mem::take(&mut self.anc),
            frames: std::mem::take(&mut self.frames),
            prefix: std::mem::take(&mut self.prefix),
            scratch: std::mem::take(&mut self.scratch),
            rows: std::mem::take(&mut self.rows),
            groups: std::mem::take(&mut self.groups),
            group_scratch: std::mem::take(&mut self.group_scratch),
            group_order: std::mem::take(&mut self.group_order),
            counter: std::mem::take(&mut self.counter),
            twins: std::mem::take(&mut self.twins),
            twin_keys: std::mem::take(&mut self.twin_keys),
            memo: std::mem::take(&mut self.memo),
        };
        self.cx.rooms.give(room);
    }
}

/// The members of a bit set, ascending.
fn bits_of(mut set: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (set != 0).then(|| {
            let u = set.trailing_zeros() as usize;
            set &= set - 1;
            u
        })
    })
}

/// A worker's share of [`SearchStats`], added in at each flush.
#[derive(Clone, Copy, Debug, Default)]
struct Local {
    nodes: u64,
    backjumps: u64,
    leaf_counts: u64,
    splits: u64,
    twins: u64,
}

impl<'c, 'a, 'o> Worker<'c, 'a, 'o> {
    pub fn new(cx: &'c Context<'a, 'o>) -> Self {
        let n = cx.dag.n;
        let owner = if cx.injective {
            cx.owners.take(cx.g.node_count())
        } else {
            Vec::new()
        };
        // One level per neighbour, and one for a task's share of a node's candidates.
        let stride = cx.dag.max_neighbours + 1;
        let levels = n * stride;
        let mut room = cx.rooms.take();
        // Every level's contents are written before they are read (`len` says how much of a
        // buffer is in use); the twins and their results are per search.
        room.buf.resize(levels, Vec::new());
        room.len.clear();
        room.len.resize(levels, 0);
        room.owned.clear();
        room.owned.resize(levels, false);
        room.anc.clear();
        room.anc.resize(levels, 0);
        room.rows.clear();
        room.twins.clear();
        room.memo.clear();
        let mut w = Worker {
            cx,
            m: [NONE; MAX_QUERY_NODES],
            mi: [NONE; MAX_QUERY_NODES],
            vars: [NONE; MAX_EDGE_VARIABLES],
            matched: 0,
            all: if n == 64 { ALL } else { bit(n) - 1 },
            extendable: 0,
            depth: [0; MAX_QUERY_NODES],
            stride,
            borrowed: vec![&[]; levels],
            buf: room.buf,
            len: room.len,
            owned: room.owned,
            anc: room.anc,
            owner,
            frames: room.frames,
            top: 0,
            prefix: room.prefix,
            scratch: room.scratch,
            rows: room.rows,
            counted: 0,
            until_check: cx.check_every.max(1),
            stopped: false,
            paused: false,
            stats: Local::default(),
            groups: room.groups,
            group_scratch: room.group_scratch,
            group_order: room.group_order,
            counter: room.counter,
            twins: room.twins,
            twins_known: 0,
            twin_keys: room.twin_keys,
            memo: room.memo,
            epoch: 0,
            total: 0,
            gave: 0,
        };
        w.reset();
        w
    }

    /// Back to the empty partial match.
    fn reset(&mut self) {
        self.release();
        let n = self.cx.dag.n;
        self.m[..n].fill(NONE);
        self.mi[..n].fill(NONE);
        self.depth[..n].fill(0);
        self.vars = [NONE; MAX_EDGE_VARIABLES];
        self.matched = 0;
        self.extendable = 0;
        self.top = 0;
        self.prefix.clear();
    }

    /// Frees the data nodes of the current match in `owner`.
    fn release(&mut self) {
        if self.cx.injective {
            for &v in self.m[..self.cx.dag.n].iter().filter(|&&v| v != NONE) {
                self.owner[v as usize] = 0;
            }
        }
    }

    /// The whole search from the empty match.
    pub fn search_all(&mut self, pool: &pool::Pool) {
        self.reset();
        self.descend(pool);
    }

    /// A task from another worker.
    pub fn search_task(&mut self, task: Task, pool: &pool::Pool) {
        self.reset();
        for &(u, i) in &task.prefix {
            // The sender had this prefix assigned, so it holds here too.
            let _ = self.assign(u, i);
        }
        self.prefix = task.prefix;
        self.vars = task.vars;
        // The task's share of `u`'s candidates, as a level of its own.
        let u = task.u;
        let at = u * self.stride + self.depth[u] as usize;
        self.len[at] = task.cands.len() as u32;
        self.buf[at] = task.cands;
        self.owned[at] = true;
        self.push_level(u, self.ancestors(u));
        let end = self.ext(u).len();
        self.push_frame(u, end, true);
        self.run_frames(pool);
        self.flush();
    }

    /// Flushes buffered rows and counts into the output.
    pub fn flush(&mut self) {
        let s = std::mem::take(&mut self.stats);
        let total = &self.cx.stats;
        total.nodes.fetch_add(s.nodes, Ordering::Relaxed);
        total.backjumps.fetch_add(s.backjumps, Ordering::Relaxed);
        total
            .leaf_counts
            .fetch_add(s.leaf_counts, Ordering::Relaxed);
        total.splits.fetch_add(s.splits, Ordering::Relaxed);
        total.twins.fetch_add(s.twins, Ordering::Relaxed);
        if self.counted > 0 {
            self.cx.out.add_count(self.counted);
            self.counted = 0;
        }
        if !self.rows.is_empty() {
            let width = self.cx.dag.n + self.cx.vars;
            if !self.cx.out.rows(&self.rows, width) {
                self.stopped = true;
            }
            self.rows.clear();
        }
    }

    /// Goes on with a search `search_all` paused (with helpers now).
    pub fn resume(&mut self, pool: &pool::Pool) {
        self.paused = false;
        self.run_frames_above(0, pool);
        self.flush();
    }

    /// Decides at the current search node, and runs the frames that opens.
    fn descend(&mut self, pool: &pool::Pool) {
        match self.next() {
            Next::Embedding => self.embedding(),
            Next::Counted(n, _) => self.add_count(n),
            Next::Extend(u) => {
                let end = self.ext(u).len();
                self.push_frame(u, end, false);
                self.run_frames(pool);
            }
        }
        self.flush();
    }

    fn push_frame(&mut self, u: usize, end: usize, split: bool) {
        if self.frames.len() == self.top {
            self.frames.push(Frame::default());
        }
        let f = &mut self.frames[self.top];
        f.u = u;
        f.pos = 0;
        f.end = end;
        f.fail = 0;
        f.split = split;
        f.var_edges.clear();
        f.new_vars.clear();
        // The variable edges to matched nodes (and self-loops) are bound with `u`.
        for e in self.cx.dag.var_edges(u) {
            if e.other == u || self.matched & bit(e.other) != 0 {
                f.var_edges.push(*e);
                if self.vars[e.var] == NONE {
                    f.new_vars.push(e.var);
                }
            }
        }
        f.new_vars.sort_unstable();
        f.new_vars.dedup();
        f.combos.clear();
        f.combo_pos = 0;
        f.assigned = false;
        self.epoch += 1;
        f.epoch = self.epoch;
        f.twin = NONE;
        self.top += 1;
        if self.cx.twins && end > 1 && self.twins_known & bit(u) == 0 {
            self.find_twins(u);
        }
    }

    /// The iterative depth-first loop over the frames above the current depth at entry.
    fn run_frames(&mut self, pool: &pool::Pool) {
        self.run_frames_above(self.top - 1, pool);
    }

    /// The depth-first loop until depth `base`, or until the pool pauses the search.
    fn run_frames_above(&mut self, base: usize, pool: &pool::Pool) {
        while self.top > base {
            if self.stopped || self.tick(pool) {
                if self.paused {
                    return;
                }
                self.stopped = true;
                // Unwind without claims: the answer is cut short anyway.
                while self.top > base {
                    self.close_candidate();
                    self.top -= 1;
                }
                return;
            }
            let d = self.top - 1;
            let Some(child_fail) = self.next_child(d) else {
                // This level is done: report to the level above.
                let f = &self.frames[d];
                let fail = if f.split { ALL } else { f.fail };
                self.top -= 1;
                if self.top > base {
                    self.child_result(self.top - 1, fail);
                }
                continue;
            };
            match child_fail {
                Some(fail) => self.child_result(d, fail),
                None => match self.next() {
                    Next::Embedding => {
                        self.embedding();
                        self.child_result(d, ALL);
                    }
                    Next::Counted(n, fail) => {
                        self.add_count(n);
                        self.child_result(d, if n > 0 { ALL } else { fail });
                    }
                    Next::Extend(u) => {
                        let end = self.ext(u).len();
                        self.push_frame(u, end, false);
                    }
                },
            }
        }
    }

    /// Every `CHECK_EVERY` search nodes: flush, look at the stop flag and the clock, feed idle
    /// workers. True when the search must stop, or pause to go on with helpers (`paused`).
    #[inline]
    fn tick(&mut self, pool: &pool::Pool) -> bool {
        self.until_check -= 1;
        if self.until_check > 0 {
            return false;
        }
        self.until_check = self.cx.check_every.max(1);
        self.flush();
        if self.stopped || self.cx.out.stopped() {
            return true;
        }
        self.paused = pool.on_tick(self);
        self.paused
    }

    /// Advances frame `d` to its next (candidate, binding): `None` when there is none; `Some(None)`
    /// when it is assigned and the search goes on below; `Some(Some(fail))` when it failed at once.
    fn next_child(&mut self, d: usize) -> Option<Option<u64>> {
        // More bindings of the assigned candidate?
        let f = &mut self.frames[d];
        let k = f.new_vars.len();
        if f.assigned && k > 0 && f.combo_pos + k <= f.combos.len() {
            let at = f.combo_pos;
            f.combo_pos += k;
            for j in 0..k {
                self.vars[self.frames[d].new_vars[j]] = self.frames[d].combos[at + j];
            }
            return Some(None);
        }
        self.close_candidate_at(d);
        let (u, pos) = (self.frames[d].u, self.frames[d].pos);
        if pos >= self.frames[d].end {
            return None;
        }
        let i = self.ext(u)[pos];
        self.frames[d].pos += 1;
        let v = self.cx.space.cands(u)[i as usize];
        if self.cx.injective {
            let o = self.owner[v as usize];
            if o != 0 {
                return Some(Some(self.ancestors(u) | self.ancestors(o as usize - 1)));
            }
        }
        if let Some(slot) = self.twin_slot(u, i) {
            let (epoch, count, fail) = self.memo[slot];
            if epoch == self.frames[d].epoch {
                // A twin's subtree was searched under this very prefix: the same result.
                self.stats.twins += 1;
                self.add_count(count.into());
                return Some(Some(if count > 0 { ALL } else { fail }));
            }
            let f = &mut self.frames[d];
            f.twin = slot as u32;
            f.count_at = self.total;
            f.gave_at = self.gave;
        } else {
            self.frames[d].twin = NONE;
        }
        if let Err(fail) = self.assign(u, i) {
            return Some(Some(fail));
        }
        self.frames[d].assigned = true;
        self.count_node();
        if self.frames[d].var_edges.is_empty() {
            return Some(None);
        }
        // Edge variables: enumerate this candidate's bindings (checking those bound already), then
        // take the first.
        let f = &mut self.frames[d];
        let mut combos = std::mem::take(&mut f.combos);
        let new_vars = std::mem::take(&mut f.new_vars);
        let edges = std::mem::take(&mut f.var_edges);
        combos.clear();
        let solutions = self.bindings(u, &edges, &new_vars, &mut combos);
        let f = &mut self.frames[d];
        f.new_vars = new_vars;
        f.var_edges = edges;
        f.combos = combos;
        f.combo_pos = 0;
        if solutions == 0 {
            // Relations disagree with a shared edge variable: no failing set is claimed.
            return Some(Some(ALL));
        }
        let k = f.new_vars.len();
        f.combo_pos = k;
        for j in 0..k {
            self.vars[self.frames[d].new_vars[j]] = self.frames[d].combos[j];
        }
        Some(None)
    }

    /// `n` more matches; past `u128::MAX` (`total` bounds `counted`) the count overflows.
    #[inline]
    fn add_count(&mut self, n: u128) {
        match self.total.checked_add(n) {
            Some(total) => {
                self.total = total;
                self.counted += n;
            }
            None => self.overflow(),
        }
        // Past a limit: hand the count over and stop now, not at the next tick (up to
        // `check_every` search nodes later, often most of a capped query's search).
        if n > 0 && self.wanted() == Some(0) {
            self.flush();
            self.stopped = true;
        }
    }

    /// The count passed `u128::MAX`: the output records the error, and the search stops.
    fn overflow(&mut self) {
        self.cx.out.count_overflowed();
        self.stopped = true;
    }

    /// `Counted(n, fail)`, or (`None`: more than `u128::MAX`) the overflow, counting nothing.
    fn count_or_overflow(&mut self, n: Option<u128>, fail: u64) -> Next {
        match n {
            Some(n) => Next::Counted(n, fail),
            None => {
                self.overflow();
                Next::Counted(0, ALL)
            }
        }
    }

    #[inline]
    fn count_node(&mut self) {
        self.stats.nodes += 1;
    }

    /// Undoes frame `d`'s current candidate, if assigned.
    fn close_candidate_at(&mut self, d: usize) {
        self.frames[d].combos.clear();
        self.frames[d].combo_pos = 0;
        if !self.frames[d].assigned {
            return;
        }
        let u = self.frames[d].u;
        for j in 0..self.frames[d].new_vars.len() {
            self.vars[self.frames[d].new_vars[j]] = NONE;
        }
        self.frames[d].assigned = false;
        let f = &self.frames[d];
        // Kept only for a whole subtree: not cut short, no part of it given away; and, so that the
        // memo stays 24 bytes a slot, only a count within 64 bits (a larger one is searched again).
        if f.twin != NONE && !self.stopped && self.gave == f.gave_at {
            if let Ok(count) = u64::try_from(self.total - f.count_at) {
                self.memo[f.twin as usize] = (f.epoch, count, f.last_fail);
            }
        }
        self.unassign(u);
    }

    fn close_candidate(&mut self) {
        self.close_candidate_at(self.top - 1);
    }

    /// A child of frame `d` ended with failing set `fail`.
    fn child_result(&mut self, d: usize, fail: u64) {
        let f = &mut self.frames[d];
        f.last_fail = fail;
        if fail != ALL && fail & bit(f.u) == 0 && !f.split {
            // Nothing this level could still try changes the failure: skip its other candidates.
            f.fail = fail;
            if f.pos < f.end || f.combo_pos < f.combos.len() {
                self.stats.backjumps += 1;
            }
            f.pos = f.end;
            f.combo_pos = f.combos.len();
        } else {
            f.fail |= fail;
        }
    }

    /// Matches `u` to candidate `i` and narrows its unmatched neighbours' extendable candidates.
    /// `Err(failing set)`, with nothing changed, when a neighbour is left with none, or (under iso)
    /// none free: DAF's empty-set class.
    fn assign(&mut self, u: usize, i: u32) -> Result<(), u64> {
        let cx = self.cx;
        let v = cx.space.cands(u)[i as usize];
        self.m[u] = v;
        self.mi[u] = i;
        self.matched |= bit(u);
        if cx.injective {
            self.owner[v as usize] = u as u8 + 1;
        }
        let anc = self.ancestors(u);
        let neighbours = cx.dag.neighbours(u);
        for (j, nb) in neighbours.iter().enumerate() {
            let w = nb.node;
            if self.matched & bit(w) != 0 {
                continue;
            }
            self.narrow(w, cx.dag.lists(nb), i, anc);
            if let Some(fail) = self.dead_end(w) {
                for nb in neighbours[..=j].iter().rev() {
                    if self.matched & bit(nb.node) == 0 {
                        self.pop_level(nb.node);
                    }
                }
                self.unmatch(u);
                return Err(fail);
            }
        }
        Ok(())
    }

    fn unassign(&mut self, u: usize) {
        for nb in self.cx.dag.neighbours(u) {
            if self.matched & bit(nb.node) == 0 {
                self.pop_level(nb.node);
            }
        }
        self.unmatch(u);
    }

    fn unmatch(&mut self, u: usize) {
        if self.cx.injective {
            self.owner[self.m[u] as usize] = 0;
        }
        self.m[u] = NONE;
        self.mi[u] = NONE;
        self.matched &= !bit(u);
    }

    /// Opens the level the caller filled (`len`, and `buf` or `borrowed`) on `w`, with dynamic
    /// ancestors `anc` (the previous level's and the narrowing node's).
    fn push_level(&mut self, w: usize, anc: u64) {
        let at = w * self.stride + self.depth[w] as usize;
        self.depth[w] += 1;
        self.extendable |= bit(w);
        self.anc[at] = anc;
    }

    fn pop_level(&mut self, w: usize) {
        self.depth[w] -= 1;
        if self.depth[w] == 0 {
            self.extendable &= !bit(w);
        }
    }

    /// A new level on `w`: its extendable candidates intersected with the lists `edges` give at
    /// `u`'s candidate `i` (one list, before any other neighbour narrowed `w`: that list itself).
    fn narrow(&mut self, w: usize, edges: &[u32], i: u32, anc_u: u64) {
        let space = self.cx.space;
        let list = |k: u32| space.list(k as usize, i);
        let fresh = self.depth[w] == 0;
        let anc = self.ancestors(w) | anc_u;
        let at = w * self.stride + self.depth[w] as usize;
        if fresh && edges.len() == 1 {
            let l = list(edges[0]);
            self.borrowed[at] = l;
            self.len[at] = l.len() as u32;
            self.owned[at] = false;
            self.push_level(w, anc);
            return;
        }
        // Intersect straight into the level's buffer; a second list (parallel query edges) goes
        // through the scratch buffer.
        let mut buf = std::mem::take(&mut self.buf[at]);
        let (first, rest) = if fresh {
            (list(edges[0]), &edges[1..])
        } else {
            (self.ext(w), edges)
        };
        let l = list(rest[0]);
        let room = first.len().min(l.len());
        if buf.len() < room {
            buf.resize(room, 0);
        }
        let mut n = intersect_into(l, first, &mut buf);
        for &k in &rest[1..] {
            let l = list(k);
            let room = n.min(l.len());
            if self.scratch.len() < room {
                self.scratch.resize(room, 0);
            }
            n = intersect_into(l, &buf[..n], &mut self.scratch);
            std::mem::swap(&mut buf, &mut self.scratch);
        }
        self.buf[at] = buf;
        self.len[at] = n as u32;
        self.owned[at] = true;
        self.push_level(w, anc);
    }

    /// The failing set when `w` has no extendable candidate, or under iso none that no matched node
    /// uses: its ancestors and those of the nodes using its candidates.
    fn dead_end(&self, w: usize) -> Option<u64> {
        let cx = self.cx;
        let ext = self.ext(w);
        if !cx.injective {
            return ext.is_empty().then(|| self.ancestors(w));
        }
        let cands = cx.space.cands(w);
        let mut fail = self.ancestors(w);
        for &i in ext {
            match self.owner[cands[i as usize] as usize] {
                0 => return None,
                o => fail |= self.ancestors(o as usize - 1),
            }
        }
        Some(fail)
    }

    /// The slot of candidate `i` of `u`'s twin representative, when twins are in use and it has one.
    #[inline]
    fn twin_slot(&self, u: usize, i: u32) -> Option<usize> {
        if self.twins_known & bit(u) == 0 {
            return None;
        }
        let start = self.cx.space.cand_start(u);
        match self.twins[start + i as usize] {
            NONE => None,
            rep => Some(start + rep as usize),
        }
    }

    /// Finds `u`'s twins, once per search, when it first branches (a node searched with one
    /// candidate at a time never needs them).
    fn find_twins(&mut self, u: usize) {
        let space = self.cx.space;
        if self.twins.is_empty() {
            self.twins.resize(space.slot_count(), NONE);
            self.memo.resize(space.slot_count(), (0, 0, 0));
        }
        let (start, count) = (space.cand_start(u), space.cand_count(u));
        space.twins_of(
            u,
            self.cx.injective,
            &mut self.twins[start..start + count],
            &mut self.twin_keys,
        );
        self.twins_known |= bit(u);
    }

    /// `u`'s dynamic ancestors: itself and, transitively, the matched neighbours that narrowed it.
    #[inline]
    fn ancestors(&self, u: usize) -> u64 {
        match self.depth[u] as usize {
            0 => bit(u),
            d => self.anc[u * self.stride + d - 1],
        }
    }

    /// How many extendable candidates `u` has.
    #[inline]
    fn size(&self, u: usize) -> usize {
        match self.depth[u] as usize {
            0 => self.cx.space.cand_count(u),
            d => self.len[u * self.stride + d - 1] as usize,
        }
    }

    /// `u`'s extendable candidates (all of them before any neighbour is matched).
    #[inline]
    fn ext(&self, u: usize) -> &[u32] {
        match self.depth[u] as usize {
            0 => self.cx.space.identity(self.cx.space.cand_count(u)),
            d => {
                let at = u * self.stride + d - 1;
                if self.owned[at] {
                    &self.buf[at][..self.len[at] as usize]
                } else {
                    self.borrowed[at]
                }
            }
        }
    }

    /// At a search node: an embedding, a count of the rest, or the next node to extend.
    fn next(&mut self) -> Next {
        let dag = self.cx.dag;
        let remaining = self.all & !self.matched;
        if remaining == 0 {
            return Next::Embedding;
        }
        let mut inner = remaining & self.extendable & !dag.leaves;
        if self.cx.out.count_only() {
            if remaining.count_ones() == 1 {
                let u = remaining.trailing_zeros() as usize;
                if dag.var_edges(u).is_empty() {
                    return self.count_last(u);
                }
            }
            // The unmatched nodes with an unmatched neighbour. With none (and no variable edge),
            // each one's neighbours are all matched and its extendable candidates final: the rest
            // is counted as leaves are.
            let open = bits_of(remaining)
                .filter(|&u| dag.adjacent[u] & remaining != 0)
                .fold(0, |set, u| set | bit(u));
            if remaining & !dag.leaves == 0 || (open == 0 && remaining & dag.with_vars == 0) {
                self.stats.leaf_counts += 1;
                return self.count_leaves(remaining);
            }
            // Otherwise a node whose neighbours are all matched waits like a leaf, so that what is
            // left turns independent (and is counted) as early as possible.
            if inner & open != 0 {
                inner &= open;
            }
        }
        // Non-leaves first; a component's root once nothing of the current one is extendable.
        if inner != 0 {
            return self.pick(inner);
        }
        if let Some(&r) = dag.roots.iter().find(|&&r| remaining & bit(r) != 0) {
            return Next::Extend(r);
        }
        // Only leaves are left, each with its neighbour matched. (Should none be extendable, any
        // node may still start from all its candidates: its edges are checked from its neighbours.)
        let leaves = remaining & self.extendable;
        self.pick(if leaves != 0 { leaves } else { remaining })
    }

    /// The node of `pool` with the fewest extendable candidates (DAF's candidate-size order: on
    /// yeast it visited fewer search nodes than path-size weights, 19.7M against 22.7M on the
    /// full counts, 6.7M against 22.7M on the first 10^5 of the 32-node queries).
    fn pick(&self, pool: u64) -> Next {
        let best = bits_of(pool)
            .min_by_key(|&u| self.size(u))
            .unwrap_or(NONE as usize);
        Next::Extend(best)
    }

    /// The last unmatched node, counted: its free extendable candidates.
    fn count_last(&self, u: usize) -> Next {
        let (n, fail) = self.count_free(u);
        Next::Counted(n, fail)
    }

    /// How many of `u`'s extendable candidates no node uses (all of them without injectivity), and
    /// the failing set should there be none: `u`'s ancestors and those of the users.
    fn count_free(&self, u: usize) -> (u128, u64) {
        let cx = self.cx;
        if !cx.injective {
            return (self.ext(u).len() as u128, self.ancestors(u));
        }
        let cands = cx.space.cands(u);
        let mut n = 0u128;
        let mut fail = self.ancestors(u);
        for &i in self.ext(u) {
            match self.owner[cands[i as usize] as usize] {
                0 => n += 1,
                o => fail |= self.ancestors(o as usize - 1),
            }
        }
        (n, fail)
    }

    /// The unmatched nodes, all leaves with their parent matched (or, more generally, no two of them
    /// neighbours and all their neighbours matched), counted without enumeration.
    /// A leaf without a free candidate, or a group of leaves with fewer free candidates than leaves,
    /// fails with just its own and its candidates' owners' ancestors.
    fn count_leaves(&mut self, leaves: u64) -> Next {
        let cx = self.cx;
        if !cx.injective {
            let n = leaves::product(bits_of(leaves).map(|u| Some(self.ext(u).len() as u128)));
            return self.count_or_overflow(n, ALL);
        }
        // A leaf whose candidates no other leaf here can have (another label: yeast's small
        // queries, mostly) multiplies in its free candidates, counted without being listed.
        let alone = bits_of(leaves)
            .filter(|&u| cx.dag.may_share[u] & leaves == 0)
            .fold(0, |set, u| set | bit(u));
        let mut n = Some(1u128);
        let mut fail = 0u64;
        for u in bits_of(alone) {
            let (free, conflicts) = self.count_free(u);
            if free == 0 {
                return Next::Counted(0, conflicts);
            }
            fail |= conflicts;
            n = n.and_then(|n| n.checked_mul(free));
        }
        let rest = leaves & !alone;
        if rest == 0 {
            return self.count_or_overflow(n, fail);
        }
        match self.count_groups(rest) {
            // (An overflow in the groups is recorded there and counts 0.)
            Next::Counted(0, rest_fail) => Next::Counted(0, rest_fail),
            Next::Counted(m, rest_fail) => {
                self.count_or_overflow(n.and_then(|n| n.checked_mul(m)), fail | rest_fail)
            }
            other => other,
        }
    }

    /// [`Self::count_leaves`] under injectivity for leaves whose candidates may meet: free data
    /// nodes per leaf, grouped where leaves have the very same ones, counted by
    /// [`leaves::count_injective`].
    fn count_groups(&mut self, leaves: u64) -> Next {
        let mut groups = std::mem::take(&mut self.groups);
        let mut used = 0;
        let mut fail = 0u64;
        for u in bits_of(leaves) {
            let mut free = std::mem::take(&mut self.group_scratch);
            let conflicts = self.free_candidates(u, &mut free);
            self.group_scratch = free;
            fail |= conflicts;
            if self.group_scratch.is_empty() {
                self.groups = groups;
                return Next::Counted(0, conflicts);
            }
            match groups[..used]
                .iter_mut()
                .find(|g| g.list == self.group_scratch)
            {
                Some(g) => {
                    g.leaves += 1;
                    g.fail |= conflicts;
                }
                None => {
                    if used == groups.len() {
                        groups.push(leaves::Group::default());
                    }
                    let g = &mut groups[used];
                    g.list.clear();
                    g.list.extend_from_slice(&self.group_scratch);
                    g.leaves = 1;
                    g.fail = conflicts;
                    used += 1;
                }
            }
        }
        let next = if let Some(g) = groups[..used]
            .iter()
            .find(|g| (g.list.len() as u32) < g.leaves)
        {
            Next::Counted(0, g.fail)
        } else if used == 2 {
            // One merge, cheaper than marking.
            self.count_or_overflow(leaves::count_pair(&groups[0], &groups[1]), fail)
        } else if self.disjoint(&groups[..used]) {
            let n = leaves::product(
                groups[..used]
                    .iter()
                    .map(|g| leaves::falling(g.list.len() as u64, g.leaves as u64)),
            );
            self.count_or_overflow(n, fail)
        } else if let Some(bound) = self
            .wanted()
            .map(|want| {
                (
                    want,
                    leaves::lower_bound(&groups[..used], &mut self.group_order, want),
                )
            })
            .and_then(|(want, bound)| (bound >= want).then_some(bound))
        {
            // A limit needs no more than this many.
            Next::Counted(bound.into(), fail)
        } else {
            match leaves::count_injective(&groups[..used], &mut self.counter) {
                Ok(n) => Next::Counted(n, fail),
                Err(leaves::Uncounted::Overflow) => self.count_or_overflow(None, fail),
                Err(leaves::Uncounted::TooManySteps) => self.pick(leaves),
            }
        };
        self.groups = groups;
        next
    }

    /// Under a limit, the matches still wanted (those this worker holds back included): counting
    /// past it changes nothing.
    fn wanted(&self) -> Option<u64> {
        self.cx
            .out
            .count_wanted()
            .map(|w| w.saturating_sub(u64::try_from(self.counted).unwrap_or(u64::MAX)))
    }

    /// Whether no data node is free for two groups, by marking them in `owner` (free nodes hold 0;
    /// the mark is above any query node's entry) and clearing the marks again.
    fn disjoint(&mut self, groups: &[leaves::Group]) -> bool {
        const MARK: u8 = u8::MAX;
        let mut clash = false;
        for g in groups {
            for &v in &g.list {
                let o = &mut self.owner[v as usize];
                clash |= *o == MARK;
                *o = MARK;
            }
        }
        for g in groups {
            for &v in &g.list {
                self.owner[v as usize] = 0;
            }
        }
        !clash
    }

    /// `u`'s extendable candidates that no node uses, into `out`; returns `u`'s ancestors and those of
    /// the nodes using the others (the failing set if none is free).
    fn free_candidates(&self, u: usize, out: &mut Vec<u32>) -> u64 {
        let cx = self.cx;
        let mut fail = self.ancestors(u);
        out.clear();
        for &i in self.ext(u) {
            let v = cx.space.cands(u)[i as usize];
            match self.owner[v as usize] {
                0 => out.push(v),
                o => fail |= self.ancestors(o as usize - 1),
            }
        }
        fail
    }

    fn embedding(&mut self) {
        let cx = self.cx;
        if cx.out.count_only() {
            self.add_count(1);
            return;
        }
        let n = cx.dag.n;
        self.rows.extend_from_slice(&self.m[..n]);
        self.rows.extend_from_slice(&self.vars[..cx.vars]);
        let held = self.rows.len() / (n + cx.vars);
        // Under a limit the rows that pass it go out at once, so the search stops there.
        if held >= FLUSH_ROWS || cx.out.rows_wanted().is_some_and(|w| held as u64 >= w) {
            self.flush();
        }
    }

    /// Bindings of `new_vars` for `u`'s variable edges at its current match, each relation between
    /// the endpoints a separate solution, consistent with variables bound already and with each other.
    /// Returns how many (with no new variable, 0 or 1: whether the bound ones hold).
    fn bindings(
        &mut self,
        u: usize,
        edges: &[dag::VarEdge],
        new_vars: &[usize],
        out: &mut Vec<u32>,
    ) -> u64 {
        let mut vars = self.vars;
        let mut rels = Vec::new();
        self.bind_from(u, edges, 0, &mut vars, new_vars, &mut rels, out)
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_from(
        &self,
        u: usize,
        edges: &[dag::VarEdge],
        at: usize,
        vars: &mut [u32; MAX_EDGE_VARIABLES],
        new_vars: &[usize],
        rels: &mut Vec<u32>,
        out: &mut Vec<u32>,
    ) -> u64 {
        let Some(e) = edges.get(at) else {
            out.extend(new_vars.iter().map(|&k| vars[k]));
            return 1;
        };
        let mut solutions = 0;
        let (a, b) = (self.m[u], self.m[e.other]);
        let (from, to) = if e.outgoing { (a, b) } else { (b, a) };
        let start = rels.len();
        relations_between(&self.cx.g, from, to, rels);
        let end = rels.len();
        for r in start..end {
            let rel = rels[r];
            if vars[e.var] == NONE {
                vars[e.var] = rel;
                solutions += self.bind_from(u, edges, at + 1, vars, new_vars, rels, out);
                vars[e.var] = NONE;
            } else if vars[e.var] == rel {
                solutions += self.bind_from(u, edges, at + 1, vars, new_vars, rels, out);
            }
        }
        rels.truncate(start);
        solutions
    }
}

/// The relations `r` with `from -r-> to`, ascending, appended to `out`; read from the shorter of
/// `from`'s outgoing and `to`'s incoming lists (each sorted by relation, then node).
fn relations_between(g: &GraphView, from: u32, to: u32, out: &mut Vec<u32>) {
    let (adj, x, y) = if g.out.degree(from) <= g.inc.degree(to) {
        (&g.out, from, to)
    } else {
        (&g.inc, to, from)
    };
    let (targets, labels) = adj.list(x);
    let mut start = 0;
    while start < targets.len() {
        let l = labels[start];
        let len = labels[start..].partition_point(|&z| z == l);
        if targets[start..start + len].binary_search(&y).is_ok() {
            out.push(l as u32);
        }
        start += len;
    }
}
