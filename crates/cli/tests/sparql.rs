//! Standard SPARQL 1.1 through `gpsense query`, on the embedded ConceptNet-100K: each query is
//! checked against the short dialect's answer to the same pattern (a separate parser and resolver),
//! with the filter, order or slice applied here in the test.

mod common;

use common::{fails, gpsense, ok};

const P: &str = "PREFIX c: <http://conceptnet.io/c/en/>\nPREFIX r: <http://conceptnet.io/r/>\n";

fn query(args: &[&str]) -> Vec<String> {
    let (out, _) = ok(&[&["query", "-q"][..], args].concat());
    out.lines().skip(1).map(str::to_owned).collect()
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

#[test]
fn a_standard_pattern_answers_as_the_short_one() {
    let standard = query(&[&format!(
        "{P}SELECT ?x WHERE {{ ?x r:IsA c:animal ; r:AtLocation c:home }}"
    )]);
    let short = query(&[
        "--semantics",
        "hom",
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
    ]);
    assert!(!short.is_empty());
    assert_eq!(sorted(standard), sorted(short));
    // Full IRIs, `,` and a literal for a concept.
    let standard = query(&["SELECT ?x WHERE { ?x <http://conceptnet.io/r/IsA> \"animal\", <http://conceptnet.io/c/en/pet> }"]);
    let short = query(&[
        "--semantics",
        "hom",
        "SELECT ?x WHERE { ?x IsA animal . ?x IsA pet }",
    ]);
    assert_eq!(sorted(standard), sorted(short));
}

#[test]
fn semantics_come_from_the_query() {
    let pattern = "?a r:IsA ?b . ?b r:IsA ?c";
    let hom = query(&[&format!("{P}SELECT * WHERE {{ {pattern} }}")]);
    let iso = query(&[&format!(
        "{P}SELECT * WHERE {{ {pattern} FILTER(?a != ?b && ?b != ?c && ?a != ?c) }}"
    )]);
    let short_hom = query(&[
        "--semantics",
        "hom",
        "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c }",
    ]);
    let short_iso = query(&["SELECT * WHERE { ?a IsA ?b . ?b IsA ?c }"]);
    assert_eq!(sorted(hom.clone()), sorted(short_hom.clone()));
    assert_eq!(sorted(iso), sorted(short_iso));
    // Only some pairs apart: hom with a test on rows.
    let partial = query(&[&format!(
        "{P}SELECT * WHERE {{ {pattern} FILTER(?a != ?c) }}"
    )]);
    let expected: Vec<String> = short_hom
        .into_iter()
        .filter(|row| {
            let f: Vec<&str> = row.split('\t').collect();
            f[0] != f[2]
        })
        .collect();
    assert!(
        expected.len() < hom.len(),
        "the filter must remove something"
    );
    assert_eq!(sorted(partial), sorted(expected));
    // `--semantics` given wins over the query's.
    let forced = query(&[
        "--semantics",
        "iso",
        &format!("{P}SELECT * WHERE {{ {pattern} }}"),
    ]);
    assert_eq!(
        sorted(forced),
        sorted(query(&["SELECT * WHERE { ?a IsA ?b . ?b IsA ?c }"]))
    );
    let (_, explain) = ok(&[
        "query",
        "--explain",
        &format!("{P}SELECT * WHERE {{ {pattern} FILTER(?a != ?c) }}"),
    ]);
    assert!(
        explain.contains("dialect:   standard SPARQL 1.1"),
        "{explain}"
    );
    let semantics: Vec<&str> = explain
        .lines()
        .filter(|l| l.starts_with("semantics:"))
        .collect();
    assert_eq!(semantics.len(), 1, "{explain}");
    assert!(
        semantics[0].starts_with("semantics: hom (")
            && semantics[0].ends_with("; as SPARQL evaluates a pattern"),
        "{explain}"
    );
    assert!(explain.contains("1 FILTER test(s) on rows"), "{explain}");
}

#[test]
fn filters_with_terms() {
    let rows = query(&[&format!(
        "{P}SELECT ?x ?y WHERE {{ ?x r:IsA ?y FILTER(?y IN (c:animal, c:pet) && ?x NOT IN (c:cat)) }}"
    )]);
    let short = query(&["--semantics", "hom", "SELECT ?x ?y WHERE { ?x IsA ?y }"]);
    let expected: Vec<String> = short
        .into_iter()
        .filter(|r| {
            let f: Vec<&str> = r.split('\t').collect();
            (f[1] == "animal" || f[1] == "pet") && f[0] != "cat"
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(sorted(rows), sorted(expected));
}

#[test]
fn count_ask_order_offset() {
    let (count, _) = ok(&[
        "query",
        "-q",
        &format!("{P}SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"),
    ]);
    let (short, _) = ok(&[
        "query",
        "--count",
        "--semantics",
        "hom",
        "SELECT ?x WHERE { ?x IsA animal }",
    ]);
    assert_eq!(count, format!("n\n{short}"));
    let (json, _) = ok(&[
        "query",
        "-q",
        "--format",
        "json",
        &format!("{P}SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"),
    ]);
    assert!(json.contains(&format!("\"n\": {}", short.trim())), "{json}");

    let yes = gpsense(&["query", "-q", &format!("{P}ASK {{ c:cat r:IsA ?x }}")]);
    assert_eq!(String::from_utf8_lossy(&yes.stdout), "yes\n");
    let no = gpsense(&["query", "-q", &format!("{P}ASK {{ c:cat r:IsA c:cat }}")]);
    assert_eq!(no.status.code(), Some(1));

    let all = query(&["--semantics", "hom", "SELECT ?x WHERE { ?x IsA animal }"]);
    let mut expected = all.clone();
    expected.sort_by(|a, b| b.cmp(a));
    let page = query(&[&format!(
        "{P}SELECT ?x WHERE {{ ?x r:IsA c:animal }} ORDER BY DESC(?x) LIMIT 5 OFFSET 3"
    )]);
    assert_eq!(page, expected[3..8]);
    // OFFSET without ORDER BY: the rows past it, whichever they are.
    let rest = query(&[&format!(
        "{P}SELECT ?x WHERE {{ ?x r:IsA c:animal }} OFFSET 4"
    )]);
    assert_eq!(rest.len(), all.len() - 4);
}

#[test]
fn unsupported_sparql_is_refused_by_name() {
    let err = fails(&[
        "query",
        &format!("{P}SELECT *\n  FROM <http://example.org/g> WHERE {{ ?x r:IsA c:animal }}"),
    ]);
    assert!(
        err.contains("line 4, column 3: FROM and FROM NAMED are not supported"),
        "{err}"
    );
    let err = fails(&["query", &format!("{P}SELECT * WHERE {{ ?x r:IsA ; }}")]);
    assert!(err.contains("SPARQL syntax"), "{err}");
    assert!(err.contains("line 3, column"), "{err}");
}

#[test]
fn several_standard_queries_in_one_input() {
    let text = format!(
        "{P}SELECT ?x WHERE {{ ?x r:IsA c:animal }} LIMIT 1\n\n{P}ASK {{ c:cat r:IsA ?x }}\n\
         SELECT ?x WHERE {{ ?x IsA pet }} LIMIT 1\n"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("q.rq");
    std::fs::write(&file, text).expect("write");
    let (out, err) = ok(&["query", "-f", &file.display().to_string()]);
    assert!(
        err.contains("query 2 (line 5)") && err.contains("query 3 (line 8)"),
        "{err}"
    );
    let sets: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(sets.len(), 3, "{out}");
    assert_eq!(sets[1], "yes");
}

/// Brackets nested without end are refused before any parser recurses into them (1,000 levels
/// overflowed the stack and aborted the process).
#[test]
fn deep_nesting_is_refused() {
    let deep = format!("ASK {{ {}?a ?b ?c{} }}", "{".repeat(1000), "}".repeat(1000));
    let err = fails(&["query", &deep]);
    assert!(
        err.contains("nests brackets 1001 deep, more than the limit of 64"),
        "{err}"
    );
}

/// The whole language through the full evaluator, each answer checked against the same pattern
/// answered another way on the graph path.
#[test]
fn the_full_language_answers_on_conceptnet() {
    // OPTIONAL: every animal, with its places where it has some; one without gets an empty cell.
    let animals = sorted(query(&[&format!(
        "{P}SELECT ?x WHERE {{ ?x r:IsA c:animal }}"
    )]));
    let with_places = query(&[&format!(
        "{P}SELECT ?x ?l WHERE {{ ?x r:IsA c:animal OPTIONAL {{ ?x r:AtLocation ?l }} }}"
    )]);
    let mut seen: Vec<String> = with_places
        .iter()
        .map(|r| r.split('\t').next().unwrap_or("").to_owned())
        .collect();
    seen.dedup();
    assert_eq!(sorted(seen), animals);
    assert!(
        with_places.iter().any(|r| r.ends_with('\t')),
        "an animal with no place"
    );
    // UNION is the two patterns' rows together.
    let union = query(&[&format!(
        "{P}SELECT ?x WHERE {{ {{ ?x r:IsA c:animal }} UNION {{ ?x r:IsA c:pet }} }}"
    )]);
    let pets = query(&[&format!("{P}SELECT ?x WHERE {{ ?x r:IsA c:pet }}")]);
    assert_eq!(union.len(), animals.len() + pets.len());
    // A path: IsA+ from dog reaches what IsA/IsA reaches.
    let reach = query(&[&format!(
        "{P}SELECT DISTINCT ?y WHERE {{ c:dog r:IsA+ ?y }}"
    )]);
    let two = query(&[&format!(
        "{P}SELECT DISTINCT ?y WHERE {{ c:dog r:IsA/r:IsA ?y }}"
    )]);
    assert!(
        two.iter().all(|y| reach.contains(y)),
        "{two:?} within {reach:?}"
    );
    // GROUP BY: the counts add up to the rows counted.
    let counts = query(&[&format!(
        "{P}SELECT ?x (COUNT(?l) AS ?n) WHERE {{ ?x r:IsA c:animal ; r:AtLocation ?l }} GROUP BY ?x"
    )]);
    let rows = query(&[&format!(
        "{P}SELECT ?x ?l WHERE {{ ?x r:IsA c:animal ; r:AtLocation ?l }}"
    )]);
    let total: usize = counts
        .iter()
        .map(|r| {
            let n = r.rsplit('\t').next().unwrap_or("");
            // The count is an xsd:integer literal in N-Triples form.
            n.trim_start_matches('"')
                .split('"')
                .next()
                .and_then(|d| d.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("a count: {r}"))
        })
        .sum();
    assert_eq!(total, rows.len());
    // CONSTRUCT writes N-Triples, one per solution.
    let (out, _) = ok(&[
        "query",
        "-q",
        &format!("{P}CONSTRUCT {{ ?x r:Kind c:animal }} WHERE {{ ?x r:IsA c:animal }}"),
    ]);
    assert_eq!(out.lines().count(), animals.len());
    assert!(out.lines().all(|l| l.ends_with(" .")), "{out}");
}

/// An IRI the graph lacks gives the standard's empty answer, the suggestion as a note; a query of
/// variables only is standard SPARQL (hom), as the endpoint reads it.
#[test]
fn one_reading_for_unknown_names_and_variables_only() {
    let (out, err) = ok(&[
        "query",
        &format!("{P}SELECT ?x WHERE {{ ?x r:IsA c:animl }}"),
    ]);
    assert_eq!(out.trim(), "x");
    assert!(err.contains("did you mean \"animal\""), "{err}");
    let (out, err) = ok(&[
        "query",
        "--explain",
        "SELECT ?a ?b WHERE { ?a ?r ?b . ?b ?s ?a } LIMIT 3",
    ]);
    assert!(err.contains("standard SPARQL"), "{err}");
    assert!(err.contains("hom"), "{err}");
    assert_eq!(out.lines().count(), 4, "{out}");
}

/// `query --base` resolves relative IRIs in the query and in a text graph alike.
#[test]
fn base_resolves_relative_iris_in_query_and_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("rel.ttl");
    std::fs::write(&data, "<a> <p> <b> .\n<b> <p> <c> .\n").expect("write");
    let graph = data.display().to_string();
    let err = fails(&["query", "--graph", &graph, "SELECT * WHERE { ?s ?p ?o }"]);
    assert!(err.contains("--base IRI"), "{err}");
    let rows = query(&[
        "--graph",
        &graph,
        "--base",
        "http://example.org/",
        "SELECT ?o WHERE { <a> <p>+ ?o }",
    ]);
    assert_eq!(
        sorted(rows),
        ["http://example.org/b", "http://example.org/c"]
    );
}

#[test]
fn explain_names_the_evaluator_that_ran() {
    let evaluator = |text: &str| {
        let (_, explain) = ok(&["query", "--explain", "--count", text]);
        explain
            .lines()
            .find_map(|l| l.strip_prefix("evaluator: "))
            .unwrap_or_else(|| panic!("no evaluator line: {explain}"))
            .to_owned()
    };
    // OPTIONAL: the native evaluator.
    let native = evaluator(&format!(
        "{P}SELECT ?x ?y WHERE {{ ?x r:IsA c:animal OPTIONAL {{ ?x r:AtLocation ?y }} }}"
    ));
    assert!(native.starts_with("native evaluator"), "{native}");
    // CONSTRUCT is spareval's.
    let spareval = evaluator(&format!(
        "{P}CONSTRUCT {{ ?x r:Kind c:animal }} WHERE {{ ?x r:IsA c:animal OPTIONAL {{ ?x r:AtLocation ?y }} }}"
    ));
    assert!(spareval.starts_with("spareval"), "{spareval}");
}

/// `--max-cartesian` bounds a disconnected pattern inside OPTIONAL as it bounds a whole query.
#[test]
fn max_cartesian_bounds_a_pattern_inside_the_algebra() {
    let q = format!(
        "{P}SELECT * WHERE {{ ?x r:IsA c:animal OPTIONAL {{ ?a r:IsA c:animal . ?b r:AtLocation c:home }} }}"
    );
    let err = fails(&["query", "--max-cartesian", "1000", &q]);
    assert!(err.contains("the query is disconnected"), "{err}");
    let (out, _) = ok(&["query", "--count", &q]);
    assert!(out.trim().parse::<u64>().expect("a count") > 1000, "{out}");
}
