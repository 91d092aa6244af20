//! What a run says on stderr besides its answer: the summary line (one format for every engine and
//! for a run on timely dataflow, plurals following the numbers), `--explain`'s semantics said
//! once, error positions counted in the lines of the query file, and the hint an unknown word gets
//! on WordNet loaded without its lemma table.

mod common;

use common::{fails, ok, run_with};
use std::process::Stdio;

const CATS: &str = "SELECT ?x WHERE { cat IsA ?x }";

/// The summary line: `ANSWER in TIME [SEMANTICS semantics, ENGINE engine]`.
fn summary(err: &str) -> &str {
    err.lines()
        .find(|l| l.contains(" semantics, "))
        .unwrap_or_else(|| panic!("no summary: {err}"))
}

/// The part of a summary around its time: `1 row (limit reached: ...)` and `[... engine]`.
fn shape(line: &str) -> (String, String) {
    let (answer, rest) = line.split_once(" in ").expect("`in`");
    let bracket = rest.split_once(" [").map(|(_, b)| b).expect("`[`");
    (answer.to_owned(), bracket.to_owned())
}

#[test]
fn every_engine_and_the_dataflow_summarise_alike() {
    let limited = "SELECT ?x WHERE { cat IsA ?x } LIMIT 1";
    let (_, dfs) = ok(&["query", "--engine", "dfs", limited]);
    let (_, kernels) = ok(&["query", "--engine", "kernels", limited]);
    let (_, timely) = ok(&["query", "--workers", "1", limited]);
    let want = (
        "1 row (limit reached: more matches exist)".to_owned(),
        "iso semantics, dfs engine]".to_owned(),
    );
    assert_eq!(shape(summary(&dfs)), want, "{dfs}");
    assert_eq!(shape(summary(&kernels)).0, want.0, "{kernels}");
    assert_eq!(
        shape(summary(&timely)),
        (want.0, "iso semantics, timely dataflow engine]".to_owned()),
        "{timely}"
    );
    // What the cluster did, on its own line, in words that count right.
    assert!(
        timely.contains("cluster: 1 process x 1 worker; "),
        "{timely}"
    );
    let (_, counted) = ok(&["query", "--workers", "2", "--count", CATS]);
    assert!(
        summary(&counted).ends_with("[iso semantics, timely dataflow engine]"),
        "{counted}"
    );
    assert!(
        counted.contains("cluster: 1 process x 2 workers; "),
        "{counted}"
    );
    // The full SPARQL evaluator too.
    let optional = "PREFIX c: <gpsense:n/> PREFIX r: <gpsense:r/> \
                    SELECT ?x ?y WHERE { c:cat r:IsA ?x OPTIONAL { ?x r:IsA ?y } } LIMIT 1";
    let (_, full) = ok(&["query", optional]);
    let (answer, engine) = shape(summary(&full));
    assert_eq!(answer, "1 row", "{full}");
    assert!(
        engine.starts_with("hom semantics, full SPARQL evaluator"),
        "{full}"
    );
}

#[test]
fn explain_states_the_semantics_once_with_where_they_came_from() {
    let (_, err) = ok(&["query", "--explain", CATS]);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("semantics:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("semantics: iso (") && lines[0].ends_with("; the default"),
        "{err}"
    );
    let (_, err) = ok(&["query", "--explain", "--semantics", "hom", CATS]);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("semantics:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].ends_with("; from --semantics"), "{err}");
}

/// Every line number an error in a file of queries gives is a line of the file: the query's
/// start, the message's position and the quoted line's gutter (before, the last two counted from
/// the query's own first line).
#[test]
fn errors_in_a_query_file_count_the_files_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("q.rq");
    let text = "\n\n# two blank lines, then three queries\nSELECT ?x WHERE { cat IsA ?x }\n\n\
                SELECT ?x WHERE {\n  ?x IsA animal .\n  ?x AtLocation qqqqqqqqqqqq }\n\
                SELECT ?x WHERE { ?x IsAA animal }\n";
    std::fs::write(&file, text).expect("write");
    let file = file.display().to_string();
    let (code, _, err) = run_with(&[], &["query", "-q", "-f", &file], Stdio::null());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("error: query 2: line 8, column 17: unknown concept"),
        "{err}"
    );
    assert!(
        err.contains("\n8 |   ?x AtLocation qqqqqqqqqqqq }\n"),
        "{err}"
    );
    assert!(
        err.contains("error: query 3: line 9, column 22: unknown relation"),
        "{err}"
    );
    assert!(
        err.contains("\n9 | SELECT ?x WHERE { ?x IsAA animal }\n"),
        "{err}"
    );
    // A file holding one query, after blank lines: the same lines.
    let one = dir.path().join("one.rq");
    std::fs::write(&one, "\n\nSELECT ?x WHERE {\n ?x IsA qqqqqqqqqqqq }\n").expect("write");
    let err = fails(&["query", "-f", &one.display().to_string()]);
    assert!(
        err.contains("error: line 4, column 9: unknown concept"),
        "{err}"
    );
    assert!(err.contains("\n4 |  ?x IsA qqqqqqqqqqqq }\n"), "{err}");
}

/// WordNet's node table alone names a synset `lemma/synset`: `dog` is unknown, and the error
/// names the synsets it could mean and how to name them by word.
#[test]
fn an_unknown_word_on_wordnet_without_lemmas_names_its_synsets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = dir.path().join("wn.nodes.tsv");
    std::fs::write(
        &nodes,
        "#synset\tss_type\tlexfile_num\tfirst_lemma\n02084071-n\tn\t5\tdog\n\
         02083346-n\tn\t5\tcanine\n10023039-n\tn\t18\tdog\n",
    )
    .expect("write");
    let edges = dir.path().join("wn.edges.tsv");
    std::fs::write(
        &edges,
        "#source_synset\trelation\ttarget_synset\n02084071-n\thypernym\t02083346-n\n",
    )
    .expect("write");
    let graph = dir.path().join("wn.gps").display().to_string();
    let (n, e) = (nodes.display().to_string(), edges.display().to_string());
    ok(&["ingest", &n, &e, "-o", &graph]);
    let err = fails(&[
        "query",
        "--graph",
        &graph,
        "SELECT ?x WHERE { dog hypernym ?x }",
    ]);
    assert!(
        err.contains(
            "unknown concept \"dog\"; did you mean \"dog/02084071-n\", \"dog/10023039-n\"?"
        ),
        "{err}"
    );
    assert!(
        err.contains("\nhint: this graph names WordNet synsets `lemma/synset`"),
        "{err}"
    );
    assert!(err.contains("wn30_synset.lemmas.tsv.gz"), "{err}");
    // The synset's own name answers.
    ok(&[
        "query",
        "--graph",
        &graph,
        "SELECT ?x WHERE { dog/02084071-n hypernym ?x }",
    ]);
}

/// Counts of one take the singular, in the ingest summary and in `--explain`'s plan.
#[test]
fn one_is_singular() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tsv = dir.path().join("one.tsv");
    std::fs::write(&tsv, "cat\tIsA\tanimal\n").expect("write");
    let graph = dir.path().join("one.gps").display().to_string();
    let (out, _) = ok(&["ingest", &tsv.display().to_string(), "-o", &graph]);
    assert!(out.contains(": 2 nodes, 1 edge, 1 relation; "), "{out}");
    let q = "SELECT ?x WHERE { cat IsA ?x . ?x IsA animal }";
    let (_, err) = ok(&["query", "--explain", "--engine", "dfs", q]);
    assert!(
        err.contains("query graph: 3 nodes (1 variable), 2 edges, 0 edge variables"),
        "{err}"
    );
    assert!(
        err.contains("?x: 1 edge to earlier nodes, covers 1 more edge, ~34 candidates"),
        "{err}"
    );
    assert!(
        err.contains("animal: concept, 1 candidate; 1 edge to earlier nodes"),
        "{err}"
    );
    for wrong in ["(s)", " 1 candidates", " 1 edges", " 1 variables"] {
        assert!(!err.contains(wrong), "{wrong}: {err}");
    }
}

/// A query from a file on timely dataflow: its error's lines are the file's too.
#[test]
fn a_dataflow_query_error_counts_the_files_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("q.rq");
    std::fs::write(&file, "\n\nSELECT ?x WHERE {\n ?x IsA qqqqqqqqqqqq }\n").expect("write");
    let err = fails(&["query", "--workers", "1", "-f", &file.display().to_string()]);
    assert!(
        err.contains("error: line 4, column 9: unknown concept"),
        "{err}"
    );
    assert!(err.contains("\n4 |  ?x IsA qqqqqqqqqqqq }\n"), "{err}");
}
