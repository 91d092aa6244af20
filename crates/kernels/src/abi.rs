//! The launch contract of every GPU kernel: one `#[repr(C)]` argument struct per kernel, defined once
//! here and used by both sides, so the host launch and the PTX entry point cannot drift apart. Each
//! entry point takes exactly one parameter (its struct, by value); `cargo xtask ptx` checks that every
//! kernel in [`KERNELS`] exists in the PTX as an `.entry` with one parameter of the struct's size.
//!
//! Device memory is described by [`DevSlice`] (a device address and a length in elements). On the
//! device, [`DevSlice::get`] turns it back into a slice for the kernel body.

use core::mem::size_of;

use crate::filter::{Incident, Need};
use crate::join::Check;
use crate::view::{Adjacency, GraphView};

/// A device buffer: address and length in elements of the type the field documents.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevSlice {
    pub ptr: u64,
    pub len: u64,
}

impl DevSlice {
    /// The slice this describes.
    ///
    /// # Safety
    /// `ptr` must point to `len` initialised `T`s that live and are not written through another
    /// reference while the slice is used (the host guarantees it for the launch's duration).
    pub unsafe fn get<'a, T>(self) -> &'a [T] {
        if self.len == 0 {
            return &[];
        }
        unsafe { core::slice::from_raw_parts(self.ptr as *const T, self.len as usize) }
    }

    /// The part `start..end` of this buffer, for one work-item to write. Bounds are checked (a
    /// failed check ends the kernel).
    ///
    /// # Safety
    /// As [`DevSlice::get`]; no other work-item may access `start..end` during the launch.
    pub unsafe fn region_mut<'a, T>(self, start: usize, end: usize) -> &'a mut [T] {
        assert!(start <= end && end as u64 <= self.len);
        if start == end {
            return &mut [];
        }
        unsafe { core::slice::from_raw_parts_mut((self.ptr as *mut T).add(start), end - start) }
    }

    /// Writes element `i`. Bounds are checked.
    ///
    /// # Safety
    /// As [`DevSlice::region_mut`] for `i..i + 1`.
    pub unsafe fn write<T>(self, i: usize, value: T) {
        assert!((i as u64) < self.len);
        unsafe { (self.ptr as *mut T).add(i).write(value) }
    }
}

/// The data graph: both CSR directions (`u32` offsets and targets, `u16` labels) and node labels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GraphArgs {
    pub out_offsets: DevSlice,
    pub out_targets: DevSlice,
    pub out_labels: DevSlice,
    pub in_offsets: DevSlice,
    pub in_targets: DevSlice,
    pub in_labels: DevSlice,
    pub node_labels: DevSlice,
}

impl GraphArgs {
    /// # Safety
    /// Every field must satisfy [`DevSlice::get`].
    pub unsafe fn view<'a>(&self) -> GraphView<'a> {
        unsafe {
            GraphView {
                out: Adjacency {
                    offsets: self.out_offsets.get(),
                    targets: self.out_targets.get(),
                    labels: self.out_labels.get(),
                },
                inc: Adjacency {
                    offsets: self.in_offsets.get(),
                    targets: self.in_targets.get(),
                    labels: self.in_labels.get(),
                },
                node_labels: self.node_labels.get(),
            }
        }
    }
}

/// A [`crate::filter::NodeFilter`]: `degrees` and `neighbour_labels` hold [`Need`]s, `self_loops` `u32`s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FilterArgs {
    pub fixed: u32,
    pub label: u32,
    pub degrees: DevSlice,
    pub neighbour_labels: DevSlice,
    pub self_loops: DevSlice,
}

/// `identify_node_candidates`: one thread per bitset word. `within`: `u32` mask words (empty: all);
/// `out`: `u32` words.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IdentifyArgs {
    pub graph: GraphArgs,
    pub filter: FilterArgs,
    pub within: DevSlice,
    pub out: DevSlice,
}

/// `count_words`: one thread per word; `words` and `counts` are `u32`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CountWordsArgs {
    pub words: DevSlice,
    pub counts: DevSlice,
}

/// `write_words`: one thread per word; `offsets` are `u32` (exclusive scan of the counts), `out` `u32`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteWordsArgs {
    pub words: DevSlice,
    pub offsets: DevSlice,
    pub out: DevSlice,
}

/// `scan_chunks` (one thread per chunk of `chunk` values: exclusive scan in place, chunk total into
/// `sums`) and `add_chunk_offsets` (one thread per chunk: adds the scanned `sums`). Values and sums
/// are `u64`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ScanArgs {
    pub values: DevSlice,
    pub sums: DevSlice,
    pub chunk: u64,
}

/// `filter_neighbour_candidates`: one warp per candidate. `candidates`, `allowed`, `mark` are `u32`;
/// `dir` is 0 (out) or 1 (in); `label` a relation or `NONE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FilterNeighboursArgs {
    pub graph: GraphArgs,
    pub candidates: DevSlice,
    pub dir: u32,
    pub label: u32,
    pub allowed: DevSlice,
    pub mark: DevSlice,
}

/// `refine_candidate`: one thread per candidate. `incident` holds [`Incident`]s, `sets` the `u32`
/// bitsets of all query nodes (`stride` words each), `keep` one `u32` (0/1) per candidate.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RefineArgs {
    pub graph: GraphArgs,
    pub candidates: DevSlice,
    pub incident: DevSlice,
    pub sets: DevSlice,
    pub stride: u64,
    pub keep: DevSlice,
}

/// `count_edge_candidates` (`counts`: `u32` per source candidate) and `write_edge_candidates`
/// (`offsets`: `u64`, scanned counts; `out_targets` `u32`, `out_labels` `u16`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct EdgeCandidatesArgs {
    pub graph: GraphArgs,
    pub from: DevSlice,
    pub dir: u32,
    pub label: u32,
    pub to_set: DevSlice,
    pub counts: DevSlice,
    pub offsets: DevSlice,
    pub out_targets: DevSlice,
    pub out_labels: DevSlice,
}

/// A [`crate::join::Step`]: `checks` holds [`Check`]s, `candidates` the `u32` bitset of the new node.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StepArgs {
    pub slot: u32,
    pub nodes: u32,
    pub injective: u32,
    pub pivot: u32,
    pub checks: DevSlice,
    pub candidates: DevSlice,
}

/// `count_extensions` (`counts`: `u64` per (row, lane)) and `write_extensions` (`offsets`: `u64`
/// scanned counts; `out`: rows). `rows` are the parent partial matches (`width` `u32`s each). The
/// list a row scans: with a pivot, the pivot edge's candidates from the row's node (`from`: the
/// earlier endpoint's sorted candidate array; `ec_offsets` `u64`, `ec_targets` `u32`, `ec_labels`
/// `u16`); without, `all` (the new node's candidate array).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtendArgs {
    pub graph: GraphArgs,
    pub step: StepArgs,
    pub rows: DevSlice,
    pub width: u64,
    pub lanes: u64,
    pub from: DevSlice,
    pub ec_offsets: DevSlice,
    pub ec_targets: DevSlice,
    pub ec_labels: DevSlice,
    pub all: DevSlice,
    pub counts: DevSlice,
    pub offsets: DevSlice,
    pub out: DevSlice,
}

/// `trust_similarity`: one thread per data name, items `first..first + out.len`. `query` holds the
/// template name's code points; `ids` the data names to score; `chars`/`ends` all names' code points
/// (name `k` at `chars[ends[k - 1]..ends[k]]`); `scratch` `row_len` `u32`s per item of the launch;
/// `out` one `f32` per item.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustSimilarityArgs {
    pub query: DevSlice,
    pub ids: DevSlice,
    pub chars: DevSlice,
    pub ends: DevSlice,
    pub threshold: f32,
    pub _pad: u32,
    pub scratch: DevSlice,
    pub row_len: u64,
    pub first: u64,
    pub out: DevSlice,
}

/// `trust_one_hop`: one thread per (data node, template node) pair of the table, row-major
/// `data x template`, items `first..first + out.len`. The template in CSR form (`tpl_offsets`,
/// `tpl_others`, `tpl_dirs` as `u32` 0 = out / 1 = in, `tpl_relations`), the similarity table `sim`
/// (`f32`, same layout), per-item scratch of `scratch_f_len` `f32`s and `scratch_u_len` `u32`s (see
/// `trust::hop_scratch_len`), `out` one `f32` per item.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustOneHopArgs {
    pub graph: GraphArgs,
    pub tpl_offsets: DevSlice,
    pub tpl_others: DevSlice,
    pub tpl_dirs: DevSlice,
    pub tpl_relations: DevSlice,
    pub sim: DevSlice,
    pub alpha: f32,
    pub relation_weight: f32,
    pub scratch_f: DevSlice,
    pub scratch_f_len: u64,
    pub scratch_u: DevSlice,
    pub scratch_u_len: u64,
    pub first: u64,
    pub out: DevSlice,
}

/// A kernel of the PTX module: its entry name, its argument struct's size, and threads per work-item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSig {
    pub name: &'static str,
    pub param_bytes: usize,
    /// 1 for thread-per-item kernels, 32 for warp-per-item ones.
    pub threads_per_item: u32,
}

/// Every kernel the host launches.
pub const KERNELS: &[KernelSig] = &[
    KernelSig {
        name: "identify_node_candidates",
        param_bytes: size_of::<IdentifyArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "count_words",
        param_bytes: size_of::<CountWordsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "write_words",
        param_bytes: size_of::<WriteWordsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "scan_chunks",
        param_bytes: size_of::<ScanArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "add_chunk_offsets",
        param_bytes: size_of::<ScanArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "filter_neighbour_candidates",
        param_bytes: size_of::<FilterNeighboursArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "refine_candidates",
        param_bytes: size_of::<RefineArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "count_edge_candidates",
        param_bytes: size_of::<EdgeCandidatesArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "write_edge_candidates",
        param_bytes: size_of::<EdgeCandidatesArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "count_extensions",
        param_bytes: size_of::<ExtendArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "write_extensions",
        param_bytes: size_of::<ExtendArgs>(),
        threads_per_item: 1,
    },
];

/// Launch geometry for `items` work-items of a kernel: (blocks, threads per block).
pub fn launch_config(items: u64, threads_per_item: u32, block: u32) -> (u32, u32) {
    let threads = items.saturating_mul(threads_per_item as u64);
    let blocks = threads.div_ceil(block as u64).clamp(1, u32::MAX as u64) as u32;
    (blocks, block)
}

// The structs cross to the device by value: their layout must not depend on the target.
const _: () = assert!(size_of::<DevSlice>() == 16);
const _: () = assert!(size_of::<Need>() == 12);
const _: () = assert!(size_of::<Incident>() == 12);
const _: () = assert!(size_of::<Check>() == 16);
