use super::*;

fn ok(text: &str) -> Query {
    match parse(text) {
        Ok(q) => q,
        Err(e) => panic!("{}", e.render(text)),
    }
}

/// The error of `text`, checked to be at `(line, column)` and to contain `needle`.
fn err(text: &str, line: usize, column: usize, needle: &str) -> ParseError {
    let e = match parse(text) {
        Ok(q) => panic!("{text:?} parsed: {q:?}"),
        Err(e) => e,
    };
    assert_eq!((e.line, e.column), (line, column), "{e} for {text:?}");
    assert!(e.message.contains(needle), "{e:?} lacks {needle:?}");
    e
}

fn names(q: &Query) -> Vec<[String; 3]> {
    q.triples
        .iter()
        .map(|t| {
            [&t.subject, &t.predicate, &t.object].map(|s| match &s.value {
                Term::Variable(v) => format!("?{v}"),
                Term::Name(n) => n.clone(),
            })
        })
        .collect()
}

/// Projected variable names (`None` for `*`), without positions.
fn projected(q: &Query) -> Option<Vec<String>> {
    match &q.projection {
        Projection::All => None,
        Projection::Variables(v) => Some(v.iter().map(|v| v.value.clone()).collect()),
    }
}

fn at(line: usize, column: usize) -> Span {
    Span { line, column }
}

#[test]
fn the_example_query() {
    let q =
        ok(r#"SELECT DISTINCT ?a ?r WHERE { ?a IsA animal . ?a ?r "chocolate cake" . } LIMIT 10"#);
    assert!(q.distinct);
    assert_eq!(q.limit, Some(10));
    let Projection::Variables(vars) = &q.projection else {
        panic!("not variables")
    };
    let vars: Vec<_> = vars.iter().map(|v| (v.value.as_str(), v.span)).collect();
    assert_eq!(vars, [("a", at(1, 17)), ("r", at(1, 20))]);
    assert_eq!(
        names(&q),
        [
            ["?a", "IsA", "animal"].map(String::from),
            ["?a", "?r", "chocolate cake"].map(String::from)
        ]
    );
    let t = &q.triples[1];
    assert_eq!(
        (t.subject.span, t.predicate.span, t.object.span),
        (at(1, 47), at(1, 50), at(1, 53))
    );
}

#[test]
fn keywords_are_case_insensitive_and_where_is_optional() {
    let q = ok("select distinct * where { ?x isa ?y } limit 3");
    assert!(q.distinct && q.projection == Projection::All && q.limit == Some(3));
    let q = ok("SeLeCt ?x {?x IsA animal}");
    assert!(!q.distinct && q.limit.is_none());
    assert_eq!(names(&q)[0], ["?x", "IsA", "animal"].map(String::from));
}

/// `ASK` is a yes/no question: it projects nothing, as a query without variables does, and
/// renders back as ASK. A bare `ask` inside the braces is a concept.
#[test]
fn ask_projects_nothing() {
    for text in ["ASK { ?x IsA ask }", "ask where {?x IsA ask.}"] {
        let q = ok(text);
        assert_eq!(q.projection, Projection::Variables(Vec::new()), "{text}");
        assert!(!q.distinct && q.limit.is_none());
        assert_eq!(names(&q)[0], ["?x", "IsA", "ask"].map(String::from));
        assert_eq!(q.to_string(), "ASK WHERE { ?x IsA ask . }");
        let again = ok(&q.to_string());
        assert_eq!(
            (&again.projection, names(&again)),
            (&q.projection, names(&q))
        );
    }
}

#[test]
fn final_dot_is_optional_and_braces_need_no_spaces() {
    let a = ok("SELECT * WHERE{?a IsA animal.?a AtLocation home.}");
    let b = ok("SELECT * WHERE { ?a IsA animal . ?a AtLocation home }");
    assert_eq!(names(&a), names(&b));
    assert_eq!(
        names(&ok("SELECT * {?a IsA animal}")),
        names(&ok("SELECT *{?a IsA animal .}"))
    );
}

#[test]
fn comments_run_to_the_end_of_the_line_outside_quotes() {
    let q = ok(
        "# find animals\nSELECT ?x # the animal\nWHERE {\n  ?x IsA \"a # b\" . # not a concept\n}",
    );
    assert_eq!(names(&q), [["?x", "IsA", "a # b"].map(String::from)]);
    assert_eq!(q.triples[0].object.span, at(4, 10));
    // A comment right after a word ends it.
    let q = ok("SELECT ?x { ?x IsA animal# comment\n}");
    assert_eq!(names(&q)[0][2], "animal");
}

#[test]
fn quoted_names_both_quotes_and_escapes() {
    let q = ok(r#"SELECT * { ?x 'Is A' "say \"hi\"\\" . ?x IsA 'it\'s' . ?x IsA "a\tb\nc" }"#);
    let n = names(&q);
    assert_eq!(n[0][1], "Is A");
    assert_eq!(n[0][2], "say \"hi\"\\");
    assert_eq!(n[1][2], "it's");
    assert_eq!(n[2][2], "a\tb\nc");
}

#[test]
fn dots_inside_bare_words() {
    let q = ok("SELECT * { ?x IsA dog.n.01 . ?x HasA 3.5 . ?y IsA st.. ?y IsA end.}");
    let n = names(&q);
    assert_eq!(
        [&n[0][2], &n[1][2], &n[2][2], &n[3][2]],
        ["dog.n.01", "3.5", "st.", "end"]
    );
    // A dot followed by a variable or a string separates, too.
    let n = names(&ok("SELECT * { ?x IsA a.?x IsA b.\"c d\" IsA ?x }"));
    assert_eq!([&n[0][2], &n[1][2], &n[2][0]], ["a", "b", "c d"]);
}

#[test]
fn apostrophes_inside_bare_words() {
    let n = names(&ok("SELECT * { ?x IsA bull's-eye . baha'i IsA ?x }"));
    assert_eq!([&n[0][2], &n[1][0]], ["bull's-eye", "baha'i"]);
}

#[test]
fn unicode_names_variables_and_columns() {
    let text = "SELECT ?кто WHERE {\n  ?кто IsA «кошка» . ?кто AtLocation \"дом и сад\" .\n  ?кто ЛюбитЕсть рыба }";
    let q = ok(text);
    let n = names(&q);
    assert_eq!(n[0], ["?кто", "IsA", "«кошка»"].map(String::from));
    assert_eq!(n[1][2], "дом и сад");
    assert_eq!(n[2][1], "ЛюбитЕсть");
    // Columns count chars, not bytes.
    assert_eq!(q.triples[0].object.span, at(2, 12));
    assert_eq!(q.triples[1].predicate.span, at(2, 27));
    let e = err("SELECT ?кто { ?кто IsA кошка } LIMIT много", 1, 38, "LIMIT");
    assert!(e.message.contains("\"много\""), "{e}");
}

#[test]
fn limit_values() {
    assert_eq!(ok("SELECT * { ?x IsA y } LIMIT 0").limit, Some(0));
    assert_eq!(
        ok("SELECT * { ?x IsA y } limit 18446744073709551615").limit,
        Some(u64::MAX)
    );
    err(
        "SELECT * { ?x IsA y } LIMIT -1",
        1,
        29,
        "non-negative integer",
    );
    err(
        "SELECT * { ?x IsA y } LIMIT 1.5",
        1,
        29,
        "non-negative integer",
    );
    err(
        "SELECT * { ?x IsA y } LIMIT 18446744073709551616",
        1,
        29,
        "below 2^64",
    );
    err(
        "SELECT * { ?x IsA y } LIMIT",
        1,
        28,
        "found the end of the query",
    );
    err(
        "SELECT * { ?x IsA y } LIMIT \"5\"",
        1,
        29,
        "non-negative integer",
    );
}

#[test]
fn the_brief_error_example() {
    let text = "SELECT ?a WHERE {\n  ?a IsA animal LIMIT 5";
    let e = err(text, 2, 17, "expected '.' or '}' after a triple");
    assert_eq!(
        e.to_string(),
        "line 2, column 17: expected '.' or '}' after a triple, found \"LIMIT\""
    );
    assert_eq!(
        e.render(text),
        "line 2, column 17: expected '.' or '}' after a triple, found \"LIMIT\"\n\
         2 |   ?a IsA animal LIMIT 5\n  \
           |                 ^"
    );
}

#[test]
fn render_keeps_tabs_and_survives_bad_positions() {
    let e = ParseError::at(at(1, 3), "boom");
    assert_eq!(
        e.render("\tab"),
        "line 1, column 3: boom\n1 | \tab\n  | \t ^"
    );
    let far = ParseError::at(at(9, 1), "x");
    assert!(far.render("one line").ends_with("9 | \n  | ^"));
}

#[test]
fn errors_in_the_head() {
    err(
        "",
        1,
        1,
        "expected SELECT or ASK, found the end of the query",
    );
    err("SELEKT ?x { ?x IsA y }", 1, 1, "unknown keyword \"SELEKT\"");
    err("{ ?x IsA y }", 1, 1, "expected SELECT or ASK");
    err("ASK ?x { ?x IsA y }", 1, 5, "expected '{'");
    err("ASK DISTINCT { ?x IsA y }", 1, 5, "expected WHERE or '{'");
    err(
        "SELECT WHERE { ?x IsA y }",
        1,
        8,
        "expected '*' or at least one ?variable",
    );
    err(
        "SELECT ?x FROM <g> { ?x IsA y }",
        1,
        11,
        "unknown keyword \"FROM\"",
    );
    err("SELECT ?x WHERE ?x IsA y", 1, 17, "expected '{'");
    err("SELECT ? { ?x IsA y }", 1, 8, "variable name");
}

#[test]
fn errors_in_the_pattern() {
    err("SELECT * WHERE { }", 1, 16, "empty WHERE");
    err("SELECT * WHERE {\n}", 1, 16, "empty WHERE");
    err("SELECT * { ?x IsA }", 1, 19, "expected an object");
    err("SELECT * { . ?x IsA y }", 1, 12, "expected a subject");
    err("SELECT * { ?x { y }", 1, 15, "expected a predicate");
    err("SELECT * { ?x IsA y . . }", 1, 23, "expected a subject");
    err("SELECT * { ?x IsA y", 1, 20, "missing '}'");
    err("SELECT * { ?x IsA \"\" }", 1, 19, "empty name");
    err("SELECT * { ?x IsA y z }", 1, 21, "expected '.' or '}'");
}

#[test]
fn unterminated_strings_point_at_the_opening_quote() {
    err(
        "SELECT * { ?x IsA \"chocolate cake }",
        1,
        19,
        "unterminated string",
    );
    err(
        "SELECT * {\n ?x IsA 'cake\n' }",
        2,
        9,
        "unterminated string",
    );
    err("SELECT * { ?x IsA \"cake\\", 1, 19, "unterminated string");
    err(
        "SELECT * { ?x IsA \"ca\\ke\" }",
        1,
        22,
        "unknown escape \\k",
    );
}

#[test]
fn errors_after_the_pattern() {
    err(
        "SELECT * { ?x IsA y } ORDER BY ?x",
        1,
        23,
        "unknown keyword \"ORDER\"",
    );
    err(
        "SELECT * { ?x IsA y } LIMIT 1 LIMIT 2",
        1,
        31,
        "trailing input",
    );
    err("SELECT * { ?x IsA y } }", 1, 23, "trailing input");
    err("SELECT * { ?x IsA y } LIMIT 5 .", 1, 31, "trailing input");
}

#[test]
fn projected_variables_must_occur() {
    err(
        "SELECT ?x ?z WHERE { ?x IsA y }",
        1,
        11,
        "?z is selected but does not occur",
    );
    // Edge variables may be projected.
    ok("SELECT ?r WHERE { ?x ?r y }");
}

#[test]
fn a_variable_is_a_node_or_an_edge_not_both() {
    let e = err(
        "SELECT * {\n ?x ?r ?y .\n ?r IsA z }",
        3,
        2,
        "?r is used here as a node",
    );
    assert!(e.message.contains("line 2, column 5"), "{e}");
    err("SELECT * { ?x ?x ?y }", 1, 15, "?x is used here as an edge");
}

#[test]
fn keywords_inside_the_pattern_are_names() {
    let n = names(&ok("SELECT * { ?x IsA limit . select where ?x }"));
    assert_eq!(n[0][2], "limit");
    assert_eq!(n[1], ["select", "where", "?x"].map(String::from));
}

#[test]
fn display_round_trips() {
    let texts = [
        "select distinct * where { ?x isa 'ice cream' . ?x ?r st.. } limit 7",
        "SELECT ?a { \"a \\\"quoted\\\" name\" HasA ?a . ?a IsA dog.n.01 . ?a IsA \"tab\\there\" }",
        "SELECT ?кто { ?кто IsA кошка . ?кто 'Is A' \"#hash\" . ?кто IsA \"{brace}\" }",
        "SELECT * { ?x IsA \"end.\" . ?x IsA \".start\" . ?x IsA \"'q\" . ?x IsA bull's-eye }",
    ];
    for text in texts {
        let q = ok(text);
        let printed = q.to_string();
        let again = ok(&printed);
        assert_eq!(names(&again), names(&q), "{printed}");
        assert_eq!(projected(&again), projected(&q), "{printed}");
        assert_eq!((again.distinct, again.limit), (q.distinct, q.limit));
    }
}

#[test]
fn quoting_only_when_needed() {
    assert_eq!(quote_if_needed("animal"), "animal");
    assert_eq!(quote_if_needed("dog.n.01"), "dog.n.01");
    assert_eq!(quote_if_needed("ice cream"), "\"ice cream\"");
    assert_eq!(quote_if_needed("st."), "\"st.\"");
    assert_eq!(quote_if_needed("'q"), "\"'q\"");
    assert_eq!(quote_if_needed("say \"hi\""), "\"say \\\"hi\\\"\"");
    assert_eq!(quote_if_needed(""), "\"\"");
}

#[test]
fn never_panics_on_arbitrary_input() {
    // Every prefix of a few tricky queries: each must parse or fail with a position inside the text.
    let texts = [
        "SELECT DISTINCT ?a ?r WHERE { ?a IsA 'x\\'y' . ?a ?r \"кот # x\" . } LIMIT 10 # c",
        "select*{?x ?y ?z.a.b.c ?q \"\\",
    ];
    for text in texts {
        for (i, _) in text.char_indices() {
            if let Err(e) = parse(&text[..i]) {
                assert!(e.line >= 1 && e.column >= 1);
                let _ = e.render(&text[..i]);
            }
        }
    }
}

#[test]
fn a_long_line_shows_a_window_around_the_error() {
    let long = "x".repeat(1 << 20);
    let text = format!("SELECT ?a WHERE {{ ?a IsA {long} ?a IsA {long} }}");
    let e = crate::parse(&text).unwrap_err();
    let shown = e.render(&text);
    assert!(
        shown.len() < 800,
        "{} bytes: {}",
        shown.len(),
        &shown[..200]
    );
    let lines: Vec<&str> = shown.lines().collect();
    assert!(
        lines[1].contains("| ...") && lines[1].ends_with("..."),
        "{shown}"
    );
    // The caret sits under the column the message names.
    let caret = lines[2].find('^').unwrap();
    let col = e.column - 1;
    let line_start = lines[1].find("| ").unwrap() + 2;
    let shown_char = lines[1][line_start..]
        .chars()
        .nth(caret - line_start)
        .unwrap();
    assert_eq!(shown_char, text.chars().nth(col).unwrap(), "{shown}");
}
