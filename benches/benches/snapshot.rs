//! Snapshot load speed: the bincode snapshot (checksum + decode + validation) against the raw
//! little-endian layout of the same arrays, and against re-ingesting the text, on a 1M-edge graph and
//! on ConceptNet-100K. The target: a snapshot loads at least 5x faster than re-ingest.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpsense_benches::{raw, synth};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;

fn workloads(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let synthetic = dir.join("synthetic-1m.tsv");
    std::fs::write(&synthetic, synth::triples_tsv(1_000_000, 7)).expect("write temp file");
    let cn100k =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
    vec![("synthetic-1M", synthetic), ("conceptnet-100k", cn100k)]
}

fn snapshot_load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    for (name, text) in workloads(dir.path()) {
        let (graph, _) = ingest(
            std::slice::from_ref(&text),
            &IngestOptions::default(),
            &NoProgress,
        )
        .expect("ingest");
        let snapshot = graph.to_snapshot_bytes().expect("encode");
        let raw_bytes = raw::encode(&graph);
        assert!(
            raw::decode(&raw_bytes) == graph,
            "raw layout must round-trip"
        );
        group.throughput(Throughput::Elements(graph.edge_count() as u64));
        group.bench_function(BenchmarkId::new("bincode-snapshot", name), |b| {
            b.iter(|| {
                KnowledgeGraph::from_snapshot_bytes(&snapshot, Path::new("bench")).expect("load")
            })
        });
        group.bench_function(BenchmarkId::new("raw-le", name), |b| {
            b.iter(|| raw::decode(&raw_bytes))
        });
        group.bench_function(BenchmarkId::new("re-ingest-text", name), |b| {
            b.iter(|| {
                ingest(
                    std::slice::from_ref(&text),
                    &IngestOptions::default(),
                    &NoProgress,
                )
                .expect("ingest")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, snapshot_load);
criterion_main!(benches);
