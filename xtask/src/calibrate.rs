//! `cargo xtask calibrate`: refits `--engine auto`'s constants (`gpsense_runtime::DeviceCosts`)
//! to the per-query times of `gpsense match` on a device and on `dfs`, and writes the constants
//! file that `GPSENSE_DEVICE_COSTS` points at. It reports how well the constants it started from
//! and the refitted ones fit, in sample and on a held-out half.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, plan, PlannerStats};
use gpsense_runtime::cost::fit::{fit, score, Measured, Score};
use gpsense_runtime::cost::{DegreeMoments, QueryShape};
use gpsense_runtime::DeviceCosts;

#[derive(Args)]
pub struct CalibrateArgs {
    /// The data graph the queries ran on.
    #[arg(long, value_name = "FILE")]
    data: PathBuf,
    /// A folder of the query files (`.graph`, the benchmark format) that ran (repeatable).
    #[arg(long = "queries", value_name = "DIR", required = true)]
    queries: Vec<PathBuf>,
    /// Output of `gpsense match --engine gpu --device-batch 1 --search-stats` on those queries:
    /// `name<TAB>count<TAB>ms[<TAB>launches=N reads=N ...]` lines (repeatable).
    #[arg(long = "device", value_name = "FILE", required = true)]
    device: Vec<PathBuf>,
    /// Output of `gpsense match --engine dfs` on the same queries, same machine (repeatable).
    #[arg(long = "dfs", value_name = "FILE", required = true)]
    dfs: Vec<PathBuf>,
    /// CPU threads `dfs` ran on there.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// The constants file to start from [default: the calibrated H100's].
    #[arg(long, value_name = "FILE")]
    base: Option<PathBuf>,
    /// What the constants are for (`--explain` prints it).
    #[arg(long, value_name = "TEXT")]
    name: Option<String>,
    /// Where to write the constants file [default: print it].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: &CalibrateArgs) -> Result<()> {
    let mut base = match &args.base {
        Some(p) => DeviceCosts::load(p)?,
        None => DeviceCosts::calibrated_h100(),
    };
    base.cpu_threads = f64::from(args.threads);
    let queries = measured(args)?;
    if queries.len() < 8 {
        bail!(
            "{} queries were measured on both engines: at least 8 are needed to fit",
            queries.len()
        );
    }
    let mut fitted = fit(&base, &queries);
    if let Some(name) = &args.name {
        fitted.device = name.clone();
    }
    println!("{} queries measured on both engines", queries.len());
    report("the constants started from", &score(&base, &queries));
    report("refitted", &score(&fitted, &queries));
    // Fitted on one half, scored on the other: what to expect on queries it has not seen.
    let (even, odd): (Vec<_>, Vec<_>) = queries
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let strip = |v: Vec<(usize, Measured)>| v.into_iter().map(|(_, q)| q).collect::<Vec<_>>();
    let (even, odd) = (strip(even), strip(odd));
    report(
        "held out (fitted on the other half)",
        &score(&fit(&base, &even), &odd),
    );
    report("held out, the constants started from", &score(&base, &odd));
    let text = format!(
        "# `--engine auto`'s constants refitted by `cargo xtask calibrate` to {} queries timed\n\
         # alone on the device and on dfs ({} threads). Point GPSENSE_DEVICE_COSTS at this file.\n{}",
        queries.len(),
        args.threads,
        fitted.to_file()
    );
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| p.display().to_string())?;
            println!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

fn report(what: &str, s: &Score) {
    println!(
        "{what}: estimates off by a median factor of {:.2} (dfs) and {:.2} (device); the picks \
         take {:.0} ms ({} on the device), the faster engine per query {:.0} ms, dfs alone {:.0} \
         ms, the device alone {:.0} ms",
        s.dfs_factor,
        s.device_factor,
        s.picks_ms,
        s.on_device,
        s.best_ms,
        s.dfs_alone_ms,
        s.device_alone_ms
    );
}

/// A measured query: its time and the device's counters, if printed.
struct Timed {
    ms: f64,
    launches: Option<f64>,
    reads: Option<f64>,
}

/// Every query timed on both engines, with its shape on the data graph.
fn measured(args: &CalibrateArgs) -> Result<Vec<Measured>> {
    let g = load(&args.data)?;
    let (stats, moments) = (PlannerStats::new(&g), DegreeMoments::new(&g));
    let (device, dfs) = (times(&args.device)?, times(&args.dfs)?);
    let mut out = Vec::new();
    for dir in &args.queries {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| dir.display().to_string())?
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "graph"))
            .collect();
        files.sort();
        for file in files {
            let Some(name) = file.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let (Some(d), Some(c)) = (device.get(name), dfs.get(name)) else {
                continue;
            };
            let q =
                benchmark_query(&load(&file)?, &g).with_context(|| file.display().to_string())?;
            let shape = QueryShape::with_moments(&q, &plan(&q, &g), &g, &stats, &moments);
            out.push(Measured {
                shape,
                count_only: true,
                device_ms: d.ms,
                dfs_ms: c.ms,
                launches: d.launches,
                reads: d.reads,
            });
        }
    }
    Ok(out)
}

fn load(path: &Path) -> Result<KnowledgeGraph> {
    Ok(ingest(
        &[path.to_path_buf()],
        &IngestOptions::default(),
        &NoProgress,
    )
    .with_context(|| path.display().to_string())?
    .0)
}

/// `name<TAB>count<TAB>ms[<TAB>key=value ...]` lines by name (the last time of a name repeated).
fn times(files: &[PathBuf]) -> Result<HashMap<String, Timed>> {
    let mut out = HashMap::new();
    for path in files {
        let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
        for line in text.lines() {
            let mut f = line.split('\t');
            let (Some(name), Some(_), Some(ms)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let rest: Vec<&str> = f.collect();
            // A time at the limit is only a bound on the query's.
            let (Ok(ms), false) = (ms.parse::<f64>(), rest.contains(&"timed out")) else {
                continue;
            };
            let stats = rest.first().copied().unwrap_or("");
            let counter = |key: &str| {
                stats
                    .split(' ')
                    .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
            };
            let timed = Timed {
                ms,
                launches: counter("launches"),
                reads: counter("reads"),
            };
            out.insert(name.to_owned(), timed);
        }
    }
    Ok(out)
}
