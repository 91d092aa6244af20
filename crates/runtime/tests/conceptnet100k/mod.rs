//! Shared by the tests of the device pipeline on real data: ConceptNet-100K (loaded once per test
//! binary), its queries compiled, and match options for an engine under a memory budget.

// Each test binary that includes it uses a part.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{compile, QueryGraph};
use gpsense_runtime::{DeviceCounters, Engine, EngineKind, MatchOptions, Semantics};

pub fn conceptnet() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/conceptnet-100k/train.txt.gz");
        ingest(&[path], &IngestOptions::default(), &NoProgress)
            .unwrap_or_else(|e| panic!("{e}"))
            .0
    })
}

pub fn compiled(text: &str) -> QueryGraph {
    compile(text, conceptnet()).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

/// Iso semantics on `engine` within `memory_budget` bytes.
pub fn options(engine: EngineKind, memory_budget: u64) -> MatchOptions {
    MatchOptions {
        semantics: Semantics::Iso,
        engine,
        memory_budget,
        ..MatchOptions::default()
    }
}

/// Under LIMIT 1, 7 and 100 the emulated engine on `g` gives that many distinct rows of `q`'s
/// answer (as `dfs` finds it), and says the limit was reached.
pub fn limits_give_rows_of_the_answer(g: &KnowledgeGraph, q: &QueryGraph) {
    let (all, _) = Engine::new(g)
        .collect(q, &options(EngineKind::Dfs, 1 << 30))
        .unwrap();
    let all: HashSet<Vec<u32>> = all.into_iter().collect();
    for limit in [1, 7, 100] {
        let opts = MatchOptions {
            limit: Some(limit),
            ..options(EngineKind::Emulated, 1 << 30)
        };
        let (rows, report) = Engine::new(g).collect(q, &opts).unwrap();
        assert_eq!(rows.len() as u64, limit);
        assert!(report.limit_reached);
        let distinct: HashSet<&Vec<u32>> = rows.iter().collect();
        assert_eq!(distinct.len(), rows.len(), "a row twice");
        assert!(
            rows.iter().all(|r| all.contains(r)),
            "a row not in the answer"
        );
    }
}

/// `texts` counted as one emulated batch on `g`, cold then warm: every query in the batch and its
/// count `dfs`'s. Returns the warm batch's counters.
pub fn batch_counts_as_dfs(g: &KnowledgeGraph, texts: &[&str]) -> DeviceCounters {
    let qs: Vec<QueryGraph> = texts.iter().map(|t| compiled(t)).collect();
    let dfs = Engine::new(g);
    let want: Vec<u128> = qs
        .iter()
        .map(|q| {
            dfs.count(q, &options(EngineKind::Dfs, 1 << 30))
                .unwrap()
                .rows
        })
        .collect();
    let engine = Engine::new(g);
    let opts = options(EngineKind::Emulated, 1 << 30);
    let batch: Vec<_> = qs.iter().map(|q| (q, &opts)).collect();
    let first = engine.count_batch(&batch);
    // Warm (the arena sized by the first batch), the same batch again: its counters.
    let report = engine.count_batch(&batch);
    for (r, when) in [&first, &report].iter().zip(["cold", "warm"]) {
        assert_eq!(r.batched, texts.len());
        for ((text, want), got) in texts.iter().zip(&want).zip(&r.reports) {
            let got = got.as_ref().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(got.rows, *want, "{text}, {when}");
        }
    }
    report.counters
}
