//! The join's bounded-memory depth-first mode (the emulated GPU pipeline): a level too large for
//! the memory budget is not halved on the host level by level; its parents are cut into chunks,
//! each run through every remaining level with one read. Counts equal `dfs`'s on heavy yeast
//! queries, the device memory stays within the budget, and the reads stay few.

use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};

mod yeast;
use yeast::{query, yeast};

fn options(engine: EngineKind, memory_budget: u64) -> MatchOptions {
    MatchOptions {
        semantics: Semantics::Iso,
        engine,
        memory_budget,
        ..MatchOptions::default()
    }
}

/// One of `benches/gpu/yeast-heavy.list` (over 10^7 matches) and a light one.
const QUERIES: [&str; 2] = ["query_sparse_8_115.graph", "query_dense_4_1.graph"];

/// Room for the candidate space and some 30,000 rows of 8 nodes in all (the heavy query's levels
/// take 24 MiB at once).
const SMALL: u64 = 1 << 20;

#[test]
fn levels_over_the_budget_run_depth_first_with_the_counts_of_dfs() {
    for name in QUERIES {
        let q = query(name);
        let dfs = Engine::new(yeast())
            .count(&q, &options(EngineKind::Dfs, 1 << 30))
            .unwrap();
        let engine = Engine::new(yeast());
        let wide = engine
            .count(&q, &options(EngineKind::Emulated, 1 << 30))
            .unwrap();
        assert_eq!(wide.rows, dfs.rows, "{name}");
        let small = Engine::new(yeast())
            .count(&q, &options(EngineKind::Emulated, SMALL))
            .unwrap();
        assert_eq!(small.rows, dfs.rows, "{name}, small budget");
        let (w, s) = (wide.device_report.unwrap(), small.device_report.unwrap());
        println!(
            "{name}: {} matches; 1 GiB: {} reads, {} launches, {} KiB, warp imbalance {:.1}; {} \
             KiB: {} reads, {} launches, {} chunks, {} KiB",
            dfs.rows,
            w.counters.syncs,
            w.counters.launches,
            w.arena_bytes >> 10,
            w.counters.warp_span as f64 / w.counters.warp_mean.max(1) as f64,
            SMALL >> 10,
            s.counters.syncs,
            s.counters.launches,
            s.chunks,
            s.arena_bytes >> 10,
        );
        // Every buffer the query holds on the device (filtering, candidate space, levels) stays
        // within the budget, every buffer's rounding up to whole pages included.
        assert!(s.arena_bytes <= SMALL, "{name}: {} bytes", s.arena_bytes);
        if w.partial_matches > SMALL / 32 {
            // Halving on the host took 730 reads here (one per level and half), chunks one each.
            assert!(s.chunks > 0, "{name}: no chunk ran depth first");
            assert!(
                s.counters.syncs <= s.chunks + 4,
                "{name}: {} reads for {} chunks",
                s.counters.syncs,
                s.chunks
            );
        }
    }
}
