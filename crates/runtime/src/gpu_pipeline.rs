//! The GpSense pipeline on a [`Device`], device-resident: the graph, the query's candidate space and
//! every intermediate array live on the device, in buffers kept from query to query ([`Arena`]);
//! scans run on the device; the host queues launches and reads back only what it must decide on.
//!
//! Per query (n query nodes, a "level" per node in join order):
//! 1. one upload of the query (filters, incident edges, the edges seen from each endpoint, and the
//!    job tables of the fused filtering launches);
//! 2. filtering on candidate bitsets in plan order, a launch per wave ([`Waves`]) to identify and
//!    one to mark neighbours (a warp per bitset word), `refine_rounds` refinements in reverse
//!    order (a launch per wave), per-word counts and their scan (the rank of every candidate), and
//!    per query edge and endpoint the total adjacency of its candidates;
//! 3. **read 1**: candidates per query node and those adjacency totals (O(query) words);
//! 4. the join order from the counts (for a count, counted leaves last: `gpu_leaves`); the
//!    candidate arrays (compaction) and the candidate-edge lists of every query edge toward the
//!    later endpoint (one count launch, device scan, one write launch), their room reserved from
//!    the totals of step 2;
//! 5. the warp-centric join (`extend_warp`: one pass, rows claimed by one atomic add per warp;
//!    `extend_warp_bindings` for a level with an edge variable: a count pass, a warp scan, one
//!    claim and a write pass in the same launch), its levels queued back to back, each taking its parents' number from the previous level's
//!    counter, then `count_leaves` for counted leaves, and **one read** of every counter; the last
//!    level's rows are read once more.
//!
//! So a query whose levels fit their buffers makes 2 reads (3 with rows). A level that outgrows
//! its buffer is run again, queued as above, into a larger buffer (within the memory budget) or
//! depth first: chunks of its parents each run through every remaining level, one read a chunk.
//! A level whose pivot lists can be long (`segments`) has them cut into segments that warps take in turn:
//! `pivot_segments` counts them over the parents the previous level's counter holds and a device
//! scan numbers them, both queued, so segmented levels queue and go depth first too.

use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

#[path = "gpu_batch.rs"]
mod batch;
pub(crate) use batch::BatchItem;

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::abi::{
    AdjacencyBoundsArgs, CountLeavesArgs, CountWordsArgs, DevSlice, DirectedEdge, EdgeList,
    EdgeListsArgs, ExtendWarpArgs, FilterArgs, FilterClock, GraphArgs, IdentifyNodesArgs,
    LeafGroupArgs, ListsArgs, MarkStep, MarkStepsArgs, NodeJob, NodeTotalsArgs, PivotSegmentsArgs,
    RefineJob, RefineNodesArgs, ScanArgs, StepArgs, WriteWordsArgs,
};
use gpsense_kernels::filter::Incident;
use gpsense_kernels::join::LeafTerm;
use gpsense_kernels::{bits, Dir, GraphView, NONE};
use gpsense_planner::{Plan, QueryGraph};

use crate::device::memory::{graph_bytes, place_graph, Placement};
use crate::device::{
    as_bytes, map_host, read, upload, Buf, Device, DeviceCounters, DeviceError, Launch, Pod,
};
use crate::filtering::FilterReport;
use crate::gpu_leaves::{self, LeafGroup};
use crate::layout::{DataShape, Layout};
use crate::output::Output;
use crate::segments::{Scan, Segments, SEGMENT};
use crate::{MatchError, Semantics};

/// The data graph on a device, uploaded once and reused across queries.
pub struct DeviceGraph<D: Device> {
    parts: [Buf<D, u32>; 5],
    labels: [Buf<D, u16>; 2],
    pub placement: Placement,
    pub nodes: usize,
}

impl<D: Device> DeviceGraph<D> {
    /// Uploads both CSR directions and the node labels, or maps them from pinned host memory when
    /// they do not fit in free device memory.
    pub fn new(dev: &D, g: &KnowledgeGraph) -> Result<Self, DeviceError> {
        let need = graph_bytes(
            g.node_count() as u64,
            g.edge_count() as u64,
            g.has_node_labels(),
        );
        let placement = if dev.force_mapped() {
            Placement::HostMapped
        } else {
            place_graph(need, dev.free_memory()?)
        };
        fn put<D: Device, T: Pod>(
            dev: &D,
            placement: Placement,
            data: &[T],
        ) -> Result<Buf<D, T>, DeviceError> {
            match placement {
                Placement::Device => upload(dev, data),
                Placement::HostMapped => map_host(dev, data),
            }
        }
        let parts = [
            put(dev, placement, g.out().offsets())?,
            put(dev, placement, g.out().targets())?,
            put(dev, placement, g.inc().offsets())?,
            put(dev, placement, g.inc().targets())?,
            put(dev, placement, g.node_labels())?,
        ];
        let labels = [
            put(dev, placement, g.out().labels())?,
            put(dev, placement, g.inc().labels())?,
        ];
        Ok(DeviceGraph {
            parts,
            labels,
            placement,
            nodes: g.node_count(),
        })
    }

    /// The kernels' description of the graph's arrays on `dev`.
    pub fn args(&self, dev: &D) -> GraphArgs {
        GraphArgs {
            out_offsets: self.parts[0].slice(dev),
            out_targets: self.parts[1].slice(dev),
            out_labels: self.labels[0].slice(dev),
            in_offsets: self.parts[2].slice(dev),
            in_targets: self.parts[3].slice(dev),
            in_labels: self.labels[1].slice(dev),
            node_labels: self.parts[4].slice(dev),
        }
    }
}

/// A device buffer that only grows, until it is given back.
struct Slab<D: Device> {
    buf: Option<D::Buffer>,
    cap: usize,
}

impl<D: Device> Default for Slab<D> {
    fn default() -> Self {
        Slab { buf: None, cap: 0 }
    }
}

impl<D: Device> Slab<D> {
    /// The buffer, reallocated (contents lost) when smaller than `bytes`. It grows to what a query
    /// needs (in 4 KiB steps), not more: the memory budget counts it.
    fn ensure(&mut self, dev: &D, bytes: usize) -> Result<&D::Buffer, DeviceError> {
        if self.buf.is_none() || self.cap < bytes {
            self.release(dev);
            let cap = bytes.max(1).next_multiple_of(PAGE as usize);
            self.buf = Some(dev.alloc_zeroed(cap)?);
            self.cap = cap;
        }
        Ok(self.buf.as_ref().expect("allocated above"))
    }

    fn get(&self) -> &D::Buffer {
        self.buf.as_ref().expect("ensured before use")
    }

    /// Gives the buffer back to the device (after the work queued on it).
    fn release(&mut self, dev: &D) {
        if let Some(old) = self.buf.take() {
            dev.release(old);
        }
        self.cap = 0;
    }
}

/// The unit buffers are allocated in.
const PAGE: u64 = 4096;

/// Device memory kept between queries: after warm-up, a query allocates nothing.
pub struct Arena<D: Device> {
    filter: Slab<D>,
    space: Slab<D>,
    /// One per join level: a level's output stays while the levels below it run in parts.
    levels: Vec<Slab<D>>,
    /// Count and scan room of the count-then-write join.
    scratch: Slab<D>,
    /// A batch's level buffers (one per depth, every query's rows side by side) and its tables
    /// of per-query level arguments.
    batch_levels: Vec<Slab<D>>,
    batch_jobs: Slab<D>,
    /// The last levels of a batch's queries that want rows, side by side: one read for all.
    batch_rows: Slab<D>,
}

impl<D: Device> Default for Arena<D> {
    fn default() -> Self {
        Arena {
            filter: Slab::default(),
            space: Slab::default(),
            levels: Vec::new(),
            scratch: Slab::default(),
            batch_levels: Vec::new(),
            batch_jobs: Slab::default(),
            batch_rows: Slab::default(),
        }
    }
}

impl<D: Device> Arena<D> {
    /// Grows a buffer to `bytes` (tests of the arenas' reuse).
    #[cfg(test)]
    pub(crate) fn hold(&mut self, dev: &D, bytes: usize) -> Result<(), DeviceError> {
        self.scratch.ensure(dev, bytes).map(|_| ())
    }

    /// Gives back every buffer when together they hold more than `budget` bytes: a query after a
    /// larger one held the larger one's buffers besides what it allocated within its own budget
    /// (9.8 MB at a budget of 320 KiB). Within the budget they stay, for the next query to reuse.
    fn fit(&mut self, dev: &D, budget: u64) {
        if self.bytes() <= budget {
            return;
        }
        let slabs = [
            &mut self.filter,
            &mut self.space,
            &mut self.scratch,
            &mut self.batch_jobs,
            &mut self.batch_rows,
        ];
        for slab in slabs
            .into_iter()
            .chain(&mut self.levels)
            .chain(&mut self.batch_levels)
        {
            slab.release(dev);
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        (self.filter.cap + self.space.cap + self.scratch.cap + self.batch_jobs.cap) as u64
            + self.batch_rows.cap as u64
            + self.levels.iter().map(|s| s.cap as u64).sum::<u64>()
            + self.batch_levels.iter().map(|s| s.cap as u64).sum::<u64>()
    }
}

/// Carves typed regions out of one buffer, 16-byte aligned. Run once at address 0 to size a
/// buffer, then at its address.
struct Carver {
    base: u64,
    at: usize,
}

/// A carved region: its byte offset in the buffer and its kernel-side slice.
#[derive(Clone, Copy, Debug, Default)]
struct Region {
    offset: usize,
    slice: DevSlice,
}

impl Region {
    fn bytes(&self, elem: usize) -> usize {
        self.slice.len as usize * elem
    }

    /// `u64` words `start..end`.
    pub(crate) fn words(&self, (start, end): (usize, usize)) -> Region {
        self.part(8, start, end)
    }

    /// Elements `start..end` (of `elem` bytes each).
    fn part(&self, elem: usize, start: usize, end: usize) -> Region {
        Region {
            offset: self.offset + start * elem,
            slice: DevSlice {
                ptr: self.slice.ptr + (start * elem) as u64,
                len: (end - start) as u64,
            },
        }
    }
}

impl Carver {
    fn new(base: u64) -> Self {
        Carver { base, at: 0 }
    }

    fn take<T>(&mut self, len: usize) -> Region {
        let offset = self.at.next_multiple_of(16);
        self.at = offset + len * size_of::<T>();
        Region {
            offset,
            slice: DevSlice {
                ptr: self.base + offset as u64,
                len: len as u64,
            },
        }
    }
}

/// Values per chunk of the device scan.
const SCAN_CHUNK: usize = 256;

fn scan_sums(len: usize) -> usize {
    len.div_ceil(SCAN_CHUNK) + 1
}

/// A query's (or a batch's) part of the filtering arena.
#[derive(Clone)]
struct FilterRegions {
    sets: Region,
    marks: Region,
    offsets: Region,
    sums: Region,
    summary: Region,
    /// Each query's time limit in the filtering kernels (start, flag, budget), read with the
    /// summary, and the query of each node (see `FilterClock`).
    clocks: Region,
    query_of: Region,
    params: Region,
    /// The per-wave job tables of identification, marking and refinement.
    jobs: Region,
    /// Every query edge seen from each endpoint.
    edges: Region,
}

/// The query as the device reads it: filters and incident edges, in one upload.
struct Params {
    bytes: Vec<u8>,
    /// Per query node: degrees, neighbour labels, self-loops, incident edges (byte ranges).
    nodes: Vec<[(usize, usize); 4]>,
}

impl Params {
    /// The query's params with its nodes numbered from `base` (its place in a batch).
    fn new(layout: &Layout, base: u32) -> Self {
        let mut bytes = Vec::new();
        let mut put = |data: &[u8]| {
            let at = bytes.len().next_multiple_of(16);
            bytes.resize(at, 0);
            bytes.extend_from_slice(data);
            (at, data.len())
        };
        let nodes = (0..layout.nodes)
            .map(|u| {
                let f = &layout.filters[u];
                let incident: Vec<Incident> = layout.incident[u]
                    .iter()
                    .map(|e| Incident {
                        other: e.other + base,
                        ..*e
                    })
                    .collect();
                [
                    put(as_bytes(&f.degrees)),
                    put(as_bytes(&f.neighbour_labels)),
                    put(as_bytes(&f.self_loops)),
                    put(as_bytes(&incident)),
                ]
            })
            .collect();
        Params { bytes, nodes }
    }

    /// The bytes `new` writes, 16-aligned, without writing them.
    fn len(layout: &Layout) -> usize {
        let node = |u: usize| {
            let f = &layout.filters[u];
            [
                size_of_val(f.degrees.as_slice()),
                size_of_val(f.neighbour_labels.as_slice()),
                size_of_val(f.self_loops.as_slice()),
                layout.incident[u].len() * size_of::<Incident>(),
            ]
        };
        let end = (0..layout.nodes)
            .flat_map(node)
            .fold(0, |at: usize, len| at.next_multiple_of(16) + len);
        end.next_multiple_of(16)
    }
}

fn slice_at(region: &Region, (at, len): (usize, usize), elem: usize) -> DevSlice {
    DevSlice {
        ptr: region.slice.ptr + at as u64,
        len: (len / elem) as u64,
    }
}

/// The filtering phase's schedule. A node's wave is one more than the latest wave among the earlier
/// endpoints of its edges (0 without any), so query neighbours never share a wave: a wave's nodes
/// are identified in one launch once every mark into them is made, then mark their later
/// neighbours in one launch, and refinement takes the waves in reverse. The sets are exactly those
/// of a pass node by node in plan order, in launches per wave instead of per query edge.
struct Waves {
    /// Query nodes per wave, in plan order.
    nodes: Vec<Vec<usize>>,
    /// Neighbour steps (indexes into `Layout::neighbour_steps`) per wave of their earlier endpoint.
    steps: Vec<Vec<usize>>,
    /// Per query node, the first mark slot of the steps into it and their number.
    marks: Vec<(u32, u32)>,
    /// The mark slot of each step (grouped by the node it marks).
    slot: Vec<u32>,
}

/// The job tables of [`Waves`], one upload, and each wave's part of them.
struct Tables {
    bytes: Vec<u8>,
    identify: Vec<DevSlice>,
    mark: Vec<DevSlice>,
    refine: Vec<DevSlice>,
}

/// One wave's jobs (of one query, or of every query of a batch).
#[derive(Default)]
struct WaveJobs {
    identify: Vec<NodeJob>,
    mark: Vec<MarkStep>,
    refine: Vec<RefineJob>,
}

impl Tables {
    /// The tables as the device reads them at `jobs`: node jobs, then mark steps, then refine
    /// jobs, each wave's part contiguous.
    fn new(waves: &[WaveJobs], jobs: &Region) -> Self {
        let mut bytes = Vec::new();
        let base = jobs.slice.ptr;
        let part = |bytes: &mut Vec<u8>, data: &[u8], len: usize| {
            let at = bytes.len();
            bytes.extend_from_slice(data);
            DevSlice {
                ptr: base + at as u64,
                len: len as u64,
            }
        };
        let identify = waves
            .iter()
            .map(|w| part(&mut bytes, as_bytes(&w.identify), w.identify.len()))
            .collect();
        let mark = waves
            .iter()
            .map(|w| part(&mut bytes, as_bytes(&w.mark), w.mark.len()))
            .collect();
        let refine = waves
            .iter()
            .map(|w| part(&mut bytes, as_bytes(&w.refine), w.refine.len()))
            .collect();
        Tables {
            bytes,
            identify,
            mark,
            refine,
        }
    }
}

impl Waves {
    fn new(layout: &Layout) -> Self {
        let (n, steps) = (layout.nodes, &layout.neighbour_steps);
        let mut wave = vec![0usize; n];
        // Steps come by their earlier endpoint's plan position: its wave is final when read.
        for s in steps {
            wave[s.to] = wave[s.to].max(wave[s.from] + 1);
        }
        let count = wave.iter().max().map_or(0, |&w| w + 1);
        let mut nodes = vec![Vec::new(); count];
        for &u in &layout.order {
            nodes[wave[u]].push(u);
        }
        let mut by_wave = vec![Vec::new(); count];
        for (j, s) in steps.iter().enumerate() {
            by_wave[wave[s.from]].push(j);
        }
        let mut marks = vec![(0u32, 0u32); n];
        let mut slot = vec![0u32; steps.len()];
        let mut next = 0u32;
        for (t, m) in marks.iter_mut().enumerate() {
            m.0 = next;
            for (j, _) in steps.iter().enumerate().filter(|(_, s)| s.to == t) {
                slot[j] = next;
                next += 1;
            }
            m.1 = next - m.0;
        }
        Waves {
            nodes,
            steps: by_wave,
            marks,
            slot,
        }
    }

    fn table_bytes(&self) -> usize {
        let n: usize = self.nodes.iter().map(Vec::len).sum();
        let m: usize = self.steps.iter().map(Vec::len).sum();
        n * (size_of::<NodeJob>() + size_of::<RefineJob>()) + m * size_of::<MarkStep>()
    }

    /// Each wave's jobs, the query's nodes numbered from `base` and its mark slots from
    /// `mark_base`, its params at `params`.
    fn jobs(
        &self,
        layout: &Layout,
        params: &Params,
        at: &Region,
        seeded: &[bool],
        (base, mark_base): (u32, u32),
    ) -> Vec<WaveJobs> {
        let mut waves = Vec::with_capacity(self.nodes.len());
        for (nodes, wave_steps) in self.nodes.iter().zip(&self.steps) {
            let mut w = WaveJobs::default();
            for &u in nodes {
                let p = &params.nodes[u];
                let f = &layout.filters[u];
                w.identify.push(NodeJob {
                    filter: FilterArgs {
                        fixed: f.fixed,
                        label: f.label,
                        degrees: slice_at(at, p[0], 12),
                        neighbour_labels: slice_at(at, p[1], 12),
                        self_loops: slice_at(at, p[2], 4),
                    },
                    node: base + u as u32,
                    seeded: seeded[u] as u32,
                    marks: mark_base + self.marks[u].0,
                    mark_count: self.marks[u].1,
                });
                if !layout.incident[u].is_empty() {
                    w.refine.push(RefineJob {
                        node: base + u as u32,
                        _pad: 0,
                        incident: slice_at(at, p[3], 12),
                    });
                }
            }
            for &j in wave_steps {
                let s = &layout.neighbour_steps[j];
                w.mark.push(MarkStep {
                    from: base + s.from as u32,
                    dir: dir_code(s.dir),
                    label: s.label,
                    mark: mark_base + self.slot[j],
                    allowed: if seeded[s.to] {
                        base + s.to as u32
                    } else {
                        NONE
                    },
                    _pad: 0,
                });
            }
            waves.push(w);
        }
        waves
    }
}

/// The queries of a filtering batch still filtering, and the job tables of theirs on the device.
struct Live<'s> {
    /// Each query's jobs per wave.
    jobs: Vec<Vec<WaveJobs>>,
    live: Vec<bool>,
    stopped: &'s dyn Fn(usize) -> bool,
    tables: Tables,
}

impl<'s> Live<'s> {
    /// Every query live, the tables of all their jobs uploaded at `at`.
    fn new<D: Device>(
        dev: &D,
        buf: &D::Buffer,
        at: &Region,
        jobs: Vec<Vec<WaveJobs>>,
        stopped: &'s dyn Fn(usize) -> bool,
    ) -> Result<Self, DeviceError> {
        let mut live = Live {
            live: vec![true; jobs.len()],
            jobs,
            stopped,
            tables: Tables::new(&[], at),
        };
        live.upload(dev, buf, at)?;
        Ok(live)
    }

    /// Waves of the batch: those of its deepest query (the tables keep them all).
    fn waves(&self) -> usize {
        self.jobs.iter().map(Vec::len).max().unwrap_or(0)
    }

    fn any(&self) -> bool {
        self.live.contains(&true)
    }

    /// The live queries' jobs, wave by wave.
    fn merged(&self) -> Vec<WaveJobs> {
        let mut waves: Vec<WaveJobs> = (0..self.waves()).map(|_| WaveJobs::default()).collect();
        for (q, _) in self.jobs.iter().zip(&self.live).filter(|(_, &l)| l) {
            for (all, w) in waves.iter_mut().zip(q) {
                all.identify.extend_from_slice(&w.identify);
                all.mark.extend_from_slice(&w.mark);
                all.refine.extend_from_slice(&w.refine);
            }
        }
        waves
    }

    fn upload<D: Device>(
        &mut self,
        dev: &D,
        buf: &D::Buffer,
        at: &Region,
    ) -> Result<(), DeviceError> {
        self.tables = Tables::new(&self.merged(), at);
        dev.write_bytes(buf, at.offset, &self.tables.bytes)
    }

    /// Drops the queries that `stopped` now reports, uploading the tables again without their
    /// jobs (queued after the launches before, so at most once per launch). Returns whether any
    /// query still filters.
    fn check<D: Device>(
        &mut self,
        dev: &D,
        buf: &D::Buffer,
        at: &Region,
    ) -> Result<bool, DeviceError> {
        let stopped = self.stopped;
        let mut dropped = false;
        for (k, l) in self.live.iter_mut().enumerate() {
            if *l && stopped(k) {
                *l = false;
                dropped = true;
            }
        }
        if dropped && self.any() {
            self.upload(dev, buf, at)?;
        }
        Ok(self.any())
    }
}

/// Uploads the batch's params, seeded sets and directed edges; returns each query's jobs per wave.
/// Each query's clock for the filtering kernels (not started, not stopped, what remains of its
/// time limit) and the query of each bitset node.
fn upload_clocks<D: Device>(
    dev: &D,
    buf: &D::Buffer,
    r: &FilterRegions,
    queries: &[FilterQuery],
    remaining_ns: &dyn Fn(usize) -> u64,
) -> Result<(), DeviceError> {
    let clocks: Vec<u64> = (0..queries.len())
        .flat_map(|k| [0, 0, remaining_ns(k)])
        .collect();
    let mut query_of = vec![0u32; r.query_of.slice.len as usize];
    for (k, fq) in queries.iter().enumerate() {
        query_of[fq.base..fq.base + fq.layout.nodes].fill(k as u32);
    }
    dev.write_bytes(buf, r.clocks.offset, as_bytes(&clocks))?;
    dev.write_bytes(buf, r.query_of.offset, as_bytes(&query_of))
}

fn upload_queries<D: Device>(
    dev: &D,
    buf: &D::Buffer,
    r: &FilterRegions,
    queries: &[FilterQuery],
    params_bytes: usize,
    stride: usize,
) -> Result<Vec<Vec<WaveJobs>>, DeviceError> {
    let mut params = vec![0u8; params_bytes];
    for fq in queries {
        let (at, len) = (fq.params_at, fq.params.bytes.len());
        params[at..at + len].copy_from_slice(&fq.params.bytes);
        // A concept set's nodes seed its set: the bits a neighbour may mark, and the ones it is
        // identified from (in place).
        for (u, spec) in fq.layout.filters.iter().enumerate() {
            if !spec.domain.is_empty() {
                let mut words = vec![0u32; stride];
                crate::filtering::seed(&mut words, &spec.domain);
                let w = (fq.base + u) * stride;
                dev.write_bytes(buf, r.sets.part(4, w, w).offset, as_bytes(&words))?;
            }
        }
    }
    // Each query's job tables: host work per query, on every core.
    let all = queries
        .par_iter()
        .with_min_len(8)
        .map(|fq| {
            let (layout, at) = (fq.layout, fq.params_at);
            let region = r.params.part(1, at, at + fq.params.bytes.len());
            let seeded: Vec<bool> = layout
                .filters
                .iter()
                .map(|f| !f.domain.is_empty())
                .collect();
            let bases = (fq.base as u32, fq.mark_base as u32);
            fq.waves.jobs(layout, &fq.params, &region, &seeded, bases)
        })
        .collect();
    dev.write_bytes(buf, r.params.offset, &params)?;
    let directed: Vec<DirectedEdge> = queries
        .iter()
        .flat_map(|fq| fq.directed.iter().copied())
        .collect();
    dev.write_bytes(buf, r.edges.offset, as_bytes(&directed))?;
    Ok(all)
}

fn dir_code(d: Dir) -> u32 {
    match d {
        Dir::Out => 0,
        Dir::In => 1,
    }
}

/// Each query edge seen from its source (`2e`) and from its target (`2e + 1`), the query's nodes
/// numbered from `base`.
fn directed_edges(q: &QueryGraph, base: u32) -> Vec<DirectedEdge> {
    q.edges
        .iter()
        .flat_map(|e| {
            let label = match e.label {
                gpsense_planner::EdgeLabel::Fixed(r) => r as u32,
                gpsense_planner::EdgeLabel::Variable(_) => NONE,
            };
            [
                DirectedEdge {
                    from: base + e.source as u32,
                    dir: 0,
                    label,
                    _pad: 0,
                },
                DirectedEdge {
                    from: base + e.target as u32,
                    dir: 1,
                    label,
                    _pad: 0,
                },
            ]
        })
        .collect()
}

/// What the pipeline did, for `--explain` and the tests.
#[derive(Clone, Debug, Default)]
pub struct DeviceReport {
    pub counters: DeviceCounters,
    /// Join levels run (a level run in parts counts once per part).
    pub levels: u64,
    /// Partial matches the join's levels produced (counted leaves are not among them).
    pub partial_matches: u64,
    /// Device memory the query's buffers hold (the arena after the query).
    pub arena_bytes: u64,
    /// Chunks of a level's parents run depth first through the levels after it (a level too
    /// large for the memory budget).
    pub chunks: u64,
    /// Queries of the batch this query was answered in (`Engine::count_batch`; 0: alone): then
    /// `counters` are the whole batch's, shared by its queries.
    pub batch: u64,
    /// Host time between filtering and the join, a query answered alone: the join order, the
    /// estimates from samples of the data, the counted nodes and the join's layout.
    pub plan_time: std::time::Duration,
}

pub struct Pipeline<'a, D: Device> {
    pub dev: &'a D,
    pub graph: &'a DeviceGraph<D>,
    /// The host's copy of the graph, for the join's estimates (`fanout`).
    pub host: GraphView<'a>,
    pub arena: &'a mut Arena<D>,
    pub semantics: Semantics,
    pub shape: DataShape,
    pub memory_budget: u64,
    pub refine_rounds: u32,
    /// Which warp-join levels cut their pivot lists into segments.
    pub(crate) segments: &'a Segments,
}

/// The device-side candidate space of a query, after read 1.
pub(crate) struct Space {
    pub(crate) stride: usize,
    /// The query's first node among the batch's (0 alone).
    pub(crate) base: usize,
    /// Bytes the query's filtering would take alone (its memory budget's share).
    filter_bytes: u64,
    pub(crate) counts: Vec<usize>,
    bounds: Vec<u64>,
    /// The candidate bitsets as read back with the counts (`stride` words per node), for the
    /// host's estimates (`fanout`); empty unless asked for.
    pub(crate) sets: ReadSets,
    filter: FilterRegions,
    /// The filtering kernels stopped on the query's time limit: its sets are unfinished.
    pub(crate) timed_out: bool,
}

/// Candidate bitsets read back with the counts: the one read of a batch, shared by its queries,
/// each seeing its own range (copying each query's out of it took longer than the read on HPRD).
#[derive(Clone, Default)]
pub(crate) struct ReadSets {
    words: Arc<Vec<u32>>,
    range: std::ops::Range<usize>,
}

impl ReadSets {
    fn words(&self) -> &[u32] {
        self.words.get(self.range.clone()).unwrap_or_default()
    }
}

impl Space {
    /// This query's candidate sets as read back with its counts; `None` when they were not.
    fn samples(&self) -> Option<crate::samples::Sets<'_>> {
        let words = self.sets.words();
        (!words.is_empty() && !self.counts.contains(&0)).then_some(crate::samples::Sets {
            words,
            stride: self.stride,
        })
    }

    /// `samples::fanouts` for the join order `plan`, over this query's candidate sets.
    pub(crate) fn fanouts(
        &self,
        q: &QueryGraph,
        plan: &Plan,
        wanted: &[bool],
        host: &GraphView,
        semantics: Semantics,
    ) -> Vec<Option<f64>> {
        let Some(sets) = self.samples() else {
            return vec![None; wanted.len()];
        };
        let injective = semantics == Semantics::Iso;
        crate::samples::fanouts(q, &plan.order, wanted, host, &sets, injective)
    }

    /// `samples::better_order` than `default`, over this query's candidate sets.
    pub(crate) fn better_order(
        &self,
        q: &QueryGraph,
        default: &Plan,
        host: &GraphView,
        semantics: Semantics,
    ) -> Option<Plan> {
        let sets = self.samples()?;
        crate::samples::better_order(q, default, host, &sets, semantics == Semantics::Iso)
    }

    /// The candidate set of query node `u`.
    fn set(&self, u: usize) -> Region {
        let w = (self.base + u) * self.stride;
        self.filter.sets.part(4, w, w + self.stride)
    }
}

/// A query of a filtering batch, prepared on the host: its nodes, mark slots and directed edges
/// numbered after those of the queries before it.
pub(crate) struct FilterQuery<'l> {
    layout: &'l Layout,
    directed: Vec<DirectedEdge>,
    params: Params,
    waves: Waves,
    base: usize,
    mark_base: usize,
    edge_base: usize,
    /// Where its params start in the batch's params.
    params_at: usize,
    /// Bytes its filtering takes alone: what its memory budget is checked against.
    pub(crate) alone: u64,
}

/// What a filtering batch holds: nodes, mark slots, directed edges, params and job-table bytes.
#[derive(Clone, Copy, Default)]
pub(crate) struct FilterSizes {
    nodes: usize,
    marks: usize,
    edges: usize,
    params: usize,
    jobs: usize,
    queries: usize,
}

impl std::ops::AddAssign for FilterSizes {
    fn add_assign(&mut self, o: FilterSizes) {
        self.queries += o.queries;
        self.nodes += o.nodes;
        self.marks += o.marks;
        self.edges += o.edges;
        self.params += o.params;
        self.jobs += o.jobs;
    }
}

impl FilterSizes {
    fn carve(&self, c: &mut Carver, stride: usize) -> FilterRegions {
        let words = self.nodes * stride;
        // The summary and the clocks just before the sets: read 1 can take them all at once.
        let summary = c.take::<u64>(self.nodes + self.edges);
        let clocks = c.take::<u64>(3 * self.queries);
        FilterRegions {
            clocks,
            sets: c.take::<u32>(words),
            marks: c.take::<u32>(self.marks * stride),
            offsets: c.take::<u64>(words + 1),
            sums: c.take::<u64>(scan_sums(words + 1)),
            summary,
            params: c.take::<u8>(self.params),
            jobs: c.take::<u8>(self.jobs),
            edges: c.take::<DirectedEdge>(self.edges),
            query_of: c.take::<u32>(self.nodes),
        }
    }

    fn bytes(&self, stride: usize) -> usize {
        let mut c = Carver::new(0);
        self.carve(&mut c, stride);
        c.at
    }
}

/// A query's filtering before its place in a batch is known: its waves and what it holds.
pub(crate) struct Prepared {
    waves: Waves,
    own: FilterSizes,
    /// Bytes its filtering takes alone: what its memory budget is checked against.
    pub(crate) alone: u64,
}

impl Prepared {
    /// The part of a query's preparation that does not depend on the queries before it, so a
    /// batch prepares its queries in parallel and places them after.
    pub(crate) fn new(q: &QueryGraph, layout: &Layout, stride: usize) -> Self {
        let waves = Waves::new(layout);
        let own = FilterSizes {
            nodes: layout.nodes,
            marks: layout.neighbour_steps.len(),
            edges: 2 * q.edges.len(),
            params: Params::len(layout),
            jobs: waves.table_bytes(),
            queries: 1,
        };
        Prepared {
            alone: own.bytes(stride) as u64,
            waves,
            own,
        }
    }
}

impl<'l> FilterQuery<'l> {
    /// Query `q` (its filtering `layout`, `prepared`) placed after the queries `before` counts;
    /// `before` then counts it too.
    pub(crate) fn place(
        q: &QueryGraph,
        layout: &'l Layout,
        prepared: Prepared,
        before: &mut FilterSizes,
    ) -> Self {
        let at = *before;
        *before += prepared.own;
        FilterQuery::at(q, layout, prepared, at)
    }

    /// Query `q` with its nodes, marks, edges and params numbered from `at`'s.
    pub(crate) fn at(
        q: &QueryGraph,
        layout: &'l Layout,
        prepared: Prepared,
        at: FilterSizes,
    ) -> Self {
        let params = Params::new(layout, at.nodes as u32);
        debug_assert_eq!(params.bytes.len().next_multiple_of(16), prepared.own.params);
        FilterQuery {
            layout,
            base: at.nodes,
            mark_base: at.marks,
            edge_base: at.edges,
            params_at: at.params,
            alone: prepared.alone,
            directed: directed_edges(q, at.nodes as u32),
            params,
            waves: prepared.waves,
        }
    }
}

impl<D: Device> Pipeline<'_, D> {
    fn g(&self) -> GraphArgs {
        self.graph.args(self.dev)
    }

    /// Filters, joins, and hands rows or counts to `out`. Returns the join plan and the filter
    /// report.
    pub fn run(
        &mut self,
        q: &QueryGraph,
        plan: &Plan,
        layout: &Layout,
        out: &Output,
    ) -> Result<(Plan, FilterReport, DeviceReport), MatchError> {
        let before = self.dev.counters();
        let start = Instant::now();
        self.arena.fit(self.dev, self.memory_budget);
        let space = self.filter(q, layout, out)?;
        // A query its limit stopped during filtering has no candidate sets to report or join.
        let stopped = out.stopped();
        // Filtering and refinement are one queue of launches: their time is known only together.
        let report = FilterReport {
            after_refine: if stopped {
                Vec::new()
            } else {
                space.counts.clone()
            },
            filter_time: start.elapsed(),
            ..Default::default()
        };
        let planning = Instant::now();
        let mut join_plan = crate::order::join_order(q, plan, &space.counts);
        // A count enumerates only the nodes that are not counted leaves, which come last.
        let groups = if out.count_only() {
            if let Some(better) = space.better_order(q, &join_plan, &self.host, self.semantics) {
                join_plan = better;
            }
            let (plan, host) = (&join_plan, self.host);
            let fanout = |wanted: &[bool]| space.fanouts(q, plan, wanted, &host, self.semantics);
            gpu_leaves::choose(q, plan, layout, &space.counts, self.semantics, &fanout)
        } else {
            Vec::new()
        };
        if !groups.is_empty() {
            join_plan = gpu_leaves::reorder(q, &join_plan, &groups);
        }
        let mut device = DeviceReport::default();
        if !stopped && space.counts.iter().all(|&c| c > 0) {
            let join = Layout::new(q, &join_plan, self.semantics, self.shape)?;
            let terms = gpu_leaves::terms(&groups)?;
            device.plan_time = planning.elapsed();
            (device.levels, device.partial_matches, device.chunks) =
                self.join(&join, &space, out, &groups, &terms)?;
        }
        device.counters = self.dev.counters() - before;
        device.arena_bytes = self.arena.bytes();
        Ok((join_plan, report, device))
    }

    /// Steps 1-3 for one query: its budget checked, then [`Pipeline::filter_batch`].
    fn filter(
        &mut self,
        q: &QueryGraph,
        layout: &Layout,
        out: &Output,
    ) -> Result<Space, MatchError> {
        let stride = bits::words_for(self.graph.nodes);
        let mut sizes = FilterSizes::default();
        let fq = FilterQuery::place(q, layout, Prepared::new(q, layout, stride), &mut sizes);
        self.budget_check(fq.alone, true)?;
        let with_sets = out.count_only() && gpu_leaves::may_ask(q);
        let mut spaces = self.filter_batch(
            &[fq],
            sizes,
            &|_| out.stopped(),
            &|_| budget_ns(out),
            with_sets,
        )?;
        let space = spaces.remove(0);
        if space.timed_out {
            out.time_out();
        }
        Ok(space)
    }

    /// Steps 1-3 for a batch of queries (`sizes`: theirs together): filtering and refinement on
    /// bitsets, counts, read 1, each query's sets, marks and jobs beside the others' so that one
    /// launch per wave serves them all. Before each filtering launch (identify, mark, refine),
    /// query `k` leaves once `stopped(k)` says so: its jobs leave the later launches, the others'
    /// work is unchanged, and its sets are cleared at the end (an unfinished forward pass leaves
    /// no candidate sets), so its counts are 0 and its caller answers it as timed out. Once every
    /// query has left, nothing more is launched or read.
    pub(crate) fn filter_batch(
        &mut self,
        queries: &[FilterQuery],
        sizes: FilterSizes,
        stopped: &dyn Fn(usize) -> bool,
        remaining_ns: &dyn Fn(usize) -> u64,
        with_sets: bool,
    ) -> Result<Vec<Space>, MatchError> {
        let n = sizes.nodes;
        let stride = bits::words_for(self.graph.nodes);
        let bytes = sizes.bytes(stride);
        let (dev, g, rounds) = (self.dev, self.g(), self.refine_rounds);
        let buf = self.arena.filter.ensure(dev, bytes)?;
        let r = sizes.carve(&mut Carver::new(dev.address(buf)), stride);
        dev.zero_bytes(buf, r.marks.offset, r.marks.bytes(4))?;
        let jobs = upload_queries(dev, buf, &r, queries, sizes.params, stride)?;
        upload_clocks(dev, buf, &r, queries, remaining_ns)?;
        let clock = FilterClock {
            query_of: r.query_of.slice,
            clocks: r.clocks.slice,
        };
        let mut live = Live::new(dev, buf, &r.jobs, jobs, stopped)?;
        let (sets, marks) = (r.sets.slice, r.marks.slice);
        let stride64 = stride as u64;
        let waves = live.waves();
        // Forward: per wave, identify its nodes within their marks, then mark from them.
        for w in 0..waves {
            if !live.check(dev, buf, &r.jobs)? {
                break;
            }
            let nodes = live.tables.identify[w];
            if nodes.len > 0 {
                dev.launch(
                    &Launch::IdentifyNodes(IdentifyNodesArgs {
                        graph: g,
                        jobs: nodes,
                        sets,
                        marks,
                        stride: stride64,
                        clock,
                    }),
                    nodes.len * stride64,
                )?;
            }
            if !live.check(dev, buf, &r.jobs)? {
                break;
            }
            let steps = live.tables.mark[w];
            if steps.len > 0 {
                dev.launch(
                    &Launch::MarkSteps(MarkStepsArgs {
                        graph: g,
                        steps,
                        sets,
                        marks,
                        stride: stride64,
                        clock,
                    }),
                    steps.len * stride64,
                )?;
            }
        }
        // Refinement in reversed plan order, a wave at a time: the sets a node reads are exactly
        // the ones a node-by-node pass would see.
        'rounds: for _ in 0..rounds {
            for w in (0..waves).rev() {
                if !live.check(dev, buf, &r.jobs)? {
                    break 'rounds;
                }
                let jobs = live.tables.refine[w];
                if jobs.len > 0 {
                    dev.launch(
                        &Launch::RefineNodes(RefineNodesArgs {
                            graph: g,
                            jobs,
                            sets,
                            stride: stride64,
                            clock,
                        }),
                        jobs.len * stride64,
                    )?;
                }
            }
        }
        let (summary, (sets, sets_at), flags) = if live.any() {
            for (fq, _) in queries.iter().zip(&live.live).filter(|(_, &l)| !l) {
                let w = fq.base * stride;
                let set = r.sets.part(4, w, w + fq.layout.nodes * stride);
                dev.zero_bytes(buf, set.offset, set.bytes(4))?;
            }
            self.count_sets(&r, sizes, stride, with_sets)?
        } else {
            // Nothing left to count: no launch, no read.
            (vec![0; n + sizes.edges], Default::default(), Vec::new())
        };
        let sets = Arc::new(sets);
        Ok(queries
            .iter()
            .enumerate()
            .map(|(k, fq)| {
                let (b, e) = (fq.base, fq.edge_base);
                Space {
                    timed_out: flags.get(3 * k + 1).is_some_and(|&f| f != 0),
                    stride,
                    base: b,
                    filter_bytes: fq.alone,
                    counts: summary[b..b + fq.layout.nodes]
                        .iter()
                        .map(|&c| c as usize)
                        .collect(),
                    bounds: summary[n + e..n + e + fq.directed.len()].to_vec(),
                    sets: ReadSets {
                        words: sets.clone(),
                        range: sets_at + b * stride..sets_at + (b + fq.layout.nodes) * stride,
                    },
                    filter: r.clone(),
                }
            })
            .collect())
    }

    /// Ranks: per-word counts, scanned; the node totals and the adjacency totals beside them, read
    /// back with the filtering clocks (read 1): (totals, sets when asked for, clocks).
    fn count_sets(
        &self,
        r: &FilterRegions,
        sizes: FilterSizes,
        stride: usize,
        with_sets: bool,
    ) -> Result<ReadOne, MatchError> {
        let (dev, g, n) = (self.dev, self.g(), sizes.nodes);
        let buf = self.arena.filter.get();
        dev.zero_bytes(buf, r.offsets.offset, r.offsets.bytes(8))?;
        dev.launch(
            &Launch::CountWords(CountWordsArgs {
                words: r.sets.slice,
                counts: r.offsets.slice,
            }),
            (n * stride) as u64,
        )?;
        scan(dev, r.offsets, r.sums)?;
        dev.zero_bytes(buf, r.summary.offset, r.summary.bytes(8))?;
        dev.launch(
            &Launch::NodeTotals(NodeTotalsArgs {
                offsets: r.offsets.slice,
                stride: stride as u64,
                out: r.summary.part(8, 0, n).slice,
            }),
            n as u64,
        )?;
        dev.launch(
            &Launch::AdjacencyBounds(AdjacencyBoundsArgs {
                graph: g,
                sets: r.sets.slice,
                stride: stride as u64,
                edges: r.edges.slice,
                bounds: r.summary.part(8, n, n + sizes.edges).slice,
            }),
            (sizes.edges * stride) as u64,
        )?;
        // The clocks start at the next 16-byte boundary after the summary's `m` words.
        let (m, q) = (n + sizes.edges, 3 * sizes.queries);
        let at = (r.clocks.offset - r.summary.offset) / 8;
        let split = |mut summary: Vec<u64>| {
            let clocks = summary.split_off(at);
            summary.truncate(m);
            (summary, clocks)
        };
        if !with_sets {
            let (summary, clocks) = split(read(dev, buf, r.summary.offset, at + q)?);
            return Ok((summary, Default::default(), clocks));
        }
        // One read of the summary, the clocks and the sets behind them (the carve keeps them
        // adjacent).
        let sets_at = (r.sets.offset - r.summary.offset) / 4;
        let words: Vec<u32> = read(dev, buf, r.summary.offset, sets_at + n * stride)?;
        let (summary, clocks) = split(
            words[..2 * (at + q)]
                .chunks_exact(2)
                .map(|w| u64::from(w[0]) | u64::from(w[1]) << 32)
                .collect(),
        );
        Ok((summary, (words, sets_at), clocks))
    }

    /// Refuses `bytes` past the budget (`filtering`: filtering's bytes, before the space's are
    /// known).
    fn budget_check(&self, bytes: u64, filtering: bool) -> Result<(), MatchError> {
        if bytes > self.memory_budget {
            return Err(MatchError::DeviceBudget {
                bytes,
                budget: self.memory_budget,
                filtering,
            });
        }
        Ok(())
    }

    /// Steps 4-5: candidate arrays, candidate-edge lists, the levels. Returns the levels run and
    /// the partial matches they produced.
    fn join(
        &mut self,
        layout: &Layout,
        s: &Space,
        out: &Output,
        groups: &[LeafGroup],
        terms: &[LeafTerm],
    ) -> Result<(u64, u64, u64), MatchError> {
        let jq = JoinQuery {
            layout,
            space: s,
            groups,
            terms,
        };
        // Alone, its levels take pages of the budget (a batch's rooms are rows of its buffers).
        let counts_last = out.count_only() && groups.is_empty();
        self.budget_check(jq.least_bytes(self.segments, counts_last), false)?;
        let bytes = s.filter_bytes + jq.sizes().alone();
        let mut qs = self.space_batch(&[jq], &s.counts)?;
        let qs = qs.remove(0);
        let mut run = Levels::new(self, layout, &qs, out, bytes);
        run.start(qs.root)?;
        Ok((run.runs, run.partials, run.chunks))
    }

    /// Step 4 for a batch of queries (`all_counts`: the candidates of every node of the filtering
    /// batch, in its order): one launch writes every candidate array, one counts and one writes
    /// the candidate-edge lists of every query's edges (a device scan between), each query's
    /// tables beside the others'. Nothing is read back.
    pub(crate) fn space_batch(
        &mut self,
        queries: &[JoinQuery],
        all_counts: &[usize],
    ) -> Result<Vec<QuerySpace>, MatchError> {
        let Some(first) = queries.first() else {
            return Ok(Vec::new());
        };
        let f = &first.space.filter;
        let stride = first.space.stride;
        let n_all = all_counts.len();
        let mut cand_start = vec![0usize; n_all + 1];
        for u in 0..n_all {
            cand_start[u + 1] = cand_start[u] + all_counts[u];
        }
        let own: Vec<SpaceSizes> = queries.iter().map(JoinQuery::sizes).collect();
        let mut total = SpaceSizes {
            cand: cand_start[n_all],
            ..SpaceSizes::default()
        };
        let mut at = Vec::with_capacity(queries.len());
        for o in &own {
            at.push(total);
            total.add(o);
        }
        // The candidate arrays are the filtering batch's, written once: a query's own count
        // of them is for its budget only (adding it held them twice).
        total.cand = cand_start[n_all];
        let (dev, g) = (self.dev, self.g());
        let buf = self.arena.space.ensure(dev, total.bytes())?;
        let r = total.carve(&mut Carver::new(dev.address(buf)));
        // Candidate arrays: every node's set bits at their scanned offsets.
        dev.launch(
            &Launch::WriteWords(WriteWordsArgs {
                words: f.sets.slice,
                offsets: f.offsets.slice,
                out: r.cand.slice,
                stride: stride as u64,
            }),
            (n_all * stride) as u64,
        )?;
        let cand = |jq: &JoinQuery, u: usize| {
            let b = jq.space.base + u;
            r.cand.part(4, cand_start[b], cand_start[b + 1])
        };
        // Candidate-edge lists of every edge: count (one launch), scan, write (one launch).
        dev.zero_bytes(buf, r.ec_offsets.offset, r.ec_offsets.bytes(8))?;
        let mut items = 0u64;
        let mut table: Vec<EdgeList> = Vec::new();
        let slot_bases: Vec<Vec<usize>> = queries
            .iter()
            .zip(&at)
            .map(|(jq, a)| {
                let lists = &jq.layout.neighbour_steps;
                let mut slot_base = vec![a.slots; lists.len() + 1];
                for (j, ns) in lists.iter().enumerate() {
                    slot_base[j + 1] = slot_base[j] + jq.space.counts[ns.from] + 1;
                    table.push(EdgeList {
                        from: cand(jq, ns.from).slice,
                        to_set: jq.space.set(ns.to).slice,
                        offsets: r.ec_offsets.part(8, slot_base[j], slot_base[j + 1]).slice,
                        first: items,
                        dir: dir_code(ns.dir),
                        label: ns.label,
                    });
                    items += jq.space.counts[ns.from] as u64;
                }
                slot_base
            })
            .collect();
        dev.write_bytes(buf, r.edge_lists.offset, as_bytes(&table))?;
        let edge_args = EdgeListsArgs {
            graph: g,
            lists: r.edge_lists.slice,
            out_targets: r.targets.slice,
            out_labels: r.labels.slice,
        };
        if items > 0 {
            dev.launch(&Launch::CountEdgeLists(edge_args), items)?;
            scan(dev, r.ec_offsets, r.ec_sums)?;
            dev.launch(&Launch::WriteEdgeLists(edge_args), items)?;
        }
        let mut tables = SpaceTables::default();
        let mut spaces = Vec::with_capacity(queries.len());
        for ((jq, a), slot_base) in queries.iter().zip(&at).zip(&slot_bases) {
            let lists = &jq.layout.neighbour_steps;
            // Per check, its edge's lists.
            let list_of_edge = |edge: usize| {
                lists
                    .iter()
                    .position(|ns| ns.edge == edge)
                    .map(|j| ListsArgs {
                        from: cand(jq, lists[j].from).slice,
                        offsets: r.ec_offsets.part(8, slot_base[j], slot_base[j + 1]).slice,
                        targets: r.targets.slice,
                        labels: r.labels.slice,
                    })
            };
            spaces.push(jq.tables(
                &r,
                a,
                &mut tables,
                &list_of_edge,
                &|u| cand(jq, u),
                self.segments,
            )?);
        }
        dev.write_bytes(buf, r.checks.offset, as_bytes(&tables.checks))?;
        dev.write_bytes(buf, r.lists.offset, as_bytes(&tables.lists))?;
        dev.write_bytes(buf, r.root.offset, as_bytes(&vec![NONE; total.width]))?;
        dev.write_bytes(buf, r.leaf_groups.offset, as_bytes(&tables.leaves))?;
        dev.write_bytes(buf, r.leaf_terms.offset, as_bytes(&tables.terms))?;
        dev.write_bytes(buf, r.cuts.offset, as_bytes(&tables.cuts))?;
        Ok(spaces)
    }
}

/// A query's inputs to the space phase: its join layout, filtered space and counted leaves (with
/// their linked components' terms, `gpu_leaves::terms`).
pub(crate) struct JoinQuery<'j> {
    pub(crate) layout: &'j Layout,
    pub(crate) space: &'j Space,
    pub(crate) groups: &'j [LeafGroup],
    pub(crate) terms: &'j [LeafTerm],
}

/// Where a query's join counters are among its `u64` words on the device (`claimed`): per
/// enumerated level the warp join's four (rows claimed, start time and timed-out flag when the
/// level has no shared clock, queue of work-items: `ExtendWarpArgs::claimed`), then the query's
/// shared clock (start, timed-out flag) and the leaves' total (two words and an overflow flag).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CounterWords {
    pub levels: usize,
}

impl CounterWords {
    const LEVEL: usize = 4;

    pub fn len(self) -> usize {
        Self::LEVEL * self.levels + 5
    }

    /// Level `d`'s words.
    pub fn level(self, d: usize) -> (usize, usize) {
        (Self::LEVEL * d, Self::LEVEL * (d + 1))
    }

    /// The word holding level `d`'s rows claimed.
    pub fn rows(self, d: usize) -> usize {
        Self::LEVEL * d
    }

    /// The query's shared clock.
    pub fn clock(self) -> (usize, usize) {
        (Self::LEVEL * self.levels, Self::LEVEL * self.levels + 2)
    }

    /// The shared clock's timed-out flag.
    pub fn timed_out(self) -> usize {
        Self::LEVEL * self.levels + 1
    }

    /// The leaves' total.
    pub fn leaves(self) -> (usize, usize) {
        (Self::LEVEL * self.levels + 2, self.len())
    }
}

/// What the space phase holds (of one query, or of a batch): elements per region.
#[derive(Clone, Copy, Default)]
pub(crate) struct SpaceSizes {
    cand: usize,
    slots: usize,
    room: usize,
    checks: usize,
    lists: usize,
    width: usize,
    groups: usize,
    terms: usize,
    claimed: usize,
    /// Two `u64`s a query: the segments of its root level's list, `[0, k]` ([`RootCut`]).
    cuts: usize,
}

impl SpaceSizes {
    fn carve(&self, c: &mut Carver) -> SpaceRegions {
        SpaceRegions {
            cand: c.take::<u32>(self.cand),
            ec_offsets: c.take::<u64>(self.slots),
            ec_sums: c.take::<u64>(scan_sums(self.slots)),
            targets: c.take::<u32>(self.room),
            labels: c.take::<u16>(self.room),
            checks: c.take::<gpsense_kernels::join::Check>(self.checks),
            lists: c.take::<ListsArgs>(self.checks),
            edge_lists: c.take::<EdgeList>(self.lists),
            root: c.take::<u32>(self.width),
            leaf_groups: c.take::<LeafGroupArgs>(self.groups),
            leaf_terms: c.take::<LeafTerm>(self.terms),
            claimed: c.take::<u64>(self.claimed),
            cuts: c.take::<u64>(self.cuts),
        }
    }

    fn bytes(&self) -> usize {
        let mut c = Carver::new(0);
        self.carve(&mut c);
        c.at
    }

    /// Bytes the space phase takes for this query alone (its memory budget's share).
    pub(crate) fn alone(&self) -> u64 {
        self.bytes() as u64
    }

    fn add(&mut self, o: &SpaceSizes) {
        self.cand += o.cand;
        self.slots += o.slots;
        self.room += o.room;
        self.checks += o.checks;
        self.lists += o.lists;
        self.width += o.width;
        self.groups += o.groups;
        self.terms += o.terms;
        self.claimed += o.claimed;
        self.cuts += o.cuts;
    }
}

/// The tables of the queries of a space batch, uploaded together.
#[derive(Default)]
struct SpaceTables {
    checks: Vec<gpsense_kernels::join::Check>,
    lists: Vec<ListsArgs>,
    leaves: Vec<LeafGroupArgs>,
    terms: Vec<LeafTerm>,
    cuts: Vec<u64>,
}

/// The root level's list cut into segments: their offsets on the device (`[0, items]`, as
/// `pivot_segments` and a scan would give them) and their number.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RootCut {
    table: Region,
    items: u64,
    /// Candidates per segment ([`Segments::root`]).
    segment: u64,
    /// The list cut: the whole of the root level's, or a part of it (its segments numbered from
    /// its first, `table` then holding `[0, items]` of the part).
    all: DevSlice,
}

impl RootCut {
    /// `args` (the root level's launch) over the cut's segments.
    fn apply(self, args: &mut ExtendWarpArgs, warps: u64) {
        args.segments = self.table.slice;
        args.segment = self.segment;
        args.warps = self.items.clamp(1, warps);
        args.all = self.all;
    }

    /// Segments `start..end` of this cut, their offsets written over its table in `space` (read
    /// by the root level's launches only, after the device finished the last: each run ends
    /// with a read).
    fn part<D: Device>(
        self,
        dev: &D,
        space: &D::Buffer,
        (start, end): (u64, u64),
    ) -> Result<RootCut, DeviceError> {
        dev.write_bytes(space, self.table.offset, as_bytes(&[0, end - start]))?;
        let last = (end * self.segment).min(self.all.len);
        Ok(RootCut {
            items: end - start,
            all: rows_part(self.all, 1, start * self.segment, last),
            ..self
        })
    }

    /// Why a batch leaves a query whose first part of this cut did not complete its answer.
    pub(crate) fn past_first_part(&self) -> MatchError {
        MatchError::LimitPastFirstPart {
            first: (FIRST_ROOT_PART * self.segment).min(self.all.len),
            candidates: self.all.len,
        }
    }
}

/// Segments of the root level's first part under a LIMIT (128 candidates); each next part is
/// `ROOT_PARTS_GROW` times larger.
const FIRST_ROOT_PART: u64 = 1;
const ROOT_PARTS_GROW: u64 = 4;

/// A query's part of the space phase: its levels, counters and counted leaves on the device.
pub(crate) struct QuerySpace {
    levels: Vec<LevelPlan>,
    claimed: Region,
    leaves: Option<Leaves>,
    root: DevSlice,
    /// The root level's list cut, when it is longer than a segment.
    root_cut: Option<RootCut>,
}

impl QuerySpace {
    fn counter_words(&self) -> CounterWords {
        CounterWords {
            levels: self.levels.len(),
        }
    }

    /// Under a LIMIT (`out`'s), the root level's cut when it has more than its first part: a
    /// batch runs that part only, and the parts after it go on alone (`Levels::rest_of_root`).
    fn parted_root(&self, out: &Output) -> Option<RootCut> {
        self.root_cut
            .filter(|c| out.limited() && c.items > FIRST_ROOT_PART)
    }
}

impl JoinQuery<'_> {
    /// Entries per segment of level `d`'s pivot lists (0: a warp per partial match).
    fn level_segment(&self, d: usize, segments: &Segments) -> u64 {
        let js = &self.layout.steps[d];
        // The root level's one list is cut by the host (`RootCut`).
        if d == 0 {
            return 0;
        }
        let scan = if js.checks.iter().all(|c| c.label != NONE) {
            Scan::Shortest(&js.checks)
        } else {
            match js.checks.get(bindings_pivot(js) as usize) {
                Some(&c) => Scan::Check(c),
                None => Scan::Shortest(&[]),
            }
        };
        segments.level(scan, self.space.counts[js.node] as u64)
    }

    /// Bytes the query needs at least alone (`Levels::least_bytes`, known before its space
    /// is built): its filtering and candidate space, the two pages they may round up by, and a
    /// page of rows for each level that keeps rows (`counts_last`: not the last), with the
    /// segment counts of a page's rows for each parent of a segmented level.
    pub(crate) fn least_bytes(&self, segments: &Segments, counts_last: bool) -> u64 {
        let levels = self.enumerated();
        let kept = levels - usize::from(counts_last && levels > 0);
        least_bytes(
            self.space.filter_bytes + self.sizes().alone(),
            self.layout.width,
            kept,
            |d| d + 1 < levels && self.level_segment(d + 1, segments) > 0,
        )
    }

    /// Levels the join enumerates (the counted leaves are not among them).
    fn enumerated(&self) -> usize {
        let counted: usize = self.groups.iter().map(|g| g.nodes.len()).sum();
        self.layout.steps.len() - counted
    }

    fn counter_words(&self) -> CounterWords {
        CounterWords {
            levels: self.enumerated(),
        }
    }

    /// The root level's cut (its offsets appended to `t`, for `at` in the regions): only a warp
    /// join's level, whose list is its node's candidates (no backward edge to pivot on).
    fn root_cut(
        &self,
        levels: &[LevelPlan],
        (at, segment): (Region, u64),
        t: &mut SpaceTables,
    ) -> Option<RootCut> {
        let items = levels
            .first()
            .filter(|lp| lp.warp)
            .map_or(0, |lp| lp.all.len.div_ceil(segment));
        t.cuts.extend([0, items]);
        (items > 1).then(|| RootCut {
            table: at,
            items,
            segment,
            all: levels[0].all,
        })
    }

    /// Entries of the counted groups' table: one per list, a list per edge of a group's node.
    fn group_entries(&self) -> usize {
        self.groups.iter().map(|g| g.neighbours.len()).sum()
    }

    pub(crate) fn sizes(&self) -> SpaceSizes {
        let (layout, s) = (self.layout, self.space);
        let lists = &layout.neighbour_steps;
        let mut sizes = SpaceSizes {
            cand: s.counts.iter().sum(),
            lists: lists.len(),
            checks: layout.steps.iter().map(|js| js.checks.len()).sum(),
            width: layout.width,
            groups: self.group_entries(),
            terms: self.terms.len(),
            claimed: self.counter_words().len(),
            cuts: 2,
            ..SpaceSizes::default()
        };
        for ns in lists {
            sizes.slots += s.counts[ns.from] + 1;
            sizes.room += s.bounds[2 * ns.edge + (ns.dir == Dir::In) as usize] as usize;
        }
        sizes
    }

    /// The query's checks, lists and leaf groups appended to `t` (at `at` in the regions `r`),
    /// and its level plans.
    #[allow(clippy::too_many_arguments)]
    fn tables(
        &self,
        r: &SpaceRegions,
        at: &SpaceSizes,
        t: &mut SpaceTables,
        list_of_edge: &impl Fn(usize) -> Option<ListsArgs>,
        cand: &impl Fn(usize) -> Region,
        segments: &Segments,
    ) -> Result<QuerySpace, MatchError> {
        let layout = self.layout;
        let lists = &layout.neighbour_steps;
        let enumerated = self.enumerated();
        for js in &layout.steps {
            for (k, c) in js.checks.iter().enumerate() {
                t.checks.push(*c);
                let l = if c.slot == NONE {
                    None
                } else {
                    list_of_edge(js.edge_of_check[k])
                };
                t.lists.push(l.unwrap_or_default());
            }
        }
        for (i, g) in self.groups.iter().enumerate() {
            // Its neighbours come first in the join order: their lists lead to it. The first
            // entry carries the group's size and link, the others (0) add their lists to it.
            let mut leaves = g.nodes.len() as u32;
            let mut linked = (i > 0 && self.groups[i - 1].component == g.component) as u32;
            let mine = lists.iter().filter(|ns| ns.to == g.nodes[0]);
            // The kernel reads at most MAX_GROUP_LISTS lists a group (it would drop the rest):
            // `gpu_leaves::choose` makes no larger group, and none may reach it.
            if mine.clone().count() > gpsense_kernels::join::MAX_GROUP_LISTS {
                return Err(MatchError::Plan(format!(
                    "a counted group with more than {} neighbour lists",
                    gpsense_kernels::join::MAX_GROUP_LISTS
                )));
            }
            for ns in mine {
                let list = list_of_edge(ns.edge).ok_or_else(|| {
                    MatchError::Plan("a counted node before its neighbour".into())
                })?;
                t.leaves.push(LeafGroupArgs {
                    list,
                    slot: layout.slot_of[ns.from],
                    leaves,
                    linked,
                    reserved: 0,
                });
                (leaves, linked) = (0, 0);
            }
        }
        t.terms.extend_from_slice(self.terms);
        let set = |u: usize| self.space.set(u);
        let mut c = at.checks;
        let levels: Vec<LevelPlan> = layout.steps[..enumerated]
            .iter()
            .enumerate()
            .map(|(d, js)| {
                let k = js.checks.len();
                let warp = js.checks.iter().all(|c| c.label != NONE);
                let pivot = bindings_pivot(js);
                let segment = self.level_segment(d, segments);
                let plan = LevelPlan {
                    checks: r.checks.part(16, c, c + k).slice,
                    lists: r.lists.part(64, c, c + k).slice,
                    warp,
                    pivot,
                    candidates: set(js.node).slice,
                    all: cand(js.node).slice,
                    slot: js.slot,
                    segment,
                };
                c += k;
                plan
            })
            .collect();
        let words = self.counter_words();
        let claimed = r.claimed.part(8, at.claimed, at.claimed + words.len());
        let cut_at = r.cuts.part(8, at.cuts, at.cuts + 2);
        let root_cut = self.root_cut(&levels, (cut_at, segments.root), t);
        Ok(QuerySpace {
            levels,
            claimed,
            root_cut,
            leaves: (!self.groups.is_empty()).then(|| Leaves {
                groups: r
                    .leaf_groups
                    .part(
                        size_of::<LeafGroupArgs>(),
                        at.groups,
                        at.groups + self.group_entries(),
                    )
                    .slice,
                terms: r
                    .leaf_terms
                    .part(size_of::<LeafTerm>(), at.terms, at.terms + self.terms.len())
                    .slice,
                total: claimed.words(words.leaves()),
            }),
            root: r.root.part(4, at.width, at.width + layout.width).slice,
        })
    }
}

/// The space-phase regions.
struct SpaceRegions {
    cand: Region,
    ec_offsets: Region,
    ec_sums: Region,
    targets: Region,
    labels: Region,
    checks: Region,
    lists: Region,
    edge_lists: Region,
    leaf_groups: Region,
    leaf_terms: Region,
    root: Region,
    claimed: Region,
    cuts: Region,
}

/// What one level launches.
struct LevelPlan {
    slot: u32,
    checks: DevSlice,
    lists: DevSlice,
    /// Every check a fixed relation: the one-pass warp join (`extend_warp`); else the warp join
    /// of bindings (`extend_warp_bindings`), which scans the list of check `pivot` and tests its
    /// entries against `candidates`.
    warp: bool,
    pivot: u32,
    candidates: DevSlice,
    all: DevSlice,
    /// Entries per segment of its pivot lists (0: a warp per partial match; see `segments`).
    segment: u64,
}

impl LevelPlan {
    /// This level's kernel over `args`.
    fn launch(&self, args: ExtendWarpArgs) -> Launch {
        if self.warp {
            Launch::ExtendWarp(args)
        } else {
            Launch::ExtendWarpBindings(args)
        }
    }

    /// Whether its pivot lists are cut into segments (they can be long).
    pub(crate) fn segmented(&self) -> bool {
        self.segment > 0
    }

    /// Rows this level may write over `parents` parents, at most `cap`: a warp join's at most one
    /// per candidate, a join of bindings' as many as the relations bind.
    fn bound(&self, cap: u64, parents: u64) -> u64 {
        if self.warp {
            cap.min(parents.saturating_mul(self.all.len))
        } else {
            cap
        }
    }
}

/// The check a level with an edge variable scans the list of: a fixed relation if it has one
/// (the shorter lists), else its variable edge; `NONE` for a node starting a new component.
fn bindings_pivot(js: &crate::layout::JoinStep) -> u32 {
    js.fixed_pivots
        .first()
        .copied()
        .unwrap_or(js.variable_pivot)
}

/// The levels of one query, run depth first over parts of a level when it outgrows its buffer.
struct Levels<'p, 'a, 'o, D: Device> {
    p: &'p mut Pipeline<'a, D>,
    layout: &'p Layout,
    levels: &'p [LevelPlan],
    claimed: Region,
    /// The root level's list cut into segments for its warps.
    root_cut: Option<RootCut>,
    /// Set for one launch: the part of one parent's list it takes.
    parent_part: Option<ParentPart>,
    /// Per level, the rows its buffer was granted ([`Levels::level_buffer`]).
    granted: Vec<u64>,
    /// Bytes of the query's filtering and candidate space, outside `budget`.
    space_bytes: u64,
    out: &'p Output<'o>,
    /// Bytes the level buffers may take together.
    budget: u64,
    /// The first level whose rows are in the arena's level buffers (after a batch, the rows of
    /// the levels before it are in the batch's).
    first: usize,
    runs: u64,
    /// Chunks run depth first (see `depth_first`).
    chunks: u64,
    /// Rows the levels produced (or counted, on a last level without rows).
    partials: u64,
    /// The last level is running in growing parts.
    streaming: bool,
    /// Leaves counted on the device after the last level.
    leaves: Option<Leaves>,
}

/// Segments `first..first + items` (of `segment` entries) of one parent's pivot list, which
/// level `level`'s launch takes ([`Levels::one_parent_in_parts`]).
#[derive(Clone, Copy, Debug)]
struct ParentPart {
    level: usize,
    first: u64,
    items: u64,
    segment: u64,
}

/// The device side of the counted leaves: their groups ([`LeafGroupArgs`]) and their total.
#[derive(Clone, Copy)]
struct Leaves {
    groups: DevSlice,
    terms: DevSlice,
    total: Region,
}

/// Budget bytes a parent of a segmented level takes beyond its row: its segment count (8) and,
/// rounded up, its part of their scan.
const SEGMENT_PARENT_BYTES: u64 = 9;

/// Warps a segmented level launches at least (a few per SM of a large GPU).
const SEGMENT_WARPS: u64 = 4096;

/// Rows a cold level's buffer starts with.
const FIRST_ROWS: u64 = 1 << 14;

/// Parents of the first part of a streamed last level.
const FIRST_PARENTS: u64 = 1 << 10;

/// Parents one launch takes at most: between launches the time limit is checked.
const MAX_PARENTS: u64 = 1 << 20;

/// Threads of a `count_leaves` launch at most (they take the rows in turn).
const LEAF_THREADS: u64 = 1 << 17;

/// Warps a queued level launches at most (a few per SM of a large GPU; they take its parents in
/// turn, so a level of few rows leaves few warps idle).
const QUEUED_WARPS: u64 = SEGMENT_WARPS;

impl<'p, 'a, 'o, D: Device> Levels<'p, 'a, 'o, D> {
    /// The levels of a query whose space phase took `space_bytes` (filtering included): its
    /// level buffers get the rest of its budget.
    fn new(
        p: &'p mut Pipeline<'a, D>,
        layout: &'p Layout,
        qs: &'p QuerySpace,
        out: &'p Output<'o>,
        space_bytes: u64,
    ) -> Self {
        // The filtering and space buffers are whole pages: their rounding is out of the budget too.
        let budget = p.memory_budget.saturating_sub(space_bytes + 2 * PAGE);
        Levels {
            p,
            layout,
            levels: &qs.levels,
            claimed: qs.claimed,
            root_cut: qs.root_cut,
            parent_part: None,
            granted: vec![0; qs.levels.len()],
            space_bytes,
            out,
            budget,
            first: 0,
            runs: 0,
            chunks: 0,
            partials: 0,
            streaming: false,
            leaves: qs.leaves,
        }
    }
}

impl<D: Device> Levels<'_, '_, '_, D> {
    /// Runs the levels from the root row: queued back to back with one read when every level is
    /// a one-pass warp join, else (or from a level that outgrew its buffer) level by level.
    fn start(&mut self, root: DevSlice) -> Result<(), MatchError> {
        if self.out.stopped() {
            return Ok(());
        }
        match self.root_cut.filter(|_| self.out.limited()) {
            Some(cut) => self.root_in_parts(cut, root, (0, FIRST_ROOT_PART), ROOT_PARTS_GROW),
            None => self.depth_first(0, root, 1),
        }
    }

    /// The root level's candidates (`cut`) from segment `start` on, in parts of `first` segments,
    /// each `grow` times the last, each run through every level before the next, until the
    /// answer is complete. Under a
    /// LIMIT (ASK's too), growing fourfold from one segment: one run would grow every level but
    /// the last whole before the LIMIT could stop anything; this costs at most a read per part
    /// (`log4` of the root's segments) and about 4/3 of the work up to the part that completes
    /// the answer. A root level too large for the budget goes in parts it holds.
    fn root_in_parts(
        &mut self,
        cut: RootCut,
        root: DevSlice,
        (mut start, first): (u64, u64),
        grow: u64,
    ) -> Result<(), MatchError> {
        // Every level's buffer is the arena's again (after a batch's rows, `go_on`).
        self.first = 0;
        let mut part = first;
        let ran = loop {
            if start >= cut.items || self.out.stopped() {
                break Ok(());
            }
            let end = (start + part).min(cut.items);
            let space = self.p.arena.space.get();
            self.root_cut = Some(cut.part(self.p.dev, space, (start, end))?);
            self.chunks += 1;
            if let Err(e) = self.depth_first(0, root, 1) {
                break Err(e);
            }
            (start, part) = (end, part.saturating_mul(grow));
        };
        // The cut as it was: its table on the device is the last part's, and nothing reads it
        // before the next part writes its own (a part runs whole: `depth_first` returns after it)
        // or the next query uploads its own.
        self.root_cut = Some(cut);
        ran
    }

    /// After a batch ran the first part of a LIMIT query's root (`QuerySpace::parted_root`):
    /// the parts after it, unless the answer is complete.
    pub(crate) fn rest_of_root(&mut self, cut: RootCut, root: DevSlice) -> Result<(), MatchError> {
        self.chunks += 1;
        let next = (FIRST_ROOT_PART, FIRST_ROOT_PART * ROOT_PARTS_GROW);
        self.root_in_parts(cut, root, next, ROOT_PARTS_GROW)
    }

    /// Level `d`'s one parent, when it is the root row whose list is cut into more than one
    /// segment, run in parts of at most `room` rows (the root level writes at most a row per entry
    /// of its list); `None` for any other level or parent.
    fn root_within(
        &mut self,
        d: usize,
        room: u64,
        root: DevSlice,
    ) -> Option<Result<(), MatchError>> {
        let cut = self.root_cut.filter(|c| d == 0 && c.items > 1)?;
        let fit = (room / cut.segment).clamp(1, cut.items - 1);
        Some(self.root_in_parts(cut, root, (0, fit), 1))
    }

    /// Levels `d..` over `n` parents outside the arena's level buffers (a batch's): the arena's
    /// buffers of the levels before `d` hold nothing of this query's and are not charged to its
    /// budget (left by an earlier user of a larger budget, they left it no room).
    pub(crate) fn go_on(&mut self, d: usize, rows: DevSlice, n: u64) -> Result<(), MatchError> {
        self.first = d;
        self.depth_first(d, rows, n)
    }

    /// Levels `d..` over `n` parents queued back to back, one read. A level `e` that outgrew its
    /// buffer gets a larger one when the budget holds its rows; else its (complete) parents are
    /// cut into chunks, each run through every remaining level to the end before the next (EGSM's
    /// BFS-DFS hybrid): the buffers stay within the budget, and a chunk costs one read instead of
    /// one per level and per half. The root row's list too large for the budget goes in parts
    /// (`root_in_parts`); another single parent too large for it goes level by level, its list
    /// in parts there (`one_parent_in_parts`).
    pub(crate) fn depth_first(
        &mut self,
        d: usize,
        rows: DevSlice,
        n: u64,
    ) -> Result<(), MatchError> {
        let Some((e, parents, m, total)) = self.queued(d, rows, n)? else {
            return Ok(());
        };
        let row_bytes = self.layout.width * 4;
        let room = self.room(e, row_bytes).min(MAX_PARENTS);
        // `total` is `u64::MAX` when a level got no room at all.
        if room == 0 || total == u64::MAX || self.out.stopped() {
            return self.level(e, parents, m);
        }
        let needed = self.rows_needed(e, total);
        if needed <= room {
            self.level_buffer(e, needed)?;
            return self.depth_first(e, parents, m);
        }
        if m <= 1 {
            // One parent's extensions past the budget: the root's in parts the budget holds (the
            // root level writes at most a row per entry of its list), another's level by level,
            // its pivot list in parts (`one_parent_in_parts`).
            return self
                .root_within(e, room, parents)
                .unwrap_or_else(|| self.level(e, parents, m));
        }
        // Chunks whose rows would fill half the room if spread like the whole level's.
        let chunk = (u128::from(m) * u128::from(room) / u128::from(total) / 2).max(1) as u64;
        let width = self.layout.width as u64;
        let mut start = 0;
        while start < m && !self.out.stopped() {
            let end = (start + chunk).min(m);
            self.chunks += 1;
            self.depth_first(e, rows_part(parents, width, start, end), end - start)?;
            start = end;
        }
        Ok(())
    }

    /// Room per level for a queued run: what its buffer holds, at least FIRST_ROWS, within the
    /// budget, at most MAX_PARENTS (one launch's parents); `None` when a level gets none.
    /// Levels before `from` are not touched: their buffers hold the parents.
    fn queued_capacities(
        &mut self,
        from: usize,
        row_bytes: usize,
    ) -> Result<Option<Vec<u64>>, MatchError> {
        let l = self.levels.len();
        while self.p.arena.levels.len() < l {
            self.p.arena.levels.push(Slab::default());
        }
        let mut caps = vec![0; from];
        for d in from..l {
            if d + 1 == l && self.counts_last() {
                caps.push(0);
                break;
            }
            let have = (self.p.arena.levels[d].cap / row_bytes) as u64;
            let want = have
                .max(FIRST_ROWS)
                .min(self.room(d, row_bytes))
                .min(MAX_PARENTS);
            if want == 0 {
                return Ok(None);
            }
            caps.push(self.level_buffer(d, want)?.min(MAX_PARENTS));
        }
        Ok(Some(caps))
    }

    /// Levels `from..` queued at once over `n` parents (`root`), each over at most its
    /// predecessor's buffer, its parents taken on the device from the predecessor's claim counter,
    /// then one read of all the counters. Returns the first level that outgrew its buffer with its
    /// (complete) parents and the rows it found (`u64::MAX`: a level got no room, nothing ran), or
    /// `None` when the answer was handed to the output.
    fn queued(
        &mut self,
        from: usize,
        root: DevSlice,
        n: u64,
    ) -> Result<Option<(usize, DevSlice, u64, u64)>, MatchError> {
        let (dev, width, l) = (self.p.dev, self.layout.width, self.levels.len());
        let Some(caps) = self.queued_capacities(from, width * 4)? else {
            return Ok(Some((from, root, n, u64::MAX)));
        };
        // Segmented levels share one scratch, taken before anything is queued (a larger one
        // replaces the buffer) and used in turn: the stream orders them.
        let bounds = self.parent_bounds(from, n, &caps);
        let most = (from..l)
            .filter(|&d| self.levels[d].segmented())
            .map(|d| bounds[d])
            .max();
        let scratch = most.map(|m| self.scratch(m as usize)).transpose()?;
        let space = self.p.arena.space.get();
        dev.zero_bytes(space, self.claimed.offset, self.claimed.bytes(8))?;
        let budget_ns = self.budget_ns();
        let words = self.counter_words();
        let clock = self.claimed.words(words.clock()).slice;
        let mut outs = Vec::with_capacity(l);
        // The rows, a bound on their number, and where their number is on the device.
        let mut parents = (root, n, DevSlice::default());
        for (d, lp) in self.levels.iter().enumerate().skip(from) {
            let out = if caps[d] == 0 {
                DevSlice::default()
            } else {
                DevSlice {
                    ptr: dev.address(self.p.arena.levels[d].get()),
                    len: caps[d] * width as u64,
                }
            };
            let counter = self.claimed.words(words.level(d));
            let mut args = ExtendWarpArgs {
                rows: parents.0,
                parents: parents.1,
                parents_at: parents.2,
                warps: parents.1.min(QUEUED_WARPS),
                claimed: counter.slice,
                clock,
                out,
                capacity: caps[d],
                stop_at: if d + 1 == l {
                    self.last_stop()
                } else {
                    u64::MAX
                },
                budget_ns,
                ..self.warp_args(lp)
            };
            if let Some(scratch) = scratch.filter(|_| lp.segmented()) {
                cut_lists(dev, &mut args, scratch, parents.1, SEGMENT_WARPS)?;
            } else if let Some(cut) = self.root_cut.filter(|_| d == 0) {
                cut.apply(&mut args, QUEUED_WARPS);
            }
            dev.launch(&lp.launch(args), args.warps)?;
            debug_assert_eq!(parents.1, bounds[d]);
            let bound = lp.bound(caps[d], parents.1);
            parents = (out, bound, counter.part(8, 0, 1).slice);
            outs.push(out);
        }
        if self.leaves.is_some() {
            self.launch_leaves(parents.0, parents.1, parents.2)?;
        }
        let c: Vec<u64> = read(dev, space, self.claimed.offset, words.len())?;
        // The kernels stopped on their clock: whatever fits below is an incomplete answer.
        if c[words.timed_out()] != 0 {
            self.out.time_out();
        }
        let total = |d: usize| c[words.rows(d)];
        let stop = self.last_stop();
        for d in from..l {
            let last = d + 1 == l;
            // A last level stopped by LIMIT fits only when its buffer holds the rows up to the
            // stop: fewer, and the output would not see the limit cut the answer.
            let fits = total(d) <= caps[d]
                || (last && (self.counts_last() || (total(d) >= stop && caps[d] >= stop)));
            if !fits && !self.out.stopped() {
                // The levels before `d` are complete; `d` and those after it run again.
                self.runs += (d - from) as u64;
                self.partials += (from..d).map(total).sum::<u64>();
                if d == from {
                    return Ok(Some((from, root, n, total(d))));
                }
                let m = total(d - 1);
                let rows = rows_part(outs[d - 1 - from], width as u64, 0, m);
                return Ok(Some((d, rows, m, total(d))));
            }
        }
        self.runs += (l - from) as u64;
        self.partials += (from..l).map(total).sum::<u64>();
        let d = l - 1;
        if self.leaves.is_some() {
            self.add_leaves(&c[words.leaves().0..]);
        } else {
            self.next(d, total(d).min(caps[d]), self.out.count_only(), total(d))?;
        }
        Ok(None)
    }

    /// Per level from `from` on, at most how many parents a queued run gives it: `n`, then what
    /// each level's buffer (`caps`) and binding bound let through.
    fn parent_bounds(&self, from: usize, n: u64, caps: &[u64]) -> Vec<u64> {
        let mut bounds = vec![0; from];
        let mut bound = n;
        for (d, lp) in self.levels.iter().enumerate().skip(from) {
            bounds.push(bound);
            bound = lp.bound(caps[d], bound);
        }
        bounds
    }

    /// Whether a batch's run of the root's first part (its counters `c`, its last level's rows
    /// when it wants rows) completed the answer: its LIMIT reached, its count overflowed, or its
    /// time limit ended it. Asked before anything is handed to the output.
    pub(crate) fn first_part_completes(&self, c: &[u64], rows: Option<&[u32]>) -> bool {
        let words = CounterWords {
            levels: self.levels.len(),
        };
        if self.leaves.is_some() {
            leaf_total(&c[words.leaves().0..]).is_none_or(|n| self.out.count_would_stop(n))
        } else if self.out.count_only() {
            let last = words.rows(self.levels.len() - 1);
            self.out.count_would_stop(u128::from(c[last]))
        } else {
            match rows {
                Some(rows) => self
                    .out
                    .rows_would_stop(&by_node(rows, self.layout), self.layout.width),
                None => self.out.stopped(),
            }
        }
    }

    /// Whether the last level only counts its rows (a count with no leaves counted after it).
    fn counts_last(&self) -> bool {
        self.out.count_only() && self.leaves.is_none()
    }

    /// Where the last level stops: a LIMIT, unless its rows are parents of counted leaves.
    fn last_stop(&self) -> u64 {
        if self.leaves.is_some() {
            u64::MAX
        } else {
            self.wanted()
        }
    }

    /// Queues `count_leaves` over `rows` (at most `parents`, the number at `parents_at` if set).
    fn launch_leaves(
        &self,
        rows: DevSlice,
        parents: u64,
        parents_at: DevSlice,
    ) -> Result<(), DeviceError> {
        let Some(leaves) = self.leaves else {
            return Ok(());
        };
        let threads = parents.clamp(1, LEAF_THREADS);
        self.p.dev.launch(
            &Launch::CountLeaves(CountLeavesArgs {
                rows,
                parents,
                parents_at,
                width: self.layout.width as u64,
                nodes: self.layout.nodes as u32,
                injective: (self.p.semantics == Semantics::Iso) as u32,
                groups: leaves.groups,
                terms: leaves.terms,
                total: leaves.total.slice,
                stop_at: self.wanted(),
                threads,
            }),
            threads,
        )
    }

    /// The leaves of `n` rows counted on the device: one launch, one read.
    fn count_leaves(&mut self, rows: DevSlice, n: u64) -> Result<(), MatchError> {
        let Some(leaves) = self.leaves else {
            return Ok(());
        };
        let space = self.p.arena.space.get();
        self.p.dev.zero_bytes(space, leaves.total.offset, 24)?;
        self.launch_leaves(rows, n, DevSlice::default())?;
        let t: Vec<u64> = read(self.p.dev, space, leaves.total.offset, 3)?;
        self.add_leaves(&t);
        Ok(())
    }

    /// Adds the leaves' total (low word, high word, overflow flag) to the output.
    fn counter_words(&self) -> CounterWords {
        CounterWords {
            levels: self.levels.len(),
        }
    }

    fn add_leaves(&self, t: &[u64]) {
        match leaf_total(t) {
            Some(n) => self.out.add_count(n),
            None => self.out.count_overflowed(),
        }
    }

    /// What remains of the time limit, for the kernels' clock (`u64::MAX`: none).
    fn budget_ns(&self) -> u64 {
        budget_ns(self.out)
    }

    /// The warp join's arguments for level `lp` that do not depend on its parents or output.
    fn warp_args(&self, lp: &LevelPlan) -> ExtendWarpArgs {
        ExtendWarpArgs {
            graph: self.p.g(),
            step: StepArgs {
                slot: lp.slot,
                nodes: self.layout.nodes as u32,
                injective: (self.p.semantics == Semantics::Iso) as u32,
                pivot: if lp.warp { NONE } else { lp.pivot },
                checks: lp.checks,
                candidates: if lp.warp {
                    DevSlice::default()
                } else {
                    lp.candidates
                },
            },
            width: self.layout.width as u64,
            lists: lp.lists,
            all: lp.all,
            segment: lp.segment,
            ..Default::default()
        }
    }

    fn level(&mut self, d: usize, parents: DevSlice, n: u64) -> Result<(), MatchError> {
        if self.out.stopped() {
            return Ok(());
        }
        let width = self.layout.width as u64;
        let last = d + 1 == self.levels.len();
        let count_only = last && self.counts_last();
        let rows_out = last && !self.out.count_only();
        // Rows of the last level stream in parts that grow fourfold, so that a reader that stops
        // early (`| head`, LIMIT) stops the work too; other levels run in parts of MAX_PARENTS.
        let first_part = if rows_out && !self.streaming {
            FIRST_PARENTS
        } else {
            MAX_PARENTS
        };
        if n > first_part {
            self.streaming = rows_out;
            let (mut start, mut part) = (0, first_part);
            while start < n && !self.out.stopped() {
                let end = (start + part).min(n);
                self.level(d, rows_part(parents, width, start, end), end - start)?;
                start = end;
                part = (part * 4).min(MAX_PARENTS);
            }
            self.streaming = false;
            return Ok(());
        }
        let stop_at = if last { self.last_stop() } else { u64::MAX };
        let row_bytes = width as usize * 4;
        while self.p.arena.levels.len() <= d {
            self.p.arena.levels.push(Slab::default());
        }
        let mut capacity = if count_only {
            0
        } else {
            // A first guess, so that a cold level is not run twice: room for a few extensions
            // per parent, within the budget.
            let guess = (4 * n).max(FIRST_ROWS).min(self.room(d, row_bytes));
            self.level_buffer(d, guess)?
        };
        loop {
            let (total, written) = self.run(d, parents, n, capacity, count_only, stop_at)?;
            self.runs += 1;
            // A run the time limit stopped is not run again: the answer is incomplete anyway.
            if count_only || total <= capacity || written >= stop_at || self.out.stopped() {
                self.partials += total;
                return self.next(d, written, count_only, total);
            }
            let room = self.room(d, row_bytes);
            // Under LIMIT the rows up to its stop are enough: the kernels write the first ones
            // claimed, and stop there.
            let needed = self.rows_needed(d, total);
            if needed <= room {
                capacity = self.level_buffer(d, needed)?;
                continue;
            }
            if n == 1 {
                return match self.root_within(d, room, parents) {
                    Some(ran) => ran,
                    None => self.one_parent_in_parts(d, parents, room, total),
                };
            }
            let half = n / 2;
            self.level(d, rows_part(parents, width, 0, half), half)?;
            return self.level(d, rows_part(parents, width, half, n), n - half);
        }
    }

    /// One parent (not the root row) whose `total` extensions level `d`'s `room` does not hold:
    /// its pivot list in parts of segments whose rows the room holds (a warp join writes at most
    /// a row per entry of the list), each part through every level after `d` before the next. A
    /// part that still outgrows the room (a level with an edge variable may bind several relations
    /// per entry) is halved, down to one segment, which past the room fails with the budget's
    /// error.
    fn one_parent_in_parts(
        &mut self,
        d: usize,
        parent: DevSlice,
        room: u64,
        total: u64,
    ) -> Result<(), MatchError> {
        if room == 0 {
            return Err(self.no_room(total));
        }
        let too_large = MatchError::MemoryBudget {
            rows: total,
            budget_rows: room,
        };
        let lp = &self.levels[d];
        let segment = if lp.segmented() { lp.segment } else { SEGMENT };
        let segment = segment.min(room);
        let segments = self.parent_segments(d, parent, segment)?;
        let (mut start, mut part) = (0, (room / segment).max(1));
        while start < segments && !self.out.stopped() {
            let items = part.min(segments - start);
            let cut = ParentPart {
                level: d,
                first: start,
                items,
                segment,
            };
            self.chunks += 1;
            if self.run_part(cut, parent, room)? {
                start += items;
            } else if part > 1 {
                part /= 2;
            } else {
                return Err(too_large);
            }
        }
        Ok(())
    }

    /// Level `d`'s candidates (`all`), or at the root under a cut in parts, its part's: the
    /// root row's list.
    fn list_of_root(&self, d: usize, all: DevSlice) -> DevSlice {
        self.root_cut.filter(|_| d == 0).map_or(all, |cut| cut.all)
    }

    /// The budget left a level no room for a single row of a parent's `total` extensions: the
    /// bytes the query needs at least, as the candidate space's error says them (it said "a
    /// single partial match has 128 extensions, more than the memory budget of 0 rows"). Never
    /// bytes within the budget: a batch takes those for memory other users hold, and waits.
    fn no_room(&self, total: u64) -> MatchError {
        let (bytes, budget) = (self.least_bytes(), self.p.memory_budget);
        if bytes > budget {
            MatchError::DeviceBudget {
                bytes,
                budget,
                filtering: false,
            }
        } else {
            MatchError::MemoryBudget {
                rows: total,
                budget_rows: 0,
            }
        }
    }

    /// Bytes the query needs at least alone: its filtering and candidate space, the pages they
    /// may round up by, and a page of rows for each level with their segment counts.
    fn least_bytes(&self) -> u64 {
        let kept = self.levels.len() - usize::from(self.counts_last());
        least_bytes(self.space_bytes, self.layout.width, kept, |d| {
            self.parent_of_segments(d)
        })
    }

    /// The number of `segment`-entry segments of `parent`'s pivot list at level `d` (a count
    /// launch and a read).
    fn parent_segments(
        &mut self,
        d: usize,
        parent: DevSlice,
        segment: u64,
    ) -> Result<u64, MatchError> {
        let (counts, _) = self.scratch(1)?;
        let lp = &self.levels[d];
        let args = ExtendWarpArgs {
            rows: parent,
            parents: 1,
            segment,
            all: self.list_of_root(d, lp.all),
            ..self.warp_args(lp)
        };
        let dev = self.p.dev;
        dev.launch(
            &Launch::PivotSegments(PivotSegmentsArgs {
                a: args,
                out: counts.slice,
            }),
            2,
        )?;
        let n: Vec<u64> = read(dev, self.p.arena.scratch.get(), counts.offset, 1)?;
        Ok(n[0])
    }

    /// Level `d = cut.level` over one part of `parent`'s list, within `room` rows, then the
    /// levels after it; `false` when its rows outgrew the room (nothing was handed on).
    fn run_part(
        &mut self,
        cut: ParentPart,
        parent: DevSlice,
        room: u64,
    ) -> Result<bool, MatchError> {
        let d = cut.level;
        let last = d + 1 == self.levels.len();
        let count_only = last && self.counts_last();
        let stop_at = if last { self.last_stop() } else { u64::MAX };
        let capacity = if count_only {
            0
        } else {
            self.level_buffer(d, room.min(cut.items * cut.segment))?
        };
        self.parent_part = Some(cut);
        let ran = self.run(d, parent, 1, capacity, count_only, stop_at);
        self.parent_part = None;
        let (total, written) = ran?;
        self.runs += 1;
        let fits = count_only || total <= capacity || written >= stop_at || self.out.stopped();
        if fits {
            self.partials += total;
            self.next(d, written, count_only, total)?;
        }
        Ok(fits)
    }

    /// Count and scan room for `n` items in the scratch buffer.
    fn scratch(&mut self, n: usize) -> Result<(Region, Region), DeviceError> {
        let mut c = Carver::new(0);
        c.take::<u64>(n + 1);
        c.take::<u64>(scan_sums(n + 1));
        let buf = self.p.arena.scratch.ensure(self.p.dev, c.at)?;
        let mut c = Carver::new(self.p.dev.address(buf));
        Ok((c.take::<u64>(n + 1), c.take::<u64>(scan_sums(n + 1))))
    }

    /// Rows level `d` may hold ([`Levels::share`]).
    fn room(&self, d: usize, row_bytes: usize) -> u64 {
        self.share(d, row_bytes).0
    }

    /// Rows level `d` may hold, and the bytes its buffer may take (whole pages, as it is
    /// allocated): of an equal share, among it and the levels below it, of what the levels above
    /// it leave of the budget (halving per level starved deep queries: the 16th level of a
    /// 17-node path got a few hundred rows of 256 MiB), the most rows whose pages and segment
    /// counts ([`Levels::row_cost`]) fit. The levels above it (from `first`) hold this query's
    /// parents, each charged its buffer and the segment counts of the rows it was granted
    /// ([`Levels::level_buffer`]). Charged the counts of every row its pages hold, a level left
    /// the one below it no room (`?x IsA ?y . ?y IsA ?z` as rows at 242 KiB: "more than the
    /// memory budget of 0 rows").
    fn share(&self, d: usize, row_bytes: usize) -> (u64, u64) {
        let rb = row_bytes as u64;
        let extra = |e: usize| self.row_cost(e, rb) - rb;
        let used: u64 = (self.first..d)
            .map(|e| self.p.arena.levels[e].cap as u64 + self.granted[e] * extra(e))
            .sum();
        let below = (self.levels.len() - d) as u64;
        let share = self.budget.saturating_sub(used) / below;
        let rows = |pages: u64| {
            let bytes = pages * PAGE;
            let counted = (share.saturating_sub(bytes))
                .checked_div(extra(d))
                .unwrap_or(u64::MAX);
            (
                if bytes > share {
                    0
                } else {
                    (bytes / rb).min(counted)
                },
                bytes,
            )
        };
        // The rows grow with the pages until the counts take the rest: the best is about where
        // the pages' rows meet what the counts leave.
        let meet =
            u128::from(share) * u128::from(rb) / u128::from(rb + extra(d)) / u128::from(PAGE);
        let meet = meet as u64;
        let (a, b) = (rows(meet), rows(meet + 1));
        if b.0 > a.0 {
            b
        } else {
            a
        }
    }

    /// Level `d`'s buffer, grown to hold `rows` rows (at most its room): its capacity in rows. A
    /// buffer larger than the level's share is given back first: the arena is reused by queries
    /// of other budgets and shapes, and one left by a query of a larger budget, charged to this
    /// one at its size, left the levels below it no room (a 64 KiB query failed after a 1 GiB
    /// one, alone or in a batch's queries that go on alone); used as it is, it would hold more
    /// than this query's budget.
    fn level_buffer(&mut self, d: usize, rows: u64) -> Result<u64, DeviceError> {
        let row_bytes = self.layout.width * 4;
        let (room, share) = self.share(d, row_bytes);
        let (dev, slab) = (self.p.dev, &mut self.p.arena.levels[d]);
        if slab.cap as u64 > share {
            slab.release(dev);
        }
        if slab.cap < rows as usize * row_bytes {
            slab.ensure(dev, rows as usize * row_bytes)?;
        }
        // Granted at most its room: the segment counts of the rows past it are not in the budget.
        let granted = ((slab.cap / row_bytes) as u64).min(room.max(rows));
        self.granted[d] = granted;
        Ok(granted)
    }

    /// Rows level `d` must hold of the `total` it found: all, or on the last level under LIMIT,
    /// those up to its stop (the kernels write the first rows claimed and stop there).
    fn rows_needed(&self, d: usize, total: u64) -> u64 {
        if d + 1 == self.levels.len() {
            total.min(self.last_stop())
        } else {
            total
        }
    }

    /// Bytes of the budget a row of level `d` takes: its own, and when it is a parent of a
    /// segmented level, its segment count and its part of their scan (the scratch they share
    /// holds the most parents of any such level, at most the sum the levels pay).
    fn row_cost(&self, d: usize, row_bytes: u64) -> u64 {
        row_bytes + u64::from(self.parent_of_segments(d)) * SEGMENT_PARENT_BYTES
    }

    /// Whether level `d`'s rows are the parents of a segmented level.
    fn parent_of_segments(&self, d: usize) -> bool {
        self.levels.get(d + 1).is_some_and(LevelPlan::segmented)
    }

    /// Rows (or matches) the last level still needs, as the output counts them: LIMIT stops it
    /// one past the limit, so that the output sees whether the limit cut the answer (stopped at
    /// the limit, a level of more rows read as complete whenever the kernels' claims, 32 at a
    /// time, landed on it). Under DISTINCT, where a row may repeat, nothing stops it early.
    fn wanted(&self) -> u64 {
        let wanted = if self.out.count_only() {
            self.out.count_wanted()
        } else {
            self.out.rows_wanted()
        };
        // At least one: even LIMIT 0 looks for a first row.
        wanted.map_or(u64::MAX, |w| w.max(1))
    }

    /// After level `d` wrote `rows` rows (of `total` found): the next level, or the answer.
    fn next(
        &mut self,
        d: usize,
        rows: u64,
        count_only: bool,
        total: u64,
    ) -> Result<(), MatchError> {
        let width = self.layout.width;
        if count_only {
            // A launch's total is a device `u64`: at most MAX_PARENTS (2^20) parents, each with
            // fewer than 2^32 extensions per binding of its edge variables (a pivot list), so
            // below 2^52 times the parallel edges bindings choose among; the output adds the
            // launches' totals in `u128`.
            self.out.add_count(u128::from(total));
            return Ok(());
        }
        if rows == 0 {
            return Ok(());
        }
        let slab = self.p.arena.levels[d].get();
        if d + 1 == self.levels.len() && self.leaves.is_some() {
            let rows_at = DevSlice {
                ptr: self.p.dev.address(slab),
                len: rows * width as u64,
            };
            return self.count_leaves(rows_at, rows);
        }
        if d + 1 == self.levels.len() {
            let data: Vec<u32> = read(self.p.dev, slab, 0, rows as usize * width)?;
            self.out.rows(&by_node(&data, self.layout), width);
            return Ok(());
        }
        let parents = DevSlice {
            ptr: self.p.dev.address(slab),
            len: rows * width as u64,
        };
        self.level(d + 1, parents, rows)
    }

    /// One launch of level `d` over `n` parents into room for `capacity` rows: the level's total,
    /// and how many of its rows are in the buffer (all of them when they fit; some, in the order
    /// they were claimed, when the level overflows).
    fn run(
        &mut self,
        d: usize,
        parents: DevSlice,
        n: u64,
        capacity: u64,
        count_only: bool,
        stop_at: u64,
    ) -> Result<(u64, u64), MatchError> {
        let (width, levels, dev) = (self.layout.width, self.levels, self.p.dev);
        let lp = &levels[d];
        let out_slice = if count_only {
            DevSlice::default()
        } else {
            let bytes = (capacity as usize).max(1) * width * 4;
            let slab = self.p.arena.levels[d].ensure(dev, bytes)?;
            DevSlice {
                ptr: dev.address(slab),
                len: capacity * width as u64,
            }
        };
        let part = self.parent_part.filter(|c| c.level == d);
        let scratch = if lp.segmented() || part.is_some() {
            Some(self.scratch(n as usize)?)
        } else {
            None
        };
        let space = self.p.arena.space.get();
        // One launch at a time: it takes the first level's words, whatever its level.
        let level = self.claimed.words(self.counter_words().level(0));
        dev.zero_bytes(space, level.offset, level.bytes(8))?;
        let mut args = ExtendWarpArgs {
            rows: parents,
            parents: n,
            claimed: level.slice,
            out: out_slice,
            capacity,
            stop_at,
            budget_ns: self.budget_ns(),
            ..self.warp_args(lp)
        };
        let mut warps = n;
        if let (Some(cut), Some((table, _))) = (part, scratch) {
            let table = table.part(8, 0, 2);
            let scratch = self.p.arena.scratch.get();
            dev.write_bytes(scratch, table.offset, as_bytes(&[0, cut.items]))?;
            args.segments = table.slice;
            args.segment = cut.segment;
            args.first_segment = cut.first;
            args.all = self.list_of_root(d, args.all);
            warps = cut.items.min(SEGMENT_WARPS);
            args.warps = warps;
        } else if let Some(scratch) = scratch {
            warps = n.clamp(SEGMENT_WARPS, MAX_PARENTS);
            cut_lists(dev, &mut args, scratch, n, warps)?;
        } else if let Some(cut) = self.root_cut.filter(|_| d == 0) {
            cut.apply(&mut args, SEGMENT_WARPS);
            warps = args.warps;
        }
        dev.launch(&lp.launch(args), warps)?;
        // The total, the start time, whether the time limit stopped it: one read.
        let c: Vec<u64> = read(dev, space, self.claimed.offset, 3)?;
        if c[2] != 0 {
            self.out.time_out();
        }
        Ok((c[0], c[0].min(capacity)))
    }
}

/// Bytes a query of `space` bytes (filtering and candidate space) and rows of `width` slots needs
/// at least alone: the two pages its space may round up by, and for each of its first `kept`
/// levels a page of rows, with their segment counts where it is the parent of a segmented level
/// (`parent_of_segments`).
fn least_bytes(
    space: u64,
    width: usize,
    kept: usize,
    parent_of_segments: impl Fn(usize) -> bool,
) -> u64 {
    let page_rows = PAGE.div_ceil(4 * width as u64);
    let pages: u64 = (0..kept)
        .map(|d| PAGE + u64::from(parent_of_segments(d)) * page_rows * SEGMENT_PARENT_BYTES)
        .sum();
    space + 2 * PAGE + pages
}

/// Cuts the pivot lists of `args`' level (over at most `bound` parents, the number at
/// `args.parents_at` when set) into segments that `warps` warps take in turn: a count launch and a
/// device scan into `scratch`, no read.
fn cut_lists<D: Device>(
    dev: &D,
    args: &mut ExtendWarpArgs,
    (counts, sums): (Region, Region),
    bound: u64,
    warps: u64,
) -> Result<(), DeviceError> {
    let counts = counts.part(8, 0, bound as usize + 1);
    dev.launch(
        &Launch::PivotSegments(PivotSegmentsArgs {
            a: *args,
            out: counts.slice,
        }),
        bound + 1,
    )?;
    scan(dev, counts, sums)?;
    args.segments = counts.slice;
    args.warps = warps;
    Ok(())
}

/// Read 1: the node and adjacency totals, the candidate sets when asked for, and the filtering
/// kernels' clocks (three `u64`s per query).
/// Filtering's read: the totals, the read words with where the sets start in them (none unless
/// asked for), the clocks.
type ReadOne = (Vec<u64>, (Vec<u32>, usize), Vec<u64>);

/// What remains of `out`'s time limit, for the kernels' clocks (`u64::MAX`: none).
fn budget_ns(out: &Output) -> u64 {
    out.remaining()
        .map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128 - 1) as u64)
}

/// Exclusive scan of `values` in place on the device (three launches, no read).
fn scan<D: Device>(dev: &D, values: Region, sums: Region) -> Result<(), DeviceError> {
    let chunks = values.slice.len.div_ceil(SCAN_CHUNK as u64);
    let first = sums.part(8, 0, chunks as usize);
    let total = sums.part(8, chunks as usize, chunks as usize + 1);
    let args = ScanArgs {
        values: values.slice,
        sums: first.slice,
        chunk: SCAN_CHUNK as u64,
    };
    dev.launch(&Launch::ScanChunks(args), chunks)?;
    dev.launch(
        &Launch::ScanChunks(ScanArgs {
            values: first.slice,
            sums: total.slice,
            chunk: chunks.max(1),
        }),
        1,
    )?;
    dev.launch(&Launch::AddChunkOffsets(args), chunks)
}

/// Rows in the join's slot order rearranged by query node (slot `u` for query node `u`; edge
/// variables keep their slots), as the output expects.
fn by_node(rows: &[u32], layout: &Layout) -> Vec<u32> {
    let width = layout.width;
    let mut out = rows.to_vec();
    for (row, dst) in rows.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
        for (u, &slot) in layout.slot_of.iter().enumerate() {
            dst[u] = row[slot as usize];
        }
    }
    out
}

/// The leaves counted on the device (their counter words: low, high, overflow), `None` past
/// `u128::MAX`.
fn leaf_total(t: &[u64]) -> Option<u128> {
    (t[2] == 0).then(|| u128::from(t[0]) | u128::from(t[1]) << 64)
}

/// Rows `start..end` of `rows` (rows of `width` `u32`s).
fn rows_part(rows: DevSlice, width: u64, start: u64, end: u64) -> DevSlice {
    DevSlice {
        ptr: rows.ptr + start * width * 4,
        len: (end - start) * width,
    }
}
