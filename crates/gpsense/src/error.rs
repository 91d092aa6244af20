//! The library's one error type: each variant names the problem in the words the CLI prints.

use std::path::PathBuf;

use gpsense_compress::CompressError;
use gpsense_graph::ingest::IngestError;
use gpsense_graph::snapshot::SnapshotError;
use gpsense_planner::QueryError;
use gpsense_runtime::MatchError;

/// Why the library could not do what was asked.
///
/// ```
/// let graph = gpsense::Graph::embedded()?;
/// let err = graph.query("SELECT ?x WHERE { ?x IsA animl }").run().unwrap_err();
/// assert!(matches!(err, gpsense::Error::Query { .. }));
/// assert!(err.to_string().contains("did you mean"));
/// # Ok::<(), gpsense::Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A snapshot that cannot be read (truncated, corrupted, another version).
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// Compression, or a `.gpsc` file, failed.
    #[error(transparent)]
    Compress(#[from] CompressError),
    /// A text file that cannot be ingested.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// An ingest error with what to do about it, for a file loaded as a graph.
    #[error("{message}")]
    IngestRemedy {
        /// The error and the remedy, in words.
        message: String,
        /// The ingest error.
        error: IngestError,
    },
    /// A file that cannot be read.
    #[error("{}: cannot read", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error(
        "{} is not a regular file and not a snapshot: give a snapshot, or a regular file to ingest",
        .0.display()
    )]
    /// A path that is neither a snapshot nor a regular file (a directory, a device).
    NotRegularFile(PathBuf),
    /// The embedded graph did not load (a build problem).
    #[error("the embedded default graph is unreadable (a build problem): {0}")]
    Embedded(SnapshotError),
    /// A query that does not parse or names what the graph lacks; `rendered` adds the line with a
    /// caret under the column.
    #[error("{rendered}")]
    Query {
        /// What is wrong.
        error: QueryError,
        /// The message, with the query's line and a caret.
        rendered: String,
    },
    /// The match failed (a limit, a refused shape, a device error).
    #[error(transparent)]
    Match(#[from] MatchError),
    /// A standard SPARQL query the full evaluator could not answer.
    #[error(transparent)]
    Sparql(#[from] gpsense_sparql::SparqlError),
    /// A TruST query that does not parse or cannot be searched; `rendered` adds the line with a
    /// caret under the column for a parse error.
    #[error("{rendered}")]
    Trust {
        /// What went wrong.
        error: gpsense_trust::TrustError,
        /// The message, with the query's line for a parse error.
        rendered: String,
    },
    /// The time limit passed before the answer was whole (an in-memory answer is never partial).
    #[error("the query ran out of time before its answer was complete")]
    TimedOut,
}

impl Error {
    /// A query error, rendered against the query's text.
    ///
    /// ```
    /// # let loaded = gpsense::Loaded::embedded()?;
    /// let e = gpsense_planner::prepare("SELECT ?x WHERE {", &loaded.graph, gpsense::Dialect::Short).unwrap_err();
    /// let err = gpsense::Error::query(e, "SELECT ?x WHERE {");
    /// assert!(err.to_string().contains("line 1"));
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn query(error: QueryError, text: &str) -> Error {
        let rendered = error.render(text);
        Error::Query { error, rendered }
    }
}
