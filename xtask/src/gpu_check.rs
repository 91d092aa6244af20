//! `cargo xtask gpu-check`: the validation to run on a machine with an NVIDIA GPU (and no network) in
//! about ten minutes. Every answer of the engine under test (`gpu`, or `emulated` where there is no
//! GPU) is held to the `dfs` engine's, and to the published counts where there are some:
//!
//! 1. HPRD's 200 queries under iso (published counts) and hom, and yeast's queries with a published
//!    count of at most 10^7 (10^5 with `--quick`): `gpsense match`, count tables compared per query.
//! 2. The common-sense queries of `queries.rs` on the embedded ConceptNet-100K: `gpsense query`,
//!    full sorted row sets (or counts) compared.
//! 3. With `--engine gpu` and compute-sanitizer present: memcheck and racecheck on a few of them,
//!    and on a TruST search, which synccheck checks too (its warps' barrier).
//! 4. TruST on the seed's Figure 13 workloads (`trust.rs`): `gpsense trust` on `cpu` and on the
//!    engine under test, ranked rows compared, the median time per phase of each in the report
//!    (the GPU column, measured).
//! 5. One markdown report (`report.rs`) with the machine, the binary, per-suite times and the
//!    verdict; the command fails unless everything agrees.
//! 6. With `--egsm BIN`: EGSM, the GPU peer, on the same iso suites' queries (`egsm.rs`), every
//!    query's three answers and times in `egsm.md` beside the report, a summary in it.
//!
//! The binary is built here with the PTX embedded (without it for `--engine emulated`, which runs
//! no PTX), or given (`--bin`). `--bundle DIR` writes the
//! binary, this program, the datasets and `run.sh` into DIR for a GPU machine without Rust, and
//! with `--egsm-source` EGSM's source, its build script and the suites in its format.

mod compare;
mod egsm;
mod exec;
mod parse;
mod queries;
mod report;
mod trust;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use sha2::{Digest, Sha256};

use crate::ptx;
use compare::Answer;
use queries::{CommonSense, QUERIES};
use report::{Listed, Report, SanitizerRun, Sanitizers, Suite, Timing};

/// Yeast's queries are kept to those with a published count of at most this: about 1,200 queries,
/// 2.4 s on dfs and 130 s on the emulated pipeline here (2 cores).
const FULL_MAX_EXPECTED: u64 = 10_000_000;
/// The same with `--quick`: 840 queries, 3 s emulated.
const QUICK_MAX_EXPECTED: u64 = 100_000;
/// Beyond the per-query limit, how long a run may print nothing (loading, the GPU's start, the
/// PTX's JIT compilation) before it counts as hung.
const GRACE: Duration = Duration::from_secs(60);
/// compute-sanitizer slows kernels down by up to 100x and prints nothing until the end.
const SANITIZER_SILENCE: Duration = Duration::from_secs(900);
/// HPRD queries (the first by name) and common-sense queries (the first of the list) run under
/// each sanitizer.
const SANITIZED_HPRD: usize = 5;
const SANITIZED_COMMON_SENSE: usize = 3;

#[derive(Args, Debug, Clone)]
// A later option wins, so that a bundle's run.sh can be given another --out or --datasets.
#[command(args_override_self = true)]
pub struct GpuCheckArgs {
    /// A prebuilt gpsense binary, e.g. one carried to a GPU machine without Rust [default: build
    /// target/release/gpsense with the PTX embedded, after `cargo xtask ptx`].
    #[arg(long, value_name = "PATH")]
    pub bin: Option<PathBuf>,
    /// The datasets directory (the one holding subgraph-matching/) [default: <workspace>/datasets].
    #[arg(long, value_name = "DIR")]
    pub datasets: Option<PathBuf>,
    /// The engine held to dfs: gpu (an NVIDIA GPU), or emulated (the same launches run on the CPU,
    /// for a machine without a GPU, e.g. CI).
    #[arg(long, default_value = "gpu", value_parser = ["gpu", "emulated"])]
    pub engine: String,
    /// The report [default: <workspace>/target/gpu-check/report.md].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A shorter run: yeast's queries with a published count of at most 1e5 instead of 1e7.
    #[arg(long)]
    pub quick: bool,
    /// gpsense's per-query time limit; a query that reaches it is unverified and fails the check.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub timeout_ms: u64,
    /// Check nothing: write DIR with the binary, this program, the datasets and run.sh, to carry to
    /// a GPU machine without a Rust toolchain and run there (`DIR/run.sh`, report in DIR).
    #[arg(long, value_name = "DIR")]
    pub bundle: Option<PathBuf>,
    /// With --bundle: EGSM's source to carry (a clone of github.com/RapidsAtHKUST/EGSM, bare or
    /// not, holding the pinned commit, or a plain source tree) [default: $GPSENSE_EGSM_SOURCE;
    /// without either the bundle has no EGSM].
    #[arg(long, value_name = "PATH", requires = "bundle")]
    pub egsm_source: Option<PathBuf>,
    /// An EGSM binary to run beside gpsense on the iso suites (HPRD-200 and yeast): egsm.md and
    /// egsm.csv beside the report, a summary in it.
    #[arg(long, value_name = "PATH")]
    pub egsm: Option<PathBuf>,
    /// The suites in EGSM's format, as a bundle carries them [default: converted now, into
    /// egsm-inputs/ beside the report].
    #[arg(long, value_name = "DIR", requires = "egsm")]
    pub egsm_inputs: Option<PathBuf>,
    /// Run EGSM on at most N queries per suite, spread evenly over the names (a process each).
    #[arg(long, value_name = "N", requires = "egsm")]
    pub egsm_queries: Option<usize>,
    /// Only the side by side: the iso suites on the engine, dfs and EGSM; no hom suite,
    /// common-sense queries, TruST or sanitizers.
    #[arg(long, requires = "egsm")]
    pub egsm_only: bool,
}

/// What every run of the binary needs.
struct Ctx {
    bin: PathBuf,
    datasets: PathBuf,
    engine: String,
    timeout_ms: u64,
    quick: bool,
    /// Where the TruST workloads are written.
    work: PathBuf,
    /// EGSM beside gpsense, when asked for and found.
    egsm: Option<egsm::Peer>,
    egsm_only: bool,
}

impl Ctx {
    /// `gpsense SUB --engine E --timeout-ms T`.
    fn gpsense(&self, sub: &str, engine: &str) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(self.args(sub, engine));
        cmd
    }

    fn args(&self, sub: &str, engine: &str) -> Vec<OsString> {
        let t = self.timeout_ms.to_string();
        [sub, "--engine", engine, "--timeout-ms", &t]
            .map(OsString::from)
            .to_vec()
    }

    fn silence(&self) -> Duration {
        Duration::from_millis(self.timeout_ms) + GRACE
    }

    fn suite_dir(&self, name: &str) -> PathBuf {
        self.datasets.join("subgraph-matching").join(name)
    }
}

pub fn run(root: &Path, args: &GpuCheckArgs) -> Result<()> {
    let started = Instant::now();
    let datasets = args
        .datasets
        .clone()
        .unwrap_or_else(|| root.join("datasets"));
    check_datasets(&datasets)?;
    let bin = match &args.bin {
        Some(b) => b.clone(),
        // The emulator runs the kernels' Rust bodies, never PTX: the release binary the README
        // builds serves it as is (embedding the PTX rebuilt six crates, a minute in CI).
        None if args.engine == "emulated" && args.bundle.is_none() => build_plain(root)?,
        None => build(root)?,
    };
    // Absolute, so that the report's commands work from anywhere.
    let bin =
        fs::canonicalize(&bin).with_context(|| format!("{}: no such binary", bin.display()))?;
    if let Some(dir) = &args.bundle {
        let source = args
            .egsm_source
            .clone()
            .or_else(|| std::env::var_os("GPSENSE_EGSM_SOURCE").map(PathBuf::from));
        return bundle(dir, &bin, &datasets, source.as_deref());
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| target_dir(root).join("gpu-check/report.md"));
    let beside = out.parent().unwrap_or(Path::new(".")).to_path_buf();
    let (egsm_peer, egsm_problem) = match &args.egsm {
        Some(b) => egsm_peer(args, b, &datasets, &beside)?,
        None => (None, None),
    };
    let ctx = Ctx {
        bin,
        datasets,
        engine: args.engine.clone(),
        timeout_ms: args.timeout_ms,
        quick: args.quick,
        work: beside.join("trust-fig13"),
        egsm: egsm_peer,
        egsm_only: args.egsm_only,
    };
    let mut report = check(&ctx, args.bin.is_some());
    if let Some(b) = &args.egsm {
        let side = report.egsm.get_or_insert_with(Default::default);
        (side.bin, side.engine) = (b.display().to_string(), ctx.engine.clone());
        side.limit = egsm_limit(ctx.timeout_ms);
        side.problem = side.problem.take().or(egsm_problem).or_else(|| {
            let none = side.suites.is_empty();
            none.then(|| "gpsense answered no suite, so nothing ran beside it".to_owned())
        });
        write_report(&beside.join("egsm.md"), &egsm::detail(side))?;
        write_report(&beside.join("egsm.csv"), &egsm::csv(side))?;
        eprintln!("gpu-check: EGSM: {}", egsm::line(side));
    }
    report.wall = started.elapsed();
    write_report(&out, &report::render(&report))?;
    let verdict = report::verdict(&report);
    eprintln!("gpu-check: {}", verdict.line);
    println!("{}", out.display());
    ensure!(verdict.pass, "gpu-check failed; see {}", out.display());
    Ok(())
}

/// EGSM's process limit: gpsense's per-query limit plus its start (CUDA's, reading the graph).
fn egsm_limit(timeout_ms: u64) -> Duration {
    Duration::from_millis(timeout_ms) + Duration::from_secs(10)
}

/// How EGSM runs, or why it cannot (no binary: the bundle's build failed); the inputs are converted
/// now unless given.
fn egsm_peer(
    args: &GpuCheckArgs,
    bin: &Path,
    datasets: &Path,
    beside: &Path,
) -> Result<(Option<egsm::Peer>, Option<String>)> {
    if !bin.is_file() {
        let why = format!(
            "no EGSM binary at {} (in a bundle: see egsm/build.log)",
            bin.display()
        );
        return Ok((None, Some(why)));
    }
    let inputs = match &args.egsm_inputs {
        Some(dir) => dir.clone(),
        None => {
            let dir = beside.join("egsm-inputs");
            step(&format!("the suites in EGSM's format: {}", dir.display()));
            for line in egsm::convert_inputs(datasets, &dir)? {
                eprintln!("   {line}");
            }
            dir
        }
    };
    let peer = egsm::Peer {
        bin: fs::canonicalize(bin)?,
        inputs,
        limit: egsm_limit(args.timeout_ms),
        per_suite: args.egsm_queries,
    };
    Ok((Some(peer), None))
}

/// Everything but the report's file: a first query, then the suites and the sanitizers.
fn check(ctx: &Ctx, given: bool) -> Report {
    let mut report = Report {
        gpus: gpus(),
        host: host(),
        device: None,
        binary: describe_binary(&ctx.bin, given),
        engine: ctx.engine.clone(),
        datasets: ctx.datasets.display().to_string(),
        quick: ctx.quick,
        timeout_ms: ctx.timeout_ms,
        preflight: None,
        suites: Vec::new(),
        sanitizers: Sanitizers::NotRun("the engine did not start".into()),
        trust: Vec::new(),
        egsm: None,
        wall: Duration::ZERO,
    };
    step(&format!("a first query on the {} engine", ctx.engine));
    match preflight(ctx) {
        Err(why) => report.preflight = Some(why),
        Ok(device) => {
            report.device = device;
            let (suites, sides) = suites(ctx);
            report.suites = suites;
            if ctx.egsm.is_some() {
                report.egsm = Some(egsm::SideBySide {
                    suites: sides,
                    ..Default::default()
                });
            }
            if ctx.egsm_only {
                report.sanitizers = Sanitizers::NotRun("--egsm-only".into());
                return report;
            }
            step("TruST: the seed's Figure 13 on cpu and on the engine");
            report.trust = trust::run(ctx, &ctx.work);
            report.sanitizers = sanitizers(ctx);
        }
    }
    report
}

fn check_datasets(datasets: &Path) -> Result<()> {
    for dir in ["hprd-study", "yeast"] {
        let path = datasets.join("subgraph-matching").join(dir);
        ensure!(
            path.is_dir(),
            "{} not found: give the datasets directory with --datasets",
            path.display()
        );
    }
    Ok(())
}

/// Builds the PTX, then the CLI in release mode with the PTX embedded: one self-contained binary.
fn build(root: &Path) -> Result<PathBuf> {
    step("cargo xtask ptx (the PTX to embed)");
    let archs = ptx::DEFAULT_ARCHS.iter().map(|s| s.to_string()).collect();
    ptx::run(
        root,
        &ptx::Options {
            archs,
            rustup: false,
        },
    )?;
    step("cargo build --release -p gpsense-cli --features gpsense-runtime/embed-ptx");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["build", "--release", "-p", "gpsense-cli"])
        .args(["--features", "gpsense-runtime/embed-ptx"])
        .status()
        .context("cannot run cargo")?;
    ensure!(status.success(), "building gpsense failed");
    Ok(target_dir(root).join("release/gpsense"))
}

/// The CLI in release mode without PTX, for the emulated engine.
fn build_plain(root: &Path) -> Result<PathBuf> {
    step("cargo build --release -p gpsense-cli (the emulator needs no PTX)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["build", "--release", "-p", "gpsense-cli"])
        .status()
        .context("cannot run cargo")?;
    ensure!(status.success(), "building gpsense failed");
    Ok(target_dir(root).join("release/gpsense"))
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// One query on the engine, so that a missing driver or PTX is one clear line, not a failure per
/// query. Returns the device gpsense opened (its `GPU: ...` line), if any.
fn preflight(ctx: &Ctx) -> std::result::Result<Option<String>, String> {
    let mut cmd = ctx.gpsense("query", &ctx.engine);
    cmd.args(["--count", QUERIES[0].text]);
    let run = exec::run(&mut cmd, ctx.silence()).map_err(|e| format!("{e:#}"))?;
    if let Some(why) = run.failure() {
        return Err(why);
    }
    Ok(run
        .stderr
        .lines()
        .find(|l| l.starts_with("GPU: "))
        .map(str::to_owned))
}

/// A `gpsense match` suite: one data graph, a directory of queries.
struct MatchSpec {
    name: String,
    data: PathBuf,
    queries: Vec<PathBuf>,
    expected: Option<PathBuf>,
    max_expected: Option<u64>,
    semantics: &'static str,
    /// The suite's directory when EGSM runs beside it (iso only: EGSM counts isomorphisms).
    egsm: Option<&'static str>,
}

impl MatchSpec {
    fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["--semantics".into(), self.semantics.into()];
        a.extend(["--data".into(), self.data.clone().into()]);
        a.push("--query".into());
        a.extend(self.queries.iter().map(|q| q.clone().into()));
        if let Some(e) = &self.expected {
            a.extend(["--expected".into(), e.clone().into()]);
        }
        if let Some(m) = self.max_expected {
            a.extend(["--max-expected".into(), m.to_string().into()]);
        }
        a
    }
}

/// The suites, and EGSM beside the iso ones when asked for.
fn suites(ctx: &Ctx) -> (Vec<Suite>, Vec<egsm::SuiteSide>) {
    let (hprd, yeast) = (ctx.suite_dir("hprd-study"), ctx.suite_dir("yeast"));
    let max = if ctx.quick {
        QUICK_MAX_EXPECTED
    } else {
        FULL_MAX_EXPECTED
    };
    let hprd_spec = |semantics, expected: bool| MatchSpec {
        name: format!("HPRD-200, {semantics}"),
        data: hprd.join("data_graph/HPRD.graph"),
        queries: vec![hprd.join("query_graph")],
        // The published counts are subgraph isomorphisms: under hom, dfs is the only reference.
        expected: expected.then(|| hprd.join("expected_output.res")),
        max_expected: None,
        semantics,
        egsm: expected.then_some("hprd-study"),
    };
    let mut specs = vec![hprd_spec("iso", true)];
    if !ctx.egsm_only {
        specs.push(hprd_spec("hom", false));
    }
    specs.push(MatchSpec {
        name: format!("yeast, published count <= {max:e}"),
        data: yeast.join("data_graph/yeast.graph"),
        queries: vec![yeast.join("query_graph")],
        expected: Some(yeast.join("yeast_ans.txt")),
        max_expected: Some(max),
        semantics: "iso",
        egsm: Some("yeast"),
    });
    let (mut out, mut sides) = (Vec::new(), Vec::new());
    for spec in &specs {
        let (suite, side) = match_suite(ctx, spec);
        out.push(suite);
        sides.extend(side);
    }
    if !ctx.egsm_only {
        out.push(common_sense_suite(ctx));
    }
    (out, sides)
}

fn match_suite(ctx: &Ctx, spec: &MatchSpec) -> (Suite, Option<egsm::SuiteSide>) {
    step(&format!("{}: {} then dfs", spec.name, ctx.engine));
    let mut cmd = ctx.gpsense("match", &ctx.engine);
    cmd.args(spec.args());
    let mut suite = Suite {
        name: spec.name.clone(),
        command: command_line(&cmd),
        ..Suite::default()
    };
    let expected = spec.expected.as_ref().and_then(|p| {
        let read = fs::read_to_string(p).map_err(anyhow::Error::from);
        match read.and_then(|text| parse::expected(&text)) {
            Ok(map) => Some(map),
            Err(e) => {
                suite.failures.push(format!("{}: {e:#}", p.display()));
                None
            }
        }
    });
    let (ours, engine_time) = run_match(ctx, spec, &ctx.engine, &mut suite.failures);
    let (dfs, dfs_time) = run_match(ctx, spec, "dfs", &mut suite.failures);
    let cmp = compare::counts(&ctx.engine, &ours, &dfs, expected.as_ref());
    suite.queries = cmp.queries;
    suite.mismatches = cmp.mismatches;
    suite.unverified = cmp.unverified;
    (suite.engine, suite.dfs) = (engine_time, dfs_time);
    progress(&suite);
    let side = match (&ctx.egsm, spec.egsm) {
        (Some(peer), Some(key)) => {
            step(&format!("{}: EGSM, a process per query", spec.name));
            let side = egsm::run_suite(peer, key, &spec.name, &ours, &dfs, expected.as_ref());
            eprintln!("   EGSM: {} queries", side.rows.len());
            Some(side)
        }
        _ => None,
    };
    (suite, side)
}

/// One `gpsense match` run; its problems go to `failures`, prefixed with the engine.
fn run_match(
    ctx: &Ctx,
    spec: &MatchSpec,
    engine: &str,
    failures: &mut Vec<String>,
) -> (Vec<parse::MatchLine>, Timing) {
    let mut cmd = ctx.gpsense("match", engine);
    cmd.args(spec.args());
    let run = match exec::run(&mut cmd, ctx.silence()) {
        Ok(run) => run,
        Err(e) => {
            failures.push(format!("{engine}: {e:#}"));
            return (Vec::new(), Timing::default());
        }
    };
    // A count that differs from --expected makes gpsense exit 1: listed here and as a mismatch.
    failures.extend(run.failure().map(|why| format!("{engine}: {why}")));
    let (lines, errors) = parse::match_output(&run.stdout);
    failures.extend(errors.into_iter().map(|e| format!("{engine}: {e}")));
    let query_ms = lines.iter().map(|l| l.ms).sum();
    (
        lines,
        Timing {
            wall: run.wall,
            query_ms,
        },
    )
}

/// One `gpsense query` answer, when the run succeeded.
struct QueryRun {
    answer: Answer,
    ms: Option<f64>,
    timed_out: bool,
}

fn common_sense_suite(ctx: &Ctx) -> Suite {
    step(&format!(
        "common-sense queries: {} then dfs, one process each",
        ctx.engine
    ));
    let example = ctx.gpsense("query", &ctx.engine);
    let mut suite = Suite {
        name: "common-sense, ConceptNet-100K (a process per query)".into(),
        command: format!(
            "{} --semantics iso|hom [--count] QUERY",
            command_line(&example)
        ),
        queries: QUERIES.len(),
        ..Suite::default()
    };
    for q in QUERIES {
        let ours = run_query(ctx, q, &ctx.engine, &mut suite.engine, &mut suite.failures);
        let dfs = run_query(ctx, q, "dfs", &mut suite.dfs, &mut suite.failures);
        let ok = match (&ours, &dfs) {
            (Some(a), Some(b)) if a.timed_out || b.timed_out => {
                suite.unverified.push(q.name.to_owned());
                false
            }
            (Some(a), Some(b)) => match compare::answers(&ctx.engine, &a.answer, &b.answer) {
                Some(detail) => {
                    let query = q.name.to_owned();
                    suite.mismatches.push(compare::Mismatch { query, detail });
                    false
                }
                None => true,
            },
            _ => false,
        };
        suite.listed.push(Listed {
            query: format!("{} ({}) `{}`", q.name, q.semantics, q.text),
            answer: dfs.as_ref().map_or("-".into(), |r| r.answer.size()),
            engine_ms: ours.and_then(|r| r.ms),
            dfs_ms: dfs.and_then(|r| r.ms),
            ok,
        });
    }
    progress(&suite);
    suite
}

fn query_args(q: &CommonSense) -> Vec<&'static str> {
    let mut a = vec!["--semantics", q.semantics];
    if q.count {
        a.push("--count");
    }
    a.push(q.text);
    a
}

/// One `gpsense query` run, its time added to `timing` and its problems to `failures`.
fn run_query(
    ctx: &Ctx,
    q: &CommonSense,
    engine: &str,
    timing: &mut Timing,
    failures: &mut Vec<String>,
) -> Option<QueryRun> {
    let mut cmd = ctx.gpsense("query", engine);
    cmd.args(query_args(q));
    let fail = |why: String| format!("{} on {engine}: {why}", q.name);
    let run = match exec::run(&mut cmd, ctx.silence()) {
        Ok(run) => run,
        Err(e) => {
            failures.push(fail(format!("{e:#}")));
            return None;
        }
    };
    timing.wall += run.wall;
    if let Some(why) = run.failure() {
        failures.push(fail(why));
        return None;
    }
    let Some(answer) = Answer::parse(&run.stdout, q.count) else {
        failures.push(fail(format!("not a count: {:?}", run.stdout.trim())));
        return None;
    };
    let summary = parse::query_summary(&run.stderr);
    timing.query_ms += summary.as_ref().map_or(0.0, |s| s.ms);
    Some(QueryRun {
        answer,
        ms: summary.as_ref().map(|s| s.ms),
        timed_out: summary.is_some_and(|s| s.timed_out),
    })
}

/// memcheck and racecheck on a few HPRD and common-sense queries, when the engine is the GPU and
/// compute-sanitizer can be found.
fn sanitizers(ctx: &Ctx) -> Sanitizers {
    if ctx.engine != "gpu" {
        return Sanitizers::NotRun(format!("only with --engine gpu, not {}", ctx.engine));
    }
    let Some(tool) = find_sanitizer() else {
        return Sanitizers::NotRun(
            "compute-sanitizer not present (not on PATH, nor in /usr/local/cuda/bin)".into(),
        );
    };
    let hprd = sanitized_hprd(ctx);
    let mut runs = Vec::new();
    for name in ["memcheck", "racecheck"] {
        step(&format!("compute-sanitizer --tool {name}"));
        match &hprd {
            Ok((target, args)) => runs.push(sanitize(ctx, &tool, name, target, args.clone())),
            Err(e) => runs.push(SanitizerRun {
                tool: name.into(),
                target: "HPRD".into(),
                passed: false,
                summary: format!("{e:#}"),
            }),
        }
        for q in &QUERIES[..SANITIZED_COMMON_SENSE] {
            let mut args = ctx.args("query", "gpu");
            args.extend(query_args(q).into_iter().map(OsString::from));
            runs.push(sanitize(ctx, &tool, name, q.name, args));
        }
        // TruST's kernels, `trust_extend`'s warps sharing their staging slots among them; the
        // wide beam's levels merge their children's runs (`trust_merge`) before placing them.
        for (target, beam) in [("TruST", None), ("TruST, beam 1024", Some("1024"))] {
            let mut args = ctx.args("trust", "gpu");
            if let Some(beam) = beam {
                args.extend(["--beam".into(), beam.into()]);
            }
            args.push(SANITIZED_TRUST.into());
            runs.push(sanitize(ctx, &tool, name, target, args));
        }
    }
    // synccheck: `trust_extend` is the one kernel with a warp barrier (`bar.warp.sync`).
    step("compute-sanitizer --tool synccheck");
    let mut args = ctx.args("trust", "gpu");
    args.push(SANITIZED_TRUST.into());
    runs.push(sanitize(ctx, &tool, "synccheck", "TruST", args));
    Sanitizers::Ran(runs)
}

/// The TruST search the sanitizers run, on the embedded ConceptNet-100K.
const SANITIZED_TRUST: &str =
    r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#;

/// The arguments of `gpsense match` over the first HPRD queries, with the published counts.
fn sanitized_hprd(ctx: &Ctx) -> Result<(String, Vec<OsString>)> {
    let hprd = ctx.suite_dir("hprd-study");
    let dir = hprd.join("query_graph");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "graph"))
        .collect();
    files.sort();
    files.truncate(SANITIZED_HPRD);
    ensure!(!files.is_empty(), "no query in {}", dir.display());
    let spec = MatchSpec {
        name: String::new(),
        data: hprd.join("data_graph/HPRD.graph"),
        queries: files,
        expected: Some(hprd.join("expected_output.res")),
        max_expected: None,
        semantics: "iso",
        egsm: None,
    };
    let mut args = ctx.args("match", "gpu");
    args.extend(spec.args());
    Ok((format!("HPRD, {} queries", spec.queries.len()), args))
}

fn sanitize(ctx: &Ctx, tool: &Path, name: &str, target: &str, args: Vec<OsString>) -> SanitizerRun {
    let mut cmd = Command::new(tool);
    cmd.args(["--tool", name, "--error-exitcode", "1"])
        .arg(&ctx.bin)
        .args(args);
    let (passed, summary) = match exec::run(&mut cmd, SANITIZER_SILENCE.max(ctx.silence())) {
        Err(e) => (false, format!("{e:#}")),
        Ok(run) => {
            let s = parse::sanitizer_summary(&format!("{}\n{}", run.stdout, run.stderr));
            let mut text = if s.lines.is_empty() {
                "no summary printed".to_owned()
            } else {
                s.lines.join("; ")
            };
            if let Some(why) = run.failure() {
                text.push_str(&format!("; {why}"));
            }
            (run.success() && s.errors == Some(0), text)
        }
    };
    SanitizerRun {
        tool: name.into(),
        target: target.into(),
        passed,
        summary,
    }
}

fn find_sanitizer() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|dir| dir.join("compute-sanitizer"))
        .find(|p| p.is_file())
}

/// nvidia-smi's list of GPUs (name, driver, memory), or why there is none.
fn gpus() -> String {
    let out = Command::new("nvidia-smi")
        .args([
            "--query-gpu=name,driver_version,memory.total",
            "--format=csv",
        ])
        .output();
    match out {
        Err(_) => "no GPU (nvidia-smi not found)".into(),
        Ok(o) if !o.status.success() => format!(
            "no GPU (nvidia-smi: {}: {})",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Ok(o) => {
            let rows = parse::gpu_rows(&String::from_utf8_lossy(&o.stdout));
            if rows.is_empty() {
                "no GPU (nvidia-smi lists none)".into()
            } else {
                rows.join("; ")
            }
        }
    }
}

fn host() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{} {}, {cores} CPU threads",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Path, `gpsense --version`, SHA-256 (to tell a carried binary from another) and its origin.
fn describe_binary(bin: &Path, given: bool) -> String {
    let version = Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("version unknown".into(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_owned()
        });
    let digest = fs::read(bin).map_or("unreadable".into(), |bytes| {
        let hash = Sha256::digest(&bytes);
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    });
    let origin = if given {
        "given with --bin"
    } else {
        "built here with the PTX embedded"
    };
    format!("`{}` ({version}, {origin}; sha256 {digest})", bin.display())
}

fn write_report(out: &Path, text: &str) -> Result<()> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))
}

/// The script of a bundle: the check from the bundle's own files, options passed on; EGSM built
/// first and run beside gpsense when the bundle has it.
const RUN_SH: &str = r#"#!/bin/sh
# The gpsense GPU check (`cargo xtask gpu-check --bundle`): needs no Rust toolchain and no network.
# Options are passed on, e.g. --quick, --timeout-ms 120000, or --engine emulated without a GPU;
# with EGSM in the bundle (egsm/), also --egsm-only and --egsm-queries N.
# The report is report.md here (EGSM's side by side: egsm.md, egsm.csv); the exit status is 0 only
# when every gpsense answer agrees.
cd "$(dirname "$0")" || exit 1
if [ -d egsm ]; then
  # Built once (minutes; reused after); a failed build is said in the report.
  echo "== gpu-check: building EGSM (log: egsm/build.log)" >&2
  egsm/build.sh > egsm/build.log 2>&1 || echo "== gpu-check: EGSM did not build; see egsm/build.log" >&2
  exec ./xtask gpu-check --bin ./gpsense --datasets ./datasets --out ./report.md \
    --egsm ./egsm/build/EGSM --egsm-inputs ./egsm/inputs "$@"
fi
exec ./xtask gpu-check --bin ./gpsense --datasets ./datasets --out ./report.md "$@"
"#;

/// Writes DIR: the gpsense binary, this xtask binary, the two benchmark suites and run.sh, and
/// EGSM's part (`egsm/`) when its source is given.
fn bundle(dir: &Path, bin: &Path, datasets: &Path, egsm_source: Option<&Path>) -> Result<()> {
    step(&format!("bundle for a GPU machine: {}", dir.display()));
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    copy(bin, &dir.join("gpsense"))?;
    let me = std::env::current_exe().context("cannot find the xtask binary")?;
    copy(&me, &dir.join("xtask"))?;
    // A device loan carries at most 64 MiB with the working tree: the binaries' symbols and
    // debug information (about 270 MB of the two) stay here.
    for name in ["gpsense", "xtask"] {
        strip(&dir.join(name));
    }
    // Written anew: a `datasets` left there as a link to the workspace's own would have each file
    // copied onto itself, which empties it.
    let bundled = dir.join("datasets");
    remove_any(&bundled)?;
    for suite in ["hprd-study", "yeast"] {
        let from = datasets.join("subgraph-matching").join(suite);
        copy_dir(&from, &bundled.join("subgraph-matching").join(suite))?;
    }
    write_script(&dir.join("run.sh"), RUN_SH)?;
    // A bundle written before with EGSM must not keep a stale copy.
    let egsm_dir = dir.join("egsm");
    if egsm_dir.exists() {
        fs::remove_dir_all(&egsm_dir)
            .with_context(|| format!("cannot remove {}", egsm_dir.display()))?;
    }
    match egsm_source {
        Some(source) => bundle_egsm(&egsm_dir, source, datasets)?,
        None => eprintln!(
            "gpu-check: no EGSM in the bundle (to add it: --egsm-source PATH or GPSENSE_EGSM_SOURCE, \
             a clone of github.com/RapidsAtHKUST/EGSM)"
        ),
    }
    eprintln!(
        "gpu-check: carry {} ({:.1} MiB) to the GPU machine and run its run.sh there (add --quick \
         for a short run); it writes report.md beside it",
        dir.display(),
        dir_bytes(dir)? as f64 / (1 << 20) as f64
    );
    println!("{}", dir.display());
    Ok(())
}

/// `egsm/`: EGSM's source as a tarball with its licence, `build.sh`, and the suites in its format.
fn bundle_egsm(dir: &Path, source: &Path, datasets: &Path) -> Result<()> {
    step("EGSM: its source, its build script, the suites in its format");
    let origin = egsm::pack_source(source, dir)?;
    eprintln!("   source: {origin}");
    write_script(&dir.join("build.sh"), egsm::BUILD_SH)?;
    for line in egsm::convert_inputs(datasets, &dir.join("inputs"))? {
        eprintln!("   {line}");
    }
    Ok(())
}

/// Strips `path`'s symbols and debug information with binutils' `strip`, when there is one (a
/// bundle without is larger, and says so).
fn strip(path: &Path) {
    match Command::new("strip").arg(path).status() {
        Ok(s) if s.success() => {}
        other => eprintln!(
            "gpu-check: {} keeps its symbols (strip: {other:?}); the bundle is larger",
            path.display()
        ),
    }
}

/// The bytes of the files under `dir` (links not followed).
fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

fn write_script(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// Removes a file, a link (not what it points to) or a directory tree; nothing there is fine.
fn remove_any(path: &Path) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.with_context(|| format!("cannot remove {}", path.display()))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    if let (Ok(a), Ok(b)) = (fs::canonicalize(from), fs::canonicalize(to)) {
        if a == b {
            bail!("will not copy {} onto itself", from.display());
        }
    }
    fs::copy(from, to)
        .map(drop)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))? {
        let path = entry?.path();
        let dest = to.join(
            path.file_name()
                .context("a directory entry without a name")?,
        );
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            copy(&path, &dest)?;
        }
    }
    Ok(())
}

/// The command as one line to paste into a shell (arguments with spaces or quotes single-quoted).
fn command_line(cmd: &Command) -> String {
    let mut words = vec![cmd.get_program().to_string_lossy().into_owned()];
    words.extend(cmd.get_args().map(|a| shell_word(&a.to_string_lossy())));
    words.join(" ")
}

fn shell_word(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c));
    if plain && !word.is_empty() {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn step(msg: &str) {
    eprintln!("== gpu-check: {msg}");
}

fn progress(s: &Suite) {
    eprintln!(
        "   {} queries, {} mismatches, {} unverified, {} failed commands; wall {:.2} s / dfs {:.2} s",
        s.queries,
        s.mismatches.len(),
        s.unverified.len(),
        s.failures.len(),
        s.engine.wall.as_secs_f64(),
        s.dfs.wall.as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let mut cmd = Command::new("gpsense");
        cmd.args(["query", "--count", "SELECT ?x WHERE { ?x IsA \"it's\" }"]);
        assert_eq!(
            command_line(&cmd),
            r#"gpsense query --count 'SELECT ?x WHERE { ?x IsA "it'\''s" }'"#
        );
    }

    #[test]
    fn match_arguments_carry_expected_counts_and_their_bound() {
        let spec = MatchSpec {
            name: "yeast".into(),
            data: "y.graph".into(),
            queries: vec!["q".into()],
            expected: Some("ans.txt".into()),
            max_expected: Some(100_000),
            semantics: "iso",
            egsm: None,
        };
        let args: Vec<String> = spec
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "--semantics iso --data y.graph --query q --expected ans.txt --max-expected 100000"
        );
    }
}
