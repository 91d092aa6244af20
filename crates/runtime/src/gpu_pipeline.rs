//! The GpSense pipeline on a [`Device`]: the filtering phase and the warp-centric join as sequences
//! of kernel launches, orchestrated from the host. It runs on a CUDA device, and on the host emulator,
//! which executes every launch's threads on the CPU through the same entry functions as the PTX: the
//! tests run this exact launch sequence without a GPU.
//!
//! Host-orchestrated, launch by launch: the host keeps the candidate arrays and scans the counts
//! between a count launch and its write launch (the two-step output scheme). Fusing launches and
//! scanning on the device are later optimisations; correctness comes first.

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::abi::{
    CountWordsArgs, DevSlice, EdgeCandidatesArgs, ExtendArgs, FilterArgs, FilterNeighboursArgs,
    GraphArgs, IdentifyArgs, RefineArgs, StepArgs, WriteWordsArgs,
};
use gpsense_kernels::{bits, Dir, NONE};

use crate::device::memory::{graph_bytes, place_graph, rows_per_level, Placement};
use crate::device::{download, map_host, upload, zeros, Buf, Device, DeviceError, Launch, Pod};
use crate::filtering::{Candidates, FilterReport};
use crate::layout::{FilterSpec, Layout};
use crate::output::Output;
use crate::MatchError;

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
        let placement = place_graph(need, dev.free_memory()?);
        let put32 = |data: &[u32]| match placement {
            Placement::Device => upload(dev, data),
            Placement::HostMapped => map_host(dev, data),
        };
        let put16 = |data: &[u16]| match placement {
            Placement::Device => upload(dev, data),
            Placement::HostMapped => map_host(dev, data),
        };
        let parts = [
            put32(g.out().offsets())?,
            put32(g.out().targets())?,
            put32(g.inc().offsets())?,
            put32(g.inc().targets())?,
            put32(g.node_labels())?,
        ];
        let labels = [put16(g.out().labels())?, put16(g.inc().labels())?];
        Ok(DeviceGraph {
            parts,
            labels,
            placement,
            nodes: g.node_count(),
        })
    }

    fn args(&self, dev: &D) -> GraphArgs {
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

/// A query node's filter on the device (its buffers must outlive the launches that use them).
struct DeviceFilter<D: Device> {
    degrees: Buf<D, gpsense_kernels::filter::Need>,
    neighbour_labels: Buf<D, gpsense_kernels::filter::Need>,
    self_loops: Buf<D, u32>,
    fixed: u32,
    label: u32,
}

impl<D: Device> DeviceFilter<D> {
    fn new(dev: &D, f: &FilterSpec) -> Result<Self, DeviceError> {
        Ok(DeviceFilter {
            degrees: upload(dev, &f.degrees)?,
            neighbour_labels: upload(dev, &f.neighbour_labels)?,
            self_loops: upload(dev, &f.self_loops)?,
            fixed: f.fixed,
            label: f.label,
        })
    }

    fn args(&self, dev: &D) -> FilterArgs {
        FilterArgs {
            fixed: self.fixed,
            label: self.label,
            degrees: self.degrees.slice(dev),
            neighbour_labels: self.neighbour_labels.slice(dev),
            self_loops: self.self_loops.slice(dev),
        }
    }
}

/// Candidates during device filtering: a bitset and a sorted array per query node, on the host.
struct HostCandidates {
    stride: usize,
    sets: Vec<Vec<u32>>,
    arrays: Vec<Vec<u32>>,
}

impl HostCandidates {
    fn into_candidates(self) -> Candidates {
        Candidates {
            stride: self.stride,
            sets: self.sets.concat(),
            arrays: self.arrays,
        }
    }
}

pub struct Pipeline<'a, D: Device> {
    pub dev: &'a D,
    pub graph: &'a DeviceGraph<D>,
    pub injective: bool,
    pub lanes: usize,
    pub memory_budget: u64,
}

fn dir_code(d: Dir) -> u32 {
    match d {
        Dir::Out => 0,
        Dir::In => 1,
    }
}

impl<D: Device> Pipeline<'_, D> {
    fn g(&self) -> GraphArgs {
        self.graph.args(self.dev)
    }

    /// The filtering phase in the filtering layout's order, then `rounds` refinement rounds.
    pub fn filter(
        &self,
        layout: &Layout,
        rounds: u32,
    ) -> Result<(Candidates, FilterReport), MatchError> {
        let n = layout.nodes;
        let stride = bits::words_for(self.graph.nodes);
        let mut c = HostCandidates {
            stride,
            sets: vec![vec![0; stride]; n],
            arrays: vec![Vec::new(); n],
        };
        let filters: Vec<DeviceFilter<D>> = layout
            .filters
            .iter()
            .map(|f| DeviceFilter::new(self.dev, f))
            .collect::<Result<_, _>>()?;
        let mut has = vec![false; n];
        let mut report = FilterReport::default();
        let start = std::time::Instant::now();
        'forward: for &u in &layout.order {
            if !has[u] {
                c.sets[u] = self.identify(&filters[u], None)?;
                has[u] = true;
            }
            c.arrays[u] = self.compact(&c.sets[u])?;
            if c.arrays[u].is_empty() {
                break 'forward;
            }
            for step in layout.neighbour_steps.iter().filter(|s| s.from == u) {
                let allowed = has[step.to].then(|| c.sets[step.to].clone());
                let mark = self.mark_neighbours(
                    &c.arrays[u],
                    step.dir,
                    step.label,
                    allowed.as_deref(),
                    stride,
                )?;
                c.sets[step.to] = if has[step.to] {
                    mark
                } else {
                    self.identify(&filters[step.to], Some(&mark))?
                };
                has[step.to] = true;
            }
        }
        report.filter_time = start.elapsed();
        report.after_filter = c.arrays.iter().map(Vec::len).collect();
        let start = std::time::Instant::now();
        let complete = c.arrays.iter().all(|a| !a.is_empty());
        if complete {
            'rounds: for _ in 0..rounds {
                for &u in layout.order.iter().rev() {
                    if !layout.incident[u].is_empty() && !self.refine(layout, u, &mut c)? {
                        break 'rounds;
                    }
                }
            }
        }
        report.refine_time = start.elapsed();
        report.after_refine = c.arrays.iter().map(Vec::len).collect();
        Ok((c.into_candidates(), report))
    }

    fn identify(
        &self,
        f: &DeviceFilter<D>,
        within: Option<&[u32]>,
    ) -> Result<Vec<u32>, DeviceError> {
        let stride = bits::words_for(self.graph.nodes);
        let within_buf = upload(self.dev, within.unwrap_or(&[]))?;
        let out: Buf<D, u32> = zeros(self.dev, stride)?;
        let args = IdentifyArgs {
            graph: self.g(),
            filter: f.args(self.dev),
            within: within_buf.slice(self.dev),
            out: out.slice(self.dev),
        };
        self.dev.launch(&Launch::Identify(args), stride as u64)?;
        download(self.dev, &out)
    }

    /// Compaction: count launch, host scan, write launch.
    fn compact(&self, set: &[u32]) -> Result<Vec<u32>, DeviceError> {
        let words = upload(self.dev, set)?;
        let counts: Buf<D, u32> = zeros(self.dev, set.len())?;
        self.dev.launch(
            &Launch::CountWords(CountWordsArgs {
                words: words.slice(self.dev),
                counts: counts.slice(self.dev),
            }),
            set.len() as u64,
        )?;
        let mut offsets = download(self.dev, &counts)?;
        let total = gpsense_kernels::scan::exclusive_scan(&mut offsets) as usize;
        let offsets = upload(self.dev, &offsets)?;
        let out: Buf<D, u32> = zeros(self.dev, total)?;
        let args = WriteWordsArgs {
            words: words.slice(self.dev),
            offsets: offsets.slice(self.dev),
            out: out.slice(self.dev),
        };
        self.dev
            .launch(&Launch::WriteWords(args), set.len() as u64)?;
        download(self.dev, &out)
    }

    fn mark_neighbours(
        &self,
        candidates: &[u32],
        dir: Dir,
        label: u32,
        allowed: Option<&[u32]>,
        stride: usize,
    ) -> Result<Vec<u32>, DeviceError> {
        let cands = upload(self.dev, candidates)?;
        let allowed = upload(self.dev, allowed.unwrap_or(&[]))?;
        let mark: Buf<D, u32> = zeros(self.dev, stride)?;
        let args = FilterNeighboursArgs {
            graph: self.g(),
            candidates: cands.slice(self.dev),
            dir: dir_code(dir),
            label,
            allowed: allowed.slice(self.dev),
            mark: mark.slice(self.dev),
        };
        self.dev
            .launch(&Launch::FilterNeighbours(args), candidates.len() as u64)?;
        download(self.dev, &mark)
    }

    /// One refinement of `u`; false when its candidates ran out.
    fn refine(
        &self,
        layout: &Layout,
        u: usize,
        c: &mut HostCandidates,
    ) -> Result<bool, DeviceError> {
        let all_sets: Vec<u32> = c.sets.concat();
        let sets = upload(self.dev, &all_sets)?;
        let cands = upload(self.dev, &c.arrays[u])?;
        let incident = upload(self.dev, &layout.incident[u])?;
        let keep: Buf<D, u32> = zeros(self.dev, c.arrays[u].len())?;
        let args = RefineArgs {
            graph: self.g(),
            candidates: cands.slice(self.dev),
            incident: incident.slice(self.dev),
            sets: sets.slice(self.dev),
            stride: c.stride as u64,
            keep: keep.slice(self.dev),
        };
        self.dev
            .launch(&Launch::Refine(args), c.arrays[u].len() as u64)?;
        let keep = download(self.dev, &keep)?;
        let mut kept = Vec::with_capacity(keep.len());
        for (&v, k) in c.arrays[u].iter().zip(keep) {
            if k != 0 {
                kept.push(v);
            } else {
                c.sets[u][(v >> 5) as usize] &= !(1 << (v & 31));
            }
        }
        c.arrays[u] = kept;
        Ok(!c.arrays[u].is_empty())
    }
}

/// Edge candidates of one query edge on the device.
struct DeviceEdgeCandidates<D: Device> {
    from: usize,
    offsets_host: Vec<u64>,
    offsets: Buf<D, u64>,
    targets: Buf<D, u32>,
    labels: Buf<D, u16>,
}

/// A join level on the device.
struct DeviceLevel<'l, D: Device> {
    step: StepArgs,
    slot: u32,
    checks: Buf<D, gpsense_kernels::join::Check>,
    pivot: Option<&'l DeviceEdgeCandidates<D>>,
    from: Option<&'l Buf<D, u32>>,
}

/// Device copies of the candidates, for the join.
struct DeviceCandidates<D: Device> {
    sets: Vec<Buf<D, u32>>,
    arrays: Vec<Buf<D, u32>>,
}

impl<D: Device> Pipeline<'_, D> {
    /// The join on the device in `layout`'s order; rows go to `out`.
    pub fn join(&self, layout: &Layout, c: &Candidates, out: &Output) -> Result<u64, MatchError> {
        let dc = DeviceCandidates {
            sets: (0..layout.nodes)
                .map(|u| upload(self.dev, c.set(u)))
                .collect::<Result<_, _>>()?,
            arrays: c
                .arrays
                .iter()
                .map(|a| upload(self.dev, a))
                .collect::<Result<_, _>>()?,
        };
        let ecs = self.edge_candidates(layout, c, &dc)?;
        let edge_candidates = ecs.iter().flatten().map(|e| e.targets.len() as u64).sum();
        let levels = self.levels(layout, &dc, &ecs)?;
        let root: Buf<D, u32> = upload(self.dev, &vec![NONE; layout.width])?;
        self.level(layout, &dc, &levels, 0, root.slice(self.dev), 1, out)?;
        Ok(edge_candidates)
    }

    fn edge_candidates(
        &self,
        layout: &Layout,
        c: &Candidates,
        dc: &DeviceCandidates<D>,
    ) -> Result<Vec<Option<DeviceEdgeCandidates<D>>>, DeviceError> {
        let mut out: Vec<Option<DeviceEdgeCandidates<D>>> =
            (0..layout.edge_count).map(|_| None).collect();
        for ns in &layout.neighbour_steps {
            let n = c.arrays[ns.from].len();
            let counts: Buf<D, u32> = zeros(self.dev, n)?;
            let mut args = EdgeCandidatesArgs {
                graph: self.g(),
                from: dc.arrays[ns.from].slice(self.dev),
                dir: dir_code(ns.dir),
                label: ns.label,
                to_set: dc.sets[ns.to].slice(self.dev),
                counts: counts.slice(self.dev),
                ..Default::default()
            };
            self.dev
                .launch(&Launch::CountEdgeCandidates(args), n as u64)?;
            let offsets_host = crate::executor::offsets_of(&download(self.dev, &counts)?);
            let total = *offsets_host.last().unwrap_or(&0) as usize;
            let offsets = upload(self.dev, &offsets_host)?;
            let targets: Buf<D, u32> = zeros(self.dev, total)?;
            let labels: Buf<D, u16> = zeros(self.dev, total)?;
            args.offsets = offsets.slice(self.dev);
            args.out_targets = targets.slice(self.dev);
            args.out_labels = labels.slice(self.dev);
            self.dev
                .launch(&Launch::WriteEdgeCandidates(args), n as u64)?;
            out[ns.edge] = Some(DeviceEdgeCandidates {
                from: ns.from,
                offsets_host,
                offsets,
                targets,
                labels,
            });
        }
        Ok(out)
    }

    /// Static pivots, as the CPU kernels join chooses them: the fewest edge candidates per source.
    fn levels<'l>(
        &self,
        layout: &Layout,
        dc: &'l DeviceCandidates<D>,
        ecs: &'l [Option<DeviceEdgeCandidates<D>>],
    ) -> Result<Vec<DeviceLevel<'l, D>>, DeviceError> {
        let mut levels = Vec::with_capacity(layout.steps.len());
        for js in &layout.steps {
            let avg = |p: &u32| {
                ecs[js.edge_of_check[*p as usize]]
                    .as_ref()
                    .map_or(f64::MAX, |ec| {
                        ec.offsets_host.last().copied().unwrap_or(0) as f64
                            / (ec.offsets_host.len().max(2) - 1) as f64
                    })
            };
            let pivot = js
                .fixed_pivots
                .iter()
                .min_by(|a, b| avg(a).total_cmp(&avg(b)))
                .copied()
                .unwrap_or(js.variable_pivot);
            let pivot_ec = (pivot != NONE)
                .then(|| ecs[js.edge_of_check[pivot as usize]].as_ref())
                .flatten();
            let checks = upload(self.dev, &js.checks)?;
            let step = StepArgs {
                slot: js.slot,
                nodes: layout.nodes as u32,
                injective: self.injective as u32,
                pivot,
                checks: checks.slice(self.dev),
                candidates: dc.sets[js.node].slice(self.dev),
            };
            let from = pivot_ec.map(|ec| &dc.arrays[ec.from]);
            levels.push(DeviceLevel {
                step,
                slot: js.slot,
                checks,
                pivot: pivot_ec,
                from,
            });
        }
        Ok(levels)
    }

    #[allow(clippy::too_many_arguments)]
    fn level(
        &self,
        layout: &Layout,
        dc: &DeviceCandidates<D>,
        levels: &[DeviceLevel<D>],
        depth: usize,
        parents: DevSlice,
        n_parents: u64,
        out: &Output,
    ) -> Result<(), MatchError> {
        let width = layout.width;
        let lanes = self.lanes as u64;
        let last = depth + 1 == levels.len();
        let level = &levels[depth];
        let items = n_parents * lanes;
        let counts: Buf<D, u64> = zeros(self.dev, items as usize)?;
        let node = layout.steps[depth].node;
        let mut args = ExtendArgs {
            graph: self.g(),
            step: StepArgs {
                checks: level.checks.slice(self.dev),
                ..level.step
            },
            rows: parents,
            width: width as u64,
            lanes,
            all: dc.arrays[node].slice(self.dev),
            counts: counts.slice(self.dev),
            ..Default::default()
        };
        if let (Some(ec), Some(from)) = (level.pivot, level.from) {
            args.from = from.slice(self.dev);
            args.ec_offsets = ec.offsets.slice(self.dev);
            args.ec_targets = ec.targets.slice(self.dev);
            args.ec_labels = ec.labels.slice(self.dev);
        }
        debug_assert_eq!(level.slot as usize, depth);
        self.dev.launch(&Launch::CountExtensions(args), items)?;
        let counts_host = download(self.dev, &counts)?;
        let total: u64 = counts_host.iter().sum();
        if last && out.count_only() {
            out.add_count(total);
            return Ok(());
        }
        let budget = rows_per_level(
            self.memory_budget,
            self.dev.free_memory()?,
            width,
            self.lanes,
        );
        if total > budget {
            return self.split(
                layout,
                dc,
                levels,
                depth,
                parents,
                &counts_host,
                budget,
                out,
            );
        }
        let offsets_host = offsets_u64(&counts_host);
        let offsets = upload(self.dev, &offsets_host)?;
        let children: Buf<D, u32> = zeros(self.dev, total as usize * width)?;
        args.offsets = offsets.slice(self.dev);
        args.out = children.slice(self.dev);
        self.dev.launch(&Launch::WriteExtensions(args), items)?;
        if last {
            out.rows(&download(self.dev, &children)?, width);
            return Ok(());
        }
        if total == 0 || out.stopped() {
            return Ok(());
        }
        self.level(
            layout,
            dc,
            levels,
            depth + 1,
            children.slice(self.dev),
            total,
            out,
        )
    }

    /// Runs `parents` in consecutive batches whose extensions fit `budget` rows.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &self,
        layout: &Layout,
        dc: &DeviceCandidates<D>,
        levels: &[DeviceLevel<D>],
        depth: usize,
        parents: DevSlice,
        counts: &[u64],
        budget: u64,
        out: &Output,
    ) -> Result<(), MatchError> {
        let width = layout.width as u64;
        let per_row: Vec<u64> = counts.chunks(self.lanes).map(|c| c.iter().sum()).collect();
        if let Some(&c) = per_row.iter().find(|&&c| c > budget) {
            return Err(MatchError::MemoryBudget {
                rows: c,
                budget_rows: budget,
            });
        }
        let mut start = 0usize;
        while start < per_row.len() {
            let (mut end, mut sum) = (start + 1, per_row[start]);
            while end < per_row.len() && sum + per_row[end] <= budget {
                sum += per_row[end];
                end += 1;
            }
            let part = DevSlice {
                ptr: parents.ptr + start as u64 * width * 4,
                len: (end - start) as u64 * width,
            };
            self.level(layout, dc, levels, depth, part, (end - start) as u64, out)?;
            if out.stopped() {
                return Ok(());
            }
            start = end;
        }
        Ok(())
    }
}

fn offsets_u64(counts: &[u64]) -> Vec<u64> {
    let mut offsets = vec![0u64; counts.len() + 1];
    for (i, &c) in counts.iter().enumerate() {
        offsets[i + 1] = offsets[i] + c;
    }
    offsets
}

// Buffers of these element types cross to the device.
const _: fn() = || {
    fn pod<T: Pod>() {}
    pod::<u64>();
};
