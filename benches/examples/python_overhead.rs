//! The Rust side of the Python package's overhead measurement (`crates/python/bench/overhead.py`
//! runs this, then the same queries from Python): the 50 generated common-sense queries of the
//! `matching` bench on the embedded ConceptNet-100K, each answered through the `gpsense` library as
//! an application would (text in, prepare, match; rows as names), timed warm, median of `reps`.
//!
//! `cargo run --release -p gpsense-benches --example python_overhead -- OUT.tsv [reps]` writes
//! `count_us<TAB>rows_us<TAB>matches<TAB>rows<TAB>query` per query (`rows_us` NaN for a query with
//! more than `MAX_ROWS` matches).

use std::fmt::Write as _;
use std::time::Instant;

use gpsense::{solutions, Dialect, Loaded, MatchOptions, Matcher};
use gpsense_benches::{querygen, synth::Rng};
use gpsense_graph::ingest::NoProgress;

/// Queries with more matches are timed for their count only.
const MAX_ROWS: u64 = 100_000;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args.next().ok_or("usage: python_overhead OUT.tsv [reps]")?;
    let reps: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let loaded = Loaded::open(None, &NoProgress)?;
    let matcher = Matcher::new(&loaded)?;
    let g = matcher.graph();
    let mut rng = Rng::new(2016);
    let mut table = String::new();
    for _ in 0..50 {
        let Some(text) = querygen::common_sense_query(g, 6, 0.34, 8, &mut rng) else {
            continue;
        };
        let count = || -> Result<u128, gpsense::Error> {
            let p = matcher.prepare(&text, Dialect::Short)?;
            let opts = solutions::options_for(&p, &MatchOptions::default(), None);
            Ok(solutions::count(&matcher, &p, &opts)?.report.rows)
        };
        // Rows as names, as Python gets them (one String per value).
        let rows = || -> Result<usize, gpsense::Error> {
            let p = matcher.prepare(&text, Dialect::Short)?;
            let opts = solutions::options_for(&p, &MatchOptions::default(), None);
            let mut names: Vec<Vec<String>> = Vec::new();
            solutions::select(&matcher, &p, &opts, &mut |b| {
                names.extend(
                    b.iter()
                        .map(|row| row.iter().map(|&v| g.node_name(v).to_owned()).collect()),
                );
                true
            })?;
            Ok(names.len())
        };
        let (count_us, matches) = median_us(reps, count)?;
        // Rows only where they fit a notebook: one query has 99 M matches.
        let (rows_us, n_rows) = if matches <= u128::from(MAX_ROWS) {
            median_us(reps, rows)?
        } else {
            (f64::NAN, 0)
        };
        writeln!(
            table,
            "{count_us:.2}\t{rows_us:.2}\t{matches}\t{n_rows}\t{text}"
        )?;
    }
    std::fs::write(&out, table)?;
    Ok(())
}

/// The median time of `reps` runs of `f` after one warm-up, in microseconds, and its value.
fn median_us<T>(
    reps: usize,
    f: impl Fn() -> Result<T, gpsense::Error>,
) -> Result<(f64, T), gpsense::Error> {
    let value = f()?;
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            let _ = std::hint::black_box(f());
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], value))
}
