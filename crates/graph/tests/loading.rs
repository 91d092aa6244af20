//! Loading beyond the line formats: inputs with no data are empty graphs (and still snapshots),
//! base IRIs resolve relative IRIs, RDF/XML and TriG are read (the default graph; named graphs are
//! skipped and counted), with their errors naming the line and their memory bounded.

use std::path::PathBuf;

use gpsense_graph::ingest::{
    ingest, ingest_bytes, Format, IngestError, IngestOptions, IngestReport, NoProgress, OnError,
    RELATIVE_IRI,
};
use gpsense_graph::KnowledgeGraph;

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

fn has_edge(g: &KnowledgeGraph, s: &str, r: &str, t: &str) -> bool {
    let (Some(s), Some(r), Some(t)) = (g.node_id(s), g.relation_id(r), g.node_id(t)) else {
        return false;
    };
    g.out().has_edge(s, Some(r), t)
}

fn with(on_error: OnError, base: Option<&str>) -> IngestOptions {
    IngestOptions {
        on_error,
        base_iri: base.map(str::to_owned),
        ..Default::default()
    }
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn load(paths: &[PathBuf]) -> Result<(KnowledgeGraph, IngestReport), IngestError> {
    ingest(paths, &IngestOptions::default(), &NoProgress)
}

/// The malformed-line error of `input`: its line and reason.
fn malformed(input: &str, format: Format, opts: &IngestOptions) -> (u64, String, &'static str) {
    match ingest_bytes(input.as_bytes(), format, opts) {
        Err(IngestError::Malformed { line, reason, .. }) => (line, reason.to_string(), reason.kind),
        other => panic!("{format}: expected a malformed line, got {other:?}"),
    }
}

const PREFIXES: &str = "@prefix e: <http://e.org/> .\n# a comment\nPREFIX f: <http://f.org/>\n";

#[test]
fn inputs_without_data_are_empty_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let xml = "<?xml version=\"1.0\"?>\n<rdf:RDF \
               xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n</rdf:RDF>\n";
    let cases = [
        ("empty.tsv", "", Format::Triples),
        ("blank", "\n  \n\n", Format::Triples),
        ("comments.txt", "# nothing\n# here\n", Format::Triples),
        ("empty.nt", "", Format::NTriples),
        ("comments.nt", "# c\n", Format::NTriples),
        ("empty.ttl", "", Format::Turtle),
        ("prefixes", PREFIXES, Format::Turtle),
        ("empty.trig", PREFIXES, Format::TriG),
        ("empty.nq", "\n", Format::NQuads),
        ("empty.rdf", xml, Format::RdfXml),
        ("none", xml, Format::RdfXml),
    ];
    for (name, text, format) in cases {
        let path = write(&dir, name, text);
        let (g, report) =
            load(std::slice::from_ref(&path)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((g.node_count(), g.edge_count()), (0, 0), "{name}");
        assert_eq!(report.files[0].format, format, "{name}");
        let empty: Vec<_> = report.empty_files().map(|f| f.path.clone()).collect();
        assert_eq!(empty, [path], "{name}");
        g.validate().unwrap();
        // An empty graph is a snapshot like any other.
        let snapshot = dir.path().join("empty.gps");
        g.save(&snapshot).unwrap();
        let back = KnowledgeGraph::load(&snapshot).unwrap();
        assert_eq!((back.node_count(), back.edge_count()), (0, 0), "{name}");
        back.validate().unwrap();
    }
    // Beside a file with data, an empty one adds nothing and is named in the report.
    let empty = write(&dir, "e.ttl", PREFIXES);
    let data = write(&dir, "d.tsv", "IsA\tcat\tanimal\n");
    let (g, report) = load(&[empty.clone(), data]).unwrap();
    assert_eq!(g.edge_count(), 1);
    let named: Vec<_> = report.empty_files().map(|f| f.path.clone()).collect();
    assert_eq!(named, [empty]);
}

/// Data of which nothing was kept is a mistake, not an empty graph.
#[test]
fn data_with_nothing_kept_is_still_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(&dir, "t.nt", "\"cat\",\"IsA\"\n\"dog\",\"IsA\"\n");
    let err = ingest(&[csv], &with(OnError::Skip, None), &NoProgress).unwrap_err();
    assert!(
        err.to_string()
            .contains("0 edges read from 2 lines: is the format right?"),
        "{err}"
    );
    let named = "<http://e/s> <http://e/p> <http://e/o> <http://e/g> .\n";
    let nq = write(&dir, "named.nq", &named.repeat(3));
    let err = load(&[nq]).unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::NoEdges {
                in_named_graphs: 3,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("in named graphs"), "{err}");
    // A ConceptNet dump with no line in the language asked for: filtered, not empty.
    let cn = "/a/x\t/r/IsA\t/c/fr/chat\t/c/fr/animal\t{\"weight\": 1.0}\n";
    let dump = write(&dir, "cn.csv", cn);
    let en = IngestOptions {
        languages: vec!["en".into()],
        ..Default::default()
    };
    assert!(matches!(
        ingest(&[dump], &en, &NoProgress),
        Err(IngestError::NoEdges { .. })
    ));
}

#[test]
fn a_base_iri_resolves_relative_iris() {
    let ttl = "<dog> a <Animal> .\n<cat> <chases> <../m/mouse> .\n";
    let base = Some("http://e.org/a/");
    let (g, _) = ingest_bytes(ttl.as_bytes(), Format::Turtle, &with(OnError::Fail, base)).unwrap();
    assert!(has_edge(
        &g,
        "http://e.org/a/dog",
        RDF_TYPE,
        "http://e.org/a/Animal"
    ));
    let mouse = "http://e.org/m/mouse";
    assert!(has_edge(
        &g,
        "http://e.org/a/cat",
        "http://e.org/a/chases",
        mouse
    ));
    // The file's own @base wins from where it stands.
    let own = format!("{ttl}@base <http://own.org/> .\n<x> <y> <z> .\n");
    let (g, _) = ingest_bytes(own.as_bytes(), Format::Turtle, &with(OnError::Fail, base)).unwrap();
    assert!(has_edge(
        &g,
        "http://own.org/x",
        "http://own.org/y",
        "http://own.org/z"
    ));
    let trig = "<g> { <s> <p> <o> }\n{ <s> <p> <o2> }\n";
    let (g, r) = ingest_bytes(trig.as_bytes(), Format::TriG, &with(OnError::Fail, base)).unwrap();
    assert!(has_edge(
        &g,
        "http://e.org/a/s",
        "http://e.org/a/p",
        "http://e.org/a/o2"
    ));
    assert_eq!((g.edge_count(), r.files[0].in_named_graphs), (1, 1));
    let xml = rdf_xml(
        r##"<rdf:Description rdf:about="dog"><e:p rdf:resource="#cat"/></rdf:Description>"##,
    );
    let (g, _) = ingest_bytes(xml.as_bytes(), Format::RdfXml, &with(OnError::Fail, base)).unwrap();
    assert!(has_edge(
        &g,
        "http://e.org/a/dog",
        "http://e.org/p",
        "http://e.org/a/#cat"
    ));
}

#[test]
fn without_a_base_a_relative_iri_names_its_line() {
    let none = with(OnError::Fail, None);
    let ttl = "@prefix e: <http://e.org/> .\ne:a e:b e:c .\n\ne:a e:b <c> .\n";
    let (line, reason, kind) = malformed(ttl, Format::Turtle, &none);
    assert_eq!((line, kind), (4, RELATIVE_IRI), "{reason}");
    assert!(
        reason.contains("column 9") && reason.contains("no base IRI"),
        "{reason}"
    );
    let (line, _, kind) = malformed("{ <s> <p> <o> }\n", Format::TriG, &none);
    assert_eq!((line, kind), (1, RELATIVE_IRI));
    let xml = rdf_xml("\n<rdf:Description rdf:about=\"dog\">\n<e:p>x</e:p></rdf:Description>");
    let (line, reason, kind) = malformed(&xml, Format::RdfXml, &none);
    assert_eq!((line, kind), (3, RELATIVE_IRI), "{reason}");
    // N-Triples allows no relative IRI: a syntax error, which says why.
    let (line, reason, kind) = malformed("<s> <p> <o> .\n", Format::NTriples, &none);
    assert_eq!((line, kind), (1, "N-Triples syntax"));
    assert!(reason.contains("only absolute"), "{reason}");
    // With skip, the line is counted and the rest read.
    let (g, report) =
        ingest_bytes(ttl.as_bytes(), Format::Turtle, &with(OnError::Skip, None)).unwrap();
    assert_eq!(
        (g.edge_count(), report.files[0].skipped[RELATIVE_IRI]),
        (1, 1)
    );
}

#[test]
fn a_malformed_base_iri_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.ttl");
    for bad in ["relative/path", "http://a b/", ""] {
        let err = ingest(
            std::slice::from_ref(&missing),
            &with(OnError::Fail, Some(bad)),
            &NoProgress,
        )
        .unwrap_err();
        assert!(matches!(err, IngestError::BaseIri { .. }), "{bad:?}: {err}");
        assert!(err.to_string().starts_with("bad base IRI"), "{err}");
        let err = ingest_bytes(b"", Format::Turtle, &with(OnError::Fail, Some(bad))).unwrap_err();
        assert!(matches!(err, IngestError::BaseIri { .. }), "{bad:?}: {err}");
    }
}

#[test]
fn trig_reads_the_default_graph_and_counts_named_ones() {
    let trig = r#"@prefix e: <http://e.org/> .
e:dog a e:Animal .
GRAPH e:g1 { e:dog e:says "woof" . e:cat a e:Animal }
e:g2 { e:x e:y e:z }
{ e:cat e:chases [ e:name "mouse" ] }
_:b { e:q e:r e:s . }
"#;
    let (g, report) =
        ingest_bytes(trig.as_bytes(), Format::TriG, &IngestOptions::default()).unwrap();
    let file = &report.files[0];
    assert_eq!((file.lines, file.edges, file.in_named_graphs), (6, 3, 4));
    assert!(has_edge(
        &g,
        "http://e.org/dog",
        RDF_TYPE,
        "http://e.org/Animal"
    ));
    assert!(has_edge(
        &g,
        "http://e.org/cat",
        "http://e.org/chases",
        "_:anon0"
    ));
    assert!(has_edge(&g, "_:anon0", "http://e.org/name", "\"mouse\""));
    assert!(g.node_id("http://e.org/x").is_none());
    assert!(g.node_id("\"woof\"").is_none());
    // A syntax error names its line, and the statements around it stay with skip.
    let bad = "<http://e/a> <http://e/b> <http://e/c> .\n<http://e/g> { <http://e/a> ; }\n<http://e/d> <http://e/b> <http://e/c> .\n";
    let (line, reason, _) = malformed(bad, Format::TriG, &IngestOptions::default());
    assert_eq!(line, 2, "{reason}");
    assert!(reason.starts_with("TriG syntax"), "{reason}");
}

/// An RDF/XML document with the `rdf` and `e` namespaces around `body`.
fn rdf_xml(body: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" \
         xmlns:e=\"http://e.org/\">{body}\n</rdf:RDF>\n"
    )
}

const XML_SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE rdf:RDF [ <!ENTITY e "http://e.org/"> ]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" xmlns:e="http://e.org/">
  <!-- a comment -->
  <e:Animal rdf:about="&e;dog">
    <rdfs:label xml:lang="EN">dog</rdfs:label>
    <e:legs rdf:datatype="http://www.w3.org/2001/XMLSchema#integer">4</e:legs>
    <e:likes rdf:nodeID="b1"/>
    <e:owner><rdf:Description e:name="Alice"/></e:owner>
  </e:Animal>
  <rdf:Description rdf:nodeID="b1" e:name="bone"/>
  <rdf:Description rdf:about="http://e.org/dog"><rdf:type rdf:resource="http://e.org/Animal"/></rdf:Description>
</rdf:RDF>
"#;

#[test]
fn rdf_xml_is_read_with_names_as_in_n_triples() {
    let (g, report) = ingest_bytes(
        XML_SAMPLE.as_bytes(),
        Format::RdfXml,
        &IngestOptions::default(),
    )
    .unwrap();
    let file = &report.files[0];
    assert_eq!(file.format, Format::RdfXml);
    assert_eq!((file.lines, file.edges, report.duplicates), (14, 8, 1));
    assert_eq!(g.edge_count(), 7);
    let dog = "http://e.org/dog";
    assert!(has_edge(&g, dog, RDF_TYPE, "http://e.org/Animal"));
    assert!(has_edge(&g, dog, LABEL, "\"dog\"@en"));
    let four = "\"4\"^^<http://www.w3.org/2001/XMLSchema#integer>";
    assert!(has_edge(&g, dog, "http://e.org/legs", four));
    assert!(has_edge(&g, dog, "http://e.org/likes", "_:b1"));
    assert!(has_edge(&g, "_:b1", "http://e.org/name", "\"bone\""));
    assert!(has_edge(&g, dog, "http://e.org/owner", "_:anon0"));
    assert!(has_edge(&g, "_:anon0", "http://e.org/name", "\"Alice\""));
    // Detected by extension and by its first tag.
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.rdf", "a.owl", "a.xml", "a"] {
        let (g2, r) = load(&[write(&dir, name, XML_SAMPLE)]).unwrap();
        assert_eq!(
            (r.files[0].format, g2.edge_count()),
            (Format::RdfXml, 7),
            "{name}"
        );
    }
    // Blank nodes of two files stay apart.
    let (g2, _) = load(&[dir.path().join("a.rdf"), dir.path().join("a.owl")]).unwrap();
    assert_eq!(
        g2.edge_count(),
        11,
        "b1 and the anonymous owner are new in the second file"
    );
    assert!(has_edge(&g2, "_:b1.f1", "http://e.org/name", "\"bone\""));
}

#[test]
fn rdf_xml_errors_name_the_line_and_end_the_file() {
    let xml = rdf_xml(
        "\n<rdf:Description rdf:about=\"http://e.org/a\" e:p=\"1\"/>\n\
         <rdf:Description rdf:about=\"http://e.org/b\">\n<e:p>2</e:q>\n</rdf:Description>",
    );
    let (line, reason, kind) = malformed(&xml, Format::RdfXml, &IngestOptions::default());
    assert_eq!((line, kind), (5, "RDF/XML syntax"), "{reason}");
    // With skip the triples before stay; the error is counted, the rest is not read.
    let (g, report) =
        ingest_bytes(xml.as_bytes(), Format::RdfXml, &with(OnError::Skip, None)).unwrap();
    assert_eq!(g.edge_count(), 1);
    assert_eq!(report.skipped_total(), 1);
    assert_eq!(report.files[0].lines, 5);
    // Not UTF-8, not XML: clear errors.
    let latin = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<rdf:RDF/>\n";
    let (line, reason, _) = malformed(latin, Format::RdfXml, &IngestOptions::default());
    assert_eq!(line, 1, "{reason}");
    assert!(reason.contains("UTF-8"), "{reason}");
    let (_, reason, kind) = malformed("a\tb\tc\n", Format::RdfXml, &IngestOptions::default());
    assert_eq!(kind, "RDF/XML syntax", "{reason}");
}

#[test]
fn rdf_xml_memory_is_bounded_by_the_line_limit() {
    let opts = |on_error| IngestOptions {
        on_error,
        max_line_bytes: 1024,
        ..Default::default()
    };
    let long = rdf_xml(&format!(
        "\n<rdf:Description rdf:about=\"http://e.org/a\" e:p=\"1\"/>\n<e:x e:y=\"{}\"/>",
        "z".repeat(2000)
    ));
    let (line, reason, kind) = malformed(&long, Format::RdfXml, &opts(OnError::Fail));
    assert_eq!((line, kind), (4, "line too long"), "{reason}");
    let (g, _) = ingest_bytes(long.as_bytes(), Format::RdfXml, &opts(OnError::Skip)).unwrap();
    assert_eq!(g.edge_count(), 1);
    // Short lines, no triple: a comment that never ends.
    let comment = rdf_xml(&format!("\n<!-- {}", "more\n".repeat(400)));
    let (_, reason, kind) = malformed(&comment, Format::RdfXml, &opts(OnError::Fail));
    assert_eq!(kind, "statement too long", "{reason}");
    // Entities (a bomb is src/ingest/rdfxml.rs's test): one that expands too far is refused
    // before the parser expands it, and so are many uses of a large one.
    let big = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE r [\n<!ENTITY a \"{}\">\n<!ENTITY b \"{}\">\n]>\n<r/>\n",
        "a".repeat(100),
        "&a;".repeat(20)
    );
    let (line, reason, kind) = malformed(&big, Format::RdfXml, &opts(OnError::Fail));
    assert_eq!((line, kind), (4, "entity too long"), "{reason}");
    assert!(
        reason.contains("the entity b expands to 2000 bytes"),
        "{reason}"
    );
    let uses = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ENTITY a \"{}\">]>\n<r>{}</r>\n",
        "a".repeat(300),
        "&a;".repeat(10)
    );
    let (line, reason, kind) = malformed(&uses, Format::RdfXml, &opts(OnError::Fail));
    assert_eq!((line, kind), (3, "statement too long"), "{reason}");
}

/// Damaged RDF/XML and TriG give a graph or an error, never a panic or a hang.
#[test]
fn rdf_xml_and_trig_survive_mutations() {
    let trig = "@prefix e: <http://e.org/> .\ne:a e:b e:c .\nGRAPH e:g { e:a e:b [ e:c ( 1 2 ) ] }\n{ e:d e:e \"\"\"x\ny\"\"\" }\n";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut below = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    const SPECIAL: &[u8] = b"<>/=\"'&;!-[]{}().\n \xff";
    for (format, sample) in [(Format::RdfXml, XML_SAMPLE), (Format::TriG, trig)] {
        for _ in 0..800 {
            let mut bytes = sample.as_bytes().to_vec();
            for _ in 0..1 + below(4) {
                let at = below(bytes.len() + 1);
                match below(3) {
                    0 if at < bytes.len() => bytes[at] ^= 1 << below(8),
                    1 => bytes.truncate(at),
                    _ => bytes.insert(at, SPECIAL[below(SPECIAL.len())]),
                }
            }
            for on_error in [OnError::Fail, OnError::Skip] {
                if let Ok((g, _)) = ingest_bytes(&bytes, format, &with(on_error, None)) {
                    g.validate().unwrap();
                }
            }
        }
    }
}
