//! Levels whose pivot lists are cut into segments (the heavy-row split, on by default on graphs
//! with hubs: full ConceptNet, SenticNet) in the emulated GPU pipeline, on ConceptNet-100K with
//! every list cut into 16-entry segments: the answers are `dfs`'s, rows and counts; the levels are
//! queued back to back (each level's segments counted and scanned on the device over the parents
//! its predecessor's counter holds: one read for a count), a level over the memory budget runs
//! depth first in chunks within the budget, LIMIT stops the last level, and a batch keeps its
//! segmented queries (each depth's segments counted for every query in one launch, one scan).
//!
//! Its own binary: it sets `GPSENSE_SEGMENT` (read when an engine makes its device state, at its first device query), the same value in
//! every test.

use std::sync::Once;

use gpsense_graph::KnowledgeGraph;
use gpsense_runtime::{Engine, EngineKind};

mod conceptnet100k;
use conceptnet100k::{compiled, options};

/// ConceptNet-100K, with every pivot list cut into 16-entry segments for the engines made after.
fn conceptnet() -> &'static KnowledgeGraph {
    static SEGMENTS: Once = Once::new();
    SEGMENTS.call_once(|| std::env::set_var("GPSENSE_SEGMENT", "16"));
    conceptnet100k::conceptnet()
}

/// Fixed-relation joins of two to four levels (a path, a star's centre with a counted leaf, a
/// cycle), and one with an edge variable (its level's lists, its pivot's, are cut as well).
const QUERIES: [&str; 5] = [
    "SELECT * WHERE { ?x IsA ?y . ?y IsA animal . ?x AtLocation ?z }",
    "SELECT * WHERE { ?a IsA ?b . ?b AtLocation ?c . ?c AtLocation house }",
    "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?c IsA animal . ?a AtLocation ?d }",
    "SELECT * WHERE { ?a AtLocation ?b . ?b AtLocation ?c . ?c AtLocation ?a }",
    "SELECT * WHERE { ?x ?r animal . ?x IsA ?y . ?y AtLocation ?z }",
];

#[test]
fn segmented_levels_answer_as_dfs_with_their_levels_queued() {
    for text in QUERIES {
        let q = compiled(text);
        let (mut want, _) = Engine::new(conceptnet())
            .collect(&q, &options(EngineKind::Dfs, 1 << 30))
            .unwrap();
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
            "{text}: {} rows; warm, rows: {} launches, {} reads; count: {} launches, {} reads",
            want.len(),
            r.counters.launches,
            r.counters.syncs,
            c.counters.launches,
            c.counters.syncs,
        );
        // Filtering's read and one read of every level's counter (one more for rows): level by
        // level, each segmented level was read on its own.
        assert!(c.counters.syncs <= 2, "{text}: {} reads", c.counters.syncs);
        assert!(r.counters.syncs <= 3, "{text}: {} reads", r.counters.syncs);
    }
}

/// Room for the candidate space and some tens of thousands of rows of 4 slots; the query's last
/// level alone is 40,355 rows.
const SMALL: u64 = 384 << 10;

const PATH: &str = "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?c IsA ?d }";

#[test]
fn a_segmented_level_over_the_budget_runs_depth_first_within_it() {
    let q = compiled(PATH);
    let (mut want, _) = Engine::new(conceptnet())
        .collect(&q, &options(EngineKind::Dfs, 1 << 30))
        .unwrap();
    let (mut got, report) = Engine::new(conceptnet())
        .collect(&q, &options(EngineKind::Emulated, SMALL))
        .unwrap();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    let s = report.device_report.unwrap();
    println!(
        "{PATH}: {} rows; {} KiB: {} reads, {} launches, {} chunks, {} KiB",
        want.len(),
        SMALL >> 10,
        s.counters.syncs,
        s.counters.launches,
        s.chunks,
        s.arena_bytes >> 10,
    );
    assert!(s.chunks > 0, "no chunk ran depth first");
    // A chunk costs one read, and one more for its rows (halving on the host cost a read per
    // level and half, and segments a launch of their own each).
    assert!(
        s.counters.syncs <= 2 * s.chunks + 4,
        "{} reads",
        s.counters.syncs
    );
    // Every buffer, whole pages included, within the budget.
    assert!(s.arena_bytes <= SMALL, "{} bytes", s.arena_bytes);
}

#[test]
fn a_limit_stops_a_segmented_level_with_rows_of_the_answer() {
    conceptnet100k::limits_give_rows_of_the_answer(conceptnet(), &compiled(PATH));
}

#[test]
fn a_batch_keeps_its_segmented_queries() {
    let c = conceptnet100k::batch_counts_as_dfs(conceptnet(), &QUERIES);
    println!(
        "{} segmented counts in one batch, warm: {} launches, {} reads",
        QUERIES.len(),
        c.launches,
        c.syncs
    );
    // Filtering's read and the levels' read: no query went on alone.
    assert!(c.syncs <= 2, "{} reads", c.syncs);
}
