//! Compression time (three levels, the paper's thresholds) and query time on a compressed graph
//! against the uncompressed one, on ConceptNet-100K; and a big count through the compressed graph
//! (`count/...`: 99,252,414 matches, its leaves counted as products, not listed).
//! `examples/compression.rs` prints the full report (Table 4 per graph, many queries).

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpsense_compress::{compress, CompressOptions, NoProgress};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress as Quiet};
use gpsense_planner::compile;
use gpsense_runtime::{CompressedEngine, Engine, EngineKind, MatchOptions, Semantics};

/// The generated ConceptNet query with 99,252,414 matches under iso (`?v1`, `?v2`, `?v5`: leaves).
const BIG_COUNT: &str = "SELECT * WHERE { ?v0 AtLocation ?v1 . ?v0 AtLocation ?v2 . \
    ?v0 AtLocation \"hardware store\" . ?v0 AtLocation \"tool chest\" . ?v0 AtLocation ?v5 }";

const QUERIES: [&str; 3] = [
    "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
    "SELECT * WHERE { ?a UsedFor ?b . ?b AtLocation ?c . ?a AtLocation ?c }",
    "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?c IsA ?d }",
];

fn bench(c: &mut Criterion) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
    let g = ingest(&[path], &IngestOptions::default(), &Quiet)
        .expect("ingest")
        .0;
    let opts = CompressOptions::default();
    c.bench_function("compress/conceptnet-100k", |b| {
        b.iter(|| compress(&g, &opts, &NoProgress).expect("compress"))
    });
    let compressed = compress(&g, &opts, &NoProgress).expect("compress");
    let plain = Engine::new(&g);
    let through = CompressedEngine::new(&g, &compressed).expect("same graph");
    let mut group = c.benchmark_group("query/conceptnet-100k");
    for (i, text) in QUERIES.iter().enumerate() {
        let q = compile(text, &g).expect("compiles");
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let m = MatchOptions {
                semantics,
                engine: EngineKind::Dfs,
                single_thread: true,
                ..MatchOptions::default()
            };
            let id = format!("q{i}-{semantics}");
            group.bench_function(BenchmarkId::new("uncompressed", &id), |b| {
                b.iter(|| plain.count(&q, &m).expect("count").rows)
            });
            group.bench_function(BenchmarkId::new("compressed", &id), |b| {
                b.iter(|| through.count(&q, &m).expect("count").report.rows)
            });
        }
    }
    group.finish();
    let q = compile(BIG_COUNT, &g).expect("compiles");
    let mut group = c.benchmark_group("count/conceptnet-100k");
    for semantics in [Semantics::Iso, Semantics::Hom] {
        let m = MatchOptions {
            semantics,
            engine: EngineKind::Dfs,
            single_thread: true,
            ..MatchOptions::default()
        };
        let want = plain.count(&q, &m).expect("count").rows;
        assert_eq!(through.count(&q, &m).expect("count").report.rows, want);
        let id = format!("star-{semantics}");
        group.bench_function(BenchmarkId::new("uncompressed", &id), |b| {
            b.iter(|| plain.count(&q, &m).expect("count").rows)
        });
        group.bench_function(BenchmarkId::new("compressed", &id), |b| {
            b.iter(|| through.count(&q, &m).expect("count").report.rows)
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
