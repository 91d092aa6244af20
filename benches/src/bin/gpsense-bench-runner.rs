//! The Rust side of `cargo xtask bench`, built in release mode by the xtask (which itself runs
//! unoptimised):
//!
//! - `gpsense-bench-runner prepare DATASETS OUT [--quick]` writes the workloads (`OUT/manifest.json`,
//!   `OUT/graphs/`; see `gpsense_benches::suite`).
//! - `gpsense-bench-runner prepare-listed LIST.json OUT` writes the workloads a [`suite::Listed`]
//!   names (the exact-peer table of `cargo xtask bench`).
//! - `gpsense-bench-runner run OUT WORKLOAD ENGINE SEMANTICS START REPEAT [END]` loads the workload's
//!   graph, prints `{"ready":true,"load_seconds":..}`, then one JSON line per query from index `START`
//!   (to `END`, exclusive, where given; a workload's `limit` caps each count):
//!   `{"i":..,"status":"ok","count":..,"seconds":[..]}` (or `"status":"error","message":..`).
//!   ENGINE is `gpsense-dfs`, `gpsense-dfs-2t` (dfs free to use a pool of two threads),
//!   `gpsense-kernels`, `gpsense-emulated` or `petgraph-vf2`. The parent enforces the time limit by
//!   killing this process and starting it again after the query.
//!
//! A query is repeated (up to REPEAT times in all) while the runs so far took under a second; the
//! parent reports the median.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use gpsense_benches::suite::{self, Manifest, QuerySpec, Scale};
use gpsense_graph::KnowledgeGraph;
use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};
use petgraph::graph::{DiGraph, UnGraph};
use serde_json::json;

/// The allocator the `gpsense` binary uses, so the bench measures what users run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("prepare") if args.len() >= 3 => prepare(&args[1], &args[2], args.get(3).is_some_and(|a| a == "--quick")),
        Some("prepare-listed") if args.len() == 3 => prepare_listed(&args[1], &args[2]),
        Some("run") if args.len() == 7 || args.len() == 8 => run(&args[1..]),
        _ => Err("usage: gpsense-bench-runner prepare DATASETS OUT [--quick] | prepare-listed LIST.json OUT | run OUT WORKLOAD ENGINE SEMANTICS START REPEAT [END]".into()),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn prepare(datasets: &str, out: &str, quick: bool) -> Result<()> {
    let scale = if quick { Scale::quick() } else { Scale::full() };
    let start = Instant::now();
    let m = suite::prepare(Path::new(datasets), Path::new(out), &scale)?;
    let queries: usize = m.workloads.iter().map(|w| w.queries.len()).sum();
    eprintln!(
        "prepared {} graphs, {} workloads, {queries} queries in {:.1} s",
        m.graphs.len(),
        m.workloads.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn prepare_listed(list: &str, out: &str) -> Result<()> {
    let list: suite::Listed = serde_json::from_slice(&std::fs::read(list)?)?;
    let m = suite::prepare_listed(&list, Path::new(out))?;
    let queries: usize = m.workloads.iter().map(|w| w.queries.len()).sum();
    eprintln!(
        "prepared {} workloads, {queries} queries",
        m.workloads.len()
    );
    Ok(())
}

fn emit(value: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

fn run(args: &[String]) -> Result<()> {
    let dir = PathBuf::from(&args[0]);
    let manifest: Manifest = serde_json::from_slice(&std::fs::read(dir.join("manifest.json"))?)?;
    let workload = manifest
        .workload(&args[1])
        .ok_or_else(|| format!("no workload {:?}", args[1]))?;
    let engine_name = args[2].as_str();
    let semantics: Semantics = args[3].parse()?;
    let start_at: usize = args[4].parse()?;
    let repeat: usize = args[5].parse::<usize>()?.max(1);
    let end: usize = match args.get(6) {
        Some(e) => e.parse()?,
        None => usize::MAX,
    };
    let take = end.saturating_sub(start_at);
    let meta = manifest
        .graph(&workload.graph)
        .ok_or_else(|| format!("no graph {:?}", workload.graph))?;

    // Two threads, as `gpsense match --threads 2` has them: the global pool sized to two before the
    // graph loads (its workers have gone to sleep by the first query), queries on the calling
    // thread, which asks the pool for help only when a search proves big. (Running the queries
    // inside a pool of their own put every query on a worker thread whose allocator heap the
    // warm-up had not touched: HPRD's first query of a chunk cost 0.07-0.09 ms against 0.05-0.08
    // on the main thread; a pool started after the warm-up still had its workers looking for work
    // during the first query: 1.1-1.2x the one-thread time there.)
    if engine_name == "gpsense-dfs-2t" {
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build_global()?;
    }
    let t = Instant::now();
    let g = KnowledgeGraph::load(&dir.join("graphs").join(format!("{}.gps", meta.key)))?;
    match engine_name {
        "petgraph-vf2" => {
            let pg = PetGraph::new(&g, meta.undirected)?;
            let engine = Engine::new(&g);
            emit(json!({"ready": true, "load_seconds": t.elapsed().as_secs_f64()}));
            for (i, q) in workload
                .queries
                .iter()
                .enumerate()
                .skip(start_at)
                .take(take)
            {
                let mut seconds = Vec::new();
                let mut count = 0;
                while seconds.len() < repeat {
                    let t = Instant::now();
                    count = pg.count(q);
                    seconds.push(t.elapsed().as_secs_f64());
                    if seconds.iter().sum::<f64>() > 1.0 {
                        break;
                    }
                }
                let reference = induced_reference(&engine, &g, q, meta.undirected);
                emit(
                    json!({"i": i, "status": "ok", "count": count, "seconds": seconds,
                            "reference": reference}),
                );
            }
        }
        _ => {
            let kind = match engine_name {
                "gpsense-dfs" | "gpsense-dfs-2t" => EngineKind::Dfs,
                "gpsense-kernels" => EngineKind::Kernels,
                "gpsense-emulated" => EngineKind::Emulated,
                other => return Err(format!("unknown engine {other:?}").into()),
            };
            let engine = Engine::new(&g);
            let opts = MatchOptions {
                semantics,
                engine: kind,
                single_thread: engine_name != "gpsense-dfs-2t",
                limit: workload.limit,
                ..MatchOptions::default()
            };
            if kind == EngineKind::Emulated {
                // The emulator copies the graph to its "device" on first use: do it before timing.
                if let Some(q) = workload.queries.first() {
                    let warm = MatchOptions {
                        limit: Some(1),
                        ..opts.clone()
                    };
                    engine.count(&suite::query_graph(q), &warm)?;
                }
            }
            emit(json!({"ready": true, "load_seconds": t.elapsed().as_secs_f64()}));
            for (i, spec) in workload
                .queries
                .iter()
                .enumerate()
                .skip(start_at)
                .take(take)
            {
                let q = suite::query_graph(spec);
                let mut seconds = Vec::new();
                let mut result = Ok(0);
                let before = Usage::now();
                while seconds.len() < repeat {
                    let t = Instant::now();
                    result = engine.count(&q, &opts).map(|r| r.rows);
                    seconds.push(t.elapsed().as_secs_f64());
                    if result.is_err() || seconds.iter().sum::<f64>() > 1.0 {
                        break;
                    }
                }
                let usage = Usage::now().since(&before);
                match result {
                    Ok(count) => emit(json!({"i": i, "status": "ok", "count": count,
                    "seconds": seconds, "usage": usage})),
                    Err(e) => emit(json!({"i": i, "status": "error", "message": e.to_string()})),
                }
            }
        }
    }
    Ok(())
}

/// What a query's runs cost the process beyond time (`getrusage`, this thread, summed over the
/// runs): page faults and context switches, to find the cause of a run that is slower than the
/// others (issue 30's spikes).
#[derive(serde::Serialize, Default)]
struct Usage {
    /// Faults served without I/O (first touch of an allocation, a shared page mapped in).
    minor_faults: i64,
    major_faults: i64,
    /// Gave up the core (waited) / was taken off it (another thread ran).
    voluntary_switches: i64,
    involuntary_switches: i64,
}

impl Usage {
    #[cfg(target_os = "linux")]
    fn now() -> Self {
        // SAFETY: `getrusage` fills the zeroed struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return Usage::default();
        }
        Usage {
            minor_faults: ru.ru_minflt,
            major_faults: ru.ru_majflt,
            voluntary_switches: ru.ru_nvcsw,
            involuntary_switches: ru.ru_nivcsw,
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn now() -> Self {
        Usage::default()
    }

    fn since(&self, before: &Usage) -> Usage {
        Usage {
            minor_faults: self.minor_faults - before.minor_faults,
            major_faults: self.major_faults - before.major_faults,
            voluntary_switches: self.voluntary_switches - before.voluntary_switches,
            involuntary_switches: self.involuntary_switches - before.involuntary_switches,
        }
    }
}

/// Above this many non-induced matches, the induced reference for petgraph is not computed.
const REFERENCE_CAP: u64 = 2_000_000;

/// petgraph's VF2 finds induced subgraphs; the same answer from gpsense is its (non-induced) matches
/// without extra data edges between matched nodes. `None` when there are too many to list.
fn induced_reference(
    engine: &Engine,
    g: &KnowledgeGraph,
    q: &QuerySpec,
    undirected: bool,
) -> Option<u64> {
    let qg = suite::query_graph(q);
    let opts = MatchOptions {
        engine: EngineKind::Dfs,
        ..MatchOptions::default()
    };
    let total = engine.count(&qg, &opts).ok()?.rows;
    if total > u128::from(REFERENCE_CAP) {
        return None;
    }
    let n = q.nodes.len();
    let mut adjacent = vec![false; n * n];
    for e in &q.edges {
        let (s, t) = (e[0] as usize, e[2] as usize);
        adjacent[s * n + t] = true;
        if undirected {
            adjacent[t * n + s] = true;
        }
    }
    let mut induced = 0u64;
    engine
        .run(&qg, &opts, &mut |batch| {
            for row in batch.iter() {
                let ok = (0..n).all(|i| {
                    (0..n).all(|j| {
                        adjacent[i * n + j] || !g.out().neighbours(row[i]).0.contains(&row[j])
                    })
                });
                induced += u64::from(ok);
            }
            true
        })
        .ok()?;
    Some(induced)
}

/// Largest data graph given to petgraph: its VF2 builds an n x n adjacency bit matrix.
const PETGRAPH_MAX_NODES: usize = 40_000;

/// The data graph for petgraph: one edge per node pair (direction kept for knowledge graphs) whose
/// weight is the set of relations joining them as a bit mask, nodes weighted by (label, id) so that
/// a concept node of a query matches its own data node only.
enum PetGraph {
    Undirected(UnGraph<(u32, u32), u64>),
    Directed(DiGraph<(u32, u32), u64>),
}

impl PetGraph {
    fn new(g: &KnowledgeGraph, undirected: bool) -> Result<Self> {
        if g.node_count() > PETGRAPH_MAX_NODES {
            return Err(format!(
                "unsupported: petgraph's VF2 needs an n x n adjacency bit matrix ({} nodes: {:.1} GB); run only up to {PETGRAPH_MAX_NODES} nodes",
                g.node_count(),
                (g.node_count() as f64).powi(2) / 8e9
            )
            .into());
        }
        if g.relation_count() > 64 {
            return Err("unsupported: more than 64 relations".into());
        }
        let label = |v: u32| {
            if g.has_node_labels() {
                g.node_label(v)
            } else {
                0
            }
        };
        let mut masks: std::collections::HashMap<(u32, u32), u64> = Default::default();
        for (s, r, t) in g.edges() {
            if undirected && s > t {
                continue;
            }
            *masks.entry((s, t)).or_default() |= 1 << r;
        }
        let mut pairs: Vec<_> = masks.into_iter().collect();
        pairs.sort_unstable();
        macro_rules! build {
            ($graph:expr) => {{
                let mut pg = $graph;
                let ids: Vec<_> = (0..g.node_count() as u32)
                    .map(|v| pg.add_node((label(v), v)))
                    .collect();
                for ((s, t), m) in pairs {
                    pg.add_edge(ids[s as usize], ids[t as usize], m);
                }
                pg
            }};
        }
        Ok(if undirected {
            PetGraph::Undirected(build!(UnGraph::with_capacity(
                g.node_count(),
                g.edge_count()
            )))
        } else {
            PetGraph::Directed(build!(DiGraph::with_capacity(
                g.node_count(),
                g.edge_count()
            )))
        })
    }

    fn count(&self, q: &QuerySpec) -> u64 {
        // Query node weights: (label, fixed node); u32::MAX = any.
        let weight = |i: usize| {
            let n = &q.nodes[i];
            (n.label.unwrap_or(u32::MAX), n.fixed.unwrap_or(u32::MAX))
        };
        let mut masks: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
        for e in &q.edges {
            *masks.entry((e[0], e[2])).or_default() |= 1 << e[1];
        }
        macro_rules! count {
            ($data:expr, $pattern:expr) => {{
                let data = $data;
                let mut pattern = $pattern;
                let ids: Vec<_> = (0..q.nodes.len())
                    .map(|i| pattern.add_node(weight(i)))
                    .collect();
                for (&(s, t), &m) in &masks {
                    pattern.add_edge(ids[s as usize], ids[t as usize], m);
                }
                let mut node_match = |p: &(u32, u32), d: &(u32, u32)| {
                    (p.0 == u32::MAX || p.0 == d.0) && (p.1 == u32::MAX || p.1 == d.1)
                };
                let mut edge_match = |p: &u64, d: &u64| p & !d == 0;
                let n = petgraph::algo::subgraph_isomorphisms_iter(
                    &&pattern,
                    &data,
                    &mut node_match,
                    &mut edge_match,
                )
                .map_or(0, |it| it.count() as u64);
                n
            }};
        }
        match self {
            PetGraph::Undirected(d) => count!(d, UnGraph::<(u32, u32), u64>::default()),
            PetGraph::Directed(d) => count!(d, DiGraph::<(u32, u32), u64>::default()),
        }
    }
}
