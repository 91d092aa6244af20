//! Benchmark queries (SIGMOD 2020 study, HPRD) turned into query graphs and planned by the
//! `deg / freq(label)` ranking of section 4.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::query::ABSENT_LABEL;
use gpsense_planner::{benchmark_query, plan_with, EdgeLabel, NodeKind, PlannerStats, Projected};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/subgraph-matching/hprd-study")
        .join(rel)
}

fn load(rel: &str) -> KnowledgeGraph {
    ingest(&[dataset(rel)], &IngestOptions::default(), &NoProgress)
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .0
}

fn hprd() -> &'static (KnowledgeGraph, PlannerStats) {
    static DATA: OnceLock<(KnowledgeGraph, PlannerStats)> = OnceLock::new();
    DATA.get_or_init(|| {
        let g = load("data_graph/HPRD.graph");
        let stats = PlannerStats::new(&g);
        (g, stats)
    })
}

#[test]
fn query_dense_16_1() {
    let (data, stats) = hprd();
    let query = load("query_graph/query_dense_16_1.graph");
    let q = benchmark_query(&query, data).unwrap();
    assert_eq!((q.nodes.len(), q.edges.len()), (16, 24));
    assert!(q.nodes.iter().all(|n| n.kind == NodeKind::Variable));
    assert_eq!(q.nodes[0].name, "?u0");
    // Vertex 0 has label 8, vertex 4 label 192 in the file: the same names in the data.
    let data_label = |name: &str| data.node_label_names().get(name);
    assert_eq!(q.nodes[0].label, data_label("8"));
    assert_eq!(q.nodes[4].label, data_label("192"));
    assert!(q
        .nodes
        .iter()
        .all(|n| n.label.is_some_and(|l| l != ABSENT_LABEL)));
    let edge = EdgeLabel::Fixed(data.relation_id("edge").unwrap());
    assert!(q
        .edges
        .iter()
        .all(|e| e.source < e.target && e.label == edge));
    assert_eq!((q.edges[0].source, q.edges[0].target), (0, 2));
    assert_eq!(
        q.projection,
        (0..16).map(Projected::Node).collect::<Vec<_>>()
    );
    assert_eq!(q.components().len(), 1);

    let p = plan_with(&q, data, stats);
    p.validate(&q).unwrap();
    // The start has the highest degree / label frequency.
    let rank = |u: usize| {
        let degree = q
            .edges
            .iter()
            .filter(|e| e.source == u || e.target == u)
            .count();
        degree as f64 / stats.label_frequency(q.nodes[u].label.unwrap()) as f64
    };
    let best = (0..16).map(rank).fold(0.0, f64::max);
    assert_eq!(rank(p.order[0]), best, "{:?}", p.rationale);
    assert!(
        p.rationale[0].contains("start: highest rank"),
        "{:?}",
        p.rationale
    );
}

#[test]
fn every_dense_16_query_plans() {
    let (data, stats) = hprd();
    let dir = dataset("query_graph");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("query_dense_16_") || count >= 40 {
            continue;
        }
        let query = load(&format!("query_graph/{name}"));
        let q = benchmark_query(&query, data).unwrap();
        let p = plan_with(&q, data, stats);
        p.validate(&q).unwrap_or_else(|e| panic!("{name}: {e}"));
        count += 1;
    }
    assert!(count > 0);
}
