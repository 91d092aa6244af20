//! Query processing time (plan + filter + join, graph loaded once):
//! - all 200 HPRD queries of the SIGMOD 2020 study (the reference C++ framework, GraphQL filter and
//!   order with LFTJ: 0.19 s in total on this machine), per engine;
//! - 6-node common-sense queries with concept nodes on ConceptNet-100K (target: under 1 ms each).

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpsense_benches::{querygen, synth::Rng};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, compile, QueryGraph};
use gpsense_runtime::{Engine, EngineKind, MatchOptions};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets")
        .join(rel)
}

fn load(path: PathBuf) -> KnowledgeGraph {
    ingest(&[path], &IngestOptions::default(), &NoProgress)
        .expect("ingest")
        .0
}

fn hprd(c: &mut Criterion) {
    let dir = dataset("subgraph-matching/hprd-study");
    let data = load(dir.join("data_graph/HPRD.graph"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("query_graph"))
        .expect("queries")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let queries: Vec<QueryGraph> = files
        .into_iter()
        .map(|f| benchmark_query(&load(f), &data).expect("query"))
        .collect();
    let engine = Engine::new(&data);
    let mut group = c.benchmark_group("hprd-200-queries");
    group.sample_size(10);
    for kind in [EngineKind::Dfs, EngineKind::Kernels] {
        let opts = MatchOptions {
            engine: kind,
            single_thread: true,
            ..MatchOptions::default()
        };
        group.bench_function(BenchmarkId::new("all-200", kind), |b| {
            b.iter(|| {
                queries
                    .iter()
                    .map(|q| engine.count(q, &opts).expect("count").rows)
                    .sum::<u128>()
            })
        });
    }
    group.finish();
}

fn conceptnet(c: &mut Criterion) {
    let data = load(dataset("conceptnet-100k/train.txt.gz"));
    let mut rng = Rng::new(2016);
    let queries: Vec<QueryGraph> = (0..50)
        .filter_map(|_| querygen::common_sense_query(&data, 6, 0.34, 8, &mut rng))
        .map(|text| compile(&text, &data).expect("generated queries compile"))
        .collect();
    let engine = Engine::new(&data);
    let mut group = c.benchmark_group("conceptnet-100k-6-node");
    for kind in [EngineKind::Dfs, EngineKind::Kernels] {
        let opts = MatchOptions {
            engine: kind,
            single_thread: true,
            ..MatchOptions::default()
        };
        group.bench_function(
            BenchmarkId::new(format!("{}-queries", queries.len()), kind),
            |b| {
                b.iter(|| {
                    queries
                        .iter()
                        .map(|q| engine.count(q, &opts).expect("count").rows)
                        .sum::<u128>()
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, hprd, conceptnet);
criterion_main!(benches);
