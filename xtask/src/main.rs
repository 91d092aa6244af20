//! Workspace tasks: `cargo xtask <command>` (the alias is in `.cargo/config.toml`).
//!
//! This file only parses arguments and dispatches; each command's logic lives in its own module, so
//! that a new command (`ptx`, `bench`, ...) is one [`Command`] variant, one arm in [`run`] and one
//! module.

mod bench;
mod book;
mod calibrate;
mod fetch;
mod gpu_check;
mod ptx;
mod senticnet;
mod w3c;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Tasks for the gpsense workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Download (and convert) a dataset into datasets/fetched/, which git ignores.
    Fetch(FetchArgs),
    /// List the datasets `fetch` knows, their sizes and licences, and which are fetched.
    List(ListArgs),
    /// Build the kernels to PTX (target/ptx/gpsense_kernels.<arch>.ptx), check them with ptxas and
    /// print registers and memory per kernel.
    Ptx(PtxArgs),
    /// Benchmark gpsense against peer engines (the exact matchers DAF, VEQ, GuP and RapidMatch built
    /// from source; igraph, networkx, rustworkx, petgraph, oxigraph, kuzu) on the shipped datasets:
    /// target/bench/report.md, CSVs and figures.
    Bench(bench::BenchArgs),
    /// Validate the GPU engine on a machine with an NVIDIA GPU (about ten minutes, no network):
    /// every HPRD, yeast and common-sense answer held to dfs's and the published counts,
    /// compute-sanitizer where present, timings; target/gpu-check/report.md.
    GpuCheck(gpu_check::GpuCheckArgs),
    /// Run the W3C SPARQL 1.0/1.1 query evaluation tests (crates/sparql/tests/w3c) through the
    /// library, `gpsense query` or `gpsense serve` (--via): pass / wrong / refused per folder;
    /// fails on a wrong answer or fewer passes than recorded.
    W3c(w3c::W3cArgs),
    /// Build the documentation book (docs/, mdBook) and check every relative link and anchor of
    /// it and of README.md; --commands runs their shell commands instead, --figures redraws the
    /// figures drawn from committed measurements.
    Book(book::BookArgs),
    /// Refit `--engine auto`'s constants to per-query times of `gpsense match` on a device and on
    /// dfs (one query at a time each), and write the file GPSENSE_DEVICE_COSTS points at.
    Calibrate(calibrate::CalibrateArgs),
}

#[derive(Args)]
struct PtxArgs {
    /// Architectures to build for (repeatable).
    #[arg(long = "arch", default_values_t = ptx::DEFAULT_ARCHS.iter().map(|s| s.to_string()))]
    archs: Vec<String>,
    /// Use rustup's nightly (with rust-src and llvm-bitcode-linker) instead of the Debian route.
    #[arg(long)]
    rustup: bool,
}

#[derive(Args)]
struct FetchArgs {
    /// The dataset (`cargo xtask list` describes them).
    #[arg(
        required_unless_present = "list",
        value_parser = PossibleValuesParser::new(fetch::names())
    )]
    name: Option<String>,
    /// Directory to fetch into [default: <workspace>/datasets/fetched].
    #[arg(long, value_name = "DIR")]
    dest: Option<PathBuf>,
    /// Fetch again even if the dataset is already there.
    #[arg(long)]
    force: bool,
    /// Expected SHA-256 (hex) of the download, for a dataset whose digest is not pinned in xtask.
    #[arg(long, value_name = "HEX")]
    sha256: Option<String>,
    /// Download from this URL instead (a mirror or a file:// copy); the SHA-256 check still
    /// applies.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// List the known datasets instead (same as `cargo xtask list`).
    #[arg(long, conflicts_with_all = ["name", "force", "sha256", "url"])]
    list: bool,
}

#[derive(Args)]
struct ListArgs {
    /// Directory to look for fetched datasets in [default: <workspace>/datasets/fetched].
    #[arg(long, value_name = "DIR")]
    dest: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` prints the whole context chain on one line, without a backtrace.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Fetch(args) => fetch_command(args),
        Command::Ptx(args) => ptx::run(
            &workspace_root(),
            &ptx::Options {
                archs: args.archs,
                rustup: args.rustup,
            },
        ),
        Command::Bench(args) => bench::run(&workspace_root(), &args),
        Command::GpuCheck(args) => gpu_check::run(&workspace_root(), &args),
        Command::W3c(args) => w3c::run(&workspace_root(), &args),
        Command::Book(args) => book::run(&workspace_root(), &args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::List(args) => {
            print!("{}", fetch::list(&dest_or_default(args.dest)));
            Ok(())
        }
    }
}

fn fetch_command(args: FetchArgs) -> Result<()> {
    let dest = dest_or_default(args.dest);
    let Some(name) = args.name.filter(|_| !args.list) else {
        print!("{}", fetch::list(&dest));
        return Ok(());
    };
    let options = fetch::Options {
        dest,
        force: args.force,
        sha256: args.sha256,
        url: args.url,
    };
    fetch::fetch(fetch::find(&name)?, &options)?;
    Ok(())
}

fn dest_or_default(dest: Option<PathBuf>) -> PathBuf {
    dest.unwrap_or_else(fetch::default_dest)
}

fn workspace_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}
