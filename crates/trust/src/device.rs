//! TruST on a device: the three phases as launches of the `trust_*` kernels through the runtime's
//! [`Device`] (the GPU through cudarc, or the host emulator that runs the same entry functions on
//! the CPU), with the same ranked answer as the CPU's.
//!
//! Per search (n template nodes, `nd` data nodes, the graph uploaded once per [`TrustDevice`]):
//! 1. **similarity**: the name index's exact filters pick, per fuzzy template node, the texts that
//!    can reach the threshold (on the host: an inverted index, no per-pair work); the index's
//!    texts are on the device since its first search ([`TrustDevice`] keeps them), so their ids
//!    go up in one upload, `trust_similarity` verifies them (a launch per node and chunk), and one
//!    read brings the similarities back; the host keeps each node's best text and uploads `S`;
//! 2. **one-hop**: `trust_one_hop` over the `nd x n` table in chunks of [`CHUNK`] pairs (scratch
//!    per pair; fewer pairs a chunk when their scratch would pass the budget or
//!    [`SCRATCH_BYTES`]), then one read of `OH` (the host needs it for the beam's seeds and the
//!    answer);
//! 3. **traversal**: one buffer and one upload for every level (their links and seeds, and the
//!    root branch); per level, queued without the host between them: `trust_extend` (a warp per
//!    branch keeps its best children by `ChildKey`, its lanes judging 32 candidates at once
//!    through the functions the CPU's beam calls one after another, then writes them best first),
//!    as many `trust_merge` rounds as the level needs (each merges the branches' runs in pairs,
//!    cut at the beam), and `trust_select` (a thread per child finds its place among the level's
//!    by a binary search per run, and the `beam` first write the next level's branches: the CPU's
//!    `search::select`). One read at the end brings the last beam back, and the warps' work.
//!
//! So a search makes 3 reads (plus, with a time limit, one per similarity and one-hop chunk and
//! one per level, so that the limit is seen while the device works), and its device memory is
//! checked against the memory budget (and what the device has free) before each phase allocates
//! (the index's texts in the similarity phase of the search that uploads them).

use std::sync::{Arc, Mutex, PoisonError};

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::abi::{
    DevSlice, GraphArgs, TrustExtendArgs, TrustMergeArgs, TrustOneHopArgs, TrustSelectArgs,
    TrustSimilarityArgs,
};
use gpsense_kernels::trust::{build_pattern, hop_scratch_len, BeamRuns, Scoring, PATTERN_BITS};
use gpsense_kernels::warp::LANES;
use gpsense_kernels::{Dir, GraphView, NONE};
use gpsense_runtime::device::cuda::CudaDevice;
use gpsense_runtime::device::host::HostDevice;
use gpsense_runtime::device::memory::query_budget;
use gpsense_runtime::device::{as_bytes, read, Device, DeviceError, Launch, Pod};
use gpsense_runtime::{DeviceState, Engine};

use crate::names::{fold, reaches, NameIndex};
use crate::score::{similarity_table_from, Prepared};
use crate::search::{seeds_for, Beam, Branches};
use crate::template::{NodeLabel, Template};
use crate::{Answer, Params, Phases, Stop, TraversalSpan, Trust, TrustError};

/// Work-items per launch of the similarity and one-hop kernels: each holds its own scratch
/// space, so this bounds a launch's scratch memory (about 24 MB for a template node of degree 4).
pub const CHUNK: usize = 1 << 16;

/// The most a one-hop launch's scratch may take: fewer pairs per launch past it (a template
/// node of degree 16 or more has pairs of 20 KB and more).
pub const SCRATCH_BYTES: usize = 256 << 20;

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

/// The data graph on a device, for TruST searches: its own upload ([`TrustDevice::new`]), or the
/// matching engine's ([`TrustDevice::beside`]), whose users a search joins.
pub struct TrustDevice<D: Device> {
    state: Arc<DeviceState<D>>,
    /// The graph's longest outgoing and incoming lists, which bound a branch's children.
    longest: [usize; 2],
    /// [`PLACE_WORK`], lower in tests (to merge runs on small graphs).
    pub(crate) place_work: usize,
    /// The name index's texts, uploaded by the first search and kept for the next ones.
    texts: Mutex<Option<Arc<DeviceTexts<D::Buffer>>>>,
}

/// A name index's texts on the device: its code points, then where each text ends.
struct DeviceTexts<B> {
    /// The index's [`NameIndex::fingerprint`].
    fingerprint: u64,
    buf: B,
    chars: (usize, usize),
    ends: (usize, usize),
}

impl<D: Device> TrustDevice<D> {
    /// Uploads `g` to `dev` (or maps it from pinned host memory when it does not fit).
    pub fn new(dev: D, g: &KnowledgeGraph) -> Result<Self, TrustError> {
        Self::beside(Arc::new(DeviceState::new(dev, g)?), g)
    }

    /// TruST on `state`, which holds `g` on its device already (the matching engine's, as
    /// [`Engine::gpu`] and [`Engine::emulated`] give it): the graph is not uploaded again, and
    /// each search is one of the state's users beside the matching queries.
    pub fn beside(state: Arc<DeviceState<D>>, g: &KnowledgeGraph) -> Result<Self, TrustError> {
        if state.graph().nodes != g.node_count() {
            return Err(TrustError::Device(DeviceError::Fault(format!(
                "the device holds a graph of {} nodes, TruST's has {} (a bug in gpsense)",
                state.graph().nodes,
                g.node_count()
            ))));
        }
        let longest = |adj: &gpsense_graph::Csr| {
            let nodes = 0..g.node_count() as u32;
            nodes.map(|v| adj.degree(v)).max().unwrap_or(0)
        };
        let longest = [longest(g.out()), longest(g.inc())];
        Ok(TrustDevice {
            state,
            longest,
            place_work: PLACE_WORK,
            texts: Mutex::new(None),
        })
    }

    /// The device and the graph on it, shared with the matching engine when made
    /// [`TrustDevice::beside`] it.
    pub fn state(&self) -> &Arc<DeviceState<D>> {
        &self.state
    }

    pub(crate) fn dev(&self) -> &D {
        self.state.device()
    }

    /// `index`'s texts on the device: uploaded by the first search that needs them and kept (a
    /// search with another index replaces them), so a search uploads only its candidates' ids.
    /// `fits` is asked first whether the bytes an upload takes (0 when they are kept) fit the
    /// search's budget.
    fn texts(
        &self,
        index: &NameIndex,
        fits: impl FnOnce(u64) -> Result<(), TrustError>,
    ) -> Result<Arc<DeviceTexts<D::Buffer>>, TrustError> {
        let fingerprint = index.fingerprint();
        let mut kept = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(texts) = kept.as_ref().filter(|t| t.fingerprint == fingerprint) {
            fits(0)?;
            return Ok(texts.clone());
        }
        let (chars, ends) = index.texts();
        let mut pack = Pack::default();
        let (chars, ends) = (pack.put(chars), pack.put(ends));
        fits(pack.bytes.len() as u64)?;
        // The old texts go first: both might not fit.
        *kept = None;
        let buf = pack.upload(self.dev())?;
        let texts = Arc::new(DeviceTexts {
            fingerprint,
            buf,
            chars,
            ends,
        });
        *kept = Some(texts.clone());
        Ok(texts)
    }

    /// What the device is.
    pub fn describe(&self) -> String {
        self.dev().describe()
    }

    /// The device itself (its counters, free memory).
    pub fn device(&self) -> &D {
        self.dev()
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
    let gpu = || {
        let dev = gpsense_runtime::self_check(CudaDevice::open()?)?;
        Ok(Arc::new(DeviceState::new(dev, g)?))
    };
    let emulated = || Ok(Arc::new(DeviceState::new(HostDevice::from_env(), g)?));
    open_with(engine, g, gpu, emulated)
}

/// As [`open`], on the device `matching` opens for its own queries (the same GPU state, or the
/// same emulator): the graph is uploaded once for both, and TruST's searches join the matching
/// queries' users (a query refused for memory waits for a search, and a search for them).
/// `matching` must run on TruST's graph (not on a compressed one).
pub fn open_beside(engine: TrustEngine, matching: &Engine) -> Result<Opened, TrustError> {
    let gpu = || matching.gpu().map_err(TrustError::Device);
    let emulated = || matching.emulated().map_err(TrustError::Device);
    open_with(engine, matching.graph(), gpu, emulated)
}

fn open_with(
    engine: TrustEngine,
    g: &KnowledgeGraph,
    gpu: impl FnOnce() -> Result<Arc<DeviceState<CudaDevice>>, TrustError>,
    emulated: impl FnOnce() -> Result<Arc<DeviceState<HostDevice>>, TrustError>,
) -> Result<Opened, TrustError> {
    let gpu = || TrustDevice::beside(gpu()?, g);
    Ok(match engine {
        TrustEngine::Cpu => Opened::Cpu { fallback: None },
        TrustEngine::Emulated => Opened::Emulated(Box::new(TrustDevice::beside(emulated()?, g)?)),
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
        let free = device.dev().free_memory()?;
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
        self.device.dev()
    }

    fn graph(&self) -> GraphArgs {
        self.device.state.graph().args(self.device.dev())
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
        pack.upload(self.dev())
    }
}

/// Arrays packed into one upload, each 16-byte aligned: `(byte offset, elements)` per array.
#[derive(Default)]
struct Pack {
    bytes: Vec<u8>,
}

impl Pack {
    /// A buffer holding the pack's bytes (one allocation, one upload).
    fn upload<D: Device>(&self, dev: &D) -> Result<D::Buffer, TrustError> {
        let buf = dev.alloc_zeroed(self.bytes.len())?;
        dev.write_bytes(&buf, 0, &self.bytes)?;
        Ok(buf)
    }

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
        let mut pack = Pack::default();
        let dirs: Vec<u32> = p.dirs.iter().map(|&d| (d == Dir::In) as u32).collect();
        let tpl = [
            pack.put(&p.offsets),
            pack.put(&p.others),
            pack.put(&dirs),
            pack.put(&p.relations),
        ];
        let oh_bytes = items * 4;
        // A pair's scratch grows as the cube of the template's largest degree (4 KB at 8, 128 KB
        // at 32): chunks are cut to what the budget leaves, and to `SCRATCH_BYTES`.
        let per_item = (fl + ul) * 4;
        let left = self.budget.saturating_sub(self.tables) as usize;
        let left = left.saturating_sub(pack.bytes.len() + oh_bytes);
        let chunk = CHUNK
            .min(items.max(1))
            .min((left.min(SCRATCH_BYTES) / per_item).max(1));
        let scratch = (chunk * fl * 4, chunk * ul * 4);
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
        let t = Traversal::plan(beam, self.device.longest, self.device.place_work);
        self.fits("the beam search", 4 * t.words as u64)?;
        let dev = self.dev();
        let buf = dev.alloc_zeroed(4 * t.words)?;
        dev.write_bytes(&buf, 0, as_bytes(&t.upload))?;
        let timed = stop.deadline.is_some() || stop.cancel.is_some();
        let mut done = 0;
        for level in 0..t.levels.len() {
            if stop.hit() {
                break;
            }
            self.queue_level(beam, &t, &buf, level)?;
            done += 1;
            if timed {
                // Wait for the level, so that the time limit is seen while the device works.
                read::<D, u32>(self.dev(), &buf, 4 * t.halves[done % 2].live, 1)?;
            }
        }
        // One read: the levels' work, and the beam the last level left.
        let end = t.halves[done % 2].end;
        let got: Vec<u32> = read(self.dev(), &buf, 4 * t.work, end - t.work)?;
        for level in 0..done {
            let word = |k: usize| u64::from(got[4 * level + k]);
            self.span.judged += word(0) | word(1) << 32;
            self.span.rounds += word(2) | word(3) << 32;
        }
        self.span.levels += done as u64;
        Ok(t.halves[done % 2].branches(&got, t.work, width_of(beam)))
    }
}

/// The traversal's one buffer, in `u32` words (each array 16-byte aligned): every level's links and
/// seeds; per level its two `u64` work maxima; two halves of branches (a level reads one, its
/// `trust_select` writes the other); the level's children twice (the warps' rooms, then runs best
/// first, merged back and forth between the two), with their runs' lengths; the lanes' staging
/// slots. Sized for the most branches and children any level can have.
struct Traversal {
    levels: Vec<LevelPlan>,
    work: usize,
    halves: [Half; 2],
    /// Two regions of four arrays (resemblances, scores, parents, nodes) and their runs' lengths.
    runs: [([usize; 4], usize); 2],
    stage: usize,
    words: usize,
    /// The buffer's start, uploaded once: the links, the seeds and the root branch.
    upload: Vec<u32>,
}

/// One level: the template node it matches, the children a branch may keep, the most branches it
/// can grow, the merge rounds before its children are placed, and where its links (three words
/// each) and seeds are.
struct LevelPlan {
    node: usize,
    rooms: usize,
    branches: usize,
    rounds: usize,
    links: (usize, usize),
    seeds: (usize, usize),
}

impl LevelPlan {
    /// Before merge round `k` (and after the last): the most runs, and the children a run holds.
    fn runs(&self, k: usize, beam: usize) -> (usize, usize) {
        let stride = (0..k).fold(self.rooms, |s, _| beam.min(2 * s));
        (self.branches.div_ceil(1 << k), stride)
    }
}

/// The most work `trust_select` may take per level, in binary searches (a child placed searches
/// every other run): the level's runs are merged in pairs until under it.
pub(crate) const PLACE_WORK: usize = 1 << 16;

/// A beam of branches in the buffer: its size (one word), then scores, resemblances and rows, room
/// for `capacity` branches.
#[derive(Clone, Copy)]
struct Half {
    capacity: usize,
    live: usize,
    scores: usize,
    resembling: usize,
    rows: usize,
    end: usize,
}

/// A running position in words, each array starting 16-byte aligned.
struct Words(usize);

impl Words {
    fn take(&mut self, words: usize) -> usize {
        let at = self.0.next_multiple_of(4);
        self.0 = at + words;
        at
    }
}

impl Traversal {
    fn plan(beam: &Beam, longest: [usize; 2], place_work: usize) -> Traversal {
        let width = width_of(beam);
        let mut at = Words(0);
        let mut input = Vec::new();
        let mut put = |at: &mut Words, data: &[u32]| {
            let start = at.take(data.len());
            input.resize(start, 0);
            input.extend_from_slice(data);
            (start, data.len())
        };
        let mut levels = Vec::with_capacity(width);
        let (mut branches, mut most_branches, mut most_children) = (1, 1, 0);
        for level in 0..width {
            let node = beam.plan.order[level];
            let links: Vec<u32> = beam.plan.links[level]
                .iter()
                .flat_map(|l| [l.other, (l.dir == Dir::In) as u32, l.relation])
                .collect();
            let seeds = seeds_for(beam.plan, level, beam.oh, beam.sim, beam.beam);
            let mut lp = LevelPlan {
                node,
                rooms: rooms(beam, level, longest),
                branches,
                rounds: 0,
                links: put(&mut at, &links),
                seeds: put(&mut at, &seeds),
            };
            let placed = beam.beam.min(branches * lp.rooms);
            loop {
                let (runs, stride) = lp.runs(lp.rounds, beam.beam);
                most_children = most_children.max(runs * stride);
                if runs <= 1 || runs * placed <= place_work {
                    break;
                }
                lp.rounds += 1;
            }
            branches = placed;
            most_branches = most_branches.max(branches);
            levels.push(lp);
        }
        let work = at.take(4 * width);
        let half = |at: &mut Words| {
            let live = at.take(1);
            let scores = at.take(most_branches);
            let resembling = at.take(most_branches);
            let rows = at.take(most_branches * width);
            Half {
                capacity: most_branches,
                live,
                scores,
                resembling,
                rows,
                end: at.0,
            }
        };
        let halves = [half(&mut at), half(&mut at)];
        let region = |at: &mut Words| {
            let arrays = [0; 4].map(|_| at.take(most_children));
            (arrays, at.take(most_branches))
        };
        let runs = [region(&mut at), region(&mut at)];
        let stage = at.take(most_branches * 3 * LANES as usize);
        // The root: one branch, nothing matched, scored 0 (zeros but its row and size).
        let root = halves[0];
        input.resize(root.rows, 0);
        input.resize(root.rows + width, NONE);
        input[root.live] = 1;
        Traversal {
            levels,
            work,
            halves,
            runs,
            stage,
            words: at.0,
            upload: input,
        }
    }
}

impl Half {
    /// The branches this half holds, from `got` (words read from word `from` of the buffer).
    fn branches(&self, got: &[u32], from: usize, width: usize) -> Branches {
        let words = |at: usize, len: usize| &got[at - from..at - from + len];
        // The device's count, held to what the half holds (a faulty device never indexes past it).
        let live = (got[self.live - from] as usize).min(self.capacity);
        Branches {
            rows: words(self.rows, live * width).to_vec(),
            scores: words(self.scores, live)
                .iter()
                .map(|&w| f32::from_bits(w))
                .collect(),
            resembling: words(self.resembling, live).to_vec(),
            width,
        }
    }
}

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
        // The index's texts stay on the device; a search sends its candidates' ids: job j's item
        // i is `ids[first[j] + i]`.
        let ids: Vec<u32> = jobs
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        let longest = ids.iter().map(|&k| index.text_len(k)).max().unwrap_or(0);
        let mut pack = Pack::default();
        let ids_at = pack.put(&ids);
        let queries: Vec<(usize, usize)> = jobs.iter().map(|(q, _)| pack.put(q)).collect();
        // A name the bit-parallel distance takes goes with its pattern; a longer one needs a
        // dynamic programme's row per text.
        let patterns: Vec<Option<[(usize, usize); 3]>> = jobs
            .iter()
            .map(|(q, _)| {
                (q.len() <= PATTERN_BITS).then(|| {
                    let (mut ascii, mut chars, mut masks) = ([0u64; 128], [0u32; 64], [0u64; 64]);
                    let others = build_pattern(q, &mut ascii, &mut chars, &mut masks);
                    [
                        pack.put(&ascii),
                        pack.put(&chars[..others]),
                        pack.put(&masks[..others]),
                    ]
                })
            })
            .collect();
        let row_len = 2 * (longest + 1);
        let chunk = CHUNK.min(total);
        let long = jobs.iter().any(|(q, _)| q.len() > PATTERN_BITS);
        let scratch_words = if long { chunk * row_len } else { 0 };
        let need = (pack.bytes.len() + scratch_words * 4 + total * 4) as u64;
        // Their upload, when the device does not hold them yet, counts in the phase's bytes.
        let texts = self.device.texts(index, |upload| {
            self.fits("the name similarities", need.saturating_add(upload))
        })?;
        let dev = self.dev();
        let input = self.put(&pack)?;
        let scratch = if long {
            Some(dev.alloc_zeroed(scratch_words * 4)?)
        } else {
            None
        };
        let out = dev.alloc_zeroed(total * 4)?;
        let base = dev.address(&input);
        let out_slice = DevSlice {
            ptr: dev.address(&out),
            len: total as u64,
        };
        let all_ids = at(base, ids_at);
        let on_device = dev.address(&texts.buf);
        let (chars, ends) = (at(on_device, texts.chars), at(on_device, texts.ends));
        let timed = stop.deadline.is_some() || stop.cancel.is_some();
        let mut first = 0;
        for (((_, job_ids), query), pattern) in jobs.iter().zip(&queries).zip(&patterns) {
            let n = job_ids.len();
            let [ascii, other_chars, other_masks] =
                pattern.map_or([DevSlice::default(); 3], |p| p.map(|a| at(base, a)));
            for (s, e) in chunks(n, chunk) {
                if stop.hit() {
                    break;
                }
                let scratch = match (&scratch, pattern) {
                    (Some(b), None) => DevSlice {
                        ptr: dev.address(b),
                        len: ((e - s) * row_len) as u64,
                    },
                    _ => DevSlice::default(),
                };
                let args = TrustSimilarityArgs {
                    query: at(base, *query),
                    ids: all_ids,
                    chars,
                    ends,
                    threshold,
                    _pad: 0,
                    ascii,
                    other_chars,
                    other_masks,
                    scratch,
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

    /// Queues level `level`: `trust_extend` over the branches of one half, its children merged
    /// in pairs of runs its rounds times (`trust_merge`), then `trust_select` writing the next
    /// beam to the other half.
    fn queue_level(
        &self,
        beam: &Beam,
        t: &Traversal,
        buf: &D::Buffer,
        level: usize,
    ) -> Result<(), TrustError> {
        let dev = self.dev();
        let lp = &t.levels[level];
        let (from, to) = (t.halves[level % 2], t.halves[(level + 1) % 2]);
        let width = width_of(beam);
        let (n, keep) = (lp.branches, lp.rooms);
        let base = dev.address(buf);
        let words = |at: usize, len: usize| DevSlice {
            ptr: base + 4 * at as u64,
            len: len as u64,
        };
        // Region `k % 2` holds the runs before merge round `k`.
        let runs = |k: usize| {
            let ((arrays, lens), (count, stride)) = (t.runs[k % 2], lp.runs(k, beam.beam));
            let [resembling, scores, parents, nodes] = arrays.map(|at| words(at, count * stride));
            BeamRuns {
                resembling,
                scores,
                parents,
                nodes,
                lens: words(lens, count),
                stride: stride as u64,
            }
        };
        let tables = (width * beam.g.node_count()) as u64;
        let table = |b: &Option<D::Buffer>| DevSlice {
            ptr: dev.address(b.as_ref().expect("tables on the device")),
            len: tables,
        };
        // The warps' rooms are the other region's first three arrays (free until the merges).
        let [rooms_nodes, rooms_scores, rooms_resembles, _] =
            t.runs[1].0.map(|at| words(at, n * keep));
        let live = words(from.live, 1);
        let extend = TrustExtendArgs {
            graph: self.graph(),
            rows: words(from.rows, n * width),
            scores: words(from.scores, n),
            resembling: words(from.resembling, n),
            live,
            width: width as u64,
            node: lp.node as u32,
            _pad: 0,
            links: words(lp.links.0, lp.links.1 / 3),
            seeds: words(lp.seeds.0, lp.seeds.1),
            oh: table(&self.oh),
            sim: table(&self.sim),
            alpha: beam.scoring.alpha,
            relation_weight: beam.scoring.relation_weight,
            keep: keep as u64,
            rooms_nodes,
            rooms_scores,
            rooms_resembles,
            out: runs(0),
            stage: words(t.stage, n * 3 * LANES as usize),
            // Two `u64`s: the length is in elements.
            work: words(t.work + 4 * level, 2),
        };
        dev.launch(&Launch::TrustExtend(extend), n as u64)?;
        for k in 0..lp.rounds {
            let merge = TrustMergeArgs {
                live,
                span: 1 << k,
                beam: beam.beam as u64,
                runs: runs(k),
                merged: runs(k + 1),
            };
            let (count, stride) = lp.runs(k, beam.beam);
            dev.launch(&Launch::TrustMerge(merge), (count * stride).max(1) as u64)?;
        }
        let next = beam.beam.min(n * keep);
        let select = TrustSelectArgs {
            rows: extend.rows,
            live,
            span: 1 << lp.rounds,
            width: width as u64,
            node: lp.node as u32,
            _pad: 0,
            beam: beam.beam as u64,
            runs: runs(lp.rounds),
            next_rows: words(to.rows, next * width),
            next_scores: words(to.scores, next),
            next_resembling: words(to.resembling, next),
            next_live: words(to.live, 1),
        };
        let (count, stride) = lp.runs(lp.rounds, beam.beam);
        // Thread 0 writes the next beam's size, even when no branch has a room.
        dev.launch(&Launch::TrustSelect(select), (count * stride).max(1) as u64)?;
        Ok(())
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
