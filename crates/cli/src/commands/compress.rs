//! `gpsense compress`: multi-level compression of a graph into a `.gpsc` file, with the paper's
//! Table 4 (level, delta, nodes, edges, ratio) on stdout and a progress bar on stderr.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use gpsense_compress::{compress, format, CompressOptions, LevelRecord, LevelRow, Progress};
use gpsense_runtime::parse_bytes;
use indicatif::{ProgressBar, ProgressStyle};

use crate::graph_source;
use gpsense::fmt::{millis, thousands};

#[derive(Args)]
pub struct CompressArgs {
    /// The graph: a snapshot (.gps), a compressed graph (its original is recompressed) or any file
    /// `ingest` reads.
    pub graph: PathBuf,
    /// The compressed graph to write (temporary file, then renamed into place).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Similarity threshold per level, `0 < delta <= 1` (the paper's Table 4: 0.8,0.7,0.7). Nodes
    /// merge when |common edges| / max(|adj u|, |adj v|) >= delta, over both directions.
    #[arg(long, value_delimiter = ',', default_value = "0.8,0.7,0.7")]
    pub delta: Vec<f64>,
    /// Stop once the compressed topology fits in this many bytes (e.g. 512M); the last delta repeats
    /// until then (at most 32 levels).
    #[arg(long, value_parser = parse_bytes)]
    pub target_bytes: Option<u64>,
    /// Replace the output even if it is read-only (the graph itself is always refused).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: CompressArgs) -> Result<()> {
    crate::outputs::check(&args.output, &[&args.graph], args.force)?;
    let loaded = graph_source::load(Some(&args.graph))?;
    let opts = CompressOptions {
        deltas: args.delta.clone(),
        target_bytes: args.target_bytes,
        ..CompressOptions::default()
    };
    let start = Instant::now();
    let c = compress(&loaded.graph, &opts, &LevelBar::default())?;
    let took = start.elapsed();
    let write = Instant::now();
    format::save(&args.output, &loaded.graph, &c)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    crate::out::print(table(&c.table()))?;
    let top = c.table().last().map_or(0, |r| r.bytes);
    if let Some(target) = args.target_bytes.filter(|&t| top > t) {
        crate::out::note!(
            "note: the target of {} bytes was not reached ({} bytes): no more similar nodes at delta {}",
            thousands(target),
            thousands(top),
            args.delta.last().copied().unwrap_or(1.0)
        );
    }
    crate::out::note!(
        "{}: compressed in {}, written in {}",
        args.output.display(),
        millis(took),
        millis(write.elapsed())
    );
    Ok(())
}

/// The paper's Table 4, with bytes, pairs merged (identical and near-equal signatures) and time per
/// level.
pub fn table(rows: &[LevelRow]) -> String {
    let mut out = format!(
        "{:>5}  {:>5}  {:>11}  {:>11}  {:>7}  {:>11}  {:>11}  {:>11}  {:>9}\n",
        "level", "delta", "nodes", "edges", "ratio", "bytes", "identical", "near", "time"
    );
    for r in rows {
        let delta = r.delta.map_or("-".to_owned(), |d| format!("{d}"));
        // Pairs merged at this level: identical signatures, and near-equal ones (MinHash).
        let pairs = |n: u64| {
            if r.level == 0 {
                "-".to_owned()
            } else {
                thousands(n)
            }
        };
        out.push_str(&format!(
            "{:>5}  {:>5}  {:>11}  {:>11}  {:>6.1}%  {:>11}  {:>11}  {:>11}  {:>9}\n",
            r.level,
            delta,
            thousands(r.nodes),
            thousands(r.edges),
            r.ratio * 100.0,
            thousands(r.bytes),
            pairs(r.exact_pairs),
            pairs(r.near_pairs),
            if r.level == 0 {
                "-".to_owned()
            } else {
                format!("{:.2} s", r.seconds)
            }
        ));
    }
    out
}

/// A bar per phase of each level on stderr (hidden when stderr is not a terminal).
#[derive(Default)]
struct LevelBar {
    level: RefCell<String>,
    bar: RefCell<Option<ProgressBar>>,
}

impl Progress for LevelBar {
    fn level_start(&self, level: usize, delta: f64, nodes: usize) {
        *self.level.borrow_mut() = format!(
            "level {level} (delta {delta}, {} nodes)",
            thousands(nodes as u64)
        );
    }

    fn phase(&self, name: &'static str, total: u64) {
        if let Some(old) = self.bar.borrow_mut().take() {
            old.finish_and_clear();
        }
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(format!("{}: {name}", self.level.borrow()));
        *self.bar.borrow_mut() = Some(bar);
    }

    fn position(&self, done: u64) {
        if let Some(bar) = &*self.bar.borrow() {
            bar.set_position(done);
        }
    }

    fn level_done(&self, _record: &LevelRecord) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }
}
