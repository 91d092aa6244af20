//! The device batch path (`Engine::match_batch`, the emulated GPU pipeline) against the
//! brute-force oracle on seeded random graphs: each batch holds 4-12 random queries, each with its
//! own options (iso or hom, 0-2 refinement rounds, so that several batches form; an option LIMIT
//! now and then, small or about a warp's rows; an ample or a small memory budget, the small one
//! taking the depth-first and host-halving paths; now and then a budget too small for anything;
//! rows to a sink or a count; the same query twice with different options; now and then a query
//! of many rows). Every query's answer is checked on its own: the multiset of projected rows (a
//! sub-multiset of the right size under LIMIT), DISTINCT, the count, `limit_reached`, and errors
//! only where the query alone may give them (DISTINCT past its memory, a starved budget): one
//! query's error leaves the others' answers right. Each graph's engine answers two batches (the
//! second on warm buffers). One test runs with the default segments, another with pivot lists
//! cut into segments of 1 or 2 entries (`GPSENSE_SEGMENT`; every level's, or only the levels'
//! whose lists can be long, `GPSENSE_LONG_LIST`), another with root lists cut into segments of 1
//! to 3 candidates (`GPSENSE_ROOT_SEGMENT`: LIMIT roots in parts), a fourth one batch of answers
//! longer than a warp's rows on a fixed graph.
//!
//! `GPSENSE_ORACLE_CASES` (graphs per test, default 300) and `GPSENSE_ORACLE_SEED` (decimal or
//! `0x` hex; case 0's seed is the base itself) run more or other cases.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Instant;

use common::{
    env_u64, oracle, random_graph, random_query, sub_multiset, Answer, SplitMix64, TestGraph,
};
use gpsense_planner::QueryGraph;
use gpsense_runtime::{
    BatchQuery, BatchReport, Engine, EngineKind, MatchError, MatchOptions, MatchReport, Outgrown,
    RowBatch, Semantics,
};

/// Matches beyond which a query is drawn again: keeps the oracle and the run fast.
const CAP: u64 = 2000;
const BATCHES_PER_GRAPH: usize = 2;
const AMPLE: u64 = 1 << 30;
/// Room for these graphs' candidate spaces and some levels: larger levels run depth first.
const SMALL: u64 = 64 << 10;
/// Too small for a candidate space: the query may fail for its budget (alone as in a batch).
const STARVED: u64 = 512;

/// Option limits about a warp's rows (32) or two.
const WARP_LIMITS: [u64; 7] = [16, 31, 32, 33, 63, 64, 65];

/// Queries of tens to hundreds of rows on these graphs (the random ones mostly have a few).
const MANY_ROWS: [&str; 4] = [
    "SELECT * WHERE { ?a ?r ?b }",
    "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c }",
    "SELECT ?a ?c WHERE { ?a ?r ?b . ?b ?s ?c }",
    "SELECT * WHERE { ?a ?r ?b . ?a ?s ?c }",
];

/// `GPSENSE_SEGMENT`, `GPSENSE_LONG_LIST` and `GPSENSE_ROOT_SEGMENT` are process-wide: one engine at a time sets it and reads it.
static SEGMENT_ENV: Mutex<()> = Mutex::new(());

/// An engine for `tg` whose device (the emulator) cuts pivot lists into `segment`-entry segments
/// (`None`: the default): `"N"` every level's, `"N@L"` those of the levels whose lists can be
/// longer than `L` entries (`GPSENSE_LONG_LIST`), so that a batch's depth mixes cut and uncut
/// levels; a tail `"/R"` cuts the root level's list into `R`-candidate segments
/// (`GPSENSE_ROOT_SEGMENT`), so that these small graphs' LIMIT queries run their roots in parts. The variables are read when an engine's device state is made, at its first query on
/// the device (not in `Engine::new`): one query makes it here, under the lock. Its buffers, sized
/// under the default budget, are the next queries' warm ones.
fn engine_with_segment<'g>(tg: &'g TestGraph, segment: Option<&str>) -> Engine<'g> {
    let _env = SEGMENT_ENV.lock().unwrap_or_else(|e| e.into_inner());
    let (segment, root) = match segment.map(|s| s.split_once('/').unwrap_or((s, ""))) {
        Some((s, r)) => (
            Some(s).filter(|s| !s.is_empty()),
            Some(r).filter(|r| !r.is_empty()),
        ),
        None => (None, None),
    };
    let (segment, long_list) = match segment.map(|s| s.split_once('@').unwrap_or((s, ""))) {
        Some((s, l)) => (Some(s), Some(l).filter(|l| !l.is_empty())),
        None => (None, None),
    };
    for (name, value) in [
        ("GPSENSE_SEGMENT", segment),
        ("GPSENSE_LONG_LIST", long_list),
        ("GPSENSE_ROOT_SEGMENT", root),
    ] {
        match value {
            Some(v) => std::env::set_var(name, v),
            None => std::env::remove_var(name),
        }
    }
    let engine = Engine::new(&tg.g);
    let q = gpsense_planner::compile("SELECT * WHERE { ?x r0 ?y }", &tg.g).unwrap();
    let opts = MatchOptions {
        engine: EngineKind::Emulated,
        ..MatchOptions::default()
    };
    engine.count(&q, &opts).unwrap();
    engine
}

/// One query of a batch, with the oracle's answer under its semantics.
struct Item {
    q: QueryGraph,
    opts: MatchOptions,
    wants_rows: bool,
    expected: Answer,
}

impl Item {
    fn starved(&self) -> bool {
        self.opts.memory_budget == STARVED
    }

    fn describe(&self) -> String {
        let o = &self.opts;
        format!(
            "{:?} refine {} budget {} lanes {} limit {:?} {}: {}",
            o.semantics,
            o.refine_rounds,
            o.memory_budget,
            o.lanes,
            o.limit,
            if self.wants_rows { "rows" } else { "count" },
            self.q
        )
    }
}

/// 4-12 queries over 1-3 (semantics, refinement rounds) keys; queries the oracle finds too large
/// are drawn again.
fn random_batch(rng: &mut SplitMix64, tg: &TestGraph) -> Vec<Item> {
    let keys: Vec<(Semantics, u32)> = (0..1 + rng.index(3))
        .map(|_| {
            let semantics = if rng.chance(1, 2) {
                Semantics::Iso
            } else {
                Semantics::Hom
            };
            (semantics, rng.below(3) as u32)
        })
        .collect();
    let n = 4 + rng.index(9);
    let mut items: Vec<Item> = Vec::with_capacity(n);
    while items.len() < n {
        let (semantics, refine_rounds) = keys[rng.index(keys.len())];
        let memory_budget = match rng.below(12) {
            0 => STARVED,
            1..=4 => SMALL,
            _ => AMPLE,
        };
        // Small limits, and now and then one about a warp's rows or two.
        let limit = rng.chance(1, 5).then(|| {
            if rng.chance(1, 3) {
                WARP_LIMITS[rng.index(WARP_LIMITS.len())]
            } else {
                rng.below(8)
            }
        });
        let opts = MatchOptions {
            semantics,
            engine: EngineKind::Emulated,
            refine_rounds,
            memory_budget,
            limit,
            lanes: if rng.chance(1, 2) { 1 } else { 32 },
            ..MatchOptions::default()
        };
        // Now and then a query of the batch again, with other options, or one of many rows.
        let q = if !items.is_empty() && rng.chance(1, 6) {
            items[rng.index(items.len())].q.clone()
        } else if rng.chance(1, 8) {
            let text = MANY_ROWS[rng.index(MANY_ROWS.len())];
            gpsense_planner::compile(text, &tg.g).unwrap()
        } else {
            random_query(rng, tg)
        };
        let wants_rows = rng.chance(1, 2);
        if let Some(expected) = oracle(tg, &q, semantics, CAP) {
            items.push(Item {
                q,
                opts,
                wants_rows,
                expected,
            });
        }
    }
    items
}

/// Each item's answer from one `match_batch` call, with its rows (sorted) if it wanted them.
type Answered = Vec<(Result<MatchReport, MatchError>, Option<Vec<Vec<u32>>>)>;

/// Under [`Outgrown::Leave`] (`serve`'s batches) a query the batch left to its caller, having
/// handed out no row, is answered alone, as `serve`'s request thread answers it.
fn run_batch(engine: &Engine, items: &[Item], outgrown: Outgrown) -> (Answered, BatchReport, u64) {
    let mut rows: Vec<Vec<Vec<u32>>> = items.iter().map(|_| Vec::new()).collect();
    let mut sinks: Vec<_> = rows
        .iter_mut()
        .map(|r| {
            move |b: RowBatch| {
                r.extend(b.iter().map(<[u32]>::to_vec));
                true
            }
        })
        .collect();
    let list: Vec<BatchQuery> = items
        .iter()
        .zip(sinks.iter_mut())
        .map(|(it, sink)| BatchQuery {
            q: &it.q,
            opts: &it.opts,
            rows: it.wants_rows.then_some(sink as _),
        })
        .collect();
    let mut batch = engine.match_batch_each(list, outgrown, &|_, _| {});
    drop(sinks);
    assert_eq!(batch.reports.len(), items.len(), "a report per query");
    let left = batch
        .reports
        .iter()
        .filter(|r| r.as_ref().is_err_and(MatchError::left_by_batch))
        .count() as u64;
    let answered = std::mem::take(&mut batch.reports)
        .into_iter()
        .zip(rows)
        .zip(items)
        .map(|((r, rows), it)| match r {
            Err(e) if e.left_by_batch() && outgrown == Outgrown::Leave && rows.is_empty() => {
                alone(engine, it)
            }
            // Fails the check: a left query must not have handed out rows.
            Err(e) if e.left_by_batch() => (
                Err(MatchError::Plan(format!(
                    "{e}, after handing out {} rows",
                    rows.len()
                ))),
                None,
            ),
            r => (r, it.wants_rows.then(|| sorted(rows))),
        })
        .collect();
    (answered, batch, left)
}

fn sorted(mut rows: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    rows.sort_unstable();
    rows
}

/// `it` answered alone, with its rows if it wants them.
fn alone(engine: &Engine, it: &Item) -> (Result<MatchReport, MatchError>, Option<Vec<Vec<u32>>>) {
    if it.wants_rows {
        match engine.collect(&it.q, &it.opts) {
            Ok((rows, r)) => (Ok(r), Some(sorted(rows))),
            Err(e) => (Err(e), Some(Vec::new())),
        }
    } else {
        (engine.count(&it.q, &it.opts), None)
    }
}

/// What [`check`] saw, for the run's summary.
#[derive(Default)]
struct Seen {
    nonempty: u64,
    distinct_too_large: u64,
    starved_failed: u64,
}

/// One query's answer in the batch against the oracle's.
fn check(
    it: &Item,
    answer: &Result<MatchReport, MatchError>,
    rows: Option<&Vec<Vec<u32>>>,
    seen: &mut Seen,
) -> Result<(), String> {
    let (q, expected) = (&it.q, &it.expected);
    let limit = it.opts.limit_for(q.limit);
    let capped = |n: u64| limit.map_or(n, |l| n.min(l));
    let total_rows = expected.rows.len() as u64;
    // DISTINCT remembers the rows it has emitted within half the memory budget: beyond, an error.
    let row_cost = q.projection.len() as u64 * 4 + 32;
    let distinct_too_large =
        q.distinct && capped(total_rows) * row_cost > it.opts.memory_budget / 2;
    let total = if q.distinct {
        total_rows
    } else {
        expected.matches
    };
    seen.nonempty += (total > 0) as u64;
    let report = match answer {
        Err(MatchError::DistinctTooLarge { .. }) if distinct_too_large => {
            seen.distinct_too_large += 1;
            return Ok(());
        }
        Err(
            MatchError::DeviceBudget { .. }
            | MatchError::MemoryBudget { .. }
            | MatchError::SpaceBudget { .. },
        ) if it.starved() => {
            seen.starved_failed += 1;
            return Ok(());
        }
        Err(e) => return Err(format!("failed: {e} ({e:?})")),
        Ok(_) if distinct_too_large => return Err("expected DistinctTooLarge".into()),
        Ok(r) => r,
    };
    let want = capped(total);
    if report.rows != u128::from(want) {
        return Err(format!(
            "report says {} rows, expected {want} ({total} matches/rows, limit {limit:?})",
            report.rows
        ));
    }
    let more = limit.is_some_and(|l| total > l);
    if report.limit_reached != more {
        return Err(format!(
            "limit_reached {} but {total} matches/rows, limit {limit:?}",
            report.limit_reached
        ));
    }
    if report.timed_out || report.fallback.is_some() {
        return Err(format!(
            "timed_out {}, fallback {:?}",
            report.timed_out, report.fallback
        ));
    }
    let Some(rows) = rows else {
        return Ok(());
    };
    if rows.len() as u64 != want {
        return Err(format!(
            "{} rows handed out (report {}), expected {want} of {total_rows}\n  got      {rows:?}\n  expected {:?}",
            rows.len(),
            report.rows,
            expected.rows
        ));
    }
    if !sub_multiset(rows, &expected.rows) {
        return Err(format!(
            "wrong rows\n  got      {rows:?}\n  expected {:?}",
            expected.rows
        ));
    }
    if q.distinct && rows.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("DISTINCT rows repeat: {rows:?}"));
    }
    Ok(())
}

/// A failure's kind, for the tally: its first line without numbers or rows.
fn kind(why: &str) -> String {
    let line = why.lines().next().unwrap_or_default();
    let line = line.split(" (").next().unwrap_or_default();
    let words: Vec<&str> = line
        .split_whitespace()
        .filter(|w| !w.contains(|c: char| c.is_ascii_digit()))
        .collect();
    words.join(" ")
}

/// Runs the seeded cases, each graph's engine made with a segment drawn from `segments`.
fn run(test: &str, name: &str, segments: &[Option<&str>]) {
    let start = Instant::now();
    let graphs = env_u64("GPSENSE_ORACLE_CASES", 300);
    let base = env_u64("GPSENSE_ORACLE_SEED", 0x6261_7463_686f_7261);
    let (mut checked, mut batches, mut batched, mut launches) = (0u64, 0u64, 0u64, 0u64);
    let mut left_alone = 0u64;
    let mut seen = Seen::default();
    let mut failures = Vec::new();
    let mut failed = 0u64;
    let mut kinds = BTreeMap::new();
    for case in 0..graphs {
        let seed = base ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = SplitMix64::new(seed);
        let segment = segments[rng.index(segments.len())];
        let tg = random_graph(&mut rng);
        let engine = engine_with_segment(&tg, segment);
        for round in 0..BATCHES_PER_GRAPH {
            let items = random_batch(&mut rng, &tg);
            // Every other batch as `serve` runs them, leaving to its caller what goes on.
            let outgrown = if (case + round as u64) % 2 == 1 {
                Outgrown::Leave
            } else {
                Outgrown::GoOn
            };
            let (answered, batch, left) = run_batch(&engine, &items, outgrown);
            left_alone += left;
            batches += batch.batches as u64;
            batched += batch.batched as u64;
            launches += batch.counters.launches;
            let keys: HashSet<_> = items
                .iter()
                .map(|it| (it.opts.semantics == Semantics::Iso, it.opts.refine_rounds))
                .collect();
            let mut why = Vec::new();
            if batch.batches > keys.len() || batch.batched > items.len() {
                why.push((
                    None,
                    format!(
                        "{} batches of {} queries for {} keys",
                        batch.batches,
                        batch.batched,
                        keys.len()
                    ),
                ));
            }
            for (k, (it, (answer, rows))) in items.iter().zip(&answered).enumerate() {
                checked += 1;
                if let Err(e) = check(it, answer, rows.as_ref(), &mut seen) {
                    why.push((Some(k), e));
                }
            }
            for (k, e) in why {
                failed += 1;
                // The first three failures, and the first of each kind after them.
                let seen_kind = kinds.get(&kind(&e)).copied().unwrap_or(0);
                *kinds.entry(kind(&e)).or_insert(0u64) += 1;
                if failures.len() >= 3 && seen_kind > 0 {
                    continue;
                }
                let mut s = format!(
                    "{name}, case seed {seed:#x}, batch {round} of its engine ({outgrown:?}): "
                );
                match k {
                    Some(k) => {
                        let it = &items[k];
                        let _ = write!(
                            s,
                            "query #{k}: {e}\n  oracle: {} matches\n  {}\n  {:?}",
                            it.expected.matches,
                            it.describe(),
                            it.q
                        );
                    }
                    None => s.push_str(&e),
                }
                let _ = write!(
                    s,
                    "\n  again: GPSENSE_ORACLE_SEED={seed:#x} GPSENSE_ORACLE_CASES=1 cargo test \
                     -p gpsense-runtime --test batch_oracle {test} (GPSENSE_SEGMENT[@GPSENSE_LONG_LIST][/GPSENSE_ROOT_SEGMENT] {segment:?})\n{}\nthe batch:",
                    tg.describe()
                );
                for (j, (it, (answer, _))) in items.iter().zip(&answered).enumerate() {
                    let got = match answer {
                        Ok(r) => format!("{} rows, limit_reached {}", r.rows, r.limit_reached),
                        Err(e) => format!("error {e}"),
                    };
                    let _ = write!(s, "\n  #{j} {} -> {got}", it.describe());
                }
                failures.push(s);
            }
        }
    }
    println!(
        "{name}: {checked} checks in {batches} batches ({batched} queries batched, {launches} \
         launches; {} non-empty answers, {} DISTINCT over budget, {} starved budgets refused, \
         {left_alone} left by `serve`'s batches and answered alone) in {:.1?}",
        seen.nonempty,
        seen.distinct_too_large,
        seen.starved_failed,
        start.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{failed} failures ({kinds:?}), the first ones (and of each kind):\n\n{}",
        failures.join("\n\n")
    );
    // The generator must produce real work, not only empty answers or lone queries.
    assert!(seen.nonempty * 4 > checked, "too few non-empty answers");
    assert!(batched * 2 > checked, "too few queries batched");
}

#[test]
fn batches_match_the_oracle() {
    run("batches_match_the_oracle", "default segments", &[None]);
}

/// Pivot lists cut into segments of one or two entries, every level's or those of the levels whose
/// lists can be longer than 1 or 2 entries: the segmented levels of a batch, beside uncut ones.
#[test]
fn segmented_batches_match_the_oracle() {
    run(
        "segmented_batches_match_the_oracle",
        "segments of 1-2 entries",
        &[Some("1"), Some("2"), Some("1@1"), Some("2@2")],
    );
}

/// Root levels cut into segments of one to three candidates (128 by default, more than these
/// graphs' nodes): a LIMIT query's root runs its first part in the batch and the parts after it
/// alone, growing fourfold; a root level past a small budget runs in the parts the budget holds.
#[test]
fn root_parts_in_batches_match_the_oracle() {
    run(
        "root_parts_in_batches_match_the_oracle",
        "root segments of 1-3 candidates",
        &[Some("/1"), Some("/2"), Some("2@2/3")],
    );
}

/// Answers longer than a warp's rows (the random graphs' answers are mostly a few rows): a hub
/// `n0` with 40 neighbours over `r0`, each with a self-loop over `r0` and an `r1` edge to the
/// next, and joins of one to three nodes under option limits about 32 and 64, in one batch.
#[test]
fn answers_past_a_warp_in_a_batch_match_the_oracle() {
    let mut b = gpsense_graph::GraphBuilder::new();
    for i in 0..41 {
        b.node(&format!("n{i}")).unwrap();
    }
    for j in 0..2 {
        b.relation(&format!("r{j}")).unwrap();
    }
    for i in 1..41 {
        b.add_edge(0, 0, i, 1.0);
        b.add_edge(i, 0, i, 1.0);
        b.add_edge(i, 1, i % 40 + 1, 1.0);
    }
    let (g, _) = b.build().unwrap();
    let tg = TestGraph {
        nodes: g.node_count(),
        relations: g.relation_count(),
        label_names: 0,
        edges: g.edges().collect(),
        g,
    };
    let texts = [
        "SELECT ?x WHERE { n0 r0 ?x }",
        "SELECT * WHERE { ?x r0 ?x }",
        "SELECT * WHERE { ?x ?r ?x }",
        "SELECT * WHERE { ?a r1 ?b }",
        "SELECT DISTINCT ?x WHERE { ?x ?r ?y }",
        "SELECT * WHERE { n0 r0 ?x . ?x r1 ?y }",
        "SELECT * WHERE { ?a r0 ?b . ?b r1 ?c }",
    ];
    let mut items = Vec::new();
    for text in texts {
        let q = gpsense_planner::compile(text, &tg.g).unwrap();
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let expected = oracle(&tg, &q, semantics, CAP).unwrap();
            for limit in [
                None,
                Some(1),
                Some(31),
                Some(32),
                Some(33),
                Some(63),
                Some(64),
            ] {
                for wants_rows in [true, false] {
                    let opts = MatchOptions {
                        semantics,
                        engine: EngineKind::Emulated,
                        memory_budget: AMPLE,
                        limit,
                        ..MatchOptions::default()
                    };
                    items.push(Item {
                        q: q.clone(),
                        opts,
                        wants_rows,
                        expected: Answer {
                            matches: expected.matches,
                            rows: expected.rows.clone(),
                        },
                    });
                }
            }
        }
    }
    let engine = engine_with_segment(&tg, None);
    for outgrown in [Outgrown::GoOn, Outgrown::Leave] {
        let (answered, batch, _) = run_batch(&engine, &items, outgrown);
        assert_eq!(batch.batches, 2, "one batch per semantics");
        let mut seen = Seen::default();
        let failures: Vec<String> = items
            .iter()
            .zip(&answered)
            .filter_map(|(it, (answer, rows))| {
                let why = check(it, answer, rows.as_ref(), &mut seen).err()?;
                Some(format!("{}: {why}", it.describe().replace('\n', " ")))
            })
            .collect();
        assert!(
            failures.is_empty(),
            "{outgrown:?}: {} of {} queries wrong:\n{}",
            failures.len(),
            items.len(),
            failures.join("\n")
        );
    }
}
