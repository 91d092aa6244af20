//! TruST on a device: the three phases as launches of the `trust_*` kernels through the runtime's
//! [`Device`] (the GPU through cudarc, or the host emulator that runs the same entry functions on
//! the CPU), with the same ranked answer as the CPU's.
//!
//! Per search (n template nodes, `nd` data nodes, the graph uploaded once per [`TrustDevice`]):
//! 1. **similarity**: the name index's exact filters pick, per fuzzy template node, the texts that
//!    can reach the threshold (on the host: an inverted index, no per-pair work); their code points
//!    go up in one upload, `trust_similarity` verifies them (a launch per node and chunk), and one
//!    read brings the similarities back; the host keeps each node's best text and uploads `S`;
//! 2. **one-hop**: `trust_one_hop` over the `nd x n` table in chunks of [`CHUNK`] pairs (scratch
//!    per pair), then one read of `OH` (the host needs it for the beam's seeds and the answer);
//! 3. **traversal**: per level, one upload (branches, their scores, the level's links and seeds),
//!    one `trust_extend` launch (a warp per branch keeps its best `beam` children by `ChildKey`,
//!    its lanes judging 32 candidates at once through the functions the CPU's beam calls one after
//!    another), one read of the children; the host merges them as the CPU does
//!    (`search::select`). Its buffers are allocated once, for a full beam.
//!
//! So a search makes 1 + n reads (plus one per one-hop chunk with a time limit, so that the limit
//! is seen while the device works), and its device memory is checked against the memory budget
//! (and what the device has free) before each phase allocates.

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::abi::{
    DevSlice, GraphArgs, TrustExtendArgs, TrustOneHopArgs, TrustSimilarityArgs,
};
use gpsense_kernels::trust::{hop_scratch_len, Scoring};
use gpsense_kernels::warp::LANES;
use gpsense_kernels::{Dir, GraphView};
use gpsense_runtime::device::cuda::CudaDevice;
use gpsense_runtime::device::host::HostDevice;
use gpsense_runtime::device::memory::query_budget;
use gpsense_runtime::device::{as_bytes, read, Device, DeviceError, Launch, Pod};
use gpsense_runtime::DeviceGraph;

use crate::names::{fold, reaches, NameIndex};
use crate::score::{similarity_table_from, Prepared};
use crate::search::{seeds_for, select, Beam, Branches, Child};
use crate::template::{NodeLabel, Template};
use crate::{Answer, Params, Phases, Stop, TraversalSpan, Trust, TrustError};

/// Work-items per launch of the similarity and one-hop kernels: each holds its own scratch
/// space, so this bounds a launch's scratch memory (about 24 MB for a template node of degree 4).
pub const CHUNK: usize = 1 << 16;

/// Where `gpsense trust --engine` runs the search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrustEngine {
    /// The GPU when a driver and a device are found (and pass the runtime's self-check), else the
    /// CPU.
    #[default]
    Auto,
    /// The CPU executor (rayon over the kernel bodies).
    Cpu,
    /// An NVIDIA GPU; an error without one.
    Gpu,
    /// The device pipeline with every launch run on the CPU by the host emulator.
    Emulated,
}

impl std::str::FromStr for TrustEngine {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(TrustEngine::Auto),
            "cpu" => Ok(TrustEngine::Cpu),
            "gpu" => Ok(TrustEngine::Gpu),
            "emulated" => Ok(TrustEngine::Emulated),
            other => Err(format!(
                "unknown TruST engine {other:?}: expected auto, cpu, gpu or emulated"
            )),
        }
    }
}

/// The data graph on a device, for TruST searches.
pub struct TrustDevice<D: Device> {
    pub(crate) dev: D,
    graph: DeviceGraph<D>,
    /// The graph's longest outgoing and incoming lists, which bound a branch's children.
    longest: [usize; 2],
}

impl<D: Device> TrustDevice<D> {
    /// Uploads `g` to `dev` (or maps it from pinned host memory when it does not fit).
    pub fn new(dev: D, g: &KnowledgeGraph) -> Result<Self, TrustError> {
        let graph = DeviceGraph::new(&dev, g)?;
        let longest = |adj: &gpsense_graph::Csr| {
            let nodes = 0..g.node_count() as u32;
            nodes.map(|v| adj.degree(v)).max().unwrap_or(0)
        };
        let longest = [longest(g.out()), longest(g.inc())];
        Ok(TrustDevice {
            dev,
            graph,
            longest,
        })
    }

    /// What the device is.
    pub fn describe(&self) -> String {
        self.dev.describe()
    }

    /// The device itself (its counters, free memory).
    pub fn device(&self) -> &D {
        &self.dev
    }
}

/// The device [`open`] found for an engine choice.
pub enum Opened {
    Cpu {
        /// Why `auto` runs on the CPU (no device: the driver's or the self-check's reason).
        fallback: Option<String>,
    },
    Gpu(Box<TrustDevice<CudaDevice>>),
    Emulated(Box<TrustDevice<HostDevice>>),
}

impl Opened {
    /// The search on what was opened: the CPU, or the device. With `auto`, a device that fails
    /// during the search (a fault, not a bad query) is answered again on the CPU, and the answer
    /// says why ([`Searched::fell_back`]).
    pub fn search(
        &self,
        trust: &Trust,
        t: &Template,
        params: &Params,
        auto: bool,
    ) -> Result<Searched, TrustError> {
        let on_device = match self {
            Opened::Cpu { .. } => None,
            Opened::Gpu(d) => Some(trust.search_on(d, t, params)),
            Opened::Emulated(d) => Some(trust.search_on(d, t, params)),
        };
        let (answer, fell_back) = match on_device {
            None => (trust.search(t, params)?, None),
            Some(Err(TrustError::Device(why))) if auto => {
                (trust.search(t, params)?, Some(why.to_string()))
            }
            Some(other) => (other?, None),
        };
        Ok(Searched { answer, fell_back })
    }
}

/// A search's answer, and why the CPU gave it when a device failed during the search.
#[derive(Debug)]
pub struct Searched {
    pub answer: Answer,
    pub fell_back: Option<String>,
}

/// Opens what `engine` asks for on `g`: the GPU (checked by the runtime's self-check, then given
/// the graph), the emulator, or nothing. `gpu` without a usable GPU is an error; `auto` then
/// falls back to the CPU and says why.
pub fn open(engine: TrustEngine, g: &KnowledgeGraph) -> Result<Opened, TrustError> {
    let gpu = || -> Result<TrustDevice<CudaDevice>, TrustError> {
        let dev = gpsense_runtime::self_check(CudaDevice::open()?)?;
        TrustDevice::new(dev, g)
    };
    Ok(match engine {
        TrustEngine::Cpu => Opened::Cpu { fallback: None },
        TrustEngine::Emulated => {
            Opened::Emulated(Box::new(TrustDevice::new(HostDevice::from_env(), g)?))
        }
        TrustEngine::Gpu => Opened::Gpu(Box::new(gpu()?)),
        TrustEngine::Auto => match gpu() {
            Ok(d) => Opened::Gpu(Box::new(d)),
            Err(e) => Opened::Cpu {
                fallback: Some(e.to_string()),
            },
        },
    })
}

/// The phases on a device, within a memory budget.
pub(crate) struct OnDevice<'d, D: Device> {
    device: &'d TrustDevice<D>,
    /// Bytes a search may hold on the device at once.
    budget: u64,
    /// Bytes the search's tables hold there (`S` and `OH` while they live).
    tables: u64,
    sim: Option<D::Buffer>,
    oh: Option<D::Buffer>,
    /// What the traversal's warps did.
    pub(crate) span: TraversalSpan,
}

impl<'d, D: Device> OnDevice<'d, D> {
    pub(crate) fn new(device: &'d TrustDevice<D>, budget: Option<u64>) -> Result<Self, TrustError> {
        let free = device.dev.free_memory()?;
        Ok(OnDevice {
            device,
            budget: query_budget(budget.unwrap_or(u64::MAX), free, 0),
            tables: 0,
            sim: None,
            oh: None,
            span: TraversalSpan::default(),
        })
    }

    fn dev(&self) -> &D {
        &self.device.dev
    }

    fn graph(&self) -> GraphArgs {
        self.device.graph.args(&self.device.dev)
    }

    /// Refuses a phase whose buffers, beside the tables, would pass the budget.
    fn fits(&self, phase: &'static str, bytes: u64) -> Result<(), TrustError> {
        let total = self.tables.saturating_add(bytes);
        if total > self.budget {
            return Err(TrustError::DeviceBudget {
                phase,
                bytes: total,
                budget: self.budget,
            });
        }
        Ok(())
    }

    /// A buffer holding `pack`'s bytes (one allocation, one upload).
    fn put(&self, pack: &Pack) -> Result<D::Buffer, TrustError> {
        let buf = self.dev().alloc_zeroed(pack.bytes.len())?;
        self.dev().write_bytes(&buf, 0, &pack.bytes)?;
        Ok(buf)
    }
}

/// Arrays packed into one upload, each 16-byte aligned: `(byte offset, elements)` per array.
#[derive(Default)]
struct Pack {
    bytes: Vec<u8>,
}

impl Pack {
    fn put<T: Pod>(&mut self, data: &[T]) -> (usize, usize) {
        let at = self.bytes.len().next_multiple_of(16);
        self.bytes.resize(at, 0);
        self.bytes.extend_from_slice(as_bytes(data));
        (at, data.len())
    }
}

/// The kernel-side slice of array `(at, len)` of a buffer at device address `base`.
fn at(base: u64, (offset, len): (usize, usize)) -> DevSlice {
    DevSlice {
        ptr: base + offset as u64,
        len: len as u64,
    }
}

/// Part `start..end` of a slice of `elem`-byte elements.
fn part(s: DevSlice, elem: usize, start: usize, end: usize) -> DevSlice {
    DevSlice {
        ptr: s.ptr + (start * elem) as u64,
        len: (end - start) as u64,
    }
}

/// `chunks` of `0..items`, at most [`CHUNK`] each.
fn chunks(items: usize, chunk: usize) -> impl Iterator<Item = (usize, usize)> {
    let chunk = chunk.max(1);
    (0..items.div_ceil(chunk)).map(move |k| (k * chunk, ((k + 1) * chunk).min(items)))
}

impl<D: Device> Phases for OnDevice<'_, D> {
    fn similarity(
        &mut self,
        t: &Template,
        index: &NameIndex,
        threshold: f32,
        stop: Stop,
    ) -> Result<Vec<f32>, TrustError> {
        let nd = index.len();
        // Per fuzzy node: its folded name and the texts the index's exact filters let through.
        let jobs: Vec<(Vec<u32>, Vec<u32>)> = t
            .nodes
            .iter()
            .filter_map(|n| match &n.label {
                NodeLabel::Fuzzy(name) => {
                    let q = fold(name);
                    let ids = index.candidates(&q, threshold);
                    Some((q, ids))
                }
                NodeLabel::Any => None,
            })
            .collect();
        let scores = self.verify(&jobs, index, threshold, stop)?;
        let mut per_job = jobs.iter().zip(scores);
        let sim = similarity_table_from(t, nd, |_| {
            let Some(((_, ids), s)) = per_job.next() else {
                return Vec::new();
            };
            let texts: Vec<(u32, f32)> = ids
                .iter()
                .zip(s)
                .map(|(&k, s)| (k, s))
                .filter(|&(_, s)| reaches(s, threshold))
                .collect();
            index.best_per_node(&texts)
        });
        let bytes = (sim.len() * 4) as u64;
        self.fits("the similarity table", bytes)?;
        let buf = self.dev().alloc_zeroed(sim.len() * 4)?;
        self.dev().write_bytes(&buf, 0, as_bytes(&sim))?;
        self.sim = Some(buf);
        self.tables += bytes;
        Ok(sim)
    }

    fn one_hop(
        &mut self,
        p: &Prepared,
        _sim: &[f32],
        g: &GraphView,
        scoring: &Scoring,
        stop: Stop,
    ) -> Result<Vec<f32>, TrustError> {
        let nt = p.offsets.len() - 1;
        let items = g.node_count() * nt;
        let (fl, ul) = hop_scratch_len(p.max_degree);
        let chunk = CHUNK.min(items.max(1));
        let mut pack = Pack::default();
        let dirs: Vec<u32> = p.dirs.iter().map(|&d| (d == Dir::In) as u32).collect();
        let tpl = [
            pack.put(&p.offsets),
            pack.put(&p.others),
            pack.put(&dirs),
            pack.put(&p.relations),
        ];
        let scratch = (chunk * fl * 4, chunk * ul * 4);
        let oh_bytes = items * 4;
        let need = pack.bytes.len() + scratch.0 + scratch.1 + oh_bytes;
        self.fits("the one-hop table", need as u64)?;
        let dev = self.dev();
        let input = self.put(&pack)?;
        let scratch_f = dev.alloc_zeroed(scratch.0)?;
        let scratch_u = dev.alloc_zeroed(scratch.1)?;
        let out = dev.alloc_zeroed(oh_bytes)?;
        let base = dev.address(&input);
        let sim = dev.address(self.sim.as_ref().expect("similarity ran first"));
        let mut args = TrustOneHopArgs {
            graph: self.graph(),
            tpl_offsets: at(base, tpl[0]),
            tpl_others: at(base, tpl[1]),
            tpl_dirs: at(base, tpl[2]),
            tpl_relations: at(base, tpl[3]),
            sim: DevSlice {
                ptr: sim,
                len: items as u64,
            },
            alpha: scoring.alpha,
            relation_weight: scoring.relation_weight,
            scratch_f: DevSlice {
                ptr: dev.address(&scratch_f),
                len: (chunk * fl) as u64,
            },
            scratch_f_len: fl as u64,
            scratch_u: DevSlice {
                ptr: dev.address(&scratch_u),
                len: (chunk * ul) as u64,
            },
            scratch_u_len: ul as u64,
            first: 0,
            out: DevSlice::default(),
        };
        let table = DevSlice {
            ptr: dev.address(&out),
            len: items as u64,
        };
        let timed = stop.deadline.is_some() || stop.cancel.is_some();
        for (first, end) in chunks(items, chunk) {
            if stop.hit() {
                break;
            }
            args.first = first as u64;
            args.out = part(table, 4, first, end);
            dev.launch(&Launch::TrustOneHop(args), (end - first) as u64)?;
            if timed {
                // Wait for the chunk, so that the time limit is seen while the device works.
                read::<D, u32>(dev, &out, first * 4, 1)?;
            }
        }
        let oh: Vec<f32> = read(dev, &out, 0, items)?;
        self.oh = Some(out);
        self.tables += oh_bytes as u64;
        Ok(oh)
    }

    fn traverse(&mut self, beam: &Beam, stop: Stop) -> Result<Branches, TrustError> {
        let width = beam.plan.order.len();
        let mut bufs = self.level_buffers(beam)?;
        let mut branches = Branches::root(width);
        for level in 0..width {
            if stop.hit() {
                break;
            }
            let node = beam.plan.order[level];
            let seeds = seeds_for(beam.plan, level, beam.oh, beam.sim, beam.beam);
            let children = self.level(beam, &mut bufs, &branches, node, level, &seeds)?;
            branches = select(&branches, children, node, beam.beam);
            if branches.len() == 0 {
                break;
            }
        }
        Ok(branches)
    }
}

/// The traversal's device buffers, allocated once for every level and sized for a full beam: the
/// level's input (grown should a level's be larger), the output and the lanes' staging slots.
struct LevelBuffers<B> {
    /// Per level, the children a branch may keep: the beam, or fewer when no branch can have more.
    rooms: Vec<usize>,
    /// The input and its bytes.
    input: (B, usize),
    out: B,
    /// Staging slots, 32 per branch.
    stage: B,
}

/// `u32` words before the output's counts: the launch's two `u64` work maxima.
const WORK_WORDS: usize = 4;

impl<D: Device> OnDevice<'_, D> {
    /// `trust_similarity` over every job's candidate texts (a launch per job and chunk, one read):
    /// per job, the similarity of each of its texts.
    fn verify(
        &self,
        jobs: &[(Vec<u32>, Vec<u32>)],
        index: &NameIndex,
        threshold: f32,
        stop: Stop,
    ) -> Result<Vec<Vec<f32>>, TrustError> {
        let total: usize = jobs.iter().map(|(_, ids)| ids.len()).sum();
        if total == 0 {
            return Ok(jobs.iter().map(|_| Vec::new()).collect());
        }
        // The candidate texts, packed: job j's item i is text `first[j] + i` of the pack.
        let (mut chars, mut ends) = (Vec::new(), Vec::with_capacity(total));
        let mut longest = 0;
        for (_, ids) in jobs {
            for &k in ids {
                let text = index.text(k);
                longest = longest.max(text.len());
                chars.extend_from_slice(text);
                ends.push(chars.len() as u32);
            }
        }
        let mut pack = Pack::default();
        let (chars_at, ends_at) = (pack.put(&chars), pack.put(&ends));
        let ids: Vec<u32> = (0..total as u32).collect();
        let ids_at = pack.put(&ids);
        let queries: Vec<(usize, usize)> = jobs.iter().map(|(q, _)| pack.put(q)).collect();
        let row_len = 2 * (longest + 1);
        let chunk = CHUNK.min(total);
        let need = pack.bytes.len() + chunk * row_len * 4 + total * 4;
        self.fits("the name similarities", need as u64)?;
        let dev = self.dev();
        let input = self.put(&pack)?;
        let scratch = dev.alloc_zeroed(chunk * row_len * 4)?;
        let out = dev.alloc_zeroed(total * 4)?;
        let base = dev.address(&input);
        let out_slice = DevSlice {
            ptr: dev.address(&out),
            len: total as u64,
        };
        let all_ids = at(base, ids_at);
        let timed = stop.deadline.is_some() || stop.cancel.is_some();
        let mut first = 0;
        for ((_, job_ids), query) in jobs.iter().zip(&queries) {
            let n = job_ids.len();
            for (s, e) in chunks(n, chunk) {
                if stop.hit() {
                    break;
                }
                let args = TrustSimilarityArgs {
                    query: at(base, *query),
                    ids: all_ids,
                    chars: at(base, chars_at),
                    ends: at(base, ends_at),
                    threshold,
                    _pad: 0,
                    scratch: DevSlice {
                        ptr: dev.address(&scratch),
                        len: ((e - s) * row_len) as u64,
                    },
                    row_len: row_len as u64,
                    first: (first + s) as u64,
                    out: part(out_slice, 4, first + s, first + e),
                };
                dev.launch(&Launch::TrustSimilarity(args), (e - s) as u64)?;
                if timed {
                    // Wait for the chunk, so that the time limit is seen while the device works.
                    read::<D, u32>(dev, &out, (first + s) * 4, 1)?;
                }
            }
            first += n;
        }
        let scores: Vec<f32> = read(dev, &out, 0, total)?;
        let mut rest = &scores[..];
        Ok(jobs
            .iter()
            .map(|(_, ids)| {
                let (mine, later) = rest.split_at(ids.len());
                rest = later;
                mine.to_vec()
            })
            .collect())
    }

    /// The traversal's buffers, checked against the budget for a full beam, and each level's
    /// rooms per branch.
    fn level_buffers(&self, beam: &Beam) -> Result<LevelBuffers<D::Buffer>, TrustError> {
        let longest = self.device.longest;
        let rooms: Vec<usize> = (0..width_of(beam))
            .map(|level| rooms(beam, level, longest))
            .collect();
        // The first level grows the one empty branch; any later one up to a beam of branches.
        let n = beam.beam;
        let most = rooms.iter().enumerate();
        let most = most
            .map(|(level, r)| if level == 0 { *r } else { n * r })
            .max();
        let out_words = WORK_WORDS + n + 3 * most.unwrap_or(0);
        let stage_words = n * 3 * LANES as usize;
        // A full level's input: rows, scores, links and seeds.
        let width = width_of(beam);
        let links = beam.plan.links.iter().map(Vec::len).max().unwrap_or(0);
        // Four arrays, each aligned to 16 bytes (at most 3 words of padding).
        let input_words = n * width + n + 3 * links + n + 4 * 3;
        let bytes = 4 * (out_words + stage_words + input_words) as u64;
        self.fits("a level of the beam", bytes)?;
        let dev = self.dev();
        Ok(LevelBuffers {
            rooms,
            input: (dev.alloc_zeroed(input_words * 4)?, input_words * 4),
            out: dev.alloc_zeroed(out_words * 4)?,
            stage: dev.alloc_zeroed(stage_words * 4)?,
        })
    }

    /// One level of the beam: every branch grown by `node` on the device (one upload, one
    /// launch, one read), as children for `select`.
    fn level(
        &mut self,
        beam: &Beam,
        bufs: &mut LevelBuffers<D::Buffer>,
        branches: &Branches,
        node: usize,
        level: usize,
        seeds: &[u32],
    ) -> Result<Vec<Child>, TrustError> {
        let (n, keep) = (branches.len(), bufs.rooms[level]);
        let links: Vec<u32> = beam.plan.links[level]
            .iter()
            .flat_map(|l| [l.other, (l.dir == Dir::In) as u32, l.relation])
            .collect();
        let mut pack = Pack::default();
        let rows_at = pack.put(&branches.rows);
        let scores_at = pack.put(&branches.scores);
        let links_at = pack.put(&links);
        let seeds_at = pack.put(seeds);
        let dev = self.dev();
        if bufs.input.1 < pack.bytes.len() {
            let grown = (dev.alloc_zeroed(pack.bytes.len())?, pack.bytes.len());
            dev.release(std::mem::replace(&mut bufs.input, grown).0);
        }
        let input = &bufs.input.0;
        dev.write_bytes(input, 0, &pack.bytes)?;
        // Output: the work maxima, then per branch its count, then its `keep` nodes, scores and
        // resemblances.
        dev.zero_bytes(&bufs.out, 0, WORK_WORDS * 4)?;
        let out_words = WORK_WORDS + n + 3 * n * keep;
        let (base, ob) = (dev.address(input), dev.address(&bufs.out));
        let words = |start: usize, len: usize| DevSlice {
            ptr: ob + (start * 4) as u64,
            len: len as u64,
        };
        let tables = (width_of(beam) * beam.g.node_count()) as u64;
        let table = |b: &Option<D::Buffer>| DevSlice {
            ptr: dev.address(b.as_ref().expect("tables on the device")),
            len: tables,
        };
        let first = WORK_WORDS;
        let args = TrustExtendArgs {
            graph: self.graph(),
            rows: at(base, rows_at),
            scores: at(base, scores_at),
            width: width_of(beam) as u64,
            branches: n as u64,
            node: node as u32,
            _pad: 0,
            links: DevSlice {
                ptr: base + links_at.0 as u64,
                len: (links.len() / 3) as u64,
            },
            seeds: at(base, seeds_at),
            oh: table(&self.oh),
            sim: table(&self.sim),
            alpha: beam.scoring.alpha,
            relation_weight: beam.scoring.relation_weight,
            keep: keep as u64,
            out_counts: words(first, n),
            out_nodes: words(first + n, n * keep),
            out_scores: words(first + n + n * keep, n * keep),
            out_resembles: words(first + n + 2 * n * keep, n * keep),
            stage: DevSlice {
                ptr: dev.address(&bufs.stage),
                len: (n * 3 * LANES as usize) as u64,
            },
            work: DevSlice { ptr: ob, len: 2 },
        };
        dev.launch(&Launch::TrustExtend(args), n as u64)?;
        let got: Vec<u32> = read(dev, &bufs.out, 0, out_words)?;
        let work = |i: usize| u64::from(got[2 * i]) | u64::from(got[2 * i + 1]) << 32;
        self.span.levels += 1;
        self.span.judged += work(0);
        self.span.rounds += work(1);
        let got = &got[first..];
        let mut children = Vec::new();
        for b in 0..n {
            for i in 0..(got[b] as usize).min(keep) {
                let j = b * keep + i;
                let resembles = got[n + 2 * n * keep + j];
                children.push((
                    branches.resembling[b] + resembles,
                    f32::from_bits(got[n + n * keep + j]),
                    b as u32,
                    got[n + j],
                ));
            }
        }
        Ok(children)
    }
}

/// The children a branch can have at `level`, at most the beam: an anchored level's candidates
/// come from its links' lists (each at most the graph's longest in its direction), a seeded
/// level's from its seeds (at most the beam, at most every data node).
fn rooms(beam: &Beam, level: usize, longest: [usize; 2]) -> usize {
    let node = beam.plan.order[level] as u32;
    if !beam.plan.anchored(level) {
        return beam.beam.min(beam.g.node_count());
    }
    let links = beam.plan.links[level].iter().filter(|l| l.other != node);
    let most: usize = links.map(|l| longest[usize::from(l.dir == Dir::In)]).sum();
    most.min(beam.beam)
}

fn width_of(beam: &Beam) -> usize {
    beam.plan.order.len()
}

impl From<DeviceError> for TrustError {
    fn from(e: DeviceError) -> Self {
        TrustError::Device(e)
    }
}
