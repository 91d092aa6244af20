//! The engine at its limits: empty graphs and queries, queries beyond the fixed-size kernel state,
//! the guard on disconnected queries, and options that must not change answers.

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::{compile, EdgeLabel, NodeKind, Projected, QueryEdge, QueryGraph, QueryNode};
use gpsense_runtime::{Engine, EngineKind, MatchError, MatchOptions, Semantics, MAX_QUERY_NODES};

const ENGINES: [EngineKind; 3] = [EngineKind::Auto, EngineKind::Dfs, EngineKind::Kernels];

fn graph(triples: &[(&str, &str, &str)]) -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for (s, r, t) in triples {
        b.add_triple(s, r, t, 1.0).unwrap();
    }
    b.build().unwrap().0
}

fn opts(engine: EngineKind, semantics: Semantics) -> MatchOptions {
    MatchOptions {
        engine,
        semantics,
        ..MatchOptions::default()
    }
}

fn variable(name: &str) -> QueryNode {
    QueryNode {
        name: name.into(),
        kind: NodeKind::Variable,
        label: None,
    }
}

/// `n` variables, edges `(source, target, label)`, every node projected.
fn query(n: usize, edges: &[(usize, usize, EdgeLabel)], edge_variables: usize) -> QueryGraph {
    QueryGraph {
        nodes: (0..n).map(|i| variable(&format!("?v{i}"))).collect(),
        edges: edges
            .iter()
            .map(|&(source, target, label)| QueryEdge {
                source,
                target,
                label,
            })
            .collect(),
        edge_variables: (0..edge_variables).map(|k| format!("?r{k}")).collect(),
        concept_sets: Vec::new(),
        projection: (0..n).map(Projected::Node).collect(),
        distinct: false,
        limit: None,
    }
}

#[test]
fn a_graph_without_nodes_has_no_matches() {
    let g = GraphBuilder::new().build().unwrap().0;
    let engine = Engine::new(&g);
    let q = query(2, &[(0, 1, EdgeLabel::Variable(0))], 1);
    for engine_kind in ENGINES {
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let o = opts(engine_kind, semantics);
            let (rows, report) = engine.collect(&q, &o).unwrap();
            assert!(rows.is_empty() && report.rows == 0);
            assert_eq!(engine.count(&q, &o).unwrap().rows, 0);
        }
    }
}

#[test]
fn a_query_without_nodes_is_refused_not_a_panic() {
    let g = graph(&[("a", "r", "b")]);
    let engine = Engine::new(&g);
    let q = query(0, &[], 0);
    for engine_kind in ENGINES {
        let o = opts(engine_kind, Semantics::Iso);
        assert!(matches!(engine.collect(&q, &o), Err(MatchError::Plan(_))));
        assert!(matches!(engine.count(&q, &o), Err(MatchError::Plan(_))));
    }
}

#[test]
fn queries_beyond_the_kernel_state_are_refused() {
    let g = graph(&[("a", "r", "b")]);
    let engine = Engine::new(&g);
    let r = EdgeLabel::Fixed(0);
    let too_many_nodes = query(
        MAX_QUERY_NODES + 1,
        &(1..=MAX_QUERY_NODES).map(|i| (0, i, r)).collect::<Vec<_>>(),
        0,
    );
    let star = query(
        MAX_QUERY_NODES,
        &(1..MAX_QUERY_NODES).map(|i| (0, i, r)).collect::<Vec<_>>(),
        0,
    );
    let vars = gpsense_kernels::join::MAX_EDGE_VARIABLES;
    let too_many_variables = query(
        vars + 2,
        &(1..vars + 2)
            .map(|i| (0, i, EdgeLabel::Variable(i - 1)))
            .collect::<Vec<_>>(),
        vars + 1,
    );
    // Parallel edges: a node may have more edges than the query has nodes.
    let checks = gpsense_kernels::join::MAX_CHECKS;
    let too_many_edges_at_a_node = query(2, &vec![(0, 1, r); checks + 1], 0);
    let most_edges_at_a_node = query(2, &vec![(0, 1, r); checks], 0);
    for engine_kind in ENGINES {
        let o = opts(engine_kind, Semantics::Iso);
        assert!(
            matches!(
                engine.count(&too_many_edges_at_a_node, &o),
                Err(MatchError::QueryTooLarge { what: "edges at one node", found, .. })
                    if found == checks + 1
            ),
            "{too_many_edges_at_a_node}"
        );
        assert!(engine.count(&most_edges_at_a_node, &o).is_ok());
        for q in [&too_many_nodes, &too_many_variables] {
            assert!(
                matches!(engine.count(q, &o), Err(MatchError::QueryTooLarge { .. })),
                "{q}"
            );
        }
        // The largest star that fits: no match in this graph, but answered.
        assert_eq!(engine.count(&star, &o).unwrap().rows, 0);
    }
}

/// Rows of a disconnected query beyond `max_cartesian` are refused unless limited; counting them is
/// never refused (no row is materialised) and exact under both semantics.
#[test]
fn the_cartesian_guard_refuses_unless_limited() {
    // 3 x 3 pairs over two components.
    let g = graph(&[
        ("a1", "r", "b"),
        ("a2", "r", "b"),
        ("a3", "r", "b"),
        ("c1", "s", "d"),
        ("c2", "s", "d"),
        ("c3", "s", "d"),
    ]);
    let engine = Engine::new(&g);
    let q = compile("SELECT ?x ?y WHERE { ?x r b . ?y s d }", &g).unwrap();
    for engine_kind in ENGINES {
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let small = MatchOptions {
                max_cartesian: 8,
                ..opts(engine_kind, semantics)
            };
            assert_eq!(engine.count(&q, &small).unwrap().rows, 9);
            assert!(matches!(
                engine.collect(&q, &small),
                Err(MatchError::CartesianExplosion { .. })
            ));
            let limited = MatchOptions {
                limit: Some(4),
                ..small.clone()
            };
            let (rows, report) = engine.collect(&q, &limited).unwrap();
            assert_eq!((rows.len(), report.limit_reached), (4, true));
            let enough = MatchOptions {
                max_cartesian: 9,
                ..small
            };
            assert_eq!(engine.count(&q, &enough).unwrap().rows, 9);
            assert_eq!(engine.collect(&q, &enough).unwrap().0.len(), 9);
        }
    }
}

#[test]
fn options_that_must_not_change_answers() {
    let g = graph(&[
        ("a", "r", "b"),
        ("b", "r", "c"),
        ("c", "r", "a"),
        ("a", "s", "c"),
        ("c", "s", "c"),
        ("b", "s", "a"),
        ("d", "r", "a"),
    ]);
    let engine = Engine::new(&g);
    for text in [
        "SELECT * WHERE { ?x r ?y . ?y r ?z . ?z ?p ?x }",
        "SELECT * WHERE { ?x ?p ?y . ?y ?p ?z }",
        "SELECT * WHERE { ?x s ?x . ?y ?p ?x }",
    ] {
        let q = compile(text, &g).unwrap();
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let reference = {
                let mut rows = engine
                    .collect(&q, &opts(EngineKind::Dfs, semantics))
                    .unwrap()
                    .0;
                rows.sort();
                rows
            };
            assert!(!reference.is_empty(), "{text}");
            for engine_kind in ENGINES {
                for refine_rounds in [0, 1, 3] {
                    for lanes in [0, 1, 7, 32] {
                        let o = MatchOptions {
                            refine_rounds,
                            lanes,
                            ..opts(engine_kind, semantics)
                        };
                        let mut rows = engine.collect(&q, &o).unwrap().0;
                        rows.sort();
                        assert_eq!(rows, reference, "{text} {o:?}");
                        assert_eq!(engine.count(&q, &o).unwrap().rows, reference.len() as u128);
                    }
                }
            }
        }
    }
}

#[test]
fn the_row_callback_can_stop_the_match() {
    // 30 matches; the callback stops after the first batch.
    let triples: Vec<(String, String)> = (0..30).map(|i| (format!("x{i}"), "hub".into())).collect();
    let t: Vec<(&str, &str, &str)> = triples
        .iter()
        .map(|(s, h)| (s.as_str(), "r", h.as_str()))
        .collect();
    let g = graph(&t);
    let engine = Engine::new(&g);
    let q = compile("SELECT ?x WHERE { ?x r hub }", &g).unwrap();
    for engine_kind in ENGINES {
        let mut batches = 0;
        let mut rows = 0;
        engine
            .run(&q, &opts(engine_kind, Semantics::Iso), &mut |b| {
                batches += 1;
                rows += b.rows;
                false
            })
            .unwrap();
        assert_eq!(batches, 1, "{engine_kind}");
        assert!(rows >= 1);
    }
}

/// A time limit stops a huge count early and says so; without one the same engine runs on.
#[test]
fn a_timeout_stops_the_match_and_is_reported() {
    let (g, q) = six_paths_in_a_clique();
    let engine = Engine::new(&g);
    for kind in [EngineKind::Dfs, EngineKind::Kernels] {
        let o = MatchOptions {
            timeout: Some(std::time::Duration::from_millis(20)),
            ..opts(kind, Semantics::Iso)
        };
        let start = std::time::Instant::now();
        let report = engine.count(&q, &o).unwrap();
        assert!(
            report.timed_out,
            "{kind}: 40*39*...*34 = 3.3e9 matches cannot be counted in 20 ms"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{kind} ignored the deadline"
        );
        let quick = engine
            .count(&compile_small(&g), &opts(kind, Semantics::Iso))
            .unwrap();
        assert!(!quick.timed_out);
    }
}

/// The caller's stop flag ends a long count from another thread, on every CPU engine, as a time
/// limit would; a flag set before the start leaves the candidate space unbuilt.
#[test]
fn a_cancel_flag_stops_the_match_from_another_thread() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (g, q) = six_paths_in_a_clique();
    let engine = Engine::new(&g);
    for kind in [EngineKind::Dfs, EngineKind::Kernels, EngineKind::Emulated] {
        let cancel = Arc::new(AtomicBool::new(false));
        let o = MatchOptions {
            cancel: Some(cancel.clone()),
            ..opts(kind, Semantics::Iso)
        };
        let start = std::time::Instant::now();
        let report = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                cancel.store(true, Ordering::Relaxed);
            });
            engine.count(&q, &o).unwrap()
        });
        assert!(report.timed_out, "{kind}: 3.3e9 matches were counted?");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{kind} ignored the flag"
        );
        // Already set: nothing is built.
        let report = engine.count(&compile_small(&g), &o).unwrap();
        assert!(report.timed_out && report.rows == 0, "{kind}: {report:?}");
    }
}

/// A 40-node clique and the 6-edge paths through it: 40*39*...*34 = 3.3e9 matches, far too many to
/// count in a test.
fn six_paths_in_a_clique() -> (KnowledgeGraph, gpsense_planner::QueryGraph) {
    let mut b = gpsense_graph::GraphBuilder::new();
    for i in 0..40 {
        for j in 0..40 {
            if i != j {
                b.add_triple(&format!("n{i}"), "r", &format!("n{j}"), 1.0)
                    .unwrap();
            }
        }
    }
    let g = b.build().unwrap().0;
    let q = gpsense_planner::compile(
        "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d . ?d r ?e . ?e r ?f . ?f r ?g }",
        &g,
    )
    .unwrap();
    (g, q)
}

fn compile_small(g: &gpsense_graph::KnowledgeGraph) -> gpsense_planner::QueryGraph {
    gpsense_planner::compile("SELECT * WHERE { n1 r ?x }", g).unwrap()
}

/// The time limit stops the dfs engine's candidate-space build too, not only its search: a limit
/// already passed leaves the space unbuilt and the answer timed out.
#[test]
fn the_time_limit_stops_the_candidate_space_build() {
    let g = graph(&[("a", "r", "b"), ("b", "r", "c"), ("c", "r", "a")]);
    let engine = Engine::new(&g);
    let q = compile("SELECT ?x ?y WHERE { ?x r ?y . ?y r ?z }", &g).unwrap();
    let o = MatchOptions {
        timeout: Some(std::time::Duration::ZERO),
        ..opts(EngineKind::Dfs, Semantics::Iso)
    };
    let report = engine.count(&q, &o).unwrap();
    assert!(report.timed_out);
    assert_eq!(report.filter.after_filter, vec![0; 3], "{report:?}");
    let full = engine
        .count(&q, &opts(EngineKind::Dfs, Semantics::Iso))
        .unwrap();
    assert_eq!((full.rows, full.timed_out), (3, false));
}

/// The memory budget covers the dfs engine's candidate space (it covered only DISTINCT): a space
/// that outgrows it stops the build with an error that names both sizes.
#[test]
fn the_memory_budget_covers_the_candidate_space() {
    let g = graph(&[("a", "r", "b"), ("b", "r", "c"), ("c", "r", "a")]);
    let engine = Engine::new(&g);
    let q = compile("SELECT ?x ?y WHERE { ?x r ?y . ?y r ?z }", &g).unwrap();
    let tiny = MatchOptions {
        memory_budget: 16,
        ..opts(EngineKind::Dfs, Semantics::Iso)
    };
    let err = engine.count(&q, &tiny).unwrap_err();
    assert!(
        matches!(err, MatchError::SpaceBudget { budget: 16, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--memory-budget"));
    // The engine is still usable, and a budget that holds the space answers.
    let roomy = MatchOptions {
        memory_budget: 1 << 20,
        ..tiny
    };
    assert_eq!(engine.count(&q, &roomy).unwrap().rows, 3);
}

/// Refinement rounds end at their fixpoint and at the time limit (`--refine-rounds 100000
/// --timeout-ms 1000` ran 27 s): `u32::MAX` rounds finish at once on the CPU, the device pipeline
/// (which cannot see its fixpoint without a read back) stops at the clock, and a match cancelled
/// before it starts refines nothing and says it timed out.
#[test]
fn refinement_ends_at_its_fixpoint_and_at_the_time_limit() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    // A triangle, and a path that passes filtering for one but erodes by a node or so per
    // refinement round from its ends: a fixpoint many rounds away.
    let names: Vec<String> = (0..40).map(|i| format!("p{i}")).collect();
    let mut triples: Vec<(&str, &str, &str)> = names
        .windows(2)
        .map(|w| (w[0].as_str(), "r", w[1].as_str()))
        .collect();
    triples.extend([("t0", "r", "t1"), ("t1", "r", "t2"), ("t2", "r", "t0")]);
    let g = graph(&triples);
    let engine = Engine::new(&g);
    let q = compile("SELECT * WHERE { ?x r ?y . ?y r ?z . ?z r ?x }", &g).unwrap();
    let kernels = |refine_rounds| MatchOptions {
        refine_rounds,
        ..opts(EngineKind::Kernels, Semantics::Iso)
    };
    let full = engine.count(&q, &kernels(3)).unwrap();
    assert_ne!(full.filter.after_refine, full.filter.after_filter);
    let started = Instant::now();
    let report = engine.count(&q, &kernels(u32::MAX)).unwrap();
    assert_eq!((report.rows, report.timed_out), (3, false));
    assert!(started.elapsed() < Duration::from_secs(30));
    let on_device = MatchOptions {
        engine: EngineKind::Emulated,
        timeout: Some(Duration::from_millis(200)),
        ..kernels(u32::MAX)
    };
    let started = Instant::now();
    assert!(engine.count(&q, &on_device).unwrap().timed_out);
    assert!(started.elapsed() < Duration::from_secs(30));
    let cancelled = MatchOptions {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..kernels(3)
    };
    let report = engine.count(&q, &cancelled).unwrap();
    assert!(report.timed_out);
    assert_eq!(report.filter.after_refine, report.filter.after_filter);
}

/// A count the device's kernels stop on their own clock is reported as timed out, never as a
/// smaller complete count: every time limit, whichever phase it lands in, gives either the whole
/// count or a timed-out answer. (The queued levels once dropped the kernels' flag when every
/// level still fit its buffer: `0` printed as the complete answer.)
#[test]
fn a_device_count_cut_by_the_time_limit_is_never_passed_off_as_complete() {
    use std::time::Duration;
    // Five layers of 12 nodes, each node linked to every node of the next layer.
    let names: Vec<Vec<String>> = (0..5)
        .map(|l| (0..12).map(|i| format!("n{l}_{i}")).collect())
        .collect();
    let mut triples = Vec::new();
    for l in 0..4 {
        for a in &names[l] {
            for b in &names[l + 1] {
                triples.push((a.as_str(), "r", b.as_str()));
            }
        }
    }
    let g = graph(&triples);
    let engine = Engine::new(&g);
    let q = compile(
        "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d . ?d r ?e }",
        &g,
    )
    .unwrap();
    let full = engine
        .count(&q, &opts(EngineKind::Emulated, Semantics::Hom))
        .unwrap();
    assert_eq!((full.rows, full.timed_out), (12u128.pow(5), false));
    let mut cut = 0;
    for micros in (20..4_000).step_by(20) {
        let o = MatchOptions {
            timeout: Some(Duration::from_micros(micros)),
            ..opts(EngineKind::Emulated, Semantics::Hom)
        };
        let r = engine.count(&q, &o).unwrap();
        assert!(
            r.timed_out || r.rows == full.rows,
            "{micros} µs: {} matches reported as complete",
            r.rows
        );
        cut += r.timed_out as u32;
    }
    assert!(
        cut > 0,
        "no time limit cut the count: the test proves nothing"
    );
}

/// A device query's memory budget is judged on the buffers it needs, not on those its engine kept
/// from an earlier query of a larger budget: a 64 KiB count failed after a 128 KiB to 1 GiB one
/// (`MemoryBudget { rows: 2, budget_rows: 0 }`: the earlier query's level buffers, charged to it,
/// left its levels no room) where a fresh engine answered. Its buffers stay within its budget.
#[test]
fn a_small_budget_query_after_a_larger_one_is_judged_on_its_own_buffers() {
    let mut b = GraphBuilder::new();
    for i in 0..5 {
        b.node(&format!("n{i}")).unwrap();
    }
    for j in 0..3 {
        b.relation(&format!("r{j}")).unwrap();
    }
    b.add_edge(0, 0, 3, 1.0);
    b.add_edge(0, 2, 3, 1.0);
    let g = b.build().unwrap().0;
    let first = compile("SELECT * WHERE { ?a r0 ?b }", &g).unwrap();
    let q = compile("SELECT * WHERE { ?x r2 ?y . ?z ?r ?y }", &g).unwrap();
    const SMALL: u64 = 64 << 10;
    let within = |memory_budget, semantics| MatchOptions {
        memory_budget,
        ..opts(EngineKind::Emulated, semantics)
    };
    for (semantics, want) in [(Semantics::Iso, 0), (Semantics::Hom, 2)] {
        let fresh = Engine::new(&g).count(&q, &within(SMALL, semantics));
        assert_eq!(fresh.unwrap().rows, want, "{semantics:?}, a fresh engine");
        for before in [128 << 10, 1 << 20, 1 << 30] {
            let engine = Engine::new(&g);
            engine.count(&first, &within(before, semantics)).unwrap();
            let r = engine
                .count(&q, &within(SMALL, semantics))
                .unwrap_or_else(|e| panic!("{semantics:?}, after {before} bytes: {e}"));
            assert_eq!(r.rows, want, "{semantics:?}, after {before} bytes");
            let held = r.device_report.map_or(0, |d| d.arena_bytes);
            assert!(
                held <= SMALL,
                "{semantics:?}, after {before} bytes: {held} bytes"
            );
        }
    }
}
