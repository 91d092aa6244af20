//! Where the exact engine's time goes, per query and phase: each benchmark query of a folder run
//! once cold (as `cargo xtask bench --only exact-peers` times it: the first run in the process) and
//! `warm` more times, on one thread. Prints per query the cold time, the fastest warm time and the
//! warm phases (plan and layout, candidate generation, refinement, search), nodes tested and
//! candidate-space edges; then the sums. The tool for issue 30's set-up cost.
//!
//! `cargo run --release -p gpsense-benches --example exact_phases -- DATA.graph QUERY_DIR [warm]
//! [limit]`, e.g. `datasets/subgraph-matching/hprd-study/data_graph/HPRD.graph
//! datasets/subgraph-matching/hprd-study/query_graph 5`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpsense_benches::{or_exit, suite};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::benchmark_query;
use gpsense_runtime::{Engine, EngineKind, MatchOptions, MatchReport, Semantics};

// The allocator the CLI and the bench runner use.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn load(path: &Path) -> KnowledgeGraph {
    or_exit(suite::load(path), &path.display())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// (plan and layout, generation, refinement, search set-up, search, total) of one report, in ms.
fn phases(r: &MatchReport) -> [f64; 6] {
    let t = &r.times;
    let (gen, refine) = (ms(r.filter.filter_time), ms(r.filter.refine_time));
    let total = ms(t.total);
    [
        ms(t.plan),
        gen,
        refine,
        total - ms(t.plan) - gen - refine - ms(t.join),
        ms(t.join),
        total,
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(data), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: exact_phases DATA.graph QUERY_DIR [warm runs] [match limit]");
        std::process::exit(2);
    };
    let warm: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let limit: Option<u64> = args.get(3).and_then(|a| a.parse().ok());
    let g = load(Path::new(data));
    let t = std::time::Instant::now();
    let engine = Engine::new(&g);
    eprintln!("Engine::new: {:.2} ms", ms(t.elapsed()));
    let opts = MatchOptions {
        semantics: Semantics::Iso,
        engine: EngineKind::Dfs,
        single_thread: true,
        limit,
        ..MatchOptions::default()
    };
    let mut files: Vec<PathBuf> = or_exit(std::fs::read_dir(dir), &dir)
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "graph"))
        .collect();
    files.sort();
    let queries: Vec<_> = files
        .iter()
        .map(|p| (p, or_exit(benchmark_query(&load(p), &g), &p.display())))
        .collect();
    println!("query\tcold_ms\twarm_ms\tplan+layout\tgenerate\trefine\tsetup\tsearch\ttested\tgenerated\trefined\tedges\tcount\tsearch_nodes\tleaf_counts");
    let (mut cold_sums, mut sums) = ([0.0; 6], [0.0; 6]);
    for (p, q) in &queries {
        let cold = or_exit(engine.count(q, &opts), &p.display());
        let mut best = phases(&cold);
        for _ in 0..warm {
            let r = or_exit(engine.count(q, &opts), &p.display());
            let ph = phases(&r);
            if ph[5] < best[5] {
                best = ph;
            }
        }
        for (s, v) in cold_sums.iter_mut().zip(phases(&cold)) {
            *s += v;
        }
        for (s, v) in sums.iter_mut().zip(best) {
            *s += v;
        }
        println!(
            "{}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            p.file_stem().unwrap_or_default().to_string_lossy(),
            ms(cold.times.total),
            best[5],
            best[0],
            best[1],
            best[2],
            best[3],
            best[4],
            cold.filter.tested,
            cold.filter.after_filter.iter().sum::<usize>(),
            cold.filter.after_refine.iter().sum::<usize>(),
            cold.edge_candidates.unwrap_or(0),
            cold.rows,
            cold.search.as_ref().map_or(0, |s| s.nodes),
            cold.search.as_ref().map_or(0, |s| s.leaf_counts),
        );
    }
    let line = |s: [f64; 6]| {
        format!(
            "{:.2} ms = plan+layout {:.2}, generate {:.2}, refine {:.2}, search set-up {:.2}, search {:.2}",
            s[5], s[0], s[1], s[2], s[3], s[4]
        )
    };
    eprintln!(
        "{} queries: cold {}; warm {}",
        queries.len(),
        line(cold_sums),
        line(sums)
    );
}
