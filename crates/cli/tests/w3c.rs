//! The W3C SPARQL query evaluation tests (`crates/sparql/tests/w3c/`) through the front ends, as a
//! client meets them: `gpsense query` as a child process (its TSV rows read back into terms by the
//! name convention, ASK as yes/no, CONSTRUCT and DESCRIBE as N-Triples), and `gpsense serve`, one
//! per data file, each query POSTed (SPARQL JSON results, N-Triples graphs). The harness, the
//! comparison rules and the table are the library run's (`crates/sparql/tests/w3c.rs`); each front
//! end is held to its own record (`expected-cli.txt`, `expected-endpoint.txt`): no wrong answer,
//! and no fewer passes. The library runs too, and every test whose verdict differs from its
//! verdict there is listed with both answers. `cargo xtask w3c --via cli|endpoint` runs them.

// The harness of the library's run; this file uses part of it.
mod w3c_front;
#[allow(dead_code)]
#[path = "../../sparql/tests/w3c_support/mod.rs"]
mod w3c_support;

use std::fmt::Write;
use std::sync::Arc;

use w3c_front::{cli, endpoint, Snapshots};
use w3c_support::manifest::{manifests, read_folder, Test};
use w3c_support::report::{differences, only, run, settle, suite_root, verdict_text, Run};
use w3c_support::results::show;
use w3c_support::run::{gpsense, one_line, watched, Evaluate, NoAnswer};

/// How many rows or triples of each answer a differing test shows.
const SHOWN: usize = 6;

#[test]
#[ignore = "the suite through `gpsense query`, a process per test: cargo xtask w3c --via cli"]
fn w3c_via_cli() {
    let snapshots = Arc::new(Snapshots::new().unwrap_or_else(|e| panic!("{e:#}")));
    front_end(
        "cli",
        "through `gpsense query` (crates/cli/tests/w3c.rs)",
        cli(snapshots),
    );
}

#[test]
#[ignore = "the suite through `gpsense serve`, a server per data file: cargo xtask w3c --via endpoint"]
fn w3c_via_endpoint() {
    let snapshots = Arc::new(Snapshots::new().unwrap_or_else(|e| panic!("{e:#}")));
    let about = "through `gpsense serve` (crates/cli/tests/w3c.rs)";
    front_end("endpoint", about, endpoint(snapshots));
}

/// Runs the suite through one front end, lists where it and the library disagree, and holds the
/// run to the front end's record.
fn front_end(mode: &str, about: &str, evaluate: Evaluate) {
    let root = suite_root();
    let only = only();
    let ran = run(&root, evaluate.clone(), only.as_deref()).unwrap_or_else(|e| panic!("{e:#}"));
    print!("{}", ran.table(&format!("gpsense {about}")));
    let library =
        run(&root, Arc::new(gpsense), only.as_deref()).unwrap_or_else(|e| panic!("{e:#}"));
    print!("{}", disagreements(mode, &ran, &library, &evaluate));
    settle(&ran, &root.join(format!("expected-{mode}.txt")), about);
}

/// Every test whose verdict differs between the library and `mode`, with the query and both
/// answers (each test evaluated once more).
fn disagreements(mode: &str, ran: &Run, library: &Run, evaluate: &Evaluate) -> String {
    let differing = differences(library, ran);
    let mut out = format!(
        "\nVerdicts that differ between the library and the {mode}: {}\n",
        differing.len()
    );
    if differing.is_empty() {
        return out;
    }
    let root = suite_root();
    let tests = all_tests();
    let library_evaluate: Evaluate = Arc::new(gpsense);
    for (lib, front) in differing {
        let _ = writeln!(out, "\n  {}", lib.name);
        let _ = writeln!(out, "    library: {}", verdict_text(&lib.verdict));
        let _ = writeln!(out, "    {mode}: {}", verdict_text(&front.verdict));
        let Some(test) = tests.iter().find(|t| t.name == lib.name) else {
            continue;
        };
        let query = std::fs::read_to_string(&test.query.path).unwrap_or_default();
        let _ = writeln!(
            out,
            "    query ({}):\n{}",
            one_line(&test.query.path.display().to_string(), &root),
            indent(query.trim_end(), 6)
        );
        for (who, evaluate) in [("library", &library_evaluate), (mode, evaluate)] {
            let _ = writeln!(
                out,
                "    {who}'s answer:\n{}",
                indent(&answer(test, evaluate), 6)
            );
        }
    }
    out
}

/// Every test of the suite, to look one up by name.
fn all_tests() -> Vec<Test> {
    let root = suite_root();
    let manifests = manifests(&root).unwrap_or_else(|e| panic!("{e:#}"));
    manifests
        .iter()
        .flat_map(|m| {
            read_folder(&root, m)
                .unwrap_or_else(|e| panic!("{e:#}"))
                .tests
        })
        .collect()
}

fn answer(test: &Test, evaluate: &Evaluate) -> String {
    match watched(test, evaluate) {
        Ok(Ok(Ok(outcome))) => show(&outcome, SHOWN),
        Ok(Ok(Err(NoAnswer::Refused(why)))) => format!("refused: {why}"),
        Ok(Ok(Err(NoAnswer::Malformed(why)))) => format!("not an answer: {why}"),
        Ok(Err(why)) => why,
        Err(e) => format!("{e:#}"),
    }
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|line| format!("{pad}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
