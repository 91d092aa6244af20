//! What each GPU kernel does for one global thread index: the bodies behind the PTX entry points,
//! also called by the host emulator of the runtime, so that the device-side index math and buffer
//! handling are tested on the CPU. Each function checks its own bounds (extra threads of the last
//! block return at once) and writes only the region its work-item owns.
//!
//! # Safety
//! Every function requires its argument struct to describe valid buffers as documented in [`abi`]
//! (host or device memory, as the caller runs), with no other writer during the launch.
// The contract is the same for every function here and stated once above.
#![allow(clippy::missing_safety_doc)]

use core::sync::atomic::AtomicU32;

use crate::abi::*;
use crate::filter::{self, Incident, Need, NodeFilter};
use crate::join::{self, Check, Step};
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

pub unsafe fn identify_node_candidates(a: &IdentifyArgs, w: usize) {
    if w as u64 >= a.out.len {
        return;
    }
    unsafe {
        let within = a.within.get::<u32>();
        let mask = if within.is_empty() {
            u32::MAX
        } else {
            within[w]
        };
        let word =
            filter::identify_node_candidates(w, mask, &node_filter(&a.filter), &a.graph.view());
        a.out.write(w, word);
    }
}

pub unsafe fn count_words(a: &CountWordsArgs, w: usize) {
    if w as u64 >= a.counts.len {
        return;
    }
    unsafe { a.counts.write(w, scan::count_word(a.words.get::<u32>()[w])) }
}

pub unsafe fn write_words(a: &WriteWordsArgs, w: usize) {
    unsafe {
        let words = a.words.get::<u32>();
        if w >= words.len() {
            return;
        }
        let start = a.offsets.get::<u32>()[w] as usize;
        let n = words[w].count_ones() as usize;
        scan::write_word(w, words[w], a.out.region_mut::<u32>(start, start + n));
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

pub unsafe fn filter_neighbour_candidates(a: &FilterNeighboursArgs, t: usize) {
    unsafe {
        let candidates = a.candidates.get::<u32>();
        let (i, lane) = (t / crate::WARP, t % crate::WARP);
        if i >= candidates.len() {
            return;
        }
        let mark = a.mark.get::<AtomicU32>();
        let g = a.graph.view();
        filter::filter_neighbour_candidates(
            i,
            lane,
            crate::WARP,
            candidates,
            dir(a.dir),
            a.label,
            a.allowed.get::<u32>(),
            mark,
            &g,
        );
    }
}

pub unsafe fn refine_candidates(a: &RefineArgs, i: usize) {
    unsafe {
        let candidates = a.candidates.get::<u32>();
        if i >= candidates.len() {
            return;
        }
        let keep = filter::refine_candidate(
            candidates[i],
            a.incident.get::<Incident>(),
            a.sets.get::<u32>(),
            a.stride as usize,
            &a.graph.view(),
        );
        a.keep.write(i, keep as u32);
    }
}

pub unsafe fn count_edge_candidates(a: &EdgeCandidatesArgs, i: usize) {
    unsafe {
        let from = a.from.get::<u32>();
        if i >= from.len() {
            return;
        }
        let n = join::count_edge_candidates(
            i,
            from,
            dir(a.dir),
            a.label,
            a.to_set.get::<u32>(),
            &a.graph.view(),
        );
        a.counts.write(i, n);
    }
}

pub unsafe fn write_edge_candidates(a: &EdgeCandidatesArgs, i: usize) {
    unsafe {
        let from = a.from.get::<u32>();
        if i >= from.len() {
            return;
        }
        let offsets = a.offsets.get::<u64>();
        let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
        let targets = a.out_targets.region_mut::<u32>(s, e);
        let labels = a.out_labels.region_mut::<u16>(s, e);
        join::write_edge_candidates(
            i,
            from,
            dir(a.dir),
            a.label,
            a.to_set.get::<u32>(),
            &a.graph.view(),
            targets,
            labels,
        );
    }
}

/// What one work-item of an extension kernel works on.
struct Item<'a> {
    row: &'a [u32],
    lane: usize,
    step: Step<'a>,
    targets: &'a [u32],
    labels: &'a [u16],
}

/// The parent row, lane, step and scanned list of work-item `item` of an extension kernel.
unsafe fn extension_item<'a>(a: &ExtendArgs, item: usize) -> Option<Item<'a>> {
    unsafe {
        let (width, lanes) = (a.width as usize, a.lanes as usize);
        let rows = a.rows.get::<u32>();
        let row_index = item / lanes;
        if (row_index + 1) * width > rows.len() {
            return None;
        }
        let row = &rows[row_index * width..(row_index + 1) * width];
        let checks = a.step.checks.get::<Check>();
        let step = Step {
            slot: a.step.slot,
            nodes: a.step.nodes,
            injective: a.step.injective != 0,
            checks,
            pivot: a.step.pivot,
            candidates: a.step.candidates.get::<u32>(),
        };
        let (targets, labels) = if step.pivot == NONE {
            (a.all.get::<u32>(), &[][..])
        } else {
            let x = row[checks[step.pivot as usize].slot as usize];
            join::edge_candidate_list(
                x,
                a.from.get::<u32>(),
                a.ec_offsets.get::<u64>(),
                a.ec_targets.get::<u32>(),
                a.ec_labels.get::<u16>(),
            )
        };
        Some(Item {
            row,
            lane: item % lanes,
            step,
            targets,
            labels,
        })
    }
}

pub unsafe fn count_extensions(a: &ExtendArgs, item: usize) {
    unsafe {
        if let Some(Item {
            row,
            lane,
            step,
            targets,
            labels,
        }) = extension_item(a, item)
        {
            let n = join::count_extensions(
                row,
                lane,
                a.lanes as usize,
                &step,
                targets,
                labels,
                &a.graph.view(),
            );
            a.counts.write(item, n);
        }
    }
}

pub unsafe fn write_extensions(a: &ExtendArgs, item: usize) {
    unsafe {
        if let Some(Item {
            row,
            lane,
            step,
            targets,
            labels,
        }) = extension_item(a, item)
        {
            let offsets = a.offsets.get::<u64>();
            let width = a.width as usize;
            let out = a.out.region_mut::<u32>(
                offsets[item] as usize * width,
                offsets[item + 1] as usize * width,
            );
            join::write_extensions(
                row,
                lane,
                a.lanes as usize,
                &step,
                targets,
                labels,
                &a.graph.view(),
                out,
            );
        }
    }
}

/// TruST name similarity of data name `ids[first + i]`.
pub unsafe fn trust_similarity(a: &TrustSimilarityArgs, i: usize) {
    if i as u64 >= a.out.len {
        return;
    }
    unsafe {
        let row_len = a.row_len as usize;
        let row = a.scratch.region_mut::<u32>(i * row_len, (i + 1) * row_len);
        let item = a.first as usize + i;
        let s = crate::trust::similarity_item(
            item,
            a.query.get(),
            a.ids.get(),
            a.chars.get(),
            a.ends.get(),
            a.threshold,
            row,
        );
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
