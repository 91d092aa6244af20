//! Many queries answered by one sequence of launches (a *batch*): the queries' candidate
//! bitsets, marks, job tables, candidate arrays and candidate-edge lists lie side by side, so that
//! each filtering launch (a wave), the candidate arrays, and the count and write of the
//! candidate-edge lists serve every query at once; the join's level `d` of every query is one
//! `extend_warp_batch` launch over a table of the queries' [`ExtendWarpArgs`] (and one
//! `extend_warp_bindings_batch` launch for the queries whose level `d` has an edge variable), the
//! depths queued back to back (on graphs with hubs, each depth's long pivot lists cut into
//! segments first: one `pivot_segments_batch` launch counts every query's side by side and one
//! scan numbers them all); then one read of every query's counters. Two reads in all for a batch of counts
//! whose levels fit their buffers. A query that wants rows (its output is not count-only) counts
//! no leaves: every node is enumerated, and its last level's rows land in the batch's row buffer,
//! read for every such query at once (a third read) and handed to its own output.
//!
//! Each query keeps its own limits: its memory budget is checked against what its filtering and
//! candidate space would take alone (a query over it gets its own error and leaves the batch), its
//! time limit (or cancel flag) takes it out of the filtering launches still to come (it is
//! answered as timed out), its levels stop on its own clock (`budget_ns`) and LIMIT (`stop_at`),
//! and a query whose levels
//! outgrow their batch buffers runs on alone after the batch from the first level that overflowed
//! (queued, growing or depth first, as [`Levels`] runs a query alone), its errors its own. A LIMIT
//! query's root runs its first part in the batch and the parts after it alone; under
//! [`Outgrown::Leave`], whose caller answers alone what goes on, a first part that did not
//! complete the answer leaves the query to its caller before any row is handed out. Each query
//! is handed over ([`OnAnswer`]) as soon as its answer is final, the ones that fit before the
//! ones that go on alone.

use std::time::{Duration, Instant};

use rayon::prelude::*;

use gpsense_kernels::abi::{
    CountLeavesArgs, CountLeavesBatchArgs, DevSlice, ExtendWarpArgs, ExtendWarpBatchArgs,
    PivotSegmentsArgs, PivotSegmentsBatchArgs,
};
use gpsense_kernels::bits;
use gpsense_planner::{Plan, QueryGraph};

use super::{
    by_node, rows_part, scan, scan_sums, Carver, CounterWords, DeviceReport, FilterQuery,
    FilterSizes, JoinQuery, LevelPlan, Levels, Pipeline, Prepared, QuerySpace, Region, RootCut,
    Slab, FIRST_ROOT_PART, LEAF_THREADS, QUEUED_WARPS, SEGMENT_PARENT_BYTES,
};
use crate::device::{as_bytes, read, Device, Launch};
use crate::engine::{BatchPhases, Outgrown};
use crate::filtering::FilterReport;
use crate::gpu_leaves::{self, LeafGroup};
use crate::layout::Layout;
use crate::output::Output;
use crate::{MatchError, Semantics};
use gpsense_kernels::join::LeafTerm;

/// Rows a level of a batched query may hold at most before the query runs on alone.
const BATCH_ROWS: u64 = 1 << 12;

/// Warps one depth's launch starts for all its queries together, about (at least 32 a query): about
/// twice the warps an H100 holds at once for `extend_warp_batch`. With work stealing more buy
/// nothing (a query's items past its own warps go to the warps of the queries before it): on the
/// model H100 a quarter of the 16,384 before gave the same spans, HPRD-200's and a yeast batch's.
const BATCH_WARPS: u64 = 1 << 12;

/// Bytes the level buffers of a whole batch take at most (their rows are shared out).
const BATCH_LEVEL_BYTES: u64 = 64 << 20;

/// One query of a batch: what it needs, and (once the batch ran) its answer or its own error.
pub(crate) struct BatchItem<'b, 'o> {
    pub q: &'b QueryGraph,
    pub plan: &'b Plan,
    /// The filtering layout (`Layout::new` over `plan`).
    pub layout: &'b Layout,
    /// The query's output: its count or its rows, its LIMIT and time limit.
    pub out: &'b Output<'o>,
    pub memory_budget: u64,
    /// The join plan, filter report and the query's own device work (levels, partial matches).
    pub result: Option<Result<(Plan, FilterReport, DeviceReport), MatchError>>,
}

/// A query that reached the join, with its join layout and counted leaves.
struct Joined {
    item: usize,
    layout: Layout,
    groups: Vec<LeafGroup>,
    terms: Vec<LeafTerm>,
    /// Bytes its filtering and candidate space would take alone.
    bytes: u64,
}

/// Where one query's level `d` writes in the batch's level buffer `d`.
#[derive(Clone, Copy, Default)]
struct Room {
    rows: DevSlice,
    capacity: u64,
}

/// Told of each query of a batch (its index in the items) as soon as its answer is final (its
/// `result` set, its output complete), with the bytes the device arena holds then: the queries
/// answered before the join (a budget refused, an empty candidate set), then those whose levels
/// fit their rooms as the batch's reads return, then each that goes on alone as it ends. Before,
/// every query waited for the slowest (a server's light requests for the heavy one beside them).
pub(crate) type OnAnswer<'h> = dyn FnMut(usize, &mut BatchItem, u64) + 'h;

impl<D: Device> Pipeline<'_, D> {
    /// Answers the queries of `items` as one batch; each item's `result` is set and handed to
    /// `on_answer` as it becomes final. An error returned is the device's and concerns every
    /// query not handed over yet.
    pub(crate) fn run_batch(
        &mut self,
        items: &mut [BatchItem],
        outgrown: Outgrown,
        on_answer: &mut OnAnswer,
    ) -> Result<BatchPhases, MatchError> {
        let start = Instant::now();
        let before = self.dev.counters();
        // The buffers an earlier user left, past what the batch's queries may hold together,
        // go back first (as a query alone gives back what passes its budget).
        let budgets = items.iter().map(|it| it.memory_budget);
        self.arena
            .fit(self.dev, budgets.fold(0, u64::saturating_add));
        let stride = bits::words_for(self.graph.nodes);
        // Filtering: queries within their budget, side by side. Each query's preparation is
        // host work of its own, on every core; only the places are a running sum.
        let prepared: Vec<Option<Prepared>> = items
            .par_iter()
            .with_min_len(8)
            .map(|it| (!it.out.stopped()).then(|| Prepared::new(it.q, it.layout, stride)))
            .collect();
        let mut sizes = FilterSizes::default();
        let mut admitted = Vec::new();
        for ((i, it), prep) in items.iter_mut().enumerate().zip(prepared) {
            let Some(prep) = prep else {
                it.result = Some(Ok((
                    it.plan.clone(),
                    FilterReport::default(),
                    Default::default(),
                )));
                continue;
            };
            if prep.alone > it.memory_budget {
                it.result = Some(Err(MatchError::DeviceBudget {
                    bytes: prep.alone,
                    budget: it.memory_budget,
                    filtering: true,
                }));
                continue;
            }
            let at = sizes;
            sizes += prep.own;
            admitted.push((i, at, prep));
        }
        let (admitted, fqs): (Vec<usize>, Vec<FilterQuery>) = {
            let items = &*items;
            admitted
                .into_par_iter()
                .with_min_len(8)
                .map(|(i, at, prep)| (i, FilterQuery::at(items[i].q, items[i].layout, prep, at)))
                .unzip()
        };
        let prepared = start.elapsed();
        let outs: Vec<&Output> = admitted.iter().map(|&i| items[i].out).collect();
        let spaces = if fqs.is_empty() {
            Vec::new()
        } else {
            // The candidate sets come back with the counts when a count may ask for estimates.
            let with_sets = admitted
                .iter()
                .any(|&i| items[i].out.count_only() && gpu_leaves::may_ask(items[i].q));
            self.filter_batch(
                &fqs,
                sizes,
                &|k| outs[k].stopped(),
                &|k| super::budget_ns(outs[k]),
                with_sets,
            )?
        };
        // A query the filtering kernels stopped on its clock is answered as timed out.
        for (out, s) in outs.iter().zip(&spaces) {
            if s.timed_out {
                out.time_out();
            }
        }
        let filter_time = start.elapsed();
        let filtered = self.dev.counters() - before;
        let all_counts: Vec<usize> = spaces.iter().flat_map(|s| s.counts.clone()).collect();
        // Join orders, leaf groups and join layouts, on every core (host work per query).
        let (semantics, shape, host) = (self.semantics, self.shape, self.host);
        let orders: Vec<_> = {
            let items = &*items;
            admitted
                .par_iter()
                .zip(&spaces)
                .with_min_len(8)
                .map(|(&i, space)| {
                    let it = &items[i];
                    let mut plan = crate::order::join_order(it.q, it.plan, &space.counts);
                    // Leaves are counted, not enumerated: a query that wants rows has none.
                    let groups = if it.out.count_only() && !space.counts.contains(&0) {
                        if let Some(better) = space.better_order(it.q, &plan, &host, semantics) {
                            plan = better;
                        }
                        let fanout =
                            |wanted: &[bool]| space.fanouts(it.q, &plan, wanted, &host, semantics);
                        gpu_leaves::choose(
                            it.q,
                            &plan,
                            it.layout,
                            &space.counts,
                            semantics,
                            &fanout,
                        )
                    } else {
                        Vec::new()
                    };
                    if !groups.is_empty() {
                        plan = gpu_leaves::reorder(it.q, &plan, &groups);
                    }
                    let layout = (!space.counts.contains(&0)).then(|| {
                        let terms = gpu_leaves::terms(&groups)?;
                        Ok((Layout::new(it.q, &plan, semantics, shape)?, terms))
                    });
                    (plan, groups, layout)
                })
                .collect()
        };
        // Queries with an empty candidate set are answered (0).
        let mut joined = Vec::new();
        for ((k, &i), (plan, groups, layout)) in admitted.iter().enumerate().zip(orders) {
            let it = &mut items[i];
            // A query stopped during filtering has no candidate sets (`filter_batch`).
            let report = FilterReport {
                after_refine: if it.out.stopped() {
                    Vec::new()
                } else {
                    spaces[k].counts.clone()
                },
                filter_time,
                ..Default::default()
            };
            let result = Ok((plan, report, DeviceReport::default()));
            let layout = match layout {
                _ if it.out.stopped() => None,
                None => None,
                Some(Ok(l)) => Some(l),
                Some(Err(e)) => {
                    it.result = Some(Err(e));
                    continue;
                }
            };
            let Some((layout, terms)) = layout else {
                it.result = Some(result);
                continue;
            };
            let jq = JoinQuery {
                layout: &layout,
                space: &spaces[k],
                groups: &groups,
                terms: &terms,
            };
            // Admitted when its space fits (its levels take rows of the batch's buffers), refused
            // with what it would need alone, as alone.
            let bytes = spaces[k].filter_bytes + jq.sizes().alone();
            it.result = Some(if bytes > it.memory_budget {
                let counts_last = it.out.count_only() && jq.groups.is_empty();
                Err(MatchError::DeviceBudget {
                    bytes: jq.least_bytes(self.segments, counts_last),
                    budget: it.memory_budget,
                    filtering: false,
                })
            } else {
                joined.push((
                    k,
                    Joined {
                        item: i,
                        layout,
                        groups,
                        terms,
                        bytes,
                    },
                ));
                result
            });
        }
        // The others are answered already.
        let mut joins = vec![false; items.len()];
        for (_, j) in &joined {
            joins[j.item] = true;
        }
        for (i, _) in joins.iter().enumerate().filter(|(_, &j)| !j) {
            on_answer(i, &mut items[i], self.arena.bytes());
        }
        let jqs: Vec<JoinQuery> = joined
            .iter()
            .map(|(k, j)| JoinQuery {
                layout: &j.layout,
                space: &spaces[*k],
                groups: &j.groups,
                terms: &j.terms,
            })
            .collect();
        let qspaces = self.space_batch(&jqs, &all_counts)?;
        let spaced = self.dev.counters() - before;
        let mut phases = BatchPhases {
            filter: filter_time,
            filter_read: Duration::from_nanos(filtered.read_ns),
            filter_launch: Duration::from_nanos(filtered.launch_ns),
            filter_prepare: prepared,
            filter_write: Duration::from_nanos(filtered.write_ns),
            space: start.elapsed() - filter_time,
            ..Default::default()
        };
        let batched: Vec<Joined> = joined.into_iter().map(|(_, j)| j).collect();
        let (levels, after) =
            self.levels_batch(items, &batched, &qspaces, start, outgrown, on_answer)?;
        phases.levels = levels;
        phases.alone = after;
        let all = self.dev.counters() - before;
        phases.emulated = [
            filtered.emulated_ns,
            spaced.emulated_ns - filtered.emulated_ns,
            all.emulated_ns - spaced.emulated_ns,
        ]
        .map(Duration::from_nanos);
        Ok(phases)
    }

    /// The levels of every joined query: depth by depth, one launch each, then one read; the
    /// queries whose levels fit are answered first, then those that go on alone.
    fn levels_batch(
        &mut self,
        items: &mut [BatchItem],
        joined: &[Joined],
        qs: &[QuerySpace],
        start: Instant,
        outgrown: Outgrown,
        on_answer: &mut OnAnswer,
    ) -> Result<(Duration, Duration), MatchError> {
        if joined.is_empty() {
            return Ok(Default::default());
        }
        let began = Instant::now();
        let dev = self.dev;
        let rooms = self.batch_rooms(items, joined, qs)?;
        let depth = qs.iter().map(|q| q.levels.len()).max().unwrap_or(0);
        // Every query's job per depth, in one table per depth and kernel: `2d` the warp join's,
        // `2d + 1` the join of bindings' (levels with an edge variable).
        let mut tables: Vec<Vec<ExtendWarpArgs>> = vec![Vec::new(); 2 * depth];
        let mut leaves = Vec::new();
        let injective = (self.semantics == Semantics::Iso) as u32;
        // A LIMIT query's root runs its first part here. Under `GoOn` the rest runs alone after
        // the batch, on this thread; under `Leave` the batching thread stays free for the next
        // batch: the query is answered if that part completed it, else left to its caller.
        let parted: Vec<Option<RootCut>> = joined
            .iter()
            .zip(qs)
            .map(|(jq, q)| q.parted_root(items[jq.item].out))
            .collect();
        let (first, last) = (qs[0].claimed, qs[qs.len() - 1].claimed);
        let claimed_bytes = last.offset + last.bytes(8) - first.offset;
        dev.zero_bytes(self.arena.space.get(), first.offset, claimed_bytes)?;
        for (j, (jq, q)) in joined.iter().zip(qs).enumerate() {
            let it = &items[jq.item];
            let l = q.levels.len();
            let root_cut = match parted[j] {
                Some(cut) => Some(cut.part(dev, self.arena.space.get(), (0, FIRST_ROOT_PART))?),
                None => q.root_cut,
            };
            self.memory_budget = it.memory_budget;
            let run = Levels::new(self, &jq.layout, q, it.out, jq.bytes);
            let (budget_ns, last_stop) = (run.budget_ns(), run.last_stop());
            let words = q.counter_words();
            let clock = q.claimed.words(words.clock()).slice;
            let mut parents = (q.root, 1u64, DevSlice::default());
            for (d, lp) in q.levels.iter().enumerate() {
                let room = rooms[j][d];
                let counter = q.claimed.words(words.level(d));
                let mut args = ExtendWarpArgs {
                    rows: parents.0,
                    parents: parents.1,
                    parents_at: parents.2,
                    claimed: counter.slice,
                    clock,
                    out: room.rows,
                    capacity: room.capacity,
                    stop_at: if d + 1 == l { last_stop } else { u64::MAX },
                    budget_ns,
                    ..run.warp_args(lp)
                };
                if let Some(cut) = root_cut.filter(|_| d == 0) {
                    cut.apply(&mut args, QUEUED_WARPS);
                }
                tables[2 * d + usize::from(!lp.warp)].push(args);
                let bound = lp.bound(room.capacity, parents.1);
                parents = (room.rows, bound, counter.part(8, 0, 1).slice);
            }
            if let Some(lv) = q.leaves {
                leaves.push(CountLeavesArgs {
                    rows: parents.0,
                    parents: parents.1,
                    parents_at: parents.2,
                    width: jq.layout.width as u64,
                    nodes: jq.layout.nodes as u32,
                    injective,
                    groups: lv.groups,
                    terms: lv.terms,
                    total: lv.total.slice,
                    stop_at: run.wanted(),
                    threads: 1,
                });
            }
        }
        // A depth's warps per query: enough for its largest level, at most a share of
        // BATCH_WARPS (its items past them are queued for its own warps and those of the 32
        // queries before it; idle warps still cost a GPU's scheduler, and the emulator, their
        // start and a look at the queues).
        // A segmented depth's warps take segments, whose number only the device knows: its share.
        let cut: Vec<bool> = tables.iter().map(|t| t.iter().any(cuts_lists)).collect();
        let segmented = |k: usize| cut[k];
        let warps: Vec<u64> = tables
            .iter()
            .enumerate()
            .map(|(k, t)| {
                // Work-items: parents, or a cut root's segments (`warps` set by its cut).
                let most = t.iter().map(|a| a.parents.max(a.warps)).max().unwrap_or(1);
                let share = (BATCH_WARPS / t.len().max(1) as u64).clamp(32, QUEUED_WARPS);
                if segmented(k) {
                    share
                } else {
                    most.clamp(1, share)
                }
            })
            .collect();
        for (t, &w) in tables.iter_mut().zip(&warps) {
            for a in t.iter_mut() {
                a.warps = w;
            }
        }
        let cuts = self.batch_cuts(&mut tables, segmented)?;
        // The leaf counts' threads per query: enough for its largest last level, at most a share
        // of LEAF_THREADS.
        let leaf_threads = {
            let most = leaves.iter().map(|a| a.parents).max().unwrap_or(1);
            let share = (LEAF_THREADS / leaves.len().max(1) as u64).max(32);
            most.clamp(1, share)
        };
        for a in &mut leaves {
            a.threads = leaf_threads;
        }
        let rows: usize = tables.iter().map(Vec::len).sum();
        let cut_rows: usize = cuts.jobs.iter().map(Vec::len).sum();
        let mut sizing = Carver::new(0);
        sizing.take::<ExtendWarpArgs>(rows);
        sizing.take::<CountLeavesArgs>(leaves.len());
        sizing.take::<PivotSegmentsArgs>(cut_rows);
        let buf = self.arena.batch_jobs.ensure(dev, sizing.at)?;
        let mut c = Carver::new(dev.address(buf));
        let region = c.take::<ExtendWarpArgs>(rows);
        let leaf_jobs = c.take::<CountLeavesArgs>(leaves.len());
        let cut_jobs = c.take::<PivotSegmentsArgs>(cut_rows);
        let flat: Vec<ExtendWarpArgs> = tables.iter().flatten().copied().collect();
        dev.write_bytes(buf, region.offset, as_bytes(&flat))?;
        if !leaves.is_empty() {
            dev.write_bytes(buf, leaf_jobs.offset, as_bytes(&leaves))?;
        }
        if cut_rows > 0 {
            let flat: Vec<PivotSegmentsArgs> = cuts.jobs.iter().flatten().copied().collect();
            dev.write_bytes(buf, cut_jobs.offset, as_bytes(&flat))?;
        }
        let (mut at, mut cut_at) = (0, 0);
        for (k, (t, &w)) in tables.iter().zip(&warps).enumerate() {
            if t.is_empty() {
                continue;
            }
            let cut = &cuts.jobs[k];
            if !cut.is_empty() {
                // The depth's segments: every query's counted, then one scan numbers them all.
                let jobs = cut_jobs
                    .part(size_of::<PivotSegmentsArgs>(), cut_at, cut_at + cut.len())
                    .slice;
                cut_at += cut.len();
                let threads = cuts.threads[k];
                dev.launch(
                    &Launch::PivotSegmentsBatch(PivotSegmentsBatchArgs { jobs, threads }),
                    cut.len() as u64 * threads,
                )?;
                let (counts, sums) = cuts.scratch.expect("a cut depth has its scratch");
                scan(dev, counts.part(8, 0, cuts.len[k] as usize), sums)?;
            }
            let jobs = region
                .part(size_of::<ExtendWarpArgs>(), at, at + t.len())
                .slice;
            at += t.len();
            let args = ExtendWarpBatchArgs { jobs, warps: w };
            let launch = if k % 2 == 0 {
                Launch::ExtendWarpBatch(args)
            } else {
                Launch::ExtendWarpBindingsBatch(args)
            };
            dev.launch(&launch, t.len() as u64 * w)?;
        }
        // Every query's leaf count in one launch, after all the levels.
        if !leaves.is_empty() {
            let args = CountLeavesBatchArgs {
                jobs: leaf_jobs.slice,
                threads: leaf_threads,
            };
            dev.launch(
                &Launch::CountLeavesBatch(args),
                leaves.len() as u64 * leaf_threads,
            )?;
        }
        let space = self.arena.space.get();
        let all: Vec<u64> = read(dev, space, first.offset, claimed_bytes / 8)?;
        let counters: Vec<&[u64]> = qs
            .iter()
            .map(|q| &all[(q.claimed.offset - first.offset) / 8..][..q.claimed.slice.len as usize])
            .collect();
        let overs: Vec<Option<usize>> = joined
            .iter()
            .zip(qs)
            .enumerate()
            .map(|(j, (jq, q))| self.first_over(&items[jq.item], jq, q, &rooms[j], counters[j]))
            .collect();
        let rows = self.read_rows(items, joined, &rooms, &counters, &overs)?;
        let batch_time = start.elapsed();
        let levels = began.elapsed();
        // The answers final after the batch first, then those that go on alone.
        let goes_on = |j: usize| overs[j].is_some() || parted[j].is_some();
        let fit = (0..joined.len()).filter(|&j| !goes_on(j));
        for j in fit.chain((0..joined.len()).filter(|&j| goes_on(j))) {
            let (jq, q) = (&joined[j], &qs[j]);
            let it = &mut items[jq.item];
            charge_share(it.out, start, batch_time, joined.len());
            let (c, rows) = (counters[j], rows[j].as_deref());
            let left = match (overs[j], parted[j], outgrown) {
                (Some(d), _, Outgrown::Leave) => Some(MatchError::OutgrewBatch {
                    level: d,
                    rows: c[q.counter_words().rows(d)],
                    room: rooms[j][d].capacity,
                }),
                (None, Some(cut), Outgrown::Leave) => {
                    let run = Levels::new(self, &jq.layout, q, it.out, jq.bytes);
                    (!run.first_part_completes(c, rows)).then(|| cut.past_first_part())
                }
                _ => None,
            };
            if let Some(e) = left {
                it.result = Some(Err(e));
                on_answer(jq.item, it, self.arena.bytes());
                continue;
            }
            let done = Done {
                c,
                over: overs[j],
                rows,
                parted: parted[j].filter(|_| outgrown == Outgrown::GoOn),
            };
            if let Err(e) = self.finish_query(it, jq, q, &rooms[j], done) {
                it.result = Some(Err(e));
            }
            on_answer(jq.item, it, self.arena.bytes());
        }
        Ok((levels, began.elapsed() - levels))
    }

    /// The first level of a query that outgrew its room (its counters `c`), unless its time
    /// limit stopped it (the kernels' clock, seen here, is recorded in its output).
    fn first_over(
        &mut self,
        it: &BatchItem,
        jq: &Joined,
        q: &QuerySpace,
        rooms: &[Room],
        c: &[u64],
    ) -> Option<usize> {
        let l = q.levels.len();
        let run = Levels::new(self, &jq.layout, q, it.out, jq.bytes);
        if l == 0 {
            return None;
        }
        let words = q.counter_words();
        if c[words.timed_out()] != 0 {
            run.out.time_out();
        }
        let total = |d: usize| c[words.rows(d)];
        // A last level of rows stopped by LIMIT fits only when its room holds the rows wanted.
        let stop = run.last_stop();
        (0..l)
            .find(|&d| {
                let last = d + 1 == l;
                let fits = total(d) <= rooms[d].capacity
                    || (last
                        && (run.counts_last() || (total(d) >= stop && rooms[d].capacity >= stop)));
                !fits
            })
            .filter(|_| !run.out.stopped())
    }

    /// The rows of every query that wants them and whose levels fit: one read over the batch's
    /// row buffer, each query's rows (slot order) cut out of it.
    fn read_rows(
        &self,
        items: &[BatchItem],
        joined: &[Joined],
        rooms: &[Vec<Room>],
        counters: &[&[u64]],
        overs: &[Option<usize>],
    ) -> Result<Vec<Option<Vec<u32>>>, MatchError> {
        // Each wanted query's rows: where they start in the buffer (in u32s) and how many u32s.
        let spans: Vec<Option<(usize, usize)>> = joined
            .iter()
            .enumerate()
            .map(|(j, jq)| {
                let out = items[jq.item].out;
                let l = rooms[j].len();
                if out.count_only() || out.stopped() || overs[j].is_some() || l == 0 {
                    return None;
                }
                let room = rooms[j][l - 1];
                let n = counters[j][CounterWords { levels: l }.rows(l - 1)].min(room.capacity);
                (n > 0).then_some((room.rows.ptr, n * jq.layout.width as u64))
            })
            .map(|span| {
                let (ptr, len) = span?;
                let base = self.dev.address(self.arena.batch_rows.get());
                Some((((ptr - base) / 4) as usize, len as usize))
            })
            .collect();
        let Some(end) = spans.iter().flatten().map(|&(at, len)| at + len).max() else {
            return Ok(joined.iter().map(|_| None).collect());
        };
        let from = spans.iter().flatten().map(|&(at, _)| at).min().unwrap_or(0);
        let data: Vec<u32> = read(self.dev, self.arena.batch_rows.get(), from * 4, end - from)?;
        Ok(spans
            .iter()
            .map(|span| span.map(|(at, len)| data[at - from..][..len].to_vec()))
            .collect())
    }

    /// Points every segmented depth's jobs at their segments' counts (side by side in the
    /// scratch, `parents + 1` each) and makes their `pivot_segments` jobs; the scratch is taken
    /// here, before anything is queued.
    fn batch_cuts(
        &mut self,
        tables: &mut [Vec<ExtendWarpArgs>],
        segmented: impl Fn(usize) -> bool,
    ) -> Result<Cuts, MatchError> {
        let mut cuts = Cuts {
            jobs: vec![Vec::new(); tables.len()],
            threads: vec![0; tables.len()],
            len: vec![0; tables.len()],
            scratch: None,
        };
        let most = (0..tables.len())
            .filter(|&k| segmented(k))
            .map(|k| {
                tables[k]
                    .iter()
                    .filter(|a| cuts_lists(a))
                    .map(|a| a.parents + 1)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        if most == 0 {
            return Ok(cuts);
        }
        let most = most as usize;
        let mut c = Carver::new(0);
        c.take::<u64>(most);
        c.take::<u64>(scan_sums(most));
        let buf = self.arena.scratch.ensure(self.dev, c.at)?;
        let mut c = Carver::new(self.dev.address(buf));
        let (counts, sums) = (c.take::<u64>(most), c.take::<u64>(scan_sums(most)));
        cuts.scratch = Some((counts, sums));
        for (k, t) in tables.iter_mut().enumerate() {
            if !segmented(k) {
                continue;
            }
            let mut at = 0usize;
            // Only the jobs of levels that cut their lists: the others take their parents.
            for a in t.iter_mut().filter(|a| cuts_lists(a)) {
                let n = a.parents as usize + 1;
                a.segments = counts.part(8, at, at + n).slice;
                at += n;
                cuts.jobs[k].push(PivotSegmentsArgs {
                    a: *a,
                    out: a.segments,
                });
                cuts.threads[k] = cuts.threads[k].max(n as u64);
            }
            cuts.len[k] = at as u64;
        }
        Ok(cuts)
    }

    /// Each joined query's room per level in the batch's level buffers: at most what its level
    /// can produce (its parents' room times its candidates), BATCH_ROWS and its share of
    /// BATCH_LEVEL_BYTES, within its own budget; none for a last level that only counts. The last
    /// level of a query that wants rows lies in the batch's row buffer.
    fn batch_rooms(
        &mut self,
        items: &[BatchItem],
        joined: &[Joined],
        qs: &[QuerySpace],
    ) -> Result<Vec<Vec<Room>>, MatchError> {
        let levels: u64 = qs.iter().map(|q| q.levels.len() as u64).sum();
        let mut caps: Vec<(bool, Vec<u64>)> = Vec::with_capacity(qs.len());
        let depth = qs.iter().map(|q| q.levels.len()).max().unwrap_or(0);
        let mut bytes = vec![0usize; depth];
        let mut rows_bytes = 0usize;
        for (jq, q) in joined.iter().zip(qs) {
            let it = &items[jq.item];
            let row_bytes = jq.layout.width as u64 * 4;
            let counts_last = jq.groups.is_empty() && it.out.count_only();
            let wants_rows = !it.out.count_only();
            let share = (BATCH_LEVEL_BYTES / levels.max(1) / row_bytes).max(1);
            // With segments, a parent's count and its part of their scan come out of its share.
            let own = it.memory_budget.saturating_sub(jq.bytes)
                / q.levels.len().max(1) as u64
                / (row_bytes
                    + if q.levels.iter().any(LevelPlan::segmented) {
                        SEGMENT_PARENT_BYTES
                    } else {
                        0
                    });
            let mut parents = 1u64;
            let mut row = Vec::with_capacity(q.levels.len());
            for (d, lp) in q.levels.iter().enumerate() {
                let cap = if d + 1 == q.levels.len() && counts_last {
                    0
                } else {
                    lp.bound(BATCH_ROWS.min(share).min(own), parents)
                };
                if wants_rows && d + 1 == q.levels.len() {
                    rows_bytes += (cap * row_bytes) as usize;
                } else {
                    bytes[d] += (cap * row_bytes) as usize;
                }
                parents = cap;
                row.push(cap);
            }
            caps.push((wants_rows, row));
        }
        while self.arena.batch_levels.len() < depth {
            self.arena.batch_levels.push(Slab::default());
        }
        let mut at = vec![0u64; depth];
        let mut base = Vec::with_capacity(depth);
        for (d, &b) in bytes.iter().enumerate() {
            let slab = self.arena.batch_levels[d].ensure(self.dev, b)?;
            base.push(self.dev.address(slab));
        }
        let rows_base = if rows_bytes > 0 {
            self.dev
                .address(self.arena.batch_rows.ensure(self.dev, rows_bytes)?)
        } else {
            0
        };
        let mut rows_at = 0u64;
        Ok(joined
            .iter()
            .zip(caps)
            .map(|(jq, (wants_rows, row))| {
                let width = jq.layout.width as u64;
                let l = row.len();
                row.iter()
                    .enumerate()
                    .map(|(d, &cap)| {
                        let (base, at) = if wants_rows && d + 1 == l {
                            (rows_base, &mut rows_at)
                        } else {
                            (base[d], &mut at[d])
                        };
                        let r = Room {
                            rows: DevSlice {
                                ptr: base + *at,
                                len: cap * width,
                            },
                            capacity: cap,
                        };
                        *at += cap * width * 4;
                        r
                    })
                    .collect()
            })
            .collect())
    }

    /// A query's answer from its counters and rows (`done`), or its levels run on alone from the
    /// first one that outgrew its room.
    fn finish_query(
        &mut self,
        it: &mut BatchItem,
        jq: &Joined,
        q: &QuerySpace,
        rooms: &[Room],
        done: Done,
    ) -> Result<(), MatchError> {
        let l = q.levels.len();
        if l == 0 {
            return Ok(());
        }
        self.memory_budget = it.memory_budget;
        let mut run = Levels::new(self, &jq.layout, q, it.out, jq.bytes);
        let (c, words) = (done.c, q.counter_words());
        let total = |d: usize| c[words.rows(d)];
        match done.over {
            Some(d) => {
                // The levels before `d` are complete; `d` and those after it run again alone.
                run.runs += d as u64;
                run.partials += (0..d).map(total).sum::<u64>();
                if d == 0 {
                    // The root again (nothing of it was kept), in parts under a LIMIT.
                    run.start(q.root)?;
                } else {
                    let n = total(d - 1);
                    let width = jq.layout.width as u64;
                    run.go_on(d, rows_part(rooms[d - 1].rows, width, 0, n), n)?;
                }
            }
            _ => {
                run.runs += l as u64;
                run.partials += (0..l).map(total).sum::<u64>();
                if run.leaves.is_some() {
                    run.add_leaves(&c[words.leaves().0..]);
                } else if run.out.count_only() {
                    run.out.add_count(u128::from(total(l - 1)));
                } else if let Some(rows) = done.rows {
                    run.out.rows(&by_node(rows, &jq.layout), jq.layout.width);
                }
            }
        }
        if let Some(cut) = done.parted.filter(|_| done.over != Some(0)) {
            run.rest_of_root(cut, q.root)?;
        }
        let done = (run.runs, run.partials, run.chunks);
        set_levels(it, Ok(done));
        Ok(())
    }
}

/// What the batch's reads say of one query: its counters (as `Levels::queued` reads them), the
/// first level that outgrew its room, and its last level's rows when it wants them and they fit.
struct Done<'c> {
    c: &'c [u64],
    over: Option<usize>,
    rows: Option<&'c [u32]>,
    /// The root's cut, when the batch ran its first part only.
    parted: Option<RootCut>,
}

/// Charges a query only its share (`batch_time / queries`) of the batch's time so far: its
/// deadline moves back by the rest, so that a query going on alone after the batch, or after the
/// queries before it went on alone, keeps what its limit leaves of its own share. Without it, the
/// 241 heavy yeast queries in one batch all timed out at the first query's limit (H200).
fn charge_share(out: &Output, start: Instant, batch_time: Duration, queries: usize) {
    let share = batch_time / queries.max(1) as u32;
    out.postpone_deadline(start.elapsed().saturating_sub(share));
}

/// Records a query's levels run and partial matches in its report, or its error.
fn set_levels(it: &mut BatchItem, done: Result<(u64, u64, u64), MatchError>) {
    match done {
        Ok((runs, partials, chunks)) => {
            if let Some(Ok((_, _, report))) = it.result.as_mut() {
                report.levels = runs;
                report.partial_matches = partials;
                report.chunks = chunks;
            }
        }
        Err(e) => it.result = Some(Err(e)),
    }
}

/// Whether job `a` is of a level that cuts its pivot lists into segments, not yet counted (a cut
/// root's segments come from the host).
fn cuts_lists(a: &ExtendWarpArgs) -> bool {
    a.segment > 0 && a.segments.len == 0
}

/// The segments of a batch's segmented depths (graphs with hubs), per depth's table: each query's
/// `pivot_segments` job (its counts side by side with the other queries'), the launch's threads
/// per job, the counts' length, and the scratch holding the counts and their scan.
struct Cuts {
    jobs: Vec<Vec<PivotSegmentsArgs>>,
    threads: Vec<u64>,
    len: Vec<u64>,
    scratch: Option<(Region, Region)>,
}
