//! Anchored queries must not cost more on a bigger graph: the generated common-sense queries of the
//! `matching` bench, timed on ConceptNet-100K and on the same graph plus `copies - 1` renamed copies
//! of itself (a disjoint union `copies` times larger, whose answers to these queries are the same).
//! A phase that touched every node would grow with the copies; one that follows the anchors' lists
//! would not.
//! `cargo run --release -p gpsense-benches --example anchored_scaling [copies] [queries]`.

use std::path::Path;
use std::time::Instant;

use gpsense_benches::{querygen, synth::Rng};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::compile;
use gpsense_runtime::{Engine, MatchOptions, Semantics};

/// Timing repetitions per query and graph (the median is kept).
const REPEAT: usize = 15;

fn main() {
    let mut args = std::env::args().skip(1);
    let copies: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
    let base = ingest(&[path], &IngestOptions::default(), &NoProgress)
        .expect("ingest")
        .0;
    let big = scaled(&base, copies);
    println!(
        "ConceptNet-100K: {} nodes, {} edges; x{copies}: {} nodes, {} edges",
        base.node_count(),
        base.edge_count(),
        big.node_count(),
        big.edge_count()
    );
    let (e_base, e_big) = (Engine::new(&base), Engine::new(&big));
    for semantics in [Semantics::Iso, Semantics::Hom] {
        let opts = MatchOptions {
            single_thread: true,
            semantics,
            ..MatchOptions::default()
        };
        let mut rng = Rng::new(2016);
        let (mut t_base, mut t_big, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n {
            let Some(text) = querygen::common_sense_query(&base, 6, 0.34, 8, &mut rng) else {
                continue;
            };
            let (q_base, q_big) = (
                compile(&text, &base).expect("compiles"),
                compile(&text, &big).expect("compiles"),
            );
            let (a, count_a) = time(&e_base, &q_base, &opts);
            let (b, count_b) = time(&e_big, &q_big, &opts);
            assert_eq!(count_a, count_b, "{text}");
            t_base.push(a);
            t_big.push(b);
            ratios.push(b / a);
        }
        println!(
            "{semantics}: median per query {:.4} ms on ConceptNet-100K, {:.4} ms on x{copies}; \
             per-query ratio x{copies}/base: median {:.2}, p90 {:.2} ({} queries, counts equal)",
            median(&mut t_base),
            median(&mut t_big),
            median(&mut ratios),
            quantile(&mut ratios, 0.9),
            ratios.len()
        );
    }
}

/// `g` and `copies - 1` copies with every node renamed `name#k`.
fn scaled(g: &KnowledgeGraph, copies: usize) -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for k in 0..copies {
        for (s, r, t) in g.edges() {
            let (s, r, t) = (g.node_name(s), g.relation_name(r), g.node_name(t));
            if k == 0 {
                b.add_triple(s, r, t, 1.0)
            } else {
                b.add_triple(&format!("{s}#{k}"), r, &format!("{t}#{k}"), 1.0)
            }
            .expect("names are valid");
        }
    }
    b.build().expect("builds").0
}

/// The median time of one count in ms, and the count.
fn time(e: &Engine, q: &gpsense_planner::QueryGraph, opts: &MatchOptions) -> (f64, u128) {
    let mut times = Vec::with_capacity(REPEAT);
    let mut count = 0;
    for _ in 0..REPEAT {
        let start = Instant::now();
        count = e.count(q, opts).expect("count").rows;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    (median(&mut times), count)
}

fn median(v: &mut [f64]) -> f64 {
    quantile(v, 0.5)
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or(f64::NAN)
}
