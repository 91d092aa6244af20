//! The compression report: Table 4 (level, delta, nodes, edges, ratio, time) per graph, then the same
//! generated common-sense queries answered on the uncompressed and the compressed graph (counts
//! checked equal), with times.
//!
//! `cargo run --release -p gpsense-benches --example compression [queries] [synthetic-edges]`
//! Graphs: ConceptNet-100K, WordNet 3.0, the Russian ConceptNet, SenticNet 6 when
//! `cargo xtask fetch senticnet` has put it in `datasets/fetched/`, and a synthetic ConceptNet-sized
//! graph (default 4,000,000 edges) for the time a large graph takes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpsense_benches::{querygen, synth};
use gpsense_compress::{compress, CompressOptions, CompressedGraph, NoProgress};
use gpsense_graph::ingest::{ingest, ingest_bytes, Format, IngestOptions, NoProgress as Quiet};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::compile;
use gpsense_runtime::{CompressedEngine, Engine, EngineKind, MatchOptions, Semantics};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets")
        .join(rel)
}

fn load(files: &[&str]) -> Option<KnowledgeGraph> {
    let paths: Vec<PathBuf> = files.iter().map(|f| dataset(f)).collect();
    if !paths.iter().all(|p| p.exists()) {
        return None;
    }
    Some(
        ingest(&paths, &IngestOptions::default(), &Quiet)
            .expect("ingest")
            .0,
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let queries: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let synthetic: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(4_000_000);
    let graphs: Vec<(&str, Option<KnowledgeGraph>)> = vec![
        ("ConceptNet-100K", load(&["conceptnet-100k/train.txt.gz"])),
        (
            "WordNet 3.0",
            load(&[
                "wordnet30/wn30_synset.nodes.tsv.gz",
                "wordnet30/wn30_synset.edges.tsv.gz",
            ]),
        ),
        (
            "Russian ConceptNet",
            load(&["russian-conceptnet/edges.tsv.gz"]),
        ),
        ("SenticNet 6", load(&["fetched/senticnet6.triples.tsv.gz"])),
    ];
    for (name, graph) in graphs {
        match graph {
            Some(g) => report(name, &g, queries),
            None => println!("## {name}: not present (cargo xtask fetch senticnet)\n"),
        }
    }
    if synthetic > 0 {
        let text = synth::triples_tsv(synthetic, 2016);
        let g = ingest_bytes(text.as_bytes(), Format::Triples, &IngestOptions::default())
            .expect("synthetic")
            .0;
        let name = format!("synthetic ({synthetic} random edges)");
        report(&name, &g, 0);
    }
}

fn report(name: &str, g: &KnowledgeGraph, queries: usize) {
    println!(
        "## {name}: {} nodes, {} edges",
        g.node_count(),
        g.edge_count()
    );
    let start = Instant::now();
    let c = compress(g, &CompressOptions::default(), &NoProgress).expect("compress");
    let took = start.elapsed();
    println!("| level | delta | nodes | edges | ratio | time |");
    println!("|---|---|---|---|---|---|");
    for r in c.table() {
        let delta = r.delta.map_or("-".to_owned(), |d| d.to_string());
        println!(
            "| {} | {delta} | {} | {} | {:.1}% | {:.2} s |",
            r.level,
            r.nodes,
            r.edges,
            r.ratio * 100.0,
            r.seconds
        );
    }
    println!(
        "compression in total: {:.2} s (with the weights and checks)\n",
        took.as_secs_f64()
    );
    if queries > 0 {
        compare_queries(g, &c, queries);
    }
}

/// Generated queries (4 to 6 nodes, a third of them concepts), counted both ways under iso and hom.
fn compare_queries(g: &KnowledgeGraph, c: &CompressedGraph, n: usize) {
    let plain = Engine::new(g);
    let through = CompressedEngine::new(g, c).expect("same graph");
    let mut rng = synth::Rng::new(2016);
    println!("| semantics | queries | total matches | uncompressed median / p90 / total | compressed median / p90 / total | compressed matches | pruned (Def. 5) |");
    println!("|---|---|---|---|---|---|---|");
    let texts: Vec<String> = (0..n)
        .filter_map(|i| querygen::common_sense_query(g, 4 + i % 3, 0.34, 8, &mut rng))
        .collect();
    for semantics in [Semantics::Iso, Semantics::Hom] {
        let opts = MatchOptions {
            semantics,
            engine: EngineKind::Dfs,
            single_thread: true,
            timeout: Some(Duration::from_secs(10)),
            ..MatchOptions::default()
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let (mut matches, mut images, mut pruned, mut skipped) = (0u128, 0u64, 0u64, 0);
        for text in &texts {
            let q = compile(text, g).expect("compiles");
            let t = Instant::now();
            let want = plain.count(&q, &opts).expect("count");
            let ta = t.elapsed();
            let t = Instant::now();
            let got = through.count(&q, &opts).expect("count");
            let tb = t.elapsed();
            if want.timed_out || got.report.timed_out {
                skipped += 1;
                continue;
            }
            assert_eq!(want.rows, got.report.rows, "{text}");
            matches += want.rows;
            images += got.expansion.compressed_matches;
            pruned += got.expansion.pruned_by_weight;
            a.push(ta);
            b.push(tb);
        }
        println!(
            "| {semantics} | {}{} | {matches} | {} | {} | {images} | {pruned} |",
            a.len(),
            if skipped > 0 {
                format!(" ({skipped} timed out)")
            } else {
                String::new()
            },
            summary(&mut a),
            summary(&mut b)
        );
    }
    println!();
}

fn summary(times: &mut [Duration]) -> String {
    if times.is_empty() {
        return "-".into();
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let total: Duration = times.iter().sum();
    format!(
        "{:.3} / {:.3} / {:.1} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(total)
    )
}
