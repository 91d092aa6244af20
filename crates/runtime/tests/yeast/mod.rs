//! Shared by the tests on the yeast benchmark suite: the data graph (loaded once per test binary)
//! and its queries matched against it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{benchmark_query, QueryGraph};

fn dataset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/subgraph-matching/yeast")
        .join(rel)
}

fn load(path: &Path) -> KnowledgeGraph {
    ingest(
        &[path.to_path_buf()],
        &IngestOptions::default(),
        &NoProgress,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    .0
}

pub fn yeast() -> &'static KnowledgeGraph {
    static G: OnceLock<KnowledgeGraph> = OnceLock::new();
    G.get_or_init(|| load(&dataset("data_graph/yeast.graph")))
}

/// Query `name` of the suite (its file name, `.graph` included or not).
pub fn query(name: &str) -> QueryGraph {
    let file = format!("{}.graph", name.trim_end_matches(".graph"));
    let path = dataset(&format!("query_graph/{file}"));
    benchmark_query(&load(&path), yeast()).unwrap_or_else(|e| panic!("{name}: {e}"))
}
