//! The library's front door on the embedded ConceptNet-100K: both dialects, every answer form, the
//! builder's options, compression and TruST, and bad input as errors that name the problem.

use std::sync::OnceLock;
use std::time::Duration;

use gpsense::{EngineKind, Error, Graph, Semantics};

fn graph() -> &'static Graph {
    static G: OnceLock<Graph> = OnceLock::new();
    G.get_or_init(|| Graph::embedded().expect("the embedded graph loads"))
}

const PREFIXES: &str =
    "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> ";

#[test]
fn both_dialects_give_the_same_rows() {
    let short = graph()
        .query("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }")
        .semantics(Semantics::Hom)
        .run()
        .unwrap();
    let standard = graph()
        .query(format!(
            "{PREFIXES} SELECT ?x WHERE {{ ?x r:IsA c:animal . ?x r:AtLocation c:home }}"
        ))
        .run()
        .unwrap();
    let names = |a: &gpsense::Answer| {
        let mut v: Vec<String> = a.rows().map(|r| r.get("x").unwrap().to_owned()).collect();
        v.sort();
        v
    };
    assert!(!short.is_empty());
    // The standard path names nodes by their IRIs' local names on ConceptNet (aliases).
    assert_eq!(names(&short).len(), names(&standard).len());
}

#[test]
fn count_agrees_with_the_rows_and_with_every_engine() {
    let q = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }";
    let rows = graph().query(q).run().unwrap().len() as u128;
    for engine in [EngineKind::Dfs, EngineKind::Emulated, EngineKind::Kernels] {
        assert_eq!(
            graph().query(q).engine(engine).count().unwrap(),
            rows,
            "{engine:?}"
        );
    }
}

#[test]
fn the_full_evaluator_gives_unbound_values_and_triples() {
    let optional = graph()
        .query(format!(
            "{PREFIXES} SELECT ?x ?w WHERE {{ ?x r:IsA c:animal OPTIONAL {{ ?x r:NoSuchRelation ?w }} }} LIMIT 3"
        ))
        .run()
        .unwrap();
    assert_eq!(optional.columns(), ["x", "w"]);
    assert_eq!(optional.len(), 3);
    assert!(
        optional
            .rows()
            .all(|r| r.get("x").is_some() && r.get("w").is_none())
    );
    let construct = graph()
        .query(format!(
            "{PREFIXES} CONSTRUCT {{ ?x r:Kind c:animal }} WHERE {{ ?x r:IsA c:animal }} LIMIT 2"
        ))
        .run()
        .unwrap();
    assert_eq!(construct.columns(), ["subject", "predicate", "object"]);
    assert_eq!(construct.len(), 2);
}

#[test]
fn count_and_ask_forms() {
    let count = graph()
        .query(format!(
            "{PREFIXES} SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"
        ))
        .run()
        .unwrap();
    assert_eq!(count.columns(), ["n"]);
    let n: u128 = count
        .rows()
        .next()
        .unwrap()
        .get("n")
        .unwrap()
        .parse()
        .unwrap();
    let listed = graph()
        .query(format!(
            "{PREFIXES} SELECT ?x WHERE {{ ?x r:IsA c:animal }}"
        ))
        .run()
        .unwrap();
    assert_eq!(n, listed.len() as u128);
    let ask = format!("{PREFIXES} ASK {{ c:dog r:IsA c:domestic_animal }}");
    assert_eq!(graph().query(&ask).run().unwrap().boolean(), Some(true));
    assert_eq!(graph().query(&ask).count().unwrap(), 1);
}

#[test]
fn a_time_limit_is_an_error_not_a_partial_answer() {
    let q = "SELECT * WHERE { ?a IsA ?b . ?c IsA ?b . ?c IsA ?d . ?e IsA ?d }";
    let err = graph()
        .query(q)
        .engine(EngineKind::Dfs)
        .timeout(Duration::from_millis(1))
        .run()
        .unwrap_err();
    assert!(matches!(err, Error::TimedOut), "{err}");
}

#[test]
fn bad_queries_name_the_problem() {
    let unknown = graph()
        .query("SELECT ?x WHERE { ?x IsA animl }")
        .run()
        .unwrap_err();
    assert!(
        unknown.to_string().contains("unknown concept \"animl\""),
        "{unknown}"
    );
    let syntax = graph()
        .query("SELECT ?x WHERE { ?x IsA }")
        .run()
        .unwrap_err();
    assert!(syntax.to_string().contains("line 1"), "{syntax}");
    let trust = graph().trust("SELECT * WHERE { ").run().unwrap_err();
    assert!(matches!(trust, Error::Trust { .. }), "{trust}");
    let beam = graph()
        .trust(r#"SELECT * WHERE { "dgo" IsA ?x }"#)
        .beam(2)
        .top(5)
        .run();
    assert!(beam.unwrap_err().to_string().contains("beam"));
}

#[test]
fn a_compressed_graph_answers_as_the_original_and_survives_a_save() {
    let small = graph()
        .compress(&gpsense::CompressOptions::default())
        .unwrap();
    assert!(small.with_matcher(|m| m.compressed().is_some()));
    let q = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y AtLocation home }";
    let want = graph().query(q).count().unwrap();
    assert_eq!(small.query(q).count().unwrap(), want);
    let dir = std::env::temp_dir().join(format!("gpsense-facade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("small.gpsc");
    small.save(&path).unwrap();
    let again = Graph::open(&path).unwrap();
    assert_eq!(again.query(q).count().unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// TruST on each engine gives the CPU's ranking; the graph keeps its name index and device, so
/// a second search sends the device its candidates' ids only (the first sent the index's texts
/// too); `Gpu` without a GPU is an error that says so.
#[test]
fn trust_runs_on_each_engine_and_keeps_its_device() {
    use gpsense::trust::TrustEngine;
    let q = r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#;
    let g = gpsense::Graph::embedded().unwrap();
    let cpu = g.trust(q).top(5).run().unwrap();
    assert!(cpu.device.is_none());
    let run = || {
        g.trust(q)
            .top(5)
            .engine(TrustEngine::Emulated)
            .run()
            .unwrap()
    };
    let (first, again) = (run(), run());
    assert_eq!(first.matches, cpu.matches);
    assert_eq!(again.matches, cpu.matches);
    let up = |a: &gpsense::trust::Answer| a.device.as_ref().unwrap().counters.bytes_up;
    assert!(
        up(&again) < up(&first),
        "{} then {}",
        up(&first),
        up(&again)
    );
    if g.with_matcher(|m| m.engine().gpu().is_err()) {
        let e = g.trust(q).engine(TrustEngine::Gpu).run().unwrap_err();
        assert!(e.to_string().contains("no GPU"), "{e}");
        let auto = g.trust(q).top(5).engine(TrustEngine::Auto).run().unwrap();
        assert_eq!(auto.matches, cpu.matches);
    }
}

/// TruST on a device shares the matching's device state and its copy of the graph, except on a
/// compressed graph, whose device holds the compressed graph: there it uploads the original.
#[test]
fn trust_opens_on_the_matchers_device_unless_it_holds_a_compressed_graph() {
    use gpsense::trust::{Opened, TrustEngine};
    let opened = |m: &gpsense::Matcher| match m.open_trust(TrustEngine::Emulated) {
        Ok(Opened::Emulated(d)) => d,
        _ => panic!("expected the emulator"),
    };
    graph().with_matcher(|m| {
        let d = opened(m);
        let shared = m.engine().emulated().unwrap();
        assert!(std::sync::Arc::ptr_eq(d.state(), &shared));
    });
    let small = graph()
        .compress(&gpsense::CompressOptions::default())
        .unwrap();
    small.with_matcher(|m| {
        let d = opened(m);
        assert_eq!(d.state().graph().nodes, m.graph().node_count());
        assert_ne!(d.state().graph().nodes, m.engine().graph().node_count());
    });
}

#[test]
fn a_missing_or_corrupt_file_is_an_error() {
    let dir = std::env::temp_dir().join(format!("gpsense-facade-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Graph::open(dir.join("absent.gps")).is_err());
    let bad = dir.join("bad.gps");
    let mut bytes = std::fs::read(dir.join("absent.gps")).unwrap_or_default();
    bytes.extend_from_slice(b"GPSNAP\0\0 truncated");
    std::fs::write(&bad, &bytes).unwrap();
    assert!(Graph::open(&bad).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A FILTER restricting a predicate variable to relations goes to the native evaluator (which
/// reads those relations' edges), with the rows of the patterns naming them.
#[test]
fn a_predicate_variable_restricted_by_filter_reads_only_its_relations() {
    let q = format!(
        "{PREFIXES} SELECT ?x ?r ?y WHERE {{ ?x ?r ?y FILTER(?r IN (r:MadeOf, r:PartOf)) }}"
    );
    let explain = graph().query(q.as_str()).explain().unwrap();
    assert!(explain.contains("evaluator: native evaluator"), "{explain}");
    let each = |r: &str| {
        graph()
            .query(format!("{PREFIXES} SELECT ?x ?y WHERE {{ ?x r:{r} ?y }}"))
            .count()
            .unwrap()
    };
    let total = each("MadeOf") + each("PartOf");
    assert!(total > 0);
    assert_eq!(graph().query(q.as_str()).count().unwrap(), total);
}
