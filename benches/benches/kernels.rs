//! Kernel variants side by side (`gpsense_kernels::variants`): each kernel's variants on the same
//! inputs from ConceptNet-100K.

use std::path::Path;
use std::sync::atomic::AtomicU32;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpsense_benches::synth::Rng;
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::Csr;
use gpsense_kernels::variants::{COUNT_EDGE_CANDIDATES, FILTER_NEIGHBOURS, SCAN, WRITE_WORD};
use gpsense_kernels::{bits, Adjacency, Dir, GraphView, NONE};

fn adjacency(c: &Csr) -> Adjacency<'_> {
    Adjacency::new(c.offsets(), c.targets(), c.labels())
}

fn variants(c: &mut Criterion) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
    let g = ingest(&[path], &IngestOptions::default(), &NoProgress)
        .expect("ingest")
        .0;
    let view = GraphView {
        out: adjacency(g.out()),
        inc: adjacency(g.inc()),
        node_labels: g.node_labels(),
    };
    let mut rng = Rng::new(7);
    let n = g.node_count() as u64;
    let words = bits::words_for(n as usize);
    let mut candidates: Vec<u32> = (0..4096).map(|_| rng.skewed(n) as u32).collect();
    candidates.sort_unstable();
    candidates.dedup();
    let allowed: Vec<u32> = (0..words)
        .map(|_| rng.next_u64() as u32 | rng.next_u64() as u32)
        .collect();

    let mut group = c.benchmark_group("kernel-variants");
    let values: Vec<u64> = (0..1 << 20).map(|_| rng.below(100)).collect();
    for v in SCAN {
        group.bench_function(BenchmarkId::new("scan-1M", v.name), |b| {
            b.iter(|| (v.run)(&mut values.clone()))
        });
    }
    let mut out = [0u32; 32];
    for v in WRITE_WORD {
        group.bench_function(BenchmarkId::new("write-word-all-words", v.name), |b| {
            b.iter(|| {
                for (w, &word) in allowed.iter().enumerate() {
                    (v.run)(w, word, &mut out[..word.count_ones() as usize]);
                }
            })
        });
    }
    for v in FILTER_NEIGHBOURS {
        group.bench_function(BenchmarkId::new("filter-neighbours", v.name), |b| {
            b.iter(|| {
                let mark: Vec<AtomicU32> = (0..words).map(|_| AtomicU32::new(0)).collect();
                for i in 0..candidates.len() {
                    (v.run)(i, &candidates, Dir::In, NONE, &allowed, &mark, &view);
                }
                mark
            })
        });
    }
    for v in COUNT_EDGE_CANDIDATES {
        group.bench_function(BenchmarkId::new("count-edge-candidates", v.name), |b| {
            b.iter(|| {
                (0..candidates.len())
                    .map(|i| (v.run)(i, &candidates, Dir::In, NONE, &allowed, &view))
                    .sum::<u32>()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, variants);
criterion_main!(benches);
