//! Query text built from the input: runs of brackets behind escapes, codepoint escapes, strings,
//! comments and `<...>`, thousands deep. `prepare` answers or refuses; the stack never overflows.
#![no_main]

use std::sync::OnceLock;

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::{prepare, Dialect};
use libfuzzer_sys::fuzz_target;

const PIECES: [&str; 24] = [
    "(", ")", "{", "}", "[", "]", "e:a\\#", "e:a\\)", "\\u0028", "\\u0023", "<", ">", "\"", "'",
    "\"\"\"", "'''", "#", "\n", "?o", " = ", "<http://x/>", " FILTER", "\\", "<a(>",
];

fn graph() -> &'static KnowledgeGraph {
    static GRAPH: OnceLock<KnowledgeGraph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let mut b = GraphBuilder::new();
        b.add_triple("http://x/s", "http://x/a#", "http://x/o", 1.0)
            .expect("a triple");
        b.build().expect("a graph").0
    })
}

fuzz_target!(|data: &[u8]| {
    // Each pair of bytes: a piece and how often it repeats (up to 1,024 times).
    let mut text = String::from("PREFIX e: <http://x/> SELECT * WHERE { ?s ?p ?o FILTER(");
    for pair in data.chunks_exact(2) {
        let piece = PIECES[usize::from(pair[0]) % PIECES.len()];
        let times = 1usize << (pair[1] % 11);
        text.push_str(&piece.repeat(times));
    }
    text.push_str(") }");
    for dialect in [Dialect::Sparql, Dialect::Short] {
        let _ = prepare(&text, graph(), dialect);
    }
});
