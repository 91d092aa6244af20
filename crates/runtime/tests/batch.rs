//! Many queries answered as one batch on the emulated device (`Engine::count_batch`, and
//! `Engine::match_batch` for rows): the same counts and rows as one by one and as `dfs`, the
//! batch's launches and reads per query, and each query's own errors and limits.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, QueryGraph};
use gpsense_runtime::{
    BatchQuery, BatchReport, Engine, EngineKind, MatchError, MatchOptions, MatchReport, Outgrown,
    RowBatch, Semantics,
};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/subgraph-matching/hprd-study")
        .join(rel)
}

fn hprd() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let path = dataset("data_graph/HPRD.graph");
        ingest(&[path], &IngestOptions::default(), &NoProgress)
            .expect("HPRD loads")
            .0
    })
}

/// `(name, query, published count)` of HPRD's 200 queries, in the expected file's order.
fn cases() -> &'static [(String, QueryGraph, u64)] {
    static CASES: OnceLock<Vec<(String, QueryGraph, u64)>> = OnceLock::new();
    CASES.get_or_init(|| {
        let text = std::fs::read_to_string(dataset("expected_output.res")).unwrap();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let (name, count) = l.trim().split_once(':').unwrap();
                let path = dataset(&format!("query_graph/{name}.graph"));
                let g = ingest(&[path], &IngestOptions::default(), &NoProgress)
                    .unwrap()
                    .0;
                let q = benchmark_query(&g, hprd()).unwrap();
                (name.to_owned(), q, count.parse().unwrap())
            })
            .collect()
    })
}

fn options(engine: EngineKind) -> MatchOptions {
    MatchOptions {
        semantics: Semantics::Iso,
        engine,
        ..MatchOptions::default()
    }
}

#[test]
fn hprd_as_one_batch_counts_as_alone_and_as_dfs_in_few_launches_and_reads() {
    let cases = cases();
    assert_eq!(cases.len(), 200);
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated);
    let batch: Vec<_> = cases.iter().map(|(_, q, _)| (q, &opts)).collect();
    let report = engine.count_batch(&batch);
    assert_eq!(report.batched, 200);
    let dfs = options(EngineKind::Dfs);
    for (k, ((name, q, expected), r)) in cases.iter().zip(&report.reports).enumerate() {
        let got = r.as_ref().unwrap_or_else(|e| panic!("{name}: {e}")).rows;
        assert_eq!(got, u128::from(*expected), "{name}: batched");
        assert_eq!(got, engine.count(q, &dfs).unwrap().rows, "{name}: dfs");
        if k % 10 == 0 {
            assert_eq!(got, engine.count(q, &opts).unwrap().rows, "{name}: alone");
        }
    }
    // Warm (the arena sized by the first batch), the same batch again: its counters.
    let warm = engine.count_batch(&batch);
    let c = warm.counters;
    let per = |x: u64| x as f64 / 200.0;
    let partials: u64 = warm
        .reports
        .iter()
        .map(|r| {
            r.as_ref()
                .unwrap()
                .device_report
                .as_ref()
                .unwrap()
                .partial_matches
        })
        .sum();
    println!(
        "HPRD-200 as one batch: {} launches, {} reads, {} allocations, {} uploads, {} B up, {} B down; \
         per query {:.2} launches, {:.3} reads, {:.1} partial matches; join span {} steps \
         (strided {}, bound {})",
        c.launches,
        c.syncs,
        c.allocations,
        c.uploads,
        c.bytes_up,
        c.bytes_down,
        per(c.launches),
        per(c.syncs),
        per(partials),
        c.warp_span,
        c.warp_span_strided,
        c.warp_span_bound
    );
    assert!(per(c.launches) <= 8.0, "{} launches", c.launches);
    assert!(per(c.syncs) <= 1.0, "{} reads", c.syncs);
    assert_eq!(c.allocations, 0, "a warm batch allocates nothing");
    // The emulator says which of each phase's time was its own (the kernels), so that the rest,
    // the host's work that a GPU would not take over, is measured without one.
    let p = warm.phases;
    let [filter, space, rest] = p.emulated;
    assert!(
        filter > std::time::Duration::ZERO && filter <= p.filter,
        "{p:?}"
    );
    assert!(space <= p.space && rest <= p.levels + p.alone, "{p:?}");
    assert!(
        c.emulated_ns > 0 && c.write_ns > 0 && c.read_ns > 0,
        "{c:?}"
    );
}

#[test]
fn a_query_that_fails_or_times_out_leaves_the_others_answered() {
    let cases = &cases()[..12];
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated);
    // Too small for its candidate bitsets alone.
    let tiny = MatchOptions {
        memory_budget: 4 << 10,
        ..opts.clone()
    };
    let late = MatchOptions {
        timeout: Some(Duration::ZERO),
        ..opts.clone()
    };
    let batch: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(k, (_, q, _))| {
            let o = match k {
                3 => &tiny,
                7 => &late,
                _ => &opts,
            };
            (q, o)
        })
        .collect();
    let report = engine.count_batch(&batch);
    for (k, ((name, _, expected), r)) in cases.iter().zip(&report.reports).enumerate() {
        match k {
            3 => assert!(
                matches!(r, Err(MatchError::DeviceBudget { .. })),
                "{name}: {r:?}"
            ),
            7 => assert!(r.as_ref().unwrap().timed_out, "{name}: {r:?}"),
            _ => {
                let r = r.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(r.rows, u128::from(*expected), "{name}");
                assert!(!r.timed_out, "{name}");
            }
        }
    }
}

#[test]
fn limits_and_budgets_hold_per_query_in_a_batch() {
    let cases: Vec<_> = cases().iter().step_by(10).collect();
    let engine = Engine::new(hprd());
    let opts = options(EngineKind::Emulated);
    let limited = MatchOptions {
        limit: Some(3),
        ..opts.clone()
    };
    // Budgets with room for the candidate bitsets and space (~140 KB here) and a few hundred rows
    // per level or fewer: some levels outgrow their batch buffers and those queries go on alone
    // after the batch (at which budget depends on how few rows the join needs).
    let mut went_alone = 0;
    for budget in (100_000..=200_000).step_by(2_000) {
        let small = MatchOptions {
            memory_budget: budget,
            ..opts.clone()
        };
        let per_query: Vec<&MatchOptions> = (0..cases.len())
            .map(|k| match k % 3 {
                0 => &small,
                1 => &limited,
                _ => &opts,
            })
            .collect();
        let batch: Vec<_> = cases
            .iter()
            .zip(&per_query)
            .map(|((_, q, _), o)| (q, *o))
            .collect();
        let report = engine.count_batch(&batch);
        assert_eq!(report.batched, cases.len());
        for (((name, q, _), o), r) in cases.iter().zip(&per_query).zip(&report.reports) {
            match (r, engine.count(q, o)) {
                (Ok(r), Ok(alone)) => {
                    assert_eq!(r.rows, alone.rows, "{name}, {budget} bytes");
                    assert_eq!(r.limit_reached, alone.limit_reached, "{name}");
                }
                // At a budget's edge the batch and the query alone count its bytes differently
                // (shared level buffers; the bytes of a query going on alone after the batch):
                // either may answer where the other stops at the budget, never past it, or both
                // stop, each at its own partial match (a level left no room holds no rows: it
                // once went on in the page a launch into no room had allocated), or alone at a
                // level the budget left no room for a row (said as the bytes it needs).
                (
                    Ok(_) | Err(MatchError::MemoryBudget { .. }),
                    Err(MatchError::MemoryBudget { .. }),
                )
                | (Err(MatchError::MemoryBudget { .. }), Ok(_)) => {}
                (
                    Ok(_) | Err(MatchError::MemoryBudget { .. }),
                    Err(MatchError::DeviceBudget { bytes, .. }),
                ) if bytes > budget => {}
                // Too small a budget is the query's own error, as alone.
                (Err(e), Err(alone)) => assert_eq!(e.to_string(), alone.to_string(), "{name}"),
                (r, alone) => panic!("{name}, {budget} bytes: {r:?} in the batch, {alone:?} alone"),
            }
        }
        // Two reads are the batch's own: each more is a level of a query that went on alone.
        went_alone += (report.counters.syncs > 2) as usize;
    }
    assert!(went_alone > 0, "no batched query went on alone");
}

#[test]
fn counts_on_device_follows_the_engine_and_autos_pick() {
    let engine = Engine::new(hprd());
    let q = &cases()[0].1;
    assert!(engine.counts_on_device(q, &options(EngineKind::Emulated)));
    assert!(!engine.counts_on_device(q, &options(EngineKind::Dfs)));
    assert!(!engine.counts_on_device(q, &options(EngineKind::Kernels)));
    // Without a GPU, `auto` counts on the CPU: a front end has no batch to gather it into.
    if engine.gpu().is_err() {
        assert!(!engine.counts_on_device(q, &options(EngineKind::Auto)));
    }
}

fn conceptnet() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/conceptnet-100k/train.txt.gz");
        ingest(&[path], &IngestOptions::default(), &NoProgress)
            .expect("ConceptNet-100K loads")
            .0
    })
}

/// ConceptNet-100K queries with variables: a join, a path, an edge variable, DISTINCT, a cycle.
const ROW_QUERIES: &[&str] = &[
    "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
    "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }",
    "SELECT ?x ?r WHERE { ?x ?r animal }",
    "SELECT DISTINCT ?r WHERE { ?x ?r animal }",
    "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?c IsA animal }",
    "SELECT * WHERE { ?x AtLocation ?y . ?y AtLocation ?x }",
    "SELECT ?y WHERE { dog ?r ?x . ?x IsA ?y }",
];

fn compiled(text: &str) -> QueryGraph {
    let g = conceptnet();
    gpsense_planner::compile(text, g).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

/// Each query's rows (sorted) and report from one `match_batch` call.
type Answered = Vec<Result<(Vec<Vec<u32>>, gpsense_runtime::MatchReport), MatchError>>;

fn rows_in_batch(
    engine: &Engine,
    queries: &[(&QueryGraph, &MatchOptions)],
) -> (Answered, gpsense_runtime::BatchReport) {
    let mut rows: Vec<Vec<Vec<u32>>> = queries.iter().map(|_| Vec::new()).collect();
    let mut sinks: Vec<_> = rows
        .iter_mut()
        .map(|r| {
            move |b: RowBatch| {
                r.extend(b.iter().map(<[u32]>::to_vec));
                true
            }
        })
        .collect();
    let list: Vec<BatchQuery> = queries
        .iter()
        .zip(sinks.iter_mut())
        .map(|(&(q, opts), sink)| BatchQuery {
            q,
            opts,
            rows: Some(sink),
        })
        .collect();
    let mut batch = engine.match_batch(list);
    drop(sinks);
    let answered = std::mem::take(&mut batch.reports)
        .into_iter()
        .zip(rows)
        .map(|(r, mut rows)| {
            rows.sort();
            r.map(|r| (rows, r))
        })
        .collect();
    (answered, batch)
}

/// dfs's rows of `q` (sorted).
fn dfs_rows(engine: &Engine, q: &QueryGraph, semantics: Semantics) -> Vec<Vec<u32>> {
    let dfs = MatchOptions {
        semantics,
        ..options(EngineKind::Dfs)
    };
    let mut rows = engine.collect(q, &dfs).unwrap().0;
    rows.sort();
    rows
}

/// Row queries in one batch give dfs's rows (the same multiset), under iso and hom, in far fewer
/// launches and reads than the same queries one by one; a LIMIT query gives LIMIT rows of dfs's.
#[test]
fn row_queries_in_a_batch_give_dfs_rows_in_few_launches() {
    let engine = Engine::new(conceptnet());
    let queries: Vec<QueryGraph> = ROW_QUERIES.iter().map(|t| compiled(t)).collect();
    let limited = compiled("SELECT * WHERE { ?x AtLocation ?y . ?y IsA ?z } LIMIT 7");
    for semantics in [Semantics::Iso, Semantics::Hom] {
        let opts = MatchOptions {
            semantics,
            ..options(EngineKind::Emulated)
        };
        let mut list: Vec<_> = queries.iter().map(|q| (q, &opts)).collect();
        list.push((&limited, &opts));
        let (answered, batch) = rows_in_batch(&engine, &list);
        assert_eq!((batch.batched, batch.batches), (list.len(), 1));
        for (k, (text, a)) in ROW_QUERIES.iter().zip(&answered).enumerate() {
            let (rows, report) = a.as_ref().unwrap_or_else(|e| panic!("{text}: {e}"));
            let want = dfs_rows(&engine, &queries[k], semantics);
            assert!(!want.is_empty(), "{text}: no rows to compare");
            assert_eq!(rows, &want, "{text} ({semantics:?})");
            assert_eq!(report.rows, want.len() as u128, "{text}");
            assert_eq!(report.engine, EngineKind::Emulated);
        }
        let (rows, report) = answered.last().unwrap().as_ref().unwrap();
        let unlimited = QueryGraph {
            limit: None,
            ..limited.clone()
        };
        let all = dfs_rows(&engine, &unlimited, semantics);
        assert!(all.len() > 7);
        assert_eq!((rows.len(), report.limit_reached), (7, true));
        assert!(
            rows.iter().all(|r| all.binary_search(r).is_ok()),
            "{rows:?}"
        );
        assert!(rows.windows(2).all(|w| w[0] != w[1]));
    }
}

/// 16 row queries whose levels all fit their batch rooms: three reads in all (candidate counts,
/// counters, every query's rows), and a fraction of the launches and reads of the same queries
/// one by one.
#[test]
fn row_queries_in_a_batch_take_a_fraction_of_the_launches_alone() {
    let engine = Engine::new(conceptnet());
    let opts = options(EngineKind::Emulated);
    let concepts = [
        "animal", "food", "plant", "person", "tool", "fruit", "bird", "vehicle",
    ];
    let queries: Vec<QueryGraph> = concepts
        .iter()
        .flat_map(|c| {
            [
                compiled(&format!("SELECT ?x ?y WHERE {{ ?x IsA ?y . ?y IsA {c} }}")),
                compiled(&format!(
                    "SELECT ?x WHERE {{ ?x IsA {c} . ?x AtLocation home }}"
                )),
            ]
        })
        .collect();
    let list: Vec<_> = queries.iter().map(|q| (q, &opts)).collect();
    // Warm: the second batch's counters.
    rows_in_batch(&engine, &list);
    let (answered, batch) = rows_in_batch(&engine, &list);
    let mut rows = 0;
    let mut alone = gpsense_runtime::DeviceCounters::default();
    for (&(q, o), a) in list.iter().zip(&answered) {
        let (got, _) = a.as_ref().unwrap();
        assert_eq!(got, &dfs_rows(&engine, q, Semantics::Iso));
        rows += got.len();
        let r = engine.run(q, o, &mut |_| true).unwrap();
        alone += r.device_report.unwrap().counters;
    }
    assert!(rows > 100, "{rows} rows");
    let c = batch.counters;
    println!(
        "{} ConceptNet row queries, {rows} rows: batch {} launches, {} reads; alone {} \
         launches, {} reads",
        list.len(),
        c.launches,
        c.syncs,
        alone.launches,
        alone.syncs
    );
    assert_eq!(c.syncs, 3, "{c:?}");
    assert!(c.launches * 4 < alone.launches, "{c:?} against {alone:?}");
}

/// A row query whose last level outgrows its batch room (thousands of IsA edges) goes on alone
/// after the batch with dfs's rows; a query over its memory budget fails alone; a query timed
/// out before it starts is reported so; the others' rows are dfs's.
#[test]
fn row_queries_that_overflow_or_fail_leave_the_others_rows_right() {
    let engine = Engine::new(conceptnet());
    let opts = options(EngineKind::Emulated);
    let tiny = MatchOptions {
        memory_budget: 4 << 10,
        ..opts.clone()
    };
    let late = MatchOptions {
        timeout: Some(Duration::ZERO),
        ..opts.clone()
    };
    let big = compiled("SELECT * WHERE { ?x IsA ?y }");
    let queries: Vec<QueryGraph> = ROW_QUERIES.iter().map(|t| compiled(t)).collect();
    let mut list: Vec<(&QueryGraph, &MatchOptions)> = queries.iter().map(|q| (q, &opts)).collect();
    list.insert(1, (&big, &opts));
    list.insert(3, (&queries[0], &tiny));
    list.insert(5, (&queries[1], &late));
    let (answered, batch) = rows_in_batch(&engine, &list);
    assert_eq!(batch.batched, list.len());
    for (k, (&(q, _), a)) in list.iter().zip(&answered).enumerate() {
        match k {
            3 => assert!(
                matches!(a, Err(MatchError::DeviceBudget { .. })),
                "{:?}",
                a.as_ref().map(|r| &r.1)
            ),
            5 => assert!(a.as_ref().unwrap().1.timed_out),
            _ => {
                let (rows, report) = a.as_ref().unwrap_or_else(|e| panic!("query {k}: {e}"));
                assert_eq!(rows, &dfs_rows(&engine, q, Semantics::Iso), "query {k}");
                assert!(!report.timed_out, "query {k}");
            }
        }
    }
    let big_rows = answered[1].as_ref().unwrap().0.len();
    assert!(big_rows > 4096, "{big_rows} rows fit a batch room");
}

const HEAVY_ROWS: &str = "SELECT * WHERE { ?x IsA ?y . ?y IsA ?z }";
const LIGHT_ROWS: &str = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";

/// One batch, under `outgrown`: [`HEAVY_ROWS`] (36,885 rows, more than its 4,096-row room) first,
/// then [`LIGHT_ROWS`]'s rows, then its count. `told` gets each answer as it is handed over, with
/// the heavy query's rows handed out by then. Returns the batch's report and those rows in all.
fn heavy_first(
    outgrown: Outgrown,
    told: &(dyn Fn(usize, Option<u128>, u64) + Sync),
) -> (BatchReport, u64) {
    let engine = Engine::new(conceptnet());
    let (heavy, light) = (compiled(HEAVY_ROWS), compiled(LIGHT_ROWS));
    let opts = options(EngineKind::Emulated);
    let heavy_rows = AtomicU64::new(0);
    let mut heavy_sink = |b: RowBatch| {
        heavy_rows.fetch_add(b.rows as u64, Relaxed);
        true
    };
    let mut light_sink = |_: RowBatch| true;
    let list = vec![
        BatchQuery {
            q: &heavy,
            opts: &opts,
            rows: Some(&mut heavy_sink),
        },
        BatchQuery {
            q: &light,
            opts: &opts,
            rows: Some(&mut light_sink),
        },
        BatchQuery {
            q: &light,
            opts: &opts,
            rows: None,
        },
    ];
    let batch = engine.match_batch_each(list, outgrown, &|i, a| {
        told(i, a.as_ref().map(|r| r.rows).ok(), heavy_rows.load(Relaxed));
    });
    (batch, heavy_rows.load(Relaxed))
}

/// A query whose levels fit its batch room is answered as the batch's reads return, before a
/// query given ahead of it whose level outgrew its room has handed out a row alone: a server's
/// light request does not wait for the heavy one in its batch. Each answer is handed over once,
/// the same as the batch's report.
#[test]
fn a_query_that_fits_is_answered_before_one_that_goes_on_alone() {
    // Each answer as told: its index, its rows, the heavy query's rows by then.
    let told = Mutex::new(Vec::new());
    let (batch, _) = heavy_first(Outgrown::GoOn, &|i, rows, heavy| {
        told.lock().unwrap().push((i, heavy, rows));
    });
    let told = told.into_inner().unwrap();
    assert_eq!((batch.batched, batch.batches), (3, 1));
    let order: Vec<usize> = told.iter().map(|t| t.0).collect();
    assert_eq!(order, [1, 2, 0], "fitting queries first, each once");
    assert_eq!(
        (told[0].1, told[1].1),
        (0, 0),
        "the light queries waited for the heavy one's rows"
    );
    let engine = Engine::new(conceptnet());
    let want = dfs_rows(&engine, &compiled(HEAVY_ROWS), Semantics::Iso).len() as u64;
    assert!(
        want > 4096,
        "the heavy query fits its batch room ({want} rows)"
    );
    assert_eq!((told[2].1, told[2].2), (want, Some(u128::from(want))));
    for (i, _, rows) in &told {
        let reported = batch.reports[*i].as_ref().map(|r| r.rows).ok();
        assert_eq!(
            *rows, reported,
            "query {i}: told one answer, reported another"
        );
    }
    assert!(told[0].2.is_some_and(|n| n > 0) && told[0].2 == told[1].2);
}

/// Under `Outgrown::Leave` a query whose level outgrew its batch room is answered
/// `OutgrewBatch` with the others, its rows never handed out, for the caller to answer it alone.
#[test]
fn a_batch_leaves_an_outgrown_query_to_its_caller() {
    let (batch, handed) = heavy_first(Outgrown::Leave, &|_, _, _| {});
    match &batch.reports[0] {
        Err(MatchError::OutgrewBatch { level, rows, room }) => {
            assert!(rows > room, "level {level}: {rows} rows, room {room}");
        }
        other => panic!("the heavy query was not left: {other:?}"),
    }
    assert_eq!(handed, 0, "a left query handed out rows");
    let engine = Engine::new(conceptnet());
    let light = compiled(LIGHT_ROWS);
    let alone = engine
        .count(&light, &options(EngineKind::Emulated))
        .unwrap()
        .rows;
    assert_eq!(batch.reports[2].as_ref().unwrap().rows, alone);
}

/// `q`'s rows in a batch of its own (`Engine::match_batch`): its answer, and the rows handed out.
fn rows_alone_in_batch(
    engine: &Engine,
    q: &QueryGraph,
    o: &MatchOptions,
) -> (Result<MatchReport, MatchError>, u64) {
    let mut handed = 0;
    let mut sink = |b: RowBatch| {
        handed += b.iter().count() as u64;
        true
    };
    let rows = Some(&mut sink as _);
    let mut batch = engine.match_batch(vec![BatchQuery { q, opts: o, rows }]);
    let answer = batch.reports.remove(0);
    drop(batch);
    (answer, handed)
}

/// A batched query that outgrows its batch room at a level past the first goes on alone from
/// there on the engine's level buffers, which an earlier query of 1 GiB left large: its answer is
/// a fresh engine's. Those of the levels before it hold none of its rows (they are in the batch's
/// buffers): charged to it, they left it no room (a 128 KiB query failed, `MemoryBudget { rows:
/// 101, budget_rows: 0 }`). Those it uses are cut to its budget: used as they were, they held more
/// than it (a 64 KiB query that a fresh engine refuses answered).
#[test]
fn a_query_going_on_alone_after_its_batch_is_not_charged_an_earlier_query_s_buffers() {
    let mut b = gpsense_graph::GraphBuilder::new();
    b.add_triple("h", "r", "h", 1.0).unwrap();
    for i in 0..100 {
        b.add_triple("h", "r", &format!("l{i}"), 1.0).unwrap();
        for j in 0..100 {
            b.add_triple(&format!("l{i}"), "r", &format!("m{j}"), 1.0)
                .unwrap();
        }
    }
    let g = b.build().unwrap().0;
    let q = gpsense_planner::compile("SELECT * WHERE { ?a r ?b . ?b r ?c }", &g).unwrap();
    let within = |memory_budget| MatchOptions {
        memory_budget,
        semantics: Semantics::Hom,
        ..options(EngineKind::Emulated)
    };
    let all = Engine::new(&g)
        .collect(&q, &within(1 << 30))
        .unwrap()
        .0
        .len();
    for budget in [64 << 10, 128 << 10, 256 << 10] {
        let fresh = rows_alone_in_batch(&Engine::new(&g), &q, &within(budget));
        let engine = Engine::new(&g);
        engine.collect(&q, &within(1 << 30)).unwrap();
        let after = rows_alone_in_batch(&engine, &q, &within(budget));
        match (fresh, after) {
            ((Ok(_), _), (Ok(r), handed)) => {
                assert_eq!(
                    (r.rows, handed),
                    (all as u128, all as u64),
                    "{budget} bytes"
                );
                assert!(r.device_report.unwrap().levels > 2, "it went on alone");
            }
            ((Err(fresh), _), (Err(after), _)) => {
                assert!(budget < 128 << 10, "{budget} bytes: {fresh}");
                assert_eq!(fresh.to_string(), after.to_string(), "{budget} bytes");
            }
            (fresh, after) => panic!("{budget} bytes: fresh {fresh:?}, after 1 GiB {after:?}"),
        }
    }
}

/// A batched row query under LIMIT at a budget of a few rows: its answer is its rows with
/// `limit_reached` right, or an error for its budget, never the limit's rows said to be all (a
/// level whose room held exactly the limit's rows passed for complete: 3 rows of 5 under LIMIT 3
/// at 512 bytes, `limit_reached` false).
#[test]
fn a_batched_row_query_at_a_budget_of_a_few_rows_tells_its_limit_right() {
    let mut b = gpsense_graph::GraphBuilder::new();
    for i in 0..5 {
        let n = format!("n{i}");
        b.add_triple(&n, "r0", &n, 1.0).unwrap();
    }
    let g = b.build().unwrap().0;
    let q = gpsense_planner::compile("SELECT * WHERE { ?x r0 ?x }", &g).unwrap();
    let engine = Engine::new(&g);
    let mut answered = 0;
    for memory_budget in (256..=2048).step_by(16) {
        for limit in 1..=5 {
            let o = MatchOptions {
                memory_budget,
                limit: Some(limit),
                ..options(EngineKind::Emulated)
            };
            let (answer, handed) = rows_alone_in_batch(&engine, &q, &o);
            let at = format!("{memory_budget} bytes, LIMIT {limit}");
            match answer {
                Ok(r) => {
                    assert_eq!((r.rows, handed), (limit.into(), limit), "{at}");
                    assert_eq!(r.limit_reached, limit < 5, "{at}");
                    answered += 1;
                }
                Err(MatchError::MemoryBudget { .. } | MatchError::DeviceBudget { .. }) => {}
                Err(e) => panic!("{at}: {e}"),
            }
        }
    }
    assert!(answered > 0, "no budget answered: the test proves nothing");
}
