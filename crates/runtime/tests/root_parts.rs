//! Under a LIMIT (ASK's too) the device pipeline runs the root level's candidates in parts
//! growing fourfold, each through every level before the next, and stops once the answer is
//! complete: one run grew every level but the last whole before the LIMIT could stop anything.
//! Rows, counts and whether the LIMIT cut the answer stay those of `dfs`, at every limit around
//! the answer's size, under ample and small memory budgets. A root level too large for the
//! memory budget goes in parts too, of the size the budget holds.

use std::collections::HashSet;

use gpsense_runtime::{EngineKind, MatchOptions};

mod conceptnet100k;
use conceptnet100k::{compiled, conceptnet, options};

/// Root `?b` (512 candidates, four parts: 128, 384); 40,355 rows.
const PATH: &str = "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?c IsA ?d }";

/// `dfs`'s rows of `q`, sorted.
fn dfs_rows(engine: &gpsense_runtime::Engine, q: &gpsense_planner::QueryGraph) -> Vec<Vec<u32>> {
    let (mut rows, _) = engine
        .collect(q, &options(EngineKind::Dfs, 1 << 30))
        .unwrap();
    rows.sort();
    rows
}

fn limited(engine: EngineKind, budget: u64, limit: Option<u64>) -> MatchOptions {
    MatchOptions {
        limit,
        ..options(engine, budget)
    }
}

#[test]
fn rows_and_counts_under_a_limit_are_dfs_s() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let q = compiled(PATH);
    let all = dfs_rows(&engine, &q);
    let total = all.len() as u64;
    let all: HashSet<Vec<u32>> = all.into_iter().collect();
    assert_eq!(all.len() as u64, total, "an embedding is one row");
    for budget in [1 << 30, 1 << 20] {
        for limit in [1, 10, 1000, total - 1, total, total + 1] {
            let opts = limited(EngineKind::Emulated, budget, Some(limit));
            let (rows, r) = engine.collect(&q, &opts).unwrap();
            let at = format!("LIMIT {limit}, budget {budget}");
            assert_eq!(rows.len() as u64, limit.min(total), "{at}");
            assert!(rows.iter().all(|row| all.contains(row)), "{at}");
            let distinct: HashSet<&Vec<u32>> = rows.iter().collect();
            assert_eq!(distinct.len(), rows.len(), "{at}: a row twice");
            assert_eq!(r.limit_reached, total > limit, "{at}");
            let c = engine.count(&q, &opts).unwrap();
            assert_eq!(c.rows, u128::from(limit.min(total)), "{at}, counted");
            assert_eq!(c.limit_reached, total > limit, "{at}, counted");
        }
    }
}

/// A small LIMIT grows less than the whole of the levels before the last: 20,104 partial matches
/// for LIMIT 10 where the whole answer's levels hold 50,997, and where one run of every level,
/// its last stopped by the LIMIT, made 24,887 (before the root ran in parts).
#[test]
fn a_small_limit_stops_before_the_levels_grow_whole() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let q = compiled(PATH);
    let run = |limit| {
        let opts = limited(EngineKind::Emulated, 1 << 30, limit);
        let (rows, r) = engine.collect(&q, &opts).unwrap();
        (rows.len(), r.device_report.unwrap())
    };
    let (all, whole) = run(None);
    let (ten, parts) = run(Some(10));
    println!(
        "{PATH}: {all} rows, {} partial matches, {} reads; LIMIT 10: {} partial matches, {} reads, \
         {} parts",
        whole.partial_matches, whole.counters.syncs, parts.partial_matches, parts.counters.syncs,
        parts.chunks
    );
    assert_eq!(ten, 10);
    assert!(parts.chunks >= 1, "{parts:?}");
    assert!(parts.partial_matches < 22_000, "{parts:?}");
}

/// A root level too large for the memory budget goes in parts the budget holds, where it failed
/// with the budget's error (`?x IsA ?y` starts from 7,465 candidates; at 300 KiB the levels get a
/// few hundred rows): the count and the rows of `dfs`, every buffer within the budget.
#[test]
fn a_root_level_past_the_budget_goes_in_parts() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let q = compiled("SELECT * WHERE { ?x IsA ?y }");
    let want = dfs_rows(&engine, &q);
    for budget in [300 << 10, 320 << 10] {
        let opts = options(EngineKind::Emulated, budget);
        let c = engine.count(&q, &opts).unwrap();
        assert_eq!(c.rows, want.len() as u128, "budget {budget}");
        let d = c.device_report.unwrap();
        assert!(d.chunks > 1, "budget {budget}: {d:?}");
        assert!(d.arena_bytes <= budget, "budget {budget}: {d:?}");
    }
    let opts = options(EngineKind::Emulated, 320 << 10);
    let (mut rows, r) = engine.collect(&q, &opts).unwrap();
    rows.sort();
    assert_eq!(rows, want);
    let d = r.device_report.unwrap();
    println!(
        "?x IsA ?y, rows within 320 KiB: {} parts and chunks, {} reads, {} bytes",
        d.chunks, d.counters.syncs, d.arena_bytes
    );
    assert!(d.arena_bytes <= 320 << 10, "{d:?}");
}

/// The LIMIT queries of the README's table, `LIMIT 10` each.
const LIMITED: [&str; 5] = [
    PATH,
    "SELECT * WHERE { ?x AtLocation ?y . ?y AtLocation ?z }",
    "SELECT * WHERE { ?x UsedFor ?y . ?x AtLocation ?z . ?z AtLocation ?w }",
    "SELECT * WHERE { ?x HasProperty ?y . ?x IsA ?z }",
    "SELECT DISTINCT ?y WHERE { ?x IsA ?y . ?x AtLocation ?z }",
];

/// Each query's rows and report from one `match_batch` call.
fn rows_in_batch(
    engine: &gpsense_runtime::Engine,
    queries: &[(&gpsense_planner::QueryGraph, &MatchOptions)],
) -> Vec<(Vec<Vec<u32>>, gpsense_runtime::MatchReport)> {
    let mut rows: Vec<Vec<Vec<u32>>> = queries.iter().map(|_| Vec::new()).collect();
    let mut sinks: Vec<_> = rows
        .iter_mut()
        .map(|r| {
            move |b: gpsense_runtime::RowBatch| {
                r.extend(b.iter().map(<[u32]>::to_vec));
                true
            }
        })
        .collect();
    let list = queries
        .iter()
        .zip(sinks.iter_mut())
        .map(|(&(q, opts), sink)| gpsense_runtime::BatchQuery {
            q,
            opts,
            rows: Some(sink),
        })
        .collect();
    let batch = engine.match_batch(list);
    assert_eq!(batch.batches, 1, "one batch");
    drop(sinks);
    batch
        .reports
        .into_iter()
        .zip(rows)
        .map(|(r, rows)| (rows, r.unwrap_or_else(|e| panic!("{e}"))))
        .collect()
}

/// In a batch (a multi-query file, a Python list), a LIMIT query's root runs its first part
/// only; the parts after it go on alone, as a LIMIT query alone runs them. Its rows are rows of
/// `dfs`'s answer, as many as the LIMIT, and the batch's other queries keep their whole answers.
#[test]
fn a_limit_query_in_a_batch_runs_its_root_in_parts() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let opts = options(EngineKind::Emulated, 1 << 30);
    let whole: Vec<_> = LIMITED.iter().map(|t| compiled(t)).collect();
    let ten: Vec<_> = whole
        .iter()
        .map(|q| gpsense_planner::QueryGraph {
            limit: Some(10),
            ..q.clone()
        })
        .collect();
    let other = compiled("SELECT * WHERE { ?x AtLocation ?y . ?y AtLocation ?x }");
    let mut list: Vec<_> = ten.iter().map(|q| (q, &opts)).collect();
    list.push((&other, &opts));
    let answered = rows_in_batch(&engine, &list);
    // Partial matches in the batch and alone, summed over the queries: a query's own varies
    // with the emulator's block order (the UsedFor path's alone 42,192-52,825).
    let (mut in_batch, mut apart) = (0, 0);
    for (k, (rows, r)) in answered.iter().take(LIMITED.len()).enumerate() {
        let all: HashSet<Vec<u32>> = dfs_rows(&engine, &whole[k]).into_iter().collect();
        let text = LIMITED[k];
        assert_eq!((rows.len(), r.limit_reached), (10, true), "{text}");
        assert!(rows.iter().all(|row| all.contains(row)), "{text}");
        let distinct: HashSet<&Vec<u32>> = rows.iter().collect();
        assert_eq!(distinct.len(), 10, "{text}: a row twice");
        let alone = engine.collect(&ten[k], &opts).unwrap().1;
        let (batched, alone) = (
            r.device_report.as_ref().unwrap(),
            alone.device_report.unwrap(),
        );
        println!(
            "{text} LIMIT 10: {} partial matches in a batch, {} alone",
            batched.partial_matches, alone.partial_matches
        );
        in_batch += batched.partial_matches;
        apart += alone.partial_matches;
    }
    // Before the batch ran a LIMIT root in parts, 252,225 in the batch against 149,444 alone.
    assert!(
        in_batch <= apart * 11 / 10,
        "{in_batch} in a batch, {apart} alone"
    );
    let (mut rows, _) = answered.last().unwrap().clone();
    rows.sort();
    assert_eq!(rows, dfs_rows(&engine, &other));
}

/// One partial match past the root whose extensions the memory budget does not hold goes in parts
/// of its pivot list the budget holds, each through the levels after it, where it failed: on
/// `?x IsA ?y . ?y IsA ?z`, a `?y` with 1,284 `IsA` edges in, against rooms of 341-1,024 rows at
/// budgets of 236-272 KiB ("a single partial match has 1284 extensions, more than the memory
/// budget of 1024 rows"). The rows and count of `dfs`, every buffer within the budget.
#[test]
fn one_partial_match_past_the_budget_goes_in_parts() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let q = compiled("SELECT * WHERE { ?x IsA ?y . ?y IsA ?z }");
    let want = dfs_rows(&engine, &q);
    let mut parted = 0;
    for kib in [236, 248, 251, 260, 272] {
        let budget = kib << 10;
        let opts = options(EngineKind::Emulated, budget);
        let (mut rows, r) = engine
            .collect(&q, &opts)
            .unwrap_or_else(|e| panic!("{kib} KiB: {e}"));
        rows.sort();
        assert!(
            rows == want,
            "{kib} KiB: {} rows, {} wanted",
            rows.len(),
            want.len()
        );
        let d = r.device_report.unwrap();
        assert!(d.arena_bytes <= budget, "{kib} KiB: {d:?}");
        parted += (d.chunks > 0) as usize;
        let c = engine.count(&q, &opts).unwrap();
        assert_eq!(c.rows, want.len() as u128, "{kib} KiB, counted");
    }
    assert!(
        parted > 0,
        "no budget ran a list in parts: the test proves nothing"
    );
}

/// The same on a level with an edge variable (`extend_warp_bindings`): one hub's 3,000 edges of
/// two relations (each target reached by both), bound to `?r` from one partial match, under
/// budgets from a few pages past the candidate space up: every answer is `dfs`'s or the budget's
/// error, and some budgets answer in parts.
#[test]
fn one_partial_match_past_the_budget_binds_its_edges_in_parts() {
    let mut b = gpsense_graph::GraphBuilder::new();
    b.add_triple("x0", "r0", "hub", 1.0).unwrap();
    for i in 0..1500 {
        let t = format!("t{i}");
        b.add_triple("hub", "r1", &t, 1.0).unwrap();
        b.add_triple("hub", "r2", &t, 1.0).unwrap();
    }
    let g = b.build().unwrap().0;
    let q = gpsense_planner::compile("SELECT * WHERE { x0 r0 ?h . ?h ?r ?t }", &g).unwrap();
    let engine = gpsense_runtime::Engine::new(&g);
    let want = dfs_rows(&engine, &q);
    assert_eq!(want.len(), 3000);
    let (mut parted, mut refused) = (0, 0);
    for budget in (16_384..=96_000).step_by(2_048) {
        let opts = options(EngineKind::Emulated, budget);
        match engine.collect(&q, &opts) {
            Ok((mut rows, r)) => {
                rows.sort();
                assert!(rows == want, "{budget} bytes: {} rows", rows.len());
                let d = r.device_report.unwrap();
                assert!(d.arena_bytes <= budget, "{budget} bytes: {d:?}");
                parted += (d.chunks > 0) as usize;
            }
            Err(
                gpsense_runtime::MatchError::MemoryBudget { .. }
                | gpsense_runtime::MatchError::DeviceBudget { .. },
            ) => refused += 1,
            Err(e) => panic!("{budget} bytes: {e}"),
        }
    }
    println!("a hub's 3,000 bindings: {parted} budgets in parts, {refused} refused");
    assert!(
        parted > 0,
        "no budget ran the hub's list in parts: the test proves nothing"
    );
}

/// Budgets a few KiB either side of what the candidate space takes: each gives `dfs`'s rows, or
/// the candidate-space error with the bytes the query needs, which, given as the budget, answer.
/// Never the error of a level left no room: pages charged the segment counts of every row they
/// hold took more than a level's share and left the level below it 0 rows ("a single partial
/// match has 22 extensions, more than the memory budget of 0 rows" at 242 KiB).
#[test]
fn a_budget_near_the_candidate_space_answers_or_names_what_it_needs() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let q = compiled("SELECT * WHERE { ?x IsA ?y . ?y IsA ?z }");
    let want = dfs_rows(&engine, &q);
    let (mut answered, mut refused) = (0, 0);
    for kib in 210..=260 {
        let budget = kib << 10;
        match engine.collect(&q, &options(EngineKind::Emulated, budget)) {
            Ok((mut rows, _)) => {
                rows.sort();
                assert!(rows == want, "{kib} KiB: {} rows", rows.len());
                answered += 1;
            }
            Err(gpsense_runtime::MatchError::DeviceBudget { bytes, .. }) => {
                assert!(bytes > budget, "{kib} KiB: needs {bytes}");
                let (rows, _) = engine
                    .collect(&q, &options(EngineKind::Emulated, bytes))
                    .unwrap_or_else(|e| panic!("{kib} KiB said {bytes} bytes, which fail: {e}"));
                assert_eq!(
                    rows.len(),
                    want.len(),
                    "at the {bytes} bytes {kib} KiB said"
                );
                refused += 1;
            }
            Err(e) => panic!("{kib} KiB: {e}"),
        }
    }
    println!("{answered} budgets answered, {refused} refused with what they need");
    assert!(
        answered > 0 && refused > 0,
        "{answered} answered, {refused} refused"
    );
    // Below filtering's bytes the refusal says they are filtering's alone, the space's to come
    // (a user who gave them as the budget was refused again, with the larger number).
    let e = engine
        .collect(&q, &options(EngineKind::Emulated, 1 << 10))
        .unwrap_err();
    let gpsense_runtime::MatchError::DeviceBudget {
        bytes,
        filtering: true,
        ..
    } = e
    else {
        panic!("{e:?}");
    };
    assert!(
        e.to_string().contains("filtering on the device needs"),
        "{e}"
    );
    assert!(e.to_string().contains("well past it"), "{e}");
    let e = engine
        .collect(&q, &options(EngineKind::Emulated, bytes))
        .unwrap_err();
    assert!(
        matches!(e, gpsense_runtime::MatchError::DeviceBudget { filtering: false, bytes: b, .. } if b > bytes),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("candidate space on the device needs"),
        "{e}"
    );
}

/// Under `Outgrown::Leave` (`serve`: the request's own thread answers alone what goes on) a LIMIT
/// query's root runs its first part in the batch too, and no part after it, which would go on
/// alone on the batching thread and hold up the next batch. A first part that reaches the LIMIT
/// is the answer: `LIMIT 10` here, which the batch used to leave to its caller when its root, run
/// whole, outgrew a level's room (9,057 rows at level 2 against 4,096), to be grown again alone.
/// One that does not leaves the query to its caller, no row handed out. Under `GoOn` (a file of
/// queries) the same queries get their LIMIT's rows from the parts after the batch.
#[test]
fn a_batch_that_leaves_what_goes_on_runs_only_the_root_s_first_part() {
    use gpsense_runtime::{MatchError, Outgrown};
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let opts = options(EngineKind::Emulated, 1 << 30);
    // Pairs placed at each other: 72 rows, root candidates past the first part's 128.
    let cycle = "SELECT * WHERE { ?x AtLocation ?y . ?y AtLocation ?x }";
    let short = dfs_rows(&engine, &compiled(cycle)).len() as u64;
    for (text, limit, first_part_completes) in [(PATH, 10, true), (cycle, short - 1, false)] {
        let q = gpsense_planner::QueryGraph {
            limit: Some(limit),
            ..compiled(text)
        };
        for outgrown in [Outgrown::Leave, Outgrown::GoOn] {
            let at = format!("{text} LIMIT {limit}, {outgrown:?}");
            let mut handed = 0u64;
            let mut sink = |b: gpsense_runtime::RowBatch| {
                handed += b.rows as u64;
                true
            };
            let list = vec![gpsense_runtime::BatchQuery {
                q: &q,
                opts: &opts,
                rows: Some(&mut sink),
            }];
            let batch = engine.match_batch_each(list, outgrown, &|_, _| {});
            let leave = outgrown == Outgrown::Leave;
            match &batch.reports[0] {
                Err(MatchError::LimitPastFirstPart { first, candidates })
                    if leave && !first_part_completes =>
                {
                    assert!(
                        *first == 128 && *candidates > 128,
                        "{at}: {first} of {candidates}"
                    );
                    assert_eq!(handed, 0, "{at}: rows handed out before it was left");
                }
                Ok(r) if !leave || first_part_completes => {
                    assert_eq!(
                        (r.rows, r.limit_reached, handed),
                        (u128::from(limit), true, limit),
                        "{at}"
                    );
                    let device = r.device_report.as_ref().unwrap();
                    let (parts, partials) = (device.chunks, device.partial_matches);
                    println!(
                        "{at}: answered, {parts} parts after the batch, {partials} partial matches"
                    );
                    assert!(!leave || parts == 0, "{at}: the batch went on alone");
                }
                other => panic!("{at}: {other:?}"),
            }
        }
    }
}

/// Runs a query that leaves the engine's device buffers past `bytes`; returns what they hold.
fn a_larger_query_first(engine: &gpsense_runtime::Engine, bytes: u64) -> u64 {
    let big = compiled("SELECT * WHERE { ?x IsA ?y . ?x ?r ?z }");
    let (_, r) = engine
        .collect(&big, &options(EngineKind::Emulated, 1 << 30))
        .unwrap();
    let held = r.device_report.unwrap().arena_bytes;
    assert!(
        held > bytes,
        "the first query left {held} bytes: the test proves nothing"
    );
    held
}

/// A query after a larger one on the same engine holds no more device memory than its own budget:
/// the buffers the larger one left, reused as they were, kept the arena past it.
#[test]
fn a_query_after_a_larger_one_holds_its_budget() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let budget = 320 << 10;
    let held = a_larger_query_first(&engine, budget);
    let small = compiled("SELECT * WHERE { ?x IsA ?y }");
    let (rows, r) = engine
        .collect(&small, &options(EngineKind::Emulated, budget))
        .unwrap();
    assert_eq!(rows.len(), 14_915);
    let d = r.device_report.unwrap();
    println!(
        "{} bytes held after a query that left {held}",
        d.arena_bytes
    );
    assert!(
        d.arena_bytes <= budget,
        "{} bytes after {held}: {d:?}",
        d.arena_bytes
    );
}

/// A batch after a larger query holds no more device memory than its queries' budgets together:
/// it took the buffers the larger query left, as they were, and kept them past its own (a query
/// alone gave them back since 2026-12-07, a batch not).
#[test]
fn a_batch_after_a_larger_query_holds_its_budgets() {
    let engine = gpsense_runtime::Engine::new(conceptnet());
    let budget = 320 << 10;
    let held = a_larger_query_first(&engine, 2 * budget);
    let small = [
        compiled("SELECT * WHERE { ?x IsA ?y }"),
        compiled("SELECT * WHERE { ?x AtLocation ?y . ?y AtLocation ?x }"),
    ];
    let opts = options(EngineKind::Emulated, budget);
    let list: Vec<_> = small.iter().map(|q| (q, &opts)).collect();
    let answered = rows_in_batch(&engine, &list);
    for ((rows, r), q) in answered.iter().zip(&small) {
        let mut rows = rows.clone();
        rows.sort();
        assert_eq!(rows, dfs_rows(&engine, q));
        let d = r.device_report.as_ref().unwrap();
        println!(
            "{} bytes held after a query that left {held}",
            d.arena_bytes
        );
        assert!(
            d.arena_bytes <= 2 * budget,
            "{} bytes after {held}: {d:?}",
            d.arena_bytes
        );
    }
}
