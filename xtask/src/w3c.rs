//! `cargo xtask w3c`: the W3C SPARQL query evaluation tests with their table shown: pass / wrong /
//! refused per folder, the totals, and every test not passing. `--via` picks the way in: the
//! library (`crates/sparql/tests/w3c.rs`, the default), `gpsense query` as a process per test or
//! `gpsense serve` (`crates/cli/tests/w3c.rs`; these also list every test whose verdict differs
//! from the library's, with both answers). A run fails on a wrong answer or when fewer tests pass
//! than its record (`crates/sparql/tests/w3c/expected.txt`, `expected-cli.txt`,
//! `expected-endpoint.txt`); `--record` rewrites the record from this run, `--reference` runs
//! Oxigraph's evaluator through the same harness instead (the check of the harness itself).

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};
use clap::{Args, ValueEnum};

#[derive(Args)]
pub struct W3cArgs {
    /// Rewrite the record of the chosen way in (crates/sparql/tests/w3c/expected*.txt: the pass
    /// count and the tests not passing) from this run (GPSENSE_W3C_RECORD=1 does the same).
    #[arg(long, conflicts_with_all = ["reference", "only"])]
    record: bool,
    /// Run Oxigraph's evaluator through the harness instead of gpsense's.
    #[arg(long, conflicts_with = "via")]
    reference: bool,
    /// The way in: the library's evaluator, `gpsense query` or `gpsense serve`.
    #[arg(long, value_enum, default_value = "library")]
    via: Via,
    /// Only the tests whose name holds this text (`expr-equals`, `agg04`); the run is then held
    /// to no record, only to giving no wrong answer.
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Via {
    Library,
    Cli,
    Endpoint,
}

pub fn run(root: &Path, args: &W3cArgs) -> Result<()> {
    let test = match (args.reference, args.via) {
        (true, _) => "w3c_reference_evaluator",
        (false, Via::Library) => "w3c_query_evaluation",
        (false, Via::Cli) => "w3c_via_cli",
        (false, Via::Endpoint) => "w3c_via_endpoint",
    };
    // `--workspace`, not `-p`: the features then resolve as for `cargo test --workspace`, so after
    // the tests nothing is rebuilt (`-p` rebuilt most of the tree, 2 min in CI). Both crates'
    // `w3c` binaries run; the exact test name selects one test in one of them.
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root)
        .args(["test", "--workspace", "--test", "w3c", "--", test])
        .args(["--exact", "--nocapture", "--include-ignored"]);
    if args.record {
        cmd.env("GPSENSE_W3C_RECORD", "1");
    }
    if let Some(only) = &args.only {
        cmd.env("GPSENSE_W3C_ONLY", only);
    }
    let status = cmd.status().context("cannot run cargo")?;
    ensure!(
        status.success(),
        "the W3C tests failed (the table above says why)"
    );
    Ok(())
}
