//! What one query costs depending on what ran before it, in one process on one thread: the query
//! right after itself (`same`), after 30 or 200 other queries of the folder (`after-30`,
//! `after-200`), after a walk over 1 MiB (`walk-1m`: the core's private caches replaced) or 64 MiB
//! (`walk-64m`: the shared cache too), and after the 64 MiB walk and one other query (`walk-other`)
//! or itself (`walk-self`). Prints each case's median, 10th and 90th percentile over `runs` runs.
//! The tool behind the benchmarks page's account of a query's cold cost (issue 30).
//!
//! `cargo run --release -p gpsense-benches --example cold_state -- DATA.graph QUERY.graph
//! QUERY_DIR [runs] [limit]`, e.g. `datasets/subgraph-matching/hprd-study/data_graph/HPRD.graph
//! datasets/subgraph-matching/hprd-study/query_graph/query_dense_16_171.graph
//! datasets/subgraph-matching/hprd-study/query_graph`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpsense_benches::{or_exit, suite};
use gpsense_planner::{benchmark_query, QueryGraph};
use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};

// The allocator the CLI and the bench runner use.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Writes one byte per cache line of `buf[..len]`, so that the line is fetched and owned.
fn walk(buf: &mut [u8], len: usize, salt: u8) {
    for b in buf[..len].iter_mut().step_by(64) {
        *b = b.wrapping_add(salt);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(data), Some(query), Some(dir)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: cold_state DATA.graph QUERY.graph QUERY_DIR [runs] [match limit]");
        std::process::exit(2);
    };
    let runs: usize = args
        .get(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60)
        .max(1);
    let limit: Option<u64> = args.get(4).and_then(|a| a.parse().ok());
    let g = or_exit(suite::load(Path::new(data)), &data);
    let engine = Engine::new(&g);
    let load = |p: &Path| -> QueryGraph {
        let q = or_exit(suite::load(p), &p.display());
        or_exit(benchmark_query(&q, &g), &p.display())
    };
    let target = load(Path::new(query));
    let mut files: Vec<PathBuf> = or_exit(std::fs::read_dir(dir), &dir)
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "graph") && p != Path::new(query))
        .collect();
    files.sort();
    let others: Vec<QueryGraph> = files.iter().map(|p| load(p)).collect();
    if others.is_empty() {
        eprintln!("error: {dir}: no other .graph query to run in between");
        std::process::exit(1);
    }
    let opts = MatchOptions {
        semantics: Semantics::Iso,
        engine: EngineKind::Dfs,
        single_thread: true,
        limit,
        ..MatchOptions::default()
    };
    let run = |q: &QueryGraph| {
        or_exit(engine.count(q, &opts), &query);
    };
    let mut buf = vec![0u8; 64 << 20];
    // Half a second busy first: a core that has idled runs slowly for its first ~0.1 s.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(500) {
        run(&target);
    }
    let mut k = 0usize;
    let mut others_run = |n: usize| {
        for _ in 0..n {
            run(&others[k % others.len()]);
            k += 1;
        }
    };
    for case in [
        "same",
        "after-30",
        "after-200",
        "walk-1m",
        "walk-64m",
        "walk-other",
        "walk-self",
    ] {
        let mut us = Vec::with_capacity(runs);
        for i in 0..runs {
            let salt = i as u8;
            match case {
                "same" => run(&target),
                "after-30" => others_run(30),
                "after-200" => others_run(200),
                "walk-1m" => walk(&mut buf, 1 << 20, salt),
                "walk-64m" => walk(&mut buf, 64 << 20, salt),
                "walk-other" => {
                    walk(&mut buf, 64 << 20, salt);
                    others_run(1);
                }
                _ => {
                    walk(&mut buf, 64 << 20, salt);
                    run(&target);
                }
            }
            let t = Instant::now();
            run(&target);
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
        us.sort_by(f64::total_cmp);
        let at = |p: usize| us[(us.len() - 1) * p / 100];
        println!(
            "{case:10} median {:8.1} µs  p10 {:8.1}  p90 {:8.1}",
            at(50),
            at(10),
            at(90)
        );
    }
    std::hint::black_box(&buf);
}
