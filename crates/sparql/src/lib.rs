//! SPARQL 1.1 query evaluation over a gpsense graph (API skeleton; evaluation lands next).

pub use oxrdf::{Term, Triple, Variable};

use gpsense_graph::KnowledgeGraph;
use gpsense_runtime::{Engine, MatchOptions};

/// What evaluation takes besides the query text.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Resolves relative IRIs in the query (`--base`).
    pub base_iri: Option<String>,
    /// Limits for every basic graph pattern the matcher answers (deadline, memory, cancel).
    pub matching: MatchOptions,
}

/// A query's answer, streamed.
pub enum Answer<'g> {
    /// SELECT: the variables, then rows (one optional term per variable, in that order).
    Solutions {
        variables: Vec<Variable>,
        rows: Box<dyn Iterator<Item = Result<Vec<Option<Term>>, SparqlError>> + 'g>,
    },
    /// ASK.
    Boolean(bool),
    /// CONSTRUCT and DESCRIBE.
    Graph(Box<dyn Iterator<Item = Result<Triple, SparqlError>> + 'g>),
}

/// Why a query has no answer.
#[derive(Debug, thiserror::Error)]
pub enum SparqlError {
    #[error("{0}")]
    Syntax(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Evaluation(String),
}

/// Evaluates `text` (standard SPARQL 1.1) over the engine's graph.
pub fn evaluate<'g>(
    engine: &'g Engine<'g>,
    text: &str,
    options: &Options,
) -> Result<Answer<'g>, SparqlError> {
    let _ = (
        engine,
        text,
        options,
        std::any::type_name::<KnowledgeGraph>(),
    );
    Err(SparqlError::Unsupported("evaluation lands next".into()))
}
