//! `cargo xtask bench`: gpsense side by side with real peers, on the same graphs and queries, with
//! the counts checked under the same semantics, a time limit per query, and a report.
//!
//! 1. Build `gpsense-bench-runner` (benches crate) in release mode and let it prepare the workloads
//!    (`gpsense_benches::suite`: graphs and queries, seeded) into `target/bench/work/`.
//! 2. Set up the Python peers in `target/bench/venv` (`peers.rs`); a peer that cannot be installed
//!    is reported with pip's reason.
//! 3. Run every engine over every workload in a child process per (workload, engine, semantics)
//!    (`exec.rs`: time limit per query, restart after a timeout). gpsense and petgraph run in the
//!    release runner; the Python peers run `xtask/bench/peers.py` with the SPARQL/Cypher texts of
//!    `text.rs`.
//! 4. Check every count against gpsense's under the same semantics and write `report.md`,
//!    `results.csv`, `summary.csv` and the figures (`report.rs`, `plot.rs`).

mod cores;
mod exact;
mod exec;
mod extras;
mod kernels;
mod native;
mod peers;
pub(crate) mod plot;
mod pyrandom;
mod report;
mod sparql;
mod text;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use gpsense_benches::suite::{GraphMeta, Manifest, Workload, EXPERIMENTS};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use exec::{Limits, Outcome};
use report::{Agreement, Record, OURS};
use text::Sem;

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// The harness's smoke test: 2-3 queries per workload, 1 s limit, the peers on the smallest
    /// graph of each kind only; written to target/bench/quick/ so that it never replaces a full
    /// report.
    #[arg(long)]
    pub quick: bool,
    /// Time limit per query and engine, in seconds [default: 60, or 1 with --quick].
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Our engines to run besides dfs, which always runs (it is the reference every ratio uses).
    #[arg(long = "engine", value_name = "ENGINE", value_parser = ["dfs", "kernels", "emulated"])]
    pub engines: Vec<String>,
    /// Only these peers (repeatable) [default: all].
    #[arg(long = "peer", value_name = "PEER", value_parser = all_peer_names())]
    pub peers: Vec<String>,
    /// Only this part: `exact-peers` is the table of gpsense-dfs against the exact matchers DAF,
    /// VEQ, GuP and RapidMatch (built from source) on exact-hprd, exact-yeast-150 and
    /// exact-yeast-32 (target/bench/exact-peers/); `sparql` is the SPARQL algebra set
    /// (benches/sparql/algebra.rq: OPTIONAL, UNION, paths, aggregates, ...) against pyoxigraph,
    /// both in-process and warm (target/bench/sparql/report.md).
    #[arg(long, value_name = "PART", value_parser = ["exact-peers", "sparql"])]
    pub only: Option<String>,
    /// Where the exact matchers' sources are: one checkout or git dir per peer, named after the
    /// repository (`DAF`, `VEQ_S`, `gup`, `RapidMatch`, or `owner+name[/repo]`); the pinned commit
    /// is extracted from it. Without it they are cloned from GitHub (not with --offline/--quick).
    #[arg(long, value_name = "DIR")]
    pub peer_src: Option<PathBuf>,
    /// Queries per turn when the exact-peer engines take turns.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub chunk: usize,
    /// Times the exact-peer engines answer each query, each time in fresh processes; the report
    /// shows each query's median [default: 3; 1 with --quick]. One process's time can be half again
    /// another's on a virtual machine (a core that has been idle runs slowly for its first ~0.1 s).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub rounds: Option<u32>,
    /// No peers at all: gpsense's engines only.
    #[arg(long, conflicts_with = "peers")]
    pub no_peers: bool,
    /// Only workloads whose name starts with one of these (hprd, yeast, conceptnet-6, wordnet-6,
    /// data-size, query-size, degree).
    #[arg(long = "workload", value_name = "PREFIX")]
    pub workloads: Vec<String>,
    /// At most this many queries per query group (yeast's size groups, or a workload), the first
    /// ones [default: all that were prepared].
    #[arg(long, value_name = "N")]
    pub queries: Option<usize>,
    /// Runs per query (a query is repeated only while its runs took under a second in all).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// After this many timeouts of one engine in one query group, that group's remaining queries
    /// are recorded as skipped on that engine [default: 2, or 1 with --quick].
    #[arg(long)]
    pub max_timeouts: Option<usize>,
    /// Use the peers already installed in target/bench/venv; never run pip.
    #[arg(long)]
    pub offline: bool,
    /// Do not run the kernel-variant criterion bench (it runs in a full run only).
    #[arg(long)]
    pub no_kernel_variants: bool,
}

/// Every peer engine.
pub const PEER_NAMES: &[&str] = &[
    "petgraph-vf2",
    "igraph-vf2",
    "igraph-lad",
    "networkx-vf2",
    "rustworkx-vf2",
    "oxigraph-sparql",
    "kuzu-cypher",
];

fn all_peer_names() -> Vec<&'static str> {
    PEER_NAMES.iter().chain(native::NAMES).copied().collect()
}

/// One child-process run: an engine under one semantics over one workload.
struct Job<'a> {
    workload: &'a Workload,
    graph: &'a GraphMeta,
    engine: &'static str,
    sem: Sem,
}

pub fn run(root: &Path, args: &BenchArgs) -> Result<()> {
    let started = Instant::now();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bench_dir = target.join("bench");
    let out = if args.quick {
        bench_dir.join("quick")
    } else {
        bench_dir.clone()
    };
    let work = out.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let timeout = Duration::from_secs(args.timeout.unwrap_or(if args.quick { 1 } else { 60 }));
    let limits = Limits {
        timeout,
        load_timeout: Duration::from_secs(600),
        max_timeouts: args
            .max_timeouts
            .unwrap_or(if args.quick { 1 } else { 2 })
            .max(1),
    };

    // The SPARQL algebra set needs its example, not the runner.
    if args.only.as_deref() == Some("sparql") {
        return only_sparql(root, &out, &bench_dir, args);
    }

    // 1. The runner and the workloads.
    step("building gpsense-bench-runner (release)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "gpsense-benches",
            "--bin",
            "gpsense-bench-runner",
        ])
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("building gpsense-bench-runner failed");
    }
    let runner = target.join("release/gpsense-bench-runner");
    let exact_options = exact::Options {
        root,
        out: &out,
        peers_dir: &bench_dir.join("peers"),
        runner: &runner,
        quick: args.quick,
        timeout: args.timeout.map(Duration::from_secs),
        peer_src: args.peer_src.as_deref(),
        clone: !args.quick && !args.offline,
        peers: if args.no_peers {
            Vec::new()
        } else {
            native::PEERS
                .iter()
                .filter(|p| args.peers.is_empty() || args.peers.iter().any(|a| a == p.engine))
                .collect()
        },
        chunk: args.chunk,
        rounds: args
            .rounds
            .map_or(if args.quick { 1 } else { 3 }, |r| r as usize),
    };
    if args.only.as_deref() == Some("exact-peers") {
        step("exact matchers: gpsense-dfs, DAF, VEQ, GuP, RapidMatch");
        let section = exact::run(&exact_options, &mut |m| eprintln!("  {m}"))?;
        let path = out.join("exact-peers/report.md");
        eprintln!("\n{}\nwrote {}", section.markdown, path.display());
        if section.ours_wrong > 0 {
            bail!(
                "{} gpsense counts differ from the published ones: see {}",
                section.ours_wrong,
                path.display()
            );
        }
        return Ok(());
    }
    step("preparing workloads");
    let mut prepare = Command::new(&runner);
    prepare.arg("prepare").arg(root.join("datasets")).arg(&work);
    if args.quick {
        prepare.arg("--quick");
    }
    if !prepare
        .status()
        .context("cannot run gpsense-bench-runner")?
        .success()
    {
        bail!("preparing the workloads failed");
    }
    let mut manifest: Manifest =
        serde_json::from_slice(&std::fs::read(work.join("manifest.json"))?)
            .context("reading the manifest")?;
    if let Some(n) = args.queries {
        for w in &mut manifest.workloads {
            let mut per_group: BTreeMap<String, usize> = BTreeMap::new();
            w.queries.retain(|q| {
                let k = per_group.entry(q.group.clone()).or_default();
                *k += 1;
                *k <= n
            });
            w.selection.push_str(&format!(
                "; this run: the first {n} per group (--queries {n})"
            ));
        }
        std::fs::write(
            work.join("manifest.json"),
            serde_json::to_vec_pretty(&manifest)?,
        )?;
    }

    // 2. Peers.
    let wanted_peers: Vec<&'static str> = if args.no_peers {
        Vec::new()
    } else {
        PEER_NAMES
            .iter()
            .copied()
            .filter(|p| args.peers.is_empty() || args.peers.iter().any(|a| a == p))
            .collect()
    };
    let python_peers = wanted_peers.iter().any(|p| *p != "petgraph-vf2");
    let peers = if python_peers {
        step("setting up the Python peers (target/bench/venv)");
        peers::set_up(&bench_dir.join("venv"), !args.offline, &mut |m| {
            eprintln!("  {m}")
        })
    } else {
        peers::Peers::none("no Python peer was asked for")
    };
    for p in &peers.packages {
        match &p.version {
            Ok(v) => eprintln!("  {} {v}", p.pip),
            Err(e) => eprintln!("  {} unavailable: {e}", p.pip),
        }
    }
    let peers_py = root.join("xtask/bench/peers.py");

    // 3. Jobs.
    let ours: Vec<&'static str> = ["gpsense-dfs", "gpsense-kernels", "gpsense-emulated"]
        .into_iter()
        .filter(|e| {
            *e == OURS
                || args.engines.is_empty()
                || args.engines.iter().any(|a| e.ends_with(a.as_str()))
        })
        .collect();
    let workloads: Vec<&Workload> = manifest
        .workloads
        .iter()
        .filter(|w| {
            args.workloads.is_empty()
                || args
                    .workloads
                    .iter()
                    .any(|p| w.name.starts_with(p.as_str()))
        })
        .collect();
    if workloads.is_empty() {
        bail!("no workload matches {:?}", args.workloads);
    }
    let peer_workloads = peer_workloads(&manifest, &workloads, args.quick);
    let mut jobs = Vec::new();
    for w in &workloads {
        let graph = manifest.graph(&w.graph).context("manifest graph")?;
        let kg = !graph.undirected;
        for &engine in &ours {
            // The emulator is the GPU pipeline run thread by thread: shown on the suites and the
            // common-sense workloads, not on every curve point.
            if engine == "gpsense-emulated" && w.experiment.is_some() {
                continue;
            }
            jobs.push(Job {
                workload: w,
                graph,
                engine,
                sem: Sem::Iso,
            });
            if engine == OURS && kg {
                jobs.push(Job {
                    workload: w,
                    graph,
                    engine,
                    sem: Sem::Hom,
                });
            }
        }
        if !peer_workloads.contains(&w.name) {
            continue;
        }
        for &engine in &wanted_peers {
            let sems: &[Sem] = match engine {
                "petgraph-vf2" => &[Sem::Induced],
                "oxigraph-sparql" | "kuzu-cypher" if kg => &[Sem::Iso, Sem::Hom],
                _ => &[Sem::Iso],
            };
            for &sem in sems {
                jobs.push(Job {
                    workload: w,
                    graph,
                    engine,
                    sem,
                });
            }
        }
    }

    // 4. Run.
    step(&format!(
        "running {} engine runs over {} workloads ({} s limit per query)",
        jobs.len(),
        workloads.len(),
        timeout.as_secs()
    ));
    let total: usize = jobs.iter().map(|j| j.workload.queries.len()).sum();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut records = Vec::new();
    let mut loads: BTreeMap<(String, String), f64> = BTreeMap::new();
    let peer_dir = work.join("peers");
    std::fs::create_dir_all(&peer_dir)?;
    let mut job_log = String::from("workload,engine,semantics,queries,wall_seconds\n");
    for job in &jobs {
        let job_started = Instant::now();
        bar.set_message(format!(
            "{} {} ({})",
            job.workload.name,
            job.engine,
            job.sem.name()
        ));
        let groups: Vec<String> = job
            .workload
            .queries
            .iter()
            .map(|q| q.group.clone())
            .collect();
        let mut tick = || bar.inc(1);
        let (outcomes, load) = if job.engine.starts_with("gpsense-") || job.engine == "petgraph-vf2"
        {
            let command = |start: usize| {
                let mut c = Command::new(&runner);
                c.arg("run")
                    .arg(&work)
                    .arg(&job.workload.name)
                    .arg(job.engine)
                    .arg(if job.sem == Sem::Hom { "hom" } else { "iso" })
                    .arg(start.to_string())
                    .arg(args.repeat.to_string());
                c
            };
            exec::run_job(&command, &groups, limits, &mut tick)
        } else {
            match (&peers.python, peers.engine(job.engine)) {
                (Some(python), Ok(_)) => {
                    let file = peer_dir.join(format!(
                        "{}.{}.{}.json",
                        job.workload.name,
                        job.engine,
                        job.sem.name()
                    ));
                    write_peer_workfile(&file, &work, job)?;
                    let command = |start: usize| {
                        let mut c = Command::new(python);
                        c.arg(&peers_py)
                            .arg(job.engine)
                            .arg(&file)
                            .arg(start.to_string())
                            .arg(args.repeat.to_string());
                        c
                    };
                    exec::run_job(&command, &groups, limits, &mut tick)
                }
                (python, version) => {
                    let reason = match (python, version) {
                        (_, Err(reason)) => format!("peer unavailable: {reason}"),
                        _ => "peer unavailable: no Python".to_owned(),
                    };
                    groups.iter().for_each(|_| tick());
                    (vec![Outcome::Unsupported(reason); groups.len()], None)
                }
            }
        };
        let _ = writeln!(
            job_log,
            "{},{},{},{},{:.2}",
            job.workload.name,
            job.engine,
            job.sem.name(),
            groups.len(),
            job_started.elapsed().as_secs_f64()
        );
        if let Some(l) = load {
            loads.insert((job.engine.to_owned(), job.graph.key.clone()), l);
        }
        for (q, outcome) in job.workload.queries.iter().zip(outcomes) {
            records.push(Record {
                workload: job.workload.name.clone(),
                experiment: job.workload.experiment.clone(),
                x: job.workload.x,
                group: q.group.clone(),
                query: q.id.clone(),
                engine: job.engine.to_owned(),
                sem: job.sem,
                outcome,
                expected: if job.sem == Sem::Iso {
                    q.expected
                } else {
                    None
                },
                reference: None,
                agree: Agreement::Unchecked,
            });
        }
    }
    bar.finish_and_clear();
    report::check(&mut records);

    // 4b. The exact matchers (their own workloads, engines taking turns per chunk).
    step("exact matchers: gpsense-dfs, DAF, VEQ, GuP, RapidMatch");
    let exact_section = exact::run(&exact_options, &mut |m| eprintln!("  {m}"));

    // 4c. The SPARQL algebra set against pyoxigraph, in-process (full runs).
    let sparql_section =
        if args.quick {
            Err("not run in --quick mode: its example is a release build of its own (fat LTO, with \
             the examples' dependency features: many minutes on 2 cores); `cargo xtask bench \
             --only sparql --quick` runs the first query of each class in seconds once it is built"
            .to_owned())
        } else {
            sparql_step(root, &work, &peers, false)
        };

    // 5. Kernel variants (full runs).
    let kernel_variants = if args.quick || args.no_kernel_variants {
        Err(if args.quick {
            "not run in --quick mode (`cargo bench -p gpsense-benches --bench kernels` takes minutes)".to_owned()
        } else {
            "not run (--no-kernel-variants)".to_owned()
        })
    } else {
        step("kernel variants: cargo bench -p gpsense-benches --bench kernels");
        kernels::run(root)
    };

    // 5b. Compression and TruST tables (full runs).
    let (compression, trust) = if args.quick {
        let why =
            || Err("not run in --quick mode (each example takes a minute or more)".to_owned());
        (why(), why())
    } else {
        step("compression: cargo run --release -p gpsense-benches --example compression");
        let compression = extras::run_example(root, "compression");
        step("TruST vs the seed's Figure 13: cargo run --release -p gpsense-benches --example trust_table");
        (compression, extras::run_example(root, "trust_table"))
    };

    // 6. Report.
    step("writing the report");
    let engines: Vec<String> = ours
        .iter()
        .chain(wanted_peers.iter())
        .map(|s| s.to_string())
        .collect();
    let names: Vec<String> = workloads.iter().map(|w| w.name.clone()).collect();
    let summaries = report::summarise(&records, &names, &engines);
    std::fs::write(out.join("results.csv"), report::results_csv(&records))?;
    std::fs::write(out.join("summary.csv"), report::summary_csv(&summaries))?;
    std::fs::write(out.join("jobs.csv"), &job_log)?;
    let mut figures = Vec::new();
    for (experiment, x_label) in EXPERIMENTS {
        let series = curves(&records, experiment, &engines);
        if series.is_empty() {
            continue;
        }
        let stem = out.join(format!("fig-{experiment}"));
        plot::figure(
            &stem,
            &format!("{experiment}: median query time per engine"),
            x_label,
            &series,
        )?;
        figures.push(experiment.to_string());
    }
    let context = ReportContext {
        args,
        manifest: &manifest,
        workloads: &workloads,
        peers: &peers,
        loads: &loads,
        timeout,
        limits,
        kernel_variants: &kernel_variants,
        compression: &compression,
        trust: &trust,
        figures: &figures,
        elapsed: started.elapsed(),
    };
    let mut md = markdown(&context, &records, &summaries);
    let mut exact_wrong = 0;
    md.push_str("## Exact matchers: DAF, VEQ, GuP, RapidMatch\n\n");
    match &exact_section {
        Ok(s) => {
            md.push_str(&s.markdown);
            exact_wrong = s.ours_wrong;
        }
        Err(e) => {
            let _ = writeln!(md, "Not run: {e:#}");
        }
    }
    md.push('\n');
    md.push_str("## SPARQL beyond basic graph patterns: gpsense vs Oxigraph, in-process\n\n");
    match &sparql_section {
        Ok(s) => md.push_str(&s.markdown),
        Err(e) => {
            let _ = writeln!(md, "Not run: {e}");
        }
    }
    md.push('\n');
    let report_path = out.join("report.md");
    std::fs::write(&report_path, md)?;
    let disagree = records
        .iter()
        .filter(|r| r.agree == Agreement::Disagree)
        .count();
    eprintln!(
        "wrote {} ({} records, {} disagreements) and the CSVs and figures beside it, in {:.0} s",
        report_path.display(),
        records.len(),
        disagree,
        started.elapsed().as_secs_f64()
    );
    print_headline(&summaries);
    // A peer that disagrees is reported (it may be the peer); one of our engines disagreeing with
    // a published answer or with another of our engines fails the run.
    let ours_wrong = records
        .iter()
        .filter(|r| r.engine.starts_with("gpsense-") && r.agree == Agreement::Disagree)
        .count();
    let ours_wrong = ours_wrong + exact_wrong;
    if ours_wrong > 0 {
        bail!(
            "{ours_wrong} gpsense counts differ from the reference: see {}",
            report_path.display()
        );
    }
    Ok(())
}

/// The SPARQL algebra set, with pyoxigraph from the peers' venv.
fn sparql_step(
    root: &Path,
    work: &Path,
    peers: &peers::Peers,
    quick: bool,
) -> Result<sparql::Section, String> {
    step("SPARQL algebra set: gpsense vs pyoxigraph, in-process (benches/sparql/algebra.rq)");
    let python = match (&peers.python, peers.engine("oxigraph-sparql")) {
        (Some(p), Ok(_)) => Ok(p.as_path()),
        (_, Err(e)) => Err(format!("pyoxigraph unavailable: {e}")),
        (None, Ok(_)) => Err("no Python".to_owned()),
    };
    let options = sparql::Options {
        root,
        work,
        python,
        quick,
    };
    sparql::run(&options, &mut |m| eprintln!("  {m}"))
}

/// `--only sparql`: the SPARQL algebra set alone, its table printed and written to
/// `sparql/report.md`; answers that differ fail the run.
fn only_sparql(root: &Path, out: &Path, bench_dir: &Path, args: &BenchArgs) -> Result<()> {
    let dir = out.join("sparql");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let peers = if args.no_peers {
        peers::Peers::none("--no-peers")
    } else {
        step("setting up the Python peers (target/bench/venv)");
        peers::set_up(&bench_dir.join("venv"), !args.offline, &mut |m| {
            eprintln!("  {m}")
        })
    };
    let section = sparql_step(root, &dir, &peers, args.quick).map_err(anyhow::Error::msg)?;
    let md = format!(
        "# SPARQL beyond basic graph patterns: gpsense vs Oxigraph\n\nGenerated by `cargo xtask \
         bench --only sparql{}` on {} ({}).\n\n{}",
        if args.quick { " --quick" } else { "" },
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine(),
        section.markdown
    );
    let path = dir.join("report.md");
    std::fs::write(&path, &md)?;
    eprintln!("\n{md}\nwrote {}", path.display());
    if section.differ > 0 {
        bail!(
            "{} answers differ between gpsense and Oxigraph: see {}",
            section.differ,
            path.display()
        );
    }
    Ok(())
}

fn step(msg: &str) {
    eprintln!("== {msg}");
}

/// The peer's workfile: the graph files and, per query, its pattern and (SPARQL/Cypher) text.
fn write_peer_workfile(file: &Path, work: &Path, job: &Job) -> Result<()> {
    let graphs = work.join("graphs");
    let queries: Vec<serde_json::Value> = job
        .workload
        .queries
        .iter()
        .map(|q| {
            let text = match job.engine {
                "oxigraph-sparql" => Some(text::sparql(q, job.sem)),
                "kuzu-cypher" => Some(text::cypher(q, job.sem, job.graph.undirected)),
                _ => None,
            };
            let (text, unsupported) = match text {
                Some(Ok(t)) => (Some(t), None),
                Some(Err(text::Unsupported(why))) => (None, Some(why)),
                None => (None, None),
            };
            json!({"nodes": q.nodes, "edges": q.edges, "text": text, "unsupported": unsupported})
        })
        .collect();
    let value = json!({
        "edges": graphs.join(format!("{}.edges.tsv", job.graph.key)),
        "labels": job.graph.labelled.then(|| graphs.join(format!("{}.labels.txt", job.graph.key))),
        "nodes": job.graph.nodes,
        "undirected": job.graph.undirected,
        "relations": job.graph.relations.len(),
        "queries": queries,
    });
    std::fs::write(file, serde_json::to_vec(&value)?)
        .with_context(|| format!("cannot write {}", file.display()))
}

/// The curve of each engine and semantics over an experiment's points: the median of the answered
/// queries' times at each point where at least half of the queries were answered.
fn curves(records: &[Record], experiment: &str, engines: &[String]) -> Vec<plot::Series> {
    let mut out = Vec::new();
    for engine in engines {
        for sem in [Sem::Iso, Sem::Hom, Sem::Induced] {
            let mut by_x: BTreeMap<u64, (f64, Vec<f64>, usize)> = BTreeMap::new();
            for r in records.iter().filter(|r| {
                r.experiment.as_deref() == Some(experiment) && &r.engine == engine && r.sem == sem
            }) {
                let x = r.x.unwrap_or(0.0);
                let e = by_x.entry(x.to_bits()).or_insert((x, Vec::new(), 0));
                e.2 += 1;
                if let Some(s) = r.seconds() {
                    e.1.push(s * 1e3);
                }
            }
            let mut points: Vec<(f64, f64)> = by_x
                .values()
                .filter(|(_, times, n)| !times.is_empty() && times.len() * 2 >= *n)
                .filter_map(|(x, times, _)| Some((*x, exec::median(times)?)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !points.is_empty() {
                out.push(plot::Series {
                    label: format!("{engine} ({})", sem.name()),
                    points,
                });
            }
        }
    }
    out
}

struct ReportContext<'a> {
    args: &'a BenchArgs,
    manifest: &'a Manifest,
    workloads: &'a [&'a Workload],
    peers: &'a peers::Peers,
    loads: &'a BTreeMap<(String, String), f64>,
    timeout: Duration,
    limits: Limits,
    kernel_variants: &'a Result<Vec<kernels::Timing>, String>,
    compression: &'a Result<String, String>,
    trust: &'a Result<String, String>,
    figures: &'a [String],
    elapsed: Duration,
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kib| format!("{:.0} GiB", kib as f64 / (1u64 << 20) as f64))
        .unwrap_or_else(|| "?".into());
    format!("{cpu}, {cores} cores, {mem} memory")
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The workloads the peers run on: all of them, or with `--quick` (the harness's smoke test) the
/// one with the smallest graph of each kind, benchmark format and knowledge graph. A peer's child
/// process loads its workload's graph into Python, once per workload, semantics and restart after a
/// timeout; on every quick workload that made ~60 of the ~80 child processes and most of the time
/// (networkx, igraph and kuzu loading ConceptNet-100K and WordNet's subgraphs). gpsense's engines
/// still run everywhere, so every workload and every figure is drawn.
fn peer_workloads(
    manifest: &Manifest,
    workloads: &[&Workload],
    quick: bool,
) -> std::collections::BTreeSet<String> {
    if !quick {
        return workloads.iter().map(|w| w.name.clone()).collect();
    }
    let graph = |w: &Workload| manifest.graph(&w.graph);
    [true, false]
        .into_iter()
        .filter_map(|undirected| {
            workloads
                .iter()
                .filter(|w| graph(w).is_some_and(|g| g.undirected == undirected))
                .min_by_key(|w| graph(w).map_or(u64::MAX, |g| g.edges))
                .map(|w| w.name.clone())
        })
        .collect()
}

fn markdown(c: &ReportContext, records: &[Record], summaries: &[report::Summary]) -> String {
    let mut md = String::new();
    let mode = if c.args.quick {
        "`cargo xtask bench --quick`"
    } else {
        "`cargo xtask bench`"
    };
    let _ = writeln!(md, "# gpsense benchmarks\n");
    let _ = writeln!(
        md,
        "Generated by {mode} on {} ({}), {}; {} in {:.0} s.\n",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine(),
        command_output("rustc", &["-V"]),
        if c.args.quick {
            "quick subset (the peers on the smallest benchmark-format and knowledge-graph \
             workloads only)"
        } else {
            "full run"
        },
        c.elapsed.as_secs_f64()
    );
    let _ = writeln!(
        md,
        "Every engine runs on one thread, one engine at a time, in a child process that loads the graph once \
         (load time not counted); a query's time is the median of up to {} runs (repeated only while they took \
         under a second in all) and covers what the engine does for one query (gpsense: plan, filter, join, count). \
         Time limit {} s per query: a query past it is killed and recorded as a timeout; after {} timeouts of an \
         engine in one query group, the group's other queries are recorded as skipped on that engine. \
         Ratios are the median over the queries both answered of (engine time / gpsense-dfs time) under the same \
         semantics: above 1 means slower than gpsense. Raw numbers: `results.csv` (per query, with a DISAGREE column), \
         `summary.csv`.\n",
        c.args.repeat,
        c.timeout.as_secs(),
        c.limits.max_timeouts
    );
    let disagree = records
        .iter()
        .filter(|r| r.agree == Agreement::Disagree)
        .count();
    if disagree > 0 {
        let _ = writeln!(
            md,
            "<span style=\"color:red\">**{disagree} counts differ from the reference under the same semantics**</span> (listed at the end).\n"
        );
    } else {
        let checked = records
            .iter()
            .filter(|r| r.agree == Agreement::Agree)
            .count();
        let _ = writeln!(md, "Counts: {checked} answers checked against the reference under the same semantics, none differs.\n");
    }

    // Headline.
    let _ = writeln!(md, "## Headline\n");
    let _ = writeln!(md, "Median ms of gpsense-dfs (iso), and each peer's median time ratio to it (iso; `-`: nothing comparable answered).\n");
    let peers_run: Vec<&str> = PEER_NAMES
        .iter()
        .copied()
        .filter(|p| summaries.iter().any(|s| s.engine == *p))
        .collect();
    let _ = write!(md, "| workload | gpsense-dfs ms |");
    for p in &peers_run {
        let _ = write!(md, " {p} |");
    }
    let _ = write!(md, "\n|---|---|");
    for _ in &peers_run {
        md.push_str("---|");
    }
    md.push('\n');
    for w in c.workloads {
        let find = |e: &str, sem: Sem| {
            summaries
                .iter()
                .find(|s| s.workload == w.name && s.engine == e && s.sem == sem)
        };
        let ours = find(OURS, Sem::Iso)
            .and_then(|s| s.median_ms)
            .map(report::ms)
            .unwrap_or_else(|| "-".into());
        let _ = write!(md, "| {} | {ours} |", w.name);
        for p in &peers_run {
            let sem = if *p == "petgraph-vf2" {
                Sem::Induced
            } else {
                Sem::Iso
            };
            let cell = match find(p, sem) {
                Some(s) => match s.ratio {
                    Some(r) => {
                        let mut cell = if r >= 10.0 {
                            format!("{r:.0}x")
                        } else {
                            format!("{r:.1}x")
                        };
                        if s.timeouts + s.skipped > 0 {
                            let _ = write!(cell, " ({} t/o)", s.timeouts + s.skipped);
                        }
                        if sem == Sem::Induced {
                            cell.push_str(" ind.");
                        }
                        if s.disagree > 0 {
                            cell = format!("<span style=\"color:red\">{cell} DISAGREE</span>");
                        }
                        cell
                    }
                    None if s.timeouts + s.skipped > 0 => {
                        format!("all t/o ({})", s.timeouts + s.skipped)
                    }
                    None => "-".into(),
                },
                None => "-".into(),
            };
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
    md.push('\n');

    // Semantics.
    let _ = writeln!(
        md,
        "## Semantics: what each engine counts and how it is compared\n"
    );
    let _ = writeln!(
        md,
        "| engine | tool | counts by default | compared as |\n|---|---|---|---|"
    );
    for e in text::EQUALISATION {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            e.engine, e.tool, e.default, e.compared_as
        );
    }
    let _ = writeln!(
        md,
        "\nReferences: under iso, the published answer where the suite has one (HPRD, yeast), otherwise gpsense-dfs's count \
         (for gpsense-dfs itself, gpsense-kernels'); under hom, gpsense-dfs with `Semantics::Hom`; petgraph's induced \
         count against gpsense's matches that have no extra data edge between matched nodes (listed up to 2,000,000 \
         matches, beyond that unchecked).\n"
    );

    // Peers.
    let _ = writeln!(md, "## Engines\n");
    let _ = writeln!(md, "- gpsense: this checkout, `gpsense-bench-runner` (release); petgraph 0.8 in the same binary.");
    for p in &c.peers.packages {
        match &p.version {
            Ok(v) => {
                let _ = writeln!(md, "- {} {v} (PyPI, target/bench/venv)", p.pip);
            }
            Err(e) => {
                let _ = writeln!(md, "- {} **unavailable**: {e}", p.pip);
            }
        }
    }
    let _ = writeln!(md, "- {}", command_output("python3", &["--version"]));
    for n in &c.peers.notes {
        let _ = writeln!(md, "- set-up this run: {n}");
    }
    md.push('\n');

    // Workloads.
    let _ = writeln!(md, "## Workloads\n");
    let _ = writeln!(md, "| graph | nodes | edges | avg degree | relations | self-loops | pairs with several relations | load s (gpsense / slowest peer) |\n|---|---|---|---|---|---|---|---|");
    for g in &c.manifest.graphs {
        if !c.workloads.iter().any(|w| w.graph == g.key) {
            continue;
        }
        let ours = c.loads.get(&(OURS.to_owned(), g.key.clone()));
        let slowest = c
            .loads
            .iter()
            .filter(|((e, k), _)| k == &g.key && e != OURS)
            .max_by(|a, b| a.1.total_cmp(b.1));
        let _ = writeln!(
            md,
            "| {} ({}) | {} | {}{} | {:.1} | {} | {} | {} | {} / {} |",
            g.key,
            g.description,
            g.nodes,
            g.edges,
            if g.undirected { " undirected" } else { "" },
            g.average_degree(),
            g.relations.len(),
            g.self_loops,
            g.multi_relation_pairs,
            ours.map(|s| format!("{s:.3}"))
                .unwrap_or_else(|| "-".into()),
            slowest
                .map(|((e, _), s)| format!("{s:.2} ({e})"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    md.push('\n');

    for w in c.workloads {
        let _ = writeln!(md, "## {}: {}\n", w.name, w.title);
        let _ = writeln!(md, "Queries: {}.\n", w.selection);
        let rows: Vec<&report::Summary> =
            summaries.iter().filter(|s| s.workload == w.name).collect();
        md.push_str(&report::workload_table(&rows));
        md.push('\n');
        if w.name == "yeast" {
            md.push_str(&yeast_groups(records));
        }
    }

    // Experiments.
    let _ = writeln!(md, "## The paper's experiments (Figures 10-11)\n");
    for (experiment, x_label) in EXPERIMENTS {
        let points: Vec<&Workload> = c
            .workloads
            .iter()
            .copied()
            .filter(|w| w.experiment.as_deref() == Some(*experiment))
            .collect();
        if points.is_empty() {
            continue;
        }
        let _ = writeln!(md, "### {experiment} ({x_label})\n");
        if c.figures.iter().any(|f| f == experiment) {
            let _ = writeln!(
                md,
                "![{experiment}](fig-{experiment}.svg) (also `fig-{experiment}.png`)\n"
            );
        }
        let _ = write!(md, "Median ms per point (answered/queries).\n\n| engine |");
        for w in &points {
            let _ = write!(md, " {} |", w.x.map(|x| format!("{x}")).unwrap_or_default());
        }
        let _ = write!(md, "\n|---|");
        for _ in &points {
            md.push_str("---|");
        }
        md.push('\n');
        let mut keys: Vec<(String, Sem)> = Vec::new();
        for s in summaries
            .iter()
            .filter(|s| points.iter().any(|w| w.name == s.workload))
        {
            if !keys.contains(&(s.engine.clone(), s.sem)) {
                keys.push((s.engine.clone(), s.sem));
            }
        }
        for (engine, sem) in keys {
            let _ = write!(md, "| {engine} ({}) |", sem.name());
            for w in &points {
                let cell = summaries
                    .iter()
                    .find(|s| s.workload == w.name && s.engine == engine && s.sem == sem)
                    .map(|s| {
                        let t = s.median_ms.map(report::ms).unwrap_or_else(|| "-".into());
                        let mut cell = format!("{t} ({}/{})", s.ok, s.queries);
                        if s.disagree > 0 {
                            cell = format!("<span style=\"color:red\">{cell} DISAGREE</span>");
                        }
                        cell
                    })
                    .unwrap_or_else(|| "-".into());
                let _ = write!(md, " {cell} |");
            }
            md.push('\n');
        }
        md.push('\n');
    }

    // Our engines and extras.
    let _ = writeln!(md, "## Kernel variants\n");
    match c.kernel_variants {
        Ok(rows) => {
            let _ = writeln!(md, "`cargo bench -p gpsense-benches --bench kernels` (criterion, CPU, ConceptNet-100K inputs):\n\n| bench | variant | time (criterion's estimate) |\n|---|---|---|");
            for t in rows {
                let _ = writeln!(md, "| {} | {} | {} |", t.bench, t.variant, t.time);
            }
        }
        Err(why) => {
            let _ = writeln!(md, "{why}");
        }
    }
    md.push('\n');
    md.push_str(&extras::section(
        "Compressed vs uncompressed",
        "cargo run --release -p gpsense-benches --example compression",
        c.compression,
    ));
    md.push_str(&extras::section(
        "TruST against the seed paper's Figure 13",
        "cargo run --release -p gpsense-benches --example trust_table",
        c.trust,
    ));
    let _ = writeln!(md, "## Not measured here\n");
    let _ = writeln!(
        md,
        "- `--engine gpu`: no GPU on this machine; `gpsense-emulated` runs the same launch sequence on the CPU (it \
         measures the emulator, not a GPU).\n\
         - gpsense-emulated is run on the suites and the common-sense workloads, not on every curve point."
    );
    md.push('\n');
    let dis = report::disagreements(records);
    if !dis.is_empty() {
        let _ = writeln!(md, "## Disagreements\n\n{dis}");
    }
    md
}

/// Yeast by size group: gpsense-dfs's median and each engine's answered share.
fn yeast_groups(records: &[Record]) -> String {
    let mut groups: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.workload == "yeast") {
        if !groups.contains(&r.group) {
            groups.push(r.group.clone());
        }
    }
    let mut engines: Vec<(String, Sem)> = Vec::new();
    for r in records.iter().filter(|r| r.workload == "yeast") {
        if !engines.contains(&(r.engine.clone(), r.sem)) {
            engines.push((r.engine.clone(), r.sem));
        }
    }
    let mut md = String::from("By size group: median ms (answered/queries).\n\n| engine |");
    for g in &groups {
        let _ = write!(md, " {g} |");
    }
    md.push_str("\n|---|");
    for _ in &groups {
        md.push_str("---|");
    }
    md.push('\n');
    for (e, sem) in &engines {
        let _ = write!(md, "| {e} ({}) |", sem.name());
        for g in &groups {
            let rs: Vec<&Record> = records
                .iter()
                .filter(|r| {
                    r.workload == "yeast" && &r.group == g && &r.engine == e && r.sem == *sem
                })
                .collect();
            let times: Vec<f64> = rs.iter().filter_map(|r| r.seconds()).collect();
            let t = exec::median(&times)
                .map(|s| report::ms(s * 1e3))
                .unwrap_or_else(|| "-".into());
            let _ = write!(md, " {t} ({}/{}) |", times.len(), rs.len());
        }
        md.push('\n');
    }
    md.push('\n');
    md
}

fn print_headline(summaries: &[report::Summary]) {
    eprintln!(
        "\n{:<16} {:<18} {:<8} {:>9} {:>12} {:>8}",
        "workload", "engine", "sem", "answered", "median ms", "ratio"
    );
    for s in summaries {
        eprintln!(
            "{:<16} {:<18} {:<8} {:>9} {:>12} {:>8}{}",
            s.workload,
            s.engine,
            s.sem.name(),
            format!("{}/{}", s.ok, s.queries),
            s.median_ms.map(report::ms).unwrap_or_else(|| "-".into()),
            s.ratio
                .map(|r| format!("{r:.2}"))
                .unwrap_or_else(|| "-".into()),
            if s.disagree > 0 { "  DISAGREE" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(key: &str, edges: u64, undirected: bool) -> GraphMeta {
        GraphMeta {
            key: key.to_owned(),
            description: String::new(),
            nodes: edges,
            edges,
            undirected,
            labelled: undirected,
            relations: Vec::new(),
            self_loops: 0,
            multi_relation_pairs: 0,
        }
    }

    fn workload(name: &str, graph: &str) -> Workload {
        Workload {
            name: name.to_owned(),
            title: String::new(),
            graph: graph.to_owned(),
            experiment: None,
            x: None,
            selection: String::new(),
            queries: Vec::new(),
            limit: None,
        }
    }

    /// `--quick` runs each peer on the smallest graph of each kind; a full run, everywhere.
    #[test]
    fn quick_peers_run_on_the_smallest_graph_of_each_kind() {
        let manifest = Manifest {
            quick: true,
            graphs: vec![
                graph("hprd", 37_000, true),
                graph("yeast", 12_000, true),
                graph("conceptnet", 100_000, false),
                graph("degree-8", 20_000, false),
            ],
            workloads: vec![
                workload("hprd", "hprd"),
                workload("yeast-dense_4", "yeast"),
                workload("common-sense-conceptnet", "conceptnet"),
                workload("query-size-6", "conceptnet"),
                workload("degree-8", "degree-8"),
            ],
        };
        let all: Vec<&Workload> = manifest.workloads.iter().collect();
        let quick = peer_workloads(&manifest, &all, true);
        assert_eq!(
            quick.into_iter().collect::<Vec<_>>(),
            ["degree-8", "yeast-dense_4"]
        );
        assert_eq!(peer_workloads(&manifest, &all, false).len(), 5);
        // A run narrowed to knowledge graphs keeps one of them.
        let kg: Vec<&Workload> = all[2..4].to_vec();
        assert_eq!(peer_workloads(&manifest, &kg, true).len(), 1);
    }
}
