//! The seed paper's Figure 13, reproduced: for each row a random undirected data graph and a random
//! connected template of that size (names drawn from the data, two misspelt), searched with the
//! default parameters (beam 128, top 10). Prints our time per phase (median of several runs) beside
//! the seed's CPU and GPU columns, and the speed-up over the GPU column; then larger data graphs to
//! show how the time scales with the data graph.
//!
//! `cargo run --release -p gpsense-benches --example trust_table`

use std::time::{Duration, Instant};

use gpsense_benches::trust_trials::{random_data_graph, random_template, FIGURE_13};
use gpsense_trust::{Answer, Params, Timings, Trust};

const RUNS: usize = 7;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Median time per phase over `RUNS` searches (after one warm-up).
fn measure(trust: &Trust, t: &gpsense_trust::Template) -> (Timings, Duration, Answer) {
    let params = Params::default();
    let answer = trust.search(t, &params).expect("search");
    let (mut s, mut o, mut tr, mut total) = (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        let start = Instant::now();
        let a = trust.search(t, &params).expect("search");
        total.push(start.elapsed());
        s.push(a.timings.similarity);
        o.push(a.timings.one_hop);
        tr.push(a.timings.traversal);
    }
    let timings = Timings {
        similarity: median(s),
        one_hop: median(o),
        traversal: median(tr),
    };
    (timings, median(total), answer)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    println!(
        "cores: {}; times in ms, the seed's in s; ratio = seed GPU time / ours",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:>6} {:>6} {:>3} {:>3} | {:>9} {:>9} {:>8} {:>8} | {:>7} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7}",
        "data n", "m", "tn", "tm", "seedCPU1h", "seedCPUtr", "seedGPU1h", "seedGPUtr",
        "index", "sim", "1hop", "trav", "total", "x1hop", "xtrav", "xtotal"
    );
    let mut graph_key = (0, 0);
    let mut data = random_data_graph(1, 0, 0);
    for (i, row) in FIGURE_13.iter().enumerate() {
        if graph_key != (row.data_nodes, row.data_edges) {
            graph_key = (row.data_nodes, row.data_edges);
            data = random_data_graph(row.data_nodes, row.data_edges, 1 + i as u64);
        }
        let start = Instant::now();
        let trust = Trust::new(&data);
        let index = start.elapsed();
        let t = random_template(
            &data,
            row.template_nodes,
            row.template_edges,
            100 + i as u64,
        );
        let (tm, total, answer) = measure(&trust, &t);
        assert!(!answer.matches.is_empty(), "row {i}: no matching");
        let one_hop = tm.similarity + tm.one_hop;
        let gpu_total = row.gpu_one_hop + row.gpu_traversal;
        println!(
            "{:>6} {:>6} {:>3} {:>3} | {:>9.4} {:>9.4} {:>8.4} {:>8.4} | {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>7.3} | {:>7.0} {:>7.0} {:>7.0}",
            row.data_nodes, row.data_edges, row.template_nodes, row.template_edges,
            row.cpu_one_hop, row.cpu_traversal, row.gpu_one_hop, row.gpu_traversal,
            ms(index), ms(tm.similarity), ms(tm.one_hop), ms(tm.traversal), ms(total),
            row.gpu_one_hop / one_hop.as_secs_f64(),
            row.gpu_traversal / tm.traversal.as_secs_f64(),
            gpu_total / total.as_secs_f64(),
        );
    }
    println!("(x1hop compares our similarity + one-hop with the seed's one-hop column; the index is built once per data graph and not counted)");
    println!();
    println!("scaling with the data graph (template 7 nodes / 20 edges, average degree 8):");
    println!(
        "{:>9} {:>9} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>10}",
        "nodes", "edges", "index", "sim", "1hop", "trav", "total", "ns/edge"
    );
    for (k, n) in [10_000usize, 30_000, 100_000, 300_000, 1_000_000]
        .into_iter()
        .enumerate()
    {
        let data = random_data_graph(n, 4 * n, 50 + k as u64);
        let start = Instant::now();
        let trust = Trust::new(&data);
        let index = start.elapsed();
        let t = random_template(&data, 7, 20, 500 + k as u64);
        let (tm, total, _) = measure(&trust, &t);
        println!(
            "{:>9} {:>9} | {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} | {:>10.1}",
            n,
            4 * n,
            ms(index),
            ms(tm.similarity),
            ms(tm.one_hop),
            ms(tm.traversal),
            ms(total),
            total.as_secs_f64() * 1e9 / (4 * n) as f64
        );
    }
}
