//! First-query latency: what the first query of a fresh process costs beyond a warm one, as a
//! person running `gpsense query` once pays it. Each sample is a new process (this example run
//! as a child) that loads the embedded graph (ConceptNet-100K), times one query, then the same
//! query warm; the parent reports per query the median over samples.
//!
//! `cargo run --release -p gpsense-benches --example first_query [queries] [samples]`
//! (default 20 generated anchored 6-node queries, seed 2016 as the `matching` bench, 5 samples).
//! `... --example first_query --engine QUERY`: in this one process, the reading plus the engine's
//! count (`Matcher::count`, no named answer) timed first and again.

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
    match args.first().map(String::as_str) {
        Some("--child") => return child(&args[1], false),
        Some("--child-read") => return child(&args[1], true),
        Some("--engine") => return engine_only(&args[1]),
        _ => {}
    }
    let queries: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    let samples: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let graph = Graph::embedded().expect("the embedded graph");
    let mut rng = Rng::new(2016);
    let mut texts = Vec::new();
    while texts.len() < queries {
        if let Some(t) = querygen::common_sense_query(graph.knowledge_graph(), 6, 0.34, 8, &mut rng)
        {
            texts.push(t);
        }
    }
    let exe = std::env::current_exe().expect("own path");
    let sample = |mode: &str, text: &str| -> (f64, f64) {
        let out = Command::new(&exe)
            .args([mode, text])
            .output()
            .expect("child runs");
        let line = String::from_utf8_lossy(&out.stdout);
        let mut it = line.split_whitespace().map(|x| x.parse::<f64>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    };
    let (mut extra, mut extra_read, mut warms) = (Vec::new(), Vec::new(), Vec::new());
    println!(
        "first_ms  warm_ms  extra_ms  of which reading  query (median of {samples} processes)"
    );
    for text in &texts {
        let (mut runs, mut reads) = (Vec::new(), Vec::new());
        for _ in 0..samples {
            runs.push(sample("--child", text));
            reads.push(sample("--child-read", text));
        }
        let first = median(runs.iter().map(|r| r.0).collect());
        let warm = median(runs.iter().map(|r| r.1).collect());
        let diff = median(runs.iter().map(|r| r.0 - r.1).collect());
        let diff_read = median(reads.iter().map(|r| r.0 - r.1).collect());
        println!("{first:8.3} {warm:8.3} {diff:9.3} {diff_read:9.3}  {text}");
        warms.push(warm);
        extra.push(diff);
        extra_read.push(diff_read);
    }
    let after_reading: Vec<f64> = extra.iter().zip(&extra_read).map(|(a, r)| a - r).collect();
    println!(
        "median over {} queries: warm {:.3} ms; first - warm {:.3} ms, of which reading the text \
         {:.3} ms, the rest (matching and the answer) {:.3} ms",
        texts.len(),
        median(warms),
        median(extra),
        median(extra_read),
        median(after_reading),
    );
}

/// One sample: the graph loaded, the query timed first, then warm; then its reading alone (the
/// parse), first and warm, in a second process of the sample's pair. Prints milliseconds.
fn child(text: &str, reading: bool) {
    let graph = Graph::embedded().expect("the embedded graph");
    let time = || {
        let start = Instant::now();
        if reading {
            let ok = graph.with_matcher(|m| gpsense::read(m, text, None).is_ok());
            assert!(ok, "reads");
        } else {
            let answer = graph.query(text).run().expect("answers");
            std::hint::black_box(answer.len());
        }
        start.elapsed().as_secs_f64() * 1e3
    };
    let first = time();
    // FIRST_QUERY_ONLY=1: the first run alone (to profile it).
    let runs = if std::env::var_os("FIRST_QUERY_ONLY").is_some() {
        0
    } else {
        WARM
    };
    let warm = median((0..runs).map(|_| time()).collect());
    println!("{first} {warm}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The reading plus the engine's count of `text`, first and second, in this fresh process.
fn engine_only(text: &str) {
    let graph = Graph::embedded().expect("the embedded graph");
    let count = || {
        let faults = minor_faults();
        let start = Instant::now();
        let times = graph.with_matcher(|m| match gpsense::read(m, text, None) {
            Ok(gpsense::Reading::Graph(p)) => {
                let opts = gpsense::MatchOptions::default();
                m.count(&p.graph, &opts).expect("counts").report.times
            }
            _ => panic!("not a basic graph pattern the engine answers: {text}"),
        });
        let ms = start.elapsed().as_secs_f64() * 1e3;
        (ms, times, minor_faults() - faults)
    };
    let (first, t1, f1) = count();
    let (second, t2, f2) = count();
    println!("first {first:.3} ms ({f1} page faults), second {second:.3} ms ({f2})");
    println!("  first's phases:  {t1:?}\n  second's phases: {t2:?}");
}

/// Minor page faults of this process so far (Linux; 0 elsewhere): a first run's faults are pages
/// of code and data touched for the first time.
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Field 10, counted after the parenthesised command name (which may hold spaces).
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}
