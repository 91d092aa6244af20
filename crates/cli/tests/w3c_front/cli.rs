//! `gpsense query --graph SNAPSHOT --format tsv TEXT`, a child process per test, its output read
//! back: TSV rows of terms by the name convention (`crates/graph/src/rdf.rs`), `yes`/`no` for
//! ASK (`no` exits with status 1), N-Triples for CONSTRUCT and DESCRIBE.

use std::sync::Arc;

use spargebra::Query;

use super::terms::{read_triples, read_tsv};
use super::{binary, finish, query_text, Finished, Snapshots, QUERY_LIMIT_MS};
use crate::w3c_support::manifest::Test;
use crate::w3c_support::results::Outcome;
use crate::w3c_support::run::{Evaluate, NoAnswer};

/// The evaluator that asks `gpsense query`.
pub fn cli(snapshots: Arc<Snapshots>) -> Evaluate {
    Arc::new(move |test| query(&snapshots, test))
}

fn query(snapshots: &Snapshots, test: &Test) -> Result<Outcome, NoAnswer> {
    let graph = snapshots.of(&test.data)?;
    let text = query_text(test)?;
    let mut cmd = std::process::Command::new(binary());
    cmd.args(["query", "--graph"]).arg(&graph).args([
        "--format",
        "tsv",
        "--timeout-ms",
        QUERY_LIMIT_MS,
        "--",
        &text,
    ]);
    read(&test.parsed, &finish(&mut cmd)?)
}

/// The answer in the output, or the refusal on standard error.
fn read(query: &Query, done: &Finished) -> Result<Outcome, NoAnswer> {
    const TIMED_OUT: i32 = 3;
    let ask = matches!(query, Query::Ask { .. });
    match done.status.code() {
        Some(0) => {}
        // `no` is a yes/no question's answer, status 1 or not.
        Some(1) if ask && done.stdout == "no\n" => {}
        Some(TIMED_OUT) => return Err(NoAnswer::Refused(format!("timed out: {}", done.error()))),
        _ => return Err(NoAnswer::Refused(done.error())),
    }
    let out = done.stdout.as_str();
    match query {
        Query::Ask { .. } => match out {
            "yes\n" => Ok(Outcome::Boolean(true)),
            "no\n" => Ok(Outcome::Boolean(false)),
            other => Err(format!("{other:?} after ASK, not yes or no")),
        },
        Query::Select { .. } => read_tsv(out).map(Outcome::Solutions),
        Query::Construct { .. } | Query::Describe { .. } => read_triples(out).map(Outcome::Graph),
    }
    .map_err(NoAnswer::Malformed)
}
