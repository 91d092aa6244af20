//! Shared by the tests of the device pipeline on real data: ConceptNet-100K (loaded once per test
//! binary), its queries compiled, and match options for an engine under a memory budget.

use std::path::Path;
use std::sync::OnceLock;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{compile, QueryGraph};
use gpsense_runtime::{EngineKind, MatchOptions, Semantics};

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
