//! Bounds of the full evaluator: a path over a cycle ends, a path or a GROUP BY past the time
//! limit stops with a time-out, and one past the memory budget with the sizes.

use std::time::{Duration, Instant};

use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions};
use gpsense_graph::KnowledgeGraph;
use gpsense_runtime::{Engine, MatchOptions};
use gpsense_sparql::{Answer, Options, Sparql, SparqlError};

/// `n` nodes in a cycle, `:p` from each to the next, plus `:q` to a tenth of them.
fn cycle(n: usize) -> KnowledgeGraph {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "<http://x/{i}> <http://x/p> <http://x/{}> .\n",
            (i + 1) % n
        ));
        text.push_str(&format!(
            "<http://x/{i}> <http://x/q> <http://x/{}> .\n",
            i % 10
        ));
    }
    ingest_bytes(text.as_bytes(), Format::NTriples, &IngestOptions::default())
        .expect("ingest")
        .0
}

fn count(graph: &KnowledgeGraph, text: &str, matching: MatchOptions) -> Result<usize, SparqlError> {
    let engine = Engine::new(graph);
    let sparql = Sparql::new(&engine);
    let options = Options {
        matching,
        ..Options::default()
    };
    let evaluation = sparql.evaluate(text, &options)?;
    let n = match evaluation.answer {
        Answer::Solutions { mut rows, .. } => rows.try_fold(0, |n, r| r.map(|_| n + 1)),
        _ => panic!("a SELECT"),
    };
    n
}

#[test]
fn a_path_over_a_cycle_ends() {
    let g = cycle(100);
    let n = count(
        &g,
        "SELECT * { ?x <http://x/p>+ ?y }",
        MatchOptions::default(),
    );
    assert_eq!(n.expect("answers"), 100 * 100);
    let n = count(
        &g,
        "SELECT * { <http://x/0> <http://x/p>* ?y }",
        MatchOptions::default(),
    );
    assert_eq!(n.expect("answers"), 100);
}

#[test]
fn paths_and_groups_stop_at_the_time_limit() {
    let g = cycle(3000);
    for text in [
        "SELECT * { ?x <http://x/p>* ?y }",
        "SELECT ?x (COUNT(?y) AS ?n) { ?x <http://x/p>+ ?y } GROUP BY ?x",
        "SELECT * { ?x <http://x/p>+ ?y } ORDER BY ?y",
    ] {
        let start = Instant::now();
        let limited = MatchOptions {
            timeout: Some(Duration::from_millis(200)),
            ..MatchOptions::default()
        };
        let e = count(&g, text, limited).expect_err("9 million rows do not fit in 200 ms");
        assert!(matches!(e, SparqlError::TimedOut), "{text}: {e}");
        // Generous: only "it stopped", never a timing claim.
        assert!(start.elapsed() < Duration::from_secs(30), "{text}");
    }
}

#[test]
fn what_spareval_holds_is_bounded_by_the_memory_budget() {
    let g = cycle(3000);
    let small = MatchOptions {
        memory_budget: 32 << 20,
        ..MatchOptions::default()
    };
    let e = count(&g, "SELECT * { ?x <http://x/p>+ ?y } ORDER BY ?y", small)
        .expect_err("9 million sorted rows hold more than 32 MiB");
    assert!(matches!(e, SparqlError::Memory(_)), "{e}");
    assert!(
        e.to_string().contains("memory budget of 33554432 bytes"),
        "{e}"
    );
}
