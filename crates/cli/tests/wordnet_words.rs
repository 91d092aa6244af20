//! Querying the real WordNet 3.0 by word. A synset is a node named `lemma/id`; with the lemma table
//! every lemma of every synset names it too, so `dog` (seven noun senses and a verb) matches any of
//! its synsets. Before, only `dog/02084071-n` was a name and `{ dog hypernym ?x }` was "unknown
//! concept" with no suggestion.

mod common;

use common::{dataset, fails, ok};

fn part(name: &str) -> String {
    dataset(&format!("wordnet30/wn30_synset.{name}.tsv.gz"))
}

/// Sorted output rows without the header.
fn rows(out: &str) -> Vec<&str> {
    let mut rows: Vec<&str> = out.lines().skip(1).collect();
    rows.sort_unstable();
    rows
}

/// One ingest for every check: a debug build takes seconds over WordNet.
#[test]
fn words_denote_all_their_senses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let graph = dir.path().join("wn.gps").display().to_string();
    // The node table may come after the lemma table: node tables are read first.
    let (_, summary) = ok(&[
        "ingest",
        &part("lemmas"),
        &part("nodes"),
        &part("edges"),
        "-o",
        &graph,
    ]);
    assert!(summary.contains("206,978 names"), "{summary}");
    let (info, _) = ok(&["info", &graph]);
    assert!(
        info.contains("aliases       148,730 names of nodes (26,433 denote several"),
        "{info}"
    );

    let query = |args: &[&str]| ok(&[&["query", "--graph", &graph][..], args].concat());
    let (dog, _) = query(&["SELECT ?x WHERE { dog hypernym ?x }"]);
    let dog = rows(&dog);
    // Hypernyms of the domestic dog, of the frank (hot dog), of the villain, of the verb "to dog".
    for hypernym in [
        "canine/02083346-n",
        "domestic_animal/01317541-n",
        "sausage/07675627-n",
        "villain/10753546-n",
        "pursue/02000886-v",
    ] {
        assert!(dog.contains(&hypernym), "{hypernym} missing: {dog:?}");
    }
    assert_eq!(dog.len(), 9, "{dog:?}");

    // Every engine answers a concept set alike.
    for engine in ["kernels", "emulated"] {
        let (out, _) = query(&["--engine", engine, "SELECT ?x WHERE { dog hypernym ?x }"]);
        assert_eq!(rows(&out), dog, "{engine}");
    }

    // `--explain` says how many nodes the word denotes.
    let (_, explain) = query(&["--explain", "SELECT ?x WHERE { dog hypernym ?x }"]);
    assert!(
        explain.contains("dog (concept, one of 8 data nodes: "),
        "{explain}"
    );
    assert!(
        explain.contains("start: concept, 8 candidates"),
        "{explain}"
    );

    // Standard SPARQL reaches WordNet too: a literal for the word, a dump IRI for the relation.
    let (standard, _) = query(&[
        "--semantics",
        "iso",
        "PREFIX r: <gpsense:r/> SELECT ?x WHERE { \"dog\" r:hypernym ?x }",
    ]);
    assert_eq!(rows(&standard), dog);

    // A synset's full name still denotes that synset alone.
    let (one, _) = query(&["SELECT ?x WHERE { dog/02084071-n hypernym ?x }"]);
    assert_eq!(
        rows(&one),
        ["canine/02083346-n", "domestic_animal/01317541-n"]
    );

    // Multi-word lemmas: with a space, or with WordNet's underscore.
    let (spaced, _) = query(&["SELECT ?x WHERE { \"hot dog\" hypernym ?x }"]);
    let (underscored, _) = query(&["SELECT ?x WHERE { hot_dog hypernym ?x }"]);
    assert_eq!(rows(&spaced), rows(&underscored));
    assert!(rows(&spaced).contains(&"sausage/07675627-n"), "{spaced}");

    // Two words meet where their senses do.
    let (both, _) = query(&["SELECT ?x WHERE { dog hypernym ?x . wolf hypernym ?x }"]);
    assert_eq!(rows(&both), ["canine/02083346-n"]);
    // `dog` and `hot dog` share one sense, the frank: under hom both may take it, under iso
    // (injective, concepts included) they must take different senses, which share no hypernym.
    let shared = "SELECT ?x WHERE { dog hypernym ?x . \"hot dog\" hypernym ?x }";
    let (hom, _) = query(&["--semantics", "hom", shared]);
    assert_eq!(rows(&hom), ["sausage/07675627-n"]);
    let (iso, _) = query(&["--semantics", "iso", shared]);
    assert!(rows(&iso).is_empty(), "{iso}");

    // A misspelt word: the swap of two letters is one edit, so `dog` is suggested.
    let err = fails(&[
        "query",
        "--graph",
        &graph,
        "SELECT ?x WHERE { dgo hypernym ?x }",
    ]);
    assert!(err.contains("unknown concept \"dgo\""), "{err}");
    assert!(err.contains("\"dog\""), "{err}");
}

/// A lemma table without the node table names no synset: a clear error, not an empty graph.
#[test]
fn lemmas_need_their_node_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let graph = dir.path().join("wn.gps").display().to_string();
    let err = fails(&["ingest", &part("lemmas"), &part("edges"), "-o", &graph]);
    assert!(err.contains("unknown synset"), "{err}");
    assert!(err.contains("node table"), "{err}");
    assert!(!std::path::Path::new(&graph).exists());
}
