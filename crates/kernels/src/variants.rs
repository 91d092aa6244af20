//! Kernel variants: named implementations of one kernel's contract. Contributors add a variant
//! here; the tests run every variant against the kernel's reference on random inputs, and the
//! `kernels` bench (`cargo bench -p gpsense-benches --bench kernels`) times them side by side.
//!
//! A variant has exactly the reference's signature, so any of them can be swapped in.

use core::sync::atomic::AtomicU32;

use crate::filter;
use crate::join;
use crate::scan;
use crate::view::{Dir, GraphView};

/// A named implementation of a kernel with the same contract as the reference (the first).
#[derive(Clone, Copy)]
pub struct Variant<F> {
    pub name: &'static str,
    pub about: &'static str,
    pub run: F,
}

/// Exclusive prefix scan in place (`u64` values), returning the total.
pub type ScanFn = fn(&mut [u64]) -> u64;

/// Compaction write: the set bits of word `w` into the given slots.
pub type WriteWordFn = fn(usize, u32, &mut [u32]);

/// Neighbour filtering of candidate `i` (arguments as `filter::filter_neighbour_candidates` without
/// lane and lanes: the variant chooses how to spread its work).
pub type FilterNeighboursFn = fn(usize, &[u32], Dir, u32, &[u32], &[AtomicU32], &GraphView);

/// Edge-candidate count of source candidate `i` (as `join::count_edge_candidates`).
pub type CountEdgeCandidatesFn = fn(usize, &[u32], Dir, u32, &[u32], &GraphView) -> u32;

pub const SCAN: &[Variant<ScanFn>] = &[
    Variant { name: "sequential", about: "one pass, the host and single-block body", run: scan_sequential },
    Variant { name: "chunked", about: "per-chunk scans, a scan of the chunk sums, then offsets added (the GPU's three launches)", run: scan_chunked },
];

pub const WRITE_WORD: &[Variant<WriteWordFn>] = &[
    Variant {
        name: "trailing-zeros",
        about: "jumps from set bit to set bit",
        run: scan::write_word,
    },
    Variant {
        name: "bit-loop",
        about: "tests all 32 bits (no data-dependent trip count)",
        run: write_word_bit_loop,
    },
];

pub const FILTER_NEIGHBOURS: &[Variant<FilterNeighboursFn>] = &[
    Variant {
        name: "warp",
        about: "32 lanes stride one adjacency list (the paper's warp per candidate)",
        run: filter_warp,
    },
    Variant {
        name: "thread",
        about: "one thread walks the whole list",
        run: filter_thread,
    },
];

pub const COUNT_EDGE_CANDIDATES: &[Variant<CountEdgeCandidatesFn>] = &[
    Variant {
        name: "linear",
        about: "tests every neighbour against the bitset",
        run: join::count_edge_candidates,
    },
    Variant {
        name: "unrolled",
        about: "tests four neighbours per step (fewer loop branches)",
        run: count_edge_candidates_unrolled,
    },
];

fn scan_sequential(values: &mut [u64]) -> u64 {
    let mut total = 0;
    for v in values.iter_mut() {
        let x = *v;
        *v = total;
        total += x;
    }
    total
}

/// Chunks of 256 as GPU threads would take them; the chunk sums scanned by one thread.
fn scan_chunked(values: &mut [u64]) -> u64 {
    const CHUNK: usize = 256;
    let chunks = values.len().div_ceil(CHUNK);
    let mut sums = [0u64; 64];
    let mut total = 0;
    // Groups of 64 chunks keep the sums in a fixed buffer (kernel bodies never allocate).
    for group in 0..chunks.div_ceil(64) {
        let first = group * 64;
        let n = (chunks - first).min(64);
        for (k, sum) in sums[..n].iter_mut().enumerate() {
            *sum = scan::scan_chunk(first + k, CHUNK, values);
        }
        for (k, &sum) in sums[..n].iter().enumerate() {
            scan::add_chunk_offset(first + k, CHUNK, values, total);
            total += sum;
        }
    }
    total
}

fn write_word_bit_loop(w: usize, word: u32, out: &mut [u32]) {
    let base = (w as u32) << 5;
    let mut k = 0;
    for bit in 0..32 {
        if word & (1 << bit) != 0 {
            out[k] = base + bit;
            k += 1;
        }
    }
}

fn filter_warp(
    i: usize,
    c: &[u32],
    dir: Dir,
    label: u32,
    allowed: &[u32],
    mark: &[AtomicU32],
    g: &GraphView,
) {
    for lane in 0..crate::WARP {
        filter::filter_neighbour_candidates(i, lane, crate::WARP, c, dir, label, allowed, mark, g);
    }
}

fn filter_thread(
    i: usize,
    c: &[u32],
    dir: Dir,
    label: u32,
    allowed: &[u32],
    mark: &[AtomicU32],
    g: &GraphView,
) {
    filter::filter_neighbour_candidates(i, 0, 1, c, dir, label, allowed, mark, g);
}

fn count_edge_candidates_unrolled(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    to_set: &[u32],
    g: &GraphView,
) -> u32 {
    let targets = g.adj(dir).by_label(from[i], label).0;
    let mut chunks = targets.chunks_exact(4);
    let mut n = 0u32;
    for c in &mut chunks {
        n += crate::bits::test(to_set, c[0]) as u32
            + crate::bits::test(to_set, c[1]) as u32
            + crate::bits::test(to_set, c[2]) as u32
            + crate::bits::test(to_set, c[3]) as u32;
    }
    n + chunks
        .remainder()
        .iter()
        .filter(|&&w| crate::bits::test(to_set, w))
        .count() as u32
}
