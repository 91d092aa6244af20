//! Leaves counted on the device (the emulated GPU pipeline) instead of enumerated: the counts of
//! the WordNet star queries of the H100 table equal `dfs`'s under both semantics, and the join
//! produces at most 1/100 of the partial matches it did (the old pipeline's last level enumerated
//! every match, so its partial matches were at least the count).

use std::path::Path;
use std::sync::OnceLock;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{compile, QueryGraph};
use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};

fn wordnet() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/wordnet30");
        let files = ["wn30_synset.nodes.tsv.gz", "wn30_synset.edges.tsv.gz"].map(|f| dir.join(f));
        ingest(&files, &IngestOptions::default(), &NoProgress)
            .unwrap_or_else(|e| panic!("{e}"))
            .0
    })
}

fn compiled(text: &str) -> QueryGraph {
    compile(text, wordnet()).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn options(engine: EngineKind, semantics: Semantics) -> MatchOptions {
    MatchOptions {
        engine,
        semantics,
        ..MatchOptions::default()
    }
}

const STARS: [&str; 2] = [
    "SELECT * WHERE { ?a hyponym ?b . ?a hyponym ?c . ?a hyponym ?d }",
    "SELECT * WHERE { ?a hypernym ?x . ?b hypernym ?x . ?c hypernym ?x . ?a ?r ?d }",
];

#[test]
fn wordnet_stars_count_their_leaves_on_the_device() {
    let engine = Engine::new(wordnet());
    for text in STARS {
        let q = compiled(text);
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let dfs = engine
                .count(&q, &options(EngineKind::Dfs, semantics))
                .unwrap();
            let gpu = engine
                .count(&q, &options(EngineKind::Emulated, semantics))
                .unwrap();
            assert_eq!(gpu.rows, dfs.rows, "{semantics}: {text}");
            let partial = gpu.device_report.unwrap().partial_matches;
            println!(
                "{semantics}: {} matches, {partial} partial matches: {text}",
                gpu.rows
            );
            assert!(
                u128::from(partial) * 100 <= gpu.rows,
                "{semantics}: {partial} partial matches for {} matches: {text}",
                gpu.rows
            );
        }
    }
}

/// A LIMIT still stops the count early, and rows (no leaf counting) still agree.
#[test]
fn a_limit_stops_a_leaf_count_and_rows_are_unchanged() {
    let engine = Engine::new(wordnet());
    let mut q = compiled(STARS[0]);
    q.limit = Some(10);
    let opts = options(EngineKind::Emulated, Semantics::Iso);
    let count = engine.count(&q, &opts).unwrap();
    assert_eq!(count.rows, 10);
    let (rows, report) = engine.collect(&q, &opts).unwrap();
    assert_eq!((rows.len(), report.rows), (10, 10));
}

/// A LIMIT above the rows the last level's first buffer holds (16,384) still gives every row it
/// asks for: the level is run again with room for them, not cut at its buffer.
#[test]
fn rows_under_a_limit_past_the_first_buffer_are_all_given() {
    let engine = Engine::new(wordnet());
    for text in [
        STARS[0],
        "SELECT * WHERE { ?a hyponym ?b . ?b hyponym ?c }",
        "SELECT * WHERE { ?a ?r ?b . ?b hypernym ?c }",
        "SELECT * WHERE { ?a hypernym ?b }",
    ] {
        let mut q = compiled(text);
        q.limit = Some(20_000);
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let (rows, report) = engine
                .collect(&q, &options(EngineKind::Emulated, semantics))
                .unwrap();
            assert_eq!(rows.len(), 20_000, "{semantics}: {text}");
            assert!(report.limit_reached, "{semantics}: {text}");
        }
    }
}

/// `?s p ?x . ?s q ?y . ?x r ?y` on a graph where each of 100 `?s` nodes has 1,000 `?x` and 400
/// `?y` neighbours, and each `?y` one `?x`. The default order takes `?x` (fewer candidates) after
/// `?s`, 100,100 partial matches; samples of the data show `?y` first leaves 40,100, `?x` then
/// counted. The count is unchanged.
#[test]
fn a_count_joins_in_the_order_its_samples_estimate_cheapest() {
    let mut b = gpsense_graph::GraphBuilder::new();
    for i in 0..100 {
        for k in 0..1000 {
            b.add_triple(&format!("s{i}"), "p", &format!("x{k}"), 1.0)
                .unwrap();
        }
        for m in 0..400 {
            let l = (i * 40 + m) % 4000;
            b.add_triple(&format!("s{i}"), "q", &format!("y{l}"), 1.0)
                .unwrap();
        }
    }
    for l in 0..4000 {
        b.add_triple(&format!("x{}", l % 1000), "r", &format!("y{l}"), 1.0)
            .unwrap();
    }
    let g = b.build().unwrap().0;
    let engine = Engine::new(&g);
    let q = compile("SELECT * WHERE { ?s p ?x . ?s q ?y . ?x r ?y }", &g).unwrap();
    let dfs = engine
        .count(&q, &options(EngineKind::Dfs, Semantics::Iso))
        .unwrap();
    let gpu = engine
        .count(&q, &options(EngineKind::Emulated, Semantics::Iso))
        .unwrap();
    assert_eq!((gpu.rows, dfs.rows), (40_000, 40_000));
    let names: Vec<&str> = gpu
        .join_plan
        .order
        .iter()
        .map(|&u| q.nodes[u].name.as_str())
        .collect();
    assert_eq!(names, ["?s", "?y", "?x"], "{:#?}", gpu.join_plan.rationale);
    assert!(gpu.join_plan.rationale[0].contains("samples of the data"));
    assert_eq!(gpu.device_report.unwrap().partial_matches, 40_100);

    // Behind other queries in a batch (its candidate sets then lie past theirs in the batch's
    // one read), its samples see its own sets: the same order.
    let other = compile("SELECT * WHERE { ?a r ?b . ?c p ?a }", &g).unwrap();
    let opts = options(EngineKind::Emulated, Semantics::Iso);
    let batch = engine.count_batch(&[(&other, &opts), (&other, &opts), (&q, &opts)]);
    let last = batch.reports[2].as_ref().unwrap();
    assert_eq!(last.rows, 40_000);
    assert_eq!(
        last.join_plan.order, gpu.join_plan.order,
        "{:#?}",
        last.join_plan.rationale
    );
}
