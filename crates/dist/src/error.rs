//! The one error type of distributed matching.

use std::path::PathBuf;

use gpsense_graph::{GraphError, SnapshotError};
use gpsense_planner::QueryError;
use gpsense_runtime::MatchError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum DistError {
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error(transparent)]
    Match(#[from] MatchError),
    /// A partition file that does not hold what it should.
    #[error("{path}: {what}")]
    BadPartition { path: PathBuf, what: String },
    /// Processes started with settings that do not fit together (counts, hostfile, parts).
    #[error("{0}")]
    Setup(String),
    /// A peer could not be reached, or broke the connection: the query cannot be answered.
    #[error("{0}")]
    Peer(String),
    /// Something a query asks for that matching across processes does not do.
    #[error("{0}")]
    Unsupported(String),
}
