//! The multi-level loop: pair similar nodes, contract, repeat.

use std::time::Instant;

use gpsense_graph::{Csr, KnowledgeGraph};

use crate::contract::{quotient, Members};
use crate::model::topology_bytes;
use crate::options::{CompressOptions, Progress};
use crate::pairing::{choose_pairs, UNPAIRED};
use crate::signature::View;
use crate::{CompressError, CompressedGraph, LevelRecord};

/// One level's graph, owned (level 0 is borrowed from the original instead).
struct Level {
    out: Csr,
    inc: Csr,
    labels: Vec<u32>,
}

/// Compresses `g` level by level (GpSense section 5): at each level, disjoint pairs of nodes with
/// `|common| / max(|adj u|, |adj v|) >= delta` (and equal labels) merge into hyper-nodes. Stops after
/// the given thresholds, when a level merges nothing, or when `target_bytes` is met (the last
/// threshold then repeats, up to [`MAX_LEVELS`](crate::MAX_LEVELS) levels).
///
/// Cost per level: `O(E log E)` for pairing (hashing, MinHash bands, sorting) and `O(E log d)` for the
/// contraction; memory a few words per node and edge beyond the graphs themselves.
pub fn compress(
    g: &KnowledgeGraph,
    opts: &CompressOptions,
    progress: &dyn Progress,
) -> Result<CompressedGraph, CompressError> {
    opts.validate()?;
    let labelled = g.has_node_labels();
    let mut levels: Vec<LevelRecord> = Vec::new();
    let mut current: Option<Level> = None;
    for level in 1.. {
        let view = match &current {
            Some(l) => View {
                out: &l.out,
                inc: &l.inc,
                labels: &l.labels,
            },
            None => View {
                out: g.out(),
                inc: g.inc(),
                labels: g.node_labels(),
            },
        };
        let size = topology_bytes(view.node_count() as u64, view.edge_count() as u64, labelled);
        let Some(delta) = opts.delta_at(level) else {
            break;
        };
        if opts.target_bytes.is_some_and(|t| size <= t) {
            break;
        }
        let start = Instant::now();
        progress.level_start(level, delta, view.node_count());
        let Some((next, record)) = one_level(view, delta, opts, g.relation_count(), progress)
        else {
            break;
        };
        let record = LevelRecord {
            seconds: start.elapsed().as_secs_f64(),
            ..record
        };
        progress.level_done(&record);
        levels.push(record);
        current = Some(next);
    }
    let top = current.map(|l| (l.out, l.inc));
    CompressedGraph::assemble(g, levels, opts.target_bytes, top)
}

/// Pairs and contracts one level; `None` when nothing merges.
fn one_level(
    view: View,
    delta: f64,
    opts: &CompressOptions,
    relations: usize,
    progress: &dyn Progress,
) -> Option<(Level, LevelRecord)> {
    let pairs = choose_pairs(view, delta, &opts.lsh, progress);
    if pairs.exact + pairs.near == 0 {
        return None;
    }
    progress.phase("contract", 1);
    let (parent, n) = parent_map(&pairs.partner);
    let members = Members::from_map(&parent, n);
    let (out, inc) = quotient(view.out, &parent, &members, relations);
    let labels = if view.labels.is_empty() {
        Vec::new()
    } else {
        (0..n as u32)
            .map(|x| view.label(members.of(x)[0]))
            .collect()
    };
    progress.position(1);
    let record = LevelRecord {
        delta,
        nodes: n as u64,
        edges: out.edge_count() as u64,
        parent,
        exact_pairs: pairs.exact,
        near_pairs: pairs.near,
        seconds: 0.0,
    };
    Some((Level { out, inc, labels }, record))
}

/// New ids in order of each group's smallest member: a pair gets the id when its first node is met.
fn parent_map(partner: &[u32]) -> (Vec<u32>, usize) {
    let mut parent = vec![UNPAIRED; partner.len()];
    let mut next = 0u32;
    for v in 0..partner.len() {
        if parent[v] != UNPAIRED {
            continue;
        }
        parent[v] = next;
        if partner[v] != UNPAIRED {
            parent[partner[v] as usize] = next;
        }
        next += 1;
    }
    (parent, next as usize)
}
