//! A capped answer stops as soon as the limit is passed: the dfs search hands its held-back count
//! (or rows) to the output at that moment, not at its next clock tick (`check_every` search nodes
//! later) or once a thousand rows are held. Counted in search nodes, never timed.

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::compile;
use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};

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
