//! The heavy-row split of the warp join, measured by the emulator's balance counters: on a graph
//! with one hub whose list is thousands of entries long, a warp per partial match leaves one warp
//! scanning the hub's list while the others finish at once; cutting long lists into segments that
//! warps take in turn bounds the busiest warp, with the same rows.
//!
//! A level over short lists is not cut, hub or not: a cut costs launches.
//!
//! Its own binary: each run sets `GPSENSE_SEGMENT` (read when an engine makes its device state, at
//! its first device query), one run at a time.

use std::sync::Mutex;

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::compile;
use gpsense_runtime::{DeviceCounters, Engine, EngineKind, MatchOptions, Semantics};

/// Hub `h` with `HUB` neighbours over `r`, 200 nodes with two each, and 200 paths of two `s`
/// edges.
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
        b.add_triple(&format!("p{j}"), "s", &format!("q{j}"), 1.0)
            .unwrap();
        b.add_triple(&format!("q{j}"), "s", &format!("t{j}"), 1.0)
            .unwrap();
    }
    b.build().unwrap().0
}

/// The rows of `query` and the join's balance counters.
fn run(g: &KnowledgeGraph, query: &str, segment: Option<&str>) -> (usize, DeviceCounters) {
    static ENV: Mutex<()> = Mutex::new(());
    let _one = ENV.lock().unwrap_or_else(|e| e.into_inner());
    match segment {
        Some(s) => std::env::set_var("GPSENSE_SEGMENT", s),
        None => std::env::remove_var("GPSENSE_SEGMENT"),
    }
    let engine = Engine::new(g);
    let q = compile(query, g).unwrap();
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
    let hub = "SELECT * WHERE { ?a r ?b }";
    let (whole_rows, whole) = run(&g, hub, Some("0"));
    // The default: a level whose lists can be longer than 1,024 entries (the hub's 8,000) cuts
    // them into segments of 256.
    let (split_rows, split) = run(&g, hub, None);
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
    // A segment is 256 entries, a small node's list 2: within a few times the mean.
    assert!(imbalance(&split) < 8.0, "{split:?}");
    assert!(split.warp_span * 4 < whole.warp_span, "{split:?} {whole:?}");
}

#[test]
fn short_lists_are_not_cut_beside_a_hub() {
    let g = skewed();
    let path = "SELECT * WHERE { ?a s ?b . ?b s ?c }";
    let (rows, chosen) = run(&g, path, None);
    let (whole_rows, whole) = run(&g, path, Some("0"));
    let (cut_rows, cut) = run(&g, path, Some("256"));
    assert_eq!(rows, 200);
    assert_eq!((whole_rows, cut_rows), (rows, rows));
    println!(
        "a path over short lists beside a hub: {} launches; every list cut: {}",
        chosen.launches, cut.launches
    );
    // Its second level's lists hold one entry: no count and scan launches for them.
    assert_eq!(chosen.launches, whole.launches, "{chosen:?}");
    assert!(cut.launches > whole.launches, "{cut:?} {whole:?}");
}
