use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions};

use super::*;
use crate::query::{compile, NodeKind, QueryEdge, QueryNode};
use crate::testutil::small;

/// Checks the guarantees of [`Plan`] for `q` and returns the order as node names.
fn check(q: &QueryGraph, p: &Plan) -> Vec<String> {
    if let Err(e) = p.validate(q) {
        panic!("{e}: {p:?}");
    }
    p.order.iter().map(|&u| q.nodes[u].name.clone()).collect()
}

#[test]
fn validate_catches_broken_plans() {
    let g = small();
    let q = compile(
        "SELECT * { ?a IsA animal . ?a AtLocation home . ?b IsA ?c }",
        &g,
    )
    .unwrap();
    let good = plan(&q, &g);
    assert_eq!(good.validate(&q), Ok(()));
    // Nodes: ?a 0, animal 1, home 2, ?b 3, ?c 4. Any connected order of a component is valid...
    let mut bad = good.clone();
    bad.order = vec![1, 0, 2, 3, 4];
    assert!(bad.validate(&q).is_ok());
    // ...but home, animal, ?a is not: animal has no edge to home.
    bad.order = vec![2, 1, 0, 3, 4];
    assert!(bad
        .validate(&q)
        .unwrap_err()
        .0
        .contains("no edge to an earlier node"));
    let mut bad = good.clone();
    bad.order[0] = bad.order[1];
    assert!(bad.validate(&q).is_err());
    let mut bad = good.clone();
    bad.components = vec![0..2, 2..5];
    assert!(bad.validate(&q).is_err());
    let mut bad = good.clone();
    bad.rationale.pop();
    assert!(bad.validate(&q).is_err());
}

fn order(text: &str, g: &KnowledgeGraph) -> Vec<String> {
    let q = compile(text, g).unwrap_or_else(|e| panic!("{}", e.render(text)));
    let p = plan(&q, g);
    assert_eq!(p, plan_with(&q, g, &PlannerStats::new(g)));
    check(&q, &p)
}

#[test]
fn starts_at_the_most_selective_concept() {
    let g = small();
    // animal has 3 IsA in-neighbours, desert 1 AtLocation in-neighbour, home 2.
    let o = order("SELECT ?x { ?x IsA animal . ?x AtLocation desert }", &g);
    assert_eq!(o, ["desert", "?x", "animal"]);
    let o = order("SELECT ?x { ?x AtLocation home . ?x IsA animal }", &g);
    assert_eq!(o, ["home", "?x", "animal"]);
}

#[test]
fn concepts_join_before_variables() {
    let g = small();
    // After `desert` and ?x, both `animal` (a concept) and ?y (covering more) are reachable.
    let o = order(
        "SELECT * { ?x AtLocation desert . ?x IsA animal . ?x ?r ?y . ?y ?s ?z . ?y ?t ?w }",
        &g,
    );
    assert_eq!(o[..4], ["desert", "?x", "animal", "?y"]);
}

#[test]
fn variables_by_cover_then_estimate() {
    let g = small();
    // From ?x: ?a leads on to two more nodes, ?b to none.
    let o = order(
        "SELECT * { ?x AtLocation desert . ?x ?r ?b . ?x ?s ?a . ?a ?t ?c . ?a ?u ?d }",
        &g,
    );
    assert_eq!(o[..3], ["desert", "?x", "?a"]);
    // Equal cover: from ?x, ?a is reached by an incoming IsA (5 edges over 3 targets: ~1.7
    // candidates per ?x), ?b by an incoming Desires (1 edge, 1 target): ?b first.
    let o = order("SELECT * { cat ?r ?x . ?a IsA ?x . ?b Desires ?x }", &g);
    assert_eq!(o, ["cat", "?x", "?b", "?a"]);
}

#[test]
fn a_concept_with_no_matching_edges_starts_first() {
    let g = small();
    // `sweet` has no IsA in-neighbour at all: the query is empty, and planning there finds out fastest.
    let o = order("SELECT ?x { ?x IsA animal . ?x IsA sweet }", &g);
    assert_eq!(o[0], "sweet");
}

#[test]
fn components_are_planned_separately() {
    let g = small();
    let q = compile(
        "SELECT * { ?a IsA animal . ?b ?r ?c . ?c HasA chocolate . ?d ?s ?d }",
        &g,
    )
    .unwrap();
    let p = plan(&q, &g);
    let names = check(&q, &p);
    assert_eq!(p.components.len(), 3);
    assert_eq!(names[p.components[0].clone()], ["animal", "?a"]);
    assert_eq!(names[p.components[1].start], "chocolate");
    assert_eq!(names[p.components[2].clone()], ["?d"]);
}

#[test]
fn rationale_explains_each_step() {
    let g = small();
    let q = compile("SELECT ?x { ?x IsA animal . ?x AtLocation desert }", &g).unwrap();
    let p = plan(&q, &g);
    assert!(
        p.rationale[0].starts_with("1. desert: start: concept"),
        "{:?}",
        p.rationale
    );
    assert!(
        p.rationale[0].ends_with("AtLocation in) has 1 data neighbour"),
        "{:?}",
        p.rationale
    );
    assert!(
        p.rationale[1].starts_with("2. ?x: 1 edge to earlier nodes"),
        "{:?}",
        p.rationale
    );
    assert!(
        p.rationale[1].ends_with("~1 candidate"),
        "{:?}",
        p.rationale
    );
    assert!(
        p.rationale[2].starts_with("3. animal: concept"),
        "{:?}",
        p.rationale
    );
}

fn bench(text: &str) -> KnowledgeGraph {
    ingest_bytes(
        text.as_bytes(),
        Format::Benchmark,
        &IngestOptions::default(),
    )
    .unwrap()
    .0
}

/// Labels A (3 nodes), B (1), C (2).
fn labelled_data() -> KnowledgeGraph {
    bench("t 6 5\nv 0 A 1\nv 1 B 3\nv 2 A 2\nv 3 C 1\nv 4 A 1\nv 5 C 2\ne 0 1\ne 1 2\ne 1 5\ne 2 3\ne 4 5\n")
}

fn bench_order(query: &str, data: &KnowledgeGraph) -> (Vec<String>, Plan) {
    let q = crate::query::benchmark_query(&bench(query), data).unwrap();
    let p = plan(&q, data);
    (check(&q, &p), p)
}

#[test]
fn variable_only_components_use_degree_over_label_frequency() {
    let data = labelled_data();
    // Path A - B - C - A: ranks 1/3, 2/1, 2/2, 1/3: start at B, then C (rank 1) before A (1/3).
    let (o, p) = bench_order(
        "t 4 3\nv 0 A 1\nv 1 B 2\nv 2 C 2\nv 3 A 1\ne 0 1\ne 1 2\ne 2 3\n",
        &data,
    );
    assert_eq!(o, ["?u1", "?u2", "?u0", "?u3"]);
    assert!(
        p.rationale[0].contains("start: highest rank, rank deg/freq = 2/1"),
        "{p:?}"
    );
}

#[test]
fn rank_ties_prefer_more_edges_to_visited_nodes() {
    let data = labelled_data();
    // All label A. u0 (degree 3) starts; u1, u2, u3 tie on rank 2/3 with one link each, so u1
    // (lowest index) follows; then u3, linked to both u0 and u1, beats u2 at the same rank.
    let (o, _) = bench_order(
        "t 5 5\nv 0 A 3\nv 1 A 2\nv 2 A 2\nv 3 A 2\nv 4 A 1\ne 0 1\ne 0 2\ne 0 3\ne 1 3\ne 2 4\n",
        &data,
    );
    assert_eq!(o, ["?u0", "?u1", "?u3", "?u2", "?u4"]);
}

#[test]
fn an_absent_label_starts_first() {
    let data = labelled_data();
    let (o, _) = bench_order("t 3 2\nv 0 A 1\nv 1 B 2\nv 2 Q 1\ne 0 1\ne 1 2\n", &data);
    assert_eq!(o[0], "?u2");
}

#[test]
fn unlabelled_variables_use_relation_frequencies() {
    let g = small();
    // ?x has an outgoing HasA (1 source in the data); ?y only an IsA (5 sources).
    let o = order("SELECT * { ?y IsA ?x . ?x HasA ?z }", &g);
    assert_eq!(o[0], "?x");
}

#[test]
fn statistics() {
    let g = small();
    let s = PlannerStats::new(&g);
    let isa = g.relation_id("IsA").unwrap();
    assert_eq!(s.node_count(), g.node_count() as u64);
    assert_eq!(s.edge_count(), 11);
    assert_eq!(s.relation_frequency(isa), 5);
    assert_eq!(s.relation_endpoints(isa, true), 5);
    assert_eq!(s.relation_endpoints(isa, false), 3); // animal, dessert, животное
    assert!((s.fanout(isa, false) - 5.0 / 3.0).abs() < 1e-9);
    // Each node is one thing; `animal` has three kinds, `home` two dwellers.
    assert_eq!(s.longest_list(isa, true), 1);
    assert_eq!(s.longest_list(isa, false), 3);
    let at = g.relation_id("AtLocation").unwrap();
    assert_eq!(s.longest_list(at, false), 2);
    assert_eq!(s.longest_list(999, true), 0);
    // `cat`: IsA, AtLocation, Desires; `animal`: three IsA.
    assert_eq!((s.longest_any(true), s.longest_any(false)), (3, 3));
    assert_eq!(s.label_frequency(0), g.node_count() as u64);
    assert_eq!(s.label_frequency(1), 0);
    assert_eq!(s.relation_frequency(999), 0);
    let data = labelled_data();
    let s = PlannerStats::new(&data);
    let a = data.node_label_names().get("A").unwrap();
    assert_eq!(s.label_frequency(a), 3);
    assert_eq!(s.label_frequency(u32::MAX), 0);
}

/// A tiny deterministic generator, so the test needs no dependency.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn random_query_graphs_keep_every_guarantee() {
    let g = small();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..500 {
        let n = 1 + rng.below(8);
        // Concepts with one data node (some out of range), or a set of two.
        let mut concept_sets = Vec::new();
        let nodes: Vec<QueryNode> = (0..n)
            .map(|i| {
                let kind = match rng.below(6) {
                    0 | 1 => NodeKind::Concept(rng.below(g.node_count() + 2) as u32),
                    2 => {
                        let a = rng.below(g.node_count()) as u32;
                        concept_sets.push(vec![a, a + 1 + rng.below(2) as u32]);
                        NodeKind::ConceptSet(concept_sets.len() - 1)
                    }
                    _ => NodeKind::Variable,
                };
                QueryNode {
                    name: format!("n{i}"),
                    kind,
                    label: None,
                }
            })
            .collect();
        let edges: Vec<QueryEdge> = (0..rng.below(2 * n + 1))
            .map(|_| QueryEdge {
                source: rng.below(n),
                target: rng.below(n),
                label: if rng.below(4) == 0 {
                    EdgeLabel::Variable(0)
                } else {
                    EdgeLabel::Fixed(rng.below(g.relation_count() + 1) as u16)
                },
            })
            .collect();
        let q = QueryGraph {
            nodes,
            edges,
            edge_variables: vec!["?r".into()],
            concept_sets,
            projection: Vec::new(),
            distinct: false,
            limit: None,
        };
        let p = plan(&q, &g);
        check(&q, &p);
        for range in &p.components {
            let first = &q.nodes[p.order[range.start]];
            let has_concept = p.order[range.clone()]
                .iter()
                .any(|&u| q.nodes[u].is_concept());
            assert_eq!(first.is_concept(), has_concept, "round {round}: {p:?}");
        }
    }
}
