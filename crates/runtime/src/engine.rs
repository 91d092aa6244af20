//! The query API: an [`Engine`] over one loaded graph answers many queries.

use std::time::{Duration, Instant};

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::{Adjacency, GraphView, NONE};
use gpsense_planner::{
    plan_brief, plan_with, EdgeLabel, Plan, PlannerStats, Projected, QueryEdge, QueryGraph,
};

use std::sync::{Arc, Mutex, OnceLock};

use crate::cost::{AutoChoice, DegreeMoments, DeviceCosts, QueryShape};
use crate::device::cuda::CudaDevice;
use crate::device::host::HostDevice;
use crate::device::{Device, DeviceError};
use crate::executor::Executor;
use crate::filtering::{FilterReport, Filtering, LabelIndex, NeighbourLabels};
use crate::gpu_pipeline::{DeviceGraph, DeviceReport, Pipeline};
use crate::kernel_join::KernelJoin;
use crate::layout::{DataShape, Layout};
use crate::output::{OnRows, Output, RowBatch};
use crate::search::{Context, Dag, OwnerPool, RoomPool, SearchStats};
use crate::segments::Segments;
use crate::space::{prepared_spaces, SpaceBuilder, SpacePool};
use crate::users::{own_pool, Arenas, DeviceUser, OnDevice, Users};
use crate::{EngineKind, MatchError, MatchOptions, Semantics};

#[path = "batch_engine.rs"]
mod batch;
pub use batch::{Answered, BatchPhases, BatchQuery, BatchReport, Outgrown, SHARE_AFTER};

/// A graph prepared for matching: planner statistics and the node-label index, computed once.
pub struct Engine<'g> {
    graph: &'g KnowledgeGraph,
    stats: PlannerStats,
    /// Node labels; whether every edge has its reverse (O(E) to find out, once).
    pub(crate) shape: DataShape,
    pub(crate) labels: LabelIndex,
    pub(crate) neighbour_labels: Option<NeighbourLabels>,
    /// Scratch arrays of the dfs search and candidate spaces, reused across queries.
    owners: OwnerPool,
    rooms: RoomPool,
    layouts: LayoutPool,
    spaces: SpacePool,
    /// The GPU and the graph on it, opened and uploaded on first use, then reused.
    gpu: Mutex<Option<Result<Arc<DeviceState<CudaDevice>>, DeviceError>>>,
    /// The host emulator of the GPU pipeline and its copy of the graph.
    emulator: OnceLock<Result<Arc<DeviceState<HostDevice>>, DeviceError>>,
    /// `auto`'s cost model: the graph's degree moments (built with the engine, so that a first
    /// query does not pay for them) and the device's constants (the calibrated H100's unless set).
    moments: OnceLock<DegreeMoments>,
    costs: OnceLock<DeviceCosts>,
    /// Microseconds before the device starts taking `auto`'s shared counts in a batch.
    share_after_us: std::sync::atomic::AtomicU64,
}

/// Spare layouts of the dfs engine's queries, refilled by [`Layout::refill_filters`].
type LayoutPool = crate::spares::Spares<Layout>;

/// A query's layout: lent by the engine's pool (and given back when dropped) or the query's own.
struct Lent<'p> {
    pool: Option<&'p LayoutPool>,
    layout: Layout,
}

impl std::ops::Deref for Lent<'_> {
    type Target = Layout;
    fn deref(&self) -> &Layout {
        &self.layout
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool {
            pool.give(std::mem::take(&mut self.layout));
        }
    }
}

/// What the dfs search did: partial matches grown, sibling loops cut by failing sets, leaf groups
/// counted without enumeration, pieces of work handed to idle workers.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchSummary {
    pub nodes: u64,
    pub backjumps: u64,
    pub leaf_counts: u64,
    pub splits: u64,
    /// Candidates not searched because a twin's subtree stood for theirs.
    pub twins: u64,
    /// Helpers asked for from the thread pool: none until the search has run
    /// `HELPERS_AFTER` ticks alone.
    pub helpers: u64,
}

impl From<&SearchStats> for SearchSummary {
    fn from(s: &SearchStats) -> Self {
        use std::sync::atomic::Ordering::Relaxed;
        SearchSummary {
            nodes: s.nodes.load(Relaxed),
            backjumps: s.backjumps.load(Relaxed),
            leaf_counts: s.leaf_counts.load(Relaxed),
            splits: s.splits.load(Relaxed),
            twins: s.twins.load(Relaxed),
            helpers: s.helpers.load(Relaxed),
        }
    }
}

/// Whether an NVIDIA driver library can be loaded, found out once per process (loading tries a
/// dozen file names: milliseconds that a first query choosing the GPU would pay).
fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    #[cfg(all(feature = "cuda", target_os = "linux"))]
    let look = linux_driver_present;
    // SAFETY: loading the driver library runs its initialisers, as opening the device does.
    #[cfg(all(feature = "cuda", not(target_os = "linux")))]
    let look = || unsafe { cudarc::driver::sys::is_culib_present() };
    #[cfg(not(feature = "cuda"))]
    let look = || true;
    *PRESENT.get_or_init(look)
}

/// The NVIDIA driver installs `libcuda.so.1` on Linux (`libcuda.so` is the toolkit's link to
/// it). cudarc's own search tries 34 names, about 2 ms on a machine without the driver, which a
/// first query under `auto` would wait for; these two take about 0.1 ms.
#[cfg(all(feature = "cuda", target_os = "linux"))]
fn linux_driver_present() -> bool {
    ["libcuda.so.1", "libcuda.so"].into_iter().any(|name| {
        // SAFETY: loading the driver library runs its initialisers, as opening the device does.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

/// Starts, on a thread of its own, once per process: the count of threads a parallel search
/// gets, the search for the GPU driver and the mapping of this library's code
/// (`warm::map_own_code`), so that they are done by the first query; one that needs the first
/// two before then waits. [`Engine::new`] calls it; a front end calls it first thing, so that
/// they run while the graph loads.
pub fn look_ahead() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        // Without a thread each runs on the first query that asks. The thread count first:
        // `available_parallelism` reads the cgroup's quota files, about half of what a first
        // query cost beyond a warm one.
        let _ = std::thread::Builder::new()
            .name("gpsense-look-ahead".into())
            .spawn(|| {
                pool_threads();
                driver_present();
                crate::warm::map_own_code();
            });
    });
}

/// The threads a parallel `dfs` gets, without starting rayon's global pool to ask: a first query
/// would wait for its threads to start and share the cores with them while they look for work.
/// Inside a pool, its size; outside, the global pool's default size (`RAYON_NUM_THREADS`, else the
/// cores), which a pool built with another size (`--threads`) is not.
fn pool_threads() -> usize {
    if rayon::current_thread_index().is_some() {
        return rayon::current_num_threads();
    }
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|&n| n > 0)
            .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
            .unwrap_or(1)
    })
}

/// A device with the data graph on it, and the buffers its queries reuse.
pub struct DeviceState<D: Device> {
    dev: D,
    graph: DeviceGraph<D>,
    /// The users' buffers, one set (arena) each while they run.
    arenas: Arenas<D>,
    /// The users running now: a query refused for memory while others ran waits for them.
    users: Users,
    /// Which warp-join levels cut their pivot lists into segments.
    segments: Segments,
}

/// Time per phase of one match.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    pub plan: Duration,
    pub filter: Duration,
    pub refine: Duration,
    pub edge_candidates: Duration,
    pub join: Duration,
    pub total: Duration,
}

/// What a match did: rows (or the count), whether a limit cut it short, and, for `--explain`, the
/// plan, candidate counts after each phase and time per phase.
#[derive(Clone, Debug)]
pub struct MatchReport {
    /// Rows produced (after DISTINCT and LIMIT), or matches counted: exact, in `u128` (a count
    /// past 2^128 - 1 is [`MatchError::CountOverflow`]).
    pub rows: u128,
    pub limit_reached: bool,
    /// The time limit (`MatchOptions::timeout`) stopped the match: `rows` is what was found by then.
    pub timed_out: bool,
    pub engine: EngineKind,
    /// Why `auto` ran on the CPU (no GPU: the reason), for a one-line notice.
    pub fallback: Option<String>,
    /// `auto`'s estimates for this query and its pick (before any fallback).
    pub auto: Option<AutoChoice>,
    /// The device the GPU pipeline ran on.
    pub device: Option<String>,
    pub semantics: Semantics,
    /// The filtering order (from the planner).
    pub plan: Plan,
    /// The join order, chosen after filtering from the candidate counts.
    pub join_plan: Plan,
    pub filter: FilterReport,
    /// Edge candidates collected (the kernels engine), or candidate-space edges (dfs).
    pub edge_candidates: Option<u64>,
    /// What the search did (dfs only).
    pub search: Option<SearchSummary>,
    /// Launches, reads, allocations and bytes each way (the device pipeline only).
    pub device_report: Option<DeviceReport>,
    pub times: Timings,
}

impl<'g> Engine<'g> {
    /// O(V + E): planner statistics and a node-label index.
    pub fn new(graph: &'g KnowledgeGraph) -> Self {
        let labels = if graph.has_node_labels() {
            LabelIndex::new(graph.node_labels(), graph.node_label_names().len())
        } else {
            LabelIndex::default()
        };
        let mut engine = Engine {
            graph,
            stats: PlannerStats::new(graph),
            shape: DataShape::default(),
            labels,
            neighbour_labels: None,
            owners: OwnerPool::prepared(graph.node_count()),
            rooms: RoomPool::default(),
            layouts: LayoutPool::default(),
            spaces: prepared_spaces(graph.node_count()),
            gpu: Mutex::new(None),
            emulator: OnceLock::new(),
            moments: OnceLock::from(DegreeMoments::new(graph)),
            costs: OnceLock::new(),
            share_after_us: (SHARE_AFTER.as_micros() as u64).into(),
        };
        look_ahead();
        engine.shape = DataShape::of(&engine.view());
        engine.neighbour_labels = NeighbourLabels::new(
            &engine.view(),
            graph.node_label_names().len(),
            engine.shape.symmetric,
        );
        engine.warm_up();
        engine.warm_data();
        engine
    }

    /// The GPU, opened, checked (`self_check`: known queries compared with the CPU's rows) and given
    /// the graph on first call; an error says why there is none. After a GPU failure mid-query it
    /// is opened afresh on the next call.
    pub fn gpu(&self) -> Result<Arc<DeviceState<CudaDevice>>, DeviceError> {
        let mut slot = self.gpu.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert_with(|| {
            if !driver_present() {
                return Err(DeviceError::Unavailable(
                    "no NVIDIA driver library (libcuda.so) found".into(),
                ));
            }
            let dev = self_check(CudaDevice::open()?)?;
            Ok(Arc::new(DeviceState::with_stats(
                dev,
                self.graph,
                &self.stats,
            )?))
        })
        .clone()
    }

    /// Drops the GPU state (its context and buffers) after a failure, so the next query reopens it.
    fn forget_gpu(&self) {
        *self.gpu.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn emulator(&self) -> Result<&DeviceState<HostDevice>, DeviceError> {
        let state = self.emulator.get_or_init(|| {
            DeviceState::with_stats(HostDevice::from_env(), self.graph, &self.stats).map(Arc::new)
        });
        state.as_deref().map_err(Clone::clone)
    }

    /// The emulator and its copy of the graph, made on first use (as `--engine emulated` makes
    /// it): for another user of the same device, e.g. TruST beside the matching.
    pub fn emulated(&self) -> Result<Arc<DeviceState<HostDevice>>, DeviceError> {
        self.emulator()?;
        self.emulator
            .get()
            .and_then(|s| s.as_ref().ok())
            .cloned()
            .ok_or_else(|| DeviceError::Fault("the emulator was not made".into()))
    }

    /// The engine `kind` resolves to here, and why `auto` fell back to the CPU: `auto` takes the
    /// device only where `choice` picked it and one is found.
    fn resolve(
        &self,
        kind: EngineKind,
        choice: Option<&AutoChoice>,
    ) -> (EngineKind, Option<String>) {
        match kind {
            EngineKind::Auto if choice.is_some_and(|c| c.pick == EngineKind::Dfs) => {
                (EngineKind::Dfs, None)
            }
            EngineKind::Auto => match self.gpu() {
                Ok(_) => (EngineKind::Gpu, None),
                Err(e) => (EngineKind::Dfs, Some(e.to_string())),
            },
            k => (k, None),
        }
    }

    /// Replaces the calibrated H100's constants of `auto`'s cost model (e.g. with
    /// [`DeviceCosts::load`] of a file a GPU run wrote); only before the first query needs them.
    /// Returns false (and changes nothing) when they were already in use.
    pub fn set_device_costs(&self, costs: DeviceCosts) -> bool {
        self.costs.set(costs).is_ok()
    }

    /// How long a batch under `auto` leaves the counts its estimates give to dfs to the CPU
    /// alone before the device starts taking them too (default [`SHARE_AFTER`]).
    pub fn set_share_after(&self, wait: Duration) {
        let us = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
        self.share_after_us
            .store(us, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn share_after(&self) -> Duration {
        Duration::from_micros(
            self.share_after_us
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// The constants of `auto`'s cost model.
    pub fn device_costs(&self) -> &DeviceCosts {
        self.costs.get_or_init(DeviceCosts::calibrated_h100)
    }

    /// `auto`'s estimates for `q` planned as `plan`: `dfs` on this machine's threads against the
    /// device of [`Engine::device_costs`], and the pick.
    pub fn auto_choice(
        &self,
        q: &QueryGraph,
        plan: &Plan,
        opts: &MatchOptions,
        count_only: bool,
    ) -> AutoChoice {
        let (shape, threads) = self.auto_shape(q, plan, opts);
        self.device_costs()
            .choose(&shape, count_only, opts.limit_for(q.limit), threads)
    }

    fn auto_shape(&self, q: &QueryGraph, plan: &Plan, opts: &MatchOptions) -> (QueryShape, usize) {
        let moments = self.moments.get_or_init(|| DegreeMoments::new(self.graph));
        let shape = QueryShape::with_moments(q, plan, self.graph, &self.stats, moments);
        let threads = if opts.single_thread {
            1
        } else {
            pool_threads()
        };
        (shape, threads)
    }

    pub fn graph(&self) -> &'g KnowledgeGraph {
        self.graph
    }

    /// The kernels' view of the graph's arrays.
    pub fn view(&self) -> GraphView<'g> {
        // One relation in the graph: every edge has relation 0.
        let only_label = if self.graph.relation_count() == 1 {
            0
        } else {
            NONE
        };
        let adj = |c: &'g gpsense_graph::Csr| Adjacency {
            offsets: c.offsets(),
            targets: c.targets(),
            labels: c.labels(),
            only_label,
        };
        let out = adj(self.graph.out());
        // Symmetric: the in-lists are the out-lists, byte for byte; reading one copy keeps half
        // the adjacency out of the caches.
        let inc = if self.shape.symmetric {
            out
        } else {
            adj(self.graph.inc())
        };
        GraphView {
            out,
            inc,
            node_labels: self.graph.node_labels(),
        }
    }

    /// Finds the matches of `q`, handing projected rows to `on_rows` in batches as they are found
    /// (`on_rows` returns false to stop).
    pub fn run(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        on_rows: OnRows,
    ) -> Result<MatchReport, MatchError> {
        self.execute(q, opts, false, on_rows)
    }

    /// Counts the matches of `q` without materialising them (DISTINCT still needs the rows).
    pub fn count(&self, q: &QueryGraph, opts: &MatchOptions) -> Result<MatchReport, MatchError> {
        self.execute(q, opts, true, &mut |_| true)
    }

    /// All projected rows, in memory (for tests and small answers).
    pub fn collect(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
    ) -> Result<(Vec<Vec<u32>>, MatchReport), MatchError> {
        let mut rows = Vec::new();
        let report = self.run(q, opts, &mut |b: RowBatch| {
            rows.extend(b.iter().map(<[u32]>::to_vec));
            true
        })?;
        Ok((rows, report))
    }

    fn execute(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        count_only: bool,
        on_rows: OnRows,
    ) -> Result<MatchReport, MatchError> {
        if opts.engine != EngineKind::Auto {
            return self.execute_on(
                q,
                opts,
                count_only,
                on_rows,
                None::<&DeviceState<HostDevice>>,
            );
        }
        // `auto`: a GPU that fails mid-query, before any row was handed out, is dropped (the next
        // query opens it afresh) and the query is answered on the CPU.
        let mut handed_out = 0u64;
        let first = self.execute_on(
            q,
            opts,
            count_only,
            &mut |b: RowBatch| {
                handed_out += b.rows as u64;
                on_rows(b)
            },
            None::<&DeviceState<HostDevice>>,
        );
        match first {
            Err(MatchError::Device(e)) if handed_out == 0 => {
                // Memory others hold is no fault of the device: it stays open.
                if !matches!(e, DeviceError::OutOfMemory(_)) {
                    self.forget_gpu();
                }
                let cpu = MatchOptions {
                    engine: EngineKind::Dfs,
                    ..opts.clone()
                };
                let mut report = self.execute_on(
                    q,
                    &cpu,
                    count_only,
                    on_rows,
                    None::<&DeviceState<HostDevice>>,
                )?;
                report.fallback = Some(match e {
                    DeviceError::OutOfMemory(_) => format!("the GPU had no memory to spare ({e})"),
                    _ => format!("the GPU failed during the query ({e})"),
                });
                report.auto = Some(self.auto_choice(q, &report.plan, opts, count_only));
                Ok(report)
            }
            other => other,
        }
    }

    /// [`Engine::execute`] with the engine `opts` names, or on `device` when given (the self-check).
    fn execute_on<D: Device>(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        count_only: bool,
        on_rows: OnRows,
        device: Option<&DeviceState<D>>,
    ) -> Result<MatchReport, MatchError> {
        let start = Instant::now();
        let plan = if opts.explain {
            plan_with(q, self.graph, &self.stats)
        } else {
            plan_brief(q, self.graph, &self.stats)
        };
        let auto = (device.is_none() && opts.engine == EngineKind::Auto)
            .then(|| self.auto_choice(q, &plan, opts, count_only));
        let (engine, fallback) = match device {
            Some(_) => (EngineKind::Gpu, None),
            None => self.resolve(opts.engine, auto.as_ref()),
        };
        let layout = if matches!(engine, EngineKind::Dfs | EngineKind::Auto) {
            let mut lent = Lent {
                pool: Some(&self.layouts),
                layout: self.layouts.take(),
            };
            lent.layout
                .refill_filters(q, &plan, opts.semantics, self.shape)?;
            lent
        } else {
            Lent {
                pool: None,
                layout: Layout::new(q, &plan, opts.semantics, self.shape)?,
            }
        };
        let mut times = Timings {
            plan: start.elapsed(),
            ..Default::default()
        };
        let limit = opts.limit_for(q.limit);
        let mut report = MatchReport {
            fallback,
            auto,
            device: None,
            timed_out: false,
            rows: 0,
            limit_reached: false,
            engine,
            semantics: opts.semantics,
            join_plan: plan.clone(),
            plan,
            filter: FilterReport::default(),
            edge_candidates: None,
            search: None,
            device_report: None,
            times: Timings::default(),
        };
        if report.plan.components.len() > 1 && limit.is_none() {
            if let Some(guard) = self.cartesian_guard(q, &report.plan, opts, count_only, start)? {
                match guard {
                    Guard::Count(product) => report.rows = product,
                    Guard::TimedOut => report.timed_out = true,
                }
                times.total = start.elapsed();
                report.times = times;
                return Ok(report);
            }
        }
        let ex = Executor {
            parallel: !opts.single_thread,
        };
        if matches!(engine, EngineKind::Dfs | EngineKind::Auto) {
            self.search(
                q,
                &layout,
                opts,
                limit,
                count_only,
                on_rows,
                start,
                &mut report,
            )?;
            times.filter = report.filter.filter_time;
            times.refine = report.filter.refine_time;
            times.join = report.times.join;
            times.total = start.elapsed();
            report.times = times;
            return Ok(report);
        }
        if matches!(engine, EngineKind::Gpu | EngineKind::Emulated) {
            let out = output(q, by_node(q), opts, limit, count_only, on_rows, start);
            let r = &mut report;
            own_pool(opts.single_thread, || match (device, engine) {
                (Some(d), _) => d.run(self, q, &layout, opts, &out, r),
                (None, EngineKind::Gpu) => self.gpu()?.run(self, q, &layout, opts, &out, r),
                _ => self.emulator()?.run(self, q, &layout, opts, &out, r),
            })?;
            times.filter = report.filter.filter_time;
            times.join = report.times.join;
            return finish(&out, report, times, start);
        }
        let g = self.view();
        let injective = opts.semantics == Semantics::Iso;
        let bitsets = filtering_fits(&layout, g.node_count(), opts.memory_budget)?;
        let deadline = opts.timeout.map(|t| start + t);
        let expired = || {
            opts.cancel
                .as_ref()
                .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
                || deadline.is_some_and(|d| Instant::now() >= d)
        };
        let (cands, filter) = Filtering {
            layout: &layout,
            g,
            labels: &self.labels,
            ex,
        }
        .run(opts.refine_rounds, &expired);
        times.filter = filter.filter_time;
        times.refine = filter.refine_time;
        report.filter = filter;
        // The join runs in its own order, chosen from the real candidate counts.
        let counts: Vec<usize> = cands.arrays.iter().map(Vec::len).collect();
        let join_plan = crate::order::join_order(q, &report.plan, &counts);
        let layout = Layout::new(q, &join_plan, opts.semantics, self.shape)?;
        report.join_plan = join_plan;
        let columns = q
            .projection
            .iter()
            .map(|p| match *p {
                Projected::Node(u) => layout.slot_of[u] as usize,
                Projected::Edge(k) => layout.nodes + k,
            })
            .collect();
        let out = output(q, columns, opts, limit, count_only, on_rows, start);
        // Refinement the clock cut short is a timed-out answer (this records it).
        out.stopped();
        let join_start = Instant::now();
        // Only the kernels engine is left here: the others returned above.
        if !cands.any_empty() {
            let kj = KernelJoin {
                layout: &layout,
                cands: &cands,
                g,
                injective,
                ex,
                lanes: opts.lanes.max(1),
                // The candidate bitsets stay alive through the join: it has the rest.
                memory_budget: opts.memory_budget - bitsets,
            };
            let ec_start = Instant::now();
            let ecs = kj.collect_edge_candidates();
            times.edge_candidates = ec_start.elapsed();
            report.edge_candidates =
                Some(ecs.iter().flatten().map(|e| e.targets.len() as u64).sum());
            kj.run(&ecs, &out)?;
        }
        times.join = join_start.elapsed() - times.edge_candidates;
        finish(&out, report, times, start)
    }

    /// The CPU engine: candidate space, then the search (`search/`), straight into the output.
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        q: &QueryGraph,
        layout: &Layout,
        opts: &MatchOptions,
        limit: Option<u64>,
        count_only: bool,
        on_rows: OnRows,
        started: Instant,
        report: &mut MatchReport,
    ) -> Result<(), MatchError> {
        let parallel = !opts.single_thread;
        let mut space = self.spaces.take();
        let filter = SpaceBuilder {
            layout,
            g: self.view(),
            labels: &self.labels,
            neighbour_labels: self.neighbour_labels.as_ref(),
            ex: Executor { parallel },
            deadline: opts.timeout.map(|t| started + t),
            cancel: opts.cancel.as_deref(),
            budget: opts.memory_budget,
        }
        .build(&mut space);
        let filter = match filter {
            Ok(f) => f,
            Err(e) => {
                space.clear();
                self.spaces.give(space);
                return Err(e);
            }
        };
        report.filter = filter;
        report.edge_candidates = Some(space.edge_count());
        let dag = Dag::new(q, &space, self.graph().has_node_labels());
        report.join_plan = dag.describe(q, &space, opts.explain);
        let out = output(q, by_node(q), opts, limit, count_only, on_rows, started);
        // A build the deadline stopped is a timed-out answer (this records it).
        out.stopped();
        let start = Instant::now();
        let stats = SearchStats::default();
        if !space.any_empty() {
            let cx = Context {
                space: &space,
                dag: &dag,
                g: self.view(),
                injective: opts.semantics == Semantics::Iso,
                vars: q.edge_variables.len(),
                out: &out,
                stats: &stats,
                check_every: opts.check_every,
                owners: &self.owners,
                rooms: &self.rooms,
                twins: out.count_only() && q.edge_variables.is_empty(),
            };
            crate::search::run(&cx, parallel);
        }
        report.times.join = start.elapsed();
        report.timed_out = out.timed_out();
        report.search = Some(SearchSummary::from(&stats));
        self.spaces.give(space);
        let (rows, limit_reached, error) = out.finish();
        if let Some(e) = error {
            return Err(e);
        }
        report.rows = rows;
        report.limit_reached = limit_reached;
        Ok(())
    }

    /// [`guard_disconnected`] with this engine's counts.
    fn cartesian_guard(
        &self,
        q: &QueryGraph,
        plan: &Plan,
        opts: &MatchOptions,
        count_only: bool,
        start: Instant,
    ) -> Result<Option<Guard>, MatchError> {
        let components: Vec<Vec<usize>> = plan
            .components
            .iter()
            .map(|r| plan.order[r.clone()].to_vec())
            .collect();
        guard_disconnected(q, &components, opts, count_only, start, |sub, o| {
            self.count(sub, o)
        })
    }
}

/// For a disconnected query without a limit: counts each component alone (with `count`). Their
/// product bounds the answer, and is it under hom (without DISTINCT or an edge variable shared by
/// components). Counting materialises no rows, so it never refuses: a count that the product is
/// returns it, any other is left to the engine (exact under iso too). Rows beyond `max_cartesian`
/// are refused. A component count cut by the time limit makes the answer timed out, not a refusal
/// quoting partial counts.
pub(crate) fn guard_disconnected(
    q: &QueryGraph,
    components: &[Vec<usize>],
    opts: &MatchOptions,
    count_only: bool,
    start: Instant,
    mut count: impl FnMut(&QueryGraph, &MatchOptions) -> Result<MatchReport, MatchError>,
) -> Result<Option<Guard>, MatchError> {
    if count_only && !counts_multiply(q, components, opts.semantics) {
        return Ok(None);
    }
    let (mut counts, mut capped) = (Vec::with_capacity(components.len()), false);
    for nodes in components {
        let sub_opts = MatchOptions {
            limit: (!count_only).then_some(opts.max_cartesian.saturating_add(1)),
            timeout: opts.timeout.map(|t| t.saturating_sub(start.elapsed())),
            ..opts.clone()
        };
        let report = count(&component_query(q, nodes), &sub_opts)?;
        if report.timed_out {
            return Ok(Some(Guard::TimedOut));
        }
        capped |= report.limit_reached;
        counts.push(report.rows);
    }
    let product = count_product(counts);
    if count_only {
        return product
            .map(|n| Some(Guard::Count(n)))
            .ok_or(MatchError::CountOverflow);
    }
    if product.is_none_or(|p| p > u128::from(opts.max_cartesian)) {
        // A component count stopped at the limit gives a lower bound.
        let at_least = if capped { "at least " } else { "" };
        let product = product.map_or_else(|| "more than 2^128 - 1".to_string(), |p| p.to_string());
        return Err(MatchError::CartesianExplosion {
            components: components.len(),
            product: format!("{at_least}{product}"),
            limit: opts.max_cartesian,
        });
    }
    Ok(None)
}

/// Whether the count of a query whose `components` are not joined by any edge is the product of
/// their counts: under hom, without DISTINCT, and with no edge variable in two components (it must
/// bind one relation in both, so the product only bounds the count).
pub fn counts_multiply(q: &QueryGraph, components: &[Vec<usize>], semantics: Semantics) -> bool {
    semantics == Semantics::Hom && !q.distinct && !shares_variable(q, components)
}

/// The product of match counts, checked: `None` past `u128::MAX` (the count's overflow), 0 when one
/// count is 0 however large the others.
pub fn count_product(counts: impl IntoIterator<Item = u128>) -> Option<u128> {
    let mut product = Some(1u128);
    for n in counts {
        if n == 0 {
            return Some(0);
        }
        product = product.and_then(|p| p.checked_mul(n));
    }
    product
}

/// What the guard of a disconnected query decided.
pub(crate) enum Guard {
    /// The exact count (the product of the components').
    Count(u128),
    /// The time limit ran out while counting the components.
    TimedOut,
}

/// The filtering phase holds a candidate bitset over all data nodes per query node, plus one of
/// marks while it filters: refused up front when that passes the budget. Returns their bytes.
fn filtering_fits(layout: &Layout, data_nodes: usize, budget: u64) -> Result<u64, MatchError> {
    let words = gpsense_kernels::bits::words_for(data_nodes) as u64;
    let bytes = (layout.nodes as u64 + 1).saturating_mul(words * 4);
    if bytes > budget {
        return Err(MatchError::SpaceBudget { bytes, budget });
    }
    Ok(bytes)
}

/// Whether an edge variable joins two components (it must bind one relation in both, so the
/// product of their counts only bounds the count).
fn shares_variable(q: &QueryGraph, components: &[Vec<usize>]) -> bool {
    let mut component_of = vec![0; q.nodes.len()];
    for (c, nodes) in components.iter().enumerate() {
        for &u in nodes {
            component_of[u] = c;
        }
    }
    let mut variable_component = vec![None; q.edge_variables.len()];
    q.edges.iter().any(|e| match e.label {
        EdgeLabel::Variable(k) => {
            let c = component_of[e.source];
            *variable_component[k].get_or_insert(c) != c
        }
        EdgeLabel::Fixed(_) => false,
    })
}

/// The report of a match whose rows went to `out`: its rows, limit and time flags, or its error.
fn finish(
    out: &Output,
    mut report: MatchReport,
    mut times: Timings,
    start: Instant,
) -> Result<MatchReport, MatchError> {
    report.timed_out = out.timed_out();
    let (rows, limit_reached, error) = out.outcome();
    if let Some(e) = error {
        return Err(e);
    }
    report.rows = rows;
    report.limit_reached = limit_reached;
    times.total = start.elapsed();
    report.times = times;
    Ok(report)
}

/// The projected columns of rows laid out by query node (`n` node slots, then edge variables).
pub(crate) fn by_node(q: &QueryGraph) -> Vec<usize> {
    let n = q.nodes.len();
    q.projection
        .iter()
        .map(|p| match *p {
            Projected::Node(u) => u,
            Projected::Edge(k) => n + k,
        })
        .collect()
}

/// Where a match's rows go: projected `columns`, the query's DISTINCT, the limit, and the time limit
/// counted from `started` (the whole query, planning and filtering included).
pub(crate) fn output<'o>(
    q: &QueryGraph,
    columns: Vec<usize>,
    opts: &MatchOptions,
    limit: Option<u64>,
    count_only: bool,
    on_rows: OnRows<'o>,
    started: Instant,
) -> Output<'o> {
    Output::new(
        columns,
        q.distinct,
        limit,
        count_only,
        opts.memory_budget / 2,
        on_rows,
    )
    .with_deadline(opts.timeout.map(|t| started + t))
    .with_cancel(opts.cancel.clone())
}

/// The sub-query of one connected component (`nodes`), without projection or limit.
pub fn component_query(q: &QueryGraph, nodes: &[usize]) -> QueryGraph {
    let index = |u: usize| nodes.iter().position(|&x| x == u);
    let mut vars: Vec<usize> = Vec::new();
    let mut edges = Vec::new();
    for e in &q.edges {
        if let (Some(s), Some(t)) = (index(e.source), index(e.target)) {
            let label = match e.label {
                EdgeLabel::Fixed(r) => EdgeLabel::Fixed(r),
                EdgeLabel::Variable(k) => {
                    let at = vars.iter().position(|&v| v == k).unwrap_or_else(|| {
                        vars.push(k);
                        vars.len() - 1
                    });
                    EdgeLabel::Variable(at)
                }
            };
            edges.push(QueryEdge {
                source: s,
                target: t,
                label,
            });
        }
    }
    QueryGraph {
        nodes: nodes.iter().map(|&u| q.nodes[u].clone()).collect(),
        edges,
        edge_variables: vars.iter().map(|&k| q.edge_variables[k].clone()).collect(),
        concept_sets: q.concept_sets.clone(),
        projection: Vec::new(),
        distinct: false,
        limit: None,
    }
}

/// The queries of the self-check, run under both semantics: a triangle and a path over fixed
/// relations (the warp join), an edge variable (the count-then-write join), a concept.
const CHECK_QUERIES: &[&str] = &[
    "SELECT ?x ?y ?z WHERE { ?x r ?y . ?y r ?z . ?z r ?x }",
    "SELECT ?x ?y ?z WHERE { ?x r ?y . ?y s ?z }",
    "SELECT ?x ?p ?y WHERE { ?x ?p ?y . ?y r ?x }",
    "SELECT ?x WHERE { ?x r a }",
];

/// A small graph for the self-check.
fn check_graph() -> Result<KnowledgeGraph, gpsense_graph::GraphError> {
    let mut b = gpsense_graph::GraphBuilder::new();
    let triples = [
        ("a", "r", "b"),
        ("b", "r", "c"),
        ("c", "r", "a"),
        ("a", "s", "c"),
        ("c", "s", "d"),
        ("d", "r", "a"),
        ("b", "s", "a"),
        ("a", "r", "d"),
        ("e", "r", "a"),
        ("d", "s", "b"),
    ];
    for (h, r, t) in triples {
        b.add_triple(h, r, t, 1.0)?;
    }
    Ok(b.build()?.0)
}

/// Runs the known queries (`CHECK_QUERIES`: fixed and variable edges, a concept, both semantics)
/// on `dev` and on the CPU and compares the rows: a device (a driver, a PTX build) that gives a
/// wrong answer or fails is not used. Returns the device when it passed.
pub fn self_check<D: Device>(dev: D) -> Result<D, DeviceError> {
    let failed = |what: String| DeviceError::SelfCheck(what);
    let g = check_graph().map_err(|e| failed(e.to_string()))?;
    let cpu = Engine::new(&g);
    let state = DeviceState::new(dev, &g)?;
    for text in CHECK_QUERIES {
        let q = gpsense_planner::compile(text, &g).map_err(|e| failed(e.to_string()))?;
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let opts = MatchOptions {
                engine: EngineKind::Dfs,
                semantics,
                ..MatchOptions::default()
            };
            let (mut want, _) = cpu.collect(&q, &opts).map_err(|e| failed(e.to_string()))?;
            let mut got = Vec::new();
            let sink = &mut |b: RowBatch| {
                got.extend(b.iter().map(<[u32]>::to_vec));
                true
            };
            cpu.execute_on(&q, &opts, false, sink, Some(&state))
                .map_err(|e| failed(format!("{text} ({semantics}): {e}")))?;
            want.sort_unstable();
            got.sort_unstable();
            if want != got {
                return Err(failed(format!(
                    "{text} ({semantics}): {} rows on the device, {} on the CPU",
                    got.len(),
                    want.len()
                )));
            }
        }
    }
    Ok(state.dev)
}

impl<D: Device> DeviceState<D> {
    /// `g` uploaded to `dev` (or mapped from pinned host memory when it does not fit), for the
    /// self-check, the tests and users of the device other than an [`Engine`] (TruST alone): the
    /// planner's statistics computed here, O(V + E).
    pub fn new(dev: D, g: &KnowledgeGraph) -> Result<Self, DeviceError> {
        Self::with_stats(dev, g, &PlannerStats::new(g))
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// The graph on the device.
    pub fn graph(&self) -> &DeviceGraph<D> {
        &self.graph
    }

    /// A user of the device other than the matching engine's (TruST's search) starts on the
    /// calling thread: counted with the matching queries and batches until the guard ends, so
    /// that one refused for memory waits for it (and it for them, [`DeviceState::make_room_for`]),
    /// its calls on a stream of its own where users get one.
    pub fn user(&self) -> DeviceUser<'_, D> {
        DeviceUser::new(&self.users, &self.dev)
    }

    /// After `user` was refused for device memory before it handed anything out: whether to
    /// try again, having given the idle matching buffers back or waited for the users that ran
    /// beside it to end (`stopped` says when to stop waiting: its time limit, a cancellation).
    pub fn make_room_for(&self, user: DeviceUser<'_, D>, stopped: impl Fn() -> bool) -> bool {
        let others = user.end();
        self.make_room(others, stopped)
    }

    fn with_stats(dev: D, g: &KnowledgeGraph, stats: &PlannerStats) -> Result<Self, DeviceError> {
        // The upload as a user of its own: done when it ends, before any query reads the graph.
        let graph = {
            let _upload = OnDevice::new(&dev);
            DeviceGraph::new(&dev, g)?
        };
        Ok(DeviceState {
            dev,
            graph,
            arenas: Default::default(),
            users: Default::default(),
            segments: Segments::new(stats, g.relation_count()),
        })
    }

    /// The device pipeline for one query, into `out`; fills `report`'s filter, join plan, device
    /// counters and join time.
    fn run(
        &self,
        engine: &Engine,
        q: &QueryGraph,
        layout: &Layout,
        opts: &MatchOptions,
        out: &Output,
        report: &mut MatchReport,
    ) -> Result<(), MatchError> {
        // Buffers of its own, beside the other users' (on a GPU they share the stream).
        let mut arena = self.arenas.take();
        let start = Instant::now();
        loop {
            let running = self.users.start();
            let on_device = OnDevice::new(&self.dev);
            let memory_budget = crate::device::memory::query_budget(
                opts.memory_budget,
                self.dev.free_memory()?,
                arena.bytes(),
            );
            let ran = Pipeline {
                dev: &self.dev,
                graph: &self.graph,
                host: engine.view(),
                arena: &mut arena,
                semantics: opts.semantics,
                shape: engine.shape,
                memory_budget,
                refine_rounds: opts.refine_rounds,
                segments: &self.segments,
            }
            .run(q, &report.plan, layout, out);
            let others = running.others();
            drop(on_device);
            drop(running);
            // Refused for memory that others (or idle buffers) held: by the device, or by a budget
            // the free memory cut below the query's own. A query its own budget refuses is
            // answered at once: waiting for the others would change nothing.
            let refused = match &ran {
                Err(MatchError::Device(DeviceError::OutOfMemory(_))) => true,
                Err(MatchError::DeviceBudget { .. }) => memory_budget < opts.memory_budget,
                _ => false,
            };
            if refused && out.handed_out() == 0 && self.make_room(others, || out.stopped()) {
                continue;
            }
            let (join_plan, filter, device) = ran?;
            report.times.join = start.elapsed().saturating_sub(filter.filter_time);
            report.filter = filter;
            report.join_plan = join_plan;
            report.device = Some(self.dev.describe());
            report.device_report = Some(device);
            return Ok(());
        }
    }

    /// After a query was refused for memory (by its budget, or by an allocation the device could
    /// not grant while others held memory), before it handed anything out: whether to try
    /// again, having given the idle arenas' buffers back, or, when other users ran beside it,
    /// having waited for them to end (within its time limit), as it waited for the device when
    /// queries took it in turn.
    fn make_room(&self, others: bool, stopped: impl Fn() -> bool) -> bool {
        self.arenas.release_idle() || (others && self.users.wait_for_none(stopped))
    }

    /// What the device is.
    pub fn describe(&self) -> String {
        self.dev.describe()
    }

    /// Where the graph lives on it.
    pub fn placement(&self) -> crate::device::memory::Placement {
        self.graph.placement
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::host::Hooked;

    #[test]
    fn the_host_mapped_placement_gives_the_same_answers() {
        let g = check_graph().unwrap();
        let mut dev = HostDevice::from_env();
        dev.force_mapped = true;
        dev.check_writes = true;
        let state = DeviceState::new(dev, &g).unwrap();
        assert_eq!(
            state.placement(),
            crate::device::memory::Placement::HostMapped
        );
        assert!(self_check(state.dev).is_ok());
    }

    #[test]
    fn the_self_check_passes_on_the_emulator_and_fails_on_a_device_that_answers_wrongly() {
        assert!(self_check(HostDevice::from_env()).is_ok());
        for skip in [
            "extend_warp",
            "extend_warp_bindings",
            "refine_nodes",
            "mark_steps",
        ] {
            // Every launch of `skip` skipped: a device that answers wrongly.
            let bad = Hooked {
                inner: HostDevice::from_env(),
                hook: move |d: &HostDevice, l: &crate::device::Launch, n| {
                    if l.sig().name == skip {
                        Ok(())
                    } else {
                        d.launch(l, n)
                    }
                },
            };
            let err = self_check(bad).err().map(|e| e.to_string());
            // Skipping refinement loses no answer: the join checks every edge.
            if skip == "refine_nodes" {
                assert_eq!(err, None);
            } else {
                let err = err.unwrap_or_else(|| panic!("skipping {skip} went unnoticed"));
                assert!(err.contains("self-check"), "{err}");
            }
        }
    }

    /// The self-check's triangle and its rows on the CPU.
    fn triangle(cpu: &Engine, g: &KnowledgeGraph) -> (QueryGraph, usize) {
        let q = gpsense_planner::compile(CHECK_QUERIES[0], g).unwrap();
        let want = cpu.collect(&q, &MatchOptions::default()).unwrap().0.len();
        (q, want)
    }

    /// `q`'s rows counted on `state`'s device while another user runs there for 200 ms (it
    /// holds an arena it took), and when that user ended.
    fn beside_another_user<D: Device>(
        cpu: &Engine,
        state: &DeviceState<D>,
        q: &QueryGraph,
    ) -> (Result<usize, MatchError>, Instant) {
        let opts = MatchOptions {
            engine: EngineKind::Dfs,
            ..MatchOptions::default()
        };
        let started = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let _running = state.users.start();
                let _arena = state.arenas.take();
                started.wait();
                std::thread::sleep(Duration::from_millis(200));
                Instant::now()
            });
            started.wait();
            let mut rows = 0;
            let sink = &mut |b: RowBatch| {
                rows += b.iter().count();
                true
            };
            let ran = cpu.execute_on(q, &opts, false, sink, Some(state));
            (ran.map(|_| rows), other.join().unwrap())
        })
    }

    /// On a device whose free memory is what its buffers leave (a GPU's), a query refused because
    /// another user held the memory waits for that user to end and tries again, the idle arena it
    /// left given back first; before, it failed with the other's memory still counted.
    #[test]
    fn a_query_refused_for_memory_another_user_holds_waits_and_tries_again() {
        let g = check_graph().unwrap();
        let cpu = Engine::new(&g);
        let (q, want) = triangle(&cpu, &g);
        let mut dev = HostDevice::default();
        dev.total_memory = Some(1 << 40);
        let mut state = DeviceState::new(dev, &g).unwrap();
        // Warm: its arena stays idle.
        assert_eq!(beside_another_user(&cpu, &state, &q).0.unwrap(), want);
        // Now the device has no byte more than the graph and the warm arena hold.
        let in_use = (1 << 40) - state.dev.free_memory().unwrap();
        state.dev.total_memory = Some(in_use);
        let (answered, other_ended) = beside_another_user(&cpu, &state, &q);
        assert_eq!(answered.unwrap(), want);
        assert!(Instant::now() >= other_ended);
        assert_eq!(state.users.running(), 0);
    }

    /// A query its own budget refuses fails at once beside another user: waiting for the other
    /// would change nothing (before, it waited for the other to end, or for its time limit).
    #[test]
    fn a_query_its_own_budget_refuses_does_not_wait_for_the_others() {
        let g = check_graph().unwrap();
        let cpu = Engine::new(&g);
        let (q, _) = triangle(&cpu, &g);
        let state = DeviceState::new(HostDevice::default(), &g).unwrap();
        let opts = MatchOptions {
            engine: EngineKind::Dfs,
            memory_budget: 1 << 10,
            ..MatchOptions::default()
        };
        let started = std::sync::Barrier::new(2);
        let (ran, answered, other_ended) = std::thread::scope(|s| {
            let other = s.spawn(|| {
                let _running = state.users.start();
                started.wait();
                std::thread::sleep(Duration::from_millis(500));
                Instant::now()
            });
            started.wait();
            let ran = cpu.execute_on(&q, &opts, false, &mut |_: RowBatch| true, Some(&state));
            (ran, Instant::now(), other.join().unwrap())
        });
        assert!(
            matches!(ran, Err(MatchError::DeviceBudget { .. })),
            "{ran:?}"
        );
        assert!(answered < other_ended);
    }

    /// An allocation the device cannot grant while another user runs (two users budgeted from
    /// the same free memory) is not a fault: the query waits for the other and tries again.
    #[test]
    fn a_query_out_of_memory_beside_another_user_tries_again_after_it() {
        let g = check_graph().unwrap();
        let cpu = Engine::new(&g);
        let (q, want) = triangle(&cpu, &g);
        let failed_once = std::sync::atomic::AtomicBool::new(false);
        let dev = Hooked {
            inner: HostDevice::from_env(),
            hook: |d: &HostDevice, l: &crate::device::Launch, n| {
                if failed_once.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    d.launch(l, n)
                } else {
                    Err(DeviceError::OutOfMemory("taken by the other user".into()))
                }
            },
        };
        let state = DeviceState::new(dev, &g).unwrap();
        let (answered, other_ended) = beside_another_user(&cpu, &state, &q);
        assert_eq!(answered.unwrap(), want);
        assert!(failed_once.into_inner());
        assert!(Instant::now() >= other_ended);
    }
}
