//! RDF (N-Triples, N-Quads, Turtle) and KGTK ingest on the hand-written fixtures, their malformed
//! inputs, and dumps (`export`) that ingest back into the same graph.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use gpsense_graph::export::{dump, DumpFormat, ExportError};
use gpsense_graph::ingest::{
    ingest, ingest_bytes, Format, IngestError, IngestOptions, IngestReport, NoProgress, OnError,
};
use gpsense_graph::{GraphBuilder, KnowledgeGraph};

const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn skip() -> IngestOptions {
    IngestOptions {
        on_error: OnError::Skip,
        ..Default::default()
    }
}

fn ingest_files(paths: &[PathBuf]) -> (KnowledgeGraph, IngestReport) {
    ingest(paths, &IngestOptions::default(), &NoProgress).unwrap()
}

/// (nodes, edges, relations) of a graph.
fn counts(g: &KnowledgeGraph) -> (usize, usize, usize) {
    (g.node_count(), g.edge_count(), g.relation_count())
}

fn has_edge(g: &KnowledgeGraph, s: &str, r: &str, t: &str) -> bool {
    let (Some(s), Some(r), Some(t)) = (g.node_id(s), g.relation_id(r), g.node_id(t)) else {
        return false;
    };
    g.out().has_edge(s, Some(r), t)
}

/// A graph as sets: (head, relation, tail, weight bits) and node names; ids may differ.
type Triples = BTreeSet<(String, String, String, u32)>;
fn as_sets(g: &KnowledgeGraph) -> (Triples, BTreeSet<String>) {
    let triples = g
        .edges()
        .enumerate()
        .map(|(i, (s, r, t))| {
            (
                g.node_name(s).to_owned(),
                g.relation_name(r).to_owned(),
                g.node_name(t).to_owned(),
                g.weight(i).to_bits(),
            )
        })
        .collect();
    let names = g.nodes().iter().map(|(_, n)| n.to_owned()).collect();
    (triples, names)
}

#[test]
fn ntriples_fixture() {
    let (g, report) = ingest_files(&[fixture("sample.nt")]);
    let file = &report.files[0];
    assert_eq!(file.format, Format::NTriples);
    assert_eq!((file.lines, file.edges, report.duplicates), (14, 12, 1));
    assert_eq!(counts(&g), (15, 11, 7));
    let dog = "http://example.org/dog";
    let label = "http://www.w3.org/2000/01/rdf-schema#label";
    assert!(has_edge(&g, dog, RDF_TYPE, "http://example.org/Animal"));
    // Literals are named in N-Triples syntax: tags lower-cased, xsd:string dropped, escapes kept.
    assert!(has_edge(&g, dog, label, "\"dog\""));
    assert!(has_edge(&g, dog, label, "\"chien\"@fr"));
    let four = format!("\"4\"^^<{XSD}integer>");
    assert!(has_edge(&g, dog, "http://example.org/legs", &four));
    let says = r#""\"woof\"\tand\\or\nbark""#;
    assert!(has_edge(&g, dog, "http://example.org/says", says));
    assert!(has_edge(
        &g,
        "http://example.org/café",
        "http://example.org/serves",
        "\"café crème\""
    ));
    // Blank nodes keep their labels in a single file.
    assert!(has_edge(&g, dog, "http://example.org/likes", "_:bone"));
    assert!(has_edge(&g, "_:bone", label, "\"os\"@fr"));
    assert!(g.node_id("_:b1").is_some());
    // The reserved scheme is decoded.
    assert!(has_edge(&g, "ice cream", "IsA", "dessert"));
}

#[test]
fn nquads_fixture_reads_the_default_graph() {
    let (g, report) = ingest_files(&[fixture("sample.nq")]);
    let file = &report.files[0];
    assert_eq!(file.format, Format::NQuads);
    assert_eq!((file.lines, file.edges, report.duplicates), (11, 5, 1));
    assert_eq!(file.in_named_graphs, 5);
    assert_eq!(counts(&g), (5, 4, 3));
    assert!(has_edge(
        &g,
        "http://example.org/cat",
        "http://example.org/chases",
        "_:m"
    ));
    // Only in named graphs: not in the graph.
    assert!(g.node_id("\"dog\"@en").is_none());
    assert!(g.relation_id("http://example.org/age").is_none());
    assert!(has_edge(
        &g,
        "_:m",
        "http://www.w3.org/2000/01/rdf-schema#label",
        "\"mouse\""
    ));
    assert!(g.node_id("_:g").is_none(), "a graph name is no node");
}

#[test]
fn turtle_fixture() {
    let (g, report) = ingest_files(&[fixture("sample.ttl")]);
    let file = &report.files[0];
    assert_eq!(file.format, Format::Turtle);
    assert_eq!((file.lines, file.edges, report.duplicates), (30, 20, 1));
    assert_eq!(counts(&g), (18, 19, 11));
    let ex = |s: &str| format!("http://example.org/{s}");
    let label = "http://www.w3.org/2000/01/rdf-schema#label";
    assert!(has_edge(&g, &ex("dog"), RDF_TYPE, &ex("Pet")));
    assert!(has_edge(&g, &ex("dog"), label, "\"chien\"@fr"));
    let four = format!("\"4\"^^<{XSD}integer>");
    assert!(has_edge(&g, &ex("dog"), &ex("legs"), &four));
    assert!(has_edge(&g, &ex("cat"), &ex("legs"), &four), "@base");
    assert!(has_edge(
        &g,
        &ex("cat"),
        &ex("indoor"),
        &format!("\"true\"^^<{XSD}boolean>")
    ));
    assert!(has_edge(
        &g,
        &ex("cat"),
        &ex("weight"),
        &format!("\"4.5\"^^<{XSD}decimal>")
    ));
    // `[]` and the collection's nodes get deterministic names in order of appearance.
    assert!(has_edge(&g, &ex("dog"), &ex("likes"), "_:anon0"));
    assert!(has_edge(&g, "_:anon0", label, "\"ball\""));
    assert!(has_edge(&g, &ex("dog"), &ex("knows"), "_:anon1"));
    let first = "http://www.w3.org/1999/02/22-rdf-syntax-ns#first";
    assert!(has_edge(&g, "_:anon2", first, "_:walker"));
    assert!(has_edge(&g, "_:walker", label, "\"Alice\"@en-gb"));
    let comment = "http://www.w3.org/2000/01/rdf-schema#comment";
    assert!(has_edge(
        &g,
        &ex("dog"),
        comment,
        r#""A dog,\nnot a \"cat\".""#
    ));
    // The same input gives the same graph, names included.
    assert_eq!(ingest_files(&[fixture("sample.ttl")]).0, g);
}

#[test]
fn kgtk_fixture_labels_become_aliases() {
    let (g, report) = ingest_files(&[fixture("cskg_sample.tsv")]);
    let file = &report.files[0];
    assert_eq!(file.format, Format::Kgtk);
    assert_eq!((file.lines, file.edges, report.duplicates), (41, 40, 1));
    assert_eq!(file.names, 63);
    assert_eq!(counts(&g), (41, 39, 19));
    assert_eq!(g.aliases().names().len(), 56);
    assert!(has_edge(&g, "/c/en/dog", "/r/IsA", "/c/en/animal"));
    assert!(has_edge(
        &g,
        "at:personx_adopts_a_dog",
        "at:xIntent",
        "at:to_have_a_companion"
    ));
    assert!(has_edge(&g, "Q146", "P279", "Q39201"));
    let named = |name: &str| -> Vec<&str> {
        g.nodes_named(name)
            .into_iter()
            .map(|v| g.node_name(v))
            .collect()
    };
    let dog = named("dog");
    for node in ["/c/en/dog", "wn:dog.n.01", "wn:dog.n.03", "Q144"] {
        assert!(dog.contains(&node), "{dog:?}");
    }
    assert_eq!(dog.len(), 4, "{dog:?}");
    assert_eq!(named("ice cream"), ["/c/en/ice_cream"]);
    assert_eq!(named("Canis familiaris"), ["wn:dog.n.01"]);
    // KGTK quoting: strings, language-qualified strings, escaped quotes and bars.
    assert_eq!(named("chien"), ["/c/fr/chien"]);
    assert_eq!(named("the \"good\" boy"), ["/c/en/good_boy"]);
    assert_eq!(named("salt | pepper"), ["/c/en/salt_and_pepper"]);
    assert_eq!(named("personx walks persony's dog").len(), 1);
}

fn gzip(from: &Path, to: &Path) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(to).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(&std::fs::read(from).unwrap()).unwrap();
    gz.finish().unwrap();
}

#[test]
fn gzip_variants_give_the_same_graphs() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["sample.nt", "sample.nq", "sample.ttl", "cskg_sample.tsv"] {
        let gz = dir.path().join(format!("{name}.gz"));
        gzip(&fixture(name), &gz);
        let (plain, plain_report) = ingest_files(&[fixture(name)]);
        let (zipped, report) = ingest_files(&[gz]);
        assert_eq!(zipped, plain, "{name}");
        assert_eq!(
            report.files[0].format, plain_report.files[0].format,
            "{name}"
        );
        assert_eq!(report.files[0].lines, plain_report.files[0].lines, "{name}");
    }
}

/// Fails by default with `line` and `reason` in the message; with skip, keeps `kept` edges and
/// counts one skipped line.
fn check(format: Format, input: &str, line: u64, reason: &str, kept: usize) {
    let err = ingest_bytes(input.as_bytes(), format, &IngestOptions::default()).unwrap_err();
    match &err {
        IngestError::Malformed { line: l, .. } => {
            assert_eq!(*l, line, "{format}: {err}");
            assert!(err.to_string().contains(reason), "{format}: {err}");
        }
        other => panic!("{format}: expected a malformed-line error, got {other}"),
    }
    let (g, report) = ingest_bytes(input.as_bytes(), format, &skip()).unwrap();
    assert_eq!(g.edge_count(), kept, "{format}: {report:?}");
    assert_eq!(report.skipped_total(), 1, "{format}: {report:?}");
}

#[test]
fn malformed_ntriples_and_nquads_name_line_and_column() {
    let good = "<http://e/s> <http://e/p> <http://e/o> .\n";
    check(
        Format::NTriples,
        &format!("{good}<http://e/s> <http://e/p> BAD .\n{good}"),
        2,
        "N-Triples syntax: column 27",
        1,
    );
    check(
        Format::NTriples,
        &format!("# c\n{good}<http://e/s> <http://e/p> <http://e/o2>\n"),
        3,
        "followed by a dot",
        1,
    );
    check(
        Format::NTriples,
        &format!("{good}{}", good.replace('\n', " <http://e/g> .\n")),
        2,
        "N-Triples syntax",
        1,
    );
    check(
        Format::NTriples,
        &format!("{good}<relative> <http://e/p> <http://e/o> .\n"),
        2,
        "absolute IRI",
        1,
    );
    check(
        Format::NTriples,
        &format!("{good}<http://e/s> <http://e/p> \"unterminated .\n"),
        2,
        "N-Triples syntax",
        1,
    );
    check(
        Format::NQuads,
        &format!("{good}<http://e/s> <http://e/p> <http://e/o> \"lit\" .\n"),
        2,
        "N-Quads syntax",
        1,
    );
    // A name the graph refuses (longer than a name may be) makes its line bad too.
    let long = format!(
        "{good}<http://e/s> <http://e/p> \"{}\" .\n",
        "x".repeat(5000)
    );
    check(Format::NTriples, &long, 2, "name too long", 1);
}

#[test]
fn malformed_turtle_names_the_line_and_skips_to_the_next_statement() {
    let ttl = "@prefix e: <http://e/> .\n\
               e:a e:p e:b .\n\
               e:s e:p e:o ;\n\
               \x20   e:q BAD ;\n\
               \x20   e:r e:o3 .\n\
               e:c e:p e:d .\n";
    let err = ingest_bytes(ttl.as_bytes(), Format::Turtle, &IngestOptions::default()).unwrap_err();
    assert!(
        matches!(err, IngestError::Malformed { line: 4, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("Turtle syntax: column 9: BAD"),
        "{err}"
    );
    let (g, report) = ingest_bytes(ttl.as_bytes(), Format::Turtle, &skip()).unwrap();
    // The statement's triple before the error stays; the rest of it, to its `.`, is skipped.
    assert_eq!(g.edge_count(), 3, "{report:?}");
    assert!(has_edge(&g, "http://e/s", "http://e/p", "http://e/o"));
    assert!(has_edge(&g, "http://e/c", "http://e/p", "http://e/d"));
    assert!(g.node_id("http://e/o3").is_none());
    assert_eq!(report.files[0].skipped.get("Turtle syntax"), Some(&1));
    assert_eq!(report.files[0].lines, 6);
    // An unknown prefix, a literal subject: one line each.
    check(
        Format::Turtle,
        "@prefix e: <http://e/> .\ne:a e:p e:b .\nx:a e:p e:b .\n",
        3,
        "Turtle syntax",
        1,
    );
    // The end of the input in the middle of a statement.
    check(
        Format::Turtle,
        "@prefix e: <http://e/> .\ne:a e:p e:b .\ne:a e:p\n",
        3,
        "Turtle syntax",
        1,
    );
}

#[test]
fn turtle_memory_is_bounded_by_the_line_limit() {
    let opts = |on_error| IngestOptions {
        on_error,
        max_line_bytes: 1024,
        ..Default::default()
    };
    // One line past the limit: never held whole, and the rest of the file is not read.
    let ttl = format!(
        "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/a> <http://e/p> \"{}\" .\n<http://e/c> <http://e/p> <http://e/d> .\n",
        "x".repeat(5000)
    );
    let err = ingest_bytes(ttl.as_bytes(), Format::Turtle, &opts(OnError::Fail)).unwrap_err();
    assert!(
        matches!(err, IngestError::Malformed { line: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("line too long"), "{err}");
    let (g, report) = ingest_bytes(ttl.as_bytes(), Format::Turtle, &opts(OnError::Skip)).unwrap();
    assert_eq!(g.edge_count(), 1);
    assert_eq!(report.files[0].skipped.get("line too long"), Some(&1));
    assert!(report.files[0].examples[0]
        .1
        .to_string()
        .contains("rest of the file"));
    // Short lines, but a long string that never ends, or brackets nested without end: stopped
    // once more than the limit has passed without a triple.
    let open = format!(
        "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/a> <http://e/p> \"\"\"\n{}",
        "short line\n".repeat(2000)
    );
    let err = ingest_bytes(open.as_bytes(), Format::Turtle, &opts(OnError::Fail)).unwrap_err();
    assert!(err.to_string().contains("statement too long"), "{err}");
    let nested = format!(
        "<http://e/a> <http://e/p> <http://e/b> .\n<http://e/a> <http://e/p> {}",
        "[ a\n".repeat(2000)
    );
    let err = ingest_bytes(nested.as_bytes(), Format::Turtle, &opts(OnError::Fail)).unwrap_err();
    assert!(err.to_string().contains("statement too long"), "{err}");
    // A long statement that does give triples is fine.
    let long = format!(
        "<http://e/a> <http://e/p> {} .\n",
        (0..2000)
            .map(|i| format!("<http://e/o{i}>"))
            .collect::<Vec<_>>()
            .join(" ,\n")
    );
    let (g, _) = ingest_bytes(long.as_bytes(), Format::Turtle, &opts(OnError::Fail)).unwrap();
    assert_eq!(g.edge_count(), 2000);
    // The bound is per statement: a prologue of thousands of directives (200,000 `@prefix` lines
    // were refused as "statement too long") is no statement without end, nor are brackets and
    // quotes in IRIs, strings and comments, which open nothing (those before it included).
    let quoted = "<http://e/s> <http://e/p> \"[ ( \\\" '''\" , '\"\"\"[' .\n";
    let directives: String = (0..3000)
        .map(|i| match i % 3 {
            0 => format!("@prefix p{i}: <http://e/({i}/> .\n"),
            1 => format!("PREFIX p{i}: <http://e/x#({i}/>\n"),
            _ => format!("# a comment with [ ( \"\"\" and ' {i}\n"),
        })
        .collect();
    let prologue = format!("{quoted}{directives}p0:a p3:b p0:c .\n");
    let (g, _) = ingest_bytes(prologue.as_bytes(), Format::Turtle, &opts(OnError::Fail)).unwrap();
    assert_eq!(g.edge_count(), 3);
    // Brackets or a long string opened after such lines still count from where they opened.
    let long_string = format!("\"\"\"\n{}", "short line\n".repeat(2000));
    for open in ["[ a\n".repeat(2000), long_string] {
        let text = format!("{prologue}<http://e/a> <http://e/p> {open}");
        let err = ingest_bytes(text.as_bytes(), Format::Turtle, &opts(OnError::Fail)).unwrap_err();
        assert!(err.to_string().contains("statement too long"), "{err}");
    }
}

#[test]
fn kgtk_labels_are_applied_once_per_value() {
    let text = "node1\trelation\tnode2\tnode1;label\tnode2;label\n\
                a\tr\tb\tA\tB\n\
                a\tr\tc\tA|A2\t\n\
                a\tr\td\tA|A2\tb\n";
    let (g, report) =
        ingest_bytes(text.as_bytes(), Format::Kgtk, &IngestOptions::default()).unwrap();
    // A, B; then A and A2 (a new value for a); the repeat adds nothing, nor does d's label `b`
    // (not d's own name: an alias of d).
    assert_eq!(report.files[0].names, 5);
    let names = |n: &str| -> Vec<&str> {
        g.nodes_named(n)
            .into_iter()
            .map(|v| g.node_name(v))
            .collect()
    };
    assert_eq!(names("A2"), ["a"]);
    assert_eq!(names("b"), ["b", "d"]);
    assert_eq!(names("c"), ["c"]);
}

#[test]
fn malformed_kgtk() {
    let header = "id\tnode1\trelation\tnode2\tnode1;label\n";
    check(
        Format::Kgtk,
        &format!("{header}e1\ta\tr\tb\tA\ne2\ta\tr\n"),
        3,
        "expected 5 tab-separated fields (as in the header), found 3",
        1,
    );
    check(
        Format::Kgtk,
        &format!("{header}e1\ta\tr\tb\tA\ne2\t\tr\tb\tB\n"),
        3,
        "empty node name",
        1,
    );
    let weighted = "node1\trelation\tnode2\tweight\na\tr\tb\t0.5\na\tr\tc\tlots\n";
    check(Format::Kgtk, weighted, 3, "bad weight", 1);
    let (g, _) = ingest_bytes(weighted.as_bytes(), Format::Kgtk, &skip()).unwrap();
    assert_eq!(g.weight(0), 0.5);
    // No header: the first line says why, every later one is counted as headless.
    let err = ingest_bytes(b"a\tr\tb\n", Format::Kgtk, &IngestOptions::default()).unwrap_err();
    assert!(err.to_string().contains(":1: bad KGTK header"), "{err}");
    let (g, report) = ingest_bytes(b"a\tr\tb\nc\tr\td\n", Format::Kgtk, &skip()).unwrap();
    assert_eq!(g.edge_count(), 0);
    let skipped = &report.files[0].skipped;
    assert_eq!(skipped.get("bad KGTK header"), Some(&1), "{skipped:?}");
    assert_eq!(skipped.get("no KGTK header"), Some(&1), "{skipped:?}");
}

#[test]
fn blank_nodes_of_different_files_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let a = write(
        "a.nt",
        "_:x <http://e/p> _:y .\n_:x.f1 <http://e/p> _:y .\n",
    );
    let b = write("b.nt", "_:x <http://e/q> _:z .\n");
    let (g, _) = ingest_files(&[a.clone(), b]);
    assert!(has_edge(&g, "_:x", "http://e/p", "_:y"));
    // b's _:x is another node; a's own `_:x.f1` took the first choice of name.
    assert!(has_edge(&g, "_:x.f1.2", "http://e/q", "_:z"));
    assert!(has_edge(&g, "_:x.f1", "http://e/p", "_:y"));
    assert_eq!(g.node_count(), 5);
    // The same file twice: two copies of its blank nodes (RDF merge), joined at nothing.
    let (g, _) = ingest_files(&[a.clone(), a]);
    assert_eq!(g.edge_count(), 4);
    assert_eq!(g.node_count(), 6);
    // Anonymous Turtle nodes of two files are distinct too.
    let t = write(
        "t.ttl",
        "<http://e/s> <http://e/p> [ <http://e/q> <http://e/o> ] .\n",
    );
    let (g, _) = ingest_files(&[t.clone(), t]);
    assert!(has_edge(&g, "_:anon0", "http://e/q", "http://e/o"));
    assert!(has_edge(&g, "_:anon1", "http://e/q", "http://e/o"));
    assert_eq!(g.edge_count(), 4);
}

fn dumped(g: &KnowledgeGraph, format: DumpFormat) -> Vec<u8> {
    let mut out = Vec::new();
    dump(g, format, &mut out).unwrap();
    out
}

fn assert_round_trip(g: &KnowledgeGraph, format: DumpFormat, as_format: Format) {
    let text = dumped(g, format);
    let (back, report) = ingest_bytes(&text, as_format, &IngestOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&text)));
    assert_eq!(report.skipped_total(), 0);
    assert_eq!(as_sets(&back), as_sets(g), "{format}");
}

#[test]
fn rdf_graphs_round_trip_through_both_dumps() {
    let (g, _) = ingest_files(&[
        fixture("sample.nt"),
        fixture("sample.nq"),
        fixture("sample.ttl"),
    ]);
    assert_round_trip(&g, DumpFormat::NTriples, Format::NTriples);
    assert_round_trip(&g, DumpFormat::Tsv, Format::Triples);
}

#[test]
fn plain_names_round_trip_through_n_triples() {
    let mut b = GraphBuilder::new();
    for (h, r, t) in [
        ("dog", "IsA", "animal"),
        ("ice cream", "AtLocation", "freezer 100%"),
        ("/c/en/dog", "/r/IsA", "wn:dog.n.01"),
        ("\"a literal head\"", "gpsense:r/odd", "gpsense:n/odd"),
        ("_:b0", "http://e/p", "\"chat\"@FR"),
        ("café", "<angle>", "line\nbreak"),
    ] {
        b.add_triple(h, r, t, 1.0).unwrap();
    }
    let (g, _) = b.build().unwrap();
    assert_round_trip(&g, DumpFormat::NTriples, Format::NTriples);
    let text = String::from_utf8(dumped(&g, DumpFormat::NTriples)).unwrap();
    assert!(
        text.contains("<gpsense:n/dog> <gpsense:r/IsA> <gpsense:n/animal> ."),
        "{text}"
    );
}

#[test]
fn weights_round_trip_through_tsv_and_are_reported_lost_in_n_triples() {
    let mut b = GraphBuilder::new();
    b.add_triple("dog", "IsA", "animal", 0.1).unwrap();
    b.add_triple("cat", "IsA", "animal", 2.5e-7).unwrap();
    b.add_triple("cat", "AtLocation", "home", 1.0).unwrap();
    let (g, _) = b.build().unwrap();
    assert_round_trip(&g, DumpFormat::Tsv, Format::Triples);
    let mut out = Vec::new();
    let report = dump(&g, DumpFormat::NTriples, &mut out).unwrap();
    assert!(report.weights_dropped);
    assert_eq!(report.edges, 3);
    let text = String::from_utf8(dumped(&g, DumpFormat::Tsv)).unwrap();
    assert!(
        text.starts_with("#head\trelation\ttail\tweight\n"),
        "{text}"
    );
}

#[test]
fn tsv_refuses_names_it_cannot_hold() {
    for (h, t, what) in [
        ("a\tb", "x", "tab"),
        ("#tag", "x", "starts with #"),
        ("x", "a\nb", "line break"),
    ] {
        let mut b = GraphBuilder::new();
        b.add_triple(h, "r", t, 1.0).unwrap();
        let (g, _) = b.build().unwrap();
        let mut out = Vec::new();
        let err = dump(&g, DumpFormat::Tsv, &mut out).unwrap_err();
        assert!(matches!(err, ExportError::NotTsv { .. }), "{err}");
        assert!(err.to_string().contains(what), "{err}");
        assert!(out.is_empty(), "nothing written before the refusal");
        assert_round_trip(&g, DumpFormat::NTriples, Format::NTriples);
    }
    // `#` is fine where it does not start a line.
    let mut b = GraphBuilder::new();
    b.add_triple("x", "#r", "#t", 1.0).unwrap();
    let (g, _) = b.build().unwrap();
    assert_round_trip(&g, DumpFormat::Tsv, Format::Triples);
}

#[test]
fn kgtk_dump_reports_what_it_leaves_out() {
    let (g, _) = ingest_files(&[fixture("cskg_sample.tsv")]);
    let mut out = Vec::new();
    let report = dump(&g, DumpFormat::Tsv, &mut out).unwrap();
    assert_eq!(report.aliases, 56);
    assert_eq!(report.nodes_without_edges, 0);
    assert!(!report.weights_dropped);
    assert_round_trip(&g, DumpFormat::Tsv, Format::Triples);
    assert_round_trip(&g, DumpFormat::NTriples, Format::NTriples);
}

#[test]
fn conceptnet_100k_round_trips_through_both_dumps() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/conceptnet-100k/train.txt.gz");
    let (g, _) = ingest_files(&[path]);
    assert_eq!(g.edge_count(), 100_000);
    assert_round_trip(&g, DumpFormat::Tsv, Format::Triples);
    assert_round_trip(&g, DumpFormat::NTriples, Format::NTriples);
}

/// The mutation pass of `mutations.rs`, for these formats: any damage gives a graph or an error,
/// never a panic, and every graph that comes out is consistent.
#[test]
fn parsers_survive_mutations() {
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n.max(1) as u64) as usize
        }
    }
    const SPECIAL: &[u8] = b"\t\n\r\"'#<>_:.;,[]()@^|\\ \xff\xc3";
    let samples = [
        (Format::NTriples, "sample.nt"),
        (Format::NQuads, "sample.nq"),
        (Format::Turtle, "sample.ttl"),
        (Format::Kgtk, "cskg_sample.tsv"),
    ];
    for (format, name) in samples {
        let input = std::fs::read(fixture(name)).unwrap();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ format as u64);
        for _ in 0..1500 {
            let mut bytes = input.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bytes.len() + 1);
                match rng.below(3) {
                    0 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
                    1 => bytes.truncate(at),
                    _ => bytes.insert(at, SPECIAL[rng.below(SPECIAL.len())]),
                }
            }
            for on_error in [OnError::Fail, OnError::Skip] {
                let opts = IngestOptions {
                    on_error,
                    ..Default::default()
                };
                if let Ok((g, _)) = ingest_bytes(&bytes, format, &opts) {
                    g.validate().unwrap();
                }
            }
        }
    }
}
