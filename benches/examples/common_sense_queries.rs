//! Prints the generated common-sense queries of the `matching` bench with their counts and times:
//! `cargo run --release -p gpsense-benches --example common_sense_queries [k] [count]`.

use std::path::Path;
use std::time::Instant;

use gpsense_benches::{querygen, synth::Rng};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_planner::compile;
use gpsense_runtime::{Engine, MatchOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let k: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(6);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/conceptnet-100k/train.txt.gz");
    let data = ingest(&[path], &IngestOptions::default(), &NoProgress)
        .expect("ingest")
        .0;
    let engine = Engine::new(&data);
    let opts = MatchOptions {
        single_thread: true,
        ..MatchOptions::default()
    };
    let mut rng = Rng::new(2016);
    let mut times = Vec::new();
    for _ in 0..n {
        let Some(text) = querygen::common_sense_query(&data, k, 0.34, 8, &mut rng) else {
            continue;
        };
        let q = compile(&text, &data).expect("compiles");
        let start = Instant::now();
        let report = engine.count(&q, &opts).expect("count");
        let ms = start.elapsed().as_secs_f64() * 1e3;
        times.push(ms);
        println!("{ms:9.3} ms  {:>10}  {text}", report.rows);
    }
    times.sort_by(f64::total_cmp);
    if !times.is_empty() {
        println!(
            "median {:.3} ms, p90 {:.3} ms, max {:.3} ms over {} queries",
            times[times.len() / 2],
            times[times.len() * 9 / 10],
            times[times.len() - 1],
            times.len()
        );
    }
}
