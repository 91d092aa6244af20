//! What each GPU kernel does for one global thread index: the bodies behind the PTX entry points,
//! also called by the host emulator of the runtime, so that the device-side index math and buffer
//! handling are tested on the CPU. Each function checks its own bounds (extra threads of the last
//! block return at once) and writes only the region its work-item owns.
//!
//! # Safety
//! Every function requires its argument struct to describe valid buffers as documented in [`crate::abi`]
//! (host or device memory, as the caller runs), with no other writer during the launch.
// The contract is the same for every function here and stated once above.
#![allow(clippy::missing_safety_doc)]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::abi::*;
use crate::filter::{self, Incident, Need, NodeFilter};
use crate::join::{self, Check, Step};
use crate::warp::{Warp, LANES};
use crate::{scan, Dir, NONE};

fn dir(d: u32) -> Dir {
    if d == 0 {
        Dir::Out
    } else {
        Dir::In
    }
}

unsafe fn node_filter<'a>(f: &FilterArgs) -> NodeFilter<'a> {
    unsafe {
        NodeFilter {
            fixed: f.fixed,
            label: f.label,
            degrees: f.degrees.get::<Need>(),
            neighbour_labels: f.neighbour_labels.get::<Need>(),
            self_loops: f.self_loops.get::<u32>(),
        }
    }
}

/// Job `item / stride`'s word `item % stride`: the filter tested on the AND of its marks (and seed).
pub unsafe fn identify_nodes(a: &IdentifyNodesArgs, item: usize) {
    unsafe {
        let stride = a.stride as usize;
        let jobs = a.jobs.get::<NodeJob>();
        let (k, w) = (item / stride.max(1), item % stride.max(1));
        if k >= jobs.len() {
            return;
        }
        let job = &jobs[k];
        if filter_expired(&a.clock, job.node) {
            return;
        }
        let at = job.node as usize * stride + w;
        let mut mask = if job.seeded != 0 {
            a.sets.get::<u32>()[at]
        } else {
            u32::MAX
        };
        let marks = a.marks.get::<u32>();
        for m in job.marks..job.marks + job.mark_count {
            mask &= marks[m as usize * stride + w];
        }
        let word =
            filter::identify_node_candidates(w, mask, &node_filter(&job.filter), &a.graph.view());
        a.sets.write(at, word);
    }
}

/// Whether the query of bitset node `node` is past its time limit (see [`FilterClock`]).
#[inline(always)]
unsafe fn filter_expired(c: &FilterClock, node: u32) -> bool {
    unsafe {
        if c.clocks.len == 0 {
            return false;
        }
        let q = c.query_of.get::<u32>()[node as usize] as usize;
        let clocks = c.clocks.get::<AtomicU64>();
        let budget = clocks[3 * q + 2].load(Ordering::Relaxed);
        crate::warp::clock::expired(&clocks[3 * q..3 * q + 2], budget)
    }
}

pub unsafe fn count_words(a: &CountWordsArgs, w: usize) {
    unsafe {
        let words = a.words.get::<u32>();
        if w < words.len() {
            a.counts.write(w, scan::count_word(words[w]) as u64);
        }
    }
}

pub unsafe fn write_words(a: &WriteWordsArgs, w: usize) {
    unsafe {
        let words = a.words.get::<u32>();
        if w >= words.len() {
            return;
        }
        let start = a.offsets.get::<u64>()[w] as usize;
        let n = words[w].count_ones() as usize;
        let local = w % a.stride as usize;
        scan::write_word(local, words[w], a.out.region_mut::<u32>(start, start + n));
    }
}

pub unsafe fn node_totals(a: &NodeTotalsArgs, u: usize) {
    unsafe {
        if u as u64 >= a.out.len {
            return;
        }
        let offsets = a.offsets.get::<u64>();
        let s = a.stride as usize;
        a.out.write(u, offsets[(u + 1) * s] - offsets[u * s]);
    }
}

pub unsafe fn adjacency_bounds(a: &AdjacencyBoundsArgs, item: usize) {
    unsafe {
        let stride = a.stride as usize;
        let edges = a.edges.get::<DirectedEdge>();
        let (j, w) = (item / stride.max(1), item % stride.max(1));
        if j >= edges.len() {
            return;
        }
        let e = edges[j];
        let word = a.sets.get::<u32>()[e.from as usize * stride + w];
        if word == 0 {
            return;
        }
        let total = crate::space::adjacency_total(w, word, dir(e.dir), e.label, &a.graph.view());
        a.bounds.get::<AtomicU64>()[j].fetch_add(total, Ordering::Relaxed);
    }
}

pub unsafe fn scan_chunks(a: &ScanArgs, t: usize) {
    if t as u64 >= a.sums.len {
        return;
    }
    unsafe {
        let (start, end) = chunk_range(a, t);
        let values = a.values.region_mut::<u64>(start, end);
        a.sums.write(t, scan::scan_chunk(0, values.len(), values));
    }
}

pub unsafe fn add_chunk_offsets(a: &ScanArgs, t: usize) {
    if t as u64 >= a.sums.len {
        return;
    }
    unsafe {
        let (start, end) = chunk_range(a, t);
        let values = a.values.region_mut::<u64>(start, end);
        scan::add_chunk_offset(0, values.len(), values, a.sums.get::<u64>()[t]);
    }
}

fn chunk_range(a: &ScanArgs, t: usize) -> (usize, usize) {
    let start = (t as u64 * a.chunk).min(a.values.len);
    let end = (start + a.chunk).min(a.values.len);
    (start as usize, end as usize)
}

/// One warp per (step, word of its `from` node's set).
pub unsafe fn mark_steps(a: &MarkStepsArgs, item: usize, warp: &impl Warp) {
    unsafe {
        let stride = a.stride as usize;
        let steps = a.steps.get::<MarkStep>();
        let (k, w) = (item / stride.max(1), item % stride.max(1));
        if k >= steps.len() {
            return;
        }
        let s = &steps[k];
        if warp.leader(|| filter_expired(&a.clock, s.from) as u64) != 0 {
            return;
        }
        let sets = a.sets.get::<u32>();
        let set = |u: u32| &sets[u as usize * stride..][..stride];
        let allowed = if s.allowed == NONE {
            &[][..]
        } else {
            set(s.allowed)
        };
        let mark = &a.marks.get::<AtomicU32>()[s.mark as usize * stride..][..stride];
        filter::mark_neighbours(
            warp,
            w,
            set(s.from),
            dir(s.dir),
            s.label,
            allowed,
            mark,
            &a.graph.view(),
        );
    }
}

pub unsafe fn refine_nodes(a: &RefineNodesArgs, item: usize) {
    unsafe {
        let stride = a.stride as usize;
        let jobs = a.jobs.get::<RefineJob>();
        let (k, w) = (item / stride.max(1), item % stride.max(1));
        if k >= jobs.len() {
            return;
        }
        let job = &jobs[k];
        if filter_expired(&a.clock, job.node) {
            return;
        }
        let u = job.node as usize;
        let sets = a.sets.get::<AtomicU32>();
        let word = filter::refine_word(
            u,
            w,
            job.incident.get::<Incident>(),
            sets,
            stride,
            &a.graph.view(),
        );
        sets[u * stride + w].store(word, Ordering::Relaxed);
    }
}

/// The list whose work-items include `item`, and the item's index in it.
unsafe fn edge_list<'a>(a: &EdgeListsArgs, item: usize) -> Option<(&'a EdgeList, usize)> {
    unsafe {
        let lists = a.lists.get::<EdgeList>();
        let j = lists
            .partition_point(|l| l.first <= item as u64)
            .checked_sub(1)?;
        let l = &lists[j];
        let i = (item as u64 - l.first) as usize;
        (i < l.from.len as usize).then_some((l, i))
    }
}

pub unsafe fn count_edge_lists(a: &EdgeListsArgs, item: usize) {
    unsafe {
        let Some((l, i)) = edge_list(a, item) else {
            return;
        };
        let n = join::count_edge_candidates(
            i,
            l.from.get::<u32>(),
            dir(l.dir),
            l.label,
            l.to_set.get::<u32>(),
            &a.graph.view(),
        );
        l.offsets.write(i, n as u64);
    }
}

pub unsafe fn write_edge_lists(a: &EdgeListsArgs, item: usize) {
    unsafe {
        let Some((l, i)) = edge_list(a, item) else {
            return;
        };
        let offsets = l.offsets.get::<u64>();
        let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
        let targets = a.out_targets.region_mut::<u32>(s, e);
        let labels = a.out_labels.region_mut::<u16>(s, e);
        join::write_edge_candidates(
            i,
            l.from.get::<u32>(),
            dir(l.dir),
            l.label,
            l.to_set.get::<u32>(),
            &a.graph.view(),
            targets,
            labels,
        );
    }
}

/// The row, step and list lookup of parent `p` of an [`ExtendWarpArgs`].
#[inline(always)]
unsafe fn warp_item<'a>(
    a: &ExtendWarpArgs,
    p: usize,
) -> (&'a [u32], Step<'a>, impl Fn(usize, u32) -> &'a [u32]) {
    unsafe {
        let width = a.width as usize;
        let row = &a.rows.get::<u32>()[p * width..(p + 1) * width];
        let step = Step {
            slot: a.step.slot,
            nodes: a.step.nodes,
            injective: a.step.injective != 0,
            checks: a.step.checks.get::<Check>(),
            pivot: a.step.pivot,
            candidates: &[],
        };
        let lists = a.lists.get::<ListsArgs>();
        let list = move |k: usize, x: u32| {
            let l = &lists[k];
            join::list_of(x, l.from.get(), l.offsets.get(), l.targets.get())
        };
        (row, step, list)
    }
}

/// Segments of parent `p`'s pivot list; 0 past the parents the previous level's counter holds
/// (a queued level is launched over their bound, so the scan's total is the level's), and 0 at
/// `a.parents` (the slot whose scan is the total, rewritten before every use).
pub unsafe fn pivot_segments(a: &PivotSegmentsArgs, p: usize) {
    unsafe {
        if p as u64 > a.a.parents {
            return;
        }
        if p as u64 >= parents(&a.a) {
            a.out.write(p, 0u64);
            return;
        }
        // A level with an edge variable names its pivot (`NONE` for a warp join, which picks the
        // shortest list per partial match, and for a node starting a new component).
        let len = if a.a.step.pivot == NONE {
            let (row, step, list) = warp_item(&a.a, p);
            join::pivot(row, &step, &list, a.a.all.get()).1.len()
        } else {
            bindings_list(&a.a, p).0.len()
        };
        a.out.write(p, (len as u64).div_ceil(a.a.segment.max(1)));
    }
}

/// One warp per parent row, or per segment of a pivot list; with fewer warps than work-items
/// (`a.warps`), each takes its own and then the next from the level's queue (`take_items`).
/// Inlined into both its entries: called from two, it was not, and `extend_warp`'s argument went
/// to local memory (344 stack bytes, 128 registers on sm_90).
#[inline(always)]
pub unsafe fn extend_warp(a: &ExtendWarpArgs, w: usize, warp: &impl Warp) {
    unsafe {
        take_items(core::slice::from_ref(a), 0, w as u64, warp, |a, s, w| {
            extend_item(a, s, w)
        })
    }
}

/// Work-item `s` of warp join `a`: parent `s`, or the segment of a pivot list numbered `s`.
#[inline(always)]
unsafe fn extend_item(a: &ExtendWarpArgs, s: u64, warp: &impl Warp) {
    unsafe {
        let (p, part) = item_part(a, s);
        let (row, step, list) = warp_item(a, p);
        let g = a.graph.view();
        join::extend_warp(warp, row, &step, &list, a.all.get(), &g, &claims(a), part);
    }
}

/// Work-item `s` of warp join `a`: its parent and the part of the parent's pivot list it scans
/// (all of it, or the segment numbered `s`).
#[inline(always)]
unsafe fn item_part(a: &ExtendWarpArgs, s: u64) -> (usize, (usize, usize)) {
    unsafe {
        if a.segments.len > 0 {
            let offsets = a.segments.get::<u64>();
            // The parent whose segments include `s` (a batch scans its queries' counts as one
            // array: a job's numbers start at its first).
            let at = s + offsets[0];
            let p = offsets[..a.parents as usize].partition_point(|&o| o <= at) - 1;
            let k = (at - offsets[p] + a.first_segment) as usize;
            let seg = a.segment as usize;
            (p, (k * seg, (k + 1) * seg))
        } else {
            (s as usize, (0, usize::MAX))
        }
    }
}

/// The work-items of a warp join: its parents, or the segments of their pivot lists.
#[inline(always)]
unsafe fn work_items(a: &ExtendWarpArgs) -> u64 {
    unsafe {
        if a.segments.len > 0 {
            let offsets = a.segments.get::<u64>();
            offsets[a.parents as usize] - offsets[0]
        } else {
            parents(a)
        }
    }
}

/// The next work-item of `a`'s queue (`claimed[3]` counts the items taken from it; each of the
/// level's `a.warps` warps has its own first item, so the queue starts at `a.warps`), or
/// `u64::MAX` when none is left or the level wants no more rows (its LIMIT reached, its time
/// limit passed).
#[inline(always)]
unsafe fn take(a: &ExtendWarpArgs) -> u64 {
    unsafe {
        // A look first: warps that find the queue dry (most of a launch's, at its end) leave
        // its counter to those that take, instead of all adding to one address.
        if !has_queued(a) {
            return u64::MAX;
        }
        let queue = &a.claimed.get::<AtomicU64>()[3];
        let s = a
            .warps
            .saturating_add(queue.fetch_add(1, Ordering::Relaxed));
        if s < work_items(a) {
            s
        } else {
            u64::MAX
        }
    }
}

/// Whether `a`'s queue still holds work-items (a look, no claim).
#[inline(always)]
unsafe fn has_queued(a: &ExtendWarpArgs) -> bool {
    unsafe {
        // The level's bound first: most jobs of a batch have fewer parents than warps.
        let queue = &a.claimed.get::<AtomicU64>()[3];
        a.warps > 0
            && (a.segments.len > 0 || a.warps < a.parents)
            && a.warps.saturating_add(queue.load(Ordering::Relaxed)) < work_items(a)
            && !claims(a).stopped()
    }
}

/// Jobs after its own a warp looks at for work to steal (one ballot): a heavy query of a batch is
/// helped by the warps of the [`STEAL_WINDOW`] queries before it, and a warp whose job is done
/// reads at most that many jobs' counters, not the whole batch's.
pub const STEAL_WINDOW: usize = crate::warp::LANES as usize;

/// Work stealing. Warp `w` of job `j` of `jobs` (a batch's queries at one depth; one job outside
/// a batch) does its own work-item `w`, then takes items from its job's queue, and when that is dry
/// from the queues of the [`STEAL_WINDOW`] jobs after it in turn, until every queue it looks at is
/// dry: a query with many parents is shared by the warps of the batch's light queries instead of
/// leaving its own warps many rows each while the others idle (as STMatch's and T-DFS's warps
/// steal). One atomic add per item taken; `run(job, item)` does one item. Warp-uniform: every lane
/// gets each item from the leader.
#[inline(always)]
unsafe fn take_items<W: Warp>(
    jobs: &[ExtendWarpArgs],
    j: usize,
    w: u64,
    warp: &W,
    run: impl Fn(&ExtendWarpArgs, u64, &W),
) {
    unsafe {
        let n = jobs.len();
        // The job taken from, as an offset from `j`, and its item (`u64::MAX`: none yet). Items
        // from `warps` on are the queue's: a warp past them has no own item.
        let own = jobs[j].warps == 0 || w < jobs[j].warps;
        let (mut d, mut s) = (0, if own { w } else { u64::MAX });
        loop {
            let job = (j + d) % n;
            let a = &jobs[job];
            if s < work_items(a) {
                warp.item(job, s);
                run(a, s, warp);
            }
            s = warp.leader(|| take(a));
            if s == u64::MAX {
                match queued_after(jobs, j, d, warp) {
                    Some(e) => d = e,
                    None => return,
                }
            }
        }
    }
}

/// The first job after offset `d` from `j`, within [`STEAL_WINDOW`] of `j` (and short of `j`
/// again), whose queue still holds work-items, as an offset from `j`: the lanes look at the
/// window's jobs at once.
#[inline(always)]
unsafe fn queued_after(
    jobs: &[ExtendWarpArgs],
    j: usize,
    d: usize,
    warp: &impl Warp,
) -> Option<usize> {
    unsafe {
        let end = jobs.len().min(STEAL_WINDOW + 1);
        if d + 1 >= end {
            return None;
        }
        let mask = warp.ballot(|l| {
            let e = d + 1 + l as usize;
            e < end && has_queued(&jobs[(j + e) % jobs.len()])
        });
        (mask != 0).then(|| d + 1 + mask.trailing_zeros() as usize)
    }
}

/// Where a warp join writes: `a`'s claim counter, clock, room and LIMIT.
#[inline(always)]
unsafe fn claims<'o>(a: &ExtendWarpArgs) -> join::Claims<'o, impl Fn(u64) -> &'o mut [u32]> {
    unsafe {
        let (width, rows) = (a.width as usize, a.out);
        let counters = a.claimed.get::<AtomicU64>();
        join::Claims {
            claimed: &counters[0],
            clock: if a.clock.len >= 2 {
                a.clock.get::<AtomicU64>()
            } else {
                &counters[1..]
            },
            budget_ns: a.budget_ns,
            capacity: a.capacity,
            stop_at: a.stop_at,
            row: (rows.len > 0).then_some(move |r: u64| {
                let r = r as usize;
                rows.region_mut::<u32>(r * width, (r + 1) * width)
            }),
        }
    }
}

/// The parents of a warp join: `parents`, or fewer when the previous level's counter says so.
#[inline(always)]
unsafe fn parents(a: &ExtendWarpArgs) -> u64 {
    unsafe {
        if a.parents_at.len > 0 {
            a.parents_at.get::<u64>()[0].min(a.parents)
        } else {
            a.parents
        }
    }
}

/// One warp per parent row of a level with an edge variable, or per segment of its pivot list
/// (with fewer warps than work-items, each takes its own and then the next from the level's
/// queue, as [`extend_warp`]): the row's pivot
/// list (`lists[step.pivot]` from the row's node, with its relations; `all` without a pivot) grown
/// by `join::extend_warp_bindings`, entries tested against `step.candidates`.
#[inline(always)]
pub unsafe fn extend_warp_bindings(a: &ExtendWarpArgs, w: usize, warp: &impl Warp) {
    unsafe {
        take_items(core::slice::from_ref(a), 0, w as u64, warp, |a, s, w| {
            bindings_item(a, s, w)
        })
    }
}

/// Work-item `s` of a level with an edge variable (parent `s`, or the segment numbered `s` of a
/// parent's pivot list), grown by `join::extend_warp_bindings`.
#[inline(always)]
unsafe fn bindings_item(a: &ExtendWarpArgs, s: u64, warp: &impl Warp) {
    unsafe {
        let (p, (from, to)) = item_part(a, s);
        let step = Step {
            slot: a.step.slot,
            nodes: a.step.nodes,
            injective: a.step.injective != 0,
            checks: a.step.checks.get::<Check>(),
            pivot: a.step.pivot,
            candidates: a.step.candidates.get::<u32>(),
        };
        let (row, (targets, labels)) = (parent_row(a, p), bindings_list(a, p));
        let targets = &targets[from.min(targets.len())..to.min(targets.len())];
        // No labels when the list is the candidates (a node starting a new component).
        let labels = &labels[from.min(labels.len())..to.min(labels.len())];
        let g = a.graph.view();
        join::extend_warp_bindings(warp, row, &step, targets, labels, &g, &claims(a));
    }
}

/// Row `p` of `a`'s parents.
#[inline(always)]
unsafe fn parent_row<'a>(a: &ExtendWarpArgs, p: usize) -> &'a [u32] {
    unsafe {
        let width = a.width as usize;
        &a.rows.get::<u32>()[p * width..(p + 1) * width]
    }
}

/// The pivot list a level with an edge variable scans for parent `p`: its pivot check's edge
/// candidates (targets and relations), or with no pivot the candidates (no relations).
#[inline(always)]
unsafe fn bindings_list<'a>(a: &ExtendWarpArgs, p: usize) -> (&'a [u32], &'a [u16]) {
    unsafe {
        if a.step.pivot == NONE {
            return (a.all.get::<u32>(), &[]);
        }
        let checks = a.step.checks.get::<Check>();
        let l = &a.lists.get::<ListsArgs>()[a.step.pivot as usize];
        let x = parent_row(a, p)[checks[a.step.pivot as usize].slot as usize];
        join::edge_candidate_list(
            x,
            l.from.get(),
            l.offsets.get(),
            l.targets.get(),
            l.labels.get(),
        )
    }
}

/// One depth of many queries' levels: warp `w` is warp `w % warps` of job `w / warps`, and steals
/// from the other jobs when its own runs dry (`take_items`).
pub unsafe fn extend_warp_batch(a: &ExtendWarpBatchArgs, w: usize, warp: &impl Warp) {
    unsafe { batch_items(a, w, warp, |a, s, w| extend_item(a, s, w)) }
}

/// One depth of many queries' levels with an edge variable, as [`extend_warp_batch`].
pub unsafe fn extend_warp_bindings_batch(a: &ExtendWarpBatchArgs, w: usize, warp: &impl Warp) {
    unsafe { batch_items(a, w, warp, |a, s, w| bindings_item(a, s, w)) }
}

/// Warp `w` of a batch launch: its job's items, then the others'.
#[inline(always)]
unsafe fn batch_items<W: Warp>(
    a: &ExtendWarpBatchArgs,
    w: usize,
    warp: &W,
    run: impl Fn(&ExtendWarpArgs, u64, &W),
) {
    unsafe {
        let per = a.warps.max(1) as usize;
        let jobs = a.jobs.get::<ExtendWarpArgs>();
        if w / per < jobs.len() {
            take_items(jobs, w / per, (w % per) as u64, warp, run);
        }
    }
}

/// TruST name similarity of data name `ids[first + i]`.
pub unsafe fn trust_similarity(a: &TrustSimilarityArgs, i: usize) {
    if i as u64 >= a.out.len {
        return;
    }
    unsafe {
        let (query, item) = (a.query.get::<u32>(), a.first as usize + i);
        let (ids, chars, ends) = (a.ids.get(), a.chars.get(), a.ends.get());
        let s = if a.ascii.len as usize == 128 && query.len() <= crate::trust::PATTERN_BITS {
            let p = crate::trust::Pattern {
                ascii: a.ascii.get(),
                other_chars: a.other_chars.get(),
                other_masks: a.other_masks.get(),
                len: query.len(),
            };
            crate::trust::similarity_bits_item(item, &p, ids, chars, ends, a.threshold)
        } else {
            let row_len = a.row_len as usize;
            let row = a.scratch.region_mut::<u32>(i * row_len, (i + 1) * row_len);
            crate::trust::similarity_item(item, query, ids, chars, ends, a.threshold, row)
        };
        a.out.write(i, s);
    }
}

/// TruST one-hop score of table item `first + i` (data node `item / nt`, template node `item % nt`).
pub unsafe fn trust_one_hop(a: &TrustOneHopArgs, i: usize) {
    if i as u64 >= a.out.len {
        return;
    }
    unsafe {
        let tpl = crate::trust::TemplateView {
            offsets: a.tpl_offsets.get(),
            others: a.tpl_others.get(),
            dirs: a.tpl_dirs.get::<Dir>(),
            relations: a.tpl_relations.get(),
        };
        let nt = tpl.node_count();
        let item = a.first as usize + i;
        let (d, t) = ((item / nt) as u32, (item % nt) as u32);
        let (fl, ul) = (a.scratch_f_len as usize, a.scratch_u_len as usize);
        let sf = a.scratch_f.region_mut::<f32>(i * fl, (i + 1) * fl);
        let su = a.scratch_u.region_mut::<u32>(i * ul, (i + 1) * ul);
        let scoring = crate::trust::Scoring {
            alpha: a.alpha,
            relation_weight: a.relation_weight,
        };
        let s = crate::trust::one_hop(t, d, &tpl, a.sim.get(), &a.graph.view(), &scoring, sf, su);
        a.out.write(i, s);
    }
}

/// Rows `t`, `t + threads`, ...: each row's leaf product added to the `u128` total.
pub unsafe fn count_leaves(a: &CountLeavesArgs, t: usize) {
    unsafe {
        let total = a.total.get::<AtomicU64>();
        let parents = if a.parents_at.len > 0 {
            a.parents_at.get::<u64>()[0].min(a.parents)
        } else {
            a.parents
        };
        let (width, groups) = (a.width as usize, a.groups.get::<LeafGroupArgs>());
        let rows = a.rows.get::<u32>();
        let mut p = t as u64;
        while p < parents {
            let reached = a.stop_at != u64::MAX
                && (total[1].load(Ordering::Relaxed) > 0
                    || total[0].load(Ordering::Relaxed) >= a.stop_at);
            if reached {
                return;
            }
            let row = &rows[p as usize * width..(p as usize + 1) * width];
            let lists = leaf_groups(groups, row);
            let (nodes, injective) = (a.nodes as usize, a.injective != 0);
            let added = join::count_leaves(row, nodes, injective, lists, a.terms.get())
                .is_some_and(|n| join::add_u128(&total[0], &total[1], n));
            if !added {
                total[2].store(1, Ordering::Relaxed);
                return;
            }
            p += a.threads.max(1);
        }
    }
}

/// Thread `t` of a `pivot_segments_batch` launch: parent `t % threads` of its query's job.
pub unsafe fn pivot_segments_batch(a: &PivotSegmentsBatchArgs, t: usize) {
    let threads = a.threads.max(1) as usize;
    unsafe {
        if let Some(job) = a.jobs.get::<PivotSegmentsArgs>().get(t / threads) {
            pivot_segments(job, t % threads);
        }
    }
}

/// Thread `t` of a `count_leaves_batch` launch: thread `t % threads` of its query's job.
pub unsafe fn count_leaves_batch(a: &CountLeavesBatchArgs, t: usize) {
    let threads = a.threads.max(1) as usize;
    unsafe {
        if let Some(job) = a.jobs.get::<CountLeavesArgs>().get(t / threads) {
            count_leaves(job, t % threads);
        }
    }
}

/// `groups`' entries for `row`, each group with its further lists (the entries after it with
/// `leaves` 0) resolved.
fn leaf_groups<'a>(
    groups: &'a [LeafGroupArgs],
    row: &'a [u32],
) -> impl Iterator<Item = join::LeafGroup<'a>> + 'a {
    let list = move |g: &LeafGroupArgs| unsafe {
        join::list_of(
            row[g.slot as usize],
            g.list.from.get(),
            g.list.offsets.get(),
            g.list.targets.get(),
        )
    };
    let mut at = 0;
    core::iter::from_fn(move || {
        let first = groups.get(at)?;
        let mut g = join::LeafGroup::one(list(first), first.leaves);
        g.linked = first.linked != 0;
        at += 1;
        while let Some(more) = groups.get(at).filter(|e| e.leaves == 0) {
            if g.len < join::MAX_GROUP_LISTS {
                g.lists[g.len] = list(more);
                g.len += 1;
            }
            at += 1;
        }
        Some(g)
    })
}

/// TruST: branch `b` of the beam grown by one template node, its best `keep` children kept, then
/// written best first, by warp `b`.
pub unsafe fn trust_extend<W: Warp>(a: &TrustExtendArgs, b: usize, warp: &W) {
    unsafe {
        if b >= a.live.get::<u32>()[0] as usize {
            return;
        }
        let (width, keep) = (a.width as usize, a.keep as usize);
        let row = &a.rows.get::<u32>()[b * width..(b + 1) * width];
        let base = a.scores.get::<f32>()[b];
        let ext = crate::trust::Extension {
            node: a.node,
            links: a.links.get::<crate::trust::Link>(),
            seeds: a.seeds.get(),
        };
        let scoring = crate::trust::Scoring {
            alpha: a.alpha,
            relation_weight: a.relation_weight,
        };
        let rooms = crate::trust::WarpRooms {
            nodes: a.rooms_nodes,
            scores: a.rooms_scores,
            resembles: a.rooms_resembles,
            first: b * keep,
            keep,
            stage: a.stage,
            first_slot: b * LANES as usize,
        };
        let judge = crate::trust::Judge {
            ext: &ext,
            g: &a.graph.view(),
            oh: a.oh.get(),
            sim: a.sim.get(),
            scoring: &scoring,
        };
        let (kept, work) = judge.extend_top_warp(warp, row, base, &rooms);
        // Lane 0 wrote the rooms; every lane reads them.
        warp.sync();
        let resembling = a.resembling.get::<u32>()[b];
        crate::trust::rank_rooms(warp, &rooms, kept, b as u32, resembling, &a.out);
        warp.leader(|| {
            a.out.lens.write(b, kept as u32);
            if let [judged, rounds, ..] = a.work.get::<AtomicU64>() {
                judged.fetch_max(work.judged, Ordering::Relaxed);
                rounds.fetch_max(work.rounds, Ordering::Relaxed);
            }
            0
        });
    }
}

/// The runs of `span` branches' children each that `live` branches make, and thread `t`'s element
/// of them: (runs, run, index).
unsafe fn run_element(
    live: DevSlice,
    span: u64,
    runs: &crate::trust::BeamRuns,
    t: usize,
) -> (usize, usize, usize) {
    let live = unsafe { live.get::<u32>()[0] } as usize;
    let stride = runs.stride.max(1) as usize;
    (live.div_ceil(span.max(1) as usize), t / stride, t % stride)
}

/// TruST: element `t % stride` of run `t / stride` of a level's children placed in the merge of
/// its run with its partner, if it ranks among the merge's `beam` best; the first of each pair of
/// runs writes the merge's length.
pub unsafe fn trust_merge(a: &TrustMergeArgs, t: usize) {
    unsafe {
        let (runs, r, i) = run_element(a.live, a.span, &a.runs, t);
        let view = a.runs.view(runs);
        if i == 0 && r % 2 == 0 && (r < runs || r == 0) {
            let len = |r: usize| if r < runs { view.len(r) } else { 0 };
            let merged = (len(r) + len(r + 1)).min(a.beam as usize);
            a.merged.lens.write(r / 2, merged as u32);
        }
        if r >= runs || i >= view.len(r) {
            return;
        }
        if let Some(place) = view.merged_place(r, i, a.beam as usize) {
            a.merged.put(r / 2, place, &view.key(r, i));
        }
    }
}

/// TruST: element `t % stride` of run `t / stride` of a level's children placed in the next beam,
/// if it ranks among the level's `beam` best; thread 0 also writes the next beam's size.
pub unsafe fn trust_select(a: &TrustSelectArgs, t: usize) {
    unsafe {
        let (runs, r, i) = run_element(a.live, a.span, &a.runs, t);
        let view = a.runs.view(runs);
        let (beam, width) = (a.beam as usize, a.width as usize);
        if t == 0 {
            let total: usize = (0..view.lens.len()).map(|r| view.len(r)).sum();
            a.next_live.write(0, total.min(beam) as u32);
        }
        if r >= view.lens.len() || i >= view.len(r) {
            return;
        }
        let Some(place) = view.place(r, i, beam) else {
            return;
        };
        let k = view.key(r, i);
        let parent = k.parent as usize;
        let row = a
            .next_rows
            .region_mut::<u32>(place * width, (place + 1) * width);
        row.copy_from_slice(&a.rows.get::<u32>()[parent * width..(parent + 1) * width]);
        row[a.node as usize] = k.node;
        a.next_scores.write(place, k.score);
        a.next_resembling.write(place, k.resembling);
    }
}
