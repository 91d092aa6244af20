//! `cargo xtask w3c`: the W3C SPARQL query evaluation tests (`crates/sparql/tests/w3c.rs`) with
//! their table shown: pass / wrong / refused per folder, the totals, and every test not passing.
//! The test fails on a wrong answer or when fewer tests pass than `tests/w3c/expected.txt`
//! records; `--record` rewrites that file from this run, `--reference` runs Oxigraph's evaluator
//! through the same harness instead (the check of the harness itself).

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};
use clap::Args;

#[derive(Args)]
pub struct W3cArgs {
    /// Rewrite crates/sparql/tests/w3c/expected.txt (the pass count and the tests not passing)
    /// from this run (GPSENSE_W3C_RECORD=1 does the same).
    #[arg(long, conflicts_with = "reference")]
    record: bool,
    /// Run Oxigraph's evaluator through the harness instead of gpsense's.
    #[arg(long)]
    reference: bool,
}

pub fn run(root: &Path, args: &W3cArgs) -> Result<()> {
    let test = if args.reference {
        "w3c_reference_evaluator"
    } else {
        "w3c_query_evaluation"
    };
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root)
        .args(["test", "-p", "gpsense-sparql", "--test", "w3c", "--", test])
        .args(["--exact", "--nocapture", "--include-ignored"]);
    if args.record {
        cmd.env("GPSENSE_W3C_RECORD", "1");
    }
    let status = cmd.status().context("cannot run cargo")?;
    ensure!(
        status.success(),
        "the W3C tests failed (the table above says why)"
    );
    Ok(())
}
