//! The evaluator against spareval over an in-memory `oxrdf::Dataset` holding the same triples: every
//! query must give the same multiset of solutions (or the same boolean, or the same triples), so
//! the matcher's answers, the CSR-backed quads and the term mapping are all checked at once.

use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions};
use gpsense_runtime::{Engine, EngineKind, MatchOptions};
use gpsense_sparql::{Answer, Options, Sparql};
use oxrdf::{Dataset, GraphName, Quad, Term};
use oxttl::TurtleParser;
use spareval::{QueryEvaluator, QueryResults};
use spargebra::SparqlParser;

const DATA: &str = r#"
@prefix : <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:dog :isA :mammal ; :name "dog"@en ; :legs 4 ; :weight "30.5"^^xsd:decimal .
:cat :isA :mammal ; :name "cat"@en , "chat"@fr ; :legs "04"^^xsd:integer ; :weight 4.0e0 .
:bird :isA :animal ; :name "bird" ; :legs 2 .
:snake :isA :reptile ; :legs 0 .
:mammal :isA :animal .
:reptile :isA :animal .
:animal :isA :thing .
:dog :likes :cat . :cat :likes :dog . :dog :likes :dog .
:bird :likes [ :name "worm" ] .
:isA :label "is a" .
"#;

const QUERIES: &[&str] = &[
    "PREFIX : <http://example.org/> SELECT * { ?x :isA ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?n { ?x :isA :mammal OPTIONAL { ?x :name ?n FILTER(lang(?n) = 'en') } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :legs ?l FILTER(?l = 4) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :legs ?l FILTER(?l != 4) }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :legs ?l FILTER(?l IN (2, 4.0)) }",
    "PREFIX : <http://example.org/> SELECT ?x ?w { ?x :weight ?w FILTER(?w > 5) }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA+ ?y }",
    "PREFIX : <http://example.org/> SELECT ?y { :dog :isA* ?y }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x ^:isA/:isA :thing }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :likes|:isA ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x !(:likes|:name) ?y }",
    "PREFIX : <http://example.org/> SELECT ?x { { ?x :isA :mammal } UNION { ?x :isA :reptile } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c MINUS { ?x :likes ?z } }",
    "PREFIX : <http://example.org/> SELECT ?c (COUNT(?x) AS ?n) { ?x :isA ?c } GROUP BY ?c HAVING(COUNT(?x) > 1)",
    "PREFIX : <http://example.org/> SELECT (SUM(?l) AS ?s) (AVG(?l) AS ?a) (MIN(?l) AS ?m) (COUNT(DISTINCT ?l) AS ?g) (SAMPLE(?l) AS ?one) { ?x :legs ?l FILTER(?l = 2) }",
    "PREFIX : <http://example.org/> SELECT ?x ?d { ?x :legs ?l BIND(?l * 2 AS ?d) } ORDER BY DESC(?d) ?x",
    "PREFIX : <http://example.org/> SELECT ?x ?v { VALUES ?v { :mammal :reptile } ?x :isA ?v }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER EXISTS { ?x :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA ?c FILTER NOT EXISTS { ?x :name ?n } }",
    "PREFIX : <http://example.org/> SELECT ?x ?m { ?x :isA ?c { SELECT (MAX(?l) AS ?m) { ?y :legs ?l } } }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :likes ?x }",
    "PREFIX : <http://example.org/> SELECT ?x ?n { ?x :likes [ :name ?n ] }",
    "PREFIX : <http://example.org/> SELECT ?p (COUNT(*) AS ?n) { ?s ?p ?o } GROUP BY ?p",
    "PREFIX : <http://example.org/> SELECT ?s ?o { ?s :isA ?o . ?o :label ?l }",
    "PREFIX : <http://example.org/> SELECT ?p ?l { ?s ?p ?o . ?p :label ?l }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :nothing ?y }",
    "PREFIX : <http://example.org/> SELECT ?x { ?x :isA :unicorn }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA :mammal . ?y :isA :reptile }",
    "PREFIX : <http://example.org/> SELECT DISTINCT ?c { ?x :isA ?c } ORDER BY ?c LIMIT 2 OFFSET 1",
    "PREFIX : <http://example.org/> SELECT ?x (REGEX(STR(?x), 'd.g$') AS ?r) (UCASE(?n) AS ?u) (STRLEN(?n) AS ?len) { ?x :name ?n }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { VALUES ?x { :dog :bird :nothing } OPTIONAL { ?x :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { VALUES (?x ?y) { (:dog UNDEF) (UNDEF :dog) } ?x :likes ?y }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { { ?x :isA :mammal } { ?x :likes ?y } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y ?z { ?x :isA :mammal OPTIONAL { ?x :likes ?y OPTIONAL { ?y :name ?z } } }",
    "PREFIX : <http://example.org/> SELECT ?x ?l { ?x :isA ?c OPTIONAL { ?x :legs ?l FILTER(?l > 2) } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA :mammal { { ?x :likes ?y } UNION { ?x :name ?y } } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA :mammal { ?x :likes ?y FILTER(?y != :cat) } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y ?l { ?x :isA ?c OPTIONAL { { ?x :likes ?y } UNION { ?x :legs ?l } } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y { ?x :isA :mammal { SELECT ?x ?y { ?x :likes ?y } ORDER BY ?x ?y LIMIT 2 } }",
    "PREFIX : <http://example.org/> SELECT ?x ?y ?z { ?x :isA ?c OPTIONAL { ?x :likes ?y . ?y :isA ?z } MINUS { ?x :legs 2 } }",
    "PREFIX : <http://example.org/> ASK { :dog :likes :cat }",
    "PREFIX : <http://example.org/> ASK { :cat :isA :reptile }",
    "PREFIX : <http://example.org/> CONSTRUCT { ?y :hasMember ?x } WHERE { ?x :isA ?y }",
    "PREFIX : <http://example.org/> DESCRIBE :snake",
];

fn reference_dataset() -> Dataset {
    let mut d = Dataset::new();
    for t in TurtleParser::new().for_slice(DATA.as_bytes()) {
        let t = t.expect("test data parses");
        d.insert(&Quad::new(
            t.subject,
            t.predicate,
            t.object,
            GraphName::DefaultGraph,
        ));
    }
    d
}

/// Solutions as sorted strings (blank nodes renamed by first appearance within a row set is
/// unnecessary here: the data's one blank node is never projected).
fn canonical(results: Vec<Vec<Option<Term>>>, ordered: bool) -> Vec<String> {
    let mut rows: Vec<String> = results
        .into_iter()
        .map(|r| {
            r.iter()
                .map(|t| match t {
                    Some(Term::BlankNode(_)) => "_:b".to_owned(),
                    Some(t) => t.to_string(),
                    None => "-".to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if !ordered {
        rows.sort();
    }
    rows
}

fn expected(d: &Dataset, q: &str) -> Vec<String> {
    let query = SparqlParser::new().parse_query(q).expect("query parses");
    match QueryEvaluator::new()
        .prepare(&query)
        .execute(d)
        .expect("reference evaluates")
    {
        QueryResults::Solutions(s) => {
            let rows = s
                .map(|s| s.map(|s| s.values().to_vec()))
                .collect::<Result<Vec<_>, _>>()
                .expect("reference rows");
            canonical(rows, q.contains("ORDER BY"))
        }
        QueryResults::Boolean(b) => vec![b.to_string()],
        QueryResults::Graph(g) => {
            let mut v: Vec<String> = g.map(|t| t.expect("triple").to_string()).collect();
            v.sort();
            v
        }
    }
}

fn actual(s: &Sparql<'_, Engine<'_>>, q: &str, engine: EngineKind) -> Vec<String> {
    let options = Options {
        matching: MatchOptions {
            engine,
            ..MatchOptions::default()
        },
        ..Options::default()
    };
    let evaluation = s
        .evaluate(q, &options)
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    match evaluation.answer {
        Answer::Solutions { rows, .. } => {
            let rows = rows.collect::<Result<Vec<_>, _>>().expect("rows");
            canonical(rows, q.contains("ORDER BY"))
        }
        Answer::Boolean(b) => vec![b.to_string()],
        Answer::Graph(g) => {
            let mut v: Vec<String> = g.map(|t| t.expect("triple").to_string()).collect();
            v.sort();
            v
        }
    }
}

#[test]
fn every_query_answers_as_spareval_over_the_same_triples() {
    let opts = IngestOptions {
        format: Some(Format::Turtle),
        ..IngestOptions::default()
    };
    let (graph, _) = ingest_bytes(DATA.as_bytes(), Format::Turtle, &opts).expect("ingest");
    let engine = Engine::new(&graph);
    let sparql = Sparql::new(&engine);
    let reference = reference_dataset();
    let mut failures = Vec::new();
    for q in QUERIES {
        let want = expected(&reference, q);
        for kind in [EngineKind::Dfs, EngineKind::Kernels] {
            let got = actual(&sparql, q, kind);
            if got != want {
                failures.push(format!("{q} ({kind}):\n  want {want:?}\n  got  {got:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_matcher_answers_the_basic_graph_patterns() {
    let (graph, _) =
        ingest_bytes(DATA.as_bytes(), Format::Turtle, &IngestOptions::default()).expect("ingest");
    let engine = Engine::new(&graph);
    let sparql = Sparql::new(&engine);
    let q = "PREFIX : <http://example.org/> SELECT ?x ?n { ?x :isA ?c . ?c :isA :animal \
             OPTIONAL { ?x :name ?n ; :legs ?l } }";
    let e = sparql.evaluate(q, &Options::default()).expect("evaluates");
    assert_eq!(e.matcher.patterns, 2, "{:?}", e.matcher);
    let q = "PREFIX : <http://example.org/> SELECT ?x { ?x :isA :unicorn }";
    let e = sparql.evaluate(q, &Options::default()).expect("evaluates");
    assert_eq!(e.matcher.unknown.len(), 1, "{:?}", e.matcher);
    assert!(e.matcher.unknown[0].contains("unicorn"), "{:?}", e.matcher);
}
