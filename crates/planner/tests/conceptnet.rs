//! Queries over the real ConceptNet-100K (`datasets/conceptnet-100k/train.txt.gz`): resolution,
//! suggestions for misspelt names, matching order, and the per-query time budget.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::parse::quote_if_needed;
use gpsense_planner::{
    compile, plan_with, NodeKind, PlannerStats, Projected, QueryError, QueryGraph,
};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets")
        .join(rel)
}

/// Ingested once per test binary.
fn conceptnet() -> &'static (KnowledgeGraph, PlannerStats) {
    static GRAPH: OnceLock<(KnowledgeGraph, PlannerStats)> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let path = dataset("conceptnet-100k/train.txt.gz");
        let (g, _) = ingest(&[path], &IngestOptions::default(), &NoProgress)
            .unwrap_or_else(|e| panic!("{e}"));
        let stats = PlannerStats::new(&g);
        (g, stats)
    })
}

fn compiled(text: &str, g: &KnowledgeGraph) -> QueryGraph {
    compile(text, g).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn suggestions(text: &str, g: &KnowledgeGraph) -> Vec<String> {
    match compile(text, g) {
        Err(QueryError::UnknownConcept { suggestions, .. })
        | Err(QueryError::UnknownRelation { suggestions, .. }) => suggestions,
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn animals_at_home() {
    let (g, stats) = conceptnet();
    let q = compiled("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", g);
    let names: Vec<&str> = q.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["?x", "animal", "home"]);
    assert_eq!(q.projection, [Projected::Node(0)]);
    // A known answer, so the pattern is not vacuous.
    let (lizard, animal, home) = (
        g.node_id("lizard").unwrap(),
        g.node_id("animal").unwrap(),
        g.node_id("home").unwrap(),
    );
    let (isa, at) = (
        g.relation_id("IsA").unwrap(),
        g.relation_id("AtLocation").unwrap(),
    );
    assert!(g.out().has_edge(lizard, Some(isa), animal));
    assert!(g.out().has_edge(lizard, Some(at), home));
    // home has 108 AtLocation in-neighbours, animal 112 IsA ones: start at home.
    assert_eq!(g.inc().degree_by_label(home, at), 108);
    assert_eq!(g.inc().degree_by_label(animal, isa), 112);
    let p = plan_with(&q, g, stats);
    p.validate(&q).unwrap();
    assert_eq!(p.order, [2, 0, 1]);
    assert!(
        p.rationale[0].contains("has 108 data neighbours"),
        "{:?}",
        p.rationale
    );
}

#[test]
fn multi_word_and_punctuated_concepts() {
    let (g, stats) = conceptnet();
    let q = compiled(
        "SELECT * { \"birthday cake\" HasA ?what . ?what AtLocation ?where . ?x IsA \"4.5 billion year old\" }",
        g,
    );
    assert!(matches!(q.nodes[0].kind, NodeKind::Concept(_)));
    assert_eq!(q.components().len(), 2);
    plan_with(&q, g, stats).validate(&q).unwrap();
    // Dotted and apostrophe names work bare; a name ending in a dot needs quotes.
    let q = compiled(
        "SELECT ?x { ?x IsA baha'i . ?x IsA naver.com . ?x IsA t.h.c.}",
        g,
    );
    let names: Vec<&str> = q.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["?x", "baha'i", "naver.com", "t.h.c"]);
    compiled("SELECT ?x { ?x IsA \"'puppies.'\" }", g);
}

#[test]
fn misspelt_concepts_suggest_real_ones() {
    let (g, _) = conceptnet();
    // ConceptNet-100K has "birthday cake" but no "chocolate cake".
    assert!(g.node_id("chocolate cake").is_none());
    let s = suggestions("SELECT ?x { ?x HasA \"birthday cakes\" }", g);
    assert_eq!(s[0], "birthday cake");
    assert_eq!(s.len(), 5);
    let s = suggestions("SELECT ?x { ?x HasA \"chocolate cakes\" }", g);
    assert!(s.contains(&"chocolate".to_owned()), "{s:?}");
    // Ties at one edit go to the better-connected concept.
    let s = suggestions("SELECT ?x { ?x IsA animl }", g);
    assert_eq!(s[0], "animal");
    let e = compile("SELECT ?x { ?x IsA animl }", g).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("line 1, column 20: unknown concept \"animl\"; did you mean \"animal\""),
        "{e}"
    );
}

#[test]
fn misspelt_relations_suggest_the_right_case_first() {
    let (g, _) = conceptnet();
    assert_eq!(suggestions("SELECT ?x { ?x isa animal }", g)[0], "IsA");
    assert_eq!(
        suggestions("SELECT ?x { ?x atlocation home }", g)[0],
        "AtLocation"
    );
    assert_eq!(suggestions("SELECT ?x { ?x UsedFr eat }", g)[0], "UsedFor");
}

#[test]
fn suggestions_are_fast() {
    let (g, _) = conceptnet();
    let texts = [
        "SELECT ?x { ?x HasA \"chocolate cakes\" }",
        "SELECT ?x { ?x IsA qwertyuiopasdfghjklzxcv }",
        "SELECT ?x { ?x IsA dgo }",
    ];
    for text in texts {
        let start = Instant::now();
        assert!(compile(text, g).is_err());
        let took = start.elapsed();
        println!("{text}: {took:?}");
        // A few ms in release; generous for unoptimised builds on a loaded machine.
        assert!(took.as_millis() < 2_000, "{text}: {took:?}");
    }
}

/// Two- and three-triple queries built from the held-out test triples whose names exist in train.
fn generated_queries(g: &KnowledgeGraph) -> Vec<String> {
    let text = std::fs::read_to_string(dataset("conceptnet-100k/test.txt")).unwrap();
    let triples: Vec<[&str; 3]> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() >= 3).then(|| [f[0], f[1], f[2]])
        })
        .filter(|[r, _, t]| g.relation_id(r).is_some() && g.node_id(t).is_some())
        .collect();
    let q = quote_if_needed;
    triples
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let ([r1, _, t1], [r2, _, t2]) = (w[0], w[1]);
            if i % 2 == 0 {
                format!(
                    "SELECT ?x {{ ?x {} {} . ?x {} {} }}",
                    q(r1),
                    q(t1),
                    q(r2),
                    q(t2)
                )
            } else {
                format!(
                    "SELECT * {{ ?x {} {} . ?x ?r ?y . ?y {} {} }} LIMIT 10",
                    q(r1),
                    q(t1),
                    q(r2),
                    q(t2)
                )
            }
        })
        .collect()
}

#[test]
fn generated_queries_compile_and_plan_within_budget() {
    let (g, stats) = conceptnet();
    let queries = generated_queries(g);
    assert!(queries.len() > 500, "{}", queries.len());
    let start = Instant::now();
    for text in &queries {
        let q = compiled(text, g);
        let p = plan_with(&q, g, stats);
        p.validate(&q).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            q.nodes[p.order[0]].kind != NodeKind::Variable,
            "{text}: {p:?}"
        );
    }
    let per_query = start.elapsed() / queries.len() as u32;
    println!(
        "compile + plan: {per_query:?} per query over {}",
        queries.len()
    );
    // The whole per-query budget of the runtime is 1 ms (release); leave room for debug builds.
    assert!(per_query.as_micros() < 5_000, "{per_query:?}");
}
