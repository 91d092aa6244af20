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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compress, CompressOptions, NoProgress};
    use gpsense_graph::GraphBuilder;

    /// Six leaves of two labels under two hubs: level 1 merges equal leaves.
    fn sample() -> (KnowledgeGraph, CompressedGraph) {
        let mut b = GraphBuilder::new();
        for (leaf, hub) in [
            ("a", "h"),
            ("b", "h"),
            ("c", "h"),
            ("d", "k"),
            ("e", "k"),
            ("f", "k"),
        ] {
            b.add_triple(leaf, "IsA", hub, 1.0).unwrap();
        }
        for (n, l) in [
            ("a", "x"),
            ("b", "x"),
            ("c", "y"),
            ("d", "x"),
            ("e", "x"),
            ("f", "y"),
        ] {
            let v = b.existing_node(n).unwrap();
            b.set_node_label(v, l).unwrap();
        }
        let g = b.build().unwrap().0;
        let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
        assert!(!c.levels().is_empty());
        (g, c)
    }

    /// A file with a valid header and checksum around the given levels.
    fn crafted(g: &KnowledgeGraph, levels: &[LevelRecord]) -> Vec<u8> {
        let file = FileRef {
            graph: g,
            target_bytes: None,
            levels,
        };
        snapshot::encode(&file, KIND_COMPRESSED).unwrap()
    }

    fn load_error(g: &KnowledgeGraph, levels: &[LevelRecord]) -> CompressError {
        match from_bytes(&crafted(g, levels), Path::new("crafted.gpsc")) {
            Ok(_) => panic!("a crafted file loaded"),
            Err(e) => e,
        }
    }

    #[test]
    fn consistent_crafted_levels_load() {
        let (g, c) = sample();
        let (_, back) = from_bytes(&crafted(&g, c.levels()), Path::new("ok.gpsc")).unwrap();
        assert_eq!(back.top(), c.top());
    }

    #[test]
    fn crafted_levels_are_rejected() {
        let (g, c) = sample();
        let good = c.levels().to_vec();
        let edit = |f: &dyn Fn(&mut Vec<LevelRecord>)| {
            let mut levels = good.clone();
            f(&mut levels);
            levels
        };
        let cases: Vec<(&str, Vec<LevelRecord>)> = vec![
            ("parent out of range", edit(&|l| l[0].parent[0] = 999)),
            (
                "short parent map",
                edit(&|l| {
                    l[0].parent.pop();
                }),
            ),
            ("a node without members", edit(&|l| l[0].nodes += 1)),
            ("more nodes than below", edit(&|l| l[0].nodes = 1_000)),
            (
                "wrong edge count",
                edit(&|l| l.last_mut().unwrap().edges += 1),
            ),
        ];
        for (what, levels) in cases {
            let err = load_error(&g, &levels);
            assert!(
                matches!(err, CompressError::Inconsistent(_)),
                "{what}: {err}"
            );
        }
        let err = load_error(&g, &edit(&|l| l[0].delta = f64::NAN));
        assert!(matches!(err, CompressError::BadDelta(_)), "{err}");
        // Merge a (label x) with c (label y): consistent maps, mixed labels.
        let a = g.node_id("a").unwrap() as usize;
        let cnode = g.node_id("c").unwrap() as usize;
        let mixed = edit(&|l| {
            l.truncate(1);
            let keep = l[0].parent[a];
            let old = l[0].parent[cnode];
            l[0].parent[cnode] = keep;
            // Close the gap the move may leave, so only the labels are wrong.
            if !l[0].parent.contains(&old) {
                for p in l[0].parent.iter_mut() {
                    if *p > old {
                        *p -= 1;
                    }
                }
                l[0].nodes -= 1;
            }
        });
        let err = load_error(&g, &mixed);
        assert!(err.to_string().contains("mixes node labels"), "{err}");
    }
}
