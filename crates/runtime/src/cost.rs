//! `--engine auto`'s choice per query: a cost model that estimates, before anything runs, the time
//! of `dfs` on this machine's CPU threads and of the device pipeline, from the plan and the data
//! graph's degree statistics, and picks the faster.
//!
//! **The query's shape.** [`QueryShape`] walks the plan order (leaves last, as `dfs` matches them)
//! and estimates the partial matches of every level: the start node's candidates, then per level
//! the expansion along the cheapest edge to an earlier node (the data's mean fan-out of that
//! relation and direction; for the second and later expansions out of one node along the same
//! relation, the ratio of the next degree moment, `Σd^(j+1) / Σd^j`, so that stars on hubs grow
//! as they do on skewed graphs), times the chance of every other edge to an earlier node (the
//! relation's density) and of the node's label. Estimated candidates per query node bound the
//! candidate space that `dfs` builds.
//!
//! **The two times.** `dfs`: a fixed cost, the candidate space (candidates and candidate edges),
//! and the partial matches it grows: the levels before its leaves, whose groups it counts as a
//! product when only a count is wanted (the last node is counted, not grown), spread over the
//! threads. The device: launches × launch latency plus reads × the wait of a read (both counted
//! from the pipeline's shape), plus the partial matches it materialises (every level but the last)
//! and those it counts at the last level. Rows written cost the same on both (formatting-bound).
//!
//! **The constants** ([`DeviceCosts`]) are calibrated on the H100 of `benches/gpu/h100-2026-11-23/`
//! (see [`DeviceCosts::calibrated_h100`] for each one's source) and can be refreshed from a small
//! `key = value` file written after a run on another device ([`DeviceCosts::parse`]).

use std::fmt;
use std::path::Path;

use gpsense_graph::{Csr, KnowledgeGraph};
use gpsense_planner::{EdgeLabel, Plan, PlannerStats, QueryGraph};
use thiserror::Error;

use crate::EngineKind;

pub mod fit;

/// Degree moments kept per relation: `Σ d^k` for k = 0..MOMENTS over nodes with d > 0.
const MOMENTS: usize = 5;

/// The constants of the cost model: one device and the CPU it sits beside.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCosts {
    /// What the constants were measured on (`--explain` prints it).
    pub device: String,
    /// Microseconds a device query costs whatever its shape (the query's upload, the arena, the
    /// memory check, the host's side of the pipeline).
    pub device_query_us: f64,
    /// Microseconds of one kernel launch as the host queues it.
    pub launch_us: f64,
    /// Microseconds of one read back from the device (a wait for everything queued before it).
    pub read_us: f64,
    /// Launches per query, per query node, per query edge and per edge variable (the pipeline's
    /// shape: filtering steps, candidate-edge lists, one join launch per level).
    pub launches_per_query: f64,
    pub launches_per_node: f64,
    pub launches_per_edge: f64,
    pub launches_per_edge_variable: f64,
    /// Reads per query and per query node (one per level, plus the filtering's).
    pub reads_per_query: f64,
    pub reads_per_node: f64,
    /// Nanoseconds per candidate and candidate edge the device filters (bitsets over every data
    /// node), per partial match it materialises, per match it counts at the last level without
    /// writing it, and per partial match extended along an edge variable (count, scan, write over
    /// every relation).
    pub device_space_ns: f64,
    pub device_partial_ns: f64,
    pub device_counted_ns: f64,
    pub device_variable_ns: f64,
    /// CPU threads `dfs`'s constants were measured with; the estimate scales to this machine's.
    pub cpu_threads: f64,
    /// `dfs`: microseconds per query (planning, the space's set-up), nanoseconds per candidate and
    /// candidate edge of its space, and per partial match grown (all on `cpu_threads` threads).
    pub dfs_query_us: f64,
    pub dfs_space_ns: f64,
    pub dfs_partial_ns: f64,
    /// Nanoseconds per row written (either engine: formatting dominates).
    pub row_ns: f64,
    /// The device is picked only when estimated at least this many times faster than `dfs`.
    pub margin: f64,
}

/// A constants file that cannot be used.
#[derive(Debug, Error)]
pub enum CostFileError {
    #[error("cannot read the cost file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cost file line {line}: {problem}")]
    Line { line: usize, problem: String },
    #[error("cost file: {0}")]
    Invalid(String),
}

impl DeviceCosts {
    /// Calibrated on the NVIDIA H100 80GB HBM3 of 2026-11-23 (16 CPU threads beside it), from the
    /// files of `benches/gpu/h100-2026-11-23/` (the in-process medians of `measure.sh`: `wn_*.txt`
    /// for WordNet counts, `cs_*.txt` for ConceptNet-100K rows; `gpu-check.md` for the suites),
    /// against this model's own estimates of each query (printed by `tests/cost.rs`):
    ///
    /// - Launches and reads per query: counted by the emulator (`--engine emulated --explain`) on
    ///   ConceptNet-100K queries of 3-4 nodes and 2-4 edges: 25 launches for 3 nodes and 2 edges,
    ///   +4 per edge, +3 per node, +5 per edge variable; one read per node plus one.
    /// - `device_query_us`, `read_us` (with `launch_us` taken as 5 µs, a launch's usual cost):
    ///   HPRD-200 iso (163 launches and 17 reads a query, 513.5 ms / 200 = 2.57 ms) and the two
    ///   smallest in-process queries of `cs_gpu.txt` (IsA triangles and animals sharing a place: 29
    ///   and 36 launches, 4 and 5 reads, 1.8 ms each): 1.33 ms and 25 µs.
    /// - `device_space_ns`, `device_partial_ns`: the hypernym 4- and 6-chains of `wn_gpu.txt` (2.3
    ///   and 2.9 ms: ~4·10^5 and ~5·10^5 of space, ~10^5 partial matches): 1.6 ns and 2 ns.
    /// - `device_counted_ns`: the hyponym star of `wn_gpu.txt`, 31.9 ms for ~5.8·10^8 matches
    ///   counted at the last level: 0.054 ns.
    /// - `device_variable_ns`: the WordNet queries with edge variables (`wn_gpu.txt`: triangles
    ///   19.5 ms, the 3-relation-variable path 27.7 ms, `?a hypernym ?b . ?b hypernym ?c . ?a ?r ?c`
    ///   7.4 ms) and ConceptNet's two-cycles (13.1 ms in `gpu-check.md`): after the rest, 19 to 315
    ///   ns per partial match extended along a variable; 60 ns, their middle.
    /// - `dfs_query_us`: HPRD-200 iso with `dfs`, 15.9 ms / 200 = 0.08 ms a query.
    /// - `dfs_space_ns`, `dfs_partial_ns`: `wn_dfs.txt`, the hyponym star (24.1 ms: its time is
    ///   the space, ~6·10^5, as its leaves are counted) gives 40 ns; then the hypernym 6-chain
    ///   (29.8 ms), the WordNet triangles (43.7 ms) and the 4-cycle (5.5 ms) give 60 ns a partial
    ///   match.
    /// - `row_ns`: `cs_*.txt`, 1,397,937 rows in ~650 ms on every engine.
    /// - `margin`: 1.25, so that ties (rows dominate, as ConceptNet's star: 325 against 293 ms)
    ///   stay on the CPU.
    ///
    /// `benches/gpu/h100-2026-11-23/device-costs.txt` holds the same values as a file (tested equal):
    /// the template for another device's.
    pub fn calibrated_h100() -> Self {
        DeviceCosts {
            device: "the calibrated H100".into(),
            device_query_us: 1330.0,
            launch_us: 5.0,
            read_us: 25.0,
            launches_per_query: 8.0,
            launches_per_node: 3.0,
            launches_per_edge: 4.0,
            launches_per_edge_variable: 5.0,
            reads_per_query: 1.0,
            reads_per_node: 1.0,
            device_space_ns: 1.6,
            device_partial_ns: 2.0,
            device_counted_ns: 0.054,
            device_variable_ns: 60.0,
            cpu_threads: 16.0,
            dfs_query_us: 80.0,
            dfs_space_ns: 40.0,
            dfs_partial_ns: 60.0,
            row_ns: 465.0,
            margin: 1.25,
        }
    }

    /// Reads a constants file: `key = value` lines (the field names of [`DeviceCosts`]; `device`
    /// takes text), `#` comments, blank lines. Keys left out keep the calibrated H100's values.
    pub fn parse(text: &str) -> Result<Self, CostFileError> {
        let mut costs = DeviceCosts::calibrated_h100();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |problem: String| CostFileError::Line {
                line: i + 1,
                problem,
            };
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("{line:?} is not `key = value`")))?;
            let (key, value) = (key.trim(), value.trim());
            if key == "device" {
                costs.device = value.to_owned();
                continue;
            }
            let number: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad(format!("{key}: {value:?} is not a non-negative number")))?;
            *costs
                .field(key)
                .ok_or_else(|| bad(format!("unknown key {key:?}")))? = number;
        }
        if costs.cpu_threads < 1.0 {
            return Err(CostFileError::Invalid(
                "cpu_threads must be at least 1".into(),
            ));
        }
        Ok(costs)
    }

    /// [`DeviceCosts::parse`] of a file.
    pub fn load(path: &Path) -> Result<Self, CostFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| CostFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// The numeric keys of a constants file, in the order [`DeviceCosts::to_file`] writes them.
    pub const KEYS: [&'static str; 19] = [
        "device_query_us",
        "launch_us",
        "read_us",
        "launches_per_query",
        "launches_per_node",
        "launches_per_edge",
        "launches_per_edge_variable",
        "reads_per_query",
        "reads_per_node",
        "device_space_ns",
        "device_partial_ns",
        "device_counted_ns",
        "device_variable_ns",
        "cpu_threads",
        "dfs_query_us",
        "dfs_space_ns",
        "dfs_partial_ns",
        "row_ns",
        "margin",
    ];

    /// The constants as a file [`DeviceCosts::parse`] reads back: `device`, then every key.
    pub fn to_file(&self) -> String {
        let mut copy = self.clone();
        let mut out = format!("device = {}\n", self.device);
        for key in Self::KEYS {
            if let Some(v) = copy.field(key) {
                out.push_str(&format!("{key} = {}\n", round(*v)));
            }
        }
        out
    }

    fn field(&mut self, key: &str) -> Option<&mut f64> {
        Some(match key {
            "device_query_us" => &mut self.device_query_us,
            "launch_us" => &mut self.launch_us,
            "read_us" => &mut self.read_us,
            "launches_per_query" => &mut self.launches_per_query,
            "launches_per_node" => &mut self.launches_per_node,
            "launches_per_edge" => &mut self.launches_per_edge,
            "launches_per_edge_variable" => &mut self.launches_per_edge_variable,
            "reads_per_query" => &mut self.reads_per_query,
            "reads_per_node" => &mut self.reads_per_node,
            "device_space_ns" => &mut self.device_space_ns,
            "device_variable_ns" => &mut self.device_variable_ns,
            "device_partial_ns" => &mut self.device_partial_ns,
            "device_counted_ns" => &mut self.device_counted_ns,
            "cpu_threads" => &mut self.cpu_threads,
            "dfs_query_us" => &mut self.dfs_query_us,
            "dfs_space_ns" => &mut self.dfs_space_ns,
            "dfs_partial_ns" => &mut self.dfs_partial_ns,
            "row_ns" => &mut self.row_ns,
            "margin" => &mut self.margin,
            _ => return None,
        })
    }
}

/// `v` to 4 significant digits, written plainly (constants span 0.05 ns to milliseconds).
fn round(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(3 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// Degree moments of the data graph per relation and direction, and over all relations (for edge
/// variables). O(V + E) to build, once per graph.
#[derive(Clone, Debug)]
pub struct DegreeMoments {
    out: Vec<[f64; MOMENTS]>,
    inc: Vec<[f64; MOMENTS]>,
    out_all: [f64; MOMENTS],
    inc_all: [f64; MOMENTS],
}

impl DegreeMoments {
    pub fn new(g: &KnowledgeGraph) -> Self {
        let (out, out_all) = moments(g.out(), g.relation_count());
        let (inc, inc_all) = moments(g.inc(), g.relation_count());
        DegreeMoments {
            out,
            inc,
            out_all,
            inc_all,
        }
    }

    /// `Σd^k` along `label` (all relations for an edge variable), out of (`outgoing`) or into a node.
    fn of(&self, label: EdgeLabel, outgoing: bool) -> &[f64; MOMENTS] {
        const NONE: [f64; MOMENTS] = [0.0; MOMENTS];
        let (per, all) = if outgoing {
            (&self.out, &self.out_all)
        } else {
            (&self.inc, &self.inc_all)
        };
        match label {
            EdgeLabel::Fixed(r) => per.get(r as usize).unwrap_or(&NONE),
            EdgeLabel::Variable(_) => all,
        }
    }

    /// Neighbours along `label` of a node with at least one, at its `j`-th expansion along it
    /// (j = 0: the mean; later, the size-biased ratio of the next moments).
    fn fanout(&self, label: EdgeLabel, outgoing: bool, j: usize) -> f64 {
        let m = self.of(label, outgoing);
        let j = j.min(MOMENTS - 2);
        if m[j] > 0.0 {
            m[j + 1] / m[j]
        } else {
            0.0
        }
    }

    /// Nodes with at least one edge along `label`.
    fn endpoints(&self, label: EdgeLabel, outgoing: bool) -> f64 {
        self.of(label, outgoing)[0]
    }

    /// Edges along `label`.
    fn edges(&self, label: EdgeLabel) -> f64 {
        self.of(label, true)[1]
    }
}

/// Per label (and over all labels) of one CSR direction: `Σd^k` over nodes with d > 0.
fn moments(csr: &Csr, relations: usize) -> (Vec<[f64; MOMENTS]>, [f64; MOMENTS]) {
    let mut per = vec![[0.0; MOMENTS]; relations];
    let mut all = [0.0; MOMENTS];
    let add = |m: &mut [f64; MOMENTS], d: usize| {
        let mut p = 1.0;
        for slot in m.iter_mut() {
            *slot += p;
            p *= d as f64;
        }
    };
    for v in 0..csr.node_count() as u32 {
        let (_, labels) = csr.neighbours(v);
        if !labels.is_empty() {
            add(&mut all, labels.len());
        }
        // Lists are sorted by label: each run is one relation's degree.
        for run in labels.chunk_by(|a, b| a == b) {
            if let Some(m) = per.get_mut(run[0] as usize) {
                add(m, run.len());
            }
        }
    }
    (per, all)
}

/// What the model reads off a query and its plan before anything runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryShape {
    /// Estimated partial matches after each level (leaves last); the last is the answer's size.
    pub levels: Vec<f64>,
    /// Query nodes `dfs` counts as leaf groups (degree 1, a fixed relation, not a start node).
    pub leaves: usize,
    /// Estimated candidates and candidate edges of `dfs`'s space.
    pub space: f64,
    /// Partial matches extended along an edge variable (the levels before those that have one).
    pub variable_parents: f64,
    pub nodes: usize,
    pub edges: usize,
    pub edge_variables: usize,
}

/// One query's estimates and `auto`'s pick.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoChoice {
    pub dfs_ms: f64,
    pub device_ms: f64,
    /// What the device estimate is for (the constants' device).
    pub device: String,
    /// `Dfs` or `Gpu`: what the estimates pick (with a device present).
    pub pick: EngineKind,
    /// Why, in one line (`-v`).
    pub reason: Reason,
}

/// Why `auto` picked as it did: the figures only, written out when shown (a query under `auto`
/// must not pay for formatting floats nobody reads).
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// The device picked: about `partials` partial matches outweigh its fixed cost.
    Throughput { partials: f64, fixed_ms: f64 },
    /// `dfs` picked: the device's fixed cost alone is more than `dfs`'s estimate.
    FixedCost {
        launches: f64,
        reads: f64,
        fixed_ms: f64,
        threads: usize,
    },
    /// `dfs` picked on the partial matches each grows (`leaves` counted as products by `dfs`).
    Growth {
        dfs_partials: f64,
        leaves: usize,
        device_partials: f64,
    },
    /// `dfs` picked, but in a batch the device took it from the front of the shared counts
    /// (`rank` of `of` by the estimates' ratio, device over dfs) while the CPU took the back.
    Shared { rank: usize, of: usize },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Reason::Throughput { partials, fixed_ms } => write!(
                f,
                "about {} partial matches to grow: the device's throughput outweighs its fixed {}",
                approx(partials),
                millis(fixed_ms)
            ),
            Reason::FixedCost {
                launches,
                reads,
                fixed_ms,
                threads,
            } => write!(
                f,
                "the device's fixed cost ({launches:.0} launches, {reads:.0} reads: {}) is more than \
                 dfs's on {threads} threads",
                millis(fixed_ms)
            ),
            Reason::Growth {
                dfs_partials,
                leaves,
                device_partials,
            } => {
                write!(f, "dfs grows about {} partial matches", approx(dfs_partials))?;
                if leaves > 0 {
                    write!(f, " (its {leaves} leaves counted as products)")?;
                }
                write!(f, ", the device about {}", approx(device_partials))
            }
            Reason::Shared { rank, of } => write!(
                f,
                "in a batch the CPU and the device shared the counts estimated for dfs, the CPU \
                 from the back of their ranking, the device from the front: this one ranked \
                 {rank} of {of} for the device"
            ),
        }
    }
}

impl fmt::Display for AutoChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dfs {} (estimated), gpu {} on {} -> {}",
            millis(self.dfs_ms),
            millis(self.device_ms),
            self.device,
            self.pick
        )
    }
}

fn millis(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

impl QueryShape {
    /// The shape of `q` planned as `plan` over `g` (builds the graph's moments: O(V + E)).
    pub fn new(q: &QueryGraph, plan: &Plan, g: &KnowledgeGraph, stats: &PlannerStats) -> Self {
        Walk::new(q, g, stats, &DegreeMoments::new(g)).run(plan)
    }

    /// [`QueryShape::new`] with the graph's moments already built.
    pub fn with_moments(
        q: &QueryGraph,
        plan: &Plan,
        g: &KnowledgeGraph,
        stats: &PlannerStats,
        moments: &DegreeMoments,
    ) -> Self {
        Walk::new(q, g, stats, moments).run(plan)
    }

    /// Partial matches `dfs` grows: every level of a row search; for a count, the levels before its
    /// leaves, or, without leaves, all but the last (counted, not grown), plus a step per leaf
    /// group at each complete non-leaf match.
    pub fn dfs_partials(&self, count_only: bool) -> f64 {
        let n = self.levels.len();
        if !count_only || n == 0 {
            return self.levels.iter().sum();
        }
        let grown = if self.leaves > 0 {
            n - self.leaves
        } else {
            n - 1
        };
        let before: f64 = self.levels[..grown.max(1)].iter().sum();
        let last = self.levels[grown.max(1) - 1];
        before + last * self.leaves as f64
    }

    /// Partial matches the device materialises, and those of the last level (counted there, not
    /// written, for a count). A count's leaf groups are counted on the device as products
    /// (`count_leaves`), per complete match of the other nodes, as `dfs` counts them.
    pub fn device_partials(&self, count_only: bool) -> (f64, f64) {
        if count_only && self.leaves > 0 {
            return (self.dfs_partials(true), 0.0);
        }
        match self.levels.split_last() {
            Some((last, rest)) => (rest.iter().sum(), *last),
            None => (0.0, 0.0),
        }
    }

    /// Estimated rows: the last level's partial matches, within `limit`.
    pub fn rows(&self, limit: Option<u64>) -> f64 {
        let all = self.levels.last().copied().unwrap_or(0.0);
        limit.map_or(all, |l| all.min(l as f64))
    }
}

impl DeviceCosts {
    /// Launches and reads the device pipeline makes for `s`.
    pub fn launches_and_reads(&self, s: &QueryShape) -> (f64, f64) {
        let launches = self.launches_per_query
            + self.launches_per_node * s.nodes as f64
            + self.launches_per_edge * s.edges as f64
            + self.launches_per_edge_variable * s.edge_variables as f64;
        let reads = self.reads_per_query + self.reads_per_node * s.nodes as f64;
        (launches, reads)
    }

    /// Estimated milliseconds of `dfs` on `threads` threads.
    pub fn dfs_ms(
        &self,
        s: &QueryShape,
        count_only: bool,
        limit: Option<u64>,
        threads: usize,
    ) -> f64 {
        let scale = self.cpu_threads / threads.max(1) as f64;
        let work = self.dfs_space_ns * s.space + self.dfs_partial_ns * s.dfs_partials(count_only);
        self.dfs_query_us * 1e-3 + work * 1e-6 * scale + self.rows_ms(s, count_only, limit)
    }

    /// Estimated milliseconds of the device pipeline.
    pub fn device_ms(&self, s: &QueryShape, count_only: bool, limit: Option<u64>) -> f64 {
        self.fixed_ms(s) + self.device_work_ms(s, count_only, limit)
    }

    /// The device's work on `s`, without its fixed cost.
    fn device_work_ms(&self, s: &QueryShape, count_only: bool, limit: Option<u64>) -> f64 {
        let (materialised, last) = s.device_partials(count_only);
        let last_ns = if count_only {
            self.device_counted_ns
        } else {
            self.device_partial_ns
        };
        let work = self.device_space_ns * s.space
            + self.device_partial_ns * materialised
            + last_ns * last
            + self.device_variable_ns * s.variable_parents;
        work * 1e-6 + self.rows_ms(s, count_only, limit)
    }

    /// The device's cost whatever the data: the query, its launches and reads.
    fn fixed_ms(&self, s: &QueryShape) -> f64 {
        let (launches, reads) = self.launches_and_reads(s);
        (self.device_query_us + launches * self.launch_us + reads * self.read_us) * 1e-3
    }

    fn rows_ms(&self, s: &QueryShape, count_only: bool, limit: Option<u64>) -> f64 {
        if count_only {
            0.0
        } else {
            s.rows(limit) * self.row_ns * 1e-6
        }
    }

    /// Both estimates for `s` and the pick: the device only where it is estimated at least
    /// `margin` times faster.
    pub fn choose(
        &self,
        s: &QueryShape,
        count_only: bool,
        limit: Option<u64>,
        threads: usize,
    ) -> AutoChoice {
        self.choose_with(s, count_only, limit, threads, self.fixed_ms(s))
    }

    fn choose_with(
        &self,
        s: &QueryShape,
        count_only: bool,
        limit: Option<u64>,
        threads: usize,
        fixed: f64,
    ) -> AutoChoice {
        let dfs_ms = self.dfs_ms(s, count_only, limit, threads);
        let device_ms = fixed + self.device_work_ms(s, count_only, limit);
        let gpu = device_ms * self.margin < dfs_ms;
        let (launches, reads) = self.launches_and_reads(s);
        let reason = if gpu {
            let (grown, last) = s.device_partials(count_only);
            Reason::Throughput {
                partials: grown + last,
                fixed_ms: fixed,
            }
        } else if fixed * self.margin >= dfs_ms {
            Reason::FixedCost {
                launches,
                reads,
                fixed_ms: fixed,
                threads,
            }
        } else {
            Reason::Growth {
                dfs_partials: s.dfs_partials(count_only),
                leaves: if count_only { s.leaves } else { 0 },
                device_partials: s.levels.iter().sum(),
            }
        };
        AutoChoice {
            dfs_ms,
            device_ms,
            device: self.device.clone(),
            pick: if gpu {
                EngineKind::Gpu
            } else {
                EngineKind::Dfs
            },
            reason,
        }
    }
}

impl AutoChoice {
    /// The device took this count from a batch's shared counts, ranked `rank` of `of`.
    pub fn taken_by_device(&mut self, rank: usize, of: usize) {
        self.pick = EngineKind::Gpu;
        self.reason = Reason::Shared { rank, of };
    }
}

/// `1.2e6`-style for large estimates, plain below 10,000.
fn approx(x: f64) -> String {
    if x < 1e4 {
        format!("{x:.0}")
    } else {
        format!("{x:.1e}")
    }
}

/// The level-by-level estimate of [`QueryShape::new`].
struct Walk<'a> {
    q: &'a QueryGraph,
    g: &'a KnowledgeGraph,
    stats: &'a PlannerStats,
    m: &'a DegreeMoments,
    visited: Vec<bool>,
    /// Per query node, the relations and directions it was expanded along so far (for the
    /// moment ratio of its next expansion along one of them).
    expansions: Vec<Vec<(EdgeLabel, bool)>>,
}

impl<'a> Walk<'a> {
    fn new(
        q: &'a QueryGraph,
        g: &'a KnowledgeGraph,
        stats: &'a PlannerStats,
        m: &'a DegreeMoments,
    ) -> Self {
        Walk {
            q,
            g,
            stats,
            m,
            visited: vec![false; q.nodes.len()],
            expansions: vec![Vec::new(); q.nodes.len()],
        }
    }

    fn run(mut self, plan: &Plan) -> QueryShape {
        let order = self.leaves_last(plan);
        let leaves = order.len() - order.iter().take_while(|&&(_, l)| !l).count();
        let (mut levels, mut space, mut pm) = (Vec::with_capacity(order.len()), 0.0, 1.0);
        let mut variable_parents = 0.0;
        for &(u, _) in &order {
            if self.variable_link(u) {
                variable_parents += pm;
            }
            let factor = self.expansion(u);
            pm *= factor;
            let candidates = self.frequency(u).min(pm);
            space += candidates * (1.0 + self.degree(u) as f64);
            levels.push(pm);
            self.visited[u] = true;
        }
        QueryShape {
            levels,
            leaves,
            space,
            variable_parents,
            nodes: self.q.nodes.len(),
            edges: self.q.edges.len(),
            edge_variables: self.q.edge_variables.len(),
        }
    }

    /// The plan order with `dfs`'s leaves moved to the end, each flagged.
    fn leaves_last(&self, plan: &Plan) -> Vec<(usize, bool)> {
        let starts: Vec<usize> = plan
            .components
            .iter()
            .filter_map(|r| plan.order.get(r.start).copied())
            .collect();
        let is_leaf = |u: usize| {
            let incident: Vec<_> = self
                .q
                .edges
                .iter()
                .filter(|e| e.source == u || e.target == u)
                .collect();
            incident.len() == 1
                && incident[0].source != incident[0].target
                && matches!(incident[0].label, EdgeLabel::Fixed(_))
                && !starts.contains(&u)
        };
        let (mut inner, mut leaves): (Vec<_>, Vec<_>) = plan
            .order
            .iter()
            .map(|&u| (u, is_leaf(u)))
            .partition(|&(_, l)| !l);
        inner.append(&mut leaves);
        inner
    }

    /// Whether `u` joins along an edge variable (to a matched node, or a loop).
    fn variable_link(&self, u: usize) -> bool {
        self.q.edges.iter().any(|e| {
            matches!(e.label, EdgeLabel::Variable(_))
                && ((e.source == u && (e.target == u || self.visited[e.target]))
                    || (e.target == u && self.visited[e.source]))
        })
    }

    /// Incident edges of `u` (a self-loop once).
    fn degree(&self, u: usize) -> usize {
        self.q
            .edges
            .iter()
            .filter(|e| e.source == u || e.target == u)
            .count()
    }

    /// How the partial matches grow when `u` joins: its candidates when nothing it touches is
    /// matched; else the cheapest expansion from a matched neighbour, times the chance of each other
    /// edge to a matched node (self-loops included) and of `u`'s label.
    fn expansion(&mut self, u: usize) -> f64 {
        // (edge index, matched endpoint, `u` is the edge's target: the edge leaves the matched one)
        let links: Vec<(usize, usize, bool)> = self
            .q
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                if e.source == u && e.target == u {
                    Some((i, u, true))
                } else if e.target == u && self.visited[e.source] {
                    Some((i, e.source, true))
                } else if e.source == u && self.visited[e.target] {
                    Some((i, e.target, false))
                } else {
                    None
                }
            })
            .collect();
        let grows: Vec<f64> = links
            .iter()
            .map(|&(i, w, out)| {
                if w == u {
                    f64::INFINITY
                } else {
                    self.grow(i, w, out)
                }
            })
            .collect();
        let Some(pivot) = (0..links.len())
            .filter(|&k| grows[k].is_finite())
            .min_by(|&a, &b| grows[a].total_cmp(&grows[b]))
        else {
            return self.frequency(u);
        };
        let (i, w, out) = links[pivot];
        self.expansions[w].push((self.q.edges[i].label, out));
        let mut factor = grows[pivot];
        for (k, &(i, _, _)) in links.iter().enumerate() {
            if k != pivot {
                factor *= self.density(i);
            }
        }
        factor * self.label_chance(u)
    }

    /// Neighbours along edge `i` of the matched `w` (`out`: the edge leaves `w`).
    fn grow(&self, i: usize, w: usize, out: bool) -> f64 {
        let label = self.q.edges[i].label;
        if let Some(nodes) = self.q.concept_nodes(w) {
            return self.concept_degree(nodes, label, out);
        }
        let before = self.expansions[w]
            .iter()
            .filter(|&&(l, o)| l == label && o == out)
            .count();
        self.m.fanout(label, out, before)
    }

    /// The data degree of a concept's nodes along `label`, summed.
    fn concept_degree(&self, nodes: &[u32], label: EdgeLabel, out: bool) -> f64 {
        let csr = if out { self.g.out() } else { self.g.inc() };
        let n = self.g.node_count();
        nodes
            .iter()
            .filter(|&&d| (d as usize) < n)
            .map(|&d| match label {
                EdgeLabel::Fixed(r) => csr.degree_by_label(d, r),
                EdgeLabel::Variable(_) => csr.degree(d),
            })
            .sum::<usize>() as f64
    }

    /// The chance that two matched nodes are joined by edge `i`'s relation (the relation's density
    /// between its sources and targets; for a concept endpoint, its degree over the other side).
    fn density(&self, i: usize) -> f64 {
        let e = &self.q.edges[i];
        let sources = self.m.endpoints(e.label, true).max(1.0);
        let targets = self.m.endpoints(e.label, false).max(1.0);
        let edges = self.m.edges(e.label);
        let p = match (
            self.q.concept_nodes(e.source),
            self.q.concept_nodes(e.target),
        ) {
            (Some(nodes), _) => self.concept_degree(nodes, e.label, true) / targets,
            (_, Some(nodes)) => self.concept_degree(nodes, e.label, false) / sources,
            _ => edges / (sources * targets),
        };
        p.min(1.0)
    }

    /// The chance that a neighbour has `u`'s node label (1 without one, or for a concept).
    fn label_chance(&self, u: usize) -> f64 {
        let node = &self.q.nodes[u];
        match node.label {
            Some(l) if !node.is_concept() && self.g.has_node_labels() => {
                self.stats.label_frequency(l) as f64 / self.stats.node_count().max(1) as f64
            }
            _ => 1.0,
        }
    }

    /// Candidates of `u` on their own: a concept's nodes, else the fewest of its label's nodes and
    /// each fixed relation's endpoints on its side.
    fn frequency(&self, u: usize) -> f64 {
        if let Some(nodes) = self.q.concept_nodes(u) {
            return nodes.len() as f64;
        }
        let mut best = match self.q.nodes[u].label {
            Some(l) if self.g.has_node_labels() => self.stats.label_frequency(l),
            _ => self.stats.node_count(),
        } as f64;
        for e in &self.q.edges {
            if let EdgeLabel::Fixed(_) = e.label {
                if e.source == u {
                    best = best.min(self.m.endpoints(e.label, true));
                }
                if e.target == u {
                    best = best.min(self.m.endpoints(e.label, false));
                }
            }
        }
        best
    }
}
