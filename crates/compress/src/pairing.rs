//! Choosing which pairs of nodes merge at one level, without comparing all pairs.
//!
//! Two passes, both `O(E log E)`-ish and parallel where it pays:
//! 1. identical signatures: sort nodes by a hash of (label, both sorted lists); equal-hash runs are
//!    verified entry by entry and paired off;
//! 2. near-equal signatures (`delta < 1`): MinHash with LSH banding over the signature entries. For
//!    each band, nodes sort by (band key, degree); each node is compared exactly with the next
//!    `window` unpaired nodes of its bucket and pairs with the most similar one that reaches `delta`.
//!    `sim >= delta` implies Jaccard `>= delta / (2 - delta)`, the threshold the banding targets.
//!    Cost: `O(E * bands * rows)` hashing plus `O(n * window * deg)` exact checks per band.
//!
//! Greedy, so not a maximum matching; deterministic for a given graph and options.

use gpsense_graph::NodeId;
use rayon::prelude::*;

use crate::options::{LshOptions, Progress};
use crate::signature::{min_near_degree, mix64, reaches, View};

/// No partner.
pub(crate) const UNPAIRED: u32 = u32::MAX;

/// Nodes hashed per progress step.
const CHUNK: usize = 1 << 16;

/// The pairs of one level.
pub(crate) struct Pairs {
    /// `partner[v]`: the node `v` merges with, or [`UNPAIRED`].
    pub partner: Vec<u32>,
    /// Pairs with identical signatures.
    pub exact: u64,
    /// Pairs with near-equal signatures.
    pub near: u64,
}

impl Pairs {
    fn link(&mut self, a: usize, b: usize) {
        self.partner[a] = b as u32;
        self.partner[b] = a as u32;
    }

    fn free(&self, v: usize) -> bool {
        self.partner[v] == UNPAIRED
    }
}

/// Chooses disjoint pairs of similar nodes (`sim >= delta`, equal labels).
pub(crate) fn choose_pairs(
    g: View,
    delta: f64,
    lsh: &LshOptions,
    progress: &dyn Progress,
) -> Pairs {
    let mut pairs = Pairs {
        partner: vec![UNPAIRED; g.node_count()],
        exact: 0,
        near: 0,
    };
    pair_identical(g, &mut pairs, lsh.window.max(1), progress);
    let min_degree = min_near_degree(delta);
    if min_degree != usize::MAX && lsh.bands > 0 && lsh.rows > 0 {
        progress.phase("similar (MinHash)", lsh.bands as u64);
        for band in 0..lsh.bands {
            pair_band(g, delta, lsh, band, min_degree, &mut pairs);
            progress.position(band as u64 + 1);
        }
    }
    pairs
}

/// Pass 1: identical signatures.
fn pair_identical(g: View, pairs: &mut Pairs, window: usize, progress: &dyn Progress) {
    let n = g.node_count();
    progress.phase("identical (hash)", n as u64);
    let mut keys: Vec<(u64, u32)> = Vec::with_capacity(n);
    for start in (0..n).step_by(CHUNK) {
        let end = (start + CHUNK).min(n);
        let chunk: Vec<(u64, u32)> = (start..end)
            .into_par_iter()
            .map(|v| (g.signature_hash(v as NodeId), v as u32))
            .collect();
        keys.extend(chunk);
        progress.position(end as u64);
    }
    keys.par_sort_unstable();
    for run in keys.chunk_by(|a, b| a.0 == b.0) {
        for (i, &(_, a)) in run.iter().enumerate() {
            if !pairs.free(a as usize) {
                continue;
            }
            // Hash collisions interleave rarely; a short window still finds the equal neighbour.
            let partner = run[i + 1..]
                .iter()
                .map(|&(_, b)| b)
                .filter(|&b| pairs.free(b as usize))
                .take(window)
                .find(|&b| g.identical(a, b));
            if let Some(b) = partner {
                pairs.link(a as usize, b as usize);
                pairs.exact += 1;
            }
        }
    }
}

/// Pass 2, one band: bucket unpaired nodes by the band's MinHash values and pair within buckets.
fn pair_band(
    g: View,
    delta: f64,
    lsh: &LshOptions,
    band: usize,
    min_degree: usize,
    pairs: &mut Pairs,
) {
    let seeds: Vec<u64> = (0..lsh.rows)
        .map(|r| mix64(((band * lsh.rows + r) as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)))
        .collect();
    let partner = &pairs.partner;
    let mut keys: Vec<(u64, u32, u32)> = (0..g.node_count() as u32)
        .into_par_iter()
        .filter(|&v| partner[v as usize] == UNPAIRED && g.degree(v) >= min_degree)
        .map(|v| (band_key(g, v, &seeds), g.degree(v) as u32, v))
        .collect();
    keys.par_sort_unstable();
    for run in keys.chunk_by(|a, b| a.0 == b.0) {
        for i in 0..run.len() {
            let (_, da, a) = run[i];
            if !pairs.free(a as usize) {
                continue;
            }
            if let Some(b) = best_partner(g, delta, lsh.window, a, da, &run[i + 1..], pairs) {
                pairs.link(a as usize, b as usize);
                pairs.near += 1;
            }
        }
    }
}

/// The most similar free node among the next `window` free ones of the bucket (sorted by degree),
/// if it reaches `delta`. Stops once degrees differ too much for `delta`: `common <= min degree`.
fn best_partner(
    g: View,
    delta: f64,
    window: usize,
    a: u32,
    da: u32,
    rest: &[(u64, u32, u32)],
    pairs: &Pairs,
) -> Option<u32> {
    let mut best: Option<(f64, u32)> = None;
    let free = rest.iter().filter(|&&(_, _, b)| pairs.free(b as usize));
    for &(_, db, b) in free.take(window.max(1)) {
        if !reaches(da as f64 / db as f64, delta) {
            break;
        }
        let sim = g.similarity(a, b);
        if reaches(sim, delta) && best.is_none_or(|(s, _)| sim > s) {
            best = Some((sim, b));
        }
    }
    best.map(|(_, b)| b)
}

/// The band's key: the label and `rows` MinHash values of the signature.
fn band_key(g: View, v: NodeId, seeds: &[u64]) -> u64 {
    let mut key = mix64(g.label(v) as u64 + 0x51);
    for &seed in seeds {
        let min = g
            .entries(v)
            .map(|x| mix64(x ^ seed))
            .min()
            .unwrap_or(u64::MAX);
        key = mix64(key.rotate_left(11) ^ min);
    }
    key
}
