//! The heavy-row split of the warp join, measured by the emulator's balance counters: on a graph
//! with one hub whose list is thousands of entries long, a warp per partial match leaves one warp
//! scanning the hub's list while the others finish at once; cutting long lists into segments that
//! warps take in turn bounds the busiest warp, with the same rows.
//!
//! One test in its own binary: it sets `GPSENSE_SEGMENT` (read when an engine makes its device state, at its first device query).

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::compile;
use gpsense_runtime::{DeviceCounters, Engine, EngineKind, MatchOptions, Semantics};

/// Hub `h` with `HUB` neighbours over `r`, and 200 nodes with two each.
const HUB: usize = 8_000;

fn skewed() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for i in 0..HUB {
        b.add_triple("h", "r", &format!("x{i}"), 1.0).unwrap();
    }
    for j in 0..200 {
        for k in 0..2 {
            b.add_triple(&format!("s{j}"), "r", &format!("y{j}_{k}"), 1.0)
                .unwrap();
        }
    }
    b.build().unwrap().0
}

/// The rows of `?a r ?b` and the join's balance counters.
fn run(g: &KnowledgeGraph, segment: Option<&str>) -> (usize, DeviceCounters) {
    match segment {
        Some(s) => std::env::set_var("GPSENSE_SEGMENT", s),
        None => std::env::remove_var("GPSENSE_SEGMENT"),
    }
    let engine = Engine::new(g);
    let q = compile("SELECT * WHERE { ?a r ?b }", g).unwrap();
    let opts = MatchOptions {
        engine: EngineKind::Emulated,
        semantics: Semantics::Iso,
        ..MatchOptions::default()
    };
    let (rows, report) = engine.collect(&q, &opts).unwrap();
    (rows.len(), report.device_report.unwrap().counters)
}

fn imbalance(c: &DeviceCounters) -> f64 {
    c.warp_span as f64 / c.warp_mean.max(1) as f64
}

#[test]
fn a_hub_list_is_shared_by_warps() {
    let g = skewed();
    let (whole_rows, whole) = run(&g, Some("0"));
    // The default on a graph with a node of degree over 4,096: segments of 1,024 entries.
    let (split_rows, split) = run(&g, None);
    assert_eq!(whole_rows, HUB + 400);
    assert_eq!(split_rows, whole_rows);
    println!(
        "a warp per partial match: busiest warp {} steps, imbalance {:.1}; segments: busiest {} \
         steps, imbalance {:.1}",
        whole.warp_span,
        imbalance(&whole),
        split.warp_span,
        imbalance(&split)
    );
    assert!(imbalance(&whole) > 15.0, "{whole:?}");
    // A segment is 1,024 entries, a small node's list 2: within a few times the mean.
    assert!(imbalance(&split) < 8.0, "{split:?}");
    assert!(split.warp_span * 4 < whole.warp_span, "{split:?} {whole:?}");
}
