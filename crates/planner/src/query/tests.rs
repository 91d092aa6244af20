use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions};

use super::*;
use crate::testutil::small;

fn compiled(text: &str, g: &KnowledgeGraph) -> QueryGraph {
    compile(text, g).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn node_names(q: &QueryGraph) -> Vec<&str> {
    q.nodes.iter().map(|n| n.name.as_str()).collect()
}

#[test]
fn resolves_concepts_variables_and_relations() {
    let g = small();
    let q = compiled(
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home } LIMIT 5",
        &g,
    );
    assert_eq!(node_names(&q), ["?x", "animal", "home"]);
    assert_eq!(q.nodes[0].kind, NodeKind::Variable);
    assert_eq!(
        q.nodes[1].kind,
        NodeKind::Concept(g.node_id("animal").unwrap())
    );
    assert!(q.nodes.iter().all(|n| n.label.is_none()));
    let isa = g.relation_id("IsA").unwrap();
    let at = g.relation_id("AtLocation").unwrap();
    assert_eq!(
        q.edges,
        [
            QueryEdge {
                source: 0,
                target: 1,
                label: EdgeLabel::Fixed(isa)
            },
            QueryEdge {
                source: 0,
                target: 2,
                label: EdgeLabel::Fixed(at)
            },
        ]
    );
    assert_eq!(q.projection, [Projected::Node(0)]);
    assert_eq!((q.distinct, q.limit), (false, Some(5)));
    assert_eq!(q.variable_count(), 1);
    assert_eq!(q.components(), [vec![0, 1, 2]]);
}

#[test]
fn same_name_same_node_and_repeated_triples_once() {
    let g = small();
    let q = compiled(
        "SELECT * { ?x IsA animal . ?y IsA animal . ?x IsA animal . ?x ?r ?y . ?y ?r ?x }",
        &g,
    );
    assert_eq!(node_names(&q), ["?x", "animal", "?y"]);
    assert_eq!(q.edges.len(), 4);
    assert_eq!(q.edge_variables, ["?r"]);
    assert_eq!(q.edges[2].label, EdgeLabel::Variable(0));
    assert_eq!(q.edges[3].label, EdgeLabel::Variable(0));
}

#[test]
fn select_star_projects_variables_in_order_of_first_appearance() {
    let g = small();
    let q = compiled(
        "SELECT DISTINCT * { animal ?r ?b . ?a IsA animal . ?a ?s ?b }",
        &g,
    );
    assert_eq!(node_names(&q), ["animal", "?b", "?a"]);
    assert_eq!(
        q.projection,
        [
            Projected::Edge(0),
            Projected::Node(1),
            Projected::Node(2),
            Projected::Edge(1)
        ]
    );
    assert!(q.distinct);
    // Only concepts: nothing to project.
    let q = compiled("SELECT * { dog IsA animal }", &g);
    assert!(q.projection.is_empty());
    assert_eq!(q.variable_count(), 0);
}

#[test]
fn explicit_projection_keeps_the_given_order() {
    let g = small();
    let q = compiled("SELECT ?r ?b ?a { ?a ?r ?b }", &g);
    assert_eq!(
        q.projection,
        [Projected::Edge(0), Projected::Node(1), Projected::Node(0)]
    );
}

#[test]
fn quoted_and_unicode_names_resolve() {
    let g = small();
    let q = compiled(
        "SELECT ?x { \"chocolate cake\" HasA ?x . ?y IsA животное }",
        &g,
    );
    assert_eq!(node_names(&q), ["chocolate cake", "?x", "?y", "животное"]);
}

#[test]
fn unknown_concept_names_it_and_suggests() {
    let g = small();
    let text = "SELECT ?x WHERE { ?x HasA \"chocolate cakes\" }";
    let e = compile(text, &g).unwrap_err();
    let QueryError::UnknownConcept {
        name,
        line,
        column,
        suggestions,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!((name.as_str(), *line, *column), ("chocolate cakes", 1, 27));
    assert_eq!(suggestions[..2], ["chocolate cake", "chocolate"]);
    assert!(suggestions.len() <= MAX_SUGGESTIONS);
    assert!(
        e.to_string().starts_with(
            "line 1, column 27: unknown concept \"chocolate cakes\"; \
             did you mean \"chocolate cake\", \"chocolate\""
        ),
        "{e}"
    );
    assert_eq!(e.position(), Some((1, 27)));
    assert!(e
        .render(text)
        .ends_with(&format!("\n  | {}^", " ".repeat(26))));
}

#[test]
fn unknown_relation_suggests_the_right_case_first() {
    let g = small();
    let e = compile("SELECT ?x { ?x isa animal }", &g).unwrap_err();
    let QueryError::UnknownRelation {
        name, suggestions, ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(name, "isa");
    assert_eq!(suggestions[0], "IsA");
    assert_eq!(suggestions[1], "HasA");
}

#[test]
fn no_suggestions_means_no_question() {
    let g = small();
    let e = compile("SELECT ?x { ?x IsA qqqqqqqqqqqqqqqq }", &g).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1, column 20: unknown concept \"qqqqqqqqqqqqqqqq\""
    );
}

#[test]
fn the_first_unknown_name_in_text_order_is_reported() {
    let g = small();
    let e = compile("SELECT ?x { ?x IsA animal . ?x Izz catt }", &g).unwrap_err();
    assert!(
        matches!(&e, QueryError::UnknownRelation { name, .. } if name == "Izz"),
        "{e:?}"
    );
}

#[test]
fn parse_errors_pass_through() {
    let g = small();
    let e = compile("SELECT ?x { }", &g).unwrap_err();
    assert!(matches!(e, QueryError::Parse(_)));
    assert!(e.to_string().starts_with("line 1, column 11: empty WHERE"));
}

#[test]
fn components_ignore_direction_and_keep_isolated_nodes() {
    let g = small();
    let mut q = compiled(
        "SELECT * { ?a IsA animal . ?b IsA ?c . dog AtLocation ?c . ?d IsA ?d }",
        &g,
    );
    assert_eq!(node_names(&q), ["?a", "animal", "?b", "?c", "dog", "?d"]);
    assert_eq!(q.components(), [vec![0, 1], vec![2, 3, 4], vec![5]]);
    q.nodes.push(QueryNode {
        name: "?lonely".into(),
        kind: NodeKind::Variable,
        label: None,
    });
    assert_eq!(q.components().last().unwrap(), &[6]);
}

#[test]
fn describe_names_everything() {
    let g = small();
    let q = compiled(
        "SELECT DISTINCT ?x ?r { ?x ?r animal . ?x AtLocation home } LIMIT 2",
        &g,
    );
    let text = q.describe(&g);
    assert!(
        text.contains("3 nodes (1 variable), 2 edges, 1 edge variable"),
        "{text}"
    );
    assert!(text.contains("?x -[?r]-> animal"), "{text}");
    assert!(text.contains("?x -[AtLocation]-> home"), "{text}");
    assert!(text.contains("select distinct ?x ?r limit 2"), "{text}");
    let plain = q.to_string();
    assert!(plain.contains("-[relation #"), "{plain}");
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

#[test]
fn benchmark_queries_map_labels_by_name() {
    let data = bench("t 4 3\nv 0 A 1\nv 1 B 2\nv 2 A 2\nv 3 C 1\ne 0 1\ne 1 2\ne 2 3\n");
    // Query labels in another id order than the data's, plus one absent label.
    let query = bench("t 3 3\nv 0 C 1\nv 1 A 2\nv 2 Z 1\ne 1 0\ne 1 2\ne 2 2\n");
    let q = benchmark_query(&query, &data).unwrap();
    let label = |name: &str| data.node_label_names().get(name);
    assert_eq!(
        q.nodes.iter().map(|n| n.label).collect::<Vec<_>>(),
        [label("C"), label("A"), Some(ABSENT_LABEL)]
    );
    assert_eq!(node_names(&q), ["?u0", "?u1", "?u2"]);
    let edge = EdgeLabel::Fixed(data.relation_id("edge").unwrap());
    let pairs: Vec<_> = q.edges.iter().map(|e| (e.source, e.target)).collect();
    assert_eq!(pairs, [(0, 1), (1, 2), (2, 2)]);
    assert!(q.edges.iter().all(|e| e.label == edge));
    assert_eq!(
        q.projection,
        [Projected::Node(0), Projected::Node(1), Projected::Node(2)]
    );
    assert_eq!((q.distinct, q.limit), (false, None));
}

#[test]
fn benchmark_query_needs_the_data_relation() {
    let query = bench("t 2 1\nv 0 A 1\nv 1 A 1\ne 0 1\n");
    let e = benchmark_query(&query, &small()).unwrap_err();
    assert!(
        matches!(&e, QueryError::BenchmarkRelation { name } if name == "edge"),
        "{e:?}"
    );
    assert!(e.to_string().contains("no relation \"edge\""));
    assert_eq!(e.position(), None);
}
