//! The native evaluator against spareval on the same graph: every query is answered twice, once
//! as it would be (native where the plan allows) and once with `spareval_only`, and the two
//! multisets of rows must agree. ConceptNet-100K with the benchmark's queries (which the native
//! evaluator must take, every one but CONSTRUCT), and a small graph with cycles, blank nodes and
//! queries whose expressions err, leave variables unbound and mix literal kinds.

use std::path::PathBuf;

use gpsense_graph::ingest::{ingest, ingest_bytes, Format, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_runtime::Engine;
use gpsense_sparql::{Answer, Options, Sparql, Term};

/// Rows as sorted strings (blank nodes as one label: answers may name them differently).
fn rows(answer: Answer<'_>, ordered: bool) -> Vec<String> {
    let mut out: Vec<String> = match answer {
        Answer::Solutions { rows, .. } => rows
            .map(|r| {
                r.expect("row")
                    .iter()
                    .map(|t| match t {
                        Some(Term::BlankNode(_)) => "_:b".to_owned(),
                        Some(t) => t.to_string(),
                        None => "-".to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
        Answer::Boolean(b) => vec![b.to_string()],
        Answer::Graph(g) => g.map(|t| t.expect("triple").to_string()).collect(),
    };
    if !ordered {
        out.sort();
    }
    out
}

/// Both answers of `q` (`r` answers with spareval only), and whether the native evaluator gave
/// the first.
fn both(
    s: &Sparql<'_, Engine<'_>>,
    r: &Sparql<'_, Engine<'_>>,
    q: &str,
) -> (Vec<String>, Vec<String>, bool) {
    let ordered = q.contains("ORDER BY") && !q.contains("{ SELECT");
    let native = s
        .evaluate(q, &Options::default())
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    let used = native.matcher.native;
    let a = rows(native.answer, ordered);
    let spareval = r
        .evaluate(q, &Options::default())
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    assert!(!spareval.matcher.native);
    (a, rows(spareval.answer, ordered), used)
}

fn conceptnet() -> KnowledgeGraph {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/conceptnet-100k/train.txt.gz");
    ingest(&[path], &IngestOptions::default(), &NoProgress)
        .expect("ConceptNet-100K ingests")
        .0
}

/// `(name, text)` of each query in the benchmark's set.
fn benchmark_queries() -> Vec<(String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benches/sparql/algebra.rq");
    let text = std::fs::read_to_string(path).expect("algebra.rq");
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("#@") {
            let name = header.split_whitespace().next().unwrap_or("").to_owned();
            out.push((name, String::new()));
        } else if let Some((_, q)) = out.last_mut() {
            q.push_str(line);
            q.push('\n');
        }
    }
    out
}

#[test]
fn the_benchmark_queries_answer_as_spareval_and_natively() {
    let graph = conceptnet();
    let engine = Engine::new(&graph);
    let s = Sparql::new(&engine);
    let r = Sparql::new(&engine).spareval_only();
    for (name, q) in benchmark_queries() {
        let (native, spareval, used) = both(&s, &r, &q);
        assert_eq!(native, spareval, "{name}");
        assert!(!native.is_empty(), "{name}: no rows");
        // CONSTRUCT is spareval's.
        let expected = !q.contains("CONSTRUCT");
        assert_eq!(used, expected, "{name}: native evaluator used");
    }
}

const DATA: &str = r#"
@prefix : <http://example.org/> .
:dog :isA :mammal ; :likes :cat , :dog ; :eats :meat .
:cat :isA :mammal ; :likes :dog .
:mammal :isA :animal .
:animal :isA :mammal .
:bird :isA :animal ; :likes [ :isA :worm ] .
:snake :isA :reptile .
:reptile :isA :animal .
:isA :isA :relation .
:a-very-long-name-of-a-thing :isA :thing .
"#;

const QUERIES: &[&str] = &[
    // A predicate variable a FILTER restricts: one lookup per relation (`:isA` is a node too).
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(?r IN (:isA, :likes, :isA)) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(?r = :isA && ?y != :animal) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(:likes = ?r) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?x FILTER(sameTerm(?r, :likes)) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(?r IN (:nothing)) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(?r IN ()) }",
    "PREFIX : <http://example.org/> SELECT * { :dog ?r ?y FILTER(?r IN (:likes, :eats)) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(?r IN (:isA, \"isA\")) }",
    "PREFIX : <http://example.org/> SELECT * { ?x ?r ?y FILTER(?r = :isA || ?r = :eats) }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA+ ?y }",
    "PREFIX : <http://example.org/> SELECT ?y { :dog :isA* ?y }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA* :nothing }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA? :unicorn }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA+ ?x }",
    "PREFIX : <http://example.org/> SELECT * { VALUES ?v { 1 :nothing :dog } ?v :likes? ?v }",
    "PREFIX : <http://example.org/> SELECT * { VALUES ?v { :nothing :dog } ?v :isA* ?w }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x (:isA/:isA)|^:likes ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x !(:likes|:eats) ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x !^:likes ?y }",
    "PREFIX : <http://example.org/> SELECT ?y { :cat :likes/:likes? ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?z { ?x :likes ?y . ?y :isA ?z }",
    "PREFIX : <http://example.org/> SELECT ?x ?w { ?x :likes [ :isA ?w ] }",
    "PREFIX : <http://example.org/> SELECT ?p ?o { :isA ?p ?o }",
    "PREFIX : <http://example.org/> SELECT ?s ?p { ?s ?p :isA }",
    "PREFIX : <http://example.org/> SELECT ?x ?e { ?x :isA :mammal OPTIONAL { ?x :eats ?e } }",
    "PREFIX : <http://example.org/> SELECT ?x ?e { ?x :isA ?c OPTIONAL { ?x :eats ?e } FILTER(!BOUND(?e)) }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA ?c OPTIONAL { ?x :likes ?y FILTER(?y != ?x) } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y ?z { ?x :isA :mammal OPTIONAL { ?x :likes ?y OPTIONAL { ?y :eats ?z } } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { { ?x :isA :mammal } UNION { ?x :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA ?c OPTIONAL { ?x :eats ?y } { ?y :isA ?z } UNION { ?x :likes ?q } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c MINUS { ?x :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA ?c OPTIONAL { ?x :eats ?y } MINUS { ?y :nothing ?z } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c MINUS { ?a :likes ?b } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER NOT EXISTS { ?x :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER EXISTS { ?y :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER EXISTS { ?x :likes ?x } }",
    "PREFIX : <http://example.org/> SELECT ?x ?e { ?x :isA ?c OPTIONAL { ?x :eats ?e } FILTER NOT EXISTS { ?e ?p :mammal } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(EXISTS { ?x :isA :nothing } || EXISTS { ?c :isA [] }) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER EXISTS { ?x :likes ?y . ?y :likes ?x } }",
    "PREFIX : <http://example.org/> SELECT ?x ?n { ?x :isA ?c BIND(STRLEN(STR(?x)) AS ?n) FILTER(?n > 20 || ?n = 24) }",
    "PREFIX : <http://example.org/> SELECT ?x ?b { ?x :isA ?c BIND(STR(?nothing) AS ?b) }",
    "PREFIX : <http://example.org/> SELECT ?x ?v { ?x :isA ?c BIND(IF(?c = :mammal, 1, \"one\") AS ?v) } ORDER BY ?v ?x",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c > :animal) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c >= :animal) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(STR(?c) > \"http://example.org/b\") }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c = \"http://example.org/mammal\") }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(STR(?c) = \"http://example.org/mammal\") }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c IN (:mammal, 1, STR(?x))) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c IN (:reptile, ?nothing)) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c NOT IN (:reptile, ?nothing)) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?nothing || true) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?nothing && false) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(!(?nothing && true)) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(STR(?c)) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(REGEX(STR(?x), \"^HTTP.*D\", \"i\")) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(REGEX(?x, \"dog\")) }",
    "PREFIX : <http://example.org/> SELECT ?x ?u { ?x :isA ?c BIND(CONCAT(UCASE(STRAFTER(STR(?x), \"org/\")), \"-\", LCASE(STRBEFORE(STR(?c), \"/m\"))) AS ?u) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(STRSTARTS(STR(?x), \"http://example.org/d\") || STRENDS(STR(?c), \"al\")) }",
    "PREFIX : <http://example.org/> SELECT ?x ?k { ?x :isA ?c BIND(isIRI(?x) && !isBlank(?x) && !isLiteral(?c) AS ?k) }",
    "PREFIX : <http://example.org/> SELECT ?x ?k { ?x :likes ?y BIND(isBlank(?y) AS ?k) }",
    "PREFIX : <http://example.org/> SELECT ?x ?k { ?x :isA ?c BIND(STRLEN(STR(?x)) * 2 - 3 + -1 AS ?k) }",
    "PREFIX : <http://example.org/> SELECT ?x ?k { ?x :isA ?c BIND(COALESCE(?nothing, STR(?x)) AS ?k) }",
    "PREFIX : <http://example.org/> SELECT ?x ?k { ?x :isA ?c BIND(sameTerm(?x, :dog) AS ?k) }",
    "PREFIX : <http://example.org/> SELECT ?c (COUNT(?x) AS ?n) { ?x :isA ?c } GROUP BY ?c HAVING(COUNT(?x) > 1)",
    "PREFIX : <http://example.org/> SELECT ?c (SUM(STRLEN(STR(?x))) AS ?s) (MIN(?x) AS ?m) (MAX(STR(?x)) AS ?mx) (SAMPLE(?c) AS ?one) { ?x :isA ?c } GROUP BY ?c",
    "PREFIX : <http://example.org/> SELECT ?c (SUM(?x) AS ?s) (MAX(?e) AS ?m) (COUNT(?e) AS ?n) (COUNT(DISTINCT ?c) AS ?d) { ?x :isA ?c OPTIONAL { ?x :eats ?e } } GROUP BY ?c",
    "PREFIX : <http://example.org/> SELECT (COUNT(*) AS ?n) (GROUP_CONCAT(?x) AS ?g) { ?x :nothing ?c }",
    "PREFIX : <http://example.org/> SELECT ?x (GROUP_CONCAT(DISTINCT STR(?y); separator=\"|\") AS ?g) { ?x :likes|:isA ?y } GROUP BY ?x",
    "PREFIX : <http://example.org/> SELECT ?x (GROUP_CONCAT(?y) AS ?g) { ?x :likes ?y } GROUP BY ?x",
    "PREFIX : <http://example.org/> SELECT (COUNT(DISTINCT *) AS ?n) { ?x :isA ?c . ?x :likes ?y }",
    "PREFIX : <http://example.org/> SELECT ?k (COUNT(*) AS ?n) { ?x :isA ?c BIND(STRLEN(STR(?x)) > 22 AS ?k) } GROUP BY ?k",
    "PREFIX : <http://example.org/> SELECT ?x ?v { VALUES (?x ?v) { (:dog 1) (:cat \"1\") (:bird UNDEF) (:nothing true) } ?x :isA ?c }",
    "PREFIX : <http://example.org/> SELECT ?x ?v { VALUES ?v { 1 \"a\" :dog true } ?x :isA ?c } ORDER BY ?v ?x",
    "PREFIX : <http://example.org/> SELECT ?v (MAX(?v) AS ?m) (MIN(?v) AS ?n) { VALUES ?v { 1 \"a\" :dog true 2 } } GROUP BY ?v",
    "PREFIX : <http://example.org/> SELECT (MAX(?v) AS ?m) (MIN(?v) AS ?n) { VALUES ?v { 1 \"a\" :dog true 2 } }",
    "PREFIX : <http://example.org/> SELECT ?v { VALUES ?v { 1 2 3 } FILTER(?v < 3 && ?v != 1) }",
    "PREFIX : <http://example.org/> SELECT ?v { VALUES ?v { 1 \"2\" true } FILTER(?v < 2) }",
    "PREFIX : <http://example.org/> SELECT DISTINCT ?c { ?x :isA ?c } ORDER BY DESC(?c) LIMIT 3 OFFSET 1",
    "PREFIX : <http://example.org/> SELECT REDUCED ?c { ?x :isA ?c }",
    "PREFIX : <http://example.org/> SELECT ?x ?c { ?x :isA ?c } ORDER BY DESC(?c) ?x LIMIT 3 OFFSET 2",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c } ORDER BY ?x LIMIT 0",
    "PREFIX : <http://example.org/> SELECT ?v { VALUES ?v { 1 \"a\" :dog true 2 UNDEF } } ORDER BY DESC(?v) LIMIT 4",
    "PREFIX : <http://example.org/> SELECT ?v { VALUES ?v { 1 \"a\" :dog true 2 UNDEF } } ORDER BY ?v LIMIT 40",
    "PREFIX : <http://example.org/> SELECT ?x ?n { ?x :isA ?c { SELECT ?c (COUNT(*) AS ?n) { ?y :isA ?c } GROUP BY ?c ORDER BY DESC(?n) ?c LIMIT 2 } }",
    "PREFIX : <http://example.org/> SELECT * { ?x :isA :mammal { ?x :likes ?y FILTER(?y != :cat) } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?x = ?c) }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :likes ?y . ?y :likes ?x }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :nothing ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { :nothing :isA ?y }",
    "PREFIX : <http://example.org/> ASK { :dog :likes :cat }",
    "PREFIX : <http://example.org/> ASK { :cat :isA :reptile }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER(?c = :mammal) } LIMIT 1",
];

/// Which texts have their predicate variable restricted (and so skip the graph path).
#[test]
fn a_filter_restricting_a_predicate_variable_is_recognised() {
    let restricted = |q: &str| {
        let query = Sparql::<Engine<'_>>::parse(q, None).expect("parses");
        gpsense_sparql::restricts_predicate(&query)
    };
    assert!(restricted(QUERIES[0]));
    assert!(restricted(QUERIES[1]));
    assert!(restricted(QUERIES[3]));
    // A literal in the list, a disjunction: not a restriction to IRIs.
    assert!(!restricted(QUERIES[7]));
    assert!(!restricted(QUERIES[8]));
}

#[test]
fn extra_cases_answer_as_spareval() {
    let (graph, _) = ingest_bytes(DATA.as_bytes(), Format::Turtle, &IngestOptions::default())
        .expect("test data ingests");
    assert!(!graph.has_literal_nodes());
    let engine = Engine::new(&graph);
    let s = Sparql::new(&engine);
    let r = Sparql::new(&engine).spareval_only();
    let mut native = 0;
    for q in QUERIES {
        let (a, b, used) = both(&s, &r, q);
        assert_eq!(a, b, "{q}");
        native += usize::from(used);
    }
    // All but the EXISTS of two triples are the native evaluator's.
    assert_eq!(native, QUERIES.len() - 1);
}

/// `max_cartesian` bounds a disconnected basic graph pattern inside the algebra, in both
/// evaluators, with the matcher's message.
#[test]
fn a_disconnected_pattern_inside_the_algebra_respects_max_cartesian() {
    let (graph, _) = ingest_bytes(DATA.as_bytes(), Format::Turtle, &IngestOptions::default())
        .expect("test data ingests");
    let engine = Engine::new(&graph);
    // 10 `:isA` edges times 4 `:likes` edges: 40.
    let q = "PREFIX : <http://example.org/> \
             SELECT * { ?x :isA :mammal OPTIONAL { ?a :isA ?b . ?c :likes ?d } }";
    let bounded = |limit: u64| {
        let mut options = Options::default();
        options.matching.max_cartesian = limit;
        options
    };
    for s in [Sparql::new(&engine), Sparql::new(&engine).spareval_only()] {
        let err = match s.evaluate(q, &bounded(10)) {
            Ok(_) => panic!("{q}: answered past max_cartesian"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("the query is disconnected"), "{err}");
        assert!(err.contains("more than the limit of 10"), "{err}");
        let answer = s.evaluate(q, &bounded(1_000)).expect("within the bound");
        assert!(!rows(answer.answer, false).is_empty());
    }
}
