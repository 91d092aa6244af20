//! First-query latency: what the first query of a fresh process costs beyond a warm one, as a
//! person running `gpsense query` once pays it. Each sample is a new process (this example run
//! as a child) that loads the embedded graph (ConceptNet-100K), times one query, then the same
//! query warm; the parent reports per query the median over samples.
//!
//! `cargo run --release -p gpsense-benches --example first_query [queries] [samples]`
//! (default 20 generated anchored 6-node queries, seed 2016 as the `matching` bench, 5 samples).

use std::process::Command;
use std::time::Instant;

use gpsense::Graph;
use gpsense_benches::{querygen, synth::Rng};

// The allocator the CLI runs with: its first allocations are part of what is measured.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Warm runs per child after the first; their median is the warm time.
const WARM: usize = 15;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1]);
        return;
    }
    let queries: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    let samples: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let graph = Graph::embedded().expect("the embedded graph");
    let mut rng = Rng::new(2016);
    let mut texts = Vec::new();
    while texts.len() < queries {
        if let Some(t) =
            querygen::common_sense_query(graph.knowledge_graph(), 6, 0.34, 8, &mut rng)
        {
            texts.push(t);
        }
    }
    let exe = std::env::current_exe().expect("own path");
    let (mut extra, mut firsts, mut warms) = (Vec::new(), Vec::new(), Vec::new());
    println!("first_ms  warm_ms  extra_ms  query (median of {samples} processes each)");
    for text in &texts {
        let mut runs: Vec<(f64, f64)> = (0..samples)
            .map(|_| {
                let out = Command::new(&exe)
                    .args(["--child", text])
                    .output()
                    .expect("child runs");
                let line = String::from_utf8_lossy(&out.stdout);
                let mut it = line.split_whitespace().map(|x| x.parse::<f64>().unwrap());
                (it.next().unwrap(), it.next().unwrap())
            })
            .collect();
        let first = median(runs.iter().map(|r| r.0).collect());
        let warm = median(runs.iter().map(|r| r.1).collect());
        let diff = median(runs.iter_mut().map(|r| r.0 - r.1).collect());
        println!("{first:8.3} {warm:8.3} {diff:9.3}  {text}");
        firsts.push(first);
        warms.push(warm);
        extra.push(diff);
    }
    println!(
        "median over {} queries: first {:.3} ms, warm {:.3} ms, first - warm {:.3} ms (max {:.3})",
        texts.len(),
        median(firsts),
        median(warms),
        median(extra.clone()),
        extra.iter().copied().fold(f64::MIN, f64::max)
    );
}

/// One sample: the graph loaded, the query timed first, then warm. Prints both in milliseconds.
fn child(text: &str) {
    let graph = Graph::embedded().expect("the embedded graph");
    let time = || {
        let start = Instant::now();
        let answer = graph.query(text).run().expect("answers");
        std::hint::black_box(answer.len());
        start.elapsed().as_secs_f64() * 1e3
    };
    let first = time();
    let warm = median((0..WARM).map(|_| time()).collect());
    println!("{first} {warm}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
