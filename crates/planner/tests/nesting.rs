//! No query text can make the parser overflow its stack: deep nesting is refused before any
//! parser recurses, whatever hides the brackets from a naive scan (escapes in prefixed names,
//! codepoint escapes, strings and IRIs that the parser reads otherwise). Each query is prepared
//! on a thread with a small stack, so a miss aborts this test process instead of passing.

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::sparql::MAX_NESTING;
use gpsense_planner::{prepare, Dialect};

/// Enough for 64 levels of the parser unoptimised (tests build without optimisation); far too
/// little for 10,000.
const STACK: usize = 4 << 20;

fn graph() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    b.add_triple("http://x/s", "http://x/a#", "http://x/o", 1.0)
        .expect("a triple");
    b.build().expect("a graph").0
}

/// `prepare`'s outcome on a small stack: `Err(message)` or `Ok(())`.
fn prepare_on_small_stack(g: &'static KnowledgeGraph, text: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            prepare(&text, g, Dialect::Sparql)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .expect("a thread")
        .join()
        .expect("prepare does not panic")
}

fn leaked_graph() -> &'static KnowledgeGraph {
    Box::leak(Box::new(graph()))
}

#[test]
fn the_reported_attacks_are_refused() {
    let g = leaked_graph();
    let n = 10_000;
    let open = "(".repeat(n);
    let close = ")".repeat(n);
    let hash = format!(
        "PREFIX e: <http://x/> SELECT * WHERE {{ ?s e:a\\# ?o FILTER({open}?o{close} = ?o) }}"
    );
    let paren = format!(
        "PREFIX e: <http://x/> SELECT * WHERE {{ ?s ?p ?o FILTER({}?o{}) }}",
        "(e:a\\) = ".repeat(n),
        ")".repeat(n)
    );
    for text in [hash, paren] {
        let err = prepare_on_small_stack(g, text).expect_err("refused");
        assert!(err.contains("nests brackets"), "{err}");
    }
}

#[test]
fn every_escape_and_hiding_place_is_seen_through() {
    let g = leaked_graph();
    let deep = |prefix: &str| {
        format!(
            "PREFIX e: <http://x/> SELECT * WHERE {{ ?s ?p ?o {prefix} FILTER({}?o{}) }}",
            "(".repeat(5_000),
            ")".repeat(5_000)
        )
    };
    let mut hiders: Vec<String> = "_~.-!$&'()*+,;=/?#@%"
        .chars()
        .map(|c| format!("?s e:a\\{c} ?o ."))
        .collect();
    hiders.extend(
        [
            "?s e:a\\u0023 ?o .",            // `#` once decoded
            "\"\"\"never closed\" ",         // an empty string, then a short one
            "FILTER(?o <a)))))))))))))> 1)", // not an IRI: closers that close nothing
            "# a comment\n",
            "'''\\''''",
        ]
        .map(String::from),
    );
    for hider in hiders {
        let text = deep(&hider);
        let err = prepare_on_small_stack(g, text).expect_err("refused");
        assert!(err.contains("nests brackets"), "{hider}: {err}");
    }
    let codepoints = format!(
        "SELECT * WHERE {{ ?s ?p ?o FILTER({}?o{}) }}",
        "\\u0028".repeat(5_000),
        "\\u0029".repeat(5_000)
    );
    assert!(prepare_on_small_stack(g, codepoints).is_err());
}

#[test]
fn the_deepest_allowed_nesting_parses_on_a_small_stack() {
    let g = leaked_graph();
    let inner = MAX_NESTING - 4;
    let filter = format!(
        "SELECT * WHERE {{ ?s <http://x/a#> ?o FILTER({}?o{} = ?o) }}",
        "(".repeat(inner),
        ")".repeat(inner)
    );
    let groups = format!(
        "SELECT * WHERE {{ {}?s <http://x/a#> ?o{} }}",
        "{".repeat(inner),
        "}".repeat(inner)
    );
    for text in [filter, groups] {
        // Answered, or refused for what it asks, never for its depth, and never overflowing.
        if let Err(e) = prepare_on_small_stack(g, text) {
            assert!(!e.contains("nests brackets"), "{e}");
        }
    }
}

/// A small deterministic fuzz: random mixtures of brackets, escapes, strings, comments and IRIs,
/// thousands deep. Each is refused or parsed; none overflows the small stack.
#[test]
fn random_deep_mixtures_never_overflow() {
    let g = leaked_graph();
    let pieces = [
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "e:a\\#",
        "e:a\\)",
        "e:a\\(",
        "\\u0028",
        "\\u0023",
        "<",
        ">",
        "\"",
        "'",
        "\"\"\"",
        "'''",
        "#",
        "\n",
        "?o",
        " = ",
        "<http://x/>",
        " FILTER",
        "\\",
        "!",
        "((((((((",
        "[[[[",
        "{{{{",
        "<a((((>",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    for _ in 0..300 {
        let mut text = String::from("PREFIX e: <http://x/> SELECT * WHERE { ?s ?p ?o FILTER(");
        for _ in 0..next(4_000) + 200 {
            text.push_str(pieces[next(pieces.len())]);
        }
        text.push_str(") }");
        let _ = prepare_on_small_stack(g, text);
    }
}
