//! The library's one error type: each variant names the problem in the words the CLI prints.

use std::path::PathBuf;

use gpsense_compress::CompressError;
use gpsense_graph::ingest::IngestError;
use gpsense_graph::snapshot::SnapshotError;
use gpsense_planner::QueryError;
use gpsense_runtime::MatchError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    Compress(#[from] CompressError),
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// An ingest error with what to do about it, for a file loaded as a graph.
    #[error("{message}")]
    IngestRemedy { message: String, error: IngestError },
    #[error("{}: cannot read", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is not a regular file and not a snapshot: give a snapshot, or a regular file to ingest",
        .0.display()
    )]
    NotRegularFile(PathBuf),
    #[error("the embedded default graph is unreadable (a build problem): {0}")]
    Embedded(SnapshotError),
    /// A query that does not parse or names what the graph lacks; `rendered` adds the line with a
    /// caret under the column.
    #[error("{rendered}")]
    Query { error: QueryError, rendered: String },
    #[error(transparent)]
    Match(#[from] MatchError),
    /// A standard SPARQL query the full evaluator could not answer.
    #[error(transparent)]
    Sparql(#[from] gpsense_sparql::SparqlError),
}

impl Error {
    /// A query error, rendered against the query's text.
    pub fn query(error: QueryError, text: &str) -> Error {
        let rendered = error.render(text);
        Error::Query { error, rendered }
    }
}
