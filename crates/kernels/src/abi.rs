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
use crate::trust::BeamRuns;
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
        shadow::wrote(
            self.ptr + (start * size_of::<T>()) as u64,
            (end - start) as u64,
            size_of::<T>() as u64,
        );
        unsafe { core::slice::from_raw_parts_mut((self.ptr as *mut T).add(start), end - start) }
    }

    /// Writes element `i`. Bounds are checked.
    ///
    /// # Safety
    /// As [`DevSlice::region_mut`] for `i..i + 1`.
    pub unsafe fn write<T>(self, i: usize, value: T) {
        assert!((i as u64) < self.len);
        shadow::wrote(
            self.ptr + (i * size_of::<T>()) as u64,
            1,
            size_of::<T>() as u64,
        );
        unsafe { (self.ptr as *mut T).add(i).write(value) }
    }
}

/// Plain (non-atomic) writes through a [`DevSlice`], reported to a hook the host emulator installs:
/// it keeps a shadow map of which thread wrote each element during a launch and fails the launch
/// when two threads write one element without an atomic. Nothing on the GPU.
pub mod shadow {
    #[cfg(not(target_arch = "nvptx64"))]
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// `hook(address, elements, element bytes)`.
    pub type Hook = fn(u64, u64, u64);

    #[cfg(not(target_arch = "nvptx64"))]
    static HOOK: AtomicUsize = AtomicUsize::new(0);

    /// Installs the hook (once per process; later calls replace it).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn install(hook: Hook) {
        HOOK.store(hook as usize, Ordering::Release);
    }

    #[inline]
    pub fn wrote(_addr: u64, _elements: u64, _bytes: u64) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let h = HOOK.load(Ordering::Acquire);
            if h != 0 {
                // Sound: only `install` stores here, and it stores a `Hook`.
                let hook = unsafe { core::mem::transmute::<usize, Hook>(h) };
                hook(_addr, _elements, _bytes);
            }
        }
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
                out: Adjacency::new(
                    self.out_offsets.get(),
                    self.out_targets.get(),
                    self.out_labels.get(),
                ),
                inc: Adjacency::new(
                    self.in_offsets.get(),
                    self.in_targets.get(),
                    self.in_labels.get(),
                ),
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

/// One query node's identification in an [`IdentifyNodesArgs`] launch: its filter, and the data
/// nodes it is tested on, the AND of `mark_count` neighbour marks from slot `marks` (bitsets of
/// `stride` words in the launch's `marks`), and of its own set when `seeded` (a concept set's
/// nodes, written by the host).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeJob {
    pub filter: FilterArgs,
    pub node: u32,
    pub seeded: u32,
    pub marks: u32,
    pub mark_count: u32,
}

/// `identify_nodes`: one thread per (job `k`, word `w`), item `k * stride + w`: word `w` of job
/// `k`'s node in `sets` (`u32` bitsets of all query nodes, `stride` words each). `jobs` holds
/// [`NodeJob`]s of distinct nodes, `marks` the `u32` mark bitsets.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IdentifyNodesArgs {
    pub graph: GraphArgs,
    pub jobs: DevSlice,
    pub sets: DevSlice,
    pub marks: DevSlice,
    pub stride: u64,
    pub clock: FilterClock,
}

/// The time limits of a filtering launch's queries: `query_of` (`u32`) the query of each node of
/// the bitsets, `clocks` three `u64`s per query: the start (0 until the first work-item looks),
/// the timed-out flag, and the budget in nanoseconds (`u64::MAX`: none). A work-item of a query
/// past its budget does nothing and sets the flag. Empty: no limits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FilterClock {
    pub query_of: DevSlice,
    pub clocks: DevSlice,
}

/// `count_words`: one thread per word of `words` (`u32`, the bitsets of all query nodes, `stride`
/// words each); `counts` are `u64`, one per word (the scan turns them into offsets).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CountWordsArgs {
    pub words: DevSlice,
    pub counts: DevSlice,
}

/// `write_words`: one thread per word; `offsets` are `u64` (exclusive scan of the counts), `out`
/// `u32`; word `w` holds data nodes `(w % stride) * 32 ..`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteWordsArgs {
    pub words: DevSlice,
    pub offsets: DevSlice,
    pub out: DevSlice,
    pub stride: u64,
}

/// `node_totals`: one thread per query node `u`: `out[u]` (`u64`) is its number of candidates, from
/// the scanned word counts `offsets` (`u64`, `stride` per node, plus one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeTotalsArgs {
    pub offsets: DevSlice,
    pub stride: u64,
    pub out: DevSlice,
}

/// A query edge seen from one endpoint, for [`AdjacencyBoundsArgs`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectedEdge {
    pub from: u32,
    pub dir: u32,
    pub label: u32,
    pub _pad: u32,
}

/// `adjacency_bounds`: one thread per (directed edge `j`, word `w`), item `j * stride + w`: adds the
/// adjacency lengths of `from`'s candidates in word `w` to `bounds[j]` (`u64`, atomically). `sets`
/// are the `u32` bitsets of all query nodes; `edges` holds [`DirectedEdge`]s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AdjacencyBoundsArgs {
    pub graph: GraphArgs,
    pub sets: DevSlice,
    pub stride: u64,
    pub edges: DevSlice,
    pub bounds: DevSlice,
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

/// One filtering step of a [`MarkStepsArgs`] launch: the candidates of query node `from` mark, over
/// `dir` (0 out, 1 in) and `label` (a relation or `NONE`), their neighbours in mark slot `mark`,
/// only those in query node `allowed`'s set (`NONE`: all).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarkStep {
    pub from: u32,
    pub dir: u32,
    pub label: u32,
    pub mark: u32,
    pub allowed: u32,
    pub _pad: u32,
}

/// `mark_steps`: one warp per (step `k`, word `w`), item `k * stride + w`: step `k`'s marks from the
/// candidates in word `w` of its `from` node. `steps` holds [`MarkStep`]s, `sets` the `u32` bitsets
/// of all query nodes and `marks` the mark bitsets (set atomically), `stride` words each.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MarkStepsArgs {
    pub graph: GraphArgs,
    pub steps: DevSlice,
    pub sets: DevSlice,
    pub marks: DevSlice,
    pub stride: u64,
    pub clock: FilterClock,
}

/// One query node of a [`RefineNodesArgs`] launch and its incident edges ([`Incident`]s).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RefineJob {
    pub node: u32,
    pub _pad: u32,
    pub incident: DevSlice,
}

/// `refine_nodes`: one thread per (job `k`, word `w`), item `k * stride + w`: word `w` of job `k`'s
/// node refined in place. `jobs` holds [`RefineJob`]s of query nodes no two of which are
/// neighbours (so no thread reads a word another one writes); `sets` the `u32` bitsets of all
/// query nodes, `stride` words each.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RefineNodesArgs {
    pub graph: GraphArgs,
    pub jobs: DevSlice,
    pub sets: DevSlice,
    pub stride: u64,
    pub clock: FilterClock,
}

/// One query edge's candidate-edge lists in an [`EdgeListsArgs`] launch: from the candidates `from`
/// (`u32`) over `dir`/`label` to the other endpoint's bitset `to_set`; `offsets` (`u64`, one more
/// than `from`) receives the counts, then holds them scanned; work-items `first..first +
/// from.len` are this list's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct EdgeList {
    pub from: DevSlice,
    pub to_set: DevSlice,
    pub offsets: DevSlice,
    pub first: u64,
    pub dir: u32,
    pub label: u32,
}

/// `count_edge_lists` and `write_edge_lists`: one thread per source candidate of every list (`lists`:
/// [`EdgeList`]s by ascending `first`); the write step fills `out_targets` (`u32`) and
/// `out_labels` (`u16`) at the scanned offsets.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct EdgeListsArgs {
    pub graph: GraphArgs,
    pub lists: DevSlice,
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

/// One query edge's candidate-edge lists from its earlier endpoint: `from` (`u32`, that endpoint's
/// sorted candidates), `offsets` (`u64`, one more than `from`, positions in `targets`), `targets`
/// (`u32`, each list sorted for a fixed relation), `labels` (`u16`, beside `targets`; empty for a
/// fixed relation).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ListsArgs {
    pub from: DevSlice,
    pub offsets: DevSlice,
    pub targets: DevSlice,
    pub labels: DevSlice,
}

/// `extend_warp`: one warp per parent row (`rows`: `parents` rows of `width` `u32`s). `lists`: one
/// [`ListsArgs`] per check of `step` (unused for self-loops); `all`: the new node's `u32`
/// candidates; `claimed`: four `u64`s, the counter of rows claimed, the launch's start time, the
/// timed-out flag (see `join::Claims`) and the queue of work-items (zeroed before the launch, as
/// the rest); `out`: `capacity` rows; warps stop once `stop_at` rows are claimed, or `budget_ns`
/// after the launch started. The work-items are the parents, or with `segments` (`u64`, one more
/// than the parents: the scanned number of `segment`-entry segments of each parent's pivot list,
/// see `pivot_segments`) the segments (a long list is shared by many warps). With `warps` 0 warp
/// `w` takes item `w`; with `warps` warps, warp `w` takes item `w` and then the next of the queue
/// (items `warps`, `warps + 1`, ...) until it is dry. `first_segment` is added to every
/// segment's number within its parent's list: with one parent, its segments from there on (a
/// list whose rows the memory budget does not hold runs in parts; 0 otherwise).
/// With `parents_at` (one `u64`: the previous level's claim counter), the parents are
/// `min(parents_at[0], parents)` (the host queues the level before it knows its size); with
/// `clock` (two `u64`s), the time limit's start and flag are shared with the query's other levels
/// instead of `claimed`'s own. `extend_warp_bindings` (a level with an edge variable) takes the
/// same arguments, and reads `step.pivot` (the check whose list it scans, with its relations;
/// `NONE`: `all`) and `step.candidates` (the new node's bitset), which `extend_warp` leaves unread
/// (`NONE`: `pivot_segments` counts the list `extend_warp` picks, else this one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtendWarpArgs {
    pub graph: GraphArgs,
    pub step: StepArgs,
    pub rows: DevSlice,
    pub parents: u64,
    pub width: u64,
    pub lists: DevSlice,
    pub all: DevSlice,
    pub claimed: DevSlice,
    pub out: DevSlice,
    pub capacity: u64,
    pub stop_at: u64,
    pub budget_ns: u64,
    pub segments: DevSlice,
    pub segment: u64,
    pub warps: u64,
    pub parents_at: DevSlice,
    pub clock: DevSlice,
    pub first_segment: u64,
}

/// `extend_warp_batch` (and `extend_warp_bindings_batch`, levels with an edge variable): one depth
/// of the levels of many queries in one launch. `jobs` holds one
/// [`ExtendWarpArgs`] per query (each with its own rows, lists, counters and limits, and `warps`
/// equal to this `warps`); warp `w` is warp `w % warps` of job `w / warps`, and once its job's
/// queue is dry it takes items from the queues of the jobs after it (work stealing).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtendWarpBatchArgs {
    pub jobs: DevSlice,
    pub warps: u64,
}

/// One list of a counted group for [`CountLeavesArgs`]: `leaves` query nodes whose candidates, for
/// a partial match, are in the candidate-edge list (`list`) of the data node in slot `slot`, and in
/// the lists of the entries after it with `leaves` 0 (at most `join::MAX_GROUP_LISTS` in all: one
/// per edge of the nodes, all back to enumerated nodes). `linked` 1 on a group's first entry: its
/// candidates may meet the group before it, the two counted together by the query's terms.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LeafGroupArgs {
    pub list: ListsArgs,
    pub slot: u32,
    pub leaves: u32,
    pub linked: u32,
    pub reserved: u32,
}

/// `count_leaves`: `threads` threads take the parent rows (`rows`, `width` `u32`s each) in turn:
/// `min(parents_at[0], parents)` of them with `parents_at` (the last level's claim counter), else
/// `parents`. Each adds its row's product over `groups` ([`LeafGroupArgs`]; the first `nodes` slots
/// are query nodes, `injective` 1 under iso; linked groups counted by `terms`, `join::LeafTerm`s) to
/// `total`: three `u64`s, the low and high words of a `u128` and an overflow flag. Threads stop
/// taking rows once the total reaches `stop_at` (a LIMIT; `u64::MAX`: never).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CountLeavesArgs {
    pub rows: DevSlice,
    pub parents: u64,
    pub parents_at: DevSlice,
    pub width: u64,
    pub nodes: u32,
    pub injective: u32,
    pub groups: DevSlice,
    pub terms: DevSlice,
    pub total: DevSlice,
    pub stop_at: u64,
    pub threads: u64,
}

/// `count_leaves_batch`: `count_leaves` for many queries in one launch. `jobs` holds one
/// [`CountLeavesArgs`] per query (each with its own rows, groups and total, and `threads` equal to
/// this `threads`); thread `t` is thread `t % threads` of job `t / threads`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CountLeavesBatchArgs {
    pub jobs: DevSlice,
    pub threads: u64,
}

/// `pivot_segments`: one thread per parent row of an [`ExtendWarpArgs`] (`a`), and one more:
/// `out[p]` (`u64`, `a.parents + 1` of them) is the number of `a.segment`-entry segments of its
/// pivot list, 0 for `p` at or past the number at `a.parents_at` when it is set, and at
/// `a.parents`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PivotSegmentsArgs {
    pub a: ExtendWarpArgs,
    pub out: DevSlice,
}

/// `pivot_segments_batch`: `pivot_segments` for many queries' levels of one depth. `jobs` holds
/// one [`PivotSegmentsArgs`] per query, their `out`s side by side so that one scan numbers every
/// query's segments (`extend_warp` counts a job's from its first offset); thread `t` is parent
/// `t % threads` of job `t / threads`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PivotSegmentsBatchArgs {
    pub jobs: DevSlice,
    pub threads: u64,
}

/// `trust_similarity`: one thread per data name, items `first..first + out.len`. `query` holds the
/// template name's code points; `ids` the data names to score; `chars`/`ends` all names' code points
/// (name `k` at `chars[ends[k - 1]..ends[k]]`); `out` one `f32` per item. A name of at most
/// `trust::PATTERN_BITS` code points comes as its `trust::Pattern` too (`ascii`: 128 `u64` masks;
/// `other_chars` (`u32`) and `other_masks` (`u64`): its other characters'), and is scored by the
/// bit-parallel distance in registers; a longer one (`ascii` empty) by the dynamic programme in
/// `scratch`, `row_len` `u32`s per item of the launch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustSimilarityArgs {
    pub query: DevSlice,
    pub ids: DevSlice,
    pub chars: DevSlice,
    pub ends: DevSlice,
    pub threshold: f32,
    pub _pad: u32,
    pub ascii: DevSlice,
    pub other_chars: DevSlice,
    pub other_masks: DevSlice,
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

/// `trust_extend`: one warp per live branch of TruST's beam search (`rows`: branch rows of `width`
/// `u32`s, a data node per template node or `NONE`; `scores`: their cumulative `f32` scores;
/// `resembling`: their `u32` resemblances; `live`: one `u32`, how many branches there are, written
/// by the level before), growing it by template node `node` through `trust::Judge::extend_top_warp`, its
/// lanes judging 32 candidates at once. `links` holds `trust::Link`s as three `u32`s each (other
/// node, direction 0 out / 1 in, relation), `seeds` the `u32` candidates of an unanchored level;
/// `oh` and `sim` are the one-hop and similarity tables (`f32`, row-major data x template). Each
/// branch keeps its `keep` best children by `trust::ChildKey` in its own region of the `rooms_*`
/// arrays (`u32` nodes, `f32` cumulative scores, `u32` 1 when the child's name resembles `node`'s),
/// then writes them best first as its run of `out` (stride `keep`; `trust::rank_rooms`), its
/// length in `out.lens`. `stage`: 96 `u32`s per branch, the lanes' staging slots. `work` (two
/// `u64`s, atomic maxima): the most candidates one branch judged, and the most rounds one branch's
/// warp took.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustExtendArgs {
    pub graph: GraphArgs,
    pub rows: DevSlice,
    pub scores: DevSlice,
    pub resembling: DevSlice,
    pub live: DevSlice,
    pub width: u64,
    pub node: u32,
    pub _pad: u32,
    pub links: DevSlice,
    pub seeds: DevSlice,
    pub oh: DevSlice,
    pub sim: DevSlice,
    pub alpha: f32,
    pub relation_weight: f32,
    pub keep: u64,
    pub rooms_nodes: DevSlice,
    pub rooms_scores: DevSlice,
    pub rooms_resembles: DevSlice,
    pub out: BeamRuns,
    pub stage: DevSlice,
    pub work: DevSlice,
}

/// `trust_merge`: a thread per element of the runs of a level's children (`runs`, each `span`
/// branches' children best first, of `live`'s branches), each placed in the merge of its run with
/// the next (runs `2r` and `2r + 1` into run `r` of `merged`), when fewer than `beam` rank before
/// it there (`trust::RunsView::merged_place`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustMergeArgs {
    pub live: DevSlice,
    pub span: u64,
    pub beam: u64,
    pub runs: BeamRuns,
    pub merged: BeamRuns,
}

/// `trust_select`: a thread per element of the runs of a level's children (`runs`, each `span`
/// branches' children best first, of `live`'s branches), each placed in the next beam when fewer
/// than `beam` of the level's children rank before it (`trust::RunsView::place`, the CPU's
/// `select`). A placed child's row (its parent's among `rows`, `width` `u32`s each, with `node` set
/// to its data node), score and resemblances go to its place in `next_rows`, `next_scores` and
/// `next_resembling`; thread 0 writes the next beam's size to `next_live`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustSelectArgs {
    pub rows: DevSlice,
    pub live: DevSlice,
    pub span: u64,
    pub width: u64,
    pub node: u32,
    pub _pad: u32,
    pub beam: u64,
    pub runs: BeamRuns,
    pub next_rows: DevSlice,
    pub next_scores: DevSlice,
    pub next_resembling: DevSlice,
    pub next_live: DevSlice,
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
        name: "identify_nodes",
        param_bytes: size_of::<IdentifyNodesArgs>(),
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
        name: "node_totals",
        param_bytes: size_of::<NodeTotalsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "adjacency_bounds",
        param_bytes: size_of::<AdjacencyBoundsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "mark_steps",
        param_bytes: size_of::<MarkStepsArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "refine_nodes",
        param_bytes: size_of::<RefineNodesArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "count_edge_lists",
        param_bytes: size_of::<EdgeListsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "write_edge_lists",
        param_bytes: size_of::<EdgeListsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "pivot_segments",
        param_bytes: size_of::<PivotSegmentsArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "pivot_segments_batch",
        param_bytes: size_of::<PivotSegmentsBatchArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "count_leaves",
        param_bytes: size_of::<CountLeavesArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "count_leaves_batch",
        param_bytes: size_of::<CountLeavesBatchArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "extend_warp",
        param_bytes: size_of::<ExtendWarpArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "extend_warp_bindings",
        param_bytes: size_of::<ExtendWarpArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "extend_warp_bindings_batch",
        param_bytes: size_of::<ExtendWarpBatchArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "extend_warp_batch",
        param_bytes: size_of::<ExtendWarpBatchArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "trust_similarity",
        param_bytes: size_of::<TrustSimilarityArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "trust_one_hop",
        param_bytes: size_of::<TrustOneHopArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "trust_extend",
        param_bytes: size_of::<TrustExtendArgs>(),
        threads_per_item: 32,
    },
    KernelSig {
        name: "trust_merge",
        param_bytes: size_of::<TrustMergeArgs>(),
        threads_per_item: 1,
    },
    KernelSig {
        name: "trust_select",
        param_bytes: size_of::<TrustSelectArgs>(),
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
const _: () = assert!(size_of::<NodeJob>() == 72);
const _: () = assert!(size_of::<MarkStep>() == 24);
const _: () = assert!(size_of::<RefineJob>() == 24);
const _: () = assert!(size_of::<EdgeList>() == 64);
const _: () = assert!(size_of::<LeafGroupArgs>() == 80);
// `extend_warp_batch` reads a table of these from device memory.
const _: () = assert!(size_of::<ExtendWarpArgs>() == 352);
// `pivot_segments_batch` reads a table of these.
const _: () = assert!(size_of::<PivotSegmentsArgs>() == 368);
// `count_leaves_batch` reads a table of these.
const _: () = assert!(size_of::<CountLeavesArgs>() == 120);
const _: () = assert!(size_of::<crate::trust::Link>() == 12);
