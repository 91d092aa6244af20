//! Unicode end to end: the Russian part of ConceptNet 5.7 (`datasets/russian-conceptnet`).

use std::path::Path;
use std::time::Instant;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_planner::{compile, plan_with, PlannerStats, QueryError};

#[test]
fn russian_concepts_resolve_plan_and_suggest() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/russian-conceptnet/edges.tsv.gz");
    let (g, _) =
        ingest(&[path], &IngestOptions::default(), &NoProgress).unwrap_or_else(|e| panic!("{e}"));
    let stats = PlannerStats::new(&g);

    let text = "SELECT ?кто WHERE {\n  ?кто IsA животное .   # animals\n  ?кто IsA хищник .\n  ?кто DistinctFrom собака\n}";
    let q = compile(text, &g).unwrap_or_else(|e| panic!("{}", e.render(text)));
    let names: Vec<&str> = q.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["?кто", "животное", "хищник", "собака"]);
    let p = plan_with(&q, &g, &stats);
    p.validate(&q).unwrap();
    // кошка is an answer: IsA животное, IsA хищник, DistinctFrom собака.
    let cat = g.node_id("кошка").unwrap();
    for (r, t) in [
        ("IsA", "животное"),
        ("IsA", "хищник"),
        ("DistinctFrom", "собака"),
    ] {
        assert!(
            g.out()
                .has_edge(cat, g.relation_id(r), g.node_id(t).unwrap()),
            "{r} {t}"
        );
    }

    let text = "SELECT ?x { ?x IsA живтное }";
    let start = Instant::now();
    let e = compile(text, &g).unwrap_err();
    println!(
        "suggestions over {} concepts: {:?}",
        g.node_count(),
        start.elapsed()
    );
    let QueryError::UnknownConcept {
        suggestions,
        column,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(suggestions[0], "животное");
    assert_eq!(*column, 20);
    assert!(
        e.render(text)
            .ends_with(&format!("  | {}^", " ".repeat(19))),
        "{}",
        e.render(text)
    );
}
