//! Levels with an edge variable in the emulated GPU pipeline (`extend_warp_bindings`: a warp per
//! parent, each lane counting its pivot entry's bindings, a warp scan ranking them, one claim per
//! warp), on ConceptNet-100K: the answers are `dfs`'s, rows and counts, with parallel relations
//! between two concepts and an edge variable on two edges; the levels are queued back to back
//! (one read for a count, however many levels bind relations); a level over the memory budget
//! runs depth first in chunks within the budget; LIMIT stops the last level; a batch keeps them.

use gpsense_runtime::{Engine, EngineKind};

mod conceptnet100k;
use conceptnet100k::{compiled, conceptnet, options};

/// Queries whose levels bind relations: a variable edge to a concept, parallel relations beside a
/// fixed one (a pair linked by `IsA` and by others: several rows per candidate), one edge
/// variable on two edges, and a path of three variable edges.
const QUERIES: [&str; 4] = [
    "SELECT * WHERE { ?x ?r animal . ?x IsA ?y }",
    "SELECT * WHERE { ?x IsA ?y . ?x ?r ?y . ?y AtLocation ?z }",
    "SELECT * WHERE { ?x ?r ?y . ?x ?r ?z . ?y IsA ?z }",
    "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t dog }",
];

#[test]
fn edge_variable_levels_answer_as_dfs_with_their_levels_queued() {
    for text in QUERIES {
        let q = compiled(text);
        let dfs = Engine::new(conceptnet());
        let (mut want, _) = dfs.collect(&q, &options(EngineKind::Dfs, 1 << 30)).unwrap();
        let engine = Engine::new(conceptnet());
        let emulated = options(EngineKind::Emulated, 1 << 30);
        // Cold, a level may outgrow its first buffer and run again; warm, the arena holds it.
        engine.collect(&q, &emulated).unwrap();
        let (mut got, rows) = engine.collect(&q, &emulated).unwrap();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{text}");
        let count = engine.count(&q, &emulated).unwrap();
        assert_eq!(count.rows, want.len() as u128, "{text}");
        let (r, c) = (rows.device_report.unwrap(), count.device_report.unwrap());
        println!(
            "{text}: {} rows; warm, rows: {} launches, {} reads; count: {} launches, {} reads, {} \
             partial matches",
            want.len(),
            r.counters.launches,
            r.counters.syncs,
            c.counters.launches,
            c.counters.syncs,
            c.partial_matches,
        );
        // Filtering's read, and one read of every level's counter (one more for rows): the
        // count-then-write join read each level's total before writing it.
        assert!(c.counters.syncs <= 2, "{text}: {} reads", c.counters.syncs);
        assert!(r.counters.syncs <= 3, "{text}: {} reads", r.counters.syncs);
    }
}

/// Room for the candidate space and some ten thousand rows of 8 slots (4 nodes, 4 relations); the
/// query's levels take 40,045 rows.
const SMALL: u64 = 384 << 10;

const DEEP: &str = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u animal }";

#[test]
fn an_edge_variable_level_over_the_budget_runs_depth_first_within_it() {
    let q = compiled(DEEP);
    let dfs = Engine::new(conceptnet())
        .count(&q, &options(EngineKind::Dfs, 1 << 30))
        .unwrap();
    let small = Engine::new(conceptnet())
        .count(&q, &options(EngineKind::Emulated, SMALL))
        .unwrap();
    assert_eq!(small.rows, dfs.rows);
    let s = small.device_report.unwrap();
    println!(
        "{DEEP}: {} matches; {} KiB: {} reads, {} launches, {} chunks, {} KiB",
        dfs.rows,
        SMALL >> 10,
        s.counters.syncs,
        s.counters.launches,
        s.chunks,
        s.arena_bytes >> 10,
    );
    assert!(s.chunks > 0, "no chunk ran depth first");
    // A chunk costs one read (halving on the host cost one per level and half).
    assert!(
        s.counters.syncs <= s.chunks + 4,
        "{} reads",
        s.counters.syncs
    );
    // Every buffer, whole pages included, within the budget.
    assert!(s.arena_bytes <= SMALL, "{} bytes", s.arena_bytes);
}

#[test]
fn a_limit_stops_an_edge_variable_level_with_rows_of_the_answer() {
    conceptnet100k::limits_give_rows_of_the_answer(conceptnet(), &compiled(DEEP));
}

#[test]
fn a_batch_keeps_its_edge_variable_queries() {
    // Queries whose levels fit a batched query's room (4,096 rows; the second and third of
    // QUERIES outgrow it and go on alone after the batch, as any query's level would).
    let texts = [
        QUERIES[0],
        QUERIES[3],
        "SELECT * WHERE { ?a ?r ?b . ?b ?s person }",
    ];
    let c = conceptnet100k::batch_counts_as_dfs(conceptnet(), &texts);
    println!(
        "{} edge-variable counts in one batch, warm: {} launches, {} reads",
        texts.len(),
        c.launches,
        c.syncs
    );
    // Filtering's read and the levels' read: no query went on alone (one read per level each).
    assert!(c.syncs <= 2, "{} reads", c.syncs);
}
