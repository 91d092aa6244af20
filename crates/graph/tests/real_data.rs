//! Ingest of every shipped dataset, with counts checked against `datasets/README.md`, and snapshot
//! round trips (ingest -> snapshot -> load -> the same graph).

use std::path::{Path, PathBuf};

use gpsense_graph::ingest::{ingest, Columns, Format, IngestOptions, IngestReport, NoProgress};
use gpsense_graph::KnowledgeGraph;

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets")
        .join(rel)
}

fn load(paths: &[&str], opts: &IngestOptions) -> (KnowledgeGraph, IngestReport) {
    let paths: Vec<PathBuf> = paths.iter().map(|p| dataset(p)).collect();
    ingest(&paths, opts, &NoProgress).unwrap_or_else(|e| panic!("{e}"))
}

fn relation_count(g: &KnowledgeGraph, name: &str) -> u64 {
    let r = g
        .relation_id(name)
        .unwrap_or_else(|| panic!("no relation {name}"));
    g.relation_frequencies()[r as usize]
}

fn assert_round_trip(g: &KnowledgeGraph) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.gps");
    g.save(&path).unwrap();
    let back = KnowledgeGraph::load(&path).unwrap();
    assert!(back == *g, "snapshot round trip changed the graph");
    g.validate().unwrap();
}

#[test]
fn conceptnet_100k_train() {
    let (g, report) = load(&["conceptnet-100k/train.txt.gz"], &IngestOptions::default());
    assert_eq!(
        (g.edge_count(), g.node_count(), g.relation_count()),
        (100_000, 78_093, 34)
    );
    assert_eq!(report.files[0].format, Format::Triples);
    assert_eq!(report.files[0].columns, Some(Columns::RelHeadTail));
    assert_eq!(report.duplicates, 0);
    for (rel, n) in [
        ("IsA", 14_925),
        ("AtLocation", 14_380),
        ("UsedFor", 13_221),
        ("CapableOf", 9_894),
        ("HasProperty", 7_901),
    ] {
        assert_eq!(relation_count(&g, rel), n, "{rel}");
    }
    let (hockey, ice) = (
        g.node_id("hockey").unwrap(),
        g.node_id("play on ice").unwrap(),
    );
    assert!(g
        .out()
        .has_edge(hockey, g.relation_id("ReceivesAction"), ice));
    assert!(g
        .inc()
        .has_edge(ice, g.relation_id("ReceivesAction"), hockey));
    assert!(g.stats().topology_bytes_per_edge <= 14.0 && g.stats().topology_bytes_per_node <= 24.0);
    assert_round_trip(&g);
}

#[test]
fn gzip_and_plain_text_give_the_same_graph() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("valid.txt");
    std::fs::copy(dataset("conceptnet-100k/valid.txt"), &plain).unwrap();
    let gz = dir.path().join("valid.txt.gz");
    let mut enc = flate2_writer(&gz);
    std::io::Write::write_all(&mut enc, &std::fs::read(&plain).unwrap()).unwrap();
    enc.finish().unwrap();
    let a = ingest(&[plain], &IngestOptions::default(), &NoProgress)
        .unwrap()
        .0;
    let b = ingest(&[gz], &IngestOptions::default(), &NoProgress)
        .unwrap()
        .0;
    assert_eq!(a, b);
    assert_eq!(a.edge_count(), 1_200);
}

fn flate2_writer(path: &Path) -> flate2::write::GzEncoder<std::fs::File> {
    flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    )
}

#[test]
fn conceptnet5_dump_sample() {
    let (g, report) = load(
        &["conceptnet5-sample/assertions.csv"],
        &IngestOptions::default(),
    );
    let f = &report.files[0];
    assert_eq!(
        (f.format, f.lines, f.edges, f.filtered),
        (Format::ConceptNet, 764, 682, 82)
    );
    // 16 relations in the file; ExternalURL points outside ConceptNet and is filtered.
    assert_eq!(g.relation_count(), 15);
    assert!(g.relation_id("ExternalURL").is_none());
    assert!(g.node_id("/c/en/test/n/wikt/en_1").is_some());
    assert_round_trip(&g);

    let en = IngestOptions {
        languages: vec!["en".into()],
        strip_pos: true,
        ..Default::default()
    };
    let (g, report) = load(&["conceptnet5-sample/assertions.csv"], &en);
    assert!(report.files[0].filtered > 82);
    let (test, breeze) = (g.node_id("test").unwrap(), g.node_id("breeze").unwrap());
    assert!(g.out().has_edge(test, g.relation_id("Antonym"), breeze));
    assert!(
        g.node_id("hard questions").is_some(),
        "underscores become spaces"
    );
    assert!(g.nodes().iter().all(|(_, n)| !n.starts_with("/c/")));
}

#[test]
fn pattern_commonsense_csv_with_bom_and_quotes() {
    let (g, report) = load(
        &["pattern-commonsense/commonsense.csv"],
        &IngestOptions::default(),
    );
    assert_eq!(report.files[0].format, Format::Csv);
    assert_eq!(
        (g.edge_count(), g.node_count(), g.relation_count()),
        (9_215, 3_891, 7)
    );
    assert!(
        g.node_id("funny").is_some(),
        "the BOM is not part of the first concept"
    );
    assert!(g.node_id("\u{feff}funny").is_none());
    assert!(g.out().has_edge(
        g.node_id("saxophone").unwrap(),
        g.relation_id("is-a"),
        g.node_id("woodwind instrument").unwrap()
    ));
    assert_round_trip(&g);
}

#[test]
fn wordnet_nodes_and_edges() {
    // Edges first on purpose: node tables are read first whatever the order.
    let (g, _) = load(
        &[
            "wordnet30/wn30_synset.edges.tsv.gz",
            "wordnet30/wn30_synset.nodes.tsv.gz",
        ],
        &IngestOptions::default(),
    );
    assert_eq!(
        (g.node_count(), g.edge_count(), g.relation_count()),
        (117_659, 285_348, 22)
    );
    assert_eq!(relation_count(&g, "hyponym"), 89_089);
    assert_eq!(relation_count(&g, "cause"), 220);
    let entity = g.node_id("entity/00001740-n").unwrap();
    assert_eq!(g.node_label_names().name(g.node_label(entity)), "n");
    assert_eq!(
        g.node_label_names().len(),
        5,
        "n v a s r, and no placeholder"
    );
    assert_round_trip(&g);
}

#[test]
fn russian_conceptnet() {
    let (g, report) = load(
        &["russian-conceptnet/edges.tsv.gz"],
        &IngestOptions::default(),
    );
    assert_eq!(report.files[0].columns, Some(Columns::HeadRelTail));
    assert_eq!(
        (g.edge_count(), g.node_count(), g.relation_count()),
        (473_562, 403_420, 12)
    );
    let form_of = relation_count(&g, "FormOf") as f64 / g.edge_count() as f64;
    assert!((0.70..0.72).contains(&form_of), "{form_of}");
    assert!(g.out().has_edge(
        g.node_id("протоколе").unwrap(),
        g.relation_id("FormOf"),
        g.node_id("протокол").unwrap()
    ));
    assert_round_trip(&g);
}

#[test]
fn benchmark_format_hprd_and_yeast() {
    let (g, _) = load(
        &["subgraph-matching/hprd-study/data_graph/HPRD.graph"],
        &IngestOptions::default(),
    );
    assert_eq!(
        (g.node_count(), g.edge_count(), g.node_label_names().len()),
        (9_460, 2 * 34_998, 307)
    );
    // Vertex i is node i, and every edge is stored both ways.
    assert_eq!(g.node_name(42), "42");
    assert!(g.edges().all(|(u, r, v)| g.out().has_edge(v, Some(r), u)));
    assert_round_trip(&g);
    let (y, _) = load(
        &["subgraph-matching/yeast/data_graph/yeast.graph"],
        &IngestOptions::default(),
    );
    assert_eq!(
        (y.node_count(), y.edge_count(), y.node_label_names().len()),
        (3_112, 2 * 12_519, 71)
    );
}

#[test]
fn petgraph_round_trip_on_real_data() {
    let (g, _) = load(
        &["pattern-commonsense/commonsense.csv"],
        &IngestOptions::default(),
    );
    let pg = g.to_petgraph();
    assert_eq!(
        (pg.node_count(), pg.edge_count()),
        (g.node_count(), g.edge_count())
    );
    let back = KnowledgeGraph::from_petgraph(&pg).unwrap();
    // Weights do not travel through petgraph's string edges, and relation ids may be renumbered;
    // the named triples and node ids do.
    let named = |g: &KnowledgeGraph| {
        let mut t: Vec<(u32, String, u32)> = g
            .edges()
            .map(|(s, r, t)| (s, g.relation_name(r).to_owned(), t))
            .collect();
        t.sort();
        t
    };
    assert!(
        named(&back) == named(&g),
        "petgraph round trip changed the triples"
    );
    assert!(back.nodes() == g.nodes());
}
