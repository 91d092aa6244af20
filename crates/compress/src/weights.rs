//! Definition 4's weights and Definition 5's candidate bound, per direction.
//!
//! For hyper-nodes `X`, `Z` of the top level and a relation `r`:
//! - node weight `w(X)`: the most edges one member of `X` has to members of `X` itself;
//! - edge weight `w(X, r, Z)`: the most `r`-edges one member of `X` has to members of `Z`;
//! - Definition 5's `weight(X) = w(X) + sum of w(X, r, Z) over edges with Z != X`, which bounds the
//!   degree of every member of `X` (Theorem 1): a hyper-node whose bound is below a query node's
//!   degree cannot hold a match of it under iso.
//!
//! The paper updates weights level by level with `max(w(p, n), w(q, n)) + max(w(p, m), w(q, m))`, an
//! upper bound of the same maximum; we compute the maximum exactly from the original graph and the
//! final map, which gives the same guarantee and a tighter test. Incoming edges get the same
//! weights seen from the target side, so the test covers both directions.

use gpsense_graph::{Csr, LabelId, NodeId};

use crate::CompressError;

/// Weights of one direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectionWeights {
    /// `w(X)` per hyper-node.
    pub node: Vec<u32>,
    /// `w(X, r, Z)` per entry of the top-level CSR of this direction.
    pub edge: Vec<u32>,
    /// Definition 5's bound per hyper-node.
    pub bound: Vec<u32>,
}

/// Computes the weights of one direction: `orig` and `top` are both outgoing or both incoming CSRs.
/// O(E log d). Fails if `top` lacks the image of an original edge (a map that loses answers).
pub(crate) fn direction_weights(
    orig: &Csr,
    map: &[u32],
    top: &Csr,
) -> Result<DirectionWeights, CompressError> {
    let n = top.node_count();
    let mut w = DirectionWeights {
        node: vec![0; n],
        edge: vec![0; top.edge_count()],
        bound: vec![0; n],
    };
    let mut scratch: Vec<(LabelId, NodeId)> = Vec::new();
    for x in 0..orig.node_count() as NodeId {
        let hx = map[x as usize];
        let (t, l) = orig.neighbours(x);
        scratch.clear();
        scratch.extend(l.iter().zip(t).map(|(&r, &y)| (r, map[y as usize])));
        scratch.sort_unstable();
        let mut internal = 0u32;
        for run in scratch.chunk_by(|a, b| a == b) {
            let (r, hz) = run[0];
            let count = run.len() as u32;
            if hz == hx {
                internal += count;
            }
            let at = edge_index(top, hx, r, hz).ok_or_else(|| {
                CompressError::inconsistent("an original edge has no image in the compressed graph")
            })?;
            w.edge[at] = w.edge[at].max(count);
        }
        w.node[hx as usize] = w.node[hx as usize].max(internal);
    }
    for hx in 0..n as NodeId {
        let (t, _) = top.neighbours(hx);
        let range = top.range(hx);
        let external: u64 = t
            .iter()
            .zip(&w.edge[range])
            .filter(|(&hz, _)| hz != hx)
            .map(|(_, &e)| e as u64)
            .sum();
        let total = external + w.node[hx as usize] as u64;
        w.bound[hx as usize] = total.min(u32::MAX as u64) as u32;
    }
    Ok(w)
}

/// The position of `x -r-> z` in `top.targets()`. Two binary searches.
fn edge_index(top: &Csr, x: NodeId, r: LabelId, z: NodeId) -> Option<usize> {
    let range = top.label_range(x, r);
    let i = top.targets()[range.clone()].binary_search(&z).ok()?;
    Some(range.start + i)
}
