//! Why a compression could not be built, saved or loaded.

use gpsense_graph::{GraphError, SnapshotError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CompressError {
    #[error("invalid threshold delta {0}: each delta must satisfy 0 < delta <= 1")]
    BadDelta(f64),
    #[error("no thresholds given: pass at least one delta (e.g. --delta 0.8,0.7,0.7)")]
    NoLevels,
    #[error("{0} thresholds given: at most {max} levels (one delta each)", max = crate::MAX_LEVELS)]
    TooManyLevels(usize),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error("compressed graph is inconsistent: {0}")]
    Inconsistent(String),
    #[error("the compressed graph was built from a different graph ({0})")]
    WrongGraph(String),
    #[error(transparent)]
    Graph(#[from] GraphError),
}

impl CompressError {
    pub(crate) fn inconsistent(what: impl Into<String>) -> Self {
        CompressError::Inconsistent(what.into())
    }
}
