//! Work stealing in the warp join, measured by the emulator's replay of each join launch on a model
//! GPU (`device::balance`: the H100's resident warps, one step a tick; `DeviceCounters::warp_span`
//! as the kernels take work, `warp_span_strided` as each warp's own stride would, and
//! `warp_span_bound`, the least any schedule could take; each summed over the launches). Warps
//! take their level's items from a queue once their own is done, and in a batch the items of the
//! queries after their own: no warp keeps a long stride of rows while others idle.
//!
//! Counts stay those of `dfs`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, QueryGraph};
use gpsense_runtime::{DeviceCounters, Engine, EngineKind, MatchOptions, Semantics};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/subgraph-matching/yeast")
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

fn yeast() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| load(&dataset("data_graph/yeast.graph")))
}

fn query(name: &str) -> QueryGraph {
    let path = dataset(&format!("query_graph/{name}.graph"));
    benchmark_query(&load(&path), yeast()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn options(engine: EngineKind) -> MatchOptions {
    MatchOptions {
        semantics: Semantics::Iso,
        engine,
        ..MatchOptions::default()
    }
}

fn describe(c: &DeviceCounters) -> String {
    format!(
        "span {} steps, strided {}, bound {}; {} launches",
        c.warp_span, c.warp_span_strided, c.warp_span_bound, c.launches
    )
}

/// Yeast's 8-node queries 1-12 (dense and sparse, up to 10^5-10^6 matches) and 40 of 4 nodes.
fn mixed() -> Vec<String> {
    let mut names = Vec::new();
    for kind in ["dense", "sparse"] {
        names.extend((1..=12).map(|i| format!("query_{kind}_8_{i}")));
    }
    names.extend((1..=40).map(|i| format!("query_dense_4_{i}")));
    names
}

#[test]
fn a_yeast_batch_s_joins_take_about_their_bound() {
    let names = mixed();
    let engine = Engine::new(yeast());
    let queries: Vec<QueryGraph> = names.iter().map(|n| query(n)).collect();
    let (emulated, dfs) = (options(EngineKind::Emulated), options(EngineKind::Dfs));
    let batch: Vec<_> = queries.iter().map(|q| (q, &emulated)).collect();
    let report = engine.count_batch(&batch);
    for ((name, q), r) in names.iter().zip(&queries).zip(&report.reports) {
        let got = r.as_ref().unwrap_or_else(|e| panic!("{name}: {e}")).rows;
        assert_eq!(got, engine.count(q, &dfs).unwrap().rows, "{name}");
    }
    let c = report.counters;
    println!(
        "yeast, {} queries in a batch: {}",
        names.len(),
        describe(&c)
    );
    assert!(c.warp_span <= c.warp_span_strided, "{c:?}");
    // Near the least any schedule could take (the strided warps were 40% over it).
    assert!(c.warp_span * 100 <= c.warp_span_bound * 115, "{c:?}");
}

/// A query alone whose levels run with fewer warps than parents (4,096 at most): its warps take
/// the level's rows from the queue.
#[test]
fn a_query_s_levels_share_their_rows_among_the_warps() {
    let engine = Engine::new(yeast());
    let q = query("query_dense_8_30");
    let r = engine.count(&q, &options(EngineKind::Emulated)).unwrap();
    let dfs = engine.count(&q, &options(EngineKind::Dfs)).unwrap();
    assert_eq!(r.rows, dfs.rows);
    let c = r.device_report.unwrap().counters;
    println!("query_dense_8_30 alone: {}", describe(&c));
    assert!(c.warp_span <= c.warp_span_strided, "{c:?}");
    assert!(c.warp_span * 100 <= c.warp_span_bound * 115, "{c:?}");
}
