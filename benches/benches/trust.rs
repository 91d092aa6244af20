//! TruST on ConceptNet-100K and on the seed paper's random graphs.
//!
//! First the planted trials (200 templates copied from the graph, two names misspelt, one edge
//! removed; the planted matching must be the top answer), printed as a rate with every miss; then
//! criterion timings of one search per workload. `cargo bench -p gpsense-benches --bench trust`;
//! `TRUST_TRIALS=N` changes the number of trials. The Figure 13 table with the seed's times is
//! `cargo run --release -p gpsense-benches --example trust_table`.

use std::path::Path;

use criterion::{BenchmarkId, Criterion};
use gpsense_benches::synth::Rng;
use gpsense_benches::trust_trials::{
    plant, random_data_graph, random_template, run_trials, TrialConfig, FIGURE_13,
};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_trust::{NameIndex, NodeText, Params, Trust};

fn conceptnet() -> KnowledgeGraph {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
    ingest(&[path], &IngestOptions::default(), &NoProgress)
        .expect("ingest ConceptNet-100K")
        .0
}

fn planted_trials(trust: &Trust) {
    let trials = std::env::var("TRUST_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let cfg = TrialConfig {
        trials,
        ..TrialConfig::default()
    };
    let report = run_trials(trust, &cfg, &Params::default());
    println!(
        "planted trials on ConceptNet-100K: {}/{} top-1 ({:.1}%), {} in the top {}, {:.1} ms per search",
        report.hits,
        report.trials,
        100.0 * report.rate(),
        report.in_top,
        Params::default().top,
        report.search_time.as_secs_f64() * 1e3 / report.trials.max(1) as f64
    );
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e3 / report.trials.max(1) as f64;
    println!(
        "  per search: similarity {:.2} ms, one-hop {:.2} ms, traversal {:.2} ms",
        per(report.phases.similarity),
        per(report.phases.one_hop),
        per(report.phases.traversal)
    );
    for miss in &report.misses {
        println!("  miss: {miss}");
    }
}

fn timings(c: &mut Criterion, cn: &Trust) {
    let mut group = c.benchmark_group("trust");
    group.sample_size(10);
    let mut rng = Rng::new(7);
    let planted = loop {
        if let Some(p) = plant(cn.graph(), &mut rng, 5, 2) {
            break p;
        }
    };
    // The name index, built once per graph: the most of a one-shot `gpsense trust`.
    group.bench_function("conceptnet-100k/name-index", |b| {
        b.iter(|| NameIndex::build(cn.graph(), NodeText::Name))
    });
    group.bench_function("conceptnet-100k/planted-5", |b| {
        b.iter(|| {
            cn.search(&planted.template, &Params::default())
                .expect("search")
        })
    });
    for row in FIGURE_13.iter().filter(|r| r.data_nodes == 10_000) {
        let g = random_data_graph(row.data_nodes, row.data_edges, 1);
        let t = random_template(&g, row.template_nodes, row.template_edges, 2);
        let trust = Trust::new(&g);
        let id = BenchmarkId::new(
            "random-10000x40000",
            format!("{}x{}", row.template_nodes, row.template_edges),
        );
        group.bench_function(id, |b| {
            b.iter(|| trust.search(&t, &Params::default()).expect("search"))
        });
    }
    group.finish();
}

fn main() {
    let g = conceptnet();
    let trust = Trust::new(&g);
    planted_trials(&trust);
    let mut c = Criterion::default().configure_from_args();
    timings(&mut c, &trust);
    c.final_summary();
}
