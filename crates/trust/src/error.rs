//! Why a TruST search cannot run.

use gpsense_planner::ParseError;
use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Error)]
pub enum TrustError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("the template has no nodes")]
    EmptyTemplate,
    #[error("the data graph has no nodes")]
    EmptyData,
    #[error("template edge {edge} refers to node {node}, but the template has {nodes} nodes")]
    BadEdge {
        edge: usize,
        node: usize,
        nodes: usize,
    },
    #[error("the template has {count} {what}; TruST supports at most {limit}")]
    TooLarge {
        what: &'static str,
        count: usize,
        limit: usize,
    },
    #[error(
        "template node {name:?} has {degree} incident edges; TruST supports at most {limit} per node"
    )]
    DegreeTooLarge {
        name: String,
        degree: usize,
        limit: usize,
    },
    #[error("{name} = {value}: {why}")]
    BadParameter {
        name: &'static str,
        value: String,
        why: &'static str,
    },
}
