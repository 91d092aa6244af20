//! Published subgraph-matching benchmarks: the engines' iso counts against the expected counts.
//! `GPSENSE_BENCH_TIMES=1` prints the time of every query.
//!
//! - HPRD (SIGMOD 2020 study, `datasets/subgraph-matching/hprd-study`): all 200 queries on the DFS
//!   engine, all of them on the kernels engine too, and the rows of some queries checked one by one.
//! - Yeast (`datasets/subgraph-matching/yeast`, counts from `yeast_ans.txt`): a deterministic subset
//!   of about 100 queries of every size whose counts are at most 10^5, on both engines.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, EdgeLabel, NodeKind, QueryGraph};
use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/subgraph-matching")
        .join(rel)
}

fn load(path: &Path) -> KnowledgeGraph {
    ingest(
        &[path.to_path_buf()],
        &IngestOptions::default(),
        &NoProgress,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    .0
}

fn hprd() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| load(&dataset("hprd-study/data_graph/HPRD.graph")))
}

fn yeast() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| load(&dataset("yeast/data_graph/yeast.graph")))
}

/// `(query name, expected count)` of HPRD, in file order.
fn hprd_expected() -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(dataset("hprd-study/expected_output.res")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, count) = l.trim().split_once(':').unwrap();
            (name.to_owned(), count.parse().unwrap())
        })
        .collect()
}

fn query(data: &KnowledgeGraph, path: &Path) -> QueryGraph {
    benchmark_query(&load(path), data).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn options(engine: EngineKind, lanes: usize) -> MatchOptions {
    MatchOptions {
        semantics: Semantics::Iso,
        engine,
        lanes,
        ..MatchOptions::default()
    }
}

/// Counts every `(name, query, expected)` and returns the mismatches as text.
fn mismatches(
    engine: &Engine,
    cases: &[(String, QueryGraph, u64)],
    opts: &MatchOptions,
) -> Vec<String> {
    cases
        .iter()
        .filter_map(|(name, q, expected)| {
            let t = Instant::now();
            let got = engine.count(q, opts).map(|r| r.rows);
            if std::env::var("GPSENSE_BENCH_TIMES").is_ok() {
                println!("TIME {name} {} {:?} {expected}", opts.engine, t.elapsed());
            }
            (got.as_ref() != Ok(&u128::from(*expected))).then(|| {
                format!(
                    "{name}: {got:?}, expected {expected} ({} {} lanes)",
                    opts.engine, opts.lanes
                )
            })
        })
        .collect()
}

fn hprd_cases() -> &'static [(String, QueryGraph, u64)] {
    static CASES: OnceLock<Vec<(String, QueryGraph, u64)>> = OnceLock::new();
    CASES.get_or_init(|| {
        let data = hprd();
        hprd_expected()
            .into_iter()
            .map(|(name, count)| {
                let path = dataset(&format!("hprd-study/query_graph/{name}.graph"));
                let q = query(data, &path);
                (name, q, count)
            })
            .collect()
    })
}

#[test]
fn hprd_all_queries_dfs() {
    let start = Instant::now();
    let cases = hprd_cases();
    assert_eq!(cases.len(), 200);
    let engine = Engine::new(hprd());
    let bad = mismatches(&engine, cases, &options(EngineKind::Dfs, 1));
    println!("HPRD, 200 queries, dfs: {:.1?}", start.elapsed());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The GPU pipeline's launch sequence, run by the host emulator, on every HPRD query.
#[test]
fn hprd_all_queries_emulated_gpu_pipeline() {
    let start = Instant::now();
    let cases = hprd_cases();
    let engine = Engine::new(hprd());
    let mut bad = mismatches(&engine, cases, &options(EngineKind::Emulated, 1));
    let every_tenth: Vec<_> = cases.iter().step_by(10).cloned().collect();
    bad.extend(mismatches(
        &engine,
        &every_tenth,
        &MatchOptions {
            // The whole query's device memory: the candidate bitsets (~80 KB here), the space,
            // and level buffers small enough that levels run in parts.
            memory_budget: 256 << 10,
            ..options(EngineKind::Emulated, 32)
        },
    ));
    println!(
        "HPRD, 200 queries, emulated GPU pipeline: {:.1?}",
        start.elapsed()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // That budget made some level run in parts (more level runs than levels): the path above
    // covered it.
    let small = MatchOptions {
        memory_budget: 256 << 10,
        ..options(EngineKind::Emulated, 1)
    };
    let split = every_tenth
        .iter()
        .filter(|(_, q, _)| {
            let r = engine.collect(q, &small).unwrap().1;
            r.device_report.unwrap().levels > q.nodes.len() as u64
        })
        .count();
    assert!(split > 0, "no level ran in parts under a 256 KiB budget");
}

/// The device pipeline's overheads, counted by the emulator over HPRD-200 (the same calls a GPU
/// gets): per query at most (levels + 2) reads, no device allocation once the buffers have grown
/// to the largest query, at most 128 bytes up per query node and edge (filters, incident edges,
/// checks, the table of their lists), and down only the counts, one
/// total per level run and the rows.
#[test]
fn hprd_emulated_pipeline_reads_allocations_and_bytes() {
    let cases = hprd_cases();
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated, 1);
    for (_, q, _) in cases {
        engine.collect(q, &opts).unwrap();
    }
    let mut sums = [0u64; 8];
    let mut partials = 0u64;
    let stride = hprd().node_count().div_ceil(32) as u64;
    for (name, q, expected) in cases {
        let n = q.nodes.len() as u64;
        let m = q.edges.len() as u64;
        for rows in [false, true] {
            let report = if rows {
                engine.collect(q, &opts).unwrap().1
            } else {
                engine.count(q, &opts).unwrap()
            };
            assert_eq!(report.rows, u128::from(*expected), "{name}");
            let d = report
                .device_report
                .expect("the device pipeline reports its counters");
            let c = d.counters;
            // Warm, every level fits its buffer: one read after filtering, one of all the
            // levels' counters, and the rows.
            assert!(
                c.syncs <= 2 + rows as u64,
                "{name}: {} reads for {n} levels",
                c.syncs
            );
            // Launches per wave of filtering (at most one per node: identify, mark, refine),
            // counts and candidate-edge lists (12 whatever the edges), one per level.
            assert!(
                c.launches <= 4 * n + 11,
                "{name}: {} launches for {n} nodes and {m} edges",
                c.launches
            );
            assert_eq!(c.allocations, 0, "{name}: device allocations after warm-up");
            // The query, and the job tables of the fused launches (per node its identify and
            // refine jobs, per edge its mark step and list descriptor) in place of per-edge
            // launches' arguments; the counted nodes' list entries (80 bytes per edge at most).
            assert!(
                c.bytes_up <= 224 * (n + m) + 80 * m,
                "{name}: {} bytes up for {n} nodes and {m} edges",
                c.bytes_up
            );
            let row_bytes = if rows { expected * n * 4 } else { 0 };
            // A count's candidate bitsets come back with its counts (read 1), for the host's
            // fan-out estimates.
            let set_bytes = if rows { 0 } else { n * stride * 4 };
            // Per level run: the total, the start time, the timed-out flag, the queue of
            // work-items; the shared clock and the counted leaves' total; the filtering kernels'
            // clock (3 words, 16-byte aligned).
            let words = n + 2 * m + 4 * d.levels + 5 + 4;
            assert!(
                c.bytes_down <= 8 * words + row_bytes + set_bytes,
                "{name}: {} bytes down",
                c.bytes_down
            );
            if !rows {
                partials += d.partial_matches;
            }
            let at = rows as usize * 4;
            sums[at] += c.syncs;
            sums[at + 1] += c.launches;
            sums[at + 2] += c.bytes_up;
            sums[at + 3] += c.bytes_down;
        }
    }
    let per = |x: u64| x as f64 / cases.len() as f64;
    println!(
        "HPRD-200, counts: per query {:.1} partial matches",
        per(partials)
    );
    for (what, s) in [("counts", &sums[..4]), ("rows", &sums[4..])] {
        println!(
            "HPRD-200, {what}: per query {:.1} reads, {:.1} launches, {:.0} bytes up, {:.0} bytes down",
            per(s[0]),
            per(s[1]),
            per(s[2]),
            per(s[3])
        );
    }
}

#[test]
fn hprd_all_queries_kernels() {
    let start = Instant::now();
    let cases = hprd_cases();
    let engine = Engine::new(hprd());
    let mut bad = mismatches(&engine, cases, &options(EngineKind::Kernels, 1));
    // Warp lanes and a small memory budget (batches of partial matches) on every 10th query.
    let every_tenth: Vec<_> = cases.iter().step_by(10).cloned().collect();
    let small = MatchOptions {
        memory_budget: 64 << 10,
        ..options(EngineKind::Kernels, 32)
    };
    bad.extend(mismatches(&engine, &every_tenth, &small));
    println!(
        "HPRD, 200 queries, kernels (and 20 with 32 lanes, 64 KiB budget): {:.1?}",
        start.elapsed()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Each row a real embedding: labels kept, every query edge in the data, injective; rows distinct
/// and as many as the count, on both engines.
#[test]
fn hprd_rows_are_embeddings() {
    let start = Instant::now();
    let g = hprd();
    let engine = Engine::new(g);
    for (name, q, expected) in hprd_cases().iter().step_by(20) {
        for opts in [
            options(EngineKind::Dfs, 1),
            options(EngineKind::Kernels, 32),
        ] {
            let (rows, report) = engine.collect(q, &opts).unwrap();
            assert_eq!(report.rows, u128::from(*expected), "{name}");
            assert_eq!(rows.len() as u64, *expected, "{name}");
            let distinct: HashSet<&Vec<u32>> = rows.iter().collect();
            assert_eq!(distinct.len(), rows.len(), "{name}: repeated rows");
            for row in &rows {
                // The projection is every node, in node order.
                assert_eq!(row.len(), q.nodes.len());
                for (u, node) in q.nodes.iter().enumerate() {
                    assert_eq!(node.kind, NodeKind::Variable);
                    if let Some(l) = node.label {
                        assert_eq!(g.node_label(row[u]), l, "{name}: label of node {u}");
                    }
                }
                for e in &q.edges {
                    let EdgeLabel::Fixed(r) = e.label else {
                        panic!("{name}: a variable edge")
                    };
                    assert!(
                        g.out().has_edge(row[e.source], Some(r), row[e.target]),
                        "{name}: {row:?} lacks an edge"
                    );
                }
                let nodes: HashSet<u32> = row.iter().copied().collect();
                assert_eq!(nodes.len(), row.len(), "{name}: not injective: {row:?}");
            }
        }
    }
    println!("HPRD rows of 10 queries: {:.1?}", start.elapsed());
}

/// About 100 yeast queries: per size class, evenly spaced among those whose count is at most 10^5.
fn yeast_cases() -> Vec<(String, QueryGraph, u64)> {
    let text = std::fs::read_to_string(dataset("yeast/yeast_ans.txt")).unwrap();
    let mut by_class: std::collections::BTreeMap<String, Vec<(String, u64)>> = Default::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.split_whitespace();
        let (file, count) = (parts.next().unwrap(), parts.next().unwrap());
        let Ok(count) = count.parse::<u64>() else {
            continue;
        };
        if count > 100_000 {
            continue;
        }
        // query_dense_16_7.graph -> dense_16
        let class = file
            .split('_')
            .skip(1)
            .take(2)
            .collect::<Vec<_>>()
            .join("_");
        by_class
            .entry(class)
            .or_default()
            .push((file.to_owned(), count));
    }
    let data = yeast();
    let mut cases = Vec::new();
    for (_, mut files) in by_class {
        files.sort();
        let step = files.len().div_ceil(14).max(1);
        for (file, count) in files.into_iter().step_by(step) {
            let q = query(data, &dataset(&format!("yeast/query_graph/{file}")));
            cases.push((file, q, count));
        }
    }
    cases
}

#[test]
fn yeast_subset_both_engines() {
    let start = Instant::now();
    let cases = yeast_cases();
    assert!(cases.len() >= 90, "{} yeast queries", cases.len());
    let engine = Engine::new(yeast());
    let mut bad = mismatches(&engine, &cases, &options(EngineKind::Dfs, 1));
    // One lane: 32 lanes are checked on HPRD and by the oracle tests, and cost several times more
    // on a CPU for the largest levels here.
    bad.extend(mismatches(
        &engine,
        &cases,
        &options(EngineKind::Kernels, 1),
    ));
    println!(
        "yeast, {} queries, dfs and kernels: {:.1?}",
        cases.len(),
        start.elapsed()
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The emulated device on the yeast subset: its counts equal the published ones, and it counts
/// (not enumerates) nodes whose neighbours are all matched, not only leaves: some query's plan has
/// a counted node next to two enumerated ones.
#[test]
fn yeast_subset_on_the_emulated_device_counts_surrounded_and_linked_nodes() {
    let cases = yeast_cases();
    let engine = Engine::new(yeast());
    let opts = options(EngineKind::Emulated, 1);
    let (mut surrounded, mut linked) = (0, 0);
    let mut bad = Vec::new();
    for (name, q, expected) in &cases {
        let r = engine
            .count(q, &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if r.rows != u128::from(*expected) {
            bad.push(format!("{name}: {} (expected {expected})", r.rows));
        }
        let next_to_several = |why: &String| {
            why.split_once(": next to ").is_some_and(|(_, rest)| {
                rest.split(" only").next().is_some_and(|n| n.contains(", "))
            })
        };
        surrounded += r.join_plan.rationale.iter().any(next_to_several) as usize;
        // Groups of one label counted together (iso): their candidates may meet.
        linked += r
            .join_plan
            .rationale
            .iter()
            .any(|why| why.contains(", linked with ")) as usize;
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    println!(
        "{surrounded} surrounded, {linked} linked of {}",
        cases.len()
    );
    assert!(
        surrounded >= 10,
        "{surrounded} queries count a node with several neighbours"
    );
    assert!(linked >= 10, "{linked} queries count linked groups");
}
