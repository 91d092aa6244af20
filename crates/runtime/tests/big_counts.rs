//! Counts past 2^64 are exact and counts past 2^128 - 1 are an error, in every engine that counts:
//! stars on hubs (the dfs search's leaf groups, its sums and twins) and disconnected queries (the
//! product of their components' counts, on dfs, kernels, the emulated GPU and a compressed graph).

use std::sync::OnceLock;

use gpsense_compress::{compress, CompressOptions, NoProgress};
use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::{compile, QueryGraph};
use gpsense_runtime::{CompressedEngine, Engine, EngineKind, MatchError, MatchOptions, Semantics};

/// Out-neighbours of the hub `h` over `r`: a star with `k` leaves on it has 2^(16k) hom matches.
const WIDE: u32 = 1 << 16;

/// `h -r->` every `n<i>` (2^16 of them); `g -s->`, `h3 -t->` and `h4 -t->` all but the last
/// (2^16 - 1 each).
fn hubs() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let mut b = GraphBuilder::new();
        for i in 0..WIDE {
            let leaf = format!("n{i}");
            b.add_triple("h", "r", &leaf, 1.0).unwrap();
            if i + 1 < WIDE {
                for (hub, rel) in [("g", "s"), ("h3", "t"), ("h4", "t")] {
                    b.add_triple(hub, rel, &leaf, 1.0).unwrap();
                }
            }
        }
        b.build().unwrap().0
    })
}

fn engine() -> &'static Engine<'static> {
    static E: OnceLock<Engine<'static>> = OnceLock::new();
    E.get_or_init(|| Engine::new(hubs()))
}

/// `?x rel ?a0 . ... ?x rel ?a<k-1>`.
fn star(rel: &str, k: usize) -> String {
    let edges: Vec<String> = (0..k).map(|i| format!("?x {rel} ?a{i}")).collect();
    format!("SELECT * WHERE {{ {} }}", edges.join(" . "))
}

/// `k` components `?a<i> rel ?b<i>`, each with as many matches as `rel` has edges.
fn components(rel: &str, k: usize) -> String {
    let edges: Vec<String> = (0..k).map(|i| format!("?a{i} {rel} ?b{i}")).collect();
    format!("SELECT * WHERE {{ {} }}", edges.join(" . "))
}

fn query(g: &KnowledgeGraph, text: &str) -> QueryGraph {
    compile(text, g).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn opts(engine: EngineKind, semantics: Semantics) -> MatchOptions {
    MatchOptions {
        engine,
        semantics,
        ..MatchOptions::default()
    }
}

fn count(text: &str, engine_kind: EngineKind, semantics: Semantics) -> Result<u128, MatchError> {
    let q = query(hubs(), text);
    engine()
        .count(&q, &opts(engine_kind, semantics))
        .map(|r| r.rows)
}

/// `n (n - 1) ... (n - k + 1)`.
fn falling(n: u128, k: u128) -> u128 {
    (0..k).map(|j| n - j).product()
}

/// On `dfs` and on the device (the emulator), which counts the leaves in `count_leaves`.
#[test]
fn leaf_groups_count_exactly_on_either_side_of_64_bits() {
    let w = u128::from(WIDE);
    for kind in [EngineKind::Dfs, EngineKind::Emulated] {
        let hom = |text: &str| count(text, kind, Semantics::Hom);
        // (2^16 - 1)^4 is just below 2^64; 2^64 itself is one past u64::MAX (the old count
        // saturated or wrapped there).
        assert_eq!(hom(&star("s", 4)), Ok((w - 1).pow(4)), "{kind}");
        assert_eq!(hom(&star("r", 4)), Ok(1 << 64), "{kind}");
        assert_eq!(hom(&star("r", 7)), Ok(1 << 112), "{kind}");
        // Two hubs with the same lists: a sum of two products.
        assert_eq!(hom(&star("t", 7)), Ok(2 * (w - 1).pow(7)), "{kind}");
        // Injective: one group of leaves, a falling factorial just below 2^128.
        let iso = count(&star("r", 8), kind, Semantics::Iso);
        assert_eq!(iso, Ok(falling(w, 8)), "{kind}");
        assert!(iso.unwrap() > u128::MAX - (1 << 119));
    }
}

#[test]
fn counts_past_128_bits_are_an_error_not_a_wrapped_number() {
    for kind in [EngineKind::Dfs, EngineKind::Emulated] {
        // 2^128: the product of one hub's leaves.
        let hom8 = count(&star("r", 8), kind, Semantics::Hom);
        assert_eq!(hom8, Err(MatchError::CountOverflow), "{kind}");
        // Two hubs' 2^128 - 2^123 or so each: the sum of their products.
        let sum = count(&star("t", 8), kind, Semantics::Hom);
        assert_eq!(sum, Err(MatchError::CountOverflow), "{kind}");
        let iso9 = count(&star("r", 9), kind, Semantics::Iso);
        assert_eq!(iso9, Err(MatchError::CountOverflow), "{kind}");
    }
    let message = MatchError::CountOverflow.to_string();
    assert!(message.contains("more than 2^128 - 1"), "{message}");
}

/// `h -r->` 2^13 nodes: `k` components `?a<i> r ?b<i>` have 2^(13k) hom matches.
fn small() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let mut b = GraphBuilder::new();
        for i in 0..1 << 13 {
            b.add_triple("h", "r", &format!("n{i}"), 1.0).unwrap();
        }
        b.build().unwrap().0
    })
}

#[test]
fn disconnected_products_are_exact_in_every_engine() {
    let g = small();
    let e = Engine::new(g);
    for engine_kind in [EngineKind::Dfs, EngineKind::Kernels, EngineKind::Emulated] {
        let hom = opts(engine_kind, Semantics::Hom);
        let got = |k: usize| {
            e.count(&query(g, &components("r", k)), &hom)
                .map(|r| r.rows)
        };
        assert_eq!(got(5), Ok(1 << 65), "{engine_kind}");
        assert_eq!(got(10), Err(MatchError::CountOverflow), "{engine_kind}");
    }
    // 2^64 itself, one past u64::MAX, and one component short of 2^128.
    let hom = |text: &str| count(text, EngineKind::Dfs, Semantics::Hom);
    assert_eq!(hom(&components("r", 4)), Ok(1 << 64));
    assert_eq!(hom(&components("r", 7)), Ok(1 << 112));
    assert_eq!(hom(&components("r", 8)), Err(MatchError::CountOverflow));
}

#[test]
fn compressed_graph_products_are_exact() {
    // The leaves merge into hyper-nodes: each component's count is expanded through them.
    let g = small();
    let c = compress(g, &CompressOptions::default(), &NoProgress).unwrap();
    assert!(
        c.top().node_count() < g.node_count() / 2,
        "the leaves merged"
    );
    let ce = CompressedEngine::new(g, &c).unwrap();
    let hom = opts(EngineKind::Dfs, Semantics::Hom);
    let got = |k: usize| ce.count(&query(g, &components("r", k)), &hom);
    assert_eq!(got(5).unwrap().report.rows, 1 << 65);
    assert_eq!(got(10).err(), Some(MatchError::CountOverflow));
}
