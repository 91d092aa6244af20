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
//! 5. the warp-centric join (`extend_warp`: one pass, rows claimed by one atomic add per warp), its
//!    levels queued back to back, each taking its parents' number from the previous level's
//!    counter, then `count_leaves` for counted leaves, and **one read** of every counter; the last
//!    level's rows are read once more.
//!
//! So a query whose levels fit their buffers makes 2 reads (3 with rows). A level that outgrows
//! its buffer is run again level by level, into a larger buffer (within the memory budget) or in
//! halves of its parents, one read per level; so are levels with an edge variable (count, device
//! scan, write) and segmented pivot lists.

use std::time::Instant;

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::abi::{
    AdjacencyBoundsArgs, CountLeavesArgs, CountWordsArgs, DevSlice, DirectedEdge, EdgeList,
    EdgeListsArgs, ExtendArgs, ExtendWarpArgs, FilterArgs, GraphArgs, IdentifyNodesArgs,
    LeafGroupArgs, ListsArgs, MarkStep, MarkStepsArgs, NodeJob, NodeTotalsArgs, PivotSegmentsArgs,
    RefineJob, RefineNodesArgs, ScanArgs, StepArgs, WriteWordsArgs,
};
use gpsense_kernels::{bits, Dir, NONE};
use gpsense_planner::{Plan, QueryGraph};

use crate::device::memory::{graph_bytes, place_graph, Placement};
use crate::device::{
    as_bytes, map_host, read, upload, Buf, Device, DeviceCounters, DeviceError, Launch, Pod,
};
use crate::filtering::FilterReport;
use crate::gpu_leaves::{self, LeafGroup};
use crate::layout::{DataShape, Layout};
use crate::output::Output;
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

/// A device buffer that only grows.
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
            self.buf = None;
            let cap = bytes.max(1).next_multiple_of(4096);
            self.buf = Some(dev.alloc_zeroed(cap)?);
            self.cap = cap;
        }
        Ok(self.buf.as_ref().expect("allocated above"))
    }

    fn get(&self) -> &D::Buffer {
        self.buf.as_ref().expect("ensured before use")
    }
}

/// Device memory kept between queries: after warm-up, a query allocates nothing.
pub struct Arena<D: Device> {
    filter: Slab<D>,
    space: Slab<D>,
    /// One per join level: a level's output stays while the levels below it run in parts.
    levels: Vec<Slab<D>>,
    /// Count and scan room of the count-then-write join.
    scratch: Slab<D>,
}

impl<D: Device> Default for Arena<D> {
    fn default() -> Self {
        Arena {
            filter: Slab::default(),
            space: Slab::default(),
            levels: Vec::new(),
            scratch: Slab::default(),
        }
    }
}

impl<D: Device> Arena<D> {
    pub(crate) fn bytes(&self) -> u64 {
        (self.filter.cap + self.space.cap + self.scratch.cap) as u64
            + self.levels.iter().map(|s| s.cap as u64).sum::<u64>()
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

/// A query's part of the filtering arena.
struct FilterRegions {
    sets: Region,
    marks: Region,
    offsets: Region,
    sums: Region,
    summary: Region,
    params: Region,
    /// The per-wave job tables of identification, marking and refinement.
    jobs: Region,
}

/// The query as the device reads it: filters, incident edges, the directed edges, in one upload.
struct Params {
    bytes: Vec<u8>,
    /// Per query node: degrees, neighbour labels, self-loops, incident edges (byte ranges).
    nodes: Vec<[(usize, usize); 4]>,
    edges: (usize, usize),
}

impl Params {
    fn new(layout: &Layout, directed: &[DirectedEdge]) -> Self {
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
                [
                    put(as_bytes(&f.degrees)),
                    put(as_bytes(&f.neighbour_labels)),
                    put(as_bytes(&f.self_loops)),
                    put(as_bytes(&layout.incident[u])),
                ]
            })
            .collect();
        let edges = put(as_bytes(directed));
        Params {
            bytes,
            nodes,
            edges,
        }
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

    /// The tables as the device reads them at `r.jobs`: node jobs, then mark steps, then refine
    /// jobs, each wave's part contiguous.
    fn tables(
        &self,
        layout: &Layout,
        params: &Params,
        r: &FilterRegions,
        seeded: &[bool],
    ) -> Tables {
        let (mut jobs, mut steps, mut refine) = (Vec::new(), Vec::new(), Vec::new());
        let mut parts = [Vec::new(), Vec::new(), Vec::new()];
        for (nodes, wave_steps) in self.nodes.iter().zip(&self.steps) {
            let start = [jobs.len(), steps.len(), refine.len()];
            for &u in nodes {
                let p = &params.nodes[u];
                let f = &layout.filters[u];
                jobs.push(NodeJob {
                    filter: FilterArgs {
                        fixed: f.fixed,
                        label: f.label,
                        degrees: slice_at(&r.params, p[0], 12),
                        neighbour_labels: slice_at(&r.params, p[1], 12),
                        self_loops: slice_at(&r.params, p[2], 4),
                    },
                    node: u as u32,
                    seeded: seeded[u] as u32,
                    marks: self.marks[u].0,
                    mark_count: self.marks[u].1,
                });
                if !layout.incident[u].is_empty() {
                    refine.push(RefineJob {
                        node: u as u32,
                        _pad: 0,
                        incident: slice_at(&r.params, p[3], 12),
                    });
                }
            }
            for &j in wave_steps {
                let s = &layout.neighbour_steps[j];
                steps.push(MarkStep {
                    from: s.from as u32,
                    dir: dir_code(s.dir),
                    label: s.label,
                    mark: self.slot[j],
                    allowed: if seeded[s.to] { s.to as u32 } else { NONE },
                    _pad: 0,
                });
            }
            let end = [jobs.len(), steps.len(), refine.len()];
            for k in 0..3 {
                parts[k].push((start[k], end[k]));
            }
        }
        let mut bytes = as_bytes(&jobs).to_vec();
        let at_steps = bytes.len();
        bytes.extend_from_slice(as_bytes(&steps));
        let at_refine = bytes.len();
        bytes.extend_from_slice(as_bytes(&refine));
        let base = r.jobs.slice.ptr;
        let slices = |parts: &[(usize, usize)], at: usize, elem: usize| {
            parts
                .iter()
                .map(|&(s, e)| DevSlice {
                    ptr: base + (at + s * elem) as u64,
                    len: (e - s) as u64,
                })
                .collect()
        };
        Tables {
            identify: slices(&parts[0], 0, size_of::<NodeJob>()),
            mark: slices(&parts[1], at_steps, size_of::<MarkStep>()),
            refine: slices(&parts[2], at_refine, size_of::<RefineJob>()),
            bytes,
        }
    }
}

fn dir_code(d: Dir) -> u32 {
    match d {
        Dir::Out => 0,
        Dir::In => 1,
    }
}

/// Each query edge seen from its source (`2e`) and from its target (`2e + 1`).
fn directed_edges(q: &QueryGraph) -> Vec<DirectedEdge> {
    q.edges
        .iter()
        .flat_map(|e| {
            let label = match e.label {
                gpsense_planner::EdgeLabel::Fixed(r) => r as u32,
                gpsense_planner::EdgeLabel::Variable(_) => NONE,
            };
            [
                DirectedEdge {
                    from: e.source as u32,
                    dir: 0,
                    label,
                    _pad: 0,
                },
                DirectedEdge {
                    from: e.target as u32,
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
}

pub struct Pipeline<'a, D: Device> {
    pub dev: &'a D,
    pub graph: &'a DeviceGraph<D>,
    pub arena: &'a mut Arena<D>,
    pub semantics: Semantics,
    pub shape: DataShape,
    pub memory_budget: u64,
    pub refine_rounds: u32,
    pub limit: Option<u64>,
    /// Entries per segment of a long pivot list (0: a warp per partial match).
    pub segment: u64,
}

/// The device-side candidate space of a query, after read 1.
struct Space {
    stride: usize,
    /// Bytes the filtering regions take.
    filter_bytes: u64,
    counts: Vec<usize>,
    bounds: Vec<u64>,
    filter: FilterRegions,
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
        let space = self.filter(q, layout, out)?;
        // Filtering and refinement are one queue of launches: their time is known only together.
        let report = FilterReport {
            after_refine: space.counts.clone(),
            filter_time: start.elapsed(),
            ..Default::default()
        };
        let mut join_plan = crate::order::join_order(q, plan, &space.counts);
        // A count enumerates only the nodes that are not counted leaves, which come last.
        let groups = if out.count_only() {
            gpu_leaves::choose(q, &join_plan, layout, self.semantics)
        } else {
            Vec::new()
        };
        if !groups.is_empty() {
            join_plan = gpu_leaves::reorder(q, &join_plan, &groups);
        }
        let mut device = DeviceReport::default();
        if space.counts.iter().all(|&c| c > 0) {
            let join = Layout::new(q, &join_plan, self.semantics, self.shape)?;
            (device.levels, device.partial_matches) = self.join(&join, &space, out, &groups)?;
        }
        device.counters = self.dev.counters() - before;
        device.arena_bytes = self.arena.bytes();
        Ok((join_plan, report, device))
    }

    /// Steps 1-3: filtering and refinement on bitsets, counts, read 1. Refinement stops at
    /// `out`'s time limit (fewer rounds leave more candidates, never a wrong one).
    fn filter(
        &mut self,
        q: &QueryGraph,
        layout: &Layout,
        out: &Output,
    ) -> Result<Space, MatchError> {
        let n = layout.nodes;
        let stride = bits::words_for(self.graph.nodes);
        let directed = directed_edges(q);
        let params = Params::new(layout, &directed);
        let words = n * stride;
        let waves = Waves::new(layout);
        let marks = layout.neighbour_steps.len();
        let carve = |c: &mut Carver| FilterRegions {
            sets: c.take::<u32>(words),
            marks: c.take::<u32>(marks * stride),
            offsets: c.take::<u64>(words + 1),
            sums: c.take::<u64>(scan_sums(words + 1)),
            summary: c.take::<u64>(n + directed.len()),
            params: c.take::<u8>(params.bytes.len()),
            jobs: c.take::<u8>(waves.table_bytes()),
        };
        let mut sizing = Carver::new(0);
        carve(&mut sizing);
        self.budget_check(sizing.at as u64)?;
        let (dev, g, rounds) = (self.dev, self.g(), self.refine_rounds);
        let buf = self.arena.filter.ensure(dev, sizing.at)?;
        let r = carve(&mut Carver::new(dev.address(buf)));
        dev.write_bytes(buf, r.params.offset, &params.bytes)?;
        dev.zero_bytes(buf, r.marks.offset, r.marks.bytes(4))?;
        let set = |u: usize| r.sets.part(4, u * stride, (u + 1) * stride);
        // A concept set's nodes seed its set: the bits a neighbour may mark, and the ones it is
        // identified from (in place).
        let mut seeded = vec![false; n];
        for (u, spec) in layout.filters.iter().enumerate() {
            if !spec.domain.is_empty() {
                let mut words = vec![0u32; stride];
                crate::filtering::seed(&mut words, &spec.domain);
                dev.write_bytes(buf, set(u).offset, as_bytes(&words))?;
                seeded[u] = true;
            }
        }
        let t = waves.tables(layout, &params, &r, &seeded);
        dev.write_bytes(buf, r.jobs.offset, &t.bytes)?;
        let (sets, marks) = (r.sets.slice, r.marks.slice);
        let stride64 = stride as u64;
        // Forward: per wave, identify its nodes within their marks, then mark from them.
        for (nodes, steps) in t.identify.iter().zip(&t.mark) {
            dev.launch(
                &Launch::IdentifyNodes(IdentifyNodesArgs {
                    graph: g,
                    jobs: *nodes,
                    sets,
                    marks,
                    stride: stride64,
                }),
                nodes.len * stride64,
            )?;
            if steps.len > 0 {
                dev.launch(
                    &Launch::MarkSteps(MarkStepsArgs {
                        graph: g,
                        steps: *steps,
                        sets,
                        marks,
                        stride: stride64,
                    }),
                    steps.len * stride64,
                )?;
            }
        }
        // Refinement in reversed plan order, a wave at a time: the sets a node reads are exactly
        // the ones a node-by-node pass would see.
        for _ in 0..rounds {
            if out.stopped() {
                break;
            }
            for jobs in t.refine.iter().rev().filter(|j| j.len > 0) {
                dev.launch(
                    &Launch::RefineNodes(RefineNodesArgs {
                        graph: g,
                        jobs: *jobs,
                        sets,
                        stride: stride64,
                    }),
                    jobs.len * stride64,
                )?;
            }
        }
        // Ranks: per-word counts, scanned; the node totals and the adjacency totals beside them.
        dev.zero_bytes(buf, r.offsets.offset, r.offsets.bytes(8))?;
        dev.launch(
            &Launch::CountWords(CountWordsArgs {
                words: r.sets.slice,
                counts: r.offsets.slice,
            }),
            words as u64,
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
                edges: slice_at(&r.params, params.edges, 16),
                bounds: r.summary.part(8, n, n + directed.len()).slice,
            }),
            (directed.len() * stride) as u64,
        )?;
        let summary: Vec<u64> = read(dev, buf, r.summary.offset, n + directed.len())?;
        Ok(Space {
            stride,
            filter_bytes: sizing.at as u64,
            counts: summary[..n].iter().map(|&c| c as usize).collect(),
            bounds: summary[n..].to_vec(),
            filter: r,
        })
    }

    fn budget_check(&self, bytes: u64) -> Result<(), MatchError> {
        if bytes > self.memory_budget {
            return Err(MatchError::DeviceBudget {
                bytes,
                budget: self.memory_budget,
            });
        }
        Ok(())
    }

    /// Steps 4-5: candidate arrays, candidate-edge lists, the levels. Returns the levels run.
    fn join(
        &mut self,
        layout: &Layout,
        s: &Space,
        out: &Output,
        groups: &[LeafGroup],
    ) -> Result<(u64, u64), MatchError> {
        let counted: usize = groups.iter().map(|g| g.nodes.len()).sum();
        let enumerated = layout.steps.len() - counted;
        let n = layout.nodes;
        let stride = s.stride;
        let mut cand_start = vec![0usize; n + 1];
        for u in 0..n {
            cand_start[u + 1] = cand_start[u] + s.counts[u];
        }
        // The lists of each query edge from its earlier endpoint in join order.
        let lists = &layout.neighbour_steps;
        let mut slot_base = vec![0usize; lists.len() + 1];
        let mut room = 0u64;
        for (j, ns) in lists.iter().enumerate() {
            slot_base[j + 1] = slot_base[j] + s.counts[ns.from] + 1;
            room += s.bounds[2 * ns.edge + (ns.dir == Dir::In) as usize];
        }
        let slots = slot_base[lists.len()];
        let checks: Vec<gpsense_kernels::join::Check> = layout
            .steps
            .iter()
            .flat_map(|js| js.checks.clone())
            .collect();
        let carve = |c: &mut Carver| SpaceRegions {
            cand: c.take::<u32>(cand_start[n]),
            ec_offsets: c.take::<u64>(slots),
            ec_sums: c.take::<u64>(scan_sums(slots)),
            targets: c.take::<u32>(room as usize),
            labels: c.take::<u16>(room as usize),
            checks: c.take::<gpsense_kernels::join::Check>(checks.len()),
            lists: c.take::<ListsArgs>(checks.len()),
            edge_lists: c.take::<EdgeList>(lists.len()),
            root: c.take::<u32>(layout.width),
            leaf_groups: c.take::<LeafGroupArgs>(groups.len()),
            // Per level its claim counter, start time and timed-out flag, a shared clock, and the
            // leaves' total (two words and an overflow flag).
            claimed: c.take::<u64>(3 * enumerated + 5),
        };
        let mut sizing = Carver::new(0);
        carve(&mut sizing);
        let filter_bytes = s.filter_bytes;
        self.budget_check(filter_bytes + sizing.at as u64)?;
        let (dev, g, injective) = (self.dev, self.g(), self.semantics == Semantics::Iso);
        let buf = self.arena.space.ensure(dev, sizing.at)?;
        let r = carve(&mut Carver::new(dev.address(buf)));
        let f = &s.filter;
        // Candidate arrays: every node's set bits at their scanned offsets.
        dev.launch(
            &Launch::WriteWords(WriteWordsArgs {
                words: f.sets.slice,
                offsets: f.offsets.slice,
                out: r.cand.slice,
                stride: stride as u64,
            }),
            (n * stride) as u64,
        )?;
        let cand = |u: usize| r.cand.part(4, cand_start[u], cand_start[u + 1]);
        let set = |u: usize| f.sets.part(4, u * stride, (u + 1) * stride);
        // Candidate-edge lists of every edge: count (one launch), scan, write (one launch).
        dev.zero_bytes(buf, r.ec_offsets.offset, r.ec_offsets.bytes(8))?;
        let mut first = 0u64;
        let table: Vec<EdgeList> = lists
            .iter()
            .enumerate()
            .map(|(j, ns)| {
                let l = EdgeList {
                    from: cand(ns.from).slice,
                    to_set: set(ns.to).slice,
                    offsets: r.ec_offsets.part(8, slot_base[j], slot_base[j + 1]).slice,
                    first,
                    dir: dir_code(ns.dir),
                    label: ns.label,
                };
                first += s.counts[ns.from] as u64;
                l
            })
            .collect();
        dev.write_bytes(buf, r.edge_lists.offset, as_bytes(&table))?;
        let edge_args = EdgeListsArgs {
            graph: g,
            lists: r.edge_lists.slice,
            out_targets: r.targets.slice,
            out_labels: r.labels.slice,
        };
        if first > 0 {
            dev.launch(&Launch::CountEdgeLists(edge_args), first)?;
            scan(dev, r.ec_offsets, r.ec_sums)?;
            dev.launch(&Launch::WriteEdgeLists(edge_args), first)?;
        }
        // Per check, its edge's lists.
        let list_of_edge = |edge: usize| {
            lists
                .iter()
                .position(|ns| ns.edge == edge)
                .map(|j| ListsArgs {
                    from: cand(lists[j].from).slice,
                    offsets: r.ec_offsets.part(8, slot_base[j], slot_base[j + 1]).slice,
                    targets: r.targets.slice,
                    labels: r.labels.slice,
                })
        };
        let mut table = Vec::with_capacity(checks.len());
        for js in &layout.steps {
            for (k, c) in js.checks.iter().enumerate() {
                let l = if c.slot == NONE {
                    None
                } else {
                    list_of_edge(js.edge_of_check[k])
                };
                table.push(l.unwrap_or_default());
            }
        }
        dev.write_bytes(buf, r.checks.offset, as_bytes(&checks))?;
        dev.write_bytes(buf, r.lists.offset, as_bytes(&table))?;
        dev.write_bytes(buf, r.root.offset, as_bytes(&vec![NONE; layout.width]))?;
        let mut at = 0;
        let leaf_table = groups
            .iter()
            .map(|g| {
                // The parent comes first in the join order: its lists lead to the leaves.
                let list = lists
                    .iter()
                    .find(|ns| ns.from == g.parent && ns.to == g.nodes[0])
                    .and_then(|ns| list_of_edge(ns.edge))
                    .ok_or_else(|| MatchError::Plan("a counted leaf before its parent".into()))?;
                Ok(LeafGroupArgs {
                    list,
                    slot: layout.slot_of[g.parent],
                    leaves: g.nodes.len() as u32,
                })
            })
            .collect::<Result<Vec<_>, MatchError>>()?;
        dev.write_bytes(buf, r.leaf_groups.offset, as_bytes(&leaf_table))?;
        let levels: Vec<LevelPlan> = layout.steps[..enumerated]
            .iter()
            .map(|js| {
                let k = js.checks.len();
                let plan = LevelPlan {
                    checks: r.checks.part(16, at, at + k).slice,
                    lists: r.lists.part(64, at, at + k).slice,
                    warp: js.checks.iter().all(|c| c.label != NONE),
                    general: general_level(
                        js,
                        layout.nodes,
                        injective,
                        g,
                        &list_of_edge,
                        &cand,
                        &set,
                    ),
                    all: cand(js.node).slice,
                    slot: js.slot,
                };
                at += k;
                plan
            })
            .collect();
        let space_bytes = filter_bytes + sizing.at as u64;
        let budget = self.memory_budget.saturating_sub(space_bytes);
        let mut run = Levels {
            p: self,
            layout,
            levels: &levels,
            claimed: r.claimed,
            out,
            emitted: 0,
            budget,
            runs: 0,
            partials: 0,
            streaming: false,
            leaves: (!groups.is_empty()).then(|| Leaves {
                groups: r.leaf_groups.slice,
                total: r.claimed.part(8, 3 * enumerated + 2, 3 * enumerated + 5),
            }),
        };
        run.start(r.root.slice)?;
        Ok((run.runs, run.partials))
    }
}

/// The count-then-write join's arguments for a level with an edge variable: its pivot list (a
/// fixed relation if there is one, else the variable edge), the new node's candidates.
fn general_level(
    js: &crate::layout::JoinStep,
    nodes: usize,
    injective: bool,
    graph: GraphArgs,
    list_of_edge: &impl Fn(usize) -> Option<ListsArgs>,
    cand: &impl Fn(usize) -> Region,
    set: &impl Fn(usize) -> Region,
) -> ExtendArgs {
    let pivot = js
        .fixed_pivots
        .first()
        .copied()
        .unwrap_or(js.variable_pivot);
    let mut args = ExtendArgs {
        graph,
        step: StepArgs {
            slot: js.slot,
            nodes: nodes as u32,
            injective: injective as u32,
            pivot,
            checks: DevSlice::default(),
            candidates: set(js.node).slice,
        },
        lanes: 1,
        all: cand(js.node).slice,
        ..Default::default()
    };
    if pivot != NONE {
        if let Some(l) = list_of_edge(js.edge_of_check[pivot as usize]) {
            args.from = l.from;
            args.ec_offsets = l.offsets;
            args.ec_targets = l.targets;
            args.ec_labels = l.labels;
        }
    }
    args
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
    root: Region,
    claimed: Region,
}

/// What one level launches.
struct LevelPlan {
    slot: u32,
    checks: DevSlice,
    lists: DevSlice,
    /// Every check a fixed relation: the one-pass warp join.
    warp: bool,
    general: ExtendArgs,
    all: DevSlice,
}

/// The levels of one query, run depth first over parts of a level when it outgrows its buffer.
struct Levels<'p, 'a, 'o, D: Device> {
    p: &'p mut Pipeline<'a, D>,
    layout: &'p Layout,
    levels: &'p [LevelPlan],
    claimed: Region,
    out: &'p Output<'o>,
    emitted: u64,
    /// Bytes the level buffers may take together.
    budget: u64,
    runs: u64,
    /// Rows the levels produced (or counted, on a last level without rows).
    partials: u64,
    /// The last level is running in growing parts.
    streaming: bool,
    /// Leaves counted on the device after the last level.
    leaves: Option<Leaves>,
}

/// The device side of the counted leaves: their groups ([`LeafGroupArgs`]) and their total.
#[derive(Clone, Copy)]
struct Leaves {
    groups: DevSlice,
    total: Region,
}

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

impl<D: Device> Levels<'_, '_, '_, D> {
    /// Runs the levels from the root row: queued back to back with one read when every level is
    /// a one-pass warp join, else (or from a level that outgrew its buffer) level by level.
    fn start(&mut self, root: DevSlice) -> Result<(), MatchError> {
        if self.out.stopped() {
            return Ok(());
        }
        if self.p.segment == 0 && self.levels.iter().all(|l| l.warp) {
            return match self.queued(root)? {
                Some((d, parents, n)) => self.level(d, parents, n),
                None => Ok(()),
            };
        }
        self.level(0, root, 1)
    }

    /// Room per level for a queued run: what its buffer holds, at least FIRST_ROWS, within the
    /// budget, at most MAX_PARENTS (one launch's parents); `None` when a level gets none.
    fn queued_capacities(&mut self, row_bytes: usize) -> Result<Option<Vec<u64>>, MatchError> {
        let l = self.levels.len();
        while self.p.arena.levels.len() < l {
            self.p.arena.levels.push(Slab::default());
        }
        let mut caps = Vec::with_capacity(l);
        for d in 0..l {
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
            if have < want {
                self.p.arena.levels[d].ensure(self.p.dev, want as usize * row_bytes)?;
            }
            caps.push(((self.p.arena.levels[d].cap / row_bytes) as u64).min(MAX_PARENTS));
        }
        Ok(Some(caps))
    }

    /// Every level queued at once, each over at most its predecessor's buffer, its parents taken on
    /// the device from the predecessor's claim counter, then one read of all the counters. Returns
    /// the first level that outgrew its buffer with its (complete) parents, or `None` when the
    /// answer was handed to the output.
    fn queued(&mut self, root: DevSlice) -> Result<Option<(usize, DevSlice, u64)>, MatchError> {
        let (dev, width, l) = (self.p.dev, self.layout.width, self.levels.len());
        let Some(caps) = self.queued_capacities(width * 4)? else {
            return Ok(Some((0, root, 1)));
        };
        let space = self.p.arena.space.get();
        dev.zero_bytes(space, self.claimed.offset, self.claimed.bytes(8))?;
        let budget_ns = self.budget_ns();
        let clock = self.claimed.part(8, 3 * l, 3 * l + 2).slice;
        let mut outs = Vec::with_capacity(l);
        // The rows, a bound on their number, and where their number is on the device.
        let mut parents = (root, 1u64, DevSlice::default());
        for (d, lp) in self.levels.iter().enumerate() {
            let out = if caps[d] == 0 {
                DevSlice::default()
            } else {
                DevSlice {
                    ptr: dev.address(self.p.arena.levels[d].get()),
                    len: caps[d] * width as u64,
                }
            };
            let counter = self.claimed.part(8, 3 * d, 3 * d + 3);
            let args = ExtendWarpArgs {
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
            dev.launch(&Launch::ExtendWarp(args), args.warps)?;
            // At most its buffer's rows, and at most each parent times the node's candidates.
            let bound = caps[d].min(parents.1.saturating_mul(lp.all.len));
            parents = (out, bound, counter.part(8, 0, 1).slice);
            outs.push(out);
        }
        if self.leaves.is_some() {
            self.launch_leaves(parents.0, parents.1, parents.2)?;
        }
        let c: Vec<u64> = read(dev, space, self.claimed.offset, 3 * l + 5)?;
        // The kernels stopped on their clock: whatever fits below is an incomplete answer.
        if c[3 * l + 1] != 0 {
            self.out.time_out();
        }
        let total = |d: usize| c[3 * d];
        for d in 0..l {
            let last = d + 1 == l;
            let fits = total(d) <= caps[d]
                || (last && (self.counts_last() || total(d) >= self.last_stop()));
            if !fits && !self.out.stopped() {
                // The levels before `d` are complete; `d` and those after it run again.
                self.runs += d as u64;
                self.partials += (0..d).map(total).sum::<u64>();
                if d == 0 {
                    return Ok(Some((0, root, 1)));
                }
                let n = total(d - 1);
                return Ok(Some((d, rows_part(outs[d - 1], width as u64, 0, n), n)));
            }
        }
        self.runs += l as u64;
        self.partials += (0..l).map(total).sum::<u64>();
        let d = l - 1;
        if self.leaves.is_some() {
            self.add_leaves(&c[3 * l + 2..]);
        } else {
            self.next(d, total(d).min(caps[d]), self.out.count_only(), total(d))?;
        }
        Ok(None)
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
    fn add_leaves(&self, t: &[u64]) {
        if t[2] != 0 {
            self.out.count_overflowed();
        } else {
            self.out
                .add_count(u128::from(t[0]) | u128::from(t[1]) << 64);
        }
    }

    /// What remains of the time limit, for the kernels' clock (`u64::MAX`: none).
    fn budget_ns(&self) -> u64 {
        self.out
            .remaining()
            .map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128 - 1) as u64)
    }

    /// The warp join's arguments for level `lp` that do not depend on its parents or output.
    fn warp_args(&self, lp: &LevelPlan) -> ExtendWarpArgs {
        ExtendWarpArgs {
            graph: self.p.g(),
            step: StepArgs {
                slot: lp.slot,
                nodes: self.layout.nodes as u32,
                injective: (self.p.semantics == Semantics::Iso) as u32,
                pivot: NONE,
                checks: lp.checks,
                candidates: DevSlice::default(),
            },
            width: self.layout.width as u64,
            lists: lp.lists,
            all: lp.all,
            segment: self.p.segment,
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
            if (self.p.arena.levels[d].cap / row_bytes) < guess as usize {
                self.p.arena.levels[d].ensure(self.p.dev, guess as usize * row_bytes)?;
            }
            (self.p.arena.levels[d].cap / row_bytes) as u64
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
            if total <= room {
                self.p.arena.levels[d].ensure(self.p.dev, (total as usize) * row_bytes)?;
                capacity = (self.p.arena.levels[d].cap / row_bytes) as u64;
                continue;
            }
            if n == 1 {
                return Err(MatchError::MemoryBudget {
                    rows: total,
                    budget_rows: room,
                });
            }
            let half = n / 2;
            self.level(d, rows_part(parents, width, 0, half), half)?;
            return self.level(d, rows_part(parents, width, half, n), n - half);
        }
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

    /// Rows level `d` may hold: an equal share, among it and the levels below it, of what the
    /// levels above it leave of the budget (halving per level starved deep queries: the 16th level
    /// of a 17-node path got a few hundred rows of 256 MiB).
    fn room(&self, d: usize, row_bytes: usize) -> u64 {
        let used: u64 = self.p.arena.levels[..d].iter().map(|s| s.cap as u64).sum();
        let below = (self.levels.len() - d) as u64;
        self.budget.saturating_sub(used) / below / row_bytes as u64
    }

    /// Rows (or matches) the last level still needs: LIMIT stops it early.
    fn wanted(&self) -> u64 {
        if self.out.count_only() {
            return self.out.count_wanted().unwrap_or(u64::MAX);
        }
        self.p
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.emitted).max(1))
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
            self.emitted += rows;
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
    /// they were claimed, when a warp-join level overflows).
    fn run(
        &mut self,
        d: usize,
        parents: DevSlice,
        n: u64,
        capacity: u64,
        count_only: bool,
        stop_at: u64,
    ) -> Result<(u64, u64), MatchError> {
        let width = self.layout.width;
        let lp = &self.levels[d];
        let dev = self.p.dev;
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
        let (counts, sums) = self.scratch(n as usize)?;
        let scratch = self.p.arena.scratch.get();
        let space = self.p.arena.space.get();
        if lp.warp {
            dev.zero_bytes(space, self.claimed.offset, 24)?;
            let mut args = ExtendWarpArgs {
                rows: parents,
                parents: n,
                claimed: self.claimed.part(8, 0, 3).slice,
                out: out_slice,
                capacity,
                stop_at,
                budget_ns: self.budget_ns(),
                ..self.warp_args(lp)
            };
            let mut warps = n;
            if self.p.segment > 0 {
                // Long lists are cut into segments that warps take in turn.
                dev.launch(
                    &Launch::PivotSegments(PivotSegmentsArgs {
                        a: args,
                        out: counts.part(8, 0, n as usize).slice,
                    }),
                    n,
                )?;
                scan(dev, counts, sums)?;
                warps = n.clamp(SEGMENT_WARPS, MAX_PARENTS);
                args.segments = counts.slice;
                args.warps = warps;
            }
            dev.launch(&Launch::ExtendWarp(args), warps)?;
            // The total, the start time, whether the time limit stopped it: one read.
            let c: Vec<u64> = read(dev, space, self.claimed.offset, 3)?;
            if c[2] != 0 {
                self.out.time_out();
            }
            return Ok((c[0], c[0].min(capacity)));
        }
        // Count, scan on the device, read the total, write.
        let items = n as usize;
        dev.zero_bytes(scratch, counts.offset, counts.bytes(8))?;
        let mut args = ExtendArgs {
            step: StepArgs {
                checks: lp.checks,
                nodes: self.layout.nodes as u32,
                ..lp.general.step
            },
            rows: parents,
            width: width as u64,
            counts: counts.part(8, 0, items).slice,
            ..lp.general
        };
        dev.launch(&Launch::CountExtensions(args), n)?;
        scan(dev, counts, sums)?;
        let total = read::<D, u64>(dev, scratch, counts.offset + items * 8, 1)?[0];
        if count_only || total == 0 || total > capacity {
            return Ok((total, 0));
        }
        args.offsets = counts.slice;
        args.out = out_slice;
        dev.launch(&Launch::WriteExtensions(args), n)?;
        Ok((total, total))
    }
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

/// Rows `start..end` of `rows` (rows of `width` `u32`s).
fn rows_part(rows: DevSlice, width: u64, start: u64, end: u64) -> DevSlice {
    DevSlice {
        ptr: rows.ptr + start * width * 4,
        len: (end - start) * width,
    }
}
