//! The dfs search's thread policy: a query searches on the calling thread alone, and asks the
//! pool for helpers only once it has run 8 ticks of `check_every` search nodes; counted by the
//! search's `helpers` counter, never timed. Answers are the same on one thread and on several.

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::compile;
use gpsense_runtime::{Engine, EngineKind, MatchOptions};

/// 60 nodes, each `n<i> r n<j>` for about half of the pairs (seeded): a 4-node path has millions of
/// matches, a node's out-list about 30 entries.
fn dense() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..60 {
        for j in 0..60 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if i != j && state >> 63 == 1 {
                b.add_triple(&format!("n{i}"), "r", &format!("n{j}"), 1.0)
                    .unwrap();
            }
        }
    }
    b.build().unwrap().0
}

fn opts(single_thread: bool) -> MatchOptions {
    MatchOptions {
        engine: EngineKind::Dfs,
        single_thread,
        // Helpers may be asked for after 8 x 4 = 32 search nodes.
        check_every: 4,
        ..MatchOptions::default()
    }
}

fn on_two_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn a_query_below_the_split_threshold_never_asks_for_a_helper() {
    let g = dense();
    let e = Engine::new(&g);
    // One concept's out-list: fewer search nodes than the threshold.
    let q = compile("SELECT ?x WHERE { n0 r ?x }", &g).unwrap();
    let report = on_two_threads(|| e.count(&q, &opts(false)).unwrap());
    let search = report.search.unwrap();
    assert!(report.rows > 0);
    assert!(search.nodes < 32, "{search:?}");
    assert_eq!(search.helpers, 0, "{search:?}");
    assert_eq!(search.splits, 0, "{search:?}");
}

#[test]
fn a_big_search_gets_helpers_and_the_same_answer() {
    let g = dense();
    let e = Engine::new(&g);
    let q = compile(
        "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d . ?d r ?a }",
        &g,
    )
    .unwrap();
    let one = e.count(&q, &opts(true)).unwrap();
    assert_eq!(one.search.unwrap().helpers, 0);
    let two = on_two_threads(|| e.count(&q, &opts(false)).unwrap());
    let search = two.search.unwrap();
    assert_eq!(search.helpers, 1, "{search:?}");
    assert_eq!(two.rows, one.rows);
    let (rows, _) = on_two_threads(|| e.collect(&q, &opts(false)).unwrap());
    assert_eq!(rows.len() as u128, one.rows);
}
