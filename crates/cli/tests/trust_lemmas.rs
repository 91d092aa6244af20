//! `gpsense trust` on the real WordNet 3.0: a synset is named `lemma/id`, and TruST must compare a
//! template name with every lemma of it (its aliases), not only with that name. Without them a
//! misspelt `dgo` resembled no name at all and the search ranked the root `entity` first.

mod common;

use common::{dataset, ok};

/// WordNet's synsets, lemmas and relations ingested into a snapshot under `dir`.
fn wordnet(dir: &std::path::Path) -> String {
    let out = dir.join("wn.gps").display().to_string();
    let part = |name: &str| dataset(&format!("wordnet30/wn30_synset.{name}.tsv.gz"));
    ok(&[
        "ingest",
        &part("nodes"),
        &part("lemmas"),
        &part("edges"),
        "-o",
        &out,
    ]);
    out
}

/// The best row of a query, as fields.
fn best(graph: &str, query: &str) -> (Vec<String>, String) {
    let (out, err) = ok(&["trust", "--graph", graph, "--top", "3", "--explain", query]);
    let row = out
        .lines()
        .nth(1)
        .unwrap_or_else(|| panic!("no row: {out}"));
    (row.split('\t').map(str::to_owned).collect(), err)
}

/// One test, one ingest: in a debug build the ingest and each name index take seconds.
#[test]
fn lemmas_find_their_synsets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let graph = wordnet(dir.path());

    // `dgo` is the lemma `dog` with one transposition; `canine` is a lemma exactly.
    let (row, err) = best(&graph, "SELECT * WHERE { dgo hypernym canine }");
    assert_eq!(row[1..], ["dog/02084071-n", "canine/02083346-n"], "{row:?}");
    let dgo = err
        .lines()
        .find(|l| l.contains("node dgo"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        dgo.contains("similarity 0.667"),
        "the lemma's, 1 - 1/3: {dgo}"
    );
    assert!(!err.contains("entity/00001740-n"), "{err}");

    // `domestic dog` is the synset's second lemma, never its name: an exact embedding.
    let (row, _) = best(
        &graph,
        r#"SELECT * WHERE { "domestic dog" hypernym canine }"#,
    );
    assert_eq!(
        row,
        ["1.0000", "dog/02084071-n", "canine/02083346-n"],
        "{row:?}"
    );
}
