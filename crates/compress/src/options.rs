//! What a user chooses for a compression, and how progress is reported.

use crate::CompressError;

/// The most levels a compression runs when it repeats the last threshold to reach a size target.
pub const MAX_LEVELS: usize = 32;

/// MinHash / LSH settings for near-equal signatures (threshold below 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LshOptions {
    /// Bands; two nodes become candidates when all rows of one band agree.
    pub bands: usize,
    /// MinHash values per band.
    pub rows: usize,
    /// How many following nodes of a bucket (sorted by degree) each node is compared with.
    pub window: usize,
}

impl Default for LshOptions {
    /// 12 bands of 3 rows: a pair with Jaccard similarity 0.54 (what `delta = 0.7` implies at least)
    /// shares a bucket with probability 0.87, one with 0.67 (`delta = 0.8`) with 0.985.
    fn default() -> Self {
        LshOptions {
            bands: 12,
            rows: 3,
            window: 8,
        }
    }
}

/// Settings of one compression.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressOptions {
    /// The similarity threshold of each level (`0 < delta <= 1`). With `target_bytes`, the last one
    /// repeats until the target is met (at most [`MAX_LEVELS`] levels).
    pub deltas: Vec<f64>,
    /// Stop once the compressed topology (both CSRs and node labels) takes at most this many bytes.
    pub target_bytes: Option<u64>,
    pub lsh: LshOptions,
}

impl Default for CompressOptions {
    /// The paper's Table 4 thresholds.
    fn default() -> Self {
        CompressOptions {
            deltas: vec![0.8, 0.7, 0.7],
            target_bytes: None,
            lsh: LshOptions::default(),
        }
    }
}

impl CompressOptions {
    pub fn validate(&self) -> Result<(), CompressError> {
        if self.deltas.is_empty() {
            return Err(CompressError::NoLevels);
        }
        if self.deltas.len() > MAX_LEVELS {
            return Err(CompressError::TooManyLevels(self.deltas.len()));
        }
        check_deltas(&self.deltas)
    }

    /// The threshold of `level` (1-based), or `None` when the compression should stop there.
    pub(crate) fn delta_at(&self, level: usize) -> Option<f64> {
        match self.deltas.get(level - 1) {
            Some(&d) => Some(d),
            None if self.target_bytes.is_some() && level <= MAX_LEVELS => {
                self.deltas.last().copied()
            }
            None => None,
        }
    }
}

/// Every delta is finite and in `(0, 1]`.
pub(crate) fn check_deltas(deltas: &[f64]) -> Result<(), CompressError> {
    match deltas
        .iter()
        .find(|d| !(d.is_finite() && **d > 0.0 && **d <= 1.0))
    {
        Some(&bad) => Err(CompressError::BadDelta(bad)),
        None => Ok(()),
    }
}

/// Receives progress of a compression (the library never prints; the cli draws a bar).
/// Calls come from the thread that called [`compress`](crate::compress), between parallel chunks.
pub trait Progress {
    /// A level starts on a graph of `nodes` nodes.
    fn level_start(&self, _level: usize, _delta: f64, _nodes: usize) {}
    /// A phase of the current level starts; it has `total` work units.
    fn phase(&self, _name: &'static str, _total: u64) {}
    /// `done` work units of the current phase are finished.
    fn position(&self, _done: u64) {}
    /// The level is finished (`record.nodes` and `record.edges` describe the new graph).
    fn level_done(&self, _record: &crate::LevelRecord) {}
}

/// Ignores progress.
pub struct NoProgress;
impl Progress for NoProgress {}
