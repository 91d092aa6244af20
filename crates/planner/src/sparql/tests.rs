use gpsense_graph::{GraphBuilder, KnowledgeGraph};

use super::*;
use crate::testutil::small;
use crate::NodeKind;

const EX: &str = "http://example.org/";
const TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// An RDF-like graph: IRIs and literals as node names, IRIs as relations.
fn rdf() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    let iri = |s: &str| format!("{EX}{s}");
    let triples = [
        (iri("tom"), TYPE.to_owned(), iri("Cat")),
        (iri("rex"), TYPE.to_owned(), iri("Dog")),
        (iri("tom"), iri("likes"), iri("rex")),
        (iri("rex"), iri("likes"), iri("tom")),
        (iri("tom"), iri("name"), "\"Tom\"".to_owned()),
        (iri("rex"), iri("name"), "\"Rex\"@en".to_owned()),
        (iri("tom"), iri("likes"), iri("tom")),
    ];
    for (h, r, t) in &triples {
        b.add_triple(h, r, t, 1.0).unwrap();
    }
    b.build().unwrap().0
}

/// The names of the query's concept nodes, in node order.
fn concept_names(p: &Prepared) -> Vec<&str> {
    p.graph
        .nodes
        .iter()
        .filter(|n| n.is_concept())
        .map(|n| n.name.as_str())
        .collect()
}

fn sparql(text: &str, g: &KnowledgeGraph) -> Prepared {
    prepare(text, g, Dialect::Sparql).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn failure(text: &str, g: &KnowledgeGraph) -> String {
    match prepare(text, g, Dialect::Sparql) {
        Ok(p) => panic!("accepted: {:?}", p.graph),
        Err(e) => e.render(text),
    }
}

#[test]
fn prefixes_shorthand_and_a_build_one_graph() {
    let g = rdf();
    let p = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT ?x ?n WHERE { ?x a ex:Cat ; ex:likes ex:rex , ?x ; ex:name ?n }",
        &g,
    );
    assert_eq!(p.dialect, Dialect::Sparql);
    assert_eq!(p.form, Form::Select);
    assert_eq!(p.graph.edges.len(), 4);
    let concepts = concept_names(&p);
    assert_eq!(concepts, [&format!("{EX}Cat"), &format!("{EX}rex")]);
    assert_eq!(p.injective, Some(false), "SPARQL is hom as written");
    assert_eq!(p.graph.projection.len(), 2);
}

#[test]
fn literals_and_blank_nodes() {
    let g = rdf();
    let p = sparql(
        "SELECT * WHERE { ?x <http://example.org/name> \"Rex\"@en . ?x <http://example.org/likes> [] }",
        &g,
    );
    // `[]` is a variable nobody projects.
    assert_eq!(p.graph.nodes.len(), 3);
    assert_eq!(p.graph.projection, [Projected::Node(0)]);
    assert!(matches!(p.graph.nodes[1].kind, NodeKind::Concept(_)));
    // A plain literal also finds a node named by its lexical form (ConceptNet's `dog`).
    let q = sparql(
        "SELECT ?x WHERE { ?x <http://conceptnet.io/r/IsA> \"animal\"@en }",
        &small(),
    );
    assert!(q.graph.nodes.iter().any(|n| n.is_concept()));
}

#[test]
fn conceptnet_uris_reach_bare_names() {
    let g = small();
    let p = sparql(
        "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/>\n\
         SELECT ?x WHERE { ?x r:IsA c:animal ; r:AtLocation c:home }",
        &g,
    );
    assert_eq!(p.graph.edges.len(), 2);
    let p = sparql(
        "SELECT ?x WHERE { ?x <http://conceptnet.io/r/HasA> <http://conceptnet.io/c/en/chocolate/n> }",
        &g,
    );
    assert_eq!(p.graph.nodes.len(), 2);
}

#[test]
fn dump_iris_name_any_graph() {
    let g = small();
    let p = sparql(
        "PREFIX n: <gpsense:n/> PREFIX r: <gpsense:r/>\n\
         SELECT ?x WHERE { ?x r:HasA n:chocolate . <gpsense:n/chocolate%20cake> r:IsA ?y }",
        &g,
    );
    let concepts = concept_names(&p);
    assert_eq!(concepts, ["chocolate", "chocolate cake"]);
}

#[test]
fn pairwise_inequality_is_isomorphism() {
    let g = rdf();
    let full = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT * WHERE { ?a ex:likes ?b . ?b ex:likes ?c FILTER(?a != ?b && ?b != ?c && ?a != ?c) }",
        &g,
    );
    assert_eq!(full.injective, Some(true));
    assert!(full.filters.is_empty());
    let partial = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT * WHERE { ?a ex:likes ?b . ?b ex:likes ?c FILTER(?a != ?b) }",
        &g,
    );
    assert_eq!(partial.injective, Some(false));
    assert_eq!(partial.filters.len(), 1);
    // A concept in the pattern: the variables must also differ from it.
    let concept = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT * WHERE { ?a ex:likes ex:rex FILTER(?a != ex:rex) }",
        &g,
    );
    assert_eq!(concept.injective, Some(true));
    assert!(
        concept.filters.is_empty(),
        "implied by iso: {:?}",
        concept.filters
    );
    let beyond = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT * WHERE { ?a ex:likes ex:rex FILTER(?a NOT IN (ex:rex, ex:tom)) }",
        &g,
    );
    assert_eq!(beyond.injective, Some(true));
    assert_eq!(
        beyond.filters.len(),
        1,
        "ex:tom is no query node: the row test stays"
    );
    let open = sparql(
        "PREFIX ex: <http://example.org/>\nSELECT * WHERE { ?a ex:likes ex:rex }",
        &g,
    );
    assert_eq!(open.injective, Some(false));
}

#[test]
fn filters_on_rows() {
    let g = rdf();
    let p = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT ?a WHERE { ?a ex:likes ?b FILTER(?b IN (ex:rex, ex:nobody) && ?a NOT IN (ex:rex) && ?a = ?a) }",
        &g,
    );
    let rex = g.node_id(&format!("{EX}rex")).unwrap();
    let tom = g.node_id(&format!("{EX}tom")).unwrap();
    // `?b IN (...)` restricts ?b's candidates (it stays projected); the rest are row tests.
    assert_eq!(p.graph.concept_nodes(1), Some(&[rex][..]));
    assert_eq!(p.graph.projection, [Projected::Node(0)]);
    assert_eq!(p.filters.len(), 2);
    assert_eq!(
        p.filters[0],
        RowFilter::In {
            slot: Slot::Node(0),
            values: vec![rex],
            negated: true
        }
    );
    assert!(p.filters[0].passes(&[tom, rex], 2));
    assert!(!p.filters[0].passes(&[rex, tom], 2));
    // A term the graph lacks: nothing passes, as a row test.
    let none = sparql(
        "PREFIX ex: <http://example.org/>\n\
         SELECT ?a WHERE { ?a ex:likes ?b FILTER(?b = ex:nobody) }",
        &g,
    );
    assert_eq!(none.filters.len(), 1);
    assert!(!none.filters[0].passes(&[tom, rex], 2));
}

#[test]
fn forms_and_modifiers() {
    let g = rdf();
    let ask = sparql("ASK { ?x <http://example.org/likes> ?x }", &g);
    assert_eq!(ask.form, Form::Ask);
    let count = sparql(
        "SELECT (COUNT(*) AS ?n) WHERE { ?x <http://example.org/likes> ?y }",
        &g,
    );
    assert_eq!(
        count.form,
        Form::Count {
            variable: "n".into(),
            distinct: false
        }
    );
    let sliced = sparql(
        "SELECT DISTINCT ?y ?x WHERE { ?x <http://example.org/likes> ?y } ORDER BY DESC(?x) ?y \
         LIMIT 2 OFFSET 1",
        &g,
    );
    assert!(sliced.graph.distinct);
    assert_eq!(sliced.graph.limit, Some(2));
    assert_eq!(sliced.offset, 1);
    assert_eq!(
        sliced.order,
        [
            OrderKey {
                column: 1,
                descending: true
            },
            OrderKey {
                column: 0,
                descending: false
            }
        ]
    );
}

#[test]
fn unsupported_constructs_are_named_with_their_place() {
    let g = rdf();
    for (text, what, line) in [
        (
            "PREFIX ex: <http://example.org/>\nSELECT * WHERE { ?a ex:likes ?b\n  OPTIONAL { ?b ex:name ?n } }",
            "OPTIONAL is not supported",
            3,
        ),
        (
            "SELECT * WHERE { { ?a <http://example.org/likes> ?b } UNION { ?b <http://example.org/likes> ?a } }",
            "UNION is not supported",
            1,
        ),
        (
            "SELECT * WHERE { ?a <http://example.org/likes>+ ?b }",
            "property path",
            1,
        ),
        (
            "SELECT * WHERE { ?a <http://example.org/likes> ?b FILTER(?a = ?b || ?a != ?b) }",
            "|| in FILTER",
            1,
        ),
        (
            "CONSTRUCT { ?a ?p ?b } WHERE { ?a ?p ?b }",
            "CONSTRUCT is not supported",
            1,
        ),
    ] {
        let err = failure(text, &g);
        assert!(err.contains(what), "{text}: {err}");
        assert!(err.starts_with(&format!("line {line}, ")), "{text}: {err}");
    }
    // A syntax error keeps spargebra's position.
    let err = failure(
        "PREFIX ex: <http://example.org/>\nSELECT ?x WHERE { ?x ex:likes ; }",
        &g,
    );
    assert!(err.starts_with("line 2, column "), "{err}");
    assert!(err.contains("SPARQL syntax"), "{err}");
}

#[test]
fn the_short_dialect_stays_and_picks_its_errors() {
    let g = small();
    let short = prepare("SELECT ?x WHERE { ?x IsA animal }", &g, Dialect::Short).unwrap();
    assert_eq!(short.dialect, Dialect::Short);
    assert_eq!(short.injective, None);
    // Valid in both: the preferred dialect wins.
    let both = "SELECT * WHERE { ?a ?r ?b }";
    assert_eq!(
        prepare(both, &g, Dialect::Short).unwrap().dialect,
        Dialect::Short
    );
    assert_eq!(
        prepare(both, &g, Dialect::Sparql).unwrap().dialect,
        Dialect::Sparql
    );
    // Bare words are the short dialect's, whatever is preferred.
    let p = prepare("SELECT ?x WHERE { ?x IsA animal }", &g, Dialect::Sparql).unwrap();
    assert_eq!(p.dialect, Dialect::Short);
    // A short-looking mistake gets the short dialect's message; a standard-looking one SPARQL's.
    let e = prepare("SELECT ?x WHERE { ?x IsA }", &g, Dialect::Short)
        .unwrap_err()
        .to_string();
    assert!(!e.contains("SPARQL syntax"), "{e}");
    let e = prepare(
        "PREFIX c: <x:> SELECT ?x WHERE { ?x c:IsA }",
        &g,
        Dialect::Short,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("SPARQL syntax"), "{e}");
    // ASK is both dialects': a short-looking mistake in one gets the short dialect's message
    // (it got SPARQL's "expected OPTIONAL" at the first bare word).
    let e = prepare("ASK { ?x IsA animal } LIMIT x", &g, Dialect::Short)
        .unwrap_err()
        .to_string();
    assert!(!e.contains("SPARQL syntax") && e.contains("LIMIT"), "{e}");
    let p = prepare("ASK { ?x IsA animal }", &g, Dialect::Sparql).unwrap();
    assert_eq!((p.dialect, p.form), (Dialect::Short, Form::Ask));
}

/// A bare word in a query otherwise standard is named, at the word: spargebra said "expected
/// OPTIONAL", past it. Words standard SPARQL reads (keywords, functions, prefixed names, tags,
/// datatypes, strings, IRIs, comments) are not taken for one.
#[test]
fn a_bare_word_in_standard_sparql_is_named_where_it_stands() {
    let g = small();
    let at = |text: &str| match prepare(text, &g, Dialect::Sparql) {
        Err(QueryError::Parse(e)) => (e.line, e.column, e.message),
        other => panic!("{text}: {other:?}"),
    };
    let (line, column, message) = at("SELECT (COUNT(*) AS ?n) WHERE {\n  ?x IsA ?y }");
    assert_eq!((line, column), (2, 6), "{message}");
    assert!(message.contains("`IsA` is a bare word"), "{message}");
    assert!(!message.contains("OPTIONAL"), "{message}");
    let standard = "PREFIX p: <http://x/> SELECT ?x WHERE { ?x p:r \"a b\"@en-GB ; \
                    p:s \"1\"^^p:int ; a p:T . # bare words here\n \
                    FILTER(STR(?x) != 'cat' && ?x < 3) OPTIONAL { ?x <http://x/q> _:b } \
                    FILTER NOT EXISTS { ?x p:r true } } ORDER BY DESC(?x) x";
    let (_, _, message) = at(standard);
    assert!(!message.contains("bare word"), "{message}");
}

#[test]
fn a_variable_cannot_be_node_and_predicate() {
    let g = rdf();
    let err = failure("SELECT * WHERE { ?a ?a ?b }", &g);
    assert!(err.contains("?a is used both as a predicate"), "{err}");
}
