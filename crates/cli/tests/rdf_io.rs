//! RDF and KGTK input and `gpsense dump` through the binary: each fixture format ingests with the
//! right counts (gzip too), malformed lines name file and line, and a dump ingests back into the
//! same graph, in N-Triples and in TSV.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{dataset, fails, ok};
use gpsense_graph::KnowledgeGraph;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../graph/tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// A graph as sets of (head, relation, tail, weight bits) and node names: ids may differ.
type Sets = (BTreeSet<(String, String, String, u32)>, BTreeSet<String>);
fn sets(g: &KnowledgeGraph) -> Sets {
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
    (
        triples,
        g.nodes().iter().map(|(_, n)| n.to_owned()).collect(),
    )
}

fn load(path: &str) -> KnowledgeGraph {
    KnowledgeGraph::load(Path::new(path)).expect("a snapshot")
}

#[test]
fn each_fixture_format_ingests_with_its_counts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        (
            "sample.nt",
            "ntriples, 14 lines, 12 edges",
            "15 nodes, 11 edges, 7 relations",
        ),
        (
            "sample.nq",
            "nquads, 11 lines, 5 edges",
            "5 nodes, 4 edges, 3 relations",
        ),
        (
            "sample.ttl",
            "turtle, 30 lines, 20 edges",
            "18 nodes, 19 edges, 11 relations",
        ),
        (
            "cskg_sample.tsv",
            "kgtk, 41 lines, 40 edges, 63 names",
            "41 nodes, 39 edges, 19 relations",
        ),
    ];
    for (name, file_line, graph_line) in cases {
        let out = path(dir.path(), "g.gps");
        let (stdout, stderr) = ok(&["ingest", &fixture(name), "-o", &out]);
        assert!(
            stderr.contains(&format!("{name}: {file_line}\n")),
            "{stderr}"
        );
        assert!(stdout.contains(graph_line), "{name}: {stdout}");
        // gzip: the same counts (the extension under .gz still names the format).
        let gz = path(dir.path(), &format!("{name}.gz"));
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).expect("create"),
            flate2::Compression::default(),
        );
        enc.write_all(&std::fs::read(fixture(name)).expect("fixture"))
            .expect("gzip");
        enc.finish().expect("gzip");
        let (stdout, stderr) = ok(&["ingest", &gz, "-o", &out]);
        assert!(stderr.contains(file_line), "{name}.gz: {stderr}");
        assert!(stdout.contains(graph_line), "{name}.gz: {stdout}");
    }
}

#[test]
fn kgtk_labels_find_nodes_in_queries() {
    let (out, _) = ok(&[
        "query",
        "--graph",
        &fixture("cskg_sample.tsv"),
        "SELECT ?x WHERE { dog /r/IsA ?x }",
    ]);
    // `dog` names /c/en/dog, wn:dog.n.01, wn:dog.n.03 and Q144.
    for node in ["/c/en/animal", "wn:canine.n.02", "wn:chap.n.01", "Q39201"] {
        assert!(out.lines().any(|l| l == node), "{node}: {out}");
    }
}

#[test]
fn malformed_lines_name_file_and_line_or_are_counted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = "<http://e/s> <http://e/p> <http://e/o> .\n";
    let cases = [
        ("bad.nt", format!("{good}<http://e/s> <http://e/p> BAD .\n{good}"), "bad.nt:2: N-Triples syntax: column 27", "N-Triples syntax"),
        ("bad.nq", format!("{good}{good}<http://e/s> <http://e/p> .\n"), "bad.nq:3: N-Quads syntax", "N-Quads syntax"),
        (
            "bad.ttl",
            "@prefix e: <http://e/> .\ne:a e:p e:b .\n\ne:c e:p e:d ;\n  e:q \"open .\ne:x e:p e:y .\n".to_owned(),
            "bad.ttl:5: Turtle syntax",
            "Turtle syntax",
        ),
        (
            "bad.tsv",
            "id\tnode1\trelation\tnode2\ne1\ta\tr\tb\ne2\ta\tr\n".to_owned(),
            "bad.tsv:3: wrong field count",
            "wrong field count",
        ),
    ];
    let out = path(dir.path(), "g.gps");
    for (name, text, error, reason) in cases {
        let input = path(dir.path(), name);
        std::fs::write(&input, text).expect("write");
        let stderr = fails(&["ingest", &input, "-o", &out]);
        assert!(stderr.contains(error), "{name}: {stderr}");
        assert!(stderr.contains("--on-error skip"), "{stderr}");
        let (_, stderr) = ok(&["ingest", &input, "-o", &out, "--on-error", "skip"]);
        assert!(
            stderr.contains(&format!("skipped 1 lines: {reason}")),
            "{name}: {stderr}"
        );
    }
}

/// `dump -o FILE`, then `ingest FILE`: the same graph as `original`.
fn round_trip(graph: Option<&str>, format: &str, original: &KnowledgeGraph, dir: &Path) -> String {
    let dumped = path(dir, &format!("dump.{format}"));
    let mut args = vec!["dump", "--format", format, "-o", &dumped];
    args.extend(graph);
    let (stdout, stderr) = ok(&args);
    assert!(stdout.is_empty(), "{stdout}");
    let back = path(dir, "back.gps");
    let (summary, _) = ok(&["ingest", &dumped, "-o", &back]);
    assert!(
        sets(&load(&back)) == sets(original),
        "{format} round trip differs"
    );
    format!("{summary}{stderr}")
}

#[test]
fn conceptnet_100k_round_trips_through_nt_and_tsv() {
    let dir = tempfile::tempdir().expect("temp dir");
    let original = path(dir.path(), "cn.gps");
    ok(&[
        "ingest",
        &dataset("conceptnet-100k/train.txt.gz"),
        "-o",
        &original,
    ]);
    let original = load(&original);
    for format in ["nt", "tsv"] {
        // No GRAPH: the embedded default, the same ConceptNet-100K.
        let out = round_trip(None, format, &original, dir.path());
        assert!(
            out.contains("78,093 nodes, 100,000 edges, 34 relations"),
            "{out}"
        );
        assert!(out.contains("100,000 edges written as"), "{out}");
    }
    let nt = std::fs::read_to_string(path(dir.path(), "dump.nt")).expect("dump");
    assert!(
        nt.lines()
            .any(|l| l
                == "<gpsense:n/hockey> <gpsense:r/ReceivesAction> <gpsense:n/play%20on%20ice> ."),
        "{}",
        &nt[..300]
    );
}

#[test]
fn literals_blank_nodes_and_iris_round_trip() {
    let dir = tempfile::tempdir().expect("temp dir");
    let graph = path(dir.path(), "rdf.gps");
    ok(&[
        "ingest",
        &fixture("sample.nt"),
        &fixture("sample.nq"),
        &fixture("sample.ttl"),
        "-o",
        &graph,
    ]);
    let original = load(&graph);
    for format in ["nt", "tsv"] {
        round_trip(Some(&graph), format, &original, dir.path());
    }
    let nt = std::fs::read_to_string(path(dir.path(), "dump.nt")).expect("dump");
    for line in [
        "<http://example.org/dog> <http://www.w3.org/2000/01/rdf-schema#label> \"chien\"@fr .",
        "_:walker <http://www.w3.org/2000/01/rdf-schema#label> \"Alice\"@en-gb .",
        "<gpsense:n/ice%20cream> <gpsense:r/IsA> <gpsense:n/dessert> .",
    ] {
        assert!(nt.lines().any(|l| l == line), "{line}\n{nt}");
    }
}

#[test]
fn dump_says_what_the_format_leaves_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = path(dir.path(), "k.nt");
    // The format from the extension.
    let (_, stderr) = ok(&["dump", &fixture("cskg_sample.tsv"), "-o", &out]);
    assert!(stderr.contains("39 edges written as nt"), "{stderr}");
    assert!(stderr.contains("56 alias names"), "{stderr}");
    let stderr = fails(&["dump", &fixture("sample.nt")]);
    assert!(
        stderr.contains("pass --format nt or --format tsv"),
        "{stderr}"
    );
    let stderr = fails(&["dump", "--format", "nt", "-o", &path(dir.path(), "x.nt.gz")]);
    assert!(stderr.contains("| gzip >"), "{stderr}");
    // A CSV name may hold a tab, which TSV cannot; N-Triples can.
    let csv = path(dir.path(), "tab.csv");
    std::fs::write(&csv, "\"a\tb\",r,c\n").expect("write");
    let stderr = fails(&["dump", &csv, "--format", "tsv"]);
    assert!(stderr.contains("cannot be written as TSV"), "{stderr}");
}

/// A reader that stops early ends the dump quietly.
#[test]
fn dump_to_a_closed_pipe_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .args(["dump", "--format", "nt"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpsense");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    assert!(first.starts_with("<gpsense:n/"), "{first}");
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

/// A line without end fails at once instead of being read for ever.
#[test]
fn a_line_without_end_fails_at_once() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = path(dir.path(), "z.gps");
    for format in ["ntriples", "nquads", "turtle", "trig", "rdfxml", "kgtk"] {
        let stderr = fails(&["ingest", "/dev/zero", "--format", format, "-o", &out]);
        assert!(
            stderr.contains("/dev/zero:1: line too long"),
            "{format}: {stderr}"
        );
    }
}

/// Runs gpsense: its exit code, stdout and stderr (no panic, whatever the outcome).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::gpsense(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (out.status.code(), stdout, stderr)
}

/// An input with no data ingests into an empty graph with a note, and every engine answers on it:
/// no rows, a count of 0, no match; a query naming an IRI too.
#[test]
fn an_empty_input_is_an_empty_graph_that_answers_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ttl = path(dir.path(), "empty.ttl");
    std::fs::write(&ttl, "@prefix e: <http://e.org/> .\n# nothing yet\n").expect("write");
    let graph = path(dir.path(), "empty.gps");
    let (stdout, stderr) = ok(&["ingest", &ttl, "-o", &graph]);
    assert!(stdout.contains("0 nodes, 0 edges, 0 relations"), "{stdout}");
    assert!(
        stderr.contains(&format!("note: {ttl} holds no data")),
        "{stderr}"
    );
    assert!(stderr.contains("note: the graph is empty"), "{stderr}");
    let (_, stderr) = ok(&["info", &graph]);
    assert!(stderr.contains("the graph is empty"), "{stderr}");
    let select = "SELECT ?x ?y WHERE { ?x ?p ?y . ?y ?q ?z }";
    for source in [&graph, &ttl] {
        for engine in ["dfs", "kernels", "emulated"] {
            let q = |extra: &[&str]| {
                let mut args = vec!["query", "--graph", source, "--engine", engine];
                args.extend_from_slice(extra);
                run(&args)
            };
            let (code, stdout, stderr) = q(&[select]);
            assert_eq!(
                (code, stdout.as_str()),
                (Some(0), "x\ty\n"),
                "{engine}: {stderr}"
            );
            let (code, stdout, stderr) = q(&["--count", select]);
            assert_eq!((code, stdout.trim()), (Some(0), "0"), "{engine}: {stderr}");
            let count = "SELECT (COUNT(*) AS ?n) WHERE { ?x ?p ?y }";
            let (code, stdout, stderr) = q(&[count]);
            assert_eq!(code, Some(0), "{engine}: {stderr}");
            assert!(
                stdout.lines().any(|l| l.trim() == "0"),
                "{engine}: {stdout}"
            );
            let (code, stdout, stderr) = q(&["ASK { ?x ?p ?y }"]);
            assert_eq!(
                (code, stdout.as_str()),
                (Some(1), "no\n"),
                "{engine}: {stderr}"
            );
        }
    }
    // Across processes' workers, and compressed.
    let (stdout, _) = ok(&["query", "--graph", &graph, "--workers", "2", select]);
    assert_eq!(stdout, "x\ty\n");
    let gpsc = path(dir.path(), "empty.gpsc");
    ok(&["compress", &graph, "-o", &gpsc]);
    let (stdout, _) = ok(&["query", "--graph", &gpsc, "--count", select]);
    assert_eq!(stdout, "0\n");
}

#[test]
fn base_resolves_relative_iris_and_is_suggested_without_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ttl = path(dir.path(), "rel.ttl");
    std::fs::write(&ttl, "@prefix e: <http://e.org/> .\n<dog> a e:Animal .\n").expect("write");
    let graph = path(dir.path(), "g.gps");
    let err = fails(&["ingest", &ttl, "-o", &graph]);
    assert!(
        err.contains(&format!("{ttl}:2: relative IRI")) && err.contains("--base IRI"),
        "{err}"
    );
    // Queried directly, the remedy names ingest's --base too.
    let err = fails(&["query", "--graph", &ttl, "SELECT ?x WHERE { ?x ?p ?y }"]);
    assert!(err.contains("--base IRI"), "{err}");
    ok(&["ingest", &ttl, "-o", &graph, "--base", "http://e.org/zoo/"]);
    let g = load(&graph);
    assert!(g.node_id("http://e.org/zoo/dog").is_some());
    let err = fails(&["ingest", &ttl, "-o", &graph, "--base", "zoo/"]);
    assert!(err.contains("--base: bad base IRI \"zoo/\""), "{err}");
}

#[test]
fn rdf_xml_and_trig_are_detected_and_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rdf = path(dir.path(), "o.owl");
    std::fs::write(
        &rdf,
        "<?xml version=\"1.0\"?>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" \
         xmlns:e=\"http://e.org/\">\n<e:Animal rdf:about=\"http://e.org/dog\" e:name=\"Rex\"/>\n</rdf:RDF>\n",
    )
    .expect("write");
    let trig = path(dir.path(), "g.trig");
    std::fs::write(
        &trig,
        "@prefix e: <http://e.org/> .\ne:cat a e:Animal .\ne:g { e:x e:y e:z . e:x e:y e:w }\n",
    )
    .expect("write");
    let graph = path(dir.path(), "g.gps");
    let (stdout, stderr) = ok(&["ingest", &rdf, &trig, "-o", &graph]);
    assert!(
        stderr.contains(&format!("{rdf}: rdfxml, 4 lines, 2 edges\n")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{trig}: trig, 3 lines, 1 edges\n")),
        "{stderr}"
    );
    assert!(
        stderr.contains("  2 triples in named graphs skipped: gpsense keeps one default graph\n"),
        "{stderr}"
    );
    assert!(stdout.contains("4 nodes, 3 edges, 2 relations"), "{stdout}");
    let (stdout, _) = ok(&[
        "query",
        "--graph",
        &graph,
        "SELECT ?x WHERE { ?x a <http://e.org/Animal> }",
    ]);
    assert!(
        stdout.contains("http://e.org/dog") && stdout.contains("http://e.org/cat"),
        "{stdout}"
    );
    // Forced, a format reads what it is given.
    let (_, stderr) = ok(&[
        "ingest",
        &trig,
        "-o",
        &graph,
        "--format",
        "turtle",
        "--on-error",
        "skip",
    ]);
    assert!(
        stderr.contains("skipped 1 lines: Turtle syntax"),
        "{stderr}"
    );
}
