//! `extern "ptx-kernel"` wrappers. Safety: the host launches each with the geometry of
//! `abi::launch_config` and buffers that match its argument struct's documentation.

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _thread_idx_x};
use core::sync::atomic::AtomicU32;

use gpsense_kernels::abi::*;
use gpsense_kernels::filter::{self, Incident, Need, NodeFilter};
use gpsense_kernels::join::{self, Check, Step};
use gpsense_kernels::{scan, Dir, NONE};

/// The global thread index.
#[inline]
unsafe fn gid() -> usize {
    unsafe { _block_idx_x() as usize * _block_dim_x() as usize + _thread_idx_x() as usize }
}

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

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn identify_node_candidates(a: IdentifyArgs) {
    unsafe {
        let w = gid();
        let out = a.out.get_mut::<u32>();
        if w >= out.len() {
            return;
        }
        let within = a.within.get::<u32>();
        let mask = if within.is_empty() {
            u32::MAX
        } else {
            within[w]
        };
        out[w] =
            filter::identify_node_candidates(w, mask, &node_filter(&a.filter), &a.graph.view());
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn count_words(a: CountWordsArgs) {
    unsafe {
        let w = gid();
        let counts = a.counts.get_mut::<u32>();
        if w < counts.len() {
            counts[w] = scan::count_word(a.words.get::<u32>()[w]);
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn write_words(a: WriteWordsArgs) {
    unsafe {
        let w = gid();
        let words = a.words.get::<u32>();
        if w >= words.len() {
            return;
        }
        let start = a.offsets.get::<u32>()[w] as usize;
        let n = words[w].count_ones() as usize;
        scan::write_word(w, words[w], &mut a.out.get_mut::<u32>()[start..start + n]);
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn scan_chunks(a: ScanArgs) {
    unsafe {
        let t = gid();
        let sums = a.sums.get_mut::<u64>();
        if t < sums.len() {
            sums[t] = scan::scan_chunk(t, a.chunk as usize, a.values.get_mut::<u64>());
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn add_chunk_offsets(a: ScanArgs) {
    unsafe {
        let t = gid();
        let sums = a.sums.get::<u64>();
        if t < sums.len() {
            scan::add_chunk_offset(t, a.chunk as usize, a.values.get_mut::<u64>(), sums[t]);
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn filter_neighbour_candidates(a: FilterNeighboursArgs) {
    unsafe {
        let t = gid();
        let candidates = a.candidates.get::<u32>();
        let (i, lane) = (t / 32, t % 32);
        if i >= candidates.len() {
            return;
        }
        let mark = a.mark.get::<AtomicU32>();
        let g = a.graph.view();
        filter::filter_neighbour_candidates(
            i,
            lane,
            32,
            candidates,
            dir(a.dir),
            a.label,
            a.allowed.get::<u32>(),
            mark,
            &g,
        );
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn refine_candidates(a: RefineArgs) {
    unsafe {
        let i = gid();
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
        a.keep.get_mut::<u32>()[i] = keep as u32;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn count_edge_candidates(a: EdgeCandidatesArgs) {
    unsafe {
        let i = gid();
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
        a.counts.get_mut::<u32>()[i] = n;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn write_edge_candidates(a: EdgeCandidatesArgs) {
    unsafe {
        let i = gid();
        let from = a.from.get::<u32>();
        if i >= from.len() {
            return;
        }
        let offsets = a.offsets.get::<u64>();
        let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
        let targets = &mut a.out_targets.get_mut::<u32>()[s..e];
        let labels = &mut a.out_labels.get_mut::<u16>()[s..e];
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

/// The parent row, lane and scanned list of work-item `item`.
unsafe fn extension_item<'a>(
    a: &ExtendArgs,
    item: usize,
) -> Option<(&'a [u32], usize, Step<'a>, &'a [u32], &'a [u16])> {
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
        Some((row, item % lanes, step, targets, labels))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn count_extensions(a: ExtendArgs) {
    unsafe {
        let item = gid();
        if let Some((row, lane, step, targets, labels)) = extension_item(&a, item) {
            let n = join::count_extensions(
                row,
                lane,
                a.lanes as usize,
                &step,
                targets,
                labels,
                &a.graph.view(),
            );
            a.counts.get_mut::<u64>()[item] = n;
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn write_extensions(a: ExtendArgs) {
    unsafe {
        let item = gid();
        if let Some((row, lane, step, targets, labels)) = extension_item(&a, item) {
            let offsets = a.offsets.get::<u64>();
            let width = a.width as usize;
            let out = &mut a.out.get_mut::<u32>()
                [offsets[item] as usize * width..offsets[item + 1] as usize * width];
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
