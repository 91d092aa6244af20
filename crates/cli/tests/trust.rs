//! `gpsense trust` as a user runs it: misspelt queries on the embedded graph, benchmark files, and
//! bad input.

mod common;

use std::process::Stdio;

use common::{dataset, fails, gpsense, ok, run_with};

#[test]
fn a_misspelt_query_is_answered_with_scores_and_reasons() {
    let (out, err) = ok(&[
        "trust",
        "--top",
        "3",
        "--explain",
        "SELECT ?x WHERE { ?x IsA animl . ?x AtLocation hom }",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "score\tx\taniml\thom");
    assert_eq!(lines.len(), 4, "{out}");
    let best: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(&best[2..], ["animal", "home"], "{out}");
    let score: f64 = best[0].parse().expect("score");
    assert!(score > 0.8 && score < 1.0, "{out}");
    assert!(err.contains("node animl"), "{err}");
    assert!(err.contains("-> animal"), "{err}");
    assert!(err.contains("edge ?x -IsA-> animl: present (IsA)"), "{err}");
    assert!(err.contains("3 matchings in"), "{err}");
}

#[test]
fn unknown_relations_are_noted_and_limit_caps_the_answer() {
    let (out, err) = ok(&[
        "trust",
        "--format",
        "json",
        "SELECT * WHERE { lemon Tastes sour } LIMIT 2",
    ]);
    assert!(err.contains("no relation \"Tastes\""), "{err}");
    assert_eq!(out.matches("\"score\"").count(), 2, "{out}");
}

#[test]
fn benchmark_templates_occurring_exactly_score_one() {
    let dir = dataset("subgraph-matching/hprd-study");
    let (out, _) = ok(&[
        "trust",
        "--data",
        &format!("{dir}/data_graph/HPRD.graph"),
        "--template",
        &format!("{dir}/query_graph/query_dense_16_1.graph"),
        "--top",
        "3",
    ]);
    let rows: Vec<&str> = out.lines().skip(1).collect();
    // expected_output.res: query_dense_16_1 has exactly 3 embeddings.
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows.iter().all(|r| r.starts_with("1.0000\t")), "{out}");
}

#[test]
fn bad_input_fails_cleanly() {
    for args in [
        &["trust", "--alpha", "2", "SELECT * WHERE { a IsA b }"][..],
        &["trust", "--top", "500", "SELECT * WHERE { a IsA b }"],
        &["trust", "SELECT * WHERE { a IsA "],
        &["trust"],
    ] {
        let out = gpsense(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// The score tables are refused before they are allocated when they would pass the budget.
#[test]
fn the_memory_budget_bounds_the_score_tables() {
    let err = common::fails(&[
        "trust",
        "--memory-budget",
        "1M",
        "SELECT * WHERE { cat IsA ?x . ?x AtLocation ?y }",
    ]);
    assert!(err.contains("the score tables need"), "{err}");
    assert!(err.contains("raise --memory-budget"), "{err}");
}

const CAKES: &str = r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#;

/// The README's first query: the matchings that match both concepts by name lead, and `bone`
/// (similarity 0 to "chocolate cakes", earned by its neighbourhood), once second, is not among the
/// first three; `--explain` gives each matching's count of concepts matched by name.
#[test]
fn concepts_matched_by_name_rank_first() {
    let (out, err) = ok(&["trust", "--engine", "cpu", "--top", "5", "--explain", CAKES]);
    let concept_column: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split('\t').nth(2).expect("column"))
        .collect();
    assert!(!concept_column[..3].contains(&"bone"), "{out}");
    let counts: Vec<usize> = err
        .lines()
        .filter_map(|l| {
            l.split(", ")
                .nth(1)?
                .strip_suffix(" of 2 concepts by name")?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(counts.len(), 5, "{err}");
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{err}");
}

/// `--engine emulated` launches the kernels (counted in --explain) and prints the CPU's rows;
/// `--engine gpu` without a GPU is an error naming why; `auto -v` says it runs on the CPU.
#[test]
fn the_engines_give_one_answer() {
    let (cpu, _) = ok(&["trust", "--engine", "cpu", "--top", "5", CAKES]);
    let no_check = [("GPSENSE_EMULATOR_CHECK", "0")];
    let args = [
        "trust",
        "--engine",
        "emulated",
        "--top",
        "5",
        "--explain",
        CAKES,
    ];
    let (code, emulated, err) = run_with(&no_check, &args, Stdio::piped());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(emulated, cpu);
    assert!(err.contains("device: host emulator"), "{err}");
    assert!(err.contains(" launches, "), "{err}");
    // The traversal's span: its rounds of a warp, fewer than the candidates a thread judges.
    let line = err
        .lines()
        .find(|l| l.starts_with("traversal: "))
        .expect(&err);
    let number = |before: &str| -> u64 {
        let head = &line[..line.find(before).expect(line)];
        head.rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect(line)
    };
    let (judged, rounds) = (number(" candidates judged"), number(" rounds of a warp"));
    assert!(0 < rounds && rounds < judged, "{line}");
    let (code, _, err) = run_with(&[], &["trust", "-v", "--top", "1", CAKES], Stdio::piped());
    if code == Some(0) && err.contains("TruST runs on the CPU") {
        let err = fails(&["trust", "--engine", "gpu", CAKES]);
        assert!(err.contains("--engine gpu: no GPU"), "{err}");
    }
}
