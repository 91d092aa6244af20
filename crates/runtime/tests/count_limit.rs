//! A capped answer stops as soon as the limit is passed: the dfs search hands its held-back count
//! (or rows) to the output at that moment, not at its next clock tick (`check_every` search nodes
//! later) or once a thousand rows are held. Counted in search nodes, never timed. The device's
//! rows (the emulated pipeline) tell whether the limit cut them as dfs does.

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::{compile, NodeKind, Projected, QueryGraph, QueryNode};
use gpsense_runtime::{BatchQuery, Engine, EngineKind, MatchOptions, RowBatch, Semantics};

/// 300 hubs `h<i>`, each `h<i> r l<i>_<j>` for 40 leaves: `?h r ?x` has 12,000 matches, 40 per hub.
fn hubs() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for i in 0..300 {
        for j in 0..40 {
            b.add_triple(&format!("h{i}"), "r", &format!("l{i}_{j}"), 1.0)
                .unwrap();
        }
    }
    b.build().unwrap().0
}

fn opts(semantics: Semantics, limit: Option<u64>) -> MatchOptions {
    MatchOptions {
        engine: EngineKind::Dfs,
        semantics,
        single_thread: true,
        limit,
        ..MatchOptions::default()
    }
}

#[test]
fn a_capped_count_stops_at_the_search_node_that_passes_the_limit() {
    let g = hubs();
    let e = Engine::new(&g);
    // Two leaves per hub: 40 * 39 matches per hub under iso, 40 * 40 under hom.
    let q = compile("SELECT * WHERE { ?h r ?x . ?h r ?y }", &g).unwrap();
    for semantics in [Semantics::Iso, Semantics::Hom] {
        let full = e.count(&q, &opts(semantics, None)).unwrap();
        assert!(!full.limit_reached);
        assert_eq!(
            full.search.unwrap().nodes,
            300,
            "{semantics:?}: a node per hub"
        );
        // One hub's leaves pass the limit: the search stops there.
        let capped = e.count(&q, &opts(semantics, Some(1_000))).unwrap();
        assert_eq!(capped.rows, 1_000, "{semantics:?}");
        assert!(capped.limit_reached, "{semantics:?}");
        let nodes = capped.search.unwrap().nodes;
        assert_eq!(nodes, 1, "{semantics:?}: {nodes} search nodes");
    }
}

#[test]
fn a_count_exactly_at_the_limit_is_complete_and_one_past_it_is_capped() {
    let g = hubs();
    let e = Engine::new(&g);
    let q = compile("SELECT * WHERE { ?h r ?x }", &g).unwrap();
    let at = e.count(&q, &opts(Semantics::Iso, Some(12_000))).unwrap();
    assert_eq!((at.rows, at.limit_reached), (12_000, false));
    let below = e.count(&q, &opts(Semantics::Iso, Some(11_999))).unwrap();
    assert_eq!((below.rows, below.limit_reached), (11_999, true));
}

#[test]
fn rows_under_a_limit_stop_at_the_row_that_passes_it() {
    let g = hubs();
    let e = Engine::new(&g);
    let q = compile("SELECT * WHERE { ?h r ?x }", &g).unwrap();
    let (rows, report) = e.collect(&q, &opts(Semantics::Iso, Some(5))).unwrap();
    assert_eq!(rows.len(), 5);
    assert!(report.limit_reached);
    // A hub and its first six leaves, not the thousand rows a flush would hold.
    let nodes = report.search.unwrap().nodes;
    assert!(nodes <= 8, "{nodes} search nodes");
}

/// 97 nodes `s<i>`, each with a self-loop over `r`; `s0 r s<i>` for every other one, and last
/// `s0 q s96`.
fn loops() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for i in 0..97 {
        let s = format!("s{i}");
        b.add_triple(&s, "r", &s, 1.0).unwrap();
        b.add_triple("s0", "r", &s, 1.0).unwrap();
    }
    b.add_triple("s0", "q", "s96", 1.0).unwrap();
    b.build().unwrap().0
}

fn device(semantics: Semantics, limit: Option<u64>) -> MatchOptions {
    MatchOptions {
        engine: EngineKind::Emulated,
        ..opts(semantics, limit)
    }
}

/// `q`'s rows on the device under `o`, alone (`Engine::collect`) and in a batch of its own
/// (`Engine::match_batch`): each answer's rows and `limit_reached`.
fn device_rows(e: &Engine, q: &QueryGraph, o: &MatchOptions) -> [(usize, bool); 2] {
    let (rows, alone) = e.collect(q, o).unwrap();
    let mut batched = 0;
    let mut sink = |b: RowBatch| {
        batched += b.iter().count();
        true
    };
    let rows_sink = Some(&mut sink as _);
    let report = e.match_batch(vec![BatchQuery {
        q,
        opts: o,
        rows: rows_sink,
    }]);
    let in_batch = report.reports[0].as_ref().unwrap().limit_reached;
    drop(report);
    [(rows.len(), alone.limit_reached), (batched, in_batch)]
}

/// A query of one variable node and no edge (every node matches it).
fn any_node() -> QueryGraph {
    QueryGraph {
        nodes: vec![QueryNode {
            name: "?x".into(),
            kind: NodeKind::Variable,
            label: None,
        }],
        edges: Vec::new(),
        edge_variables: Vec::new(),
        concept_sets: Vec::new(),
        projection: vec![Projected::Node(0)],
        distinct: false,
        limit: None,
    }
}

/// Device rows cut by a LIMIT of whole warps (32, 64, 96 rows) said the limit had not cut them:
/// the last level stopped at the limit's row, the kernels claim rows 32 at a time so a claim
/// ended on it exactly, and the output never saw a row past the limit. The level now stops one
/// row past it, as the output counts (`Output::rows_wanted`), alone and in a batch.
#[test]
fn device_rows_cut_by_a_limit_of_whole_warps_say_so() {
    let g = loops();
    let e = Engine::new(&g);
    let queries = [
        compile("SELECT * WHERE { ?x r ?x }", &g).unwrap(),
        compile("SELECT ?x WHERE { s0 r ?x }", &g).unwrap(),
        any_node(),
    ];
    for q in &queries {
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let all = e.count(q, &opts(semantics, None)).unwrap().rows as u64;
            for limit in [31, 32, 33, 64, 96, all, all + 1] {
                let want = (all.min(limit) as usize, all > limit);
                let got = device_rows(&e, q, &device(semantics, Some(limit)));
                assert_eq!(got, [want; 2], "{q}, {semantics:?}, LIMIT {limit}");
            }
        }
    }
}

/// Under DISTINCT the device's last level is not stopped at the limit's rows, which may repeat:
/// `SELECT DISTINCT ?p WHERE { s0 ?p ?y } LIMIT 2` gave one row (`r`), its first 32 rows all
/// `r`, where there are two.
#[test]
fn device_distinct_rows_under_a_limit_are_not_stopped_by_repeats() {
    let g = loops();
    let e = Engine::new(&g);
    let q = compile("SELECT DISTINCT ?p WHERE { s0 ?p ?y }", &g).unwrap();
    for semantics in [Semantics::Iso, Semantics::Hom] {
        for (limit, want) in [(1, (1, true)), (2, (2, false)), (3, (2, false))] {
            let got = device_rows(&e, &q, &device(semantics, Some(limit)));
            assert_eq!(got, [want; 2], "{semantics:?}, LIMIT {limit}");
        }
    }
}
