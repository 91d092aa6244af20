//! Errors of the graph model (limits of the compact representation).

use thiserror::Error;

/// An operation on the graph model that would break one of its limits or invariants.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GraphError {
    #[error("too many {what}: the limit is {limit}")]
    TooMany { what: &'static str, limit: u64 },
    #[error("name too long ({len} bytes; the limit is {limit})")]
    NameTooLong { len: usize, limit: usize },
    #[error("empty {what} name")]
    EmptyName { what: &'static str },
    #[error("node {0:?} appears twice (node names must be unique)")]
    DuplicateNode(String),
    #[error("inconsistent graph: {0}")]
    Inconsistent(String),
}
