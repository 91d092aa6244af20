//! `.gpsc` files: the snapshot container of the graph crate (header, version, kind, length, XXH3
//! checksum, atomic write) around the original graph, the size target and the levels (thresholds,
//! parent maps, statistics). The weighted top graph and the weights are rebuilt at load from the
//! original and the composed parent maps (`O(E log d)`), so a crafted file cannot describe a
//! compressed graph that loses answers: it is either consistent or an error.

use std::path::Path;

use gpsense_graph::snapshot::{self, MAGIC};
use gpsense_graph::KnowledgeGraph;
use serde::{Deserialize, Serialize};

use crate::{CompressError, CompressedGraph, LevelRecord};

/// The snapshot `kind` of a compressed graph (the graph crate's plain graph is kind 1).
pub const KIND_COMPRESSED: u32 = 2;

#[derive(Serialize)]
struct FileRef<'a> {
    graph: &'a KnowledgeGraph,
    target_bytes: Option<u64>,
    levels: &'a [LevelRecord],
}

#[derive(Deserialize)]
struct FileOwned {
    graph: KnowledgeGraph,
    target_bytes: Option<u64>,
    levels: Vec<LevelRecord>,
}

/// The file bytes of `c`, a compression of `original`.
pub fn to_bytes(original: &KnowledgeGraph, c: &CompressedGraph) -> Result<Vec<u8>, CompressError> {
    c.check_original(original)?;
    let file = FileRef {
        graph: original,
        target_bytes: c.target_bytes(),
        levels: c.levels(),
    };
    Ok(snapshot::encode(&file, KIND_COMPRESSED)?)
}

/// Decodes, validates and rebuilds a compressed graph; `origin` names the bytes in errors.
pub fn from_bytes(
    bytes: &[u8],
    origin: &Path,
) -> Result<(KnowledgeGraph, CompressedGraph), CompressError> {
    let file: FileOwned = snapshot::decode(bytes, KIND_COMPRESSED, origin)?;
    file.graph
        .validate()
        .map_err(|source| snapshot::SnapshotError::Invalid {
            path: origin.to_path_buf(),
            source,
        })?;
    let c = CompressedGraph::assemble(&file.graph, file.levels, file.target_bytes, None)?;
    Ok((file.graph, c))
}

/// Writes `c` and its original graph atomically (temporary file, then rename).
pub fn save(
    path: &Path,
    original: &KnowledgeGraph,
    c: &CompressedGraph,
) -> Result<(), CompressError> {
    Ok(snapshot::write_atomic(path, &to_bytes(original, c)?)?)
}

/// Loads a `.gpsc` file.
pub fn load(path: &Path) -> Result<(KnowledgeGraph, CompressedGraph), CompressError> {
    from_bytes(&snapshot::read_file(path)?, path)
}

/// The `kind` of a snapshot from its first bytes, or `None` when they are not a snapshot header.
pub fn snapshot_kind(head: &[u8]) -> Option<u32> {
    if head.len() < 16 || head[..8] != MAGIC {
        return None;
    }
    Some(u32::from_le_bytes([head[12], head[13], head[14], head[15]]))
}
