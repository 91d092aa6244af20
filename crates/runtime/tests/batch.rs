//! Many queries answered as one batch on the emulated device (`Engine::count_batch`): the same
//! counts as one by one and as `dfs`, the batch's launches and reads per query, and each query's
//! own errors and limits.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, QueryGraph};
use gpsense_runtime::{Engine, EngineKind, MatchError, MatchOptions, Semantics};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/subgraph-matching/hprd-study")
        .join(rel)
}

fn hprd() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let path = dataset("data_graph/HPRD.graph");
        ingest(&[path], &IngestOptions::default(), &NoProgress)
            .expect("HPRD loads")
            .0
    })
}

/// `(name, query, published count)` of HPRD's 200 queries, in the expected file's order.
fn cases() -> &'static [(String, QueryGraph, u64)] {
    static CASES: OnceLock<Vec<(String, QueryGraph, u64)>> = OnceLock::new();
    CASES.get_or_init(|| {
        let text = std::fs::read_to_string(dataset("expected_output.res")).unwrap();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let (name, count) = l.trim().split_once(':').unwrap();
                let path = dataset(&format!("query_graph/{name}.graph"));
                let g = ingest(&[path], &IngestOptions::default(), &NoProgress)
                    .unwrap()
                    .0;
                let q = benchmark_query(&g, hprd()).unwrap();
                (name.to_owned(), q, count.parse().unwrap())
            })
            .collect()
    })
}

fn options(engine: EngineKind) -> MatchOptions {
    MatchOptions {
        semantics: Semantics::Iso,
        engine,
        ..MatchOptions::default()
    }
}

#[test]
fn hprd_as_one_batch_counts_as_alone_and_as_dfs_in_few_launches_and_reads() {
    let cases = cases();
    assert_eq!(cases.len(), 200);
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated);
    let batch: Vec<_> = cases.iter().map(|(_, q, _)| (q, &opts)).collect();
    let report = engine.count_batch(&batch);
    assert_eq!(report.batched, 200);
    let dfs = options(EngineKind::Dfs);
    for (k, ((name, q, expected), r)) in cases.iter().zip(&report.reports).enumerate() {
        let got = r.as_ref().unwrap_or_else(|e| panic!("{name}: {e}")).rows;
        assert_eq!(got, u128::from(*expected), "{name}: batched");
        assert_eq!(got, engine.count(q, &dfs).unwrap().rows, "{name}: dfs");
        if k % 10 == 0 {
            assert_eq!(got, engine.count(q, &opts).unwrap().rows, "{name}: alone");
        }
    }
    // Warm (the arena sized by the first batch), the same batch again: its counters.
    let warm = engine.count_batch(&batch);
    let c = warm.counters;
    let per = |x: u64| x as f64 / 200.0;
    let partials: u64 = warm
        .reports
        .iter()
        .map(|r| {
            r.as_ref()
                .unwrap()
                .device_report
                .as_ref()
                .unwrap()
                .partial_matches
        })
        .sum();
    println!(
        "HPRD-200 as one batch: {} launches, {} reads, {} allocations, {} B up, {} B down; \
         per query {:.2} launches, {:.3} reads, {:.1} partial matches",
        c.launches,
        c.syncs,
        c.allocations,
        c.bytes_up,
        c.bytes_down,
        per(c.launches),
        per(c.syncs),
        per(partials)
    );
    assert!(per(c.launches) <= 8.0, "{} launches", c.launches);
    assert!(per(c.syncs) <= 1.0, "{} reads", c.syncs);
    assert_eq!(c.allocations, 0, "a warm batch allocates nothing");
}

#[test]
fn a_query_that_fails_or_times_out_leaves_the_others_answered() {
    let cases = &cases()[..12];
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated);
    // Too small for its candidate bitsets alone.
    let tiny = MatchOptions {
        memory_budget: 4 << 10,
        ..opts.clone()
    };
    let late = MatchOptions {
        timeout: Some(Duration::ZERO),
        ..opts.clone()
    };
    let batch: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(k, (_, q, _))| {
            let o = match k {
                3 => &tiny,
                7 => &late,
                _ => &opts,
            };
            (q, o)
        })
        .collect();
    let report = engine.count_batch(&batch);
    for (k, ((name, _, expected), r)) in cases.iter().zip(&report.reports).enumerate() {
        match k {
            3 => assert!(
                matches!(r, Err(MatchError::DeviceBudget { .. })),
                "{name}: {r:?}"
            ),
            7 => assert!(r.as_ref().unwrap().timed_out, "{name}: {r:?}"),
            _ => {
                let r = r.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(r.rows, u128::from(*expected), "{name}");
                assert!(!r.timed_out, "{name}");
            }
        }
    }
}

#[test]
fn limits_and_budgets_hold_per_query_in_a_batch() {
    let cases: Vec<_> = cases().iter().step_by(10).collect();
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated);
    // Room for the candidate bitsets and space (~140 KB here) and a few hundred rows per level:
    // some levels outgrow their batch buffers and those queries go on alone after the batch.
    let small = MatchOptions {
        memory_budget: 165_000,
        ..opts.clone()
    };
    let limited = MatchOptions {
        limit: Some(3),
        ..opts.clone()
    };
    let per_query: Vec<&MatchOptions> = (0..cases.len())
        .map(|k| match k % 3 {
            0 => &small,
            1 => &limited,
            _ => &opts,
        })
        .collect();
    let batch: Vec<_> = cases
        .iter()
        .zip(&per_query)
        .map(|((_, q, _), o)| (q, *o))
        .collect();
    let report = engine.count_batch(&batch);
    assert_eq!(report.batched, cases.len());
    for (((name, q, _), o), r) in cases.iter().zip(&per_query).zip(&report.reports) {
        let r = r.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        let alone = engine.count(q, o).unwrap();
        assert_eq!(r.rows, alone.rows, "{name}");
        assert_eq!(r.limit_reached, alone.limit_reached, "{name}");
    }
    // Two reads are the batch's own: each more is a level of a query that went on alone.
    assert!(report.counters.syncs > 2, "no batched query went on alone");
}

#[test]
fn counts_on_device_follows_the_engine_and_autos_pick() {
    let engine = Engine::new(hprd());
    let q = &cases()[0].1;
    assert!(engine.counts_on_device(q, &options(EngineKind::Emulated)));
    assert!(!engine.counts_on_device(q, &options(EngineKind::Dfs)));
    assert!(!engine.counts_on_device(q, &options(EngineKind::Kernels)));
    // Without a GPU, `auto` counts on the CPU: a front end has no batch to gather it into.
    if engine.gpu().is_err() {
        assert!(!engine.counts_on_device(q, &options(EngineKind::Auto)));
    }
}
